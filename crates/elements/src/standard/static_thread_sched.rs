//! `StaticThreadSched`: which worker runs a task (Click's static thread
//! binding, read when the configuration is checked).
//!
//! Every worker has its own instance of the whole graph; a task placed on
//! worker T runs only in worker T's instance. The runtime reads the
//! arguments once (`Element::task_directives`) before any worker starts.

use bricks_element::{
    ArgError, Args, Element, ElementClass, FromArg, Manual, PortInfo, TaskDirective, TaskSetting,
};

/// The `StaticThreadSched` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StaticThreadSched",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "binds tasks to workers",
    synopsis: "StaticThreadSched(ELEMENT THREAD, ...)",
    description: "Each argument `ELEMENT THREAD` makes the task of ELEMENT run on worker \
        THREAD only (workers count from 0; see `bricks run --threads`). THREAD is taken \
        modulo the number of workers, so a configuration written for four workers still \
        runs on two (Click instead warns and uses thread 0). THREAD -1 means no worker: the \
        task never runs (Click's quiescent thread). A name is looked up from the compound \
        the StaticThreadSched sits in outwards; a compound's name places every task inside \
        it. Later arguments and later StaticThreadSched elements override earlier ones. \
        \n\nBy default a source (InfiniteSource, FromDump, a capture FromDevice) runs on \
        worker 0 and every other task (Unqueue, ToDevice, a pulling Discard) on every \
        worker, each worker with its own copy of every element. A placed source therefore \
        produces its packets on that worker only. A Queue pushed on a worker where none \
        of its pullers runs (a source on worker 0, its Unqueue on worker 1) keeps one \
        queue for all workers, as a ThreadSafeQueue does, so packets move from the \
        pushing worker to the pulling one as in Click. A live FromDevice reads \
        the device queues each worker owns and stays on every worker: its placement is \
        ignored with a warning. The run \
        ends when every worker's sources are done and no packet moves anywhere.",
    ports: "none",
    keywords: &[],
    counters: &[],
    example:
        "src :: InfiniteSource(LIMIT 100) -> q :: ThreadSafeQueue -> u :: Unqueue -> Discard; \
        StaticThreadSched(src 0, u 1);",
    see_also: &["ScheduleInfo", "ThreadSafeQueue"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mut directives = Vec::new();
    for (text, span) in args.rest() {
        let words: Vec<&str> = text.split_whitespace().collect();
        match words[..] {
            [] => {}
            [element, thread] => {
                let t = i64::from_arg(thread)
                    .ok()
                    .filter(|t| *t >= -1)
                    .ok_or_else(|| {
                        ArgError::at(
                            span,
                            format!(
                                "bad thread `{thread}` for `{element}`: expected a worker \
                                 number from 0, or -1 for none"
                            ),
                        )
                    })?;
                directives.push(TaskDirective {
                    element: element.to_string(),
                    span,
                    setting: TaskSetting::Thread(t),
                });
            }
            _ => {
                return Err(ArgError::at(
                    span,
                    format!("expected `ELEMENT THREAD`, found `{text}`"),
                ))
            }
        }
    }
    Ok(Box::new(StaticThreadSched { directives }))
}

/// Holds the bindings for the runtime; nothing at run time.
#[derive(Debug)]
pub struct StaticThreadSched {
    directives: Vec<TaskDirective>,
}

impl Element for StaticThreadSched {
    fn task_directives(&self) -> Vec<TaskDirective> {
        self.directives.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testrun::{plan, run_workers};
    use bricks_runtime::{Placement, StopReason};

    fn per_worker(s: &bricks_runtime::WorkersSummary, element: &str) -> Vec<u64> {
        s.per_worker
            .iter()
            .map(|w| w.stats(element).and_then(|s| s.get("count")).unwrap_or(0))
            .collect()
    }

    #[test]
    fn a_placed_source_runs_on_its_worker_only() {
        let s = run_workers(
            "src :: InfiniteSource(LIMIT 1000) -> c :: Counter -> Discard; \
             StaticThreadSched(src 1);",
            2,
        );
        assert_eq!(per_worker(&s, "c"), vec![0, 1000]);
        assert_eq!(s.total.reason, StopReason::SourcesDone);
        // Modulo the workers: 3 on two workers is worker 1.
        let s = run_workers(
            "src :: InfiniteSource(LIMIT 1000) -> c :: Counter -> Discard; \
             StaticThreadSched(src 3);",
            2,
        );
        assert_eq!(per_worker(&s, "c"), vec![0, 1000]);
        // -1: never.
        let s = run_workers(
            "src :: InfiniteSource(LIMIT 1000) -> c :: Counter -> Discard; \
             StaticThreadSched(src -1);",
            2,
        );
        assert_eq!(per_worker(&s, "c"), vec![0, 0]);
    }

    #[test]
    fn sources_on_both_workers_meet_in_a_shared_queue() {
        // Worker 1 has no source of its own: it pulls what worker 0's and
        // its own placed source put in the shared queue, and stays until
        // every packet is through.
        let s = run_workers(
            "a :: InfiniteSource(LIMIT 30000) -> q :: ThreadSafeQueue(100000); \
             b :: InfiniteSource(LIMIT 20000) -> q; \
             q -> u :: Unqueue -> c :: Counter -> Discard; \
             StaticThreadSched(a 0, b 1, u 1);",
            2,
        );
        assert_eq!(per_worker(&s, "c"), vec![0, 50_000]);
        assert_eq!(s.total.stats("q").and_then(|s| s.get("drops")), Some(0));
    }

    #[test]
    fn packets_crossing_back_and_forth_all_arrive() {
        // Worker 0's packets go to worker 1 and come back to worker 0:
        // neither may leave while the other still holds some.
        for _ in 0..5 {
            let s = run_workers(
                "a :: InfiniteSource(LIMIT 20000) -> q1 :: ThreadSafeQueue(100000); \
                 q1 -> u1 :: Unqueue -> q2 :: ThreadSafeQueue(100000); \
                 q2 -> u2 :: Unqueue -> c :: Counter -> Discard; \
                 StaticThreadSched(a 0, u1 1, u2 0);",
                2,
            );
            assert_eq!(per_worker(&s, "c"), vec![20_000, 0]);
            assert_eq!(per_worker(&s, "u1"), vec![0, 20_000]);
        }
    }

    #[test]
    fn a_worker_without_sources_waits_for_the_others() {
        // The consumer is alone on worker 1 and the source is slow (a rate
        // limiter): worker 1 must not leave while worker 0 still sends.
        let s = run_workers(
            "src :: InfiniteSource(LIMIT 200) -> Queue(1000) -> RatedUnqueue(4000) \
             -> q :: ThreadSafeQueue; q -> u :: Unqueue -> c :: Counter -> Discard; \
             StaticThreadSched(u 1);",
            2,
        );
        assert_eq!(per_worker(&s, "c"), vec![0, 200]);
    }

    #[test]
    fn placements_are_checked() {
        let p = plan(
            "elementclass Pair { a :: InfiniteSource -> output; } \
             p :: Pair -> q :: Queue -> u :: Unqueue -> Discard; StaticThreadSched(p 2, u -1);",
        )
        .unwrap();
        let find = |n: &str| p.elements.iter().find(|e| e.name == n).unwrap().placement;
        assert_eq!(find("p/a"), Placement::Worker(2));
        assert_eq!(find("u"), Placement::Nowhere);
        let e = plan("a :: InfiniteSource -> Discard; StaticThreadSched(b 1);").unwrap_err();
        assert!(e.contains("`b` does not name an element"), "{e}");
        let e = plan("a :: InfiniteSource -> Discard; StaticThreadSched(a -2);").unwrap_err();
        assert!(e.contains("bad thread `-2`"), "{e}");
        let e = plan("a :: InfiniteSource -> Discard; StaticThreadSched(a);").unwrap_err();
        assert!(e.contains("expected `ELEMENT THREAD`"), "{e}");
    }
}
