//! `HandlerTask`: a task that calls a write handler each time it runs
//! (Click's `elements/test/handlertask.cc`), for measuring handler calls
//! or driving an element from the scheduler.

use super::null_task::TaskSchedule;
use crate::standard::handler_call::HandlerCall;
use bricks_element::{
    ArgError, Args, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};

/// The `HandlerTask` class.
pub static CLASS: ElementClass = ElementClass {
    name: "HandlerTask",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "calls a write handler from a task",
    synopsis: "HandlerTask(HANDLER [, ACTIVE, RESCHEDULE])",
    description: "Runs a task that writes HANDLER, `ELEMENT.HANDLER [VALUE]` (or `stop`), \
        each time it runs: once, or, with RESCHEDULE, again and again. Handlers: `count`, \
        the runs so far; `reschedule`, read and written; `scheduled`, read and written \
        (writing true runs the task again). A HandlerTask that does not reschedule is \
        finished after its run, like bricks' other sources, and a run whose sources are \
        all finished ends. An error from the handler is printed and the task goes on, as \
        Click's does.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "HANDLER",
            ty: "write handler call",
            default: None,
            doc: "the call, `ELEMENT.HANDLER [VALUE]`; positional",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "run from the start (false: wait for `scheduled` to be written)",
        },
        Keyword {
            name: "RESCHEDULE",
            ty: "boolean",
            default: Some("false"),
            doc: "run again after each run",
        },
    ],
    counters: &[("count", "times the task ran")],
    example: "c :: Counter; HandlerTask(c.reset, RESCHEDULE true); \
        InfiniteSource(LIMIT 5) -> c -> Discard;",
    see_also: &["NullTask", "Script"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let text: String = args.read_mp("HANDLER")?;
    let call = HandlerCall::parse(&text).map_err(|e| ArgError::new(format!("HANDLER: {e}")))?;
    let active = args.read("ACTIVE")?.unwrap_or(true);
    let reschedule = args.read("RESCHEDULE")?.unwrap_or(false);
    Ok(Box::new(HandlerTask {
        call,
        pending: Vec::new(),
        count: 0,
        reschedule,
        schedule: TaskSchedule::new(active),
    }))
}

/// Calls a handler from its task.
#[derive(Debug)]
pub struct HandlerTask {
    call: HandlerCall,
    /// Calls to elements that were busy, made at the next timer.
    pending: Vec<HandlerCall>,
    count: u32,
    reschedule: bool,
    /// Finished once it ran and did not reschedule.
    schedule: TaskSchedule,
}

impl HandlerTask {
    fn write(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        match handler {
            "reschedule" => {
                self.reschedule = bool::from_arg(value).map_err(|_| "expected boolean")?
            }
            "scheduled" => self.schedule.write(value)?,
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (HandlerTask has `reschedule`, `scheduled`)"
                ))
            }
        }
        Ok(())
    }
}

impl Element for HandlerTask {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if let Some(r) = self.schedule.not_running() {
            return r;
        }
        self.count = self.count.wrapping_add(1);
        let own = self
            .call
            .own_call(cx.name())
            .map(|(h, v)| (h.to_string(), v.to_string()));
        match own {
            // Its own handler: the element is busy running this task.
            Some((h, v)) => {
                if let Err(e) = self.write(&h, &v) {
                    eprintln!("{}: {}: {e}", cx.name(), self.call.unparse());
                }
            }
            None => self.call.call_here(cx, &mut self.pending),
        }
        if self.reschedule && self.schedule.scheduled() {
            return TaskResult::Worked;
        }
        self.schedule.finish();
        TaskResult::Done
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        HandlerCall::run_pending(cx, &mut self.pending);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", u64::from(self.count));
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "reschedule" => Some(self.reschedule.to_string()),
            "scheduled" => Some(self.schedule.scheduled().to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.write(handler, value)
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("count"),
            Handler::rw("reschedule"),
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
    fn runs_once_without_reschedule() {
        let mut h = Harness::push(&CLASS, "stop", 0, 0);
        assert_eq!(h.run_task(), TaskResult::Done);
        assert!(h.stop_requested());
        assert_eq!(h.read_handler("count").unwrap(), "1");
        assert_eq!(h.run_task(), TaskResult::Done);
        assert_eq!(h.read_handler("count").unwrap(), "1");
        h.write_handler("scheduled", "true").unwrap();
        assert_eq!(h.run_task(), TaskResult::Done);
        assert_eq!(h.read_handler("count").unwrap(), "2");
    }

    #[test]
    fn reschedules_until_told_not_to() {
        let mut h = Harness::push(&CLASS, "stop, RESCHEDULE true", 0, 0);
        for _ in 0..3 {
            assert_eq!(h.run_task(), TaskResult::Worked);
        }
        h.write_handler("reschedule", "false").unwrap();
        assert_eq!(h.read_handler("reschedule").unwrap(), "false");
        assert_eq!(h.run_task(), TaskResult::Done);
        assert_eq!(h.read_handler("count").unwrap(), "4");
    }

    #[test]
    fn calls_its_own_handler() {
        // Its own `reschedule false`: the task stops after this run.
        let mut h = Harness::push(&CLASS, "dut.reschedule false, RESCHEDULE true", 0, 0);
        assert_eq!(h.run_task(), TaskResult::Done);
        assert_eq!(h.read_handler("reschedule").unwrap(), "false");
    }

    #[test]
    fn inactive_waits() {
        let mut h = Harness::push(&CLASS, "stop, ACTIVE false", 0, 0);
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert!(!h.stop_requested());
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("").is_err());
        assert!(m("nodot").is_err());
        assert!(m("c.reset, ACTIVE false, RESCHEDULE true").is_ok());
    }
}
