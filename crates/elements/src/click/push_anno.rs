//! `PushAnno`: prepends the packet's annotations as Click's 48-byte
//! annotation area (Click's `elements/wifi/pushanno.cc`), so that they
//! survive a trip through a capture file; `ReadAnno` reads them back.
//!
//! bricks' annotations are typed fields, not Click's byte area; the bytes
//! are the fields at Click's offsets (`include/click/packet_anno.hh`), as
//! Print's PRINTANNO shows them: 0-15 the destination address (IPv4 in
//! 0-3, or IPv6 in 0-15), 16 the paint, 17 the ICMP parameter problem
//! pointer, 19 the fix-IP-source flag, 20-21 the VLAN TCI in host
//! (little-endian) order. The other bytes are zero.

use super::{SimpleAction, SimpleElement};
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, Packet, PortInfo};
use bricks_packet::Annotations;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The `PushAnno` class.
pub static CLASS: ElementClass = ElementClass {
    name: "PushAnno",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

/// Click's annotation area size at user level (`Packet::anno_size`).
pub const ANNO_SIZE: usize = 48;

static MANUAL: Manual = Manual {
    summary: "pushes the annotations onto the front of packets",
    synopsis: "PushAnno()",
    description: "Prepends 48 bytes to each packet: its annotations laid out as Click's \
        annotation area, so that a capture file keeps them and ReadAnno can restore them. \
        bricks' annotations are named fields, so the bytes are those fields at Click's \
        offsets, as Print's PRINTANNO shows them: 0-15 the destination address \
        annotation (an IPv4 address in bytes 0-3, or an IPv6 one in 0-15), 16 the paint, \
        17 the ICMP parameter problem pointer, 19 the fix-IP-source flag (1 or 0), 20-21 \
        the VLAN TCI, low byte first (Click keeps it in host order). Bytes 18 and 22-47, \
        which bricks has no annotation for, are zero. A packet without 48 bytes of \
        headroom is dropped and counted (bricks' packets have 128).",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[("drops", "packets without room for the area")],
    example: "InfiniteSource(LIMIT 1) -> Paint(7) -> PushAnno -> ReadAnno -> Strip(48) \
        -> CheckPaint(7) -> Discard;",
    see_also: &["ReadAnno", "Print", "SetAnnoByte"],
};

/// The annotations as Click's annotation area.
pub(crate) fn anno_bytes(a: &Annotations) -> [u8; ANNO_SIZE] {
    let mut b = [0u8; ANNO_SIZE];
    if a.dst_ip6.is_unspecified() {
        b[..4].copy_from_slice(&a.dst_ip.octets());
    } else {
        b[..16].copy_from_slice(&a.dst_ip6.octets());
    }
    b[16] = a.paint;
    b[17] = a.param_off.unwrap_or(0);
    b[19] = u8::from(a.fix_ip_src);
    b[20..22].copy_from_slice(&a.vlan_tci.to_le_bytes());
    b
}

/// Sets the annotations from Click's annotation area `b` (the inverse of
/// [`anno_bytes`]): bytes 4-15 not all zero make bytes 0-15 the IPv6
/// destination; a parameter problem pointer of 0 reads as none.
pub(crate) fn set_anno(a: &mut Annotations, b: &[u8; ANNO_SIZE]) {
    let mut dst6 = [0u8; 16];
    dst6.copy_from_slice(&b[..16]);
    a.dst_ip = Ipv4Addr::new(b[0], b[1], b[2], b[3]);
    a.dst_ip6 = if b[4..16].iter().any(|&x| x != 0) {
        Ipv6Addr::from(dst6)
    } else {
        Ipv6Addr::UNSPECIFIED
    };
    a.paint = b[16];
    a.param_off = (b[17] != 0).then_some(b[17]);
    a.fix_ip_src = b[19] != 0;
    a.vlan_tci = u16::from_le_bytes([b[20], b[21]]);
}

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(SimpleElement::new(PushAnno)))
}

/// Prepends the annotation area.
#[derive(Debug)]
pub struct PushAnno;

impl SimpleAction for PushAnno {
    /// False for a packet without the headroom for the area.
    fn simple_action(&mut self, p: &mut Packet) -> bool {
        let area = anno_bytes(p.anno());
        p.push_front_bytes(&area).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    #[test]
    fn prepends_clicks_layout() {
        let mut p = Packet::from_slice(&[0xee; 10]).unwrap();
        {
            let a = p.anno_mut();
            a.dst_ip = Ipv4Addr::new(10, 0, 0, 1);
            a.paint = 7;
            a.param_off = Some(9);
            a.fix_ip_src = true;
            a.vlan_tci = 0x2064;
        }
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [p]);
        let o = &h.take_bytes(0)[0];
        let mut want = vec![10, 0, 0, 1];
        want.extend_from_slice(&[0; 12]);
        want.extend_from_slice(&[7, 9, 0, 1, 0x64, 0x20]);
        want.extend_from_slice(&[0; 26]);
        want.extend_from_slice(&[0xee; 10]);
        assert_eq!(*o, want);
    }

    #[test]
    fn ipv6_destination_and_round_trip() {
        let mut a = Annotations::default();
        a.dst_ip6 = "fe80::1".parse().unwrap();
        a.paint = 3;
        a.vlan_tci = 5;
        let b = anno_bytes(&a);
        assert_eq!(b[..2], [0xfe, 0x80]);
        assert_eq!(b[15], 1);
        let mut back = Annotations::default();
        set_anno(&mut back, &b);
        assert_eq!(back.dst_ip6, a.dst_ip6);
        assert_eq!((back.paint, back.vlan_tci), (3, 5));
        assert_eq!(back.param_off, None);
        assert!(!back.fix_ip_src);
    }

    #[test]
    fn no_headroom_is_dropped() {
        let mut p = Packet::from_slice(&[1; 4]).unwrap();
        let room = p.headroom();
        p.push_front(room - 10).unwrap();
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [p]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(1));
    }
}
