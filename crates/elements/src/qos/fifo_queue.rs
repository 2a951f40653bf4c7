//! `FIFOQueue`: a bounded FIFO as a circular array (Hardekopf et al.
//! §5.2, the "fifo" packet ordering of the twelve service architectures).

use super::memrefs;
use super::ordered::{memrefs_doc, queue, read_capacity, Discipline, COUNTERS, MEM_COUNTERS};
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, Packet, PortInfo};
use bricks_qos::order::{Counters, Fifo, Order};

/// The `FIFOQueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FIFOQueue",
    ports: "1/1",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores packets in a bounded FIFO kept in a circular array",
    synopsis: "FIFOQueue([CAPACITY, MEMREFS bool])",
    description: concat!(
        "Takes pushed packets and hands them out, oldest first, when pulled, like \
        Queue, from a circular array of CAPACITY slots reserved up front (the paper's FIFO \
        packet ordering: O(1) and a handful of memory references per packet, whatever the \
        deadlines). A packet arriving when the array is full is dropped and counted. \
        Deadline annotations are not used for the order, only to count packets pulled after \
        their deadline (`late`). Click has no FIFOQueue: its Queue is the same thing.",
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
    example: "InfiniteSource(LIMIT 10) -> FIFOQueue(100) -> Unqueue -> Discard;",
    see_also: &["Queue", "HashFIFOQueue", "HeapQueue", "BinSortQueue"],
};

impl<const M: bool> Discipline for Fifo<Packet, M> {
    const MEMREFS: bool = M;

    #[inline]
    fn put(&mut self, p: Packet, now: u64) -> Result<(), Packet> {
        let d = p.anno().deadline;
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
            Fifo::<Packet, true>::new(capacity).map_err(e)?,
            1,
            CLASS.name,
        )
    } else {
        queue(Fifo::<Packet>::new(capacity).map_err(e)?, 1, CLASS.name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::ordered::testing::{frame, ports, tags};
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    #[test]
    fn fifo_order_tail_drop_and_late() {
        let mut h = Harness::new(&CLASS, "3", ports(1));
        h.advance_to(Timestamp(1_000));
        // Deadlines are ignored for the order; 500 is already past.
        h.push_packets(
            0,
            (0..5u8).map(|i| frame([10, 0, 0, 2], i, 500 * u64::from(i))),
        );
        let s = h.stats();
        assert_eq!((s.get("length"), s.get("drops")), (Some(3), Some(2)));
        assert_eq!(tags(&h.pull(0, 2)), vec![0, 1]);
        h.push_packets(0, [frame([10, 0, 0, 2], 9, 0)]);
        assert_eq!(tags(&h.pull(0, 10)), vec![2, 9]);
        let s = h.stats();
        assert_eq!(s.get("dequeued"), Some(4));
        // Only tag 1 (deadline 500) left after its deadline; tag 0 and 9
        // have none, tag 2's (1,000) is now.
        assert_eq!(s.get("late"), Some(1));
        assert_eq!(s.get("highwater_length"), Some(3));
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.stats().get("enqueued"), Some(0));
    }

    #[test]
    fn memrefs_counters_only_when_counting() {
        let mut h = Harness::new(&CLASS, "2, MEMREFS true", ports(1));
        h.push_packets(0, (0..3u8).map(|i| frame([10, 0, 0, 2], i, 0)));
        assert_eq!(tags(&h.pull(0, 10)), vec![0, 1]);
        let s = h.stats();
        // Two enqueues (3 references, 6 words) and one refused (2, 2);
        // two dequeues (3, 6); the empty pull at the end is not counted.
        assert_eq!(s.get("mem_packets"), Some(3));
        assert_eq!(
            (s.get("enqueue_refs"), s.get("enqueue_words")),
            (Some(8), Some(14))
        );
        assert_eq!(
            (s.get("dequeue_refs"), s.get("dequeue_words")),
            (Some(6), Some(12))
        );
        assert_eq!(
            (s.get("mem_refs"), s.get("mem_words")),
            (Some(14), Some(26))
        );
        let mut h = Harness::new(&CLASS, "2", ports(1));
        h.push_packets(0, [frame([10, 0, 0, 2], 0, 0)]);
        let s = h.stats();
        for k in ["mem_packets", "mem_refs", "enqueue_refs", "dequeue_words"] {
            assert_eq!(s.get(k), None, "{k}");
        }
    }

    #[test]
    fn bad_arguments_refused() {
        let ports = ports(1);
        for (args, why) in [("0", "out of range"), ("10, FOO 1", "FOO")] {
            let e = bricks_runtime::testing::make_element(&CLASS, args, &ports).unwrap_err();
            assert!(e.contains(why), "{args}: {e}");
        }
    }
}
