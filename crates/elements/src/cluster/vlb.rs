//! `VLBNode`: one server of a RouteBricks cluster (SOSP 2009 §3.2, §6.1).
//!
//! As the input node of a packet it looks the destination up in the
//! routing table the cluster shares, which names the output node and
//! port, and sends the packet across the cluster with Direct Valiant Load
//! Balancing: directly to the output node while this node's traffic for it
//! stays within R/N, through the least-loaded live intermediate node
//! otherwise. The choice is made per flowlet (packets of a flow less than
//! delta apart follow the first one's path), or per packet with flowlets
//! off. The label in the destination MAC says where the packet goes, so
//! intermediate and output nodes forward it by that alone (no IP parsing);
//! the output node takes the label off and hands the packet to the port's
//! ARPQuerier with the next hop in the destination annotation.
//!
//! Liveness: every `hello_interval` the first worker sends a hello on
//! each internal link, listing the peers it hears; a link without a hello
//! for `hello_misses` intervals is down. Those intervals are counted on
//! the node's own running time: a node that stalls (stopped, descheduled
//! on a loaded machine) finds its peers' hellos waiting in its queues when
//! it resumes, and the stall is no sign that they died. So the hellos of a
//! batch are read before its other frames are forwarded, and a gap of more
//! than one interval between two moments the node ran counts as one
//! interval. A node stops using an
//! intermediate whose link is down or that no longer hears the output, and
//! sends directly only over a live shortest path; what cannot be delivered
//! is dropped and counted, never sent round in circles (the hop count in
//! the shim is a last guard).
//!
//! State: the cluster, the route table and the links' liveness are shared
//! by every worker (liveness in atomics: a hello is read by whichever
//! worker its queue belongs to); flowlets, rate windows, sequence numbers
//! and counters are per worker. Each worker refreshes its view of the
//! links once a millisecond, so per-packet decisions read only its own
//! memory.

use crate::route::table::flow_hash;
use bricks_cluster::label::{
    Dst, Hello, Shim, ETHERTYPE_DATA, ETHERTYPE_HELLO, FLAG_BALANCED, HEADER_LEN, HELLO_LEN,
    MAX_HOPS, NONE, SHIM_LEN,
};
use bricks_cluster::model::LinkEnd;
use bricks_cluster::units::parse_duration;
use bricks_cluster::{Cluster, NodeId};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_lpm::{Dir24_8, Lpm4, NextHop, Prefix4};
use bricks_packet::Timestamp;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// The `VLBNode` class.
pub static CLASS: ElementClass = ElementClass {
    name: "VLBNode",
    ports: "1-/1-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "one server of a RouteBricks cluster: Direct VLB with flowlets, labels, liveness",
    synopsis: "VLBNode(FILE, NODE)",
    description: "Reads the cluster file FILE (see `bricks cluster check`) and acts as its \
        node NODE. With L internal links and P external ports (their order in the file), \
        input 0 takes IPv4 packets that entered the cluster here, after the input \
        processing (header checks, TTL) and with the destination annotation set; inputs \
        1..=L take every frame of internal link 1..=L. Outputs 0..L-1 send labelled frames \
        and hellos on the internal links; output L+p sends IPv4 packets out of external \
        port p, with the next hop in the destination annotation (for ARPQuerier); output \
        L+P, if connected, takes packets without a route (for ICMPError). \
        \n\nInput node: the shared route table gives the output node and port; the \
        packet gets a 26-byte label (destination MAC 02:ID:OUTPUT:PORT:INTERMEDIATE:00, \
        EtherType 0x88B5, a 12-byte shim with input node, hops left, next hop, flow tag \
        and sequence number). Direct VLB (RouteBricks 3.2): directly to the output node \
        while this node's direct traffic to it stays under R/N (rate from the file, N \
        the I/O nodes; measured over 10 ms windows, split among workers), else through \
        the live intermediate node that carried the fewest bytes in the window. With \
        flowlets on, the choice holds for every packet of a flow less than \
        flowlet_delta after the previous one (a flowlet changes path only when its path \
        dies), so the share is enforced as flowlets start: a long flowlet keeps the path \
        it started on. \
        \n\nIntermediate and output nodes read only the label: an intermediate clears \
        its byte and sends the frame on towards the output node; the output node \
        counts the packet reordered when its sequence number is below one already seen \
        for its (input node, flow tag), takes the label off and sends the packet out of \
        its port. Frames on internal links that are not the cluster's, or name an \
        output node or port that does not exist, are dropped and counted; so are packets \
        for an output node that cannot be reached (dead_output) and frames that ran out \
        of hops. \
        \n\nLiveness (BFD-like): every hello_interval the first worker sends each peer a \
        hello listing the peers it hears; a link is down after hello_misses intervals \
        without one (printed on standard error, as is its return). The intervals are \
        counted while the node runs: after a stall (SIGSTOP, a loaded machine) the hellos \
        waiting in its queues are read before it judges, and the stall beyond one \
        interval does not count against its peers. An intermediate is \
        used only while its link is up and it hears the output node.",
    ports: "input 0: IPv4 from this node's external ports (push); inputs 1..=L: frames \
        of the internal links (push); outputs 0..L-1: internal links; L..L+P-1: external \
        ports (IPv4); L+P: no route (optional)",
    keywords: &[
        Keyword {
            name: "FILE",
            ty: "path",
            default: None,
            doc: "the cluster file (TOML): nodes, ports, links, routes, rates, timing",
        },
        Keyword {
            name: "NODE",
            ty: "string",
            default: None,
            doc: "this node's name in the file",
        },
    ],
    counters: &[
        (
            "direct",
            "packets from outside sent straight to their output node",
        ),
        (
            "balanced",
            "packets from outside sent through an intermediate node",
        ),
        (
            "local",
            "packets from outside that leave by one of this node's own ports",
        ),
        (
            "forwarded",
            "labelled frames passed on as intermediate (transit)",
        ),
        (
            "delivered",
            "labelled frames that left by this node's ports",
        ),
        (
            "reordered",
            "delivered packets older than one already delivered of their flow",
        ),
        ("no_route", "packets from outside without a route"),
        (
            "not_ipv4",
            "packets from outside that are not IPv4 (IPv6 does not cross the cluster), dropped",
        ),
        (
            "dead_output",
            "packets for an output node that cannot be reached now, dropped",
        ),
        (
            "unknown_output",
            "frames naming an output node, port or intermediate that does not exist, dropped",
        ),
        (
            "hop_limit",
            "frames that ran out of hops (a loop guard), dropped",
        ),
        (
            "foreign",
            "frames on internal links that are not this cluster's, dropped",
        ),
        ("no_room", "packets without headroom for the label, dropped"),
        (
            "hellos_in, hellos_out",
            "liveness messages received and sent",
        ),
        (
            "link IFACE packets, bytes, received, up",
            "per internal link: frames and bytes sent, frames received, 1 while up \
             (reported by the first worker)",
        ),
        (
            "to NODE direct, balanced",
            "per output node: packets sent directly and through intermediates",
        ),
    ],
    example: "// n1 of RB4 (3 links, 1 port); `bricks cluster config conf/cluster/rb4.toml n1`\n\
        // prints the whole node, devices and IPv4 input processing included.\n\
        vlb :: VLBNode(FILE conf/cluster/rb4.toml, NODE n1);\n\
        Idle -> [0]vlb; Idle -> [1]vlb; Idle -> [2]vlb; Idle -> [3]vlb;\n\
        vlb[0] -> Discard; vlb[1] -> Discard; vlb[2] -> Discard;\n\
        vlb[3] -> Discard; vlb[4] -> Discard;",
    see_also: &["ARPQuerier", "StaticIPLookup", "ICMPError"],
};

/// Width of the windows Direct VLB measures each destination's direct
/// rate over.
const WINDOW_NS: u64 = 10_000_000;
/// How often a worker refreshes its view of the links.
const REFRESH_NS: u64 = 1_000_000;
/// Flowlet table entries per worker: sets of [`WAYS`] found by flow hash,
/// the least recently used entry of a set replaced. A flow that loses its
/// entry starts a new flowlet, which may reorder it: four ways keep that
/// rare while fewer than a few thousand flows are active per worker.
const FLOWLETS: usize = 4096;
const WAYS: usize = 4;
/// Reorder-tracking entries per input node on an output node.
const ORDER_SLOTS: usize = 4096;

/// Where a route sends packets.
#[derive(Debug, Clone, Copy)]
struct Target {
    node: NodeId,
    port: u8,
    /// The next hop; `None`: the destination itself.
    gateway: Option<Ipv4Addr>,
}

/// A link's liveness as every worker sees it.
#[derive(Debug, Default)]
struct LinkLive {
    /// When the last hello arrived, on the node's running clock
    /// ([`Shared::running`]); 0: never.
    last_hello: AtomicU64,
    /// The peers the other end said it hears, in its last hello.
    hears: [AtomicU64; 4],
}

/// What every worker's instance shares.
#[derive(Debug)]
struct Shared {
    cluster: Cluster,
    me: NodeId,
    ends: Vec<LinkEnd>,
    /// External ports of every node.
    ports_of: Vec<u8>,
    /// Topological neighbours of every node, as bitmaps.
    adjacent: Vec<[u64; 4]>,
    /// Hops from this node to every node with every link up.
    static_hops: Vec<Option<u32>>,
    /// The cluster's route table (only on nodes with external ports).
    routes: Option<Dir24_8>,
    targets: Vec<Target>,
    live: Vec<LinkLive>,
    flowlets: AtomicBool,
    delta_ns: AtomicU64,
    hello_ns: u64,
    /// A link is down after this long without a hello, in running time.
    dead_ns: u64,
    /// The node's running time (ns): the router's clock less what exceeded
    /// one hello interval between two moments a worker ran this element.
    running: AtomicU64,
    /// The router's clock when `running` was last advanced; 0: never.
    seen: AtomicU64,
    /// Source MAC of frames sent on each link.
    src_macs: Vec<[u8; 6]>,
    /// Direct VLB's R/N, bytes per window for the whole node.
    share_per_window: u64,
}

fn bit(map: &[u64; 4], n: u8) -> bool {
    map[usize::from(n >> 6)] & (1 << (n & 63)) != 0
}

fn set_bit(map: &mut [u64; 4], n: u8) {
    map[usize::from(n >> 6)] |= 1 << (n & 63);
}

impl Shared {
    fn open(path: PathBuf, node: String) -> Result<Shared, ArgError> {
        let cluster =
            Cluster::load(&path).map_err(|e| ArgError::new(format!("{}: {e}", path.display())))?;
        let Some(me) = cluster.node_id(&node) else {
            let names: Vec<&str> = cluster.nodes.iter().map(|n| n.name.as_str()).collect();
            return Err(ArgError::new(format!(
                "{}: no node `{node}` (the nodes are {})",
                path.display(),
                names.join(", ")
            )));
        };
        let n = cluster.nodes.len();
        let ends = cluster.link_ends(me);
        let mut adjacent = vec![[0u64; 4]; n];
        for l in &cluster.links {
            set_bit(&mut adjacent[usize::from(l.a)], l.b);
            set_bit(&mut adjacent[usize::from(l.b)], l.a);
        }
        let static_hops = cluster.hop_counts(me, &|_| false);
        let ports_of = cluster.nodes.iter().map(|n| n.ports.len() as u8).collect();
        let targets: Vec<Target> = cluster
            .routes
            .iter()
            .map(|r| Target {
                node: r.node,
                port: r.port,
                gateway: r.gateway,
            })
            .collect();
        let routes = if cluster.nodes[usize::from(me)].ports.is_empty() {
            None
        } else {
            let table: Vec<(Prefix4, NextHop)> = cluster
                .routes
                .iter()
                .enumerate()
                .map(|(i, r)| (Prefix4::new(u32::from(r.prefix), r.len), NextHop(i as u32)))
                .collect();
            Some(
                Dir24_8::build(&table, Dir24_8::DEFAULT_MEMORY_BOUND)
                    .map_err(|e| ArgError::new(format!("{}: routes: {e}", path.display())))?,
            )
        };
        let src_macs = (0..ends.len())
            .map(|l| [0x02, cluster.id, me, 0xfe, l as u8, 0x02])
            .collect();
        let share_per_window =
            (cluster.direct_share_bps() as u128 * u128::from(WINDOW_NS) / 8_000_000_000) as u64;
        let hello_ns = cluster.hello_interval.as_nanos().max(1) as u64;
        Ok(Shared {
            live: (0..ends.len()).map(|_| LinkLive::default()).collect(),
            flowlets: AtomicBool::new(cluster.flowlets),
            delta_ns: AtomicU64::new(cluster.flowlet_delta.as_nanos() as u64),
            hello_ns,
            dead_ns: hello_ns * u64::from(cluster.hello_misses.max(1)),
            running: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            me,
            ends,
            ports_of,
            adjacent,
            static_hops,
            routes,
            targets,
            src_macs,
            share_per_window,
            cluster,
        })
    }

    /// The node's running time at router time `now`. Every worker
    /// advances it (the first one at least once per hello interval, from
    /// its timer); each stretch of the router's clock is counted once, and
    /// at most one hello interval of it: a longer stretch is time the node
    /// did not run, during which its peers' hellos queued up unread.
    fn running(&self, now: u64) -> u64 {
        let prev = self.seen.fetch_max(now, Relaxed);
        if prev == 0 || now <= prev {
            return self.running.load(Relaxed);
        }
        let step = (now - prev).min(self.hello_ns);
        self.running.fetch_add(step, Relaxed) + step
    }

    fn peer_name(&self, l: usize) -> &str {
        &self.cluster.nodes[usize::from(self.ends[l].peer)].name
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let path: PathBuf = args.read_mp("FILE")?;
    let node: String = args.read_mp("NODE")?;
    let sh = args.shared(|_| Shared::open(path, node))?;
    let links = sh.ends.len();
    let nports = usize::from(sh.ports_of[usize::from(sh.me)]);
    let name = &sh.cluster.nodes[usize::from(sh.me)].name;
    if ports.ninputs() != 1 + links {
        return Err(ArgError::new(format!(
            "node {name} has {links} internal links: VLBNode needs {} inputs (0: from its \
             external ports, 1..={links}: the links), not {}",
            1 + links,
            ports.ninputs()
        ))
        .with_help("`bricks cluster config FILE NODE` prints the whole node"));
    }
    let want = links + nports;
    if ports.noutputs() != want && ports.noutputs() != want + 1 {
        return Err(ArgError::new(format!(
            "node {name} has {links} internal links and {nports} external ports: VLBNode \
             needs {want} outputs (links, then ports) or {} (and no route), not {}",
            want + 1,
            ports.noutputs()
        ))
        .with_help("`bricks cluster config FILE NODE` prints the whole node"));
    }
    Ok(Box::new(VLBNode::new(sh)))
}

/// A worker's view of the links, refreshed once a millisecond.
#[derive(Debug, Clone)]
struct View {
    up: Vec<bool>,
    hears: Vec<[u64; 4]>,
    /// Per node: the link a shortest live path to it starts with, or
    /// [`NONE`] (itself, unreachable, or only by a detour).
    next: Vec<u8>,
    /// Per output node: the intermediates Direct VLB may use now.
    usable: Vec<[u64; 4]>,
    /// Per output node: the candidate intermediates, in id order.
    candidates: Vec<Vec<NodeId>>,
    refreshed: u64,
    valid: bool,
}

impl View {
    fn new(sh: &Shared) -> View {
        let n = sh.cluster.nodes.len();
        let me = sh.me;
        View {
            up: vec![false; sh.ends.len()],
            hears: vec![[0; 4]; sh.ends.len()],
            next: vec![NONE; n],
            usable: vec![[0; 4]; n],
            candidates: (0..n)
                .map(|d| {
                    if d == usize::from(me) {
                        Vec::new()
                    } else {
                        sh.cluster.intermediates(me, d as NodeId)
                    }
                })
                .collect(),
            refreshed: 0,
            valid: false,
        }
    }

    /// Reads the links' liveness at router time `now`, node running time
    /// `running`; recomputes paths when it changed.
    fn refresh(&mut self, sh: &Shared, now: u64, running: u64) {
        self.refreshed = now;
        let mut changed = !self.valid;
        for (l, live) in sh.live.iter().enumerate() {
            let last = live.last_hello.load(Relaxed);
            let up = last != 0 && running.saturating_sub(last) <= sh.dead_ns;
            let hears: [u64; 4] = std::array::from_fn(|i| live.hears[i].load(Relaxed));
            if up != self.up[l] || hears != self.hears[l] {
                changed = true;
                self.up[l] = up;
                self.hears[l] = hears;
            }
        }
        if !changed {
            return;
        }
        self.valid = true;
        let mine: Vec<usize> = sh.ends.iter().map(|e| e.link).collect();
        let down = |link: usize| {
            mine.iter()
                .position(|&m| m == link)
                .is_some_and(|l| !self.up[l])
        };
        let first = sh.cluster.next_hops_avoiding(sh.me, &down);
        let hops = sh.cluster.hop_counts(sh.me, &down);
        for (d, next) in self.next.iter_mut().enumerate() {
            *next = match (first[d], hops[d], sh.static_hops[d]) {
                (Some(l), Some(h), Some(s)) if h == s => l as u8,
                _ => NONE,
            };
        }
        for d in 0..self.usable.len() {
            let mut map = [0u64; 4];
            for &x in &self.candidates[d] {
                if self.next[usize::from(x)] == NONE {
                    continue;
                }
                // A neighbour next to the output must say it hears it.
                let via_link = sh.ends.iter().position(|e| e.peer == x);
                if let Some(l) = via_link {
                    if bit(&sh.adjacent[usize::from(x)], d as u8) && !bit(&self.hears[l], d as u8) {
                        continue;
                    }
                }
                set_bit(&mut map, x);
            }
            self.usable[d] = map;
        }
    }
}

/// A flowlet: the path the last packets of a flow took.
#[derive(Debug, Clone, Copy, Default)]
struct Flowlet {
    hash: u32,
    dst: NodeId,
    /// The intermediate, or [`NONE`] when sent directly.
    via: NodeId,
    last: u64,
}

/// Reorder tracking of one (input node, flow tag).
#[derive(Debug, Clone, Copy, Default)]
struct Order {
    tag: u16,
    seq: u16,
    valid: bool,
}

#[derive(Debug, Default)]
struct Counts {
    direct: u64,
    balanced: u64,
    local: u64,
    forwarded: u64,
    delivered: u64,
    reordered: u64,
    no_route: u64,
    not_ipv4: u64,
    dead_output: u64,
    unknown_output: u64,
    hop_limit: u64,
    foreign: u64,
    no_room: u64,
    hellos_in: u64,
    hellos_out: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct LinkCounts {
    packets: u64,
    bytes: u64,
    received: u64,
}

/// What a packet from outside does.
enum Choice {
    /// Straight to the output node over link `.0`.
    Direct(u8),
    /// Through intermediate `.1`, over link `.0`.
    Via(u8, NodeId),
    Dead,
}

/// One worker's instance.
pub struct VLBNode {
    sh: Arc<Shared>,
    w: Worker,
}

/// The per-worker state.
struct Worker {
    view: View,
    links: usize,
    first_worker: bool,
    /// This worker's direct share of R/N: bytes per window per output.
    budget: u64,
    flows: Box<[Flowlet]>,
    /// Next sequence number per flow tag (input side).
    seqs: Box<[u16]>,
    /// Per input node: reorder tracking (output side), made on first use.
    order: Vec<Option<Box<[Order]>>>,
    window_end: u64,
    /// Bytes sent directly to each node in this window.
    direct_bytes: Vec<u64>,
    /// Bytes balanced through each node in this window.
    via_bytes: Vec<u64>,
    c: Counts,
    per_link: Vec<LinkCounts>,
    /// Per output node: (direct, balanced) packets.
    per_dst: Vec<(u64, u64)>,
    hello_seq: u32,
    /// Link states last printed (first worker).
    announced: Vec<bool>,
}

impl VLBNode {
    fn new(sh: Arc<Shared>) -> VLBNode {
        let n = sh.cluster.nodes.len();
        let links = sh.ends.len();
        let w = Worker {
            view: View::new(&sh),
            links,
            first_worker: true,
            budget: sh.share_per_window.max(1),
            flows: vec![Flowlet::default(); FLOWLETS].into_boxed_slice(),
            seqs: vec![0u16; 1 << 16].into_boxed_slice(),
            order: vec![None; n],
            window_end: 0,
            direct_bytes: vec![0; n],
            via_bytes: vec![0; n],
            c: Counts::default(),
            per_link: vec![LinkCounts::default(); links],
            per_dst: vec![(0, 0); n],
            hello_seq: 0,
            announced: vec![false; links],
        };
        VLBNode { sh, w }
    }
}

impl Worker {
    /// A packet from outside: route, choose the path, label.
    #[inline]
    fn input(&mut self, sh: &Shared, p: &mut Packet, now: u64, flowlets: bool) -> Option<usize> {
        let Some(routes) = &sh.routes else {
            self.c.no_route += 1;
            return None;
        };
        // The cluster's routes, labels and next hops are IPv4: anything
        // else is refused here rather than routed by bytes that are not an
        // IPv4 destination.
        let ip = p.l3_bytes();
        let Some(d) = ip.get(16..20).filter(|_| ip[0] >> 4 == 4) else {
            self.c.not_ipv4 += 1;
            return None;
        };
        let mut dst_ip = p.anno().dst_ip;
        if dst_ip.is_unspecified() {
            dst_ip = Ipv4Addr::new(d[0], d[1], d[2], d[3]);
        }
        let Some(nh) = routes.lookup(u32::from(dst_ip)) else {
            self.c.no_route += 1;
            return Some(self.links + usize::from(sh.ports_of[usize::from(sh.me)]));
        };
        let t = sh.targets[nh.0 as usize];
        let next_hop = t.gateway.unwrap_or(dst_ip);
        if t.node == sh.me {
            p.anno_mut().dst_ip = next_hop;
            self.c.local += 1;
            return Some(self.links + usize::from(t.port));
        }
        // R is a line rate: count the frame the packet came in as.
        let len = p.len() as u64 + 14;
        let h = flow_hash(p);
        let choice = if flowlets {
            let delta = sh.delta_ns.load(Relaxed);
            let slot = self.flowlet_slot(h);
            let f = self.flows[slot];
            let keep = f.hash == h
                && f.dst == t.node
                && now.saturating_sub(f.last) <= delta
                && self.still_good(f.dst, f.via);
            let choice = if keep {
                self.path(f.dst, f.via)
            } else {
                self.choose(t.node)
            };
            let via = match choice {
                Choice::Direct(_) => NONE,
                Choice::Via(_, x) => x,
                Choice::Dead => NONE,
            };
            self.flows[slot] = Flowlet {
                hash: h,
                dst: t.node,
                via,
                last: now,
            };
            choice
        } else {
            self.choose(t.node)
        };
        let (link, via) = match choice {
            Choice::Direct(l) => {
                self.direct_bytes[usize::from(t.node)] += len;
                self.c.direct += 1;
                self.per_dst[usize::from(t.node)].0 += 1;
                (l, NONE)
            }
            Choice::Via(l, x) => {
                self.via_bytes[usize::from(x)] += len;
                self.c.balanced += 1;
                self.per_dst[usize::from(t.node)].1 += 1;
                (l, x)
            }
            Choice::Dead => {
                self.c.dead_output += 1;
                return None;
            }
        };
        if p.push_front(HEADER_LEN).is_err() {
            self.c.no_room += 1;
            return None;
        }
        let tag = (h >> 16) as u16;
        let seq = &mut self.seqs[usize::from(tag)];
        *seq = seq.wrapping_add(1);
        let dst = Dst {
            cluster: sh.cluster.id,
            output: t.node,
            port: t.port,
            intermediate: via,
        };
        let shim = Shim {
            input: sh.me,
            hops: MAX_HOPS,
            flags: if via == NONE { 0 } else { FLAG_BALANCED },
            next_hop: next_hop.octets(),
            flow: tag,
            seq: *seq,
        };
        let d = p.data_mut();
        d[0..6].copy_from_slice(&dst.mac());
        d[6..12].copy_from_slice(&sh.src_macs[usize::from(link)]);
        d[12..14].copy_from_slice(&ETHERTYPE_DATA.to_be_bytes());
        d[14..HEADER_LEN].copy_from_slice(&shim.bytes());
        let lc = &mut self.per_link[usize::from(link)];
        lc.packets += 1;
        lc.bytes += p.len() as u64;
        Some(usize::from(link))
    }

    /// The flowlet entry of flow hash `h`: its own, else the least
    /// recently used of its set.
    #[inline]
    fn flowlet_slot(&self, h: u32) -> usize {
        // The set from the hash's high bits (the low bits of a flow hash
        // of similar 5-tuples are alike).
        let sets = FLOWLETS / WAYS;
        let set = (h.wrapping_mul(0x9e37_79b1) >> (32 - sets.trailing_zeros())) as usize;
        let base = set * WAYS;
        let ways = &self.flows[base..base + WAYS];
        if let Some(w) = ways.iter().position(|f| f.hash == h) {
            return base + w;
        }
        let oldest = (0..WAYS).min_by_key(|&w| ways[w].last).unwrap_or(0);
        base + oldest
    }

    /// Whether a flowlet's path is still usable.
    #[inline]
    fn still_good(&self, dst: NodeId, via: NodeId) -> bool {
        if via == NONE {
            self.view.next[usize::from(dst)] != NONE
        } else {
            bit(&self.view.usable[usize::from(dst)], via)
        }
    }

    #[inline]
    fn path(&self, dst: NodeId, via: NodeId) -> Choice {
        if via == NONE {
            Choice::Direct(self.view.next[usize::from(dst)])
        } else {
            Choice::Via(self.view.next[usize::from(via)], via)
        }
    }

    /// Whether this worker's direct traffic to `dst` used up its share of
    /// R/N in the current window.
    #[inline]
    fn over_share(&self, dst: NodeId) -> bool {
        self.direct_bytes[usize::from(dst)] >= self.budget
    }

    /// Direct VLB: directly while under R/N, else the least-loaded usable
    /// intermediate; directly over R/N when no intermediate is usable.
    #[inline]
    fn choose(&mut self, dst: NodeId) -> Choice {
        let direct = self.view.next[usize::from(dst)];
        if direct != NONE && !self.over_share(dst) {
            return Choice::Direct(direct);
        }
        let usable = &self.view.usable[usize::from(dst)];
        let mut best: Option<(u64, NodeId)> = None;
        for &x in &self.view.candidates[usize::from(dst)] {
            if bit(usable, x) {
                let b = self.via_bytes[usize::from(x)];
                if best.is_none_or(|(bb, _)| b < bb) {
                    best = Some((b, x));
                }
            }
        }
        match best {
            Some((_, x)) => Choice::Via(self.view.next[usize::from(x)], x),
            None if direct != NONE => Choice::Direct(direct),
            None => Choice::Dead,
        }
    }

    /// A frame from internal link `l`.
    #[inline]
    fn internal(&mut self, sh: &Shared, l: usize, p: &mut Packet) -> Option<usize> {
        let d = p.data();
        if d.len() < 14 {
            self.c.foreign += 1;
            return None;
        }
        let ethertype = u16::from_be_bytes([d[12], d[13]]);
        if ethertype == ETHERTYPE_HELLO {
            // Read before the batch was forwarded (`VLBNode::push`).
            return None;
        }
        if ethertype != ETHERTYPE_DATA || d.len() < HEADER_LEN {
            self.c.foreign += 1;
            return None;
        }
        let mac: &[u8; 6] = d[0..6].try_into().expect("6 bytes");
        let shim_bytes: &[u8; SHIM_LEN] = d[14..HEADER_LEN].try_into().expect("12 bytes");
        let (Some(mut dst), Some(shim)) = (Dst::parse(mac), Shim::parse(shim_bytes)) else {
            self.c.foreign += 1;
            return None;
        };
        if dst.cluster != sh.cluster.id {
            self.c.foreign += 1;
            return None;
        }
        self.per_link[l].received += 1;
        let out = usize::from(dst.output);
        let nodes = sh.ports_of.len();
        if out >= nodes
            || dst.port >= sh.ports_of[out]
            || (dst.intermediate != NONE && usize::from(dst.intermediate) >= nodes)
        {
            self.c.unknown_output += 1;
            return None;
        }
        if dst.intermediate == sh.me {
            dst.intermediate = NONE;
        }
        if dst.output == sh.me && dst.intermediate == NONE {
            if self.reordered(shim.input, shim.flow, shim.seq) {
                self.c.reordered += 1;
            }
            p.anno_mut().dst_ip = Ipv4Addr::from(shim.next_hop);
            p.pull_front(HEADER_LEN);
            p.set_network_header(0);
            self.c.delivered += 1;
            return Some(self.links + usize::from(dst.port));
        }
        if shim.hops == 0 {
            self.c.hop_limit += 1;
            return None;
        }
        let mut link = NONE;
        if dst.intermediate != NONE {
            link = self.view.next[usize::from(dst.intermediate)];
            if link == NONE {
                // The intermediate cannot be reached: head for the output.
                dst.intermediate = NONE;
            }
        }
        if link == NONE {
            link = self.view.next[out];
        }
        if link == NONE {
            self.c.dead_output += 1;
            return None;
        }
        let len = p.len() as u64;
        let d = p.data_mut();
        d[0..6].copy_from_slice(&dst.mac());
        d[6..12].copy_from_slice(&sh.src_macs[usize::from(link)]);
        d[16] = shim.hops - 1;
        self.c.forwarded += 1;
        let lc = &mut self.per_link[usize::from(link)];
        lc.packets += 1;
        lc.bytes += len;
        Some(usize::from(link))
    }

    /// Whether `seq` is older than one already delivered of its flow.
    #[inline]
    fn reordered(&mut self, input: NodeId, tag: u16, seq: u16) -> bool {
        let Some(slots) = self.order.get_mut(usize::from(input)) else {
            return false;
        };
        let slots =
            slots.get_or_insert_with(|| vec![Order::default(); ORDER_SLOTS].into_boxed_slice());
        let o = &mut slots[usize::from(tag) & (ORDER_SLOTS - 1)];
        if o.valid && o.tag == tag {
            // Serial number arithmetic (RFC 1982) on 16 bits.
            if (seq.wrapping_sub(o.seq) as i16) < 0 {
                return true;
            }
            o.seq = seq;
            false
        } else {
            *o = Order {
                tag,
                seq,
                valid: true,
            };
            false
        }
    }

    /// A hello on link `l`, at node running time `running`.
    fn hello_in(&mut self, sh: &Shared, l: usize, payload: &[u8], running: u64) {
        let Some(h) = Hello::parse(payload) else {
            self.c.foreign += 1;
            return;
        };
        if h.cluster != sh.cluster.id || h.sender != sh.ends[l].peer {
            // Miscabled, or another cluster's: not a sign of life.
            self.c.foreign += 1;
            return;
        }
        self.c.hellos_in += 1;
        let live = &sh.live[l];
        for (i, chunk) in h.alive.chunks_exact(8).enumerate() {
            let v = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            live.hears[i].store(v, Relaxed);
        }
        live.last_hello.store(running.max(1), Relaxed);
    }

    /// Starts a new rate window when the last one is over.
    #[inline]
    fn roll_window(&mut self, now: u64) {
        if now >= self.window_end {
            self.window_end = now + WINDOW_NS;
            self.direct_bytes.fill(0);
            self.via_bytes.fill(0);
        }
    }
}

impl VLBNode {
    /// The first worker's timer: hellos out, link changes announced.
    fn hellos(&mut self, cx: &mut Context<'_>) {
        let now = cx.now().0;
        let sh = &*self.sh;
        let w = &mut self.w;
        let running = sh.running(now);
        w.view.refresh(sh, now, running);
        let mut hello = Hello {
            cluster: sh.cluster.id,
            sender: sh.me,
            seq: w.hello_seq,
            alive: [0; 32],
        };
        w.hello_seq = w.hello_seq.wrapping_add(1);
        for (l, e) in sh.ends.iter().enumerate() {
            if w.view.up[l] {
                hello.set(e.peer);
            }
        }
        let payload = hello.bytes();
        let mut frame = [0u8; 14 + HELLO_LEN + 6];
        frame[0..6].fill(0xff);
        frame[12..14].copy_from_slice(&ETHERTYPE_HELLO.to_be_bytes());
        frame[14..14 + HELLO_LEN].copy_from_slice(&payload);
        for l in 0..sh.ends.len() {
            frame[6..12].copy_from_slice(&sh.src_macs[l]);
            if let Ok(p) = Packet::from_slice(&frame) {
                w.c.hellos_out += 1;
                cx.push_one(l, p);
            }
            if w.view.up[l] != w.announced[l] {
                w.announced[l] = w.view.up[l];
                let last = sh.live[l].last_hello.load(Relaxed);
                if w.view.up[l] {
                    eprintln!(
                        "{}: link {} to {} up",
                        cx.name(),
                        sh.ends[l].iface,
                        sh.peer_name(l)
                    );
                } else {
                    eprintln!(
                        "{}: link {} to {} down (no hello for {} ms of running time)",
                        cx.name(),
                        sh.ends[l].iface,
                        sh.peer_name(l),
                        running.saturating_sub(last) / 1_000_000
                    );
                }
            }
        }
        cx.schedule_at(Timestamp(now + sh.hello_ns));
    }
}

impl Element for VLBNode {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.w.first_worker = cx.worker() == 0;
        self.w.budget = (self.sh.share_per_window / cx.workers().max(1) as u64).max(1);
        if self.w.first_worker && !self.sh.ends.is_empty() {
            cx.schedule_at(cx.now());
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        self.hellos(cx);
    }

    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = cx.now().0;
        let sh = &*self.sh;
        let w = &mut self.w;
        // The hellos of the batch first: the links they prove alive carry
        // its other frames on.
        let mut heard = false;
        if port > 0 {
            let mut running = 0;
            for p in batch.iter() {
                let d = p.data();
                if d.len() >= 14 && d[12..14] == ETHERTYPE_HELLO.to_be_bytes() {
                    if !heard {
                        running = sh.running(now);
                        heard = true;
                    }
                    w.hello_in(sh, port - 1, &d[14..], running);
                }
            }
        }
        if heard || !w.view.valid || now >= w.view.refreshed + REFRESH_NS {
            w.view.refresh(sh, now, sh.running(now));
        }
        if port == 0 {
            w.roll_window(now);
            let flowlets = sh.flowlets.load(Relaxed);
            cx.push_classified(batch, |p| w.input(sh, p, now, flowlets));
        } else {
            let l = port - 1;
            cx.push_classified(batch, |p| w.internal(sh, l, p));
        }
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.w.c;
        s.counter("direct", c.direct);
        s.counter("balanced", c.balanced);
        s.counter("local", c.local);
        s.counter("forwarded", c.forwarded);
        s.counter("delivered", c.delivered);
        s.counter("reordered", c.reordered);
        s.counter("no_route", c.no_route);
        s.counter("not_ipv4", c.not_ipv4);
        s.counter("dead_output", c.dead_output);
        s.counter("unknown_output", c.unknown_output);
        s.counter("hop_limit", c.hop_limit);
        s.counter("foreign", c.foreign);
        s.counter("no_room", c.no_room);
        s.counter("hellos_in", c.hellos_in);
        s.counter("hellos_out", c.hellos_out);
        let sh = &self.sh;
        for (l, e) in sh.ends.iter().enumerate() {
            let lc = &self.w.per_link[l];
            s.counter(format!("link {} packets", e.iface), lc.packets);
            s.counter(format!("link {} bytes", e.iface), lc.bytes);
            s.counter(format!("link {} received", e.iface), lc.received);
            if self.w.first_worker {
                s.counter(format!("link {} up", e.iface), u64::from(self.w.view.up[l]));
            }
        }
        for (d, n) in sh.cluster.nodes.iter().enumerate() {
            if d != usize::from(sh.me) && !n.ports.is_empty() {
                let (direct, balanced) = self.w.per_dst[d];
                s.counter(format!("to {} direct", n.name), direct);
                s.counter(format!("to {} balanced", n.name), balanced);
            }
        }
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        matches!(handler, "flowlets" | "flowlet_delta")
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "flowlets" => {
                let on = match value.trim() {
                    "true" | "on" | "1" | "yes" => true,
                    "false" | "off" | "0" | "no" => false,
                    v => return Err(format!("flowlets {v}: expected true or false")),
                };
                self.sh.flowlets.store(on, Relaxed);
                Ok(())
            }
            "flowlet_delta" => {
                let d = parse_duration(value.trim())
                    .map_err(|e| format!("flowlet_delta {value}: {e}"))?;
                if d.is_zero() {
                    return Err("flowlet_delta must be more than 0".into());
                }
                self.sh.delta_ns.store(d.as_nanos() as u64, Relaxed);
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (VLBNode has flowlets and flowlet_delta)"
            )),
        }
    }
}

#[cfg(test)]
mod tests;
