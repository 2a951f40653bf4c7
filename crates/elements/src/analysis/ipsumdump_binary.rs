//! Click's binary IP summary dump (`ToIPSummaryDump(..., BINARY true)`,
//! read back by `FromIPSummaryDump` after a `!binary` line): the text
//! header, then one record per packet, a 4-byte big-endian length word
//! (the word included) followed by each field's fixed-size big-endian
//! encoding (Click's `outb`/`inb` in `ipsumdumpinfo.cc` and the
//! `*_outb`/`*_inb` of `ipsumdump_*.cc`). A length word with its top bit
//! set marks a text record: a `!bad` line or a comment.
//!
//! Where Click's encoding is odd it is kept, byte for byte, so that either
//! program reads the other's dumps: `ntimestamp` is nanoseconds then
//! seconds; `ts_usec1` is its low 32 bits then its high 32 bits; `ip_opt`
//! and `tcp_opt` are written twice (all the option bytes, then the options
//! Click keeps, each with a length byte); a field the packet does not
//! have is zeros. Where Click's reader gets its own dumps wrong, bricks
//! reads what the writer meant (see `read_record`).

use super::info::{Field, Record, View};
use super::options::MAX_OPTIONS;
use bricks_packet::{Packet, Timestamp};
use std::io::{self, BufRead, Read};

/// Set in a record's length word when the record holds text.
pub const TEXT_RECORD: u32 = 0x8000_0000;

/// Longest record read, its length word included. Click's longest record
/// is far shorter (a field takes at most 82 bytes and a `!data` line at
/// most 4,096 bytes names a few hundred fields); longer ones are skipped
/// a bounded piece at a time, so a hostile length never allocates.
pub const MAX_RECORD: usize = 1 << 16;

/// Nanoseconds a second.
const NANOS: i64 = 1_000_000_000;

/// Why a field cannot be written in a binary dump.
pub fn check_writable(f: Field) -> Result<(), String> {
    match f {
        // Click's B_NOTALLOWED: a payload has no fixed size.
        Field::Payload => Err("cannot use field payload with BINARY".into()),
        _ => Ok(()),
    }
}

/// Which options a binary option field keeps (Click's `DO_IPOPT_*` and
/// `DO_TCPOPT_*` masks, as bits of the option kinds they let through).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keep {
    /// `ip_opt` and `tcp_opt`: all, padding included.
    All,
    /// `tcp_ntopt`: all but padding and timestamps.
    TcpNoTimestamp,
    /// `tcp_sack`: SACK-permitted and SACK blocks.
    TcpSack,
}

impl Keep {
    fn keeps_tcp(self, kind: u8) -> bool {
        match self {
            Keep::All => true,
            Keep::TcpNoTimestamp => !matches!(kind, 0 | 1 | 8),
            Keep::TcpSack => matches!(kind, 4 | 5),
        }
    }
}

/// Click's `unparse_ip_opt_binary` / `unparse_tcp_opt_binary` after the
/// leading copy: a length byte, then the options `keep` keeps, stopping at
/// EOL (kept when padding is) or at an option whose length is bad.
fn push_kept(opt: &[u8], keep: Keep, out: &mut Vec<u8>) {
    let at = out.len();
    out.push(0);
    let mut i = 0;
    while i < opt.len() {
        let kind = opt[i];
        if kind == 0 || kind == 1 {
            if keep.keeps_tcp(kind) {
                out.push(kind);
            }
            if kind == 0 {
                break;
            }
            i += 1;
            continue;
        }
        let Some(&len) = opt.get(i + 1) else { break };
        let len = usize::from(len);
        if len < 2 || i + len > opt.len() {
            break;
        }
        if keep.keeps_tcp(kind) {
            out.extend_from_slice(&opt[i..i + len]);
        }
        i += len;
    }
    // At most 40 bytes of options: the length fits.
    out[at] = (out.len() - at - 1) as u8;
}

/// An option field's bytes: nothing kept is one zero byte; `ip_opt` and
/// `tcp_opt` write every option byte first, then what Click keeps.
fn push_options(opt: Option<&[u8]>, keep: Keep, out: &mut Vec<u8>) {
    match opt {
        Some(o) if !o.is_empty() => {
            if keep == Keep::All {
                out.push(o.len() as u8);
                out.extend_from_slice(o);
            }
            push_kept(o, keep, out);
        }
        _ => out.push(0),
    }
}

fn has_ports(proto: u8) -> bool {
    matches!(proto, 6 | 17 | 33 | 136)
}

/// The transport header if the packet's protocol is `proto` (a sound TCP
/// header for TCP), as the text writer finds it.
fn transport_of<'a>(v: &View<'a>, proto: u8) -> Option<&'a [u8]> {
    if v.proto() != Some(proto) {
        return None;
    }
    if proto == 6 {
        return v.tcp();
    }
    v.transport()
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// A number field's value and its size in bytes (1, 2, 4 or 8).
fn number(f: Field, p: &Packet, v: &View<'_>) -> (u64, usize) {
    use Field as F;
    let a = p.anno();
    let ns = a.timestamp.signed_nanos();
    let ip = |n: usize| v.ip.filter(|h| h.len() >= n);
    let tcp = |n: usize| v.tcp().filter(|t| t.len() >= n);
    let icmp = |n: usize| transport_of(v, 1).filter(|t| t.len() >= n);
    let with_flow = |t: &[u8]| matches!(t[0], 0 | 8 | 13 | 14 | 15 | 16);
    let n: Option<u64> = match f {
        // Click's seconds are 32 bits: the low 32 bits of bricks'.
        F::TsSec => Some(u64::from(ns.div_euclid(NANOS) as u32)),
        F::TsUsec => Some((ns.rem_euclid(NANOS) / 1000) as u64),
        F::TsUsec1 => Some(ns.div_euclid(1000) as u64),
        F::Count => Some(1),
        F::Link | F::Paint | F::Direction => Some(u64::from(a.paint)),
        F::Aggregate => Some(u64::from(a.flow)),
        F::WireLen => Some(p.len() as u64),
        F::EthType => (v.nh == 14 && v.data.len() >= 14)
            .then(|| u64::from(u16::from_be_bytes([v.data[12], v.data[13]]))),
        F::IpSrc => ip(16).and_then(|h| be32(h, 12)).map(u64::from),
        F::IpDst => ip(20).and_then(|h| be32(h, 16)).map(u64::from),
        F::IpTos => ip(2).map(|h| u64::from(h[1])),
        F::IpDscp => ip(2).map(|h| u64::from(h[1] >> 2)),
        F::IpEcn => ip(2).map(|h| u64::from(h[1] & 3)),
        F::IpTtl => ip(9).map(|h| u64::from(h[8])),
        F::IpFrag => ip(8).map(|h| {
            let w = u16::from_be_bytes([h[6], h[7]]);
            u64::from(if w & 0x3fff != 0 {
                if w & 0x1fff == 0 {
                    b'F'
                } else {
                    b'f'
                }
            } else if w & 0x4000 != 0 {
                b'!'
            } else {
                b'.'
            })
        }),
        F::IpFragoff => ip(8).and_then(|h| be16(h, 6)).map(u64::from),
        F::IpId => ip(6).and_then(|h| be16(h, 4)).map(u64::from),
        F::IpSum => ip(12).and_then(|h| be16(h, 10)).map(u64::from),
        F::IpProto => ip(10).map(|h| u64::from(h[9])),
        F::IpHl => ip(1).map(|_| v.hl() as u64),
        F::IpLen => {
            let len = match v.ip_len() {
                Some(l) if v.ip.is_some() => usize::from(l),
                _ => v.length(),
            };
            let extra = if v.force_extra { v.extra } else { 0 };
            Some(u64::from((len + extra) as u32))
        }
        F::IpCaptureLen => {
            let allow = v.ip.map_or(v.length(), <[u8]>::len);
            let len = v.ip.and_then(|_| v.ip_len()).map_or(allow, usize::from);
            Some(len.min(allow) as u64)
        }
        F::Sport | F::Dport => {
            let at = if f == F::Sport { 0 } else { 2 };
            v.transport()
                .filter(|_| v.proto().is_some_and(has_ports))
                .and_then(|t| be16(t, at))
                .map(u64::from)
        }
        F::TcpSeq => tcp(8).and_then(|t| be32(t, 4)).map(u64::from),
        F::TcpAck => tcp(12).and_then(|t| be32(t, 8)).map(u64::from),
        F::TcpOff => tcp(13).map(|t| u64::from(t[12] >> 4) * 4),
        // One byte: the NS flag (Click's th_flags2) does not fit.
        F::TcpFlags => tcp(14).map(|t| u64::from(t[13])),
        F::TcpWindow => tcp(16).and_then(|t| be16(t, 14)).map(u64::from),
        F::TcpUrp => tcp(20).and_then(|t| be16(t, 18)).map(u64::from),
        F::UdpLen => transport_of(v, 17)
            .filter(|t| t.len() >= 6)
            .and_then(|t| be16(t, 4))
            .map(u64::from),
        F::IcmpType | F::IcmpTypeName => icmp(1).map(|t| u64::from(t[0])),
        F::IcmpCode | F::IcmpCodeName => icmp(2).map(|t| u64::from(t[1])),
        F::IcmpFlowid => icmp(1)
            .filter(|t| with_flow(t))
            .and_then(|t| be16(t, 4))
            .map(u64::from),
        F::IcmpSeq => icmp(1)
            .filter(|t| with_flow(t))
            .and_then(|t| be16(t, 6))
            .map(u64::from),
        F::IcmpNextmtu => icmp(2)
            .filter(|t| t[0] == 3 && t[1] == 4)
            .and_then(|t| be16(t, 6))
            .map(u64::from),
        F::PayloadLen => Some(u64::from(v.payload_len())),
        _ => None,
    };
    (n.unwrap_or(0), size(f).unwrap_or(0))
}

/// A fixed-size field's size in bytes; `None` for option fields (a length
/// byte says theirs) and for `payload` (not allowed).
fn size(f: Field) -> Option<usize> {
    use Field as F;
    Some(match f {
        F::Timestamp | F::NTimestamp | F::TsUsec1 | F::FirstTimestamp | F::FirstNTimestamp => 8,
        F::TsSec
        | F::TsUsec
        | F::Count
        | F::Aggregate
        | F::WireLen
        | F::IpSrc
        | F::IpDst
        | F::IpLen
        | F::IpCaptureLen
        | F::TcpSeq
        | F::TcpAck
        | F::UdpLen
        | F::PayloadLen => 4,
        F::Link
        | F::Paint
        | F::Direction
        | F::IpTos
        | F::IpDscp
        | F::IpEcn
        | F::IpTtl
        | F::IpFrag
        | F::IpProto
        | F::IpHl
        | F::TcpOff
        | F::TcpFlags
        | F::IcmpType
        | F::IcmpCode
        | F::IcmpTypeName
        | F::IcmpCodeName => 1,
        F::IpFragoff
        | F::IpId
        | F::IpSum
        | F::Sport
        | F::Dport
        | F::TcpWindow
        | F::TcpUrp
        | F::IcmpFlowid
        | F::IcmpSeq
        | F::IcmpNextmtu
        | F::EthType => 2,
        F::EthSrc | F::EthDst => 6,
        F::PayloadMd5 | F::PayloadMd5Hex => 16,
        F::IpOpt | F::TcpOpt | F::TcpNtopt | F::TcpSack | F::Payload => return None,
    })
}

/// Appends field `f` of packet `p` seen as `v` in Click's binary encoding.
fn push_field(f: Field, p: &Packet, v: &View<'_>, out: &mut Vec<u8>) {
    use Field as F;
    let ns = p.anno().timestamp.signed_nanos();
    // Click's seconds are a signed 32-bit number; its sub-seconds count up
    // from them, also before 1970.
    let sec = ns.div_euclid(NANOS) as u32;
    let nsec = ns.rem_euclid(NANOS) as u32;
    match f {
        F::Timestamp => {
            out.extend_from_slice(&sec.to_be_bytes());
            out.extend_from_slice(&(nsec / 1000).to_be_bytes());
        }
        F::NTimestamp => {
            out.extend_from_slice(&nsec.to_be_bytes());
            out.extend_from_slice(&sec.to_be_bytes());
        }
        // bricks has no such annotation (the field is refused first).
        F::FirstTimestamp | F::FirstNTimestamp => out.extend_from_slice(&[0; 8]),
        F::TsUsec1 => {
            let (n, _) = number(f, p, v);
            out.extend_from_slice(&(n as u32).to_be_bytes());
            out.extend_from_slice(&((n >> 32) as u32).to_be_bytes());
        }
        F::EthSrc | F::EthDst => {
            // Click copies from a null pointer here when the packet has no
            // Ethernet header; bricks writes zeros.
            if v.nh == 14 && v.data.len() >= 14 {
                let at = if f == F::EthSrc { 6 } else { 0 };
                out.extend_from_slice(&v.data[at..at + 6]);
            } else {
                out.extend_from_slice(&[0; 6]);
            }
        }
        F::IpOpt => {
            let hl = v.hl();
            let o =
                v.ip.filter(|h| hl > 20 && h.len() >= hl)
                    .map(|h| &h[20..hl]);
            push_options(o, Keep::All, out);
        }
        F::TcpOpt | F::TcpNtopt | F::TcpSack => {
            let keep = match f {
                F::TcpOpt => Keep::All,
                F::TcpNtopt => Keep::TcpNoTimestamp,
                _ => Keep::TcpSack,
            };
            let o = v.tcp().filter(|t| t.len() >= 13).and_then(|t| {
                let off = usize::from(t[12] >> 4) * 4;
                // Click leaves out the usual NOP NOP timestamp for
                // tcp_ntopt and tcp_sack before checking the capture.
                let usual_ts = off == 32 && t.len() >= 24 && t[20..24] == [1, 1, 8, 10];
                if off <= 20 || (f != F::TcpOpt && usual_ts) {
                    return None;
                }
                t.get(20..off)
            });
            push_options(o, keep, out);
        }
        F::PayloadMd5 | F::PayloadMd5Hex => {
            out.extend_from_slice(&super::md5::digest(v.payload()));
        }
        // Refused by `check_writable`; nothing is written.
        F::Payload => {}
        _ => {
            let (n, len) = number(f, p, v);
            out.extend_from_slice(&n.to_be_bytes()[8 - len..]);
        }
    }
}

/// Appends packet `p`'s record: its length word, then each of `fields`
/// (Click's `ToIPSummaryDump::summary` with BINARY). `careful` is
/// CAREFUL_TRUNC and `extra_length` EXTRA_LENGTH, as for a text line.
pub fn write_record(
    fields: &[Field],
    p: &Packet,
    careful: bool,
    extra_length: bool,
    out: &mut Vec<u8>,
) {
    let mut v = View::new(p, careful);
    v.force_extra = extra_length;
    let start = out.len();
    out.extend_from_slice(&[0; 4]);
    for &f in fields {
        push_field(f, p, &v, out);
    }
    let len = (out.len() - start) as u32;
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// Appends a text record (a `!bad` line): Click's `write_line` in a binary
/// dump, the length word with its top bit set, then the text. Unlike a
/// binary record's, the length is the text's alone.
pub fn write_text_record(text: &str, out: &mut Vec<u8>) {
    let len = (text.len() as u32) | TEXT_RECORD;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(text.as_bytes());
}

/// `sec` (a signed 32-bit number, as Click's) seconds and `nsec`
/// nanoseconds (carried into the seconds when past one, as Click's
/// `Timestamp::make_nsec`).
fn time(sec: u32, nsec: u64) -> Timestamp {
    let ns = i64::from(sec as i32) * NANOS + nsec as i64;
    Timestamp::from_signed_nanos(ns)
}

/// Reads a record's fields from `body` (the bytes after the length word).
/// A field cut short is absent, and so are the fields after it; bytes left
/// after the last field are ignored (Click's `read_packet` in binary
/// mode). Unlike Click's reader, bricks reads back what Click's writer
/// meant: the second copy of `ip_opt` and `tcp_opt` is skipped,
/// `ts_usec1` is the low word first, and `ip_frag` is its letter, not the
/// letter's code as a fragment offset. A field may name a packet it does
/// not build (an option area over 40 bytes is absent).
pub fn read_record(fields: &[Field], body: &[u8]) -> Record {
    use super::info::Value;
    use Field as F;
    let mut r = Record::default();
    let mut at = 0;
    for &f in fields {
        let rest = &body[at.min(body.len())..];
        let Some(n) = size(f) else {
            if f == F::Payload {
                // Click has no reader for it: the record ends here.
                break;
            }
            let Some((&len, after)) = rest.split_first() else {
                break;
            };
            let len = usize::from(len);
            let Some(opt) = after.get(..len) else { break };
            at += 1 + len;
            if matches!(f, F::IpOpt | F::TcpOpt) && len > 0 {
                let mut copy = Vec::with_capacity(len + 1);
                push_kept(opt, Keep::All, &mut copy);
                if after[len..].starts_with(&copy) {
                    at += copy.len();
                }
            }
            if len <= MAX_OPTIONS {
                r.values.push((f, Value::Bytes(opt.to_vec())));
            }
            continue;
        };
        let Some(b) = rest.get(..n) else { break };
        at += n;
        let word = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let num = match n {
            1 => u32::from(b[0]),
            2 => u32::from(u16::from_be_bytes([b[0], b[1]])),
            4 => word(0),
            _ => 0,
        };
        let v = match f {
            F::Timestamp | F::FirstTimestamp => {
                Value::Time(time(word(0), u64::from(word(4).wrapping_mul(1000))))
            }
            // Click's B_8: nanoseconds, then seconds.
            F::NTimestamp | F::FirstNTimestamp => Value::Time(time(word(4), u64::from(word(0)))),
            F::TsSec => Value::Time(time(num, 0)),
            F::TsUsec1 => {
                let us = (u64::from(word(4)) << 32 | u64::from(word(0))) as i64;
                match us.checked_mul(1000) {
                    Some(ns) => Value::Time(Timestamp::from_signed_nanos(ns)),
                    None => continue,
                }
            }
            F::IpFrag => Value::Num(match b[0] {
                b'.' => 0,
                b'!' => 0x4000,
                b'F' => 0x2000,
                b'f' => 100,
                c => u32::from(c),
            }),
            F::EthSrc | F::EthDst => Value::Bytes(b.to_vec()),
            // Written only: the digest says nothing to build.
            F::PayloadMd5 | F::PayloadMd5Hex => continue,
            _ => Value::Num(num),
        };
        r.values.push((f, v));
    }
    // A binary `ip_opt`, even empty, makes Click's reader widen the IP
    // header to at least 20 bytes after `ip_hl` applied (a text `.` does
    // not): a header whose `ip_hl` was written as 0 comes back whole.
    if r.get(F::IpOpt).is_some() {
        for (f, v) in &mut r.values {
            if let (F::IpHl, Value::Num(n)) = (*f, &mut *v) {
                *n = (*n).max(20);
            }
        }
    }
    r
}

/// Why a record could not be read.
#[derive(Debug)]
pub enum FrameError {
    /// The length word says less than the word itself: nothing after it
    /// can be found (Click stops there too).
    TooShort(u32),
    /// The record is longer than [`MAX_RECORD`]; it was skipped.
    TooLong(u32),
    /// The file ends inside the record.
    Truncated,
    /// Reading failed.
    Io(io::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooShort(n) => write!(f, "binary record too short (length {n})"),
            FrameError::TooLong(n) => write!(
                f,
                "binary record too long (length {n}, at most {MAX_RECORD}), skipped"
            ),
            FrameError::Truncated => write!(f, "binary record cut short by the end of the file"),
            FrameError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Reads into `buf` until it is full or the input ends; the bytes read.
fn fill<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Reads the next record into `buf` (its bytes after the length word);
/// returns whether it is a text record, or `None` at the end of the input.
/// `pos` counts the bytes consumed. After [`FrameError::TooLong`] the
/// input is at the next record; after the other errors it cannot go on.
pub fn read_frame<R: BufRead>(
    r: &mut R,
    buf: &mut Vec<u8>,
    pos: &mut u64,
) -> Result<Option<bool>, FrameError> {
    let mut word = [0u8; 4];
    let n = fill(r, &mut word).map_err(FrameError::Io)?;
    *pos += n as u64;
    match n {
        0 => return Ok(None),
        4 => {}
        _ => return Err(FrameError::Truncated),
    }
    let word = u32::from_be_bytes(word);
    let text = word & TEXT_RECORD != 0;
    let len = word & !TEXT_RECORD;
    // Click's writer counts the length word in a binary record's length
    // but not in a text record's (its reader takes both to count it, and
    // loses its place after a `!bad` record; bricks reads what was
    // written).
    let body = if text {
        len as usize
    } else if len < 4 {
        return Err(FrameError::TooShort(len));
    } else {
        len as usize - 4
    };
    if body + 4 > MAX_RECORD {
        // Bounded: each pass consumes input or ends it.
        let mut left = body as u64;
        while left > 0 {
            let chunk = r.fill_buf().map_err(FrameError::Io)?;
            if chunk.is_empty() {
                return Err(FrameError::Truncated);
            }
            let k = chunk.len().min(left.min(usize::MAX as u64) as usize);
            r.consume(k);
            left -= k as u64;
            *pos += k as u64;
        }
        return Err(FrameError::TooLong(len));
    }
    buf.clear();
    buf.resize(body, 0);
    let got = fill(r, buf).map_err(FrameError::Io)?;
    *pos += got as u64;
    if got < body {
        return Err(FrameError::Truncated);
    }
    if text {
        // Click drops the NULs that may pad a text record.
        while buf.last() == Some(&0) {
            buf.pop();
        }
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::info::{self, parse_fields, BuildOptions, Value};
    use std::io::Cursor;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// An Ethernet frame with its IP header marked at 14, stamped
    /// `secs`.`usec` and painted 3.
    fn frame(bytes: &str, secs: u64, usec: u32) -> Packet {
        let mut p = Packet::new();
        p.set_frame(&hex(bytes)).unwrap();
        p.set_network_header(14);
        p.anno_mut().timestamp = Timestamp::from_parts(secs, usec * 1000);
        p.anno_mut().paint = 3;
        p
    }

    /// A TCP SYN with MSS, SACK-permitted, timestamp, NOP and window
    /// scale options.
    fn syn() -> Packet {
        frame(
            "00112233445566778899aabb08004500003c1234000040069cdd0a000001c0a80102\
             04d20050000003e800000000a002200000000000020405b40402080a0000000100\
             00000001030307",
            1_700_000_000,
            123_456,
        )
    }

    /// A UDP datagram with a record-route option, NOP and EOL, don't
    /// fragment.
    fn udp_rr() -> Packet {
        frame(
            "00112233445566778899aabb08004900002f12344000401143cf0a000001c0a80102\
             070b0801020304000000000100000000003514e9000b0000010203",
            1_700_000_003,
            123_459,
        )
    }

    /// An ICMP echo request, identifier 0x1234, sequence 7.
    fn echo() -> Packet {
        frame(
            "00112233445566778899aabb0800450000241234000040019cfa0a000001c0a80102\
             08000000123400076162636465666768",
            1_700_000_005,
            123_461,
        )
    }

    const ALL: &str = "timestamp ntimestamp ts_sec ts_usec ts_usec1 count link paint \
        direction aggregate wire_len eth_src eth_dst eth_type ip_src ip_dst ip_tos ip_dscp \
        ip_ecn ip_ttl ip_frag ip_fragoff ip_id ip_sum ip_proto ip_hl ip_len ip_capture_len \
        ip_opt sport dport tcp_seq tcp_ack tcp_off tcp_flags tcp_window tcp_urp tcp_opt \
        tcp_ntopt tcp_sack udp_len icmp_type icmp_code icmp_type_name icmp_code_name \
        icmp_flowid icmp_seq icmp_nextmtu payload_len payload_md5 payload_md5_hex";

    fn record(fields: &str, p: &Packet) -> Vec<u8> {
        let f = parse_fields(fields).unwrap();
        let mut out = Vec::new();
        write_record(&f, p, true, true, &mut out);
        out
    }

    /// The golden records were written by real Click (kohler/click master,
    /// userlevel, configured with --enable-analysis) from a pcap of these
    /// frames:
    /// `click -e "FromDump(in.pcap, STOP true) -> MarkIPHeader(14) -> Paint(3)
    ///  -> ToIPSummaryDump(C.bin, BINARY true, BAD_PACKETS true, FIELDS <ALL>);"`
    #[test]
    fn records_are_clicks_bytes() {
        let header =
            super::super::to_ipsumdump::header_for(&parse_fields(ALL).unwrap(), None, false, true);
        let want = format!("!IPSummaryDump 1.3\n!data {}\n!binary\n", {
            let w: Vec<&str> = ALL.split_whitespace().collect();
            w.join(" ")
        });
        assert_eq!(header, want);
        assert_eq!(
            record(ALL, &syn()),
            hex(
                "000000da6553f1000001e240075bca006553f1006553f1000001e2401820224000060a24\
                 00000001030303000000000000004a66778899aabb00112233445508000a000001c0a8\
                 0102000000402e000012349cdd06140000003c0000003c0004d20050000003e8000000\
                 0028022000000014020405b40402080a00000001000000000103030714020405b40402\
                 080a00000001000000000103030709020405b40402030307020402000000000000000000\
                 000000000000000000d41d8cd98f00b204e9800998ecf8427ed41d8cd98f00b204e98009\
                 98ecf8427e"
            )
        );
        assert_eq!(
            record(ALL, &udp_rr()),
            hex(
                "000000c46553f1030001e243075bd5b86553f1036553f1030001e243184de90300060a24\
                 00000001030303000000000000003d66778899aabb00112233445508000a000001c0a8\
                 010200000040214000123443cf11240000002f0000002f10070b080102030400000000\
                 01000000000d070b0801020304000000000100003514e90000000000000000000000000\
                 0000000000000000b00000000000000000000000000035289df737df57326fcdd22597a\
                 fb1fac5289df737df57326fcdd22597afb1fac"
            )
        );
        assert_eq!(
            record(ALL, &echo()),
            hex(
                "000000a66553f1050001e245075bdd886553f1056553f1050001e245186c6d8500060a24\
                 00000001030303000000000000003266778899aabb00112233445508000a000001c0a8\
                 0102000000402e000012349cfa011400000024000000240000000000000000000000000\
                 00000000000000000000000000008000800123400070000000000104c6ceed35b72e47c\
                 6fde8c57d2aa79f44c6ceed35b72e47c6fde8c57d2aa79f4"
            )
        );
        // Click's `!bad` record: the length is the text's alone.
        let mut out = Vec::new();
        write_text_record("!bad IP version 6\n", &mut out);
        assert_eq!(out[..4], [0x80, 0, 0, 0x12]);
        assert_eq!(&out[4..], b"!bad IP version 6\n");
    }

    #[test]
    fn clicks_odd_encodings_are_kept() {
        let p = syn();
        // ntimestamp: nanoseconds, then seconds.
        assert_eq!(record("ntimestamp", &p)[4..], hex("075bca00 6553f100")[..]);
        // ts_usec1: 1700000000123456 = 0x00060a24_1820 2240, low word first.
        let us: u64 = 1_700_000_000_123_456;
        let mut want = (us as u32).to_be_bytes().to_vec();
        want.extend_from_slice(&((us >> 32) as u32).to_be_bytes());
        assert_eq!(record("ts_usec1", &p)[4..], want[..]);
        // A field the packet lacks is zeros: no Ethernet header, no ports.
        let mut bare = echo();
        let ip = bare.data()[14..].to_vec();
        bare.set_frame(&ip).unwrap();
        bare.set_network_header(0);
        assert_eq!(
            record("eth_src sport", &bare),
            hex("0000000c 000000000000 0000")
        );
        // Before 1970: the seconds count down, the microseconds up.
        let mut early = echo();
        early.anno_mut().timestamp = Timestamp::from_signed_nanos(-1_500_000_000);
        assert_eq!(
            record("timestamp ts_sec ts_usec", &early)[4..],
            hex("fffffffe 0007a120 fffffffe 0007a120")[..]
        );
        let f = parse_fields("timestamp").unwrap();
        let r = read_record(&f, &hex("fffffffe 0007a120"));
        assert_eq!(
            r.time(Field::Timestamp),
            Some(Timestamp::from_signed_nanos(-1_500_000_000))
        );
        // The NS flag does not fit tcp_flags' byte.
        let mut ns = syn();
        let f = ns.data().to_vec();
        let mut g = f.clone();
        g[14 + 20 + 12] |= 1;
        ns.set_frame(&g).unwrap();
        assert_eq!(record("tcp_flags", &ns)[4..], [0x02]);
        assert!(check_writable(Field::Payload).is_err());
        assert!(check_writable(Field::PayloadMd5).is_ok());
    }

    /// `fields` of `p` as text, read back, written in binary, read back:
    /// the same text.
    fn round_trip(fields: &str, p: &Packet) {
        let f = parse_fields(fields).unwrap();
        let o = BuildOptions::default();
        let text = info::line(&f, p);
        let (p1, _) = info::build(&info::parse_line(&f, &text).unwrap(), &o);
        let l1 = info::line(&f, &p1);
        let mut bin = Vec::new();
        write_record(&f, &p1, true, true, &mut bin);
        let len = u32::from_be_bytes(bin[..4].try_into().unwrap()) as usize;
        assert_eq!(len, bin.len(), "{fields}");
        let r = read_record(&f, &bin[4..]);
        let (p2, _) = info::build(&r, &o);
        assert_eq!(info::line(&f, &p2), l1, "{fields}: {text}");
    }

    #[test]
    fn every_field_round_trips_text_binary_text() {
        let common = "timestamp ntimestamp ts_sec ts_usec ts_usec1 count link paint \
            direction aggregate wire_len eth_src eth_dst eth_type ip_src ip_dst ip_tos \
            ip_dscp ip_ecn ip_ttl ip_frag ip_fragoff ip_id ip_sum ip_proto ip_hl ip_len \
            ip_capture_len ip_opt payload_len";
        let cases = [
            (
                syn(),
                "sport dport tcp_seq tcp_ack tcp_off tcp_flags tcp_window tcp_urp tcp_opt \
                 tcp_ntopt tcp_sack",
            ),
            (udp_rr(), "sport dport udp_len"),
            (
                echo(),
                "icmp_type icmp_code icmp_type_name icmp_code_name icmp_flowid icmp_seq",
            ),
            (
                frame(
                    "00112233445566778899aabb08004500003812340000400100000a000001c0a80102\
                     03040000000005dc 4500001c00000000400600000102030405060708 0800000000000000",
                    5,
                    6,
                ),
                "icmp_type icmp_code icmp_nextmtu",
            ),
        ];
        for (p, own) in &cases {
            let all = format!("{common} {own}");
            round_trip(&all, p);
            for f in all.split_whitespace() {
                round_trip(f, p);
            }
            // Option fields before others: the second copy is skipped.
            round_trip(&format!("ip_opt {own} tcp_seq"), p);
        }
        // tcp_opt ahead of fields read after it.
        round_trip("tcp_opt tcp_seq ip_src", &cases[0].0);
        round_trip("tcp_sack tcp_ntopt tcp_opt ip_opt sport", &cases[0].0);
    }

    #[test]
    fn short_and_hostile_records_never_panic() {
        let f = parse_fields("ip_src sport ip_opt tcp_seq").unwrap();
        // Cut inside sport: ip_src only.
        let r = read_record(&f, &hex("0a000001 00"));
        assert_eq!(r.values, vec![(Field::IpSrc, Value::Num(0x0a00_0001))]);
        // An option length past the end: nothing from there on.
        let r = read_record(&f, &hex("0a000001 0050 09 0102"));
        assert_eq!(r.values.len(), 2);
        // An option area over 40 bytes is absent, and skipped.
        let mut b = hex("0a000001 0050 2c");
        b.extend_from_slice(&[1; 44]);
        b.extend_from_slice(&hex("00000007 ffff"));
        let r = read_record(&f, &b);
        assert_eq!(r.get(Field::IpOpt), None);
        assert_eq!(r.num(Field::TcpSeq), Some(7));
        // A single copy (not Click's two) reads too.
        let r = read_record(&f, &hex("0a000001 0050 04 01010100 00000009"));
        assert_eq!(r.get(Field::IpOpt), Some(&Value::Bytes(vec![1, 1, 1, 0])));
        assert_eq!(r.num(Field::TcpSeq), Some(9));
        // Empty: no field.
        assert!(read_record(&f, &[]).values.is_empty());
        // payload has no binary form: the record ends there.
        let g = parse_fields("sport payload dport").unwrap();
        let r = read_record(&g, &hex("0001 0002 0003"));
        assert_eq!(r.values, vec![(Field::Sport, Value::Num(1))]);
        // A huge ts_usec1 is absent, not an overflow.
        let g = parse_fields("ts_usec1 ip_ttl").unwrap();
        let r = read_record(&g, &hex("ffffffff 7fffffff 05"));
        assert_eq!(r.values, vec![(Field::IpTtl, Value::Num(5))]);
        // Every prefix of a real record reads without a panic.
        let f = parse_fields(ALL).unwrap();
        let rec = record(ALL, &syn());
        for n in 0..rec.len() {
            let _ = read_record(&f, &rec[4..4 + n.min(rec.len() - 4)]);
        }
    }

    fn frames(bytes: &[u8]) -> Vec<Result<Option<bool>, String>> {
        let mut r = Cursor::new(bytes.to_vec());
        let mut buf = Vec::new();
        let mut pos = 0;
        let mut out = Vec::new();
        // Bounded: a frame per pass, at most one per 4 bytes.
        for _ in 0..=bytes.len() / 4 + 1 {
            let f = read_frame(&mut r, &mut buf, &mut pos);
            let end = !matches!(f, Ok(Some(_)) | Err(FrameError::TooLong(_)));
            out.push(f.map_err(|e| e.to_string()));
            if end {
                break;
            }
        }
        assert!(pos <= bytes.len() as u64);
        out
    }

    #[test]
    fn frames_of_hostile_lengths_end_or_skip_cleanly() {
        // A record, an empty one, a text one padded with NULs, the end.
        let mut b = hex("00000006 0102 00000004");
        b.extend_from_slice(&hex("80000006"));
        b.extend_from_slice(b"!x\n\0\0\0");
        let f = frames(&b);
        assert_eq!(
            f,
            vec![Ok(Some(false)), Ok(Some(false)), Ok(Some(true)), Ok(None)]
        );
        let mut r = Cursor::new(b.clone());
        let (mut buf, mut pos) = (Vec::new(), 0);
        assert_eq!(read_frame(&mut r, &mut buf, &mut pos).unwrap(), Some(false));
        assert_eq!(buf, [1, 2]);
        let _ = read_frame(&mut r, &mut buf, &mut pos);
        assert!(buf.is_empty());
        let _ = read_frame(&mut r, &mut buf, &mut pos);
        assert_eq!(buf, b"!x\n");
        assert_eq!(pos, b.len() as u64);
        // Lengths 0 to 3 leave nothing to find the next record by.
        for n in 0..4u8 {
            let f = frames(&[0, 0, 0, n, 1, 2, 3, 4]);
            assert!(f[0].as_ref().unwrap_err().contains("too short"), "{f:?}");
            assert_eq!(f.len(), 1);
        }
        // Longer than the file: cut short, for huge lengths too (nothing
        // of that size is allocated).
        for w in ["00000010", "7fffffff", "ffffffff", "00010001"] {
            let mut b = hex(w);
            b.extend_from_slice(&[7; 9]);
            let f = frames(&b);
            assert!(
                f[0].as_ref().unwrap_err().contains("cut short"),
                "{w}: {f:?}"
            );
        }
        // A part of a length word.
        assert!(frames(&[0, 0])[0]
            .as_ref()
            .unwrap_err()
            .contains("cut short"));
        // Over MAX_RECORD, whole: skipped, and the next record reads.
        let mut b = ((MAX_RECORD + 1) as u32).to_be_bytes().to_vec();
        b.resize(MAX_RECORD + 1, 0xee);
        b.extend_from_slice(&hex("00000005 09"));
        let f = frames(&b);
        assert!(f[0].as_ref().unwrap_err().contains("too long"));
        assert_eq!(f[1..], [Ok(Some(false)), Ok(None)]);
    }

    /// Click's binary `first_ntimestamp`, as its `ntimestamp`, is
    /// nanoseconds then seconds: the record `click -e
    /// 'FromIPSummaryDump(F, STOP true) -> ToIPSummaryDump(fn.bin, BINARY
    /// true, FIELDS ntimestamp first_ntimestamp count ip_src)'` wrote for
    /// the line `1000.000000300 999.000000100 3 1.2.3.4`.
    #[test]
    fn first_ntimestamp_is_in_nanoseconds() {
        let f = parse_fields("ntimestamp first_ntimestamp count ip_src").unwrap();
        let r = read_record(
            &f,
            &hex("0000012c 000003e8 00000064 000003e7 00000003 01020304"),
        );
        assert_eq!(
            r.get(Field::FirstNTimestamp),
            Some(&Value::Time(Timestamp::from_parts(999, 100)))
        );
        let (p, x) = info::build(&r, &BuildOptions::default());
        assert_eq!(p.anno().timestamp, Timestamp::from_parts(1000, 300));
        assert_eq!(x.first_timestamp, Some(Timestamp::from_parts(999, 100)));
        assert_eq!(x.count, 3);
    }
}
