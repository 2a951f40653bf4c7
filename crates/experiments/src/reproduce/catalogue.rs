//! Every figure and table of the five papers, each with what bricks does
//! with it: rerun as in the paper, rerun as a ratio or a count, or not
//! reproducible here and why. Nothing is left out: a diagram is listed as
//! one, so that the report accounts for the whole paper.

use std::fmt;

/// One of the five papers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum)]
pub enum Paper {
    /// Dobrescu et al., "RouteBricks: Exploiting Parallelism To Scale
    /// Software Routers" (SOSP 2009).
    Routebricks,
    /// Manesh et al., "Evaluating the Suitability of Server Network Cards
    /// for Software Routers" (PRESTO 2010).
    Nic,
    /// Egi et al., "Towards High Performance Virtual Routers on Commodity
    /// Hardware" (CoNEXT 2008).
    Vr,
    /// Bianco et al., "Scalable Layer-2/Layer-3 Multistage Switching
    /// Architectures for Software Routers" (HPSR 2007).
    Multistage,
    /// Hardekopf et al., "Impact of Network Protocols on Programmable
    /// Router Architectures".
    Qos,
}

impl Paper {
    /// The five, in the order of shared/papers.
    pub const ALL: [Paper; 5] = [
        Paper::Routebricks,
        Paper::Nic,
        Paper::Vr,
        Paper::Multistage,
        Paper::Qos,
    ];

    /// Its name on the command line and in file names.
    pub fn key(self) -> &'static str {
        match self {
            Paper::Routebricks => "routebricks",
            Paper::Nic => "nic",
            Paper::Vr => "vr",
            Paper::Multistage => "multistage",
            Paper::Qos => "qos",
        }
    }

    /// The paper, cited.
    pub fn title(self) -> &'static str {
        match self {
            Paper::Routebricks => {
                "Dobrescu et al., RouteBricks: Exploiting Parallelism To Scale Software Routers (SOSP 2009)"
            }
            Paper::Nic => {
                "Manesh et al., Evaluating the Suitability of Server Network Cards for Software Routers (PRESTO 2010)"
            }
            Paper::Vr => {
                "Egi et al., Towards High Performance Virtual Routers on Commodity Hardware (CoNEXT 2008)"
            }
            Paper::Multistage => {
                "Bianco et al., Scalable Layer-2/Layer-3 Multistage Switching Architectures for Software Routers (HPSR 2007)"
            }
            Paper::Qos => {
                "Hardekopf et al., Impact of Network Protocols on Programmable Router Architectures"
            }
        }
    }

    /// The paper's machine and software, in a line.
    pub fn setup(self) -> &'static str {
        match self {
            Paper::Routebricks => {
                "two-socket Intel Xeon 5560 (Nehalem), 8 cores at 2.8 GHz, two dual-port 10 Gbit/s Intel 82598 NICs; Click in the Linux kernel, polling"
            }
            Paper::Nic => {
                "two-socket Intel Xeon 5560 (Nehalem), 8 cores at 2.8 GHz, 8 MB L3; multi-queue 10 Gbit/s Intel NICs; Click in the Linux kernel"
            }
            Paper::Vr => {
                "Dell PowerEdge 2950, two quad-core Intel Xeons, gigabit e1000 NICs; Click in the Linux kernel; a 4-node AMD Opteron 8222 NUMA server"
            }
            Paper::Multistage => {
                "one Intel Xeon at 2.6 GHz, PCI-X Intel PRO/1000 gigabit NICs; Linux IP forwarding with NAPI, Click balancers"
            }
            Paper::Qos => {
                "Intel IXP1200 network processor on its cycle-accurate simulator: six 200 MHz microengines of four threads, 8 MB SRAM, 256 MB DRAM"
            }
        }
    }

    /// Its key parsed back.
    pub fn from_key(key: &str) -> Option<Paper> {
        Paper::ALL.into_iter().find(|p| p.key() == key)
    }
}

impl fmt::Display for Paper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// What bricks can do with a figure or table on this kind of machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Rerun as in the paper: the same measurement and the same shape.
    Rerun,
    /// Rerun as a ratio, a count or a shape, because the absolute rates
    /// need the paper's hardware; the text says what is compared.
    Ratio(&'static str),
    /// Not reproducible here, and why.
    NotReproducible(&'static str),
    /// A diagram or a description, with no measurement in it.
    Diagram,
}

impl Kind {
    /// A word for the report's tables.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Rerun => "rerun",
            Kind::Ratio(_) => "ratio",
            Kind::NotReproducible(_) => "not reproducible",
            Kind::Diagram => "diagram",
        }
    }

    /// The reason or the comparison, when there is one.
    pub fn note(self) -> &'static str {
        match self {
            Kind::Ratio(s) | Kind::NotReproducible(s) => s,
            Kind::Rerun | Kind::Diagram => "",
        }
    }

    /// Whether something is measured for it.
    pub fn measured(self) -> bool {
        matches!(self, Kind::Rerun | Kind::Ratio(_))
    }
}

/// A figure or table of a paper.
#[derive(Debug, Clone, Copy)]
pub struct Item {
    /// The paper.
    pub paper: Paper,
    /// As the paper numbers it: `Fig. 16`, `Table 3`, `§6.2`.
    pub id: &'static str,
    /// What it shows.
    pub title: &'static str,
    /// What bricks does with it.
    pub kind: Kind,
    /// The run that measures it (a key of [`super::units`]), if any.
    pub unit: Option<&'static str>,
    /// The figure its run's rows are labelled with, when not its own (the
    /// paper draws the configuration in one figure and its rates in
    /// another).
    pub rows_from: Option<&'static str>,
}

const fn item(
    paper: Paper,
    id: &'static str,
    title: &'static str,
    kind: Kind,
    unit: Option<&'static str>,
) -> Item {
    Item {
        paper,
        id,
        title,
        kind,
        unit,
        rows_from: None,
    }
}

const fn with_rows_of(mut i: Item, label: &'static str) -> Item {
    i.rows_from = Some(label);
    i
}

use Kind::*;
use Paper::*;

const NUMA: &str = "needs two sockets with their own memory controllers (NUMA); this machine has one node and two cores";
const BUSES: &str = "needs the memory, socket-I/O, PCIe and inter-socket bus counters of the paper's Nehalem (uncore events), which a virtual machine does not expose";
const HYPERVISOR: &str =
    "needs Xen or OpenVZ guests on the router; bricks hosts virtual routers in one process instead (Figs. 16-18)";
const IXP: &str = "a property of the IXP1200 network processor (microengines, SRAM, SDRAM), not of a router's software";

/// Every figure and table of the five papers, in each paper's order.
pub const CATALOGUE: &[Item] = &[
    // RouteBricks (SOSP 2009), §3-§6.
    item(Routebricks, "Fig. 1", "a traditional router and a server-cluster router", Diagram, None),
    item(Routebricks, "Fig. 2", "an 8-port Valiant load-balanced mesh", Diagram, None),
    item(
        Routebricks,
        "Fig. 3",
        "servers needed for an N-port router, four server configurations",
        Rerun,
        Some("routebricks:plan"),
    ),
    item(Routebricks, "Fig. 4", "a server with point-to-point links and integrated memory controllers", Diagram, None),
    item(Routebricks, "Fig. 5", "a shared-bus server", Diagram, None),
    item(
        Routebricks,
        "Fig. 6",
        "forwarding rate with and without multiple queues (pipeline against parallel, shared against per-core queues)",
        Ratio("same-run ratios of the mappings on veths, not 10 Gbit/s NIC rates"),
        Some("routebricks:io"),
    ),
    item(
        Routebricks,
        "Table 1",
        "forwarding rate with poll-driven (kp) and NIC-driven (kn) batching: 1/1, 32/1, 32/16",
        Ratio("the rate ratios between batch sizes, in memory and on veths"),
        Some("routebricks:io"),
    ),
    item(
        Routebricks,
        "Fig. 7",
        "cumulative gains of the new architecture, multiple queues and batching",
        Ratio("the gains of multiple queues and of batching as same-run ratios; the server generations are not on this machine"),
        Some("routebricks:io"),
    ),
    item(
        Routebricks,
        "Fig. 8",
        "forwarding rate against packet size (minimal forwarding) and against workload (minimal forwarding, IP routing with a 256K-route table, IPsec)",
        Ratio("rates per core in memory and the workloads' ratios to minimal forwarding, at 64 B and on an Abilene-like size mix (the trace itself is not available)"),
        Some("routebricks:core"),
    ),
    item(
        Routebricks,
        "Fig. 9",
        "CPU cycles per packet against the input rate, per workload",
        Ratio("cycles per packet on one worker in memory at 3 to 5 input rates: the worker's CPU time times the clock, the empty polls' cycles taken out as the paper does"),
        Some("routebricks:core"),
    ),
    item(
        Routebricks,
        "Table 2",
        "upper bounds of the server's components (CPU, memory, I/O, PCIe, inter-socket)",
        NotReproducible(BUSES),
        None,
    ),
    item(
        Routebricks,
        "Table 3",
        "instructions per packet and cycles per instruction for minimal forwarding, IP routing and IPsec",
        Ratio("instructions per packet counted exactly with callgrind, and the ratios between the workloads"),
        Some("routebricks:core"),
    ),
    item(
        Routebricks,
        "§5.3",
        "per-packet CPU cost of 1,024-byte against 64-byte packets (1.6x)",
        Ratio("instructions per packet at both sizes, and their ratio"),
        Some("routebricks:core"),
    ),
    item(Routebricks, "Fig. 10", "load on the system buses per packet against the input rate", NotReproducible(BUSES), None),
    item(
        Routebricks,
        "§6.2",
        "RB4: rate, reordering with and without flowlets, latency",
        Ratio("four bricks servers in network namespaces joined by veths: the cluster's rate against one server's in the same run, per-server load against the external rate (2R uniform, at most 3R), reordering with flowlets and without, failover, and one-way latency beside the paper's latency arithmetic redone"),
        Some("routebricks:cluster"),
    ),
    // The NIC paper (PRESTO 2010).
    item(Nic, "Fig. 1", "a server's components", Diagram, None),
    item(
        Nic,
        "Fig. 2",
        "aggregate forwarding rate against cores: serial NIC, multi-queue, ideal",
        Ratio("rate against workers up to the machine's cores, as ratios to one worker"),
        Some("routebricks:io"),
    ),
    item(
        Nic,
        "Fig. 3",
        "per-core forwarding rate against cores",
        Ratio("Fig. 2's rates divided by the workers"),
        Some("routebricks:io"),
    ),
    item(
        Nic,
        "Fig. 4",
        "aggregate rate against hardware queues per port",
        Ratio("Q = 2 on veths, a worker per queue: one port with 2 queues and 2 workers against two ports with 1 queue and 1 worker each, in the same rounds, beside one port with 1 queue and 1 worker; Q = 4, 6 and 8 need 4 to 8 cores"),
        Some("nic:queues"),
    ),
    item(
        Nic,
        "Fig. 5",
        "the rate's ratio against queues per port",
        Ratio("one port's rate over two ports' at Q = 2, round by round, from Fig. 4's runs; the ratios at Q = 4, 6 and 8 need 4 to 8 cores"),
        Some("nic:queues"),
    ),
    item(
        Nic,
        "§4.3",
        "the wishlist: change the hash function and the number of queues at runtime, without a NIC reset",
        Ratio("bricks' software steering on veths, 2 workers: each worker's share as the queue count goes 2 -> 1 -> 2 and the RSS key changes while forwarding, the time each change takes to show, and the sink's loss and reordering against a run with no change"),
        Some("nic:wishlist"),
    ),
    // Egi et al. (CoNEXT 2008).
    item(Vr, "Fig. 1", "the Dell PowerEdge 2950's architecture", Diagram, None),
    item(
        Vr,
        "Fig. 2",
        "one- and two-way forwarding rate on one processor against flows",
        Ratio("64-byte rate against flows on one worker in memory; the shape (flat with flows)"),
        Some("vr:flows"),
    ),
    item(Vr, "Fig. 3", "forwarding rate on a multi-processor router", NotReproducible("needs eight cores on two sockets"), None),
    item(
        Vr,
        "Fig. 4",
        "the cost of extra memory accesses: IP routing against minimal forwarding",
        Ratio("IP routing's rate relative to minimal forwarding at 64 and 1,024 bytes"),
        Some("vr:flows"),
    ),
    item(Vr, "Fig. 5", "the path of a packet through Click and the e1000 driver", Diagram, None),
    item(Vr, "Fig. 6", "memory bus transactions per packet", NotReproducible(BUSES), None),
    item(Vr, "Fig. 7", "forwarding rate on an AMD NUMA router", NotReproducible(NUMA), None),
    item(
        Vr,
        "Fig. 8",
        "the Click configuration for naive thread assignment",
        Rerun,
        Some("vr:mapping"),
    ),
    item(Vr, "Fig. 9", "packet flows relative to interfaces and CPUs", Diagram, None),
    with_rows_of(
        item(
            Vr,
            "Fig. 10",
            "two paths on two and four cores: where packets change cores",
            Ratio("the mappings' rates on two workers as ratios (Fig. 8's runs); the four-core half needs four cores"),
            Some("vr:mapping"),
        ),
        "Fig. 8",
    ),
    item(
        Vr,
        "Fig. 11",
        "two inputs sharing one queue to a saturated output, and the fix",
        Rerun,
        Some("vr:shared-queue"),
    ),
    item(Vr, "Fig. 12", "Xen configurations", Diagram, None),
    item(Vr, "Fig. 13", "OpenVZ configurations", Diagram, None),
    item(Vr, "Fig. 14", "virtual machines forwarding, consolidated and directly mapped", NotReproducible(HYPERVISOR), None),
    item(Vr, "Fig. 15", "options for sharing interfaces between virtual routers", Diagram, None),
    item(
        Vr,
        "Fig. 16",
        "forwarding rate as virtual routers are added",
        Ratio("the aggregate rate from 1 to 1,024 routers relative to one router, in memory"),
        Some("vr:scaling"),
    ),
    item(
        Vr,
        "Fig. 17",
        "per-router rate, 2:1 weights, software demultiplexing, 60 % low-priority load",
        Rerun,
        Some("vr:fairness"),
    ),
    item(
        Vr,
        "Fig. 18",
        "per-router rate, 2:1 weights, per-router receive queues",
        Rerun,
        Some("vr:fairness"),
    ),
    item(Vr, "Fig. 19", "Xen's I/O channel", NotReproducible(HYPERVISOR), None),
    item(Vr, "Fig. 20", "Xen dom0 forwarding", NotReproducible(HYPERVISOR), None),
    item(Vr, "Fig. 21", "directly mapped domains sharing one core", NotReproducible(HYPERVISOR), None),
    // Bianco et al. (HPSR 2007).
    item(
        Multistage,
        "Fig. 1",
        "a Linux router's saturation rate against frame size (the single-PC model)",
        Ratio("the paper's model computed, and with bricks' measured 64-byte rate (Fig. 5)"),
        Some("multistage:router"),
    ),
    item(Multistage, "Fig. 2", "the multistage architectures", Diagram, None),
    item(Multistage, "Fig. 3", "a PC-based software router's components", Diagram, None),
    item(Multistage, "Fig. 4", "NAPI's operation", Diagram, None),
    item(
        Multistage,
        "Fig. 5",
        "one router's forwarding rate against frame size",
        Ratio("bricks on veths in namespaces; the shape against frame size"),
        Some("multistage:router"),
    ),
    item(
        Multistage,
        "Fig. 6",
        "balancer rate: ODB against DTX-n",
        Ratio("an L2Balancer in memory, DTX-n relative to ODB"),
        Some("multistage:balancer"),
    ),
    item(
        Multistage,
        "Fig. 7",
        "aggregate throughput as balancers and routers are added",
        Ratio("whole multistage routers in namespaces with every box capped at the paper's rates / 100"),
        Some("multistage:scaling"),
    ),
    // Hardekopf et al.
    item(Qos, "Fig. 1", "the IXP1200 system", Diagram, None),
    item(Qos, "Table 1", "the IXP1200 against the IXP2800", NotReproducible(IXP), None),
    item(
        Qos,
        "Table 2",
        "the twelve service architectures from building blocks (a definition; bricks builds all twelve, measured in Fig. 7)",
        Diagram,
        None,
    ),
    item(
        Qos,
        "Fig. 2",
        "space of tagging against hash matching, by flows and link rate",
        Rerun,
        Some("qos:memory"),
    ),
    item(
        Qos,
        "Fig. 3",
        "classification throughput against the chain bound k",
        Ratio("cost per packet on one core against k, in instructions and memory references"),
        Some("qos:classify"),
    ),
    item(
        Qos,
        "Fig. 4",
        "route selection: the 4-bit trie against direct lookup",
        Ratio("cost per lookup against the levels read, in memory references and ns"),
        Some("qos:trie"),
    ),
    item(
        Qos,
        "Fig. 5",
        "packet ordering: FIFO, BinSort, MDS-BinSort",
        Ratio("cost per packet as the queue fills, in memory references and ns"),
        Some("qos:architectures"),
    ),
    item(Qos, "Fig. 6", "memory latency and lock queue fullness of the orderings", NotReproducible(IXP), None),
    item(
        Qos,
        "Table 3",
        "link speed against the resources approximate sorting needs",
        Ratio("threads and bandwidth scaled from bricks' counted references per packet"),
        Some("qos:architectures"),
    ),
    item(
        Qos,
        "Fig. 7",
        "throughput and SRAM bandwidth of the twelve architectures",
        Ratio("the twelve on one core: ns, instructions, memory references and words per packet"),
        Some("qos:architectures"),
    ),
    item(
        Qos,
        "Table 4",
        "threads and SRAM bandwidth needed against link speed, per architecture",
        Ratio("from bricks' counted references per packet"),
        Some("qos:architectures"),
    ),
];

/// The items of `paper`.
pub fn of(paper: Paper) -> impl Iterator<Item = &'static Item> {
    CATALOGUE.iter().filter(move |i| i.paper == paper)
}

/// The figure or table numbers a label names: `Fig. 2(b): ...` is
/// (`Fig`, [2]), `Figs. 17, 18` is (`Fig`, [17, 18]), `Table 4` is
/// (`Table`, [4]), `§6.2` is (`§`, [6]). `None` when it names none.
pub fn numbers(label: &str) -> Option<(&'static str, Vec<u32>)> {
    let label = label.trim();
    let (kind, rest) = if let Some(r) = label.strip_prefix("Figs.") {
        ("Fig", r)
    } else if let Some(r) = label.strip_prefix("Fig.") {
        ("Fig", r)
    } else if let Some(r) = label.strip_prefix("Tables") {
        ("Table", r)
    } else if let Some(r) = label.strip_prefix("Table") {
        ("Table", r)
    } else if let Some(r) = label.strip_prefix('§') {
        ("§", r)
    } else {
        return None;
    };
    let head = rest.split(':').next().unwrap_or("");
    let mut out = Vec::new();
    for part in head.split([',', '&']).flat_map(|p| p.split(" and ")) {
        let digits: String = part
            .trim()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        if let Ok(n) = digits.parse() {
            out.push(n);
        }
    }
    (!out.is_empty()).then_some((kind, out))
}

/// Whether a result row labelled `label` belongs to `item`: it names the
/// item's figure or table, or it names none at all.
pub fn row_belongs(item: &Item, label: &str) -> bool {
    let Some((kind, ns)) = numbers(label) else {
        return true;
    };
    match numbers(item.rows_from.unwrap_or(item.id)) {
        Some((k, mine)) => k == kind && ns.iter().any(|n| mine.contains(n)),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_their_figures() {
        assert_eq!(numbers("Fig. 2(b): memory"), Some(("Fig", vec![2])));
        assert_eq!(numbers("Figs. 17, 18"), Some(("Fig", vec![17, 18])));
        assert_eq!(numbers("Figs. 2, 4"), Some(("Fig", vec![2, 4])));
        assert_eq!(numbers("Table 4"), Some(("Table", vec![4])));
        assert_eq!(numbers("§6.2"), Some(("§", vec![6])));
        assert_eq!(numbers("summary"), None);
    }

    #[test]
    fn rows_go_to_their_figure() {
        let fig4 = CATALOGUE
            .iter()
            .find(|i| i.paper == Vr && i.id == "Fig. 4")
            .unwrap();
        assert!(row_belongs(fig4, "Figs. 2, 4"));
        assert!(row_belongs(
            fig4,
            "Fig. 4: IP routing rate relative to minimal forwarding"
        ));
        assert!(!row_belongs(
            fig4,
            "Fig. 2: 64-byte forwarding rate against flows"
        ));
        assert!(!row_belongs(fig4, "Table 4"));
        assert!(row_belongs(fig4, "no figure named"));
    }

    #[test]
    fn every_item_is_accounted_for() {
        for p in Paper::ALL {
            assert!(of(p).count() >= 5, "{p} has too few items");
        }
        // Ids are unique within a paper; measured items name a run and the
        // others name none.
        for (i, a) in CATALOGUE.iter().enumerate() {
            for b in &CATALOGUE[i + 1..] {
                assert!(
                    !(a.paper == b.paper && a.id == b.id),
                    "{} {} twice",
                    a.paper,
                    a.id
                );
            }
            assert_eq!(a.kind.measured(), a.unit.is_some(), "{} {}", a.paper, a.id);
            if let NotReproducible(why) = a.kind {
                assert!(!why.is_empty());
            }
        }
        // The figures each paper numbers, all listed.
        let figs = |p: Paper| {
            of(p)
                .filter_map(|i| numbers(i.id))
                .filter(|(k, _)| *k == "Fig")
                .flat_map(|(_, n)| n)
                .collect::<Vec<u32>>()
        };
        assert_eq!(figs(Routebricks), (1..=10).collect::<Vec<_>>());
        assert_eq!(figs(Nic), (1..=5).collect::<Vec<_>>());
        assert_eq!(figs(Vr), (1..=21).collect::<Vec<_>>());
        assert_eq!(figs(Multistage), (1..=7).collect::<Vec<_>>());
        assert_eq!(figs(Qos), (1..=7).collect::<Vec<_>>());
    }
}
