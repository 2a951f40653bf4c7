//! `FlowLookup`: route selection "look" from the flow table (Hardekopf et
//! al. §3.2): a packet already classified carries its flow record, and
//! the record holds the next hop and output port the control plane chose
//! for the flow, so forwarding costs one more read of that record instead
//! of a longest-prefix match ("pre"). bricks' own element.

use super::flow_table::read_table;
use super::memrefs::{self, MemCount};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_qos::flow::FlowTable;
use std::sync::Arc;

/// The `FlowLookup` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FlowLookup",
    ports: "1/1-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "forwards classified packets by their flow's next hop and output port",
    synopsis: "FlowLookup(TABLE [, MEMREFS bool])",
    description: "Route selection \"look\": for each packet whose flow annotation a \
        TagClassifier or HashClassifier set, reads the flow's record in TABLE and sets the \
        destination address annotation to the flow's next hop (left as it is when the flow \
        has none), the paint annotation to the flow's output port (255 for ports above 254), \
        and pushes the packet out of that output. Packets with no flow annotation, and \
        packets whose flow's output is not an output of this element, are dropped and \
        counted. With MEMREFS true (or under `bricks run --memrefs`) the counters \
        mem_packets, mem_refs and mem_words count the table memory each packet costs \
        (32-bit words): the route word of its record, one reference of one word, for every \
        packet with a flow annotation.",
    ports: "one push input; push outputs, one per output port a flow may name",
    keywords: &[
        Keyword {
            name: "TABLE",
            ty: "FlowTable element name",
            default: None,
            doc: "the flow table the packets were classified with; positional",
        },
        memrefs::KEYWORD,
    ],
    counters: &[
        ("forwarded", "packets sent out of their flow's output"),
        ("no_flow", "packets without a flow annotation, dropped"),
        (
            "no_output",
            "packets whose flow names an output this element lacks, dropped",
        ),
        memrefs::PACKETS,
        memrefs::REFS,
        memrefs::WORDS,
    ],
    example: "ft :: FlowTable(CAPACITY 64, FLOW tag 29 rate 1M via 10.0.2.1 output 1);\n\
        InfiniteSource(DATA \\<00 30 96 e6 fc 39 00 30 96 05 28 38 88 47 00 01 dd ff \
        45 c0 00 14 00 03 00 00 ff 06 a4 e8 0a 01 02 01 0a 22 00 01>, LIMIT 3) \
        -> tc :: TagClassifier(ft) -> fl :: FlowLookup(ft);\ntc[1] -> Discard;\n\
        fl[0] -> Discard;\nfl[1] -> Print(\"to 10.0.2.1\") -> Discard;",
    see_also: &[
        "FlowTable",
        "TagClassifier",
        "HashClassifier",
        "SourceRouteLookup",
        "RadixIPLookup",
    ],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let table = read_table(args)?;
    let noutputs = ports.noutputs().max(1);
    Ok(if args.memrefs()? {
        Box::new(FlowLookup::<true>::new(table, noutputs))
    } else {
        Box::new(FlowLookup::<false>::new(table, noutputs))
    })
}

/// Forwards by the flow record; with `M` it counts memory references.
pub struct FlowLookup<const M: bool = false> {
    table: Arc<FlowTable>,
    noutputs: usize,
    forwarded: u64,
    no_flow: u64,
    no_output: u64,
    mem: MemCount,
}

impl<const M: bool> FlowLookup<M> {
    fn new(table: Arc<FlowTable>, noutputs: usize) -> FlowLookup<M> {
        FlowLookup {
            table,
            noutputs,
            forwarded: 0,
            no_flow: 0,
            no_output: 0,
            mem: MemCount::default(),
        }
    }

    #[inline(always)]
    fn route(&mut self, p: &mut Packet) -> Option<usize> {
        if M {
            self.mem.packets += 1;
        }
        let Some(i) = p.anno().flow_record() else {
            self.no_flow += 1;
            return None;
        };
        if M {
            // The record's route word.
            self.mem.mem.add(1, 1);
        }
        let r = self.table.route(i);
        let out = usize::from(r.output);
        if out >= self.noutputs {
            self.no_output += 1;
            return None;
        }
        let a = p.anno_mut();
        if let Some(h) = r.next_hop {
            a.dst_ip = h;
        }
        a.paint = r.output.min(255) as u8;
        self.forwarded += 1;
        Some(out)
    }
}

impl<const M: bool> Element for FlowLookup<M> {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.route(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("forwarded", self.forwarded);
        s.counter("no_flow", self.no_flow);
        s.counter("no_output", self.no_output);
        if M {
            self.mem.stats(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::testutil::{harness, table};
    use crate::vrouter::testdata::MPLS_TCP;
    use std::net::Ipv4Addr;

    fn classified(record: u32) -> Packet {
        let mut p = Packet::from_slice(&MPLS_TCP).unwrap();
        p.anno_mut().set_flow_record(record);
        p.anno_mut().dst_ip = Ipv4Addr::new(10, 34, 0, 1);
        p
    }

    #[test]
    fn by_the_flow_record() {
        let ft = table(
            "CAPACITY 64, FLOW tag 1 rate 1M via 10.0.1.1 output 1, \
             FLOW tag 2 rate 1M output 0, FLOW tag 3 rate 1M via 10.0.3.1 output 5",
        );
        let mut h = harness(&CLASS, "ft, MEMREFS true", &ft, 2);
        h.push_packets(0, [classified(1), classified(2), classified(3)]);
        h.push_packets(0, [Packet::from_slice(&MPLS_TCP).unwrap()]);
        let out1 = h.take(1);
        assert_eq!(out1.len(), 1);
        assert_eq!(out1[0].anno().dst_ip, Ipv4Addr::new(10, 0, 1, 1));
        assert_eq!(out1[0].anno().paint, 1);
        let out0 = h.take(0);
        assert_eq!(out0.len(), 1);
        // No next hop: the destination annotation is kept.
        assert_eq!(out0[0].anno().dst_ip, Ipv4Addr::new(10, 34, 0, 1));
        assert_eq!(out0[0].data(), &MPLS_TCP[..]);
        let s = h.stats();
        assert_eq!(s.get("forwarded"), Some(2));
        assert_eq!(s.get("no_output"), Some(1));
        assert_eq!(s.get("no_flow"), Some(1));
        // Three route words read; the packet without a flow reads none.
        assert_eq!(s.get("mem_packets"), Some(4));
        assert_eq!(s.get("mem_refs"), Some(3));
        assert_eq!(s.get("mem_words"), Some(3));
    }

    #[test]
    fn routes_change_with_the_table() {
        let ft = table("CAPACITY 8, FLOW tag 4 rate 1M output 0");
        let mut h = harness(&CLASS, "ft", &ft, 2);
        h.push_packets(0, [classified(4)]);
        ft.remove(&bricks_qos::flow::FlowKey::Tag(4)).unwrap();
        ft.add(&bricks_qos::file::parse_flow("tag 4 rate 1M via 10.9.9.9 output 1").unwrap())
            .unwrap();
        h.push_packets(0, [classified(4)]);
        assert_eq!(h.take(0).len(), 1);
        let out1 = h.take(1);
        assert_eq!(out1[0].anno().dst_ip, Ipv4Addr::new(10, 9, 9, 9));
    }
}

/// Route selection "look" (by flow record, and by source route) and "pre"
/// (RadixIPLookup, a 4-bit-stride trie) on a topology where both apply:
/// every flow's record and every packet's source route were set from the
/// routes, so all three send each packet the same way.
#[cfg(test)]
mod look_and_pre_agree {
    use super::CLASS as FLOW_LOOKUP;
    use crate::qos::testutil::{harness, table};
    use crate::qos::{sroute_encap, sroute_lookup, tag_classifier};
    use crate::route::lookup::RADIX;
    use crate::vrouter::testdata::{labelled, IPV4_UDP};
    use bricks_element::Packet;
    use bricks_runtime::testing::Harness;
    use std::net::Ipv4Addr;

    /// Routes: (prefix, gateway, output).
    const ROUTES: [(&str, &str, u16); 4] = [
        ("10.1.0.0/16", "10.0.1.1", 1),
        ("10.1.2.0/24", "10.0.2.1", 2),
        ("192.0.2.0/24", "10.0.3.1", 3),
        ("0.0.0.0/0", "10.0.0.254", 0),
    ];

    /// (destination, the route "pre" picks: gateway and output).
    const PACKETS: [([u8; 4], [u8; 4], u16); 5] = [
        ([10, 1, 9, 9], [10, 0, 1, 1], 1),
        ([10, 1, 2, 7], [10, 0, 2, 1], 2),
        ([192, 0, 2, 200], [10, 0, 3, 1], 3),
        ([8, 8, 8, 8], [10, 0, 0, 254], 0),
        ([10, 2, 0, 1], [10, 0, 0, 254], 0),
    ];

    fn to(dst: [u8; 4]) -> Vec<u8> {
        let mut f = IPV4_UDP.to_vec();
        f[30..34].copy_from_slice(&dst);
        f
    }

    fn with_dst_anno(f: &[u8], dst: [u8; 4]) -> Packet {
        let mut p = Packet::from_slice(f).unwrap();
        p.anno_mut().dst_ip = Ipv4Addr::from(dst);
        p
    }

    /// Where each element sent each packet: (output, dst_ip annotation).
    fn outputs(h: &mut Harness, n: usize) -> Vec<(usize, Ipv4Addr)> {
        let mut v = Vec::new();
        for port in 0..n {
            for p in h.take(port) {
                v.push((port, p.anno().dst_ip));
            }
        }
        v
    }

    #[test]
    fn look_and_pre_send_every_packet_the_same_way() {
        let routes: Vec<String> = ROUTES
            .iter()
            .map(|(p, g, o)| format!("{p} {g} {o}"))
            .collect();
        let mut pre = Harness::push(&RADIX, &routes.join(", "), 1, 4);
        // One flow per packet, tagged with its index, its record filled
        // from the route the trie gives.
        let flows: Vec<String> = PACKETS
            .iter()
            .enumerate()
            .map(|(i, (_, gw, out))| {
                format!(
                    "FLOW tag {i} rate 1M via {} output {out}",
                    Ipv4Addr::from(*gw)
                )
            })
            .collect();
        let ft = table(&format!("CAPACITY 16, {}", flows.join(", ")));
        let mut classify = harness(&tag_classifier::CLASS, "ft", &ft, 2);
        let mut look = harness(&FLOW_LOOKUP, "ft", &ft, 4);
        let mut srl = Harness::push(&sroute_lookup::CLASS, "", 1, 2);
        for (i, (dst, gw, out)) in PACKETS.iter().enumerate() {
            let plain = to(*dst);
            pre.push_packets(0, [with_dst_anno(&plain, *dst)]);
            let want = vec![(usize::from(*out), Ipv4Addr::from(*gw))];
            assert_eq!(outputs(&mut pre, 4), want, "pre {dst:?}");

            classify.push_bytes(0, &labelled(&plain, &[(i as u32, 0, 64)]));
            let classified: Vec<Packet> = classify
                .take(0)
                .into_iter()
                .map(|mut p| {
                    p.anno_mut().dst_ip = Ipv4Addr::from(*dst);
                    p
                })
                .collect();
            assert_eq!(classified.len(), 1);
            look.push_packets(0, classified);
            assert_eq!(outputs(&mut look, 4), want, "look (flow) {dst:?}");

            let mut enc = Harness::push(
                &sroute_encap::CLASS,
                &format!("{}:{out} 10.255.0.1:0", Ipv4Addr::from(*gw)),
                1,
                1,
            );
            enc.push_bytes(0, &plain);
            srl.push_packets(0, enc.take(0));
            let got: Vec<(usize, Ipv4Addr)> = srl
                .take(0)
                .into_iter()
                .map(|p| (usize::from(p.anno().paint), p.anno().dst_ip))
                .collect();
            assert_eq!(got, want, "look (source route) {dst:?}");
        }
    }
}
