//! `StripEtherVLANHeader`: removes the Ethernet header of frames, 802.1Q
//! tag included, and keeps the tag's TCI in the packet's annotation
//! (Click's `elements/ethernet/stripethervlanheader.cc`).
//!
//! The frame start moves forward past the header, so nothing is copied;
//! an untagged frame is taken as the native VLAN's, or refused.

use super::{be16_at, ETHERTYPE_AT, ETHER_LEN};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::ethernet::EtherType;

/// The `StripEtherVLANHeader` class.
pub static CLASS: ElementClass = ElementClass {
    name: "StripEtherVLANHeader",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "strips the Ethernet header of 802.1Q frames, keeping the VLAN TCI",
    synopsis: "StripEtherVLANHeader([NATIVE_VLAN])",
    description: "Expects Ethernet frames. A frame whose type is 802.1Q (0x8100) loses \
        its 18-byte header, tag included, and the packet's VLAN TCI annotation is set to \
        the tag's TCI. An untagged frame is taken as NATIVE_VLAN's: it loses its 14-byte \
        header and the annotation is set to NATIVE_VLAN; with NATIVE_VLAN -1 it leaves on \
        output 1 instead, or is dropped if there is none (`untagged`). A frame too short \
        for the header it announces is dropped (`truncated`). As Click's.",
    ports: "one input; output 0 agnostic (stripped packets); optional output 1 push \
        (untagged frames when NATIVE_VLAN is -1)",
    keywords: &[Keyword {
        name: "NATIVE_VLAN",
        ty: "integer, -1 to 4095",
        default: Some("0"),
        doc: "the VLAN of untagged frames; -1: untagged frames are not stripped",
    }],
    counters: &[
        ("untagged", "untagged frames refused (NATIVE_VLAN -1)"),
        (
            "truncated",
            "frames shorter than the header they announce, dropped",
        ),
    ],
    example: "InfiniteSource(DATA \\<02 02 02 02 02 02 01 01 01 01 01 01 81 00 00 05 08 00 \
        45 00 00 14 00 00 40 00 40 11 00 00 0a 00 00 01 0a 00 00 02>, LIMIT 1) \
        -> StripEtherVLANHeader -> Discard;",
    see_also: &["EtherVLANEncap", "VLANDecap", "Strip"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let native: i64 = args.read_p("NATIVE_VLAN")?.unwrap_or(0);
    if !(-1..=0xfff).contains(&native) {
        return Err(ArgError::new(format!("bad NATIVE_VLAN {native}"))
            .with_help("a VLAN ID from 0 to 4095, or -1 to refuse untagged frames"));
    }
    Ok(Box::new(StripEtherVLANHeader {
        native: u16::try_from(native).ok(),
        has_reject: ports.noutputs() > 1,
        untagged: 0,
        truncated: 0,
    }))
}

/// Strips Ethernet and 802.1Q headers.
#[derive(Debug)]
pub struct StripEtherVLANHeader {
    /// `None` for NATIVE_VLAN -1.
    native: Option<u16>,
    has_reject: bool,
    untagged: u64,
    truncated: u64,
}

impl StripEtherVLANHeader {
    #[inline]
    fn strip(&mut self, p: &mut Packet) -> Option<usize> {
        let d = p.data();
        let Some(t) = be16_at(d, ETHERTYPE_AT) else {
            self.truncated += 1;
            return None;
        };
        if t == EtherType::VLAN.0 {
            if d.len() < ETHER_LEN + 4 {
                self.truncated += 1;
                return None;
            }
            let tci = u16::from_be_bytes([d[14], d[15]]);
            p.pull_front(ETHER_LEN + 4);
            p.anno_mut().vlan_tci = tci;
            return Some(0);
        }
        match self.native {
            Some(vlan) => {
                p.pull_front(ETHER_LEN);
                p.anno_mut().vlan_tci = vlan;
                Some(0)
            }
            None => {
                self.untagged += 1;
                self.has_reject.then_some(1)
            }
        }
    }
}

impl Element for StripEtherVLANHeader {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.strip(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.strip(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("untagged", self.untagged);
        s.counter("truncated", self.truncated);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::testdata::{ARP_REQUEST, VLAN_TCP};
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn strips_a_real_tagged_capture() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &VLAN_TCP);
        let out = h.take(0);
        assert_eq!(out[0].data(), &VLAN_TCP[18..]);
        assert_eq!(out[0].anno().vlan_tci, 0x01f7);
    }

    #[test]
    fn untagged_is_the_native_vlan_or_refused() {
        let mut h = Harness::push(&CLASS, "7", 1, 1);
        h.push_bytes(0, &ARP_REQUEST);
        let out = h.take(0);
        assert_eq!(out[0].data(), &ARP_REQUEST[14..]);
        assert_eq!(out[0].anno().vlan_tci, 7);
        let mut h = Harness::push(&CLASS, "NATIVE_VLAN -1", 1, 2);
        h.push_bytes(0, &ARP_REQUEST);
        assert!(h.take(0).is_empty());
        assert_eq!(h.take_bytes(1), vec![ARP_REQUEST.to_vec()]);
        assert_eq!(h.stats().get("untagged"), Some(1));
    }

    #[test]
    fn truncated_frames_are_dropped() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for n in [0, 5, 13, 16, 17] {
            h.push_bytes(0, &VLAN_TCP[..n]);
        }
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("truncated"), Some(5));
        // 14 bytes untagged: an empty payload, as in Click.
        h.push_bytes(0, &ARP_REQUEST[..14]);
        assert_eq!(h.take(0)[0].len(), 0);
    }

    #[test]
    fn arguments() {
        let ports = PortInfo::default();
        assert!(make_element(&CLASS, "4096", &ports).is_err());
        assert!(make_element(&CLASS, "-2", &ports).is_err());
        assert!(make_element(&CLASS, "NATIVE_VLAN 4095", &ports).is_ok());
        assert!(make_element(&CLASS, "FOO 1", &ports).is_err());
    }
}
