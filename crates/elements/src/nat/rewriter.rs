//! The engine every rewriter class shares (Click's `IPRewriterBase` and
//! its subclasses): input specifications, the flow set, the per-packet
//! lookup and rewrite, the handlers. Each class file
//! (`iprewriter.rs`, ...) holds its manual and picks a [`Kind`].

use super::flow::{self, Key, Parsed, Tuple, PROTO_ICMP, PROTO_TCP, PROTO_UDP};
use super::iprwpatterns::{self, PatternSet};
use super::pattern::{InputSpec, Mapper, Pattern};
use super::table::{
    Entry, FlowSet, NewFlow, Refused, Timeouts, DEFAULT_CAPACITY, F_DATA_FWD, F_DONE, MAX_CAPACITY,
};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, FromArg, Handler, Packet, PortInfo, Stats,
};
use bricks_packet::Timestamp;
use std::cell::OnceCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Which rewriter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// IPRewriter: TCP and UDP, each with its timeouts.
    Ip,
    /// TCPRewriter: TCP only.
    Tcp,
    /// UDPRewriter: TCP and UDP, with UDP's timeouts.
    Udp,
    /// IPAddrRewriter: source addresses of any IP packet.
    Addr,
    /// IPAddrPairRewriter: source and destination addresses.
    Pair,
    /// ICMPPingRewriter: ICMP echo, the identifier as the port.
    Ping,
}

/// The class names whose state a MAPPING_CAPACITY may name.
pub const REWRITER_CLASSES: &[&str] = &[
    "IPRewriter",
    "TCPRewriter",
    "UDPRewriter",
    "IPAddrRewriter",
    "IPAddrPairRewriter",
    "ICMPPingRewriter",
];

/// The mapper classes an input spec may name (Click's `IPMapper`s).
pub const MAPPER_CLASSES: &[&str] = &["RoundRobinIPMapper", "SourceIPHashMapper"];

/// What every worker's instance of one rewriter shares.
#[derive(Debug)]
pub struct Shared {
    pub set: Arc<FlowSet>,
    owner: u16,
    kind: Kind,
    /// Per input: what it does with a packet of no mapping; a `patternN`
    /// write replaces one (locked only for new flows and handlers).
    specs: Vec<RwLock<InputSpec>>,
    /// The rewriter's outputs, for specs written later.
    noutputs: usize,
    /// Per input: mappings made, failures.
    made: Vec<AtomicU64>,
    failures: Vec<AtomicU64>,
    tcp: Timeouts,
    udp: Timeouts,
    dst_anno: bool,
    /// REPLY_ANNO PAINT.
    reply_paint: bool,
    reap_ms: u64,
}

impl Shared {
    /// The key of flow `tuple` (TCP or UDP) in this rewriter's tables.
    pub fn key(&self, tuple: Tuple, proto: u8) -> Key {
        Key {
            tuple,
            proto,
            owner: self.owner,
        }
    }

    /// Inputs (one input spec each).
    pub fn ninputs(&self) -> usize {
        self.specs.len()
    }

    /// Whether the rewriter keeps TCP and UDP flows by their ports.
    pub fn maps_ports(&self) -> bool {
        matches!(self.kind, Kind::Ip | Kind::Tcp | Kind::Udp)
    }

    /// Whether the rewriter sets a reply annotation (REPLY_ANNO).
    pub fn reply_paint(&self) -> bool {
        self.reply_paint
    }

    /// Click's `get_entry`: the live mapping of TCP or UDP flow `key`
    /// (either direction), or one made as if its first packet had come in
    /// on `input`. `None`: the input makes no mapping, or refused one.
    pub fn get_entry(&self, key: Key, input: usize, now_ms: u64) -> Option<Entry> {
        if let Some(e) = self.set.peek(&key, now_ms) {
            return Some(e);
        }
        if input >= self.specs.len() {
            return None;
        }
        match self.create(input, key.proto, 0, key, now_ms, 0) {
            Ok(Some(e)) => Some(e),
            _ => None,
        }
    }

    /// The mapping of `tuple` (protocol `proto`) in this rewriter's
    /// tables, without making one (ICMPRewriter's lookup).
    pub fn find(&self, tuple: Tuple, proto: u8, now_ms: u64) -> Option<Entry> {
        let proto = match self.kind {
            Kind::Addr | Kind::Pair => return None,
            Kind::Ping if proto != PROTO_ICMP => return None,
            Kind::Ip | Kind::Tcp | Kind::Udp if proto == PROTO_ICMP => return None,
            _ => proto,
        };
        self.set.lookup(
            &Key {
                tuple,
                proto,
                owner: self.owner,
            },
            now_ms,
            0,
        )
    }

    /// Makes the mapping for a new flow of protocol `proto` arriving on
    /// input `port`, whose first packet says `note` of its state.
    /// `Ok(None)`: the input makes no mappings; `Err`: refused.
    fn create(
        &self,
        port: usize,
        proto: u8,
        note: u8,
        key: Key,
        now_ms: u64,
        paint: u8,
    ) -> Result<Option<Entry>, ()> {
        let sh = self;
        let spec = read_spec(&sh.specs[port]);
        let spec = &*spec;
        let tries = match spec {
            InputSpec::Pattern(..) | InputSpec::Keep(..) => 1,
            InputSpec::Mapper(m) => m.tries(),
            _ => return Ok(None),
        };
        let kind = sh.kind;
        let timeouts = if proto == PROTO_TCP { sh.tcp } else { sh.udp };
        let writes = match kind {
            Kind::Addr => flow::W_SADDR,
            Kind::Pair => flow::W_SADDR | flow::W_DADDR,
            Kind::Ping => flow::W_SADDR | flow::W_DADDR | flow::W_SPORT,
            _ => flow::W_ALL,
        };
        let reply_writes = match kind {
            Kind::Addr => flow::W_DADDR,
            _ => writes,
        };
        let reply_key = |t: Tuple| -> Key {
            match kind {
                Kind::Addr => Key {
                    tuple: Tuple {
                        daddr: t.saddr,
                        ..Tuple::default()
                    },
                    ..key
                },
                // An echo reply carries the request's identifier.
                Kind::Ping => Key {
                    tuple: Tuple {
                        saddr: t.daddr,
                        daddr: t.saddr,
                        sport: t.sport,
                        dport: t.sport,
                    },
                    ..key
                },
                _ => Key {
                    tuple: t.reverse(),
                    ..key
                },
            }
        };
        let mut made = Err(Refused::NoFreeValue);
        for _ in 0..tries {
            let (pattern, fout, rout) = match spec {
                InputSpec::Pattern(p, fo, ro) => (Some(&**p), *fo, *ro),
                InputSpec::Keep(fo, ro) => (None, *fo, *ro),
                InputSpec::Mapper(m) => {
                    let (p, fo, ro) = m.next_choice(key.tuple.saddr);
                    (Some(&**p), *fo, *ro)
                }
                _ => return Ok(None),
            };
            made = sh.set.create(&key, now_ms, |set| {
                let new = match pattern {
                    None => key.tuple,
                    Some(p) => {
                        let mut n = p
                            .rewrite(key.tuple, |r| set.contains(&reply_key(r.reverse())))
                            .ok_or(Refused::NoFreeValue)?;
                        if kind == Kind::Ping {
                            n.dport = n.sport;
                        }
                        // A port range in an address rewriter's pattern
                        // may pick a port; such a flow is refused, as
                        // Click's add_flow refuses it.
                        if matches!(kind, Kind::Addr | Kind::Pair) && (n.sport | n.dport) != 0 {
                            return Err(Refused::NoFreeValue);
                        }
                        n
                    }
                };
                let rev = reply_key(new);
                let back = match kind {
                    // The reply's destination becomes the original source.
                    Kind::Addr => Tuple {
                        daddr: key.tuple.saddr,
                        ..Tuple::default()
                    },
                    _ => key.tuple.reverse(),
                };
                Ok(NewFlow {
                    fwd: key,
                    fwd_entry: Entry {
                        new,
                        output: fout as u16,
                        writes,
                        reply: false,
                        slot: 0,
                        reply_anno: None,
                        seq: false,
                        timeouts,
                    },
                    rev,
                    rev_entry: Entry {
                        new: back,
                        output: rout as u16,
                        writes: reply_writes,
                        reply: true,
                        slot: 0,
                        reply_anno: sh.reply_paint.then_some(paint),
                        seq: false,
                        timeouts,
                    },
                    timeouts,
                    input: port as u16,
                    note,
                })
            });
            // A mapper tries its next pattern when one has no free value.
            if !matches!(made, Err(Refused::NoFreeValue)) {
                break;
            }
        }
        match made {
            Ok(e) => {
                sh.made[port].fetch_add(1, Relaxed);
                Ok(Some(e))
            }
            Err(_) => {
                sh.failures[port].fetch_add(1, Relaxed);
                Err(())
            }
        }
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u128::from(u64::MAX / 4)) as u64
}

fn secs(args: &mut Args<'_>, key: &'static str, default: u64) -> Result<u64, ArgError> {
    Ok(ms(args
        .read::<Duration>(key)?
        .unwrap_or(Duration::from_secs(default))))
}

/// MAPPING_CAPACITY: a number or another rewriter's name.
enum Capacity {
    Count(usize),
    Name(String),
}

impl FromArg for Capacity {
    const TYPE: &'static str = "unsigned integer or rewriter name";
    fn from_arg(text: &str) -> Result<Self, String> {
        Ok(match text.parse::<usize>() {
            Ok(n) => Capacity::Count(n),
            Err(_) => Capacity::Name(text.to_string()),
        })
    }
}

/// Reads a rewriter's arguments and makes one worker's instance.
pub fn make(
    kind: Kind,
    args: &mut Args<'_>,
    ports: &PortInfo,
) -> Result<Box<dyn bricks_element::Element>, ArgError> {
    let noutputs = ports.noutputs();
    let ninputs = ports.ninputs();
    // Every worker's instance reads the arguments (so that all are
    // consumed); the first one builds the shared state from them.
    let (tcp, udp) = match kind {
        Kind::Ip | Kind::Tcp => {
            let mut data = secs(args, "TCP_TIMEOUT", 86_400)?;
            if let Some(t) = args.read::<Duration>("TIMEOUT")? {
                data = ms(t);
            }
            let tcp = Timeouts {
                idle: secs(args, "TCP_NODATA_TIMEOUT", 300)?,
                established: data,
                done: secs(args, "TCP_DONE_TIMEOUT", 240)?,
                // Click's base-class GUARANTEE is the TCP one.
                guarantee: match args.read::<Duration>("GUARANTEE")? {
                    Some(g) => ms(g),
                    None => secs(args, "TCP_GUARANTEE", 5)?,
                },
                tcp: true,
            };
            let udp = if kind == Kind::Ip {
                let idle = secs(args, "UDP_TIMEOUT", 300)?;
                let streaming = args
                    .read::<Duration>("UDP_STREAMING_TIMEOUT")?
                    .map_or(idle, ms);
                Timeouts {
                    idle,
                    established: streaming,
                    done: idle,
                    guarantee: secs(args, "UDP_GUARANTEE", 5)?,
                    tcp: false,
                }
            } else {
                tcp
            };
            (tcp, udp)
        }
        Kind::Udp => {
            let mut idle = secs(args, "UDP_TIMEOUT", 300)?;
            if let Some(t) = args.read::<Duration>("TIMEOUT")? {
                idle = ms(t);
            }
            let mut streaming = args.read::<Duration>("UDP_STREAMING_TIMEOUT")?.map(ms);
            if let Some(t) = args.read::<Duration>("STREAMING_TIMEOUT")? {
                streaming = Some(ms(t));
            }
            let mut guarantee = secs(args, "UDP_GUARANTEE", 5)?;
            if let Some(t) = args.read::<Duration>("GUARANTEE")? {
                guarantee = ms(t);
            }
            let t = Timeouts {
                idle,
                established: streaming.unwrap_or(idle),
                done: idle,
                guarantee,
                tcp: false,
            };
            (t, t)
        }
        Kind::Addr | Kind::Pair | Kind::Ping => {
            let idle = secs(args, "TIMEOUT", 300)?;
            let t = Timeouts {
                idle,
                established: idle,
                done: idle,
                guarantee: secs(args, "GUARANTEE", 5)?,
                tcp: false,
            };
            (t, t)
        }
    };
    let reap_ms = secs(args, "REAP_INTERVAL", 900)?;
    let mut cap = args.read::<Capacity>("MAPPING_CAPACITY")?;
    if cap.is_none() {
        cap = args.read::<Capacity>("CAPACITY")?;
    }
    let dst_anno = args.read::<bool>("DST_ANNO")?.unwrap_or(true);
    let reply_paint = match args.read::<String>("REPLY_ANNO")? {
        None => false,
        Some(a) if a == "PAINT" => true,
        Some(a) => {
            return Err(ArgError::new(format!(
                "REPLY_ANNO {a}: only PAINT is supported"
            )))
        }
    };
    let rest = args.rest();
    if rest.len() != ninputs {
        return Err(ArgError::new(format!(
            "need {ninputs} arguments, one per input port (found {})",
            rest.len()
        )));
    }
    // The IPRewriterPatterns in scope, made on the first named pattern.
    let sets: OnceCell<Result<Vec<Arc<PatternSet>>, String>> = OnceCell::new();
    let mut specs = Vec::new();
    // Every bad spec is reported, one line each, as Click's configure.
    let mut bad: Vec<(bricks_config::Span, String)> = Vec::new();
    for (i, (text, span)) in rest.into_iter().enumerate() {
        let named = |name: &str| -> Option<Arc<Pattern>> {
            let sets =
                sets.get_or_init(|| args.shared_in_scope::<PatternSet>(iprwpatterns::CLASS.name));
            sets.as_ref().ok()?.iter().find_map(|s| s.get(name))
        };
        let mapper = |name: &str| -> Result<Arc<Mapper>, String> {
            args.shared_of_name::<Mapper>(name, MAPPER_CLASSES)
                .map_err(|why| {
                    if why.ends_with("does not name an element") {
                        "unknown specification".to_string()
                    } else {
                        format!("element is not an IPMapper ({why})")
                    }
                })
        };
        let spec = match InputSpec::parse(text, noutputs, &named, &mapper) {
            Ok(spec) => spec,
            Err(why) => {
                let why = match sets.get() {
                    Some(Err(e)) => format!("{why} (IPRewriterPatterns: {e})"),
                    _ => why,
                };
                bad.push((span, format!("input spec {i}: {why}")));
                continue;
            }
        };
        let pats: Vec<&Pattern> = match &spec {
            InputSpec::Pattern(p, ..) => vec![&**p],
            InputSpec::Mapper(m) => m.choices.iter().map(|c| &*c.0).collect(),
            _ => Vec::new(),
        };
        // The address rewriters' flows have no ports: a pattern that
        // sets one (or, for IPAddrRewriter, a destination) could never
        // make a mapping. Click accepts it and fails every flow.
        let addr_only = matches!(kind, Kind::Addr | Kind::Pair);
        let why = pats.iter().find_map(|p| {
            if addr_only && p.sport != 0 {
                Some("bad source port (the address rewriters map no ports)")
            } else if addr_only && p.dport != 0 {
                Some("bad destination port (the address rewriters map no ports)")
            } else if kind == Kind::Addr && p.daddr != 0 {
                Some("bad destination address (must be `-`)")
            } else {
                None
            }
        });
        match why {
            Some(why) => bad.push((span, format!("input spec {i}: {why}"))),
            None => specs.push(spec),
        }
    }
    if let Some((span, _)) = bad.first() {
        let lines: Vec<String> = bad.iter().map(|(_, m)| m.clone()).collect();
        return Err(ArgError::at(*span, lines.join("\n")));
    }
    let sh = args.shared(|args| {
        let set = match cap {
            None => Arc::new(FlowSet::new(DEFAULT_CAPACITY)),
            Some(Capacity::Count(n)) if (1..=MAX_CAPACITY).contains(&n) => {
                Arc::new(FlowSet::new(n))
            }
            Some(Capacity::Count(n)) => {
                return Err(ArgError::new(format!(
                    "MAPPING_CAPACITY {n}: from 1 to {MAX_CAPACITY}"
                )))
            }
            Some(Capacity::Name(name)) => {
                let other: Arc<Shared> = args
                    .shared_of_name(&name, REWRITER_CLASSES)
                    .map_err(|why| ArgError::new(format!("bad MAPPING_CAPACITY: {why}")))?;
                Arc::clone(&other.set)
            }
        };
        Ok(Shared {
            owner: set.new_owner(),
            set,
            kind,
            made: specs.iter().map(|_| AtomicU64::new(0)).collect(),
            failures: specs.iter().map(|_| AtomicU64::new(0)).collect(),
            specs: specs.into_iter().map(RwLock::new).collect(),
            noutputs,
            tcp,
            udp,
            dst_anno,
            reply_paint,
            reap_ms,
        })
    })?;
    Ok(Box::new(Rewriter {
        sh,
        first_worker: true,
        c: Counts::default(),
        now: Timestamp(0),
    }))
}

#[derive(Debug, Default)]
struct Counts {
    mapped: u64,
    created: u64,
    passed: u64,
    dropped: u64,
    failed: u64,
    not_ip: u64,
    no_ports: u64,
}

/// One worker's instance of a rewriter.
#[derive(Debug)]
pub struct Rewriter {
    sh: Arc<Shared>,
    first_worker: bool,
    c: Counts,
    now: Timestamp,
}

const DROP: Option<usize> = None;

/// What a packet says of its flow's state: FIN or RST, or payload.
#[inline(always)]
fn note_of(f: &Parsed) -> u8 {
    if f.fin_rst {
        F_DONE
    } else if f.payload > 0 {
        F_DATA_FWD
    } else {
        0
    }
}

impl Rewriter {
    /// The lookup key of a packet's flow in this rewriter's tables.
    #[inline(always)]
    fn key(&self, f: &Parsed) -> Key {
        let t = &f.tuple;
        let (tuple, proto) = match self.sh.kind {
            Kind::Addr => (
                Tuple {
                    saddr: t.saddr,
                    ..Tuple::default()
                },
                0,
            ),
            Kind::Pair => (
                Tuple {
                    saddr: t.saddr,
                    daddr: t.daddr,
                    ..Tuple::default()
                },
                0,
            ),
            _ => (*t, f.proto),
        };
        Key {
            tuple,
            proto,
            owner: self.sh.owner,
        }
    }

    /// The output for one packet (rewritten in place), or None: dropped.
    #[inline]
    fn process(&mut self, port: usize, p: &mut Packet, now_ms: u64) -> Option<usize> {
        let f = match flow::parse(p.l3_bytes()) {
            Ok(f) => f,
            Err(_) => {
                self.c.not_ip += 1;
                return DROP;
            }
        };
        let kind = self.sh.kind;
        let usable = match kind {
            Kind::Ip | Kind::Udp => f.transport && matches!(f.proto, PROTO_TCP | PROTO_UDP),
            Kind::Tcp => f.transport && f.proto == PROTO_TCP,
            Kind::Ping => f.transport && f.proto == PROTO_ICMP && matches!(f.icmp_type, 0 | 8),
            Kind::Addr | Kind::Pair => true,
        };
        if !usable {
            return match self.sh.specs.get(port).map(read_spec).as_deref() {
                Some(InputSpec::Pass(o)) => {
                    self.c.passed += 1;
                    Some(*o)
                }
                _ => {
                    self.c.no_ports += 1;
                    DROP
                }
            };
        }
        let note = note_of(&f);
        let set = &self.sh.set;
        let key = self.key(&f);
        let mut entry = set.lookup(&key, now_ms, note);
        if entry.is_none() && kind == Kind::Addr {
            let rkey = Key {
                tuple: Tuple {
                    daddr: f.tuple.daddr,
                    ..Tuple::default()
                },
                ..key
            };
            entry = set.lookup(&rkey, now_ms, note);
        }
        let e = match entry {
            Some(e) => {
                self.c.mapped += 1;
                e
            }
            None => {
                if kind == Kind::Ping && f.icmp_type == 0 {
                    // A reply to no request of ours makes no mapping.
                    return self.no_mapping(port);
                }
                match self.create(port, &f, key, now_ms, p.anno().paint) {
                    Ok(Some(e)) => {
                        self.c.created += 1;
                        e
                    }
                    Ok(None) => return self.no_mapping(port),
                    Err(o) => return o,
                }
            }
        };
        let dst = flow::apply(p, &f, &e.new, e.writes);
        if e.seq && f.proto == PROTO_TCP && f.transport {
            let ip = p.l3_bytes_mut();
            if let Some(tcp) = ip.get_mut(f.ihl..) {
                self.sh.set.apply_seq(e.slot, e.reply, tcp);
            }
        }
        let a = p.anno_mut();
        if self.sh.dst_anno {
            a.dst_ip = dst.into();
        }
        if let Some(paint) = e.reply_anno {
            a.paint = paint;
        }
        Some(usize::from(e.output))
    }

    /// A packet with no mapping whose input makes none.
    fn no_mapping(&mut self, port: usize) -> Option<usize> {
        match self.sh.specs.get(port).map(read_spec).as_deref() {
            Some(InputSpec::Pass(o)) => {
                self.c.passed += 1;
                Some(*o)
            }
            _ => {
                self.c.dropped += 1;
                DROP
            }
        }
    }

    /// Makes the mapping for a new flow. `Ok(None)`: the input makes no
    /// mappings; `Err(verdict)`: refused.
    fn create(
        &mut self,
        port: usize,
        f: &Parsed,
        key: Key,
        now_ms: u64,
        paint: u8,
    ) -> Result<Option<Entry>, Option<usize>> {
        self.sh
            .create(port, f.proto, note_of(f), key, now_ms, paint)
            .map_err(|()| {
                self.c.failed += 1;
                DROP
            })
    }

    fn patterns(&self, only: Option<usize>) -> String {
        let mut s = String::new();
        for (i, spec) in self.sh.specs.iter().enumerate() {
            if only.is_some_and(|o| o != i) {
                continue;
            }
            s += &read_spec(spec).unparse();
            let n = self.sh.made[i].load(Relaxed);
            if n > 0 {
                s += &format!(" [{n}]");
            }
            s.push('\n');
        }
        s
    }

    fn now_ms(&self) -> u64 {
        self.now.0 / 1_000_000
    }
}

/// An input's spec, for reading (a poisoned lock still holds a whole
/// spec: writers only swap one in).
fn read_spec(spec: &RwLock<InputSpec>) -> std::sync::RwLockReadGuard<'_, InputSpec> {
    spec.read().unwrap_or_else(|e| e.into_inner())
}

/// Parses `SADDR SPORT DADDR DPORT` (a `tcp_lookup` parameter).
fn parse_tuple(text: &str) -> Result<Tuple, String> {
    let w: Vec<&str> = text.split_whitespace().collect();
    let addr = |t: &str| {
        t.parse::<std::net::Ipv4Addr>()
            .map(u32::from)
            .map_err(|_| format!("expected an IP address, not `{t}`"))
    };
    let port = |t: &str| {
        t.parse::<u16>()
            .map_err(|_| format!("expected a port, not `{t}`"))
    };
    match w.as_slice() {
        [sa, sp, da, dp] => Ok(Tuple {
            saddr: addr(sa)?,
            sport: port(sp)?,
            daddr: addr(da)?,
            dport: port(dp)?,
        }),
        _ => Err("expected `SADDR SPORT DADDR DPORT`".into()),
    }
}

const HANDLERS: &[Handler] = &[
    Handler::r("table"),
    Handler::r("tcp_table"),
    Handler::r("udp_table"),
    Handler::r("mappings"),
    Handler::r("patterns"),
    Handler::r("tcp_lookup"),
    Handler::r("udp_lookup"),
    Handler::rw("capacity"),
    Handler::w("clear"),
];

impl Element for Rewriter {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.first_worker = cx.worker() == 0;
        self.now = cx.now();
        if self.first_worker && self.sh.reap_ms > 0 {
            cx.schedule_at(Timestamp(
                cx.now().0.saturating_add(self.sh.reap_ms * 1_000_000),
            ));
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        self.now = cx.now();
        self.sh.set.reap_all(self.now_ms());
        if self.sh.reap_ms > 0 {
            cx.schedule_at(Timestamp(
                cx.now().0.saturating_add(self.sh.reap_ms * 1_000_000),
            ));
        }
    }

    #[inline]
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.now = cx.now();
        let now_ms = self.now_ms();
        cx.push_classified(batch, |p| self.process(port, p, now_ms));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("mapped", self.c.mapped);
        s.counter("created", self.c.created);
        s.counter("passed", self.c.passed);
        s.counter("dropped", self.c.dropped);
        s.counter("failed", self.c.failed);
        s.counter("not_ip", self.c.not_ip);
        s.counter("no_ports", self.c.no_ports);
        if self.first_worker {
            let sh = &self.sh;
            let made: u64 = sh.made.iter().map(|c| c.load(Relaxed)).sum();
            let failures: u64 = sh.failures.iter().map(|c| c.load(Relaxed)).sum();
            s.counter("nmappings", made);
            s.counter("table_size", sh.set.count_owner(sh.owner) as u64);
            s.counter("mapping_failures", failures);
            s.counter("size", sh.set.size() as u64);
        }
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        matches!(handler, "capacity" | "clear") || handler.starts_with("pattern")
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        _cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        // Click's `tcp_lookup` and `udp_lookup`: the flow a mapping
        // rewrites `SADDR SPORT DADDR DPORT` to, or nothing.
        let proto = match handler {
            "tcp_lookup" if !write => PROTO_TCP,
            "udp_lookup" if !write => PROTO_UDP,
            _ => return None,
        };
        Some(
            parse_tuple(value).map(|t| match self.sh.find(t, proto, self.now_ms()) {
                Some(e) => format!(
                    "{} {} {} {}",
                    std::net::Ipv4Addr::from(e.new.saddr),
                    e.new.sport,
                    std::net::Ipv4Addr::from(e.new.daddr),
                    e.new.dport
                ),
                None => String::new(),
            }),
        )
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        if let Some(i) = handler
            .strip_prefix("pattern")
            .and_then(|n| n.parse::<usize>().ok())
        {
            // Click's writable `patternN`: input N's spec is replaced,
            // and the mappings the old one made are removed.
            let slot = self
                .sh
                .specs
                .get(i)
                .ok_or_else(|| format!("no input {i}"))?;
            let spec = InputSpec::parse(value, self.sh.noutputs, &|_| None, &|_| {
                Err("a mapper cannot be named in a write".into())
            })?;
            *slot.write().unwrap_or_else(|e| e.into_inner()) = spec;
            self.sh.set.clear_input(self.sh.owner, i as u16);
            self.sh.made[i].store(0, Relaxed);
            self.sh.failures[i].store(0, Relaxed);
            return Ok(());
        }
        match handler {
            "capacity" => {
                let n: usize = value
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .parse()
                    .map_err(|_| format!("capacity: expected a number, not `{value}`"))?;
                self.sh.set.set_capacity(n, self.now_ms())
            }
            "clear" => {
                self.sh.set.clear(Some(self.sh.owner));
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}` (capacity, clear)")),
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        let sh = &self.sh;
        let now = self.now_ms();
        Some(match handler {
            "table" | "mappings" => sh.set.unparse(sh.owner, None, now),
            "tcp_table" | "tcp_mappings" => sh.set.unparse(sh.owner, Some(PROTO_TCP), now),
            "udp_table" | "udp_mappings" => sh.set.unparse(sh.owner, Some(PROTO_UDP), now),
            "patterns" => self.patterns(None),
            "capacity" => sh.set.capacity().to_string(),
            h => {
                let i: usize = h.strip_prefix("pattern")?.parse().ok()?;
                if i >= sh.specs.len() {
                    return None;
                }
                self.patterns(Some(i))
            }
        })
    }

    fn handlers(&self) -> &'static [Handler] {
        HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::super::flow::testing::{checksums_ok, packet};
    use super::super::{icmppingrewriter, ipaddrrewriter, iprewriter, tcprewriter};
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    const T0: u64 = 1_000_000_000;

    fn rw(class: &'static bricks_element::ElementClass, args: &str, n: usize) -> Harness {
        let mut h = Harness::push(class, args, n, 2);
        h.advance_to(Timestamp(T0));
        h
    }

    fn flow(p: &[u8]) -> ([u8; 4], u16, [u8; 4], u16) {
        let a = |i: usize| [p[i], p[i + 1], p[i + 2], p[i + 3]];
        (
            a(12),
            u16::from_be_bytes([p[20], p[21]]),
            a(16),
            u16::from_be_bytes([p[22], p[23]]),
        )
    }

    const NAPT: &str = "pattern 1.0.0.1 1024-65535# - - 0 1, drop";

    #[test]
    fn a_pattern_written_replaces_the_input_and_its_flows() {
        let mut h = rw(&iprewriter::CLASS, NAPT, 2);
        h.push_bytes(0, &packet(6, [18, 26, 4, 44], 30, [10, 0, 0, 4], 40, 3));
        let out = h.take_bytes(0);
        assert_eq!(flow(&out[0]), ([1, 0, 0, 1], 1024, [10, 0, 0, 4], 40));
        // Click's tcp_lookup: the flow a mapping rewrites a tuple to.
        assert_eq!(
            h.read_handler_with("tcp_lookup", "18.26.4.44 30 10.0.0.4 40")
                .unwrap(),
            "1.0.0.1 1024 10.0.0.4 40"
        );
        assert_eq!(
            h.read_handler_with("tcp_lookup", "10.0.0.4 40 1.0.0.1 1024")
                .unwrap(),
            "10.0.0.4 40 18.26.4.44 30"
        );
        assert_eq!(
            h.read_handler_with("udp_lookup", "18.26.4.44 30 10.0.0.4 40")
                .unwrap(),
            ""
        );
        assert!(h.read_handler_with("tcp_lookup", "1.2.3.4 5").is_err());
        // A new pattern for input 0: its old mappings go, the same flow
        // is mapped again by the new one.
        h.write_handler("pattern0", "pattern 2.0.0.2 2000-2100# - - 0 1")
            .unwrap();
        assert_eq!(
            h.read_handler("patterns").unwrap(),
            "2.0.0.2 2000-2100 - -\n<drop>\n"
        );
        assert_eq!(
            h.read_handler_with("tcp_lookup", "18.26.4.44 30 10.0.0.4 40")
                .unwrap(),
            ""
        );
        h.push_bytes(0, &packet(6, [18, 26, 4, 44], 30, [10, 0, 0, 4], 40, 3));
        let out = h.take_bytes(0);
        assert_eq!(flow(&out[0]), ([2, 0, 0, 2], 2000, [10, 0, 0, 4], 40));
        assert!(h
            .write_handler("pattern0", "pattern 1.0.0.1 - - - 0 5")
            .is_err());
        assert!(h.write_handler("pattern7", "drop").is_err());
    }

    #[test]
    fn a_flow_and_its_replies_are_translated() {
        for proto in [6u8, 17] {
            let mut h = rw(&iprewriter::CLASS, NAPT, 2);
            h.push_bytes(0, &packet(proto, [18, 26, 4, 44], 30, [10, 0, 0, 4], 40, 3));
            h.push_bytes(0, &packet(proto, [18, 26, 4, 44], 20, [10, 0, 0, 8], 80, 0));
            let out = h.take_bytes(0);
            assert_eq!(flow(&out[0]), ([1, 0, 0, 1], 1024, [10, 0, 0, 4], 40));
            assert_eq!(flow(&out[1]), ([1, 0, 0, 1], 1025, [10, 0, 0, 8], 80));
            assert!(out.iter().all(|p| checksums_ok(p)));
            // The replies, on input 1, leave by output 1 as the original
            // flow's replies.
            h.push_bytes(1, &packet(proto, [10, 0, 0, 4], 40, [1, 0, 0, 1], 1024, 9));
            h.push_bytes(1, &packet(proto, [10, 0, 0, 8], 80, [1, 0, 0, 1], 1026, 9));
            let back = h.take_bytes(1);
            assert_eq!(back.len(), 1, "no mapping for port 1026: dropped");
            assert_eq!(flow(&back[0]), ([10, 0, 0, 4], 40, [18, 26, 4, 44], 30));
            assert!(checksums_ok(&back[0]));
            let s = h.stats();
            assert_eq!(s.get("created"), Some(2));
            assert_eq!(s.get("mapped"), Some(1));
            assert_eq!(s.get("dropped"), Some(1));
            assert_eq!(s.get("table_size"), Some(2));
            assert_eq!(
                h.read_handler("patterns").unwrap(),
                "1.0.0.1 1024-65535 - - [2]\n<drop>\n"
            );
            let table = h.read_handler("table").unwrap();
            assert!(
                table.contains(
                    "(18.26.4.44, 30, 10.0.0.4, 40) => (1.0.0.1, 1024, 10.0.0.4, 40) [*0 1] i0"
                ),
                "{table}"
            );
        }
    }

    #[test]
    fn what_cannot_be_mapped_is_passed_or_dropped_and_counted() {
        let mut h = rw(&iprewriter::CLASS, "pass 1, drop", 2);
        let icmp = packet(1, [1, 1, 1, 1], 7, [2, 2, 2, 2], 8, 0);
        h.push_bytes(0, &icmp);
        h.push_bytes(1, &icmp);
        let mut frag = packet(17, [1, 1, 1, 1], 1, [2, 2, 2, 2], 2, 16);
        frag[7] = 2;
        h.push_bytes(1, &frag);
        h.push_bytes(1, &[0x45, 0, 0]);
        assert_eq!(h.take_bytes(1), vec![icmp]);
        let s = h.stats();
        assert_eq!(s.get("passed"), Some(1));
        assert_eq!(s.get("no_ports"), Some(2));
        assert_eq!(s.get("not_ip"), Some(1));
        // TCPRewriter takes TCP only.
        let mut h = rw(&tcprewriter::CLASS, "pattern 1.0.0.1 - - - 0 1", 1);
        h.push_bytes(0, &packet(17, [1, 1, 1, 1], 1, [2, 2, 2, 2], 2, 0));
        h.push_bytes(0, &packet(6, [1, 1, 1, 1], 1, [2, 2, 2, 2], 2, 0));
        assert_eq!(h.take_bytes(0).len(), 1);
        assert_eq!(h.stats().get("no_ports"), Some(1));
    }

    #[test]
    fn a_full_table_refuses_new_flows_until_one_loses_its_guarantee() {
        let mut h = rw(
            &iprewriter::CLASS,
            &format!("{NAPT}, MAPPING_CAPACITY 2"),
            2,
        );
        for sport in 1..=3 {
            h.push_bytes(0, &packet(6, [9, 9, 9, 9], sport, [8, 8, 8, 8], 80, 0));
        }
        assert_eq!(h.take_bytes(0).len(), 2);
        let s = h.stats();
        assert_eq!(s.get("failed"), Some(1));
        assert_eq!(s.get("mapping_failures"), Some(1));
        assert_eq!(s.get("size"), Some(2));
        // Five seconds later the guarantees are over: the oldest goes.
        h.advance_to(Timestamp(T0 + 5_000_000_000));
        h.push_bytes(0, &packet(6, [9, 9, 9, 9], 3, [8, 8, 8, 8], 80, 0));
        assert_eq!(h.take_bytes(0).len(), 1);
        assert_eq!(h.stats().get("size"), Some(2));
        h.push_bytes(1, &packet(6, [8, 8, 8, 8], 80, [1, 0, 0, 1], 1024, 0));
        assert!(h.take_bytes(1).is_empty(), "the evicted flow's reply");
        assert_eq!(h.read_handler("capacity").unwrap(), "2");
        h.write_handler("clear", "").unwrap();
        assert_eq!(h.stats().get("size"), Some(0));
    }

    #[test]
    fn idle_mappings_time_out() {
        let mut h = rw(
            &iprewriter::CLASS,
            &format!("{NAPT}, UDP_TIMEOUT 10, UDP_GUARANTEE 0"),
            2,
        );
        h.push_bytes(0, &packet(17, [9, 9, 9, 9], 5, [8, 8, 8, 8], 53, 0));
        h.advance_to(Timestamp(T0 + 9_999_000_000));
        h.push_bytes(1, &packet(17, [8, 8, 8, 8], 53, [1, 0, 0, 1], 1024, 0));
        assert_eq!(h.take_bytes(1).len(), 1, "used again at 9.999 s");
        h.advance_to(Timestamp(T0 + 19_999_000_000));
        h.push_bytes(1, &packet(17, [8, 8, 8, 8], 53, [1, 0, 0, 1], 1024, 0));
        assert!(h.take_bytes(1).is_empty(), "idle 10 s: gone");
    }

    #[test]
    fn basic_nat_maps_addresses_only() {
        let mut h = rw(
            &ipaddrrewriter::CLASS,
            "pattern 3.0.0.1-3.0.0.255# - 0 1",
            1,
        );
        h.push_bytes(0, &packet(6, [1, 0, 0, 1], 1234, [9, 9, 9, 9], 80, 4));
        h.push_bytes(0, &packet(17, [1, 0, 0, 2], 1234, [9, 9, 9, 8], 53, 4));
        h.push_bytes(0, &packet(17, [9, 9, 9, 6], 53, [3, 0, 0, 1], 1234, 4));
        let out = h.take_bytes(0);
        assert_eq!(flow(&out[0]), ([3, 0, 0, 1], 1234, [9, 9, 9, 9], 80));
        assert_eq!(flow(&out[1]), ([3, 0, 0, 2], 1234, [9, 9, 9, 8], 53));
        let back = h.take_bytes(1);
        assert_eq!(flow(&back[0]), ([9, 9, 9, 6], 53, [1, 0, 0, 1], 1234));
        assert!(out.iter().chain(&back).all(|p| checksums_ok(p)));
    }

    #[test]
    fn pings_get_a_new_identifier_and_their_replies_the_old() {
        let mut h = rw(
            &icmppingrewriter::CLASS,
            "pattern 2.0.0.2 - 100-200# 0 1, drop",
            2,
        );
        h.push_bytes(0, &packet(1, [1, 0, 0, 1], 10, [5, 0, 0, 5], 8, 0));
        let out = h.take_bytes(0);
        assert_eq!(&out[0][12..16], &[2, 0, 0, 2]);
        assert_eq!(u16::from_be_bytes([out[0][24], out[0][25]]), 100);
        assert!(checksums_ok(&out[0]));
        h.push_bytes(1, &packet(1, [5, 0, 0, 5], 100, [2, 0, 0, 2], 0, 0));
        let back = h.take_bytes(1);
        assert_eq!(&back[0][16..20], &[1, 0, 0, 1]);
        assert_eq!(u16::from_be_bytes([back[0][24], back[0][25]]), 10);
        assert!(checksums_ok(&back[0]));
        // A reply to nothing of ours is dropped.
        h.push_bytes(1, &packet(1, [5, 0, 0, 5], 101, [2, 0, 0, 2], 0, 0));
        assert!(h.take_bytes(1).is_empty());
    }

    #[test]
    fn arguments_are_checked() {
        let bad = |args: &str, n: usize| {
            Harness::try_new(
                &iprewriter::CLASS,
                args,
                bricks_element::PortInfo {
                    inputs: vec![bricks_element::Processing::Push; n],
                    outputs: vec![bricks_element::Processing::Push; 2],
                },
            )
            .err()
            .unwrap_or_default()
        };
        assert!(bad("drop", 2).contains("need 2 arguments"));
        assert!(bad("pattern 1.0.0.1 1x - - 0 1", 1).contains("input spec 0: bad source port"));
        assert!(bad("pattern 1.0.0.1 - - - 0 2", 1).contains("output port out of range"));
        assert!(bad("drop, MAPPING_CAPACITY 0", 1).contains("MAPPING_CAPACITY"));
        assert!(bad("drop, MAPPING_CAPACITY nobody", 1).contains("MAPPING_CAPACITY"));
        assert!(bad("drop, REPLY_ANNO FOO", 1).contains("REPLY_ANNO"));
        assert_eq!(bad("drop, TCP_TIMEOUT 1h, MAPPING_CAPACITY 10", 1), "");
    }
}
