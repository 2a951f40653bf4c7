//! `RatedUnqueue`: a pull-to-push task that moves at most RATE packets a
//! second, through a token bucket (Click's `RatedUnqueue`), so that a test
//! can make a router slower than its generator.
//!
//! The bucket is Click's (`token_bucket`). Time is the engine's clock
//! (`Context::now`): with `--clock trace` the bucket fills with the
//! capture's time and a run is repeatable. Out of tokens, the task asks
//! for a timer when the next token is due and tells the engine it is
//! waiting, so the run does not end while its queue still holds packets,
//! and a trace-clock run jumps straight to that time.

use super::token_bucket::{TokenBucket, MAX_TOKENS};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_packet::{Timestamp, DEFAULT_BURST, MAX_BATCH};
use std::time::Duration;

/// The `RatedUnqueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "RatedUnqueue",
    ports: "1/1",
    processing: "l/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "pulls packets at a set rate and pushes them",
    synopsis: "RatedUnqueue(RATE [, BURST, ACTIVE, KEYWORDS])",
    description: "Runs a task that pulls packets from its input and pushes them out, at \
        most RATE packets per second on average: a token bucket fills every millisecond at \
        RATE tokens a second up to its size (RATE x BURST_DURATION, or BURST_SIZE), each \
        packet takes a token, and the bucket starts full. The bucket is Click's to the \
        fraction of a token, so its fill rate rounds down a little as Click's does and the \
        element moves what Click's moves. Each run pulls at most BURST packets and at most \
        the whole tokens it has. Time is the router's clock, so with `--clock trace` the \
        rate is kept in the capture's time and a run is repeatable. Out of tokens, the task \
        sets a timer for the next token and the run waits for it rather than ending with \
        packets queued (a stop from outside does not wait).",
    ports: "one pull input; one push output",
    keywords: &[
        Keyword {
            name: "RATE",
            ty: "unsigned",
            default: None,
            doc: "packets per second (at least 1)",
        },
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "most packets pulled per task run (1 to 256)",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "move packets at all (write `active` to change)",
        },
        Keyword {
            name: "BURST_DURATION",
            ty: "duration",
            default: Some("20ms"),
            doc: "bucket size as time at RATE",
        },
        Keyword {
            name: "BURST_SIZE",
            ty: "unsigned",
            default: Some("RATE x BURST_DURATION"),
            doc: "bucket size in packets (instead of BURST_DURATION)",
        },
    ],
    counters: &[
        ("count", "packets moved"),
        ("rate", "packets per second (write `rate` to change)"),
        ("empty_runs", "runs that found no token"),
        ("failed_pulls", "runs that had tokens but found no packet"),
        ("runs", "task runs"),
    ],
    example: "InfiniteSource(LIMIT 100) -> Queue -> RatedUnqueue(1000) -> Discard;",
    see_also: &[
        "BandwidthRatedUnqueue",
        "Unqueue",
        "RatedSource",
        "WorkPackage",
    ],
};

/// The bucket size from BURST_DURATION and BURST_SIZE (named `size_key`).
pub(crate) fn read_bucket(
    args: &mut Args<'_>,
    size_key: &'static str,
) -> Result<(Duration, Option<u64>), ArgError> {
    let dur: Option<Duration> = args.read("BURST_DURATION")?;
    let size: Option<u64> = args.read(size_key)?;
    if dur.is_some() && size.is_some() {
        return Err(ArgError::new(format!(
            "cannot give both BURST_DURATION and {size_key}"
        )));
    }
    if let Some(size) = size {
        check_tokens(size_key, size)?;
    }
    Ok((dur.unwrap_or(Duration::from_millis(20)), size))
}

/// A rate or size must fit Click's 32-bit tokens.
pub(crate) fn check_tokens(what: &str, value: u64) -> Result<u64, ArgError> {
    if value > MAX_TOKENS {
        return Err(ArgError::new(format!(
            "{what} {value} out of range (at most {MAX_TOKENS})"
        )));
    }
    Ok(value)
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let rate: u64 = args.read_mp("RATE")?;
    let burst: usize = args.read_p("BURST")?.unwrap_or(DEFAULT_BURST);
    let active: bool = args.read_p("ACTIVE")?.unwrap_or(true);
    let (window, size) = read_bucket(args, "BURST_SIZE")?;
    if rate == 0 {
        return Err(ArgError::new("RATE must be at least 1 packet per second"));
    }
    check_tokens("RATE", rate)?;
    let capacity = size.unwrap_or_else(|| TokenBucket::capacity_for(rate, window));
    Ok(Box::new(RatedUnqueue {
        bucket: TokenBucket::new(rate, capacity),
        window,
        size,
        burst: burst.clamp(1, MAX_BATCH),
        active,
        timer: None,
        runs: 0,
        count: 0,
        empty_runs: 0,
        failed_pulls: 0,
    }))
}

/// Pulls at a set packet rate.
#[derive(Debug)]
pub struct RatedUnqueue {
    bucket: TokenBucket,
    window: Duration,
    size: Option<u64>,
    burst: usize,
    active: bool,
    /// The timer asked for, until it fires.
    timer: Option<Timestamp>,
    runs: u64,
    count: u64,
    empty_runs: u64,
    failed_pulls: u64,
}

impl Element for RatedUnqueue {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Pump
    }

    #[inline]
    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        self.runs += 1;
        if !self.active {
            return TaskResult::Idle;
        }
        let now = cx.now();
        self.bucket.refill(now);
        let tokens = self.bucket.tokens();
        if tokens == 0 {
            // The last run took every token it could, so packets are
            // probably waiting: come back when the next token is due.
            self.empty_runs += 1;
            let Some(at) = self.bucket.time_until(1, now) else {
                return TaskResult::Idle;
            };
            // One timer at a time: a busy-polling worker runs this every
            // round, and the timer heap must not grow with it.
            if self.timer != Some(at) {
                self.timer = Some(at);
                cx.schedule_at(at);
            }
            return TaskResult::Waiting;
        }
        let n = (self.burst as u64).min(tokens) as usize;
        let mut b = Batch::new();
        cx.pull(0, &mut b, n);
        if b.is_empty() {
            self.failed_pulls += 1;
            return TaskResult::Idle;
        }
        self.bucket.remove(b.len() as u64);
        self.count += b.len() as u64;
        cx.push(0, &mut b);
        TaskResult::Worked
    }

    fn run_timer(&mut self, _cx: &mut Context<'_>) {
        // The task runs every round; the timer only wakes the engine.
        self.timer = None;
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("rate", self.bucket.rate());
        s.counter("empty_runs", self.empty_runs);
        s.counter("failed_pulls", self.failed_pulls);
        s.counter("runs", self.runs);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        // Click's `calls`; a push here is a packet, as in Click, where a
        // run pushes one.
        (handler == "calls").then(|| {
            format!(
                "{} calls to run_task()\n{} empty runs\n{} pushes\n{} failed pulls\n",
                self.runs, self.empty_runs, self.count, self.failed_pulls
            )
        })
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("calls"),
            Handler::rw("active"),
            Handler::rw("rate"),
            Handler::w("reset"),
        ];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "active" => self.active = bool::from_arg(value.trim())?,
            "rate" => {
                let r = u64::from_arg(value.trim())?;
                if r == 0 {
                    return Err("rate must be at least 1".into());
                }
                check_tokens("rate", r).map_err(|e| e.to_string())?;
                let cap = self
                    .size
                    .unwrap_or_else(|| TokenBucket::capacity_for(r, self.window));
                self.bucket.assign(r, cap);
            }
            "reset" => {
                self.runs = 0;
                self.count = 0;
                self.empty_runs = 0;
                self.failed_pulls = 0;
            }
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (active, rate, reset)"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testrun::{count, run};
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    fn harness(args: &str) -> Harness {
        Harness::new(
            &CLASS,
            args,
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Push],
            },
        )
    }

    fn feed(h: &mut Harness, n: usize) {
        h.feed(0, (0..n).map(|_| Packet::from_slice(&[0; 60]).unwrap()));
    }

    #[test]
    fn bucket_then_rate() {
        // 1000 pps, bucket of 20 (20 ms): 20 at once, then one per ms.
        let mut h = harness("1000");
        feed(&mut h, 100);
        h.advance_to(Timestamp(1_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 20);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), vec![Timestamp(1_001_000_000)]);
        h.advance_to(Timestamp(1_000_999_999));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        // Still the one timer, however often it runs while waiting.
        assert_eq!(h.timers(), vec![Timestamp(1_001_000_000)]);
        h.advance_to(Timestamp(1_010_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 10);
        assert_eq!(h.stats().get("count"), Some(30));
        assert_eq!(
            h.read_handler("calls").as_deref(),
            Ok("5 calls to run_task()\n3 empty runs\n30 pushes\n0 failed pulls\n")
        );
    }

    #[test]
    fn burst_caps_a_run_and_an_empty_queue_is_idle() {
        let mut h = harness("1000000, 8");
        feed(&mut h, 10);
        h.advance_to(Timestamp(5));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 8);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 2);
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.stats().get("failed_pulls"), Some(1));
    }

    #[test]
    fn handlers_and_arguments() {
        let mut h = harness("1000, ACTIVE false, BURST_SIZE 1");
        feed(&mut h, 5);
        assert_eq!(h.run_task(), TaskResult::Idle);
        h.write_handler("active", "true").unwrap();
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 1);
        h.write_handler("rate", "5").unwrap();
        assert_eq!(h.stats().get("rate"), Some(5));
        assert!(h.write_handler("rate", "0").is_err());
        let m = |a: &str| {
            bricks_runtime::testing::make_element(
                &CLASS,
                a,
                &PortInfo {
                    inputs: vec![Processing::Pull],
                    outputs: vec![Processing::Push],
                },
            )
        };
        assert!(m("").unwrap_err().contains("RATE"));
        assert!(m("0").is_err());
        assert!(m("10, BURST_DURATION 1s, BURST_SIZE 4").is_err());
    }

    #[test]
    fn a_trace_clock_run_takes_rate_time_and_delivers_everything() {
        // 1000 packets at 10000 pps with a 200-packet bucket: 200 at time
        // 0, then one every 100 us, the last at exactly 80 ms of router
        // time; every packet delivered although the source finished long
        // before.
        let config = "InfiniteSource(LIMIT 1000) -> Queue(2000) -> RatedUnqueue(10000) \
             -> c :: Counter -> Discard;";
        let s = run(config);
        assert_eq!(count(&s, "c", "count"), 1000);
        // The counter's rate: 1000 packets between 0 and 80 ms.
        assert_eq!(count(&s, "c", "rate_pps"), 12_500);
        // Repeatable: the same figures again.
        assert_eq!(count(&run(config), "c", "rate_pps"), 12_500);
    }
}
