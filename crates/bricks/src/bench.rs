//! `bricks bench core`: the packet path measured in memory (the other
//! benches, `lpm`, `io`, `ipsec` and `cluster`, have files of their own;
//! `vr`, `multistage`, `qos` and `routes` live in `bricks-experiments`).
//!
//! Each workload is a configuration whose source makes N packets and whose
//! sink drops them, run to completion on one core. Time per packet comes
//! from the median of several runs; instructions per packet come from
//! callgrind, which is repeatable on a noisy machine: two runs with
//! different packet counts, and the difference divided by the difference
//! in packets, so that start-up and tear-down cancel out.

use anyhow::{bail, Context as _};
use bricks_config::Source;
use bricks_runtime::Engine;
use clap::{Subcommand, ValueEnum};
use std::process::{Command, ExitCode};
use std::time::Instant;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// The element graph in memory on one core (64-byte packets; no root).
    ///
    /// minimal: InfiniteSource -> EtherRewrite -> Discard.
    /// ipv4: Classifier -> Strip -> CheckIPHeader -> StaticIPLookup
    /// (16 routes) -> DecIPTTL -> EtherEncap. iprouter: Click's
    /// two-interface IP router (conf/ip-router.click) fed by an
    /// InfiniteSource. cluster: Strip -> CheckIPHeader -> three VLBNodes
    /// of one cluster in one graph, each packet labelled at the input
    /// node, switched by the intermediate, delivered by the output node.
    /// ipv6: Classifier -> Strip -> CheckIP6Header -> LookupIP6Route
    /// (200K generated prefixes, `bricks routes gen`) -> DecIP6HLIM ->
    /// EtherEncap, 78-byte frames to an address inside the table.
    /// Instructions per packet come from callgrind (valgrind) when it is
    /// installed.
    #[command(after_help = "Examples:\n  \
        bricks bench core\n  \
        bricks bench core --workload ipv4 --workload iprouter --no-callgrind\n  \
        bricks bench core --workload ipv6\n  \
        bricks bench core --packets 1000000 --runs 3")]
    Core(CoreArgs),
    /// Route lookup at Internet scale: lookups per second of every
    /// algorithm on generated tables (1M and 256K IPv4 prefixes, 200K
    /// IPv6), memory, build time, updates applied while lookups run, and
    /// the IPv4 forwarding path with the 1M-prefix table. In memory; no
    /// root.
    #[command(after_help = "Examples:\n  \
        bricks bench lpm\n  \
        bricks bench lpm --v4 256000 --v6 50000 --runs 3")]
    Lpm(crate::bench_lpm::LpmArgs),
    /// Forwarding between real interfaces (veths in network namespaces):
    /// bricks against Linux and XDP_REDIRECT, and RouteBricks' batching
    /// (kp, kn) and spreading (per-core, pipeline, serial) choices, with
    /// latency at a low rate. Needs root.
    Io(crate::bench_io::IoArgs),
    /// IPsec ESP tunnel mode: encapsulation and decapsulation in memory on
    /// one core (AES-128-GCM, AES-256-GCM, AES-128-CBC with HMAC-SHA1-96;
    /// 64-byte, 1400-byte and IMIX packets; Mpps, Gbps, ns and
    /// instructions per packet), one SA's sequence counter shared by two
    /// workers, and conf/ipsec-gw.click between veths in network
    /// namespaces against Linux's XFRM (that part needs root and is skipped
    /// without it).
    Ipsec(crate::bench_ipsec::IpsecArgs),
    /// A RouteBricks cluster of bricks routers in network namespaces joined
    /// by veths (conf/cluster/rb4.toml with rates for this machine; needs
    /// root): per-server load relative to the
    /// external rate for uniform and worst-case traffic (2R..3R),
    /// reordering with and without flowlets, failover time when a server
    /// dies, the cluster's throughput against one server's, and CPU time
    /// per packet.
    Cluster(crate::bench_cluster::ClusterArgs),
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

#[derive(clap::Args)]
pub struct CoreArgs {
    /// Workloads to run (all when none is given).
    #[arg(long, value_enum)]
    workload: Vec<Workload>,
    /// Packets per timed run.
    #[arg(long, default_value_t = 5_000_000)]
    packets: u64,
    /// Timed runs per workload; the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Skip counting instructions with callgrind.
    #[arg(long)]
    no_callgrind: bool,
    /// Run one workload once and print nothing (what callgrind runs).
    #[arg(long, hide = true)]
    once: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Workload {
    Minimal,
    Ipv4,
    /// The IPv6 forwarding path with a 200K-prefix table.
    Ipv6,
    Iprouter,
    /// A packet crossing a three-server cluster in one graph: input node
    /// (IPv4 checks, route lookup, Direct VLB, label), intermediate (by
    /// the label alone), output node (label off, reorder check).
    Cluster,
}

impl Workload {
    const ALL: [Workload; 5] = [
        Workload::Minimal,
        Workload::Ipv4,
        Workload::Ipv6,
        Workload::Iprouter,
        Workload::Cluster,
    ];

    fn name(self) -> &'static str {
        match self {
            Workload::Minimal => "minimal",
            Workload::Ipv4 => "ipv4",
            Workload::Ipv6 => "ipv6",
            Workload::Iprouter => "iprouter",
            Workload::Cluster => "cluster",
        }
    }

    /// (ns per packet, instructions per packet) goals from the issues.
    fn goal(self) -> Option<(f64, Option<f64>)> {
        match self {
            Workload::Minimal => Some((10.0, Some(60.0))),
            Workload::Ipv4 => Some((30.0, Some(120.0))),
            Workload::Ipv6 => Some((40.0, Some(150.0))),
            Workload::Iprouter => Some((60.0, None)),
            Workload::Cluster => None,
        }
    }
}

/// A 64-byte Ethernet/IPv4/UDP frame from 18.26.4.99 to 1.0.0.2, TTL 64,
/// valid checksum, as hex for a Click data literal.
const FRAME_HEX: &str = "00 00 C0 3B 71 EF 00 20 6A 12 34 56 08 00 \
    45 00 00 32 00 00 40 00 40 11 23 3D 12 1A 04 63 01 00 00 02 \
    04 00 04 01 00 1E 00 00 \
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00";

/// The cluster of the `cluster` workload: three servers in a full mesh,
/// R so small that nearly every packet is balanced through n3 (flowlets
/// off), and the benchmark's destination behind n2.
const BENCH_CLUSTER: &str = r#"
name = "bench"
rate = "1kbps"
flowlets = false
[[node]]
name = "n1"
[[node.port]]
iface = "ext0"
address = "10.1.0.1/24"
[[node]]
name = "n2"
[[node.port]]
iface = "ext0"
address = "10.2.0.1/24"
[[node]]
name = "n3"
[[node.port]]
iface = "ext0"
address = "10.3.0.1/24"
[[route]]
prefix = "1.0.0.0/8"
node = "n2"
port = "ext0"
"#;

/// Prefixes in the `ipv6` workload's table.
const V6_ROUTES: usize = 200_000;

/// The `ipv6` workload's table, written once to a file in the temporary
/// directory (the generator is seeded, so every run has the same one),
/// and a destination inside it.
fn ipv6_table() -> anyhow::Result<(std::path::PathBuf, std::net::Ipv6Addr)> {
    let table = bricks_lpm::gen::generate(0, V6_ROUTES, 1);
    let (p, _) = table.v6[table.v6.len() / 2];
    let dst = std::net::Ipv6Addr::from(p.addr | 0x1234);
    let file = std::env::temp_dir().join(format!("bricks-bench-core-v6-{V6_ROUTES}.routes"));
    if !file.exists() {
        let tmp = file.with_extension(format!("{}.tmp", std::process::id()));
        let out = std::fs::File::create(&tmp)?;
        bricks_lpm::source::text::write_text(&table, std::io::BufWriter::new(out))?;
        std::fs::rename(&tmp, &file)?;
    }
    Ok((file, dst))
}

/// A 78-byte Ethernet/IPv6/UDP frame from 2001:db8::99 to `dst`, hop
/// limit 64, 16 bytes of payload, as hex for a Click data literal.
fn ipv6_frame_hex(dst: std::net::Ipv6Addr) -> String {
    let mut f = vec![
        0x00, 0x00, 0xc0, 0x3b, 0x71, 0xef, 0x00, 0x20, 0x6a, 0x12, 0x34, 0x56,
    ];
    f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 24, 17, 64]);
    f.extend_from_slice(
        &"2001:db8::99"
            .parse::<std::net::Ipv6Addr>()
            .unwrap_or(dst)
            .octets(),
    );
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(&[0x04, 0x00, 0x04, 0x01, 0x00, 0x18, 0x00, 0x00]);
    f.extend_from_slice(&[0u8; 16]);
    f.iter().map(|b| format!("{b:02X} ")).collect()
}

fn config(w: Workload, packets: u64) -> anyhow::Result<String> {
    let src = format!("InfiniteSource(DATA \\<{FRAME_HEX}>, LIMIT {packets}, BURST 32, STOP true)");
    Ok(match w {
        Workload::Minimal => {
            format!("{src} -> EtherRewrite(02:00:00:00:00:01, 02:00:00:00:00:02) -> Discard;")
        }
        Workload::Ipv4 => {
            let mut routes: Vec<String> = (0..15).map(|i| format!("10.{i}.0.0/16 0")).collect();
            routes.push("1.0.0.0/8 1".into());
            format!(
                "{src} -> c :: Classifier(12/0800, -) -> Strip(14) -> CheckIPHeader \
                 -> rt :: StaticIPLookup({}) ; rt[0] -> Discard; \
                 rt[1] -> dt :: DecIPTTL -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02) \
                 -> Discard; c[1] -> Discard; dt[1] -> Discard;",
                routes.join(", ")
            )
        }
        Workload::Cluster => {
            let file = std::env::temp_dir().join("bricks-bench-core-cluster.toml");
            // Best effort: a missing file makes VLBNode say so.
            let _ = std::fs::write(&file, BENCH_CLUSTER);
            format!(
                "{src} -> Strip(14) -> CheckIPHeader -> GetIPAddress(16) -> [0]n1; \
                 n1 :: VLBNode(FILE {f}, NODE n1); n2 :: VLBNode(FILE {f}, NODE n2); \
                 n3 :: VLBNode(FILE {f}, NODE n3); Idle -> [0]n2; Idle -> [0]n3; \
                 n1[0] -> [1]n2; n1[1] -> [1]n3; n2[0] -> [1]n1; n2[1] -> [2]n3; \
                 n3[0] -> [2]n1; n3[1] -> [2]n2; \
                 n1[2] -> Discard; n1[3] -> Discard; n3[2] -> Discard; n3[3] -> Discard; \
                 n2[2] -> delivered :: Discard; n2[3] -> Discard;",
                f = file.display()
            )
        }
        Workload::Iprouter => include_str!("../../../conf/ip-router.click")
            .replace("FromDevice(eth0)", &src)
            .replace("FromDevice(eth1)", "Idle")
            .replace("ToDevice(eth0)", "Discard")
            .replace("ToDevice(eth1)", "Discard")
            .replace("toh :: ToHost", "toh :: Discard"),
        Workload::Ipv6 => {
            let (file, dst) = ipv6_table()?;
            let src = format!(
                "InfiniteSource(DATA \\<{}>, LIMIT {packets}, BURST 32, STOP true)",
                ipv6_frame_hex(dst)
            );
            // The generated routes use outputs 0-7.
            let outs: String = (0..8).map(|o| format!("rt[{o}] -> dt; ")).collect();
            format!(
                "{src} -> c :: Classifier(12/86dd, -) -> Strip(14) -> CheckIP6Header \
                 -> rt :: LookupIP6Route(ROUTES {}); {outs} \
                 dt :: DecIP6HLIM -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) \
                 -> Discard; c[1] -> Discard; dt[1] -> Discard;",
                file.display()
            )
        }
    })
}

pub(crate) fn engine_for(name: &str, text: String) -> anyhow::Result<Engine> {
    let source = Source {
        name: name.to_string(),
        text,
    };
    let plan = crate::plan(source, &Default::default()).map_err(anyhow::Error::msg)?;
    let mut e = Engine::new(&plan).map_err(|d| anyhow::anyhow!("{}", d.message))?;
    e.idle_sleep = false;
    Ok(e)
}

fn engine(w: Workload, packets: u64) -> anyhow::Result<Engine> {
    let e = engine_for(&format!("<bench {}>", w.name()), config(w, packets)?)?;
    if w == Workload::Iprouter {
        // The next hop behind eth1 is already resolved, as on a router
        // that has been forwarding for a while.
        e.write_handler("arpq1", "insert", "1.0.0.2 00:00:C0:00:00:02")
            .map_err(anyhow::Error::msg)?;
    }
    Ok(e)
}

/// Runs `w` once; returns seconds and the packets that reached a sink.
fn run_once(w: Workload, packets: u64) -> anyhow::Result<f64> {
    let mut e = engine(w, packets)?;
    let t = Instant::now();
    let s = e.run();
    let secs = t.elapsed().as_secs_f64();
    if !s.errors.is_empty() {
        bail!("{}", s.errors.join("\n"));
    }
    Ok(secs)
}

fn callgrind_instructions(w: Workload, packets: u64) -> anyhow::Result<u64> {
    let exe = std::env::current_exe()?;
    let out = std::env::temp_dir().join(format!(
        "bricks-callgrind-{}-{}-{packets}.out",
        std::process::id(),
        w.name()
    ));
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(&exe)
        .args(["bench", "core", "--once", "--workload", w.name()])
        .arg("--packets")
        .arg(packets.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("running valgrind")?;
    if !status.success() {
        bail!("valgrind exited with {status}");
    }
    let text = std::fs::read_to_string(&out)?;
    let _ = std::fs::remove_file(&out);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .context("no instruction total in callgrind's output")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

pub fn bench(cmd: BenchCommand) -> anyhow::Result<ExitCode> {
    let a = match cmd {
        BenchCommand::Core(a) => a,
        BenchCommand::Lpm(a) => return crate::bench_lpm::bench(a),
        BenchCommand::Io(a) => return crate::bench_io::bench(a),
        BenchCommand::Ipsec(a) => return crate::bench_ipsec::bench(a),
        BenchCommand::Cluster(a) => return crate::bench_cluster::bench(a),
        BenchCommand::Vr(a) => {
            let all_ran = bricks_experiments::vr::bench(&a)?;
            return Ok(if all_ran {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
        BenchCommand::Multistage(a) => {
            let all_ran = bricks_experiments::multistage::bench(&a)?;
            return Ok(if all_ran {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
        BenchCommand::Routes(a) => {
            let all_ran = bricks_experiments::routes::bench(&a)?;
            return Ok(if all_ran {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
        BenchCommand::Qos(a) => {
            let all_ran = bricks_experiments::qos::bench(&a)?;
            return Ok(if all_ran {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            });
        }
    };
    let workloads = if a.workload.is_empty() {
        Workload::ALL.to_vec()
    } else {
        a.workload.clone()
    };
    if a.once {
        for w in workloads {
            run_once(w, a.packets)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let callgrind = !a.no_callgrind
        && Command::new("valgrind")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    println!(
        "bricks bench core: {} packets of 64 bytes per run, median of {} runs, one core",
        a.packets, a.runs
    );
    println!(
        "{:<10} {:>10} {:>10} {:>12}   goal",
        "workload", "Mpps", "ns/packet", "instr/packet"
    );
    for w in workloads {
        // One unmeasured run warms the pool and the caches.
        run_once(w, a.packets.min(100_000))?;
        let mut ns = Vec::with_capacity(a.runs);
        for _ in 0..a.runs.max(1) {
            let secs = run_once(w, a.packets)?;
            ns.push(secs * 1e9 / a.packets as f64);
        }
        let ns = median(ns);
        let instr = if callgrind {
            let small = 10_000;
            let big = 210_000;
            let i1 = callgrind_instructions(w, small)?;
            let i2 = callgrind_instructions(w, big)?;
            Some(i2.saturating_sub(i1) as f64 / (big - small) as f64)
        } else {
            None
        };
        let goal = match w.goal() {
            Some((goal_ns, Some(i))) => format!("<= {goal_ns} ns, <= {i} instr"),
            Some((goal_ns, None)) => format!("<= {goal_ns} ns"),
            None => "three servers' work per packet (RouteBricks: 2 or 3 handlings)".into(),
        };
        println!(
            "{:<10} {:>10.2} {:>10.1} {:>12}   {goal}",
            w.name(),
            1e3 / ns,
            ns,
            instr.map_or("-".to_string(), |i| format!("{i:.0}")),
        );
    }
    if !callgrind && !a.no_callgrind {
        println!(
            "(valgrind not found: instructions per packet not counted; apt-get install valgrind)"
        );
    }
    Ok(ExitCode::SUCCESS)
}
