//! `bricks bench cluster`: the RB4 experiments of RouteBricks §6.2 on one
//! machine.
//!
//! A copy of conf/cluster/rb4.toml (four servers in a full mesh, one
//! external port each) runs in network namespaces as `bricks cluster up`
//! runs it, with R set for this machine: R is twice the rate each host
//! offers, so that uniform traffic (a host sends a third of its packets
//! to each other host) fits the direct share R/N and a host sending all
//! its packets to one other host exceeds it twice over. Then:
//!
//! * **load**: `bricks gen` in every host, `bricks sink` in the
//!   receivers; each server's packets handled (from outside + transit +
//!   delivered, from its `VLBNode` counters) relative to the external
//!   input rate R. Direct VLB promises 2R for uniform traffic (§3.2) and
//!   at most 3R in the worst case (here: a permutation, every host
//!   sending R to the next one: 2.75R expected with N = 4 when decided
//!   per packet; with flowlets, flows that started within R/N stay direct);
//! * **reordering** (§6.2's metric, measured by `bricks sink`): one host
//!   sends flows (16 fast ones, then 256 slower ones), together twice
//!   R/N, to another, so load balancing kicks in, with flowlets on and off
//!   (`write vlb.flowlets`);
//! * **failover**: a stream of numbered datagrams from one host to
//!   another; the intermediate server that carries most of its balanced
//!   share is killed (SIGKILL) mid-stream; the figure is the longest time
//!   a flow goes without packets (hellos every 50 ms, 3 missed = down:
//!   the goal is 200 ms);
//! * **latency**: one host to another at 1,000 packets per second, far
//!   below R/N, so that every packet goes input server -> output server
//!   (RouteBricks' two hops): the one-way latency `bricks sink` reads
//!   from the probes `bricks gen` stamps, beside one server alone and the
//!   paper's own estimate ([`super::paper::LatencyEstimate`]);
//! * **scaling**: the packets per second the four-server cluster delivers
//!   with every host sending as fast as it can, against one server
//!   forwarding between two hosts the same way;
//! * **CPU per packet**: each server's user + system time
//!   (`/proc/PID/stat`) over the packets it handled, during the uniform
//!   runs (idle time, measured first, taken out).
//!
//! Every process shares the machine's CPUs: on a small machine the
//! absolute rates say more about the machine than about the cluster; the
//! ratios (load, reordering, gaps) are the figures to read.

use crate::cluster::state::{self, State};
use crate::cluster::status::{self, Counters};
use crate::cluster::up::{self, StopSignal, UpArgs};
use crate::io::{last_json, median, Machine};
use crate::StopOnSignals;
use crate::{Context as _, Error};
use bricks_netns::Captured;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `bricks bench cluster` options.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    sudo bricks bench cluster\n  \
    sudo bricks bench cluster --quick\n  \
    sudo bricks bench cluster --only load,failover --runs 5 --json")]
pub struct ClusterArgs {
    /// A short run (under a minute): one run of each measurement, 1 s of
    /// traffic each.
    #[arg(long)]
    pub quick: bool,
    /// Seconds of traffic in each run [default: 3, 1 with --quick].
    #[arg(long, value_name = "SECONDS")]
    pub seconds: Option<f64>,
    /// Runs of each measurement; medians are reported [default: 3, 1
    /// with --quick].
    #[arg(long)]
    pub runs: Option<usize>,
    /// Packets per second each host offers in the paced measurements.
    #[arg(long, default_value_t = 20_000, value_name = "PPS")]
    pub rate: u64,
    /// Measure only these (comma-separated): latency, load, reorder,
    /// failover, scale.
    #[arg(long, value_delimiter = ',', value_name = "WHAT,...")]
    pub only: Vec<String>,
    /// The cluster file to copy [default: conf/cluster/rb4.toml].
    #[arg(long, value_name = "FILE")]
    pub cluster: Option<PathBuf>,
    /// Device backend of the servers.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Exit status when the bench cannot run here.
const CANNOT_RUN: u8 = 2;

const WHAT: [&str; 5] = ["latency", "load", "reorder", "failover", "scale"];

/// The load runs' traffic patterns, as the table and the rows name them.
pub(crate) const UNIFORM: &str = "uniform (every host to every other)";
pub(crate) const WORST_FLOWLETS: &str =
    "worst case (a permutation at R: host i to host i + 1), flowlets";
pub(crate) const WORST_PER_PACKET: &str =
    "worst case (the same permutation), per-packet Direct VLB";

/// Flows of the failover runs: enough that some start while the direct
/// share is used up, so that intermediates carry some of them.
const FAILOVER_FLOWS: u32 = 256;

/// Flow counts of the reordering runs: a few fast flows (gaps shorter than
/// the paths' delay difference) and many slower ones, as on a link.
const REORDER_FLOWS: [u32; 2] = [16, 256];

/// Frame size of the paced traffic.
const FRAME: u64 = 64;

/// Bytes the cluster adds to a frame on internal links (label + shim),
/// counted when choosing R so the direct share is what the bench means.
const LABEL: u64 = 26;

/// How long a sink gets to open its device before the senders start.
const SINK_START: Duration = Duration::from_millis(700);

/// Niceness of generators and sinks: as the servers' (`cluster up`'s
/// default), except the flat-out senders of the scaling runs, which run
/// below the servers so that they cannot starve them.
const NICE: &str = "5";
const NICE_FLOOD: &str = "15";

/// A cluster that is taken down when dropped.
struct Running {
    st: State,
}

impl Drop for Running {
    fn drop(&mut self) {
        up::teardown(&self.st);
    }
}

/// Where the bench finds rb4.toml: the given file, the repository's.
fn cluster_file(given: Option<&Path>) -> Result<PathBuf, Error> {
    if let Some(p) = given {
        if !p.exists() {
            return Err(Error::Argument(format!("{}: no such file", p.display())));
        }
        return Ok(p.to_path_buf());
    }
    for base in [
        PathBuf::from("."),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."),
    ] {
        let p = base.join("conf/cluster/rb4.toml");
        if p.exists() {
            return Ok(p);
        }
    }
    Err(Error::Argument(
        "conf/cluster/rb4.toml not found: run from the repository, or give --cluster FILE".into(),
    ))
}

/// `text` (a cluster file) with its external rate set to `bps`: the
/// top-level `rate` key is replaced (added when missing).
pub fn with_rate(text: &str, bps: u64) -> String {
    let mut out = String::new();
    let mut done = false;
    let mut top = true;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            if top && !done {
                let _ = writeln!(out, "rate = \"{bps}bps\"");
                done = true;
            }
            top = false;
        }
        let key = t.split('=').next().unwrap_or("").trim();
        if top && !done && key == "rate" {
            let _ = writeln!(out, "rate = \"{bps}bps\"");
            done = true;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !done {
        let _ = writeln!(out, "rate = \"{bps}bps\"");
    }
    out
}

/// Runs `argv` in namespace `ns` at niceness `nice`, output captured.
fn spawn(ns: &str, nice: &str, argv: &[&str]) -> Result<Captured, Error> {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "nice", "-n", nice]).args(argv);
    Captured::spawn(&mut c).map_err(Error::from)
}

/// Waits for a captured process and returns its last JSON line.
fn report(c: Captured, timeout: Duration, stop: &AtomicBool, who: &str) -> Result<Value, Error> {
    let out = c.wait(timeout, Some(stop)).map_err(Error::from)?;
    let text = String::from_utf8_lossy(&out.stdout);
    last_json(&text).ok_or_else(|| {
        Error::Process(format!(
            "{who} printed no report ({}): {} {}",
            out.status,
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    })
}

/// Every server's counters and CPU seconds at one moment.
struct Snapshot {
    at: Instant,
    counters: Vec<Option<Counters>>,
    cpu: Vec<Option<f64>>,
}

fn snapshot(st: &State) -> Snapshot {
    Snapshot {
        at: Instant::now(),
        counters: status::sample(st),
        cpu: st
            .nodes
            .iter()
            .map(|n| n.process.and_then(|(p, _)| state::cpu_seconds(p)))
            .collect(),
    }
}

/// What the servers did between two snapshots.
#[derive(Debug, Clone, Default)]
struct Work {
    secs: f64,
    /// Per server: (from outside, forwarded, delivered, direct, balanced).
    packets: Vec<[u64; 5]>,
    /// Per server: CPU seconds.
    cpu: Vec<f64>,
}

impl Work {
    fn between(a: &Snapshot, b: &Snapshot) -> Work {
        let mut w = Work {
            secs: (b.at - a.at).as_secs_f64(),
            ..Default::default()
        };
        for i in 0..a.counters.len() {
            let d = |k: &str| match (&a.counters[i], &b.counters[i]) {
                (Some(x), Some(y)) => y.get(k).saturating_sub(x.get(k)),
                _ => 0,
            };
            let input = d("direct") + d("balanced") + d("local");
            w.packets.push([
                input,
                d("forwarded"),
                d("delivered"),
                d("direct"),
                d("balanced"),
            ]);
            w.cpu.push(match (a.cpu[i], b.cpu[i]) {
                (Some(x), Some(y)) => (y - x).max(0.0),
                _ => 0.0,
            });
        }
        w
    }

    fn handled(&self, i: usize) -> u64 {
        self.packets[i][0] + self.packets[i][1] + self.packets[i][2]
    }

    /// R in packets: the mean input of the servers that had any.
    fn r(&self) -> f64 {
        let inputs: Vec<u64> = self.packets.iter().map(|p| p[0]).collect();
        // Servers with traffic from outside; a stray packet does not make
        // a server an input.
        let busiest = inputs.iter().copied().max().unwrap_or(0);
        let inputs: Vec<u64> = inputs
            .into_iter()
            .filter(|&x| x > 0 && x * 20 >= busiest)
            .collect();
        if inputs.is_empty() {
            return 0.0;
        }
        inputs.iter().sum::<u64>() as f64 / inputs.len() as f64
    }

    fn loads(&self) -> Vec<f64> {
        let r = self.r();
        (0..self.packets.len())
            .map(|i| {
                if r > 0.0 {
                    self.handled(i) as f64 / r
                } else {
                    f64::NAN
                }
            })
            .collect()
    }
}

/// The bench's context.
struct Bench<'a> {
    exe: String,
    st: &'a mut State,
    stop: &'a AtomicBool,
    secs: f64,
    rate: u64,
    /// CPU seconds per second each server burns idle.
    idle_cpu: Vec<f64>,
}

/// One run of paced traffic: what was sent and received, and the work.
struct Traffic {
    sent: u64,
    received: u64,
    reordered: u64,
    probes: u64,
    /// The longest time without packets at any sink: of a whole stream,
    /// and of any one flow (ms).
    max_gap_ms: f64,
    max_flow_gap_ms: f64,
    /// One-way latency of the probes at the sink that timed the most:
    /// (p50, p99) in microseconds, and how many probes were timed.
    latency_us: Option<(f64, f64, u64)>,
    work: Work,
}

/// Paced traffic under way: its sinks and generators.
struct Streams {
    sinks: Vec<Captured>,
    gens: Vec<Captured>,
    before: Snapshot,
    limit: Duration,
}

impl Bench<'_> {
    fn ns_of_host(&self, h: usize) -> String {
        self.st.hosts[h].namespace.clone()
    }

    /// Each `(from, to-list, rate)` sends 64-byte frames for `secs`
    /// seconds (`rate` None: as fast as it can); sinks run in every host
    /// that receives.
    fn traffic(
        &self,
        flows: &[(usize, Vec<usize>, Option<u64>)],
        nflows: u32,
    ) -> Result<Traffic, Error> {
        let s = self.start(flows, nflows, self.secs, false)?;
        self.finish(s)
    }

    /// Starts [`Bench::traffic`] for `secs` seconds; `round_robin`: each
    /// generator takes its flows in turn (evenly spaced packets per flow).
    fn start(
        &self,
        flows: &[(usize, Vec<usize>, Option<u64>)],
        nflows: u32,
        secs: f64,
        round_robin: bool,
    ) -> Result<Streams, Error> {
        let mut receivers: Vec<usize> = flows.iter().flat_map(|f| f.1.clone()).collect();
        receivers.sort_unstable();
        receivers.dedup();
        let sink_secs = format!("{}", secs + 1.5);
        let mut sinks = Vec::new();
        for &h in &receivers {
            let host = &self.st.hosts[h];
            sinks.push(spawn(
                &host.namespace,
                NICE,
                &[
                    &self.exe,
                    "sink",
                    &host.iface,
                    "--duration",
                    &sink_secs,
                    "--backend",
                    "packet",
                    "--json",
                ],
            )?);
        }
        std::thread::sleep(SINK_START);
        let before = snapshot(self.st);
        let mut gens = Vec::new();
        for (from, to, rate) in flows {
            let host = &self.st.hosts[*from];
            let dst: Vec<&str> = to
                .iter()
                .map(|&t| self.st.hosts[t].address.as_str())
                .collect();
            let dst = dst.join(",");
            let rate_s = rate.map(|r| r.to_string());
            let secs_s = secs.to_string();
            let flows_s = nflows.to_string();
            let mut argv = vec![
                self.exe.as_str(),
                "gen",
                &host.iface,
                "--duration",
                &secs_s,
                "--src",
                &host.address,
                "--dst",
                &dst,
                "--dst-mac",
                &host.gateway_mac,
                "--flows",
                &flows_s,
                "--size",
                "64",
                "--backend",
                "packet",
                "--seed",
                "7",
                "--json",
            ];
            if let Some(r) = &rate_s {
                argv.extend(["--rate", r.as_str()]);
            }
            if round_robin {
                argv.push("--round-robin");
            }
            let nice = if rate.is_some() { NICE } else { NICE_FLOOD };
            gens.push(spawn(&host.namespace, nice, &argv)?);
        }
        Ok(Streams {
            sinks,
            gens,
            before,
            limit: Duration::from_secs_f64(secs + 30.0),
        })
    }

    /// Waits for traffic started by [`Bench::start`] and reads its reports.
    fn finish(&self, s: Streams) -> Result<Traffic, Error> {
        let Streams {
            sinks,
            gens,
            before,
            limit,
        } = s;
        let mut sent = 0;
        for g in gens {
            let j = report(g, limit, self.stop, "bricks gen")?;
            sent += j["sent"].as_u64().unwrap_or(0);
        }
        // In flight: a few hundred microseconds; the servers nap 200 us.
        std::thread::sleep(Duration::from_millis(300));
        let after = snapshot(self.st);
        let (mut received, mut reordered, mut probes) = (0, 0, 0);
        let (mut max_gap_ms, mut max_flow_gap_ms) = (0.0f64, 0.0f64);
        let mut latency_us: Option<(f64, f64, u64)> = None;
        for s in sinks {
            let j = report(s, limit, self.stop, "bricks sink")?;
            let dup = j["duplicates"].as_u64().unwrap_or(0);
            received += j["probes"].as_u64().unwrap_or(0).saturating_sub(dup);
            probes += j["probes"].as_u64().unwrap_or(0);
            reordered += j["reordered"].as_u64().unwrap_or(0);
            max_gap_ms = max_gap_ms.max(j["max_gap_ms"].as_f64().unwrap_or(0.0));
            max_flow_gap_ms = max_flow_gap_ms.max(j["max_flow_gap_ms"].as_f64().unwrap_or(0.0));
            let l = &j["latency_ns"];
            let samples = l["samples"].as_u64().unwrap_or(0);
            if samples > 0 && latency_us.is_none_or(|(_, _, n)| samples > n) {
                let us = |k: &str| l[k].as_u64().unwrap_or(0) as f64 / 1e3;
                latency_us = Some((us("p50"), us("p99"), samples));
            }
        }
        Ok(Traffic {
            sent,
            received,
            reordered,
            probes,
            max_gap_ms,
            max_flow_gap_ms,
            latency_us,
            work: Work::between(&before, &after),
        })
    }

    /// One-way latency of `flows` over `runs` runs: the medians of the
    /// runs' p50 and p99 (microseconds), and the probes timed in all.
    fn latency(
        &self,
        flows: &[(usize, Vec<usize>, Option<u64>)],
        runs: usize,
    ) -> Result<(f64, f64, u64), Error> {
        let (mut p50, mut p99, mut samples) = (Vec::new(), Vec::new(), 0);
        for _ in 0..runs {
            if self.stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            let t = self.traffic(flows, 16)?;
            if let Some((a, b, n)) = t.latency_us {
                p50.push(a);
                p99.push(b);
                samples += n;
            }
        }
        if p50.is_empty() {
            return Err(Error::Process("bricks sink timed no probe".into()));
        }
        Ok((median(&mut p50), median(&mut p99), samples))
    }

    fn write_all(&self, handler: &str, value: &str) -> Result<(), Error> {
        for n in &self.st.nodes {
            let c = status::node_counters(&n.socket)?;
            status::query(&n.socket, &format!("write {}.{handler} {value}", c.element))?;
        }
        Ok(())
    }

    fn ping_all(&self) -> Result<(), Error> {
        for a in 0..self.st.hosts.len() {
            for b in 0..self.st.hosts.len() {
                if a == b {
                    continue;
                }
                let out = bricks_netns::output_timeout(
                    Command::new("ip").args([
                        "netns",
                        "exec",
                        &self.ns_of_host(a),
                        "ping",
                        "-c",
                        "1",
                        "-W",
                        "2",
                        &self.st.hosts[b].address,
                    ]),
                    Duration::from_secs(10),
                )
                .map_err(Error::from)?;
                if !out.status.success() {
                    return Err(Error::Process(format!(
                        "ping {} -> {} failed: {}",
                        self.st.hosts[a].namespace,
                        self.st.hosts[b].address,
                        String::from_utf8_lossy(&out.stdout).trim()
                    )));
                }
            }
        }
        Ok(())
    }

    /// The failover run: a stream h0 -> h1, the busiest intermediate
    /// server killed after a third of it, restarted after.
    fn failover(&mut self) -> Result<Value, Error> {
        let (h0, h1) = (0, 1);
        let secs = (self.secs * 2.0).max(2.0);
        // Flows in turn: a flow's packets are evenly spaced, so its longest
        // silence is the failure's, not chance's.
        let streams = self.start(
            &[(h0, vec![h1], Some(self.rate))],
            FAILOVER_FLOWS,
            secs,
            true,
        )?;
        // Which intermediate carries the balanced share: the most
        // forwarded packets over a short look.
        std::thread::sleep(Duration::from_secs_f64(secs / 6.0));
        let a = snapshot(self.st);
        std::thread::sleep(Duration::from_secs_f64(secs / 6.0));
        let b = snapshot(self.st);
        let w = Work::between(&a, &b);
        let in_node = self.st.node(&self.st.hosts[h0].node)?;
        let out_node = self.st.node(&self.st.hosts[h1].node)?;
        let victim = (0..self.st.nodes.len())
            .filter(|&i| i != in_node && i != out_node)
            .max_by_key(|&i| w.packets[i][1])
            .ok_or_else(|| Error::Process("no intermediate server".into()))?;
        let carried = w.packets[victim][1] as f64 / w.secs.max(1e-6);
        if carried <= 0.0 {
            return Err(Error::Process(
                "no balanced traffic through any intermediate to kill".into(),
            ));
        }
        let killed_at = Instant::now();
        up::kill_node(self.st, victim, StopSignal::Kill)?;
        let t = self.finish(streams)?;
        let victim_name = self.st.nodes[victim].name.clone();
        let restart = Instant::now();
        up::restart_node(self.st, victim, Duration::from_secs(30), self.stop)?;
        Ok(json!({
            "killed": victim_name,
            "killed_after_s": (killed_at.elapsed().as_secs_f64() - secs).abs(),
            "carried_pps": carried,
            "sent": t.sent,
            "received": t.received,
            "lost": t.sent.saturating_sub(t.received),
            "max_flow_gap_ms": t.max_flow_gap_ms,
            "max_gap_ms": t.max_gap_ms,
            "restart_s": restart.elapsed().as_secs_f64(),
        }))
    }
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 * 100.0 / b as f64
    }
}

/// The load measured under one traffic pattern (medians over the runs).
pub struct LoadFinding {
    /// The traffic pattern, in words.
    pub traffic: String,
    /// Packets per second each sending host offered.
    pub rate: u64,
    /// Per server: handled / R.
    pub load: Vec<f64>,
    /// Per server: packets handled per second.
    pub pps: Vec<f64>,
    /// Packets sent and not received, %.
    pub loss_pct: f64,
    /// Packets the input servers sent directly to their output, %.
    pub direct_pct: f64,
}

/// One-way latency of paced probes (medians over the runs), through the
/// cluster and through one server alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct LatencyFinding {
    /// Packets per second of the probes.
    pub rate: u64,
    /// Through the cluster (host, input server, output server, host):
    /// p50 and p99, microseconds.
    pub cluster_us: (f64, f64),
    /// Probes timed through the cluster.
    pub samples: u64,
    /// Through one server alone, when it was measured.
    pub one_server_us: Option<(f64, f64)>,
}

/// The bench's findings.
#[derive(Default)]
pub struct Findings {
    /// The servers, in the cluster file's order.
    pub names: Vec<String>,
    /// The machine, in a line.
    pub machine: String,
    /// CPUs the servers, hosts and generators share.
    pub cpus: usize,
    /// Seconds of traffic per run, and runs per measurement.
    pub secs: f64,
    pub runs: usize,
    /// Packets per second each host offers in the paced runs.
    pub rate: u64,
    /// R, bits per second on the internal links.
    pub r_bps: u64,
    pub loads: Vec<LoadFinding>,
    /// (flows, flowlets, reordered %, loss %, balanced %).
    pub reorder: Vec<(u32, bool, f64, f64, f64)>,
    /// One JSON object per failover run.
    pub failover: Vec<Value>,
    /// (cluster pps, one server pps).
    pub scale: Option<(f64, f64)>,
    /// Per server: median µs of CPU per packet handled (net of idle).
    pub cpu_us: Vec<f64>,
    /// One server alone: µs of CPU per packet.
    pub cpu_one_us: Option<f64>,
    pub latency: Option<LatencyFinding>,
}

impl Findings {
    /// The median longest silence of a flow over the failover runs, ms.
    pub fn failover_gap_ms(&self) -> Option<f64> {
        let mut gaps: Vec<f64> = self
            .failover
            .iter()
            .filter_map(|v| v["max_flow_gap_ms"].as_f64())
            .collect();
        (!gaps.is_empty()).then(|| median(&mut gaps))
    }
}

/// Packets per second of the latency probes: far below anything that
/// queues, so that the figure is the path's, not a backlog's.
const LATENCY_RATE: u64 = 1_000;

/// `bricks bench cluster`: measures, prints a table (or JSON).
pub fn bench(a: ClusterArgs, stop_on_signals: StopOnSignals) -> Result<ExitCode, Error> {
    if !bricks_netns::is_root() {
        eprintln!(
            "bricks bench cluster runs a cluster in network namespaces, which needs root: sudo {} \
             bench cluster",
            std::env::args().next().unwrap_or_else(|| "bricks".into())
        );
        return Ok(ExitCode::from(CANNOT_RUN));
    }
    let stop = stop_on_signals()?;
    let started = Instant::now();
    let f = measure(&a, &stop, !a.json)?;
    if a.json {
        println!("{}", findings_json(&f));
    } else {
        print!("{}", findings_text(&f));
        println!("({:.0} s in all)", started.elapsed().as_secs_f64());
    }
    Ok(ExitCode::SUCCESS)
}

/// RB4 as `bricks reproduce` runs it: every measurement, the table in the
/// unit's log, the load plot in `plots`, and the rows of RouteBricks §6.2
/// ([`super::paper::rows`]).
pub fn paper_rows(
    quick: bool,
    runs: Option<usize>,
    plots: &Path,
    stop_on_signals: StopOnSignals,
) -> Result<Vec<crate::report::Row>, crate::Error> {
    let err = |e: Error| Error::Run {
        workload: "bench cluster".into(),
        message: format!("{e:#}"),
    };
    if !bricks_netns::is_root() {
        return Err(crate::Error::Run {
            workload: "bench cluster".into(),
            message: "runs a cluster in network namespaces, which needs root".into(),
        });
    }
    let a = ClusterArgs {
        quick,
        seconds: None,
        runs,
        rate: 20_000,
        only: Vec::new(),
        cluster: None,
        backend: "auto".into(),
        json: false,
    };
    let stop = stop_on_signals().map_err(|e| err(e.into()))?;
    let f = measure(&a, &stop, true).map_err(err)?;
    print!("{}", findings_text(&f));
    if let Some(p) = super::paper::write_plots(&f, plots)? {
        println!("plot: {}", p.display());
    }
    Ok(super::paper::rows(&f))
}

/// Runs the measurements `a` asks for on a copy of rb4.toml (and one
/// server alone, for the rate and latency); `say`: print what runs.
pub fn measure(a: &ClusterArgs, stop: &AtomicBool, say: bool) -> Result<Findings, Error> {
    for w in &a.only {
        if !WHAT.contains(&w.as_str()) {
            return Err(Error::Argument(format!(
                "--only {w}: expected some of {}",
                WHAT.join(", ")
            )));
        }
    }
    let wants = |w: &str| a.only.is_empty() || a.only.iter().any(|o| o == w);
    let secs = a.seconds.unwrap_or(if a.quick { 1.0 } else { 3.0 });
    if !(secs.is_finite() && (0.2..=60.0).contains(&secs)) {
        return Err(Error::Argument("--seconds: 0.2 to 60".into()));
    }
    let runs = a.runs.unwrap_or(if a.quick { 1 } else { 3 }).max(1);
    if a.rate < 100 {
        return Err(Error::Argument(
            "--rate: at least 100 packets per second".into(),
        ));
    }
    let machine = Machine::probe();
    let source = cluster_file(a.cluster.as_deref())?;
    // R: twice what each host offers, in bits on the internal links.
    let r_bps = 2 * a.rate * (FRAME + LABEL) * 8;
    let dir = tempfile::tempdir().context("making a scratch directory")?;
    let file = dir.path().join("rb4-bench.toml");
    let text = std::fs::read_to_string(&source)
        .with_context(|| format!("reading {}", source.display()))?;
    std::fs::write(&file, with_rate(&text, r_bps))?;
    let cluster = crate::cluster::load(&file).map_err(Error::Argument)?;
    if !(cluster.io_nodes().count() >= 3 && cluster.nodes.iter().all(|n| n.ports.len() <= 1)) {
        return Err(Error::Argument(format!(
            "{}: the bench wants at least 3 servers with one external port each",
            source.display()
        )));
    }
    let name = format!("bench{}", std::process::id() % 100_000);
    let mut args = UpArgs::new(&file);
    args.name = Some(name);
    args.backend = a.backend.clone();
    if say {
        println!(
            "bricks bench cluster: {} ({} servers, R = {} for {} pkt/s of {FRAME}-byte frames \
             per host), {secs} s per run, median of {runs}",
            source.display(),
            cluster.nodes.len(),
            crate::cluster::rate_text(r_bps),
            a.rate
        );
        println!("machine: {}", machine.describe());
    }
    let mut f = Findings {
        names: cluster.nodes.iter().map(|n| n.name.clone()).collect(),
        machine: machine.describe(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        secs,
        runs,
        rate: a.rate,
        r_bps,
        ..Default::default()
    };
    let st = up::up(&args, &cluster, stop)?;
    let mut running = Running { st };
    let exe = std::env::current_exe()?.display().to_string();
    let result = (|| -> Result<(), Error> {
        let mut b = Bench {
            exe: exe.clone(),
            st: &mut running.st,
            stop,
            secs,
            rate: a.rate,
            idle_cpu: Vec::new(),
        };
        b.ping_all()?;
        let idle_a = snapshot(b.st);
        std::thread::sleep(Duration::from_millis(if a.quick { 500 } else { 1000 }));
        let idle = Work::between(&idle_a, &snapshot(b.st));
        b.idle_cpu = idle.cpu.iter().map(|c| c / idle.secs.max(1e-6)).collect();
        let hosts = b.st.hosts.len();
        if wants("latency") {
            // Host 0 to host 1 well below R/N: every packet goes directly,
            // input server to output server (RouteBricks' two hops).
            let pair = vec![(0usize, vec![1usize], Some(LATENCY_RATE))];
            let (p50, p99, samples) = b.latency(&pair, runs)?;
            f.latency = Some(LatencyFinding {
                rate: LATENCY_RATE,
                cluster_us: (p50, p99),
                samples,
                one_server_us: None,
            });
        }
        if wants("load") {
            let uniform: Vec<(usize, Vec<usize>, Option<u64>)> = (0..hosts)
                .map(|h| (h, (0..hosts).filter(|&o| o != h).collect(), Some(a.rate)))
                .collect();
            // Direct VLB's worst case (§3.2): a permutation, each input
            // sending all of R to one output, so that only R/N goes
            // directly and the rest crosses an intermediate: expected
            // 1 + 1 + (N - 1)/N = 2.75R per server for N = 4, bound 3R.
            let worst: Vec<(usize, Vec<usize>, Option<u64>)> = (0..hosts)
                .map(|h| (h, vec![(h + 1) % hosts], Some(2 * a.rate)))
                .collect();
            let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); b.st.nodes.len()];
            for (label, flows, flowlets) in [
                (UNIFORM, &uniform, true),
                (WORST_FLOWLETS, &worst, true),
                (WORST_PER_PACKET, &worst, false),
            ] {
                b.write_all("flowlets", if flowlets { "true" } else { "false" })?;
                let mut loads: Vec<Vec<f64>> = vec![Vec::new(); b.st.nodes.len()];
                let mut pps: Vec<Vec<f64>> = vec![Vec::new(); b.st.nodes.len()];
                let (mut loss, mut direct) = (Vec::new(), Vec::new());
                for _ in 0..runs {
                    if stop.load(Ordering::Relaxed) {
                        return Err(Error::Interrupted);
                    }
                    let t = b.traffic(flows, 64)?;
                    for (i, l) in t.work.loads().into_iter().enumerate() {
                        loads[i].push(l);
                        pps[i].push(t.work.handled(i) as f64 / t.work.secs.max(1e-6));
                        if flows.len() == hosts {
                            let net = t.work.cpu[i] - b.idle_cpu[i] * t.work.secs;
                            let handled = t.work.handled(i);
                            if handled > 0 {
                                cpu[i].push(net.max(0.0) * 1e6 / handled as f64);
                            }
                        }
                    }
                    loss.push(pct(t.sent.saturating_sub(t.received), t.sent));
                    let d: u64 = t.work.packets.iter().map(|p| p[3]).sum();
                    let bal: u64 = t.work.packets.iter().map(|p| p[4]).sum();
                    direct.push(pct(d, d + bal));
                }
                f.loads.push(LoadFinding {
                    traffic: label.to_string(),
                    rate: flows[0].2.unwrap_or(a.rate),
                    load: loads.iter_mut().map(|v| median(v)).collect(),
                    pps: pps.iter_mut().map(|v| median(v)).collect(),
                    loss_pct: median(&mut loss),
                    direct_pct: median(&mut direct),
                });
            }
            b.write_all("flowlets", if cluster.flowlets { "true" } else { "false" })?;
            f.cpu_us = cpu.iter_mut().map(|v| median(v)).collect();
        }
        if wants("reorder") {
            let pair = vec![(0usize, vec![1usize], Some(a.rate))];
            for (nflows, flowlets) in REORDER_FLOWS.iter().flat_map(|&n| [(n, true), (n, false)]) {
                b.write_all("flowlets", if flowlets { "true" } else { "false" })?;
                let (mut r, mut loss, mut bal) = (Vec::new(), Vec::new(), Vec::new());
                for _ in 0..runs {
                    if stop.load(Ordering::Relaxed) {
                        return Err(Error::Interrupted);
                    }
                    // With flowlets, the flows that start while the direct
                    // share is used up are balanced.
                    let t = b.traffic(&pair, nflows)?;
                    r.push(pct(t.reordered, t.probes));
                    loss.push(pct(t.sent.saturating_sub(t.received), t.sent));
                    let d: u64 = t.work.packets.iter().map(|p| p[3]).sum();
                    let x: u64 = t.work.packets.iter().map(|p| p[4]).sum();
                    bal.push(pct(x, d + x));
                }
                f.reorder.push((
                    nflows,
                    flowlets,
                    median(&mut r),
                    median(&mut loss),
                    median(&mut bal),
                ));
            }
            b.write_all("flowlets", if cluster.flowlets { "true" } else { "false" })?;
        }
        if wants("failover") {
            for _ in 0..runs {
                if stop.load(Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                f.failover.push(b.failover()?);
            }
        }
        if wants("scale") {
            let all: Vec<(usize, Vec<usize>, Option<u64>)> = (0..hosts)
                .map(|h| (h, (0..hosts).filter(|&o| o != h).collect(), None))
                .collect();
            let mut c = Vec::new();
            for _ in 0..runs {
                if stop.load(Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                let t = b.traffic(&all, 64)?;
                c.push(t.received as f64 / secs);
            }
            f.scale = Some((median(&mut c), f64::NAN));
        }
        Ok(())
    })();
    drop(running);
    result?;
    if (wants("scale") || wants("latency")) && !stop.load(Ordering::Relaxed) {
        let one = one_server(a, &exe, secs, runs, stop, dir.path(), wants("scale"))?;
        if let Some(s) = f.scale.as_mut() {
            s.1 = one.pps;
        }
        f.cpu_one_us = one.cpu_us;
        if let Some(l) = f.latency.as_mut() {
            l.one_server_us = one.latency_us;
        }
    }
    Ok(f)
}

/// One server alone: its rate flat out and its CPU per packet (when
/// `scale`), and its latency at [`LATENCY_RATE`].
struct OneServer {
    pps: f64,
    cpu_us: Option<f64>,
    latency_us: Option<(f64, f64)>,
}

/// One server forwarding between two hosts, the cluster's way (a
/// one-server cluster with two ports: every packet is handled once):
/// packets per second delivered with both hosts sending flat out, CPU
/// per packet, and latency at a low rate.
fn one_server(
    a: &ClusterArgs,
    exe: &str,
    secs: f64,
    runs: usize,
    stop: &AtomicBool,
    dir: &Path,
    scale: bool,
) -> Result<OneServer, Error> {
    let r_bps = 2 * a.rate * (FRAME + LABEL) * 8;
    let text = format!(
        "name = \"one\"\nrate = \"{r_bps}bps\"\n\n\
         [[node]]\nname = \"n1\"\n\
         [[node.port]]\niface = \"ext0\"\naddress = \"10.1.0.1/24\"\n\
         [[node.port]]\niface = \"ext1\"\naddress = \"10.2.0.1/24\"\n\n\
         [[route]]\nprefix = \"10.1.0.0/24\"\nnode = \"n1\"\nport = \"ext0\"\n\n\
         [[route]]\nprefix = \"10.2.0.0/24\"\nnode = \"n1\"\nport = \"ext1\"\n"
    );
    let file = dir.join("one.toml");
    std::fs::write(&file, text)?;
    let cluster = crate::cluster::load(&file).map_err(Error::Argument)?;
    let mut args = UpArgs::new(&file);
    args.name = Some(format!("bench{}one", std::process::id() % 100_000));
    args.backend = a.backend.clone();
    let st = up::up(&args, &cluster, stop)?;
    let mut running = Running { st };
    let b = Bench {
        exe: exe.to_string(),
        st: &mut running.st,
        stop,
        secs,
        rate: a.rate,
        idle_cpu: vec![0.0],
    };
    b.ping_all()?;
    let latency_us = if a.only.is_empty() || a.only.iter().any(|o| o == "latency") {
        let (p50, p99, _) = b.latency(&[(0usize, vec![1usize], Some(LATENCY_RATE))], runs)?;
        Some((p50, p99))
    } else {
        None
    };
    let (mut pps, mut cpu) = (Vec::new(), Vec::new());
    if scale {
        let flows = vec![(0usize, vec![1usize], None), (1, vec![0], None)];
        for _ in 0..runs {
            if stop.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
            let t = b.traffic(&flows, 64)?;
            pps.push(t.received as f64 / secs);
            let h = t.work.handled(0);
            if h > 0 {
                cpu.push(t.work.cpu[0] * 1e6 / h as f64);
            }
        }
    }
    Ok(OneServer {
        pps: if pps.is_empty() {
            f64::NAN
        } else {
            median(&mut pps)
        },
        cpu_us: (!cpu.is_empty()).then(|| median(&mut cpu)),
        latency_us,
    })
}

/// The findings as tables, as `bricks bench cluster` prints them.
pub fn findings_text(f: &Findings) -> String {
    let si = super::si;
    let (names, rate) = (&f.names, f.rate);
    let mut s = String::new();
    if let Some(l) = &f.latency {
        let _ = writeln!(
            s,
            "\nlatency, one host to another at {} pkt/s (input and output server): p50 {:.1} us, \
             p99 {:.1} us ({} probes){}",
            l.rate,
            l.cluster_us.0,
            l.cluster_us.1,
            l.samples,
            l.one_server_us.map_or(String::new(), |(a, b)| format!(
                "; one server alone p50 {a:.1} us, p99 {b:.1} us"
            ))
        );
        let e = super::paper::LatencyEstimate::PAPER;
        let _ = writeln!(
            s,
            "  RouteBricks §6.2 estimates {:.2} us per server, {:.2}-{:.2} us through RB4",
            e.per_server_us(),
            e.direct_us(),
            e.balanced_us()
        );
    }
    for l in &f.loads {
        let (loads, pps) = (&l.load, &l.pps);
        let _ = writeln!(
            s,
            "\nload, {}: {} pkt/s per sending host; loss {:.2}%, direct {:.1}%",
            l.traffic, l.rate, l.loss_pct, l.direct_pct
        );
        let _ = writeln!(s, "  {:<8} {:>12} {:>8}", "server", "handled/s", "load");
        for (i, n) in names.iter().enumerate() {
            let _ = writeln!(s, "  {:<8} {:>12} {:>7.2}R", n, si(pps[i]), loads[i]);
        }
        let max = loads.iter().copied().fold(f64::NAN, f64::max);
        let _ = writeln!(
            s,
            "  highest load {max:.2}R (Direct VLB: 2R uniform .. 3R worst case)"
        );
    }
    if !f.cpu_us.is_empty() {
        let _ = writeln!(
            s,
            "\nCPU per packet handled (uniform load, idle napping taken out):"
        );
        for (i, n) in names.iter().enumerate() {
            let _ = writeln!(s, "  {:<8} {:>8.2} us", n, f.cpu_us[i]);
        }
        if let Some(one) = f.cpu_one_us {
            let _ = writeln!(s, "  one server alone (scaling runs): {one:.2} us");
        }
    }
    if !f.reorder.is_empty() {
        let _ = writeln!(
            s,
            "\nreordering, one host to another above R/N (RouteBricks §6.2: 0.15% with, 5.5% \
             without):"
        );
        for (flows, on, r, loss, bal) in &f.reorder {
            let _ = writeln!(
                s,
                "  {flows:>4} flows, flowlets {:<4} {:>8.3}% of packets reordered ({bal:.1}% balanced, loss {loss:.2}%)",
                if *on { "on" } else { "off" },
                r
            );
        }
    }
    if !f.failover.is_empty() {
        let mut gaps: Vec<f64> = f
            .failover
            .iter()
            .filter_map(|v| v["max_flow_gap_ms"].as_f64())
            .collect();
        let mut all: Vec<f64> = f
            .failover
            .iter()
            .filter_map(|v| v["max_gap_ms"].as_f64())
            .collect();
        let lost: Vec<String> = f
            .failover
            .iter()
            .map(|v| format!("{}/{}", v["lost"], v["sent"]))
            .collect();
        let killed: Vec<String> = f
            .failover
            .iter()
            .map(|v| v["killed"].as_str().unwrap_or("?").to_string())
            .collect();
        let _ = writeln!(
            s,
            "\nfailover: a server carrying balanced traffic killed mid-stream ({} pkt/s, 256 flows)",
            rate
        );
        let _ = writeln!(
            s,
            "  longest silence of a flow {:.0} ms (median; goal 200 ms), of the whole stream {:.0} \
             ms; lost {}; killed {}",
            median(&mut gaps),
            median(&mut all),
            lost.join(", "),
            killed.join(", ")
        );
    }
    if let Some((c, one)) = f.scale {
        let _ = writeln!(
            s,
            "\nscaling, every host sending flat out: cluster {} pkt/s delivered, one server {} \
             pkt/s, ratio {:.2}",
            si(c),
            si(one),
            c / one
        );
        let _ = writeln!(
            s,
            "  (every process shares this machine's CPUs: the cluster handles each packet two or \
             three times, on the same CPUs)"
        );
    }
    s
}

/// The findings as one JSON object (`bricks bench cluster --json`).
pub fn findings_json(f: &Findings) -> Value {
    json!({
        "machine": f.machine,
        "seconds": f.secs,
        "runs": f.runs,
        "rate_pps": f.rate,
        "r_bps": f.r_bps,
        "servers": f.names,
        "latency": f.latency.map(|l| json!({
            "rate_pps": l.rate,
            "p50_us": l.cluster_us.0,
            "p99_us": l.cluster_us.1,
            "samples": l.samples,
            "one_server_p50_us": l.one_server_us.map(|x| x.0),
            "one_server_p99_us": l.one_server_us.map(|x| x.1),
        })),
        "load": f.loads.iter().map(|l| json!({
            "traffic": l.traffic, "rate_pps": l.rate, "load": l.load, "handled_pps": l.pps,
            "loss_pct": l.loss_pct, "direct_pct": l.direct_pct,
        })).collect::<Vec<_>>(),
        "cpu_us_per_packet": f.cpu_us,
        "cpu_us_per_packet_one_server": f.cpu_one_us,
        "reorder": f.reorder.iter().map(|(flows, on, r, loss, bal)| json!({
            "flows": flows, "flowlets": on, "reordered_pct": r, "loss_pct": loss, "balanced_pct": bal,
        })).collect::<Vec<_>>(),
        "failover": f.failover,
        "scale": f.scale.map(|(c, one)| json!({"cluster_pps": c, "one_server_pps": one, "ratio": c / one})),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_replaced_at_the_top_level_only() {
        let t = "name = \"rb4\"\nrate = \"10G\"\n\n[[node]]\nrate = 5\n";
        assert_eq!(
            with_rate(t, 1000),
            "name = \"rb4\"\nrate = \"1000bps\"\n\n[[node]]\nrate = 5\n"
        );
        let t = "name = \"rb4\"\n[[node]]\nname = \"n1\"\n";
        assert_eq!(
            with_rate(t, 7),
            "name = \"rb4\"\nrate = \"7bps\"\n[[node]]\nname = \"n1\"\n"
        );
    }

    #[test]
    fn load_is_handled_over_mean_input() {
        let w = Work {
            secs: 1.0,
            packets: vec![[100, 0, 300, 50, 50], [100, 50, 0, 100, 0], [0, 0, 0, 0, 0]],
            cpu: vec![0.0; 3],
        };
        assert_eq!(w.r(), 100.0);
        let l = w.loads();
        assert_eq!(l[0], 4.0);
        assert_eq!(l[1], 1.5);
        assert_eq!(l[2], 0.0);
    }
}
