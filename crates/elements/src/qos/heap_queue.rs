//! `HeapQueue`: packets sorted exactly by their deadline annotation, a
//! binary heap (Hardekopf et al. §5.1's perfect sort, O(log n) per
//! packet: the cost the paper rules out at line rate, here for
//! comparison with `BinSortQueue`).

use super::memrefs;
use super::ordered::{
    deadline_of, memrefs_doc, queue, read_capacity, Discipline, COUNTERS, MEM_COUNTERS,
};
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, Packet, PortInfo};
use bricks_qos::order::{Counters, DeadlineHeap, Order};

/// The `HeapQueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "HeapQueue",
    ports: "1/1",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "hands out packets earliest deadline first (exact sort, a binary heap)",
    synopsis: "HeapQueue([CAPACITY, MEMREFS bool])",
    description: concat!(
        "Takes pushed packets and hands out, when pulled, the one whose deadline \
        annotation is earliest; packets with equal deadlines leave in the order they came \
        (the heap is keyed on deadline and arrival sequence), so the output is a stable \
        sort by deadline. A packet with no deadline (0) is ordered as if its deadline were \
        the time it arrived. The queue is work-conserving: a packet leaves before its \
        deadline when nothing earlier is held. Enqueue and dequeue take O(log n) steps for \
        n packets held. A packet arriving when CAPACITY packets are held is dropped and \
        counted. Deadlines come from VirtualClock or any element that sets the annotation; \
        times are the engine clock's (`--clock trace` makes them follow the packets).",
        memrefs_doc!()
    ),
    ports: "one push input; one pull output",
    keywords: &[
        Keyword {
            name: "CAPACITY",
            ty: "unsigned",
            default: Some("1000"),
            doc: "most packets held (1 to 16777216)",
        },
        memrefs::KEYWORD,
    ],
    counters: &[
        COUNTERS[0],
        COUNTERS[1],
        COUNTERS[2],
        COUNTERS[3],
        COUNTERS[4],
        COUNTERS[5],
        MEM_COUNTERS[0],
        MEM_COUNTERS[1],
        MEM_COUNTERS[2],
        MEM_COUNTERS[3],
        MEM_COUNTERS[4],
        MEM_COUNTERS[5],
        MEM_COUNTERS[6],
    ],
    example: "InfiniteSource(LIMIT 10, LENGTH 100) -> VirtualClock(RATE 8Mbps) \
        -> HeapQueue(100) -> Unqueue -> Discard;",
    see_also: &["VirtualClock", "BinSortQueue", "FIFOQueue"],
};

impl<const M: bool> Discipline for DeadlineHeap<Packet, M> {
    const MEMREFS: bool = M;

    #[inline]
    fn put(&mut self, p: Packet, now: u64) -> Result<(), Packet> {
        let d = deadline_of(&p, now);
        self.enqueue(p, d, now)
    }

    #[inline]
    fn take(&mut self, _port: usize, _outputs: usize, now: u64) -> Option<Packet> {
        self.dequeue(now)
    }

    fn counters(&self) -> Counters {
        Order::counters(self)
    }

    fn clear(&mut self) {
        Order::clear(self, &mut drop);
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let capacity = read_capacity(args)?;
    let e = |e: bricks_qos::order::OrderError| ArgError::new(e.to_string());
    Ok(if args.memrefs()? {
        queue(
            DeadlineHeap::<Packet, true>::new(capacity).map_err(e)?,
            1,
            CLASS.name,
        )
    } else {
        queue(
            DeadlineHeap::<Packet>::new(capacity).map_err(e)?,
            1,
            CLASS.name,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::ordered::testing::{frame, ports, tags};
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    #[test]
    fn earliest_deadline_first_stable() {
        let mut h = Harness::new(&CLASS, "4", ports(1));
        h.advance_to(Timestamp(5_000));
        // Tag 3 has no deadline: it counts as arriving at 5,000.
        let ds = [(0u8, 9_000u64), (1, 7_000), (2, 9_000), (3, 0), (4, 1)];
        h.push_packets(0, ds.iter().map(|&(t, d)| frame([10, 0, 0, 2], t, d)));
        assert_eq!(h.stats().get("drops"), Some(1));
        h.advance_to(Timestamp(8_000));
        let got = h.pull(0, 10);
        assert_eq!(tags(&got), vec![3, 1, 0, 2]);
        // The deadline annotation leaves with the packet.
        assert_eq!(got[1].anno().deadline, 7_000);
        // Tag 3 (5,000) and tag 1 (7,000) left at 8,000: late.
        assert_eq!(h.stats().get("late"), Some(2));
    }
}
