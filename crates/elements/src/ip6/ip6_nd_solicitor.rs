//! `IP6NDSolicitor`: encapsulates IPv6 packets in Ethernet headers whose
//! destination it finds with Neighbor Discovery (RFC 4861 section 7.2),
//! holding packets while it asks. Click's element of the same name, the
//! IPv6 counterpart of `ARPQuerier`.
//!
//! The datapath is here; the Neighbor Cache, its states and bounds are in
//! [`super::nd_cache`], shared by every worker's instance (`Args::shared`)
//! because an advertisement reaches whichever worker the NIC steered it
//! to. Packets waiting for an answer stay on the worker that received
//! them; it learns that another worker resolved their address from the
//! cache's generation counter, as `ARPQuerier` does.

use super::emit;
use super::nd_cache::{
    Held, HoldRefusal, NdCache, NdRefusal, NdTiming, Resolve, Retry, Waiting, MAX_ENTRY_CAPACITY,
    RECHECK_INTERVAL,
};
use super::NdCheck;
use crate::ether::arp_table::SEC;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats,
};
use bricks_packet::{PacketType, Timestamp};
use bricks_wire::ethernet::{EtherType, EthernetAddress, HEADER_LEN};
use bricks_wire::icmpv6::Icmpv6Message;
use bricks_wire::ip::IpProtocol;
use bricks_wire::ipv6::{Ipv6Cidr, Ipv6Packet, Ipv6Repr};
use bricks_wire::ndisc::{
    multicast_ethernet, solicited_node, NdiscPacket, NdiscRepr, HOP_LIMIT, NEIGHBOR_LEN,
};
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::Ipv6Addr;
use std::sync::Arc;
use std::time::Duration;

/// The `IP6NDSolicitor` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IP6NDSolicitor",
    ports: "2/1-2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

const KEYWORDS: [&str; 10] = [
    "IP",
    "ETH",
    "LINK_LOCAL",
    "CAPACITY",
    "ENTRY_CAPACITY",
    "ENTRY_PACKET_CAPACITY",
    "REACHABLE_TIME",
    "RETRANS_TIMER",
    "MAX_MULTICAST_SOLICIT",
    "QUERY_RATE",
];

static MANUAL: Manual = Manual {
    summary: "encapsulates IPv6 packets in Ethernet headers found via Neighbor Discovery",
    synopsis: "IP6NDSolicitor(IP, ETH [, KEYWORDS])\nIP6NDSolicitor(IP/LEN, ETH [, KEYWORDS])",
    description: "Handles the sending side of IPv6 Neighbor Discovery (RFC 4861) for one \
        interface whose IPv6 address is IP and Ethernet address ETH. \
        \n\nInput 0 takes IPv6 packets (no Ethernet header) whose destination IPv6 \
        annotation holds the next hop, as LookupIP6Route sets it; when the annotation is \
        :: the IPv6 destination is used (bricks). If the next \
        hop's Ethernet address is known the packet gets an Ethernet header (type 0x86dd, \
        source ETH) and leaves on output 0; packets for multicast groups go to 33:33 and \
        the group's low 32 bits (RFC 2464) without a solicitation. Otherwise the packet is \
        held and a Neighbor Solicitation goes out on output 0: from IP to the target's \
        solicited-node group ff02::1:ffXX:XXXX at 33:33:ff:XX:XX:XX, hop limit 255, with \
        a source link-layer address option (ETH). It is sent again every RETRANS_TIMER; \
        when MAX_MULTICAST_SOLICIT solicitations went unanswered the held packets are \
        given up: they leave on output 1 if it is connected (IPv6 packets as they came, \
        for ICMP6Error's address unreachable, type 1 code 3) and are dropped otherwise, \
        counted in `no_reply` either way. \
        \n\nThe Neighbor Cache keeps RFC 4861's states (section 7.3.2): INCOMPLETE, \
        REACHABLE after a solicited advertisement for a random 0.5 to 1.5 times \
        REACHABLE_TIME (drawn at each, section 6.3.2), STALE after that, \
        DELAY when a packet uses a STALE entry, PROBE five seconds later (a unicast \
        solicitation to the known address, up to three, every RETRANS_TIMER as packets \
        come; then the entry goes and the next packet starts over). Packets flow \
        throughout. Transitions happen as packets use entries, not on timers. \
        \n\nInput 1 takes Ethernet frames carrying Neighbor Advertisements and \
        Solicitations (other frames are counted in `not_nd`). A message is used only if \
        its hop limit is 255 (`bad_hop_limit`: it may have crossed a router, section \
        7.1.1), its checksum is right (`bad_checksum`), and its code is 0, its options \
        well formed (none of length zero) and its addresses follow sections 7.1.1 and \
        7.1.2 (`bad_nd`); IPv6 extension headers in front of the message are not \
        followed (`not_nd`). Frames sent to another Ethernet unicast address than ETH are \
        `other_interface`; link-layer address options holding a group, all-zero or our \
        own address are `bad_mac`. An advertisement only changes an entry that exists, \
        by section 7.2.5's rules: it resolves an INCOMPLETE entry (REACHABLE if solicited, \
        STALE if not) and sends what waited, if it carries the target's link-layer \
        address (`no_link_address` if not); without the O flag it never changes a known \
        address (`no_override`); for an address nobody asked about it does nothing \
        (`unsolicited`). A solicitation for IP with a source link-layer address makes or \
        updates a STALE entry for its sender (section 7.2.3), as does one for \
        LINK_LOCAL if given, unless IP has a prefix \
        length and the sender is neither link-local nor in the prefix (`off_subnet`); \
        entries learnt only that way fill at most half the cache and only evict one \
        another, so a flood of solicitations from forged sources never evicts a \
        neighbour the element resolved. Answering solicitations is IP6NDAdvertiser's \
        job: give it a copy of them. \
        \n\nAt most CAPACITY packets wait on each worker, ENTRY_PACKET_CAPACITY for one \
        address. When an address's packets fill ENTRY_PACKET_CAPACITY, a new one replaces the \
        oldest (RFC 4861 section 7.2.2); when the worker's fill CAPACITY, the new one is \
        dropped; both count in `hold_overflow`. The cache holds at \
        most ENTRY_CAPACITY entries (rounded up to a multiple of 16): a new one evicts \
        entries learnt from solicitations first, then unresolved ones, then the least \
        recently used (static entries never). At most QUERY_RATE new addresses a second \
        are solicited, and so enter the cache (`query_rate_limited`). \
        \n\nThe cache is shared by every worker running this element; held packets stay \
        on their worker, which sends them within a millisecond of the answer reaching any \
        worker. Write handlers: `insert IP6 ETH` adds a static entry (never probed, not \
        changed by the link), `delete IP6` removes an entry, `clear` removes every entry \
        and drops this worker's held packets.",
    ports: "input 0: IPv6 packets, push; input 1: Ethernet frames with ND messages, push; \
        output 0: Ethernet frames and solicitations, push; optional output 1: IPv6 packets \
        given up as unreachable, push",
    keywords: &[
        Keyword {
            name: "LINK_LOCAL",
            ty: "IPv6 address",
            default: None,
            doc: "the interface's link-local address (bricks): solicitations for it teach \
                  their sender as those for IP do, and solicitations for link-local \
                  neighbours come from it",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned",
            default: Some("2048"),
            doc: "most packets held on one worker while addresses are resolved; 0 for no limit",
        },
        Keyword {
            name: "ENTRY_CAPACITY",
            ty: "unsigned",
            default: Some("4096"),
            doc: "most cache entries, unresolved ones included; 1 to 1048576",
        },
        Keyword {
            name: "ENTRY_PACKET_CAPACITY",
            ty: "unsigned",
            default: Some("64"),
            doc: "most packets held for one address; 0 for no limit",
        },
        Keyword {
            name: "REACHABLE_TIME",
            ty: "duration",
            default: Some("30s"),
            doc: "BaseReachableTime: a solicited advertisement keeps a neighbour REACHABLE \
                  for a random 0.5 to 1.5 times this",
        },
        Keyword {
            name: "RETRANS_TIMER",
            ty: "duration",
            default: Some("1s"),
            doc: "time between solicitations for one address",
        },
        Keyword {
            name: "MAX_MULTICAST_SOLICIT",
            ty: "unsigned",
            default: Some("3"),
            doc: "multicast solicitations before an address is given up; at least 1",
        },
        Keyword {
            name: "QUERY_RATE",
            ty: "unsigned",
            default: Some("256"),
            doc: "most multicast solicitations a second from this interface; 0 for no limit",
        },
    ],
    counters: &[
        (
            "solicitations",
            "Neighbor Solicitations sent, probes included",
        ),
        (
            "probes",
            "unicast solicitations sent to confirm a known neighbour",
        ),
        (
            "advertisements",
            "Neighbor Advertisements that changed the cache",
        ),
        (
            "learnt",
            "Neighbor Solicitations whose sender the cache recorded",
        ),
        (
            "drops",
            "IPv6 packets dropped or given up, all reasons below together",
        ),
        ("no_dst", "IPv6 packets without a next hop"),
        (
            "no_reply",
            "held packets given up after MAX_MULTICAST_SOLICIT",
        ),
        (
            "hold_overflow",
            "packets dropped for CAPACITY, or the oldest for ENTRY_PACKET_CAPACITY",
        ),
        (
            "unresolved",
            "IPv6 packets dropped because their next hop could not enter the cache \
            (QUERY_RATE used up, or the cache full of entries it may not evict)",
        ),
        (
            "cleared",
            "held packets dropped by the clear and delete handlers",
        ),
        ("no_headroom", "IPv6 packets without 14 bytes of headroom"),
        (
            "held_at_shutdown",
            "packets still held when the router stopped",
        ),
        (
            "not_nd",
            "frames on input 1 that are not IPv6 Neighbor Solicitations or Advertisements",
        ),
        ("bad_hop_limit", "ND messages whose hop limit is not 255"),
        ("bad_checksum", "ND messages with a wrong checksum"),
        (
            "bad_nd",
            "ND messages with a code, option or address RFC 4861 forbids",
        ),
        (
            "other_interface",
            "ND frames sent to another unicast Ethernet address",
        ),
        (
            "bad_mac",
            "ND messages whose link-layer address is a group, zero or ours",
        ),
        (
            "off_subnet",
            "solicitations from outside IP's prefix and not link-local",
        ),
        (
            "unsolicited",
            "advertisements for an address not in the cache",
        ),
        (
            "no_override",
            "advertisements without O that would change a known address",
        ),
        (
            "no_link_address",
            "advertisements for an unresolved address without its link-layer address",
        ),
        (
            "table_full",
            "new entries refused: the cache is full of entries they may not evict",
        ),
        (
            "query_rate_limited",
            "new addresses not solicited because QUERY_RATE was used up",
        ),
        (
            "evictions",
            "entries evicted to make room (worker 0 reports them)",
        ),
        (
            "entries",
            "entries in the cache now (worker 0 reports them)",
        ),
        ("count", "the same as entries"),
        ("held", "packets held on this worker now"),
        ("length", "the same as held"),
    ],
    example: "InfiniteSource(DATA \\<60 00 00 00 00 00 3b 40 20 01 0d b8 00 00 00 00 00 00 00 00 \
        00 00 00 01 20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02>, LIMIT 2) \
        -> nd :: IP6NDSolicitor(2001:db8::1/64, 52:54:00:aa:00:01) -> Discard; \
        Idle -> [1]nd; nd[1] -> Discard;",
    see_also: &["IP6NDAdvertiser", "ARPQuerier", "ICMP6Error"],
};

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(Ip6NdSolicitor::from_args(args, ports)?))
}

/// Reads `IP[/LEN]` as a prefix (/128 without a length).
fn parse_ip(text: &str) -> Result<Ipv6Cidr, String> {
    let t = text.trim();
    if t.contains('/') {
        t.parse::<Ipv6Cidr>().map_err(|e| e.to_string())
    } else {
        Ipv6Addr::from_arg(t).map(|a| Ipv6Cidr::new(a, 128))
    }
}

impl Ip6NdSolicitor {
    /// Builds the element from its arguments.
    pub fn from_args(args: &mut Args<'_>, ports: &PortInfo) -> Result<Ip6NdSolicitor, ArgError> {
        let capacity: usize = args.read("CAPACITY")?.unwrap_or(2048);
        let entry_capacity: usize = args.read("ENTRY_CAPACITY")?.unwrap_or(4096);
        if entry_capacity == 0 || entry_capacity > MAX_ENTRY_CAPACITY {
            return Err(ArgError::new(format!(
                "ENTRY_CAPACITY must be 1 to {MAX_ENTRY_CAPACITY}, not {entry_capacity}"
            )));
        }
        let entry_packet_capacity: usize = args.read("ENTRY_PACKET_CAPACITY")?.unwrap_or(64);
        let mut timing = NdTiming::default();
        if let Some(d) = args.read::<Duration>("REACHABLE_TIME")? {
            timing.reachable_time = duration_ns(d);
        }
        if let Some(d) = args.read::<Duration>("RETRANS_TIMER")? {
            timing.retrans_timer = duration_ns(d).max(1);
        }
        if let Some(n) = args.read::<u32>("MAX_MULTICAST_SOLICIT")? {
            if n == 0 {
                return Err(ArgError::new("MAX_MULTICAST_SOLICIT must be at least 1"));
            }
            timing.max_multicast_solicit = n;
        }
        let query_rate: u32 = args.read("QUERY_RATE")?.unwrap_or(256);
        let link_local: Option<Ipv6Addr> = args.read("LINK_LOCAL")?;
        if link_local.is_some_and(|a| !a.is_unicast_link_local()) {
            return Err(ArgError::new(
                "LINK_LOCAL must be a link-local unicast address (fe80::/10)",
            ));
        }
        let mut ip: Option<String> = args.read("IP")?;
        let mut eth: Option<EthernetAddress> = args.read("ETH")?;
        let mut positional = Vec::new();
        for (text, span) in args.rest() {
            if text.trim().is_empty() {
                continue;
            }
            if let (Some(k), _) = bricks_config::split_keyword(text) {
                let e = ArgError::at(span, format!("unknown keyword {k}"));
                return Err(match bricks_config::suggest(k, KEYWORDS) {
                    Some(s) => e.with_help(format!("did you mean {s}?")),
                    None => e.with_help(format!("keywords: {}", KEYWORDS.join(", "))),
                });
            }
            positional.push((text.to_string(), span));
        }
        let mut rest = positional.into_iter();
        if ip.is_none() {
            ip = rest.next().map(|(t, _)| t);
        }
        if eth.is_none() {
            if let Some((t, span)) = rest.next() {
                eth = Some(EthernetAddress::from_arg(t.trim()).map_err(|why| {
                    ArgError::at(
                        span,
                        format!("bad argument ETH: expected Ethernet address, {why}"),
                    )
                })?);
            }
        }
        if let Some((_, span)) = rest.next() {
            return Err(ArgError::at(span, "too many arguments").with_help("arguments: IP, ETH"));
        }
        let ip = ip.ok_or_else(|| ArgError::new("missing mandatory argument IP"))?;
        let ip = parse_ip(&ip).map_err(|why| {
            ArgError::new(format!("bad argument IP: expected IPv6 address, {why}"))
        })?;
        let eth = eth.ok_or_else(|| ArgError::new("missing mandatory argument ETH"))?;
        if ip.address().is_unspecified() || ip.address().is_multicast() {
            return Err(ArgError::new("IP must be a unicast IPv6 address"));
        }
        let cache = args.shared(|_| Ok(NdCache::new(entry_capacity, query_rate, timing)))?;
        cache.attach();
        Ok(Ip6NdSolicitor {
            prefix: (ip.prefix_len() < 128).then(|| ip.network()),
            my_ip: ip.address(),
            link_local,
            my_eth: eth,
            unreachable_port: (ports.noutputs() > 1).then_some(1),
            cache,
            waiting: Waiting::new(capacity, entry_packet_capacity),
            timer_at: None,
            recheck_at: None,
            worker: None,
            now: Timestamp(0),
            c: Counters::default(),
        })
    }
}

#[derive(Debug, Default)]
struct Counters {
    solicitations: u64,
    probes: u64,
    advertisements: u64,
    learnt: u64,
    no_dst: u64,
    no_reply: u64,
    hold_overflow: u64,
    unresolved: u64,
    cleared: u64,
    no_headroom: u64,
    held_at_shutdown: u64,
    not_nd: u64,
    bad_hop_limit: u64,
    bad_checksum: u64,
    bad_nd: u64,
    other_interface: u64,
    bad_mac: u64,
    off_subnet: u64,
    unsolicited: u64,
    no_override: u64,
    no_link_address: u64,
    table_full: u64,
    query_rate_limited: u64,
}

impl Counters {
    fn drops(&self) -> u64 {
        self.no_dst
            + self.no_reply
            + self.hold_overflow
            + self.unresolved
            + self.cleared
            + self.no_headroom
            + self.held_at_shutdown
    }
}

/// Resolves IPv6 next hops with Neighbor Discovery and encapsulates.
#[derive(Debug)]
pub struct Ip6NdSolicitor {
    /// IP's prefix, when IP was given with a length shorter than 128.
    prefix: Option<Ipv6Cidr>,
    my_ip: Ipv6Addr,
    /// LINK_LOCAL.
    link_local: Option<Ipv6Addr>,
    my_eth: EthernetAddress,
    /// Where packets given up go, if anywhere.
    unreachable_port: Option<usize>,
    cache: Arc<NdCache>,
    waiting: Waiting,
    timer_at: Option<u64>,
    recheck_at: Option<u64>,
    worker: Option<usize>,
    now: Timestamp,
    c: Counters,
}

impl Drop for Ip6NdSolicitor {
    fn drop(&mut self) {
        self.cache.detach();
    }
}

/// A validated ND message from input 1.
enum Nd {
    Solicit {
        src: Ipv6Addr,
        target: Ipv6Addr,
        lladdr: Option<EthernetAddress>,
    },
    Advert {
        repr: NdiscRepr,
    },
}

/// Why a frame on input 1 taught nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reject {
    NotNd,
    BadHopLimit,
    BadChecksum,
    BadNd,
    OtherInterface,
    BadMac,
}

/// The next hop: the annotation, or the IPv6 destination when unset.
#[inline]
fn next_hop(p: &Packet) -> Ipv6Addr {
    let a = p.anno().dst_ip6;
    if !a.is_unspecified() {
        return a;
    }
    let h = p.l3_bytes();
    match Ipv6Packet::new_checked(h) {
        Ok(ip) if ip.version() == 6 => ip.dst_addr(),
        _ => Ipv6Addr::UNSPECIFIED,
    }
}

impl Ip6NdSolicitor {
    /// The cache as text: one `IP6 STATE ETH AGE` line per entry in
    /// address order, ages in seconds as of the last packet or timer.
    pub fn table(&self) -> String {
        let mut s = String::new();
        for e in self.cache.entries(self.now.0) {
            let _ = writeln!(
                s,
                "{} {} {} {}.{:03}",
                e.addr,
                e.state.as_str(),
                if e.state == super::nd_cache::NdState::Incomplete {
                    EthernetAddress::UNSPECIFIED
                } else {
                    e.eth
                },
                e.age / SEC,
                e.age % SEC / 1_000_000
            );
        }
        s
    }

    fn arm(&mut self, cx: &mut Context<'_>, at: u64) {
        if self.timer_at.is_none_or(|t| at < t) {
            cx.schedule_at(Timestamp(at));
            self.timer_at = Some(at);
        }
    }

    fn arm_recheck(&mut self, cx: &mut Context<'_>, now: u64) {
        if self.recheck_at.is_none() && self.waiting.held() > 0 && self.cache.shared() {
            let at = now.saturating_add(RECHECK_INTERVAL);
            cx.schedule_at(Timestamp(at));
            self.recheck_at = Some(at);
        }
    }

    /// A Neighbor Solicitation for `target`: multicast to its
    /// solicited-node group, or unicast to `to` (a probe).
    fn solicitation(
        &mut self,
        target: Ipv6Addr,
        to: Option<EthernetAddress>,
        stamp: Timestamp,
    ) -> Packet {
        let (dst_ip, dst_eth) = match to {
            Some(eth) => (target, eth),
            None => {
                let g = solicited_node(target);
                (g, multicast_ethernet(g))
            }
        };
        // A link-local neighbour is asked from our link-local address
        // when we know it, as Linux does; anyone else from IP.
        let src_ip = match self.link_local {
            Some(ll) if target.is_unicast_link_local() => ll,
            _ => self.my_ip,
        };
        let repr = NdiscRepr::NeighborSolicit {
            target_addr: target,
            lladdr: Some(self.my_eth),
        };
        let len = repr.buffer_len();
        let mut q = Packet::new();
        // A fresh buffer has room for far more than 86 bytes.
        let _ = q.put_back(HEADER_LEN + 40 + len);
        let d = q.data_mut();
        d[..6].copy_from_slice(&dst_eth.0);
        d[6..12].copy_from_slice(&self.my_eth.0);
        d[12..14].copy_from_slice(&EtherType::IPV6.0.to_be_bytes());
        Ipv6Repr {
            src_addr: src_ip,
            dst_addr: dst_ip,
            next_header: IpProtocol::ICMPV6,
            payload_len: len,
            hop_limit: HOP_LIMIT,
            traffic_class: 0,
            flow_label: 0,
        }
        .emit(&mut Ipv6Packet::new_unchecked(&mut d[HEADER_LEN..]));
        repr.emit(
            src_ip,
            dst_ip,
            &mut NdiscPacket::new_unchecked(&mut d[HEADER_LEN + 40..]),
        );
        let a = q.anno_mut();
        a.timestamp = stamp;
        a.packet_type = PacketType::Outgoing;
        self.c.solicitations += 1;
        if to.is_some() {
            self.c.probes += 1;
        }
        q
    }

    #[inline]
    fn send(&mut self, mut p: Packet, dst: EthernetAddress, out: &mut Batch, cx: &mut Context<'_>) {
        if p.push_front(HEADER_LEN).is_err() {
            self.c.no_headroom += 1;
            return;
        }
        if let Some(h) = p.data_mut().first_chunk_mut::<HEADER_LEN>() {
            h[..6].copy_from_slice(&dst.0);
            h[6..12].copy_from_slice(&self.my_eth.0);
            h[12..].copy_from_slice(&EtherType::IPV6.0.to_be_bytes());
        }
        emit(out, p, 0, cx);
    }

    fn send_all(
        &mut self,
        held: VecDeque<Packet>,
        dst: EthernetAddress,
        out: &mut Batch,
        cx: &mut Context<'_>,
    ) {
        for p in held {
            self.send(p, dst, out, cx);
        }
    }

    /// Gives up packets: out of output 1, or dropped.
    fn give_up(&mut self, held: VecDeque<Packet>, cx: &mut Context<'_>) {
        self.c.no_reply += held.len() as u64;
        if let Some(port) = self.unreachable_port {
            let mut out = Batch::new();
            for p in held {
                emit(&mut out, p, port, cx);
            }
            cx.push(port, &mut out);
        }
    }

    fn flush_resolved(&mut self, cx: &mut Context<'_>) {
        let resolved = self.waiting.take_resolved(&self.cache, self.now.0);
        if resolved.is_empty() {
            return;
        }
        let mut out = Batch::new();
        for (eth, held) in resolved {
            self.send_all(held, eth, &mut out, cx);
        }
        cx.push(0, &mut out);
    }

    fn enter(&mut self, cx: &Context<'_>) -> Timestamp {
        let now = cx.now();
        self.now = now;
        self.worker = Some(cx.worker());
        now
    }

    fn handle_ip(&mut self, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = self.enter(cx);
        self.flush_resolved(cx);
        let mut out = Batch::new();
        let mut queries = Batch::new();
        for p in batch.drain() {
            let dst = next_hop(&p);
            if dst.is_unspecified() {
                self.c.no_dst += 1;
                continue;
            }
            if dst.is_multicast() {
                self.send(p, multicast_ethernet(dst), &mut out, cx);
                continue;
            }
            match self.cache.resolve(dst, now.0) {
                Resolve::Send { eth, probe } => {
                    if let Some(held) = self.waiting.take(dst) {
                        self.send_all(held, eth, &mut out, cx);
                    }
                    if probe {
                        let q = self.solicitation(dst, Some(eth), p.anno().timestamp);
                        emit(&mut queries, q, 0, cx);
                    }
                    self.send(p, eth, &mut out, cx);
                }
                Resolve::Hold { solicit, next_at } => {
                    let stamp = p.anno().timestamp;
                    match self.waiting.hold(dst, p, next_at) {
                        Ok(Held::Kept) => {}
                        // The oldest of a full queue, or the newest packet
                        // when the worker's is full, dropped.
                        Ok(Held::Replaced(_)) | Err(HoldRefusal::Full) => self.c.hold_overflow += 1,
                    }
                    if solicit {
                        let q = self.solicitation(dst, None, stamp);
                        emit(&mut queries, q, 0, cx);
                    }
                    self.arm(cx, next_at);
                }
                Resolve::Refused(r) => {
                    self.count_refusal(r);
                    self.c.unresolved += 1;
                }
            }
        }
        self.arm_recheck(cx, now.0);
        cx.push(0, &mut queries);
        cx.push(0, &mut out);
    }

    fn count_refusal(&mut self, r: NdRefusal) {
        match r {
            NdRefusal::RateLimited => self.c.query_rate_limited += 1,
            NdRefusal::Full => self.c.table_full += 1,
            NdRefusal::Unsolicited => self.c.unsolicited += 1,
            NdRefusal::NoOverride => self.c.no_override += 1,
            NdRefusal::NoLinkAddress => self.c.no_link_address += 1,
            NdRefusal::Static => {}
        }
    }

    fn run_due(&mut self, cx: &mut Context<'_>, now: Timestamp) {
        let mut queries = Batch::new();
        for addr in self.waiting.due(now.0) {
            match self.cache.retransmit(addr, now.0) {
                Retry::Resolved(eth) => {
                    if let Some(held) = self.waiting.take(addr) {
                        let mut out = Batch::new();
                        self.send_all(held, eth, &mut out, cx);
                        cx.push(0, &mut out);
                    }
                }
                Retry::Wait { solicit, next_at } => {
                    if solicit {
                        let q = self.solicitation(addr, None, now);
                        emit(&mut queries, q, 0, cx);
                    } else if now.0 >= next_at {
                        self.c.query_rate_limited += 1;
                    }
                    self.waiting.reschedule(addr, next_at);
                }
                Retry::GiveUp => {
                    if let Some(held) = self.waiting.take(addr) {
                        self.give_up(held, cx);
                    }
                }
            }
        }
        cx.push(0, &mut queries);
        if let Some(at) = self.waiting.next_due() {
            self.arm(cx, at);
        }
    }

    /// Whether `eth` may be a neighbour's address.
    fn good_mac(&self, eth: EthernetAddress) -> bool {
        eth.is_unicast() && eth != EthernetAddress::UNSPECIFIED && eth != self.my_eth
    }

    /// Reads and validates a frame from input 1.
    fn parse_nd(&self, d: &[u8]) -> Result<Nd, Reject> {
        let ip = super::nd_message(
            d,
            &[
                Icmpv6Message::NeighborSolicit,
                Icmpv6Message::NeighborAdvert,
            ],
            NEIGHBOR_LEN,
        )
        .map_err(|e| match e {
            NdCheck::Other => Reject::NotNd,
            NdCheck::HopLimit => Reject::BadHopLimit,
            NdCheck::Malformed => Reject::BadNd,
            NdCheck::Checksum => Reject::BadChecksum,
        })?;
        let dst_eth = EthernetAddress([d[0], d[1], d[2], d[3], d[4], d[5]]);
        if !dst_eth.is_multicast() && dst_eth != self.my_eth {
            return Err(Reject::OtherInterface);
        }
        let (src, dst, msg) = (ip.src_addr(), ip.dst_addr(), ip.payload());
        let repr = NdiscRepr::parse(src, dst, &NdiscPacket::new_unchecked(msg))
            .map_err(|_| Reject::BadNd)?;
        match repr {
            NdiscRepr::NeighborSolicit {
                target_addr,
                lladdr,
            } => {
                if lladdr.is_some_and(|e| !self.good_mac(e)) {
                    return Err(Reject::BadMac);
                }
                Ok(Nd::Solicit {
                    src,
                    target: target_addr,
                    lladdr,
                })
            }
            NdiscRepr::NeighborAdvert { lladdr, .. } => {
                if lladdr.is_some_and(|e| !self.good_mac(e)) {
                    return Err(Reject::BadMac);
                }
                Ok(Nd::Advert { repr })
            }
            _ => Err(Reject::NotNd),
        }
    }

    fn handle_nd(&mut self, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = self.enter(cx);
        self.flush_resolved(cx);
        let mut out = Batch::new();
        for p in batch.drain() {
            let nd = match self.parse_nd(p.data()) {
                Ok(nd) => nd,
                Err(r) => {
                    let c = &mut self.c;
                    *match r {
                        Reject::NotNd => &mut c.not_nd,
                        Reject::BadHopLimit => &mut c.bad_hop_limit,
                        Reject::BadChecksum => &mut c.bad_checksum,
                        Reject::BadNd => &mut c.bad_nd,
                        Reject::OtherInterface => &mut c.other_interface,
                        Reject::BadMac => &mut c.bad_mac,
                    } += 1;
                    continue;
                }
            };
            let (addr, result) = match nd {
                Nd::Advert {
                    repr:
                        NdiscRepr::NeighborAdvert {
                            flags,
                            target_addr,
                            lladdr,
                        },
                } => {
                    let r = self.cache.advertised(target_addr, flags, lladdr, now.0);
                    if r.is_ok() {
                        self.c.advertisements += 1;
                    }
                    (target_addr, r)
                }
                Nd::Advert { .. } => continue,
                Nd::Solicit {
                    src,
                    target,
                    lladdr,
                } => {
                    // Only solicitations for us, from a sender that can
                    // be on the link, with its address, teach anything.
                    let Some(eth) = lladdr else { continue };
                    let ours = target == self.my_ip || Some(target) == self.link_local;
                    if !ours || src.is_unspecified() {
                        continue;
                    }
                    if !src.is_unicast_link_local()
                        && self.prefix.is_some_and(|n| !n.contains_addr(&src))
                    {
                        self.c.off_subnet += 1;
                        continue;
                    }
                    let r = self.cache.solicited_by(src, eth, now.0);
                    if r.is_ok() {
                        self.c.learnt += 1;
                    }
                    (src, r)
                }
            };
            match result {
                Ok(true) => {
                    if let (Some(held), Some(eth)) =
                        (self.waiting.take(addr), self.cache.usable(addr, now.0))
                    {
                        self.send_all(held, eth, &mut out, cx);
                    }
                }
                Ok(false) => {}
                Err(r) => self.count_refusal(r),
            }
        }
        cx.push(0, &mut out);
    }
}

impl Element for Ip6NdSolicitor {
    /// Hot swap: the counters, and, when both share one Neighbor Cache
    /// (the arguments did not change), this worker's packets waiting for
    /// resolution with their timers; the cache itself is already the
    /// same. A solicitor whose cache is new starts with it empty.
    fn take_state(&mut self, old: &mut dyn Element, cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<Ip6NdSolicitor>(old) else {
            return;
        };
        self.c = std::mem::take(&mut old.c);
        if !Arc::ptr_eq(&self.cache, &old.cache)
            || (self.my_ip, self.link_local, self.my_eth) != (old.my_ip, old.link_local, old.my_eth)
        {
            return;
        }
        std::mem::swap(&mut self.waiting, &mut old.waiting);
        self.now = old.now;
        self.worker = old.worker;
        if let Some(at) = old.timer_at {
            self.arm(cx, at);
        }
        if old.recheck_at.is_some() {
            let now = cx.now().0;
            self.arm_recheck(cx, now);
        }
    }

    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if port == 0 {
            self.handle_ip(batch, cx);
        } else {
            self.handle_nd(batch, cx);
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        let now = self.enter(cx);
        if self.recheck_at.is_some_and(|t| t <= now.0) {
            self.recheck_at = None;
        }
        self.flush_resolved(cx);
        if self.timer_at.is_none_or(|t| t <= now.0) {
            self.timer_at = None;
            self.run_due(cx, now);
        }
        self.arm_recheck(cx, now.0);
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("solicitations", c.solicitations);
        s.counter("probes", c.probes);
        s.counter("advertisements", c.advertisements);
        s.counter("learnt", c.learnt);
        s.counter("drops", c.drops());
        s.counter("no_dst", c.no_dst);
        s.counter("no_reply", c.no_reply);
        s.counter("hold_overflow", c.hold_overflow);
        s.counter("unresolved", c.unresolved);
        s.counter("cleared", c.cleared);
        s.counter("no_headroom", c.no_headroom);
        s.counter("held_at_shutdown", c.held_at_shutdown);
        s.counter("not_nd", c.not_nd);
        s.counter("bad_hop_limit", c.bad_hop_limit);
        s.counter("bad_checksum", c.bad_checksum);
        s.counter("bad_nd", c.bad_nd);
        s.counter("other_interface", c.other_interface);
        s.counter("bad_mac", c.bad_mac);
        s.counter("off_subnet", c.off_subnet);
        s.counter("unsolicited", c.unsolicited);
        s.counter("no_override", c.no_override);
        s.counter("no_link_address", c.no_link_address);
        s.counter("table_full", c.table_full);
        s.counter("query_rate_limited", c.query_rate_limited);
        let (entries, evictions) = if self.worker.is_none_or(|w| w == 0) {
            (self.cache.len() as u64, self.cache.evictions())
        } else {
            (0, 0)
        };
        s.counter("evictions", evictions);
        s.counter("entries", entries);
        s.counter("count", entries);
        s.counter("held", self.waiting.held() as u64);
        s.counter("length", self.waiting.held() as u64);
    }

    fn shutdown(&mut self, cx: &mut Context<'_>) {
        self.worker = Some(cx.worker());
        self.c.held_at_shutdown += self.waiting.clear() as u64;
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "table" => Some(self.table()),
            "stats" => Some(format!(
                "{} packets killed\n{} solicitations sent\n",
                self.c.drops(),
                self.c.solicitations
            )),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 5] = [
            Handler::r("table"),
            Handler::r("stats"),
            Handler::w("insert"),
            Handler::w("delete"),
            Handler::w("clear"),
        ];
        &HANDLERS
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        matches!(handler, "insert" | "delete")
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let words: Vec<&str> = value.split_ascii_whitespace().collect();
        let ip = |w: &str| Ipv6Addr::from_arg(w).map_err(|e| format!("expected IPv6 address, {e}"));
        match (handler, words.as_slice()) {
            ("insert", [i, e]) => {
                let a = ip(i)?;
                let eth = EthernetAddress::from_arg(e)
                    .map_err(|e| format!("expected Ethernet address, {e}"))?;
                if !self.good_mac(eth) || a.is_multicast() || a.is_unspecified() {
                    return Err(format!(
                        "{a} at {eth} cannot be a neighbour: give a unicast IPv6 address and a \
                         unicast Ethernet address, not all-zero and not this interface's ({})",
                        self.my_eth
                    ));
                }
                self.cache.insert_static(a, eth, self.now.0).map_err(|_| {
                    format!(
                        "the neighbour cache is full of static entries ({}): delete one or \
                         raise ENTRY_CAPACITY",
                        self.cache.capacity()
                    )
                })
            }
            ("insert", _) => Err("expected `IP6 ETH`".into()),
            ("delete", [i]) => {
                let a = ip(i)?;
                let held = self.waiting.take(a).map_or(0, |q| q.len());
                self.c.cleared += held as u64;
                if self.cache.remove(a) || held > 0 {
                    Ok(())
                } else {
                    Err(format!("no neighbour entry for {a}"))
                }
            }
            ("delete", _) => Err("expected `IP6`".into()),
            ("clear", _) => {
                self.cache.clear();
                self.c.cleared += self.waiting.clear() as u64;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (insert, delete, clear)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::testdata::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};
    use bricks_wire::icmpv6::Icmpv6Packet;

    const T0: u64 = 1_000 * SEC;

    fn solicitor(args: &str, outputs: usize) -> Harness {
        let mut h = Harness::new(
            &CLASS,
            args,
            PortInfo {
                inputs: vec![Processing::Push; 2],
                outputs: vec![Processing::Push; outputs],
            },
        );
        h.advance_to(Timestamp(T0));
        h
    }

    fn a_solicitor() -> Harness {
        solicitor("2001:db8::1/64, 52:54:00:aa:00:01", 2)
    }

    fn at(h: &mut Harness, ns: u64) {
        h.advance_to(Timestamp(ns));
    }

    fn tagged(tag: u8) -> Packet {
        let mut ip = echo6().to_vec();
        ip[63] = tag;
        ip6_packet(&ip, B_IP6)
    }

    /// Makes B known the only way the link can: A asks, B answers.
    fn learn_b(h: &mut Harness) {
        h.push_packets(0, [ip6_packet(echo6(), B_IP6)]);
        assert_eq!(h.take_bytes(0), vec![A_NS_B.to_vec()]);
        h.push_bytes(1, &B_NA_A);
        assert_eq!(h.take_bytes(0), vec![A_ECHO6_B.to_vec()]);
    }

    #[test]
    fn unknown_next_hop_sends_solicitation_then_advertisement_releases() {
        let mut h = a_solicitor();
        h.push_packets(0, [ip6_packet(echo6(), B_IP6)]);
        // The solicitation is byte for byte Linux's, checksum included.
        let out = h.take_bytes(0);
        assert_eq!(out, vec![A_NS_B.to_vec()]);
        let ip = Ipv6Packet::new_checked(&out[0][14..]).unwrap();
        assert_eq!(ip.hop_limit(), 255);
        assert!(Icmpv6Packet::new_checked(ip.payload())
            .unwrap()
            .verify_checksum(ip.src_addr(), ip.dst_addr()));
        assert_eq!(h.stats().get("held"), Some(1));
        h.push_bytes(1, &B_NA_A);
        assert_eq!(h.take_bytes(0), vec![A_ECHO6_B.to_vec()]);
        let s = h.stats();
        assert_eq!(
            (
                s.get("solicitations"),
                s.get("advertisements"),
                s.get("held")
            ),
            (Some(1), Some(1), Some(0))
        );
        h.push_packets(0, [ip6_packet(echo6(), B_IP6)]);
        assert_eq!(h.take_bytes(0), vec![A_ECHO6_B.to_vec()]);
        assert!(h
            .read_handler("table")
            .unwrap()
            .starts_with("2001:db8::2 REACHABLE 52:54:00:bb:00:02"));
    }

    #[test]
    fn held_packets_leave_in_order_and_are_bounded() {
        let mut h = solicitor(
            "2001:db8::1/64, 52:54:00:aa:00:01, ENTRY_PACKET_CAPACITY 4",
            2,
        );
        h.push_packets(0, (0..6).map(tagged));
        assert_eq!(h.take(0).len(), 1, "one solicitation");
        assert_eq!(h.stats().get("hold_overflow"), Some(2));
        h.push_bytes(1, &B_NA_A);
        // The newest four: each arrival past the fourth replaced the
        // oldest (RFC 4861 section 7.2.2).
        let tags: Vec<u8> = h.take_bytes(0).iter().map(|f| f[77]).collect();
        assert_eq!(tags, [2, 3, 4, 5]);

        let mut h = solicitor("2001:db8::1/64, 52:54:00:aa:00:01, CAPACITY 2", 2);
        h.push_packets(0, (0..3).map(tagged));
        let s = h.stats();
        assert_eq!((s.get("held"), s.get("hold_overflow")), (Some(2), Some(1)));
    }

    #[test]
    fn three_unanswered_solicitations_give_up_to_output_1() {
        let mut h = a_solicitor();
        h.push_packets(0, [tagged(1), tagged(2)]);
        assert_eq!(h.take_bytes(0), vec![A_NS_B.to_vec()]);
        at(&mut h, T0 + SEC);
        assert_eq!(h.take_bytes(0), vec![A_NS_B.to_vec()]);
        at(&mut h, T0 + 2 * SEC);
        assert_eq!(h.take_bytes(0), vec![A_NS_B.to_vec()]);
        at(&mut h, T0 + 3 * SEC);
        assert!(h.take(0).is_empty());
        // Given up, as they came, for ICMP6Error.
        let gone = h.take_bytes(1);
        assert_eq!(gone.len(), 2);
        assert_eq!(&gone[0][..40], &echo6()[..40]);
        let s = h.stats();
        assert_eq!((s.get("no_reply"), s.get("drops")), (Some(2), Some(2)));
        assert_eq!(
            (s.get("solicitations"), s.get("entries")),
            (Some(3), Some(0))
        );

        // With one output they are dropped, counted the same.
        let mut h = solicitor("2001:db8::1, 52:54:00:aa:00:01, MAX_MULTICAST_SOLICIT 1", 1);
        h.push_packets(0, [tagged(1)]);
        assert_eq!(h.take(0).len(), 1);
        at(&mut h, T0 + SEC);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("no_reply"), Some(1));
    }

    #[test]
    fn stale_neighbour_is_probed_by_unicast() {
        let mut h = a_solicitor();
        learn_b(&mut h);
        // STALE at the latest 1.5 times ReachableTime (30 s) after.
        at(&mut h, T0 + 46 * SEC);
        h.push_packets(0, [ip6_packet(echo6(), B_IP6)]);
        assert_eq!(
            h.take_bytes(0),
            vec![A_ECHO6_B.to_vec()],
            "STALE: sent, now DELAY"
        );
        at(&mut h, T0 + 51 * SEC);
        h.push_packets(0, [ip6_packet(echo6(), B_IP6)]);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 2);
        // The probe: to B's own addresses, still with our link address.
        let mut probe = A_NS_B.to_vec();
        probe[..6].copy_from_slice(&B_MAC.0);
        let ip = Ipv6Packet::new_checked(&out[0][14..]).unwrap();
        assert_eq!(ip.dst_addr(), B_IP6);
        assert_eq!(&out[0][..6], &B_MAC.0);
        assert!(Icmpv6Packet::new_checked(ip.payload())
            .unwrap()
            .verify_checksum(ip.src_addr(), ip.dst_addr()));
        assert_eq!(out[1], A_ECHO6_B.to_vec());
        assert_eq!(h.stats().get("probes"), Some(1));
        // B's answer makes it REACHABLE again.
        h.push_bytes(1, &B_NA_A);
        assert!(h.read_handler("table").unwrap().contains("REACHABLE"));
    }

    #[test]
    fn hostile_advertisements_are_dropped_and_counted() {
        let mut h = a_solicitor();
        h.push_packets(0, [ip6_packet(echo6(), B_IP6)]);
        h.take(0);
        // Hop limit 64: may have crossed a router.
        let mut f = B_NA_A;
        f[21] = 64;
        h.push_bytes(1, &f);
        // A wrong checksum.
        let mut f = B_NA_A;
        f[56] ^= 1;
        h.push_bytes(1, &f);
        // A zero-length option (checksum fixed up).
        let mut f = B_NA_A;
        f[79] = 0;
        let (src, dst) = (B_IP6, A_IP6);
        Icmpv6Packet::new_unchecked(&mut f[54..]).fill_checksum(src, dst);
        h.push_bytes(1, &f);
        // Truncated.
        h.push_bytes(1, &B_NA_A[..70]);
        // For another interface's Ethernet address.
        let mut f = B_NA_A;
        f[5] = 9;
        h.push_bytes(1, &f);
        // Without the target's link-layer address: it cannot resolve.
        let mut f = B_NA_A[..78].to_vec();
        f[19] = 24;
        Icmpv6Packet::new_unchecked(&mut f[54..]).fill_checksum(src, dst);
        h.push_bytes(1, &f);
        let s = h.stats();
        assert_eq!(s.get("no_link_address"), Some(1));
        assert_eq!(s.get("bad_hop_limit"), Some(1));
        assert_eq!(s.get("bad_checksum"), Some(1));
        assert_eq!(s.get("bad_nd"), Some(1));
        assert_eq!(s.get("not_nd"), Some(1));
        assert_eq!(s.get("other_interface"), Some(1));
        assert!(h.take(0).is_empty(), "nothing resolved");
        assert_eq!(s.get("held"), Some(1));
    }

    #[test]
    fn unsolicited_advertisement_creates_nothing() {
        let mut h = a_solicitor();
        h.push_bytes(1, &B_NA_A);
        let s = h.stats();
        assert_eq!((s.get("unsolicited"), s.get("entries")), (Some(1), Some(0)));
        assert_eq!(h.read_handler("table").unwrap(), "");
    }

    #[test]
    fn solicitation_flood_is_bounded_by_the_table() {
        let mut h = solicitor("2001:db8::1/64, 52:54:00:aa:00:01, ENTRY_CAPACITY 64", 2);
        learn_b(&mut h);
        for i in 0..2000u32 {
            let mut f = B_NS_A;
            // A random-looking source in the prefix and a matching
            // link-layer address; the checksum follows.
            let src = Ipv6Addr::from_bits(
                B_IP6.to_bits() + u128::from(i.wrapping_mul(2_654_435_761)) + 3,
            );
            f[22..38].copy_from_slice(&src.octets());
            f[84..86].copy_from_slice(&(i as u16).to_be_bytes());
            Icmpv6Packet::new_unchecked(&mut f[54..]).fill_checksum(
                src,
                Ipv6Addr::from_bits(0xff02_0000_0000_0000_0000_0001_ff00_0001),
            );
            h.push_bytes(1, &f);
        }
        let s = h.stats();
        assert_eq!(s.get("learnt"), Some(2000));
        assert!(s.get("entries").unwrap() <= 33, "{:?}", s.get("entries"));
        assert!(s.get("evictions").unwrap() > 0);
        // B, resolved by us, survived the flood.
        h.push_packets(0, [ip6_packet(echo6(), B_IP6)]);
        assert_eq!(h.take_bytes(0), vec![A_ECHO6_B.to_vec()]);
    }

    #[test]
    fn solicitation_for_us_teaches_the_sender_stale() {
        let mut h = a_solicitor();
        h.push_bytes(1, &B_NS_A);
        assert!(h
            .read_handler("table")
            .unwrap()
            .starts_with("2001:db8::2 STALE 52:54:00:bb:00:02"));
        // Hop limit 64: dropped before it teaches anything.
        let mut h = a_solicitor();
        let mut f = B_NS_A;
        f[21] = 64;
        h.push_bytes(1, &f);
        assert_eq!(h.stats().get("bad_hop_limit"), Some(1));
        assert_eq!(h.stats().get("entries"), Some(0));
        // From outside the prefix: not learnt.
        let mut h = solicitor("2001:db8:1::1/64, 52:54:00:aa:00:01", 2);
        let mut f = B_NS_A;
        f[38..54].copy_from_slice(&A_IP6.octets());
        let mut f2 = f;
        f2[62..78].copy_from_slice(&Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1).octets());
        Icmpv6Packet::new_unchecked(&mut f2[54..]).fill_checksum(B_IP6, A_IP6);
        h.push_bytes(1, &f2);
        assert_eq!(h.stats().get("off_subnet"), Some(1));
    }

    #[test]
    fn link_local_address_teaches_and_asks_like_ip() {
        // B asks for our link-local fe80::1 from its own fe80::2.
        let ll_a = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
        let ll_b = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);
        let mut f = B_NS_A;
        f[22..38].copy_from_slice(&ll_b.octets());
        f[38..54].copy_from_slice(&solicited_node(ll_a).octets());
        f[62..78].copy_from_slice(&ll_a.octets());
        Icmpv6Packet::new_unchecked(&mut f[54..]).fill_checksum(ll_b, solicited_node(ll_a));
        // Without LINK_LOCAL the solicitation is for somebody else.
        let mut h = a_solicitor();
        h.push_bytes(1, &f);
        assert_eq!(h.stats().get("entries"), Some(0));
        let mut h = solicitor("2001:db8::1/64, 52:54:00:aa:00:01, LINK_LOCAL fe80::1", 2);
        h.push_bytes(1, &f);
        assert!(h
            .read_handler("table")
            .unwrap()
            .starts_with("fe80::2 STALE 52:54:00:bb:00:02"));
        assert_eq!(h.stats().get("learnt"), Some(1));
        // A packet to another link-local neighbour: asked from fe80::1.
        let ll_c = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 3);
        h.push_packets(0, [ip6_packet(echo6(), ll_c)]);
        let out = h.take_bytes(0);
        let ip = Ipv6Packet::new_checked(&out[0][14..]).unwrap();
        assert_eq!(ip.src_addr(), ll_a);
        assert_eq!(ip.dst_addr(), solicited_node(ll_c));
        assert!(Icmpv6Packet::new_checked(ip.payload())
            .unwrap()
            .verify_checksum(ip.src_addr(), ip.dst_addr()));
        // A global one: from IP.
        h.push_packets(0, [ip6_packet(echo6(), B_IP6)]);
        assert_eq!(h.take_bytes(0), vec![A_NS_B.to_vec()]);
        // LINK_LOCAL must be link-local.
        assert!(make_element(
            &CLASS,
            "2001:db8::1, 52:54:00:aa:00:01, LINK_LOCAL 2001:db8::9",
            &PortInfo::default(),
        )
        .is_err());
    }

    #[test]
    fn multicast_and_missing_next_hops() {
        let mut h = a_solicitor();
        let mut ip = echo6().to_vec();
        let group = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x16);
        ip[24..40].copy_from_slice(&group.octets());
        h.push_packets(0, [ip6_packet(&ip, Ipv6Addr::UNSPECIFIED)]);
        let out = h.take_bytes(0);
        assert_eq!(&out[0][..6], &[0x33, 0x33, 0, 0, 0, 0x16]);
        h.push_packets(0, [Packet::from_slice(&[0u8; 10]).unwrap()]);
        assert_eq!(h.stats().get("no_dst"), Some(1));
    }

    #[test]
    fn handlers_insert_delete_clear() {
        let mut h = a_solicitor();
        h.write_handler("insert", "2001:db8::2 52:54:00:bb:00:02")
            .unwrap();
        h.push_packets(0, [ip6_packet(echo6(), B_IP6)]);
        assert_eq!(h.take_bytes(0), vec![A_ECHO6_B.to_vec()]);
        assert!(h.read_handler("table").unwrap().contains("STATIC"));
        // The link cannot change a static entry.
        let mut f = B_NA_A;
        f[84] = 0x77;
        Icmpv6Packet::new_unchecked(&mut f[54..]).fill_checksum(B_IP6, A_IP6);
        h.push_bytes(1, &f);
        h.push_packets(0, [ip6_packet(echo6(), B_IP6)]);
        assert_eq!(h.take_bytes(0), vec![A_ECHO6_B.to_vec()]);
        assert!(h
            .write_handler("insert", "2001:db8::2 52:54:00:aa:00:01")
            .is_err());
        h.write_handler("delete", "2001:db8::2").unwrap();
        assert!(h.write_handler("delete", "2001:db8::2").is_err());
        h.push_packets(0, [ip6_packet(echo6(), B_IP6)]);
        assert_eq!(h.take_bytes(0), vec![A_NS_B.to_vec()]);
        h.write_handler("clear", "").unwrap();
        let s = h.stats();
        assert_eq!((s.get("cleared"), s.get("entries")), (Some(1), Some(0)));
    }

    #[test]
    fn argument_forms() {
        let ok = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        ok("2001:db8::1, 52:54:00:aa:00:01").unwrap();
        ok("IP 2001:db8::1, ETH 52:54:00:aa:00:01, REACHABLE_TIME 10s, RETRANS_TIMER 500ms")
            .unwrap();
        assert!(ok("10.0.0.1, 52:54:00:aa:00:01").is_err());
        assert!(ok("2001:db8::1").is_err());
        assert!(ok("2001:db8::1, 52:54:00:aa:00:01, MAX_MULTICAST_SOLICIT 0").is_err());
        assert!(ok("2001:db8::1, 52:54:00:aa:00:01, ENTRY_CAPACITY 0").is_err());
        let e = ok("2001:db8::1, 52:54:00:aa:00:01, REACHABLE 5").unwrap_err();
        assert!(e.contains("unknown keyword REACHABLE"), "{e}");
    }
}
