//! `TagClassifier`: flow classification by tag (Hardekopf et al. §3.1):
//! a header field of the packet is the flow ID, which indexes the flow
//! table's array directly, one memory reference per packet whatever the
//! number of flows. bricks' own element; Click has none.
//!
//! The paper leaves the tag open; bricks reads the top MPLS label (20
//! bits, RFC 3032) by default, a label-switched network's natural flow
//! ID, and also offers the VLAN ID and the IPv4 DSCP.

use super::flow_table::{read_table, RECORD_WORDS};
use super::memrefs::{self, MemCount};
use crate::vrouter::{be16_at, is_mpls, payload_type_at, ETHERTYPE_IPV4};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_qos::flow::{FlowTable, Mode};
use std::sync::Arc;

/// The `TagClassifier` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TagClassifier",
    ports: "1/1-2",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "finds each packet's flow by the flow ID it carries (a tag)",
    synopsis: "TagClassifier(TABLE [, FIELD mpls|vlan|dscp, METER bool, MEMREFS bool])",
    description: "Reads the flow ID from a header field of each Ethernet frame and looks it \
        up in TABLE, a FlowTable in MODE tag: the ID indexes the table's array, one memory \
        reference per packet. A packet of a known flow gets the flow's record in its flow \
        annotation (for FlowLookup and VirtualClock), is counted in the flow's meters \
        (packets and bytes, unless METER false) and leaves by output 0. A packet whose ID \
        names no flow, whose ID is beyond the table, or that carries no such field leaves by \
        output 1, or is dropped and counted when output 1 is not connected.\
        \n\nFIELD mpls (the default) is the top label of an MPLS frame (type 0x8847 or \
        0x8848, behind up to two VLAN tags): 20 bits. FIELD vlan is the outer 802.1Q VLAN ID \
        (12 bits). FIELD dscp is the DSCP of an IPv4 packet (6 bits, behind up to two VLAN \
        tags).\
        \n\nWith MEMREFS true (or under `bricks run --memrefs`) the counters mem_packets, \
        mem_refs and mem_words count the table memory each packet costs (Hardekopf et al.'s \
        units, 32-bit words): one reference of 8 words (the flow's record) per packet whose \
        ID is within the table, none for the others; every packet is counted in \
        mem_packets.",
    ports: "one input; output 0 packets of known flows, output 1 (optional) the others; agnostic",
    keywords: &[
        Keyword {
            name: "TABLE",
            ty: "FlowTable element name",
            default: None,
            doc: "the flow table (MODE tag); positional",
        },
        Keyword {
            name: "FIELD",
            ty: "mpls, vlan or dscp",
            default: Some("mpls"),
            doc: "the header field that carries the flow ID",
        },
        Keyword {
            name: "METER",
            ty: "boolean",
            default: Some("true"),
            doc: "count each packet in its flow's meters (packets, bytes)",
        },
        memrefs::KEYWORD,
    ],
    counters: &[
        ("classified", "packets of known flows, to output 0"),
        (
            "unknown",
            "packets whose flow ID names no flow, to output 1",
        ),
        (
            "beyond",
            "packets whose flow ID is beyond the table, to output 1",
        ),
        (
            "untagged",
            "packets without the field (or too short for it), to output 1",
        ),
        memrefs::PACKETS,
        memrefs::REFS,
        memrefs::WORDS,
    ],
    example: "ft :: FlowTable(CAPACITY 64, FLOW tag 29 rate 1M);\n\
        InfiniteSource(DATA \\<00 30 96 e6 fc 39 00 30 96 05 28 38 88 47 00 01 dd ff \
        45 c0 00 14 00 03 00 00 ff 06 a4 e8 0a 01 02 01 0a 22 00 01>, LIMIT 3) \
        -> tc :: TagClassifier(ft, FIELD mpls) -> Discard;\ntc[1] -> Print(unknown) -> Discard;",
    see_also: &["FlowTable", "HashClassifier", "FlowLookup", "MPLSPush"],
};

/// Which header field carries the flow ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Mpls,
    Vlan,
    Dscp,
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let table = read_table(args)?;
    let field = match args.read::<String>("FIELD")?.as_deref() {
        None | Some("mpls") => Field::Mpls,
        Some("vlan") => Field::Vlan,
        Some("dscp") => Field::Dscp,
        Some(f) => {
            return Err(ArgError::new(format!(
                "bad argument FIELD: expected mpls, vlan or dscp, found `{f}`"
            )))
        }
    };
    let meter = args.read("METER")?.unwrap_or(true);
    let count = args.memrefs()?;
    if table.mode() != Mode::Tag {
        return Err(ArgError::new(
            "TABLE is a FlowTable in MODE match: TagClassifier needs MODE tag",
        )
        .with_help("use HashClassifier for a match table"));
    }
    Ok(if count {
        Box::new(TagClassifier::<true>::new(table, field, meter))
    } else {
        Box::new(TagClassifier::<false>::new(table, field, meter))
    })
}

/// Classifies by tag; with `M` it counts memory references.
pub struct TagClassifier<const M: bool = false> {
    table: Arc<FlowTable>,
    field: Field,
    meter: bool,
    classified: u64,
    unknown: u64,
    beyond: u64,
    untagged: u64,
    mem: MemCount,
}

impl<const M: bool> TagClassifier<M> {
    fn new(table: Arc<FlowTable>, field: Field, meter: bool) -> TagClassifier<M> {
        TagClassifier {
            table,
            field,
            meter,
            classified: 0,
            unknown: 0,
            beyond: 0,
            untagged: 0,
            mem: MemCount::default(),
        }
    }
}

/// The flow ID a frame carries in `field`, if it carries one.
#[inline(always)]
fn tag_of(d: &[u8], field: Field) -> Option<u32> {
    match field {
        Field::Mpls => {
            let at = payload_type_at(d, 2)?;
            if !is_mpls(be16_at(d, at)?) {
                return None;
            }
            let e = d.get(at + 2..at + 6)?;
            Some(u32::from_be_bytes([e[0], e[1], e[2], e[3]]) >> 12)
        }
        Field::Vlan => {
            let t = be16_at(d, 12)?;
            if !crate::vrouter::is_vlan_tpid(t) {
                return None;
            }
            Some(u32::from(be16_at(d, 14)? & 0xfff))
        }
        Field::Dscp => {
            let at = payload_type_at(d, 2)?;
            if be16_at(d, at)? != ETHERTYPE_IPV4 {
                return None;
            }
            let ip = d.get(at + 2..at + 4)?;
            if ip[0] >> 4 != 4 {
                return None;
            }
            Some(u32::from(ip[1] >> 2))
        }
    }
}

impl<const M: bool> TagClassifier<M> {
    #[inline(always)]
    fn classify(&mut self, p: &mut Packet) -> usize {
        if M {
            self.mem.packets += 1;
        }
        let Some(tag) = tag_of(p.data(), self.field) else {
            self.untagged += 1;
            return 1;
        };
        if tag >= self.table.capacity() {
            self.beyond += 1;
            return 1;
        }
        if M {
            self.mem.mem.add(1, RECORD_WORDS);
        }
        match self.table.lookup_tag(tag) {
            Some(i) => {
                if self.meter {
                    self.table.meter(i, p.len() as u64);
                }
                p.anno_mut().set_flow_record(i);
                self.classified += 1;
                0
            }
            None => {
                self.unknown += 1;
                1
            }
        }
    }
}

impl<const M: bool> Element for TagClassifier<M> {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| Some(self.classify(p)));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("classified", self.classified);
        s.counter("unknown", self.unknown);
        s.counter("beyond", self.beyond);
        s.counter("untagged", self.untagged);
        if M {
            self.mem.stats(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::testutil::{harness, table};
    use crate::vrouter::testdata::{labelled, tagged, IPV4_UDP, MPLS_TCP, VLAN_TCP};

    #[test]
    fn mpls_labels_find_their_flows() {
        let ft = table("CAPACITY 64, FLOW tag 29 rate 1M, FLOW tag 7 rate 64k");
        let mut h = harness(&CLASS, "ft", &ft, 2);
        let label7 = labelled(&IPV4_UDP, &[(7, 0, 64), (29, 0, 64)]);
        // 29 (known), 7 on top of 29 (known: the top label counts), 30
        // (unknown), 64 (beyond), an untagged frame, a truncated label.
        let frames: Vec<Vec<u8>> = vec![
            MPLS_TCP.to_vec(),
            label7,
            labelled(&IPV4_UDP, &[(30, 0, 64)]),
            labelled(&IPV4_UDP, &[(64, 0, 64)]),
            labelled(&IPV4_UDP, &[(0xfffff, 0, 64)]),
            IPV4_UDP.to_vec(),
            MPLS_TCP[..17].to_vec(),
        ];
        for f in &frames {
            h.push_bytes(0, f);
        }
        let out0 = h.take(0);
        assert_eq!(out0.len(), 2);
        assert_eq!(out0[0].anno().flow_record(), Some(29));
        assert_eq!(out0[1].anno().flow_record(), Some(7));
        assert_eq!(out0[0].data(), &MPLS_TCP[..]);
        let out1 = h.take(1);
        assert_eq!(out1.len(), 5);
        assert!(out1.iter().all(|p| p.anno().flow_record().is_none()));
        let s = h.stats();
        assert_eq!(s.get("classified"), Some(2));
        assert_eq!(s.get("unknown"), Some(1));
        assert_eq!(s.get("beyond"), Some(2));
        assert_eq!(s.get("untagged"), Some(2));
        let m = ft.meters(29);
        assert_eq!((m.packets, m.bytes), (1, 60));
        assert_eq!(s.get("mem_refs"), None);
        assert_eq!(s.get("mem_packets"), None);
    }

    #[test]
    fn memrefs_one_reference_of_eight_words_a_packet() {
        let ft = table("CAPACITY 64, FLOW tag 29 rate 1M, FLOW tag 7 rate 64k");
        let mut h = harness(&CLASS, "ft, MEMREFS true", &ft, 2);
        // Known, known, unknown (within the table), beyond, untagged.
        for f in [
            MPLS_TCP.to_vec(),
            labelled(&IPV4_UDP, &[(7, 0, 64)]),
            labelled(&IPV4_UDP, &[(30, 0, 64)]),
            labelled(&IPV4_UDP, &[(64, 0, 64)]),
            IPV4_UDP.to_vec(),
        ] {
            h.push_bytes(0, &f);
        }
        let s = h.stats();
        assert_eq!(s.get("mem_packets"), Some(5));
        // Three records read: one reference of 8 words each.
        assert_eq!(s.get("mem_refs"), Some(3));
        assert_eq!(s.get("mem_words"), Some(24));
        let mut h = harness(&CLASS, "ft, MEMREFS true", &ft, 2);
        for _ in 0..10 {
            h.push_bytes(0, &MPLS_TCP);
        }
        let s = h.stats();
        assert_eq!(
            (s.get("mem_packets"), s.get("mem_refs"), s.get("mem_words")),
            (Some(10), Some(10), Some(80))
        );
    }

    #[test]
    fn vlan_and_dscp_fields() {
        let ft = table("CAPACITY 4096, FLOW tag 503 rate 1M, FLOW tag 46 rate 1M");
        let mut h = harness(&CLASS, "ft, FIELD vlan, METER false", &ft, 2);
        h.push_bytes(0, &VLAN_TCP);
        h.push_bytes(0, &tagged(&IPV4_UDP, &[(0x8100, 0xe000 | 502)]));
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.take(1).len(), 2);
        assert_eq!(ft.meters(503).packets, 0);

        let mut h = harness(&CLASS, "ft, FIELD dscp", &ft, 2);
        let mut ef = IPV4_UDP;
        ef[15] = 46 << 2;
        h.push_bytes(0, &ef);
        h.push_bytes(0, &tagged(&ef, &[(0x8100, 5)]));
        h.push_bytes(0, &IPV4_UDP); // DSCP 0: no flow
        h.push_bytes(0, &MPLS_TCP); // not IPv4
        let out = h.take(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].anno().flow_record(), Some(46));
        assert_eq!(h.stats().get("untagged"), Some(1));
        assert_eq!(h.stats().get("unknown"), Some(1));
    }

    #[test]
    fn unconnected_output_1_drops_and_counts() {
        let ft = table("CAPACITY 64");
        let mut h = harness(&CLASS, "ft", &ft, 1);
        h.push_bytes(0, &MPLS_TCP);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("unknown"), Some(1));
    }

    #[test]
    fn arguments() {
        let ft = table("CAPACITY 64");
        let m = table("MODE match");
        for (args, t, why) in [
            ("ft, FIELD label", &ft, "expected mpls, vlan or dscp"),
            ("ft", &m, "needs MODE tag"),
            ("", &ft, "missing mandatory argument TABLE"),
            ("nope", &ft, "`nope` does not name an element"),
        ] {
            let e = crate::qos::testutil::try_harness(&CLASS, args, t, 2)
                .err()
                .unwrap();
            assert!(e.contains(why), "{args}: {e}");
        }
    }

    #[test]
    fn hostile_frames_never_panic() {
        let ft = table("CAPACITY 1048576, FLOW tag 0 rate 1");
        let mut h = harness(&CLASS, "ft", &ft, 2);
        for len in 0..MPLS_TCP.len() {
            h.push_bytes(0, &MPLS_TCP[..len]);
        }
        h.push_bytes(0, &labelled(&[0u8; 14], &[(0, 0, 0)]));
        assert_eq!(h.take(0).len() + h.take(1).len(), MPLS_TCP.len() + 1);
    }
}
