//! `IP6NDAdvertiser`: answers Neighbor Solicitations (RFC 4861 section
//! 7.2.4) for a set of IPv6 addresses and prefixes, the host side of
//! Neighbor Discovery and proxy ND. Click's element of the same name, the
//! IPv6 counterpart of `ARPResponder`. At start-up it also announces its
//! own addresses with a few unsolicited advertisements (section 7.2.6).

use super::emit;
use super::NdCheck;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::{Annotations, PacketType, Timestamp};
use bricks_wire::ethernet::{EtherType, EthernetAddress, HEADER_LEN};
use bricks_wire::icmpv6::Icmpv6Message;
use bricks_wire::ip::IpProtocol;
use bricks_wire::ipv6::{Ipv6Cidr, Ipv6Packet, Ipv6Repr};
use bricks_wire::ndisc::{
    multicast_ethernet, NdiscPacket, NdiscRepr, NeighborFlags, HOP_LIMIT, NEIGHBOR_LEN,
};
use std::fmt::Write as _;
use std::net::Ipv6Addr;

/// The `IP6NDAdvertiser` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IP6NDAdvertiser",
    ports: "1/1-2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

/// All nodes on the link (RFC 4291 section 2.7.1).
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// Unsolicited advertisements of each address at start-up (RFC 4861
/// section 10, MAX_NEIGHBOR_ADVERTISEMENT).
pub const MAX_NEIGHBOR_ADVERTISEMENT: u32 = 3;

/// Between two rounds of them: RetransTimer's default, RETRANS_TIMER
/// (RFC 4861 sections 7.2.6 and 10), in nanoseconds.
pub const RETRANS_TIMER: u64 = 1_000_000_000;

static MANUAL: Manual = Manual {
    summary: "answers IPv6 Neighbor Solicitations for given addresses",
    synopsis: "IP6NDAdvertiser(IP6/LEN ETH, IP6 MASK ETH, ... [, ROUTER bool, UNSOLICITED bool])",
    description: "Input frames should be Neighbor Solicitations, Ethernet header included. \
        Each argument is an IPv6 address with an optional prefix length (ADDR or \
        ADDR/LEN; ADDR MASK with MASK an IPv6 netmask, as Click writes it) and one Ethernet \
        address. A solicitation whose target falls in one of the prefixes (the longest \
        wins) is answered with a Neighbor Advertisement (RFC 4861 section 7.2.4) from the \
        target, hop limit 255, with a target link-layer address option holding ETH and \
        flags S (solicited) and O (override), and R (router) unless ROUTER is false. The \
        answer goes to the solicitation's source, at its source link-layer address option \
        or else at the frame's Ethernet source. A solicitation from :: (duplicate address \
        detection, RFC 4862) is answered to all nodes, ff02::1 at 33:33:00:00:00:01, \
        without S, so that the prober sees the address is taken. A prefix shorter than \
        /128 answers for every address in it (proxy ND); its answers leave O clear, as \
        section 7.2.8 asks of a proxy, so that the owner's own answer wins. \
        \n\nOnly valid solicitations are answered (section 7.1.1): hop limit 255 \
        (`bad_hop_limit`), a right checksum (`bad_checksum`), code 0, options well formed \
        (none of length zero), a target that is not multicast, and from :: only to a \
        solicited-node group without a source link-layer address option (`bad_nd`). \
        Frames that are not IPv6 Neighbor Solicitations, or carry extension headers \
        before the ICMPv6 message, are `not_ns`; solicitations from a group Ethernet \
        address or with a group or zero link-layer address option are `bad_sender`; \
        solicitations for other addresses are `unknown_target`. Everything not answered \
        leaves on output 1 if it is connected and is dropped otherwise. Annotations of an \
        answer are reset except the input device, the virtual router and the timestamp; \
        its packet type becomes OUTGOING. \
        \n\nWhen the router starts, each address given as /128 (its own, not a proxied \
        prefix) is announced to all nodes, ff02::1 at 33:33:00:00:00:01, with \
        MAX_NEIGHBOR_ADVERTISEMENT (3) unsolicited advertisements RETRANS_TIMER (1 s) \
        apart, the first at once (RFC 4861 section 7.2.6): from the address itself, \
        hop limit 255, flags O (override) and R (unless ROUTER is false), S clear, \
        with a target link-layer address option holding ETH, so that neighbours whose \
        cache holds an old link-layer address for it update it. They are sent by the \
        first worker only, and not again after a hot swap to a configuration with the \
        same addresses. `UNSOLICITED false` turns them off. Router advertisements are \
        IP6RouterAdvertiser's job.",
    ports: "one input, push; output 0: Neighbor Advertisements, push; optional output 1: \
        frames not answered, push",
    keywords: &[
        Keyword {
            name: "ROUTER",
            ty: "boolean",
            default: Some("true"),
            doc: "set the R flag in advertisements: the answering node is a router (bricks \
                extension)",
        },
        Keyword {
            name: "UNSOLICITED",
            ty: "boolean",
            default: Some("true"),
            doc: "announce the /128 addresses with unsolicited advertisements at start-up \
                (RFC 4861 section 7.2.6; bricks extension)",
        },
    ],
    counters: &[
        ("advertisements", "solicitations answered"),
        (
            "unsolicited",
            "unsolicited advertisements sent at start-up (not in advertisements)",
        ),
        (
            "dad_answers",
            "of which duplicate address detection probes, answered to all nodes",
        ),
        ("not_ns", "frames that are not IPv6 Neighbor Solicitations"),
        ("bad_hop_limit", "solicitations whose hop limit is not 255"),
        ("bad_checksum", "solicitations with a wrong checksum"),
        (
            "bad_nd",
            "solicitations with a code, option or address RFC 4861 forbids",
        ),
        (
            "bad_sender",
            "solicitations from a group or zero link-layer address",
        ),
        (
            "unknown_target",
            "solicitations for an address not configured",
        ),
    ],
    example: "InfiniteSource(DATA \\<33 33 ff 00 00 01 52 54 00 bb 00 02 86 dd 60 00 00 00 00 20 \
        3a ff 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02 ff 02 00 00 00 00 00 00 00 00 \
        00 01 ff 00 00 01 87 00 cb 17 00 00 00 00 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 \
        00 01 01 01 52 54 00 bb 00 02>, LIMIT 1) \
        -> nd :: IP6NDAdvertiser(2001:db8::1/128 52:54:00:aa:00:01) -> Discard; nd[1] -> Discard;",
    see_also: &["IP6NDSolicitor", "ARPResponder"],
};

/// One answered prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    prefix: Ipv6Cidr,
    eth: EthernetAddress,
}

/// Why a frame was not answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reject {
    NotNs,
    BadHopLimit,
    BadChecksum,
    BadNd,
    BadSender,
    UnknownTarget,
}

impl Reject {
    const ALL: [Reject; 6] = [
        Reject::NotNs,
        Reject::BadHopLimit,
        Reject::BadChecksum,
        Reject::BadNd,
        Reject::BadSender,
        Reject::UnknownTarget,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Reject::NotNs => "not_ns",
            Reject::BadHopLimit => "bad_hop_limit",
            Reject::BadChecksum => "bad_checksum",
            Reject::BadNd => "bad_nd",
            Reject::BadSender => "bad_sender",
            Reject::UnknownTarget => "unknown_target",
        }
    }
}

/// The prefix length of a contiguous netmask.
fn mask_len(mask: Ipv6Addr) -> Option<u8> {
    let bits = mask.to_bits();
    let len = bits.leading_ones();
    (bits.checked_shl(len).unwrap_or(0) == 0).then_some(len as u8)
}

/// Parses one argument, `IP6[/LEN] [MASK] ETH`.
fn parse_entry(text: &str) -> Result<Entry, String> {
    let mut addrs: Vec<(Ipv6Addr, Option<u8>)> = Vec::new();
    let mut eth: Option<EthernetAddress> = None;
    for word in text.split_ascii_whitespace() {
        if word.contains('/') {
            let p: Ipv6Cidr = word
                .parse()
                .map_err(|e| format!("`{word}` is not an IPv6 prefix: {e}"))?;
            addrs.push((p.address(), Some(p.prefix_len())));
        } else if let Ok(a) = Ipv6Addr::from_arg(word) {
            addrs.push((a, None));
        } else if let Ok(e) = EthernetAddress::from_arg(word) {
            if eth.replace(e).is_some() {
                return Err(format!("more than one Ethernet address in `{text}`"));
            }
        } else {
            return Err(format!(
                "expected IPv6 address, prefix or Ethernet address, found `{word}`"
            ));
        }
    }
    let prefix = match addrs.as_slice() {
        [(a, len)] => Ipv6Cidr::new(*a, len.unwrap_or(128)),
        [(a, None), (m, None)] => {
            let len = mask_len(*m).ok_or_else(|| format!("{m} is not a contiguous netmask"))?;
            Ipv6Cidr::new(*a, len)
        }
        [] => return Err(format!("missing IPv6 address in `{text}`")),
        _ => return Err(format!("expected one IPv6 address or prefix in `{text}`")),
    };
    let eth = eth.ok_or_else(|| format!("missing Ethernet address in `{text}`"))?;
    if !eth.is_unicast() || eth == EthernetAddress::UNSPECIFIED {
        return Err(format!("{eth} is not a unicast Ethernet address"));
    }
    Ok(Entry {
        prefix: prefix.network(),
        eth,
    })
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let router: bool = args.read("ROUTER")?.unwrap_or(true);
    let unsolicited: bool = args.read("UNSOLICITED")?.unwrap_or(true);
    let mut entries = Vec::new();
    for (i, (text, span)) in args.rest().into_iter().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        if let (Some(k), _) = bricks_config::split_keyword(text) {
            return Err(
                ArgError::at(span, format!("unknown keyword {k}")).with_help(
                    "IP6NDAdvertiser takes ROUTER, UNSOLICITED and `IP6/LEN ETH` arguments",
                ),
            );
        }
        entries.push(
            parse_entry(text)
                .map_err(|m| ArgError::at(span, format!("argument {}: {m}", i + 1)))?,
        );
    }
    if entries.is_empty() {
        return Err(ArgError::new("missing mandatory argument IP6/LEN ETH")
            .with_help("e.g. IP6NDAdvertiser(2001:db8::1/128 52:54:00:aa:00:01)"));
    }
    // Longest prefix first; stable, so the first given wins a tie.
    entries.sort_by_key(|e| std::cmp::Reverse(e.prefix.prefix_len()));
    Ok(Box::new(Ip6NdAdvertiser {
        entries,
        router,
        announce: unsolicited,
        rounds: 0,
        timer_at: None,
        reject_port: (ports.noutputs() > 1).then_some(1),
        advertisements: 0,
        unsolicited: 0,
        dad_answers: 0,
        rejects: [0; Reject::ALL.len()],
    }))
}

/// Answers Neighbor Solicitations for configured prefixes.
#[derive(Debug)]
pub struct Ip6NdAdvertiser {
    entries: Vec<Entry>,
    router: bool,
    /// UNSOLICITED: announce the /128 addresses at start-up.
    announce: bool,
    /// Rounds of unsolicited advertisements sent so far.
    rounds: u32,
    /// When the next round is due, once armed.
    timer_at: Option<u64>,
    reject_port: Option<usize>,
    advertisements: u64,
    unsolicited: u64,
    dad_answers: u64,
    rejects: [u64; Reject::ALL.len()],
}

impl Ip6NdAdvertiser {
    /// The entry that answers for `target`, if any.
    fn lookup(&self, target: Ipv6Addr) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.prefix.contains_addr(&target))
    }

    /// The prefixes, one `PREFIX ETH` line each, longest first.
    pub fn table(&self) -> String {
        let mut s = String::new();
        for e in &self.entries {
            let _ = writeln!(s, "{} {}", e.prefix, e.eth);
        }
        s
    }

    /// The advertisement answering the solicitation in `p`, or why none.
    fn answer(&self, p: &Packet) -> Result<(Packet, bool), Reject> {
        let d = p.data();
        let ip =
            super::nd_message(d, &[Icmpv6Message::NeighborSolicit], NEIGHBOR_LEN).map_err(|e| {
                match e {
                    NdCheck::Other => Reject::NotNs,
                    NdCheck::HopLimit => Reject::BadHopLimit,
                    NdCheck::Malformed => Reject::BadNd,
                    NdCheck::Checksum => Reject::BadChecksum,
                }
            })?;
        let frame_src = EthernetAddress([d[6], d[7], d[8], d[9], d[10], d[11]]);
        let msg = ip.payload();
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        let NdiscRepr::NeighborSolicit {
            target_addr,
            lladdr,
        } = NdiscRepr::parse(src, dst, &NdiscPacket::new_unchecked(msg))
            .map_err(|_| Reject::BadNd)?
        else {
            return Err(Reject::NotNs);
        };
        if frame_src.is_multicast()
            || lladdr.is_some_and(|e| e.is_multicast() || e == EthernetAddress::UNSPECIFIED)
        {
            return Err(Reject::BadSender);
        }
        let entry = self.lookup(target_addr).ok_or(Reject::UnknownTarget)?;
        let dad = src.is_unspecified();
        let (to_ip, to_eth) = if dad {
            (ALL_NODES, multicast_ethernet(ALL_NODES))
        } else {
            (src, lladdr.unwrap_or(frame_src))
        };
        let mut flags = self.router_flag();
        if !dad {
            flags = flags.union(NeighborFlags::SOLICITED);
        }
        if entry.prefix.prefix_len() == 128 {
            flags = flags.union(NeighborFlags::OVERRIDE);
        }
        let mut q = advertisement(entry.eth, to_eth, to_ip, target_addr, flags);
        let old = *p.anno();
        let a = q.anno_mut();
        *a = Annotations::default();
        a.device = old.device;
        a.vrouter = old.vrouter;
        a.timestamp = old.timestamp;
        a.packet_type = PacketType::Outgoing;
        Ok((q, dad))
    }
}

/// A Neighbor Advertisement for `target` at `eth`, from `target` to
/// `to_ip` at `to_eth`, hop limit 255, with a target link-layer address
/// option, in an Ethernet frame.
fn advertisement(
    eth: EthernetAddress,
    to_eth: EthernetAddress,
    to_ip: Ipv6Addr,
    target: Ipv6Addr,
    flags: NeighborFlags,
) -> Packet {
    let repr = NdiscRepr::NeighborAdvert {
        flags,
        target_addr: target,
        lladdr: Some(eth),
    };
    let len = repr.buffer_len();
    let mut q = Packet::new();
    // A fresh buffer has room for far more than 86 bytes.
    let _ = q.put_back(HEADER_LEN + 40 + len);
    let o = q.data_mut();
    o[..6].copy_from_slice(&to_eth.0);
    o[6..12].copy_from_slice(&eth.0);
    o[12..14].copy_from_slice(&EtherType::IPV6.0.to_be_bytes());
    Ipv6Repr {
        src_addr: target,
        dst_addr: to_ip,
        next_header: IpProtocol::ICMPV6,
        payload_len: len,
        hop_limit: HOP_LIMIT,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut Ipv6Packet::new_unchecked(&mut o[HEADER_LEN..]));
    repr.emit(
        target,
        to_ip,
        &mut NdiscPacket::new_unchecked(&mut o[HEADER_LEN + 40..]),
    );
    q
}

impl Ip6NdAdvertiser {
    /// R, or nothing when ROUTER is false.
    fn router_flag(&self) -> NeighborFlags {
        if self.router {
            NeighborFlags::ROUTER
        } else {
            NeighborFlags(0)
        }
    }

    /// One round of unsolicited advertisements: one per /128 address, to
    /// all nodes, O set, S clear (RFC 4861 section 7.2.6).
    fn unsolicited_round(&self, now: Timestamp) -> Batch {
        let mut out = Batch::new();
        let flags = self.router_flag().union(NeighborFlags::OVERRIDE);
        for e in self.entries.iter().filter(|e| e.prefix.prefix_len() == 128) {
            let mut q = advertisement(
                e.eth,
                multicast_ethernet(ALL_NODES),
                ALL_NODES,
                e.prefix.address(),
                flags,
            );
            let a = q.anno_mut();
            a.timestamp = now;
            a.packet_type = PacketType::Outgoing;
            if out.push(q).is_err() {
                // More addresses than a batch holds: the rest wait for
                // the next round (no element is given that many).
                break;
            }
        }
        out
    }

    /// Whether another round of unsolicited advertisements is due.
    fn announcing(&self) -> bool {
        self.announce
            && self.rounds < MAX_NEIGHBOR_ADVERTISEMENT
            && self.entries.iter().any(|e| e.prefix.prefix_len() == 128)
    }

    fn arm(&mut self, cx: &mut Context<'_>, at: u64) {
        if self.timer_at.is_none_or(|t| at < t) {
            cx.schedule_at(Timestamp(at));
            self.timer_at = Some(at);
        }
    }
}

impl Element for Ip6NdAdvertiser {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut answers = Batch::new();
        let mut rejected = Batch::new();
        for p in batch.drain() {
            match self.answer(&p) {
                Ok((q, dad)) => {
                    self.advertisements += 1;
                    self.dad_answers += u64::from(dad);
                    emit(&mut answers, q, 0, cx);
                }
                Err(why) => {
                    self.rejects[why as usize] += 1;
                    if let Some(port) = self.reject_port {
                        emit(&mut rejected, p, port, cx);
                    }
                }
            }
        }
        cx.push(0, &mut answers);
        if let Some(port) = self.reject_port {
            cx.push(port, &mut rejected);
        }
    }

    fn start(&mut self, cx: &mut Context<'_>) {
        // The graph runs once per worker: one of them announces.
        if cx.worker() == 0 && self.announcing() {
            let now = cx.now().0;
            let at = if self.rounds == 0 {
                now
            } else {
                now.saturating_add(RETRANS_TIMER)
            };
            self.arm(cx, at);
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        let now = cx.now();
        if self.timer_at.is_none_or(|t| t > now.0) {
            return;
        }
        self.timer_at = None;
        if !self.announcing() {
            return;
        }
        let mut out = self.unsolicited_round(now);
        self.rounds += 1;
        self.unsolicited += out.len() as u64;
        cx.push(0, &mut out);
        if self.announcing() {
            self.arm(cx, now.0.saturating_add(RETRANS_TIMER));
        }
    }

    /// A new configuration with the same addresses does not announce
    /// them again; the counters carry over.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<Ip6NdAdvertiser>(old) else {
            return;
        };
        self.advertisements = old.advertisements;
        self.unsolicited = old.unsolicited;
        self.dad_answers = old.dad_answers;
        self.rejects = old.rejects;
        if self.entries == old.entries {
            // Announced already, or not meant to be: the neighbours'
            // caches are right.
            self.rounds = if old.announce {
                old.rounds
            } else {
                MAX_NEIGHBOR_ADVERTISEMENT
            };
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("advertisements", self.advertisements);
        s.counter("unsolicited", self.unsolicited);
        s.counter("dad_answers", self.dad_answers);
        for r in Reject::ALL {
            s.counter(r.as_str(), self.rejects[r as usize]);
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "table").then(|| self.table())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::testdata::*;
    use bricks_runtime::testing::{make_element, Harness};
    use bricks_wire::icmpv6::Icmpv6Packet;

    fn advertiser(args: &str) -> Harness {
        Harness::push(&CLASS, args, 1, 2)
    }

    fn a() -> Harness {
        advertiser("2001:db8::1/128 52:54:00:aa:00:01")
    }

    #[test]
    fn answers_a_solicitation_byte_for_byte() {
        let mut h = a();
        h.push_bytes(0, &B_NS_A);
        let out = h.take_bytes(0);
        assert_eq!(out, vec![A_NA_B.to_vec()]);
        // The wire crate agrees: hop limit 255, checksum right.
        let ip = Ipv6Packet::new_checked(&out[0][14..]).unwrap();
        assert_eq!(ip.hop_limit(), 255);
        let nd = NdiscPacket::new_checked(ip.payload()).unwrap();
        let repr = NdiscRepr::parse(ip.src_addr(), ip.dst_addr(), &nd).unwrap();
        assert_eq!(
            repr,
            NdiscRepr::NeighborAdvert {
                flags: NeighborFlags(0xe0),
                target_addr: A_IP6,
                lladdr: Some(A_MAC)
            }
        );
        assert_eq!(h.stats().get("advertisements"), Some(1));
    }

    #[test]
    fn duplicate_address_detection_is_answered_to_all_nodes() {
        let mut h = a();
        h.push_bytes(0, &B_DAD_A);
        assert_eq!(h.take_bytes(0), vec![A_NA_DAD.to_vec()]);
        assert_eq!(h.stats().get("dad_answers"), Some(1));
    }

    #[test]
    fn hostile_solicitations_are_not_answered() {
        let mut h = a();
        // Hop limit 64.
        let mut f = B_NS_A;
        f[21] = 64;
        h.push_bytes(0, &f);
        // A wrong checksum.
        let mut f = B_NS_A;
        f[57] ^= 0x40;
        h.push_bytes(0, &f);
        // A zero-length option, checksum fixed up.
        let mut f = B_NS_A;
        f[79] = 0;
        Icmpv6Packet::new_unchecked(&mut f[54..]).fill_checksum(B_IP6, solicited(A_IP6));
        h.push_bytes(0, &f);
        // Truncated.
        h.push_bytes(0, &B_NS_A[..60]);
        // An advertisement is not a solicitation.
        h.push_bytes(0, &A_NA_B);
        // For someone else.
        let mut f = B_NS_A;
        f[77] = 9;
        Icmpv6Packet::new_unchecked(&mut f[54..]).fill_checksum(B_IP6, solicited(A_IP6));
        h.push_bytes(0, &f);
        // From a group Ethernet address.
        let mut f = B_NS_A;
        f[6] = 0x33;
        h.push_bytes(0, &f);
        assert!(h.take(0).is_empty());
        assert_eq!(h.take(1).len(), 7, "all out of output 1");
        let s = h.stats();
        for (c, n) in [
            ("bad_hop_limit", 1),
            ("bad_checksum", 1),
            ("bad_nd", 1),
            ("not_ns", 2),
            ("unknown_target", 1),
            ("bad_sender", 1),
            ("advertisements", 0),
        ] {
            assert_eq!(s.get(c), Some(n), "{c}");
        }
    }

    fn solicited(a: Ipv6Addr) -> Ipv6Addr {
        bricks_wire::ndisc::solicited_node(a)
    }

    #[test]
    fn prefixes_answer_as_a_proxy_without_override() {
        let mut h = advertiser("2001:db8:: ffff:ffff:ffff:ffff:: 52:54:00:cc:00:03, ROUTER false");
        h.push_bytes(0, &B_NS_A);
        let out = h.take_bytes(0);
        let ip = Ipv6Packet::new_checked(&out[0][14..]).unwrap();
        let nd = NdiscPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(nd.neighbor_flags(), NeighborFlags::SOLICITED);
        assert_eq!(&out[0][6..12], &[0x52, 0x54, 0, 0xcc, 0, 3]);
        assert_eq!(
            h.read_handler("table").unwrap(),
            "2001:db8::/64 52:54:00:cc:00:03\n"
        );
    }

    #[test]
    fn unsolicited_advertisements_at_start() {
        let mut h = advertiser(
            "2001:db8::1/128 52:54:00:aa:00:01, 2001:db8:5::/64 52:54:00:aa:00:01, \
             fe80::1 52:54:00:aa:00:01",
        );
        let t0 = h.now();
        h.start();
        assert_eq!(h.timers(), vec![t0], "the first round at once");
        let mut sent = Vec::new();
        for round in 0..MAX_NEIGHBOR_ADVERTISEMENT as u64 {
            let t = Timestamp(t0.0 + round * RETRANS_TIMER);
            // Nothing before the round is due.
            h.advance_to(Timestamp(t.0 - 1));
            assert!(h.take(0).is_empty() || round == 0);
            h.advance_to(t);
            let out = h.take_bytes(0);
            // One per /128 address, none for the proxied /64.
            assert_eq!(out.len(), 2, "round {round}");
            sent.extend(out);
        }
        // Bounded: no fourth round, no timer left.
        assert!(h.timers().is_empty());
        h.advance_to(Timestamp(t0.0 + 10 * RETRANS_TIMER));
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("unsolicited"), Some(6));
        assert_eq!(h.stats().get("advertisements"), Some(0));
        // Byte for byte the frame a DAD probe is answered with: to
        // ff02::1 at 33:33:00:00:00:01, from the address, hop limit 255,
        // R and O set, S clear, the target link-layer address option.
        assert_eq!(sent[0], A_NA_DAD.to_vec());
        let ll: Ipv6Addr = "fe80::1".parse().unwrap();
        for f in &sent {
            let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
            assert_eq!(ip.hop_limit(), 255);
            assert_eq!(ip.dst_addr(), ALL_NODES);
            let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
            assert!(icmp.verify_checksum(ip.src_addr(), ip.dst_addr()));
            let nd = NdiscPacket::new_checked(ip.payload()).unwrap();
            let repr = NdiscRepr::parse(ip.src_addr(), ip.dst_addr(), &nd).unwrap();
            let NdiscRepr::NeighborAdvert {
                flags,
                target_addr,
                lladdr,
            } = repr
            else {
                panic!("{repr:?}")
            };
            assert_eq!(flags, NeighborFlags::ROUTER.union(NeighborFlags::OVERRIDE));
            assert!(target_addr == A_IP6 || target_addr == ll);
            assert_eq!(ip.src_addr(), target_addr);
            assert_eq!(lladdr, Some(A_MAC));
        }
    }

    #[test]
    fn unsolicited_advertisements_can_be_turned_off() {
        let mut h = advertiser("2001:db8::1/128 52:54:00:aa:00:01, UNSOLICITED false");
        h.start();
        assert!(h.timers().is_empty());
        // A proxy for prefixes only has no address of its own to announce.
        let mut h = advertiser("2001:db8::/64 52:54:00:aa:00:01");
        h.start();
        assert!(h.timers().is_empty());
        // ROUTER false: O alone.
        let mut h = advertiser("2001:db8::1/128 52:54:00:aa:00:01, ROUTER false");
        let t0 = h.now();
        h.start();
        h.advance_to(t0);
        let out = h.take_bytes(0);
        let ip = Ipv6Packet::new_checked(&out[0][14..]).unwrap();
        let nd = NdiscPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(nd.neighbor_flags(), NeighborFlags::OVERRIDE);
    }

    #[test]
    fn argument_forms() {
        let ok = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        ok("2001:db8::1 52:54:00:aa:00:01, fe80::1/128 52:54:00:aa:00:01").unwrap();
        assert!(ok("").is_err());
        assert!(ok("2001:db8::1").is_err());
        assert!(ok("2001:db8::1 ff:ff:ff:ff:ff:ff").is_err());
        assert!(ok("2001:db8::1 ffff:0:ffff:: 52:54:00:aa:00:01").is_err());
        assert!(ok("2001:db8::1 52:54:00:aa:00:01, TIMEOUT 3").is_err());
        assert!(ok("2001:db8::1 52:54:00:aa:00:01, UNSOLICITED maybe").is_err());
        ok("2001:db8::1 52:54:00:aa:00:01, UNSOLICITED false").unwrap();
    }
}
