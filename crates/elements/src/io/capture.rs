//! What FromDump/FromDevice and ToDump/ToDevice share when a capture file
//! is behind them.

use bricks_element::{Batch, Context, Packet};
use bricks_io::pcap::{LinkType, PcapError, PcapReader, PcapWriter, Record};
use bricks_packet::{PacketType, Timestamp};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;

/// Sets the packet type annotation from the destination MAC address.
#[inline]
pub fn set_packet_type(p: &mut Packet) {
    let t = match p.data().first() {
        Some(_) if p.data()[..6.min(p.len())] == [0xff; 6] => PacketType::Broadcast,
        Some(b) if b & 1 == 1 => PacketType::Multicast,
        _ => PacketType::Host,
    };
    p.anno_mut().packet_type = t;
}

/// Opens a capture for reading and checks its header.
pub fn open_reader(path: &Path) -> Result<PcapReader<BufReader<File>>, String> {
    let f = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    PcapReader::new(BufReader::with_capacity(1 << 20, f))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// When a packet stamped `ts` is due under TIMING on a trace clock
/// (`--clock trace`, Click's `--simtime`): the capture's own pace, from
/// the first packet on. `epoch` remembers the first packet's stamp and the
/// clock it was replayed at: the clock as it was, or the stamp itself when
/// the clock is still behind it (a trace clock starting at 0 jumps to the
/// capture's times; Click's `--simtime` replays them from its start).
pub(crate) fn trace_due(
    epoch: &mut Option<(Timestamp, Timestamp)>,
    ts: Timestamp,
    now: Timestamp,
) -> Timestamp {
    let (t0, n0) = *epoch.get_or_insert((ts, now.max(ts)));
    Timestamp(n0.0.saturating_add(ts.0.saturating_sub(t0.0)))
}

/// A time given to FromDump: absolute, or after the first packet's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpTime {
    /// A capture time, ns since the epoch.
    At(u64),
    /// This many ns after the first record's time.
    After(u64),
}

/// Which records FromDump emits (Click's START, START_AFTER, END,
/// END_AFTER, INTERVAL, SAMPLE and FORCE_IP).
#[derive(Debug, Clone, Default)]
pub struct RecordFilter {
    /// Records stamped before this are skipped.
    pub start: Option<DumpTime>,
    /// Reading ends at the first record stamped at or after this.
    pub end: Option<DumpTime>,
    /// INTERVAL: reading ends this many ns after the start.
    pub interval: Option<u64>,
    /// Probability of emitting a record, out of 2^32 (None: all).
    pub sample: Option<u64>,
    /// Emit IPv4 packets only, with the IP header annotation set.
    pub force_ip: bool,
    /// Records skipped by START, SAMPLE or FORCE_IP.
    pub skipped: u64,
    /// The start and end as capture times, fixed at the first record.
    bounds: Option<(Option<u64>, Option<u64>)>,
    rng: u64,
}

impl RecordFilter {
    /// A filter with these settings.
    pub fn new(
        start: Option<DumpTime>,
        end: Option<DumpTime>,
        interval: Option<u64>,
        sample: Option<u64>,
        force_ip: bool,
    ) -> RecordFilter {
        RecordFilter {
            start,
            end,
            interval,
            sample,
            force_ip,
            ..RecordFilter::default()
        }
    }

    /// Whether nothing is filtered.
    pub fn is_empty(&self) -> bool {
        self.start.is_none()
            && self.end.is_none()
            && self.interval.is_none()
            && self.sample.is_none()
            && !self.force_ip
    }

    fn bounds(&mut self, ts: u64) -> (Option<u64>, Option<u64>) {
        let (start, end, interval) = (self.start, self.end, self.interval);
        *self.bounds.get_or_insert_with(|| {
            let at = |t: DumpTime| match t {
                DumpTime::At(a) => a,
                DumpTime::After(d) => ts.saturating_add(d),
            };
            let s = start.map(at);
            let e = end
                .map(at)
                .or_else(|| interval.map(|i| s.unwrap_or(ts).saturating_add(i)));
            (s, e)
        })
    }

    /// xorshift64*, seeded once; the sample need not be unpredictable.
    fn random(&mut self) -> u64 {
        if self.rng == 0 {
            self.rng = 0x9e37_79b9_7f4a_7c15;
        }
        crate::rng::xorshift64star(&mut self.rng) >> 32
    }
}

/// What the filter says of one record.
enum Verdict {
    Emit(Packet),
    Skip,
    End,
}

/// The offset of the IPv4 header in an Ethernet frame (behind at most
/// one 802.1Q tag), or `None` if the frame does not carry IPv4.
fn ethernet_ip_offset(d: &[u8]) -> Option<usize> {
    let mut off = 12;
    let mut ty = u16::from_be_bytes([*d.get(off)?, *d.get(off + 1)?]);
    if ty == 0x8100 || ty == 0x88a8 {
        off += 4;
        ty = u16::from_be_bytes([*d.get(off)?, *d.get(off + 1)?]);
    }
    let ip = off + 2;
    (ty == 0x0800 && d.get(ip).is_some_and(|&v| v >> 4 == 4)).then_some(ip)
}

/// Reads packets from a capture into batches.
pub struct CaptureSource {
    path: PathBuf,
    reader: Option<PcapReader<BufReader<File>>>,
    linktype: LinkType,
    /// Replay at the capture's own pace.
    timing: bool,
    /// First packet's capture time and when it was replayed.
    epoch: Option<(Timestamp, Instant)>,
    /// The same on a trace clock.
    trace_epoch: Option<(Timestamp, Timestamp)>,
    /// A packet read but not yet due (TIMING).
    pending: Option<Packet>,
    /// Which records are emitted (FromDump's keywords).
    pub filter: RecordFilter,
    /// Packets emitted.
    pub count: u64,
    /// Records too large for a packet buffer.
    pub oversized: u64,
    /// Whether the file has been read to the end (or failed).
    pub done: bool,
}

impl CaptureSource {
    /// Opens `path`; errors name the file and what is wrong.
    pub fn open(path: PathBuf, timing: bool) -> Result<CaptureSource, String> {
        let reader = open_reader(&path)?;
        Ok(CaptureSource {
            linktype: reader.linktype(),
            path,
            reader: Some(reader),
            timing,
            epoch: None,
            trace_epoch: None,
            pending: None,
            filter: RecordFilter::default(),
            count: 0,
            oversized: 0,
            done: false,
        })
    }

    /// Whether packets start at the IP header.
    pub fn is_ip(&self) -> bool {
        self.linktype.is_ip()
    }

    fn next_packet(&mut self, cx: &mut Context<'_>) -> Option<Packet> {
        if let Some(p) = self.pending.take() {
            return Some(p);
        }
        let reader = self.reader.as_mut()?;
        loop {
            match reader.next_record() {
                Ok(Some(Record::Packet(mut p))) => {
                    if self.linktype.is_ip() {
                        p.set_network_header(0);
                    } else {
                        set_packet_type(&mut p);
                    }
                    if self.filter.is_empty() {
                        return Some(p);
                    }
                    match Self::judge(&mut self.filter, p, self.linktype.is_ip()) {
                        Verdict::Emit(p) => return Some(p),
                        Verdict::Skip => self.filter.skipped += 1,
                        Verdict::End => break,
                    }
                }
                Ok(Some(Record::Oversized { .. })) => self.oversized += 1,
                Ok(None) => break,
                Err(e) => {
                    cx.report_error(format!("{}: {e}", self.path.display()));
                    break;
                }
            }
        }
        self.reader = None;
        None
    }

    /// Applies START, END, SAMPLE and FORCE_IP to one record, in Click's
    /// order.
    fn judge(f: &mut RecordFilter, mut p: Packet, is_ip: bool) -> Verdict {
        let ts = p.anno().timestamp.0;
        let (start, end) = f.bounds(ts);
        if start.is_some_and(|s| ts < s) {
            return Verdict::Skip;
        }
        if end.is_some_and(|e| ts >= e) {
            return Verdict::End;
        }
        if let Some(prob) = f.sample {
            if f.random() >= prob {
                return Verdict::Skip;
            }
        }
        if f.force_ip && !is_ip {
            match ethernet_ip_offset(p.data()) {
                Some(off) => p.set_network_header(off),
                None => return Verdict::Skip,
            }
        }
        Verdict::Emit(p)
    }

    /// Whether `p` is due now under TIMING; remembers it if not.
    fn due(&mut self, p: &Packet) -> bool {
        if !self.timing {
            return true;
        }
        let ts = p.anno().timestamp;
        let (t0, w0) = *self.epoch.get_or_insert((ts, Instant::now()));
        let offset = ts.0.saturating_sub(t0.0);
        w0.elapsed().as_nanos() as u64 >= offset
    }

    /// Reads up to `max` packets into `out`; returns how many.
    pub fn fill(&mut self, out: &mut Batch, max: usize, cx: &mut Context<'_>) -> usize {
        let mut n = 0;
        while n < max && !out.is_full() {
            let Some(p) = self.next_packet(cx) else {
                self.done = true;
                break;
            };
            let ts = p.anno().timestamp;
            if cx.trace_clock() {
                let at = if self.timing {
                    trace_due(&mut self.trace_epoch, ts, cx.now())
                } else {
                    ts
                };
                if at > cx.now() {
                    self.pending = Some(p);
                    cx.schedule_at(at);
                    break;
                }
            } else if !self.due(&p) {
                self.pending = Some(p);
                break;
            }
            let _ = out.push(p);
            n += 1;
        }
        self.count += n as u64;
        n
    }
}

type Writer = PcapWriter<BufWriter<File>>;
type SharedWriter = Arc<Mutex<Writer>>;
type WriterTable = Mutex<HashMap<PathBuf, Weak<Mutex<Writer>>>>;

/// Writers by path, so that every worker's instance of one ToDump element
/// writes into the same file. Weak: the file closes when the last element
/// that writes it goes away.
fn writers() -> &'static WriterTable {
    static W: OnceLock<WriterTable> = OnceLock::new();
    W.get_or_init(Default::default)
}

/// Writes packets to a capture. The file is created on first use, so that
/// checking a configuration never touches it.
pub struct CaptureSink {
    path: PathBuf,
    linktype: LinkType,
    nanos: bool,
    snaplen: u32,
    writer: Option<SharedWriter>,
    failed: bool,
    /// Record the time of sending rather than the packet's timestamp.
    stamp_now: bool,
    /// Records' lengths include the extra length annotation.
    extra_length: bool,
    /// Packets written.
    pub count: u64,
    /// Packets that could not be written.
    pub errors: u64,
}

impl CaptureSink {
    /// A sink for `path` (not opened yet).
    pub fn new(path: PathBuf, linktype: LinkType, nanos: bool, snaplen: u32) -> CaptureSink {
        CaptureSink {
            path,
            linktype,
            nanos,
            snaplen,
            writer: None,
            failed: false,
            stamp_now: false,
            extra_length: true,
            count: 0,
            errors: 0,
        }
    }

    /// Hot swap: when `old` writes the same file the same way, its open
    /// file and counts, so that the file goes on instead of being created
    /// anew when the old element is gone.
    pub fn take_from(&mut self, old: &mut CaptureSink) {
        if (
            &old.path,
            old.linktype,
            old.nanos,
            old.snaplen,
            old.stamp_now,
            old.extra_length,
        ) != (
            &self.path,
            self.linktype,
            self.nanos,
            self.snaplen,
            self.stamp_now,
            self.extra_length,
        ) {
            return;
        }
        self.writer = old.writer.take();
        self.failed = old.failed;
        self.count = old.count;
        self.errors = old.errors;
    }

    /// Records each packet at the time it is written, as an interface
    /// capture would, instead of with its timestamp annotation.
    pub fn stamp_with_send_time(mut self) -> CaptureSink {
        self.stamp_now = true;
        self
    }

    /// Whether a record's length includes the packet's extra length
    /// annotation (what a capture cut off, or Truncate removed): Click's
    /// EXTRA_LENGTH, true unless set.
    pub fn with_extra_length(mut self, on: bool) -> CaptureSink {
        self.extra_length = on;
        self
    }

    fn writer(&mut self, cx: &mut Context<'_>) -> Option<SharedWriter> {
        if let Some(w) = &self.writer {
            return Some(w.clone());
        }
        if self.failed {
            return None;
        }
        let mut map = writers().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = map.get(&self.path).and_then(Weak::upgrade) {
            self.writer = Some(w.clone());
            return Some(w);
        }
        let opened = File::create(&self.path)
            .map_err(PcapError::from)
            .and_then(|f| {
                PcapWriter::new(
                    BufWriter::with_capacity(1 << 20, f),
                    self.linktype,
                    self.nanos,
                    self.snaplen,
                )
            });
        match opened {
            Ok(w) => {
                let w: SharedWriter = Arc::new(Mutex::new(w));
                map.insert(self.path.clone(), Arc::downgrade(&w));
                self.writer = Some(w.clone());
                Some(w)
            }
            Err(e) => {
                self.failed = true;
                cx.report_error(format!("{}: {e}", self.path.display()));
                None
            }
        }
    }

    /// Writes every packet of `b`; the packets stay in the batch.
    pub fn write(&mut self, b: &Batch, cx: &mut Context<'_>) {
        if b.is_empty() {
            return;
        }
        let Some(w) = self.writer(cx) else {
            self.errors += b.len() as u64;
            return;
        };
        let mut first_error = None;
        let now = cx.now();
        {
            let mut writer = w.lock().unwrap_or_else(|e| e.into_inner());
            for p in b.iter() {
                // A packet with no timestamp is stamped now, as Click's
                // ToDump does.
                let ts = if self.stamp_now || p.anno().timestamp.0 == 0 {
                    now
                } else {
                    p.anno().timestamp
                };
                let extra = if self.extra_length {
                    p.anno().extra_length
                } else {
                    0
                };
                match writer.write_extra(ts, p.data(), extra) {
                    Ok(()) => self.count += 1,
                    Err(e) => {
                        self.errors += 1;
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        if let Some(e) = first_error {
            if !self.failed {
                self.failed = true;
                cx.report_error(format!("{}: {e}", self.path.display()));
            }
        }
    }

    /// Creates the file if nothing was written, and flushes it.
    pub fn finish(&mut self, cx: &mut Context<'_>) {
        let Some(w) = self.writer(cx) else { return };
        let r = w.lock().unwrap_or_else(|e| e.into_inner()).flush();
        if let Err(e) = r {
            cx.report_error(format!("{}: {e}", self.path.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The start of an Ethernet frame carrying IPv4 (version/IHL 0x45).
    const ETH_IP: [u8; 15] = [
        0, 0, 0xc0, 0x3b, 0x71, 0xef, 0, 0x20, 0x6a, 0x12, 0x34, 0x56, 0x08, 0x00, 0x45,
    ];

    #[test]
    fn force_ip_finds_ipv4_behind_ethernet_and_one_tag() {
        assert_eq!(ethernet_ip_offset(&ETH_IP), Some(14));
        let tagged = [&ETH_IP[..12], &[0x81, 0x00, 0x00, 0x05], &ETH_IP[12..]].concat();
        assert_eq!(ethernet_ip_offset(&tagged), Some(18));
        let mut v6 = ETH_IP;
        v6[14] = 0x60;
        assert_eq!(ethernet_ip_offset(&v6), None);
        let mut arp = ETH_IP;
        arp[13] = 0x06;
        assert_eq!(ethernet_ip_offset(&arp), None);
        // Truncated frames: no panic.
        for n in 0..ETH_IP.len() {
            assert_eq!(ethernet_ip_offset(&ETH_IP[..n]), None);
        }
    }

    #[test]
    fn time_bounds_are_fixed_at_the_first_record() {
        let mut f = RecordFilter::new(Some(DumpTime::After(100)), None, Some(50), None, false);
        assert_eq!(f.bounds(1000), (Some(1100), Some(1150)));
        assert_eq!(f.bounds(5000), (Some(1100), Some(1150)));
        let mut f = RecordFilter::new(None, Some(DumpTime::At(7)), None, None, false);
        assert_eq!(f.bounds(1000), (None, Some(7)));
    }

    #[test]
    fn trace_timing_replays_offsets() {
        let mut e = None;
        // Clock behind the capture: the capture's own times.
        assert_eq!(
            trace_due(&mut e, Timestamp(500), Timestamp(0)),
            Timestamp(500)
        );
        assert_eq!(
            trace_due(&mut e, Timestamp(700), Timestamp(0)),
            Timestamp(700)
        );
        // Clock ahead (Click's --simtime): offsets from the clock.
        let mut e = None;
        assert_eq!(
            trace_due(&mut e, Timestamp(5), Timestamp(1000)),
            Timestamp(1000)
        );
        assert_eq!(
            trace_due(&mut e, Timestamp(15), Timestamp(1000)),
            Timestamp(1010)
        );
        // A record stamped before the first waits for nothing.
        assert_eq!(
            trace_due(&mut e, Timestamp(1), Timestamp(1000)),
            Timestamp(1000)
        );
    }
}
