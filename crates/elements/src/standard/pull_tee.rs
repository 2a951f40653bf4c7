//! `PullTee`: the pull counterpart of `Tee` (Click's
//! `elements/standard/tee.cc`): packets pulled from output 0 are copied to
//! every other (push) output.

use bricks_element::{ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo};

/// The `PullTee` class.
pub static CLASS: ElementClass = ElementClass {
    name: "PullTee",
    ports: "1/1-",
    processing: "l/lh",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "copies pulled packets to push outputs",
    synopsis: "PullTee([N])",
    description: "Output 0 is pull: a packet pulled from it is pulled from the input, and a \
        copy of it is pushed out of each other output (1 to N-1) before it is returned. \
        N, if given, must equal the number of connected outputs (Click's check).",
    ports: "one pull input; pull output 0, push outputs 1 and up",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LIMIT 3) -> Queue -> t :: PullTee(2) -> Unqueue -> Discard; \
        t[1] -> Print(copy) -> Discard;",
    see_also: &["Tee"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let n: Option<usize> = args.read_p("N")?;
    if let Some(n) = n {
        if n != ports.noutputs() {
            return Err(ArgError::new(format!(
                "PullTee({n}) has {} connected output{}",
                ports.noutputs(),
                if ports.noutputs() == 1 { "" } else { "s" }
            ))
            .with_help("connect outputs 0 to N-1, or drop the argument"));
        }
    }
    Ok(Box::new(PullTee {
        outputs: ports.noutputs().max(1),
    }))
}

/// Copies pulled packets to its push outputs.
#[derive(Debug)]
pub struct PullTee {
    outputs: usize,
}

impl Element for PullTee {
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let outputs = self.outputs;
        cx.pull_with(out, max, |b, cx| {
            for port in 1..outputs {
                let mut copies = Batch::new();
                for p in b.iter() {
                    let _ = copies.push(p.duplicate());
                }
                cx.push(port, &mut copies);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    #[test]
    fn pulled_packets_are_copied_to_push_outputs() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull, Processing::Push, Processing::Push],
        };
        let mut h = Harness::new(&CLASS, "3", ports);
        let arp = [
            0xffu8, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 1, 2, 3, 4, 5, 0x08, 0x06,
        ];
        h.feed(0, [Packet::from_slice(&arp).unwrap()]);
        let got = h.pull(0, 4);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data(), &arp);
        assert_eq!(h.take_bytes(1), vec![arp.to_vec()]);
        assert_eq!(h.take_bytes(2), vec![arp.to_vec()]);
        // Nothing to pull: no copies either.
        assert!(h.pull(0, 4).is_empty());
        assert!(h.take_bytes(1).is_empty());
    }

    #[test]
    fn n_must_match_outputs() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull, Processing::Push],
        };
        let e = bricks_runtime::testing::make_element(&CLASS, "3", &ports);
        assert!(e
            .unwrap_err()
            .contains("PullTee(3) has 2 connected outputs"));
    }
}
