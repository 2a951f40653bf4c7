//! Fig. 11 (§2.4): two equal-rate inputs, each on its own worker, feed one
//! output drained at a fixed rate below their sum.
//!
//! With one queue shared by both workers (a `ThreadSafeQueue`) drained by
//! a `RatedUnqueue` on worker 1, the paper found the shares "increasingly
//! unfair" after saturation: worker 1 must also dequeue, so worker 0 (which
//! "is able to push its packets into the queue uninterruptibly") wins. Its
//! remedy: a queue per input and a fair multiplexer in front of the output
//! (here `RoundRobinSched`), which should share the output equally.
//!
//! Each input's packets are painted (1 and 2) and counted by colour after
//! the output. The offered rate per input is swept from a quarter of the
//! output rate to far beyond what a worker can generate, where each
//! worker's CPU, not its source's rate, is the limit.

use super::{missing_elements, not_run, Experiment, Settings};
use crate::frames::{click_data, udp_frame};
use crate::measure::{Sample, Window, Workload};
use crate::plot::{Chart, Series};
use crate::report::{within, Row, Table, Verdict};
use crate::Error;
use bricks_wire::Ipv4Addr;
use std::time::Duration;

/// The output rate, packets per second.
pub const OUTPUT_PPS: u64 = 1_000_000;
/// Queue capacity: enough to ride out the workers' threads being
/// descheduled for a few milliseconds on a shared machine (16 ms of the
/// output's rate), which would otherwise drop packets below saturation.
pub const QUEUE: usize = 16384;
/// Equal within this fraction of an even split.
pub const TOLERANCE: f64 = 0.05;

/// How the inputs reach the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One ThreadSafeQueue both workers push into.
    SharedQueue,
    /// A queue per input, RoundRobinSched in front of the output.
    QueuePerInput,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::SharedQueue => "one shared queue",
            Layout::QueuePerInput => "a queue per input + RoundRobinSched",
        }
    }
}

fn frame(i: u8) -> String {
    click_data(&udp_frame(
        [0x02, 0, 0, 0, 0, 0x01],
        [0x02, 0, 0, 0, 0xff, i],
        Ipv4Addr::new(10, 0, 0, i),
        Ipv4Addr::new(1, 0, 0, 2),
        64,
    ))
}

/// Both inputs offering `rate` packets per second each; input 0 on
/// worker 0, input 1 and the output on worker 1.
pub fn workload(layout: Layout, rate: u64) -> Workload {
    let mut t = format!(
        "in0 :: RatedSource(DATA {}, RATE {rate}) -> Paint(1) -> q0 :: ThreadSafeQueue({QUEUE});\n\
         in1 :: RatedSource(DATA {}, RATE {rate}) -> Paint(2) -> q1 :: ThreadSafeQueue({QUEUE});\n",
        frame(1),
        frame(2)
    );
    let output = format!(
        "out :: RatedUnqueue({OUTPUT_PPS}) -> cp :: CheckPaint(1) -> from0 :: Counter -> Discard;\n\
         cp[1] -> from1 :: Counter -> Discard;\n\
         StaticThreadSched(in0 0, in1 1, out 1);\n"
    );
    match layout {
        // Both inputs push into q0.
        Layout::SharedQueue => {
            t = t.replace(&format!("-> q1 :: ThreadSafeQueue({QUEUE});"), "-> q0;") + "q0 -> out;\n"
        }
        Layout::QueuePerInput => {
            t.push_str("q0 -> [0]rr :: RoundRobinSched; q1 -> [1]rr; rr -> out;\n")
        }
    }
    Workload::new(
        format!("{}-{rate}", layout.name()),
        t + &output,
        &["from0", "from1"],
    )
}

/// Input 0's share of the output.
pub fn share0(from0: f64, from1: f64) -> f64 {
    from0 / (from0 + from1).max(1e-12)
}

struct Point {
    offered: f64,
    from0: Sample,
    from1: Sample,
}

/// Runs Fig. 11.
pub fn run(s: &Settings) -> Result<Vec<Row>, Error> {
    let exp = Experiment::SharedQueue;
    if let Some(why) = missing_elements(&[
        "ThreadSafeQueue",
        "StaticThreadSched",
        "RatedUnqueue",
        "RatedSource",
    ]) {
        return Ok(vec![
            not_run(
                exp,
                "one shared queue: input 0's share",
                "unfair",
                why.clone(),
            ),
            not_run(exp, "a queue per input: input 0's share", "equal", why),
        ]);
    }
    let factors: Vec<f64> = s.pick(
        vec![0.25, 0.5, 0.75, 1.0, 2.0, 4.0, 16.0, 64.0],
        vec![0.25, 1.0, 4.0, 64.0],
    );
    let (warmup, window) = s.pick(
        (Duration::from_millis(300), Duration::from_millis(700)),
        (Duration::from_millis(150), Duration::from_millis(250)),
    );
    println!(
        "Fig. 11: two inputs (RatedSource, one per worker) -> one output drained at {:.1} Mpps \
         by RatedUnqueue on worker 1\n",
        OUTPUT_PPS as f64 / 1e6
    );
    let mut rows = Vec::new();
    let mut charts = Vec::new();
    for layout in [Layout::SharedQueue, Layout::QueuePerInput] {
        let mut t = Table::new(&[
            "offered per input (Mpps)",
            "input 0 fwd",
            "input 1 fwd",
            "input 0 share",
        ]);
        let mut points = Vec::new();
        for &f in &factors {
            let rate = (f * OUTPUT_PPS as f64) as u64;
            let wl = workload(layout, rate);
            let mut ws: Vec<Window> = Vec::new();
            for _ in 0..s.runs {
                ws.push(wl.run_window(2, warmup, window)?);
            }
            let p = Point {
                offered: rate as f64 / 1e6,
                from0: Sample(ws.iter().map(|w| w.mpps("from0", "count")).collect()),
                from1: Sample(ws.iter().map(|w| w.mpps("from1", "count")).collect()),
            };
            t.push(vec![
                format!("{:.2}", p.offered),
                p.from0.show(3),
                p.from1.show(3),
                format!("{:.3}", share0(p.from0.median(), p.from1.median())),
            ]);
            points.push(p);
        }
        println!("{}\n", layout.name());
        print!("{}", t.render());
        println!();
        // After saturation: each input offers at least the output rate.
        let after: Vec<&Point> = points
            .iter()
            .filter(|p| p.offered >= OUTPUT_PPS as f64 / 1e6)
            .collect();
        let (a, b) = after.iter().fold((0.0, 0.0), |(a, b), p| {
            (a + p.from0.median(), b + p.from1.median())
        });
        let sh = share0(a, b);
        let fair = within(sh, 0.5, TOLERANCE);
        let top = points
            .last()
            .map_or(0.0, |p| share0(p.from0.median(), p.from1.median()));
        rows.push(match layout {
            Layout::SharedQueue => Row {
                experiment: exp.figure().into(),
                measure: "one shared queue: input 0's share of the output after saturation".into(),
                paper: "unfair: input 0 (its worker does not drain) wins".into(),
                bricks: format!("{sh:.3} (at the highest load {top:.3})"),
                verdict: Verdict::from_check(
                    sh > 0.5 * (1.0 + TOLERANCE),
                    if fair {
                        "the shares stay within 5 % of equal: worker 1's draining costs it \
                         too little (a batch per task run) to lose the race for the queue"
                            .to_string()
                    } else if sh > 0.5 {
                        format!("input 0 gets {:.0} % of the output", sh * 100.0)
                    } else {
                        format!(
                            "input 1 wins ({:.0} %): the worker that drains frees slots and \
                             fills them itself in its next task run",
                            (1.0 - sh) * 100.0
                        )
                    },
                ),
            },
            Layout::QueuePerInput => Row {
                experiment: exp.figure().into(),
                measure: "a queue per input + RoundRobinSched: input 0's share".into(),
                paper: "equal (the paper's remedy)".into(),
                bricks: format!("{sh:.3} (at the highest load {top:.3})"),
                verdict: Verdict::from_check(
                    fair,
                    format!(
                        "{:.1} % from an even split (within 5 % needed)",
                        (sh / 0.5 - 1.0).abs() * 100.0
                    ),
                ),
            },
        });
        charts.push((layout, points));
    }
    let mut series = Vec::new();
    for (layout, points) in &charts {
        let short = match layout {
            Layout::SharedQueue => "shared queue",
            Layout::QueuePerInput => "queue per input",
        };
        series.push(Series::measured(
            format!("input 0, {short}"),
            points
                .iter()
                .map(|p| (p.offered, p.from0.median()))
                .collect(),
        ));
        series.push(Series::measured(
            format!("input 1, {short}"),
            points
                .iter()
                .map(|p| (p.offered, p.from1.median()))
                .collect(),
        ));
    }
    let xs: Vec<f64> = charts[0].1.iter().map(|p| p.offered).collect();
    let half = OUTPUT_PPS as f64 / 2e6;
    series.push(Series::reference(
        "fair share (each input)",
        xs.iter().map(|&x| (x, x.min(half))).collect(),
    ));
    Chart {
        title: "Fig. 11: two inputs on two workers sharing one output".into(),
        x_label: "offered per input (Mpps)".into(),
        y_label: "forwarded per input (Mpps)".into(),
        log_x: true,
        series,
    }
    .write_svg(&s.out.join("fig11-shared-queue.svg"))?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares() {
        assert_eq!(share0(3.0, 1.0), 0.75);
        assert_eq!(share0(0.0, 0.0), 0.0);
        assert!(within(share0(0.51, 0.49), 0.5, TOLERANCE));
        assert!(!within(share0(0.6, 0.4), 0.5, TOLERANCE));
    }

    #[test]
    fn workloads_build() {
        for l in [Layout::SharedQueue, Layout::QueuePerInput] {
            let w = workload(l, 1000);
            w.plan().unwrap();
            assert!(w.text.contains("StaticThreadSched(in0 0, in1 1, out 1)"));
            assert_eq!(w.text.contains("q1 ::"), l == Layout::QueuePerInput);
        }
    }
}
