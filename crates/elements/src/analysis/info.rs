//! The IP summary dump format that ToIPSummaryDump writes and
//! FromIPSummaryDump reads (Click's `ipsumdumpinfo.cc` and
//! `ipsumdump_*.cc`): field names, one field's text for a packet, one
//! line's words parsed back, and the packet a line describes, built field
//! by field in Click's order.

use super::options::{self, TcpOptSet};
use crate::ip::icmperror;
use bricks_packet::{ClickTime, Packet, Timestamp, MAX_FRAME};
use bricks_wire::checksum;
use bricks_wire::IpProtocol;
use std::fmt::Write;
use std::net::Ipv4Addr;

/// The first line of every dump.
pub const MAGIC: &str = "!IPSummaryDump 1.3";

/// Longest line read; longer lines are refused.
pub const MAX_LINE: usize = 4096;

/// Defines [`Field`] with each field's canonical name and the order in
/// which FromIPSummaryDump applies it (Click's `order_*`: annotations, then
/// the IP header, the transport header, the payload).
macro_rules! fields {
    ($($(#[$doc:meta])* $v:ident = $name:literal, $order:expr;)*) => {
        /// One field of a summary line.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Field {
            $($(#[$doc])* $v,)*
        }

        /// Every field with its canonical name.
        const CANONICAL: &[(&str, Field)] = &[$(($name, Field::$v),)*];

        impl Field {
            /// The name written in a `!data` line.
            pub fn name(self) -> &'static str {
                match self { $(Field::$v => $name,)* }
            }

            /// Where FromIPSummaryDump applies this field among the others.
            fn order(self) -> u16 {
                match self { $(Field::$v => $order,)* }
            }
        }
    };
}

const ANNO: u16 = 100;
const LINK: u16 = 200;
const NET: u16 = 300;
const TRANSP: u16 = 400;
const PAYLOAD: u16 = 500;

fields! {
    /// `timestamp`: seconds.microseconds.
    Timestamp = "timestamp", ANNO;
    /// `ntimestamp`: the same, written as `timestamp` in a header.
    NTimestamp = "ntimestamp", ANNO;
    /// `ts_sec`.
    TsSec = "ts_sec", ANNO;
    /// `ts_usec`.
    TsUsec = "ts_usec", ANNO;
    /// `ts_usec1`: the timestamp in microseconds.
    TsUsec1 = "ts_usec1", ANNO;
    /// `first_timestamp`: when the first packet of a multi-packet line was
    /// seen (read only: bricks has no such annotation).
    FirstTimestamp = "first_timestamp", ANNO;
    /// `first_ntimestamp`: the same, in nanoseconds in a binary dump
    /// (read only, as `first_timestamp`).
    FirstNTimestamp = "first_ntimestamp", ANNO;
    /// `count`: packets this line stands for.
    Count = "count", ANNO;
    /// `link`: the paint annotation.
    Link = "link", ANNO;
    /// `paint`: the paint annotation.
    Paint = "paint", ANNO;
    /// `direction`: the paint annotation, `>` for 0 and `<` for 1.
    Direction = "direction", ANNO;
    /// `aggregate`: the flow (aggregate) annotation.
    Aggregate = "aggregate", ANNO;
    /// `wire_len`: the packet's length.
    WireLen = "wire_len", ANNO;
    /// `eth_src`: the Ethernet source, when an Ethernet header is just
    /// before the IP header.
    EthSrc = "eth_src", LINK;
    /// `eth_dst`: the Ethernet destination.
    EthDst = "eth_dst", LINK;
    /// `eth_type`: the EtherType, four hexadecimal digits.
    EthType = "eth_type", LINK;
    /// `ip_src`.
    IpSrc = "ip_src", NET;
    /// `ip_dst`.
    IpDst = "ip_dst", NET;
    /// `ip_tos`.
    IpTos = "ip_tos", NET;
    /// `ip_dscp`: the upper six bits of the TOS.
    IpDscp = "ip_dscp", NET;
    /// `ip_ecn`: `no`, `ect1`, `ect2` or `ce`.
    IpEcn = "ip_ecn", NET;
    /// `ip_ttl`.
    IpTtl = "ip_ttl", NET;
    /// `ip_frag`: F (first fragment), f (later fragment), ! (don't
    /// fragment), . (none).
    IpFrag = "ip_frag", NET - 2;
    /// `ip_fragoff`: the offset in bytes, `+` when more fragments follow,
    /// `!` for don't fragment.
    IpFragoff = "ip_fragoff", NET - 1;
    /// `ip_id`.
    IpId = "ip_id", NET;
    /// `ip_sum`: the header checksum.
    IpSum = "ip_sum", NET + 2;
    /// `ip_proto`: T, U, I or a number.
    IpProto = "ip_proto", NET;
    /// `ip_hl`: the header length in bytes.
    IpHl = "ip_hl", NET - 1;
    /// `ip_len`.
    IpLen = "ip_len", NET + 1;
    /// `ip_capture_len`: the IP bytes present.
    IpCaptureLen = "ip_capture_len", PAYLOAD + 2;
    /// `ip_opt`: the IP options in Click's text.
    IpOpt = "ip_opt", NET;
    /// `sport`.
    Sport = "sport", TRANSP;
    /// `dport`.
    Dport = "dport", TRANSP;
    /// `tcp_seq`.
    TcpSeq = "tcp_seq", TRANSP;
    /// `tcp_ack`.
    TcpAck = "tcp_ack", TRANSP;
    /// `tcp_off`: the TCP header length in bytes.
    TcpOff = "tcp_off", TRANSP - 1;
    /// `tcp_flags`: letters of FSRPAUECN, `.` for none.
    TcpFlags = "tcp_flags", TRANSP;
    /// `tcp_window`.
    TcpWindow = "tcp_window", TRANSP;
    /// `tcp_urp`: the urgent pointer.
    TcpUrp = "tcp_urp", TRANSP;
    /// `tcp_opt`: the TCP options in Click's text.
    TcpOpt = "tcp_opt", TRANSP + 3;
    /// `tcp_ntopt`: the TCP options but timestamps.
    TcpNtopt = "tcp_ntopt", TRANSP + 2;
    /// `tcp_sack`: the SACK options.
    TcpSack = "tcp_sack", TRANSP + 1;
    /// `udp_len`.
    UdpLen = "udp_len", TRANSP;
    /// `icmp_type`.
    IcmpType = "icmp_type", TRANSP;
    /// `icmp_code`.
    IcmpCode = "icmp_code", TRANSP + 1;
    /// `icmp_type_name`: the type's name (`echo`) or number.
    IcmpTypeName = "icmp_type_name", TRANSP;
    /// `icmp_code_name`: the code's name (`port`) or number.
    IcmpCodeName = "icmp_code_name", TRANSP + 1;
    /// `icmp_flowid`: the identifier of echo, information and timestamp
    /// messages.
    IcmpFlowid = "icmp_flowid", TRANSP + 2;
    /// `icmp_seq`: their sequence number.
    IcmpSeq = "icmp_seq", TRANSP + 2;
    /// `icmp_nextmtu`: the MTU of a fragmentation-needed message.
    IcmpNextmtu = "icmp_nextmtu", TRANSP + 2;
    /// `payload_len`: IP length less the IP and transport headers.
    PayloadLen = "payload_len", PAYLOAD + 1;
    /// `payload`: the payload bytes, quoted with C escapes.
    Payload = "payload", PAYLOAD;
    /// `payload_md5`: MD5 of the payload in Click's 22-character text.
    PayloadMd5 = "payload_md5", PAYLOAD;
    /// `payload_md5_hex`: MD5 of the payload in hexadecimal.
    PayloadMd5Hex = "payload_md5_hex", PAYLOAD;
}

/// Click's other names for fields.
const SYNONYMS: &[(&str, &str)] = &[
    ("utimestamp", "timestamp"),
    ("ts", "timestamp"),
    ("sec", "ts_sec"),
    ("usec", "ts_usec"),
    ("usec1", "ts_usec1"),
    ("first_utimestamp", "first_timestamp"),
    ("first_ts", "first_timestamp"),
    ("pkt_count", "count"),
    ("packet_count", "count"),
    ("agg", "aggregate"),
    ("wire_length", "wire_len"),
    ("length", "ip_len"),
    ("ip_p", "ip_proto"),
    ("tcp_seqno", "tcp_seq"),
    ("tcp_ackno", "tcp_ack"),
    ("tcp_win", "tcp_window"),
    ("payload_length", "payload_len"),
    ("ether_src", "eth_src"),
    ("ether_dst", "eth_dst"),
    ("ether_type", "eth_type"),
];

impl Field {
    /// The field called `name`, as Click finds it: a synonym, a name, or
    /// else the name with its first space made `_` (`ip src`), or else
    /// `ip_` before a name without `_` (`src`, `len`).
    pub fn from_name(name: &str) -> Option<Field> {
        let mut n = std::borrow::Cow::Borrowed(name);
        // Bounded: each retry removes a space or adds the only `_`.
        for _ in 0..=name.len() + 1 {
            let s = SYNONYMS
                .iter()
                .find(|(k, _)| *k == n)
                .map_or(&*n, |&(_, v)| v);
            if let Some(&(_, f)) = CANONICAL.iter().find(|(k, _)| *k == s) {
                return Some(f);
            }
            n = if let Some(i) = n.find(' ') {
                format!("{}_{}", &n[..i], &n[i + 1..]).into()
            } else if !n.contains('_') && !n.is_empty() {
                format!("ip_{n}").into()
            } else {
                return None;
            };
        }
        None
    }

    /// Whether FromIPSummaryDump can read this field.
    pub fn readable(self) -> bool {
        !matches!(self, Field::PayloadMd5 | Field::PayloadMd5Hex)
    }

    /// Whether ToIPSummaryDump can write this field.
    pub fn writable(self) -> bool {
        !matches!(self, Field::FirstTimestamp | Field::FirstNTimestamp)
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
        if !quoted && i + 1 < words.len() && !words[i + 1].1 && Field::from_name(w).is_none() {
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

/// A packet as ToIPSummaryDump and IPPrint see it (Click's `PacketDesc`
/// after `ip_prepare`): the IP header if it is sound, the transport
/// header of a first fragment, and how much of the frame is padding.
#[derive(Clone, Debug)]
pub struct View<'a> {
    /// The whole frame.
    pub data: &'a [u8],
    /// Offset of the network header in `data`.
    pub nh: usize,
    /// The IP header and what follows, without trailing padding; `None`
    /// when the packet has no sound IPv4 header.
    pub ip: Option<&'a [u8]>,
    /// Bytes at the end of the frame beyond the IP length.
    pub tailpad: usize,
    /// Why the packet is bad, for BAD_PACKETS (the first reason only).
    pub bad: Option<String>,
    /// The extra length annotation as Click's summaries count it: what a
    /// capture cut off a packet without an IP header, or beyond 65,535
    /// bytes of one with (the IP length says the rest).
    pub extra: usize,
    /// `ip_len` and `payload_len` include `extra` (EXTRA_LENGTH).
    pub force_extra: bool,
}

/// Protocols whose header starts with two ports.
fn has_ports(proto: u8) -> bool {
    matches!(proto, 6 | 17 | 33 | 136)
}

impl<'a> View<'a> {
    /// Looks at `p`: its IP header is at the network header annotation,
    /// or at the start of the packet when it has none. `careful` notes a
    /// capture shorter than the IP length as bad (CAREFUL_TRUNC).
    pub fn new(p: &'a Packet, careful: bool) -> View<'a> {
        let data = p.data();
        let marked = p.network_header_offset().is_some();
        let nh = p.network_header_offset().unwrap_or(0).min(data.len());
        let extra = p.anno().extra_length as usize;
        let mut v = View {
            data,
            nh,
            ip: None,
            tailpad: 0,
            bad: None,
            extra,
            force_extra: true,
        };
        let h = &data[nh..];
        if h.is_empty() && !marked {
            return v;
        }
        if h.len() < 4 {
            v.bad = Some("truncated IP header".into());
        } else if h[0] >> 4 != 4 {
            v.bad = Some(format!("IP version {}", h[0] >> 4));
        } else if h[0] & 15 < 5 {
            v.bad = Some(format!("IP header length {}", h[0] & 15));
        } else {
            let len = usize::from(u16::from_be_bytes([h[2], h[3]]));
            let hl = usize::from(h[0] & 15) * 4;
            if len < hl {
                v.bad = Some(format!("IP length {len}"));
            } else {
                if h.len() > len {
                    v.tailpad = h.len() - len;
                } else if careful && h.len() + extra < len {
                    v.bad = Some(format!("truncated IP missing {}", len - h.len() - extra));
                }
                v.ip = Some(&h[..h.len() - v.tailpad]);
                // As Click: with an IP header, lengths come from the IP
                // length, and the annotation counts only what lies beyond
                // the 16-bit field.
                let full = h.len() - v.tailpad + extra;
                v.extra = if len != 0xffff || full <= 0xffff {
                    0
                } else {
                    full - 0xffff
                };
                // As Click's `ip_prepare`: a TCP header whose offset
                // field is present but says less than 20 bytes.
                if let Some(t) = v.transport().filter(|t| t.len() > 12) {
                    if h[9] == 6 && t[12] >> 4 < 5 {
                        v.missing(&format!("TCP header length {}", t[12] >> 4));
                    }
                }
            }
        }
        v
    }

    /// Bytes of the frame the summary counts (without padding).
    pub fn length(&self) -> usize {
        self.data.len() - self.tailpad
    }

    /// IP header length in bytes.
    pub fn hl(&self) -> usize {
        self.ip.map_or(0, |h| usize::from(h[0] & 15) * 4)
    }

    fn get(&self, i: usize) -> Option<u8> {
        self.ip.and_then(|h| h.get(i).copied())
    }

    fn be16(&self, i: usize) -> Option<u16> {
        Some(u16::from_be_bytes([self.get(i)?, self.get(i + 1)?]))
    }

    /// Protocol, if the IP header goes that far.
    pub fn proto(&self) -> Option<u8> {
        self.get(9)
    }

    /// The flags-and-offset word.
    pub fn frag(&self) -> Option<u16> {
        self.be16(6)
    }

    /// Whether the packet is not a later fragment.
    pub fn first_frag(&self) -> bool {
        self.frag().is_some_and(|f| f & 0x1fff == 0)
    }

    /// The IP length.
    pub fn ip_len(&self) -> Option<u16> {
        self.be16(2)
    }

    /// The transport header and what follows, if the packet is a first
    /// fragment with at least one transport byte (Click's `transport_length
    /// > 0`).
    pub fn transport(&self) -> Option<&'a [u8]> {
        let h = self.ip?;
        let hl = self.hl();
        (h.len() > hl && self.first_frag()).then(|| &h[hl..])
    }

    /// The transport header if the protocol is `proto`.
    fn transport_of(&self, proto: u8) -> Option<&'a [u8]> {
        if self.proto() != Some(proto) {
            return None;
        }
        let t = self.transport()?;
        if proto == 6 && t.len() > 12 && t[12] >> 4 < 5 {
            return None;
        }
        Some(t)
    }

    /// The TCP header of a sound TCP packet.
    pub fn tcp(&self) -> Option<&'a [u8]> {
        self.transport_of(6)
    }

    /// Where the payload starts in `data` and its length by the IP length
    /// (Click's `payload_info`; the start may be past the frame's end).
    /// The length is Click's 32-bit difference: an IP length shorter than
    /// the headers wraps (`4294967286` for 10 bytes short), as Click
    /// prints it.
    pub fn payload_info(&self) -> (usize, usize) {
        let Some(h) = self.ip else {
            return (0, self.length());
        };
        let len = usize::from(u16::from_be_bytes([h[2], h[3]]));
        let mut off = self.nh + self.hl();
        if self.first_frag() {
            match h[9] {
                6 => {
                    let t = self.transport().unwrap_or(&[]);
                    off += if t.len() >= 13 && t[12] >> 4 >= 5 {
                        usize::from(t[12] >> 4) * 4
                    } else {
                        20
                    };
                }
                17 | 136 => off += 8,
                _ => {}
            }
        }
        (
            off,
            (len as u32).wrapping_sub((off - self.nh) as u32) as usize,
        )
    }

    /// The `payload_len` field: the payload's length by the IP length,
    /// plus EXTRA_LENGTH where there is no IP header or it is forced, in
    /// Click's 32 bits.
    pub fn payload_len(&self) -> u32 {
        let extra = if self.ip.is_none() || self.force_extra {
            self.extra
        } else {
            0
        };
        (self.payload_info().1 as u32).wrapping_add(extra as u32)
    }

    /// The payload bytes present.
    pub fn payload(&self) -> &'a [u8] {
        let (off, len) = self.payload_info();
        let end = off.saturating_add(len).min(self.length());
        self.data.get(off..end).unwrap_or(&[])
    }

    fn missing(&mut self, what: &str) {
        if self.bad.is_none() {
            self.bad = Some(what.into());
        }
    }
}

/// Letters of the TCP flags, low bit first (FSRPAUECN); `.` for none.
pub fn tcp_flags_text(flags: u16, out: &mut String) {
    const LETTERS: &[u8; 9] = b"FSRPAUECN";
    if flags == 0 {
        out.push('.');
    }
    for (i, &c) in LETTERS.iter().enumerate() {
        if flags & (1 << i) != 0 {
            out.push(char::from(c));
        }
    }
}

fn ts_text(out: &mut String, ts: Timestamp) {
    // Signed, as Click's: `AdjustTimestamp` may move a time before 1970.
    let _ = write!(out, "{}", ClickTime(i128::from(ts.signed_nanos())));
}

/// Click's `cp_quote`: the bytes in double quotes, with `\\`, `\"`, `\$`,
/// `\t`, `\r`, `\n` and octal escapes for other control and non-ASCII
/// bytes.
pub fn quote_bytes(b: &[u8], out: &mut String) {
    out.push('"');
    for &c in b {
        match c {
            b'\\' | b'"' | b'$' => {
                out.push('\\');
                out.push(char::from(c));
            }
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            b'\n' => out.push_str("\\n"),
            32..=126 => out.push(char::from(c)),
            _ => {
                let _ = write!(out, "\\{}{}{}", c >> 6, (c >> 3) & 7, c & 7);
            }
        }
    }
    out.push('"');
}

/// Appends the text of field `f` of packet `p` seen as `v` to `out`; `-`
/// when the packet does not have it (the first such reason is kept in
/// `v.bad` for BAD_PACKETS).
pub fn unparse(f: Field, p: &Packet, v: &mut View<'_>, out: &mut String) {
    if !unparse_some(f, p, v, out) {
        out.push('-');
    }
}

fn unparse_some(f: Field, p: &Packet, v: &mut View<'_>, out: &mut String) -> bool {
    use Field as F;
    let a = p.anno();
    let ip_need = |v: &mut View<'_>, n: usize| -> bool {
        let ok = v.ip.is_some_and(|h| h.len() >= n);
        if !ok {
            v.missing(if v.ip.is_none() {
                "no IP header"
            } else {
                "truncated IP header capture"
            });
        }
        ok
    };
    let r = match f {
        F::Timestamp | F::NTimestamp => {
            ts_text(out, a.timestamp);
            Ok(())
        }
        // Signed, as Click's: a time before the epoch has negative
        // seconds and a fraction counted up from them.
        F::TsSec => write!(out, "{}", a.timestamp.signed_nanos().div_euclid(NANOS)),
        F::TsUsec => write!(
            out,
            "{}",
            a.timestamp.signed_nanos().rem_euclid(NANOS) / 1000
        ),
        F::TsUsec1 => write!(out, "{}", a.timestamp.signed_nanos().div_euclid(1000)),
        F::FirstTimestamp | F::FirstNTimestamp => return false,
        F::Count => write!(out, "1"),
        F::Link | F::Paint => write!(out, "{}", a.paint),
        F::Direction => match a.paint {
            0 => write!(out, ">"),
            1 => write!(out, "<"),
            n => write!(out, "{n}"),
        },
        F::Aggregate => write!(out, "{}", a.flow),
        F::WireLen => write!(out, "{}", p.len()),
        F::EthSrc | F::EthDst | F::EthType => {
            // Click's rule: the Ethernet header ends where the IP header
            // starts.
            if v.nh != 14 || v.data.len() < 14 {
                v.missing("Ethernet header");
                return false;
            }
            let m = &v.data[..14];
            match f {
                F::EthType => write!(out, "{:04X}", u16::from_be_bytes([m[12], m[13]])),
                _ => {
                    let a = if f == F::EthSrc { &m[6..12] } else { &m[..6] };
                    write!(
                        out,
                        "{:02X}-{:02X}-{:02X}-{:02X}-{:02X}-{:02X}",
                        a[0], a[1], a[2], a[3], a[4], a[5]
                    )
                }
            }
        }
        F::IpSrc | F::IpDst => {
            let at = if f == F::IpSrc { 12 } else { 16 };
            if !ip_need(v, at + 4) {
                return false;
            }
            let h = v.ip.unwrap_or_default();
            write!(
                out,
                "{}",
                Ipv4Addr::new(h[at], h[at + 1], h[at + 2], h[at + 3])
            )
        }
        F::IpTos | F::IpDscp | F::IpEcn => {
            if !ip_need(v, 2) {
                return false;
            }
            let tos = v.get(1).unwrap_or(0);
            match f {
                F::IpTos => write!(out, "{tos}"),
                F::IpDscp => write!(out, "{}", tos >> 2),
                _ => write!(
                    out,
                    "{}",
                    ["no", "ect1", "ect2", "ce"][usize::from(tos & 3)]
                ),
            }
        }
        F::IpTtl => {
            if !ip_need(v, 9) {
                return false;
            }
            write!(out, "{}", v.get(8).unwrap_or(0))
        }
        F::IpFrag | F::IpFragoff => {
            if !ip_need(v, 8) {
                return false;
            }
            let w = v.frag().unwrap_or(0);
            if f == F::IpFrag {
                let c = if w & 0x3fff != 0 {
                    if w & 0x1fff == 0 {
                        'F'
                    } else {
                        'f'
                    }
                } else if w & 0x4000 != 0 {
                    '!'
                } else {
                    '.'
                };
                out.push(c);
                Ok(())
            } else {
                let _ = write!(out, "{}", u32::from(w & 0x1fff) * 8);
                if w & 0x2000 != 0 {
                    out.push('+');
                }
                if w & 0x4000 != 0 {
                    out.push('!');
                }
                Ok(())
            }
        }
        F::IpId => {
            if !ip_need(v, 6) {
                return false;
            }
            write!(out, "{}", v.be16(4).unwrap_or(0))
        }
        F::IpSum => {
            if !ip_need(v, 12) {
                return false;
            }
            write!(out, "{}", v.be16(10).unwrap_or(0))
        }
        F::IpProto => {
            if !ip_need(v, 10) {
                return false;
            }
            match v.proto().unwrap_or(0) {
                6 => write!(out, "T"),
                17 => write!(out, "U"),
                1 => write!(out, "I"),
                n => write!(out, "{n}"),
            }
        }
        F::IpHl => {
            if !ip_need(v, 1) {
                return false;
            }
            write!(out, "{}", v.hl())
        }
        F::IpLen => {
            let len = match v.ip_len() {
                Some(l) if v.ip.is_some() => usize::from(l),
                _ => v.length(),
            };
            let extra = if v.force_extra { v.extra } else { 0 };
            write!(out, "{}", len + extra)
        }
        F::IpCaptureLen => {
            let allow = v.ip.map_or(v.length(), <[u8]>::len);
            let len = v.ip.and_then(|_| v.ip_len()).map_or(allow, usize::from);
            write!(out, "{}", len.min(allow))
        }
        F::IpOpt => {
            let hl = v.hl();
            let Some(h) = v.ip.filter(|h| hl <= 20 || h.len() >= hl) else {
                v.missing("truncated IP header capture");
                return false;
            };
            if hl <= 20 {
                out.push('.');
            } else {
                options::ip_text(&h[20..hl], out);
            }
            Ok(())
        }
        F::Sport | F::Dport => {
            let need = if f == F::Sport { 2 } else { 4 };
            let t = v
                .transport()
                .filter(|t| v.proto().is_some_and(has_ports) && t.len() >= need);
            let Some(t) = t else {
                transport_missing(v, "TCP/UDP", need);
                return false;
            };
            write!(out, "{}", u16::from_be_bytes([t[need - 2], t[need - 1]]))
        }
        F::TcpSeq | F::TcpAck | F::TcpOff | F::TcpFlags | F::TcpWindow | F::TcpUrp => {
            let need = match f {
                F::TcpSeq => 8,
                F::TcpAck => 12,
                F::TcpOff => 13,
                F::TcpFlags => 14,
                F::TcpWindow => 16,
                _ => 20,
            };
            let Some(t) = v.tcp().filter(|t| t.len() >= need) else {
                transport_missing(v, "TCP", need);
                return false;
            };
            let be32 = |i: usize| u32::from_be_bytes([t[i], t[i + 1], t[i + 2], t[i + 3]]);
            match f {
                F::TcpSeq => write!(out, "{}", be32(4)),
                F::TcpAck => write!(out, "{}", be32(8)),
                F::TcpOff => write!(out, "{}", usize::from(t[12] >> 4) * 4),
                F::TcpFlags => {
                    tcp_flags_text(u16::from(t[13]) | (u16::from(t[12] & 15) << 8), out);
                    Ok(())
                }
                F::TcpWindow => write!(out, "{}", u16::from_be_bytes([t[14], t[15]])),
                _ => write!(out, "{}", u16::from_be_bytes([t[18], t[19]])),
            }
        }
        F::TcpOpt | F::TcpNtopt | F::TcpSack => {
            let t = v.tcp().filter(|t| t.len() >= 13);
            let Some(t) = t else {
                let l = v.transport().map_or(0, <[u8]>::len);
                transport_missing(v, "TCP", l + 1);
                return false;
            };
            let off = usize::from(t[12] >> 4) * 4;
            let set = match f {
                F::TcpOpt => TcpOptSet::All,
                F::TcpNtopt => TcpOptSet::NoTimestamp,
                _ => TcpOptSet::Sack,
            };
            if off <= 20 {
                out.push('.');
                return true;
            }
            // Click leaves out the usual NOP NOP timestamp for tcp_ntopt
            // and tcp_sack before checking the capture.
            if f != F::TcpOpt && off == 32 && t.len() >= 24 && t[20..24] == [1, 1, 8, 10] {
                out.push('.');
                return true;
            }
            let Some(o) = t.get(20..off) else {
                transport_missing(v, "TCP", t.len() + 1);
                return false;
            };
            options::tcp_text(o, set, out);
            Ok(())
        }
        F::UdpLen => {
            let Some(t) = v.transport_of(17).filter(|t| t.len() >= 6) else {
                transport_missing(v, "UDP", 6);
                return false;
            };
            write!(out, "{}", u16::from_be_bytes([t[4], t[5]]))
        }
        F::IcmpType | F::IcmpTypeName | F::IcmpCode | F::IcmpCodeName => {
            let need = if matches!(f, F::IcmpType | F::IcmpTypeName) {
                1
            } else {
                2
            };
            let Some(t) = v.transport_of(1).filter(|t| t.len() >= need) else {
                transport_missing(v, "ICMP", need);
                return false;
            };
            match f {
                F::IcmpType => write!(out, "{}", t[0]),
                F::IcmpCode => write!(out, "{}", t[1]),
                F::IcmpTypeName => match icmperror::TYPES.iter().find(|e| e.1 == t[0]) {
                    Some((n, _)) => write!(out, "{n}"),
                    None => write!(out, "{}", t[0]),
                },
                _ => match icmperror::code_names(t[0]).iter().find(|e| e.1 == t[1]) {
                    Some((n, _)) => write!(out, "{n}"),
                    None => write!(out, "{}", t[1]),
                },
            }
        }
        F::IcmpFlowid | F::IcmpSeq | F::IcmpNextmtu => {
            let Some(t) = v.transport_of(1).filter(|t| !t.is_empty()) else {
                transport_missing(v, "ICMP", 1);
                return false;
            };
            let applies = if f == F::IcmpNextmtu {
                t.len() >= 2 && t[0] == 3 && t[1] == 4
            } else {
                matches!(t[0], 0 | 8 | 13 | 14 | 15 | 16)
            };
            if !applies {
                return false;
            }
            let at = if f == F::IcmpSeq || f == F::IcmpNextmtu {
                6
            } else {
                4
            };
            if t.len() < at + 2 {
                transport_missing(v, "ICMP", at + 2);
                return false;
            }
            write!(out, "{}", u16::from_be_bytes([t[at], t[at + 1]]))
        }
        F::PayloadLen => write!(out, "{}", v.payload_len()),
        F::Payload | F::PayloadMd5 | F::PayloadMd5Hex => {
            let (off, len) = v.payload_info();
            if len != 0 && off >= v.data.len() {
                return false;
            }
            let b = v.payload();
            match f {
                F::Payload => quote_bytes(b, out),
                F::PayloadMd5 => md5_text(&super::md5::digest(b), out),
                _ => {
                    for x in super::md5::digest(b) {
                        let _ = write!(out, "{x:02x}");
                    }
                }
            }
            Ok(())
        }
    };
    let _ = r;
    true
}

/// Click's `md5_finish_text` with `@` allowed: 22 characters, six bits
/// each, least significant bits first.
fn md5_text(d: &[u8; 16], out: &mut String) {
    const CHARS: &[u8; 64] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@";
    let mut bit = 0;
    while bit < 128 {
        let first = bit / 8;
        let mut val = u32::from(d[first]) >> (bit % 8);
        if bit + 8 > (first + 1) * 8 && first < 15 {
            val += u32::from(d[first + 1]) << (8 - bit % 8);
        }
        out.push(char::from(CHARS[(val & 0x3f) as usize]));
        bit += 6;
    }
}

/// Click's `hard_field_missing` for a transport field: why it is absent
/// (`need` is how many transport bytes the field wanted). A packet of
/// another protocol is not bad.
fn transport_missing(v: &mut View<'_>, proto: &str, need: usize) {
    if v.bad.is_some() {
        return;
    }
    let Some(h) = v.ip else {
        v.missing("no IP header");
        return;
    };
    if h.len() > 9 {
        let p = h[9];
        let wrong = match proto {
            "TCP" => p != 6,
            "UDP" => p != 17,
            "ICMP" => p != 1,
            // Click's IP_PROTO_TCP_OR_UDP: ports of other protocols
            // (DCCP, UDP-Lite) are absent silently.
            _ => p != 6 && p != 17,
        };
        if wrong {
            return;
        }
    }
    // Click reads the fragment word even when the capture stops before
    // it; bricks takes a missing one as a first fragment.
    if v.frag().is_some_and(|f| f & 0x1fff != 0) {
        v.bad = Some(format!("fragmented {proto} header"));
    } else {
        // Click's `transport_length() + EXTRA_LENGTH_ANNO >= l`, where the
        // transport length is negative when the IP header is cut short.
        let have = h.len() as i64 - v.hl() as i64 + v.extra as i64;
        v.bad = Some(if have >= need as i64 {
            format!("truncated {proto} header capture")
        } else {
            format!("truncated {proto} header")
        });
    }
}

/// One summary line as `fields` says: each field's text, space separated,
/// appended to `out` without the newline; `careful` is CAREFUL_TRUNC and
/// `extra_length` EXTRA_LENGTH. Returns why the packet is bad, if it is
/// (for BAD_PACKETS).
pub fn write_line(
    fields: &[Field],
    p: &Packet,
    careful: bool,
    extra_length: bool,
    out: &mut String,
) -> Option<String> {
    let mut v = View::new(p, careful);
    v.force_extra = extra_length;
    // Click checks the IP header (`ip_prepare`) only for a line with a
    // field past the annotations and the Ethernet header.
    if fields.iter().all(|f| f.order() < NET - 2) {
        v.bad = None;
    }
    for (i, &f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        unparse(f, p, &mut v, out);
    }
    v.bad
}

/// One summary line as `fields` says.
pub fn line(fields: &[Field], p: &Packet) -> String {
    let mut out = String::new();
    let _ = write_line(fields, p, true, true, &mut out);
    out
}

/// One field's value as a line gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A number (ports, lengths, flags, addresses as host-order words).
    Num(u32),
    /// A time.
    Time(Timestamp),
    /// Bytes: options or payload.
    Bytes(Vec<u8>),
}

/// The values a line gives, in the order the line gives them; fields that
/// are `-` (or that FromIPSummaryDump ignores) are absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Each field given, with its value.
    pub values: Vec<(Field, Value)>,
}

impl Record {
    /// The value of `f`, if the line gives it.
    pub fn get(&self, f: Field) -> Option<&Value> {
        self.values.iter().find(|(g, _)| *g == f).map(|(_, v)| v)
    }

    /// The number `f` gives, if any.
    pub fn num(&self, f: Field) -> Option<u32> {
        match self.get(f)? {
            Value::Num(n) => Some(*n),
            _ => None,
        }
    }

    /// The time `f` gives, if any.
    pub fn time(&self, f: Field) -> Option<Timestamp> {
        match self.get(f)? {
            Value::Time(t) => Some(*t),
            _ => None,
        }
    }
}

/// Splits a data line into words at spaces, a double-quoted string being
/// part of its word whatever it holds (Click's reader).
pub fn split_words(text: &str) -> impl Iterator<Item = &str> {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            return None;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() {
            if b[i] == b'"' {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            i += 1;
        }
        let end = i.min(b.len());
        text.get(start..end)
    })
}

/// Click's `cp_string` for one word: double-quoted parts with C escapes
/// (`\n`, `\t`, octal `\ooo`, `\xHH`, `\<hex digits>`, `\"`), single-quoted
/// parts as they are, bare characters as they are. `None` when a quote is
/// not closed.
pub fn unquote(word: &str) -> Option<Vec<u8>> {
    let b = word.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                loop {
                    match b.get(i)? {
                        b'"' => break,
                        b'\\' if i + 1 < b.len() => i = backslash(b, i, &mut out),
                        &c => {
                            out.push(c);
                            i += 1;
                        }
                    }
                }
                i += 1;
            }
            b'\'' => {
                let end = b[i + 1..].iter().position(|&c| c == b'\'')?;
                out.extend_from_slice(&b[i + 1..i + 1 + end]);
                i += end + 2;
            }
            b'\\' if b.get(i + 1) == Some(&b'<') => i = backslash(b, i, &mut out),
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

/// One backslash escape at `b[i]` (Click's `cp_process_backslash`);
/// returns where the text goes on.
fn backslash(b: &[u8], i: usize, out: &mut Vec<u8>) -> usize {
    let hex = |c: u8| char::from(c).to_digit(16).map(|d| d as u8);
    let Some(&c) = b.get(i + 1) else {
        out.push(b'\\');
        return i + 1;
    };
    match c {
        b'\r' => i + if b.get(i + 2) == Some(&b'\n') { 3 } else { 2 },
        b'\n' => i + 2,
        b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' => {
            out.push(match c {
                b'a' => 7,
                b'b' => 8,
                b'f' => 12,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                _ => 11,
            });
            i + 2
        }
        b'0'..=b'7' => {
            let mut v: u32 = 0;
            let mut j = i + 1;
            while j < b.len() && j < i + 4 && (b'0'..=b'7').contains(&b[j]) {
                v = v * 8 + u32::from(b[j] - b'0');
                j += 1;
            }
            out.push(v as u8);
            j
        }
        b'x' => {
            let mut v: u8 = 0;
            let mut j = i + 2;
            while let Some(d) = b.get(j).and_then(|&c| hex(c)) {
                v = v.wrapping_mul(16).wrapping_add(d);
                j += 1;
            }
            out.push(v);
            j
        }
        b'<' => {
            let mut j = i + 2;
            let mut acc: Option<u8> = None;
            while j < b.len() && b[j] != b'>' {
                if let Some(d) = hex(b[j]) {
                    match acc.take() {
                        Some(h) => out.push(h * 16 + d),
                        None => acc = Some(d),
                    }
                }
                j += 1;
            }
            (j + 1).min(b.len())
        }
        _ => {
            out.push(c);
            i + 2
        }
    }
}

/// Click's `IntArg` for unsigned numbers: decimal, `0x` hex or `0` octal.
fn int(w: &str) -> Option<u64> {
    let (radix, digits) = if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        (16, h)
    } else if w.len() > 1 && w.starts_with('0') {
        (8, &w[1..])
    } else {
        (10, w)
    };
    if digits.is_empty() || !digits.bytes().all(|c| char::from(c).is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

fn bounded(w: &str, max: u64) -> Option<u32> {
    int(w).filter(|&v| v <= max).map(|v| v as u32)
}

/// Nanoseconds a second.
const NANOS: i64 = 1_000_000_000;

/// A whole number of `unit` nanoseconds, signed (`ts_sec`, `ts_usec1`),
/// as a time: at most a second less than a time can hold either way, so
/// that a fraction added to it stays in range.
fn signed_time(w: &str, unit: i64) -> Option<Timestamp> {
    let (negative, w) = match w.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, w),
    };
    let v = i64::try_from(int(w)?).ok()?;
    let ns = v.checked_mul(unit).filter(|ns| *ns <= i64::MAX - NANOS)?;
    Some(Timestamp::from_signed_nanos(if negative {
        -ns
    } else {
        ns
    }))
}

/// Click's `cp_time`: seconds, optionally a fraction.
fn parse_ts(w: &str) -> Option<Timestamp> {
    // Signed, as `ts_text` writes it (Click's timestamps are signed): a
    // time is kept as signed nanoseconds, so seconds stop below 2^63 ns.
    let (negative, w) = match w.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, w),
    };
    let (s, frac) = w.split_once('.').unwrap_or((w, ""));
    if s.is_empty() && frac.is_empty() {
        return None;
    }
    let secs: u64 = if s.is_empty() { 0 } else { s.parse().ok()? };
    if !frac.bytes().all(|b| b.is_ascii_digit()) || secs >= i64::MAX as u64 / 1_000_000_000 {
        return None;
    }
    let mut nanos: u32 = 0;
    for (i, c) in frac.bytes().enumerate().take(9) {
        nanos += u32::from(c - b'0') * 10u32.pow(8 - i as u32);
    }
    let ns = Timestamp::from_parts(secs, nanos).signed_nanos();
    Some(Timestamp((if negative { -ns } else { ns }) as u64))
}

/// The flags-and-offset word of `ip_frag` (`.`, `!`, `F`, `f`) or
/// `ip_fragoff` (the offset in bytes, then `+` for more fragments and `!`
/// for don't fragment, in either order), as Click reads them.
fn parse_frag(w: &str, minor: u8) -> Option<u32> {
    match w {
        "." => return Some(0),
        "!" => return Some(0x4000),
        "F" => return Some(0x2000),
        "f" => return Some(100),
        _ => {}
    }
    let digits = w.bytes().take_while(u8::is_ascii_digit).count();
    let off: u32 = if digits == 0 {
        0
    } else {
        w[..digits].parse().ok()?
    };
    // Dumps of version 1.0 give the offset in 8-byte units.
    let units = if minor == 0 { off } else { off >> 3 };
    if units > 0x1fff {
        return None;
    }
    let mut v = units;
    for c in w[digits..].bytes() {
        match c {
            b'+' => v |= 0x2000,
            b'!' => v |= 0x4000,
            _ => return None,
        }
    }
    (!w.is_empty()).then_some(v)
}

/// Click's `tcp_flag_mapping`: letters to flag bits.
fn parse_flags(w: &str) -> Option<u32> {
    if w == "." {
        return Some(0);
    }
    if w.starts_with(|c: char| c.is_ascii_digit()) {
        return int(w).filter(|&v| v < 0x1000).map(|v| v as u32);
    }
    let mut f = 0;
    for c in w.bytes() {
        f |= 1
            << match c {
                b'F' => 0,
                b'S' => 1,
                b'R' => 2,
                b'P' => 3,
                b'A' => 4,
                b'U' => 5,
                b'E' | b'X' => 6,
                b'C' | b'W' | b'Y' => 7,
                b'N' => 8,
                _ => return None,
            };
    }
    (!w.is_empty()).then_some(f)
}

fn parse_icmp_type(w: &str) -> Option<u32> {
    match icmperror::TYPES.iter().find(|e| e.0 == w) {
        Some(&(_, t)) => Some(u32::from(t)),
        None => bounded(w, 255),
    }
}

/// Parses one word `w` of field `f`; `None` when it is malformed.
fn parse_value(f: Field, w: &str, icmp_type: Option<u32>, minor: u8) -> Option<Value> {
    use Field as F;
    let n = |v: Option<u32>| v.map(Value::Num);
    match f {
        F::Timestamp | F::NTimestamp | F::FirstTimestamp | F::FirstNTimestamp => {
            parse_ts(w).map(Value::Time)
        }
        F::TsSec => signed_time(w, NANOS).map(Value::Time),
        F::TsUsec => n(bounded(w, u64::from(u32::MAX))),
        F::TsUsec1 => signed_time(w, 1000).map(Value::Time),
        F::Count
        | F::Aggregate
        | F::WireLen
        | F::IpLen
        | F::TcpSeq
        | F::TcpAck
        | F::PayloadLen
        | F::IpCaptureLen
        | F::UdpLen => n(bounded(w, u64::from(u32::MAX))),
        F::Link | F::Paint | F::Direction => match w {
            ">" => n(Some(0)),
            "<" => n(Some(1)),
            _ => n(bounded(w, u64::from(u32::MAX))),
        },
        F::IpSrc | F::IpDst => w.parse::<Ipv4Addr>().ok().map(|a| Value::Num(u32::from(a))),
        F::IpTos | F::IpDscp | F::IpTtl | F::IpHl | F::TcpOff => n(bounded(w, 255)),
        F::IpEcn => n(match w {
            "0" | "1" | "2" | "3" => w.parse().ok(),
            "no" | "-" => Some(0),
            "ect1" | "ECT(1)" => Some(1),
            "ect2" | "ECT(0)" => Some(2),
            "ce" | "CE" => Some(3),
            _ => None,
        }),
        F::IpFrag | F::IpFragoff => n(parse_frag(w, minor)),
        F::IpId
        | F::IpSum
        | F::Sport
        | F::Dport
        | F::TcpWindow
        | F::TcpUrp
        | F::IcmpFlowid
        | F::IcmpSeq
        | F::IcmpNextmtu => n(bounded(w, 65535)),
        F::IpProto => n(match w {
            "T" => Some(6),
            "U" => Some(17),
            "I" => Some(1),
            _ => bounded(w, 255),
        }),
        F::IpOpt => options::ip_parse(w).map(Value::Bytes),
        F::TcpFlags => n(parse_flags(w)),
        F::TcpOpt => options::tcp_parse(w, TcpOptSet::All).map(Value::Bytes),
        F::TcpNtopt => options::tcp_parse(w, TcpOptSet::NoTimestamp).map(Value::Bytes),
        F::TcpSack => options::tcp_parse(w, TcpOptSet::Sack).map(Value::Bytes),
        F::IcmpType | F::IcmpTypeName => n(parse_icmp_type(w)),
        F::IcmpCode | F::IcmpCodeName => n(
            match icmp_type
                .and_then(|t| u8::try_from(t).ok())
                .and_then(|t| icmperror::code_names(t).iter().find(|e| e.0 == w))
            {
                Some(&(_, c)) => Some(u32::from(c)),
                None => bounded(w, 255),
            },
        ),
        F::Payload => unquote(w).map(Value::Bytes),
        F::EthSrc | F::EthDst => {
            let parts: Vec<&str> = w.split([':', '-']).collect();
            if parts.len() != 6 {
                return None;
            }
            let mut a = Vec::with_capacity(6);
            for x in parts {
                if x.is_empty() || x.len() > 2 {
                    return None;
                }
                a.push(u8::from_str_radix(x, 16).ok()?);
            }
            Some(Value::Bytes(a))
        }
        F::EthType => u16::from_str_radix(w, 16)
            .ok()
            .map(|t| Value::Num(u32::from(t))),
        F::PayloadMd5 | F::PayloadMd5Hex => None,
    }
}

/// Parses one data line with `fields`. A field that is `-` is absent; a
/// word that does not parse is an error naming the field (Click skips such
/// a field and drops the line only when no field parsed; bricks refuses
/// the line, so that a typo is seen).
pub fn parse_line(fields: &[Field], text: &str) -> Result<Record, String> {
    parse_line_version(fields, text, 3)
}

/// [`parse_line`] for a dump whose first line says `!IPSummaryDump
/// 1.minor`.
pub fn parse_line_version(fields: &[Field], text: &str, minor: u8) -> Result<Record, String> {
    let mut r = Record::default();
    let mut words = split_words(text);
    let icmp_type = fields
        .iter()
        .position(|f| matches!(f, Field::IcmpType | Field::IcmpTypeName));
    let mut type_value = None;
    // Words missing at the end are absent fields, as in Click.
    let all: Vec<&str> = fields.iter().map(|_| words.next().unwrap_or("-")).collect();
    if let Some(i) = icmp_type {
        if all[i] != "-" {
            type_value = parse_icmp_type(all[i]);
        }
    }
    for (&f, w) in fields.iter().zip(all) {
        if w == "-" || !f.readable() {
            continue;
        }
        // `?` is what Click writes for options it cannot parse: there is
        // nothing to rebuild, as when Click reads it.
        if w == "?"
            && matches!(
                f,
                Field::IpOpt | Field::TcpOpt | Field::TcpNtopt | Field::TcpSack
            )
        {
            continue;
        }
        match parse_value(f, w, type_value, minor) {
            Some(v) => r.values.push((f, v)),
            None => {
                return Err(format!(
                    "bad {} `{}`",
                    f.name(),
                    w.chars().take(64).collect::<String>().escape_default()
                ))
            }
        }
    }
    Ok(r)
}

/// A `!flowid`: source address and port, destination address and port.
pub type FlowId = (Ipv4Addr, u16, Ipv4Addr, u16);

/// What FromIPSummaryDump knows besides the line: its defaults.
#[derive(Clone, Copy, Debug)]
pub struct BuildOptions {
    /// Protocol of an IP header the line makes without `ip_proto`.
    pub proto: u8,
    /// Set the IP and transport checksums, with the payload made whole.
    pub checksum: bool,
    /// `!flowid`: addresses and ports of a line that gives none.
    pub flowid: Option<FlowId>,
    /// `!aggregate`: the aggregate annotation of every packet.
    pub aggregate: Option<u32>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            proto: 6,
            checksum: false,
            flowid: None,
            aggregate: None,
        }
    }
}

/// Most bytes a packet's IP part is built with: room is left for an
/// Ethernet header in a buffer.
const BUILD_MAX: usize = MAX_FRAME - 14;

/// A packet as it is built (Click's `PacketOdesc`): the IP header starts
/// at byte 0 once some field asks for it.
struct Builder<'o> {
    b: Vec<u8>,
    ip: bool,
    /// An Ethernet header before the IP header (`eth_*` fields).
    eth: Option<[u8; 14]>,
    /// False once `eth_type` says the packet is not IP.
    is_ip: bool,
    want_len: u32,
    have_ip_hl: bool,
    have_tcp_hl: bool,
    have_icmp_type: bool,
    have_icmp_code: bool,
    o: &'o BuildOptions,
}

/// The parts of a line that are not the packet's bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Extras {
    /// Packets the line stands for (`count`), 1 when not given.
    pub count: u32,
    /// When the first of them was seen (`first_timestamp`).
    pub first_timestamp: Option<Timestamp>,
}

impl Builder<'_> {
    fn hl(&self) -> usize {
        usize::from(self.b[0] & 15) * 4
    }

    fn proto(&self) -> u8 {
        self.b[9]
    }

    fn first_frag(&self) -> bool {
        u16::from_be_bytes([self.b[6], self.b[7]]) & 0x1fff == 0
    }

    /// Bytes before the IP header: an Ethernet header's, if any.
    fn l2(&self) -> usize {
        if self.eth.is_some() {
            14
        } else {
            0
        }
    }

    fn transport_len(&self) -> usize {
        self.b.len().saturating_sub(self.hl())
    }

    /// Grows the packet to `len` bytes (zeros), up to a buffer's size.
    fn grow(&mut self, len: usize) -> bool {
        if len > BUILD_MAX {
            return false;
        }
        if self.b.len() < len {
            self.b.resize(len, 0);
        }
        true
    }

    /// Click's `make_ip`: an IP header (version 4, TTL 100, the default
    /// protocol and addresses) if there is none; then whether its protocol
    /// is `proto` or unset.
    fn make_ip(&mut self, proto: u8) -> bool {
        if !self.is_ip {
            return false;
        }
        if !self.ip {
            self.ip = true;
            self.b.resize(20, 0);
            self.b[0] = 0x45;
            self.b[8] = 100;
            self.b[9] = self.o.proto;
            if let Some((s, _, d, _)) = self.o.flowid {
                self.b[12..16].copy_from_slice(&s.octets());
                self.b[16..20].copy_from_slice(&d.octets());
            }
        }
        proto == 0 || self.proto() == 0 || self.proto() == proto
    }

    /// Click's `make_transp`: the transport header of a first fragment,
    /// as long as the protocol's (cut at the wanted length).
    fn make_transp(&mut self) -> bool {
        if !self.first_frag() {
            return false;
        }
        if self.transport_len() >= 8 {
            return true;
        }
        let mut len = match self.proto() {
            6 => 20,
            17 | 136 | 1 => 8,
            33 => 12,
            _ => return true,
        };
        let thoff = self.hl();
        // Click's transport header offset counts an Ethernet header.
        let l2 = self.l2();
        if self.want_len > 0 && (self.want_len as usize) < l2 + thoff + len {
            len = (self.want_len as usize).saturating_sub(l2 + thoff);
        }
        if self.transport_len() < len {
            let fresh = self.transport_len() < 4;
            if !self.grow(thoff + len.max(4)) {
                return false;
            }
            if self.proto() == 6 && len >= 13 {
                self.b[thoff + 12] = 5 << 4;
            }
            if let (Some((_, sp, _, dp)), true) = (self.o.flowid, fresh) {
                self.b[thoff..thoff + 2].copy_from_slice(&sp.to_be_bytes());
                self.b[thoff + 2..thoff + 4].copy_from_slice(&dp.to_be_bytes());
            }
            // The IP header stays whole even when a field made its length
            // say less.
            self.b.truncate((thoff + len).max(20));
        }
        true
    }

    fn put16(&mut self, at: usize, v: u32) {
        if self.b.len() >= at + 2 {
            self.b[at..at + 2].copy_from_slice(&(v as u16).to_be_bytes());
        }
    }

    fn put32(&mut self, at: usize, v: u32) {
        if self.b.len() >= at + 4 {
            self.b[at..at + 4].copy_from_slice(&v.to_be_bytes());
        }
    }

    /// Applies one field (Click's `*_inject`).
    fn inject(&mut self, f: Field, v: &Value, p: &mut Packet, x: &mut Extras) {
        use Field as F;
        let n = match v {
            Value::Num(n) => *n,
            _ => 0,
        };
        match f {
            F::Timestamp | F::NTimestamp | F::TsUsec1 => {
                if let Value::Time(t) = v {
                    p.anno_mut().timestamp = *t;
                }
            }
            F::TsSec => {
                if let Value::Time(secs) = v {
                    let sub = p.anno().timestamp.signed_nanos().rem_euclid(NANOS);
                    p.anno_mut().timestamp =
                        Timestamp::from_signed_nanos(secs.signed_nanos() + sub);
                }
            }
            F::TsUsec => {
                let t = p.anno().timestamp.signed_nanos();
                let us = i64::from(n.min(999_999));
                let whole = t.div_euclid(NANOS).saturating_mul(NANOS);
                p.anno_mut().timestamp =
                    Timestamp::from_signed_nanos(whole.saturating_add(us * 1000));
            }
            F::FirstTimestamp | F::FirstNTimestamp => {
                if let Value::Time(t) = v {
                    x.first_timestamp = Some(*t);
                }
            }
            F::Count => x.count = n.max(1),
            F::Link | F::Paint | F::Direction => p.anno_mut().paint = n as u8,
            F::Aggregate => p.anno_mut().flow = n,
            F::WireLen => self.want_len = n,
            F::IpSrc
            | F::IpDst
            | F::IpTos
            | F::IpDscp
            | F::IpEcn
            | F::IpTtl
            | F::IpFrag
            | F::IpFragoff
            | F::IpId
            | F::IpSum
            | F::IpProto
            | F::IpHl
            | F::IpLen
            | F::IpCaptureLen
            | F::IpOpt => self.inject_ip(f, v, n),
            F::Sport | F::Dport => {
                if !self.make_ip(0) || !self.make_transp() {
                    return;
                }
                if self.proto() != 0 && !has_ports(self.proto()) {
                    return;
                }
                let at = self.hl() + if f == F::Sport { 0 } else { 2 };
                self.put16(at, n);
            }
            F::TcpSeq
            | F::TcpAck
            | F::TcpOff
            | F::TcpFlags
            | F::TcpWindow
            | F::TcpUrp
            | F::TcpOpt
            | F::TcpNtopt
            | F::TcpSack => self.inject_tcp(f, v, n),
            F::UdpLen => {
                if !self.make_ip(0) || !self.make_transp() {
                    return;
                }
                if !matches!(self.proto(), 0 | 17 | 136) {
                    return;
                }
                let t = self.hl();
                if self.grow(t + 8) {
                    self.put16(t + 4, n);
                }
            }
            F::IcmpType
            | F::IcmpTypeName
            | F::IcmpCode
            | F::IcmpCodeName
            | F::IcmpFlowid
            | F::IcmpSeq
            | F::IcmpNextmtu => self.inject_icmp(f, n),
            F::Payload | F::PayloadLen => {
                if self.make_ip(0) {
                    self.make_transp();
                }
                let (off, _) = self.payload_info();
                if f == F::PayloadLen {
                    self.account_payload_len(off, n as usize);
                    return;
                }
                let Value::Bytes(data) = v else { return };
                if data.is_empty() {
                    return;
                }
                let off = self.account_payload_len(off, data.len());
                if self.grow(off + data.len()) {
                    self.b[off..off + data.len()].copy_from_slice(data);
                }
            }
            F::PayloadMd5 | F::PayloadMd5Hex => {}
            F::EthSrc | F::EthDst | F::EthType => {
                let e = self.eth.get_or_insert_with(|| {
                    let mut e = [0u8; 14];
                    e[12..].copy_from_slice(&0x0800u16.to_be_bytes());
                    e
                });
                match v {
                    Value::Bytes(a) if a.len() == 6 => {
                        let at = if f == F::EthSrc { 6 } else { 0 };
                        e[at..at + 6].copy_from_slice(a);
                    }
                    _ => {
                        e[12..].copy_from_slice(&(n as u16).to_be_bytes());
                        if n != 0x0800 && n != 0x86dd {
                            self.is_ip = false;
                        }
                    }
                }
            }
        }
    }

    fn inject_ip(&mut self, f: Field, v: &Value, n: u32) {
        use Field as F;
        if !self.make_ip(0) {
            return;
        }
        match f {
            F::IpSrc => self.put32(12, n),
            F::IpDst => self.put32(16, n),
            F::IpTos => self.b[1] = n as u8,
            F::IpDscp => self.b[1] = (self.b[1] & 3) | ((n << 2) as u8 & 0xfc),
            F::IpEcn => self.b[1] = (self.b[1] & 0xfc) | (n as u8 & 3),
            F::IpTtl => self.b[8] = n as u8,
            F::IpFrag | F::IpFragoff => self.put16(6, n),
            F::IpId => self.put16(4, n),
            F::IpSum => self.put16(10, n),
            F::IpProto => self.b[9] = n as u8,
            // Click's: the wire length, counting an Ethernet header.
            F::IpLen => self.want_len = n.saturating_add(self.l2() as u32),
            F::IpCaptureLen => {}
            F::IpOpt => {
                self.have_ip_hl = true;
                let Value::Bytes(o) = v else { return };
                if o.is_empty() {
                    return;
                }
                let hl = (20 + o.len() + 3) & !3;
                if !self.widen_ip(hl) || self.b.len() < hl {
                    return;
                }
                self.b[20..20 + o.len()].copy_from_slice(o);
                self.b[20 + o.len()..hl].fill(0);
            }
            F::IpHl => {
                self.have_ip_hl = true;
                let hl = ((n as usize + 3) & !3).min(60);
                if self.widen_ip(hl) {
                    self.b[0] = 0x40 | (hl / 4) as u8;
                }
            }
            _ => {}
        }
    }

    /// Makes the IP header at least `hl` bytes long, moving what follows
    /// it; false when the packet cannot grow.
    fn widen_ip(&mut self, hl: usize) -> bool {
        let old = self.hl();
        if hl <= old {
            return true;
        }
        let more = hl - old;
        if self.b.len() < old || self.b.len() + more > BUILD_MAX {
            return false;
        }
        // The new option bytes are EOL (zero).
        self.b.splice(old..old, std::iter::repeat_n(0, more));
        self.b[0] = 0x40 | (hl / 4) as u8;
        true
    }

    fn inject_tcp(&mut self, f: Field, v: &Value, n: u32) {
        use Field as F;
        if !self.make_ip(6) || !self.make_transp() {
            return;
        }
        let t = self.hl();
        match f {
            F::TcpSeq => self.put32(t + 4, n),
            F::TcpAck => self.put32(t + 8, n),
            F::TcpFlags => {
                if self.b.len() > t + 13 {
                    self.b[t + 13] = n as u8;
                    self.b[t + 12] = (self.b[t + 12] & 0xf0) | ((n >> 8) as u8 & 15);
                }
            }
            F::TcpOff => {
                if self.b.len() <= t + 12 {
                    return;
                }
                let off = ((n as usize + 3) & !3).min(60);
                let cur = usize::from(self.b[t + 12] >> 4) * 4;
                if off > cur && !self.grow(self.b.len() + off - cur) {
                    return;
                }
                self.b[t + 12] = ((off / 4) as u8) << 4 | (self.b[t + 12] & 15);
            }
            F::TcpWindow => self.put16(t + 14, n),
            F::TcpUrp => self.put16(t + 18, n),
            _ => {
                self.have_tcp_hl = true;
                let Value::Bytes(o) = v else { return };
                if o.is_empty() || self.b.len() <= t + 12 {
                    return;
                }
                let off = (20 + o.len() + 3) & !3;
                if !self.grow(t + off) {
                    return;
                }
                if off > usize::from(self.b[t + 12] >> 4) * 4 {
                    self.b[t + 12] = ((off / 4) as u8) << 4 | (self.b[t + 12] & 15);
                }
                self.b[t + 20..t + 20 + o.len()].copy_from_slice(o);
                self.b[t + 20 + o.len()..t + off].fill(0);
            }
        }
    }

    fn inject_icmp(&mut self, f: Field, n: u32) {
        use Field as F;
        if !self.make_ip(1) || !self.make_transp() {
            return;
        }
        let t = self.hl();
        if !self.grow(t + 8) {
            return;
        }
        let with_flow = |ty: u8| matches!(ty, 0 | 8 | 13 | 14 | 15 | 16);
        match f {
            F::IcmpType | F::IcmpTypeName => {
                self.b[t] = n as u8;
                self.have_icmp_type = true;
                // Timestamp messages carry three timestamps (RFC 792).
                if matches!(n, 13 | 14) {
                    self.grow(t + 20);
                }
            }
            F::IcmpCode | F::IcmpCodeName => {
                self.b[t + 1] = n as u8;
                self.have_icmp_code = true;
            }
            F::IcmpFlowid | F::IcmpSeq => {
                if !self.have_icmp_type || with_flow(self.b[t]) {
                    self.put16(t + if f == F::IcmpFlowid { 4 } else { 6 }, n);
                }
            }
            _ => {
                if (!self.have_icmp_type || self.b[t] == 3)
                    && (!self.have_icmp_code || self.b[t + 1] == 4)
                {
                    self.put16(t + 6, n);
                }
            }
        }
    }

    /// Where the payload starts, and its length by the IP length.
    fn payload_info(&self) -> (usize, usize) {
        if !self.ip {
            return (0, self.b.len());
        }
        let mut off = self.hl();
        if self.first_frag() {
            match self.proto() {
                6 => {
                    let th = self.b.get(off + 12).map_or(0, |&x| usize::from(x >> 4) * 4);
                    off += if self.transport_len() >= 13 && th >= 20 {
                        th
                    } else {
                        20
                    };
                }
                17 | 136 => off += 8,
                _ => {}
            }
        }
        let len = usize::from(u16::from_be_bytes([self.b[2], self.b[3]]));
        (off, len.saturating_sub(off))
    }

    /// Click's `account_payload_len`: with `plen` payload bytes at `off`,
    /// an IP length larger than the headers and payload makes room as TCP
    /// and IP options (EOL) when no field gave those lengths. Returns
    /// where the payload now starts.
    fn account_payload_len(&mut self, mut off: usize, plen: usize) -> usize {
        let ip_len = match self.b.get(2..4) {
            Some(l) if self.ip => u32::from(u16::from_be_bytes([l[0], l[1]])),
            _ => 0,
        };
        let l2 = self.l2();
        if !self.ip || (ip_len == 0 && self.want_len == 0) {
            self.want_len = (l2 + off + plen).min(u32::MAX as usize) as u32;
            return off;
        }
        let ip_len = if ip_len != 0 {
            ip_len as usize
        } else {
            (self.want_len as usize).saturating_sub(l2)
        };
        let mut delta = ip_len.saturating_sub(off + plen);
        let t = self.hl();
        if delta > 0
            && self.first_frag()
            && self.proto() == 6
            && !self.have_tcp_hl
            && self.b.len() >= t + 20
            && self.b[t + 12] >> 4 == 5
        {
            let th_delta = (delta & !3).min(40);
            if self.b.len() + th_delta <= BUILD_MAX {
                self.b
                    .splice(t + 20..t + 20, std::iter::repeat_n(0, th_delta));
                self.b[t + 12] = (((20 + th_delta) / 4) as u8) << 4 | (self.b[t + 12] & 15);
                delta -= th_delta;
                off += th_delta;
            }
        }
        if delta > 0 && !self.have_ip_hl && self.hl() == 20 {
            let ip_delta = (delta & !3).min(40);
            if self.widen_ip(20 + ip_delta) {
                off += ip_delta;
            }
        }
        off
    }
}

/// Builds the packet `r` describes, as Click's FromIPSummaryDump does:
/// the fields apply in Click's order (annotations, IP header, transport
/// header, payload); the packet holds the headers the fields asked for and
/// the payload the line gives, the IP length says the rest. With
/// `o.checksum` the packet is made as long as its IP length (zeros, up to
/// a buffer) and its checksums are set.
pub fn build(r: &Record, o: &BuildOptions) -> (Packet, Extras) {
    let mut p = Packet::new();
    let mut x = Extras {
        count: 1,
        first_timestamp: None,
    };
    let mut bd = Builder {
        b: Vec::new(),
        ip: false,
        eth: None,
        is_ip: true,
        want_len: 0,
        have_ip_hl: false,
        have_tcp_hl: false,
        have_icmp_type: false,
        have_icmp_code: false,
        o,
    };
    let mut order: Vec<usize> = (0..r.values.len()).collect();
    order.sort_by_key(|&i| (r.values[i].0.order(), i));
    for i in order {
        let (f, v) = &r.values[i];
        bd.inject(*f, v, &mut p, &mut x);
    }
    if let Some(a) = o.aggregate {
        if r.get(Field::Aggregate).is_none() {
            p.anno_mut().flow = a;
        }
    }
    if o.flowid.is_some() {
        bd.make_ip(0);
    }
    if bd.ip {
        bd.make_transp();
        let mut ip_len = u32::from(u16::from_be_bytes([bd.b[2], bd.b[3]]));
        if ip_len == 0 {
            // Click's: the wire length less an Ethernet header.
            ip_len = bd.want_len;
            if bd.eth.is_some() && ip_len >= 14 {
                ip_len -= 14;
            }
            ip_len = ip_len.min(0xffff);
            if ip_len == 0 {
                ip_len = bd.b.len() as u32;
            }
            bd.put16(2, ip_len);
        }
        let hl = bd.hl();
        if bd.proto() == 17
            && bd.first_frag()
            && bd.b.len() >= hl + 6
            && bd.b[hl + 4..hl + 6] == [0, 0]
        {
            bd.put16(hl + 4, ip_len.saturating_sub(hl as u32));
        }
        p.anno_mut().dst_ip = Ipv4Addr::new(bd.b[16], bd.b[17], bd.b[18], bd.b[19]);
        if o.checksum {
            let whole = bd.grow(ip_len as usize);
            set_checksums(&mut bd.b, whole);
        }
    }
    let nh = match bd.eth {
        Some(e) => {
            bd.b.splice(0..0, e);
            14
        }
        None => 0,
    };
    if p.set_frame(&bd.b).is_err() {
        p = Packet::new();
    }
    // Click's `push_mac_header` puts the network header just after the
    // Ethernet header, also when the packet is not IP.
    if bd.ip || bd.eth.is_some() {
        p.set_network_header(nh);
    }
    // Click's: the length the line gives beyond the bytes built.
    if bd.want_len as usize > p.len() {
        p.anno_mut().extra_length = bd.want_len - p.len() as u32;
    }
    (p, x)
}

/// Click's `set_checksums`: the IP header's, then the transport's of an
/// unfragmented packet over the bytes present (only when `whole`: the
/// packet could be made as long as its IP length).
fn set_checksums(b: &mut [u8], whole: bool) {
    let hl = usize::from(b[0] & 15) * 4;
    if b.len() < hl {
        return;
    }
    b[10..12].fill(0);
    let c = !checksum::data(&b[..hl]);
    b[10..12].copy_from_slice(&c.to_be_bytes());
    if u16::from_be_bytes([b[6], b[7]]) & 0x3fff != 0 || !whole {
        return;
    }
    let ip_len = usize::from(u16::from_be_bytes([b[2], b[3]])).min(b.len());
    if ip_len < hl {
        return;
    }
    let src = Ipv4Addr::new(b[12], b[13], b[14], b[15]);
    let dst = Ipv4Addr::new(b[16], b[17], b[18], b[19]);
    let proto = b[9];
    let seg = &mut b[hl..ip_len];
    let at = match proto {
        6 => 16,
        17 => 6,
        1 => 2,
        _ => return,
    };
    if seg.len() < at + 2 {
        return;
    }
    seg[at..at + 2].fill(0);
    let sum = if proto == 1 {
        checksum::data(seg)
    } else {
        checksum::combine(&[
            checksum::pseudo_header_v4(src, dst, IpProtocol(proto), seg.len() as u16),
            checksum::data(seg),
        ])
    };
    seg[at..at + 2].copy_from_slice(&(!sum).to_be_bytes());
}

/// Quotes `s` as Click's `cp_quote` would for a `!creator` line.
pub fn quote(s: &str) -> String {
    let mut out = String::new();
    quote_bytes(s.as_bytes(), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A timestamp reads back as it is written, before 1970 too, and one
    /// past what signed nanoseconds hold is refused rather than written
    /// as a negative time.
    #[test]
    fn timestamps_read_back_as_written() {
        for w in [
            "0.000000",
            "1.500000",
            "-1.500000",
            "-0.250000",
            "9223372034.999999",
        ] {
            let t = parse_ts(w).unwrap();
            let mut s = String::new();
            ts_text(&mut s, t);
            assert_eq!(s, w);
        }
        assert!(parse_ts("18446744072.000000").is_none());
        assert!(parse_ts("9223372036.0").is_none());
        assert!(parse_ts("-").is_none());
    }

    /// Seconds and microseconds are signed as timestamps are: a time
    /// before 1970, or past 2^32 seconds, written as `ts_sec`, `ts_usec`
    /// or `ts_usec1` reads back as the same time.
    #[test]
    fn split_timestamps_read_back_before_1970_and_past_2106() {
        let o = BuildOptions::default();
        for ts in ["-71.000000", "-1.250000", "0.000001", "5000000000.750000"] {
            let p = read("timestamp", ts, &o);
            for fields in ["ts_sec ts_usec", "ts_usec1"] {
                let f = parse_fields(fields).unwrap();
                let written = line(&f, &p);
                let q = build(&parse_line(&f, &written).unwrap(), &o).0;
                assert_eq!(q.anno().timestamp, p.anno().timestamp, "{ts} as {written}");
            }
        }
        let f = parse_fields("ts_sec ts_usec").unwrap();
        assert_eq!(line(&f, &read("timestamp", "-1.250000", &o)), "-2 750000");
        // A second count no time can hold is refused.
        assert!(parse_line(&f, "9223372036 0").is_err());
    }

    /// A TCP SYN from 10.0.0.1:1234 to 10.0.0.2:80, TTL 64, ID 7, DF.
    const SYN: [u8; 40] = [
        0x45, 0, 0, 40, 0, 7, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // IP
        0x04, 0xd2, 0, 80, 0, 0, 0, 100, 0, 0, 0, 0, 0x50, 0x02, 0x10, 0, 0, 0, 0, 0,
    ];

    /// A Linux SYN with options: MSS 1460, SACK permitted, timestamps,
    /// NOP, window scale 7; and 3 payload bytes "hi\n".
    const SYN_OPTS: [u8; 63] = [
        0x45, 0, 0, 63, 0, 1, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // IP
        0x04, 0xd2, 0, 80, 0, 0, 0, 100, 0, 0, 0, 0, 0xa0, 0x02, 0x10, 0, 0, 0, 0, 0, // TCP
        2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 5, 0, 0, 0, 6, 1, 3, 3, 7, // options
        b'h', b'i', b'\n',
    ];

    fn pkt(b: &[u8]) -> Packet {
        let mut p = Packet::from_slice(b).unwrap();
        p.set_network_header(0);
        p
    }

    fn read(fields: &str, l: &str, o: &BuildOptions) -> Packet {
        let f = parse_fields(fields).unwrap();
        build(&parse_line(&f, l).unwrap(), o).0
    }

    #[test]
    fn names_as_click_finds_them() {
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
        assert_eq!(
            parse_fields("src len proto hl link paint direction ts agg").unwrap(),
            vec![
                Field::IpSrc,
                Field::IpLen,
                Field::IpProto,
                Field::IpHl,
                Field::Link,
                Field::Paint,
                Field::Direction,
                Field::Timestamp,
                Field::Aggregate
            ]
        );
        assert!(parse_fields("ip bogus").is_err());
        assert!(parse_fields("\"ip src").is_err());
        assert_eq!(Field::from_name("tcp_win"), Some(Field::TcpWindow));
        assert_eq!(Field::from_name("first_ts"), Some(Field::FirstTimestamp));
        assert_eq!(Field::from_name(""), None);
    }

    #[test]
    fn tcp_syn_line() {
        let mut p = pkt(&SYN);
        p.anno_mut().timestamp = Timestamp::from_parts(1, 500_000);
        p.anno_mut().paint = 1;
        let f = parse_fields(
            "timestamp ip_src sport ip_dst dport ip_proto ip_len ip_id ip_ttl ip_frag ip_fragoff \
             tcp_flags tcp_seq tcp_window payload_len link direction ip_hl tcp_off tcp_opt \
             ip_opt payload ip_ecn ip_capture_len wire_len tcp_urp",
        )
        .unwrap();
        assert_eq!(
            line(&f, &p),
            "1.000500 10.0.0.1 1234 10.0.0.2 80 T 40 7 64 ! 0! S 100 4096 0 1 < 20 20 . . \"\" \
             no 40 40 0"
        );
    }

    #[test]
    fn options_and_payload_are_written() {
        let p = pkt(&SYN_OPTS);
        let f = parse_fields("tcp_opt tcp_ntopt tcp_sack payload payload_len").unwrap();
        assert_eq!(
            line(&f, &p),
            "mss1460;sackok;ts5:6;wscale7 mss1460;sackok;wscale7 sackok \"hi\\n\" 3"
        );
        let f = parse_fields("payload_md5 payload_md5_hex").unwrap();
        let l = line(&f, &p);
        assert!(l.ends_with(&hex_md5(b"hi\n")), "{l}");
    }

    fn hex_md5(b: &[u8]) -> String {
        super::super::md5::digest(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect()
    }

    #[test]
    fn md5_text_is_clicks() {
        let mut p = pkt(&SYN);
        p.take_back(0);
        let f = parse_fields("payload payload_len payload_md5").unwrap();
        assert_eq!(line(&f, &p), "\"\" 0 u3bJz@iaYsq6aMaMSJVq_b");
        // Click's IPSummaryDump-02: a UDP packet carrying "hi there\n".
        let o = BuildOptions {
            proto: 17,
            ..BuildOptions::default()
        };
        let p = read("payload", "\"hi there\\n\"", &o);
        let f = parse_fields("payload payload_len payload_md5 payload_md5_hex").unwrap();
        assert_eq!(
            line(&f, &p),
            "\"hi there\\n\" 9 sy@Uze03MHB84qQruJ_zma 12f6bb1941df66b8f138a446d4e8670c"
        );
    }

    #[test]
    fn tcp_flags_use_clicks_letters() {
        let mut s = String::new();
        tcp_flags_text(0x1c2, &mut s);
        assert_eq!(s, "SECN");
        assert_eq!(parse_flags("SEC"), Some(0xc2));
        assert_eq!(parse_flags("SW"), Some(0x82));
        assert_eq!(parse_flags("AN"), Some(0x110));
        assert_eq!(parse_flags("."), Some(0));
        assert_eq!(parse_flags("18"), Some(18));
        assert_eq!(parse_flags("Q"), None);
    }

    #[test]
    fn non_ip_packets() {
        let p = Packet::from_slice(&[1, 2, 3]).unwrap();
        let f = parse_fields("ip src sport tcp flags payload_len ip_len wire_len").unwrap();
        assert_eq!(line(&f, &p), "- - - 3 3 3");
        let mut p = Packet::from_slice(&[0x45, 0, 0]).unwrap();
        p.set_network_header(0);
        let mut out = String::new();
        let bad = write_line(&f, &p, true, true, &mut out);
        assert_eq!(bad.as_deref(), Some("truncated IP header"));
    }

    /// An IP length shorter than the headers: Click's 32-bit payload
    /// length wraps, and the payload is absent (`-`), as Click 2.1 prints
    /// them for this TCP packet whose IP length (30) ends inside its TCP
    /// header.
    #[test]
    fn a_payload_length_shorter_than_the_headers_wraps_as_in_click() {
        let tcp = [
            0x45, 0, 0, 30, 0, 0, 0, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0, 53, 0, 53, 0, 0,
            0, 0, 0, 0,
        ];
        let f = parse_fields("payload_len payload ip_len").unwrap();
        let mut out = String::new();
        write_line(&f, &pkt(&tcp), true, true, &mut out);
        assert_eq!(out, "4294967286 - 30");
    }

    /// What a capture cut off (the extra length annotation) counts as
    /// Click counts it: an IP packet's lengths come from its header and it
    /// is not "truncated"; a packet without one adds it to its lengths.
    #[test]
    fn the_extra_length_annotation() {
        // UDP/IPv4 of 60 bytes (IP length 60), of which 34 were captured.
        let mut udp = vec![
            0x45, 0, 0, 60, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x30, 0x39, 0, 53,
            0, 40, 0, 0,
        ];
        udp.resize(34, 0xaa);
        let f = parse_fields("ip_len payload_len wire_len").unwrap();
        let mut p = pkt(&udp);
        let mut out = String::new();
        let bad = write_line(&f, &p, true, true, &mut out);
        assert_eq!(
            (bad.as_deref(), out.as_str()),
            (Some("truncated IP missing 26"), "60 32 34")
        );
        p.anno_mut().extra_length = 26;
        for extra_length in [true, false] {
            out.clear();
            let bad = write_line(&f, &p, true, extra_length, &mut out);
            assert_eq!((bad, out.as_str()), (None, "60 32 34"));
        }
        // Not IP: 3 bytes captured of 8.
        let mut p = Packet::from_slice(&[1, 2, 3]).unwrap();
        p.anno_mut().extra_length = 5;
        out.clear();
        write_line(&f, &p, true, true, &mut out);
        assert_eq!(out, "8 8 3");
        out.clear();
        write_line(&f, &p, true, false, &mut out);
        assert_eq!(out, "3 8 3");
    }

    #[test]
    fn later_fragment_has_no_ports() {
        let mut b = SYN;
        b[6] = 0x20;
        b[7] = 3;
        let p = pkt(&b);
        let f = parse_fields("sport ip_frag ip_fragoff payload_len").unwrap();
        assert_eq!(line(&f, &p), "- f 24+ 20");
    }

    #[test]
    fn truncated_tcp_fields_are_dashes() {
        // A SYN with window scale 10 (24-byte TCP header), cut as Click's
        // IPSummaryDump-01 cuts it.
        let o = BuildOptions::default();
        let p = read("sport dport tcp_urp tcp_opt", "1 2 3 wscale10", &o);
        assert_eq!(p.len(), 44);
        let f = parse_fields("sport dport tcp_urp tcp_opt").unwrap();
        let expect = [
            (44, "1 2 3 wscale10"),
            (41, "1 2 3 -"),
            (38, "1 2 - -"),
            (23, "1 - - -"),
            (20, "- - - -"),
        ];
        for (len, l) in expect {
            let q = pkt(&p.data()[..len]);
            assert_eq!(line(&f, &q), l, "{len}");
        }
        let mut out = String::new();
        let q = pkt(&p.data()[..38]);
        let bad = write_line(&f, &q, true, true, &mut out);
        assert_eq!(bad.as_deref(), Some("truncated IP missing 6"));
    }

    #[test]
    fn headers_as_click_builds_them() {
        let o = BuildOptions::default();
        // Only annotations: an empty packet.
        let p = read("timestamp link", "1.5 3", &o);
        assert_eq!(p.len(), 0);
        assert_eq!(p.anno().paint, 3);
        assert_eq!(p.anno().timestamp, Timestamp::from_parts(1, 500_000_000));
        // A port makes the default protocol's header: TCP, 40 bytes.
        let p = read("link sport", "> 7", &o);
        assert_eq!(p.len(), 40);
        assert_eq!(&p.data()[..4], &[0x45, 0, 0, 40]);
        assert_eq!(p.data()[8], 100);
        assert_eq!(p.data()[32], 0x50);
        // ip_len larger than the headers: the packet keeps the headers only.
        let p = read("ip_len ip_hl tcp_off tcp_flags", "1500 40 20 A", &o);
        assert_eq!(p.len(), 60);
        assert_eq!(p.data()[0], 0x4a);
        assert_eq!(&p.data()[2..4], &1500u16.to_be_bytes());
        // CHECKSUM fills to the IP length and sets valid checksums.
        let c = BuildOptions {
            checksum: true,
            ..o
        };
        let p = read("ip_src ip_dst ip_len", "1.0.0.1 1.0.0.2 100", &c);
        assert_eq!(p.len(), 100);
        assert_eq!(checksum::data(&p.data()[..20]), 0xffff);
        let sum = checksum::combine(&[
            checksum::pseudo_header_v4(
                Ipv4Addr::new(1, 0, 0, 1),
                Ipv4Addr::new(1, 0, 0, 2),
                IpProtocol(6),
                80,
            ),
            checksum::data(&p.data()[20..]),
        ]);
        assert_eq!(sum, 0xffff);
    }

    #[test]
    fn payload_and_options_are_read() {
        let o = BuildOptions::default();
        let f = "ip_src sport ip_dst dport tcp_seq tcp_opt payload";
        let l = "1.0.0.1 1 1.0.0.2 2 5 mss1460;sack1-10 \"hi\\n\\001\\\"\"";
        let p = read(f, l, &o);
        assert_eq!(p.len(), 20 + 36 + 5);
        assert_eq!(line(&parse_fields(f).unwrap(), &p), l);
        assert_eq!(&p.data()[56..], b"hi\n\x01\"");
        // payload with a larger ip_len makes TCP options room, as Click.
        let p = read("ip_len payload", "48 \"ab\"", &o);
        assert_eq!(p.len(), 46);
        assert_eq!(p.data()[32] >> 4, 6);
        assert_eq!(&p.data()[44..], b"ab");
    }

    #[test]
    fn ethernet_fields() {
        let o = BuildOptions::default();
        let f = "eth_src eth_dst eth_type ip_src";
        let p = read(f, "0:1:2:3:4:5 AA-BB-CC-DD-EE-FF 0800 1.0.0.1", &o);
        assert_eq!(p.len(), 14 + 40);
        assert_eq!(p.network_header_offset(), Some(14));
        assert_eq!(
            line(&parse_fields(f).unwrap(), &p),
            "00-01-02-03-04-05 AA-BB-CC-DD-EE-FF 0800 1.0.0.1"
        );
        // Not IP: the IP fields make nothing.
        let p = read("eth_type ip_src", "0806 1.0.0.1", &o);
        assert_eq!(p.len(), 14);
        let p = read("ip_src", "1.0.0.1", &o);
        assert_eq!(line(&parse_fields("eth_type").unwrap(), &p), "-");
        assert!(parse_line(&parse_fields("eth_src").unwrap(), "1:2:3").is_err());
    }

    #[test]
    fn udp_and_icmp() {
        let o = BuildOptions {
            proto: 17,
            ..BuildOptions::default()
        };
        let p = read("sport dport payload", "53 9 \"abc\"", &o);
        assert_eq!(p.len(), 31);
        let f = parse_fields("ip_proto udp_len payload_len ip_len").unwrap();
        assert_eq!(line(&f, &p), "U 11 3 31");
        let o = BuildOptions {
            proto: 1,
            ..BuildOptions::default()
        };
        let f = "icmp_type_name icmp_code_name icmp_flowid icmp_seq";
        let p = read(f, "echo 0 7 9", &o);
        assert_eq!(line(&parse_fields(f).unwrap(), &p), "echo 0 7 9");
        let p = read("icmp_type icmp_code icmp_nextmtu", "3 port 1500", &o);
        assert_eq!(p.len(), 28);
        let f = parse_fields("icmp_type_name icmp_code_name icmp_nextmtu icmp_seq").unwrap();
        assert_eq!(line(&f, &p), "unreachable port - -");
        let p = read(
            "icmp_type_name icmp_code_name icmp_nextmtu",
            "unreachable needfrag 1500",
            &o,
        );
        assert_eq!(line(&f, &p), "unreachable needfrag 1500 -");
    }

    #[test]
    fn ip_fields_round_trip() {
        let f =
            "ip_src ip_dst ip_proto ip_tos ip_ttl ip_id ip_fragoff ip_opt ip_len ip_ecn ip_dscp";
        let o = BuildOptions::default();
        let l = "1.1.1.1 2.2.2.2 47 6 3 9 800+ rr{1.2.3.4}+1;nop 100 ect2 1";
        let p = read(f, l, &o);
        assert_eq!(p.data()[0], 0x48);
        // Padding is not written back.
        let l = l.replace(";nop", "");
        assert_eq!(line(&parse_fields(f).unwrap(), &p), l);
    }

    #[test]
    fn every_line_round_trips() {
        let f = parse_fields(
            "timestamp ip_src ip_dst sport dport ip_proto ip_len ip_id ip_ttl ip_tos ip_fragoff \
             tcp_flags tcp_seq tcp_ack tcp_window payload_len count",
        )
        .unwrap();
        let o = BuildOptions {
            checksum: true,
            ..BuildOptions::default()
        };
        for l in [
            "12.345678 1.1.1.1 2.2.2.2 1 2 T 60 9 33 4 0 SA 5 6 7 20 1",
            "0.000001 1.1.1.1 2.2.2.2 - - 47 24 9 33 0 0 - - - - 4 1",
            "3.000000 9.9.9.9 8.8.8.8 - - U 100 1 1 0 800+ - - - - 80 1",
            "3.000000 9.9.9.9 8.8.8.8 1 2 U 100 1 1 0 0+! - - - - 72 1",
        ] {
            let (p, _) = build(&parse_line(&f, l).unwrap(), &o);
            assert_eq!(line(&f, &p), l);
        }
    }

    #[test]
    fn quoting_is_clicks() {
        let mut s = String::new();
        quote_bytes(b"a\"$\\\t\r\n\x01\xff", &mut s);
        assert_eq!(s, "\"a\\\"\\$\\\\\\t\\r\\n\\001\\377\"");
        assert_eq!(unquote(&s).unwrap(), b"a\"$\\\t\r\n\x01\xff");
        assert_eq!(unquote("\"\\x41\\<42 43>\"").unwrap(), b"ABC");
        assert_eq!(unquote("'x y'z").unwrap(), b"x yz");
        assert_eq!(unquote("\"open"), None);
        let w: Vec<&str> = split_words("a \"b c\" d\"e f\"g").collect();
        assert_eq!(w, ["a", "\"b c\"", "d\"e f\"g"]);
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
            "1.2.3.4 1 99999999999999999999.1 S 0",
        ] {
            assert!(parse_line(&f, l).is_err(), "{l}");
        }
        // Words missing at the end are absent fields, as in Click.
        assert_eq!(parse_line(&f, "1.2.3.4 1").unwrap().values.len(), 2);
        let f = parse_fields("tcp_opt payload ip_opt").unwrap();
        for l in ["mss1460;bogus . .", ". \"open .", ". \"\" rr{1"] {
            assert!(parse_line(&f, l).is_err(), "{l}");
        }
    }

    /// Lines of random fields and awkward values (a poor man's fuzzer that
    /// runs with the tests): each parses or is refused, builds a packet no
    /// larger than a buffer, and the packet's line reads back.
    #[test]
    fn random_lines_never_panic() {
        const VALUES: &[&str] = &[
            "-",
            "0",
            "1",
            "20",
            "40",
            "60",
            "64",
            "255",
            "256",
            "65535",
            "65536",
            "1500",
            "1.5",
            ".",
            "!",
            "F",
            "f",
            "800+",
            "0+!",
            "T",
            "U",
            "I",
            "47",
            "SA",
            "N",
            "18",
            "mss1460",
            "sack1-10;sack1-18",
            "ts5:6;wscale7",
            "99=1:2",
            "rr{1.2.3.4}+1",
            "lsrr{^1.2.3.4,5.6.7.8}",
            "ts.ip{1.0.0.1=5}+1",
            "\"\"",
            "\"abc\\n\"",
            "\"\\377\\000\"",
            "echo",
            "unreachable",
            "port",
            "needfrag",
            "<",
            ">",
            "ce",
            "ect1",
            "1.0.0.1",
            "4294967295",
            "x",
            "\"open",
            "eol",
            "nop",
        ];
        let all: Vec<Field> = CANONICAL
            .iter()
            .map(|&(_, f)| f)
            .filter(|f| f.readable())
            .collect();
        let mut rng: u64 = 1;
        let mut next = |n: usize| {
            rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) % n as u64) as usize
        };
        let mut built = 0;
        for round in 0..60_000 {
            let fields: Vec<Field> = (0..1 + next(6)).map(|_| all[next(all.len())]).collect();
            let words: Vec<&str> = fields.iter().map(|_| VALUES[next(VALUES.len())]).collect();
            let text = words.join(" ");
            let Ok(r) = parse_line(&fields, &text) else {
                continue;
            };
            let o = BuildOptions {
                proto: [6, 17, 1, 0, 47][round % 5],
                checksum: round % 2 == 0,
                ..BuildOptions::default()
            };
            let (p, _) = build(&r, &o);
            assert!(p.len() <= MAX_FRAME, "{fields:?} {text}");
            let once = line(&fields, &p);
            let again = parse_line(&fields, &once)
                .unwrap_or_else(|e| panic!("{fields:?} `{text}` wrote `{once}`: {e}"));
            let _ = build(&again, &o);
            built += 1;
        }
        assert!(built > 3_000, "{built}");
    }

    /// An Ethernet frame around an IPv4 header (version `v`, header
    /// length `hl` words, length `len`, fragment word `frag`, protocol
    /// `proto`) from 10.0.0.1 to 10.0.0.2 and `rest`; the network header
    /// is marked at 14 (`MarkIPHeader(14)`).
    fn eth_ip(v: u8, hl: u8, len: u16, frag: u16, proto: u8, rest: &[u8]) -> Packet {
        let mut b = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 8, 0];
        b.extend([(v << 4) | hl, 0]);
        b.extend(len.to_be_bytes());
        b.extend([0, 1]);
        b.extend(frag.to_be_bytes());
        b.extend([64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        b.extend_from_slice(rest);
        let mut p = Packet::from_slice(&b).unwrap();
        p.set_network_header(14);
        p
    }

    /// A TCP header 1000 > 80, seq 1, ack 2, offset `off` words, SYN,
    /// window 8192, with `off` words in all (at least 20 bytes).
    fn tcp_hdr(off: u8) -> Vec<u8> {
        let mut t = vec![
            3,
            0xe8,
            0,
            80,
            0,
            0,
            0,
            1,
            0,
            0,
            0,
            2,
            off << 4,
            2,
            0x20,
            0,
            0,
            0,
            0,
            0,
        ];
        t.resize(t.len().max(usize::from(off) * 4), 0);
        t
    }

    /// `!bad` reasons and field texts as Click 2.1 writes them, for frames
    /// made as these are by a pcap file read with
    /// `click -e 'FromDump(bad.pcap, STOP true) -> MarkIPHeader(14) ->
    /// ToIPSummaryDump(-, BAD_PACKETS true, CAREFUL_TRUNC true, FIELDS F)'`
    /// (the extra length annotation is FromDump's: what the capture cut).
    #[test]
    fn bad_reasons_are_clicks() {
        let tcp = tcp_hdr(5);
        let cases: Vec<(Packet, u32, &str, Option<&str>, &str)> = vec![
            (
                eth_ip(4, 5, 40, 0, 6, &tcp_hdr(3)),
                0,
                "ip_src",
                Some("TCP header length 3"),
                "10.0.0.1",
            ),
            (
                eth_ip(4, 5, 40, 0, 6, &tcp_hdr(3)),
                0,
                "tcp_seq",
                Some("TCP header length 3"),
                "-",
            ),
            // 13 transport bytes, offset 4.
            (
                eth_ip(4, 5, 33, 0, 6, &{
                    let mut t = tcp_hdr(4)[..12].to_vec();
                    t.push(0x40);
                    t
                }),
                0,
                "ip_proto ip_len",
                Some("TCP header length 4"),
                "T 33",
            ),
            (
                eth_ip(4, 5, 24, 0, 17, &[0, 53, 0, 53]),
                0,
                "udp_len",
                Some("truncated UDP header"),
                "-",
            ),
            (
                eth_ip(4, 5, 24, 0, 17, &[0, 53, 0, 53]),
                0,
                "sport dport",
                None,
                "53 53",
            ),
            (
                eth_ip(4, 4, 40, 0, 6, &tcp),
                0,
                "ip_src",
                Some("IP header length 4"),
                "-",
            ),
            (
                eth_ip(6, 5, 40, 0, 6, &tcp),
                0,
                "ip_src",
                Some("IP version 6"),
                "-",
            ),
            (
                eth_ip(4, 5, 10, 0, 6, &tcp),
                0,
                "ip_proto ip_len",
                Some("IP length 10"),
                "- 54",
            ),
            (
                eth_ip(4, 5, 22, 0, 6, &tcp[..2]),
                0,
                "sport dport",
                Some("truncated TCP/UDP header"),
                "1000 -",
            ),
            (
                eth_ip(4, 5, 26, 0, 6, &tcp[..6]),
                0,
                "sport dport",
                None,
                "1000 80",
            ),
            (
                eth_ip(4, 5, 26, 0, 6, &tcp[..6]),
                0,
                "tcp_flags",
                Some("truncated TCP header"),
                "-",
            ),
            (
                eth_ip(4, 5, 40, 0x10, 6, &tcp),
                0,
                "tcp_seq",
                Some("fragmented TCP header"),
                "-",
            ),
            (
                eth_ip(4, 5, 40, 0x10, 6, &tcp),
                0,
                "sport dport",
                Some("fragmented TCP/UDP header"),
                "- -",
            ),
            // DCCP ports are silently absent.
            (
                eth_ip(4, 5, 22, 0, 33, &[0, 1]),
                0,
                "sport dport",
                None,
                "1 -",
            ),
            (
                eth_ip(4, 5, 21, 0, 1, &[8]),
                0,
                "icmp_type icmp_code",
                Some("truncated ICMP header"),
                "8 -",
            ),
            (
                eth_ip(4, 5, 60, 0, 6, &tcp),
                0,
                "ip_src tcp_urp",
                Some("truncated IP missing 20"),
                "10.0.0.1 0",
            ),
            (
                eth_ip(4, 5, 44, 0, 6, &tcp_hdr(8)[..24]),
                0,
                "tcp_opt",
                Some("truncated TCP header"),
                "-",
            ),
            // A capture of 26 IP bytes of 60, and of 70,000.
            (
                eth_ip(4, 5, 60, 0, 6, &tcp[..6]),
                34,
                "tcp_seq ip_len",
                Some("truncated TCP header"),
                "- 60",
            ),
            (
                eth_ip(4, 5, 0xffff, 0, 6, &tcp[..6]),
                69_974,
                "tcp_urp ip_len",
                Some("truncated TCP header capture"),
                "- 70000",
            ),
            (
                eth_ip(4, 5, 0xffff, 0, 17, &[0, 1, 0, 2]),
                69_976,
                "udp_len",
                Some("truncated UDP header capture"),
                "-",
            ),
            // Only annotation and Ethernet fields: the IP header is not
            // looked at.
            (
                eth_ip(4, 4, 40, 0, 6, &tcp),
                0,
                "wire_len eth_type",
                None,
                "54 0800",
            ),
        ];
        for (mut p, extra, fields, bad, text) in cases {
            p.anno_mut().extra_length = extra;
            let f = parse_fields(fields).unwrap();
            let mut out = String::new();
            let got = write_line(&f, &p, true, true, &mut out);
            assert_eq!(
                (got.as_deref(), out.as_str()),
                (bad, text),
                "{fields} {:02x?}",
                p.data()
            );
        }
    }

    /// Click prints nanosecond timestamps with nine digits unless they are
    /// whole microseconds (`click -e 'FromIPSummaryDump(F, STOP true) ->
    /// ToIPSummaryDump(-, FIELDS ntimestamp timestamp)'`).
    #[test]
    fn ntimestamp_text_is_clicks() {
        let f = parse_fields("ntimestamp timestamp").unwrap();
        let mut p = Packet::from_slice(&[0x45]).unwrap();
        for (ts, text) in [
            (
                Timestamp::from_parts(999, 100),
                "999.000000100 999.000000100",
            ),
            (
                Timestamp::from_parts(1999, 250_000_000),
                "1999.250000 1999.250000",
            ),
            (Timestamp::from_parts(5, 1), "5.000000001 5.000000001"),
        ] {
            p.anno_mut().timestamp = ts;
            assert_eq!(line(&f, &p), text);
        }
        // `first_ntimestamp` is its own field, read as `first_timestamp`.
        let f = parse_fields("ntimestamp first_ntimestamp count").unwrap();
        assert_eq!(f[1], Field::FirstNTimestamp);
        assert_ne!(
            Field::from_name("first_ntimestamp"),
            Field::from_name("first_timestamp")
        );
        let r = parse_line(&f, "1000.000000300 999.000000100 3").unwrap();
        let (p, x) = build(&r, &BuildOptions::default());
        assert_eq!(p.anno().timestamp, Timestamp::from_parts(1000, 300));
        assert_eq!(x.first_timestamp, Some(Timestamp::from_parts(999, 100)));
        assert_eq!(x.count, 3);
    }

    /// Non-IP packets keep their Ethernet header, with the network header
    /// just after it; an Ethernet header counts in the wire length (Click:
    /// `click -e 'FromIPSummaryDump(F, STOP true) ->
    /// ToIPSummaryDump(-, BAD_PACKETS true, FIELDS ...)'`, and `ToDump`
    /// for the bytes).
    #[test]
    fn ethernet_of_non_ip_packets() {
        let o = BuildOptions::default();
        let fields = "eth_src eth_dst eth_type ip_src wire_len";
        let p = read(
            fields,
            "02-00-00-00-00-01 02-00-00-00-00-02 0806 1.2.3.4 60",
            &o,
        );
        assert_eq!(p.data(), [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 6]);
        assert_eq!(p.network_header_offset(), Some(14));
        assert_eq!(p.anno().extra_length, 46);
        let f = parse_fields("eth_src eth_dst eth_type ip_src wire_len ip_len").unwrap();
        let mut out = String::new();
        let bad = write_line(&f, &p, false, true, &mut out);
        assert_eq!(
            (bad.as_deref(), out.as_str()),
            (
                Some("truncated IP header"),
                "02-00-00-00-00-01 02-00-00-00-00-02 0806 - 14 60"
            )
        );
        let p = read(
            fields,
            "02-00-00-00-00-01 02-00-00-00-00-02 86DD 1.2.3.4 0",
            &o,
        );
        assert_eq!(
            line(&f, &p),
            "02-00-00-00-00-01 02-00-00-00-00-02 86DD 1.2.3.4 54 40"
        );
        // The IP and UDP lengths from a wire length that counts the
        // Ethernet header.
        let f = parse_fields("eth_type ip_len wire_len udp_len").unwrap();
        for (l, text) in [
            ("0800 1.2.3.4 54 T", "0800 40 54 -"),
            ("0800 1.2.3.4 40 U", "0800 26 40 6"),
            ("0806 1.2.3.4 40 U", "0806 40 14 -"),
        ] {
            let p = read("eth_type ip_src wire_len ip_proto", l, &o);
            assert_eq!(line(&f, &p), text, "{l}");
        }
    }
}
