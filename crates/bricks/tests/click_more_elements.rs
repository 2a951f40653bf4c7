//! SetIPECN, CheckARPHeader, StaticPullSwitch, TimedUnqueue and Burster in
//! whole configurations run by the `bricks` binary: the packets they
//! change or pass, their counters and handlers read at exit, and, in
//! simulated time, when the timed ones send.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn bricks(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .output()
        .expect("bricks runs")
}

/// Runs `config` quietly to its end with extra arguments; returns stdout
/// and stderr.
fn run(config: &str, extra: &[&str]) -> (String, String) {
    let mut args = vec!["run", "--quiet", "-e", config];
    args.extend_from_slice(extra);
    let o = bricks(&args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{config}:\n{err}");
    (out, err)
}

/// The lines of `text` that start with `prefix`.
fn lines_with<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// The timestamps of the `Print(TAG, TIMESTAMP true)` lines tagged `tag`.
fn stamps<'a>(err: &'a str, tag: &str) -> Vec<&'a str> {
    lines_with(err, &format!("{tag}: "))
        .into_iter()
        .filter_map(|l| l[tag.len() + 2..].split(':').next())
        .collect()
}

/// An IPv4 header, 10.0.0.1 to 10.0.0.2, TOS 0, checksum 0x66d7.
const IP: &str = "\\<45 00 00 14 00 00 00 00 40 11 66 d7 0a 00 00 01 0a 00 00 02>";

#[test]
fn set_ip_ecn_marks_and_keeps_the_checksum_right() {
    // CheckIPHeader after it verifies the incrementally updated checksum.
    let (out, err) = run(
        &format!(
            "InfiniteSource(DATA {IP}, LIMIT 2) -> MarkIPHeader -> e :: SetIPECN(ce) \
             -> ch :: CheckIPHeader -> Print(ce) -> Discard;"
        ),
        &["-h", "e.ecn", "-h", "ch.drops", "-h", "e.drops"],
    );
    assert_eq!(
        lines_with(&err, "ce:"),
        vec!["ce:   20 | 45030014 00000000 401166d4 0a000001 0a000002"; 2],
        "{err}"
    );
    assert_eq!(out, "e.ecn:\nce\n\nch.drops:\n0\n\ne.drops:\n0\n\n");
    // With a DSCP set before, ECT(1) keeps it: TOS 46 << 2 | 1.
    let (_, err) = run(
        &format!(
            "InfiniteSource(DATA {IP}, LIMIT 1) -> SetIPDSCP(46) -> SetIPECN(ECT(1)) \
             -> ch :: CheckIPHeader -> Print(ef) -> Discard; ch[1] -> Print(bad) -> Discard;"
        ),
        &[],
    );
    assert_eq!(
        lines_with(&err, "ef:"),
        vec!["ef:   20 | 45b90014 00000000 4011661e 0a000001 0a000002"],
        "{err}"
    );
    assert!(lines_with(&err, "bad:").is_empty(), "{err}");
    // A packet too short for an IP header is dropped and counted.
    let (out, _) = run(
        "InfiniteSource(DATA \\<45 00 00 14>, LIMIT 3) -> e :: SetIPECN(1) -> Discard;",
        &["-h", "e.drops"],
    );
    assert_eq!(out, "3\n");
    let o = bricks(&["check", "-e", "Idle -> SetIPECN(ect3) -> Discard;"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad ECN argument"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// 10.0.0.1 (52:54:00:aa:00:01) asks who has 10.0.0.2.
const ARP_REQUEST: &str = "ffffffffffff 525400aa0001 0806 0001 0800 06 04 0001 \
    525400aa0001 0a000001 000000000000 0a000002";
/// 10.0.0.2 is at 52:54:00:bb:00:02.
const ARP_REPLY: &str = "525400aa0001 525400bb0002 0806 0001 0800 06 04 0002 \
    525400bb0002 0a000002 525400aa0001 0a000001";
/// The reply cut after the sender's hardware address.
const ARP_CUT: &str = "525400aa0001 525400bb0002 0806 0001 0800 06 04 0002 \
    525400bb0002";
/// Seven bytes of ARP.
const ARP_TINY: &str = "ffffffffffff 525400aa0001 0806 0001 0800 06 04 00";
/// Ethernet hardware with 8-byte addresses, padded to 60 bytes.
const ARP_BAD_HRD: &str = "ffffffffffff 525400aa0001 0806 0001 0800 08 04 0001 \
    525400aa00010000 0a000001 0000000000000000 0a000002 00000000 00000000 000000000000";
/// IPv4 with 6-byte protocol addresses, padded to 60 bytes.
const ARP_BAD_PRO: &str = "ffffffffffff 525400aa0001 0806 0001 0800 06 06 0001 \
    525400aa0001 0a0000010000 000000000000 0a0000020000 00000000 00000000 0000000000000000";

fn arp_config(check: &str, reject: bool) -> String {
    let mut c = String::new();
    for (i, f) in [
        ARP_REQUEST,
        ARP_REPLY,
        ARP_CUT,
        ARP_TINY,
        ARP_BAD_HRD,
        ARP_BAD_PRO,
    ]
    .iter()
    .enumerate()
    {
        c += &format!("s{i} :: InfiniteSource(DATA \\<{f}>, LIMIT 1) -> c;\n");
    }
    c += &format!("c :: {check} -> ok :: Counter -> Discard;\n");
    if reject {
        c += "c[1] -> bad :: Counter -> Discard;\n";
    }
    c
}

#[test]
fn check_arp_header_passes_good_and_counts_bad_by_reason() {
    let (out, err) = run(
        &arp_config("CheckARPHeader(14, DETAILS true)", true),
        &[
            "-h",
            "ok.count",
            "-h",
            "bad.count",
            "-h",
            "c.drops",
            "-h",
            "c.drop_details",
        ],
    );
    assert_eq!(
        out,
        "ok.count:\n2\n\nbad.count:\n4\n\nc.drops:\n4\n\nc.drop_details:\n\
         1\ttiny packet\n1\ttoo small for addresses\n1\tbad hardware type/length\n\
         1\tbad protocol type/length\n\n"
    );
    // As Click, only the first bad packet is reported.
    assert_eq!(
        lines_with(&err, "ARP header check failed").len(),
        1,
        "{err}"
    );
    // Every one with VERBOSE; dropped without output 1; per-reason
    // counters whatever DETAILS says.
    let (out, err) = run(
        &arp_config("CheckARPHeader(OFFSET 14, VERBOSE true)", false),
        &[
            "-h",
            "ok.count",
            "-h",
            "c.drops",
            "-h",
            "c.bad_hrd",
            "-h",
            "c.miniscule_packet",
        ],
    );
    assert_eq!(
        out,
        "ok.count:\n2\n\nc.drops:\n4\n\nc.bad_hrd:\n1\n\nc.miniscule_packet:\n1\n\n"
    );
    let mut reported = lines_with(&err, "ARP header check failed: ");
    reported.sort();
    assert_eq!(
        reported,
        vec![
            "ARP header check failed: bad hardware type/length",
            "ARP header check failed: bad protocol type/length",
            "ARP header check failed: tiny packet",
            "ARP header check failed: too small for addresses",
        ],
        "{err}"
    );
    // No DETAILS, no drop_details handler.
    let o = bricks(&[
        "run",
        "--quiet",
        "-e",
        &arp_config("CheckARPHeader(14)", true),
        "-h",
        "c.drop_details",
    ]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no 'c.drop_details' handler"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn static_pull_switch_pulls_its_one_input() {
    let (out, err) = run(
        "InfiniteSource(DATA \"zero\", LIMIT 3) -> q0 :: Queue; \
         InfiniteSource(DATA \"one\", LIMIT 5) -> q1 :: Queue; \
         ps :: StaticPullSwitch(1); q0 -> [0]ps; q1 -> [1]ps; \
         ps -> Unqueue -> Print(got, CONTENTS ASCII) -> c :: Counter -> Discard;",
        &["-h", "c.count", "-h", "q0.length", "-h", "ps.handlers"],
    );
    assert_eq!(
        lines_with(&err, "got:"),
        vec!["got:    3 |  one"; 5],
        "{err}"
    );
    assert!(out.starts_with("c.count:\n5\n\nq0.length:\n3\n\n"), "{out}");
    assert!(!out.contains("switch"), "{out}");
    // -1, or an input it does not have: nothing.
    for input in ["-1", "2"] {
        let (out, _) = run(
            &format!(
                "InfiniteSource(LIMIT 3) -> q0 :: Queue; InfiniteSource(LIMIT 4) -> q1 :: Queue; \
                 ps :: StaticPullSwitch({input}); q0 -> [0]ps; q1 -> [1]ps; \
                 ps -> Unqueue -> c :: Counter -> Discard;"
            ),
            &["-h", "c.count", "-h", "q0.length", "-h", "q1.length"],
        );
        assert_eq!(
            out, "c.count:\n0\n\nq0.length:\n3\n\nq1.length:\n4\n\n",
            "{input}"
        );
    }
    let o = bricks(&["check", "-e", "Idle -> StaticPullSwitch -> Discard;"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("INPUT"));
}

#[test]
fn timed_unqueue_sends_bursts_on_the_interval_in_simulated_time() {
    let (out, err) = run(
        "InfiniteSource(LIMIT 7) -> Queue -> t :: TimedUnqueue(0.5, 2) -> SetTimestamp \
         -> Print(x, TIMESTAMP true, MAXLENGTH 0) -> c :: Counter -> Discard;",
        &["--simtime", "-h", "c.count", "-h", "t.count"],
    );
    assert_eq!(
        stamps(&err, "x"),
        vec![
            "1000000000.000000",
            "1000000000.000000",
            "1000000000.500000",
            "1000000000.500000",
            "1000000001.000000",
            "1000000001.000000",
            "1000000001.500000",
        ],
        "{err}"
    );
    assert_eq!(out, "c.count:\n7\n\nt.count:\n7\n\n");
}

#[test]
fn timed_unqueue_sends_at_once_into_an_idle_interval() {
    // Packets at 0.25 and 0.5 s into an empty QuickNoteQueue, pulled at
    // most once a second: the first pull finds the queue empty, its
    // notifier sleeps at once and so does the element, so the first
    // packet leaves when it arrives; the second waits for 1.25 s; the
    // source stops the router at 2 s, after it. Click prints the same.
    let (out, err) = run(
        "TimedSource(0.25, LIMIT 2) -> q :: QuickNoteQueue -> TimedUnqueue(1) -> SetTimestamp \
         -> Print(x, TIMESTAMP true, MAXLENGTH 0) -> Discard; \
         TimedSource(2, LIMIT 0, STOP true) -> Discard;",
        &["--simtime", "-h", "q.length"],
    );
    assert_eq!(
        stamps(&err, "x"),
        vec!["1000000000.250000", "1000000001.250000"],
        "{err}"
    );
    assert_eq!(out, "0\n");
}

#[test]
fn timed_unqueue_behind_a_queue_waits_for_its_interval() {
    // The same behind a Queue, whose empty notifier sleeps only after ten
    // pulls in a row found it empty: after the first the element sets its
    // timer for 1 s, and the packets leave at 1 and 2 s. Click prints the
    // same.
    let (out, err) = run(
        "TimedSource(0.25, LIMIT 2) -> q :: Queue -> TimedUnqueue(1) -> SetTimestamp \
         -> Print(x, TIMESTAMP true, MAXLENGTH 0) -> Discard; \
         TimedSource(2.5, LIMIT 0, STOP true) -> Discard;",
        &["--simtime", "-h", "q.length"],
    );
    assert_eq!(
        stamps(&err, "x"),
        vec!["1000000001.000000", "1000000002.000000"],
        "{err}"
    );
    assert_eq!(out, "0\n");
}

#[test]
fn timed_unqueue_ends_on_its_own_on_the_wall_clock() {
    // 20 packets, 2 every 10 ms: the last pull at 90 ms, then the run ends
    // (the queue is empty), bounded in time.
    let start = Instant::now();
    let (out, _) = run(
        "InfiniteSource(LIMIT 20) -> Queue -> TimedUnqueue(0.01, 2) -> c :: Counter -> Discard;",
        &["-h", "c.count"],
    );
    let took = start.elapsed();
    assert_eq!(out, "20\n");
    assert!(took >= Duration::from_millis(90), "{took:?}");
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn burster_sends_eight_by_default() {
    let (out, err) = run(
        "InfiniteSource(LIMIT 20) -> Queue -> b :: Burster(0.1) -> SetTimestamp \
         -> Print(x, TIMESTAMP true, MAXLENGTH 0) -> c :: Counter -> Discard;",
        &["--simtime", "-h", "c.count", "-h", "b.count"],
    );
    let got = stamps(&err, "x");
    let at = |t: &str| got.iter().filter(|s| **s == t).count();
    assert_eq!(
        (
            at("1000000000.000000"),
            at("1000000000.100000"),
            at("1000000000.200000")
        ),
        (8, 8, 4),
        "{err}"
    );
    assert_eq!(got.len(), 20, "{err}");
    assert_eq!(out, "c.count:\n20\n\nb.count:\n20\n\n");
    let (out, err) = run(
        "InfiniteSource(LIMIT 5) -> Queue -> Burster(1, BURST 3) -> SetTimestamp \
         -> Print(x, TIMESTAMP true, MAXLENGTH 0) -> c :: Counter -> Discard;",
        &["--simtime", "-h", "c.count"],
    );
    assert_eq!(
        stamps(&err, "x"),
        vec![
            "1000000000.000000",
            "1000000000.000000",
            "1000000000.000000",
            "1000000001.000000",
            "1000000001.000000",
        ],
        "{err}"
    );
    assert_eq!(out, "5\n");
}
