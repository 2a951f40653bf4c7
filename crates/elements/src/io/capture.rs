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

/// Reads packets from a capture into batches.
pub struct CaptureSource {
    path: PathBuf,
    reader: Option<PcapReader<BufReader<File>>>,
    linktype: LinkType,
    /// Replay at the capture's own pace.
    timing: bool,
    /// First packet's capture time and when it was replayed.
    epoch: Option<(Timestamp, Instant)>,
    /// A packet read but not yet due (TIMING).
    pending: Option<Packet>,
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
            pending: None,
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
                    return Some(p);
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
            if cx.trace_clock() && ts > cx.now() {
                self.pending = Some(p);
                cx.schedule_at(ts);
                break;
            }
            if !self.due(&p) {
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
            count: 0,
            errors: 0,
        }
    }

    /// Records each packet at the time it is written, as an interface
    /// capture would, instead of with its timestamp annotation.
    pub fn stamp_with_send_time(mut self) -> CaptureSink {
        self.stamp_now = true;
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
                let ts = if self.stamp_now {
                    now
                } else {
                    p.anno().timestamp
                };
                match writer.write(ts, p.data()) {
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
