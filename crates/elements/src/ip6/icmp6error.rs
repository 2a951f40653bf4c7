//! `ICMP6Error`: turns a packet the router could not forward into the
//! ICMPv6 error that tells its sender why (RFC 4443 section 3), quoting as
//! much of it as fits in the minimum MTU (section 2.4 (c)), never where
//! section 2.4 (e) forbids it, and at a limited rate (section 2.4 (f)).

use super::header6::{addr_at, is_loopback, is_multicast, is_unspecified, reported_option};
use crate::ip::icmperror::{Limited, RateLimiter};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::{PacketType, Timestamp};
use bricks_wire::icmpv6::Icmpv6Packet;
use bricks_wire::ipv6ext;
use std::net::Ipv6Addr;
use std::sync::Arc;

/// The `ICMP6Error` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ICMP6Error",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "generates ICMPv6 error packets",
    synopsis: "ICMP6Error(SRC, TYPE, CODE [, MTU, POINTER, KEYWORDS RATE, BURST, \
        DEST_RATE, DEST_BURST])",
    description: "For each incoming IPv6 packet (network header annotation set, or the \
        header at the start of the data), emits an ICMPv6 error of type TYPE and code \
        CODE addressed to the packet's source, and consumes the packet. TYPE is a \
        number or a name: `unreachable` (1), `toobig` or `packettoobig` (2), \
        `timeexceeded` (3), `parameterproblem` (4), or `redirect` (137, see below). \
        CODE is a number or a name for \
        that type: `noroute`, `admin`, `beyondscope`, `address`, `port`, `policy`, \
        `reject` for unreachable; `hoplimit`, `reassembly` for timeexceeded; \
        `header`, `nextheader`, `option` for parameterproblem. CODE may be left out \
        (0), which Click does not allow.\n\n\
        The error is a new IPv6 packet without link header: source SRC, destination \
        the offending packet's source, hop limit 255 (as Click), next header ICMPv6, \
        then the ICMPv6 header and as much of the offending packet, IPv6 header first \
        and up to its payload length, as fits without the error exceeding 1280 bytes, \
        the minimum IPv6 MTU (RFC 4443 section 2.4 (c); Click quotes at most 568 \
        bytes). The checksum covers the pseudo-header (section 2.3). A Packet Too Big \
        error carries the packet's MTU annotation, set by a fragmenter, or MTU when \
        that is 0. A Parameter Problem carries the packet's parameter problem \
        annotation, set by CheckIP6Header, else POINTER, else for code 2 the offset \
        of the first Hop-by-Hop option a router does not know and must report (so \
        CheckIP6Header's output 2 can be connected straight here), for code 1 the \
        offset of the Next Header field that names the upper-layer protocol (the \
        one the node does not recognise, RFC 8200 section 4), else 0. The \
        error's IPv6 destination annotation is set to its destination and its \
        network header annotation to its header, so it can go back through \
        LookupIP6Route.\n\n\
        As RFC 4443 section 2.4 (e) requires, no error is sent about an ICMPv6 \
        error message (types below 128, or an ICMPv6 header cut before its type), \
        about a packet to a multicast address or that came as a link-level broadcast \
        or multicast (except Packet Too Big and Parameter Problem code 2, which go \
        even then), or to a source that does not name one node: the unspecified \
        address, a multicast address, or ::1. Such packets are dropped and counted \
        by reason. Unlike ICMPError for IPv4, errors about fragments other than the \
        first are sent (RFC 4443 allows them).\n\n\
        Errors are rate-limited (section 2.4 (f)) as Linux limits its own: each \
        destination (the offending packet's source) may receive DEST_BURST errors at \
        once and then DEST_RATE per second (Linux's per-host icmpv6 ratelimit of 1000 \
        ms with its burst of 6), and all destinations together BURST at once and then \
        RATE per second (Linux's icmp_msgs_per_sec and icmp_msgs_burst). So one host \
        that provokes errors, by a flood of hop-limit-1 packets or a misconfigured \
        route, gets its few and leaves the rest of the budget to the others. Both are \
        token buckets on the router's clock (so `--clock trace` runs are repeatable); \
        the destination's is asked first, so errors it refuses take nothing from the \
        overall one. The per-destination buckets live in a fixed table of 1,024 \
        slots, one machine word each, chosen by a hash of the destination address; a \
        destination that finds its slot held by another evicts it and starts with a \
        full bucket. The table therefore never grows, whatever sources a host forges \
        (the overall bucket still bounds the total), and a lookup is one \
        compare-and-swap, without a lock. The buckets belong to this element and are \
        shared by every worker running it (each ICMP6Error of a configuration has its \
        own). Linux also gives destinations behind shorter route prefixes more \
        errors and exempts Packet Too Big from both limits; bricks limits every \
        error alike, as ICMPError does: a sender that misses a Packet Too Big \
        retransmits and gets another. Errors refused by a limit are counted in \
        `rate_limited`, and by which limit in `rate_limited_dest` and \
        `rate_limited_global`.\n\n\
        `redirect` (Click's type 137, code 0) tells an on-link host that the packet's \
        destination is better reached through another first hop (RFC 4861 section \
        8.2): connect it to a copy of each packet the router forwards back out of \
        the link it came in by (PaintTee), from a source on that link. SRC must be \
        the router's link-local address on the link, which hosts check it against \
        (section 8.1). The target is the packet's next hop (its destination IPv6 \
        annotation, as LookupIP6Route sets it) or, when that is ::, its destination \
        (the destination is on-link). Since hosts accept only a target that is \
        link-local or the destination itself, other targets get no redirect \
        (`suppressed_target`). The message is RFC 4861's: target, destination, and a \
        Redirected Header option quoting as much of the packet as fits in 1280 \
        bytes (Click quotes the packet raw, without the option). Hosts also drop \
        a redirect whose hop limit is not 255, so it must not go through DecIP6HLIM: \
        send it straight to the link's IP6NDSolicitor. The rate limits apply, and \
        a redirect may be about an ICMPv6 error (as Linux).",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "SRC",
            ty: "IPv6 address",
            default: None,
            doc: "source address of the errors",
        },
        Keyword {
            name: "TYPE",
            ty: "ICMPv6 error type, name or number",
            default: None,
            doc: "1, 2, 3 or 4",
        },
        Keyword {
            name: "CODE",
            ty: "ICMPv6 code, name or number",
            default: Some("0"),
            doc: "the code within TYPE",
        },
        Keyword {
            name: "MTU",
            ty: "unsigned integer",
            default: Some("1500"),
            doc: "the MTU a Packet Too Big error reports when the packet's MTU \
                annotation is 0 (Click always reports 1500)",
        },
        Keyword {
            name: "POINTER",
            ty: "unsigned integer",
            default: Some("none"),
            doc: "the pointer a Parameter Problem carries when the packet's parameter \
                problem annotation is not set",
        },
        Keyword {
            name: "RATE",
            ty: "unsigned integer",
            default: Some("1000"),
            doc: "errors per second to all destinations together once BURST is spent \
                (Linux's icmp_msgs_per_sec); 0 turns this limit off",
        },
        Keyword {
            name: "BURST",
            ty: "unsigned integer",
            default: Some("50"),
            doc: "errors that may leave at once to all destinations together (Linux's \
                icmp_msgs_burst); at least 1",
        },
        Keyword {
            name: "DEST_RATE",
            ty: "unsigned integer",
            default: Some("1"),
            doc: "errors per second to one destination once DEST_BURST is spent (Linux's \
                icmpv6 ratelimit of 1000 ms: enough for traceroute's three probes a hop \
                and mtr's one a second); at most 1000; 0 turns this limit off",
        },
        Keyword {
            name: "DEST_BURST",
            ty: "unsigned integer",
            default: Some("6"),
            doc: "errors that may leave at once to one destination (Linux allows 6: two \
                traceroutes at once); at least 1",
        },
    ],
    counters: &[
        ("generated", "ICMPv6 errors sent"),
        (
            "suppressed",
            "packets answered with no error, whatever the reason",
        ),
        (
            "suppressed_malformed",
            "not an IPv6 packet with a complete header",
        ),
        (
            "suppressed_icmp_error",
            "the packet is itself an ICMPv6 error",
        ),
        (
            "suppressed_multicast",
            "sent to a multicast address or as a link-level broadcast or multicast",
        ),
        ("suppressed_bad_source", "source is not a single node"),
        (
            "suppressed_target",
            "redirects whose target is neither link-local nor the destination",
        ),
        (
            "rate_limited",
            "errors not sent because a rate limit was reached (not in `suppressed`)",
        ),
        (
            "rate_limited_dest",
            "of which refused by the destination's limit (DEST_RATE, DEST_BURST)",
        ),
        (
            "rate_limited_global",
            "of which refused by the limit of all destinations together (RATE, BURST)",
        ),
    ],
    example: "InfiniteSource(DATA \\<60 00 00 00 00 00 3b 01 20 01 0d b8 00 00 00 00 \
        00 00 00 00 00 00 00 01 20 01 0d b8 00 01 00 00 00 00 00 00 00 00 00 02>, \
        LIMIT 1) -> dh :: DecIP6HLIM -> Discard; \
        dh[1] -> ICMP6Error(2001:db8::ff, timeexceeded, hoplimit, RATE 10, BURST 5) \
        -> Discard;",
    see_also: &[
        "DecIP6HLIM",
        "CheckIP6Header",
        "LookupIP6Route",
        "ICMPError",
    ],
};

const UNREACHABLE: u8 = 1;
const PACKET_TOO_BIG: u8 = 2;
const TIME_EXCEEDED: u8 = 3;
const PARAMETER_PROBLEM: u8 = 4;
/// Redirect (RFC 4861 section 4.5), a Neighbor Discovery message.
const REDIRECT: u8 = 137;
/// The Redirected Header option (RFC 4861 section 4.6.3).
const REDIRECTED_HEADER: u8 = 4;
/// Parameter Problem: unrecognised Next Header type.
const UNRECOGNISED_NEXT_HEADER: u8 = 1;
/// Parameter Problem: unrecognised IPv6 option.
const UNRECOGNISED_OPTION: u8 = 2;

/// The largest error: the minimum IPv6 MTU (RFC 8200 section 5).
pub const MAX_ERROR: usize = bricks_wire::ipv6::MIN_MTU;

/// ICMPv6 error type names.
const TYPES: &[(&str, u8)] = &[
    ("unreachable", UNREACHABLE),
    ("toobig", PACKET_TOO_BIG),
    ("packettoobig", PACKET_TOO_BIG),
    ("timeexceeded", TIME_EXCEEDED),
    ("parameterproblem", PARAMETER_PROBLEM),
    ("redirect", REDIRECT),
];

/// Code names for each error type (RFC 4443 section 3).
fn code_names(icmp_type: u8) -> &'static [(&'static str, u8)] {
    match icmp_type {
        UNREACHABLE => &[
            ("noroute", 0),
            ("admin", 1),
            ("beyondscope", 2),
            ("address", 3),
            ("port", 4),
            ("policy", 5),
            ("reject", 6),
        ],
        TIME_EXCEEDED => &[("hoplimit", 0), ("reassembly", 1)],
        PARAMETER_PROBLEM => &[
            ("header", 0),
            ("nextheader", UNRECOGNISED_NEXT_HEADER),
            ("option", UNRECOGNISED_OPTION),
        ],
        _ => &[],
    }
}

fn lookup_name(text: &str, names: &[(&str, u8)]) -> Option<u8> {
    let t = text.trim();
    names
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(t))
        .map(|&(_, v)| v)
        .or_else(|| u8::from_arg(t).ok())
}

/// Why no error was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Suppressed {
    /// Not an IPv6 packet with a complete header.
    Malformed,
    /// The packet is an ICMPv6 error (or an ICMPv6 message too short to
    /// tell).
    IcmpError,
    /// Sent to a multicast address, or as a link-level broadcast or
    /// multicast.
    Multicast,
    /// Its source does not name one node.
    BadSource,
    /// A redirect to a target hosts would not accept.
    Target,
}

impl Suppressed {
    /// Every reason, in counter order.
    pub const ALL: [Suppressed; 5] = [
        Suppressed::Malformed,
        Suppressed::IcmpError,
        Suppressed::Multicast,
        Suppressed::BadSource,
        Suppressed::Target,
    ];

    /// The counter for this reason.
    pub const fn counter(self) -> &'static str {
        match self {
            Suppressed::Malformed => "suppressed_malformed",
            Suppressed::IcmpError => "suppressed_icmp_error",
            Suppressed::Multicast => "suppressed_multicast",
            Suppressed::BadSource => "suppressed_bad_source",
            Suppressed::Target => "suppressed_target",
        }
    }

    /// The reason, in words.
    pub const fn text(self) -> &'static str {
        match self {
            Suppressed::Malformed => "not an IPv6 packet with a complete header",
            Suppressed::IcmpError => "no ICMPv6 error about an ICMPv6 error",
            Suppressed::Multicast => "no ICMPv6 error about a multicast or broadcast packet",
            Suppressed::BadSource => "no ICMPv6 error to a source that is not one node",
            Suppressed::Target => {
                "no redirect to a target that is neither link-local nor the destination"
            }
        }
    }
}

impl core::fmt::Display for Suppressed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.text())
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let src: Ipv6Addr = args.read_mp("SRC")?;
    let type_text: String = args.read_mp("TYPE")?;
    let code_text: Option<String> = args.read_p("CODE")?;
    let mtu: u32 = args.read_p("MTU")?.unwrap_or(1500);
    let pointer: Option<u32> = args.read_p("POINTER")?;
    let rate: u32 = args.read("RATE")?.unwrap_or(1000);
    let burst: u32 = args.read("BURST")?.unwrap_or(50);
    let dest_rate: u32 = args.read("DEST_RATE")?.unwrap_or(1);
    let dest_burst: u32 = args.read("DEST_BURST")?.unwrap_or(6);

    let icmp_type = lookup_name(&type_text, TYPES).ok_or_else(|| {
        ArgError::new(format!(
            "bad argument TYPE: expected ICMPv6 error type, found `{type_text}`"
        ))
        .with_help("use unreachable, toobig, timeexceeded, parameterproblem or 1-4")
    })?;
    if !(UNREACHABLE..=PARAMETER_PROBLEM).contains(&icmp_type) && icmp_type != REDIRECT {
        return Err(
            ArgError::new(format!("ICMPv6 type {icmp_type} is not an error or redirect type")).with_help(
                "error types: unreachable (1), toobig (2), timeexceeded (3), parameterproblem (4); redirect (137)",
            ),
        );
    }
    let names = code_names(icmp_type);
    let code = match code_text.as_deref() {
        None => 0,
        Some(t) => lookup_name(t, names).ok_or_else(|| {
            let known: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
            ArgError::new(format!(
                "bad argument CODE: `{t}` is not a code of ICMPv6 type {icmp_type}"
            ))
            .with_help(if known.is_empty() {
                "a number 0-255".to_string()
            } else {
                format!("codes: {} or a number 0-255", known.join(", "))
            })
        })?,
    };
    if burst == 0 || dest_burst == 0 {
        return Err(ArgError::new("BURST and DEST_BURST must be at least 1")
            .with_help("to switch a limit off give its rate as 0 (RATE 0, DEST_RATE 0)"));
    }
    if dest_rate > 1000 {
        return Err(ArgError::new(format!("DEST_RATE {dest_rate} is above 1000 per second"))
            .with_help("per-destination limits are kept to the millisecond; use DEST_RATE 0 for no per-destination limit"));
    }
    if src.is_multicast() || src.is_unspecified() {
        return Err(ArgError::new(format!("SRC {src} is not a unicast address")));
    }
    if icmp_type == REDIRECT && code != 0 {
        return Err(ArgError::new(format!("a redirect has code 0, not {code}")));
    }
    if icmp_type == REDIRECT && !src.is_unicast_link_local() {
        return Err(ArgError::new(format!(
            "SRC {src} of a redirect is not link-local"
        ))
        .with_help("hosts accept redirects only from the router's link-local address (RFC 4861 section 8.1)"));
    }
    let limiter = if rate > 0 || dest_rate > 0 {
        Some(args.shared(|_| Ok(RateLimiter::new(rate, burst, dest_rate, dest_burst)))?)
    } else {
        None
    };
    Ok(Box::new(ICMP6Error {
        src: src.octets(),
        icmp_type,
        code,
        mtu,
        pointer,
        limiter,
        generated: 0,
        suppressed: [0; Suppressed::ALL.len()],
        rate_limited: [0; 2],
    }))
}

/// Generates ICMPv6 errors.
#[derive(Debug)]
pub struct ICMP6Error {
    src: [u8; 16],
    icmp_type: u8,
    code: u8,
    mtu: u32,
    pointer: Option<u32>,
    /// Shared by every worker's instance; `None` when RATE and DEST_RATE
    /// are 0.
    limiter: Option<Arc<RateLimiter>>,
    generated: u64,
    suppressed: [u64; Suppressed::ALL.len()],
    /// Refused by the destination's limit, by the overall one.
    rate_limited: [u64; 2],
}

/// Where a redirect about `p`, to `dst`, sends its sender: the next hop,
/// or the destination itself when that is on-link (next hop ::).
fn redirect_target(p: &Packet, dst: Ipv6Addr) -> Ipv6Addr {
    match p.anno().dst_ip6 {
        a if a.is_unspecified() => dst,
        a => a,
    }
}

/// The offending packet up to its payload length, or what there is of it
/// when it is cut short.
fn datagram(ip: &[u8]) -> &[u8] {
    let len = 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
    &ip[..len.min(ip.len())]
}

impl ICMP6Error {
    /// Whether this error may be sent about a packet to a multicast
    /// address (RFC 4443 section 2.4 (e.3)).
    fn goes_to_multicast(&self) -> bool {
        self.icmp_type == PACKET_TOO_BIG
            || (self.icmp_type == PARAMETER_PROBLEM && self.code == UNRECOGNISED_OPTION)
    }

    /// Says why there must be no error about `p`, if there must be none.
    fn check(&self, p: &Packet) -> Result<(), Suppressed> {
        let ip = p.l3_bytes();
        if ip.len() < 40 || ip[0] >> 4 != 6 {
            return Err(Suppressed::Malformed);
        }
        let ip = datagram(ip);
        if self.icmp_type == REDIRECT {
            let dst = Ipv6Addr::from(addr_at(ip, 24));
            let target = redirect_target(p, dst);
            if target != dst && !target.is_unicast_link_local() {
                return Err(Suppressed::Target);
            }
        } else if let Ok(chain) = ipv6ext::walk(ip) {
            let later_fragment = chain.fragment.is_some_and(|(_, off, _)| off != 0);
            if chain.upper == 58
                && !later_fragment
                && ip.get(chain.upper_offset).is_none_or(|&t| t < 128)
            {
                return Err(Suppressed::IcmpError);
            }
        }
        // A chain that cannot be walked cannot be read as an ICMPv6 error
        // by its sender either: it gets its error.
        let (src, dst) = (addr_at(ip, 8), addr_at(ip, 24));
        let link_multi = matches!(
            p.anno().packet_type,
            PacketType::Broadcast | PacketType::Multicast
        );
        if (is_multicast(&dst) || link_multi) && !self.goes_to_multicast() {
            return Err(Suppressed::Multicast);
        }
        if is_unspecified(&src) || is_multicast(&src) || is_loopback(&src) {
            return Err(Suppressed::BadSource);
        }
        Ok(())
    }

    /// The Parameter Problem pointer for `p` (see the manual).
    fn pointer(&self, p: &Packet, ip: &[u8]) -> u32 {
        if let Some(o) = p.anno().param_off {
            return u32::from(o);
        }
        if let Some(o) = self.pointer {
            return o;
        }
        if self.code == UNRECOGNISED_NEXT_HEADER {
            if let Ok(chain) = ipv6ext::walk(ip) {
                return chain.upper_pointer as u32;
            }
        }
        if self.code == UNRECOGNISED_OPTION {
            if let Ok(ipv6ext::Chain {
                hop_by_hop: Some((at, len)),
                ..
            }) = ipv6ext::walk(ip)
            {
                let to_multicast = is_multicast(&addr_at(ip, 24));
                if let Some(o) = reported_option(&ip[at..at + len], at, to_multicast) {
                    return o as u32;
                }
            }
        }
        0
    }

    /// Builds the redirect about `p`, which passed [`ICMP6Error::check`]
    /// (RFC 4861 section 4.5): target, destination, and the packet in a
    /// Redirected Header option, whole 8-byte units, within 1280 bytes.
    fn build_redirect(&self, p: &Packet, now: Timestamp) -> Option<Packet> {
        let ip = datagram(p.l3_bytes());
        let to = addr_at(ip, 8);
        let dst = Ipv6Addr::from(addr_at(ip, 24));
        let target = redirect_target(p, dst);
        // 40 (IPv6) + 40 (message) + 8 (option header) + the quote.
        let quote = ip.len().min(MAX_ERROR - 88);
        let opt_len = (8 + quote).next_multiple_of(8);
        let plen = 40 + opt_len;
        let mut q = Packet::new();
        q.put_back(40 + plen).ok()?;
        let d = q.data_mut();
        d.fill(0);
        d[..8].copy_from_slice(&[0x60, 0, 0, 0, 0, 0, 58, 255]);
        d[4..6].copy_from_slice(&(plen as u16).to_be_bytes());
        d[8..24].copy_from_slice(&self.src);
        d[24..40].copy_from_slice(&to);
        d[40] = REDIRECT;
        d[48..64].copy_from_slice(&target.octets());
        d[64..80].copy_from_slice(&dst.octets());
        d[80] = REDIRECTED_HEADER;
        d[81] = (opt_len / 8) as u8;
        d[88..88 + quote].copy_from_slice(&ip[..quote]);
        Icmpv6Packet::new_unchecked(&mut d[40..])
            .fill_checksum(Ipv6Addr::from(self.src), Ipv6Addr::from(to));
        let a = q.anno_mut();
        a.dst_ip6 = Ipv6Addr::from(to);
        a.timestamp = now;
        q.set_network_header(0);
        Some(q)
    }

    /// Builds the error about `p`, which passed [`ICMP6Error::check`].
    fn build(&self, p: &Packet, now: Timestamp) -> Option<Packet> {
        if self.icmp_type == REDIRECT {
            return self.build_redirect(p, now);
        }
        let ip = datagram(p.l3_bytes());
        let quote = ip.len().min(MAX_ERROR - 48);
        let plen = 8 + quote;
        let mut q = Packet::new();
        q.put_back(40 + plen).ok()?;
        let dst = addr_at(ip, 8);
        let rest = match self.icmp_type {
            PACKET_TOO_BIG => match p.anno().mtu {
                0 => self.mtu,
                m => u32::from(m),
            },
            PARAMETER_PROBLEM => self.pointer(p, ip),
            _ => 0,
        };
        let d = q.data_mut();
        d[..8].copy_from_slice(&[0x60, 0, 0, 0, 0, 0, 58, 255]);
        d[4..6].copy_from_slice(&(plen as u16).to_be_bytes());
        d[8..24].copy_from_slice(&self.src);
        d[24..40].copy_from_slice(&dst);
        let mut icmp = Icmpv6Packet::new_unchecked(&mut d[40..]);
        icmp.set_msg_type(self.icmp_type.into());
        icmp.set_msg_code(self.code);
        icmp.set_rest_of_header(rest);
        icmp.payload_mut().copy_from_slice(&ip[..quote]);
        icmp.fill_checksum(Ipv6Addr::from(self.src), Ipv6Addr::from(dst));
        let a = q.anno_mut();
        a.dst_ip6 = Ipv6Addr::from(dst);
        a.timestamp = now;
        q.set_network_header(0);
        Some(q)
    }

    /// The error about `p`, if one is due and the limit allows it.
    fn answer(&mut self, p: &Packet, now: Timestamp) -> Option<Packet> {
        // Limited after the checks, so that packets that get no error
        // anyway take nothing from the bucket, and before the error is
        // built, so that a flood costs no buffers.
        if let Err(r) = self.check(p) {
            self.suppressed[r as usize] += 1;
            return None;
        }
        if let Some(l) = &self.limiter {
            // The error goes to the offending packet's source.
            if let Err(by) = l.admit_ip6(&addr_at(p.l3_bytes(), 8), now) {
                self.rate_limited[by as usize] += 1;
                return None;
            }
        }
        let q = self.build(p, now);
        self.generated += u64::from(q.is_some());
        q
    }
}

impl Element for ICMP6Error {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = cx.now();
        let mut out = Batch::new();
        for p in batch.drain() {
            if let Some(q) = self.answer(&p, now) {
                // One error per packet of a batch: it fits.
                let _ = out.push(q);
            }
        }
        cx.push(0, &mut out);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let now = cx.now();
        let mut b = Batch::new();
        cx.pull(0, &mut b, max);
        for p in b.drain() {
            if let Some(q) = self.answer(&p, now) {
                let _ = out.push(q);
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("generated", self.generated);
        s.counter("suppressed", self.suppressed.iter().sum());
        for r in Suppressed::ALL {
            s.counter(r.counter(), self.suppressed[r as usize]);
        }
        s.counter("rate_limited", self.rate_limited.iter().sum());
        s.counter(
            "rate_limited_dest",
            self.rate_limited[Limited::Destination as usize],
        );
        s.counter(
            "rate_limited_global",
            self.rate_limited[Limited::Overall as usize],
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::{icmp6_ok, udp, udp_with, ECHO_REQUEST, HOST_A};
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};
    use bricks_wire::ipv6ext::{FRAGMENT, HOP_BY_HOP};
    use proptest::prelude::*;

    const ROUTER: &str = "2001:db8::ff";

    fn packet(frame: &[u8]) -> Packet {
        Packet::from_slice(frame).unwrap()
    }

    /// The error `args` makes about `p`, or why there is none.
    fn one(args: &str, p: Packet) -> Result<Vec<u8>, Suppressed> {
        let mut h = Harness::push(&CLASS, &format!("{args}, RATE 0, DEST_RATE 0"), 1, 1);
        h.push_packets(0, [p]);
        let mut out = h.take(0);
        match out.pop() {
            Some(q) => {
                assert_eq!(q.anno().dst_ip6, Ipv6Addr::from(addr_at(q.data(), 24)));
                assert_eq!(q.network_header_offset(), Some(0));
                Ok(q.data().to_vec())
            }
            None => {
                let s = h.stats();
                Err(*Suppressed::ALL
                    .iter()
                    .find(|r| s.get(r.counter()) == Some(1))
                    .expect("a reason"))
            }
        }
    }

    /// The redirect `ICMP6Error(fe80::1, redirect)` makes about `ip`
    /// with next hop annotation `next_hop`, or why there is none.
    fn redirect(ip: &[u8], next_hop: &str) -> Result<Vec<u8>, Suppressed> {
        let mut p = packet(ip);
        p.anno_mut().dst_ip6 = next_hop.parse().unwrap();
        one("fe80::1, redirect", p)
    }

    #[test]
    fn redirects_follow_rfc_4861_section_4_5() {
        // On-link destination (next hop ::): the target is the destination.
        let r = redirect(&ECHO_REQUEST, "::").unwrap();
        assert_eq!(&r[..4], &[0x60, 0, 0, 0]);
        assert_eq!(usize::from(u16::from_be_bytes([r[4], r[5]])), r.len() - 40);
        assert_eq!((r[6], r[7]), (58, 255), "ICMPv6, hop limit 255");
        assert_eq!(
            Ipv6Addr::from(addr_at(&r, 8)),
            "fe80::1".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(&r[24..40], &HOST_A, "to the packet's source");
        assert!(icmp6_ok(&r, 40));
        assert_eq!((r[40], r[41]), (137, 0));
        assert_eq!(&r[44..48], &[0; 4], "reserved");
        assert_eq!(&r[48..64], &ECHO_REQUEST[24..40], "target: the destination");
        assert_eq!(&r[64..80], &ECHO_REQUEST[24..40], "destination");
        // Redirected Header: type 4, 56 bytes of packet in 8 units of 8.
        assert_eq!(&r[80..88], &[4, 8, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&r[88..], &ECHO_REQUEST[..]);
        // Through a router: its link-local address is the target.
        let r = redirect(&ECHO_REQUEST, "fe80::9").unwrap();
        assert_eq!(
            Ipv6Addr::from(addr_at(&r, 48)),
            "fe80::9".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(&r[64..80], &ECHO_REQUEST[24..40]);
        // A global next hop other than the destination: hosts would drop it.
        assert_eq!(
            redirect(&ECHO_REQUEST, "2001:db8:1::9"),
            Err(Suppressed::Target)
        );
        // The quote pads to whole units and stops at 1280 bytes.
        let r = redirect(&udp(3), "::").unwrap();
        assert_eq!(r.len(), 88 + 56);
        assert_eq!(r[81], 8);
        assert_eq!(&r[88..88 + 51], &udp(3)[..]);
        assert_eq!(&r[88 + 51..], &[0; 5]);
        let r = redirect(&udp(1452), "::").unwrap();
        assert_eq!(r.len(), MAX_ERROR);
        assert_eq!(usize::from(r[81]) * 8, MAX_ERROR - 80);
        assert_eq!(&r[88..], &udp(1452)[..MAX_ERROR - 88]);
        assert!(icmp6_ok(&r, 40));
        // Unlike errors, a redirect may be about an ICMPv6 error.
        let mut err = ECHO_REQUEST;
        err[40] = 1;
        assert!(redirect(&err, "::").is_ok());
        // Never to a multicast or unspecified source.
        let mut mc = ECHO_REQUEST;
        mc[8] = 0xff;
        assert_eq!(redirect(&mc, "::"), Err(Suppressed::BadSource));
        // The source must be link-local, the code 0.
        for bad in [
            "2001:db8::1, redirect",
            "fe80::1, redirect, 1",
            "fe80::1, 138",
        ] {
            assert!(
                make_element(&CLASS, bad, &PortInfo::default()).is_err(),
                "{bad}"
            );
        }
    }

    /// Checks the fixed parts of error `e` about `orig` and returns its
    /// ICMPv6 message.
    fn check_error<'a>(e: &'a [u8], orig: &[u8], t: u8, c: u8) -> &'a [u8] {
        assert_eq!(&e[..4], &[0x60, 0, 0, 0]);
        assert_eq!(usize::from(u16::from_be_bytes([e[4], e[5]])), e.len() - 40);
        assert_eq!((e[6], e[7]), (58, 255));
        assert_eq!(
            Ipv6Addr::from(addr_at(e, 8)),
            ROUTER.parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(&e[24..40], &orig[8..24]);
        assert!(icmp6_ok(e, 40), "ICMPv6 checksum");
        let icmp = &e[40..];
        assert_eq!((icmp[0], icmp[1]), (t, c));
        icmp
    }

    #[test]
    fn time_exceeded_quotes_the_whole_small_packet() {
        let orig = udp(20);
        let e = one("2001:db8::ff, timeexceeded, hoplimit", packet(&orig)).unwrap();
        let icmp = check_error(&e, &orig, 3, 0);
        assert_eq!(&icmp[4..8], &[0; 4]);
        assert_eq!(&icmp[8..], &orig[..]);
        assert_eq!(e.len(), 48 + orig.len());
        // Numbers as Click takes them.
        let e2 = one("2001:db8::ff, 3, 0", packet(&orig)).unwrap();
        assert_eq!(e, e2);
    }

    #[test]
    fn the_quote_stops_at_1280_bytes_and_at_the_payload_length() {
        // 1400 bytes: the error is exactly 1280 bytes.
        let orig = udp(1400 - 48);
        assert_eq!(orig.len(), 1400);
        let e = one("2001:db8::ff, unreachable, noroute", packet(&orig)).unwrap();
        assert_eq!(e.len(), 1280);
        let icmp = check_error(&e, &orig, 1, 0);
        assert_eq!(&icmp[8..], &orig[..1232]);
        // 1232 bytes fit exactly; link padding is not quoted.
        let mut orig = udp(1232 - 48);
        orig.extend([0xaa; 30]);
        let e = one("2001:db8::ff, unreachable, port", packet(&orig)).unwrap();
        assert_eq!(e.len(), 1280);
        assert_eq!(&e[48..], &orig[..1232]);
    }

    #[test]
    fn packet_too_big_carries_the_mtu() {
        let orig = udp(1400);
        let e = one("2001:db8::ff, toobig", packet(&orig)).unwrap();
        assert_eq!(&check_error(&e, &orig, 2, 0)[4..8], &1500u32.to_be_bytes());
        let e = one("2001:db8::ff, packettoobig, 0, 1280", packet(&orig)).unwrap();
        assert_eq!(&e[44..48], &1280u32.to_be_bytes());
        let mut p = packet(&orig);
        p.anno_mut().mtu = 1400;
        let e = one("2001:db8::ff, 2, 0, MTU 1280", p).unwrap();
        assert_eq!(&e[44..48], &1400u32.to_be_bytes());
    }

    #[test]
    fn parameter_problem_pointer() {
        let orig = udp(8);
        let mut p = packet(&orig);
        p.anno_mut().param_off = Some(7);
        let e = one("2001:db8::ff, parameterproblem, header", p).unwrap();
        assert_eq!(&check_error(&e, &orig, 4, 0)[4..8], &7u32.to_be_bytes());
        let e = one(
            "2001:db8::ff, parameterproblem, 0, POINTER 6",
            packet(&orig),
        )
        .unwrap();
        assert_eq!(&e[44..48], &6u32.to_be_bytes());
        // Code 2 without a pointer: the first reported option, even past
        // what the annotation could hold (a 256-byte Hop-by-Hop header).
        let mut ext = vec![17, 31, 1, 246];
        ext.resize(250, 0);
        ext.extend([0x9e, 4, 0, 0, 0, 0]);
        let orig = udp_with(HOP_BY_HOP, &ext, 0);
        let e = one("2001:db8::ff, parameterproblem, option", packet(&orig)).unwrap();
        assert_eq!(&check_error(&e, &orig, 4, 2)[4..8], &290u32.to_be_bytes());
        // Code 1 without a pointer: the Next Header field naming the
        // protocol, in the fixed header (6) or in the last extension
        // header (a Destination Options header at 40 naming 253).
        let mut orig = udp(8);
        orig[6] = 253;
        let e = one("2001:db8::ff, parameterproblem, nextheader", packet(&orig)).unwrap();
        assert_eq!(&check_error(&e, &orig, 4, 1)[4..8], &6u32.to_be_bytes());
        let orig = udp_with(60, &[253, 0, 1, 4, 0, 0, 0, 0], 0);
        let e = one("2001:db8::ff, parameterproblem, nextheader", packet(&orig)).unwrap();
        assert_eq!(&check_error(&e, &orig, 4, 1)[4..8], &40u32.to_be_bytes());
    }

    #[test]
    fn check_ip6_header_output_2_feeds_parameter_problems() {
        let ext = [17, 0, 0xde, 2, 0, 0, 1, 0];
        let orig = udp_with(HOP_BY_HOP, &ext, 4);
        let mut check = Harness::push(&super::super::checkip6header::CLASS, "", 1, 3);
        check.push_bytes(0, &orig);
        let reported = check.take(2);
        assert_eq!(reported.len(), 1);
        let mut h = Harness::push(&CLASS, "2001:db8::ff, parameterproblem, 2", 1, 1);
        h.push_packets(0, reported);
        let e = h.take_bytes(0).pop().unwrap();
        assert_eq!(&check_error(&e, &orig, 4, 2)[4..8], &42u32.to_be_bytes());
        assert_eq!(&e[48..], &orig[..]);
    }

    #[test]
    fn never_an_error_about_an_error() {
        let args = "2001:db8::ff, unreachable";
        for t in [1u8, 2, 3, 4, 100, 127] {
            let mut v = ECHO_REQUEST;
            v[40] = t;
            assert_eq!(one(args, packet(&v)), Err(Suppressed::IcmpError), "{t}");
        }
        // Cut before the type.
        let mut v = ECHO_REQUEST[..40].to_vec();
        v[4..6].fill(0);
        assert_eq!(one(args, packet(&v)), Err(Suppressed::IcmpError));
        // Behind a Fragment header (first fragment).
        let mut v = ECHO_REQUEST[..40].to_vec();
        v[6] = FRAGMENT;
        v[5] = 24;
        v.extend([58, 0, 0, 1, 0, 0, 0, 1]);
        v.extend(&ECHO_REQUEST[40..]);
        v[48] = 3;
        assert_eq!(one(args, packet(&v)), Err(Suppressed::IcmpError));
        // Informational messages (echo, NDP) get errors.
        for t in [128u8, 129, 135] {
            let mut v = ECHO_REQUEST;
            v[40] = t;
            assert!(one(args, packet(&v)).is_ok(), "{t}");
        }
        // A later fragment cannot be told apart: it gets its error.
        v[42..44].copy_from_slice(&[0x05, 0x00]);
        assert!(one(args, packet(&v)).is_ok());
    }

    #[test]
    fn multicast_and_bad_sources() {
        let group: Ipv6Addr = "ff0e::101".parse().unwrap();
        let mut m = udp(8);
        m[24..40].copy_from_slice(&group.octets());
        assert_eq!(
            one("2001:db8::ff, timeexceeded", packet(&m)),
            Err(Suppressed::Multicast)
        );
        assert_eq!(
            one("2001:db8::ff, parameterproblem, header", packet(&m)),
            Err(Suppressed::Multicast)
        );
        // The two exceptions of section 2.4 (e.3).
        assert!(one("2001:db8::ff, toobig", packet(&m)).is_ok());
        assert!(one("2001:db8::ff, parameterproblem, option", packet(&m)).is_ok());
        for t in [PacketType::Broadcast, PacketType::Multicast] {
            let mut p = packet(&udp(8));
            p.anno_mut().packet_type = t;
            assert_eq!(
                one("2001:db8::ff, unreachable", p),
                Err(Suppressed::Multicast)
            );
            let mut p = packet(&udp(8));
            p.anno_mut().packet_type = t;
            assert!(one("2001:db8::ff, toobig", p).is_ok());
        }
        for src in ["::", "ff02::1", "::1"] {
            let mut v = udp(8);
            v[8..24].copy_from_slice(&src.parse::<Ipv6Addr>().unwrap().octets());
            assert_eq!(
                one("2001:db8::ff, timeexceeded", packet(&v)),
                Err(Suppressed::BadSource),
                "{src}"
            );
        }
        for bad in [&ECHO_REQUEST[..39], &[0x45; 60][..]] {
            assert_eq!(
                one("2001:db8::ff, timeexceeded", packet(bad)),
                Err(Suppressed::Malformed)
            );
        }
    }

    #[test]
    fn network_header_annotation_is_followed() {
        let mut frame = vec![0xee; 14];
        frame.extend(udp(8));
        let mut p = packet(&frame);
        p.set_network_header(14);
        let e = one("2001:db8::ff, timeexceeded", p).unwrap();
        assert_eq!(&e[48..], &frame[14..]);
        assert_eq!(&e[24..40], &HOST_A);
    }

    fn flood(n: usize) -> Vec<Packet> {
        (0..n).map(|_| packet(&udp(8))).collect()
    }

    #[test]
    fn errors_are_rate_limited_and_refill_on_the_clock() {
        // The overall bucket alone.
        let mut h = Harness::push(
            &CLASS,
            "2001:db8::ff, timeexceeded, RATE 100, BURST 5, DEST_RATE 0",
            1,
            1,
        );
        h.advance_to(Timestamp::from_parts(1_000, 0));
        h.push_packets(0, flood(50));
        assert_eq!(h.take(0).len(), 5, "BURST 5");
        assert_eq!(h.stats().get("rate_limited"), Some(45));
        assert_eq!(h.stats().get("generated"), Some(5));
        // 100 per second: 9 ms gives nothing, 10 ms one more.
        h.advance_to(Timestamp::from_parts(1_000, 9_000_000));
        h.push_packets(0, flood(3));
        assert!(h.take(0).is_empty());
        h.advance_to(Timestamp::from_parts(1_000, 10_000_000));
        h.push_packets(0, flood(3));
        assert_eq!(h.take(0).len(), 1);
        // Suppressed packets take nothing from the bucket.
        h.advance_to(Timestamp::from_parts(2_000, 0));
        let mut errs = ECHO_REQUEST;
        errs[40] = 1;
        h.push_packets(0, (0..20).map(|_| packet(&errs)));
        h.push_packets(0, flood(10));
        assert_eq!(h.take(0).len(), 5);
        // RATE 0 and DEST_RATE 0: no limit.
        let mut h = Harness::push(
            &CLASS,
            "2001:db8::ff, timeexceeded, RATE 0, DEST_RATE 0",
            1,
            1,
        );
        h.push_packets(0, flood(200));
        assert_eq!(h.take(0).len(), 200);
    }

    /// `n` UDP datagrams from `src` (as udp(8) otherwise).
    fn from(src: Ipv6Addr, n: usize) -> Vec<Packet> {
        let mut v = udp(8);
        v[8..24].copy_from_slice(&src.octets());
        (0..n).map(|_| packet(&v)).collect()
    }

    fn host(i: u32) -> Ipv6Addr {
        Ipv6Addr::from(0x2001_0db8_0001_0000_0000_0000_0000_0000u128 + u128::from(i))
    }

    #[test]
    fn the_default_limits() {
        // One source: DEST_BURST 6.
        let mut h = Harness::push(&CLASS, "2001:db8::ff, timeexceeded", 1, 1);
        h.advance_to(Timestamp::from_parts(5, 0));
        h.push_packets(0, flood(200));
        assert_eq!(h.take(0).len(), 6);
        let s = h.stats();
        assert_eq!(
            (
                s.get("rate_limited"),
                s.get("rate_limited_dest"),
                s.get("rate_limited_global")
            ),
            (Some(194), Some(194), Some(0))
        );
        // Many sources, 4 packets each: BURST 50 in all.
        let mut h = Harness::push(&CLASS, "2001:db8::ff, timeexceeded", 1, 1);
        h.advance_to(Timestamp::from_parts(5, 0));
        h.push_packets(0, (0..50).flat_map(|i| from(host(i), 4)));
        assert_eq!(h.take(0).len(), 50);
        assert_eq!(h.stats().get("rate_limited_global"), Some(150));
    }

    #[test]
    fn a_flooding_source_hits_its_own_limit_and_others_still_get_theirs() {
        let mut h = Harness::push(&CLASS, "2001:db8::ff, timeexceeded", 1, 1);
        let (flooder, other) = (host(1), host(2));
        let to = |e: &[Vec<u8>], a: Ipv6Addr| e.iter().filter(|e| e[24..40] == a.octets()).count();
        // One second of a flood of 10,000 packets a second from one host,
        // with one packet from another host every 200 ms (within its own
        // limit: a traceroute's probes).
        let t0 = 100_000_000_000u64;
        let mut errors = Vec::new();
        for ms in 0..1000u64 {
            h.advance_to(Timestamp(t0 + ms * 1_000_000));
            h.push_packets(0, from(flooder, 10));
            if ms % 200 == 50 {
                h.push_packets(0, from(other, 1));
            }
            errors.extend(h.take_bytes(0));
        }
        // The flooder: its burst, then one a second (none more in this
        // second); the other host: every one of its five.
        assert_eq!(to(&errors, flooder), 6);
        assert_eq!(to(&errors, other), 5);
        let s = h.stats();
        assert_eq!(s.get("rate_limited_dest"), Some(10_000 - 6));
        assert_eq!(s.get("rate_limited_global"), Some(0));
        // Each error is well formed and goes where the packet came from.
        for e in &errors {
            assert!(icmp6_ok(e, 40));
            assert_eq!((e[40], e[41]), (3, 0));
        }
        // Without the per-destination limit the flooder takes the whole
        // overall budget and the other host gets nothing.
        let mut h = Harness::push(&CLASS, "2001:db8::ff, timeexceeded, DEST_RATE 0", 1, 1);
        h.advance_to(Timestamp(t0));
        h.push_packets(0, from(flooder, 100));
        h.push_packets(0, from(other, 1));
        let e = h.take_bytes(0);
        assert_eq!((to(&e, flooder), to(&e, other)), (50, 0));
    }

    #[test]
    fn the_overall_limit_still_caps_the_total() {
        // 1,000 hosts, each within its own limit, over one second: at most
        // BURST + RATE x 1 s errors in all.
        let args = "2001:db8::ff, timeexceeded, RATE 200, BURST 20";
        let mut h = Harness::push(&CLASS, args, 1, 1);
        let t0 = 7_000_000_000u64;
        let mut sent = 0;
        for ms in 0..1000u64 {
            h.advance_to(Timestamp(t0 + ms * 1_000_000));
            h.push_packets(0, from(host(ms as u32), 1));
            sent += h.take(0).len();
        }
        assert!((200..=220).contains(&sent), "{sent} errors in 1 s");
        assert_eq!(h.stats().get("rate_limited_dest"), Some(0));
        assert_eq!(
            h.stats().get("rate_limited_global"),
            Some(1000 - sent as u64)
        );
    }

    #[test]
    fn the_destination_table_stays_bounded_under_a_spray_of_sources() {
        let mut h = Harness::push(&CLASS, "2001:db8::ff, timeexceeded, RATE 0", 1, 1);
        let victim = host(0xdead_beef);
        h.push_packets(0, from(victim, 10));
        assert_eq!(h.take(0).len(), 6);
        // 100,000 forged sources, two packets each: each starts with a
        // full bucket of its own (evicting whoever held its slot).
        let mut generated = 0;
        for chunk in 0..100u32 {
            h.push_packets(
                0,
                (0..1000).flat_map(|i| from(host(0x1_0000 + chunk * 1000 + i), 2)),
            );
            generated += h.take(0).len();
        }
        assert_eq!(generated, 200_000);
        // A flooder after the spray is limited again at once.
        h.push_packets(0, from(victim, 10));
        assert_eq!(h.take(0).len(), 6);
        assert_eq!(h.stats().get("rate_limited_dest"), Some(8));
        // The same on the table itself: its size is fixed when it is made,
        // and a destination that keeps its slot stays limited.
        let l = RateLimiter::new(0, 1, 1, 6);
        let now = Timestamp::from_parts(9, 0);
        for i in 0..100_000u32 {
            assert!(l.admit_ip6(&host(0x10_0000 + i).octets(), now).is_ok());
        }
        assert_eq!(l.slots(), crate::ip::icmperror::DEST_SLOTS);
        for _ in 0..6 {
            assert!(l.admit_ip6(&host(7).octets(), now).is_ok());
        }
        assert_eq!(
            l.admit_ip6(&host(7).octets(), now),
            Err(Limited::Destination)
        );
    }

    #[test]
    fn workers_share_the_buckets() {
        let l = Arc::new(RateLimiter::new(1000, 50, 1, 6));
        let now = Timestamp::from_parts(7, 0);
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let l = Arc::clone(&l);
                std::thread::spawn(move || {
                    (0..1000u32)
                        .filter(|&i| {
                            // Half to one host, half to many.
                            let dst = if i % 2 == 0 {
                                host(1)
                            } else {
                                host(t * 10_000 + i)
                            };
                            l.admit_ip6(&dst.octets(), now).is_ok()
                        })
                        .count()
                })
            })
            .collect();
        let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(total, 50, "the overall burst, across threads");
        // The one host got its burst of 6 at most.
        let l = Arc::new(RateLimiter::new(0, 1, 1, 6));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let l = Arc::clone(&l);
                std::thread::spawn(move || {
                    (0..100)
                        .filter(|_| l.admit_ip6(&host(1).octets(), now).is_ok())
                        .count()
                })
            })
            .collect();
        let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(total, 6, "one destination's burst, across threads");
    }

    #[test]
    fn pull_generates_too() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "2001:db8::ff, timeexceeded", ports);
        let mut errs = ECHO_REQUEST;
        errs[40] = 1;
        h.feed(0, [packet(&udp(8)), packet(&errs), packet(&udp(4))]);
        assert_eq!(h.pull(0, 8).len(), 2);
        assert_eq!(h.stats().get("suppressed_icmp_error"), Some(1));
    }

    /// Hostile bytes: an IPv6 header with a random payload length, next
    /// header and hop limit, random extension headers and options behind.
    fn hostile() -> impl Strategy<Value = Vec<u8>> {
        (
            proptest::collection::vec(any::<u8>(), 0..1500),
            any::<u16>(),
            prop_oneof![
                Just(0u8),
                Just(43),
                Just(44),
                Just(58),
                Just(60),
                any::<u8>()
            ],
        )
            .prop_map(|(body, plen, next)| {
                let mut p = udp(0)[..40].to_vec();
                p[4..6].copy_from_slice(&(plen % 1600).to_be_bytes());
                p[6] = next;
                p.extend(body);
                p
            })
    }

    proptest! {
        #[test]
        fn hostile_packets_never_panic_and_errors_are_well_formed(p in hostile()) {
            let mut check = Harness::push(&super::super::checkip6header::CLASS, "INTERFACES 2001:db8:1::2", 1, 3);
            check.push_bytes(0, &p);
            let mut all: Vec<Packet> = (0..3).flat_map(|o| check.take(o)).collect();
            all.push(packet(&p));
            for args in ["2001:db8::ff, parameterproblem, option, RATE 0, DEST_RATE 0", "2001:db8::ff, toobig, RATE 0, DEST_RATE 0"] {
                let mut h = Harness::push(&CLASS, args, 1, 1);
                h.push_packets(0, all.iter().map(|q| q.duplicate()));
                for e in h.take_bytes(0) {
                    prop_assert!(e.len() <= MAX_ERROR && e.len() >= 88);
                    prop_assert!(icmp6_ok(&e, 40));
                    prop_assert_eq!(usize::from(u16::from_be_bytes([e[4], e[5]])), e.len() - 40);
                }
            }
        }
    }

    #[test]
    fn arguments() {
        let ports = PortInfo::default();
        let ok = |a: &str| make_element(&CLASS, a, &ports).map(|_| ());
        assert!(ok("2001:db8::ff, timeexceeded, hoplimit").is_ok());
        assert!(ok("2001:db8::ff, TimeExceeded, Reassembly").is_ok());
        assert!(ok("SRC 2001:db8::ff, TYPE 1, CODE 4").is_ok());
        assert!(ok("2001:db8::ff, unreachable, beyondscope").is_ok());
        assert!(ok("2001:db8::ff, toobig, 0, 1280").is_ok());
        assert!(ok("2001:db8::ff, parameterproblem, header, POINTER 40").is_ok());
        assert!(ok("2001:db8::ff, 128, 0")
            .unwrap_err()
            .contains("not an error or redirect type"));
        assert!(ok("2001:db8::ff, 0").is_err());
        assert!(ok("2001:db8::ff, bogus").unwrap_err().contains("TYPE"));
        assert!(ok("2001:db8::ff, timeexceeded, port")
            .unwrap_err()
            .contains("not a code of ICMPv6 type 3"));
        assert!(ok("2001:db8::ff, 3, 256").is_err());
        assert!(ok("2001:db8::ff").unwrap_err().contains("TYPE"));
        assert!(ok("10.0.0.1, 3, 0").is_err());
        assert!(ok("::, 3, 0").is_err());
        assert!(ok("2001:db8::ff, 3, 0, BURST 0")
            .unwrap_err()
            .contains("at least 1"));
        assert!(ok("2001:db8::ff, 3, 0, RATE x").is_err());
        assert!(ok("2001:db8::ff, 3, 0, DEST_BURST 0")
            .unwrap_err()
            .contains("at least 1"));
        assert!(ok("2001:db8::ff, 3, 0, DEST_RATE 1001")
            .unwrap_err()
            .contains("above 1000"));
        assert!(ok("2001:db8::ff, 3, 0, DEST_RATE 1000, DEST_BURST 100").is_ok());
    }
}
