//! `NullTask`: a task that does nothing each time it runs (Click's
//! `elements/test/nulltask.cc`), for measuring what running a task costs.

use bricks_element::{
    ArgError, Args, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};

/// The `NullTask` class.
pub static CLASS: ElementClass = ElementClass {
    name: "NullTask",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "associated with a do-nothing task",
    synopsis: "NullTask([LIMIT, STOP, ACTIVE])",
    description: "Runs a task that does nothing but count its runs: useful for measuring \
        the scheduler. It runs LIMIT times (0: forever); then, with STOP, it stops the \
        router. Handlers: `count`, the runs so far; `limit`, read and written; `reset`, \
        which sets the count to 0 (it does not run the task again, as in Click); \
        `scheduled`, read and written (writing true runs the task again after it stopped \
        or when ACTIVE was false). Like bricks' other sources, a NullTask that reached \
        its LIMIT is finished, and a run whose sources are all finished ends (Click's \
        driver would idle on).",
    ports: "none",
    keywords: &[
        Keyword {
            name: "LIMIT",
            ty: "unsigned",
            default: Some("0 (forever)"),
            doc: "most runs",
        },
        Keyword {
            name: "STOP",
            ty: "boolean",
            default: Some("false"),
            doc: "stop the router after LIMIT runs",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "run from the start (false: wait for `scheduled` to be written)",
        },
    ],
    counters: &[("count", "times the task ran")],
    example: "NullTask(LIMIT 1000, STOP true);",
    see_also: &["HandlerTask", "ScheduleInfo"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let stop = args.read("STOP")?.unwrap_or(false);
    let limit: u32 = args.read("LIMIT")?.unwrap_or(0);
    let active = args.read("ACTIVE")?.unwrap_or(true);
    Ok(Box::new(NullTask {
        count: 0,
        limit,
        stop,
        schedule: TaskSchedule::new(active),
    }))
}

/// Whether a source task that stops by itself runs: Click's task being
/// scheduled, and the `scheduled` handler that reads and writes it, for
/// NullTask and HandlerTask.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskSchedule {
    /// The task runs again (Click's task is scheduled).
    scheduled: bool,
    /// It stopped by itself: done, until `scheduled` is written.
    finished: bool,
}

impl TaskSchedule {
    /// Scheduled from the start when `active`.
    pub(crate) fn new(active: bool) -> Self {
        TaskSchedule {
            scheduled: active,
            finished: false,
        }
    }

    /// Whether the task runs again.
    pub(crate) fn scheduled(&self) -> bool {
        self.scheduled
    }

    /// What a run returns when it is not scheduled: `Done` once it stopped
    /// by itself (so that a run of finished sources ends), `Idle` while it
    /// waits for `scheduled` to be written; `None` when it runs.
    pub(crate) fn not_running(&self) -> Option<TaskResult> {
        match (self.scheduled, self.finished) {
            (true, _) => None,
            (false, true) => Some(TaskResult::Done),
            (false, false) => Some(TaskResult::Idle),
        }
    }

    /// The task stopped by itself.
    pub(crate) fn finish(&mut self) {
        self.scheduled = false;
        self.finished = true;
    }

    /// Writes the `scheduled` handler: true runs the task again.
    pub(crate) fn write(&mut self, value: &str) -> Result<(), String> {
        self.scheduled = bool::from_arg(value).map_err(|_| "expected boolean")?;
        self.finished &= !self.scheduled;
        Ok(())
    }
}

/// Runs and counts.
#[derive(Debug)]
pub struct NullTask {
    count: u32,
    limit: u32,
    stop: bool,
    schedule: TaskSchedule,
}

impl Element for NullTask {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if let Some(r) = self.schedule.not_running() {
            return r;
        }
        self.count = self.count.wrapping_add(1);
        if self.limit == 0 || self.count < self.limit {
            return TaskResult::Worked;
        }
        self.schedule.finish();
        if self.stop {
            cx.request_stop();
        }
        TaskResult::Done
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", u64::from(self.count));
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "limit" => Some(self.limit.to_string()),
            "scheduled" => Some(self.schedule.scheduled().to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        match handler {
            "limit" => self.limit = u32::from_arg(value).map_err(|_| "expected uint32_t")?,
            "reset" => self.count = 0,
            "scheduled" => self.schedule.write(value)?,
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (NullTask has `limit`, `reset`, `scheduled`)"
                ))
            }
        }
        Ok(())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("count"),
            Handler::rw("limit"),
            Handler::w("reset"),
            Handler::rw("scheduled"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn runs_limit_times_then_stops_the_router() {
        let mut h = Harness::push(&CLASS, "LIMIT 3, STOP true", 0, 0);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert!(!h.stop_requested());
        assert_eq!(h.run_task(), TaskResult::Done);
        assert!(h.stop_requested());
        assert_eq!(h.read_handler("count").unwrap(), "3");
        assert_eq!(h.read_handler("scheduled").unwrap(), "false");
        // A reset does not run it again.
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.run_task(), TaskResult::Done);
        assert_eq!(h.read_handler("count").unwrap(), "0");
        // Writing `scheduled` does.
        h.write_handler("scheduled", "true").unwrap();
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.read_handler("count").unwrap(), "1");
    }

    #[test]
    fn without_stop_the_router_goes_on() {
        let mut h = Harness::push(&CLASS, "LIMIT 1", 0, 0);
        assert_eq!(h.run_task(), TaskResult::Done);
        assert!(!h.stop_requested());
    }

    #[test]
    fn inactive_waits_for_scheduled() {
        let mut h = Harness::push(&CLASS, "ACTIVE false", 0, 0);
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.read_handler("count").unwrap(), "0");
        h.write_handler("scheduled", "true").unwrap();
        for _ in 0..5 {
            assert_eq!(h.run_task(), TaskResult::Worked);
        }
        assert_eq!(h.read_handler("count").unwrap(), "5");
        h.write_handler("limit", "7").unwrap();
        assert_eq!(h.read_handler("limit").unwrap(), "7");
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Done);
    }

    #[test]
    fn arguments_are_keywords() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("LIMIT 5, STOP true, ACTIVE false").is_ok());
        assert!(m("5").is_err());
        assert!(m("LIMIT -1").is_err());
        assert!(m("BURST 3").is_err());
    }
}
