//! Click's small elements (crates/elements/src/click) in whole
//! configurations run by the `bricks` binary: what they print, the
//! packets they change, and their handlers read at exit.

use std::process::{Command, Output};

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

/// 10.0.0.1 (52:54:00:aa:00:01) asks who has 10.0.0.2.
const ARP_REQUEST: &str = "\\<ffffffffffff 525400aa0001 0806 0001 0800 06 04 0001 \
    525400aa0001 0a000001 000000000000 0a000002>";

#[test]
fn arp_print_prints_tcpdump_lines() {
    let (_, err) = run(
        &format!(
            "InfiniteSource(DATA {ARP_REQUEST}, LIMIT 2) -> SetTimestamp(1.5) \
             -> ARPPrint(arpr, ETHER true) -> ARPPrint(TIMESTAMP false) -> Discard;"
        ),
        &[],
    );
    let tagged = lines_with(&err, "arpr: ");
    assert_eq!(
        tagged,
        vec![
            "arpr: 1.500000: 52-54-00-AA-00-01 > FF-FF-FF-FF-FF-FF: arp who-has 10.0.0.2 tell 10.0.0.1";
            2
        ],
        "{err}"
    );
    assert_eq!(
        lines_with(&err, "arp who-has"),
        vec!["arp who-has 10.0.0.2 tell 10.0.0.1"; 2],
        "{err}"
    );
}

#[test]
fn arp_print_active_handler() {
    let (out, err) = run(
        &format!("InfiniteSource(DATA {ARP_REQUEST}, LIMIT 1) -> a :: ARPPrint(ACTIVE false) -> Discard;"),
        &["-h", "a.active"],
    );
    assert!(!err.contains("who-has"), "{err}");
    assert_eq!(out, "false\n");
}

#[test]
fn truncate_and_pad_set_lengths() {
    // After Click's test/standard/Pad-01, with Print instead of dumps.
    let (_, err) = run(
        "InfiniteSource(DATA \"HiFart\", LIMIT 1) -> t :: Tee(4) -> Print(0) -> d :: Discard; \
         t[1] -> Truncate(4) -> Print(1) -> d; \
         t[2] -> Truncate(4) -> Pad(10) -> Print(2) -> d; \
         t[3] -> Truncate(2) -> Pad(4) -> Print(3) -> d;",
        &[],
    );
    let mut got = lines_with(&err, "");
    got.sort();
    assert_eq!(
        got,
        vec![
            "0:    6 | 48694661 7274",
            "1:    4 | 48694661",
            "2:   10 | 48694661 00000000 0000",
            "3:    4 | 48690000",
        ],
        "{err}"
    );
}

#[test]
fn truncate_nbytes_handler() {
    let (out, _) = run(
        "Idle -> t :: Truncate(44) -> Discard;",
        &["-q", "-h", "t.nbytes"],
    );
    assert_eq!(out, "44\n");
}

#[test]
fn resize_follows_click_test() {
    // Click's test/standard/Resize-01 (the bytes Resize adds in front are
    // whatever the headroom held; Click's test matches them with `....`).
    let (_, err) = run(
        "RatedSource(DATA \"ABCD\", LIMIT 1, STOP true) -> Print() -> Resize(HEAD -2) -> Print() \
         -> Resize(+4, -2) -> Print() -> Resize() -> Print() -> Resize(HEAD -8) -> Print() \
         -> Discard();",
        &[],
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines[0], "   4 | 41424344", "{err}");
    assert_eq!(lines[1], "   2 | 4344", "{err}");
    assert!(
        lines[2].starts_with("   4 | ") && lines[2].ends_with("4142"),
        "{err}"
    );
    assert!(
        lines[3].starts_with("   4 | ") && lines[3].ends_with("4142"),
        "{err}"
    );
    assert_eq!(lines[4], "   0", "{err}");
}

#[test]
fn store_ip_address_follows_click_test() {
    // Click's test/ip/StoreIPAddress-01.
    let (_, err) = run(
        "InfiniteSource(LIMIT 6, STOP true, DATA \\<99999999 99999999 99999999 99999999 99999999>) \
         -> MarkIPHeader(0) -> SetIPAddress(1.0.0.2) -> r :: RoundRobinSwitch -> Print(a) \
         -> d :: Discard; \
         r[1] -> StoreIPAddress(0) -> Print(b) -> d; \
         r[2] -> StoreIPAddress(1.0.0.3, 4) -> Print(c) -> d; \
         r[3] -> StoreIPAddress(src) -> Print(d) -> d; \
         r[4] -> StoreIPAddress(dst) -> Print(e) -> d; \
         r[5] -> StoreIPAddress(1.0.0.4, dst) -> Print(f) -> d;",
        &[],
    );
    let mut got = lines_with(&err, "");
    got.sort();
    assert_eq!(
        got,
        vec![
            "a:   20 | 99999999 99999999 99999999 99999999 99999999",
            "b:   20 | 01000002 99999999 99999999 99999999 99999999",
            "c:   20 | 99999999 01000003 99999999 99999999 99999999",
            "d:   20 | 99999999 99999999 9999cbca 01000002 99999999",
            "e:   20 | 99999999 99999999 9999cbca 99999999 01000002",
            "f:   20 | 99999999 99999999 9999cbc8 99999999 01000004",
        ],
        "{err}"
    );
}

#[test]
fn set_ip_dscp_handler_reads_its_argument() {
    // Click's test/ip/SetIPDSCP-01 reads the handler before and after a
    // write; -h reads it at exit.
    let (out, _) = run(
        "Idle -> s :: SetIPDSCP(DSCP 10) -> Idle;",
        &["-q", "-h", "s.dscp"],
    );
    assert_eq!(out, "10\n");
}

#[test]
fn message_prints_once_and_error_fails() {
    let (_, err) = run(
        "Message(\"hello there\"); Message(careful, WARNING); \
         InfiniteSource(LIMIT 1) -> Discard;",
        &["-j", "2"],
    );
    assert_eq!(
        lines_with(&err, "hello there"),
        vec!["hello there"],
        "{err}"
    );
    assert_eq!(
        lines_with(&err, "warning: careful"),
        vec!["warning: careful"],
        "{err}"
    );
    let o = bricks(&["check", "-e", "Message(\"not this one\", ERROR);"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not this one"));
}

#[test]
fn time_filter_with_a_trace_clock() {
    // The timestamps of Click's test/analysis/TimeFilter-01.
    let dir = std::env::temp_dir().join(format!("bricks-click-small-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dump = dir.join("F");
    std::fs::write(&dump, "!data timestamp\n0.1\n0.2\n1.0\n1.2\n5.5\n").unwrap();
    let config = format!(
        "FromIPSummaryDump({}, STOP true) -> t :: TimeFilter(START_AFTER 0.15, END 1.1) \
         -> c :: Counter -> Discard; t[1] -> o :: Counter -> Discard;",
        dump.display()
    );
    let (out, _) = run(&config, &["--simtime", "-h", "c.count", "-h", "o.count"]);
    assert_eq!(out, "c.count:\n1\n\no.count:\n4\n\n");
    let config = format!(
        "FromIPSummaryDump({}, STOP true) -> t :: TimeFilter(INTERVAL 1) -> c :: Counter \
         -> Discard;",
        dump.display()
    );
    let (out, _) = run(&config, &["--simtime", "-h", "c.count", "-h", "t.interval"]);
    assert_eq!(out, "c.count:\n3\n\nt.interval:\n1.000000\n\n");
    // Click's test itself: END_CALL runs a Script that extends the
    // interval twice (so 1.0 and 1.2 pass), then stops extending.
    let config = format!(
        "FromIPSummaryDump({}, STOP true) -> t :: TimeFilter(0, 1, END_CALL s.run $t) \
         -> c :: Counter -> Discard; \
         s :: Script(TYPE PASSIVE, init x 0, goto exit $(gt $x 1), set x $(add $x 1), \
         print $1, write t.extend_interval 1)",
        dump.display()
    );
    let (out, _) = run(&config, &["-h", "c.count"]);
    assert_eq!(out, "1.000000\n5.500000\n4\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pull_switch_handler_picks_the_input() {
    let (out, _) = run(
        "InfiniteSource(LIMIT 3) -> q0 :: Queue; InfiniteSource(LIMIT 5) -> q1 :: Queue; \
         ps :: PullSwitch(1); q0 -> [0]ps; q1 -> [1]ps; ps -> Unqueue -> c :: Counter -> Discard;",
        &["-h", "c.count", "-h", "ps.switch"],
    );
    assert_eq!(out, "c.count:\n5\n\nps.switch:\n1\n\n");
}

#[test]
fn delay_unqueue_delays_in_simulated_time() {
    let (_, err) = run(
        "InfiniteSource(LIMIT 2) -> SetTimestamp -> Queue -> DelayUnqueue(0.25) \
         -> Print(TIMESTAMP true, MAXLENGTH 0) -> Discard;",
        &["--simtime"],
    );
    let stamps: Vec<&str> = err.lines().filter_map(|l| l.split(':').next()).collect();
    assert_eq!(stamps.len(), 2, "{err}");
    for s in stamps {
        assert!(s.starts_with("1000000000.25"), "{err}");
    }
}

#[test]
fn icmp_ping_encap_is_answered() {
    // Click's test/icmp/ICMPPingEncap-01, counting replies instead of
    // reading them back with tcpdump.
    let (out, _) = run(
        "InfiniteSource(\"\", LIMIT 2, STOP true) \
         -> ICMPPingEncap(1.0.0.1, 2.0.0.2, IDENTIFIER 3) -> CheckICMPHeader -> CheckIPHeader \
         -> r :: ICMPPingResponder -> IPPrint(reply) -> c :: Counter -> Discard;",
        &["-h", "c.count"],
    );
    assert_eq!(out, "2\n");
}

/// The length field of each record of a pcap file after the 24-byte file
/// header: (captured, on the wire).
fn pcap_lengths(path: &std::path::Path) -> Vec<(u32, u32)> {
    let b = std::fs::read(path).unwrap();
    let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let mut at = 24;
    let mut v = Vec::new();
    while at + 16 <= b.len() {
        let (cap, wire) = (word(at + 8), word(at + 12));
        v.push((cap, wire));
        at += 16 + cap as usize;
    }
    v
}

#[test]
fn what_truncate_cuts_stays_in_the_dumps_wire_length() {
    // As Click: ToDump writes the extra length annotation into a record's
    // length (unless EXTRA_LENGTH false), FromDump reads it back from a
    // cut record, and Pad without LENGTH restores the bytes as zeros.
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a.pcap"),
        dir.path().join("b.pcap"),
        dir.path().join("c.pcap"),
    );
    run(
        &format!(
            "InfiniteSource(LENGTH 60, LIMIT 2, STOP true) -> Truncate(14) \
             -> t :: Tee -> ToDump({}); t[1] -> ToDump({}, EXTRA_LENGTH false);",
            a.display(),
            c.display()
        ),
        &[],
    );
    assert_eq!(pcap_lengths(&a), vec![(14, 60), (14, 60)]);
    assert_eq!(pcap_lengths(&c), vec![(14, 14), (14, 14)]);
    run(
        &format!(
            "FromDump({}, STOP true) -> Pad -> ToDump({});",
            a.display(),
            b.display()
        ),
        &[],
    );
    assert_eq!(pcap_lengths(&b), vec![(60, 60), (60, 60)]);
}

#[test]
fn a_packet_without_a_timestamp_is_dumped_with_the_time_it_is_written() {
    // As Click's ToDump: a zero timestamp annotation becomes now; one set
    // by the source is kept.
    let dir = tempfile::tempdir().unwrap();
    let (a, b, summary) = (
        dir.path().join("a.pcap"),
        dir.path().join("b.pcap"),
        dir.path().join("in.ipsum"),
    );
    std::fs::write(
        &summary,
        "!data timestamp ip_src ip_dst\n1000.5 1.0.0.1 2.0.0.2\n",
    )
    .unwrap();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    run(
        &format!(
            "InfiniteSource(LIMIT 1, STOP true, TIMESTAMP false) -> ToDump({});\n\
             FromIPSummaryDump({}, STOP true) -> ToDump({}, ENCAP IP);",
            a.display(),
            summary.display(),
            b.display()
        ),
        &[],
    );
    let seconds = |path: &std::path::Path| {
        let d = std::fs::read(path).unwrap();
        u64::from(u32::from_le_bytes([d[24], d[25], d[26], d[27]]))
    };
    let stamped = seconds(&a);
    assert!(
        stamped >= before && stamped <= before + 60,
        "{stamped} vs {before}"
    );
    assert_eq!(seconds(&b), 1000);
}
