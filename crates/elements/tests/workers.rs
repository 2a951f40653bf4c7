//! Several workers running one configuration.

use bricks_runtime::{Plan, StopReason, WorkerOptions, Workers};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn plan(text: &str) -> Arc<Plan> {
    Arc::new(bricks_runtime::testing::plan(text, &bricks_elements::registry()).unwrap())
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

/// Runs `text` on `threads` workers to its end.
fn run(text: &str, threads: usize) -> bricks_runtime::WorkersSummary {
    let opts = WorkerOptions {
        threads,
        pin: false,
        ..Default::default()
    };
    Workers::start(plan(text), &opts).unwrap().join()
}

/// A count of element `e`, worker `w` (`None`: the sum over workers).
fn count(s: &bricks_runtime::WorkersSummary, e: &str, c: &str, w: Option<usize>) -> u64 {
    let stats = match w {
        Some(w) => s.per_worker[w].stats(e),
        None => s.total.stats(e),
    };
    stats.and_then(|x| x.get(c)).unwrap_or(0)
}

#[test]
fn a_queue_pushed_on_one_worker_and_pulled_on_another_moves_its_packets() {
    // Click's threads share one graph: the Unqueue on thread 1 pulls what
    // the source on thread 0 pushed. Each kind of queue, and a pull path
    // through a scheduler.
    for q in ["Queue(50)", "SimpleQueue(50)", "NotifierQueue(50)"] {
        let s = run(
            &format!(
                "src :: InfiniteSource(LIMIT 1000, STOP true) -> q :: {q} -> u :: Unqueue \
                 -> c :: Counter -> Discard; StaticThreadSched(src 0, u 1);"
            ),
            2,
        );
        assert_eq!(
            count(&s, "c", "count", Some(1)),
            1000 - count(&s, "q", "drops", None),
            "{q}"
        );
        assert_eq!(count(&s, "c", "count", Some(0)), 0, "{q}");
        // The full notifier holds a Queue's source back: nothing lost.
        if q.starts_with("Queue") {
            assert_eq!(count(&s, "c", "count", None), 1000);
        }
    }
    let s = run(
        "src :: InfiniteSource(LIMIT 500, STOP true) -> q :: Queue(20) -> [0]rr :: RoundRobinSched \
         -> PullNull -> u :: Unqueue -> c :: Counter -> Discard; Idle -> Queue -> [1]rr; \
         StaticThreadSched(src 1, u 0);",
        2,
    );
    assert_eq!(count(&s, "c", "count", Some(0)), 500);
}

#[test]
fn queues_stay_per_worker_where_every_pushing_worker_pulls() {
    // Pushed and pulled on worker 1 only, or pushed on worker 0 and
    // pulled everywhere (the default): each worker's copy stays its own
    // (length and capacity per copy, the Queue's own handlers).
    let s = run(
        "src :: InfiniteSource(LIMIT 300, STOP true) -> q :: Queue(1000) -> u :: Unqueue \
         -> c :: Counter -> Discard; StaticThreadSched(src 1, u 1);",
        2,
    );
    assert_eq!(count(&s, "c", "count", Some(1)), 300);
    let s = run(
        "src :: InfiniteSource(LIMIT 300, STOP true) -> q :: Queue(1000) -> u :: Unqueue \
         -> c :: Counter -> Discard; StaticThreadSched(src 0);",
        2,
    );
    assert_eq!(count(&s, "c", "count", Some(0)), 300);
    assert_eq!(count(&s, "c", "count", Some(1)), 0);
}

#[test]
fn a_count_call_fires_once_when_every_worker_together_reaches_its_count() {
    // Click's one Counter counts what every thread pushes: 400 and 700
    // packets from two workers reach COUNT_CALL 1000 together, though
    // neither worker's copy does alone.
    let s = run(
        "a :: InfiniteSource(LIMIT 400) -> c :: Counter(COUNT_CALL 1000 stop) -> Discard; \
         b :: InfiniteSource(LIMIT 700) -> c; StaticThreadSched(a 0, b 1);",
        2,
    );
    assert_eq!(s.total.reason, StopReason::Requested);
    assert!(count(&s, "c", "count", None) >= 1000);
    // BYTE_COUNT_CALL the same way (60-byte packets: 60,000 bytes is the
    // 1000th packet).
    let s = run(
        "a :: InfiniteSource(LIMIT 400, LENGTH 60) -> c :: Counter(BYTE_COUNT_CALL 60000 stop) \
         -> Discard; b :: InfiniteSource(LIMIT 700, LENGTH 60) -> c; StaticThreadSched(a 0, b 1);",
        2,
    );
    assert_eq!(s.total.reason, StopReason::Requested);
    // Below the count together, no call.
    let s = run(
        "a :: InfiniteSource(LIMIT 400) -> c :: Counter(COUNT_CALL 1200 stop) -> Discard; \
         b :: InfiniteSource(LIMIT 700) -> c; StaticThreadSched(a 0, b 1);",
        2,
    );
    assert_eq!(s.total.reason, StopReason::SourcesDone);
    assert_eq!(count(&s, "c", "count", None), 1100);
}

#[test]
fn a_count_call_writes_every_workers_copy() {
    // The call is made on worker 0 at once; the Switch it writes moves
    // worker 1's packets too, as Click's one Switch would (before, worker
    // 1's copy never switched and took all 500 to output 0).
    let s = run(
        "a :: InfiniteSource(LIMIT 10) -> Counter(COUNT_CALL 10 sw.switch 1) -> Discard; \
         b :: RatedSource(RATE 1000, LIMIT 500, STOP false) -> sw :: Switch \
         -> c0 :: Counter -> Discard; sw[1] -> c1 :: Counter -> Discard; \
         StaticThreadSched(a 0, b 1);",
        2,
    );
    let (c0, c1) = (
        count(&s, "c0", "count", None),
        count(&s, "c1", "count", None),
    );
    assert_eq!(c0 + c1, 500);
    assert!(c1 >= 400, "{c0} to output 0, {c1} to output 1");
}
