//! Click's user-level ToSocket, FromSocket, ProgressBar and QuitWatcher in
//! whole configurations run by the `bricks` binary. Traffic stays on
//! loopback (127.0.0.1) or UNIX sockets in a temporary directory; every
//! source has a LIMIT and every run a deadline.

use std::path::Path;
use std::time::{Duration, Instant};

mod bounded;
use bounded::{bricks, run, text, wait_bounded, DEADLINE};

/// A UDP port of 127.0.0.1 nothing uses now (bound and released).
fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The payloads of the records of a pcap file bricks wrote (its native,
/// little-endian byte order).
fn pcap_payloads(path: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap();
    assert!(b.len() >= 24, "no pcap header in {}", path.display());
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= b.len() {
        let caplen = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(b[at + 16..at + 16 + caplen].to_vec());
        at += 16 + caplen;
    }
    out
}

/// Writes a pcap of `n` raw-IP records of `len` bytes; returns its size.
fn write_pcap(path: &Path, n: usize, len: usize) -> usize {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&65535u32.to_le_bytes());
    // LINKTYPE_RAW.
    b.extend_from_slice(&101u32.to_le_bytes());
    for i in 0..n {
        b.extend_from_slice(&(1_000_000 + i as u32).to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(len as u32).to_le_bytes());
        b.extend_from_slice(&(len as u32).to_le_bytes());
        let mut ip = vec![0u8; len];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
        b.extend_from_slice(&ip);
    }
    std::fs::write(path, &b).unwrap();
    b.len()
}

#[test]
fn to_socket_sends_udp_to_a_from_socket_of_the_same_router() {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("got.pcap");
    let port = free_udp_port();
    // The listener stops the router once it has the five datagrams;
    // --duration bounds the run should any be lost.
    let o = run(
        &format!(
            "FromSocket(UDP, 127.0.0.1, {port}) -> c :: Counter(COUNT_CALL 5 stop) \
             -> ToDump({}) ;\n\
             RatedSource(DATA \"datagram\", LIMIT 5, RATE 200) -> Queue \
             -> t :: ToSocket(UDP, 127.0.0.1, {port});",
            dump.display()
        ),
        &["--duration", "20", "-h", "c.count", "-h", "t.sent"],
    );
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(text(&o.stdout), "c.count:\n5\n\nt.sent:\n5\n\n", "{err}");
    assert_eq!(pcap_payloads(&dump), vec![b"datagram".to_vec(); 5]);
    // Click's warnings, once each.
    assert_eq!(
        err.matches("warning: ToSocket is deprecated, use Socket instead")
            .count(),
        1,
        "{err}"
    );
    assert_eq!(
        err.matches("warning: FromSocket is deprecated, use Socket instead")
            .count(),
        1,
        "{err}"
    );
}

#[test]
fn to_socket_over_unix_reaches_a_socket_server_in_another_router() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stream.sock");
    let dump = dir.path().join("got.pcap");
    // The server: a stream is not framed, so it counts bytes and stops
    // once it has all twenty.
    let mut server = bricks(&[
        "run",
        "--quiet",
        "--duration",
        "20",
        "-e",
        &format!(
            "Socket(UNIX, {}) -> c :: Counter(BYTE_COUNT_CALL 20 stop) -> ToDump({});",
            path.display(),
            dump.display()
        ),
        "-h",
        "c.byte_count",
    ])
    .spawn()
    .unwrap();
    let start = Instant::now();
    while !path.exists() {
        if let Some(status) = server.try_wait().unwrap() {
            panic!("the server ended before it bound its socket: {status}");
        }
        if start.elapsed() > DEADLINE {
            let _ = server.kill();
            panic!("the server never bound its socket");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let client = run(
        &format!(
            "RatedSource(DATA \"unix!\", LIMIT 4, RATE 100, STOP true) -> Queue \
             -> t :: ToSocket(UNIX, {});",
            path.display()
        ),
        &["-h", "t.sent", "-h", "t.connections"],
    );
    assert!(client.status.success(), "{}", text(&client.stderr));
    assert_eq!(text(&client.stdout), "t.sent:\n4\n\nt.connections:\n1\n\n");
    let o = wait_bounded(server, "the UNIX server");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "20\n");
    // However the reads cut the stream, its bytes are the packets' in
    // order.
    assert_eq!(pcap_payloads(&dump).concat(), b"unix!".repeat(4));
    assert!(!path.exists(), "the server's socket file is left");
}

#[test]
fn progress_bar_over_from_dump_draws_nothing_when_stderr_is_not_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("in.pcap");
    let size = write_pcap(&pcap, 200, 100);
    let o = run(
        &format!(
            "fd :: FromDump({}) -> c :: Counter -> Discard;\n\
             pb :: ProgressBar(fd.filepos, fd.filesize, UPDATE 0.01);",
            pcap.display()
        ),
        &[
            "-h",
            "c.count",
            "-h",
            "fd.filepos",
            "-h",
            "fd.filesize",
            "-h",
            "pb.pos",
            "-h",
            "pb.size",
            "-h",
            "pb.poshandler",
        ],
    );
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    // Click's bar is dead when standard error is not a terminal: no
    // carriage returns, no bar, no estimate; `pos` and `size` were never
    // read.
    assert!(
        !err.contains('\r') && !err.contains('|') && !err.contains("ETA"),
        "{err:?}"
    );
    assert_eq!(
        text(&o.stdout),
        format!(
            "c.count:\n200\n\nfd.filepos:\n{size}\n\nfd.filesize:\n{size}\n\n\
             pb.pos:\n0\n\npb.size:\n-1\n\npb.poshandler:\nfd.filepos\n\n"
        )
    );
}

#[test]
fn progress_bar_with_an_unknown_handler_ends_the_run_with_an_error() {
    let o = run(
        "c :: Counter; InfiniteSource(LIMIT 5) -> c -> Discard; ProgressBar(c.nosuch);",
        &[],
    );
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("cannot read `c.nosuch`"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn quit_watcher_stops_the_run_when_a_limited_source_finishes() {
    // The TimedSource would run until --duration: only QuitWatcher ends
    // the run early.
    let start = Instant::now();
    let o = run(
        "s :: InfiniteSource(LIMIT 20) -> Discard;\n\
         t :: TimedSource(0.05) -> Discard;\n\
         QuitWatcher(s);",
        &["--duration", "25", "-h", "s.count", "-h", "s.scheduled"],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "QuitWatcher did not stop the run: {:?}",
        start.elapsed()
    );
    assert_eq!(text(&o.stdout), "s.count:\n20\n\ns.scheduled:\nfalse\n\n");
}

#[test]
fn quit_watcher_refuses_elements_it_cannot_watch() {
    let o = run(
        "InfiniteSource(LIMIT 5) -> d :: Discard; TimedSource(0.05) -> Discard; \
         QuitWatcher(nosuch);",
        &["--duration", "25"],
    );
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("no element named `nosuch`"),
        "{}",
        text(&o.stderr)
    );
    let o = run(
        "InfiniteSource(LIMIT 5) -> d :: Discard; TimedSource(0.05) -> Discard; QuitWatcher(d);",
        &["--duration", "25"],
    );
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("`d` has no task"),
        "{}",
        text(&o.stderr)
    );
}
