//! Click classes that are an existing bricks element under another name.
//!
//! `NotifierQueue` and `FullNoteQueue` are Click's Queue with empty
//! notification and with empty and full notification: bricks' Queue, the
//! first without holding sources back when it is full (Click's
//! NotifierQueue has no full notifier); `LinearIPLookup` is the
//! linear-search table StaticIPLookup already is, and `LookupIPRouteMP`
//! Click's LookupIPRoute with a cache per processor (bricks' tables are
//! per worker already); `Unqueue2` is Click's
//! deprecated Unqueue that also looked at downstream queues.

use crate::ip::staticiplookup;
use crate::standard::{queue, unqueue};
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, PortInfo};

/// The `NotifierQueue` class: bricks' Queue.
pub static NOTIFIER_QUEUE: ElementClass = ElementClass {
    name: "NotifierQueue",
    ports: "1/1-2",
    processing: "h/lh",
    manual: &NOTIFIER_QUEUE_MANUAL,
    make: queue::make_without_full_notifier,
};

/// The `FullNoteQueue` class: bricks' Queue.
pub static FULL_NOTE_QUEUE: ElementClass = ElementClass {
    name: "FullNoteQueue",
    ports: "1/1-2",
    processing: "h/lh",
    manual: &FULL_NOTE_QUEUE_MANUAL,
    make: make_queue,
};

/// The `LinearIPLookup` class: bricks' StaticIPLookup.
pub static LINEAR_IP_LOOKUP: ElementClass = ElementClass {
    name: "LinearIPLookup",
    ports: "1/-",
    processing: "h/h",
    manual: &LINEAR_IP_LOOKUP_MANUAL,
    make: make_lookup,
};

/// The `LookupIPRouteMP` class: bricks' StaticIPLookup.
pub static LOOKUP_IP_ROUTE_MP: ElementClass = ElementClass {
    name: "LookupIPRouteMP",
    ports: "1/-",
    processing: "h/h",
    manual: &LOOKUP_IP_ROUTE_MP_MANUAL,
    make: make_lookup,
};

/// The `Unqueue2` class: bricks' Unqueue.
pub static UNQUEUE2: ElementClass = ElementClass {
    name: "Unqueue2",
    ports: "1/1",
    processing: "l/h",
    manual: &UNQUEUE2_MANUAL,
    make: make_unqueue2,
};

static QUEUE_KEYWORDS: &[Keyword] = &[Keyword {
    name: "CAPACITY",
    ty: "unsigned",
    default: Some("1000"),
    doc: "most packets held; positional",
}];

static QUEUE_COUNTERS: &[(&str, &str)] = &[
    ("length", "packets held now"),
    ("highwater_length", "most packets ever held"),
    ("drops", "packets dropped because the queue was full"),
    ("enqueued", "packets accepted"),
];

static NOTIFIER_QUEUE_MANUAL: Manual = Manual {
    summary: "stores packets in a FIFO queue (Click's Queue with empty notification)",
    synopsis: "NotifierQueue([CAPACITY])",
    description: "bricks' Queue under Click's name for a Queue that tells the elements \
        pulling from it when it is empty, but not its pushers when it is full: as in \
        Click, a source pushing into it does not wait, and what does not fit is dropped \
        and counted. `bricks elements Queue` describes the rest.",
    ports: "one push input; a pull output and an optional push output for dropped packets",
    keywords: QUEUE_KEYWORDS,
    counters: QUEUE_COUNTERS,
    example: "InfiniteSource(LIMIT 10) -> NotifierQueue(100) -> Unqueue -> Discard;",
    see_also: &["Queue", "FullNoteQueue"],
};

static FULL_NOTE_QUEUE_MANUAL: Manual = Manual {
    summary: "stores packets in a FIFO queue (Click's Queue with full and empty notification)",
    synopsis: "FullNoteQueue([CAPACITY])",
    description: "bricks' Queue under Click's name for a Queue that also tells its pushers \
        when it is full: a source pushing into it (InfiniteSource, RandomSource) waits \
        while it is full, as into Queue. `bricks elements Queue` describes it.",
    ports: "one push input; a pull output and an optional push output for dropped packets",
    keywords: QUEUE_KEYWORDS,
    counters: QUEUE_COUNTERS,
    example: "InfiniteSource(LIMIT 10) -> FullNoteQueue(100) -> Unqueue -> Discard;",
    see_also: &["Queue", "NotifierQueue"],
};

static LINEAR_IP_LOOKUP_MANUAL: Manual = Manual {
    summary: "simple IP routing table (linear search)",
    synopsis: "LinearIPLookup(ADDR/MASK [GW] OUT, ...)",
    description: "bricks' StaticIPLookup under Click's name: longest-prefix match of the \
        destination address annotation over the routes given, the gateway (if any) \
        replacing the annotation, the packet leaving on the route's output; the `table` \
        handler and the `add`, `set` and `remove` write handlers as in Click. `bricks \
        elements StaticIPLookup` describes it.",
    ports: "one push input; push outputs",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LENGTH 20, LIMIT 1) -> GetIPAddress(16) \
        -> rt :: LinearIPLookup(10.0.0.0/8 0, 0/0 10.0.0.1 1); rt[0] -> Discard; \
        rt[1] -> Discard;",
    see_also: &["StaticIPLookup", "RadixIPLookup", "DirectIPLookup"],
};

static LOOKUP_IP_ROUTE_MP_MANUAL: Manual = Manual {
    summary: "simple static IP routing table (Click's multiprocessor LookupIPRoute)",
    synopsis: "LookupIPRouteMP(ADDR/MASK [GW] OUT, ...)",
    description: "bricks' StaticIPLookup under Click's name for LookupIPRoute with a \
        last-address cache per processor: each bricks worker has its own copy of the \
        element already, so there is nothing to add. Longest-prefix match of the \
        destination address annotation over the routes given, the gateway (if any) \
        replacing the annotation, the packet leaving on the route's output. `bricks \
        elements StaticIPLookup` describes it.",
    ports: "one push input; push outputs",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LENGTH 20, LIMIT 1) -> GetIPAddress(16) \
        -> rt :: LookupIPRouteMP(10.0.0.0/8 0, 0/0 10.0.0.1 1); rt[0] -> Discard; \
        rt[1] -> Discard;",
    see_also: &["StaticIPLookup", "LookupIPRoute", "RadixIPLookup"],
};

static UNQUEUE2_MANUAL: Manual = Manual {
    summary: "pull-to-push converter (Click's deprecated Unqueue2)",
    synopsis: "Unqueue2([BURST, QUEUES, QUIET])",
    description: "bricks' Unqueue under Click's older name. Click's Unqueue2 stops pulling \
        while a queue downstream is full; bricks' Unqueue pulls regardless, and the full \
        queue drops and counts. QUEUES and QUIET are accepted and have no effect. \
        `bricks elements Unqueue` describes it.",
    ports: "one pull input; one push output",
    keywords: &[
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("Unqueue's"),
            doc: "most packets moved per run; positional",
        },
        Keyword {
            name: "QUEUES",
            ty: "element names",
            default: Some("downstream queues"),
            doc: "accepted, no effect",
        },
        Keyword {
            name: "QUIET",
            ty: "boolean",
            default: Some("false"),
            doc: "accepted, no effect",
        },
    ],
    counters: &[("count", "packets moved")],
    example: "InfiniteSource(LIMIT 10) -> Queue -> Unqueue2(1) -> Discard;",
    see_also: &["Unqueue"],
};

fn make_queue(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    (queue::QUEUE.make)(args, ports)
}

fn make_lookup(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    (staticiplookup::CLASS.make)(args, ports)
}

fn make_unqueue2(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _: Option<String> = args.read("QUEUES")?;
    let _: Option<bool> = args.read("QUIET")?;
    (unqueue::CLASS.make)(args, ports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    #[test]
    fn queues_are_fifos() {
        for class in [&NOTIFIER_QUEUE, &FULL_NOTE_QUEUE] {
            let ports = PortInfo {
                inputs: vec![Processing::Push],
                outputs: vec![Processing::Pull],
            };
            let mut h = Harness::new(class, "2", ports);
            h.push_packets(0, (1..=3).map(|n| Packet::from_slice(&udp(n)).unwrap()));
            let out: Vec<usize> = h.pull(0, 8).iter().map(|p| p.len()).collect();
            assert_eq!(out, vec![29, 30]);
            assert_eq!(h.stats().get("drops"), Some(1));
        }
    }

    #[test]
    fn linear_ip_lookup_routes() {
        for class in [&LINEAR_IP_LOOKUP, &LOOKUP_IP_ROUTE_MP] {
            let mut h = Harness::push(class, "10.0.0.0/8 0, 0/0 10.0.0.1 1", 1, 2);
            let mut p = Packet::from_slice(&udp(4)).unwrap();
            p.anno_mut().dst_ip = std::net::Ipv4Addr::new(192, 0, 2, 1);
            h.push_packets(0, [p]);
            let out = h.take(1);
            assert_eq!(out[0].anno().dst_ip, std::net::Ipv4Addr::new(10, 0, 0, 1));
            assert!(h.take(0).is_empty());
            let mut p = Packet::from_slice(&udp(4)).unwrap();
            p.anno_mut().dst_ip = std::net::Ipv4Addr::new(10, 9, 8, 7);
            h.push_packets(0, [p]);
            assert_eq!(h.take(0).len(), 1);
        }
        let e = bricks_runtime::testing::make_element(
            &LINEAR_IP_LOOKUP,
            "10.0.0.0/8 0, 0/0 10.0.0.1 1",
            &PortInfo {
                inputs: vec![Processing::Push],
                outputs: vec![Processing::Push; 2],
            },
        )
        .unwrap();
        assert_eq!(
            e.read_handler("table").as_deref(),
            Some("10.0.0.0/8\t-\t0\n0.0.0.0/0\t10.0.0.1\t1\n")
        );
    }

    #[test]
    fn unqueue2_takes_click_keywords() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Push],
        };
        let mut h = Harness::new(&UNQUEUE2, "1, QUIET true", ports);
        h.feed(0, (1..=2).map(|n| Packet::from_slice(&udp(n)).unwrap()));
        h.run_task();
        assert_eq!(h.take(0).len(), 1);
    }
}
