//! The twelve service architectures of Hardekopf et al. (§2.2.4, §6,
//! Table 4): every combination `<null|tag|match>_<look|pre>_<fifo|sort>`
//! of the three building blocks, each written out as a Click
//! configuration of a real IPv4 router. This module is the one source of
//! truth: `conf/qos/<name>.click` are its output (a unit test checks that
//! they still are; `BRICKS_BLESS=1 cargo test -p bricks-qos --lib arch`
//! rewrites them), and `bricks bench qos` builds the same text around
//! in-memory sources and sinks.
//!
//! # The router
//!
//! [`Arch::elementclass`] is an `elementclass` whose `input[i]` are the
//! Ethernet frames received on port `i` and whose `output[i]` (pull) are
//! the frames to send on port `i`. Port `i` has the address
//! `10.0.i.1/24` ([`Params::address`]) and the Ethernet address
//! `02:00:0a:00:ii:01` ([`Params::ether`]). On every port:
//!
//! - ARP (RFC 826): `ARPResponder` answers for the port's address;
//!   `ARPQuerier(10.0.i.1/24, ...)` resolves next hops, and learns the
//!   sender of a request for the router's address (RFC 826's merge, as
//!   Linux does), so hosts that ask for their gateway are known at once.
//! - The frames the architecture serves go to its classification (below);
//!   other frames (another EtherType) are dropped and counted (`other_i`).
//! - IPv4 as RFC 1812 asks, as in `conf/ip-router.click`: `CheckIPHeader`
//!   with the martian checks before anything reads the header, then per
//!   output port `DropBroadcasts`, `IPGWOptions`, `FixIPSrc`, `DecIPTTL`
//!   and `IPFragmenter(1500)`, with ICMP errors (time exceeded, parameter
//!   problem, fragmentation needed) sent back through the routing table.
//!   ICMP redirects are left out: the paint annotation names the output
//!   port here (see "look"), not the input.
//! - `rt`, a `RadixIPLookup` (4-bit-stride trie, §4), holds the routes:
//!   by default each port's subnet and `192.168.i.0/24 via 10.0.i.2`
//!   ([`Routes::Default`]); always the router's own addresses to output
//!   `ports`, where `ICMPPingResponder` answers pings and anything else
//!   is counted and dropped (`local`: bricks has no host stack here),
//!   and the subnets' network and broadcast addresses and the limited
//!   broadcast to output `ports + 1` (`broadcast`, counted and dropped:
//!   a router answers no broadcast ping). With "pre" it routes every
//!   packet; with "look" only the router's own packets (ICMP errors): a
//!   label-switching or source-routed router still has an IP table for
//!   those.
//!
//! # Classification
//!
//! - `null`: none. `null_pre` serves IPv4 frames (EtherType 0x0800),
//!   `null_look` source-routed frames (0x88B5, [`crate::sroute`]).
//! - `tag`: MPLS-labelled frames (0x8847). `TagClassifier` reads the top
//!   label as the flow ID (`FlowTable(MODE tag)`, the flow file
//!   [`Params::flows`], default `conf/qos/flows-tag.txt`), then `MPLSPop`
//!   removes it and the packet continues as IPv4 (this router is where
//!   the label-switched path ends; a stack of several labels leaves a
//!   label in front of the IP header and fails `CheckIPHeader`).
//! - `match`: IPv4 frames; `HashClassifier` matches the 5-tuple in
//!   `FlowTable(MODE match, K 4)` (chains bounded at k = 4, §3;
//!   `conf/qos/flows-match.txt`).
//!
//! Packets of no reserved flow (unknown flow ID or 5-tuple, a tag beyond
//! the table, an unlabelled frame) are dropped and counted by the
//! classifier (`tc` or `hc`: `unknown`, `beyond`, `untagged`, ...):
//! bricks' choice where the paper leaves it open, since a flow without a
//! reservation has no rate to be scheduled at, and serving it best effort
//! would let it take the reserved flows' share in a FIFO.
//!
//! # Route selection
//!
//! - `pre`: longest-prefix match in `rt` (next hop and output port).
//! - `look` with `tag` or `match`: `FlowLookup` takes the next hop (`via`)
//!   and the output port (`output`) from the flow record.
//! - `look` with `null` (the paper's "Baseline", source routing):
//!   `SourceRouteLookup` consumes the shim's next hop, which names the
//!   next-hop address and output port (painted, then `PaintSwitch`).
//!   Since the IP header sits behind a shim of 6 + 6 N bytes, a
//!   `Classifier` on the hop count N hands each frame to a `CheckIPHeader`
//!   at that offset before the hop is read (`CheckIPHeader` also sets the
//!   destination annotation, which the hop then overrides). The router
//!   then removes the shim (`SourceRouteDecap`) and forwards plain IPv4:
//!   bricks' Baseline router is the last hop of the source-routed path,
//!   and hops left in the shim after its own are discarded with it (a
//!   router in the middle of such a path would forward the shimmed frame
//!   by its hop alone, without the IP path, which these configurations,
//!   being IPv4 routers, do not do). Frames without a valid shim are
//!   dropped and counted (`bad_route`, `srl`'s counters, `ps.drops` for
//!   an output port the router lacks).
//!
//! # Ordering
//!
//! - `fifo`: a `FIFOQueue` per output port (a circular array, §5).
//! - `sort`: Virtual Clock deadlines, then an `MDSBinSortQueue` per output
//!   port (§6: "architectures with sort use MDS-BinSort"; 1 ms bins, 1,024
//!   bins; one replica, since one `ToDevice` dequeues each port, where the
//!   paper gives a BinSort to every four dequeuing threads). For `tag` and `match`, `VirtualClock(TABLE ft)` stamps each
//!   packet from its flow's reserved rate, so a flow sending beyond its
//!   reservation is sent after the flows within theirs; packets without a
//!   flow (the router's ICMP errors) are stamped at the link rate
//!   ([`Params::link_rate`]).
//! - `null_*_sort`, the paper's CSGS (core-stateless: no per-flow state in
//!   the core): bricks keeps one Virtual Clock per output port at the link
//!   rate, which needs no flow state but orders a port's packets as they
//!   arrived (the deadlines of one clock only grow). CSGS proper (Stoica
//!   and Zhang's dynamic packet state) has the edge router write each
//!   packet's reserved rate and slack into its header, from which every
//!   core router computes a per-flow deadline without per-flow state;
//!   bricks has no element that reads such a header yet.
//!
//! Queues are pulled by whatever the caller connects to `output[i]`
//! (`ToDevice`, or for `bricks bench qos` an `Unqueue`).

use std::fmt::Write as _;
use std::net::Ipv4Addr;

/// Flow classification (§2.2.1, §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Classify {
    /// No classification.
    Null,
    /// The flow ID is a tag the packet carries: its MPLS label.
    Tag,
    /// The flow is found by its 5-tuple in a hash table (chains of k).
    Match,
}

/// Route selection (§2.2.2, §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// The next hop from the flow record, or from a source route.
    Look,
    /// Longest-prefix match in a 4-bit-stride trie.
    Pre,
}

/// Packet ordering (§2.2.3, §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Order {
    /// First in, first out.
    Fifo,
    /// By Virtual Clock deadline in an MDS-BinSort (approximate sort).
    Sort,
}

/// One service architecture: a classification, a route selection and an
/// ordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Arch {
    /// How packets are classified into flows.
    pub classify: Classify,
    /// How the next hop is chosen.
    pub route: Route,
    /// How packets are ordered on each output.
    pub order: Order,
}

const fn arch(classify: Classify, route: Route, order: Order) -> Arch {
    Arch {
        classify,
        route,
        order,
    }
}

impl Arch {
    /// The twelve, in the order of the paper's Table 4 (alphabetical).
    pub const ALL: [Arch; 12] = [
        arch(Classify::Match, Route::Look, Order::Fifo),
        arch(Classify::Match, Route::Look, Order::Sort),
        arch(Classify::Match, Route::Pre, Order::Fifo),
        arch(Classify::Match, Route::Pre, Order::Sort),
        arch(Classify::Null, Route::Look, Order::Fifo),
        arch(Classify::Null, Route::Look, Order::Sort),
        arch(Classify::Null, Route::Pre, Order::Fifo),
        arch(Classify::Null, Route::Pre, Order::Sort),
        arch(Classify::Tag, Route::Look, Order::Fifo),
        arch(Classify::Tag, Route::Look, Order::Sort),
        arch(Classify::Tag, Route::Pre, Order::Fifo),
        arch(Classify::Tag, Route::Pre, Order::Sort),
    ];

    /// The paper's name, e.g. `tag_look_sort`.
    pub fn name(&self) -> &'static str {
        const NAMES: [&str; 12] = [
            "match_look_fifo",
            "match_look_sort",
            "match_pre_fifo",
            "match_pre_sort",
            "null_look_fifo",
            "null_look_sort",
            "null_pre_fifo",
            "null_pre_sort",
            "tag_look_fifo",
            "tag_look_sort",
            "tag_pre_fifo",
            "tag_pre_sort",
        ];
        let c = match self.classify {
            Classify::Match => 0,
            Classify::Null => 4,
            Classify::Tag => 8,
        };
        let r = match self.route {
            Route::Look => 0,
            Route::Pre => 2,
        };
        let o = match self.order {
            Order::Fifo => 0,
            Order::Sort => 1,
        };
        NAMES[c + r + o]
    }

    /// The service the paper's Table 2 derives from these blocks, or what
    /// the combination is for an engineer.
    pub fn service(&self) -> &'static str {
        match (self.classify, self.route, self.order) {
            (Classify::Null, Route::Look, Order::Fifo) => "Baseline: source routing, best effort",
            (Classify::Null, Route::Pre, Order::Fifo) => "IP router: best effort",
            (Classify::Null, _, Order::Sort) => {
                "CSGS (core-stateless guaranteed services), one Virtual Clock per output"
            }
            (Classify::Tag, _, Order::Sort) => "MPLS with reserved rates (Virtual Clock)",
            (Classify::Tag, _, Order::Fifo) => "MPLS label switching, FIFO per output",
            (Classify::Match, _, Order::Sort) => "IntServ: per-flow reservations (Virtual Clock)",
            (Classify::Match, _, Order::Fifo) => "5-tuple admission (reserved flows only), FIFO",
        }
    }

    /// The name of its `elementclass`, e.g. `TagLookSort`.
    pub fn class_name(&self) -> String {
        self.name()
            .split('_')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The frames this architecture serves, by EtherType.
    pub fn ethertype(&self) -> u16 {
        match (self.classify, self.route) {
            (Classify::Tag, _) => 0x8847,
            (Classify::Null, Route::Look) => crate::sroute::ETHERTYPE,
            _ => 0x0800,
        }
    }
}

impl core::fmt::Display for Arch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is none of the twelve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownArch(pub String);

impl core::fmt::Display for UnknownArch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "`{}` is not an architecture; the twelve are <null|tag|match>_<look|pre>_<fifo|sort>, e.g. tag_look_sort",
            self.0
        )
    }
}

impl std::error::Error for UnknownArch {}

impl core::str::FromStr for Arch {
    type Err = UnknownArch;

    fn from_str(s: &str) -> Result<Arch, UnknownArch> {
        Arch::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownArch(s.to_string()))
    }
}

/// Where the routes of `rt` come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Routes {
    /// Each port's subnet `10.0.i.0/24`, and `192.168.i.0/24` via the
    /// neighbour `10.0.i.2` on port `i`.
    Default,
    /// Routes in `RadixIPLookup`'s syntax (`ADDR/LEN [GATEWAY] OUT`).
    Inline(Vec<String>),
    /// A route file (`RadixIPLookup`'s `ROUTES`).
    File(String),
}

/// What an architecture's configuration is built with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// Number of ports (1 to 250).
    pub ports: usize,
    /// The flow file of `tag` and `match`; `None`: `conf/qos/flows-tag.txt`
    /// or `conf/qos/flows-match.txt`, relative to where bricks runs.
    pub flows: Option<String>,
    /// The routing table.
    pub routes: Routes,
    /// Packets each output queue holds.
    pub capacity: usize,
    /// Click bandwidth of each output link: the rate of `null_*_sort`'s
    /// Virtual Clock, and of packets without a flow in `tag`/`match` sort.
    pub link_rate: String,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            ports: 4,
            flows: None,
            routes: Routes::Default,
            capacity: 1000,
            link_rate: "1Gbps".to_string(),
        }
    }
}

impl Params {
    /// Port `i`'s IPv4 address, `10.0.i.1`.
    pub fn address(i: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, 0, i as u8, 1)
    }

    /// The neighbour on port `i` that the default routes name, `10.0.i.2`.
    pub fn neighbour(i: usize) -> Ipv4Addr {
        Ipv4Addr::new(10, 0, i as u8, 2)
    }

    /// Port `i`'s Ethernet address, `02:00:0a:00:ii:01` (locally
    /// administered, the address in it).
    pub fn ether(i: usize) -> [u8; 6] {
        [0x02, 0x00, 0x0a, 0x00, i as u8, 0x01]
    }

    /// The Ethernet address of the neighbour on port `i`,
    /// `02:00:0a:00:ii:02`.
    pub fn neighbour_ether(i: usize) -> [u8; 6] {
        [0x02, 0x00, 0x0a, 0x00, i as u8, 0x02]
    }

    /// The frame in which the neighbour on port `i` asks for the router's
    /// address (an ARP request, RFC 826, padded to 60 bytes). The router
    /// answers it and learns the neighbour from it, so a source that
    /// starts with it needs no ARP reply later (see [`Io::Custom`]).
    pub fn neighbour_arp_request(i: usize) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&Params::neighbour_ether(i));
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&Params::neighbour_ether(i));
        f.extend_from_slice(&Params::neighbour(i).octets());
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&Params::address(i).octets());
        f.resize(60, 0);
        f
    }

    fn ether_text(i: usize) -> String {
        let e = Params::ether(i);
        format!(
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            e[0], e[1], e[2], e[3], e[4], e[5]
        )
    }

    fn flow_file(&self, c: Classify) -> String {
        self.flows.clone().unwrap_or_else(|| match c {
            Classify::Match => "conf/qos/flows-match.txt".to_string(),
            _ => "conf/qos/flows-tag.txt".to_string(),
        })
    }
}

/// What the router's ports are connected to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Io {
    /// `FromDevice(ethI)` and a `ToDevice(ethI)` pulling `output[i]` per
    /// port; `bricks run -d ethI=pcap:IN,OUT` binds them to captures. On
    /// live interfaces, give each the port's Ethernet address
    /// ([`Params::ether`]) first: `FromDevice` keeps only frames sent to
    /// the interface's own address.
    Devices,
    /// Click text for each port: `inputs[i]` an element expression that
    /// pushes the frames received on port `i` (written as `INPUT -> [i]r`),
    /// `outputs[i]` one that pulls the frames sent on port `i` (written as
    /// `r[i] -> OUTPUT`, e.g. `Unqueue -> Discard`). Both need one entry
    /// per port. Next hops are resolved by ARP as on a wire: a packet to a
    /// neighbour the router does not know yet waits for an ARP reply and
    /// is dropped after two unanswered retries, so an in-memory source
    /// should first send each neighbour's request for the router's
    /// address ([`Params::neighbour_arp_request`]).
    Custom {
        /// Sources, one per port.
        inputs: Vec<String>,
        /// Sinks, one per port (their first element pulls).
        outputs: Vec<String>,
    },
}

/// Why no configuration can be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamsError {
    /// The number of ports is 0 or above 250.
    Ports(usize),
    /// `Io::Custom` gives another number of inputs or outputs than ports.
    Io {
        /// Ports of the router.
        ports: usize,
        /// Inputs given.
        inputs: usize,
        /// Outputs given.
        outputs: usize,
    },
    /// A queue capacity of 0.
    Capacity,
}

impl core::fmt::Display for ParamsError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ParamsError::Ports(n) => write!(f, "{n} ports: give 1 to 250"),
            ParamsError::Io {
                ports,
                inputs,
                outputs,
            } => write!(
                f,
                "{inputs} inputs and {outputs} outputs for {ports} ports: give one of each per port"
            ),
            ParamsError::Capacity => f.write_str("a queue capacity of 0: give 1 or more"),
        }
    }
}

impl std::error::Error for ParamsError {}

/// The most ports: port numbers are painted in a byte, 255 meaning none,
/// and each port's subnet is `10.0.i.0/24`.
pub const MAX_PORTS: usize = 250;

impl Arch {
    /// The `elementclass` of this architecture (see the module doc).
    pub fn elementclass(&self, p: &Params) -> Result<String, ParamsError> {
        if p.ports == 0 || p.ports > MAX_PORTS {
            return Err(ParamsError::Ports(p.ports));
        }
        if p.capacity == 0 {
            return Err(ParamsError::Capacity);
        }
        let n = p.ports;
        let mut s = String::new();
        let w = &mut s;
        let _ = writeln!(w, "elementclass {} {{", self.class_name());
        let interfaces: Vec<String> = (0..n)
            .map(|i| format!("{}/24", Params::address(i)))
            .collect();
        let interfaces = interfaces.join(" ");
        let check = |offset: Option<usize>| match offset {
            Some(o) => format!("CheckIPHeader(OFFSET {o}, INTERFACES {interfaces}, MARTIANS true)"),
            None => format!("CheckIPHeader(INTERFACES {interfaces}, MARTIANS true)"),
        };

        match self.classify {
            Classify::Null => {}
            Classify::Tag => {
                let _ = writeln!(w, "  // Reserved flows, by MPLS label.");
                let _ = writeln!(
                    w,
                    "  ft :: FlowTable(MODE tag, CAPACITY 1024, FILE {});",
                    p.flow_file(Classify::Tag)
                );
            }
            Classify::Match => {
                let _ = writeln!(
                    w,
                    "  // Reserved flows, by 5-tuple (chains of at most k = 4)."
                );
                let _ = writeln!(
                    w,
                    "  ft :: FlowTable(MODE match, CAPACITY 1024, K 4, FILE {});",
                    p.flow_file(Classify::Match)
                );
            }
        }

        // The routing table: the router's own addresses first.
        let _ = writeln!(
            w,
            "{}  // Routes {};\n  // output {n}: the router's own addresses, {}: broadcasts.",
            if self.classify == Classify::Null {
                ""
            } else {
                "\n"
            },
            match self.route {
                Route::Pre => "of every packet (route selection \"pre\")",
                Route::Look => "of the router's own packets only (ICMP errors)",
            },
            n + 1
        );
        let mut routes = Vec::new();
        for i in 0..n {
            let a = Params::address(i);
            let o = a.octets();
            routes.push(format!("{a}/32 {n}"));
            routes.push(format!("{}.{}.{}.0/32 {}", o[0], o[1], o[2], n + 1));
            routes.push(format!("{}.{}.{}.255/32 {}", o[0], o[1], o[2], n + 1));
        }
        routes.push(format!("255.255.255.255/32 {}", n + 1));
        let mut file = None;
        match &p.routes {
            Routes::Default => {
                for i in 0..n {
                    let o = Params::address(i).octets();
                    routes.push(format!("{}.{}.{}.0/24 {i}", o[0], o[1], o[2]));
                }
                for i in 0..n {
                    routes.push(format!("192.168.{i}.0/24 {} {i}", Params::neighbour(i)));
                }
            }
            Routes::Inline(r) => routes.extend(r.iter().cloned()),
            Routes::File(f) => file = Some(f.clone()),
        }
        let _ = write!(w, "  rt :: RadixIPLookup(\n    {}", routes.join(",\n    "));
        if let Some(f) = file {
            let _ = write!(w, ",\n    ROUTES {f}");
        }
        let _ = writeln!(w, ");");
        let _ = writeln!(
            w,
            "  rt[{n}] -> ping :: ICMPPingResponder -> rt;\n  ping[1] -> local :: Discard;\n  rt[{}] -> broadcast :: Discard;",
            n + 1
        );

        // Classification and route selection, shared by every port.
        let _ = writeln!(w, "\n  // Classification and route selection.");
        let served = match (self.classify, self.route) {
            (Classify::Tag, _) => "tc",
            (Classify::Null, Route::Look) => "hops",
            _ => "ip",
        };
        match (self.classify, self.route) {
            (Classify::Null, Route::Pre) => {
                let _ = writeln!(w, "  {served} :: Strip(14) -> {} -> rt;", check(None));
            }
            (Classify::Null, Route::Look) => {
                // The IP header is behind a shim of 6 + 6 N bytes.
                let pats: Vec<String> = (1..=crate::sroute::MAX_HOPS)
                    .map(|k| format!("14/02 15/{k:02x}"))
                    .collect();
                let _ = writeln!(
                    w,
                    "  // The shim's hop count N says where the IP header starts (20 + 6 N)."
                );
                let _ = writeln!(
                    w,
                    "  {served} :: Classifier(\n    {},\n    -);",
                    pats.join(",\n    ")
                );
                let _ = writeln!(w, "  {served}[{}] -> bad_route :: Discard;", pats.len());
                for k in 1..=crate::sroute::MAX_HOPS {
                    let _ = writeln!(
                        w,
                        "  {served}[{}] -> {}\n      -> srl;",
                        k - 1,
                        check(Some(
                            14 + crate::sroute::HEADER_LEN + crate::sroute::HOP_LEN * k
                        ))
                    );
                }
                let _ = writeln!(
                    w,
                    "  srl :: SourceRouteLookup -> SourceRouteDecap -> Strip(14) -> ps :: PaintSwitch;"
                );
            }
            (Classify::Tag, route) => {
                let _ = writeln!(
                    w,
                    "  tc :: TagClassifier(ft) -> MPLSPop -> Strip(14) -> {} -> {};",
                    check(None),
                    if route == Route::Look {
                        "fl :: FlowLookup(ft)"
                    } else {
                        "rt"
                    }
                );
            }
            (Classify::Match, route) => {
                let _ = writeln!(
                    w,
                    "  {served} :: Strip(14) -> {} -> hc :: HashClassifier(ft) -> {};",
                    check(None),
                    if route == Route::Look {
                        "fl :: FlowLookup(ft)"
                    } else {
                        "rt"
                    }
                );
            }
        }

        for i in 0..n {
            let a = Params::address(i);
            let e = Params::ether_text(i);
            let _ = writeln!(w, "\n  // Port {i}: {a}/24, {e}.");
            let _ = writeln!(
                w,
                "  input[{i}] -> c{i} :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/{:04x}, -);",
                self.ethertype()
            );
            let queue = match self.order {
                Order::Fifo => format!("FIFOQueue({})", p.capacity),
                Order::Sort => format!("MDSBinSortQueue({}, BIN 1ms, BINS 1024)", p.capacity),
            };
            let _ = writeln!(w, "  out{i} :: {queue} -> [{i}]output;");
            let _ = writeln!(
                w,
                "  c{i}[0] -> arpr{i} :: Tee(2) -> ARPResponder({a} {e}) -> out{i};"
            );
            let _ = writeln!(w, "  arpq{i} :: ARPQuerier({a}/24, {e}) -> out{i};");
            let _ = writeln!(w, "  arpr{i}[1] -> [1]arpq{i};");
            let _ = writeln!(w, "  c{i}[1] -> [1]arpq{i};");
            let _ = writeln!(w, "  c{i}[2] -> {served};");
            let _ = writeln!(w, "  c{i}[3] -> other{i} :: Discard;");
            let stamp = match (self.order, self.classify) {
                (Order::Fifo, _) => String::new(),
                (Order::Sort, Classify::Null) => {
                    format!(" -> vc{i} :: VirtualClock(RATE {})", p.link_rate)
                }
                (Order::Sort, _) => {
                    format!(" -> vc{i} :: VirtualClock(TABLE ft, RATE {})", p.link_rate)
                }
            };
            let _ = writeln!(
                w,
                "  fwd{i} :: DropBroadcasts -> gio{i} :: IPGWOptions({a}) -> FixIPSrc({a}) -> dt{i} :: DecIPTTL\n      -> fr{i} :: IPFragmenter(1500){stamp} -> [0]arpq{i};"
            );
            let _ = writeln!(w, "  dt{i}[1] -> ICMPError({a}, timeexceeded) -> rt;");
            let _ = writeln!(
                w,
                "  fr{i}[1] -> ICMPError({a}, unreachable, needfrag) -> rt;"
            );
            let _ = writeln!(w, "  gio{i}[1] -> ICMPError({a}, parameterproblem) -> rt;");
            let _ = writeln!(w, "  rt[{i}] -> fwd{i};");
            match (self.classify, self.route) {
                (Classify::Null, Route::Look) => {
                    let _ = writeln!(w, "  ps[{i}] -> fwd{i};");
                }
                (_, Route::Look) => {
                    let _ = writeln!(w, "  fl[{i}] -> fwd{i};");
                }
                _ => {}
            }
        }
        let _ = writeln!(w, "}}");
        Ok(s)
    }

    /// The whole configuration: the `elementclass`, one instance `r` and
    /// its ports' wiring.
    pub fn click(&self, p: &Params, io: &Io) -> Result<String, ParamsError> {
        let mut s = self.elementclass(p)?;
        let n = p.ports;
        let _ = writeln!(s, "\nr :: {};", self.class_name());
        match io {
            Io::Devices => {
                for i in 0..n {
                    let _ = writeln!(
                        s,
                        "FromDevice(eth{i}) -> [{i}]r; r[{i}] -> ToDevice(eth{i});"
                    );
                }
            }
            Io::Custom { inputs, outputs } => {
                if inputs.len() != n || outputs.len() != n {
                    return Err(ParamsError::Io {
                        ports: n,
                        inputs: inputs.len(),
                        outputs: outputs.len(),
                    });
                }
                for (i, (src, sink)) in inputs.iter().zip(outputs).enumerate() {
                    let _ = writeln!(s, "{src} -> [{i}]r; r[{i}] -> {sink};");
                }
            }
        }
        Ok(s)
    }

    /// `conf/qos/<name>.click`: a comment saying what it is and how to run
    /// it, then [`Arch::click`] with [`Params::default`] and devices.
    pub fn conf_file(&self) -> String {
        let p = Params::default();
        let name = self.name();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "// {name}: {}.\n// Generated by bricks_qos::arch (crates/qos/src/arch.rs, whose doc explains\n// every choice); do not edit: change the generator and run\n//   BRICKS_BLESS=1 cargo test -p bricks-qos --lib arch",
            self.service()
        );
        let what = match (self.classify, self.route) {
            (Classify::Null, Route::Pre) => {
                "IPv4 frames, routed by longest-prefix match (RadixIPLookup)".to_string()
            }
            (Classify::Null, Route::Look) => {
                "source-routed frames (EtherType 0x88B5, crates/qos/src/sroute.rs): each consumes\n// one hop (next hop and output port), loses its shim and leaves as IPv4".to_string()
            }
            (Classify::Tag, r) => format!(
                "MPLS frames: the top label is the flow ID (conf/qos/flows-tag.txt), popped\n// before the IP path; {}; unknown labels dropped",
                if r == Route::Look { "next hop and port from the flow record" } else { "routed by longest-prefix match" }
            ),
            (Classify::Match, r) => format!(
                "IPv4 frames of reserved 5-tuples (conf/qos/flows-match.txt); {};\n// other flows dropped",
                if r == Route::Look { "next hop and port from the flow record" } else { "routed by longest-prefix match" }
            ),
        };
        let order = match (self.order, self.classify) {
            (Order::Fifo, _) => "a FIFO per output port",
            (Order::Sort, Classify::Null) => {
                "an MDS-BinSort per output port, deadlines from one Virtual Clock per port"
            }
            (Order::Sort, _) => {
                "an MDS-BinSort per output port, deadlines from each flow's reserved rate"
            }
        };
        let _ = writeln!(s, "//\n// Serves {what};\n// {order}.");
        let _ = writeln!(
            s,
            "// Port i (eth0 to eth3) is 10.0.i.1/24 with Ethernet address 02:00:0a:00:0i:01;\n// 192.168.i.0/24 is reached via 10.0.i.2. ARP and ICMP errors as an IPv4 router.\n//"
        );
        let _ = writeln!(
            s,
            "// On captures (from the repository's root):\n//   bricks run conf/qos/{name}.click --clock trace \\\n//     -d eth0=pcap:in0.pcap,out0.pcap -d eth1=pcap:in1.pcap,out1.pcap \\\n//     -d eth2=pcap:in2.pcap,out2.pcap -d eth3=pcap:in3.pcap,out3.pcap\n// On interfaces eth0 to eth3 (as root), once each has its port's Ethernet address\n// (FromDevice keeps only frames sent to the interface's own address):\n//   ip link set dev eth0 address 02:00:0a:00:00:01   # and so on\n//   bricks run conf/qos/{name}.click\n"
        );
        s.push_str(
            &self
                .click(&p, &Io::Devices)
                .expect("the default parameters are valid"),
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn names_round_trip_and_are_in_table_4_order() {
        let names: Vec<&str> = Arch::ALL.iter().map(|a| a.name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        for a in Arch::ALL {
            assert_eq!(a.name().parse::<Arch>(), Ok(a));
            let parts: Vec<&str> = a.name().split('_').collect();
            assert_eq!(parts.len(), 3);
        }
        assert_eq!(Arch::ALL[9].name(), "tag_look_sort");
        assert_eq!(Arch::ALL[9].class_name(), "TagLookSort");
        assert!("tag_look_heap".parse::<Arch>().is_err());
    }

    #[test]
    fn neighbour_arp_request_is_a_request_for_the_port_address() {
        let f = Params::neighbour_arp_request(2);
        assert_eq!(f.len(), 60);
        assert_eq!(&f[0..6], &[0xff; 6]);
        assert_eq!(&f[12..14], &[0x08, 0x06]);
        assert_eq!(&f[20..22], &[0, 1]);
        assert_eq!(&f[22..28], &[0x02, 0x00, 0x0a, 0x00, 2, 0x02]);
        assert_eq!(&f[28..32], &[10, 0, 2, 2]);
        assert_eq!(&f[38..42], &[10, 0, 2, 1]);
    }

    #[test]
    fn parameters_are_checked() {
        let a = Arch::ALL[0];
        let p = Params {
            ports: 0,
            ..Params::default()
        };
        assert_eq!(a.elementclass(&p), Err(ParamsError::Ports(0)));
        let io = Io::Custom {
            inputs: vec!["Idle".into()],
            outputs: vec![],
        };
        assert!(matches!(
            a.click(&Params::default(), &io),
            Err(ParamsError::Io { .. })
        ));
    }

    #[test]
    fn custom_io_is_wired_per_port() {
        let p = Params {
            ports: 2,
            routes: Routes::File("routes.txt".into()),
            ..Params::default()
        };
        let io = Io::Custom {
            inputs: vec!["InfiniteSource(LIMIT 1)".into(), "Idle".into()],
            outputs: vec!["Unqueue -> Discard".into(), "Unqueue -> Discard".into()],
        };
        let t = Arch::ALL[6].click(&p, &io).unwrap();
        assert!(t.contains("InfiniteSource(LIMIT 1) -> [0]r; r[0] -> Unqueue -> Discard;"));
        assert!(t.contains("Idle -> [1]r;"));
        assert!(t.contains("ROUTES routes.txt"));
        assert!(!t.contains("eth0"));
    }

    /// conf/qos/*.click are the generator's output; `BRICKS_BLESS=1`
    /// rewrites them.
    #[test]
    fn conf_files_are_generated() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../conf/qos");
        let bless = std::env::var_os("BRICKS_BLESS").is_some();
        for a in Arch::ALL {
            let path = dir.join(format!("{}.click", a.name()));
            let want = a.conf_file();
            if bless {
                std::fs::write(&path, &want).unwrap();
            }
            let got = std::fs::read_to_string(&path).unwrap_or_default();
            assert!(
                got == want,
                "{} is not the generator's output: run BRICKS_BLESS=1 cargo test -p bricks-qos --lib arch",
                path.display()
            );
        }
    }
}
