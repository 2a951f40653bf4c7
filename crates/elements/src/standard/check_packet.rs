//! `CheckPacket`: a test element that compares every packet with a
//! specification (data, length, alignment) and prints an error for each
//! mismatch, as Click's `elements/test/checkpacket.cc`.
//!
//! Errors go to standard error as Click's default error handler writes
//! them: `NAME :: CheckPacket: bad length 5 (wanted 6)`. A packet that
//! fails a check is not treated differently: the element only reports.

use bricks_element::{
    args::Data, ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use std::fmt::Write;

/// The `CheckPacket` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CheckPacket",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "checks packets against a specification",
    synopsis: "CheckPacket(KEYWORDS)",
    description: "Compares every packet against a specification given by keyword \
        arguments and prints an error message to standard error for each test a packet \
        fails, as Click's error handler does: `NAME :: CheckPacket: bad length 5 (wanted \
        6)`, `... data too short (3 bytes, wanted 4)`, `... data too long (...)`, `... bad \
        data (does not match)`, `... bad alignment (4/2, expected 4/0)`. Only the tests \
        whose keywords are given run; CheckPacket() accepts every packet. DATA must match \
        the packet from DATA_OFFSET to its end exactly (a longer packet is `too long`). \
        Specify at most one of LENGTH (or LENGTH_EQ), LENGTH_GE and LENGTH_LE. ALIGNMENT \
        checks where the packet data starts in memory: OFFSET bytes past a multiple of \
        MODULUS.\n\n\
        Differences from Click: every packet goes on out of the output (Click's \
        CheckPacket returns no packet: it swallows, and leaks, each one); the `failures` \
        counter is a bricks addition; lengths must be 0 or more (Click ignores a negative \
        one); LENGTH_GE 0 accepts every packet (Click's bound wraps and reports every one); \
        an ALIGNMENT MODULUS that is not a power of two is applied as a remainder (Click \
        masks with MODULUS-1, which only works for powers of two).",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "DATA",
            ty: "string or data (\\<hex>)",
            default: None,
            doc: "the packet's contents from DATA_OFFSET on",
        },
        Keyword {
            name: "DATA_OFFSET",
            ty: "unsigned integer",
            default: Some("0"),
            doc: "where in the packet DATA starts",
        },
        Keyword {
            name: "LENGTH",
            ty: "unsigned integer",
            default: None,
            doc: "the packet's length must equal LENGTH (LENGTH_EQ: the same)",
        },
        Keyword {
            name: "LENGTH_GE",
            ty: "unsigned integer",
            default: None,
            doc: "the packet's length must be at least LENGTH_GE",
        },
        Keyword {
            name: "LENGTH_LE",
            ty: "unsigned integer",
            default: None,
            doc: "the packet's length must be at most LENGTH_LE",
        },
        Keyword {
            name: "ALIGNMENT",
            ty: "`MODULUS OFFSET`, two integers",
            default: None,
            doc: "the data must start OFFSET bytes past a MODULUS-byte boundary \
                  (MODULUS at least 2, OFFSET below it)",
        },
    ],
    counters: &[(
        "failures",
        "packets that failed at least one test (a bricks addition)",
    )],
    example: "InfiniteSource(DATA \\<00 01 02 03>, LIMIT 2) \
        -> CheckPacket(DATA \\<02 03>, DATA_OFFSET 2, LENGTH 4) -> Discard;",
    see_also: &["Print", "Align"],
};

/// The length test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LengthTest {
    /// LENGTH / LENGTH_EQ.
    Equal(u64),
    /// LENGTH_GE.
    AtLeast(u64),
    /// LENGTH_LE.
    AtMost(u64),
}

impl LengthTest {
    /// Click's message when a packet of `len` bytes fails, `None` when it
    /// passes. Click keeps LENGTH_GE n as `> n-1` and LENGTH_LE n as
    /// `< n+1`, and says so.
    fn failure(self, len: u64) -> Option<String> {
        match self {
            LengthTest::Equal(n) if len != n => Some(format!("bad length {len} (wanted {n})")),
            LengthTest::AtLeast(n) if len < n => {
                Some(format!("bad length {len} (wanted > {})", n - 1))
            }
            LengthTest::AtMost(n) if len > n => {
                Some(format!("bad length {len} (wanted < {})", n + 1))
            }
            _ => None,
        }
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(configure(args)?))
}

fn configure(args: &mut Args<'_>) -> Result<CheckPacket, ArgError> {
    let data: Option<Data> = args.read("DATA")?;
    let data_offset: u32 = args.read("DATA_OFFSET")?.unwrap_or(0);
    let length: Option<u32> = args.read("LENGTH")?;
    // Click reads both into one variable; the later keyword wins.
    let length = args.read::<u32>("LENGTH_EQ")?.or(length);
    let at_least: Option<u32> = args.read("LENGTH_GE")?;
    let at_most: Option<u32> = args.read("LENGTH_LE")?;
    let alignment: Option<String> = args.read("ALIGNMENT")?;
    let length = match (length, at_least, at_most) {
        (None, None, None) => None,
        (Some(n), None, None) => Some(LengthTest::Equal(n.into())),
        (None, Some(n), None) => Some(LengthTest::AtLeast(n.into())),
        (None, None, Some(n)) => Some(LengthTest::AtMost(n.into())),
        _ => {
            return Err(ArgError::new(
                "specify at most one of LENGTH_EQ, LENGTH_GE, and LENGTH_LE",
            ))
        }
    };
    let alignment = alignment.map(|a| parse_alignment(&a)).transpose()?;
    Ok(CheckPacket {
        data: data.map(|d| d.0),
        data_offset: data_offset as usize,
        length,
        alignment,
        failures: 0,
    })
}

/// ALIGNMENT's `MODULUS OFFSET`.
fn parse_alignment(text: &str) -> Result<(usize, usize), ArgError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let [m, o] = words[..] else {
        return Err(ArgError::new(format!(
            "bad ALIGNMENT `{text}`: expected `MODULUS OFFSET`, two integers"
        )));
    };
    let (Ok(m), Ok(o)) = (m.parse::<i64>(), o.parse::<i64>()) else {
        return Err(ArgError::new(format!(
            "bad ALIGNMENT `{text}`: expected `MODULUS OFFSET`, two integers"
        )));
    };
    if m <= 1 || o < 0 || o >= m {
        return Err(ArgError::new("bad alignment modulus and/or offset"));
    }
    // Both fit: 0 <= o < m, and m came from a word of a configuration.
    Ok((
        usize::try_from(m).unwrap_or(usize::MAX),
        usize::try_from(o).unwrap_or(0),
    ))
}

/// Checks packets and reports mismatches.
#[derive(Debug)]
pub struct CheckPacket {
    data: Option<Vec<u8>>,
    data_offset: usize,
    length: Option<LengthTest>,
    /// (MODULUS, OFFSET).
    alignment: Option<(usize, usize)>,
    failures: u64,
}

impl CheckPacket {
    /// Click's messages for the tests `p` fails, in Click's order
    /// (length, data, alignment); empty when it passes.
    fn failures_of(&self, p: &Packet) -> Vec<String> {
        let mut out = Vec::new();
        let len = p.len();
        if let Some(msg) = self.length.and_then(|t| t.failure(len as u64)) {
            out.push(msg);
        }
        if let Some(data) = &self.data {
            let want = data.len().saturating_add(self.data_offset);
            if len < want {
                out.push(format!("data too short ({len} bytes, wanted {want})"));
            } else if len > want {
                out.push(format!("data too long ({len} bytes, wanted {want})"));
            } else if p.data().get(self.data_offset..) != Some(&data[..]) {
                out.push("bad data (does not match)".to_string());
            }
        }
        if let Some((modulus, offset)) = self.alignment {
            let at = p.data().as_ptr() as usize % modulus;
            if at != offset {
                out.push(format!(
                    "bad alignment ({modulus}/{at}, expected {modulus}/{offset})"
                ));
            }
        }
        out
    }

    fn check(&mut self, b: &Batch, cx: &Context<'_>) {
        for p in b.iter() {
            let failed = self.failures_of(p);
            if failed.is_empty() {
                continue;
            }
            self.failures += 1;
            let mut text = String::new();
            for msg in failed {
                let _ = writeln!(text, "{} :: CheckPacket: {msg}", cx.name());
            }
            eprint!("{text}");
        }
    }
}

impl Element for CheckPacket {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.check(batch, cx);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, cx| self.check(b, cx));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("failures", self.failures);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testrun::{count, run};
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    fn checker(args: &str) -> CheckPacket {
        let parsed = bricks_runtime::testing::parse_args(args).unwrap();
        let mut a = Args::new(&parsed, None);
        let c = configure(&mut a).unwrap();
        a.complete().unwrap();
        c
    }

    fn pkt(bytes: &[u8]) -> Packet {
        Packet::from_slice(bytes).unwrap()
    }

    #[test]
    fn length_tests_with_clicks_messages() {
        let c = checker("LENGTH 4");
        assert!(c.failures_of(&pkt(&[0; 4])).is_empty());
        assert_eq!(c.failures_of(&pkt(&[0; 5])), ["bad length 5 (wanted 4)"]);
        let c = checker("LENGTH_EQ 0");
        assert!(c.failures_of(&pkt(&[])).is_empty());
        assert_eq!(c.failures_of(&pkt(&[1])), ["bad length 1 (wanted 0)"]);
        let c = checker("LENGTH_GE 10");
        assert!(c.failures_of(&pkt(&[0; 10])).is_empty());
        assert_eq!(c.failures_of(&pkt(&[0; 9])), ["bad length 9 (wanted > 9)"]);
        let c = checker("LENGTH_LE 10");
        assert!(c.failures_of(&pkt(&[0; 10])).is_empty());
        assert_eq!(
            c.failures_of(&pkt(&[0; 11])),
            ["bad length 11 (wanted < 11)"]
        );
        // Click's bound wraps here; bricks accepts every packet.
        assert!(checker("LENGTH_GE 0").failures_of(&pkt(&[])).is_empty());
    }

    #[test]
    fn data_tests_with_clicks_messages() {
        let c = checker("DATA \\<02 03>, DATA_OFFSET 2");
        assert!(c.failures_of(&pkt(&[0, 1, 2, 3])).is_empty());
        assert_eq!(
            c.failures_of(&pkt(&[0, 1, 2])),
            ["data too short (3 bytes, wanted 4)"]
        );
        assert_eq!(
            c.failures_of(&pkt(&[0, 1, 2, 3, 4])),
            ["data too long (5 bytes, wanted 4)"]
        );
        assert_eq!(
            c.failures_of(&pkt(&[9, 9, 2, 4])),
            ["bad data (does not match)"]
        );
        let c = checker("DATA \"Hi\"");
        assert!(c.failures_of(&pkt(b"Hi")).is_empty());
        // An empty DATA: the packet must end at DATA_OFFSET.
        let c = checker("DATA \"\", DATA_OFFSET 1");
        assert!(c.failures_of(&pkt(&[7])).is_empty());
        assert_eq!(c.failures_of(&pkt(&[])).len(), 1);
        // A huge offset does not overflow.
        let c = checker("DATA x, DATA_OFFSET 4294967295");
        assert_eq!(
            c.failures_of(&pkt(&[0; 8])),
            ["data too short (8 bytes, wanted 4294967296)"]
        );
    }

    #[test]
    fn every_failed_test_is_reported_in_order() {
        let c = checker("DATA \\<01>, LENGTH 3, ALIGNMENT 2 1");
        let p = pkt(&[0, 0]);
        let odd = p.data().as_ptr() as usize % 2 == 1;
        let got = c.failures_of(&p);
        assert_eq!(got[0], "bad length 2 (wanted 3)");
        assert_eq!(got[1], "data too long (2 bytes, wanted 1)");
        assert_eq!(got.len(), if odd { 2 } else { 3 });
    }

    #[test]
    fn alignment_is_where_the_data_starts() {
        let mut p = pkt(&[0; 64]);
        let at = p.data().as_ptr() as usize % 8;
        let c = checker(&format!("ALIGNMENT 8 {at}"));
        assert!(c.failures_of(&p).is_empty());
        p.pull_front(1);
        let next = (at + 1) % 8;
        assert_eq!(
            c.failures_of(&p),
            [format!("bad alignment (8/{next}, expected 8/{at})")]
        );
    }

    #[test]
    fn packets_pass_and_failures_are_counted() {
        let mut h = Harness::push(&CLASS, "LENGTH 2", 1, 1);
        h.push_packets(0, [pkt(&[1, 2]), pkt(&[1]), pkt(&[1, 2, 3])]);
        assert_eq!(h.take(0).len(), 3);
        assert_eq!(h.stats().get("failures"), Some(2));
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [pkt(&[]), pkt(&[0; 1500])]);
        assert_eq!(h.take(0).len(), 2);
        assert_eq!(h.stats().get("failures"), Some(0));
    }

    #[test]
    fn arguments_are_checked() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("").is_ok());
        let e = m("LENGTH 2, LENGTH_GE 1").unwrap_err();
        assert!(e.contains("specify at most one"), "{e}");
        assert!(m("LENGTH_GE 1, LENGTH_LE 3").is_err());
        assert!(m("LENGTH 2, LENGTH_EQ 3").is_ok());
        assert!(m("LENGTH -1").unwrap_err().contains("LENGTH"));
        assert!(m("DATA_OFFSET -1").unwrap_err().contains("DATA_OFFSET"));
        for bad in ["1 0", "4 4", "4 -1", "0 0"] {
            let e = m(&format!("ALIGNMENT {bad}")).unwrap_err();
            assert!(
                e.contains("bad alignment modulus and/or offset"),
                "{bad}: {e}"
            );
        }
        for bad in ["4", "4 0 1", "four 0"] {
            let e = m(&format!("ALIGNMENT {bad}")).unwrap_err();
            assert!(e.contains("MODULUS OFFSET"), "{bad}: {e}");
        }
        assert!(m("ALIGNMENT 4 3").is_ok());
        assert!(m("3").unwrap_err().contains("too many"));
        assert!(m("LENGTH_GT 3").unwrap_err().contains("LENGTH_GT"));
    }

    #[test]
    fn the_example_runs() {
        let s = run(CLASS.manual.example);
        assert_eq!(count(&s, "CheckPacket@2", "failures"), 0, "{}", s.render());
    }
}
