//! `bricks bench vr`: Egi et al., "Towards High Performance Virtual
//! Routers on Commodity Hardware" (CoNEXT 2008), §2.4-§3.2, on this
//! machine.
//!
//! Each experiment is one module: its workloads, its measurements, the
//! paper's value or shape, and a verdict with its reason.
//!
//! - [`flows`]: Figs. 2 and 4, one worker's forwarding rate against the
//!   number of flows, and the cost of full IP routing against minimal
//!   forwarding at 64 and 1,024 bytes.
//! - [`mapping`]: Fig. 8, two forwarding paths mapped onto two workers.
//! - [`shared_queue`]: Fig. 11, two inputs on two workers sharing one queue
//!   against one queue each behind a fair scheduler.
//! - [`scaling`]: Fig. 16, the aggregate rate as virtual routers are added
//!   behind a software demultiplexer.
//! - [`fairness`]: Figs. 17 and 18, two routers weighted 2:1 with software
//!   demultiplexing and with per-router receive queues.

pub mod fairness;
pub mod flows;
pub mod mapping;
pub mod scaling;
pub mod shared_queue;

use crate::report::{summary, Row, Verdict};
use crate::Error;
use std::path::PathBuf;
use std::time::Instant;

/// The experiments, by the figures they redo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Experiment {
    /// Figs. 2 and 4: rate against flows; IP routing against minimal
    /// forwarding.
    Flows,
    /// Fig. 8: two paths on two workers, three mappings.
    Mapping,
    /// Fig. 11: one shared queue against a queue per input.
    SharedQueue,
    /// Fig. 16: 1 to 1,024 virtual routers behind a demultiplexer.
    Scaling,
    /// Figs. 17 and 18: 2:1 weights with software and hardware
    /// demultiplexing.
    Fairness,
}

impl Experiment {
    /// Every experiment, in the paper's order.
    pub const ALL: [Experiment; 5] = [
        Experiment::Flows,
        Experiment::Mapping,
        Experiment::SharedQueue,
        Experiment::Scaling,
        Experiment::Fairness,
    ];

    /// The figures it redoes.
    pub fn figure(self) -> &'static str {
        match self {
            Experiment::Flows => "Figs. 2, 4",
            Experiment::Mapping => "Fig. 8",
            Experiment::SharedQueue => "Fig. 11",
            Experiment::Scaling => "Fig. 16",
            Experiment::Fairness => "Figs. 17, 18",
        }
    }

    fn run(self, s: &Settings) -> Result<Vec<Row>, Error> {
        match self {
            Experiment::Flows => flows::run(s),
            Experiment::Mapping => mapping::run(s),
            Experiment::SharedQueue => shared_queue::run(s),
            Experiment::Scaling => scaling::run(s),
            Experiment::Fairness => fairness::run(s),
        }
    }
}

/// `bricks bench vr`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct VrArgs {
    /// Run each experiment briefly: fewer packets, fewer points, one run
    /// each (the whole command takes under two minutes in a release
    /// build).
    #[arg(long)]
    pub quick: bool,
    /// Run only these experiments (all when none is given).
    #[arg(long, value_enum)]
    pub only: Vec<Experiment>,
    /// Directory for the SVG plots.
    #[arg(short = 'o', long = "out", default_value = "target/bench-vr")]
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
    /// The `bricks` binary, to run routers, generators and sinks on veths.
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

/// The element classes of `needed` that are not built in, as a reason
/// for not running an experiment; `None` when all are.
pub fn missing_elements(needed: &[&str]) -> Option<String> {
    let r = bricks_elements::registry();
    let missing: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|n| r.get(n).is_none())
        .collect();
    (!missing.is_empty()).then(|| format!("bricks has no {} yet", missing.join(", ")))
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

/// Runs `bricks bench vr`. Returns whether every experiment ran (a
/// verdict that differs from the paper is a result, not a failure).
pub fn bench(a: &VrArgs) -> Result<bool, Error> {
    if let Some(name) = &a.one {
        return one(name, a.packets).map(|()| true);
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
pub fn collect(a: &VrArgs) -> Result<(Vec<Row>, bool), Error> {
    std::fs::create_dir_all(&a.out)?;
    let callgrind = if a.no_callgrind {
        None
    } else if crate::measure::valgrind_available() {
        std::env::current_exe().ok()
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
        exe: std::env::current_exe().ok(),
        out: a.out.clone(),
    };
    let which: Vec<Experiment> = if a.only.is_empty() {
        Experiment::ALL.to_vec()
    } else {
        Experiment::ALL
            .into_iter()
            .filter(|e| a.only.contains(e))
            .collect()
    };
    println!(
        "bricks bench vr: Egi et al. (CoNEXT 2008) on this machine; {}, {} run{} per point; plots in {}",
        if s.quick { "quick" } else { "full" },
        s.runs,
        if s.runs == 1 { "" } else { "s" },
        s.out.display()
    );
    let mut rows = Vec::new();
    let mut all_ran = true;
    for e in which {
        println!("\n## {}", e.figure());
        let t = Instant::now();
        match e.run(&s) {
            Ok(r) => rows.extend(r),
            Err(err) => {
                all_ran = false;
                println!("error: {err}");
                rows.push(not_run(e, "-", "-", format!("error: {err}")));
            }
        }
        println!("({:.1} s)", t.elapsed().as_secs_f64());
    }
    Ok((rows, all_ran))
}

/// Runs the workload `name` once with `packets` packets (for callgrind).
fn one(name: &str, packets: u64) -> Result<(), Error> {
    let w = flows::workload_by_name(name, packets)
        .or_else(|| scaling::workload_by_name(name, packets))
        .ok_or_else(|| Error::Run {
            workload: name.into(),
            message: "no such workload".into(),
        })?;
    w.run().map(|_| ())
}
