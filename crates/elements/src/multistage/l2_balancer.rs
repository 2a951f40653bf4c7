//! `L2Balancer`: the L2 load balancer of a multistage router (Bianco et
//! al. §III-A): frames from the front ports go to the L3 routers behind an
//! Ethernet switch by rewriting their destination MAC, and frames the
//! routers send back are switched out of the front port their destination
//! lives behind.
//!
//! Forward path (the paper's items 1-3): an IPv4 frame for the front
//! port's own MAC gets the destination `02:4d:53:ii:kk:00` (router `i`,
//! global front port `k`), source unchanged so that the switch learns
//! where the external hosts are, and leaves by a back port (DTX: one;
//! DTX-n: a second round robin over n). The router is chosen per packet in
//! round robin (the paper), by a hash of the 5-tuple, or per flowlet.
//!
//! Return path (items 4-5): the return table maps each source MAC seen on
//! a front port to that port (shared by all workers, bounded, oldest
//! evicted, a MAC moves only after a quiet period); a frame from the back
//! goes out, unmodified, of the port its destination was learnt on.
//! Broadcasts from the back (the routers' ARP requests) are copied out of
//! every front port, and ARP replies from outside are copied to every live
//! router.
//!
//! Liveness (beyond the paper): the first worker probes every router
//! every INTERVAL; a router not heard for MISSES intervals leaves the
//! balancing set, and returns as soon as a reply arrives on any worker.
//! The live set is a shared bitmap with a generation number; each worker
//! rebuilds its list of live routers when the generation moves, which it
//! checks once per batch, so choosing a router reads only the worker's own
//! memory.

use super::mac_table::{Learnt, MacTable, MAX_CAPACITY};
use super::{
    is_internal, mac_text, mac_u64, parse_u8_list, router_mac, scatter, Probe, ProbeKind, DROP,
    ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_PROBE, ETHER_LEN, SPECIAL,
};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::{PacketType, Timestamp, MAX_BATCH};
use bricks_wire::ethernet::EthernetAddress;
use std::sync::atomic::{
    AtomicU64, AtomicU8, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed,
};
use std::sync::Arc;
use std::time::Duration;

/// The `L2Balancer` class.
pub static CLASS: ElementClass = ElementClass {
    name: "L2Balancer",
    ports: "2-/2-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "the L2 load balancer of a multistage router: spreads front-port frames over \
        L3 routers by destination MAC, switches their answers back, probes their liveness",
    synopsis: "L2Balancer(FRONT K0 K1 ..., ROUTERS R, KEYWORDS BALANCER, BACKS, POLICY, DELTA, \
        INTERVAL, MISSES, RETURN_CAPACITY, MOVE_AFTER, BACK_MAC, FRONT_MAC)",
    description: "One balancer of a multistage router (Bianco et al., HPSR 2007, section III): \
        F front ports facing the outside (the global front port numbers K0 K1 ... of FRONT, \
        numbered over all balancers), N back ports on the Ethernet switch that joins the \
        balancers to R L3 routers. Router I's MAC for front port K is 02:4d:53:II:KK:00; \
        back port J's MAC is 02:4d:42:BB:JJ:00 (BB = BALANCER) unless BACK_MAC gives them. \
        \n\nInput i < F takes the frames of front port i (ARP requests for the router's \
        address already answered, by an ARPResponder); input F takes the frames of every \
        back port. Output i < F sends out of front port i, output F+J out of back port J. \
        \n\nFront: a frame whose destination or source is an internal MAC (02:4d:53:... or \
        02:4d:42:...) or whose type is 0x88B7 is dropped (spoofed): an external host can \
        neither fake liveness nor reach the back stage directly. The source MAC of every \
        other frame is learnt in the return table. Broadcast and multicast frames are \
        dropped (front_broadcast); unicast frames for another MAC than the front port's \
        (FRONT_MAC when given, else the packet type annotation FromDevice sets) are \
        dropped (other_host). An IPv4 frame (or a unicast ARP request) is balanced: its \
        destination MAC becomes the chosen live router's MAC for this front port, nothing \
        else changes, and it leaves by a back port (one; or, with BACKS n > 1, the next in \
        a second round robin: the paper's DTX-n). POLICY rr chooses routers in round \
        robin per packet (the paper); flow by a hash of the 5-tuple (a flow stays on its \
        router while that router lives); flowlet keeps a flow on its router while its \
        packets come less than DELTA apart, and sends a new flowlet to the next router in \
        round robin. An ARP reply is copied to every live router (at most 256 per \
        INTERVAL per worker), so that each learns the external neighbour. Other types \
        are dropped (other_type). With no live router, frames are dropped (no_router). \
        \n\nBack: a unicast frame goes, unmodified, out of the front port its destination \
        MAC was learnt on; an unknown destination is dropped (unknown_return). Broadcast \
        and multicast frames (the routers' ARP requests) are copied out of every front \
        port, or only out of the port whose FRONT_MAC is their source when FRONT_MAC is \
        given. Probe replies (type 0x88B7) are read here. \
        \n\nThe return table holds RETURN_CAPACITY addresses, shared by every worker; a \
        new address evicts the oldest inserted when it is full; an address heard on a \
        second port moves there only after MOVE_AFTER without being heard on the first. \
        \n\nLiveness: every INTERVAL the first worker sends each router a probe (type \
        0x88B7, to the router's MAC for front port 0, from a back port's MAC, in turn); \
        the router's ProbeResponder answers once per front port from each of its MACs, so \
        the switch learns them all. A router not heard for MISSES intervals leaves the \
        balancing set, and comes back with its next reply; both are printed on standard \
        error and counted. Before its first reply a router is not used. \
        \n\nWrite handlers: policy (rr, flow or flowlet), delta (a duration). Per packet \
        the element does O(1) work and no allocation; a batch whose frames all go to one \
        back port moves on whole.",
    ports: "inputs 0..F-1: frames from front port i (push); input F: frames from the back \
        ports (push); outputs 0..F-1: to front port i (push); outputs F..F+N-1: to back \
        port J (push)",
    keywords: &[
        Keyword {
            name: "FRONT",
            ty: "numbers separated by spaces (0 to 254)",
            default: None,
            doc: "the global number of each of this balancer's front ports, in input order",
        },
        Keyword {
            name: "ROUTERS",
            ty: "unsigned integer (1 to 255)",
            default: None,
            doc: "the number of L3 routers R",
        },
        Keyword {
            name: "BALANCER",
            ty: "unsigned integer (0 to 255)",
            default: Some("0"),
            doc: "this balancer's number (in its back MACs and probes)",
        },
        Keyword {
            name: "BACKS",
            ty: "unsigned integer (1 to 255)",
            default: Some("1"),
            doc: "the number of back ports N (DTX-N)",
        },
        Keyword {
            name: "POLICY",
            ty: "rr, flow or flowlet",
            default: Some("rr"),
            doc: "how routers are chosen",
        },
        Keyword {
            name: "DELTA",
            ty: "duration",
            default: Some("50ms"),
            doc: "flowlet gap: a flow's packets less than DELTA apart stay on one router",
        },
        Keyword {
            name: "INTERVAL",
            ty: "duration",
            default: Some("50ms"),
            doc: "time between two probes of a router",
        },
        Keyword {
            name: "MISSES",
            ty: "unsigned integer (1 or more)",
            default: Some("3"),
            doc: "intervals without a reply after which a router is down",
        },
        Keyword {
            name: "RETURN_CAPACITY",
            ty: "unsigned integer",
            default: Some("4096"),
            doc: "most external MAC addresses the return table holds",
        },
        Keyword {
            name: "MOVE_AFTER",
            ty: "duration",
            default: Some("1s"),
            doc: "quiet time after which a MAC heard on another front port moves there",
        },
        Keyword {
            name: "BACK_MAC",
            ty: "Ethernet addresses separated by spaces",
            default: Some("02:4d:42:BB:JJ:00"),
            doc: "the MAC of each back port",
        },
        Keyword {
            name: "FRONT_MAC",
            ty: "Ethernet addresses separated by spaces",
            default: Some("none (the packet type annotation)"),
            doc: "the MAC of each front port: frames for other MACs are dropped",
        },
    ],
    counters: &[
        ("balanced", "frames sent to a router (sum of to_routerI)"),
        ("to_routerI", "frames balanced to router I"),
        (
            "to_backJ",
            "frames sent out of back port J (balanced, ARP copies, probes)",
        ),
        ("returned", "frames from the back sent out of a front port"),
        (
            "unknown_return",
            "frames from the back for an unknown MAC, dropped",
        ),
        (
            "replicated",
            "broadcast or multicast frames from the back copied to front ports",
        ),
        (
            "arp_to_routers",
            "ARP replies from outside copied to every live router",
        ),
        (
            "arp_limited",
            "ARP replies over the per-interval budget, dropped",
        ),
        (
            "spoofed",
            "front frames to or from an internal MAC, or of type 0x88B7, dropped",
        ),
        ("no_router", "frames dropped because no router was live"),
        ("probes", "probes sent"),
        ("replies", "probe replies received"),
        (
            "other_probe",
            "0x88B7 frames from the back that are not replies to this balancer",
        ),
        (
            "router_down, router_up",
            "routers that left and (re)joined the balancing set",
        ),
        ("other_host", "front frames for another MAC, dropped"),
        (
            "front_broadcast",
            "broadcast and multicast front frames, dropped",
        ),
        (
            "other_type",
            "unicast front frames neither IPv4 nor ARP, dropped",
        ),
        ("runt", "frames shorter than an Ethernet header, dropped"),
        (
            "bad_source",
            "front frames with a group source MAC, dropped",
        ),
        ("station_moves", "external MACs moved to another front port"),
        (
            "station_refused",
            "external MACs heard on a second port too soon (not moved)",
        ),
        (
            "return_evictions",
            "return table entries evicted to make room",
        ),
        ("live", "routers in the balancing set now (first worker)"),
        (
            "return_entries",
            "addresses in the return table now (first worker)",
        ),
    ],
    example: "// One front port, one back port, two routers answering probes.\n\
        lb :: L2Balancer(FRONT 0, ROUTERS 2);\n\
        InfiniteSource(DATA \\<02 00 00 00 0f 00 52 54 00 00 00 01 08 00 \
        45 00 00 14 00 00 00 00 40 11 00 00 0a 00 00 02 0a 01 00 02>, LIMIT 1) -> [0]lb;\n\
        lb[0] -> Discard;\n\
        lb[1] -> c :: Classifier(12/88b7, -);\n\
        c[0] -> t :: Tee(2);\n\
        t[0] -> ProbeResponder(ROUTER 0, FRONTS 1) -> [1]lb;\n\
        t[1] -> ProbeResponder(ROUTER 1, FRONTS 1) -> [1]lb;\n\
        c[1] -> Discard;",
    see_also: &[
        "ProbeResponder",
        "ARPResponder",
        "VRDemux",
        "RoundRobinSwitch",
        "EtherSwitch",
    ],
};

/// How routers are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Per packet, in turn (the paper).
    RoundRobin = 0,
    /// By a hash of the 5-tuple.
    Flow = 1,
    /// Per flowlet: a flow keeps its router while its packets come less
    /// than DELTA apart.
    Flowlet = 2,
}

impl Policy {
    fn from_u8(v: u8) -> Policy {
        match v {
            1 => Policy::Flow,
            2 => Policy::Flowlet,
            _ => Policy::RoundRobin,
        }
    }
}

impl FromArg for Policy {
    const TYPE: &'static str = "rr, flow or flowlet";
    fn from_arg(text: &str) -> Result<Self, String> {
        match text.trim() {
            "rr" | "round_robin" | "roundrobin" => Ok(Policy::RoundRobin),
            "flow" => Ok(Policy::Flow),
            "flowlet" => Ok(Policy::Flowlet),
            t => Err(format!("found `{t}`")),
        }
    }
}

/// The low 48 bits of a word: a MAC address read little-endian.
const MAC48: u64 = (1 << 48) - 1;
/// Type 0x0800 in the top 16 bits of a little-endian word.
const IPV4_LE: u64 = 0x0008;
/// The internal prefixes (02:4d:53, 02:4d:42) read little-endian.
const INTERNAL_ROUTER_LE: u64 = 0x53_4d02;
const INTERNAL_BALANCER_LE: u64 = 0x42_4d02;

/// A MAC address as the low 48 bits of a little-endian word.
fn mac_le48(m: &[u8; 6]) -> u64 {
    u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0])
}

/// Longest time a worker goes without refreshing a front port's last
/// source in the shared return table.
const LEARN_REFRESH_NS: u64 = 10_000_000;
/// Flowlet table entries per worker (sets of [`FLOWLET_WAYS`]).
const FLOWLETS: usize = 4096;
const FLOWLET_WAYS: usize = 4;
/// ARP replies one worker copies to the routers per INTERVAL: each is
/// multiplied by the number of routers, so a host flooding ARP replies is
/// held to this.
const ARP_BUDGET: u32 = 256;

/// What every worker's instance shares.
#[derive(Debug)]
struct Shared {
    /// Global number of each front port, in input order.
    fronts: Vec<u8>,
    front_macs: Option<Vec<[u8; 6]>>,
    /// The same, as the low 48 bits of little-endian words.
    front_macs_le: Option<Vec<u64>>,
    routers: usize,
    balancer: u8,
    back_macs: Vec<[u8; 6]>,
    /// Destination MAC of router `r` for front input `i`: `[i * routers + r]`.
    labels: Vec<[u8; 6]>,
    policy: AtomicU8,
    delta_ns: AtomicU64,
    interval_ns: u64,
    /// A router is down after this long without a reply.
    dead_ns: u64,
    returns: MacTable,
    /// When each router was last heard (router clock, ns; 0: never).
    last_heard: Vec<AtomicU64>,
    /// The balancing set, a bitmap.
    live: [AtomicU64; 4],
    /// Moves whenever `live` changes.
    generation: AtomicU64,
}

impl Shared {
    #[inline]
    fn label(&self, front: usize, router: u8) -> [u8; 6] {
        self.labels[front * self.routers + usize::from(router)]
    }

    fn is_live(&self, r: u8) -> bool {
        self.live[usize::from(r >> 6)].load(Relaxed) & (1 << (r & 63)) != 0
    }

    /// Puts router `r` in the balancing set; whether it was out.
    fn set_up(&self, r: u8) -> bool {
        let bit = 1u64 << (r & 63);
        let prev = self.live[usize::from(r >> 6)].fetch_or(bit, AcqRel);
        if prev & bit == 0 {
            self.generation.fetch_add(1, AcqRel);
            return true;
        }
        false
    }

    /// Takes router `r` out of the balancing set; whether it was in.
    fn set_down(&self, r: u8) -> bool {
        let bit = 1u64 << (r & 63);
        let prev = self.live[usize::from(r >> 6)].fetch_and(!bit, AcqRel);
        if prev & bit != 0 {
            self.generation.fetch_add(1, AcqRel);
            return true;
        }
        false
    }
}

fn mac_list(text: &str, key: &str) -> Result<Vec<[u8; 6]>, ArgError> {
    text.split_whitespace()
        .map(|w| {
            EthernetAddress::from_arg(w)
                .map(|a| a.0)
                .map_err(|e| ArgError::new(format!("{key}: bad Ethernet address: {e}")))
        })
        .collect()
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let front: String = args.read_m("FRONT")?;
    let routers: usize = args.read_m("ROUTERS")?;
    let balancer: u8 = args.read("BALANCER")?.unwrap_or(0);
    let backs: usize = args.read("BACKS")?.unwrap_or(1);
    let policy: Policy = args.read("POLICY")?.unwrap_or(Policy::RoundRobin);
    let delta: Duration = args.read("DELTA")?.unwrap_or(Duration::from_millis(50));
    let interval: Duration = args.read("INTERVAL")?.unwrap_or(Duration::from_millis(50));
    let misses: u32 = args.read("MISSES")?.unwrap_or(3);
    let capacity: usize = args.read("RETURN_CAPACITY")?.unwrap_or(4096);
    let move_after: Duration = args.read("MOVE_AFTER")?.unwrap_or(Duration::from_secs(1));
    let back_mac: Option<String> = args.read("BACK_MAC")?;
    let front_mac: Option<String> = args.read("FRONT_MAC")?;

    let fronts = parse_u8_list(&front, "FRONT").map_err(ArgError::new)?;
    if fronts.is_empty() {
        return Err(ArgError::new("FRONT names no front port"));
    }
    if let Some(&k) = fronts.iter().find(|&&k| k == 255) {
        return Err(ArgError::new(format!(
            "FRONT {k}: front ports are numbered 0 to 254"
        )));
    }
    for (n, k) in fronts.iter().enumerate() {
        if fronts[..n].contains(k) {
            return Err(ArgError::new(format!("FRONT names port {k} twice")));
        }
    }
    if !(1..=255).contains(&routers) {
        return Err(ArgError::new(format!(
            "ROUTERS {routers}: from 1 to 255 routers"
        )));
    }
    if !(1..=255).contains(&backs) {
        return Err(ArgError::new(format!(
            "BACKS {backs}: from 1 to 255 back ports"
        )));
    }
    if delta.is_zero() || interval.is_zero() {
        return Err(ArgError::new("DELTA and INTERVAL must be more than 0"));
    }
    if misses == 0 {
        return Err(ArgError::new("MISSES must be 1 or more"));
    }
    if capacity == 0 || capacity > MAX_CAPACITY {
        return Err(ArgError::new(format!(
            "RETURN_CAPACITY {capacity}: from 1 to {MAX_CAPACITY}"
        )));
    }
    let back_macs = match back_mac {
        Some(t) => {
            let m = mac_list(&t, "BACK_MAC")?;
            if m.len() != backs {
                return Err(ArgError::new(format!(
                    "BACK_MAC gives {} addresses for {backs} back ports",
                    m.len()
                )));
            }
            m
        }
        None => (0..backs)
            .map(|j| super::balancer_mac(balancer, j as u8))
            .collect(),
    };
    if let Some(m) = back_macs.iter().find(|m| m[0] & 1 != 0) {
        return Err(ArgError::new(format!(
            "BACK_MAC {}: a group address",
            mac_text(m)
        )));
    }
    let front_macs = match front_mac {
        Some(t) => {
            let m = mac_list(&t, "FRONT_MAC")?;
            if m.len() != fronts.len() {
                return Err(ArgError::new(format!(
                    "FRONT_MAC gives {} addresses for {} front ports",
                    m.len(),
                    fronts.len()
                )));
            }
            if let Some(m) = m.iter().find(|m| m[0] & 1 != 0 || is_internal(&m[..])) {
                return Err(ArgError::new(format!(
                    "FRONT_MAC {}: a group or internal address",
                    mac_text(m)
                )));
            }
            Some(m)
        }
        None => None,
    };
    let nf = fronts.len();
    if ports.ninputs() != nf + 1 || ports.noutputs() != nf + backs {
        return Err(ArgError::new(format!(
            "with {nf} front and {backs} back ports L2Balancer has {} inputs (front ports, \
             then the back) and {} outputs (front ports, then back ports), not {} and {}",
            nf + 1,
            nf + backs,
            ports.ninputs(),
            ports.noutputs()
        )));
    }
    let sh = args.shared(|_| {
        let labels = fronts
            .iter()
            .flat_map(|&k| (0..routers).map(move |r| router_mac(r as u8, k)))
            .collect();
        let interval_ns = interval.as_nanos().min(u128::from(u64::MAX / 1024)) as u64;
        Ok(Shared {
            fronts: fronts.clone(),
            front_macs_le: front_macs
                .as_ref()
                .map(|m| m.iter().map(mac_le48).collect()),
            front_macs,
            routers,
            balancer,
            back_macs,
            labels,
            policy: AtomicU8::new(policy as u8),
            delta_ns: AtomicU64::new(delta.as_nanos().min(u128::from(u64::MAX)) as u64),
            interval_ns,
            dead_ns: interval_ns.saturating_mul(u64::from(misses)),
            returns: MacTable::new(
                capacity,
                move_after.as_millis().min(u128::from(u64::MAX)) as u64,
            ),
            last_heard: (0..routers).map(|_| AtomicU64::new(0)).collect(),
            live: Default::default(),
            generation: AtomicU64::new(0),
        })
    })?;
    Ok(Box::new(L2Balancer::new(sh)))
}

/// A flowlet: the router the last packets of a flow went to.
#[derive(Debug, Clone, Copy, Default)]
struct Flowlet {
    /// Flow hash (never 0); 0: empty.
    hash: u32,
    router: u8,
    last: u64,
}

#[derive(Debug, Default)]
struct Counts {
    returned: u64,
    unknown_return: u64,
    replicated: u64,
    arp_to_routers: u64,
    arp_limited: u64,
    spoofed: u64,
    no_router: u64,
    probes: u64,
    replies: u64,
    other_probe: u64,
    router_down: u64,
    router_up: u64,
    other_host: u64,
    front_broadcast: u64,
    other_type: u64,
    runt: u64,
    bad_source: u64,
    station_moves: u64,
    station_refused: u64,
    return_evictions: u64,
}

/// One worker's instance.
pub struct L2Balancer {
    sh: Arc<Shared>,
    w: Worker,
    /// Each front frame's verdict, kept between batches so that a batch
    /// the fast path takes whole never initialises it.
    ports: Box<[u16; MAX_BATCH]>,
}

/// Per-worker state.
struct Worker {
    name: String,
    first_worker: bool,
    /// The generation `live` was built from.
    generation: u64,
    /// Live routers, in index order.
    live: Vec<u8>,
    /// Frames the fast path balanced to each live router (by position in
    /// `live`), added to `to_router` when `live` changes.
    live_hits: Vec<u64>,
    /// Destination MAC of each (front input, live router), as the low 48
    /// bits of a little-endian word: `[i * live.len() + x]`.
    live_labels: Vec<u64>,
    /// Next position in `live` (round robin).
    rr: usize,
    /// Next back port (DTX-n).
    back_rr: usize,
    nfronts: usize,
    nbacks: usize,
    flowlets: Box<[Flowlet]>,
    /// Per front input: the last source learnt (as [`mac_le48`] gives it)
    /// and until when it need not be learnt again.
    learnt: Vec<(u64, u64)>,
    arp_budget: u32,
    arp_window_end: u64,
    probe_seq: u32,
    last_timer: u64,
    c: Counts,
    to_router: Vec<u64>,
    to_back: Vec<u64>,
    /// Frames the fast path took (so tests see that it does).
    #[cfg(test)]
    fast_hits: u64,
}

impl L2Balancer {
    fn new(sh: Arc<Shared>) -> L2Balancer {
        let nfronts = sh.fronts.len();
        let nbacks = sh.back_macs.len();
        let w = Worker {
            name: String::new(),
            first_worker: true,
            generation: u64::MAX,
            live: Vec::with_capacity(sh.routers),
            live_hits: Vec::with_capacity(sh.routers),
            live_labels: Vec::with_capacity(sh.routers * nfronts),
            rr: 0,
            back_rr: 0,
            nfronts,
            nbacks,
            flowlets: vec![Flowlet::default(); FLOWLETS].into_boxed_slice(),
            learnt: vec![(u64::MAX, 0); nfronts],
            arp_budget: ARP_BUDGET,
            arp_window_end: 0,
            probe_seq: 0,
            last_timer: 0,
            c: Counts::default(),
            to_router: vec![0; sh.routers],
            to_back: vec![0; nbacks],
            #[cfg(test)]
            fast_hits: 0,
        };
        L2Balancer {
            sh,
            w,
            ports: Box::new([0; MAX_BATCH]),
        }
    }
}

/// The fast path over `pkts[k..]`: while frames are IPv4 for the front
/// port's MAC (`want_dst`, or with `BY_MAC` false any unicast, non-internal
/// MAC the packet type calls this host's) and their source and type are
/// `want_b` (the 8 bytes at offset 6, little-endian), each gets the label
/// of live position `x` (`labels`, round robin). Returns where it stopped
/// and the next position.
#[inline(always)]
fn fast_run<const BY_MAC: bool>(
    pkts: &mut [Packet],
    mut k: usize,
    labels: &[u64],
    mut x: usize,
    want_dst: u64,
    want_b: u64,
) -> (usize, usize) {
    let nlive = labels.len();
    while let Some(p) = pkts.get_mut(k) {
        let host = BY_MAC || p.anno().packet_type != PacketType::OtherHost;
        let Some(h) = p.data_mut().first_chunk_mut::<ETHER_LEN>() else {
            break;
        };
        let (Some(a), Some(b)) = (h.first_chunk::<8>(), h.last_chunk::<8>()) else {
            break;
        };
        let (a, b) = (u64::from_le_bytes(*a), u64::from_le_bytes(*b));
        let dst_ok = if BY_MAC {
            (a ^ want_dst) << 16 == 0
        } else {
            host && a & 1 == 0
                && a & 0xff_ffff != INTERNAL_ROUTER_LE
                && a & 0xff_ffff != INTERNAL_BALANCER_LE
        };
        if !dst_ok || b != want_b {
            break;
        }
        let Some(&label) = labels.get(x) else {
            break;
        };
        if let Some(w8) = h.first_chunk_mut::<8>() {
            *w8 = ((a & !MAC48) | label).to_le_bytes();
        }
        x = if x + 1 == nlive { 0 } else { x + 1 };
        k += 1;
    }
    (k, x)
}

/// A hash of an Ethernet frame's flow: the IPv4 5-tuple (addresses and
/// protocol for fragments and other protocols), else the source MAC.
/// Never 0.
#[inline]
fn frame_hash(d: &[u8]) -> u32 {
    let mut words = [0u32; 4];
    let ip = d.get(ETHER_LEN..).unwrap_or(&[]);
    if d.len() >= 14
        && d[12..14] == ETHERTYPE_IPV4.to_be_bytes()
        && ip.len() >= 20
        && ip[0] >> 4 == 4
    {
        let hl = usize::from(ip[0] & 0x0f) * 4;
        words[0] = u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]);
        words[1] = u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]);
        words[2] = u32::from(ip[9]);
        let first = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff == 0;
        if first && matches!(ip[9], 6 | 17 | 132) && hl >= 20 && ip.len() >= hl + 4 {
            words[3] = u32::from_be_bytes([ip[hl], ip[hl + 1], ip[hl + 2], ip[hl + 3]]);
        }
    } else if d.len() >= 12 {
        words[0] = u32::from_be_bytes([d[6], d[7], d[8], d[9]]);
        words[1] = u32::from(u16::from_be_bytes([d[10], d[11]]));
    }
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for w in words {
        h = (h ^ u64::from(w)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 32;
    }
    (h as u32) | 1
}

impl Worker {
    /// Rebuilds the list of live routers when the shared set changed.
    #[inline]
    fn refresh(&mut self, sh: &Shared) {
        let g = sh.generation.load(Acquire);
        if g == self.generation {
            return;
        }
        self.generation = g;
        for (x, &r) in self.live.iter().enumerate() {
            self.to_router[usize::from(r)] += std::mem::take(&mut self.live_hits[x]);
        }
        self.live.clear();
        for r in 0..sh.routers {
            if sh.is_live(r as u8) {
                self.live.push(r as u8);
            }
        }
        let n = self.live.len();
        self.live_hits.clear();
        self.live_hits.resize(n, 0);
        self.live_labels.clear();
        for i in 0..self.nfronts {
            for &r in &self.live {
                self.live_labels.push(mac_le48(&sh.label(i, r)));
            }
        }
        if self.rr >= n {
            self.rr = 0;
        }
    }

    /// Counts a run of `m` frames the fast path sent round robin from
    /// position `x0` of `live`: O(min(m, live)) rather than per frame.
    #[inline]
    fn credit_run(&mut self, x0: usize, m: usize) {
        let n = self.live_hits.len();
        if n == 0 {
            return;
        }
        let (full, rest) = ((m / n) as u64, m % n);
        if full > 0 {
            for h in self.live_hits.iter_mut() {
                *h += full;
            }
        }
        let mut x = x0 % n;
        for _ in 0..rest {
            self.live_hits[x] += 1;
            x = if x + 1 == n { 0 } else { x + 1 };
        }
    }

    /// Frames balanced to router `r` so far.
    fn balanced_to(&self, r: usize) -> u64 {
        let fast = match self.live.iter().position(|&l| usize::from(l) == r) {
            Some(x) => self.live_hits[x],
            None => 0,
        };
        self.to_router[r] + fast
    }

    /// The source a front input's frames may carry without being learnt
    /// again now (as [`mac_le48`] gives it), if any.
    #[inline]
    fn learnt_source(&self, i: usize, now: u64) -> Option<u64> {
        let (src, until) = self.learnt[i];
        (now < until).then_some(src)
    }

    #[inline(always)]
    fn next_rr(&mut self) -> u8 {
        let x = self.rr;
        self.rr = if x + 1 >= self.live.len() { 0 } else { x + 1 };
        self.live[x]
    }

    #[inline(always)]
    fn next_back(&mut self) -> usize {
        let j = self.back_rr;
        self.back_rr = if j + 1 >= self.nbacks { 0 } else { j + 1 };
        self.to_back[j] += 1;
        self.nfronts + j
    }

    /// Records `src` as seen on front input `i`; at most once per
    /// [`LEARN_REFRESH_NS`] for a port's usual sender.
    #[inline(always)]
    fn learn(&mut self, sh: &Shared, i: usize, src: &[u8; 6], now: u64) {
        // Cached as the fast path reads it: little-endian.
        let le = mac_le48(src);
        let cached = &mut self.learnt[i];
        if cached.0 == le && now < cached.1 {
            return;
        }
        *cached = (le, now.saturating_add(LEARN_REFRESH_NS));
        match sh.returns.learn(mac_u64(src), i as u16, now / 1_000_000) {
            Learnt::Known => {}
            Learnt::Inserted { evicted } => self.c.return_evictions += u64::from(evicted),
            Learnt::Moved => self.c.station_moves += 1,
            Learnt::Refused => self.c.station_refused += 1,
        }
    }

    /// The verdict on a frame from front input `i`: a back output,
    /// [`DROP`] or [`SPECIAL`] (an ARP reply for every router).
    #[inline(always)]
    fn front_one(
        &mut self,
        sh: &Shared,
        i: usize,
        p: &mut Packet,
        now: u64,
        policy: Policy,
    ) -> u16 {
        let Some(h) = p.data().first_chunk::<ETHER_LEN>() else {
            self.c.runt += 1;
            return DROP;
        };
        let ethertype = u16::from_be_bytes([h[12], h[13]]);
        if is_internal(&h[0..3]) || is_internal(&h[6..9]) || ethertype == ETHERTYPE_PROBE {
            self.c.spoofed += 1;
            return DROP;
        }
        if h[6] & 1 != 0 {
            self.c.bad_source += 1;
            return DROP;
        }
        let src = [h[6], h[7], h[8], h[9], h[10], h[11]];
        let group = h[0] & 1 != 0;
        let for_us = match &sh.front_macs {
            Some(m) => h[..6] == m[i],
            None => p.anno().packet_type != PacketType::OtherHost,
        };
        let arp_reply = ethertype == ETHERTYPE_ARP && p.data().get(20..22) == Some(&[0u8, 2][..]);
        self.learn(sh, i, &src, now);
        if group {
            self.c.front_broadcast += 1;
            return DROP;
        }
        if !for_us {
            self.c.other_host += 1;
            return DROP;
        }
        if ethertype != ETHERTYPE_IPV4 && ethertype != ETHERTYPE_ARP {
            self.c.other_type += 1;
            return DROP;
        }
        if self.live.is_empty() {
            self.c.no_router += 1;
            return DROP;
        }
        if arp_reply {
            return SPECIAL;
        }
        let r = match policy {
            Policy::RoundRobin => self.next_rr(),
            Policy::Flow => self.by_hash(frame_hash(p.data())),
            Policy::Flowlet => self.flowlet(sh, frame_hash(p.data()), now),
        };
        let label = sh.label(i, r);
        if let Some(d) = p.data_mut().first_chunk_mut::<6>() {
            *d = label;
        }
        self.to_router[usize::from(r)] += 1;
        if self.nbacks == 1 {
            self.to_back[0] += 1;
            self.nfronts as u16
        } else {
            self.next_back() as u16
        }
    }

    /// Flow policy: the router the hash names among all routers while it
    /// lives (so flows on live routers stay put when another dies), else
    /// one of the live routers by the hash.
    #[inline]
    fn by_hash(&self, h: u32) -> u8 {
        let all = self.to_router.len() as u64;
        let r = ((u64::from(h) * all) >> 32) as u8;
        if self.live.binary_search(&r).is_ok() {
            return r;
        }
        let n = self.live.len() as u64;
        self.live[((u64::from(h.rotate_left(16)) * n) >> 32) as usize]
    }

    /// Flowlet policy: the flow's router while its packets are less than
    /// DELTA apart and the router lives, else the next in round robin.
    #[inline]
    fn flowlet(&mut self, sh: &Shared, h: u32, now: u64) -> u8 {
        let delta = sh.delta_ns.load(Relaxed);
        let sets = FLOWLETS / FLOWLET_WAYS;
        let set = (h.wrapping_mul(0x9e37_79b1) >> (32 - sets.trailing_zeros())) as usize;
        let base = set * FLOWLET_WAYS;
        let ways = &self.flowlets[base..base + FLOWLET_WAYS];
        let slot = match ways.iter().position(|f| f.hash == h) {
            Some(w) => base + w,
            None => base + (0..FLOWLET_WAYS).min_by_key(|&w| ways[w].last).unwrap_or(0),
        };
        let f = self.flowlets[slot];
        let router = if f.hash == h
            && now.saturating_sub(f.last) <= delta
            && self.live.binary_search(&f.router).is_ok()
        {
            f.router
        } else {
            self.next_rr()
        };
        self.flowlets[slot] = Flowlet {
            hash: h,
            router,
            last: now,
        };
        router
    }

    /// An ARP reply from outside on front input `i`: a copy to every live
    /// router.
    fn arp_to_routers(&mut self, sh: &Shared, i: usize, p: Packet, now: u64, cx: &mut Context<'_>) {
        if now >= self.arp_window_end {
            self.arp_window_end = now.saturating_add(sh.interval_ns);
            self.arp_budget = ARP_BUDGET;
        }
        if self.arp_budget == 0 {
            self.c.arp_limited += 1;
            return;
        }
        self.arp_budget -= 1;
        let n = self.live.len();
        if n == 0 {
            self.c.no_router += 1;
            return;
        }
        self.c.arp_to_routers += 1;
        let mut p = Some(p);
        for k in 0..n {
            let r = self.live[k];
            let mut q = if k + 1 == n {
                match p.take() {
                    Some(q) => q,
                    None => return,
                }
            } else {
                match &p {
                    Some(p) => p.duplicate(),
                    None => return,
                }
            };
            if let Some(d) = q.data_mut().first_chunk_mut::<6>() {
                *d = sh.label(i, r);
            }
            let out = self.next_back();
            cx.push_one(out, q);
        }
    }

    /// The verdict on a frame from the back: a front output, [`DROP`] or
    /// [`SPECIAL`] (a broadcast for the front ports).
    #[inline]
    fn back_one(&mut self, sh: &Shared, p: &Packet, now: u64) -> u16 {
        let d = p.data();
        let Some(h) = d.first_chunk::<ETHER_LEN>() else {
            self.c.runt += 1;
            return DROP;
        };
        if h[12..14] == ETHERTYPE_PROBE.to_be_bytes() {
            self.reply(sh, d, now);
            return DROP;
        }
        if h[0] & 1 != 0 {
            return SPECIAL;
        }
        match sh.returns.lookup(mac_u64(&h[..6])) {
            Some(e) if usize::from(e.port) < self.nfronts => {
                self.c.returned += 1;
                e.port
            }
            _ => {
                self.c.unknown_return += 1;
                DROP
            }
        }
    }

    /// A 0x88B7 frame from the back: a router's reply, or not for us.
    fn reply(&mut self, sh: &Shared, d: &[u8], now: u64) {
        let Some(pr) = Probe::parse(&d[ETHER_LEN..]) else {
            self.c.other_probe += 1;
            return;
        };
        if pr.kind != ProbeKind::Reply
            || pr.balancer != sh.balancer
            || usize::from(pr.router) >= sh.routers
            || d[6..12] != router_mac(pr.router, pr.front)
            || !sh.back_macs.iter().any(|m| d[..6] == *m)
        {
            self.c.other_probe += 1;
            return;
        }
        self.c.replies += 1;
        let r = pr.router;
        sh.last_heard[usize::from(r)].store(now.max(1), Relaxed);
        if !sh.is_live(r) && sh.set_up(r) {
            self.c.router_up += 1;
            eprintln!("{}: router {r} up", self.name);
        }
    }

    /// A broadcast or multicast frame from the back: out of every front
    /// port (or of the one whose MAC is its source).
    fn broadcast(&mut self, sh: &Shared, p: Packet, cx: &mut Context<'_>) {
        self.c.replicated += 1;
        if let Some(macs) = &sh.front_macs {
            if let Some(i) = macs
                .iter()
                .position(|m| p.data().get(6..12) == Some(&m[..]))
            {
                cx.push_one(i, p);
                return;
            }
        }
        let n = self.nfronts;
        for i in 0..n - 1 {
            cx.push_one(i, p.duplicate());
        }
        cx.push_one(n - 1, p);
    }

    /// The first worker's timer: routers not heard from leave the set.
    fn check_liveness(&mut self, sh: &Shared, now: u64) {
        for r in 0..sh.routers {
            let r = r as u8;
            if !sh.is_live(r) {
                continue;
            }
            let last = sh.last_heard[usize::from(r)].load(Relaxed);
            if now.saturating_sub(last) <= sh.dead_ns {
                continue;
            }
            if sh.set_down(r) {
                // A reply may have landed on another worker between the
                // two reads: then the router stays.
                let again = sh.last_heard[usize::from(r)].load(Relaxed);
                if now.saturating_sub(again) <= sh.dead_ns {
                    sh.set_up(r);
                    continue;
                }
                self.c.router_down += 1;
                eprintln!(
                    "{}: router {r} down (no reply for {} ms)",
                    self.name,
                    now.saturating_sub(last) / 1_000_000
                );
            }
        }
    }

    /// One probe to every router, from the back ports in turn.
    fn send_probes(&mut self, sh: &Shared, cx: &mut Context<'_>) {
        let seq = self.probe_seq;
        self.probe_seq = seq.wrapping_add(1);
        let mut out = Batch::new();
        for j in 0..self.nbacks {
            for r in 0..sh.routers {
                if (r + seq as usize) % self.nbacks != j {
                    continue;
                }
                let probe = Probe {
                    kind: ProbeKind::Probe,
                    balancer: sh.balancer,
                    router: r as u8,
                    front: 0,
                    seq,
                };
                let frame = probe.frame(router_mac(r as u8, 0), sh.back_macs[j]);
                if let Ok(p) = Packet::from_slice(&frame) {
                    self.c.probes += 1;
                    self.to_back[j] += 1;
                    let _ = out.push(p);
                }
            }
            cx.push(self.nfronts + j, &mut out);
        }
    }
}

impl L2Balancer {
    fn front(&mut self, i: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let sh = &*self.sh;
        let w = &mut self.w;
        let now = cx.now().0;
        w.refresh(sh);
        let policy = Policy::from_u8(sh.policy.load(Relaxed));
        let n = batch.len();
        if n == 0 {
            return;
        }
        let back0 = w.nfronts as u16;
        // The fast path (DTX, round robin): runs of IPv4 frames for the
        // front port's MAC from the source this port learnt last (so
        // already vetted) get their label in one 8-byte store each, and
        // are counted per run; any other frame takes `front_one`.
        let fast = policy == Policy::RoundRobin && w.nbacks == 1 && !w.live.is_empty();
        let nlive = w.live.len();
        let want_dst = sh.front_macs_le.as_ref().map(|m| m[i]);
        let mut src_ok = w.learnt_source(i, now);
        let ports = &mut self.ports[..];
        let mut differ = 0u16;
        let mut fast_count = 0u64;
        let pkts = batch.as_mut_slice();
        let mut k = 0;
        while k < n {
            if let (true, Some(src)) = (fast, src_ok) {
                let labels = &w.live_labels[i * nlive..(i + 1) * nlive];
                let x0 = w.rr;
                // The whole 8 bytes after the destination: the learnt
                // source and type IPv4.
                let want_b = src | IPV4_LE << 48;
                let (end, x) = match want_dst {
                    Some(f) => fast_run::<true>(pkts, k, labels, x0, f, want_b),
                    None => fast_run::<false>(pkts, k, labels, x0, 0, want_b),
                };
                let m = end - k;
                if m > 0 {
                    ports[k..end].fill(back0);
                    w.rr = x;
                    w.credit_run(x0, m);
                    fast_count += m as u64;
                    k = end;
                }
                if k == n {
                    break;
                }
            }
            let Some(p) = pkts.get_mut(k) else {
                break;
            };
            let port = w.front_one(sh, i, p, now, policy);
            ports[k] = port;
            differ |= port ^ back0;
            src_ok = w.learnt_source(i, now);
            k += 1;
        }
        w.to_back[0] += fast_count;
        #[cfg(test)]
        {
            w.fast_hits += fast_count;
        }
        if differ == 0 {
            cx.push(usize::from(back0), batch);
            return;
        }
        if ports[..n].iter().all(|&p| p == DROP) {
            batch.clear();
            return;
        }
        scatter(batch, &ports[..n], cx, |p, cx| {
            w.arp_to_routers(sh, i, p, now, cx)
        });
    }

    fn back(&mut self, batch: &mut Batch, cx: &mut Context<'_>) {
        let sh = &*self.sh;
        let w = &mut self.w;
        if w.name.is_empty() {
            // For the messages (an instance that was never started).
            w.name = cx.name().to_string();
        }
        let now = cx.now().0;
        let mut ports = [0u16; MAX_BATCH];
        let n = batch.len();
        let mut differ = 0u16;
        let mut first = None;
        for (slot, p) in ports.iter_mut().zip(batch.iter()) {
            let port = w.back_one(sh, p, now);
            *slot = port;
            let f = *first.get_or_insert(port);
            differ |= port ^ f;
        }
        match first {
            None => return,
            Some(DROP) if differ == 0 => {
                batch.clear();
                return;
            }
            Some(port) if differ == 0 && port != SPECIAL => {
                cx.push(usize::from(port), batch);
                return;
            }
            _ => {}
        }
        scatter(batch, &ports[..n], cx, |p, cx| w.broadcast(sh, p, cx));
    }
}

impl Element for L2Balancer {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.w.name = cx.name().to_string();
        self.w.first_worker = cx.worker() == 0;
        // Workers start their rotations apart.
        self.w.rr = cx.worker();
        self.w.back_rr = cx.worker() % self.w.nbacks;
        if self.w.first_worker {
            cx.schedule_at(cx.now());
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        let sh = &*self.sh;
        let w = &mut self.w;
        if w.name.is_empty() {
            w.name = cx.name().to_string();
        }
        let now = cx.now().0;
        // After a stall of the balancer itself (descheduled, stopped), the
        // replies waiting in its queues are read before anyone is judged.
        let stalled = w.last_timer != 0 && now.saturating_sub(w.last_timer) > 2 * sh.interval_ns;
        w.last_timer = now;
        if !stalled {
            w.check_liveness(sh, now);
        }
        w.send_probes(sh, cx);
        cx.schedule_at(Timestamp(now.saturating_add(sh.interval_ns)));
    }

    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if port < self.w.nfronts {
            self.front(port, batch, cx);
        } else {
            self.back(batch, cx);
        }
    }

    fn stats(&self, s: &mut Stats) {
        let w = &self.w;
        let c = &w.c;
        let per: Vec<u64> = (0..w.to_router.len()).map(|r| w.balanced_to(r)).collect();
        s.counter("balanced", per.iter().sum());
        for (r, n) in per.iter().enumerate() {
            s.counter(format!("to_router{r}"), *n);
        }
        for (j, n) in w.to_back.iter().enumerate() {
            s.counter(format!("to_back{j}"), *n);
        }
        s.counter("returned", c.returned);
        s.counter("unknown_return", c.unknown_return);
        s.counter("replicated", c.replicated);
        s.counter("arp_to_routers", c.arp_to_routers);
        s.counter("arp_limited", c.arp_limited);
        s.counter("spoofed", c.spoofed);
        s.counter("no_router", c.no_router);
        s.counter("probes", c.probes);
        s.counter("replies", c.replies);
        s.counter("other_probe", c.other_probe);
        s.counter("router_down", c.router_down);
        s.counter("router_up", c.router_up);
        s.counter("other_host", c.other_host);
        s.counter("front_broadcast", c.front_broadcast);
        s.counter("other_type", c.other_type);
        s.counter("runt", c.runt);
        s.counter("bad_source", c.bad_source);
        s.counter("station_moves", c.station_moves);
        s.counter("station_refused", c.station_refused);
        s.counter("return_evictions", c.return_evictions);
        #[cfg(test)]
        s.counter("fast_hits", w.fast_hits);
        if w.first_worker {
            let sh = &self.sh;
            let live = (0..sh.routers).filter(|&r| sh.is_live(r as u8)).count();
            s.counter("live", live as u64);
            s.counter("return_entries", sh.returns.len() as u64);
        }
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        matches!(handler, "policy" | "delta")
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "policy" => {
                let p = Policy::from_arg(value.trim())
                    .map_err(|e| format!("policy: expected rr, flow or flowlet, {e}"))?;
                self.sh.policy.store(p as u8, Relaxed);
                Ok(())
            }
            "delta" => {
                let d = Duration::from_arg(value.trim()).map_err(|e| format!("delta: {e}"))?;
                if d.is_zero() {
                    return Err("delta must be more than 0".into());
                }
                self.sh
                    .delta_ns
                    .store(d.as_nanos().min(u128::from(u64::MAX)) as u64, Relaxed);
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (L2Balancer has policy and delta)"
            )),
        }
    }
}

#[cfg(test)]
mod tests;
