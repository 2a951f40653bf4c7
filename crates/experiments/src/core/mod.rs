//! `bricks bench core`: the packet path measured in memory.
//!
//! Each workload is a configuration whose source makes N packets and whose
//! sink drops them, run to completion on one core. Time per packet comes
//! from the median of several runs; instructions per packet come from
//! callgrind, which is repeatable on a noisy machine: two runs with
//! different packet counts, and the difference divided by the difference
//! in packets, so that start-up and tear-down cancel out.
//!
//! With `--click PATH`, Click's userlevel driver runs the same workloads
//! ([`click`]) in the same run, its timed runs interleaved with bricks'
//! so that both see the same load, and its figures and the ratios (Click
//! / bricks) are printed beside bricks'.

mod click;

use crate::measure::{callgrind_command, engine_for, valgrind_available, Sample};
use crate::Error;
use bricks_runtime::Engine;
use clap::ValueEnum;
use std::process::ExitCode;
use std::time::Instant;

/// `bricks bench core` options.
#[derive(clap::Args)]
pub struct CoreArgs {
    /// Workloads to run (all when none is given).
    #[arg(long, value_enum)]
    pub workload: Vec<Workload>,
    /// Packets per timed run.
    #[arg(long, default_value_t = 5_000_000)]
    pub packets: u64,
    /// Timed runs per workload; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Skip counting instructions with callgrind.
    #[arg(long)]
    pub no_callgrind: bool,
    /// Run one workload once and print nothing (what callgrind runs).
    #[arg(long, hide = true)]
    pub once: bool,
    /// Also run Click's userlevel driver (the `click` binary at PATH) on
    /// minimal, nulls, ipv4 and iprouter, and print its ns and
    /// instructions per packet beside bricks' with the ratios (Click /
    /// bricks), and Click's per-element overhead under bricks' when both
    /// minimal and nulls ran; the other workloads print `-` for Click,
    /// with the reason.
    ///
    /// Click runs as `click -h SINK.count FILE` (never `-q`, which skips
    /// the driver), timed as a whole process: its ns/packet is (T(N) -
    /// T(N/10)) / (0.9 N) with N = --packets, which cancels its start-up,
    /// the median of --runs pairs, each run after bricks' run of the same
    /// workload. Its instructions/packet are callgrind's whole-program
    /// counts, (I(210,000) - I(10,000)) / 200,000. Every run's sink count
    /// must equal the packets sent, or the bench stops with an error
    /// naming the workload.
    ///
    /// Click's configurations are bricks' with these differences. minimal
    /// and nulls: `StoreData(0, \<02 00 00 00 00 02 02 00 00 00 00 01>)` (the same
    /// 12-byte rewrite) in place of EtherRewrite, which writes where the
    /// packet's MAC header annotation points and crashes on the packets of
    /// an InfiniteSource, which sets none. iprouter: conf/ip-router.click
    /// with FromDevice(eth0) replaced by the source, named `src` and with
    /// `ACTIVE false`, FromDevice(eth1) by Idle, ToDevice(ethN) by
    /// `Discard(BURST 32)` (Click's Discard pulls one packet per task run
    /// by default; bricks' ToDevice and Discard pull batches), `toh ::
    /// ToHost` by `toh :: Discard`, `, MARTIANS true` removed (a bricks
    /// keyword), and `Script(write arpq1.insert 1.0.0.2
    /// 00:00:C0:00:00:02, write src.active true);` appended (bricks' bench
    /// inserts that ARP entry through a handler before it runs). minimal,
    /// nulls and ipv4: the forwarding path's Discard is named `sink`. Click's
    /// InfiniteSource takes the same `DATA \<hex>, LIMIT N, BURST 32, STOP
    /// true`.
    #[arg(long, value_name = "PATH")]
    pub click: Option<std::path::PathBuf>,
}

/// A `bricks bench core` workload.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum Workload {
    Minimal,
    /// The minimal path with 8 Null elements between the source and
    /// EtherRewrite: what an element that does no work costs when its
    /// whole batch leaves by one output. Printed under the table as
    /// (nulls - minimal) / 8 per packet when minimal ran too.
    Nulls,
    Ipv4,
    /// The IPv6 forwarding path with a 200K-prefix table.
    Ipv6,
    /// The same path with 4,096 flows to random destinations inside the
    /// table's prefixes, from a WorkloadSource that builds every frame.
    Ipv6Flows,
    Iprouter,
    /// A packet crossing a three-server cluster in one graph: input node
    /// (IPv4 checks, route lookup, Direct VLB, label), intermediate (by
    /// the label alone), output node (label off, reorder check).
    Cluster,
}

impl Workload {
    const ALL: [Workload; 7] = [
        Workload::Minimal,
        Workload::Nulls,
        Workload::Ipv4,
        Workload::Ipv6,
        Workload::Ipv6Flows,
        Workload::Iprouter,
        Workload::Cluster,
    ];

    fn name(self) -> &'static str {
        match self {
            Workload::Minimal => "minimal",
            Workload::Nulls => "nulls",
            Workload::Ipv4 => "ipv4",
            Workload::Ipv6 => "ipv6",
            Workload::Ipv6Flows => "ipv6-flows",
            Workload::Iprouter => "iprouter",
            Workload::Cluster => "cluster",
        }
    }

    /// The goal column: the issues' goals for the workload, or what its
    /// figures are for.
    fn goal_text(self) -> String {
        match self {
            Workload::Minimal => "<= 10 ns, <= 60 instr".into(),
            Workload::Ipv4 => "<= 30 ns, <= 120 instr".into(),
            Workload::Ipv6 => "<= 40 ns, <= 150 instr".into(),
            Workload::Ipv6Flows => {
                "ipv6 with 4,096 random flows; the source builds each frame".into()
            }
            Workload::Iprouter => "<= 60 ns".into(),
            // Its own figures include minimal's path; the goal is on the
            // difference.
            Workload::Nulls => format!(
                "{NULLS} Null elements: per-element overhead <= {NULL_GOAL_INSTR} instr (below)"
            ),
            Workload::Cluster => {
                "three servers' work per packet (RouteBricks: 2 or 3 handlings)".into()
            }
        }
    }
}

/// Null elements the `nulls` workload inserts into `minimal`'s path.
const NULLS: usize = 8;

/// Instructions per packet an element that does no work may cost, as
/// (nulls - minimal) / [`NULLS`].
const NULL_GOAL_INSTR: f64 = 5.0;

/// Packets of the smaller of the two callgrind runs whose difference is
/// counted (bricks' and Click's).
const CALLGRIND_SMALL: u64 = 10_000;
/// Packets of the larger callgrind run.
const CALLGRIND_BIG: u64 = 210_000;

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

/// Flows of the `ipv6-flows` workload.
const V6_FLOWS: usize = 4096;

/// The `ipv6` workload's table, written once to a file in the temporary
/// directory (the generator is seeded, so every run has the same one),
/// and a destination inside it.
fn ipv6_table() -> Result<(std::path::PathBuf, std::net::Ipv6Addr), Error> {
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

fn config(w: Workload, packets: u64) -> Result<String, Error> {
    let src = format!("InfiniteSource(DATA \\<{FRAME_HEX}>, LIMIT {packets}, BURST 32, STOP true)");
    Ok(match w {
        Workload::Minimal => {
            format!("{src} -> EtherRewrite(02:00:00:00:00:01, 02:00:00:00:00:02) -> Discard;")
        }
        Workload::Nulls => format!(
            "{src} -> {}EtherRewrite(02:00:00:00:00:01, 02:00:00:00:00:02) -> Discard;",
            "Null -> ".repeat(NULLS)
        ),
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
        Workload::Iprouter => include_str!("../../../../conf/ip-router.click")
            .replace("FromDevice(eth0)", &src)
            .replace("FromDevice(eth1)", "Idle")
            .replace("ToDevice(eth0)", "Discard")
            .replace("ToDevice(eth1)", "Discard")
            .replace("toh :: ToHost", "toh :: Discard"),
        Workload::Ipv6 | Workload::Ipv6Flows => {
            let (file, dst) = ipv6_table()?;
            let src = if w == Workload::Ipv6 {
                format!(
                    "InfiniteSource(DATA \\<{}>, LIMIT {packets}, BURST 32, STOP true)",
                    ipv6_frame_hex(dst)
                )
            } else {
                format!(
                    "WorkloadSource(IPV6 true, ROUTES {}, FLOWS {V6_FLOWS}, SIZE 78, \
                     LIMIT {packets}, BURST 32, STOP true)",
                    file.display()
                )
            };
            // The generated routes use outputs 0-7.
            let outs: String = (0..8).map(|o| format!("rt[{o}] -> dt; ")).collect();
            format!(
                "{src} -> c :: Classifier(12/86dd, -) -> Strip(14) -> CheckIP6Header \
                 -> rt :: LookupIP6Route(ROUTES {}); {outs} \
                 dt :: DecIP6HLIM -> EtherEncap(0x86dd, 02:00:00:00:00:01, 02:00:00:00:00:02) \
                 -> sink :: Discard; c[1] -> Discard; dt[1] -> Discard;",
                file.display()
            )
        }
    })
}

fn engine(w: Workload, packets: u64) -> Result<Engine, Error> {
    let mut e = engine_for(&format!("<bench {}>", w.name()), config(w, packets)?)?;
    if w == Workload::Iprouter {
        // The next hop behind eth1 is already resolved, as on a router
        // that has been forwarding for a while.
        e.write_handler("arpq1", "insert", "1.0.0.2 00:00:C0:00:00:02 static")
            .map_err(|message| Error::Run {
                workload: w.name().into(),
                message: format!("arpq1.insert: {message}"),
            })?;
    }
    Ok(e)
}

/// Runs `w` once; returns seconds and the packets that reached a sink.
fn run_once(w: Workload, packets: u64) -> Result<f64, Error> {
    let mut e = engine(w, packets)?;
    let t = Instant::now();
    let s = e.run();
    let secs = t.elapsed().as_secs_f64();
    if !s.errors.is_empty() {
        return Err(Error::Run {
            workload: w.name().into(),
            message: s.errors.join("\n"),
        });
    }
    Ok(secs)
}

fn callgrind_instructions(w: Workload, packets: u64) -> Result<u64, Error> {
    let exe = std::env::current_exe()?;
    let args = [
        "bench",
        "core",
        "--once",
        "--workload",
        w.name(),
        "--packets",
    ];
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    args.push(packets.to_string());
    callgrind_command(&exe, &args).map(|(instructions, _)| instructions)
}

/// `v` with `digits` decimals, or `-`.
fn figure(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// `click / bricks` as `12.34x`, or `-` when either is missing.
fn ratio(click: Option<f64>, bricks: Option<f64>) -> String {
    match (click, bricks) {
        (Some(c), Some(b)) if b > 0.0 => format!("{:.2}x", c / b),
        _ => "-".into(),
    }
}

/// One workload's figures from one run of the bench: median ns per
/// packet, and instructions per packet when callgrind counted them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Figures {
    ns: Option<f64>,
    instr: Option<f64>,
}

/// Each workload's figures as measured: bricks', and Click's when it ran
/// the workload.
type Measured = Vec<(Workload, Figures, Option<Figures>)>;

/// The lines printed under the table when nulls ran: the per-element
/// overhead, (nulls - minimal) / [`NULLS`] per packet, bricks' and then
/// Click's, from figures of the same run; a figure either side lacks is
/// `-`. Without minimal there is nothing to subtract, and the line says
/// so.
fn overhead_lines(measured: &Measured) -> Vec<String> {
    let find = |w: Workload| measured.iter().find(|m| m.0 == w);
    let (minimal, nulls) = match (find(Workload::Minimal), find(Workload::Nulls)) {
        (Some(m), Some(n)) => (m, n),
        (None, Some(_)) => {
            return vec![format!(
                "per-element overhead: not computed (it is (nulls - minimal) / {NULLS}: \
                 run minimal with nulls)"
            )]
        }
        _ => return Vec::new(),
    };
    let per_element = |m: Option<f64>, n: Option<f64>| Some((n? - m?) / NULLS as f64);
    let line = |who: &str, m: Figures, n: Figures| {
        format!(
            "{who}per-element overhead (nulls - minimal) / {NULLS}: {} instructions a packet, \
             {} ns a packet",
            figure(per_element(m.instr, n.instr), 1),
            figure(per_element(m.ns, n.ns), 2),
        )
    };
    let mut lines = vec![format!(
        "{} (goal: <= {NULL_GOAL_INSTR} instructions)",
        line("", minimal.1, nulls.1)
    )];
    if let (Some(m), Some(n)) = (minimal.2, nulls.2) {
        lines.push(line("Click ", m, n));
    }
    lines
}

/// Runs `bricks bench core`.
pub fn bench(a: &CoreArgs) -> Result<ExitCode, Error> {
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
    let callgrind = !a.no_callgrind && valgrind_available();
    let click = match &a.click {
        Some(path) if a.packets < 10 => {
            return Err(Error::Argument(format!(
                "--click {}: --packets must be at least 10 (Click's time is the \
                 difference between runs of N and N/10 packets)",
                path.display()
            )))
        }
        Some(path) => Some(click::Click::new(path)?),
        None => None,
    };
    println!(
        "bricks bench core: {} packets of 64 bytes per run, median of {} runs, one core",
        a.packets, a.runs
    );
    if let (Some(c), Some(path)) = (&click, &a.click) {
        println!(
            "Click: {} ({}), whole `click FILE` runs interleaved with bricks': ns/packet \
             (T({}) - T({})) / {}, instructions/packet (I({CALLGRIND_BIG}) - \
             I({CALLGRIND_SMALL})) / {}; ratios are Click / bricks",
            path.display(),
            c.version,
            a.packets,
            a.packets / 10,
            a.packets - a.packets / 10,
            CALLGRIND_BIG - CALLGRIND_SMALL
        );
        println!(
            "{:<10} {:>10} {:>10} {:>12} {:>15} {:>18} {:>8} {:>11}   goal",
            "workload",
            "Mpps",
            "ns/packet",
            "instr/packet",
            "Click ns/packet",
            "Click instr/packet",
            "ns ratio",
            "instr ratio"
        );
    } else {
        println!(
            "{:<10} {:>10} {:>10} {:>12}   goal",
            "workload", "Mpps", "ns/packet", "instr/packet"
        );
    }
    let mut footnotes = Vec::new();
    let mut measured = Measured::new();
    for w in workloads {
        let peer = match &click {
            Some(c) => match click::unsupported(w) {
                None => Some(click::ClickRuns::new(c, w, a.packets)?),
                Some(why) => {
                    footnotes.push(format!("Click -: {}: {why}", w.name()));
                    None
                }
            },
            None => None,
        };
        // One unmeasured run warms the pool and the caches.
        run_once(w, a.packets.min(100_000))?;
        if let Some(p) = &peer {
            p.warm_up()?;
        }
        let mut ns = Vec::with_capacity(a.runs);
        let mut click_ns = Vec::with_capacity(a.runs);
        for _ in 0..a.runs.max(1) {
            let secs = run_once(w, a.packets)?;
            ns.push(secs * 1e9 / a.packets as f64);
            if let Some(p) = &peer {
                click_ns.push(p.time_ns()?);
            }
        }
        let ns = Sample(ns).median();
        let instr = if callgrind {
            let i1 = callgrind_instructions(w, CALLGRIND_SMALL)?;
            let i2 = callgrind_instructions(w, CALLGRIND_BIG)?;
            Some(i2.saturating_sub(i1) as f64 / (CALLGRIND_BIG - CALLGRIND_SMALL) as f64)
        } else {
            None
        };
        let goal = w.goal_text();
        let bricks = format!(
            "{:<10} {:>10.2} {:>10.1} {:>12}",
            w.name(),
            1e3 / ns,
            ns,
            instr.map_or("-".to_string(), |i| format!("{i:.0}")),
        );
        let figures = Figures {
            ns: Some(ns),
            instr,
        };
        if click.is_none() {
            println!("{bricks}   {goal}");
            measured.push((w, figures, None));
            continue;
        }
        let peer_figures = match &peer {
            Some(p) => Some(Figures {
                ns: Some(Sample(click_ns).median()),
                instr: if callgrind {
                    Some(p.instructions()?)
                } else {
                    None
                },
            }),
            None => None,
        };
        let Figures {
            ns: click_ns,
            instr: click_instr,
        } = peer_figures.unwrap_or_default();
        println!(
            "{bricks} {:>15} {:>18} {:>8} {:>11}   {goal}",
            figure(click_ns, 1),
            figure(click_instr, 0),
            ratio(click_ns, Some(ns)),
            ratio(click_instr, instr),
        );
        measured.push((w, figures, peer_figures));
    }
    for f in footnotes {
        println!("{f}");
    }
    for l in overhead_lines(&measured) {
        println!("{l}");
    }
    if !callgrind && !a.no_callgrind {
        println!(
            "(valgrind not found: instructions per packet not counted; apt-get install valgrind)"
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(workload: Vec<Workload>, click: Option<&str>) -> CoreArgs {
        CoreArgs {
            workload,
            packets: 20_000,
            runs: 1,
            no_callgrind: true,
            once: false,
            click: click.map(Into::into),
        }
    }

    #[test]
    fn a_missing_click_stops_the_bench_before_it_runs() {
        let e = bench(&args(vec![Workload::Minimal], Some("/nonexistent/click")))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--click /nonexistent/click: "), "{e}");
        let mut a = args(vec![Workload::Minimal], Some("/nonexistent/click"));
        a.packets = 9;
        let e = bench(&a).unwrap_err().to_string();
        assert!(e.contains("--packets must be at least 10"), "{e}");
    }

    #[test]
    fn ratios_and_missing_figures() {
        assert_eq!(ratio(Some(59.0), Some(5.0)), "11.80x");
        assert_eq!(ratio(None, Some(5.0)), "-");
        assert_eq!(ratio(Some(1.0), None), "-");
        assert_eq!(figure(Some(847.44), 0), "847");
        assert_eq!(figure(None, 1), "-");
    }

    #[test]
    fn nulls_is_minimal_with_eight_nulls_before_the_rewrite() {
        let minimal = config(Workload::Minimal, 1000).unwrap();
        let nulls = config(Workload::Nulls, 1000).unwrap();
        assert_eq!(nulls.matches("Null").count(), 8, "{nulls}");
        assert!(nulls.contains(
            "STOP true) -> Null -> Null -> Null -> Null -> Null -> Null -> Null -> Null \
             -> EtherRewrite("
        ));
        assert_eq!(nulls.replace("Null -> ", ""), minimal);
        assert_eq!(Workload::ALL[..2], [Workload::Minimal, Workload::Nulls]);
    }

    #[test]
    fn goal_column_of_each_workload() {
        assert_eq!(Workload::Minimal.goal_text(), "<= 10 ns, <= 60 instr");
        assert_eq!(Workload::Iprouter.goal_text(), "<= 60 ns");
        assert_eq!(
            Workload::Nulls.goal_text(),
            "8 Null elements: per-element overhead <= 5 instr (below)"
        );
        assert!(Workload::Cluster
            .goal_text()
            .starts_with("three servers' work"));
    }

    #[test]
    fn per_element_overhead_from_minimal_and_nulls() {
        let f = |ns, instr| Figures {
            ns: Some(ns),
            instr,
        };
        // bricks: (92 - 60) / 8 = 4 instructions, (9.0 - 5.0) / 8 = 0.5
        // ns; Click: (1800 - 1000) / 8 = 100, (100 - 60) / 8 = 5 ns.
        let both: Measured = vec![
            (
                Workload::Minimal,
                f(5.0, Some(60.0)),
                Some(f(60.0, Some(1000.0))),
            ),
            (
                Workload::Ipv4,
                f(20.0, Some(100.0)),
                Some(f(90.0, Some(2000.0))),
            ),
            (
                Workload::Nulls,
                f(9.0, Some(92.0)),
                Some(f(100.0, Some(1800.0))),
            ),
        ];
        assert_eq!(
            overhead_lines(&both),
            [
                "per-element overhead (nulls - minimal) / 8: 4.0 instructions a packet, \
                 0.50 ns a packet (goal: <= 5 instructions)",
                "Click per-element overhead (nulls - minimal) / 8: 100.0 instructions a \
                 packet, 5.00 ns a packet",
            ]
        );
        // Without callgrind, and without Click.
        let plain: Measured = vec![
            (Workload::Nulls, f(9.0, None), None),
            (Workload::Minimal, f(5.0, None), None),
        ];
        assert_eq!(
            overhead_lines(&plain),
            [
                "per-element overhead (nulls - minimal) / 8: - instructions a packet, \
                 0.50 ns a packet (goal: <= 5 instructions)"
            ]
        );
        // Nothing to subtract from, or nothing to subtract.
        let alone: Measured = vec![(Workload::Nulls, f(9.0, None), None)];
        assert!(overhead_lines(&alone)[0].contains("not computed"));
        let neither: Measured = vec![(Workload::Minimal, f(5.0, None), None)];
        assert!(overhead_lines(&neither).is_empty());
    }

    /// Both IPv6 workloads forward every packet: each destination has a
    /// route, and nothing is refused on the way.
    #[test]
    fn ipv6_workloads_forward_every_packet() {
        for w in [Workload::Ipv6, Workload::Ipv6Flows] {
            let mut e = engine(w, 3000).unwrap();
            let s = e.run();
            assert!(s.errors.is_empty(), "{:?}", s.errors);
            let read = |el: &str, h: &str| e.read_handler(el, h).unwrap().into_text();
            assert_eq!(read("sink", "count"), "3000", "{}", w.name());
            assert_eq!(read("rt", "no_route"), "0", "{}", w.name());
        }
    }

    #[test]
    fn bench_minimal_and_nulls() {
        let a = args(vec![Workload::Minimal, Workload::Nulls], None);
        assert_eq!(bench(&a).unwrap(), ExitCode::SUCCESS);
    }

    /// `bench core --click` end to end, with the driver BRICKS_TEST_CLICK
    /// names; skipped without it. A workload Click has no form of prints
    /// `-` and its reason.
    #[test]
    fn bench_with_click_peer() {
        let Some(path) = click::test_driver() else {
            return;
        };
        let a = args(
            vec![
                Workload::Minimal,
                Workload::Nulls,
                Workload::Iprouter,
                Workload::Cluster,
            ],
            Some(&path),
        );
        assert_eq!(bench(&a).unwrap(), ExitCode::SUCCESS);
    }
}
