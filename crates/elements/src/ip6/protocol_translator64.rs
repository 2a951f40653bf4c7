//! `ProtocolTranslator64`: translates IPv6 packets into IPv4 packets, the
//! IPv6-to-IPv4 half of SIIT (Click's `elements/ip6/protocoltranslator64.cc`,
//! written after RFC 2765; bricks follows its successor RFC 7915, sections
//! 5.1 to 5.4, where Click is silent or wrong).
//!
//! Addresses map as Click maps them: `::ffff:a.b.c.d` (IPv4-mapped, RFC
//! 4291 section 2.5.5.2) is `a.b.c.d`. The translation is done in place:
//! the IPv4 header (and, for an ICMP error, the ICMPv4 header and the
//! translated header of the quoted packet) is written in front of the
//! untouched rest of the packet, so the payload is never copied.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};
use bricks_packet::PacketError;
use bricks_wire::checksum;
use bricks_wire::ip::IpProtocol;
use bricks_wire::ipv6ext::{self, DEST_OPTS, FRAGMENT, HOP_BY_HOP, ROUTING};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The `ProtocolTranslator64` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ProtocolTranslator64",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "translates IPv6/ICMPv6, TCP and UDP packets into IPv4 (SIIT)",
    synopsis: "ProtocolTranslator64()",
    description: "Expects IPv6 packets, with the network header annotation set or the \
        header at the start of the data, whose source and destination are IPv4-mapped \
        addresses (`::ffff:a.b.c.d`, as Click requires; AddressTranslator makes them), \
        and emits the IPv4 packet between the embedded addresses, as a stateless IP/ICMP \
        translator does (RFC 7915 section 5, which obsoletes the RFC 2765 Click \
        follows). The output starts with the IPv4 header (anything in front of the \
        IPv6 header, a link header, is gone, as in Click); its network header \
        annotation points there and its destination address annotation is set to the \
        IPv4 destination, so CheckIPHeader or a route lookup can follow directly.\n\n\
        The IPv4 header: TOS copied from the traffic class (Click sets 0), \
        identification 0, DF set only when the packet is longer than 1260 bytes (RFC \
        7915; Click always sets it), TTL copied from the hop limit (a translator \
        decrements neither: put DecIP6HLIM or DecIPTTL beside it), protocol the last \
        next header after the Hop-by-Hop, Routing and Destination Options headers, \
        which are skipped (at most 16 extension headers are walked). A Fragment header \
        becomes the IPv4 fragment fields: identification from its low 16 bits, offset \
        and MF copied, DF clear (RFC 7915 section 5.1.1). A Routing header with \
        segments left is not translated (section 5.1). Any protocol is carried; TCP \
        and UDP checksums are updated for the pseudo-header change (incrementally, so \
        a corrupted segment stays detectably corrupted, and in first fragments too); a \
        zero UDP checksum stays zero, which IPv4 reads as none.\n\n\
        ICMPv6 becomes ICMPv4 (RFC 7915 section 5.2): echo request and reply (128, \
        129) become 8 and 0; destination unreachable (1) becomes 3 with code 0, 2 and \
        3 to 1, 1 to 10, 4 to 3; packet too big (2) becomes fragmentation needed \
        (3/4) with the MTU less 20; time exceeded (3) becomes 11 with the code kept; \
        parameter problem (4) code 0 becomes 12/0 with the pointer moved to the \
        matching IPv4 field, code 1 becomes protocol unreachable (3/2). The packet \
        an error quotes is translated too, by the same rules (its checksums updated \
        as far as they were quoted, its length fields kept as the original's); it \
        must not hold a further ICMP error. The ICMPv4 checksum drops the IPv6 \
        pseudo-header. Other ICMPv6 messages (Neighbor Discovery, MLD, unknown \
        types and codes) and fragmented ICMPv6 are not translated (RFC 7915).\n\n\
        Packets that cannot be translated are dropped and counted by reason.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[
        ("translated", "packets translated and emitted"),
        (
            "truncated",
            "shorter than the IPv6 header, its payload length, an extension header or \
             the TCP, UDP or ICMPv6 header, dropped",
        ),
        (
            "bad_header",
            "not IPv6, more than 16 extension headers, or two Fragment headers, dropped",
        ),
        (
            "unmappable_address",
            "source or destination not an IPv4-mapped address (or ::ffff:0.0.0.0), \
             dropped",
        ),
        (
            "source_routed",
            "a Routing header with segments left (RFC 7915 section 5.1), dropped",
        ),
        (
            "fragmented_icmp",
            "ICMPv6 in a fragment, which a translator cannot checksum, dropped",
        ),
        (
            "untranslatable_icmp",
            "ICMPv6 types and codes RFC 7915 section 5.2 drops (ND, MLD, unknown), dropped",
        ),
        (
            "bad_quoted_packet",
            "an ICMPv6 error whose quoted packet is not IPv6 with mapped addresses, is cut \
             inside its headers, or is itself an ICMPv6 error, dropped",
        ),
    ],
    example: "InfiniteSource(DATA \\<60 00 00 00 00 0c 11 40 00 00 00 00 00 00 00 00 \
        00 00 ff ff c0 00 02 01 00 00 00 00 00 00 00 00 00 00 ff ff c6 33 64 02 \
        9c 40 00 35 00 0c 00 00 01 02 03 04>, LIMIT 1) -> ProtocolTranslator64 \
        -> CheckIPHeader -> Discard;",
    see_also: &["ProtocolTranslator46", "AddressTranslator", "CheckIPHeader"],
};

/// Why a packet was not translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Untranslatable {
    /// Cut short of a header or of its stated length.
    Truncated,
    /// Not IPv6, or an extension header chain the translator refuses.
    BadHeader,
    /// An address that is not IPv4-mapped.
    Unmappable,
    /// A Routing header with segments left.
    SourceRouted,
    /// ICMPv6 in a fragment.
    FragmentedIcmp,
    /// An ICMPv6 type or code with no ICMPv4 counterpart.
    UntranslatableIcmp,
    /// An ICMPv6 error whose quoted packet cannot be translated.
    BadQuoted,
}

impl Untranslatable {
    /// Every reason, in counter order.
    pub const ALL: [Untranslatable; 7] = [
        Untranslatable::Truncated,
        Untranslatable::BadHeader,
        Untranslatable::Unmappable,
        Untranslatable::SourceRouted,
        Untranslatable::FragmentedIcmp,
        Untranslatable::UntranslatableIcmp,
        Untranslatable::BadQuoted,
    ];

    /// The counter for this reason.
    pub const fn counter(self) -> &'static str {
        match self {
            Untranslatable::Truncated => "truncated",
            Untranslatable::BadHeader => "bad_header",
            Untranslatable::Unmappable => "unmappable_address",
            Untranslatable::SourceRouted => "source_routed",
            Untranslatable::FragmentedIcmp => "fragmented_icmp",
            Untranslatable::UntranslatableIcmp => "untranslatable_icmp",
            Untranslatable::BadQuoted => "bad_quoted_packet",
        }
    }

    /// The reason, in words.
    pub const fn text(self) -> &'static str {
        match self {
            Untranslatable::Truncated => "the packet is cut short of a header",
            Untranslatable::BadHeader => "not an IPv6 header chain the translator takes",
            Untranslatable::Unmappable => "an address that is not IPv4-mapped",
            Untranslatable::SourceRouted => "a Routing header with segments left",
            Untranslatable::FragmentedIcmp => "ICMPv6 in a fragment",
            Untranslatable::UntranslatableIcmp => "an ICMPv6 message with no ICMPv4 form",
            Untranslatable::BadQuoted => "the packet an ICMPv6 error quotes is untranslatable",
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
    Ok(Box::new(ProtocolTranslator64 {
        translated: 0,
        dropped: [0; Untranslatable::ALL.len()],
    }))
}

/// Translates IPv6 packets into IPv4.
#[derive(Debug)]
pub struct ProtocolTranslator64 {
    translated: u64,
    dropped: [u64; Untranslatable::ALL.len()],
}

impl ProtocolTranslator64 {
    #[inline]
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        match translate(p) {
            Ok(()) => {
                self.translated += 1;
                Some(0)
            }
            Err(why) => {
                self.dropped[why as usize] += 1;
                None
            }
        }
    }
}

impl Element for ProtocolTranslator64 {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("translated", self.translated);
        for why in Untranslatable::ALL {
            s.counter(why.counter(), self.dropped[why as usize]);
        }
    }
}

// ---------------------------------------------------------------------------
// What both translators share.

/// The IPv4 address embedded in the IPv4-mapped IPv6 address `a`
/// (`::ffff:a.b.c.d`), if `a` is one and the IPv4 address is not 0.0.0.0
/// (Click's `IP6Address::ip4_address`, and its refusal of a zero address).
#[inline]
pub(crate) fn mapped4(a: &[u8]) -> Option<[u8; 4]> {
    if a.len() != 16 || a[..10] != [0; 10] || a[10..12] != [0xff, 0xff] {
        return None;
    }
    let v4 = [a[12], a[13], a[14], a[15]];
    (v4 != [0; 4]).then_some(v4)
}

/// The IPv4-mapped IPv6 address of `v4` (Click's `IP6Address(IPAddress)`).
#[inline]
pub(crate) fn mapped6(v4: [u8; 4]) -> [u8; 16] {
    let mut a = [0; 16];
    a[10] = 0xff;
    a[11] = 0xff;
    a[12..].copy_from_slice(&v4);
    a
}

/// `cksum` after the bytes summing to `remove` are replaced by bytes
/// summing to `add` (RFC 1624 eqn. 3 over whole sums).
#[inline]
pub(crate) fn adjust(cksum: u16, remove: u16, add: u16) -> u16 {
    !checksum::combine(&[!cksum, !remove, add])
}

/// The checksum field that makes a message whose bytes (checksum field
/// zero) sum to `sum` sum to `residual`, the full sum of the message it
/// was translated from: 0xffff for a correct original, so a corrupted
/// message stays corrupted instead of being given a fresh checksum.
#[inline]
pub(crate) fn keep_residual(residual: u16, sum: u16) -> u16 {
    checksum::combine(&[residual, !sum])
}

/// Where the checksum of a TCP or UDP header is.
#[inline]
pub(crate) fn transport_checksum_at(protocol: u8) -> Option<usize> {
    match IpProtocol(protocol) {
        IpProtocol::TCP => Some(16),
        IpProtocol::UDP => Some(6),
        _ => None,
    }
}

/// The ICMP echo types: (ICMPv4, ICMPv6) for request and reply.
pub(crate) const ECHO: [(u8, u8); 2] = [(8, 128), (0, 129)];

/// Headers written in front of the untouched rest of a packet: at most an
/// IPv6 header, an ICMPv6 header, an IPv6 header and a Fragment header.
pub(crate) struct Front {
    pub(crate) bytes: [u8; 104],
    pub(crate) len: usize,
}

impl Front {
    pub(crate) fn new() -> Front {
        Front {
            bytes: [0; 104],
            len: 0,
        }
    }

    /// Appends `b` (the caller never puts more than fits).
    pub(crate) fn put(&mut self, b: &[u8]) {
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Makes the frame `front` followed by its bytes from `keep` to `end`
/// (frame offsets, `keep <= end <= len`), and marks the network header at
/// the frame's start.
pub(crate) fn splice(
    p: &mut Packet,
    keep: usize,
    end: usize,
    front: &Front,
) -> Result<(), PacketError> {
    let n = front.len;
    p.take_back(p.len() - end);
    if keep >= n {
        p.pull_front(keep - n);
    } else {
        p.push_front(n - keep)?;
    }
    p.data_mut()[..n].copy_from_slice(front.as_slice());
    p.set_network_header(0);
    Ok(())
}

// ---------------------------------------------------------------------------
// IPv6 to IPv4.

/// An IPv6 Fragment header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Frag {
    /// The identification's low 16 bits (all IPv4 has room for).
    ident: u16,
    /// The offset, in 8-byte units.
    offset: u16,
    /// More fragments.
    more: bool,
}

/// What the header chain of an IPv6 packet says.
#[derive(Debug, Clone, Copy)]
struct Chain {
    /// The protocol after the skipped headers.
    upper: u8,
    /// Where its bytes start, from the IPv6 header's start.
    upper_at: usize,
    frag: Option<Frag>,
}

impl Chain {
    /// Whether the upper-layer header is here: not a later fragment.
    fn first(&self) -> bool {
        self.frag.is_none_or(|f| f.offset == 0)
    }

    /// Whether this is a piece of a larger datagram (not an atomic
    /// fragment).
    fn fragmented(&self) -> bool {
        self.frag.is_some_and(|f| f.offset != 0 || f.more)
    }
}

/// Walks the extension headers of the IPv6 packet `ip` that RFC 7915
/// section 5.1 skips (Hop-by-Hop, Routing, Destination Options) or
/// translates (Fragment), at most [`ipv6ext::MAX_HEADERS`] of them. A
/// quoted packet (`quoted`) may have segments left in a Routing header.
fn walk(ip: &[u8], quoted: bool) -> Result<Chain, Untranslatable> {
    let mut next = ip[6];
    let mut at = 40;
    let mut frag = None;
    for _ in 0..=ipv6ext::MAX_HEADERS {
        let len = match next {
            HOP_BY_HOP | ROUTING | DEST_OPTS => {
                let h = ip.get(at..at + 2).ok_or(Untranslatable::Truncated)?;
                (usize::from(h[1]) + 1) * 8
            }
            FRAGMENT => 8,
            upper => {
                return Ok(Chain {
                    upper,
                    upper_at: at,
                    frag,
                })
            }
        };
        let h = ip.get(at..at + len).ok_or(Untranslatable::Truncated)?;
        if next == ROUTING && h[3] != 0 && !quoted {
            return Err(Untranslatable::SourceRouted);
        }
        if next == FRAGMENT {
            if frag.is_some() {
                return Err(Untranslatable::BadHeader);
            }
            let word = u16::from_be_bytes([h[2], h[3]]);
            let f = Frag {
                ident: u16::from_be_bytes([h[6], h[7]]),
                offset: word >> 3,
                more: word & 1 == 1,
            };
            frag = Some(f);
            if f.offset != 0 {
                // A later fragment: the rest is the middle of the payload.
                return Ok(Chain {
                    upper: h[0],
                    upper_at: at + 8,
                    frag,
                });
            }
        }
        next = h[0];
        at += len;
    }
    Err(Untranslatable::BadHeader)
}

/// The IPv4 header of a translated packet (RFC 7915 sections 5.1 and
/// 5.1.1).
fn ipv4_header(ip6: &[u8], chain: &Chain, total: usize, src: [u8; 4], dst: [u8; 4]) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0] = 0x45;
    h[1] = (ip6[0] << 4) | (ip6[1] >> 4);
    h[2..4].copy_from_slice(&(total.min(0xffff) as u16).to_be_bytes());
    let flags = match chain.frag {
        Some(f) => {
            h[4..6].copy_from_slice(&f.ident.to_be_bytes());
            (u16::from(f.more) << 13) | f.offset
        }
        // DF only where an IPv6 path would not have carried it whole.
        None if total > 1260 => 0x4000,
        None => 0,
    };
    h[6..8].copy_from_slice(&flags.to_be_bytes());
    h[8] = ip6[7];
    h[9] = if chain.upper == IpProtocol::ICMPV6.0 {
        IpProtocol::ICMP.0
    } else {
        chain.upper
    };
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let sum = !checksum::data(&h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    h
}

/// The sum of the IPv4 addresses `src`, `dst`.
fn sum4(src: [u8; 4], dst: [u8; 4]) -> u16 {
    let mut a = [0u8; 8];
    a[..4].copy_from_slice(&src);
    a[4..].copy_from_slice(&dst);
    checksum::data(&a)
}

fn pseudo6(ip6: &[u8], len: usize) -> u16 {
    let src = Ipv6Addr::from(super::header6::addr_at(ip6, 8));
    let dst = Ipv6Addr::from(super::header6::addr_at(ip6, 24));
    checksum::pseudo_header_v6(src, dst, IpProtocol::ICMPV6, len as u32)
}

/// ICMPv6 type, code and rest of header into ICMPv4 (RFC 7915 section 5.2;
/// Figure 6 for the pointer); `None` for what is silently dropped.
fn icmp_header(h: &[u8; 8]) -> Option<[u8; 8]> {
    let mut out = [0u8; 8];
    let (t, c) = match (h[0], h[1]) {
        (1, code) => {
            let c = match code {
                0 | 2 | 3 => 1,
                1 => 10,
                4 => 3,
                _ => return None,
            };
            (3, c)
        }
        (2, _) => {
            let mtu = u32::from_be_bytes([h[4], h[5], h[6], h[7]]).saturating_sub(20);
            out[6..8].copy_from_slice(&(mtu.min(0xffff) as u16).to_be_bytes());
            (3, 4)
        }
        (3, code) => (11, code),
        (4, 0) => {
            out[4] = match u32::from_be_bytes([h[4], h[5], h[6], h[7]]) {
                0 => 0,
                1 => 1,
                4 | 5 => 2,
                6 => 9,
                7 => 8,
                8..=23 => 12,
                24..=39 => 16,
                _ => return None,
            };
            (12, 0)
        }
        (4, 1) => (3, 2),
        _ => return None,
    };
    out[0] = t;
    out[1] = c;
    Some(out)
}

/// Translates the IPv6 packet an ICMPv6 error quotes, `inner` (as much of
/// it as was quoted): its TCP, UDP or ICMPv6 checksum in place, and the
/// IPv4 header to put in front of its bytes from the returned offset on.
fn quoted(inner: &mut [u8]) -> Result<(usize, [u8; 20]), Untranslatable> {
    let bad = Untranslatable::BadQuoted;
    if inner.len() < 40 || inner[0] >> 4 != 6 {
        return Err(bad);
    }
    let src = mapped4(&inner[8..24]).ok_or(bad)?;
    let dst = mapped4(&inner[24..40]).ok_or(bad)?;
    let chain = walk(inner, true).map_err(|_| bad)?;
    let plen = usize::from(u16::from_be_bytes([inner[4], inner[5]]));
    // The original's upper-layer length, however much of it was quoted.
    let upper_len = (plen + 40).checked_sub(chain.upper_at).ok_or(bad)?;
    let v6_sum = checksum::data(&inner[8..40]);
    let pseudo = pseudo6(inner, upper_len);
    let l4 = &mut inner[chain.upper_at..];
    if chain.first() {
        if chain.upper == IpProtocol::ICMPV6.0 && !l4.is_empty() {
            let &(v4_type, _) = ECHO.iter().find(|e| e.1 == l4[0]).ok_or(bad)?;
            if chain.fragmented() {
                return Err(bad);
            }
            let old = u16::from_be_bytes([l4[0], 0]);
            l4[0] = v4_type;
            if let Some(c) = l4.get_mut(2..4) {
                let sum = u16::from_be_bytes([c[0], c[1]]);
                let new =
                    !checksum::combine(&[!sum, !pseudo, !old, u16::from_be_bytes([v4_type, 0])]);
                c.copy_from_slice(&new.to_be_bytes());
            }
        } else if let Some(at) = transport_checksum_at(chain.upper) {
            if let Some(c) = l4.get_mut(at..at + 2) {
                let sum = u16::from_be_bytes([c[0], c[1]]);
                if !(sum == 0 && chain.upper == IpProtocol::UDP.0) {
                    let new = adjust(sum, v6_sum, sum4(src, dst));
                    let new = if new == 0 && chain.upper == IpProtocol::UDP.0 {
                        0xffff
                    } else {
                        new
                    };
                    c.copy_from_slice(&new.to_be_bytes());
                }
            }
        }
    }
    let header = ipv4_header(inner, &chain, 20 + upper_len, src, dst);
    Ok((chain.upper_at, header))
}

/// Translates the IPv6 packet at the network header of `p` into IPv4.
pub fn translate(p: &mut Packet) -> Result<(), Untranslatable> {
    let at = p.network_header_offset().unwrap_or(0);
    let d = p.data_mut();
    let ip = d.get_mut(at..).ok_or(Untranslatable::Truncated)?;
    if ip.len() < 40 {
        return Err(Untranslatable::Truncated);
    }
    if ip[0] >> 4 != 6 {
        return Err(Untranslatable::BadHeader);
    }
    let end = 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
    let ip = ip.get_mut(..end).ok_or(Untranslatable::Truncated)?;
    let src = mapped4(&ip[8..24]).ok_or(Untranslatable::Unmappable)?;
    let dst = mapped4(&ip[24..40]).ok_or(Untranslatable::Unmappable)?;
    let chain = walk(ip, false)?;
    let u = chain.upper_at;
    let mut front = Front::new();
    let keep;
    if chain.upper == IpProtocol::ICMPV6.0 {
        if chain.fragmented() {
            return Err(Untranslatable::FragmentedIcmp);
        }
        let h: [u8; 8] = ip
            .get(u..u + 8)
            .and_then(|h| h.try_into().ok())
            .ok_or(Untranslatable::Truncated)?;
        let msg_len = end - u;
        let pseudo = pseudo6(ip, msg_len);
        let old_cksum = u16::from_be_bytes([h[2], h[3]]);
        if let Some(&(v4_type, _)) = ECHO.iter().find(|e| e.1 == h[0]) {
            // Echo: the type and the pseudo-header leave the checksum.
            let mut icmp = h;
            icmp[0] = v4_type;
            let new = !checksum::combine(&[
                !old_cksum,
                !pseudo,
                !u16::from_be_bytes([h[0], h[1]]),
                u16::from_be_bytes([v4_type, h[1]]),
            ]);
            icmp[2..4].copy_from_slice(&new.to_be_bytes());
            front.put(&ipv4_header(ip, &chain, 20 + msg_len, src, dst));
            front.put(&icmp);
            keep = u + 8;
        } else {
            if h[0] >= 128 {
                return Err(Untranslatable::UntranslatableIcmp);
            }
            let icmp = icmp_header(&h).ok_or(Untranslatable::UntranslatableIcmp)?;
            let residual = checksum::combine(&[pseudo, checksum::data(&ip[u..])]);
            let (inner_at, inner) = quoted(&mut ip[u + 8..])?;
            keep = u + 8 + inner_at;
            let total = 48 + (end - keep);
            front.put(&ipv4_header(ip, &chain, total, src, dst));
            front.put(&icmp);
            front.put(&inner);
            // The checksum: over the new message, keeping the old one's
            // residual (its tail is unchanged and moved by an even count).
            let sum = checksum::combine(&[
                checksum::data(&front.as_slice()[20..]),
                checksum::data(&ip[keep..]),
            ]);
            let c = keep_residual(residual, sum);
            front.bytes[22..24].copy_from_slice(&c.to_be_bytes());
        }
    } else {
        if chain.first() {
            if let Some(c_at) = transport_checksum_at(chain.upper) {
                let c = ip
                    .get_mut(u + c_at..u + c_at + 2)
                    .ok_or(Untranslatable::Truncated)?;
                let sum = u16::from_be_bytes([c[0], c[1]]);
                // A zero UDP checksum (none) stays none.
                if !(sum == 0 && chain.upper == IpProtocol::UDP.0) {
                    let new = adjust(sum, checksum::data(&ip[8..40]), sum4(src, dst));
                    let new = if new == 0 && chain.upper == IpProtocol::UDP.0 {
                        0xffff
                    } else {
                        new
                    };
                    ip[u + c_at..u + c_at + 2].copy_from_slice(&new.to_be_bytes());
                }
            }
        }
        front.put(&ipv4_header(ip, &chain, 20 + end - u, src, dst));
        keep = u;
    }
    // Shrinking never needs room, so this cannot fail.
    splice(p, at + keep, at + end, &front).map_err(|_| Untranslatable::Truncated)?;
    p.anno_mut().dst_ip = Ipv4Addr::from(dst);
    Ok(())
}

/// Packet builders and checks the translators' tests share; the checksums
/// are computed here, apart from the wire crate.
#[cfg(test)]
pub(crate) mod testing {
    /// 192.0.2.1 and 198.51.100.2, and their IPv4-mapped addresses.
    pub(crate) const A4: [u8; 4] = [192, 0, 2, 1];
    pub(crate) const B4: [u8; 4] = [198, 51, 100, 2];
    pub(crate) const A6: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1];
    pub(crate) const B6: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 51, 100, 2];

    /// The RFC 1071 sum of `parts`, laid end to end, not complemented.
    pub(crate) fn sum(parts: &[&[u8]]) -> u16 {
        let bytes: Vec<u8> = parts.concat();
        let mut s: u32 = 0;
        for w in bytes.chunks(2) {
            s += u32::from(w[0]) << 8 | u32::from(*w.get(1).unwrap_or(&0));
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    fn pseudo4(src: &[u8], dst: &[u8], proto: u8, len: usize) -> Vec<u8> {
        let mut v = [src, dst].concat();
        v.extend_from_slice(&[0, proto]);
        v.extend_from_slice(&(len as u16).to_be_bytes());
        v
    }

    fn pseudo6(src: &[u8], dst: &[u8], proto: u8, len: usize) -> Vec<u8> {
        let mut v = [src, dst].concat();
        v.extend_from_slice(&(len as u32).to_be_bytes());
        v.extend_from_slice(&[0, 0, 0, proto]);
        v
    }

    /// Whether the TCP/UDP/ICMPv6 message `l4` sums right with the IPv4
    /// (4-byte addresses) or IPv6 pseudo-header.
    pub(crate) fn l4_ok(src: &[u8], dst: &[u8], proto: u8, l4: &[u8]) -> bool {
        let ph = if src.len() == 4 {
            pseudo4(src, dst, proto, l4.len())
        } else {
            pseudo6(src, dst, proto, l4.len())
        };
        sum(&[&ph, l4]) == 0xffff
    }

    /// Fills the checksum at `at` of `l4` (pseudo-header as [`l4_ok`];
    /// none for ICMPv4: `src` empty).
    pub(crate) fn fill(src: &[u8], dst: &[u8], proto: u8, l4: &mut [u8], at: usize) {
        l4[at..at + 2].fill(0);
        let ph = match src.len() {
            0 => vec![],
            4 => pseudo4(src, dst, proto, l4.len()),
            _ => pseudo6(src, dst, proto, l4.len()),
        };
        let c = !sum(&[&ph, l4]);
        l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
    }

    /// A TCP segment (SYN-ACK with 6 bytes of data) from port 443 to 51000,
    /// checksum for `src` to `dst`.
    pub(crate) fn tcp(src: &[u8], dst: &[u8]) -> Vec<u8> {
        let mut t = vec![
            0x01, 0xbb, 0xc7, 0x38, 0, 0, 0x10, 0, 0, 0, 0x20, 0, 0x50, 0x12, 0xff, 0xff, 0, 0, 0,
            0, b'h', b'e', b'l', b'l', b'o', b'!',
        ];
        fill(src, dst, 6, &mut t, 16);
        t
    }

    /// A UDP datagram from port 40000 to 53 with `data`; checksum for
    /// `src` to `dst`, or none when `src` is empty.
    pub(crate) fn udp(src: &[u8], dst: &[u8], data: &[u8]) -> Vec<u8> {
        let mut u = vec![0x9c, 0x40, 0x00, 0x35];
        u.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
        u.extend_from_slice(&[0, 0]);
        u.extend_from_slice(data);
        if !src.is_empty() {
            fill(src, dst, 17, &mut u, 6);
        }
        u
    }

    /// An ICMPv4 (`src` empty) or ICMPv6 message with the rest of header
    /// `rest` and body `body`.
    pub(crate) fn icmp(
        src: &[u8],
        dst: &[u8],
        t: u8,
        c: u8,
        rest: [u8; 4],
        body: &[u8],
    ) -> Vec<u8> {
        let mut m = vec![t, c, 0, 0];
        m.extend_from_slice(&rest);
        m.extend_from_slice(body);
        fill(src, dst, 58, &mut m, 2);
        m
    }

    /// An IPv4 packet: TOS 0xb8, identification `ident`, flags and offset
    /// `frag`, TTL 61.
    pub(crate) fn ipv4(
        proto: u8,
        src: [u8; 4],
        dst: [u8; 4],
        ident: u16,
        frag: u16,
        payload: &[u8],
    ) -> Vec<u8> {
        let mut h = vec![0x45, 0xb8];
        h.extend_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
        h.extend_from_slice(&ident.to_be_bytes());
        h.extend_from_slice(&frag.to_be_bytes());
        h.extend_from_slice(&[61, proto, 0, 0]);
        h.extend_from_slice(&src);
        h.extend_from_slice(&dst);
        let c = !sum(&[&h]);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h.extend_from_slice(payload);
        h
    }

    /// An IPv6 packet: traffic class 0xb8, flow label 0x12345, hop limit
    /// 61, with `ext` (extension headers, the first named by `next`) in
    /// front of `payload`.
    pub(crate) fn ipv6(
        next: u8,
        src: [u8; 16],
        dst: [u8; 16],
        ext: &[u8],
        payload: &[u8],
    ) -> Vec<u8> {
        let mut h = vec![0x6b, 0x81, 0x23, 0x45];
        h.extend_from_slice(&((ext.len() + payload.len()) as u16).to_be_bytes());
        h.extend_from_slice(&[next, 61]);
        h.extend_from_slice(&src);
        h.extend_from_slice(&dst);
        h.extend_from_slice(ext);
        h.extend_from_slice(payload);
        h
    }

    /// Whether `p` starts with an IPv4 header with a right checksum and a
    /// total length of `p`'s length.
    pub(crate) fn ipv4_ok(p: &[u8]) -> bool {
        p.len() >= 20
            && p[0] == 0x45
            && sum(&[&p[..20]]) == 0xffff
            && usize::from(u16::from_be_bytes([p[2], p[3]])) == p.len()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use bricks_runtime::testing::Harness;

    fn one(frame: &[u8]) -> Result<Vec<u8>, Untranslatable> {
        let mut p = Packet::from_slice(frame).unwrap();
        translate(&mut p).map(|()| {
            assert_eq!(p.network_header_offset(), Some(0));
            assert_eq!(
                p.anno().dst_ip,
                Ipv4Addr::from(<[u8; 4]>::try_from(&p.data()[16..20]).unwrap())
            );
            p.data().to_vec()
        })
    }

    #[test]
    fn tcp_and_its_checksum() {
        let seg = tcp(&A6, &B6);
        let out = one(&ipv6(6, A6, B6, &[], &seg)).unwrap();
        assert!(ipv4_ok(&out));
        assert_eq!(out.len(), 20 + seg.len());
        // TOS from the traffic class, id 0, no DF, TTL = hop limit.
        assert_eq!(&out[..10], &[0x45, 0xb8, 0, 46, 0, 0, 0, 0, 61, 6]);
        assert_eq!((&out[12..16], &out[16..20]), (&A4[..], &B4[..]));
        assert!(l4_ok(&A4, &B4, 6, &out[20..]));
        // Mapped addresses sum as their IPv4 halves: the segment is as it was.
        assert_eq!(&out[20..], &seg[..]);
        assert_eq!(out[20..], tcp(&A4, &B4)[..]);
    }

    #[test]
    fn udp_with_and_without_checksum() {
        let u = udp(&B6, &A6, b"query");
        let out = one(&ipv6(17, B6, A6, &[], &u)).unwrap();
        assert!(ipv4_ok(&out));
        assert_eq!((out[9], &out[12..16], &out[16..20]), (17, &B4[..], &A4[..]));
        assert!(l4_ok(&B4, &A4, 17, &out[20..]));
        // A zero checksum (IPv6 tunnels, RFC 6935) stays "none".
        let u = udp(&[], &[], b"query");
        let out = one(&ipv6(17, B6, A6, &[], &u)).unwrap();
        assert_eq!(&out[20..], &u[..]);
    }

    #[test]
    fn corrupted_segments_stay_corrupted() {
        let mut seg = tcp(&A6, &B6);
        seg[25] ^= 0x40;
        let out = one(&ipv6(6, A6, B6, &[], &seg)).unwrap();
        assert!(!l4_ok(&A4, &B4, 6, &out[20..]));
    }

    #[test]
    fn echo_request_and_reply() {
        for (t6, t4) in [(128, 8), (129, 0)] {
            let m = icmp(&A6, &B6, t6, 0, [0x1a, 0x2b, 0, 7], b"abcdefgh");
            let out = one(&ipv6(58, A6, B6, &[], &m)).unwrap();
            assert!(ipv4_ok(&out));
            assert_eq!(out[9], 1);
            assert_eq!((out[20], out[21]), (t4, 0));
            assert_eq!(&out[24..], &m[4..]);
            assert_eq!(sum(&[&out[20..]]), 0xffff, "ICMPv4 checksum");
        }
    }

    /// An ICMPv6 error from B6 to A6 about a UDP datagram A6 sent to B6.
    fn error(t: u8, c: u8, rest: [u8; 4]) -> (Vec<u8>, Vec<u8>) {
        let quoted = ipv6(17, A6, B6, &[], &udp(&A6, &B6, b"0123456789"));
        let m = icmp(&B6, &A6, t, c, rest, &quoted);
        (ipv6(58, B6, A6, &[], &m), quoted)
    }

    fn check_error(out: &[u8], t: u8, c: u8, rest: [u8; 4], quoted: &[u8]) {
        assert!(ipv4_ok(out));
        assert_eq!((out[9], &out[12..16], &out[16..20]), (1, &B4[..], &A4[..]));
        assert_eq!(&out[20..28][..2], &[t, c]);
        assert_eq!(&out[24..28], &rest);
        assert_eq!(sum(&[&out[20..]]), 0xffff, "ICMPv4 checksum");
        let inner = &out[28..];
        assert!(ipv4_ok(inner), "quoted header, all of it quoted");
        assert_eq!(&inner[..10], &[0x45, 0xb8, 0, 38, 0, 0, 0, 0, 61, 17]);
        assert_eq!((&inner[12..16], &inner[16..20]), (&A4[..], &B4[..]));
        assert!(l4_ok(&A4, &B4, 17, &inner[20..]));
        assert_eq!(&inner[20..], &quoted[40..]);
    }

    #[test]
    fn errors_and_the_packets_they_quote() {
        let cases = [
            // (ICMPv6 type, code, rest) -> (ICMPv4 type, code, rest)
            ((1, 4, [0; 4]), (3, 3, [0; 4])),
            ((1, 0, [0; 4]), (3, 1, [0; 4])),
            ((1, 1, [0; 4]), (3, 10, [0; 4])),
            ((1, 3, [0; 4]), (3, 1, [0; 4])),
            ((3, 0, [0; 4]), (11, 0, [0; 4])),
            ((3, 1, [0; 4]), (11, 1, [0; 4])),
            ((2, 0, 1400u32.to_be_bytes()), (3, 4, [0, 0, 0x05, 0x64])),
            ((4, 0, 24u32.to_be_bytes()), (12, 0, [16, 0, 0, 0])),
            ((4, 0, 7u32.to_be_bytes()), (12, 0, [8, 0, 0, 0])),
            ((4, 0, 6u32.to_be_bytes()), (12, 0, [9, 0, 0, 0])),
            ((4, 1, 6u32.to_be_bytes()), (3, 2, [0; 4])),
        ];
        for ((t6, c6, r6), (t4, c4, r4)) in cases {
            let (pkt, quoted) = error(t6, c6, r6);
            let out = one(&pkt).unwrap_or_else(|e| panic!("{t6}/{c6}: {e}"));
            assert_eq!(out.len(), 20 + 8 + quoted.len() - 20);
            check_error(&out, t4, c4, r4, &quoted);
        }
    }

    #[test]
    fn a_cut_quote_keeps_the_original_lengths() {
        let (pkt, quoted) = error(3, 0, [0; 4]);
        // Quote only the IPv6 header and 4 bytes of UDP.
        let cut = pkt.len() - (quoted.len() - 44);
        let mut p = pkt[..cut].to_vec();
        p[4..6].copy_from_slice(&((cut - 40) as u16).to_be_bytes());
        let m = &mut p[40..];
        fill(&B6, &A6, 58, m, 2);
        let out = one(&p).unwrap();
        assert!(ipv4_ok(&out));
        assert_eq!(sum(&[&out[20..]]), 0xffff);
        // The quoted header says 38 bytes, of which 24 are here.
        assert_eq!(u16::from_be_bytes([out[30], out[31]]), 38);
        assert_eq!(out.len(), 20 + 8 + 24);
    }

    #[test]
    fn extension_headers_are_skipped() {
        let u = udp(&A6, &B6, b"x");
        // Hop-by-Hop (PadN) then Destination Options (PadN), then UDP.
        let ext = [60, 0, 1, 4, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0];
        let out = one(&ipv6(0, A6, B6, &ext, &u)).unwrap();
        assert!(ipv4_ok(&out));
        assert_eq!(out[9], 17);
        assert_eq!(&out[20..], &u[..]);
        // A routing header whose segments are done is skipped too.
        let rh = [17, 0, 0, 0, 0, 0, 0, 0];
        assert!(one(&ipv6(43, A6, B6, &rh, &u)).is_ok());
    }

    #[test]
    fn fragments() {
        let u = udp(&A6, &B6, &[7; 40]);
        // First fragment: M set, id 0xdeadbeef.
        let fh = [17, 0, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef];
        let out = one(&ipv6(44, A6, B6, &fh, &u[..32])).unwrap();
        assert!(ipv4_ok(&out));
        assert_eq!(&out[4..10], &[0xbe, 0xef, 0x20, 0x00, 61, 17]);
        assert_eq!(&out[20..], &u[..32]);
        // A later fragment, offset 4 (32 bytes): no header to touch.
        let fh = [17, 0, 0x00, 0x20, 0xde, 0xad, 0xbe, 0xef];
        let out = one(&ipv6(44, A6, B6, &fh, &u[32..])).unwrap();
        assert!(ipv4_ok(&out));
        assert_eq!(&out[4..10], &[0xbe, 0xef, 0x00, 0x04, 61, 17]);
        assert_eq!(&out[20..], &u[32..]);
    }

    #[test]
    fn df_only_for_long_packets() {
        let u = udp(&A6, &B6, &[0; 1233]);
        let out = one(&ipv6(17, A6, B6, &[], &u)).unwrap();
        assert_eq!((out.len(), out[6]), (1261, 0x40));
        let u = udp(&A6, &B6, &[0; 1232]);
        let out = one(&ipv6(17, A6, B6, &[], &u)).unwrap();
        assert_eq!((out.len(), out[6]), (1260, 0));
    }

    #[test]
    fn drops_by_reason() {
        let u = udp(&A6, &B6, b"x");
        let good = ipv6(17, A6, B6, &[], &u);
        let doc: [u8; 16] = "2001:db8::1".parse::<Ipv6Addr>().unwrap().octets();
        let zero: [u8; 16] = "::ffff:0.0.0.0".parse::<Ipv6Addr>().unwrap().octets();
        let compat: [u8; 16] = "::192.0.2.1".parse::<Ipv6Addr>().unwrap().octets();
        let mut v4 = good.clone();
        v4[0] = 0x45;
        let mut long = good.clone();
        long[5] += 1;
        let frag_icmp = ipv6(
            44,
            A6,
            B6,
            &[58, 0, 0, 1, 0, 0, 0, 9],
            &icmp(&A6, &B6, 128, 0, [0; 4], b"x"),
        );
        let (mut nested, _) = error(1, 4, [0; 4]);
        nested[40 + 8 + 6] = 58;
        nested[40 + 8 + 40] = 1;
        let (mut unmapped_inner, _) = error(1, 4, [0; 4]);
        unmapped_inner[40 + 8 + 24..40 + 8 + 40].copy_from_slice(&doc);
        let eight = [0u8; 8];
        let cases: Vec<(Vec<u8>, Untranslatable)> = vec![
            (good[..39].to_vec(), Untranslatable::Truncated),
            (long, Untranslatable::Truncated),
            (good[..45].to_vec(), Untranslatable::Truncated),
            (
                ipv6(60, A6, B6, &[17, 1, 0, 0], &[]),
                Untranslatable::Truncated,
            ),
            (v4, Untranslatable::BadHeader),
            (
                ipv6(60, A6, B6, &[60, 0, 1, 4, 0, 0, 0, 0].repeat(17), &[]),
                Untranslatable::BadHeader,
            ),
            (ipv6(17, doc, B6, &[], &u), Untranslatable::Unmappable),
            (ipv6(17, A6, zero, &[], &u), Untranslatable::Unmappable),
            (ipv6(17, compat, B6, &[], &u), Untranslatable::Unmappable),
            (
                ipv6(43, A6, B6, &[17, 0, 0, 1, 0, 0, 0, 0], &u),
                Untranslatable::SourceRouted,
            ),
            (frag_icmp, Untranslatable::FragmentedIcmp),
            (
                ipv6(58, A6, B6, &[], &icmp(&A6, &B6, 135, 0, [0; 4], &[0; 16])),
                Untranslatable::UntranslatableIcmp,
            ),
            (error(1, 5, [0; 4]).0, Untranslatable::UntranslatableIcmp),
            (error(4, 2, [0; 4]).0, Untranslatable::UntranslatableIcmp),
            (
                error(4, 0, [0, 0, 0, 2]).0,
                Untranslatable::UntranslatableIcmp,
            ),
            (
                ipv6(58, A6, B6, &[], &eight[..6]),
                Untranslatable::Truncated,
            ),
            (nested, Untranslatable::BadQuoted),
            (unmapped_inner, Untranslatable::BadQuoted),
            (
                ipv6(58, B6, A6, &[], &icmp(&B6, &A6, 1, 4, [0; 4], &good[..30])),
                Untranslatable::BadQuoted,
            ),
        ];
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for (i, (pkt, why)) in cases.iter().enumerate() {
            assert_eq!(one(pkt), Err(*why), "case {i}");
            h.push_bytes(0, pkt);
        }
        assert!(h.take(0).is_empty());
        let s = h.stats();
        for why in Untranslatable::ALL {
            let n = cases.iter().filter(|c| c.1 == why).count() as u64;
            assert_eq!(s.get(why.counter()), Some(n), "{}", why.counter());
        }
        assert_eq!(s.get("translated"), Some(0));
    }

    #[test]
    fn the_network_header_annotation_is_followed_and_the_link_header_goes() {
        let mut frame = vec![0xee; 14];
        frame.extend(ipv6(6, A6, B6, &[], &tcp(&A6, &B6)));
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(14);
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [p]);
        let out = h.take(0).pop().unwrap();
        assert!(ipv4_ok(out.data()));
        assert_eq!(out.l3_bytes(), out.data());
        assert_eq!(out.anno().dst_ip, Ipv4Addr::from(B4));
        assert_eq!(h.stats().get("translated"), Some(1));
    }
}
