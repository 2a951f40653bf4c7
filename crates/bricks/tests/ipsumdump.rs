//! Click's IP summary dumps and IPPrint in whole configurations run by the
//! `bricks` binary: a dump read, rebuilt into packets and written back.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bricks(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .output()
        .expect("bricks runs")
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bricks-ipsum-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Counter `name` of element `elem` in the final report (0 if absent).
fn counter(report: &str, elem: &str, name: &str) -> u64 {
    let Some(line) = report.lines().find(|l| l.starts_with(&format!("{elem} ("))) else {
        return 0;
    };
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .map_or(0, |v| v.parse().unwrap())
}

const FIELDS: &str = "timestamp ip_src sport ip_dst dport ip_proto ip_len ip_id ip_ttl \
    ip_fragoff tcp_flags tcp_seq tcp_ack payload_len";

const RECORDS: &[&str] = &[
    "1.000000 10.0.0.1 1234 10.0.0.2 80 T 40 1 64 0 S 1000 0 0",
    "1.000100 10.0.0.2 80 10.0.0.1 1234 T 40 2 64 0 SA 5000 1001 0",
    "1.500000 10.0.0.1 1234 10.0.0.2 80 T 140 3 64 0 PA 1001 5001 100",
    "2.000000 192.168.1.1 53 192.168.1.2 3333 U 60 4 1 0 - - - 32",
    "2.000001 192.168.1.1 - 192.168.1.2 - U 60 5 1 8 - - - 40",
];

fn input(dir: &std::path::Path) -> PathBuf {
    let mut text = format!("!IPSummaryDump 1.3\n!creator \"test\"\n!data {FIELDS}\n");
    for (i, r) in RECORDS.iter().enumerate() {
        text.push_str(r);
        text.push('\n');
        if i == 1 {
            // Line 6: malformed (bad address), skipped and reported.
            text.push_str("1.2 10.0.0.999 1 10.0.0.2 80 T 40 1 64 0 S 1 0 0\n");
        }
    }
    let p = dir.join("in.ipsum");
    std::fs::write(&p, text).unwrap();
    p
}

fn round_trip(clock: &str) {
    let dir = scratch(clock);
    let inp = input(&dir);
    let out = dir.join("out.ipsum");
    let config = format!(
        "FromIPSummaryDump({}, STOP true, CHECKSUM true) -> c :: CheckIPHeader \
         -> ToIPSummaryDump({}, CONTENTS {FIELDS}, BANNER \"round trip\");",
        inp.display(),
        out.display()
    );
    let o = bricks(&["run", "--clock", clock, "-e", &config]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(err.contains("in.ipsum:6:"), "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut want = format!("!IPSummaryDump 1.3\n!creator \"round trip\"\n!data {FIELDS}\n");
    for r in RECORDS {
        want.push_str(r);
        want.push('\n');
    }
    assert_eq!(text, want);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dump_read_and_written_back_gives_the_same_lines() {
    round_trip("wall");
}

#[test]
fn trace_clock_follows_the_dump_timestamps() {
    round_trip("trace");
}

#[test]
fn built_packets_pass_click_header_checks_and_bad_lines_are_counted() {
    let dir = scratch("checks");
    let inp = input(&dir);
    let config = format!(
        "f :: FromIPSummaryDump({}, STOP true, CHECKSUM true) -> CheckIPHeader \
         -> cl :: IPClassifier(tcp, udp and not ip frag, -); \
         cl[0] -> CheckTCPHeader -> t :: Counter -> Discard; \
         cl[1] -> CheckUDPHeader -> u :: Counter -> Discard; cl[2] -> Discard;",
        inp.display()
    );
    let o = bricks(&["run", "-e", &config]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert_eq!(counter(&err, "f", "count"), 5, "{err}");
    assert_eq!(counter(&err, "f", "bad_lines"), 1, "{err}");
    assert_eq!(counter(&err, "t", "count"), 3, "{err}");
    assert_eq!(counter(&err, "u", "count"), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stdout_dump_and_ipprint_outfile() {
    let dir = scratch("print");
    let inp = input(&dir);
    let printed = dir.join("print.txt");
    let config = format!(
        "FromIPSummaryDump({}, STOP true) -> IPPrint(x, OUTFILE {}, TTL true) \
         -> ToIPSummaryDump(-, CONTENTS ip src ip dst ip proto);",
        inp.display(),
        printed.display()
    );
    let o = bricks(&["run", "--quiet", "-e", &config]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.starts_with("!IPSummaryDump 1.3\n!data ip_src ip_dst ip_proto\n10.0.0.1 10.0.0.2 T\n"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 7, "{out}");
    let p = std::fs::read_to_string(&printed).unwrap();
    let lines: Vec<&str> = p.lines().collect();
    assert_eq!(lines.len(), 5, "{p}");
    assert_eq!(
        lines[0],
        "x: 1.000000: ttl 64 10.0.0.1.1234 > 10.0.0.2.80: S 1000:1001(1,40,40) win 0"
    );
    assert_eq!(
        lines[4],
        "x: 2.000001: ttl 1 192.168.1.1 > 192.168.1.2: udp (frag 5:40@8)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_file_and_bad_contents_are_refused() {
    let o = bricks(&[
        "check",
        "-e",
        "FromIPSummaryDump(/nonexistent/x.ipsum) -> Discard;",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/x.ipsum"));
    let o = bricks(&[
        "check",
        "-e",
        "InfiniteSource -> ToIPSummaryDump(/tmp/x, CONTENTS ip bogus);",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("bogus"));
}
