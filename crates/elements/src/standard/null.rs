//! `Null`: passes packets on unchanged (Click's `elements/standard/nullelement.cc`),
//! with its push-only, pull-only and `Null1` variants (`nulls.hh`).

use bricks_element::{ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo};

/// The `Null` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Null",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

/// `PushNull`: `Null` on a push path only (Click's name).
pub static PUSH_NULL: ElementClass = ElementClass {
    name: "PushNull",
    ports: "1/1",
    processing: "h/h",
    manual: &PUSH_MANUAL,
    make,
};

/// `PullNull`: `Null` on a pull path only (Click's name).
pub static PULL_NULL: ElementClass = ElementClass {
    name: "PullNull",
    ports: "1/1",
    processing: "l/l",
    manual: &PULL_MANUAL,
    make,
};

/// `Null1`: a `Null` under another class name (Click's `nulls.hh`).
pub static NULL1: ElementClass = ElementClass {
    name: "Null1",
    ports: "1/1",
    processing: "a/a",
    manual: &NULL1_MANUAL,
    make,
};

static NULL1_MANUAL: Manual = Manual {
    summary: "copy of Null",
    synopsis: "Null1",
    description: "Passes every packet from its input to its output unchanged, pushed or \
        pulled, exactly as Null does. Click has Null1 to Null8 as separate copies of Null's \
        code, to measure the instruction-cache cost of distinct elements; in bricks Null1 \
        is a distinct class name with Null's code, so it keeps Click configurations working \
        but adds no instruction-cache cost of its own.",
    ports: "one input, one output; agnostic",
    example: "InfiniteSource(LIMIT 2) -> Null1 -> Queue -> Null1 -> Unqueue -> Discard;",
    see_also: &["Null"],
    ..MANUAL
};

static PUSH_MANUAL: Manual = Manual {
    summary: "passes pushed packets unchanged",
    synopsis: "PushNull",
    description: "Passes every packet pushed into it to its output unchanged; a push-only \
        Null, which makes a configuration's push path explicit.",
    ports: "one push input, one push output",
    example: "InfiniteSource(LIMIT 2) -> PushNull -> Discard;",
    see_also: &["Null", "PullNull"],
    ..MANUAL
};

static PULL_MANUAL: Manual = Manual {
    summary: "passes pulled packets unchanged",
    synopsis: "PullNull",
    description: "Hands on every packet pulled through it unchanged; a pull-only Null, which \
        makes a configuration's pull path explicit.",
    ports: "one pull input, one pull output",
    example: "InfiniteSource(LIMIT 2) -> Queue -> PullNull -> Unqueue -> Discard;",
    see_also: &["Null", "PushNull"],
    ..MANUAL
};

static MANUAL: Manual = Manual {
    summary: "passes packets unchanged",
    synopsis: "Null",
    description: "Passes every packet from its input to its output unchanged, pushed or \
        pulled: a placeholder in a configuration, or a named point to attach handlers to.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LIMIT 2) -> Null -> Queue -> Null -> Unqueue -> Discard;",
    see_also: &["Counter"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(Null))
}

/// Passes packets unchanged.
#[derive(Debug)]
pub struct Null;

impl Element for Null {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push(0, batch);
    }

    #[inline]
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull(0, out, max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    const FRAME: [u8; 14] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x06,
    ];

    #[test]
    fn push_and_pull_variants_fix_their_processing() {
        assert_eq!(PUSH_NULL.processing, "h/h");
        assert_eq!(PULL_NULL.processing, "l/l");
        let mut h = Harness::push(&PUSH_NULL, "", 1, 1);
        h.push_bytes(0, &FRAME);
        assert_eq!(h.take_bytes(0), vec![FRAME.to_vec()]);
    }

    #[test]
    fn pushes_unchanged() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &FRAME);
        assert_eq!(h.take_bytes(0), vec![FRAME.to_vec()]);
    }

    #[test]
    fn pulls_unchanged() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "", ports);
        h.feed(0, [Packet::from_slice(&FRAME).unwrap()]);
        let got = h.pull(0, 8);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data(), &FRAME);
        assert!(h.pull(0, 8).is_empty());
    }

    #[test]
    fn null1_is_null_under_its_own_name() {
        assert_eq!(NULL1.name, "Null1");
        assert_eq!((NULL1.ports, NULL1.processing), ("1/1", "a/a"));
        let mut h = Harness::push(&NULL1, "", 1, 1);
        h.push_bytes(0, &FRAME);
        h.push_bytes(0, &FRAME[..1]);
        assert_eq!(h.take_bytes(0), vec![FRAME.to_vec(), FRAME[..1].to_vec()]);
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&NULL1, "", ports);
        h.feed(0, [Packet::from_slice(&FRAME).unwrap()]);
        assert_eq!(h.pull(0, 8)[0].data(), &FRAME);
        assert!(bricks_runtime::testing::make_element(&NULL1, "1", &Default::default()).is_err());
    }

    #[test]
    fn refuses_arguments() {
        let e = bricks_runtime::testing::make_element(&CLASS, "1", &Default::default());
        assert!(e.is_err());
    }

    #[test]
    fn null1_runs_in_a_configuration() {
        let s = crate::standard::testrun::run(NULL1_MANUAL.example);
        assert!(!s.elements.is_empty());
    }
}
