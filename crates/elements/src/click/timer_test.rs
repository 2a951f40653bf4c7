//! `TimerTest`: Click's `elements/test/timertest.cc`, an element whose
//! one timer prints a line when it fires, set from its arguments and its
//! handlers: a way to see when timers fire (with `--simtime`, exactly).

use bricks_element::{
    ArgError, Args, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual, PortInfo,
};
use bricks_packet::Timestamp;
use std::time::Duration;

/// The `TimerTest` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TimerTest",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "prints a line when its timer fires",
    synopsis: "TimerTest([DELAY, SCHEDULE])",
    description: "Holds one timer. When it fires, TimerTest prints the time the timer was \
        set for and its own name, as Click's does: `1000000000.010000: t1 :: TimerTest \
        fired` (with `--simtime`, which starts the clock at 1000000000). DELAY schedules \
        the timer that long after the router starts; SCHEDULE true with no DELAY schedules \
        it at once.\n\n\
        Handlers: `scheduled` reads whether the timer is set, and writing true sets it \
        again for its last expiry (0 if it never had one: at once), false unsets it; \
        `expiry` reads the time the timer is or was last set for (0.000000 before that); \
        `schedule_after` sets it a time from now; `unschedule` unsets it. The timer runs \
        on the first worker.\n\n\
        Click's TimerTest also checks its C++ Timer class when it starts with no timer \
        set, and runs a benchmark of its timer set with BENCHMARK; bricks has neither and \
        refuses BENCHMARK.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "DELAY",
            ty: "time",
            default: Some("none"),
            doc: "set the timer this long after the router starts",
        },
        Keyword {
            name: "SCHEDULE",
            ty: "boolean",
            default: Some("false"),
            doc: "set the timer when the router starts (after DELAY, 0 by default)",
        },
    ],
    counters: &[("fired", "times the timer fired")],
    example: "t :: TimerTest(DELAY 1s); DriverManager(wait 2s, stop)",
    see_also: &["DriverManager", "Script"],
};

static HANDLERS: &[Handler] = &[
    Handler::rw("scheduled"),
    Handler::r("expiry"),
    Handler::w("schedule_after"),
    Handler::w("unschedule"),
];

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    if args.read::<u32>("BENCHMARK")?.is_some_and(|n| n > 0) {
        return Err(
            ArgError::new("BENCHMARK: bricks' TimerTest does not benchmark the timer set")
                .with_help("leave BENCHMARK out, or 0"),
        );
    }
    let delay: Option<Duration> = args.read("DELAY")?;
    let schedule = args.read("SCHEDULE")?.unwrap_or(false);
    Ok(Box::new(TimerTest {
        initial: (schedule || delay.is_some_and(|d| !d.is_zero()))
            .then(|| delay.unwrap_or_default()),
        expiry: Timestamp(0),
        scheduled: false,
        fired: 0,
    }))
}

/// One timer that prints when it fires.
#[derive(Debug)]
pub struct TimerTest {
    /// How long after the start the timer is first set, if it is.
    initial: Option<Duration>,
    /// The time the timer is, or was last, set for.
    expiry: Timestamp,
    /// Whether it is set. The engine's timers cannot be taken back: one
    /// that comes due for an expiry no longer set does nothing.
    scheduled: bool,
    fired: u64,
}

impl TimerTest {
    /// Sets the timer for `at`.
    fn schedule_at(&mut self, at: Timestamp, cx: &mut Context<'_>) {
        self.expiry = at;
        self.scheduled = true;
        cx.schedule_at(at);
    }
}

/// `now` plus `d`, saturating.
fn after(now: Timestamp, d: Duration) -> Timestamp {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    Timestamp(now.0.saturating_add(ns))
}

impl Element for TimerTest {
    fn start(&mut self, cx: &mut Context<'_>) {
        if cx.worker() != 0 {
            return;
        }
        if let Some(d) = self.initial {
            let at = after(cx.now(), d);
            self.schedule_at(at, cx);
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        if !self.scheduled || cx.now() < self.expiry {
            return;
        }
        self.scheduled = false;
        self.fired += 1;
        eprintln!(
            "{}: {} :: {} fired",
            self.expiry.click_text(),
            cx.name(),
            cx.class()
        );
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "scheduled" => Some(self.scheduled.to_string()),
            "expiry" => Some(self.expiry.click_text()),
            _ => None,
        }
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if !write {
            return None;
        }
        let value = value.trim();
        match handler {
            "scheduled" => match bool::from_arg(value) {
                Ok(true) => self.schedule_at(self.expiry, cx),
                Ok(false) => self.scheduled = false,
                Err(_) => {
                    let why = format!("syntax error: expected true or false, found `{value}`");
                    return Some(Err(why));
                }
            },
            "schedule_after" => match Duration::from_arg(value) {
                Ok(d) => self.schedule_at(after(cx.now(), d), cx),
                Err(_) => {
                    let why = format!("syntax error: expected a time (as 0.5s), found `{value}`");
                    return Some(Err(why));
                }
            },
            "unschedule" => self.scheduled = false,
            _ => return None,
        }
        Some(Ok(String::new()))
    }

    /// The timer is the first worker's: a write reaches one copy.
    fn handler_is_shared(&self, handler: &str) -> bool {
        HANDLERS.iter().any(|h| h.name == handler)
    }

    fn handlers(&self) -> &'static [Handler] {
        HANDLERS
    }

    fn stats(&self, s: &mut bricks_element::Stats) {
        s.counter("fired", self.fired);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    const START: Timestamp = Timestamp(1_000_000_000_000_000_000);

    fn ms(n: u64) -> Timestamp {
        Timestamp(START.0 + n * 1_000_000)
    }

    fn timer(args: &str) -> Harness {
        let mut h = Harness::new(&CLASS, args, PortInfo::default());
        h.set_now(START);
        h.start();
        h
    }

    #[test]
    fn a_delay_sets_the_timer_which_fires_once_at_its_expiry() {
        let mut h = timer("DELAY 30ms");
        assert_eq!(h.timers(), [ms(30)]);
        assert_eq!(h.read_handler("scheduled").unwrap(), "true");
        assert_eq!(h.read_handler("expiry").unwrap(), "1000000000.030000");
        h.advance_to(ms(29));
        assert_eq!(h.counter("fired"), 0);
        h.advance_to(ms(30));
        assert_eq!(h.counter("fired"), 1);
        assert_eq!(h.read_handler("scheduled").unwrap(), "false");
        // The expiry stays as it was, as Click's timer keeps it.
        assert_eq!(h.read_handler("expiry").unwrap(), "1000000000.030000");
        h.advance_to(ms(60));
        assert_eq!(h.counter("fired"), 1);
    }

    #[test]
    fn no_delay_sets_nothing_and_schedule_sets_it_at_once() {
        let h = timer("");
        assert!(h.timers().is_empty());
        assert_eq!(h.read_handler("scheduled").unwrap(), "false");
        assert_eq!(h.read_handler("expiry").unwrap(), "0.000000");
        assert!(timer("DELAY 0").timers().is_empty());
        assert_eq!(timer("SCHEDULE true").timers(), [START]);
    }

    #[test]
    fn handlers_move_and_unset_the_timer_and_a_stale_timer_does_nothing() {
        let mut h = timer("DELAY 30ms");
        // Moved earlier: it fires at the new time, and the old timer,
        // which cannot be taken back, does nothing when it comes.
        h.call_write_handler("schedule_after", "10ms").unwrap();
        assert_eq!(h.read_handler("expiry").unwrap(), "1000000000.010000");
        h.advance_to(ms(10));
        assert_eq!(h.counter("fired"), 1);
        h.advance_to(ms(30));
        assert_eq!(h.counter("fired"), 1);
        // Unset before it comes: nothing.
        h.call_write_handler("schedule_after", "5ms").unwrap();
        h.call_write_handler("unschedule", "").unwrap();
        assert_eq!(h.read_handler("scheduled").unwrap(), "false");
        h.advance_to(ms(40));
        assert_eq!(h.counter("fired"), 1);
        // `scheduled` true sets it again for its last expiry, which has
        // passed: it fires at the next timer check.
        h.call_write_handler("scheduled", "true").unwrap();
        assert_eq!(h.timers(), [ms(35)]);
        h.advance_to(ms(41));
        assert_eq!(h.counter("fired"), 2);
        assert_eq!(
            h.call_write_handler("schedule_after", "soon").unwrap_err(),
            "syntax error: expected a time (as 0.5s), found `soon`"
        );
        assert!(h.call_write_handler("scheduled", "maybe").is_err());
    }

    #[test]
    fn arguments_are_read_and_a_benchmark_refused() {
        let made = |args: &str| Harness::try_new(&CLASS, args, PortInfo::default());
        assert!(made("DELAY 0.5s, SCHEDULE true").is_ok());
        assert!(made("BENCHMARK 0").is_ok());
        let e = made("BENCHMARK 100").err().expect("refused");
        assert!(e.contains("BENCHMARK"), "{e}");
        assert!(made("DELAY soon").is_err());
    }
}
