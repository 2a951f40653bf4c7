//! `AggregatePaint`: sets the aggregate annotation from the paint
//! annotation (Click's `elements/analysis/aggregatepaint.cc`).
//!
//! The aggregate annotation is the packet's `flow` annotation, as for
//! AggregateIP and AggregateIPFlows.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
};

/// The `AggregatePaint` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AggregatePaint",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets aggregate annotation based on paint annotation",
    synopsis: "AggregatePaint([BITS, KEYWORDS])",
    description: "Sets the aggregate annotation of every passing packet to the low BITS \
        bits of its paint annotation (all 8 by default). With INCREMENTAL, a paint value V \
        turns an aggregate O into O * 2^BITS + V, modulo 2^32. Same as Click.",
    ports: "one input, one output; push or pull",
    keywords: &[
        Keyword {
            name: "BITS",
            ty: "integer (positional)",
            default: Some("8"),
            doc: "low bits of the paint annotation used, from 1 to 8",
        },
        Keyword {
            name: "INCREMENTAL",
            ty: "boolean",
            default: Some("false"),
            doc: "shift the old aggregate left by BITS and add the paint bits",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 2, STOP true) -> Paint(5) -> AggregatePaint(2) \
        -> AggregateCounter -> Discard;",
    see_also: &[
        "Paint",
        "AggregateLength",
        "AggregateIPFlows",
        "AggregateCounter",
        "AggregateIP",
    ],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let bits = args.read_p::<i64>("BITS")?.unwrap_or(8);
    let incremental = args.read::<bool>("INCREMENTAL")?.unwrap_or(false);
    if !(1..=8).contains(&bits) {
        return Err(ArgError::new("bad number of bits"));
    }
    Ok(Box::new(AggregatePaint {
        bits: bits as u32,
        incremental,
    }))
}

/// One worker's AggregatePaint.
#[derive(Debug)]
pub struct AggregatePaint {
    bits: u32,
    incremental: bool,
}

impl AggregatePaint {
    fn classify(&self, p: &mut Packet) -> Option<usize> {
        let v = u32::from(p.anno().paint) & ((1 << self.bits) - 1);
        let a = &mut p.anno_mut().flow;
        *a = if self.incremental {
            (*a << self.bits).wrapping_add(v)
        } else {
            v
        };
        Some(0)
    }
}

impl Element for AggregatePaint {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.classify(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.classify(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    fn run(args: &str, annos: &[(u8, u32)]) -> Vec<u32> {
        let mut h = Harness::push(&CLASS, args, 1, 1);
        h.push_packets(
            0,
            annos.iter().map(|&(paint, flow)| {
                let mut p = Packet::from_slice(&[0x45, 0, 0, 20]).unwrap();
                p.anno_mut().paint = paint;
                p.anno_mut().flow = flow;
                p
            }),
        );
        h.take(0).iter().map(|p| p.anno().flow).collect()
    }

    #[test]
    fn low_bits_of_the_paint() {
        assert_eq!(run("", &[(0xab, 7), (0, 9)]), vec![0xab, 0]);
        assert_eq!(run("2", &[(0xab, 7)]), vec![3]);
        assert_eq!(run("BITS 1", &[(0xab, 7)]), vec![1]);
    }

    #[test]
    fn incremental_shifts_the_old_aggregate() {
        assert_eq!(run("2, INCREMENTAL true", &[(0xab, 7)]), vec![7 * 4 + 3]);
        assert_eq!(run("INCREMENTAL true", &[(1, 0x8000_0000)]), vec![1]);
    }

    #[test]
    fn bits_from_1_to_8() {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        for bad in ["0", "9", "-1", "BITS x"] {
            assert!(
                Harness::try_new(&CLASS, bad, ports.clone()).is_err(),
                "{bad}"
            );
        }
        let e = Harness::try_new(&CLASS, "9", ports).err().unwrap();
        assert!(e.contains("bad number of bits"), "{e}");
    }
}
