//! The control socket of a running router, and `bricks ctl`, its client.
//!
//! `bricks run --control PATH` listens on a Unix stream socket. A client
//! sends one command line and reads the answer until the router closes the
//! connection. Commands read and change the router while traffic flows:
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
//! - `stats`: every element's counters as JSON, per worker and summed;
//! - `queues`: which worker owns which device queue.
//!
//! Whoever may connect may reroute traffic, so the socket is created mode
//! 0600 whatever the umask (0660 with `--control-group`), and a client that
//! is slow, silent or sends too much costs the router a bounded thread for
//! a bounded time and never delays other clients.

use bricks_io::live;
use bricks_io::steer::Steering;
use bricks_runtime::{Control, Plan};
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Clients served at once; one more is told `busy` and closed.
const MAX_CLIENTS: usize = 64;
/// The longest command line read; a longer one is refused unread.
const MAX_LINE: usize = 64 * 1024;
/// A client has this long, in all, to send its command line, and again to
/// take the reply.
const DEADLINE: Duration = Duration::from_secs(2);

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
  queues                          which worker owns which device queue
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

/// What the commands work on.
struct Router {
    control: Control,
    steering: Arc<Steering>,
    /// Every element's name and class, in declaration order.
    elements: Vec<(String, &'static str)>,
    started: Instant,
}

/// Starts answering commands on `path` (mode 0600, or 0660 and owned by
/// `group`) in threads of its own.
pub(crate) fn serve(
    path: &Path,
    group: Option<&str>,
    plan: &Plan,
    control: Control,
    steering: Arc<Steering>,
) -> anyhow::Result<ControlSocket> {
    let gid = group.map(group_id).transpose()?;
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
    let router = Arc::new(Router {
        control,
        steering,
        elements: plan
            .elements
            .iter()
            .map(|e| (e.name.clone(), e.class.name))
            .collect(),
        started: Instant::now(),
    });
    std::thread::Builder::new()
        .name("bricks-control".into())
        .spawn(move || accept_loop(listener, router))?;
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
                 --control path",
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
         stopped: remove it or choose another --control path",
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

fn accept_loop(listener: UnixListener, router: Arc<Router>) {
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
        let router = router.clone();
        // The reply is written by the connection's own thread, so if it
        // cannot start, the client hears nothing but its closure.
        let _ = std::thread::Builder::new()
            .name("bricks-control-client".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let _slot = slot;
                let _ = answer(conn, &router);
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

fn answer(conn: UnixStream, router: &Router) -> std::io::Result<()> {
    let deadline = Instant::now() + DEADLINE;
    let reply = match read_line(&conn, deadline) {
        Ok(line) => match std::str::from_utf8(&line) {
            Ok(cmd) => execute(cmd.trim(), router),
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

/// Runs one command; the answer starts with `error:` when it failed.
fn execute(cmd: &str, router: &Router) -> String {
    let (verb, rest) = cmd.split_once(char::is_whitespace).unwrap_or((cmd, ""));
    let rest = rest.trim();
    let control = &router.control;
    match verb {
        "read" => match read(router, rest) {
            Ok(s) => s,
            Err(e) => format!("error: {e}"),
        },
        "list" | "handlers" => match list(router, rest) {
            Ok(s) => s,
            Err(e) => format!("error: {e}"),
        },
        "write" => {
            let (target, value) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let Some((element, handler)) = target.rsplit_once('.') else {
                return format!("error: `{target}`: expected ELEMENT.HANDLER");
            };
            match control.write_handler(element, handler, value.trim()) {
                Ok(()) => "ok".into(),
                Err(e) => format!("error: {e}"),
            }
        }
        "steer" => match router.steering.apply(rest) {
            Ok(s) => s,
            Err(e) => format!("error: {e}"),
        },
        "stats" => {
            let per = control.live();
            let total = bricks_runtime::sum_stats(per.iter().map(Vec::as_slice));
            let mut v: serde_json::Value =
                serde_json::from_str(&crate::runner::stats_json(router.started.elapsed(), &per))
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
            v.to_string()
        }
        "queues" => live::ownership()
            .iter()
            .map(|o| {
                format!(
                    "{} {} queue {} ({}) -> worker {}\n",
                    o.device, o.direction, o.queue, o.backend, o.worker
                )
            })
            .collect(),
        "help" | "" => HELP.into(),
        _ => {
            let verbs = ["read", "list", "write", "steer", "stats", "queues", "help"];
            match bricks_config::suggest(verb, verbs) {
                Some(v) => format!("error: unknown command `{verb}`; did you mean `{v}`?\n{HELP}"),
                None => format!("error: unknown command `{verb}`\n{HELP}"),
            }
        }
    }
}

/// Read handlers every element has (Click's names), before its counters.
const STANDARD_HANDLERS: [&str; 3] = ["class", "name", "handlers"];

/// Names a few of `all`, with the one closest to `wrong` first.
fn known(wrong: &str, what: &str, all: &[&str]) -> String {
    const SHOWN: usize = 20;
    let mut s = String::new();
    if let Some(close) = bricks_config::suggest(wrong, all.iter().copied()) {
        s.push_str(&format!("; did you mean `{close}`?"));
    }
    s.push_str(&format!(" {what}: "));
    s.push_str(
        &all.iter()
            .take(SHOWN)
            .copied()
            .collect::<Vec<_>>()
            .join(", "),
    );
    if all.len() > SHOWN {
        s.push_str(&format!(" and {} more", all.len() - SHOWN));
    }
    s
}

/// `element`'s class, or an error that names the elements there are.
fn find_element<'a>(router: &'a Router, element: &str) -> Result<&'a str, String> {
    match router.elements.iter().find(|(n, _)| n == element) {
        Some((_, class)) => Ok(class),
        None => {
            let names: Vec<&str> = router.elements.iter().map(|(n, _)| n.as_str()).collect();
            Err(format!(
                "no element `{element}`{} (`list` shows them all)",
                known(element, "elements", &names)
            ))
        }
    }
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

/// `read ELEMENT.HANDLER [WORKER|per-worker]`.
fn read(router: &Router, args: &str) -> Result<String, String> {
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
    let class = find_element(router, element)?;
    match handler {
        "class" => return Ok(class.to_string()),
        "name" => return Ok(element.to_string()),
        "handlers" => return list(router, element),
        _ => {}
    }
    let per_worker = counters_of(&router.control, element);
    let values: Vec<Option<u64>> = per_worker
        .iter()
        .map(|w| w.iter().find(|(k, _)| k == handler).map(|&(_, v)| v))
        .collect();
    if values.iter().all(Option::is_none) {
        let names = handler_names(&per_worker);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        return Err(format!(
            "{element} ({class}) has no read handler `{handler}`{}",
            known(handler, "its read handlers", &names)
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
fn list(router: &Router, element: &str) -> Result<String, String> {
    if element.is_empty() {
        return Ok(router
            .elements
            .iter()
            .map(|(n, c)| format!("{n} {c}\n"))
            .collect());
    }
    find_element(router, element)?;
    let per_worker = counters_of(&router.control, element);
    Ok(handler_names(&per_worker)
        .iter()
        .map(|h| format!("{h}\n"))
        .collect())
}

/// `bricks ctl SOCKET COMMAND...`: sends the command, prints the answer.
pub(crate) fn ctl(socket: &Path, command: &[String]) -> anyhow::Result<std::process::ExitCode> {
    let mut conn = UnixStream::connect(socket).map_err(|e| {
        anyhow::anyhow!(
            "{}: {e} (is a router running with --control {}?)",
            socket.display(),
            socket.display()
        )
    })?;
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
