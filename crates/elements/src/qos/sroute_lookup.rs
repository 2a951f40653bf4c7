//! `SourceRouteLookup`: route selection "look" from a source route the
//! packet carries (Hardekopf et al. §3.2): the router consumes one hop of
//! the shim ([`bricks_qos::sroute`]) and takes its next hop and output
//! port, with no table at all. bricks' own element.

use super::memrefs::{self, MemCount};
use super::sroute_encap::{read_ethertype, shim_of, ETHERTYPE_KEYWORD, ETHER_LEN};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};
use bricks_qos::sroute::{Error, SourceRoute};

/// The `SourceRouteLookup` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SourceRouteLookup",
    ports: "1/1-2",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "consumes one hop of a packet's source route",
    synopsis: "SourceRouteLookup([ETHERTYPE t, MEMREFS bool])",
    description: "Reads the source-route shim that SourceRouteEncap wrote behind the \
        Ethernet header, consumes its next hop (the shim's index moves on by one, in place), \
        sets the destination address annotation to the hop's next hop and the paint \
        annotation to the hop's output port (255 for ports above 254), and sends the frame \
        to output 0. Frames without the shim, with a shim that is truncated, of another \
        version or malformed (no hops, more than 16, an index beyond them), and routes \
        already exhausted go to output 1, or are dropped and counted when it is not \
        connected. With MEMREFS true (or under `bricks run --memrefs`) the counters \
        mem_packets, mem_refs and mem_words count the route memory each packet costs \
        (32-bit words): the hop read (6 bytes), one reference of two words per packet \
        routed; no table is read.",
    ports: "one input; output 0 routed frames, output 1 (optional) the others; agnostic",
    keywords: &[ETHERTYPE_KEYWORD, memrefs::KEYWORD],
    counters: &[
        ("routed", "frames whose hop was consumed"),
        ("no_route", "frames without the shim"),
        (
            "malformed",
            "shims truncated, of another version or malformed",
        ),
        ("exhausted", "routes with no hop left"),
        memrefs::PACKETS,
        memrefs::REFS,
        memrefs::WORDS,
    ],
    example: "InfiniteSource(DATA \\<00 00 c0 3b 71 ef 00 20 6a 12 34 56 08 00 45 00 00 14 00 00 \
        40 00 40 11 23 3d 12 1a 04 63 01 00 00 02>, LIMIT 2) \
        -> SourceRouteEncap(10.0.1.1:1 10.0.2.1:0) -> sl :: SourceRouteLookup \
        -> SourceRouteDecap -> Discard;\nsl[1] -> Discard;",
    see_also: &["SourceRouteEncap", "SourceRouteDecap", "FlowLookup"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let ethertype = read_ethertype(args)?;
    Ok(if args.memrefs()? {
        Box::new(SourceRouteLookup::<true>::new(ethertype))
    } else {
        Box::new(SourceRouteLookup::<false>::new(ethertype))
    })
}

/// Consumes hops; with `M` it counts memory references.
pub struct SourceRouteLookup<const M: bool = false> {
    ethertype: u16,
    routed: u64,
    no_route: u64,
    malformed: u64,
    exhausted: u64,
    mem: MemCount,
}

impl<const M: bool> SourceRouteLookup<M> {
    fn new(ethertype: u16) -> SourceRouteLookup<M> {
        SourceRouteLookup {
            ethertype,
            routed: 0,
            no_route: 0,
            malformed: 0,
            exhausted: 0,
            mem: MemCount::default(),
        }
    }

    #[inline(always)]
    fn lookup(&mut self, p: &mut Packet) -> usize {
        if M {
            self.mem.packets += 1;
        }
        if shim_of(p.data(), self.ethertype).is_none() {
            self.no_route += 1;
            return 1;
        }
        let mut s = match SourceRoute::new_checked(&mut p.data_mut()[ETHER_LEN..]) {
            Ok(s) => s,
            Err(Error::Truncated | Error::Version | Error::Malformed) => {
                self.malformed += 1;
                return 1;
            }
        };
        let Some(hop) = s.consume() else {
            self.exhausted += 1;
            return 1;
        };
        if M {
            // The hop (6 bytes: two words).
            self.mem.mem.add(1, 2);
        }
        let a = p.anno_mut();
        a.dst_ip = hop.next_hop;
        a.paint = hop.output.min(255) as u8;
        self.routed += 1;
        0
    }
}

impl<const M: bool> Element for SourceRouteLookup<M> {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| Some(self.lookup(p)));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("routed", self.routed);
        s.counter("no_route", self.no_route);
        s.counter("malformed", self.malformed);
        s.counter("exhausted", self.exhausted);
        if M {
            self.mem.stats(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::testdata::IPV4_UDP;
    use bricks_runtime::testing::Harness;
    use std::net::Ipv4Addr;

    /// IPV4_UDP with a route of two hops (10.0.1.1 out of 1, 10.0.2.1 out
    /// of 300), `index` of them consumed.
    fn routed(index: u8) -> Vec<u8> {
        let mut f = IPV4_UDP[..12].to_vec();
        f.extend([0x88, 0xb5, 0x02, 0x02, index, 0x00, 0x08, 0x00]);
        f.extend([10, 0, 1, 1, 0, 1, 10, 0, 2, 1, 0x01, 0x2c]);
        f.extend(&IPV4_UDP[14..]);
        f
    }

    #[test]
    fn consumes_hop_by_hop_then_refuses() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, &routed(0));
        let out = h.take(0);
        assert_eq!(out[0].anno().dst_ip, Ipv4Addr::new(10, 0, 1, 1));
        assert_eq!(out[0].anno().paint, 1);
        // The index moved on, nothing else changed.
        assert_eq!(out[0].data(), &routed(1)[..]);
        h.push_packets(0, out);
        let out = h.take(0);
        assert_eq!(out[0].anno().dst_ip, Ipv4Addr::new(10, 0, 2, 1));
        assert_eq!(out[0].anno().paint, 255);
        assert_eq!(out[0].data(), &routed(2)[..]);
        h.push_packets(0, out);
        assert!(h.take(0).is_empty());
        assert_eq!(h.take(1).len(), 1);
        let s = h.stats();
        assert_eq!(s.get("routed"), Some(2));
        assert_eq!(s.get("exhausted"), Some(1));
    }

    #[test]
    fn memrefs_one_hop_read_a_packet_routed() {
        let mut h = Harness::push(&CLASS, "MEMREFS true", 1, 2);
        h.push_bytes(0, &routed(0));
        h.push_bytes(0, &routed(1));
        h.push_bytes(0, &routed(2)); // exhausted: nothing read
        h.push_bytes(0, &IPV4_UDP); // no route
        let s = h.stats();
        assert_eq!(s.get("mem_packets"), Some(4));
        assert_eq!(s.get("mem_refs"), Some(2));
        assert_eq!(s.get("mem_words"), Some(4));
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, &routed(0));
        assert_eq!(h.stats().get("mem_refs"), None);
    }

    #[test]
    fn malformed_and_missing_routes() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &IPV4_UDP);
        h.push_bytes(0, &routed(3)); // index beyond the hops
        let mut v1 = routed(0);
        v1[14] = 1; // the cluster label's version
        h.push_bytes(0, &v1);
        for len in 0..routed(0).len() - IPV4_UDP.len() + 14 {
            h.push_bytes(0, &routed(0)[..len]);
        }
        assert!(h.take(0).is_empty());
        let s = h.stats();
        assert_eq!(s.get("routed"), Some(0));
        // Up to 13 bytes: no EtherType; 14 to 31: a truncated shim.
        assert_eq!(s.get("no_route"), Some(1 + 14));
        assert_eq!(s.get("malformed"), Some(2 + 18));
    }

    #[test]
    fn another_ethertype() {
        let mut h = Harness::push(&CLASS, "ETHERTYPE 0x88b6", 1, 2);
        h.push_bytes(0, &routed(0));
        let mut f = routed(0);
        f[13] = 0xb6;
        h.push_bytes(0, &f);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.take(1).len(), 1);
    }
}
