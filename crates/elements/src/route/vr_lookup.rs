//! `VRRouteTable` and `VRIPLookup`: many virtual routers' route tables
//! behind one forwarding path, the way VRFs are built in VPP and Linux.
//!
//! Egi et al.'s Fig. 16 adds virtual routers on one core, each a
//! forwarding path of its own behind the demultiplexer. With the traffic
//! spread over a thousand routers every batch splits into one packet per
//! router, and each packet then pays every element's per-batch cost alone
//! and brings its own router's elements into the caches. A shared path
//! keeps the batch whole: `VRDemux` writes each frame's router into the
//! virtual-router annotation, all its outputs lead into one path, and
//! the only per-router step, the route lookup, picks router `r`'s table
//! (the `r`th `VRRouteTable` named) by that annotation. Each table is an
//! element of its own, with its router's handlers and counters, so a
//! router's socket (`bricks run --router-control`) reaches its table and
//! no other.

use super::lookup::{
    v4_shared, v4_table_handlers, Algorithm, GroupsCache, GroupsOf, V4Table, V4_HANDLERS,
};
use super::table;
use arc_swap::Cache;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats,
};
use bricks_lpm::{Answer, Linear4, Lpm4, NextHop, Prefix4, Trie4, NO_ROUTE};
use bricks_packet::{Packet, PerPacket};
use std::net::Ipv4Addr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// The `VRRouteTable` class: one virtual router's IPv4 routes.
pub static TABLE: ElementClass = ElementClass {
    name: "VRRouteTable",
    ports: "0/0",
    processing: "a/a",
    manual: &TABLE_MANUAL,
    make: make_table,
};

/// The `VRIPLookup` class: the lookup in the packet's router's table.
pub static LOOKUP: ElementClass = ElementClass {
    name: "VRIPLookup",
    ports: "1/-",
    processing: "h/h",
    manual: &LOOKUP_MANUAL,
    make: make_lookup,
};

static TABLE_MANUAL: Manual = Manual {
    summary: "one virtual router's IPv4 route table, for VRIPLookup",
    synopsis:
        "VRRouteTable(ADDR/LEN [GATEWAY] OUT, ... [, OUTPUTS n, ALGORITHM radix|direct|linear, \
        ROUTES FILE|SOURCE, DEVICES NAMES])",
    description: "An information element (no ports) holding the routes of one virtual \
        router, in the syntax and with the handlers of RadixIPLookup: `add`, `set`, \
        `remove`, `ctrl` (write), `lookup ADDR` and `table` (read), and a ROUTES file or \
        live source. A VRIPLookup naming it looks packets of that router up in it. \
        OUTPUTS is the number of the lookup's outputs its routes may name; a route to \
        a higher output is refused, in the arguments and in `add`. ALGORITHM picks the \
        lookup structure: `radix` (the 4-bit-stride trie of RadixIPLookup, a few \
        hundred bytes for a small table: the default), `direct` (DIR-24-8 of \
        DirectIPLookup, 64 MiB and more, for an Internet-size table) or `linear` (the \
        routes longest first in one array, as Click's LinearIPLookup: one cache line \
        for a few routes, the fastest for a tenant's handful and what keeps a thousand \
        routers' tables in the caches; at most 256 routes, 64 with the default \
        MEMORY, so a packet's scan stays short). A linear table of at most four \
        routes and a default route (five if the fifth is 0.0.0.0/0), each with one \
        hop, is also copied by each VRIPLookup into a cache \
        line of its own for the router, brought up to date at the first batch after \
        the table changes. bricks only: Click has no \
        virtual-router tables.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "OUTPUTS",
            ty: "unsigned",
            default: Some("1"),
            doc: "outputs of the VRIPLookup its routes may name (1 to 65535)",
        },
        Keyword {
            name: "ALGORITHM",
            ty: "radix, direct or linear",
            default: Some("radix"),
            doc: "the lookup structure",
        },
        Keyword {
            name: "ROUTES",
            ty: "file name or route source",
            default: Some("none"),
            doc: "also load the routes of this file, or follow a live source, as \
                  RadixIPLookup's ROUTES",
        },
        Keyword {
            name: "DEVICES",
            ty: "interface names",
            default: Some("none"),
            doc: "with a live ROUTES source: the interface of each output, as \
                  RadixIPLookup's DEVICES",
        },
        Keyword {
            name: "SKIP_ERRORS",
            ty: "boolean",
            default: Some("false"),
            doc: "skip malformed routes in ROUTES instead of refusing the file",
        },
        Keyword {
            name: "PEER",
            ty: "IP address",
            default: Some("none"),
            doc: "take an MRT ROUTES dump's routes from the peer with this address only",
        },
        Keyword {
            name: "PEER_AS",
            ty: "AS number",
            default: Some("none"),
            doc: "take an MRT ROUTES dump's routes from the peers of this AS only",
        },
        Keyword {
            name: "MEMORY",
            ty: "bytes",
            default: Some("16777216 (radix), 1073741824 (direct)"),
            doc: "refuse a table whose lookup structure would need more memory; the \
                  radix trie reserves this much address space up front (16 MiB holds \
                  some 100,000 usual prefixes)",
        },
    ],
    counters: &[
        (
            "no_route",
            "this router's packets that matched no route (every VRIPLookup, every worker)",
        ),
        ("routes", "routes in the table now"),
        ("memory", "bytes of the lookup structure"),
    ],
    example: "red :: VRRouteTable(10.0.0.0/24 0, 0.0.0.0/0 10.0.0.1 1, OUTPUTS 2); \
        blue :: VRRouteTable(10.0.0.0/24 1, OUTPUTS 2); \
        InfiniteSource(LIMIT 1) -> Strip(14) -> CheckIPHeader -> rt :: VRIPLookup(red, blue); \
        rt[0] -> Discard; rt[1] -> Discard;",
    see_also: &["VRIPLookup", "VRDemux", "RadixIPLookup"],
};

static LOOKUP_MANUAL: Manual = Manual {
    summary: "IPv4 route lookup in the table of the packet's virtual router",
    synopsis: "VRIPLookup(TABLE, ...)",
    description: "Each argument names a VRRouteTable: the first is virtual router 0's, \
        the second router 1's, and so on, in the numbering of VRDemux's outputs, which \
        writes a frame's router into the virtual-router annotation. For each packet the \
        table of its router is looked up as RadixIPLookup looks up its own: the longest \
        prefix containing the destination address annotation (RFC 1812 5.2.4.3), a \
        gateway replacing the annotation, an equal-cost group chosen by the flow hash, \
        the packet leaving on the route's output. A packet whose router has no table \
        here, and one that matches no route, is dropped and counted. \
        \n\nThis is the shared forwarding path for many virtual routers: connect every \
        VRDemux output of the routers that share it to the same input, and a batch then \
        stays whole whatever its routers (outputs of one element that lead to the same \
        input count as one), where a path per router would see batches of one packet \
        once traffic spreads over hundreds of routers. What is not per router on such \
        a path (the header check, the TTL) is the same for all of them; per-router \
        addresses and ARP stay on each router's own elements behind the lookup's \
        outputs. bricks only.",
    ports: "one push input (packets with a destination address annotation and a \
        virtual-router annotation); one push output per route output",
    keywords: &[],
    counters: &[
        (
            "no_router",
            "packets whose virtual-router annotation names no table here",
        ),
        (
            "no_route",
            "packets that matched no route in their router's table",
        ),
    ],
    example: "red :: VRRouteTable(10.0.0.0/24 0, OUTPUTS 1); \
        blue :: VRRouteTable(10.0.0.0/24 0, OUTPUTS 1); \
        InfiniteSource(LIMIT 1) -> Strip(14) -> CheckIPHeader -> VRIPLookup(red, blue) -> Discard;",
    see_also: &["VRRouteTable", "VRDemux", "RadixIPLookup"],
};

/// The most outputs a table may route to (a lookup's outputs fit 16 bits
/// in the split of a batch).
const MAX_OUTPUTS: usize = u16::MAX as usize;

/// The output recorded for a packet that is dropped: routes name outputs
/// below [`MAX_OUTPUTS`].
const DROP: u16 = u16::MAX;

/// Every answer of a router's line whose table the line cannot hold
/// ([`Hot::slow`]): look in the table. Below [`DROP`], above any output,
/// so that one compare tells the usual answer from both.
const SLOW: u16 = u16::MAX - 1;

/// MEMORY's default for the radix trie, whose nodes are one reserved
/// array: room for some 100,000 usual prefixes (at worst 20,000), so
/// that a thousand routers' tables reserve 16 GiB of address space, not
/// the 1 TiB the lookup elements' default would.
const RADIX_MEMORY: usize = 16 << 20;

/// A linear table's default MEMORY: 64 routes of 16 bytes.
const LINEAR_MEMORY: usize = 64 * 16;

/// ALGORITHM's values.
#[derive(Debug, Clone, Copy)]
struct AlgorithmArg(Algorithm);

impl FromArg for AlgorithmArg {
    const TYPE: &'static str = "`radix`, `direct` or `linear`";
    fn from_arg(text: &str) -> Result<Self, String> {
        match text {
            "radix" => Ok(AlgorithmArg(Algorithm::Trie4)),
            "direct" => Ok(AlgorithmArg(Algorithm::Dir24_8)),
            "linear" => Ok(AlgorithmArg(Algorithm::Linear4)),
            _ => Err(format!("found `{text}`")),
        }
    }
}

fn make_table(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let outputs: usize = args.read("OUTPUTS")?.unwrap_or(1);
    if !(1..=MAX_OUTPUTS).contains(&outputs) {
        return Err(ArgError::new(format!(
            "OUTPUTS must be 1 to {MAX_OUTPUTS}, not {outputs}"
        )));
    }
    let algo = args
        .read::<AlgorithmArg>("ALGORITHM")?
        .map_or(Algorithm::Trie4, |a| a.0);
    let memory = match algo {
        Algorithm::Trie4 => RADIX_MEMORY,
        Algorithm::Dir24_8 => table::DEFAULT_MEMORY,
        Algorithm::Linear4 => LINEAR_MEMORY,
    };
    let t = v4_shared(args, outputs, algo, false, memory)?;
    Ok(Box::new(VrRouteTable {
        t,
        reports_table: true,
    }))
}

/// One router's table; its handlers and counters.
pub struct VrRouteTable {
    t: Arc<V4Table>,
    /// The table is shared: one worker reports it.
    reports_table: bool,
}

impl Element for VrRouteTable {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.reports_table = cx.worker() == 0;
        self.t.start_live(cx);
    }

    fn stats(&self, s: &mut Stats) {
        if self.reports_table {
            s.counter("no_route", self.t.missed.load(Relaxed));
            self.t.stats(s);
        }
    }

    v4_table_handlers!();
}

/// One router as the lookup sees it.
struct Router {
    t: Arc<V4Table>,
    /// Its hop groups, reloaded only when the table publishes new ones:
    /// a load and a compare a packet instead of a guard.
    groups: GroupsCache<V4Table>,
    /// Its trie, when the table is a radix trie (`ALGORITHM radix`): the
    /// table's own handle, kept here so that a packet reaches the
    /// structure without going through the table and its box.
    radix: Option<Arc<Trie4>>,
    /// Its array, when the table is linear (`ALGORITHM linear`).
    linear: Option<Arc<Linear4>>,
    /// The array's version its [`Hot`] line was made from.
    version: u64,
}

/// How many routes a [`Hot`] line tests a packet against.
const HOT_SCAN: usize = 4;

/// One router's routes as a packet needs them, in one cache line of the
/// lookup's own: a linear table of at most [`HOT_SCAN`] routes and a
/// /0, each with its one hop resolved (output and gateway). A thousand
/// routers' packets then reach one line a router where the table, its
/// version and copy, its groups and their words were four or five
/// (1,024 routers, one line a router: 27 ns a packet against 43).
///
/// A packet is tested against the scanned routes all at once, with no
/// branch: each prefix and mask side by side in an array of four, so
/// that the compiler makes the four tests one vector compare and a mask
/// of the routes that match (10 instructions, where a route at a time
/// was 5 a route and a branch). The first match (the routes are longest
/// first) answers; with none, the fifth answer does: the table's /0
/// after four routes, or [`DROP`]. A slot past the table's routes is a
/// /0 to [`DROP`], so the first match past them answers as the fifth
/// would.
///
/// Made again from the table when any linear table publishes
/// ([`Linear4::publications`], one load a batch) and this router's has
/// moved; a table of more routes, of a route with more than one hop, or
/// of another algorithm is looked up in the table itself ([`Hot::slow`]).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Hot {
    /// The scanned routes' prefixes, as the annotation holds an
    /// address (`from_ne_bytes` of its octets: the test is bitwise, so
    /// the destination needs no byte swap)...
    addr: [u32; HOT_SCAN],
    /// ...and their masks the same way (0 for a /0).
    mask: [u32; HOT_SCAN],
    /// The answers, the scanned routes' then the fifth: each gateway as
    /// the annotation holds it (`from_ne_bytes` of its octets; 0 for
    /// none)...
    gateway: [u32; HOT_SCAN + 1],
    /// ...and output; [`SLOW`] in every one for a table looked up in
    /// the table itself.
    out: [u16; HOT_SCAN + 1],
}

impl Hot {
    /// A line that answers `out` for every address.
    const fn answering(out: u16) -> Hot {
        Hot {
            addr: [0; HOT_SCAN],
            mask: [0; HOT_SCAN],
            gateway: [0; HOT_SCAN + 1],
            out: [out; HOT_SCAN + 1],
        }
    }

    /// The line of a table it cannot hold: every answer [`SLOW`].
    const fn slow() -> Hot {
        Hot::answering(SLOW)
    }

    /// Whether this line sends its router's packets to the table.
    #[cfg(test)]
    fn is_slow(&self) -> bool {
        self.out[0] == SLOW
    }

    /// The line of a linear table's routes (longest first) with its
    /// groups, or a slow one when they do not fit: at most four routes,
    /// and a fifth if it is a /0.
    fn of(routes: &[(Prefix4, NextHop)], words: &[u64]) -> Hot {
        let ends_in_default = routes.last().is_some_and(|r| r.0.len == 0);
        if routes.len() > HOT_SCAN + usize::from(ends_in_default) {
            return Hot::slow();
        }
        let mut h = Hot::answering(DROP);
        for (i, &(p, nh)) in routes.iter().enumerate() {
            let Some(&w) = words.get(nh.0 as usize) else {
                return Hot::slow();
            };
            let output = w >> 32;
            if w == table::V4_MANY || output >= u64::from(SLOW) {
                return Hot::slow();
            }
            if i < HOT_SCAN {
                h.addr[i] = p.addr.to_be();
                h.mask[i] = Prefix4::mask(p.len).to_be();
            }
            // Route 4 is the table's /0, answered when none of the four
            // before it matches.
            (h.gateway[i], h.out[i]) = (w as u32, output as u16);
        }
        h
    }

    /// The gateway (as the annotation holds it, 0 for none) and output
    /// of `dst` (as the annotation holds it, see [`ne`]); an output of
    /// [`SLOW`] or more leaves it to the table or drops it.
    #[inline(always)]
    fn route(&self, dst: u32) -> (u32, u16) {
        let i = self.answer(dst);
        (self.gateway[i], self.out[i])
    }

    /// The answer of `dst`: an index into `gateway` and `out`.
    #[inline(always)]
    fn answer(&self, dst: u32) -> usize {
        let mut hits = 0;
        for i in 0..HOT_SCAN {
            hits |= u32::from((dst ^ self.addr[i]) & self.mask[i] == 0) << i;
        }
        // The first route that matches, or the fifth answer.
        (hits | 1 << HOT_SCAN).trailing_zeros() as usize
    }
}

fn make_lookup(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let names = args.rest();
    if names.is_empty() {
        return Err(
            ArgError::new("expected the VRRouteTable of each virtual router")
                .with_help("write `VRIPLookup(red_table, blue_table, ...)`: router 0's first"),
        );
    }
    if names.len() > usize::from(u16::MAX) + 1 {
        return Err(ArgError::new(format!(
            "{} tables: the virtual-router annotation numbers at most {}",
            names.len(),
            usize::from(u16::MAX) + 1
        )));
    }
    let noutputs = ports.noutputs();
    let mut routers = Vec::with_capacity(names.len());
    for (name, span) in names {
        let name = name.trim();
        let t: Arc<V4Table> = args
            .shared_of_name(name, &[TABLE.name])
            .map_err(|why| ArgError::at(span, why))?;
        if t.noutputs > noutputs {
            return Err(ArgError::at(
                span,
                format!(
                    "`{name}` routes to {} outputs (its OUTPUTS), but this VRIPLookup has {noutputs}",
                    t.noutputs
                ),
            )
            .with_help("connect as many outputs as the tables' OUTPUTS, or lower OUTPUTS"));
        }
        routers.push(Router {
            groups: Cache::new(GroupsOf(Arc::clone(&t))),
            radix: t.radix.clone(),
            linear: t.linear.clone(),
            version: u64::MAX,
            t,
        });
    }
    Ok(Box::new(VrIpLookup {
        walk: routers.iter().any(|r| r.radix.is_some()),
        hot: vec![Hot::slow(); routers.len()].into_boxed_slice(),
        publications: u64::MAX,
        routers: routers.into_boxed_slice(),
        empty: Trie4::with_memory_bound(128).expect("one node fits"),
        no_router: 0,
        no_route: 0,
    }))
}

/// An address as the annotation holds it, as a word: `from_ne_bytes`
/// of its octets, no byte swap.
#[inline(always)]
fn ne(a: Ipv4Addr) -> u32 {
    u32::from_ne_bytes(a.octets())
}

/// A batch's packets of no router and of no route.
#[derive(Default)]
struct Missed {
    no_router: u64,
    no_route: u64,
}

/// The output of `p` from its router's table, [`DROP`] for none;
/// `walked` is its trie walk's answer when its table is a trie.
#[inline(always)]
fn output(
    routers: &mut [Router],
    hot: &[Hot],
    p: &mut Packet,
    walked: u32,
    missed: &mut Missed,
) -> u16 {
    let vr = usize::from(p.anno().vrouter);
    if let Some(h) = hot.get(vr) {
        let (gateway, out) = h.route(ne(p.anno().dst_ip));
        if out < SLOW {
            if gateway != 0 {
                p.anno_mut().dst_ip = gateway.to_ne_bytes().into();
            }
            return out;
        }
        if out == DROP {
            if let Some(r) = routers.get(vr) {
                r.t.missed.fetch_add(1, Relaxed);
            }
            missed.no_route += 1;
            return DROP;
        }
    }
    let Some(r) = routers.get_mut(vr) else {
        missed.no_router += 1;
        return DROP;
    };
    let dst = u32::from(p.anno().dst_ip);
    let found = match &r.linear {
        Some(l) => u32::answer(l.lookup(dst)),
        None if r.radix.is_some() => walked,
        None => u32::answer(r.t.table.lpm.lookup(dst)),
    };
    let groups = r.groups.load();
    match table::route_v4(groups, groups.v4_words(), found, p) {
        // Outputs are below MAX_OUTPUTS, so DROP names none.
        Some(out) => out as u16,
        None => {
            r.t.missed.fetch_add(1, Relaxed);
            missed.no_route += 1;
            DROP
        }
    }
}

/// The lookup: each packet in its router's table.
pub struct VrIpLookup {
    /// By virtual-router annotation.
    routers: Box<[Router]>,
    /// Each router's line, as `routers`.
    hot: Box<[Hot]>,
    /// [`Linear4::publications`] when the lines were last brought up to
    /// date.
    publications: u64,
    /// Whether some router's table is a trie, so the batch's walks go
    /// together.
    walk: bool,
    /// Walked for packets of no router or of a router whose table is not
    /// a trie: it answers nothing.
    empty: Trie4,
    no_router: u64,
    no_route: u64,
}

impl VrIpLookup {
    /// Makes the lines of the routers whose linear tables moved again.
    /// Off the packets' path: once a batch after some linear table
    /// published, a version load a router.
    #[cold]
    #[inline(never)]
    fn bring_up_to_date(&mut self) {
        // Read before the tables: a publication after it moves it again.
        self.publications = Linear4::publications();
        for (r, h) in self.routers.iter_mut().zip(self.hot.iter_mut()) {
            let Some(l) = &r.linear else { continue };
            let v = l.version();
            if v != r.version {
                r.version = v;
                // The table's groups are published before its routes
                // name them.
                *h = Hot::of(&l.routes(), r.t.table.groups().v4_words());
            }
        }
    }
}

impl Element for VrIpLookup {
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        if let Some(old) = bricks_element::taken_from::<VrIpLookup>(old) {
            self.no_router += old.no_router;
            self.no_route += old.no_route;
        }
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        // Some linear table published since the lines were made: one
        // load a batch says so.
        if Linear4::publications() != self.publications {
            self.bring_up_to_date();
        }
        // A batch of one router's one destination (one flow's burst, or
        // one router behind the demultiplexer): its router's line answers
        // once and the batch goes on whole, as StaticIPLookup's does.
        // Answers the line leaves to the table, and drops, go the general
        // way, which counts them.
        let one = table::one_key(batch, |p| {
            u64::from(p.anno().vrouter) << 32 | u64::from(ne(p.anno().dst_ip))
        });
        if let Some((hot, key)) = one.and_then(|k| Some((self.hot.get((k >> 32) as usize)?, k))) {
            let (gateway, out) = hot.route(key as u32);
            if out < SLOW {
                if gateway != 0 {
                    let g = gateway.to_ne_bytes().into();
                    for p in batch.iter_mut() {
                        p.anno_mut().dst_ip = g;
                    }
                }
                return cx.push(usize::from(out), batch);
            }
        }
        // Consecutive packets are usually for different routers, so there
        // is no batch of one table's addresses; but the walks of the
        // batch's packets, each in its own router's trie, go level by
        // level together (`Trie4::lookup_each`), so that with a thousand
        // tables their cache misses overlap instead of queueing. Linear
        // and DIR-24-8 tables are a load or two a packet: looked up one
        // by one.
        let mut walked = PerPacket::<u32>::new();
        if self.walk {
            let mut addrs = PerPacket::new();
            addrs.gather(batch, |p| u32::from(p.anno().dst_ip));
            let mut tries = PerPacket::new();
            tries.gather(batch, |p| {
                self.routers
                    .get(usize::from(p.anno().vrouter))
                    .and_then(|r| r.radix.as_deref())
                    .unwrap_or(&self.empty)
            });
            walked.fill(addrs.len(), NO_ROUTE);
            Trie4::lookup_each(&tries, &addrs, &mut walked);
        }
        // Every packet's output first, in one loop the lookup is inlined
        // into; then the batch is split by them (FastClick's
        // classify-then-split). Classified inside the split, the lookup
        // was a call a packet, 122 instructions in the call alone.
        let routers = &mut self.routers;
        let hot = &self.hot[..];
        let mut missed = Missed::default();
        let mut outs = PerPacket::<u16>::new();
        if walked.is_empty() {
            outs.gather_mut(batch, |p| output(routers, hot, p, NO_ROUTE, &mut missed));
        } else {
            let mut walked = walked.iter();
            outs.gather_mut(batch, |p| {
                let w = walked.next().copied().unwrap_or(NO_ROUTE);
                output(routers, hot, p, w, &mut missed)
            });
        }
        // A packet of no router or no route is counted missed; the
        // others have outputs.
        let kept = missed.no_router + missed.no_route == 0;
        cx.push_by_kept_outputs(batch, &outs, kept);
        self.no_router += missed.no_router;
        self.no_route += missed.no_route;
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("no_router", self.no_router);
        s.counter("no_route", self.no_route);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, SharedSlot};
    use bricks_runtime::testing::{parse_args, Harness};
    use std::any::Any;
    use std::net::Ipv4Addr;

    /// A UDP/IPv4 packet to `dst` for virtual router `vr`, with the
    /// annotations VRDemux and CheckIPHeader would set.
    fn udp(vr: u16, dst: [u8; 4]) -> Packet {
        let b = [
            0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, 192, 0, 2, 1, dst[0], dst[1], dst[2], dst[3],
            0x13, 0x88, 0x13, 0x88, 0, 8, 0, 0,
        ];
        let mut p = Packet::from_slice(&b).unwrap();
        p.set_network_header(0);
        p.anno_mut().dst_ip = Ipv4Addr::from(dst);
        p.anno_mut().vrouter = vr;
        p
    }

    /// A VRRouteTable made from `args`: the element and its shared table.
    fn table(args: &str) -> (Box<dyn Element>, Arc<dyn Any + Send + Sync>) {
        let parsed = parse_args(args).unwrap();
        let slot = SharedSlot::new();
        let mut a = Args::new(&parsed, None).with_shared(&slot);
        let e =
            make_table(&mut a, &PortInfo::default()).unwrap_or_else(|e| panic!("{args}: {e:?}"));
        a.complete().unwrap();
        let shared = slot.get().expect("the table is shared").clone();
        (e, shared)
    }

    fn table_error(args: &str) -> String {
        let parsed = parse_args(args).unwrap();
        let mut a = Args::new(&parsed, None);
        match make_table(&mut a, &PortInfo::default()) {
            Ok(_) => panic!("{args}: accepted"),
            Err(e) => e.message,
        }
    }

    /// Two tenants with the same subnet: red sends 10.0.0.0/24 out of 0
    /// and the rest to 10.0.0.1 out of 1; blue sends 10.0.0.0/24 to
    /// 10.0.0.254 out of 1 and has no default route.
    fn two_tenants() -> (Vec<Box<dyn Element>>, bricks_element::FixedRefs) {
        let (red, red_t) = table("10.0.0.0/24 0, 0.0.0.0/0 10.0.0.1 1, OUTPUTS 2");
        let (blue, blue_t) = table("10.0.0.0/24 10.0.0.254 1, OUTPUTS 2");
        let refs = bricks_element::FixedRefs(vec![
            ("red".into(), TABLE.name, red_t),
            ("blue".into(), TABLE.name, blue_t),
        ]);
        (vec![red, blue], refs)
    }

    fn lookup(refs: &bricks_element::FixedRefs, args: &str, outputs: usize) -> Harness {
        Harness::with_refs(
            &LOOKUP,
            args,
            PortInfo {
                inputs: vec![bricks_element::Processing::Push],
                outputs: vec![bricks_element::Processing::Push; outputs],
            },
            refs,
        )
        .unwrap()
    }

    #[test]
    fn each_packet_is_looked_up_in_its_routers_table() {
        let (tables, refs) = two_tenants();
        let mut h = lookup(&refs, "red, blue", 2);
        h.push_packets(
            0,
            [
                udp(0, [10, 0, 0, 5]),
                udp(1, [10, 0, 0, 5]),
                udp(0, [8, 8, 8, 8]),
                udp(1, [8, 8, 8, 8]),
                udp(2, [10, 0, 0, 5]),
            ],
        );
        let out0 = h.take(0);
        let out1 = h.take(1);
        assert_eq!(out0.len(), 1);
        assert_eq!(out0[0].anno().vrouter, 0);
        assert_eq!(out0[0].anno().dst_ip, Ipv4Addr::new(10, 0, 0, 5));
        // In arrival order: blue's 10.0.0.5 by its gateway, then red's
        // default route.
        let hops: Vec<(u16, Ipv4Addr)> = out1
            .iter()
            .map(|p| (p.anno().vrouter, p.anno().dst_ip))
            .collect();
        assert_eq!(
            hops,
            [
                (1, Ipv4Addr::new(10, 0, 0, 254)),
                (0, Ipv4Addr::new(10, 0, 0, 1))
            ]
        );
        let s = h.stats();
        assert_eq!(s.get("no_route"), Some(1), "blue has no route to 8.8.8.8");
        assert_eq!(s.get("no_router"), Some(1), "router 2 has no table");
        // Each router's own count of its packets that found no route.
        let count = |e: &dyn Element| {
            let mut s = Stats::default();
            e.stats(&mut s);
            s.get("no_route")
        };
        assert_eq!(count(&*tables[0]), Some(0));
        assert_eq!(count(&*tables[1]), Some(1));
    }

    #[test]
    fn a_route_changed_in_one_router_changes_only_its_lookups() {
        let (mut tables, refs) = two_tenants();
        let mut h = lookup(&refs, "red, blue", 2);
        tables[1]
            .write_handler("add", "8.8.8.0/24 0")
            .expect("blue learns 8.8.8.0/24");
        let err = tables[1].write_handler("add", "9.0.0.0/8 2").unwrap_err();
        assert!(
            err.contains("out of range") || err.contains("output"),
            "{err}"
        );
        h.push_packets(0, [udp(1, [8, 8, 8, 8]), udp(0, [8, 8, 8, 8])]);
        let out0 = h.take(0);
        let out1 = h.take(1);
        assert_eq!(out0.len(), 1);
        assert_eq!(out0[0].anno().vrouter, 1);
        assert_eq!(out1.len(), 1, "red still uses its default route");
        assert_eq!(out1[0].anno().dst_ip, Ipv4Addr::new(10, 0, 0, 1));
        // A batch looked up after the groups changed sees the new ones.
        tables[0]
            .write_handler("set", "0.0.0.0/0 10.0.0.2 1")
            .unwrap();
        h.push_packets(0, [udp(0, [8, 8, 8, 8])]);
        assert_eq!(h.take(1)[0].anno().dst_ip, Ipv4Addr::new(10, 0, 0, 2));
        let listed = tables[1].read_handler("table").unwrap();
        assert!(listed.contains("8.8.8.0/24"), "{listed}");
        assert!(!tables[0]
            .read_handler("table")
            .unwrap()
            .contains("8.8.8.0/24"));
    }

    #[test]
    fn a_batch_of_one_routers_one_destination_goes_on_whole() {
        for algo in ["linear", "radix"] {
            let (_t, shared) = table(&format!(
                "10.0.0.0/8 0, 0.0.0.0/0 192.0.2.1 1, OUTPUTS 2, ALGORITHM {algo}"
            ));
            let refs = bricks_element::FixedRefs(vec![("t".into(), TABLE.name, shared)]);
            let mut h = lookup(&refs, "t", 2);
            // 40 packets to one destination by the gateway, one batch.
            h.push_packets(0, (0..40).map(|_| udp(0, [8, 8, 8, 8])));
            let out = h.take(1);
            assert_eq!(out.len(), 40, "{algo}");
            assert!(h.take(0).is_empty(), "{algo}");
            assert!(
                out.iter()
                    .all(|p| p.anno().dst_ip == Ipv4Addr::new(192, 0, 2, 1)),
                "{algo}"
            );
            // On the link: the destination stays.
            h.push_packets(0, (0..40).map(|_| udp(0, [10, 1, 2, 3])));
            let out = h.take(0);
            assert_eq!(out.len(), 40, "{algo}");
            assert!(
                out.iter()
                    .all(|p| p.anno().dst_ip == Ipv4Addr::new(10, 1, 2, 3)),
                "{algo}"
            );
            // A batch of a router that does not exist: each packet counted.
            h.push_packets(0, (0..9).map(|_| udp(5, [8, 8, 8, 8])));
            assert!(h.take(0).is_empty() && h.take(1).is_empty(), "{algo}");
            assert_eq!(h.stats().get("no_router"), Some(9), "{algo}");
        }
    }

    #[test]
    fn equal_cost_routes_keep_a_flow_on_one_path() {
        for algo in ["radix", "linear"] {
            let (_t, shared) = table(&format!(
                "10.0.0.0/8 10.0.0.1 0, 10.0.0.0/8 10.0.0.2 1, OUTPUTS 2, ALGORITHM {algo}"
            ));
            let refs = bricks_element::FixedRefs(vec![("t".into(), TABLE.name, shared)]);
            let mut h = lookup(&refs, "t", 2);
            h.push_packets(0, (0..64).map(|_| udp(0, [10, 1, 2, 3])));
            let (a, b) = (h.take(0), h.take(1));
            assert_eq!(a.len() + b.len(), 64, "{algo}");
            assert!(a.is_empty() || b.is_empty(), "{algo}: one flow, one path");
            for p in a.iter().chain(&b) {
                assert!(
                    [Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2)]
                        .contains(&p.anno().dst_ip),
                    "{algo}"
                );
            }
        }
    }

    #[test]
    fn wrong_arguments_are_refused_with_the_reason() {
        let (_tables, refs) = two_tenants();
        let ports = |n| PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push; n],
        };
        let err = |args: &str, n: usize| {
            Harness::with_refs(&LOOKUP, args, ports(n), &refs)
                .err()
                .unwrap_or_else(|| panic!("{args}: accepted"))
        };
        assert!(err("", 2).contains("expected the VRRouteTable"));
        assert!(err("red, green", 2).contains("`green` does not name an element"));
        let e = err("red, blue", 1);
        assert!(
            e.contains("routes to 2 outputs") && e.contains("has 1"),
            "{e}"
        );
        let other = bricks_element::FixedRefs(vec![(
            "q".into(),
            "Queue",
            Arc::new(0u32) as Arc<dyn Any + Send + Sync>,
        )]);
        let e = Harness::with_refs(&LOOKUP, "q", ports(1), &other)
            .err()
            .unwrap();
        assert!(e.contains("`q` is a Queue"), "{e}");

        assert!(table_error("10.0.0.0/8 0, OUTPUTS 0").contains("OUTPUTS must be 1"));
        assert!(table_error("10.0.0.0/8 1").contains("out of range"));
        assert!(table_error("10.0.0.0/8 0, ALGORITHM hash").contains("ALGORITHM"));
        // A linear table is bounded: a route past its MEMORY is refused,
        // in the arguments and in `add`.
        let e = table_error("10.0.0.0/8 0, 11.0.0.0/8 0, ALGORITHM linear, MEMORY 16");
        assert!(e.contains("linear") && e.contains("use a trie"), "{e}");
        let (mut t, _) = table("10.0.0.0/8 0, ALGORITHM linear, MEMORY 16");
        let e = t.write_handler("add", "11.0.0.0/8 0").unwrap_err();
        assert!(e.contains("use a trie"), "{e}");
        let listed = t.read_handler("table").unwrap();
        assert!(
            listed.contains("10.0.0.0/8") && !listed.contains("11.0.0.0"),
            "{listed}"
        );
    }

    #[test]
    fn a_batch_of_many_routers_and_every_algorithm_is_answered_packet_by_packet() {
        // More packets than the tries walk together, interleaved over a
        // radix router, a direct one, a linear one and a router with no
        // table.
        let (_r, radix) = table("10.0.0.0/8 0, 10.1.0.0/16 10.9.9.9 1, OUTPUTS 2");
        let (_d, direct) = table("10.0.0.0/8 1, 10.2.0.0/16 0, ALGORITHM direct, OUTPUTS 2");
        let (_l, linear) = table("10.0.0.0/8 1, 10.3.0.0/16 0, ALGORITHM linear, OUTPUTS 2");
        let refs = bricks_element::FixedRefs(vec![
            ("r".into(), TABLE.name, radix),
            ("d".into(), TABLE.name, direct),
            ("l".into(), TABLE.name, linear),
        ]);
        let mut h = lookup(&refs, "r, d, l", 2);
        let mut want: [Vec<(u16, Ipv4Addr)>; 2] = [Vec::new(), Vec::new()];
        let mut packets = Vec::new();
        for k in 0..100u8 {
            let vr = u16::from(k % 4);
            let dst = [10, k % 4, 0, k];
            packets.push(udp(vr, dst));
            let d = Ipv4Addr::from(dst);
            match (vr, dst[1]) {
                (0, 1) => want[1].push((0, Ipv4Addr::new(10, 9, 9, 9))),
                (0, _) => want[0].push((0, d)),
                (1, 2) => want[0].push((1, d)),
                (1, _) => want[1].push((1, d)),
                (2, 3) => want[0].push((2, d)),
                (2, _) => want[1].push((2, d)),
                _ => {}
            }
        }
        h.push_packets(0, packets);
        for (o, want) in want.iter().enumerate() {
            let got: Vec<(u16, Ipv4Addr)> = h
                .take(o)
                .iter()
                .map(|p| (p.anno().vrouter, p.anno().dst_ip))
                .collect();
            assert_eq!(&got, want, "output {o}");
        }
        assert_eq!(h.stats().get("no_router"), Some(25));
        assert_eq!(h.stats().get("no_route"), Some(0));
    }

    #[test]
    fn every_algorithm_answers_alike() {
        for algo in ["radix", "direct", "linear"] {
            let (_t, shared) = table(&format!(
                "10.0.0.0/8 0, 10.1.0.0/16 10.9.9.9 1, 10.1.2.3 2, ALGORITHM {algo}, OUTPUTS 3"
            ));
            let refs = bricks_element::FixedRefs(vec![("t".into(), TABLE.name, shared)]);
            let mut h = lookup(&refs, "t", 3);
            h.push_packets(
                0,
                [
                    udp(0, [10, 2, 0, 1]),
                    udp(0, [10, 1, 0, 1]),
                    udp(0, [10, 1, 2, 3]),
                    udp(0, [11, 0, 0, 1]),
                ],
            );
            let got: Vec<Vec<Ipv4Addr>> = (0..3)
                .map(|o| h.take(o).iter().map(|p| p.anno().dst_ip).collect())
                .collect();
            assert_eq!(
                got,
                [
                    vec![Ipv4Addr::new(10, 2, 0, 1)],
                    vec![Ipv4Addr::new(10, 9, 9, 9)],
                    vec![Ipv4Addr::new(10, 1, 2, 3)]
                ],
                "{algo}"
            );
            assert_eq!(h.stats().get("no_route"), Some(1), "{algo}");
        }
    }

    proptest::proptest! {
        /// A linear table's line answers as a radix trie of the same
        /// routes, gateways included: tables of up to six routes (those
        /// that fit the line and those one route past it), prefixes of
        /// every length and /0, addresses on and beside the prefixes.
        #[test]
        fn a_line_answers_as_a_trie(
            routes in proptest::collection::vec(
                (proptest::prelude::any::<u32>(), 0u8..=32, 0u8..4),
                0..=6,
            ),
            probes in proptest::collection::vec(proptest::prelude::any::<u32>(), 1..8),
        ) {
            let mut text = Vec::new();
            let mut targets = probes.clone();
            let mut seen = std::collections::BTreeSet::new();
            for &(a, len, hop) in &routes {
                let a = a & Prefix4::mask(len);
                if !seen.insert((a, len)) {
                    continue;
                }
                // Hop 3: output 2 through a gateway.
                let via = if hop == 3 { "10.9.9.9 2".to_string() } else { hop.to_string() };
                text.push(format!("{}/{len} {via}", Ipv4Addr::from(a)));
                let last = a | !Prefix4::mask(len);
                targets.extend([a, a.wrapping_add(1), a.wrapping_sub(1), last]);
            }
            let answers = |algo: &str| {
                let routes: String = text.iter().map(|r| format!("{r}, ")).collect();
                let (_t, shared) = table(&format!("{routes}ALGORITHM {algo}, OUTPUTS 3"));
                let refs = bricks_element::FixedRefs(vec![("t".into(), TABLE.name, shared)]);
                let mut h = lookup(&refs, "t", 3);
                let packets: Vec<Packet> =
                    targets.iter().map(|&d| udp(0, d.to_be_bytes())).collect();
                h.push_packets(0, packets);
                // Each packet by its header's destination, with the next
                // hop its annotation names.
                let got: Vec<Vec<([u8; 4], Ipv4Addr)>> = (0..3)
                    .map(|o| {
                        h.take(o)
                            .iter()
                            .map(|p| (p.data()[16..20].try_into().unwrap(), p.anno().dst_ip))
                            .collect()
                    })
                    .collect();
                (got, h.stats().get("no_route"))
            };
            proptest::prop_assert_eq!(answers("linear"), answers("radix"), "{:?}", text);
        }
    }

    /// Linear tables answer from the lookup's own line of each router;
    /// every change through a table's handlers is seen by the next batch,
    /// and a table that outgrows the line (more routes, an equal-cost
    /// group) is looked up in the table, with the same answers.
    #[test]
    fn a_linear_tables_line_follows_every_change() {
        let (mut red, red_t) = table(
            "10.0.0.0/24 0, 0.0.0.0/0 10.0.0.1 1, 192.0.2.7/32 2, ALGORITHM linear, OUTPUTS 3",
        );
        let (mut blue, blue_t) = table("10.0.0.0/24 10.0.0.254 1, ALGORITHM linear, OUTPUTS 3");
        let refs = bricks_element::FixedRefs(vec![
            ("red".into(), TABLE.name, red_t),
            ("blue".into(), TABLE.name, blue_t),
        ]);
        let mut h = lookup(&refs, "red, blue", 3);
        // Each packet's (output, router, annotation) after one batch.
        let run = |h: &mut Harness, packets: Vec<Packet>| {
            h.push_packets(0, packets);
            let mut got = Vec::new();
            for o in 0..3 {
                for p in h.take(o) {
                    got.push((o, p.anno().vrouter, p.anno().dst_ip.octets()));
                }
            }
            got.sort();
            got
        };
        let probe = || {
            vec![
                udp(0, [10, 0, 0, 5]),
                udp(0, [8, 8, 8, 8]),
                udp(0, [192, 0, 2, 7]),
                udp(1, [10, 0, 0, 5]),
                udp(1, [8, 8, 8, 8]),
            ]
        };
        assert_eq!(
            run(&mut h, probe()),
            [
                (0, 0, [10, 0, 0, 5]),
                (1, 0, [10, 0, 0, 1]),
                (1, 1, [10, 0, 0, 254]),
                (2, 0, [192, 0, 2, 7]),
            ]
        );
        assert_eq!(h.stats().get("no_route"), Some(1));
        // Added, changed and removed routes, each seen by the next batch.
        blue.write_handler("add", "0.0.0.0/0 10.0.0.9 2").unwrap();
        red.write_handler("set", "0.0.0.0/0 10.0.0.2 1").unwrap();
        red.write_handler("remove", "192.0.2.7/32").unwrap();
        assert_eq!(
            run(&mut h, probe()),
            [
                (0, 0, [10, 0, 0, 5]),
                (1, 0, [10, 0, 0, 2]),
                (1, 0, [10, 0, 0, 2]),
                (1, 1, [10, 0, 0, 254]),
                (2, 1, [10, 0, 0, 9]),
            ]
        );
        // Past the line: six routes; the answers stay the table's (an
        // equal-cost group is the other way past it: see
        // `equal_cost_routes_keep_a_flow_on_one_path`).
        for k in 1..=4 {
            red.write_handler("add", &format!("172.16.{k}.0/24 2"))
                .unwrap();
        }
        let six = run(&mut h, probe());
        assert_eq!(
            six[..3],
            [
                (0, 0, [10, 0, 0, 5]),
                (1, 0, [10, 0, 0, 2]),
                (1, 0, [10, 0, 0, 2])
            ]
        );
        assert_eq!(
            run(&mut h, vec![udp(0, [172, 16, 3, 1])]),
            [(2, 0, [172, 16, 3, 1])]
        );
    }

    #[test]
    fn a_line_holds_a_few_one_hop_routes_and_nothing_else() {
        let p = |a: [u8; 4], len| (Prefix4::new(u32::from_be_bytes(a), len), NextHop(0));
        // Output 3 through 10.0.0.1 (as `v4_words` makes it).
        let gw = u32::from_ne_bytes([10, 0, 0, 1]);
        let words = [3u64 << 32 | u64::from(gw)];
        let h = Hot::of(&[p([10, 1, 0, 0], 16), p([0, 0, 0, 0], 0)], &words);
        assert!(!h.is_slow());
        let ne = u32::from_ne_bytes;
        assert_eq!(
            (h.addr[0], h.mask[0]),
            (ne([10, 1, 0, 0]), ne([255, 255, 0, 0]))
        );
        assert_eq!((h.addr[1], h.mask[1]), (0, 0));
        assert_eq!((h.out[0], h.out[1], h.gateway[1]), (3, 3, gw));
        // With none of the scanned routes, no output.
        assert_eq!((h.out[HOT_SCAN], h.gateway[HOT_SCAN]), (DROP, 0));
        let at = |h: &Hot, a: [u8; 4]| h.answer(ne(a));
        assert_eq!(at(&h, [10, 1, 2, 3]), 0);
        assert_eq!(at(&h, [10, 2, 0, 0]), 1);
        let empty = Hot::of(&[], &words);
        assert!(!empty.is_slow());
        assert_eq!(empty.out[at(&empty, [10, 1, 2, 3])], DROP);
        // Five routes fit when the last is a /0, answered when none of
        // the four before it matches; otherwise four.
        let mut five = vec![p([10, 0, 0, 0], 8); HOT_SCAN + 1];
        assert!(Hot::of(&five, &words).is_slow());
        five[HOT_SCAN] = p([0, 0, 0, 0], 0);
        five[0] = p([10, 9, 9, 9], 32);
        let h = Hot::of(&five, &words);
        assert_eq!(
            (h.is_slow(), h.out[HOT_SCAN], h.gateway[HOT_SCAN]),
            (false, 3, gw)
        );
        assert_eq!(h.mask[0], u32::MAX);
        assert_eq!(at(&h, [10, 9, 9, 9]), 0);
        assert_eq!(at(&h, [10, 9, 9, 8]), 1);
        assert_eq!(at(&h, [11, 0, 0, 0]), HOT_SCAN);
        // Past the table's routes, every address finds no output.
        let one = Hot::of(&[p([10, 0, 0, 0], 8)], &words);
        assert_eq!(
            (
                one.out[at(&one, [10, 0, 0, 1])],
                one.out[at(&one, [0, 0, 0, 0])]
            ),
            (3, DROP)
        );
        assert!(!Hot::of(&five[1..], &words).is_slow());
        let six = vec![p([10, 0, 0, 0], 8); HOT_SCAN + 2];
        assert!(Hot::of(&six, &words).is_slow());
        assert!(Hot::of(&six[..1], &[table::V4_MANY]).is_slow());
        assert!(Hot::of(&six[..1], &[]).is_slow());
        assert!(Hot::of(&six[..1], &[u64::from(DROP) << 32]).is_slow());
        assert!(Hot::of(&six[..1], &[u64::from(SLOW) << 32]).is_slow());
        assert_eq!(std::mem::size_of::<Hot>(), 64);
    }

    /// The shared plane in a whole configuration: two tenants behind a
    /// VRDemux by MAC, both using 10.0.0.0/24, every demultiplexer output
    /// into one path; each tenant's packets leave by its own route, and
    /// batches reach the lookup whole.
    #[test]
    fn tenants_with_the_same_subnet_share_one_path() {
        let frame = |mac: &str| {
            format!(
                "\\<{mac} 020000000001 0800 4500001c 00010000 4011aeca c0000201 0a000005 \
                 13881388 00080000>"
            )
        };
        let config = format!(
            "red :: VRRouteTable(10.0.0.0/24 0, OUTPUTS 2);\n\
             blue :: VRRouteTable(10.0.0.0/24 10.0.0.254 1, OUTPUTS 2);\n\
             InfiniteSource(DATA {}, LIMIT 300, BURST 32) -> demux;\n\
             InfiniteSource(DATA {}, LIMIT 200, BURST 32) -> demux;\n\
             demux :: VRDemux(BY mac, 02:00:00:00:00:0a 0, 02:00:00:00:00:0b 1);\n\
             demux[0] -> plane; demux[1] -> plane;\n\
             plane :: Strip(14) -> CheckIPHeader -> rt :: VRIPLookup(red, blue);\n\
             rt[0] -> c0 :: Counter -> Discard; rt[1] -> c1 :: Counter -> Discard;",
            frame("02000000000a"),
            frame("02000000000b")
        );
        let s = crate::standard::testrun::run(&config);
        let count = crate::standard::testrun::count;
        assert_eq!(count(&s, "c0", "count"), 300);
        assert_eq!(count(&s, "c1", "count"), 200);
        assert_eq!(count(&s, "rt", "no_route"), 0);
        assert_eq!(count(&s, "red", "no_route"), 0);
    }
}
