//! `TrafficSink`: receives probes stamped by `GenStamp` and measures what
//! the path between did to them: loss, duplicates, reordering (RouteBricks
//! §6.2), one-way latency, throughput.
//!
//! Per-flow state lives in the instance that sees the flow: receive-side
//! scaling keeps a flow on one queue and so on one worker, which makes the
//! loss and reordering counters of several workers add up. Latency
//! percentiles do not add up; every instance records into its own
//! histogram and folds it into one shared by all workers every 100 ms and
//! at shutdown, and only worker 0's instance reports the merged
//! percentiles, so that the sum over workers is the merged figure.

use super::probe::{elapsed48, extend_seq, Probe};
use super::{
    monotonic_ns,
    probe::{locate_udp, UdpAt},
    FlowMap,
};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The `TrafficSink` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TrafficSink",
    ports: "1/0",
    processing: "h/",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "measures loss, reordering and latency of GenStamp probes",
    synopsis: "TrafficSink([OFFSET])",
    description: "Counts every packet and byte it receives and drops them. Packets carrying \
        a GenStamp probe OFFSET bytes into their UDP payload are followed per flow (the \
        probe's flow id from its IP source: several generators may feed one sink): the \
        sequence number restores a flow's order, so the sink counts packets missing from \
        it (`lost`: sequence numbers below the highest seen that never arrived), packets \
        that arrived twice (`duplicates`), and reordering as RouteBricks §6.2 measures it: \
        a packet is reordered if a later packet of its flow arrived before it, and \
        consecutive reordered packets of a flow form one reordered sequence (for 1 4 2 3 5, \
        2 and 3 are reordered, in one sequence). Duplicates are recognised within the 64 \
        sequence numbers below the highest seen; older ones count as late arrivals. The \
        sink cannot know what the generator sent after the last packet it received, so \
        tail loss is not in `lost`: compare `probes - duplicates` with the generator's \
        count (`bricks sink --expect N` does). Latency is the sink's CLOCK_MONOTONIC when \
        the batch arrives minus the probe's transmit time, so generator and sink must run \
        on one machine (two processes or namespaces are fine); percentiles come from an \
        HDR histogram with 3 significant digits, in ns. With several workers, each flow \
        stays on one worker (RSS) and the counters add up; the latency counters are \
        reported once, for all workers. Start the sink before the generator: a flow's \
        packets before the first one received count as lost.",
    ports: "one push input; no outputs",
    keywords: &[Keyword {
        name: "OFFSET",
        ty: "unsigned (even)",
        default: Some("0"),
        doc: "where the probe starts in the UDP payload (as given to GenStamp)",
    }],
    counters: &[
        ("count", "packets received"),
        ("bytes", "bytes received"),
        ("probes", "packets carrying a probe, duplicates included"),
        ("other", "packets without a probe"),
        ("other_bytes", "bytes of packets without a probe"),
        ("flows", "distinct probe flows"),
        (
            "lost",
            "probes missing from their flow's sequence (no tail)",
        ),
        ("duplicates", "probes received more than once"),
        (
            "max_gap_ns, max_flow_gap_ns",
            "the longest time without probes, of the whole stream and of any one flow \
             (how long a failure stopped traffic)",
        ),
        (
            "reordered",
            "probes that arrived after a later probe of their flow",
        ),
        (
            "reorder_sequences",
            "runs of consecutive reordered probes in a flow (RouteBricks' reordered sequences)",
        ),
        (
            "future_stamps",
            "probes stamped later than they arrived (the clocks differ); no latency",
        ),
        ("latency_samples", "probes with a latency"),
        ("latency_min_ns", "lowest latency"),
        ("latency_mean_ns", "mean latency"),
        ("latency_p50_ns", "median latency"),
        ("latency_p90_ns", "90th percentile latency"),
        ("latency_p99_ns", "99th percentile latency"),
        ("latency_p999_ns", "99.9th percentile latency"),
        ("latency_max_ns", "highest latency"),
        (
            "latency_lt_1us ... latency_ge_1048576us",
            "the latency histogram: probes below 1, 2, 4, ... 2^20 microseconds, and above",
        ),
        (
            "rate_pps",
            "probes per second between the first and the last probe (packets, if none is a probe)",
        ),
        (
            "rate_bps",
            "probe bits per second between the first and the last probe (packets, if none is a probe)",
        ),
    ],
    example: "WorkloadSource(FLOWS 4, LIMIT 100, STOP true) -> GenStamp -> TrafficSink;",
    see_also: &["GenStamp", "WorkloadSource", "Counter"],
};

/// Latencies above an hour are recorded as an hour.
const MAX_LATENCY_NS: u64 = 3_600_000_000_000;
/// How often an instance folds its histogram into the shared one.
const MERGE_EVERY_NS: u64 = 100_000_000;
/// How long worker 0 waits at shutdown for the others to fold theirs.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(1);
/// Sequence numbers below the highest one for which duplicates are told
/// apart from late arrivals (one bit each).
const WINDOW: u64 = 64;

fn new_histogram() -> Histogram<u64> {
    // Cannot fail: the bounds are constants that satisfy hdrhistogram's
    // rules (low >= 1, high >= 2 * low, 3 significant digits).
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds")
}

/// What every worker's instance of one TrafficSink shares.
struct Shared {
    merged: Mutex<Histogram<u64>>,
    /// Instances that have received packets.
    active: AtomicUsize,
    /// Instances that have received packets and folded their histogram
    /// for the last time.
    finished: AtomicUsize,
    /// When the last batch with probes arrived (monotonic ns), on any
    /// worker, and the longest time between two such batches: the
    /// longest silence of the whole stream.
    last_probe: AtomicU64,
    max_gap: AtomicU64,
    /// The longest time between two probes of one flow (a flow is
    /// received by one worker).
    max_flow_gap: AtomicU64,
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let offset: usize = args.read_p("OFFSET")?.unwrap_or(0);
    if !offset.is_multiple_of(2) || offset > 2048 {
        return Err(ArgError::new(format!(
            "OFFSET {offset}: expected an even number of bytes up to 2048"
        )));
    }
    let shared = args.shared(|_| {
        Ok(Shared {
            merged: Mutex::new(new_histogram()),
            active: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            last_probe: AtomicU64::new(0),
            max_gap: AtomicU64::new(0),
            max_flow_gap: AtomicU64::new(0),
        })
    })?;
    Ok(Box::new(TrafficSink {
        buckets: [0; LATENCY_BUCKETS.len()],
        offset,
        shared,
        local: new_histogram(),
        last_merge: 0,
        worker: None,
        active: false,
        flows: FlowMap::default(),
        c: Counts::default(),
        span: Span::default(),
        probe_span: Span::default(),
    }))
}

/// One flow's receive state.
#[derive(Debug, Clone, Copy)]
struct FlowState {
    /// Highest sequence number seen + 1.
    next: u64,
    /// Bit `i`: sequence `next - 1 - i` has arrived.
    window: u64,
    /// The previous probe of this flow was reordered.
    late: bool,
    /// When its last probe arrived (monotonic ns).
    last_ns: u64,
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    count: u64,
    bytes: u64,
    probes: u64,
    probe_bytes: u64,
    other: u64,
    other_bytes: u64,
    /// Sum over flows of their highest sequence number + 1.
    expected: u64,
    /// Distinct probes received.
    unique: u64,
    duplicates: u64,
    reordered: u64,
    reorder_sequences: u64,
    future: u64,
    /// This worker's longest time between two probes of a flow (ns).
    max_flow_gap: u64,
}

/// Router times of the first and the latest batch of something.
#[derive(Debug, Default, Clone, Copy)]
struct Span {
    first: Option<u64>,
    last: u64,
}

impl Span {
    fn see(&mut self, t: u64) {
        self.first.get_or_insert(t);
        self.last = t;
    }

    /// `units` per second between the first and the latest batch.
    fn rate(&self, units: u64) -> u64 {
        match self.first {
            Some(t0) if self.last > t0 => {
                (units as u128 * 1_000_000_000 / (self.last - t0) as u128) as u64
            }
            _ => 0,
        }
    }
}

/// Counters of the latency histogram: probes whose latency is below 1 us,
/// 2 us, 4 us, ... 2^20 us (about a second), and at or above that. Unlike
/// percentiles, bucket counts add up over workers.
pub const LATENCY_BUCKETS: [&str; 22] = [
    "latency_lt_1us",
    "latency_lt_2us",
    "latency_lt_4us",
    "latency_lt_8us",
    "latency_lt_16us",
    "latency_lt_32us",
    "latency_lt_64us",
    "latency_lt_128us",
    "latency_lt_256us",
    "latency_lt_512us",
    "latency_lt_1024us",
    "latency_lt_2048us",
    "latency_lt_4096us",
    "latency_lt_8192us",
    "latency_lt_16384us",
    "latency_lt_32768us",
    "latency_lt_65536us",
    "latency_lt_131072us",
    "latency_lt_262144us",
    "latency_lt_524288us",
    "latency_lt_1048576us",
    "latency_ge_1048576us",
];

/// The bucket of a latency of `ns` nanoseconds.
#[inline]
fn bucket(ns: u64) -> usize {
    let us = ns / 1000;
    if us == 0 {
        0
    } else {
        ((64 - us.leading_zeros()) as usize).min(LATENCY_BUCKETS.len() - 1)
    }
}

/// Receives and measures probes.
pub struct TrafficSink {
    /// Probes per latency bucket ([`LATENCY_BUCKETS`]).
    buckets: [u64; LATENCY_BUCKETS.len()],
    offset: usize,
    shared: Arc<Shared>,
    /// Latencies not yet folded into the shared histogram.
    local: Histogram<u64>,
    last_merge: u64,
    worker: Option<usize>,
    active: bool,
    /// Flows by (sender, flow id): several generators number their flows
    /// alike, so a probe's flow is its sender's.
    flows: FlowMap<u64, FlowState>,
    c: Counts,
    /// When packets, and probes, arrived, for the rates: stray packets
    /// (a neighbour solicitation seconds before the test) would stretch
    /// the time the measured traffic took.
    span: Span,
    probe_span: Span,
}

/// The sender of a probe: its IPv4 source address, or the low 32 bits of
/// its IPv6 one.
#[inline]
fn sender(frame: &[u8], at: &UdpAt) -> u32 {
    let (from, len) = if at.v6 {
        (at.l3 + 20, 4)
    } else {
        (at.l3 + 12, 4)
    };
    frame
        .get(from..from + len)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

impl TrafficSink {
    /// Follows one probe of `flow` (sender in the high bits) with 32-bit
    /// sequence `seq32`, arrived at `now`.
    #[inline]
    fn follow(&mut self, flow: u64, seq32: u32, now: u64) {
        let c = &mut self.c;
        let st = self.flows.entry(flow).or_insert(FlowState {
            next: 0,
            window: 0,
            late: false,
            last_ns: now,
        });
        let gap = now.saturating_sub(st.last_ns);
        st.last_ns = now;
        if gap > c.max_flow_gap {
            c.max_flow_gap = gap;
            self.shared.max_flow_gap.fetch_max(gap, Ordering::Relaxed);
        }
        if st.next == 0 {
            let s = u64::from(seq32);
            *st = FlowState {
                next: s + 1,
                window: 1,
                late: false,
                last_ns: now,
            };
            c.expected += s + 1;
            c.unique += 1;
            return;
        }
        let highest = st.next - 1;
        let s = extend_seq(highest, seq32);
        if s > highest {
            let shift = s - highest;
            st.window = if shift >= WINDOW {
                1
            } else {
                (st.window << shift) | 1
            };
            st.next = s + 1;
            st.late = false;
            c.expected += shift;
            c.unique += 1;
            return;
        }
        let back = highest - s;
        if back < WINDOW {
            if st.window & (1 << back) != 0 {
                c.duplicates += 1;
                return;
            }
            st.window |= 1 << back;
        }
        c.unique += 1;
        c.reordered += 1;
        if !st.late {
            c.reorder_sequences += 1;
            st.late = true;
        }
    }

    fn receive(&mut self, batch: &Batch, now: u64) {
        for p in batch.iter() {
            let len = p.len() as u64;
            self.c.count += 1;
            self.c.bytes += len;
            let frame = p.data();
            let probe = locate_udp(frame, p.network_header_offset()).and_then(|at| {
                let start = at.l4 + 8 + self.offset;
                let probe = Probe::new_checked(frame.get(start..at.end)?).ok()?;
                Some((sender(frame, &at), probe))
            });
            let Some((sender, probe)) = probe else {
                self.c.other += 1;
                self.c.other_bytes += len;
                continue;
            };
            self.c.probes += 1;
            self.c.probe_bytes += len;
            let (flow, seq, time) = (probe.flow(), probe.seq32(), probe.time48());
            match elapsed48(now, time) {
                Some(ns) => {
                    self.local.saturating_record(ns);
                    self.buckets[bucket(ns)] += 1;
                }
                None => self.c.future += 1,
            }
            self.follow(u64::from(sender) << 32 | u64::from(flow), seq, now);
        }
    }

    /// Folds the local histogram into the shared one.
    fn merge(&mut self) {
        if self.local.is_empty() {
            return;
        }
        let mut m = self.shared.merged.lock().unwrap_or_else(|e| e.into_inner());
        // Cannot fail: both histograms have the same bounds.
        let _ = m.add(&self.local);
        drop(m);
        self.local.reset();
    }

    fn latency_stats(&self, s: &mut Stats) {
        let merged = self.shared.merged.lock().unwrap_or_else(|e| e.into_inner());
        let with_local;
        let h: &Histogram<u64> = if self.local.is_empty() {
            &merged
        } else {
            let mut h = merged.clone();
            let _ = h.add(&self.local);
            with_local = h;
            &with_local
        };
        s.counter("latency_samples", h.len());
        if h.is_empty() {
            return;
        }
        s.counter("latency_min_ns", h.min());
        s.counter("latency_mean_ns", h.mean().round() as u64);
        s.counter("latency_p50_ns", h.value_at_quantile(0.50));
        s.counter("latency_p90_ns", h.value_at_quantile(0.90));
        s.counter("latency_p99_ns", h.value_at_quantile(0.99));
        s.counter("latency_p999_ns", h.value_at_quantile(0.999));
        s.counter("latency_max_ns", h.max());
    }

    /// Packets and bits per second of the probes, or of every packet if
    /// none is a probe.
    fn rates(&self) -> (u64, u64) {
        let c = &self.c;
        let (n, bytes, span) = if c.probes > 0 {
            (c.probes, c.probe_bytes, &self.probe_span)
        } else {
            (c.count, c.bytes, &self.span)
        };
        (span.rate(n), span.rate(bytes * 8))
    }
}

impl Element for TrafficSink {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if !self.active {
            self.active = true;
            self.worker = Some(cx.worker());
            self.shared.active.fetch_add(1, Ordering::AcqRel);
        }
        let t = cx.now().0;
        self.span.see(t);
        // One clock read per batch: its packets arrived together.
        let now = monotonic_ns();
        let probes = self.c.probes;
        self.receive(batch, now);
        if self.c.probes > probes {
            self.probe_span.see(t);
            let prev = self.shared.last_probe.swap(now, Ordering::Relaxed);
            if prev != 0 {
                self.shared
                    .max_gap
                    .fetch_max(now.saturating_sub(prev), Ordering::Relaxed);
            }
        }
        batch.clear();
        if now.wrapping_sub(self.last_merge) >= MERGE_EVERY_NS {
            self.last_merge = now;
            self.merge();
        }
    }

    fn shutdown(&mut self, cx: &mut Context<'_>) {
        self.worker = Some(cx.worker());
        self.merge();
        if self.active {
            self.shared.finished.fetch_add(1, Ordering::AcqRel);
        }
        if cx.worker() == 0 {
            // Worker 0 reports the merged latencies: give the other
            // workers' last histograms a moment to arrive.
            let start = Instant::now();
            while self.shared.finished.load(Ordering::Acquire)
                < self.shared.active.load(Ordering::Acquire)
                && start.elapsed() < SHUTDOWN_WAIT
            {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("count", c.count);
        s.counter("bytes", c.bytes);
        s.counter("probes", c.probes);
        s.counter("other", c.other);
        s.counter("other_bytes", c.other_bytes);
        s.counter("flows", self.flows.len() as u64);
        s.counter("lost", c.expected.saturating_sub(c.unique));
        s.counter("duplicates", c.duplicates);
        s.counter("reordered", c.reordered);
        s.counter("reorder_sequences", c.reorder_sequences);
        s.counter("future_stamps", c.future);
        for (name, &n) in LATENCY_BUCKETS.iter().zip(&self.buckets) {
            s.counter(*name, n);
        }
        if self.worker == Some(0) {
            self.latency_stats(s);
            s.counter("max_gap_ns", self.shared.max_gap.load(Ordering::Relaxed));
            s.counter(
                "max_flow_gap_ns",
                self.shared.max_flow_gap.load(Ordering::Relaxed),
            );
        }
        let (pps, bps) = self.rates();
        s.counter("rate_pps", pps);
        s.counter("rate_bps", bps);
    }
}

#[cfg(test)]
mod bucket_tests {
    use super::*;

    #[test]
    fn latencies_fall_in_power_of_two_microsecond_buckets() {
        assert_eq!(LATENCY_BUCKETS[bucket(999)], "latency_lt_1us");
        assert_eq!(LATENCY_BUCKETS[bucket(1_000)], "latency_lt_2us");
        assert_eq!(LATENCY_BUCKETS[bucket(1_999)], "latency_lt_2us");
        assert_eq!(LATENCY_BUCKETS[bucket(397_000)], "latency_lt_512us");
        assert_eq!(LATENCY_BUCKETS[bucket(u64::MAX)], "latency_ge_1048576us");
    }
}

#[cfg(test)]
mod tests {
    use super::super::probe::{ProbeRepr, TIME_MASK};
    use super::*;
    use bricks_runtime::testing::Harness;

    /// Ethernet + IPv4 + UDP with a probe of `flow`/`seq` stamped `age_ns`
    /// ago, padded to 64 bytes.
    fn probe(flow: u32, seq: u64, age_ns: u64) -> Vec<u8> {
        let mut f = vec![0u8; 64];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&50u16.to_be_bytes());
        f[23] = 17;
        f[34..36].copy_from_slice(&(1000 + flow as u16).to_be_bytes());
        f[38..40].copy_from_slice(&30u16.to_be_bytes());
        ProbeRepr {
            flow,
            seq,
            time: monotonic_ns().wrapping_sub(age_ns) & TIME_MASK,
        }
        .emit(&mut Probe::new_unchecked(&mut f[42..60]));
        f
    }

    fn sink_with(seqs: &[(u32, u64)]) -> Harness {
        let mut h = Harness::push(&CLASS, "", 1, 0);
        for &(flow, seq) in seqs {
            h.push_bytes(0, &probe(flow, seq, 0));
        }
        h
    }

    #[test]
    fn in_order_flows_lose_nothing() {
        let seqs: Vec<(u32, u64)> = (0..100).map(|i| (i % 4, u64::from(i / 4))).collect();
        let s = sink_with(&seqs).stats();
        assert_eq!(s.get("count"), Some(100));
        assert_eq!(s.get("bytes"), Some(6400));
        assert_eq!(s.get("probes"), Some(100));
        assert_eq!(s.get("flows"), Some(4));
        assert_eq!(s.get("lost"), Some(0));
        assert_eq!(s.get("reordered"), Some(0));
        assert_eq!(s.get("duplicates"), Some(0));
    }

    #[test]
    fn gaps_are_lost_until_they_arrive() {
        let mut h = sink_with(&[(0, 0), (0, 1), (0, 4), (0, 5)]);
        assert_eq!(h.stats().get("lost"), Some(2));
        h.push_bytes(0, &probe(0, 3, 0));
        let s = h.stats();
        assert_eq!(s.get("lost"), Some(1));
        assert_eq!(s.get("reordered"), Some(1));
    }

    #[test]
    fn routebricks_reordered_sequence() {
        // RouteBricks §6.2: p1 p4 p2 p3 p5 is one reordered sequence.
        let s = sink_with(&[(7, 0), (7, 3), (7, 1), (7, 2), (7, 4)]).stats();
        assert_eq!(s.get("reordered"), Some(2));
        assert_eq!(s.get("reorder_sequences"), Some(1));
        assert_eq!(s.get("lost"), Some(0));
        // A swap of two neighbours: one reordered packet.
        let s = sink_with(&[(1, 0), (1, 2), (1, 1), (1, 3)]).stats();
        assert_eq!(s.get("reordered"), Some(1));
        assert_eq!(s.get("reorder_sequences"), Some(1));
    }

    #[test]
    fn flows_of_different_senders_are_apart() {
        // Two generators both number their first flow 0.
        let mut h = Harness::push(&CLASS, "", 1, 0);
        for seq in 0..3 {
            for src in [[10, 1, 0, 2], [10, 2, 0, 2]] {
                let mut f = probe(0, seq, 0);
                f[26..30].copy_from_slice(&src);
                h.push_bytes(0, &f);
            }
        }
        let s = h.stats();
        assert_eq!(s.get("flows"), Some(2));
        assert_eq!(s.get("duplicates"), Some(0));
        assert_eq!(s.get("reordered"), Some(0));
    }

    #[test]
    fn the_longest_silences_of_the_stream_and_of_a_flow() {
        let mut h = Harness::push(&CLASS, "", 1, 0);
        h.push_bytes(0, &probe(0, 0, 0));
        h.push_bytes(0, &probe(1, 0, 0));
        std::thread::sleep(Duration::from_millis(30));
        h.push_bytes(0, &probe(1, 1, 0));
        let s = h.stats();
        let ms = 1_000_000;
        assert!(s.get("max_gap_ns").unwrap() >= 30 * ms);
        assert!(s.get("max_flow_gap_ns").unwrap() >= 30 * ms);
        // Flow 0, silent all along, counts when it resumes.
        std::thread::sleep(Duration::from_millis(30));
        h.push_bytes(0, &probe(0, 1, 0));
        assert!(h.stats().get("max_flow_gap_ns").unwrap() >= 60 * ms);
    }

    #[test]
    fn duplicates_are_not_reordering() {
        let s = sink_with(&[(0, 0), (0, 1), (0, 1), (0, 2), (0, 0)]).stats();
        assert_eq!(s.get("duplicates"), Some(2));
        assert_eq!(s.get("reordered"), Some(0));
        assert_eq!(s.get("probes"), Some(5));
        assert_eq!(s.get("lost"), Some(0));
    }

    #[test]
    fn sequence_wraps_at_32_bits() {
        let base = (1u64 << 32) - 2;
        // The first probe of a flow says where it starts; the wire carries
        // only 32 bits, so the sink continues past 2^32 by extension.
        let s = sink_with(&[(0, base), (0, base + 1), (0, base + 2), (0, base + 3)]).stats();
        assert_eq!(s.get("reordered"), Some(0));
        assert_eq!(s.get("duplicates"), Some(0));
        assert_eq!(s.get("lost"), Some(u64::from(u32::MAX) - 1));
    }

    #[test]
    fn latency_percentiles() {
        let mut h = Harness::push(&CLASS, "", 1, 0);
        for i in 0..1000u64 {
            h.push_bytes(0, &probe(0, i, 2_000_000 + i));
        }
        let s = h.stats();
        assert_eq!(s.get("latency_samples"), Some(1000));
        let p50 = s.get("latency_p50_ns").unwrap();
        let max = s.get("latency_max_ns").unwrap();
        // Aged 2 ms when stamped, a little more by the time they arrive.
        assert!((2_000_000..2_500_000).contains(&p50), "{p50}");
        assert!(max >= p50 && max < 1_000_000_000, "{max}");
        assert!(s.get("latency_p99_ns").unwrap() >= p50);
    }

    #[test]
    fn future_stamps_have_no_latency() {
        let mut h = Harness::push(&CLASS, "", 1, 0);
        h.push_bytes(0, &probe(0, 0, 0u64.wrapping_sub(5_000_000_000)));
        let s = h.stats();
        assert_eq!(s.get("future_stamps"), Some(1));
        assert_eq!(s.get("latency_samples"), Some(0));
    }

    #[test]
    fn other_packets_are_counted_apart() {
        let mut h = Harness::push(&CLASS, "", 1, 0);
        h.push_bytes(0, &[0u8; 60]);
        let mut foreign = probe(0, 0, 0);
        foreign[42] = b'X';
        h.push_bytes(0, &foreign);
        let s = h.stats();
        assert_eq!(s.get("count"), Some(2));
        assert_eq!(s.get("other"), Some(2));
        assert_eq!(s.get("other_bytes"), Some(124));
        assert_eq!(s.get("probes"), Some(0));
    }

    #[test]
    fn rates_follow_the_probes() {
        let mut h = Harness::push(&CLASS, "", 1, 0);
        h.advance_to(bricks_packet::Timestamp(1_000_000_000));
        h.push_bytes(0, &[0u8; 60]); // a stray packet long before
        h.advance_to(bricks_packet::Timestamp(10_000_000_000));
        h.push_bytes(0, &probe(0, 0, 0));
        h.advance_to(bricks_packet::Timestamp(10_500_000_000));
        h.push_bytes(0, &probe(0, 1, 0));
        h.push_bytes(0, &probe(0, 2, 0));
        let s = h.stats();
        // Three 64-byte probes in half a second.
        assert_eq!(s.get("rate_pps"), Some(6));
        assert_eq!(s.get("rate_bps"), Some(3 * 64 * 8 * 2));
    }

    #[test]
    fn counts_whatever_bytes_arrive() {
        use proptest::prelude::*;
        proptest!(|(frames in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..120), 1..20))| {
            let mut h = Harness::push(&CLASS, "", 1, 0);
            for f in &frames {
                h.push_bytes(0, f);
            }
            let s = h.stats();
            prop_assert_eq!(s.get("count"), Some(frames.len() as u64));
            prop_assert_eq!(
                s.get("probes").unwrap() + s.get("other").unwrap(),
                frames.len() as u64
            );
        });
    }
}
