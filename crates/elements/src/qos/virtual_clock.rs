//! `VirtualClock`: stamps each packet's deadline annotation by Zhang's
//! Virtual Clock (SIGCOMM 1990), the deadlines `HeapQueue`,
//! `BinSortQueue` and `MDSBinSortQueue` sort (Hardekopf et al. §2.3).
//! The arithmetic is `bricks_qos::deadline`; per-flow state is the flow
//! table's when TABLE is given.

use super::memrefs::{self, MemCount};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
};
use bricks_qos::deadline::LastDeadline;
use bricks_qos::flow::FlowTable;
use std::sync::Arc;

/// The `VirtualClock` class.
pub static CLASS: ElementClass = ElementClass {
    name: "VirtualClock",
    ports: "1/1-2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stamps packets with Virtual Clock deadlines from a reserved rate",
    synopsis: "VirtualClock(RATE r | TABLE ft [, RATE r, MEMREFS bool])",
    description: "Sets each packet's deadline annotation by Virtual Clock: deadline = \
        max(now, the flow's last deadline) + the packet's bits / the flow's rate, and the \
        flow's last deadline becomes that deadline. A flow within its rate gets deadlines \
        that follow the clock; a flow sending faster sees its deadlines run ahead, so a \
        deadline-ordered queue sends it after the flows that kept to their reservation. \
        The size is the packet's length as it reaches VirtualClock (strip the Ethernet \
        header first to count IP bytes). `now` is the engine clock, so runs of captures \
        with `--clock trace` are repeatable. With TABLE, a packet's flow is the record a \
        classifier (TagClassifier, HashClassifier) put in its flow annotation, and its \
        rate and last deadline are that record's: the last deadline is one atomic word per \
        flow, updated by an atomic read-modify-write, so workers stamping packets of one \
        flow at once each get their own slot and no update is lost. A packet without a \
        flow (or whose record is gone) is stamped at RATE when given; otherwise it goes to \
        output 1, or is dropped when output 1 is unconnected (no_flow counts both). \
        Without TABLE every packet is one flow at RATE, whose last deadline is shared by \
        all workers in the same way. Bandwidths are Click's: a bare number is bytes per \
        second; bps, kbps, Mbps, Gbps are bits.\
        \n\nWith MEMREFS true (or under `bricks run --memrefs`) the counters mem_packets, \
        mem_refs and mem_words count the memory each packet's stamp costs (32-bit words): \
        stamped by its flow, the flow's rate and last deadline in its record (1 reference, \
        4 words); stamped at RATE, the shared last deadline (1 reference, 2 words).",
    ports: "one push input; push output 0 for stamped packets; optional push output 1 for \
        packets with no flow",
    keywords: &[
        Keyword {
            name: "RATE",
            ty: "bandwidth",
            default: None,
            doc: "the reserved rate of every packet (no TABLE) or of packets without a flow",
        },
        Keyword {
            name: "TABLE",
            ty: "FlowTable element name",
            default: None,
            doc: "the flow table whose records hold each flow's rate and last deadline",
        },
        memrefs::KEYWORD,
    ],
    counters: &[
        ("stamped", "packets given a deadline"),
        (
            "no_flow",
            "packets with no flow record and no RATE (output 1 or dropped)",
        ),
        (
            "last_deadline",
            "the last deadline given on this worker, ns",
        ),
        memrefs::PACKETS,
        memrefs::REFS,
        memrefs::WORDS,
    ],
    example: "InfiniteSource(LIMIT 10, LENGTH 100) -> VirtualClock(RATE 8Mbps) \
        -> BinSortQueue -> Unqueue -> Discard;",
    see_also: &["BinSortQueue", "HeapQueue", "MDSBinSortQueue", "FlowTable"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let rate_text: Option<String> = args.read("RATE")?;
    let table = match args.read_shared_of_mp::<FlowTable>("TABLE", "FlowTable") {
        Ok(t) => Some(t),
        Err(e) if e.message.starts_with("missing") => {
            if rate_text.is_none() {
                return Err(ArgError::new("missing RATE or TABLE")
                    .with_help("e.g. `RATE 10Mbps`, or `TABLE ft` naming a FlowTable"));
            }
            None
        }
        Err(e) => return Err(e),
    };
    let rate = match rate_text {
        Some(t) => Some(
            crate::standard::bw_rated_unqueue::parse_bandwidth(&t)
                .map_err(|e| ArgError::new(format!("bad RATE: {e}")))?
                .saturating_mul(8),
        ),
        None => None,
    };
    let aggregate = args.shared(|_| Ok(LastDeadline::new()))?;
    Ok(if args.memrefs()? {
        Box::new(VirtualClock::<true>::new(table, rate, aggregate))
    } else {
        Box::new(VirtualClock::<false>::new(table, rate, aggregate))
    })
}

/// The element; with `M` it counts memory references.
pub struct VirtualClock<const M: bool = false> {
    table: Option<Arc<FlowTable>>,
    /// Bits per second for packets without a flow record.
    rate: Option<u64>,
    /// The last deadline of those packets, shared by every worker.
    aggregate: Arc<LastDeadline>,
    stamped: u64,
    no_flow: u64,
    last: u64,
    mem: MemCount,
}

impl<const M: bool> VirtualClock<M> {
    fn new(
        table: Option<Arc<FlowTable>>,
        rate: Option<u64>,
        aggregate: Arc<LastDeadline>,
    ) -> VirtualClock<M> {
        VirtualClock {
            table,
            rate,
            aggregate,
            stamped: 0,
            no_flow: 0,
            last: 0,
            mem: MemCount::default(),
        }
    }
}

impl<const M: bool> Element for VirtualClock<M> {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = cx.now().0;
        let spill = cx.output_connected(1);
        let table = self.table.as_deref();
        let rate = self.rate;
        let aggregate = &*self.aggregate;
        let (mut stamped, mut no_flow, mut last) = (0u64, 0u64, self.last);
        let mem = &mut self.mem;
        cx.push_classified(batch, |p| {
            let bytes = p.len() as u64;
            if M {
                mem.packets += 1;
            }
            let by_flow = match (table, p.anno().flow_record()) {
                (Some(t), Some(i)) => t.stamp_deadline(i, now, bytes),
                _ => None,
            };
            if M && by_flow.is_some() {
                // The flow's rate and last deadline, in its record.
                mem.mem.add(1, 4);
            }
            let d = match (by_flow, rate) {
                (Some(d), _) => d,
                (None, Some(r)) => {
                    if M {
                        // The shared last deadline.
                        mem.mem.add(1, 2);
                    }
                    aggregate.stamp(now, bytes, r)
                }
                (None, None) => {
                    no_flow += 1;
                    return spill.then_some(1);
                }
            };
            p.anno_mut().deadline = d;
            stamped += 1;
            last = d;
            Some(0)
        });
        self.stamped += stamped;
        self.no_flow += no_flow;
        self.last = last;
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("stamped", self.stamped);
        s.counter("no_flow", self.no_flow);
        s.counter("last_deadline", self.last);
        if M {
            self.mem.stats(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::ordered::testing::frame;
    use bricks_element::{FixedRefs, Packet, Processing};
    use bricks_packet::Timestamp;
    use bricks_qos::flow::{FlowKey, FlowSpec};
    use bricks_runtime::testing::Harness;

    fn push_ports(n: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; n],
        }
    }

    #[test]
    fn one_rate_for_all() {
        // 46-byte frames at 3,680,000 bit/s: 100 us each.
        let mut h = Harness::new(&CLASS, "RATE 460000", push_ports(1));
        h.advance_to(Timestamp(1_000_000));
        h.push_packets(0, (0..3).map(|i| frame([10, 0, 0, 2], i, 0)));
        let ds: Vec<u64> = h.take(0).iter().map(|p| p.anno().deadline).collect();
        assert_eq!(ds, vec![1_100_000, 1_200_000, 1_300_000]);
        // Idle for a while: the next deadline starts from the clock again.
        h.advance_to(Timestamp(5_000_000));
        h.push_packets(0, [frame([10, 0, 0, 2], 9, 0)]);
        assert_eq!(h.take(0)[0].anno().deadline, 5_100_000);
        let s = h.stats();
        assert_eq!(
            (s.get("stamped"), s.get("last_deadline")),
            (Some(4), Some(5_100_000))
        );
    }

    fn table() -> Arc<FlowTable> {
        let t = FlowTable::tag(16);
        for (tag, rate) in [(3u32, 3_680_000u64), (5, 368_000)] {
            t.add(&FlowSpec {
                key: FlowKey::Tag(tag),
                rate,
                next_hop: None,
                output: 0,
            })
            .unwrap();
        }
        Arc::new(t)
    }

    fn with_table(args: &str, t: &Arc<FlowTable>, outs: usize) -> Harness {
        let refs = FixedRefs(vec![("ft".into(), "FlowTable", t.clone() as _)]);
        Harness::with_refs(&CLASS, args, push_ports(outs), &refs).unwrap()
    }

    fn flow_packet(t: &FlowTable, tag: Option<u32>, n: u8) -> Packet {
        let mut p = frame([10, 0, 0, 2], n, 0);
        if let Some(i) = tag.and_then(|tag| t.lookup_tag(tag)) {
            p.anno_mut().set_flow_record(i);
        }
        p
    }

    #[test]
    fn per_flow_rates_from_the_table() {
        let t = table();
        let mut h = with_table("TABLE ft", &t, 2);
        h.advance_to(Timestamp(0));
        let ps = [
            flow_packet(&t, Some(3), 0),
            flow_packet(&t, Some(5), 1),
            flow_packet(&t, Some(3), 2),
            flow_packet(&t, None, 3),
        ];
        h.push_packets(0, ps);
        let ds: Vec<u64> = h.take(0).iter().map(|p| p.anno().deadline).collect();
        // Flow 3: 100 us per packet; flow 5: 1 ms.
        assert_eq!(ds, vec![100_000, 1_000_000, 200_000]);
        assert_eq!(h.take(1).len(), 1);
        assert_eq!(h.stats().get("no_flow"), Some(1));
        let i = t.lookup_tag(3).unwrap();
        assert_eq!(t.meters(i).deadline, 200_000);
    }

    #[test]
    fn memrefs_the_record_or_the_shared_deadline() {
        let t = table();
        let mut h = with_table("TABLE ft, RATE 460000, MEMREFS true", &t, 2);
        let ps = [
            flow_packet(&t, Some(3), 0),
            flow_packet(&t, Some(5), 1),
            flow_packet(&t, None, 2),
        ];
        h.push_packets(0, ps);
        let s = h.stats();
        assert_eq!(s.get("mem_packets"), Some(3));
        assert_eq!(s.get("mem_refs"), Some(3));
        assert_eq!(s.get("mem_words"), Some(4 + 4 + 2));
        let mut h = with_table("TABLE ft", &t, 2);
        h.push_packets(0, [flow_packet(&t, Some(3), 0)]);
        assert_eq!(h.stats().get("mem_refs"), None);
    }

    #[test]
    fn rate_for_packets_without_a_flow_else_dropped() {
        let t = table();
        let mut h = with_table("TABLE ft, RATE 460000", &t, 1);
        h.push_packets(0, [flow_packet(&t, None, 0)]);
        let now = h.now().0;
        assert_eq!(h.take(0)[0].anno().deadline, now + 100_000);
        let mut h = with_table("TABLE ft", &t, 1);
        h.push_packets(0, [flow_packet(&t, None, 0), flow_packet(&t, Some(5), 1)]);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("no_flow"), Some(1));
    }

    #[test]
    fn arguments() {
        let p = push_ports(1);
        let e = bricks_runtime::testing::make_element(&CLASS, "", &p).unwrap_err();
        assert!(e.contains("RATE"), "{e}");
        let e = bricks_runtime::testing::make_element(&CLASS, "RATE fast", &p).unwrap_err();
        assert!(e.contains("bad RATE"), "{e}");
        let e = bricks_runtime::testing::make_element(&CLASS, "TABLE ft", &p).unwrap_err();
        assert!(e.contains("ft"), "{e}");
    }
}
