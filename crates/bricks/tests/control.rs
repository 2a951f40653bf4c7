//! The control socket against careless and hostile clients: who may
//! connect (the file's mode and group whatever the umask), what is at the
//! path before it, clients that are silent, slow, too many or send too
//! much or bytes that are not text, and the `read` and `list` commands.

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Stays running with nothing to do once its 1,000 packets are counted.
const COUNTED: &str =
    "InfiniteSource(LIMIT 1000) -> c :: Counter -> Discard; RatedSource(RATE 1) -> d :: Discard;";

fn bricks() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A router answering on a control socket, killed (by its PID) when
/// dropped.
struct Router {
    child: Child,
    socket: PathBuf,
}

impl Router {
    /// Starts `bricks run -e config --control socket extra...` under
    /// `umask` and waits until it answers.
    fn start(config: &str, socket: &Path, umask: u32, extra: &[&str]) -> Router {
        let mut cmd = bricks();
        cmd.args([
            "run",
            "-e",
            config,
            "--quiet",
            "--duration",
            "60",
            "--control",
        ])
        .arg(socket)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        // SAFETY: umask(2) is async-signal-safe and cannot fail.
        unsafe {
            cmd.pre_exec(move || {
                libc::umask(umask as libc::mode_t);
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("bricks runs");
        let start = Instant::now();
        // Connecting, not the file: a stale socket is there before the
        // router replaces it.
        while UnixStream::connect(socket).is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                let mut e = String::new();
                child.stderr.take().unwrap().read_to_string(&mut e).unwrap();
                panic!("the router ended ({status}) before listening: {e}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "no control socket after 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Router {
            child,
            socket: socket.to_path_buf(),
        }
    }

    fn ctl(&self, command: &[&str]) -> Output {
        ctl_within(&self.socket, command, Duration::from_secs(10))
    }

    /// `bricks ctl` and its reply; panics if the reply is an error.
    fn ok(&self, command: &[&str]) -> String {
        let o = self.ctl(command);
        assert!(
            o.status.success(),
            "{command:?}: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        text(&o.stdout)
    }

    /// `bricks ctl`'s reply, which must be an error.
    fn error(&self, command: &[&str]) -> String {
        let o = self.ctl(command);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{command:?}: {out}");
        assert!(out.starts_with("error: "), "{command:?}: {out}");
        out
    }

    /// Highest resident memory so far, in KiB.
    fn peak_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/PID/status")
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn is_socket(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket())
}

/// Runs `bricks ctl socket command...`, killed if it takes longer than
/// `limit` (a router that serves one client at a time would hold it).
fn ctl_within(socket: &Path, command: &[&str], limit: Duration) -> Output {
    let mut child = bricks()
        .arg("ctl")
        .arg(socket)
        .args(command)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bricks ctl {command:?} took longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

/// Sends `bytes` on a fresh connection and returns the whole reply.
fn raw(socket: &Path, bytes: &[u8]) -> String {
    let mut c = UnixStream::connect(socket).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // A busy router closes without reading: its reply is still there.
    let _ = c.write_all(bytes);
    let _ = c.shutdown(std::net::Shutdown::Write);
    let mut reply = Vec::new();
    // A router that closes with input unread (busy) resets the connection
    // after its reply.
    if let Err(e) = c.read_to_end(&mut reply) {
        assert!(!reply.is_empty(), "no reply: {e}");
    }
    text(&reply)
}

/// `bricks run` with a control socket at a path that holds something:
/// its exit code and stderr.
fn refused(socket: &Path) -> (Option<i32>, String) {
    let mut child = bricks()
        .args([
            "run",
            "-e",
            COUNTED,
            "--quiet",
            "--duration",
            "5",
            "--control",
        ])
        .arg(socket)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let o = child.wait_with_output().unwrap();
    (o.status.code(), text(&o.stderr))
}

#[test]
fn the_socket_is_0600_whatever_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let r = Router::start(COUNTED, &sock, 0o000, &[]);
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o600, "mode {mode:o} under umask 000");
    r.ok(&["stats"]);
}

/// A group other than our own primary one that we may give a file to: any
/// as root, else one of our supplementary groups (if any).
fn another_group() -> Option<(String, u32)> {
    // SAFETY: getegid/getgroups with a buffer of the size given.
    let (egid, euid) = unsafe { (libc::getegid(), libc::geteuid()) };
    let groups = std::fs::read_to_string("/etc/group").ok()?;
    let mine: Vec<u32> = if euid == 0 {
        Vec::new()
    } else {
        let mut buf = [0 as libc::gid_t; 256];
        // SAFETY: `buf` holds 256 gids.
        let n = unsafe { libc::getgroups(256, buf.as_mut_ptr()) };
        buf[..n.max(0) as usize].to_vec()
    };
    groups.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        let gid: u32 = f.nth(1)?.parse().ok()?;
        (gid != egid && (euid == 0 || mine.contains(&gid))).then(|| (name.to_string(), gid))
    })
}

#[test]
fn with_control_group_the_socket_is_0660_and_the_groups() {
    let Some((name, gid)) = another_group() else {
        eprintln!("skipped: no group other than our own to give the socket to");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // The group must be able to reach the socket.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let sock = dir.path().join("c.sock");
    let r = Router::start(COUNTED, &sock, 0o000, &["--control-group", &name]);
    let m = std::fs::metadata(&sock).unwrap();
    assert_eq!(m.permissions().mode() & 0o7777, 0o660);
    assert_eq!(m.gid(), gid, "group {name}");
    r.ok(&["stats"]);
    drop(r);
    let (code, e) = refused_with_group(&dir.path().join("d.sock"), "no-such-group-bricks");
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("no-such-group-bricks: no such group"), "{e}");
}

fn refused_with_group(socket: &Path, group: &str) -> (Option<i32>, String) {
    let o = bricks()
        .args([
            "run",
            "-e",
            COUNTED,
            "--quiet",
            "--duration",
            "5",
            "--control",
        ])
        .arg(socket)
        .args(["--control-group", group])
        .output()
        .unwrap();
    (o.status.code(), text(&o.stderr))
}

#[test]
fn idle_and_slow_clients_do_not_delay_ctl() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let r = Router::start(COUNTED, &sock, 0o077, &[]);
    let idle: Vec<UnixStream> = (0..20)
        .map(|_| UnixStream::connect(&sock).unwrap())
        .collect();
    // Slow loris: a byte every 300 ms, never a whole line.
    let loris_sock = sock.clone();
    let loris = std::thread::spawn(move || {
        let mut c = UnixStream::connect(&loris_sock).unwrap();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(4) {
            if c.write_all(b"s").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut reply = Vec::new();
        let _ = c.read_to_end(&mut reply);
        (start.elapsed(), text(&reply))
    });
    std::thread::sleep(Duration::from_millis(100));
    let start = Instant::now();
    let o = ctl_within(&sock, &["stats"], Duration::from_secs(20));
    let took = start.elapsed();
    assert!(o.status.success(), "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("\"total\""), "{}", text(&o.stdout));
    assert!(
        took < Duration::from_secs(1),
        "ctl took {took:?} with 20 idle clients and a slow one"
    );
    // The silent and the slow are told off and closed by the deadline.
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut reply = String::new();
    first.read_to_string(&mut reply).unwrap();
    assert!(
        reply.contains("no complete command line within 2 s"),
        "{reply}"
    );
    let (lasted, reply) = loris.join().unwrap();
    assert!(
        reply.contains("no complete command line within 2 s"),
        "{reply}"
    );
    assert!(lasted < Duration::from_secs(6), "{lasted:?}");
    r.ok(&["stats"]);
}

#[test]
fn clients_beyond_the_limit_are_told_busy() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let r = Router::start(COUNTED, &sock, 0o077, &[]);
    // The 64 are accepted in order, so the next one finds no room, as
    // long as all 64 are still held: the router closes a client that has
    // sent no line within 2 s, so a machine too loaded to accept 65
    // connections in that time frees a slot first, and the case is tried
    // again rather than failed.
    for attempt in 1.. {
        let started = Instant::now();
        let held: Vec<UnixStream> = (0..64)
            .map(|_| UnixStream::connect(&sock).unwrap())
            .collect();
        let reply = raw(&sock, b"stats\n");
        if reply.starts_with("error: busy: 64 clients") {
            break;
        }
        let took = started.elapsed();
        assert!(
            took > Duration::from_millis(1500) && attempt < 3,
            "attempt {attempt}, {took:?}: {reply}"
        );
        eprintln!("attempt {attempt}: the 65th client was accepted {took:?} after the first, past the idle deadline; again");
        drop(held);
        std::thread::sleep(Duration::from_millis(300));
    }
    std::thread::sleep(Duration::from_millis(300));
    r.ok(&["stats"]);
}

#[test]
fn a_long_command_line_is_refused_unread_and_not_echoed() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let r = Router::start(COUNTED, &sock, 0o077, &[]);
    r.ok(&["stats"]);
    let before = r.peak_kib();
    let line = vec![b'a'; 1 << 20];
    let reply = raw(&sock, &line);
    assert!(
        reply.starts_with("error: command line longer than 65536 bytes"),
        "{}",
        &reply[..reply.len().min(200)]
    );
    assert!(reply.len() < 200, "{} bytes of reply", reply.len());
    let grew = r.peak_kib().saturating_sub(before);
    assert!(grew < 1024, "the router's peak memory grew by {grew} KiB");
    // The client's own ctl says the same.
    let long = "x".repeat(100_000);
    let e = r.error(&[&long]);
    assert!(
        e.contains("longer than 65536 bytes"),
        "{}",
        &e[..e.len().min(200)]
    );
    r.ok(&["stats"]);
}

#[test]
fn a_command_that_is_not_utf8_is_answered_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let r = Router::start(COUNTED, &sock, 0o077, &[]);
    let reply = raw(&sock, b"read c.\xff\xfecount\n");
    assert!(
        reply.starts_with("error: the command is not UTF-8"),
        "{reply:?}"
    );
    r.ok(&["stats"]);
}

#[test]
fn what_is_at_the_path_is_replaced_only_if_it_is_a_stale_socket() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, "precious").unwrap();
    let (code, e) = refused(&file);
    assert_eq!(code, Some(1), "{e}");
    assert!(
        e.contains(&format!("{}: a regular file is there", file.display())),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious");

    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let (code, e) = refused(&sub);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("a directory is there"), "{e}");
    assert!(sub.is_dir());

    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let (code, e) = refused(&link);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("a symbolic link to"), "{e}");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious");

    let sock = dir.path().join("c.sock");
    let r = Router::start(COUNTED, &sock, 0o077, &[]);
    let (code, e) = refused(&sock);
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("another router is listening there"), "{e}");
    r.ok(&["stats"]);
    drop(r);

    // A socket nobody listens on (its router was killed): replaced.
    let stale = dir.path().join("stale.sock");
    drop(UnixListener::bind(&stale).unwrap());
    assert!(is_socket(&stale));
    let r = Router::start(COUNTED, &stale, 0o077, &[]);
    r.ok(&["stats"]);
}

#[test]
fn read_gives_one_handler_summed_or_per_worker() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let r = Router::start(COUNTED, &sock, 0o077, &["--threads", "2"]);
    let start = Instant::now();
    while r.ok(&["read", "c.count"]).trim() != "1000" {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "c.count never 1000"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The source runs on worker 0 only.
    assert_eq!(
        r.ok(&["read", "c.count", "per-worker"]),
        "worker 0: 1000\nworker 1: 0\n"
    );
    assert_eq!(r.ok(&["read", "c.count", "0"]).trim(), "1000");
    assert_eq!(r.ok(&["read", "c.count", "1"]).trim(), "0");
    assert_eq!(r.ok(&["read", "c.class"]).trim(), "Counter");
    assert_eq!(r.ok(&["read", "c.name"]).trim(), "c");
    assert_eq!(r.ok(&["read", "c.config"]).trim(), "");
    assert_eq!(
        r.ok(&["read", "InfiniteSource@1.config"]).trim(),
        "LIMIT 1000"
    );
    let handlers = r.ok(&["read", "c.handlers"]);
    assert!(handlers.lines().any(|l| l == "count"), "{handlers}");
    assert!(handlers.lines().any(|l| l == "class"), "{handlers}");
    assert_eq!(r.ok(&["list", "c"]), handlers);
    let list = r.ok(&["list"]);
    assert!(list.lines().any(|l| l == "c Counter"), "{list}");
    assert!(list.lines().any(|l| l == "d Discard"), "{list}");

    let e = r.error(&["read", "c.cuont"]);
    assert!(e.contains("c (Counter) has no read handler `cuont`"), "{e}");
    assert!(e.contains("did you mean `count`?"), "{e}");
    let e = r.error(&["read", "cc.count"]);
    assert!(e.contains("no element `cc`; did you mean `c`?"), "{e}");
    assert!(e.contains("elements: "), "{e}");
    let e = r.error(&["read", "c.count", "7"]);
    assert!(e.contains("not a worker"), "{e}");
    let e = r.error(&["read", "count"]);
    assert!(e.contains("expected ELEMENT.HANDLER"), "{e}");
}

#[test]
fn stats_reports_the_time_since_start_without_stats_interval() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let r = Router::start(COUNTED, &sock, 0o077, &[]);
    std::thread::sleep(Duration::from_millis(300));
    let v: serde_json::Value = serde_json::from_str(r.ok(&["stats"]).trim()).unwrap();
    let elapsed = v["elapsed"].as_f64().unwrap();
    assert!((0.25..30.0).contains(&elapsed), "elapsed {elapsed}");
}

#[test]
fn help_lists_read_and_list() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("c.sock");
    let r = Router::start(COUNTED, &sock, 0o077, &[]);
    let help = r.ok(&["help"]);
    for want in [
        "read ELEMENT.HANDLER",
        "list [ELEMENT]",
        "64 KiB",
        "write ELEMENT.HANDLER",
    ] {
        assert!(help.contains(want), "{want}: {help}");
    }
    let e = r.error(&["raed", "c.count"]);
    assert!(e.contains("did you mean `read`?"), "{e}");
    let o = bricks().args(["ctl", "--help"]).output().unwrap();
    assert!(
        text(&o.stdout).contains("read ELEMENT.HANDLER"),
        "{}",
        text(&o.stdout)
    );
}
