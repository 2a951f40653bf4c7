//! `FromTcpdump`: reads the text tcpdump(1) prints and makes the packets
//! it describes (Click's `elements/analysis/fromtcpdump.cc`).
//!
//! Two line formats. Click's is tcpdump 3's with `-tt`:
//! `1073554823.427877 10.0.0.1.32822 > 10.0.0.2.80: . ack 1 win 5840
//! <nop,nop,timestamp 1301841 3423766> (DF) (ttl 64, id 45209, len 52)`,
//! read by a port of Click's parser, quirks included. tcpdump 4 prints
//! `IP 10.0.0.1.32822 > 10.0.0.2.80: Flags [.], ack 1, win 5840,
//! options [nop,nop,TS val 1301841 ecr 3423766], length 0`, and with `-v`
//! the IP header on a line of its own before it; Click refuses those
//! lines, bricks reads them ([`Parser::line`]).
//!
//! tcpdump prints TCP sequence numbers relative to each flow's first. As
//! Click does, bricks undoes that with tcpdump's own rule (`print-tcp.c`):
//! the first packet with ACK of a flow (or a SYN) gives the flow's two
//! bases. Click remembers every flow it saw; this table is bounded
//! (`SeqFlows`: two generations, a free to forget the older).
//!
//! The text is untrusted: a line is at most [`MAX_LINE`] bytes, read in
//! one pass, and builds at most an IP and a TCP header (80 bytes); the
//! bytes the line only counts (the payload) are the packet's extra length
//! annotation, as in Click.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_packet::{Packet, Timestamp, MAX_BATCH};
use bricks_wire::checksum;
use bricks_wire::ip::IpProtocol;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The `FromTcpdump` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FromTcpdump",
    ports: "0/1",
    processing: "/a",
    manual: &MANUAL,
    make,
};

/// Longest line read, in bytes; a longer line is skipped and counted.
pub const MAX_LINE: usize = 4096;
/// Default CAPACITY: TCP flows whose sequence bases are remembered.
pub const DEFAULT_CAPACITY: usize = 1 << 20;
/// Largest CAPACITY.
pub const MAX_CAPACITY: usize = 1 << 26;
/// Most TCP option bytes a header holds (RFC 9293 section 3.1).
const MAX_TCP_OPT: usize = 40;

static MANUAL: Manual = Manual {
    summary: "reads packets from an ASCII tcpdump output file",
    synopsis: "FromTcpdump(FILENAME [, KEYWORDS])",
    description: "Reads the text tcpdump(1) prints and pushes one packet per IPv4 line, \
        built as Click builds it: an IP header (TTL 2 unless the line gives one), for TCP a \
        TCP header with the flags, sequence and acknowledgment numbers, window, urgent \
        pointer and the options tcpdump names (mss, wscale, sackOK, sack, timestamp, nop, \
        eol), for UDP a UDP header; the IP length counts the payload, which the packet does \
        not hold (it is the extra length annotation). Lines in Click's format (tcpdump 3 \
        with -tt: `1.5 10.0.0.1.1040 > 10.0.0.2.80: P 1:49(48) ack 1 win 5840 (DF) \
        [tos 0x10] (ttl 64, id 7, len 88)`) are read as Click reads them; relative \
        sequence numbers are made absolute again with tcpdump's own rule. Blank lines and \
        lines starting with `#` are skipped; a line that is not a packet is counted in \
        `bad_lines` and the first one is reported as Click reports it (`FILE:LINE: packet \
        parse error`). Differences from Click: bricks also reads tcpdump 4's lines \
        (`IP 10.0.0.1.1040 > 10.0.0.2.80: Flags [P.], seq 1:49, ack 1, win 5840, options \
        [nop,nop,TS val 1 ecr 2], length 48`, UDP `UDP, length N`, ICMP and `ip-proto-N`), \
        with -v's IP header line (`IP (tos 0x0, ttl 64, id 7, offset 0, flags [DF], proto \
        TCP (6), length 88)`) joined to the line after it, and timestamps as a time of day \
        (tcpdump's default, on 1970-01-01 UTC), a date and time (-tttt, UTC) or none (-t); \
        lines that start with white space (tcpdump's -v details, hex dumps) are skipped, \
        where Click reports them; lines longer than 4096 bytes are bad lines; at most 40 \
        bytes of TCP options are kept (Click overflows the header length) and an IP `len` \
        that would make the TCP header longer than 60 bytes is ignored; a `frag ID:LEN@OFF` \
        offset is taken in bytes, as tcpdump prints it (Click stores it unscaled), and \
        ECT(0)/ECT(1) are RFC 3168's codepoints (Click swaps them); the TCP flows whose \
        sequence numbers are remembered are at most CAPACITY, those seen least recently \
        forgotten first (Click: all); compressed files are not uncompressed; ZERO is \
        accepted, bytes are always zero.",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        Keyword {
            name: "FILENAME",
            ty: "file name",
            default: None,
            doc: "the tcpdump output to read; `-` is standard input (mandatory unless DATA is \
                  given)",
        },
        Keyword {
            name: "DATA",
            ty: "string (bricks only)",
            default: Some("none"),
            doc: "the text itself, instead of FILENAME",
        },
        Keyword {
            name: "STOP",
            ty: "boolean",
            default: Some("false"),
            doc: "stop the router when the file is done",
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
            doc: "set the IP checksum, and the TCP or UDP checksum over the bytes the packet \
                  holds",
        },
        Keyword {
            name: "SAMPLE",
            ty: "probability",
            default: Some("1"),
            doc: "emit each packet with this probability (more than 1 is 1)",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned (bricks only)",
            default: Some("1048576"),
            doc: "most TCP flows whose sequence bases are remembered; from 2 to 67108864",
        },
        Keyword {
            name: "BURST",
            ty: "unsigned (bricks only)",
            default: Some("1"),
            doc: "packets per batch (up to 256); 1, as Click, keeps the order in which \
                  packets reach elements downstream of a switch",
        },
    ],
    counters: &[
        ("count", "packets emitted"),
        ("bad_lines", "lines that are not a packet"),
        ("tcp_flows", "TCP flows whose sequence bases are remembered"),
    ],
    example: "FromTcpdump(crates/elements/src/analysis/sample.tcpdump, STOP true, CHECKSUM true)\n\
              -> ToIPSummaryDump(-, CONTENTS timestamp ip_src sport ip_dst dport tcp_flags tcp_seq ip_len);",
    see_also: &["FromDump", "FromIPSummaryDump", "ToIPSummaryDump"],
};

const ICMP: u8 = 1;
const TCP: u8 = 6;
const UDP: u8 = 17;

const TH_FIN: u8 = 0x01;
const TH_SYN: u8 = 0x02;
const TH_ACK: u8 = 0x10;

const IP_DF: u16 = 0x4000;
const IP_MF: u16 = 0x2000;
const IP_OFFMASK: u16 = 0x1fff;

/// Why a line made no packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The line starts with none of a timestamp, `IP`, `#` or white space.
    Start,
    /// The first word is not a timestamp: seconds (`1073554818.366478`), a
    /// time of day (`18:26:09.123456`) or a date and time.
    Timestamp,
    /// No `SRC > DST` follows the timestamp.
    Addresses,
    /// The source is not an IPv4 address (with a port for TCP and UDP).
    Source,
    /// The destination is not an IPv4 address (with a port for TCP and
    /// UDP).
    Destination,
    /// A tcpdump 4 line of another protocol than IPv4 (`IP6`, `ARP`).
    NotIpv4,
    /// A `-v` IP header line (`IP (tos 0x0, ...)`) whose parenthesis does
    /// not close.
    Header,
    /// A `-v` IP header line was not followed by its packet's line.
    LoneHeader,
    /// The line is longer than [`MAX_LINE`] bytes.
    TooLong,
}

impl core::fmt::Display for ParseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let why = match self {
            ParseError::Start => "a line starts with a timestamp, `IP`, `#` or a space",
            ParseError::Timestamp => "bad timestamp (seconds, HH:MM:SS.frac or a date)",
            ParseError::Addresses => "no `SOURCE > DESTINATION` after the timestamp",
            ParseError::Source => "bad source address or port",
            ParseError::Destination => "bad destination address or port",
            ParseError::NotIpv4 => "not an IPv4 packet",
            ParseError::Header => "unclosed `(` in the IP header",
            ParseError::LoneHeader => "an IP header line (-v) without its packet's line",
            ParseError::TooLong => "line longer than 4096 bytes",
        };
        write!(f, "packet parse error: {why}")
    }
}

/// What one line gave.
#[derive(Debug, Default)]
pub struct Parsed {
    /// The packet the line describes.
    pub packet: Option<Packet>,
    /// Why the line made no packet; `None` for blank and comment lines, a
    /// `-v` IP header line waiting for its next line, and lines of
    /// tcpdump's details (white space first).
    pub error: Option<ParseError>,
    /// A `-v` IP header line before this one had no packet line after it.
    pub lone_header: bool,
}

impl Parsed {
    fn packet(p: Packet) -> Parsed {
        Parsed {
            packet: Some(p),
            ..Parsed::default()
        }
    }

    fn error(e: ParseError) -> Parsed {
        Parsed {
            error: Some(e),
            ..Parsed::default()
        }
    }

    fn from(r: Result<Packet, ParseError>) -> Parsed {
        match r {
            Ok(p) => Parsed::packet(p),
            Err(e) => Parsed::error(e),
        }
    }
}

/// A TCP flow, its lower-ordered end first (Click's `IPFlowID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct FlowKey {
    a: u32,
    aport: u16,
    b: u32,
    bport: u16,
}

/// A flow's sequence bases and last sequence numbers, per direction
/// (Click's `FlowRecord`).
#[derive(Debug, Clone, Copy, Default)]
struct SeqRecord {
    init_seq: [u32; 2],
    last_seq: [u32; 2],
}

/// The TCP flows tcpdump numbered relatively, bounded: two generations of
/// at most half the capacity each. A flow found in the older moves to the
/// newer; when the newer is full the older is dropped whole (a free, not a
/// walk), so each packet costs O(1) and the flows forgotten are those
/// least recently seen.
#[derive(Debug)]
struct SeqFlows {
    cur: HashMap<FlowKey, SeqRecord>,
    old: HashMap<FlowKey, SeqRecord>,
    half: usize,
}

impl SeqFlows {
    fn new(capacity: usize) -> SeqFlows {
        SeqFlows {
            cur: HashMap::new(),
            old: HashMap::new(),
            half: (capacity / 2).max(1),
        }
    }

    fn record(&mut self, k: FlowKey) -> &mut SeqRecord {
        if !self.cur.contains_key(&k) {
            let r = self.old.remove(&k).unwrap_or_default();
            if self.cur.len() >= self.half {
                self.old = std::mem::take(&mut self.cur);
            }
            return self.cur.entry(k).or_insert(r);
        }
        self.cur.entry(k).or_default()
    }

    fn len(&self) -> usize {
        self.cur.len() + self.old.len()
    }
}

/// The fields of a tcpdump 4 `-v` IP header line.
#[derive(Debug, Clone, Copy)]
struct Head {
    ts: Option<Timestamp>,
    tos: u8,
    ttl: u8,
    id: u16,
    /// Flags and offset, as in the header.
    off: u16,
    proto: Option<u8>,
    len: Option<u32>,
}

impl Head {
    /// What Click gives a line that says nothing of its IP header.
    fn bare(ts: Option<Timestamp>) -> Head {
        Head {
            ts,
            tos: 0,
            ttl: 2,
            id: 0,
            off: 0,
            proto: None,
            len: None,
        }
    }
}

/// The packet a line is building: at most an IP header and a TCP header
/// with 40 bytes of options.
struct Draft {
    b: [u8; 80],
    len: usize,
}

impl Draft {
    /// Click's start: a zeroed IP and TCP header, version 4, header length
    /// 20, TTL 2.
    fn new() -> Draft {
        let mut b = [0u8; 80];
        b[0] = 0x45;
        b[8] = 2;
        Draft { b, len: 40 }
    }

    fn put16(&mut self, at: usize, v: u16) {
        self.b[at..at + 2].copy_from_slice(&v.to_be_bytes());
    }

    fn put32(&mut self, at: usize, v: u32) {
        self.b[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }

    fn get16(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.b[at], self.b[at + 1]])
    }

    fn proto(&self) -> u8 {
        self.b[9]
    }

    fn off(&self) -> u16 {
        self.get16(6)
    }

    fn first_frag(&self) -> bool {
        self.off() & IP_OFFMASK == 0
    }

    fn addrs(&self) -> (u32, u32) {
        let a =
            |i: usize| u32::from_be_bytes([self.b[i], self.b[i + 1], self.b[i + 2], self.b[i + 3]]);
        (a(12), a(16))
    }

    /// Appends TCP options; the TCP header length follows.
    fn put_options(&mut self, opt: &Opts) {
        let n = opt.n;
        self.b[40..40 + n].copy_from_slice(&opt.b[..n]);
        self.len = 40 + n;
        self.b[32] = (((20 + n) >> 2) as u8) << 4;
    }

    /// Click's handling of an IP length `u` that does not match the
    /// headers and payload: for TCP the difference is taken to be options
    /// (the header grows or shrinks); `false` when that would not fit.
    fn fit_tcp_header(&mut self, u: u32, data_len: i32) -> bool {
        let new_len = u.wrapping_sub(data_len as u32) as usize;
        if !(20..=self.b.len()).contains(&new_len) {
            return false;
        }
        if new_len > self.len {
            self.b[self.len..new_len].fill(0);
        }
        self.len = new_len;
        if new_len > 32 {
            self.b[32] = ((((new_len - 20) >> 2) & 15) as u8) << 4;
        }
        true
    }

    /// Finishes the packet: IP length, extra length, UDP length and
    /// checksums (Click's end of `read_packet`).
    fn finish(
        mut self,
        ts: Option<Timestamp>,
        data_len: i32,
        udp_len: Option<u32>,
        sums: bool,
    ) -> Packet {
        let data_len = data_len.max(0);
        let ip_len = (self.len as u32).wrapping_add(data_len as u32) as u16;
        self.put16(2, ip_len);
        if self.proto() == UDP && self.first_frag() && self.len >= 28 {
            let ulen = match udp_len {
                Some(n) => n.wrapping_add(8) as u16,
                None => ip_len.wrapping_sub(20),
            };
            self.put16(24, ulen);
        }
        if sums {
            self.set_checksums();
        }
        let mut p = Packet::from_slice(&self.b[..self.len]).unwrap_or_else(|_| Packet::new());
        p.set_network_header(0);
        if let Some(ts) = ts {
            p.anno_mut().timestamp = ts;
        }
        p.anno_mut().extra_length = data_len as u32;
        p
    }

    /// Click's `set_checksums`: the IP header's, and unless the packet is a
    /// fragment the TCP or UDP checksum over the bytes it holds, the
    /// pseudo-header counting those bytes.
    fn set_checksums(&mut self) {
        self.b[10..12].fill(0);
        let ip = !checksum::data(&self.b[..20]);
        self.put16(10, ip);
        let frag = self.off() & (IP_MF | IP_OFFMASK) != 0;
        let at = match self.proto() {
            TCP if self.len >= 40 => 36,
            UDP if self.len >= 28 => 26,
            _ => return,
        };
        if frag {
            return;
        }
        self.b[at..at + 2].fill(0);
        let (src, dst) = self.addrs();
        let t = &self.b[20..self.len];
        let pseudo = checksum::pseudo_header_v4(
            Ipv4Addr::from(src),
            Ipv4Addr::from(dst),
            IpProtocol::from(self.proto()),
            t.len() as u16,
        );
        let sum = !checksum::combine(&[checksum::data(t), pseudo]);
        self.put16(at, sum);
    }
}

/// TCP options under construction, at most 40 bytes; an option that does
/// not fit is left out.
struct Opts {
    b: [u8; MAX_TCP_OPT],
    n: usize,
    /// Offsets of SACK edges (tcpdump 4 lines), made absolute once the
    /// flow's bases are known.
    sack_at: [usize; MAX_TCP_OPT / 4],
    nsack: usize,
}

impl Opts {
    fn new() -> Opts {
        Opts {
            b: [0; MAX_TCP_OPT],
            n: 0,
            sack_at: [0; MAX_TCP_OPT / 4],
            nsack: 0,
        }
    }

    /// Appends `bytes` if they fit.
    fn push(&mut self, bytes: &[u8]) -> bool {
        if self.n + bytes.len() > MAX_TCP_OPT {
            return false;
        }
        self.b[self.n..self.n + bytes.len()].copy_from_slice(bytes);
        self.n += bytes.len();
        true
    }

    fn push_sack_edge(&mut self, v: u32) {
        let at = self.n;
        if self.push(&v.to_be_bytes()) && self.nsack < self.sack_at.len() {
            self.sack_at[self.nsack] = at;
            self.nsack += 1;
        }
    }

    /// Pads with EOL to a multiple of 4 bytes (40 is one).
    fn pad(&mut self) {
        while !self.n.is_multiple_of(4) {
            self.push(&[0]);
        }
    }
}

/// The byte at `i`, or 0 past the end (no character the parser looks for).
fn at(l: &[u8], i: usize) -> u8 {
    l.get(i).copied().unwrap_or(0)
}

/// Whether `lit` is at `i`.
fn is_at(l: &[u8], i: usize, lit: &[u8]) -> bool {
    l.get(i..).is_some_and(|t| t.starts_with(lit))
}

/// Click's `find(begin, end, c)`: the first `c` at or after `from`, or
/// `end`.
fn find(l: &[u8], from: usize, end: usize, c: u8) -> usize {
    let end = end.min(l.len());
    if from >= end {
        return from.max(end);
    }
    l[from..end]
        .iter()
        .position(|&b| b == c)
        .map_or(end, |i| from + i)
}

fn is_digit_at(l: &[u8], i: usize) -> bool {
    at(l, i).is_ascii_digit()
}

/// Click's `cp_integer(begin, end, base, &uint32_t)` on `l[begin..end]`:
/// the end of the number (`begin` when there is none) and its value,
/// saturated as Click saturates. Base 0 reads `0x` hex, `0b` binary and a
/// leading `0` as octal; `_` may separate digits.
fn cp_int(l: &[u8], begin: usize, end: usize, base: u32) -> (usize, u32) {
    let end = end.min(l.len());
    if begin >= end {
        return (begin, 0);
    }
    let mut s = begin;
    if l[s] == b'+' {
        s += 1;
    }
    let lower = |i: usize| at(l, i) | 0x20;
    let mut b = base;
    if (b == 0 || b == 16) && s + 2 < end && l[s] == b'0' && lower(s + 1) == b'x' {
        s += 2;
        b = 16;
    } else if b == 0 && s + 2 < end && l[s] == b'0' && lower(s + 1) == b'b' {
        s += 2;
        b = 2;
    } else if b == 0 && s < end && l[s] == b'0' {
        b = 8;
    } else if b == 0 {
        b = 10;
    }
    let digit = |c: u8| -> Option<u32> {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'z' => c - b'a' + 10,
            b'A'..=b'Z' => c - b'A' + 10,
            _ => return None,
        };
        (u32::from(d) < b).then_some(u32::from(d))
    };
    let first = s;
    let mut last_digit: Option<usize> = None;
    while s < end {
        if l[s] == b'_' && last_digit == Some(s) {
            // Click allows underscores between digits.
        } else if digit(l[s]).is_some() {
            last_digit = Some(s + 1);
        } else {
            break;
        }
        s += 1;
    }
    let xend = match last_digit {
        Some(x) if s != first => x,
        // "0x" with no hex digit after it: Click reads the "0".
        _ if first > begin + 1 => first - 1,
        _ => return (begin, 0),
    };
    let mut v: u64 = 0;
    for &c in &l[begin..xend] {
        if let Some(d) = digit(c) {
            v = (v * u64::from(b) + u64::from(d)).min(u64::from(u32::MAX) + 1);
        }
    }
    (xend, v.min(u64::from(u32::MAX)) as u32)
}

/// A decimal number at `i` (tcpdump 4's numbers), saturated; `None` when
/// no digit is there.
fn dec(l: &[u8], i: usize) -> Option<(usize, u32)> {
    let mut j = i;
    let mut v: u64 = 0;
    while let Some(d) = l.get(j).filter(|c| c.is_ascii_digit()) {
        v = (v * 10 + u64::from(d - b'0')).min(u64::from(u32::MAX));
        j += 1;
    }
    (j > i).then_some((j, v as u32))
}

/// Click's `IPAddressArg` on a whole word: four dotted decimals, each at
/// most 255 (leading zeros allowed).
fn click_ip(t: &[u8]) -> Option<u32> {
    let mut v = [0u8; 4];
    let mut d = 0;
    let mut s = 0;
    while d < 4 && s < t.len() && (d == 0 || t[s] == b'.') {
        let mut i = s + usize::from(d != 0);
        if !is_digit_at(t, i) {
            break;
        }
        let mut part = u32::from(t[i] - b'0');
        i += 1;
        while is_digit_at(t, i) && part <= 255 {
            part = part * 10 + u32::from(t[i] - b'0');
            i += 1;
        }
        if part > 255 {
            break;
        }
        s = i;
        v[d] = part as u8;
        d += 1;
    }
    (s == t.len() && d == 4).then(|| u32::from_be_bytes(v))
}

/// `/etc/services`, read once: (name, protocol) to port.
fn services() -> &'static HashMap<(String, u8), u16> {
    static SERVICES: OnceLock<HashMap<(String, u8), u16>> = OnceLock::new();
    SERVICES.get_or_init(|| {
        let mut m = HashMap::new();
        let Ok(f) = File::open("/etc/services") else {
            return m;
        };
        let mut text = String::new();
        // Bounded: the file is small; a huge one is read in part.
        let _ = f.take(1 << 20).read_to_string(&mut text);
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            let mut w = line.split_ascii_whitespace();
            let (Some(name), Some(pp)) = (w.next(), w.next()) else {
                continue;
            };
            let Some((port, proto)) = pp.split_once('/') else {
                continue;
            };
            let proto = match proto {
                "tcp" => TCP,
                "udp" => UDP,
                _ => continue,
            };
            let Ok(port) = port.parse::<u16>() else {
                continue;
            };
            for n in std::iter::once(name).chain(w) {
                m.entry((n.to_string(), proto)).or_insert(port);
            }
        }
        m
    })
}

/// Click's `IPPortArg`: a number up to 65535, a well-known name, or a
/// name from `/etc/services` for TCP and UDP.
fn click_port(t: &[u8], proto: u8) -> Option<u16> {
    if t.is_empty() {
        return None;
    }
    let (e, v) = cp_int(t, 0, t.len(), 0);
    if e == t.len() {
        return u16::try_from(v).ok();
    }
    let name = std::str::from_utf8(t).ok()?;
    if let Some(&(_, p)) = crate::classify::ip_filter::PORTS
        .iter()
        .find(|(n, _)| *n == name)
    {
        return Some(p);
    }
    if !matches!(proto, TCP | UDP) {
        return None;
    }
    services().get(&(name.to_string(), proto)).copied()
}

/// Click's TCP flag letters (`IPSummaryDump::tcp_flag_mapping`): the flag
/// bit, 0 for `N` (Click's 8-bit flags lose it), `None` for no flag.
fn flag_bit(c: u8) -> Option<u8> {
    Some(match c {
        b'F' => 0x01,
        b'S' => 0x02,
        b'R' => 0x04,
        b'P' => 0x08,
        b'A' => 0x10,
        b'U' => 0x20,
        b'E' | b'X' => 0x40,
        b'C' | b'W' | b'Y' => 0x80,
        b'N' => 0,
        _ => return None,
    })
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds and a fraction (`1073554818.366478`, Click's `cp_time`):
/// nanoseconds, the digits past the ninth ignored.
fn seconds(t: &[u8]) -> Option<u64> {
    let t = t.strip_prefix(b"+").unwrap_or(t);
    let dot = t.iter().position(|&c| c == b'.').unwrap_or(t.len());
    let (int, frac) = (&t[..dot], t.get(dot + 1..).unwrap_or(&[]));
    if int.is_empty() && frac.is_empty()
        || !int.iter().chain(frac).all(u8::is_ascii_digit)
        || int.len() > 10
    {
        return None;
    }
    let mut secs: u64 = 0;
    for &c in int {
        secs = secs * 10 + u64::from(c - b'0');
    }
    if secs > u64::from(u32::MAX) {
        return None;
    }
    let mut nanos: u64 = 0;
    for i in 0..9 {
        nanos = nanos * 10 + frac.get(i).map_or(0, |c| u64::from(c - b'0'));
    }
    Some(secs * 1_000_000_000 + nanos)
}

/// A time of day, `HH:MM:SS[.frac]`, in nanoseconds since midnight.
fn time_of_day(t: &[u8]) -> Option<u64> {
    let mut parts = t.splitn(3, |&c| c == b':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    let small = |w: &[u8], max: u64| -> Option<u64> {
        if w.is_empty() || w.len() > 5 || !w.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let v = w.iter().fold(0u64, |v, &c| v * 10 + u64::from(c - b'0'));
        (v < max).then_some(v)
    };
    let h = small(h, 100_000)?;
    let m = small(m, 60)?;
    let s = seconds(s)?;
    if s >= 61_000_000_000 {
        return None;
    }
    Some((h * 3600 + m * 60) * 1_000_000_000 + s)
}

/// A date, `YYYY-MM-DD`, in days since 1970-01-01 (1970 to 9999).
fn date(t: &[u8]) -> Option<i64> {
    if t.len() != 10 || t[4] != b'-' || t[7] != b'-' {
        return None;
    }
    let num = |w: &[u8]| -> Option<i64> {
        w.iter().try_fold(0i64, |v, &c| {
            c.is_ascii_digit().then(|| v * 10 + i64::from(c - b'0'))
        })
    };
    let (y, m, d) = (num(&t[..4])?, num(&t[5..7])?, num(&t[8..])?);
    if y < 1970 || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// The line's timestamp and where the rest starts (after one space):
/// seconds (Click's), a time of day (tcpdump's default), or a date and a
/// time (`-tttt`). `Ok(None)` position when no space follows.
fn timestamp(l: &[u8]) -> Result<(Timestamp, usize), ParseError> {
    let sp = find(l, 0, l.len(), b' ');
    let word = &l[..sp];
    let ns = if let Some(days) = date(word) {
        let sp2 = find(l, sp + 1, l.len(), b' ');
        let tod = time_of_day(l.get(sp + 1..sp2).unwrap_or(&[])).ok_or(ParseError::Timestamp)?;
        let ns = (days as u64)
            .checked_mul(86_400_000_000_000)
            .and_then(|d| d.checked_add(tod))
            .ok_or(ParseError::Timestamp)?;
        return if sp2 < l.len() {
            Ok((Timestamp(ns), sp2 + 1))
        } else {
            Err(ParseError::Addresses)
        };
    } else if word.contains(&b':') {
        time_of_day(word)
    } else {
        seconds(word)
    };
    let ns = ns.ok_or(ParseError::Timestamp)?;
    if sp >= l.len() {
        return Err(ParseError::Addresses);
    }
    Ok((Timestamp(ns), sp + 1))
}

/// The items of `t` separated by `sep` outside parentheses and brackets,
/// each with its start offset in `t`.
struct Items<'a> {
    t: &'a [u8],
    i: usize,
    sep: u8,
}

impl<'a> Iterator for Items<'a> {
    type Item = (usize, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        while at(self.t, self.i) == b' ' {
            self.i += 1;
        }
        if self.i >= self.t.len() {
            return None;
        }
        let start = self.i;
        let mut depth = 0u32;
        while self.i < self.t.len() {
            match self.t[self.i] {
                b'(' | b'[' => depth += 1,
                b')' | b']' => depth = depth.saturating_sub(1),
                c if c == self.sep && depth == 0 => break,
                _ => {}
            }
            self.i += 1;
        }
        let item = &self.t[start..self.i];
        self.i += 1;
        Some((start, item))
    }
}

fn items(t: &[u8], sep: u8) -> Items<'_> {
    Items { t, i: 0, sep }
}

/// The index of the bracket closing the one at `open`, counting nesting.
fn closing(l: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0u32;
    for (i, &c) in l.iter().enumerate().skip(open) {
        match c {
            b'(' | b'[' => depth += 1,
            b')' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn trim(mut t: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = t {
        t = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = t {
        t = rest;
    }
    t
}

/// The protocol a tcpdump 4 line's text names.
fn proto_of_body(body: &[u8]) -> Option<u8> {
    let mut b = body;
    // "[udp sum ok] UDP, ..." and "[bad udp cksum ...] UDP, ...".
    while b.first() == Some(&b'[') {
        let close = closing(b, 0)?;
        b = trim(&b[close + 1..]);
    }
    if let Some(n) = b.strip_prefix(b"ip-proto-") {
        return dec(n, 0).and_then(|(_, v)| u8::try_from(v).ok());
    }
    const NAMES: &[(&[u8], u8)] = &[
        (b"Flags [", TCP),
        (b"UDP", UDP),
        (b"ICMP", ICMP),
        (b"igmp", 2),
        (b"IGMP", 2),
        (b"GREv", 47),
        (b"ESP(", 50),
        (b"AH(", 51),
        (b"OSPFv", 89),
        (b"PIMv", 103),
        (b"VRRPv", 112),
        (b"sctp", 132),
    ];
    NAMES
        .iter()
        .find(|(n, _)| b.starts_with(n))
        .map(|&(_, p)| p)
}

/// An address and maybe a port (`10.0.0.1` or `10.0.0.1.80`).
fn addr_port(t: &[u8], proto: u8) -> Option<(u32, Option<u16>)> {
    if let Some(a) = click_ip(t) {
        return Some((a, None));
    }
    let dot = t.iter().rposition(|&c| c == b'.')?;
    let a = click_ip(&t[..dot])?;
    let p = click_port(&t[dot + 1..], proto)?;
    Some((a, Some(p)))
}

/// Reads tcpdump's lines into packets; keeps what spans lines (the TCP
/// flows' sequence bases, a `-v` IP header line).
#[derive(Debug)]
pub struct Parser {
    flows: SeqFlows,
    /// Whether tcpdump printed absolute sequence numbers (`-S`), guessed
    /// at the first packet that needs it (Click's `_absolute_seq`).
    absolute_seq: Option<bool>,
    checksum: bool,
    /// A `-v` IP header line waiting for its packet's line.
    head: Option<Head>,
}

impl Parser {
    /// A parser remembering at most `capacity` TCP flows; with `checksum`
    /// packets get their checksums.
    pub fn new(capacity: usize, checksum: bool) -> Parser {
        Parser {
            flows: SeqFlows::new(capacity),
            absolute_seq: None,
            checksum,
            head: None,
        }
    }

    /// TCP flows remembered.
    pub fn tcp_flows(&self) -> usize {
        self.flows.len()
    }

    /// Reads one line (its `\n` or `\r\n` may be there).
    pub fn line(&mut self, text: &[u8]) -> Parsed {
        let mut l = text;
        while let [rest @ .., b'\n' | b'\r'] = l {
            l = rest;
        }
        let starts_blank = matches!(l.first(), Some(b' ' | b'\t'));
        if let Some(head) = self.head.take() {
            if starts_blank && !trim(l).is_empty() {
                return Parsed::from(self.modern_body(&head, trim(l)));
            }
            let mut p = self.fresh(l, starts_blank);
            p.lone_header = true;
            return p;
        }
        self.fresh(l, starts_blank)
    }

    /// The end of the text: a `-v` IP header line still waiting is an
    /// error.
    pub fn finish(&mut self) -> Option<ParseError> {
        self.head.take().map(|_| ParseError::LoneHeader)
    }

    fn fresh(&mut self, l: &[u8], starts_blank: bool) -> Parsed {
        match l.first() {
            None | Some(b'#') => return Parsed::default(),
            // tcpdump's details and hex dumps under a packet's line (bricks).
            _ if starts_blank => return Parsed::default(),
            _ => {}
        }
        if l.starts_with(b"IP ") {
            // No timestamp (-t).
            return self.modern(None, l, 0);
        }
        if !l[0].is_ascii_digit() {
            return Parsed::error(ParseError::Start);
        }
        let (ts, s) = match timestamp(l) {
            Ok(x) => x,
            Err(e) => return Parsed::error(e),
        };
        if is_at(l, s, b"IP ") {
            return self.modern(Some(ts), l, s);
        }
        match self.click(l, ts, s) {
            Err(ParseError::Addresses) if at(l, s).is_ascii_alphabetic() => {
                Parsed::error(ParseError::NotIpv4)
            }
            r => Parsed::from(r),
        }
    }

    /// Click's `read_packet` after the timestamp, `s` where the source
    /// starts.
    fn click(&mut self, l: &[u8], ts: Timestamp, mut s: usize) -> Result<Packet, ParseError> {
        let end = l.len();
        let mut d = Draft::new();

        // Guess the protocol from what follows the first colon.
        let mut colon = find(l, s, end, b':') + 1;
        while at(l, colon) == b' ' && colon < end {
            colon += 1;
        }
        if colon < end {
            let c = l[colon];
            d.b[9] = match c {
                b'i' => ICMP,
                b'u' => UDP,
                b'[' if at(l, colon + 1) == b'u' => UDP,
                b'.' | b'A'..=b'Z' => TCP,
                _ => 0,
            };
        }
        let ports = matches!(d.proto(), TCP | UDP);

        // Source address and port.
        let s2 = find(l, s, end, b' ');
        if s2 == s || s2 + 2 >= end || l[s2 + 1] != b'>' || l[s2 + 2] != b' ' {
            return Err(ParseError::Addresses);
        }
        let (src, sport) = click_addr(l, s, s2, ports, d.proto()).ok_or(ParseError::Source)?;
        d.put32(12, src);
        d.put16(20, sport);
        s = s2 + 3;

        // Destination address and port.
        let s2 = find(l, s, end, b':');
        let (dst, dport) = click_addr(l, s, s2, ports, d.proto()).ok_or(ParseError::Destination)?;
        d.put32(16, dst);
        d.put16(22, dport);

        // The protocol's part.
        let mut data_len: i32 = -1;
        let s = if d.proto() == TCP && d.first_frag() {
            self.click_tcp(&mut d, l, colon.min(end), &mut data_len)
        } else if d.proto() == UDP && d.first_frag() {
            d.len = 28;
            click_udp(l, colon.min(end), &mut data_len)
        } else {
            d.len = 20;
            colon.min(end)
        };

        click_ip_items(&mut d, l, s, &mut data_len);
        Ok(d.finish(Some(ts), data_len, None, self.checksum))
    }

    /// Click's `read_tcp_line` from `s`; returns where it stopped.
    fn click_tcp(&mut self, d: &mut Draft, l: &[u8], mut s: usize, data_len: &mut i32) -> usize {
        let end = l.len();
        // Flags.
        let mut flags = 0u8;
        if at(l, s) == b'.' {
            flags = TH_ACK;
            s += 1;
        } else {
            while let Some(bit) = flag_bit(at(l, s)) {
                flags |= bit;
                s += 1;
            }
        }
        d.b[33] = flags;
        if s >= end || l[s] != b' ' {
            // Click returns before setting the header length: it stays 0.
            return s;
        }

        // "[bad hdr length ...]", "[tcp sum ok]", "[bad tcp cksum ...]".
        if s + 9 <= end && is_at(l, s + 1, b"[bad hdr") {
            let s2 = find(l, s + 9, end, b']');
            if s2 + 1 < end && l[s2 + 1] == b' ' {
                s = s2 + 1;
            }
        }
        let bad_tcp = || {
            if s + 9 <= end && is_at(l, s + 1, b"[bad tcp") {
                let s2 = find(l, s + 9, end, b']');
                (s2 + 1 < end && l[s2 + 1] == b' ').then_some(s2 + 2)
            } else {
                None
            }
        };
        if s + 14 <= end && is_at(l, s + 1, b"[tcp sum ok] ") {
            s += 14;
        } else if let Some(n) = bad_tcp() {
            s = n;
        } else {
            s += 1;
        }

        // Sequence numbers: "SEQ:END(LEN) ".
        let (mut seq, mut end_seq, mut ack) = (0u32, 0u32, 0u32);
        if s < end && l[s] != b'a' {
            let (eseq, v) = cp_int(l, s, end, 0);
            seq = v;
            if eseq == s || eseq >= end || l[eseq] != b':' {
                return s;
            }
            let (eend, v) = cp_int(l, eseq + 1, end, 0);
            end_seq = v;
            if eend == eseq + 1 || eend >= end || l[eend] != b'(' {
                return s;
            }
            s = eend + 1;
            while is_digit_at(l, s) {
                s += 1;
            }
            if s >= end || l[s] != b')' {
                return s;
            } else if s + 1 >= end || l[s + 1] != b' ' {
                return s + 1;
            }
            s += 2;
        }
        *data_len = end_seq.wrapping_sub(seq) as i32;

        if s + 4 < end && is_at(l, s, b"ack ") && is_digit_at(l, s + 4) {
            flags |= TH_ACK;
            d.b[33] = flags;
            let (e, v) = cp_int(l, s + 4, end, 0);
            ack = v;
            s = e;
            if at(l, s) == b' ' {
                s += 1;
            }
        }

        let (src, dst) = d.addrs();
        let (sport, dport) = (d.get16(20), d.get16(22));
        let (seq, _, ack, sack_base) =
            self.patch_seq(src, sport, dst, dport, flags, seq, end_seq, ack);
        d.put32(24, seq);
        d.put32(28, ack);

        if s + 4 < end && is_at(l, s, b"win ") && is_digit_at(l, s + 4) {
            let (e, v) = cp_int(l, s + 4, end, 0);
            d.put16(34, v as u16);
            s = e;
            if at(l, s) == b' ' {
                s += 1;
            }
        }
        if s + 4 < end && is_at(l, s, b"urg ") && is_digit_at(l, s + 4) {
            let (e, v) = cp_int(l, s + 4, end, 0);
            d.put16(38, v as u16);
            s = e;
            // Click's test is reversed: a space stays, so options after
            // an urgent pointer are not read.
            if s < end && l[s] != b' ' {
                s += 1;
            }
        }

        if at(l, s) == b'<' {
            let mut opt = Opts::new();
            s += 1;
            while s < end && l[s] != b'>' {
                let n0 = opt.n;
                let mut fits = true;
                if is_at(l, s, b"nop") {
                    fits = opt.push(&[1]);
                    s += 3;
                } else if is_at(l, s, b"eol") {
                    fits = opt.push(&[0]);
                    s += 3;
                } else if s + 4 < end && is_at(l, s, b"mss ") && is_digit_at(l, s + 4) {
                    let (e, u) = cp_int(l, s + 4, end, 0);
                    s = e;
                    fits = opt.push(&[2, 4, (u >> 8) as u8, u as u8]);
                } else if s + 7 < end && is_at(l, s, b"wscale ") && is_digit_at(l, s + 7) {
                    let (e, u) = cp_int(l, s + 7, end, 0);
                    s = e;
                    fits = opt.push(&[3, 3, u as u8]);
                } else if is_at(l, s, b"sackOK") {
                    fits = opt.push(&[4, 2]);
                    s += 6;
                } else if s + 10 < end && is_at(l, s, b"timestamp ") && is_digit_at(l, s + 10) {
                    let (e, u) = cp_int(l, s + 10, end, 0);
                    s = e;
                    if s + 1 < end && l[s] == b' ' && is_digit_at(l, s + 1) {
                        let (e, u2) = cp_int(l, s + 1, end, 0);
                        s = e;
                        let mut o = [8u8, 10, 0, 0, 0, 0, 0, 0, 0, 0];
                        o[2..6].copy_from_slice(&u.to_be_bytes());
                        o[6..].copy_from_slice(&u2.to_be_bytes());
                        fits = opt.push(&o);
                    }
                } else if s + 10 < end && is_at(l, s, b"sack sack ") && is_digit_at(l, s + 10) {
                    let (e, nsack) = cp_int(l, s + 10, end, 0);
                    s = e;
                    fits = opt.push(&[5, nsack.wrapping_mul(8).wrapping_add(2) as u8]);
                    while at(l, s) == b' ' {
                        s += 1;
                    }
                    while s + 1 < end && l[s] == b'{' && is_digit_at(l, s + 1) {
                        let (e, mut u) = cp_int(l, s + 1, end, 0);
                        s = e;
                        if s + 1 < end && l[s] == b':' && is_digit_at(l, s + 1) {
                            let (e, mut u2) = cp_int(l, s + 1, end, 0);
                            s = e;
                            if at(l, s) == b'}' {
                                s += 1;
                                if let Some(base) = sack_base {
                                    u = u.wrapping_add(base);
                                    u2 = u2.wrapping_add(base);
                                }
                                let mut o = [0u8; 8];
                                o[..4].copy_from_slice(&u.to_be_bytes());
                                o[4..].copy_from_slice(&u2.to_be_bytes());
                                fits &= opt.push(&o);
                            }
                        }
                    }
                    while at(l, s) == b' ' {
                        s += 1;
                    }
                }
                if !fits {
                    // Past 40 bytes: left out (Click overflows th_off).
                    opt.n = n0;
                }
                if at(l, s) == b',' {
                    s += 1;
                } else if s < end && l[s] != b'>' {
                    // Not the option we thought.
                    opt.n = n0;
                    while s < end && l[s] != b',' && l[s] != b'>' {
                        s += 1;
                    }
                }
            }
            if at(l, s) == b'>' {
                s += 1;
            }
            opt.pad();
            d.put_options(&opt);
        } else {
            d.b[32] = 5 << 4;
        }
        s
    }

    /// Click's sequence number patching: tcpdump numbers a flow's
    /// sequence numbers from the first packet with ACK (or SYN) it sees.
    /// Returns the absolute `(seq, end_seq, ack)` and the base to add to
    /// SACK edges, if any.
    #[allow(clippy::too_many_arguments)]
    fn patch_seq(
        &mut self,
        src: u32,
        sport: u16,
        dst: u32,
        dport: u16,
        flags: u8,
        mut seq: u32,
        mut end_seq: u32,
        mut ack: u32,
    ) -> (u32, u32, u32, Option<u32>) {
        if flags & TH_ACK == 0 {
            return (seq, end_seq, ack, None);
        }
        let rev = sport < dport || (sport == dport && src < dst);
        let key = if rev {
            FlowKey {
                a: src,
                aport: sport,
                b: dst,
                bport: dport,
            }
        } else {
            FlowKey {
                a: dst,
                aport: dport,
                b: src,
                bport: sport,
            }
        };
        let (me, other) = (usize::from(rev), usize::from(!rev));
        let mut absolute = self.absolute_seq;
        let r = self.flows.record(key);
        if (r.init_seq == [0, 0]) || flags & TH_SYN != 0 {
            r.init_seq[me] = seq;
            r.init_seq[other] = ack.wrapping_sub(1);
        } else {
            let abs = *absolute.get_or_insert_with(|| {
                (ack.wrapping_sub(r.init_seq[other]) as i32) >= 0 && ack > 8000
            });
            if seq == 0 && end_seq == 0 {
                seq = r.last_seq[me];
                end_seq = seq;
            } else if !abs {
                seq = seq.wrapping_add(r.init_seq[me]);
                end_seq = end_seq.wrapping_add(r.init_seq[me]);
            }
            if !abs {
                ack = ack.wrapping_add(r.init_seq[other]);
            }
        }
        r.last_seq[me] = end_seq
            .wrapping_add(u32::from(flags & TH_SYN != 0))
            .wrapping_add(u32::from(flags & TH_FIN != 0));
        if r.last_seq[other] == 0 {
            r.last_seq[other] = ack;
        }
        let sack_base = (absolute == Some(false)).then_some(r.init_seq[other]);
        self.absolute_seq = absolute;
        (seq, end_seq, ack, sack_base)
    }

    /// A tcpdump 4 line: `IP` at `s`.
    fn modern(&mut self, ts: Option<Timestamp>, l: &[u8], s: usize) -> Parsed {
        let c = s + 3;
        if at(l, c) != b'(' {
            return Parsed::from(self.modern_body(&Head::bare(ts), &l[c.min(l.len())..]));
        }
        let Some(close) = closing(l, c) else {
            return Parsed::error(ParseError::Header);
        };
        let mut head = Head::bare(ts);
        parse_head(&l[c + 1..close], &mut head);
        let rest = trim(&l[close + 1..]);
        if rest.is_empty() {
            self.head = Some(head);
            return Parsed::default();
        }
        Parsed::from(self.modern_body(&head, rest))
    }

    /// `SRC > DST: BODY` of a tcpdump 4 line.
    fn modern_body(&mut self, head: &Head, t: &[u8]) -> Result<Packet, ParseError> {
        let t = trim(t);
        let gt = t
            .windows(3)
            .position(|w| w == b" > ")
            .ok_or(ParseError::Addresses)?;
        let (src_t, rest) = (&t[..gt], &t[gt + 3..]);
        let colon = rest
            .iter()
            .position(|&c| c == b':')
            .ok_or(ParseError::Addresses)?;
        let (dst_t, body) = (&rest[..colon], trim(&rest[colon + 1..]));

        let guess = proto_of_body(body);
        let name_proto = head.proto.or(guess).unwrap_or(UDP);
        let (src, sport) = addr_port(src_t, name_proto).ok_or(ParseError::Source)?;
        let (dst, dport) = addr_port(dst_t, name_proto).ok_or(ParseError::Destination)?;
        let ports = sport.zip(dport);
        // tcpdump prints TCP with "Flags [": other packets with ports are
        // most likely UDP decoded by the application's printer.
        let proto = head
            .proto
            .or(guess)
            .unwrap_or(if ports.is_some() { UDP } else { 0 });

        let mut d = Draft::new();
        d.b[1] = head.tos;
        d.put16(4, head.id);
        d.put16(6, head.off);
        d.b[8] = head.ttl;
        d.b[9] = proto;
        d.put32(12, src);
        d.put32(16, dst);

        let mut data_len: i32 = -1;
        let mut udp_len = None;
        let mut tcp = false;
        match ports {
            Some((sp, dp)) if d.first_frag() && proto == TCP => {
                d.put16(20, sp);
                d.put16(22, dp);
                self.modern_tcp(&mut d, body, &mut data_len);
                tcp = true;
            }
            Some((sp, dp)) if d.first_frag() && proto == UDP => {
                d.put16(20, sp);
                d.put16(22, dp);
                d.len = 28;
                if guess == Some(UDP) {
                    udp_len = length_item(body);
                    data_len = udp_len.map_or(-1, |n| n as i32);
                }
            }
            _ => {
                d.len = 20;
                if guess == Some(ICMP) {
                    data_len = length_item(body).map_or(-1, |n| n as i32);
                }
            }
        }

        if let Some(u) = head.len {
            let have = (d.len as u32).wrapping_add(data_len as u32);
            if data_len < 0 || u == have {
                data_len = u.wrapping_sub(d.len as u32) as i32;
            } else if !(tcp && d.fit_tcp_header(u, data_len)) {
                // The IP length is what the packet was.
                data_len = u.wrapping_sub(d.len as u32) as i32;
            }
        }
        Ok(d.finish(head.ts, data_len, udp_len, self.checksum))
    }

    /// The TCP part of a tcpdump 4 line: `Flags [S.], seq 1:19, ack 1,
    /// win 502, urg 3, options [...], length 18`.
    fn modern_tcp(&mut self, d: &mut Draft, body: &[u8], data_len: &mut i32) {
        let mut flags = 0u8;
        let (mut seq, mut end_seq, mut ack) = (0u32, 0u32, 0u32);
        let mut length = None;
        let mut opt = Opts::new();
        for (_, item) in items(body, b',') {
            if let Some(f) = item.strip_prefix(b"Flags [") {
                for &c in f.iter().take_while(|&&c| c != b']') {
                    flags |= match c {
                        b'.' => TH_ACK,
                        // "none" has an N and an E: only its letters count.
                        _ if f.starts_with(b"none") => 0,
                        _ => flag_bit(c).unwrap_or(0),
                    };
                }
            } else if let Some(n) = item.strip_prefix(b"seq ") {
                if let Some((e, v)) = dec(n, 0) {
                    seq = v;
                    end_seq = v;
                    if at(n, e) == b':' {
                        if let Some((_, v2)) = dec(n, e + 1) {
                            end_seq = v2;
                        }
                    }
                }
            } else if let Some(n) = item.strip_prefix(b"ack ") {
                if let Some((_, v)) = dec(n, 0) {
                    ack = v;
                    flags |= TH_ACK;
                }
            } else if let Some(n) = item.strip_prefix(b"win ") {
                if let Some((_, v)) = dec(n, 0) {
                    d.put16(34, v as u16);
                }
            } else if let Some(n) = item.strip_prefix(b"urg ") {
                if let Some((_, v)) = dec(n, 0) {
                    d.put16(38, v as u16);
                }
            } else if let Some(o) = item.strip_prefix(b"options [") {
                let inner = o.strip_suffix(b"]").unwrap_or(o);
                modern_options(inner, &mut opt);
            } else if let Some(n) = item.strip_prefix(b"length ") {
                length = dec(n, 0).map(|(_, v)| v);
                // What follows is the application's printout.
                break;
            }
        }
        d.b[33] = flags;
        *data_len = match length {
            Some(n) => n.min(i32::MAX as u32) as i32,
            None => end_seq.wrapping_sub(seq) as i32,
        };
        let (src, dst) = d.addrs();
        let (sport, dport) = (d.get16(20), d.get16(22));
        let (seq, _, ack, sack_base) =
            self.patch_seq(src, sport, dst, dport, flags, seq, end_seq, ack);
        d.put32(24, seq);
        d.put32(28, ack);
        if let Some(base) = sack_base {
            for &i in &opt.sack_at[..opt.nsack] {
                let v = u32::from_be_bytes([opt.b[i], opt.b[i + 1], opt.b[i + 2], opt.b[i + 3]]);
                opt.b[i..i + 4].copy_from_slice(&v.wrapping_add(base).to_be_bytes());
            }
        }
        opt.pad();
        d.put_options(&opt);
    }
}

/// Source or destination of a Click-format line, `l[s..s2]`: with ports,
/// split at the last `.` or `:`.
fn click_addr(l: &[u8], s: usize, s2: usize, ports: bool, proto: u8) -> Option<(u32, u16)> {
    let s2 = s2.min(l.len());
    if s2 <= s {
        return None;
    }
    if !ports {
        return Some((click_ip(&l[s..s2])?, 0));
    }
    let mut sm = s2 - 1;
    while sm > s && l[sm] != b'.' && l[sm] != b':' {
        sm -= 1;
    }
    let a = click_ip(&l[s..sm])?;
    let p = click_port(&l[sm + 1..s2], proto)?;
    Some((a, p))
}

/// Click's `read_udp_line` from `s`: `udp LENGTH`.
fn click_udp(l: &[u8], mut s: usize, data_len: &mut i32) -> usize {
    let end = l.len();
    // Click looks one byte past `s` for these, where no space is left:
    // they match only after two spaces.
    if s + 9 <= end && is_at(l, s + 1, b"[bad hdr") {
        let s2 = find(l, s + 9, end, b']');
        if s2 + 1 < end && l[s2 + 1] == b' ' {
            s = s2 + 1;
        }
    }
    if s + 14 <= end && is_at(l, s + 1, b"[udp sum ok] ") {
        s += 14;
    } else if s + 9 <= end && is_at(l, s + 1, b"[bad udp") {
        let s2 = find(l, s + 9, end, b']');
        if s2 + 1 < end && l[s2 + 1] == b' ' {
            s = s2 + 2;
        }
    }
    if s + 4 < end && is_at(l, s, b"udp ") && is_digit_at(l, s + 4) {
        let (e, v) = cp_int(l, s + 4, end, 0);
        *data_len = v as i32;
        s = e;
    }
    s
}

/// Click's parse of the parenthesized and bracketed items ending a line
/// (`(DF)`, `[tos 0x10]`, `(ttl 64, id 7, len 88)`), from the end back to
/// `s`.
fn click_ip_items(d: &mut Draft, l: &[u8], s: usize, data_len: &mut i32) {
    let s = s as isize;
    let mut s2 = l.len() as isize - 1;
    let c = |i: isize| if i < 0 { 0 } else { at(l, i as usize) };
    while s2 > s {
        while s2 > s && c(s2).is_ascii_whitespace() {
            s2 -= 1;
        }
        if s2 <= s || (c(s2) != b')' && c(s2) != b']') {
            break;
        }
        let opener = if c(s2) == b')' { b'(' } else { b'[' };
        let mut open = s2 - 1;
        while open >= s && c(open) != opener {
            open -= 1;
        }
        let close = s2 as usize;
        s2 = open - 1;
        if open < s || open as usize >= close {
            continue;
        }
        let mut item = open as usize + 1;
        while item < close {
            let left = close - item;
            if left >= 7 && is_at(l, item, b"tos 0x") {
                let (e, u) = cp_int(l, item + 6, close, 16);
                d.b[1] = u as u8;
                item = e.max(item + 6);
            } else if left >= 6
                && is_at(l, item, b"ECT(")
                && matches!(at(l, item + 4), b'0' | b'1')
                && at(l, item + 5) == b')'
            {
                // RFC 3168: ECT(0) is 10, ECT(1) is 01 (Click swaps them).
                let ecn = if at(l, item + 4) == b'0' { 2 } else { 1 };
                d.b[1] = (d.b[1] & !3) | ecn;
                item += 6;
            } else if left >= 2 && is_at(l, item, b"CE") {
                d.b[1] |= 3;
                item += 2;
            } else if left >= 2 && is_at(l, item, b"DF") {
                let off = d.off() | IP_DF;
                d.put16(6, off);
                item += 2;
            } else if left >= 10 && is_at(l, item, b"frag ") && is_digit_at(l, item + 5) {
                let (e, u) = cp_int(l, item + 5, close, 0);
                item = e;
                d.put16(4, u as u16);
                if item + 2 > close || at(l, item) != b':' || !is_digit_at(l, item + 1) {
                    break;
                }
                let (e, u) = cp_int(l, item + 1, close, 0);
                item = e;
                *data_len = u as i32;
                if item + 2 > close || at(l, item) != b'@' || !is_digit_at(l, item + 1) {
                    break;
                }
                let (e, u) = cp_int(l, item + 1, close, 0);
                item = e;
                // tcpdump prints the offset in bytes.
                let off = (d.off() & !IP_OFFMASK) | ((u >> 3) as u16 & IP_OFFMASK);
                d.put16(6, off);
                if item < close && at(l, item) == b'+' {
                    d.put16(6, off | IP_MF);
                    item += 1;
                }
            } else if left >= 5 && is_at(l, item, b"ttl ") && is_digit_at(l, item + 4) {
                let (e, u) = cp_int(l, item + 4, close, 0);
                item = e;
                d.b[8] = u as u8;
            } else if left >= 4 && is_at(l, item, b"id ") && is_digit_at(l, item + 3) {
                let (e, u) = cp_int(l, item + 3, close, 0);
                item = e;
                d.put16(4, u as u16);
            } else if left >= 5 && is_at(l, item, b"len ") && is_digit_at(l, item + 4) {
                let (e, u) = cp_int(l, item + 4, close, 0);
                item = e;
                let have = (d.len as u32).wrapping_add(*data_len as u32);
                if *data_len < 0 || u == have {
                    *data_len = u.wrapping_sub(d.len as u32) as i32;
                } else if d.proto() == TCP {
                    // The discrepancy must be due to TCP options.
                    d.fit_tcp_header(u, *data_len);
                }
            } else {
                break;
            }
            while item < close && (at(l, item) == b',' || at(l, item).is_ascii_whitespace()) {
                item += 1;
            }
        }
    }
}

/// The fields of a `-v` IP header (between its parentheses).
fn parse_head(t: &[u8], h: &mut Head) {
    for (_, item) in items(t, b',') {
        let item = trim(item);
        let num = |p: &[u8]| item.strip_prefix(p).and_then(|n| dec(n, 0)).map(|x| x.1);
        if let Some(hex) = item.strip_prefix(b"tos 0x") {
            let (_, v) = cp_int(hex, 0, hex.len(), 16);
            h.tos = v as u8;
        } else if let Some(v) = num(b"ttl ") {
            h.ttl = v as u8;
        } else if let Some(v) = num(b"id ") {
            h.id = v as u16;
        } else if let Some(v) = num(b"offset ") {
            h.off = (h.off & !IP_OFFMASK) | ((v >> 3) as u16 & IP_OFFMASK);
        } else if let Some(f) = item.strip_prefix(b"flags [") {
            let f = f.split(|&c| c == b']').next().unwrap_or(&[]);
            if f.windows(2).any(|w| w == b"DF") {
                h.off |= IP_DF;
            }
            if f.contains(&b'+') {
                h.off |= IP_MF;
            }
            if f.windows(4).any(|w| w == b"rsvd") {
                h.off |= 0x8000;
            }
        } else if let Some(p) = item.strip_prefix(b"proto ") {
            let open = p.iter().position(|&c| c == b'(');
            h.proto = match open.and_then(|o| dec(p, o + 1)) {
                Some((_, v)) => u8::try_from(v).ok(),
                None => proto_of_body(p),
            };
        } else if let Some(v) = num(b"length ") {
            h.len = Some(v);
        }
    }
}

/// `length N` among a line's comma-separated items.
fn length_item(body: &[u8]) -> Option<u32> {
    items(body, b',')
        .find_map(|(_, it)| it.strip_prefix(b"length ").and_then(|n| dec(n, 0)))
        .map(|(_, v)| v)
}

/// tcpdump 4's TCP options, between `options [` and `]`.
fn modern_options(inner: &[u8], opt: &mut Opts) {
    for (_, o) in items(inner, b',') {
        let o = trim(o);
        let n0 = opt.n;
        let fits = match o {
            b"nop" => opt.push(&[1]),
            b"eol" => opt.push(&[0]),
            b"sackOK" => opt.push(&[4, 2]),
            _ => {
                if let Some((_, v)) = o.strip_prefix(b"mss ").and_then(|n| dec(n, 0)) {
                    opt.push(&[2, 4, (v >> 8) as u8, v as u8])
                } else if let Some((_, v)) = o.strip_prefix(b"wscale ").and_then(|n| dec(n, 0)) {
                    opt.push(&[3, 3, v as u8])
                } else if let Some(ts) = o.strip_prefix(b"TS val ") {
                    let Some((e, val)) = dec(ts, 0) else { continue };
                    let Some((_, ecr)) = ts
                        .get(e..)
                        .and_then(|r| r.strip_prefix(b" ecr "))
                        .and_then(|n| dec(n, 0))
                    else {
                        continue;
                    };
                    let mut b = [8u8, 10, 0, 0, 0, 0, 0, 0, 0, 0];
                    b[2..6].copy_from_slice(&val.to_be_bytes());
                    b[6..].copy_from_slice(&ecr.to_be_bytes());
                    opt.push(&b)
                } else if let Some(sk) = o.strip_prefix(b"sack ") {
                    // "sack 2 {1:2}{3:4}".
                    let Some((mut i, nsack)) = dec(sk, 0) else {
                        continue;
                    };
                    let mut ok = opt.push(&[5, nsack.wrapping_mul(8).wrapping_add(2) as u8]);
                    while at(sk, i) == b' ' {
                        i += 1;
                    }
                    while at(sk, i) == b'{' {
                        let Some((e, a)) = dec(sk, i + 1) else { break };
                        if at(sk, e) != b':' {
                            break;
                        }
                        let Some((e, b)) = dec(sk, e + 1) else { break };
                        if at(sk, e) != b'}' {
                            break;
                        }
                        i = e + 1;
                        let before = opt.n;
                        opt.push_sack_edge(a);
                        opt.push_sack_edge(b);
                        ok &= opt.n == before + 8;
                    }
                    ok
                } else {
                    // An option bricks does not build (md5, mptcp, ...).
                    true
                }
            }
        };
        if !fits {
            opt.n = n0;
            while opt.nsack > 0 && opt.sack_at[opt.nsack - 1] >= n0 {
                opt.nsack -= 1;
            }
        }
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let path: Option<PathBuf> = args.read_p("FILENAME")?;
    let data: Option<String> = args.read("DATA")?;
    let stop = args.read("STOP")?.unwrap_or(false);
    let active = args.read("ACTIVE")?.unwrap_or(true);
    let _zero: bool = args.read("ZERO")?.unwrap_or(true);
    let checksum = args.read("CHECKSUM")?.unwrap_or(false);
    let sample: f64 = args.read("SAMPLE")?.unwrap_or(1.0);
    // Two generations of at least one flow each: not read_capacity's 1.
    let capacity = args.read::<usize>("CAPACITY")?.unwrap_or(DEFAULT_CAPACITY);
    if !(2..=MAX_CAPACITY).contains(&capacity) {
        return Err(ArgError::new(format!(
            "CAPACITY {capacity}: from 2 to {MAX_CAPACITY}"
        )));
    }
    let burst: usize = args.read("BURST")?.unwrap_or(1);
    let mut warnings = Vec::new();
    let sample = sample_arg(sample, &mut warnings)?;
    let (input, path, size) = open_input(path, data)?;
    let mut reader = input.map(|i| BufReader::with_capacity(1 << 16, i));
    // Click peeks at the first line; standard input is not peeked at (it
    // would wait for a writer while the configuration is checked).
    if path.as_os_str() != "-" {
        if let Some(r) = reader.as_mut() {
            let first = r.fill_buf().map(|b| b.to_vec()).unwrap_or_default();
            let ok = first.first().is_some_and(u8::is_ascii_digit) || first.starts_with(b"IP ");
            if !ok {
                warnings.push(format!(
                    "{}: first line suspicious; is this a tcpdump output file?",
                    path.display()
                ));
            }
        }
    }
    let pull = ports
        .outputs
        .first()
        .is_some_and(|_| !ports.output_is_push(0));
    Ok(Box::new(FromTcpdump {
        pull,
        reader,
        parser: Parser::new(capacity, checksum),
        lineno: 0,
        filepos: 0,
        filesize: size,
        path,
        stop,
        active,
        sample,
        rng: 0x9e37_79b9_7f4a_7c15,
        burst: burst.clamp(1, MAX_BATCH),
        warnings,
        complained: false,
        count: 0,
        bad_lines: 0,
        done: false,
        stopped: false,
    }))
}

/// Click's SAMPLE: a probability as a fraction of 2^28 (its fixed
/// point), with Click's warnings for more than 1 (reduced to 1) and 0.
pub(crate) fn sample_arg(sample: f64, warnings: &mut Vec<String>) -> Result<u32, ArgError> {
    if sample < 0.0 {
        return Err(ArgError::new(
            "bad argument SAMPLE: a probability from 0 to 1",
        ));
    }
    Ok(if sample > 1.0 {
        warnings.push("SAMPLE probability reduced to 1".to_string());
        1u32 << 28
    } else {
        let s = (sample * f64::from(1u32 << 28)).round() as u32;
        if s == 0 {
            warnings.push("SAMPLE probability is 0; emitting no packets".to_string());
        }
        s
    })
}

/// Whether a record is kept under a SAMPLE of `sample` (out of 2^28);
/// `rng` is a SplitMix64 state, so runs repeat.
pub(crate) fn sample_draw(rng: &mut u64, sample: u32) -> bool {
    if sample >= 1 << 28 {
        return true;
    }
    *rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *rng;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    ((z as u32) & ((1 << 28) - 1)) < sample
}

/// The `sampling_prob` handler's text for `sample` (out of 2^28).
pub(crate) fn sample_text(sample: u32) -> String {
    let p = f64::from(sample) / f64::from(1u32 << 28);
    let s = format!("{p:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A trace file opened for reading: the reader (`None` for none), the
/// name messages give, and its size when it is a regular file.
pub(crate) type Input = (Option<Box<dyn Read + Send>>, PathBuf, Option<u64>);

/// Opens FILENAME (`-` is standard input) or the text of DATA, exactly
/// one of them; a file's size is known when it is a regular file.
pub(crate) fn open_input(path: Option<PathBuf>, data: Option<String>) -> Result<Input, ArgError> {
    open_input_with(path, data, |p| match File::open(&p) {
        Ok(f) => {
            let n = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
            Ok((Some(Box::new(f)), p, n))
        }
        Err(e) => Err(ArgError::new(format!("{}: {e}", p.display()))),
    })
}

/// What the file readers share in opening their input: DATA, or
/// FILENAME with `-` for standard input, exactly one of them.
/// `open_file` opens a FILENAME other than `-`, each reader by its own
/// rules (FromIPSummaryDump's ALLOW_NONEXISTENT and file size).
pub(crate) fn open_input_with(
    path: Option<PathBuf>,
    data: Option<String>,
    open_file: impl FnOnce(PathBuf) -> Result<Input, ArgError>,
) -> Result<Input, ArgError> {
    Ok(match (data, path) {
        (Some(_), Some(p)) => {
            return Err(ArgError::new(format!(
                "FILENAME ({}) and DATA conflict",
                p.display()
            )))
        }
        (Some(d), None) => {
            let n = d.len() as u64;
            (
                Some(Box::new(std::io::Cursor::new(d.into_bytes()))),
                PathBuf::from("DATA"),
                Some(n),
            )
        }
        // `-` is standard input, as in Click.
        (None, Some(p)) if p.as_os_str() == "-" => (Some(Box::new(std::io::stdin())), p, None),
        (None, Some(p)) => return open_file(p),
        (None, None) => return Err(ArgError::new("FILENAME: required argument missing")),
    })
}

/// The `stop` write handler of the file readers, which `call_handler`
/// takes because it stops the router: reading ends (`active` false) and
/// the router stops. `None` for every other handler.
pub(crate) fn call_stop(
    handler: &str,
    write: bool,
    active: &mut bool,
    cx: &mut Context<'_>,
) -> Option<Result<String, String>> {
    if handler == "stop" && write {
        *active = false;
        cx.request_stop();
        return Some(Ok(String::new()));
    }
    None
}

/// What [`read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineRead {
    /// The end of the input.
    End,
    /// A line, in the buffer (with its newline, if it had one).
    Line,
    /// A line longer than [`MAX_LINE`] bytes, skipped whole.
    TooLong,
}

/// Reads one line of at most [`MAX_LINE`] bytes into `buf`, adding the
/// bytes consumed to `filepos`; a longer line is skipped a bounded piece
/// at a time. An error is the end of the input.
pub(crate) fn read_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    filepos: &mut u64,
) -> std::io::Result<LineRead> {
    buf.clear();
    let n = reader
        .by_ref()
        .take(MAX_LINE as u64 + 1)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(LineRead::End);
    }
    *filepos += n as u64;
    if buf.len() > MAX_LINE && buf.last() != Some(&b'\n') {
        while let Ok(n) = reader.by_ref().take(1 << 16).read_until(b'\n', buf) {
            *filepos += n as u64;
            if n == 0 || buf.last() == Some(&b'\n') {
                break;
            }
            buf.clear();
        }
        return Ok(LineRead::TooLong);
    }
    Ok(LineRead::Line)
}

/// Reads a tcpdump output file.
pub struct FromTcpdump {
    /// The output is pull: packets leave when pulled, no task.
    pull: bool,
    reader: Option<BufReader<Box<dyn Read + Send>>>,
    parser: Parser,
    lineno: u64,
    filepos: u64,
    filesize: Option<u64>,
    path: PathBuf,
    stop: bool,
    active: bool,
    /// SAMPLE as a fraction of 2^28 (Click's fixed point).
    sample: u32,
    rng: u64,
    burst: usize,
    warnings: Vec<String>,
    /// The first bad line was reported (Click's `_format_complaint`).
    complained: bool,
    count: u64,
    bad_lines: u64,
    done: bool,
    stopped: bool,
}

impl FromTcpdump {
    /// Reads lines up to the next packet; `None` at the end.
    fn read_packet(&mut self, cx: &mut Context<'_>) -> Option<Packet> {
        let mut buf = Vec::new();
        // Bounded: every pass consumes a line or ends the file.
        loop {
            let Some(reader) = self.reader.as_mut() else {
                if let Some(e) = self.parser.finish() {
                    self.bad(e);
                }
                return None;
            };
            let r = match read_line(reader, &mut buf, &mut self.filepos) {
                Ok(LineRead::End) => {
                    self.reader = None;
                    continue;
                }
                Ok(r) => r,
                Err(e) => {
                    cx.report_error(format!("{}: {e}", self.path.display()));
                    self.reader = None;
                    continue;
                }
            };
            self.lineno += 1;
            if r == LineRead::TooLong {
                if self.parser.finish().is_some() {
                    self.bad(ParseError::LoneHeader);
                }
                self.bad(ParseError::TooLong);
                continue;
            }
            let parsed = self.parser.line(&buf);
            if parsed.lone_header {
                self.bad(ParseError::LoneHeader);
            }
            if let Some(e) = parsed.error {
                self.bad(e);
            }
            if let Some(p) = parsed.packet {
                return Some(p);
            }
        }
    }

    /// Counts a bad line; the first is reported as Click reports it.
    fn bad(&mut self, e: ParseError) {
        self.bad_lines += 1;
        if !self.complained {
            self.complained = true;
            eprintln!("{}:{}: {e}", self.path.display(), self.lineno);
        }
    }

    fn sampled(&mut self) -> bool {
        sample_draw(&mut self.rng, self.sample)
    }

    /// Fills `out` with up to `burst` packets; returns how many.
    fn fill(&mut self, out: &mut Batch, burst: usize, cx: &mut Context<'_>) -> usize {
        let mut n = 0;
        let mut looked = 0;
        // Bounded: at most a few bursts' worth of packets looked at.
        while n < burst && !out.is_full() && looked < burst * 4 {
            let Some(p) = self.read_packet(cx) else {
                self.done = true;
                break;
            };
            looked += 1;
            if !self.sampled() {
                continue;
            }
            let _ = out.push(p);
            n += 1;
        }
        self.count += n as u64;
        n
    }

    fn end(&mut self, cx: &mut Context<'_>) {
        if self.stop {
            cx.request_stop();
        }
        self.stopped = true;
    }
}

impl Element for FromTcpdump {
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
        if self.stopped || !self.active {
            return;
        }
        self.fill(out, max.clamp(1, MAX_BATCH), cx);
        if self.done {
            self.end(cx);
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
        let n = self.fill(&mut b, self.burst, cx);
        cx.push(0, &mut b);
        if self.done {
            self.end(cx);
            return TaskResult::Done;
        }
        if n > 0 {
            TaskResult::Worked
        } else {
            TaskResult::Idle
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("bad_lines", self.bad_lines);
        s.counter("tcp_flows", self.parser.tcp_flows() as u64);
    }

    fn empty_signal(&self, _port: usize) -> Option<bool> {
        // Click's FromTcpdump is an empty notifier when pulled: asleep
        // while inactive and once the file is done.
        Some(self.active && !self.stopped)
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        Some(match handler {
            "active" => self.active.to_string(),
            "encap" => "IP".into(),
            "sampling_prob" => sample_text(self.sample),
            "filepos" => self.filepos.to_string(),
            "filesize" => self.filesize.map_or_else(|| "-".into(), |n| n.to_string()),
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
            "active" => {
                self.active =
                    bool::from_arg(value.trim()).map_err(|_| "syntax error".to_string())?
            }
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (FromTcpdump has `active` and `stop`)"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::info::{line, parse_fields};
    use bricks_runtime::testing::Harness;

    const FIELDS: &str = "timestamp ip_src sport ip_dst dport ip_proto ip_len ip_tos ip_ttl \
        ip_id ip_fragoff tcp_flags tcp_seq tcp_ack tcp_window tcp_urp tcp_opt payload_len";

    /// The summary line of each packet `text`'s lines make, with `None`
    /// for a line that makes none.
    fn summaries(text: &str) -> Vec<Option<String>> {
        let fields = parse_fields(FIELDS).unwrap();
        let mut p = Parser::new(64, true);
        text.lines()
            .map(|l| {
                let r = p.line(l.as_bytes());
                r.packet.map(|pk| line(&fields, &pk))
            })
            .collect()
    }

    fn one(text: &str) -> String {
        summaries(text).pop().flatten().expect("a packet")
    }

    #[test]
    fn clicks_own_tcp_lines() {
        // From Click's FromTcpdump-02 test.
        let text = "\
1073554823.351129 192.168.1.100.32822 > 130.74.110.2.80: SWE [tcp sum ok] 161246674:161246674(0) win 5840 <mss 1460,sackOK,timestamp 1301834 0,nop,wscale 0> (DF) (ttl 64, id 45208, len 60)
1073554823.427822 130.74.110.2.80 > 192.168.1.100.32822: S [tcp sum ok] 808009904:808009904(0) ack 161246675 win 49152 <mss 1452,nop,wscale 0,nop,nop,timestamp 3423766 1301834,nop,nop,sackOK> (DF) (ttl 45, id 38050, len 64)
1073554823.427877 192.168.1.100.32822 > 130.74.110.2.80: . [tcp sum ok] ack 1 win 5840 <nop,nop,timestamp 1301841 3423766> (DF) (ttl 64, id 45209, len 52)
1073554823.428260 192.168.1.100.32822 > 130.74.110.2.80: P 1:592(591) ack 1 win 5840 <nop,nop,timestamp 1301842 3423766> (DF) (ttl 64, id 45210, len 643)
1073554824.041605 192.168.1.100.32822 > 130.74.110.2.80: . [tcp sum ok] ack 1839 win 10080 <nop,nop,timestamp 1301903 3423767,nop,nop,sack sack 1 {3279:4503} > (DF) (ttl 64, id 45214, len 64)";
        let got: Vec<String> = summaries(text).into_iter().map(Option::unwrap).collect();
        assert_eq!(
            got,
            vec![
                "1073554823.351129 192.168.1.100 32822 130.74.110.2 80 T 60 0 64 45208 0! SEC \
                 161246674 0 5840 0 mss1460;sackok;ts1301834:0;wscale0 0",
                "1073554823.427822 130.74.110.2 80 192.168.1.100 32822 T 64 0 45 38050 0! SA \
                 808009904 161246675 49152 0 \
                 mss1452;wscale0;ts3423766:1301834;sackok 0",
                "1073554823.427877 192.168.1.100 32822 130.74.110.2 80 T 52 0 64 45209 0! A \
                 161246675 808009905 5840 0 ts1301841:3423766 0",
                "1073554823.428260 192.168.1.100 32822 130.74.110.2 80 T 643 0 64 45210 0! PA \
                 161246675 808009905 5840 0 ts1301842:3423766 591",
                "1073554824.041605 192.168.1.100 32822 130.74.110.2 80 T 64 0 64 45214 0! A \
                 161247266 808011743 10080 0 ts1301903:3423767;sack808013183-808014407 0",
            ]
        );
    }

    #[test]
    fn clicks_udp_lines_and_service_names() {
        assert_eq!(
            one("1.056252 169.232.91.64.1040 > 239.255.255.250.1900:  udp 90 [ttl 1]"),
            "1.056252 169.232.91.64 1040 239.255.255.250 1900 U 118 0 1 0 0 - - - - - - 90"
        );
        assert_eq!(
            one("2.898617 169.232.91.4.771 > 224.0.0.2.1985:  udp 20 [tos 0xc0]  [ttl 1]"),
            "2.898617 169.232.91.4 771 224.0.0.2 1985 U 48 192 1 0 0 - - - - - - 20"
        );
        // "ssh" is one of Click's own names; "http" too.
        assert!(
            one("5.2 192.168.1.100.32784 > 192.150.187.37.ssh: . ack 81 win 32800")
                .contains(" 22 T 40 ")
        );
        assert!(one("5.2 10.0.0.1.http > 10.0.0.2.1: R 0:0(0) win 0").contains(" 80 10.0.0.2 "));
    }

    #[test]
    fn relative_sequence_numbers_become_absolute() {
        let text = "\
29.309773 192.168.1.100.32801 > 216.239.53.99.80: SWE 646783667:646783667(0) win 5840 <mss 1460,sackOK,timestamp 533430 0,nop,wscale 0> (DF)
29.323590 216.239.53.99.80 > 192.168.1.100.32801: S 2865792400:2865792400(0) ack 646783668 win 8190 <mss 1452>
29.323640 192.168.1.100.32801 > 216.239.53.99.80: . ack 1 win 5840 (DF)
29.324069 192.168.1.100.32801 > 216.239.53.99.80: P 1:512(511) ack 1 win 5840 (DF)
31.035983 216.239.53.99.80 > 192.168.1.100.32801: . 1375:2805(1430) ack 979 win 31460 [tos 0x10]";
        let fields = parse_fields("tcp_seq tcp_ack ip_len payload_len").unwrap();
        let mut p = Parser::new(64, false);
        let got: Vec<String> = text
            .lines()
            .map(|l| line(&fields, &p.line(l.as_bytes()).packet.unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                "646783667 0 60 0",
                "2865792400 646783668 44 0",
                "646783668 2865792401 40 0",
                "646783668 2865792401 551 511",
                "2865793775 646784646 1470 1430",
            ]
        );
        assert_eq!(p.tcp_flows(), 1);
    }

    #[test]
    fn tcpdump_4_lines_and_v_headers() {
        // Printed by tcpdump 4.99.3 -n -tt (and -v) from packets made by
        // hand: see the bricks integration test for the comparison.
        let text = "\
1000000000.123456 IP 10.0.0.1.40000 > 192.168.1.2.80: Flags [S], seq 1000, win 64240, options [mss 1460,sackOK,TS val 1 ecr 0,nop,wscale 7], length 0
1000000001.123457 IP 192.168.1.2.80 > 10.0.0.1.40000: Flags [S.], seq 5000, ack 1001, win 65160, options [mss 1460,nop,nop,sackOK,nop,wscale 7], length 0
1000000002.123458 IP 10.0.0.1.40000 > 192.168.1.2.80: Flags [.], ack 1, win 502, options [nop,nop,TS val 2 ecr 3], length 0
1000000003.123459 IP 10.0.0.1.40000 > 192.168.1.2.80: Flags [P.], seq 1:19, ack 1, win 502, length 18: HTTP: GET / HTTP/1.0
1000000004.123460 IP 192.168.1.2.80 > 10.0.0.1.40000: Flags [.], ack 19, win 500, options [nop,nop,sack 1 {4001:4257}], length 0
1000000005.123461 IP 192.168.1.2.80 > 10.0.0.1.40000: Flags [FP.], seq 1:101, ack 19, win 500, length 100: HTTP
1000000006.123462 IP 10.0.0.1.40000 > 192.168.1.2.80: Flags [R], seq 1019, win 0, length 0
1000000008.123464 IP 10.0.0.1.1234 > 192.168.1.2.5678: UDP, length 11
1000000009.123465 IP 10.0.0.1 > 192.168.1.2: ICMP echo request, id 0, seq 0, length 8
1000000010.123466 IP (tos 0x0, ttl 64, id 9, offset 0, flags [+], proto UDP (17), length 36)
    10.0.0.1.1234 > 192.168.1.2.5678: UDP, length 40
1000000011.123467 IP (tos 0x3,CE, ttl 64, id 9, offset 16, flags [none], proto UDP (17), length 36)
    10.0.0.1 > 192.168.1.2: ip-proto-17";
        let got: Vec<String> = summaries(text).into_iter().flatten().collect();
        assert_eq!(
            got,
            vec![
                "1000000000.123456 10.0.0.1 40000 192.168.1.2 80 T 60 0 2 0 0 S 1000 0 64240 0 \
                 mss1460;sackok;ts1:0;wscale7 0",
                "1000000001.123457 192.168.1.2 80 10.0.0.1 40000 T 52 0 2 0 0 SA 5000 1001 65160 0 \
                 mss1460;sackok;wscale7 0",
                "1000000002.123458 10.0.0.1 40000 192.168.1.2 80 T 52 0 2 0 0 A 1001 5001 502 0 \
                 ts2:3 0",
                "1000000003.123459 10.0.0.1 40000 192.168.1.2 80 T 58 0 2 0 0 PA 1001 5001 502 0 . 18",
                "1000000004.123460 192.168.1.2 80 10.0.0.1 40000 T 52 0 2 0 0 A 5001 1019 500 0 \
                 sack5001-5257 0",
                "1000000005.123461 192.168.1.2 80 10.0.0.1 40000 T 140 0 2 0 0 FPA 5001 1019 500 0 . 100",
                "1000000006.123462 10.0.0.1 40000 192.168.1.2 80 T 40 0 2 0 0 R 1019 0 0 0 . 0",
                "1000000008.123464 10.0.0.1 1234 192.168.1.2 5678 U 39 0 2 0 0 - - - - - - 11",
                "1000000009.123465 10.0.0.1 - 192.168.1.2 - I 28 0 2 0 0 - - - - - - 8",
                "1000000010.123466 10.0.0.1 1234 192.168.1.2 5678 U 36 0 64 9 0+ - - - - - - 8",
                "1000000011.123467 10.0.0.1 - 192.168.1.2 - U 36 3 64 9 16 - - - - - - 16",
            ]
        );
    }

    #[test]
    fn timestamps_in_tcpdumps_other_forms() {
        let body = " IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 0";
        let ts = |prefix: &str| {
            let mut p = Parser::new(4, false);
            p.line(format!("{prefix}{body}").as_bytes())
                .packet
                .map(|p| p.anno().timestamp)
        };
        assert_eq!(ts("01:46:40.123456"), Some(Timestamp(6_400_123_456_000)));
        assert_eq!(
            ts("2001-09-09 01:46:40.123456"),
            Some(Timestamp(1_000_000_000_123_456_000))
        );
        assert_eq!(ts("12.5"), Some(Timestamp(12_500_000_000)));
        assert_eq!(ts("1.000000001999"), Some(Timestamp(1_000_000_001)));
        assert_eq!(ts("1:2"), None);
        assert_eq!(ts("2001-13-09 01:46:40"), None);
        let mut p = Parser::new(4, false);
        let r = p.line(body.trim_start().as_bytes());
        assert_eq!(r.packet.unwrap().anno().timestamp, Timestamp(0));
    }

    #[test]
    fn bad_lines_say_why() {
        let err = |l: &str| Parser::new(4, false).line(l.as_bytes()).error;
        assert_eq!(err("hello"), Some(ParseError::Start));
        assert_eq!(
            err("1.2.3 10.0.0.1 > 10.0.0.2: icmp"),
            Some(ParseError::Timestamp)
        );
        assert_eq!(err("1.5"), Some(ParseError::Addresses));
        assert_eq!(
            err("1.5 10.0.0.1>10.0.0.2: icmp"),
            Some(ParseError::Addresses)
        );
        assert_eq!(
            err("1.5 10.0.0.999 > 10.0.0.2: icmp"),
            Some(ParseError::Source)
        );
        assert_eq!(
            err("1.5 10.0.0.1.1 > 10.0.0.2.x: udp 3"),
            Some(ParseError::Destination)
        );
        assert_eq!(
            err("1.5 10.0.0.1.99999 > 10.0.0.2.1: udp 3"),
            Some(ParseError::Source)
        );
        assert_eq!(
            err("1.5 IP6 fe80::1 > ff02::1: ICMP6, router solicitation, length 16"),
            Some(ParseError::NotIpv4)
        );
        assert_eq!(
            err("1.5 ARP, Request who-has 10.0.0.1 tell 10.0.0.2, length 28"),
            Some(ParseError::NotIpv4)
        );
        assert_eq!(err("1.5 IP (tos 0x0, ttl 1"), Some(ParseError::Header));
        // Blank, comment and detail lines are not errors.
        for l in ["", "   ", "# x", "\t0x0000:  4500 0028", "\r\n"] {
            let r = Parser::new(4, false).line(l.as_bytes());
            assert!(r.packet.is_none() && r.error.is_none(), "{l:?}");
        }
        // A -v header line without its second line.
        let mut p = Parser::new(4, false);
        assert!(p
            .line(b"1.0 IP (ttl 1, proto UDP (17), length 28)")
            .error
            .is_none());
        let r = p.line(b"2.0 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 0");
        assert!(r.lone_header && r.packet.is_some());
        assert!(p
            .line(b"3.0 IP (ttl 1, proto UDP (17), length 28)")
            .error
            .is_none());
        assert_eq!(p.finish(), Some(ParseError::LoneHeader));
        assert_eq!(p.finish(), None);
    }

    #[test]
    fn click_quirks_kept_and_fixed() {
        // Flags with nothing after them: Click leaves the header length 0.
        let mut p = Parser::new(4, false);
        let pk = p.line(b"1.0 10.0.0.1.1 > 10.0.0.2.2: S").packet.unwrap();
        assert_eq!((pk.len(), pk.data()[32], pk.data()[33]), (40, 0, 2));
        // "frag ID:LEN@OFF+": the offset in bytes.
        let pk = p
            .line(b"1.0 10.0.0.1 > 10.0.0.2: (frag 242:1480@2960+)")
            .packet
            .unwrap();
        assert_eq!(&pk.data()[4..8], &[0, 242, 0x21, 0x72]);
        assert_eq!(u16::from_be_bytes([pk.data()[2], pk.data()[3]]), 1500);
        // ECT(0) is 10.
        let pk = p
            .line(b"1.0 10.0.0.1 > 10.0.0.2: icmp [tos 0x0,ECT(0)]")
            .packet
            .unwrap();
        assert_eq!(pk.data()[1], 2);
        // Octal and hex numbers, as Click's cp_integer reads them.
        assert_eq!(cp_int(b"010", 0, 3, 0), (3, 8));
        assert_eq!(cp_int(b"0x1f", 0, 4, 0), (4, 31));
        assert_eq!(cp_int(b"0x", 0, 2, 0), (1, 0));
        assert_eq!(cp_int(b"1_000", 0, 5, 0), (5, 1000));
        assert_eq!(cp_int(b"99999999999", 0, 11, 0), (11, u32::MAX));
        assert_eq!(cp_int(b"+", 0, 1, 0), (0, 0));
        assert_eq!(click_ip(b"010.0.0.1"), Some(0x0a00_0001));
        assert_eq!(click_ip(b"1.2.3"), None);
        assert_eq!(click_ip(b"1.2.3.256"), None);
    }

    #[test]
    fn options_are_bounded_and_len_fixes_the_header() {
        let nops = vec!["nop"; 60].join(",");
        let l = format!("1.0 10.0.0.1.1 > 10.0.0.2.2: S 1:1(0) win 1 <{nops}>");
        let pk = Parser::new(4, false).line(l.as_bytes()).packet.unwrap();
        assert_eq!(pk.len(), 80);
        assert_eq!(pk.data()[32] >> 4, 15);
        // "len" 4 bytes past the headers: options Click did not know.
        let pk = Parser::new(4, false)
            .line(b"1.0 10.0.0.1.1 > 10.0.0.2.2: S 1:1(0) win 1 <md5 x> (len 44)")
            .packet
            .unwrap();
        assert_eq!((pk.len(), pk.data()[32] >> 4), (44, 6));
        // A length whose header would not fit is ignored.
        let pk = Parser::new(4, false)
            .line(b"1.0 10.0.0.1.1 > 10.0.0.2.2: S 1:1(0) win 1 (len 4000)")
            .packet
            .unwrap();
        assert_eq!(pk.len(), 40);
        let pk = Parser::new(4, false)
            .line(
                format!(
                    "1.0 IP 10.0.0.1.1 > 10.0.0.2.2: Flags [S], seq 1, options [{nops}], length 0"
                )
                .as_bytes(),
            )
            .packet
            .unwrap();
        assert_eq!(pk.len(), 80);
    }

    #[test]
    fn checksums_cover_the_bytes_held() {
        let mut p = Parser::new(4, true);
        let pk = p
            .line(b"1.0 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 0")
            .packet
            .unwrap();
        let d = pk.data();
        assert_eq!(checksum::data(&d[..20]), 0xffff);
        let pseudo = checksum::pseudo_header_v4(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            IpProtocol::UDP,
            8,
        );
        assert_eq!(
            checksum::combine(&[checksum::data(&d[20..]), pseudo]),
            0xffff
        );
    }

    #[test]
    fn the_flow_table_is_bounded() {
        let mut p = Parser::new(4, false);
        for port in 1..100u32 {
            let l =
                format!("1.0 IP 10.0.0.1.{port} > 10.0.0.2.80: Flags [.], ack 1, win 1, length 0");
            assert!(p.line(l.as_bytes()).packet.is_some());
            assert!(p.tcp_flows() <= 4);
        }
    }

    #[test]
    fn element_reads_counts_and_reports() {
        let text = "1.0 10.0.0.1.1 > 10.0.0.2.2: udp 4\nbad line\n\n# c\n\
            2.0 IP 10.0.0.1.1 > 10.0.0.2.2: UDP, length 5\n3.0 IP (ttl 9, proto UDP (17), length 28)\n";
        let mut h = Harness::push(&CLASS, &format!("DATA \"{text}\", BURST 8"), 0, 1);
        assert_eq!(h.read_handler("encap").unwrap(), "IP");
        assert_eq!(h.read_handler("filesize").unwrap(), text.len().to_string());
        while h.run_task() != TaskResult::Done {}
        let got = h.take(0);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].anno().extra_length, 5);
        let s = h.stats();
        assert_eq!((s.get("count"), s.get("bad_lines")), (Some(2), Some(2)));
        assert_eq!(h.read_handler("filepos").unwrap(), text.len().to_string());
        let h = Harness::push(&CLASS, "DATA \"\", SAMPLE 0.5", 0, 1);
        assert_eq!(h.read_handler("sampling_prob").unwrap(), "0.5");
        let push = PortInfo {
            inputs: vec![],
            outputs: vec![bricks_element::Processing::Push],
        };
        let e = Harness::try_new(&CLASS, "DATA x, CAPACITY 1", push.clone()).err();
        assert!(e.unwrap().contains("CAPACITY 1: from 2 to"));
        assert!(Harness::try_new(&CLASS, "DATA x, SAMPLE -1", push.clone()).is_err());
        let h = Harness::try_new(&CLASS, "DATA x, SAMPLE 3", push).unwrap();
        assert_eq!(h.read_handler("sampling_prob").unwrap(), "1");
        assert!(Harness::try_new(
            &CLASS,
            "DATA x, FILENAME y",
            PortInfo {
                inputs: vec![],
                outputs: vec![bricks_element::Processing::Push]
            }
        )
        .is_err());
    }

    #[test]
    fn a_first_line_that_is_no_packet_is_warned_about() {
        let ports = PortInfo {
            inputs: vec![],
            outputs: vec![bricks_element::Processing::Push],
        };
        let warning = |args: &str| {
            bricks_runtime::testing::make_element(&CLASS, args, &ports)
                .unwrap()
                .configure_message()
        };
        let w = warning("DATA \"# comment\n1.0 IP 1.0.0.1 > 1.0.0.2: ICMP\"").unwrap();
        assert!(w.contains("DATA: first line suspicious; is this a tcpdump output file?"));
        assert_eq!(warning("DATA \"1.0 IP 1.0.0.1 > 1.0.0.2: ICMP\""), None);
        assert_eq!(warning("DATA \"IP 1.0.0.1 > 1.0.0.2: ICMP\""), None);
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/analysis/sample.tcpdump");
        assert_eq!(warning(path), None);
        assert!(warning("DATA x, SAMPLE 0")
            .unwrap()
            .contains("emitting no packets"));
    }

    #[test]
    fn the_sample_file_reads_without_errors() {
        let text = include_str!("sample.tcpdump");
        let mut p = Parser::new(64, true);
        let mut n = 0;
        for l in text.lines() {
            let r = p.line(l.as_bytes());
            assert!(r.error.is_none() && !r.lone_header, "{l}");
            n += usize::from(r.packet.is_some());
        }
        assert_eq!(n, 9);
    }
}
