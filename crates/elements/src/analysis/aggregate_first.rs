//! `AggregateFirst`: lets through the first packet of each aggregate
//! (Click's `elements/analysis/aggregatefirst.cc`).
//!
//! Click marks aggregates seen in a bitmap that grows by rows of 1024
//! aggregates, up to 512 MB. This one keeps the aggregates seen in a set
//! of at most CAPACITY; a packet of a new aggregate beyond that is
//! treated as Click treats one it has no room for: it leaves by output 1
//! (or is dropped), and is counted in `overflows`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_packet::MAX_BATCH;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `AggregateFirst` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AggregateFirst",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

/// Default CAPACITY: aggregates remembered at most.
pub const DEFAULT_CAPACITY: usize = 1 << 20;
/// Largest CAPACITY.
pub const MAX_CAPACITY: usize = 1 << 26;

static MANUAL: Manual = Manual {
    summary: "lets through first packet per aggregate annotation",
    synopsis: "AggregateFirst([KEYWORDS])",
    description: "Forwards only the first packet with each value of the aggregate \
        annotation; later packets of an aggregate leave by output 1, or are dropped. The \
        aggregates seen are shared by every worker. Differences from Click: bricks remembers \
        at most CAPACITY aggregates (Click: a bitmap of up to 512 MB); a packet of a new \
        aggregate beyond that leaves by output 1 as Click's does when it has no memory, and \
        is counted in `overflows`. NOTIFIER is accepted and not used: bricks' \
        AggregateIPFlows announces no deleted flows, and as it never reuses a number the \
        packets let through are the same; only the memory is not given back.",
    ports: "one input, push or pull; output 0 like the input, output 1 (optional) push",
    keywords: &[
        Keyword {
            name: "NOTIFIER",
            ty: "element name",
            default: Some("none"),
            doc: "an AggregateIPFlows announcing deleted aggregates; accepted, not used",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned (bricks only)",
            default: Some("1048576"),
            doc: "most aggregates remembered; from 1 to 67108864",
        },
    ],
    counters: &[
        ("aggregates", "aggregates seen"),
        ("firsts", "packets let through as the first of their aggregate"),
        ("overflows", "packets of a new aggregate refused because CAPACITY was reached"),
    ],
    example: "InfiniteSource(LIMIT 3, STOP true) -> AggregateLength -> af :: AggregateFirst -> Discard;\n\
              af[1] -> Discard;",
    see_also: &[
        "AggregateLast",
        "AggregateIP",
        "AggregateIPFlows",
        "AggregateCounter",
        "AggregateFilter",
    ],
};

#[derive(Debug, Default)]
struct Seen {
    aggs: HashSet<u32>,
    firsts: u64,
    overflows: u64,
}

#[derive(Debug)]
struct Shared {
    seen: Mutex<Seen>,
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _notifier = args.read::<String>("NOTIFIER")?;
    let capacity = super::read_capacity(args, DEFAULT_CAPACITY, MAX_CAPACITY)?;
    let sh = args.shared(|_| {
        Ok(Shared {
            seen: Mutex::new(Seen::default()),
        })
    })?;
    Ok(Box::new(AggregateFirst {
        sh,
        capacity,
        two_outputs: ports.noutputs() > 1,
    }))
}

/// One worker's AggregateFirst.
#[derive(Debug)]
pub struct AggregateFirst {
    sh: Arc<Shared>,
    capacity: usize,
    two_outputs: bool,
}

impl AggregateFirst {
    fn lock(&self) -> MutexGuard<'_, Seen> {
        self.sh.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `agg` is new (Click's `smaction`).
    fn first(&self, s: &mut Seen, agg: u32) -> bool {
        if s.aggs.contains(&agg) {
            return false;
        }
        if s.aggs.len() >= self.capacity {
            s.overflows += 1;
            return false;
        }
        s.aggs.insert(agg);
        s.firsts += 1;
        true
    }

    /// Output of each packet of `batch`: 0 for a first, 1 (or a drop).
    fn verdicts(&self, batch: &Batch) -> [bool; MAX_BATCH] {
        let mut firsts = [false; MAX_BATCH];
        let mut s = self.lock();
        for (f, p) in firsts.iter_mut().zip(batch.iter()) {
            *f = self.first(&mut s, p.anno().flow);
        }
        firsts
    }

    fn port(&self, first: bool) -> Option<usize> {
        if first {
            Some(0)
        } else {
            self.two_outputs.then_some(1)
        }
    }
}

impl Element for AggregateFirst {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let firsts = self.verdicts(batch);
        cx.push_classified_by(batch, &firsts, |_: &mut Packet, f| self.port(f));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        cx.pull(0, &mut b, max);
        if b.is_empty() {
            return;
        }
        let firsts = self.verdicts(&b);
        for (p, &f) in b.drain().zip(firsts.iter()) {
            match self.port(f) {
                Some(0) => {
                    let _ = out.push(p);
                }
                Some(port) => cx.push_one(port, p),
                None => drop(p),
            }
        }
    }

    fn stats(&self, st: &mut Stats) {
        let s = self.lock();
        st.counter("aggregates", s.aggs.len() as u64);
        st.counter("firsts", s.firsts);
        st.counter("overflows", s.overflows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    /// A TCP SYN 18.26.4.44:1024 -> 10.0.0.4:80, IP ID `id`, aggregate `agg`.
    fn syn(id: u8, agg: u32) -> Packet {
        let b = [
            0x45, 0x00, 0x00, 0x28, 0x00, id, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, 18, 26, 4, 44,
            10, 0, 0, 4, 0x04, 0x00, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0x20, 0x00, 0,
            0, 0, 0,
        ];
        let mut p = Packet::from_slice(&b).unwrap();
        p.anno_mut().flow = agg;
        p
    }

    fn ids(ps: &[Packet]) -> Vec<u8> {
        ps.iter().map(|p| p.data()[5]).collect()
    }

    #[test]
    fn first_packet_of_each_aggregate_passes() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_packets(
            0,
            [
                syn(1, 7),
                syn(2, 7),
                syn(3, 0),
                syn(4, 8),
                syn(5, 0),
                syn(6, 8),
            ],
        );
        assert_eq!(ids(&h.take(0)), vec![1, 3, 4]);
        assert_eq!(ids(&h.take(1)), vec![2, 5, 6]);
        h.push_packets(0, [syn(7, 7), syn(8, u32::MAX)]);
        assert_eq!(ids(&h.take(0)), vec![8]);
        assert_eq!(h.stats().get("aggregates"), Some(4));
        assert_eq!(h.stats().get("firsts"), Some(4));
    }

    #[test]
    fn later_packets_are_dropped_without_output_1() {
        let mut h = Harness::push(&CLASS, "NOTIFIER af", 1, 1);
        h.push_packets(0, [syn(1, 7), syn(2, 7)]);
        assert_eq!(ids(&h.take(0)), vec![1]);
    }

    #[test]
    fn capacity_bounds_the_set() {
        let mut h = Harness::push(&CLASS, "CAPACITY 2", 1, 2);
        h.push_packets(0, [syn(1, 1), syn(2, 2), syn(3, 3), syn(4, 1)]);
        assert_eq!(ids(&h.take(0)), vec![1, 2]);
        assert_eq!(ids(&h.take(1)), vec![3, 4]);
        assert_eq!(h.stats().get("overflows"), Some(1));
        let push = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        assert!(Harness::try_new(&CLASS, "CAPACITY 0", push.clone()).is_err());
        assert!(Harness::try_new(&CLASS, "BOGUS 1", push).is_err());
    }

    #[test]
    fn pull_returns_firsts_and_pushes_the_rest() {
        let mut h = Harness::new(
            &CLASS,
            "",
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Pull, Processing::Push],
            },
        );
        h.feed(0, [syn(1, 5), syn(2, 5), syn(3, 6)]);
        assert_eq!(ids(&h.pull(0, 8)), vec![1, 3]);
        assert_eq!(ids(&h.take(1)), vec![2]);
    }
}
