//! Runs whole configurations for the tests of the scheduling elements:
//! checked with every built-in class, on one engine or on several workers.

use bricks_config::{Source, SourceMap};
use bricks_runtime::{build, Engine, Plan, RunSummary, WorkerOptions, Workers, WorkersSummary};
use std::sync::Arc;

/// Checks `config`; the rendered errors on failure.
pub fn plan(config: &str) -> Result<Plan, String> {
    let mut map = SourceMap::default();
    let render = |map: &SourceMap, d: Vec<bricks_config::Diagnostic>| {
        d.iter()
            .map(|d| map.render(d))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let router = bricks_config::parse(
        &mut map,
        Source {
            name: "<test>".into(),
            text: config.to_string(),
        },
    )
    .map_err(|d| render(&map, d))?;
    build(&router, &crate::registry()).map_err(|d| render(&map, d))
}

/// Runs `config` on one engine to the end, the clock following the
/// packets (`--clock trace`), so that the run is repeatable.
pub fn run(config: &str) -> RunSummary {
    let plan = plan(config).unwrap_or_else(|e| panic!("{e}"));
    let mut engine = Engine::new(&plan).unwrap();
    engine.idle_sleep = false;
    engine.set_trace_clock(true);
    let s = engine.run();
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    s
}

/// Runs `config` on `threads` unpinned workers to the end.
pub fn run_workers(config: &str, threads: usize) -> WorkersSummary {
    let plan = plan(config).unwrap_or_else(|e| panic!("{e}"));
    let opts = WorkerOptions {
        threads,
        pin: false,
        ..WorkerOptions::default()
    };
    let w = Workers::start(Arc::new(plan), &opts).unwrap();
    let s = w.join();
    assert!(s.total.errors.is_empty(), "{:?}", s.total.errors);
    s
}

/// Counter `counter` of element `element`, 0 when it reported none.
pub fn count(s: &RunSummary, element: &str, counter: &str) -> u64 {
    s.stats(element).and_then(|s| s.get(counter)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The manual examples of the scheduling and rate elements run to the
    /// end, on one worker and on two.
    #[test]
    fn manual_examples_run() {
        use super::super::*;
        for class in [
            &schedule_info::CLASS,
            &static_thread_sched::CLASS,
            &thread_safe_queue::CLASS,
            &stride_sched::CLASS,
            &drr_sched::CLASS,
            &rated_unqueue::CLASS,
            &bw_rated_unqueue::CLASS,
            &work_package::CLASS,
        ] {
            let example = class.manual.example;
            assert!(example.contains(class.name), "{}", class.name);
            let s = run(example);
            assert!(!s.elements.is_empty(), "{}", class.name);
            let s = run_workers(example, 2);
            use bricks_runtime::StopReason::{Requested, SourcesDone};
            assert!(
                matches!(s.total.reason, SourcesDone | Requested),
                "{}: {:?}",
                class.name,
                s.total.reason
            );
        }
    }
}
