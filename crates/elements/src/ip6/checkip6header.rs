//! `CheckIP6Header`: the checks a router applies to every IPv6 packet it
//! receives before forwarding it (RFC 8200 sections 3 and 4; the address
//! rules of RFC 4291 section 2.5), the Hop-by-Hop options it must act on
//! (RFC 8200 section 4.2) and the refusal of Type 0 Routing headers
//! (RFC 5095).

use super::header6::{
    addr_at, is_link_scope_multicast, is_loopback, is_multicast, is_unspecified, known_option,
    Address6List,
};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::ipv6ext::{self, ChainError, UnknownAction, OPT_ROUTER_ALERT};
use std::net::Ipv6Addr;

/// The `CheckIP6Header` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CheckIP6Header",
    ports: "1/1-4",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "checks IPv6 headers (RFC 8200)",
    synopsis: "CheckIP6Header([BADADDRS, OFFSET, KEYWORDS INTERFACES])",
    description: "Expects IPv6 packets whose header starts OFFSET bytes into the data. \
        A packet is valid when it holds the 40-byte header, its version is 6, and its \
        payload length does not run past the end of the packet. Its source must name \
        one node (RFC 4291 section 2.5): a multicast source, the loopback address ::1, \
        any of BADADDRS (Click always adds ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff, a \
        multicast address), and the unspecified address :: are refused, except that :: \
        may send to an interface- or link-local multicast group (ff01::/16, \
        ff02::/16), which a router never forwards: Duplicate Address Detection and MLD \
        use it. A destination of :: or ::1 is refused too (RFC 4291 section 2.5.3: a \
        packet to the loopback address from an interface is dropped).\n\n\
        The extension header chain is walked, at most 16 headers, every length \
        checked against the payload length; a chain that runs past the payload, \
        never reaches an upper-layer header or has a Hop-by-Hop header anywhere but \
        first is refused. Hop-by-Hop options, which every router on the path \
        examines (RFC 8200 section 4.3), are acted on: padding is skipped, a Router \
        Alert (RFC 2711) is counted and the packet goes on (a configuration that \
        serves MLD or RSVP can classify on it), and any other option by the two high \
        bits of its type (section 4.2): 00 skipped; 01 the packet is discarded; 10, \
        and 11 unless the destination is multicast, the packet is discarded and \
        deserves an ICMPv6 Parameter Problem, code 2, pointing at the option. Such \
        packets leave on output 2 if it is connected, with their network header \
        annotation set and their parameter problem annotation set to the pointer \
        when it is below 256, ready for `ICMP6Error(SRC, parameterproblem, 2)`, which \
        finds the pointer itself when the annotation could not hold it; with output \
        2 unconnected they are treated as invalid. An option running past its header \
        makes the packet invalid. A jumbogram's Jumbo Payload option (RFC 2675) is \
        an unknown option here: no bricks buffer holds one.\n\n\
        Routing headers are not examined in packets the router forwards: RFC 8200 \
        section 4.4 has a Routing header processed only by the node its packet is \
        addressed to. The router implements no routing type, so in a packet \
        addressed to one of its INTERFACES addresses a Routing header with segments \
        left is refused, Type 0 (RFC 5095 section 3) and any other type alike (RFC \
        8200 section 4.4: an unrecognised Routing Type): the packet deserves an \
        ICMPv6 Parameter Problem, code 0, pointing at the Routing Type field. Such packets \
        leave on output 3 if it is connected, with their network header annotation \
        set and their parameter problem annotation set to that pointer, ready for \
        `ICMP6Error(SRC, parameterproblem, header)`; with output 3 unconnected they \
        are treated as invalid (output 1, the pointer still annotated). With no \
        segments left the header is ignored and the packet goes on. Fragments are \
        forwarded unchanged (a router does not reassemble); the walk stops at the \
        Fragment header of a fragment other than the first.\n\n\
        Valid packets are trimmed to the payload length (link padding goes), get \
        their network header annotation set to the IPv6 header and their IPv6 \
        destination annotation to the header's destination (for LookupIP6Route), and \
        leave on output 0. Invalid packets leave on output 1 if it is connected and \
        are dropped otherwise; either way they are counted by reason.",
    ports: "one input; output 0 valid packets (agnostic); optional output 1 invalid \
        packets (push); optional output 2 packets owed a Parameter Problem code 2 \
        for an unrecognised option (push); optional output 3 packets owed a \
        Parameter Problem code 0 for a Routing header (push)",
    keywords: &[
        Keyword {
            name: "BADADDRS",
            ty: "space-separated IPv6 addresses",
            default: Some("empty"),
            doc: "further source addresses to refuse",
        },
        Keyword {
            name: "OFFSET",
            ty: "unsigned integer",
            default: Some("0"),
            doc: "where the IPv6 header starts in the packet data",
        },
        Keyword {
            name: "INTERFACES",
            ty: "space-separated IPv6 addresses",
            default: Some("empty"),
            doc: "the router's own addresses: packets to them have their \
                Routing headers with segments left refused (a bricks extension)",
        },
    ],
    counters: &[
        (
            "drops",
            "invalid packets, whatever the reason (sent to output 1, 2 or 3, or dropped)",
        ),
        ("truncated", "shorter than the 40-byte IPv6 header"),
        ("bad_version", "version field not 6"),
        ("bad_length", "payload length past the end of the packet"),
        (
            "bad_source",
            "source multicast, ::1 or in BADADDRS, or :: to other than a link-local group",
        ),
        ("bad_destination", "destination :: or ::1"),
        (
            "bad_chain",
            "extension headers past the payload, more than 16, or Hop-by-Hop not first",
        ),
        ("bad_option", "a Hop-by-Hop option running past its header"),
        (
            "unknown_option",
            "an unrecognised Hop-by-Hop option whose type says discard silently",
        ),
        (
            "unknown_option_report",
            "an unrecognised Hop-by-Hop option whose type asks for a Parameter Problem",
        ),
        (
            "routing_header_0",
            "a Type 0 Routing header with segments left, to one of INTERFACES",
        ),
        (
            "unknown_routing_type",
            "a Routing header of another type with segments left, to one of INTERFACES",
        ),
        (
            "router_alert",
            "valid packets with a Router Alert option (not in drops)",
        ),
    ],
    example: "InfiniteSource(DATA \\<60 00 00 00 00 08 11 40 20 01 0d b8 00 00 00 00 \
        00 00 00 00 00 00 00 01 20 01 0d b8 00 01 00 00 00 00 00 00 00 00 00 02 \
        9c 40 00 35 00 08 00 00>, LIMIT 1) \
        -> c :: CheckIP6Header(INTERFACES 2001:db8::ff) -> Discard; c[1] -> Discard; \
        c[2] -> ICMP6Error(2001:db8::ff, parameterproblem, option) -> Discard; \
        c[3] -> ICMP6Error(2001:db8::ff, parameterproblem, header) -> Discard;",
    see_also: &[
        "DecIP6HLIM",
        "ICMP6Error",
        "LookupIP6Route",
        "GetIP6Address",
    ],
};

/// Why CheckIP6Header refused a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Fewer than 40 bytes.
    Truncated,
    /// The version field is not 6.
    BadVersion,
    /// The payload length runs past the end of the packet.
    BadLength,
    /// The source is multicast, loopback, in BADADDRS, or unspecified on
    /// a packet that is not for a link-local group.
    BadSource,
    /// The destination is unspecified or loopback.
    BadDestination,
    /// The extension header chain runs past the payload, is too long, or
    /// has a Hop-by-Hop header after the first place.
    BadChain,
    /// A Hop-by-Hop option runs past its header.
    BadOption,
    /// An unrecognised Hop-by-Hop option whose type says discard.
    UnknownOption,
    /// An unrecognised Hop-by-Hop option whose type asks for an ICMPv6
    /// Parameter Problem, code 2.
    UnknownOptionReport,
    /// A Type 0 Routing header with segments left, to the router.
    RoutingHeader0,
    /// A Routing header of another type with segments left, to the
    /// router, which implements no routing type.
    UnknownRoutingType,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 11] = [
        DropReason::Truncated,
        DropReason::BadVersion,
        DropReason::BadLength,
        DropReason::BadSource,
        DropReason::BadDestination,
        DropReason::BadChain,
        DropReason::BadOption,
        DropReason::UnknownOption,
        DropReason::UnknownOptionReport,
        DropReason::RoutingHeader0,
        DropReason::UnknownRoutingType,
    ];

    /// The name of the counter for this reason.
    pub const fn counter(self) -> &'static str {
        match self {
            DropReason::Truncated => "truncated",
            DropReason::BadVersion => "bad_version",
            DropReason::BadLength => "bad_length",
            DropReason::BadSource => "bad_source",
            DropReason::BadDestination => "bad_destination",
            DropReason::BadChain => "bad_chain",
            DropReason::BadOption => "bad_option",
            DropReason::UnknownOption => "unknown_option",
            DropReason::UnknownOptionReport => "unknown_option_report",
            DropReason::RoutingHeader0 => "routing_header_0",
            DropReason::UnknownRoutingType => "unknown_routing_type",
        }
    }

    /// What is wrong, in words.
    pub const fn text(self) -> &'static str {
        match self {
            DropReason::Truncated => "packet shorter than an IPv6 header",
            DropReason::BadVersion => "bad IP version",
            DropReason::BadLength => "IPv6 payload length past the end of the packet",
            DropReason::BadSource => "bad IPv6 source address",
            DropReason::BadDestination => "unspecified or loopback IPv6 destination",
            DropReason::BadChain => "malformed IPv6 extension header chain",
            DropReason::BadOption => "malformed Hop-by-Hop option",
            DropReason::UnknownOption => "unrecognised Hop-by-Hop option (discard)",
            DropReason::UnknownOptionReport => {
                "unrecognised Hop-by-Hop option (discard, send Parameter Problem)"
            }
            DropReason::RoutingHeader0 => "Type 0 Routing header (RFC 5095)",
            DropReason::UnknownRoutingType => "unrecognised Routing header type (RFC 8200)",
        }
    }
}

impl core::fmt::Display for DropReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.text())
    }
}

/// A refused packet: why, and for a Parameter Problem, where (from the
/// start of the IPv6 header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// Why.
    pub reason: DropReason,
    /// The Parameter Problem pointer, when the reason has one.
    pub pointer: Option<usize>,
}

impl From<DropReason> for Refusal {
    fn from(reason: DropReason) -> Refusal {
        Refusal {
            reason,
            pointer: None,
        }
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let badaddrs: Address6List = args.read_p("BADADDRS")?.unwrap_or_default();
    let offset: usize = args.read_p("OFFSET")?.unwrap_or(0);
    let interfaces: Address6List = args.read("INTERFACES")?.unwrap_or_default();
    // Click's one built-in bad source.
    // Multicast sources (Click's ffff:...:ffff among them) are refused
    // before the list is searched: it keeps only the others, and is
    // usually empty.
    let mut bad_src: Vec<u128> = badaddrs
        .0
        .iter()
        .map(|a| u128::from(*a))
        .filter(|a| a >> 120 != 0xff)
        .collect();
    bad_src.sort_unstable();
    bad_src.dedup();
    let mut own: Vec<u128> = interfaces.0.iter().map(|a| u128::from(*a)).collect();
    own.sort_unstable();
    own.dedup();
    Ok(Box::new(CheckIP6Header {
        offset,
        bad_src: bad_src.into_boxed_slice(),
        own: own.into_boxed_slice(),
        has_reject: ports.noutputs() > 1,
        has_report: ports.noutputs() > 2,
        has_header_report: ports.noutputs() > 3,
        drops: [0; DropReason::ALL.len()],
        router_alert: 0,
    }))
}

/// Neither `::` nor `::1` (RFC 4291 sections 2.5.2, 2.5.3), for the
/// address at `h[at..at + 16]` read as two words in memory order (no byte
/// swap): some bit is set besides the lowest bit of its last byte.
#[inline(always)]
fn above_one(h: &[u8; 40], at: usize) -> bool {
    let word = |i: usize| {
        let mut w = [0; 8];
        w.copy_from_slice(&h[i..i + 8]);
        u64::from_ne_bytes(w)
    };
    const ALL_BUT_LAST_BIT: u64 =
        u64::from_ne_bytes([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]);
    word(at) | (word(at + 8) & ALL_BUT_LAST_BIT) != 0
}

/// The next headers of the usual packet, TCP, UDP and ICMPv6, as a
/// table: one load and test a packet, where the match took a range check
/// before its bit test.
static USUAL_NEXT: [bool; 256] = {
    let mut t = [false; 256];
    t[6] = true;
    t[17] = true;
    t[58] = true;
    t
};

/// Checks IPv6 headers.
#[derive(Debug)]
pub struct CheckIP6Header {
    offset: usize,
    /// Refused sources, as integers.
    bad_src: Box<[u128]>,
    /// The router's own addresses (INTERFACES), sorted.
    own: Box<[u128]>,
    has_reject: bool,
    has_report: bool,
    /// Output 3 (Parameter Problem code 0) is there.
    has_header_report: bool,
    drops: [u64; DropReason::ALL.len()],
    router_alert: u64,
}

/// What a valid packet showed besides being valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Seen {
    /// It carries a Router Alert option.
    pub router_alert: bool,
}

impl CheckIP6Header {
    /// Checks one packet; on success trims it and sets its annotations.
    ///
    /// The usual packet is settled by one test in line: a version 6
    /// header whose payload ends where the frame does, a source that is
    /// neither multicast, `::` nor `::1` with no BADADDRS to search, a
    /// destination other than `::` and `::1`, and TCP, UDP or ICMPv6
    /// straight after the header. Every check of [`CheckIP6Header::check_each`]
    /// is in it or sends the packet there; what such a packet needs
    /// (nothing to trim, nothing seen) is done here. Anything else, valid
    /// or not, takes the full checks out of line, which name the reason.
    #[inline(always)]
    pub fn check(&self, p: &mut Packet) -> Result<Seen, Refusal> {
        if self.usual(p, self.offset) {
            return Ok(Seen::default());
        }
        self.check_each(p)
    }

    /// The test in line of [`CheckIP6Header::check`]: whether `p` is a
    /// usual valid packet, which it then annotates. Doing so again to the
    /// same packet changes nothing. `offset` is the element's: the batch
    /// loop passes the usual 0 as a constant, which spares it the
    /// offset's additions and a bound.
    #[inline(always)]
    fn usual(&self, p: &mut Packet, offset: usize) -> bool {
        debug_assert_eq!(offset, self.offset);
        let d = p.data();
        if let Some(h) = d.get(offset..).and_then(|h| h.first_chunk::<40>()) {
            let plen = usize::from(u16::from_be_bytes([h[4], h[5]]));
            // The addresses are read as words where they lie: copied out
            // as arrays first, they were put together byte by byte.
            let usual = (h[0] >> 4 == 6)
                & (offset + 40 + plen == d.len())
                & (h[8] != 0xff)
                & above_one(h, 8)
                & above_one(h, 24)
                & USUAL_NEXT[usize::from(h[6])]
                & self.bad_src.is_empty();
            if usual {
                let dst = addr_at(h, 24);
                p.set_network_header(offset);
                p.anno_mut().dst_ip6 = Ipv6Addr::from(dst);
                return true;
            }
        }
        false
    }

    /// [`CheckIP6Header::check`] one check at a time, for every packet
    /// the test in line does not settle.
    #[inline(never)]
    fn check_each(&self, p: &mut Packet) -> Result<Seen, Refusal> {
        let h = match p.data().get(self.offset..) {
            Some(h) if h.len() >= 40 => h,
            _ => return Err(DropReason::Truncated.into()),
        };
        if h[0] >> 4 != 6 {
            return Err(DropReason::BadVersion.into());
        }
        let len = 40 + usize::from(u16::from_be_bytes([h[4], h[5]]));
        if len > h.len() {
            return Err(DropReason::BadLength.into());
        }
        let (src, dst) = (addr_at(h, 8), addr_at(h, 24));
        if is_multicast(&src)
            || is_loopback(&src)
            || (is_unspecified(&src) && !is_link_scope_multicast(&dst))
            || (!self.bad_src.is_empty() && self.bad_src.contains(&u128::from_be_bytes(src)))
        {
            return Err(DropReason::BadSource.into());
        }
        if is_unspecified(&dst) || is_loopback(&dst) {
            return Err(DropReason::BadDestination.into());
        }
        let seen = self.extension_headers(&h[..len], &dst)?;
        let excess = h.len() - len;
        if excess != 0 {
            p.take_back(excess);
        }
        p.set_network_header(self.offset);
        p.anno_mut().dst_ip6 = Ipv6Addr::from(dst);
        Ok(seen)
    }

    /// Walks the extension headers of the packet `ip` (cut to its payload
    /// length), acting on Hop-by-Hop options and, for the router's own
    /// packets, Type 0 Routing headers.
    #[inline(always)]
    fn extension_headers(&self, ip: &[u8], dst: &[u8; 16]) -> Result<Seen, Refusal> {
        if matches!(ip[6], 6 | 17 | 58) {
            // TCP, UDP, ICMPv6 straight after the header: the usual packet
            // has nothing to walk.
            return Ok(Seen::default());
        }
        self.walk_extension_headers(ip, dst)
    }

    #[inline(never)]
    fn walk_extension_headers(&self, ip: &[u8], dst: &[u8; 16]) -> Result<Seen, Refusal> {
        let chain = ipv6ext::walk(ip).map_err(|e| match e {
            ChainError::Truncated(_) | ChainError::TooLong | ChainError::HopByHopNotFirst(_) => {
                Refusal::from(DropReason::BadChain)
            }
        })?;
        let mut seen = Seen::default();
        if let Some((at, hlen)) = chain.hop_by_hop {
            for o in ipv6ext::options(&ip[at..at + hlen]) {
                let o = o.map_err(|_| DropReason::BadOption)?;
                if known_option(o.kind) {
                    seen.router_alert |= o.kind == OPT_ROUTER_ALERT;
                    continue;
                }
                let report = Refusal {
                    reason: DropReason::UnknownOptionReport,
                    pointer: Some(at + o.offset),
                };
                match UnknownAction::of(o.kind) {
                    UnknownAction::Skip => {}
                    UnknownAction::Discard => return Err(DropReason::UnknownOption.into()),
                    UnknownAction::DiscardAndReportUnicast if is_multicast(dst) => {
                        return Err(DropReason::UnknownOption.into())
                    }
                    UnknownAction::DiscardAndReport | UnknownAction::DiscardAndReportUnicast => {
                        return Err(report)
                    }
                }
            }
        }
        // The router implements no routing type: at the node a Routing
        // header addresses, one with segments left is refused by its type
        // (RFC 8200 section 4.4), Type 0 named apart (RFC 5095).
        if let Some((at, kind, segments_left)) = chain.routing {
            if segments_left != 0 && self.own.contains(&u128::from_be_bytes(*dst)) {
                return Err(Refusal {
                    reason: if kind == 0 {
                        DropReason::RoutingHeader0
                    } else {
                        DropReason::UnknownRoutingType
                    },
                    pointer: Some(at + 2),
                });
            }
        }
        Ok(seen)
    }

    #[inline(always)]
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        match self.check(p) {
            Ok(seen) => {
                self.router_alert += u64::from(seen.router_alert);
                Some(0)
            }
            Err(r) => self.refuse(p, r),
        }
    }

    /// Counts a refused packet and picks its output.
    #[cold]
    #[inline(never)]
    fn refuse(&mut self, p: &mut Packet, r: Refusal) -> Option<usize> {
        self.drops[r.reason as usize] += 1;
        p.anno_mut().param_off = r.pointer.and_then(|o| u8::try_from(o).ok());
        let report = match r.reason {
            DropReason::UnknownOptionReport if self.has_report => Some(2),
            DropReason::RoutingHeader0 | DropReason::UnknownRoutingType
                if self.has_header_report =>
            {
                Some(3)
            }
            _ => None,
        };
        if report.is_some() {
            p.set_network_header(self.offset);
            return report;
        }
        self.has_reject.then_some(1)
    }

    /// Invalid packets seen for `reason`.
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.drops[reason as usize]
    }
}

impl CheckIP6Header {
    /// A batch with a packet that is not usual, classified packet by
    /// packet: out of line, so that the usual batch's loop keeps its
    /// registers.
    #[inline(never)]
    #[cold]
    fn push_checked(&mut self, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p));
    }
}

impl Element for CheckIP6Header {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        // A batch of usual packets (the rule on a router's input) is
        // checked in one loop with the test in line and goes out of
        // output 0 whole, with no output to record per packet. At the
        // first packet that is not usual, the batch is classified packet
        // by packet, from its start: the usual packets before it pass
        // the same way again (annotating them twice changes nothing).
        let usual = match self.offset {
            0 => batch.iter_mut().all(|p| self.usual(p, 0)),
            at => batch.iter_mut().all(|p| self.usual(p, at)),
        };
        if usual {
            return cx.push(0, batch);
        }
        self.push_checked(batch, cx);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops.iter().sum());
        for r in DropReason::ALL {
            s.counter(r.counter(), self.drops[r as usize]);
        }
        s.counter("router_alert", self.router_alert);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::{udp, udp_with, ECHO_REQUEST, HOST_A, HOST_B};
    use bricks_runtime::testing::{make_element, Harness};
    use bricks_wire::ipv6ext::{DEST_OPTS, FRAGMENT, HOP_BY_HOP, ROUTING};

    fn run(args: &str, frame: &[u8]) -> Harness {
        let mut h = Harness::push(&CLASS, args, 1, 2);
        h.push_bytes(0, frame);
        h
    }

    fn expect_pass(args: &str, frame: &[u8]) -> Packet {
        let mut h = run(args, frame);
        let mut out = h.take(0);
        assert_eq!(out.len(), 1, "refused: {:?}", h.stats().entries());
        out.pop().unwrap()
    }

    fn expect_drop(args: &str, frame: &[u8], reason: DropReason) {
        let mut h = run(args, frame);
        assert!(h.take(0).is_empty(), "{reason:?} passed");
        assert_eq!(h.take_bytes(1), vec![frame.to_vec()], "{reason:?}");
        let s = h.stats();
        assert_eq!(s.get("drops"), Some(1));
        for r in DropReason::ALL {
            assert_eq!(s.get(r.counter()), Some(u64::from(r == reason)), "{r:?}");
        }
    }

    fn with(f: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
        let mut v = ECHO_REQUEST.to_vec();
        f(&mut v);
        v
    }

    /// The test in line and the checks one at a time take the same
    /// decision, and leave the packet the same, on addresses and next
    /// headers at the edges of what the test in line settles.
    #[test]
    fn usual_packets_and_the_full_checks_agree() {
        let addrs: Vec<[u8; 16]> = [
            "::",
            "::1",
            "::2",
            "::100",
            "1::",
            "1::1",
            "100::1",
            "ff02::1",
            "ff05::1",
            "fe80::1",
            "2001:db8::1",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        ]
        .iter()
        .map(|a| a.parse::<Ipv6Addr>().unwrap().octets())
        .collect();
        for bad in ["", "2001:db8::1"] {
            let bad_src: Box<[u128]> = bad
                .parse::<Ipv6Addr>()
                .map(|a| vec![u128::from(a)])
                .unwrap_or_default()
                .into();
            let c = CheckIP6Header {
                offset: 14,
                bad_src,
                own: Box::new([]),
                has_reject: true,
                has_report: false,
                has_header_report: false,
                drops: [0; DropReason::ALL.len()],
                router_alert: 0,
            };
            for src in &addrs {
                for dst in &addrs {
                    for (nh, tail) in [(17, 0), (6, 0), (58, 0), (0, 0), (44, 0), (17, 6), (59, 0)]
                    {
                        let mut frame = vec![0xee; 14];
                        let mut ip = udp_with(nh, &[], 4);
                        ip[8..24].copy_from_slice(src);
                        ip[24..40].copy_from_slice(dst);
                        frame.extend(&ip);
                        frame.extend(std::iter::repeat_n(0, tail));
                        for version in [0x60, 0x40] {
                            frame[14] = version;
                            for cut in [0, 1, 30] {
                                let f = &frame[..frame.len() - cut];
                                let mut a = Packet::from_slice(f).unwrap();
                                let mut b = Packet::from_slice(f).unwrap();
                                let (ra, rb) = (c.check(&mut a), c.check_each(&mut b));
                                let what = format!("{src:?} {dst:?} {nh} {tail} {version} {cut}");
                                assert_eq!(ra, rb, "{what}");
                                assert_eq!(a.data(), b.data(), "{what}");
                                assert_eq!(a.anno().dst_ip6, b.anno().dst_ip6, "{what}");
                                assert_eq!(a.anno().l3_offset(), b.anno().l3_offset(), "{what}");
                            }
                        }
                    }
                }
            }
        }
    }

    /// A batch of usual packets passes whole; one unusual packet in it
    /// sends the batch through the checks one at a time, in order, each
    /// packet counted once.
    #[test]
    fn batches_usual_and_mixed() {
        let good = udp(4);
        let mut bad = udp(4);
        bad[24..40].fill(0);
        let mut padded = udp(4);
        padded.extend([0; 3]);
        let mut h = Harness::push(&CLASS, "", 1, 2);
        let batch = |frames: &[&[u8]]| {
            frames
                .iter()
                .map(|f| Packet::from_slice(f).unwrap())
                .collect::<Vec<_>>()
        };
        h.push_packets(0, batch(&[&good, &good, &good]));
        let out = h.take(0);
        assert_eq!(out.len(), 3);
        assert!(out
            .iter()
            .all(|p| p.anno().dst_ip6 == Ipv6Addr::from(HOST_B)));
        assert!(out.iter().all(|p| p.network_header_offset() == Some(0)));
        h.push_packets(0, batch(&[&good, &padded, &bad, &good]));
        assert_eq!(
            h.take_bytes(0),
            vec![good.clone(), good.clone(), good.clone()]
        );
        assert_eq!(h.take_bytes(1), vec![bad.clone()]);
        let s = h.stats();
        assert_eq!(s.get("drops"), Some(1));
        assert_eq!(s.get("bad_destination"), Some(1));
    }

    #[test]
    fn valid_packet_passes_with_annotations() {
        let out = expect_pass("", &ECHO_REQUEST);
        assert_eq!(out.data(), &ECHO_REQUEST[..]);
        assert_eq!(out.network_header_offset(), Some(0));
        assert_eq!(out.anno().dst_ip6, Ipv6Addr::from(HOST_B));
    }

    #[test]
    fn padding_is_trimmed_and_offset_honoured() {
        // 14 bytes of Ethernet header in front, 10 of padding behind.
        let mut frame = vec![0xee; 14];
        frame.extend(udp(4));
        frame.extend([0; 10]);
        let out = expect_pass("OFFSET 14", &frame);
        assert_eq!(out.len(), 14 + 52);
        assert_eq!(out.network_header_offset(), Some(14));
        assert_eq!(out.network_header().unwrap()[0], 0x60);
        // Click's positional order: BADADDRS, then OFFSET.
        let out = expect_pass("ff02::9, 14", &frame);
        assert_eq!(out.len(), 14 + 52);
        // With no padding, a batch of such packets passes by the usual
        // loop, at the offset.
        frame.truncate(14 + 52);
        let mut h = Harness::push(&CLASS, "OFFSET 14", 1, 2);
        h.push_packets(0, (0..5).map(|_| Packet::from_slice(&frame).unwrap()));
        let out = h.take(0);
        assert_eq!(out.len(), 5);
        for p in &out {
            assert_eq!(p.network_header_offset(), Some(14));
            assert_eq!(p.anno().dst_ip6, Ipv6Addr::from(HOST_B));
        }
    }

    #[test]
    fn every_header_drop_reason() {
        expect_drop("", &ECHO_REQUEST[..39], DropReason::Truncated);
        expect_drop("", &[], DropReason::Truncated);
        expect_drop("OFFSET 30", &ECHO_REQUEST, DropReason::Truncated);
        expect_drop("", &with(|v| v[0] = 0x40), DropReason::BadVersion);
        expect_drop("", &with(|v| v[0] = 0x70), DropReason::BadVersion);
        // Payload length one byte beyond the frame.
        expect_drop("", &with(|v| v[5] = 17), DropReason::BadLength);
        expect_drop("", &ECHO_REQUEST[..55], DropReason::BadLength);
        for src in [
            "ff02::1",
            "ff0e::5",
            "::1",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "::",
        ] {
            let a: Ipv6Addr = src.parse().unwrap();
            expect_drop(
                "",
                &with(|v| v[8..24].copy_from_slice(&a.octets())),
                DropReason::BadSource,
            );
        }
        let listed = with(|v| v[23] = 7);
        expect_drop("2001:db8::7", &listed, DropReason::BadSource);
        expect_drop(
            "BADADDRS 2001:db8::9 2001:db8::7",
            &listed,
            DropReason::BadSource,
        );
        for dst in ["::", "::1"] {
            let a: Ipv6Addr = dst.parse().unwrap();
            expect_drop(
                "",
                &with(|v| v[24..40].copy_from_slice(&a.octets())),
                DropReason::BadDestination,
            );
        }
    }

    #[test]
    fn unspecified_source_only_to_link_local_groups() {
        // Duplicate Address Detection: :: to a solicited-node group.
        let dad: Ipv6Addr = "ff02::1:ff00:2".parse().unwrap();
        let p = with(|v| {
            v[8..24].fill(0);
            v[24..40].copy_from_slice(&dad.octets());
        });
        expect_pass("", &p);
        let site: Ipv6Addr = "ff05::2".parse().unwrap();
        let p = with(|v| {
            v[8..24].fill(0);
            v[24..40].copy_from_slice(&site.octets());
        });
        expect_drop("", &p, DropReason::BadSource);
    }

    /// A Hop-by-Hop header naming UDP with `opts` (6 bytes) as its options.
    fn hbh(opts: [u8; 6]) -> Vec<u8> {
        let mut e = vec![17, 0];
        e.extend(opts);
        udp_with(HOP_BY_HOP, &e, 4)
    }

    #[test]
    fn router_alert_is_counted_and_passes() {
        // Router Alert (MLD, value 0), then PadN of 0 data bytes.
        let p = hbh([OPT_ROUTER_ALERT, 2, 0, 0, 1, 0]);
        let mut h = run("", &p);
        assert_eq!(h.take_bytes(0), vec![p.clone()]);
        assert_eq!(h.stats().get("router_alert"), Some(1));
        assert_eq!(h.stats().get("drops"), Some(0));
    }

    #[test]
    fn unknown_options_by_their_high_bits() {
        // 00: skipped.
        expect_pass("", &hbh([0x1e, 2, 0, 0, 0, 0]));
        // 01: discarded, no report.
        expect_drop("", &hbh([0x5e, 2, 0, 0, 0, 0]), DropReason::UnknownOption);
        // 10 and 11: discarded with a report pointing at the option, at
        // 40 + 2 (after Pad1 at 42: 43).
        let p = hbh([0, 0x9e, 1, 0, 1, 0]);
        let mut h = Harness::push(&CLASS, "", 1, 3);
        h.push_bytes(0, &p);
        assert!(h.take(0).is_empty() && h.take(1).is_empty());
        let out = h.take(2);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &p[..]);
        assert_eq!(out[0].anno().param_off, Some(43));
        assert_eq!(out[0].network_header_offset(), Some(0));
        assert_eq!(h.stats().get("unknown_option_report"), Some(1));
        let p = hbh([0xde, 2, 0, 0, 0, 0]);
        h.push_bytes(0, &p);
        assert_eq!(h.take(2)[0].anno().param_off, Some(42));
        // Without output 2: invalid, to output 1.
        expect_drop("", &p, DropReason::UnknownOptionReport);
        // 11 to a multicast destination: discarded silently.
        let mut m = p.clone();
        m[24..40].copy_from_slice(&"ff0e::1".parse::<Ipv6Addr>().unwrap().octets());
        expect_drop("", &m, DropReason::UnknownOption);
        // 10 to a multicast destination: still reported.
        let mut m = hbh([0x9e, 2, 0, 0, 0, 0]);
        m[24..40].copy_from_slice(&"ff0e::1".parse::<Ipv6Addr>().unwrap().octets());
        expect_drop("", &m, DropReason::UnknownOptionReport);
        // The Jumbo Payload option is unknown (11).
        expect_drop(
            "",
            &hbh([0xc2, 4, 0, 1, 0, 0]),
            DropReason::UnknownOptionReport,
        );
        // An option running past its header.
        expect_drop("", &hbh([1, 0, 0x1e, 9, 0, 0]), DropReason::BadOption);
    }

    #[test]
    fn a_pointer_beyond_255_is_not_annotated() {
        // A 256-byte Hop-by-Hop header: PadN up to offset 40 + 250, then
        // an unknown option of type 10.
        let mut e = vec![17, 31, 1, 246];
        e.resize(250, 0);
        e.extend([0x9e, 4, 0, 0, 0, 0]);
        let p = udp_with(HOP_BY_HOP, &e, 0);
        let mut h = Harness::push(&CLASS, "", 1, 3);
        h.push_bytes(0, &p);
        let out = h.take(2);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].anno().param_off, None);
    }

    #[test]
    fn extension_header_chains() {
        // Destination options, then a fragment header, then UDP.
        let e = [FRAGMENT, 0, 1, 4, 0, 0, 0, 0, 17, 0, 0, 1, 0, 0, 0, 9];
        expect_pass("", &udp_with(DEST_OPTS, &e, 4));
        // A later fragment is forwarded as it is.
        let e = [17, 0, 0x05, 0x00, 0, 0, 0, 9];
        let p = udp_with(FRAGMENT, &e, 4);
        assert_eq!(expect_pass("", &p).data(), &p[..]);
        // A header running past the payload length (though not the frame).
        let mut p = udp_with(DEST_OPTS, &[17, 4, 1, 4, 0, 0, 0, 0], 4);
        p.extend([0; 40]);
        expect_drop("", &p, DropReason::BadChain);
        // Destination options naming themselves, past the walk's bound.
        let e: Vec<u8> = [DEST_OPTS, 0, 1, 4, 0, 0, 0, 0].repeat(20);
        expect_drop("", &udp_with(DEST_OPTS, &e, 0), DropReason::BadChain);
        // Twelve of them, then UDP: longer than RFC 8200 recommends, but
        // legal, and forwarded (RFC 7045).
        let mut e: Vec<u8> = [DEST_OPTS, 0, 1, 4, 0, 0, 0, 0].repeat(11);
        e.extend([17, 0, 1, 4, 0, 0, 0, 0]);
        expect_pass("", &udp_with(DEST_OPTS, &e, 0));
        // Hop-by-Hop not first.
        let e = [HOP_BY_HOP, 0, 1, 4, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0];
        expect_drop("", &udp_with(DEST_OPTS, &e, 0), DropReason::BadChain);
        // No Next Header: valid, nothing after it is looked at.
        let mut p = udp_with(59, &[], 0);
        p[4..6].copy_from_slice(&0u16.to_be_bytes());
        p.truncate(40);
        expect_pass("", &p);
    }

    /// A UDP packet to `dst` with a Routing header of `kind` and
    /// `segments_left` (one address).
    fn routed(kind: u8, segments_left: u8, dst: &str) -> Vec<u8> {
        let mut e = vec![17, 2, kind, segments_left, 0, 0, 0, 0];
        e.extend("2001:db8:2::1".parse::<Ipv6Addr>().unwrap().octets());
        let mut p = udp_with(ROUTING, &e, 4);
        p[24..40].copy_from_slice(&dst.parse::<Ipv6Addr>().unwrap().octets());
        p
    }

    #[test]
    fn routing_header_0_to_the_router_is_refused() {
        let args = "INTERFACES 2001:db8::ff 2001:db8:1::ff";
        let p = routed(0, 1, "2001:db8::ff");
        let mut h = run(args, &p);
        assert_eq!(h.take(1)[0].anno().param_off, Some(42));
        assert_eq!(h.stats().get("routing_header_0"), Some(1));
        expect_drop(args, &p, DropReason::RoutingHeader0);
        // No segments left: the header is ignored (RFC 5095 section 3).
        expect_pass(args, &routed(0, 0, "2001:db8::ff"));
        // Nor is any other type, which the router does not implement
        // either (type 2, Mobile IPv6; type 3, RPL; type 4, segment
        // routing), counted apart; the pointer is the same.
        for kind in [2, 3, 4, 253] {
            let q = routed(kind, 1, "2001:db8::ff");
            expect_drop(args, &q, DropReason::UnknownRoutingType);
            let mut h = run(args, &q);
            assert_eq!(h.take(1)[0].anno().param_off, Some(42));
            assert_eq!(h.stats().get("unknown_routing_type"), Some(1));
            assert_eq!(h.stats().get("routing_header_0"), Some(0));
            expect_pass(args, &routed(kind, 0, "2001:db8::ff"));
            expect_pass(args, &routed(kind, 1, "2001:db8:5::1"));
        }
        // A forwarded packet's Routing header is not examined.
        expect_pass(args, &routed(0, 1, "2001:db8:5::1"));
        expect_pass("", &routed(0, 1, "2001:db8::ff"));
    }

    #[test]
    fn routing_header_0_is_answered_with_a_parameter_problem() {
        let args = "INTERFACES 2001:db8::ff";
        let p = routed(0, 1, "2001:db8::ff");
        let mut h = Harness::push(&CLASS, args, 1, 4);
        h.push_bytes(0, &p);
        assert!(h.take(0).is_empty() && h.take(1).is_empty() && h.take(2).is_empty());
        let out = h.take(3);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &p[..]);
        // The Routing header starts at 40; its type is its third byte.
        assert_eq!(out[0].anno().param_off, Some(42));
        assert_eq!(out[0].network_header_offset(), Some(0));
        let s = h.stats();
        assert_eq!(
            (s.get("routing_header_0"), s.get("drops")),
            (Some(1), Some(1))
        );
        // No segments left: ignored, the packet goes on.
        let q = routed(0, 0, "2001:db8::ff");
        h.push_bytes(0, &q);
        assert_eq!(h.take_bytes(0), vec![q]);
        assert!(h.take(3).is_empty());

        // Through ICMP6Error(SRC, parameterproblem, header): type 4, code
        // 0, pointer 42, the packet quoted, from the router to the sender.
        let mut e = Harness::push(
            &crate::ip6::icmp6error::CLASS,
            "2001:db8::ff, parameterproblem, header",
            1,
            1,
        );
        e.push_packets(0, out);
        let err = e.take_bytes(0);
        assert_eq!(err.len(), 1);
        let err = &err[0];
        let mut want = vec![0x60, 0, 0, 0];
        want.extend(((8 + p.len()) as u16).to_be_bytes());
        want.extend([58, 255]);
        want.extend("2001:db8::ff".parse::<Ipv6Addr>().unwrap().octets());
        want.extend(HOST_A);
        want.extend([4, 0]);
        want.extend(&err[42..44]); // the checksum, checked below
        want.extend(42u32.to_be_bytes());
        want.extend(&p);
        assert_eq!(err, &want);
        assert!(crate::ip6::header6::testing::icmp6_ok(err, 40));
    }

    #[test]
    fn unconnected_output_1_drops() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(
            0,
            [
                Packet::from_slice(&with(|v| v[0] = 0x45)).unwrap(),
                Packet::from_slice(&ECHO_REQUEST).unwrap(),
            ],
        );
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("drops"), Some(1));
        assert_eq!(h.read_handler("drops").unwrap().trim(), "1");
    }

    #[test]
    fn bad_arguments_are_refused() {
        let ports = PortInfo::default();
        assert!(make_element(&CLASS, "2001:db8::1 zz", &ports).is_err());
        assert!(make_element(&CLASS, "2001:db8::1, x", &ports).is_err());
        assert!(make_element(&CLASS, "INTERFACES 1.2.3.4", &ports).is_err());
        assert!(make_element(&CLASS, ", 14", &ports).is_ok());
        assert!(make_element(&CLASS, "OFFST 3", &ports)
            .unwrap_err()
            .contains("OFFST"));
    }
}
