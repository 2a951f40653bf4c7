//! `MPLSPop`: pops the top MPLS label stack entry of Ethernet frames
//! (RFC 3032 section 3.13 on the labelled packet's type): the egress of a
//! label-switched virtual link. bricks' own element; Click has none.
//!
//! The Ethernet header (with its VLAN tags) moves 4 bytes forward over the
//! entry, so the payload is never copied. Popping the bottom entry leaves
//! a packet whose type no field names: the IP version nibble gives it.

use super::{be16_at, is_mpls, payload_type_at, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};

/// The `MPLSPop` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MPLSPop",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "pops the top MPLS label of Ethernet frames",
    synopsis: "MPLSPop",
    description: "Expects MPLS-labelled Ethernet frames (type 0x8847 or 0x8848, behind up to \
        two VLAN tags) and removes the top label stack entry. If it was the bottom of the \
        stack, the frame's type becomes 0x0800 or 0x86DD according to the version nibble of \
        the IP header that follows; a payload that is neither IPv4 nor IPv6 is dropped and \
        counted, since nothing else says what it is. Otherwise the type stays and the next \
        entry is the new top. The IP header is left as it is (RFC 3443's pipe model: the \
        label TTL is not copied into it). Frames that carry no label, frames ending inside \
        their header, their tags or the entries the stack announces are dropped and counted.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[
        ("not_mpls", "frames whose type is not MPLS, dropped"),
        (
            "truncated",
            "frames ending inside their header, a tag or a label stack entry, dropped",
        ),
        (
            "unknown_payload",
            "bottom entries popped off something that is not IPv4 or IPv6, dropped",
        ),
    ],
    example: "InfiniteSource(DATA \\<00 30 96 e6 fc 39 00 30 96 05 28 38 88 47 00 01 dd ff \
        45 c0 00 14 00 03 00 00 ff 06 a4 e8 0a 01 02 01 0a 22 00 01>, LIMIT 1) \
        -> MPLSPop -> Discard;",
    see_also: &["MPLSPush", "MPLSSwap", "VRDemux"],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(MPLSPop::default()))
}

/// Pops one label stack entry.
#[derive(Debug, Default)]
pub struct MPLSPop {
    not_mpls: u64,
    truncated: u64,
    unknown_payload: u64,
}

/// Why a frame was dropped.
enum Drop {
    NotMpls,
    Truncated,
    UnknownPayload,
}

/// Pops the top entry of `p`, or says why not.
#[inline(always)]
fn pop(p: &mut Packet) -> Result<(), Drop> {
    let d = p.data_mut();
    let at = payload_type_at(d, 2).ok_or(Drop::Truncated)?;
    let t = be16_at(d, at).unwrap_or(0);
    if !is_mpls(t) {
        return Err(Drop::NotMpls);
    }
    let entry = d.get(at + 2..at + 6).ok_or(Drop::Truncated)?;
    let bottom = entry[2] & 1 != 0;
    let t = if bottom {
        match d.get(at + 6).map(|b| b >> 4) {
            Some(4) => ETHERTYPE_IPV4,
            Some(6) => ETHERTYPE_IPV6,
            _ => return Err(Drop::UnknownPayload),
        }
    } else if d.len() < at + 10 {
        // The entry says another follows; the frame ends first.
        return Err(Drop::Truncated);
    } else {
        t
    };
    d.copy_within(0..at, 4);
    d[at + 4..at + 6].copy_from_slice(&t.to_be_bytes());
    p.pull_front(4);
    Ok(())
}

impl MPLSPop {
    #[inline]
    fn pop_all(&mut self, batch: &mut Batch) {
        batch.retain(|p| match pop(p) {
            Ok(()) => true,
            Err(why) => {
                match why {
                    Drop::NotMpls => self.not_mpls += 1,
                    Drop::Truncated => self.truncated += 1,
                    Drop::UnknownPayload => self.unknown_payload += 1,
                }
                false
            }
        });
    }
}

impl Element for MPLSPop {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.pop_all(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.pop_all(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("not_mpls", self.not_mpls);
        s.counter("truncated", self.truncated);
        s.counter("unknown_payload", self.unknown_payload);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::mpls_push;
    use crate::vrouter::testdata::{labelled, tagged, ARP_REQUEST, IPV4_UDP, MPLS_TCP};
    use bricks_packet::HEADROOM;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn pops_a_real_capture() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &MPLS_TCP);
        let out = h.take(0);
        assert_eq!(
            out[0].data(),
            &[&MPLS_TCP[..12], &[0x08, 0x00], &MPLS_TCP[18..]].concat()[..]
        );
        assert_eq!(out[0].headroom(), HEADROOM + 4);
    }

    #[test]
    fn ipv6_payload_gets_86dd() {
        let mut v6 = IPV4_UDP.to_vec();
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        v6[14] = 0x60;
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &labelled(&v6, &[(2, 0, 64)]));
        assert_eq!(h.take_bytes(0)[0], v6);
    }

    #[test]
    fn pops_one_entry_of_a_stack() {
        let two = labelled(&IPV4_UDP, &[(30, 1, 9), (40, 2, 8)]);
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &two);
        let one = h.take_bytes(0).remove(0);
        assert_eq!(one, labelled(&IPV4_UDP, &[(40, 2, 8)]));
        h.push_bytes(0, &one);
        assert_eq!(h.take_bytes(0)[0], IPV4_UDP.to_vec());
        // Behind a VLAN tag and with the multicast type.
        let mut f = tagged(&two, &[(0x8100, 5)]);
        f[16..18].copy_from_slice(&[0x88, 0x48]);
        h.push_bytes(0, &f);
        let mut want = tagged(&labelled(&IPV4_UDP, &[(40, 2, 8)]), &[(0x8100, 5)]);
        want[16..18].copy_from_slice(&[0x88, 0x48]);
        assert_eq!(h.take_bytes(0)[0], want);
    }

    #[test]
    fn push_then_pop_round_trips() {
        let mut push = Harness::push(&mpls_push::CLASS, "1234, 5", 1, 1);
        let mut pop = Harness::push(&CLASS, "", 1, 1);
        let tagged_udp = tagged(&IPV4_UDP, &[(0x88a8, 1), (0x8100, 2)]);
        for f in [&IPV4_UDP[..], &tagged_udp[..], &MPLS_TCP[..]] {
            push.push_bytes(0, f);
            pop.push_packets(0, push.take(0));
            assert_eq!(pop.take_bytes(0)[0], f.to_vec());
        }
    }

    #[test]
    fn malformed_stacks_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let two = labelled(&IPV4_UDP, &[(30, 1, 9), (40, 2, 8)]);
        // The frame ends inside the first entry, or where the second
        // should be.
        for len in [13, 15, 17, 18, 21] {
            h.push_bytes(0, &two[..len]);
        }
        // Bottom of stack with nothing, or not IP, after it.
        h.push_bytes(0, &labelled(&IPV4_UDP[..14], &[(1, 0, 1)]));
        h.push_bytes(0, &labelled(&ARP_REQUEST, &[(1, 0, 1)]));
        // Not labelled at all.
        h.push_bytes(0, &IPV4_UDP);
        assert!(h.take(0).is_empty());
        let s = h.stats();
        assert_eq!(s.get("truncated"), Some(5));
        assert_eq!(s.get("not_mpls"), Some(1));
        assert_eq!(s.get("unknown_payload"), Some(2));
    }

    #[test]
    fn takes_no_arguments() {
        assert!(make_element(&CLASS, "1", &PortInfo::default()).is_err());
    }
}
