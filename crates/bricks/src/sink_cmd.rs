//! `bricks sink`: a traffic receiver that is a bricks configuration:
//! `FromDevice -> TrafficSink`. The command writes the configuration and
//! turns the sink's counters into a report (text or one JSON object).

use crate::gen_cmd::{bind_devices, seconds, Backend};
use crate::runner::{self, si, RunSettings};
use bricks_element::Stats;
use bricks_elements::measure::traffic_sink::LATENCY_BUCKETS;
use std::fmt::Write as _;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:\n  \
    bricks sink veth1 --duration 12 --expect 1000000\n  \
    bricks sink eth0 --json --threads 2\n  \
    bricks sink rx0 -d rx0=pcap:captured.pcap --expect 1000   # offline, from a capture")]
pub(crate) struct SinkArgs {
    /// Interface to receive on.
    pub iface: String,
    /// Stop after this many seconds (else at Ctrl-C, or when a capture
    /// bound with -d ends).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Packets the generator sent (`bricks gen` prints it): loss then
    /// includes the tail the sink cannot see.
    #[arg(long, value_name = "N")]
    pub expect: Option<u64>,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Device backend.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: Backend,
    /// Worker threads; the interface's receive queues are shared out
    /// among them.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Where the probe starts in the UDP payload (as given to GenStamp).
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Print the configuration and exit without running it.
    #[arg(long)]
    pub print_config: bool,
    /// Back the interface with a capture instead of a live device:
    /// NAME=pcap:IN[,OUT] (IN is what arrives).
    #[arg(short = 'd', long = "device", value_name = "NAME=pcap:IN[,OUT]")]
    pub devices: Vec<String>,
}

/// The configuration `bricks sink` runs.
pub(crate) fn config(a: &SinkArgs) -> anyhow::Result<String> {
    anyhow::ensure!(
        !a.iface.is_empty()
            && !a
                .iface
                .contains(|c: char| c.is_whitespace() || ",;()\"".contains(c)),
        "`{}` is not an interface name",
        a.iface
    );
    let offset = if a.offset > 0 {
        format!("(OFFSET {})", a.offset)
    } else {
        String::new()
    };
    // PROMISC true: a sink measures whatever arrives on its interface, like
    // a capture, not only the frames addressed to its MAC.
    Ok(format!(
        "// bricks sink {iface}\nrx :: FromDevice({iface}{backend}, PROMISC true) -> sink :: TrafficSink{offset};\n",
        iface = a.iface,
        backend = a.backend.arg(),
    ))
}

/// Latency percentiles in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Latency {
    pub samples: u64,
    pub min: u64,
    pub mean: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

/// What a sink saw, from TrafficSink's counters (summed over workers).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SinkReport {
    pub packets: u64,
    pub bytes: u64,
    pub probes: u64,
    pub other: u64,
    pub flows: u64,
    /// What the generator sent, if told.
    pub expected: Option<u64>,
    /// Probes missing: from `expected` if given, else the gaps in flows.
    pub lost: u64,
    pub duplicates: u64,
    pub reordered: u64,
    pub reorder_sequences: u64,
    pub future_stamps: u64,
    /// The longest time without probes: of the stream, of any one flow.
    pub max_gap_ns: u64,
    pub max_flow_gap_ns: u64,
    pub latency: Latency,
    /// Packets and bits per second between the first and the last packet.
    pub pps: u64,
    pub bps: u64,
    /// Seconds the sink ran.
    pub elapsed: f64,
    /// Probes per latency bucket: (upper bound in microseconds, or `None`
    /// for the last, open bucket; count).
    pub histogram: Vec<(Option<u64>, u64)>,
}

/// Ethernet adds a preamble and start delimiter (8 bytes), the FCS (4)
/// and the gap between frames (12) to every frame on the wire.
const WIRE_OVERHEAD: u64 = 24;

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

impl SinkReport {
    pub(crate) fn from_stats(s: &Stats, expected: Option<u64>, elapsed: f64) -> SinkReport {
        let g = |c: &str| s.get(c).unwrap_or(0);
        let unique = g("probes").saturating_sub(g("duplicates"));
        SinkReport {
            packets: g("count"),
            bytes: g("bytes"),
            probes: g("probes"),
            other: g("other"),
            flows: g("flows"),
            expected,
            lost: match expected {
                Some(n) => n.saturating_sub(unique),
                None => g("lost"),
            },
            duplicates: g("duplicates"),
            reordered: g("reordered"),
            reorder_sequences: g("reorder_sequences"),
            future_stamps: g("future_stamps"),
            max_gap_ns: g("max_gap_ns"),
            max_flow_gap_ns: g("max_flow_gap_ns"),
            latency: Latency {
                samples: g("latency_samples"),
                min: g("latency_min_ns"),
                mean: g("latency_mean_ns"),
                p50: g("latency_p50_ns"),
                p90: g("latency_p90_ns"),
                p99: g("latency_p99_ns"),
                p999: g("latency_p999_ns"),
                max: g("latency_max_ns"),
            },
            pps: g("rate_pps"),
            bps: g("rate_bps"),
            histogram: LATENCY_BUCKETS
                .iter()
                .enumerate()
                .map(|(k, name)| {
                    let bound = (k + 1 < LATENCY_BUCKETS.len()).then_some(1u64 << k);
                    (bound, g(name))
                })
                .collect(),
            elapsed,
        }
    }

    /// What loss is a share of: what was sent, or what the flows' sequence
    /// numbers show was sent up to the last one received.
    fn sent(&self) -> u64 {
        self.expected
            .unwrap_or_else(|| self.probes.saturating_sub(self.duplicates) + self.lost)
    }

    /// Gbit/s on the wire: frames plus preamble, FCS and gap.
    fn wire_bps(&self) -> u64 {
        if self.packets == 0 {
            return 0;
        }
        let avg = self.bytes as f64 / self.packets as f64;
        (self.pps as f64 * (avg + WIRE_OVERHEAD as f64) * 8.0) as u64
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        let l = &self.latency;
        serde_json::json!({
            "packets": self.packets,
            "bytes": self.bytes,
            "probes": self.probes,
            "other_packets": self.other,
            "flows": self.flows,
            "elapsed_s": self.elapsed,
            "mpps": self.pps as f64 / 1e6,
            "gbps": self.bps as f64 / 1e9,
            "gbps_wire": self.wire_bps() as f64 / 1e9,
            "expected": self.expected,
            "lost": self.lost,
            "loss_pct": pct(self.lost, self.sent()),
            "duplicates": self.duplicates,
            "reordered": self.reordered,
            "reordered_pct": pct(self.reordered, self.probes),
            "reorder_sequences": self.reorder_sequences,
            "future_stamps": self.future_stamps,
            "max_gap_ms": self.max_gap_ns as f64 / 1e6,
            "max_flow_gap_ms": self.max_flow_gap_ns as f64 / 1e6,
            "latency_ns": {
                "samples": l.samples,
                "min": l.min,
                "mean": l.mean,
                "p50": l.p50,
                "p90": l.p90,
                "p99": l.p99,
                "p999": l.p999,
                "max": l.max,
                "histogram": self.histogram.iter().filter(|(_, n)| *n > 0).map(|(b, n)| {
                    serde_json::json!({"below_us": b, "count": n})
                }).collect::<Vec<_>>(),
            },
        })
    }

    /// The latency histogram as bars, from the first to the last bucket
    /// that has probes.
    fn histogram_text(&self) -> String {
        let used: Vec<usize> = (0..self.histogram.len())
            .filter(|&k| self.histogram[k].1 > 0)
            .collect();
        let (Some(&first), Some(&last)) = (used.first(), used.last()) else {
            return String::new();
        };
        let most = self.histogram.iter().map(|h| h.1).max().unwrap_or(1).max(1);
        let total: u64 = self.histogram.iter().map(|h| h.1).sum();
        let mut s = String::from("  latency histogram\n");
        for &(bound, n) in &self.histogram[first..=last] {
            let label = match bound {
                Some(b) => format!("< {}", ns(b * 1000)),
                None => format!(">= {}", ns((1u64 << (self.histogram.len() - 1)) * 1000)),
            };
            let bar = "#".repeat(((n * 40).div_ceil(most)) as usize);
            let _ = writeln!(s, "    {label:>10} {n:>10} {:>6.2}% {bar}", pct(n, total));
        }
        s
    }

    pub(crate) fn text(&self, iface: &str) -> String {
        let mut s = format!(
            "bricks sink {iface}: {} packets, {} bytes in {:.3} s\n",
            self.packets, self.bytes, self.elapsed
        );
        let _ = writeln!(
            s,
            "  rate        {} pkt/s, {}bit/s ({}bit/s on the wire), first to last probe",
            si(self.pps as f64),
            si(self.bps as f64),
            si(self.wire_bps() as f64)
        );
        let _ = writeln!(
            s,
            "  probes      {} in {} flows; {} other packets",
            self.probes, self.flows, self.other
        );
        let of = match self.expected {
            Some(n) => format!("of {n} sent"),
            None => "in the flows' sequences (pass --expect N to count the tail)".into(),
        };
        let _ = writeln!(
            s,
            "  lost        {} ({:.3}%) {of}",
            self.lost,
            pct(self.lost, self.sent())
        );
        let _ = writeln!(
            s,
            "  reordered   {} ({:.3}%) in {} sequences",
            self.reordered,
            pct(self.reordered, self.probes),
            self.reorder_sequences
        );
        let _ = writeln!(s, "  duplicates  {}", self.duplicates);
        let l = &self.latency;
        if l.samples > 0 {
            let _ = writeln!(
                s,
                "  latency     p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (min {}, mean {}, {} samples)",
                ns(l.p50),
                ns(l.p90),
                ns(l.p99),
                ns(l.p999),
                ns(l.max),
                ns(l.min),
                ns(l.mean),
                l.samples
            );
        }
        let _ = write!(s, "{}", self.histogram_text());
        if self.future_stamps > 0 {
            let _ = writeln!(
                s,
                "  warning     {} probes stamped after they arrived: generator and sink do not share a clock",
                self.future_stamps
            );
        }
        s
    }
}

/// `850 ns`, `12.3 us`, `4.56 ms`, `1.20 s`.
fn ns(v: u64) -> String {
    let f = v as f64;
    if v < 1_000 {
        format!("{v} ns")
    } else if v < 1_000_000 {
        format!("{:.1} us", f / 1e3)
    } else if v < 1_000_000_000 {
        format!("{:.2} ms", f / 1e6)
    } else {
        format!("{:.2} s", f / 1e9)
    }
}

pub(crate) fn sink(a: &SinkArgs) -> anyhow::Result<ExitCode> {
    let text = config(a)?;
    if a.print_config {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    bind_devices(&a.devices)?;
    let settings = RunSettings {
        threads: a.threads.max(1),
        duration: seconds("--duration", a.duration)?,
        quiet: true,
        ..RunSettings::default()
    };
    let summary = runner::run_text(&format!("<bricks sink {}>", a.iface), &text, &settings)?;
    let stats = summary.stats("sink").cloned().unwrap_or_default();
    let report = SinkReport::from_stats(&stats, a.expect, summary.elapsed.as_secs_f64());
    if a.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.text(&a.iface));
    }
    Ok(runner::exit_status(&summary))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(pairs: &[(&'static str, u64)]) -> Stats {
        let mut s = Stats::default();
        for &(k, v) in pairs {
            s.counter(k, v);
        }
        s
    }

    #[test]
    fn loss_from_expect_includes_the_tail() {
        let s = stats(&[
            ("count", 990),
            ("bytes", 990 * 64),
            ("probes", 990),
            ("duplicates", 2),
            ("lost", 5),
            ("flows", 4),
        ]);
        let r = SinkReport::from_stats(&s, Some(1000), 1.0);
        assert_eq!(r.lost, 12);
        let j = r.json();
        assert_eq!(j["lost"], 12);
        assert!((j["loss_pct"].as_f64().unwrap() - 1.2).abs() < 1e-9);
        let r = SinkReport::from_stats(&s, None, 1.0);
        assert_eq!(r.lost, 5);
        // 988 distinct received + 5 missing in the flows.
        assert!((r.json()["loss_pct"].as_f64().unwrap() - 500.0 / 993.0).abs() < 1e-9);
        assert!(r.text("x").contains("--expect"));
    }

    #[test]
    fn report_shows_rates_and_latency() {
        let s = stats(&[
            ("count", 1000),
            ("bytes", 64_000),
            ("probes", 1000),
            ("reordered", 10),
            ("reorder_sequences", 4),
            ("latency_samples", 1000),
            ("latency_p50_ns", 12_345),
            ("latency_max_ns", 2_500_000),
            ("rate_pps", 1_000_000),
            ("rate_bps", 512_000_000),
        ]);
        let r = SinkReport::from_stats(&s, Some(1000), 2.0);
        let t = r.text("eth9");
        assert!(
            t.contains("1.00M pkt/s, 512.00Mbit/s (704.00Mbit/s on the wire)"),
            "{t}"
        );
        assert!(t.contains("reordered   10 (1.000%) in 4 sequences"), "{t}");
        assert!(t.contains("p50 12.3 us"), "{t}");
        assert!(t.contains("max 2.50 ms"), "{t}");
        let j = r.json();
        assert_eq!(j["latency_ns"]["p50"], 12_345);
        assert_eq!(j["reorder_sequences"], 4);
        assert_eq!(j["mpps"], 1.0);
    }

    #[test]
    fn configuration_builds() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            sink: SinkArgs,
        }
        let a = Cli::try_parse_from(["sink", "stest0", "--offset", "4", "--backend", "xdp"])
            .unwrap()
            .sink;
        assert_eq!(
            config(&a).unwrap(),
            "// bricks sink stest0\n\
             rx :: FromDevice(stest0, BACKEND xdp, PROMISC true) -> sink :: TrafficSink(OFFSET 4);\n"
        );
    }
}
