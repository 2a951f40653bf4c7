//! Fig. 8 (§2.3): two IP forwarding paths, two workers, and where each
//! path's receive and transmit tasks run.
//!
//! Each path is a source (the receive side: `InfiniteSource`, then
//! `Strip -> CheckIPHeader -> StaticIPLookup -> DecIPTTL -> EtherEncap`)
//! into a queue drained by a pulling sink (the transmit side). The
//! mappings, with `StaticThreadSched`:
//!
//! - (a) everything on worker 0;
//! - (b) both receive sides on worker 0, both transmit sides on worker 1,
//!   through `ThreadSafeQueue`s (packets change cores);
//! - (d) one worker per path.
//!
//! (c), two cores sharing an L2 cache, needs a choice of cores this
//! machine does not offer. The paper: (a) about 1.6 Mpps, (b) lower than
//! (a) ("packets switch CPUs"), (d) the best, near the 3 Mpps limit.

use super::{missing_elements, not_run, Experiment, Settings};
use crate::frames::{click_data, udp_frame};
use crate::measure::{Sample, Workload};
use crate::plot::{Chart, Series};
use crate::report::{Row, Table, Verdict};
use crate::Error;
use bricks_wire::Ipv4Addr;
use std::time::Duration;

/// Fig. 8(e): mapping (a), one core, "about 1.6Mpps".
pub const PAPER_A_MPPS: f64 = 1.6;
/// Fig. 8(e): the two cores' "theoretical limit (nearly 3Mpps for 64 byte
/// packets)"; (d) is the best mapping, (b) below (a).
pub const PAPER_LIMIT_MPPS: f64 = 3.0;

/// Where the tasks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapping {
    /// (a) both paths on worker 0.
    OneWorker,
    /// (b) receive on worker 0, transmit on worker 1.
    SplitRxTx,
    /// (d) path i on worker i.
    WorkerPerPath,
}

impl Mapping {
    /// All three, in the paper's order.
    pub const ALL: [Mapping; 3] = [
        Mapping::OneWorker,
        Mapping::SplitRxTx,
        Mapping::WorkerPerPath,
    ];

    fn label(self) -> &'static str {
        match self {
            Mapping::OneWorker => "(a) both paths on one worker",
            Mapping::SplitRxTx => "(b) receive on worker 0, transmit on worker 1",
            Mapping::WorkerPerPath => "(d) one worker per path",
        }
    }

    fn letter(self) -> &'static str {
        &self.label()[..3]
    }
}

fn frame(i: u8) -> String {
    click_data(&udp_frame(
        [0x02, 0, 0, 0, 0, 0x01],
        [0x02, 0, 0, 0, 0xff, i],
        Ipv4Addr::new(10, 0, i, 1),
        Ipv4Addr::new(1, 0, 0, 2),
        64,
    ))
}

/// The two paths, `packets` packets each, under mapping `m`.
pub fn workload(m: Mapping, packets: u64) -> Workload {
    let queue = match m {
        Mapping::SplitRxTx => "ThreadSafeQueue(8192)",
        _ => "Queue(8192)",
    };
    let mut t = String::new();
    for i in 0..2u8 {
        t.push_str(&format!(
            "rx{i} :: InfiniteSource(DATA {}, LIMIT {packets}, BURST 32) -> Strip(14) \
             -> CheckIPHeader -> StaticIPLookup(10.{i}.0.0/16 0, 1.0.0.0/8 10.{i}.0.1 0) \
             -> DecIPTTL -> EtherEncap(0x0800, 02:00:00:00:0{i}:01, 02:00:00:00:0{i}:02) \
             -> {queue} -> tx{i} :: Discard;\n",
            frame(i)
        ));
    }
    let place = match m {
        Mapping::OneWorker => "rx0 0, rx1 0, tx0 0, tx1 0",
        Mapping::SplitRxTx => "rx0 0, rx1 0, tx0 1, tx1 1",
        Mapping::WorkerPerPath => "rx0 0, tx0 0, rx1 1, tx1 1",
    };
    t.push_str(&format!("StaticThreadSched({place});\n"));
    Workload::new(format!("mapping-{}", m.letter()), t, &["tx0", "tx1"])
}

/// Runs Fig. 8.
pub fn run(s: &Settings) -> Result<Vec<Row>, Error> {
    let exp = Experiment::Mapping;
    let measure = "aggregate rate of two IP paths on two workers";
    let paper = "(d) one worker per path best; (b) below (a)";
    if let Some(why) = missing_elements(&["ThreadSafeQueue", "StaticThreadSched"]) {
        return Ok(vec![not_run(exp, measure, paper, why)]);
    }
    let packets = s.pick(4_000_000u64, 200_000);
    let limit = Duration::from_secs(120);
    let mut t = Table::new(&[
        "mapping",
        "Mpps",
        "ns/packet (aggregate)",
        "drops",
        "paper (Mpps)",
    ]);
    let mut results = Vec::new();
    for m in Mapping::ALL {
        workload(m, packets.min(20_000)).run_workers(2, limit)?;
        let mut mpps = Vec::new();
        let mut drops = 0;
        for _ in 0..s.runs {
            let r = workload(m, packets).run_workers(2, limit)?;
            drops += 2 * packets - r.delivered;
            mpps.push(r.mpps());
        }
        let mpps = Sample(mpps);
        let paper = match m {
            Mapping::OneWorker => format!("about {PAPER_A_MPPS}"),
            Mapping::SplitRxTx => "below (a)".to_string(),
            Mapping::WorkerPerPath => format!("best; limit ~{PAPER_LIMIT_MPPS}"),
        };
        t.push(vec![
            m.label().into(),
            mpps.show(2),
            format!("{:.1}", 1e3 / mpps.median()),
            drops.to_string(),
            paper,
        ]);
        results.push((m, mpps));
    }
    println!(
        "Fig. 8: two paths source -> Strip -> CheckIPHeader -> StaticIPLookup -> DecIPTTL -> \
         EtherEncap -> queue -> sink, {packets} packets each, two workers\n"
    );
    print!("{}", t.render());

    let x = |i: usize| (i + 1) as f64;
    Chart {
        title: "Fig. 8: two forwarding paths on two workers".into(),
        x_label: "mapping: 1 = (a) one worker, 2 = (b) rx/tx split, 3 = (d) worker per path".into(),
        y_label: "aggregate rate relative to (a)".into(),
        log_x: false,
        series: vec![
            Series::measured(
                "bricks (in memory)",
                results
                    .iter()
                    .enumerate()
                    .map(|(i, (_, m))| (x(i), m.median() / results[0].1.median()))
                    .collect(),
            ),
            Series::reference(
                format!(
                    "paper: limit of two cores, ~{PAPER_LIMIT_MPPS} Mpps = {:.2}x (a)",
                    PAPER_LIMIT_MPPS / PAPER_A_MPPS
                ),
                vec![
                    (1.0, PAPER_LIMIT_MPPS / PAPER_A_MPPS),
                    (3.0, PAPER_LIMIT_MPPS / PAPER_A_MPPS),
                ],
            ),
        ],
    }
    .write_svg(&s.out.join("fig8-mapping.svg"))?;

    let rate = |m: Mapping| {
        results
            .iter()
            .find(|(rm, _)| *rm == m)
            .map_or(0.0, |(_, s)| s.median())
    };
    let (a, b, d) = (
        rate(Mapping::OneWorker),
        rate(Mapping::SplitRxTx),
        rate(Mapping::WorkerPerPath),
    );
    let best = d > a && d > b;
    Ok(vec![Row {
        experiment: exp.figure().into(),
        measure: measure.into(),
        paper: paper.into(),
        bricks: format!(
            "(a) {a:.2}, (b) {b:.2}, (d) {d:.2} Mpps; (d)/(a) {:.2}",
            d / a
        ),
        verdict: Verdict::from_check(
            best && b < a,
            match (best, b < a) {
                (true, true) => {
                    "(d) is best and (b), where packets change cores, is below (a)".to_string()
                }
                (true, false) => format!(
                    "(d) is best, but (b) is {:.2}x (a): splitting the receive and transmit \
                         tasks over two workers pays more than packets changing cores cost",
                    b / a
                ),
                (false, _) => format!("(d) is not best: {:.2}x (a), {:.2}x (b)", d / a, d / b),
            },
        ),
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mapping_delivers_both_paths() {
        for m in Mapping::ALL {
            let r = workload(m, 3000)
                .run_workers(2, Duration::from_secs(60))
                .unwrap();
            assert_eq!(r.delivered, 6000, "{m:?}");
            assert_eq!(r.counter("tx0", "count"), 3000);
        }
    }
}
