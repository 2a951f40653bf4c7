//! `ReadAnno`: sets a packet's annotations from the 48-byte Click
//! annotation area at its front (Click's `elements/wifi/readanno.cc`),
//! undoing `PushAnno`; the bytes stay in the packet, as in Click.

use super::push_anno::{set_anno, ANNO_SIZE};
use super::{SimpleAction, SimpleElement};
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, Packet, PortInfo};

/// The `ReadAnno` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ReadAnno",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "reads annotations from the front of packets",
    synopsis: "ReadAnno()",
    description: "Sets each packet's annotations from its first 48 bytes, read as Click's \
        annotation area (as PushAnno writes it), and leaves the bytes in the packet (Strip \
        removes them). bricks' annotations are named fields: bytes 0-3 set the IPv4 \
        destination annotation, and bytes 0-15 the IPv6 one when 4-15 are not all zero; \
        16 the paint; 17 the ICMP parameter problem pointer (0: none); 19 the \
        fix-IP-source flag (not 0: set); 20-21 the VLAN TCI, low byte first. Other bytes \
        have no bricks annotation and are ignored. Packets shorter than 48 bytes (Click \
        reads past their end) are dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[("drops", "packets shorter than 48 bytes")],
    example: "InfiniteSource(LIMIT 1) -> Paint(7) -> PushAnno -> ReadAnno -> Strip(48) \
        -> CheckPaint(7) -> Discard;",
    see_also: &["PushAnno", "Strip"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(SimpleElement::new(ReadAnno)))
}

/// Reads the annotation area.
#[derive(Debug)]
pub struct ReadAnno;

impl SimpleAction for ReadAnno {
    /// False for a packet shorter than the area.
    fn simple_action(&mut self, p: &mut Packet) -> bool {
        let Some(area) = p.data().first_chunk::<ANNO_SIZE>().copied() else {
            return false;
        };
        set_anno(p.anno_mut(), &area);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;
    use std::net::Ipv4Addr;

    #[test]
    fn reads_and_keeps_the_bytes() {
        let mut f = vec![192, 168, 1, 1];
        f.extend_from_slice(&[0; 12]);
        f.extend_from_slice(&[42, 0, 0, 0, 0x0a, 0x00]);
        f.extend_from_slice(&[0xaa; 26]);
        f.extend_from_slice(b"data");
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &f);
        h.push_bytes(0, &f[..47]);
        let out = h.take(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &f[..]);
        let a = out[0].anno();
        assert_eq!(a.dst_ip, Ipv4Addr::new(192, 168, 1, 1));
        assert!(a.dst_ip6.is_unspecified());
        assert_eq!(a.paint, 42);
        assert_eq!(a.vlan_tci, 10);
        assert_eq!(a.param_off, None);
        assert_eq!(h.stats().get("drops"), Some(1));
    }
}
