//! The control sockets of a running router, and `bricks ctl`, their client.
//!
//! `bricks run --control PATH` listens on a Unix stream socket for the
//! whole box. A client sends one command line and reads the answer until
//! the router closes the connection. Commands read and change the router
//! while traffic flows:
//!
//! - `read ELEMENT.HANDLER [WORKER|per-worker]`: one read handler (Click's
//!   `class`, `name`, `handlers`, or a counter, summed over the workers);
//! - `list [ELEMENT]`: the elements, or one element's read handlers;
//! - `write ELEMENT.HANDLER [VALUE]`: a write handler (a route `add`, a
//!   Counter `reset`), called on every worker, or on one worker when the
//!   handler edits a table the workers share;
//! - `steer ...`: the software traffic splitting of `--mode serial`
//!   (`steer show`, `steer key symmetric`, `steer queues 1`,
//!   `steer mac AA:BB:CC:DD:EE:FF 1`, `steer flow udp 10.1.0.2:5000
//!   10.2.0.2:9 0`);
//! - `stats [--router NAME]`: every element's counters as JSON, per worker
//!   and summed, or those of one virtual router;
//! - `routers [--json]`: each virtual router's packets in and out and its
//!   drops, summed from its elements' counters (see [`Tally`]);
//! - `queues`: which worker owns which device queue.
//!
//! Virtual routers on one box (Egi et al., "Towards High Performance
//! Virtual Routers on Commodity Hardware", CoNEXT 2008, §3: one forwarding
//! domain for every router, a control plane per router) are compound
//! elements: every element of router `red` is named `red/...`.
//! `bricks run --router-control red=PATH` gives red's administrator a socket
//! of its own, through which names are relative to `red/` and nothing else
//! can be reached. The confinement is structural, not a list of refusals:
//! such a socket's command table has only `read`, `list`, `write`, `stats`
//! and `help` (nothing that steers, stops or reconfigures the box), and
//! every element name it is given is prefixed with `red/` and looked up;
//! the element found must carry the prefix, and its name from the
//! configuration, not the client's text, is what reaches the workers. A
//! name that is not red's gets the same reply whether or not it exists
//! elsewhere, and suggestions are drawn from red's elements only.
//!
//! Whoever may connect may reroute traffic, so every socket is created mode
//! 0600 whatever the umask (0660 with `--control-group`), and a client that
//! is slow, silent or sends too much costs the router a bounded thread for
//! a bounded time and never delays other clients. Each socket has its own
//! client limit, so a tenant who fills its own socket does not lock the
//! box's administrator out.

use crate::hotswap::Swapper;
use bricks_io::live;
use bricks_io::steer::Steering;
use bricks_runtime::{Control, ElementStats, Plan};
use std::collections::HashMap;
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// Clients served at once on one socket; one more is told `busy` and
/// closed.
const MAX_CLIENTS: usize = 64;
/// The longest command line read; a longer one is refused unread.
const MAX_LINE: usize = 64 * 1024;
/// A client has this long, in all, to send its command line, and again to
/// take the reply.
const DEADLINE: Duration = Duration::from_secs(2);

/// What `routers` sums, said once for both help texts.
const TALLY_HELP: &str = "\
                                  in: `count` of the router's entry elements (those no element
                                  of the router feeds: its sources, what its inputs reach);
                                  out: `count` of its exit elements (an output leaving the
                                  router, or a sink other than Discard, e.g. ToDevice);
                                  drops: Discard's `count` and every counter named `drops`,
                                  `*_drops` or `no_route`";

const HELP: &str = "commands (one per connection, a line of at most 64 KiB):
  read ELEMENT.HANDLER            a read handler: a counter summed over the workers
                                  (e.g. read c.count), or class, name, handlers
  read ELEMENT.HANDLER WORKER     one worker's value (e.g. read c.count 1)
  read ELEMENT.HANDLER per-worker one line per worker
  list [ELEMENT]                  the elements and their classes, or ELEMENT's read handlers
  write ELEMENT.HANDLER [VALUE]   call a write handler (e.g. write rt.add 10.9.0.0/16 1)
  steer show|key HEX|key symmetric|key default|queues N|mac MAC WORKER|mac del MAC|
        flow udp|tcp SRC:PORT DST:PORT WORKER|flow del ...   software steering (--mode serial)
  stats                           counters as JSON, per worker and summed, and the
                                  seconds since the router started
  stats --router NAME             the same for virtual router NAME only (names relative)
  routers [--json]                each virtual router (the first part of element names
                                  NAME/...): NAME in=N out=N drops=N elements=N, where
";

const HELP_END: &str = "
  queues                          which worker owns which device queue
  hotswap FILE                    check the configuration in FILE and switch to it without
                                  losing a packet: elements with the same name and class
                                  keep their state (queued packets, tables, counters, device
                                  queues); on an error the running configuration stays
  help                            this text
a failed command's reply starts with `error:`";

const ROUTER_HELP: &str = "commands (one per connection, a line of at most 64 KiB):
  read ELEMENT.HANDLER            a read handler: a counter summed over the workers
                                  (e.g. read c.count), or class, name, handlers
  read ELEMENT.HANDLER WORKER     one worker's value (e.g. read c.count 1)
  read ELEMENT.HANDLER per-worker one line per worker
  list [ELEMENT]                  this router's elements and their classes, or
                                  ELEMENT's read handlers
  write ELEMENT.HANDLER [VALUE]   call a write handler (e.g. write rt.add 10.9.0.0/16 1)
  stats                           this router's counters as JSON, per worker and summed
  help                            this text
a failed command's reply starts with `error:`";

/// A listening control socket; the file is removed when it is dropped.
pub(crate) struct ControlSocket {
    path: PathBuf,
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What every socket of one run works on: the whole box.
struct Router {
    control: Control,
    steering: Arc<Steering>,
    /// What hot-swaps the configuration, if it can be.
    swapper: Weak<Swapper>,
    /// Every element's name and class, in declaration order.
    elements: Vec<(String, &'static str)>,
    /// Each element's position in `elements`, by name.
    index: HashMap<String, usize>,
    /// Each element's configuration (its arguments joined by `, `), in
    /// the order of `elements`.
    configs: Vec<String>,
    /// The virtual routers: each top-level compound, in the order its
    /// first element is declared.
    routers: Vec<Arc<VirtualRouter>>,
    started: Instant,
}

/// One virtual router: the elements whose names start with `NAME/`, and
/// which of them count its packets in and out (see [`Tally`]).
struct VirtualRouter {
    name: String,
    /// `NAME/`.
    prefix: String,
    /// Its elements, by position in [`Router::elements`], in declaration
    /// order.
    members: Vec<Member>,
}

/// An element of a virtual router and its place at the router's edge.
struct Member {
    element: usize,
    /// No element of the router feeds it: its `count` is packets in.
    entry: bool,
    /// One of its outputs leaves the router, or it is a sink that delivers
    /// (not Discard): its `count` is packets out.
    exit: bool,
    /// A Discard: its `count` is drops.
    discard: bool,
}

impl VirtualRouter {
    /// The elements named `name/...`, or `None` if there are none.
    fn new(plan: &Plan, name: &str) -> Option<VirtualRouter> {
        let prefix = format!("{name}/");
        let owner: Vec<Option<usize>> = plan
            .elements
            .iter()
            .map(|e| e.name.starts_with(&prefix).then_some(0))
            .collect();
        let members: Vec<usize> = (0..owner.len()).filter(|&i| owner[i].is_some()).collect();
        (!members.is_empty()).then(|| VirtualRouter::build(plan, &owner, 0, name, &members))
    }

    /// Router `r` named `name`, made of the elements `members`; `owner`
    /// is each element's router, if any.
    fn build(
        plan: &Plan,
        owner: &[Option<usize>],
        r: usize,
        name: &str,
        members: &[usize],
    ) -> VirtualRouter {
        let inside = |j: usize| owner[j] == Some(r);
        let members = members
            .iter()
            .map(|&i| {
                let e = &plan.elements[i];
                let fed_inside = e.inputs.iter().flatten().any(|&(j, _)| inside(j));
                let mut outputs = e.outputs.iter().flatten().map(|&(j, _)| j).peekable();
                let sink = outputs.peek().is_none() && !matches!(e.class.name, "Discard" | "Idle");
                Member {
                    element: i,
                    entry: !fed_inside,
                    exit: sink || outputs.any(|j| !inside(j)),
                    discard: e.class.name == "Discard",
                }
            })
            .collect();
        VirtualRouter {
            name: name.to_string(),
            prefix: format!("{name}/"),
            members,
        }
    }
}

/// The virtual routers of a plan: the first part of every element name
/// that has a `/` (a compound's elements are named `outer/inner`), in the
/// order each first appears. Linear in the elements and connections,
/// however many routers there are.
fn top_level_routers(plan: &Plan) -> Vec<Arc<VirtualRouter>> {
    let mut id: HashMap<&str, usize> = HashMap::new();
    let mut names: Vec<&str> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    let owner: Vec<Option<usize>> = plan
        .elements
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (outer, _) = e.name.split_once('/')?;
            let r = *id.entry(outer).or_insert_with(|| {
                names.push(outer);
                members.push(Vec::new());
                names.len() - 1
            });
            members[r].push(i);
            Some(r)
        })
        .collect();
    names
        .iter()
        .enumerate()
        .map(|(r, name)| Arc::new(VirtualRouter::build(plan, &owner, r, name, &members[r])))
        .collect()
}

/// Checks `bricks run`'s control sockets before anything runs: each
/// `--router-control NAME` names elements of the configuration, no name or
/// path is given twice. The error says which and why.
pub(crate) fn check_sockets(
    plan: &Plan,
    control: Option<&Path>,
    routers: &[(String, PathBuf)],
) -> Result<(), String> {
    let mut paths: Vec<&Path> = control.into_iter().collect();
    let mut names: Vec<&str> = Vec::new();
    for (name, path) in routers {
        let flag = format!("--router-control {name}={}", path.display());
        if name.is_empty() || name.split('/').any(str::is_empty) {
            return Err(format!(
                "{flag}: `{name}` is not a router name; give the name of a compound element, \
                 whose elements are named NAME/..."
            ));
        }
        if names.contains(&name.as_str()) {
            return Err(format!("{flag}: router `{name}` has a socket already"));
        }
        if paths.contains(&path.as_path()) {
            return Err(format!(
                "{flag}: {} is another socket's path already; give each socket its own",
                path.display()
            ));
        }
        if VirtualRouter::new(plan, name).is_none() {
            let known: Vec<String> = top_level_routers(plan)
                .iter()
                .map(|r| r.name.clone())
                .collect();
            let mut e = format!(
                "{flag}: no element of the configuration is named `{name}/...`, so there is no \
                 router `{name}`"
            );
            match bricks_config::suggest(name, known.iter().map(String::as_str)) {
                Some(s) => e.push_str(&format!("; did you mean `{s}`?")),
                None if known.is_empty() => e.push_str(
                    " (the configuration has no compound elements: a virtual router is one, \
                     its elements named NAME/...)",
                ),
                None => e.push_str(&format!(" (its routers: {})", known.join(", "))),
            }
            return Err(e);
        }
        names.push(name);
        paths.push(path);
    }
    Ok(())
}

/// Starts answering commands on the box's socket `control` (if any) and on
/// each virtual router's socket, in threads of their own; every socket is
/// mode 0600, or 0660 and owned by `group`. The sockets are removed when
/// the returned values are dropped.
pub(crate) fn serve(
    control_path: Option<&Path>,
    router_paths: &[(String, PathBuf)],
    group: Option<&str>,
    plan: &Plan,
    control: Control,
    steering: Arc<Steering>,
    swapper: Option<&Arc<Swapper>>,
) -> anyhow::Result<Vec<ControlSocket>> {
    if control_path.is_none() && router_paths.is_empty() {
        return Ok(Vec::new());
    }
    check_sockets(plan, control_path, router_paths).map_err(anyhow::Error::msg)?;
    let gid = group.map(group_id).transpose()?;
    let swapper = swapper.map_or_else(Weak::new, Arc::downgrade);
    let router = Arc::new(Router::of(
        plan,
        control,
        steering,
        swapper.clone(),
        Instant::now(),
    ));
    let mut scopes: Vec<(&Path, Option<&str>)> =
        control_path.map(|p| (p, None)).into_iter().collect();
    for (name, path) in router_paths {
        scopes.push((path, Some(name.as_str())));
    }
    let mut sockets = Vec::with_capacity(scopes.len());
    let mut views = Vec::with_capacity(scopes.len());
    for (path, name) in scopes {
        let scope = match name {
            None => Scope::Whole,
            Some(name) => Scope::Router(
                router
                    .router_named(plan, name)
                    .ok_or_else(|| anyhow::anyhow!("no router `{name}`"))?,
            ),
        };
        let view = Arc::new(Mutex::new(Arc::new(View {
            router: router.clone(),
            scope,
        })));
        sockets.push(listen(path, gid, group, view.clone())?);
        views.push((view, name.map(str::to_string)));
    }
    // After a hot swap every socket sees the new elements; a router's
    // socket whose router is gone reaches nothing.
    if let Some(s) = swapper.upgrade() {
        let (control, steering, started) = (
            router.control.clone(),
            router.steering.clone(),
            router.started,
        );
        s.on_swap(move |plan| {
            let router = Arc::new(Router::of(
                plan,
                control.clone(),
                steering.clone(),
                swapper.clone(),
                started,
            ));
            for (view, name) in &views {
                let scope = match name {
                    None => Scope::Whole,
                    Some(name) => {
                        Scope::Router(router.router_named(plan, name).unwrap_or_else(|| {
                            Arc::new(VirtualRouter {
                                name: name.clone(),
                                prefix: format!("{name}/"),
                                members: Vec::new(),
                            })
                        }))
                    }
                };
                *view.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(View {
                    router: router.clone(),
                    scope,
                });
            }
        });
    }
    Ok(sockets)
}

impl Router {
    /// The box running `plan`.
    fn of(
        plan: &Plan,
        control: Control,
        steering: Arc<Steering>,
        swapper: Weak<Swapper>,
        started: Instant,
    ) -> Router {
        let elements: Vec<(String, &'static str)> = plan
            .elements
            .iter()
            .map(|e| (e.name.clone(), e.class.name))
            .collect();
        let index = elements
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
        let configs: Vec<String> = plan
            .elements
            .iter()
            .map(|e| {
                let args: Vec<&str> = e.args.iter().map(|a| a.text.as_str()).collect();
                args.join(", ")
            })
            .collect();
        Router {
            configs,
            control,
            steering,
            swapper,
            elements,
            index,
            routers: top_level_routers(plan),
            started,
        }
    }

    /// Virtual router `name` of `plan`, this box's.
    fn router_named(&self, plan: &Plan, name: &str) -> Option<Arc<VirtualRouter>> {
        self.routers
            .iter()
            .find(|r| r.name == name)
            .cloned()
            .or_else(|| VirtualRouter::new(plan, name).map(Arc::new))
    }
}

/// Binds one socket and answers it in a thread of its own.
fn listen(
    path: &Path,
    gid: Option<u32>,
    group: Option<&str>,
    view: Arc<Mutex<Arc<View>>>,
) -> anyhow::Result<ControlSocket> {
    clear_path(path)?;
    let listener = bind_private(path)
        .map_err(|e| anyhow::anyhow!("control socket {}: {e}", path.display()))?;
    let socket = ControlSocket {
        path: path.to_path_buf(),
    };
    if let Some(gid) = gid {
        // The file is 0600 until the group owns it: never wider than meant.
        std::os::unix::fs::chown(path, None, Some(gid)).map_err(|e| {
            anyhow::anyhow!(
                "control socket {}: giving it to group {} ({e}); a user may give a file only to \
                 a group they belong to",
                path.display(),
                group.unwrap_or_default()
            )
        })?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))?;
    }
    std::thread::Builder::new()
        .name("bricks-control".into())
        .spawn(move || accept_loop(listener, view))?;
    Ok(socket)
}

/// Makes room for the socket: nothing there, or a socket that a router
/// left when it was killed. Anything else is someone's, and stays.
fn clear_path(path: &Path) -> anyhow::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => anyhow::bail!("control socket {}: {e}", path.display()),
    };
    let ft = meta.file_type();
    if ft.is_socket() {
        return match UnixStream::connect(path) {
            Ok(_) => anyhow::bail!(
                "control socket {}: another router is listening there; stop it or choose another \
                 socket path",
                path.display()
            ),
            Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                // Nobody listens: the socket of a router that was killed.
                std::fs::remove_file(path).map_err(|e| {
                    anyhow::anyhow!(
                        "control socket {}: removing the stale socket there: {e}",
                        path.display()
                    )
                })
            }
            Err(e) => anyhow::bail!(
                "control socket {}: a socket is there and could not be probed ({e}); remove it if \
                 no router uses it",
                path.display()
            ),
        };
    }
    let what = if ft.is_file() {
        "a regular file".to_string()
    } else if ft.is_dir() {
        "a directory".to_string()
    } else if ft.is_symlink() {
        match std::fs::read_link(path) {
            Ok(to) => format!("a symbolic link to {}", to.display()),
            Err(_) => "a symbolic link".to_string(),
        }
    } else {
        "a FIFO or device file".to_string()
    };
    anyhow::bail!(
        "control socket {}: {what} is there; bricks replaces only a socket left by a router that \
         stopped: remove it or choose another socket path",
        path.display()
    )
}

/// Binds and listens on `path` with the socket file created mode 0600
/// whatever the umask. Linux gives the file the mode of the socket's own
/// inode less the umask (net/unix/af_unix.c, `unix_bind_bsd`), so the
/// inode is narrowed before `bind`; a `chmod` after it would leave a
/// moment when the umask decides.
fn bind_private(path: &Path) -> std::io::Result<UnixListener> {
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: all-zero is a valid sockaddr_un.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(std::io::Error::other(format!(
            "a socket path must be shorter than {} bytes and contain no NUL; choose a shorter one",
            addr.sun_path.len()
        )));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, &s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = s as libc::c_char;
    }
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let check = |r: libc::c_int| {
        if r < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    // SAFETY: fchmod on a descriptor we hold.
    check(unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) })?;
    // SAFETY: `addr` is a valid sockaddr_un of the given length.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_un).cast(),
            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
        )
    })?;
    // SAFETY: listen on a bound socket we hold.
    check(unsafe { libc::listen(fd.as_raw_fd(), 128) })?;
    Ok(UnixListener::from(fd))
}

/// A group's id from its name or number.
fn group_id(group: &str) -> anyhow::Result<u32> {
    if let Ok(gid) = group.parse::<u32>() {
        return Ok(gid);
    }
    let name = CString::new(group)
        .map_err(|_| anyhow::anyhow!("--control-group {group:?}: a group name has no NUL"))?;
    // SAFETY: all-zero is a valid `group`; getgrnam_r writes into `grp` and
    // `buf` (of the length given) only, and `result` points at `grp` or is
    // null.
    let mut grp: libc::group = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut result: *mut libc::group = std::ptr::null_mut();
    let r = unsafe {
        libc::getgrnam_r(
            name.as_ptr(),
            &mut grp,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if r != 0 || result.is_null() {
        anyhow::bail!(
            "--control-group {group}: no such group (give a name from /etc/group or a number)"
        );
    }
    Ok(grp.gr_gid)
}

/// Counts a client in; the count goes down when it is dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Answers the clients of one socket, each with the view of the box as it
/// is when the client connects.
fn accept_loop(listener: UnixListener, view: Arc<Mutex<Arc<View>>>) {
    let active = Arc::new(AtomicUsize::new(0));
    loop {
        let conn = match listener.accept() {
            Ok((c, _)) => c,
            Err(_) => {
                // Out of descriptors, say: let clients finish.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if active.fetch_add(1, Ordering::Relaxed) >= MAX_CLIENTS {
            active.fetch_sub(1, Ordering::Relaxed);
            busy(&conn);
            continue;
        }
        let slot = Slot(active.clone());
        let view = view.lock().unwrap_or_else(|e| e.into_inner()).clone();
        // The reply is written by the connection's own thread, so if it
        // cannot start, the client hears nothing but its closure.
        let _ = std::thread::Builder::new()
            .name("bricks-control-client".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let _slot = slot;
                let _ = answer(conn, &view);
            });
    }
}

fn busy(conn: &UnixStream) {
    // A fresh socket's send buffer is empty: this never waits long.
    let _ = conn.set_write_timeout(Some(Duration::from_millis(100)));
    let mut w = conn;
    let _ = w.write_all(
        format!("error: busy: {MAX_CLIENTS} clients are connected; try again in a moment\n")
            .as_bytes(),
    );
    // What the client has sent already, so that closing does not reset
    // the connection before it reads the reply (see `linger`); no waiting
    // for more.
    let _ = conn.shutdown(std::net::Shutdown::Write);
    if conn.set_nonblocking(true).is_ok() {
        let mut sink = [0u8; 4096];
        for _ in 0..MAX_LINE / sink.len() {
            if !matches!(w.read(&mut sink), Ok(n) if n > 0) {
                break;
            }
        }
    }
}

/// Why no command line was read.
#[derive(Debug)]
enum LineError {
    /// Longer than [`MAX_LINE`].
    TooLong,
    /// Not complete within [`DEADLINE`].
    TooSlow,
    /// The connection failed.
    Io(std::io::Error),
}

/// Reads one line (without its newline; end of stream also ends it) by an
/// absolute deadline, holding at most [`MAX_LINE`] bytes.
fn read_line(mut conn: &UnixStream, deadline: Instant) -> Result<Vec<u8>, LineError> {
    let mut line = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(LineError::TooSlow);
        }
        conn.set_read_timeout(Some(left)).map_err(LineError::Io)?;
        let n = match conn.read(&mut chunk) {
            Ok(0) => return Ok(line),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(LineError::TooSlow)
            }
            Err(e) => return Err(LineError::Io(e)),
        };
        let got = &chunk[..n];
        let end = got.iter().position(|&b| b == b'\n');
        let take = &got[..end.unwrap_or(n)];
        if line.len() + take.len() > MAX_LINE {
            return Err(LineError::TooLong);
        }
        line.extend_from_slice(take);
        if end.is_some() {
            return Ok(line);
        }
    }
}

fn answer(conn: UnixStream, view: &View) -> std::io::Result<()> {
    let deadline = Instant::now() + DEADLINE;
    let reply = match read_line(&conn, deadline) {
        Ok(line) => match std::str::from_utf8(&line) {
            Ok(cmd) => execute(cmd.trim(), view),
            Err(e) => format!(
                "error: the command is not UTF-8 text (invalid byte at offset {}); send a \
                 command line such as `stats`",
                e.valid_up_to()
            ),
        },
        Err(LineError::TooLong) => format!(
            "error: command line longer than {MAX_LINE} bytes, not read; commands are short lines"
        ),
        Err(LineError::TooSlow) => format!(
            "error: no complete command line within {} s; send one line ending in a newline",
            DEADLINE.as_secs()
        ),
        Err(LineError::Io(e)) => return Err(e),
    };
    conn.set_write_timeout(Some(DEADLINE))?;
    let mut w = &conn;
    w.write_all(reply.as_bytes())?;
    if !reply.ends_with('\n') {
        w.write_all(b"\n")?;
    }
    linger(&conn, deadline + DEADLINE);
    Ok(())
}

/// Closes after the client has read the reply. Closing a Unix socket with
/// input unread resets the peer (net/unix/af_unix.c, `unix_release_sock`),
/// and a client still sending (a line too long) would lose the reply
/// behind the reset; so the rest of the input is read and thrown away,
/// into a fixed buffer, until the client closes or the deadline.
fn linger(mut conn: &UnixStream, deadline: Instant) {
    let _ = conn.shutdown(std::net::Shutdown::Write);
    let mut sink = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || conn.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match conn.read(&mut sink) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// What one socket reaches.
enum Scope {
    /// The whole box (`--control`).
    Whole,
    /// One virtual router (`--router-control`).
    Router(Arc<VirtualRouter>),
}

/// One socket's view of the running box.
struct View {
    router: Arc<Router>,
    scope: Scope,
}

/// A command of the control language: its verb and what runs it. Its
/// reply is the text, or the reason it failed (sent after `error: `).
struct Command {
    verb: &'static str,
    run: fn(&View, &str) -> Result<String, String>,
}

/// The box's socket: every command.
const BOX_COMMANDS: &[Command] = &[
    Command {
        verb: "read",
        run: read,
    },
    Command {
        verb: "list",
        run: list,
    },
    Command {
        verb: "handlers",
        run: list,
    },
    Command {
        verb: "write",
        run: write,
    },
    Command {
        verb: "steer",
        run: steer,
    },
    Command {
        verb: "stats",
        run: stats,
    },
    Command {
        verb: "routers",
        run: routers,
    },
    Command {
        verb: "queues",
        run: queues,
    },
    Command {
        verb: "hotswap",
        run: hotswap,
    },
    Command {
        verb: "help",
        run: help,
    },
];

/// A virtual router's socket: its own elements and nothing of the box
/// (no steering, queues, other routers, or anything that stops or
/// reconfigures the box).
const ROUTER_COMMANDS: &[Command] = &[
    Command {
        verb: "read",
        run: read,
    },
    Command {
        verb: "list",
        run: list,
    },
    Command {
        verb: "handlers",
        run: list,
    },
    Command {
        verb: "write",
        run: write,
    },
    Command {
        verb: "stats",
        run: stats,
    },
    Command {
        verb: "help",
        run: help,
    },
];

/// An element a client named: its name in the configuration (what the
/// workers are given), the name the client sees, its class.
struct Found<'a> {
    name: &'a str,
    shown: &'a str,
    class: &'static str,
}

impl View {
    fn commands(&self) -> &'static [Command] {
        match self.scope {
            Scope::Whole => BOX_COMMANDS,
            Scope::Router(_) => ROUTER_COMMANDS,
        }
    }

    fn help(&self) -> String {
        match &self.scope {
            Scope::Whole => format!("{HELP}{TALLY_HELP}{HELP_END}"),
            Scope::Router(vr) => format!(
                "control socket of router `{0}`: element names are relative to it (`rt` is \
                 {0}/rt),\nand nothing outside it can be read or changed\n{ROUTER_HELP}",
                vr.name
            ),
        }
    }

    /// The element a client means by `name`. Through a router's socket the
    /// name is prefixed with the router's, and the element found must carry
    /// that prefix: nothing else can be named, and what is not the router's
    /// is answered exactly as what does not exist.
    fn resolve(&self, name: &str) -> Result<Found<'_>, String> {
        let r = &self.router;
        match &self.scope {
            Scope::Whole => match r.index.get(name) {
                Some(&i) => Ok(Found {
                    name: &r.elements[i].0,
                    shown: &r.elements[i].0,
                    class: r.elements[i].1,
                }),
                None => {
                    let names: Vec<&str> = r.elements.iter().map(|(n, _)| n.as_str()).collect();
                    Err(format!(
                        "no element `{name}`{}",
                        known(name, "elements", &names, "`list` shows them all")
                    ))
                }
            },
            Scope::Router(vr) => {
                let full = format!("{}{name}", vr.prefix);
                let found = r.index.get(&full).map(|&i| &r.elements[i]);
                match found {
                    Some((n, class)) if n.starts_with(&vr.prefix) => Ok(Found {
                        name: n,
                        shown: &n[vr.prefix.len()..],
                        class,
                    }),
                    _ => Err(format!(
                        "no element `{name}` in router `{}`{}",
                        vr.name,
                        known(
                            name,
                            "its elements",
                            &self.member_names(vr),
                            "`list` shows them all"
                        )
                    )),
                }
            }
        }
    }

    /// A router's elements, by their names relative to it.
    fn member_names<'a>(&'a self, vr: &'a VirtualRouter) -> Vec<&'a str> {
        vr.members
            .iter()
            .map(|m| &self.router.elements[m.element].0[vr.prefix.len()..])
            .collect()
    }
}

/// Runs one command; the answer starts with `error:` when it failed.
fn execute(cmd: &str, view: &View) -> String {
    let (verb, rest) = cmd.split_once(char::is_whitespace).unwrap_or((cmd, ""));
    if verb.is_empty() {
        return view.help();
    }
    let commands = view.commands();
    if let Some(c) = commands.iter().find(|c| c.verb == verb) {
        return (c.run)(view, rest.trim()).unwrap_or_else(|e| format!("error: {e}"));
    }
    let verbs: Vec<&str> = commands.iter().map(|c| c.verb).collect();
    let mut e = format!("error: unknown command `{verb}`");
    if let Scope::Router(vr) = &view.scope {
        e.push_str(&format!(
            " on the control socket of router `{}` (its commands: {}; the box's own commands \
             are on its --control socket)",
            vr.name,
            verbs.join(", ")
        ));
    }
    if let Some(v) = bricks_config::suggest(verb, verbs.iter().copied()) {
        e.push_str(&format!("; did you mean `{v}`?"));
    }
    format!("{e}\n{}", view.help())
}

fn help(view: &View, _rest: &str) -> Result<String, String> {
    Ok(view.help())
}

/// Read handlers every element has (Click's names), before its counters.
const STANDARD_HANDLERS: [&str; 4] = ["class", "name", "config", "handlers"];

/// `read ELEMENT.HANDLER [WORKER|per-worker]`.
fn read(view: &View, args: &str) -> Result<String, String> {
    let mut words = args.split_whitespace();
    let target = words
        .next()
        .ok_or("usage: read ELEMENT.HANDLER [WORKER|per-worker]")?;
    let which = words.next();
    if let Some(extra) = words.next() {
        return Err(format!(
            "`read {args}`: unexpected `{extra}`; usage: read ELEMENT.HANDLER [WORKER|per-worker]"
        ));
    }
    let (element, handler) = target
        .rsplit_once('.')
        .ok_or_else(|| format!("`{target}`: expected ELEMENT.HANDLER (e.g. c.count)"))?;
    let found = view.resolve(element)?;
    match handler {
        "class" => return Ok(found.class.to_string()),
        "name" => return Ok(found.shown.to_string()),
        "handlers" => return list(view, element),
        "config" => {
            let r = &view.router;
            return Ok(r
                .index
                .get(found.name)
                .map(|&i| r.configs[i].clone())
                .unwrap_or_default());
        }
        _ => {}
    }
    let per_worker = counters_of(&view.router.control, found.name);
    let values: Vec<Option<u64>> = per_worker
        .iter()
        .map(|w| w.iter().find(|(k, _)| k == handler).map(|&(_, v)| v))
        .collect();
    if values.iter().all(Option::is_none) && which.is_none() {
        // Not a counter: the element's own read handler (a table, a
        // queue's length), asked of the running workers.
        if let Ok(v) = view.router.control.read_handler(found.name, handler) {
            return Ok(v);
        }
    }
    if values.iter().all(Option::is_none) {
        let names = handler_names(&per_worker);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        return Err(format!(
            "{} ({}) has no read handler `{handler}`{}",
            found.shown,
            found.class,
            known(
                handler,
                "its read handlers",
                &names,
                "`list ELEMENT` shows them all"
            )
        ));
    }
    match which {
        None => Ok(values.iter().flatten().sum::<u64>().to_string()),
        Some("per-worker") => Ok(values
            .iter()
            .enumerate()
            .map(|(w, v)| format!("worker {w}: {}\n", v.unwrap_or(0)))
            .collect()),
        Some(w) => {
            let n = values.len();
            match w.parse::<usize>() {
                Ok(w) if w < n => Ok(values[w].unwrap_or(0).to_string()),
                _ => Err(format!(
                    "`{w}`: not a worker; give a number below {n}, or per-worker"
                )),
            }
        }
    }
}

/// `list`: every element and its class; `list ELEMENT`: its read handlers.
fn list(view: &View, element: &str) -> Result<String, String> {
    if element.is_empty() {
        let r = &view.router;
        return Ok(match &view.scope {
            Scope::Whole => r
                .elements
                .iter()
                .map(|(n, c)| format!("{n} {c}\n"))
                .collect(),
            Scope::Router(vr) => vr
                .members
                .iter()
                .map(|m| {
                    let (n, c) = &r.elements[m.element];
                    format!("{} {c}\n", &n[vr.prefix.len()..])
                })
                .collect(),
        });
    }
    let found = view.resolve(element)?;
    let per_worker = counters_of(&view.router.control, found.name);
    Ok(handler_names(&per_worker)
        .iter()
        .map(|h| format!("{h}\n"))
        .collect())
}

/// `write ELEMENT.HANDLER [VALUE]`.
fn write(view: &View, rest: &str) -> Result<String, String> {
    let (target, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let (element, handler) = target
        .rsplit_once('.')
        .ok_or_else(|| format!("`{target}`: expected ELEMENT.HANDLER"))?;
    let found = view.resolve(element)?;
    view.router
        .control
        .write_handler(found.name, handler, value.trim())?;
    Ok("ok".into())
}

/// `hotswap FILE`: checks the configuration in FILE (an absolute path,
/// read by the router) and switches the running router to it, carrying
/// the state of elements with the same name and class over. On any error
/// the running configuration stays.
fn hotswap(view: &View, rest: &str) -> Result<String, String> {
    let Some(s) = view.router.swapper.upgrade() else {
        return Err("this router cannot be hot-swapped".into());
    };
    if rest.is_empty() {
        return Err("usage: hotswap FILE (the new configuration)".into());
    }
    let path = Path::new(rest);
    if !path.is_absolute() {
        return Err(format!(
            "hotswap {rest}: give an absolute path (the router reads the file; `bricks ctl` \
             makes the path absolute)"
        ));
    }
    s.swap_file(path).map_err(|e| {
        format!(
            "hot swap refused, the running configuration stays:\n{}",
            e.trim_end()
        )
    })
}

fn steer(view: &View, rest: &str) -> Result<String, String> {
    view.router.steering.apply(rest).map_err(|e| e.to_string())
}

fn queues(_view: &View, _rest: &str) -> Result<String, String> {
    Ok(live::ownership()
        .iter()
        .map(|o| {
            format!(
                "{} {} queue {} ({}) -> worker {}\n",
                o.device, o.direction, o.queue, o.backend, o.worker
            )
        })
        .collect())
}

/// `stats`: the box's counters, or a router's (through its socket, or
/// `stats --router NAME` on the box's), with names relative to it.
fn stats(view: &View, rest: &str) -> Result<String, String> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let chosen = match (&view.scope, words.as_slice()) {
        (Scope::Router(vr), []) => Some(vr.clone()),
        (Scope::Router(_), _) => return Err(format!("`stats {rest}`: usage: stats")),
        (Scope::Whole, []) => None,
        (Scope::Whole, ["--router", name]) => Some(router_named(&view.router, name)?),
        (Scope::Whole, [flag]) if flag.starts_with("--router=") => {
            Some(router_named(&view.router, &flag["--router=".len()..])?)
        }
        (Scope::Whole, _) => {
            return Err(format!("`stats {rest}`: usage: stats [--router NAME]"));
        }
    };
    let r = &view.router;
    let mut per = r.control.live();
    if let Some(vr) = &chosen {
        // A worker's counters list every element; the router's carry its
        // prefix, which is taken off.
        per = per
            .into_iter()
            .map(|w| {
                w.into_iter()
                    .filter_map(|mut e| {
                        let shown = e.name.strip_prefix(&vr.prefix)?.to_string();
                        e.name = shown;
                        Some(e)
                    })
                    .collect()
            })
            .collect();
    }
    let total = bricks_runtime::sum_stats(per.iter().map(Vec::as_slice));
    let mut v: serde_json::Value =
        serde_json::from_str(&crate::runner::stats_json(r.started.elapsed(), &per))
            .unwrap_or_default();
    let mut sum = serde_json::Map::new();
    for e in &total {
        let mut c = serde_json::Map::new();
        for (k, n) in e.stats.entries() {
            c.insert(k.to_string(), (*n).into());
        }
        sum.insert(e.name.clone(), c.into());
    }
    v["total"] = sum.into();
    if let Some(vr) = &chosen {
        v["router"] = vr.name.clone().into();
    }
    Ok(v.to_string())
}

/// A top-level virtual router by name, or an error naming those there are.
fn router_named(r: &Router, name: &str) -> Result<Arc<VirtualRouter>, String> {
    if let Some(vr) = r.routers.iter().find(|vr| vr.name == name) {
        return Ok(vr.clone());
    }
    let names: Vec<&str> = r.routers.iter().map(|vr| vr.name.as_str()).collect();
    if names.is_empty() {
        return Err(format!(
            "no router `{name}`: the configuration has no compound elements (a virtual \
             router's elements are named NAME/...)"
        ));
    }
    Err(format!(
        "no router `{name}`{}",
        known(name, "routers", &names, "`routers` shows them all")
    ))
}

/// One virtual router's packets, summed from its elements' counters over
/// the workers. A router's entry elements are those no element of the
/// router feeds (its sources, and what its input ports lead to); its exit
/// elements have an output that leaves the router, or are sinks other
/// than Discard and Idle (ToDevice, ToDump). Elements without a `count`
/// (Strip, say) add nothing to in or out: a Counter at a router's edges
/// makes them exact.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    /// The `count` of its entry elements.
    packets_in: u64,
    /// The `count` of its exit elements.
    packets_out: u64,
    /// The `count` of its Discards, and every counter named `drops`,
    /// `*_drops` (a full Queue, an unconnected output, a full receive
    /// ring) or `no_route`.
    drops: u64,
}

/// Whether a counter counts packets an element dropped.
fn is_drop_counter(name: &str) -> bool {
    name == "drops" || name.ends_with("_drops") || name == "no_route"
}

impl Tally {
    /// `vr`'s tally from `total`, each element's counters summed over the
    /// workers, by element name.
    fn of(
        vr: &VirtualRouter,
        elements: &[(String, &str)],
        total: &HashMap<&str, &ElementStats>,
    ) -> Tally {
        let mut t = Tally::default();
        for m in &vr.members {
            let Some(e) = total.get(elements[m.element].0.as_str()) else {
                continue;
            };
            let count = e.stats.get("count").unwrap_or(0);
            if m.entry {
                t.packets_in = t.packets_in.saturating_add(count);
            }
            if m.exit {
                t.packets_out = t.packets_out.saturating_add(count);
            }
            if m.discard {
                t.drops = t.drops.saturating_add(count);
            }
            for (k, v) in e.stats.entries() {
                if is_drop_counter(k) {
                    t.drops = t.drops.saturating_add(*v);
                }
            }
        }
        t
    }
}

/// `routers [--json]`: one line per virtual router.
fn routers(view: &View, rest: &str) -> Result<String, String> {
    let json = match rest {
        "" => false,
        "--json" | "json" => true,
        _ => return Err(format!("`routers {rest}`: usage: routers [--json]")),
    };
    let r = &view.router;
    let per = r.control.live();
    let total = bricks_runtime::sum_stats(per.iter().map(Vec::as_slice));
    let by_name: HashMap<&str, &ElementStats> =
        total.iter().map(|e| (e.name.as_str(), e)).collect();
    let tallies = r
        .routers
        .iter()
        .map(|vr| (vr, Tally::of(vr, &r.elements, &by_name)));
    if json {
        let list: Vec<serde_json::Value> = tallies
            .map(|(vr, t)| {
                serde_json::json!({
                    "router": vr.name,
                    "elements": vr.members.len(),
                    "in": t.packets_in,
                    "out": t.packets_out,
                    "drops": t.drops,
                })
            })
            .collect();
        return Ok(serde_json::Value::from(list).to_string());
    }
    Ok(tallies
        .map(|(vr, t)| {
            format!(
                "{} in={} out={} drops={} elements={}\n",
                vr.name,
                t.packets_in,
                t.packets_out,
                t.drops,
                vr.members.len()
            )
        })
        .collect())
}

/// The one of `all` closest to `wrong`, then a few of them, and `more`
/// when there are too many to name:
/// "; did you mean `c`? (elements: c, d, and 3 more; `list` shows them all)".
fn known(wrong: &str, what: &str, all: &[&str], more: &str) -> String {
    const SHOWN: usize = 20;
    let mut s = String::new();
    if let Some(close) = bricks_config::suggest(wrong, all.iter().copied()) {
        s.push_str(&format!("; did you mean `{close}`?"));
    }
    s.push_str(&format!(" ({what}: "));
    s.push_str(
        &all.iter()
            .take(SHOWN)
            .copied()
            .collect::<Vec<_>>()
            .join(", "),
    );
    if all.len() > SHOWN {
        s.push_str(&format!(", and {} more; {more}", all.len() - SHOWN));
    }
    s.push(')');
    s
}

/// Each worker's counters of `element` (empty for a worker that has not
/// reported it).
fn counters_of(control: &Control, element: &str) -> Vec<Vec<(String, u64)>> {
    control
        .live()
        .iter()
        .map(|w| {
            w.iter()
                .find(|e| e.name == element)
                .map(|e| {
                    e.stats
                        .entries()
                        .iter()
                        .map(|(k, v)| (k.to_string(), *v))
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

/// The read handlers of an element: the standard ones, then its counters
/// in the order the first worker reports them.
fn handler_names(per_worker: &[Vec<(String, u64)>]) -> Vec<String> {
    let mut names: Vec<String> = STANDARD_HANDLERS.iter().map(|s| s.to_string()).collect();
    for w in per_worker {
        for (k, _) in w {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    names
}

/// `hotswap FILE` with FILE made absolute against this process's
/// directory (the router's may differ); any other command as it is.
fn absolute_hotswap_path(command: &[String]) -> Vec<String> {
    match command {
        [verb, file] if verb == "hotswap" => {
            let path = std::path::absolute(file).unwrap_or_else(|_| PathBuf::from(file));
            vec![verb.clone(), path.display().to_string()]
        }
        _ => command.to_vec(),
    }
}

/// `bricks ctl SOCKET COMMAND...`: sends the command, prints the answer.
pub(crate) fn ctl(socket: &Path, command: &[String]) -> anyhow::Result<std::process::ExitCode> {
    let mut conn = UnixStream::connect(socket).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e} (is a router running with --control {} or --router-control NAME={}?)",
            socket.display(),
            socket.display(),
            socket.display()
        )
    })?;
    // The router reads a hot swap's file: it may run elsewhere.
    let command = absolute_hotswap_path(command);
    let command = command.as_slice();
    // A router that refuses the command (too long, busy) may close before
    // taking all of it: its reply is still there to read.
    let sent = conn
        .write_all(format!("{}\n", command.join(" ")).as_bytes())
        .and_then(|()| conn.shutdown(std::net::Shutdown::Write));
    let mut reply = Vec::new();
    let read = conn.read_to_end(&mut reply);
    if reply.is_empty() {
        sent?;
        read?;
    }
    let reply = String::from_utf8_lossy(&reply);
    print!("{reply}");
    Ok(if reply.starts_with("error:") {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Stats;

    /// Red drops everything it gets; blue sends it out through `o`; `top`
    /// is the box's own.
    const TWO: &str = "
        elementclass Red {
          input -> s :: Strip(14) -> rib :: RadixIPLookup(10.0.0.0/8 0); rib[0] -> Discard;
        }
        elementclass Blue {
          InfiniteSource(LIMIT 1) -> c :: Counter -> rt :: RadixIPLookup(0.0.0.0/0 0);
          rt[0] -> o :: Counter -> output;
        }
        top :: InfiniteSource(LIMIT 1) -> red :: Red;
        blue :: Blue -> q :: Queue -> ToDevice(eth9);
    ";

    fn plan(text: &str) -> Plan {
        crate::plan(
            bricks_config::Source {
                name: "<test>".into(),
                text: text.into(),
            },
            &Default::default(),
        )
        .unwrap()
    }

    /// `name`'s role in `vr`: (entry, exit, discard).
    fn role(plan: &Plan, vr: &VirtualRouter, name: &str) -> (bool, bool, bool) {
        let m = vr
            .members
            .iter()
            .find(|m| plan.elements[m.element].name == format!("{}{name}", vr.prefix))
            .unwrap_or_else(|| panic!("no {name} in {}", vr.name));
        (m.entry, m.exit, m.discard)
    }

    #[test]
    fn routers_are_the_first_part_of_element_names_with_their_edges() {
        let p = plan(TWO);
        let routers = top_level_routers(&p);
        let names: Vec<&str> = routers.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["red", "blue"]);
        let (red, blue) = (&routers[0], &routers[1]);
        assert_eq!(red.members.len(), 3);
        assert_eq!(blue.members.len(), 4);
        // Red's input port leads to `s`; nothing leaves it but by Discard.
        assert_eq!(role(&p, red, "s"), (true, false, false));
        assert_eq!(role(&p, red, "rib"), (false, false, false));
        let discard = p
            .elements
            .iter()
            .find(|e| e.name.starts_with("red/Discard"))
            .unwrap()
            .name
            .clone();
        assert_eq!(
            role(&p, red, &discard["red/".len()..]),
            (false, false, true)
        );
        // Blue's source is its entry, `o` (output port to the box's Queue)
        // its exit.
        assert_eq!(role(&p, blue, "InfiniteSource@1"), (true, false, false));
        assert_eq!(role(&p, blue, "c"), (false, false, false));
        assert_eq!(role(&p, blue, "o"), (false, true, false));
        // A nested name is a router of its own for --router-control.
        let nested = plan(
            "elementclass In { input -> c :: Counter -> output }
             elementclass Out { input -> i :: In -> d :: Counter -> output }
             InfiniteSource(LIMIT 1) -> x :: Out -> Discard;",
        );
        let vr = VirtualRouter::new(&nested, "x/i").unwrap();
        assert_eq!(vr.members.len(), 1);
        assert_eq!(role(&nested, &vr, "c"), (true, true, false));
        assert!(VirtualRouter::new(&nested, "x/c").is_none());
        assert!(VirtualRouter::new(&nested, "x/").is_none());
    }

    fn stats(name: &str, class: &'static str, counters: &[(&'static str, u64)]) -> ElementStats {
        let mut s = Stats::default();
        for &(k, v) in counters {
            s.counter(k, v);
        }
        ElementStats {
            name: name.into(),
            class,
            stats: s,
        }
    }

    #[test]
    fn a_tally_sums_entries_exits_and_drop_counters() {
        let p = plan(TWO);
        let routers = top_level_routers(&p);
        let discard = p
            .elements
            .iter()
            .find(|e| e.name.starts_with("red/Discard"))
            .unwrap()
            .name
            .clone();
        let all = [
            // The box's own elements add to no router.
            stats("top", "InfiniteSource", &[("count", 1000)]),
            stats("q", "Queue", &[("drops", 7)]),
            stats("red/s", "Strip", &[("drops", 2)]),
            stats(
                "red/rib",
                "RadixIPLookup",
                &[("no_route", 5), ("routes", 1)],
            ),
            stats(&discard, "Discard", &[("count", 90)]),
            stats("blue/InfiniteSource@1", "InfiniteSource", &[("count", 40)]),
            stats("blue/c", "Counter", &[("count", 40)]),
            stats("blue/rt", "RadixIPLookup", &[("no_route", 0)]),
            stats(
                "blue/o",
                "Counter",
                &[("count", 38), ("unconnected_drops", 1)],
            ),
        ];
        let by_name: HashMap<&str, &ElementStats> =
            all.iter().map(|e| (e.name.as_str(), e)).collect();
        let names: Vec<(String, &str)> = p
            .elements
            .iter()
            .map(|e| (e.name.clone(), e.class.name))
            .collect();
        // Strip has no `count`: red's entry adds nothing to `in`.
        assert_eq!(
            Tally::of(&routers[0], &names, &by_name),
            Tally {
                packets_in: 0,
                packets_out: 0,
                drops: 2 + 5 + 90,
            }
        );
        assert_eq!(
            Tally::of(&routers[1], &names, &by_name),
            Tally {
                packets_in: 40,
                packets_out: 38,
                drops: 1,
            }
        );
        // Counters not reported yet count as nothing.
        assert_eq!(
            Tally::of(&routers[1], &names, &HashMap::new()),
            Tally::default()
        );
        for (name, drop) in [
            ("drops", true),
            ("unconnected_drops", true),
            ("ring_drops", true),
            ("no_route", true),
            ("dropsy", false),
            ("count", false),
            ("routes", false),
        ] {
            assert_eq!(is_drop_counter(name), drop, "{name}");
        }
    }

    #[test]
    fn sockets_are_checked_before_the_run() {
        let p = plan(TWO);
        let rc = |list: &[(&str, &str)]| -> Vec<(String, PathBuf)> {
            list.iter()
                .map(|&(n, s)| (n.to_string(), PathBuf::from(s)))
                .collect()
        };
        assert_eq!(
            check_sockets(
                &p,
                Some(Path::new("/m")),
                &rc(&[("red", "/r"), ("blue", "/b")])
            ),
            Ok(())
        );
        let e = check_sockets(&p, None, &rc(&[("green", "/g")])).unwrap_err();
        assert!(
            e.contains("no element of the configuration is named `green/...`"),
            "{e}"
        );
        assert!(e.ends_with("(its routers: red, blue)"), "{e}");
        let e = check_sockets(&p, None, &rc(&[("rde", "/g")])).unwrap_err();
        assert!(e.ends_with("did you mean `red`?"), "{e}");
        for bad in ["", "red//x", "/red"] {
            let e = check_sockets(&p, None, &rc(&[(bad, "/g")])).unwrap_err();
            assert!(e.contains("is not a router name"), "{bad}: {e}");
        }
        let e = check_sockets(&p, None, &rc(&[("red", "/r"), ("red", "/s")])).unwrap_err();
        assert!(e.contains("has a socket already"), "{e}");
        let e = check_sockets(&p, Some(Path::new("/r")), &rc(&[("red", "/r")])).unwrap_err();
        assert!(e.contains("another socket's path already"), "{e}");
        let flat = plan("InfiniteSource(LIMIT 1) -> top :: Counter -> Discard;");
        let e = check_sockets(&flat, None, &rc(&[("top", "/t")])).unwrap_err();
        assert!(e.contains("has no compound elements"), "{e}");
        assert!(top_level_routers(&flat).is_empty());
    }
}
