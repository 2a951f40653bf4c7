//! `TimedUnqueue`: a pull-to-push task that moves at most BURST packets
//! every INTERVAL, as Click's `elements/standard/timedunqueue.cc` (and
//! Burster, the same element with a larger default burst).
//!
//! Click's task runs once when the router starts, then whenever its timer
//! fires: it pulls up to BURST packets and sets the timer INTERVAL after
//! the previous expiry. A first pull that finds nothing while the input
//! says it will stay empty (Click's upstream empty notifier) clears the
//! timer and lets the task sleep until a packet arrives, which then leaves
//! at once. bricks keeps that schedule on the engine's clock (so a
//! `--clock trace` or `--simtime` run is repeatable): the task runs every
//! round, moves packets only when the expiry has passed, and asks for a
//! timer at the expiry so that the engine wakes (or jumps) to it.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
    TaskKind, TaskResult,
};
use bricks_packet::{Timestamp, MAX_BATCH};
use std::time::Duration;

/// The `TimedUnqueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TimedUnqueue",
    ports: "1/1",
    processing: "l/h",
    manual: &MANUAL,
    make,
};

/// What TimedUnqueue's and Burster's manuals say alike.
pub(crate) const DESCRIPTION: &str = "Pulls at most BURST packets every INTERVAL from its \
    input and pushes them out its single output. The first pull is when the router \
    starts; each one after it is INTERVAL after the time the previous one was due (a \
    late run catches up, as Click's timer does). When a pull finds nothing and nothing \
    upstream may have packets (an empty Queue), the element sleeps until a packet \
    arrives and sends it at once, INTERVAL then counting from there: with BURST 1 and \
    packets arriving slower than one per INTERVAL it adds little delay; otherwise a \
    packet may wait up to INTERVAL. There is usually a Queue upstream.\n\n\
    Time is the router's clock: with `--clock trace` or `--simtime` the intervals are \
    kept in that time and a run is repeatable. While packets wait upstream for the \
    next INTERVAL the run does not end (a stop from outside does not wait).\n\n\
    Differences from Click: INTERVAL keeps its precision below a millisecond (Click \
    rounds it to whole milliseconds); the `count` counter (packets moved) is a bricks \
    addition.";

static MANUAL: Manual = Manual {
    summary: "pulls BURST packets every INTERVAL and pushes them",
    synopsis: "TimedUnqueue(INTERVAL [, BURST])",
    description: DESCRIPTION,
    ports: "one pull input; one push output",
    keywords: &[
        Keyword {
            name: "INTERVAL",
            ty: "time (seconds, or with a unit: 10ms)",
            default: None,
            doc: "time between pulls; positional",
        },
        Keyword {
            name: "BURST",
            ty: "integer, at least 1",
            default: Some("1"),
            doc: "packets pulled at most each INTERVAL; positional",
        },
    ],
    counters: &[("count", "packets moved (a bricks addition)")],
    example: "InfiniteSource(LIMIT 6) -> Queue -> TimedUnqueue(0.01, 2) -> Discard;",
    see_also: &["Burster", "RatedUnqueue", "Unqueue", "Queue"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(configure(args, 1)?))
}

/// Reads `INTERVAL [, BURST]`, BURST defaulting to `default_burst`
/// (Burster's is 8).
pub(crate) fn configure(args: &mut Args<'_>, default_burst: u64) -> Result<TimedUnqueue, ArgError> {
    let interval: Duration = args.read_mp("INTERVAL")?;
    let burst: Option<i64> = args.read_p("BURST")?;
    let burst = match burst {
        None => default_burst,
        Some(b) => u64::try_from(b)
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| ArgError::new(format!("bad BURST {b}: must be at least 1")))?,
    };
    Ok(TimedUnqueue {
        interval: u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX),
        burst,
        expiry: None,
        scheduled: false,
        found: false,
        count: 0,
    })
}

/// Pulls a burst every interval.
#[derive(Debug)]
pub struct TimedUnqueue {
    /// INTERVAL in nanoseconds.
    interval: u64,
    burst: u64,
    /// The timer's expiry, kept after it fires so that the next one is an
    /// interval after it; `None` once cleared (Click's `Timer::clear`).
    expiry: Option<Timestamp>,
    /// Whether the timer is set and has not expired: the task waits.
    scheduled: bool,
    /// Whether the last run moved packets: then more may be waiting.
    found: bool,
    count: u64,
}

impl Element for TimedUnqueue {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Pump
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let now = cx.now();
        if self.scheduled {
            if self.expiry.is_some_and(|at| now < at) {
                // Click's task sleeps until the timer fires. The run waits
                // for it while packets may be queued; with none, or an
                // input that gave nothing last time although it claimed
                // it might, it may end.
                return if self.found && cx.upstream_active(0) {
                    TaskResult::Waiting
                } else {
                    TaskResult::Idle
                };
            }
            self.scheduled = false;
        }
        let mut moved = 0u64;
        while moved < self.burst {
            let n = (self.burst - moved).min(MAX_BATCH as u64) as usize;
            let mut b = Batch::new();
            cx.pull(0, &mut b, n);
            if b.is_empty() {
                break;
            }
            moved += b.len() as u64;
            cx.push(0, &mut b);
        }
        self.count += moved;
        self.found = moved > 0;
        if moved == 0 && !cx.upstream_active(0) {
            // Asleep until a packet arrives, which then leaves at once.
            self.expiry = None;
            return TaskResult::Idle;
        }
        let at = Timestamp(match self.expiry {
            Some(e) => e.0.saturating_add(self.interval),
            None => now.0.saturating_add(self.interval),
        });
        self.expiry = Some(at);
        self.scheduled = true;
        cx.schedule_at(at);
        if moved > 0 {
            TaskResult::Worked
        } else {
            TaskResult::Idle
        }
    }

    fn run_timer(&mut self, _cx: &mut Context<'_>) {
        // The task runs every round and reads the clock; the timer only
        // wakes the engine (or moves a trace clock) to the expiry.
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testrun::{count, run};
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    const S: u64 = 1_000_000_000;

    fn ports() -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Push],
        }
    }

    fn feed(h: &mut Harness, n: usize) {
        h.feed(0, (0..n).map(|_| Packet::from_slice(&[0; 60]).unwrap()));
    }

    #[test]
    fn one_burst_per_interval_from_the_start() {
        let mut h = Harness::new(&CLASS, "0.5, 2", ports());
        feed(&mut h, 5);
        h.advance_to(Timestamp(10 * S));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 2);
        assert_eq!(h.timers(), vec![Timestamp(10 * S + S / 2)]);
        // Not before the timer, however often it runs.
        h.advance_to(Timestamp(10 * S + S / 2 - 1));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert!(h.take(0).is_empty());
        h.advance_to(Timestamp(10 * S + S / 2));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 2);
        h.advance_to(Timestamp(11 * S));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("count"), Some(5));
    }

    #[test]
    fn the_default_burst_is_one_and_late_runs_catch_up() {
        let mut h = Harness::new(&CLASS, "INTERVAL 100ms", ports());
        feed(&mut h, 10);
        h.advance_to(Timestamp(S));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 1);
        // 350 ms late: due at 1.1 s, then 1.2, 1.3 and 1.4 come due at
        // once, as Click's `reschedule_after` from the expiry does.
        h.advance_to(Timestamp(S + 450_000_000));
        for _ in 0..4 {
            assert_eq!(h.run_task(), TaskResult::Worked);
        }
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.take(0).len(), 4);
        assert_eq!(
            h.timers().last(),
            Some(&Timestamp(S + 500_000_000)),
            "{:?}",
            h.timers()
        );
    }

    #[test]
    fn bursts_beyond_a_batch() {
        let mut h = Harness::new(&CLASS, "1, 600", ports());
        feed(&mut h, 1000);
        h.advance_to(Timestamp(0));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 600);
        h.advance_to(Timestamp(S));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 400);
    }

    #[test]
    fn an_input_that_may_have_packets_is_polled_every_interval() {
        // The harness's input has no empty notifier: as in Click with such
        // an input, a pull that finds nothing keeps the timer going.
        let mut h = Harness::new(&CLASS, "1", ports());
        h.advance_to(Timestamp(0));
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.timers(), vec![Timestamp(S)]);
        // Nothing found last time: the run need not wait.
        assert_eq!(h.run_task(), TaskResult::Idle);
        feed(&mut h, 1);
        assert_eq!(h.run_task(), TaskResult::Idle);
        h.advance_to(Timestamp(S));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &ports());
        assert!(m("").unwrap_err().contains("INTERVAL"));
        assert!(m("-1").unwrap_err().contains("INTERVAL"));
        assert!(m("soon").unwrap_err().contains("INTERVAL"));
        assert!(m("1, 0").unwrap_err().contains("bad BURST"));
        assert!(m("1, -3").unwrap_err().contains("bad BURST"));
        assert!(m("1, x").unwrap_err().contains("BURST"));
        assert!(m("1, 2, 3").unwrap_err().contains("too many"));
        assert!(m("INTERVAL 0, BURST 4").is_ok());
        assert!(m("20ms, BURST 4").is_ok());
    }

    #[test]
    fn after_a_queue_on_the_trace_clock() {
        // 21 packets, 2 every 100 ms: pulls at 0, 0.1, ..., 1.0 s. The
        // queue then is empty and the run ends without waiting further.
        let s = run(
            "InfiniteSource(LIMIT 21) -> Queue -> t :: TimedUnqueue(0.1, 2) \
             -> c :: Counter -> Discard;",
        );
        assert_eq!(count(&s, "c", "count"), 21);
        assert_eq!(count(&s, "t", "count"), 21);
        // 21 packets between 0 and 1 s.
        assert_eq!(count(&s, "c", "rate_pps"), 21, "{}", s.render());
    }

    #[test]
    fn an_empty_queue_puts_it_to_sleep_and_a_packet_wakes_it_at_once() {
        // Packets at 0.25 and 0.5 s into an empty QuickNoteQueue, the
        // router stopped at 0.75 s. The first pull, at 0, finds the queue
        // empty and its notifier sleeps at once: so does the element, and
        // the 0.25 s packet leaves when it arrives (a timer started at 0
        // would hold it until 1 s); the 0.5 s packet waits for 1.25 s,
        // after the stop, which does not wait for it. Click: 1 and 1.
        let s = run(
            "TimedSource(0.25, LIMIT 2, STOP true) -> q :: QuickNoteQueue \
             -> t :: TimedUnqueue(1) -> c :: Counter -> Discard;",
        );
        assert_eq!(count(&s, "c", "count"), 1, "{}", s.render());
        assert_eq!(count(&s, "q", "length"), 1, "{}", s.render());
    }

    #[test]
    fn a_queue_empty_for_one_pull_is_not_asleep() {
        // The same with a Queue, whose empty notifier sleeps only after ten
        // pulls in a row found it empty: after the first the element sets
        // its timer for 1 s, and both packets wait past the stop. Click: 0
        // and 2.
        let s = run("TimedSource(0.25, LIMIT 2, STOP true) -> q :: Queue \
             -> t :: TimedUnqueue(1) -> c :: Counter -> Discard;");
        assert_eq!(count(&s, "c", "count"), 0, "{}", s.render());
        assert_eq!(count(&s, "q", "length"), 2, "{}", s.render());
    }

    #[test]
    fn the_example_runs() {
        let s = run(CLASS.manual.example);
        assert_eq!(count(&s, "TimedUnqueue@3", "count"), 6, "{}", s.render());
    }
}
