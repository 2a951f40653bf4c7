//! `SetTimestamp`: sets the timestamp annotation (Click's
//! `elements/standard/settimestamp.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo,
};
use bricks_packet::Timestamp;

/// The `SetTimestamp` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetTimestamp",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets the timestamp annotation",
    synopsis: "SetTimestamp([TIMESTAMP, FIRST, DELTA])",
    description: "Sets each packet's timestamp annotation to TIMESTAMP, seconds since the \
        epoch (`1000000000.5`), or, without it, to the current time of the router's clock \
        (the capture's time in a `--clock trace` run; the time of the scheduling round, \
        so a batch shares one stamp). Click's FIRST keyword (the first-timestamp \
        annotation) and DELTA (the time since it) are refused: bricks packets have one \
        timestamp; `FIRST false` and `DELTA false` are accepted.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "TIMESTAMP",
            ty: "seconds since the epoch",
            default: Some("now"),
            doc: "the stamp to set; positional",
        },
        Keyword {
            name: "FIRST",
            ty: "boolean",
            default: Some("false"),
            doc: "only false (bricks has no first-timestamp annotation)",
        },
        Keyword {
            name: "DELTA",
            ty: "boolean",
            default: Some("false"),
            doc: "only false (bricks has no first-timestamp annotation)",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> SetTimestamp(1000000000.25) -> Discard;",
    see_also: &["Print"],
};

/// Parses `SECS[.FRACTION]` exactly (no floating point).
fn parse_timestamp(text: &str) -> Result<Timestamp, String> {
    let t = text.trim();
    let (secs, frac) = t.split_once('.').unwrap_or((t, ""));
    let bad = || format!("expected seconds since the epoch (1000000000.5), found `{text}`");
    if secs.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    if !secs.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let s: u64 = if secs.is_empty() {
        0
    } else {
        secs.parse().map_err(|_| bad())?
    };
    if frac.len() > 9 {
        return Err(format!("`{text}`: at most nine digits after the point"));
    }
    let nanos: u32 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse().map_err(|_| bad())?
    };
    s.checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(u64::from(nanos)))
        .map(Timestamp)
        .ok_or_else(|| format!("`{text}` is too far in the future"))
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let stamp = match args.read_p::<String>("TIMESTAMP")? {
        Some(t) => Some(
            parse_timestamp(&t).map_err(|why| ArgError::new(format!("bad TIMESTAMP: {why}")))?,
        ),
        None => None,
    };
    if args.read::<bool>("FIRST")?.unwrap_or(false) {
        return Err(ArgError::new(
            "FIRST true: bricks packets have no first-timestamp annotation",
        ));
    }
    if args.read::<bool>("DELTA")?.unwrap_or(false) {
        return Err(ArgError::new(
            "DELTA true: bricks packets have no first-timestamp annotation to subtract",
        ));
    }
    Ok(Box::new(SetTimestamp { stamp }))
}

/// Sets the timestamp annotation.
#[derive(Debug)]
pub struct SetTimestamp {
    /// The fixed stamp, or `None` for the router's time.
    stamp: Option<Timestamp>,
}

impl SetTimestamp {
    #[inline]
    fn stamp(&self, b: &mut Batch, now: Timestamp) {
        let t = self.stamp.unwrap_or(now);
        for p in b.iter_mut() {
            p.anno_mut().timestamp = t;
        }
    }
}

impl Element for SetTimestamp {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.stamp(batch, cx.now());
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, cx| self.stamp(b, cx.now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    const ARP: [u8; 14] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x06,
    ];

    #[test]
    fn stamps_the_router_time() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.advance_to(Timestamp(7_000_000_123));
        h.push_bytes(0, &ARP);
        let p = h.take(0);
        assert_eq!(p[0].anno().timestamp, Timestamp(7_000_000_123));
        assert_eq!(p[0].data(), &ARP);
    }

    #[test]
    fn stamps_a_given_time() {
        let mut h = Harness::push(&CLASS, "1000000000.25", 1, 1);
        h.push_bytes(0, &ARP);
        assert_eq!(
            h.take(0)[0].anno().timestamp,
            Timestamp(1_000_000_000_250_000_000)
        );
    }

    #[test]
    fn parses_exactly_and_refuses_garbage() {
        assert_eq!(parse_timestamp("1.000000001"), Ok(Timestamp(1_000_000_001)));
        assert_eq!(parse_timestamp("2"), Ok(Timestamp(2_000_000_000)));
        for bad in [
            "",
            ".",
            "-1",
            "1.2.3",
            "1e9",
            "1.0000000001",
            "99999999999999999999",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad}");
        }
        assert!(make_element(&CLASS, "FIRST true", &Default::default()).is_err());
        assert!(make_element(&CLASS, "FIRST false", &Default::default()).is_ok());
        assert!(make_element(&CLASS, "DELTA true", &Default::default()).is_err());
        assert!(make_element(&CLASS, "1.5, DELTA false", &Default::default()).is_ok());
    }
}
