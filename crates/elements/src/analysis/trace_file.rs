//! What Click's trace readers share (`elements/analysis/from*dump.cc` on
//! top of `lib/fromfile.cc`): the file and its position, START, END and
//! the other time keywords with END_CALL and `extend_interval`, SAMPLE,
//! TIMING, ACTIVE and STOP, FORCE_IP's search for the IP header behind a
//! link header (Click's `fake_pcap_force_ip`), and the element that drives
//! a [`RecordFormat`] with them: FromNLANRDump, FromDAGDump,
//! FromNetFlowSummaryDump and FromCapDump differ only in how they read one
//! record.
//!
//! Files are untrusted: a format reads a record of a bounded size (at
//! most a packet buffer, the rest skipped), a record cut short by the end
//! of the file ends the file and is counted, and nothing a record says is
//! allocated before it is checked against those bounds.

use super::from_tcpdump::{call_stop, open_input, read_line, sample_draw, sample_text, LineRead};
use crate::io::capture::{set_packet_type, trace_due, DumpTime};
use crate::standard::handler_call::HandlerCall;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, Handler, Packet, PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_packet::{Timestamp, MAX_BATCH};
use std::io::{BufRead, BufReader, Read};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

/// Messages printed about bad records of one file; the rest are only
/// counted.
pub const MAX_MESSAGES: usize = 10;

/// A trace file being read: the reader, where it is, how long it is.
pub struct TraceInput {
    reader: Option<BufReader<Box<dyn Read + Send>>>,
    /// The name messages give (FILENAME, `-`, or `DATA`).
    pub path: PathBuf,
    /// Bytes consumed so far (Click's `filepos`).
    pub pos: u64,
    /// The file's length, when it is a regular file (Click's `filesize`).
    pub size: Option<u64>,
    /// A read error that ended the file, to be reported.
    pub error: Option<String>,
}

impl TraceInput {
    /// Opens FILENAME (`-` is standard input) or the text of DATA.
    pub fn open(path: Option<PathBuf>, data: Option<String>) -> Result<TraceInput, ArgError> {
        let (reader, path, size) = open_input(path, data)?;
        Ok(TraceInput {
            reader: reader.map(|r| BufReader::with_capacity(1 << 16, r)),
            path,
            pos: 0,
            size,
            error: None,
        })
    }

    /// Reads from `r`, named `name` in messages (tests, fuzzing).
    pub fn from_reader(r: Box<dyn Read + Send>, name: &str) -> TraceInput {
        TraceInput {
            reader: Some(BufReader::with_capacity(1 << 16, r)),
            path: PathBuf::from(name),
            pos: 0,
            size: None,
            error: None,
        }
    }

    /// The first bytes of the file, without consuming them (empty at the
    /// end or for standard input, which is not waited for).
    pub fn peek(&mut self) -> Vec<u8> {
        if self.path.as_os_str() == "-" {
            return Vec::new();
        }
        match self.reader.as_mut().map(|r| r.fill_buf()) {
            Some(Ok(b)) => b[..b.len().min(16)].to_vec(),
            _ => Vec::new(),
        }
    }

    /// Fills `buf` from the file; returns how many bytes it got (fewer at
    /// the end of the file, or after an error, which ends the file).
    pub fn read_full(&mut self, buf: &mut [u8]) -> usize {
        let Some(r) = self.reader.as_mut() else {
            return 0;
        };
        let mut got = 0;
        // Bounded: each pass reads at least a byte or leaves.
        while got < buf.len() {
            match r.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.error = Some(format!("{}: {e}", self.path.display()));
                    self.reader = None;
                    break;
                }
            }
        }
        self.pos += got as u64;
        got
    }

    /// Skips `n` bytes; returns how many there were.
    pub fn skip(&mut self, n: u64) -> u64 {
        let Some(r) = self.reader.as_mut() else {
            return 0;
        };
        match std::io::copy(&mut r.by_ref().take(n), &mut std::io::sink()) {
            Ok(k) => {
                self.pos += k;
                k
            }
            Err(e) => {
                self.error = Some(format!("{}: {e}", self.path.display()));
                self.reader = None;
                0
            }
        }
    }

    /// Reads a line of at most 4096 bytes (FromTcpdump's rule).
    pub(crate) fn read_line(&mut self, buf: &mut Vec<u8>) -> LineRead {
        let Some(r) = self.reader.as_mut() else {
            return LineRead::End;
        };
        match read_line(r, buf, &mut self.pos) {
            Ok(l) => l,
            Err(e) => {
                self.error = Some(format!("{}: {e}", self.path.display()));
                self.reader = None;
                LineRead::End
            }
        }
    }

    /// Stops reading: what is left is not read.
    pub fn close(&mut self) {
        self.reader = None;
    }
}

/// Click's warning when a file starts like a gzip or bzip2 file, which
/// bricks does not uncompress.
pub fn compressed_warning(input: &mut TraceInput) -> Option<String> {
    let head = input.peek();
    (head.starts_with(&[0x1f, 0x8b]) || head.starts_with(b"BZh")).then(|| {
        format!(
            "{}: looks compressed (gzip or bzip2); bricks reads only uncompressed files",
            input.path.display()
        )
    })
}

/// One record a format read: its packet, where it goes, where it was.
pub struct Record {
    /// The packet, timestamped.
    pub packet: Packet,
    /// Output 0 (true), or output 1: a packet FORCE_IP found no IP header
    /// in, or FromNLANRDump's records with IP options.
    pub ip: bool,
    /// The file position of the record's start.
    pub filepos: u64,
}

/// How one trace format reads its records.
pub trait RecordFormat: Send {
    /// The next record, `None` at the end of the file. Records the format
    /// cannot read are counted and skipped; a file it cannot go on
    /// reading (a record cut short, a length shorter than its header)
    /// ends.
    fn next(&mut self, input: &mut TraceInput) -> Option<Record>;
    /// The encapsulation of the last record (Click's `encap` handler).
    fn encap(&self) -> String {
        "IP".into()
    }
    /// The format's counters.
    fn stats(&self, s: &mut Stats);
    /// A message about a bad record, taken once (the element prints it).
    fn take_message(&mut self) -> Option<String>;
}

/// Messages about bad records, the first [`MAX_MESSAGES`] kept.
#[derive(Debug, Default)]
pub struct Complaints {
    queued: Vec<String>,
    made: usize,
}

impl Complaints {
    /// Keeps `msg` to be printed, unless enough were.
    pub fn note(&mut self, msg: impl FnOnce() -> String) {
        if self.made < MAX_MESSAGES {
            self.made += 1;
            self.queued.push(msg());
        }
    }

    /// The next message to print.
    pub fn take(&mut self) -> Option<String> {
        (!self.queued.is_empty()).then(|| self.queued.remove(0))
    }
}

/// What [`TimeWindow::check`] says of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Before START: skipped.
    Early,
    /// In the window.
    Inside,
    /// At or after END: the end is reached.
    Late,
}

/// START, START_AFTER, END, END_AFTER and INTERVAL as Click's trace
/// readers apply them: the relative times are fixed at the first record
/// read; once a record passes START, START is done with; END is done
/// with once reached, unless `extend_interval` moves it.
#[derive(Debug, Clone, Default)]
pub struct TimeWindow {
    start: Option<DumpTime>,
    end: Option<DumpTime>,
    interval: Option<u64>,
    /// START and END as times, fixed at the first record.
    first: Option<u64>,
    last: Option<u64>,
    prepared: bool,
    /// END still applies.
    end_live: bool,
}

impl TimeWindow {
    /// A window with these bounds (ns).
    pub fn new(start: Option<DumpTime>, end: Option<DumpTime>, interval: Option<u64>) -> Self {
        TimeWindow {
            start,
            end,
            interval,
            end_live: end.is_some() || interval.is_some(),
            ..TimeWindow::default()
        }
    }

    /// Whether an END, END_AFTER or INTERVAL was given.
    pub fn has_end(&self) -> bool {
        self.end.is_some() || self.interval.is_some()
    }

    fn prepare(&mut self, ts: u64) {
        let at = |t: DumpTime| match t {
            DumpTime::At(a) => a,
            DumpTime::After(d) => ts.saturating_add(d),
        };
        self.first = self.start.map(at);
        self.last = self.end.map(at).or_else(|| {
            self.interval
                .map(|i| self.first.unwrap_or(ts).saturating_add(i))
        });
        self.prepared = true;
    }

    /// Where a record stamped `ts` (ns) falls.
    pub fn check(&mut self, ts: u64) -> Window {
        if !self.prepared {
            self.prepare(ts);
        }
        if let Some(f) = self.first {
            if ts < f {
                return Window::Early;
            }
            self.first = None;
        }
        if self.end_live && self.last.is_some_and(|l| ts >= l) {
            self.end_live = false;
            return Window::Late;
        }
        Window::Inside
    }

    /// `extend_interval`: END moves `d` later and applies again.
    pub fn extend(&mut self, d: u64) {
        self.last = Some(self.last.unwrap_or(0).saturating_add(d));
        self.end_live = true;
    }
}

/// What happens at END or at the end of the file (Click's END_CALL, STOP,
/// and the default `active false` when an END is given).
#[derive(Debug, Clone)]
enum EndAction {
    None,
    /// STOP: `active` false, and the router stops.
    Stop,
    /// `active` false.
    Deactivate,
    /// END_CALL.
    Call(HandlerCall),
}

/// Link-layer encapsulations of trace records (Click's `FAKE_DLT_*`
/// names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encap {
    /// Raw IPv4 or IPv6.
    Ip,
    /// Ethernet II.
    Ether,
    /// ATM with RFC 1483 (RFC 2684) LLC encapsulation.
    Atm,
    /// A 4-byte ATM header, then RFC 1483 (Click's SunATM).
    SunAtm,
    /// Cisco HDLC: address, control, a 2-byte EtherType.
    Hdlc,
    /// PPP, optionally with its address and control bytes.
    Ppp,
    /// PPP in HDLC framing.
    PppHdlc,
}

impl Encap {
    /// Click's names (`fake_pcap_parse_dlt`) for the encapsulations
    /// trace records have.
    pub fn parse(s: &str) -> Option<Encap> {
        Some(match s {
            "IP" => Encap::Ip,
            "ETHER" => Encap::Ether,
            "ATM" | "RFC1483" | "ATM_RFC1483" => Encap::Atm,
            "SUNATM" => Encap::SunAtm,
            "HDLC" => Encap::Hdlc,
            "PPP" => Encap::Ppp,
            "PPP_HDLC" => Encap::PppHdlc,
            _ => return None,
        })
    }

    /// Click's name (`fake_pcap_unparse_dlt`).
    pub fn name(self) -> &'static str {
        match self {
            Encap::Ip => "IP",
            Encap::Ether => "ETHER",
            Encap::Atm => "ATM",
            Encap::SunAtm => "SUNATM",
            Encap::Hdlc => "HDLC",
            Encap::Ppp => "PPP",
            Encap::PppHdlc => "PPP_HDLC",
        }
    }

    /// The offset of the IP header in `d`, a frame of this encapsulation
    /// (Click's `fake_pcap_force_ip`): IPv4 with a header that fits, or
    /// IPv6 with its 40 bytes. `None` when there is none.
    pub fn ip_offset(self, d: &[u8]) -> Option<usize> {
        let off = match self {
            Encap::Ip => Some(0),
            Encap::Ether => ether_ip(d, 0),
            Encap::SunAtm => rfc1483_ip(d, 4),
            Encap::Atm => rfc1483_ip(d, 0),
            Encap::Hdlc => hdlc_ip(d, 0),
            Encap::PppHdlc => match d.get(..4)? {
                [0xff, _, 0, 0x21 | 0x57] => Some(4),
                [0x0f | 0x8f, ..] => hdlc_ip(d, 0),
                _ => None,
            },
            Encap::Ppp => {
                let s = if d.get(..2) == Some(&[0xff, 0x03]) {
                    2
                } else {
                    0
                };
                match d.get(s..s + 2)? {
                    [0x21 | 0x57, _] => Some(s + 1),
                    [0, 0x21 | 0x57] => Some(s + 2),
                    _ => None,
                }
            }
        }?;
        let h = d.get(off..)?;
        match h.first()? >> 4 {
            4 => {
                let hl = usize::from(h[0] & 15) * 4;
                (hl >= 20 && h.len() >= hl).then_some(off)
            }
            6 => (h.len() >= 40).then_some(off),
            _ => None,
        }
    }
}

fn is_ip_type(t: u16) -> bool {
    t == 0x0800 || t == 0x86dd
}

fn be16(d: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*d.get(at)?, *d.get(at + 1)?]))
}

/// Behind an Ethernet header starting at `at`, and at most one 802.1Q tag.
fn ether_ip(d: &[u8], at: usize) -> Option<usize> {
    ethertype_ip(d, at + 12)
}

/// Behind an EtherType at `at`, and at most one 802.1Q tag.
fn ethertype_ip(d: &[u8], at: usize) -> Option<usize> {
    let t = be16(d, at)?;
    if is_ip_type(t) {
        return Some(at + 2);
    }
    (t == 0x8100 && is_ip_type(be16(d, at + 4)?)).then_some(at + 6)
}

/// Behind RFC 1483 LLC encapsulation at `at`: LLC/SNAP with an IP
/// EtherType, LLC with the IP SAPs, or bridged Ethernet.
fn rfc1483_ip(d: &[u8], at: usize) -> Option<usize> {
    let h = d.get(at..at + 8);
    if let Some([0xaa, 0xaa, 0x03, 0, 0, 0, t0, t1]) = h {
        if is_ip_type(u16::from_be_bytes([*t0, *t1])) {
            return Some(at + 8);
        }
    }
    if let Some([0x06, 0x06, ..]) = d.get(at..at + 4) {
        return Some(at + 4);
    }
    let [0xaa, 0xaa, _, o0, o1, o2, p0, p1] = *h? else {
        return None;
    };
    match ([o0, o1, o2], u16::from_be_bytes([p0, p1])) {
        // Encapsulated Ethernet, Cisco bridging: the EtherType is the
        // last two bytes of the SNAP header.
        ([0, 0, 0] | [0, 0, 0xf8], _) => ethertype_ip(d, at + 6),
        // RFC 2684 bridged Ethernet, with or without its FCS, after 2
        // bytes of padding.
        ([0, 0x80, 0xc2], 1 | 7) => ether_ip(d, at + 10),
        _ => None,
    }
}

fn hdlc_ip(d: &[u8], at: usize) -> Option<usize> {
    is_ip_type(be16(d, at + 2)?).then_some(at + 4)
}

/// Sets the network header of a FORCE_IP packet at `off`, and the
/// destination address annotation for IPv4 (as Click does).
pub fn set_ip_header(p: &mut Packet, off: usize) {
    p.set_network_header(off);
    let d = &p.data()[off..];
    if d.len() >= 20 && d[0] >> 4 == 4 {
        p.anno_mut().dst_ip = Ipv4Addr::new(d[16], d[17], d[18], d[19]);
    }
}

/// Annotates a packet of encapsulation `e` as FromDump does: the network
/// header of a raw IP packet, the packet type of an Ethernet frame.
pub fn annotate(p: &mut Packet, e: Encap) {
    match e {
        Encap::Ip => set_ip_header(p, 0),
        Encap::Ether => set_packet_type(p),
        _ => {}
    }
}

/// Which of the shared keywords a class takes.
#[derive(Debug, Clone, Copy)]
pub struct Keywords {
    /// START, START_AFTER, END, END_AFTER, INTERVAL, END_CALL, and the
    /// `extend_interval` handler.
    pub times: bool,
    /// SAMPLE, and the `sampling_prob` handler.
    pub sample: bool,
    /// The `packet_filepos` handler (FromNLANRDump's).
    pub packet_filepos: bool,
}

/// The handlers of a source with every keyword.
const ALL_HANDLERS: &[Handler] = &[
    Handler::r("sampling_prob"),
    Handler::rw("active"),
    Handler::r("encap"),
    Handler::w("stop"),
    Handler::r("filename"),
    Handler::r("filesize"),
    Handler::r("filepos"),
    Handler::r("packet_filepos"),
    Handler::w("extend_interval"),
];

/// The handlers with times and sampling, without `packet_filepos`.
const TIMED_HANDLERS: &[Handler] = &[
    Handler::r("sampling_prob"),
    Handler::rw("active"),
    Handler::r("encap"),
    Handler::w("stop"),
    Handler::r("filename"),
    Handler::r("filesize"),
    Handler::r("filepos"),
    Handler::w("extend_interval"),
];

/// The handlers with sampling only: [`TIMED_HANDLERS`] but
/// `extend_interval`, the last.
const SAMPLED_HANDLERS: &[Handler] = TIMED_HANDLERS.split_at(TIMED_HANDLERS.len() - 1).0;

/// The handlers of a source without times, sampling or
/// `packet_filepos`: [`SAMPLED_HANDLERS`] but `sampling_prob`, the first.
const PLAIN_HANDLERS: &[Handler] = SAMPLED_HANDLERS.split_at(1).1;

/// A trace reader: a [`RecordFormat`] with Click's keywords and handlers.
pub struct TraceSource {
    class: &'static str,
    kw: Keywords,
    format: Box<dyn RecordFormat>,
    input: TraceInput,
    window: TimeWindow,
    end_action: EndAction,
    /// SAMPLE out of 2^28.
    sample: u32,
    rng: u64,
    timing: bool,
    epoch: Option<(Timestamp, Timestamp)>,
    active: bool,
    pull: bool,
    noutputs: usize,
    burst: usize,
    /// A record that passed the window and SAMPLE, waiting for its time
    /// or for `active`.
    held: Option<Record>,
    packet_filepos: u64,
    warnings: Vec<String>,
    pending_calls: Vec<HandlerCall>,
    count: u64,
    skipped: u64,
    not_ip: u64,
    /// The file is read through (or reading was stopped).
    done: bool,
    /// The end of the file was acted on.
    ended: bool,
}

impl TraceSource {
    /// Reads the shared keywords after the format's own (STOP, ACTIVE,
    /// TIMING, BURST, and per `kw` the times and SAMPLE) and makes the
    /// source. `input` is the opened file.
    pub fn make(
        class: &'static str,
        kw: Keywords,
        args: &mut Args<'_>,
        ports: &PortInfo,
        input: TraceInput,
        format: Box<dyn RecordFormat>,
        mut warnings: Vec<String>,
    ) -> Result<TraceSource, ArgError> {
        let stop: bool = args.read("STOP")?.unwrap_or(false);
        let active: bool = args.read("ACTIVE")?.unwrap_or(true);
        let timing: bool = args.read("TIMING")?.unwrap_or(false);
        let burst: usize = args.read("BURST")?.unwrap_or(1);
        let mut window = TimeWindow::default();
        let mut end_call = None;
        if kw.times {
            let (s, e, i) = crate::io::from_dump::read_time_keywords(args)?;
            window = TimeWindow::new(s, e, i);
            end_call = args.read::<String>("END_CALL")?;
        }
        let sample = if kw.sample {
            let s: f64 = args.read("SAMPLE")?.unwrap_or(1.0);
            super::from_tcpdump::sample_arg(s, &mut warnings)?
        } else {
            1 << 28
        };
        let end_action = match (stop, end_call) {
            (true, Some(_)) => {
                return Err(ArgError::new("END_CALL and STOP are mutually exclusive"))
            }
            (_, Some(c)) => EndAction::Call(HandlerCall::parse(&c).map_err(ArgError::new)?),
            (true, None) => EndAction::Stop,
            (false, None) if window.has_end() => EndAction::Deactivate,
            _ => EndAction::None,
        };
        Ok(TraceSource {
            class,
            kw,
            format,
            input,
            window,
            end_action,
            sample,
            rng: 0x9e37_79b9_7f4a_7c15,
            timing,
            epoch: None,
            active,
            pull: ports
                .outputs
                .first()
                .is_some_and(|_| !ports.output_is_push(0)),
            noutputs: ports.noutputs(),
            burst: burst.clamp(1, MAX_BATCH),
            held: None,
            packet_filepos: 0,
            warnings,
            pending_calls: Vec::new(),
            count: 0,
            skipped: 0,
            not_ip: 0,
            done: false,
            ended: false,
        })
    }

    /// Runs the END or end-of-file action.
    fn end_action(&mut self, cx: &mut Context<'_>) {
        match self.end_action.clone() {
            EndAction::None => {}
            EndAction::Stop => {
                self.active = false;
                cx.request_stop();
            }
            EndAction::Deactivate => self.active = false,
            EndAction::Call(c) => match c.own_call(cx.name()) {
                Some((h, v)) => {
                    if let Err(e) = self.own_write(h, v, cx) {
                        eprintln!("{}: {}: {e}", cx.name(), c.unparse());
                    }
                }
                None => c.call(cx, &mut self.pending_calls),
            },
        }
    }

    fn print_messages(&mut self, cx: &mut Context<'_>) {
        while let Some(m) = self.format.take_message() {
            eprintln!("{}: {m}", cx.name());
        }
        if let Some(e) = self.input.error.take() {
            cx.report_error(e);
        }
    }

    /// The next record for output 0 that is due, or `None`: at the end
    /// of the file, while inactive, or waiting for its time (then a timer
    /// is set and `waiting` is true). Records for output 1 leave on the
    /// way. At most `budget` records are looked at.
    fn next_due(
        &mut self,
        cx: &mut Context<'_>,
        budget: &mut usize,
        waiting: &mut bool,
    ) -> Option<Packet> {
        loop {
            if !self.active {
                return None;
            }
            if let Some(rec) = self.held.take() {
                let ts = rec.packet.anno().timestamp;
                let due = if self.timing {
                    Some(trace_due(&mut self.epoch, ts, cx.now()))
                } else if cx.trace_clock() {
                    Some(ts)
                } else {
                    None
                };
                if let Some(at) = due.filter(|&at| at > cx.now()) {
                    self.held = Some(rec);
                    cx.schedule_at(at);
                    *waiting = true;
                    return None;
                }
                self.packet_filepos = rec.filepos;
                return Some(rec.packet);
            }
            if self.done || *budget == 0 {
                return None;
            }
            *budget -= 1;
            let Some(rec) = self.format.next(&mut self.input) else {
                self.print_messages(cx);
                self.done = true;
                return None;
            };
            self.print_messages(cx);
            match self.window.check(rec.packet.anno().timestamp.0) {
                Window::Early => {
                    self.skipped += 1;
                    continue;
                }
                Window::Inside => {}
                Window::Late => {
                    // Kept: it leaves if reading goes on (`active`
                    // written, `extend_interval`).
                    self.held = Some(rec);
                    self.end_action(cx);
                    let Some(rec) = self.held.take() else {
                        continue;
                    };
                    if !self.active {
                        self.held = Some(rec);
                        return None;
                    }
                    if self.window.check(rec.packet.anno().timestamp.0) == Window::Late {
                        self.held = Some(rec);
                        return None;
                    }
                    self.route(rec, cx);
                    continue;
                }
            }
            self.route(rec, cx);
        }
    }

    /// SAMPLE, then output 0 (held) or output 1.
    fn route(&mut self, rec: Record, cx: &mut Context<'_>) {
        if !sample_draw(&mut self.rng, self.sample) {
            self.skipped += 1;
            return;
        }
        if rec.ip {
            self.held = Some(rec);
        } else {
            self.not_ip += 1;
            if self.noutputs > 1 {
                cx.push_one(1, rec.packet);
            }
        }
    }

    /// Fills `out` with up to `max` packets; returns how many and whether
    /// the source waits for a timer.
    fn fill(&mut self, out: &mut Batch, max: usize, cx: &mut Context<'_>) -> (usize, bool) {
        let mut n = 0;
        let mut waiting = false;
        let mut budget = max * 4 + 4;
        while n < max && !out.is_full() {
            let Some(p) = self.next_due(cx, &mut budget, &mut waiting) else {
                break;
            };
            let _ = out.push(p);
            n += 1;
        }
        self.count += n as u64;
        if self.done && self.held.is_none() && !self.ended {
            self.ended = true;
            self.end_action(cx);
        }
        (n, waiting)
    }

    fn finished(&self) -> bool {
        self.done && self.held.is_none()
    }

    /// The write handlers, also for END_CALL's calls to this element.
    fn own_write(
        &mut self,
        handler: &str,
        value: &str,
        cx: &mut Context<'_>,
    ) -> Result<(), String> {
        match handler {
            "stop" => {
                self.active = false;
                cx.request_stop();
                Ok(())
            }
            _ => self.write_handler(handler, value),
        }
    }
}

impl Element for TraceSource {
    fn task_kind(&self) -> TaskKind {
        if self.pull {
            TaskKind::None
        } else {
            TaskKind::Source
        }
    }

    fn configure_message(&self) -> Option<String> {
        super::warnings_message(&self.warnings)
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        self.fill(out, max.clamp(1, MAX_BATCH), cx);
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if self.finished() && self.ended && self.pending_calls.is_empty() {
            return TaskResult::Done;
        }
        if !self.active {
            return TaskResult::Idle;
        }
        let mut b = Batch::new();
        let (n, waiting) = self.fill(&mut b, self.burst, cx);
        cx.push(0, &mut b);
        if self.finished() && self.pending_calls.is_empty() {
            TaskResult::Done
        } else if n > 0 || (!waiting && !self.done && self.active) {
            TaskResult::Worked
        } else if waiting || !self.pending_calls.is_empty() {
            TaskResult::Waiting
        } else {
            TaskResult::Idle
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        HandlerCall::run_pending(cx, &mut self.pending_calls);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("skipped", self.skipped);
        s.counter("not_ip", self.not_ip);
        self.format.stats(s);
    }

    fn empty_signal(&self, _port: usize) -> Option<bool> {
        // Pulled, Click's readers are empty notifiers: asleep while
        // inactive and once the file is done.
        Some(self.active && !self.finished())
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        Some(match handler {
            "active" => self.active.to_string(),
            "encap" => self.format.encap(),
            "sampling_prob" if self.kw.sample => sample_text(self.sample),
            "filename" => self.input.path.display().to_string(),
            "filesize" => self
                .input
                .size
                .map_or_else(|| "-".into(), |n| n.to_string()),
            "filepos" => self.input.pos.to_string(),
            "packet_filepos" if self.kw.packet_filepos => self.packet_filepos.to_string(),
            _ => return None,
        })
    }

    fn handlers(&self) -> &'static [Handler] {
        match (self.kw.times, self.kw.sample, self.kw.packet_filepos) {
            (true, _, true) => ALL_HANDLERS,
            (true, _, false) => TIMED_HANDLERS,
            (false, true, _) => SAMPLED_HANDLERS,
            _ => PLAIN_HANDLERS,
        }
    }

    fn call_handler(
        &mut self,
        handler: &str,
        _value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        call_stop(handler, write, &mut self.active, cx)
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        use bricks_element::FromArg;
        match handler {
            "active" => {
                self.active =
                    bool::from_arg(value.trim()).map_err(|_| "type mismatch".to_string())?
            }
            "extend_interval" if self.kw.times => {
                let d = Duration::from_arg(value.trim())
                    .map_err(|_| "'extend_interval' takes a time interval".to_string())?;
                self.window
                    .extend(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
                if !matches!(self.end_action, EndAction::None) {
                    self.active = true;
                }
            }
            _ => {
                return Err(format!(
                    "no write handler `{handler}` ({} has `active`, `stop`{})",
                    self.class,
                    if self.kw.times {
                        ", `extend_interval`"
                    } else {
                        ""
                    }
                ))
            }
        }
        Ok(())
    }
}

/// Completes the headers of the packet a flow record describes (NLANR's
/// FR, NetFlow summaries): `b` holds an IPv4 header of IP length `ip_len`
/// with its protocol, and the ports (and TCP flags) behind it. Sets the
/// TCP header length or the UDP length and returns how many bytes the
/// packet holds: 40 for TCP, 28 for UDP, the IP header for the rest.
pub(crate) fn flow_headers(b: &mut [u8; 40], ip_len: u16) -> usize {
    match b[9] {
        6 => {
            b[32] = 5 << 4;
            40
        }
        17 => {
            b[24..26].copy_from_slice(&ip_len.saturating_sub(20).to_be_bytes());
            28
        }
        _ => 20,
    }
}

/// The timestamp of `sec` seconds and `usec` microseconds (which may
/// exceed a second: it carries).
pub fn usec_time(sec: u32, usec: u32) -> Timestamp {
    Timestamp(u64::from(sec) * 1_000_000_000 + u64::from(usec) * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_follows_clicks_rules() {
        let mut w = TimeWindow::new(Some(DumpTime::After(10)), None, Some(5));
        assert_eq!(w.check(100), Window::Early);
        assert_eq!(w.check(109), Window::Early);
        assert_eq!(w.check(110), Window::Inside);
        // START is done with once passed.
        assert_eq!(w.check(50), Window::Inside);
        assert_eq!(w.check(114), Window::Inside);
        assert_eq!(w.check(115), Window::Late);
        // Reached once; then only `extend_interval` brings it back.
        assert_eq!(w.check(200), Window::Inside);
        w.extend(100);
        assert_eq!(w.check(214), Window::Inside);
        assert_eq!(w.check(215), Window::Late);
        let mut w = TimeWindow::new(None, Some(DumpTime::At(7)), None);
        assert!(w.has_end());
        assert_eq!(w.check(1), Window::Inside);
        assert_eq!(w.check(7), Window::Late);
        assert!(!TimeWindow::new(None, None, None).has_end());
    }

    #[test]
    fn the_handler_tables_are_subsets_in_order() {
        let names = |h: &[Handler]| h.iter().map(|h| h.name).collect::<Vec<_>>().join(" ");
        assert_eq!(
            names(SAMPLED_HANDLERS),
            "sampling_prob active encap stop filename filesize filepos"
        );
        assert_eq!(
            names(PLAIN_HANDLERS),
            "active encap stop filename filesize filepos"
        );
    }

    #[test]
    fn force_ip_finds_the_header_behind_each_encapsulation() {
        let ip4 = [
            0x45u8, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        let cat = |a: &[u8]| [a, &ip4[..]].concat();
        let eth = cat(&[0; 12]
            .iter()
            .chain(&[0x08, 0x00])
            .copied()
            .collect::<Vec<_>>());
        assert_eq!(Encap::Ether.ip_offset(&eth), Some(14));
        let vlan = cat(&[[0u8; 12].as_slice(), &[0x81, 0, 0, 5, 0x08, 0]].concat());
        assert_eq!(Encap::Ether.ip_offset(&vlan), Some(18));
        let snap = cat(&[0xaa, 0xaa, 3, 0, 0, 0, 8, 0]);
        assert_eq!(Encap::Atm.ip_offset(&snap), Some(8));
        assert_eq!(
            Encap::SunAtm.ip_offset(&[&[0, 0, 0, 0][..], &snap].concat()),
            Some(12)
        );
        let bridged = [&[0xaa, 0xaa, 3, 0, 0x80, 0xc2, 0, 7, 0, 0][..], &eth].concat();
        assert_eq!(Encap::Atm.ip_offset(&bridged), Some(24));
        // Encapsulated Ethernet: the SNAP header's last two bytes are the
        // EtherType, here a VLAN tag (whose Ethernet header would start
        // before the frame).
        let tagged = cat(&[0xaa, 0xaa, 3, 0, 0, 0, 0x81, 0, 0, 5, 8, 0]);
        assert_eq!(Encap::Atm.ip_offset(&tagged), Some(12));
        assert_eq!(Encap::Atm.ip_offset(&tagged[..12]), None);
        assert_eq!(Encap::Hdlc.ip_offset(&cat(&[0x0f, 0, 8, 0])), Some(4));
        assert_eq!(Encap::PppHdlc.ip_offset(&cat(&[0xff, 3, 0, 0x21])), Some(4));
        assert_eq!(Encap::PppHdlc.ip_offset(&cat(&[0x8f, 0, 8, 0])), Some(4));
        assert_eq!(Encap::Ppp.ip_offset(&cat(&[0xff, 3, 0, 0x21])), Some(4));
        assert_eq!(Encap::Ppp.ip_offset(&cat(&[0x21])), Some(1));
        assert_eq!(Encap::Ip.ip_offset(&ip4), Some(0));
        // An IPv4 header longer than the bytes, version 5, ARP: none.
        let mut long = ip4;
        long[0] = 0x46;
        assert_eq!(Encap::Ip.ip_offset(&long), None);
        long[0] = 0x55;
        assert_eq!(Encap::Ip.ip_offset(&long), None);
        let mut arp = eth.clone();
        arp[13] = 6;
        assert_eq!(Encap::Ether.ip_offset(&arp), None);
        // Cut anywhere: no panic, no header.
        for e in [
            Encap::Ip,
            Encap::Ether,
            Encap::Atm,
            Encap::SunAtm,
            Encap::Hdlc,
            Encap::Ppp,
            Encap::PppHdlc,
        ] {
            assert_eq!(Encap::parse(e.name()), Some(e));
            for n in 0..bridged.len().min(20) {
                assert_eq!(e.ip_offset(&bridged[..n]), None);
            }
        }
    }
}
