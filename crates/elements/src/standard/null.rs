//! `Null`: passes packets on unchanged (Click's `elements/standard/nullelement.cc`).

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
    fn refuses_arguments() {
        let e = bricks_runtime::testing::make_element(&CLASS, "1", &Default::default());
        assert!(e.is_err());
    }
}
