//! Click's standard plumbing elements in whole configurations run by the
//! `bricks` binary: RED watching a real Queue, Switch, Suppressor,
//! PullTee, AverageCounter, Meter.

use std::process::{Command, Output};

fn bricks(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .output()
        .expect("bricks runs")
}

/// Runs `config` to its end and returns the final counters (stderr).
fn run(config: &str) -> String {
    let o = bricks(&["run", "-e", config]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{config}:\n{err}");
    err
}

/// Counter `name` of element `elem` in the final report (0 if absent:
/// zero counters, and elements whose counters are all zero, are not
/// printed).
fn counter(report: &str, elem: &str, name: &str) -> u64 {
    let Some(line) = report.lines().find(|l| l.starts_with(&format!("{elem} ("))) else {
        return 0;
    };
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .map_or(0, |v| v.parse().unwrap())
}

#[test]
fn red_drops_early_from_the_queue_it_names() {
    // The source outruns the unqueue: the Queue fills, RED's average
    // passes twice MAX_THRESH and it marks; every packet is accounted for.
    let r = run(
        "InfiniteSource(LIMIT 5000) -> r :: RED(5, 50, 0.02, QUEUES q) \
         -> q :: Queue(200) -> RatedUnqueue(1000) -> d :: Discard;",
    );
    let drops = counter(&r, "r", "drops");
    let enqueued = counter(&r, "q", "enqueued");
    let tail = counter(&r, "q", "drops");
    assert!(drops > 0, "{r}");
    assert_eq!(drops + enqueued + tail, 5000, "{r}");
    assert_eq!(counter(&r, "d", "count"), enqueued, "{r}");
    // RED keeps the queue short of full: no tail drops at 200.
    assert_eq!(tail, 0, "{r}");
    assert!(counter(&r, "q", "highwater_length") < 200, "{r}");
}

#[test]
fn red_marks_to_output_1_when_connected() {
    let r = run("InfiniteSource(LIMIT 3000) -> r :: RED(5, 50, 0.02, q) \
         -> q :: Queue(500) -> RatedUnqueue(1000) -> Discard; r[1] -> m :: Counter -> Discard;");
    assert!(counter(&r, "m", "count") > 0, "{r}");
    assert_eq!(counter(&r, "m", "count"), counter(&r, "r", "drops"), "{r}");
}

#[test]
fn red_without_queues_finds_its_queue_by_flow() {
    // Downstream of output 0, through other elements, as Click's RED.
    let r = run(
        "InfiniteSource(LIMIT 5000) -> r :: RED(5, 50, 0.02) -> Counter \
         -> q :: Queue(200) -> RatedUnqueue(1000) -> d :: Discard;",
    );
    let drops = counter(&r, "r", "drops");
    assert!(drops > 0, "{r}");
    assert_eq!(drops + counter(&r, "q", "enqueued"), 5000, "{r}");
    assert_eq!(counter(&r, "q", "drops"), 0, "{r}");
    // Pulling from its queue: found upstream of input 0.
    let r = run("InfiniteSource(LIMIT 3000) -> q :: Queue(3000) \
         -> r :: RED(5, 50, 0.02) -> RatedUnqueue(100000) -> Discard;");
    assert!(counter(&r, "r", "drops") > 0, "{r}");
}

#[test]
fn red_without_a_queue_to_find_is_told_to_name_one() {
    let check = |config: &str| {
        let o = bricks(&["check", "-e", config]);
        assert!(!o.status.success(), "{config}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = check("InfiniteSource -> RED(5, 50, 0.02) -> Discard;");
    assert!(err.contains("no Queue") && err.contains("QUEUES"), "{err}");
    let err = check(
        "InfiniteSource -> RED(5, 50, 0.02) -> t :: Tee; \
         t[0] -> Queue -> Unqueue -> Discard; t[1] -> Queue -> Unqueue -> Discard;",
    );
    assert!(err.contains("2 Queues") && err.contains("QUEUES"), "{err}");
    let err = check(
        "InfiniteSource -> RED(5, 50, 0.02, c) -> c :: Counter -> Queue -> Unqueue -> Discard;",
    );
    assert!(err.contains("is a Counter, not a Queue"), "{err}");
}

#[test]
fn switch_static_switch_and_suppressor_route() {
    let r = run(
        "InfiniteSource(LIMIT 4) -> s :: Switch(1); s[0] -> a :: Counter -> Discard; \
         s[1] -> b :: Counter -> Discard; \
         InfiniteSource(LIMIT 3) -> t :: StaticSwitch(-1); t[0] -> Discard; \
         p :: Suppressor; InfiniteSource(LIMIT 2) -> [0]p[0] -> c :: Counter -> Discard;",
    );
    assert_eq!(counter(&r, "a", "count"), 0, "{r}");
    assert_eq!(counter(&r, "b", "count"), 4, "{r}");
    assert_eq!(counter(&r, "s", "switch"), 1, "{r}");
    assert_eq!(counter(&r, "t", "drops"), 3, "{r}");
    assert_eq!(counter(&r, "c", "count"), 2, "{r}");
}

#[test]
fn pull_tee_and_average_counter_on_a_pull_path() {
    let r = run(
        "InfiniteSource(LIMIT 5, LENGTH 100) -> Queue -> t :: PullTee -> \
         a :: AverageCounter -> Unqueue -> Discard; t[1] -> c :: Counter -> Discard;",
    );
    assert_eq!(counter(&r, "c", "count"), 5, "{r}");
    assert_eq!(counter(&r, "a", "count"), 5, "{r}");
    assert_eq!(counter(&r, "a", "byte_count"), 500, "{r}");
}

#[test]
fn meter_sends_a_slow_stream_to_output_0() {
    let r = run(
        "InfiniteSource(LIMIT 50) -> Queue -> RatedUnqueue(100) -> m :: Meter(100000); \
         m[0] -> lo :: Counter -> Discard; m[1] -> hi :: Counter -> Discard;",
    );
    assert_eq!(counter(&r, "lo", "count"), 50, "{r}");
    assert_eq!(counter(&r, "hi", "count"), 0, "{r}");
}
