//! SimplePrioSched, SimpleRoundRobinSched, RoundRobinUnqueue, SetAnnoByte
//! and CheckPacket in whole configurations run by the `bricks` binary:
//! the order packets come out in (Print lines), what the elements print,
//! and their handlers read at exit. Every source has a LIMIT, so every
//! run ends on its own.

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

/// Three queues filled in the first round (3, 1 and 2 one-byte packets
/// 0a, 0b, 0c), scheduled by `sched`, unqueued and printed as `p`.
fn three_queues(sched: &str) -> String {
    format!(
        "qa :: Queue; qb :: Queue; qc :: Queue; s :: {sched}; \
         InfiniteSource(DATA \\<0a>, LIMIT 3, BURST 3) -> qa -> [0]s; \
         InfiniteSource(DATA \\<0b>, LIMIT 1, BURST 3) -> qb -> [1]s; \
         InfiniteSource(DATA \\<0c>, LIMIT 2, BURST 3) -> qc -> [2]s; \
         s -> u :: Unqueue -> Print(p) -> Discard;"
    )
}

/// The payload bytes of the `p:` lines, in order.
fn printed(err: &str) -> Vec<&str> {
    lines_with(err, "p: ")
        .iter()
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect()
}

#[test]
fn simple_prio_sched_drains_inputs_in_priority_order() {
    let (out, err) = run(&three_queues("SimplePrioSched"), &["-h", "u.count"]);
    assert_eq!(
        printed(&err),
        vec!["0a", "0a", "0a", "0b", "0c", "0c"],
        "{err}"
    );
    assert_eq!(out, "6\n");
}

#[test]
fn simple_round_robin_sched_takes_turns_and_skips_empty_inputs() {
    let (out, err) = run(&three_queues("SimpleRoundRobinSched"), &["-h", "u.count"]);
    assert_eq!(
        printed(&err),
        vec!["0a", "0b", "0c", "0a", "0c", "0a"],
        "{err}"
    );
    assert_eq!(out, "6\n");
}

#[test]
fn simple_schedulers_match_their_notifier_variants() {
    for (simple, full) in [
        ("SimplePrioSched", "PrioSched"),
        ("SimpleRoundRobinSched", "RoundRobinSched"),
    ] {
        let (_, a) = run(&three_queues(simple), &[]);
        let (_, b) = run(&three_queues(full), &[]);
        assert_eq!(printed(&a), printed(&b), "{simple}");
    }
}

#[test]
fn simple_schedulers_without_inputs_are_empty() {
    for class in ["SimplePrioSched", "SimpleRoundRobinSched"] {
        let (out, _) = run(
            &format!(
                "s :: {class}; s -> u :: Unqueue -> Discard; \
                 InfiniteSource(LIMIT 1) -> Discard;"
            ),
            &["-h", "u.count", "-h", "u.scheduled"],
        );
        assert_eq!(out, "u.count:\n0\n\nu.scheduled:\nfalse\n\n", "{class}");
    }
}

#[test]
fn round_robin_unqueue_serves_inputs_in_turn_to_matching_outputs() {
    let (out, err) = run(
        "qa :: Queue; qb :: Queue; rr :: RoundRobinUnqueue(2); \
         InfiniteSource(DATA \\<0a>, LIMIT 3, BURST 3) -> qa -> [0]rr[0] -> Print(o0) -> Discard; \
         InfiniteSource(DATA \\<0b>, LIMIT 3, BURST 3) -> qb -> [1]rr[1] -> Print(o1) -> Discard;",
        &["-h", "rr.packets"],
    );
    assert_eq!(
        lines_with(&err, "o"),
        vec![
            "o0:    1 | 0a",
            "o0:    1 | 0a",
            "o1:    1 | 0b",
            "o1:    1 | 0b",
            "o0:    1 | 0a",
            "o1:    1 | 0b",
        ],
        "{err}"
    );
    assert_eq!(out, "6 packets\n");
}

#[test]
fn round_robin_unqueue_default_burst_is_one_and_0_empties() {
    let config = |burst: &str| {
        format!(
            "qa :: Queue; qb :: Queue; rr :: RoundRobinUnqueue({burst}); \
             InfiniteSource(DATA \\<0a>, LIMIT 3, BURST 3) -> qa -> [0]rr[0] -> p :: Print(o); \
             InfiniteSource(DATA \\<0b>, LIMIT 2, BURST 3) -> qb -> [1]rr[1] -> p; \
             p -> Discard;"
        )
    };
    let order = |err: &str| -> Vec<String> {
        lines_with(err, "o:")
            .iter()
            .map(|l| l.rsplit(' ').next().unwrap().to_string())
            .collect()
    };
    let (_, err) = run(&config(""), &[]);
    assert_eq!(order(&err), ["0a", "0b", "0a", "0b", "0a"], "{err}");
    let (_, err) = run(&config("BURST 0"), &[]);
    assert_eq!(order(&err), ["0a", "0a", "0a", "0b", "0b"], "{err}");
}

#[test]
fn round_robin_unqueue_needs_as_many_outputs_as_inputs() {
    let o = bricks(&[
        "run",
        "--quiet",
        "-e",
        "rr :: RoundRobinUnqueue; Idle -> Queue -> [0]rr; Idle -> Queue -> [1]rr; rr -> Discard;",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("number of outputs must equal to number of inputs"),
        "{err}"
    );
}

#[test]
fn set_anno_byte_sets_the_bytes_print_shows() {
    // PRINTANNO shows Click's 48-byte area: paint at 16, VLAN TCI at 20-21.
    let (out, err) = run(
        "InfiniteSource(DATA \\<00>, LIMIT 1) -> s :: SetAnnoByte(PAINT, 7) \
         -> SetAnnoByte(20, 0x34) -> SetAnnoByte(ANNO 21, VALUE 0x12) \
         -> Print(a, PRINTANNO true, CONTENTS false) -> Discard;",
        &["-h", "s.anno", "-h", "s.value"],
    );
    let want = format!(
        "a:    1 | {}07{}3412{}",
        "00".repeat(16),
        "00".repeat(3),
        "00".repeat(26)
    );
    assert_eq!(lines_with(&err, "a:"), vec![want.as_str()], "{err}");
    assert!(
        err.contains("SetAnnoByte(ANNO, VALUE) is obsolete, use Paint(VALUE, ANNO) instead"),
        "{err}"
    );
    assert_eq!(out, "s.anno:\n16\n\ns.value:\n7\n\n");
}

#[test]
fn set_anno_byte_paint_steers_paint_switch() {
    let (_, err) = run(
        "InfiniteSource(DATA \\<01>, LIMIT 2) -> SetAnnoByte(16, 1) -> ps :: PaintSwitch; \
         ps[0] -> Print(zero) -> Discard; ps[1] -> Print(one) -> Discard;",
        &[],
    );
    assert_eq!(lines_with(&err, "one:").len(), 2, "{err}");
    assert!(lines_with(&err, "zero:").is_empty(), "{err}");
}

#[test]
fn set_anno_byte_refuses_bytes_bricks_has_not() {
    for (anno, why) in [
        ("24", "bricks has no annotation at byte 24"),
        ("GRID_ROUTE_CB", "bricks has no annotation at byte 27"),
        ("VLAN_TCI", "2-byte annotation"),
        ("48", "past the 48-byte annotation area"),
    ] {
        let o = bricks(&[
            "run",
            "--quiet",
            "-e",
            &format!("InfiniteSource(LIMIT 1) -> SetAnnoByte({anno}, 1) -> Discard;"),
        ]);
        assert!(!o.status.success(), "{anno}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(why), "{anno}: {err}");
    }
}

#[test]
fn check_packet_reports_failures_as_click_and_passes_packets_on() {
    // Two 4-byte packets pass; two 3-byte ones fail the length and data
    // tests.
    let (out, err) = run(
        "InfiniteSource(DATA \\<00 01 02 03>, LIMIT 2) -> c :: CheckPacket(DATA \\<02 03>, \
         DATA_OFFSET 2, LENGTH 4) -> n :: Counter -> Discard; \
         InfiniteSource(DATA \\<00 01 02>, LIMIT 2) -> c;",
        &["-h", "c.failures", "-h", "n.count"],
    );
    let lines = lines_with(&err, "c :: CheckPacket: ");
    assert_eq!(
        lines,
        vec![
            "c :: CheckPacket: bad length 3 (wanted 4)",
            "c :: CheckPacket: data too short (3 bytes, wanted 4)",
            "c :: CheckPacket: bad length 3 (wanted 4)",
            "c :: CheckPacket: data too short (3 bytes, wanted 4)",
        ],
        "{err}"
    );
    assert_eq!(out, "c.failures:\n2\n\nn.count:\n4\n\n");
}

#[test]
fn check_packet_length_bounds_and_data_mismatch() {
    let (out, err) = run(
        "InfiniteSource(DATA \"Hello\", LIMIT 1) -> CheckPacket(LENGTH_GE 6) \
         -> CheckPacket(LENGTH_LE 4) -> CheckPacket(DATA \"Hellp\") \
         -> CheckPacket(LENGTH_GE 5, DATA \"Hello\") -> Discard;",
        &[],
    );
    assert_eq!(out, "");
    assert_eq!(
        lines_with(&err, "CheckPacket@"),
        vec![
            "CheckPacket@2 :: CheckPacket: bad length 5 (wanted > 5)",
            "CheckPacket@3 :: CheckPacket: bad length 5 (wanted < 5)",
            "CheckPacket@4 :: CheckPacket: bad data (does not match)",
        ],
        "{err}"
    );
}

#[test]
fn check_packet_refuses_conflicting_lengths() {
    let o = bricks(&[
        "run",
        "--quiet",
        "-e",
        "InfiniteSource(LIMIT 1) -> CheckPacket(LENGTH 4, LENGTH_LE 8) -> Discard;",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("specify at most one of LENGTH_EQ, LENGTH_GE, and LENGTH_LE"),
        "{err}"
    );
}
