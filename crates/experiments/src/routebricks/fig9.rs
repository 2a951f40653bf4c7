//! RouteBricks Fig. 9 (§5.3): CPU cycles per packet against the input
//! rate, for minimal forwarding, IP routing and IPsec on 64-byte packets.
//!
//! A polling router keeps its CPU at 100 % whatever the traffic, so its
//! cycles divided by its packets fall as 1/rate and say nothing. The
//! paper takes out the cycles of *empty polls*, the polls that found no
//! packet: it measures what one empty poll costs (c_e) and how many there
//! are per second at each input rate r (E_r), and deducts c_e x E_r from
//! the cycles spent. What is left, per packet, stays flat as the rate
//! grows: the CPU, not the memory system, is the bottleneck (footnote 4).
//!
//! bricks does the same on one worker in memory:
//!
//! - the input rate is `WorkloadSource`'s RATE (a token bucket paced by
//!   the router's clock), at fractions of the rate the worker reaches
//!   flat out (Fig. 8's 64-byte run);
//! - the cycles are the worker thread's CPU time from the scheduler
//!   (`/proc/thread-self/schedstat`, time waiting for a CPU excluded)
//!   times the CPU's clock (`/proc/cpuinfo`);
//! - the empty polls are the engine's rounds in which no task moved a
//!   packet (`RunSummary::polls`), and c_e is measured in a run of the
//!   same configuration in which nothing arrives (two packets a second
//!   apart: every round but two is empty).

use super::workloads::{self, App, Size};
use super::{Settings, PAPER_CPI, PAPER_INSTR};
use crate::measure::{cpu_ghz, Run};
use crate::plot::{Chart, Series};
use crate::report::{Row, Verdict};
use crate::Error;
use bricks_runtime::Polls;

/// The applications of the paper's Fig. 9.
pub const APPS: [App; 3] = [App::Minimal, App::Routing, App::Ipsec];

/// Cycles per packet with empty polls taken out are flat when the
/// largest is at most this many times the smallest.
pub const FLAT: f64 = 1.3;

/// What one run at one input rate used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Packets forwarded.
    pub packets: u64,
    /// Seconds the run took.
    pub secs: f64,
    /// CPU seconds the worker spent.
    pub cpu_secs: f64,
    /// Its rounds, and the empty ones.
    pub polls: Polls,
}

impl Load {
    /// The load of a one-worker run; `None` when the kernel did not say
    /// how much CPU time it took.
    pub fn of(r: &Run) -> Option<Load> {
        Some(Load {
            packets: r.delivered,
            secs: r.secs,
            cpu_secs: r.cpu_secs?,
            polls: r.summary.polls,
        })
    }

    /// Its cycles at `ghz`.
    pub fn cycles(&self, ghz: f64) -> f64 {
        self.cpu_secs * ghz * 1e9
    }
}

/// c_e: the cycles of one empty poll, from a run in which (almost)
/// nothing arrived, so that (almost) every cycle went to empty polls.
/// `None` when it had none.
pub fn empty_poll_cycles(idle: &Load, ghz: f64) -> Option<f64> {
    (idle.polls.empty > 0).then(|| idle.cycles(ghz) / idle.polls.empty as f64)
}

/// Cycles per packet at one input rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// The input rate the worker took, in Mpps.
    pub mpps: f64,
    /// Every cycle of the worker over its packets.
    pub with_empty: f64,
    /// The same after deducting c_e times the empty polls: the paper's
    /// "true" per-packet load.
    pub without_empty: f64,
    /// The share of the cycles that went to empty polls (0 to 1).
    pub empty_share: f64,
    /// Packets per round that found work (the batch the rate allows).
    pub per_busy_round: f64,
}

/// Fig. 9's point for `l`, with empty polls costing `c_e` cycles each.
/// `None` when nothing was forwarded.
pub fn point(l: &Load, c_e: f64, ghz: f64) -> Option<Point> {
    if l.packets == 0 || l.secs <= 0.0 {
        return None;
    }
    let total = l.cycles(ghz);
    // Never more than everything: on a noisy machine c_e x E can exceed
    // what was measured by a little when nearly all polls are empty.
    let empty = (c_e * l.polls.empty as f64).min(total);
    let p = l.packets as f64;
    let busy = l.polls.rounds.saturating_sub(l.polls.empty).max(1);
    Some(Point {
        mpps: p / l.secs / 1e6,
        with_empty: total / p,
        without_empty: (total - empty) / p,
        empty_share: if total > 0.0 { empty / total } else { 0.0 },
        per_busy_round: p / busy as f64,
    })
}

/// The largest over the smallest cycles per packet with empty polls
/// taken out (1 is perfectly flat); `None` with fewer than two points.
pub fn spread(points: &[Point]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let v = points.iter().map(|p| p.without_empty);
    let (lo, hi) = v.fold((f64::MAX, 0.0f64), |(lo, hi), c| (lo.min(c), hi.max(c)));
    (lo > 0.0).then(|| hi / lo)
}

/// The paper's cycles per packet for `app`: Table 3's instructions times
/// cycles per instruction, the level its Fig. 9 curves stay at.
pub fn paper_cycles(app: App) -> Option<f64> {
    let i = APPS.iter().position(|&a| a == app)?;
    Some(PAPER_INSTR[i].1 * PAPER_CPI[i])
}

/// The median of each field over `runs` (each run the same rates in the
/// same order).
fn median_points(runs: &[Vec<Point>]) -> Vec<Point> {
    let n = runs.iter().map(Vec::len).min().unwrap_or(0);
    let med = |f: &dyn Fn(&Point) -> f64, i: usize| {
        let mut v: Vec<f64> = runs.iter().map(|r| f(&r[i])).collect();
        crate::io::median(&mut v)
    };
    (0..n)
        .map(|i| Point {
            mpps: med(&|p| p.mpps, i),
            with_empty: med(&|p| p.with_empty, i),
            without_empty: med(&|p| p.without_empty, i),
            empty_share: med(&|p| p.empty_share, i),
            per_busy_round: med(&|p| p.per_busy_round, i),
        })
        .collect()
}

/// Fig. 9's verdict on the cycles per packet of one application.
pub fn verdict(points: &[Point]) -> Verdict {
    let Some(s) = spread(points) else {
        return Verdict::NotRun("fewer than two input rates measured".into());
    };
    let (first, last) = (points[0], points[points.len() - 1]);
    let flat = s <= FLAT;
    let mut why = format!(
        "with empty polls taken out the cycles per packet vary {s:.2}x over the rates \
         ({:.0} at {:.2} Mpps, {:.0} at {:.2} Mpps); with them in, {:.0} falling to {:.0}",
        first.without_empty,
        first.mpps,
        last.without_empty,
        last.mpps,
        first.with_empty,
        last.with_empty
    );
    if flat {
        why.push_str(
            ": flat, as in the paper: the CPU's work per packet does not grow with the rate",
        );
    } else if first.without_empty > last.without_empty {
        why.push_str(&format!(
            ": higher at low rates, where each poll finds {:.1} packets against {:.1} near \
             saturation: the per-poll work (tasks polled, the batch pushed through the graph) \
             is shared by fewer packets. The paper's NICs batched in hardware (kn) before \
             Click polled; here the source hands over what has arrived at each poll. Not \
             rising with the rate, so the paper's inference holds here too: the CPU, not \
             the memory system, sets the limit",
            first.per_busy_round, last.per_busy_round
        ));
    } else {
        why.push_str(
            ": rising with the rate, the sign the paper looked for of a memory-bound \
             workload (footnote 4)",
        );
    }
    Verdict::from_check(flat, why)
}

/// Runs Fig. 9 for each application at fractions of its saturation rate
/// (`saturation`: the application's 64-byte ns per packet flat out) and
/// returns its rows; writes `fig9-APP.svg`.
/// What Fig. 9 gives Table 3: cycles per 64-byte packet at the highest
/// input rate measured, empty polls taken out, per application.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Saturated {
    /// (application, cycles per packet, input Mpps, the clock in GHz).
    pub cycles: Vec<(App, f64, f64, f64)>,
}

impl Saturated {
    /// The cycles per packet of `app`, if measured.
    pub fn of(&self, app: App) -> Option<(f64, f64, f64)> {
        self.cycles
            .iter()
            .find(|c| c.0 == app)
            .map(|&(_, c, m, g)| (c, m, g))
    }
}

/// Fig. 9's rows, and the cycles per packet at its highest rates.
pub fn run(s: &Settings, saturation: &dyn Fn(App) -> f64) -> Result<(Vec<Row>, Saturated), Error> {
    let mut sat = Saturated::default();
    let Some(ghz) = cpu_ghz() else {
        return Ok((not_run("the CPU's clock is not in /proc/cpuinfo"), sat));
    };
    let fractions: &[f64] = s.pick(&[0.1, 0.25, 0.5, 0.75, 0.9], &[0.2, 0.5, 0.8]);
    let secs: f64 = s.pick(1.0, 0.25);
    let reps = s.pick(s.runs.clamp(1, 3), 1);
    let mut rows = Vec::new();
    let mut table = crate::report::Table::new(&[
        "application",
        "input Mpps",
        "cycles/packet",
        "empty polls out",
        "empty-poll share",
        "packets per busy poll",
    ]);
    for app in APPS {
        let sat_pps = 1e9 / saturation(app).max(1.0);
        let measure_one = |rate: u64, packets: u64| -> Result<Option<Load>, Error> {
            let w = workloads::workload_at(app, Size::Bytes(64), packets, Some(rate))
                .map_err(Error::Io)?;
            let r = w.run()?;
            if r.delivered != packets {
                return Err(Error::Run {
                    workload: w.name,
                    message: format!("{} of {packets} packets delivered", r.delivered),
                });
            }
            Ok(Load::of(&r))
        };
        // The idle run: two packets `secs` apart.
        let idle_rate = (1.0 / secs).ceil() as u64;
        let Some(idle) = measure_one(idle_rate, 2)? else {
            return Ok((
                not_run("the kernel reports no thread CPU time (/proc/thread-self/schedstat)"),
                sat,
            ));
        };
        let Some(c_e) = empty_poll_cycles(&idle, ghz) else {
            return Ok((not_run("the idle run had no empty poll"), sat));
        };
        let mut runs: Vec<Vec<Point>> = Vec::new();
        for _ in 0..reps {
            let mut pts = Vec::new();
            for &f in fractions {
                let rate = (sat_pps * f).max(1.0) as u64;
                let packets = ((rate as f64 * secs) as u64).max(100);
                if let Some(p) = measure_one(rate, packets)?
                    .as_ref()
                    .and_then(|l| point(l, c_e, ghz))
                {
                    pts.push(p);
                }
            }
            runs.push(pts);
        }
        let pts = median_points(&runs);
        if let Some(top) = pts.iter().max_by(|a, b| a.mpps.total_cmp(&b.mpps)) {
            sat.cycles.push((app, top.without_empty, top.mpps, ghz));
        }
        for p in &pts {
            table.push(vec![
                app.label().into(),
                format!("{:.3}", p.mpps),
                format!("{:.0}", p.with_empty),
                format!("{:.0}", p.without_empty),
                format!("{:.0} %", p.empty_share * 100.0),
                format!("{:.1}", p.per_busy_round),
            ]);
        }
        let paper = paper_cycles(app).unwrap_or(0.0);
        let xs: Vec<f64> = pts.iter().map(|p| p.mpps).collect();
        let (x0, x1) = (
            xs.first().copied().unwrap_or(0.0),
            xs.last().copied().unwrap_or(1.0),
        );
        Chart {
            title: format!(
                "Fig. 9: CPU load per packet against the input rate, {}",
                app.label()
            ),
            x_label: "input rate (Mpps, one worker)".into(),
            y_label: format!("cycles per packet (at {ghz:.2} GHz)"),
            log_x: false,
            series: vec![
                Series::measured(
                    "bricks, empty polls taken out",
                    pts.iter().map(|p| (p.mpps, p.without_empty)).collect(),
                ),
                Series::measured(
                    "bricks, every cycle (empty polls in)",
                    pts.iter().map(|p| (p.mpps, p.with_empty)).collect(),
                ),
                Series::reference(
                    "paper: flat at Table 3's instructions x CPI",
                    vec![(x0, paper), (x1, paper)],
                ),
            ],
        }
        .write_svg(&s.out.join(format!("fig9-{}.svg", app.name())))?;
        let list = |f: fn(&Point) -> f64| {
            pts.iter()
                .map(|p| format!("{:.0}", f(p)))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        rows.push(Row {
            experiment: "Fig. 9".into(),
            measure: format!(
                "cycles per 64-byte packet against the input rate, {}, empty polls taken out",
                app.label()
            ),
            paper: format!(
                "flat at about {paper:.0} cycles (2.8 GHz Nehalem) up to saturation; with \
                 empty polls in, a polling CPU's cycles per packet fall as 1/rate"
            ),
            bricks: format!(
                "{} at {} Mpps ({:.0}-{:.0} % of the saturation rate); every cycle: {}; an \
                 empty poll costs {c_e:.0} cycles; {ghz:.2} GHz clock, one worker",
                list(|p| p.without_empty),
                pts.iter()
                    .map(|p| format!("{:.2}", p.mpps))
                    .collect::<Vec<_>>()
                    .join(" / "),
                fractions.first().unwrap_or(&0.0) * 100.0,
                fractions.last().unwrap_or(&0.0) * 100.0,
                list(|p| p.with_empty),
            ),
            verdict: verdict(&pts),
        });
    }
    println!(
        "\nFig. 9: one worker at fractions of its saturation rate, {secs} s a point, {reps} \
         run{} (median); cycles = the worker's CPU time x {ghz:.2} GHz\n",
        if reps == 1 { "" } else { "s" }
    );
    print!("{}", table.render());
    Ok((rows, sat))
}

fn not_run(why: &str) -> Vec<Row> {
    APPS.iter()
        .map(|app| Row {
            experiment: "Fig. 9".into(),
            measure: format!(
                "cycles per 64-byte packet against the input rate, {}, empty polls taken out",
                app.label()
            ),
            paper: format!(
                "flat at about {:.0} cycles",
                paper_cycles(*app).unwrap_or(0.0)
            ),
            bricks: "-".into(),
            verdict: Verdict::NotRun(why.into()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(packets: u64, secs: f64, cpu_secs: f64, rounds: u64, empty: u64) -> Load {
        Load {
            packets,
            secs,
            cpu_secs,
            polls: Polls { rounds, empty },
        }
    }

    /// The paper's arithmetic: cycles per second less c_e x E_r, over the
    /// packets. 1 GHz, so a CPU second is 1e9 cycles.
    #[test]
    fn empty_polls_are_taken_out() {
        // Idle: 1 s of CPU, 20 million empty polls: 50 cycles each.
        let idle = load(2, 1.0, 1.0, 20_000_002, 20_000_000);
        let c_e = empty_poll_cycles(&idle, 1.0).unwrap();
        assert!((c_e - 50.0).abs() < 1e-9);
        // 1 Mpps for 1 s: 1e9 cycles, 10 million empty polls = 5e8
        // cycles; 5e8 left for 1e6 packets = 500 a packet.
        let p = point(&load(1_000_000, 1.0, 1.0, 11_000_000, 10_000_000), c_e, 1.0).unwrap();
        assert!((p.with_empty - 1000.0).abs() < 1e-9, "{p:?}");
        assert!((p.without_empty - 500.0).abs() < 1e-9, "{p:?}");
        assert!((p.empty_share - 0.5).abs() < 1e-12);
        assert!((p.mpps - 1.0).abs() < 1e-12);
        assert!((p.per_busy_round - 1.0).abs() < 1e-12);
        // At 2 GHz every figure doubles but the share stays.
        let p2 = point(
            &load(1_000_000, 1.0, 1.0, 11_000_000, 10_000_000),
            100.0,
            2.0,
        )
        .unwrap();
        assert!((p2.without_empty - 1000.0).abs() < 1e-9);
        assert!((p2.empty_share - 0.5).abs() < 1e-12);
        // Never below zero, however costly the empty polls seemed.
        let p3 = point(&load(10, 1.0, 1.0, 100, 90), 1e9, 1.0).unwrap();
        assert_eq!(p3.without_empty, 0.0);
        assert!(point(&load(0, 1.0, 1.0, 10, 10), c_e, 1.0).is_none());
        assert!(empty_poll_cycles(&load(0, 1.0, 1.0, 5, 0), 1.0).is_none());
    }

    fn pt(mpps: f64, without: f64, with: f64) -> Point {
        Point {
            mpps,
            with_empty: with,
            without_empty: without,
            empty_share: 1.0 - without / with,
            per_busy_round: 1.0,
        }
    }

    #[test]
    fn flat_is_within_the_bound() {
        let flat = [
            pt(1.0, 100.0, 900.0),
            pt(5.0, 110.0, 200.0),
            pt(9.0, 105.0, 110.0),
        ];
        assert!((spread(&flat).unwrap() - 1.1).abs() < 1e-9);
        assert!(verdict(&flat).holds(), "{}", verdict(&flat));
        let falling = [pt(1.0, 300.0, 900.0), pt(9.0, 100.0, 110.0)];
        let v = verdict(&falling);
        assert!(!v.holds());
        assert!(v.to_string().contains("higher at low rates"), "{v}");
        let rising = [pt(1.0, 100.0, 900.0), pt(9.0, 300.0, 310.0)];
        assert!(verdict(&rising).to_string().contains("rising"));
        assert!(matches!(verdict(&flat[..1]), Verdict::NotRun(_)));
    }

    #[test]
    fn paper_levels_are_table3s_product() {
        assert_eq!(paper_cycles(App::Minimal).unwrap().round(), 1229.0);
        assert_eq!(paper_cycles(App::Routing).unwrap().round(), 1860.0);
        assert_eq!(paper_cycles(App::Ipsec).unwrap().round(), 7822.0);
        assert!(paper_cycles(App::IpsecGcm).is_none());
    }

    /// The engine counts its empty polls: paced at a low rate almost every
    /// round is empty, flat out almost none is; and the thread's CPU time
    /// is read.
    #[test]
    fn a_paced_source_leaves_empty_polls() {
        let paced = workloads::workload_at(App::Minimal, Size::Bytes(64), 200, Some(20_000))
            .unwrap()
            .run()
            .unwrap();
        assert_eq!(paced.delivered, 200);
        let p = paced.summary.polls;
        assert!(p.rounds > 0 && p.empty * 2 > p.rounds, "{p:?}");
        let flat_out = workloads::workload(App::Minimal, Size::Bytes(64), 20_000)
            .unwrap()
            .run()
            .unwrap();
        let f = flat_out.summary.polls;
        assert!(f.empty * 10 < f.rounds, "{f:?}");
        if std::path::Path::new("/proc/thread-self/schedstat").exists() {
            let l = Load::of(&paced).unwrap();
            assert!(
                l.cpu_secs > 0.0 && l.cpu_secs <= l.secs * 1.05 + 0.01,
                "{l:?}"
            );
        }
    }
}
