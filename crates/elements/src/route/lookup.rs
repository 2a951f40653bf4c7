//! `LookupIPRoute`, `DirectIPLookup`, `RangeIPLookup`, `RadixIPLookup` and
//! `LookupIP6Route`:
//! longest-prefix-match routing at Internet scale (RFC 1812 §5.2.4.3).
//!
//! The three IPv4 classes take Click's route syntax and differ in the
//! lookup structure behind them: `DirectIPLookup` and `LookupIPRoute` use
//! DIR-24-8 (RouteBricks §5.1's D-lookup), `RadixIPLookup` the 4-bit-stride
//! multibit trie of Hardekopf et al. §4.1. A whole batch is looked up at
//! once so that the table's memory accesses overlap. Every worker's
//! instance reads the same table, which write handlers change in place
//! while traffic flows.

use super::live::{self, Live, RoutesArg, WeakSink};
use super::table::{self, Groups, RouteTable};
use crate::qos::memrefs::{self, MemCount};
use arc_swap::{ArcSwap, Cache};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats,
};
use bricks_lpm::source::{PeerSelect, RoutePrefix};
use bricks_lpm::{
    Answer, Dir24_8, Linear4, Lpm4, Lpm4Update, Lpm6Update, LpmError, NextHop, Poptrie6, Prefix4,
    Trie4, NO_ROUTE,
};
use bricks_packet::PerPacket;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

const KEYWORDS: &[Keyword] = &[
    Keyword {
        name: "ROUTES",
        ty: "file name or route source",
        default: Some("none"),
        doc: "also load the routes of this file (one `PREFIX [GATEWAY] OUTPUT` per line, \
              or an MRT TABLE_DUMP_V2 RIB dump, possibly gzip or bzip2 compressed; from an \
              MRT dump each prefix takes the route BGP's decision process chooses among the \
              peers' entries: highest LOCAL_PREF (absent: 100), shortest AS_PATH (an AS_SET \
              counts 1, confederation segments 0), lowest ORIGIN, lowest MED among routes from \
              the same neighbouring AS (absent: 0), lowest peer BGP identifier, lowest peer \
              address); or follow a live source while the router runs: \
              `netlink:table=ID[,proto=NAME]` (a Linux routing table, e.g. where BIRD's kernel \
              protocol or FRR's zebra writes; table main by default) or `fpm[:[ADDR:]PORT]` \
              (FRR zebra's FPM stream, 127.0.0.1:2620 by default); needs DEVICES",
    },
    Keyword {
        name: "DEVICES",
        ty: "interface names",
        default: Some("none"),
        doc: "with a live ROUTES source: the interface of each output, in order (`DEVICES \
              \"eth0 eth1\"`: routes out of eth0 leave by output 0; `-` for an output no \
              route leaves by, `eth0|tap0` for either name); routes out of other \
              interfaces are skipped and counted. The words `blackhole`, `unreachable` \
              and `prohibit` name the output for the kernel's routes of those types \
              (`DEVICES \"eth0 eth1 blackhole|unreachable|prohibit\"`, that output to \
              a Discard or an ICMPError); without one they are skipped and counted",
    },
    Keyword {
        name: "SKIP_ERRORS",
        ty: "boolean",
        default: Some("false"),
        doc: "skip malformed routes in ROUTES (reporting each) instead of refusing the file \
              (an MRT dump cut short is refused either way)",
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
        default: Some("1073741824"),
        doc: "refuse a table whose lookup structure would need more memory",
    },
];

/// The IPv4 classes' keywords: [`KEYWORDS`] and MEMREFS.
const KEYWORDS_V4: &[Keyword] = &[
    KEYWORDS[0],
    KEYWORDS[1],
    KEYWORDS[2],
    KEYWORDS[3],
    KEYWORDS[4],
    KEYWORDS[5],
    memrefs::KEYWORD,
];

macro_rules! memrefs_doc {
    () => {
        "\n\nWith MEMREFS true (or under `bricks run --memrefs`) the \
    counters mem_packets, mem_refs and mem_words count the table memory each packet's \
    lookup reads (Hardekopf et al.'s units, 32-bit words): RadixIPLookup one 64-bit entry \
    per trie level visited (1 reference, 2 words each; 1 to 8 levels), DirectIPLookup and \
    LookupIPRoute the 32-bit tbl24 entry and, for a /24 with longer prefixes, the tbl8 \
    entry (1 or 2 references of 1 word). The lookups are then made one by one instead of \
    a batch at a time. The next-hop group a lookup yields is not counted (it is usually \
    cached: a few groups serve a whole table). LookupIP6Route does not count."
    };
}

/// The IPv4 classes' counters.
const COUNTERS_V4: &[(&str, &str)] = &[
    ("no_route", "packets that matched no route"),
    ("routes", "routes in the table now"),
    ("memory", "bytes of the lookup structure"),
    memrefs::PACKETS,
    memrefs::REFS,
    memrefs::WORDS,
    LIVE_COUNTERS[0],
    LIVE_COUNTERS[1],
    LIVE_COUNTERS[2],
    LIVE_COUNTERS[3],
    LIVE_COUNTERS[4],
    LIVE_COUNTERS[5],
];

/// The counters of a live ROUTES source (the rest of
/// `bricks_control::Kind`'s are reported too).
const LIVE_COUNTERS: [(&str, &str); 6] = [
    ("route_updates_set", "routes a live source added or changed"),
    ("route_updates_removed", "routes a live source withdrew"),
    (
        "route_updates_unknown_interface",
        "routes skipped: out of an interface none of DEVICES",
    ),
    (
        "route_updates_unsupported",
        "routes skipped: blackhole, unreachable, source-specific, ...",
    ),
    (
        "route_messages_malformed",
        "netlink or FPM messages skipped as truncated or malformed",
    ),
    (
        "route_source_resyncs",
        "full re-reads after lost notifications",
    ),
];

macro_rules! description {
    () => {
        "Each argument is a route in Click's syntax: `ADDR/LEN [GATEWAY] \
    OUT` (LEN may be a netmask; GATEWAY `-` or absent for a directly connected \
    network). Several routes for one prefix form an equal-cost group: a packet takes \
    one of them by its flow hash (computed from addresses, protocol and ports when the \
    device gave none), so a flow never changes path. For each packet, the longest \
    prefix containing its destination address annotation is chosen (RFC 1812 \
    5.2.4.3); a gateway replaces the annotation so that ARP resolves the next hop; the \
    packet leaves on the route's output. Packets that match no route are dropped and \
    counted.\n\nThe table is shared by every worker and can change while traffic \
    flows: write `add ROUTE` or `set ROUTE` to add or replace a route, `remove \
    PREFIX` to withdraw one, or to `ctrl` several `add`, `set` and `remove` commands, \
    one a line, all checked before any is applied (IPv4 tables). The `lookup ADDR` read \
    handler gives the output and gateway for ADDR, -1 for none; `table` lists every \
    route. A route's destination \
    may be a bare address, a host route, as in Click. Lookups never lock and never see \
    a half-updated entry.\n\nWith `ROUTES netlink:table=ID` the element follows a Linux \
    routing table while the router runs: the table is read when the router starts and \
    every route added, changed or deleted there (by `ip route`, BIRD's kernel protocol, \
    FRR's zebra) is applied within milliseconds. With `ROUTES fpm` it listens for FRR \
    zebra's FPM connection (`zebra -M dplane_fpm_nl`) and applies the FIB zebra streams. \
    A route's interface picks the output by DEVICES, its gateway becomes the destination \
    annotation; of several routes for a prefix the lowest metric's is used, as the \
    kernel does. Learnt routes override configured ones for the same prefix, and a \
    withdrawal gives the configured route back. Blackhole, unreachable and prohibit \
    routes go to the output DEVICES names for them, so that a hole inside a covering \
    route discards (or answers with ICMP) as Linux would."
    };
}

/// The IPv4 classes' description.
const DESCRIPTION_V4: &str = concat!(description!(), memrefs_doc!());

/// The `DirectIPLookup` class (DIR-24-8).
pub static DIRECT: ElementClass = ElementClass {
    name: "DirectIPLookup",
    ports: "1/-",
    processing: "h/h",
    manual: &DIRECT_MANUAL,
    make: |a, p| make_v4(a, p, Algorithm::Dir24_8),
};

/// The `LookupIPRoute` class (DIR-24-8 as well).
pub static LOOKUP: ElementClass = ElementClass {
    name: "LookupIPRoute",
    ports: "1/-",
    processing: "h/h",
    manual: &LOOKUP_MANUAL,
    make: |a, p| make_v4(a, p, Algorithm::Dir24_8),
};

/// The `RadixIPLookup` class (4-bit-stride multibit trie).
pub static RADIX: ElementClass = ElementClass {
    name: "RadixIPLookup",
    ports: "1/-",
    processing: "h/h",
    manual: &RADIX_MANUAL,
    make: |a, p| make_v4(a, p, Algorithm::Trie4),
};

/// The `RangeIPLookup` class (Click's range table in front of a
/// DirectIPLookup; bricks' DIR-24-8 table serves the same lookups).
pub static RANGE: ElementClass = ElementClass {
    name: "RangeIPLookup",
    ports: "1/-",
    processing: "h/h",
    manual: &RANGE_MANUAL,
    make: |a, p| make_v4(a, p, Algorithm::Dir24_8),
};

/// The `LookupIP6Route` class.
pub static LOOKUP6: ElementClass = ElementClass {
    name: "LookupIP6Route",
    ports: "1/-",
    processing: "h/h",
    manual: &LOOKUP6_MANUAL,
    make: make_v6,
};

static DIRECT_MANUAL: Manual = Manual {
    summary: "IPv4 routing lookup with DIR-24-8, for full Internet tables",
    synopsis: "DirectIPLookup(ADDR/LEN [GATEWAY] OUT, ... [, ROUTES FILE|SOURCE, DEVICES NAMES, MEMREFS bool])",
    description: DESCRIPTION_V4,
    ports: "one push input (packets with a destination address annotation); one push output per route output",
    keywords: KEYWORDS_V4,
    counters: COUNTERS_V4,
    example: "InfiniteSource(LIMIT 1) -> Strip(14) -> CheckIPHeader -> rt :: DirectIPLookup(10.0.0.0/8 0, 0.0.0.0/0 10.0.0.1 1); rt[0] -> Discard; rt[1] -> Discard;",
    see_also: &["RadixIPLookup", "RangeIPLookup", "LookupIPRoute", "StaticIPLookup", "LookupIP6Route"],
};

static LOOKUP_MANUAL: Manual = Manual {
    summary: "IPv4 routing lookup (DIR-24-8), Click's general route table element",
    synopsis: "LookupIPRoute(ADDR/LEN [GATEWAY] OUT, ... [, ROUTES FILE|SOURCE, DEVICES NAMES, MEMREFS bool])",
    example: "InfiniteSource(LIMIT 1) -> Strip(14) -> CheckIPHeader -> rt :: LookupIPRoute(10.0.0.0/8 0, 0.0.0.0/0 10.0.0.1 1); rt[0] -> Discard; rt[1] -> Discard;",
    ..DIRECT_MANUAL
};

static RADIX_MANUAL: Manual = Manual {
    summary: "IPv4 routing lookup with a 4-bit-stride multibit trie",
    synopsis: "RadixIPLookup(ADDR/LEN [GATEWAY] OUT, ... [, ROUTES FILE|SOURCE, DEVICES NAMES, MEMREFS bool])",
    example: "InfiniteSource(LIMIT 1) -> Strip(14) -> CheckIPHeader -> rt :: RadixIPLookup(10.0.0.0/8 0, 0.0.0.0/0 10.0.0.1 1); rt[0] -> Discard; rt[1] -> Discard;",
    ..DIRECT_MANUAL
};

static RANGE_MANUAL: Manual = Manual {
    summary: "IPv4 routing lookup, Click's range-table element, here on DIR-24-8",
    synopsis: "RangeIPLookup(ADDR/LEN [GATEWAY] OUT, ... [, ROUTES FILE|SOURCE, DEVICES NAMES, MEMREFS bool])",
    example: "InfiniteSource(LIMIT 1) -> Strip(14) -> CheckIPHeader -> rt :: RangeIPLookup(10.0.0.0/8 0, 0.0.0.0/0 10.0.0.1 1); rt[0] -> Discard; rt[1] -> Discard;",
    ..DIRECT_MANUAL
};

static LOOKUP6_MANUAL: Manual = Manual {
    summary: "IPv6 routing lookup (Poptrie), for full Internet tables",
    synopsis: "LookupIP6Route(ADDR/LEN [GATEWAY] OUT, ... [, ROUTES FILE|SOURCE, DEVICES NAMES])",
    description: "IPv6 counterpart of DirectIPLookup: routes `ADDR/LEN [GATEWAY] OUT` (IPv6 \
        prefixes; IPv4 lines of a ROUTES file are ignored), equal-cost groups, the same \
        handlers. Among equal-cost paths a packet's path is chosen by its flow: the \
        addresses and the flow label (RFC 6438), or with a zero label the next header and \
        the ports of a TCP, UDP or SCTP header that follows the IPv6 header. The destination is the packet's IPv6 destination annotation, or, when \
        that is unset, the destination field of the IPv6 header at the network header \
        annotation (or the start of the packet). A gateway replaces the annotation. From a \
        live source (ROUTES netlink:... or fpm, which one IPv4 lookup of the router may \
        follow too) routes for link-local (fe80::/10) and multicast (ff00::/8) prefixes are \
        not taken: no router forwards by them (RFC 4291 section 2.5.6).",
    ports: "one push input (IPv6 packets); one push output per route output",
    example: "InfiniteSource(LIMIT 1) -> rt :: LookupIP6Route(2001:db8::/32 0, ::/0 fe80::1 1); rt[0] -> Discard; rt[1] -> Discard;",
    see_also: &["DirectIPLookup"],
    keywords: KEYWORDS,
    counters: &[
        ("no_route", "packets that matched no route"),
        ("routes", "routes in the table now"),
        ("memory", "bytes of the lookup structure"),
        LIVE_COUNTERS[0],
        LIVE_COUNTERS[1],
        LIVE_COUNTERS[2],
        LIVE_COUNTERS[3],
        LIVE_COUNTERS[4],
        LIVE_COUNTERS[5],
    ],
};

#[derive(Debug, Clone, Copy)]
pub(super) enum Algorithm {
    Dir24_8,
    Trie4,
    /// A few routes scanned longest first (`VRRouteTable`'s `linear`).
    Linear4,
}

/// Reads the routes of a lookup element: those of its arguments, then
/// those of its ROUTES file for the family `keep` accepts (a file may mix
/// IPv4 and IPv6; each family's element takes its own).
#[allow(clippy::type_complexity)]
fn read_routes<'a>(
    args: &mut Args<'a>,
    keep: fn(&bricks_lpm::source::RoutePrefix) -> bool,
    noutputs: usize,
) -> Result<
    (
        impl FnOnce() -> Result<table::ParsedRoutes, ArgError> + 'a,
        Option<Live>,
    ),
    ArgError,
> {
    let (file, live): (Option<PathBuf>, Option<Live>) = match live::read(args)? {
        RoutesArg::None => (None, None),
        RoutesArg::File(f) => (Some(f), None),
        RoutesArg::Live(spec, devices) => (None, Some(Live::new(spec, devices, noutputs)?)),
    };
    let skip: bool = args.read("SKIP_ERRORS")?.unwrap_or(false);
    let peer = read_peer(args)?;
    // Read as they are taken, not gathered first: a table given inline
    // can be millions of arguments. Only the instance that makes the
    // shared table reads them; an error is the table's, given when it is
    // made.
    let inline = if args.shared_made() {
        args.skip_rest();
        Ok(table::ParsedRoutes::default())
    } else {
        let mut parsed = table::ParsedRoutes::default();
        let mut error = None;
        args.rest_each(|text, span| {
            if error.is_none() {
                error = parsed.push_text(text, span).err();
            }
        });
        error.map_or(Ok(parsed), Err)
    };
    let routes = move || {
        let mut routes = inline?;
        if let Some(f) = file {
            routes.routes.extend(
                table::load_file(&f, skip, peer)?
                    .into_iter()
                    .filter(|r| keep(&r.prefix)),
            );
        }
        Ok(routes)
    };
    Ok((routes, live))
}

/// PEER or PEER_AS, not both.
fn read_peer(args: &mut Args<'_>) -> Result<Option<PeerSelect>, ArgError> {
    let addr: Option<String> = args.read("PEER")?;
    let asn: Option<u32> = args.read("PEER_AS")?;
    match (addr, asn) {
        (Some(_), Some(_)) => Err(ArgError::new("give PEER or PEER_AS, not both")),
        (Some(a), None) => a
            .parse()
            .map(|a| Some(PeerSelect::Address(a)))
            .map_err(|_| {
                ArgError::new(format!(
                    "bad argument PEER: expected IP address, found `{a}`"
                ))
            }),
        (None, asn) => Ok(asn.map(PeerSelect::As)),
    }
}

fn make_v4(
    args: &mut Args<'_>,
    ports: &PortInfo,
    algo: Algorithm,
) -> Result<Box<dyn Element>, ArgError> {
    let count = args.memrefs()?;
    let t = v4_shared(args, ports.noutputs(), algo, count, table::DEFAULT_MEMORY)?;
    Ok(if count {
        Box::new(IpRouteLookup::<true>::new(t))
    } else {
        Box::new(IpRouteLookup::<false>::new(t))
    })
}

/// Reads an IPv4 table's MEMORY, routes and ROUTES source, and makes the
/// table every worker's instance shares (the first instance makes it),
/// with routes to `noutputs` outputs; with `count`, kept by type for
/// counting memory references too. MEMORY is `default_memory` when not
/// given.
pub(super) fn v4_shared(
    args: &mut Args<'_>,
    noutputs: usize,
    algo: Algorithm,
    count: bool,
    default_memory: usize,
) -> Result<Arc<V4Table>, ArgError> {
    let memory: usize = args.read("MEMORY")?.unwrap_or(default_memory);
    let (routes, live) = read_routes(args, |p| matches!(p, RoutePrefix::V4(_)), noutputs)?;
    // Every instance of the element has the same arguments and build
    // options, so the one that makes the shared table decides for all.
    args.shared(|_| {
        let routes = routes()?;
        let mut counting = Counting4::None;
        let mut radix = None;
        let mut linear = None;
        let table = table::build_v4(routes, noutputs, |r| -> Result<Box<dyn Lpm4Update>, _> {
            Ok(match (algo, count) {
                (Algorithm::Dir24_8, false) => Box::new(Dir24_8::build(r, memory)?),
                (Algorithm::Trie4, false) => {
                    let t = Arc::new(Trie4::build(r, memory)?);
                    radix = Some(t.clone());
                    Box::new(Both(t))
                }
                (Algorithm::Dir24_8, true) => {
                    let d = Arc::new(Dir24_8::build(r, memory)?);
                    counting = Counting4::Dir24_8(d.clone());
                    Box::new(Both(d))
                }
                (Algorithm::Trie4, true) => {
                    let t = Arc::new(Trie4::build(r, memory)?);
                    counting = Counting4::Trie4(t.clone());
                    radix = Some(t.clone());
                    Box::new(Both(t))
                }
                // No element counts a linear table's references.
                (Algorithm::Linear4, _) => {
                    let t = Arc::new(Linear4::build(r, memory)?);
                    linear = Some(t.clone());
                    Box::new(Both(t))
                }
            })
        })?;
        if live.is_some() {
            table.keep_configured();
        }
        Ok(V4Table {
            table,
            radix,
            linear,
            counting,
            live,
            noutputs,
            missed: AtomicU64::new(0),
        })
    })
}

/// A shared table's published hop groups, as an [`arc_swap::Cache`]
/// reads them: a load and a compare a batch (or a packet) where
/// [`RouteTable::groups`] takes a guard, with an atomic exchange to give
/// it back (1.8 instructions a packet on a batch of 32).
pub(super) struct GroupsOf<T>(pub(super) Arc<T>);

/// A shared table that publishes hop groups.
pub(super) trait Publishes {
    fn groups_swap(&self) -> &ArcSwap<Groups>;
}

impl Publishes for V4Table {
    #[inline]
    fn groups_swap(&self) -> &ArcSwap<Groups> {
        self.table.groups_swap()
    }
}

impl Publishes for V6Table {
    #[inline]
    fn groups_swap(&self) -> &ArcSwap<Groups> {
        self.table.groups_swap()
    }
}

impl<T: Publishes> std::ops::Deref for GroupsOf<T> {
    type Target = ArcSwap<Groups>;
    #[inline]
    fn deref(&self) -> &ArcSwap<Groups> {
        self.0.groups_swap()
    }
}

/// A shared table's hop groups, reloaded only when the table publishes
/// new ones.
pub(super) type GroupsCache<T> = Cache<GroupsOf<T>, Arc<Groups>>;

/// An IPv4 element's shared table, and the same structure again by its
/// type when the element counts memory references.
pub(super) struct V4Table {
    pub(super) table: RouteTable<dyn Lpm4Update>,
    /// The table's structure by its type when it is a radix trie: a
    /// lookup of many tables at once walks them together
    /// ([`Trie4::lookup_each`]).
    pub(super) radix: Option<Arc<Trie4>>,
    /// The same when it is a linear table.
    pub(super) linear: Option<Arc<Linear4>>,
    counting: Counting4,
    pub(super) live: Option<Live>,
    /// The outputs its routes may name.
    pub(super) noutputs: usize,
    /// Packets no route matched, for a table that elements of its own
    /// look up in (`VRRouteTable`): counted where they are looked up,
    /// on any worker.
    pub(super) missed: AtomicU64,
}

impl V4Table {
    /// Starts the table's live source (on the first worker).
    pub(super) fn start_live(self: &Arc<Self>, cx: &mut Context<'_>) {
        start_live(
            self,
            self.live.as_ref(),
            true,
            cx,
            |t, p, h| t.table.set_route(p, h),
            |t, p| t.table.remove_route(p),
        );
    }

    /// The table's size, and its live source's counters.
    pub(super) fn stats(&self, s: &mut Stats) {
        s.counter("routes", self.table.lpm.route_count() as u64);
        s.counter("memory", self.table.lpm.memory_bytes() as u64);
        if let Some(l) = &self.live {
            l.stats(s);
        }
    }

    /// The read handlers every IPv4 table has: `table`.
    pub(super) fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "table").then(|| self.table.table_text())
    }

    /// The read handlers with an argument: `lookup ADDR`.
    pub(super) fn call_handler(
        &self,
        handler: &str,
        value: &str,
        write: bool,
    ) -> Option<Result<String, String>> {
        (handler == "lookup" && !write).then(|| self.table.lookup_text(value))
    }
}

/// The handler methods of an element whose field `t` is a [`V4Table`]:
/// every handler is the shared table's (`add`, `set`, `remove`, `ctrl`,
/// `lookup`, `table`).
macro_rules! v4_table_handlers {
    () => {
        fn handler_is_shared(&self, _handler: &str) -> bool {
            // Every handler edits the table all workers share.
            true
        }

        fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
            self.t.table.handle(handler, value)
        }

        fn call_handler(
            &mut self,
            handler: &str,
            value: &str,
            write: bool,
            _cx: &mut Context<'_>,
        ) -> Option<Result<String, String>> {
            self.t.call_handler(handler, value, write)
        }

        fn read_handler(&self, handler: &str) -> Option<String> {
            self.t.read_handler(handler)
        }

        fn handlers(&self) -> &'static [Handler] {
            &V4_HANDLERS
        }
    };
}
pub(super) use v4_table_handlers;

/// The handlers of an IPv4 route table.
pub(super) static V4_HANDLERS: [Handler; 6] = [
    Handler::w("add"),
    Handler::w("set"),
    Handler::w("remove"),
    Handler::w("ctrl"),
    Handler::r("lookup"),
    Handler::r("table"),
];

/// The route table of an IPv4 lookup element (DirectIPLookup,
/// LookupIPRoute, RadixIPLookup, RangeIPLookup), from its shared state;
/// `None` for any other element's.
pub fn v4_table(
    shared: &Arc<dyn std::any::Any + Send + Sync>,
) -> Option<&RouteTable<dyn Lpm4Update>> {
    shared.downcast_ref::<V4Table>().map(|t| &t.table)
}

/// The lookup structure of a counting element, by type.
enum Counting4 {
    None,
    Trie4(Arc<Trie4>),
    Dir24_8(Arc<Dir24_8>),
}

impl Counting4 {
    /// The lookup of `addr`, and the references and 32-bit words it read.
    #[inline]
    fn lookup(&self, addr: u32) -> (Option<NextHop>, u64, u64) {
        match self {
            Counting4::Trie4(t) => {
                // One 64-bit entry per level.
                let (nh, levels) = t.lookup_counting(addr);
                (nh, levels as u64, 2 * levels as u64)
            }
            Counting4::Dir24_8(d) => {
                // One 32-bit entry per table.
                let (nh, refs) = d.lookup_counting(addr);
                (nh, refs as u64, refs as u64)
            }
            Counting4::None => (None, 0, 0),
        }
    }
}

/// A lookup structure held by the route table and by the counting side
/// at once.
struct Both<L>(Arc<L>);

impl<L: Lpm4> Lpm4 for Both<L> {
    fn lookup(&self, addr: u32) -> Option<NextHop> {
        self.0.lookup(addr)
    }

    fn lookup_batch(&self, addrs: &[u32], out: &mut [Option<NextHop>]) {
        self.0.lookup_batch(addrs, out)
    }

    fn lookup_batch_raw(&self, addrs: &mut [u32]) {
        self.0.lookup_batch_raw(addrs)
    }

    fn memory_bytes(&self) -> usize {
        self.0.memory_bytes()
    }

    fn name(&self) -> &'static str {
        self.0.name()
    }
}

impl<L: Lpm4Update> Lpm4Update for Both<L> {
    fn insert(&self, prefix: Prefix4, next_hop: NextHop) -> Result<Option<NextHop>, LpmError> {
        self.0.insert(prefix, next_hop)
    }

    fn remove(&self, prefix: Prefix4) -> Result<Option<NextHop>, LpmError> {
        self.0.remove(prefix)
    }

    fn route_count(&self) -> usize {
        self.0.route_count()
    }
}

fn make_v6(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let memory: usize = args.read("MEMORY")?.unwrap_or(table::DEFAULT_MEMORY);
    let noutputs = ports.noutputs();
    let (routes, live) = read_routes(args, |p| matches!(p, RoutePrefix::V6(_)), noutputs)?;
    let t: Arc<V6Table> = args.shared(|_| {
        let routes = routes()?;
        let table = table::build_v6(routes, noutputs, |r| -> Result<Box<dyn Lpm6Update>, _> {
            Ok(Box::new(Poptrie6::build(r, memory)?))
        })?;
        if live.is_some() {
            table.keep_configured();
        }
        Ok(V6Table { table, live })
    })?;
    Ok(Box::new(Ip6RouteLookup {
        groups: Cache::new(GroupsOf(Arc::clone(&t))),
        t,
        no_route: 0,
        reports_table: true,
    }))
}

/// IPv4 route lookup over a shared table; with `M` it counts memory
/// references.
pub struct IpRouteLookup<const M: bool = false> {
    t: Arc<V4Table>,
    groups: GroupsCache<V4Table>,
    no_route: u64,
    /// The table is shared: one worker reports its size, so that the
    /// sum over workers is the table's.
    reports_table: bool,
    mem: MemCount,
}

impl<const M: bool> IpRouteLookup<M> {
    fn new(t: Arc<V4Table>) -> IpRouteLookup<M> {
        IpRouteLookup {
            groups: Cache::new(GroupsOf(Arc::clone(&t))),
            t,
            no_route: 0,
            reports_table: true,
            mem: MemCount::default(),
        }
    }
}

impl<const M: bool> Element for IpRouteLookup<M> {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.reports_table = cx.worker() == 0;
        self.t.start_live(cx);
    }

    /// Hot swap: the counters. The table is the old one itself, routes
    /// added and removed while running included, when the arguments did
    /// not change; otherwise it is the new arguments' table.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        if let Some(old) = bricks_element::taken_from::<IpRouteLookup<M>>(old) {
            self.no_route += old.no_route;
            self.mem = std::mem::take(&mut old.mem);
        }
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        // The destinations, each replaced by its raw answer (a group's
        // index, or NO_ROUTE): `route_v4`'s one bounds check on the group
        // words tells a missing route too.
        let mut found = PerPacket::new();
        found.gather(batch, |p| u32::from(p.anno().dst_ip));
        if M {
            for a in found.iter_mut() {
                let (nh, refs, words) = self.t.counting.lookup(*a);
                *a = u32::answer(nh);
                self.mem.packets += 1;
                self.mem.mem.add(refs, words);
            }
        } else {
            self.t.table.lpm.lookup_batch_raw(&mut found);
        }
        let groups = &**self.groups.load();
        let words = groups.v4_words();
        if let Some(word) = table::one_hop_v4(&found, words) {
            // Every packet has the same one-hop answer: the batch goes on
            // whole, as IPv6's.
            let gw = word as u32;
            if gw != 0 {
                let g = Ipv4Addr::from(gw.to_ne_bytes());
                for p in batch.iter_mut() {
                    p.anno_mut().dst_ip = g;
                }
            }
            return cx.push((word >> 32) as usize, batch);
        }
        let missed = &mut self.no_route;
        // The closure owns what it reads for every packet, so that it
        // stays in registers (captured by reference, it was loaded and
        // stored again for each packet).
        cx.push_classified_by(batch, &found, move |p, r| {
            let out = table::route_v4(groups, words, r, p);
            if out.is_none() {
                *missed += 1;
            }
            out
        });
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("no_route", self.no_route);
        if self.reports_table {
            self.t.stats(s);
        }
        if M {
            self.mem.stats(s);
        }
    }

    v4_table_handlers!();
}

/// An IPv6 element's shared table and its live source.
struct V6Table {
    table: RouteTable<dyn Lpm6Update>,
    live: Option<Live>,
}

impl std::ops::Deref for V6Table {
    type Target = RouteTable<dyn Lpm6Update>;
    fn deref(&self) -> &Self::Target {
        &self.table
    }
}

/// Starts a table's live source on the first worker; a source that cannot
/// start stops the router with the reason.
fn start_live<T: Send + Sync + 'static>(
    t: &Arc<T>,
    live: Option<&Live>,
    v4: bool,
    cx: &mut Context<'_>,
    set: fn(&T, RoutePrefix, &[bricks_lpm::source::Hop]) -> Result<(), String>,
    remove: fn(&T, RoutePrefix) -> Result<(), String>,
) {
    let Some(live) = live else { return };
    if cx.worker() != 0 {
        return;
    }
    let name = cx.name().to_string();
    if let Err(e) = live.start(&name, v4, WeakSink::new(t, set, remove)) {
        cx.report_error(e);
        cx.request_stop();
    }
}

/// IPv6 route lookup over a shared table.
pub struct Ip6RouteLookup {
    t: Arc<V6Table>,
    groups: GroupsCache<V6Table>,
    no_route: u64,
    /// The table is shared: one worker reports its size, so that the
    /// sum over workers is the table's.
    reports_table: bool,
}

/// The destination every packet of `batch` is routed by, when there
/// are two packets or more and all of their annotations name one
/// address (an unset annotation, which sends the lookup to the header,
/// does not count).
#[inline(always)]
fn one_destination6(batch: &Batch) -> Option<u128> {
    if batch.len() < 2 {
        return None;
    }
    // As the annotation's bytes: no byte swap per packet.
    let a = table::one_key(batch, |p| u128::from_ne_bytes(p.anno().dst_ip6.octets()))?;
    (a != 0).then(|| u128::from_be_bytes(a.to_ne_bytes()))
}

/// The IPv6 destination a packet is routed by.
#[inline]
fn dst6(p: &bricks_element::Packet) -> u128 {
    let a = p.anno().dst_ip6;
    if !a.is_unspecified() {
        return u128::from(a);
    }
    let ip = p.l3_bytes();
    match ip.get(24..40) {
        Some(d) if ip[0] >> 4 == 6 => {
            let mut b = [0u8; 16];
            b.copy_from_slice(d);
            u128::from_be_bytes(b)
        }
        _ => 0,
    }
}

/// The hop of a group of several for `p`, by its flow hash: sets the
/// next-hop annotation and returns the output. Out of line, so that the
/// one-hop answer stays in the lookup's loop.
#[inline(never)]
fn pick_hop6(group: &[bricks_lpm::source::Hop], p: &mut bricks_element::Packet) -> usize {
    let hop = table::pick(group, table::flow_hash(p));
    p.anno_mut().dst_ip6 = table::gateway_v6(hop).unwrap_or(Ipv6Addr::from(dst6(p)));
    hop.output as usize
}

impl Element for Ip6RouteLookup {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.reports_table = cx.worker() == 0;
        start_live(
            &self.t,
            self.t.live.as_ref(),
            false,
            cx,
            |t, p, h| t.table.set_route6(p, h),
            |t, p| t.table.remove_route6(p),
        );
    }

    /// Hot swap: as the IPv4 lookups'.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        if let Some(old) = bricks_element::taken_from::<Ip6RouteLookup>(old) {
            self.no_route += old.no_route;
        }
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        // Raw answers, as IPv4's: one bounds check tells a missing route.
        let mut found = PerPacket::new();
        // A batch of one destination (one flow's burst): one lookup for
        // it and no addresses gathered.
        let one = one_destination6(batch).map(|a| self.t.lpm.lookup(a).map_or(NO_ROUTE, |h| h.0));
        if one.is_none() {
            let mut addrs = PerPacket::new();
            addrs.gather(batch, dst6);
            found.fill(addrs.len(), NO_ROUTE);
            self.t.lpm.lookup_batch_raw(&addrs, &mut found);
        }
        let groups = &**self.groups.load();
        let words = groups.v6_words();
        let one_hop = match one {
            Some(nh) => words
                .get(nh as usize)
                .filter(|w| w.output != table::V6_MANY)
                .copied(),
            None => table::one_hop_v6(&found, words),
        };
        if let Some(word) = one_hop {
            // Every packet has the same one-hop answer (a burst of one
            // flow, or a table whose traffic takes one next hop): the
            // batch goes on whole, with no output to record per packet.
            if word.gateway != 0 {
                let g = Ipv6Addr::from(word.gateway.to_ne_bytes());
                for p in batch.iter_mut() {
                    p.anno_mut().dst_ip6 = g;
                }
            } else {
                for p in batch.iter_mut() {
                    if p.anno().dst_ip6.is_unspecified() {
                        p.anno_mut().dst_ip6 = Ipv6Addr::from(dst6(p));
                    }
                }
            }
            return cx.push(word.output as usize, batch);
        }
        if let Some(nh) = one {
            // An ECMP group or no route: split packet by packet.
            found.fill(batch.len(), nh);
        }
        let missed = &mut self.no_route;
        // The closure owns what it reads for every packet, as IPv4's.
        cx.push_classified_by(batch, &found, move |p, nh| {
            let Some(&word) = words.get(nh as usize) else {
                *missed += 1;
                return None;
            };
            if word.output != table::V6_MANY {
                // A one-hop group: its output and gateway in one word.
                // With no gateway the destination is the next hop, and
                // the annotation holds it already, unless it was unset
                // and the lookup read the header.
                if word.gateway != 0 {
                    p.anno_mut().dst_ip6 = Ipv6Addr::from(word.gateway.to_ne_bytes());
                } else if p.anno().dst_ip6.is_unspecified() {
                    p.anno_mut().dst_ip6 = Ipv6Addr::from(dst6(p));
                }
                return Some(word.output as usize);
            }
            Some(pick_hop6(&groups[nh as usize], p))
        });
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("no_route", self.no_route);
        if self.reports_table {
            s.counter("routes", self.t.lpm.route_count() as u64);
            s.counter("memory", self.t.lpm.memory_bytes() as u64);
            if let Some(l) = &self.t.live {
                l.stats(s);
            }
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "table").then(|| self.t.table_text())
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 4] = [
            Handler::w("add"),
            Handler::w("set"),
            Handler::w("remove"),
            Handler::r("table"),
        ];
        &HANDLERS
    }

    fn handler_is_shared(&self, _handler: &str) -> bool {
        // Every handler edits the table all workers share.
        true
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.t.handle6(handler, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Packet;
    use bricks_runtime::testing::{make_element, Harness};
    use std::net::Ipv4Addr;

    /// A UDP/IPv4 packet (network header annotated) from `src`:`sport` to
    /// `dst`, with the destination annotation set as CheckIPHeader would.
    fn udp(src: [u8; 4], dst: [u8; 4], sport: u16) -> Packet {
        let mut b = vec![
            0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17, 0, 0, src[0], src[1], src[2], src[3], dst[0],
            dst[1], dst[2], dst[3],
        ];
        b.extend_from_slice(&sport.to_be_bytes());
        b.extend_from_slice(&[0x13, 0x88, 0, 8, 0, 0]);
        let mut p = Packet::from_slice(&b).unwrap();
        p.set_network_header(0);
        p.anno_mut().dst_ip = Ipv4Addr::from(dst);
        p
    }

    #[test]
    fn longest_prefix_gateway_and_no_route_for_every_ipv4_class() {
        for class in [&DIRECT, &LOOKUP, &RADIX] {
            let mut h = Harness::push(
                class,
                "10.0.0.0/8 0, 10.1.0.0/16 10.9.9.9 1, 192.168.0.0/255.255.0.0 2",
                1,
                3,
            );
            h.push_packets(
                0,
                [
                    udp([1, 1, 1, 1], [10, 2, 3, 4], 1),
                    udp([1, 1, 1, 1], [10, 1, 3, 4], 1),
                    udp([1, 1, 1, 1], [192, 168, 7, 7], 1),
                    udp([1, 1, 1, 1], [11, 0, 0, 1], 1),
                ],
            );
            let out0 = h.take(0);
            let out1 = h.take(1);
            let out2 = h.take(2);
            assert_eq!(
                (out0.len(), out1.len(), out2.len()),
                (1, 1, 1),
                "{}",
                class.name
            );
            assert_eq!(out1[0].anno().dst_ip, Ipv4Addr::new(10, 9, 9, 9));
            assert_eq!(out0[0].anno().dst_ip, Ipv4Addr::new(10, 2, 3, 4));
            assert_eq!(h.stats().get("no_route"), Some(1));
            assert_eq!(h.stats().get("routes"), Some(3));
        }
    }

    /// The `table` handler of element `element` in a whole
    /// configuration: its text parsed, expanded, address names resolved
    /// and built, as `bricks run` does.
    fn table_of(config: &str, element: &str) -> String {
        let plan =
            crate::standard::testrun::plan(config).unwrap_or_else(|e| panic!("{config}\n{e}"));
        let engine = bricks_runtime::Engine::new(&plan).unwrap();
        match engine.read_handler(element, "table").unwrap() {
            bricks_element::HandlerValue::Text(t) => t,
            other => panic!("table handler gave {other:?}"),
        }
    }

    /// Routes written plainly, and the same routes with comments (holding
    /// commas and quotes), line breaks inside and between them, `define`d
    /// variables, compound parameters and AddressInfo names: the same
    /// table, for each IPv4 class. Plain arguments take a shortcut through
    /// the parser and the address names; the others do not.
    #[test]
    fn routes_written_with_comments_and_variables_give_the_same_table() {
        let plain = "10.0.0.0/8 0, 10.1.0.0/16 10.9.9.9 1, 192.168.0.0/16 2, \
                     0.0.0.0/0 1.2.3.4 1, 10.1.2.3 2, 18.26.0.0/12 4.0.0.4 0";
        let ports = "rt[0] -> Discard; rt[1] -> Discard; rt[2] -> Discard;";
        for class in ["RadixIPLookup", "DirectIPLookup", "StaticIPLookup"] {
            let want = table_of(&format!("Idle -> rt :: {class}({plain}); {ports}"), "rt");
            assert_eq!(want.lines().count(), 6, "{want}");
            let dressed = [
                format!(
                    "define($gw 10.9.9.9, $two 2);\n\
                     AddressInfo(other 1.2.3.4);\n\
                     Idle -> rt :: {class}(\n\
                       10.0.0.0/8 0, // the first, \"quoted, with commas\"\n\
                       10.1.0.0/16 /* gateway, '2' */ $gw 1,\n\
                       192.168.0.0/16\n\
                         ${{two}},\r\n\
                       0.0.0.0/0 other 1, 10.1.2.3 $two,\n\
                       18.26.0.0/12 4.0.0.4 0, // a final comma is dropped\n\
                     ); {ports}"
                ),
                format!(
                    "elementclass R {{ $gw, $def |\n\
                       input -> rt :: {class}(10.0.0.0/8 0, 10.1.0.0/16 $gw 1, 192.168.0.0/16 2,\n\
                                              $def, 10.1.2.3 2, 18.26.0.0/12 4.0.0.4 0);\n\
                       rt[0] -> [0]output; rt[1] -> [1]output; rt[2] -> [2]output }}\n\
                     Idle -> r :: R(10.9.9.9, 0.0.0.0/0 1.2.3.4 1);\n\
                     r[0] -> Discard; r[1] -> Discard; r[2] -> Discard;"
                ),
            ];
            for (config, element) in dressed.iter().zip(["rt", "r/rt"]) {
                assert_eq!(table_of(config, element), want, "{class}, {config}");
            }
        }
    }

    /// `(mem_refs, mem_words)` of looking `dst` up once in a fresh `h`.
    fn refs_of(h: &mut Harness, dst: [u8; 4]) -> (u64, u64) {
        let before = h.stats();
        h.push_packets(0, [udp([1, 1, 1, 1], dst, 1)]);
        let after = h.stats();
        let d = |k| after.get(k).unwrap() - before.get(k).unwrap_or(0);
        assert_eq!(d("mem_packets"), 1);
        (d("mem_refs"), d("mem_words"))
    }

    #[test]
    fn memrefs_trie4_one_entry_per_level() {
        // A /4 is found at level 1 of 8, a /12 at level 3, a /32 at 8.
        let mut h = Harness::push(
            &RADIX,
            "192.0.0.0/4 0, 10.16.0.0/12 1, 10.1.2.3/32 1, MEMREFS true",
            1,
            2,
        );
        assert_eq!(refs_of(&mut h, [192, 1, 2, 3]), (1, 2));
        assert_eq!(refs_of(&mut h, [10, 16, 5, 5]), (3, 6));
        assert_eq!(refs_of(&mut h, [10, 1, 2, 3]), (8, 16));
        // No route: the levels read still count.
        assert_eq!(refs_of(&mut h, [64, 0, 0, 1]), (1, 2));
        let s = h.stats();
        assert_eq!(s.get("no_route"), Some(1));
        assert_eq!(
            (s.get("mem_packets"), s.get("mem_refs"), s.get("mem_words")),
            (Some(4), Some(13), Some(26))
        );
        assert_eq!(h.take(0).len() + h.take(1).len(), 3);
    }

    #[test]
    fn memrefs_dir24_8_one_or_two_entries() {
        for class in [&DIRECT, &LOOKUP] {
            let mut h = Harness::push(class, "10.0.0.0/8 0, 10.1.2.0/28 1, MEMREFS true", 1, 2);
            assert_eq!(refs_of(&mut h, [10, 9, 9, 9]), (1, 1));
            assert_eq!(refs_of(&mut h, [10, 1, 2, 5]), (2, 2));
            assert_eq!(refs_of(&mut h, [10, 1, 2, 200]), (2, 2));
            assert_eq!(h.take(0).len(), 2);
            assert_eq!(h.take(1).len(), 1);
        }
        // Not counting: no such counters, and the handlers still work.
        let mut h = Harness::push(&RADIX, "10.0.0.0/8 0", 1, 2);
        h.push_packets(0, [udp([1, 1, 1, 1], [10, 0, 0, 1], 1)]);
        assert_eq!(h.stats().get("mem_refs"), None);
        let mut h = Harness::push(&RADIX, "10.0.0.0/8 0, MEMREFS true", 1, 2);
        h.write_handler("add", "10.1.0.0/16 1").unwrap();
        h.push_packets(0, [udp([1, 1, 1, 1], [10, 1, 0, 1], 1)]);
        assert_eq!(h.take(1).len(), 1);
        assert_eq!(h.stats().get("routes"), Some(2));
    }

    /// One mixed batch over one-hop groups (gateway, none, 0.0.0.0, an
    /// IPv6 gateway) and an ECMP group: each packet leaves where the
    /// hops say, with the gateway the hop gives, one flow at a time or
    /// all together.
    #[test]
    fn one_hop_groups_and_ecmp_in_one_batch() {
        let routes = "10.0.0.0/8 10.9.9.9 1, 10.1.0.0/16 2, 10.2.0.0/16 0.0.0.0 3, \
                      10.3.0.0/16 fe80::1 0, 10.4.0.0/16 10.0.0.1 0, 10.4.0.0/16 10.0.0.2 1";
        let pkts = || {
            (0..64u16).map(|i| {
                let dst = [10, (i % 6) as u8, 1, i as u8];
                udp(
                    [1, 1, 1, 1],
                    if i % 7 == 6 { [11, 0, 0, 1] } else { dst },
                    i,
                )
            })
        };
        let run = |batched: bool| {
            let mut h = Harness::push(&DIRECT, routes, 1, 4);
            if batched {
                h.push_packets(0, pkts());
            } else {
                for p in pkts() {
                    h.push_packets(0, [p]);
                }
            }
            let out: Vec<Vec<(u32, Ipv4Addr)>> = (0..4)
                .map(|o| {
                    h.take(o)
                        .iter()
                        .map(|p| {
                            (
                                u32::from_be_bytes(p.data()[16..20].try_into().unwrap()),
                                p.anno().dst_ip,
                            )
                        })
                        .collect()
                })
                .collect();
            (out, h.stats().get("no_route"))
        };
        let (out, missed) = run(true);
        assert_eq!(run(false), (out.clone(), missed));
        assert_eq!(missed, Some(9));
        for (o, got) in out.iter().enumerate() {
            for &(dst, ann) in got {
                let [_, b, ..] = dst.to_be_bytes();
                let want = match b {
                    0 | 5 => (1, Ipv4Addr::new(10, 9, 9, 9)),
                    1 => (2, dst.into()),
                    2 => (3, dst.into()),
                    3 => (0, dst.into()),
                    _ => (o, Ipv4Addr::new(10, 0, 0, 1 + o as u8)),
                };
                assert_eq!((o, ann), want, "{}", Ipv4Addr::from(dst));
            }
        }
        assert!(!out[0].is_empty() && out[1].iter().any(|&(d, _)| d >> 16 == 0x0a04));
    }

    /// Batches whose packets all have one answer (one flow's burst) go
    /// on whole: a gateway set on every packet, a route with no gateway
    /// leaving each destination, a group of two hops still split by
    /// flow, and no route counted for each packet.
    #[test]
    fn batches_with_one_answer_for_every_ipv4_class() {
        for class in [&DIRECT, &LOOKUP, &RADIX] {
            let routes = "10.1.0.0/16 10.9.9.9 1, 10.2.0.0/16 0, \
                          10.3.0.0/16 10.0.0.1 0, 10.3.0.0/16 10.0.0.2 1";
            let mut h = Harness::push(class, routes, 1, 2);
            let burst = |b: u8| (0..32u16).map(move |i| udp([1, 1, 1, 1], [10, b, 0, i as u8], i));
            h.push_packets(0, burst(1));
            let out = h.take(1);
            assert_eq!((out.len(), h.take(0).len()), (32, 0), "{}", class.name);
            assert!(out
                .iter()
                .all(|p| p.anno().dst_ip == Ipv4Addr::new(10, 9, 9, 9)));
            h.push_packets(0, burst(2));
            let out = h.take(0);
            assert_eq!(out.len(), 32, "{}", class.name);
            for (i, p) in out.iter().enumerate() {
                assert_eq!(p.anno().dst_ip, Ipv4Addr::new(10, 2, 0, i as u8));
            }
            h.push_packets(0, burst(3));
            let (a, b) = (h.take(0), h.take(1));
            assert_eq!(a.len() + b.len(), 32, "{}", class.name);
            assert!(
                !a.is_empty() && !b.is_empty(),
                "{}: flows not spread",
                class.name
            );
            h.push_packets(0, burst(4));
            assert_eq!(h.take(0).len() + h.take(1).len(), 0);
            assert_eq!(h.stats().get("no_route"), Some(32), "{}", class.name);
        }
    }

    /// As [`batches_with_one_answer_for_every_ipv4_class`], for IPv6: one
    /// destination's burst leaves whole with the gateway, a route with no
    /// gateway takes each destination from its annotation or (unset)
    /// from its header, and a burst with no route is counted.
    /// An IPv6/UDP packet from 2001:db8:9::1 port `sport` to `dst` port
    /// 5000, network header at 0, its destination annotation set when
    /// `annotate`.
    fn udp6_packet(dst: Ipv6Addr, sport: u16, annotate: bool) -> Packet {
        let mut frame = vec![0x60, 0, 0, 0, 0, 8, 17, 64];
        frame.extend_from_slice(&Ipv6Addr::new(0x2001, 0xdb8, 9, 0, 0, 0, 0, 1).octets());
        frame.extend_from_slice(&dst.octets());
        frame.extend_from_slice(&sport.to_be_bytes());
        frame.extend_from_slice(&[0x13, 0x88, 0, 8, 0, 0]);
        let mut p = Packet::from_slice(&frame).unwrap();
        p.set_network_header(0);
        if annotate {
            p.anno_mut().dst_ip6 = dst;
        }
        p
    }

    #[test]
    fn ipv6_batches_with_one_answer() {
        let ip6 = |s: &str| s.parse::<Ipv6Addr>().unwrap();
        let routes = "2001:db8:1::/48 fe80::1 1, 2001:db8:2::/48 0, \
                      2001:db8:3::/48 fe80::2 0, 2001:db8:3::/48 fe80::3 1";
        let mut h = Harness::push(&LOOKUP6, routes, 1, 2);
        let burst = |net: u16, annotate: bool| {
            (0..32u16).map(move |i| {
                udp6_packet(
                    Ipv6Addr::new(0x2001, 0xdb8, net, 0, 0, 0, 0, i),
                    i,
                    annotate,
                )
            })
        };
        h.push_packets(0, burst(1, true));
        let out = h.take(1);
        assert_eq!((out.len(), h.take(0).len()), (32, 0));
        assert!(out.iter().all(|p| p.anno().dst_ip6 == ip6("fe80::1")));
        for annotate in [true, false] {
            h.push_packets(0, burst(2, annotate));
            let out = h.take(0);
            assert_eq!(out.len(), 32, "annotated: {annotate}");
            for (i, p) in out.iter().enumerate() {
                let want = Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, i as u16);
                assert_eq!(p.anno().dst_ip6, want, "annotated: {annotate}");
            }
        }
        h.push_packets(0, burst(3, true));
        let (a, b) = (h.take(0), h.take(1));
        assert_eq!(a.len() + b.len(), 32);
        assert!(!a.is_empty() && !b.is_empty(), "flows not spread");
        assert!(a.iter().all(|p| p.anno().dst_ip6 == ip6("fe80::2")));
        assert!(b.iter().all(|p| p.anno().dst_ip6 == ip6("fe80::3")));
        h.push_packets(0, burst(4, true));
        assert_eq!(h.take(0).len() + h.take(1).len(), 0);
        assert_eq!(h.stats().get("no_route"), Some(32));
    }

    #[test]
    fn ipv6_batches_of_one_destination_route_each_packet_as_alone() {
        // Batches of one annotated destination take one lookup; a batch
        // with one packet to another destination, at any place (inside
        // a group of four or in the tail after them), or with unset
        // annotations does not. Either way each packet must leave as it
        // does when pushed alone (a batch of one never takes the path).
        let ip6 = |s: &str| s.parse::<Ipv6Addr>().unwrap();
        let routes = "2001:db8:1::/48 fe80::1 1, 2001:db8:2::/48 0, \
                      2001:db8:2:5::/64 fe80::5 1, \
                      2001:db8:3::/48 fe80::2 0, 2001:db8:3::/48 fe80::3 1";
        let mut h = Harness::push(&LOOKUP6, routes, 1, 2);
        let packet = udp6_packet;
        let sport = |p: &Packet| u16::from_be_bytes([p.data()[40], p.data()[41]]);
        // (source port, output, annotation) of what left, sorted.
        let outcome = |h: &mut Harness| {
            let mut got: Vec<(u16, usize, Ipv6Addr)> = (0..2)
                .flat_map(|o| {
                    h.take(o)
                        .into_iter()
                        .map(move |p| (sport(&p), o, p.anno().dst_ip6))
                })
                .collect();
            got.sort();
            got
        };
        let no_route = |h: &Harness| h.stats().get("no_route").unwrap_or(0);
        let dsts = [
            "2001:db8:1::7",
            "2001:db8:2::7",
            "2001:db8:2:5::1",
            "2001:db8:3::9",
            "2001:db8:4::1",
        ]
        .map(ip6);
        for main in dsts {
            for other in dsts {
                for n in [2u16, 3, 4, 5, 6, 9, 31, 32] {
                    for odd in (1..n).map(Some).chain([None]) {
                        for annotate in [true, false] {
                            let dst = |i| if Some(i) == odd { other } else { main };
                            let mut want = Vec::new();
                            let mut lost = 0;
                            for i in 0..n {
                                let before = no_route(&h);
                                h.push_packets(0, [packet(dst(i), i, annotate)]);
                                want.extend(outcome(&mut h));
                                lost += no_route(&h) - before;
                            }
                            let before = no_route(&h);
                            h.push_packets(0, (0..n).map(|i| packet(dst(i), i, annotate)));
                            let case = format!("{main} with {other} at {odd:?} of {n}, {annotate}");
                            assert_eq!(outcome(&mut h), want, "{case}");
                            assert_eq!(no_route(&h) - before, lost, "{case}");
                        }
                    }
                }
            }
        }
        // One destination through the ECMP group: its flows still spread.
        h.push_packets(0, (0..32).map(|i| packet(ip6("2001:db8:3::9"), i, true)));
        let (a, b) = (h.take(0), h.take(1));
        assert!(a.len() + b.len() == 32 && !a.is_empty() && !b.is_empty());
    }

    #[test]
    fn ecmp_keeps_each_flow_on_one_path_and_spreads_flows() {
        let mut h = Harness::push(&DIRECT, "0.0.0.0/0 10.0.0.1 0, 0.0.0.0/0 10.0.0.2 1", 1, 2);
        let mut per_flow = std::collections::HashMap::new();
        for round in 0..3 {
            for sport in 0..200u16 {
                h.push_packets(0, [udp([1, 2, 3, 4], [5, 6, 7, 8], sport)]);
                let (a, b) = (h.take(0), h.take(1));
                let port = if a.len() == 1 { 0 } else { 1 };
                assert_eq!(a.len() + b.len(), 1);
                let prev = per_flow.insert(sport, port);
                if round > 0 {
                    assert_eq!(prev, Some(port), "flow {sport} moved");
                }
            }
        }
        let on0 = per_flow.values().filter(|&&p| p == 0).count();
        assert!((60..=140).contains(&on0), "{on0} of 200 flows on path 0");
    }

    #[test]
    fn handlers_change_the_table_while_it_is_used() {
        let mut h = Harness::push(&DIRECT, "10.0.0.0/8 0", 1, 2);
        h.write_handler("add", "10.1.0.0/16 1").unwrap();
        h.push_packets(0, [udp([1, 1, 1, 1], [10, 1, 0, 1], 1)]);
        assert_eq!(h.take(1).len(), 1);
        h.write_handler("remove", "10.1.0.0/16").unwrap();
        h.push_packets(0, [udp([1, 1, 1, 1], [10, 1, 0, 1], 1)]);
        assert_eq!(h.take(0).len(), 1, "falls back to the covering /8");
        assert!(h.write_handler("remove", "10.1.0.0/16").is_err());
        assert!(h
            .write_handler("add", "10.2.0.0/16 5")
            .unwrap_err()
            .contains("out of range"));
        assert!(h.write_handler("add", "bogus").is_err());
    }

    #[test]
    fn add_refuses_an_existing_prefix_and_set_replaces_it() {
        // Configured and added prefixes alike; a removed one may be added again.
        let mut h = Harness::push(&RADIX, "10.0.0.0/8 0", 1, 2);
        for (value, existing) in [
            ("10.0.0.0/8 1", "10.0.0.0/8 0"),
            ("10.9.0.0/16 1.2.3.4 0", "10.9.0.0/16 5.6.7.8 1"),
        ] {
            if value.starts_with("10.9") {
                h.write_handler("add", "10.9.0.0/16 5.6.7.8 1").unwrap();
            }
            let e = h.write_handler("add", value).unwrap_err();
            assert_eq!(e, format!("conflict with existing route '{existing}'"));
        }
        h.push_packets(0, [udp([1, 1, 1, 1], [10, 0, 0, 1], 1)]);
        assert_eq!(h.take(0).len(), 1, "the refused route was never used");
        h.write_handler("set", "10.0.0.0/8 1").unwrap();
        h.push_packets(0, [udp([1, 1, 1, 1], [10, 0, 0, 1], 1)]);
        assert_eq!(h.take(1).len(), 1);
        h.write_handler("remove", "10.0.0.0/8").unwrap();
        h.write_handler("add", "10.0.0.0/8 0").unwrap();
    }

    #[test]
    fn routes_file_is_loaded_and_errors_name_the_line() {
        // Deleted when dropped, also when an assertion fails.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let good = dir.join("good.txt");
        std::fs::write(&good, "# table\n10.0.0.0/8 1\n2001:db8::/32 0\n").unwrap();
        let mut h = Harness::push(&DIRECT, &format!("ROUTES {}", good.display()), 1, 2);
        h.push_packets(0, [udp([1, 1, 1, 1], [10, 0, 0, 1], 1)]);
        assert_eq!(h.take(1).len(), 1);
        let bad = dir.join("bad.txt");
        std::fs::write(&bad, "10.0.0.0/8 1\n10.0.0.0/33 0\n").unwrap();
        let ports = PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push; 2],
        };
        let e = make_element(&DIRECT, &format!("ROUTES {}", bad.display()), &ports).unwrap_err();
        assert!(e.contains("bad.txt:2"), "{e}");
        assert!(make_element(
            &DIRECT,
            &format!("ROUTES {}, SKIP_ERRORS true", bad.display()),
            &ports
        )
        .is_ok());
    }

    /// An MRT TABLE_DUMP_V2 dump: peers 192.0.2.1 (AS 64500) and
    /// 192.0.2.2 (AS 701); 10.0.0.0/8 from both, peer 0's AS_PATH the
    /// shorter, with next hops 10.9.9.1 and 10.9.9.2.
    fn mrt_dump() -> Vec<u8> {
        fn record(out: &mut Vec<u8>, sub: u16, body: &[u8]) {
            out.extend_from_slice(&[0, 0, 0, 0, 0, 13]); // time, TABLE_DUMP_V2
            out.extend_from_slice(&sub.to_be_bytes());
            out.extend_from_slice(&(body.len() as u32).to_be_bytes());
            out.extend_from_slice(body);
        }
        let mut out = Vec::new();
        let mut peers = vec![192, 0, 2, 255, 0, 0, 0, 2]; // collector, no view, 2 peers
        for (i, asn) in [(1u8, 64500u32), (2, 701)] {
            peers.extend_from_slice(&[2, 10, 0, 0, i, 192, 0, 2, i]); // 4-byte AS, IPv4
            peers.extend_from_slice(&asn.to_be_bytes());
        }
        record(&mut out, 1, &peers);
        let mut rib = vec![0, 0, 0, 0, 8, 10, 0, 2]; // sequence, 10.0.0.0/8, 2 entries
        for (peer, path) in [(0u16, &[64500u32][..]), (1, &[701, 3356])] {
            let mut attrs = vec![0x40, 1, 1, 0, 0x40, 2, 2 + 4 * path.len() as u8, 2];
            attrs.push(path.len() as u8);
            for a in path {
                attrs.extend_from_slice(&a.to_be_bytes());
            }
            attrs.extend_from_slice(&[0x40, 3, 4, 10, 9, 9, 1 + peer as u8]);
            rib.extend_from_slice(&peer.to_be_bytes());
            rib.extend_from_slice(&[0; 4]); // originated
            rib.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
            rib.extend_from_slice(&attrs);
        }
        record(&mut out, 2, &rib);
        out
    }

    #[test]
    fn routes_from_an_mrt_dump_by_best_path_or_by_peer() {
        let tmp = tempfile::tempdir().unwrap();
        let rib = tmp.path().join("rib.mrt");
        std::fs::write(&rib, mrt_dump()).unwrap();
        for (extra, gateway) in [
            ("", [10, 9, 9, 1]),
            (", PEER 192.0.2.2", [10, 9, 9, 2]),
            (", PEER_AS 701", [10, 9, 9, 2]),
            (", PEER_AS 64500", [10, 9, 9, 1]),
        ] {
            let args = format!("ROUTES {}{extra}", rib.display());
            let mut h = Harness::push(&DIRECT, &args, 1, 1);
            h.push_packets(0, [udp([1, 1, 1, 1], [10, 0, 0, 1], 1)]);
            let out = h.take(0);
            assert_eq!(out[0].anno().dst_ip, Ipv4Addr::from(gateway), "{extra}");
        }
        let ports = PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push],
        };
        let make = |extra: &str| {
            make_element(&DIRECT, &format!("ROUTES {}{extra}", rib.display()), &ports).unwrap_err()
        };
        let e = make(", PEER 192.0.2.9");
        assert!(
            e.contains("no peer 192.0.2.9 in the PEER_INDEX_TABLE"),
            "{e}"
        );
        let e = make(", PEER 192.0.2.1, PEER_AS 701");
        assert!(e.contains("PEER or PEER_AS, not both"), "{e}");
        let e = make(", PEER 192.0.2");
        assert!(e.contains("bad argument PEER: expected IP address"), "{e}");
    }

    #[test]
    fn argument_errors() {
        let ports = PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push],
        };
        let e = make_element(&DIRECT, "10.0.0.0/8 3", &ports).unwrap_err();
        assert!(e.contains("output 3 out of range"), "{e}");
        let e = make_element(&DIRECT, "10.0.0.0/8 0, 2001:db8::/32 0", &ports).unwrap_err();
        assert!(e.contains("IPv6 route"), "{e}");
        let e = make_element(&DIRECT, "10.0.0.0/8 0, MEMORY 1000", &ports).unwrap_err();
        assert!(e.contains("1000"), "{e}");
    }

    /// A UDP/IPv6 packet 2001:db8::5 port `sport` -> 2001:db8:1::9 port
    /// 5000 with flow label `label`.
    fn udp6(sport: u16, label: u32) -> Vec<u8> {
        let l = label.to_be_bytes();
        let mut b = vec![0x60, l[1] & 0x0f, l[2], l[3], 0, 8, 17, 64];
        b.extend_from_slice(&"2001:db8::5".parse::<Ipv6Addr>().unwrap().octets());
        b.extend_from_slice(&"2001:db8:1::9".parse::<Ipv6Addr>().unwrap().octets());
        b.extend_from_slice(&sport.to_be_bytes());
        b.extend_from_slice(&[0x13, 0x88, 0, 8, 0, 0]);
        b
    }

    #[test]
    fn ipv6_ecmp_by_flow_label_or_ports() {
        let mut h = Harness::push(&LOOKUP6, "::/0 fe80::1 0, ::/0 fe80::2 1", 1, 2);
        // Same addresses, different flows: by the label, then (label 0)
        // by the ports. A flow keeps its path.
        for by_label in [true, false] {
            let mut per_flow = std::collections::HashMap::new();
            for round in 0..2 {
                for f in 1..=200u16 {
                    let frame = if by_label {
                        udp6(1, u32::from(f))
                    } else {
                        udp6(f, 0)
                    };
                    h.push_bytes(0, &frame);
                    let (a, b) = (h.take(0), h.take(1));
                    assert_eq!(a.len() + b.len(), 1);
                    let port = usize::from(a.is_empty());
                    let prev = per_flow.insert(f, port);
                    if round > 0 {
                        assert_eq!(prev, Some(port), "flow {f} moved");
                    }
                }
            }
            let on0 = per_flow.values().filter(|&&p| p == 0).count();
            assert!((60..=140).contains(&on0), "{on0} of 200 flows on path 0");
        }
    }

    #[test]
    fn ipv6_lookup_by_header_and_gateway_annotation() {
        let mut h = Harness::push(&LOOKUP6, "2001:db8::/32 0, 2001:db8:1::/48 fe80::1 1", 1, 2);
        let mut frame = vec![0x60, 0, 0, 0, 0, 8, 17, 64];
        frame.extend_from_slice(&"2001:db8::5".parse::<Ipv6Addr>().unwrap().octets());
        frame.extend_from_slice(&"2001:db8:1::9".parse::<Ipv6Addr>().unwrap().octets());
        frame.extend_from_slice(&[0; 8]);
        h.push_bytes(0, &frame);
        let out = h.take(1);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].anno().dst_ip6,
            "fe80::1".parse::<Ipv6Addr>().unwrap()
        );
    }

    /// A route with no gateway leaves the destination as the next hop:
    /// the annotation's when it is set (it wins over the header), the
    /// header's when it is not.
    #[test]
    fn ipv6_direct_route_next_hop_is_the_destination() {
        let ip6 = |s: &str| s.parse::<Ipv6Addr>().unwrap();
        let mut frame = vec![0x60, 0, 0, 0, 0, 8, 17, 64];
        frame.extend_from_slice(&ip6("2001:db8::5").octets());
        frame.extend_from_slice(&ip6("2001:db8:1::9").octets());
        frame.extend_from_slice(&[0; 8]);
        for (anno, want_port, want) in [
            (None, 0, "2001:db8:1::9"),
            (Some("2001:db8:2::7"), 1, "2001:db8:2::7"),
        ] {
            let mut h = Harness::push(&LOOKUP6, "2001:db8::/32 0, 2001:db8:2::/48 1", 1, 2);
            let mut p = Packet::from_slice(&frame).unwrap();
            p.set_network_header(0);
            if let Some(a) = anno {
                p.anno_mut().dst_ip6 = ip6(a);
            }
            h.push_packets(0, [p]);
            let out = h.take(want_port);
            assert_eq!(out.len(), 1, "{anno:?}");
            assert_eq!(out[0].anno().dst_ip6, ip6(want), "{anno:?}");
        }
    }
}
