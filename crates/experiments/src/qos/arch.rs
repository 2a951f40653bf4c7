//! Fig. 7 and Tables 3 and 4 (§5.2, §6): the twelve service
//! architectures `<null|tag|match>_<look|pre>_<fifo|sort>` in memory on
//! one core, and what they need to scale.
//!
//! Each architecture is [`bricks_qos::arch`]'s router (the text of
//! `conf/qos/*.click`), two ports, wired to an `InfiniteSource` of
//! 64-byte frames on port 0 and a `Discard` pulling each port's queue.
//! Every frame is of one reserved flow (an MPLS label for `tag`, a UDP
//! 5-tuple for `match`, an IPv4 frame for `null_pre`, a one-hop source
//! route for `null_look`) to `192.168.1.7`, routed to port 1 via
//! `10.0.1.2`, whose Ethernet address is in the ARP table before the run.
//! Flows reserve 100 Gbit/s and the null architectures' Virtual Clocks run
//! at 100 Gbit/s, so that deadlines follow the clock (a flow far beyond
//! its rate would have its deadlines run past the bins). Beside them,
//! bricks' plain IPv4 router, `conf/ip-router.click`'s path (as `bricks
//! bench core`'s iprouter), is fed the same way in the same run.
//!
//! Table 4: the paper's threads and SRAM bandwidth coefficients beside
//! those [`super::cost`] computes from bricks' measured references and
//! words per packet (every element's counters, `MEMREFS`). Table 3: the
//! sort block's scaling from OC-1 to OC-768 from Fig. 5's measured
//! MDS-BinSort counts, beside the paper's.

use super::cost::{self, BlockCounts};
use super::{counts, opt0, paired_ratio, time_interleaved, Experiment, Findings, Refs, Settings};
use crate::frames::{click_data, udp_frame};
use crate::measure::{Sample, Workload};
use crate::plot::{Chart, Series};
use crate::report::{Row, Table, Verdict};
use crate::Error;
use bricks_qos::arch::{Arch, Io, Params, Routes};
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// Goal: null_pre_fifo costs at most this much more than the IPv4 router.
pub const GOAL_IP_MARGIN: f64 = 0.10;
/// Goal: match_pre_sort at most this many times null_pre_fifo.
pub const GOAL_COSTLIEST: f64 = 3.0;
/// The paper's throughput of each architecture on the IXP1200, as a share
/// of line rate, where its text gives it (§1): IntServ, MPLS, CSGS.
pub const PAPER_LINE_RATE: [(&str, f64); 3] = [
    ("match_pre_sort", 0.898),
    ("tag_pre_sort", 1.12),
    ("null_pre_sort", 1.13),
];

const DST: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 7);
const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const NEXT_HOP_MAC: &str = "02:00:00:00:01:02";
/// The label of the tag flow.
const TAG: u32 = 16;

/// The flow file the workloads name: one fixed file per kind in the
/// temporary directory, shared by the callgrind children, written (whole,
/// by a rename) when it is missing or differs.
fn flow_file(tag: bool) -> String {
    let kind = if tag { "tag" } else { "match" };
    let path: PathBuf = std::env::temp_dir().join(format!("bricks-bench-qos-{kind}.txt"));
    let text = if tag {
        format!("tag {TAG} rate 100G via 10.0.1.2 output 1\n")
    } else {
        // frames::udp_frame's ports.
        format!("udp {SRC}:1234 {DST}:5678 rate 100G via 10.0.1.2 output 1\n")
    };
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        let part = path.with_extension(format!("{}.part", std::process::id()));
        // Best effort: a missing file makes FlowTable say so.
        if std::fs::write(&part, &text).is_ok() {
            let _ = std::fs::rename(&part, &path);
        }
    }
    path.display().to_string()
}

/// The 64-byte (IPv4 part) frame to port 0 for `a`.
pub fn frame(a: &Arch) -> Vec<u8> {
    let ip = udp_frame(Params::ether(0), [2, 0, 0, 0, 0, 0x99], SRC, DST, 60);
    match a.ethertype() {
        0x8847 => {
            let mut m = ip[..12].to_vec();
            m.extend_from_slice(&0x8847u16.to_be_bytes());
            m.extend_from_slice(&((TAG << 12) | (1 << 8) | 64).to_be_bytes());
            m.extend_from_slice(&ip[14..]);
            m
        }
        0x0800 => ip,
        et => {
            // One hop: next hop 10.0.1.2, output 1 (crates/qos/src/sroute.rs).
            let mut m = ip[..12].to_vec();
            m.extend_from_slice(&et.to_be_bytes());
            m.extend_from_slice(&[bricks_qos::sroute::VERSION, 1, 0, 0, 0x08, 0x00]);
            m.extend_from_slice(&[10, 0, 1, 2, 0, 1]);
            m.extend_from_slice(&ip[14..]);
            m
        }
    }
}

/// Architecture `a` fed `packets` frames (`MEMREFS true` on every QoS
/// element when `memrefs`).
pub fn workload(a: &Arch, packets: u64) -> Workload {
    let p = Params {
        ports: 2,
        flows: Some(flow_file(a.ethertype() == 0x8847)),
        routes: Routes::Default,
        capacity: 4096,
        link_rate: "100Gbps".into(),
    };
    let io = Io::Custom {
        inputs: vec![
            format!(
                "InfiniteSource(DATA {}, LIMIT {packets}, BURST 32)",
                click_data(&frame(a))
            ),
            "Idle".into(),
        ],
        outputs: vec!["sink0 :: Discard".into(), "sink1 :: Discard".into()],
    };
    let text = a
        .click(&p, &io)
        .unwrap_or_else(|e| format!("// cannot be written: {e}\nNoSuchConfiguration;"));
    Workload::new(format!("arch-{}", a.name()), text, &["sink1"]).with_setup(
        "r/arpq1",
        "insert",
        &format!("10.0.1.2 {NEXT_HOP_MAC} static"),
    )
}

/// bricks' plain IPv4 router, `conf/ip-router.click` as `bricks bench
/// core` runs it, fed `packets` frames to 1.0.0.2 by eth0.
pub fn ip_router(packets: u64) -> Workload {
    let f = udp_frame(
        [0x00, 0x00, 0xc0, 0x3b, 0x71, 0xef],
        [0x00, 0x20, 0x6a, 0x12, 0x34, 0x56],
        Ipv4Addr::new(18, 26, 4, 99),
        Ipv4Addr::new(1, 0, 0, 2),
        60,
    );
    let src = format!(
        "InfiniteSource(DATA {}, LIMIT {packets}, BURST 32)",
        click_data(&f)
    );
    let text = include_str!("../../../../conf/ip-router.click")
        .replace("FromDevice(eth0)", &src)
        .replace("FromDevice(eth1)", "Idle")
        .replace("ToDevice(eth0)", "Discard")
        .replace("ToDevice(eth1)", "Discard")
        .replace("toh :: ToHost", "toh :: Discard");
    Workload::new("iprouter", text, &["todevice1"]).with_setup(
        "arpq1",
        "insert",
        "1.0.0.2 00:00:C0:00:00:02 static",
    )
}

/// The workloads callgrind re-runs: `iprouter` and `arch-NAME`.
pub fn workload_by_name(name: &str, packets: u64) -> Option<Workload> {
    if name == "iprouter" {
        return Some(ip_router(packets));
    }
    let a: Arch = name.strip_prefix("arch-")?.parse().ok()?;
    Some(workload(&a, packets))
}

/// One architecture's measurements.
struct Point {
    name: String,
    ns: Sample,
    instr: Option<f64>,
    refs: Option<Refs>,
}

/// Runs Fig. 7 and Tables 3 and 4.
pub fn run(s: &Settings, found: &mut Findings) -> Result<Vec<Row>, Error> {
    let exp = Experiment::Fig7;
    let packets = s.pick(2_000_000, 100_000);
    println!("  iprouter ...");
    let ipr_instr = s.instructions("iprouter")?;
    let mut points = Vec::new();
    for a in Arch::ALL {
        println!("  {} ...", a.name());
        let w = workload(&a, 1000);
        let r = w.run()?;
        if r.delivered != 1000 {
            return Err(Error::Run {
                workload: w.name,
                message: format!("{} of 1000 frames left by port 1", r.delivered),
            });
        }
        let instr = s.instructions(&format!("arch-{}", a.name()))?;
        let refs = counts(&workload(&a, s.pick(100_000, 20_000)))?;
        points.push(Point {
            name: a.name().into(),
            ns: Sample::default(),
            instr,
            refs,
        });
    }
    println!("  timing the twelve and the IPv4 router, in turn ...");
    let makers: Vec<Box<dyn Fn(u64) -> Workload>> =
        std::iter::once(Box::new(ip_router) as Box<dyn Fn(u64) -> Workload>)
            .chain(
                Arch::ALL
                    .into_iter()
                    .map(|a| Box::new(move |n| workload(&a, n)) as Box<dyn Fn(u64) -> Workload>),
            )
            .collect();
    let refs: Vec<&dyn Fn(u64) -> Workload> = makers.iter().map(|b| b.as_ref()).collect();
    let mut timed = time_interleaved(&refs, packets, s.runs)?.into_iter();
    let ipr = timed.next().unwrap_or_default();
    for (p, ns) in points.iter_mut().zip(timed) {
        p.ns = ns;
    }
    let mut t = Table::new(&[
        "architecture",
        "service",
        "ns/packet",
        "Mpps",
        "instr/packet",
        "refs / words per packet (32-bit)",
        "threads per Mbit/s: bricks / paper",
        "SRAM Mbit/s per Mbit/s: bricks / paper",
        "paper: share of line rate (IXP1200)",
    ]);
    for (p, a) in points.iter().zip(Arch::ALL) {
        let paper = cost::PAPER_TABLE4
            .iter()
            .find(|(n, ..)| *n == p.name)
            .map_or((0.0, 0.0), |(_, th, bw)| (*th, *bw));
        t.push(vec![
            p.name.clone(),
            a.service().into(),
            p.ns.show(1),
            format!("{:.2}", 1e3 / p.ns.median()),
            opt0(p.instr),
            p.refs.map_or("-".into(), |r| r.show()),
            format!(
                "{} / {:.2e}",
                p.refs.map_or("-".into(), |r| format!(
                    "{:.2e}",
                    cost::threads_per_mbps(r.refs)
                )),
                paper.0
            ),
            format!(
                "{} / {:.2}",
                p.refs.map_or("-".into(), |r| format!(
                    "{:.2}",
                    cost::bandwidth_per_mbps(r.words)
                )),
                paper.1
            ),
            PAPER_LINE_RATE
                .iter()
                .find(|(n, _)| *n == p.name)
                .map_or("-".into(), |(_, r)| format!("{:.1}%", r * 100.0)),
        ]);
    }
    t.push(vec![
        "iprouter".into(),
        "conf/ip-router.click (bricks bench core)".into(),
        ipr.show(1),
        format!("{:.2}", 1e3 / ipr.median()),
        opt0(ipr_instr),
        "-".into(),
        "-".into(),
        "-".into(),
        "-".into(),
    ]);
    println!(
        "Fig. 7 / Table 4: each architecture (bricks_qos::arch, 2 ports) fed 64-byte frames of \
         one reserved flow by an InfiniteSource on port 0, sent out of port 1 into a Discard; \
         one worker, {packets} frames per run. Threads: refs x 80 ns x C / 512 bits; SRAM \
         bandwidth: words x 32 x C / 512 bits (C in Mbit/s)\n"
    );
    print!("{}", t.render());

    let xs: Vec<f64> = (1..=points.len()).map(|i| i as f64).collect();
    let mut series = vec![Series::measured(
        "bricks ns per packet (architectures 1-12 in the order of Table 4)",
        xs.iter()
            .zip(&points)
            .map(|(&x, p)| (x, p.ns.median()))
            .collect(),
    )];
    if points.iter().all(|p| p.refs.is_some()) {
        series.push(Series::measured(
            "bricks 32-bit words per packet",
            xs.iter()
                .zip(&points)
                .map(|(&x, p)| (x, p.refs.unwrap_or_default().words))
                .collect(),
        ));
    }
    series.push(Series::reference(
        "paper: words per packet (from the bandwidth of Table 4)",
        xs.iter()
            .zip(cost::PAPER_TABLE4)
            .map(|(&x, (_, _, bw))| (x, bw * 16.0))
            .collect(),
    ));
    series.push(Series::reference(
        "bricks IPv4 router (conf/ip-router.click), ns",
        vec![(1.0, ipr.median()), (12.0, ipr.median())],
    ));
    Chart {
        title: "Fig. 7: the twelve architectures, one core".into(),
        x_label: "architecture (1 match_look_fifo ... 12 tag_pre_sort)".into(),
        y_label: "ns or words per packet".into(),
        log_x: false,
        series,
    }
    .write_svg(&s.out.join("fig7-architectures.svg"))?;

    // Table 3.
    let block = found.sort_block.clone();
    let paper_block = cost::paper_sort_block();
    let mut t3 = Table::new(&[
        "link",
        "Gbit/s",
        "threads: bricks / paper",
        "SRAM MB: bricks / paper",
        "SRAM Gbit/s: bricks / paper",
    ]);
    let ours = block.as_ref().map(cost::table3);
    for (i, p) in cost::PAPER_TABLE3.iter().enumerate() {
        let o = ours.as_ref().map(|v| &v[i]);
        t3.push(vec![
            p.0.into(),
            format!("{}", p.1),
            format!(
                "{} / {}",
                o.map_or("-".into(), |o| format!("{:.1}", o.threads)),
                p.2
            ),
            format!(
                "{} / {}",
                o.map_or("-".into(), |o| format!("{:.2}", o.sram_mb)),
                p.3
            ),
            format!(
                "{} / {}",
                o.map_or("-".into(), |o| format!("{:.3}", o.bandwidth_gbps)),
                p.4
            ),
        ]);
    }
    println!(
        "\nTable 3: the sort block scaled from OC-1 to OC-768 ({}; the paper: {} references, {} \
         words, {:.0} bytes per packet held), 80 ns latency, 64-byte packets, the packets of \
         10 ms held\n",
        block
            .as_ref()
            .map_or("no measured counts".into(), |b: &BlockCounts| format!(
                "bricks: {}, {:.1} references, {:.1} words, {:.0} bytes per packet held",
                b.source, b.refs, b.words, b.held_bytes
            )),
        paper_block.refs,
        paper_block.words,
        paper_block.held_bytes
    );
    print!("{}", t3.render());

    let of = |n: &str| points.iter().find(|p| p.name == n);
    let sample_of = |n: &str| of(n).map_or_else(Sample::default, |p| p.ns.clone());
    let instr_of = |n: &str| of(n).and_then(|p| p.instr);
    let (npf_s, mps_s) = (sample_of("null_pre_fifo"), sample_of("match_pre_sort"));
    let (npf, mps, ip) = (npf_s.median(), mps_s.median(), ipr.median());
    // Ratios of the same round: a slow moment of the machine falls on both.
    let npf_over_ip = paired_ratio(&npf_s, &ipr);
    let mps_over_npf = paired_ratio(&mps_s, &npf_s);
    let instr_ratio = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| a / b);
    let npf_instr = instr_ratio(instr_of("null_pre_fifo"), ipr_instr);
    let mps_instr = instr_ratio(instr_of("match_pre_sort"), instr_of("null_pre_fifo"));
    let costliest = points
        .iter()
        .max_by(|a, b| a.ns.median().total_cmp(&b.ns.median()))
        .map_or("-".to_string(), |p| p.name.clone());
    let mut rows = vec![
        Row {
            experiment: exp.figure().into(),
            measure: "null_pre_fifo against bricks' IPv4 router (ns/packet)".into(),
            paper: format!("goal: <= IPv4 router + {:.0}%", GOAL_IP_MARGIN * 100.0),
            bricks: format!(
                "null_pre_fifo {npf:.1}, conf/ip-router.click {ip:.1}: {:+.0}% (median of the \
                 rounds' ratios){}",
                (npf_over_ip - 1.0) * 100.0,
                npf_instr.map_or(String::new(), |r| format!(
                    "; instructions {:+.0}%",
                    (r - 1.0) * 100.0
                ))
            ),
            verdict: Verdict::from_check(
                npf_over_ip <= 1.0 + GOAL_IP_MARGIN,
                "the same IPv4 path (Classifier, CheckIPHeader, a route lookup, DropBroadcasts, \
                 IPGWOptions, FixIPSrc, DecIPTTL, IPFragmenter, ARPQuerier, a queue); the \
                 trie's six levels for a /24 against DIR-24-8's one load",
            ),
        },
        Row {
            experiment: exp.figure().into(),
            measure: "match_pre_sort (IntServ) against null_pre_fifo (IP router), ns/packet".into(),
            paper: format!(
                "goal: <= {GOAL_COSTLIEST:.0}x; IXP1200: IntServ 89.8% of line rate, the \
                 slowest"
            ),
            bricks: format!(
                "{mps:.1} against {npf:.1}: {mps_over_npf:.2}x (median of the rounds' \
                 ratios){}; the costliest here: {costliest}",
                mps_instr.map_or(String::new(), |r| format!(", {r:.2}x the instructions"))
            ),
            verdict: Verdict::from_check(
                mps_over_npf <= GOAL_COSTLIEST,
                "hash classification, a Virtual Clock deadline and an MDS-BinSort instead of a \
                 FIFO add a fixed cost per packet",
            ),
        },
    ];
    let counted: Vec<(&Point, Refs)> = points.iter().filter_map(|p| Some((p, p.refs?))).collect();
    rows.push(if counted.len() == points.len() {
        let words_of = |n: &str| {
            counted
                .iter()
                .find(|(p, _)| p.name == n)
                .map_or(0.0, |(_, r)| r.words)
        };
        let sorts_dearer = ["match_pre", "match_look", "tag_pre", "tag_look", "null_pre"]
            .iter()
            .all(|b| words_of(&format!("{b}_sort")) > words_of(&format!("{b}_fifo")));
        let match_dearer = words_of("match_pre_sort") > words_of("tag_pre_sort")
            && words_of("tag_pre_sort") > words_of("null_pre_sort");
        Row {
            experiment: "Table 4".into(),
            measure: "SRAM bandwidth per Mbit/s of link, from measured words".into(),
            paper: "0.75 (null_look_fifo) to 4.81 (match_pre_sort); sort > fifo; match > tag \
                    > null"
                .into(),
            bricks: format!(
                "{:.2} (null_look_fifo) to {:.2} (match_pre_sort)",
                cost::bandwidth_per_mbps(words_of("null_look_fifo")),
                cost::bandwidth_per_mbps(words_of("match_pre_sort"))
            ),
            verdict: Verdict::from_check(
                sorts_dearer && match_dearer,
                format!(
                    "sorting costs more words than a FIFO: {}; match > tag > null: {}",
                    if sorts_dearer {
                        "yes"
                    } else {
                        "NOT everywhere"
                    },
                    if match_dearer { "yes" } else { "no" }
                ),
            ),
        }
    } else {
        Row {
            experiment: "Table 4".into(),
            measure: "SRAM bandwidth per Mbit/s of link, from measured words".into(),
            paper: "0.75 (null_look_fifo) to 4.81 (match_pre_sort)".into(),
            bricks: "-".into(),
            verdict: Verdict::NotRun(
                "this build's elements do not count memory references (MEMREFS)".into(),
            ),
        }
    });
    rows.push(match (&block, &ours) {
        (Some(b), Some(o)) => {
            let oc192 = &o[5];
            Row {
                experiment: "Table 3".into(),
                measure: "sort block at OC-192: threads, SRAM, SRAM bandwidth".into(),
                paper: "22 threads, 17.41 MB, 25 Gbit/s (14.5 refs, 40 words)".into(),
                bricks: format!(
                    "{:.1} threads, {:.2} MB, {:.1} Gbit/s ({:.1} refs, {:.1} words)",
                    oc192.threads, oc192.sram_mb, oc192.bandwidth_gbps, b.refs, b.words
                ),
                verdict: Verdict::from_check(
                    b.refs <= paper_block.refs * 1.1 && b.words <= paper_block.words * 1.1,
                    format!(
                        "every resource linear in the link rate, as the paper concludes, and \
                         within 10% of its needs or below: {:.1} references and {:.1} words \
                         per packet against 14.5 and 40 (no locks, bins found from a bitmap \
                         and its summary), a 64-byte node per packet held against the 89 \
                         bytes its SRAM sizes imply",
                        b.refs, b.words
                    ),
                ),
            }
        }
        _ => Row {
            experiment: "Table 3".into(),
            measure: "sort block at OC-192: threads, SRAM, SRAM bandwidth".into(),
            paper: "22 threads, 17.41 MB, 25 Gbit/s (14.5 refs, 40 words)".into(),
            bricks: "-".into(),
            verdict: Verdict::NotRun(
                "needs the MDS-BinSort counts of Fig. 5: add --only fig5".into(),
            ),
        },
    });
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_architecture_sends_every_frame_out_of_port_1() {
        for a in Arch::ALL {
            let w = workload(&a, 500);
            let r = w.run().unwrap_or_else(|e| panic!("{}: {e}", a.name()));
            assert_eq!(r.delivered, 500, "{}", a.name());
            assert_eq!(r.counter("sink0", "count"), 0, "{}", a.name());
        }
        let r = ip_router(500).run().unwrap();
        assert_eq!(r.delivered, 500);
        assert!(workload_by_name("arch-tag_look_heap", 1).is_none());
        assert!(workload_by_name("arch-null_pre_fifo", 1).is_some());
    }
}
