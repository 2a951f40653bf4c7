//! `bricks bench`: the subcommands and their help; each bench is a unit of
//! `bricks-experiments` (`bricks bench core` is
//! [`bricks_experiments::core::bench`]).

use clap::Subcommand;
use std::process::ExitCode;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// The element graph in memory on one core (64-byte packets; no root).
    ///
    /// minimal: InfiniteSource -> EtherRewrite -> Discard. nulls: minimal
    /// with 8 Null elements before EtherRewrite; with minimal in the same
    /// run, (nulls - minimal) / 8 is printed under the table as the
    /// per-element overhead of the element path.
    /// ipv4: Classifier -> Strip -> CheckIPHeader -> StaticIPLookup
    /// (16 routes) -> DecIPTTL -> EtherEncap. iprouter: Click's
    /// two-interface IP router (conf/ip-router.click) fed by an
    /// InfiniteSource. cluster: Strip -> CheckIPHeader -> three VLBNodes
    /// of one cluster in one graph, each packet labelled at the input
    /// node, switched by the intermediate, delivered by the output node.
    /// ipv6: Classifier -> Strip -> CheckIP6Header -> LookupIP6Route
    /// (200K generated prefixes, `bricks routes gen`) -> DecIP6HLIM ->
    /// EtherEncap, 78-byte frames to an address inside the table;
    /// ipv6-flows: the same path with 4,096 flows to random addresses
    /// inside the table's prefixes (WorkloadSource builds every frame).
    /// Instructions per packet come from callgrind (valgrind) when it is
    /// installed. With --click PATH, Click's userlevel driver runs
    /// minimal, nulls, ipv4 and iprouter in the same run, and its figures
    /// and the ratios (Click / bricks) are printed beside bricks'.
    #[command(after_help = "Examples:\n  \
        bricks bench core\n  \
        bricks bench core --workload ipv4 --workload iprouter --no-callgrind\n  \
        bricks bench core --workload ipv6\n  \
        bricks bench core --packets 1000000 --runs 3\n  \
        bricks bench core --workload minimal --workload ipv4 --workload iprouter \\\n      \
        --runs 3 --click ~/click/userlevel/click")]
    Core(bricks_experiments::core::CoreArgs),
    /// Route lookup at Internet scale: lookups per second of every
    /// algorithm on generated tables (1M and 256K IPv4 prefixes, 200K
    /// IPv6), memory, build time, updates applied while lookups run, what
    /// one route change costs (the default route and a long prefix), and
    /// the IPv4 forwarding path with the 1M-prefix table. In memory; no
    /// root.
    #[command(after_help = "Examples:\n  \
        bricks bench lpm\n  \
        bricks bench lpm --v4 256000 --v6 50000 --runs 3")]
    Lpm(bricks_experiments::lpm::LpmArgs),
    /// Forwarding between real interfaces (veths in network namespaces):
    /// bricks against Linux and XDP_REDIRECT, and RouteBricks' batching
    /// (kp, kn) and spreading (per-core, pipeline, serial) choices, with
    /// latency at a low rate. Needs root.
    Io(bricks_experiments::io::IoArgs),
    /// IPsec ESP tunnel mode: encapsulation and decapsulation in memory on
    /// one core (AES-128-GCM, AES-256-GCM, AES-128-CBC with HMAC-SHA1-96;
    /// 64-byte, 1400-byte and IMIX packets; Mpps, Gbps, ns and
    /// instructions per packet), one SA's sequence counter shared by two
    /// workers, and conf/ipsec-gw.click between veths in network
    /// namespaces against Linux's XFRM (that part needs root and is skipped
    /// without it).
    Ipsec(bricks_experiments::ipsec::IpsecArgs),
    /// A RouteBricks cluster of bricks routers in network namespaces joined
    /// by veths (conf/cluster/rb4.toml with rates for this machine; needs
    /// root): per-server load relative to the
    /// external rate for uniform and worst-case traffic (2R..3R),
    /// reordering with and without flowlets, failover time when a server
    /// dies, the cluster's throughput against one server's, one-way
    /// latency through two servers against one, and CPU time per packet.
    Cluster(bricks_experiments::cluster::bench::ClusterArgs),
    /// Virtual routers on one box (Egi et al., CoNEXT 2008), in memory: the
    /// rate against flows and IP routing's cost (Figs. 2, 4), two paths
    /// mapped onto two workers (Fig. 8), a queue shared by two workers
    /// against one per input (Fig. 11), 1 to 1,024 virtual routers behind
    /// a demultiplexer (Fig. 16), and 2:1 weights with software and
    /// per-router receive queues (Figs. 17, 18). Prints the paper's value
    /// beside bricks' with a verdict, and writes SVG plots.
    #[command(after_help = "Examples:\n  \
        bricks bench vr\n  \
        bricks bench vr --quick -o /tmp/vr\n  \
        bricks bench vr --only scaling --only fairness --runs 3")]
    Vr(bricks_experiments::vr::VrArgs),
    /// Multistage routers (Bianco et al., HPSR 2007): the single-PC model
    /// (Fig. 1), one router's rate against frame size on veths with
    /// buffers recycled and allocated per packet (Fig. 5), an L2Balancer
    /// in memory, ODB against DTX-n (Fig. 6), and whole multistage routers
    /// (`bricks multistage up`) with every box capped at a fixed rate as
    /// balancers and routers are added (Fig. 7). The veth and namespace
    /// parts need root and are skipped, with the reason, without it.
    /// Prints the paper's value beside bricks' with a verdict, and writes
    /// SVG plots.
    #[command(after_help = "Examples:\n  \
        sudo bricks bench multistage\n  \
        bricks bench multistage --quick --only fig1 --only fig6 -o /tmp/ms\n  \
        sudo bricks bench multistage --only fig7 --runs 3")]
    Multistage(bricks_experiments::multistage::MultistageArgs),
    /// QoS building blocks (Hardekopf et al.), in memory: the memory of
    /// hash matching against tagging by model and by filling a real
    /// FlowTable (Fig. 2), classification against the chain bound k in
    /// the worst case (Fig. 3), the 4-bit trie at depths 1, 3, 8 and on a
    /// realistic table (Fig. 4), FIFO, heap, BinSort and MDS-BinSort as
    /// the queue fills (Fig. 5), and the twelve architectures beside
    /// bricks' IPv4 router with Table 4's threads and SRAM bandwidth and
    /// Table 3's scaling of the sort block (Fig. 7). ns and instructions
    /// per packet on one core, memory references and 32-bit words per
    /// packet counted exactly. Prints the paper's value beside bricks'
    /// with a verdict, and writes SVG plots. No root needed.
    #[command(after_help = "Examples:\n  \
        bricks bench qos\n  \
        bricks bench qos --quick -o /tmp/qos\n  \
        bricks bench qos --only fig5 --only fig7 --runs 3 --no-callgrind")]
    Qos(bricks_experiments::qos::QosArgs),
    /// Routes from a Linux table over rtnetlink into DIR-24-8, in a
    /// network namespace made for the run (needs root; skipped with the
    /// reason without it): the kernel's insert time for N routes written
    /// over netlink (and through `ip -batch`), routes applied per second
    /// by a follower while they are written and a reader forwards, its lag,
    /// the time to dump and apply the full table with the reader's
    /// lookups/s during it against an idle table, and the same routes
    /// through the decoder alone, the `add` write handler and
    /// Lpm4Update::insert, with the ratios.
    #[command(after_help = "Examples:\n  \
        sudo bricks bench routes\n  \
        sudo bricks bench routes --quick\n  \
        sudo bricks bench routes --routes 500000 --runs 5")]
    Routes(bricks_experiments::routes::RoutesArgs),
}

/// Runs one bench.
pub fn bench(cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    let exit = |all_ran: bool| {
        if all_ran {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    };
    match cmd {
        BenchCommand::Core(a) => Ok(bricks_experiments::core::bench(&a)?),
        BenchCommand::Lpm(a) => Ok(bricks_experiments::lpm::bench(&a)?),
        BenchCommand::Io(a) => Ok(bricks_experiments::io::bench(
            &a,
            crate::runner::stop_on_signals,
        )?),
        BenchCommand::Ipsec(a) => Ok(bricks_experiments::ipsec::bench(
            &a,
            crate::runner::stop_on_signals,
        )?),
        BenchCommand::Cluster(a) => Ok(bricks_experiments::cluster::bench::bench(
            a,
            crate::runner::stop_on_signals,
        )?),
        BenchCommand::Vr(a) => Ok(exit(bricks_experiments::vr::bench(&a)?)),
        BenchCommand::Multistage(a) => Ok(exit(bricks_experiments::multistage::bench(&a)?)),
        BenchCommand::Routes(a) => Ok(exit(bricks_experiments::routes::bench(&a)?)),
        BenchCommand::Qos(a) => Ok(exit(bricks_experiments::qos::bench(&a)?)),
    }
}
