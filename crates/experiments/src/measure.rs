//! Running workloads and measuring them.
//!
//! A workload is a Click configuration whose sources make a known number
//! of packets and whose sinks count what arrives. One worker runs it on
//! the calling thread ([`Workload::run`]); several run it on pinned
//! threads, each with its own instance of the graph
//! ([`Workload::run_workers`]). Times are medians of several runs with
//! their spread ([`Sample`]); instructions per packet come from callgrind
//! re-running the `bricks` binary on one workload at two packet counts, so
//! that start-up and tear-down cancel out ([`callgrind_per_packet`]).
//! The benches that build their own engines plan their text as `bricks
//! run` does ([`plan`], [`engine_for`]).

use crate::Error;
use bricks_config::{Source, SourceMap};
use bricks_runtime::{sum_stats, ElementStats, Engine, Plan, RunSummary, WorkerOptions, Workers};
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A configuration to run, and how to read its result.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Its name in messages.
    pub name: String,
    /// The Click text.
    pub text: String,
    /// Elements whose `count` counter is what the workload delivered.
    pub sinks: Vec<String>,
    /// Write handlers called before a one-worker run: (element, handler,
    /// value).
    pub setup: Vec<(String, String, String)>,
    /// Write handlers called on every worker at the end of a
    /// [`Workload::run_window`], before the stop: they switch off what
    /// would keep moving packets for ever (a pump fed by endless pull
    /// sources), so that the workers can drain and finish.
    pub quiesce: Vec<(String, String, String)>,
}

/// What one run gave.
#[derive(Debug, Clone)]
pub struct Run {
    /// Seconds the graph ran (the longest worker's).
    pub secs: f64,
    /// Packets the sinks counted.
    pub delivered: u64,
    /// Every element's counters (summed over workers).
    pub summary: RunSummary,
    /// CPU seconds the calling thread spent in the graph's run, for a
    /// one-worker run ([`Workload::run`]) where the kernel reports it.
    pub cpu_secs: Option<f64>,
}

impl Run {
    /// Counter `counter` of element `element`, 0 when it has none.
    pub fn counter(&self, element: &str, counter: &str) -> u64 {
        counter_of(&self.summary, element, counter)
    }

    /// Nanoseconds per delivered packet.
    pub fn ns_per_packet(&self) -> f64 {
        self.secs * 1e9 / self.delivered.max(1) as f64
    }

    /// Delivered packets per second, in millions.
    pub fn mpps(&self) -> f64 {
        self.delivered as f64 / self.secs.max(1e-9) / 1e6
    }
}

/// Counter `counter` of element `element` in `s`, 0 when it has none.
pub fn counter_of(s: &RunSummary, element: &str, counter: &str) -> u64 {
    s.stats(element).and_then(|st| st.get(counter)).unwrap_or(0)
}

impl Workload {
    /// A workload whose sinks are the elements named in `sinks`.
    pub fn new(name: impl Into<String>, text: impl Into<String>, sinks: &[&str]) -> Workload {
        Workload {
            name: name.into(),
            text: text.into(),
            sinks: sinks.iter().map(|s| s.to_string()).collect(),
            setup: Vec::new(),
            quiesce: Vec::new(),
        }
    }

    /// Adds a write handler call made at the end of a windowed run.
    pub fn with_quiesce(mut self, element: &str, handler: &str, value: &str) -> Workload {
        self.quiesce
            .push((element.into(), handler.into(), value.into()));
        self
    }

    /// Adds a write handler call made before the run.
    pub fn with_setup(mut self, element: &str, handler: &str, value: &str) -> Workload {
        self.setup
            .push((element.into(), handler.into(), value.into()));
        self
    }

    /// Parses and checks the configuration against every built-in element.
    pub fn plan(&self) -> Result<Plan, Error> {
        let mut map = SourceMap::default();
        let source = Source {
            name: format!("<{}>", self.name),
            text: self.text.clone(),
        };
        bricks_config::parse_with(&mut map, source, &Default::default())
            .and_then(|r| bricks_runtime::build(&r, &bricks_elements::registry()))
            .map_err(|diags| Error::Config {
                workload: self.name.clone(),
                message: diags.iter().map(|d| map.render(d)).collect::<String>(),
            })
    }

    fn run_error(&self, message: impl Into<String>) -> Error {
        Error::Run {
            workload: self.name.clone(),
            message: message.into(),
        }
    }

    fn finish(&self, secs: f64, summary: RunSummary) -> Result<Run, Error> {
        if !summary.errors.is_empty() {
            return Err(self.run_error(summary.errors.join("\n")));
        }
        let delivered = self
            .sinks
            .iter()
            .map(|s| counter_of(&summary, s, "count"))
            .sum();
        Ok(Run {
            secs,
            delivered,
            summary,
            cpu_secs: None,
        })
    }

    /// Runs the workload once on this thread, without napping when idle.
    pub fn run(&self) -> Result<Run, Error> {
        let plan = self.plan()?;
        let mut e = Engine::new(&plan).map_err(|d| self.run_error(d.message))?;
        e.idle_sleep = false;
        for (el, h, v) in &self.setup {
            e.write_handler(el, h, v)
                .map_err(|m| self.run_error(format!("{el}.{h}: {m}")))?;
        }
        let cpu = thread_cpu_ns();
        let t = Instant::now();
        let s = e.run();
        let secs = t.elapsed().as_secs_f64();
        let cpu_secs = cpu
            .zip(thread_cpu_ns())
            .map(|(a, b)| b.saturating_sub(a) as f64 / 1e9);
        let mut r = self.finish(secs, s)?;
        r.cpu_secs = cpu_secs;
        Ok(r)
    }

    /// Runs the workload on `threads` pinned workers that poll without
    /// napping (a router polling its devices), stopping them after
    /// `limit` if they have not finished by then.
    pub fn run_workers(&self, threads: usize, limit: Duration) -> Result<Run, Error> {
        if !self.setup.is_empty() {
            return Err(self.run_error("write handlers are only called on one-worker runs"));
        }
        let plan = Arc::new(self.plan()?);
        let opts = WorkerOptions {
            threads,
            pin: true,
            max_nap: Duration::ZERO,
            ..WorkerOptions::default()
        };
        let w = Workers::start(plan, &opts).map_err(|d| self.run_error(d.message))?;
        let start = Instant::now();
        while !w.finished() && start.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(2));
        }
        let stopped = !w.finished();
        if stopped {
            w.stop_handle().stop();
        }
        let s = w.join();
        let secs = s
            .per_worker
            .iter()
            .map(|r| r.elapsed.as_secs_f64())
            .fold(0.0, f64::max);
        self.finish(secs, s.total)
    }
}

/// Counters read twice while a workload ran in its steady state.
#[derive(Debug, Clone)]
pub struct Window {
    /// Seconds between the two readings.
    pub secs: f64,
    before: Vec<ElementStats>,
    after: Vec<ElementStats>,
    /// The final counters, after the stop.
    pub end: RunSummary,
}

impl Window {
    fn read(stats: &[ElementStats], element: &str, counter: &str) -> u64 {
        stats
            .iter()
            .find(|e| e.name == element)
            .and_then(|e| e.stats.get(counter))
            .unwrap_or(0)
    }

    /// How much counter `counter` of `element` grew in the window.
    pub fn delta(&self, element: &str, counter: &str) -> u64 {
        Window::read(&self.after, element, counter).saturating_sub(Window::read(
            &self.before,
            element,
            counter,
        ))
    }

    /// That growth per second, in millions.
    pub fn mpps(&self, element: &str, counter: &str) -> f64 {
        self.delta(element, counter) as f64 / self.secs.max(1e-9) / 1e6
    }
}

impl Workload {
    /// Runs the workload on `threads` pinned, polling workers; after
    /// `warmup`, reads every counter at the start and the end of `window`,
    /// then stops the run. For workloads whose sources never end (rated
    /// sources): what is measured is the steady state.
    pub fn run_window(
        &self,
        threads: usize,
        warmup: Duration,
        window: Duration,
    ) -> Result<Window, Error> {
        let plan = Arc::new(self.plan()?);
        let opts = WorkerOptions {
            threads,
            pin: true,
            max_nap: Duration::ZERO,
            publish_every: Some(Duration::from_millis(1)),
            ..WorkerOptions::default()
        };
        let w = Workers::start(plan, &opts).map_err(|d| self.run_error(d.message))?;
        let read = || {
            let per_worker = w.live();
            let at = Instant::now();
            (sum_stats(per_worker.iter().map(Vec::as_slice)), at)
        };
        std::thread::sleep(warmup);
        let early_end = w.finished();
        let (before, t0) = read();
        std::thread::sleep(window);
        let (after, t1) = read();
        let early_end = early_end || w.finished();
        let control = w.control();
        for (el, h, v) in &self.quiesce {
            control
                .write_handler(el, h, v)
                .map_err(|m| self.run_error(format!("{el}.{h}: {m}")))?;
        }
        w.stop_handle().stop();
        let end = w.join().total;
        if !end.errors.is_empty() {
            return Err(self.run_error(end.errors.join("\n")));
        }
        if early_end {
            return Err(self.run_error("the run ended before the measurement window did"));
        }
        Ok(Window {
            secs: (t1 - t0).as_secs_f64(),
            before,
            after,
            end,
        })
    }
}

/// Times the one-worker workload `w(packets)` `runs` times, after one
/// short unmeasured run that warms the pool and the caches: nanoseconds
/// per packet, checking that every packet arrived.
pub fn time_ns(w: impl Fn(u64) -> Workload, packets: u64, runs: usize) -> Result<Sample, Error> {
    let mut one = time_ns_rounds(&[&w], packets, runs)?;
    Ok(one.remove(0))
}

/// Times the one-worker workloads `ws` in rounds, for figures that
/// compare them: each is warmed by one short unmeasured run, then every
/// round runs each once, starting one further along the list each
/// round. A slow spell of the machine then falls on all of them alike,
/// and value `r` of every sample comes from round `r`, so that
/// [`Sample::pairwise`] compares each round with itself.
pub fn time_ns_rounds(
    ws: &[&dyn Fn(u64) -> Workload],
    packets: u64,
    runs: usize,
) -> Result<Vec<Sample>, Error> {
    for w in ws {
        w(packets.min(50_000)).run()?;
    }
    let runs = runs.max(1);
    let mut ns = vec![Vec::with_capacity(runs); ws.len()];
    for round in 0..runs {
        for k in 0..ws.len() {
            let i = (round + k) % ws.len();
            let wl = ws[i](packets);
            let r = wl.run()?;
            if r.delivered != packets {
                return Err(Error::Run {
                    workload: wl.name,
                    message: format!("{} of {packets} packets delivered", r.delivered),
                });
            }
            ns[i].push(r.ns_per_packet());
        }
    }
    Ok(ns.into_iter().map(Sample).collect())
}

/// Parses `source` and checks it against every built-in element, as
/// `bricks run` does: warnings go to stderr, errors come back rendered.
pub fn plan(source: Source) -> Result<Plan, String> {
    let mut map = SourceMap::default();
    bricks_config::parse_with(&mut map, source, &Default::default())
        .and_then(|router| {
            for w in &router.warnings {
                eprint!("{}", map.render_warning(w));
            }
            let plan = bricks_runtime::build(&router, &bricks_elements::registry())?;
            for (_, message) in &plan.messages {
                eprintln!("{message}");
            }
            Ok(plan)
        })
        .map_err(|diags| {
            let mut s = String::new();
            for d in &diags {
                s.push_str(&map.render(d));
                s.push('\n');
            }
            s.push_str(&format!(
                "{} error{} found; the configuration was not run\n",
                diags.len(),
                if diags.len() == 1 { "" } else { "s" }
            ));
            s
        })
}

/// An engine for configuration `text` named `name`, that never naps when
/// idle.
pub fn engine_for(name: &str, text: String) -> Result<Engine, Error> {
    let source = Source {
        name: name.to_string(),
        text,
    };
    let config = |message: String| Error::Config {
        workload: name.to_string(),
        message,
    };
    let plan = plan(source).map_err(config)?;
    let mut e = Engine::new(&plan).map_err(|d| config(d.message))?;
    e.idle_sleep = false;
    Ok(e)
}

/// Several measurements of one quantity.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample(pub Vec<f64>);

impl Sample {
    /// The median (the upper one of an even count); 0 when empty.
    pub fn median(&self) -> f64 {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    }

    /// The smallest value.
    pub fn min(&self) -> f64 {
        self.0.iter().copied().fold(f64::INFINITY, f64::min)
    }

    /// The largest value.
    pub fn max(&self) -> f64 {
        self.0.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    }

    /// The median with `digits` decimals, and the range when there are
    /// several values: `12.3 (11.9-13.1)`.
    pub fn show(&self, digits: usize) -> String {
        if self.0.len() < 2 {
            return format!("{:.digits$}", self.median());
        }
        format!(
            "{:.digits$} ({:.digits$}-{:.digits$})",
            self.median(),
            self.min(),
            self.max()
        )
    }

    /// `f` of this sample's and `other`'s values taken in pairs, for two
    /// samples measured in the same rounds ([`time_ns_rounds`]): a ratio
    /// or difference a round, whose median is steadier than the ratio of
    /// two medians when the machine's speed drifts between rounds.
    pub fn pairwise(&self, other: &Sample, f: impl Fn(f64, f64) -> f64) -> Sample {
        Sample(
            self.0
                .iter()
                .zip(&other.0)
                .map(|(&a, &b)| f(a, b))
                .collect(),
        )
    }

    /// Applies `f` to every value.
    pub fn map(&self, f: impl Fn(f64) -> f64) -> Sample {
        Sample(self.0.iter().map(|&v| f(v)).collect())
    }
}

/// Whether valgrind can be run.
pub fn valgrind_available() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Instructions callgrind counts for `exe args... --packets N`.
fn callgrind_total(exe: &Path, args: &[String], packets: u64) -> Result<u64, Error> {
    let mut all: Vec<String> = args.to_vec();
    all.extend(["--packets".to_string(), packets.to_string()]);
    callgrind_command(exe, &all).map(|(instructions, _)| instructions)
}

/// Instructions callgrind counts over the whole run of `program args...`
/// (start-up and tear-down included), and what the program wrote to its
/// standard output. The program is any binary (`bricks`, Click's
/// `click`): valgrind reports on stderr, so stdout is the program's own.
pub fn callgrind_command<S: AsRef<OsStr>>(
    program: &Path,
    args: &[S],
) -> Result<(u64, String), Error> {
    // A file of its own per call: tests measure in parallel threads.
    let out = tempfile::Builder::new()
        .prefix("bricks-callgrind-")
        .suffix(".out")
        .tempfile()?;
    let run = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.path().display()))
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| Error::Callgrind(format!("running valgrind: {e}")))?;
    if !run.status.success() {
        return Err(Error::Callgrind(format!(
            "valgrind {} exited with {}",
            program.display(),
            run.status
        )));
    }
    let text = std::fs::read_to_string(out.path())?;
    let instructions = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::Callgrind("no instruction total in its output".into()))?;
    Ok((
        instructions,
        String::from_utf8_lossy(&run.stdout).into_owned(),
    ))
}

/// Instructions per packet of `exe args...`: the difference between runs
/// of `big` and `small` packets, divided by the difference.
pub fn callgrind_per_packet(
    exe: &Path,
    args: &[String],
    small: u64,
    big: u64,
) -> Result<f64, Error> {
    let a = callgrind_total(exe, args, small)?;
    let b = callgrind_total(exe, args, big)?;
    Ok(b.saturating_sub(a) as f64 / big.saturating_sub(small).max(1) as f64)
}

/// The CPU model `/proc/cpuinfo` names, or "unknown".
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Nanoseconds the calling thread has spent on a CPU, from the first
/// field of `/proc/thread-self/schedstat` (the scheduler's own account,
/// to the nanosecond; time the thread waited for a CPU is not in it).
/// `None` when the kernel has no schedstat (CONFIG_SCHED_INFO off).
pub fn thread_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The CPU's clock in GHz as `/proc/cpuinfo` states it (`cpu MHz` of the
/// first CPU), or `None`.
pub fn cpu_ghz() -> Option<f64> {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()?
        .lines()
        .find(|l| l.starts_with("cpu MHz"))
        .and_then(|l| l.split_once(':'))
        .and_then(|(_, m)| m.trim().parse::<f64>().ok())
        .filter(|m| *m > 0.0)
        .map(|m| m / 1000.0)
}

/// The running kernel's release (`uname -r`), or "" when unknown.
pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_median_and_range() {
        let s = Sample(vec![3.0, 1.0, 2.0, 10.0, 4.0]);
        assert_eq!(s.median(), 3.0);
        assert_eq!(s.min(), 1.0);
        assert_eq!(s.max(), 10.0);
        assert_eq!(s.show(1), "3.0 (1.0-10.0)");
        assert_eq!(Sample(vec![2.5]).show(2), "2.50");
        assert_eq!(Sample::default().median(), 0.0);
    }

    #[test]
    fn pairwise_takes_values_round_by_round() {
        let a = Sample(vec![10.0, 20.0, 40.0]);
        let b = Sample(vec![5.0, 10.0, 10.0]);
        assert_eq!(a.pairwise(&b, |x, y| x / y), Sample(vec![2.0, 2.0, 4.0]));
        assert_eq!(a.pairwise(&b, |x, y| x / y).median(), 2.0);
        assert_eq!(a.pairwise(&b, |x, y| x - y), Sample(vec![5.0, 10.0, 30.0]));
    }

    #[test]
    fn rounds_time_every_workload_once_a_round() {
        let runs = std::cell::RefCell::new(Vec::new());
        let make = |name: &'static str| {
            let runs = &runs;
            move |p: u64| {
                runs.borrow_mut().push((name, p));
                Workload::new(
                    name,
                    format!("InfiniteSource(LIMIT {p}, BURST 32) -> sink :: Discard;"),
                    &["sink"],
                )
            }
        };
        let (a, b) = (make("a"), make("b"));
        let samples = time_ns_rounds(&[&a, &b], 2000, 3).unwrap();
        assert_eq!(samples.len(), 2);
        assert!(samples
            .iter()
            .all(|s| s.0.len() == 3 && s.0.iter().all(|&v| v > 0.0)));
        // Warmed once each, then each round starts one further along.
        let order: Vec<&str> = runs.borrow().iter().map(|r| r.0).collect();
        assert_eq!(order, ["a", "b", "a", "b", "b", "a", "a", "b"]);
        let short = make("short");
        let bad = |p: u64| {
            let mut w = short(p);
            w.text = "InfiniteSource(LIMIT 10) -> sink :: Discard;".into();
            w
        };
        assert!(matches!(
            time_ns_rounds(&[&bad], 2000, 1),
            Err(Error::Run { .. })
        ));
    }

    #[test]
    fn a_workload_runs_and_counts_its_sinks() {
        let w = Workload::new(
            "t",
            "InfiniteSource(LIMIT 1000, BURST 32) -> q :: Queue(1024) -> sink :: Discard;",
            &["sink"],
        );
        let r = w.run().unwrap();
        assert_eq!(r.delivered, 1000);
        assert_eq!(r.counter("q", "drops"), 0);
        assert!(r.secs > 0.0);
        let bad = Workload::new("bad", "NoSuchElement -> Discard;", &[]);
        assert!(matches!(bad.run(), Err(Error::Config { .. })));
    }
}
