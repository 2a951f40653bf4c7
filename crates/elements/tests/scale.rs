//! Big configurations run: many elements, deep push chains, counters of
//! all of them summed in time linear in their number.

use bricks_element::{Stats, MAX_PULL_DEPTH, MAX_PUSH_DEPTH};
use bricks_runtime::{sum_stats, ElementStats, Engine, Plan, StopReason, WorkerOptions, Workers};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Far above what the linear code needs in a debug build, far below what
/// a quadratic one does.
const GENEROUS: Duration = Duration::from_secs(20);

fn plan(text: &str) -> Arc<Plan> {
    try_plan(text).unwrap()
}

fn try_plan(text: &str) -> Result<Arc<Plan>, String> {
    bricks_runtime::testing::plan(text, &bricks_elements::registry()).map(Arc::new)
}

#[test]
fn twenty_thousand_source_discard_pairs_run_and_every_counter_is_summed() {
    let n = 20_000;
    let text = "InfiniteSource(LIMIT 1, STOP true) -> Discard;\n".repeat(n);
    let p = plan(&text);
    let opts = WorkerOptions {
        threads: 2,
        pin: false,
        publish_every: Some(Duration::from_millis(1)),
        ..Default::default()
    };
    let t0 = Instant::now();
    let w = Workers::start(p, &opts).unwrap();
    let live = w.control();
    // Live counters while it runs (or the final ones once it is done).
    let _ = live.live();
    let s = w.join();
    let took = t0.elapsed();
    assert_eq!(s.total.reason, StopReason::Requested);
    let discards: Vec<&ElementStats> = s
        .total
        .elements
        .iter()
        .filter(|e| e.class == "Discard")
        .collect();
    assert_eq!(discards.len(), n, "every Discard reports");
    assert!(discards.iter().all(|e| e.stats.get("count") == Some(1)));
    // Sources run on worker 0 only; worker 1's Discards count 0.
    let total: u64 = discards.iter().filter_map(|e| e.stats.get("count")).sum();
    assert_eq!(total, n as u64);
    // Once finished, the live counters are the final ones.
    let after: u64 = sum_stats(live.live().iter().map(Vec::as_slice))
        .iter()
        .filter(|e| e.class == "Discard")
        .filter_map(|e| e.stats.get("count"))
        .sum();
    assert_eq!(after, n as u64);
    assert!(took < GENEROUS, "{n} pairs took {took:?}");
}

#[test]
fn summing_the_counters_of_many_elements_of_several_workers_is_linear() {
    // A search per element would compare names 2e10 times.
    let n = 200_000;
    let worker: Vec<ElementStats> = (0..n)
        .map(|i| {
            let mut stats = Stats::default();
            stats.counter("count", i as u64);
            ElementStats {
                name: format!("e{i}"),
                class: "Counter",
                stats,
            }
        })
        .collect();
    // A third worker reports its elements in the other order.
    let mut reversed = worker.clone();
    reversed.reverse();
    let t0 = Instant::now();
    let total = sum_stats([&worker[..], &worker[..], &reversed[..]]);
    let took = t0.elapsed();
    assert_eq!(total.len(), n);
    assert_eq!(total[0].name, "e0", "the first worker's order");
    for i in [0, 1, n / 2, n - 1] {
        assert_eq!(total[i].stats.get("count"), Some(3 * i as u64));
    }
    assert!(took < GENEROUS, "summing took {took:?}");
}

#[test]
fn a_ten_thousand_deep_push_chain_runs_and_delivers_its_packet() {
    let depth = 10_000;
    assert!(depth > 100 * MAX_PUSH_DEPTH as usize);
    let mut text = String::from("InfiniteSource(LIMIT 3, BURST 1, STOP true)");
    for _ in 0..depth {
        text.push_str(" -> Paint(7)");
    }
    text.push_str(" -> c :: Counter -> ck :: CheckPaint(7) -> Discard;");
    let p = plan(&text);
    // On a thread with a small stack: the chain must not need one
    // proportional to its depth.
    let summary = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || Engine::new(&p).unwrap().run())
        .unwrap()
        .join()
        .expect("the engine ran out of stack");
    let c = summary.stats("c").unwrap();
    assert_eq!(c.get("count"), Some(3), "{}", summary.render());
    assert_eq!(summary.stats("ck").and_then(|s| s.get("drops")), Some(0));
}

/// A Queue, then `paints` Paints and a Counter pulled by a Discard: a pull
/// chain of `paints + 2` elements.
fn pull_chain(paints: usize) -> String {
    let mut text = String::from("InfiniteSource(LIMIT 3, STOP true) -> Queue");
    for _ in 0..paints {
        text.push_str(" -> Paint(7)");
    }
    text.push_str(" -> c :: Counter -> Discard;");
    text
}

#[test]
fn a_pull_chain_as_deep_as_the_limit_runs_and_a_deeper_one_is_refused() {
    let p = plan(&pull_chain(MAX_PULL_DEPTH - 2));
    let w = Workers::start(
        p,
        &WorkerOptions {
            pin: false,
            ..Default::default()
        },
    )
    .unwrap();
    let s = w.join();
    assert_eq!(s.total.stats("c").and_then(|c| c.get("count")), Some(3));

    let e = try_plan(&pull_chain(MAX_PULL_DEPTH - 1)).unwrap_err();
    let want = format!(
        "`Discard@{}` pulls through a chain of {} elements starting at `Queue@2`; \
         a worker runs pull chains of at most {MAX_PULL_DEPTH}",
        MAX_PULL_DEPTH + 3,
        MAX_PULL_DEPTH + 1
    );
    assert!(e.starts_with(&want), "{e}");
    assert!(e.contains("Unqueue"), "{e}");
}
