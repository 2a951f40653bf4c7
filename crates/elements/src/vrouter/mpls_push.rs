//! `MPLSPush`: pushes an MPLS label stack entry onto Ethernet frames
//! (RFC 3032 sections 2.1 and 5): the ingress of a label-switched virtual
//! link (Egi et al. §3.2 name MPLS labels among the tags that share a link
//! between virtual routers). Click has no MPLS elements; the name and
//! arguments are bricks' own.
//!
//! The Ethernet header (with its VLAN tags) moves 4 bytes back into the
//! headroom and the entry goes between it and the payload, so the payload
//! is never copied.

use super::{be16_at, is_mpls, payload_type_at, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_MPLS};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_wire::mpls::LABEL_MAX;

/// The `MPLSPush` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MPLSPush",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "pushes an MPLS label onto Ethernet frames",
    synopsis: "MPLSPush(LABEL [, TC, TTL])",
    description: "Expects Ethernet frames, untagged or with up to two VLAN tags, and inserts \
        an MPLS label stack entry (RFC 3032) with label LABEL and traffic class TC between \
        the Ethernet header and the payload. If the payload was not MPLS, the new entry is \
        the bottom of the stack and the frame's type (behind its VLAN tags) becomes 0x8847; \
        if it was (type 0x8847 or 0x8848), the entry goes on top of the stack and the type \
        stays. Without TTL the entry's TTL is copied from what it labels: the IPv4 TTL, the \
        IPv6 hop limit, or the TTL of the entry below; anything else gets 255. The entry is \
        made in the buffer's headroom; a frame ending inside its Ethernet header or VLAN tags \
        is dropped and counted, and so is one with less than 4 bytes of headroom.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "LABEL",
            ty: "integer 0 to 1048575",
            default: None,
            doc: "the label",
        },
        Keyword {
            name: "TC",
            ty: "integer 0 to 7",
            default: Some("0"),
            doc: "traffic class (RFC 5462; formerly EXP)",
        },
        Keyword {
            name: "TTL",
            ty: "integer 0 to 255",
            default: Some("copied from the payload"),
            doc: "the entry's time to live",
        },
    ],
    counters: &[
        (
            "truncated",
            "frames ending inside their Ethernet header or VLAN tags, dropped",
        ),
        (
            "no_headroom",
            "frames dropped for lack of 4 bytes of headroom",
        ),
    ],
    example: "InfiniteSource(DATA \\<00 00 c0 3b 71 ef 00 20 6a 12 34 56 08 00 45 00 00 14 \
        00 00 40 00 40 11 00 00 0a 00 00 01 0a 00 00 02>, LIMIT 1) \
        -> MPLSPush(100, TC 3) -> MPLSSwap(200) -> MPLSPop -> Discard;",
    see_also: &["MPLSPop", "MPLSSwap", "VRDemux"],
};

/// An MPLS label, 0 to 2^20 - 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Label(pub u32);

impl FromArg for Label {
    const TYPE: &'static str = "MPLS label (0 to 1048575)";
    fn from_arg(text: &str) -> Result<Self, String> {
        match u32::from_arg(text) {
            Ok(v) if v <= LABEL_MAX => Ok(Label(v)),
            _ => Err(format!("found `{text}`")),
        }
    }
}

/// A traffic class, 0 to 7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tc(pub u8);

impl FromArg for Tc {
    const TYPE: &'static str = "traffic class (0 to 7)";
    fn from_arg(text: &str) -> Result<Self, String> {
        match u8::from_arg(text) {
            Ok(v) if v <= 7 => Ok(Tc(v)),
            _ => Err(format!("found `{text}`")),
        }
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let label: Label = args.read_mp("LABEL")?;
    let tc: Tc = args.read_p("TC")?.unwrap_or(Tc(0));
    let ttl: Option<u8> = args.read_p("TTL")?;
    Ok(Box::new(MPLSPush {
        entry: label.0 << 12 | u32::from(tc.0) << 9,
        ttl,
        truncated: 0,
        no_headroom: 0,
    }))
}

/// Pushes one label stack entry.
#[derive(Debug)]
pub struct MPLSPush {
    /// Label and traffic class in place; bottom of stack and TTL are
    /// or'ed in per packet.
    entry: u32,
    ttl: Option<u8>,
    truncated: u64,
    no_headroom: u64,
}

/// TTL for a new entry on top of the payload at `payload` of type `t`.
#[inline(always)]
fn payload_ttl(t: u16, payload: &[u8]) -> u8 {
    let at = match t {
        ETHERTYPE_IPV4 if payload.first().is_some_and(|b| b >> 4 == 4) => 8,
        ETHERTYPE_IPV6 if payload.first().is_some_and(|b| b >> 4 == 6) => 7,
        t if is_mpls(t) => 3,
        _ => return 255,
    };
    payload.get(at).copied().unwrap_or(255)
}

impl MPLSPush {
    /// Pushes the entry onto `p`; false when the frame is dropped.
    #[inline(always)]
    fn label(&mut self, p: &mut Packet) -> bool {
        let d = p.data();
        let Some(at) = payload_type_at(d, 2) else {
            self.truncated += 1;
            return false;
        };
        // `payload_type_at` checked that the type field is there.
        let t = be16_at(d, at).unwrap_or(0);
        let bottom = !is_mpls(t);
        let ttl = self
            .ttl
            .unwrap_or_else(|| payload_ttl(t, d.get(at + 2..).unwrap_or(&[])));
        let entry = self.entry | u32::from(bottom) << 8 | u32::from(ttl);
        if p.push_front(4).is_err() {
            self.no_headroom += 1;
            return false;
        }
        let d = p.data_mut();
        // The header up to the type field moves back 4 bytes; the type
        // field is written again (0x8847 over a new stack, the old MPLS
        // type on top of one) and the entry follows it.
        d.copy_within(4..at + 4, 0);
        let t = if bottom { ETHERTYPE_MPLS } else { t };
        d[at..at + 2].copy_from_slice(&t.to_be_bytes());
        d[at + 2..at + 6].copy_from_slice(&entry.to_be_bytes());
        true
    }

    #[inline]
    fn push_all(&mut self, batch: &mut Batch) {
        batch.retain(|p| self.label(p));
    }
}

impl Element for MPLSPush {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.push_all(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.push_all(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("truncated", self.truncated);
        s.counter("no_headroom", self.no_headroom);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::testdata::{labelled, tagged, ARP_REQUEST, IPV4_UDP, MPLS_TCP};
    use bricks_packet::HEADROOM;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn rebuilds_a_real_capture() {
        // The capture's payload under label 29, TC 6, TTL 255: pushing
        // the same entry onto the unlabelled frame gives the capture back.
        let plain = [&MPLS_TCP[..12], &[0x08, 0x00], &MPLS_TCP[18..]].concat();
        let mut h = Harness::push(&CLASS, "29, 6", 1, 1);
        h.push_bytes(0, &plain);
        let out = h.take(0);
        assert_eq!(out[0].data(), &MPLS_TCP[..]);
        assert_eq!(out[0].headroom(), HEADROOM - 4);
    }

    #[test]
    fn ttl_copied_from_ipv4_or_given() {
        let mut h = Harness::push(&CLASS, "100", 1, 1);
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take_bytes(0)[0], labelled(&IPV4_UDP, &[(100, 0, 64)]));
        let mut h = Harness::push(&CLASS, "LABEL 100, TC 7, TTL 9", 1, 1);
        h.push_bytes(0, &IPV4_UDP);
        assert_eq!(h.take_bytes(0)[0], labelled(&IPV4_UDP, &[(100, 7, 9)]));
    }

    #[test]
    fn pushes_on_top_of_a_stack() {
        let one = labelled(&IPV4_UDP, &[(5, 1, 17)]);
        let mut h = Harness::push(&CLASS, "1048575", 1, 1);
        h.push_bytes(0, &one);
        // The old entry keeps its bottom-of-stack bit, the new one has it
        // clear, and the TTL comes from the entry below.
        assert_eq!(
            h.take_bytes(0)[0],
            labelled(&IPV4_UDP, &[(1_048_575, 0, 17), (5, 1, 17)])
        );
    }

    #[test]
    fn non_ip_payloads_and_vlan_tags() {
        let mut h = Harness::push(&CLASS, "7", 1, 1);
        h.push_bytes(0, &ARP_REQUEST);
        assert_eq!(h.take_bytes(0)[0], labelled(&ARP_REQUEST, &[(7, 0, 255)]));
        // Behind a VLAN tag: the label goes after the tag.
        let f = tagged(&IPV4_UDP, &[(0x8100, 10)]);
        h.push_bytes(0, &f);
        let want = tagged(&labelled(&IPV4_UDP, &[(7, 0, 64)]), &[(0x8100, 10)]);
        assert_eq!(h.take_bytes(0)[0], want);
    }

    #[test]
    fn truncated_frames_and_headroom() {
        let mut h = Harness::push(&CLASS, "7", 1, 1);
        let f = tagged(&IPV4_UDP, &[(0x8100, 10)]);
        for len in [0, 1, 13, 15, 17] {
            h.push_bytes(0, &f[..len]);
        }
        let mut full = Packet::from_slice(&IPV4_UDP).unwrap();
        full.push_front(HEADROOM - 3).unwrap();
        h.push_packets(0, [full]);
        // An IPv4 type with no payload at all still gets a label (TTL 255).
        h.push_bytes(0, &IPV4_UDP[..14]);
        assert_eq!(
            h.take_bytes(0),
            vec![labelled(&IPV4_UDP[..14], &[(7, 0, 255)])]
        );
        assert_eq!(h.stats().get("truncated"), Some(5));
        assert_eq!(h.stats().get("no_headroom"), Some(1));
    }

    #[test]
    fn arguments_are_checked() {
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(make("").unwrap_err().contains("LABEL"));
        assert!(make("1048576").unwrap_err().contains("LABEL"));
        assert!(make("1, 8").unwrap_err().contains("TC"));
        assert!(make("1, 0, 256").unwrap_err().contains("TTL"));
        assert!(make("1, BOS 1").is_err());
        assert!(make("0, 0, 0").is_ok());
    }
}
