//! `bricks bench qos`: Hardekopf et al., "Impact of Network Protocols on
//! Programmable Router Architectures", §3-§6, on this machine.
//!
//! The paper measured its blocks on an IXP1200 simulator in threads,
//! memory references and 32-bit SRAM words per packet; bricks counts the
//! same references and words exactly (the structures' and elements'
//! memory-reference counters), and adds what a CPU gives: nanoseconds and
//! instructions per packet on one core.
//!
//! - [`memory`]: Fig. 2, the memory of hash matching against tagging, by
//!   the closed form and by filling a real `FlowTable`; memory against
//!   link rate.
//! - [`classify`]: Fig. 3, classification by tag and by hash with every
//!   packet at the end of a full chain of `k`.
//! - [`trie`]: Fig. 4, the 4-bit trie at depths 1, 3 and 8 and on a
//!   realistic table, and the references two levels kept per worker save.
//! - [`order`]: Fig. 5, FIFO, heap, BinSort and MDS-BinSort as the queue
//!   fills.
//! - [`arch`]: Fig. 7 and Table 4, the twelve architectures in memory,
//!   beside bricks' plain IPv4 router; Table 3 from the sort block's
//!   measured counts ([`cost`] holds the cost model).
//!
//! Fig. 5 runs before Fig. 7 when both are selected: Table 3 takes its
//! measured counts.

pub mod arch;
pub mod classify;
pub mod cost;
pub mod memory;
pub mod order;
pub mod trie;

use crate::report::{summary, Row, Verdict};
use crate::Error;
use std::path::PathBuf;
use std::time::Instant;

/// The experiments, by the figures they redo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Experiment {
    /// Fig. 2: memory of hash matching against tagging (k, B, link rate).
    Fig2,
    /// Fig. 3: classification by tag and by hash against k, worst case.
    Fig3,
    /// Fig. 4: the 4-bit trie at depths 1, 3, 8 and on a realistic table.
    Fig4,
    /// Fig. 5: FIFO, heap, BinSort, MDS-BinSort as the queue fills.
    Fig5,
    /// Fig. 7, Tables 3 and 4: the twelve architectures and the scaling
    /// of the sort block.
    Fig7,
}

impl Experiment {
    /// Every experiment, in the paper's order.
    pub const ALL: [Experiment; 5] = [
        Experiment::Fig2,
        Experiment::Fig3,
        Experiment::Fig4,
        Experiment::Fig5,
        Experiment::Fig7,
    ];

    /// The figure it redoes.
    pub fn figure(self) -> &'static str {
        match self {
            Experiment::Fig2 => "Fig. 2",
            Experiment::Fig3 => "Fig. 3",
            Experiment::Fig4 => "Fig. 4",
            Experiment::Fig5 => "Fig. 5",
            Experiment::Fig7 => "Fig. 7",
        }
    }

    fn run(self, s: &Settings, found: &mut Findings) -> Result<Vec<Row>, Error> {
        match self {
            Experiment::Fig2 => memory::run(s),
            Experiment::Fig3 => classify::run(s),
            Experiment::Fig4 => trie::run(s),
            Experiment::Fig5 => order::run(s, found),
            Experiment::Fig7 => arch::run(s, found),
        }
    }
}

/// `bricks bench qos`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct QosArgs {
    /// Run each experiment briefly: fewer packets, points and seeds, one
    /// run each (under a minute).
    #[arg(long)]
    pub quick: bool,
    /// Run only these experiments (all when none is given).
    #[arg(long, value_enum)]
    pub only: Vec<Experiment>,
    /// Directory for the SVG plots.
    #[arg(short = 'o', long = "out", default_value = "target/bench-qos")]
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

    /// Instructions per packet of workload `name` (`bricks bench qos
    /// --one NAME`), when callgrind is available.
    pub fn instructions(&self, name: &str) -> Result<Option<f64>, Error> {
        let Some(exe) = &self.callgrind else {
            return Ok(None);
        };
        let args: Vec<String> = ["bench", "qos", "--one", name]
            .iter()
            .map(|a| a.to_string())
            .collect();
        let (small, big) = self.pick((10_000, 110_000), (5_000, 25_000));
        crate::measure::callgrind_per_packet(exe, &args, small, big).map(Some)
    }
}

/// What one experiment measured that another uses.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    /// The sort block (MDS-BinSort, one replica per four dequeuers)
    /// measured in Fig. 5: references and 32-bit words per packet
    /// (enqueue + dequeue), and the bytes it holds per packet.
    pub sort_block: Option<cost::BlockCounts>,
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

/// Runs `bricks bench qos`. Returns whether every experiment ran (a
/// verdict that differs from the paper is a result, not a failure).
pub fn bench(a: &QosArgs) -> Result<bool, Error> {
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
pub fn collect(a: &QosArgs) -> Result<(Vec<Row>, bool), Error> {
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
    println!(
        "bricks bench qos: Hardekopf et al. (QoS building blocks) on this machine; {}, {} run{} \
         per point; plots in {}",
        if s.quick { "quick" } else { "full" },
        s.runs,
        if s.runs == 1 { "" } else { "s" },
        s.out.display()
    );
    let mut found = Findings::default();
    let mut rows: Vec<Row> = Vec::new();
    let mut all_ran = true;
    for e in selected {
        println!("\n## {}", e.figure());
        let t = Instant::now();
        match e.run(&s, &mut found) {
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

/// Runs the workload `name` once with `packets` packets, silently (for
/// callgrind).
fn one(name: &str, packets: u64) -> Result<(), Error> {
    let w = classify::workload_by_name(name, packets)
        .or_else(|| trie::workload_by_name(name, packets))
        .or_else(|| arch::workload_by_name(name, packets))
        .ok_or_else(|| Error::Run {
            workload: name.into(),
            message: "no such workload".into(),
        })?;
    w.run().map(|_| ())
}

/// The element classes that count memory references when given
/// `MEMREFS true`.
pub fn counting_classes() -> Vec<&'static str> {
    bricks_elements::registry()
        .classes()
        .iter()
        .filter(|c| c.manual.keywords.iter().any(|k| k.name == "MEMREFS"))
        .map(|c| c.name)
        .collect()
}

/// `text` with `MEMREFS true` given to every element of a class that
/// counts (`bricks run --memrefs` does the same for a whole run).
/// Comments are left alone; an element without arguments gets
/// `(MEMREFS true)`.
pub fn with_memrefs(text: &str) -> String {
    let classes = counting_classes();
    let b = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'@';
    let mut out = String::with_capacity(text.len() + 64);
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = text[i..].find('\n').map_or(b.len(), |e| i + e);
            out.push_str(&text[i..end]);
            i = end;
            continue;
        }
        let at_word = ident(b[i]) && (i == 0 || !ident(b[i - 1]));
        let name = at_word
            .then(|| {
                classes.iter().find(|c| {
                    b[i..].starts_with(c.as_bytes())
                        && b.get(i + c.len()).is_none_or(|&n| !ident(n))
                })
            })
            .flatten();
        let Some(name) = name else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
            continue;
        };
        out.push_str(name);
        i += name.len();
        let after = i + text[i..].len() - text[i..].trim_start().len();
        if b.get(after) != Some(&b'(') {
            out.push_str("(MEMREFS true)");
            continue;
        }
        // The matching parenthesis, skipping quoted strings.
        let (mut depth, mut j, mut quoted) = (0usize, after, false);
        while j < b.len() {
            match b[j] {
                b'"' => quoted = !quoted,
                b'\\' if quoted => j += 1,
                b'(' if !quoted => depth += 1,
                b')' if !quoted => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        let args = &text[after + 1..j.min(b.len())];
        out.push_str(&text[i..after + 1]);
        out.push_str(args);
        out.push_str(if args.trim().is_empty() {
            "MEMREFS true"
        } else {
            ", MEMREFS true"
        });
        i = j.min(b.len());
    }
    out
}

/// Memory references and 32-bit words per delivered packet of `w`, run
/// once with `MEMREFS true` on every element that counts, summed over
/// the whole graph; `None` when no element counted.
pub fn counts(w: &crate::measure::Workload) -> Result<Option<Refs>, Error> {
    let counting = crate::measure::Workload {
        text: with_memrefs(&w.text),
        ..w.clone()
    };
    let r = counting.run()?;
    let (refs, words) = r.summary.elements.iter().fold((0, 0), |(a, b), e| {
        (
            a + e.stats.get("mem_refs").unwrap_or(0),
            b + e.stats.get("mem_words").unwrap_or(0),
        )
    });
    if refs == 0 {
        return Ok(None);
    }
    let n = r.delivered.max(1) as f64;
    Ok(Some(Refs {
        refs: refs as f64 / n,
        words: words as f64 / n,
    }))
}

/// Nanoseconds per packet of each workload `make[i](packets)`, `runs`
/// times, the workloads taken in turn within each round (after one short
/// unmeasured run of each): on a shared machine a slow moment then falls
/// on every workload alike, so that their medians, and the ratios of one
/// round, compare. Every packet must arrive.
pub fn time_interleaved(
    make: &[&dyn Fn(u64) -> crate::measure::Workload],
    packets: u64,
    runs: usize,
) -> Result<Vec<crate::measure::Sample>, Error> {
    for m in make {
        m(packets.min(50_000)).run()?;
    }
    let mut v = vec![Vec::with_capacity(runs); make.len()];
    for _ in 0..runs.max(1) {
        for (m, out) in make.iter().zip(v.iter_mut()) {
            let w = m(packets);
            let r = w.run()?;
            if r.delivered != packets {
                return Err(Error::Run {
                    workload: w.name,
                    message: format!("{} of {packets} packets delivered", r.delivered),
                });
            }
            out.push(r.ns_per_packet());
        }
    }
    Ok(v.into_iter().map(crate::measure::Sample).collect())
}

/// The median over rounds of `a[i] / b[i]` (samples from one
/// [`time_interleaved`] call).
pub fn paired_ratio(a: &crate::measure::Sample, b: &crate::measure::Sample) -> f64 {
    crate::measure::Sample(
        a.0.iter()
            .zip(&b.0)
            .map(|(x, y)| x / y.max(1e-12))
            .collect(),
    )
    .median()
}

/// Memory references and 32-bit words per packet.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Refs {
    /// References per packet.
    pub refs: f64,
    /// 32-bit words per packet.
    pub words: f64,
}

impl Refs {
    /// `refs / words`, one decimal each.
    pub fn show(&self) -> String {
        format!("{:.1} / {:.1}", self.refs, self.words)
    }
}

/// `v` with one decimal, or `-`.
pub fn opt1(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

/// `v` with no decimals, or `-`.
pub fn opt0(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.0}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memrefs_goes_to_every_counting_element() {
        let classes = counting_classes();
        let Some(c) = classes.first() else {
            return;
        };
        let t =
            format!("// {c} in a comment\na :: {c}(x, \"y)\") -> b :: {c} -> {c}();\nNot{c}(1);");
        assert_eq!(
            with_memrefs(&t),
            format!(
                "// {c} in a comment\na :: {c}(x, \"y)\", MEMREFS true) -> b :: {c}(MEMREFS \
                 true) -> {c}(MEMREFS true);\nNot{c}(1);"
            )
        );
    }
}
