//! `VLANDecap`: removes the outer 802.1Q or 802.1ad tag of Ethernet frames
//! and keeps its TCI in the packet's annotation (Click's
//! `elements/ethernet/vlandecap.cc`).
//!
//! The 12 address bytes move forward over the tag, so the payload is never
//! copied; an untagged frame passes unchanged, as in Click.

use super::{be16_at, ETHERTYPE_AT, ETHER_LEN};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, PortInfo,
    Stats,
};
use bricks_wire::ethernet::EtherType;

/// The `VLANDecap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "VLANDecap",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "removes the 802.1Q VLAN tag of Ethernet frames",
    synopsis: "VLANDecap([ANNO, KEYWORDS ETHERTYPE])",
    description: "Expects Ethernet frames, possibly tagged. A frame whose type is a tag \
        protocol identifier (ETHERTYPE, 0x8100 unless given) loses \
        its outer tag and becomes an ordinary Ethernet frame of the type the tag carried; \
        when ANNO is true the packet's VLAN TCI annotation is set to the tag's TCI, or to 0 \
        for an untagged frame, which passes unchanged. A frame too short to hold its \
        Ethernet header, or the whole tag it announces, is dropped and counted. Only the \
        outer tag goes: a Q-in-Q frame needs two VLANDecaps.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "ANNO",
            ty: "boolean",
            default: Some("true"),
            doc: "set the VLAN TCI annotation (VLANEncap(ANNO) reads it back)",
        },
        Keyword {
            name: "ETHERTYPE",
            ty: "unsigned 16-bit integer",
            default: Some("0x8100"),
            doc: "the only tag protocol identifier to remove",
        },
    ],
    counters: &[
        (
            "untagged",
            "frames that carried no tag and passed unchanged",
        ),
        (
            "truncated",
            "frames shorter than an Ethernet header or ending inside their tag, dropped",
        ),
    ],
    example: "InfiniteSource(DATA \\<00 00 c0 3b 71 ef 00 20 6a 12 34 56 81 00 00 0a 08 00 \
        45 00 00 14 00 00 40 00 40 11 00 00 0a 00 00 01 0a 00 00 02>, LIMIT 1) \
        -> VLANDecap -> VLANEncap(ANNO) -> Discard;",
    see_also: &["VLANEncap", "EtherVLANEncap", "VRDemux"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    // A bare `ANNO` (a positional value, as in Click) means true.
    let anno = match args.read_p::<String>("ANNO")? {
        None => true,
        Some(v) if v.is_empty() || v == "ANNO" => true,
        Some(v) => bool::from_arg(&v).map_err(|why| {
            ArgError::new(format!("bad argument ANNO: expected {}, {why}", bool::TYPE))
        })?,
    };
    // Click's default is 802.1Q's 0x8100 alone: an 802.1ad S-tag stays
    // unless ETHERTYPE 0x88a8 asks for it (Click's VLANEncap-02 test).
    let tpid: u16 = args.read("ETHERTYPE")?.unwrap_or(EtherType::VLAN.0);
    Ok(Box::new(VLANDecap {
        anno,
        tpid,
        untagged: 0,
        truncated: 0,
    }))
}

/// Removes 802.1Q tags.
#[derive(Debug)]
pub struct VLANDecap {
    anno: bool,
    tpid: u16,
    untagged: u64,
    truncated: u64,
}

impl VLANDecap {
    #[inline]
    fn decap(&mut self, batch: &mut Batch) {
        let (mut untagged, mut truncated) = (0u64, 0u64);
        let (anno, tpid) = (self.anno, self.tpid);
        batch.retain(|p| {
            let d = p.data_mut();
            let Some(t) = be16_at(d, ETHERTYPE_AT) else {
                truncated += 1;
                return false;
            };
            let is_tag = t == tpid;
            let tci = if is_tag {
                if d.len() < ETHER_LEN + 4 {
                    truncated += 1;
                    return false;
                }
                let tci = u16::from_be_bytes([d[14], d[15]]);
                d.copy_within(0..12, 4);
                p.pull_front(4);
                tci
            } else {
                untagged += 1;
                0
            };
            if anno {
                p.anno_mut().vlan_tci = tci;
            }
            true
        });
        self.untagged += untagged;
        self.truncated += truncated;
    }
}

impl Element for VLANDecap {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.decap(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.decap(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("untagged", self.untagged);
        s.counter("truncated", self.truncated);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::testdata::{tagged, ARP_REQUEST, IPV4_UDP, VLAN_TCP};
    use crate::vrouter::vlan_encap;
    use bricks_element::Packet;
    use bricks_packet::HEADROOM;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn strips_a_real_capture() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &VLAN_TCP);
        let out = h.take(0);
        assert_eq!(
            out[0].data(),
            &[&VLAN_TCP[..12], &VLAN_TCP[16..]].concat()[..]
        );
        assert_eq!(out[0].anno().vlan_tci, 0x01f7);
        assert_eq!(out[0].headroom(), HEADROOM + 4);
    }

    #[test]
    fn untagged_passes_unchanged_with_tci_0() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let mut p = Packet::from_slice(&ARP_REQUEST).unwrap();
        p.anno_mut().vlan_tci = 77;
        h.push_packets(0, [p]);
        let out = h.take(0);
        assert_eq!(out[0].data(), &ARP_REQUEST[..]);
        assert_eq!(out[0].anno().vlan_tci, 0);
        assert_eq!(h.stats().get("untagged"), Some(1));
        // ANNO false leaves the annotation alone.
        let mut h = Harness::push(&CLASS, "false", 1, 1);
        let mut p = Packet::from_slice(&VLAN_TCP).unwrap();
        p.anno_mut().vlan_tci = 77;
        h.push_packets(0, [p]);
        assert_eq!(h.take(0)[0].anno().vlan_tci, 77);
    }

    #[test]
    fn outer_tag_only_and_ethertype() {
        let qinq = tagged(&IPV4_UDP, &[(0x88a8, 100), (0x8100, 200)]);
        // By default, as Click, only 0x8100 is a tag: the S-tag stays.
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &qinq);
        assert_eq!(h.take_bytes(0)[0], qinq);
        let mut h = Harness::push(&CLASS, "ETHERTYPE 0x88a8", 1, 1);
        h.push_bytes(0, &qinq);
        let out = h.take(0);
        assert_eq!(out[0].data(), &tagged(&IPV4_UDP, &[(0x8100, 200)])[..]);
        assert_eq!(out[0].anno().vlan_tci, 100);
        // Only the given identifier is a tag.
        let mut h = Harness::push(&CLASS, "ETHERTYPE 0x8100", 1, 1);
        h.push_bytes(0, &qinq);
        assert_eq!(h.take_bytes(0)[0], qinq);
        let mut h = Harness::push(&CLASS, "ETHERTYPE 0x9100", 1, 1);
        h.push_bytes(0, &tagged(&IPV4_UDP, &[(0x9100, 5)]));
        assert_eq!(h.take_bytes(0)[0], IPV4_UDP.to_vec());
    }

    #[test]
    fn truncated_tags_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let f = tagged(&IPV4_UDP, &[(0x8100, 3)]);
        for len in [0, 5, 13, 14, 15, 17] {
            h.push_bytes(0, &f[..len]);
        }
        h.push_bytes(0, &f[..18]);
        assert_eq!(h.take_bytes(0), vec![IPV4_UDP[..14].to_vec()]);
        assert_eq!(h.stats().get("truncated"), Some(6));
    }

    #[test]
    fn encap_then_decap_round_trips() {
        for args in [
            "VLAN_ID 1",
            "VLAN_ID 4094, VLAN_PCP 7",
            "0xffff, NATIVE_VLAN -1",
        ] {
            let mut enc = Harness::push(&vlan_encap::CLASS, args, 1, 1);
            let mut dec = Harness::push(&CLASS, "", 1, 1);
            let mut again = Harness::push(&vlan_encap::CLASS, "ANNO", 1, 1);
            for f in [&IPV4_UDP[..], &ARP_REQUEST[..], &VLAN_TCP[..]] {
                enc.push_bytes(0, f);
                let tagged = enc.take(0);
                let tci = u16::from_be_bytes([tagged[0].data()[14], tagged[0].data()[15]]);
                dec.push_packets(0, tagged);
                let plain = dec.take(0);
                assert_eq!(plain[0].data(), f, "{args}");
                assert_eq!(plain[0].anno().vlan_tci, tci);
                again.push_packets(0, plain);
                assert_eq!(again.take_bytes(0)[0], tagged_copy(f, tci), "{args}");
            }
        }
    }

    fn tagged_copy(f: &[u8], tci: u16) -> Vec<u8> {
        tagged(f, &[(0x8100, tci)])
    }

    #[test]
    fn arguments_are_checked() {
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(make("ANNO maybe").unwrap_err().contains("ANNO"));
        assert!(make("ETHERTYPE 0x10000").unwrap_err().contains("ETHERTYPE"));
        assert!(make("VLAN 3").is_err());
        assert!(make("ANNO false, ETHERTYPE 0x88a8").is_ok());
        assert!(make("ANNO").is_ok());
        assert!(make("true").is_ok());
    }
}
