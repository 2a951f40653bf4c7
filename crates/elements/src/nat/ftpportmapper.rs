//! `FTPPortMapper`: makes active FTP work through a NAPT (Click's
//! `elements/app/ftpportmapper.cc`). An FTP client's `PORT h1,h2,h3,h4,p1,p2`
//! command (RFC 959 section 4.1.2) names the address and port the server
//! connects back to; behind a NAPT that address is private. This element
//! maps the data connection in a rewriter, writes the mapped address and
//! port into the command, and tells the control connection's TCPRewriter
//! that later sequence numbers move by the change in length.

use super::flow::{self, Tuple, PROTO_TCP};
use super::rewriter::{Shared, REWRITER_CLASSES};
use crate::ip::header::{be16, be32};
use crate::ip::transport::segment_checksum;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::checksum;
use std::sync::Arc;

/// The `FTPPortMapper` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FTPPortMapper",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "manipulates IPRewriter for FTP",
    synopsis: "FTPPortMapper(CONTROL_REWRITER, DATA_REWRITER, DATA_REWRITER_INPUT)",
    description: "Expects FTP control packets (TCP) and rewrites the PORT commands in them so \
        that FTP works through a NAPT. CONTROL_REWRITER is the TCPRewriter the control \
        packets pass through after this element; DATA_REWRITER (an IPRewriter, TCPRewriter or \
        UDPRewriter, possibly the same) is the one the data connection passes through; \
        DATA_REWRITER_INPUT is the input of DATA_REWRITER whose spec maps the data \
        connection, as if its first packet had arrived there. For a packet from 1.0.0.2:6587 \
        to 2.0.0.2:21 carrying `PORT 1,0,0,2,3,9` (1.0.0.2:777), with that input's pattern \
        `1.0.0.1 9000-14000 - -`, FTPPortMapper makes (or finds) the mapping of the flow \
        (1.0.0.2, 777, 2.0.0.2, 20) => (1.0.0.1, 9000, 2.0.0.2, 20) and its reply, rewrites \
        the command to `PORT 1,0,0,1,35,40`, fixes the IP length and the IP and TCP \
        checksums, and records in CONTROL_REWRITER's mapping of the control flow that the \
        sequence numbers after the command move by the change in length, so that the \
        TCPRewriter shifts later sequence numbers, the replies' acknowledgements and SACK \
        blocks. The packet's addresses and ports are not changed here. A PORT command is \
        recognised only at the start of a packet's payload, whole in that packet, ending in \
        CR or LF (`PORT`, any case, then spaces, then six numbers of 1 to 3 digits below \
        256 separated by commas); the data connection's destination port is taken to be \
        one below the control packet's destination port. Packets of no control mapping, \
        that are not PORT commands, or whose command is malformed (counted in `bad_port`) \
        pass unchanged. The command is also left alone when the data rewriter refuses the \
        mapping, or when the packet has no room to grow (`no_room`). A batch passes this \
        element whole before the TCPRewriter sees it: a PORT command in the same batch as \
        its connection's first packet finds no control mapping yet. Click warns when \
        CONTROL_REWRITER is not downstream; bricks does not check.",
    ports: "one input, one output; push or pull (agnostic)",
    keywords: &[
        Keyword {
            name: "CONTROL_REWRITER",
            ty: "TCPRewriter name",
            default: None,
            doc: "the rewriter the control packets pass through next",
        },
        Keyword {
            name: "DATA_REWRITER",
            ty: "IPRewriter, TCPRewriter or UDPRewriter name",
            default: None,
            doc: "the rewriter that maps the data connection",
        },
        Keyword {
            name: "DATA_REWRITER_INPUT",
            ty: "input port number",
            default: None,
            doc: "the input of DATA_REWRITER whose spec maps the data connection",
        },
    ],
    counters: &[
        ("rewritten", "PORT commands rewritten"),
        ("bad_port", "PORT commands not understood, left unchanged"),
        ("no_control", "PORT commands of a flow CONTROL_REWRITER has no mapping for"),
        ("no_data", "PORT commands whose data connection DATA_REWRITER did not map"),
        ("no_room", "PORT commands a packet had no room to grow for"),
    ],
    example: "IPRewriterPatterns(pat 1.0.0.1 1024-65535# - -);\n\
        rw :: TCPRewriter(pattern pat 0 1, drop);\n\
        InfiniteSource(DATA \\<45 00 00 28 00 00 00 00 40 06 66 ce 0a 00 00 01 0a 00 00 02 04 d2 00 15 00 00 00 01 00 00 00 00 50 02 20 00 76 f8 00 00>, LIMIT 1)\n\
        -> FTPPortMapper(rw, rw, 0) -> rw -> Discard;\n\
        Idle -> [1]rw[1] -> Discard;",
    see_also: &["TCPRewriter", "IPRewriter", "IPRewriterPatterns"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let control: Arc<Shared> = args.read_shared_of_mp("CONTROL_REWRITER", "TCPRewriter")?;
    let name: String = args.read_mp("DATA_REWRITER")?;
    let data: Arc<Shared> = args
        .shared_of_name(&name, REWRITER_CLASSES)
        .map_err(|why| ArgError::new(format!("bad DATA_REWRITER: {why}")))?;
    if !data.maps_ports() {
        return Err(ArgError::new(format!(
            "DATA_REWRITER `{name}` maps no ports (an IPRewriter, TCPRewriter or UDPRewriter is needed)"
        )));
    }
    let input: usize = args.read_mp("DATA_REWRITER_INPUT")?;
    if input >= data.ninputs() {
        return Err(ArgError::new("DATA_REWRITER_INPUT out of range"));
    }
    Ok(Box::new(FtpPortMapper {
        control,
        data,
        input,
        c: Counts::default(),
    }))
}

#[derive(Debug, Default)]
struct Counts {
    rewritten: u64,
    bad_port: u64,
    no_control: u64,
    no_data: u64,
    no_room: u64,
}

/// One worker's FTPPortMapper.
#[derive(Debug)]
pub struct FtpPortMapper {
    control: Arc<Shared>,
    data: Arc<Shared>,
    input: usize,
    c: Counts,
}

/// A PORT command's argument: where it is in the payload and what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortArg {
    /// Offsets of the argument (after `PORT` and its spaces) in the
    /// payload, end exclusive (the CR or LF).
    pub start: usize,
    pub end: usize,
    pub addr: u32,
    pub port: u16,
}

/// Why a payload's PORT command is not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotPort {
    /// The payload does not start with `PORT `.
    NoCommand,
    /// It does, but what follows is not six numbers ending a line.
    Malformed,
}

/// Whether `payload` starts with `PORT ` (any case): Click looks for the
/// command there only.
pub fn is_port_command(payload: &[u8]) -> bool {
    payload.len() >= 5 && payload[..4].eq_ignore_ascii_case(b"PORT") && payload[4] == b' '
}

/// Parses the PORT command at the start of `payload` (RFC 959 section
/// 4.1.2: `PORT h1,h2,h3,h4,p1,p2`) strictly: every number has 1 to 3
/// digits and is below 256, and the command ends with CR or LF.
pub fn parse_port(payload: &[u8]) -> Result<PortArg, NotPort> {
    if !is_port_command(payload) {
        return Err(NotPort::NoCommand);
    }
    let mut pos = 5;
    while payload.get(pos) == Some(&b' ') {
        pos += 1;
    }
    let start = pos;
    let mut nums = [0u32; 6];
    for (i, n) in nums.iter_mut().enumerate() {
        let digits = payload[pos..]
            .iter()
            .take(4)
            .take_while(|b| b.is_ascii_digit())
            .count();
        if !(1..=3).contains(&digits) {
            return Err(NotPort::Malformed);
        }
        *n = payload[pos..pos + digits]
            .iter()
            .fold(0, |v, b| v * 10 + u32::from(b - b'0'));
        if *n > 255 {
            return Err(NotPort::Malformed);
        }
        pos += digits;
        if i < 5 {
            if payload.get(pos) != Some(&b',') {
                return Err(NotPort::Malformed);
            }
            pos += 1;
        }
    }
    if !matches!(payload.get(pos), Some(b'\r' | b'\n')) {
        return Err(NotPort::Malformed);
    }
    Ok(PortArg {
        start,
        end: pos,
        addr: (nums[0] << 24) | (nums[1] << 16) | (nums[2] << 8) | nums[3],
        port: ((nums[4] << 8) | nums[5]) as u16,
    })
}

/// The argument of a PORT command for `addr`:`port`.
pub fn unparse_port(addr: u32, port: u16) -> String {
    let a = addr.to_be_bytes();
    format!(
        "{},{},{},{},{},{}",
        a[0],
        a[1],
        a[2],
        a[3],
        port >> 8,
        port & 0xff
    )
}

impl FtpPortMapper {
    fn process(&mut self, p: &mut Packet, now_ms: u64) {
        let ip = p.l3_bytes();
        let Ok(f) = flow::parse(ip) else { return };
        if f.proto != PROTO_TCP || !f.transport || ip.len() < f.ihl + 20 {
            return;
        }
        let total = usize::from(be16(ip, 2)).clamp(f.ihl, ip.len());
        let data_off = f.ihl + usize::from(ip[f.ihl + 12] >> 4) * 4;
        if data_off > total || data_off < f.ihl + 20 {
            return;
        }
        let payload = &ip[data_off..total];
        if !is_port_command(payload) {
            return;
        }
        let control_key = self.control.key(f.tuple, PROTO_TCP);
        let Some(ce) = self.control.set.peek(&control_key, now_ms) else {
            self.c.no_control += 1;
            return;
        };
        let arg = match parse_port(payload) {
            Ok(a) => a,
            Err(_) => {
                self.c.bad_port += 1;
                return;
            }
        };
        let data_flow = Tuple {
            saddr: arg.addr,
            sport: arg.port,
            daddr: f.tuple.daddr,
            dport: f.tuple.dport.wrapping_sub(1),
        };
        let Some(de) = self
            .data
            .get_entry(self.data.key(data_flow, PROTO_TCP), self.input, now_ms)
        else {
            self.c.no_data += 1;
            return;
        };
        let text = unparse_port(de.new.saddr, de.new.sport);
        let new = text.as_bytes();
        let old_len = arg.end - arg.start;
        let seq = be32(ip, f.ihl + 4);
        let payload_len = payload.len();
        // Offsets from the IP header.
        let (a0, a1) = (data_off + arg.start, data_off + arg.end);
        let buf_len = ip.len();
        if new.len() > old_len {
            let grow = new.len() - old_len;
            if total + grow > usize::from(u16::MAX) || p.put_back(grow).is_err() {
                self.c.no_room += 1;
                return;
            }
            let ip = p.l3_bytes_mut();
            ip.copy_within(a1..buf_len, a1 + grow);
            ip[a0..a0 + new.len()].copy_from_slice(new);
        } else {
            let shrink = old_len - new.len();
            let ip = p.l3_bytes_mut();
            ip.copy_within(a1..buf_len, a0 + new.len());
            ip[a0..a0 + new.len()].copy_from_slice(new);
            p.take_back(shrink);
        }
        let delta = new.len() as i32 - old_len as i32;
        let new_total = (total as i32 + delta) as usize;
        let ip = p.l3_bytes_mut();
        let old_word = be16(ip, 2);
        ip[2..4].copy_from_slice(&(new_total as u16).to_be_bytes());
        let sum = checksum::update(be16(ip, 10), old_word, new_total as u16);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let ihl = f.ihl;
        ip[ihl + 16..ihl + 18].fill(0);
        let (hdr, seg) = ip.split_at_mut(ihl);
        let seg = &mut seg[..new_total - ihl];
        let sum = segment_checksum(hdr, ihl, seg);
        seg[16..18].copy_from_slice(&sum.to_be_bytes());
        // The bytes after the command move by `delta` from the sequence
        // number after the original payload on.
        let trigger = seq.wrapping_add(payload_len as u32);
        let _ = self
            .control
            .set
            .add_seq_delta(ce.slot, ce.reply, trigger, delta);
        // The data connection's replies get the control flow's reply
        // annotation, as Click gives them.
        if self.data.reply_paint() {
            let anno = self.control.set.reply_anno(ce.slot);
            self.data.set.set_reply_anno(de.slot, anno);
        }
        self.c.rewritten += 1;
    }
}

impl Element for FtpPortMapper {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now_ms = cx.now().0 / 1_000_000;
        for p in batch.iter_mut() {
            self.process(p, now_ms);
        }
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let now_ms = cx.now().0 / 1_000_000;
        cx.pull_with(out, max, |b, _| {
            for p in b.iter_mut() {
                self.process(p, now_ms);
            }
        });
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("rewritten", self.c.rewritten);
        s.counter("bad_port", self.c.bad_port);
        s.counter("no_control", self.c.no_control);
        s.counter("no_data", self.c.no_data);
        s.counter("no_room", self.c.no_room);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_commands_are_parsed_strictly() {
        let a = parse_port(b"PORT 200,200,200,200,200,200\r\n").unwrap();
        assert_eq!((a.start, a.end), (5, 28));
        assert_eq!(a.addr, 0xc8c8_c8c8);
        assert_eq!(a.port, 200 * 256 + 200);
        let a = parse_port(b"port   1,0,0,2,3,9\n").unwrap();
        assert_eq!((a.start, a.addr, a.port), (7, 0x0100_0002, 777));
        assert_eq!(unparse_port(0x0100_0001, 9000), "1,0,0,1,35,40");
        assert_eq!(parse_port(b"PASV\r\n"), Err(NotPort::NoCommand));
        assert_eq!(parse_port(b"PORTS 1,2"), Err(NotPort::NoCommand));
        assert_eq!(parse_port(b"PORT"), Err(NotPort::NoCommand));
        for bad in [
            &b"PORT 1,2,3,4,5,6"[..],
            b"PORT 1,2,3,4,5,6 \n",
            b"PORT 1,2,3,4,5\n",
            b"PORT 1,2,3,4,5,6,7\n",
            b"PORT 256,0,0,1,0,1\n",
            b"PORT 0001,0,0,1,0,1\n",
            b"PORT 99999999999999999999,0,0,1,0,1\n",
            b"PORT ,,,,,\n",
            b"PORT 1,,3,4,5,6\n",
            b"PORT -1,2,3,4,5,6\n",
            b"PORT \n",
            b"PORT ",
        ] {
            assert_eq!(parse_port(bad), Err(NotPort::Malformed), "{bad:?}");
        }
    }

    #[test]
    fn no_bytes_make_the_parser_panic() {
        // Every prefix of a command and a spread of byte values.
        let cmd = b"PORT 192,168,0,10,255,254\r\n";
        for n in 0..=cmd.len() {
            let _ = parse_port(&cmd[..n]);
        }
        let mut x = 0x1234_5678u32;
        for _ in 0..2000 {
            let mut v = b"PORT ".to_vec();
            for _ in 0..(x % 40) {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                v.push(b"0123456789,\r\n 99"[(x >> 16) as usize % 16]);
            }
            let _ = parse_port(&v);
        }
    }

    /// A real FTP control packet, 10.0.0.1:1234 -> 10.0.0.2:21, carrying
    /// `PORT 10,0,0,1,4,210\r\n` (10.0.0.1:1234), checksums right.
    fn port_packet() -> Vec<u8> {
        let payload = b"PORT 10,0,0,1,4,210\r\n";
        let mut p = super::super::flow::testing::packet(
            6,
            [10, 0, 0, 1],
            1234,
            [10, 0, 0, 2],
            21,
            payload.len(),
        );
        p[40..].copy_from_slice(payload);
        p[36..38].fill(0);
        let (ip, t) = p.split_at_mut(20);
        let s = segment_checksum(ip, 20, t);
        t[16..18].copy_from_slice(&s.to_be_bytes());
        p
    }

    /// Through a router: the first packet makes the control mapping (the
    /// mapper sees none yet), the second has its command rewritten.
    #[test]
    fn a_port_command_is_rewritten_behind_its_control_mapping() {
        use bricks_config::{Source, SourceMap};
        let hex: String = port_packet().iter().map(|b| format!("{b:02x}")).collect();
        let text = format!(
            "rw :: TCPRewriter(pattern 1.0.0.1 1024-65535# - - 0 1, drop);\n\
             InfiniteSource(DATA \\<{hex}>, LIMIT 2, BURST 1, STOP true)\n\
             -> f :: FTPPortMapper(rw, rw, 0) -> rw -> CheckIPHeader -> CheckTCPHeader -> c :: Counter -> Discard;\n\
             Idle -> [1]rw[1] -> Discard;"
        );
        let mut map = SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            Source {
                name: "ftp".into(),
                text,
            },
        )
        .unwrap_or_else(|d| panic!("{}", map.render(&d[0])));
        let plan = bricks_runtime::build(&router, &crate::registry())
            .unwrap_or_else(|d| panic!("{}", map.render(&d[0])));
        let mut engine = bricks_runtime::Engine::new(&plan).unwrap();
        engine.idle_sleep = false;
        let summary = engine.run();
        let stats = |class: &str| {
            &summary
                .elements
                .iter()
                .find(|e| e.class == class)
                .unwrap()
                .stats
        };
        let f = stats("FTPPortMapper");
        assert_eq!(f.get("no_control"), Some(1));
        assert_eq!(f.get("rewritten"), Some(1));
        // Both passed the header checks: lengths and checksums right.
        assert_eq!(stats("Counter").get("count"), Some(2));
        // "10,0,0,1,4,210" became "1,0,0,1,4,1" (1.0.0.1:1025): 3 bytes
        // fewer.
        assert_eq!(
            stats("Counter").get("byte_count"),
            Some(2 * port_packet().len() as u64 - 3)
        );
    }
}
