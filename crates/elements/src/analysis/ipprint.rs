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
    description: "Writes one line per packet to standard error (or OUTFILE) and passes the \
        packet on. The line is `LABEL: TIMESTAMP: ` then, as asked, `paint P `, `id N `, \
        `ttl N `, `tos N `, `length N `, then the flow: TCP as `SRC.SPORT > DST.DPORT: \
        FLAGS SEQ:SEQEND(PAYLOAD,PACKETLEN,IPLEN) ack ACK win WIN`, UDP as `SRC.SPORT > \
        DST.DPORT: udp LEN`, ICMP as `SRC > DST: icmp TYPE`, a later fragment as `SRC > \
        DST: ip-proto-P (frag ID:LEN@OFFSET[+])`, anything else `SRC > DST: ip-proto-P LEN`. \
        A packet without an IPv4 header prints `not IP`. CONTENTS (or PAYLOAD) HEX or \
        ASCII adds the packet (or its payload) bytes, MAXLENGTH of them, on the next lines. \
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
    /// The text printed for `p`, one line or more, each ending in a newline.
    pub fn text(&self, p: &Packet) -> String {
        let mut s = String::new();
        if !self.label.is_empty() {
            let _ = write!(s, "{}: ", self.label);
        }
        let sum = info::summarize(p);
        let o = &self.opts;
        if o.timestamp {
            let t = sum.ts;
            let _ = write!(s, "{}.{:06}: ", t.secs(), t.subsec_nanos() / 1000);
        }
        if o.aggregate {
            let _ = write!(s, "#{} ", p.anno().flow);
        }
        if o.paint {
            let _ = write!(s, "paint {} ", p.anno().paint);
        }
        let Some(ip) = sum.ip else {
            s.push_str("not IP\n");
            self.append_bytes(&mut s, p, &sum);
            return s;
        };
        if o.id {
            let _ = write!(s, "id {} ", ip.id);
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
        flow(&mut s, &sum, p.len());
        s.push('\n');
        self.append_bytes(&mut s, p, &sum);
        s
    }

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
        for chunk in data.chunks(16) {
            s.push_str("  ");
            for (i, b) in chunk.iter().enumerate() {
                match self.bytes {
                    Bytes::Hex => {
                        if i > 0 && i % 2 == 0 {
                            s.push(' ');
                        }
                        let _ = write!(s, "{b:02x}");
                    }
                    _ => s.push(if b.is_ascii_graphic() || *b == b' ' {
                        char::from(*b)
                    } else {
                        '.'
                    }),
                }
            }
            s.push('\n');
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

/// The flow part of a line: addresses, ports, protocol details.
fn flow(s: &mut String, sum: &Summary, packet_len: usize) {
    let Some(ip) = sum.ip else { return };
    let payload = ip
        .len
        .saturating_sub(ip.hlen)
        .saturating_sub(sum.transport_len);
    if ip.frag & 0x1fff != 0 {
        let plus = if ip.frag & 0x2000 != 0 { "+" } else { "" };
        let _ = write!(
            s,
            "{} > {}: ip-proto-{} (frag {}:{}@{}{plus})",
            ip.src,
            ip.dst,
            ip.proto,
            ip.id,
            ip.len.saturating_sub(ip.hlen),
            (ip.frag & 0x1fff) * 8
        );
        return;
    }
    match (ip.proto, sum.ports, sum.tcp) {
        (6, Some((sp, dp)), Some((flags, seq, ack, win))) => {
            let _ = write!(s, "{}.{sp} > {}.{dp}: ", ip.src, ip.dst);
            info::tcp_flags_text(flags, s);
            let seqlen = u32::from(payload) + u32::from(flags & 3 != 0);
            let _ = write!(
                s,
                " {seq}:{}({payload},{packet_len},{})",
                seq.wrapping_add(seqlen),
                ip.len
            );
            if flags & 0x10 != 0 {
                let _ = write!(s, " ack {ack}");
            }
            let _ = write!(s, " win {win}");
        }
        (17, Some((sp, dp)), _) => {
            let _ = write!(s, "{}.{sp} > {}.{dp}: udp {payload}", ip.src, ip.dst);
        }
        (1, _, _) if sum.transport_len == 8 => {
            let _ = write!(s, "{} > {}: icmp", ip.src, ip.dst);
        }
        (proto, _, _) => {
            let _ = write!(
                s,
                "{} > {}: ip-proto-{proto} {}",
                ip.src,
                ip.dst,
                ip.len.saturating_sub(ip.hlen)
            );
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
            "in: 5.000002: ttl 64 10.0.0.2.80 > 10.0.0.1.1234: SA 256:261(4,44,44) ack 101 win 8192\n"
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
        assert_eq!(pr.text(&p), "1.2.3.4.53 > 5.6.7.8.3333: udp 2\n");
        udp[6] = 0x20;
        udp[7] = 2;
        let p = Packet::from_slice(&udp).unwrap();
        assert_eq!(
            pr.text(&p),
            "1.2.3.4 > 5.6.7.8: ip-proto-17 (frag 1:10@16+)\n"
        );
        let p = Packet::from_slice(&[0x60, 0, 0]).unwrap();
        assert_eq!(pr.text(&p), "not IP\n");
    }
}
