//! The IP summary dump format that ToIPSummaryDump writes and
//! FromIPSummaryDump reads: field names, one field's text for a packet, one
//! line's fields parsed back, and the packet a line describes.

use bricks_packet::{Packet, Timestamp};
use bricks_wire::checksum;
use bricks_wire::IpProtocol;
use std::fmt::Write;
use std::net::Ipv4Addr;

/// The first line of every dump.
pub const MAGIC: &str = "!IPSummaryDump 1.3";

/// Longest line read; longer lines are refused.
pub const MAX_LINE: usize = 4096;

/// One field of a summary line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// `timestamp`: seconds.microseconds.
    Timestamp,
    /// `ts_sec`.
    TsSec,
    /// `ts_usec`.
    TsUsec,
    /// `ip_src`.
    IpSrc,
    /// `ip_dst`.
    IpDst,
    /// `sport`.
    Sport,
    /// `dport`.
    Dport,
    /// `ip_proto`: T, U, I or a number.
    IpProto,
    /// `ip_len`.
    IpLen,
    /// `ip_id`.
    IpId,
    /// `ip_ttl`.
    IpTtl,
    /// `ip_tos`.
    IpTos,
    /// `ip_frag`: F (first fragment), f (later fragment), . (not one).
    IpFrag,
    /// `ip_fragoff`: the offset in bytes, `+` when more fragments follow.
    IpFragoff,
    /// `tcp_flags`: letters of FSRPAUEC, `.` for none.
    TcpFlags,
    /// `tcp_seq`.
    TcpSeq,
    /// `tcp_ack`.
    TcpAck,
    /// `tcp_window`.
    TcpWindow,
    /// `payload_len`: IP length less the IP and transport headers.
    PayloadLen,
    /// `count`: packets this line stands for.
    Count,
}

/// Names a field is known by (Click's names and its aliases), canonical first.
const NAMES: &[(&str, Field)] = &[
    ("timestamp", Field::Timestamp),
    ("ts", Field::Timestamp),
    ("ts_sec", Field::TsSec),
    ("sec", Field::TsSec),
    ("ts_usec", Field::TsUsec),
    ("usec", Field::TsUsec),
    ("ip_src", Field::IpSrc),
    ("src", Field::IpSrc),
    ("ip_dst", Field::IpDst),
    ("dst", Field::IpDst),
    ("sport", Field::Sport),
    ("dport", Field::Dport),
    ("ip_proto", Field::IpProto),
    ("proto", Field::IpProto),
    ("ip_len", Field::IpLen),
    ("len", Field::IpLen),
    ("length", Field::IpLen),
    ("ip_id", Field::IpId),
    ("id", Field::IpId),
    ("ip_ttl", Field::IpTtl),
    ("ttl", Field::IpTtl),
    ("ip_tos", Field::IpTos),
    ("tos", Field::IpTos),
    ("ip_frag", Field::IpFrag),
    ("frag", Field::IpFrag),
    ("ip_fragoff", Field::IpFragoff),
    ("fragoff", Field::IpFragoff),
    ("tcp_flags", Field::TcpFlags),
    ("tcp_flag", Field::TcpFlags),
    ("flags", Field::TcpFlags),
    ("tcp_seq", Field::TcpSeq),
    ("seq", Field::TcpSeq),
    ("tcp_ack", Field::TcpAck),
    ("ack", Field::TcpAck),
    ("tcp_window", Field::TcpWindow),
    ("tcp_win", Field::TcpWindow),
    ("payload_len", Field::PayloadLen),
    ("payload_length", Field::PayloadLen),
    ("count", Field::Count),
    ("pkt_count", Field::Count),
    ("packet_count", Field::Count),
];

impl Field {
    /// The field called `name` (`ip src`, `ip_src`, `IP_SRC` alike).
    pub fn from_name(name: &str) -> Option<Field> {
        let n = name.trim().to_ascii_lowercase().replace([' ', '-'], "_");
        NAMES.iter().find(|(k, _)| *k == n).map(|&(_, f)| f)
    }

    /// The name written in a `!data` line.
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|&&(_, f)| f == self)
            .map_or("?", |&(k, _)| k)
    }
}

/// Reads a list of fields: words separated by spaces, where two words may
/// name one field (`ip src`), and a double-quoted word is one name (`"ip
/// src"`, as Click's `cp_spacevec` reads it). Errors name the word not
/// understood.
pub fn parse_fields(text: &str) -> Result<Vec<Field>, String> {
    let mut words: Vec<(&str, bool)> = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"').ok_or("unterminated quote in field names")?;
            words.push((&q[..end], true));
            rest = q[end + 1..].trim_start();
        } else {
            let end = rest
                .find(|c: char| c.is_ascii_whitespace() || c == '"')
                .unwrap_or(rest.len());
            words.push((&rest[..end], false));
            rest = rest[end..].trim_start();
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let (w, quoted) = words[i];
        if !quoted && i + 1 < words.len() && !words[i + 1].1 {
            if let Some(f) = Field::from_name(&format!("{w}_{}", words[i + 1].0)) {
                out.push(f);
                i += 2;
                continue;
            }
        }
        match Field::from_name(w) {
            Some(f) => out.push(f),
            None => return Err(format!("unknown field `{}`", w.escape_default())),
        }
        i += 1;
    }
    Ok(out)
}

/// What a packet's headers say, as far as they are present.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// The timestamp annotation.
    pub ts: Timestamp,
    /// IPv4 header fields, if the packet has one.
    pub ip: Option<IpSummary>,
    /// Ports, if the packet is a first (or no) fragment of TCP or UDP.
    pub ports: Option<(u16, u16)>,
    /// TCP flags, sequence, acknowledgement, window.
    pub tcp: Option<(u8, u32, u32, u16)>,
    /// Transport header length counted out of the payload.
    pub transport_len: u16,
}

/// The IPv4 header fields a summary shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpSummary {
    /// Source.
    pub src: Ipv4Addr,
    /// Destination.
    pub dst: Ipv4Addr,
    /// Protocol.
    pub proto: u8,
    /// Total length.
    pub len: u16,
    /// Identification.
    pub id: u16,
    /// Time to live.
    pub ttl: u8,
    /// Type of service.
    pub tos: u8,
    /// Flags and fragment offset word.
    pub frag: u16,
    /// Header length in bytes.
    pub hlen: u16,
}

/// Summarizes `p`: its IP header is at the network header annotation, or at
/// the start of the packet when it has none.
pub fn summarize(p: &Packet) -> Summary {
    let mut s = Summary {
        ts: p.anno().timestamp,
        ..Summary::default()
    };
    let h = p.network_header().unwrap_or(p.data());
    if h.len() < 20 || h[0] >> 4 != 4 {
        return s;
    }
    let hlen = usize::from(h[0] & 15) * 4;
    if hlen < 20 || h.len() < hlen {
        return s;
    }
    let ip = IpSummary {
        src: Ipv4Addr::new(h[12], h[13], h[14], h[15]),
        dst: Ipv4Addr::new(h[16], h[17], h[18], h[19]),
        proto: h[9],
        len: u16::from_be_bytes([h[2], h[3]]),
        id: u16::from_be_bytes([h[4], h[5]]),
        ttl: h[8],
        tos: h[1],
        frag: u16::from_be_bytes([h[6], h[7]]),
        hlen: hlen as u16,
    };
    s.ip = Some(ip);
    if ip.frag & 0x1fff != 0 {
        return s;
    }
    let t = &h[hlen..];
    match ip.proto {
        6 if t.len() >= 20 => {
            s.ports = Some((
                u16::from_be_bytes([t[0], t[1]]),
                u16::from_be_bytes([t[2], t[3]]),
            ));
            s.tcp = Some((
                t[13],
                u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
                u32::from_be_bytes([t[8], t[9], t[10], t[11]]),
                u16::from_be_bytes([t[14], t[15]]),
            ));
            s.transport_len = u16::from(t[12] >> 4) * 4;
        }
        17 if t.len() >= 8 => {
            s.ports = Some((
                u16::from_be_bytes([t[0], t[1]]),
                u16::from_be_bytes([t[2], t[3]]),
            ));
            s.transport_len = 8;
        }
        1 if t.len() >= 8 => s.transport_len = 8,
        _ => {}
    }
    s
}

/// Letters of the TCP flags, low bit first; `.` for none.
pub fn tcp_flags_text(flags: u8, out: &mut String) {
    const LETTERS: &[u8; 8] = b"FSRPAUEC";
    if flags == 0 {
        out.push('.');
    }
    for (i, &c) in LETTERS.iter().enumerate() {
        if flags & (1 << i) != 0 {
            out.push(char::from(c));
        }
    }
}

/// Appends the text of field `f` of `s` to `out`; `-` when absent.
pub fn unparse(f: Field, s: &Summary, out: &mut String) {
    let ip = s.ip.as_ref();
    let first = ip.is_some_and(|ip| ip.frag & 0x1fff == 0);
    let r = match f {
        Field::Timestamp => write!(out, "{}.{:06}", s.ts.secs(), s.ts.subsec_nanos() / 1000),
        Field::TsSec => write!(out, "{}", s.ts.secs()),
        Field::TsUsec => write!(out, "{}", s.ts.subsec_nanos() / 1000),
        Field::IpSrc => opt(out, ip.map(|i| i.src)),
        Field::IpDst => opt(out, ip.map(|i| i.dst)),
        Field::Sport => opt(out, s.ports.map(|p| p.0)),
        Field::Dport => opt(out, s.ports.map(|p| p.1)),
        Field::IpProto => match ip.map(|i| i.proto) {
            Some(6) => write!(out, "T"),
            Some(17) => write!(out, "U"),
            Some(1) => write!(out, "I"),
            other => opt(out, other),
        },
        Field::IpLen => opt(out, ip.map(|i| i.len)),
        Field::IpId => opt(out, ip.map(|i| i.id)),
        Field::IpTtl => opt(out, ip.map(|i| i.ttl)),
        Field::IpTos => opt(out, ip.map(|i| i.tos)),
        Field::IpFrag => match ip {
            None => write!(out, "-"),
            Some(i) if i.frag & 0x1fff != 0 => write!(out, "f"),
            Some(i) if i.frag & 0x2000 != 0 => write!(out, "F"),
            Some(i) if i.frag & 0x4000 != 0 => write!(out, "!"),
            Some(_) => write!(out, "."),
        },
        Field::IpFragoff => match ip {
            None => write!(out, "-"),
            Some(i) => {
                let plus = if i.frag & 0x2000 != 0 { "+" } else { "" };
                let bang = if i.frag & 0x4000 != 0 { "!" } else { "" };
                write!(out, "{}{plus}{bang}", (i.frag & 0x1fff) * 8)
            }
        },
        Field::TcpFlags => {
            match s.tcp {
                Some(t) => tcp_flags_text(t.0, out),
                None => out.push('-'),
            }
            Ok(())
        }
        Field::TcpSeq => opt(out, s.tcp.map(|t| t.1)),
        Field::TcpAck => opt(out, s.tcp.map(|t| t.2)),
        Field::TcpWindow => opt(out, s.tcp.map(|t| t.3)),
        Field::PayloadLen => {
            let t = if first { s.transport_len } else { 0 };
            opt(
                out,
                ip.map(|i| i.len.saturating_sub(i.hlen).saturating_sub(t)),
            )
        }
        Field::Count => write!(out, "1"),
    };
    let _ = r;
}

fn opt(out: &mut String, v: Option<impl std::fmt::Display>) -> std::fmt::Result {
    match v {
        Some(v) => write!(out, "{v}"),
        None => write!(out, "-"),
    }
}

/// One summary line as `fields` says: each field's text, space separated.
pub fn line(fields: &[Field], p: &Packet) -> String {
    let s = summarize(p);
    let mut out = String::new();
    for (i, &f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        unparse(f, &s, &mut out);
    }
    out
}

/// The values a line gives; `None` for a field absent or `-`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Timestamp.
    pub ts: Option<Timestamp>,
    /// Seconds alone (`ts_sec`).
    pub ts_sec: Option<u64>,
    /// Microseconds alone (`ts_usec`).
    pub ts_usec: Option<u32>,
    /// Source address.
    pub src: Option<Ipv4Addr>,
    /// Destination address.
    pub dst: Option<Ipv4Addr>,
    /// Source port.
    pub sport: Option<u16>,
    /// Destination port.
    pub dport: Option<u16>,
    /// Protocol.
    pub proto: Option<u8>,
    /// IP length.
    pub len: Option<u16>,
    /// IP ID.
    pub id: Option<u16>,
    /// TTL.
    pub ttl: Option<u8>,
    /// TOS.
    pub tos: Option<u8>,
    /// Fragment word (flags and offset), from `ip_frag` or `ip_fragoff`.
    pub frag: Option<u16>,
    /// TCP flags.
    pub tcp_flags: Option<u8>,
    /// TCP sequence number.
    pub seq: Option<u32>,
    /// TCP acknowledgement number.
    pub ack: Option<u32>,
    /// TCP window.
    pub win: Option<u16>,
    /// Payload length.
    pub payload_len: Option<u16>,
    /// Packets the line stands for.
    pub count: Option<u32>,
}

fn num<T: std::str::FromStr>(w: &str, what: &str) -> Result<T, String> {
    w.parse()
        .map_err(|_| format!("bad {what} `{}`", w.escape_default()))
}

fn parse_ts(w: &str) -> Result<Timestamp, String> {
    let (s, frac) = w.split_once('.').unwrap_or((w, ""));
    let secs: u64 = num(s, "timestamp")?;
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("bad timestamp `{}`", w.escape_default()));
    }
    let mut nanos: u32 = if frac.is_empty() {
        0
    } else {
        num(frac, "timestamp")?
    };
    for _ in frac.len()..9 {
        nanos *= 10;
    }
    if secs > u64::MAX / 1_000_000_000 - 1 {
        return Err(format!("timestamp `{w}` out of range"));
    }
    Ok(Timestamp::from_parts(secs, nanos))
}

/// The flags-and-offset word of `ip_frag` (`.`, `!`, `F`, `f`) or
/// `ip_fragoff` (the offset in bytes, then `+` for more fragments and `!`
/// for don't fragment, in either order), as Click reads them.
fn parse_frag(w: &str) -> Result<u16, String> {
    match w {
        "." => return Ok(0),
        "!" => return Ok(0x4000),
        "F" => return Ok(0x2000),
        "f" => return Ok(100),
        _ => {}
    }
    let digits = w.bytes().take_while(u8::is_ascii_digit).count();
    let bad = || format!("bad ip_fragoff `{}`", w.escape_default());
    let off: u32 = w[..digits].parse().map_err(|_| bad())?;
    if off / 8 > 0x1fff {
        return Err(bad());
    }
    let mut v = (off / 8) as u16;
    for c in w[digits..].bytes() {
        match c {
            b'+' => v |= 0x2000,
            b'!' => v |= 0x4000,
            _ => return Err(bad()),
        }
    }
    Ok(v)
}

fn parse_flags(w: &str) -> Result<u8, String> {
    if w == "." {
        return Ok(0);
    }
    if let Ok(v) = w.parse::<u8>() {
        return Ok(v);
    }
    let mut f = 0u8;
    for c in w.bytes() {
        let bit = match c.to_ascii_uppercase() {
            b'F' => 0,
            b'S' => 1,
            b'R' => 2,
            b'P' => 3,
            b'A' => 4,
            b'U' => 5,
            b'E' => 6,
            b'C' | b'W' | b'X' => 7,
            // The NS bit (RFC 3540) is not kept.
            b'N' => continue,
            _ => return Err(format!("bad TCP flags `{}`", w.escape_default())),
        };
        f |= 1 << bit;
    }
    Ok(f)
}

/// Parses one data line with `fields`. Errors say which field is bad.
pub fn parse_line(fields: &[Field], text: &str) -> Result<Record, String> {
    let mut r = Record::default();
    let mut words = text.split_ascii_whitespace();
    for &f in fields {
        let Some(w) = words.next() else {
            return Err(format!("missing field `{}`", f.name()));
        };
        if w == "-" {
            continue;
        }
        match f {
            Field::Timestamp => r.ts = Some(parse_ts(w)?),
            Field::TsSec => r.ts_sec = Some(num(w, "ts_sec")?),
            Field::TsUsec => r.ts_usec = Some(num::<u32>(w, "ts_usec")?.min(999_999)),
            Field::IpSrc => r.src = Some(num(w, "ip_src")?),
            Field::IpDst => r.dst = Some(num(w, "ip_dst")?),
            Field::Sport => r.sport = Some(num(w, "sport")?),
            Field::Dport => r.dport = Some(num(w, "dport")?),
            Field::IpProto => {
                r.proto = Some(match w {
                    "T" | "t" | "tcp" | "TCP" => 6,
                    "U" | "u" | "udp" | "UDP" => 17,
                    "I" | "i" | "icmp" | "ICMP" => 1,
                    _ => num(w, "ip_proto")?,
                })
            }
            Field::IpLen => r.len = Some(num(w, "ip_len")?),
            Field::IpId => r.id = Some(num(w, "ip_id")?),
            Field::IpTtl => r.ttl = Some(num(w, "ip_ttl")?),
            Field::IpTos => r.tos = Some(num(w, "ip_tos")?),
            Field::IpFrag | Field::IpFragoff => {
                let v = parse_frag(w)?;
                // ip_fragoff says more than ip_frag: it wins whatever the order.
                if f == Field::IpFragoff || r.frag.is_none() {
                    r.frag = Some(v);
                }
            }
            Field::TcpFlags => r.tcp_flags = Some(parse_flags(w)?),
            Field::TcpSeq => r.seq = Some(num(w, "tcp_seq")?),
            Field::TcpAck => r.ack = Some(num(w, "tcp_ack")?),
            Field::TcpWindow => r.win = Some(num(w, "tcp_window")?),
            Field::PayloadLen => r.payload_len = Some(num(w, "payload_len")?),
            Field::Count => r.count = Some(num(w, "count")?),
        }
    }
    Ok(r)
}

/// Largest packet built: payload beyond it is cut (the IP length still says
/// the whole).
pub const MAX_BUILT: usize = 1500;

/// Builds the IPv4 packet `r` describes. `default_proto` is used when the
/// line names none; transport checksums are set when `checksum`.
pub fn build(r: &Record, default_proto: u8, checksum: bool) -> Packet {
    let proto = r.proto.unwrap_or(default_proto);
    let frag = r.frag.unwrap_or(0);
    let first = frag & 0x1fff == 0;
    let thlen: usize = match proto {
        6 if first => 20,
        17 | 1 if first => 8,
        _ => 0,
    };
    let payload = usize::from(r.payload_len.unwrap_or(0));
    let ip_len = r
        .len
        .unwrap_or_else(|| (20 + thlen + payload).min(usize::from(u16::MAX)) as u16);
    let data_len = (20 + thlen + payload)
        .max(20 + thlen)
        .min(MAX_BUILT)
        .min(usize::from(ip_len).max(20 + thlen));
    let mut b = vec![0u8; data_len];
    let src = r.src.unwrap_or(Ipv4Addr::UNSPECIFIED);
    let dst = r.dst.unwrap_or(Ipv4Addr::UNSPECIFIED);
    b[0] = 0x45;
    b[1] = r.tos.unwrap_or(0);
    b[2..4].copy_from_slice(&ip_len.to_be_bytes());
    b[4..6].copy_from_slice(&r.id.unwrap_or(0).to_be_bytes());
    b[6..8].copy_from_slice(&frag.to_be_bytes());
    b[8] = r.ttl.unwrap_or(100);
    b[9] = proto;
    b[12..16].copy_from_slice(&src.octets());
    b[16..20].copy_from_slice(&dst.octets());
    let c = !checksum::data(&b[..20]);
    b[10..12].copy_from_slice(&c.to_be_bytes());
    let t = &mut b[20..];
    match thlen {
        20 => {
            t[0..2].copy_from_slice(&r.sport.unwrap_or(0).to_be_bytes());
            t[2..4].copy_from_slice(&r.dport.unwrap_or(0).to_be_bytes());
            t[4..8].copy_from_slice(&r.seq.unwrap_or(0).to_be_bytes());
            t[8..12].copy_from_slice(&r.ack.unwrap_or(0).to_be_bytes());
            t[12] = 5 << 4;
            t[13] = r.tcp_flags.unwrap_or(0x10);
            t[14..16].copy_from_slice(&r.win.unwrap_or(0).to_be_bytes());
        }
        8 if proto == 17 => {
            t[0..2].copy_from_slice(&r.sport.unwrap_or(0).to_be_bytes());
            t[2..4].copy_from_slice(&r.dport.unwrap_or(0).to_be_bytes());
            let ulen = ip_len.saturating_sub(20);
            t[4..6].copy_from_slice(&ulen.to_be_bytes());
        }
        _ => {}
    }
    // A transport checksum covers the whole segment: only when it is here.
    if checksum && thlen > 0 && usize::from(ip_len) == data_len {
        let seg_len = (data_len - 20) as u16;
        let seg = &mut b[20..];
        let off = match proto {
            6 => 16,
            17 => 6,
            _ => 2,
        };
        let sum = if proto == 1 {
            checksum::data(seg)
        } else {
            checksum::combine(&[
                checksum::pseudo_header_v4(src, dst, IpProtocol(proto), seg_len),
                checksum::data(seg),
            ])
        };
        let mut c = !sum;
        if proto == 17 && c == 0 {
            c = 0xffff;
        }
        seg[off..off + 2].copy_from_slice(&c.to_be_bytes());
    }
    let mut p = Packet::from_slice(&b).unwrap_or_else(|_| Packet::new());
    p.set_network_header(0);
    let ts = match (r.ts, r.ts_sec) {
        (Some(ts), _) => ts,
        (None, Some(s)) => Timestamp::from_parts(
            s.min(u64::MAX / 1_000_000_000 - 1),
            r.ts_usec.unwrap_or(0) * 1000,
        ),
        (None, None) => Timestamp::default(),
    };
    p.anno_mut().timestamp = ts;
    p
}

/// Quotes `s` as Click's `cp_quote` would for a `!creator` line.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP SYN from 10.0.0.1:1234 to 10.0.0.2:80, TTL 64, ID 7.
    const SYN: [u8; 40] = [
        0x45, 0, 0, 40, 0, 7, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // IP
        0x04, 0xd2, 0, 80, 0, 0, 0, 100, 0, 0, 0, 0, 0x50, 0x02, 0x10, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn fields_parse_with_spaces_or_underscores() {
        assert_eq!(
            parse_fields("ip src ip_dst sport tcp flags count").unwrap(),
            vec![
                Field::IpSrc,
                Field::IpDst,
                Field::Sport,
                Field::TcpFlags,
                Field::Count
            ]
        );
        assert_eq!(
            parse_fields("\"ip src\" \"tcp flags\"ip_len").unwrap(),
            vec![Field::IpSrc, Field::TcpFlags, Field::IpLen]
        );
        assert!(parse_fields("ip bogus").is_err());
        assert!(parse_fields("\"ip src").is_err());
        assert!(parse_fields("\"ip\" src").is_err());
    }

    #[test]
    fn tcp_syn_line() {
        let mut p = Packet::from_slice(&SYN).unwrap();
        p.anno_mut().timestamp = Timestamp::from_parts(1, 500_000);
        let f = parse_fields(
            "timestamp ip_src sport ip_dst dport ip_proto ip_len ip_id ip_ttl ip_frag ip_fragoff tcp_flags tcp_seq tcp_window payload_len",
        )
        .unwrap();
        assert_eq!(
            line(&f, &p),
            "1.000500 10.0.0.1 1234 10.0.0.2 80 T 40 7 64 ! 0! S 100 4096 0"
        );
    }

    #[test]
    fn tcp_flags_use_clicks_letters() {
        let mut s = String::new();
        tcp_flags_text(0xc2, &mut s);
        assert_eq!(s, "SEC");
        assert_eq!(parse_flags("SEC"), Ok(0xc2));
        assert_eq!(parse_flags("SW"), Ok(0x82));
        assert_eq!(parse_flags("AN"), Ok(0x10));
        assert_eq!(parse_flags("."), Ok(0));
    }

    #[test]
    fn non_ip_fields_are_dashes() {
        let p = Packet::from_slice(&[1, 2, 3]).unwrap();
        let f = parse_fields("ip src sport tcp flags payload len").unwrap();
        assert_eq!(line(&f, &p), "- - - -");
    }

    #[test]
    fn later_fragment_has_no_ports() {
        let mut b = SYN;
        b[6] = 0x20;
        b[7] = 3;
        let p = Packet::from_slice(&b).unwrap();
        let f = parse_fields("sport ip_frag ip_fragoff payload_len").unwrap();
        assert_eq!(line(&f, &p), "- f 24+ 20");
    }

    #[test]
    fn built_packet_has_valid_checksums() {
        let f = parse_fields("ip_src sport ip_dst dport ip_proto payload_len").unwrap();
        for l in [
            "10.0.0.1 1234 10.0.0.2 80 T 10",
            "1.2.3.4 53 5.6.7.8 999 U 3",
        ] {
            let r = parse_line(&f, l).unwrap();
            let p = build(&r, 6, true);
            assert_eq!(checksum::data(&p.data()[..20]), 0xffff);
            let seg = &p.data()[20..];
            let sum = checksum::combine(&[
                checksum::pseudo_header_v4(
                    r.src.unwrap(),
                    r.dst.unwrap(),
                    IpProtocol(r.proto.unwrap()),
                    seg.len() as u16,
                ),
                checksum::data(seg),
            ]);
            assert_eq!(sum, 0xffff, "{l}");
            assert_eq!(line(&f, &p), l);
        }
    }

    #[test]
    fn round_trip_every_field() {
        let f = parse_fields(
            "timestamp ip_src ip_dst sport dport ip_proto ip_len ip_id ip_ttl ip_tos ip_fragoff tcp_flags tcp_seq tcp_ack tcp_window payload_len count",
        )
        .unwrap();
        for l in [
            "12.345678 1.1.1.1 2.2.2.2 1 2 T 60 9 33 4 0 SA 5 6 7 20 1",
            "0.000001 1.1.1.1 2.2.2.2 - - 47 24 9 33 0 0 - - - - 4 1",
            "3.000000 9.9.9.9 8.8.8.8 - - U 100 1 1 0 800+ - - - - 80 1",
            "3.000000 9.9.9.9 8.8.8.8 1 2 U 100 1 1 0 0+! - - - - 72 1",
        ] {
            let p = build(&parse_line(&f, l).unwrap(), 6, true);
            assert_eq!(line(&f, &p), l);
        }
    }

    #[test]
    fn malformed_lines_are_refused() {
        let f = parse_fields("ip_src sport timestamp tcp_flags ip_fragoff").unwrap();
        for l in [
            "1.2.3 1 1.0 S 0",
            "1.2.3.4 70000 1.0 S 0",
            "1.2.3.4 1 x S 0",
            "1.2.3.4 1 1.0 Q 0",
            "1.2.3.4 1 1.0 S 8-",
            "1.2.3.4 1 1.0 S 65536",
            "1.2.3.4 1",
            "1.2.3.4 1 99999999999999999999.1 S 0",
        ] {
            assert!(parse_line(&f, l).is_err(), "{l}");
        }
    }
}
