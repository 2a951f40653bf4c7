//! Click's user-level ToRawSocket, FromRawSocket, ChatterSocket and
//! ChangeUID in whole configurations run by the `bricks` binary. Traffic
//! stays on loopback (127.0.0.1) or UNIX sockets in a temporary
//! directory; every source has a LIMIT and every run a deadline. Raw
//! sockets and ChangeUID need root: those tests are skipped, saying why,
//! when not root, and fail instead under CI=true.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod bounded;
use bounded::{bricks, run, text, wait_bounded, DEADLINE};

/// Waits until `ready` holds, failing if `child` ends first or past
/// DEADLINE (the child is killed then).
fn wait_for(child: &mut Child, what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(e) = child.stderr.as_mut() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("bricks ended ({status}) before {what}\nstderr:\n{err}");
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: not within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The ones' complement sum of `b` (RFC 1071), folded.
fn sum16(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// An ICMP echo request from 127.0.0.1 to itself with identifier `id`,
/// as Click's `\<hex>` data.
fn echo_request_data(id: u16) -> String {
    let mut icmp = vec![8, 0, 0, 0];
    icmp.extend_from_slice(&id.to_be_bytes());
    icmp.extend_from_slice(&[0, 1]);
    icmp.extend_from_slice(b"click io compat");
    let c = !sum16(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let total = (20 + icmp.len()) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0, 0, 64, 1, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1]);
    let c = !sum16(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&icmp);
    let hex: Vec<String> = ip.iter().map(|b| format!("{b:02x}")).collect();
    format!("\\<{}>", hex.join(" "))
}

/// A ping over loopback: ToRawSocket sends the echo request it pulls,
/// FromRawSocket emits the host's echo reply, which stops the router.
#[test]
fn to_raw_socket_and_from_raw_socket_exchange_a_ping_on_loopback() {
    if bricks_netns::skip_unless_root("to_raw_socket_and_from_raw_socket_exchange_a_ping").is_some()
    {
        return;
    }
    let id = (std::process::id() as u16) ^ 0x3c3c;
    let o = run(
        &format!(
            "FromRawSocket(ICMP) -> Classifier(20/00 24/{id:04x}) \
               -> c :: Counter(COUNT_CALL 1 stop) -> IPPrint(reply) -> Discard;\n\
             InfiniteSource(DATA {}, LIMIT 1) -> Queue -> t :: ToRawSocket(ICMP);",
            echo_request_data(id)
        ),
        &["--duration", "20", "-h", "c.count", "-h", "t.sent"],
    );
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(text(&o.stdout), "c.count:\n1\n\nt.sent:\n1\n\n", "{err}");
    assert!(
        err.contains("127.0.0.1 > 127.0.0.1: icmp echo-reply"),
        "IPPrint shows the echo reply:\n{err}"
    );
    for class in ["ToRawSocket", "FromRawSocket"] {
        let warning = format!("warning: {class} is deprecated, use RawSocket instead");
        assert_eq!(err.matches(&warning).count(), 1, "{err}");
    }
}

/// FromRawSocket takes no input and ToRawSocket has no output, and a
/// bad TYPE is RawSocket's error: all found when the configuration is
/// checked, with no privilege.
#[test]
fn raw_socket_front_ends_refuse_ports_and_arguments_they_do_not_have() {
    let check = |config: &str| {
        let o = bricks(&["check", "-e", config]).output().unwrap();
        (o.status.success(), text(&o.stderr))
    };
    let (ok, err) = check("Idle -> FromRawSocket(ICMP) -> Discard;");
    assert!(!ok, "{err}");
    assert!(err.contains("FromRawSocket"), "{err}");
    let (ok, err) = check("Idle -> Queue -> ToRawSocket(ICMP) -> Discard;");
    assert!(!ok, "{err}");
    let (ok, err) = check("FromRawSocket(IPX) -> Discard;");
    assert!(!ok && err.contains("not an IP protocol"), "{err}");
    let (ok, err) = check("FromRawSocket(UDP, 53, SNAPLEN 100) -> Discard;");
    assert!(ok, "{err}");
}

/// Reads one line (LF-terminated) or fails at EOF.
fn line(r: &mut impl BufRead) -> String {
    let mut l = String::new();
    let n = r.read_line(&mut l).expect("a line from the chatter socket");
    assert!(n > 0, "the chatter socket closed early");
    l
}

/// The configuration of the chatter tests: the source starts printing
/// once `cs` has a client, so the client sees every line.
fn chatter_config(socket: &str, limit: usize, print: &str) -> String {
    format!(
        "cs :: {socket};\n\
         s :: InfiniteSource(\"chatter\", LIMIT {limit}, ACTIVE false) -> {print} -> Discard;\n\
         Script(label w, wait 0.02, goto w $(lt $(cs.connected) 1), write s.active true);"
    )
}

/// A UNIX client gets Click's greeting, then Print's lines, which
/// standard error gets too.
#[test]
fn chatter_socket_greets_a_unix_client_and_sends_it_print_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chatter.sock");
    let config = chatter_config(
        &format!("ChatterSocket(UNIX, {})", path.display()),
        5,
        "Print(hello-chatter)",
    );
    let mut child = bricks(&[
        "run",
        "--quiet",
        "--duration",
        "20",
        "-e",
        &config,
        "-h",
        "cs.clients",
        "-h",
        "cs.messages",
    ])
    .spawn()
    .unwrap();
    wait_for(&mut child, "the chatter socket exists", || path.exists());
    let client = std::os::unix::net::UnixStream::connect(&path).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut r = BufReader::new(client);
    assert_eq!(line(&mut r), "Click::ChatterSocket/1.0\r\n");
    for _ in 0..5 {
        let l = line(&mut r);
        assert!(
            l.starts_with("hello-chatter:") && l.ends_with('\n'),
            "{l:?}"
        );
    }
    // The router ends once the source is done: the socket closes.
    let mut rest = String::new();
    r.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "");
    let o = wait_bounded(child, &config);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(err.matches("hello-chatter:").count(), 5, "{err}");
    assert_eq!(
        text(&o.stdout),
        "cs.clients:\n1\n\ncs.messages:\n5\n\n",
        "{err}"
    );
    assert!(!path.exists(), "the socket's file is removed at the end");
}

/// A TCP client on 127.0.0.1, GREETING false: the Print lines only.
#[test]
fn chatter_socket_over_tcp_without_greeting() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = chatter_config(
        &format!("ChatterSocket(TCP, {port}, GREETING false)"),
        3,
        "Print(tcp-chatter)",
    );
    let mut child = bricks(&["run", "--quiet", "--duration", "20", "-e", &config])
        .spawn()
        .unwrap();
    let mut client = None;
    wait_for(&mut child, "the chatter socket listens", || {
        client = std::net::TcpStream::connect(("127.0.0.1", port)).ok();
        client.is_some()
    });
    let client = client.unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut r = BufReader::new(client);
    for _ in 0..3 {
        let l = line(&mut r);
        assert!(l.starts_with("tcp-chatter:"), "{l:?}");
    }
    let o = wait_bounded(child, &config);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// A client that stops reading neither slows nor stops the router: it is
/// disconnected once 500,000 bytes behind, its losses counted, while
/// standard error gets every line.
#[test]
fn chatter_socket_disconnects_a_client_that_falls_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slow.sock");
    let errfile = dir.path().join("stderr.txt");
    const LINES: usize = 20_000;
    // Lines of about 230 bytes: 4.6 MB in all.
    let config = chatter_config(
        &format!("ChatterSocket(UNIX, {})", path.display()),
        LINES,
        "Print(flood, 100)",
    )
    .replace("\"chatter\"", &format!("\"{}\"", "f".repeat(100)));
    let mut child = bricks(&[
        "run",
        "--quiet",
        "--duration",
        "25",
        "-e",
        &config,
        "-h",
        "cs.overruns",
        "-h",
        "cs.connected",
    ])
    .stderr(std::fs::File::create(&errfile).unwrap())
    .spawn()
    .unwrap();
    wait_for(&mut child, "the chatter socket exists", || path.exists());
    let mut client = std::os::unix::net::UnixStream::connect(&path).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut greeting = [0u8; 26];
    client.read_exact(&mut greeting).unwrap();
    assert_eq!(&greeting, b"Click::ChatterSocket/1.0\r\n");
    // Reads nothing more until the router is done.
    let o = wait_bounded(child, &config);
    let err = std::fs::read_to_string(&errfile).unwrap();
    assert!(
        o.status.success(),
        "{}",
        &err[err.len().saturating_sub(2000)..]
    );
    assert_eq!(text(&o.stdout), "cs.overruns:\n1\n\ncs.connected:\n0\n\n");
    assert_eq!(err.matches("flood:").count(), LINES);
    // What the kernel had taken, then the end: far from all of it.
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).unwrap();
    assert!(rest.len() < LINES * 200, "{} bytes", rest.len());
}

/// The uid and gid lines of /proc/PID/status: real, effective, saved,
/// filesystem.
fn ids_of(pid: u32) -> Option<(String, String, String)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    Some((
        field("Uid:")?,
        field("Gid:")?,
        field("Groups:").unwrap_or_default(),
    ))
}

/// nobody's user and group IDs from /etc/passwd.
fn nobody() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    let l = passwd
        .lines()
        .find(|l| l.starts_with("nobody:"))
        .expect("a user nobody");
    let f: Vec<&str> = l.split(':').collect();
    (f[2].parse().unwrap(), f[3].parse().unwrap())
}

/// ChangeUID(nobody) drops root for good once the router's sockets are
/// open: a UDP socket on a port only root may bind keeps working, and
/// the process's IDs are nobody's.
#[test]
fn change_uid_drops_root_after_the_sockets_are_open() {
    if bricks_netns::skip_unless_root("change_uid_drops_root_after_the_sockets_are_open").is_some()
    {
        return;
    }
    // A privileged port of loopback that is free now.
    let port = (900..1000)
        .find(|p| std::net::UdpSocket::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free port under 1024");
    let config = format!(
        "Socket(UDP, 127.0.0.1, {port}) -> Print(got, CONTENTS ASCII) \
           -> c :: Counter(COUNT_CALL 1 stop) -> Discard;\n\
         ChangeUID(nobody);"
    );
    let mut child = bricks(&[
        "run",
        "--quiet",
        "--duration",
        "20",
        "-e",
        &config,
        "-h",
        "c.count",
    ])
    .spawn()
    .unwrap();
    let pid = child.id();
    let (uid, gid) = nobody();
    let want_uid = format!("{uid} {uid} {uid} {uid}");
    wait_for(&mut child, "the process becomes nobody", || {
        ids_of(pid).is_some_and(|(u, _, _)| u == want_uid)
    });
    let (_, gids, groups) = ids_of(pid).unwrap();
    assert_eq!(gids, format!("{gid} {gid} {gid} {gid}"));
    assert!(
        groups.is_empty() || groups == gid.to_string(),
        "root's groups are gone: {groups:?}"
    );
    // The socket opened as root still receives.
    let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    peer.send_to(b"after the drop", ("127.0.0.1", port))
        .unwrap();
    let o = wait_bounded(child, &config);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(text(&o.stdout), "1\n", "{err}");
    assert!(err.contains("got:   14 |"), "{err}");
}

/// ChangeUID() is Click's: effective IDs become the real ones, which for
/// root changes nothing.
#[test]
fn change_uid_without_arguments_keeps_root_root() {
    if bricks_netns::skip_unless_root("change_uid_without_arguments_keeps_root_root").is_some() {
        return;
    }
    let o = run(
        "ChangeUID(); InfiniteSource(LIMIT 3) -> c :: Counter -> Discard;",
        &["-h", "c.count"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "3\n");
}

/// Unknown users and groups are refused when the configuration is
/// checked, with no privilege.
#[test]
fn change_uid_refuses_unknown_names_when_checked() {
    for (config, want) in [
        (
            "ChangeUID(no-such-user-bxraw);",
            "no user `no-such-user-bxraw`",
        ),
        (
            "ChangeUID(nobody, no-such-group-bxraw);",
            "no group `no-such-group-bxraw`",
        ),
        ("ChangeUID(GROUP 0);", "GROUP needs a USER"),
    ] {
        let o = bricks(&["check", "-e", config]).output().unwrap();
        assert!(!o.status.success(), "{config}");
        assert!(text(&o.stderr).contains(want), "{}", text(&o.stderr));
    }
    let o = bricks(&["check", "-e", "ChangeUID(nobody, 65534);"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// Every example of these classes' manuals runs to its end (they need
/// root: raw sockets, ChangeUID).
#[test]
fn the_manual_examples_run() {
    if bricks_netns::skip_unless_root("the_manual_examples_run").is_some() {
        return;
    }
    let reg = bricks_elements::registry();
    for class in ["ToRawSocket", "FromRawSocket", "ChatterSocket", "ChangeUID"] {
        let class = reg
            .classes()
            .into_iter()
            .find(|c| c.name == class)
            .expect("a registered class");
        let o = run(class.manual.example, &["--duration", "20"]);
        assert!(
            o.status.success(),
            "{}'s example:\n{}",
            class.name,
            text(&o.stderr)
        );
    }
}

/// A hot swap to a configuration with the same ChatterSocket keeps its
/// socket, its client and its counters: the client goes on with the new
/// configuration's lines.
#[test]
fn chatter_socket_keeps_its_clients_across_a_hot_swap() {
    let dir = tempfile::tempdir().unwrap();
    let chat = dir.path().join("chat.sock");
    let control = dir.path().join("control.sock");
    let old = dir.path().join("old.click");
    let new = dir.path().join("new.click");
    let config = |label: &str| {
        format!(
            "cs :: ChatterSocket(UNIX, {});\n\
             RatedSource(\"{label}\", RATE 20, LIMIT 400) -> Print({label}) -> Discard;\n",
            chat.display()
        )
    };
    std::fs::write(&old, config("old-config")).unwrap();
    std::fs::write(&new, config("new-config")).unwrap();
    let mut child = bricks(&["run", "--quiet", "--duration", "20", "--control"])
        .arg(&control)
        .arg(&old)
        .args(["-h", "cs.clients"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&mut child, "both sockets exist", || {
        chat.exists() && control.exists()
    });
    let client = std::os::unix::net::UnixStream::connect(&chat).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut r = BufReader::new(client);
    assert_eq!(line(&mut r), "Click::ChatterSocket/1.0\r\n");
    assert!(line(&mut r).starts_with("old-config:"));
    let swapped = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .arg("ctl")
        .arg(&control)
        .arg("hotswap")
        .arg(&new)
        .output()
        .unwrap();
    assert!(swapped.status.success(), "{}", text(&swapped.stderr));
    // The same connection, now with the new configuration's lines.
    let mut seen = false;
    for _ in 0..200 {
        let l = line(&mut r);
        if l.starts_with("new-config:") {
            seen = true;
            break;
        }
        assert!(l.starts_with("old-config:"), "{l:?}");
    }
    assert!(seen, "no line of the new configuration");
    let _ = child.kill();
    let _ = child.wait();
}
