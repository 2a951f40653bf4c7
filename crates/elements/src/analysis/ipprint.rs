//! `IPPrint`: a tcpdump-like line per IP packet.

use crate::ip::icmperror;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// The `IPPrint` class.
pub static CLASS: ElementClass = ElementClass {
    name: "IPPrint",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "prints IP packets in a tcpdump-like format",
    synopsis: "IPPrint([LABEL, KEYWORDS])",
    description: "Writes one line per IP packet to standard error (or OUTFILE) and \
        passes every packet on, as Click's IPPrint: `LABEL: TIMESTAMP: `, then `#AGG` \
        and `paint P` (`.P` after the aggregate) followed by `: ` when asked, then as \
        asked `id N `, `ttl N `, `tos N `, `length N `, then the flow: TCP as \
        `SRC.SPORT > DST.DPORT: FLAGS SEQ:SEQEND(SEQLEN,PACKETLEN,IPLEN) ack ACK win WIN` \
        (flags from S, F, R, P, `.` for none; ack only with ACK), UDP as \
        `SRC.SPORT > DST.DPORT: udp ULEN`, ICMP as `SRC > DST: icmp echo (ID, SEQ)`, \
        `icmp echo-reply (ID, SEQ)`, `icmp DST unreachable CODE [PROTO/PORT]` or \
        `icmp TYPE [CODE]` by name, others as `SRC > DST: ip-proto-P`; headers cut short \
        as `truncated-tcp` (udp, icmp, ip); a later fragment as `SRC > DST: tcp`; any \
        fragment then adds ` (frag ID:LEN@OFFSET[+])`. CONTENTS (the packet) or PAYLOAD \
        (after the transport header) HEX or ASCII adds MAXLENGTH bytes on indented lines. \
        The IP header is at the network header annotation; a packet without one prints \
        nothing unless its bytes start with an IPv4 header.",
    ports: "one input, one output; agnostic",
    keywords: &[
        Keyword {
            name: "LABEL",
            ty: "string",
            default: Some("empty"),
            doc: "text at the start of each line",
        },
        Keyword {
            name: "CONTENTS",
            ty: "NONE, HEX or ASCII",
            default: Some("NONE"),
            doc: "print the packet's bytes",
        },
        Keyword {
            name: "PAYLOAD",
            ty: "NONE, HEX or ASCII",
            default: Some("NONE"),
            doc: "print the transport payload's bytes",
        },
        Keyword {
            name: "MAXLENGTH",
            ty: "integer",
            default: Some("1500"),
            doc: "bytes printed by CONTENTS or PAYLOAD; -1 for all",
        },
        Keyword {
            name: "ID",
            ty: "boolean",
            default: Some("false"),
            doc: "print the IP ID",
        },
        Keyword {
            name: "TTL",
            ty: "boolean",
            default: Some("false"),
            doc: "print the TTL",
        },
        Keyword {
            name: "TOS",
            ty: "boolean",
            default: Some("false"),
            doc: "print the TOS",
        },
        Keyword {
            name: "LENGTH",
            ty: "boolean",
            default: Some("false"),
            doc: "print the IP length",
        },
        Keyword {
            name: "TIMESTAMP",
            ty: "boolean",
            default: Some("true"),
            doc: "print the timestamp annotation",
        },
        Keyword {
            name: "AGGREGATE",
            ty: "boolean",
            default: Some("false"),
            doc: "print the flow annotation as `#N`",
        },
        Keyword {
            name: "PAINT",
            ty: "boolean",
            default: Some("false"),
            doc: "print the paint annotation",
        },
        Keyword {
            name: "SWAP",
            ty: "boolean",
            default: Some("false"),
            doc: "print ICMP error payloads' flows (accepted; no effect)",
        },
        Keyword {
            name: "OUTFILE",
            ty: "file name",
            default: Some("standard error"),
            doc: "append lines to this file instead",
        },
        Keyword {
            name: "CHANNEL",
            ty: "word",
            default: Some("none"),
            doc: "accepted for Click compatibility; lines go to standard error",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "print at all",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 1, STOP true) -> IPPrint(ok, TTL true) -> Discard;",
    see_also: &["Print", "ToIPSummaryDump"],
};

/// How packet bytes are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bytes {
    None,
    Hex,
    Ascii,
}

fn bytes_arg(v: Option<String>, key: &str) -> Result<Bytes, ArgError> {
    match v.as_deref().map(str::to_ascii_uppercase).as_deref() {
        None | Some("NONE" | "FALSE") => Ok(Bytes::None),
        Some("HEX" | "TRUE") => Ok(Bytes::Hex),
        Some("ASCII") => Ok(Bytes::Ascii),
        Some(o) => Err(ArgError::new(format!(
            "bad argument {key}: expected NONE, HEX or ASCII, found `{o}`"
        ))),
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let label: String = args.read_p("LABEL")?.unwrap_or_default();
    let contents = bytes_arg(args.read("CONTENTS")?, "CONTENTS")?;
    let payload = bytes_arg(args.read("PAYLOAD")?, "PAYLOAD")?;
    let mut max: i64 = args.read("MAXLENGTH")?.unwrap_or(1500);
    // Click's deprecated name.
    if let Some(n) = args.read("NBYTES")? {
        max = n;
    }
    // Click's chatter channel: bricks has only standard error.
    let _channel: Option<String> = args.read("CHANNEL")?;
    let opts = Options {
        id: args.read("ID")?.unwrap_or(false),
        ttl: args.read("TTL")?.unwrap_or(false),
        tos: args.read("TOS")?.unwrap_or(false),
        length: args.read("LENGTH")?.unwrap_or(false),
        timestamp: args.read("TIMESTAMP")?.unwrap_or(true),
        aggregate: args.read("AGGREGATE")?.unwrap_or(false),
        paint: args.read("PAINT")?.unwrap_or(false),
        swap: args.read("SWAP")?.unwrap_or(false),
    };
    let outfile: Option<PathBuf> = args.read("OUTFILE")?;
    let active = args.read("ACTIVE")?.unwrap_or(true);
    let (bytes, of_payload) = if payload != Bytes::None {
        (payload, true)
    } else {
        (contents, false)
    };
    Ok(Box::new(IPPrint {
        label,
        opts,
        bytes,
        of_payload,
        max: usize::try_from(max).unwrap_or(usize::MAX),
        outfile,
        out: None,
        failed: false,
        active,
        buf: String::new(),
    }))
}

#[derive(Clone, Copy, Debug, Default)]
struct Options {
    id: bool,
    ttl: bool,
    tos: bool,
    length: bool,
    timestamp: bool,
    aggregate: bool,
    paint: bool,
    swap: bool,
}

/// Prints IP packets.
pub struct IPPrint {
    label: String,
    opts: Options,
    bytes: Bytes,
    of_payload: bool,
    max: usize,
    outfile: Option<PathBuf>,
    out: Option<BufWriter<File>>,
    failed: bool,
    active: bool,
    /// The lines of a batch, kept between batches.
    buf: String,
}

impl IPPrint {
    /// The text printed for `p`: a line, then the bytes asked for on lines
    /// indented by two spaces; empty for a packet without a network header
    /// (Click's IPPrint prints nothing for it; bricks also takes a packet
    /// without the annotation whose bytes start with an IPv4 header).
    pub fn text(&self, p: &Packet) -> String {
        let mut s = String::new();
        self.append(p, &mut s);
        s
    }

    /// Appends the text printed for `p` to `s`.
    pub fn append(&self, p: &Packet, s: &mut String) {
        let data = p.data();
        let nh = match p.network_header_offset() {
            Some(nh) if nh <= data.len() => nh,
            _ if data.len() >= 20 && data[0] >> 4 == 4 => 0,
            _ => return,
        };
        if !self.label.is_empty() {
            let _ = write!(s, "{}: ", self.label);
        }
        let o = &self.opts;
        if o.timestamp {
            let t = p.anno().timestamp;
            let _ = write!(s, "{}.{:06}: ", t.secs(), t.subsec_nanos() / 1000);
        }
        if o.aggregate {
            let _ = write!(s, "#{}", p.anno().flow);
        }
        if o.paint {
            let _ = write!(
                s,
                "{}{}",
                if o.aggregate { "." } else { "paint " },
                p.anno().paint
            );
        }
        if o.aggregate || o.paint {
            s.push_str(": ");
        }
        let h = &data[nh..];
        if h.len() < 20 {
            s.push_str("truncated-ip\n");
            return;
        }
        let ip_len = usize::from(u16::from_be_bytes([h[2], h[3]]));
        let hl = usize::from(h[0] & 15) * 4;
        let payload_len = ip_len as i64 - hl as i64;
        let t = h.get(hl..).unwrap_or(&[]);
        let t = &t[..t.len().min(usize::try_from(payload_len).unwrap_or(0))];
        if o.id {
            let _ = write!(s, "id {} ", u16::from_be_bytes([h[4], h[5]]));
        }
        if o.ttl {
            let _ = write!(s, "ttl {} ", h[8]);
        }
        if o.tos {
            let _ = write!(s, "tos {} ", h[1]);
        }
        if o.length {
            let _ = write!(s, "length {ip_len} ");
        }
        flow(s, h, t, p.len(), o.swap);
        let frag = u16::from_be_bytes([h[6], h[7]]);
        if frag & 0x3fff != 0 {
            let plus = if frag & 0x2000 != 0 { "+" } else { "" };
            let _ = write!(
                s,
                " (frag {}:{payload_len}@{}{plus})",
                u16::from_be_bytes([h[4], h[5]]),
                u32::from(frag & 0x1fff) * 8
            );
        }
        self.append_bytes(s, p, nh, hl);
        s.push('\n');
    }

    /// Click's layout: hex in groups of 4 bytes, 24 a line; ASCII in groups
    /// of 8, 48 a line; each line indented by two spaces.
    fn append_bytes(&self, s: &mut String, p: &Packet, nh: usize, hl: usize) {
        if self.bytes == Bytes::None {
            return;
        }
        let data = p.data();
        let start = if self.of_payload {
            let h = &data[nh..];
            let t = nh + hl;
            let first = u16::from_be_bytes([h[6], h[7]]) & 0x1fff == 0;
            match h[9] {
                // Without the offset byte there is no payload to show.
                6 if first => data
                    .get(t + 12)
                    .map_or(data.len(), |&x| t + usize::from(x >> 4) * 4),
                17 if first => t + 8,
                _ => t,
            }
        } else {
            0
        };
        let data = data.get(start..).unwrap_or(&[]);
        let data = &data[..data.len().min(self.max)];
        let (group, per_line) = if self.bytes == Bytes::Hex {
            (4, 24)
        } else {
            (8, 48)
        };
        for (i, &b) in data.iter().enumerate() {
            if i % per_line == 0 {
                s.push_str("\n  ");
            } else if i % group == 0 {
                s.push(' ');
            }
            if self.bytes == Bytes::Hex {
                let _ = write!(s, "{b:02x}");
            } else {
                s.push(if (32..=126).contains(&b) {
                    char::from(b)
                } else {
                    '.'
                });
            }
        }
    }

    fn print(&mut self, b: &Batch) {
        if !self.active {
            return;
        }
        self.buf.clear();
        let mut buf = std::mem::take(&mut self.buf);
        for p in b.iter() {
            self.append(p, &mut buf);
        }
        self.buf = buf;
        let Some(path) = &self.outfile else {
            eprint!("{}", self.buf);
            return;
        };
        if self.out.is_none() && !self.failed {
            match File::create(path) {
                Ok(f) => self.out = Some(BufWriter::new(f)),
                Err(e) => {
                    self.failed = true;
                    eprintln!("IPPrint: {}: {e}", path.display());
                }
            }
        }
        if let Some(o) = &mut self.out {
            if o.write_all(self.buf.as_bytes()).is_err() && !self.failed {
                self.failed = true;
                eprintln!("IPPrint: {}: write failed", path.display());
            }
        }
    }
}

fn addr(h: &[u8], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(h[at], h[at + 1], h[at + 2], h[at + 3])
}

/// The flow part of a line, as Click's IPPrint writes it: `h` is the IP
/// header and what follows, `t` the transport bytes within the IP length,
/// `plen` the packet's length.
fn flow(s: &mut String, h: &[u8], t: &[u8], plen: usize, swap: bool) {
    let (src, dst) = (addr(h, 12), addr(h, 16));
    let first = u16::from_be_bytes([h[6], h[7]]) & 0x1fff == 0;
    let port = |i: usize| u16::from_be_bytes([t[i], t[i + 1]]);
    match h[9] {
        6 | 17 if t.len() < 4 || !first => {
            let name = if h[9] == 6 { "tcp" } else { "udp" };
            let trunc = if first { "truncated-" } else { "" };
            let _ = write!(s, "{src} > {dst}: {trunc}{name}");
        }
        6 => {
            let _ = write!(s, "{src}.{} > {dst}.{}: ", port(0), port(2));
            if t.len() < 14 {
                s.push_str("truncated-tcp");
                return;
            }
            let ip_len = i64::from(u16::from_be_bytes([h[2], h[3]]));
            let hl = i64::from(h[0] & 15) * 4;
            let mut seqlen = ip_len - hl - i64::from(t[12] >> 4) * 4;
            let flags = t[13];
            for (bit, c, counts) in [(2, 'S', 1), (1, 'F', 1), (4, 'R', 0), (8, 'P', 0)] {
                if flags & bit != 0 {
                    s.push(c);
                    seqlen += counts;
                }
            }
            if flags & 0x0f == 0 {
                s.push('.');
            }
            let seq = u32::from_be_bytes([t[4], t[5], t[6], t[7]]);
            let _ = write!(
                s,
                " {seq}:{}({seqlen},{plen},{ip_len})",
                seq.wrapping_add(seqlen as u32)
            );
            if flags & 0x10 != 0 {
                let ack = u32::from_be_bytes([t[8], t[9], t[10], t[11]]);
                let _ = write!(s, " ack {ack}");
            }
            if t.len() < 16 {
                s.push_str("truncated-tcp");
                return;
            }
            let _ = write!(s, " win {}", port(14));
        }
        17 => {
            let _ = write!(s, "{src}.{} > {dst}.{}: ", port(0), port(2));
            if t.len() < 8 {
                s.push_str("truncated-udp");
            } else {
                let _ = write!(s, "udp {}", port(4));
            }
        }
        1 => {
            let _ = write!(s, "{src} > {dst}: ");
            if !first {
                s.push_str("icmp");
            } else {
                icmp(s, t, swap);
            }
        }
        proto => {
            let _ = write!(s, "{src} > {dst}: ip-proto-{proto}");
        }
    }
}

/// Click's names of IP protocols (NameInfo).
fn proto_name(p: u8) -> Option<&'static str> {
    Some(match p {
        1 => "icmp",
        2 => "igmp",
        4 => "ipip",
        6 => "tcp",
        17 => "udp",
        33 => "dccp",
        47 => "gre",
        132 => "sctp",
        _ => return None,
    })
}

/// The ICMP part of a line.
fn icmp(s: &mut String, t: &[u8], swap: bool) {
    if t.len() < 2 {
        s.push_str("truncated-icmp");
        return;
    }
    let code_name = icmperror::code_names(t[0])
        .iter()
        .find(|e| e.1 == t[1])
        .map(|e| e.0);
    match t[0] {
        0 | 8 => {
            s.push_str(if t[0] == 0 {
                "icmp echo-reply "
            } else {
                "icmp echo "
            });
            if t.len() < 8 {
                s.push_str("truncated-icmp");
                return;
            }
            let (mut id, mut sq) = (
                u16::from_be_bytes([t[4], t[5]]),
                u16::from_be_bytes([t[6], t[7]]),
            );
            if swap {
                id = id.swap_bytes();
                sq = sq.swap_bytes();
            }
            let _ = write!(s, "({id}, {sq})");
        }
        3 => {
            let code = code_name.map_or_else(|| format!("code {}", t[1]), str::to_string);
            let Some(e) = t.get(8..).filter(|e| e.len() >= 20) else {
                let _ = write!(s, "icmp unreachable {code} ");
                s.push_str("truncated-icmp");
                return;
            };
            let _ = write!(s, "icmp {} unreachable {code}", addr(e, 16));
            let ehl = usize::from(e[0] & 15) * 4;
            match t[1] {
                2 => {
                    let _ = match proto_name(e[9]) {
                        Some(n) => write!(s, " {n}"),
                        None => write!(s, " {}", e[9]),
                    };
                }
                3 => {
                    let _ = match proto_name(e[9]) {
                        Some(n) => write!(s, " {n}"),
                        None => write!(s, " protocol {}", e[9]),
                    };
                    match e.get(ehl..).filter(|u| u.len() >= 4) {
                        Some(u) => {
                            let _ = write!(s, "/{}", u16::from_be_bytes([u[2], u[3]]));
                        }
                        None => s.push_str("truncated-icmp"),
                    }
                }
                4 => {
                    let mtu = u16::from_be_bytes([t[6], t[7]]);
                    if mtu != 0 {
                        let _ = write!(s, " (mtu {mtu})");
                    }
                }
                _ => {}
            }
        }
        ty => {
            s.push_str("icmp ");
            match icmperror::TYPES.iter().find(|e| e.1 == ty) {
                Some((n, _)) => s.push_str(n),
                None => {
                    let _ = write!(s, "type {ty}");
                }
            }
            match code_name {
                Some(n) => {
                    let _ = write!(s, " {n}");
                }
                None if t[1] != 0 => {
                    let _ = write!(s, " code {}", t[1]);
                }
                None => {}
            }
        }
    }
}

impl Element for IPPrint {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.print(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.print(b));
    }

    fn shutdown(&mut self, _cx: &mut Context<'_>) {
        if let Some(o) = &mut self.out {
            let _ = o.flush();
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        use bricks_element::FromArg;
        match handler {
            "active" => self.active = bool::from_arg(value.trim())?,
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (IPPrint has `active`)"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_packet::Timestamp;

    fn printer(label: &str) -> IPPrint {
        IPPrint {
            label: label.into(),
            opts: Options {
                timestamp: true,
                ..Options::default()
            },
            bytes: Bytes::None,
            of_payload: false,
            max: 1500,
            outfile: None,
            out: None,
            failed: false,
            active: true,
            buf: String::new(),
        }
    }

    /// A TCP SYN-ACK from 10.0.0.2:80 to 10.0.0.1:1234 with 4 payload bytes.
    const SYNACK: [u8; 44] = [
        0x45, 0, 0, 44, 0, 9, 0, 0, 64, 6, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1, // IP
        0, 80, 0x04, 0xd2, 0, 0, 1, 0, 0, 0, 0, 101, 0x50, 0x12, 0x20, 0, 0, 0, 0, 0, //
        b'a', b'b', b'c', b'd',
    ];

    #[test]
    fn tcp_line() {
        let mut p = Packet::from_slice(&SYNACK).unwrap();
        p.anno_mut().timestamp = Timestamp::from_parts(5, 2_000);
        let mut pr = printer("in");
        pr.opts.ttl = true;
        assert_eq!(
            pr.text(&p),
            "in: 5.000002: ttl 64 10.0.0.2.80 > 10.0.0.1.1234: S 256:261(5,44,44) ack 101 win 8192\n"
        );
        pr.bytes = Bytes::Ascii;
        pr.of_payload = true;
        assert!(pr.text(&p).ends_with("\n  abcd\n"));
    }

    #[test]
    fn udp_fragment_and_non_ip() {
        let mut udp = [0u8; 30];
        udp[..20].copy_from_slice(&[
            0x45, 0, 0, 30, 0, 1, 0, 0, 1, 17, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
        ]);
        udp[20..28].copy_from_slice(&[0, 53, 0x0d, 0x05, 0, 10, 0, 0]);
        let p = Packet::from_slice(&udp).unwrap();
        let mut pr = printer("");
        pr.opts.timestamp = false;
        assert_eq!(pr.text(&p), "1.2.3.4.53 > 5.6.7.8.3333: udp 10\n");
        udp[6] = 0x20;
        udp[7] = 2;
        let p = Packet::from_slice(&udp).unwrap();
        assert_eq!(pr.text(&p), "1.2.3.4 > 5.6.7.8: udp (frag 1:10@16+)\n");
        let p = Packet::from_slice(&[0x60, 0, 0]).unwrap();
        assert_eq!(pr.text(&p), "");
    }

    #[test]
    fn icmp_echo_and_hex_contents() {
        let mut b = [0u8; 28];
        b[..20].copy_from_slice(&[
            0x45, 0, 0, 28, 0, 1, 0, 0, 64, 1, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        b[20..].copy_from_slice(&[8, 0, 0, 0, 0, 7, 0, 1]);
        let p = Packet::from_slice(&b).unwrap();
        let mut pr = printer("");
        pr.opts.timestamp = false;
        pr.bytes = Bytes::Hex;
        pr.max = 6;
        assert_eq!(
            pr.text(&p),
            "10.0.0.1 > 10.0.0.2: icmp echo (7, 1)\n  4500001c 0001\n"
        );
    }
}
