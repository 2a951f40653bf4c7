//! `bricks bench ipsec`: what IPsec ESP tunnel mode (RFC 4303) costs in
//! bricks, in three sections, each printed as a table.
//!
//! **memory**: `WorkloadSource -> IPsecESPEncap -> Discard` run to
//! completion on one core, as `bricks bench core` runs its graphs, for
//! AES-128-GCM, AES-256-GCM and AES-128-CBC with HMAC-SHA1-96, with inner
//! IPv4/UDP packets of 64 and 1400 bytes and the simple IMIX. Decapsulation
//! is measured as the difference between `source -> encap -> decap ->
//! Discard` and `source -> encap -> Discard`, since a decapsulator needs
//! ESP packets made by an encapsulator with the same keys. Time per packet
//! is the median of several runs; instructions per packet come from
//! callgrind, two packet counts differenced so that start-up cancels out.
//!
//! **cores**: one SA's sequence counter (an atomic shared by every worker,
//! so that no sequence number and no GCM nonce is ever used twice) taken by
//! one worker, by two workers at once, and two workers with an SA each:
//! what the shared counter costs when it is contended.
//!
//! **veth**: conf/ipsec-gw.click as a gateway between real interfaces in
//! network namespaces, against the Linux kernel's XFRM configured with the
//! same SA, same traffic from `bricks gen`, counted where it arrives (the
//! veth's receive counter of s0, which holds the peer's address so that
//! the gateway's ARP is answered, and drops the ESP it cannot read):
//!
//! ```text
//!   gen [g0] ---- [r0] gateway [r1] ---- [s0] sink
//!   192.168.1.2   LAN            WAN     10.0.0.2
//! ```
//!
//! Each gateway gets doubling offered rates until it loses more than 1%,
//! two bisection steps, then the generator flat out; the figures are the
//! highest rate delivered and the highest sent with at most 1% lost
//! (RouteBricks' loss-free forwarding rate, with a tolerance). Linux
//! forwarding without ESP runs too: with the same generator, XFRM can
//! deliver no more than it, so it bounds the comparison when the kernel
//! has no ESP (kernels built without CONFIG_INET_ESP refuse the SA).
//! Placement is that of `bricks bench io` (see its module doc): generator
//! and the sink's receive NAPI threads on the first CPU, the gateway and
//! r0's receive NAPI threads on the last. Every run is bounded in time; the
//! network is deleted at the end, on errors and on Ctrl-C.

use crate::io::{last_json, median, pin, Line};
use crate::StopOnSignals;
use anyhow::{bail, Context as _};
use bricks_netns::{Captured, ChildGuard, Network};
use bricks_runtime::{WorkerOptions, Workers};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `bricks bench ipsec` options.
#[derive(clap::Args)]
#[command(after_help = "Names for --only: the sections memory, cores and veth; \
    in-memory workloads aes128gcm-64, aes128gcm-1400, aes128gcm-imix, aes256gcm-64, \
    aes256gcm-1400, aes128cbc-64, aes128cbc-1400, aes128cbc-imix; veth sizes veth-64, \
    veth-1400.\n\n\
    Examples:\n  \
    bricks bench ipsec\n  \
    bricks bench ipsec --only memory --no-callgrind\n  \
    bricks bench ipsec --only aes128gcm-64,cores\n  \
    sudo bricks bench ipsec --only veth-64 --seconds 1")]
pub struct IpsecArgs {
    /// Run only these sections or workloads (comma-separated; see below).
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub only: Vec<String>,
    /// Packets per timed in-memory run of 64-byte packets (1400-byte and
    /// IMIX runs take a quarter as many), and per worker in the cores
    /// section. [default: 2000000; 20000 with --quick]
    #[arg(long, value_name = "N")]
    pub packets: Option<u64>,
    /// Timed runs per figure; the median is reported. [default: 5; 1 with
    /// --quick]
    #[arg(long, value_name = "N")]
    pub runs: Option<usize>,
    /// Skip counting instructions with callgrind.
    #[arg(long)]
    pub no_callgrind: bool,
    /// Seconds the generator sends at each offered rate through the
    /// veths. [default: 2; 1 with --quick]
    #[arg(long, value_name = "SECONDS")]
    pub seconds: Option<f64>,
    /// A short run of every section: few packets, one run; through the
    /// veths 64-byte packets only, at 0.1 Mpps and flat out.
    #[arg(long)]
    pub quick: bool,
    /// Run one in-memory configuration once and print nothing (what
    /// callgrind runs), e.g. aes128gcm-64:encap.
    #[arg(long, hide = true, value_name = "CONFIG")]
    pub once: Option<String>,
}

/// The settings a run uses, defaults applied.
struct Settings {
    packets: u64,
    runs: usize,
    seconds: f64,
    quick: bool,
    callgrind: bool,
}

// ---------------------------------------------------------------------
// Security associations

/// The transforms measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Suite {
    /// `rfc4106(gcm(aes))` with a 128-bit key.
    Aes128Gcm,
    /// `rfc4106(gcm(aes))` with a 256-bit key.
    Aes256Gcm,
    /// `cbc(aes)` with `hmac(sha1)` truncated to 96 bits.
    Aes128CbcSha1,
}

impl Suite {
    const ALL: [Suite; 3] = [Suite::Aes128Gcm, Suite::Aes256Gcm, Suite::Aes128CbcSha1];

    fn name(self) -> &'static str {
        match self {
            Suite::Aes128Gcm => "aes128gcm",
            Suite::Aes256Gcm => "aes256gcm",
            Suite::Aes128CbcSha1 => "aes128cbc",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Suite::Aes128Gcm => "AES-128-GCM",
            Suite::Aes256Gcm => "AES-256-GCM",
            Suite::Aes128CbcSha1 => "AES-128-CBC+SHA1",
        }
    }

    /// The algorithm and keys of `ip xfrm state add` (fixed, published
    /// keys: this is a benchmark).
    fn algorithm(self) -> &'static str {
        match self {
            Suite::Aes128Gcm => {
                "aead 'rfc4106(gcm(aes))' 0x3ad77bb40d7a3660a89ecaf32466ef97c0ffee01 128"
            }
            Suite::Aes256Gcm => {
                "aead 'rfc4106(gcm(aes))' \
                 0x603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4c0ffee01 128"
            }
            Suite::Aes128CbcSha1 => {
                "enc 'cbc(aes)' 0x2b7e151628aed2a6abf7158809cf4f3c \
                 auth-trunc 'hmac(sha1)' 0x0123456789abcdef0123456789abcdef01234567 96"
            }
        }
    }

    /// The state (without `ip xfrm`), as both bricks and Linux take it.
    fn state(self, spi: u32, reqid: u32) -> String {
        format!(
            "state add src 10.0.0.1 dst 10.0.0.2 proto esp spi {spi:#010x} reqid {reqid} \
             mode tunnel replay-window 64 {}",
            self.algorithm()
        )
    }
}

/// A policy between the two sites (without `ip xfrm`).
fn policy(src: &str, dir: &str, reqid: u32) -> String {
    format!(
        "policy add src {src} dst 192.168.2.0/24 dir {dir} \
         tmpl src 10.0.0.1 dst 10.0.0.2 proto esp reqid {reqid} mode tunnel"
    )
}

/// Writes the SA files every section uses into `dir`:
///
/// * `SUITE-out.sa`: SA 0x1001 and the `dir out` policy, for the
///   encapsulator;
/// * `SUITE-in.sa`: the same state and a `dir in` policy, for the
///   decapsulator (which only accepts what an inbound policy allows);
/// * `split.sa`: two AES-128-GCM SAs, one for each half of 192.168.1.0/24.
fn write_sa_files(dir: &Path) -> anyhow::Result<()> {
    let w = |name: &str, lines: &[String]| {
        let text: String = lines.iter().map(|l| format!("ip xfrm {l}\n")).collect();
        std::fs::write(dir.join(name), text).with_context(|| format!("writing {name}"))
    };
    for s in Suite::ALL {
        w(
            &format!("{}-out.sa", s.name()),
            &[s.state(0x1001, 1), policy("192.168.1.0/24", "out", 1)],
        )?;
        w(
            &format!("{}-in.sa", s.name()),
            &[s.state(0x1001, 1), policy("192.168.1.0/24", "in", 1)],
        )?;
    }
    let g = Suite::Aes128Gcm;
    w(
        "split.sa",
        &[
            g.state(0x1001, 1),
            g.state(0x1002, 2),
            policy("192.168.1.0/25", "out", 1),
            policy("192.168.1.128/25", "out", 2),
        ],
    )?;
    std::fs::write(
        dir.join("gw.sa"),
        include_str!("../../../../conf/ipsec-gw.sa"),
    )
    .context("writing gw.sa")?;
    Ok(())
}

// ---------------------------------------------------------------------
// In memory, one core

/// Inner packet sizes: the IPv4 packet that ESP encrypts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Size {
    /// Every inner packet this many bytes.
    Bytes(u16),
    /// WorkloadSource's simple IMIX: frames of 64, 594 and 1518 bytes in
    /// the ratio 7:4:1, so inner packets of 50, 580 and 1504 bytes.
    Imix,
}

impl Size {
    fn name(self) -> String {
        match self {
            Size::Bytes(n) => n.to_string(),
            Size::Imix => "imix".into(),
        }
    }

    fn label(self) -> String {
        match self {
            Size::Bytes(n) => n.to_string(),
            Size::Imix => "IMIX".into(),
        }
    }

    /// WorkloadSource's size argument: it counts the Ethernet header.
    fn source_arg(self) -> String {
        match self {
            Size::Bytes(n) => format!("SIZE {}", n + 14),
            Size::Imix => "IMIX true".into(),
        }
    }

    /// Packets per timed run: as many as asked for small packets, a
    /// quarter for big ones, so that every run takes about as long.
    fn packets(self, base: u64) -> u64 {
        match self {
            Size::Bytes(n) if n <= 128 => base,
            _ => (base / 4).max(1000),
        }
    }
}

const SIZES: [Size; 3] = [Size::Bytes(64), Size::Bytes(1400), Size::Imix];

/// The in-memory workloads, in the order they are printed.
const WORKLOADS: [(Suite, Size); 8] = [
    (Suite::Aes128Gcm, Size::Bytes(64)),
    (Suite::Aes128Gcm, Size::Bytes(1400)),
    (Suite::Aes128Gcm, Size::Imix),
    (Suite::Aes256Gcm, Size::Bytes(64)),
    (Suite::Aes256Gcm, Size::Bytes(1400)),
    (Suite::Aes128CbcSha1, Size::Bytes(64)),
    (Suite::Aes128CbcSha1, Size::Bytes(1400)),
    (Suite::Aes128CbcSha1, Size::Imix),
];

fn workload_name(suite: Suite, size: Size) -> String {
    format!("{}-{}", suite.name(), size.name())
}

/// What a configuration runs after the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Nothing: the source's own cost.
    Source,
    /// IPsecESPEncap.
    Encap,
    /// IPsecESPEncap, then IPsecESPDecap.
    Pipeline,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Source => "source",
            Stage::Encap => "encap",
            Stage::Pipeline => "pipeline",
        }
    }
}

/// One in-memory configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MemConfig {
    suite: Suite,
    size: Size,
    stage: Stage,
}

impl MemConfig {
    /// The name `--once` takes: `source-64`, `aes128gcm-64:encap`.
    fn id(self) -> String {
        match self.stage {
            Stage::Source => format!("source-{}", self.size.name()),
            s => format!("{}:{}", workload_name(self.suite, self.size), s.name()),
        }
    }

    fn parse(id: &str) -> Option<MemConfig> {
        let mut all = Vec::new();
        for size in SIZES {
            all.push(MemConfig {
                suite: Suite::Aes128Gcm,
                size,
                stage: Stage::Source,
            });
        }
        for (suite, size) in WORKLOADS {
            for stage in [Stage::Encap, Stage::Pipeline] {
                all.push(MemConfig { suite, size, stage });
            }
        }
        all.into_iter().find(|c| c.id() == id)
    }

    /// The configuration text; the SA files are in `dir`.
    fn text(self, dir: &Path, packets: u64) -> String {
        let src = format!(
            "src :: WorkloadSource({}, FLOWS 64, SRC 192.168.1.0/24, DST 192.168.2.0/24, \
             LIMIT {packets}, STOP true)",
            self.size.source_arg()
        );
        let file = |dir_: &str| {
            dir.join(format!("{}-{dir_}.sa", self.suite.name()))
                .display()
                .to_string()
        };
        match self.stage {
            Stage::Source => format!("{src} -> Discard;"),
            Stage::Encap => format!(
                "{src} -> enc :: IPsecESPEncap(FILE {}) -> Discard;",
                file("out")
            ),
            Stage::Pipeline => format!(
                "{src} -> enc :: IPsecESPEncap(FILE {}) -> dec :: IPsecESPDecap(FILE {}) \
                 -> Discard;",
                file("out"),
                file("in")
            ),
        }
    }
}

/// One timed run.
#[derive(Debug, Clone, Copy)]
struct MemRun {
    secs: f64,
    packets: u64,
    /// Inner IPv4 bytes (the frames less their Ethernet headers).
    inner_bytes: u64,
}

/// Runs `c` once with `packets` packets on this thread and checks that
/// every packet went all the way.
fn run_memory(c: MemConfig, dir: &Path, packets: u64) -> anyhow::Result<MemRun> {
    let mut e =
        crate::core::engine_for(&format!("<bench ipsec {}>", c.id()), c.text(dir, packets))?;
    let t = Instant::now();
    let s = e.run();
    let secs = t.elapsed().as_secs_f64();
    if !s.errors.is_empty() {
        bail!("{}: {}", c.id(), s.errors.join("\n"));
    }
    let get = |el: &str, k: &str| s.stats(el).and_then(|st| st.get(k)).unwrap_or(0);
    let count = get("src", "count");
    let frames = get("src", "byte_count");
    let mut ok = count == packets;
    if c.stage != Stage::Source {
        ok &= get("enc", "protected") == packets;
    }
    if c.stage == Stage::Pipeline {
        ok &= get("dec", "decapsulated") == packets;
    }
    anyhow::ensure!(
        ok,
        "{}: not every one of the {packets} packets went through:\n{}",
        c.id(),
        s.render()
    );
    Ok(MemRun {
        secs,
        packets,
        inner_bytes: frames.saturating_sub(14 * count),
    })
}

/// Runs `--once`: one configuration, nothing printed.
fn once(id: &str, packets: u64) -> anyhow::Result<ExitCode> {
    let c = MemConfig::parse(id).with_context(|| format!("--once: no configuration `{id}`"))?;
    let dir = tempfile::tempdir().context("making a temporary directory")?;
    write_sa_files(dir.path())?;
    run_memory(c, dir.path(), packets)?;
    Ok(ExitCode::SUCCESS)
}

/// Instructions of one `--once` run of `c` with `packets` packets under
/// callgrind.
fn callgrind_total(c: MemConfig, packets: u64) -> anyhow::Result<u64> {
    let exe = std::env::current_exe()?;
    let out = std::env::temp_dir().join(format!(
        "bricks-callgrind-ipsec-{}-{}-{packets}.out",
        std::process::id(),
        c.id().replace(':', "-")
    ));
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(&exe)
        .args(["bench", "ipsec", "--once", &c.id(), "--packets"])
        .arg(packets.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("running valgrind")?;
    if !status.success() {
        let _ = std::fs::remove_file(&out);
        bail!("valgrind on {} exited with {status}", c.id());
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

/// Instructions per packet of `c`: two packet counts, differenced.
fn instructions(c: MemConfig, quick: bool) -> anyhow::Result<f64> {
    let (small, big) = match (quick, c.size) {
        (true, _) => (500, 2_500),
        (false, Size::Bytes(n)) if n <= 128 => (5_000, 25_000),
        (false, _) => (2_000, 10_000),
    };
    let i1 = callgrind_total(c, small)?;
    let i2 = callgrind_total(c, big)?;
    Ok(i2.saturating_sub(i1) as f64 / (big - small) as f64)
}

/// The medians of one configuration.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    ns: f64,
    /// Inner bytes per packet, on average.
    bytes: f64,
    instr: Option<f64>,
}

impl Figures {
    fn mpps(&self) -> f64 {
        1e3 / self.ns
    }

    fn gbps(&self) -> f64 {
        self.bytes * 8.0 / self.ns
    }
}

/// The figures of one workload: the whole graphs as measured.
struct MemResult {
    suite: Suite,
    size: Size,
    /// `source -> Discard`.
    source: Figures,
    /// `source -> encap -> Discard`.
    encap: Figures,
    /// `source -> encap -> decap -> Discard`.
    pipeline: Figures,
}

/// `a - b`: the cost of what `a` runs and `b` does not.
fn difference(a: &Figures, b: &Figures) -> Figures {
    Figures {
        ns: a.ns - b.ns,
        bytes: a.bytes,
        instr: a.instr.zip(b.instr).map(|(x, y)| x - y),
    }
}

impl MemResult {
    /// IPsecESPEncap alone: the encapsulating graph less the source's.
    fn encap_alone(&self) -> Figures {
        difference(&self.encap, &self.source)
    }

    /// IPsecESPDecap alone: the pipeline less the encapsulating graph.
    fn decap_alone(&self) -> Figures {
        difference(&self.pipeline, &self.encap)
    }
}

/// Times `configs` (interleaved, so that a change in the machine's load
/// touches them all) and counts their instructions.
fn measure(
    configs: &[MemConfig],
    dir: &Path,
    st: &Settings,
    cancel: &AtomicBool,
) -> anyhow::Result<Vec<Figures>> {
    // One unmeasured run of each warms the pool and the caches, and
    // checks the configuration.
    for &c in configs {
        run_memory(c, dir, c.size.packets(st.packets).min(100_000))?;
    }
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    let mut bytes = vec![0.0; configs.len()];
    for _ in 0..st.runs {
        for (i, &c) in configs.iter().enumerate() {
            if cancel.load(Ordering::Relaxed) {
                bail!("interrupted");
            }
            let r = run_memory(c, dir, c.size.packets(st.packets))?;
            ns[i].push(r.secs * 1e9 / r.packets as f64);
            bytes[i] = r.inner_bytes as f64 / r.packets as f64;
        }
    }
    let mut out = Vec::with_capacity(configs.len());
    for (i, &c) in configs.iter().enumerate() {
        let instr = if st.callgrind {
            Some(instructions(c, st.quick)?)
        } else {
            None
        };
        out.push(Figures {
            ns: median(&mut ns[i]),
            bytes: bytes[i],
            instr,
        });
    }
    Ok(out)
}

/// The issue's goals for AES-128-GCM, the same for encapsulation and
/// decapsulation.
const GOAL_MPPS_64: f64 = 4.0;
const GOAL_GBPS_1400: f64 = 20.0;
const GOAL_INSTR_64: f64 = 1500.0;
/// RouteBricks (SOSP 2009): instructions per packet of its IPsec
/// configuration, for comparison.
const ROUTEBRICKS_IPSEC_INSTR: f64 = 14_221.0;

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

/// The goal column of a row: only AES-128-GCM has goals.
fn goal_text(suite: Suite, size: Size, f: &Figures) -> String {
    if suite != Suite::Aes128Gcm {
        return String::new();
    }
    match size {
        Size::Bytes(64) => {
            let mut s = format!(">= {GOAL_MPPS_64} Mpps {}", met(f.mpps() >= GOAL_MPPS_64));
            match f.instr {
                Some(i) => {
                    let _ = write!(
                        s,
                        ", <= {GOAL_INSTR_64:.0} instr {}",
                        met(i <= GOAL_INSTR_64)
                    );
                }
                None => {
                    let _ = write!(s, ", <= {GOAL_INSTR_64:.0} instr: not counted");
                }
            }
            s
        }
        Size::Bytes(1400) => format!(
            ">= {GOAL_GBPS_1400} Gbps {}",
            met(f.gbps() >= GOAL_GBPS_1400)
        ),
        _ => String::new(),
    }
}

fn instr_text(i: Option<f64>) -> String {
    i.map_or("-".into(), |i| format!("{i:.0}"))
}

fn memory_section(
    workloads: &[(Suite, Size)],
    dir: &Path,
    st: &Settings,
    cancel: &AtomicBool,
    progress: bool,
) -> anyhow::Result<String> {
    let mut sources: Vec<(Size, Figures)> = Vec::new();
    let mut results = Vec::new();
    for &(suite, size) in workloads {
        if !sources.iter().any(|(s, _)| *s == size) {
            if progress {
                eprint!("\r{:60}\rmemory: source {}", "", size.label());
            }
            let c = MemConfig {
                suite: Suite::Aes128Gcm,
                size,
                stage: Stage::Source,
            };
            sources.push((size, measure(&[c], dir, st, cancel)?[0]));
        }
        if progress {
            eprint!("\r{:60}\rmemory: {}", "", workload_name(suite, size));
        }
        let c = |stage| MemConfig { suite, size, stage };
        let f = measure(&[c(Stage::Encap), c(Stage::Pipeline)], dir, st, cancel)?;
        let source = sources
            .iter()
            .find(|(s, _)| *s == size)
            .map_or_else(Figures::default, |(_, f)| *f);
        results.push(MemResult {
            suite,
            size,
            source,
            encap: f[0],
            pipeline: f[1],
        });
    }
    if progress {
        eprint!("\r{:60}\r", "");
    }
    Ok(memory_report(&results, &sources, st))
}

fn memory_report(results: &[MemResult], sources: &[(Size, Figures)], st: &Settings) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "in memory, one core: src :: WorkloadSource(64 flows, UDP 192.168.1.0/24 -> \
         192.168.2.0/24) -> ... -> Discard; median of {} run{} of {} packets (a quarter for \
         1400 and IMIX); inner = the IPv4 packet ESP encrypts; Gbps of inner bytes",
        st.runs,
        if st.runs == 1 { "" } else { "s" },
        st.packets
    );
    let sources_text: Vec<String> = sources
        .iter()
        .map(|(size, f)| {
            format!(
                "{} {:.1} ns, {} instr",
                size.label(),
                f.ns,
                instr_text(f.instr)
            )
        })
        .collect();
    let _ = writeln!(
        o,
        "src -> Discard alone, per packet: {}",
        sources_text.join("; ")
    );
    let table = |o: &mut String,
                 title: &str,
                 graph: &str,
                 f: &dyn Fn(&MemResult) -> (Figures, Figures)| {
        let _ = writeln!(o, "\n{title}; whole graph: {graph}");
        let _ = writeln!(
            o,
            "{:<25}{:-^34}   {:-^26}",
            "", " element alone ", " whole graph ",
        );
        let _ = writeln!(
            o,
            "{:<18} {:>5} {:>7} {:>7} {:>8} {:>9}   {:>7} {:>8} {:>9}   goal",
            "suite", "inner", "Mpps", "Gbps", "ns/pkt", "instr/pkt", "Mpps", "ns/pkt", "instr/pkt"
        );
        for r in results {
            let (alone, whole) = f(r);
            let _ = writeln!(
                o,
                "{:<18} {:>5} {:>7.2} {:>7.2} {:>8.1} {:>9}   {:>7.2} {:>8.1} {:>9}   {}",
                r.suite.label(),
                r.size.label(),
                alone.mpps(),
                alone.gbps(),
                alone.ns,
                instr_text(alone.instr),
                whole.mpps(),
                whole.ns,
                instr_text(whole.instr),
                goal_text(r.suite, r.size, &alone),
            );
        }
    };
    table(
        &mut o,
        "encap: IPsecESPEncap alone = (src -> encap -> Discard) - (src -> Discard)",
        "src -> encap -> Discard",
        &|r| (r.encap_alone(), r.encap),
    );
    table(
        &mut o,
        "decap: IPsecESPDecap alone = (src -> encap -> decap -> Discard) - (src -> encap -> Discard)",
        "src -> encap -> decap -> Discard",
        &|r| (r.decap_alone(), r.pipeline),
    );
    let _ = writeln!(
        o,
        "\ngoals (AES-128-GCM, encap and decap each, judged on the element alone): \
         >= {GOAL_MPPS_64} Mpps at 64 bytes, >= {GOAL_GBPS_1400} Gbps at 1400 bytes, \
         <= {GOAL_INSTR_64:.0} instructions per 64-byte packet."
    );
    let gcm64 = results
        .iter()
        .find(|r| r.suite == Suite::Aes128Gcm && r.size == Size::Bytes(64));
    match gcm64.and_then(|r| r.encap_alone().instr.zip(r.decap_alone().instr)) {
        Some((e, d)) => {
            let _ = writeln!(
                o,
                "RouteBricks (SOSP 2009), IPsec: {ROUTEBRICKS_IPSEC_INSTR:.0} instructions per \
                 packet; bricks AES-128-GCM at 64 bytes: {e:.0} to encapsulate ({:.1}x fewer), \
                 {d:.0} to decapsulate ({:.1}x fewer).",
                ROUTEBRICKS_IPSEC_INSTR / e,
                ROUTEBRICKS_IPSEC_INSTR / d
            );
        }
        None => {
            let _ = writeln!(
                o,
                "RouteBricks (SOSP 2009), IPsec: {ROUTEBRICKS_IPSEC_INSTR:.0} instructions per \
                 packet."
            );
        }
    }
    if st.callgrind {
        let _ = writeln!(
            o,
            "instructions: callgrind, whose virtual CPU has AES-NI, PCLMULQDQ and AVX2 but \
             not VAES, VPCLMULQDQ, AVX-512 or SHA-NI: the counts are those of the code paths \
             the crypto crates choose without them (for HMAC-SHA1, software SHA-1)."
        );
    }
    o
}

// ---------------------------------------------------------------------
// Sequence numbers across cores

/// One set-up of the cores section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sharing {
    /// One worker, one SA.
    Alone,
    /// Two workers, both on one SA.
    Shared,
    /// Two workers, an SA each.
    Own,
}

impl Sharing {
    fn label(self) -> &'static str {
        match self {
            Sharing::Alone => "1 worker, 1 SA",
            Sharing::Shared => "2 workers, 1 shared SA",
            Sharing::Own => "2 workers, 1 SA each",
        }
    }

    fn threads(self) -> usize {
        if self == Sharing::Alone {
            1
        } else {
            2
        }
    }
}

/// The configuration: two flows, one per worker (WorkloadSource hands
/// worker w of n the flows w, w + n, ...). With `split.sa`, sources in
/// 192.168.1.0/25 take SA 0x1001 and those in 192.168.1.128/25 SA 0x1002;
/// `seed` must then give the two flows sources in different halves.
fn cores_config(dir: &Path, s: Sharing, per_worker: u64, seed: u64) -> String {
    let file = match s {
        Sharing::Own => dir.join("split.sa"),
        _ => dir.join("aes128gcm-out.sa"),
    };
    format!(
        "src :: WorkloadSource(SIZE 78, FLOWS 2, SRC 192.168.1.0/24, DST 192.168.2.0/24, \
         SEED {seed}, LIMIT {}, ALL_WORKERS true) \
         -> enc :: IPsecESPEncap(FILE {}) -> Discard;",
        per_worker * s.threads() as u64,
        file.display()
    )
}

/// Per worker: packets and seconds; and the packets of SA 0x1001.
struct CoresRun {
    workers: Vec<(u64, f64)>,
    sa1: u64,
}

fn run_cores(dir: &Path, s: Sharing, per_worker: u64, seed: u64) -> anyhow::Result<CoresRun> {
    let plan = crate::core::plan(bricks_config::Source {
        name: format!("<bench ipsec {}>", s.label()),
        text: cores_config(dir, s, per_worker, seed),
    })
    .map_err(anyhow::Error::msg)?;
    let opts = WorkerOptions {
        threads: s.threads(),
        pin: true,
        trace_clock: false,
        clock_start: Default::default(),
        publish_every: None,
        max_nap: Duration::ZERO,
        exit_reads: Vec::new(),
    };
    let w = Workers::start(Arc::new(plan), &opts).map_err(|d| anyhow::anyhow!("{}", d.message))?;
    let summary = w.join();
    if !summary.total.errors.is_empty() {
        bail!("{}", summary.total.errors.join("\n"));
    }
    let get = |r: &bricks_runtime::RunSummary, el: &str, k: &str| {
        r.stats(el).and_then(|st| st.get(k)).unwrap_or(0)
    };
    let workers: Vec<(u64, f64)> = summary
        .per_worker
        .iter()
        .map(|r| (get(r, "src", "count"), r.elapsed.as_secs_f64()))
        .collect();
    let total: u64 = workers.iter().map(|w| w.0).sum();
    anyhow::ensure!(
        get(&summary.total, "enc", "protected") == total && total > 0,
        "{}: not every packet was encapsulated:\n{}",
        s.label(),
        summary.total.render()
    );
    Ok(CoresRun {
        workers,
        sa1: get(&summary.total, "enc", "sa 0x1001 packets"),
    })
}

/// A seed whose two flows take different SAs of `split.sa`.
fn split_seed(dir: &Path) -> anyhow::Result<u64> {
    for seed in 1..=64 {
        let r = run_cores(dir, Sharing::Own, 1000, seed)?;
        let total: u64 = r.workers.iter().map(|w| w.0).sum();
        if r.sa1 > 0 && r.sa1 < total {
            return Ok(seed);
        }
    }
    bail!("no seed from 1 to 64 gives the two workers' flows different SAs")
}

fn cores_section(dir: &Path, st: &Settings, cancel: &AtomicBool) -> anyhow::Result<String> {
    let cpus = core_affinity::get_core_ids().map_or(1, |c| c.len());
    let per_worker = st.packets;
    let seed = split_seed(dir)?;
    let all = [Sharing::Alone, Sharing::Shared, Sharing::Own];
    // Per set-up: Mpps per worker, total Mpps.
    let mut figures: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); all.len()];
    for &s in &all {
        run_cores(dir, s, per_worker.min(100_000), seed)?;
    }
    for _ in 0..st.runs {
        for (i, &s) in all.iter().enumerate() {
            if cancel.load(Ordering::Relaxed) {
                bail!("interrupted");
            }
            let r = run_cores(dir, s, per_worker, seed)?;
            let per: Vec<f64> = r
                .workers
                .iter()
                .map(|&(n, secs)| n as f64 / secs / 1e6)
                .collect();
            let total_packets: u64 = r.workers.iter().map(|w| w.0).sum();
            let longest = r.workers.iter().map(|w| w.1).fold(0.0, f64::max);
            figures[i]
                .0
                .push(per.iter().sum::<f64>() / per.len() as f64);
            figures[i].1.push(total_packets as f64 / longest / 1e6);
        }
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "sequence numbers across cores: AES-128-GCM encap of 64-byte inner packets, one flow \
         per worker, {per_worker} packets per worker, workers pinned (machine: {cpus} CPU{}), \
         median of {} run{}",
        if cpus == 1 { "" } else { "s" },
        st.runs,
        if st.runs == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        o,
        "{:<24} {:>7} {:>12} {:>17} {:>11}",
        "set-up", "workers", "Mpps/worker", "ns/packet/worker", "total Mpps"
    );
    let mut per_worker_mpps = Vec::new();
    for (i, s) in all.iter().enumerate() {
        let per = median(&mut figures[i].0);
        let total = median(&mut figures[i].1);
        per_worker_mpps.push(per);
        let _ = writeln!(
            o,
            "{:<24} {:>7} {:>12.2} {:>17.1} {:>11.2}",
            s.label(),
            s.threads(),
            per,
            1e3 / per,
            total
        );
    }
    let (shared, own) = (per_worker_mpps[1], per_worker_mpps[2]);
    let _ = writeln!(
        o,
        "shared / own SA, per worker: {:.2} (the contended counter costs {:.1} ns per packet)",
        shared / own,
        1e3 / shared - 1e3 / own
    );
    if cpus < 2 {
        let _ = writeln!(
            o,
            "(one CPU: the two workers take turns, so there is no contention to measure)"
        );
    }
    Ok(o)
}

// ---------------------------------------------------------------------
// Through veths: bricks against Linux XFRM

/// Queues of every veth (RX and TX).
const QUEUES: u32 = 2;
/// How long frames get to arrive after the generator stops.
const DRAIN: Duration = Duration::from_millis(300);
/// Niceness of generator and gateway (see `bricks bench io`).
const NICE: &str = "-20";
/// Flows the generator sends.
const FLOWS: &str = "256";
/// The loss below which a rate counts as forwarded.
const MAX_LOSS_PCT: f64 = 1.0;

/// What runs in the gateway namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gateway {
    /// conf/ipsec-gw.click.
    Bricks,
    /// The kernel's XFRM with the same SA.
    LinuxXfrm,
    /// The kernel forwarding without ESP: what Linux does at least for
    /// every packet it would also encrypt, so an upper bound of XFRM.
    LinuxForward,
}

impl Gateway {
    fn label(self) -> &'static str {
        match self {
            Gateway::Bricks => "bricks ipsec-gw.click",
            Gateway::LinuxXfrm => "Linux XFRM",
            Gateway::LinuxForward => "Linux forwarding, no ESP",
        }
    }
}

/// One offered rate.
#[derive(Debug, Clone, Copy)]
struct Step {
    /// Packets per second asked of the generator (`None`: flat out).
    asked: Option<u64>,
    /// What it sent, in Mpps.
    offered: f64,
    /// What reached the sink, in Mpps.
    delivered: f64,
    loss_pct: f64,
}

/// Every step of one gateway with one size, or why it did not run.
struct Ladder {
    gateway: Gateway,
    size: u16,
    steps: Vec<Step>,
    error: Option<String>,
    /// bricks' own counters, in words.
    notes: Vec<String>,
}

impl Ladder {
    fn best(&self) -> Option<f64> {
        self.steps
            .iter()
            .map(|s| s.delivered)
            .max_by(|a, b| a.total_cmp(b))
    }

    /// The highest rate sent with at most MAX_LOSS_PCT lost.
    fn loss_free(&self) -> Option<f64> {
        self.steps
            .iter()
            .filter(|s| s.loss_pct <= MAX_LOSS_PCT)
            .map(|s| s.offered)
            .max_by(|a, b| a.total_cmp(b))
    }
}

/// Why the kernel may refuse an ESP state, from its configuration when it
/// shows one: "; this kernel is built without ..." or nothing.
fn kernel_lacks_esp() -> String {
    let Ok(out) = Command::new("sh")
        .args(["-c", "zcat /proc/config.gz 2>/dev/null"])
        .stdin(Stdio::null())
        .output()
    else {
        return String::new();
    };
    let config = String::from_utf8_lossy(&out.stdout);
    let missing: Vec<&str> = ["CONFIG_INET_ESP", "CONFIG_CRYPTO_GCM"]
        .into_iter()
        .filter(|k| config.lines().any(|l| l == format!("# {k} is not set")))
        .collect();
    if missing.is_empty() {
        String::new()
    } else {
        format!("; this kernel is built without {}", missing.join(" and "))
    }
}

/// The last few lines of a process's stderr, for an error message.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

/// The test network.
struct Testbed {
    net: Network,
    exe: String,
    dir: PathBuf,
    tester_cpu: usize,
    router_cpu: usize,
    r0_mac: String,
    r1_mac: String,
    s0_mac: String,
    cancel: Arc<AtomicBool>,
}

impl Testbed {
    fn build(dir: &Path, cancel: Arc<AtomicBool>) -> anyhow::Result<Testbed> {
        let cpus: Vec<usize> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.id)
            .collect();
        let tester_cpu = cpus.first().copied().unwrap_or(0);
        let router_cpu = cpus.last().copied().unwrap_or(0);
        let Line {
            net,
            r0_mac,
            r1_mac,
            s0_mac,
            r0_napi,
            s0_napi,
        } = Line::build("ipsec", "gw")?;
        let e = anyhow::Error::msg;
        // The sink is the peer's address, so that it answers the gateway's
        // ARP; it drops the ESP it cannot decrypt, counted by the veth.
        net.add_addr("sink", "s0", "10.0.0.2/24").map_err(e)?;
        for (k, v) in [
            ("net.ipv4.icmp_msgs_per_sec", "0"),
            ("net.ipv4.icmp_msgs_burst", "0"),
        ] {
            // Fewer "protocol unreachable" answers to the gateway; the
            // kernel limits them anyway, so a refusal is harmless.
            let _ = net.sysctl("sink", k, v);
        }
        pin(&r0_napi, &[router_cpu])?;
        pin(&s0_napi, &[tester_cpu])?;
        let exe = std::env::current_exe()
            .context("finding the bricks executable")?
            .display()
            .to_string();
        Ok(Testbed {
            net,
            exe,
            dir: dir.to_path_buf(),
            tester_cpu,
            router_cpu,
            r0_mac,
            r1_mac,
            s0_mac,
            cancel,
        })
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// `nice -n -20 taskset -c CPU bricks ARGS...` in namespace `ns`.
    fn bricks(&self, ns: &str, cpu: usize, args: &[&str]) -> Command {
        let cpu = cpu.to_string();
        let mut argv = vec!["nice", "-n", NICE, "taskset", "-c", &cpu, &self.exe];
        argv.extend_from_slice(args);
        self.net.exec(ns, &argv)
    }

    /// `ip -n GW ARGS...`.
    fn ip_gw(&self, args: &[&str]) -> anyhow::Result<()> {
        let ns = self.net.ns_name("gw");
        let mut v = vec!["-n", ns.as_str()];
        v.extend_from_slice(args);
        bricks_netns::ip(&v).map(drop).map_err(anyhow::Error::msg)
    }

    /// Frames and bytes s0 has received.
    fn sink_counters(&self) -> anyhow::Result<(u64, u64)> {
        let out = bricks_netns::run(&mut self.net.exec(
            "sink",
            &[
                "cat",
                "/sys/class/net/s0/statistics/rx_packets",
                "/sys/class/net/s0/statistics/rx_bytes",
            ],
        ))
        .map_err(anyhow::Error::msg)?;
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Vec<u64> = text
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        match v.as_slice() {
            [p, b] => Ok((*p, *b)),
            _ => bail!("cannot read s0's counters: {text}"),
        }
    }

    /// One run of the generator at `rate` (flat out when `None`) with
    /// `size`-byte inner packets; what was sent and what arrived.
    fn step(&self, size: u16, secs: f64, rate: Option<u64>) -> anyhow::Result<Step> {
        let before = self.sink_counters()?;
        let d = format!("{secs:.3}");
        let frame = (size + 14).to_string();
        let threads = QUEUES.to_string();
        let rate_s = rate.map(|r| r.to_string());
        let mut args = vec![
            "gen",
            "g0",
            "--threads",
            &threads,
            "--duration",
            &d,
            "--src",
            "192.168.1.2",
            "--dst",
            "192.168.2.2",
            "--dst-mac",
            &self.r0_mac,
            "--flows",
            FLOWS,
            "--size",
            &frame,
            "--backend",
            "xdp",
            "--json",
        ];
        if let Some(r) = &rate_s {
            args.extend_from_slice(&["--rate", r]);
        }
        let out = Captured::spawn(&mut self.bricks("gen", self.tester_cpu, &args))
            .map_err(anyhow::Error::msg)?
            .wait(
                Duration::from_secs_f64(secs + 30.0),
                Some(self.cancel.as_ref()),
            )
            .map_err(anyhow::Error::msg)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        anyhow::ensure!(
            out.status.success(),
            "bricks gen failed ({}): {}",
            out.status,
            tail(&String::from_utf8_lossy(&out.stderr))
        );
        let j = last_json(&stdout)
            .with_context(|| format!("bricks gen printed no report: {stdout}"))?;
        let sent = j["sent"].as_u64().unwrap_or(0);
        let elapsed = j["elapsed_s"].as_f64().unwrap_or(0.0);
        anyhow::ensure!(
            sent > 0 && elapsed > 0.0,
            "bricks gen sent nothing: {stdout}"
        );
        std::thread::sleep(DRAIN);
        let after = self.sink_counters()?;
        let got = after.0.saturating_sub(before.0);
        Ok(Step {
            asked: rate,
            offered: sent as f64 / elapsed / 1e6,
            delivered: got as f64 / elapsed / 1e6,
            loss_pct: sent.saturating_sub(got) as f64 * 100.0 / sent as f64,
        })
    }

    /// Runs the rate ladder for one size: doubling rates until the
    /// gateway loses more than MAX_LOSS_PCT (or the generator cannot send
    /// what is asked), two bisections between the last rate that passed
    /// and the first that did not, then the generator flat out.
    fn ladder(&self, size: u16, st: &Settings) -> anyhow::Result<Vec<Step>> {
        let rates: &[u64] = if st.quick {
            &[100_000]
        } else {
            &[100_000, 200_000, 400_000, 800_000, 1_600_000, 3_200_000]
        };
        let mut steps = Vec::new();
        let check = || {
            if self.cancelled() {
                bail!("interrupted");
            }
            Ok(())
        };
        let passed = |s: &Step| s.loss_pct <= MAX_LOSS_PCT;
        let mut lo = 0;
        let mut hi = None;
        for &r in rates {
            check()?;
            let s = self.step(size, st.seconds, Some(r))?;
            steps.push(s);
            if s.offered * 1e6 < r as f64 * 0.9 {
                // The generator's limit: asking for more says nothing.
                break;
            }
            if !passed(&s) {
                hi = Some(r);
                break;
            }
            lo = r;
        }
        if let Some(mut hi) = hi {
            for _ in 0..if st.quick { 0 } else { 2 } {
                check()?;
                let mid = (lo + hi) / 2;
                let s = self.step(size, st.seconds, Some(mid))?;
                steps.push(s);
                if passed(&s) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
        check()?;
        steps.push(self.step(size, st.seconds, None)?);
        Ok(steps)
    }

    /// Starts conf/ipsec-gw.click on r0 (LAN) and r1 (WAN) and waits until
    /// both interfaces are open.
    fn start_bricks(&self) -> anyhow::Result<(ChildGuard, PathBuf, PathBuf)> {
        let conf = include_str!("../../../../conf/ipsec-gw.click");
        let defs = [
            format!("LAN_MAC={}", self.r0_mac),
            format!("WAN_MAC={}", self.r1_mac),
            format!("SA_FILE={}", self.dir.join("gw.sa").display()),
        ];
        let mut args = vec!["run", "-e", conf];
        for d in ["LAN=r0", "WAN=r1", "BACKEND=xdp"] {
            args.extend_from_slice(&["-D", d]);
        }
        for d in &defs {
            args.extend_from_slice(&["-D", d]);
        }
        args.extend_from_slice(&["--stats-json", "--stats-interval", "86400"]);
        let out = self.dir.join("gw.out");
        let err = self.dir.join("gw.err");
        let mut cmd = self.bricks("gw", self.router_cpu, &args);
        cmd.stdin(Stdio::null())
            .stdout(std::fs::File::create(&out)?)
            .stderr(std::fs::File::create(&err)?);
        let mut child = ChildGuard::spawn(&mut cmd).map_err(anyhow::Error::msg)?;
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&err).unwrap_or_default();
            let ready = text.lines().any(|l| l.starts_with("r0: "))
                && text.lines().any(|l| l.starts_with("r1: "));
            if ready {
                break;
            }
            if child.try_wait().is_some() || Instant::now() >= end || self.cancelled() {
                child.kill();
                bail!(
                    "the bricks gateway did not start: {}",
                    tail(&std::fs::read_to_string(&err).unwrap_or_default())
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        Ok((child, out, err))
    }

    /// Stops the bricks gateway and reads its counters.
    fn stop_bricks(
        &self,
        mut child: ChildGuard,
        out: &Path,
        err: &Path,
    ) -> anyhow::Result<Vec<String>> {
        let status = child.stop(Duration::from_secs(15));
        let stdout = std::fs::read_to_string(out).unwrap_or_default();
        let stderr = std::fs::read_to_string(err).unwrap_or_default();
        anyhow::ensure!(
            status.is_some_and(|s| s.success()),
            "the bricks gateway failed ({}): {}",
            status.map_or("it did not exit within 15 s".to_string(), |s| s.to_string()),
            tail(&stderr)
        );
        let mut notes: Vec<String> = stderr
            .lines()
            .filter(|l| l.starts_with("r0: ") || l.starts_with("r1: "))
            .map(str::to_string)
            .collect();
        if let Some(j) = last_json(&stdout) {
            let sum = |el: &str, k: &str| -> u64 {
                j["workers"]
                    .as_array()
                    .map(|ws| {
                        ws.iter()
                            .map(|w| w["elements"][el][k].as_u64().unwrap_or(0))
                            .sum()
                    })
                    .unwrap_or(0)
            };
            let line = format!(
                "bricks counters: in0 {} received ({} ring drops), esp_out {} protected, \
                 out1 {} sent ({} drops), q1 {} drops",
                sum("in0", "count"),
                sum("in0", "ring_drops"),
                sum("esp_out", "protected"),
                sum("out1", "count"),
                sum("out1", "drops"),
                sum("q1", "drops"),
            );
            notes.push(line);
        }
        Ok(notes)
    }

    /// Gives the gateway namespace Linux addresses, a route to the remote
    /// network through the peer, and with `xfrm` the SA and the outbound
    /// policy of conf/ipsec-gw.sa; then turns forwarding on.
    fn configure_linux(&self, xfrm: bool) -> anyhow::Result<()> {
        self.ip_gw(&["addr", "add", "192.168.1.1/24", "dev", "r0"])?;
        self.ip_gw(&["addr", "add", "10.0.0.1/24", "dev", "r1"])?;
        self.ip_gw(&[
            "neigh",
            "replace",
            "10.0.0.2",
            "lladdr",
            &self.s0_mac,
            "dev",
            "r1",
            "nud",
            "permanent",
        ])?;
        self.ip_gw(&[
            "route",
            "add",
            "192.168.2.0/24",
            "via",
            "10.0.0.2",
            "dev",
            "r1",
        ])?;
        if xfrm {
            // The state line of conf/ipsec-gw.sa, as a Linux peer takes it.
            let state = Suite::Aes128Gcm.state(0x1001, 1).replace('\'', "");
            let ns = self.net.ns_name("gw");
            let mut args = vec!["-n", ns.as_str(), "xfrm"];
            args.extend(state.split_whitespace());
            let out = Command::new("ip")
                .args(&args)
                .stdin(Stdio::null())
                .output()
                .context("running ip xfrm")?;
            if !out.status.success() {
                bail!(
                    "the kernel refused the SA (`ip xfrm {state}`: {}){}",
                    String::from_utf8_lossy(&out.stderr).trim(),
                    kernel_lacks_esp()
                );
            }
            let pol = policy("192.168.1.0/24", "out", 1);
            let mut args = vec!["xfrm"];
            args.extend(pol.split_whitespace());
            self.ip_gw(&args)?;
        }
        self.net
            .sysctl("gw", "net.ipv4.ip_forward", "1")
            .map_err(anyhow::Error::msg)?;
        Ok(())
    }

    /// Undoes [`Testbed::configure_linux`], so that bricks gets the
    /// interfaces bare.
    fn unconfigure_linux(&self) {
        let _ = self.net.sysctl("gw", "net.ipv4.ip_forward", "0");
        let _ = self.ip_gw(&["xfrm", "policy", "flush"]);
        let _ = self.ip_gw(&["xfrm", "state", "flush"]);
        let _ = self.ip_gw(&["route", "flush", "192.168.2.0/24"]);
        let _ = self.ip_gw(&["neigh", "flush", "dev", "r1"]);
        let _ = self.ip_gw(&["addr", "flush", "dev", "r0"]);
        let _ = self.ip_gw(&["addr", "flush", "dev", "r1"]);
    }

    /// Every size through one gateway.
    fn gateway(&self, g: Gateway, sizes: &[u16], st: &Settings) -> Vec<Ladder> {
        let mut out: Vec<Ladder> = sizes
            .iter()
            .map(|&size| Ladder {
                gateway: g,
                size,
                steps: Vec::new(),
                error: None,
                notes: Vec::new(),
            })
            .collect();
        let fail = |out: &mut Vec<Ladder>, e: String| {
            for l in out.iter_mut() {
                l.error.get_or_insert_with(|| e.clone());
            }
        };
        match g {
            Gateway::Bricks => {
                let (child, o, e) = match self.start_bricks() {
                    Ok(x) => x,
                    Err(e) => {
                        fail(&mut out, format!("{e:#}"));
                        return out;
                    }
                };
                // The gateway learns the peer's MAC with ARP on the first
                // packet: a few packets before the measurement.
                let _ = self.step(64, 0.2, Some(10_000));
                for l in out.iter_mut() {
                    match self.ladder(l.size, st) {
                        Ok(s) => l.steps = s,
                        Err(e) => l.error = Some(format!("{e:#}")),
                    }
                }
                match self.stop_bricks(child, &o, &e) {
                    Ok(notes) => {
                        for l in out.iter_mut() {
                            l.notes = notes.clone();
                        }
                    }
                    Err(e) => fail(&mut out, format!("{e:#}")),
                }
            }
            Gateway::LinuxXfrm | Gateway::LinuxForward => {
                let r = self.configure_linux(g == Gateway::LinuxXfrm);
                if let Err(e) = r {
                    self.unconfigure_linux();
                    fail(&mut out, format!("{e:#}"));
                    return out;
                }
                for l in out.iter_mut() {
                    match self.ladder(l.size, st) {
                        Ok(s) => l.steps = s,
                        Err(e) => l.error = Some(format!("{e:#}")),
                    }
                }
                self.unconfigure_linux();
            }
        }
        out
    }
}

fn veth_section(
    sizes: &[u16],
    dir: &Path,
    st: &Settings,
    cancel: &Arc<AtomicBool>,
    progress: bool,
) -> anyhow::Result<String> {
    let mut o = String::new();
    if !bricks_netns::is_root() {
        let _ = writeln!(
            o,
            "through veths: skipped, it needs root (network namespaces, XDP, NAPI threads): \
             sudo {} bench ipsec --only veth",
            std::env::args().next().unwrap_or_else(|| "bricks".into())
        );
        return Ok(o);
    }
    for (tool, hint) in [
        ("ethtool", "ethtool"),
        ("taskset", "util-linux"),
        ("chrt", "util-linux"),
    ] {
        let found = Command::new(tool)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            let _ = writeln!(
                o,
                "through veths: skipped, it needs `{tool}` (apt-get install {hint})"
            );
            return Ok(o);
        }
    }
    let bed = Testbed::build(dir, cancel.clone()).context("building the test network")?;
    let mut ladders = Vec::new();
    for g in [Gateway::LinuxXfrm, Gateway::LinuxForward, Gateway::Bricks] {
        if bed.cancelled() {
            break;
        }
        if progress {
            eprint!("\r{:60}\rveth: {}", "", g.label());
        }
        ladders.extend(bed.gateway(g, sizes, st));
    }
    if progress {
        eprint!("\r{:60}\r", "");
    }
    let (tester, router) = (bed.tester_cpu, bed.router_cpu);
    drop(bed);
    if cancel.load(Ordering::Relaxed) {
        bail!("interrupted");
    }
    let _ = writeln!(
        o,
        "through veths: bricks gen (UDP 192.168.1.2 -> 192.168.2.2, {FLOWS} flows, 2 AF_XDP \
         queues) -> [r0 gateway r1] -> s0 (10.0.0.2, Linux, counts frames); {} s per rate; \
         generator and s0's NAPI on CPU {tester}, gateway and r0's NAPI on CPU {router}; \
         AES-128-GCM (conf/ipsec-gw.sa)",
        st.seconds
    );
    let _ = writeln!(
        o,
        "{:<26} {:>5} {:>10} {:>9} {:>10} {:>12} {:>7}",
        "gateway", "inner", "asked Mpps", "offered", "delivered", "inner Gbps", "loss %"
    );
    let mut said = BTreeSet::new();
    for l in &ladders {
        if let Some(e) = &l.error {
            if l.steps.is_empty() {
                // Said once per gateway when every size failed alike.
                if said.insert((l.gateway.label(), e.clone())) {
                    let _ = writeln!(o, "{:<26} {:>5} unavailable: {e}", l.gateway.label(), "all");
                }
                continue;
            }
        }
        for s in &l.steps {
            let _ = writeln!(
                o,
                "{:<26} {:>5} {:>10} {:>9.3} {:>10.3} {:>12.2} {:>7.1}",
                l.gateway.label(),
                l.size,
                s.asked
                    .map_or("max".to_string(), |r| format!("{:.3}", r as f64 / 1e6)),
                s.offered,
                s.delivered,
                s.delivered * f64::from(l.size) * 8.0 / 1e3,
                s.loss_pct
            );
        }
        if let Some(e) = &l.error {
            let _ = writeln!(o, "{:<26} {:>5} failed: {e}", l.gateway.label(), l.size);
        }
    }
    let _ = writeln!(
        o,
        "\n{:<26} {:>5} {:>15} {:>18}",
        "highest rates (Mpps)", "inner", "delivered", "loss-free (<=1%)"
    );
    for l in &ladders {
        if l.steps.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "{:<26} {:>5} {:>15.3} {:>18}",
            l.gateway.label(),
            l.size,
            l.best().unwrap_or(0.0),
            l.loss_free()
                .map_or("none".to_string(), |v| format!("{v:.3}"))
        );
    }
    let find = |g, size| ladders.iter().find(|l| l.gateway == g && l.size == size);
    let _ = writeln!(o);
    for &size in sizes {
        let bricks = find(Gateway::Bricks, size).and_then(Ladder::best);
        let xfrm = find(Gateway::LinuxXfrm, size).and_then(Ladder::best);
        let fwd = find(Gateway::LinuxForward, size).and_then(Ladder::best);
        match (bricks, xfrm) {
            (Some(b), Some(x)) if x > 0.0 => {
                let _ = writeln!(
                    o,
                    "{size}-byte: bricks / Linux XFRM = {:.2}   goal >= 2: {}",
                    b / x,
                    met(b / x >= 2.0)
                );
            }
            _ => {
                let _ = writeln!(
                    o,
                    "{size}-byte: bricks / Linux XFRM: not measured (Linux XFRM {})",
                    if xfrm.is_none() {
                        "unavailable"
                    } else {
                        "delivered nothing"
                    }
                );
            }
        }
        if let (Some(b), Some(f)) = (bricks, fwd) {
            if f > 0.0 {
                let free = find(Gateway::Bricks, size)
                    .and_then(Ladder::loss_free)
                    .zip(find(Gateway::LinuxForward, size).and_then(Ladder::loss_free))
                    .map_or("-".to_string(), |(b, f)| format!("{:.2}", b / f));
                let _ = writeln!(
                    o,
                    "{size}-byte: bricks ESP / Linux forwarding without ESP = {:.2} (highest \
                     delivered; loss-free: {free}); with the same generator Linux XFRM delivers \
                     no more than Linux forwarding, so this is a lower bound of bricks / Linux \
                     XFRM here: goal >= 2 {}",
                    b / f,
                    if b / f >= 2.0 { "met" } else { "open" }
                );
            }
        }
    }
    let notes: BTreeSet<&String> = ladders.iter().flat_map(|l| l.notes.iter()).collect();
    for n in notes {
        let _ = writeln!(o, "{n}");
    }
    Ok(o)
}

// ---------------------------------------------------------------------

/// Which sections and workloads `--only` selects.
#[derive(Debug)]
struct Selection {
    memory: Vec<(Suite, Size)>,
    cores: bool,
    veth: Vec<u16>,
}

fn select(only: &[String], quick: bool) -> anyhow::Result<Selection> {
    let veth_sizes: &[u16] = if quick { &[64] } else { &[64, 1400] };
    if only.is_empty() {
        return Ok(Selection {
            memory: WORKLOADS.to_vec(),
            cores: true,
            veth: veth_sizes.to_vec(),
        });
    }
    let mut s = Selection {
        memory: Vec::new(),
        cores: false,
        veth: Vec::new(),
    };
    for name in only {
        match name.as_str() {
            "memory" => s.memory = WORKLOADS.to_vec(),
            "cores" => s.cores = true,
            "veth" => s.veth = veth_sizes.to_vec(),
            "veth-64" => s.veth.push(64),
            "veth-1400" => s.veth.push(1400),
            n => match WORKLOADS
                .iter()
                .find(|(suite, size)| workload_name(*suite, *size) == n)
            {
                Some(w) => s.memory.push(*w),
                None => {
                    let names: Vec<String> = WORKLOADS
                        .iter()
                        .map(|(a, b)| workload_name(*a, *b))
                        .collect();
                    bail!(
                        "--only: no section or workload `{n}`; there are memory, cores, veth, \
                         veth-64, veth-1400, {}",
                        names.join(", ")
                    );
                }
            },
        }
    }
    // Each once, in the order they are printed.
    s.memory = WORKLOADS
        .iter()
        .copied()
        .filter(|w| s.memory.contains(w))
        .collect();
    s.veth.sort_unstable();
    s.veth.dedup();
    Ok(s)
}

/// Runs `bricks bench ipsec`.
pub fn bench(a: &IpsecArgs, stop_on_signals: StopOnSignals) -> anyhow::Result<ExitCode> {
    if let Some(id) = &a.once {
        return once(id, a.packets.unwrap_or(10_000));
    }
    let st = Settings {
        packets: a
            .packets
            .unwrap_or(if a.quick { 20_000 } else { 2_000_000 }),
        runs: a.runs.unwrap_or(if a.quick { 1 } else { 5 }),
        seconds: a.seconds.unwrap_or(if a.quick { 1.0 } else { 2.0 }),
        quick: a.quick,
        callgrind: !a.no_callgrind
            && Command::new("valgrind")
                .arg("--version")
                .stdin(Stdio::null())
                .output()
                .is_ok_and(|o| o.status.success()),
    };
    anyhow::ensure!(st.packets >= 1000, "--packets must be at least 1000");
    anyhow::ensure!(st.runs >= 1, "--runs must be at least 1");
    anyhow::ensure!(
        st.seconds.is_finite() && st.seconds > 0.0,
        "--seconds must be a positive number"
    );
    let sel = select(&a.only, a.quick)?;
    let cancel = stop_on_signals()?;
    let dir = tempfile::tempdir().context("making a temporary directory")?;
    write_sa_files(dir.path())?;
    let progress = std::io::stderr().is_terminal();
    println!(
        "bricks bench ipsec{}: {}",
        if a.quick { " --quick" } else { "" },
        crate::io::Machine::probe().describe()
    );
    let mut failed = false;
    let mut section = |name: &str, r: anyhow::Result<String>| {
        match r {
            Ok(text) => print!("\n{text}"),
            Err(e) => {
                failed = true;
                println!("\n{name}: failed: {e:#}");
            }
        }
        let _ = std::io::stdout().flush();
    };
    if !sel.memory.is_empty() {
        section(
            "in memory",
            memory_section(&sel.memory, dir.path(), &st, &cancel, progress),
        );
    }
    if sel.cores && !cancel.load(Ordering::Relaxed) {
        if progress {
            eprint!("\rcores ...");
        }
        let r = cores_section(dir.path(), &st, &cancel);
        if progress {
            eprint!("\r{:60}\r", "");
        }
        section("sequence numbers across cores", r);
    }
    if !sel.veth.is_empty() && !cancel.load(Ordering::Relaxed) {
        section(
            "through veths",
            veth_section(&sel.veth, dir.path(), &st, &cancel, progress),
        );
    }
    if !st.callgrind && !a.no_callgrind && !sel.memory.is_empty() {
        println!(
            "\n(valgrind not found: instructions per packet not counted; apt-get install valgrind)"
        );
    }
    if cancel.load(Ordering::Relaxed) {
        eprintln!("interrupted");
        return Ok(ExitCode::from(130));
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_configuration_checks_and_has_an_id() {
        let dir = tempfile::tempdir().unwrap();
        write_sa_files(dir.path()).unwrap();
        for size in SIZES {
            let c = MemConfig {
                suite: Suite::Aes128Gcm,
                size,
                stage: Stage::Source,
            };
            assert_eq!(MemConfig::parse(&c.id()), Some(c));
        }
        for (suite, size) in WORKLOADS {
            for stage in [Stage::Encap, Stage::Pipeline] {
                let c = MemConfig { suite, size, stage };
                assert_eq!(MemConfig::parse(&c.id()), Some(c), "{}", c.id());
                let r = run_memory(c, dir.path(), 100).unwrap_or_else(|e| panic!("{e:#}"));
                assert_eq!(r.packets, 100);
                assert!(r.inner_bytes >= 100 * 50, "{}", c.id());
            }
        }
        for s in [Sharing::Alone, Sharing::Shared, Sharing::Own] {
            crate::core::plan(bricks_config::Source {
                name: s.label().into(),
                text: cores_config(dir.path(), s, 100, 1),
            })
            .unwrap_or_else(|e| panic!("{e}"));
        }
    }

    #[test]
    fn the_split_file_gives_the_two_workers_different_sas() {
        let dir = tempfile::tempdir().unwrap();
        write_sa_files(dir.path()).unwrap();
        let seed = split_seed(dir.path()).unwrap();
        let r = run_cores(dir.path(), Sharing::Own, 500, seed).unwrap();
        assert_eq!(r.workers.len(), 2);
        assert!(r.workers.iter().all(|w| w.0 == 500));
        assert_eq!(r.sa1, 500);
    }

    #[test]
    fn only_selects_sections_and_workloads() {
        let all = select(&[], false).unwrap();
        assert_eq!(all.memory.len(), WORKLOADS.len());
        assert!(all.cores);
        assert_eq!(all.veth, [64, 1400]);
        let some = select(
            &[
                "aes128cbc-imix".into(),
                "aes128gcm-64".into(),
                "veth-64".into(),
            ],
            false,
        )
        .unwrap();
        assert_eq!(
            some.memory,
            [
                (Suite::Aes128Gcm, Size::Bytes(64)),
                (Suite::Aes128CbcSha1, Size::Imix)
            ]
        );
        assert!(!some.cores);
        assert_eq!(some.veth, [64]);
        let err = select(&["aes128".into()], false).unwrap_err().to_string();
        assert!(err.contains("aes128gcm-1400"), "{err}");
    }

    #[test]
    fn goals_are_judged_for_aes128_gcm_only() {
        let f = Figures {
            ns: 200.0,
            bytes: 64.0,
            instr: Some(1000.0),
        };
        assert_eq!(
            goal_text(Suite::Aes128Gcm, Size::Bytes(64), &f),
            ">= 4 Mpps met, <= 1500 instr met"
        );
        let slow = Figures { ns: 300.0, ..f };
        assert!(goal_text(Suite::Aes128Gcm, Size::Bytes(64), &slow).contains("NOT met"));
        assert_eq!(goal_text(Suite::Aes256Gcm, Size::Bytes(64), &f), "");
        let big = Figures {
            ns: 500.0,
            bytes: 1400.0,
            instr: None,
        };
        assert_eq!(
            goal_text(Suite::Aes128Gcm, Size::Bytes(1400), &big),
            ">= 20 Gbps met"
        );
    }
}
