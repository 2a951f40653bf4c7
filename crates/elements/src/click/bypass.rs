//! `Bypass`: a path that a handler switches in and out, as Click's
//! `elements/standard/bypass.cc`.
//!
//! Click rewires an inactive Bypass's neighbours so that packets skip it
//! (its "zero overhead"); bricks keeps it in the graph, where a push or a
//! pull through it is one port choice and a hand-over of the whole batch,
//! so INLINE is accepted and changes nothing.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo,
};

/// The `Bypass` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Bypass",
    ports: "1-2/1-2",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sends packets through an optional bypass path",
    synopsis: "Bypass([ACTIVE, KEYWORDS INLINE])",
    description: "Normally forwards packets from input 0 to output 0, like Null. While \
        ACTIVE is true, a push Bypass sends the packets of input 0 to output 1 instead, \
        and a pull Bypass answers pulls on output 0 from input 1. The second input of a \
        push Bypass (the second output of a pull one) joins the bypass path back: \
        packets pushed into input 1 leave on output 0, and pulls on output 1 are answered \
        from input 0. Without a second output (push) or input (pull) ACTIVE changes \
        nothing. The `active` handler reads and sets ACTIVE while the router runs. Click \
        rewires an inactive Bypass's neighbours so that packets skip it; bricks keeps it \
        in place, where it costs one choice per batch, and accepts INLINE for \
        compatibility.",
    ports: "one or two inputs and one or two outputs, agnostic",
    keywords: &[
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("false"),
            doc: "send packets through the bypass path (output 1 or input 1); positional",
        },
        Keyword {
            name: "INLINE",
            ty: "boolean",
            default: Some("false"),
            doc: "Click: stay in the graph instead of rewiring the neighbours; bricks \
                always does",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 4, STOP true) -> b :: Bypass -> Print(A) -> Discard; \
        b[1] -> Print(B) -> [1]b; Script(wait 0.1, write b.active true)",
    see_also: &["Switch", "PullSwitch", "Null"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let active: bool = args.read_p("ACTIVE")?.unwrap_or(false);
    let _inline: Option<bool> = args.read("INLINE")?;
    Ok(Box::new(Bypass {
        active,
        two_outputs: ports.noutputs() > 1,
        two_inputs: ports.ninputs() > 1,
    }))
}

/// Forwards to the normal or the bypass path.
#[derive(Debug)]
pub struct Bypass {
    active: bool,
    two_outputs: bool,
    two_inputs: bool,
}

impl Element for Bypass {
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let out = usize::from(self.active && port == 0 && self.two_outputs);
        cx.push(out, batch);
    }

    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let input = usize::from(self.active && port == 0 && self.two_inputs);
        cx.pull(input, out, max);
    }

    /// Output 1 always pulls input 0, so a pull that comes back into an
    /// active Bypass through its bypass path passes it by.
    fn pull_passes_to(&self, port: usize) -> Option<usize> {
        (port == 1).then_some(0)
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "active").then(|| self.active.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "active" => {
                self.active = bool::from_arg(value.trim())
                    .map_err(|why| format!("active takes a boolean: {why}"))?;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (Bypass has `active`)"
            )),
        }
    }

    fn config_keyword(&self, handler: &str) -> Option<&'static str> {
        (handler == "active").then_some("ACTIVE")
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("active")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    fn tagged(tag: u8) -> Packet {
        Packet::from_slice(&[tag; 4]).unwrap()
    }

    fn ports(p: Processing, n: usize) -> PortInfo {
        PortInfo {
            inputs: vec![p; n],
            outputs: vec![p; n],
        }
    }

    #[test]
    fn push_switches_input_0_between_the_paths() {
        let mut h = Harness::new(&CLASS, "", ports(Processing::Push, 2));
        h.push_packets(0, [tagged(1)]);
        assert_eq!(h.take(0).len(), 1);
        h.write_handler("active", "true").unwrap();
        assert_eq!(h.read_handler("active").as_deref(), Ok("true"));
        h.push_packets(0, [tagged(2)]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.take(1).len(), 1);
        // The way back joins the normal path, active or not.
        h.push_packets(1, [tagged(3)]);
        assert_eq!(h.take(0).len(), 1);
        assert!(h.write_handler("active", "maybe").is_err());
    }

    #[test]
    fn one_output_ignores_active() {
        let mut h = Harness::new(
            &CLASS,
            "ACTIVE true, INLINE true",
            ports(Processing::Push, 1),
        );
        h.push_packets(0, [tagged(1)]);
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn pull_switches_output_0_between_the_inputs() {
        let mut h = Harness::new(&CLASS, "true", ports(Processing::Pull, 2));
        h.feed(0, [tagged(0x10)]);
        h.feed(1, [tagged(0x11)]);
        assert_eq!(h.pull(0, 8)[0].data()[0], 0x11);
        h.write_handler("active", "false").unwrap();
        assert_eq!(h.pull(0, 8)[0].data()[0], 0x10);
        // Output 1 always pulls from input 0.
        h.feed(0, [tagged(0x12)]);
        assert_eq!(h.pull(1, 8)[0].data()[0], 0x12);
    }
}
