//! `RoundRobinSwitch`: Click's round-robin splitter. Each packet goes to
//! the output after the previous packet's, so N outputs get every N-th
//! packet: the per-packet balancing of Bianco et al.'s ODB balancer when
//! each output rewrites the MAC of one router (`StoreEtherAddress`).
//!
//! Each worker turns its own rotation (Click's multithreaded version
//! shares one counter and tolerates the odd skip; a per-worker counter
//! needs no atomic on the path and is exact per worker).

use bricks_element::{ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo};

/// The `RoundRobinSwitch` class.
pub static CLASS: ElementClass = ElementClass {
    name: "RoundRobinSwitch",
    ports: "1/1-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sends packets to its outputs in turn",
    synopsis: "RoundRobinSwitch",
    description: "Pushes each arriving packet to one of its N outputs: the first to output \
        0, the next to output 1, and so on, back to 0 after N-1. Each worker keeps its own \
        turn, so with several workers every worker's packets are spread evenly (Click \
        shares one turn among threads and may skip). A batch is split in order: every \
        output receives its packets in the order they arrived.",
    ports: "one push input; one or more push outputs",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LIMIT 4) -> s :: RoundRobinSwitch; \
        s[0] -> Discard; s[1] -> Discard;",
    see_also: &[
        "HashSwitch",
        "RoundRobinSched",
        "L2Balancer",
        "StoreEtherAddress",
    ],
};

fn make(_args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(RoundRobinSwitch {
        next: 0,
        n: ports.noutputs().max(1),
    }))
}

/// Hands packets to outputs in turn.
#[derive(Debug)]
pub struct RoundRobinSwitch {
    next: usize,
    n: usize,
}

impl Element for RoundRobinSwitch {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let n = self.n;
        if n == 1 {
            cx.push(0, batch);
            return;
        }
        let next = &mut self.next;
        cx.push_classified(batch, |_| {
            let o = *next;
            *next = if o + 1 >= n { 0 } else { o + 1 };
            Some(o)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Packet;
    use bricks_runtime::testing::Harness;

    fn numbered(n: u8) -> Vec<Packet> {
        (0..n)
            .map(|i| Packet::from_slice(&[i; 20]).unwrap())
            .collect()
    }

    fn firsts(h: &mut Harness, port: usize) -> Vec<u8> {
        h.take(port).iter().map(|p| p.data()[0]).collect()
    }

    #[test]
    fn outputs_in_turn_across_batches() {
        let mut h = Harness::push(&CLASS, "", 1, 3);
        h.push_packets(0, numbered(7));
        h.push_packets(0, numbered(2));
        // The second batch carries on where the first stopped.
        assert_eq!(firsts(&mut h, 0), [0, 3, 6]);
        assert_eq!(firsts(&mut h, 1), [1, 4, 0]);
        assert_eq!(firsts(&mut h, 2), [2, 5, 1]);
    }

    #[test]
    fn even_over_many_packets() {
        let mut h = Harness::push(&CLASS, "", 1, 4);
        for _ in 0..100 {
            h.push_packets(0, numbered(33));
        }
        let counts: Vec<usize> = (0..4).map(|o| h.take(o).len()).collect();
        assert_eq!(counts.iter().sum::<usize>(), 3300);
        assert!(counts.iter().all(|&c| c == 825), "{counts:?}");
    }

    #[test]
    fn one_output_takes_everything() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, numbered(5));
        assert_eq!(h.take(0).len(), 5);
    }

    #[test]
    fn takes_no_arguments() {
        let e = bricks_runtime::testing::make_element(&CLASS, "3", &PortInfo::default());
        assert!(e.unwrap_err().contains("too many"));
    }
}
