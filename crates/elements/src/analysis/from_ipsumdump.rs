//! `FromIPSummaryDump`: reads packets described by an IP summary dump
//! (Click's `elements/analysis/fromipsumdump.cc`).

use super::from_tcpdump::{call_stop, open_input_with};
use super::info::{self, BuildOptions, Extras, Field, FlowId, Record};
use super::ipsumdump_binary as binary;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_packet::{Packet, Timestamp, MAX_BATCH};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// The `FromIPSummaryDump` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FromIPSummaryDump",
    ports: "0/1",
    processing: "/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "reads packets from an IP summary dump",
    synopsis: "FromIPSummaryDump(FILENAME [, KEYWORDS])",
    description: "Reads the text (or binary) dump that ToIPSummaryDump writes and pushes \
        one packet per line or record, built as Click builds it: the fields apply in \
        Click's order (annotations, \
        the IP header, the transport header, the payload); a field of the IP or transport \
        header makes an IPv4 header (TTL 100, the default protocol) and the protocol's \
        header; `payload` gives the payload's bytes (a quoted string with C escapes), \
        `ip_opt` and `tcp_opt` the options in Click's text (`mss1460;sackok`, \
        `rr{1.2.3.4}`). The packet holds the headers and the payload given; the IP \
        length says the rest (CHECKSUM true makes the packet as long as its IP length, \
        zero-filled, and sets the IP and transport checksums). `!data` (or `!contents`) \
        names the fields of the lines after it, `!proto` the protocol of headers a line \
        does not name, `!flowid SRC SPORT DST DPORT [PROTO]` addresses and ports of \
        lines that give none, `!aggregate N` the aggregate annotation. A field written \
        `-` is absent. A malformed line is skipped and counted, with a message naming \
        the file and line; lines longer than 4096 bytes are malformed. After a \
        `!binary` line the dump is binary, as ToIPSummaryDump BINARY true writes it: \
        records of a 4-byte big-endian length (itself included) and each `!data` field \
        in Click's binary encoding (payload has none: a record's fields end there; a \
        field cut short and those after it are absent, bytes after the last are \
        ignored); a length with its top bit set is a text record (`!bad`, `!data`, a \
        comment), its length the text's alone. An empty record is skipped; a record \
        longer than 65,536 bytes is skipped and counted; a length under 4, or a record \
        cut short by the end of the file, is counted and ends the dump. Where Click's \
        reader misreads what its writer wrote (ts_usec1's words, ip_frag's letter, the \
        second copy of ip_opt and tcp_opt, a `!bad` record's length), bricks reads what \
        was written. With TIMING, \
        packets leave when the router's clock has gone as far past the first packet's \
        departure as their timestamps are past the first's (with `--simtime` the clock \
        jumps to them). With `--clock trace` the router's clock follows the timestamps.",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        Keyword {
            name: "FILENAME",
            ty: "file name",
            default: None,
            doc: "the dump to read; `-` is standard input (mandatory unless DATA is given)",
        },
        Keyword {
            name: "DATA",
            ty: "string",
            default: Some("none"),
            doc: "the dump's text itself, instead of FILENAME",
        },
        Keyword {
            name: "STOP",
            ty: "boolean",
            default: Some("false"),
            doc: "stop the router when the file is done",
        },
        Keyword {
            name: "TIMING",
            ty: "boolean",
            default: Some("false"),
            doc: "emit packets at the pace of their timestamps on the router's clock",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "read at all (false: wait for `active` to be written)",
        },
        Keyword {
            name: "ZERO",
            ty: "boolean",
            default: Some("true"),
            doc: "bytes the line does not give are zero (they always are)",
        },
        Keyword {
            name: "CHECKSUM",
            ty: "boolean",
            default: Some("false"),
            doc: "fill the packet to its IP length and set IP, TCP, UDP and ICMP checksums",
        },
        Keyword {
            name: "PROTO",
            ty: "IP protocol",
            default: Some("TCP"),
            doc: "protocol of IP headers whose line gives none (as `!proto`)",
        },
        Keyword {
            name: "MULTIPACKET",
            ty: "boolean",
            default: Some("false"),
            doc: "a line with a count field makes that many packets, the IP length shared \
                  among them and the timestamps spread from first_timestamp",
        },
        Keyword {
            name: "SAMPLE",
            ty: "probability",
            default: Some("1"),
            doc: "emit each packet with this probability",
        },
        Keyword {
            name: "DEFAULT_CONTENTS",
            ty: "field names",
            default: None,
            doc: "fields of the lines until a `!data` line (also CONTENTS, FIELDS, \
                  DEFAULT_FIELDS)",
        },
        Keyword {
            name: "FLOWID",
            ty: "SRC SPORT DST DPORT [PROTO]",
            default: None,
            doc: "as a `!flowid` line (also DEFAULT_FLOWID)",
        },
        Keyword {
            name: "ALLOW_NONEXISTENT",
            ty: "boolean",
            default: Some("false"),
            doc: "a missing FILENAME is an empty dump",
        },
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("1"),
            doc: "packets per batch (up to 256); 1, as Click, keeps the order in which \
                  packets reach elements downstream of a switch",
        },
    ],
    counters: &[
        ("count", "packets emitted"),
        ("bad_lines", "malformed lines and binary records skipped"),
    ],
    example: "FromIPSummaryDump(crates/elements/src/analysis/sample.ipsum, STOP true, \
        CHECKSUM true) -> Discard;",
    see_also: &["ToIPSummaryDump", "FromDump", "IPPrint"],
};

/// Most packets one line makes under MULTIPACKET.
pub(crate) const MAX_COUNT: u32 = 1 << 16;

/// Messages printed about bad lines; the rest are only counted.
const MAX_MESSAGES: u64 = 10;

fn fields_arg(v: Option<String>) -> Result<Option<Vec<Field>>, ArgError> {
    v.map(|t| {
        let f = info::parse_fields(&t).map_err(|e| ArgError::new(format!("bad CONTENTS: {e}")))?;
        refuse_unreadable(&f).map_err(ArgError::new)?;
        Ok(f)
    })
    .transpose()
}

fn refuse_unreadable(f: &[Field]) -> Result<(), String> {
    match f.iter().find(|f| !f.readable()) {
        Some(f) => Err(format!(
            "field `{}` cannot be read (Click writes it only)",
            f.name()
        )),
        None => Ok(()),
    }
}

/// Click's protocol names for PROTO and `!proto`.
fn parse_proto(w: &str) -> Option<u8> {
    match w {
        "T" | "tcp" | "TCP" => Some(6),
        "U" | "udp" | "UDP" => Some(17),
        "I" | "icmp" | "ICMP" => Some(1),
        "igmp" => Some(2),
        "ipip" => Some(4),
        "gre" => Some(47),
        "dccp" => Some(33),
        "sctp" => Some(132),
        _ => w.parse().ok(),
    }
}

/// A `!flowid` line's words after the keyword.
fn parse_flowid(rest: &str) -> Option<(FlowId, Option<u8>)> {
    let w: Vec<&str> = rest.split_ascii_whitespace().collect();
    if w.len() < 4 {
        return None;
    }
    let addr = |s: &str| {
        if s == "-" {
            Some(Ipv4Addr::UNSPECIFIED)
        } else {
            s.parse().ok()
        }
    };
    let port = |s: &str| {
        if s == "-" {
            Some(0)
        } else {
            s.parse::<u16>().ok()
        }
    };
    let id = (addr(w[0])?, port(w[1])?, addr(w[2])?, port(w[3])?);
    let proto = match w.get(4) {
        Some(p) => Some(parse_proto(p)?),
        None => None,
    };
    Some((id, proto))
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let path: Option<PathBuf> = args.read_p("FILENAME")?;
    let data: Option<String> = args.read("DATA")?;
    let stop = args.read("STOP")?.unwrap_or(false);
    let timing = args.read("TIMING")?.unwrap_or(false);
    let active = args.read("ACTIVE")?.unwrap_or(true);
    let _zero: bool = args.read("ZERO")?.unwrap_or(true);
    let checksum = args.read("CHECKSUM")?.unwrap_or(false);
    let proto: Option<String> = args.read("PROTO")?;
    let multipacket = args.read("MULTIPACKET")?.unwrap_or(false);
    let sample: f64 = args.read("SAMPLE")?.unwrap_or(1.0);
    // Click reads all four names into the same default.
    let mut contents = None;
    for key in ["DEFAULT_CONTENTS", "DEFAULT_FIELDS", "CONTENTS", "FIELDS"] {
        if let Some(f) = fields_arg(args.read(key)?)? {
            contents = Some(f);
        }
    }
    let mut flowid_text: Option<String> = args.read("DEFAULT_FLOWID")?;
    if let Some(f) = args.read::<String>("FLOWID")? {
        flowid_text = Some(f);
    }
    let allow_nonexistent = args.read("ALLOW_NONEXISTENT")?.unwrap_or(false);
    let burst: usize = args.read("BURST")?.unwrap_or(1);
    let mut opts = BuildOptions {
        checksum,
        ..BuildOptions::default()
    };
    if let Some(p) = proto {
        opts.proto =
            parse_proto(&p).ok_or_else(|| ArgError::new(format!("bad argument PROTO: `{p}`")))?;
    }
    if let Some(t) = flowid_text {
        let (id, proto) = parse_flowid(&t).ok_or_else(|| ArgError::new("bad argument FLOWID"))?;
        opts.flowid = Some(id);
        if let Some(p) = proto {
            opts.proto = p;
        }
    }
    if !(0.0..=1.0).contains(&sample) {
        return Err(ArgError::new(
            "bad argument SAMPLE: a probability from 0 to 1",
        ));
    }
    // Unlike FromTcpdump, a missing file may be allowed, and the size is
    // any file's, not only a regular file's.
    let (input, path, size) = open_input_with(path, data, |p| match File::open(&p) {
        Ok(f) => {
            let n = f.metadata().ok().map(|m| m.len());
            Ok((Some(Box::new(f)), p, n))
        }
        Err(e) if allow_nonexistent && e.kind() == std::io::ErrorKind::NotFound => {
            Ok((None, p, None))
        }
        Err(e) => Err(ArgError::new(format!("{}: {e}", p.display()))),
    })?;
    let pull = ports
        .outputs
        .first()
        .is_some_and(|_| !ports.output_is_push(0));
    Ok(Box::new(FromIPSummaryDump {
        pull,
        reader: input.map(|i| BufReader::with_capacity(1 << 16, i)),
        fields: contents.unwrap_or_default(),
        lineno: 0,
        binary: false,
        minor: 3,
        filepos: 0,
        filesize: size,
        path,
        stop,
        timing,
        active,
        opts,
        multipacket,
        sample: (sample * f64::from(1u32 << 28)).round() as u32,
        rng: 0x9e37_79b9_7f4a_7c15,
        burst: burst.clamp(1, MAX_BATCH),
        pending: None,
        epoch: None,
        count: 0,
        bad_lines: 0,
        done: false,
        stopped: false,
    }))
}

/// A line's packet not yet emitted: under MULTIPACKET, the copies left
/// (Click's `handle_multipacket`, which FromNetFlowSummaryDump shares).
pub(crate) struct Pending {
    p: Packet,
    /// Packets still to emit, this one included.
    left: u32,
    /// IP length of each but the last.
    each_len: u32,
    /// IP length of the last.
    last_len: u32,
    /// Time between copies (nanoseconds).
    delta: u64,
    /// Timestamp of the last copy.
    end: Timestamp,
}

/// Reads a summary dump.
pub struct FromIPSummaryDump {
    /// The output is pull: packets leave when pulled, no task.
    pull: bool,
    reader: Option<BufReader<Box<dyn Read + Send>>>,
    fields: Vec<Field>,
    lineno: u64,
    /// After a `!binary` line: records, not lines, follow.
    binary: bool,
    /// The dump's minor version (1.0 dumps give fragment offsets in
    /// 8-byte units).
    minor: u8,
    filepos: u64,
    filesize: Option<u64>,
    path: PathBuf,
    stop: bool,
    timing: bool,
    active: bool,
    opts: BuildOptions,
    multipacket: bool,
    /// SAMPLE as a fraction of 2^28 (Click's fixed point).
    sample: u32,
    rng: u64,
    burst: usize,
    pending: Option<Pending>,
    /// TIMING: the first packet's timestamp and the router's time it left.
    epoch: Option<(Timestamp, Timestamp)>,
    count: u64,
    bad_lines: u64,
    done: bool,
    stopped: bool,
}

/// What one line of a dump is.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// Nothing to do: blank, a comment, or a header line bricks ignores.
    Skip,
    /// A `!data` line: the fields of the lines that follow.
    Data(Vec<Field>),
    /// A `!proto` line: the protocol of headers lines do not name.
    Proto(u8),
    /// A `!flowid` line: addresses and ports, and maybe a protocol.
    FlowId(FlowId, Option<u8>),
    /// An `!aggregate` line.
    Aggregate(u32),
    /// A `!binary` line: binary records follow; false when words follow
    /// the keyword (Click complains, and reads binary records all the
    /// same).
    Binary(bool),
    /// A packet record.
    Record(Record),
}

/// `!word` followed by a space, and what follows.
fn bang<'a>(t: &'a str, word: &str) -> Option<&'a str> {
    let rest = t.strip_prefix(word)?;
    rest.starts_with(|c: char| c.is_ascii_whitespace())
        .then_some(rest)
}

/// Parses one line of a dump whose lines have `fields`.
pub fn parse(fields: &[Field], text: &str) -> Result<Line, String> {
    parse_version(fields, text, 3)
}

/// [`parse`] for a dump of version 1.`minor`.
pub fn parse_version(fields: &[Field], text: &str, minor: u8) -> Result<Line, String> {
    let t = text.trim_end_matches(['\n', '\r']);
    if t.trim().is_empty() {
        return Ok(Line::Skip);
    }
    if t.starts_with('!') {
        if let Some(rest) = bang(t, "!data").or_else(|| bang(t, "!contents")) {
            let f = info::parse_fields(rest)?;
            if f.is_empty() {
                return Err("no contents specified".into());
            }
            refuse_unreadable(&f)?;
            return Ok(Line::Data(f));
        }
        if let Some(rest) = bang(t, "!proto") {
            let w: Vec<&str> = rest.split_ascii_whitespace().collect();
            return match w[..] {
                [p] => parse_proto(p)
                    .map(Line::Proto)
                    .ok_or_else(|| "bad protocol in !proto".into()),
                _ => Err("bad !proto".into()),
            };
        }
        if let Some(rest) = bang(t, "!flowid") {
            return parse_flowid(rest)
                .map(|(id, p)| Line::FlowId(id, p))
                .ok_or_else(|| "bad !flowid specification".into());
        }
        if let Some(rest) = bang(t, "!aggregate") {
            return rest
                .trim()
                .parse()
                .map(Line::Aggregate)
                .map_err(|_| "bad !aggregate specification".into());
        }
        if let Some(rest) = bang(t, "!binary") {
            return Ok(Line::Binary(rest.trim().is_empty()));
        }
        if t == "!binary" {
            return Ok(Line::Binary(true));
        }
        return Ok(Line::Skip);
    }
    if t.starts_with('#') {
        return Ok(Line::Skip);
    }
    if fields.is_empty() {
        return Err("no '!data' provided".into());
    }
    info::parse_line_version(fields, t, minor).map(Line::Record)
}

/// The minor version a dump's first line gives (`!IPSummaryDump 1.0`).
fn minor_version(first: &str) -> Option<u8> {
    let v = first.strip_prefix("!IPSummaryDump")?.trim();
    let (major, minor) = v.split_once('.')?;
    (major == "1").then(|| minor.parse().ok())?
}

impl FromIPSummaryDump {
    /// The packet of a binary record's `body`; `None` (counted when
    /// malformed) when it makes none.
    fn binary_packet(&mut self, cx: &mut Context<'_>, body: &[u8]) -> Option<(Packet, Extras)> {
        if body.is_empty() {
            // Click skips an empty record.
            return None;
        }
        if self.fields.is_empty() {
            self.bad(cx, "no '!data' provided");
            return None;
        }
        let r = binary::read_record(&self.fields, body);
        if r.values.is_empty() {
            self.bad(cx, "packet parse error");
            return None;
        }
        Some(info::build(&r, &self.opts))
    }

    /// Reads lines (or, after `!binary`, records) up to the next record's
    /// packet; `None` at the end.
    fn read_packet(&mut self, cx: &mut Context<'_>) -> Option<(Packet, Extras)> {
        let mut buf = Vec::new();
        // Bounded: every pass consumes a line or a record, or ends the
        // file.
        loop {
            let reader = self.reader.as_mut()?;
            if self.binary {
                let r = binary::read_frame(reader, &mut buf, &mut self.filepos);
                self.lineno += 1;
                match r {
                    Ok(None) => {
                        self.reader = None;
                        return None;
                    }
                    Ok(Some(false)) => match self.binary_packet(cx, &buf) {
                        Some(p) => return Some(p),
                        None => continue,
                    },
                    Ok(Some(true)) => {
                        if buf.len() > info::MAX_LINE {
                            self.bad(cx, "line too long");
                            continue;
                        }
                        // Click reads a text record that is not a `!` or
                        // `#` line as a binary one.
                        if !buf.is_empty() && buf[0] != b'!' && buf[0] != b'#' {
                            match self.binary_packet(cx, &buf) {
                                Some(p) => return Some(p),
                                None => continue,
                            }
                        }
                    }
                    Err(e @ binary::FrameError::TooLong(_)) => {
                        self.bad(cx, &e.to_string());
                        continue;
                    }
                    Err(binary::FrameError::Io(e)) => {
                        cx.report_error(format!("{}: {e}", self.path.display()));
                        self.reader = None;
                        return None;
                    }
                    Err(e) => {
                        self.bad(cx, &e.to_string());
                        self.reader = None;
                        return None;
                    }
                }
            } else if !self.read_line(cx, &mut buf) {
                return None;
            } else if buf.is_empty() {
                continue;
            }
            let text = String::from_utf8_lossy(&buf);
            if self.lineno == 1 && !self.binary {
                if let Some(m) = minor_version(text.trim_end()) {
                    self.minor = m.min(3);
                }
            }
            match parse_version(&self.fields, &text, self.minor) {
                Ok(Line::Skip) => {}
                Ok(Line::Data(f)) => self.fields = f,
                Ok(Line::Proto(p)) => self.opts.proto = p,
                Ok(Line::FlowId(id, p)) => {
                    self.opts.flowid = Some(id);
                    if let Some(p) = p {
                        self.opts.proto = p;
                    }
                }
                Ok(Line::Aggregate(a)) => self.opts.aggregate = Some(a),
                Ok(Line::Binary(well_formed)) => {
                    if !well_formed {
                        self.bad(cx, "bad !binary specification");
                    }
                    // As Click: records are counted from here.
                    self.binary = true;
                    self.lineno = 1;
                }
                Ok(Line::Record(r)) => {
                    if r.values.is_empty() {
                        self.bad(cx, "packet parse error");
                        continue;
                    }
                    return Some(info::build(&r, &self.opts));
                }
                Err(e) => self.bad(cx, &e),
            }
        }
    }

    /// Reads the next text line into `buf`; false at the end of the file.
    /// A line too long is skipped and counted, leaving `buf` empty.
    fn read_line(&mut self, cx: &mut Context<'_>, buf: &mut Vec<u8>) -> bool {
        {
            let Some(reader) = self.reader.as_mut() else {
                return false;
            };
            buf.clear();
            let r = reader
                .by_ref()
                .take(info::MAX_LINE as u64 + 1)
                .read_until(b'\n', buf);
            match r {
                Ok(0) => {
                    self.reader = None;
                    return false;
                }
                Ok(n) => self.filepos += n as u64,
                Err(e) => {
                    cx.report_error(format!("{}: {e}", self.path.display()));
                    self.reader = None;
                    return false;
                }
            }
            self.lineno += 1;
            if buf.len() <= info::MAX_LINE || buf.last() == Some(&b'\n') {
                return true;
            }
            // Skip the rest of the long line, a bounded piece at a time.
            while let Ok(n) = reader.by_ref().take(1 << 16).read_until(b'\n', buf) {
                self.filepos += n as u64;
                if n == 0 || buf.last() == Some(&b'\n') {
                    break;
                }
                buf.clear();
            }
            buf.clear();
        }
        self.bad(cx, "line too long");
        true
    }

    /// The next packet to emit (the next copy of a multi-packet line), not
    /// yet taken from `pending`.
    fn next(&mut self, cx: &mut Context<'_>) -> bool {
        if self.pending.is_some() {
            return true;
        }
        let Some((p, x)) = self.read_packet(cx) else {
            return false;
        };
        let count = if self.multipacket {
            x.count.clamp(1, MAX_COUNT)
        } else {
            1
        };
        let len = p.len() as u32;
        let total = ip_len(&p).map_or(len, |l| u32::from(l).max(len));
        self.pending = Some(Pending::new(p, count, total, x.first_timestamp));
        true
    }

    fn bad(&mut self, cx: &mut Context<'_>, msg: &str) {
        self.bad_lines += 1;
        if self.bad_lines <= MAX_MESSAGES {
            // Click's landmarks: `FILE:LINE`, then `FILE:record N`.
            let record = if self.binary { "record " } else { "" };
            eprintln!(
                "{}: {}:{record}{}: {msg}",
                cx.name(),
                self.path.display(),
                self.lineno
            );
        }
    }

    /// TIMING: when a packet stamped `ts` is due on the router's clock.
    fn due_at(&mut self, ts: Timestamp, now: Timestamp) -> Timestamp {
        let (t0, n0) = *self.epoch.get_or_insert((ts, now));
        Timestamp(n0.0.saturating_add(ts.0.saturating_sub(t0.0)))
    }

    /// Takes the next copy out of `pending`.
    fn take(&mut self) -> Option<Packet> {
        Pending::take(&mut self.pending, self.opts.checksum)
    }

    fn sampled(&mut self) -> bool {
        if self.sample >= 1 << 28 {
            return true;
        }
        // SplitMix64: repeatable runs.
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z as u32) & ((1 << 28) - 1)) < self.sample
    }

    /// Fills `out`; returns the packets put there and whether the source
    /// waits for the clock.
    fn fill(&mut self, out: &mut Batch, cx: &mut Context<'_>) -> (usize, bool) {
        let mut n = 0;
        let mut looked = 0;
        // Bounded: at most a burst's worth of packets looked at.
        while n < self.burst && !out.is_full() && looked < self.burst * 4 {
            if !self.next(cx) {
                self.done = true;
                break;
            }
            looked += 1;
            let ts = self
                .pending
                .as_ref()
                .map_or_else(Timestamp::default, |p| p.p.anno().timestamp);
            if self.timing {
                let due = self.due_at(ts, cx.now());
                if due > cx.now() {
                    cx.schedule_at(due);
                    return (n, true);
                }
            } else if cx.trace_clock() && ts > cx.now() {
                cx.schedule_at(ts);
                return (n, true);
            }
            let Some(p) = self.take() else { break };
            if !self.sampled() {
                continue;
            }
            let _ = out.push(p);
            n += 1;
        }
        (n, false)
    }
}

impl Pending {
    /// `count` packets (at most [`MAX_COUNT`]) made from `p`, sharing
    /// `total` bytes of IP length, their timestamps stepped from `first`
    /// (when given and not zero) to `p`'s: Click's `handle_multipacket`,
    /// the line's length shared out.
    pub(crate) fn new(p: Packet, count: u32, total: u32, first: Option<Timestamp>) -> Pending {
        let count = count.clamp(1, MAX_COUNT);
        let mut pend = Pending {
            p,
            left: count,
            each_len: 0,
            last_len: 0,
            delta: 0,
            end: Timestamp::default(),
        };
        if count > 1 {
            let len = pend.p.len() as u32;
            let mut each = total / count;
            let mut total = total;
            if each < len {
                each = len;
                total = len * count;
            }
            pend.each_len = each;
            pend.last_len = total - each * (count - 1);
            pend.end = pend.p.anno().timestamp;
            if let Some(first) = first.filter(|f| f.0 != 0) {
                pend.delta = pend.end.0.saturating_sub(first.0) / u64::from(count - 1);
                pend.p.anno_mut().timestamp = first;
            }
        }
        pend
    }

    /// Takes the next copy out of `slot`, emptying it after the last;
    /// `checksum` sets the IP checksum of copies whose length changed.
    pub(crate) fn take(slot: &mut Option<Pending>, checksum: bool) -> Option<Packet> {
        let pend = slot.as_mut()?;
        if pend.left <= 1 {
            let mut pend = slot.take()?;
            if pend.each_len > 0 {
                pend.p.anno_mut().timestamp = pend.end;
                set_ip_len(&mut pend.p, pend.last_len, checksum);
            }
            return Some(pend.p);
        }
        let mut q = pend.p.duplicate();
        set_ip_len(&mut q, pend.each_len, checksum);
        pend.left -= 1;
        let t = pend.p.anno().timestamp;
        pend.p.anno_mut().timestamp = Timestamp(t.0.saturating_add(pend.delta));
        Some(q)
    }
}

fn ip_len(p: &Packet) -> Option<u16> {
    let h = p.network_header()?;
    (h.len() >= 20 && h[0] >> 4 == 4).then(|| u16::from_be_bytes([h[2], h[3]]))
}

/// Sets the IP length (and a UDP length) of a multi-packet line's copy.
fn set_ip_len(p: &mut Packet, len: u32, checksum: bool) {
    let Some(h) = p.network_header_mut() else {
        return;
    };
    if h.len() < 20 || h[0] >> 4 != 4 {
        return;
    }
    let len = len.min(0xffff) as u16;
    let missing = usize::from(len).saturating_sub(h.len()) as u32;
    h[2..4].copy_from_slice(&len.to_be_bytes());
    let hl = usize::from(h[0] & 15) * 4;
    if h[9] == 17 && h.len() >= hl + 6 {
        let ulen = len.saturating_sub(hl as u16);
        h[hl + 4..hl + 6].copy_from_slice(&ulen.to_be_bytes());
    }
    if checksum && h.len() >= hl {
        h[10..12].fill(0);
        let c = !bricks_wire::checksum::data(&h[..hl]);
        h[10..12].copy_from_slice(&c.to_be_bytes());
    }
    p.anno_mut().extra_length = missing;
}

impl Element for FromIPSummaryDump {
    fn task_kind(&self) -> TaskKind {
        if self.pull {
            TaskKind::None
        } else {
            TaskKind::Source
        }
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        if self.stopped || !self.active {
            return;
        }
        let burst = self.burst;
        self.burst = max.clamp(1, MAX_BATCH);
        let (n, _) = self.fill(out, cx);
        self.burst = burst;
        self.count += n as u64;
        if self.done && self.pending.is_none() {
            if self.stop {
                cx.request_stop();
            }
            self.stopped = true;
        }
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if self.stopped {
            return TaskResult::Done;
        }
        if !self.active {
            return TaskResult::Idle;
        }
        let mut b = Batch::new();
        let (n, waiting) = self.fill(&mut b, cx);
        self.count += n as u64;
        cx.push(0, &mut b);
        if self.done && self.pending.is_none() {
            if self.stop {
                cx.request_stop();
            }
            self.stopped = true;
            return TaskResult::Done;
        }
        if n > 0 {
            TaskResult::Worked
        } else if waiting {
            TaskResult::Waiting
        } else {
            TaskResult::Idle
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("bad_lines", self.bad_lines);
    }

    fn empty_signal(&self, _port: usize) -> Option<bool> {
        // Pulled, Click's FromIPSummaryDump is an empty notifier: asleep
        // while inactive and once the file is done.
        Some(self.active && !self.stopped)
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        Some(match handler {
            "active" => self.active.to_string(),
            "encap" => "IP".into(),
            "sampling_prob" => {
                let p = f64::from(self.sample) / f64::from(1u32 << 28);
                let s = format!("{p:.6}");
                let s = s.trim_end_matches('0').trim_end_matches('.');
                s.to_string()
            }
            "filepos" => self.filepos.to_string(),
            "filesize" => self.filesize.map_or_else(String::new, |n| n.to_string()),
            _ => return None,
        })
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 6] = [
            Handler::r("sampling_prob"),
            Handler::rw("active"),
            Handler::r("encap"),
            Handler::w("stop"),
            Handler::r("filesize"),
            Handler::r("filepos"),
        ];
        &HANDLERS
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
            "active" => self.active = bool::from_arg(value.trim())?,
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (FromIPSummaryDump has `active` and `stop`)"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_lines_round_trip() {
        let text = include_str!("sample.ipsum");
        let mut fields = Vec::new();
        let mut records = 0;
        let o = BuildOptions {
            checksum: true,
            ..BuildOptions::default()
        };
        for l in text.lines() {
            match parse(&fields, l).unwrap() {
                Line::Data(f) => fields = f,
                Line::Record(r) => {
                    let (p, _) = info::build(&r, &o);
                    assert_eq!(info::line(&fields, &p), l);
                    records += 1;
                }
                _ => {}
            }
        }
        assert_eq!(records, 4);
    }

    #[test]
    fn header_lines() {
        assert!(parse(&[], "1.2.3.4").is_err());
        assert_eq!(parse(&[], "!creator x").unwrap(), Line::Skip);
        assert_eq!(parse(&[], "   ").unwrap(), Line::Skip);
        assert_eq!(
            parse(&[], "!data ip src").unwrap(),
            Line::Data(vec![Field::IpSrc])
        );
        assert_eq!(
            parse(&[], "!contents src").unwrap(),
            Line::Data(vec![Field::IpSrc])
        );
        assert_eq!(parse(&[], "!proto I").unwrap(), Line::Proto(1));
        assert_eq!(parse(&[], "!proto 9").unwrap(), Line::Proto(9));
        assert!(parse(&[], "!proto").unwrap() == Line::Skip || parse(&[], "!proto x").is_err());
        assert!(parse(&[], "!proto 1 2").is_err());
        assert_eq!(parse(&[], "!aggregate 7").unwrap(), Line::Aggregate(7));
        assert_eq!(
            parse(&[], "!flowid 1.0.0.1 10 2.0.0.2 20 U").unwrap(),
            Line::FlowId(
                (Ipv4Addr::new(1, 0, 0, 1), 10, Ipv4Addr::new(2, 0, 0, 2), 20),
                Some(17)
            )
        );
        assert_eq!(parse(&[], "!binary").unwrap(), Line::Binary(true));
        assert_eq!(parse(&[], "!binary\n").unwrap(), Line::Binary(true));
        assert_eq!(parse(&[], "!binary x").unwrap(), Line::Binary(false));
        assert_eq!(parse(&[], "!binaryx").unwrap(), Line::Skip);
        assert!(parse(&[], "!data payload_md5").is_err());
        assert_eq!(minor_version("!IPSummaryDump 1.0"), Some(0));
        assert_eq!(minor_version("!IPSummaryDump 1.3"), Some(3));
        assert_eq!(minor_version("!IPSummaryDump 2.0"), None);
        let f = [Field::IpFragoff];
        let Line::Record(r) = parse_version(&f, "3+", 0).unwrap() else {
            panic!()
        };
        assert_eq!(r.num(Field::IpFragoff), Some(0x2003));
    }
}
