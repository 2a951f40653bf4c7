//! `AggregateIPFlows`: numbers TCP and UDP flows in the aggregate
//! annotation and marks each packet's direction in the paint annotation
//! (Click's `elements/analysis/aggregateipflows.cc`).
//!
//! A flow is its two addresses and two ports, both directions; it gets
//! the next number at its first packet and a new one when it has been
//! idle longer than its timeout (or, once closed, at a new SYN). Later
//! fragments carry no ports: with FRAGMENTS they are held, in arrival
//! order per address pair, until the first fragment of the same IP ID
//! tells their flow, or until FRAGMENT_TIMEOUT seconds of packet time.
//!
//! Click's tables grow without bound; this one holds at most CAPACITY
//! flows and [`MAX_HELD`] held packets. A new flow beyond CAPACITY (when
//! reaping expired flows frees none) is handled as Click handles one it
//! has no memory for: the packet leaves by output 1, or is dropped.

use crate::ip::header::{be16, be32};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Processing, Stats,
};
use bricks_packet::Timestamp;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The `AggregateIPFlows` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AggregateIPFlows",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

/// Default CAPACITY: flows held at most.
pub const DEFAULT_CAPACITY: usize = 1 << 20;
/// Largest CAPACITY.
pub const MAX_CAPACITY: usize = 1 << 26;
/// Packets held for their fragments' flow, at most, over all address
/// pairs.
pub const MAX_HELD: usize = 16_384;

static MANUAL: Manual = Manual {
    summary: "sets aggregate annotation based on flow",
    synopsis: "AggregateIPFlows([KEYWORDS])",
    description: "Monitors TCP and UDP flows, setting the aggregate annotation of every \
        passing packet to a flow number and the paint annotation to its direction. Flows are \
        told apart by their addresses and ports; replies get the same number. Numbers are \
        given in order from 1; the first packet of a flow is painted 0 and its replies 1 \
        (ICMP errors, with ICMP, 2 and 3). A flow idle longer than its timeout gets a new \
        number at its next packet, as does a closed TCP flow (RST, or FIN both ways) at a \
        SYN. Time is the packets' timestamps in whole seconds (a packet without one gets the \
        router's clock). Packets that are not TCP or UDP, that are too short for ports, or \
        between addresses 0.0.0.0 and 0.0.0.0 leave by output 1, or are dropped. With \
        FRAGMENTS, later fragments are held until the first fragment of the same IP ID \
        arrives, and leave with its number; packets between one pair of addresses keep \
        their order, so packets may be reordered across pairs. Fragments whose first \
        fragment does not come within FRAGMENT_TIMEOUT are dropped. Held packets are lost \
        when the router stops: write `clear` first (`DriverManager(wait, write af.clear)`). \
        The state is shared by every worker. bricks holds at most CAPACITY flows (Click: \
        until memory runs out): a new flow beyond that, if reaping expired flows frees no \
        room, is treated as Click treats one it has no memory for (output 1) and counted in \
        `table_full`; at most 16384 packets are held, and a fragment beyond that is not \
        held (counted in `held_full`). TRACEINFO and SOURCE are not supported.",
    ports: "one input, push or pull; output 0 like the input, output 1 (optional) push",
    keywords: &[
        Keyword {
            name: "TCP_TIMEOUT",
            ty: "duration (seconds)",
            default: Some("86400"),
            doc: "lifetime of an idle TCP flow",
        },
        Keyword {
            name: "TCP_DONE_TIMEOUT",
            ty: "duration (seconds)",
            default: Some("30"),
            doc: "lifetime of an idle TCP flow once closed (RST, or FIN both ways)",
        },
        Keyword {
            name: "UDP_TIMEOUT",
            ty: "duration (seconds)",
            default: Some("60"),
            doc: "lifetime of an idle UDP flow",
        },
        Keyword {
            name: "FRAGMENT_TIMEOUT",
            ty: "duration (seconds)",
            default: Some("30"),
            doc: "how long a fragment waits for its first fragment",
        },
        Keyword {
            name: "REAP",
            ty: "duration (seconds)",
            default: Some("1200"),
            doc: "how often, in packet time, expired flows are removed",
        },
        Keyword {
            name: "ICMP",
            ty: "boolean",
            default: Some("false"),
            doc: "give ICMP errors the number of the flow they quote, painted 2 plus its direction",
        },
        Keyword {
            name: "FRAGMENTS",
            ty: "boolean",
            default: Some("true in push, false in pull"),
            doc: "hold later fragments to number them; true is refused in pull",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned (bricks only)",
            default: Some("1048576"),
            doc: "most flows held; from 1 to 67108864",
        },
    ],
    counters: &[
        ("flows", "flows held now"),
        ("held", "packets held for their fragments' flow now"),
        ("table_full", "packets of a new flow refused because CAPACITY was reached"),
        ("held_full", "fragments not held because 16384 packets were held"),
        ("unmatched", "fragments dropped with no first fragment found"),
        ("not_flow", "packets that are not TCP or UDP, or too short (output 1 or dropped)"),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 20 00 01 00 00 40 11 00 00 12 1a 04 2c 0a 00 00 04 00 1e 00 28 00 0c 00 00 de ad be ef>, LIMIT 2, STOP true)\n\
              -> af :: AggregateIPFlows -> Discard;",
    see_also: &["AggregateCounter", "FromIPSummaryDump", "ToIPSummaryDump"],
};

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;

/// A flow: protocol, the two addresses (lower first), and Click's port
/// word in the orientation of the flow's first packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FlowKey {
    proto: u8,
    a: u32,
    b: u32,
    ports: u32,
}

/// An address pair (fragments are held per pair).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct PairKey {
    proto: u8,
    a: u32,
    b: u32,
}

#[derive(Debug, Clone, Copy)]
struct FlowInfo {
    aggregate: u32,
    last_sec: i64,
    /// FIN seen on direction 0 (bit 0) and 1 (bit 1); 3 also after RST.
    over: u8,
    /// The first packet went from b to a.
    reverse: bool,
}

/// A packet held behind a fragment.
#[derive(Debug)]
struct Held {
    p: Packet,
    /// The flow, once known (first fragments; later ones when matched).
    key: Option<FlowKey>,
    ip_id: u16,
    frag: bool,
    sec: i64,
}

#[derive(Debug, Default)]
struct Counts {
    table_full: u64,
    held_full: u64,
    unmatched: u64,
    not_flow: u64,
}

#[derive(Debug)]
struct State {
    flows: HashMap<FlowKey, FlowInfo>,
    held: HashMap<PairKey, VecDeque<Held>>,
    nheld: usize,
    next: u32,
    active_sec: i64,
    gc_sec: Option<i64>,
    /// The packet second of the last reap forced by a full table.
    full_reap_sec: Option<i64>,
    warned: bool,
    c: Counts,
}

#[derive(Debug)]
struct Config {
    tcp_timeout: i64,
    tcp_done_timeout: i64,
    udp_timeout: i64,
    smallest_timeout: i64,
    fragment_timeout: i64,
    gc_interval: i64,
    icmp: bool,
    fragments: bool,
    capacity: usize,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
}

fn secs(args: &mut Args<'_>, key: &'static str, default: u64) -> Result<i64, ArgError> {
    let d = args
        .read::<Duration>(key)?
        .unwrap_or(Duration::from_secs(default));
    Ok(d.as_secs().min(i64::MAX as u64 / 4) as i64)
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let tcp_timeout = secs(args, "TCP_TIMEOUT", 86_400)?;
    let tcp_done_timeout = secs(args, "TCP_DONE_TIMEOUT", 30)?;
    let udp_timeout = secs(args, "UDP_TIMEOUT", 60)?;
    let fragment_timeout = secs(args, "FRAGMENT_TIMEOUT", 30)?;
    let gc_interval = secs(args, "REAP", 20 * 60)?;
    let icmp = args.read::<bool>("ICMP")?.unwrap_or(false);
    let pull = ports.inputs.first() == Some(&Processing::Pull);
    let fragments =
        match args.read::<bool>("FRAGMENTS")? {
            Some(true) if pull => return Err(ArgError::new(
                "'FRAGMENTS true' is incompatible with pull; run this element in a push context",
            )),
            Some(f) => f,
            None => !pull,
        };
    let capacity = super::read_capacity(args, DEFAULT_CAPACITY, MAX_CAPACITY)?;
    let cfg = Config {
        tcp_timeout,
        tcp_done_timeout,
        udp_timeout,
        smallest_timeout: tcp_timeout.min(tcp_done_timeout).min(udp_timeout),
        fragment_timeout,
        gc_interval,
        icmp,
        fragments,
        capacity,
    };
    let sh = args.shared(|_| {
        Ok(Shared {
            state: Mutex::new(State {
                flows: HashMap::new(),
                held: HashMap::new(),
                nheld: 0,
                next: 1,
                active_sec: 0,
                gc_sec: None,
                full_reap_sec: None,
                warned: false,
                c: Counts::default(),
            }),
        })
    })?;
    Ok(Box::new(AggregateIPFlows {
        sh,
        cfg,
        noutputs: ports.noutputs(),
        out: Out::new(),
    }))
}

/// One worker's AggregateIPFlows.
#[derive(Debug)]
pub struct AggregateIPFlows {
    sh: Arc<Shared>,
    cfg: Config,
    noutputs: usize,
    /// Packets leaving, kept between batches so that their room is
    /// allocated once.
    out: Out,
}

/// The IPv4 header fields this element reads.
#[derive(Clone, Copy)]
struct Ip<'a> {
    /// The header and what follows, as far as the buffer goes.
    bytes: &'a [u8],
    ihl: usize,
    proto: u8,
    src: u32,
    dst: u32,
    id: u16,
    frag_off: u16,
    mf: bool,
}

impl<'a> Ip<'a> {
    fn parse(bytes: &'a [u8]) -> Option<Ip<'a>> {
        let h = bytes.first_chunk::<20>()?;
        let ihl = usize::from(h[0] & 0x0f) * 4;
        if h[0] >> 4 != 4 || ihl < 20 || bytes.len() < ihl {
            return None;
        }
        let frag = be16(h, 6);
        Some(Ip {
            bytes,
            ihl,
            proto: h[9],
            src: be32(h, 12),
            dst: be32(h, 16),
            id: be16(h, 4),
            frag_off: frag & 0x1fff,
            mf: frag & 0x2000 != 0,
        })
    }

    fn first_frag(&self) -> bool {
        self.frag_off == 0
    }

    fn is_frag(&self) -> bool {
        self.frag_off != 0 || self.mf
    }

    fn transport(&self) -> &'a [u8] {
        &self.bytes[self.ihl..]
    }

    /// The IP header an ICMP error quotes (Click's
    /// `icmp_encapsulated_header`): of a destination unreachable, time
    /// exceeded, parameter problem, source quench or redirect.
    fn quoted(&self) -> Option<Ip<'a>> {
        let t = self.transport();
        if t.len() < 9 || !matches!(t[0], 3 | 4 | 5 | 11 | 12) {
            return None;
        }
        let hlen = usize::from(t[8] & 0x0f) * 4;
        if hlen < 20 || t.len() < 8 + hlen {
            return None;
        }
        let q = Ip::parse(&t[8..])?;
        Some(q)
    }
}

/// Click's `ports_reverse_order` on its port word, which Click reads in
/// host order from network bytes: the word of a little-endian machine,
/// where Click's tests were made, so that equal addresses get Click's
/// paints.
fn ports_reverse_order(ports: u32) -> bool {
    ((ports << 16).wrapping_sub(ports) as i32) < 0
}

fn flip_ports(ports: u32) -> u32 {
    ports.rotate_left(16)
}

fn timestamp_sec(p: &Packet) -> i64 {
    (p.anno().timestamp.0 / 1_000_000_000) as i64
}

impl AggregateIPFlows {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.sh.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn relevant_timeout(&self, key: &FlowKey, f: &FlowInfo) -> i64 {
        if key.proto == UDP {
            self.cfg.udp_timeout
        } else if f.over == 3 {
            self.cfg.tcp_done_timeout
        } else {
            self.cfg.tcp_timeout
        }
    }

    /// Click's `find_flow_info`: the flow's record, renumbered if it
    /// died, or a new one; `None` when the table is full.
    fn find_flow(
        &self,
        st: &mut State,
        key: FlowKey,
        flipped: bool,
        sec: i64,
        syn: bool,
    ) -> Option<FlowInfo> {
        if let Some(f) = st.flows.get(&key).copied() {
            let age = sec - f.last_sec;
            let dead = age > self.cfg.smallest_timeout && age > self.relevant_timeout(&key, &f);
            if dead || (f.over == 3 && key.proto == TCP && syn) {
                let g = FlowInfo {
                    aggregate: next_aggregate(st),
                    last_sec: f.last_sec,
                    over: 0,
                    reverse: flipped,
                };
                st.flows.insert(key, g);
                return Some(g);
            }
            return Some(f);
        }
        if st.flows.len() >= self.cfg.capacity {
            // Reap once per second of packet time to make room.
            let active = st.active_sec.max(sec);
            if st.full_reap_sec != Some(active) {
                st.full_reap_sec = Some(active);
                self.reap_flows(st, active);
            }
            if st.flows.len() >= self.cfg.capacity {
                st.c.table_full += 1;
                return None;
            }
        }
        let f = FlowInfo {
            aggregate: next_aggregate(st),
            last_sec: sec,
            over: 0,
            reverse: flipped,
        };
        st.flows.insert(key, f);
        Some(f)
    }

    /// Click's `packet_emit_hook`: the flow's last time, and its end.
    fn emit_hook(st: &mut State, key: Option<FlowKey>, p: &Packet) {
        let Some(key) = key else { return };
        let Some(f) = st.flows.get_mut(&key) else {
            return;
        };
        if f.aggregate != p.anno().flow {
            return;
        }
        f.last_sec = timestamp_sec(p);
        let paint = p.anno().paint;
        let Some(ip) = Ip::parse(p.l3_bytes()) else {
            return;
        };
        let t = ip.transport();
        if ip.proto == TCP && ip.first_frag() && t.len() >= 14 && paint < 2 {
            let flags = t[13];
            if flags & 0x04 != 0 {
                f.over = 3;
            } else if flags & 0x01 != 0 {
                f.over |= 1 << paint;
            } else if flags & 0x02 != 0 {
                f.over = 0;
            }
        }
    }

    /// Click's `handle_packet`.
    fn handle(&self, st: &mut State, mut p: Packet, now: Timestamp, out: &mut Out) {
        if p.anno().timestamp.0 == 0 {
            if !st.warned {
                eprintln!("AggregateIPFlows: warning: packet received without timestamp");
                st.warned = true;
            }
            p.anno_mut().timestamp = now;
        }
        let sec = timestamp_sec(&p);
        let Some((key, pair, paint, agg, frag, id)) = self.classify(st, &p, sec) else {
            out.drop(p);
            return;
        };
        p.anno_mut().flow = agg;
        p.anno_mut().paint = paint;
        let holding = st.held.get(&pair).is_some_and(|q| !q.is_empty());
        if (self.cfg.fragments && frag) || holding {
            if st.nheld >= MAX_HELD {
                st.c.held_full += 1;
                // Keep the pair's order: what it holds goes first.
                while st.held.contains_key(&pair) {
                    self.emit_head(st, pair, out);
                }
                if agg == 0 {
                    st.c.unmatched += 1;
                    out.drop(p);
                    return;
                }
            } else {
                st.held.entry(pair).or_default().push_back(Held {
                    p,
                    key,
                    ip_id: id,
                    frag,
                    sec,
                });
                st.nheld += 1;
                st.active_sec = sec;
                let limit = sec - self.cfg.fragment_timeout;
                while let Some(h) = st.held.get(&pair).and_then(|q| q.front()) {
                    if h.sec < limit || !h.frag {
                        self.emit_head(st, pair, out);
                    } else {
                        break;
                    }
                }
                return;
            }
        }
        if agg == 0 {
            out.drop(p);
            return;
        }
        st.active_sec = sec;
        Self::emit_hook(st, key, &p);
        out.emit(p);
    }

    /// The flow of a packet: its key (first fragments), address pair,
    /// paint, aggregate (0 for later fragments), whether its (quoted)
    /// header is a fragment, and its IP ID; `None`: not a flow packet.
    #[allow(clippy::type_complexity)]
    fn classify(
        &self,
        st: &mut State,
        p: &Packet,
        sec: i64,
    ) -> Option<(Option<FlowKey>, PairKey, u8, u32, bool, u16)> {
        let outer = match Ip::parse(p.l3_bytes()) {
            Some(ip) => ip,
            None => {
                st.c.not_flow += 1;
                return None;
            }
        };
        let mut paint = 0u8;
        let ip = if outer.proto == ICMP && outer.first_frag() && self.cfg.icmp {
            paint = 2;
            match outer.quoted() {
                Some(q) => q,
                None => {
                    st.c.not_flow += 1;
                    return None;
                }
            }
        } else {
            outer
        };
        if !matches!(ip.proto, TCP | UDP) || (ip.src == 0 && ip.dst == 0) {
            st.c.not_flow += 1;
            return None;
        }
        let (a, b) = if ip.src > ip.dst {
            (ip.dst, ip.src)
        } else {
            (ip.src, ip.dst)
        };
        if a != ip.src {
            paint ^= 1;
        }
        let pair = PairKey {
            proto: ip.proto,
            a,
            b,
        };
        if !ip.first_frag() {
            return Some((None, pair, paint, 0, ip.is_frag(), ip.id));
        }
        let t = ip.transport();
        let Some(w) = t.first_chunk::<4>() else {
            st.c.not_flow += 1;
            return None;
        };
        let mut ports = u32::from_le_bytes(*w);
        if a == b && ports_reverse_order(ports) {
            paint ^= 1;
        }
        if paint & 1 != 0 {
            ports = flip_ports(ports);
        }
        let key = FlowKey {
            proto: ip.proto,
            a,
            b,
            ports,
        };
        // A SYN starts a new flow once the old one closed; an ICMP
        // error's outer header is not TCP.
        let ot = outer.transport();
        let syn = outer.proto == TCP && ot.len() >= 14 && ot[13] & 0x02 != 0;
        let f = self.find_flow(st, key, paint & 1 != 0, sec, syn)?;
        if f.reverse {
            paint ^= 1;
        }
        Some((Some(key), pair, paint, f.aggregate, ip.is_frag(), ip.id))
    }

    /// Click's `emit_fragment_head`: the first packet held for `pair`
    /// leaves, numbered by a packet of the same IP ID if it has none.
    fn emit_head(&self, st: &mut State, pair: PairKey, out: &mut Out) {
        let Some(q) = st.held.get_mut(&pair) else {
            return;
        };
        let Some(mut head) = q.pop_front() else {
            st.held.remove(&pair);
            return;
        };
        st.nheld -= 1;
        let agg = head.p.anno().flow;
        if agg != 0 {
            let paint = head.p.anno().paint;
            for h in q.iter_mut().filter(|h| h.ip_id == head.ip_id) {
                h.p.anno_mut().flow = agg;
                h.p.anno_mut().paint = paint;
                h.key = head.key;
            }
        } else {
            match q
                .iter()
                .find(|h| h.ip_id == head.ip_id && h.p.anno().flow != 0)
            {
                Some(h) => {
                    let (f, paint, key) = (h.p.anno().flow, h.p.anno().paint, h.key);
                    head.p.anno_mut().flow = f;
                    head.p.anno_mut().paint = paint;
                    head.key = key;
                }
                None => {
                    st.c.unmatched += 1;
                    if q.is_empty() {
                        st.held.remove(&pair);
                    }
                    return;
                }
            }
        }
        if q.is_empty() {
            st.held.remove(&pair);
        }
        Self::emit_hook(st, head.key, &head.p);
        out.emit(head.p);
    }

    /// Removes flows idle past their timeout at `active` (Click's
    /// `reap_map` for the flows), except flows of pairs holding packets.
    fn reap_flows(&self, st: &mut State, active: i64) {
        let held = &st.held;
        let cfg = &self.cfg;
        st.flows.retain(|k, f| {
            let pair = PairKey {
                proto: k.proto,
                a: k.a,
                b: k.b,
            };
            if held.contains_key(&pair) {
                return true;
            }
            let timeout = if k.proto == UDP {
                cfg.udp_timeout
            } else if f.over == 3 {
                cfg.tcp_done_timeout
            } else {
                cfg.tcp_timeout
            };
            f.last_sec >= active.saturating_sub(timeout)
        });
    }

    /// Click's `reap`: held packets that waited too long (or are no
    /// fragment) leave, then expired flows go.
    fn reap(&self, st: &mut State, out: &mut Out) {
        if st.gc_sec.is_some() {
            let limit = st.active_sec.saturating_sub(self.cfg.fragment_timeout);
            let pairs: Vec<PairKey> = st.held.keys().copied().collect();
            for pair in pairs {
                while let Some(h) = st.held.get(&pair).and_then(|q| q.front()) {
                    if h.sec < limit || !h.frag {
                        self.emit_head(st, pair, out);
                    } else {
                        break;
                    }
                }
            }
            let active = st.active_sec;
            self.reap_flows(st, active);
        }
        st.gc_sec = Some(st.active_sec.saturating_add(self.cfg.gc_interval));
    }

    fn after_packet(&self, st: &mut State, out: &mut Out) {
        if st.gc_sec.is_none_or(|g| st.active_sec >= g) {
            self.reap(st, out);
        }
    }

    /// The `clear` handler: every held packet leaves, every flow goes.
    fn clear(&self, st: &mut State, out: &mut Out) {
        let (active, gc) = (st.active_sec, st.gc_sec);
        st.active_sec = i64::MAX / 4;
        st.gc_sec = Some(st.active_sec);
        self.reap(st, out);
        st.active_sec = active;
        st.gc_sec = gc;
    }
}

fn next_aggregate(st: &mut State) -> u32 {
    let a = st.next;
    // 0 means "no flow" to the fragment logic: skip it on wrapping.
    st.next = st.next.wrapping_add(1).max(1);
    a
}

/// Packets leaving, per output, pushed whenever a batch fills.
#[derive(Debug)]
struct Out {
    emit: Vec<Packet>,
    drop: Vec<Packet>,
}

impl Out {
    fn new() -> Out {
        Out {
            emit: Vec::new(),
            drop: Vec::new(),
        }
    }

    fn emit(&mut self, p: Packet) {
        self.emit.push(p);
    }

    fn drop(&mut self, p: Packet) {
        self.drop.push(p);
    }
}

/// Pushes `packets` out of `port` in batches, leaving the vector empty
/// (its room kept for the next batch).
fn push_all(cx: &mut Context<'_>, port: usize, packets: &mut Vec<Packet>) {
    let mut b = Batch::new();
    for p in packets.drain(..) {
        if let Err(p) = b.push(p) {
            cx.push(port, &mut b);
            b.clear();
            let _ = b.push(p);
        }
    }
    cx.push(port, &mut b);
}

impl AggregateIPFlows {
    fn send(&self, out: &mut Out, cx: &mut Context<'_>) {
        push_all(cx, 0, &mut out.emit);
        if self.noutputs > 1 {
            push_all(cx, 1, &mut out.drop);
        } else {
            out.drop.clear();
        }
    }
}

impl Element for AggregateIPFlows {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = cx.now();
        let mut out = std::mem::replace(&mut self.out, Out::new());
        {
            let mut st = self.lock();
            for p in batch.drain() {
                self.handle(&mut st, p, now, &mut out);
                self.after_packet(&mut st, &mut out);
            }
        }
        self.send(&mut out, cx);
        self.out = out;
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        cx.pull(0, &mut b, max);
        let now = cx.now();
        let mut o = Out::new();
        {
            let mut st = self.lock();
            for p in b.drain() {
                self.handle(&mut st, p, now, &mut o);
                self.after_packet(&mut st, &mut o);
            }
        }
        // Nothing is held in pull (FRAGMENTS is false), so whatever is
        // emitted fits the batch it came in.
        for p in o.emit.drain(..) {
            let _ = out.push(p);
        }
        self.send(&mut o, cx);
    }

    fn stats(&self, s: &mut Stats) {
        let st = self.lock();
        s.counter("flows", st.flows.len() as u64);
        s.counter("held", st.nheld as u64);
        s.counter("table_full", st.c.table_full);
        s.counter("held_full", st.c.held_full);
        s.counter("unmatched", st.c.unmatched);
        s.counter("not_flow", st.c.not_flow);
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "clear"
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::w("clear")];
        H
    }

    fn call_handler(
        &mut self,
        handler: &str,
        _value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if handler != "clear" || !write {
            return None;
        }
        let mut out = Out::new();
        {
            let mut st = self.lock();
            self.clear(&mut st, &mut out);
        }
        self.send(&mut out, cx);
        Some(Ok(String::new()))
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        if handler != "clear" {
            return Err(format!("no write handler `{handler}` (clear)"));
        }
        // Without the router to push into, held packets are dropped.
        let mut out = Out::new();
        let mut st = self.lock();
        self.clear(&mut st, &mut out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    /// A UDP packet with its checksum left 0, 8 bytes of data.
    fn udp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, id: u16, frag: u16) -> Packet {
        let mut b = vec![
            0x45, 0x00, 0x00, 0x24, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0x00, 0x10, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        b[4..6].copy_from_slice(&id.to_be_bytes());
        b[6..8].copy_from_slice(&frag.to_be_bytes());
        b[12..16].copy_from_slice(&src);
        b[16..20].copy_from_slice(&dst);
        b[20..22].copy_from_slice(&sport.to_be_bytes());
        b[22..24].copy_from_slice(&dport.to_be_bytes());
        let mut p = Packet::from_slice(&b).unwrap();
        p.anno_mut().timestamp = Timestamp(1_000_000_000_000);
        p
    }

    const H1: [u8; 4] = [18, 26, 4, 44];
    const H2: [u8; 4] = [10, 0, 0, 4];

    fn annos(ps: &[Packet]) -> Vec<(u32, u8, u16)> {
        ps.iter()
            .map(|p| {
                let d = p.l3_bytes();
                (p.anno().flow, p.anno().paint, be16(d, 4))
            })
            .collect()
    }

    #[test]
    fn numbers_flows_and_paints_directions() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_packets(
            0,
            [
                udp(H1, 30, H2, 40, 1, 0),
                udp(H1, 30, H1, 41, 2, 0),
                udp(H2, 40, H1, 30, 3, 0),
                udp(H1, 41, H1, 30, 4, 0),
            ],
        );
        assert_eq!(
            annos(&h.take(0)),
            vec![(1, 0, 1), (2, 0, 2), (1, 1, 3), (2, 1, 4)]
        );
        assert_eq!(h.stats().get("flows"), Some(2));
    }

    #[test]
    fn later_fragments_wait_for_their_first() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        // Click's AggregateIPFlows-01: later fragments (offset 24) of IDs 5
        // and 6 come before their first fragments.
        h.push_packets(
            0,
            [
                udp(H1, 30, H1, 41, 2, 0),
                udp(H1, 41, H1, 30, 5, 3),
                udp(H1, 30, H1, 41, 6, 3),
                udp(H1, 41, H1, 30, 5, 0x2000),
                udp(H1, 30, H1, 41, 6, 0x2000),
            ],
        );
        assert_eq!(annos(&h.take(0)), vec![(1, 0, 2)]);
        assert_eq!(h.stats().get("held"), Some(4));
        h.call_write_handler("clear", "").unwrap();
        assert_eq!(
            annos(&h.take(0)),
            vec![(1, 1, 5), (1, 0, 6), (1, 1, 5), (1, 0, 6)]
        );
        assert_eq!(h.stats().get("held"), Some(0));
        assert_eq!(h.stats().get("flows"), Some(0));
    }

    #[test]
    fn a_fragment_alone_times_out_and_is_dropped() {
        let mut h = Harness::push(&CLASS, "FRAGMENT_TIMEOUT 5", 1, 2);
        h.push_packets(0, [udp(H1, 1, H2, 2, 9, 3)]);
        assert!(h.take(0).is_empty());
        // The next packet between the same addresses, 10 s later, finds
        // it too old: it is dropped, and the new packet leaves.
        let mut later = udp(H2, 7, H1, 8, 10, 0);
        later.anno_mut().timestamp = Timestamp(1_010_000_000_000);
        h.push_packets(0, [later]);
        assert_eq!(annos(&h.take(0)), vec![(1, 0, 10)]);
        assert_eq!(h.stats().get("unmatched"), Some(1));
    }

    #[test]
    fn not_tcp_or_udp_leaves_by_output_1() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        let mut icmp = udp(H1, 0, H2, 0, 1, 0);
        icmp.data_mut()[9] = 1;
        h.push_packets(0, [icmp, Packet::from_slice(&[0x45, 0, 0]).unwrap()]);
        assert_eq!(h.take(1).len(), 2);
        assert_eq!(h.stats().get("not_flow"), Some(2));
    }

    #[test]
    fn icmp_errors_get_their_flows_number() {
        let mut h = Harness::push(&CLASS, "ICMP true", 1, 2);
        let data = udp(H1, 30, H2, 40, 1, 0);
        // A port unreachable from H2 quoting the first packet.
        let mut b = vec![
            0x45, 0, 0, 0, 0, 7, 0, 0, 64, 1, 0, 0, 10, 0, 0, 4, 18, 26, 4, 44, 3, 3, 0, 0, 0, 0,
            0, 0,
        ];
        b.extend_from_slice(&data.data()[..28]);
        let n = b.len() as u16;
        b[2..4].copy_from_slice(&n.to_be_bytes());
        let mut err = Packet::from_slice(&b).unwrap();
        err.anno_mut().timestamp = Timestamp(1_000_000_000_000);
        h.push_packets(0, [data, err]);
        assert_eq!(annos(&h.take(0)), vec![(1, 0, 1), (1, 2, 7)]);
    }

    #[test]
    fn capacity_bounds_the_flows() {
        let mut h = Harness::push(&CLASS, "CAPACITY 2", 1, 2);
        h.push_packets(0, (1..=3).map(|port| udp(H1, port, H2, 53, port, 0)));
        assert_eq!(h.take(0).len(), 2);
        assert_eq!(h.take(1).len(), 1);
        assert_eq!(h.stats().get("table_full"), Some(1));
        // A minute and more later the flows have expired: room again.
        let mut p = udp(H1, 3, H2, 53, 4, 0);
        p.anno_mut().timestamp = Timestamp(1_100_000_000_000);
        h.push_packets(0, [p]);
        assert_eq!(annos(&h.take(0)), vec![(3, 0, 4)]);
    }

    #[test]
    fn idle_and_closed_flows_get_new_numbers() {
        let mut h = Harness::push(&CLASS, "UDP_TIMEOUT 10", 1, 2);
        let mut a = udp(H1, 5, H2, 6, 1, 0);
        let mut b = udp(H2, 6, H1, 5, 2, 0);
        b.anno_mut().timestamp = Timestamp(1_009_000_000_000);
        let mut c = udp(H1, 5, H2, 6, 3, 0);
        c.anno_mut().timestamp = Timestamp(1_020_000_000_000);
        a.anno_mut().paint = 9;
        h.push_packets(0, [a, b, c]);
        assert_eq!(annos(&h.take(0)), vec![(1, 0, 1), (1, 1, 2), (2, 0, 3)]);
    }

    #[test]
    fn arguments_are_checked() {
        let pull = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        assert!(Harness::try_new(&CLASS, "FRAGMENTS true", pull.clone()).is_err());
        assert!(Harness::try_new(&CLASS, "", pull).is_ok());
        let push = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        assert!(Harness::try_new(&CLASS, "CAPACITY 0", push.clone()).is_err());
        assert!(Harness::try_new(&CLASS, "TRACEINFO x", push).is_err());
    }
}
