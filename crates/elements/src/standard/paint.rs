//! `Paint`, `PaintTee`, `CheckPaint` and `PaintSwitch`: set, test and
//! switch on the paint annotation (Click's way of remembering which
//! interface a packet came in on, and bricks' QoS route selection's way of
//! naming the output a source route or flow record chose).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats,
};

/// The `Paint` class.
pub static PAINT: ElementClass = ElementClass {
    name: "Paint",
    ports: "1/1",
    processing: "a/a",
    manual: &PAINT_MANUAL,
    make: make_paint,
};

/// The `PaintTee` class.
pub static PAINT_TEE: ElementClass = ElementClass {
    name: "PaintTee",
    ports: "1/2",
    processing: "a/ah",
    manual: &PAINT_TEE_MANUAL,
    make: make_paint_tee,
};

/// The `CheckPaint` class.
pub static CHECK_PAINT: ElementClass = ElementClass {
    name: "CheckPaint",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &CHECK_PAINT_MANUAL,
    make: make_check_paint,
};

/// The `PaintSwitch` class (Click's `elements/standard/paintswitch.cc`).
pub static PAINT_SWITCH: ElementClass = ElementClass {
    name: "PaintSwitch",
    ports: "1/-",
    processing: "h/h",
    manual: &PAINT_SWITCH_MANUAL,
    make: make_paint_switch,
};

static PAINT_SWITCH_MANUAL: Manual = Manual {
    summary: "sends each packet to the output its paint annotation names",
    synopsis: "PaintSwitch([ANNO])",
    description: "Sends every packet out of the output whose number is its paint \
        annotation. A packet whose paint names no output of the element is dropped and \
        counted. In bricks' QoS Baseline router (conf/qos/null_look_*.click) it sends \
        each packet to the output port its source route's hop named \
        (SourceRouteLookup paints it). ANNO, Click's annotation offset, may only be \
        PAINT (the default): bricks' annotations are named fields, not bytes.",
    ports: "one push input; push outputs, one per paint colour used",
    keywords: &[Keyword {
        name: "ANNO",
        ty: "annotation name",
        default: Some("PAINT"),
        doc: "the annotation that names the output; only PAINT; positional",
    }],
    counters: &[("drops", "packets whose paint names no output, dropped")],
    example: "InfiniteSource(LIMIT 2) -> Paint(1) -> ps :: PaintSwitch; ps[0] -> Discard; \
        ps[1] -> Print(one) -> Discard;",
    see_also: &["Paint", "SourceRouteLookup", "FlowLookup"],
};

static PAINT_MANUAL: Manual = Manual {
    summary: "sets the paint annotation",
    synopsis: "Paint(COLOR)",
    description: "Sets each packet's paint annotation to COLOR (0-255). Routers paint \
        packets with the number of the interface they arrived on so that PaintTee can \
        spot packets that leave by the same interface (ICMP redirects).",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> Paint(2) -> Discard;",
    see_also: &["PaintTee", "CheckPaint"],
};

static PAINT_TEE_MANUAL: Manual = Manual {
    summary: "copies packets with a given paint to output 1",
    synopsis: "PaintTee(COLOR)",
    description: "Sends every packet to output 0. A packet whose paint annotation equals \
        COLOR is also copied to output 1. In an IP router, output 1 feeds an ICMP redirect \
        generator: a packet about to leave by the interface it came in on.",
    ports: "one input; output 0 agnostic, output 1 push",
    keywords: &[],
    counters: &[("copies", "packets copied to output 1")],
    example:
        "InfiniteSource(LIMIT 1) -> Paint(1) -> pt :: PaintTee(1) -> Discard; pt[1] -> Discard;",
    see_also: &["Paint", "ICMPError"],
};

static CHECK_PAINT_MANUAL: Manual = Manual {
    summary: "passes packets with a given paint",
    synopsis: "CheckPaint(COLOR)",
    description: "Packets whose paint annotation equals COLOR go to output 0. Others go to \
        output 1 if it is connected, and are dropped and counted otherwise.",
    ports: "one input; output 0 agnostic, optional output 1 push",
    keywords: &[],
    counters: &[("drops", "packets of another colour dropped (no output 1)")],
    example: "InfiniteSource(LIMIT 1) -> Paint(3) -> CheckPaint(3) -> Discard;",
    see_also: &["Paint"],
};

fn make_paint_switch(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    if let Some(anno) = args.read_p::<String>("ANNO")? {
        if !anno.eq_ignore_ascii_case("PAINT") {
            return Err(ArgError::new(format!(
                "ANNO `{anno}`: bricks switches on the paint annotation only (PAINT)"
            )));
        }
    }
    Ok(Box::new(PaintSwitch {
        noutputs: ports.noutputs(),
        drops: 0,
    }))
}

fn make_paint(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(Paint {
        color: args.read_mp("COLOR")?,
    }))
}

fn make_paint_tee(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(PaintTee {
        color: args.read_mp("COLOR")?,
        copies: 0,
    }))
}

fn make_check_paint(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(CheckPaint {
        color: args.read_mp("COLOR")?,
        has_reject: ports.noutputs() > 1,
        drops: 0,
    }))
}

/// Sets the paint annotation.
#[derive(Debug)]
pub struct Paint {
    color: u8,
}

impl Element for Paint {
    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "color").then(|| self.color.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "color" => {
                self.color = u8::from_arg(value.trim())
                    .map_err(|why| format!("COLOR: expected 0-255, {why}"))?;
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}` (Paint has `color`)")),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 1] = [Handler::rw("color")];
        &HANDLERS
    }

    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        for p in batch.iter_mut() {
            p.anno_mut().paint = self.color;
        }
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| {
            for p in b.iter_mut() {
                p.anno_mut().paint = self.color;
            }
        });
    }
}

/// Copies packets of one colour to output 1.
#[derive(Debug)]
pub struct PaintTee {
    color: u8,
    copies: u64,
}

impl PaintTee {
    fn copy(&mut self, b: &Batch, cx: &mut Context<'_>) {
        // The usual batch has no packet of the colour (a router's
        // redirect check): one scan, with nothing to count or push.
        if b.iter().all(|p| p.anno().paint != self.color) {
            return;
        }
        let mut copies = Batch::new();
        for p in b.iter().filter(|p| p.anno().paint == self.color) {
            let _ = copies.push(p.duplicate());
        }
        self.copies += copies.len() as u64;
        cx.push(1, &mut copies);
    }
}

impl Element for PaintTee {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.copy(batch, cx);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, cx| self.copy(b, cx));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("copies", self.copies);
    }
}

/// Passes packets of one colour.
#[derive(Debug)]
pub struct CheckPaint {
    color: u8,
    has_reject: bool,
    drops: u64,
}

impl CheckPaint {
    #[inline]
    fn verdict(&mut self, paint: u8) -> Option<usize> {
        if paint == self.color {
            Some(0)
        } else if self.has_reject {
            Some(1)
        } else {
            self.drops += 1;
            None
        }
    }
}

impl Element for CheckPaint {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p.anno().paint));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p.anno().paint));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }
}

/// Sends packets to the output their paint names.
#[derive(Debug)]
pub struct PaintSwitch {
    noutputs: usize,
    drops: u64,
}

impl Element for PaintSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let n = self.noutputs;
        let drops = &mut self.drops;
        cx.push_classified(batch, |p| {
            let out = p.anno().paint as usize;
            if out < n {
                Some(out)
            } else {
                *drops += 1;
                None
            }
        });
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Packet;
    use bricks_runtime::testing::Harness;

    #[test]
    fn color_handler() {
        let mut h = Harness::push(&PAINT, "3", 1, 1);
        assert_eq!(h.read_handler("color").as_deref(), Ok("3"));
        h.write_handler("color", "7").unwrap();
        assert_eq!(h.read_handler("color").as_deref(), Ok("7"));
        assert!(h.write_handler("color", "256").is_err());
        h.push_bytes(0, &[0; 20]);
        assert_eq!(h.take(0)[0].anno().paint, 7);
    }

    fn painted(color: u8, tag: u8) -> Packet {
        let mut p = Packet::from_slice(&[tag; 4]).unwrap();
        p.anno_mut().paint = color;
        p
    }

    #[test]
    fn paint_sets_annotation() {
        let mut h = Harness::push(&PAINT, "7", 1, 1);
        h.push_bytes(0, &[0; 4]);
        assert_eq!(h.take(0)[0].anno().paint, 7);
    }

    #[test]
    fn paint_tee_copies_matching() {
        let mut h = Harness::push(&PAINT_TEE, "1", 1, 2);
        h.push_packets(0, [painted(1, 1), painted(2, 2), painted(1, 3)]);
        assert_eq!(h.take_bytes(0), vec![vec![1; 4], vec![2; 4], vec![3; 4]]);
        assert_eq!(h.take_bytes(1), vec![vec![1; 4], vec![3; 4]]);
        assert_eq!(h.stats().get("copies"), Some(2));
    }

    #[test]
    fn check_paint_splits_or_drops() {
        let mut h = Harness::push(&CHECK_PAINT, "1", 1, 2);
        h.push_packets(0, [painted(1, 1), painted(2, 2)]);
        assert_eq!(h.take_bytes(0), vec![vec![1; 4]]);
        assert_eq!(h.take_bytes(1), vec![vec![2; 4]]);
        let mut h = Harness::push(&CHECK_PAINT, "1", 1, 1);
        h.push_packets(0, [painted(1, 1), painted(2, 2)]);
        assert_eq!(h.take_bytes(0), vec![vec![1; 4]]);
        assert_eq!(h.stats().get("drops"), Some(1));
    }

    #[test]
    fn paint_switch_sends_by_paint_and_drops_out_of_range() {
        let mut h = Harness::push(&PAINT_SWITCH, "", 1, 3);
        h.push_packets(
            0,
            [
                painted(2, 1),
                painted(0, 2),
                painted(3, 3),
                painted(2, 4),
                painted(255, 5),
            ],
        );
        assert_eq!(h.take_bytes(0), vec![vec![2; 4]]);
        assert!(h.take_bytes(1).is_empty());
        assert_eq!(h.take_bytes(2), vec![vec![1; 4], vec![4; 4]]);
        assert_eq!(h.stats().get("drops"), Some(2));
    }

    #[test]
    fn paint_switch_takes_paint_only() {
        let ok =
            bricks_runtime::testing::make_element(&PAINT_SWITCH, "ANNO PAINT", &Default::default());
        ok.unwrap();
        let e = bricks_runtime::testing::make_element(
            &PAINT_SWITCH,
            "ANNO AGGREGATE",
            &Default::default(),
        );
        assert!(e.unwrap_err().contains("PAINT"));
    }

    #[test]
    fn colour_must_fit_a_byte() {
        let e = bricks_runtime::testing::make_element(&PAINT, "256", &Default::default());
        assert!(e.unwrap_err().contains("COLOR"));
    }
}
