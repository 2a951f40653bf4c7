//! `AdjustTimestamp`: adds a time to packets' timestamp annotations, as
//! Click's `elements/analysis/adjusttimestamp.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
};
use bricks_packet::Timestamp;

/// The `AdjustTimestamp` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AdjustTimestamp",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "adjusts the time in the packet's timestamp annotation",
    synopsis: "AdjustTimestamp(TIME [, FIRST, ALL])",
    description: "Adds TIME, which may be negative (`-1`, `+1.5`, `-200ms`), to each \
        packet's timestamp annotation. Zero timestamps are left alone unless ALL is true. \
        A result before 1970 is kept, as Click's signed timestamps. bricks has no \
        first-timestamp annotation, so FIRST true is refused. The `time` handler reads and sets TIME.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "TIME",
            ty: "signed time in seconds (suffixes ms, us, ns allowed)",
            default: None,
            doc: "added to each timestamp; positional",
        },
        Keyword {
            name: "FIRST",
            ty: "boolean",
            default: Some("false"),
            doc: "adjust the first-timestamp annotation instead (not in bricks)",
        },
        Keyword {
            name: "ALL",
            ty: "boolean",
            default: Some("false"),
            doc: "adjust zero timestamps too",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> SetTimestamp(1) -> AdjustTimestamp(-0.5) \
        -> Print(TIMESTAMP true) -> Discard;",
    see_also: &["SetTimestamp", "TimeFilter"],
};

/// Parses a signed time (`-1`, `+1.5`, `-200ms`) into nanoseconds.
pub(crate) fn parse_signed_time(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let (neg, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let d = <std::time::Duration as bricks_element::FromArg>::from_arg(rest)?;
    let ns = i64::try_from(d.as_nanos()).map_err(|_| format!("time out of range: `{text}`"))?;
    Ok(if neg { -ns } else { ns })
}

/// Nanoseconds as Click prints a time: seconds with six decimals.
pub(crate) fn unparse_time(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!(
        "{sign}{}.{:06}",
        a / 1_000_000_000,
        a % 1_000_000_000 / 1000
    )
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let text: String = args.read_mp("TIME")?;
    let delta =
        parse_signed_time(&text).map_err(|e| ArgError::new(format!("bad argument TIME: {e}")))?;
    if args.read("FIRST")?.unwrap_or(false) {
        return Err(ArgError::new(
            "FIRST true: bricks has no first-timestamp annotation",
        ));
    }
    let all = args.read("ALL")?.unwrap_or(false);
    Ok(Box::new(AdjustTimestamp { delta, all }))
}

/// Shifts timestamps.
#[derive(Debug)]
pub struct AdjustTimestamp {
    delta: i64,
    all: bool,
}

impl AdjustTimestamp {
    #[inline]
    fn apply(&self, b: &mut Batch) {
        for p in b.iter_mut() {
            let t = p.anno().timestamp.0;
            if t != 0 || self.all {
                let n = Timestamp(t).signed_nanos().saturating_add(self.delta);
                p.anno_mut().timestamp = Timestamp::from_signed_nanos(n);
            }
        }
    }
}

impl Element for AdjustTimestamp {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "time").then(|| unparse_time(self.delta))
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "time" => self.delta = parse_signed_time(value)?,
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (AdjustTimestamp has `time`)"
                ))
            }
        }
        Ok(())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("time")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_element::Packet;
    use bricks_runtime::testing::{make_element, Harness};

    fn at(ns: u64) -> Packet {
        let mut p = Packet::from_slice(&udp(4)).unwrap();
        p.anno_mut().timestamp = Timestamp(ns);
        p
    }

    fn times(args: &str, input: &[u64]) -> Vec<u64> {
        let mut h = Harness::push(&CLASS, args, 1, 1);
        h.push_packets(0, input.iter().map(|&t| at(t)));
        h.take(0).iter().map(|p| p.anno().timestamp.0).collect()
    }

    #[test]
    fn click_test_cases() {
        // Click's test/analysis/AdjustTimestamp-01, with the timestamps
        // 1000 s later so that none goes before 1970.
        let s = 1_000_000_000u64;
        let input = [1000 * s + s / 10, 1000 * s + s / 5, 0, 1001 * s];
        assert_eq!(
            times("-1", &input),
            vec![999 * s + s / 10, 999 * s + s / 5, 0, 1000 * s]
        );
        assert_eq!(
            times("+1.5", &input),
            vec![
                1001 * s + 6 * s / 10,
                1001 * s + 7 * s / 10,
                0,
                1002 * s + s / 2
            ]
        );
        assert_eq!(times("+0.1, ALL true", &[0]), vec![s / 10]);
        // Before 1970, as Click's signed timestamps, and back again.
        let before = times("-200ms", &[s / 10]);
        assert_eq!(Timestamp(before[0]).signed_nanos(), -(s as i64) / 10);
        assert_eq!(times("+0.3", &before), vec![2 * s / 10]);
    }

    #[test]
    fn time_handler_and_arguments() {
        let ports = PortInfo::default();
        let mut e = make_element(&CLASS, "-1.25", &ports).unwrap();
        assert_eq!(e.read_handler("time").as_deref(), Some("-1.250000"));
        e.write_handler("time", "+2ms").unwrap();
        assert_eq!(e.read_handler("time").as_deref(), Some("0.002000"));
        assert!(e.write_handler("time", "soon").is_err());
        assert!(make_element(&CLASS, "1, FIRST true", &ports).is_err());
        assert!(make_element(&CLASS, "", &ports).is_err());
    }
}
