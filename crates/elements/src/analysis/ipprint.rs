//! `IPPrint`: a tcpdump-like line per IP packet.

use super::info::{self, Summary};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
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
    description: "Writes one line per IPv4 packet to standard error (or OUTFILE) and \
        passes every packet on; packets without an IPv4 header print nothing. The line is \
        `LABEL: TIMESTAMP: ` then, as asked, `id N `, `paint P `, `ttl N `, `tos N `, \
        `length N `, then the flow: TCP as `SRC.SPORT > DST.DPORT: FLAGS SEQ:SEQEND(SEQLEN,\
        PACKETLEN,IPLEN) ack ACK win WIN` (flags from S, F, R, P, `.` for none; ack only \
        with ACK), UDP as `SRC.SPORT > DST.DPORT: udp ULEN`, ICMP as `SRC > DST: icmp: echo \
        request (ID, SEQ)`, `: echo reply (ID, SEQ)` or `: type T`, others as `SRC > DST: \
        ip-proto-P`; a later fragment as `SRC > DST: tcp` (udp, icmp, ip-proto-P); any \
        fragment then adds ` (frag ID:LEN@OFFSET[+])`. CONTENTS (the packet) or PAYLOAD \
        (after the transport header) HEX or ASCII adds MAXLENGTH bytes on indented lines. \
        The IP header is at the network header annotation, or at the packet's start.",
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
    let max: i64 = args.read("MAXLENGTH")?.unwrap_or(1500);
    let opts = Options {
        id: args.read("ID")?.unwrap_or(false),
        ttl: args.read("TTL")?.unwrap_or(false),
        tos: args.read("TOS")?.unwrap_or(false),
        length: args.read("LENGTH")?.unwrap_or(false),
        timestamp: args.read("TIMESTAMP")?.unwrap_or(true),
        aggregate: args.read("AGGREGATE")?.unwrap_or(false),
        paint: args.read("PAINT")?.unwrap_or(false),
    };
    let _swap: bool = args.read("SWAP")?.unwrap_or(false);
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
}

impl IPPrint {
    /// The text printed for `p`: a line, then the bytes asked for on lines
    /// indented by two spaces; empty for a packet without an IPv4 header
    /// (Click's IPPrint prints nothing for it).
    pub fn text(&self, p: &Packet) -> String {
        let mut s = String::new();
        let sum = info::summarize(p);
        let Some(ip) = sum.ip else {
            return s;
        };
        if !self.label.is_empty() {
            let _ = write!(s, "{}: ", self.label);
        }
        let o = &self.opts;
        if o.timestamp {
            let t = sum.ts;
            let _ = write!(s, "{}.{:06}: ", t.secs(), t.subsec_nanos() / 1000);
        }
        if o.aggregate {
            let _ = write!(s, "#{} ", p.anno().flow);
        }
        if o.id {
            let _ = write!(s, "id {} ", ip.id);
        }
        if o.paint {
            let _ = write!(s, "paint {} ", p.anno().paint);
        }
        if o.ttl {
            let _ = write!(s, "ttl {} ", ip.ttl);
        }
        if o.tos {
            let _ = write!(s, "tos {} ", ip.tos);
        }
        if o.length {
            let _ = write!(s, "length {} ", ip.len);
        }
        flow(&mut s, &sum, p);
        self.append_bytes(&mut s, p, &sum);
        s.push('\n');
        s
    }

    /// Click's layout: hex in groups of 4 bytes, 24 a line; ASCII in groups
    /// of 8, 48 a line; each line after the first indented by two spaces.
    fn append_bytes(&self, s: &mut String, p: &Packet, sum: &Summary) {
        if self.bytes == Bytes::None {
            return;
        }
        let start = if self.of_payload {
            let hdr = sum
                .ip
                .map_or(0, |ip| usize::from(ip.hlen + sum.transport_len));
            p.network_header_offset().unwrap_or(0) + hdr
        } else {
            0
        };
        let data = p.data().get(start..).unwrap_or(&[]);
        let data = &data[..data.len().min(self.max)];
        let (group, per_line) = if self.bytes == Bytes::Hex {
            (4, 24)
        } else {
            (8, 48)
        };
        s.push_str("\n  ");
        for (i, &b) in data.iter().enumerate() {
            if self.bytes == Bytes::Hex {
                let _ = write!(s, "{b:02x}");
            } else {
                s.push(if (32..=126).contains(&b) {
                    char::from(b)
                } else {
                    '.'
                });
            }
            if i % per_line == per_line - 1 {
                s.push_str("\n  ");
            } else if i % group == group - 1 {
                s.push(' ');
            }
        }
    }

    fn print(&mut self, b: &Batch) {
        if !self.active {
            return;
        }
        let mut text = String::new();
        for p in b.iter() {
            text.push_str(&self.text(p));
        }
        let Some(path) = &self.outfile else {
            eprint!("{text}");
            return;
        };
        if self.out.is_none() && !self.failed {
            match File::options().create(true).append(true).open(path) {
                Ok(f) => self.out = Some(BufWriter::new(f)),
                Err(e) => {
                    self.failed = true;
                    eprintln!("IPPrint: {}: {e}", path.display());
                }
            }
        }
        if let Some(o) = &mut self.out {
            if o.write_all(text.as_bytes()).is_err() && !self.failed {
                self.failed = true;
                eprintln!("IPPrint: {}: write failed", path.display());
            }
        }
    }
}

/// The flow part of a line: addresses, ports, protocol details, and the
/// fragment, as Click's IPPrint writes them.
fn flow(s: &mut String, sum: &Summary, p: &Packet) {
    let Some(ip) = sum.ip else { return };
    let payload_len = ip.len.saturating_sub(ip.hlen);
    if ip.frag & 0x1fff != 0 {
        let _ = write!(s, "{} > {}: ", ip.src, ip.dst);
        match ip.proto {
            6 => s.push_str("tcp"),
            17 => s.push_str("udp"),
            1 => s.push_str("icmp"),
            n => {
                let _ = write!(s, "ip-proto-{n}");
            }
        }
    } else {
        let h = p.network_header().unwrap_or(p.data());
        let t = h.get(usize::from(ip.hlen)..).unwrap_or(&[]);
        match (ip.proto, sum.ports, sum.tcp) {
            (6, Some((sp, dp)), Some((flags, seq, ack, win))) => {
                let _ = write!(s, "{}.{sp} > {}.{dp}: ", ip.src, ip.dst);
                let mut seqlen = u32::from(payload_len.saturating_sub(sum.transport_len));
                for (bit, c, counts) in [(2, 'S', 1), (1, 'F', 1), (4, 'R', 0), (8, 'P', 0)] {
                    if flags & bit != 0 {
                        s.push(c);
                        seqlen += counts;
                    }
                }
                if flags & 0x0f == 0 {
                    s.push('.');
                }
                let _ = write!(
                    s,
                    " {seq}:{}({seqlen},{},{})",
                    seq.wrapping_add(seqlen),
                    p.len(),
                    ip.len
                );
                if flags & 0x10 != 0 {
                    let _ = write!(s, " ack {ack}");
                }
                let _ = write!(s, " win {win}");
            }
            (17, Some((sp, dp)), _) => {
                let ulen = u16::from_be_bytes([t[4], t[5]]);
                let _ = write!(s, "{}.{sp} > {}.{dp}: udp {ulen}", ip.src, ip.dst);
            }
            (1, _, _) if t.len() >= 8 => {
                let _ = write!(s, "{} > {}: icmp", ip.src, ip.dst);
                let id = u16::from_be_bytes([t[4], t[5]]);
                let sq = u16::from_be_bytes([t[6], t[7]]);
                match t[0] {
                    0 => {
                        let _ = write!(s, ": echo reply ({id}, {sq})");
                    }
                    8 => {
                        let _ = write!(s, ": echo request ({id}, {sq})");
                    }
                    n => {
                        let _ = write!(s, ": type {n}");
                    }
                }
            }
            (proto, _, _) => {
                let _ = write!(s, "{} > {}: ip-proto-{proto}", ip.src, ip.dst);
            }
        }
    }
    if ip.frag & 0x3fff != 0 {
        let plus = if ip.frag & 0x2000 != 0 { "+" } else { "" };
        let _ = write!(
            s,
            " (frag {}:{payload_len}@{}{plus})",
            ip.id,
            (ip.frag & 0x1fff) * 8
        );
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
            "10.0.0.1 > 10.0.0.2: icmp: echo request (7, 1)\n  4500001c 0001\n"
        );
    }
}
