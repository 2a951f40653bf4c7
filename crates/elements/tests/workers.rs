//! Several workers running one configuration.

use bricks_config::{parse, Source, SourceMap};
use bricks_runtime::{Plan, StopReason, WorkerOptions, Workers};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn plan(text: &str) -> Arc<Plan> {
    let mut map = SourceMap::default();
    let r = parse(
        &mut map,
        Source {
            name: "<t>".into(),
            text: text.into(),
        },
    )
    .unwrap();
    Arc::new(bricks_runtime::build(&r, &bricks_elements::registry()).unwrap())
}

#[test]
fn a_source_runs_on_worker_0_only_and_counters_sum() {
    let p = plan("InfiniteSource(LIMIT 1000) -> c :: Counter -> Discard;");
    let opts = WorkerOptions {
        threads: 3,
        pin: false,
        ..Default::default()
    };
    let s = Workers::start(p, &opts).unwrap().join();
    assert_eq!(s.per_worker.len(), 3);
    assert_eq!(s.total.stats("c").unwrap().get("count"), Some(1000));
    assert_eq!(s.per_worker[0].stats("c").unwrap().get("count"), Some(1000));
    assert_eq!(
        s.per_worker[1].stats("c").and_then(|c| c.get("count")),
        Some(0)
    );
    assert_eq!(s.total.reason, StopReason::SourcesDone);
}

#[test]
fn a_stop_reaches_every_worker_and_live_counters_are_published() {
    let p = plan("InfiniteSource -> c :: Counter -> Discard;");
    let opts = WorkerOptions {
        threads: 2,
        pin: true,
        publish_every: Some(Duration::from_millis(5)),
        ..Default::default()
    };
    let w = Workers::start(p, &opts).unwrap();
    let t0 = Instant::now();
    while w.live()[0].is_empty() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!w.live()[0].is_empty(), "worker 0 published nothing");
    w.stop_handle().stop();
    let s = w.join();
    assert_eq!(s.total.reason, StopReason::External);
    assert!(s.total.stats("c").unwrap().get("count").unwrap() > 0);
}

/// A reader that asks once per `publish_every` (as `bricks run
/// --stats-interval` does) gets fresh counters each time, though the last
/// copy is then a little younger than `publish_every`.
#[test]
fn a_reader_once_per_interval_gets_fresh_counters() {
    let p = plan("InfiniteSource -> c :: Counter -> Discard;");
    let every = Duration::from_millis(400);
    let opts = WorkerOptions {
        threads: 1,
        pin: false,
        publish_every: Some(every),
        ..Default::default()
    };
    let w = Workers::start(p, &opts).unwrap();
    let count = |w: &Workers| {
        w.live()[0]
            .iter()
            .find(|e| e.name == "c")
            .and_then(|e| e.stats.get("count"))
    };
    let t0 = Instant::now();
    while count(&w).is_none() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let first = count(&w).expect("worker 0 published nothing");
    std::thread::sleep(every - Duration::from_millis(20));
    let second = count(&w).unwrap();
    w.stop_handle().stop();
    w.join();
    assert!(second > first, "the same counters twice: {first}");
}

#[test]
fn a_generator_on_every_worker_splits_flows_limit_and_rate() {
    let p = plan(
        "WorkloadSource(FLOWS 8, LIMIT 1001, ALL_WORKERS true) -> GenStamp -> c :: Counter -> Discard;",
    );
    let opts = WorkerOptions {
        threads: 2,
        pin: false,
        ..Default::default()
    };
    let s = Workers::start(p, &opts).unwrap().join();
    assert_eq!(s.total.stats("c").unwrap().get("count"), Some(1001));
    assert_eq!(s.per_worker[0].stats("c").unwrap().get("count"), Some(501));
    assert_eq!(s.per_worker[1].stats("c").unwrap().get("count"), Some(500));
}
