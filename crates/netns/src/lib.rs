//! Test networks: Linux network namespaces joined by veth links.
//!
//! The tests, `bricks bench io` and `bricks demo` all need the same thing:
//! a few namespaces (hosts, a router), veth pairs between them, addresses
//! and routes, and the certainty that everything is deleted afterwards,
//! also when a test fails or panics. A [`Network`] owns what it created and
//! deletes it on drop; every name starts with the network's prefix, so a
//! leftover from a killed run can be found and removed with
//! [`Network::clean_prefix`].
//!
//! Everything goes through iproute2 (`ip`), and `ethtool` for offloads:
//! the tools a user would type to reproduce a test by hand. Processes
//! started in the namespaces are held by [`ChildGuard`] or [`Captured`],
//! which kill them when dropped, so they never outlive a failed test.

pub mod ipip;
mod raw;
pub mod vlan;

pub use raw::RawSocket;

use std::io::Read as _;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Why setting up a test network failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetnsError(pub String);

impl core::fmt::Display for NetnsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NetnsError {}

/// Whether this process may create namespaces (it runs as root).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Sends `signal` to process `pid`. The caller makes sure the PID is the
/// process it means (a child not yet reaped, or one whose start time it
/// has just matched): a PID can be reused once its process has ended.
pub fn kill_pid(pid: u32, signal: i32) {
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
}

/// Reaps `pid` if it is an ended child of this process, without waiting
/// (a child that was stopped must not stay a zombie while its parent
/// runs). A PID that is not this process's child is left alone.
pub fn reap_child(pid: u32) {
    let mut status = 0;
    // SAFETY: waitpid writes one int, `status`, alive for the call;
    // WNOHANG never blocks, and a PID that is not our child only gives
    // ECHILD.
    unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, the unit of the times
/// in `/proc/PID/stat`); 100 if it cannot be read.
pub fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no memory preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// For tests that need root: `None` when they may run; otherwise the
/// reason they are skipped, already printed. Under CI (`CI=true`) a missing
/// privilege is a failure, never a skip.
pub fn skip_unless_root(test: &str) -> Option<String> {
    if is_root() {
        return None;
    }
    let reason = format!("SKIP {test}: needs root to create network namespaces");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{reason} (CI=true: namespace tests must run)");
    }
    eprintln!("{reason}");
    Some(reason)
}

/// A command as a user would type it in a shell: arguments that hold
/// anything but plain characters are single-quoted.
pub fn shell_line(cmd: &Command) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| {
            let a = a.to_string_lossy();
            if !a.is_empty() && a.chars().all(plain) {
                a.into_owned()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a command and returns its output; a failure carries the command
/// line and its stderr.
pub fn run(cmd: &mut Command) -> Result<Output, NetnsError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| NetnsError(format!("`{}`: {e}", shell_line(cmd))))?;
    if !out.status.success() {
        return Err(NetnsError(format!(
            "`{}` failed ({}): {}",
            shell_line(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out)
}

/// Runs `ip ARGS...`.
pub fn ip(args: &[&str]) -> Result<Output, NetnsError> {
    run(Command::new("ip").args(args))
}

/// A set of namespaces and links that is deleted when dropped.
#[derive(Debug)]
pub struct Network {
    prefix: String,
    namespaces: Vec<String>,
}

impl Network {
    /// A new, empty network whose names all start with `prefix` (keep it
    /// short: interface names have at most 15 bytes). Anything left with
    /// that prefix from an earlier run is deleted first.
    pub fn new(prefix: &str) -> Result<Network, NetnsError> {
        Network::clean_prefix(prefix)?;
        Ok(Network {
            prefix: prefix.to_string(),
            namespaces: Vec::new(),
        })
    }

    /// A prefix unique to this process and `tag` (e.g. `bt1234a-`).
    pub fn unique_prefix(tag: &str) -> String {
        format!("b{}{tag}-", std::process::id() % 100_000)
    }

    /// The prefix every name of this network starts with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The full name of namespace `name`.
    pub fn ns_name(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Deletes every namespace whose name starts with `prefix` (their veths
    /// go with them).
    pub fn clean_prefix(prefix: &str) -> Result<(), NetnsError> {
        for ns in list_namespaces()? {
            if ns.starts_with(prefix) {
                ip(&["netns", "del", &ns])?;
            }
        }
        Ok(())
    }

    /// Creates namespace `name` (prefixed) with its loopback up; returns
    /// the full name.
    pub fn add_namespace(&mut self, name: &str) -> Result<String, NetnsError> {
        let full = self.ns_name(name);
        ip(&["netns", "add", &full])?;
        self.namespaces.push(full.clone());
        ip(&["-n", &full, "link", "set", "lo", "up"])?;
        Ok(full)
    }

    /// Joins namespace `a` (interface `a_if`) and namespace `b` (interface
    /// `b_if`) with a veth pair of `queues` RX and TX queues per end, both
    /// ends up. Names are unprefixed; interface names are used as given
    /// (they live inside their namespaces, so they need no prefix).
    pub fn add_link(
        &mut self,
        a: &str,
        a_if: &str,
        b: &str,
        b_if: &str,
        queues: u32,
    ) -> Result<(), NetnsError> {
        let (na, nb) = (self.ns_name(a), self.ns_name(b));
        let q = queues.max(1).to_string();
        // Created in `a` with the peer placed straight into `b`: the names
        // never exist in the caller's namespace, so tests cannot collide
        // with each other or with the machine's own interfaces.
        ip(&[
            "-n",
            &na,
            "link",
            "add",
            a_if,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "type",
            "veth",
            "peer",
            "name",
            b_if,
            "netns",
            &nb,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
        ])?;
        ip(&["-n", &na, "link", "set", a_if, "up"])?;
        ip(&["-n", &nb, "link", "set", b_if, "up"])?;
        Ok(())
    }

    /// Adds address `cidr` (e.g. `10.1.0.2/24`) to interface `ifname` of
    /// namespace `ns`.
    pub fn add_addr(&self, ns: &str, ifname: &str, cidr: &str) -> Result<(), NetnsError> {
        ip(&["-n", &self.ns_name(ns), "addr", "add", cidr, "dev", ifname]).map(drop)
    }

    /// Adds a route in namespace `ns`: `ip route add ROUTE...` (e.g.
    /// `["default", "via", "10.1.0.1"]`).
    pub fn add_route(&self, ns: &str, route: &[&str]) -> Result<(), NetnsError> {
        let full = self.ns_name(ns);
        let mut args = vec!["-n", &full, "route", "add"];
        args.extend_from_slice(route);
        ip(&args).map(drop)
    }

    /// The MAC address of `ifname` in namespace `ns`.
    pub fn mac(&self, ns: &str, ifname: &str) -> Result<String, NetnsError> {
        let path = format!("/sys/class/net/{ifname}/address");
        let out = self
            .exec(ns, &["cat", &path])
            .output()
            .map_err(|e| NetnsError(e.to_string()))?;
        let mac = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if mac.is_empty() {
            return Err(NetnsError(format!(
                "no interface {ifname} in {}",
                self.ns_name(ns)
            )));
        }
        Ok(mac)
    }

    /// A command that runs `argv` inside namespace `ns` (through
    /// `ip netns exec`, which also gives it the namespace's own /sys).
    pub fn exec(&self, ns: &str, argv: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns_name(ns)]).args(argv);
        c
    }

    /// Runs `sysctl -w KEY=VALUE` in namespace `ns`.
    pub fn sysctl(&self, ns: &str, key: &str, value: &str) -> Result<(), NetnsError> {
        run(&mut self.exec(ns, &["sysctl", "-qw", &format!("{key}={value}")])).map(drop)
    }

    /// Turns off checksum offload, segmentation offload and receive
    /// offload on interface `ifname` of namespace `ns` (`ethtool -K`).
    ///
    /// A veth hands its peer TCP segments of up to 64 KiB whose checksum
    /// is not yet computed, since both ends are in one kernel; a router
    /// reading raw frames (AF_PACKET) would forward them unfinished. With
    /// offloads off, hosts send real MTU-sized frames with real checksums,
    /// as a NIC would put them on the wire, and verify the checksums of
    /// what they receive.
    pub fn disable_offloads(&self, ns: &str, ifname: &str) -> Result<(), NetnsError> {
        let args = [
            "ethtool", "-K", ifname, "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro",
            "off",
        ];
        match self.exec(ns, &args).stdout(Stdio::null()).output() {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(NetnsError(format!(
                "ethtool -K {ifname} in {}: {}",
                self.ns_name(ns),
                String::from_utf8_lossy(&out.stderr).trim()
            ))),
            Err(e) => Err(NetnsError(format!("running ethtool: {e}"))),
        }
    }

    /// Deletes everything now (also done on drop).
    pub fn delete(&mut self) {
        for ns in self.namespaces.drain(..).rev() {
            let _ = ip(&["netns", "del", &ns]);
        }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        self.delete();
    }
}

/// Whether `ethtool` can be run (needed by [`Network::disable_offloads`]).
pub fn have_ethtool() -> bool {
    Command::new("ethtool")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A child process that is killed, by its PID, when dropped: a failing
/// test or an aborted demo never leaves a router or a ping running.
///
/// Commands made by [`Network::exec`] keep their PID through
/// `ip netns exec` (it execs the program), so the PID is the program's.
#[derive(Debug)]
pub struct ChildGuard {
    child: std::process::Child,
    status: Option<ExitStatus>,
    /// The command line, for messages.
    program: String,
}

impl ChildGuard {
    /// Spawns `cmd`.
    pub fn spawn(cmd: &mut Command) -> Result<ChildGuard, NetnsError> {
        let child = cmd
            .spawn()
            .map_err(|e| NetnsError(format!("`{}`: {e}", shell_line(cmd))))?;
        let program = shell_line(cmd);
        Ok(ChildGuard {
            child,
            status: None,
            program,
        })
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The child, to take its stdin, stdout or stderr.
    pub fn child_mut(&mut self) -> &mut std::process::Child {
        &mut self.child
    }

    /// Its exit status if it has ended (it is reaped then).
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Waits at most `timeout` for it to end.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `signal` (e.g. `libc::SIGTERM`) unless it has ended.
    pub fn signal(&mut self, signal: i32) {
        if self.try_wait().is_none() {
            let pid = self.child.id() as libc::pid_t;
            // SAFETY: kill has no memory preconditions; the PID is our own
            // child, not yet reaped (try_wait said it runs), so it cannot
            // have been reused by another process.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }

    /// Asks it to stop (SIGTERM), waits at most `grace`, then kills it
    /// (SIGKILL). Returns how it ended.
    pub fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.signal(libc::SIGTERM);
        if let Some(s) = self.wait_timeout(grace) {
            return Some(s);
        }
        self.kill()
    }

    /// Kills it (SIGKILL) and reaps it.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        self.signal(libc::SIGKILL);
        self.wait_timeout(Duration::from_secs(5))
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A child process whose output is collected while it runs (on threads,
/// so a child that fills a pipe never blocks), killed when dropped.
#[derive(Debug)]
pub struct Captured {
    child: ChildGuard,
    stdout: std::thread::JoinHandle<Vec<u8>>,
    stderr: std::thread::JoinHandle<Vec<u8>>,
}

impl Captured {
    /// Spawns `cmd` with stdin closed and stdout and stderr captured.
    pub fn spawn(cmd: &mut Command) -> Result<Captured, NetnsError> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = ChildGuard::spawn(cmd)?;
        let read = |r: Option<Box<dyn std::io::Read + Send>>| {
            std::thread::spawn(move || {
                let mut v = Vec::new();
                if let Some(mut r) = r {
                    let _ = r.read_to_end(&mut v);
                }
                v
            })
        };
        let stdout = read(child.child.stdout.take().map(|s| Box::new(s) as _));
        let stderr = read(child.child.stderr.take().map(|s| Box::new(s) as _));
        Ok(Captured {
            child,
            stdout,
            stderr,
        })
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Waits at most `timeout` for it to end, or until `cancel` is set;
    /// then it is killed and the error holds what it printed so far. A
    /// non-zero exit is not an error here: the caller reads `status`.
    pub fn wait(
        mut self,
        timeout: Duration,
        cancel: Option<&std::sync::atomic::AtomicBool>,
    ) -> Result<Output, NetnsError> {
        let end = Instant::now() + timeout;
        let cancelled = || cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed));
        let status = loop {
            if let Some(s) = self.child.try_wait() {
                break Some(s);
            }
            if Instant::now() >= end || cancelled() {
                self.child.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let stdout = self.stdout.join().unwrap_or_default();
        let stderr = self.stderr.join().unwrap_or_default();
        match status {
            Some(status) => Ok(Output {
                status,
                stdout,
                stderr,
            }),
            None => Err(NetnsError(format!(
                "{} {}; it printed: {}{}",
                self.child.program,
                if cancelled() {
                    "was stopped".to_string()
                } else {
                    format!("did not finish within {:.1} s", timeout.as_secs_f64())
                },
                String::from_utf8_lossy(&stdout).trim(),
                String::from_utf8_lossy(&stderr).trim()
            ))),
        }
    }
}

/// Runs `cmd` with its output captured and waits at most `timeout` for it;
/// on timeout it is killed and the error holds what it printed so far.
/// A non-zero exit is not an error here: the caller reads `status`.
pub fn output_timeout(cmd: &mut Command, timeout: Duration) -> Result<Output, NetnsError> {
    Captured::spawn(cmd)?.wait(timeout, None)
}

/// Runs `f` on a new thread that has joined network namespace `ns` (a
/// full name, as [`Network::ns_name`] gives) and returns its result.
/// Sockets and XDP programs act in the namespace of the thread that makes
/// them; only that thread moves. Note that sysfs still shows the caller's
/// namespace (`ip netns exec` remounts it; a thread cannot).
pub fn in_namespace<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    use std::os::fd::AsRawFd;
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns takes an open namespace file descriptor, which
        // `file` keeps open for the call; it changes only this thread.
        let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// The names of all network namespaces `ip netns` knows.
pub fn list_namespaces() -> Result<Vec<String>, NetnsError> {
    let out = ip(&["netns", "list"])?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect())
}

/// Opens TUN device `name` (IP packets, no packet-information header),
/// creating it in the network namespace of the calling thread: call it
/// inside [`in_namespace`]. The device is deleted when the file is closed.
/// Reads give one IP packet each, writes take one.
///
/// Userspace packet handlers in tests use it, e.g. an ESP peer where the
/// kernel has no ESP of its own.
pub fn open_tun(name: &str) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "bad interface name `{name}`: it must have 1 to {} bytes",
                libc::IFNAMSIZ - 1
            ),
        ));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/net/tun")?;
    // SAFETY: ifreq is plain old data, for which all zeroes is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: TUNSETIFF reads and writes one ifreq, which `req` is, alive
    // for the call; the name is NUL-terminated (checked length, zeroed).
    let r = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(file)
}

/// A raw IPv4 socket for IP protocol `protocol` (e.g. 50, ESP), made in
/// the network namespace of the calling thread (call it inside
/// [`in_namespace`]) and connected to `peer`: reads give whole IPv4
/// packets (header included) of that protocol from `peer`, writes send
/// their bytes to `peer` as the payload of an IPv4 header the kernel
/// builds. Its receive buffer is 8 MiB.
pub fn raw_ipv4_socket(protocol: u8, peer: std::net::Ipv4Addr) -> std::io::Result<std::fs::File> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    // SAFETY: socket has no memory preconditions.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::c_int::from(protocol),
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a descriptor socket just returned, owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // A full receive buffer does not just drop: the kernel then counts
    // the packet as undelivered and answers ICMP protocol unreachable.
    // 8 MiB holds several TCP windows for a slow reader (root may exceed
    // rmem_max with SO_RCVBUFFORCE).
    let size: libc::c_int = 8 << 20;
    // SAFETY: setsockopt reads one c_int, `size`, alive for the call.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(peer.octets()),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: connect reads `addr`, a sockaddr_in alive for the call, of
    // the length given.
    let r = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(std::fs::File::from(fd))
}

/// Waits at most `timeout` for `fd` to have something to read; `Ok(false)`
/// on timeout (or an interrupted wait). Lets a thread that reads a TUN
/// device or a raw socket look at a stop flag now and then.
pub fn wait_readable(fd: std::os::fd::BorrowedFd<'_>, timeout: Duration) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: poll reads and writes one pollfd, `p`, alive for the call.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(r > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_shown_as_shell_lines() {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", "ns 1", "sh", "-c", "echo 'hi'", ""]);
        assert_eq!(
            shell_line(&cmd),
            r#"ip netns exec 'ns 1' sh -c 'echo '\''hi'\''' ''"#
        );
        let err = run(Command::new("false").arg("--x=1")).unwrap_err();
        assert!(
            err.to_string().starts_with("`false --x=1` failed ("),
            "{err}"
        );
        assert!(!err.to_string().contains('"'), "{err}");
    }

    #[test]
    fn a_child_guard_kills_its_process_on_drop() {
        let guard = ChildGuard::spawn(Command::new("sleep").arg("30")).unwrap();
        let pid = guard.id();
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        drop(guard);
        // Reaped by the guard, so the PID is gone (or, rarely, reused by a
        // process that is not our sleep).
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        assert_ne!(comm.trim(), "sleep");
    }

    #[test]
    fn output_timeout_bounds_the_wait_and_keeps_the_output() {
        let out = output_timeout(
            Command::new("sh").args(["-c", "echo hi; exit 3"]),
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
        let start = Instant::now();
        let err = output_timeout(
            Command::new("sh").args(["-c", "echo started; exec sleep 30"]),
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(err.0.contains("started"), "{err}");
    }

    #[test]
    fn two_namespaces_ping_over_a_multiqueue_veth() {
        if skip_unless_root("two_namespaces_ping_over_a_multiqueue_veth").is_some() {
            return;
        }
        let prefix = Network::unique_prefix("ns");
        let mut net = Network::new(&prefix).unwrap();
        net.add_namespace("a").unwrap();
        net.add_namespace("b").unwrap();
        net.add_link("a", "va", "b", "vb", 2).unwrap();
        net.add_addr("a", "va", "10.99.0.1/24").unwrap();
        net.add_addr("b", "vb", "10.99.0.2/24").unwrap();
        let queues = net
            .exec("a", &["ls", "/sys/class/net/va/queues"])
            .output()
            .unwrap();
        let queues = String::from_utf8_lossy(&queues.stdout);
        assert_eq!(
            queues
                .split_whitespace()
                .filter(|q| q.starts_with("rx-"))
                .count(),
            2
        );
        assert!(net.mac("b", "vb").unwrap().contains(':'));
        let ping = net
            .exec("a", &["ping", "-c", "1", "-W", "2", "10.99.0.2"])
            .output()
            .unwrap();
        assert!(
            ping.status.success(),
            "{}",
            String::from_utf8_lossy(&ping.stdout)
        );
        let names: Vec<String> = (list_namespaces().unwrap())
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .collect();
        assert_eq!(names.len(), 2);
        drop(net);
        assert!(!list_namespaces()
            .unwrap()
            .iter()
            .any(|n| n.starts_with(&prefix)));
    }
}
