//! Figs. 2 and 4 (§2.1): what one core forwards.
//!
//! Fig. 2: the forwarding rate of 64-byte packets as source-to-sink paths
//! are added (1 to 6, each receive -> Queue -> transmit, in memory here),
//! all on one worker. The paper's single core saturated at about 2.5 Mpps
//! and "adding extra flows did not help": the rate is flat in the number
//! of flows once the core is the limit.
//!
//! Fig. 4: full IP routing (Click's two-interface router,
//! `conf/ip-router.click`) against minimal forwarding (receive -> Queue ->
//! transmit) at 64 and 1,024 bytes. The paper: IP routing about 30 %
//! slower at 64 bytes, no difference at 1,024 bytes, where its 12 Gb/s of
//! links, not the CPU, are the limit. In memory there are no links: the
//! CPU rates are measured, and what 12 Gb/s of links would let through is
//! computed from them.
//!
//! Fig. 4 is also measured on veths (as root, with ethtool): `bricks gen`
//! in one network namespace sends as fast as it can through a bricks
//! router (one worker, its own CPU) in a second to `bricks sink` in a
//! third, once with the minimal path (`FromDevice -> EtherRewrite ->
//! Queue -> ToDevice`) and once with the IP path, at 64 and 1,024 bytes.
//! There the kernel's per-packet work on the veths plays the part the
//! paper's drivers played. Fig. 2's flows stay in memory: more veth lines
//! would only share the same two CPUs.

use super::Settings;
use crate::frames::{click_data, udp_frame};
use crate::measure::{callgrind_per_packet, time_ns as time, Sample, Workload};
use crate::multistage::single::{router_text, Line};
use crate::plot::{Chart, Series};
use crate::report::{within, Row, Table, Verdict};
use crate::Error;
use bricks_wire::Ipv4Addr;

/// Fig. 2(a): one core saturates at about 2.5 Mpps of 64-byte packets,
/// whatever the number of flows.
pub const PAPER_ONE_CORE_MPPS: f64 = 2.5;
/// Fig. 4: IP routing forwards about 30 % less than minimal forwarding at
/// 64 bytes (rate ratio 0.7).
pub const PAPER_IP_RATIO_64: f64 = 0.7;
/// Fig. 4: the links the paper's router had, which 1,024-byte packets
/// fill: "we can still forward at 12Gb/s".
pub const PAPER_LINK_BPS: f64 = 12e9;
/// A rate is "flat" in the number of flows when every point is within
/// this fraction of the one-flow rate.
pub const FLAT_TOLERANCE: f64 = 0.15;

/// Frames per second that `bps` of Ethernet carries at `size` bytes (the
/// frame without FCS; plus 4 bytes of FCS, 8 of preamble, 12 of gap).
pub fn line_rate_pps(bps: f64, size: usize) -> f64 {
    bps / ((size + 24) as f64 * 8.0)
}

/// Whether every rate is within `tol` of the first (the one-flow rate).
pub fn is_flat(rates: &[f64], tol: f64) -> bool {
    rates
        .first()
        .is_some_and(|&r1| rates.iter().all(|&r| within(r, r1, tol)))
}

/// The frame of flow `i`: 18.26.4.(99 + i) to 1.0.0.2, addressed to the IP
/// router's eth0.
fn frame(i: u8, size: usize) -> Vec<u8> {
    udp_frame(
        [0x00, 0x00, 0xc0, 0x3b, 0x71, 0xef],
        [0x00, 0x20, 0x6a, 0x12, 0x34, 0x56],
        Ipv4Addr::new(18, 26, 4, 99u8.wrapping_add(i)),
        Ipv4Addr::new(1, 0, 0, 2),
        size,
    )
}

/// `k` paths on one worker: source -> Queue -> sink, `packets` in all.
pub fn paths(k: usize, packets: u64, size: usize) -> Workload {
    let k = k.max(1);
    let mut text = String::new();
    let mut sinks = Vec::new();
    for i in 0..k {
        let n = packets / k as u64 + u64::from(i == 0) * (packets % k as u64);
        text.push_str(&format!(
            "src{i} :: InfiniteSource(DATA {}, LIMIT {n}, BURST 32) -> Queue(1024) -> sink{i} :: Discard;\n",
            click_data(&frame(i as u8, size))
        ));
        sinks.push(format!("sink{i}"));
    }
    Workload {
        name: format!("{k}-paths-{size}"),
        text,
        sinks,
        setup: Vec::new(),
        quiesce: Vec::new(),
    }
}

/// Click's IP router fed by a source on eth0, everything for 1.0.0.2
/// leaving by eth1 (its next hop already in the ARP table).
pub fn iprouter(packets: u64, size: usize) -> Workload {
    let src = format!(
        "InfiniteSource(DATA {}, LIMIT {packets}, BURST 32)",
        click_data(&frame(0, size))
    );
    let text = include_str!("../../../../conf/ip-router.click")
        .replace("FromDevice(eth0)", &src)
        .replace("FromDevice(eth1)", "Idle")
        .replace("ToDevice(eth0)", "Discard")
        .replace("ToDevice(eth1)", "Discard")
        .replace("toh :: ToHost", "toh :: Discard");
    Workload::new(format!("iprouter-{size}"), text, &["todevice1"]).with_setup(
        "arpq1",
        "insert",
        "1.0.0.2 00:00:C0:00:00:02 static",
    )
}

/// The workloads callgrind re-runs: `minimal-64`, `iprouter-64`,
/// `minimal-1024`, `iprouter-1024`.
pub fn workload_by_name(name: &str, packets: u64) -> Option<Workload> {
    let (kind, size) = name.split_once('-')?;
    let size: usize = size.parse().ok().filter(|s| (60..=1500).contains(s))?;
    match kind {
        "minimal" => Some(paths(1, packets, size)),
        "iprouter" => Some(iprouter(packets, size)),
        _ => None,
    }
}

/// One size of Fig. 4.
struct Cost {
    size: usize,
    minimal_ns: Sample,
    ip_ns: Sample,
    minimal_instr: Option<f64>,
    ip_instr: Option<f64>,
}

/// Runs Figs. 2 and 4.
pub fn run(s: &Settings) -> Result<Vec<Row>, Error> {
    let packets = s.pick(10_000_000, 1_000_000);
    let flows: Vec<usize> = (1..=6).collect();
    let mut t = Table::new(&["flows", "Mpps", "ns/packet", "rate / 1 flow"]);
    let mut rates = Vec::new();
    for &k in &flows {
        let ns = time(|n| paths(k, n, 64), packets, s.runs)?;
        let mpps = 1e3 / ns.median();
        rates.push(mpps);
        t.push(vec![
            k.to_string(),
            ns.map(|v| 1e3 / v).show(2),
            ns.show(1),
            format!("{:.2}", mpps / rates[0]),
        ]);
    }
    println!(
        "Fig. 2: 64-byte packets on one worker, k paths source -> Queue -> sink, {packets} packets per run\n"
    );
    print!("{}", t.render());

    let mut costs = Vec::new();
    for size in [64usize, 1024] {
        let minimal_ns = time(|n| paths(1, n, size), packets, s.runs)?;
        let ip_ns = time(|n| iprouter(n, size), packets, s.runs)?;
        let (minimal_instr, ip_instr) = match &s.callgrind {
            Some(exe) => {
                let (small, big) = s.pick((10_000, 210_000), (5_000, 55_000));
                let count = |kind: &str| {
                    let args: Vec<String> = ["bench", "vr", "--one", &format!("{kind}-{size}")]
                        .iter()
                        .map(|a| a.to_string())
                        .collect();
                    callgrind_per_packet(exe, &args, small, big)
                };
                (Some(count("minimal")?), Some(count("iprouter")?))
            }
            None => (None, None),
        };
        costs.push(Cost {
            size,
            minimal_ns,
            ip_ns,
            minimal_instr,
            ip_instr,
        });
    }
    let mut t = Table::new(&[
        "bytes",
        "path",
        "Mpps (CPU)",
        "ns/packet",
        "instr/packet",
        "rate / minimal",
        "Mpps with 12 Gb/s of links",
    ]);
    let show_instr = |i: Option<f64>| i.map_or("-".into(), |i| format!("{i:.0}"));
    for c in &costs {
        let link = line_rate_pps(PAPER_LINK_BPS, c.size) / 1e6;
        let (m, ip) = (1e3 / c.minimal_ns.median(), 1e3 / c.ip_ns.median());
        t.push(vec![
            c.size.to_string(),
            "minimal".into(),
            format!("{m:.2}"),
            c.minimal_ns.show(1),
            show_instr(c.minimal_instr),
            "1.00".into(),
            format!("{:.2}", m.min(link)),
        ]);
        t.push(vec![
            c.size.to_string(),
            "IP router".into(),
            format!("{ip:.2}"),
            c.ip_ns.show(1),
            show_instr(c.ip_instr),
            format!("{:.2}", ip / m),
            format!("{:.2}", ip.min(link)),
        ]);
    }
    println!(
        "\nFig. 4: conf/ip-router.click against minimal forwarding (source -> Queue -> sink), one worker\n"
    );
    print!("{}", t.render());

    Chart {
        title: "Fig. 2: 64-byte forwarding rate against flows, one worker".into(),
        x_label: "flows (source-to-sink paths)".into(),
        y_label: "rate relative to one flow".into(),
        log_x: false,
        series: vec![
            Series::measured(
                "bricks (in memory)",
                flows
                    .iter()
                    .zip(&rates)
                    .map(|(&k, &r)| (k as f64, r / rates[0]))
                    .collect(),
            ),
            Series::reference(
                format!("paper: flat at ~{PAPER_ONE_CORE_MPPS} Mpps"),
                vec![(1.0, 1.0), (6.0, 1.0)],
            ),
        ],
    }
    .write_svg(&s.out.join("fig2-flows.svg"))?;

    let ratio = |c: &Cost| c.minimal_ns.median() / c.ip_ns.median();
    let linked = |c: &Cost| {
        let link = line_rate_pps(PAPER_LINK_BPS, c.size);
        let (m, ip) = (1e9 / c.minimal_ns.median(), 1e9 / c.ip_ns.median());
        ip.min(link) / m.min(link)
    };
    Chart {
        title: "Fig. 4: IP routing rate relative to minimal forwarding".into(),
        x_label: "packet size (bytes)".into(),
        y_label: "IP routing rate / minimal forwarding rate".into(),
        log_x: false,
        series: vec![
            Series::measured(
                "bricks, CPU only (in memory)",
                costs.iter().map(|c| (c.size as f64, ratio(c))).collect(),
            ),
            Series::measured(
                "bricks behind 12 Gb/s of links (computed)",
                costs.iter().map(|c| (c.size as f64, linked(c))).collect(),
            ),
            Series::reference(
                "paper (one core)",
                vec![(64.0, PAPER_IP_RATIO_64), (1024.0, 1.0)],
            ),
        ],
    }
    .write_svg(&s.out.join("fig4-iprouting.svg"))?;

    let flat = is_flat(&rates, FLAT_TOLERANCE);
    let (lo, hi) = rates
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &r| (a.min(r), b.max(r)));

    let mut rows = vec![Row {
        experiment: "Fig. 2".into(),
        measure: "64-byte rate against flows (1-6), one worker".into(),
        paper: format!("~{PAPER_ONE_CORE_MPPS} Mpps, flat: more flows do not help"),
        bricks: format!(
            "{:.1} Mpps at 1 flow, {:.1} at 6 ({:.1}x the paper)",
            rates[0],
            rates[rates.len() - 1],
            rates[0] / PAPER_ONE_CORE_MPPS
        ),
        verdict: Verdict::from_check(
            flat,
            format!(
                "every count within {:.0} % of one flow is flat; range {:.2}-{:.2} of it",
                FLAT_TOLERANCE * 100.0,
                lo / rates[0],
                hi / rates[0]
            ),
        ),
    }];
    let c64 = &costs[0];
    let r64 = ratio(c64);
    let instr = match (c64.minimal_instr, c64.ip_instr) {
        (Some(m), Some(i)) => format!(", {m:.0} against {i:.0} instructions"),
        _ => String::new(),
    };
    rows.push(Row {
        experiment: "Fig. 4".into(),
        measure: "IP routing rate / minimal forwarding rate, 64 bytes".into(),
        paper: format!("{PAPER_IP_RATIO_64:.1} (about 30 % slower)"),
        bricks: format!(
            "{r64:.2} ({:.1} against {:.1} ns/packet{instr})",
            c64.minimal_ns.median(),
            c64.ip_ns.median()
        ),
        verdict: Verdict::from_check(
            within(r64, PAPER_IP_RATIO_64, 0.15),
            if r64 < PAPER_IP_RATIO_64 {
                format!(
                    "IP routing costs {:.1}x minimal forwarding here: bricks' minimal path has no \
                     device or descriptor work (about 400 ns a packet on the paper's core), so \
                     the IP work weighs more",
                    1.0 / r64
                )
            } else {
                format!("ratio {:.2} of the paper's", r64 / PAPER_IP_RATIO_64)
            },
        ),
    });
    let c1k = &costs[1];
    let link = line_rate_pps(PAPER_LINK_BPS, 1024) / 1e6;
    let ip1k = 1e3 / c1k.ip_ns.median();
    rows.push(Row {
        experiment: "Fig. 4".into(),
        measure: "IP routing against minimal forwarding, 1,024 bytes".into(),
        paper: "no difference: 12 Gb/s of links limit".into(),
        bricks: format!(
            "CPU rates {:.1} and {ip1k:.1} Mpps, links {link:.2} Mpps: {:.2} with links",
            1e3 / c1k.minimal_ns.median(),
            linked(c1k)
        ),
        verdict: Verdict::from_check(
            ip1k >= link,
            if ip1k >= link {
                format!(
                    "IP routing's CPU rate is {:.1}x what 12 Gb/s carries, so the links limit \
                     both paths (CPU only: {:.2})",
                    ip1k / link,
                    ratio(c1k)
                )
            } else {
                format!(
                    "IP routing's CPU rate is below the links' {link:.2} Mpps: the CPU limits it \
                     (CPU only: {:.2})",
                    ratio(c1k)
                )
            },
        ),
    });
    rows.extend(veth_rows(s));
    Ok(rows)
}

/// Why Fig. 4 cannot be measured on veths here, if it cannot.
fn veth_unavailable(s: &Settings) -> Option<String> {
    if !bricks_netns::is_root() {
        return Some("needs root to build network namespaces (sudo bricks bench vr)".into());
    }
    if !bricks_netns::have_ethtool() {
        return Some("needs ethtool (apt-get install ethtool)".into());
    }
    if s.exe.is_none() {
        return Some("the bricks binary was not found".into());
    }
    None
}

/// The minimal path on the veth line: receive, rewrite the Ethernet
/// addresses for the next hop, queue, transmit.
fn veth_minimal(r1_mac: &str, s0_mac: &str) -> String {
    format!(
        "FromDevice(r0, BACKEND auto) -> EtherRewrite({r1_mac}, {s0_mac}) -> q :: Queue \
         -> ToDevice(r1, BACKEND auto);\n"
    )
}

/// The IP path on the veth line.
fn veth_ip(r1_mac: &str, s0_mac: &str) -> String {
    router_text(
        "FromDevice(r0, BACKEND auto)",
        "ToDevice(r1, BACKEND auto)",
        r1_mac,
        s0_mac,
    )
}

/// Offered and forwarded packets/s at each of `frames` bytes through a
/// veth line running `conf`: a warm-up run, then `s.runs` timed runs each.
fn veth_rates(
    s: &Settings,
    prefix: &str,
    conf: fn(&str, &str) -> String,
    frames: &[usize],
) -> Result<Vec<(Sample, Sample)>, Error> {
    let exe = s
        .exe
        .as_deref()
        .ok_or_else(|| crate::multistage::procs::run_error("veth line", "no bricks binary"))?;
    let secs: f64 = s.pick(3.0, 1.0);
    let mut line = Line::build_with(exe, prefix, conf)?;
    let mut out = Vec::new();
    for &frame in frames {
        line.run(frame, secs.min(1.0))?;
        let (mut offered, mut forwarded) = (Vec::new(), Vec::new());
        for _ in 0..s.runs {
            let (o, f) = line.run(frame, secs)?;
            offered.push(o);
            forwarded.push(f);
        }
        out.push((Sample(offered), Sample(forwarded)));
    }
    Ok(out)
}

/// Fig. 4 on veths: IP routing against minimal forwarding at 64 and 1,024
/// bytes, each path a router of one worker between two veths.
fn veth_rows(s: &Settings) -> Vec<Row> {
    let fig = "Fig. 4";
    let measure =
        |size: usize| format!("on veths: IP routing rate / minimal forwarding rate, {size} bytes");
    let paper = |size: usize| {
        if size == 64 {
            format!("{PAPER_IP_RATIO_64:.1} (about 30 % slower)")
        } else {
            "no difference (1.0)".to_string()
        }
    };
    let frames = [64usize, 1024];
    let failed = |why: String| -> Vec<Row> {
        frames
            .iter()
            .map(|&f| Row {
                experiment: fig.into(),
                measure: measure(f),
                paper: paper(f),
                bricks: "-".into(),
                verdict: Verdict::NotRun(why.clone()),
            })
            .collect()
    };
    if let Some(why) = veth_unavailable(s) {
        println!("\nFig. 4 on veths not run: {why}");
        return failed(why);
    }
    let measured = veth_rates(s, "vrf4m", veth_minimal, &frames)
        .and_then(|m| Ok((m, veth_rates(s, "vrf4i", veth_ip, &frames)?)));
    let (minimal, ip) = match measured {
        Ok(v) => v,
        Err(e) => {
            println!("\nFig. 4 on veths failed: {e}");
            return failed(format!("error: {e}"));
        }
    };
    let mut t = Table::new(&[
        "bytes (FCS included)",
        "offered to minimal (Mpps)",
        "minimal (Mpps)",
        "offered to IP (Mpps)",
        "IP router (Mpps)",
        "IP / minimal",
    ]);
    let mut rows = Vec::new();
    for (i, &frame) in frames.iter().enumerate() {
        let ((m_off, m_fwd), (r_off, r_fwd)) = (&minimal[i], &ip[i]);
        let (m, r) = (m_fwd.median(), r_fwd.median());
        let ratio = r / m.max(1.0);
        t.push(vec![
            frame.to_string(),
            m_off.map(|v| v / 1e6).show(3),
            m_fwd.map(|v| v / 1e6).show(3),
            r_off.map(|v| v / 1e6).show(3),
            r_fwd.map(|v| v / 1e6).show(3),
            format!("{ratio:.2}"),
        ]);
        // A path that forwards (nearly) all it is offered is not saturated:
        // the generator, not the router, then sets both rates.
        let kept_up = |off: &Sample, fwd: &Sample| fwd.median() >= 0.95 * off.median();
        let target = if frame == 64 { PAPER_IP_RATIO_64 } else { 1.0 };
        let verdict = if kept_up(m_off, m_fwd) && kept_up(r_off, r_fwd) {
            Verdict::from_check(
                false,
                format!(
                    "both paths forwarded what the generator offered ({:.3} and {:.3} Mpps): the \
                     generator, not the router, is the limit on this machine, so the ratio says \
                     nothing of the IP work",
                    m_off.median() / 1e6,
                    r_off.median() / 1e6
                ),
            )
        } else {
            Verdict::from_check(
                within(ratio, target, 0.15),
                format!(
                    "IP routing keeps {:.0} % of the minimal path's rate with the veths' kernel \
                     work on the router's CPU (paper: {:.0} %)",
                    ratio * 100.0,
                    target * 100.0
                ),
            )
        };
        rows.push(Row {
            experiment: fig.into(),
            measure: measure(frame),
            paper: paper(frame),
            bricks: format!("{ratio:.2} ({:.3} against {:.3} Mpps)", r / 1e6, m / 1e6),
            verdict,
        });
    }
    println!(
        "\nFig. 4 on veths: bricks gen -> router (one worker) -> bricks sink, three namespaces\n"
    );
    print!("{}", t.render());
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_rate_counts_preamble_gap_and_fcs() {
        // 64-byte frames (60 + FCS) at 10 Gb/s: the classic 14.88 Mpps.
        assert!((line_rate_pps(10e9, 60) / 1e6 - 14.880_952).abs() < 1e-5);
        // 12 Gb/s of 1,024-byte frames: 1.43 Mpps.
        assert!((line_rate_pps(12e9, 1024) / 1e6 - 1.431_297).abs() < 1e-5);
    }

    #[test]
    fn flatness() {
        assert!(is_flat(&[10.0, 9.0, 11.0, 8.6], 0.15));
        assert!(!is_flat(&[10.0, 9.0, 11.6], 0.15));
        assert!(!is_flat(&[], 0.15));
    }

    #[test]
    fn workloads_deliver_every_packet() {
        for k in [1, 3] {
            let r = paths(k, 1000, 64).run().unwrap();
            assert_eq!(r.delivered, 1000);
        }
        let r = iprouter(1000, 1024).run().unwrap();
        assert_eq!(r.delivered, 1000);
        assert!(workload_by_name("iprouter-64", 10).is_some());
        assert!(workload_by_name("minimal-1024", 10).is_some());
        assert!(workload_by_name("minimal-9", 10).is_none());
        assert!(workload_by_name("other-64", 10).is_none());
    }
}
