//! `HashFIFOQueue`: FIFOs replicated by a hash of the destination address
//! (Hardekopf et al. §5.2: replicas against lock contention, chosen by
//! destination so that no destination's packets are reordered).

use super::memrefs;
use super::ordered::{
    memrefs_doc, read_capacity, Discipline, OrderedQueue, COUNTERS, MEM_COUNTERS,
};
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, Packet, PortInfo};
use bricks_qos::order::{Counters, HashFifo, Order};
use std::net::Ipv4Addr;

/// The `HashFIFOQueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "HashFIFOQueue",
    ports: "1/1-",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "FIFOs replicated by destination address: per-destination order kept",
    synopsis: "HashFIFOQueue([CAPACITY, REPLICAS, MEMREFS bool])",
    description: concat!(
        "REPLICAS circular-array FIFOs (see FIFOQueue) share CAPACITY, each holding \
        CAPACITY/REPLICAS packets. A pushed packet goes to the FIFO chosen by a hash of its \
        destination IPv4 address: the destination address annotation when set (Click's \
        DST_IP_ANNO, from GetIPAddress, CheckIPHeader or a route lookup), else the \
        destination of the IPv4 header at the network header annotation; a packet with \
        neither goes to replica 0 (counted in no_destination). So every destination's \
        packets stay in one FIFO and leave in the order they came (TCP relies on it), \
        while different destinations may be reordered among themselves. A packet whose \
        FIFO is full is dropped and counted, even if other FIFOs have room. Pull output p \
        of N serves the replicas r with r mod N = p, in turn. Under MEMREFS the replicas' \
        counts are summed; the hash is computed, not read.",
        memrefs_doc!()
    ),
    ports: "one push input; one or more pull outputs",
    keywords: &[
        Keyword {
            name: "CAPACITY",
            ty: "unsigned",
            default: Some("1000"),
            doc: "most packets held in all, shared equally by the replicas",
        },
        Keyword {
            name: "REPLICAS",
            ty: "unsigned",
            default: Some("the number of outputs"),
            doc: "number of FIFOs, 1 to 1024, at least one per output and at most CAPACITY",
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
        (
            "no_destination",
            "packets with neither a destination annotation nor an IPv4 header: replica 0",
        ),
    ],
    example: "q :: HashFIFOQueue(100, REPLICAS 4);\n\
        InfiniteSource(DATA \\<02 00 00 00 00 02 02 00 00 00 00 01 08 00 45 00 00 20 00 00 \
        00 00 40 11 66 cb 0a 00 00 01 0a 00 00 02 04 d2 16 2e 00 0c 00 00 01 00 00 00>, \
        LIMIT 10) -> Strip(14) -> CheckIPHeader -> q;\n\
        q[0] -> Unqueue -> Discard; q[1] -> Unqueue -> Discard;",
    see_also: &["FIFOQueue", "MDSBinSortQueue", "GetIPAddress"],
};

/// The replicas and what could not be hashed.
struct ByDestination<const M: bool> {
    h: HashFifo<Packet, M>,
    no_destination: u64,
}

/// Murmur3's 32-bit finaliser: every address bit moves the high bits
/// that choose the replica.
#[inline(always)]
fn mix(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x85eb_ca6b);
    x ^= x >> 13;
    x = x.wrapping_mul(0xc2b2_ae35);
    x ^ (x >> 16)
}

/// The destination the packet is hashed on, if it has one.
#[inline]
fn destination(p: &Packet) -> Option<Ipv4Addr> {
    let a = p.anno().dst_ip;
    if !a.is_unspecified() {
        return Some(a);
    }
    let h = p.network_header()?;
    if h.len() < 20 || h[0] >> 4 != 4 {
        return None;
    }
    Some(Ipv4Addr::new(h[16], h[17], h[18], h[19]))
}

impl<const M: bool> Discipline for ByDestination<M> {
    const MEMREFS: bool = M;

    #[inline]
    fn put(&mut self, p: Packet, now: u64) -> Result<(), Packet> {
        let hash = match destination(&p) {
            Some(a) => mix(u32::from(a)),
            None => {
                self.no_destination += 1;
                0
            }
        };
        let d = p.anno().deadline;
        self.h.enqueue_hashed(hash, p, d, now)
    }

    #[inline]
    fn take(&mut self, port: usize, outputs: usize, now: u64) -> Option<Packet> {
        self.h.dequeue_among(port, outputs, now)
    }

    fn counters(&self) -> Counters {
        self.h.counters()
    }

    fn clear(&mut self) {
        self.h.clear(&mut drop);
        self.no_destination = 0;
    }
}

/// `HashFIFOQueue` adds `no_destination` to the shared counters.
struct HashFifoQueue<const M: bool>(OrderedQueue<ByDestination<M>>);

impl<const M: bool> Element for HashFifoQueue<M> {
    #[inline]
    fn push(
        &mut self,
        port: usize,
        batch: &mut bricks_element::Batch,
        cx: &mut bricks_element::Context<'_>,
    ) {
        self.0.push(port, batch, cx)
    }

    #[inline]
    fn pull(
        &mut self,
        port: usize,
        out: &mut bricks_element::Batch,
        max: usize,
        cx: &mut bricks_element::Context<'_>,
    ) {
        self.0.pull(port, out, max, cx)
    }

    fn stats(&self, s: &mut bricks_element::Stats) {
        self.0.stats(s);
        s.counter("no_destination", self.0.d.no_destination);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.0.write_handler(handler, value)
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let outputs = ports.outputs.len().max(1);
    let capacity = read_capacity(args)?;
    let replicas: usize = args.read_p("REPLICAS")?.unwrap_or(outputs);
    if replicas < outputs {
        return Err(ArgError::new(format!(
            "{replicas} replicas for {outputs} outputs: some outputs would have none"
        )));
    }
    let e = |e: bricks_qos::order::OrderError| ArgError::new(e.to_string());
    Ok(if args.memrefs()? {
        let h = HashFifo::<Packet, true>::new(capacity, replicas).map_err(e)?;
        wrap(h, outputs)
    } else {
        let h = HashFifo::<Packet>::new(capacity, replicas).map_err(e)?;
        wrap(h, outputs)
    })
}

fn wrap<const M: bool>(h: HashFifo<Packet, M>, outputs: usize) -> Box<dyn Element> {
    Box::new(HashFifoQueue(OrderedQueue {
        d: ByDestination {
            h,
            no_destination: 0,
        },
        outputs,
        class: CLASS.name,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::ordered::testing::{frame, ports, tags};
    use bricks_runtime::testing::Harness;

    #[test]
    fn per_destination_order_across_outputs() {
        let mut h = Harness::new(&CLASS, "64, REPLICAS 4", ports(2));
        // Three destinations, interleaved; tags count up per destination
        // (destination index in the high bits).
        let dsts = [[10, 0, 0, 2], [10, 0, 0, 3], [192, 168, 1, 1]];
        let mut ps = Vec::new();
        for k in 0..8u8 {
            for (i, d) in dsts.iter().enumerate() {
                ps.push(frame(*d, (i as u8) << 4 | k, 0));
            }
        }
        h.push_packets(0, ps);
        let mut got = h.pull(0, 5);
        got.extend(h.pull(1, 7));
        got.extend(h.pull(0, 100));
        got.extend(h.pull(1, 100));
        let t = tags(&got);
        assert_eq!(t.len(), 24);
        for i in 0..3u8 {
            let mine: Vec<u8> = t.iter().filter(|x| *x >> 4 == i).map(|x| x & 15).collect();
            assert_eq!(mine, (0..8).collect::<Vec<u8>>(), "destination {i}");
        }
        assert_eq!(h.stats().get("no_destination"), Some(0));
    }

    #[test]
    fn annotation_first_then_header_then_replica_zero() {
        let mut p = frame([10, 0, 0, 2], 0, 0);
        assert_eq!(destination(&p), Some(Ipv4Addr::new(10, 0, 0, 2)));
        p.anno_mut().dst_ip = Ipv4Addr::new(1, 2, 3, 4);
        assert_eq!(destination(&p), Some(Ipv4Addr::new(1, 2, 3, 4)));
        let q = Packet::from_slice(&[0u8; 60]).unwrap();
        assert_eq!(destination(&q), None);
        let mut h = Harness::new(&CLASS, "4, REPLICAS 2", ports(1));
        h.push_packets(0, (0..3).map(|_| Packet::from_slice(&[0u8; 60]).unwrap()));
        let s = h.stats();
        // Replica 0 holds 2: the third is dropped.
        assert_eq!(
            (s.get("no_destination"), s.get("drops")),
            (Some(3), Some(1))
        );
    }
}
