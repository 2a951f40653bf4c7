//! `WorkloadSource`: synthetic IPv4/UDP traffic for benchmarks and tests:
//! fixed sizes, the IMIX mix or an Internet-like mix ([`ABILENE`]), many
//! flows, random destinations drawn from
//! a list of prefixes or a route file, all from a seed so that runs repeat
//! exactly; optionally paced at a fixed packet rate (the generator of
//! `bricks gen`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_packet::Timestamp;
use bricks_packet::{DEFAULT_BURST, MAX_BATCH, MAX_FRAME};
use bricks_wire::checksum;
use bricks_wire::ethernet::EthernetAddress;
use bricks_wire::ip::IpProtocol;
use bricks_wire::ipv4::Ipv4Cidr;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::sync::Arc;

/// The smallest IPv6/UDP frame: Ethernet, IPv6 and UDP headers.
const MIN_FRAME_V6: usize = 14 + 40 + 8;

/// The `WorkloadSource` class.
pub static CLASS: ElementClass = ElementClass {
    name: "WorkloadSource",
    ports: "0/1",
    processing: "/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "generates seeded IPv4/UDP or IPv6/UDP workloads (sizes, IMIX, flows, prefixes)",
    synopsis: "WorkloadSource([KEYWORDS])",
    description: "Pushes Ethernet/IPv4/UDP frames (or Ethernet/IPv6/UDP, below) built on the fly: SIZE bytes each (the \
        frame as handled, without the 4-byte FCS) or the simple IMIX of 64, 594 and 1518 \
        bytes in the ratio 7:4:1, or with ABILENE an Internet-like mix standing for \
        RouteBricks' Abilene-I trace: 60, 107, 314, 590, 1014 and 1514 bytes in the \
        proportions 42:12:12:16:3:15 (IP packets of 40, 93, 300, 576, 1000 and 1500 \
        bytes, fitted to the packet-length statistics CAIDA published for the NASA Ames \
        Internet Exchange: mean 413 bytes, median 93, quartiles 40 and 576, 95th \
        percentile 1500; mean frame 428 bytes). FLOWS flows are made up front, each with a source from \
        SRC, a destination drawn at random from the DST prefixes (a random prefix, then a \
        random address inside it), and random UDP ports; every packet picks a flow at \
        random, or the next one in turn with ROUND_ROBIN (so that each flow's packets \
        are evenly spaced, as a failover measurement wants). ROUTES draws destinations from the IPv4 prefixes of a route file (text \
        or MRT, as the lookup elements read it) as well. The UDP payload starts with a \
        64-bit sequence number and the 64-bit send time in nanoseconds (GenStamp replaces \
        them with a per-flow probe). The IPv4 checksum is valid; the UDP checksum is zero \
        (allowed by RFC 768 for IPv4). With IPV6 true, or with SRC or DST written as IPv6 \
        prefixes, the frames are Ethernet/IPv6/UDP: hop limit TTL, a flow label made from \
        the flow's ports, a valid UDP checksum (IPv6 requires one), SRC 2001:db8::/64 and \
        DST 2001:2::/48 (RFC 5180's benchmarking prefix) by default, ROUTES' IPv6 prefixes; \
        SIZE is at least 62 (the three headers), and a mix's smaller frames are sent as 62 \
        bytes. The sequence number and send time need 78 bytes or more. With RATE, packets leave at RATE per second by a \
        token bucket of BURST packets whose credit is counted from the start, so the \
        average stays exact over any run; when the router cannot keep up for more than \
        10 ms (or BURST packets, if more), the missed credit is dropped rather than sent \
        as one long burst, and counted. Everything derives from SEED: the same arguments \
        give the same packets.",
    ports: "no inputs; one push output",
    keywords: &[
        Keyword { name: "SIZE", ty: "unsigned", default: Some("64"), doc: "frame size in bytes (60 to 2048)" },
        Keyword { name: "IMIX", ty: "boolean", default: Some("false"), doc: "use the 7:4:1 mix of 64/594/1518 bytes instead of SIZE" },
        Keyword { name: "ABILENE", ty: "boolean", default: Some("false"), doc: "use the Internet-like mix of 60 to 1514 bytes (mean 428) instead of SIZE" },
        Keyword { name: "FLOWS", ty: "unsigned", default: Some("1"), doc: "number of distinct flows" },
        Keyword { name: "ROUND_ROBIN", ty: "boolean", default: Some("false"), doc: "take the flows in turn instead of at random" },
        Keyword { name: "SRC", ty: "IP prefix", default: Some("192.0.2.0/24"), doc: "source addresses (2001:db8::/64 for IPv6)" },
        Keyword { name: "DST", ty: "IP prefixes", default: Some("198.18.0.0/15"), doc: "space-separated prefixes destinations are drawn from, of one family (2001:2::/48 for IPv6)" },
        Keyword { name: "IPV6", ty: "boolean", default: None, doc: "IPv6 frames; by default the family of DST, or else of SRC, or else IPv4" },
        Keyword { name: "ROUTES", ty: "file name", default: None, doc: "route file whose prefixes of the workload's family destinations are drawn from (with DST's, if given)" },
        Keyword { name: "ETHSRC", ty: "Ethernet address", default: Some("02:00:00:00:00:01"), doc: "source MAC" },
        Keyword { name: "ETHDST", ty: "Ethernet address", default: Some("02:00:00:00:00:02"), doc: "destination MAC" },
        Keyword { name: "TTL", ty: "unsigned", default: Some("64"), doc: "IP time to live (IPv6 hop limit)" },
        Keyword { name: "SEED", ty: "unsigned", default: Some("1"), doc: "seed of every random choice" },
        Keyword { name: "LIMIT", ty: "integer", default: Some("-1"), doc: "packets in all; -1 for no limit" },
        Keyword { name: "ALL_WORKERS", ty: "boolean", default: Some("false"), doc: "generate on every worker: worker w of n sends flows w, w + n, ... and its share of RATE and LIMIT, so a generator uses every transmit queue (`bricks gen --threads n`)" },
        Keyword { name: "RATE", ty: "unsigned", default: Some("0"), doc: "packets per second; 0 for as fast as possible" },
        Keyword { name: "BURST", ty: "unsigned", default: Some("32"), doc: "packets per batch (up to 256)" },
        Keyword { name: "STOP", ty: "boolean", default: Some("false"), doc: "stop the router when LIMIT is reached" },
    ],
    counters: &[
        ("count", "packets emitted"),
        ("byte_count", "bytes emitted"),
        ("rate_shortfall", "packets RATE allowed that could not be sent in time (dropped credit)"),
    ],
    example: "WorkloadSource(IMIX true, FLOWS 1000, DST 10.0.0.0/8 172.16.0.0/12, LIMIT 100, STOP true) -> Discard;",
    see_also: &["InfiniteSource", "RatedSource"],
};

const IMIX: [u16; 12] = [64, 64, 64, 64, 64, 64, 64, 594, 594, 594, 594, 1518];

/// An Internet-like frame-size mix standing for the "Abilene-I" trace of
/// RouteBricks §5.1 (NLANR, an OC-48 link of the Abilene research
/// backbone, 2002): (frame bytes without the FCS, percent of packets).
///
/// The trace's own size histogram is not published in a form at hand, so
/// the mix is fitted to a published one of the same era and kind: CAIDA's
/// packet-length statistics of the NASA Ames Internet Exchange, a US
/// research and exchange point (127 million packets, May 1999;
/// <https://www.caida.org/research/traffic-analysis/AIX/plen_hist/>): mean
/// 413 bytes, median 93, 5th and 25th percentiles 40, 75th 576, 95th
/// 1500. IP packets of 40 (TCP acknowledgements), 93, 300, 576 (the old
/// default MTU), 1000 and 1500 bytes (Ethernet's MTU) in the proportions
/// below give mean 411, median 93, quartiles 40 and 576 and 95th
/// percentile 1500. Frames add the 14-byte Ethernet header; a 40-byte
/// packet travels in a minimum 60-byte frame. The mix keeps what matters
/// to a router's CPU: many minimum-size packets (per-packet cost) beside
/// many full ones (per-byte cost), at a mean of 428 bytes a frame.
pub const ABILENE: [(u16, u8); 6] = [
    (60, 42),
    (107, 12),
    (314, 12),
    (590, 16),
    (1014, 3),
    (1514, 15),
];

/// [`ABILENE`] as 100 frame sizes, one per percent, so that a packet's
/// size is one uniform draw.
fn abilene_table() -> Vec<u16> {
    ABILENE
        .iter()
        .flat_map(|&(size, pct)| std::iter::repeat_n(size, usize::from(pct)))
        .collect()
}

/// The mean frame size of [`ABILENE`], in bytes.
pub fn abilene_mean() -> f64 {
    ABILENE
        .iter()
        .map(|&(s, p)| f64::from(s) * f64::from(p))
        .sum::<f64>()
        / ABILENE.iter().map(|&(_, p)| f64::from(p)).sum::<f64>()
}

/// SplitMix64: tiny, fast and good enough to pick flows and sizes; a
/// generic RNG crate would add a call and state this loop does not need.
#[derive(Debug, Clone)]
struct SplitMix(u64);

impl SplitMix {
    #[inline(always)]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n.
    #[inline(always)]
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

/// A flow's addresses: an IPv4 address in the low 32 bits, or an IPv6
/// address, as the source's family says.
#[derive(Debug, Clone, Copy)]
struct Flow {
    src: u128,
    dst: u128,
    sport: u16,
    dport: u16,
    /// IPv6: the ones' complement sum of the two addresses, the part of
    /// the UDP checksum's pseudo-header that stays the same for the flow.
    addrs_sum: u16,
}

/// A prefix addresses are drawn from: `addr` with host bits zero, IPv4's
/// in the low 32 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Net {
    addr: u128,
    len: u8,
    v6: bool,
}

impl Net {
    fn v4(c: &Ipv4Cidr) -> Net {
        Net {
            addr: u128::from(u32::from(c.network().address())),
            len: c.prefix_len(),
            v6: false,
        }
    }

    fn v6(a: Ipv6Addr, len: u8) -> Net {
        let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
        Net {
            addr: u128::from(a) & mask,
            len,
            v6: true,
        }
    }

    /// A random address inside: one draw for up to 64 host bits, two
    /// above (IPv4 draws as it always has, so its flows stay the same).
    fn addr_in(&self, rng: &mut SplitMix) -> u128 {
        let width = if self.v6 { 128 } else { 32 };
        let host_bits = width - u32::from(self.len);
        let host = match host_bits {
            0 => 0,
            1..=64 => u128::from(rng.next()) & (u128::MAX >> (128 - host_bits)),
            _ => {
                let hi = u128::from(rng.next()) << 64;
                (hi | u128::from(rng.next())) & (u128::MAX >> (128 - host_bits))
            }
        };
        self.addr | host
    }

    /// A prefix of SRC, DST or ROUTES as written: IPv4 (Click's
    /// ADDR/LEN, ADDR/MASK or a bare address) or IPv6 (ADDR/LEN or a bare
    /// address).
    fn parse(text: &str) -> Result<Net, String> {
        use bricks_element::FromArg;
        if let Ok(c) = Ipv4Cidr::from_arg(text) {
            return Ok(Net::v4(&c));
        }
        let (a, len) = text.split_once('/').unwrap_or((text, "128"));
        match (a.parse::<Ipv6Addr>(), len.parse::<u8>()) {
            (Ok(a), Ok(len)) if len <= 128 => Ok(Net::v6(a, len)),
            _ => Err(format!("found `{text}`, expected an IPv4 or IPv6 prefix")),
        }
    }
}

/// `n` flows with sources in `src` and destinations in `dst` (a prefix
/// drawn at random, then an address in it), ports from 1024 up, drawn
/// from `seed`; and the generator, as it is left, for the packets.
fn draw_flows(src: &Net, dst: &[Net], n: usize, seed: u64) -> (Vec<Flow>, SplitMix) {
    let mut rng = SplitMix(seed);
    let flows = (0..n)
        .map(|_| {
            let d = &dst[rng.below(dst.len() as u64) as usize];
            Flow {
                src: src.addr_in(&mut rng),
                dst: d.addr_in(&mut rng),
                sport: 1024 + rng.below(64512) as u16,
                dport: 1024 + rng.below(64512) as u16,
                addrs_sum: 0,
            }
        })
        .map(|mut f: Flow| {
            if src.v6 {
                let mut addrs = [0; 32];
                addrs[..16].copy_from_slice(&f.src.to_be_bytes());
                addrs[16..].copy_from_slice(&f.dst.to_be_bytes());
                f.addrs_sum = checksum::data(&addrs);
            }
            f
        })
        .collect();
    (flows, rng)
}

/// The flows a `WorkloadSource` with SRC `src`, DST `dst`, FLOWS `n` and
/// SEED `seed` sends, in its order, as (source, destination, source port,
/// destination port): what `bricks gen --backend live` sends too. `dst`
/// must not be empty.
pub fn workload_flows(
    src: Ipv4Cidr,
    dst: &[Ipv4Cidr],
    n: usize,
    seed: u64,
) -> Vec<(Ipv4Addr, Ipv4Addr, u16, u16)> {
    if dst.is_empty() {
        return Vec::new();
    }
    let dst: Vec<Net> = dst.iter().map(Net::v4).collect();
    let addr = |a: u128| Ipv4Addr::from(a as u32);
    draw_flows(&Net::v4(&src), &dst, n, seed)
        .0
        .into_iter()
        .map(|f| (addr(f.src), addr(f.dst), f.sport, f.dport))
        .collect()
}

fn parse_prefixes(text: &str) -> Result<Vec<Net>, ArgError> {
    let v: Result<Vec<_>, _> = text.split_whitespace().map(Net::parse).collect();
    let v = v.map_err(|e| ArgError::new(format!("bad argument DST: {e}")))?;
    if v.is_empty() {
        return Err(ArgError::new("bad argument DST: no prefix given"));
    }
    Ok(v)
}

/// The prefixes of a route file: its IPv4 ones, or with `v6` its IPv6
/// ones.
fn route_prefixes(path: &std::path::Path, v6: bool) -> Result<Vec<Net>, ArgError> {
    use bricks_lpm::source::RoutePrefix;
    let v: Vec<Net> = crate::route::table::load_file(path, false, None)?
        .into_iter()
        .filter_map(|r| match r.prefix {
            RoutePrefix::V4(p) if !v6 => {
                Some(Net::v4(&Ipv4Cidr::new(Ipv4Addr::from(p.addr), p.len)))
            }
            RoutePrefix::V6(p) if v6 => Some(Net::v6(Ipv6Addr::from(p.addr), p.len)),
            _ => None,
        })
        .collect();
    if v.is_empty() {
        return Err(ArgError::new(format!(
            "bad argument ROUTES: no {} prefix in {}",
            if v6 { "IPv6" } else { "IPv4" },
            path.display()
        )));
    }
    Ok(v)
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let size: usize = args.read("SIZE")?.unwrap_or(64);
    let imix = args.read("IMIX")?.unwrap_or(false);
    let abilene = args.read("ABILENE")?.unwrap_or(false);
    if imix && abilene {
        return Err(ArgError::new("IMIX and ABILENE are two mixes: give one"));
    }
    let flows: usize = args.read("FLOWS")?.unwrap_or(1);
    let round_robin = args.read("ROUND_ROBIN")?.unwrap_or(false);
    let src: Option<String> = args.read("SRC")?;
    let dst: Option<String> = args.read("DST")?;
    let ipv6: Option<bool> = args.read("IPV6")?;
    let routes: Option<PathBuf> = args.read("ROUTES")?;
    let rate: u64 = args.read("RATE")?.unwrap_or(0);
    let ethsrc: EthernetAddress = args
        .read("ETHSRC")?
        .unwrap_or(EthernetAddress([2, 0, 0, 0, 0, 1]));
    let ethdst: EthernetAddress = args
        .read("ETHDST")?
        .unwrap_or(EthernetAddress([2, 0, 0, 0, 0, 2]));
    let ttl: u8 = args.read("TTL")?.unwrap_or(64);
    let seed: u64 = args.read("SEED")?.unwrap_or(1);
    let limit: i64 = args.read("LIMIT")?.unwrap_or(-1);
    let burst: usize = args.read("BURST")?.unwrap_or(DEFAULT_BURST);
    let stop = args.read("STOP")?.unwrap_or(false);
    let all_workers = args.read("ALL_WORKERS")?.unwrap_or(false);
    if !(60..=MAX_FRAME).contains(&size) {
        return Err(ArgError::new(format!(
            "SIZE {size} out of range (60 to {MAX_FRAME} bytes)"
        )));
    }
    if flows == 0 || flows > 1 << 24 {
        return Err(ArgError::new(format!(
            "FLOWS {flows} out of range (1 to 16777216)"
        )));
    }
    let src = src
        .map(|t| Net::parse(&t).map_err(|e| ArgError::new(format!("bad argument SRC: {e}"))))
        .transpose()?;
    let dst = dst.map(|t| parse_prefixes(&t)).transpose()?;
    // The family: IPV6's, or else the prefixes'.
    let v6 = ipv6.unwrap_or_else(|| {
        dst.as_ref()
            .and_then(|d| d.first())
            .or(src.as_ref())
            .is_some_and(|n| n.v6)
    });
    if v6 && size < MIN_FRAME_V6 {
        return Err(ArgError::new(format!(
            "SIZE {size} too small for IPv6/UDP (at least {MIN_FRAME_V6} bytes)"
        )));
    }
    let family = |n: &Net| n.v6 == v6;
    if !src.iter().chain(dst.iter().flatten()).all(family) {
        return Err(ArgError::new(format!(
            "SRC and DST must all be {} prefixes{}",
            if v6 { "IPv6" } else { "IPv4" },
            if ipv6.is_some() { ", as IPV6 says" } else { "" }
        )));
    }
    let src = src.unwrap_or(if v6 {
        // RFC 3849's documentation prefix.
        Net::v6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 64)
    } else {
        Net::v4(&Ipv4Cidr::new(Ipv4Addr::new(192, 0, 2, 0), 24))
    });
    let mut dst = match dst {
        Some(d) => d,
        None if routes.is_some() => Vec::new(),
        // RFC 2544's and RFC 5180's benchmarking prefixes.
        None if v6 => vec![Net::v6(Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 0), 48)],
        None => vec![Net::v4(&Ipv4Cidr::new(Ipv4Addr::new(198, 18, 0, 0), 15))],
    };
    if let Some(path) = routes {
        // Read once for every worker's instance: a route file can hold a
        // million prefixes.
        let from_file: Arc<Vec<Net>> = args.shared(|_| route_prefixes(&path, v6))?;
        dst.extend_from_slice(&from_file);
    }
    let burst = burst.clamp(1, MAX_BATCH);
    let (flows, rng) = draw_flows(&src, &dst, flows, seed);
    let mut eth = [0u8; 14];
    eth[0..6].copy_from_slice(&ethdst.0);
    eth[6..12].copy_from_slice(&ethsrc.0);
    eth[12..14].copy_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
    Ok(Box::new(WorkloadSource {
        flows,
        next_flow: round_robin.then_some(0),
        rng,
        eth,
        ttl,
        v6,
        size: size as u16,
        mix: if abilene {
            Some(abilene_table())
        } else {
            imix.then(|| IMIX.to_vec())
        },
        limit: u64::try_from(limit).ok(),
        burst,
        stop,
        pacer: (rate > 0).then(|| Pacer::new(rate, burst as u64)),
        count: 0,
        bytes: 0,
        all_workers,
        rate,
        seed,
    }))
}

/// Paces a source at `rate` packets per second: a token bucket whose
/// credit is computed from the time since the start rather than added up
/// batch by batch, so no rounding error accumulates and after T seconds
/// exactly `1 + floor(rate * T)` packets have been allowed (less what was
/// dropped, below).
#[derive(Debug, Clone)]
struct Pacer {
    rate: u64,
    /// Credit kept when the source falls behind (at least a burst, at
    /// least 10 ms of traffic); beyond it, credit is dropped so that a
    /// stall does not end in a long line-rate burst.
    max_backlog: u64,
    /// Router time the schedule starts at.
    start: Option<u64>,
    /// Packets taken since the start, dropped credit included.
    taken: u64,
    /// Credit dropped.
    shortfall: u64,
    /// A timer is asked for at this time.
    timer: Option<u64>,
}

impl Pacer {
    fn new(rate: u64, burst: u64) -> Pacer {
        Pacer {
            rate,
            max_backlog: burst.max(rate / 100),
            start: None,
            taken: 0,
            shortfall: 0,
            timer: None,
        }
    }

    /// Packets allowed by `now` since the start (the first one at once).
    fn allowed(&self, start: u64, now: u64) -> u64 {
        let elapsed = u128::from(now.saturating_sub(start));
        1 + (elapsed * u128::from(self.rate) / 1_000_000_000) as u64
    }

    /// How many of `want` packets may leave at `now`.
    fn take(&mut self, now: u64, want: u64) -> u64 {
        let start = *self.start.get_or_insert(now);
        let mut credit = self.allowed(start, now).saturating_sub(self.taken);
        if credit > self.max_backlog {
            let drop = credit - self.max_backlog;
            self.shortfall += drop;
            self.taken += drop;
            credit = self.max_backlog;
        }
        let n = credit.min(want);
        self.taken += n;
        n
    }

    /// When the next packet is allowed.
    fn next_due(&self) -> u64 {
        let start = self.start.unwrap_or(0);
        // The first time at which allowed() reaches taken + 1.
        let need = u128::from(self.taken); // = (taken + 1) - 1
        let ns = (need * 1_000_000_000).div_ceil(u128::from(self.rate));
        start.saturating_add(ns.min(u128::from(u64::MAX)) as u64)
    }
}

/// Generates a seeded workload.
#[derive(Debug)]
pub struct WorkloadSource {
    flows: Vec<Flow>,
    /// With ROUND_ROBIN: the flow of the next packet.
    next_flow: Option<usize>,
    rng: SplitMix,
    eth: [u8; 14],
    ttl: u8,
    /// IPv6 frames, not IPv4.
    v6: bool,
    size: u16,
    /// Frame sizes drawn uniformly (IMIX or ABILENE); `size` otherwise.
    mix: Option<Vec<u16>>,
    limit: Option<u64>,
    burst: usize,
    stop: bool,
    pacer: Option<Pacer>,
    count: u64,
    bytes: u64,
    all_workers: bool,
    rate: u64,
    seed: u64,
}

/// Worker `w`'s share of `total` split over `n` workers (the remainder
/// goes to the first ones).
fn share(total: u64, w: usize, n: usize) -> u64 {
    total / n as u64 + u64::from((w as u64) < total % n as u64)
}

impl WorkloadSource {
    #[inline]
    fn build(&mut self, now: u64) -> Packet {
        let size = match &self.mix {
            Some(t) => t[self.rng.below(t.len() as u64) as usize] as usize,
            None => self.size as usize,
        };
        let k = match &mut self.next_flow {
            Some(k) => {
                let this = *k;
                *k = (this + 1) % self.flows.len();
                this
            }
            None => self.rng.below(self.flows.len() as u64) as usize,
        };
        let flow = self.flows[k];
        let mut p = Packet::new();
        if self.v6 {
            // Mixes may hold frames too small for IPv6/UDP.
            let size = size.max(MIN_FRAME_V6);
            self.build_v6(&mut p, size, &flow, now);
            self.count += 1;
            self.bytes += size as u64;
            return p;
        }
        // Cannot fail: size <= MAX_FRAME was checked at configuration.
        let _ = p.set_len(size);
        let d = p.data_mut();
        d[..14].copy_from_slice(&self.eth);
        let ip_len = (size - 14) as u16;
        let ip = &mut d[14..34];
        ip[0] = 0x45;
        ip[1] = 0;
        ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
        ip[4..6].copy_from_slice(&(self.count as u16).to_be_bytes());
        ip[6..8].copy_from_slice(&[0x40, 0]); // DF
        ip[8] = self.ttl;
        ip[9] = 17;
        ip[10..12].copy_from_slice(&[0, 0]);
        ip[12..16].copy_from_slice(&(flow.src as u32).to_be_bytes());
        ip[16..20].copy_from_slice(&(flow.dst as u32).to_be_bytes());
        let sum = !bricks_wire::checksum::data(ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let udp = &mut d[34..];
        udp[0..2].copy_from_slice(&flow.sport.to_be_bytes());
        udp[2..4].copy_from_slice(&flow.dport.to_be_bytes());
        udp[4..6].copy_from_slice(&(ip_len - 20).to_be_bytes());
        udp[6..8].copy_from_slice(&[0, 0]);
        let payload = &mut udp[8..];
        if payload.len() >= 16 {
            payload[0..8].copy_from_slice(&self.count.to_be_bytes());
            payload[8..16].copy_from_slice(&now.to_be_bytes());
        }
        p.set_network_header(14);
        self.count += 1;
        self.bytes += size as u64;
        p
    }

    /// An Ethernet/IPv6/UDP frame of `size` bytes (at least
    /// [`MIN_FRAME_V6`]) of `flow` into `p`, with the UDP checksum IPv6
    /// requires (RFC 8200 §8.1) and, when the payload has room, the
    /// sequence number and send time as IPv4's.
    fn build_v6(&self, p: &mut Packet, size: usize, flow: &Flow, now: u64) {
        // Cannot fail: size <= MAX_FRAME was checked at configuration.
        let _ = p.set_len(size);
        let d = p.data_mut();
        d[..14].copy_from_slice(&self.eth);
        let udp_len = (size - 14 - 40) as u16;
        let (src, dst) = (flow.src.to_be_bytes(), flow.dst.to_be_bytes());
        let ip = &mut d[14..54];
        // Version 6, traffic class 0, the flow label from the ports so
        // that flow-label ECMP sees one label per flow.
        let label = (u32::from(flow.sport) << 4 ^ u32::from(flow.dport)) & 0xf_ffff;
        ip[0..4].copy_from_slice(&(6 << 28 | label).to_be_bytes());
        ip[4..6].copy_from_slice(&udp_len.to_be_bytes());
        ip[6] = 17;
        ip[7] = self.ttl;
        ip[8..24].copy_from_slice(&src);
        ip[24..40].copy_from_slice(&dst);
        let udp = &mut d[54..];
        udp[0..2].copy_from_slice(&flow.sport.to_be_bytes());
        udp[2..4].copy_from_slice(&flow.dport.to_be_bytes());
        udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
        udp[6..8].copy_from_slice(&[0, 0]);
        let payload = &mut udp[8..];
        if payload.len() >= 16 {
            payload[0..8].copy_from_slice(&self.count.to_be_bytes());
            payload[8..16].copy_from_slice(&now.to_be_bytes());
        }
        // The pseudo-header (RFC 8200 §8.1): the flow's addresses, then
        // the length and next header, each below 2^16.
        let sum = !checksum::combine(&[
            flow.addrs_sum,
            udp_len,
            u16::from(IpProtocol::UDP.0),
            checksum::data(udp),
        ]);
        // A computed zero is sent as all ones (RFC 768, RFC 8200 §8.1).
        let sum = if sum == 0 { 0xffff } else { sum };
        udp[6..8].copy_from_slice(&sum.to_be_bytes());
        p.set_network_header(14);
    }
}

impl Element for WorkloadSource {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn task_on_every_worker(&self) -> bool {
        self.all_workers
    }

    fn start(&mut self, cx: &mut Context<'_>) {
        let (w, n) = (cx.worker(), cx.workers());
        if !self.all_workers || n <= 1 {
            return;
        }
        // This worker's flows; with fewer flows than workers, one each.
        let mine: Vec<Flow> = if self.flows.len() >= n {
            self.flows.iter().skip(w).step_by(n).copied().collect()
        } else {
            vec![self.flows[w % self.flows.len()]]
        };
        self.flows = mine;
        self.rng = SplitMix(self.seed ^ (w as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        self.limit = self.limit.map(|l| share(l, w, n));
        if self.rate > 0 {
            let r = share(self.rate, w, n).max(1);
            self.pacer = Some(Pacer::new(r, self.burst as u64));
        }
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let left = self
            .limit
            .map_or(u64::MAX, |l| l.saturating_sub(self.count));
        if left == 0 {
            if self.stop {
                cx.request_stop();
            }
            return TaskResult::Done;
        }
        let now = cx.now();
        let mut n = (self.burst as u64).min(left) as usize;
        if let Some(pacer) = self.pacer.as_mut() {
            n = pacer.take(now.0, n as u64) as usize;
            if n == 0 {
                let due = pacer.next_due();
                if pacer.timer.is_none_or(|t| t > due) {
                    pacer.timer = Some(due);
                    cx.schedule_at(Timestamp(due));
                }
                return TaskResult::Idle;
            }
        }
        let mut b = Batch::new();
        for _ in 0..n {
            let mut p = self.build(now.0);
            p.anno_mut().timestamp = now;
            let _ = b.push(p);
        }
        cx.push(0, &mut b);
        TaskResult::Worked
    }

    fn run_timer(&mut self, _cx: &mut Context<'_>) {
        // The timer only wakes the engine; the task sends.
        if let Some(p) = self.pacer.as_mut() {
            p.timer = None;
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("byte_count", self.bytes);
        if let Some(p) = &self.pacer {
            s.counter("rate_shortfall", p.shortfall);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;
    use bricks_wire::ipv4::Ipv4Packet;

    #[test]
    fn round_robin_takes_the_flows_in_turn() {
        let mut h = Harness::push(&CLASS, "FLOWS 3, ROUND_ROBIN true, LIMIT 9", 0, 1);
        while h.run_task() == TaskResult::Worked {}
        let ports: Vec<[u8; 2]> = h.take_bytes(0).iter().map(|f| [f[34], f[35]]).collect();
        assert_eq!(ports.len(), 9);
        for (i, p) in ports.iter().enumerate() {
            assert_eq!(p, &ports[i % 3], "packet {i}");
        }
        assert!(ports[0] != ports[1] && ports[1] != ports[2] && ports[0] != ports[2]);
    }

    #[test]
    fn packets_are_valid_ipv4_udp() {
        let mut h = Harness::push(&CLASS, "FLOWS 10, DST 10.1.0.0/16, LIMIT 50, SEED 7", 0, 1);
        while h.run_task() == TaskResult::Worked {}
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 50);
        for f in &out {
            assert_eq!(f.len(), 64);
            assert_eq!(&f[12..14], &[0x08, 0x00]);
            let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
            assert!(ip.verify_checksum());
            assert_eq!(ip.total_len(), 50);
            let d = ip.dst_addr().octets();
            assert_eq!(&d[..2], &[10, 1]);
        }
        let distinct: std::collections::HashSet<_> =
            out.iter().map(|f| f[30..34].to_vec()).collect();
        assert!(distinct.len() > 1 && distinct.len() <= 10);
    }

    /// The UDP checksum over IPv6 of frame `f` (Ethernet, IPv6, UDP):
    /// the ones' complement sum of the pseudo-header and the datagram,
    /// which is 0xffff for a datagram whose checksum is right.
    fn udp6_sum(f: &[u8]) -> u16 {
        let ip = &f[14..];
        let udp = &ip[40..];
        let mut sum: u32 = 0;
        let mut add = |b: &[u8]| {
            for w in b.chunks(2) {
                sum += u32::from(w[0]) << 8 | u32::from(*w.get(1).unwrap_or(&0));
            }
        };
        add(&ip[8..40]);
        add(&(udp.len() as u32).to_be_bytes());
        add(&[0, 0, 0, 17]);
        add(udp);
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum as u16
    }

    /// Why a WorkloadSource with `args` is refused.
    fn refused(args: &str) -> String {
        bricks_runtime::testing::make_element(&CLASS, args, &PortInfo::default()).unwrap_err()
    }

    #[test]
    fn packets_are_valid_ipv6_udp() {
        for (args, size) in [
            ("DST 2001:db8:5::/48, SIZE 78", 78),
            ("DST 2001:db8:5::/48", 64),
            ("IPV6 true, SIZE 62", 62),
            ("SRC 2001:db8:77::/120, SIZE 200", 200),
        ] {
            let mut h = Harness::push(&CLASS, &format!("FLOWS 10, LIMIT 50, SEED 7, {args}"), 0, 1);
            while h.run_task() == TaskResult::Worked {}
            let out = h.take_bytes(0);
            assert_eq!(out.len(), 50);
            for f in &out {
                assert_eq!(f.len(), size, "{args}");
                assert_eq!(&f[12..14], &[0x86, 0xdd]);
                let ip = &f[14..];
                assert_eq!(ip[0] >> 4, 6);
                assert_eq!(usize::from(u16::from_be_bytes([ip[4], ip[5]])), size - 54);
                assert_eq!((ip[6], ip[7]), (17, 64));
                assert_eq!(usize::from(u16::from_be_bytes([ip[44], ip[45]])), size - 54);
                assert_ne!(&ip[46..48], &[0, 0], "IPv6 needs a UDP checksum");
                assert_eq!(udp6_sum(f), 0xffff, "{args}: checksum");
                let (src, dst) = (&ip[8..24], &ip[24..40]);
                if args.starts_with("SRC") {
                    assert_eq!(
                        &src[..15],
                        &[0x20, 1, 0xd, 0xb8, 0, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0]
                    );
                    assert_eq!(&dst[..6], &[0x20, 1, 0, 2, 0, 0], "RFC 5180's prefix");
                } else {
                    assert_eq!(&src[..8], &[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0]);
                }
                if args.starts_with("DST") {
                    assert_eq!(&dst[..6], &[0x20, 1, 0xd, 0xb8, 0, 5]);
                }
                // A flow's label is the same in each of its packets.
                let label = u32::from_be_bytes([0, ip[1] & 0xf, ip[2], ip[3]]);
                let same = out
                    .iter()
                    .filter(|g| g[14 + 40..14 + 44] == f[14 + 40..14 + 44]);
                assert!(same
                    .map(|g| u32::from_be_bytes([0, g[15] & 0xf, g[16], g[17]]))
                    .all(|l| l == label));
            }
            let distinct: std::collections::HashSet<_> =
                out.iter().map(|f| f[38..54].to_vec()).collect();
            assert!(distinct.len() > 1 && distinct.len() <= 10, "{args}");
        }
        // The real checker of the router passes them all, and a mix's
        // smallest frames grow to IPv6's smallest.
        let mut h = Harness::push(&CLASS, "IPV6 true, ABILENE true, FLOWS 4, LIMIT 300", 0, 1);
        while h.run_task() == TaskResult::Worked {}
        let out = h.take_bytes(0);
        assert!(out.iter().all(|f| f.len() >= 62 && udp6_sum(f) == 0xffff));
        assert!(out.iter().any(|f| f.len() == 62));
        let mut check = Harness::push(&crate::ip6::checkip6header::CLASS, "OFFSET 14", 1, 2);
        check.push_packets(0, out.iter().map(|f| Packet::from_slice(f).unwrap()));
        assert_eq!(check.take(0).len(), out.len());
    }

    #[test]
    fn one_family_and_routes_of_it() {
        let e = refused;
        assert!(e("DST 10.0.0.0/8 2001:db8::/32").contains("must all be IPv4"));
        assert!(e("DST 2001:db8::/32 10.0.0.0/8").contains("must all be IPv6"));
        assert!(e("IPV6 true, DST 10.0.0.0/8").contains("as IPV6 says"));
        assert!(e("SRC 10.0.0.0/8, DST 2001:db8::/32").contains("must all be IPv6"));
        assert!(e("IPV6 true, SIZE 61").contains("too small for IPv6"));
        assert!(e("DST 2001:db8::/129").contains("bad argument DST"));
        assert!(e("SRC fe80::1/200").contains("bad argument SRC"));
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("routes.txt");
        std::fs::write(
            &file,
            "10.9.0.0/16 0\n2001:db8:aa::/48 0\n2001:db8:bb::/64 1\n",
        )
        .unwrap();
        for (v6, first) in [("", 10u8), ("IPV6 true, ", 0x20)] {
            let args = format!("{v6}FLOWS 100, LIMIT 200, ROUTES {}", file.display());
            let mut h = Harness::push(&CLASS, &args, 0, 1);
            while h.run_task() == TaskResult::Worked {}
            let out = h.take_bytes(0);
            assert_eq!(out.len(), 200);
            let dst = |f: &Vec<u8>| {
                if v6.is_empty() {
                    f[30..34].to_vec()
                } else {
                    f[38..54].to_vec()
                }
            };
            assert!(out.iter().all(|f| dst(f)[0] == first), "{args}");
            if !v6.is_empty() {
                let aa = out
                    .iter()
                    .filter(|f| dst(f)[..6] == [0x20, 1, 0xd, 0xb8, 0, 0xaa])
                    .count();
                let bb = out
                    .iter()
                    .filter(|f| dst(f)[..8] == [0x20, 1, 0xd, 0xb8, 0, 0xbb, 0, 0])
                    .count();
                assert!(aa > 50 && bb > 50 && aa + bb == 200, "{aa} {bb}");
            }
        }
        let only_v4 = tmp.path().join("v4.txt");
        std::fs::write(&only_v4, "10.0.0.0/8 0\n").unwrap();
        assert!(e(&format!("IPV6 true, ROUTES {}", only_v4.display())).contains("no IPv6 prefix"));
    }

    #[test]
    fn same_seed_same_packets() {
        let run = |seed: u64| {
            let mut h = Harness::push(
                &CLASS,
                &format!("IMIX true, FLOWS 100, LIMIT 40, SEED {seed}"),
                0,
                1,
            );
            while h.run_task() == TaskResult::Worked {}
            h.take_bytes(0)
                .into_iter()
                .map(|mut f| {
                    // the send time differs between runs; blank it
                    if f.len() >= 58 {
                        f[50..58].fill(0);
                    }
                    f
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }

    #[test]
    fn imix_ratio() {
        let mut h = Harness::push(&CLASS, "IMIX true, LIMIT 12000", 0, 1);
        while h.run_task() == TaskResult::Worked {}
        let out = h.take(0);
        let n = |s| out.iter().filter(|p| p.len() == s).count() as f64;
        let (a, b, c) = (n(64), n(594), n(1518));
        assert!((a / c - 7.0).abs() < 1.0, "{a} {b} {c}");
        assert!((b / c - 4.0).abs() < 0.7, "{a} {b} {c}");
    }

    /// The Abilene-like mix: each size in its proportion, and the
    /// statistics it was fitted to (CAIDA's AIX: mean 413 bytes, median
    /// 93, quartiles 40 and 576, 95th percentile 1500, as IP lengths).
    #[test]
    fn abilene_mix_matches_its_statistics() {
        let t = abilene_table();
        assert_eq!(t.len(), 100);
        // IP lengths: the frame less its Ethernet header, 40 for the
        // padded minimum frames.
        let mut ip: Vec<u16> = t
            .iter()
            .map(|&f| if f == 60 { 40 } else { f - 14 })
            .collect();
        ip.sort_unstable();
        let mean = ip.iter().map(|&x| f64::from(x)).sum::<f64>() / 100.0;
        assert!((mean - 413.0).abs() < 5.0, "mean {mean}");
        assert_eq!(ip[49], 93, "median");
        assert_eq!(ip[4], 40, "5th percentile");
        assert_eq!(ip[24], 40, "25th percentile");
        assert_eq!(ip[74], 576, "75th percentile");
        assert_eq!(ip[94], 1500, "95th percentile");
        assert!((abilene_mean() - 427.64).abs() < 0.01, "{}", abilene_mean());
        // Generated: every size in about its share, valid IPv4 lengths.
        let mut h = Harness::push(&CLASS, "ABILENE true, LIMIT 20000, SEED 5", 0, 1);
        while h.run_task() == TaskResult::Worked {}
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 20_000);
        for &(size, pct) in &ABILENE {
            let n = out.iter().filter(|f| f.len() == size as usize).count() as f64;
            let want = 20_000.0 * f64::from(pct) / 100.0;
            assert!(
                (n - want).abs() < want * 0.15 + 30.0,
                "{size}: {n} of {want}"
            );
        }
        for f in &out {
            let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
            assert_eq!(usize::from(ip.total_len()), f.len() - 14);
            assert!(ip.verify_checksum());
        }
        let ports = PortInfo {
            inputs: Vec::new(),
            outputs: vec![bricks_element::Processing::Push],
        };
        let bad = Harness::try_new(&CLASS, "ABILENE true, IMIX true", ports);
        assert!(bad.is_err_and(|e| e.contains("two mixes")));
    }

    /// Runs the source at simulated times from `start` to `end` in steps of
    /// `step(i)` ns, dropping what it sends; returns how many it sent.
    fn drive(h: &mut Harness, start: u64, end: u64, mut step: impl FnMut() -> u64) -> usize {
        let mut t = start;
        let mut sent = 0;
        loop {
            h.advance_to(Timestamp(t));
            while h.run_task() == TaskResult::Worked {}
            sent += h.take(0).len();
            if t >= end {
                return sent;
            }
            t = (t + step()).min(end);
        }
    }

    #[test]
    fn rate_is_exact_over_a_long_run() {
        let mut h = Harness::push(&CLASS, "RATE 1000", 0, 1);
        let start = 1_700_000_000_000_000_000;
        let mut rng = SplitMix(9);
        // 100 simulated seconds in uneven steps of up to 3 ms.
        let sent = drive(&mut h, start, start + 100_000_000_000, || {
            1 + rng.below(3_000_000)
        });
        assert_eq!(sent, 100_001);
        assert_eq!(h.stats().get("rate_shortfall"), Some(0));
    }

    #[test]
    fn rate_waits_on_a_timer() {
        let mut h = Harness::push(&CLASS, "RATE 10, LIMIT 3, STOP true", 0, 1);
        h.advance_to(Timestamp(5_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.timers(), [Timestamp(5_100_000_000)]);
        // Asked once, however often the idle task runs.
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.timers().len(), 1);
        h.advance_to(Timestamp(5_100_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        h.advance_to(Timestamp(5_250_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Done);
        assert!(h.stop_requested());
        assert_eq!(h.take(0).len(), 3);
    }

    #[test]
    fn a_stall_drops_credit_instead_of_bursting() {
        let mut h = Harness::push(&CLASS, "RATE 100000, BURST 32", 0, 1);
        let t0 = 1_000_000_000;
        h.advance_to(Timestamp(t0));
        while h.run_task() == TaskResult::Worked {}
        assert_eq!(h.take(0).len(), 1);
        // One second without running: 100,000 packets of credit, of which
        // 10 ms' worth (1,000) is kept.
        h.advance_to(Timestamp(t0 + 1_000_000_000));
        while h.run_task() == TaskResult::Worked {}
        assert_eq!(h.take(0).len(), 1_000);
        assert_eq!(h.stats().get("rate_shortfall"), Some(99_000));
    }

    #[test]
    fn destinations_from_a_route_file() {
        // Deleted when dropped, also when an assertion fails.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let file = dir.join("routes.txt");
        std::fs::write(
            &file,
            "10.9.0.0/16 0\n172.20.5.0/24 10.0.0.1 1\n2001:db8::/32 0\n",
        )
        .unwrap();
        let mut h = Harness::push(
            &CLASS,
            &format!("FLOWS 200, LIMIT 400, ROUTES {}", file.display()),
            0,
            1,
        );
        while h.run_task() == TaskResult::Worked {}
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 400);
        let (mut a, mut b) = (0, 0);
        for f in &out {
            match &f[30..33] {
                [10, 9, _] => a += 1,
                [172, 20, 5] => b += 1,
                d => panic!("destination {d:?} outside the route file"),
            }
        }
        assert!(a > 100 && b > 100, "{a} {b}");
        let only_v6 = dir.join("v6.txt");
        std::fs::write(&only_v6, "2001:db8::/32 0\n").unwrap();
        let e = bricks_runtime::testing::make_element(
            &CLASS,
            &format!("ROUTES {}", only_v6.display()),
            &PortInfo::default(),
        )
        .unwrap_err();
        assert!(e.contains("no IPv4 prefix"), "{e}");
    }

    #[test]
    fn bad_arguments() {
        let e = refused;
        assert!(e("SIZE 20").contains("SIZE 20 out of range"));
        assert!(e("DST 10.0.0.0/33").contains("DST"));
        assert!(e("FLOWS 0").contains("FLOWS 0"));
    }
}
