//! `ProtocolTranslator46`: translates IPv4 packets into IPv6 packets, the
//! IPv4-to-IPv6 half of SIIT (Click's `elements/ip6/protocoltranslator46.cc`,
//! written after RFC 2765; bricks follows its successor RFC 7915, sections
//! 4.1 to 4.5, where Click is silent or wrong).
//!
//! Addresses map as Click maps them: `a.b.c.d` becomes the IPv4-mapped
//! `::ffff:a.b.c.d` (RFC 4291 section 2.5.5.2), so that
//! `ProtocolTranslator64` maps it back. The IPv6 header (and, for an ICMP
//! error, the ICMPv6 header and the translated header of the quoted
//! packet) is written in front of the untouched rest of the packet, in the
//! buffer's headroom, so the payload is never copied.

use super::protocol_translator64::{
    adjust, keep_residual, mapped6, splice, transport_checksum_at, Front, ECHO,
};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::checksum;
use bricks_wire::ip::IpProtocol;
use bricks_wire::ipv4::{Ipv4OptionKind, Ipv4OptionsIter};
use bricks_wire::ipv6::MIN_MTU;
use bricks_wire::ipv6ext::FRAGMENT;
use std::net::Ipv6Addr;

/// The `ProtocolTranslator46` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ProtocolTranslator46",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "translates IPv4/ICMP, TCP and UDP packets into IPv6 (SIIT)",
    synopsis: "ProtocolTranslator46()",
    description: "Expects IPv4 packets, with the network header annotation set or the \
        header at the start of the data, and emits the IPv6 packet between the \
        IPv4-mapped addresses of their source and destination (`::ffff:a.b.c.d`, as \
        Click maps them), as a stateless IP/ICMP translator does (RFC 7915 section 4, \
        which obsoletes the RFC 2765 Click follows). The output starts with the IPv6 \
        header (anything in front of the IPv4 header, a link header, is gone, as in \
        Click); its network header annotation points there and its IPv6 destination \
        annotation is set to the IPv6 destination, so a route lookup can follow \
        directly.\n\n\
        The IPv6 header: traffic class copied from the TOS (Click sets 0), flow label \
        0, hop limit copied from the TTL (Click computes TTL + 64 - 255; a translator \
        decrements neither: put DecIPTTL or DecIP6HLIM beside it), next header the \
        protocol (ICMP becomes ICMPv6). IPv4 options are ignored, but a packet with an \
        unexpired source route is not translated (RFC 7915 section 4.1). A fragment \
        (MF set or an offset) gets a Fragment header: offset and M copied, \
        identification the IPv4 one; an unfragmented packet gets none, DF or not, \
        and is not cut to 1280 bytes (RFC 7915 says it SHOULD be when DF is clear; \
        bricks has no IPv6 fragmenter yet). The IPv4 header \
        checksum is checked, since IPv6 has none to catch a corrupted header later. \
        Any protocol is carried; TCP and UDP checksums are updated for the \
        pseudo-header change (incrementally, so a corrupted segment stays detectably \
        corrupted, and in first fragments too). A UDP datagram without checksum \
        (zero), which IPv6 does not allow, gets one computed (RFC 7915 section 4.5, \
        counted in `udp_checksums_computed`), unless it is fragmented, when it is \
        dropped.\n\n\
        ICMP becomes ICMPv6 (RFC 7915 section 4.2): echo request and reply (8, 0) \
        become 128 and 129; destination unreachable (3) becomes 1 with codes 0, 1, \
        5-8, 11, 12 to 0, 3 to 4, 9, 10, 13, 15 to 1, while protocol unreachable \
        (code 2) becomes parameter problem 4/1 pointing at the next header and \
        fragmentation needed (code 4) packet too big (2) with the MTU plus 20 (or, \
        from a router that sent MTU 0, the RFC 1191 plateau below the quoted packet's \
        length, at least 1280); time exceeded (11) becomes 3 with the code kept; \
        parameter problem (12) codes 0 and 2 become 4/0 with the pointer moved to the \
        matching IPv6 field. The packet an error quotes is translated too, by the \
        same rules (its checksums updated as far as they were quoted, its length \
        fields kept as the original's); it must not hold a further ICMP error; the \
        error is cut to 1280 bytes. The ICMPv6 checksum adds the IPv6 pseudo-header. \
        Other ICMP messages (redirects, timestamps, source quench, unknown types and \
        codes) and fragmented ICMP are not translated (RFC 7915).\n\n\
        Packets that cannot be translated are dropped and counted by reason.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[
        ("translated", "packets translated and emitted"),
        (
            "udp_checksums_computed",
            "UDP datagrams sent without checksum given one (RFC 7915 section 4.5)",
        ),
        (
            "truncated",
            "shorter than the IPv4 header, its total length, or the TCP, UDP or ICMP \
             header, dropped",
        ),
        (
            "bad_header",
            "not IPv4, a header length below 20 or a total length below it, or a UDP \
             length that does not fit, dropped",
        ),
        ("bad_checksum", "a wrong IPv4 header checksum, dropped"),
        (
            "source_routed",
            "an unexpired loose or strict source route option (RFC 7915 section 4.1), \
             dropped",
        ),
        (
            "fragmented_icmp",
            "ICMP in a fragment, which a translator cannot checksum, dropped",
        ),
        (
            "untranslatable_icmp",
            "ICMP types and codes RFC 7915 section 4.2 drops, dropped",
        ),
        (
            "bad_quoted_packet",
            "an ICMP error whose quoted packet is not IPv4, is cut inside its header, or \
             is itself an ICMP error, dropped",
        ),
        (
            "udp_zero_checksum_fragment",
            "the first fragment of a UDP datagram without checksum, which cannot be \
             computed (RFC 7915 section 4.5), dropped",
        ),
        ("no_room", "no headroom for the longer IPv6 header, dropped"),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 20 00 01 00 00 40 11 8e 95 c0 00 02 01 \
        c6 33 64 02 9c 40 00 35 00 0c 00 00 01 02 03 04>, LIMIT 1) \
        -> ProtocolTranslator46 -> CheckIP6Header -> Discard;",
    see_also: &[
        "ProtocolTranslator64",
        "AddressTranslator",
        "CheckIP6Header",
    ],
};

/// Why a packet was not translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Untranslatable {
    /// Cut short of a header or of its stated length.
    Truncated,
    /// Not an IPv4 header the translator takes.
    BadHeader,
    /// A wrong IPv4 header checksum.
    BadChecksum,
    /// An unexpired source route.
    SourceRouted,
    /// ICMP in a fragment.
    FragmentedIcmp,
    /// An ICMP type or code with no ICMPv6 counterpart.
    UntranslatableIcmp,
    /// An ICMP error whose quoted packet cannot be translated.
    BadQuoted,
    /// A fragmented UDP datagram without checksum.
    UdpZeroChecksumFragment,
    /// No headroom for the IPv6 header.
    NoRoom,
}

impl Untranslatable {
    /// Every reason, in counter order.
    pub const ALL: [Untranslatable; 9] = [
        Untranslatable::Truncated,
        Untranslatable::BadHeader,
        Untranslatable::BadChecksum,
        Untranslatable::SourceRouted,
        Untranslatable::FragmentedIcmp,
        Untranslatable::UntranslatableIcmp,
        Untranslatable::BadQuoted,
        Untranslatable::UdpZeroChecksumFragment,
        Untranslatable::NoRoom,
    ];

    /// The counter for this reason.
    pub const fn counter(self) -> &'static str {
        match self {
            Untranslatable::Truncated => "truncated",
            Untranslatable::BadHeader => "bad_header",
            Untranslatable::BadChecksum => "bad_checksum",
            Untranslatable::SourceRouted => "source_routed",
            Untranslatable::FragmentedIcmp => "fragmented_icmp",
            Untranslatable::UntranslatableIcmp => "untranslatable_icmp",
            Untranslatable::BadQuoted => "bad_quoted_packet",
            Untranslatable::UdpZeroChecksumFragment => "udp_zero_checksum_fragment",
            Untranslatable::NoRoom => "no_room",
        }
    }

    /// The reason, in words.
    pub const fn text(self) -> &'static str {
        match self {
            Untranslatable::Truncated => "the packet is cut short of a header",
            Untranslatable::BadHeader => "not an IPv4 header the translator takes",
            Untranslatable::BadChecksum => "a wrong IPv4 header checksum",
            Untranslatable::SourceRouted => "an unexpired source route",
            Untranslatable::FragmentedIcmp => "ICMP in a fragment",
            Untranslatable::UntranslatableIcmp => "an ICMP message with no ICMPv6 form",
            Untranslatable::BadQuoted => "the packet an ICMP error quotes is untranslatable",
            Untranslatable::UdpZeroChecksumFragment => "a fragmented UDP datagram without checksum",
            Untranslatable::NoRoom => "no headroom for the IPv6 header",
        }
    }
}

impl core::fmt::Display for Untranslatable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.text())
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _ = args;
    Ok(Box::new(ProtocolTranslator46 {
        translated: 0,
        udp_checksums_computed: 0,
        dropped: [0; Untranslatable::ALL.len()],
    }))
}

/// Translates IPv4 packets into IPv6.
#[derive(Debug)]
pub struct ProtocolTranslator46 {
    translated: u64,
    udp_checksums_computed: u64,
    dropped: [u64; Untranslatable::ALL.len()],
}

impl ProtocolTranslator46 {
    #[inline]
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        match translate(p) {
            Ok(done) => {
                self.translated += 1;
                self.udp_checksums_computed += u64::from(done == Translated::UdpChecksumComputed);
                Some(0)
            }
            Err(why) => {
                self.dropped[why as usize] += 1;
                None
            }
        }
    }
}

impl Element for ProtocolTranslator46 {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("translated", self.translated);
        s.counter("udp_checksums_computed", self.udp_checksums_computed);
        for why in Untranslatable::ALL {
            s.counter(why.counter(), self.dropped[why as usize]);
        }
    }
}

/// How a packet was translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Translated {
    /// As it was.
    Plain,
    /// A UDP datagram without checksum was given one.
    UdpChecksumComputed,
}

/// The fields of an IPv4 header the translation reads.
#[derive(Debug, Clone, Copy)]
struct Header4 {
    total: usize,
    tos: u8,
    ident: u16,
    offset: u16,
    more: bool,
    ttl: u8,
    protocol: u8,
    src: [u8; 16],
    dst: [u8; 16],
}

impl Header4 {
    /// Reads the header at the start of `ip`, which holds 20 bytes.
    fn read(ip: &[u8]) -> Header4 {
        let flags = u16::from_be_bytes([ip[6], ip[7]]);
        Header4 {
            total: usize::from(u16::from_be_bytes([ip[2], ip[3]])),
            tos: ip[1],
            ident: u16::from_be_bytes([ip[4], ip[5]]),
            offset: flags & 0x1fff,
            more: flags & 0x2000 != 0,
            ttl: ip[8],
            protocol: ip[9],
            src: mapped6([ip[12], ip[13], ip[14], ip[15]]),
            dst: mapped6([ip[16], ip[17], ip[18], ip[19]]),
        }
    }

    fn fragmented(&self) -> bool {
        self.more || self.offset != 0
    }

    fn first(&self) -> bool {
        self.offset == 0
    }

    /// The pseudo-header sum of ICMPv6 for an upper-layer length `len`.
    fn pseudo(&self, len: usize) -> u16 {
        checksum::pseudo_header_v6(
            Ipv6Addr::from(self.src),
            Ipv6Addr::from(self.dst),
            IpProtocol::ICMPV6,
            len as u32,
        )
    }

    /// What the address change does to a TCP or UDP checksum: the sums of
    /// the IPv4 and of the IPv6 addresses.
    fn address_sums(&self, ip: &[u8]) -> (u16, u16) {
        let mut a = [0u8; 32];
        a[..16].copy_from_slice(&self.src);
        a[16..].copy_from_slice(&self.dst);
        (checksum::data(&ip[12..20]), checksum::data(&a))
    }

    /// The IPv6 header, and a Fragment header for a fragment (RFC 7915
    /// sections 4.1 and 4.1.1), for a payload of `plen` bytes past them.
    fn put_ipv6(&self, front: &mut Front, plen: usize) {
        let frag = self.fragmented();
        let mut h = [0u8; 40];
        h[0] = 0x60 | (self.tos >> 4);
        h[1] = self.tos << 4;
        let plen = plen + if frag { 8 } else { 0 };
        h[4..6].copy_from_slice(&(plen.min(0xffff) as u16).to_be_bytes());
        let next = if self.protocol == IpProtocol::ICMP.0 {
            IpProtocol::ICMPV6.0
        } else {
            self.protocol
        };
        h[6] = if frag { FRAGMENT } else { next };
        h[7] = self.ttl;
        h[8..24].copy_from_slice(&self.src);
        h[24..40].copy_from_slice(&self.dst);
        front.put(&h);
        if frag {
            let mut f = [0u8; 8];
            f[0] = next;
            f[2..4].copy_from_slice(&((self.offset << 3) | u16::from(self.more)).to_be_bytes());
            f[4..8].copy_from_slice(&u32::from(self.ident).to_be_bytes());
            front.put(&f);
        }
    }
}

/// A TCP or UDP checksum `sum` after the address change `sums` (old, new).
fn adjusted(protocol: u8, sum: u16, sums: (u16, u16)) -> u16 {
    let new = adjust(sum, sums.0, sums.1);
    if new == 0 && protocol == IpProtocol::UDP.0 {
        0xffff
    } else {
        new
    }
}

/// The RFC 1191 plateaus from 1280 up.
const PLATEAUS: [u32; 7] = [65535, 32000, 17914, 8166, 4352, 2002, 1492];

/// ICMP type, code and rest of header into ICMPv6 (RFC 7915 section 4.2;
/// Figure 3 for the pointer); `None` for what is silently dropped.
/// `quoted_len` is the quoted packet's total length.
fn icmp_header(h: &[u8; 8], quoted_len: u16) -> Option<[u8; 8]> {
    let mut out = [0u8; 8];
    let rest: u32 = match (h[0], h[1]) {
        (3, 0 | 1 | 5..=8 | 11 | 12) => {
            out[..2].copy_from_slice(&[1, 0]);
            0
        }
        (3, 2) => {
            out[..2].copy_from_slice(&[4, 1]);
            6
        }
        (3, 3) => {
            out[..2].copy_from_slice(&[1, 4]);
            0
        }
        (3, 4) => {
            out[..2].copy_from_slice(&[2, 0]);
            match u16::from_be_bytes([h[6], h[7]]) {
                // A router before RFC 1191: guess from the packet's length.
                0 => PLATEAUS
                    .into_iter()
                    .find(|&p| p < u32::from(quoted_len))
                    .unwrap_or(MIN_MTU as u32),
                mtu => u32::from(mtu) + 20,
            }
        }
        (3, 9 | 10 | 13 | 15) => {
            out[..2].copy_from_slice(&[1, 1]);
            0
        }
        (11, code) => {
            out[..2].copy_from_slice(&[3, code]);
            0
        }
        (12, 0 | 2) => {
            out[..2].copy_from_slice(&[4, 0]);
            match h[4] {
                0 => 0,
                1 => 1,
                2 | 3 => 4,
                8 => 7,
                9 => 6,
                12..=15 => 8,
                16..=19 => 24,
                _ => return None,
            }
        }
        _ => return None,
    };
    out[4..8].copy_from_slice(&rest.to_be_bytes());
    Some(out)
}

/// Translates the IPv4 packet an ICMP error quotes, `inner` (as much of it
/// as was quoted): its TCP, UDP or ICMP checksum in place, and the IPv6
/// headers to put in front of its bytes from the returned offset on; with
/// the quoted packet's total length.
fn quoted(inner: &mut [u8], front: &mut Front) -> Result<(usize, u16), Untranslatable> {
    let bad = Untranslatable::BadQuoted;
    if inner.len() < 20 || inner[0] >> 4 != 4 {
        return Err(bad);
    }
    let ihl = usize::from(inner[0] & 0x0f) * 4;
    if ihl < 20 || inner.len() < ihl {
        return Err(bad);
    }
    let h = Header4::read(inner);
    let upper_len = h.total.checked_sub(ihl).ok_or(bad)?;
    let sums = h.address_sums(inner);
    let l4 = &mut inner[ihl..];
    if h.first() {
        if h.protocol == IpProtocol::ICMP.0 && !l4.is_empty() {
            let &(_, v6_type) = ECHO.iter().find(|e| e.0 == l4[0]).ok_or(bad)?;
            if h.fragmented() {
                return Err(bad);
            }
            let old = u16::from_be_bytes([l4[0], 0]);
            l4[0] = v6_type;
            if let Some(c) = l4.get_mut(2..4) {
                let sum = u16::from_be_bytes([c[0], c[1]]);
                let new = !checksum::combine(&[
                    !sum,
                    h.pseudo(upper_len),
                    !old,
                    u16::from_be_bytes([v6_type, 0]),
                ]);
                c.copy_from_slice(&new.to_be_bytes());
            }
        } else if let Some(at) = transport_checksum_at(h.protocol) {
            if let Some(c) = l4.get_mut(at..at + 2) {
                let sum = u16::from_be_bytes([c[0], c[1]]);
                if !(sum == 0 && h.protocol == IpProtocol::UDP.0) {
                    c.copy_from_slice(&adjusted(h.protocol, sum, sums).to_be_bytes());
                }
            }
        }
    }
    h.put_ipv6(front, upper_len);
    Ok((ihl, h.total as u16))
}

/// Translates the IPv4 packet at the network header of `p` into IPv6.
pub fn translate(p: &mut Packet) -> Result<Translated, Untranslatable> {
    let at = p.network_header_offset().unwrap_or(0);
    let d = p.data_mut();
    let ip = d.get_mut(at..).ok_or(Untranslatable::Truncated)?;
    if ip.len() < 20 {
        return Err(Untranslatable::Truncated);
    }
    if ip[0] >> 4 != 4 {
        return Err(Untranslatable::BadHeader);
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if ihl < 20 {
        return Err(Untranslatable::BadHeader);
    }
    if ip.len() < ihl {
        return Err(Untranslatable::Truncated);
    }
    if checksum::data(&ip[..ihl]) != 0xffff {
        return Err(Untranslatable::BadChecksum);
    }
    let h = Header4::read(ip);
    if h.total < ihl {
        return Err(Untranslatable::BadHeader);
    }
    let ip = ip.get_mut(..h.total).ok_or(Untranslatable::Truncated)?;
    // Options are ignored, but an unexpired source route (pointer within
    // the option) must not be translated (RFC 7915 section 4.1).
    for o in Ipv4OptionsIter::new(&ip[20..ihl]) {
        let Ok(o) = o else { break };
        let route = matches!(o.kind, Ipv4OptionKind::LSRR | Ipv4OptionKind::SSRR);
        if route && o.pointer().is_some_and(|ptr| usize::from(ptr) <= o.len()) {
            return Err(Untranslatable::SourceRouted);
        }
    }
    let mut front = Front::new();
    let mut done = Translated::Plain;
    let (keep, end) = if h.protocol == IpProtocol::ICMP.0 {
        if h.fragmented() {
            return Err(Untranslatable::FragmentedIcmp);
        }
        let icmp: [u8; 8] = ip
            .get(ihl..ihl + 8)
            .and_then(|i| i.try_into().ok())
            .ok_or(Untranslatable::Truncated)?;
        let msg_len = h.total - ihl;
        let old_cksum = u16::from_be_bytes([icmp[2], icmp[3]]);
        if let Some(&(_, v6_type)) = ECHO.iter().find(|e| e.0 == icmp[0]) {
            // Echo: the type and the pseudo-header join the checksum.
            let mut new = icmp;
            new[0] = v6_type;
            let c = !checksum::combine(&[
                !old_cksum,
                h.pseudo(msg_len),
                !u16::from_be_bytes([icmp[0], icmp[1]]),
                u16::from_be_bytes([v6_type, icmp[1]]),
            ]);
            new[2..4].copy_from_slice(&c.to_be_bytes());
            h.put_ipv6(&mut front, msg_len);
            front.put(&new);
            (ihl + 8, h.total)
        } else {
            if !matches!(icmp[0], 3 | 11 | 12) {
                return Err(Untranslatable::UntranslatableIcmp);
            }
            let residual = checksum::data(&ip[ihl..]);
            // The outer header goes first; its length is known last.
            front.len = 40;
            let icmp_at = front.len;
            front.len += 8;
            let (inner_ihl, quoted_len) = quoted(&mut ip[ihl + 8..], &mut front)?;
            let new = icmp_header(&icmp, quoted_len).ok_or(Untranslatable::UntranslatableIcmp)?;
            front.bytes[icmp_at..icmp_at + 8].copy_from_slice(&new);
            let keep = ihl + 8 + inner_ihl;
            // No longer than the minimum MTU (RFC 4443 section 2.4 (c)).
            let tail = (h.total - keep).min(MIN_MTU - front.len);
            let end = keep + tail;
            let msg_len = front.len - 40 + tail;
            let mut outer = Front::new();
            h.put_ipv6(&mut outer, msg_len);
            front.bytes[..40].copy_from_slice(outer.as_slice());
            let sum = checksum::combine(&[
                h.pseudo(msg_len),
                checksum::data(&front.as_slice()[40..]),
                checksum::data(&ip[keep..end]),
            ]);
            let c = keep_residual(residual, sum);
            front.bytes[icmp_at + 2..icmp_at + 4].copy_from_slice(&c.to_be_bytes());
            (keep, end)
        }
    } else {
        if h.first() {
            if let Some(c_at) = transport_checksum_at(h.protocol) {
                let sums = h.address_sums(ip);
                let l4 = &mut ip[ihl..];
                let c = l4.get(c_at..c_at + 2).ok_or(Untranslatable::Truncated)?;
                let sum = u16::from_be_bytes([c[0], c[1]]);
                let new = if sum == 0 && h.protocol == IpProtocol::UDP.0 {
                    if h.fragmented() {
                        return Err(Untranslatable::UdpZeroChecksumFragment);
                    }
                    let len = usize::from(u16::from_be_bytes([l4[4], l4[5]]));
                    if len < 8 || len > l4.len() {
                        return Err(Untranslatable::BadHeader);
                    }
                    let pseudo = checksum::pseudo_header_v6(
                        Ipv6Addr::from(h.src),
                        Ipv6Addr::from(h.dst),
                        IpProtocol::UDP,
                        len as u32,
                    );
                    done = Translated::UdpChecksumComputed;
                    match !checksum::combine(&[pseudo, checksum::data(&l4[..len])]) {
                        0 => 0xffff,
                        c => c,
                    }
                } else {
                    adjusted(h.protocol, sum, sums)
                };
                l4[c_at..c_at + 2].copy_from_slice(&new.to_be_bytes());
            }
        }
        h.put_ipv6(&mut front, h.total - ihl);
        (ihl, h.total)
    };
    splice(p, at + keep, at + end, &front).map_err(|_| Untranslatable::NoRoom)?;
    p.anno_mut().dst_ip6 = Ipv6Addr::from(h.dst);
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::super::protocol_translator64::testing::*;
    use super::super::protocol_translator64::{self as pt64};
    use super::*;
    use bricks_runtime::testing::Harness;

    fn one(frame: &[u8]) -> Result<Vec<u8>, Untranslatable> {
        let mut p = Packet::from_slice(frame).unwrap();
        translate(&mut p).map(|_| {
            assert_eq!(p.network_header_offset(), Some(0));
            let dst = <[u8; 16]>::try_from(&p.data()[24..40]).unwrap();
            assert_eq!(p.anno().dst_ip6, Ipv6Addr::from(dst));
            p.data().to_vec()
        })
    }

    /// Whether `p` starts with an IPv6 header whose payload length is the
    /// rest of `p`.
    fn ipv6_ok(p: &[u8]) -> bool {
        p.len() >= 40
            && p[0] >> 4 == 6
            && usize::from(u16::from_be_bytes([p[4], p[5]])) == p.len() - 40
    }

    #[test]
    fn tcp_and_its_checksum() {
        let seg = tcp(&A4, &B4);
        let out = one(&ipv4(6, A4, B4, 0x1234, 0x4000, &seg)).unwrap();
        assert!(ipv6_ok(&out));
        // Traffic class from the TOS, flow label 0, hop limit = TTL.
        assert_eq!(&out[..8], &[0x6b, 0x80, 0, 0, 0, 26, 6, 61]);
        assert_eq!((&out[8..24], &out[24..40]), (&A6[..], &B6[..]));
        assert!(l4_ok(&A6, &B6, 6, &out[40..]));
        assert_eq!(&out[40..], &seg[..]);
    }

    #[test]
    fn udp_and_a_missing_udp_checksum() {
        let u = udp(&B4, &A4, b"answer");
        let out = one(&ipv4(17, B4, A4, 1, 0, &u)).unwrap();
        assert!(ipv6_ok(&out));
        assert!(l4_ok(&B6, &A6, 17, &out[40..]));
        // No checksum: one is computed (RFC 7915 section 4.5).
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &ipv4(17, B4, A4, 1, 0, &udp(&[], &[], b"answer")));
        let out = h.take_bytes(0).pop().unwrap();
        assert!(l4_ok(&B6, &A6, 17, &out[40..]));
        assert_eq!(&out[40..], &udp(&B6, &A6, b"answer")[..]);
        assert_eq!(h.stats().get("udp_checksums_computed"), Some(1));
    }

    #[test]
    fn echo_request_and_reply() {
        for (t4, t6) in [(8, 128), (0, 129)] {
            let m = icmp(&[], &[], t4, 0, [0x1a, 0x2b, 0, 7], b"abcdefgh");
            let out = one(&ipv4(1, A4, B4, 9, 0, &m)).unwrap();
            assert!(ipv6_ok(&out));
            assert_eq!(out[6], 58);
            assert_eq!((out[40], out[41]), (t6, 0));
            assert_eq!(&out[44..], &m[4..]);
            assert!(l4_ok(&A6, &B6, 58, &out[40..]), "ICMPv6 checksum");
        }
    }

    /// An ICMP error from B4 to A4 about a UDP datagram A4 sent to B4.
    fn error(t: u8, c: u8, rest: [u8; 4]) -> (Vec<u8>, Vec<u8>) {
        let quoted = ipv4(17, A4, B4, 0x4242, 0, &udp(&A4, &B4, b"0123456789"));
        let m = icmp(&[], &[], t, c, rest, &quoted);
        (ipv4(1, B4, A4, 7, 0, &m), quoted)
    }

    #[test]
    fn errors_and_the_packets_they_quote() {
        let cases = [
            ((3, 3, [0; 4]), (1, 4, [0; 4])),
            ((3, 0, [0; 4]), (1, 0, [0; 4])),
            ((3, 1, [0; 4]), (1, 0, [0; 4])),
            ((3, 13, [0; 4]), (1, 1, [0; 4])),
            ((3, 10, [0; 4]), (1, 1, [0; 4])),
            ((3, 2, [0; 4]), (4, 1, [0, 0, 0, 6])),
            ((3, 4, [0, 0, 0x05, 0xc8]), (2, 0, 1500u32.to_be_bytes())),
            // MTU 0: the plateau below the quoted 38 bytes, at least 1280.
            ((3, 4, [0; 4]), (2, 0, 1280u32.to_be_bytes())),
            ((11, 0, [0; 4]), (3, 0, [0; 4])),
            ((11, 1, [0; 4]), (3, 1, [0; 4])),
            ((12, 0, [9, 0, 0, 0]), (4, 0, [0, 0, 0, 6])),
            ((12, 0, [16, 0, 0, 0]), (4, 0, [0, 0, 0, 24])),
            ((12, 2, [2, 0, 0, 0]), (4, 0, [0, 0, 0, 4])),
        ];
        for ((t4, c4, r4), (t6, c6, r6)) in cases {
            let (pkt, quoted) = error(t4, c4, r4);
            let out = one(&pkt).unwrap_or_else(|e| panic!("{t4}/{c4}: {e}"));
            assert!(ipv6_ok(&out));
            assert_eq!(out.len(), 40 + 8 + 40 + quoted.len() - 20);
            assert_eq!((out[6], &out[8..24], &out[24..40]), (58, &B6[..], &A6[..]));
            assert_eq!(&out[40..42], &[t6, c6], "{t4}/{c4}");
            assert_eq!(&out[44..48], &r6, "{t4}/{c4}");
            assert!(l4_ok(&B6, &A6, 58, &out[40..]), "ICMPv6 checksum");
            let inner = &out[48..];
            assert!(ipv6_ok(inner));
            assert_eq!(&inner[..8], &[0x6b, 0x80, 0, 0, 0, 18, 17, 61]);
            assert_eq!((&inner[8..24], &inner[24..40]), (&A6[..], &B6[..]));
            assert!(l4_ok(&A6, &B6, 17, &inner[40..]));
        }
    }

    #[test]
    fn the_plateau_for_a_long_packet_and_the_1280_byte_cut() {
        let quoted = ipv4(17, A4, B4, 1, 0, &udp(&A4, &B4, &[5; 1472]));
        let m = icmp(&[], &[], 3, 4, [0; 4], &quoted);
        let out = one(&ipv4(1, B4, A4, 7, 0, &m)).unwrap();
        assert_eq!(out.len(), 1280);
        assert!(ipv6_ok(&out));
        assert_eq!(&out[44..48], &1492u32.to_be_bytes());
        assert!(l4_ok(&B6, &A6, 58, &out[40..]));
        // The quoted header keeps the original's length.
        assert_eq!(u16::from_be_bytes([out[52], out[53]]), 1480);
    }

    #[test]
    fn fragments_get_a_fragment_header() {
        let u = udp(&A4, &B4, &[3; 40]);
        // First fragment: MF, 32 bytes.
        let out = one(&ipv4(17, A4, B4, 0xbeef, 0x2000, &u[..32])).unwrap();
        assert!(ipv6_ok(&out));
        assert_eq!(
            (out[6], &out[40..48]),
            (44, &[17, 0, 0, 1, 0, 0, 0xbe, 0xef][..])
        );
        assert_eq!(&out[48..], &u[..32]);
        // The last one, offset 4: untouched payload.
        let out = one(&ipv4(17, A4, B4, 0xbeef, 4, &u[32..])).unwrap();
        assert_eq!(&out[40..48], &[17, 0, 0, 0x20, 0, 0, 0xbe, 0xef]);
        assert_eq!(&out[48..], &u[32..]);
    }

    #[test]
    fn drops_by_reason() {
        let u = udp(&A4, &B4, b"x");
        let good = ipv4(17, A4, B4, 1, 0, &u);
        let mut v6 = good.clone();
        v6[0] = 0x65;
        let mut ihl4 = good.clone();
        ihl4[0] = 0x44;
        let mut bad_sum = good.clone();
        bad_sum[8] = 60;
        let mut short_total = good.clone();
        short_total[2..4].copy_from_slice(&[0, 16]);
        let c = !sum(&[&short_total[..10], &[0, 0], &short_total[12..20]]);
        short_total[10..12].copy_from_slice(&c.to_be_bytes());
        // LSRR with one hop to go (pointer 4 of 7), then padding.
        let mut lsrr = vec![0x47, 0, 0, 0, 0, 1, 0, 0, 61, 17, 0, 0];
        lsrr.extend_from_slice(&A4);
        lsrr.extend_from_slice(&B4);
        lsrr.extend_from_slice(&[131, 7, 4, 10, 0, 0, 1, 0]);
        lsrr.extend_from_slice(&u);
        let n = lsrr.len() as u16;
        lsrr[2..4].copy_from_slice(&n.to_be_bytes());
        let c = !sum(&[&lsrr[..28]]);
        lsrr[10..12].copy_from_slice(&c.to_be_bytes());
        let mut lsrr_done = lsrr.clone();
        lsrr_done[22] = 8;
        lsrr_done[10..12].fill(0);
        let c = !sum(&[&lsrr_done[..28]]);
        lsrr_done[10..12].copy_from_slice(&c.to_be_bytes());
        assert!(
            one(&lsrr_done).is_ok(),
            "an expired source route is ignored"
        );
        let (mut nested, _) = error(3, 3, [0; 4]);
        nested[20 + 8 + 9] = 1;
        nested[20 + 8 + 20] = 3;
        let (mut inner_v6, _) = error(3, 3, [0; 4]);
        inner_v6[20 + 8] = 0x65;
        let cases: Vec<(Vec<u8>, Untranslatable)> = vec![
            (good[..19].to_vec(), Untranslatable::Truncated),
            (good[..good.len() - 1].to_vec(), Untranslatable::Truncated),
            (ipv4(6, A4, B4, 1, 0, &u), Untranslatable::Truncated),
            (ipv4(1, A4, B4, 1, 0, &[8, 0, 0]), Untranslatable::Truncated),
            (v6, Untranslatable::BadHeader),
            (ihl4, Untranslatable::BadHeader),
            (short_total, Untranslatable::BadHeader),
            (
                ipv4(17, A4, B4, 1, 0, &udp(&[], &[], b"x")[..8]),
                Untranslatable::BadHeader,
            ),
            (bad_sum, Untranslatable::BadChecksum),
            (lsrr, Untranslatable::SourceRouted),
            (
                ipv4(1, A4, B4, 1, 0x2000, &icmp(&[], &[], 8, 0, [0; 4], b"x")),
                Untranslatable::FragmentedIcmp,
            ),
            (
                ipv4(1, A4, B4, 1, 0, &icmp(&[], &[], 13, 0, [0; 4], &[0; 12])),
                Untranslatable::UntranslatableIcmp,
            ),
            (error(5, 1, [0; 4]).0, Untranslatable::UntranslatableIcmp),
            (error(4, 0, [0; 4]).0, Untranslatable::UntranslatableIcmp),
            (error(3, 14, [0; 4]).0, Untranslatable::UntranslatableIcmp),
            (error(12, 1, [0; 4]).0, Untranslatable::UntranslatableIcmp),
            (
                error(12, 0, [4, 0, 0, 0]).0,
                Untranslatable::UntranslatableIcmp,
            ),
            (nested, Untranslatable::BadQuoted),
            (inner_v6, Untranslatable::BadQuoted),
            (
                ipv4(1, B4, A4, 1, 0, &icmp(&[], &[], 3, 3, [0; 4], &good[..19])),
                Untranslatable::BadQuoted,
            ),
            (
                ipv4(17, A4, B4, 1, 0x2000, &udp(&[], &[], b"x")),
                Untranslatable::UdpZeroChecksumFragment,
            ),
        ];
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for (i, (pkt, why)) in cases.iter().enumerate() {
            assert_eq!(one(pkt), Err(*why), "case {i}");
            h.push_bytes(0, pkt);
        }
        // No headroom for the longer header.
        let mut p = Packet::from_slice(&good).unwrap();
        p.push_front(p.headroom()).unwrap();
        p.set_frame(&good).unwrap();
        assert_eq!(translate(&mut p.duplicate()), Err(Untranslatable::NoRoom));
        h.push_packets(0, [p]);
        assert!(h.take(0).is_empty());
        let s = h.stats();
        for why in Untranslatable::ALL {
            let n = cases.iter().filter(|c| c.1 == why).count() as u64
                + u64::from(why == Untranslatable::NoRoom);
            assert_eq!(s.get(why.counter()), Some(n), "{}", why.counter());
        }
        assert_eq!(s.get("translated"), Some(0));
    }

    #[test]
    fn the_network_header_annotation_is_followed_and_the_link_header_goes() {
        let mut frame = vec![0xee; 14];
        frame.extend(ipv4(6, A4, B4, 1, 0, &tcp(&A4, &B4)));
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(14);
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [p]);
        let out = h.take(0).pop().unwrap();
        assert!(ipv6_ok(out.data()));
        assert_eq!(out.l3_bytes(), out.data());
        assert_eq!(out.anno().dst_ip6, Ipv6Addr::from(B6));
    }

    /// 46 then 64 gives the IPv4 packet back: with identification 0 and DF
    /// clear (a translator sets both so on an unfragmented packet, RFC 7915
    /// section 5.1), or as a fragment (identification and offset kept).
    #[test]
    fn round_trip() {
        let (err, _) = error(3, 3, [0; 4]);
        let mut err0 = err.clone();
        err0[4..6].fill(0);
        err0[10..12].fill(0);
        let c = !sum(&[&err0[..20]]);
        err0[10..12].copy_from_slice(&c.to_be_bytes());
        // The quoted header's identification goes too.
        let (quoted_err, _) = {
            let quoted = ipv4(17, A4, B4, 0, 0, &udp(&A4, &B4, b"0123456789"));
            let m = icmp(&[], &[], 11, 0, [0; 4], &quoted);
            (ipv4(1, B4, A4, 0, 0, &m), quoted)
        };
        let originals = [
            ipv4(6, A4, B4, 0, 0, &tcp(&A4, &B4)),
            ipv4(17, B4, A4, 0, 0, &udp(&B4, &A4, b"dns")),
            ipv4(
                1,
                A4,
                B4,
                0,
                0,
                &icmp(&[], &[], 8, 0, [1, 2, 0, 3], b"ping"),
            ),
            ipv4(
                1,
                B4,
                A4,
                0,
                0,
                &icmp(&[], &[], 0, 0, [1, 2, 0, 3], b"ping"),
            ),
            ipv4(17, A4, B4, 0xbeef, 0x2000, &udp(&A4, &B4, &[1; 24])[..16]),
            ipv4(47, A4, B4, 0, 0, &[0, 0, 0x08, 0, 1, 2, 3, 4]),
            quoted_err,
        ];
        for o in originals {
            let mut p = Packet::from_slice(&o).unwrap();
            translate(&mut p).unwrap();
            pt64::translate(&mut p).unwrap();
            assert_eq!(p.data(), &o[..]);
        }
    }

    #[test]
    fn a_configuration_end_to_end() {
        use bricks_config::{Source, SourceMap};
        use bricks_runtime::{build, Engine};
        let u = ipv4(17, A4, B4, 0, 0, &udp(&A4, &B4, b"payload"));
        let hex: String = u.iter().map(|b| format!("{b:02x} ")).collect();
        let config = format!(
            "InfiniteSource(DATA \\<{hex}>, LIMIT 5) -> pt46 :: ProtocolTranslator46 \
             -> CheckIP6Header -> DecIP6HLIM -> pt64 :: ProtocolTranslator64 \
             -> CheckIPHeader -> c :: Counter -> Discard;"
        );
        let mut map = SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            Source {
                name: "<test>".into(),
                text: config.clone(),
            },
        )
        .unwrap_or_else(|d| panic!("{config}\n{}", map.render(&d[0])));
        let plan = build(&router, &crate::registry())
            .unwrap_or_else(|d| panic!("{config}\n{}", map.render(&d[0])));
        let mut engine = Engine::new(&plan).unwrap();
        engine.idle_sleep = false;
        let s = engine.run();
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        let stat = |name: &str, c: &str| {
            s.elements
                .iter()
                .find(|e| e.name == name)
                .and_then(|e| e.stats.get(c))
        };
        assert_eq!(stat("pt46", "translated"), Some(5));
        assert_eq!(stat("pt64", "translated"), Some(5));
        assert_eq!(stat("c", "count"), Some(5));
    }
}
