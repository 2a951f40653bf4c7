//! `ChangeUID`: gives up root privilege once the router is up (Click's
//! `elements/userlevel/changeuid.cc`). Click's sets the process's
//! effective user and group to its real ones, dropping a set-uid-root
//! privilege; bricks' does that too and, given a user, becomes that user
//! (and group) for good, as daemons do after opening their sockets
//! (setgroups(2), setgid(2), setuid(2) as root: real, effective and saved
//! IDs all change, and are checked afterwards).
//!
//! It acts from a timer due at the start of the run: the engine starts
//! every element of every worker (devices and sockets open then) before
//! any timer or task runs, so everything opens with the old privilege and
//! nothing the router does afterwards has it. setuid(2) through libc
//! changes every thread of the process, the workers included.

use bricks_element::{ArgError, Args, Context, Element, ElementClass, Keyword, Manual, PortInfo};
use nix::errno::Errno;
use nix::unistd::{Gid, Group, Uid, User};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The `ChangeUID` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ChangeUID",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "relinquishes root privilege once the router's devices and sockets are open \
        (user-level)",
    synopsis: "ChangeUID([USER [, GROUP]])",
    description: "With no arguments, as in Click, sets the process's effective group and user \
        IDs to its real ones (setgid(getgid()), then setuid(getuid())), which gives up a \
        set-uid-root privilege; run by root itself, it changes nothing.\n\n\
        Given a USER (a name, or a number), which Click's ChangeUID does not take, it makes \
        the whole process that user for good: supplementary groups become the user's \
        (initgroups(3); only GROUP for a number with no passwd entry), then the group \
        becomes GROUP (by default the user's own group), then the real, effective and saved \
        user IDs become USER's; it then checks that none of root's IDs is left. Only root \
        can do this: anyone else gets an error. USER and GROUP are looked up when the \
        configuration is read, so `bricks check` reports an unknown name.\n\n\
        When: Click's ChangeUID runs in an early configure phase, right after FromDevice and \
        ToDevice initialize and before most other elements. bricks' runs once every element \
        of every worker has started, that is after every device, capture file and socket \
        (Socket, RawSocket, ChatterSocket, ...) the configuration names is open, before any \
        packet moves; what opens later (a ChatterSocket's retries, files that handlers \
        open) opens with the new IDs. It acts once whatever the number of workers (the \
        IDs belong to the whole process). If it fails the run ends at once with the error, \
        as Click refuses to initialize.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "USER",
            ty: "user name or number",
            default: Some("none: effective IDs become the real ones (Click)"),
            doc: "the user to become for good; positional; not in Click",
        },
        Keyword {
            name: "GROUP",
            ty: "group name or number",
            default: Some("USER's group"),
            doc: "the group to become; positional, after USER; not in Click",
        },
    ],
    counters: &[],
    example: "// Run as root: opens a raw ICMP socket, which only root may, then becomes\n\
        // nobody; the socket stays open. Stops after half a second.\n\
        RawSocket(ICMP) -> Discard;\n\
        ChangeUID(nobody);\n\
        Script(wait 0.5, stop);",
    see_also: &["ChatterSocket", "ControlSocket", "Socket"],
};

/// Whom to become.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// Click's: the effective IDs become the real ones.
    Real,
    /// A user, for good.
    User {
        /// Its name, for its supplementary groups; `None` for a number
        /// with no passwd entry.
        name: Option<CString>,
        uid: Uid,
        gid: Gid,
    },
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let user: Option<String> = args.read_p("USER")?;
    let group: Option<String> = args.read_p("GROUP")?;
    let target = match user {
        None if group.is_some() => {
            return Err(ArgError::new("GROUP needs a USER"));
        }
        None => Target::Real,
        Some(user) => resolve(user.trim(), group.as_deref().map(str::trim))
            .map_err(|e| ArgError::new(e.to_string()))?,
    };
    let done = args.shared(|_| Ok(AtomicBool::new(false)))?;
    Ok(Box::new(ChangeUid { target, done }))
}

/// Why USER or GROUP names no one.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LookupError {
    /// No user of this name.
    NoUser(String),
    /// No group of this name.
    NoGroup(String),
    /// A user given by number with no passwd entry, so no group to take.
    NoGroupFor(u32),
    /// The user or group database could not be read.
    Database(&'static str, Errno),
}

impl core::fmt::Display for LookupError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LookupError::NoUser(u) => write!(f, "bad argument USER: no user `{u}` on this host"),
            LookupError::NoGroup(g) => {
                write!(f, "bad argument GROUP: no group `{g}` on this host")
            }
            LookupError::NoGroupFor(uid) => write!(
                f,
                "bad argument USER: user {uid} has no passwd entry, so no group: give GROUP"
            ),
            LookupError::Database(what, e) => write!(f, "cannot read the {what} database: {e}"),
        }
    }
}

/// Resolves USER and GROUP, names or numbers, to IDs.
fn resolve(user: &str, group: Option<&str>) -> Result<Target, LookupError> {
    let entry = match user.parse::<u32>() {
        Ok(n) => User::from_uid(Uid::from_raw(n)),
        Err(_) => User::from_name(user),
    }
    .map_err(|e| LookupError::Database("user", e))?;
    let uid = match (&entry, user.parse::<u32>()) {
        (Some(u), _) => u.uid,
        (None, Ok(n)) => Uid::from_raw(n),
        (None, Err(_)) => return Err(LookupError::NoUser(user.to_string())),
    };
    let gid = match group {
        Some(g) => match g.parse::<u32>() {
            Ok(n) => Gid::from_raw(n),
            Err(_) => {
                Group::from_name(g)
                    .map_err(|e| LookupError::Database("group", e))?
                    .ok_or_else(|| LookupError::NoGroup(g.to_string()))?
                    .gid
            }
        },
        None => match &entry {
            Some(u) => u.gid,
            None => return Err(LookupError::NoGroupFor(uid.as_raw())),
        },
    };
    let name = entry.and_then(|u| CString::new(u.name).ok());
    Ok(Target::User { name, uid, gid })
}

/// Why privilege could not be given up.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DropError {
    /// A system call failed.
    Call(&'static str, u32, Errno),
    /// The calls succeeded but an ID other than the target's is left.
    Kept(String),
}

impl core::fmt::Display for DropError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DropError::Call(call, id, Errno::EPERM) => write!(
                f,
                "could not drop privilege: {call}({id}): {} (only root can become another \
                 user)",
                Errno::EPERM.desc()
            ),
            DropError::Call(call, id, e) => {
                write!(f, "could not drop privilege: {call}({id}): {}", e.desc())
            }
            DropError::Kept(ids) => write!(f, "could not drop privilege: still {ids}"),
        }
    }
}

impl Target {
    /// Whether the process has this target's IDs already (a hot swap
    /// keeps a ChangeUID that acted, and a user cannot change groups).
    fn reached(&self) -> bool {
        match self {
            Target::Real => false,
            Target::User { uid, gid, .. } => {
                let (Ok(u), Ok(g)) = (nix::unistd::getresuid(), nix::unistd::getresgid()) else {
                    return false;
                };
                [u.real, u.effective, u.saved] == [*uid; 3]
                    && [g.real, g.effective, g.saved] == [*gid; 3]
            }
        }
    }

    /// Becomes the target: groups first, while still root.
    fn apply(&self) -> Result<(), DropError> {
        use nix::unistd::{getgid, getuid, initgroups, setgid, setgroups, setuid};
        let call = |name: &'static str, id: u32, r: nix::Result<()>| {
            r.map_err(|e| DropError::Call(name, id, e))
        };
        match self {
            Target::Real => {
                let (g, u) = (getgid(), getuid());
                call("setgid", g.as_raw(), setgid(g))?;
                call("setuid", u.as_raw(), setuid(u))
            }
            Target::User { name, uid, gid } => {
                match name {
                    Some(n) => call("initgroups", gid.as_raw(), initgroups(n, *gid))?,
                    None => call("setgroups", gid.as_raw(), setgroups(&[*gid]))?,
                }
                call("setgid", gid.as_raw(), setgid(*gid))?;
                call("setuid", uid.as_raw(), setuid(*uid))?;
                if self.reached() {
                    Ok(())
                } else {
                    let u = nix::unistd::getresuid().map(|u| [u.real, u.effective, u.saved]);
                    let g = nix::unistd::getresgid().map(|g| [g.real, g.effective, g.saved]);
                    Err(DropError::Kept(format!("uids {u:?}, gids {g:?}")))
                }
            }
        }
    }
}

/// Gives up privilege at the start of the run.
#[derive(Debug)]
pub struct ChangeUid {
    target: Target,
    /// Set by the first worker's instance to act: the IDs are the
    /// process's, so one call does for all.
    done: Arc<AtomicBool>,
}

impl Element for ChangeUid {
    fn start(&mut self, cx: &mut Context<'_>) {
        // Due at once, it runs in the first round, after every element
        // of every worker has started.
        if !self.done.load(Ordering::Acquire) {
            cx.schedule_at(cx.now());
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        if self.done.swap(true, Ordering::AcqRel) || self.target.reached() {
            return;
        }
        if let Err(e) = self.target.apply() {
            cx.report_error(e.to_string());
            cx.request_stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;

    fn ports() -> PortInfo {
        PortInfo {
            inputs: vec![],
            outputs: vec![],
        }
    }

    /// Whom a ChangeUID configured with `args` becomes.
    fn target(args: &str) -> Result<Target, String> {
        let mut e = make_element(&CLASS, args, &ports())?;
        let c = bricks_element::taken_from::<ChangeUid>(&mut *e).expect("a ChangeUid");
        Ok(c.target.clone())
    }

    #[test]
    fn no_arguments_is_clicks_real_ids() {
        assert_eq!(target(""), Ok(Target::Real));
        assert!(!Target::Real.reached());
    }

    #[test]
    fn users_and_groups_by_name_or_number() {
        // root is user and group 0 on every Linux host.
        let want = Target::User {
            name: Some(CString::new("root").unwrap()),
            uid: Uid::from_raw(0),
            gid: Gid::from_raw(0),
        };
        assert_eq!(target("root"), Ok(want.clone()));
        assert_eq!(target("0"), Ok(want.clone()));
        assert_eq!(target("root, 0"), Ok(want.clone()));
        assert_eq!(target("root, root"), Ok(want));
        let Ok(Target::User { gid, .. }) = target("0, 4242") else {
            panic!("a numeric group");
        };
        assert_eq!(gid, Gid::from_raw(4242));
        // A number with no passwd entry needs GROUP.
        let free = (60_000..u32::MAX)
            .find(|&n| matches!(User::from_uid(Uid::from_raw(n)), Ok(None)))
            .unwrap();
        let Ok(Target::User { name, uid, gid }) = target(&format!("{free}, 7")) else {
            panic!("a user with no entry");
        };
        assert_eq!(
            (name, uid, gid),
            (None, Uid::from_raw(free), Gid::from_raw(7))
        );
    }

    #[test]
    fn unknown_names_and_bad_arguments_are_refused() {
        let err = |a: &str| make_element(&CLASS, a, &ports()).map(|_| ()).unwrap_err();
        assert!(err("no-such-user-bx").contains("no user `no-such-user-bx`"));
        assert!(err("root, no-such-group-bx").contains("no group `no-such-group-bx`"));
        assert!(err("root, 0, 0").contains("too many arguments"));
        assert!(err("GROUP 5").contains("GROUP needs a USER"));
        assert!(err("BOGUS 1").contains("BOGUS"));
        let free = (60_000..u32::MAX)
            .find(|&n| matches!(User::from_uid(Uid::from_raw(n)), Ok(None)))
            .unwrap();
        assert!(err(&format!("{free}")).contains("give GROUP"));
    }

    #[test]
    fn errors_say_what_failed_and_why() {
        let e = DropError::Call("setuid", 65534, Errno::EPERM).to_string();
        assert!(e.starts_with("could not drop privilege: setuid(65534): "));
        assert!(e.contains("only root"));
        let e = DropError::Call("setgid", 5, Errno::EINVAL).to_string();
        assert!(e.contains("setgid(5)") && !e.contains("only root"));
    }

    /// The process's own IDs are reached when all three of each agree,
    /// and acting again would change nothing: what a hot swap relies on.
    #[test]
    fn the_current_ids_are_reached_already() {
        let u = nix::unistd::getresuid().unwrap();
        let g = nix::unistd::getresgid().unwrap();
        let me = Target::User {
            name: None,
            uid: u.effective,
            gid: g.effective,
        };
        let same = [u.real, u.saved] == [u.effective; 2] && [g.real, g.saved] == [g.effective; 2];
        assert_eq!(me.reached(), same);
    }
}
