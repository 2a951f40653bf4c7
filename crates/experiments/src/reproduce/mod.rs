//! `bricks reproduce`: the five papers' experiments rerun in one go, and
//! one report of them.
//!
//! - [`catalogue`]: every figure and table of the papers, with what bricks
//!   does with it (rerun, rerun as a ratio, not reproducible and why, a
//!   diagram) and the run that measures it.
//! - [`units`]: the runs, each one or more experiments of a bench.
//! - [`store`]: the results on disk (`results.json`), so that a report can
//!   be written again and two runs compared.
//! - [`page`]: the report, as Markdown and as HTML with the SVG plots.
//! - [`compare`]: what changed between two runs.
//!
//! Each unit runs in a child process (`bricks reproduce --unit KEY`), its
//! output going to a log file: a unit that fails or hangs costs its own
//! figures only, the progress display stays readable, and every unit
//! starts from a fresh process (no warm caches or leftover threads from
//! the one before).

pub mod catalogue;
pub mod compare;
pub mod page;
pub mod store;
pub mod units;

use crate::Error;
use catalogue::Paper;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use store::{Run, StoredRow, UnitRun};

/// `bricks reproduce`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ReproduceArgs {
    /// Papers to rerun: routebricks, nic, vr, multistage, qos (all five
    /// when none is given).
    #[arg(value_enum)]
    pub papers: Vec<Paper>,
    /// Brief runs (fewer points and repetitions) for a smoke check: under
    /// ten minutes for all five papers on two cores.
    #[arg(long)]
    pub quick: bool,
    /// Directory for the report (report.html, report.md), its plots, logs
    /// and results.json.
    #[arg(short = 'o', long = "out", default_value = "target/reproduce")]
    pub out: PathBuf,
    /// Compare with the run stored in OLD_DIR, and write compare.md.
    #[arg(long, value_name = "OLD_DIR")]
    pub compare: Option<PathBuf>,
    /// Write the report again from the results stored in the output
    /// directory, running nothing.
    #[arg(long)]
    pub report_only: bool,
    /// Run only these units (`vr:scaling`, `qos:memory`, ...; `bricks
    /// reproduce --list` names them) and keep the other results stored in
    /// the output directory, to redo one experiment of a report.
    #[arg(long, value_name = "UNIT")]
    pub only: Vec<String>,
    /// List every figure and table of the papers with its kind and the
    /// unit that measures it, and run nothing.
    #[arg(long)]
    pub list: bool,
    /// Timed runs per point (default 5, 1 with --quick).
    #[arg(long)]
    pub runs: Option<usize>,
    /// Skip counting instructions per packet with callgrind.
    #[arg(long)]
    pub no_callgrind: bool,
    /// Run one unit in this process (what the suite's child processes
    /// run).
    #[arg(long, hide = true)]
    pub unit: Option<String>,
    /// Run one RouteBricks workload once and print nothing (what
    /// callgrind runs).
    #[arg(long, hide = true)]
    pub one: Option<String>,
    /// Packets of the --one workload.
    #[arg(long, hide = true, default_value_t = 100_000)]
    pub packets: u64,
}

/// Runs `bricks reproduce`. Returns whether every unit that should have
/// run did (a verdict that differs from a paper is a result, not a
/// failure).
pub fn reproduce(a: &ReproduceArgs, stop_on_signals: crate::StopOnSignals) -> Result<bool, Error> {
    if let Some(n) = &a.one {
        return crate::routebricks::one(n, a.packets).map(|()| true);
    }
    if let Some(key) = &a.unit {
        return run_unit_here(a, key, stop_on_signals).map(|()| true);
    }
    let papers: Vec<Paper> = if a.papers.is_empty() {
        Paper::ALL.to_vec()
    } else {
        Paper::ALL
            .into_iter()
            .filter(|p| a.papers.contains(p))
            .collect()
    };
    if a.list {
        print!("{}", list(&papers, a.quick));
        return Ok(true);
    }
    for k in &a.only {
        if !units_for(&papers).iter().any(|u| u.key == k) {
            let known: Vec<&str> = units_for(&papers).iter().map(|u| u.key).collect();
            return Err(usage(format!(
                "--only {k}: no such unit for {}; they are {}",
                papers
                    .iter()
                    .map(|p| p.key())
                    .collect::<Vec<_>>()
                    .join(", "),
                known.join(", ")
            )));
        }
    }
    let (run, complete) = if a.report_only {
        let run = Run::load(&a.out).map_err(usage)?;
        (run, true)
    } else {
        run_all(a, &papers)?
    };
    let shown: Vec<Paper> = papers
        .iter()
        .copied()
        .filter(|p| run.papers.iter().any(|k| k == p.key()))
        .collect();
    std::fs::write(a.out.join("report.md"), page::markdown(&run, &shown))?;
    std::fs::write(a.out.join("report.html"), page::html(&run, &shown))?;
    print!("\n{}", page::terminal_summary(&run, &shown));
    println!(
        "\nreport: {} (and report.md beside it)",
        a.out.join("report.html").display()
    );
    if let Some(old_dir) = &a.compare {
        let old = Run::load(old_dir).map_err(usage)?;
        let c = compare::compare(&old, &run);
        std::fs::write(a.out.join("compare.md"), &c)?;
        println!("\n{c}");
        println!("comparison: {}", a.out.join("compare.md").display());
    }
    Ok(complete)
}

fn usage(message: String) -> Error {
    Error::Run {
        workload: "reproduce".into(),
        message,
    }
}

/// The child's side: runs `key` and writes its rows to
/// `OUT/raw/KEY.json`.
fn run_unit_here(
    a: &ReproduceArgs,
    key: &str,
    stop_on_signals: crate::StopOnSignals,
) -> Result<(), Error> {
    let u = units::unit(key).ok_or_else(|| usage(format!("no unit {key}")))?;
    let plots = a.out.join("plots").join(u.file_name());
    std::fs::create_dir_all(&plots)?;
    std::fs::create_dir_all(a.out.join("raw"))?;
    let o = units::Options {
        quick: a.quick,
        runs: a.runs,
        no_callgrind: a.no_callgrind,
        stop_on_signals,
        raw: a.out.join("raw"),
    };
    let rows: Vec<StoredRow> = units::execute(u, &o, &plots)?
        .iter()
        .map(StoredRow::from)
        .collect();
    let text = serde_json::to_string_pretty(&rows).map_err(std::io::Error::other)?;
    std::fs::write(raw_path(&a.out, u), text)?;
    Ok(())
}

fn raw_path(out: &Path, u: &units::Unit) -> PathBuf {
    out.join("raw").join(format!("{}.json", u.file_name()))
}

/// The units the items of `papers` need, in the catalogue's order.
pub fn units_for(papers: &[Paper]) -> Vec<&'static units::Unit> {
    let mut seen = BTreeSet::new();
    catalogue::CATALOGUE
        .iter()
        .filter(|i| papers.contains(&i.paper))
        .filter_map(|i| i.unit)
        .filter(|k| seen.insert(*k))
        .filter_map(units::unit)
        .collect()
}

fn run_all(a: &ReproduceArgs, papers: &[Paper]) -> Result<(Run, bool), Error> {
    for d in ["logs", "plots", "raw"] {
        std::fs::create_dir_all(a.out.join(d))?;
    }
    let exe = std::env::current_exe()?;
    let todo = units_for(papers);
    // With --only, the other units' results come from the stored run.
    let kept = if a.only.is_empty() {
        None
    } else {
        Some(Run::load(&a.out).unwrap_or_default())
    };
    let selected = |u: &units::Unit| a.only.is_empty() || a.only.iter().any(|k| k == u.key);
    let mut run = Run {
        version: store::VERSION,
        quick: a.quick,
        started: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        papers: papers.iter().map(|p| p.key().to_string()).collect(),
        machine: store::Machine::here(),
        command: std::iter::once("bricks".to_string())
            .chain(std::env::args().skip(1))
            .collect::<Vec<_>>()
            .join(" "),
        units: Vec::new(),
    };
    let root = bricks_netns::is_root();
    let runnable =
        |u: &units::Unit| !matches!(u.bench, units::Bench::Separate(_)) && (root || !u.needs_root);
    let total: u64 = todo
        .iter()
        .filter(|u| runnable(u) && selected(u))
        .map(|u| u.estimate(a.quick))
        .sum();
    println!(
        "bricks reproduce: {} on {} ({} cores); {} run{}, about {} to go; output in {}",
        papers
            .iter()
            .map(|p| p.key())
            .collect::<Vec<_>>()
            .join(", "),
        run.machine.cpu,
        run.machine.cores,
        todo.iter().filter(|u| runnable(u) && selected(u)).count(),
        if todo.len() == 1 { "" } else { "s" },
        human(total),
        a.out.display()
    );
    let bars = MultiProgress::with_draw_target(if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let overall = bars.add(ProgressBar::new(total.max(1)));
    overall.set_style(
        ProgressStyle::with_template("{prefix:>10} [{bar:30}] {msg}")
            .expect("template")
            .progress_chars("=> "),
    );
    overall.set_prefix("all");
    let mut done_estimate = 0u64;
    let mut complete = true;
    let started = Instant::now();
    for (n, u) in todo.iter().enumerate() {
        // Units measured elsewhere say so whatever --only selects.
        if !selected(u) && !matches!(u.bench, units::Bench::Separate(_)) {
            if let Some(old) = kept.as_ref().and_then(|r| r.unit(u.key)) {
                run.units.push(old.clone());
                if matches!(u.bench, units::Bench::Io) {
                    run.machine.af_xdp = kept.as_ref().and_then(|r| r.machine.af_xdp.clone());
                }
            }
            continue;
        }
        let mut ur = UnitRun {
            key: u.key.into(),
            command: u.command(a.quick),
            log: format!("logs/{}.log", u.file_name()),
            ..UnitRun::default()
        };
        if let units::Bench::Separate(cmd) = u.bench {
            ur.log.clear();
            ur.error = Some(format!(
                "measured by `{cmd}` (see BENCHMARKS.md); the report does not collect its results yet"
            ));
            run.units.push(ur);
            continue;
        }
        if u.needs_root && !root {
            ur.log.clear();
            ur.error =
                Some("needs root to build network namespaces (sudo bricks reproduce)".into());
            run.units.push(ur);
            continue;
        }
        ur.busy_before = store::busy_share(Duration::from_millis(500));
        let estimate = u.estimate(a.quick);
        let bar = bars.add(ProgressBar::new(estimate.max(1)));
        bar.set_style(
            ProgressStyle::with_template("{prefix:>10} [{bar:30}] {elapsed} of about {msg}")
                .expect("template")
                .progress_chars("=> "),
        );
        bar.set_prefix(u.key.split(':').nth(1).unwrap_or(u.key).to_string());
        bar.set_message(human(estimate));
        let line = format!(
            "[{}/{}] {} ({}), about {}",
            n + 1,
            todo.len(),
            u.key,
            ur.command,
            human(estimate)
        );
        if bars.is_hidden() {
            println!("{line}");
        } else {
            bars.println(line).ok();
        }
        let af_xdp_file = a.out.join("raw").join(store::AF_XDP_FILE);
        if matches!(u.bench, units::Bench::Io) {
            let _ = std::fs::remove_file(&af_xdp_file);
        }
        let t = Instant::now();
        let outcome = child(a, &exe, u, estimate, |elapsed| {
            bar.set_position(elapsed.min(estimate.saturating_sub(1)));
            let spent = done_estimate + elapsed.min(estimate);
            overall.set_position(spent);
            overall.set_message(format!(
                "{} elapsed, about {} left",
                human(started.elapsed().as_secs()),
                human(total.saturating_sub(spent))
            ));
        });
        ur.seconds = t.elapsed().as_secs_f64();
        bar.finish_and_clear();
        bars.remove(&bar);
        done_estimate += estimate;
        overall.set_position(done_estimate);
        match outcome {
            Ok(()) => match std::fs::read_to_string(raw_path(&a.out, u))
                .map_err(|e| e.to_string())
                .and_then(|t| serde_json::from_str::<Vec<StoredRow>>(&t).map_err(|e| e.to_string()))
            {
                Ok(rows) => ur.rows = rows,
                Err(e) => ur.error = Some(format!("its results could not be read: {e}")),
            },
            Err(e) => ur.error = Some(e),
        }
        if ur.error.is_some() {
            complete = false;
        }
        if matches!(u.bench, units::Bench::Io) {
            run.machine.af_xdp = std::fs::read_to_string(&af_xdp_file)
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty());
        }
        ur.plots = plots_in(&a.out, u);
        let line = format!(
            "      {} in {:.0} s{}",
            ur.error
                .as_deref()
                .map_or("done".to_string(), |e| format!("failed: {e}")),
            ur.seconds,
            if ur.busy() {
                format!(
                    " (machine busy: {:.0} % used by others at the start)",
                    ur.busy_before * 100.0
                )
            } else {
                String::new()
            }
        );
        if bars.is_hidden() {
            println!("{line}");
        } else {
            bars.println(line).ok();
        }
        run.units.push(ur);
        run.save(&a.out)?;
    }
    overall.finish_and_clear();
    run.save(&a.out)?;
    Ok((run, complete))
}

/// Runs unit `u` in a child process with its output in its log, calling
/// `tick` with the seconds elapsed about once a second. Gives up after
/// four times the estimate plus two minutes.
fn child(
    a: &ReproduceArgs,
    exe: &Path,
    u: &units::Unit,
    estimate: u64,
    mut tick: impl FnMut(u64),
) -> Result<(), String> {
    let log_path = a.out.join("logs").join(format!("{}.log", u.file_name()));
    let log =
        std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let err = log.try_clone().map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(raw_path(&a.out, u));
    let mut cmd = Command::new(exe);
    cmd.arg("reproduce")
        .arg("--unit")
        .arg(u.key)
        .arg("-o")
        .arg(&a.out);
    if a.quick {
        cmd.arg("--quick");
    }
    if let Some(r) = a.runs {
        cmd.arg("--runs").arg(r.to_string());
    }
    if a.no_callgrind {
        cmd.arg("--no-callgrind");
    }
    let mut c = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(err))
        .spawn()
        .map_err(|e| format!("{}: {e}", exe.display()))?;
    let limit = Duration::from_secs(estimate * 4 + 120);
    let t = Instant::now();
    loop {
        match c.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let tail = last_line(&log_path);
                return Err(format!(
                    "{status}{}",
                    tail.map_or(String::new(), |l| format!(": {l}"))
                ));
            }
            Ok(None) => {}
            Err(e) => return Err(e.to_string()),
        }
        if t.elapsed() > limit {
            // SIGTERM first, so that a bench deletes its namespaces; then
            // SIGKILL if it has not ended within ten seconds.
            let _ = Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let end = Instant::now() + Duration::from_secs(10);
            while Instant::now() < end && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = c.kill();
            let _ = c.wait();
            return Err(format!(
                "stopped after {} (four times its estimate and two minutes)",
                human(limit.as_secs())
            ));
        }
        tick(t.elapsed().as_secs());
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// `--list`: every item of `papers`, its kind, and the unit and command
/// that measure it.
fn list(papers: &[Paper], quick: bool) -> String {
    let mut t = crate::report::Table::new(&["paper", "item", "kind", "unit", "command", "about"]);
    for &p in papers {
        for i in catalogue::of(p) {
            let u = i.unit.and_then(units::unit);
            t.push(vec![
                p.key().into(),
                i.id.into(),
                i.kind.label().into(),
                u.map_or("-".into(), |u| u.key.to_string()),
                u.map_or(i.kind.note().to_string(), |u| u.command(quick)),
                u.map_or(String::new(), |u| human(u.estimate(quick))),
            ]);
        }
    }
    t.render()
}

/// The last non-empty line of `path`, for an error.
fn last_line(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().chars().take(300).collect())
}

/// The SVG files unit `u` wrote, relative to `out`, sorted.
fn plots_in(out: &Path, u: &units::Unit) -> Vec<String> {
    let dir = Path::new("plots").join(u.file_name());
    let mut v: Vec<String> = std::fs::read_dir(out.join(&dir))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "svg"))
        .map(|e| dir.join(e.file_name()).to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Seconds as `45 s`, `3 min` or `1 h 5 min`.
fn human(secs: u64) -> String {
    match secs {
        0..=89 => format!("{secs} s"),
        90..=3599 => format!("{} min", (secs + 30) / 60),
        _ => format!("{} h {} min", secs / 3600, (secs % 3600 + 30) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_the_papers() {
        let keys: Vec<&str> = units_for(&[Paper::Multistage])
            .iter()
            .map(|u| u.key)
            .collect();
        assert_eq!(
            keys,
            [
                "multistage:router",
                "multistage:balancer",
                "multistage:scaling"
            ]
        );
        let nic: Vec<&str> = units_for(&[Paper::Nic]).iter().map(|u| u.key).collect();
        assert_eq!(nic, ["routebricks:io", "nic:queues", "nic:wishlist"]);
        assert_eq!(units_for(&Paper::ALL).len(), units::UNITS.len());
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human(45), "45 s");
        assert_eq!(human(600), "10 min");
        assert_eq!(human(3900), "1 h 5 min");
    }

    #[test]
    fn the_quick_suite_fits_in_ten_minutes() {
        let quick: u64 = units_for(&Paper::ALL)
            .iter()
            .map(|u| u.estimate(true))
            .sum();
        assert!(quick <= 600, "{quick} s");
        let full: u64 = units_for(&Paper::ALL)
            .iter()
            .map(|u| u.estimate(false))
            .sum();
        assert!(full <= 3600, "{full} s");
    }
}
