//! `ICMPError`: turns a packet the router could not forward into the ICMP
//! error that tells its sender why (RFC 792; RFC 1812 section 4.3), and
//! refuses to answer where RFC 1812 section 4.3.2.7 forbids it, at a rate
//! limited per destination and overall (section 4.3.2.8).

use super::header::{
    be16, be32, is_multicast_or_reserved, AddressList, IPOPT_EOL, IPOPT_LSRR, IPOPT_NOP,
    IPOPT_SSRR, PROTO_ICMP,
};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::{PacketType, Timestamp, MAX_FRAME};
use bricks_wire::checksum;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The `ICMPError` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ICMPError",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "generates ICMP error packets",
    synopsis: "ICMPError(SRC, TYPE [, CODE, BADADDRS, KEYWORDS MTU, PMTU, SET_FIX_ANNO, \
        USE_FIX_ANNO, RATELIMIT, RATE, BURST, DEST_RATE, DEST_BURST])",
    description: "For each incoming IP packet (network header annotation set), emits \
        an ICMP error of type TYPE and code CODE addressed to the packet's source, and \
        consumes the packet. TYPE is a number or one of `unreachable` (3), \
        `sourcequench` (4), `redirect` (5), `timeexceeded` (11), `parameterproblem` \
        (12); CODE is a number or a name for that type: `net`, `host`, `protocol`, \
        `port`, `needfrag`, `srcroutefail`, `netunknown`, `hostunknown`, `isolated`, \
        `netprohibited`, `hostprohibited`, `tosnet`, `toshost`, `filterprohibited`, \
        `hostprecedence`, `precedencecutoff` for unreachable; `net`, `host`, `tosnet`, \
        `toshost` for redirect; `transit`, `reassembly` for timeexceeded; \
        `erroratptr`, `missingopt`, `length` for parameterproblem. CODE defaults to 0.\n\n\
        The error is a new IPv4 packet without link header: source SRC, TTL 255, \
        precedence 6 (RFC 1812 section 4.3.2.5; a source quench keeps the original's), \
        protocol ICMP, then the ICMP header and as much of the original datagram, IP \
        header first, as fits in MTU bytes (RFC 1812 section 4.3.2.3). A \
        fragmentation-needed error (unreachable, needfrag) carries the next-hop MTU \
        from the packet's MTU annotation, set by IPFragmenter, or PMTU when the \
        annotation is 0 (RFC 1191). A parameter problem carries the pointer from the \
        packet's parameter problem annotation, set by IPGWOptions. A redirect carries \
        the gateway from the destination annotation, the next hop the route lookup \
        chose. The error's destination annotation is the original source, its network \
        header annotation is set, and its fix_ip_src annotation is set (unless \
        SET_FIX_ANNO is false) so that FixIPSrc gives it the outgoing interface's \
        address. A datagram with a loose or strict source route gets its error back \
        along the route it came: the error carries the route's visited hops, last \
        first, as the same kind of option (RFC 1812 section 4.3.2.6, as Click), except \
        when the parameter problem is in the route itself.\n\n\
        As RFC 1812 section 4.3.2.7 requires, no error is sent about an ICMP error (any \
        ICMP type but the echo, router discovery, timestamp, information and address \
        mask queries and replies), a fragment other than the first, a link-level \
        broadcast or multicast, a packet to a broadcast, multicast or class E address \
        or to one of BADADDRS, or a packet whose source is not one host: network 0, \
        127/8, multicast, class E, the limited broadcast, or one of BADADDRS. No \
        redirect is sent for a source-routed packet (RFC 1812 section 5.2.7.2). Such \
        packets are dropped and counted by reason.\n\n\
        Errors are rate-limited (RFC 1812 section 4.3.2.8), as Linux limits its own \
        (`icmp_ratelimit`, `icmp_msgs_per_sec`, `icmp_msgs_burst`): each destination \
        may receive DEST_BURST errors at once and then DEST_RATE per second, and all \
        destinations together BURST at once and then RATE per second. Both are token \
        buckets on the router's clock (so `--clock trace` runs are reproducible). The \
        per-destination buckets live in a table of 1,024 slots chosen by a hash of the \
        destination; a destination that finds its slot taken by another evicts it and \
        starts with a full bucket, so the table stays bounded whatever the traffic and \
        the overall bucket bounds the total. The destination's bucket is consulted \
        first, so a flood to one host does not use up the overall budget of the \
        others. The buckets belong to this element and are shared by all workers: the \
        limits hold for the element however many cores run it (each ICMPError of a \
        configuration has its own). Unlike Linux, fragmentation-needed errors are \
        limited too (a sender that misses one retransmits and gets another). Errors \
        refused by a limit are counted in `rate_limited`, and by which limit in \
        `rate_limited_dest` and `rate_limited_global`.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "SRC",
            ty: "IPv4 address",
            default: None,
            doc: "source address of the errors (FixIPSrc may replace it)",
        },
        Keyword {
            name: "TYPE",
            ty: "ICMP error type, name or number",
            default: None,
            doc: "3, 4, 5, 11 or 12",
        },
        Keyword {
            name: "CODE",
            ty: "ICMP code, name or number",
            default: Some("0"),
            doc: "the code within TYPE",
        },
        Keyword {
            name: "BADADDRS",
            ty: "space-separated IPv4 addresses",
            default: Some("empty"),
            doc: "addresses (typically the subnet broadcasts) that, as source or \
                destination, mean no error is sent",
        },
        Keyword {
            name: "MTU",
            ty: "unsigned integer",
            default: Some("576"),
            doc: "largest error packet, IP header included; at least 56",
        },
        Keyword {
            name: "PMTU",
            ty: "unsigned integer",
            default: Some("0"),
            doc: "next-hop MTU for fragmentation-needed errors when the packet's MTU \
                annotation is not set",
        },
        Keyword {
            name: "SET_FIX_ANNO",
            ty: "boolean",
            default: Some("true"),
            doc: "whether to set the fix_ip_src annotation on the errors",
        },
        Keyword {
            name: "USE_FIX_ANNO",
            ty: "boolean",
            default: Some("true"),
            doc: "SET_FIX_ANNO under the name Click's manual gives it",
        },
        Keyword {
            name: "RATELIMIT",
            ty: "boolean",
            default: Some("true"),
            doc: "whether to limit the rate of errors at all (false: one error per \
                eligible packet, as in Click)",
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
                icmp_ratelimit of 1000 ms); at most 1000; 0 turns this limit off",
        },
        Keyword {
            name: "DEST_BURST",
            ty: "unsigned integer",
            default: Some("6"),
            doc: "errors that may leave at once to one destination (Linux allows 6); at \
                least 1",
        },
    ],
    counters: &[
        ("generated", "ICMP errors sent"),
        (
            "suppressed",
            "packets answered with no error, whatever the reason",
        ),
        (
            "suppressed_malformed",
            "not an IPv4 packet with a complete header",
        ),
        (
            "suppressed_icmp_error",
            "the packet is itself an ICMP error",
        ),
        ("suppressed_fragment", "a fragment other than the first"),
        (
            "suppressed_link_broadcast",
            "arrived as a link-level broadcast or multicast",
        ),
        (
            "suppressed_bad_destination",
            "sent to a broadcast, multicast or BADADDRS address",
        ),
        ("suppressed_bad_source", "source is not a single host"),
        (
            "suppressed_source_routed",
            "redirect for a source-routed packet",
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
    example: "InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 01 11 a5 d7 0a 00 00 01 \
        0a 00 00 02>, LIMIT 1) -> MarkIPHeader -> dt :: DecIPTTL -> Discard; \
        dt[1] -> ICMPError(18.26.4.24, timeexceeded) -> FixIPSrc(18.26.4.24) -> Discard;",
    see_also: &[
        "DecIPTTL",
        "IPFragmenter",
        "IPGWOptions",
        "FixIPSrc",
        "PaintTee",
    ],
};

const UNREACHABLE: u8 = 3;
const SOURCE_QUENCH: u8 = 4;
const REDIRECT: u8 = 5;
const TIME_EXCEEDED: u8 = 11;
const PARAMETER_PROBLEM: u8 = 12;
const NEEDFRAG: u8 = 4;

/// ICMP type names (Click's `NameInfo` database).
pub(crate) const TYPES: &[(&str, u8)] = &[
    ("echo-reply", 0),
    ("unreachable", UNREACHABLE),
    ("sourcequench", SOURCE_QUENCH),
    ("redirect", REDIRECT),
    ("echo", 8),
    ("routeradvert", 9),
    ("routersolicit", 10),
    ("timeexceeded", TIME_EXCEEDED),
    ("parameterproblem", PARAMETER_PROBLEM),
    ("timestamp", 13),
    ("timestamp-reply", 14),
    ("inforeq", 15),
    ("inforeq-reply", 16),
    ("maskreq", 17),
    ("maskreq-reply", 18),
];

/// Code names for each error type.
pub(crate) fn code_names(icmp_type: u8) -> &'static [(&'static str, u8)] {
    match icmp_type {
        UNREACHABLE => &[
            ("net", 0),
            ("host", 1),
            ("protocol", 2),
            ("port", 3),
            ("needfrag", NEEDFRAG),
            ("srcroutefail", 5),
            ("netunknown", 6),
            ("hostunknown", 7),
            ("isolated", 8),
            ("netprohibited", 9),
            ("hostprohibited", 10),
            ("tosnet", 11),
            ("toshost", 12),
            ("filterprohibited", 13),
            ("hostprecedence", 14),
            ("precedencecutoff", 15),
        ],
        REDIRECT => &[("net", 0), ("host", 1), ("tosnet", 2), ("toshost", 3)],
        TIME_EXCEEDED => &[("transit", 0), ("reassembly", 1)],
        PARAMETER_PROBLEM => &[("erroratptr", 0), ("missingopt", 1), ("length", 2)],
        _ => &[],
    }
}

/// ICMP types that are errors; only these can be generated.
const fn is_error_type(t: u8) -> bool {
    matches!(
        t,
        UNREACHABLE | SOURCE_QUENCH | REDIRECT | TIME_EXCEEDED | PARAMETER_PROBLEM
    )
}

/// ICMP types an error may be sent about: queries and their replies
/// (echo, router discovery, timestamp, information, address mask).
/// Anything else, known error or unknown type, gets no answer.
const fn is_query_type(t: u8) -> bool {
    matches!(t, 0 | 8 | 9 | 10 | 13..=18)
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
    /// Not an IPv4 packet with a complete header.
    Malformed,
    /// The packet is an ICMP error (or an ICMP message too short to tell).
    IcmpError,
    /// A fragment other than the first.
    Fragment,
    /// Arrived as a link-level broadcast or multicast.
    LinkBroadcast,
    /// Destined to a broadcast, multicast, class E or BADADDRS address.
    BadDestination,
    /// Its source does not name a single host.
    BadSource,
    /// A redirect about a source-routed packet.
    SourceRouted,
}

impl Suppressed {
    /// Every reason, in counter order.
    pub const ALL: [Suppressed; 7] = [
        Suppressed::Malformed,
        Suppressed::IcmpError,
        Suppressed::Fragment,
        Suppressed::LinkBroadcast,
        Suppressed::BadDestination,
        Suppressed::BadSource,
        Suppressed::SourceRouted,
    ];

    /// The counter for this reason.
    pub const fn counter(self) -> &'static str {
        match self {
            Suppressed::Malformed => "suppressed_malformed",
            Suppressed::IcmpError => "suppressed_icmp_error",
            Suppressed::Fragment => "suppressed_fragment",
            Suppressed::LinkBroadcast => "suppressed_link_broadcast",
            Suppressed::BadDestination => "suppressed_bad_destination",
            Suppressed::BadSource => "suppressed_bad_source",
            Suppressed::SourceRouted => "suppressed_source_routed",
        }
    }

    /// The reason, in words.
    pub const fn text(self) -> &'static str {
        match self {
            Suppressed::Malformed => "not an IPv4 packet with a complete header",
            Suppressed::IcmpError => "no ICMP error about an ICMP error",
            Suppressed::Fragment => "no ICMP error about a non-first fragment",
            Suppressed::LinkBroadcast => "no ICMP error about a link-level broadcast or multicast",
            Suppressed::BadDestination => {
                "no ICMP error about a packet to a broadcast or multicast address"
            }
            Suppressed::BadSource => "no ICMP error to a source that is not a single host",
            Suppressed::SourceRouted => "no redirect for a source-routed packet",
        }
    }
}

impl core::fmt::Display for Suppressed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.text())
    }
}

/// Slots of the per-destination table: a bound on the state an attacker
/// can make the router keep, whatever sources it forges.
pub const DEST_SLOTS: usize = 1024;

/// The rate limits of RFC 1812 section 4.3.2.8: a token bucket per
/// destination and one for all destinations, shared by every worker's
/// instance of an element.
///
/// Each bucket is kept as the generic cell rate algorithm keeps it (ATM
/// Forum TM 4.0; the form of `governor` and Linux's `sch_tbf` without the
/// token count): one "theoretical arrival time" (TAT) per bucket. A message
/// may leave at `now` if `TAT - now <= (burst - 1) * interval`, and then
/// `TAT = max(TAT, now) + interval`. So after a quiet spell `burst`
/// messages leave at once and then one per `interval`: in a time `t` at
/// most `burst + t / interval`. One word per bucket, updated by one
/// compare-and-swap, so workers share the buckets without a lock.
#[derive(Debug)]
pub struct RateLimiter {
    /// Overall: interval and tolerance in nanoseconds; interval 0 is off.
    global_interval: u64,
    global_tolerance: u64,
    /// The overall bucket's TAT, nanoseconds on the router's clock.
    global_tat: AtomicU64,
    /// Per destination: interval and tolerance in milliseconds; interval
    /// 0 is off.
    dest_interval: u32,
    dest_tolerance: u32,
    /// Each slot: the destination (high 32 bits) and its TAT in
    /// milliseconds modulo 2^32 (low 32 bits); 0 is an empty slot (no
    /// error is ever sent to 0.0.0.0).
    slots: Box<[AtomicU64]>,
}

impl RateLimiter {
    /// Limits of `rate` messages per second after a burst of `burst`
    /// overall, and `dest_rate` after `dest_burst` per destination (a rate
    /// of 0 turns that limit off; bursts are at least 1, `dest_rate` at
    /// most 1000).
    pub fn new(rate: u32, burst: u32, dest_rate: u32, dest_burst: u32) -> RateLimiter {
        let global_interval = 1_000_000_000u64.checked_div(u64::from(rate)).unwrap_or(0);
        let dest_interval = 1000u32.checked_div(dest_rate).map_or(0, |i| i.max(1));
        RateLimiter {
            global_interval,
            global_tolerance: global_interval * u64::from(burst.max(1) - 1),
            global_tat: AtomicU64::new(0),
            dest_interval,
            dest_tolerance: dest_interval.saturating_mul(dest_burst.max(1) - 1),
            slots: (0..DEST_SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Whether a message to `dst` may leave at `now`; if so, it is
    /// counted against both buckets. The destination's bucket is asked
    /// first, so that messages it refuses do not use up the overall one
    /// (Linux made the same change in 2024).
    pub fn allow(&self, dst: Ipv4Addr, now: Timestamp) -> bool {
        let dst = u32::from(dst);
        self.admit(dst, Self::slot_of(dst), now).is_ok()
    }

    /// Whether a message to `dst` may leave at `now`, and if not, which
    /// limit refused it. An IPv6 destination is kept by a 64-bit hash of
    /// its address: the slot comes from the high bits, and the low 32
    /// (never 0) stand for the address in the slot. Two destinations share
    /// a bucket only if they agree in 42 bits of hash; a host that wants
    /// another's errors limited can forge that host's address itself, so
    /// the hash need not be secret, and runs on captures stay repeatable.
    pub fn admit_ip6(&self, dst: &[u8; 16], now: Timestamp) -> Result<(), Limited> {
        let h = hash_ip6(dst);
        let slot = ((h >> 32) as usize) % DEST_SLOTS;
        self.admit(h as u32 | 1, slot, now)
    }

    /// Whether a message for the destination kept as `key` (never 0) in
    /// slot `slot` may leave at `now`, and if not, which limit refused it.
    pub fn admit(&self, key: u32, slot: usize, now: Timestamp) -> Result<(), Limited> {
        if !self.allow_dest(key, slot, now) {
            return Err(Limited::Destination);
        }
        if !self.allow_global(now.0) {
            return Err(Limited::Overall);
        }
        Ok(())
    }

    /// The number of per-destination slots (fixed when made).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    fn allow_global(&self, now: u64) -> bool {
        if self.global_interval == 0 {
            return true;
        }
        let mut cur = self.global_tat.load(Ordering::Relaxed);
        loop {
            let tat = cur.max(now);
            if tat - now > self.global_tolerance {
                return false;
            }
            match self.global_tat.compare_exchange_weak(
                cur,
                tat + self.global_interval,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(c) => cur = c,
            }
        }
    }

    /// The slot of `dst`: Fibonacci hashing of the address, so that the
    /// hosts of one subnet spread over the table.
    fn slot_of(dst: u32) -> usize {
        let h = (u64::from(dst).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize;
        h % DEST_SLOTS
    }

    fn allow_dest(&self, dst: u32, slot: usize, now: Timestamp) -> bool {
        if self.dest_interval == 0 {
            return true;
        }
        // Milliseconds modulo 2^32 (49 days): differences are taken
        // wrapping, and a TAT can never lie more than tolerance + interval
        // ahead of now, so one that seems to is an old one from a previous
        // lap of the counter and counts as a full bucket.
        let now_ms = (now.0 / 1_000_000) as u32;
        let slot = &self.slots[slot];
        let mut cur = slot.load(Ordering::Relaxed);
        loop {
            let (key, old) = ((cur >> 32) as u32, cur as u32);
            let ahead = old.wrapping_sub(now_ms);
            let tat = if key != dst
                || ahead as i32 <= 0
                || ahead > self.dest_tolerance.saturating_add(self.dest_interval)
            {
                now_ms
            } else {
                old
            };
            if tat.wrapping_sub(now_ms) > self.dest_tolerance {
                return false;
            }
            let new = u64::from(dst) << 32 | u64::from(tat.wrapping_add(self.dest_interval));
            match slot.compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(c) => cur = c,
            }
        }
    }
}

/// Which limit refused a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limited {
    /// The destination's own bucket was empty.
    Destination,
    /// The bucket of all destinations together was empty.
    Overall,
}

/// A 64-bit hash of an IPv6 address (splitmix64's finaliser over each
/// half): the hosts of one /64 differ in the low half only, and still
/// spread over the whole table.
pub fn hash_ip6(a: &[u8; 16]) -> u64 {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let v = u128::from_be_bytes(*a);
    mix(v as u64 ^ mix((v >> 64) as u64).rotate_left(17))
}

/// Smallest MTU: a 20-byte header, 8 of ICMP, a 20-byte quoted header and
/// 8 bytes of its data (RFC 792).
const MIN_MTU: usize = 56;

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let src: Ipv4Addr = args.read_mp("SRC")?;
    let type_text: String = args.read_mp("TYPE")?;
    let code_text: Option<String> = args.read_p("CODE")?;
    let bad_addrs: AddressList = args.read_p("BADADDRS")?.unwrap_or_default();
    let mtu: usize = args.read("MTU")?.unwrap_or(576);
    let pmtu: u16 = args.read("PMTU")?.unwrap_or(0);
    // Click's code reads SET_FIX_ANNO, its manual says USE_FIX_ANNO: both.
    let set_fix_anno: Option<bool> = args.read("SET_FIX_ANNO")?;
    let use_fix_anno: Option<bool> = args.read("USE_FIX_ANNO")?;
    if set_fix_anno.is_some() && use_fix_anno.is_some() {
        return Err(
            ArgError::new("SET_FIX_ANNO and USE_FIX_ANNO are the same keyword")
                .with_help("give one of them"),
        );
    }
    let set_fix_anno = set_fix_anno.or(use_fix_anno).unwrap_or(true);
    let ratelimit: bool = args.read("RATELIMIT")?.unwrap_or(true);
    let rate: u32 = args.read("RATE")?.unwrap_or(1000);
    let burst: u32 = args.read("BURST")?.unwrap_or(50);
    let dest_rate: u32 = args.read("DEST_RATE")?.unwrap_or(1);
    let dest_burst: u32 = args.read("DEST_BURST")?.unwrap_or(6);

    let icmp_type = lookup_name(&type_text, TYPES).ok_or_else(|| {
        ArgError::new(format!(
            "bad argument TYPE: expected ICMP type, found `{type_text}`"
        ))
        .with_help("use timeexceeded, unreachable, parameterproblem, redirect or a number")
    })?;
    if !is_error_type(icmp_type) {
        return Err(ArgError::new(format!("ICMP type {icmp_type} is not an error type"))
            .with_help("error types: unreachable (3), sourcequench (4), redirect (5), timeexceeded (11), parameterproblem (12)"));
    }
    let names = code_names(icmp_type);
    let code = match code_text.as_deref() {
        None => 0,
        Some(t) => lookup_name(t, names).ok_or_else(|| {
            let known: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
            ArgError::new(format!(
                "bad argument CODE: `{t}` is not a code of ICMP type {icmp_type}"
            ))
            .with_help(format!("codes: {} or a number 0-255", known.join(", ")))
        })?,
    };
    if !(MIN_MTU..=usize::from(u16::MAX)).contains(&mtu) {
        return Err(ArgError::new(format!("MTU {mtu} is out of range"))
            .with_help("at least 56 (an IP header, an ICMP header and a quoted header with 8 bytes), at most 65535"));
    }
    if burst == 0 || dest_burst == 0 {
        return Err(ArgError::new("BURST and DEST_BURST must be at least 1")
            .with_help("to switch a limit off give its rate as 0 (RATE 0, DEST_RATE 0), or RATELIMIT false for both"));
    }
    if dest_rate > 1000 {
        return Err(ArgError::new(format!("DEST_RATE {dest_rate} is above 1000 per second"))
            .with_help("per-destination limits are kept to the millisecond; use DEST_RATE 0 for no per-destination limit"));
    }
    let limiter = if ratelimit && (rate > 0 || dest_rate > 0) {
        Some(args.shared(|_| Ok(RateLimiter::new(rate, burst, dest_rate, dest_burst)))?)
    } else {
        None
    };
    Ok(Box::new(ICMPError {
        src: src.octets(),
        icmp_type,
        code,
        bad_addrs: bad_addrs.bits().into_boxed_slice(),
        mtu: mtu.min(MAX_FRAME),
        pmtu,
        set_fix_anno,
        ident: 0,
        limiter,
        generated: 0,
        suppressed: [0; Suppressed::ALL.len()],
        rate_limited: [0; 2],
    }))
}

/// Whether the options area `options` holds a source route option.
fn has_source_route(options: &[u8]) -> bool {
    let mut i = 0;
    while i < options.len() {
        match options[i] {
            IPOPT_EOL => return false,
            IPOPT_NOP => i += 1,
            IPOPT_LSRR | IPOPT_SSRR => return true,
            _ => match options.get(i + 1) {
                Some(&len) if len >= 2 => i += usize::from(len),
                _ => return false,
            },
        }
    }
    false
}

/// The first loose or strict source route option of `ip`'s options, as
/// Click's `valid_source_route` finds it: its offset in `ip` and its
/// length, when its pointer is a multiple of 4, at least 4 and at most one
/// past its end. Options are walked within `hlen` only.
fn source_route(ip: &[u8], hlen: usize) -> Option<(usize, usize)> {
    let mut i = 20;
    while i < hlen {
        match ip[i] {
            IPOPT_EOL => return None,
            IPOPT_NOP => i += 1,
            kind => {
                let len = usize::from(*ip.get(i + 1)?);
                if len < 2 || i + len > hlen {
                    return None;
                }
                if matches!(kind, IPOPT_LSRR | IPOPT_SSRR) && len >= 3 {
                    let ptr = usize::from(ip[i + 2]);
                    if ptr >= 4 && ptr % 4 == 0 && ptr <= len + 1 {
                        return Some((i, len));
                    }
                }
                i += len;
            }
        }
    }
    None
}

/// The source route to return along (RFC 1812 section 4.3.2.6): the hops
/// the datagram has visited, last first, with the pointer at the first,
/// padded with End of Option List to a multiple of 4. Returns the options
/// and their padded length. As Click's ICMPError.
fn reversed_route(ip: &[u8], at: usize, len: usize, out: &mut [u8; 40]) -> usize {
    let opt = &ip[at..at + len];
    // The pointer is one past the visited addresses (1-based), at most
    // len + 1, so `visited` ends within the option.
    let visited = (usize::from(opt[2]) - 4) / 4;
    let olen = 3 + 4 * visited;
    out[0] = opt[0];
    out[1] = olen as u8;
    out[2] = 4;
    for k in 0..visited {
        let from = 3 + 4 * (visited - 1 - k);
        out[3 + 4 * k..7 + 4 * k].copy_from_slice(&opt[from..from + 4]);
    }
    let padded = (olen + 3) & !3;
    out[olen..padded].fill(IPOPT_EOL);
    padded
}

/// Generates ICMP errors.
#[derive(Debug)]
pub struct ICMPError {
    src: [u8; 4],
    icmp_type: u8,
    code: u8,
    /// Host order.
    bad_addrs: Box<[u32]>,
    /// Largest error packet.
    mtu: usize,
    pmtu: u16,
    set_fix_anno: bool,
    ident: u16,
    /// Shared by every worker's instance; `None` when RATELIMIT is false.
    limiter: Option<Arc<RateLimiter>>,
    generated: u64,
    suppressed: [u64; Suppressed::ALL.len()],
    /// Refused by the destination's limit, by the overall one.
    rate_limited: [u64; 2],
}

impl ICMPError {
    /// Whether `a` (host order) names one host that can be sent an error.
    fn valid_source(&self, a: u32) -> bool {
        let net = a >> 24;
        net != 0 && net != 127 && !is_multicast_or_reserved(a) && !self.bad_addrs.contains(&a)
    }

    /// Builds the error about `p`, or says why there must be none (rate
    /// limits aside).
    pub fn respond(&mut self, p: &Packet, now: Timestamp) -> Result<Packet, Suppressed> {
        self.check(p)?;
        self.build(p, now)
    }

    /// Says why there must be no error about `p`, if there must be none.
    fn check(&self, p: &Packet) -> Result<(), Suppressed> {
        let ip = p.l3_bytes();
        if ip.len() < 20 || ip[0] >> 4 != 4 {
            return Err(Suppressed::Malformed);
        }
        let hlen = usize::from(ip[0] & 0x0f) * 4;
        if hlen < 20 || hlen > ip.len() {
            return Err(Suppressed::Malformed);
        }
        if be16(ip, 6) & 0x1fff != 0 {
            return Err(Suppressed::Fragment);
        }
        if ip[9] == PROTO_ICMP && !ip.get(hlen).is_some_and(|&t| is_query_type(t)) {
            return Err(Suppressed::IcmpError);
        }
        if matches!(
            p.anno().packet_type,
            PacketType::Broadcast | PacketType::Multicast
        ) {
            return Err(Suppressed::LinkBroadcast);
        }
        let src = be32(ip, 12);
        let dst = be32(ip, 16);
        if is_multicast_or_reserved(dst) || self.bad_addrs.contains(&dst) {
            return Err(Suppressed::BadDestination);
        }
        if !self.valid_source(src) {
            return Err(Suppressed::BadSource);
        }
        if self.icmp_type == REDIRECT && has_source_route(&ip[20..hlen]) {
            return Err(Suppressed::SourceRouted);
        }
        Ok(())
    }

    /// Builds the error about `p`, which passed [`ICMPError::check`].
    fn build(&mut self, p: &Packet, now: Timestamp) -> Result<Packet, Suppressed> {
        let ip = p.l3_bytes();
        let hlen = usize::from(ip[0] & 0x0f) * 4;
        let src = be32(ip, 12);

        // Quote the datagram up to its total length (not link padding),
        // or what there is of it if the packet is cut short.
        let total = usize::from(be16(ip, 2));
        let datagram = if (hlen..=ip.len()).contains(&total) {
            total
        } else {
            ip.len()
        };
        // The error goes back along the source route, reversed, unless
        // the parameter problem is in the route itself (RFC 1812 section
        // 4.3.2.6), or the route would leave no room under MTU for the
        // quoted header and 8 octets.
        let mut options = [0u8; 40];
        let olen = match source_route(ip, hlen) {
            Some((at, rlen))
                if !(self.icmp_type == PARAMETER_PROBLEM
                    && self.code == 0
                    && p.anno()
                        .param_off
                        .is_some_and(|o| (at..at + rlen).contains(&usize::from(o)))) =>
            {
                let n = reversed_route(ip, at, rlen, &mut options);
                if 28 + n + 28 <= self.mtu {
                    n
                } else {
                    0
                }
            }
            _ => 0,
        };
        let ihl = 20 + olen;
        let quote = datagram.min(self.mtu - 8 - ihl);
        let len = ihl + 8 + quote;

        let mut q = Packet::new();
        if q.put_back(len).is_err() {
            // `mtu` is capped at a buffer's size, so this cannot happen.
            return Err(Suppressed::Malformed);
        }
        self.ident = self.ident.wrapping_add(1);
        let tos = if self.icmp_type == SOURCE_QUENCH {
            ip[1] & 0xe0
        } else {
            0xc0
        };
        let d = q.data_mut();
        d[0] = 0x40 | (ihl / 4) as u8;
        d[1] = tos;
        d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        d[4..6].copy_from_slice(&self.ident.to_be_bytes());
        d[6..8].fill(0);
        d[8] = 255;
        d[9] = PROTO_ICMP;
        d[10..12].fill(0);
        d[12..16].copy_from_slice(&self.src);
        d[16..20].copy_from_slice(&ip[12..16]);
        d[20..ihl].copy_from_slice(&options[..olen]);
        let sum = !checksum::data(&d[..ihl]);
        d[10..12].copy_from_slice(&sum.to_be_bytes());

        let icmp = &mut d[ihl..];
        icmp[0] = self.icmp_type;
        icmp[1] = self.code;
        icmp[2..8].fill(0);
        match self.icmp_type {
            UNREACHABLE if self.code == NEEDFRAG => {
                let mtu = match p.anno().mtu {
                    0 => self.pmtu,
                    m => m,
                };
                icmp[6..8].copy_from_slice(&mtu.to_be_bytes());
            }
            PARAMETER_PROBLEM if self.code != 1 => {
                icmp[4] = p.anno().param_off.unwrap_or(0);
            }
            REDIRECT => icmp[4..8].copy_from_slice(&p.anno().dst_ip.octets()),
            _ => {}
        }
        icmp[8..].copy_from_slice(&ip[..quote]);
        let sum = !checksum::data(icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());

        let a = q.anno_mut();
        a.dst_ip = Ipv4Addr::from(src);
        a.fix_ip_src = self.set_fix_anno;
        a.timestamp = now;
        q.set_network_header(0);
        Ok(q)
    }

    fn answer(&mut self, p: &Packet, now: Timestamp) -> Option<Packet> {
        // Limited after the checks, so that packets that get no error
        // anyway take nothing from the buckets, and before the error is
        // built, so that a flood costs no buffers.
        let limited = self.check(p).map(|()| {
            self.limiter.as_ref().and_then(|l| {
                let src = be32(p.l3_bytes(), 12);
                l.admit(src, RateLimiter::slot_of(src), now).err()
            })
        });
        if let Ok(Some(by)) = limited {
            self.rate_limited[by as usize] += 1;
            return None;
        }
        match limited.and_then(|_| self.build(p, now)) {
            Ok(q) => {
                self.generated += 1;
                Some(q)
            }
            Err(r) => {
                self.suppressed[r as usize] += 1;
                None
            }
        }
    }
}

impl Element for ICMPError {
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
    use crate::ip::header::testing::{echo_request, fix_ip_checksum, ip_checksum_ok, udp};
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};

    fn packet(frame: &[u8]) -> Packet {
        let mut p = Packet::from_slice(frame).unwrap();
        p.set_network_header(0);
        p
    }

    fn one(args: &str, p: Packet) -> Result<Vec<u8>, Suppressed> {
        let mut h = Harness::push(&CLASS, args, 1, 1);
        h.push_packets(0, [p]);
        let out = h.take(0);
        let s = h.stats();
        match out.len() {
            1 => {
                let q = &out[0];
                assert_eq!(q.network_header_offset(), Some(0));
                assert_eq!(s.get("generated"), Some(1));
                Ok(q.data().to_vec())
            }
            0 => {
                assert_eq!(s.get("suppressed"), Some(1));
                let r = Suppressed::ALL
                    .into_iter()
                    .find(|r| s.get(r.counter()) == Some(1))
                    .unwrap();
                Err(r)
            }
            _ => unreachable!(),
        }
    }

    /// Checks the IP and ICMP headers of an error and returns the ICMP
    /// part.
    fn check_error(e: &[u8], orig: &[u8], ty: u8, code: u8) -> Vec<u8> {
        assert_eq!(e[0], 0x45);
        assert_eq!(e[1], 0xc0, "precedence 6");
        assert_eq!(usize::from(be16(e, 2)), e.len());
        assert_eq!(be16(e, 6), 0, "no fragmentation");
        assert_eq!(e[8], 255, "TTL");
        assert_eq!(e[9], 1, "ICMP");
        assert!(ip_checksum_ok(e));
        assert_eq!(&e[12..16], &[18, 26, 4, 24]);
        assert_eq!(&e[16..20], &orig[12..16], "back to the source");
        let icmp = &e[20..];
        assert_eq!(icmp[0], ty);
        assert_eq!(icmp[1], code);
        assert_eq!(checksum::data(icmp), 0xffff, "ICMP checksum");
        icmp.to_vec()
    }

    #[test]
    fn time_exceeded_quotes_the_whole_small_datagram() {
        let orig = echo_request();
        let e = one("18.26.4.24, timeexceeded", packet(&orig)).unwrap();
        assert_eq!(e.len(), 20 + 8 + 84);
        let icmp = check_error(&e, &orig, 11, 0);
        assert_eq!(&icmp[4..8], &[0; 4]);
        assert_eq!(&icmp[8..], &orig[..]);
    }

    #[test]
    fn annotations_of_the_error() {
        let mut h = Harness::push(&CLASS, "18.26.4.24, 11", 1, 1);
        h.advance_to(Timestamp::from_parts(77, 0));
        let mut p = packet(&echo_request());
        p.anno_mut().paint = 4;
        h.push_packets(0, [p]);
        let q = &h.take(0)[0];
        assert_eq!(q.anno().dst_ip, Ipv4Addr::new(192, 0, 2, 1));
        assert!(q.anno().fix_ip_src);
        assert_eq!(q.anno().timestamp, Timestamp::from_parts(77, 0));
        assert_eq!(q.anno().paint, 0, "a new packet");

        let mut h = Harness::push(&CLASS, "18.26.4.24, 11, SET_FIX_ANNO false", 1, 1);
        h.push_packets(0, [packet(&echo_request())]);
        assert!(!h.take(0)[0].anno().fix_ip_src);
    }

    #[test]
    fn large_datagram_is_quoted_up_to_576_bytes() {
        let orig = udp(1400);
        let e = one("18.26.4.24, unreachable, port", packet(&orig)).unwrap();
        assert_eq!(e.len(), 576);
        let icmp = check_error(&e, &orig, 3, 3);
        assert_eq!(&icmp[8..], &orig[..548]);
        let e = one("18.26.4.24, unreachable, port, MTU 100", packet(&orig)).unwrap();
        assert_eq!(e.len(), 100);
        // Link padding after the datagram is not quoted.
        let mut padded = udp(10);
        padded.extend([0xee; 8]);
        let e = one("18.26.4.24, unreachable, host", packet(&padded)).unwrap();
        assert_eq!(e.len(), 28 + 38);
    }

    #[test]
    fn needfrag_carries_next_hop_mtu() {
        let mut orig = udp(1600);
        orig[6] = 0x40;
        fix_ip_checksum(&mut orig);
        let mut p = packet(&orig);
        p.anno_mut().mtu = 1500;
        let e = one("18.26.4.24, unreachable, needfrag", p).unwrap();
        let icmp = check_error(&e, &orig, 3, 4);
        assert_eq!(&icmp[4..8], &[0, 0, 0x05, 0xdc]);
        // Without the annotation, PMTU.
        let e = one("18.26.4.24, 3, 4, PMTU 1280", packet(&orig)).unwrap();
        assert_eq!(&e[24..28], &[0, 0, 0x05, 0x00]);
    }

    #[test]
    fn parameter_problem_carries_pointer() {
        let orig = echo_request();
        let mut p = packet(&orig);
        p.anno_mut().param_off = Some(22);
        let e = one("18.26.4.24, parameterproblem", p).unwrap();
        let icmp = check_error(&e, &orig, 12, 0);
        assert_eq!(&icmp[4..8], &[22, 0, 0, 0]);
    }

    /// A TCP segment from 18.26.4.44 to 10.0.0.8 with a strict source
    /// route that has visited 128.4.45.60 and 128.4.49.61 and has 1.2.3.4
    /// and 5.6.7.8 to go (pointer 12), as in Click's
    /// ICMPError-sourceroute-01 test.
    fn source_routed() -> Vec<u8> {
        let mut d = vec![
            0x4a, 0x00, 0x00, 0x3c, 0x00, 0x00, 0x00, 0x00, 0x01, 0x06, 0x00, 0x00, 18, 26, 4, 44,
            10, 0, 0, 8, // IP header
            0x89, 19, 12, 128, 4, 45, 60, 128, 4, 49, 61, 1, 2, 3, 4, 5, 6, 7, 8,
            0x00, // SSRR
            0x00, 0x14, 0x00, 0x50, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x10, 0, 0, 0, 0, 0, 0,
        ];
        fix_ip_checksum(&mut d);
        d
    }

    #[test]
    fn error_returns_along_the_reversed_source_route() {
        let orig = source_routed();
        let e = one("19.19.19.19, timeexceeded", packet(&orig)).unwrap();
        assert_eq!(e[0], 0x48, "a 32-byte header");
        assert!(ip_checksum_ok(&e));
        assert_eq!(
            &e[20..32],
            &[0x89, 11, 4, 128, 4, 49, 61, 128, 4, 45, 60, 0x00]
        );
        assert_eq!(usize::from(be16(&e, 2)), e.len());
        assert_eq!(e.len(), 32 + 8 + orig.len());
        assert_eq!(&e[40..], &orig[..]);
        assert_eq!(checksum::data(&e[32..]), 0xffff, "ICMP checksum");
        // Nothing visited yet: an empty route, pointer 4.
        let mut fresh = orig.clone();
        fresh[22] = 4;
        fix_ip_checksum(&mut fresh);
        let e = one("19.19.19.19, timeexceeded", packet(&fresh)).unwrap();
        assert_eq!(&e[..1], &[0x46]);
        assert_eq!(&e[20..24], &[0x89, 3, 4, 0]);
    }

    #[test]
    fn route_is_left_out_when_the_problem_is_in_it_or_malformed() {
        let orig = source_routed();
        let mut p = packet(&orig);
        p.anno_mut().param_off = Some(22);
        let e = one("19.19.19.19, parameterproblem", p).unwrap();
        assert_eq!(e[0], 0x45);
        // A pointer beyond the option, or not a multiple of 4: no route.
        for bad in [24u8, 13, 0] {
            let mut d = orig.clone();
            d[22] = bad;
            fix_ip_checksum(&mut d);
            let e = one("19.19.19.19, timeexceeded", packet(&d)).unwrap();
            assert_eq!(e[0], 0x45, "pointer {bad}");
        }
        // An option length running past the header: no route, no panic.
        let mut d = orig.clone();
        d[21] = 40;
        fix_ip_checksum(&mut d);
        let e = one("19.19.19.19, timeexceeded", packet(&d)).unwrap();
        assert_eq!(e[0], 0x45);
        // Too small an MTU for the route: the error goes without it.
        let e = one("19.19.19.19, timeexceeded, MTU 60", packet(&orig)).unwrap();
        assert_eq!((e[0], e.len()), (0x45, 60));
    }

    #[test]
    fn use_fix_anno_is_set_fix_anno() {
        let mut h = Harness::push(&CLASS, "18.26.4.24, 11, USE_FIX_ANNO false", 1, 1);
        h.push_packets(0, [packet(&echo_request())]);
        assert!(!h.take(0)[0].anno().fix_ip_src);
        assert!(make_element(
            &CLASS,
            "1.2.3.4, 11, USE_FIX_ANNO false, SET_FIX_ANNO true",
            &PortInfo::default()
        )
        .is_err());
    }

    #[test]
    fn redirect_carries_gateway() {
        let orig = echo_request();
        let mut p = packet(&orig);
        p.anno_mut().dst_ip = Ipv4Addr::new(18, 26, 4, 1);
        let e = one("18.26.4.24, redirect, host", p).unwrap();
        let icmp = check_error(&e, &orig, 5, 1);
        assert_eq!(&icmp[4..8], &[18, 26, 4, 1]);
    }

    #[test]
    fn source_quench_keeps_precedence() {
        let mut orig = echo_request();
        orig[1] = 0xa8;
        fix_ip_checksum(&mut orig);
        let e = one("18.26.4.24, sourcequench", packet(&orig)).unwrap();
        assert_eq!(e[1], 0xa0);
    }

    #[test]
    fn every_suppression() {
        let args = "18.26.4.24, timeexceeded, BADADDRS 18.26.4.255";
        let with = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut v = echo_request();
            f(&mut v);
            fix_ip_checksum(&mut v);
            packet(&v)
        };
        assert_eq!(one(args, packet(&[0x45; 19])), Err(Suppressed::Malformed));
        assert_eq!(
            one(args, with(&|v| v[0] = 0x65)),
            Err(Suppressed::Malformed)
        );
        assert_eq!(
            one(args, with(&|v| v[0] = 0x44)),
            Err(Suppressed::Malformed)
        );
        // ICMP errors, unknown types and a header cut before the type.
        for t in [3u8, 4, 5, 11, 12, 42] {
            assert_eq!(
                one(args, with(&|v| v[20] = t)),
                Err(Suppressed::IcmpError),
                "type {t}"
            );
        }
        assert_eq!(
            one(args, packet(&echo_request()[..20])),
            Err(Suppressed::IcmpError)
        );
        for t in [0u8, 8, 13, 14, 17, 18] {
            assert!(one(args, with(&|v| v[20] = t)).is_ok(), "type {t}");
        }
        // Non-first fragment; the first fragment is answered.
        assert_eq!(
            one(args, with(&|v| v[6] = 0x20 | 0x01)),
            Err(Suppressed::Fragment)
        );
        assert_eq!(one(args, with(&|v| v[7] = 0x08)), Err(Suppressed::Fragment));
        assert!(one(args, with(&|v| v[6] = 0x20)).is_ok());
        for t in [PacketType::Broadcast, PacketType::Multicast] {
            let mut p = packet(&echo_request());
            p.anno_mut().packet_type = t;
            assert_eq!(one(args, p), Err(Suppressed::LinkBroadcast));
        }
        for dst in [
            [255, 255, 255, 255],
            [224, 0, 0, 1],
            [240, 0, 0, 1],
            [18, 26, 4, 255],
        ] {
            assert_eq!(
                one(args, with(&|v| v[16..20].copy_from_slice(&dst))),
                Err(Suppressed::BadDestination),
                "{dst:?}"
            );
        }
        for src in [
            [0, 0, 0, 0],
            [0, 1, 2, 3],
            [127, 0, 0, 1],
            [224, 1, 1, 1],
            [250, 1, 1, 1],
            [255, 255, 255, 255],
            [18, 26, 4, 255],
        ] {
            assert_eq!(
                one(args, with(&|v| v[12..16].copy_from_slice(&src))),
                Err(Suppressed::BadSource),
                "{src:?}"
            );
        }
    }

    #[test]
    fn no_redirect_for_source_routed_packets() {
        // A UDP packet with NOP and LSRR options.
        let plain = udp(8);
        let opts = [1, 131, 7, 4, 10, 0, 0, 1, 0, 0, 0, 0];
        let mut v = [&plain[..20], &opts[..], &plain[20..]].concat();
        v[0] = 0x48;
        let total = v.len() as u16;
        v[2..4].copy_from_slice(&total.to_be_bytes());
        fix_ip_checksum(&mut v);
        assert_eq!(
            one("18.26.4.24, redirect, host", packet(&v)),
            Err(Suppressed::SourceRouted)
        );
        // Other errors about it are sent, quoting the options, with the
        // route reversed (nothing visited yet: empty, pointer 4).
        let e = one("18.26.4.24, timeexceeded", packet(&v)).unwrap();
        assert_eq!(&e[20..24], &[131, 3, 4, 0]);
        assert_eq!(&e[32..], &v[..]);
    }

    #[test]
    fn pull_generates_too() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "18.26.4.24, timeexceeded", ports);
        let mut bcast = packet(&echo_request());
        bcast.anno_mut().packet_type = PacketType::Broadcast;
        h.feed(0, [packet(&echo_request()), bcast, packet(&udp(4))]);
        let out = h.pull(0, 8);
        assert_eq!(out.len(), 2);
        assert_eq!(h.stats().get("suppressed_link_broadcast"), Some(1));
    }

    /// `n` copies of `frame` from `src`, each a packet ICMPError answers.
    fn from(src: [u8; 4], n: usize) -> Vec<Packet> {
        let mut v = echo_request();
        v[12..16].copy_from_slice(&src);
        fix_ip_checksum(&mut v);
        (0..n).map(|_| packet(&v)).collect()
    }

    #[test]
    fn errors_to_one_destination_are_limited_and_refill_on_the_clock() {
        let mut h = Harness::push(&CLASS, "18.26.4.24, timeexceeded", 1, 1);
        h.advance_to(Timestamp::from_parts(1_000, 0));
        h.push_packets(0, from([192, 0, 2, 1], 100));
        assert_eq!(h.take(0).len(), 6, "DEST_BURST 6");
        assert_eq!(h.stats().get("rate_limited"), Some(94));
        assert_eq!(h.stats().get("rate_limited_dest"), Some(94));
        assert_eq!(h.stats().get("suppressed"), Some(0));
        // Another destination has its own bucket.
        h.push_packets(0, from([192, 0, 2, 2], 10));
        assert_eq!(h.take(0).len(), 6);
        // 999 ms later nothing has refilled; at 1 s one error may go.
        h.advance_to(Timestamp::from_parts(1_000, 999_000_000));
        h.push_packets(0, from([192, 0, 2, 1], 5));
        assert!(h.take(0).is_empty());
        h.advance_to(Timestamp::from_parts(1_001, 0));
        h.push_packets(0, from([192, 0, 2, 1], 5));
        assert_eq!(h.take(0).len(), 1);
        // After a quiet spell the whole burst again, but no more.
        h.advance_to(Timestamp::from_parts(1_100, 0));
        h.push_packets(0, from([192, 0, 2, 1], 10));
        assert_eq!(h.take(0).len(), 6);
        // Over 10 s of a steady flood: burst + rate x time.
        let mut sent = 0;
        for ms in (0..10_000u64).step_by(10) {
            h.advance_to(Timestamp(1_200_000_000_000 + ms * 1_000_000));
            h.push_packets(0, from([192, 0, 2, 3], 3));
            sent += h.take(0).len();
        }
        assert_eq!(sent, 6 + 9);
    }

    #[test]
    fn errors_to_all_destinations_are_limited_together() {
        let args = "18.26.4.24, timeexceeded, RATE 100, BURST 20";
        let mut h = Harness::push(&CLASS, args, 1, 1);
        h.advance_to(Timestamp::from_parts(50, 0));
        // 64 sources, 2 packets each: per destination all would pass.
        let mut ps = Vec::new();
        for i in 0..64u8 {
            ps.extend(from([192, 0, 2, i + 1], 2));
        }
        h.push_packets(0, ps);
        assert_eq!(h.take(0).len(), 20, "BURST 20");
        assert_eq!(h.stats().get("rate_limited"), Some(108));
        assert_eq!(h.stats().get("rate_limited_global"), Some(108));
        assert_eq!(h.stats().get("rate_limited_dest"), Some(0));
        // 100 per second: 10 ms gives one more, to anyone.
        h.advance_to(Timestamp::from_parts(50, 10_000_000));
        h.push_packets(0, from([192, 0, 2, 200], 3));
        assert_eq!(h.take(0).len(), 1);
        // Per-destination limit off: one destination uses the whole budget.
        let args = "18.26.4.24, timeexceeded, RATE 100, BURST 20, DEST_RATE 0";
        let mut h = Harness::push(&CLASS, args, 1, 1);
        h.push_packets(0, from([192, 0, 2, 1], 50));
        assert_eq!(h.take(0).len(), 20);
    }

    #[test]
    fn ratelimit_false_answers_every_packet() {
        let mut h = Harness::push(&CLASS, "18.26.4.24, timeexceeded, RATELIMIT false", 1, 1);
        h.push_packets(0, from([192, 0, 2, 1], 300));
        assert_eq!(h.take(0).len(), 300);
        assert_eq!(h.stats().get("rate_limited"), Some(0));
        let mut h = Harness::push(&CLASS, "18.26.4.24, 11, RATE 0, DEST_RATE 0", 1, 1);
        h.push_packets(0, from([192, 0, 2, 1], 300));
        assert_eq!(h.take(0).len(), 300);
    }

    #[test]
    fn suppressed_packets_take_nothing_from_the_buckets() {
        let mut h = Harness::push(&CLASS, "18.26.4.24, timeexceeded", 1, 1);
        let mut bcast = from([192, 0, 2, 1], 50);
        for p in &mut bcast {
            p.anno_mut().packet_type = PacketType::Broadcast;
        }
        h.push_packets(0, bcast);
        h.push_packets(0, from([192, 0, 2, 1], 10));
        assert_eq!(h.take(0).len(), 6);
        assert_eq!(h.stats().get("suppressed_link_broadcast"), Some(50));
        assert_eq!(h.stats().get("rate_limited"), Some(4));
    }

    #[test]
    fn workers_share_the_buckets() {
        let l = Arc::new(RateLimiter::new(1000, 50, 1, 6));
        let now = Timestamp::from_parts(7, 0);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let l = Arc::clone(&l);
                std::thread::spawn(move || {
                    let mut n = 0;
                    for i in 0..1000u32 {
                        // Half to one host, half to many.
                        let dst = if i % 2 == 0 {
                            Ipv4Addr::new(192, 0, 2, 1)
                        } else {
                            Ipv4Addr::from(0x0a00_0000 + t * 1000 + i)
                        };
                        n += usize::from(l.allow(dst, now));
                    }
                    n
                })
            })
            .collect();
        let total: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(total, 50, "the overall burst, across threads");
    }

    #[test]
    fn the_destination_table_is_bounded_and_evicts() {
        let l = RateLimiter::new(0, 1, 1, 1);
        let now = Timestamp::from_parts(3, 0);
        // Far more destinations than slots: each new one starts full.
        for i in 0..(4 * DEST_SLOTS as u32) {
            assert!(l.allow(Ipv4Addr::from(0x0a00_0001 + i), now));
        }
        assert_eq!(l.slots.len(), DEST_SLOTS);
        // A destination still in its slot is limited.
        let last = Ipv4Addr::from(0x0a00_0000 + 4 * DEST_SLOTS as u32);
        assert!(!l.allow(last, now));
    }

    #[test]
    fn the_millisecond_counter_wraps_without_refusing() {
        let l = RateLimiter::new(0, 1, 1, 2);
        let d = Ipv4Addr::new(192, 0, 2, 9);
        // Just before 2^32 ms and just after: a refill, not a 49-day wait.
        let before = Timestamp(((1u64 << 32) - 500) * 1_000_000);
        assert!(l.allow(d, before) && l.allow(d, before) && !l.allow(d, before));
        let after = Timestamp(((1u64 << 32) + 1_600) * 1_000_000);
        assert!(l.allow(d, after) && l.allow(d, after) && !l.allow(d, after));
        // A slot left alone for some laps of the counter counts as full.
        let later = Timestamp(((5u64 << 32) + 1_000) * 1_000_000);
        assert!(l.allow(d, later));
    }

    #[test]
    fn arguments() {
        let ports = PortInfo::default();
        let ok = |a: &str| make_element(&CLASS, a, &ports).map(|_| ());
        assert!(ok("1.2.3.4, timeexceeded").is_ok());
        assert!(ok("1.2.3.4, TimeExceeded, transit").is_ok());
        assert!(ok("1.2.3.4, 3, 4, 1.2.3.255 1.2.255.255, MTU 1500, PMTU 1400").is_ok());
        assert!(ok("SRC 1.2.3.4, TYPE 12, CODE erroratptr, SET_FIX_ANNO false").is_ok());
        assert!(ok("1.2.3.4, echo")
            .unwrap_err()
            .contains("not an error type"));
        assert!(ok("1.2.3.4, 300").is_err());
        assert!(ok("1.2.3.4, bogus").unwrap_err().contains("TYPE"));
        assert!(ok("1.2.3.4, redirect, needfrag")
            .unwrap_err()
            .contains("not a code of ICMP type 5"));
        assert!(ok("1.2.3.4, unreachable, 256").is_err());
        assert!(ok("1.2.3.4, unreachable, MTU 40").is_err());
        assert!(ok("1.2.3.4").unwrap_err().contains("TYPE"));
        assert!(ok("timeexceeded").is_err());
        assert!(ok("1.2.3.4, 11, RATE 10, BURST 5, DEST_RATE 2, DEST_BURST 3").is_ok());
        assert!(ok("1.2.3.4, 11, BURST 0")
            .unwrap_err()
            .contains("at least 1"));
        assert!(ok("1.2.3.4, 11, DEST_BURST 0").is_err());
        assert!(ok("1.2.3.4, 11, DEST_RATE 5000")
            .unwrap_err()
            .contains("1000"));
        assert!(ok("1.2.3.4, 11, RATELIMIT maybe").is_err());
    }
}
