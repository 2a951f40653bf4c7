//! `RoundRobinSched` and `PrioSched`: pull schedulers over several inputs.
//! `SimpleRoundRobinSched` and `SimplePrioSched` (`simple_sched.rs`) are
//! the same schedulers under Click's names for its notifier-less variants.

use bricks_element::{ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo};

/// The `RoundRobinSched` class.
pub static ROUND_ROBIN: ElementClass = ElementClass {
    name: "RoundRobinSched",
    ports: "1-/1",
    processing: "l/l",
    manual: &RR_MANUAL,
    make: make_rr,
};

/// The `PrioSched` class.
pub static PRIO: ElementClass = ElementClass {
    name: "PrioSched",
    ports: "1-/1",
    processing: "l/l",
    manual: &PRIO_MANUAL,
    make: make_prio,
};

static RR_MANUAL: Manual = Manual {
    summary: "pulls from its inputs in turn",
    synopsis: "RoundRobinSched",
    description: "Each packet pulled from the output comes from the next input in turn \
        that has one (packet-by-packet round robin, as Click's). A batch pull of N packets \
        is N such turns, so inputs share the output fairly whatever the batch size.",
    ports: "one or more pull inputs; one pull output",
    keywords: &[],
    counters: &[],
    example: "q1 :: Queue; q2 :: Queue; rr :: RoundRobinSched; \
        InfiniteSource(LIMIT 4) -> q1 -> [0]rr; InfiniteSource(LIMIT 4) -> q2 -> [1]rr; \
        rr -> Unqueue -> Discard;",
    see_also: &["PrioSched", "Queue"],
};

static PRIO_MANUAL: Manual = Manual {
    summary: "pulls from the first input that has packets",
    synopsis: "PrioSched",
    description: "Strict priority: a pull is served from input 0 while it has packets, then \
        from input 1, and so on.",
    ports: "one or more pull inputs; one pull output",
    keywords: &[],
    counters: &[],
    example: "hi :: Queue; lo :: Queue; p :: PrioSched; \
        InfiniteSource(LIMIT 4) -> hi -> [0]p; InfiniteSource(LIMIT 4) -> lo -> [1]p; \
        p -> Unqueue -> Discard;",
    see_also: &["RoundRobinSched"],
};

fn make_rr(_args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(RoundRobinSched::new(ports.ninputs())))
}

fn make_prio(_args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(PrioSched::new(ports.ninputs())))
}

/// Round-robin over inputs.
#[derive(Debug)]
pub struct RoundRobinSched {
    inputs: usize,
    next: usize,
}

impl RoundRobinSched {
    /// A scheduler over `inputs` inputs (none is allowed: every pull then
    /// finds nothing), starting with input 0.
    pub(crate) fn new(inputs: usize) -> RoundRobinSched {
        RoundRobinSched { inputs, next: 0 }
    }
}

/// Click's flag `S0`: a scheduler with no inputs never has packets; with
/// inputs it has no signal of its own and the question goes upstream.
fn empty_without_inputs(inputs: usize) -> Option<bool> {
    (inputs == 0).then_some(false)
}

impl Element for RoundRobinSched {
    fn empty_signal(&self, _port: usize) -> Option<bool> {
        empty_without_inputs(self.inputs)
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut got = 0;
        let mut empty_in_a_row = 0;
        // The next input in a local, wrapped by a compare: no division and
        // no store to the element per packet.
        let mut next = self.next;
        while got < max && empty_in_a_row < self.inputs {
            let before = out.len();
            cx.pull(next, out, 1);
            next += 1;
            if next == self.inputs {
                next = 0;
            }
            if out.len() > before {
                got += 1;
                empty_in_a_row = 0;
            } else {
                empty_in_a_row += 1;
            }
        }
        self.next = next;
    }
}

/// Strict priority over inputs.
#[derive(Debug)]
pub struct PrioSched {
    inputs: usize,
}

impl PrioSched {
    /// A scheduler over `inputs` inputs, input 0 first (none is allowed:
    /// every pull then finds nothing).
    pub(crate) fn new(inputs: usize) -> PrioSched {
        PrioSched { inputs }
    }
}

impl Element for PrioSched {
    fn empty_signal(&self, _port: usize) -> Option<bool> {
        empty_without_inputs(self.inputs)
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let target = (out.len() + max).min(bricks_packet::MAX_BATCH);
        for i in 0..self.inputs {
            let want = target - out.len();
            if want == 0 {
                break;
            }
            cx.pull(i, out, want);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    fn ports(n: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull; n],
            outputs: vec![Processing::Pull],
        }
    }

    fn tagged(tag: u8, n: usize) -> Vec<Packet> {
        (0..n)
            .map(|_| Packet::from_slice(&[tag]).unwrap())
            .collect()
    }

    #[test]
    fn round_robin_alternates_and_skips_empty() {
        let mut h = Harness::new(&ROUND_ROBIN, "", ports(3));
        h.feed(0, tagged(0, 3));
        h.feed(2, tagged(2, 1));
        let got: Vec<u8> = h.pull(0, 10).iter().map(|p| p.data()[0]).collect();
        assert_eq!(got, vec![0, 2, 0, 0]);
    }

    #[test]
    fn prio_serves_first_input_first() {
        let mut h = Harness::new(&PRIO, "", ports(2));
        h.feed(0, tagged(0, 2));
        h.feed(1, tagged(1, 5));
        let got: Vec<u8> = h.pull(0, 4).iter().map(|p| p.data()[0]).collect();
        assert_eq!(got, vec![0, 0, 1, 1]);
    }
}
