//! The NIC paper's Figs. 4 and 5 as far as veths allow: the forwarding
//! rate with Q queues per port and Q workers, one queue each.
//!
//! The paper compares one port with Q queues against two ports with Q/2
//! queues each, on Q cores, for Q = 2 to 8. Veths take any number of
//! queues, but this machine has two cores: bricks measures one port with
//! one queue and one worker against one port with two queues and two
//! workers (`bricks run --threads Q`, per-core mode), each on a test
//! network whose veths have Q queues (the generator then sends on Q
//! queues too). Q = 4, 6 and 8 need as many cores.

use super::*;
use crate::report::{Row, Verdict};

/// The rate per queue (and worker) with `q2` queues over that with one:
/// 1.0 is perfect scaling; `None` without both rates.
pub fn per_queue_ratio(q1_mpps: f64, q2_mpps: f64, q2: u32) -> Option<f64> {
    (q1_mpps > 0.0 && q2_mpps > 0.0 && q2 > 0).then(|| q2_mpps / q2 as f64 / q1_mpps)
}

/// Measures Q = 1 and, with two cores or more, Q = 2; `runs` runs of
/// `secs` each, the median kept.
pub fn paper_rows(
    quick: bool,
    runs: usize,
    stop_on_signals: StopOnSignals,
) -> Result<Vec<Row>, crate::Error> {
    let err = |e: anyhow::Error| crate::Error::Run {
        workload: "nic queues".into(),
        message: format!("{e:#}"),
    };
    if !bricks_netns::is_root() {
        return Err(err(anyhow::anyhow!(
            "needs root: it builds network namespaces joined by veth links"
        )));
    }
    let cancel = stop_on_signals().map_err(err)?;
    let machine = Machine::probe();
    let secs = if quick { 1.0 } else { 5.0 };
    let most = (machine.cpus.len() as u32).min(2);
    // (Q, received Mpps, offered Mpps), medians.
    let mut rates: Vec<(u32, f64, f64)> = Vec::new();
    for q in 1..=most {
        let bed =
            Testbed::build_with_queues(machine.clone(), 256, cancel.clone(), q).map_err(err)?;
        let subject = Subject {
            name: "bricks-queues",
            label: "bricks, a worker per queue",
            fwd: Forwarder::Bricks(Bricks {
                threads: q as usize,
                ..BRICKS
            }),
            wide: q > 1,
            rate: None,
        };
        let (mut v, mut sent) = (Vec::new(), Vec::new());
        for _ in 0..runs.max(1) {
            let r = bed.run(&subject, secs, None).map_err(err)?;
            println!(
                "Q = {q}: sent {:.3} Mpps, received {:.3} Mpps (load {:.2})",
                r.offered_mpps(),
                r.sink.mpps,
                r.load
            );
            v.push(r.sink.mpps);
            sent.push(r.offered_mpps());
        }
        rates.push((q, median(&mut v), median(&mut sent)));
    }
    let (q1, q1_sent) = rates.first().map(|r| (r.1, r.2)).unwrap_or_default();
    let q2_sent = rates.iter().find(|r| r.0 == 2).map_or(0.0, |r| r.2);
    let q2 = rates.iter().find(|r| r.0 == 2).map(|r| r.1);
    let mut rows = vec![Row {
        experiment: "Fig. 4: aggregate rate against queues per port".into(),
        measure: "64-byte rate, one port, Q queues and Q workers (per-core queues)".into(),
        paper:
            "two ports: 6.3 Mpps on 2 cores to 23.2 on 8; one port peaks at 11.7 Mpps with 4 queues"
                .into(),
        bricks: rates
            .iter()
            .map(|(q, m, o)| format!("Q = {q}: {m:.3} Mpps ({o:.3} offered)"))
            .collect::<Vec<_>>()
            .join("; ")
            + "; Q = 4, 6, 8 not run: two cores",
        verdict: match q2 {
            // A gain under 5 % is within a quick run's noise here.
            Some(q2) => Verdict::from_check(
                q2 > q1 * 1.05,
                if q2 > q1 * 1.05 {
                    "the rate grows with the queues (and cores), as in the paper"
                } else {
                    "no gain from a second queue and worker: generator, sink and router share the two CPUs"
                },
            ),
            None => Verdict::NotRun("one core: Q = 1 only".into()),
        },
    }];
    let ratio = q2.and_then(|q2| per_queue_ratio(q1, q2, 2));
    rows.push(Row {
        experiment: "Fig. 5: the rate per queue against queues per port".into(),
        measure: "rate per queue (and worker) with 2 queues over that with 1".into(),
        paper: "more queues per port cost about 10 % of the rate (0.9 or more)".into(),
        bricks: ratio.map_or("-".into(), |r| format!("{r:.2}")),
        verdict: fig5_verdict(ratio, q1_sent, q2_sent),
    });
    Ok(rows)
}

/// Fig. 5's verdict on the rate per queue with two queues over one
/// (`None`: not measured), the generator's offered rates beside.
pub fn fig5_verdict(ratio: Option<f64>, q1_sent: f64, q2_sent: f64) -> Verdict {
    match ratio {
        // More than linear means the one-queue run was held back (on
        // this shared machine, its generator starved), not that a
        // queue helps the other.
        Some(r) if r > 1.1 => Verdict::Differs(format!(
            "{r:.2}: more than linear, so the one-queue run was held back (its generator \
             offered {q1_sent:.3} Mpps against {q2_sent:.3}); rerun on a quieter machine"
        )),
        Some(r) => Verdict::from_check(
            r >= 0.9,
            if r >= 0.9 {
                "a second queue costs at most 10 % per queue, as in the paper".to_string()
            } else {
                format!(
                    "each queue keeps {:.0} % of one queue's rate: on two cores the router's \
                     second worker competes with the generator and the sink, which the \
                     paper's testers did not",
                    r * 100.0
                )
            },
        ),
        None => Verdict::NotRun("needs two cores".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_per_queue() {
        assert_eq!(per_queue_ratio(1.0, 2.0, 2), Some(1.0));
        assert_eq!(per_queue_ratio(1.0, 1.8, 2), Some(0.9));
        assert_eq!(per_queue_ratio(0.0, 1.8, 2), None);
        assert_eq!(per_queue_ratio(1.0, 0.0, 2), None);
        assert!(fig5_verdict(Some(0.95), 1.0, 1.0).holds());
        assert!(!fig5_verdict(Some(0.5), 1.0, 1.0).holds());
        // More than linear: the one-queue run was held back.
        let v = fig5_verdict(Some(4.9), 0.089, 0.940);
        assert!(!v.holds() && v.to_string().contains("held back"), "{v}");
        assert!(matches!(fig5_verdict(None, 0.0, 0.0), Verdict::NotRun(_)));
    }
}
