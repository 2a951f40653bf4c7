//! `ToIPFlowDumps`: writes a summary dump per TCP or UDP flow (Click's
//! `elements/analysis/toipflowdumps.cc`).
//!
//! Flows are told apart by the aggregate annotation (AggregateIPFlows
//! sets it); each flow's packets are kept, up to 128, and appended to its
//! file, as Click does: the file is opened, written and closed each time,
//! so that at most one file is open however many flows there are. The
//! flows are bounded by CAPACITY (a packet of a new flow beyond it is
//! refused and counted) and the packets kept over all flows by
//! [`MAX_KEPT`] (beyond it every flow's are written out).

use super::options::{tcp_text, TcpOptSet};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_packet::{Timestamp, DEFAULT_BURST, MAX_BATCH};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `ToIPFlowDumps` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ToIPFlowDumps",
    ports: "1/0-1",
    processing: "a/h",
    manual: &MANUAL,
    make,
};

/// Default CAPACITY: flows kept at once.
pub const DEFAULT_CAPACITY: usize = 65_536;
/// Largest CAPACITY.
pub const MAX_CAPACITY: usize = 1 << 22;
/// Packets kept per flow before they are written (Click's `NPKT`).
const NPKT: usize = 128;
/// Notes kept per flow before they are written (Click's `NNOTE`).
const NNOTE: usize = 32;
/// Packets kept over all flows; beyond, every flow's are written.
pub const MAX_KEPT: usize = 1 << 18;
/// Longest expansion of one `%` escape's width.
const MAX_WIDTH: usize = 64;

static MANUAL: Manual = Manual {
    summary: "creates separate trace files for each TCP/UDP flow",
    synopsis: "ToIPFlowDumps(FILEPATTERN [, KEYWORDS])",
    description: "Writes a summary of each TCP and UDP flow's packets, in the style of \
        ToIPSummaryDump, to a file of its own. Flows are told apart by their aggregate \
        annotations (run it downstream of AggregateIPFlows); the paint annotation's low bit \
        is the direction (`>` or `<`), and a packet painted 2 or 3 (AggregateIPFlows' ICMP \
        errors) is a note `#TIME > ICMP_error` in the flow of the packet it quotes. Each \
        file starts with `!IPSummaryDump 1.3`, `!flowid SRC SPORT DST DPORT T|U`, \
        `!aggregate N`, the `!data` line, `!firstseq > N` and `!firstseq < N` (the first \
        sequence number of each direction, which the lines' numbers are relative to, \
        unless ABSOLUTE_SEQ) and `!firsttime T` (what the times are relative to, the first \
        packet being at 0.000001, unless ABSOLUTE_TIME). TCP lines are `TIME DIR [IP_ID] \
        FLAGS SEQ PAYLOAD_LEN ACK [WINDOW] [OPTIONS]`, UDP lines `TIME DIR [IP_ID] \
        PAYLOAD_LEN`. FILEPATTERN names the files: `%n` the aggregate in decimal, `%x` and \
        `%X` in hex, `%.0n` to `%.3n` its bytes from the top, `%.4n` and `%.5n` its upper \
        and lower 16 bits, `%s` and `%d` the source and destination addresses (`%.0s` to \
        `%.3s` their bytes), `%S` and `%D` the ports, `%p` T or U, `%%` a percent sign; a \
        `0` flag and a width pad with zeros (without the flag, with underscores). \
        Directories are made as needed; `-` writes every flow to standard output. Packets \
        pass on unchanged to the output, if any. A flow's file is written 128 packets at a \
        time and when it ends: when `clear` is written or the router stops (flows with \
        fewer than MINCOUNT packets then have their file removed). The state is shared by \
        every worker. Differences from Click: at most CAPACITY flows are kept (Click: until \
        memory runs out); a packet of a new flow beyond that is refused and counted in \
        `table_full`, and `clear` makes room; at most 262144 packets are kept over all \
        flows, beyond which every flow's are written; NOTIFIER is accepted and not used (no \
        flow ends before `clear` or the end); packets without an aggregate, not IPv4, or \
        neither TCP nor UDP are counted in `no_flow` (Click counts the first and asserts on \
        the others); the `!data` line lists `tcp_window` when TCP_WINDOW is true (Click's \
        omits it), IP IDs are in host order (Click prints them byte-swapped on \
        little-endian machines), a UDP payload length does not count the IP header (Click \
        subtracts only the UDP header), and the CWR flag is written as `C` (Click drops \
        it); BINARY and GZIP are refused (write text and compress afterwards).",
    ports: "one input, push or pull; optional push output",
    keywords: &[
        Keyword {
            name: "FILEPATTERN",
            ty: "file name pattern",
            default: Some("-"),
            doc: "how files are named (also OUTPUT_PATTERN)",
        },
        Keyword {
            name: "NOTIFIER",
            ty: "element",
            default: None,
            doc: "accepted, not used",
        },
        Keyword {
            name: "ABSOLUTE_TIME",
            ty: "boolean",
            default: Some("false"),
            doc: "write absolute timestamps",
        },
        Keyword {
            name: "ABSOLUTE_SEQ",
            ty: "boolean",
            default: Some("false"),
            doc: "write absolute sequence numbers",
        },
        Keyword {
            name: "ALL_TCP_OPT",
            ty: "boolean",
            default: Some("false"),
            doc: "write MSS, window scale, SACK and timestamp options",
        },
        Keyword {
            name: "TCP_OPT",
            ty: "boolean",
            default: Some("false"),
            doc: "write MSS, window scale and SACK options",
        },
        Keyword {
            name: "TCP_WINDOW",
            ty: "boolean",
            default: Some("false"),
            doc: "write each TCP packet's window",
        },
        Keyword {
            name: "IP_ID",
            ty: "boolean",
            default: Some("false"),
            doc: "write each packet's IP ID",
        },
        Keyword {
            name: "MINCOUNT",
            ty: "unsigned",
            default: Some("0"),
            doc: "keep only the files of flows with at least this many packets",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned (bricks only)",
            default: Some("65536"),
            doc: "most flows kept at once, from 1 to 4194304",
        },
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "packets pulled per task run when the input is pull",
        },
    ],
    counters: &[
        ("flows", "flows kept now"),
        ("ended", "flows ended (written, or removed under MINCOUNT)"),
        (
            "table_full",
            "packets of new flows refused because CAPACITY was reached",
        ),
        ("no_flow", "packets without an aggregate, or not TCP or UDP"),
        ("errors", "failed file writes"),
    ],
    example:
        "FromIPSummaryDump(crates/elements/src/analysis/sample.ipsum, STOP true, CHECKSUM true)\n\
              -> AggregateIPFlows -> ToIPFlowDumps(/tmp/bricks-flows/flow%03n, TCP_OPT true);",
    see_also: &["AggregateIPFlows", "ToIPSummaryDump", "FromIPSummaryDump"],
};

/// One `%` escape of FILEPATTERN.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Escape {
        zero: bool,
        width: usize,
        precision: Option<u32>,
        conv: u8,
    },
}

/// Parses FILEPATTERN into text and escapes.
fn parse_pattern(p: &str) -> Result<Vec<Piece>, String> {
    let b = p.as_bytes();
    let mut out = Vec::new();
    let mut text = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            text.push(b[i]);
            i += 1;
            continue;
        }
        i += 1;
        let zero = b.get(i) == Some(&b'0');
        if zero {
            i += 1;
        }
        let mut width = 0usize;
        while let Some(d) = b.get(i).filter(|c| c.is_ascii_digit()) {
            width = (width * 10 + usize::from(d - b'0')).min(MAX_WIDTH);
            i += 1;
        }
        let mut precision = None;
        if b.get(i) == Some(&b'.') {
            let mut v = 0u32;
            i += 1;
            while let Some(d) = b.get(i).filter(|c| c.is_ascii_digit()) {
                v = (v * 10 + u32::from(d - b'0')).min(1000);
                i += 1;
            }
            precision = Some(v);
        }
        let Some(&conv) = b.get(i) else {
            return Err("bad filename pattern: `%` at the end".into());
        };
        if !b"nxXsdSDp%".contains(&conv) {
            return Err(format!(
                "bad filename pattern `%{}`",
                String::from_utf8_lossy(&b[i..=i.min(b.len() - 1)])
            ));
        }
        i += 1;
        if conv == b'%' && width == 0 {
            text.push(b'%');
            continue;
        }
        if !text.is_empty() {
            out.push(Piece::Text(String::from_utf8_lossy(&text).into_owned()));
            text.clear();
        }
        out.push(Piece::Escape {
            zero,
            width,
            precision,
            conv,
        });
    }
    if !text.is_empty() {
        out.push(Piece::Text(String::from_utf8_lossy(&text).into_owned()));
    }
    Ok(out)
}

/// What a file name is made from: the packet's addresses, ports and
/// protocol, and its aggregate.
#[derive(Debug, Clone, Copy)]
struct NameParts {
    agg: u32,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    tcp: bool,
}

fn expand(pieces: &[Piece], n: &NameParts) -> String {
    let mut s = String::new();
    for piece in pieces {
        let (zero, width, precision, conv) = match piece {
            Piece::Text(t) => {
                s.push_str(t);
                continue;
            }
            Piece::Escape {
                zero,
                width,
                precision,
                conv,
            } => (*zero, *width, *precision, *conv),
        };
        let byte = |a: Ipv4Addr, p: u32| a.octets()[p as usize].to_string();
        let sub = match conv {
            b'n' | b'x' | b'X' => {
                let v = match precision {
                    Some(p @ 0..=3) => (n.agg >> ((3 - p) * 8)) & 255,
                    Some(p @ 4..=5) => (n.agg >> ((5 - p) * 16)) & 65535,
                    _ => n.agg,
                };
                match conv {
                    b'n' => v.to_string(),
                    b'x' => format!("{v:x}"),
                    _ => format!("{v:X}"),
                }
            }
            b's' => match precision {
                Some(p @ 0..=3) => byte(n.src, p),
                _ => n.src.to_string(),
            },
            b'd' => match precision {
                Some(p @ 0..=3) => byte(n.dst, p),
                _ => n.dst.to_string(),
            },
            b'S' => n.sport.to_string(),
            b'D' => n.dport.to_string(),
            b'p' => if n.tcp { "T" } else { "U" }.to_string(),
            _ => "%".to_string(),
        };
        for _ in sub.len()..width {
            s.push(if zero { '0' } else { '_' });
        }
        s.push_str(&sub);
    }
    s
}

/// How a flow's packets are written.
#[derive(Debug, Clone, Copy)]
struct Settings {
    absolute_time: bool,
    absolute_seq: bool,
    /// TCP options kept: none, MSS/wscale/SACK, or those and timestamps.
    tcp_opt: bool,
    tcp_opt_ts: bool,
    tcp_window: bool,
    ip_id: bool,
    mincount: u32,
}

/// A packet of a flow, as written.
#[derive(Debug, Clone, Copy)]
struct Pkt {
    /// Relative (or absolute) time, ns.
    ts: i64,
    seq: u32,
    ack: u32,
    dir: u8,
    flags: u8,
    payload_len: u16,
    ip_id: u16,
    window: u16,
    /// The packet's options in the flow's option bytes: start, length.
    opt: (u32, u8),
}

/// One flow's state.
#[derive(Debug)]
struct Flow {
    file: PathBuf,
    outputted: bool,
    src: Ipv4Addr,
    sport: u16,
    dst: Ipv4Addr,
    dport: u16,
    tcp: bool,
    agg: u32,
    first_ts: i64,
    first_seq: [Option<u32>; 2],
    packets: u32,
    pkts: Vec<Pkt>,
    opt_bytes: Vec<u8>,
    /// Notes, each before the packet of its index.
    notes: Vec<(usize, String)>,
}

/// The IP header of `p` if it is IPv4 with its header whole: the header
/// and the bytes from it on.
fn ipv4(p: &Packet) -> Option<&[u8]> {
    let h = p.network_header()?;
    (h.len() >= 20 && h[0] >> 4 == 4 && h.len() >= usize::from(h[0] & 15) * 4 && h[0] & 15 >= 5)
        .then_some(h)
}

fn addr(h: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(h[at], h[at + 1], h[at + 2], h[at + 3])
}

fn u16at(h: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([h[at], h[at + 1]])
}

fn u32at(h: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]])
}

/// A flow's addresses, ports and protocol from an IP header `h` (and the
/// bytes after it): `None` unless TCP or UDP with the ports there.
fn flow_id(h: &[u8]) -> Option<NameParts> {
    let hl = usize::from(h[0] & 15) * 4;
    let tcp = match h[9] {
        6 => true,
        17 => false,
        _ => return None,
    };
    let t = h.get(hl..hl + 4)?;
    Some(NameParts {
        agg: 0,
        src: addr(h, 12),
        dst: addr(h, 16),
        sport: u16at(t, 0),
        dport: u16at(t, 2),
        tcp,
    })
}

/// The (possibly quoted) flow of a packet painted `paint`: ICMP errors
/// (paint 2 and 3) give the flow of the header they quote.
fn packet_flow(h: &[u8], paint: u8) -> Option<NameParts> {
    if paint >= 2 {
        let hl = usize::from(h[0] & 15) * 4;
        if h[9] != 1 {
            return None;
        }
        let q = h.get(hl + 8..)?;
        if q.len() < 20 || q[0] >> 4 != 4 || q[0] & 15 < 5 {
            return None;
        }
        return flow_id(q);
    }
    flow_id(h)
}

impl Flow {
    fn new(n: NameParts, file: PathBuf, ts: Timestamp, paint: u8, s: &Settings) -> Flow {
        let (src, sport, dst, dport) = if paint & 1 == 1 {
            (n.dst, n.dport, n.src, n.sport)
        } else {
            (n.src, n.sport, n.dst, n.dport)
        };
        Flow {
            file,
            outputted: false,
            src,
            sport,
            dst,
            dport,
            tcp: n.tcp,
            agg: n.agg,
            first_ts: if s.absolute_time {
                0
            } else {
                ts.signed_nanos() - 1000
            },
            first_seq: if s.absolute_seq {
                [Some(0), Some(0)]
            } else {
                [None, None]
            },
            packets: 0,
            pkts: Vec::new(),
            opt_bytes: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Keeps the options of a TCP header `t` (its options area `o`) as
    /// Click's `store_opt` does; renumbers SACK blocks. Returns where.
    fn keep_options(&mut self, o: &[u8], dir: usize, s: &Settings) -> (u32, u8) {
        let start = self.opt_bytes.len();
        let mut i = 0;
        // Bounded: each pass moves `i` on or leaves.
        while i < o.len() {
            let kind = o[i];
            if kind == 0 {
                break;
            }
            if kind == 1 {
                i += 1;
                continue;
            }
            let Some(&len) = o.get(i + 1) else {
                self.opt_bytes.truncate(start);
                return (0, 0);
            };
            let len = usize::from(len);
            let Some(body) = o.get(i..i + len).filter(|_| len >= 2) else {
                self.opt_bytes.truncate(start);
                return (0, 0);
            };
            let good = match kind {
                2 => len == 4,
                3 => len == 3,
                4 => len == 2,
                8 if len == 10 => {
                    if !s.tcp_opt_ts {
                        i += len;
                        continue;
                    }
                    true
                }
                8 => false,
                5 => {
                    if len % 8 != 2 {
                        self.opt_bytes.truncate(start);
                        return (0, 0);
                    }
                    let other = 1 - dir;
                    let base = *self.first_seq[other].get_or_insert(u32at(body, 2));
                    self.opt_bytes.extend_from_slice(&body[..2]);
                    for b in body[2..].chunks_exact(4) {
                        let v = u32at(b, 0).wrapping_sub(base);
                        self.opt_bytes.extend_from_slice(&v.to_be_bytes());
                    }
                    i += len;
                    continue;
                }
                _ => {
                    i += len;
                    continue;
                }
            };
            if !good {
                self.opt_bytes.truncate(start);
                return (0, 0);
            }
            self.opt_bytes.extend_from_slice(body);
            i += len;
        }
        let n = (self.opt_bytes.len() - start).min(255);
        (start as u32, n as u8)
    }

    /// Adds a packet (IP header `h` and the bytes after it, painted
    /// `paint`): a line, or a note for an ICMP error.
    fn add(&mut self, h: &[u8], ts: Timestamp, paint: u8, s: &Settings) {
        self.packets = self.packets.saturating_add(1);
        if paint >= 2 {
            let mut t = String::new();
            ts_text(&mut t, ts.signed_nanos());
            let dir = if paint & 1 == 1 { '>' } else { '<' };
            self.notes
                .push((self.pkts.len(), format!("{t} {dir} ICMP_error")));
            return;
        }
        let dir = usize::from(paint & 1);
        let hl = usize::from(h[0] & 15) * 4;
        let ip_len = u16at(h, 2);
        let mut k = Pkt {
            ts: ts.signed_nanos() - self.first_ts,
            seq: 0,
            ack: 0,
            dir: dir as u8,
            flags: 0,
            payload_len: 0,
            ip_id: u16at(h, 4),
            window: 0,
            opt: (0, 0),
        };
        let t = &h[hl..];
        if self.tcp && t.len() >= 20 {
            let seq = u32at(t, 4);
            let first = *self.first_seq[dir].get_or_insert(seq);
            let flags = t[13];
            let mut ack = u32at(t, 8);
            if flags & 0x10 == 0 {
                ack = self.first_seq[1 - dir].unwrap_or(0);
            } else if self.first_seq[1 - dir].is_none() {
                self.first_seq[1 - dir] = Some(ack);
            }
            let off = usize::from(t[12] >> 4) * 4;
            k.seq = seq.wrapping_sub(first);
            k.ack = ack.wrapping_sub(self.first_seq[1 - dir].unwrap_or(0));
            k.flags = flags;
            k.payload_len = ip_len.saturating_sub((hl + off) as u16);
            k.window = u16at(t, 14);
            let nop_nop_ts = off == 32 && t.get(20..24) == Some(&[1, 1, 8, 10]);
            if s.tcp_opt && off > 20 && (!nop_nop_ts || s.tcp_opt_ts) {
                let o = &t[20..off.min(t.len())];
                k.opt = self.keep_options(o, dir, s);
            }
        } else if !self.tcp {
            k.payload_len = ip_len.saturating_sub(hl as u16 + 8);
        }
        self.pkts.push(k);
    }

    fn header(&self, s: &Settings, out: &mut String) {
        let _ = writeln!(
            out,
            "!IPSummaryDump 1.3\n!flowid {} {} {} {} {}\n!aggregate {}",
            self.src,
            self.sport,
            self.dst,
            self.dport,
            if self.tcp { 'T' } else { 'U' },
            self.agg
        );
        out.push_str("!data timestamp direction");
        if s.ip_id {
            out.push_str(" ip_id");
        }
        if self.tcp {
            out.push_str(" tcp_flags tcp_seq payload_len tcp_ack");
            if s.tcp_window {
                out.push_str(" tcp_window");
            }
            out.push_str(if s.tcp_opt_ts {
                " tcp_opt"
            } else {
                " tcp_ntopt"
            });
        } else {
            out.push_str(" payload_len");
        }
        out.push('\n');
        if !s.absolute_seq && self.tcp {
            if let Some(f) = self.first_seq[0].filter(|&f| f != 0) {
                let _ = writeln!(out, "!firstseq > {f}");
            }
            if let Some(f) = self.first_seq[1].filter(|&f| f != 0) {
                let _ = writeln!(out, "!firstseq < {f}");
            }
        }
        if self.first_ts != 0 {
            out.push_str("!firsttime ");
            ts_text(out, self.first_ts);
            out.push('\n');
        }
    }

    /// The text of the packets and notes kept; they are then dropped.
    fn text(&mut self, s: &Settings) -> String {
        let mut out = String::with_capacity(self.pkts.len() * 40 + 200);
        if !self.outputted {
            self.header(s, &mut out);
        }
        let mut notes = self.notes.drain(..).peekable();
        for (i, k) in self.pkts.iter().enumerate() {
            while let Some((_, n)) = notes.next_if(|(before, _)| *before <= i) {
                let _ = writeln!(out, "#{n}");
            }
            ts_text(&mut out, k.ts);
            out.push_str(if k.dir == 0 { " > " } else { " < " });
            if s.ip_id {
                let _ = write!(out, "{} ", k.ip_id);
            }
            if self.tcp {
                flags_text(k.flags, &mut out);
                let _ = write!(out, " {} {} {}", k.seq, k.payload_len, k.ack);
                if s.tcp_window {
                    let _ = write!(out, " {}", k.window);
                }
                if k.opt.1 > 0 {
                    let (a, n) = (k.opt.0 as usize, usize::from(k.opt.1));
                    out.push(' ');
                    tcp_text(&self.opt_bytes[a..a + n], TcpOptSet::All, &mut out);
                }
            } else {
                let _ = write!(out, "{}", k.payload_len);
            }
            out.push('\n');
        }
        for (_, n) in notes {
            let _ = writeln!(out, "#{n}");
        }
        self.pkts.clear();
        self.opt_bytes.clear();
        out
    }

    /// Appends what is kept to the file (creating it the first time).
    fn write(&mut self, s: &Settings) -> Result<(), String> {
        let text = self.text(s);
        let first = !self.outputted;
        self.outputted = true;
        if self.file.as_os_str() == "-" {
            let mut o = std::io::stdout().lock();
            return o
                .write_all(text.as_bytes())
                .and_then(|()| o.flush())
                .map_err(|e| format!("-: {e}"));
        }
        let err = |e: std::io::Error| format!("{}: {e}", self.file.display());
        if first {
            if let Some(dir) = self.file.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("making directory {}: {e}", dir.display()))?;
            }
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(first)
            .append(!first)
            .open(&self.file)
            .map_err(err)?;
        f.write_all(text.as_bytes()).map_err(err)
    }
}

/// Click's flag letters in a flow dump: `A` for a lone ACK, `PA`, `.` for
/// none, else the letters of FSRPAUEC.
fn flags_text(f: u8, out: &mut String) {
    match f {
        0x10 => out.push('A'),
        0x18 => out.push_str("PA"),
        0 => out.push('.'),
        _ => {
            for (i, c) in "FSRPAUEC".chars().enumerate() {
                if f & (1 << i) != 0 {
                    out.push(c);
                }
            }
        }
    }
}

/// A signed time in ns as seconds with 6 decimals.
fn ts_text(out: &mut String, ns: i64) {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    let _ = write!(
        out,
        "{sign}{}.{:06}",
        a / 1_000_000_000,
        a % 1_000_000_000 / 1000
    );
}

/// The flows, shared by every worker.
#[derive(Debug)]
struct Table {
    flows: HashMap<u32, Flow>,
    kept: usize,
    table_full: u64,
    no_flow: u64,
    with_agg: u64,
    ended: u64,
    errors: u64,
    complained: bool,
}

#[derive(Debug)]
struct Shared {
    table: Mutex<Table>,
}

impl Table {
    fn fail(&mut self, e: String) {
        self.errors += 1;
        if !self.complained {
            self.complained = true;
            eprintln!("ToIPFlowDumps: {e}");
        }
    }

    fn end_flow(&mut self, mut f: Flow, s: &Settings) {
        self.kept -= f.pkts.len();
        self.ended += 1;
        if f.packets >= s.mincount {
            if let Err(e) = f.write(s) {
                self.fail(e);
            }
        } else if f.outputted && f.file.as_os_str() != "-" {
            if let Err(e) = std::fs::remove_file(&f.file) {
                self.fail(format!("{}: {e}", f.file.display()));
            }
        }
    }

    fn end_all(&mut self, s: &Settings) {
        let flows = std::mem::take(&mut self.flows);
        let mut v: Vec<Flow> = flows.into_values().collect();
        v.sort_by_key(|f| f.agg);
        for f in v {
            self.end_flow(f, s);
        }
    }

    fn write_kept(&mut self, agg: u32, s: &Settings) {
        let Some(f) = self.flows.get_mut(&agg) else {
            return;
        };
        let n = f.pkts.len();
        let r = f.write(s);
        self.kept -= n;
        if let Err(e) = r {
            self.fail(e);
        }
    }
}

/// One worker's ToIPFlowDumps.
pub struct ToIPFlowDumps {
    sh: Arc<Shared>,
    pattern: Vec<Piece>,
    s: Settings,
    capacity: usize,
    warnings: Vec<String>,
    pull: bool,
    pass: bool,
    burst: usize,
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mut pattern: Option<String> = args.read_p("FILEPATTERN")?;
    if let Some(p) = args.read::<String>("OUTPUT_PATTERN")? {
        pattern = Some(p);
    }
    let _notifier: Option<String> = args.read("NOTIFIER")?;
    let absolute_time = args.read("ABSOLUTE_TIME")?.unwrap_or(false);
    let absolute_seq = args.read("ABSOLUTE_SEQ")?.unwrap_or(false);
    let binary: bool = args.read("BINARY")?.unwrap_or(false);
    let all_tcp_opt: bool = args.read("ALL_TCP_OPT")?.unwrap_or(false);
    let tcp_opt: bool = args.read("TCP_OPT")?.unwrap_or(false);
    let tcp_window = args.read("TCP_WINDOW")?.unwrap_or(false);
    let gzip: bool = args.read("GZIP")?.unwrap_or(false);
    let ip_id = args.read("IP_ID")?.unwrap_or(false);
    let mincount: u32 = args.read("MINCOUNT")?.unwrap_or(0);
    let capacity = super::read_capacity(args, DEFAULT_CAPACITY, MAX_CAPACITY)?;
    let burst: usize = args.read("BURST")?.unwrap_or(DEFAULT_BURST);
    if binary {
        return Err(ArgError::new("BINARY is not supported").with_help("write text dumps"));
    }
    if gzip {
        return Err(
            ArgError::new("GZIP is not supported").with_help("compress the files afterwards")
        );
    }
    let text = pattern.unwrap_or_else(|| "-".into());
    let pieces = parse_pattern(&text).map_err(ArgError::new)?;
    let mut warnings = Vec::new();
    if !pieces.iter().any(|p| matches!(p, Piece::Escape { .. })) && text != "-" {
        warnings.push(
            "OUTPUT_PATTERN has no % escapes, so output files will get overwritten".to_string(),
        );
    }
    let s = Settings {
        absolute_time,
        absolute_seq,
        tcp_opt: tcp_opt || all_tcp_opt,
        tcp_opt_ts: all_tcp_opt,
        tcp_window,
        ip_id,
        mincount,
    };
    let sh = args.shared(|_| {
        Ok(Shared {
            table: Mutex::new(Table {
                flows: HashMap::new(),
                kept: 0,
                table_full: 0,
                no_flow: 0,
                with_agg: 0,
                ended: 0,
                errors: 0,
                complained: false,
            }),
        })
    })?;
    Ok(Box::new(ToIPFlowDumps {
        sh,
        pattern: pieces,
        s,
        capacity,
        warnings,
        pull: ports.input_is_pull(0),
        pass: ports.noutputs() > 0,
        burst: burst.clamp(1, MAX_BATCH),
    }))
}

impl ToIPFlowDumps {
    fn table(&self) -> MutexGuard<'_, Table> {
        self.sh.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records one packet in its flow.
    fn record(&self, t: &mut Table, p: &Packet) {
        let agg = p.anno().flow;
        let paint = p.anno().paint;
        let Some(h) = ipv4(p).filter(|_| agg != 0) else {
            t.no_flow += 1;
            return;
        };
        if !t.flows.contains_key(&agg) {
            let Some(mut n) = packet_flow(h, paint) else {
                t.no_flow += 1;
                return;
            };
            if paint < 2 && h.len() < usize::from(h[0] & 15) * 4 + if n.tcp { 20 } else { 8 } {
                t.no_flow += 1;
                return;
            }
            if t.flows.len() >= self.capacity {
                t.table_full += 1;
                return;
            }
            n.agg = agg;
            let file = PathBuf::from(expand(&self.pattern, &n));
            t.flows
                .insert(agg, Flow::new(n, file, p.anno().timestamp, paint, &self.s));
        }
        let Some(f) = t.flows.get_mut(&agg) else {
            return;
        };
        // A packet of another protocol than the flow's (or a cut header)
        // under the same aggregate: not this flow's.
        let hl = usize::from(h[0] & 15) * 4;
        let fits = paint >= 2
            || (h[9] == if f.tcp { 6 } else { 17 } && h.len() >= hl + if f.tcp { 20 } else { 8 });
        if !fits || (paint >= 2 && packet_flow(h, paint).is_none()) {
            t.no_flow += 1;
            return;
        }
        t.with_agg += 1;
        let before = f.pkts.len();
        f.add(h, p.anno().timestamp, paint, &self.s);
        let full = f.pkts.len() >= NPKT || f.notes.len() >= NNOTE;
        t.kept += f.pkts.len() - before;
        if full {
            t.write_kept(agg, &self.s);
        }
        if t.kept >= MAX_KEPT {
            let aggs: Vec<u32> = t.flows.keys().copied().collect();
            for a in aggs {
                t.write_kept(a, &self.s);
            }
        }
    }

    fn take(&mut self, b: &mut Batch, cx: &mut Context<'_>) {
        {
            let sh = self.sh.clone();
            let mut t = sh.table.lock().unwrap_or_else(|e| e.into_inner());
            for p in b.iter() {
                self.record(&mut t, p);
            }
        }
        if self.pass {
            cx.push(0, b);
        } else {
            b.clear();
        }
    }
}

impl Element for ToIPFlowDumps {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.take(batch, cx);
    }

    fn task_kind(&self) -> TaskKind {
        TaskKind::pump_if(self.pull)
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        cx.pull_task(self.burst, |b, cx| self.take(b, cx))
    }

    fn configure_message(&self) -> Option<String> {
        super::warnings_message(&self.warnings)
    }

    fn shutdown(&mut self, _cx: &mut Context<'_>) {
        let mut t = self.table();
        if t.flows.is_empty() {
            return;
        }
        t.end_all(&self.s);
        if t.no_flow > 0 && t.with_agg == 0 {
            eprintln!("ToIPFlowDumps: saw no packets with aggregate annotations");
        }
    }

    fn stats(&self, s: &mut Stats) {
        let t = self.table();
        s.counter("flows", t.flows.len() as u64);
        s.counter("ended", t.ended);
        s.counter("table_full", t.table_full);
        s.counter("no_flow", t.no_flow);
        s.counter("errors", t.errors);
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "clear"
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::w("clear")];
        H
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "clear" => {
                let s = self.s;
                self.table().end_all(&s);
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (ToIPFlowDumps has `clear`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    /// A TCP packet from 10.0.0.1:1000 to 10.0.0.2:80, or the reverse,
    /// with the aggregate, paint, time (µs), sequence and acknowledgment
    /// numbers, flags and options.
    #[allow(clippy::too_many_arguments)]
    fn tcp(
        agg: u32,
        paint: u8,
        us: u64,
        seq: u32,
        ack: u32,
        flags: u8,
        opt: &[u8],
        payload: u16,
    ) -> Packet {
        let off = 20 + opt.len();
        let mut b = vec![0u8; 20 + off];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&((20 + off) as u16 + payload).to_be_bytes());
        b[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        b[9] = 6;
        let (s, d, sp, dp) = if paint & 1 == 0 {
            ([10, 0, 0, 1], [10, 0, 0, 2], 1000u16, 80u16)
        } else {
            ([10, 0, 0, 2], [10, 0, 0, 1], 80, 1000)
        };
        b[12..16].copy_from_slice(&s);
        b[16..20].copy_from_slice(&d);
        b[20..22].copy_from_slice(&sp.to_be_bytes());
        b[22..24].copy_from_slice(&dp.to_be_bytes());
        b[24..28].copy_from_slice(&seq.to_be_bytes());
        b[28..32].copy_from_slice(&ack.to_be_bytes());
        b[32] = ((off / 4) as u8) << 4;
        b[33] = flags;
        b[34..36].copy_from_slice(&5840u16.to_be_bytes());
        b[40..].copy_from_slice(opt);
        let mut p = Packet::from_slice(&b).unwrap();
        p.set_network_header(0);
        p.anno_mut().flow = agg;
        p.anno_mut().paint = paint;
        p.anno_mut().timestamp = Timestamp(1_018_330_170_000_000_000 + us * 1000);
        p
    }

    #[test]
    fn patterns_expand_as_clicks() {
        let n = NameParts {
            agg: 0x0102_0304,
            src: Ipv4Addr::new(192, 150, 187, 37),
            dst: Ipv4Addr::new(18, 26, 4, 44),
            sport: 3153,
            dport: 21,
            tcp: true,
        };
        let e = |p: &str| expand(&parse_pattern(p).unwrap(), &n);
        assert_eq!(e("/tmp/flow%03n"), format!("/tmp/flow{}", 0x0102_0304));
        assert_eq!(e("%x-%X"), "1020304-1020304");
        assert_eq!(e("%.0n.%.1n.%.2n.%.3n"), "1.2.3.4");
        assert_eq!(e("%.4x %.5x"), "102 304");
        assert_eq!(e("%s>%d"), "192.150.187.37>18.26.4.44");
        assert_eq!(e("%.3s %.0d"), "37 18");
        assert_eq!(e("%S-%D-%p%%"), "3153-21-T%");
        assert_eq!(e("%5S|%05D"), "_3153|00021");
        assert!(parse_pattern("a%").is_err());
        assert!(parse_pattern("a%q").is_err());
        // Widths are bounded.
        assert_eq!(e("%99999999n").len(), MAX_WIDTH);
    }

    #[test]
    fn a_tcp_flow_is_written_as_clicks_example() {
        let dir = tempfile::tempdir().unwrap();
        let pat = dir.path().join("sub/flow%03n");
        let mut h = Harness::push(&CLASS, &format!("{}, TCP_OPT true", pat.display()), 1, 0);
        let mss = [2, 4, 5, 0xb4, 1, 1, 4, 2];
        h.push_packets(
            0,
            [
                tcp(1, 0, 1, 2_195_313_811, 0, 0x02, &mss, 0),
                tcp(1, 1, 75_539, 2_484_225_252, 2_195_313_812, 0x12, &[], 0),
                tcp(1, 0, 80_000, 2_195_313_812, 2_484_225_253, 0x18, &[], 100),
                // SACK: the block is renumbered from the other side's start.
                tcp(
                    1,
                    1,
                    90_000,
                    2_484_225_253,
                    2_195_313_912,
                    0x10,
                    &[1, 1, 5, 10, 0x83, 0x64, 0xbc, 0x78, 0x83, 0x64, 0xbc, 0xdc],
                    0,
                ),
            ],
        );
        assert_eq!(h.stats().get("flows"), Some(1));
        h.write_handler("clear", "").unwrap();
        let text = std::fs::read_to_string(dir.path().join("sub/flow001")).unwrap();
        let sack_l = 0x8364_bc78u32 - 2_195_313_811;
        assert_eq!(
            text,
            format!(
                "!IPSummaryDump 1.3\n!flowid 10.0.0.1 1000 10.0.0.2 80 T\n!aggregate 1\n\
                 !data timestamp direction tcp_flags tcp_seq payload_len tcp_ack tcp_ntopt\n\
                 !firstseq > 2195313811\n!firstseq < 2484225252\n!firsttime 1018330170.000000\n\
                 0.000001 > S 0 0 0 mss1460;sackok\n0.075539 < SA 0 0 1\n0.080000 > PA 1 100 1\n\
                 0.090000 < A 1 0 101 sack{sack_l}-{}\n",
                sack_l + 100
            )
        );
        assert_eq!(h.stats().get("ended"), Some(1));
        assert_eq!(h.stats().get("flows"), Some(0));
    }

    #[test]
    fn udp_ids_windows_icmp_notes_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let pat = dir.path().join("f%n%p");
        let mut h = Harness::push(
            &CLASS,
            &format!(
                "{}, IP_ID true, TCP_WINDOW true, CAPACITY 2, MINCOUNT 2",
                pat.display()
            ),
            1,
            1,
        );
        // UDP: payload length less the IP and UDP headers.
        let mut u = vec![0u8; 28];
        u[0] = 0x45;
        u[2..4].copy_from_slice(&128u16.to_be_bytes());
        u[4..6].copy_from_slice(&7u16.to_be_bytes());
        u[9] = 17;
        u[12..20].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 3]);
        u[20..24].copy_from_slice(&[0, 53, 0, 53]);
        let mut up = Packet::from_slice(&u).unwrap();
        up.set_network_header(0);
        up.anno_mut().flow = 2;
        let mut icmp = vec![0u8; 28];
        icmp[0] = 0x45;
        icmp[9] = 1;
        icmp.extend_from_slice(&u);
        let mut ip = Packet::from_slice(&icmp).unwrap();
        ip.set_network_header(0);
        ip.anno_mut().flow = 2;
        ip.anno_mut().paint = 3;
        ip.anno_mut().timestamp = Timestamp(5_000_000_000);
        let mut none = up.duplicate();
        none.anno_mut().flow = 0;
        h.push_packets(
            0,
            [
                tcp(1, 0, 1, 10, 0, 0x02, &[], 0),
                up.duplicate(),
                ip,
                tcp(3, 0, 1, 10, 0, 0x02, &[], 0),
                none,
                up,
            ],
        );
        assert_eq!(h.take(0).len(), 6);
        let s = h.stats();
        assert_eq!((s.get("table_full"), s.get("no_flow")), (Some(1), Some(1)));
        h.write_handler("clear", "").unwrap();
        // Flow 1 had one packet: under MINCOUNT, no file.
        assert!(!dir.path().join("f1T").exists());
        let text = std::fs::read_to_string(dir.path().join("f2U")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[3], "!data timestamp direction ip_id payload_len");
        assert_eq!(lines[5], "0.000001 > 7 100");
        assert_eq!(lines[6], "#5.000000 > ICMP_error");
        assert_eq!(lines[7], "0.000001 > 7 100");
        // TCP_WINDOW is listed in the header.
        let f = Flow::new(
            flow_id(&tcp(1, 0, 0, 0, 0, 2, &[], 0).data()[..40]).unwrap(),
            PathBuf::from("x"),
            Timestamp(1000),
            0,
            &Settings {
                absolute_time: true,
                absolute_seq: true,
                tcp_opt: false,
                tcp_opt_ts: false,
                tcp_window: true,
                ip_id: false,
                mincount: 0,
            },
        );
        let mut hd = String::new();
        f.header(
            &Settings {
                absolute_time: true,
                absolute_seq: true,
                tcp_opt: false,
                tcp_opt_ts: false,
                tcp_window: true,
                ip_id: false,
                mincount: 0,
            },
            &mut hd,
        );
        assert!(hd.contains("tcp_ack tcp_window tcp_ntopt\n"), "{hd}");
        assert!(!hd.contains("!firsttime"));
    }

    #[test]
    fn flags_as_clicks() {
        let t = |f| {
            let mut s = String::new();
            flags_text(f, &mut s);
            s
        };
        assert_eq!(t(0x10), "A");
        assert_eq!(t(0x18), "PA");
        assert_eq!(t(0), ".");
        assert_eq!(t(0x12), "SA");
        assert_eq!(t(0x11), "FA");
        assert_eq!(t(0x80), "C");
    }

    #[test]
    fn kept_packets_are_written_128_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let pat = dir.path().join("%n");
        let mut h = Harness::push(&CLASS, &pat.display().to_string(), 1, 0);
        let ps: Vec<Packet> = (0..300u32)
            .map(|i| tcp(9, 0, u64::from(i), 100 + i, 0, 0x02, &[], 0))
            .collect();
        h.push_packets(0, ps);
        let text = std::fs::read_to_string(dir.path().join("9")).unwrap();
        assert_eq!(text.lines().filter(|l| !l.starts_with('!')).count(), 256);
        h.shutdown();
        let text = std::fs::read_to_string(dir.path().join("9")).unwrap();
        assert_eq!(text.lines().filter(|l| !l.starts_with('!')).count(), 300);
        assert_eq!(text.matches("!IPSummaryDump").count(), 1);
    }
}
