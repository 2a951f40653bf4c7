//! The NIC paper's Figs. 4 and 5 as far as veths and two cores allow:
//! one port with Q queues against two ports with Q/2 queues each, on Q
//! cores, a worker (core) per queue.
//!
//! The paper (§4.2) keeps cores, controller and PCIe slot fixed and moves
//! only the queues between ports, for Q = 2 to 8: if a queue cost nothing,
//! one port with Q queues would forward as much as two ports with Q/2. It
//! found two ports ahead (6.3 Mpps at Q = 2, 23.2 at Q = 8, almost
//! linear), one port about 10 % behind at Q = 2 and 4 and held at 11.7
//! Mpps from Q = 4 on, and put the loss between the NIC controller and
//! the port.
//!
//! This machine has two cores, so bricks measures Q = 2: one port with two
//! queues and two workers (`bricks run --threads 2`, per-core mode) against
//! two ports with one queue each and a worker per port (a `bricks run
//! --threads 1` per port, see [`Testbed::run`]), and, for scale, one port
//! with one queue and one worker. Each side has its own test network,
//! built side by side; the runs go round the three, so a change in the
//! machine's load touches them all, and Fig. 5's ratio is taken within
//! each round. Both Q = 2 sides send with two generator workers in all
//! (two on the one port, one on each of the two). Q = 4, 6 and 8 need as
//! many cores.

use super::*;
use crate::report::{Row, Verdict};

/// One side of the comparison.
#[derive(Debug, Clone, Copy)]
struct Setup {
    label: &'static str,
    /// Namespace tag, unique among the setups built side by side.
    tag: &'static str,
    ports: u32,
    /// Queues per port.
    queues: u32,
}

impl Setup {
    /// Cores, and queues in all (the paper's Q).
    fn q(&self) -> u32 {
        self.ports * self.queues
    }

    /// bricks with a worker per queue: one process with Q workers on one
    /// port, or a one-worker process per port.
    fn subject(&self) -> Subject {
        Subject {
            name: "bricks-queues",
            label: "bricks, a worker per queue",
            fwd: Forwarder::Bricks(Bricks {
                threads: (self.q() / self.ports) as usize,
                ..BRICKS
            }),
            wide: self.q() > 1,
            rate: None,
        }
    }
}

const ONE_QUEUE: Setup = Setup {
    label: "Q = 1: one port, 1 queue, 1 worker",
    tag: "nicq1",
    ports: 1,
    queues: 1,
};
const ONE_PORT: Setup = Setup {
    label: "Q = 2: one port, 2 queues, 2 workers",
    tag: "nicq2",
    ports: 1,
    queues: 2,
};
const TWO_PORTS: Setup = Setup {
    label: "Q = 2: two ports, 1 queue and 1 worker each",
    tag: "nicp2",
    ports: 2,
    queues: 1,
};

/// One setup's runs, in Mpps; run `i` of every setup was in round `i`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rates {
    /// What the sinks received per second.
    pub received: Vec<f64>,
    /// What the generators sent per second.
    pub offered: Vec<f64>,
}

impl Rates {
    fn median_received(&self) -> f64 {
        median(&mut self.received.clone())
    }

    fn median_offered(&self) -> f64 {
        median(&mut self.offered.clone())
    }

    /// `0.501 Mpps (0.490-0.510 over 3 runs, 0.940 offered)`.
    fn describe(&self) -> String {
        format!(
            "{} Mpps ({}, {:.3} offered)",
            med(&self.received, 3),
            over(&self.received, 3),
            self.median_offered()
        )
    }
}

/// The median of `v` with `digits` decimals.
fn med(v: &[f64], digits: usize) -> String {
    format!("{:.digits$}", median(&mut v.to_vec()))
}

/// `0.490-0.510 over 3 runs`, or `1 run`.
fn over(v: &[f64], digits: usize) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    match v.len() {
        0 => "no run".into(),
        1 => "1 run".into(),
        n => format!("{min:.digits$}-{max:.digits$} over {n} runs"),
    }
}

/// One port's rate over two ports', round by round (`None` where a
/// round has no two-port rate).
pub fn round_ratios(one_port: &Rates, two_ports: &Rates) -> Vec<f64> {
    one_port
        .received
        .iter()
        .zip(&two_ports.received)
        .filter(|(_, &t)| t > 0.0)
        .map(|(o, t)| o / t)
        .collect()
}

/// Measures the three setups (only Q = 1 on one core), `runs` rounds of
/// `secs` each, and returns Figs. 4 and 5's rows.
pub fn paper_rows(
    quick: bool,
    runs: usize,
    stop_on_signals: StopOnSignals,
) -> Result<Vec<Row>, Error> {
    let err = |e: Error| Error::Run {
        workload: "nic queues".into(),
        message: format!("{e:#}"),
    };
    if !bricks_netns::is_root() {
        return Err(err(Error::CannotRun(
            "needs root: it builds network namespaces joined by veth links".into(),
        )));
    }
    let cancel = stop_on_signals().map_err(|e| err(e.into()))?;
    let machine = Machine::probe();
    let secs = if quick { 1.0 } else { 5.0 };
    let setups: &[Setup] = if machine.cpus.len() >= 2 {
        &[ONE_QUEUE, ONE_PORT, TWO_PORTS]
    } else {
        &[ONE_QUEUE]
    };
    let beds = setups
        .iter()
        .map(|s| {
            Testbed::build_with(
                machine.clone(),
                256,
                cancel.clone(),
                s.tag,
                s.queues,
                s.ports,
            )
            .with_context(|| format!("building the test network of {}", s.label))
        })
        .collect::<Result<Vec<Testbed>, Error>>()
        .map_err(err)?;
    let mut rates = vec![Rates::default(); setups.len()];
    for round in 0..runs.max(1) {
        for ((setup, bed), r) in setups.iter().zip(&beds).zip(rates.iter_mut()) {
            let run = bed
                .run(&setup.subject(), secs, None)
                .with_context(|| format!("{}, round {}", setup.label, round + 1))
                .map_err(err)?;
            println!(
                "round {}: {}: sent {:.3} Mpps, received {:.3} Mpps (load {:.2})",
                round + 1,
                setup.label,
                run.offered_mpps(),
                run.sink.mpps,
                run.load
            );
            r.received.push(run.sink.mpps);
            r.offered.push(run.offered_mpps());
        }
    }
    let mut rates = rates.into_iter();
    Ok(rows(
        rates.next().unwrap_or_default(),
        rates.next(),
        rates.next(),
    ))
}

/// Figs. 4 and 5's rows from the rates of one port with one queue, and,
/// with two cores, one port with two queues and two ports with one.
pub fn rows(q1: Rates, one_port: Option<Rates>, two_ports: Option<Rates>) -> Vec<Row> {
    let mut measured = format!("{}: {}", ONE_QUEUE.label, q1.describe());
    let (fig4, fig5, ratio);
    match (&one_port, &two_ports) {
        (Some(one), Some(two)) => {
            let _ = write!(
                measured,
                "; {}: {}; {}: {}",
                ONE_PORT.label,
                one.describe(),
                TWO_PORTS.label,
                two.describe()
            );
            let r = round_ratios(one, two);
            let ratio_median = median(&mut r.clone());
            fig4 = fig4_verdict(
                ratio_median,
                one.median_received().max(two.median_received()),
                q1.median_received(),
            );
            fig5 = fig5_verdict(ratio_median, one.median_offered(), two.median_offered());
            ratio = format!("{} ({})", med(&r, 2), over(&r, 2));
        }
        _ => {
            fig4 = Verdict::NotRun("one core: Q = 1 only".into());
            fig5 = Verdict::NotRun("needs two cores".into());
            ratio = "-".into();
        }
    }
    measured.push_str("; Q = 4, 6, 8 not run: two cores");
    vec![
        Row {
            experiment: "Fig. 4: aggregate rate, one port with Q queues against two ports with Q/2"
                .into(),
            measure: "64-byte rate at Q = 2 on 2 cores, a worker per queue (medians, spread over \
                      the runs, and the generators' rate)"
                .into(),
            paper: "Q = 2: two ports 6.3 Mpps, one port about 10 % less; two ports scale almost \
                    linearly to 23.2 Mpps at Q = 8, one port peaks at 11.7 Mpps at Q = 4: fewer \
                    queues per port forward more"
                .into(),
            bricks: measured,
            verdict: fig4,
        },
        Row {
            experiment: "Fig. 5: one port's rate over two ports', by queues per port".into(),
            measure: "one port with 2 queues over two ports with 1 queue each, within each round \
                      (same cores, queues and generator workers)"
                .into(),
            paper: "about 0.9 at Q = 2 and 4 (roughly 10 % lost to more queues per port); lower \
                    at Q = 6 and 8, where one port is held at 11.7 Mpps"
                .into(),
            bricks: ratio,
            verdict: fig5,
        },
    ]
}

/// Fig. 4's verdict on `r`, one port's rate over two ports' (the median
/// of the rounds' ratios, as Fig. 5's): the paper's shape is two ports
/// ahead of one at the same Q. A difference under 5 % is within a quick
/// run's noise here. `q2` is the better Q = 2 side's median rate, `q1`
/// one queue's.
pub fn fig4_verdict(r: f64, q2: f64, q1: f64) -> Verdict {
    if !(r.is_finite() && r > 0.0) {
        return Verdict::Differs(format!(
            "no ratio of one port's rate to two ports' ({r:.2})"
        ));
    }
    let scale = if q2 > q1 * 1.05 {
        String::new()
    } else {
        format!(
            "; neither beats one queue on one core ({q1:.3} Mpps): generators, sinks and \
             routers share the two CPUs"
        )
    };
    if r <= 0.95 {
        Verdict::Holds(format!(
            "two ports with a queue each forward {:.0} % more than one port with two queues: \
             the paper's shape (the size of the gap is Fig. 5's){scale}",
            (1.0 / r - 1.0) * 100.0
        ))
    } else if r < 1.05 {
        Verdict::Differs(format!(
            "one port with two queues and two ports with one are within 5 % ({r:.2}): a veth \
             queue is a software ring with a NAPI thread of its own and no port to share, \
             while the paper lost its 10 % between the NIC controller and the port{scale}"
        ))
    } else {
        Verdict::Differs(format!(
            "one port with two queues forwards {:.0} % more than two ports with one, the \
             reverse of the paper: here the two-port side runs two routers, two generators and \
             two sinks on the same two CPUs{scale}",
            (r - 1.0) * 100.0
        ))
    }
}

/// Fig. 5's verdict on one port's rate over two ports' (the median of the
/// rounds' ratios), the generators' offered rates beside.
pub fn fig5_verdict(ratio: f64, one_sent: f64, two_sent: f64) -> Verdict {
    let sent =
        format!("the generators offered {one_sent:.3} Mpps to one port, {two_sent:.3} to two");
    if !ratio.is_finite() {
        return Verdict::Differs(format!("no ratio: a side forwarded nothing; {sent}"));
    }
    if (0.85..=0.95).contains(&ratio) {
        Verdict::Holds(format!(
            "{ratio:.2}: about 10 % lost to a second queue on the port, as in the paper"
        ))
    } else if ratio > 0.95 {
        Verdict::Differs(format!(
            "{ratio:.2}: no loss from a second queue per port (veth queues are software rings; \
             the paper's loss was in the NIC, between controller and port); {sent}"
        ))
    } else {
        Verdict::Differs(format!(
            "{ratio:.2}: more than the paper's 10 % lost; {sent}, so a starved generator or \
             router on the shared CPUs may be the cause; rerun on a quieter machine"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates(received: &[f64], offered: f64) -> Rates {
        Rates {
            received: received.to_vec(),
            offered: vec![offered; received.len()],
        }
    }

    #[test]
    fn both_sides_and_their_ratio_make_the_rows() {
        let q1 = rates(&[0.50, 0.40, 0.60], 1.0);
        let one = rates(&[0.90, 0.80, 1.00], 1.2);
        let two = rates(&[1.00, 1.00, 1.00], 1.3);
        assert_eq!(round_ratios(&one, &two), [0.9, 0.8, 1.0]);
        let r = rows(q1, Some(one), Some(two));
        assert_eq!(r.len(), 2);
        assert!(r[0].experiment.starts_with("Fig. 4"));
        assert!(r[1].experiment.starts_with("Fig. 5"));
        assert_eq!(
            r[0].bricks,
            "Q = 1: one port, 1 queue, 1 worker: 0.500 Mpps (0.400-0.600 over 3 runs, 1.000 \
             offered); Q = 2: one port, 2 queues, 2 workers: 0.900 Mpps (0.800-1.000 over 3 \
             runs, 1.200 offered); Q = 2: two ports, 1 queue and 1 worker each: 1.000 Mpps \
             (1.000-1.000 over 3 runs, 1.300 offered); Q = 4, 6, 8 not run: two cores"
        );
        assert_eq!(r[1].bricks, "0.90 (0.80-1.00 over 3 runs)");
        // Two ports 11 % ahead: the paper's shape and about its ratio.
        assert!(r[0].verdict.holds(), "{}", r[0].verdict);
        assert!(r[1].verdict.holds(), "{}", r[1].verdict);
        for row in &r {
            assert!(!row.paper.is_empty() && !row.measure.is_empty());
        }
    }

    #[test]
    fn verdicts_say_why_they_differ() {
        let even = fig4_verdict(1.0, 1.0, 0.6);
        assert!(
            !even.holds() && even.to_string().contains("within 5 %"),
            "{even}"
        );
        let reverse = fig4_verdict(1.2, 1.2, 0.6);
        assert!(
            reverse.to_string().contains("reverse of the paper"),
            "{reverse}"
        );
        let flat = fig4_verdict(0.8, 1.0, 1.0);
        assert!(
            flat.holds() && flat.to_string().contains("neither beats"),
            "{flat}"
        );
        assert!(!fig4_verdict(0.0, 0.0, 1.0).holds());
        assert!(!fig4_verdict(f64::NAN, 0.0, 1.0).holds());
        let no_loss = fig5_verdict(1.0, 1.0, 1.0);
        assert!(
            !no_loss.holds() && no_loss.to_string().contains("no loss"),
            "{no_loss}"
        );
        let starved = fig5_verdict(0.5, 0.2, 1.0);
        assert!(starved.to_string().contains("0.200 Mpps"), "{starved}");
        assert!(!fig5_verdict(f64::NAN, 0.0, 0.0).holds());
    }

    #[test]
    fn one_core_measures_one_queue_only() {
        let r = rows(rates(&[0.5], 1.0), None, None);
        assert!(r[0].bricks.contains("0.500 Mpps (1 run, 1.000 offered)"));
        assert!(matches!(r[0].verdict, Verdict::NotRun(_)));
        assert!(matches!(r[1].verdict, Verdict::NotRun(_)));
        assert_eq!(r[1].bricks, "-");
    }

    #[test]
    fn the_setups_have_q_workers_on_q_queues() {
        for s in [ONE_QUEUE, ONE_PORT, TWO_PORTS] {
            let Forwarder::Bricks(b) = s.subject().fwd else {
                panic!("{} is not bricks", s.label)
            };
            assert_eq!(b.threads as u32 * s.ports, s.q(), "{}", s.label);
        }
        assert_eq!(ONE_PORT.q(), TWO_PORTS.q());
    }
}
