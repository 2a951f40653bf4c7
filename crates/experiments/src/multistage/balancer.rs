//! Fig. 6 (§IV-A): one L2 balancer's forwarding rate, ODB against DTX-n
//! for n = 1, 2, 3 back ports, 64-byte frames. The paper's Linux
//! balancer: ODB (the frame through the kernel's IP path, the MAC
//! rewritten in the output driver) about 640 kpps, the single PC's
//! limit; DTX-1 (the MAC rewritten in the input driver, straight to the
//! back NIC) little better, about 700 kpps; DTX-3 the full 1488 kpps of
//! a gigabit port: the limit was the back NIC's memory latency, not the
//! CPU.
//!
//! Here, in memory on one worker: an `InfiniteSource` of 64-byte IPv4
//! frames for the front port's MAC pushes into an `L2Balancer` (4
//! routers, per-packet round robin, n back ports, each to a `Discard`).
//! The routers are made live before the frames come by one probe reply
//! each, pushed into the balancer's back input by sources declared first;
//! probes go out once, at the start (INTERVAL 1000 s), and are not
//! counted. ODB puts the balancer configuration's IPv4 input path in
//! front (`Strip -> CheckIPHeader -> GetIPAddress -> StaticIPLookup`
//! with a default route `-> Unstrip`, as `bricks multistage config`
//! writes it). Delivered frames are the balancer's `balanced` counter.
//!
//! Instructions per packet come from callgrind re-running the binary on
//! one workload at two packet counts; the balancer's own share is the
//! DTX workload's count less that of the same source feeding a `Discard`
//! directly. The goal: at most 50 instructions per packet for DTX.

use super::procs::run_error;
use super::{Experiment, Settings};
use crate::frames::{click_data, udp_frame};
use crate::measure::{callgrind_per_packet, Sample, Workload};
use crate::plot::{Chart, Series};
use crate::report::{Row, Table, Verdict};
use crate::Error;
use bricks_elements::multistage::{router_mac, Probe, ProbeKind};
use bricks_wire::Ipv4Addr;
use std::fmt::Write as _;
use std::process::{Command, Stdio};

/// Fig. 6: ODB, "limited at about 640kpps".
pub const PAPER_ODB_KPPS: f64 = 640.0;
/// Fig. 6: DTX-1, "little improvement" (read from the figure).
pub const PAPER_DTX1_KPPS: f64 = 700.0;
/// Fig. 6: DTX-3 reaches the theoretical maximum of a gigabit port.
pub const PAPER_DTX3_KPPS: f64 = 1488.0;
/// Goal: instructions per 64-byte packet of the balancer in DTX.
pub const GOAL_DTX_INSTRUCTIONS: f64 = 50.0;
/// The routers behind the balancer.
pub const ROUTERS: u8 = 4;
/// The front port's MAC (F_0): where the frames are sent.
const FRONT_MAC: [u8; 6] = [0x00, 0x00, 0xc0, 0x3b, 0x71, 0xef];
/// The balancer's first back MAC (balancer 0, port 0), where replies go.
const BACK_MAC: [u8; 6] = [0x02, 0x4d, 0x42, 0, 0, 0];

/// How the balancer takes frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Output Driver Balancing: IPv4 input processing first.
    Odb,
    /// Direct Transmission: straight into the balancer.
    Dtx,
}

impl Mode {
    fn word(self) -> &'static str {
        match self {
            Mode::Odb => "odb",
            Mode::Dtx => "dtx",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Mode::Odb => "ODB",
            Mode::Dtx => "DTX",
        }
    }
}

/// The 64-byte frame (60 without FCS) from an external host to F_0.
fn frame() -> Vec<u8> {
    udp_frame(
        FRONT_MAC,
        [0x52, 0x54, 0x00, 0x00, 0x00, 0x01],
        Ipv4Addr::new(10, 0, 0, 2),
        Ipv4Addr::new(10, 1, 0, 2),
        60,
    )
}

/// The balancer with `backs` back ports in `mode`, fed `packets` frames
/// (`None`: the source feeds a `Discard` directly, the baseline).
pub fn workload(mode: Option<(Mode, usize)>, packets: u64) -> Workload {
    let data = format!(
        "InfiniteSource(DATA {}, LIMIT {packets}, BURST 32)",
        click_data(&frame())
    );
    let Some((mode, backs)) = mode else {
        return Workload::new(
            "baseline",
            format!("{data} -> sink :: Discard;\n"),
            &["sink"],
        );
    };
    let backs = backs.clamp(1, 8);
    let mut t = String::new();
    let macs: Vec<String> = (0..backs)
        .map(|j| crate::frames::mac_text([0x02, 0x4d, 0x42, 0, j as u8, 0]))
        .collect();
    let _ = writeln!(
        t,
        "lb :: L2Balancer(FRONT 0, ROUTERS {ROUTERS}, BALANCER 0, BACKS {backs}, POLICY rr, \
         INTERVAL 1000s, MISSES 3, FRONT_MAC {}, BACK_MAC {});",
        crate::frames::mac_text(FRONT_MAC),
        macs.join(" ")
    );
    // Declared first, so that every router is live before a frame comes.
    for r in 0..ROUTERS {
        let reply = Probe {
            kind: ProbeKind::Reply,
            balancer: 0,
            router: r,
            front: 0,
            seq: 0,
        }
        .frame(BACK_MAC, router_mac(r, 0));
        let _ = writeln!(
            t,
            "InfiniteSource(DATA {}, LIMIT 1, BURST 1) -> [1]lb;",
            click_data(&reply)
        );
    }
    match mode {
        Mode::Dtx => {
            let _ = writeln!(t, "{data} -> [0]lb;");
        }
        Mode::Odb => {
            let _ = writeln!(
                t,
                "{data} -> Strip(14) -> CheckIPHeader -> GetIPAddress(16)\n    \
                 -> rt :: StaticIPLookup(0.0.0.0/0 0) -> Unstrip(14) -> [0]lb;"
            );
        }
    }
    let _ = writeln!(t, "lb[0] -> front :: Discard;");
    for j in 0..backs {
        let _ = writeln!(t, "lb[{}] -> b{j} :: Discard;", j + 1);
    }
    Workload::new(format!("{}-{backs}", mode.word()), t, &[])
}

/// The workloads callgrind and the timed runs re-run: `baseline`,
/// `odb-N`, `dtx-N` (N back ports, 1 to 8).
pub fn workload_by_name(name: &str, packets: u64) -> Option<Workload> {
    if name == "baseline" {
        return Some(workload(None, packets));
    }
    let (mode, n) = name.split_once('-')?;
    let n: usize = n.parse().ok().filter(|n| (1..=8).contains(n))?;
    let mode = match mode {
        "odb" => Mode::Odb,
        "dtx" => Mode::Dtx,
        _ => return None,
    };
    Some(workload(Some((mode, n)), packets))
}

/// One timed run of workload `name` with `packets` frames.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    /// Seconds it ran.
    pub secs: f64,
    /// Frames the balancer balanced (the baseline: its sink counted).
    pub delivered: u64,
    /// Frames out of each back port (balanced ones and the start's
    /// probes).
    pub per_back: Vec<u64>,
}

impl Timed {
    /// As `bricks bench multistage --one NAME --time` prints it: seconds,
    /// frames delivered, frames per back port.
    pub fn line(&self) -> String {
        let mut s = format!("{:.9} {}", self.secs, self.delivered);
        for c in &self.per_back {
            let _ = write!(s, " {c}");
        }
        s
    }

    /// Reads [`Timed::line`]'s output.
    pub fn parse(text: &str) -> Option<Timed> {
        let mut w = text.split_whitespace();
        let secs = w.next()?.parse().ok()?;
        let delivered = w.next()?.parse().ok()?;
        let per_back = w.map(|v| v.parse().ok()).collect::<Option<Vec<u64>>>()?;
        Some(Timed {
            secs,
            delivered,
            per_back,
        })
    }
}

/// Runs workload `name` once with `packets` frames, in this process;
/// an error unless every frame was delivered.
pub fn timed(name: &str, packets: u64) -> Result<Timed, Error> {
    let w = workload_by_name(name, packets).ok_or_else(|| run_error(name, "no such workload"))?;
    let r = w.run()?;
    let delivered = if name == "baseline" {
        r.counter("sink", "count")
    } else {
        r.counter("lb", "balanced")
    };
    if delivered != packets {
        return Err(run_error(
            name,
            format!(
                "{delivered} of {packets} frames balanced ({} without a live router)",
                r.counter("lb", "no_router")
            ),
        ));
    }
    let per_back = (0..8)
        .map(|j| format!("b{j}"))
        .take_while(|b| r.summary.stats(b).is_some())
        .map(|b| r.counter(&b, "count"))
        .collect();
    Ok(Timed {
        secs: r.secs,
        delivered,
        per_back,
    })
}

/// Nanoseconds per frame of `name`, `runs` times after a warm-up, and
/// the frames per back port of the last run: in a child `bricks`
/// process when there is a binary (the balancer reports routers coming
/// up on standard error; the child's is discarded), in this one
/// otherwise.
fn time(s: &Settings, name: &str, packets: u64) -> Result<(Sample, Vec<u64>), Error> {
    let once = |n: u64| -> Result<Timed, Error> {
        let Some(exe) = &s.exe else {
            return timed(name, n);
        };
        let out = Command::new(exe)
            .args(["bench", "multistage", "--one", name, "--time", "--packets"])
            .arg(n.to_string())
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        match Timed::parse(&text) {
            Some(t) if out.status.success() => Ok(t),
            _ => Err(run_error(
                name,
                format!("the timed run failed ({}): {text}", out.status),
            )),
        }
    };
    once(packets.min(50_000))?;
    let mut v = Vec::new();
    let mut per_back = Vec::new();
    for _ in 0..s.runs {
        let t = once(packets)?;
        v.push(t.secs * 1e9 / t.delivered.max(1) as f64);
        per_back = t.per_back;
    }
    Ok((Sample(v), per_back))
}

/// One variant's measurements.
struct Variant {
    mode: Mode,
    backs: usize,
    ns: Sample,
    /// Frames per back port in one run.
    per_back: Vec<u64>,
}

impl Variant {
    fn kpps(&self) -> f64 {
        1e6 / self.ns.median()
    }
}

/// Runs Fig. 6.
pub fn run(s: &Settings) -> Result<Vec<Row>, Error> {
    let exp = Experiment::Fig6;
    let packets = s.pick(5_000_000, 500_000);
    let mut variants = Vec::new();
    for mode in [Mode::Odb, Mode::Dtx] {
        for backs in 1..=3 {
            let name = format!("{}-{backs}", mode.word());
            let (ns, per_back) = time(s, &name, packets)?;
            variants.push(Variant {
                mode,
                backs,
                ns,
                per_back,
            });
        }
    }
    let (baseline, _) = time(s, "baseline", packets)?;
    // Instructions: the baseline, ODB and DTX with one back port, and
    // DTX-3.
    let counted: Vec<&str> = s.pick(
        vec!["baseline", "odb-1", "dtx-1", "dtx-3"],
        vec!["baseline", "odb-1", "dtx-1"],
    );
    let mut instr: Vec<(String, f64)> = Vec::new();
    if let Some(exe) = &s.callgrind {
        let (small, big) = s.pick((10_000, 210_000), (5_000, 55_000));
        for name in &counted {
            let args: Vec<String> = ["bench", "multistage", "--one", name]
                .iter()
                .map(|a| a.to_string())
                .collect();
            instr.push((
                name.to_string(),
                callgrind_per_packet(exe, &args, small, big)?,
            ));
        }
    }
    let instr_of = |name: &str| instr.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let base_instr = instr_of("baseline");
    let own = |name: &str| Some(instr_of(name)? - base_instr?);

    let mut t = Table::new(&[
        "balancer",
        "back ports",
        "Mpps",
        "ns/frame",
        "ns/frame over source->Discard",
        "instr/frame (balancer's own)",
        "frames per back port",
        "paper (kpps)",
    ]);
    for v in &variants {
        let name = format!("{}-{}", v.mode.word(), v.backs);
        let paper = match (v.mode, v.backs) {
            (Mode::Odb, _) => format!("~{PAPER_ODB_KPPS:.0}"),
            (Mode::Dtx, 1) => format!("~{PAPER_DTX1_KPPS:.0}"),
            (Mode::Dtx, 2) => "between".to_string(),
            (Mode::Dtx, _) => format!("{PAPER_DTX3_KPPS:.0} (line rate)"),
        };
        t.push(vec![
            v.mode.label().into(),
            v.backs.to_string(),
            v.ns.map(|x| 1e3 / x).show(2),
            v.ns.show(1),
            format!("{:+.1}", v.ns.median() - baseline.median()),
            own(&name).map_or("-".into(), |i| format!("{i:.0}")),
            v.per_back
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(" / "),
            paper,
        ]);
    }
    println!(
        "Fig. 6: InfiniteSource -> [ODB: Strip -> CheckIPHeader -> GetIPAddress -> \
         StaticIPLookup -> Unstrip ->] L2Balancer (4 live routers, round robin, n back ports) \
         -> Discard each; 64-byte frames, one worker, {packets} frames per run; the source \
         feeding a Discard alone: {} ns/frame{}\n",
        baseline.show(1),
        base_instr.map_or(String::new(), |i| format!(", {i:.0} instructions"))
    );
    print!("{}", t.render());

    let odb1 = variants[0].kpps();
    let rel = |mode: Mode| -> Vec<(f64, f64)> {
        variants
            .iter()
            .filter(|v| v.mode == mode)
            .map(|v| (v.backs as f64, v.kpps() / odb1))
            .collect()
    };
    Chart {
        title: "Fig. 6: balancer rate, ODB and DTX-n, relative to ODB with one back port".into(),
        x_label: "back ports n".into(),
        y_label: "rate relative to ODB, 1 back port".into(),
        log_x: false,
        series: vec![
            Series::measured("bricks DTX-n (in memory)", rel(Mode::Dtx)),
            Series::measured("bricks ODB (in memory)", rel(Mode::Odb)),
            Series::reference(
                "paper DTX-n (n = 1, 3)",
                vec![
                    (1.0, PAPER_DTX1_KPPS / PAPER_ODB_KPPS),
                    (3.0, PAPER_DTX3_KPPS / PAPER_ODB_KPPS),
                ],
            ),
            Series::reference("paper ODB", vec![(1.0, 1.0), (3.0, 1.0)]),
        ],
    }
    .write_svg(&s.out.join("fig6-balancer.svg"))?;

    let dtx: Vec<&Variant> = variants.iter().filter(|v| v.mode == Mode::Dtx).collect();
    let odb: Vec<&Variant> = variants.iter().filter(|v| v.mode == Mode::Odb).collect();
    let slowest = variants
        .iter()
        .map(Variant::kpps)
        .fold(f64::INFINITY, f64::min);
    let dtx_flat = dtx
        .iter()
        .all(|v| crate::report::within(v.kpps(), dtx[0].kpps(), 0.15));
    let even = dtx.iter().all(|v| {
        let sum: u64 = v.per_back.iter().sum();
        let share = sum as f64 / v.per_back.len() as f64;
        v.per_back
            .iter()
            .all(|&c| (c as f64 - share).abs() <= 1.0 + 0.01 * share)
    });
    let mut rows = vec![Row {
        experiment: exp.figure().into(),
        measure: "balancer rate, DTX-n for n = 1..3 back ports, 64 B (in memory)".into(),
        paper: format!("DTX-1 ~{PAPER_DTX1_KPPS:.0}, DTX-3 {PAPER_DTX3_KPPS:.0} kpps (line rate)"),
        bricks: format!(
            "DTX-1 {:.0}, DTX-2 {:.0}, DTX-3 {:.0} kpps; even over the back ports: {}",
            dtx[0].kpps(),
            dtx[1].kpps(),
            dtx[2].kpps(),
            if even { "yes" } else { "no" }
        ),
        verdict: Verdict::from_check(
            slowest >= PAPER_DTX3_KPPS && even,
            format!(
                "every variant above a gigabit port's {PAPER_DTX3_KPPS:.0} kpps ({:.1}x at the \
                 slowest){}; {}",
                slowest / PAPER_DTX3_KPPS,
                if even {
                    ", frames even over the back ports"
                } else {
                    ", but frames NOT even over the back ports"
                },
                if dtx_flat {
                    "flat in n: in memory no back NIC limits, so the paper's rise with n (its \
                     NICs' memory latency) has nothing to lift"
                        .to_string()
                } else {
                    format!(
                        "the paper's rise with n is not seen: DTX-3 is {:.2}x DTX-1 here, since \
                         alternating back ports per frame splits every batch n ways \
                         ({:+.1} ns/frame), while memory has no back NIC limit for more ports \
                         to lift",
                        dtx[2].kpps() / dtx[0].kpps(),
                        dtx[2].ns.median() - dtx[0].ns.median()
                    )
                }
            ),
        ),
    }];
    let d1 = dtx[0].ns.median();
    let o1 = odb[0].ns.median();
    let (oi, di) = (own("odb-1"), own("dtx-1"));
    rows.push(Row {
        experiment: exp.figure().into(),
        measure: "ODB against DTX, one back port".into(),
        paper: format!("ODB ~{PAPER_ODB_KPPS:.0} kpps, DTX-1 a little faster"),
        bricks: format!(
            "ODB {:.0}, DTX {:.0} kpps ({:+.1} ns/frame for IP input processing{})",
            odb[0].kpps(),
            dtx[0].kpps(),
            o1 - d1,
            match (oi, di) {
                (Some(o), Some(d)) => format!(", {:+.0} instructions", o - d),
                _ => String::new(),
            }
        ),
        verdict: Verdict::from_check(
            d1 < o1,
            format!(
                "DTX is {:.2}x ODB's rate: ODB's checks and lookup before the balancer are \
                 what DTX saves",
                o1 / d1
            ),
        ),
    });
    rows.push(match di {
        Some(d) => Row {
            experiment: exp.figure().into(),
            measure: "instructions per 64-byte frame, L2Balancer in DTX".into(),
            paper: format!("goal: <= {GOAL_DTX_INSTRUCTIONS:.0}"),
            bricks: format!(
                "{d:.0} (whole workload {:.0}, source -> Discard {:.0}){}",
                instr_of("dtx-1").unwrap_or(0.0),
                base_instr.unwrap_or(0.0),
                own("dtx-3").map_or(String::new(), |d3| format!("; DTX-3 {d3:.0}"))
            ),
            verdict: Verdict::from_check(
                d <= GOAL_DTX_INSTRUCTIONS,
                if d <= GOAL_DTX_INSTRUCTIONS {
                    format!(
                        "{:.0} under the goal: a MAC rewrite and a round robin per frame, the \
                         batch moved whole",
                        GOAL_DTX_INSTRUCTIONS - d
                    )
                } else {
                    format!("{:.0} over the goal", d - GOAL_DTX_INSTRUCTIONS)
                },
            ),
        },
        None => Row {
            experiment: exp.figure().into(),
            measure: "instructions per 64-byte frame, L2Balancer in DTX".into(),
            paper: format!("goal: <= {GOAL_DTX_INSTRUCTIONS:.0}"),
            bricks: "not counted".into(),
            verdict: Verdict::NotRun("no callgrind (valgrind missing or --no-callgrind)".into()),
        },
    });
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_frame_is_balanced_over_live_routers_and_back_ports() {
        for (mode, backs) in [(Mode::Dtx, 1), (Mode::Dtx, 3), (Mode::Odb, 2)] {
            let w = workload(Some((mode, backs)), 3000);
            let r = w.run().unwrap();
            assert_eq!(r.counter("lb", "balanced"), 3000, "{}", w.name);
            assert_eq!(r.counter("lb", "no_router"), 0);
            for i in 0..ROUTERS {
                assert_eq!(r.counter("lb", &format!("to_router{i}")), 750, "{}", w.name);
            }
            // The probes sent at the start go out too; nothing else.
            let probes = r.counter("lb", "probes");
            let out: u64 = (0..backs)
                .map(|j| r.counter(&format!("b{j}"), "count"))
                .sum();
            assert_eq!(out, 3000 + probes);
            assert_eq!(r.counter("front", "count"), 0);
        }
    }

    #[test]
    fn names_select_workloads() {
        assert_eq!(workload_by_name("dtx-3", 10).unwrap().name, "dtx-3");
        assert_eq!(workload_by_name("odb-1", 10).unwrap().name, "odb-1");
        assert_eq!(workload_by_name("baseline", 10).unwrap().name, "baseline");
        assert!(workload_by_name("dtx-0", 10).is_none());
        assert!(workload_by_name("dtx-9", 10).is_none());
        assert!(workload_by_name("xyz-1", 10).is_none());
        let t = timed("baseline", 1000).unwrap();
        assert_eq!((t.delivered, t.per_back.len()), (1000, 0));
        let t = timed("dtx-2", 1000).unwrap();
        assert_eq!(t.delivered, 1000);
        // 500 frames each, and the start's 4 probes.
        assert_eq!(t.per_back.iter().sum::<u64>(), 1004, "{t:?}");
        assert!(
            t.per_back.iter().all(|&c| (500..=504).contains(&c)),
            "{t:?}"
        );
        assert_eq!(Timed::parse(&t.line()), Some(t));
        assert!(Timed::parse("1.0").is_none());
        assert!(Timed::parse("1.0 5 x").is_none());
    }
}
