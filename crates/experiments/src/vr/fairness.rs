//! Figs. 17 and 18 (§3.2): two virtual routers weighted 2:1 sharing one
//! worker, 60 % of the offered load for the low-weight router and 40 % for
//! the high-weight one, swept past saturation.
//!
//! Offered load comes from one timed wire on worker 0 (frames for the two
//! routers interleaved 2:3, sent by a `RatedUnqueue`); the routers run on
//! worker 1, their per-packet work made real with `WorkPackage` (about
//! 1 us a packet), so that worker 1 saturates.
//!
//! - Fig. 17, software demultiplexing: both sources feed one receive queue,
//!   one task polls it and a `VRDemux` (by MAC) hands each frame to its
//!   router. Packets are dropped at the receive queue in the order they
//!   arrive, whatever the weights: the shares follow the arrivals (40:60).
//! - Fig. 18, per-router receive queues (hardware demultiplexing, VMDq):
//!   a `VRDemux` on the wire's worker (the NIC) fills each router's own
//!   queue, polled by the router's own
//!   task; `ScheduleInfo` gives the high-weight task twice the tickets. The
//!   high-weight router keeps all its traffic until it needs more than its
//!   2/3 share; after saturation the shares are 2:1.
//!
//! The ideal curves (the paper's left panels) are weighted max-min fair
//! shares of the saturation rate (computed by [`ideal`]); they are drawn
//! beside the measured ones.

use super::{missing_elements, not_run, Experiment, Settings};
use crate::frames::{click_data, mac_text, udp_frame};
use crate::measure::{Sample, Window, Workload};
use crate::plot::{Chart, Series};
use crate::report::{within, Row, Table, Verdict};
use crate::Error;
use bricks_wire::Ipv4Addr;
use std::time::Duration;

/// The high-weight router's weight.
pub const HI_WEIGHT: f64 = 2.0;
/// The low-weight router's weight.
pub const LO_WEIGHT: f64 = 1.0;
/// The high-weight router's part of the offered load.
pub const HI_LOAD: f64 = 0.4;
/// The low-weight router's part of the offered load.
pub const LO_LOAD: f64 = 0.6;
/// Receive queue capacity: a few milliseconds of the routers' rate, so
/// that the timed sources' catch-up bursts after a thread was descheduled
/// do not overflow it below saturation.
pub const QUEUE: usize = 16384;
/// How close the measured ratio must come to the expected one.
pub const TOLERANCE: f64 = 0.05;
/// What the routers do per packet: about 1 us on the development machine
/// (WorkPackage's manual), so that one worker saturates near 1 Mpps, as in
/// the paper.
pub const WORK: &str = "WorkPackage(S 1, N 0, R 0, PAYLOAD false, W 700)";

/// Weighted max-min fair shares of `capacity` between `demands` with
/// `weights` (water filling): no one gets more than it asks, and what is
/// left is shared in proportion to the weights of those who want more.
pub fn weighted_max_min(capacity: f64, demands: &[f64], weights: &[f64]) -> Vec<f64> {
    let n = demands.len().min(weights.len());
    let mut share = vec![0.0; n];
    let mut open: Vec<usize> = (0..n).filter(|&i| demands[i] > 0.0).collect();
    let mut left = capacity.max(0.0);
    while !open.is_empty() {
        let w: f64 = open.iter().map(|&i| weights[i].max(0.0)).sum();
        if w <= 0.0 {
            break;
        }
        let per_weight = left / w;
        let (done, rest): (Vec<usize>, Vec<usize>) = open
            .iter()
            .partition(|&&i| demands[i] <= per_weight * weights[i].max(0.0));
        if done.is_empty() {
            for &i in &rest {
                share[i] = per_weight * weights[i].max(0.0);
            }
            break;
        }
        for &i in &done {
            share[i] = demands[i];
            left -= demands[i];
        }
        open = rest;
    }
    share
}

/// Shares of `capacity` when drops fall on arrivals alike: each demand
/// scaled down by the same factor once their sum exceeds the capacity.
pub fn arrival_shares(capacity: f64, demands: &[f64]) -> Vec<f64> {
    let total: f64 = demands.iter().sum();
    let f = if total > capacity && total > 0.0 {
        capacity / total
    } else {
        1.0
    };
    demands.iter().map(|d| d * f).collect()
}

/// The paper's ideal (left panels): (high, low) forwarded at offered load
/// `load` on a router that saturates at `capacity`.
pub fn ideal(capacity: f64, load: f64) -> (f64, f64) {
    let s = weighted_max_min(
        capacity,
        &[HI_LOAD * load, LO_LOAD * load],
        &[HI_WEIGHT, LO_WEIGHT],
    );
    (s[0], s[1])
}

/// The offered load from which both routers want more than their
/// weighted share, so that the 2:1 split shows: the high-weight router's
/// demand reaches its share of `capacity`.
pub fn both_saturated_from(capacity: f64) -> f64 {
    capacity * HI_WEIGHT / (HI_WEIGHT + LO_WEIGHT) / HI_LOAD
}

/// How the routers share worker 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demux {
    /// Fig. 17: one receive queue, one polling task, VRDemux.
    Software,
    /// Fig. 18: a receive queue and a ticketed polling task per router.
    PerRouterQueues,
}

const HI_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const LO_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

fn frame(mac: [u8; 6]) -> String {
    click_data(&udp_frame(
        mac,
        [0x02, 0, 0, 0, 0xff, 0x01],
        Ipv4Addr::new(10, 0, 0, 1),
        Ipv4Addr::new(10, 1, 0, 1),
        64,
    ))
}

/// The wire: frames for the two routers interleaved 2:3 (high, low, high,
/// low, low), as one link carries them, at `load` packets per second. A
/// token bucket of 2 ms keeps the catch-up after a descheduled thread
/// short.
fn wire(load: f64) -> String {
    let rate = (load as u64).max(1);
    format!(
        "h0 :: InfiniteSource(DATA {hi}); h1 :: InfiniteSource(DATA {hi});\n\
         l0 :: InfiniteSource(DATA {lo}); l1 :: InfiniteSource(DATA {lo}); \
         l2 :: InfiniteSource(DATA {lo});\n\
         h0 -> [0]mix :: RoundRobinSched; l0 -> [1]mix; h1 -> [2]mix; l1 -> [3]mix; l2 -> [4]mix;\n\
         mix -> wire :: RatedUnqueue(RATE {rate}, BURST 32, BURST_DURATION 2ms);\n",
        hi = frame(HI_MAC),
        lo = frame(LO_MAC)
    )
}

/// The two routers at offered load `load` packets per second (40 % for
/// the high-weight router): the wire and the NIC on worker 0, the routers
/// on worker 1.
pub fn workload(demux: Demux, load: f64) -> Workload {
    let routers = format!(
        "hi_in :: {WORK} -> hi :: Counter -> Discard;\n\
         lo_in :: {WORK} -> lo :: Counter -> Discard;\n"
    );
    let tags = format!("{} 0, {} 1", mac_text(HI_MAC), mac_text(LO_MAC));
    let wiring = match demux {
        Demux::Software => format!(
            "wire -> rxq :: ThreadSafeQueue({QUEUE})\n\
             -> poll :: Unqueue(BURST 32) -> demux :: VRDemux(BY mac, {tags});\n\
             demux[0] -> hi_in; demux[1] -> lo_in;\n\
             StaticThreadSched(wire 0, poll 1);\n"
        ),
        // The NIC's classifier (VMDq) runs on the wire's worker.
        Demux::PerRouterQueues => format!(
            "wire -> nic :: VRDemux(BY mac, {tags});\n\
             nic[0] -> hi_q :: ThreadSafeQueue({QUEUE}) -> hi_poll :: Unqueue(BURST 32) -> hi_in;\n\
             nic[1] -> lo_q :: ThreadSafeQueue({QUEUE}) -> lo_poll :: Unqueue(BURST 32) -> lo_in;\n\
             StaticThreadSched(wire 0, hi_poll 1, lo_poll 1);\n\
             ScheduleInfo(hi_poll {HI_WEIGHT}, lo_poll {LO_WEIGHT});\n"
        ),
    };
    let name = match demux {
        Demux::Software => "software-demux",
        Demux::PerRouterQueues => "per-router-queues",
    };
    Workload::new(
        format!("{name}-{:.0}kpps", load / 1e3),
        format!("{}{routers}{wiring}", wire(load)),
        &["hi", "lo"],
    )
    .with_quiesce("wire", "active", "false")
}

/// One offered load's measurements (Mpps, medians over runs).
#[derive(Debug, Clone)]
struct Point {
    offered: Sample,
    hi: Sample,
    lo: Sample,
}

impl Point {
    fn from_windows(w: &[Window]) -> Point {
        let s = |f: &dyn Fn(&Window) -> f64| Sample(w.iter().map(f).collect());
        Point {
            offered: s(&|w| w.mpps("wire", "count")),
            hi: s(&|w| w.mpps("hi", "count")),
            lo: s(&|w| w.mpps("lo", "count")),
        }
    }
}

/// The routers' saturation rate on one worker, packets per second: the
/// work alone, run in memory.
fn calibrate(packets: u64) -> Result<f64, Error> {
    let w = Workload::new(
        "work-calibration",
        format!(
            "InfiniteSource(DATA {}, LIMIT {packets}) -> {WORK} -> c :: Counter -> Discard;",
            frame(HI_MAC)
        ),
        &["c"],
    );
    let r = w.run()?;
    Ok(r.delivered as f64 / r.secs.max(1e-9))
}

/// Runs Figs. 17 and 18.
pub fn run(s: &Settings) -> Result<Vec<Row>, Error> {
    let exp = Experiment::Fairness;
    if let Some(why) = missing_elements(&[
        "VRDemux",
        "ThreadSafeQueue",
        "StaticThreadSched",
        "ScheduleInfo",
        "WorkPackage",
        "RatedUnqueue",
        "RoundRobinSched",
    ]) {
        return Ok(vec![
            not_run(
                exp,
                "software demux: shares after saturation",
                "follow arrivals (40:60)",
                why.clone(),
            ),
            not_run(
                exp,
                "per-router queues: shares after saturation",
                "2:1",
                why,
            ),
        ]);
    }
    let capacity_est = calibrate(s.pick(400_000, 50_000))?;
    let loads: Vec<f64> = s.pick(
        vec![0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5],
        vec![0.5, 1.0, 1.5, 2.5],
    );
    let (warmup, window) = s.pick(
        (Duration::from_millis(300), Duration::from_millis(700)),
        (Duration::from_millis(150), Duration::from_millis(250)),
    );
    println!(
        "Figs. 17, 18: two routers weighted {HI_WEIGHT}:{LO_WEIGHT}, offered {:.0} % / {:.0} % \
         (high / low) interleaved on one wire (RatedUnqueue) on worker 0, routers ({WORK}) on \
         worker 1; one worker does the work alone at {:.3} Mpps\n",
        HI_LOAD * 100.0,
        LO_LOAD * 100.0,
        capacity_est / 1e6
    );
    let mut rows = Vec::new();
    for demux in [Demux::Software, Demux::PerRouterQueues] {
        let mut points = Vec::new();
        for &f in &loads {
            let wl = workload(demux, f * capacity_est);
            let mut windows = Vec::new();
            for _ in 0..s.runs {
                windows.push(wl.run_window(2, warmup, window)?);
            }
            points.push(Point::from_windows(&windows));
        }
        // The saturation rate: the most the two routers forwarded together.
        let capacity = points
            .iter()
            .map(|p| p.hi.median() + p.lo.median())
            .fold(0.0, f64::max);
        let mut t = Table::new(&[
            "offered Mpps",
            "high fwd",
            "low fwd",
            "high : low",
            "ideal high",
            "ideal low",
        ]);
        for p in &points {
            let (ih, il) = ideal(capacity, p.offered.median());
            t.push(vec![
                p.offered.show(3),
                p.hi.show(3),
                p.lo.show(3),
                format!("{:.2}", p.hi.median() / p.lo.median().max(1e-9)),
                format!("{ih:.3}"),
                format!("{il:.3}"),
            ]);
        }
        let (fig, label) = match demux {
            Demux::Software => (
                "Fig. 17",
                "software demultiplexing (one queue, one task, VRDemux)",
            ),
            Demux::PerRouterQueues => ("Fig. 18", "per-router receive queues, tasks ticketed 2:1"),
        };
        println!("{fig}: {label}; saturation {capacity:.3} Mpps\n");
        print!("{}", t.render());
        println!();

        let xs: Vec<f64> = points.iter().map(|p| p.offered.median()).collect();
        let top = xs.iter().copied().fold(0.0, f64::max);
        let grid: Vec<f64> = (0..=50).map(|i| top * i as f64 / 50.0).collect();
        let mut series = vec![
            Series::measured(
                "high weight, bricks",
                points
                    .iter()
                    .map(|p| (p.offered.median(), p.hi.median()))
                    .collect(),
            ),
            Series::measured(
                "low weight, bricks",
                points
                    .iter()
                    .map(|p| (p.offered.median(), p.lo.median()))
                    .collect(),
            ),
            Series::reference(
                "high weight, ideal",
                grid.iter().map(|&x| (x, ideal(capacity, x).0)).collect(),
            ),
            Series::reference(
                "low weight, ideal",
                grid.iter().map(|&x| (x, ideal(capacity, x).1)).collect(),
            ),
        ];
        if demux == Demux::Software {
            // The paper's measured shape (Fig. 17, right): drops fall on
            // arrivals alike.
            let arrivals = |x: f64| arrival_shares(capacity, &[HI_LOAD * x, LO_LOAD * x]);
            series.push(Series::reference(
                "high weight, shares of arrivals (paper, right panel)",
                grid.iter().map(|&x| (x, arrivals(x)[0])).collect(),
            ));
            series.push(Series::reference(
                "low weight, shares of arrivals (paper, right panel)",
                grid.iter().map(|&x| (x, arrivals(x)[1])).collect(),
            ));
        }
        Chart {
            title: format!("{fig}: two routers weighted 2:1, {label}"),
            x_label: "offered load (Mpps; 40 % high weight, 60 % low)".into(),
            y_label: "forwarded (Mpps)".into(),
            log_x: false,
            series,
        }
        .write_svg(&s.out.join(match demux {
            Demux::Software => "fig17-software-demux.svg",
            Demux::PerRouterQueues => "fig18-per-router-queues.svg",
        }))?;

        // After saturation: the loads at which both routers want more
        // than their weighted share.
        let from = both_saturated_from(capacity) * 1.1;
        let saturated: Vec<&Point> = points
            .iter()
            .filter(|p| p.offered.median() >= from)
            .collect();
        let (hi, lo) = saturated.iter().fold((0.0, 0.0), |(h, l), p| {
            (h + p.hi.median(), l + p.lo.median())
        });
        let ratio = hi / lo.max(1e-12);
        let (expected, paper) = match demux {
            Demux::Software => (HI_LOAD / LO_LOAD, "shares follow arrivals, 40:60 (0.67)"),
            Demux::PerRouterQueues => (HI_WEIGHT / LO_WEIGHT, "2:1 after saturation (2.00)"),
        };
        rows.push(Row {
            experiment: fig.into(),
            measure: format!("{label}: high : low forwarded after saturation"),
            paper: paper.into(),
            bricks: if saturated.is_empty() {
                "no load past saturation".into()
            } else {
                format!(
                    "{ratio:.2} ({:.3} : {:.3} Mpps, offered >= {:.2} Mpps; saturation {capacity:.3})",
                    hi / saturated.len() as f64,
                    lo / saturated.len() as f64,
                    from
                )
            },
            verdict: if saturated.is_empty() {
                Verdict::Differs(format!(
                    "no point offered {from:.3} Mpps or more (the wire on worker 0 did not \
                     reach it on this machine)"
                ))
            } else {
                Verdict::from_check(
                    within(ratio, expected, TOLERANCE),
                    format!(
                        "{:.2} of the expected {expected:.2} (within {:.0} % needed)",
                        ratio / expected,
                        TOLERANCE * 100.0
                    ),
                )
            },
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: (f64, f64), b: (f64, f64)) -> bool {
        (a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9
    }

    #[test]
    fn ideal_curve_of_the_paper() {
        // Below saturation everyone gets what it asks.
        assert!(close(ideal(1.0, 0.5), (0.2, 0.3)));
        assert!(close(ideal(1.0, 1.0), (0.4, 0.6)));
        // Past it the high-weight router keeps all of its traffic...
        assert!(close(ideal(1.0, 1.5), (0.6, 0.4)));
        // ...until it reaches its 2/3 share, at 5/3 of the capacity.
        assert!((both_saturated_from(1.0) - 5.0 / 3.0).abs() < 1e-12);
        assert!(close(ideal(1.0, 5.0 / 3.0), (2.0 / 3.0, 1.0 / 3.0)));
        assert!(close(ideal(1.0, 3.0), (2.0 / 3.0, 1.0 / 3.0)));
        assert!(close(ideal(2.0, 6.0), (4.0 / 3.0, 2.0 / 3.0)));
    }

    #[test]
    fn water_filling() {
        let s = weighted_max_min(10.0, &[1.0, 8.0, 8.0], &[1.0, 1.0, 2.0]);
        // 1 is satisfied; 9 left for weights 1 and 2.
        assert!((s[0] - 1.0).abs() < 1e-9);
        assert!((s[1] - 3.0).abs() < 1e-9);
        assert!((s[2] - 6.0).abs() < 1e-9);
        assert_eq!(
            weighted_max_min(5.0, &[0.0, 9.0], &[1.0, 1.0]),
            vec![0.0, 5.0]
        );
        assert_eq!(
            weighted_max_min(5.0, &[1.0, 2.0], &[1.0, 1.0]),
            vec![1.0, 2.0]
        );
    }

    #[test]
    fn arrivals_scale_alike() {
        assert_eq!(arrival_shares(1.0, &[0.4, 0.6]), vec![0.4, 0.6]);
        let s = arrival_shares(1.0, &[0.8, 1.2]);
        assert!((s[0] - 0.4).abs() < 1e-12 && (s[1] - 0.6).abs() < 1e-12);
    }

    #[test]
    fn the_wire_interleaves_two_to_three() {
        let w = Workload::new(
            "wire",
            format!(
                "{}wire -> d :: VRDemux(BY mac, {} 0, {} 1); d[0] -> hi :: Counter -> Discard; \
                 d[1] -> lo :: Counter -> Discard;",
                wire(200_000.0),
                mac_text(HI_MAC),
                mac_text(LO_MAC)
            ),
            &["hi", "lo"],
        )
        .with_quiesce("wire", "active", "false");
        let r = w
            .run_window(1, Duration::from_millis(20), Duration::from_millis(100))
            .unwrap();
        let (hi, lo) = (r.delta("hi", "count"), r.delta("lo", "count"));
        assert!(hi + lo > 1000, "{hi} {lo}");
        // Exactly 2:3 up to the batch the window cut.
        assert!(
            (hi as f64 / (hi + lo) as f64 - HI_LOAD).abs() < 0.01,
            "{hi} {lo}"
        );
        // And at the wire's rate, give or take the machine.
        assert!(r.mpps("wire", "count") < 0.2 * 1.05);
    }

    #[test]
    fn workloads_build() {
        for d in [Demux::Software, Demux::PerRouterQueues] {
            workload(d, 1e6).plan().unwrap();
        }
    }
}
