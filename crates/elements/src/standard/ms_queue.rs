//! `MSQueue`: Click's deprecated multiple-producer single-consumer queue
//! (`elements/standard/msqueue.cc`), which Click itself now makes a
//! `ThreadSafeQueue`; in bricks it is [`super::thread_safe_queue`] under
//! the old name.

use super::thread_safe_queue;
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, PortInfo};

/// The `MSQueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MSQueue",
    ports: "1/1",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores packets in a FIFO queue that several workers push into (deprecated)",
    synopsis: "MSQueue([CAPACITY])",
    description: "Click's multiple-producer single-consumer queue, deprecated in Click for \
        ThreadSafeQueue, which Click's MSQueue now is: bricks' ThreadSafeQueue under the old \
        name, one bounded lock-free queue shared by every worker (any number of pullers is \
        safe too). A packet arriving when CAPACITY packets are held is dropped and counted. \
        `length`, `highwater_length`, `drops` and `enqueued` read as ThreadSafeQueue's, and \
        `reset` empties the queue; Click's deprecation warning is not printed. `bricks \
        elements ThreadSafeQueue` describes the rest.",
    ports: "one push input; one pull output",
    keywords: &[Keyword {
        name: "CAPACITY",
        ty: "unsigned",
        default: Some("1000"),
        doc: "most packets held (1 to 16777216); positional",
    }],
    counters: &[
        ("length", "packets held now (worker 0 reports it)"),
        (
            "highwater_length",
            "most packets ever held (worker 0 reports it)",
        ),
        ("drops", "packets dropped because the queue was full"),
        ("enqueued", "packets accepted"),
    ],
    example: "InfiniteSource(LIMIT 10) -> MSQueue(100) -> Unqueue -> Discard;",
    see_also: &["ThreadSafeQueue", "Queue"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    (thread_safe_queue::CLASS.make)(args, ports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    fn ports() -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Pull],
        }
    }

    #[test]
    fn fifo_with_tail_drop() {
        let mut h = Harness::new(&CLASS, "2", ports());
        h.push_packets(0, (1..=3).map(|n| Packet::from_slice(&udp(n)).unwrap()));
        let lens: Vec<usize> = h.pull(0, 8).iter().map(|p| p.len()).collect();
        assert_eq!(lens, [29, 30]);
        let s = h.stats();
        assert_eq!(s.get("drops"), Some(1));
        assert_eq!(s.get("enqueued"), Some(2));
        assert_eq!(h.read_handler("highwater_length").unwrap(), "2");
        assert!(make_element(&CLASS, "0", &ports()).is_err());
        assert!(make_element(&CLASS, "many", &ports()).is_err());
    }
}
