//! `TimestampAccum`: adds up, over the passing packets, the time elapsed
//! since each packet's timestamp (Click's
//! `elements/analysis/timestampaccum.cc`).
//!
//! Every worker's instance adds into one total, so that the handlers tell
//! the time of all the packets whichever worker saw them.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Manual, PortInfo,
};
use bricks_packet::Timestamp;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `TimestampAccum` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TimestampAccum",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "collects differences in timestamps",
    synopsis: "TimestampAccum()",
    description: "For each passing packet, measures the time elapsed since its timestamp \
        annotation and adds it to a total. Handlers: `count` tells the packets seen, `time` \
        the total in seconds and `average_time` the total divided by the count, both \
        written as Click writes a real (`%.12g`; `-nan` for the average of no packets, as \
        Click's 0/0 prints on x86-64 Linux); writing `reset_counts` sets both to zero. \
        Difference from Click: the time now is bricks' clock at the start of the \
        scheduling round, read once per batch (Click reads the clock for every packet), \
        so that a packet stamped by SetTimestamp in the same round counts 0 and under \
        `--clock trace` the time follows the trace.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LIMIT 3, STOP true) -> SetTimestamp -> TimestampAccum -> Discard;",
    see_also: &["SetTimestamp", "TimeRange"],
};

/// The total (Click's `_usec_accum`, seconds despite its name) and the
/// packets counted.
#[derive(Debug, Default, Clone, Copy)]
struct Accum {
    time: f64,
    count: u64,
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let accum = args.shared(|_| Ok(Mutex::new(Accum::default())))?;
    Ok(Box::new(TimestampAccum { accum }))
}

/// One worker's TimestampAccum.
#[derive(Debug)]
pub struct TimestampAccum {
    accum: Arc<Mutex<Accum>>,
}

/// C's `%.12g`, as Click's `String(double)` writes a real.
pub(crate) fn real_text(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    const P: i32 = 12;
    // The exponent after rounding to 12 digits, as `%g` decides.
    let sci = format!("{:.*e}", (P - 1) as usize, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..P).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.unsigned_abs())
    } else {
        trim(&format!("{:.*}", (P - 1 - exp) as usize, x))
    }
}

impl TimestampAccum {
    fn lock(&self) -> MutexGuard<'_, Accum> {
        self.accum.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Click's `simple_action` for every packet of `b`, at time `now`.
    fn apply(&self, b: &Batch, now: Timestamp) {
        let now = now.signed_nanos();
        let mut a = self.lock();
        for p in b.iter() {
            // Click's `(Timestamp::now() - ts).doubleval()` of its 64-bit
            // nanosecond timestamps.
            let d = now.saturating_sub(p.anno().timestamp.signed_nanos());
            a.time += d as f64 / 1e9;
            a.count += 1;
        }
    }
}

impl Element for TimestampAccum {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch, cx.now());
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, cx| self.apply(b, cx.now()));
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("count"),
            Handler::r("time"),
            Handler::r("average_time"),
            Handler::w("reset_counts"),
        ];
        H
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        let a = *self.lock();
        Some(match handler {
            "count" => a.count.to_string(),
            "time" => real_text(a.time),
            // Click divides by a count of 0 too: 0.0 / 0 is x86's
            // negative default NaN, which glibc prints `-nan`.
            "average_time" if a.count == 0 => "-nan".into(),
            "average_time" => real_text(a.time / a.count as f64),
            _ => return None,
        })
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "reset_counts"
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset_counts" => {
                *self.lock() = Accum::default();
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (TimestampAccum has `reset_counts`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    fn stamped(secs: u64, nanos: u32) -> Packet {
        let mut p = Packet::from_slice(&[0u8; 14]).unwrap();
        p.anno_mut().timestamp = Timestamp::from_parts(secs, nanos);
        p
    }

    #[test]
    fn adds_the_time_since_each_timestamp() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        assert_eq!(h.read_handler("count").unwrap(), "0");
        assert_eq!(h.read_handler("time").unwrap(), "0");
        assert_eq!(h.read_handler("average_time").unwrap(), "-nan");
        h.advance_to(Timestamp::from_parts(100, 0));
        h.push_packets(
            0,
            [stamped(99, 0), stamped(99, 750_000_000), stamped(98, 0)],
        );
        assert_eq!(h.take(0).len(), 3);
        assert_eq!(h.read_handler("count").unwrap(), "3");
        assert_eq!(h.read_handler("time").unwrap(), "3.25");
        assert_eq!(h.read_handler("average_time").unwrap(), "1.08333333333");
        h.write_handler("reset_counts", "").unwrap();
        assert_eq!(h.read_handler("count").unwrap(), "0");
        assert_eq!(h.read_handler("time").unwrap(), "0");
        // A timestamp in the future counts negative, as in Click.
        h.push_packets(0, [stamped(100, 1_000)]);
        assert_eq!(h.read_handler("time").unwrap(), "-1e-06");
    }

    #[test]
    fn pull_counts_too() {
        let mut h = Harness::new(
            &CLASS,
            "",
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Pull],
            },
        );
        h.advance_to(Timestamp::from_parts(10, 0));
        h.feed(0, [stamped(9, 500_000_000)]);
        assert_eq!(h.pull(0, 4).len(), 1);
        assert_eq!(h.read_handler("average_time").unwrap(), "0.5");
        let push = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        assert!(Harness::try_new(&CLASS, "1", push).is_err());
    }

    #[test]
    fn reals_print_as_percent_12g() {
        assert_eq!(real_text(0.1 + 0.2), "0.3");
        assert_eq!(real_text(123_456_789_012.4), "123456789012");
        assert_eq!(real_text(999_999_999_999.7), "1e+12");
        assert_eq!(real_text(1e-5), "1e-05");
        assert_eq!(real_text(0.0001), "0.0001");
        assert_eq!(real_text(-2.5), "-2.5");
        assert_eq!(real_text(f64::NAN), "nan");
    }
}
