//! `FromNetFlowSummaryDump`: reads packets described by a NetFlow summary
//! (Click's `elements/analysis/fromnetflowsumdump.cc`).
//!
//! A line is 15 or more fields separated by `|`: source and destination
//! address (0, 1), input and output interface (3, 4), packets and bytes
//! (5, 6), start and end time in seconds (7, 8), ports (9, 10), the OR of
//! the TCP flags (12), protocol (13) and TOS (14). As in Click, a line is
//! good when at least 10 of the 12 things Click reads from it parse.

use super::from_ipsumdump::{Pending, MAX_COUNT};
use super::from_tcpdump::LineRead;
use super::trace_file::{
    flow_headers, Complaints, Keywords, Record, RecordFormat, TraceInput, TraceSource,
};
use bricks_element::{
    ArgError, Args, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_packet::Timestamp;
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// The `FromNetFlowSummaryDump` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FromNetFlowSummaryDump",
    ports: "0/1",
    processing: "/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "reads packets from a NetFlow summary file",
    synopsis: "FromNetFlowSummaryDump(FILENAME [, KEYWORDS])",
    description: "Reads NetFlow flow summaries, one flow a line of fields separated by `|` \
        (0 source address, 1 destination address, 3 input interface, 4 output interface, 5 \
        packets, 6 bytes, 7 start time, 8 end time (seconds since the epoch), 9 source port, \
        10 destination port, 12 TCP flags (the OR of the flow's), 13 IP protocol, 14 TOS; \
        other fields are not read), and emits a packet for each flow: an IPv4 header with \
        the addresses, protocol, TOS and an IP length of the byte count (at most 65535), and \
        for TCP a 20-byte TCP header with the ports and flags, for UDP a UDP header with the \
        ports and length; the byte count less the bytes held is the extra length \
        annotation. The timestamp is the end time, or the start time when the end is 0; the \
        paint annotation is the input interface (LINK input), the output interface (LINK \
        output), or both in 4 bits each (LINK both), at most 255 (15). Blank lines and lines \
        starting with `!` or `#` are skipped; a line with fewer than 15 fields, or with more \
        than 2 of the 12 things read unreadable, is counted in `bad_lines`. With MULTIPACKET \
        a flow makes as many packets as it counts, its bytes shared among them and their \
        timestamps stepped from the start time to the end time. Differences from Click: a \
        bad line is skipped and counted (Click ends the file at it, reporting `bad format`); \
        a line's newline is not part of its last field; MULTIPACKET makes at most 65536 \
        packets of a line and a packet count of 0 makes one (Click: 4294967296); a line of \
        more than 4096 bytes is bad; the first timestamp and packet count annotations do not \
        exist in bricks (the packets carry neither); DATA gives the text itself; compressed \
        files are not uncompressed.",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        Keyword {
            name: "FILENAME",
            ty: "file name",
            default: None,
            doc: "the summary to read; `-` is standard input (mandatory unless DATA is given)",
        },
        Keyword {
            name: "DATA",
            ty: "string (bricks only)",
            default: None,
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
            name: "MULTIPACKET",
            ty: "boolean",
            default: Some("false"),
            doc: "make as many packets per flow as its packet count",
        },
        Keyword {
            name: "LINK",
            ty: "input, output or both",
            default: Some("input"),
            doc: "which interface the paint annotation gives",
        },
        Keyword {
            name: "TIMING",
            ty: "boolean",
            default: Some("false"),
            doc: "emit packets at the pace of their timestamps",
        },
        Keyword {
            name: "BURST",
            ty: "unsigned (bricks only)",
            default: Some("1"),
            doc: "packets per batch (up to 256)",
        },
    ],
    counters: &[
        ("count", "packets emitted"),
        ("bad_lines", "lines that are not a flow, skipped"),
    ],
    example: "FromNetFlowSummaryDump(DATA \"18.26.4.44|192.4.1.32|0|14|16|5|10932|998006995|998006999|80|3917|0|18|6|0\", STOP true)\n\
              -> ToIPSummaryDump(-, CONTENTS timestamp ip_src sport ip_dst dport ip_proto ip_len tcp_flags paint);",
    see_also: &["FromIPSummaryDump", "FromDump", "AggregateIPFlows"],
};

/// Which interface the paint annotation gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// The input interface.
    Input,
    /// The output interface.
    Output,
    /// Input in the upper 4 bits, output in the lower.
    Both,
}

/// One flow line: its packet (the flow's last), packet and byte counts,
/// start time.
#[derive(Debug)]
pub struct Flow {
    /// The packet, its timestamp the flow's end (or start).
    pub packet: Packet,
    /// Packets the flow counts.
    pub packets: u32,
    /// Bytes the flow counts.
    pub bytes: u32,
    /// The flow's start.
    pub first: Timestamp,
}

/// Click's `IntArg` on a 32-bit unsigned: decimal, or hex after `0x`.
fn int(w: &str) -> Option<u32> {
    match w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None if w.bytes().all(|b| b.is_ascii_digit()) => w.parse().ok(),
        None => None,
    }
}

/// Parses one data line (its newline removed); `None` when it is bad.
pub fn parse_line(line: &str, link: Link) -> Option<Flow> {
    let w: Vec<&str> = line.splitn(16, '|').take(15).collect();
    if w.len() < 15 {
        return None;
    }
    let mut ok = 0;
    let mut b = [0u8; 40];
    b[0] = 0x45;
    let first = int(w[7]).map(|j| Timestamp(u64::from(j) * 1_000_000_000));
    ok += usize::from(first.is_some());
    let first = first.unwrap_or_default();
    let mut ts = Timestamp::default();
    if let Some(j) = int(w[8]) {
        ts = if j == 0 {
            first
        } else {
            Timestamp(u64::from(j) * 1_000_000_000)
        };
        ok += 1;
    }
    let packets = int(w[5]);
    ok += usize::from(packets.is_some());
    let bytes = int(w[6]);
    ok += usize::from(bytes.is_some());
    let bytes = bytes.unwrap_or(0);
    let mut paint = None;
    let input = if link == Link::Output {
        Some(0)
    } else {
        int(w[3])
    };
    let output = if link == Link::Input {
        Some(0)
    } else {
        int(w[4])
    };
    if let (Some(i), Some(o)) = (input, output) {
        ok += 1;
        let m = if link == Link::Both { 15 } else { 255 };
        let i = i.min(m) << if link == Link::Both { 4 } else { 0 };
        paint = Some((i | o.min(m)) as u8);
    }
    for (word, at) in [(w[0], 12), (w[1], 16)] {
        if let Ok(a) = word.parse::<Ipv4Addr>() {
            b[at..at + 4].copy_from_slice(&a.octets());
            ok += 1;
        }
    }
    for (word, at) in [(w[13], 9), (w[14], 1)] {
        if let Some(j) = int(word).filter(|&j| j <= 0xff) {
            b[at] = j as u8;
            ok += 1;
        }
    }
    for (word, at) in [(w[9], 20), (w[10], 22)] {
        if let Some(j) = int(word).filter(|&j| j <= 0xffff) {
            b[at..at + 2].copy_from_slice(&(j as u16).to_be_bytes());
            ok += 1;
        }
    }
    if let Some(j) = int(w[12]).filter(|&j| j <= 0xff) {
        b[33] = j as u8;
        ok += 1;
    }
    if ok < 10 {
        return None;
    }
    let ip_len = bytes.min(65535) as u16;
    b[2..4].copy_from_slice(&ip_len.to_be_bytes());
    let n = flow_headers(&mut b, ip_len);
    let mut p = Packet::from_slice(&b[..n]).ok()?;
    p.set_network_header(0);
    let a = p.anno_mut();
    a.timestamp = ts;
    a.extra_length = bytes.saturating_sub(n as u32);
    if let Some(paint) = paint {
        a.paint = paint;
    }
    Some(Flow {
        packet: p,
        packets: packets.unwrap_or(1),
        bytes,
        first,
    })
}

/// Reads NetFlow summary lines.
pub struct NetflowReader {
    link: Link,
    multipacket: bool,
    pending: Option<Pending>,
    pending_pos: u64,
    lineno: u64,
    /// Lines that are not a flow.
    pub bad_lines: u64,
    complaints: Complaints,
    buf: Vec<u8>,
}

impl NetflowReader {
    /// A reader painting by `link`, making a packet per flow or, with
    /// `multipacket`, per packet the flow counts.
    pub fn new(link: Link, multipacket: bool) -> NetflowReader {
        NetflowReader {
            link,
            multipacket,
            pending: None,
            pending_pos: 0,
            lineno: 0,
            bad_lines: 0,
            complaints: Complaints::default(),
            buf: Vec::new(),
        }
    }

    fn bad(&mut self, input: &TraceInput, why: &str) {
        self.bad_lines += 1;
        let line = self.lineno;
        self.complaints
            .note(|| format!("{}:{line}: {why}", input.path.display()));
    }
}

impl RecordFormat for NetflowReader {
    fn next(&mut self, input: &mut TraceInput) -> Option<Record> {
        if let Some(p) = Pending::take(&mut self.pending, false) {
            return Some(Record {
                packet: p,
                ip: true,
                filepos: self.pending_pos,
            });
        }
        let mut buf = std::mem::take(&mut self.buf);
        // Bounded: each pass consumes a line or ends the file.
        let rec = loop {
            let filepos = input.pos;
            match input.read_line(&mut buf) {
                LineRead::End => break None,
                LineRead::TooLong => {
                    self.lineno += 1;
                    self.bad(input, "line longer than 4096 bytes");
                    continue;
                }
                LineRead::Line => self.lineno += 1,
            }
            let text = String::from_utf8_lossy(&buf);
            let t = text.trim_end_matches(['\n', '\r']);
            if t.is_empty() || t.starts_with(['!', '#']) {
                continue;
            }
            let Some(f) = parse_line(t, self.link) else {
                self.bad(input, "bad format");
                continue;
            };
            if !self.multipacket {
                break Some(Record {
                    packet: f.packet,
                    ip: true,
                    filepos,
                });
            }
            let count = f.packets.clamp(1, MAX_COUNT);
            let total = (f.packet.len() as u32).saturating_add(f.packet.anno().extra_length);
            self.pending = Some(Pending::new(f.packet, count, total, Some(f.first)));
            self.pending_pos = filepos;
            let p = Pending::take(&mut self.pending, false)?;
            break Some(Record {
                packet: p,
                ip: true,
                filepos,
            });
        };
        self.buf = buf;
        rec
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("bad_lines", self.bad_lines);
    }

    fn take_message(&mut self) -> Option<String> {
        self.complaints.take()
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let path: Option<PathBuf> = args.read_p("FILENAME")?;
    let data: Option<String> = args.read("DATA")?;
    let _zero: bool = args.read("ZERO")?.unwrap_or(true);
    let multipacket: bool = args.read("MULTIPACKET")?.unwrap_or(false);
    let link: String = args.read("LINK")?.unwrap_or_else(|| "input".into());
    let link = match link.to_ascii_lowercase().as_str() {
        "input" => Link::Input,
        "output" => Link::Output,
        "both" => Link::Both,
        _ => {
            return Err(ArgError::new(
                "'LINK' should be 'input', 'output', or 'both'",
            ))
        }
    };
    let input = TraceInput::open(path, data)?;
    let kw = Keywords {
        times: false,
        sample: false,
        packet_filepos: false,
    };
    Ok(Box::new(TraceSource::make(
        "FromNetFlowSummaryDump",
        kw,
        args,
        ports,
        input,
        Box::new(NetflowReader::new(link, multipacket)),
        Vec::new(),
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::TaskResult;
    use bricks_runtime::testing::Harness;

    const LINE: &str = "192.4.1.32|18.26.4.44|0|14|16|5|10932|998006995|998006999|3917|80|0|18|6|0";

    #[test]
    fn clicks_example_line() {
        let f = parse_line(LINE, Link::Input).unwrap();
        let d = f.packet.data();
        assert_eq!(d.len(), 40);
        assert_eq!(&d[..4], &[0x45, 0, 0x2a, 0xb4]);
        assert_eq!(d[9], 6);
        assert_eq!(&d[12..16], &[192, 4, 1, 32]);
        assert_eq!(&d[16..20], &[18, 26, 4, 44]);
        assert_eq!(&d[20..24], &[0x0f, 0x4d, 0, 80]);
        assert_eq!((d[32], d[33]), (0x50, 18));
        assert_eq!(f.packet.anno().timestamp.secs(), 998_006_999);
        assert_eq!(f.packet.anno().extra_length, 10932 - 40);
        assert_eq!(f.packet.anno().paint, 14);
        assert_eq!(
            (f.packets, f.bytes, f.first.secs()),
            (5, 10932, 998_006_995)
        );
        assert_eq!(
            parse_line(LINE, Link::Output).unwrap().packet.anno().paint,
            16
        );
        // Both: 14 and 16, at most 15 each.
        assert_eq!(
            parse_line(LINE, Link::Both).unwrap().packet.anno().paint,
            0xef
        );
    }

    #[test]
    fn udp_other_protocols_and_bad_lines() {
        let udp = LINE.replace("|18|6|0", "|0|17|4");
        let f = parse_line(&udp, Link::Input).unwrap();
        assert_eq!(f.packet.len(), 28);
        assert_eq!(&f.packet.data()[24..26], &(10932u16 - 20).to_be_bytes());
        assert_eq!(f.packet.data()[1], 4);
        let icmp = LINE
            .replace("|18|6|0", "|0|1|0")
            .replace("|10932|", "|70000|");
        let f = parse_line(&icmp, Link::Input).unwrap();
        assert_eq!(f.packet.len(), 20);
        assert_eq!(&f.packet.data()[2..4], &[0xff, 0xff]);
        assert_eq!(f.packet.anno().extra_length, 70000 - 20);
        // An end time of 0: the start time.
        let f = parse_line(&LINE.replace("|998006999|", "|0|"), Link::Input).unwrap();
        assert_eq!(f.packet.anno().timestamp.secs(), 998_006_995);
        // Two unreadable things are tolerated, three are not.
        let two = LINE.replace("192.4.1.32|18.26.4.44", "x|y");
        assert!(parse_line(&two, Link::Input).is_some());
        let three = two.replace("|3917|", "|z|");
        assert!(parse_line(&three, Link::Input).is_none());
        assert!(parse_line("1|2|3", Link::Input).is_none());
        assert!(parse_line(&LINE.replace("|6|0", "|600|0"), Link::Input).is_some());
    }

    #[test]
    fn the_element_reads_lines_and_multipackets() {
        let text = format!("!comment\n\n{LINE}\nnonsense\n{LINE}\r\n");
        let mut h = Harness::push(&CLASS, &format!("DATA \"{text}\", BURST 8"), 0, 1);
        while h.run_task() != TaskResult::Done {}
        assert_eq!(h.take(0).len(), 2);
        assert_eq!(h.stats().get("bad_lines"), Some(1));
        assert_eq!(h.read_handler("filepos").unwrap(), text.len().to_string());
        let mut h = Harness::push(
            &CLASS,
            &format!("DATA \"{LINE}\", MULTIPACKET true, BURST 8"),
            0,
            1,
        );
        while h.run_task() != TaskResult::Done {}
        let ps = h.take(0);
        let lens: Vec<u16> = ps
            .iter()
            .map(|p| u16::from_be_bytes([p.data()[2], p.data()[3]]))
            .collect();
        // 10932 bytes in 5 packets: 2186 each, the last 2188.
        assert_eq!(lens, vec![2186, 2186, 2186, 2186, 2188]);
        let ts: Vec<u64> = ps.iter().map(|p| p.anno().timestamp.secs()).collect();
        assert_eq!(
            ts,
            vec![
                998_006_995,
                998_006_996,
                998_006_997,
                998_006_998,
                998_006_999
            ]
        );
        assert_eq!(ps[0].anno().extra_length, 2186 - 40);
        assert!(Harness::try_new(
            &CLASS,
            "DATA x, LINK sideways",
            PortInfo {
                inputs: vec![],
                outputs: vec![bricks_element::Processing::Push],
            }
        )
        .is_err());
    }
}
