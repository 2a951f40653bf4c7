//! `IP6RouterAdvertiser`: the router side of Router Discovery (RFC 4861
//! section 6.2): periodic unsolicited Router Advertisements at a
//! randomised interval, answers to Router Solicitations no closer together
//! than MIN_DELAY_BETWEEN_RAS, each with the router's link-layer address,
//! an optional MTU and the configured prefixes, so that hosts on the link
//! find their default router and autoconfigure addresses (RFC 4862).
//!
//! Click has no such element; bricks adds it beside `IP6NDAdvertiser`
//! rather than as keywords of it: an advertiser of neighbours answers for
//! any addresses, proxied prefixes included, while this one speaks for
//! one router interface and its link's prefixes, on its own timers.

use super::NdCheck;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::{PacketType, Timestamp};
use bricks_wire::ethernet::{EtherType, EthernetAddress, HEADER_LEN};
use bricks_wire::icmpv6::{Icmpv6Message, Icmpv6Packet};
use bricks_wire::ip::IpProtocol;
use bricks_wire::ipv6::Ipv6Cidr;
use bricks_wire::ndisc::{
    multicast_ethernet, NdiscOption, NdiscPacket, NdiscRepr, PrefixInfo, HOP_LIMIT,
    ROUTER_ADVERT_LEN,
};
use std::fmt::Write as _;
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The `IP6RouterAdvertiser` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IP6RouterAdvertiser",
    ports: "1/1-2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

/// All nodes on the link (RFC 4291 section 2.7.1).
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

const SEC: u64 = 1_000_000_000;
/// RFC 4861 section 10, router constants.
pub const MAX_INITIAL_RTR_ADVERT_INTERVAL: u64 = 16 * SEC;
/// The first advertisements come at most MAX_INITIAL_RTR_ADVERT_INTERVAL
/// apart.
pub const MAX_INITIAL_RTR_ADVERTISEMENTS: u32 = 3;
/// No two multicast advertisements closer together than this.
pub const MIN_DELAY_BETWEEN_RAS: u64 = 3 * SEC;
/// A solicited advertisement waits a random time up to this.
pub const MAX_RA_DELAY_TIME: u64 = SEC / 2;
/// At most this many Prefix Information options: an advertisement stays
/// well inside the minimum MTU.
pub const MAX_PREFIXES: usize = 16;

static MANUAL: Manual = Manual {
    summary: "sends IPv6 Router Advertisements and answers Router Solicitations",
    synopsis: "IP6RouterAdvertiser(ETH [, SRC, KEYWORDS PREFIX, MTU, MAX_INTERVAL, \
        MIN_INTERVAL, LIFETIME, HOP_LIMIT, MANAGED, OTHER, FINAL])",
    description: "Makes the router discoverable on one link (RFC 4861 section 6.2; not a \
        Click class). Router Advertisements go to all nodes, ff02::1 at \
        33:33:00:00:00:01, from SRC, a link-local address (by default the one ETH gives \
        by modified EUI-64, RFC 4291 appendix A), hop limit 255, with flags M and O \
        from MANAGED and OTHER, router lifetime LIFETIME, reachable time and retrans \
        timer 0 (unspecified), a Source Link-Layer Address option holding ETH, an MTU \
        option when MTU is given, and a Prefix Information option for each PREFIX with \
        L (on-link) and A (autonomous) set, so that hosts add the prefix as on-link and \
        form addresses in it (RFC 4862); a /64 is what SLAAC on Ethernet needs.\n\n\
        Unsolicited advertisements start when the router does, then follow each other \
        at intervals drawn uniformly between MIN_INTERVAL and MAX_INTERVAL; the first \
        MAX_INITIAL_RTR_ADVERTISEMENTS (3) at most MAX_INITIAL_RTR_ADVERT_INTERVAL (16 \
        s) apart (section 6.2.4). The draws come from a generator seeded by ETH and SRC, \
        so that a run on captures is repeatable. Only the first worker sends them. On \
        the capture clock (`bricks run --clock trace`) only the first is sent: time \
        there jumps from timer to timer, and periodic advertisements would fill the \
        span before the capture's first packet.\n\n\
        Input frames should be Router Solicitations, Ethernet header included. A valid \
        one (section 6.1.1: hop limit 255, checksum, code 0, options none of length \
        zero, no source link-layer address option from ::) is answered by an \
        advertisement to all nodes after a random delay of at most MAX_RA_DELAY_TIME \
        (0.5 s), and never sooner than MIN_DELAY_BETWEEN_RAS (3 s) after the previous \
        advertisement, whichever worker sent it: solicitations that arrive meanwhile are \
        answered by that one advertisement (section 6.2.6), so a flood of solicitations \
        costs at most one advertisement every 3 s. Each advertisement restarts the \
        unsolicited interval. After a hot swap to a configuration that advertises the \
        same things the schedule goes on; one with other prefixes, lifetimes or \
        addresses advertises at once.\n\n\
        When the router stops (Ctrl-C, SIGTERM, `--duration`, a Script's `stop`, the \
        end of a run on captures), or a hot swap takes the element away (the new \
        configuration has no IP6RouterAdvertiser of its name), the first worker sends \
        one final advertisement, as \
        RFC 4861 section 6.2.5 asks of a router that ceases to advertise: the same \
        options and prefix lifetimes, but router lifetime 0, so that hosts drop the \
        router from their default routers at once instead of after up to LIFETIME \
        seconds (their addresses in the prefixes stay valid). It goes through the \
        graph like any other advertisement and leaves before the devices close. It is \
        sent only if an advertisement has been sent before, and not with FINAL false. \
        No advertisement, solicited or not, follows it. Writing `false` to the \
        `active` handler stops advertising the same way while the router runs: the \
        final advertisement leaves at once (unless FINAL is false), then nothing, not \
        even answers to solicitations, until `true` is written, which sends an \
        advertisement at once and resumes the schedule; the switch holds for every \
        worker and across a hot swap.\n\n\
        Solicitations whose hop limit is not 255 (`bad_hop_limit`), \
        with a wrong checksum (`bad_checksum`) or a bad code or option (`bad_nd`), and \
        frames that are not Router Solicitations or carry extension headers before the \
        ICMPv6 message (`not_rs`) are not answered; everything not answered and every \
        solicitation leave on output 1 if it is connected and are dropped otherwise.\n\n\
        The element does not learn the soliciting hosts' link-layer addresses: \
        IP6NDSolicitor resolves them when the router sends to them. Answering Neighbor \
        Solicitations for SRC is IP6NDAdvertiser's job: give it SRC too. The `prefixes` \
        handler lists the prefixes advertised, one `PREFIX VALID PREFERRED` line each; \
        `active` (read and write, a boolean) says and sets whether it advertises.",
    ports: "one input, push; output 0: Router Advertisements, push; optional output 1: \
        solicitations and frames not used, push",
    keywords: &[
        Keyword {
            name: "ETH",
            ty: "Ethernet address",
            default: None,
            doc: "the interface's address, the advertisements' source and link-layer option",
        },
        Keyword {
            name: "SRC",
            ty: "IPv6 link-local address",
            default: Some("fe80::/64 with ETH's modified EUI-64"),
            doc: "the advertisements' source: hosts' default router",
        },
        Keyword {
            name: "PREFIX",
            ty: "IPv6 prefix [VALID PREFERRED]",
            default: Some("none"),
            doc: "a prefix to advertise, on-link and autonomous, with its valid and \
                preferred lifetimes in seconds (default 2592000 and 604800, RFC 4861 \
                section 6.2.1; `infinity` allowed); repeatable, at most 16",
        },
        Keyword {
            name: "MTU",
            ty: "unsigned integer",
            default: Some("none"),
            doc: "the link MTU to advertise in an MTU option, 1280 to 65535",
        },
        Keyword {
            name: "MAX_INTERVAL",
            ty: "duration",
            default: Some("600s"),
            doc: "MaxRtrAdvInterval, 4 s to 1800 s",
        },
        Keyword {
            name: "MIN_INTERVAL",
            ty: "duration",
            default: Some("MAX_INTERVAL / 3, or MAX_INTERVAL below 9 s"),
            doc: "MinRtrAdvInterval, 3 s to 0.75 MAX_INTERVAL",
        },
        Keyword {
            name: "LIFETIME",
            ty: "unsigned integer",
            default: Some("3 MAX_INTERVAL"),
            doc: "router lifetime, seconds: 0 (not a default router) or MAX_INTERVAL to 9000",
        },
        Keyword {
            name: "HOP_LIMIT",
            ty: "unsigned integer",
            default: Some("64"),
            doc: "the hop limit hosts should use, 0 for unspecified",
        },
        Keyword {
            name: "MANAGED",
            ty: "boolean",
            default: Some("false"),
            doc: "the M flag: addresses from DHCPv6",
        },
        Keyword {
            name: "OTHER",
            ty: "boolean",
            default: Some("false"),
            doc: "the O flag: other configuration from DHCPv6",
        },
        Keyword {
            name: "FINAL",
            ty: "boolean",
            default: Some("true"),
            doc: "send a final advertisement with router lifetime 0 when the router \
                stops (RFC 4861 section 6.2.5)",
        },
    ],
    counters: &[
        ("advertisements", "Router Advertisements sent"),
        (
            "final",
            "of which final ones, router lifetime 0: as the router stopped, a hot swap \
                took the element away or `active` was switched off",
        ),
        (
            "solicited",
            "of which sent because of a solicitation (several may share one)",
        ),
        ("solicitations", "valid Router Solicitations received"),
        ("not_rs", "frames that are not Router Solicitations"),
        ("bad_hop_limit", "solicitations whose hop limit is not 255"),
        ("bad_checksum", "solicitations with a wrong checksum"),
        (
            "bad_nd",
            "solicitations with a code or option RFC 4861 forbids",
        ),
    ],
    example: "InfiniteSource(DATA \\<33 33 00 00 00 02 52 54 00 bb 00 02 86 dd 60 00 00 00 00 10 \
        3a ff fe 80 00 00 00 00 00 00 50 54 00 ff fe bb 00 02 ff 02 00 00 00 00 00 00 00 00 \
        00 00 00 00 00 02 85 00 d9 0b 00 00 00 00 01 01 52 54 00 bb 00 02>, LIMIT 1) \
        -> ra :: IP6RouterAdvertiser(52:54:00:aa:00:01, PREFIX 2001:db8:1::/64, MTU 1500) \
        -> Discard; ra[1] -> Discard;",
    see_also: &["IP6NDAdvertiser", "IP6NDSolicitor"],
};

/// One advertised prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Prefix {
    prefix: Ipv6Cidr,
    valid: u32,
    preferred: u32,
}

/// `PREFIX` values: `ADDR/LEN [VALID PREFERRED]`.
impl FromArg for Prefix {
    const TYPE: &'static str = "IPv6 prefix [VALID PREFERRED]";
    fn from_arg(text: &str) -> Result<Self, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let lifetime = |w: &str| -> Result<u32, String> {
            if w.eq_ignore_ascii_case("infinity") {
                Ok(u32::MAX)
            } else {
                w.parse()
                    .map_err(|_| format!("`{w}` is not a lifetime in seconds"))
            }
        };
        let (p, valid, preferred) = match words[..] {
            [p] => (p, 2_592_000, 604_800),
            [p, v, f] => (p, lifetime(v)?, lifetime(f)?),
            _ => {
                return Err(format!(
                    "expected `PREFIX/LEN [VALID PREFERRED]`, found `{text}`"
                ))
            }
        };
        let prefix: Ipv6Cidr = p
            .parse()
            .map_err(|e| format!("`{p}` is not an IPv6 prefix: {e}"))?;
        if preferred > valid {
            return Err(format!(
                "preferred lifetime {preferred} is longer than valid lifetime {valid}"
            ));
        }
        let a = prefix.address();
        if a.is_multicast() || a.is_unicast_link_local() {
            return Err(format!("{prefix} is not a prefix to advertise"));
        }
        Ok(Prefix {
            prefix: prefix.network(),
            valid,
            preferred,
        })
    }
}

/// The link-local address ETH gives by modified EUI-64 (RFC 4291
/// appendix A).
pub fn eui64_link_local(eth: EthernetAddress) -> Ipv6Addr {
    let m = eth.0;
    Ipv6Addr::from([
        0xfe,
        0x80,
        0,
        0,
        0,
        0,
        0,
        0,
        m[0] ^ 0x02,
        m[1],
        m[2],
        0xff,
        0xfe,
        m[3],
        m[4],
        m[5],
    ])
}

fn seconds(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let eth: EthernetAddress = args.read_mp("ETH")?;
    let src: Option<Ipv6Addr> = args.read_p("SRC")?;
    let prefixes: Vec<Prefix> = args.read_all("PREFIX")?;
    let mtu: Option<u32> = args.read("MTU")?;
    let max: Duration = args
        .read("MAX_INTERVAL")?
        .unwrap_or(Duration::from_secs(600));
    let min: Option<Duration> = args.read("MIN_INTERVAL")?;
    let lifetime: Option<u32> = args.read("LIFETIME")?;
    let hop_limit: u8 = args.read("HOP_LIMIT")?.unwrap_or(64);
    let managed: bool = args.read("MANAGED")?.unwrap_or(false);
    let other: bool = args.read("OTHER")?.unwrap_or(false);
    let final_ra: bool = args.read("FINAL")?.unwrap_or(true);

    if !eth.is_unicast() || eth == EthernetAddress::UNSPECIFIED {
        return Err(ArgError::new(format!(
            "{eth} is not a unicast Ethernet address"
        )));
    }
    let src = src.unwrap_or_else(|| eui64_link_local(eth));
    if !src.is_unicast_link_local() {
        return Err(
            ArgError::new(format!("SRC {src} is not a link-local address")).with_help(
                "hosts ignore advertisements from other addresses (RFC 4861 section 6.1.2)",
            ),
        );
    }
    if prefixes.len() > MAX_PREFIXES {
        return Err(ArgError::new(format!(
            "{} prefixes: at most {MAX_PREFIXES}",
            prefixes.len()
        )));
    }
    if let Some(m) = mtu {
        if !(1280..=65535).contains(&m) {
            return Err(ArgError::new(format!("MTU {m} is not 1280 to 65535")));
        }
    }
    let max = seconds(max);
    if !(4 * SEC..=1800 * SEC).contains(&max) {
        return Err(ArgError::new(
            "MAX_INTERVAL must be 4 s to 1800 s (RFC 4861 section 6.2.1)",
        ));
    }
    let min = match min {
        Some(m) => seconds(m),
        None if max >= 9 * SEC => max / 3,
        None => max,
    };
    // RFC 4861 section 6.2.1: at least 3 s, at most 0.75 MAX_INTERVAL;
    // the default for a MAX_INTERVAL below 9 s is MAX_INTERVAL itself.
    if min < 3 * SEC || (min > max * 3 / 4 && !(max < 9 * SEC && min == max)) {
        return Err(ArgError::new(
            "MIN_INTERVAL must be 3 s to 0.75 MAX_INTERVAL (RFC 4861 section 6.2.1)",
        ));
    }
    let lifetime = lifetime.unwrap_or((3 * max / SEC) as u32);
    if lifetime != 0 && (u64::from(lifetime) * SEC < max || lifetime > 9000) {
        return Err(ArgError::new(
            "LIFETIME must be 0 or MAX_INTERVAL to 9000 seconds (RFC 4861 section 6.2.1)",
        ));
    }
    let last = args.shared(|_| {
        Ok(LastAdvert {
            at: AtomicU64::new(0),
            off: AtomicBool::new(false),
        })
    })?;
    let mut seed = u64::from_be_bytes([
        0, 0, eth.0[0], eth.0[1], eth.0[2], eth.0[3], eth.0[4], eth.0[5],
    ]) ^ (u128::from(src) as u64).rotate_left(17);
    seed |= 1;
    let mut flags = 0u8;
    if managed {
        flags |= 0x80;
    }
    if other {
        flags |= 0x40;
    }
    Ok(Box::new(Ip6RouterAdvertiser {
        eth,
        src,
        prefixes,
        mtu,
        min,
        max,
        lifetime: lifetime as u16,
        hop_limit,
        flags,
        final_ra,
        last,
        rng: seed,
        periodic_at: None,
        solicited_at: None,
        timer_at: None,
        sent: 0,
        reject_port: (ports.noutputs() > 1).then_some(1),
        c: Counters::default(),
    }))
}

/// What every worker's instance shares.
#[derive(Debug)]
struct LastAdvert {
    /// When the last advertisement left, in nanoseconds plus one (0: none
    /// yet): the limit of one advertisement every MIN_DELAY_BETWEEN_RAS
    /// holds for the element, not per worker.
    at: AtomicU64,
    /// Advertising is switched off (the `active` handler), on every
    /// worker whichever one the write reached.
    off: AtomicBool,
}

#[derive(Debug, Default, Clone, Copy)]
struct Counters {
    advertisements: u64,
    final_ras: u64,
    solicited: u64,
    solicitations: u64,
    not_rs: u64,
    bad_hop_limit: u64,
    bad_checksum: u64,
    bad_nd: u64,
}

/// Why a frame was not a usable Router Solicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reject {
    NotRs,
    BadHopLimit,
    BadChecksum,
    BadNd,
}

/// Sends Router Advertisements for one interface.
#[derive(Debug)]
pub struct Ip6RouterAdvertiser {
    eth: EthernetAddress,
    src: Ipv6Addr,
    prefixes: Vec<Prefix>,
    mtu: Option<u32>,
    /// MinRtrAdvInterval and MaxRtrAdvInterval, nanoseconds.
    min: u64,
    max: u64,
    lifetime: u16,
    hop_limit: u8,
    /// M and O.
    flags: u8,
    /// Send a final advertisement when the router stops.
    final_ra: bool,
    last: Arc<LastAdvert>,
    /// xorshift64* state.
    rng: u64,
    /// The next unsolicited advertisement (first worker only).
    periodic_at: Option<u64>,
    /// The answer to solicitations, once one is due.
    solicited_at: Option<u64>,
    /// The timer asked for, if any.
    timer_at: Option<u64>,
    /// Unsolicited advertisements sent, for the initial interval rule.
    sent: u32,
    reject_port: Option<usize>,
    c: Counters,
}

impl Ip6RouterAdvertiser {
    /// xorshift64* (Vigna).
    fn next_random(&mut self) -> u64 {
        crate::rng::xorshift64star(&mut self.rng)
    }

    /// Uniform in `lo..=hi`.
    fn uniform(&mut self, lo: u64, hi: u64) -> u64 {
        let span = hi - lo;
        if span == 0 {
            return lo;
        }
        lo + ((u128::from(self.next_random()) * u128::from(span + 1)) >> 64) as u64
    }

    /// The interval to the next unsolicited advertisement (section
    /// 6.2.4).
    fn interval(&mut self) -> u64 {
        let i = self.uniform(self.min, self.max);
        if self.sent < MAX_INITIAL_RTR_ADVERTISEMENTS {
            i.min(MAX_INITIAL_RTR_ADVERT_INTERVAL)
        } else {
            i
        }
    }

    /// The advertisement, as an Ethernet frame.
    pub fn advertisement(&self, now: Timestamp) -> Packet {
        self.advertisement_with(now, self.lifetime)
    }

    /// The final advertisement (RFC 4861 section 6.2.5): router lifetime
    /// 0, everything else as usual, prefix lifetimes included.
    pub fn final_advertisement(&self, now: Timestamp) -> Packet {
        self.advertisement_with(now, 0)
    }

    fn advertisement_with(&self, now: Timestamp, lifetime: u16) -> Packet {
        let mut options: Vec<NdiscOption<'static>> =
            vec![NdiscOption::SourceLinkLayerAddr(self.eth)];
        if let Some(m) = self.mtu {
            options.push(NdiscOption::Mtu(m));
        }
        for p in &self.prefixes {
            options.push(NdiscOption::PrefixInformation(PrefixInfo {
                prefix_len: p.prefix.prefix_len(),
                flags: PrefixInfo::ON_LINK | PrefixInfo::AUTONOMOUS,
                valid_lifetime: p.valid,
                preferred_lifetime: p.preferred,
                prefix: p.prefix.address(),
            }));
        }
        let len = ROUTER_ADVERT_LEN + options.iter().map(NdiscOption::buffer_len).sum::<usize>();
        let mut q = Packet::new();
        // At most 16 + 8 + 8 + 16 * 32 bytes of message: a fresh buffer
        // holds them.
        let _ = q.put_back(HEADER_LEN + 40 + len);
        let o = q.data_mut();
        o[..6].copy_from_slice(&multicast_ethernet(ALL_NODES).0);
        o[6..12].copy_from_slice(&self.eth.0);
        o[12..14].copy_from_slice(&EtherType::IPV6.0.to_be_bytes());
        let ip = &mut o[HEADER_LEN..];
        ip[..8].copy_from_slice(&[0x60, 0, 0, 0, 0, 0, IpProtocol::ICMPV6.0, HOP_LIMIT]);
        ip[4..6].copy_from_slice(&(len as u16).to_be_bytes());
        ip[8..24].copy_from_slice(&self.src.octets());
        ip[24..40].copy_from_slice(&ALL_NODES.octets());
        let m = &mut ip[40..];
        m[..ROUTER_ADVERT_LEN].fill(0);
        m[0] = Icmpv6Message::RouterAdvert.into();
        m[4] = self.hop_limit;
        m[5] = self.flags;
        m[6..8].copy_from_slice(&lifetime.to_be_bytes());
        let mut at = ROUTER_ADVERT_LEN;
        for opt in &options {
            opt.emit(&mut m[at..]);
            at += opt.buffer_len();
        }
        Icmpv6Packet::new_unchecked(&mut m[..len]).fill_checksum(self.src, ALL_NODES);
        let a = q.anno_mut();
        a.timestamp = now;
        a.packet_type = PacketType::Outgoing;
        q
    }

    /// The prefixes, one `PREFIX VALID PREFERRED` line each.
    pub fn table(&self) -> String {
        let mut s = String::new();
        for p in &self.prefixes {
            let _ = writeln!(s, "{} {} {}", p.prefix, p.valid, p.preferred);
        }
        s
    }

    /// Checks a Router Solicitation (RFC 4861 section 6.1.1).
    fn check(&self, p: &Packet) -> Result<(), Reject> {
        let ip =
            super::nd_message(p.data(), &[Icmpv6Message::RouterSolicit], 8).map_err(
                |e| match e {
                    NdCheck::Other => Reject::NotRs,
                    NdCheck::HopLimit => Reject::BadHopLimit,
                    NdCheck::Malformed => Reject::BadNd,
                    NdCheck::Checksum => Reject::BadChecksum,
                },
            )?;
        let (src, dst, msg) = (ip.src_addr(), ip.dst_addr(), ip.payload());
        match NdiscRepr::parse(src, dst, &NdiscPacket::new_unchecked(msg)) {
            Ok(NdiscRepr::RouterSolicit { .. }) => Ok(()),
            Ok(_) => Err(Reject::NotRs),
            Err(_) => Err(Reject::BadNd),
        }
    }

    /// Advertising is on (the `active` handler).
    fn active(&self) -> bool {
        !self.last.off.load(Ordering::Relaxed)
    }

    /// Sends the final advertisement, router lifetime 0, if this router
    /// has advertised at all.
    fn say_final(&mut self, cx: &mut Context<'_>) {
        if self.last.at.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut b = Batch::new();
        let _ = b.push(self.final_advertisement(cx.now()));
        self.c.advertisements += 1;
        self.c.final_ras += 1;
        cx.push(0, &mut b);
    }

    /// The earliest time the next advertisement may leave.
    fn earliest(&self) -> u64 {
        match self.last.at.load(Ordering::Relaxed) {
            0 => 0,
            t => (t - 1).saturating_add(MIN_DELAY_BETWEEN_RAS),
        }
    }

    fn arm(&mut self, cx: &mut Context<'_>) {
        let due = match (self.periodic_at, self.solicited_at) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return,
        };
        if self.timer_at.is_none_or(|t| due < t) {
            cx.schedule_at(Timestamp(due));
            self.timer_at = Some(due);
        }
    }

    /// Takes the right to send at `now` from every worker's instance, or
    /// says when to try again.
    fn claim(&self, now: u64) -> Result<(), u64> {
        let mut cur = self.last.at.load(Ordering::Relaxed);
        loop {
            if cur != 0 && now < (cur - 1).saturating_add(MIN_DELAY_BETWEEN_RAS) {
                return Err((cur - 1).saturating_add(MIN_DELAY_BETWEEN_RAS));
            }
            match self.last.at.compare_exchange_weak(
                cur,
                now + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(c) => cur = c,
            }
        }
    }
}

impl Element for Ip6RouterAdvertiser {
    fn start(&mut self, cx: &mut Context<'_>) {
        if cx.worker() == 0 && self.periodic_at.is_none() {
            self.periodic_at = Some(cx.now().0);
        }
        self.arm(cx);
    }

    /// Hot swap: the counters carry over; an advertiser saying the same
    /// things keeps its schedule (and the time of the last advertisement,
    /// for the limit on answers), while one with new prefixes, lifetimes
    /// or addresses advertises at once, so that hosts learn the change.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<Ip6RouterAdvertiser>(old) else {
            return;
        };
        self.c = old.c;
        // Switched off stays off.
        self.last
            .off
            .store(old.last.off.load(Ordering::Relaxed), Ordering::Relaxed);
        let same = (
            self.eth,
            self.src,
            &self.prefixes,
            self.mtu,
            self.lifetime,
            self.hop_limit,
            self.flags,
        ) == (
            old.eth,
            old.src,
            &old.prefixes,
            old.mtu,
            old.lifetime,
            old.hop_limit,
            old.flags,
        );
        if same {
            self.last
                .at
                .fetch_max(old.last.at.load(Ordering::Relaxed), Ordering::Relaxed);
            self.sent = old.sent;
            self.solicited_at = old.solicited_at;
            if (self.min, self.max) == (old.min, old.max) {
                self.periodic_at = old.periodic_at;
            }
        }
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = cx.now().0;
        let mut solicited = false;
        for p in batch.iter() {
            match self.check(p) {
                Ok(()) => {
                    self.c.solicitations += 1;
                    solicited = true;
                }
                Err(Reject::NotRs) => self.c.not_rs += 1,
                Err(Reject::BadHopLimit) => self.c.bad_hop_limit += 1,
                Err(Reject::BadChecksum) => self.c.bad_checksum += 1,
                Err(Reject::BadNd) => self.c.bad_nd += 1,
            }
        }
        match self.reject_port {
            Some(port) => cx.push(port, batch),
            None => batch.clear(),
        }
        if solicited && self.solicited_at.is_none() && !cx.stopping() && self.active() {
            // Section 6.2.6: after a random delay, and no sooner than
            // MIN_DELAY_BETWEEN_RAS after the last advertisement.
            let delay = self.uniform(0, MAX_RA_DELAY_TIME);
            let at = (now + delay).max(self.earliest());
            self.solicited_at = Some(at);
            self.arm(cx);
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        if cx.stopping() {
            // The final advertisement has been said: nothing after it.
            return;
        }
        let now = cx.now().0;
        if self.timer_at.is_some_and(|t| t <= now) {
            self.timer_at = None;
        }
        let periodic = self.periodic_at.is_some_and(|t| t <= now);
        let solicited = self.solicited_at.is_some_and(|t| t <= now);
        if (periodic || solicited) && !self.active() {
            // Switched off: silent, but the first worker keeps its
            // schedule, so that switching on again needs no new timer.
            self.solicited_at = None;
            if periodic {
                let i = self.interval();
                self.periodic_at = (!cx.trace_clock()).then_some(now + i);
            }
        } else if periodic || solicited {
            match self.claim(now) {
                Ok(()) => {
                    let mut b = Batch::new();
                    let _ = b.push(self.advertisement(Timestamp(now)));
                    self.c.advertisements += 1;
                    self.c.solicited += u64::from(solicited);
                    self.solicited_at = None;
                    if self.periodic_at.is_some() {
                        // Any advertisement restarts the interval. On the
                        // capture clock time jumps to the next timer: a
                        // periodic one would fill the span before the
                        // capture's first packet with advertisements.
                        let i = self.interval();
                        self.sent = self.sent.saturating_add(1);
                        self.periodic_at = (!cx.trace_clock()).then_some(now + i);
                    }
                    cx.push(0, &mut b);
                }
                Err(retry) => {
                    // Another worker's advertisement went out lately: it
                    // answered the solicitation too, but not for a host
                    // that asked after it; try once the limit allows.
                    if solicited {
                        self.solicited_at = Some(retry);
                    }
                    if periodic {
                        self.periodic_at = Some(retry);
                    }
                }
            }
        }
        self.arm(cx);
    }

    /// RFC 4861 section 6.2.5: a router that stops advertising says so
    /// with router lifetime 0, once, from the first worker.
    fn stopping(&mut self, cx: &mut Context<'_>) {
        self.periodic_at = None;
        self.solicited_at = None;
        if self.final_ra && cx.worker() == 0 && self.active() {
            self.say_final(cx);
        }
    }

    /// `active`: switching advertising off sends the final advertisement
    /// at once (RFC 4861 section 6.2.5: the interface ceases to be an
    /// advertising interface); switching it on sends one at once (section
    /// 6.2.4: it becomes one). Either from the worker the write reached.
    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if handler != "active" || !write {
            return None;
        }
        let on = match bool::from_arg(value.trim()) {
            Ok(on) => on,
            Err(e) => return Some(Err(e)),
        };
        let was = !self.last.off.swap(!on, Ordering::Relaxed);
        if was && !on {
            self.solicited_at = None;
            if self.final_ra {
                self.say_final(cx);
            }
        } else if !was && on && !cx.stopping() {
            let now = cx.now().0;
            self.last.at.store(now + 1, Ordering::Relaxed);
            let mut b = Batch::new();
            let _ = b.push(self.advertisement(Timestamp(now)));
            self.c.advertisements += 1;
            cx.push(0, &mut b);
        }
        Some(Ok(String::new()))
    }

    /// The element's handlers take effect on every worker through their
    /// shared state: a write goes to one.
    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "active"
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("advertisements", c.advertisements);
        s.counter("final", c.final_ras);
        s.counter("solicited", c.solicited);
        s.counter("solicitations", c.solicitations);
        s.counter("not_rs", c.not_rs);
        s.counter("bad_hop_limit", c.bad_hop_limit);
        s.counter("bad_checksum", c.bad_checksum);
        s.counter("bad_nd", c.bad_nd);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "prefixes" => Some(self.table()),
            "active" => Some(self.active().to_string()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [bricks_element::Handler] {
        const HANDLERS: &[bricks_element::Handler] = &[
            bricks_element::Handler::r("prefixes"),
            bricks_element::Handler::rw("active"),
        ];
        HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::testdata::{A_MAC, B_RS};
    use bricks_runtime::testing::{make_element, Harness};
    use bricks_wire::ipv6::Ipv6Packet;

    /// The ICMPv6 checksum of `msg` from `src` to `dst` (RFC 4443 section
    /// 2.3), computed here apart from the wire crate.
    fn checksum(src: Ipv6Addr, dst: Ipv6Addr, msg: &[u8]) -> u16 {
        let mut data = Vec::new();
        data.extend(src.octets());
        data.extend(dst.octets());
        data.extend((msg.len() as u32).to_be_bytes());
        data.extend([0, 0, 0, 58]);
        data.extend(msg);
        if data.len() % 2 == 1 {
            data.push(0);
        }
        let mut sum: u32 = data
            .chunks(2)
            .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
            .sum();
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    const ARGS: &str = "52:54:00:aa:00:01, PREFIX 2001:db8:1::/64, \
        PREFIX 2001:db8:77::/64 86400 14400, MTU 1500, MAX_INTERVAL 10, MIN_INTERVAL 5";

    fn ll() -> Ipv6Addr {
        "fe80::5054:ff:feaa:1".parse().unwrap()
    }

    /// The advertisement ARGS describe, byte by byte.
    fn expected_ra() -> Vec<u8> {
        let mut m = vec![134, 0, 0, 0, 64, 0];
        m.extend(30u16.to_be_bytes()); // 3 MAX_INTERVAL
        m.extend([0; 8]); // reachable time, retrans timer
        m.extend([1, 1, 0x52, 0x54, 0, 0xaa, 0, 1]); // source link-layer
        m.extend([5, 1, 0, 0, 0, 0, 0x05, 0xdc]); // MTU 1500
        for (p, valid, preferred) in [
            ("2001:db8:1::", 2_592_000u32, 604_800u32),
            ("2001:db8:77::", 86_400, 14_400),
        ] {
            m.extend([3, 4, 64, 0xc0]);
            m.extend(valid.to_be_bytes());
            m.extend(preferred.to_be_bytes());
            m.extend([0; 4]);
            m.extend(p.parse::<Ipv6Addr>().unwrap().octets());
        }
        let c = checksum(ll(), ALL_NODES, &m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        let mut f = vec![
            0x33, 0x33, 0, 0, 0, 1, 0x52, 0x54, 0, 0xaa, 0, 1, 0x86, 0xdd,
        ];
        f.extend([0x60, 0, 0, 0]);
        f.extend((m.len() as u16).to_be_bytes());
        f.extend([58, 255]);
        f.extend(ll().octets());
        f.extend(ALL_NODES.octets());
        f.extend(m);
        f
    }

    #[test]
    fn advertisement_byte_for_byte() {
        let mut h = Harness::push(&CLASS, ARGS, 1, 2);
        let t0 = h.now();
        h.start();
        assert_eq!(h.timers(), vec![t0], "the first one at once");
        h.advance_to(t0);
        let out = h.take_bytes(0);
        assert_eq!(out, vec![expected_ra()]);
        // The wire crate reads it back as hosts will.
        let ip = Ipv6Packet::new_checked(&out[0][14..]).unwrap();
        let nd = NdiscPacket::new_checked(ip.payload()).unwrap();
        let repr = NdiscRepr::parse(ip.src_addr(), ip.dst_addr(), &nd).unwrap();
        let NdiscRepr::RouterAdvert {
            router_lifetime,
            lladdr,
            mtu,
            prefix_info,
            ..
        } = repr
        else {
            panic!("{repr:?}")
        };
        assert_eq!(
            (router_lifetime, lladdr, mtu),
            (30, Some(A_MAC), Some(1500))
        );
        assert_eq!(prefix_info.unwrap().prefix_len, 64);
        assert_eq!(h.stats().get("advertisements"), Some(1));
        assert_eq!(
            h.read_handler("prefixes").unwrap(),
            "2001:db8:1::/64 2592000 604800\n2001:db8:77::/64 86400 14400\n"
        );
    }

    #[test]
    fn the_final_advertisement_has_router_lifetime_0() {
        let mut h = Harness::push(&CLASS, ARGS, 1, 2);
        let t0 = h.now().0;
        h.start();
        h.advance_to(Timestamp(t0));
        assert_eq!(h.take_bytes(0), vec![expected_ra()]);
        h.advance_to(Timestamp(t0 + 2 * SEC));
        h.stopping();
        // The same advertisement, router lifetime 0 (and its checksum),
        // the prefixes with their lifetimes (section 6.2.5).
        let mut want = expected_ra();
        want[60..62].fill(0);
        want[56..58].fill(0);
        let c = checksum(ll(), ALL_NODES, &want[54..]);
        want[56..58].copy_from_slice(&c.to_be_bytes());
        let out = h.take_bytes(0);
        assert_eq!(out, vec![want]);
        let ip = Ipv6Packet::new_checked(&out[0][14..]).unwrap();
        let nd = NdiscPacket::new_checked(ip.payload()).unwrap();
        let NdiscRepr::RouterAdvert {
            router_lifetime,
            lladdr,
            mtu,
            prefix_info,
            ..
        } = NdiscRepr::parse(ip.src_addr(), ip.dst_addr(), &nd).unwrap()
        else {
            panic!("not an advertisement")
        };
        assert_eq!((router_lifetime, lladdr, mtu), (0, Some(A_MAC), Some(1500)));
        let p = prefix_info.unwrap();
        assert_eq!(
            (p.valid_lifetime, p.preferred_lifetime),
            (2_592_000, 604_800)
        );
        let s = h.stats();
        assert_eq!(
            (s.get("advertisements"), s.get("final")),
            (Some(2), Some(1))
        );
        // Nothing after it: neither the periodic timer nor a solicitation.
        h.push_bytes(0, &B_RS);
        for k in 1..=700 {
            h.advance_to(Timestamp(t0 + 2 * SEC + k * SEC));
        }
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("advertisements"), Some(2));
    }

    #[test]
    fn switching_advertising_off_sends_the_final_advertisement() {
        let mut h = Harness::push(&CLASS, ARGS, 1, 2);
        let t0 = h.now().0;
        h.start();
        h.advance_to(Timestamp(t0));
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.read_handler("active").unwrap(), "true");
        h.advance_to(Timestamp(t0 + SEC));
        h.call_write_handler("active", "false").unwrap();
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 1);
        assert_eq!(&out[0][60..62], &[0, 0], "router lifetime 0");
        assert_eq!(h.read_handler("active").unwrap(), "false");
        // Silent while off: no periodic advertisement, no answer, and no
        // second final one when the router stops.
        h.push_bytes(0, &B_RS);
        for k in 2..=60 {
            h.advance_to(Timestamp(t0 + k * SEC));
        }
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("solicitations"), Some(1));
        h.call_write_handler("active", "false").unwrap();
        assert!(h.take(0).is_empty(), "already off");
        // On again: an advertisement at once, with the router lifetime,
        // then the schedule goes on.
        h.call_write_handler("active", "true").unwrap();
        assert_eq!(h.take_bytes(0), vec![expected_ra()]);
        let mut more = 0;
        for k in 61..=100 {
            h.advance_to(Timestamp(t0 + k * SEC));
            more += h.take(0).len();
        }
        assert!(more >= 2, "{more} periodic advertisements in 40 s");
        assert!(h.call_write_handler("active", "perhaps").is_err());
        let s = h.stats();
        assert_eq!(s.get("final"), Some(1));
        h.stopping();
        assert_eq!(h.take(0).len(), 1, "the final one at the stop");
        assert_eq!(h.stats().get("final"), Some(2));
    }

    #[test]
    fn no_final_advertisement_with_final_false_or_before_any() {
        let mut h = Harness::push(&CLASS, &format!("{ARGS}, FINAL false"), 1, 2);
        let t0 = h.now().0;
        h.start();
        h.advance_to(Timestamp(t0));
        assert_eq!(h.take(0).len(), 1);
        h.stopping();
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("final"), Some(0));
        // A router that never advertised has nothing to take back.
        let mut h = Harness::push(&CLASS, ARGS, 1, 2);
        h.start();
        h.stopping();
        assert!(h.take(0).is_empty());
    }

    #[test]
    fn unsolicited_intervals_are_random_and_bounded() {
        let mut h = Harness::push(
            &CLASS,
            "52:54:00:aa:00:01, PREFIX 2001:db8:1::/64, MAX_INTERVAL 60, MIN_INTERVAL 20",
            1,
            1,
        );
        let t0 = h.now().0;
        h.start();
        let mut times = Vec::new();
        let mut t = t0;
        while times.len() < 12 {
            t += SEC / 4;
            h.advance_to(Timestamp(t));
            if !h.take(0).is_empty() {
                times.push(t);
            }
            assert!(t - t0 < 3600 * SEC, "stalled");
        }
        let gaps: Vec<u64> = times.windows(2).map(|w| (w[1] - w[0]) / SEC).collect();
        // The first three intervals at most 16 s (section 6.2.4), the
        // rest within MIN_INTERVAL and MAX_INTERVAL, and not all equal.
        assert!(gaps[..2].iter().all(|&g| g <= 16), "{gaps:?}");
        assert!(
            gaps[3..].iter().all(|&g| (20..=60).contains(&g)),
            "{gaps:?}"
        );
        assert!(gaps[3..].iter().any(|&g| g != gaps[3]), "{gaps:?}");
    }

    #[test]
    fn solicitations_are_answered_at_most_every_3_seconds() {
        let mut h = Harness::push(&CLASS, ARGS, 1, 2);
        let t0 = h.now().0;
        h.start();
        h.advance_to(Timestamp(t0));
        assert_eq!(h.take(0).len(), 1, "the first unsolicited one");
        // A solicitation 1 s later: answered, but not before 3 s after
        // the last advertisement.
        h.advance_to(Timestamp(t0 + SEC));
        h.push_bytes(0, &B_RS);
        assert_eq!(h.take_bytes(1), vec![B_RS.to_vec()], "to output 1");
        h.advance_to(Timestamp(t0 + 3 * SEC - 1));
        assert!(h.take(0).is_empty());
        // Ten more meanwhile share the same answer.
        for _ in 0..10 {
            h.push_bytes(0, &B_RS);
        }
        h.advance_to(Timestamp(t0 + 3 * SEC));
        assert_eq!(h.take_bytes(0), vec![expected_ra()]);
        // Later: within MAX_RA_DELAY_TIME of the solicitation.
        let t1 = t0 + 4 * SEC;
        h.advance_to(Timestamp(t1));
        h.push_bytes(0, &B_RS);
        assert!(h.take(0).is_empty());
        let due = h.timers().into_iter().min().unwrap().0;
        assert!(
            due > t1 && due <= (t0 + 3 * SEC + MIN_DELAY_BETWEEN_RAS).max(t1 + MAX_RA_DELAY_TIME)
        );
        h.advance_to(Timestamp(due));
        assert_eq!(h.take(0).len(), 1);
        let s = h.stats();
        assert_eq!(
            (
                s.get("solicitations"),
                s.get("solicited"),
                s.get("advertisements")
            ),
            (Some(12), Some(2), Some(3))
        );
        // A flood of solicitations over 30 s: at most one answer every 3 s.
        let start = due;
        let mut sent = 0;
        for i in 1..=300u64 {
            h.advance_to(Timestamp(start + i * SEC / 10));
            h.push_bytes(0, &B_RS);
            sent += h.take(0).len();
        }
        assert!(sent <= 10, "{sent} advertisements in 30 s");
        assert!(sent >= 8, "{sent}: solicitations go unanswered");
    }

    #[test]
    fn bad_solicitations_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, ARGS, 1, 2);
        // Hop limit 64.
        let mut f = B_RS;
        f[21] = 64;
        h.push_bytes(0, &f);
        // Code 1, checksum fixed up.
        let mut f = B_RS;
        f[55] = 1;
        let c = u16::from_be_bytes([f[56], f[57]]).wrapping_sub(1);
        f[56..58].copy_from_slice(&c.to_be_bytes());
        h.push_bytes(0, &f);
        // A wrong checksum.
        let mut f = B_RS;
        f[57] ^= 1;
        h.push_bytes(0, &f);
        // An option of length zero, checksum fixed up.
        let mut f = B_RS;
        f[63] = 0;
        let src = Ipv6Addr::from(<[u8; 16]>::try_from(&f[22..38]).unwrap());
        let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&f[38..54]).unwrap());
        f[56..58].fill(0);
        let c = checksum(src, dst, &f[54..]);
        f[56..58].copy_from_slice(&c.to_be_bytes());
        h.push_bytes(0, &f);
        // Not a solicitation.
        h.push_bytes(0, &crate::ip6::testdata::B_NS_A);
        let s = h.stats();
        for (c, n) in [
            ("bad_hop_limit", 1),
            ("bad_nd", 2),
            ("bad_checksum", 1),
            ("not_rs", 1),
            ("solicitations", 0),
        ] {
            assert_eq!(s.get(c), Some(n), "{c}");
        }
        assert_eq!(h.take(1).len(), 5);
        assert!(h.timers().is_empty(), "nothing answered");
    }

    #[test]
    fn arguments() {
        let ok = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        ok("52:54:00:aa:00:01").unwrap();
        ok("52:54:00:aa:00:01, fe80::1, PREFIX 2001:db8::/64 infinity infinity, LIFETIME 0")
            .unwrap();
        assert_eq!(
            eui64_link_local(A_MAC),
            "fe80::5054:ff:feaa:1".parse::<Ipv6Addr>().unwrap()
        );
        for bad in [
            "",
            "ff:ff:ff:ff:ff:ff",
            "52:54:00:aa:00:01, 2001:db8::1",
            "52:54:00:aa:00:01, PREFIX fe80::/64",
            "52:54:00:aa:00:01, PREFIX 2001:db8::/64 100 200",
            "52:54:00:aa:00:01, PREFIX 2001:db8::/64 100",
            "52:54:00:aa:00:01, MTU 1000",
            "52:54:00:aa:00:01, MAX_INTERVAL 2",
            "52:54:00:aa:00:01, MAX_INTERVAL 3600",
            "52:54:00:aa:00:01, MAX_INTERVAL 100, MIN_INTERVAL 90",
            "52:54:00:aa:00:01, MIN_INTERVAL 1",
            "52:54:00:aa:00:01, LIFETIME 10",
            "52:54:00:aa:00:01, LIFETIME 10000",
            "52:54:00:aa:00:01, INTERVAL 10",
            "52:54:00:aa:00:01, FINAL maybe",
        ] {
            assert!(ok(bad).is_err(), "{bad} accepted");
        }
        let many: Vec<String> = (0..17)
            .map(|i| format!("PREFIX 2001:db8:{i}::/64"))
            .collect();
        assert!(ok(&format!("52:54:00:aa:00:01, {}", many.join(", "))).is_err());
    }
}
