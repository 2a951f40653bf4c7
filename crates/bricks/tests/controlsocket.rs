//! Click's ControlSocket served by `bricks run`: a plain TCP or Unix
//! stream client, as Click's tools are, reads and writes handlers, and
//! hostile clients (garbage, long lines, silence) get errors or are cut off
//! while traffic flows.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Router(Child);

impl Drop for Router {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Tests that listen on TCP ports take turns. A port free when one test
/// asks for it may be the one another test's router binds next (or finds
/// counting upward from `PORT+`); a test then talks to the other test's
/// router, and its connection is reset when that router stops.
static TCP_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn tcp_turn() -> std::sync::MutexGuard<'static, ()> {
    TCP_TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(config: &str) -> Router {
    let child = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(["run", "-e", config, "--quiet", "--duration", "60"])
        .env("BRICKS_CONTROLSOCKET_IDLE_MS", "500")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bricks runs");
    Router(child)
}

fn connect_tcp(port: u16) -> TcpStream {
    let start = Instant::now();
    loop {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no ControlSocket"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct Client<S: Read + Write> {
    r: BufReader<S>,
}

impl<S: Read + Write> Client<S> {
    fn new(s: S) -> Client<S> {
        let mut c = Client {
            r: BufReader::new(s),
        };
        assert_eq!(c.line(), "Click::ControlSocket/1.3");
        c
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.r.read_line(&mut l).unwrap();
        l.trim_end().to_string()
    }

    /// Sends a command and returns its reply: one line, or several
    /// joined by newlines when the reply continues (`CODE-text` lines
    /// before the last `CODE text`).
    fn send(&mut self, cmd: &str) -> String {
        self.r.get_mut().write_all(cmd.as_bytes()).unwrap();
        self.r.get_mut().write_all(b"\r\n").unwrap();
        let mut reply = self.line();
        while reply
            .lines()
            .last()
            .is_some_and(|l| l.as_bytes().get(3) == Some(&b'-'))
        {
            reply.push('\n');
            reply.push_str(&self.line());
        }
        reply
    }

    /// READ: the status line and the data.
    fn read(&mut self, h: &str) -> (String, String) {
        let status = self.send(&format!("READ {h}"));
        if !status.starts_with("200") {
            return (status, String::new());
        }
        let n: usize = self.line().strip_prefix("DATA ").unwrap().parse().unwrap();
        let mut buf = vec![0; n];
        self.r.read_exact(&mut buf).unwrap();
        (status, String::from_utf8(buf).unwrap())
    }
}

impl<S: Read + Write> Client<S> {
    /// LLRPC: sends the command and `input`; returns the status line and
    /// the data sent back.
    fn llrpc(&mut self, name: &str, input: &[u8]) -> (String, Vec<u8>) {
        let line = if input.is_empty() {
            format!("LLRPC {name}\r\n")
        } else {
            format!("LLRPC {name} {}\r\n", input.len())
        };
        self.r.get_mut().write_all(line.as_bytes()).unwrap();
        self.r.get_mut().write_all(input).unwrap();
        let status = self.line();
        if !status.starts_with("200") {
            return (status, Vec::new());
        }
        let n: usize = self.line().strip_prefix("DATA ").unwrap().parse().unwrap();
        let mut buf = vec![0; n];
        self.r.read_exact(&mut buf).unwrap();
        (status, buf)
    }
}

const FLOWING: &str = "s :: InfiniteSource(LENGTH 60) -> c :: Counter -> Discard;";

#[test]
fn tcp_read_write_check_and_garbage() {
    let _turn = tcp_turn();
    let port = free_port();
    let _r = start(&format!("{FLOWING} ControlSocket(TCP, {port});"));
    let mut c = Client::new(connect_tcp(port));
    let (status, v) = c.read("c.count");
    assert_eq!(status, "200 Read handler 'c.count' OK");
    assert!(v.trim().parse::<u64>().is_ok(), "{v:?}");
    let (_, list) = c.read("list");
    let mut lines = list.lines();
    assert_eq!(lines.next(), Some("4"));
    assert!(list.lines().any(|l| l == "c"));
    assert_eq!(c.send("WRITE c.reset"), "200 Write handler 'c.reset' OK");
    assert_eq!(
        c.send("WRITE s.active false"),
        "200 Write handler 's.active' OK"
    );
    // With the source stopped, a reset counter stays at 0.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(c.send("WRITE c.reset"), "200 Write handler 'c.reset' OK");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(c.read("c.count").1.trim(), "0");
    assert_eq!(c.send("CHECKREAD c.count"), "200 Read handler 'c.count' OK");
    assert_eq!(
        c.send("CHECKREAD c.nonesuch"),
        "511 No handler named 'c.nonesuch'"
    );
    assert_eq!(c.send("CHECKREAD x.count"), "510 No element named 'x'");
    assert_eq!(c.read("c.nonesuch").0, "511 No handler named 'c.nonesuch'");
    assert!(c.send("GARBAGE \u{1}\u{2}").starts_with("501 "));
    assert!(c.send("LLRPC 1").starts_with("500 "));
    assert!(c.send("WRITEDATA c.reset lots").starts_with("500 "));
    assert_eq!(c.send("QUIT"), "200 Goodbye!");
}

#[test]
fn unix_socket_mode_and_long_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sock");
    let _r = start(&format!(
        "{FLOWING} ControlSocket(UNIX, {}, READONLY true);",
        path.display()
    ));
    let start = Instant::now();
    let s = loop {
        if let Ok(s) = UnixStream::connect(&path) {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no ControlSocket"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let mut c = Client::new(s);
    assert_eq!(c.read("c.count").0, "200 Read handler 'c.count' OK");
    assert_eq!(c.send("WRITE c.reset"), "530 Permission denied");
    // The router answers and hangs up as soon as the line is too long, so
    // the rest of it may meet a closed socket (EPIPE): the answer is still
    // there to read.
    let long = "READ ".to_string() + &"x".repeat(100_000) + "\r\n";
    let _ = c.r.get_mut().write_all(long.as_bytes());
    assert_eq!(c.line(), "500 Line too long");
}

#[test]
fn silent_client_is_cut_off_while_traffic_flows() {
    let _turn = tcp_turn();
    let port = free_port();
    let _r = start(&format!("{FLOWING} ControlSocket(TCP, {port});"));
    let mut silent = connect_tcp(port);
    let mut c = Client::new(connect_tcp(port));
    let before: u64 = c.read("c.count").1.trim().parse().unwrap();
    // The silent client gets the greeting, then the end of the stream.
    let mut all = Vec::new();
    silent.read_to_end(&mut all).unwrap();
    assert_eq!(all, b"Click::ControlSocket/1.3\r\n");
    let mut c = Client::new(connect_tcp(port));
    let after: u64 = c.read("c.count").1.trim().parse().unwrap();
    assert!(after > before, "{before} then {after}");
}

/// Click's `hotconfig` handler (bricks also calls it `hotswap`): the text
/// written is the new configuration;
/// one that fails to check is refused with its reason and the router
/// keeps the old one.
#[test]
fn hotswap_handler_switches_configurations() {
    let _turn = tcp_turn();
    let port = free_port();
    let _r = start(&format!("{FLOWING} ControlSocket(TCP, {port});"));
    let mut c = Client::new(connect_tcp(port));
    assert_eq!(
        c.send("CHECKWRITE hotswap"),
        "200 Write handler 'hotswap' OK"
    );
    assert_eq!(
        c.send("CHECKWRITE hotconfig"),
        "200 Write handler 'hotconfig' OK"
    );
    std::thread::sleep(Duration::from_millis(200));
    let before: u64 = c.read("c.count").1.trim().parse().unwrap();
    let bad = "s :: InfiniteSource -> c :: Counter -> Nonesuch;";
    let status = c.send(&format!("WRITEDATA hotswap {}\r\n{bad}", bad.len()));
    // Click's multi-line error reply: a head line, then the reasons.
    assert!(
        status.starts_with("520-Write handler 'hotswap' error:\n520")
            && status.contains("Nonesuch"),
        "{status}"
    );
    assert_eq!(c.read("list").1.lines().next(), Some("4"));
    let new = format!(
        "s :: InfiniteSource(LENGTH 60) -> c :: Counter -> c2 :: Counter -> Discard; \
         ControlSocket(TCP, {port});"
    );
    assert_eq!(
        c.send(&format!("WRITEDATA hotconfig {}\r\n{new}", new.len())),
        "200 Write handler 'hotconfig' OK"
    );
    let (_, list) = c.read("list");
    assert!(list.lines().any(|l| l == "c2"), "{list}");
    std::thread::sleep(Duration::from_millis(300));
    let after: u64 = c.read("c.count").1.trim().parse().unwrap();
    let c2: u64 = c.read("c2.count").1.trim().parse().unwrap();
    assert!(
        c2 > 0 && after >= before + c2,
        "c {before} -> {after}, c2 {c2}"
    );
}

/// `PORT+` takes the first free port from PORT on, and the socket's `port`
/// handler says which (a script writes it out at start-up, as Click's
/// tests do); reads take parameters (a Script's `add 1 1`), while a
/// Script's private handlers (`cat` reads files) cannot be reached.
#[test]
fn port_found_upward_is_readable_and_private_handlers_are_hidden() {
    let _turn = tcp_turn();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let port_file = dir.path().join("PORT");
    let _r = start(&format!(
        "{FLOWING} cs :: ControlSocket(TCP, {base}+); \
         sc :: Script(print >{} $(cs.port));",
        port_file.display()
    ));
    let start = Instant::now();
    let port: u16 = loop {
        if let Some(p) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break p;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no PORT file");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(port > base, "{port} should be past the taken {base}");
    let mut c = Client::new(connect_tcp(port));
    assert_eq!(c.read("cs.port").1, port.to_string());
    let (status, sum) = c.read("sc.add 1 2");
    assert!(status.starts_with("200"), "{status}");
    assert_eq!(sum, "3");
    assert_eq!(
        c.send("READ sc.cat /etc/hostname"),
        "511 No handler named 'sc.cat'"
    );
    assert_eq!(c.send("READ sc.kill 0"), "511 No handler named 'sc.kill'");
    drop(taken);
}

/// Click's flat LLRPCs, binary in and out in host byte order: a Switch's
/// GET_SWITCH (0x4004C005) and SET_SWITCH (0x80044006), a Counter's
/// GET_COUNT (0xC004C003); bad values, short data, calls that cannot
/// cross a socket and elements without the call fail as Click's do. A
/// router with a ControlSocket and no source runs until stopped.
#[test]
fn llrpcs_reach_a_switch_and_a_counter() {
    let _turn = tcp_turn();
    let port = free_port();
    let _r = start(&format!(
        "Idle -> sw :: Switch(0) -> Idle; sw[1] -> Idle; {FLOWING} ControlSocket(TCP, {port});"
    ));
    let mut c = Client::new(connect_tcp(port));
    let (status, data) = c.llrpc("sw#4004C005", &[]);
    assert_eq!(status, "200 LLRPC 'sw#4004C005' OK");
    assert_eq!(data, 0i32.to_ne_bytes());
    let (status, data) = c.llrpc("sw#80044006", &1i32.to_ne_bytes());
    assert_eq!(status, "200 LLRPC 'sw#80044006' OK");
    assert!(data.is_empty());
    assert_eq!(c.read("sw.switch").1.trim(), "1");
    assert_eq!(c.llrpc("sw#4004C005", &[]).1, 1i32.to_ne_bytes());
    assert_eq!(
        c.llrpc("sw#80044006", &5i32.to_ne_bytes()).0,
        "522 LLRPC 'sw#80044006' error: Invalid argument"
    );
    assert_eq!(
        c.llrpc("sw#80044006", &[1, 0]).0,
        "522 LLRPC 'sw#80044006' requires 4 bytes input data"
    );
    let (status, data) = c.llrpc("c#C004C003", &0u32.to_ne_bytes());
    assert_eq!(status, "200 LLRPC 'c#C004C003' OK");
    let count = u32::from_ne_bytes(data.try_into().unwrap());
    assert!(count > 0, "the counter counts the flowing source");
    assert!(c
        .llrpc("c#C004C003", &7u32.to_ne_bytes())
        .0
        .starts_with("522 "));
    assert!(c.llrpc("c#4004C005", &[]).0.starts_with("522 "));
    assert_eq!(
        c.llrpc("sw#20000013", &[]).0,
        "501 Cannot call LLRPC 'sw#20000013' remotely"
    );
    assert_eq!(
        c.llrpc("nope#4004C005", &[]).0,
        "510 No element named 'nope'"
    );
    assert!(c.llrpc("sw#zz", &[]).0.starts_with("500 "));
}

/// A router whose only task is its ControlSocket keeps running until a
/// client writes `stop`, as Click's does; then it ends.
#[test]
fn a_control_socket_keeps_an_idle_router_running_until_stopped() {
    let _turn = tcp_turn();
    let port = free_port();
    let mut r = start(&format!("Idle -> Discard; ControlSocket(TCP, {port});"));
    let mut c = Client::new(connect_tcp(port));
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        r.0.try_wait().unwrap().is_none(),
        "the router ended by itself"
    );
    assert_eq!(c.send("WRITE stop"), "200 Write handler 'stop' OK");
    let start = Instant::now();
    while r.0.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(20), "no stop");
        std::thread::sleep(Duration::from_millis(20));
    }
}
