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

use crate::io::{last_json, median, pin, Line, Port};
use crate::StopOnSignals;
use crate::{Context as _, Error};
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

mod cores;
mod memory;
mod veth;

use cores::*;
use memory::*;
use veth::*;

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
pub(crate) enum Suite {
    /// `rfc4106(gcm(aes))` with a 128-bit key.
    Aes128Gcm,
    /// `rfc4106(gcm(aes))` with a 256-bit key.
    Aes256Gcm,
    /// `cbc(aes)` with `hmac(sha1)` truncated to 96 bits.
    Aes128CbcSha1,
}

impl Suite {
    const ALL: [Suite; 3] = [Suite::Aes128Gcm, Suite::Aes256Gcm, Suite::Aes128CbcSha1];

    pub(crate) fn name(self) -> &'static str {
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
    pub(crate) fn state(self, spi: u32, reqid: u32) -> String {
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
fn write_sa_files(dir: &Path) -> Result<(), Error> {
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

/// Which sections and workloads `--only` selects.
#[derive(Debug)]
struct Selection {
    memory: Vec<(Suite, Size)>,
    cores: bool,
    veth: Vec<u16>,
}

fn select(only: &[String], quick: bool) -> Result<Selection, Error> {
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
                    return Err(Error::Argument(format!(
                        "--only: no section or workload `{n}`; there are memory, cores, veth, \
                         veth-64, veth-1400, {}",
                        names.join(", ")
                    )));
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
pub fn bench(a: &IpsecArgs, stop_on_signals: StopOnSignals) -> Result<ExitCode, Error> {
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
    for (ok, why) in [
        (st.packets >= 1000, "--packets must be at least 1000"),
        (st.runs >= 1, "--runs must be at least 1"),
        (
            st.seconds.is_finite() && st.seconds > 0.0,
            "--seconds must be a positive number",
        ),
    ] {
        if !ok {
            return Err(Error::Argument(why.into()));
        }
    }
    let sel = select(&a.only, a.quick)?;
    let cancel = stop_on_signals().context("installing signal handlers")?;
    let dir = tempfile::tempdir().context("making a temporary directory")?;
    write_sa_files(dir.path())?;
    let progress = std::io::stderr().is_terminal();
    println!(
        "bricks bench ipsec{}: {}",
        if a.quick { " --quick" } else { "" },
        crate::io::Machine::probe().describe()
    );
    let mut failed = false;
    let mut section = |name: &str, r: Result<String, Error>| {
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
            crate::measure::plan(bricks_config::Source {
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
