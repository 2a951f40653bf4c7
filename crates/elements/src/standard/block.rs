//! `Block`: splits packets by the forward-rate annotation that Click's
//! `IPRateMonitor` sets (Click's `elements/standard/block.cc`), so that
//! packets of hosts sending faster than a threshold can be dropped.
//!
//! Click keeps that annotation, `FWD_RATE_ANNO`, as a signed 32-bit word
//! at annotation offset 20: packets or bytes per second, as the monitor
//! counts them. bricks' annotation at that offset is `flow` (Click's
//! `AGGREGATE_ANNO` shares it too), so Block reads `flow` as a signed
//! number, as Click reads the shared word.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo,
};

/// The `Block` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Block",
    ports: "1/2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "drops packets with high rate",
    synopsis: "Block(THRESH)",
    description: "Splits packets by their forward-rate annotation, the rate at which their \
        source sends (packets or bytes per second) as Click's IPRateMonitor sets it: a packet \
        whose rate is at most THRESH goes to output 0, any other to output 1 (usually a \
        Discard). THRESH 0 sends every packet to output 0. The annotation is a signed 32-bit \
        number; it shares Click's annotation offset 20 with the aggregate annotation, and in \
        bricks it is the `flow` annotation, read as signed (AggregateIPFlows and the flow \
        classifiers also set it; a packet nothing annotated has 0). The `thresh` handler \
        reads THRESH and writes a new one. Pulled (Click leaves that case undefined), output \
        0 returns the packets at or under THRESH and the others are pushed to output 1.",
    ports: "one input; output 0 agnostic, output 1 push",
    keywords: &[Keyword {
        name: "THRESH",
        ty: "integer (32-bit)",
        default: None,
        doc: "highest rate that goes to output 0; 0 sends every packet there; positional",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 4) -> b :: Block(500); b[0] -> Discard; b[1] -> Discard;",
    see_also: &["RatedSplitter", "Meter", "AggregateIPFlows"],
};

/// An integer as Click's `IntArg` reads it into an `int`.
fn parse_thresh(text: &str) -> Result<i32, String> {
    let v = i64::from_arg(text.trim())?;
    i32::try_from(v).map_err(|_| format!("{v} is out of range for a 32-bit integer"))
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let text: String = args.read_mp("THRESH")?;
    let thresh = parse_thresh(&text).map_err(|e| ArgError::new(format!("THRESH: {e}")))?;
    Ok(Box::new(Block { thresh }))
}

/// Splits packets by their rate annotation.
#[derive(Debug)]
pub struct Block {
    thresh: i32,
}

impl Block {
    #[inline]
    fn classify(&self, p: &Packet) -> Option<usize> {
        let rate = p.anno().flow as i32;
        Some(usize::from(self.thresh != 0 && rate > self.thresh))
    }
}

impl Element for Block {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if self.thresh == 0 {
            cx.push(0, batch);
            return;
        }
        cx.push_classified(batch, |p| self.classify(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.classify(p));
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "thresh").then(|| self.thresh.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        if handler != "thresh" {
            return Err(format!("no write handler `{handler}` (Block has `thresh`)"));
        }
        // Click's messages: exactly one argument, an integer.
        let args = bricks_config::split_args(value);
        let [arg] = args.as_slice() else {
            return Err("expecting 1 integer".into());
        };
        self.thresh = parse_thresh(arg).map_err(|e| format!("not an integer: {e}"))?;
        Ok(())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("thresh")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    /// A TCP SYN in IPv4, 40 bytes, its rate annotation set to `rate` and
    /// its last byte (the urgent pointer) to `tag`.
    fn syn(rate: i32, tag: u8) -> Packet {
        let mut b = vec![
            0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0xa4, 0x98, 192, 0, 2, 1,
            192, 0, 2, 2, // IPv4
            0xc0, 0x01, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0,
        ];
        b.push(tag);
        let mut p = Packet::from_slice(&b).unwrap();
        p.anno_mut().flow = rate as u32;
        p
    }

    fn tags(h: &mut Harness, port: usize) -> Vec<u8> {
        h.take(port).iter().map(|p| p.data()[39]).collect()
    }

    #[test]
    fn splits_at_the_threshold_signed() {
        let mut h = Harness::push(&CLASS, "500", 1, 2);
        h.push_packets(
            0,
            [
                syn(0, 0),
                syn(500, 1),
                syn(501, 2),
                syn(-1, 3),
                syn(i32::MAX, 4),
                syn(i32::MIN, 5),
            ],
        );
        assert_eq!(tags(&mut h, 0), [0, 1, 3, 5]);
        assert_eq!(tags(&mut h, 1), [2, 4]);
    }

    #[test]
    fn zero_passes_everything_and_negative_blocks_zero() {
        let mut h = Harness::push(&CLASS, "0", 1, 2);
        h.push_packets(0, [syn(1 << 30, 0), syn(-7, 1)]);
        assert_eq!(tags(&mut h, 0), [0, 1]);
        let mut h = Harness::push(&CLASS, "-10", 1, 2);
        h.push_packets(0, [syn(0, 0), syn(-10, 1), syn(-11, 2)]);
        assert_eq!(tags(&mut h, 0), [1, 2]);
        assert_eq!(tags(&mut h, 1), [0]);
    }

    #[test]
    fn short_packets_are_split_by_annotation_alone() {
        let mut h = Harness::push(&CLASS, "5", 1, 2);
        let mut p = Packet::from_slice(&[]).unwrap();
        p.anno_mut().flow = 6;
        h.push_packets(0, [p]);
        assert_eq!(h.take(1).len(), 1);
    }

    #[test]
    fn thresh_handler() {
        let mut h = Harness::push(&CLASS, "500", 1, 2);
        assert_eq!(h.read_handler("thresh").as_deref(), Ok("500"));
        h.write_handler("thresh", " 100 ").unwrap();
        assert_eq!(h.read_handler("thresh").as_deref(), Ok("100"));
        h.push_packets(0, [syn(101, 0)]);
        assert_eq!(tags(&mut h, 1), [0]);
        assert_eq!(
            h.write_handler("thresh", "1, 2").unwrap_err(),
            "expecting 1 integer"
        );
        assert_eq!(
            h.write_handler("thresh", "").unwrap_err(),
            "expecting 1 integer"
        );
        let e = h.write_handler("thresh", "lots").unwrap_err();
        assert!(e.starts_with("not an integer"), "{e}");
        assert!(h.write_handler("thresh", "4294967296").is_err());
        assert!(h.write_handler("limit", "1").is_err());
        assert_eq!(h.read_handler("thresh").as_deref(), Ok("100"));
    }

    #[test]
    fn pulled_output_returns_what_passes() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull, Processing::Push],
        };
        let mut h = Harness::new(&CLASS, "10", ports);
        h.feed(0, [syn(5, 0), syn(50, 1), syn(10, 2)]);
        let got: Vec<u8> = h.pull(0, 8).iter().map(|p| p.data()[39]).collect();
        assert_eq!(got, [0, 2]);
        assert_eq!(tags(&mut h, 1), [1]);
    }

    #[test]
    fn arguments_are_checked() {
        let two = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; 2],
        };
        assert!(make_element(&CLASS, "", &two).is_err());
        assert!(make_element(&CLASS, "x", &two).is_err());
        assert!(make_element(&CLASS, "3000000000", &two).is_err());
        assert!(make_element(&CLASS, "1, 2", &two).is_err());
        assert!(make_element(&CLASS, "THRESH 7", &two).is_ok());
    }

    #[test]
    fn runs_in_a_configuration() {
        use crate::standard::testrun::{count, run};
        run(MANUAL.example);
        // Nothing set the annotation: every packet is at rate 0.
        let s = run("InfiniteSource(LIMIT 5) -> b :: Block(-1); \
            b[0] -> a :: Discard; b[1] -> d :: Discard;");
        assert_eq!((count(&s, "a", "count"), count(&s, "d", "count")), (0, 5));
    }
}
