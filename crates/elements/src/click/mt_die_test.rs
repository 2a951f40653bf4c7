//! `MTDieTest`: Click's `elements/test/mtdietest.cc`, a regression test
//! for stopping a multithreaded router: one task on each of NTHREADS
//! threads asks the driver to stop, once, all at about the same time.
//!
//! A `DriverManager` (or a `Script`) that waits for as many stop requests
//! as there are threads must see every one of them and then stop the
//! router, however the requests from different workers interleave.

use bricks_element::{
    ArgError, Args, Context, Element, ElementClass, Keyword, Manual, PortInfo, TaskKind, TaskResult,
};

/// The `MTDieTest` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MTDieTest",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "runs regression tests for router stopping in multithreaded Click",
    synopsis: "MTDieTest([NTHREADS])",
    description: "Runs NTHREADS tasks, spread over the router's workers as Click spreads \
        them over its threads (task i on worker i modulo the workers), each of which asks \
        the driver to stop once, as soon as the router runs. A DriverManager or Script \
        that waits for that many stop requests then goes on to its next instruction: \
        with `-j N` and N `wait`s, every worker's request must be counted, none lost to \
        another's at the same instant.",
    ports: "none",
    keywords: &[Keyword {
        name: "NTHREADS",
        ty: "unsigned integer",
        default: Some("the number of workers"),
        doc: "how many stop requests to make",
    }],
    counters: &[("requests", "stop requests this worker's copy made")],
    example: "MTDieTest; DriverManager(wait, wait, print \"stopping\", stop)  // with -j 2",
    see_also: &["DriverManager", "Script"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let nthreads: Option<u32> = args.read("NTHREADS")?;
    Ok(Box::new(MTDieTest {
        nthreads,
        requests: 0,
    }))
}

/// How many of the NTHREADS tasks worker `w` of `workers` runs: tasks
/// w, w + workers, w + 2 workers, ... (all of them one each by default).
fn tasks_on(w: usize, workers: usize, nthreads: Option<u32>) -> usize {
    let workers = workers.max(1);
    let n = nthreads.map_or(workers, |n| n as usize);
    n / workers + usize::from(w < n % workers)
}

/// One copy runs on every worker.
#[derive(Debug)]
pub struct MTDieTest {
    nthreads: Option<u32>,
    requests: u64,
}

impl Element for MTDieTest {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn task_on_every_worker(&self) -> bool {
        true
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        for _ in 0..tasks_on(cx.worker(), cx.workers(), self.nthreads) {
            cx.request_stop();
            self.requests += 1;
        }
        TaskResult::Done
    }

    fn stats(&self, s: &mut bricks_element::Stats) {
        s.counter("requests", self.requests);
    }
}

#[cfg(test)]
mod tests {
    use super::tasks_on;

    #[test]
    fn tasks_are_spread_as_click_spreads_threads() {
        assert_eq!(
            (0..4).map(|w| tasks_on(w, 4, None)).collect::<Vec<_>>(),
            [1, 1, 1, 1]
        );
        assert_eq!(
            (0..2).map(|w| tasks_on(w, 2, Some(5))).collect::<Vec<_>>(),
            [3, 2]
        );
        assert_eq!(
            (0..3).map(|w| tasks_on(w, 3, Some(1))).collect::<Vec<_>>(),
            [1, 0, 0]
        );
        assert_eq!(tasks_on(0, 0, Some(0)), 0);
    }
}
