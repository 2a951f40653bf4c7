//! What the runs found: spreads over runs, the ratios against the
//! papers', and the report as tables or JSON.

use super::*;

/// All runs of one subject.
pub(super) struct Measured {
    pub(super) subject: Subject,
    pub(super) cpus: Vec<usize>,
    pub(super) runs: Vec<RunResult>,
    pub(super) errors: Vec<String>,
    /// The loss-free rate searches, one a run.
    pub(super) searches: Vec<Search>,
}

/// Median, least and most of one figure over the runs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spread {
    pub(super) median: f64,
    pub(super) min: f64,
    pub(super) max: f64,
}

/// Median, least and most of `v` (sorted by the median).
fn spread_of(v: &mut [f64]) -> Option<Spread> {
    if v.is_empty() {
        return None;
    }
    let median = median(v);
    Some(Spread {
        median,
        min: v[0],
        max: v[v.len() - 1],
    })
}

/// Two subjects' figures are compared only if the machine was about as
/// busy with other work for both: the medians of the other work measured
/// in their runs (`other_work`, in CPUs) differ by at most this much, or
/// by a quarter of the larger, whichever allows more. A quarter of a CPU
/// taken by something else moves a subject's rate on a machine of two by
/// more than the goals' margins.
const OTHER_TOLERANCE: f64 = 0.25;

/// Without a measure of other work (no readable `/proc`), the 1-minute
/// load averages at the start of the runs, which count the bench's own
/// processes too, may differ by this much or a quarter of the larger.
const LOAD_TOLERANCE: f64 = 0.5;

/// Why two subjects' figures are not compared, if they are not: the
/// machine had more other work while one of them was measured.
pub(super) fn incomparable(a: &Measured, b: &Measured) -> Option<String> {
    if let (Some(oa), Some(ob)) = (a.other(), b.other()) {
        let (oa, ob) = (oa.median, ob.median);
        let allowed = OTHER_TOLERANCE.max(0.25 * oa.max(ob));
        return ((oa - ob).abs() > allowed).then(|| {
            format!(
                "not compared: other work {oa:.2} CPUs ({}) against {ob:.2} ({})",
                a.subject.name, b.subject.name
            )
        });
    }
    let (la, lb) = (a.load()?.median, b.load()?.median);
    let allowed = LOAD_TOLERANCE.max(0.25 * la.max(lb));
    ((la - lb).abs() > allowed).then(|| {
        format!(
            "not compared: load {la:.2} ({}) against {lb:.2} ({})",
            a.subject.name, b.subject.name
        )
    })
}

impl Measured {
    pub(super) fn spread(&self, f: impl Fn(&RunResult) -> f64) -> Option<Spread> {
        let mut v: Vec<f64> = self.runs.iter().map(f).collect();
        spread_of(&mut v)
    }

    /// [`Measured::spread`] of a figure some runs lack.
    pub(super) fn spread_of_some(&self, f: impl Fn(&RunResult) -> Option<f64>) -> Option<Spread> {
        let mut v: Vec<f64> = self.runs.iter().filter_map(f).collect();
        spread_of(&mut v)
    }

    pub(super) fn mpps(&self) -> Option<Spread> {
        self.spread(|r| r.sink.mpps)
    }

    /// The loss-free rates the searches found (Mpps): median, least and
    /// most; `None` when no search found one.
    pub(super) fn loss_free(&self) -> Option<Spread> {
        let mut v: Vec<f64> = self
            .searches
            .iter()
            .filter_map(|s| s.best.map(|(r, _)| r))
            .collect();
        spread_of(&mut v)
    }

    /// Whether the generator, not the subject, set the loss-free rate (a
    /// search found nothing lost even at full speed).
    pub(super) fn tester_bound(&self) -> bool {
        self.searches.iter().any(|s| s.tester_bound)
    }

    /// Every run and probe of this subject.
    fn all_runs(&self) -> impl Iterator<Item = &RunResult> {
        self.runs.iter().chain(
            self.searches
                .iter()
                .flat_map(|s| s.probes.iter().map(|(_, r)| r)),
        )
    }

    /// The machine's 1-minute load average at the start of every run and
    /// probe of this subject.
    pub(super) fn load(&self) -> Option<Spread> {
        let mut v: Vec<f64> = self.all_runs().map(|r| r.load).collect();
        spread_of(&mut v)
    }

    /// The other work while each run and probe of this subject sent, in
    /// CPUs; `None` if some run could not measure it.
    pub(super) fn other(&self) -> Option<Spread> {
        let mut v: Vec<f64> = self.all_runs().map(|r| r.other).collect::<Option<_>>()?;
        spread_of(&mut v)
    }

    pub(super) fn latency_us(&self, i: usize) -> Option<f64> {
        self.spread(|r| r.sink.latency[i] as f64 / 1e3)
            .map(|s| s.median)
    }
}

/// A ratio of two subjects' medians and what it is compared with.
pub(super) struct Ratio {
    pub(super) name: &'static str,
    pub(super) top: &'static str,
    pub(super) bottom: &'static str,
    /// The goal: at least this.
    pub(super) goal: Option<f64>,
    /// What the papers measured, in words.
    pub(super) paper: &'static str,
}

pub(super) const RATIOS: &[Ratio] = &[
    Ratio {
        name: "bricks / Linux",
        top: "bricks",
        bottom: "linux",
        goal: Some(2.0),
        paper: "",
    },
    Ratio {
        name: "bricks fast path / Linux",
        top: "bricks-fastpath",
        bottom: "linux",
        goal: Some(1.2),
        paper: "",
    },
    Ratio {
        name: "bricks fast path / XDP_REDIRECT",
        top: "bricks-fastpath",
        bottom: "xdp-redirect",
        goal: Some(0.6),
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

pub(super) fn find<'a>(m: &'a [Measured], name: &str) -> Option<&'a Measured> {
    m.iter().find(|x| x.subject.name == name)
}

/// Which figure of a subject a ratio compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Figure {
    /// The median rate delivered while the generator sends flat out.
    Overload,
    /// The highest rate forwarded with at most the allowed loss.
    LossFree,
    /// Mpps per busy router CPU (the median over runs): what decides
    /// between two subjects that both forwarded all the generator sent,
    /// an estimate of their capacities rather than a rate.
    PerBusyCpu,
}

impl Measured {
    pub(super) fn figure(&self, f: Figure) -> Option<f64> {
        match f {
            Figure::Overload => self.mpps().map(|s| s.median),
            Figure::LossFree => self.loss_free().map(|s| s.median),
            Figure::PerBusyCpu => self
                .spread_of_some(RunResult::mpps_per_busy_cpu)
                .map(|s| s.median),
        }
    }
}

pub(super) fn ratio_value(m: &[Measured], r: &Ratio, f: Figure) -> Option<f64> {
    let (top, bottom) = (find(m, r.top)?, find(m, r.bottom)?);
    if incomparable(top, bottom).is_some() {
        return None;
    }
    let (top, bottom) = (top.figure(f)?, bottom.figure(f)?);
    (bottom > 0.0).then(|| top / bottom)
}

/// Why ratio `r` is not given although both its subjects were measured.
pub(super) fn ratio_refused(m: &[Measured], r: &Ratio) -> Option<String> {
    incomparable(find(m, r.top)?, find(m, r.bottom)?)
}

/// How a loss-free ratio relates to the true one when one side is only a
/// lower bound (the generator set it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Bound {
    Exact,
    /// The true ratio is at least this.
    AtLeast,
    /// The true ratio is at most this.
    AtMost,
    /// Both sides are lower bounds: the ratio says nothing.
    Unknown,
}

impl Bound {
    pub(super) fn of(m: &[Measured], r: &Ratio) -> Bound {
        let lower = |name| find(m, name).is_some_and(Measured::tester_bound);
        match (lower(r.top), lower(r.bottom)) {
            (false, false) => Bound::Exact,
            (true, false) => Bound::AtLeast,
            (false, true) => Bound::AtMost,
            (true, true) => Bound::Unknown,
        }
    }

    pub(super) fn prefix(self) -> &'static str {
        match self {
            Bound::Exact => "",
            Bound::AtLeast => ">=",
            Bound::AtMost => "<=",
            Bound::Unknown => "~",
        }
    }

    /// Whether a ratio of `v` meets "at least `goal`": `None` when the
    /// bound leaves it open.
    pub(super) fn meets(self, v: f64, goal: f64) -> Option<bool> {
        match self {
            Bound::Exact => Some(v >= goal),
            Bound::AtLeast => (v >= goal).then_some(true),
            Bound::AtMost => (v < goal).then_some(false),
            Bound::Unknown => None,
        }
    }
}

pub(super) fn placement(machine: &Machine) -> String {
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

pub(super) fn print_header(a: &IoArgs, machine: &Machine, load: f64) {
    println!(
        "bricks bench io: 64-byte UDP frames in {} flows, gen g0 -> r0 router r1 -> s0 sink \
         (veth pairs, {} queues each); {} s per run, median of {} run{}{}",
        a.flows,
        queues(),
        a.seconds,
        a.runs,
        if a.runs == 1 { "" } else { "s" },
        if a.warm_up > 0.0 {
            format!(", after a {} s run of each subject not counted", a.warm_up)
        } else {
            String::new()
        }
    );
    println!(
        "machine: {} CPU{} ({}), Linux {}; load average {load:.2} at start",
        machine.cpus.len(),
        if machine.cpus.len() == 1 { "" } else { "s" },
        machine.model,
        machine.kernel
    );
    println!("placement: {}", placement(machine));
    println!(
        "generator: {}",
        match a.generator {
            Generator::Live => "XDP live frames (`bricks gen --backend live`, from inside the kernel, one queue) for the subjects that read one queue; AF_XDP on every queue for the others",
            Generator::Xdp => "AF_XDP (`bricks gen --backend xdp`), a worker for each queue",
        }
    );
    println!();
}

pub(super) fn report_text(a: &IoArgs, measured: &[Measured], load_end: f64) -> String {
    let mut o = String::new();
    let searched = measured.iter().any(|m| !m.searches.is_empty());
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
            "{:<16} {:<38} {:>6} {:>13} {:>8} {:>7}   {:>9} {:>13} {:>7} {:>7} {:>11} {:>11}",
            "subject",
            "",
            "Mpps",
            "min..max",
            "offered",
            "loss %",
            "Mpps",
            "min..max",
            "x Linux",
            "x XDP",
            "other CPU",
            "load"
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
            let (free, free_spread) = match m.loss_free() {
                Some(f) => {
                    // A search that lost nothing at full speed takes the
                    // offered rate of the full-speed runs: their spread is
                    // the figure's.
                    let s = match m.spread(RunResult::offered_mpps) {
                        Some(o) if m.tester_bound() => o,
                        _ => f,
                    };
                    let bound = if m.tester_bound() { ">=" } else { "" };
                    (
                        format!("{bound}{:.3}", f.median),
                        format!("{:.3}..{:.3}", s.min, s.max),
                    )
                }
                None if m.searches.is_empty() => ("-".into(), String::new()),
                None => ("none".into(), String::new()),
            };
            let x = |base: &str, b: Option<f64>| {
                if find(measured, base).is_some_and(|bm| incomparable(m, bm).is_some()) {
                    return "busy".into();
                }
                match (m.figure(main), b) {
                    (Some(v), Some(b)) if b > 0.0 => format!("{:.2}", v / b),
                    _ => "-".into(),
                }
            };
            let load = m
                .load()
                .map_or("-".into(), |l| format!("{:.1}..{:.1}", l.min, l.max));
            let other = m
                .other()
                .map_or("-".into(), |l| format!("{:.2}..{:.2}", l.min, l.max));
            let _ = writeln!(
                o,
                "{:<16} {label:<38} {:>6.3} {:>13} {:>8.3} {:>7.1}   {:>9} {:>13} {:>7} {:>7} {:>11} {:>11}",
                m.subject.name,
                mpps.median,
                format!("{:.3}..{:.3}", mpps.min, mpps.max),
                offered,
                loss,
                free,
                free_spread,
                x("linux", linux),
                x("xdp-redirect", xdp),
                other,
                load,
            );
        }
        let _ = writeln!(
            o,
            "Mpps: frames the sink received per second (first to last); offered: frames the \
             generator sent per second; loss: sent and not received. Loss-free: the highest \
             rate a {}-step search sent with at most {}% lost {} (>=: nothing more was lost \
             at full speed, so the generator, not the subject, set the figure), searched once a run: median and min..max over {} \
             search{}; x Linux, x XDP: ratios of {}, not \
             given (\"busy\") when the machine had more other work during one subject's runs: \
             their medians differ by more than {OTHER_TOLERANCE} CPU or a quarter; other CPU: \
             CPUs' worth of work that was not the bench's while the generator sent (other \
             processes, and the time the hypervisor gave to other guests), least..most over \
             the subject's runs and probes; load: the 1-minute load average at their start \
             (the bench's own processes count in it).",
            a.search_steps,
            a.max_loss,
            if a.probe_trials > 1 {
                format!("in at least half of {} trials at that rate", a.probe_trials)
            } else {
                "in its trial at that rate".to_string()
            },
            a.runs,
            if a.runs == 1 { "" } else { "es" },
            if searched {
                "loss-free rates"
            } else {
                "medians at full speed"
            }
        );
        let lines: Vec<String> = RATIOS
            .iter()
            .filter_map(|r| {
                if let Some(why) = ratio_refused(measured, r) {
                    return Some(format!("  {:<34} {why}", r.name));
                }
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
                    let verdict = match bound.meets(v, g) {
                        Some(true) => "met".to_string(),
                        Some(false) => "NOT met".to_string(),
                        None => match ratio_value(measured, r, Figure::PerBusyCpu) {
                            Some(c) => format!(
                                "open at the generator's rate, which bounds both sides; \
                                 by Mpps per busy router CPU {c:.2}: {}",
                                if c >= g { "met" } else { "NOT met" }
                            ),
                            None => "open (the generator bounds both sides)".to_string(),
                        },
                    };
                    let _ = write!(l, "   goal >= {g}: {verdict}");
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
        let cpu: Vec<String> = measured
            .iter()
            .filter(|m| !m.subject.is_latency())
            .filter_map(|m| {
                let busy = m.spread_of_some(|r| r.router_busy)?;
                let per = m.spread_of_some(RunResult::mpps_per_busy_cpu)?;
                Some(format!(
                    "  {:<16} {:>6.0} %   {:>6.3}  {:>13}",
                    m.subject.name,
                    busy.median * 100.0,
                    per.median,
                    format!("{:.3}..{:.3}", per.min, per.max)
                ))
            })
            .collect();
        if !cpu.is_empty() {
            let _ = writeln!(
                o,
                "\nrouter CPU with the generator at full speed (subjects on the router CPU alone)\n  \
                 {:<16} {:>8}   {:>6}  {:>13}",
                "subject", "busy", "Mpps/CPU", "min..max"
            );
            for l in cpu {
                let _ = writeln!(o, "{l}");
            }
            let _ = writeln!(
                o,
                "busy: the router CPU's user, system, interrupt and softirq time (XDP programs and \
                 NAPI threads included) while the generator ran, from /proc/stat, median over \
                 runs; Mpps per busy CPU: received Mpps / busy, each run, median and min..max: \
                 what one fully busy CPU would forward at the same cost per frame, a capacity \
                 where the generator, not the router, sets the rate (an estimate, not a \
                 measured rate)."
            );
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
             (the bench's own processes count)"
        );
    }
    let others: Vec<f64> = measured
        .iter()
        .flat_map(|m| m.runs.iter().filter_map(|r| r.other))
        .collect();
    if let Some(hi) = others.iter().copied().reduce(f64::max) {
        let lo = others.iter().copied().fold(f64::INFINITY, f64::min);
        let _ = writeln!(
            o,
            "other work while the generator sent: {lo:.2} to {hi:.2} CPUs{}",
            if hi > OTHER_TOLERANCE {
                " (something else competed with the bench: its figures are lower and wider \
                 than the machine's own)"
            } else {
                ""
            }
        );
    }
    o
}

pub(super) fn report_json(
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
                        "other_cpus": r.other,
                        "router_busy": r.router_busy,
                        "mpps_per_busy_cpu": r.mpps_per_busy_cpu(),
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
                "router_busy": sp(m.spread_of_some(|r| r.router_busy)),
                "mpps_per_busy_cpu": sp(m.spread_of_some(RunResult::mpps_per_busy_cpu)),
                "latency_us": m.subject.is_latency().then(|| serde_json::json!({
                    "p50": lat(0), "p90": lat(1), "p99": lat(2), "p999": lat(3), "max": lat(4),
                })),
                "runs": runs,
                "loss_free": (!m.searches.is_empty()).then(|| serde_json::json!({
                    "mpps": m.loss_free().map(|f| f.median),
                    "mpps_min": m.loss_free().map(|f| f.min),
                    "mpps_max": m.loss_free().map(|f| f.max),
                    "tester_bound": m.tester_bound(),
                    "searches": m.searches.iter().map(|se| serde_json::json!({
                        "mpps": se.best.map(|b| b.0),
                        "tester_bound": se.tester_bound,
                        "loss_pct": se.best.map(|b| b.1),
                        "probes": se.probes.iter().map(|(rate, r)| serde_json::json!({
                            "rate_pps": rate,
                            "offered_mpps": r.offered_mpps(),
                            "mpps": r.sink.mpps,
                            "loss_pct": r.loss_pct(),
                            "load_average": r.load,
                            "other_cpus": r.other,
                        })).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                })),
                "load_average": sp(m.load()),
                "other_cpus": sp(m.other()),
                "errors": m.errors,
            })
        })
        .collect();
    let ratios: Vec<serde_json::Value> = RATIOS
        .iter()
        .filter_map(|r| {
            if let Some(why) = ratio_refused(measured, r) {
                return Some(serde_json::json!({
                    "name": r.name,
                    "not_compared": why,
                    "goal": r.goal,
                }));
            }
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
                "per_busy_cpu": ratio_value(measured, r, Figure::PerBusyCpu),
                "goal": r.goal,
                "met": r.goal.and_then(|g| bound.meets(v, g)),
                "paper": (!r.paper.is_empty()).then_some(r.paper),
            }))
        })
        .collect();
    serde_json::json!({
        "seconds": a.seconds,
        "runs": a.runs,
        "warm_up_seconds": a.warm_up,
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

/// The summary rows `bricks reproduce` shows for RouteBricks Table 1 and
/// Figs. 6-7 and the NIC paper's Figs. 2-3: each ratio of overload rates
/// measured in one run, beside the paper's; `cpus` is how many CPUs the
/// machine gave.
pub(super) fn paper_rows(m: &[Measured], cpus: usize) -> Vec<crate::report::Row> {
    use crate::report::{Row, Verdict};
    let ratio = |top: &str, bottom: &str| -> Option<f64> {
        let t = find(m, top)?.figure(Figure::Overload)?;
        let b = find(m, bottom)?.figure(Figure::Overload)?;
        (b > 0.0).then(|| t / b)
    };
    let row = |experiment: &str,
               measure: &str,
               paper: &str,
               value: Option<f64>,
               verdict: &dyn Fn(f64) -> Verdict| {
        Row {
            experiment: experiment.into(),
            measure: measure.into(),
            paper: paper.into(),
            bricks: value.map_or("-".into(), |v| format!("{v:.2}x")),
            verdict: match value {
                Some(v) => verdict(v),
                None => Verdict::NotRun("a subject of the ratio did not run (see the log)".into()),
            },
        }
    };
    let gain = |paper: f64| {
        move |v: f64| {
            Verdict::from_check(
                v > 1.05,
                if v > 1.05 {
                    format!(
                        "a gain, as in the paper; veths make each packet cost the kernel more, so the \
                         gain is {:.0} % of the paper's",
                        100.0 * (v - 1.0) / (paper - 1.0)
                    )
                } else {
                    "no gain on veths: the kernel's per-packet work on the veth pair, not bricks' \
                     polling, sets the rate here"
                        .into()
                },
            )
        }
    };
    let two = if cpus >= 2 { "2 CPUs" } else { "1 CPU" };
    let batch = ratio("bricks", "bricks-nobatch");
    let multi = ratio("bricks-2w", "bricks");
    let mut rows = vec![
        row(
            "Table 1",
            "poll-driven batching: kp 32 / 1 (kn 1)",
            "3.40 (4.97 / 1.46 Gbps, 8 cores)",
            ratio("bricks-kn1", "bricks-nobatch"),
            &gain(3.40),
        ),
        row(
            "Table 1",
            "NIC-driven batching: kn 16 / 1 (kp 32)",
            "1.97 (9.77 / 4.97 Gbps)",
            ratio("bricks", "bricks-kn1"),
            &gain(1.97),
        ),
        row(
            "Table 1",
            "both: kp 32, kn 16 / no batching",
            "6.7 (9.77 / 1.46 Gbps)",
            batch,
            &gain(6.7),
        ),
        row(
            "Fig. 6",
            &format!("a core per path (per-core queues) / a pipeline over cores ({two})"),
            "1.4 (1.7 / 1.2 Gbps with a shared L3)",
            ratio("bricks-2w", "bricks-pipeline"),
            &|v| {
                Verdict::from_check(
                    v > 1.0,
                    "parallel beats pipelined, as the paper found: a packet stays on one core",
                )
            },
        ),
        row(
            "Fig. 7",
            "multiple queues x batching, against one queue without batching",
            "the gains stack: batching (Table 1: 6.7x) on top of multiple queues",
            multi.zip(batch).map(|(a, b)| a * b),
            &|v| {
                Verdict::from_check(
                    v > 1.5,
                    "the two gains stack, as in the paper; their product is smaller on veths with \
                     two CPUs",
                )
            },
        ),
        row(
            "Fig. 2",
            &format!("multi-queue / serial NIC mode ({two})"),
            "more than 3 (8 cores)",
            ratio("bricks-2w", "bricks-serial"),
            &|v| {
                Verdict::from_check(
                    v > 1.0,
                    "hardware-style queues beat a receive core and a transmit core in software; \
                     with two CPUs the serial mode has no core left to process on",
                )
            },
        ),
    ];
    rows.extend(sweep_rows(&worker_sweep(m, cpus), cpus));
    rows
}

/// The rate of 1, 2, ... `cpus` workers with per-core queues, each
/// relative to one worker's: (workers, ratio), for the subjects that ran.
pub(super) fn worker_sweep(m: &[Measured], cpus: usize) -> Vec<(usize, f64)> {
    let one = find(m, "bricks").and_then(|x| x.figure(Figure::Overload));
    (1..=cpus.max(1))
        .filter_map(|n| {
            let r = find(m, &super::workers_name(n))?.figure(Figure::Overload)?;
            let one = one.filter(|&o| o > 0.0)?;
            Some((n, r / one))
        })
        .collect()
}

/// The NIC paper's Figs. 2 and 3 from the worker sweep (`sweep`, from
/// [`worker_sweep`]) on a machine of `cpus` cores.
pub(super) fn sweep_rows(sweep: &[(usize, f64)], cpus: usize) -> Vec<crate::report::Row> {
    use crate::report::{Row, Verdict};
    let swept =
        format!("workers 1 to {cpus} (one per core of this machine), each owning a veth queue");
    let list = |f: &dyn Fn(usize, f64) -> f64| {
        sweep
            .iter()
            .map(|&(n, r)| format!("{n}: {:.2}", f(n, r)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if sweep.len() < 2 {
        let why = if cpus < 2 {
            "one core: there is nothing to sweep".to_string()
        } else {
            "fewer than two worker counts ran (see the log)".to_string()
        };
        return ["Fig. 2", "Fig. 3"]
            .into_iter()
            .map(|f| Row {
                experiment: f.into(),
                measure: format!("rate against workers, {swept}"),
                paper: "near-linear with multiple queues (8 cores)".into(),
                bricks: list(&|_, r| r),
                verdict: Verdict::NotRun(why.clone()),
            })
            .collect();
    }
    let (top_n, top) = sweep[sweep.len() - 1];
    let grows = top > 1.05;
    let per_core_min = sweep
        .iter()
        .map(|&(n, r)| r / n as f64)
        .fold(f64::MAX, f64::min);
    vec![
        Row {
            experiment: "Fig. 2".into(),
            measure: format!("aggregate rate against workers relative to one, {swept}"),
            paper: "grows near-linearly with cores with multi-queue NICs; flat with a serial NIC"
                .into(),
            bricks: list(&|_, r| r),
            verdict: Verdict::from_check(
                grows,
                if grows {
                    format!(
                        "{top_n} workers forward {top:.2}x one worker's rate: the rate grows \
                         with the cores{}",
                        if top < top_n as f64 {
                            format!(
                                "; below {top_n}x because the generator, the sink and the \
                                 veths' kernel work share these CPUs"
                            )
                        } else {
                            String::new()
                        }
                    )
                } else {
                    format!(
                        "{top_n} workers forward {top:.2}x one worker's rate: the kernel's \
                         per-packet work on the veths and the tester sharing the CPUs set \
                         the rate, not bricks' workers"
                    )
                },
            ),
        },
        Row {
            experiment: "Fig. 3".into(),
            measure: format!("per-core rate relative to one worker, {swept}"),
            paper: "near flat with multiple queues until the port's limit".into(),
            bricks: list(&|n, r| r / n as f64),
            verdict: Verdict::from_check(
                per_core_min >= 0.7,
                format!(
                    "each worker keeps at least {:.0} % of one worker's rate; the generator \
                     and the sink share the same CPUs here",
                    per_core_min * 100.0
                ),
            ),
        },
    ]
}
