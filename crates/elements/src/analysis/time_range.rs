//! `TimeRange`: the smallest range of time holding every passing packet's
//! timestamp, read through handlers (Click's
//! `elements/analysis/timerange.cc`).
//!
//! Every worker's instance keeps one range, so that the handlers tell
//! the range of all the packets whichever worker saw them.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
};
use bricks_packet::{ClickTime, Timestamp};
use std::sync::{Arc, Mutex, MutexGuard};

/// The `TimeRange` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TimeRange",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "monitors range of packet timestamps",
    synopsis: "TimeRange([KEYWORDS])",
    description: "Passes packets unchanged, keeping the smallest range of time that holds \
        all their timestamps. Handlers: `first` and `last` tell the earliest and latest \
        timestamp (`0.000000` before any packet), `range` both separated by a space, \
        `interval` the difference in seconds, and writing `reset` clears the range. \
        Timestamps are written as Click writes them: seconds, a dot, and 6 digits, or 9 \
        when the time is not a whole number of microseconds. As in Click, a timestamp of \
        zero is taken as no packet yet: the next packet starts the range anew. With SIMPLE \
        the timestamps are taken to increase, and `last` is the latest packet's; an \
        earlier timestamp after a later one then makes `interval` negative, as in Click.",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "SIMPLE",
        ty: "boolean",
        default: Some("false"),
        doc: "packets arrive in timestamp order: each sets `last`",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 2, STOP true) -> SetTimestamp(1.5) -> TimeRange -> Discard;",
    see_also: &["TimeFilter", "TimestampAccum", "SetTimestamp"],
};

/// The range seen, in nanoseconds since 1970 (Click's `_first`, `_last`).
#[derive(Debug, Default, Clone, Copy)]
struct Range {
    first: Timestamp,
    last: Timestamp,
}

impl Range {
    /// Click's `simple_action`.
    fn add(&mut self, t: Timestamp, simple: bool) {
        if self.first == Timestamp(0) {
            self.first = t;
            self.last = t;
        } else if simple || self.last < t {
            self.last = t;
        } else if t < self.first {
            self.first = t;
        }
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let simple = args.read::<bool>("SIMPLE")?.unwrap_or(false);
    let range = args.shared(|_| Ok(Mutex::new(Range::default())))?;
    Ok(Box::new(TimeRange { range, simple }))
}

/// One worker's TimeRange.
#[derive(Debug)]
pub struct TimeRange {
    range: Arc<Mutex<Range>>,
    simple: bool,
}

impl TimeRange {
    fn lock(&self) -> MutexGuard<'_, Range> {
        self.range.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn apply(&self, b: &Batch) {
        let mut r = self.lock();
        for p in b.iter() {
            r.add(p.anno().timestamp, self.simple);
        }
    }
}

impl Element for TimeRange {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("first"),
            Handler::r("last"),
            Handler::r("range"),
            Handler::r("interval"),
            Handler::w("reset"),
        ];
        H
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        let r = *self.lock();
        let ts = |t: Timestamp| ClickTime(i128::from(t.0)).to_string();
        Some(match handler {
            "first" => ts(r.first),
            "last" => ts(r.last),
            "range" => format!("{} {}", ts(r.first), ts(r.last)),
            "interval" => ClickTime(i128::from(r.last.0) - i128::from(r.first.0)).to_string(),
            _ => return None,
        })
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "reset"
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                *self.lock() = Range::default();
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (TimeRange has `reset`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    fn at(secs: u64, nanos: u32) -> Packet {
        let mut p = Packet::from_slice(&[0x45; 20]).unwrap();
        p.anno_mut().timestamp = Timestamp::from_parts(secs, nanos);
        p
    }

    #[test]
    fn keeps_the_smallest_range_and_prints_as_click() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        assert_eq!(h.read_handler("first").unwrap(), "0.000000");
        assert_eq!(h.read_handler("range").unwrap(), "0.000000 0.000000");
        assert_eq!(h.read_handler("interval").unwrap(), "0.000000");
        h.push_packets(0, [at(10, 500_000_000), at(12, 0), at(9, 1_500), at(11, 0)]);
        assert_eq!(h.take(0).len(), 4);
        assert_eq!(h.read_handler("first").unwrap(), "9.000001500");
        assert_eq!(h.read_handler("last").unwrap(), "12.000000");
        assert_eq!(h.read_handler("range").unwrap(), "9.000001500 12.000000");
        assert_eq!(h.read_handler("interval").unwrap(), "2.999998500");
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.read_handler("last").unwrap(), "0.000000");
        h.push_packets(0, [at(3, 250_000_000)]);
        assert_eq!(h.read_handler("range").unwrap(), "3.250000 3.250000");
        assert_eq!(h.read_handler("interval").unwrap(), "0.000000");
    }

    #[test]
    fn simple_takes_the_latest_packet_as_last() {
        let mut h = Harness::push(&CLASS, "SIMPLE true", 1, 1);
        h.push_packets(0, [at(10, 0), at(12, 0), at(11, 0)]);
        assert_eq!(h.read_handler("range").unwrap(), "10.000000 11.000000");
        h.push_packets(0, [at(9, 500_000_000)]);
        // Click's SIMPLE trusts the order: the interval goes negative.
        assert_eq!(h.read_handler("interval").unwrap(), "-0.500000");
        assert_eq!(h.read_handler("first").unwrap(), "10.000000");
    }

    #[test]
    fn a_zero_timestamp_restarts_the_range_as_in_click() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [at(0, 0), at(5, 0), at(4, 0)]);
        assert_eq!(h.read_handler("range").unwrap(), "4.000000 5.000000");
    }

    #[test]
    fn pull_and_bad_arguments() {
        let mut h = Harness::new(
            &CLASS,
            "",
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Pull],
            },
        );
        h.feed(0, [at(7, 0), at(6, 0)]);
        assert_eq!(h.pull(0, 8).len(), 2);
        assert_eq!(h.read_handler("range").unwrap(), "6.000000 7.000000");
        let push = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        assert!(Harness::try_new(&CLASS, "SIMPLE maybe", push.clone()).is_err());
        assert!(Harness::try_new(&CLASS, "BOGUS 1", push).is_err());
    }
}
