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
//! **The generator.** The tester must outrun the router. For a subject
//! that reads its input with one worker (Linux, XDP_REDIRECT, bricks on
//! one core) the generator is `bricks gen --backend live`: an XDP program
//! run by the kernel in live-frames mode (`BPF_PROG_RUN`), which sends
//! from inside the kernel with no socket or skb, 2.5 to 3 Mpps on one CPU
//! here, against about 1 Mpps for AF_XDP in copy mode, which bounded
//! every fast subject. It also hands r0 its frames as XDP frames, as a
//! NIC's driver does, so a subject pays for the skb it builds (Linux), or
//! for none (XDP), on the router's CPU; the AF_XDP generator built every
//! skb on the tester's CPU. `--generator xdp` measures every subject with
//! AF_XDP instead.
//!
//! **Queues.** A veth hands a frame to the receive queue numbered like the
//! transmit queue it was sent on (an XDP frame: like the sending CPU), and
//! a veth has no RSS. For the subjects with more than one worker the
//! generator runs two AF_XDP workers (`bricks gen --threads 2`, both on
//! the tester CPU), each sending its own flows on its own transmit queue
//! of g0, so both of r0's receive queues get traffic. AF_XDP rather than
//! AF_PACKET: on this kind of machine it sends about twice as many frames
//! per second per CPU.
//!
//! The network is deleted at the end, on errors and on Ctrl-C.

use crate::StopOnSignals;
use crate::{Context as _, Error};
use bricks_netns::{ChildGuard, Network};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

mod net;
mod other_work;
mod procs;
pub mod queues;
mod report;
mod subjects;
mod testbed;
pub mod wishlist;

pub use net::Machine;
use net::*;
pub(crate) use net::{pin, Line, Port};
pub use procs::last_json;
use procs::*;
use report::*;
use subjects::*;
use testbed::*;

/// `bricks bench io` options.
#[derive(clap::Args)]
#[command(
    after_help = "Subjects (for --only): linux, xdp-redirect, bricks, bricks-fastpath (the \
    same configuration with FromDevice's FASTPATH: the XDP fast path), bricks-fastpath-skb \
    (the fast path in generic mode), bricks-prefer-busy-poll (FromDevice's BUSY_POLL 50us: \
    the worker runs r0's NAPI in its own polls), bricks-kp1, \
    bricks-kn1, bricks-nobatch, bricks-push, bricks-packet, bricks-2w (and bricks-Nw up to \
    a worker per core), bricks-pipeline, bricks-serial; \
    latency at a low rate: lat-linux, lat-xdp-redirect, lat-bricks, lat-bricks-flush0, \
    lat-bricks-kn1, lat-bricks-busypoll (or `latency` for all of them).\n\n\
    Each run also measures the other work on the machine while the generator sends: the \
    CPU time of processes that are not the bench's and the hypervisor's steal, in CPUs \
    (column `other CPU`). Two subjects' rates are compared only when that work was about \
    the same for both (within a quarter of a CPU); otherwise the report says `busy` and \
    why.\n\n\
    Examples:\n  \
    sudo bricks bench io\n  \
    sudo bricks bench io --seconds 1 --runs 1 --only linux,bricks\n  \
    sudo bricks bench io --only linux,xdp-redirect,bricks,bricks-fastpath\n  \
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
    /// Seconds of one run of each subject, at full speed, before the
    /// measured runs, its figures thrown away: the first seconds of a
    /// bench (programs and pages loaded, kernel threads started, a VM's
    /// vCPUs woken) are slower than the rest, and would widen the spread
    /// of whichever subject ran first; 0 skips it.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    pub warm_up: f64,
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
    /// offered rate it forwards with at most --max-loss), searched once a
    /// run for its median and spread; 0 skips it.
    #[arg(long, default_value_t = 6, value_name = "N")]
    pub search_steps: u32,
    /// Trials at each rate of the search: a rate is loss-free when at
    /// least half of them are, and its trials stop once that is decided.
    /// With 2, a rate whose first trial loses too much is tried once more,
    /// so that one burst of loss from elsewhere on the machine does not
    /// put the search a step lower (FD.io MLRsearch's goal exceed ratio of
    /// 50 %); 1 is the plain bisection.
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub probe_trials: u32,
    /// The loss, in percent of the frames sent, that still counts as
    /// loss-free in the search.
    #[arg(long, default_value_t = 1.0, value_name = "PERCENT")]
    pub max_loss: f64,
    /// The generator: `live` (XDP live frames, `bricks gen --backend
    /// live`: frames sent from inside the kernel, one queue) for the
    /// subjects that read one queue, AF_XDP on every queue for the others;
    /// or `xdp` (AF_XDP, `bricks gen --backend xdp --threads 2`) for all.
    #[arg(long, value_enum, default_value = "live")]
    pub generator: Generator,
    /// Hold an XDP program until killed (used by the bench itself, inside
    /// the router's or the sink's namespace): `redirect:FROM:TO` or
    /// `pass:IF`.
    #[arg(long, hide = true, value_name = "SPEC")]
    pub xdp_hold: Option<String>,
}

/// How `bricks gen` sends in the runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Generator {
    /// XDP live frames where the subject reads one queue: two to three
    /// times AF_XDP's rate on a veth, so the router, not the generator,
    /// sets the figure.
    Live,
    /// AF_XDP, two workers, one transmit queue each.
    Xdp,
}

/// Exit status when the bench cannot run here (no root, missing tools).
const CANNOT_RUN: u8 = 2;

/// Queues of every veth (RX and TX): one per core, so that the worker
/// sweep's largest count (a worker per core, each owning a queue) has a
/// queue for every worker; at least two, for the generator's two
/// workers.
pub(crate) fn queues() -> u32 {
    (cores() as u32).max(2)
}

/// The cores this process may use: how far the worker sweep goes (the
/// NIC paper's Figs. 2 and 3).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
/// How long the sink gets to open its sockets before the generator
/// starts.
const SINK_START: Duration = Duration::from_millis(700);
/// How long the sink keeps receiving after the generator has stopped.
const DRAIN: Duration = Duration::from_millis(300);
/// The niceness of generator, sink and router: other jobs on the machine
/// then get about 1% of a CPU the bench's processes want (weight 88761
/// against 1024), so a busy machine disturbs the figures less.
const NICE: &str = "-20";
/// The niceness of the live generator (see [`Testbed::gen`]).
const GEN_LIVE_NICE: &str = "19";
/// SCHED_FIFO priority of the veths' NAPI threads: above every ordinary
/// thread, below the kernel's own real-time threads.
const NAPI_PRIORITY: &str = "10";

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

/// Holds an XDP program in this process's namespace until killed (the
/// kernel detaches it when the process dies).
fn xdp_hold(spec: &str, stop_on_signals: StopOnSignals) -> Result<ExitCode, Error> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (held, mode): (Box<dyn std::any::Any>, String) = match parts.as_slice() {
        ["redirect", from, to] => {
            let r = bricks_io::xdp::redirect(from, to)
                .map_err(|e| Error::Network(format!("XDP_REDIRECT {from} -> {to}: {e}")))?;
            let mode = match r.fallback_reason() {
                Some(why) => format!("{} ({why})", r.mode()),
                None => r.mode().to_string(),
            };
            (Box::new(r), mode)
        }
        ["pass", ifname] => {
            let p = bricks_io::xdp::attach_pass(ifname, bricks_io::xdp::XdpMode::Auto)
                .map_err(|e| Error::Network(format!("XDP_PASS on {ifname}: {e}")))?;
            let mode = p.mode().to_string();
            (Box::new(p), mode)
        }
        _ => {
            return Err(Error::Argument(format!(
                "--xdp-hold {spec}: expected redirect:FROM:TO or pass:IF"
            )))
        }
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
pub fn bench(a: &IoArgs, stop_on_signals: StopOnSignals) -> Result<ExitCode, Error> {
    if let Some(spec) = &a.xdp_hold {
        return xdp_hold(spec, stop_on_signals);
    }
    let chosen = select(subjects(a.latency_rate), &a.only)?;
    if let Some(why) = cannot_run(a)? {
        eprintln!("{why}");
        return Ok(ExitCode::from(CANNOT_RUN));
    }
    let cancel = stop_on_signals()?;
    let m = measure(a, chosen, &cancel, !a.json)?;
    if cancel.load(Ordering::Relaxed) {
        eprintln!("interrupted; the test network is deleted");
        return Ok(ExitCode::from(130));
    }
    if a.json {
        println!(
            "{}",
            report_json(a, &m.machine, &m.measured, m.load_start, m.load_end)
        );
    } else {
        print!("{}", report_text(a, &m.measured, m.load_end));
    }
    let failed = m.measured.iter().any(|m| m.runs.is_empty());
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Why `bricks bench io` cannot run here (no root, a missing tool), or an
/// error in its arguments.
fn cannot_run(a: &IoArgs) -> Result<Option<String>, Error> {
    for (ok, why) in [
        (
            a.seconds.is_finite() && a.seconds > 0.0,
            "--seconds must be a positive number",
        ),
        (a.runs >= 1, "--runs must be at least 1"),
        (
            a.warm_up.is_finite() && a.warm_up >= 0.0,
            "--warm-up must be 0 or a positive number of seconds",
        ),
        (a.flows >= 1, "--flows must be at least 1"),
        (a.latency_rate >= 1, "--latency-rate must be at least 1"),
        (
            a.max_loss.is_finite() && (0.0..100.0).contains(&a.max_loss),
            "--max-loss must be a percentage below 100",
        ),
    ] {
        if !ok {
            return Err(Error::Argument(why.into()));
        }
    }
    if !bricks_netns::is_root() {
        return Ok(Some(format!(
            "bricks bench io needs root: it builds network namespaces joined by veth links, \
             attaches XDP programs and pins kernel threads (CAP_NET_ADMIN, CAP_SYS_ADMIN, \
             CAP_BPF). Run it as root: sudo {} bench io",
            std::env::args().next().unwrap_or_else(|| "bricks".into())
        )));
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
            return Ok(Some(format!(
                "bricks bench io needs `{tool}` (apt-get install {hint})"
            )));
        }
    }
    Ok(None)
}

/// What a measurement of the subjects gave.
struct Measurement {
    machine: Machine,
    measured: Vec<Measured>,
    load_start: f64,
    load_end: f64,
}

/// Builds the test network and measures `chosen`: `a.runs` runs each,
/// then the loss-free rate search. Prints the header when `header`.
fn measure(
    a: &IoArgs,
    chosen: Vec<Subject>,
    cancel: &Arc<AtomicBool>,
    header: bool,
) -> Result<Measurement, Error> {
    let machine = Machine::probe();
    let load_start = load_average();
    let mut bed = Testbed::build(machine.clone(), a.flows, cancel.clone())
        .context("building the test network")?;
    bed.live = a.generator == Generator::Live;
    if header {
        print_header(a, &machine, load_start);
    }
    let mut measured: Vec<Measured> = chosen
        .into_iter()
        .map(|s| Measured {
            cpus: machine.cpus_for(&s),
            subject: s,
            runs: Vec::new(),
            errors: Vec::new(),
            searches: Vec::new(),
        })
        .collect();
    let progress = std::io::stderr().is_terminal();
    if a.warm_up > 0.0 {
        for m in &measured {
            if bed.cancelled() {
                break;
            }
            if progress {
                eprint!("\rwarming up: {:<40}", m.subject.name);
                let _ = std::io::stderr().flush();
            }
            // Thrown away, failures too: a subject that cannot run fails
            // again in its measured runs, which report why.
            let _ = bed.run(&m.subject, a.warm_up, m.subject.rate);
        }
    }
    let total = measured.len() * a.runs;
    let mut done = 0;
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
        // One search a run, going round the subjects as the runs above
        // do, so that the loss-free rate has a spread and a change in the
        // machine's load touches every subject.
        let probe_secs = a.seconds.min(3.0);
        let total = searched.len() * a.runs;
        let mut done = 0;
        for run in 0..a.runs {
            for &i in &searched {
                if bed.cancelled() {
                    break;
                }
                done += 1;
                if progress {
                    eprint!(
                        "\r[{done}/{total}] loss-free rate, search {} of {}: {:<22}",
                        run + 1,
                        a.runs,
                        measured[i].subject.name
                    );
                    let _ = std::io::stderr().flush();
                }
                match search(
                    &bed,
                    &measured[i],
                    probe_secs,
                    a.search_steps,
                    a.probe_trials,
                    a.max_loss,
                ) {
                    Ok(s) => measured[i].searches.push(s),
                    Err(e) => measured[i]
                        .errors
                        .push(format!("searching the loss-free rate: {e:#}")),
                }
            }
        }
    }
    if progress {
        eprint!("\r{:60}\r", "");
    }
    drop(bed);
    Ok(Measurement {
        machine,
        measured,
        load_start,
        load_end: load_average(),
    })
}

/// The subjects the papers' ratios compare (RouteBricks Table 1, Figs. 6
/// and 7; the NIC paper's Figs. 2 and 3, whose rate against cores is
/// swept from one worker to one per core of this machine).
pub fn paper_subjects() -> Vec<String> {
    let mut v: Vec<String> = ["bricks", "bricks-kn1", "bricks-nobatch", "bricks-2w"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.extend((3..=cores()).map(workers_name));
    v.extend(["bricks-pipeline".into(), "bricks-serial".into()]);
    v
}

/// The subject of `n` workers with per-core queues (`bricks` for one).
pub fn workers_name(n: usize) -> String {
    if n == 1 {
        "bricks".into()
    } else {
        format!("bricks-{n}w")
    }
}

/// How AF_XDP ran, from the router's report lines (`r0: af_xdp native
/// copy, rx q0->w0 q1->w0 (why)`): the mode, and the kernel's reason
/// when it fell back. `None` when no line shows AF_XDP.
pub fn af_xdp_mode<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<String> {
    lines.into_iter().find_map(|l| {
        let rest = l.strip_prefix("r0: af_xdp ")?;
        let (mode, tail) = rest.split_once(", rx").unwrap_or((rest, ""));
        let note = tail
            .find(" (")
            .map(|i| tail[i + 2..].strip_suffix(')').unwrap_or(&tail[i + 2..]))
            .filter(|n| !n.is_empty());
        Some(match note {
            Some(n) => format!("{mode} ({n})"),
            None => mode.to_string(),
        })
    })
}

/// RouteBricks Table 1 and Figs. 6-7 and the NIC paper's Figs. 2-3 on
/// veths: the papers' subjects measured with `a`'s settings, a summary
/// row per ratio with the paper's value beside it, and how AF_XDP ran
/// ([`af_xdp_mode`]).
pub fn paper_rows(
    a: &IoArgs,
    stop_on_signals: StopOnSignals,
) -> Result<(Vec<crate::report::Row>, Option<String>), crate::Error> {
    let err = |e: Error| Error::Run {
        workload: "bench io".into(),
        message: format!("{e:#}"),
    };
    let only = paper_subjects();
    let chosen = select(subjects(a.latency_rate), &only).map_err(err)?;
    if let Some(why) = cannot_run(a).map_err(err)? {
        return Err(crate::Error::Run {
            workload: "bench io".into(),
            message: why,
        });
    }
    let cancel = stop_on_signals().map_err(|e| err(e.into()))?;
    let m = measure(a, chosen, &cancel, true).map_err(err)?;
    print!("{}", report_text(a, &m.measured, m.load_end));
    let mode = af_xdp_mode(
        m.measured
            .iter()
            .filter(|x| x.subject.name == "bricks")
            .flat_map(|x| x.runs.iter())
            .flat_map(|r| r.notes.iter().map(String::as_str)),
    );
    if let Some(mode) = &mode {
        println!("AF_XDP: {mode}");
    }
    Ok((report::paper_rows(&m.measured, m.machine.cpus.len()), mode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list(&[0, 1, 3]), "0,1,3");
    }

    /// Port `k` of a line, as [`Line::build_ports`] names it, with made-up
    /// MACs and no NAPI threads.
    fn port(k: u32) -> Port {
        Port {
            index: k,
            gen_if: format!("g{k}"),
            in_if: format!("r{}", 2 * k),
            out_if: format!("r{}", 2 * k + 1),
            sink_if: format!("s{k}"),
            in_mac: "02:00:00:00:00:00".into(),
            out_mac: "02:00:00:00:00:01".into(),
            sink_mac: "02:00:00:00:00:02".into(),
            in_napi: Vec::new(),
            sink_napi: Vec::new(),
        }
    }

    #[test]
    fn the_router_configuration_checks() {
        // Bound to (empty) captures, the interfaces are not declared live,
        // so configurations with different backends can all be checked in
        // one process.
        for ifname in ["r0", "r1", "r2", "r3"] {
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
                for p in [port(0), port(1)] {
                    let text = bricks_config(b, &p);
                    crate::measure::plan(bricks_config::Source {
                        name: s.name.into(),
                        text: text.clone(),
                    })
                    .unwrap_or_else(|e| panic!("{}: {e}\n{text}", s.name));
                    assert!(text.contains(&format!("BURST {}", b.kp)), "{text}");
                }
            }
        }
        // The second port forwards its own subnets between its own
        // interfaces.
        let text = bricks_config(&BRICKS, &port(1));
        assert!(text.contains("FromDevice(r2,"), "{text}");
        assert!(text.contains("ToDevice(r3,"), "{text}");
        assert!(
            text.contains("StaticIPLookup(10.73.0.0/24 0, 10.72.0.0/24 1)"),
            "{text}"
        );
        assert_eq!(port(1).gen_addr(), "10.72.0.2");
        assert_eq!(port(0).sink_addr(), "10.71.0.2");
    }

    #[test]
    fn side_by_side_runs_add_up() {
        let g = GenReport::sum(&[
            GenReport {
                sent: 100,
                elapsed: 1.0,
            },
            GenReport {
                sent: 300,
                elapsed: 2.0,
            },
        ]);
        assert_eq!(g.sent, 400);
        // 100/s and 150/s side by side: 250/s.
        assert!((g.sent as f64 / g.elapsed - 250.0).abs() < 1e-9, "{g:?}");
        let s = SinkReport::sum(&[
            SinkReport {
                received: 10,
                mpps: 0.5,
                latency: [1, 2, 3, 4, 5],
            },
            SinkReport {
                received: 20,
                mpps: 0.25,
                latency: [5, 1, 3, 9, 0],
            },
        ]);
        assert_eq!((s.received, s.mpps), (30, 0.75));
        assert_eq!(s.latency, [5, 2, 3, 9, 5]);
        assert_eq!(GenReport::sum(&[]).elapsed, 0.0);
    }

    #[test]
    fn live_frames_go_to_the_subjects_that_read_one_queue() {
        let all = subjects(10_000);
        let by = |n: &str| all.iter().find(|s| s.name == n).unwrap().reads_one_queue();
        assert!(by("linux") && by("xdp-redirect") && by("bricks") && by("bricks-fastpath"));
        let many: Vec<&Subject> = all
            .iter()
            .filter(|s| s.wide || matches!(&s.fwd, Forwarder::Bricks(b) if b.threads > 1))
            .collect();
        assert!(!many.is_empty());
        assert!(many.iter().all(|s| !s.reads_one_queue()));
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

    /// The papers' subjects sweep the workers from one to a worker per
    /// core, each count on as many CPUs, and the NIC paper's rows read the
    /// sweep.
    #[test]
    fn the_worker_sweep_reaches_every_core() {
        let names = paper_subjects();
        let all = subjects(10_000);
        let machine = Machine {
            cpus: (0..cores()).collect(),
            model: String::new(),
            kernel: String::new(),
        };
        for n in 1..=cores() {
            let name = workers_name(n);
            assert!(names.contains(&name), "{name} not in {names:?}");
            let s = all.iter().find(|s| s.name == name).unwrap();
            let Forwarder::Bricks(b) = &s.fwd else {
                panic!("{name} is not bricks")
            };
            assert_eq!(b.threads, n);
            assert_eq!(machine.cpus_for(s).len(), n.max(1), "{name}");
        }
        assert!(queues() as usize >= cores());
        let rows = report::sweep_rows(&[(1, 1.0), (2, 1.6)], 2);
        assert_eq!(rows.len(), 2);
        assert!(
            rows[0].measure.contains("workers 1 to 2"),
            "{}",
            rows[0].measure
        );
        assert!(rows[0].verdict.holds(), "{}", rows[0].verdict);
        assert!(rows[0].verdict.to_string().contains("below 2x"));
        let superlinear = report::sweep_rows(&[(1, 1.0), (2, 4.9)], 2);
        assert!(!superlinear[0].verdict.to_string().contains("below"));
        assert_eq!(rows[1].bricks, "1: 1.00, 2: 0.80");
        assert!(rows[1].verdict.holds());
        let flat = report::sweep_rows(&[(1, 1.0), (2, 1.0)], 2);
        assert!(!flat[0].verdict.holds());
        assert!(!flat[1].verdict.holds());
        let one = report::sweep_rows(&[(1, 1.0)], 1);
        assert!(matches!(one[0].verdict, crate::report::Verdict::NotRun(_)));
    }

    #[test]
    fn the_af_xdp_mode_is_read_from_the_router() {
        let lines = [
            "dispatcher: none",
            "r1: af_xdp native copy, rx q0->w0",
            "r0: af_xdp native copy, rx q0->w0 q1->w0",
        ];
        assert_eq!(af_xdp_mode(lines).as_deref(), Some("native copy"));
        assert_eq!(
            af_xdp_mode(["r0: af_xdp generic copy, rx q0->w0 (native XDP refused: EOPNOTSUPP)"])
                .as_deref(),
            Some("generic copy (native XDP refused: EOPNOTSUPP)")
        );
        // The kernel's reason keeps its own parentheses.
        assert_eq!(
            af_xdp_mode([
                "r0: af_xdp native copy, rx q0->w0 (zero-copy refused: no (os error 95))"
            ])
            .as_deref(),
            Some("native copy (zero-copy refused: no (os error 95))")
        );
        assert_eq!(af_xdp_mode(["r0: af_packet fanout qm, rx q0->w0"]), None);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
    }
    /// The arguments the report tests print with: three runs, a search
    /// of six steps with two trials a rate.
    fn report_args() -> IoArgs {
        IoArgs {
            seconds: 1.0,
            runs: 3,
            warm_up: 1.0,
            only: Vec::new(),
            json: false,
            flows: 1,
            latency_rate: 10_000,
            search_steps: 6,
            probe_trials: 2,
            max_loss: 1.0,
            generator: Generator::Live,
            xdp_hold: None,
        }
    }

    /// A subject measured at a load average of `load` delivering `mpps`
    /// in every run, with loss-free searches finding `free`.
    fn measured(name: &str, load: f64, mpps: f64, free: &[f64]) -> report::Measured {
        measured_with(name, load, None, mpps, free)
    }

    /// [`measured`] with `other` CPUs of other work in every run.
    fn measured_with(
        name: &str,
        load: f64,
        other: Option<f64>,
        mpps: f64,
        free: &[f64],
    ) -> report::Measured {
        let run = |load: f64| RunResult {
            gen: GenReport {
                sent: 1_000_000,
                elapsed: 1.0,
            },
            sink: SinkReport {
                mpps,
                ..Default::default()
            },
            load,
            other,
            ..Default::default()
        };
        report::Measured {
            subject: subjects(10_000)
                .into_iter()
                .find(|s| s.name == name)
                .unwrap(),
            cpus: vec![0],
            runs: vec![run(load), run(load)],
            errors: Vec::new(),
            searches: free
                .iter()
                .map(|&f| testbed::Search {
                    probes: vec![(1, run(load))],
                    best: Some((f, 0.5)),
                    tester_bound: false,
                })
                .collect(),
        }
    }

    /// The loss-free rate is the median of one search a run, shown with
    /// its spread and the load; subjects measured under a different load
    /// are not compared, and the report says why.
    #[test]
    fn subjects_under_different_load_are_not_compared() {
        let a = report_args();
        let linux = measured("linux", 0.4, 0.5, &[0.40, 0.44, 0.42]);
        let same = measured("bricks", 0.7, 0.6, &[0.50, 0.63, 0.55]);
        let l = linux.loss_free().unwrap();
        assert_eq!((l.median, l.min, l.max), (0.42, 0.40, 0.44));
        assert!(report::incomparable(&linux, &same).is_none());
        let text = report::report_text(&a, &[linux, same], 0.5);
        assert!(
            text.contains("0.550") && text.contains("0.500..0.630"),
            "{text}"
        );
        assert!(text.contains("1.31"), "{text}");
        assert!(text.contains("0.4..0.4"), "{text}");

        let linux = measured("linux", 0.4, 0.5, &[0.42]);
        let busy = measured("bricks", 2.1, 0.6, &[0.55]);
        let why = report::incomparable(&linux, &busy).unwrap();
        assert!(why.contains("0.40") && why.contains("2.10"), "{why}");
        let text = report::report_text(&a, &[linux, busy], 0.5);
        assert!(!text.contains("1.31"), "{text}");
        assert!(
            text.contains("not compared: load 2.10 (bricks) against 0.40 (linux)"),
            "{text}"
        );
        // A busier machine by a quarter of a large load is still the same.
        let a4 = measured("linux", 4.0, 0.5, &[0.42]);
        let b4 = measured("bricks", 4.9, 0.6, &[0.55]);
        assert!(report::incomparable(&a4, &b4).is_none());
    }

    /// Two subjects that both forwarded everything the generator sent are
    /// compared by their Mpps per busy router CPU: the loss-free ratio
    /// alone leaves the goal open.
    #[test]
    fn generator_bound_subjects_are_compared_by_capacity() {
        let a = report_args();
        let bound = |name: &str, free: f64, busy: f64| {
            let mut m = measured(name, 0.5, free, &[free]);
            for r in &mut m.runs {
                r.router_busy = Some(busy);
            }
            for s in &mut m.searches {
                s.tester_bound = true;
            }
            m
        };
        // 1.8 Mpps at 50 % of a CPU (3.6 a CPU) against 1.7 at 35 % (4.86).
        let both = [
            bound("bricks-fastpath", 1.8, 0.5),
            bound("xdp-redirect", 1.7, 0.35),
        ];
        let r = report::RATIOS
            .iter()
            .find(|r| r.name == "bricks fast path / XDP_REDIRECT")
            .unwrap();
        let c = report::ratio_value(&both, r, report::Figure::PerBusyCpu).unwrap();
        assert!((c - 3.6 / (1.7 / 0.35)).abs() < 1e-9, "{c}");
        let text = report::report_text(&a, &both, 0.5);
        assert!(
            text.contains("goal >= 0.6: open at the generator's rate, which bounds both sides; by Mpps per busy router CPU 0.74: met"),
            "{text}"
        );
        // 0.5 Mpps on a whole CPU: a tenth of XDP_REDIRECT's, not met.
        let both = [
            bound("bricks-fastpath", 0.5, 1.0),
            bound("xdp-redirect", 1.7, 0.35),
        ];
        let text = report::report_text(&a, &both, 0.5);
        assert!(text.contains("per busy router CPU 0.10: NOT met"), "{text}");
    }

    /// Where other work was measured, it decides, not the load average:
    /// a router that busy-polls a CPU raises the load by one on an idle
    /// machine and is still compared with Linux; a subject measured while
    /// something else took half a CPU is not.
    #[test]
    fn other_work_decides_whether_subjects_are_compared() {
        let a = report_args();
        let linux = measured_with("linux", 0.3, Some(0.02), 0.5, &[0.40]);
        let polling = measured_with("bricks", 1.4, Some(0.05), 0.6, &[0.60]);
        assert!(report::incomparable(&linux, &polling).is_none());
        let text = report::report_text(&a, &[linux, polling], 0.9);
        assert!(text.contains("1.50"), "{text}");
        assert!(text.contains("0.05..0.05"), "{text}");
        assert!(
            text.contains("other work while the generator sent: 0.02 to 0.05 CPUs\n"),
            "{text}"
        );

        let linux = measured_with("linux", 0.3, Some(0.02), 0.5, &[0.40]);
        let crowded = measured_with("bricks", 1.4, Some(0.60), 0.6, &[0.60]);
        let why = report::incomparable(&linux, &crowded).unwrap();
        assert_eq!(
            why,
            "not compared: other work 0.02 CPUs (linux) against 0.60 (bricks)"
        );
        let text = report::report_text(&a, &[linux, crowded], 0.9);
        assert!(!text.contains("1.50"), "{text}");
        assert!(text.contains("busy"), "{text}");
        assert!(text.contains("something else competed"), "{text}");
    }
}
