//! `BandwidthRatedUnqueue`: a pull-to-push task that moves at most RATE
//! bytes a second (Click's `BandwidthRatedUnqueue`): a slow link, on the
//! engine's clock.
//!
//! The bucket counts bytes, as Click's: it holds BURST_BYTES and 128 KiB
//! more, a packet may leave while it holds at least 128 KiB and takes its
//! length, so a packet of any size leaves and the long-run rate is RATE
//! (as Click's bucket rounds it) for any mix of sizes.

use super::rated_unqueue::{check_tokens, read_bucket};
use super::token_bucket::TokenBucket;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_packet::{Timestamp, DEFAULT_BURST, MAX_BATCH};
use std::time::Duration;

/// The `BandwidthRatedUnqueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "BandwidthRatedUnqueue",
    ports: "1/1",
    processing: "l/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "pulls packets at a set bandwidth and pushes them",
    synopsis: "BandwidthRatedUnqueue(RATE [, BURST, ACTIVE, KEYWORDS])",
    description: "Runs a task that pulls packets from its input and pushes them out, at most \
        RATE on average: a byte bucket fills every millisecond at RATE up to its size (RATE x \
        BURST_DURATION, or BURST_BYTES, plus 128 KiB) and starts full; a packet leaves while \
        the bucket holds at least 128 KiB and takes its length, so a packet of any size \
        leaves. The bucket is Click's, to the byte: its fill rate rounds down a little, as \
        Click's does. \
        RATE is a bandwidth in Click's syntax: a number with an optional k, M or G (powers \
        of 1000) and a unit, bps for bits or Bps for bytes per second (`10Mbps`, `1MBps`, \
        `384 kbps`); a bare number is bytes per second. Time is the router's clock, so with \
        `--clock trace` a run is repeatable. Out of tokens, the task sets a timer and the run \
        waits for it rather than ending with packets queued. Packet lengths are the frames \
        as the element sees them (no preamble or inter-frame gap).",
    ports: "one pull input; one push output",
    keywords: &[
        Keyword {
            name: "RATE",
            ty: "bandwidth",
            default: None,
            doc: "bytes per second, or with units (10Mbps, 1MBps)",
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
            name: "BURST_BYTES",
            ty: "unsigned",
            default: Some("RATE x BURST_DURATION"),
            doc: "bucket size in bytes (instead of BURST_DURATION)",
        },
    ],
    counters: &[
        ("count", "packets moved"),
        ("byte_count", "bytes moved"),
        (
            "rate",
            "bytes per second (write `rate` to change, with units)",
        ),
        ("empty_runs", "runs that found the bucket empty"),
    ],
    example: "InfiniteSource(LIMIT 100, LENGTH 1000) -> Queue -> BandwidthRatedUnqueue(8Mbps) \
        -> Discard;",
    see_also: &["RatedUnqueue", "Unqueue", "WorkPackage"],
};

/// A rate of bytes a second as Click prints a bandwidth
/// (`BandwidthArg::unparse`): kbps, Mbps or Gbps of bits with up to 3, 6
/// or 9 decimals, or MBps from 2^29 bytes a second.
pub(crate) fn unparse_bandwidth(bytes: u64) -> String {
    let real10 = |v: u64, digits: u32| {
        let one = 10u64.pow(digits);
        let (int, frac) = (v / one, v % one);
        if frac == 0 {
            return int.to_string();
        }
        let frac = format!("{frac:0width$}", width = digits as usize);
        format!("{int}.{}", frac.trim_end_matches('0'))
    };
    if bytes >= 0x2000_0000 {
        real10(bytes, 6) + "MBps"
    } else if bytes >= 125_000_000 {
        real10(bytes * 8, 9) + "Gbps"
    } else if bytes >= 125_000 {
        real10(bytes * 8, 6) + "Mbps"
    } else {
        real10(bytes * 8, 3) + "kbps"
    }
}

/// A bandwidth in Click's notation, as bytes per second.
pub fn parse_bandwidth(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("expected a bandwidth such as 10Mbps, found `{text}`"))?;
    let unit = unit.trim();
    let (scale, unit) = match unit.chars().next() {
        Some('k' | 'K') => (1e3, &unit[1..]),
        Some('M') if unit.len() > 1 => (1e6, &unit[1..]),
        Some('G') => (1e9, &unit[1..]),
        _ => (1.0, unit),
    };
    let per_byte = match unit {
        "" | "Bps" | "B/s" => 1.0,
        "bps" | "b/s" => 1.0 / 8.0,
        _ => {
            return Err(format!(
                "unknown bandwidth unit in `{text}` (bps, Bps, kbps, Mbps, Gbps, kBps, MBps, GBps)"
            ))
        }
    };
    let bytes = v * scale * per_byte;
    if !bytes.is_finite() || !(1.0..=1e15).contains(&bytes) {
        return Err(format!(
            "bandwidth `{text}` out of range (1 byte/s to 8 Pbps)"
        ));
    }
    Ok(bytes.round() as u64)
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let rate: String = args.read_mp("RATE")?;
    let burst: usize = args.read_p("BURST")?.unwrap_or(DEFAULT_BURST);
    let active: bool = args.read_p("ACTIVE")?.unwrap_or(true);
    let (window, size) = read_bucket(args, "BURST_BYTES")?;
    let rate = parse_bandwidth(&rate).map_err(|e| ArgError::new(format!("bad RATE: {e}")))?;
    check_tokens("RATE (bytes per second)", rate)?;
    let capacity = TokenBucket::bandwidth_capacity(
        size.unwrap_or_else(|| TokenBucket::capacity_for(rate, window)),
    );
    Ok(Box::new(BandwidthRatedUnqueue {
        bucket: TokenBucket::new(rate, capacity),
        window,
        size,
        burst: burst.clamp(1, MAX_BATCH),
        active,
        timer: None,
        count: 0,
        bytes: 0,
        empty_runs: 0,
    }))
}

/// Pulls at a set byte rate.
#[derive(Debug)]
pub struct BandwidthRatedUnqueue {
    bucket: TokenBucket,
    window: Duration,
    size: Option<u64>,
    burst: usize,
    active: bool,
    /// The timer asked for, until it fires.
    timer: Option<Timestamp>,
    count: u64,
    bytes: u64,
    empty_runs: u64,
}

impl Element for BandwidthRatedUnqueue {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Pump
    }

    #[inline]
    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if !self.active {
            return TaskResult::Idle;
        }
        let now = cx.now();
        self.bucket.refill(now);
        if !self.bucket.bandwidth_ready() {
            self.empty_runs += 1;
            let Some(at) = self
                .bucket
                .time_until(TokenBucket::BANDWIDTH_THRESHOLD, now)
            else {
                return TaskResult::Idle;
            };
            // One timer at a time (see RatedUnqueue).
            if self.timer != Some(at) {
                self.timer = Some(at);
                cx.schedule_at(at);
            }
            return TaskResult::Waiting;
        }
        // One packet at a time: each may use bytes below the threshold.
        let mut b = Batch::new();
        while b.len() < self.burst && self.bucket.bandwidth_ready() {
            let before = b.len();
            cx.pull(0, &mut b, 1);
            let Some(p) = b.as_mut_slice().get(before) else {
                break;
            };
            let len = p.len() as u64;
            self.bucket.remove(len);
            self.bytes += len;
        }
        if b.is_empty() {
            return TaskResult::Idle;
        }
        self.count += b.len() as u64;
        cx.push(0, &mut b);
        TaskResult::Worked
    }

    fn run_timer(&mut self, _cx: &mut Context<'_>) {
        self.timer = None;
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("byte_count", self.bytes);
        s.counter("rate", self.bucket.rate());
        s.counter("empty_runs", self.empty_runs);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        // Click's text; the `rate` counter keeps the number.
        (handler == "rate").then(|| unparse_bandwidth(self.bucket.rate()))
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "active" => self.active = bool::from_arg(value.trim())?,
            "rate" => {
                let r = parse_bandwidth(value)?;
                check_tokens("rate (bytes per second)", r).map_err(|e| e.to_string())?;
                let cap = TokenBucket::bandwidth_capacity(
                    self.size
                        .unwrap_or_else(|| TokenBucket::capacity_for(r, self.window)),
                );
                self.bucket.assign(r, cap);
            }
            "reset" => {
                self.count = 0;
                self.bytes = 0;
                self.empty_runs = 0;
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

    #[test]
    fn bandwidths_in_clicks_notation() {
        assert_eq!(parse_bandwidth("10Mbps"), Ok(1_250_000));
        assert_eq!(parse_bandwidth("1MBps"), Ok(1_000_000));
        assert_eq!(parse_bandwidth("384 kbps"), Ok(48_000));
        assert_eq!(parse_bandwidth("1.5Gbps"), Ok(187_500_000));
        assert_eq!(parse_bandwidth("1000"), Ok(1000));
        assert_eq!(parse_bandwidth("2 KBps"), Ok(2000));
        assert!(parse_bandwidth("fast").is_err());
        assert!(parse_bandwidth("10 parsecs").is_err());
        assert!(parse_bandwidth("0bps").is_err());
    }

    #[test]
    fn bandwidths_print_as_clicks() {
        assert_eq!(unparse_bandwidth(10_005), "80.04kbps");
        assert_eq!(unparse_bandwidth(200), "1.6kbps");
        assert_eq!(unparse_bandwidth(1_250_000), "10Mbps");
        assert_eq!(unparse_bandwidth(187_500_000), "1.5Gbps");
        assert_eq!(unparse_bandwidth(0x2000_0000), "536.870912MBps");
        assert_eq!(unparse_bandwidth(u32::MAX as u64), "4294.967295MBps");
    }

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

    #[test]
    fn bytes_not_packets_and_debt_is_repaid() {
        // 1000 bytes/s, BURST_BYTES 100: the bucket holds 100 bytes above
        // Click's 131072-byte threshold. A 300-byte packet leaves at once
        // and leaves the bucket 200 bytes below it; the next may leave
        // once it is back, 200 ms later.
        let mut h = harness("1000, BURST_BYTES 100");
        h.feed(0, (0..3).map(|_| Packet::from_slice(&[0; 300]).unwrap()));
        h.advance_to(Timestamp(1_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), vec![Timestamp(1_200_000_000)]);
        h.advance_to(Timestamp(1_199_999_999));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        h.advance_to(Timestamp(1_200_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("byte_count"), Some(600));
    }

    #[test]
    fn a_trace_clock_run_keeps_the_bandwidth() {
        // 500 frames of 1000 bytes through 8 Mbps (1 MB/s): 20 kB at once
        // (the bucket), the other 480 kB at 1 MB/s: the last leaves at
        // 480 ms of router time.
        let s = run("InfiniteSource(LIMIT 500, LENGTH 1000) -> Queue(1000) \
             -> BandwidthRatedUnqueue(8Mbps) -> c :: Counter -> Discard;");
        assert_eq!(count(&s, "c", "count"), 500);
        // 4 Mb between 0 and about 480 ms.
        let bps = count(&s, "c", "rate_bps");
        assert!((8_300_000..=8_400_000).contains(&bps), "{bps}");
    }

    #[test]
    fn arguments_are_checked() {
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
        assert!(m("").is_err());
        assert!(m("lots").unwrap_err().contains("bad RATE"));
        assert!(m("1Mbps, BURST_DURATION 1s, BURST_BYTES 9").is_err());
        m("1Mbps, 8, false").unwrap();
    }
}
