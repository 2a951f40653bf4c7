//! Fig. 1 (§I, §II-A): the single-PC model. A PC router forwards at most
//! a fixed number of packets a second whatever their size (the
//! packet-rate bottleneck: CPU and memory latency, 640 kpps for the
//! paper's Xeon), and at most what its bus carries, which every packet
//! crosses twice (NIC to memory, memory to NIC): an 8 Gbit/s PCI-X bus
//! leaves 4 Gbit/s of traffic. The saturation forwarding rate is the
//! smaller of the two, so small frames are packet-rate bound and large
//! ones bus bound.
//!
//! Computed twice: with the paper's figures, and with this machine's
//! packet rate (one bricks IPv4 router's 64-byte rate: Fig. 5's on veths,
//! or measured here when Fig. 5 did not run) and the same bus.

use super::{cannot_use_namespaces, single, Experiment, Findings, Settings};
use crate::plot::{Chart, Series};
use crate::report::{Row, Table, Verdict};
use crate::Error;

/// §II-C: the most packets a second the paper's PC forwards.
pub const PAPER_PACKET_RATE: f64 = 640e3;
/// §I: the PCI-X bus, in bits per second; every packet crosses it twice.
pub const PAPER_BUS_BPS: f64 = 8e9;
/// The Ethernet frame sizes of the figure (bytes, FCS included).
pub const SIZES: [usize; 7] = [64, 128, 256, 512, 768, 1024, 1518];
/// Bytes on the wire around a frame: preamble and start delimiter (8),
/// inter-frame gap (12).
pub const WIRE_OVERHEAD: usize = 20;

/// The single-PC model: packets per second that a PC forwarding at most
/// `packet_rate` packets/s, whose bus carries `bus_bps` bits/s and which
/// moves every frame over it twice, forwards at `frame` bytes.
pub fn saturation_pps(packet_rate: f64, bus_bps: f64, frame: usize) -> f64 {
    packet_rate.min(bus_bps / (2.0 * frame.max(1) as f64 * 8.0))
}

/// The frame size (bytes) from which the bus, not the packet rate, is
/// the limit: where `bus_bps / (2 x 8 x size) = packet_rate`.
pub fn crossover_bytes(packet_rate: f64, bus_bps: f64) -> f64 {
    bus_bps / (16.0 * packet_rate.max(1e-9))
}

/// Frames per second an Ethernet link of `bps` carries at `frame` bytes
/// (FCS included; plus preamble and gap).
pub fn line_rate_pps(bps: f64, frame: usize) -> f64 {
    bps / ((frame + WIRE_OVERHEAD) as f64 * 8.0)
}

/// Gbit/s of frames of `frame` bytes at `pps`.
pub fn gbps(pps: f64, frame: usize) -> f64 {
    pps * frame as f64 * 8.0 / 1e9
}

/// This machine's packet rate: Fig. 5's when it ran, else one router's
/// 64-byte rate on veths (root) or in memory.
fn packet_rate(s: &Settings, found: &mut Findings) -> Result<(f64, String), Error> {
    if let Some(p) = &found.packet_rate {
        return Ok(p.clone());
    }
    let p = match cannot_use_namespaces(s) {
        None => {
            let r = single::veth_rate_64(s)?;
            (r, "one bricks IPv4 router on veths, 64 bytes".to_string())
        }
        Some(why) => {
            println!("(veths not used: {why}; the packet rate is measured in memory)");
            let r = single::memory_rate_64(s)?;
            (r, "one bricks IPv4 router in memory, 64 bytes".to_string())
        }
    };
    found.packet_rate = Some(p.clone());
    Ok(p)
}

/// Runs Fig. 1.
pub fn run(s: &Settings, found: &mut Findings) -> Result<Vec<Row>, Error> {
    let exp = Experiment::Fig1;
    let (here, where_) = packet_rate(s, found)?;
    let cross_paper = crossover_bytes(PAPER_PACKET_RATE, PAPER_BUS_BPS);
    let cross_here = crossover_bytes(here, PAPER_BUS_BPS);
    let mut t = Table::new(&[
        "frame (bytes)",
        "paper model (kpps)",
        "paper model (Gbit/s)",
        "this machine's rate (kpps)",
        "this machine's rate (Gbit/s)",
        "1 Gbit/s line (kpps)",
    ]);
    for &f in &SIZES {
        let p = saturation_pps(PAPER_PACKET_RATE, PAPER_BUS_BPS, f);
        let h = saturation_pps(here, PAPER_BUS_BPS, f);
        t.push(vec![
            f.to_string(),
            format!("{:.0}", p / 1e3),
            format!("{:.2}", gbps(p, f)),
            format!("{:.0}", h / 1e3),
            format!("{:.2}", gbps(h, f)),
            format!("{:.0}", line_rate_pps(1e9, f) / 1e3),
        ]);
    }
    println!(
        "Fig. 1: saturation rate = min(packet rate, bus / (2 x frame bits)), bus {:.0} Gbit/s \
         ({:.0} Gbit/s of traffic); packet rate {:.0} kpps (paper) and {:.0} kpps ({where_})\n",
        PAPER_BUS_BPS / 1e9,
        PAPER_BUS_BPS / 2e9,
        PAPER_PACKET_RATE / 1e3,
        here / 1e3
    );
    print!("{}", t.render());

    let curve = |rate: f64| -> Vec<(f64, f64)> {
        (64..=1518)
            .step_by(2)
            .map(|f| (f as f64, gbps(saturation_pps(rate, PAPER_BUS_BPS, f), f)))
            .collect()
    };
    Chart {
        title: "Fig. 1: single-PC model, saturation forwarding rate".into(),
        x_label: "Ethernet frame size (bytes)".into(),
        y_label: "saturation forwarding rate (Gbit/s)".into(),
        log_x: false,
        series: vec![
            Series::measured(
                format!("model, this machine: {:.0} kpps, 8 Gbit/s bus", here / 1e3),
                curve(here),
            ),
            Series::reference(
                "model, paper: 640 kpps, 8 Gbit/s bus",
                curve(PAPER_PACKET_RATE),
            ),
        ],
    }
    .write_svg(&s.out.join("fig1-model.svg"))?;

    let p64 = saturation_pps(PAPER_PACKET_RATE, PAPER_BUS_BPS, 64);
    let p1518 = saturation_pps(PAPER_PACKET_RATE, PAPER_BUS_BPS, 1518);
    let bus_64 = PAPER_BUS_BPS / (16.0 * 64.0);
    Ok(vec![
        Row {
            experiment: exp.figure().into(),
            measure: "single-PC model with the paper's figures".into(),
            paper: "640 kpps for small frames, 4 Gbit/s for large ones".into(),
            bricks: format!(
                "{:.0} kpps at 64 B, {:.2} Gbit/s at 1518 B; the bus limits from {cross_paper:.0} B",
                p64 / 1e3,
                gbps(p1518, 1518)
            ),
            verdict: Verdict::from_check(
                (p64 - PAPER_PACKET_RATE).abs() < 1.0 && (gbps(p1518, 1518) - 4.0).abs() < 0.01,
                "min(packet rate, bus / (2 x frame bits)) gives the paper's two limits",
            ),
        },
        Row {
            experiment: exp.figure().into(),
            measure: "the model with this machine's packet rate".into(),
            paper: "small frames packet-rate bound (640 kpps)".into(),
            bricks: format!(
                "{:.0} kpps ({where_}), {:.1}x the paper's; the bus limits from {cross_here:.0} B",
                here / 1e3,
                here / PAPER_PACKET_RATE
            ),
            verdict: Verdict::from_check(
                here < bus_64,
                if here < bus_64 && cross_here > 1518.0 {
                    format!(
                        "64-byte frames are packet-rate bound ({:.0} kpps against the bus's \
                         {:.0}), and so is every Ethernet size: the bus would limit only from \
                         {cross_here:.0} bytes",
                        here / 1e3,
                        bus_64 / 1e3,
                    )
                } else if here < bus_64 {
                    format!(
                        "64-byte frames are packet-rate bound ({:.0} kpps against the bus's \
                         {:.0}); the bus limits from {cross_here:.0} bytes, against the \
                         paper's {cross_paper:.0}",
                        here / 1e3,
                        bus_64 / 1e3,
                    )
                } else {
                    format!(
                        "{:.0} kpps is above the 8 Gbit/s bus's {:.0} kpps at 64 bytes: such a \
                         PC would be bus bound at every size",
                        here / 1e3,
                        bus_64 / 1e3
                    )
                },
            ),
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paper_model_gives_its_two_limits() {
        // 64-byte frames: 8 Gbit/s / (2 x 512 bits) = 7.8 Mpps of bus, so
        // the 640 kpps packet rate limits.
        assert_eq!(saturation_pps(640e3, 8e9, 64), 640e3);
        // 1518-byte frames: 8e9 / (2 x 12,144) = 329,380 pps, 4 Gbit/s.
        let p = saturation_pps(640e3, 8e9, 1518);
        assert!((p - 329_380.7).abs() < 1.0, "{p}");
        assert!((gbps(p, 1518) - 4.0).abs() < 1e-9);
        // The bus takes over at 8e9 / (16 x 640e3) = 781.25 bytes.
        assert!((crossover_bytes(640e3, 8e9) - 781.25).abs() < 1e-9);
        assert_eq!(saturation_pps(640e3, 8e9, 781), 640e3);
        assert!(saturation_pps(640e3, 8e9, 782) < 640e3);
        // A faster machine meets the bus sooner: 2 Mpps from 250 bytes.
        assert!((crossover_bytes(2e6, 8e9) - 250.0).abs() < 1e-9);
    }

    #[test]
    fn line_rate_counts_preamble_and_gap() {
        // The paper's 1488 kpps: 64-byte frames on a gigabit link.
        assert!((line_rate_pps(1e9, 64) - 1_488_095.2).abs() < 1.0);
        assert!((line_rate_pps(10e9, 1518) - 812_743.8).abs() < 1.0);
    }
}
