//! `bricks bench multistage`: Bianco et al., "Scalable Layer-2/Layer-3
//! Multistage Switching Architectures for Software Routers" (HPSR 2007),
//! §II-C and §IV, on this machine.
//!
//! Each experiment is one module: its setup, its measurements, the
//! paper's value or shape, and a verdict with its reason.
//!
//! - [`model`]: Fig. 1, the single-PC model (a packet-rate limit and a
//!   bus limit), computed with the paper's figures and with this
//!   machine's measured packet rate.
//! - [`single`]: Fig. 5, one bricks IPv4 router's forwarding rate against
//!   the frame size between veths, beside the line rates, and what
//!   allocating a buffer per packet instead of recycling it would cost.
//! - [`balancer`]: Fig. 6, an `L2Balancer` in memory: ODB against DTX-n
//!   for n = 1, 2, 3 back ports, rate and instructions per packet.
//! - [`scaling`]: Fig. 7, a whole multistage router (`bricks multistage
//!   up`) with every box capped at a fixed rate, as balancers and routers
//!   are added.
//!
//! Fig. 5 runs first when it is selected: Fig. 1's second model takes its
//! measured 64-byte rate.

pub mod balancer;
pub mod model;
pub(crate) mod procs;
pub mod scaling;
pub mod single;

use crate::report::{summary, Row, Verdict};
use crate::Error;
use std::path::PathBuf;
use std::time::Instant;

/// The experiments, by the figures they redo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Experiment {
    /// Fig. 1: the single-PC model of the saturation forwarding rate.
    Fig1,
    /// Fig. 5: one router's rate against the frame size on veths.
    Fig5,
    /// Fig. 6: a balancer in memory, ODB against DTX-n.
    Fig6,
    /// Fig. 7: aggregate throughput as balancers and routers are added.
    Fig7,
}

impl Experiment {
    /// Every experiment, in the paper's order.
    pub const ALL: [Experiment; 4] = [
        Experiment::Fig1,
        Experiment::Fig5,
        Experiment::Fig6,
        Experiment::Fig7,
    ];

    /// The figure it redoes.
    pub fn figure(self) -> &'static str {
        match self {
            Experiment::Fig1 => "Fig. 1",
            Experiment::Fig5 => "Fig. 5",
            Experiment::Fig6 => "Fig. 6",
            Experiment::Fig7 => "Fig. 7",
        }
    }

    fn run(self, s: &Settings, found: &mut Findings) -> Result<Vec<Row>, Error> {
        match self {
            Experiment::Fig1 => model::run(s, found),
            Experiment::Fig5 => single::run(s, found),
            Experiment::Fig6 => balancer::run(s),
            Experiment::Fig7 => scaling::run(s),
        }
    }
}

/// `bricks bench multistage`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct MultistageArgs {
    /// Run each experiment briefly: fewer packets, sizes and
    /// configurations, one run each.
    #[arg(long)]
    pub quick: bool,
    /// Run only these experiments (all when none is given).
    #[arg(long, value_enum)]
    pub only: Vec<Experiment>,
    /// Directory for the SVG plots.
    #[arg(short = 'o', long = "out", default_value = "target/bench-multistage")]
    pub out: PathBuf,
    /// Timed runs per point; the median and the range are reported
    /// (default 5, 1 with --quick).
    #[arg(long)]
    pub runs: Option<usize>,
    /// Skip counting instructions per packet with callgrind.
    #[arg(long)]
    pub no_callgrind: bool,
    /// Run one workload once and print nothing (what callgrind runs).
    #[arg(long, hide = true)]
    pub one: Option<String>,
    /// Packets of the --one workload.
    #[arg(long, hide = true, default_value_t = 100_000)]
    pub packets: u64,
    /// With --one: print the seconds it ran and the frames it delivered.
    #[arg(long, hide = true, requires = "one")]
    pub time: bool,
}

/// How the experiments run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Brief runs.
    pub quick: bool,
    /// Timed runs per point.
    pub runs: usize,
    /// The `bricks` binary, to re-run under callgrind; `None`: no
    /// instruction counts.
    pub callgrind: Option<PathBuf>,
    /// The `bricks` binary, for the experiments that start processes
    /// (`bricks run`, `gen`, `sink`, `multistage up`).
    pub exe: Option<PathBuf>,
    /// Where plots go.
    pub out: PathBuf,
}

impl Settings {
    /// `full` in a full run, `quick` with --quick.
    pub fn pick<T>(&self, full: T, quick: T) -> T {
        if self.quick {
            quick
        } else {
            full
        }
    }
}

/// What one experiment measured that another uses.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    /// One bricks router's 64-byte forwarding rate (packets/s) and where
    /// it was measured.
    pub packet_rate: Option<(f64, String)>,
}

/// A summary row saying that `experiment` was not run, and why.
pub fn not_run(experiment: Experiment, measure: &str, paper: &str, why: String) -> Row {
    Row {
        experiment: experiment.figure().into(),
        measure: measure.into(),
        paper: paper.into(),
        bricks: "-".into(),
        verdict: Verdict::NotRun(why),
    }
}

/// Why the experiments that build network namespaces cannot run here, if
/// they cannot.
pub fn cannot_use_namespaces(s: &Settings) -> Option<String> {
    if !bricks_netns::is_root() {
        return Some(
            "needs root to build network namespaces (sudo bricks bench multistage)".into(),
        );
    }
    if s.exe.is_none() {
        return Some("the bricks binary was not found".into());
    }
    if !bricks_netns::have_ethtool() {
        return Some("needs ethtool (apt-get install ethtool)".into());
    }
    None
}

/// Runs `bricks bench multistage`. Returns whether every experiment ran
/// or was skipped for a reason it printed (a verdict that differs from
/// the paper is a result, not a failure).
pub fn bench(a: &MultistageArgs) -> Result<bool, Error> {
    if let Some(name) = &a.one {
        return one(name, a.packets, a.time).map(|()| true);
    }
    let (rows, all_ran) = collect(a)?;
    println!("\n## Summary\n");
    print!("{}", summary(&rows).render());
    Ok(all_ran)
}

/// Runs the experiments `a` selects and returns their summary rows, and
/// whether every one ran (a verdict that differs from the paper is a
/// result, not a failure). Progress and each experiment's own tables go
/// to standard output.
pub fn collect(a: &MultistageArgs) -> Result<(Vec<Row>, bool), Error> {
    std::fs::create_dir_all(&a.out)?;
    let exe = std::env::current_exe().ok();
    let callgrind = if a.no_callgrind {
        None
    } else if crate::measure::valgrind_available() {
        exe.clone()
    } else {
        println!(
            "(valgrind not found: instructions per packet not counted; apt-get install valgrind)"
        );
        None
    };
    let s = Settings {
        quick: a.quick,
        runs: a.runs.unwrap_or(if a.quick { 1 } else { 5 }).max(1),
        callgrind,
        exe,
        out: a.out.clone(),
    };
    let selected: Vec<Experiment> = if a.only.is_empty() {
        Experiment::ALL.to_vec()
    } else {
        Experiment::ALL
            .into_iter()
            .filter(|e| a.only.contains(e))
            .collect()
    };
    // Fig. 1's second model uses Fig. 5's measured rate.
    let mut order = selected.clone();
    if let Some(i) = order.iter().position(|e| *e == Experiment::Fig5) {
        let f5 = order.remove(i);
        order.insert(0, f5);
    }
    println!(
        "bricks bench multistage: Bianco et al. (HPSR 2007) on this machine; {}, {} run{} per \
         point; plots in {}",
        if s.quick { "quick" } else { "full" },
        s.runs,
        if s.runs == 1 { "" } else { "s" },
        s.out.display()
    );
    let mut found = Findings::default();
    let mut rows: Vec<(Experiment, Row)> = Vec::new();
    let mut all_ran = true;
    for e in order {
        println!("\n## {}", e.figure());
        let t = Instant::now();
        match e.run(&s, &mut found) {
            Ok(r) => rows.extend(r.into_iter().map(|r| (e, r))),
            Err(err) => {
                all_ran = false;
                println!("error: {err}");
                rows.push((e, not_run(e, "-", "-", format!("error: {err}"))));
            }
        }
        println!("({:.1} s)", t.elapsed().as_secs_f64());
    }
    // The summary in the paper's order.
    rows.sort_by_key(|(e, _)| Experiment::ALL.iter().position(|x| x == e));
    let rows: Vec<Row> = rows.into_iter().map(|(_, r)| r).collect();
    Ok((rows, all_ran))
}

/// Runs the workload `name` once with `packets` packets: silently (for
/// callgrind), or printing its time and what it delivered (`time`).
fn one(name: &str, packets: u64, time: bool) -> Result<(), Error> {
    if time {
        println!("{}", balancer::timed(name, packets)?.line());
        return Ok(());
    }
    let w = balancer::workload_by_name(name, packets).ok_or_else(|| Error::Run {
        workload: name.into(),
        message: "no such workload".into(),
    })?;
    w.run().map(|_| ())
}
