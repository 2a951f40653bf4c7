//! `SetTimestampDelta`: replaces packets' timestamps with their distance
//! from the first one seen, as Click's
//! `elements/analysis/settimestampdelta.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
};
use bricks_packet::Timestamp;

use super::adjust_timestamp::unparse_time;

/// The `SetTimestampDelta` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetTimestampDelta",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "replaces timestamps with their offset from a reference time",
    synopsis: "SetTimestampDelta([TYPE])",
    description: "With TYPE RANGE (the default), subtracts the first nonzero timestamp seen \
        from each packet's timestamp annotation, so timestamps count from the first packet. \
        With TYPE NOW, sets each timestamp to how long ago it was (the current time minus the \
        timestamp; the simulated time under `--simtime`). Zero timestamps are left alone. \
        Click's TYPE FIRST reads the first-timestamp annotation, which bricks does not have: \
        it is refused. The `first` handler reads the reference time; writing `reset` \
        forgets it, so the next packet becomes the new reference.",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "TYPE",
        ty: "RANGE or NOW",
        default: Some("RANGE"),
        doc: "what timestamps are measured from",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 2) -> SetTimestamp -> SetTimestampDelta \
        -> Print(TIMESTAMP true) -> Discard;",
    see_also: &["AdjustTimestamp", "SetTimestamp"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let typ: Option<String> = args.read("TYPE")?;
    let now = match typ.as_deref() {
        None | Some("RANGE") => false,
        Some("NOW") => true,
        Some("FIRST") => {
            return Err(ArgError::new(
                "TYPE FIRST: bricks has no first-timestamp annotation",
            ))
        }
        Some(other) => {
            return Err(
                ArgError::new(format!("bad TYPE `{other}`")).with_help("TYPE is RANGE or NOW")
            )
        }
    };
    Ok(Box::new(SetTimestampDelta { now, first: 0 }))
}

/// Makes timestamps relative.
#[derive(Debug)]
pub struct SetTimestampDelta {
    /// TYPE NOW rather than RANGE.
    now: bool,
    /// The first nonzero timestamp seen (signed nanoseconds), 0 before it.
    first: i64,
}

impl SetTimestampDelta {
    #[inline]
    fn apply(&mut self, b: &mut Batch, now: Timestamp) {
        for p in b.iter_mut() {
            let t = p.anno().timestamp.signed_nanos();
            if t == 0 {
                continue;
            }
            let delta = if self.now {
                now.signed_nanos().saturating_sub(t)
            } else {
                if self.first == 0 {
                    self.first = t;
                }
                t.saturating_sub(self.first)
            };
            p.anno_mut().timestamp = Timestamp::from_signed_nanos(delta);
        }
    }
}

impl Element for SetTimestampDelta {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch, cx.now());
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let now = cx.now();
        cx.pull_with(out, max, |b, _| self.apply(b, now));
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "first").then(|| unparse_time(self.first))
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                self.first = 0;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (SetTimestampDelta has `reset`)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("first"), Handler::w("reset")];
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

    #[test]
    fn range_counts_from_the_first_nonzero_timestamp() {
        let s = 1_000_000_000u64;
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [0, 5 * s, 5 * s + s / 10, 4 * s].map(at));
        h.push_packets(0, [7 * s].map(at));
        let got: Vec<i64> = h
            .take(0)
            .iter()
            .map(|p| p.anno().timestamp.signed_nanos())
            .collect();
        let s = s as i64;
        assert_eq!(got, [0, 0, s / 10, -s, 2 * s]);
    }

    #[test]
    fn first_handler_and_reset() {
        let mut e = make_element(&CLASS, "TYPE RANGE", &PortInfo::default()).unwrap();
        assert_eq!(e.read_handler("first").as_deref(), Some("0.000000"));
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [at(2_500_000_000)]);
        h.write_handler("reset", "").unwrap();
        h.push_packets(0, [at(3_000_000_000), at(3_000_001_000)]);
        let got: Vec<u64> = h.take(0).iter().map(|p| p.anno().timestamp.0).collect();
        assert_eq!(got, [0, 0, 1000]);
        assert!(e.write_handler("first", "").is_err());
    }

    #[test]
    fn types() {
        let ports = PortInfo::default();
        assert!(make_element(&CLASS, "TYPE NOW", &ports).is_ok());
        assert!(make_element(&CLASS, "TYPE FIRST", &ports).is_err());
        assert!(make_element(&CLASS, "TYPE LATER", &ports).is_err());
    }
}
