//! What the IPv6 elements share: where the header is, the address classes
//! RFC 4291 section 2 defines, and which Hop-by-Hop options a router knows
//! (RFC 8200 section 4.2).

use bricks_element::FromArg;
use bricks_wire::ipv6ext::{self, UnknownAction, OPT_PAD1, OPT_PADN, OPT_ROUTER_ALERT};
use std::net::Ipv6Addr;

/// The 16 bytes at `at` of `h`, which the caller has checked holds them.
#[inline(always)]
pub(crate) fn addr_at(h: &[u8], at: usize) -> [u8; 16] {
    let mut a = [0; 16];
    a.copy_from_slice(&h[at..at + 16]);
    a
}

/// Multicast, ff00::/8 (RFC 4291 section 2.7).
#[inline(always)]
pub(crate) fn is_multicast(a: &[u8; 16]) -> bool {
    a[0] == 0xff
}

/// The unspecified address `::` (RFC 4291 section 2.5.2).
#[inline(always)]
pub(crate) fn is_unspecified(a: &[u8; 16]) -> bool {
    u128::from_be_bytes(*a) == 0
}

/// The loopback address `::1` (RFC 4291 section 2.5.3).
#[inline(always)]
pub(crate) fn is_loopback(a: &[u8; 16]) -> bool {
    u128::from_be_bytes(*a) == 1
}

/// A multicast address of interface-local or link-local scope (ff01::/16,
/// ff02::/16, and the reserved scope 0): a router never forwards a packet
/// sent to it, so `::` may be its source (Duplicate Address Detection,
/// RFC 4862 section 5.4; MLD reports, RFC 3810 section 5.2.13).
#[inline(always)]
pub(crate) fn is_link_scope_multicast(a: &[u8; 16]) -> bool {
    a[0] == 0xff && a[1] & 0x0f <= 2
}

/// Whether a router knows the Hop-by-Hop option `kind`: padding and
/// Router Alert (RFC 2711). Any other option is acted on by the two high
/// bits of its type (RFC 8200 section 4.2); the Jumbo Payload option
/// (RFC 2675) is one of those, since no bricks buffer holds a jumbogram.
#[inline(always)]
pub(crate) fn known_option(kind: u8) -> bool {
    matches!(kind, OPT_PAD1 | OPT_PADN | OPT_ROUTER_ALERT)
}

/// The first option of the Hop-by-Hop header `hbh` (starting at `at` in
/// the packet) that is unknown and asks for a Parameter Problem, as its
/// offset from the start of the IPv6 header (the pointer of RFC 4443
/// section 3.4); `to_multicast` says whether the packet's destination is
/// multicast, where type bits 11 ask for none.
pub(crate) fn reported_option(hbh: &[u8], at: usize, to_multicast: bool) -> Option<usize> {
    for o in ipv6ext::options(hbh) {
        let o = o.ok()?;
        if known_option(o.kind) {
            continue;
        }
        match UnknownAction::of(o.kind) {
            UnknownAction::Skip => {}
            UnknownAction::Discard => return None,
            UnknownAction::DiscardAndReport => return Some(at + o.offset),
            UnknownAction::DiscardAndReportUnicast if to_multicast => return None,
            UnknownAction::DiscardAndReportUnicast => return Some(at + o.offset),
        }
    }
    None
}

/// A space-separated list of IPv6 addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Address6List(pub(crate) Vec<Ipv6Addr>);

impl FromArg for Address6List {
    const TYPE: &'static str = "space-separated IPv6 addresses";
    fn from_arg(text: &str) -> Result<Self, String> {
        text.split_whitespace()
            .map(|w| w.parse().map_err(|_| format!("found `{w}`")))
            .collect::<Result<Vec<_>, _>>()
            .map(Address6List)
    }
}

/// Test vectors shared by the IPv6 elements' tests.
#[cfg(test)]
pub(crate) mod testing {
    use bricks_wire::icmpv6::Icmpv6Packet;
    use std::net::Ipv6Addr;

    /// 2001:db8::1.
    pub(crate) const HOST_A: [u8; 16] =
        [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    /// 2001:db8:1::2.
    pub(crate) const HOST_B: [u8; 16] =
        [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

    /// An echo request from 2001:db8::1 to 2001:db8:1::2 in the form of
    /// `ping -6 -s 8 -p 0102030405060708`: hop limit 64, flow label
    /// 0x2b9c8, id 0x1a2b, seq 1, 8 bytes of data; its checksum 0xf9fe was
    /// computed apart from the wire crate (and is verified by it in tests).
    pub(crate) const ECHO_REQUEST: [u8; 56] = [
        0x60, 0x02, 0xb9, 0xc8, 0x00, 0x10, 0x3a,
        0x40, // version, flow, plen 16, ICMPv6, hlim 64
        0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, // src
        0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, // dst
        0x80, 0x00, 0xf9, 0xfe, 0x1a, 0x2b, 0x00, 0x01, // echo request
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    ];

    /// A UDP datagram from HOST_A port 40000 to HOST_B port 53 with
    /// `payload` bytes of zeros behind the 8-byte UDP header, and
    /// `ext` (extension headers, whose first Next Header is given by
    /// `first`, last naming UDP) in front of it.
    pub(crate) fn udp_with(first: u8, ext: &[u8], payload: usize) -> Vec<u8> {
        let plen = ext.len() + 8 + payload;
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&(plen as u16).to_be_bytes());
        p.push(first);
        p.push(64);
        p.extend_from_slice(&HOST_A);
        p.extend_from_slice(&HOST_B);
        p.extend_from_slice(ext);
        p.extend_from_slice(&[0x9c, 0x40, 0x00, 0x35]);
        p.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
        p.extend_from_slice(&[0, 0]);
        p.resize(40 + plen, 0);
        p
    }

    /// A plain UDP datagram (see [`udp_with`]).
    pub(crate) fn udp(payload: usize) -> Vec<u8> {
        udp_with(17, &[], payload)
    }

    /// Whether the ICMPv6 message at `at` of the IPv6 packet `p` has the
    /// right checksum for `p`'s addresses.
    pub(crate) fn icmp6_ok(p: &[u8], at: usize) -> bool {
        let src = Ipv6Addr::from(super::addr_at(p, 8));
        let dst = Ipv6Addr::from(super::addr_at(p, 24));
        Icmpv6Packet::new_checked(&p[at..]).is_ok_and(|i| i.verify_checksum(src, dst))
    }
}
