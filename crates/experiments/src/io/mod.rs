//! `bricks bench io`: forwarding between real interfaces, measured from
//! outside the router.
//!
//! One run builds a test network of three namespaces (generator, router,
//! sink) joined by two-queue veth pairs,
//!
//! ```text
//!   gen [g0] ---- [r0] router [r1] ---- [s0] sink
//!   10.70.0.2  10.70.0.1    10.71.0.1  10.71.0.2
//! ```
//!
//! and measures every subject with the same `bricks gen` (64-byte UDP
//! frames to 10.71.0.2, destination MAC r0's, many flows) and the same
//! `bricks sink`, each pinned to the same CPU: Linux's own forwarding, an
//! XDP_REDIRECT program (the kernel's fastest forwarding, no per-packet
//! work), and bricks forwarding IPv4 with the batching and spreading
//! choices of RouteBricks §4.2 (Table 1: kp and kn; Fig. 6: pipeline
//! against run to completion) and of the NIC paper (Fig. 2: hardware
//! queues against a serial NIC). The figure of merit is what the sink
//! receives per second; the generator sends as fast as it can.
//!
//! **Placement.** Generator, router and sink share the machine's cores, so
//! every subject runs with the same placement: generator and sink on the
//! tester CPU (the first), the router on the router CPU (the last), or on
//! every CPU for the subjects that need two. The kernel's share of the
//! router's work moves with it: each veth receives in NAPI threads
//! (`/sys/class/net/IF/threaded`, GRO on so that plain veths use NAPI too)
//! pinned to the receiver's CPUs, as a NIC's interrupts are pinned to the
//! cores that own its queues. Without that, Linux forwarding and
//! XDP_REDIRECT would run inside the generator's `sendto` on the tester
//! CPU, and bricks would get a CPU more than they do. The NAPI threads run
//! SCHED_FIFO, so that they take the CPU before user space as softirq
//! processing would: as ordinary threads they were starved for seconds by
//! the busy-polling workers they share a CPU with (seen on a kernel with
//! `preempt=none`), and the frames of a whole run were lost.
//!
//! **Queues.** A veth hands a frame to the receive queue numbered like the
//! transmit queue it was sent on, and a veth has no RSS. The generator
//! runs two workers (`bricks gen --threads 2`, both on the tester CPU),
//! each sending its own flows on its own AF_XDP transmit queue of g0, so
//! both of r0's receive queues get traffic. AF_XDP rather than AF_PACKET:
//! on this kind of machine it sends about twice as many frames per second
//! per CPU, and the tester must outrun the router.
//!
//! The network is deleted at the end, on errors and on Ctrl-C.

use crate::StopOnSignals;
use anyhow::{bail, Context as _};
use bricks_netns::{ChildGuard, Network};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// `bricks bench io` options.
#[derive(clap::Args)]
#[command(
    after_help = "Subjects (for --only): linux, xdp-redirect, bricks, bricks-kp1, \
    bricks-kn1, bricks-nobatch, bricks-push, bricks-packet, bricks-2w, bricks-pipeline, \
    bricks-serial; \
    latency at a low rate: lat-linux, lat-xdp-redirect, lat-bricks, lat-bricks-flush0, \
    lat-bricks-kn1, lat-bricks-busypoll (or `latency` for all of them).\n\n\
    Examples:\n  \
    sudo bricks bench io\n  \
    sudo bricks bench io --seconds 1 --runs 1 --only linux,bricks\n  \
    sudo bricks bench io --only latency --json"
)]
pub struct IoArgs {
    /// Seconds the generator sends in each run.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    pub seconds: f64,
    /// Runs per subject; the median is reported. Runs go round the
    /// subjects, so that a change in the machine's load touches them all.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Measure only these subjects (comma-separated names; see below).
    #[arg(long, value_delimiter = ',', value_name = "SUBJECT,...")]
    pub only: Vec<String>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Distinct flows the generator sends.
    #[arg(long, default_value_t = 256)]
    pub flows: u32,
    /// Packets per second of the latency measurements.
    #[arg(long, default_value_t = 10_000, value_name = "PPS")]
    pub latency_rate: u64,
    /// Steps of the search for each subject's loss-free rate (the highest
    /// offered rate it forwards with at most --max-loss); 0 skips it.
    #[arg(long, default_value_t = 6, value_name = "N")]
    pub search_steps: u32,
    /// The loss, in percent of the frames sent, that still counts as
    /// loss-free in the search.
    #[arg(long, default_value_t = 1.0, value_name = "PERCENT")]
    pub max_loss: f64,
    /// Hold an XDP program until killed (used by the bench itself, inside
    /// the router's or the sink's namespace): `redirect:FROM:TO` or
    /// `pass:IF`.
    #[arg(long, hide = true, value_name = "SPEC")]
    pub xdp_hold: Option<String>,
}

/// Exit status when the bench cannot run here (no root, missing tools).
const CANNOT_RUN: u8 = 2;

const G0_ADDR: &str = "10.70.0.2";
const R0_CIDR: &str = "10.70.0.1/24";
const G0_CIDR: &str = "10.70.0.2/24";
const R1_CIDR: &str = "10.71.0.1/24";
const S0_ADDR: &str = "10.71.0.2";
const S0_CIDR: &str = "10.71.0.2/24";
/// Queues of every veth (RX and TX).
const QUEUES: u32 = 2;
/// How long the sink gets to open its sockets before the generator
/// starts.
const SINK_START: Duration = Duration::from_millis(700);
/// How long the sink keeps receiving after the generator has stopped.
const DRAIN: Duration = Duration::from_millis(300);
/// The niceness of generator, sink and router: other jobs on the machine
/// then get about 1% of a CPU the bench's processes want (weight 88761
/// against 1024), so a busy machine disturbs the figures less.
const NICE: &str = "-20";
/// SCHED_FIFO priority of the veths' NAPI threads: above every ordinary
/// thread, below the kernel's own real-time threads.
const NAPI_PRIORITY: &str = "10";

/// How bricks forwards in one subject.
#[derive(Debug, Clone, PartialEq)]
struct Bricks {
    /// FromDevice BURST: frames per queue and poll (RouteBricks' kp).
    kp: u32,
    /// ToDevice BURST: frames per kick of the kernel (RouteBricks' kn).
    kn: u32,
    /// ToDevice FLUSH.
    flush: &'static str,
    /// `xdp` or `packet`.
    backend: &'static str,
    /// Worker threads.
    threads: usize,
    /// `per-core`, `pipeline` or `serial`.
    mode: &'static str,
    /// `--idle-nap` in microseconds (bricks run's default when `None`).
    idle_nap_us: Option<u64>,
    /// A Queue before ToDevice (which then pulls up to kn frames per
    /// round), as in Click's IP router; without it ToDevice is pushed
    /// each whole batch and kn is only the kick threshold.
    queue: bool,
}

const BRICKS: Bricks = Bricks {
    kp: 32,
    kn: 16,
    flush: "100us",
    backend: "xdp",
    threads: 1,
    mode: "per-core",
    idle_nap_us: None,
    queue: true,
};

/// What forwards between r0 and r1.
#[derive(Debug, Clone, PartialEq)]
enum Forwarder {
    /// The kernel's IPv4 forwarding (`net.ipv4.ip_forward=1`).
    Linux,
    /// An XDP program on r0 redirecting every frame to r1 (DEVMAP).
    XdpRedirect,
    /// `bricks run` with the IPv4 forwarding configuration.
    Bricks(Bricks),
}

/// One measurement.
#[derive(Debug, Clone)]
struct Subject {
    name: &'static str,
    label: &'static str,
    fwd: Forwarder,
    /// The router gets every CPU instead of the router CPU alone.
    wide: bool,
    /// Packets per second offered; `None`: as fast as the generator can.
    rate: Option<u64>,
}

impl Subject {
    fn is_latency(&self) -> bool {
        self.rate.is_some()
    }
}

/// Every subject, in the order they are run and printed.
fn subjects(latency_rate: u64) -> Vec<Subject> {
    let b = |f: fn(&mut Bricks)| {
        let mut x = BRICKS;
        f(&mut x);
        Forwarder::Bricks(x)
    };
    let t = |name, label, fwd, wide| Subject {
        name,
        label,
        fwd,
        wide,
        rate: None,
    };
    let l = |name, label, fwd| Subject {
        name,
        label,
        fwd,
        wide: false,
        rate: Some(latency_rate),
    };
    vec![
        t("linux", "Linux forwarding", Forwarder::Linux, false),
        t(
            "xdp-redirect",
            "XDP_REDIRECT r0 -> r1",
            Forwarder::XdpRedirect,
            false,
        ),
        t("bricks", "bricks IPv4, kp 32, kn 16", b(|_| {}), false),
        t("bricks-kp1", "bricks kp 1, kn 16", b(|x| x.kp = 1), false),
        t("bricks-kn1", "bricks kp 32, kn 1", b(|x| x.kn = 1), false),
        t(
            "bricks-nobatch",
            "bricks kp 1, kn 1",
            b(|x| {
                x.kp = 1;
                x.kn = 1;
            }),
            false,
        ),
        t(
            "bricks-push",
            "bricks without Queue (push ToDevice)",
            b(|x| x.queue = false),
            false,
        ),
        t(
            "bricks-packet",
            "bricks AF_PACKET",
            b(|x| x.backend = "packet"),
            false,
        ),
        t(
            "bricks-2w",
            "bricks 2 workers, per-core queues",
            b(|x| x.threads = 2),
            true,
        ),
        t(
            "bricks-pipeline",
            "bricks pipeline: poller + 1 worker",
            b(|x| x.mode = "pipeline"),
            true,
        ),
        t(
            "bricks-serial",
            "bricks serial: steerer + 1 worker",
            b(|x| x.mode = "serial"),
            true,
        ),
        l("lat-linux", "Linux forwarding", Forwarder::Linux),
        l("lat-xdp-redirect", "XDP_REDIRECT", Forwarder::XdpRedirect),
        l("lat-bricks", "bricks kn 16, FLUSH 100us", b(|_| {})),
        l(
            "lat-bricks-flush0",
            "bricks kn 16, FLUSH 0",
            b(|x| x.flush = "0"),
        ),
        l("lat-bricks-kn1", "bricks kn 1", b(|x| x.kn = 1)),
        l(
            "lat-bricks-busypoll",
            "bricks FLUSH 100us, --idle-nap 0",
            b(|x| x.idle_nap_us = Some(0)),
        ),
    ]
}

/// The subjects `--only` selects (all when it is empty).
fn select(all: Vec<Subject>, only: &[String]) -> anyhow::Result<Vec<Subject>> {
    if only.is_empty() {
        return Ok(all);
    }
    for o in only {
        if o != "latency" && !all.iter().any(|s| s.name == o) {
            let names: Vec<&str> = all.iter().map(|s| s.name).collect();
            bail!(
                "--only: no subject `{o}`; the subjects are {}, and `latency` for every lat-* one",
                names.join(", ")
            );
        }
    }
    Ok(all
        .into_iter()
        .filter(|s| {
            only.iter()
                .any(|o| o == s.name || (o == "latency" && s.is_latency()))
        })
        .collect())
}

/// The router's configuration: Click's IPv4 forwarding path (the `ipv4`
/// workload of `bricks bench core`) between two live interfaces.
fn bricks_config(b: &Bricks, r1_mac: &str, s0_mac: &str) -> String {
    format!(
        "rx :: FromDevice(r0, BURST {kp}, BACKEND {be})\n\
         \t-> c :: Classifier(12/0800, -)\n\
         \t-> Strip(14)\n\
         \t-> CheckIPHeader\n\
         \t-> rt :: StaticIPLookup(10.71.0.0/24 0, 10.70.0.0/24 1)\n\
         \t-> dt :: DecIPTTL\n\
         \t-> EtherEncap(0x0800, {r1_mac}, {s0_mac})\n\
         {queue}\
         \t-> tx :: ToDevice(r1, BURST {kn}, FLUSH {flush}, BACKEND {be});\n\
         c[1] -> Discard;\nrt[1] -> Discard;\ndt[1] -> Discard;\n",
        queue = if b.queue { "\t-> q :: Queue\n" } else { "" },
        kp = b.kp,
        kn = b.kn,
        flush = b.flush,
        be = b.backend,
    )
}

/// `0,1,3` as taskset reads it.
fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The median of `v` (the mean of the middle two when `v` has an even
/// length; NaN when it is empty), sorting `v`.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// What `bricks gen --json` reports (the fields the bench uses).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct GenReport {
    sent: u64,
    elapsed: f64,
}

/// What `bricks sink --json` reports (the fields the bench uses).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct SinkReport {
    /// Distinct probes received (duplicates left out).
    received: u64,
    /// Probes per second between the first and the last probe, in
    /// millions.
    mpps: f64,
    /// Latency percentiles in ns: p50, p90, p99, p99.9, max.
    latency: [u64; 5],
}

/// The last line of `text` that is a JSON object.
pub fn last_json(text: &str) -> Option<serde_json::Value> {
    text.lines()
        .rev()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .filter(serde_json::Value::is_object)
}

fn parse_gen(text: &str) -> Option<GenReport> {
    let j = last_json(text)?;
    Some(GenReport {
        sent: j["sent"].as_u64()?,
        elapsed: j["elapsed_s"].as_f64()?,
    })
}

fn parse_sink(text: &str) -> Option<SinkReport> {
    let j = last_json(text)?;
    let probes = j["probes"].as_u64()?;
    let dups = j["duplicates"].as_u64().unwrap_or(0);
    let l = &j["latency_ns"];
    let p = |k: &str| l[k].as_u64().unwrap_or(0);
    Some(SinkReport {
        received: probes.saturating_sub(dups),
        mpps: j["mpps"].as_f64()?,
        latency: [p("p50"), p("p90"), p("p99"), p("p999"), p("max")],
    })
}

/// The router's counters at the end of a bricks run, summed over workers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct RouterCounters {
    received: u64,
    ring_drops: u64,
    queue_drops: u64,
    sent: u64,
    tx_drops: u64,
}

/// Reads `bricks run --stats-json`'s last line.
fn parse_router(text: &str) -> Option<RouterCounters> {
    let j = last_json(text)?;
    let mut c = RouterCounters::default();
    for w in j["workers"].as_array()? {
        let e = &w["elements"];
        let g = |el: &str, k: &str| e[el][k].as_u64().unwrap_or(0);
        c.received += g("rx", "count");
        c.ring_drops += g("rx", "ring_drops");
        c.queue_drops += g("q", "drops");
        c.sent += g("tx", "count");
        c.tx_drops += g("tx", "drops");
    }
    Some(c)
}

/// One run of one subject.
#[derive(Debug, Clone, Default)]
struct RunResult {
    gen: GenReport,
    sink: SinkReport,
    router: Option<RouterCounters>,
    /// How the router opened its interfaces (bricks' report lines), or
    /// where the XDP program runs.
    notes: Vec<String>,
    /// The 1-minute load average when the run started.
    load: f64,
}

impl RunResult {
    fn offered_mpps(&self) -> f64 {
        if self.gen.elapsed > 0.0 {
            self.gen.sent as f64 / self.gen.elapsed / 1e6
        } else {
            0.0
        }
    }

    fn loss_pct(&self) -> f64 {
        if self.gen.sent == 0 {
            return 0.0;
        }
        self.gen.sent.saturating_sub(self.sink.received) as f64 * 100.0 / self.gen.sent as f64
    }
}

/// Whether a process is ready, from what it printed so far (stdout,
/// stderr).
type Ready = fn(&[String], &[String]) -> bool;

/// A child process whose output is read while it runs (to see when it is
/// ready) and kept (to read its report). Killed, by its PID, if dropped
/// while it runs.
struct Proc {
    guard: ChildGuard,
    lines: mpsc::Receiver<(bool, String)>,
    stdout: Vec<String>,
    stderr: Vec<String>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

/// How a [`Proc`] ended.
struct Finished {
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
}

impl Finished {
    fn ok(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// The last lines of stderr, for an error message.
    fn why(&self) -> String {
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
        match self.status {
            Some(s) => format!("{s}: {tail}"),
            None => format!("did not end in time: {tail}"),
        }
    }
}

impl Proc {
    fn spawn(cmd: &mut Command) -> anyhow::Result<Proc> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut guard = ChildGuard::spawn(cmd)?;
        let (tx, lines) = mpsc::channel();
        let mut readers = Vec::new();
        let child = guard.child_mut();
        let streams: [(bool, Option<Box<dyn std::io::Read + Send>>); 2] = [
            (false, child.stdout.take().map(|s| Box::new(s) as _)),
            (true, child.stderr.take().map(|s| Box::new(s) as _)),
        ];
        for (is_err, s) in streams {
            let Some(s) = s else { continue };
            let tx = tx.clone();
            readers.push(std::thread::spawn(move || {
                for l in std::io::BufReader::new(s).lines() {
                    let Ok(l) = l else { break };
                    if tx.send((is_err, l)).is_err() {
                        break;
                    }
                }
            }));
        }
        Ok(Proc {
            guard,
            lines,
            stdout: Vec::new(),
            stderr: Vec::new(),
            readers,
        })
    }

    fn take(&mut self, (is_err, l): (bool, String)) {
        if is_err {
            self.stderr.push(l);
        } else {
            self.stdout.push(l);
        }
    }

    /// Reads output until `ready` says so (true), the process ends, or
    /// the time is up (false).
    fn wait_ready(
        &mut self,
        timeout: Duration,
        cancel: &AtomicBool,
        ready: impl Fn(&[String], &[String]) -> bool,
    ) -> bool {
        let end = Instant::now() + timeout;
        loop {
            if ready(&self.stdout, &self.stderr) {
                return true;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() || cancel.load(Ordering::Relaxed) {
                return false;
            }
            match self.lines.recv_timeout(left.min(Duration::from_millis(50))) {
                Ok(l) => self.take(l),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if self.guard.try_wait().is_some() {
                        // Ended: whatever it printed is read below.
                        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
                            self.take(l);
                        }
                        return ready(&self.stdout, &self.stderr);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return ready(&self.stdout, &self.stderr)
                }
            }
        }
    }

    /// Asks it to stop (SIGTERM).
    fn terminate(&mut self) {
        self.guard.signal(libc::SIGTERM);
    }

    /// Waits at most `timeout` (or until `cancel`) for it to end, kills it
    /// otherwise, and returns everything it printed.
    fn finish(mut self, timeout: Duration, cancel: &AtomicBool) -> Finished {
        let end = Instant::now() + timeout;
        let status = loop {
            if let Some(s) = self.guard.try_wait() {
                break Some(s);
            }
            if Instant::now() >= end || cancel.load(Ordering::Relaxed) {
                self.guard.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        for r in std::mem::take(&mut self.readers) {
            let _ = r.join();
        }
        while let Ok(l) = self.lines.try_recv() {
            self.take(l);
        }
        Finished {
            status,
            stdout: self.stdout.join("\n"),
            stderr: self.stderr.join("\n"),
        }
    }
}

/// Runs a command to its end; an error carries its stderr.
fn sh(mut cmd: Command) -> anyhow::Result<()> {
    bricks_netns::run(&mut cmd)
        .map(drop)
        .map_err(anyhow::Error::msg)
}

/// PIDs of the kernel threads named `napi/IFNAME-...`.
fn napi_threads(ifname: &str) -> BTreeSet<u32> {
    let prefix = format!("napi/{ifname}-");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim_end().starts_with(&prefix))
        })
        .collect()
}

/// The machine the bench runs on.
#[derive(Debug, Clone)]
pub struct Machine {
    /// CPUs this process may use.
    cpus: Vec<usize>,
    model: String,
    kernel: String,
}

impl Machine {
    /// One line for a report: CPU count and model, kernel.
    pub fn describe(&self) -> String {
        let n = self.cpus.len();
        format!(
            "{n} CPU{} ({}), Linux {}",
            if n == 1 { "" } else { "s" },
            self.model,
            self.kernel
        )
    }

    /// The CPUs this process may use, the CPU model and the kernel.
    pub fn probe() -> Machine {
        let mut cpus: Vec<usize> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.id)
            .collect();
        if cpus.is_empty() {
            cpus.push(0);
        }
        let model = crate::measure::cpu_model();
        let kernel = crate::measure::kernel_release();
        Machine {
            cpus,
            model,
            kernel,
        }
    }

    /// Generator, sink and the sink's receive NAPI threads.
    fn tester_cpu(&self) -> usize {
        self.cpus[0]
    }

    /// The router's CPUs.
    fn router_cpus(&self, wide: bool) -> Vec<usize> {
        if wide || self.cpus.len() == 1 {
            self.cpus.clone()
        } else {
            vec![self.cpus[self.cpus.len() - 1]]
        }
    }
}

fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The test network and everything the runs need to know about it.
struct Testbed {
    net: Network,
    exe: String,
    machine: Machine,
    r0_mac: String,
    r1_mac: String,
    s0_mac: String,
    /// r0's NAPI threads (the router's receive work).
    r0_napi: Vec<u32>,
    cancel: Arc<AtomicBool>,
    flows: u32,
}

impl Testbed {
    fn build(machine: Machine, flows: u32, cancel: Arc<AtomicBool>) -> anyhow::Result<Testbed> {
        let Line {
            net,
            r0_mac,
            r1_mac,
            s0_mac,
            r0_napi,
            s0_napi,
        } = Line::build("io", "r")?;
        let e = anyhow::Error::msg;
        net.add_addr("gen", "g0", G0_CIDR).map_err(e)?;
        net.add_addr("r", "r0", R0_CIDR).map_err(e)?;
        net.add_addr("r", "r1", R1_CIDR).map_err(e)?;
        net.add_addr("sink", "s0", S0_CIDR).map_err(e)?;
        // ARP never interferes with the Linux subject.
        let r = net.ns_name("r");
        let neigh = [
            "-n",
            &r,
            "neigh",
            "replace",
            S0_ADDR,
            "lladdr",
            &s0_mac,
            "dev",
            "r1",
            "nud",
            "permanent",
        ];
        bricks_netns::ip(&neigh).map_err(e)?;
        pin(&s0_napi, &[machine.tester_cpu()])?;
        let exe = std::env::current_exe()
            .context("finding the bricks executable")?
            .display()
            .to_string();
        Ok(Testbed {
            net,
            exe,
            machine,
            r0_mac,
            r1_mac,
            s0_mac,
            r0_napi,
            cancel,
            flows,
        })
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// `nice -n -20 taskset -c CPUS bricks ARGS...` in namespace `ns`
    /// (each program execs the next, so the PID is bricks').
    fn bricks(&self, ns: &str, cpus: &[usize], args: &[&str]) -> Command {
        let list = cpu_list(cpus);
        let mut argv = vec!["nice", "-n", NICE, "taskset", "-c", &list, &self.exe];
        argv.extend_from_slice(args);
        self.net.exec(ns, &argv)
    }

    /// The sink, started before the generator; runs at most `secs`.
    fn sink(&self, secs: f64) -> anyhow::Result<Proc> {
        let d = format!("{secs:.3}");
        Proc::spawn(&mut self.bricks(
            "sink",
            &[self.machine.tester_cpu()],
            &["sink", "s0", "--duration", &d, "--json"],
        ))
    }

    /// The generator: 64-byte UDP frames to the sink's address through
    /// r0, for `secs`, at `rate` or as fast as it can.
    fn gen(&self, secs: f64, rate: Option<u64>) -> anyhow::Result<Proc> {
        let d = format!("{secs:.3}");
        let flows = self.flows.to_string();
        let rate = rate.map(|r| r.to_string());
        let threads = QUEUES.to_string();
        let mut args = vec![
            "gen",
            "g0",
            // One worker per queue of g0, so both of r0's queues get
            // traffic.
            "--threads",
            &threads,
            "--duration",
            &d,
            "--src",
            G0_ADDR,
            "--dst",
            S0_ADDR,
            "--dst-mac",
            &self.r0_mac,
            "--flows",
            &flows,
            "--size",
            "64",
            "--backend",
            "xdp",
            "--json",
        ];
        if let Some(r) = &rate {
            args.extend_from_slice(&["--rate", r]);
        }
        Proc::spawn(&mut self.bricks("gen", &[self.machine.tester_cpu()], &args))
    }

    /// Whether `ifname` in `ns` carries an XDP program.
    fn has_xdp(&self, ns: &str, ifname: &str) -> bool {
        self.net
            .exec(ns, &["ip", "-d", "link", "show", "dev", ifname])
            .stdin(Stdio::null())
            .output()
            .is_ok_and(|o| {
                let t = String::from_utf8_lossy(&o.stdout);
                t.contains("prog/xdp") || t.contains(" xdp")
            })
    }

    /// Starts what forwards for `s` and waits until it does.
    fn start_router(&self, s: &Subject, cpus: &[usize]) -> anyhow::Result<Option<Proc>> {
        self.net
            .sysctl(
                "r",
                "net.ipv4.ip_forward",
                if s.fwd == Forwarder::Linux { "1" } else { "0" },
            )
            .map_err(anyhow::Error::msg)?;
        let (mut p, ready): (Proc, Ready) = match &s.fwd {
            Forwarder::Linux => return Ok(None),
            Forwarder::XdpRedirect => (
                Proc::spawn(&mut self.bricks(
                    "r",
                    cpus,
                    &["bench", "io", "--xdp-hold", "redirect:r0:r1"],
                ))?,
                |out, _| out.iter().any(|l| l.starts_with("ready")),
            ),
            Forwarder::Bricks(b) => {
                let conf = bricks_config(b, &self.r1_mac, &self.s0_mac);
                let threads = b.threads.to_string();
                let nap = b.idle_nap_us.map(|n| n.to_string());
                let mut args = vec![
                    "run",
                    "-e",
                    &conf,
                    "--threads",
                    &threads,
                    "--mode",
                    b.mode,
                    "--stats-json",
                    "--stats-interval",
                    "86400",
                ];
                if let Some(n) = &nap {
                    args.extend_from_slice(&["--idle-nap", n]);
                }
                (
                    Proc::spawn(&mut self.bricks("r", cpus, &args))?,
                    |_, err| {
                        // Both interfaces are open once both report lines are
                        // out; the workers start right after.
                        err.iter().any(|l| l.starts_with("r0: "))
                            && err.iter().any(|l| l.starts_with("r1: "))
                    },
                )
            }
        };
        if !p.wait_ready(Duration::from_secs(20), &self.cancel, ready) {
            let f = p.finish(Duration::from_secs(2), &self.cancel);
            bail!("the router did not start: {}", f.why());
        }
        std::thread::sleep(Duration::from_millis(300));
        Ok(Some(p))
    }

    /// One run of `s`.
    fn run(&self, s: &Subject, secs: f64, rate: Option<u64>) -> anyhow::Result<RunResult> {
        let load = load_average();
        let cpus = self.machine.router_cpus(s.wide);
        pin(&self.r0_napi, &cpus)?;
        let router = self.start_router(s, &cpus)?;
        // The sink is stopped once the generator is done; its own
        // duration is only a bound.
        let mut sink = self.sink(secs + 30.0)?;
        // Let the sink open its sockets before anything is sent.
        std::thread::sleep(SINK_START);
        // XDP_REDIRECT into a veth needs an XDP program on the peer; the
        // sink's AF_XDP program is one, AF_PACKET would leave none.
        let mut pass = None;
        if s.fwd == Forwarder::XdpRedirect && !self.has_xdp("sink", "s0") {
            let mut p = Proc::spawn(&mut self.bricks(
                "sink",
                &[self.machine.tester_cpu()],
                &["bench", "io", "--xdp-hold", "pass:s0"],
            ))?;
            if !p.wait_ready(Duration::from_secs(10), &self.cancel, |o, _| {
                o.iter().any(|l| l.starts_with("ready"))
            }) {
                bail!(
                    "cannot attach XDP_PASS to s0: {}",
                    p.finish(Duration::from_secs(1), &self.cancel).why()
                );
            }
            pass = Some(p);
        }
        let gen = self
            .gen(secs, rate)?
            .finish(Duration::from_secs_f64(secs + 30.0), &self.cancel);
        // Frames still in queues and rings arrive within microseconds to
        // a few milliseconds; the rest is lost.
        std::thread::sleep(DRAIN);
        sink.terminate();
        let sink = sink.finish(Duration::from_secs(15), &self.cancel);
        let router = router.map(|mut r| {
            r.terminate();
            r.finish(Duration::from_secs(15), &self.cancel)
        });
        drop(pass);
        if self.cancelled() {
            bail!("interrupted");
        }
        let mut notes = Vec::new();
        let mut counters = None;
        if let Some(r) = &router {
            if !r.ok() {
                bail!("the router failed: {}", r.why());
            }
            counters = parse_router(&r.stdout);
            for l in r.stderr.lines().chain(r.stdout.lines()) {
                if l.starts_with("r0: ")
                    || l.starts_with("r1: ")
                    || l.starts_with("ready")
                    || l.starts_with("dispatcher:")
                {
                    notes.push(l.to_string());
                }
            }
        }
        anyhow::ensure!(gen.ok(), "bricks gen failed: {}", gen.why());
        anyhow::ensure!(sink.ok(), "bricks sink failed: {}", sink.why());
        let gen_r = parse_gen(&gen.stdout)
            .with_context(|| format!("bricks gen printed no report: {}", gen.stdout))?;
        let sink_r = parse_sink(&sink.stdout)
            .with_context(|| format!("bricks sink printed no report: {}", sink.stdout))?;
        Ok(RunResult {
            gen: gen_r,
            sink: sink_r,
            router: counters,
            notes,
            load,
        })
    }
}

/// The benches' network: `gen [g0] -- [r0] MID [r1] -- [s0] sink`, three
/// namespaces without IPv6 (no router solicitations or MLD: every frame
/// the sink sees comes from the generator), two veth links of [`QUEUES`]
/// queues, no reverse-path filter in the middle, and threaded NAPI on r0
/// and s0 (their thread IDs, for pinning). Networks of earlier runs that
/// were killed are deleted first.
pub(crate) struct Line {
    pub(crate) net: Network,
    pub(crate) r0_mac: String,
    pub(crate) r1_mac: String,
    pub(crate) s0_mac: String,
    pub(crate) r0_napi: Vec<u32>,
    pub(crate) s0_napi: Vec<u32>,
}

impl Line {
    pub(crate) fn build(tag: &str, mid: &str) -> anyhow::Result<Line> {
        clean_stale_networks(&format!("{tag}-"));
        let mut net = Network::new(&Network::unique_prefix(tag)).map_err(anyhow::Error::msg)?;
        let e = anyhow::Error::msg;
        for ns in ["gen", mid, "sink"] {
            net.add_namespace(ns).map_err(e)?;
            net.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
                .map_err(e)?;
            net.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
                .map_err(e)?;
        }
        net.add_link("gen", "g0", mid, "r0", QUEUES).map_err(e)?;
        net.add_link(mid, "r1", "sink", "s0", QUEUES).map_err(e)?;
        for k in ["all", "default", "r0", "r1"] {
            net.sysctl(mid, &format!("net.ipv4.conf.{k}.rp_filter"), "0")
                .map_err(e)?;
        }
        let r0_mac = net.mac(mid, "r0").map_err(e)?;
        let r1_mac = net.mac(mid, "r1").map_err(e)?;
        let s0_mac = net.mac("sink", "s0").map_err(e)?;
        // Senders hand over finished frames, one per skb (no TSO), so that
        // the receiving veth takes them through NAPI (veth_xmit uses NAPI
        // only for skbs GRO could handle).
        for (ns, ifname) in [("gen", "g0"), (mid, "r1")] {
            sh(net.exec(
                ns,
                &[
                    "ethtool", "-K", ifname, "tx", "off", "tso", "off", "gso", "off",
                ],
            ))?;
        }
        let r0_napi = threaded_napi(&net, mid, "r0")?;
        let s0_napi = threaded_napi(&net, "sink", "s0")?;
        Ok(Line {
            net,
            r0_mac,
            r1_mac,
            s0_mac,
            r0_napi,
            s0_napi,
        })
    }
}

/// Turns on GRO (so that a plain veth receives through NAPI) and threaded
/// NAPI on `ifname`, at real-time priority (see the module doc); returns
/// the NAPI threads' PIDs.
///
/// The threads are told apart from other namespaces' interfaces of the
/// same name by appearing when this interface's `threaded` is set.
fn threaded_napi(net: &Network, ns: &str, ifname: &str) -> anyhow::Result<Vec<u32>> {
    sh(net.exec(ns, &["ethtool", "-K", ifname, "gro", "on"]))?;
    let before = napi_threads(ifname);
    let set = format!("echo 1 > /sys/class/net/{ifname}/threaded");
    sh(net.exec(ns, &["sh", "-c", &set]))
        .with_context(|| format!("making {ifname}'s NAPI threaded"))?;
    let mut new: Vec<u32> = Vec::new();
    // The threads are made before the write returns; a moment's grace for
    // a slow machine.
    for _ in 0..50 {
        new = napi_threads(ifname).difference(&before).copied().collect();
        if new.len() >= QUEUES as usize {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    anyhow::ensure!(
        new.len() == QUEUES as usize,
        "expected {QUEUES} NAPI threads for {ifname}, found {} new ones",
        new.len()
    );
    for pid in &new {
        let mut c = Command::new("chrt");
        c.args(["-f", "-p", NAPI_PRIORITY, &pid.to_string()]);
        sh(c).with_context(|| format!("making NAPI thread {pid} SCHED_FIFO"))?;
    }
    Ok(new)
}

/// Pins kernel threads to `cpus`.
pub(crate) fn pin(pids: &[u32], cpus: &[usize]) -> anyhow::Result<()> {
    let list = cpu_list(cpus);
    for pid in pids {
        let mut c = Command::new("taskset");
        c.args(["-pc", &list, &pid.to_string()]);
        sh(c).with_context(|| format!("pinning NAPI thread {pid}"))?;
    }
    Ok(())
}

/// Deletes the networks of earlier runs that were killed before they could
/// (their prefix names a process that is gone).
fn clean_stale_networks(tag: &str) {
    let Ok(names) = bricks_netns::list_namespaces() else {
        return;
    };
    for ns in names {
        let Some(rest) = ns.strip_prefix('b') else {
            continue;
        };
        let Some((pid, _)) = rest.split_once(tag) else {
            continue;
        };
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = bricks_netns::ip(&["netns", "del", &ns]);
        }
    }
}

/// All runs of one subject.
struct Measured {
    subject: Subject,
    cpus: Vec<usize>,
    runs: Vec<RunResult>,
    errors: Vec<String>,
    search: Option<Search>,
}

/// The search for a subject's loss-free rate.
#[derive(Debug, Clone, Default)]
struct Search {
    /// (rate asked of the generator in packets/s, the run), in order.
    probes: Vec<(u64, RunResult)>,
    /// The highest rate sent with at most the allowed loss (Mpps), and
    /// the loss then.
    best: Option<(f64, f64)>,
    /// The subject lost no more than allowed even with the generator at
    /// full speed: `best` is what the generator could send, a lower bound
    /// of what the subject can forward.
    tester_bound: bool,
}

/// Bisects the offered rate between nothing and what the generator
/// managed at full speed, starting at the rate the subject delivered
/// then; a probe passes when at most `max_loss` percent is lost. The
/// result is what the generator really sent in the best passing probe.
fn search(
    bed: &Testbed,
    m: &Measured,
    secs: f64,
    steps: u32,
    max_loss: f64,
) -> anyhow::Result<Search> {
    let mut out = Search::default();
    let (Some(delivered), Some(offered)) = (m.mpps(), m.spread(RunResult::offered_mpps)) else {
        return Ok(out);
    };
    if let Some(loss) = m.spread(RunResult::loss_pct) {
        if loss.median <= max_loss {
            out.best = Some((offered.median, loss.median));
            out.tester_bound = true;
            return Ok(out);
        }
    }
    let mut lo = 0.0f64;
    let mut hi = offered.max.max(delivered.median) * 1e6;
    let mut rate = (delivered.median * 1e6).clamp(1.0, hi);
    for _ in 0..steps {
        if bed.cancelled() {
            break;
        }
        let r = bed.run(&m.subject, secs, Some(rate.round() as u64))?;
        let pass = r.loss_pct() <= max_loss && r.gen.sent > 0;
        if pass {
            lo = rate;
            if out.best.is_none_or(|(b, _)| r.offered_mpps() > b) {
                out.best = Some((r.offered_mpps(), r.loss_pct()));
            }
        } else {
            hi = rate;
        }
        out.probes.push((rate.round() as u64, r));
        rate = (lo + hi) / 2.0;
    }
    Ok(out)
}

/// Median, least and most of one figure over the runs.
#[derive(Debug, Clone, Copy)]
struct Spread {
    median: f64,
    min: f64,
    max: f64,
}

impl Measured {
    fn spread(&self, f: impl Fn(&RunResult) -> f64) -> Option<Spread> {
        let mut v: Vec<f64> = self.runs.iter().map(f).collect();
        if v.is_empty() {
            return None;
        }
        let median = median(&mut v);
        Some(Spread {
            median,
            min: v[0],
            max: v[v.len() - 1],
        })
    }

    fn mpps(&self) -> Option<Spread> {
        self.spread(|r| r.sink.mpps)
    }

    fn latency_us(&self, i: usize) -> Option<f64> {
        self.spread(|r| r.sink.latency[i] as f64 / 1e3)
            .map(|s| s.median)
    }
}

/// A ratio of two subjects' medians and what it is compared with.
struct Ratio {
    name: &'static str,
    top: &'static str,
    bottom: &'static str,
    /// The issue's goal: at least this.
    goal: Option<f64>,
    /// What the papers measured, in words.
    paper: &'static str,
}

const RATIOS: &[Ratio] = &[
    Ratio {
        name: "bricks / Linux",
        top: "bricks",
        bottom: "linux",
        goal: Some(2.0),
        paper: "",
    },
    Ratio {
        name: "bricks without Queue / Linux",
        top: "bricks-push",
        bottom: "linux",
        goal: None,
        paper: "",
    },
    Ratio {
        name: "bricks / XDP_REDIRECT",
        top: "bricks",
        bottom: "xdp-redirect",
        goal: Some(0.67),
        paper: "",
    },
    Ratio {
        name: "kp 32 / 1 (kn 16)",
        top: "bricks",
        bottom: "bricks-kp1",
        goal: None,
        paper: "",
    },
    Ratio {
        name: "kp 32 / 1 (kn 1)",
        top: "bricks-kn1",
        bottom: "bricks-nobatch",
        goal: None,
        paper: "RouteBricks Table 1: 3.40 (4.97 / 1.46 Gbps)",
    },
    Ratio {
        name: "kn 16 / 1 (kp 32)",
        top: "bricks",
        bottom: "bricks-kn1",
        goal: None,
        paper: "RouteBricks Table 1: 1.97 (9.77 / 4.97 Gbps)",
    },
    Ratio {
        name: "kp 32, kn 16 / no batching",
        top: "bricks",
        bottom: "bricks-nobatch",
        goal: None,
        paper: "RouteBricks Table 1: 6.7 (9.77 / 1.46 Gbps)",
    },
    Ratio {
        name: "per-core / pipeline (2 CPUs)",
        top: "bricks-2w",
        bottom: "bricks-pipeline",
        goal: None,
        paper: "RouteBricks Fig. 6: 1.4 (1.7 / 1.2 Gbps, shared L3)",
    },
    Ratio {
        name: "per-core queues / serial (2 CPUs)",
        top: "bricks-2w",
        bottom: "bricks-serial",
        goal: None,
        paper: "NIC paper Fig. 2: more than 3",
    },
    Ratio {
        name: "2 / 1 workers",
        top: "bricks-2w",
        bottom: "bricks",
        goal: None,
        paper: "",
    },
    Ratio {
        name: "AF_XDP / AF_PACKET",
        top: "bricks",
        bottom: "bricks-packet",
        goal: None,
        paper: "",
    },
];

fn find<'a>(m: &'a [Measured], name: &str) -> Option<&'a Measured> {
    m.iter().find(|x| x.subject.name == name)
}

/// Which figure of a subject a ratio compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Figure {
    /// The median rate delivered while the generator sends flat out.
    Overload,
    /// The highest rate forwarded with at most the allowed loss.
    LossFree,
}

impl Measured {
    fn figure(&self, f: Figure) -> Option<f64> {
        match f {
            Figure::Overload => self.mpps().map(|s| s.median),
            Figure::LossFree => self.search.as_ref()?.best.map(|(r, _)| r),
        }
    }
}

fn ratio_value(m: &[Measured], r: &Ratio, f: Figure) -> Option<f64> {
    let top = find(m, r.top)?.figure(f)?;
    let bottom = find(m, r.bottom)?.figure(f)?;
    (bottom > 0.0).then(|| top / bottom)
}

/// How a loss-free ratio relates to the true one when one side is only a
/// lower bound (the generator set it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    Exact,
    /// The true ratio is at least this.
    AtLeast,
    /// The true ratio is at most this.
    AtMost,
    /// Both sides are lower bounds: the ratio says nothing.
    Unknown,
}

impl Bound {
    fn of(m: &[Measured], r: &Ratio) -> Bound {
        let lower = |name| {
            find(m, name)
                .and_then(|x| x.search.as_ref())
                .is_some_and(|s| s.tester_bound)
        };
        match (lower(r.top), lower(r.bottom)) {
            (false, false) => Bound::Exact,
            (true, false) => Bound::AtLeast,
            (false, true) => Bound::AtMost,
            (true, true) => Bound::Unknown,
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Bound::Exact => "",
            Bound::AtLeast => ">=",
            Bound::AtMost => "<=",
            Bound::Unknown => "~",
        }
    }

    /// Whether a ratio of `v` meets "at least `goal`": `None` when the
    /// bound leaves it open.
    fn meets(self, v: f64, goal: f64) -> Option<bool> {
        match self {
            Bound::Exact => Some(v >= goal),
            Bound::AtLeast => (v >= goal).then_some(true),
            Bound::AtMost => (v < goal).then_some(false),
            Bound::Unknown => None,
        }
    }
}

/// Holds an XDP program in this process's namespace until killed (the
/// kernel detaches it when the process dies).
fn xdp_hold(spec: &str, stop_on_signals: StopOnSignals) -> anyhow::Result<ExitCode> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (held, mode): (Box<dyn std::any::Any>, String) = match parts.as_slice() {
        ["redirect", from, to] => {
            let r = bricks_io::xdp::redirect(from, to).map_err(|e| anyhow::anyhow!("{e}"))?;
            let mode = match r.fallback_reason() {
                Some(why) => format!("{} ({why})", r.mode()),
                None => r.mode().to_string(),
            };
            (Box::new(r), mode)
        }
        ["pass", ifname] => {
            let p = bricks_io::xdp::attach_pass(ifname, bricks_io::xdp::XdpMode::Auto)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let mode = p.mode().to_string();
            (Box::new(p), mode)
        }
        _ => bail!("--xdp-hold {spec}: expected redirect:FROM:TO or pass:IF"),
    };
    let stop = stop_on_signals()?;
    println!("ready: XDP {spec} attached, {mode}");
    std::io::stdout().flush()?;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(held);
    Ok(ExitCode::SUCCESS)
}

/// Runs `bricks bench io`.
pub fn bench(a: &IoArgs, stop_on_signals: StopOnSignals) -> anyhow::Result<ExitCode> {
    if let Some(spec) = &a.xdp_hold {
        return xdp_hold(spec, stop_on_signals);
    }
    anyhow::ensure!(
        a.seconds.is_finite() && a.seconds > 0.0,
        "--seconds must be a positive number"
    );
    anyhow::ensure!(a.runs >= 1, "--runs must be at least 1");
    anyhow::ensure!(a.flows >= 1, "--flows must be at least 1");
    anyhow::ensure!(a.latency_rate >= 1, "--latency-rate must be at least 1");
    anyhow::ensure!(
        a.max_loss.is_finite() && (0.0..100.0).contains(&a.max_loss),
        "--max-loss must be a percentage below 100"
    );
    let chosen = select(subjects(a.latency_rate), &a.only)?;
    if !bricks_netns::is_root() {
        eprintln!(
            "bricks bench io needs root: it builds network namespaces joined by veth links, \
             attaches XDP programs and pins kernel threads (CAP_NET_ADMIN, CAP_SYS_ADMIN, \
             CAP_BPF). Run it as root: sudo {} bench io",
            std::env::args().next().unwrap_or_else(|| "bricks".into())
        );
        return Ok(ExitCode::from(CANNOT_RUN));
    }
    for (tool, hint) in [
        ("ip", "iproute2"),
        ("ethtool", "ethtool"),
        ("taskset", "util-linux"),
        ("chrt", "util-linux"),
    ] {
        let found = Command::new(tool)
            .arg(if tool == "ip" { "-V" } else { "--version" })
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            eprintln!("bricks bench io needs `{tool}` (apt-get install {hint})");
            return Ok(ExitCode::from(CANNOT_RUN));
        }
    }
    let cancel = stop_on_signals()?;
    let machine = Machine::probe();
    let load_start = load_average();
    let bed = Testbed::build(machine.clone(), a.flows, cancel.clone())
        .context("building the test network")?;
    if !a.json {
        print_header(a, &machine, load_start);
    }
    let mut measured: Vec<Measured> = chosen
        .into_iter()
        .map(|s| Measured {
            cpus: machine.router_cpus(s.wide),
            subject: s,
            runs: Vec::new(),
            errors: Vec::new(),
            search: None,
        })
        .collect();
    let total = measured.len() * a.runs;
    let mut done = 0;
    let progress = std::io::stderr().is_terminal();
    for run in 0..a.runs {
        for m in measured.iter_mut() {
            if bed.cancelled() {
                break;
            }
            done += 1;
            if progress {
                eprint!(
                    "\r[{done}/{total}] run {} of {}: {:<22}",
                    run + 1,
                    a.runs,
                    m.subject.name
                );
                let _ = std::io::stderr().flush();
            }
            match bed.run(&m.subject, a.seconds, m.subject.rate) {
                Ok(r) => m.runs.push(r),
                Err(e) => m.errors.push(format!("{e:#}")),
            }
        }
    }
    let searched: Vec<usize> = (0..measured.len())
        .filter(|&i| !measured[i].subject.is_latency() && !measured[i].runs.is_empty())
        .collect();
    if a.search_steps > 0 {
        let probe_secs = a.seconds.min(3.0);
        for (n, &i) in searched.iter().enumerate() {
            if bed.cancelled() {
                break;
            }
            if progress {
                eprint!(
                    "\r[{}/{}] loss-free rate of {:<22}",
                    n + 1,
                    searched.len(),
                    measured[i].subject.name
                );
                let _ = std::io::stderr().flush();
            }
            match search(&bed, &measured[i], probe_secs, a.search_steps, a.max_loss) {
                Ok(s) => measured[i].search = Some(s),
                Err(e) => measured[i]
                    .errors
                    .push(format!("searching the loss-free rate: {e:#}")),
            }
        }
    }
    if progress {
        eprint!("\r{:60}\r", "");
    }
    drop(bed);
    if cancel.load(Ordering::Relaxed) {
        eprintln!("interrupted; the test network is deleted");
        return Ok(ExitCode::from(130));
    }
    let load_end = load_average();
    if a.json {
        println!(
            "{}",
            report_json(a, &machine, &measured, load_start, load_end)
        );
    } else {
        print!("{}", report_text(a, &measured, load_end));
    }
    let failed = measured.iter().any(|m| m.runs.is_empty());
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn placement(machine: &Machine) -> String {
    let tester = machine.tester_cpu();
    let narrow = cpu_list(&machine.router_cpus(false));
    let wide = cpu_list(&machine.router_cpus(true));
    let mut s = format!(
        "generator and sink (and s0's receive NAPI threads) on CPU {tester}; the router (and \
         r0's receive NAPI threads) on CPU {narrow}, on CPUs {wide} where marked *; NAPI \
         threads SCHED_FIFO {NAPI_PRIORITY}, as softirq would preempt user space"
    );
    if machine.cpus.len() <= 2 {
        let _ = write!(
            s,
            ". With {} CPU{}, generator, router and sink share the machine: the figures are \
             bounded by it, not by a line rate",
            machine.cpus.len(),
            if machine.cpus.len() == 1 { "" } else { "s" }
        );
    }
    s
}

fn print_header(a: &IoArgs, machine: &Machine, load: f64) {
    println!(
        "bricks bench io: 64-byte UDP frames in {} flows, gen g0 -> r0 router r1 -> s0 sink \
         (veth pairs, {QUEUES} queues each); {} s per run, median of {} run{}",
        a.flows,
        a.seconds,
        a.runs,
        if a.runs == 1 { "" } else { "s" }
    );
    println!(
        "machine: {} CPU{} ({}), Linux {}; load average {load:.2} at start",
        machine.cpus.len(),
        if machine.cpus.len() == 1 { "" } else { "s" },
        machine.model,
        machine.kernel
    );
    println!("placement: {}", placement(machine));
    println!();
}

fn report_text(a: &IoArgs, measured: &[Measured], load_end: f64) -> String {
    let mut o = String::new();
    let searched = measured.iter().any(|m| m.search.is_some());
    // Ratios to the baselines use the loss-free rates where there are
    // some: at full load a router that lets the kernel's receive path eat
    // its CPU can deliver less than it does at a lower rate.
    let main = if searched {
        Figure::LossFree
    } else {
        Figure::Overload
    };
    let base = |name| find(measured, name).and_then(|m| m.figure(main));
    let (linux, xdp) = (base("linux"), base("xdp-redirect"));
    let throughput: Vec<&Measured> = measured
        .iter()
        .filter(|m| !m.subject.is_latency())
        .collect();
    if !throughput.is_empty() {
        let _ = writeln!(
            o,
            "{:<55} {:<42} {}",
            "",
            "generator at full speed",
            if searched {
                format!("loss-free (<= {}% lost)", a.max_loss)
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            o,
            "{:<16} {:<38} {:>6} {:>13} {:>8} {:>7}   {:>9} {:>7} {:>7}",
            "subject", "", "Mpps", "min..max", "offered", "loss %", "Mpps", "x Linux", "x XDP"
        );
        for m in &throughput {
            let label = format!(
                "{}{}",
                m.subject.label,
                if m.subject.wide { " *" } else { "" }
            );
            let Some(mpps) = m.mpps() else {
                let _ = writeln!(
                    o,
                    "{:<16} {label:<38} failed: {}",
                    m.subject.name,
                    m.errors.first().map_or("", String::as_str)
                );
                continue;
            };
            let offered = m.spread(RunResult::offered_mpps).map_or(0.0, |s| s.median);
            let loss = m.spread(RunResult::loss_pct).map_or(0.0, |s| s.median);
            let free = match &m.search {
                Some(Search {
                    best: Some((r, _)),
                    tester_bound,
                    ..
                }) => format!("{}{r:.3}", if *tester_bound { ">=" } else { "" }),
                Some(_) => "none".into(),
                None => "-".into(),
            };
            let x = |b: Option<f64>| match (m.figure(main), b) {
                (Some(v), Some(b)) if b > 0.0 => format!("{:.2}", v / b),
                _ => "-".into(),
            };
            let _ = writeln!(
                o,
                "{:<16} {label:<38} {:>6.3} {:>13} {:>8.3} {:>7.1}   {:>9} {:>7} {:>7}",
                m.subject.name,
                mpps.median,
                format!("{:.3}..{:.3}", mpps.min, mpps.max),
                offered,
                loss,
                free,
                x(linux),
                x(xdp),
            );
        }
        let _ = writeln!(
            o,
            "Mpps: frames the sink received per second (first to last); offered: frames the \
             generator sent per second; loss: sent and not received. Loss-free: the highest \
             rate a {}-step search sent with at most {}% lost (>=: nothing more was lost at \
             full speed, so the generator, not the subject, set the figure); x Linux, x XDP: \
             ratios of {}.",
            a.search_steps,
            a.max_loss,
            if searched {
                "loss-free rates"
            } else {
                "medians at full speed"
            }
        );
        let lines: Vec<String> = RATIOS
            .iter()
            .filter_map(|r| {
                let over = ratio_value(measured, r, Figure::Overload);
                let free = ratio_value(measured, r, Figure::LossFree);
                let v = if searched { free } else { over }?;
                let bound = if searched {
                    Bound::of(measured, r)
                } else {
                    Bound::Exact
                };
                let free_text = free.map_or("-".to_string(), |x| {
                    format!("{}{x:.2}", Bound::of(measured, r).prefix())
                });
                let over_text = over.map_or("-".to_string(), |x| format!("{x:.2}"));
                let mut l = format!("  {:<34} {free_text:>9} {over_text:>9}", r.name);
                if let Some(g) = r.goal {
                    let _ = write!(
                        l,
                        "   goal >= {g}: {}",
                        match bound.meets(v, g) {
                            Some(true) => "met",
                            Some(false) => "NOT met",
                            None => "open (the generator bounds both sides)",
                        }
                    );
                }
                if !r.paper.is_empty() {
                    let _ = write!(l, "   {}", r.paper);
                }
                Some(l)
            })
            .collect();
        if !lines.is_empty() {
            let _ = writeln!(
                o,
                "\n{:<36} {:>9} {:>9}",
                "ratios", "loss-free", "full load"
            );
            for l in lines {
                let _ = writeln!(o, "{l}");
            }
        }
    }
    let latency: Vec<&Measured> = measured.iter().filter(|m| m.subject.is_latency()).collect();
    if !latency.is_empty() {
        let _ = writeln!(
            o,
            "\nlatency at {} packets/s, one way from generator to sink (us, medians over runs)",
            a.latency_rate
        );
        let _ = writeln!(
            o,
            "{:<20} {:<34} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7}",
            "subject", "", "p50", "p90", "p99", "p99.9", "max", "loss %"
        );
        for m in &latency {
            if m.runs.is_empty() {
                let _ = writeln!(
                    o,
                    "{:<20} {:<34} failed: {}",
                    m.subject.name,
                    m.subject.label,
                    m.errors.first().map_or("", String::as_str)
                );
                continue;
            }
            let p = |i| m.latency_us(i).unwrap_or(f64::NAN);
            let loss = m.spread(RunResult::loss_pct).map_or(0.0, |s| s.median);
            let _ = writeln!(
                o,
                "{:<20} {:<34} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>7.2}",
                m.subject.name,
                m.subject.label,
                p(0),
                p(1),
                p(2),
                p(3),
                p(4),
                loss
            );
        }
    }
    let errors: Vec<String> = measured
        .iter()
        .flat_map(|m| {
            m.errors
                .iter()
                .map(move |e| format!("  {}: {e}", m.subject.name))
        })
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(o, "\nfailed runs");
        for e in errors {
            let _ = writeln!(o, "{e}");
        }
    }
    let loads: Vec<f64> = measured
        .iter()
        .flat_map(|m| m.runs.iter().map(|r| r.load))
        .collect();
    if !loads.is_empty() {
        let lo = loads.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = loads.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let _ = writeln!(
            o,
            "\nload average at the start of the runs: {lo:.2} to {hi:.2}; {load_end:.2} at the end \
             (the bench's own processes count; well above 2, other jobs competed with it)"
        );
    }
    o
}

fn report_json(
    a: &IoArgs,
    machine: &Machine,
    measured: &[Measured],
    load_start: f64,
    load_end: f64,
) -> serde_json::Value {
    let subjects: Vec<serde_json::Value> = measured
        .iter()
        .map(|m| {
            let sp = |s: Option<Spread>| {
                s.map(|s| serde_json::json!({"median": s.median, "min": s.min, "max": s.max}))
            };
            let runs: Vec<serde_json::Value> = m
                .runs
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "sent": r.gen.sent,
                        "offered_mpps": r.offered_mpps(),
                        "received": r.sink.received,
                        "mpps": r.sink.mpps,
                        "loss_pct": r.loss_pct(),
                        "latency_ns": {
                            "p50": r.sink.latency[0],
                            "p90": r.sink.latency[1],
                            "p99": r.sink.latency[2],
                            "p999": r.sink.latency[3],
                            "max": r.sink.latency[4],
                        },
                        "router": r.router.map(|c| serde_json::json!({
                            "received": c.received,
                            "ring_drops": c.ring_drops,
                            "queue_drops": c.queue_drops,
                            "sent": c.sent,
                            "tx_drops": c.tx_drops,
                        })),
                        "notes": r.notes,
                        "load_average": r.load,
                    })
                })
                .collect();
            let lat = |i| m.latency_us(i);
            serde_json::json!({
                "name": m.subject.name,
                "label": m.subject.label,
                "router_cpus": m.cpus,
                "rate_pps": m.subject.rate,
                "mpps": sp(m.mpps()),
                "offered_mpps": sp(m.spread(RunResult::offered_mpps)),
                "loss_pct": sp(m.spread(RunResult::loss_pct)),
                "latency_us": m.subject.is_latency().then(|| serde_json::json!({
                    "p50": lat(0), "p90": lat(1), "p99": lat(2), "p999": lat(3), "max": lat(4),
                })),
                "runs": runs,
                "loss_free": m.search.as_ref().map(|se| serde_json::json!({
                    "mpps": se.best.map(|b| b.0),
                    "tester_bound": se.tester_bound,
                    "loss_pct": se.best.map(|b| b.1),
                    "probes": se.probes.iter().map(|(rate, r)| serde_json::json!({
                        "rate_pps": rate,
                        "offered_mpps": r.offered_mpps(),
                        "mpps": r.sink.mpps,
                        "loss_pct": r.loss_pct(),
                    })).collect::<Vec<_>>(),
                })),
                "errors": m.errors,
            })
        })
        .collect();
    let ratios: Vec<serde_json::Value> = RATIOS
        .iter()
        .filter_map(|r| {
            let free = ratio_value(measured, r, Figure::LossFree);
            let over = ratio_value(measured, r, Figure::Overload);
            let v = free.or(over)?;
            let bound = if free.is_some() {
                Bound::of(measured, r)
            } else {
                Bound::Exact
            };
            Some(serde_json::json!({
                "name": r.name,
                "loss_free": free,
                "loss_free_bound": match bound {
                    Bound::Exact => "exact",
                    Bound::AtLeast => "at_least",
                    Bound::AtMost => "at_most",
                    Bound::Unknown => "unknown",
                },
                "full_load": over,
                "goal": r.goal,
                "met": r.goal.and_then(|g| bound.meets(v, g)),
                "paper": (!r.paper.is_empty()).then_some(r.paper),
            }))
        })
        .collect();
    serde_json::json!({
        "seconds": a.seconds,
        "runs": a.runs,
        "flows": a.flows,
        "frame_bytes": 64,
        "latency_rate_pps": a.latency_rate,
        "search_steps": a.search_steps,
        "max_loss_pct": a.max_loss,
        "machine": {
            "cpus": machine.cpus.len(),
            "model": machine.model,
            "kernel": machine.kernel,
            "load_average_start": load_start,
            "load_average_end": load_end,
        },
        "placement": placement(machine),
        "subjects": subjects,
        "ratios": ratios,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list(&[0, 1, 3]), "0,1,3");
    }

    #[test]
    fn the_router_configuration_checks() {
        // Bound to (empty) captures, the interfaces are not declared live,
        // so configurations with different backends can all be checked in
        // one process.
        for ifname in ["r0", "r1"] {
            bricks_io::binding::bind(
                ifname,
                bricks_io::binding::Binding::Pcap {
                    input: None,
                    output: None,
                },
            );
        }
        for s in subjects(10_000) {
            if let Forwarder::Bricks(b) = &s.fwd {
                let text = bricks_config(b, "02:00:00:00:00:01", "02:00:00:00:00:02");
                crate::core::plan(bricks_config::Source {
                    name: s.name.into(),
                    text: text.clone(),
                })
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", s.name));
                assert!(text.contains(&format!("BURST {}", b.kp)), "{text}");
            }
        }
    }

    #[test]
    fn only_selects_by_name_and_group() {
        let all = subjects(10_000);
        let n = all.len();
        let some = select(all.clone(), &["linux".into(), "bricks".into()]).unwrap();
        let names: Vec<&str> = some.iter().map(|s| s.name).collect();
        assert_eq!(names, ["linux", "bricks"]);
        let lat = select(all.clone(), &["latency".into()]).unwrap();
        assert!(!lat.is_empty() && lat.iter().all(Subject::is_latency));
        assert_eq!(select(all.clone(), &[]).unwrap().len(), n);
        let err = select(all, &["brick".into()]).unwrap_err().to_string();
        assert!(err.contains("bricks-kp1"), "{err}");
    }

    #[test]
    fn every_ratio_names_existing_subjects() {
        let all = subjects(10_000);
        for r in RATIOS {
            for n in [r.top, r.bottom] {
                assert!(all.iter().any(|s| s.name == n), "{}: {n}", r.name);
            }
        }
    }

    #[test]
    fn reports_are_read() {
        let g = parse_gen("noise\n{\"sent\":1000,\"elapsed_s\":2.0,\"drops\":5,\"mpps\":0.0005}\n")
            .unwrap();
        assert_eq!(
            g,
            GenReport {
                sent: 1000,
                elapsed: 2.0
            }
        );
        let s = parse_sink(
            "{\"packets\":990,\"probes\":990,\"duplicates\":10,\"mpps\":0.42,\
             \"latency_ns\":{\"p50\":1000,\"p90\":2000,\"p99\":3000,\"p999\":4000,\"max\":5000}}",
        )
        .unwrap();
        assert_eq!(s.received, 980);
        assert_eq!(s.latency, [1000, 2000, 3000, 4000, 5000]);
        let run = RunResult {
            gen: g,
            sink: s,
            ..Default::default()
        };
        assert!((run.loss_pct() - 2.0).abs() < 1e-9);
        assert!((run.offered_mpps() - 0.0005).abs() < 1e-12);
        let r = parse_router(
            "{\"elapsed\":1.0,\"workers\":[\
             {\"worker\":0,\"elements\":{\"rx\":{\"class\":\"FromDevice\",\"count\":10,\"ring_drops\":1},\
             \"q\":{\"drops\":2},\"tx\":{\"count\":8,\"drops\":0}}},\
             {\"worker\":1,\"elements\":{\"rx\":{\"count\":5},\"tx\":{\"count\":5,\"drops\":1}}}]}",
        )
        .unwrap();
        assert_eq!(
            r,
            RouterCounters {
                received: 15,
                ring_drops: 1,
                queue_drops: 2,
                sent: 13,
                tx_drops: 1
            }
        );
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
