//! `FastUDPSource` and `FastUDPFlows`: benchmark generators that re-send
//! prebuilt Ethernet/IPv4/UDP frames (Click's
//! `elements/userlevel/fastudpsrc.cc`, `elements/tcpudp/fastudpflows.cc`).
//! The headers are Click's: IPv4 ID 0, TTL 250, no fragment bits, a zero
//! payload, the UDP checksum over header and payload (RFC 768) unless
//! CHECKSUM is false.
//!
//! The frame, the pacing and the handlers are shared with
//! `FastUDPSourceIP6` (`crate::ip6::fast_udp_source6`) and `FastTCPFlows`
//! (`super::fast_tcp_flows`).

use super::source::{Emitter, Pacer, LIMIT_KEYWORDS};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_packet::{Annotations, DEFAULT_BURST, MAX_BATCH, MAX_FRAME};
use bricks_wire::checksum;
use bricks_wire::ethernet::EthernetAddress;
use bricks_wire::ip::IpProtocol;
use std::net::{Ipv4Addr, Ipv6Addr};

/// The `FastUDPSource` class.
pub static FAST_UDP_SOURCE: ElementClass = ElementClass {
    name: "FastUDPSource",
    ports: "0/1",
    processing: "/a",
    manual: &SOURCE_MANUAL,
    make: make_source,
};

/// The `FastUDPFlows` class.
pub static FAST_UDP_FLOWS: ElementClass = ElementClass {
    name: "FastUDPFlows",
    ports: "0/1",
    processing: "/a",
    manual: &FLOWS_MANUAL,
    make: make_flows,
};

pub(crate) const fn kw(name: &'static str, ty: &'static str, doc: &'static str) -> Keyword {
    Keyword {
        name,
        ty,
        default: None,
        doc,
    }
}

pub(crate) const RATE: Keyword = kw(
    "RATE",
    "unsigned",
    "packets per second on the router's clock; 0 for as fast as scheduled",
);
pub(crate) const LIMIT: Keyword = kw("LIMIT", "integer", "packets in all; negative for no limit");
pub(crate) const LENGTH: Keyword = kw(
    "LENGTH",
    "unsigned",
    "frame length with the Ethernet header (at least 60, at most 2048)",
);
pub(crate) const CHECKSUM: Keyword = Keyword {
    name: "CHECKSUM",
    ty: "boolean",
    default: Some("true"),
    doc: "compute the UDP checksum (false: 0)",
};

static SOURCE_MANUAL: Manual = Manual {
    summary: "creates packets with static UDP/IP/Ethernet headers",
    synopsis: "FastUDPSource(RATE, LIMIT, LENGTH, SRCETH, SRCIP, SPORT, DSTETH, DSTIP, DPORT \
        [, CHECKSUM, INTERVAL, ACTIVE, KEYWORDS])",
    description: "Builds one UDP/IPv4/Ethernet frame of LENGTH bytes at start and sends copies \
        of it at RATE packets per second, LIMIT in all. With INTERVAL N, after every N \
        packets both ports go up by one and the checksum is recomputed. After LIMIT packets \
        the `rate` handler reads the average rate between the first and the last packet \
        (Click's); writing `rate` sets RATE. Writing `active` true starts the count over.",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        RATE,
        LIMIT,
        LENGTH,
        kw("SRCETH", "Ethernet address", "source Ethernet address"),
        kw("SRCIP", "IPv4 address", "source address"),
        kw("SPORT", "port", "source port"),
        kw("DSTETH", "Ethernet address", "destination Ethernet address"),
        kw("DSTIP", "IPv4 address", "destination address"),
        kw("DPORT", "port", "destination port"),
        CHECKSUM,
        Keyword {
            name: "INTERVAL",
            ty: "unsigned",
            default: Some("0"),
            doc: "packets between port increments; 0 for never",
        },
        LIMIT_KEYWORDS[1],
        LIMIT_KEYWORDS[2],
        LIMIT_KEYWORDS[3],
        LIMIT_KEYWORDS[4],
    ],
    counters: &[("count", "packets sent since the last reset")],
    example: "FastUDPSource(1000, 10, 60, 0:0:0:0:0:1, 10.0.0.1, 1234, 0:0:0:0:0:2, 10.0.0.2, \
        5678, STOP true) -> ToDump(out.pcap);",
    see_also: &["FastUDPFlows", "RatedSource", "UDPIPEncap"],
};

static FLOWS_MANUAL: Manual = Manual {
    summary: "creates packet flows with static UDP/IP/Ethernet headers",
    synopsis: "FastUDPFlows(RATE, LIMIT, LENGTH, SRCETH, SRCIP, DSTETH, DSTIP, FLOWS, FLOWSIZE \
        [, CHECKSUM, ACTIVE, KEYWORDS])",
    description: "Like FastUDPSource with FLOWS flows between the same addresses, each with \
        random source and destination ports. Each packet belongs to a flow picked at \
        random; after FLOWSIZE packets a flow takes new random ports, as Click's does. The \
        random numbers come from a SplitMix64 generator seeded with SEED, so that a run \
        repeats.",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        RATE,
        LIMIT,
        LENGTH,
        kw("SRCETH", "Ethernet address", "source Ethernet address"),
        kw("SRCIP", "IPv4 address", "source address"),
        kw("DSTETH", "Ethernet address", "destination Ethernet address"),
        kw("DSTIP", "IPv4 address", "destination address"),
        kw("FLOWS", "unsigned", "number of flows (1 to 1048576)"),
        kw(
            "FLOWSIZE",
            "unsigned",
            "packets per flow before its ports change",
        ),
        CHECKSUM,
        LIMIT_KEYWORDS[1],
        Keyword {
            name: "SEED",
            ty: "unsigned",
            default: Some("1"),
            doc: "seed of the flow choice and ports",
        },
        LIMIT_KEYWORDS[2],
        LIMIT_KEYWORDS[3],
        LIMIT_KEYWORDS[4],
    ],
    counters: &[("count", "packets sent since the last reset")],
    example: "FastUDPFlows(0, 1000, 60, 0:0:0:0:0:1, 10.0.0.1, 0:0:0:0:0:2, 10.0.0.2, 100, 10) \
        -> Discard;",
    see_also: &["FastUDPSource"],
};

/// Most flows FastUDPFlows and FastTCPFlows keep (8 bytes each).
pub(crate) const MAX_FLOWS: usize = 1 << 20;

/// The destination annotation a generator's packets carry.
#[derive(Debug, Clone, Copy)]
pub(crate) enum DstAnno {
    /// `dst_ip`, for LookupIPRoute.
    V4(Ipv4Addr),
    /// `dst_ip6`, for LookupIP6Route.
    V6(Ipv6Addr),
}

impl DstAnno {
    #[inline]
    pub(crate) fn apply(self, a: &mut Annotations) {
        match self {
            DstAnno::V4(d) => a.dst_ip = d,
            DstAnno::V6(d) => a.dst_ip6 = d,
        }
    }
}

/// The prebuilt frame: Ethernet, a 20-byte IPv4 header (or a 40-byte
/// IPv6 header) and UDP, zeros after.
#[derive(Debug, Clone)]
pub(crate) struct UdpFrame {
    frame: Vec<u8>,
    /// Where the UDP header starts (34 after IPv4, 54 after IPv6).
    udp: usize,
    /// The pseudo-header's sum (RFC 768; RFC 8200 section 8.1).
    pseudo: u16,
    dst: DstAnno,
    checksum: bool,
    /// A checksum that computes to zero is sent as 0xffff (IPv6, where
    /// zero means none and receivers drop it); Click's IPv4 source keeps
    /// zero, which IPv4 receivers read as "no checksum".
    zero_as_ones: bool,
}

impl UdpFrame {
    fn new(
        len: usize,
        src_eth: EthernetAddress,
        src: Ipv4Addr,
        dst_eth: EthernetAddress,
        dst: Ipv4Addr,
        checksum: bool,
    ) -> UdpFrame {
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&dst_eth.0);
        f[6..12].copy_from_slice(&src_eth.0);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
        ip[8] = 250;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&src.octets());
        ip[16..20].copy_from_slice(&dst.octets());
        let sum = !checksum::data(ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let ulen = (len - 34) as u16;
        f[38..40].copy_from_slice(&ulen.to_be_bytes());
        UdpFrame {
            frame: f,
            udp: 34,
            pseudo: checksum::pseudo_header_v4(src, dst, IpProtocol::UDP, ulen),
            dst: DstAnno::V4(dst),
            checksum,
            zero_as_ones: false,
        }
    }

    /// The IPv6 frame of Click's FastUDPSourceIP6: version 6, traffic
    /// class and flow label 0, next header UDP, hop limit 250; `len` is at
    /// least 62, so that the UDP header fits.
    pub(crate) fn new_v6(
        len: usize,
        src_eth: EthernetAddress,
        src: Ipv6Addr,
        dst_eth: EthernetAddress,
        dst: Ipv6Addr,
        checksum: bool,
    ) -> UdpFrame {
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&dst_eth.0);
        f[6..12].copy_from_slice(&src_eth.0);
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        let ulen = (len - 54) as u16;
        let ip = &mut f[14..54];
        ip[0] = 0x60;
        ip[4..6].copy_from_slice(&ulen.to_be_bytes());
        ip[6] = 17;
        ip[7] = 250;
        ip[8..24].copy_from_slice(&src.octets());
        ip[24..40].copy_from_slice(&dst.octets());
        f[58..60].copy_from_slice(&ulen.to_be_bytes());
        UdpFrame {
            frame: f,
            udp: 54,
            pseudo: checksum::pseudo_header_v6(src, dst, IpProtocol::UDP, u32::from(ulen)),
            dst: DstAnno::V6(dst),
            checksum,
            zero_as_ones: true,
        }
    }

    /// Writes the ports into `f` (a copy of the frame) with their
    /// checksum. The payload is zeros, so the header and the
    /// pseudo-header are the whole sum.
    fn set_ports(&self, f: &mut [u8], sport: u16, dport: u16) {
        let u = self.udp;
        f[u..u + 2].copy_from_slice(&sport.to_be_bytes());
        f[u + 2..u + 4].copy_from_slice(&dport.to_be_bytes());
        f[u + 6..u + 8].copy_from_slice(&[0, 0]);
        if self.checksum {
            // IPv4: Click's click_in_cksum_pseudohdr, a sum of 0 stays 0.
            let mut sum = !checksum::combine(&[checksum::data(&f[u..u + 8]), self.pseudo]);
            if sum == 0 && self.zero_as_ones {
                sum = 0xffff;
            }
            f[u + 6..u + 8].copy_from_slice(&sum.to_be_bytes());
        }
    }
}

/// What the generators read before their positional addresses: RATE,
/// LIMIT and LENGTH (at least 60, as in Click).
pub(crate) fn read_common(args: &mut Args<'_>) -> Result<(u64, i64, usize), ArgError> {
    let rate: u64 = args.read_mp("RATE")?;
    let limit: i64 = args.read_mp("LIMIT")?;
    let len: usize = args.read_mp("LENGTH")?;
    if len > MAX_FRAME {
        return Err(ArgError::new(format!(
            "LENGTH {len} is more than the {MAX_FRAME}-byte packet buffer"
        )));
    }
    // Click: "warning: packet length < 60, defaulting to 60".
    Ok((rate, limit, len.max(60)))
}

/// The generators' emitter: LIMIT as read, ACTIVE, then STOP, END_CALL
/// and TIMESTAMP.
pub(crate) fn emitter(
    args: &mut Args<'_>,
    ports: &PortInfo,
    limit: i64,
    active: bool,
) -> Result<Emitter, ArgError> {
    let mut e = Emitter::read_limits(args, ports, false)?;
    e.limit = u64::try_from(limit).ok();
    e.active = active;
    e.read_ends(args)?;
    Ok(e)
}

/// The rate part the generators share: RATE 0 is as fast as scheduled;
/// the achieved rate between the first and the last packet.
#[derive(Debug)]
pub(crate) struct Sender {
    pub(crate) e: Emitter,
    pacer: Option<Pacer>,
    first: Option<u64>,
    last: Option<u64>,
}

impl Sender {
    pub(crate) fn new(e: Emitter, rate: u64) -> Sender {
        Sender {
            e,
            pacer: (rate > 0).then(|| Pacer::new(rate)),
            first: None,
            last: None,
        }
    }

    /// Packets to send now, at most `max`; once LIMIT is reached, at most
    /// `tail` more (FastTCPFlows' closing FINs).
    fn due(&mut self, max: usize, tail: u64, cx: &Context<'_>) -> usize {
        let left = match self.e.remaining() {
            0 => tail,
            r => r,
        };
        let n = (max as u64).min(left);
        match &mut self.pacer {
            Some(p) => p.due(cx.now(), self.e.count).min(n) as usize,
            None => n as usize,
        }
    }

    fn sent(&mut self, cx: &Context<'_>) {
        let now = cx.now().0;
        self.first.get_or_insert(now);
        if self.e.remaining() == 0 {
            self.last = Some(now);
        }
    }

    /// The task's turn: `make` fills up to n packets.
    pub(crate) fn run(
        &mut self,
        cx: &mut Context<'_>,
        make: impl FnMut(&mut Emitter, &mut Batch, usize, &Context<'_>),
    ) -> TaskResult {
        self.run_with_tail(cx, 0, make)
    }

    /// [`Sender::run`] for a generator with `tail` packets still to send
    /// once LIMIT is reached; the end (STOP, END_CALL) comes after them. A
    /// batch is all before LIMIT or all after it.
    pub(crate) fn run_with_tail(
        &mut self,
        cx: &mut Context<'_>,
        tail: u64,
        mut make: impl FnMut(&mut Emitter, &mut Batch, usize, &Context<'_>),
    ) -> TaskResult {
        if self.e.remaining() == 0 && tail == 0 {
            return self.e.finished(cx);
        }
        if !self.e.active {
            if let Some(p) = &mut self.pacer {
                p.restart();
            }
            return TaskResult::Idle;
        }
        let max = if self.pacer.is_some() {
            MAX_BATCH
        } else {
            DEFAULT_BURST
        };
        let n = self.due(max, tail, cx);
        if n == 0 {
            if let Some(p) = &self.pacer {
                cx.schedule_at(p.next_due(self.e.count));
            }
            return TaskResult::Waiting;
        }
        let mut b = Batch::new();
        make(&mut self.e, &mut b, n, cx);
        self.sent(cx);
        cx.push(0, &mut b);
        TaskResult::Worked
    }

    pub(crate) fn pull(
        &mut self,
        out: &mut Batch,
        max: usize,
        cx: &mut Context<'_>,
        make: impl FnMut(&mut Emitter, &mut Batch, usize, &Context<'_>),
    ) {
        self.pull_with_tail(out, max, cx, 0, make);
    }

    /// [`Sender::pull`] with `tail` packets after LIMIT, as
    /// [`Sender::run_with_tail`].
    pub(crate) fn pull_with_tail(
        &mut self,
        out: &mut Batch,
        max: usize,
        cx: &mut Context<'_>,
        tail: u64,
        mut make: impl FnMut(&mut Emitter, &mut Batch, usize, &Context<'_>),
    ) {
        if !self.e.active {
            return;
        }
        if self.e.remaining() == 0 && tail == 0 {
            let _ = self.e.finished(cx);
            return;
        }
        let n = self.due(max, tail, cx);
        if n > 0 {
            make(&mut self.e, out, n, cx);
            self.sent(cx);
        }
    }

    fn reset(&mut self) {
        self.e.count = 0;
        self.first = None;
        self.last = None;
        if let Some(p) = &mut self.pacer {
            p.restart();
        }
    }

    /// Click's `rate` read handler: packets per second between the first
    /// and the last packet, in whole jiffies (ms), once LIMIT is reached.
    pub(crate) fn read(&self, handler: &str) -> Option<String> {
        match handler {
            "rate" => Some(match (self.first, self.last) {
                (Some(f), Some(l)) => {
                    let d = (l / 1_000_000).saturating_sub(f / 1_000_000).max(1);
                    (self.e.count * 1000 / d).to_string()
                }
                _ => "0".into(),
            }),
            "count" => Some(self.e.count.to_string()),
            "limit" | "active" => self.e.read(handler),
            _ => None,
        }
    }

    pub(crate) fn write(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let v = value.trim();
        match handler {
            "rate" => {
                let r = u64::from_arg(v).map_err(|_| "rate parameter must be integer >= 0")?;
                self.pacer = (r > 0).then(|| Pacer::new(r));
            }
            "reset" => self.reset(),
            "active" => {
                let a = bool::from_arg(v).map_err(|_| "active parameter must be boolean")?;
                self.e.active = a;
                if a {
                    self.reset();
                }
            }
            "limit" => {
                let l = i64::from_arg(v).map_err(|_| "limit parameter must be integer >= 0")?;
                self.e.limit = u64::try_from(l).ok();
            }
            _ => return Err(format!("no write handler `{handler}`")),
        }
        Ok(())
    }
}

fn make_source(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let (rate, limit, len) = read_common(args)?;
    let src_eth: EthernetAddress = args.read_mp("SRCETH")?;
    let src: Ipv4Addr = args.read_mp("SRCIP")?;
    let sport: u16 = args.read_mp("SPORT")?;
    let dst_eth: EthernetAddress = args.read_mp("DSTETH")?;
    let dst: Ipv4Addr = args.read_mp("DSTIP")?;
    let dport: u16 = args.read_mp("DPORT")?;
    let cksum: bool = args.read_p("CHECKSUM")?.unwrap_or(true);
    let interval: u64 = args.read_p("INTERVAL")?.unwrap_or(0);
    let active: bool = args.read_p("ACTIVE")?.unwrap_or(true);
    let e = emitter(args, ports, limit, active)?;
    let udp = UdpFrame::new(len, src_eth, src, dst_eth, dst, cksum);
    Ok(Box::new(FastUDPSource::new(
        e, rate, udp, sport, dport, interval,
    )))
}

/// Re-sends one prebuilt UDP frame.
#[derive(Debug)]
pub struct FastUDPSource {
    s: Sender,
    gen: PortGen,
}

impl FastUDPSource {
    /// A source of `udp` from `sport` to `dport`, both moving up by one
    /// every `interval` packets (never when 0), at `rate` packets per
    /// second (as fast as scheduled when 0).
    pub(crate) fn new(
        e: Emitter,
        rate: u64,
        udp: UdpFrame,
        sport: u16,
        dport: u16,
        interval: u64,
    ) -> FastUDPSource {
        let mut s = Sender::new(e, rate);
        let gen = PortGen {
            udp,
            sport,
            dport,
            interval,
            incr: 0,
        };
        gen.build(&mut s.e);
        FastUDPSource { s, gen }
    }
}

/// FastUDPSource's frame and its ports.
#[derive(Debug)]
struct PortGen {
    udp: UdpFrame,
    sport: u16,
    dport: u16,
    interval: u64,
    incr: u16,
}

impl PortGen {
    /// The frame with the current ports, as the emitter's packet.
    fn build(&self, e: &mut Emitter) {
        let mut f = self.udp.frame.clone();
        self.udp.set_ports(
            &mut f,
            self.sport.wrapping_add(self.incr),
            self.dport.wrapping_add(self.incr),
        );
        // Cannot fail: LENGTH was checked against the buffer size.
        let _ = e.set_data(f, None);
    }

    /// Makes `n` packets, moving the ports on every INTERVAL packets.
    fn make(&mut self, e: &mut Emitter, b: &mut Batch, n: usize, cx: &Context<'_>) {
        let dst = self.udp.dst;
        let mut left = n;
        // Bounded: each round makes at least one packet.
        while left > 0 {
            let chunk = if self.interval > 0 {
                let into = e.count % self.interval;
                ((self.interval - into).min(left as u64)) as usize
            } else {
                left
            };
            let before = b.len();
            e.fill(b, chunk, cx);
            for p in &mut b.as_mut_slice()[before..] {
                p.set_network_header(14);
                dst.apply(p.anno_mut());
            }
            left -= chunk;
            if b.len() - before < chunk {
                break; // out of buffers
            }
            if self.interval > 0 && e.count.is_multiple_of(self.interval) {
                self.incr = self.incr.wrapping_add(1);
                self.build(e);
            }
        }
    }
}

impl Element for FastUDPSource {
    fn task_kind(&self) -> TaskKind {
        if self.s.e.pull {
            TaskKind::None
        } else {
            TaskKind::Source
        }
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let gen = &mut self.gen;
        self.s.run(cx, |e, b, n, cx| gen.make(e, b, n, cx))
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        self.s.e.run_timer(cx);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let gen = &mut self.gen;
        self.s
            .pull(out, max, cx, |e, b, n, cx| gen.make(e, b, n, cx));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.s.e.count);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        self.s.read(handler)
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("count"),
            Handler::rw("rate"),
            Handler::w("reset"),
            Handler::w("active"),
            Handler::w("limit"),
        ];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.s.write(handler, value)?;
        if handler == "reset" || (handler == "active" && self.s.e.active) {
            self.gen.incr = 0;
            self.gen.build(&mut self.s.e);
        }
        Ok(())
    }
}

/// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014) for the flow choice.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Click's `(click_random() >> 2) % 0xFFFF`.
    pub(crate) fn port(&mut self) -> u16 {
        ((self.next() >> 33) % 0xffff) as u16
    }
}

/// One flow: its ports and the packets sent on them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Flow {
    pub(crate) sport: u16,
    pub(crate) dport: u16,
    pub(crate) sent: u32,
}

/// The positional arguments FastUDPFlows and FastTCPFlows share, in
/// Click's order: RATE, LIMIT, LENGTH, SRCETH, SRCIP, DSTETH, DSTIP,
/// FLOWS, FLOWSIZE.
#[derive(Debug)]
pub(crate) struct FlowSpec {
    pub(crate) rate: u64,
    pub(crate) limit: i64,
    pub(crate) len: usize,
    pub(crate) src_eth: EthernetAddress,
    pub(crate) src: Ipv4Addr,
    pub(crate) dst_eth: EthernetAddress,
    pub(crate) dst: Ipv4Addr,
    nflows: usize,
    pub(crate) flowsize: u32,
}

impl FlowSpec {
    pub(crate) fn read(args: &mut Args<'_>) -> Result<FlowSpec, ArgError> {
        let (rate, limit, len) = read_common(args)?;
        let spec = FlowSpec {
            rate,
            limit,
            len,
            src_eth: args.read_mp("SRCETH")?,
            src: args.read_mp("SRCIP")?,
            dst_eth: args.read_mp("DSTETH")?,
            dst: args.read_mp("DSTIP")?,
            nflows: args.read_mp("FLOWS")?,
            flowsize: args.read_mp("FLOWSIZE")?,
        };
        if spec.nflows == 0 || spec.nflows > MAX_FLOWS {
            return Err(ArgError::new(format!(
                "FLOWS must be from 1 to {MAX_FLOWS}"
            )));
        }
        Ok(spec)
    }

    /// Reads ACTIVE, SEED and the sending keywords, and draws the flows'
    /// first ports: the emitter, the flows, the generator after the draws
    /// and the seed.
    pub(crate) fn finish(
        &self,
        args: &mut Args<'_>,
        ports: &PortInfo,
    ) -> Result<(Emitter, Vec<Flow>, SplitMix, u64), ArgError> {
        let active: bool = args.read_p("ACTIVE")?.unwrap_or(true);
        let seed: u64 = args.read("SEED")?.unwrap_or(1);
        let e = emitter(args, ports, self.limit, active)?;
        let mut rng = SplitMix(seed);
        let flows = (0..self.nflows)
            .map(|_| Flow {
                sport: rng.port(),
                dport: rng.port(),
                sent: 0,
            })
            .collect();
        Ok((e, flows, rng, seed))
    }
}

fn make_flows(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let spec = FlowSpec::read(args)?;
    let cksum: bool = args.read_p("CHECKSUM")?.unwrap_or(true);
    let (e, flows, rng, _) = spec.finish(args, ports)?;
    Ok(Box::new(FastUDPFlows {
        s: Sender::new(e, spec.rate),
        gen: FlowGen {
            udp: UdpFrame::new(
                spec.len,
                spec.src_eth,
                spec.src,
                spec.dst_eth,
                spec.dst,
                cksum,
            ),
            flows,
            flowsize: spec.flowsize,
            rng,
        },
    }))
}

/// Sends packets of many UDP flows.
#[derive(Debug)]
pub struct FastUDPFlows {
    s: Sender,
    gen: FlowGen,
}

/// FastUDPFlows' frame and flows.
#[derive(Debug)]
struct FlowGen {
    udp: UdpFrame,
    flows: Vec<Flow>,
    flowsize: u32,
    rng: SplitMix,
}

impl FlowGen {
    fn make(&mut self, e: &mut Emitter, b: &mut Batch, n: usize, cx: &Context<'_>) {
        let dst = self.udp.dst;
        let (udp, flows, flowsize, rng) =
            (&self.udp, &mut self.flows, self.flowsize, &mut self.rng);
        e.fill_with(b, n, cx, |p: &mut Packet| {
            let i = (rng.next() >> 2) as usize % flows.len();
            let f = &mut flows[i];
            if f.sent == flowsize {
                f.sport = rng.port();
                f.dport = rng.port();
                f.sent = 0;
            }
            f.sent += 1;
            if p.set_frame(&udp.frame).is_ok() {
                udp.set_ports(p.data_mut(), f.sport, f.dport);
                p.set_network_header(14);
                dst.apply(p.anno_mut());
            }
        });
    }
}

impl Element for FastUDPFlows {
    fn task_kind(&self) -> TaskKind {
        if self.s.e.pull {
            TaskKind::None
        } else {
            TaskKind::Source
        }
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let gen = &mut self.gen;
        self.s.run(cx, |e, b, n, cx| gen.make(e, b, n, cx))
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        self.s.e.run_timer(cx);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let gen = &mut self.gen;
        self.s
            .pull(out, max, cx, |e, b, n, cx| gen.make(e, b, n, cx));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.s.e.count);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "length" => Some(self.gen.udp.frame.len().to_string()),
            _ => self.s.read(handler),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("count"),
            Handler::rw("rate"),
            Handler::w("reset"),
            Handler::w("active"),
            Handler::w("limit"),
            Handler::rw("length"),
        ];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        if handler == "length" {
            let len = usize::from_arg(value.trim())
                .ok()
                .filter(|&l| l <= MAX_FRAME)
                .ok_or("length parameter must be integer")?
                .max(60);
            let u = &self.gen.udp;
            let (mut se, mut de) = ([0u8; 6], [0u8; 6]);
            let (mut sa, mut da) = ([0u8; 4], [0u8; 4]);
            se.copy_from_slice(&u.frame[6..12]);
            de.copy_from_slice(&u.frame[0..6]);
            sa.copy_from_slice(&u.frame[26..30]);
            da.copy_from_slice(&u.frame[30..34]);
            self.gen.udp = UdpFrame::new(
                len,
                EthernetAddress(se),
                Ipv4Addr::from(sa),
                EthernetAddress(de),
                Ipv4Addr::from(da),
                u.checksum,
            );
            return Ok(());
        }
        self.s.write(handler, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    const ARGS: &str = "1000, 3, 60, 00:11:22:33:44:55, 10.0.0.1, 1234, \
                        66:77:88:99:aa:bb, 10.0.0.2, 5678";

    /// The frame Click's FastUDPSource builds for ARGS (Click's header
    /// fields); its checksums are checked below with a plain RFC 1071 sum.
    const FRAME: [u8; 60] = [
        0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08,
        0x00, // eth
        0x45, 0x00, 0x00, 0x2e, 0x00, 0x00, 0x00, 0x00, 0xfa, 0x11, 0xac, 0xbc, // ip
        0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, //
        0x04, 0xd2, 0x16, 0x2e, 0x00, 0x1a, 0xd0, 0xb7, // udp
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, //
    ];

    /// RFC 1071 the slow way, for the test's own check.
    fn sum(words: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for c in words.chunks(2) {
            s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    #[test]
    fn frame_bytes_are_clicks() {
        // The expected checksums, computed here the slow way.
        assert_eq!(sum(&FRAME[14..34]), 0xffff);
        let mut pseudo = Vec::from(&FRAME[26..34]);
        pseudo.extend_from_slice(&[0, 17, 0, 26]);
        pseudo.extend_from_slice(&FRAME[34..60]);
        assert_eq!(sum(&pseudo), 0xffff);
        let mut h = Harness::push(&FAST_UDP_SOURCE, ARGS, 0, 1);
        h.advance_to(Timestamp(1_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        let out = h.take(0);
        assert_eq!(out[0].data(), &FRAME[..]);
        assert_eq!(out[0].anno().dst_ip, Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(out[0].network_header().map(|h| h[0]), Some(0x45));
    }

    #[test]
    fn interval_moves_ports_and_rate_reads() {
        let mut h = Harness::push(
            &FAST_UDP_SOURCE,
            &format!("{ARGS}, CHECKSUM false, INTERVAL 2"),
            0,
            1,
        );
        h.write_handler("rate", "0").unwrap();
        h.write_handler("limit", "5").unwrap();
        h.advance_to(Timestamp(1_000_000_000));
        h.run_task();
        let out = h.take_bytes(0);
        let ports: Vec<_> = out
            .iter()
            .map(|f| {
                (
                    u16::from_be_bytes([f[34], f[35]]),
                    u16::from_be_bytes([f[36], f[37]]),
                )
            })
            .collect();
        assert_eq!(
            ports,
            [
                (1234, 5678),
                (1234, 5678),
                (1235, 5679),
                (1235, 5679),
                (1236, 5680)
            ]
        );
        assert!(out.iter().all(|f| f[40..42] == [0, 0]));
        assert_eq!(h.read_handler("count").unwrap(), "5");
        // All in the same jiffy: Click divides by at least one.
        assert_eq!(h.read_handler("rate").unwrap(), "5000");
        assert_eq!(h.run_task(), TaskResult::Done);
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.read_handler("rate").unwrap(), "0");
    }

    #[test]
    fn rate_paces() {
        let mut h = Harness::push(&FAST_UDP_SOURCE, ARGS, 0, 1);
        h.advance_to(Timestamp(1_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), vec![Timestamp(1_001_000_000)]);
    }

    #[test]
    fn flows_vary_ports_with_valid_checksums() {
        let mut h = Harness::push(
            &FAST_UDP_FLOWS,
            "0, 64, 80, 0:0:0:0:0:1, 10.0.0.1, 0:0:0:0:0:2, 10.0.0.2, 4, 3",
            0,
            1,
        );
        while h.run_task() == TaskResult::Worked {}
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 64);
        let mut seen = std::collections::HashSet::new();
        for f in &out {
            assert_eq!(f.len(), 80);
            assert_eq!(sum(&f[14..34]), 0xffff);
            let mut pseudo = Vec::from(&f[26..34]);
            pseudo.extend_from_slice(&[0, 17, 0, 46]);
            pseudo.extend_from_slice(&f[34..]);
            assert_eq!(sum(&pseudo), 0xffff);
            seen.insert((f[34..36].to_vec(), f[36..38].to_vec()));
        }
        // 64 packets over 4 flows of 3 packets each: new ports many times.
        assert!(seen.len() > 4, "{}", seen.len());
        assert_eq!(h.read_handler("length").unwrap(), "80");
    }

    #[test]
    fn bad_arguments() {
        let p = PortInfo::default();
        for bad in [
            "1000, 3, 60",
            "1000, 3, 9000, 0:0:0:0:0:1, 10.0.0.1, 1, 0:0:0:0:0:2, 10.0.0.2, 2",
        ] {
            assert!(bricks_runtime::testing::make_element(&FAST_UDP_SOURCE, bad, &p).is_err());
        }
        let flows0 = "0, 1, 60, 0:0:0:0:0:1, 10.0.0.1, 0:0:0:0:0:2, 10.0.0.2, 0, 3";
        assert!(bricks_runtime::testing::make_element(&FAST_UDP_FLOWS, flows0, &p).is_err());
        // A short LENGTH becomes 60, as in Click.
        let short = "0, 1, 20, 0:0:0:0:0:1, 10.0.0.1, 1, 0:0:0:0:0:2, 10.0.0.2, 2";
        let mut h = Harness::push(&FAST_UDP_SOURCE, short, 0, 1);
        h.run_task();
        assert_eq!(h.take_bytes(0)[0].len(), 60);
    }
}
