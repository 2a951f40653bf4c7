//! `AddressTranslator`: the address and port half of NAT-PT (RFC 2766
//! section 2; Click's `elements/ip6/addresstranslator.cc`). It rewrites
//! the IPv6 source of packets going out (input 0 to output 0) and the
//! IPv6 destination of packets coming in (input 1 to output 1), with
//! static address or address-and-port mappings, dynamic address bindings
//! from a pool, or dynamic address-and-port mappings (NAPT-PT) from a
//! port range. `ProtocolTranslator64`/`46` do the IPv4/IPv6 half.
//!
//! Dynamic mappings are bounded (by the pool and by CAPACITY) and expire
//! when idle, with the idle timeouts of RFC 4787 REQ-5 (UDP), RFC 5382
//! REQ-5 (TCP) and RFC 5508 REQ-1 (ICMP queries). Each timeout class
//! keeps its mappings in a list ordered by last use, so the expired ones
//! are always at the heads: reaping them is O(1) per mapping, done a few
//! at a time per batch and by a timer, never by a scan. Free ports and
//! addresses are a FIFO, so a new mapping costs O(1) too.
//!
//! The tables are shared by every worker behind one mutex, taken once per
//! batch: a flow and its reply may arrive on different workers.

use super::header6::addr_at;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::{PerPacket, Timestamp};
use bricks_wire::checksum;
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::net::Ipv6Addr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The `AddressTranslator` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AddressTranslator",
    ports: "2/2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "translates IPv6 addresses and ports (NAT-PT)",
    synopsis: "AddressTranslator(NSTATIC, [STATIC_PORTS, STATIC1, ..., STATICn,] DYNAMIC \
        [, DYNAMIC_PORTS, DIRECTION, MADDR1, ... | MADDR PORTLOW PORTHIGH] [, KEYWORDS])",
    description: "Translates the addresses (and ports) of IPv6 packets whose IPv6 header is \
        directly followed by TCP, UDP or ICMPv6, as NAT-PT does (RFC 2766). Input 0 takes \
        packets going out (from the inside): a mapping rewrites their source address (and \
        port) and they leave by output 0. Input 1 takes packets coming in: a mapping \
        rewrites their destination address (and port) and they leave by output 1. The TCP, \
        UDP and ICMPv6 checksums are updated incrementally (RFC 1624); a zero UDP checksum \
        is computed afresh. A packet with no mapping, where none may be made, is dropped \
        and counted (`no_mapping`), as are packets of other protocols or with extension \
        headers (`bad_protocol`), truncated ones and non-IPv6 ones.\n\n\
        The arguments are Click's, positional. NSTATIC is the number of static mappings. \
        When it is not 0, STATIC_PORTS (boolean) says whether they map ports, and each \
        STATICi is `IADDR MADDR` (inner address, mapped address) or, with ports, `IADDR \
        IPORT MADDR MPORT`. DYNAMIC (boolean) says whether there are dynamic mappings; if \
        so DYNAMIC_PORTS (boolean) chooses address-and-port mapping, and DIRECTION says \
        which packets may make a mapping: 0 (false) those going out (input 0), 1 those \
        coming in (input 1). Without ports the rest are the pool's addresses, MADDR1 ... \
        MADDRn: a new inner host (DIRECTION 0) is bound to a free one, and the binding \
        rewrites every packet of that host, ports unchanged. With ports the last argument \
        is `MADDR PORTLOW PORTHIGH`: each new flow (protocol, inner address and port, \
        outer address and port) gets MADDR and a free port of the range, given out in \
        order and reused least recently freed first; an ICMPv6 echo's identifier serves \
        as its port. With DIRECTION 1 the roles are mirrored: the pool holds inner \
        addresses (and ports) given to flows arriving from outside. Static mappings are \
        looked up first.\n\n\
        The older form of Click's configurations (conf/gnat01.click, gnat02.click) is \
        also read: when the second argument has six booleans (`1 1 0 0 0 0`, flags of \
        the fields IADDR IPORT MADDR MPORT EADDR EPORT) the arguments are NSTATIC, the \
        static mappings' fields, the static mappings (the flagged fields in that order), \
        the fields an outgoing packet is looked up by, the fields an incoming packet is \
        looked up by, DIRECTION, and pools `MADDR PORTLOW PORTHIGH` of address-and-port \
        pairs; with NSTATIC 0 the second argument is also the outgoing lookup fields, as \
        in Click.\n\n\
        Bricks extensions: the dynamic tables hold at most CAPACITY mappings (a new flow \
        beyond that is dropped and counted in `table_full`; existing ones keep working) \
        and a mapping expires when idle for its timeout. A TCP mapping is transitory \
        (TCP_TRANSITORY_TIMEOUT) until a packet has passed the other way, then \
        established (TCP_TIMEOUT), and transitory again after a FIN or RST. The `mappings` \
        handler lists static and dynamic mappings, one a line.",
    ports: "two push inputs (0: outgoing, 1: incoming), two push outputs (0: outgoing \
        translated, 1: incoming translated)",
    keywords: &[
        Keyword {
            name: "CAPACITY",
            ty: "unsigned integer",
            default: Some("65536"),
            doc: "most dynamic mappings at once (bricks extension; Click's only bound is the pool)",
        },
        Keyword {
            name: "TCP_TIMEOUT",
            ty: "duration (seconds when no unit)",
            default: Some("7440"),
            doc: "idle lifetime of an established TCP mapping (RFC 5382 REQ-5: 2 h 4 min)",
        },
        Keyword {
            name: "TCP_TRANSITORY_TIMEOUT",
            ty: "duration (seconds when no unit)",
            default: Some("240"),
            doc: "idle lifetime of a TCP mapping before a reply or after a FIN or RST (RFC 5382 REQ-5)",
        },
        Keyword {
            name: "UDP_TIMEOUT",
            ty: "duration (seconds when no unit)",
            default: Some("300"),
            doc: "idle lifetime of a UDP mapping (RFC 4787 REQ-5)",
        },
        Keyword {
            name: "ICMP_TIMEOUT",
            ty: "duration (seconds when no unit)",
            default: Some("60"),
            doc: "idle lifetime of an ICMPv6 echo mapping (RFC 5508 REQ-1)",
        },
        Keyword {
            name: "BINDING_TIMEOUT",
            ty: "duration (seconds when no unit)",
            default: Some("7440"),
            doc: "idle lifetime of a dynamic address binding (no ports): it carries TCP sessions, so as long as TCP_TIMEOUT",
        },
    ],
    counters: &[
        ("translated_out", "outgoing packets translated (output 0)"),
        ("translated_in", "incoming packets translated (output 1)"),
        ("created", "dynamic mappings made"),
        ("expired", "dynamic mappings removed after their idle timeout"),
        ("no_mapping", "packets with no mapping where none may be made, dropped"),
        ("table_full", "new flows refused: CAPACITY mappings live, dropped"),
        ("pool_exhausted", "new flows refused: no free address or port, dropped"),
        ("truncated", "packets shorter than their IPv6 header, payload length or transport header, dropped"),
        ("bad_version", "packets whose version is not 6, dropped"),
        ("bad_protocol", "packets whose next header is not TCP, UDP or ICMPv6, dropped"),
        ("mappings", "live dynamic mappings (first worker)"),
    ],
    example: "InfiniteSource(DATA \\<60 00 00 00 00 08 11 40 20 01 0d b8 00 00 00 00 \
        00 00 00 00 00 00 00 01 20 01 0d b8 00 01 00 00 00 00 00 00 00 00 00 02 \
        9c 40 00 35 00 08 07 f3>, LIMIT 1)\n\
        -> at :: AddressTranslator(0, 1, 1, 0, 2001:db8:ff::1 6000 6010) -> Discard;\n\
        Idle -> [1]at[1] -> Discard;",
    see_also: &["ProtocolTranslator64", "ProtocolTranslator46", "IPRewriter"],
};

/// Dynamic mappings at most, by default (Click's table is unbounded).
const DEFAULT_CAPACITY: usize = 65_536;
/// Most address-and-port pairs an old-form pool may hold.
const MAX_POOL: usize = 1 << 20;
/// Expired mappings a batch reaps at most (the timer reaps the rest).
const REAP_PER_BATCH: usize = 64;
/// How often the first worker's timer reaps every expired mapping.
const REAP_INTERVAL: Duration = Duration::from_secs(10);

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMPV6: u8 = 58;

/// The mapping fields, in Click's order: inner address and port, mapped
/// address and port, external address and port.
const IAI: usize = 0;
const IPI: usize = 1;
const MAI: usize = 2;
const MPI: usize = 3;
const EA: usize = 4;
const EP: usize = 5;
const FIELD_NAMES: [&str; 6] = ["IADDR", "IPORT", "MADDR", "MPORT", "EADDR", "EPORT"];

/// Which of the six fields a lookup compares (Click's lookup fields).
type Mask = [bool; 6];

/// The six fields of a flow or mapping.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Fields {
    iai: u128,
    ipi: u16,
    mai: u128,
    mpi: u16,
    ea: u128,
    ep: u16,
}

/// A hash key: the fields a mask keeps (the others zero) and, for
/// address-and-port mapping, the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    addrs: [u128; 3],
    ports: [u16; 3],
    proto: u8,
}

impl Key {
    fn of(mask: &Mask, proto: u8, f: &Fields) -> Key {
        let a = |i: usize, v: u128| if mask[i] { v } else { 0 };
        let p = |i: usize, v: u16| if mask[i] { v } else { 0 };
        Key {
            addrs: [a(IAI, f.iai), a(MAI, f.mai), a(EA, f.ea)],
            ports: [p(IPI, f.ipi), p(MPI, f.mpi), p(EP, f.ep)],
            proto,
        }
    }
}

/// Which packets may make a dynamic mapping (Click's
/// AddressAllocationDirection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Packets going out, on input 0 (`0`).
    Outward,
    /// Packets coming in, on input 1 (`1`).
    Inward,
}

/// A static mapping: inner address (and port) to mapped address (and
/// port).
#[derive(Debug, Clone, Copy)]
struct StaticMap {
    iai: u128,
    ipi: u16,
    mai: u128,
    mpi: u16,
}

/// The static mappings and their two indexes (first one listed wins, as
/// in Click's table order).
#[derive(Debug, Default)]
struct Statics {
    ports: bool,
    list: Vec<StaticMap>,
    out: HashMap<(u128, u16), u32>,
    inw: HashMap<(u128, u16), u32>,
}

impl Statics {
    fn new(ports: bool, list: Vec<StaticMap>) -> Statics {
        let mut s = Statics {
            ports,
            ..Statics::default()
        };
        for (i, m) in list.iter().enumerate() {
            let (ip, mp) = if ports { (m.ipi, m.mpi) } else { (0, 0) };
            s.out.entry((m.iai, ip)).or_insert(i as u32);
            s.inw.entry((m.mai, mp)).or_insert(i as u32);
        }
        s.list = list;
        s
    }
}

/// The idle timeout a mapping is under; each class has its own list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    TcpTransitory = 0,
    TcpEstablished = 1,
    Udp = 2,
    Icmp = 3,
    Binding = 4,
}

const CLASSES: usize = 5;

impl Class {
    fn name(self) -> &'static str {
        match self {
            Class::TcpTransitory => "transitory",
            Class::TcpEstablished => "established",
            Class::Udp | Class::Icmp => "active",
            Class::Binding => "bound",
        }
    }
}

const NIL: u32 = u32::MAX;

/// A live dynamic mapping.
#[derive(Debug, Clone, Copy)]
struct Binding {
    f: Fields,
    proto: u8,
    class: Class,
    /// The input of the packet that made it.
    made_by: Direction,
    last_ns: u64,
    out_key: Key,
    in_key: Key,
}

/// One pool entry: its address and port, its mapping when in use, and
/// its place in its class's list.
#[derive(Debug, Clone, Copy)]
struct Slot {
    addr: u128,
    port: u16,
    b: Option<Binding>,
    prev: u32,
    next: u32,
}

/// A list of slots, least recently used first.
#[derive(Debug, Clone, Copy)]
struct List {
    head: u32,
    tail: u32,
}

/// The dynamic mappings: a pool of addresses (or address-and-port
/// pairs), the mappings made from it, and their indexes.
#[derive(Debug)]
struct Dynamic {
    dir: Direction,
    /// Ports are rewritten (address-and-port mapping, and the old form).
    ports: bool,
    /// The protocol is part of the keys (address-and-port mapping).
    proto_key: bool,
    out_mask: Mask,
    in_mask: Mask,
    slots: Vec<Slot>,
    free: VecDeque<u32>,
    out_map: HashMap<Key, u32>,
    in_map: HashMap<Key, u32>,
    lists: [List; CLASSES],
    timeouts_ns: [u64; CLASSES],
    live: usize,
    capacity: usize,
}

/// Why a new mapping was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    /// CAPACITY mappings are live.
    Full,
    /// No free address or port.
    Exhausted,
}

impl Dynamic {
    fn new(
        dir: Direction,
        ports: bool,
        proto_key: bool,
        masks: (Mask, Mask),
        pool: Vec<(u128, u16)>,
        capacity: usize,
        timeouts_ns: [u64; CLASSES],
    ) -> Dynamic {
        let n = pool.len();
        let room = n.min(capacity);
        Dynamic {
            dir,
            ports,
            proto_key,
            out_mask: masks.0,
            in_mask: masks.1,
            slots: pool
                .into_iter()
                .map(|(addr, port)| Slot {
                    addr,
                    port,
                    b: None,
                    prev: NIL,
                    next: NIL,
                })
                .collect(),
            free: (0..n as u32).collect(),
            out_map: HashMap::with_capacity(room),
            in_map: HashMap::with_capacity(room),
            lists: [List {
                head: NIL,
                tail: NIL,
            }; CLASSES],
            timeouts_ns,
            live: 0,
            capacity,
        }
    }

    fn unlink(&mut self, i: u32) {
        let Some(b) = self.slots[i as usize].b else {
            return;
        };
        let (prev, next) = (self.slots[i as usize].prev, self.slots[i as usize].next);
        let l = &mut self.lists[b.class as usize];
        match prev {
            NIL => l.head = next,
            p => self.slots[p as usize].next = next,
        }
        let l = &mut self.lists[b.class as usize];
        match next {
            NIL => l.tail = prev,
            n => self.slots[n as usize].prev = prev,
        }
    }

    fn link_tail(&mut self, i: u32, class: Class) {
        let tail = self.lists[class as usize].tail;
        self.slots[i as usize].prev = tail;
        self.slots[i as usize].next = NIL;
        match tail {
            NIL => self.lists[class as usize].head = i,
            t => self.slots[t as usize].next = i,
        }
        self.lists[class as usize].tail = i;
    }

    /// Marks mapping `i` used now, in `class`.
    fn touch(&mut self, i: u32, class: Class, now_ns: u64) {
        self.unlink(i);
        if let Some(b) = self.slots[i as usize].b.as_mut() {
            b.class = class;
            b.last_ns = now_ns;
        }
        self.link_tail(i, class);
    }

    fn expired(&self, b: &Binding, now_ns: u64) -> bool {
        now_ns.saturating_sub(b.last_ns) >= self.timeouts_ns[b.class as usize]
    }

    fn remove(&mut self, i: u32) {
        let Some(b) = self.slots[i as usize].b else {
            return;
        };
        self.unlink(i);
        if self.out_map.get(&b.out_key) == Some(&i) {
            self.out_map.remove(&b.out_key);
        }
        if self.in_map.get(&b.in_key) == Some(&i) {
            self.in_map.remove(&b.in_key);
        }
        self.slots[i as usize].b = None;
        self.free.push_back(i);
        self.live -= 1;
    }

    /// Removes up to `max` expired mappings from the lists' heads;
    /// returns how many.
    fn reap(&mut self, now_ns: u64, max: usize) -> usize {
        let mut n = 0;
        for c in 0..CLASSES {
            while n < max {
                let h = self.lists[c].head;
                if h == NIL {
                    break;
                }
                match self.slots[h as usize].b {
                    Some(b) if self.expired(&b, now_ns) => {
                        self.remove(h);
                        n += 1;
                    }
                    _ => break,
                }
            }
        }
        n
    }

    /// The live mapping `key` finds in `map`, removing it when it has
    /// expired; `expired` counts those.
    fn find(&mut self, inward: bool, key: &Key, now_ns: u64, expired: &mut u64) -> Option<u32> {
        let map = if inward { &self.in_map } else { &self.out_map };
        let i = *map.get(key)?;
        let b = self.slots[i as usize].b?;
        if self.expired(&b, now_ns) {
            self.remove(i);
            *expired += 1;
            return None;
        }
        Some(i)
    }

    /// Makes a mapping for the flow `f` (the packet's own fields set)
    /// from a free pool entry.
    fn create(
        &mut self,
        proto: u8,
        class: Class,
        mut f: Fields,
        now_ns: u64,
        expired: &mut u64,
    ) -> Result<u32, Refused> {
        if self.live >= self.capacity {
            *expired += self.reap(now_ns, REAP_PER_BATCH) as u64;
            if self.live >= self.capacity {
                return Err(Refused::Full);
            }
        }
        if self.free.is_empty() {
            *expired += self.reap(now_ns, REAP_PER_BATCH) as u64;
        }
        let i = self.free.pop_front().ok_or(Refused::Exhausted)?;
        let s = self.slots[i as usize];
        match self.dir {
            Direction::Outward => {
                f.mai = s.addr;
                f.mpi = if self.ports { s.port } else { f.ipi };
            }
            Direction::Inward => {
                f.iai = s.addr;
                f.ipi = if self.ports { s.port } else { f.mpi };
            }
        }
        let kp = if self.proto_key { proto } else { 0 };
        let out_key = Key::of(&self.out_mask, kp, &f);
        let in_key = Key::of(&self.in_mask, kp, &f);
        self.slots[i as usize].b = Some(Binding {
            f,
            proto,
            class,
            made_by: self.dir,
            last_ns: now_ns,
            out_key,
            in_key,
        });
        self.link_tail(i, class);
        // An older mapping with the same key keeps it (Click's first
        // table entry wins).
        self.out_map.entry(out_key).or_insert(i);
        self.in_map.entry(in_key).or_insert(i);
        self.live += 1;
        Ok(i)
    }

    /// Whether packets going in `dir` carry every field `mask` compares:
    /// a packet going out has no mapped address or port yet, one coming
    /// in no inner one. Click compares them with unset values and finds
    /// nothing.
    fn can_look_up(mask: &Mask, dir: Direction) -> bool {
        match dir {
            Direction::Outward => !mask[MAI] && !mask[MPI],
            Direction::Inward => !mask[IAI] && !mask[IPI],
        }
    }
}

/// What every worker's instance shares.
#[derive(Debug)]
struct Shared {
    statics: Statics,
    dynamic: Option<Mutex<Dynamic>>,
}

fn lock(m: &Mutex<Dynamic>) -> MutexGuard<'_, Dynamic> {
    // A poisoned table is still consistent between packets.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The keyword arguments.
struct Options {
    capacity: usize,
    timeouts_ns: [u64; CLASSES],
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(AddressTranslator {
        sh: configure(args)?,
        first_worker: true,
        c: Counts::default(),
    }))
}

/// Reads the keywords, then the positional arguments.
fn configure(args: &mut Args<'_>) -> Result<Arc<Shared>, ArgError> {
    let capacity = args.read::<usize>("CAPACITY")?.unwrap_or(DEFAULT_CAPACITY);
    if capacity == 0 {
        return Err(ArgError::new("CAPACITY must be at least 1"));
    }
    let mut t = |k: &'static str, d: u64| -> Result<u64, ArgError> {
        let v = args.read::<Duration>(k)?;
        Ok(v.map_or(d * 1_000_000_000, |v| {
            v.as_nanos().min(u128::from(u64::MAX)) as u64
        }))
    };
    let tcp = t("TCP_TIMEOUT", 7440)?;
    let tcp_trans = t("TCP_TRANSITORY_TIMEOUT", 240)?;
    let udp = t("UDP_TIMEOUT", 300)?;
    let icmp = t("ICMP_TIMEOUT", 60)?;
    let binding = t("BINDING_TIMEOUT", 7440)?;
    let opts = Options {
        capacity,
        timeouts_ns: [tcp_trans, tcp, udp, icmp, binding],
    };
    let rest = args.rest();
    args.shared(|_| parse_config(&rest, &opts))
}

type Span = bricks_config::Span;

/// The positional arguments, Click's form or its older one.
fn parse_config(a: &[(&str, Span)], o: &Options) -> Result<Shared, ArgError> {
    let Some(&(first, first_span)) = a.first() else {
        return Err(ArgError::new(
            "missing arguments: expected NSTATIC, [STATIC_PORTS, STATICS...,] DYNAMIC, ...",
        ));
    };
    let n: usize = first.trim().parse().map_err(|_| {
        ArgError::at(
            first_span,
            format!(
                "NSTATIC: expected a count of static mappings, found `{}`",
                first.trim()
            ),
        )
    })?;
    // Args leaves unknown keywords among the positional arguments.
    for &(t, sp) in a {
        let word = t.split_whitespace().next().unwrap_or("");
        let keyword_like = word.len() > 1
            && word.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            && t.trim().len() > word.len();
        if keyword_like {
            return Err(
                ArgError::at(sp, format!("unknown keyword {word}")).with_help(
                    "keywords: CAPACITY, TCP_TIMEOUT, TCP_TRANSITORY_TIMEOUT, UDP_TIMEOUT, \
                 ICMP_TIMEOUT, BINDING_TIMEOUT",
                ),
            );
        }
    }
    let legacy = a
        .get(1)
        .is_some_and(|(t, _)| t.split_whitespace().count() == 6);
    if legacy {
        parse_legacy(a, n, o)
    } else {
        parse_modern(a, n, o)
    }
}

fn end_span(a: &[(&str, Span)]) -> Option<Span> {
    a.last().map(|&(_, s)| s)
}

fn missing(a: &[(&str, Span)], what: &str) -> ArgError {
    let e = ArgError::new(format!("missing argument {what}"));
    match end_span(a) {
        Some(s) => ArgError::at(s, format!("missing argument {what} after this one")),
        None => e,
    }
}

fn arg<'a>(a: &[(&'a str, Span)], i: usize, what: &str) -> Result<(&'a str, Span), ArgError> {
    a.get(i)
        .map(|&(t, s)| (t.trim(), s))
        .ok_or_else(|| missing(a, what))
}

fn boolean(text: &str, span: Span, what: &str) -> Result<bool, ArgError> {
    match text.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(ArgError::at(
            span,
            format!("{what}: expected a boolean (0 or 1), found `{text}`"),
        )),
    }
}

fn address(word: &str, span: Span, what: &str) -> Result<u128, ArgError> {
    word.parse::<Ipv6Addr>().map(u128::from).map_err(|_| {
        ArgError::at(
            span,
            format!("{what}: expected an IPv6 address, found `{word}`"),
        )
    })
}

fn port(word: &str, span: Span, what: &str) -> Result<u16, ArgError> {
    word.parse::<u16>().map_err(|_| {
        ArgError::at(
            span,
            format!("{what}: expected a port (0 to 65535), found `{word}`"),
        )
    })
}

fn mask(text: &str, span: Span, what: &str) -> Result<Mask, ArgError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut m = [false; 6];
    if words.len() != 6 {
        return Err(ArgError::at(
            span,
            format!(
                "{what}: expected six booleans (flags of IADDR IPORT MADDR MPORT EADDR EPORT), found `{text}`"
            ),
        ));
    }
    for (i, w) in words.iter().enumerate() {
        m[i] = boolean(w, span, what)?;
    }
    Ok(m)
}

/// `MADDR PORTLOW PORTHIGH`.
fn range(text: &str, span: Span) -> Result<(u128, u16, u16), ArgError> {
    let w: Vec<&str> = text.split_whitespace().collect();
    let [ma, lo, hi] = w.as_slice() else {
        return Err(ArgError::at(
            span,
            format!("expected `MADDR PORTLOW PORTHIGH`, found `{text}`"),
        ));
    };
    let ma = address(ma, span, "MADDR")?;
    let lo = port(lo, span, "PORTLOW")?;
    let hi = port(hi, span, "PORTHIGH")?;
    if lo > hi {
        return Err(ArgError::at(
            span,
            format!("port range {lo}-{hi}: PORTLOW is above PORTHIGH"),
        ));
    }
    Ok((ma, lo, hi))
}

fn direction(text: &str, span: Span) -> Result<Direction, ArgError> {
    Ok(if boolean(text, span, "DIRECTION")? {
        Direction::Inward
    } else {
        Direction::Outward
    })
}

fn too_many(a: &[(&str, Span)], at: usize, why: &str) -> Result<(), ArgError> {
    match a.get(at) {
        Some(&(_, s)) => Err(ArgError::at(s, format!("too many arguments: {why}"))),
        None => Ok(()),
    }
}

/// Click's form (`elements/ip6/addresstranslator.cc`, `configure`).
fn parse_modern(a: &[(&str, Span)], n: usize, o: &Options) -> Result<Shared, ArgError> {
    let mut statics = Vec::new();
    let mut static_ports = false;
    let s = if n == 0 {
        1
    } else {
        let (t, sp) = arg(a, 1, "STATIC_PORTS")?;
        static_ports = boolean(t, sp, "STATIC_PORTS")?;
        for i in 0..n {
            let (t, sp) = arg(a, 2 + i, &format!("STATIC{} (NSTATIC is {n})", i + 1))?;
            let w: Vec<&str> = t.split_whitespace().collect();
            let m = match (static_ports, w.as_slice()) {
                (false, [ia, ma]) => StaticMap {
                    iai: address(ia, sp, "IADDR")?,
                    ipi: 0,
                    mai: address(ma, sp, "MADDR")?,
                    mpi: 0,
                },
                (true, [ia, ip, ma, mp]) => StaticMap {
                    iai: address(ia, sp, "IADDR")?,
                    ipi: port(ip, sp, "IPORT")?,
                    mai: address(ma, sp, "MADDR")?,
                    mpi: port(mp, sp, "MPORT")?,
                },
                (false, _) => {
                    return Err(ArgError::at(
                        sp,
                        format!("static mapping {}: expected `IADDR MADDR` (STATIC_PORTS is 0), found `{t}`", i + 1),
                    ))
                }
                (true, _) => {
                    return Err(ArgError::at(
                        sp,
                        format!("static mapping {}: expected `IADDR IPORT MADDR MPORT` (STATIC_PORTS is 1), found `{t}`", i + 1),
                    ))
                }
            };
            statics.push(m);
        }
        n + 2
    };
    let statics = Statics::new(static_ports, statics);
    let (t, sp) = arg(a, s, "DYNAMIC")?;
    if !boolean(t, sp, "DYNAMIC")? {
        too_many(a, s + 1, "DYNAMIC is 0")?;
        return Ok(Shared {
            statics,
            dynamic: None,
        });
    }
    let (t, sp) = arg(a, s + 1, "DYNAMIC_PORTS")?;
    let ports = boolean(t, sp, "DYNAMIC_PORTS")?;
    let (t, sp) = arg(a, s + 2, "DIRECTION")?;
    let dir = direction(t, sp)?;
    let mut m_out = [false; 6];
    let mut m_in = [false; 6];
    let pool = if ports {
        let (t, sp) = arg(a, s + 3, "`MADDR PORTLOW PORTHIGH`")?;
        let (ma, lo, hi) = range(t, sp)?;
        too_many(
            a,
            s + 4,
            "one `MADDR PORTLOW PORTHIGH` with DYNAMIC_PORTS 1",
        )?;
        // Port 0 is Click's "no port": it is never given out.
        let pool: Vec<(u128, u16)> = (lo.max(1)..=hi).map(|p| (ma, p)).collect();
        if pool.is_empty() {
            return Err(ArgError::at(sp, "the port range holds no port but 0"));
        }
        for f in [IAI, IPI, EA, EP] {
            m_out[f] = true;
        }
        for f in [MAI, MPI, EA, EP] {
            m_in[f] = true;
        }
        pool
    } else {
        let mut pool = Vec::new();
        for &(t, sp) in &a[(s + 3).min(a.len())..] {
            pool.push((address(t.trim(), sp, "MADDR")?, 0));
        }
        if pool.is_empty() {
            return Err(missing(
                a,
                "MADDR (dynamic address mapping needs addresses)",
            ));
        }
        m_out[IAI] = true;
        m_in[MAI] = true;
        pool
    };
    Ok(Shared {
        statics,
        dynamic: Some(Mutex::new(Dynamic::new(
            dir,
            ports,
            ports,
            (m_out, m_in),
            pool,
            o.capacity,
            o.timeouts_ns,
        ))),
    })
}

/// The form of Click's configurations before 2002 (conf/gnat01.click,
/// gnat02.click; the `configure` of addresstranslator.cc before commit
/// ed25be1a6).
fn parse_legacy(a: &[(&str, Span)], n: usize, o: &Options) -> Result<Shared, ArgError> {
    let (t, sp) = arg(a, 1, "STATIC_FIELDS")?;
    let fields = mask(t, sp, "STATIC_FIELDS")?;
    let mut statics = Vec::new();
    if n > 0 {
        // Click matches on IADDR (and IPORT) and rewrites to MADDR (and
        // MPORT): any other choice matches every packet or none.
        if !fields[IAI] || !fields[MAI] || fields[IPI] != fields[MPI] {
            return Err(ArgError::at(
                sp,
                "STATIC_FIELDS: a static mapping needs IADDR and MADDR, and IPORT with MPORT \
                 (`1 0 1 0 0 0` or `1 1 1 1 0 0`; EADDR and EPORT are read and unused)",
            ));
        }
    }
    for i in 0..n {
        let (t, sp) = arg(a, 2 + i, &format!("STATIC{} (NSTATIC is {n})", i + 1))?;
        let w: Vec<&str> = t.split_whitespace().collect();
        let want = fields.iter().filter(|&&f| f).count();
        if w.len() != want {
            return Err(ArgError::at(
                sp,
                format!("static mapping {}: expected {want} words for the fields flagged in STATIC_FIELDS, found `{t}`", i + 1),
            ));
        }
        let mut m = StaticMap {
            iai: 0,
            ipi: 0,
            mai: 0,
            mpi: 0,
        };
        let mut w = w.into_iter();
        for (f, _) in fields.iter().enumerate().filter(|(_, &on)| on) {
            let word = w.next().unwrap_or_default();
            let name = FIELD_NAMES[f];
            match f {
                IAI => m.iai = address(word, sp, name)?,
                IPI => m.ipi = port(word, sp, name)?,
                MAI => m.mai = address(word, sp, name)?,
                MPI => m.mpi = port(word, sp, name)?,
                EA => {
                    address(word, sp, name)?;
                }
                _ => {
                    port(word, sp, name)?;
                }
            }
        }
        statics.push(m);
    }
    let s = if n == 0 { 1 } else { n + 2 };
    let (t, sp) = arg(a, s, "OUTWARD_FIELDS")?;
    let m_out = mask(t, sp, "OUTWARD_FIELDS")?;
    let (t, sp) = arg(a, s + 1, "INWARD_FIELDS")?;
    let m_in = mask(t, sp, "INWARD_FIELDS")?;
    let (t, sp) = arg(a, s + 2, "DIRECTION")?;
    // Click reads the first word.
    let dir = direction(t.split_whitespace().next().unwrap_or(""), sp)?;
    let mut pool = Vec::new();
    for &(t, sp) in &a[(s + 3).min(a.len())..] {
        let (ma, lo, hi) = range(t, sp)?;
        if pool.len() + usize::from(hi - lo) + 1 > MAX_POOL {
            return Err(ArgError::at(
                sp,
                format!("the pools hold more than {MAX_POOL} address-and-port pairs"),
            ));
        }
        pool.extend((lo..=hi).map(|p| (ma, p)));
    }
    if pool.is_empty() {
        return Err(missing(a, "`MADDR PORTLOW PORTHIGH` (a pool)"));
    }
    Ok(Shared {
        statics: Statics::new(fields[IPI], statics),
        dynamic: Some(Mutex::new(Dynamic::new(
            dir,
            true,
            false,
            (m_out, m_in),
            pool,
            o.capacity,
            o.timeouts_ns,
        ))),
    })
}

#[derive(Debug, Default)]
struct Counts {
    translated_out: u64,
    translated_in: u64,
    created: u64,
    expired: u64,
    no_mapping: u64,
    table_full: u64,
    pool_exhausted: u64,
    truncated: u64,
    bad_version: u64,
    bad_protocol: u64,
}

/// One worker's instance.
#[derive(Debug)]
pub struct AddressTranslator {
    sh: Arc<Shared>,
    first_worker: bool,
    c: Counts,
}

/// Where a packet's transport checksum is, and what else it says.
struct Transport {
    proto: u8,
    /// Offset of the checksum in the transport header.
    ck_at: usize,
    /// Whether the flow has ports (TCP, UDP, an ICMPv6 echo's
    /// identifier) and where the source and destination ones are; an
    /// echo's identifier is both.
    ports: Option<(usize, usize)>,
    fin_rst: bool,
}

/// The new checksum after the covered bytes summing to `old` become
/// bytes summing to `new` (RFC 1624 eqn. 3, for any number of words).
#[inline(always)]
fn adjust(ck: u16, old: u16, new: u16) -> u16 {
    !checksum::combine(&[!ck, !old, new])
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

impl AddressTranslator {
    /// Translates one packet arriving on input `inward as usize`; the
    /// output, or `None` to drop it.
    fn process(
        c: &mut Counts,
        statics: &Statics,
        dynamic: Option<&mut Dynamic>,
        inward: bool,
        p: &mut Packet,
        now_ns: u64,
    ) -> Option<usize> {
        let ip = p.l3_bytes_mut();
        if ip.len() < 40 {
            c.truncated += 1;
            return None;
        }
        if ip[0] >> 4 != 6 {
            c.bad_version += 1;
            return None;
        }
        let plen = usize::from(be16(ip, 4));
        if ip.len() < 40 + plen {
            c.truncated += 1;
            return None;
        }
        let (head, rest) = ip.split_at_mut(40);
        let l4 = &mut rest[..plen];
        let t = match head[6] {
            TCP if l4.len() >= 20 => Transport {
                proto: TCP,
                ck_at: 16,
                ports: Some((0, 2)),
                fin_rst: l4[13] & 0x05 != 0,
            },
            UDP if l4.len() >= 8 => Transport {
                proto: UDP,
                ck_at: 6,
                ports: Some((0, 2)),
                fin_rst: false,
            },
            ICMPV6 if l4.len() >= 8 => Transport {
                proto: ICMPV6,
                ck_at: 2,
                ports: matches!(l4[0], 128 | 129).then_some((4, 4)),
                fin_rst: false,
            },
            TCP | UDP | ICMPV6 => {
                c.truncated += 1;
                return None;
            }
            _ => {
                c.bad_protocol += 1;
                return None;
            }
        };
        let src = u128::from_be_bytes(addr_at(head, 8));
        let dst = u128::from_be_bytes(addr_at(head, 24));
        let (mut sport, mut dport) = t.ports.map_or((0, 0), |(s, d)| (be16(l4, s), be16(l4, d)));
        // An echo's identifier is its inner end's port; the peer has none.
        if t.proto == ICMPV6 {
            if inward {
                sport = 0;
            } else {
                dport = 0;
            }
        }
        let pt = if inward { dport } else { sport };
        let (new_addr, new_port) = Self::map(
            c,
            statics,
            dynamic,
            inward,
            &t,
            (src, sport),
            (dst, dport),
            now_ns,
        )?;
        // Rewrite, keeping the checksum right.
        let at = if inward { 24 } else { 8 };
        let mut old_sum = checksum::data(&head[at..at + 16]);
        head[at..at + 16].copy_from_slice(&new_addr.to_be_bytes());
        let mut new_sum = checksum::data(&head[at..at + 16]);
        if let (Some((s, d)), Some(np)) = (t.ports, new_port) {
            let off = if inward { d } else { s };
            old_sum = checksum::combine(&[old_sum, pt]);
            new_sum = checksum::combine(&[new_sum, np]);
            l4[off..off + 2].copy_from_slice(&np.to_be_bytes());
        }
        let ck = be16(l4, t.ck_at);
        let new_ck = if t.proto == UDP && ck == 0 {
            // No checksum is not allowed over IPv6 (RFC 8200 section 8.1):
            // give it one.
            let src = Ipv6Addr::from(addr_at(head, 8));
            let dst = Ipv6Addr::from(addr_at(head, 24));
            let sum = checksum::combine(&[
                checksum::pseudo_header_v6(src, dst, bricks_wire::ip::IpProtocol(UDP), plen as u32),
                checksum::data(l4),
            ]);
            !sum
        } else {
            adjust(ck, old_sum, new_sum)
        };
        let new_ck = if t.proto == UDP && new_ck == 0 {
            0xffff
        } else {
            new_ck
        };
        l4[t.ck_at..t.ck_at + 2].copy_from_slice(&new_ck.to_be_bytes());
        if inward {
            c.translated_in += 1;
            Some(1)
        } else {
            c.translated_out += 1;
            Some(0)
        }
    }

    /// The address (and port, when it changes) the packet's own end of
    /// the mapping becomes: its source going out, its destination coming
    /// in. Static mappings first, then dynamic ones, then a new one if
    /// the packet came from the allocating side.
    #[allow(clippy::too_many_arguments)]
    fn map(
        c: &mut Counts,
        statics: &Statics,
        dynamic: Option<&mut Dynamic>,
        inward: bool,
        t: &Transport,
        (src, sport): (u128, u16),
        (dst, dport): (u128, u16),
        now_ns: u64,
    ) -> Option<(u128, Option<u16>)> {
        // An ICMPv6 message has no port a static port mapping could match.
        if !statics.list.is_empty() && (!statics.ports || t.proto != ICMPV6) {
            let sp = statics.ports;
            let (index, key) = if inward {
                (&statics.inw, (dst, if sp { dport } else { 0 }))
            } else {
                (&statics.out, (src, if sp { sport } else { 0 }))
            };
            if let Some(&i) = index.get(&key) {
                let m = statics.list[i as usize];
                return Some(if inward {
                    (m.iai, sp.then_some(m.ipi))
                } else {
                    (m.mai, sp.then_some(m.mpi))
                });
            }
        }
        let Some(d) = dynamic else {
            c.no_mapping += 1;
            return None;
        };
        // Address-and-port mapping needs ports: an ICMPv6 error has none.
        if d.ports && t.ports.is_none() {
            c.no_mapping += 1;
            return None;
        }
        let dir = if inward {
            Direction::Inward
        } else {
            Direction::Outward
        };
        let f = if inward {
            Fields {
                mai: dst,
                mpi: dport,
                ea: src,
                ep: sport,
                ..Fields::default()
            }
        } else {
            Fields {
                iai: src,
                ipi: sport,
                ea: dst,
                ep: dport,
                ..Fields::default()
            }
        };
        let mask = if inward { d.in_mask } else { d.out_mask };
        let kp = if d.proto_key { t.proto } else { 0 };
        let found = if Dynamic::can_look_up(&mask, dir) {
            d.find(inward, &Key::of(&mask, kp, &f), now_ns, &mut c.expired)
        } else {
            None
        };
        let i = match found {
            Some(i) => {
                let b = d.slots[i as usize].b?;
                let tcp = matches!(b.class, Class::TcpTransitory | Class::TcpEstablished);
                let class = if tcp && t.proto == TCP {
                    // RFC 5382 REQ-5: established once the other side
                    // answers, transitory again once it closes.
                    if t.fin_rst {
                        Class::TcpTransitory
                    } else if dir != b.made_by {
                        Class::TcpEstablished
                    } else {
                        b.class
                    }
                } else {
                    b.class
                };
                d.touch(i, class, now_ns);
                i
            }
            None if dir == d.dir => {
                let class = match (d.ports, t.proto) {
                    (false, _) => Class::Binding,
                    (true, TCP) => Class::TcpTransitory,
                    (true, UDP) => Class::Udp,
                    (true, _) => Class::Icmp,
                };
                match d.create(t.proto, class, f, now_ns, &mut c.expired) {
                    Ok(i) => {
                        c.created += 1;
                        i
                    }
                    Err(Refused::Full) => {
                        c.table_full += 1;
                        return None;
                    }
                    Err(Refused::Exhausted) => {
                        c.pool_exhausted += 1;
                        return None;
                    }
                }
            }
            None => {
                c.no_mapping += 1;
                return None;
            }
        };
        let b = d.slots[i as usize].b?;
        Some(if inward {
            (b.f.iai, d.ports.then_some(b.f.ipi))
        } else {
            (b.f.mai, d.ports.then_some(b.f.mpi))
        })
    }

    /// The `mappings` handler: static mappings, then live dynamic ones.
    fn mappings(&self) -> String {
        let mut s = String::new();
        let a = Addr6;
        let st = &self.sh.statics;
        for m in &st.list {
            if st.ports {
                let _ = writeln!(
                    s,
                    "static {} {} <=> {} {}",
                    a(m.iai),
                    m.ipi,
                    a(m.mai),
                    m.mpi
                );
            } else {
                let _ = writeln!(s, "static {} <=> {}", a(m.iai), a(m.mai));
            }
        }
        if let Some(d) = &self.sh.dynamic {
            let d = lock(d);
            for c in 0..CLASSES {
                let mut i = d.lists[c].head;
                while i != NIL {
                    let slot = &d.slots[i as usize];
                    if let Some(b) = slot.b {
                        let f = &b.f;
                        let proto = match b.proto {
                            TCP => "tcp",
                            UDP => "udp",
                            _ => "icmp6",
                        };
                        if d.ports {
                            let _ = writeln!(
                                s,
                                "{proto} {} {} <=> {} {} with {} {} {}",
                                a(f.iai),
                                f.ipi,
                                a(f.mai),
                                f.mpi,
                                a(f.ea),
                                f.ep,
                                b.class.name()
                            );
                        } else {
                            let _ = writeln!(
                                s,
                                "dynamic {} <=> {} {}",
                                a(f.iai),
                                a(f.mai),
                                b.class.name()
                            );
                        }
                    }
                    i = slot.next;
                }
            }
        }
        s
    }
}

/// An address as Click prints it: an IPv4-compatible one (`::1.0.0.1`,
/// NAT-PT's usual mapped addresses) with its IPv4 part dotted, which
/// Rust's `Ipv6Addr` no longer does.
struct Addr6(u128);

impl std::fmt::Display for Addr6 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 >> 32 == 0 && self.0 > 0xffff {
            write!(f, "::{}", std::net::Ipv4Addr::from(self.0 as u32))
        } else {
            write!(f, "{}", Ipv6Addr::from(self.0))
        }
    }
}

const HANDLERS: &[Handler] = &[Handler::r("mappings")];

impl Element for AddressTranslator {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.first_worker = cx.worker() == 0;
        if self.first_worker && self.sh.dynamic.is_some() {
            cx.schedule_at(Timestamp(
                cx.now().0.saturating_add(REAP_INTERVAL.as_nanos() as u64),
            ));
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        if let Some(d) = &self.sh.dynamic {
            self.c.expired += lock(d).reap(cx.now().0, usize::MAX) as u64;
            cx.schedule_at(Timestamp(
                cx.now().0.saturating_add(REAP_INTERVAL.as_nanos() as u64),
            ));
        }
    }

    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now_ns = cx.now().0;
        let sh = Arc::clone(&self.sh);
        let c = &mut self.c;
        let inward = port == 1;
        // Every packet's output with the shared tables locked; they are
        // unlocked before the batch goes on, so that other workers do
        // not wait for the elements behind this one.
        let mut outs = PerPacket::<u16>::new();
        {
            let mut d = sh.dynamic.as_ref().map(lock);
            if let Some(d) = d.as_mut() {
                c.expired += d.reap(now_ns, REAP_PER_BATCH) as u64;
            }
            outs.gather_mut(batch, |p| {
                Self::process(c, &sh.statics, d.as_deref_mut(), inward, p, now_ns)
                    .map_or(u16::MAX, |o| o as u16)
            });
        }
        cx.push_by_outputs(batch, &outs);
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("translated_out", c.translated_out);
        s.counter("translated_in", c.translated_in);
        s.counter("created", c.created);
        s.counter("expired", c.expired);
        s.counter("no_mapping", c.no_mapping);
        s.counter("table_full", c.table_full);
        s.counter("pool_exhausted", c.pool_exhausted);
        s.counter("truncated", c.truncated);
        s.counter("bad_version", c.bad_version);
        s.counter("bad_protocol", c.bad_protocol);
        if self.first_worker {
            let live = self.sh.dynamic.as_ref().map_or(0, |d| lock(d).live);
            s.counter("mappings", live as u64);
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "mappings").then(|| self.mappings())
    }

    fn handlers(&self) -> &'static [Handler] {
        HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{parse_args, Harness};
    use bricks_wire::icmpv6::Icmpv6Packet;
    use bricks_wire::tcp::TcpPacket;
    use bricks_wire::udp::UdpPacket;

    fn a6(s: &str) -> [u8; 16] {
        s.parse::<Ipv6Addr>().unwrap().octets()
    }

    /// The transport checksum of IPv6 packet `p`, summed from scratch
    /// (RFC 1071 over the RFC 8200 section 8.1 pseudo-header), apart
    /// from the code under test: 0 when right.
    fn residue(p: &[u8]) -> u16 {
        let plen = usize::from(u16::from_be_bytes([p[4], p[5]]));
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&p[8..40]);
        bytes.extend_from_slice(&(plen as u32).to_be_bytes());
        bytes.extend_from_slice(&[0, 0, 0, p[6]]);
        bytes.extend_from_slice(&p[40..40 + plen]);
        if bytes.len() % 2 == 1 {
            bytes.push(0);
        }
        let mut sum: u32 = 0;
        for w in bytes.chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// Checks `p`'s transport checksum both by [`residue`] and by the
    /// wire crate.
    fn checksum_ok(p: &[u8]) -> bool {
        let src = Ipv6Addr::from(addr_at(p, 8));
        let dst = Ipv6Addr::from(addr_at(p, 24));
        let l4 = &p[40..];
        let wire = match p[6] {
            TCP => TcpPacket::new_checked(l4).is_ok_and(|t| t.verify_checksum_v6(src, dst)),
            UDP => UdpPacket::new_checked(l4).is_ok_and(|u| u.verify_checksum_v6(src, dst)),
            _ => Icmpv6Packet::new_checked(l4).is_ok_and(|i| i.verify_checksum(src, dst)),
        };
        wire && residue(p) == 0
    }

    /// An IPv6 packet of `proto` from `src`:`sport` to `dst`:`dport` with
    /// `payload`, its checksum filled in by [`residue`]. For ICMPv6 the
    /// ports are an echo request's identifier and sequence number.
    fn pkt(proto: u8, src: &str, sport: u16, dst: &str, dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut l4 = match proto {
            TCP => {
                let mut t = vec![0u8; 20];
                t[0..2].copy_from_slice(&sport.to_be_bytes());
                t[2..4].copy_from_slice(&dport.to_be_bytes());
                t[4..8].copy_from_slice(&0x1234_5678u32.to_be_bytes());
                t[12] = 5 << 4;
                t[13] = 0x02; // SYN
                t[14..16].copy_from_slice(&65535u16.to_be_bytes());
                t
            }
            UDP => {
                let mut u = vec![0u8; 8];
                u[0..2].copy_from_slice(&sport.to_be_bytes());
                u[2..4].copy_from_slice(&dport.to_be_bytes());
                u[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
                u
            }
            _ => {
                let mut i = vec![128, 0, 0, 0];
                i.extend_from_slice(&sport.to_be_bytes());
                i.extend_from_slice(&dport.to_be_bytes());
                i
            }
        };
        l4.extend_from_slice(payload);
        let mut p = vec![0x60, 0, 0, 0];
        p.extend_from_slice(&(l4.len() as u16).to_be_bytes());
        p.push(proto);
        p.push(64);
        p.extend_from_slice(&a6(src));
        p.extend_from_slice(&a6(dst));
        p.extend_from_slice(&l4);
        let at = 40
            + match proto {
                TCP => 16,
                UDP => 6,
                _ => 2,
            };
        let ck = residue(&p);
        p[at..at + 2].copy_from_slice(&ck.to_be_bytes());
        assert!(checksum_ok(&p));
        p
    }

    fn udp(src: &str, sport: u16, dst: &str, dport: u16) -> Vec<u8> {
        pkt(UDP, src, sport, dst, dport, b"hello")
    }

    fn src_of(p: &[u8]) -> (Ipv6Addr, u16) {
        (Ipv6Addr::from(addr_at(p, 8)), be16(p, 40))
    }

    fn dst_of(p: &[u8]) -> (Ipv6Addr, u16) {
        (Ipv6Addr::from(addr_at(p, 24)), be16(p, 42))
    }

    fn ip(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn at(args: &str) -> Harness {
        Harness::push(&CLASS, args, 2, 2)
    }

    /// Pushes `p` into `port` and returns what left by the same-numbered
    /// output, if anything.
    fn through(h: &mut Harness, port: usize, p: &[u8]) -> Option<Vec<u8>> {
        h.push_bytes(port, p);
        assert!(h.take(1 - port).is_empty(), "nothing crosses over");
        let mut out = h.take_bytes(port);
        assert!(out.len() <= 1);
        out.pop()
            .inspect(|o| assert!(checksum_ok(o), "checksum after translation"))
    }

    fn stat(h: &Harness, name: &str) -> u64 {
        h.stats()
            .get(name)
            .unwrap_or_else(|| panic!("no counter {name}"))
    }

    fn secs(h: &Harness, s: u64) -> Timestamp {
        Timestamp(h.now().0 + s * 1_000_000_000)
    }

    /// The configuration of `args` (as a configuration file gives them).
    fn config(args: &str) -> Result<Arc<Shared>, String> {
        let v = parse_args(args)?;
        let mut a = Args::from_strs(&v);
        let sh = configure(&mut a).map_err(|e| e.to_string())?;
        a.complete().map_err(|e| e.to_string())?;
        Ok(sh)
    }

    fn dynamic(sh: &Shared) -> MutexGuard<'_, Dynamic> {
        lock(sh.dynamic.as_ref().expect("dynamic mappings"))
    }

    fn u(s: &str) -> u128 {
        u128::from(ip(s))
    }

    const OUT_PORTS: Mask = [true, true, false, false, true, true];
    const IN_PORTS: Mask = [false, false, true, true, true, true];

    // The argument lists of Click's conf/ip64-nat*.click and
    // gnat0*.click, as written there (comments included), with what
    // Click's code makes of them.

    #[test]
    fn ip64_nat_forms() {
        // ip64-nat.click, in use: dynamic address mapping, one address.
        let sh = config("\n\t0,\n\t1,\n\t0,\n\t0,\n\t::1.0.0.1").unwrap();
        assert!(sh.statics.list.is_empty());
        let d = dynamic(&sh);
        assert_eq!(
            (d.dir, d.ports, d.proto_key),
            (Direction::Outward, false, false)
        );
        assert_eq!(d.out_mask, [true, false, false, false, false, false]);
        assert_eq!(d.in_mask, [false, false, true, false, false, false]);
        let pool: Vec<_> = d.slots.iter().map(|s| s.addr).collect();
        assert_eq!(pool, [u("::1.0.0.1")]);
        drop(d);

        // ip64-nat.click, first commented-out form: a static address
        // mapping and dynamic address-and-port mapping.
        let sh = config(
            "\n//\t1,\n//\t0,\n//\t::ffff:0.0.0.2 ::1.0.0.1,\n//\t1,\n//\t1,\n//\t0,\n//\t::ffff:18.26.4.116 1300 1310);\n\
             \t1,\n\t0,\n\t::ffff:0.0.0.2 ::1.0.0.1,\n\t1,\n\t1,\n\t0,\n\t::ffff:18.26.4.116 1300 1310",
        )
        .unwrap();
        assert!(!sh.statics.ports);
        assert_eq!(sh.statics.list.len(), 1);
        let m = sh.statics.list[0];
        assert_eq!((m.iai, m.mai), (u("::ffff:0.0.0.2"), u("::1.0.0.1")));
        let d = dynamic(&sh);
        assert_eq!(
            (d.dir, d.ports, d.proto_key),
            (Direction::Outward, true, true)
        );
        assert_eq!((d.out_mask, d.in_mask), (OUT_PORTS, IN_PORTS));
        let pool: Vec<_> = d.slots.iter().map(|s| (s.addr, s.port)).collect();
        let want: Vec<_> = (1300..=1310)
            .map(|p| (u("::ffff:18.26.4.116"), p))
            .collect();
        assert_eq!(pool, want);
        drop(d);

        // ip64-nat.click, second commented-out form: static only.
        let sh = config("1,\n\t0,\n\t::ffff:0.0.0.2 ::1.0.0.1,\n\t0").unwrap();
        assert_eq!(sh.statics.list.len(), 1);
        assert!(sh.dynamic.is_none());

        // ip64-nat2.click (and 3): dynamic address-and-port mapping; the
        // commented-out form is the one above with other addresses.
        for (text, maddr) in [
            ("0,\n\t1, \n\t1,\n\t0,\n\t::1.0.0.1 6000 6010", "::1.0.0.1"),
            (
                "0,\n\t1, \n\t1,\n\t0,\n\t::18.26.4.17 6000 6010",
                "::18.26.4.17",
            ),
        ] {
            let sh = config(text).unwrap();
            let d = dynamic(&sh);
            assert_eq!((d.dir, d.ports), (Direction::Outward, true));
            assert_eq!(d.slots.len(), 11);
            assert_eq!((d.slots[0].addr, d.slots[0].port), (u(maddr), 6000));
        }
        let sh = config(
            "1,\n\t0,\n\t::ffff:0.0.0.3 ::1.0.0.2,\n\t1, \n\t1,\n\t0,\n\t::1.0.0.1 6000 6010",
        )
        .unwrap();
        assert_eq!(sh.statics.list[0].iai, u("::ffff:0.0.0.3"));
        assert_eq!(dynamic(&sh).slots.len(), 11);

        // ip64-nat4.click: one static address mapping.
        let sh = config("\n\t1,\n\t0,\n\t3ffe:1ce1:2::1 ::18.26.4.17,\n\t0").unwrap();
        let m = sh.statics.list[0];
        assert_eq!((m.iai, m.mai), (u("3ffe:1ce1:2::1"), u("::18.26.4.17")));
        assert!(sh.dynamic.is_none());
    }

    #[test]
    fn gnat_forms() {
        // gnat01.click, as written: the old form, no static mapping, so
        // `1 1 0 0 0 0` is the outgoing lookup fields too.
        let sh = config(
            "0,\n\t\t\t\t1 1 0 0 0 0, \n\t\t\t\t//0 0 1 1 0 0,\n\t\t\t\t0 0 1 1 0 0,\n\
             \t\t\t\t//1 1 0 0 0 0,\n\t\t\t\t0,\n\t\t\t\t::ffff:18.26.4.125 1300 1310",
        )
        .unwrap();
        assert!(sh.statics.list.is_empty());
        let d = dynamic(&sh);
        assert_eq!(
            (d.dir, d.ports, d.proto_key),
            (Direction::Outward, true, false)
        );
        assert_eq!(d.out_mask, [true, true, false, false, false, false]);
        assert_eq!(d.in_mask, [false, false, true, true, false, false]);
        let pool: Vec<_> = d.slots.iter().map(|s| (s.addr, s.port)).collect();
        let want: Vec<_> = (1300..=1310)
            .map(|p| (u("::ffff:18.26.4.125"), p))
            .collect();
        assert_eq!(pool, want);
        drop(d);

        // gnat02.click, as written: one static address mapping first.
        let sh = config(
            "1,\n\t\t\t\t//1,\n\t\t\t\t1 0 1 0 0 0,\n\t\t\t\t::ffff:18.26.4.125 3ffe::1,\n\
             \t\t\t\t1 1 0 0 0 0, \n\t\t\t\t//0 0 1 1 0 0,\n\t\t\t\t0 0 1 1 0 0,\n\
             \t\t\t\t//1 1 0 0 0 0,\n\t\t\t\t0,\n\t\t\t\t::ffff:18.26.4.1 1300 1310",
        )
        .unwrap();
        assert!(!sh.statics.ports);
        let m = sh.statics.list[0];
        assert_eq!((m.iai, m.mai), (u("::ffff:18.26.4.125"), u("3ffe::1")));
        let d = dynamic(&sh);
        assert_eq!(d.out_mask, [true, true, false, false, false, false]);
        assert_eq!(d.in_mask, [false, false, true, true, false, false]);
        assert_eq!(
            (d.slots[0].addr, d.slots[0].port),
            (u("::ffff:18.26.4.1"), 1300)
        );
        drop(d);

        // Their commented-out lookup fields in place of the lines above
        // them: outgoing packets looked up by the mapped fields, incoming
        // ones by the inner fields. Accepted, with Click's meaning (see
        // `swapped_lookup_fields_find_nothing`).
        for text in [
            "0, 0 0 1 1 0 0, 1 1 0 0 0 0, 0, ::ffff:18.26.4.125 1300 1310",
            "1, 1 0 1 0 0 0, ::ffff:18.26.4.125 3ffe::1, 0 0 1 1 0 0, 1 1 0 0 0 0, 0, ::ffff:18.26.4.1 1300 1310",
        ] {
            let sh = config(text).unwrap();
            let d = dynamic(&sh);
            assert_eq!(d.out_mask, [false, false, true, true, false, false]);
            assert_eq!(d.in_mask, [true, true, false, false, false, false]);
        }
        // gnat02's `//1,` in place of `1 0 1 0 0 0` makes no argument list
        // Click can read (a static mapping without its ports, then
        // `1 1 0 0 0 0` where a boolean goes): refused, with the place.
        let e = config("1, 1, ::ffff:18.26.4.125 3ffe::1, 1 1 0 0 0 0, 0 0 1 1 0 0, 0, ::ffff:18.26.4.1 1300 1310")
            .unwrap_err();
        assert!(e.contains("IADDR IPORT MADDR MPORT"), "{e}");
    }

    #[test]
    fn bad_arguments_are_refused_with_a_reason() {
        for (args, want) in [
            ("", "missing arguments"),
            ("x", "NSTATIC"),
            ("0", "missing argument DYNAMIC"),
            ("0, maybe", "DYNAMIC: expected a boolean"),
            ("1, 0, 2001:db8::1, 0", "expected `IADDR MADDR`"),
            (
                "1, 0, 2001:db8::1 nothere, 0",
                "MADDR: expected an IPv6 address",
            ),
            (
                "2, 0, ::1 ::2, 0",
                "static mapping 2: expected `IADDR MADDR`",
            ),
            ("2, 0, ::1 ::2", "missing argument STATIC2"),
            ("0, 0, 1", "too many arguments"),
            ("0, 1, 1, 0, ::1 6000", "expected `MADDR PORTLOW PORTHIGH`"),
            ("0, 1, 1, 0, ::1 6010 6000", "PORTLOW is above PORTHIGH"),
            ("0, 1, 1, 0, ::1 6000 70000", "PORTHIGH: expected a port"),
            ("0, 1, 1, 0, ::1 0 0", "no port but 0"),
            ("0, 1, 1, 0, ::1 1 2, ::2 1 2", "too many arguments"),
            ("0, 1, 0, 0", "needs addresses"),
            ("0, 1, 0, 0, ::1 ::2", "MADDR: expected an IPv6 address"),
            ("0, 1 1 0 0 0 0, 0 0 1 1 0, 0, ::1 1 2", "six booleans"),
            (
                "1, 0 1 0 1 0 0, ::1 1 2, 1 1 0 0 0 0, 0 0 1 1 0 0, 0, ::1 1 2",
                "needs IADDR and MADDR",
            ),
            ("0, 1 1 0 0 0 0, 0 0 1 1 0 0, 0", "a pool"),
            ("0, 1, 1, 0, ::1 1 2, CAPACITY 0", "CAPACITY"),
            ("0, 1, 1, 0, ::1 1 2, TIMEOUT 5", "unknown keyword"),
        ] {
            let e = config(args)
                .err()
                .unwrap_or_else(|| panic!("`{args}` accepted"));
            assert!(e.contains(want), "`{args}`: {e}");
        }
        // Keywords are read besides.
        let sh = config("0, 1, 1, 0, ::1 1 2, CAPACITY 5, UDP_TIMEOUT 2min").unwrap();
        let d = dynamic(&sh);
        assert_eq!(d.capacity, 5);
        assert_eq!(d.timeouts_ns[Class::Udp as usize], 120_000_000_000);
        assert_eq!(
            d.timeouts_ns[Class::TcpEstablished as usize],
            7_440_000_000_000
        );
    }

    #[test]
    fn static_address_mapping_both_ways() {
        // ip64-nat4.click's translator.
        let mut h = at("1, 0, 3ffe:1ce1:2::1 ::18.26.4.17, 0");
        let p = pkt(TCP, "3ffe:1ce1:2::1", 1025, "::18.26.4.60", 80, b"GET /");
        let o = through(&mut h, 0, &p).unwrap();
        assert_eq!(src_of(&o), (ip("::18.26.4.17"), 1025));
        assert_eq!(dst_of(&o), (ip("::18.26.4.60"), 80));
        assert_eq!(
            &o[44..56],
            &p[44..56],
            "only the address and checksum change"
        );
        let r = pkt(TCP, "::18.26.4.60", 80, "::18.26.4.17", 1025, b"200");
        let o = through(&mut h, 1, &r).unwrap();
        assert_eq!(dst_of(&o), (ip("3ffe:1ce1:2::1"), 1025));
        assert_eq!(src_of(&o).0, ip("::18.26.4.60"));
        // ICMPv6 echo and UDP too.
        let e = pkt(ICMPV6, "3ffe:1ce1:2::1", 7, "::18.26.4.60", 1, b"ping");
        let o = through(&mut h, 0, &e).unwrap();
        assert_eq!(src_of(&o).0, ip("::18.26.4.17"));
        assert_eq!(&o[44..], &e[44..], "identifier kept");
        let o = through(&mut h, 1, &udp("::18.26.4.60", 53, "::18.26.4.17", 4000)).unwrap();
        assert_eq!(dst_of(&o), (ip("3ffe:1ce1:2::1"), 4000));
        // Another host has no mapping, either way.
        assert!(through(&mut h, 0, &udp("3ffe:1ce1:2::2", 1, "::18.26.4.60", 53)).is_none());
        assert!(through(&mut h, 1, &udp("::18.26.4.60", 53, "::18.26.4.18", 1)).is_none());
        assert_eq!(stat(&h, "no_mapping"), 2);
        assert_eq!(
            (stat(&h, "translated_out"), stat(&h, "translated_in")),
            (2, 2)
        );
        assert_eq!(
            h.read_handler("mappings").unwrap(),
            "static 3ffe:1ce1:2::1 <=> ::18.26.4.17\n"
        );
    }

    #[test]
    fn static_port_mapping() {
        let mut h = at("1, 1, 2001:db8::1 80 2001:db8:ff::1 8080, 0");
        let o = through(
            &mut h,
            0,
            &pkt(TCP, "2001:db8::1", 80, "2001:db8:9::9", 5000, b"x"),
        )
        .unwrap();
        assert_eq!(src_of(&o), (ip("2001:db8:ff::1"), 8080));
        let o = through(
            &mut h,
            1,
            &pkt(TCP, "2001:db8:9::9", 5000, "2001:db8:ff::1", 8080, b"y"),
        )
        .unwrap();
        assert_eq!(dst_of(&o), (ip("2001:db8::1"), 80));
        // Other ports of the same hosts are not mapped; nor is ICMPv6.
        assert!(through(
            &mut h,
            0,
            &pkt(TCP, "2001:db8::1", 81, "2001:db8:9::9", 5000, b"")
        )
        .is_none());
        assert!(through(&mut h, 1, &udp("2001:db8:9::9", 5000, "2001:db8:ff::1", 80)).is_none());
        assert!(through(
            &mut h,
            0,
            &pkt(ICMPV6, "2001:db8::1", 80, "2001:db8:9::9", 1, b"")
        )
        .is_none());
        assert_eq!(stat(&h, "no_mapping"), 3);
        assert_eq!(
            h.read_handler("mappings").unwrap(),
            "static 2001:db8::1 80 <=> 2001:db8:ff::1 8080\n"
        );
    }

    #[test]
    fn dynamic_address_mapping() {
        // ip64-nat.click's translator, with a second pool address.
        let mut h = at("0, 1, 0, 0, ::1.0.0.1, ::1.0.0.2");
        // Nothing is bound yet: an incoming packet is dropped.
        assert!(through(&mut h, 1, &udp("::18.26.4.60", 53, "::1.0.0.1", 4000)).is_none());
        assert_eq!(stat(&h, "no_mapping"), 1);
        // A host going out is bound to the first free address.
        let o = through(&mut h, 0, &udp("2001:db8::a", 4000, "::18.26.4.60", 53)).unwrap();
        assert_eq!(src_of(&o), (ip("::1.0.0.1"), 4000));
        let o = through(&mut h, 1, &udp("::18.26.4.60", 53, "::1.0.0.1", 4000)).unwrap();
        assert_eq!(dst_of(&o), (ip("2001:db8::a"), 4000));
        // Every packet of that host uses the binding, whatever the
        // protocol, port or peer.
        let o = through(
            &mut h,
            0,
            &pkt(TCP, "2001:db8::a", 9, "::18.26.4.61", 22, b""),
        )
        .unwrap();
        assert_eq!(src_of(&o), (ip("::1.0.0.1"), 9));
        let o = through(
            &mut h,
            0,
            &pkt(ICMPV6, "2001:db8::a", 9, "::18.26.4.61", 1, b""),
        )
        .unwrap();
        assert_eq!(src_of(&o).0, ip("::1.0.0.1"));
        // A second host gets the second address, a third none.
        let o = through(&mut h, 0, &udp("2001:db8::b", 1, "::18.26.4.60", 53)).unwrap();
        assert_eq!(src_of(&o).0, ip("::1.0.0.2"));
        assert!(through(&mut h, 0, &udp("2001:db8::c", 1, "::18.26.4.60", 53)).is_none());
        assert_eq!(stat(&h, "pool_exhausted"), 1);
        assert_eq!((stat(&h, "created"), stat(&h, "mappings")), (2, 2));
        assert_eq!(
            h.read_handler("mappings").unwrap(),
            "dynamic 2001:db8::a <=> ::1.0.0.1 bound\ndynamic 2001:db8::b <=> ::1.0.0.2 bound\n"
        );
        // Idle past BINDING_TIMEOUT, the bindings go and the third host
        // gets one.
        let later = secs(&h, 7441);
        h.advance_to(later);
        let o = through(&mut h, 0, &udp("2001:db8::c", 1, "::18.26.4.60", 53)).unwrap();
        assert_eq!(src_of(&o).0, ip("::1.0.0.1"));
        assert_eq!(stat(&h, "expired"), 2);
    }

    #[test]
    fn dynamic_port_mapping_and_exhaustion() {
        // ip64-nat2.click's translator, with a range of two ports.
        let mut h = at("0, 1, 1, 0, ::1.0.0.1 6000 6001");
        let f1 = udp("2001:db8::a", 4000, "::18.26.4.60", 53);
        let o = through(&mut h, 0, &f1).unwrap();
        assert_eq!(src_of(&o), (ip("::1.0.0.1"), 6000));
        // The same flow again: the same mapping.
        let o = through(&mut h, 0, &f1).unwrap();
        assert_eq!(src_of(&o), (ip("::1.0.0.1"), 6000));
        // Another peer is another flow; TCP is another flow too.
        let o = through(
            &mut h,
            0,
            &pkt(TCP, "2001:db8::a", 4000, "::18.26.4.60", 53, b""),
        )
        .unwrap();
        assert_eq!(src_of(&o), (ip("::1.0.0.1"), 6001));
        // The range is used up: new flows are refused and counted.
        assert!(through(&mut h, 0, &udp("2001:db8::b", 4000, "::18.26.4.60", 53)).is_none());
        assert!(through(&mut h, 0, &udp("2001:db8::a", 4000, "::18.26.4.61", 53)).is_none());
        assert_eq!(stat(&h, "pool_exhausted"), 2);
        // The existing ones still work, both ways.
        let o = through(&mut h, 1, &udp("::18.26.4.60", 53, "::1.0.0.1", 6000)).unwrap();
        assert_eq!(dst_of(&o), (ip("2001:db8::a"), 4000));
        let o = through(
            &mut h,
            1,
            &pkt(TCP, "::18.26.4.60", 53, "::1.0.0.1", 6001, b""),
        )
        .unwrap();
        assert_eq!(dst_of(&o), (ip("2001:db8::a"), 4000));
        // A reply from another peer, port or protocol finds nothing.
        assert!(through(&mut h, 1, &udp("::18.26.4.61", 53, "::1.0.0.1", 6000)).is_none());
        assert!(through(&mut h, 1, &udp("::18.26.4.60", 54, "::1.0.0.1", 6000)).is_none());
        assert!(through(&mut h, 1, &udp("::18.26.4.60", 53, "::1.0.0.1", 6001)).is_none());
        assert_eq!(stat(&h, "no_mapping"), 3);
        assert_eq!(
            h.read_handler("mappings").unwrap(),
            "tcp 2001:db8::a 4000 <=> ::1.0.0.1 6001 with ::18.26.4.60 53 established\n\
             udp 2001:db8::a 4000 <=> ::1.0.0.1 6000 with ::18.26.4.60 53 active\n"
        );
    }

    #[test]
    fn capacity_bounds_the_table() {
        let mut h = at("0, 1, 1, 0, ::1.0.0.1 6000 6010, CAPACITY 1");
        assert!(through(&mut h, 0, &udp("2001:db8::a", 1, "::18.26.4.60", 53)).is_some());
        assert!(through(&mut h, 0, &udp("2001:db8::a", 2, "::18.26.4.60", 53)).is_none());
        assert_eq!((stat(&h, "table_full"), stat(&h, "mappings")), (1, 1));
        assert!(through(&mut h, 0, &udp("2001:db8::a", 1, "::18.26.4.60", 53)).is_some());
        assert!(through(&mut h, 1, &udp("::18.26.4.60", 53, "::1.0.0.1", 6000)).is_some());
    }

    #[test]
    fn mappings_expire() {
        let mut h = at("0, 1, 1, 0, ::1.0.0.1 6000 6000");
        h.start();
        let f1 = udp("2001:db8::a", 1, "::18.26.4.60", 53);
        assert!(through(&mut h, 0, &f1).is_some());
        // Used within UDP_TIMEOUT, it lives on.
        let t = secs(&h, 200);
        h.advance_to(t);
        assert!(through(&mut h, 1, &udp("::18.26.4.60", 53, "::1.0.0.1", 6000)).is_some());
        let t = secs(&h, 200);
        h.advance_to(t);
        assert!(through(&mut h, 0, &udp("2001:db8::b", 1, "::18.26.4.60", 53)).is_none());
        assert_eq!(stat(&h, "pool_exhausted"), 1);
        // Idle for longer, the timer reaps it and the reply finds nothing.
        let t = secs(&h, 301);
        h.advance_to(t);
        assert_eq!((stat(&h, "expired"), stat(&h, "mappings")), (1, 0));
        assert!(through(&mut h, 1, &udp("::18.26.4.60", 53, "::1.0.0.1", 6000)).is_none());
        assert_eq!(h.read_handler("mappings").unwrap(), "");
        // The port is free for a new flow.
        let o = through(&mut h, 0, &udp("2001:db8::b", 1, "::18.26.4.60", 53)).unwrap();
        assert_eq!(src_of(&o), (ip("::1.0.0.1"), 6000));
    }

    #[test]
    fn expiry_without_the_timer() {
        // No timer has run: an expired mapping is reaped as packets come.
        let mut h = at("0, 1, 1, 0, ::1.0.0.1 6000 6000, UDP_TIMEOUT 10");
        assert!(through(&mut h, 0, &udp("2001:db8::a", 1, "::18.26.4.60", 53)).is_some());
        h.advance_to(secs(&h, 11));
        assert!(through(&mut h, 0, &udp("2001:db8::b", 1, "::18.26.4.60", 53)).is_some());
        assert_eq!((stat(&h, "expired"), stat(&h, "created")), (1, 2));
    }

    #[test]
    fn tcp_timeouts_follow_the_connection() {
        let mut h = at("0, 1, 1, 0, ::1.0.0.1 6000 6001");
        let syn = pkt(TCP, "2001:db8::a", 1, "::18.26.4.60", 80, b"");
        assert!(through(&mut h, 0, &syn).is_some());
        // Unanswered, the mapping is transitory: gone after 240 s.
        h.advance_to(secs(&h, 241));
        assert!(through(
            &mut h,
            1,
            &pkt(TCP, "::18.26.4.60", 80, "::1.0.0.1", 6000, b"")
        )
        .is_none());
        assert_eq!(stat(&h, "expired"), 1);
        // Answered, it is established: alive after an hour idle.
        assert!(through(&mut h, 0, &syn).is_some());
        let o = through(
            &mut h,
            1,
            &pkt(TCP, "::18.26.4.60", 80, "::1.0.0.1", 6001, b""),
        )
        .unwrap();
        assert_eq!(dst_of(&o), (ip("2001:db8::a"), 1));
        h.advance_to(secs(&h, 3600));
        assert!(through(&mut h, 0, &syn).is_some());
        // A RST makes it transitory again.
        let mut rst = pkt(TCP, "::18.26.4.60", 80, "::1.0.0.1", 6001, b"");
        rst[53] = 0x04;
        let ck = residue(&{
            let mut z = rst.clone();
            z[56..58].copy_from_slice(&[0, 0]);
            z
        });
        rst[56..58].copy_from_slice(&ck.to_be_bytes());
        assert!(through(&mut h, 1, &rst).is_some());
        h.advance_to(secs(&h, 241));
        assert!(through(&mut h, 0, &syn).is_some(), "a new mapping");
        assert_eq!(stat(&h, "expired"), 2);
    }

    #[test]
    fn icmp_echo_in_port_mapping() {
        let mut h = at("0, 1, 1, 0, ::1.0.0.1 6000 6010");
        let req = pkt(
            ICMPV6,
            "2001:db8::a",
            0x1a2b,
            "::18.26.4.60",
            1,
            b"abcdefgh",
        );
        let o = through(&mut h, 0, &req).unwrap();
        assert_eq!(src_of(&o), (ip("::1.0.0.1"), 128 << 8));
        assert_eq!(be16(&o, 44), 6000, "the identifier is mapped");
        let mut rep = pkt(ICMPV6, "::18.26.4.60", 6000, "::1.0.0.1", 1, b"abcdefgh");
        rep[40] = 129;
        let ck = residue(&{
            let mut z = rep.clone();
            z[42..44].copy_from_slice(&[0, 0]);
            z
        });
        rep[42..44].copy_from_slice(&ck.to_be_bytes());
        let o = through(&mut h, 1, &rep).unwrap();
        assert_eq!(Ipv6Addr::from(addr_at(&o, 24)), ip("2001:db8::a"));
        assert_eq!(be16(&o, 44), 0x1a2b);
        // An ICMPv6 error has no port: no mapping in this mode.
        let mut err = pkt(ICMPV6, "::18.26.4.60", 0, "::1.0.0.1", 1280, &o[..48]);
        err[40] = 2;
        assert!(through(&mut h, 1, &err).is_none());
        assert_eq!(stat(&h, "no_mapping"), 1);
    }

    #[test]
    fn inward_allocation() {
        // DIRECTION 1: flows from outside get the pool's inner address
        // and port; the replies get the address they were sent to.
        let mut h = at("0, 1, 1, 1, 2001:db8::80 8000 8001");
        assert!(through(&mut h, 0, &udp("2001:db8::80", 8000, "::18.26.4.60", 53)).is_none());
        assert_eq!(stat(&h, "no_mapping"), 1);
        let o = through(&mut h, 1, &udp("::18.26.4.60", 5353, "::1.0.0.1", 53)).unwrap();
        assert_eq!(dst_of(&o), (ip("2001:db8::80"), 8000));
        let o = through(&mut h, 0, &udp("2001:db8::80", 8000, "::18.26.4.60", 5353)).unwrap();
        assert_eq!(src_of(&o), (ip("::1.0.0.1"), 53));
        // Dynamic address mapping the same way round.
        let mut h = at("0, 1, 0, 1, 2001:db8::80");
        let o = through(&mut h, 1, &udp("::18.26.4.60", 5353, "::1.0.0.1", 53)).unwrap();
        assert_eq!(dst_of(&o), (ip("2001:db8::80"), 53));
        let o = through(
            &mut h,
            0,
            &pkt(TCP, "2001:db8::80", 22, "::18.26.4.99", 1, b""),
        )
        .unwrap();
        assert_eq!(src_of(&o), (ip("::1.0.0.1"), 22));
    }

    #[test]
    fn statics_before_dynamic_port_mapping() {
        // ip64-nat.click's first commented-out form: the static host
        // keeps its ports, the others share ::ffff:18.26.4.116.
        let mut h = at("1, 0, ::ffff:0.0.0.2 ::1.0.0.1, 1, 1, 0, ::ffff:18.26.4.116 1300 1310");
        let o = through(&mut h, 0, &udp("::ffff:0.0.0.2", 4000, "::18.26.4.60", 53)).unwrap();
        assert_eq!(src_of(&o), (ip("::1.0.0.1"), 4000));
        let o = through(&mut h, 0, &udp("::ffff:0.0.0.3", 4000, "::18.26.4.60", 53)).unwrap();
        assert_eq!(src_of(&o), (ip("::ffff:18.26.4.116"), 1300));
        let o = through(
            &mut h,
            1,
            &udp("::18.26.4.60", 53, "::ffff:18.26.4.116", 1300),
        )
        .unwrap();
        assert_eq!(dst_of(&o), (ip("::ffff:0.0.0.3"), 4000));
        let o = through(&mut h, 1, &udp("::18.26.4.60", 53, "::1.0.0.1", 4000)).unwrap();
        assert_eq!(dst_of(&o), (ip("::ffff:0.0.0.2"), 4000));
    }

    #[test]
    fn gnat_behaviour() {
        // gnat02.click: the static host keeps its port; others are bound
        // by address and port to the pool's pairs, whatever the peer.
        let mut h = at("1, 1 0 1 0 0 0, ::ffff:18.26.4.125 3ffe::1, 1 1 0 0 0 0, 0 0 1 1 0 0, 0, ::ffff:18.26.4.1 1300 1310");
        let o = through(&mut h, 0, &udp("::ffff:18.26.4.125", 1300, "3ffe::9", 53)).unwrap();
        assert_eq!(src_of(&o), (ip("3ffe::1"), 1300));
        let o = through(&mut h, 0, &udp("::ffff:18.26.4.7", 5000, "3ffe::9", 53)).unwrap();
        assert_eq!(src_of(&o), (ip("::ffff:18.26.4.1"), 1300));
        let o = through(
            &mut h,
            0,
            &pkt(TCP, "::ffff:18.26.4.7", 5000, "3ffe::8", 80, b""),
        )
        .unwrap();
        assert_eq!(
            src_of(&o),
            (ip("::ffff:18.26.4.1"), 1300),
            "one binding for the inner end"
        );
        let o = through(&mut h, 1, &udp("3ffe::7", 1, "::ffff:18.26.4.1", 1300)).unwrap();
        assert_eq!(dst_of(&o), (ip("::ffff:18.26.4.7"), 5000));
        assert_eq!(stat(&h, "created"), 1);
    }

    #[test]
    fn swapped_lookup_fields_find_nothing() {
        // gnat01 with its commented-out lookup fields: an outgoing packet
        // is looked up by fields it does not carry yet, so each makes a
        // new binding (until the pool is used up), and an incoming one by
        // fields it does not carry, so none is translated: Click compares
        // them with unset values.
        let mut h = at("0, 0 0 1 1 0 0, 1 1 0 0 0 0, 0, ::ffff:18.26.4.125 1300 1301");
        let f = udp("::ffff:18.26.4.7", 5000, "3ffe::9", 53);
        assert_eq!(src_of(&through(&mut h, 0, &f).unwrap()).1, 1300);
        assert_eq!(src_of(&through(&mut h, 0, &f).unwrap()).1, 1301);
        assert!(through(&mut h, 0, &f).is_none());
        assert!(through(&mut h, 1, &udp("3ffe::9", 53, "::ffff:18.26.4.125", 1300)).is_none());
        assert_eq!((stat(&h, "pool_exhausted"), stat(&h, "no_mapping")), (1, 1));
    }

    #[test]
    fn checksums_stay_right() {
        let mut h = at("0, 1, 1, 0, ::1.0.0.1 6000 6200");
        // Odd payload lengths, payloads that sum to anything.
        for n in 0..40u16 {
            let payload: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
            for proto in [TCP, UDP, ICMPV6] {
                let p = pkt(proto, "2001:db8::a", 1000 + n, "::18.26.4.60", 53, &payload);
                assert!(through(&mut h, 0, &p).is_some());
            }
        }
        // A UDP datagram without checksum gets one.
        let mut p = udp("2001:db8::b", 1, "::18.26.4.60", 53);
        p[46..48].copy_from_slice(&[0, 0]);
        let o = through(&mut h, 0, &p).unwrap();
        assert_ne!(be16(&o, 46), 0);
        // Bytes after the payload length (link padding) are kept and not
        // summed.
        let mut p = udp("2001:db8::a", 1000, "::18.26.4.60", 53);
        p.extend_from_slice(&[0xaa; 6]);
        let o = through(&mut h, 0, &p).unwrap();
        assert_eq!(&o[o.len() - 6..], &[0xaa; 6]);
    }

    #[test]
    fn bad_packets_are_dropped_and_counted() {
        let mut h = at("0, 1, 1, 0, ::1.0.0.1 6000 6010");
        let good = pkt(TCP, "2001:db8::a", 1, "::18.26.4.60", 80, b"data");
        for (port, p) in [
            (0, good[..39].to_vec()),             // short of an IPv6 header
            (0, good[..good.len() - 1].to_vec()), // short of its payload length
            (1, good[..50].to_vec()),
            (0, {
                // A TCP header of 10 bytes.
                let mut p = good[..50].to_vec();
                p[4..6].copy_from_slice(&10u16.to_be_bytes());
                p
            }),
            (0, {
                let mut p = udp("2001:db8::a", 1, "::1", 2)[..46].to_vec();
                p[4..6].copy_from_slice(&6u16.to_be_bytes());
                p
            }),
            (1, {
                let mut p = pkt(ICMPV6, "::1", 1, "::2", 1, b"")[..46].to_vec();
                p[4..6].copy_from_slice(&6u16.to_be_bytes());
                p
            }),
        ] {
            assert!(through(&mut h, port, &p).is_none());
        }
        assert_eq!(stat(&h, "truncated"), 6);
        let mut v4 = good.clone();
        v4[0] = 0x45;
        assert!(through(&mut h, 0, &v4).is_none());
        assert_eq!(stat(&h, "bad_version"), 1);
        // Extension headers and other protocols are not translated.
        for nh in [0u8, 44, 4, 50, 59] {
            let mut p = good.clone();
            p[6] = nh;
            assert!(through(&mut h, 0, &p).is_none());
        }
        assert_eq!(stat(&h, "bad_protocol"), 5);
        assert_eq!(stat(&h, "created"), 0);
        assert!(through(&mut h, 0, &good).is_some());
    }

    #[test]
    fn example_packet_checksum_is_right() {
        let p = pkt(UDP, "2001:db8::1", 40000, "2001:db8:1::2", 53, b"");
        assert_eq!(&p[46..48], &[0x07, 0xf3], "the manual's example packet");
    }
}
