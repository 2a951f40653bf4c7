//! `FastTCPFlows`: a benchmark generator of short TCP flows over IPv4
//! (Click's `elements/tcpudp/fasttcpflows.cc`): each flow is a SYN, data
//! segments with PSH and ACK, and a FIN, between random ports, as Click's
//! code builds them. The segments are no real connection: their sequence
//! and acknowledgment numbers are fixed per flow and per kind of segment,
//! so that a packet costs a copy and one 20-byte checksum. The headers are
//! Click's: IPv4 ID 0, TTL 250, no fragment bits, TCP data offset 5,
//! window 65535, a zero payload, the TCP checksum over the IPv4
//! pseudo-header (RFC 9293 section 3.1).
//!
//! Pacing, LIMIT and the handlers are FastUDPFlows' (`super::fast_udp`).

use super::fast_udp::{kw, Flow, FlowSpec, Sender, SplitMix, LENGTH, LIMIT, RATE};
use super::source::{Emitter, LIMIT_KEYWORDS};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_wire::checksum;
use bricks_wire::ethernet::EthernetAddress;
use bricks_wire::ip::IpProtocol;
use std::net::Ipv4Addr;

/// The `FastTCPFlows` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FastTCPFlows",
    ports: "0/1",
    processing: "/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "creates packet flows with static TCP/IP/Ethernet headers",
    synopsis: "FastTCPFlows(RATE, LIMIT, LENGTH, SRCETH, SRCIP, DSTETH, DSTIP, FLOWS, FLOWSIZE \
        [, ACTIVE, KEYWORDS])",
    description: "A benchmark tool: sends TCP/IPv4/Ethernet frames of LENGTH bytes from \
        SRCIP to DSTIP at RATE packets per second, LIMIT in all, in FLOWS flows with random \
        source and destination ports. Each packet belongs to a flow picked at random; a \
        flow's first packet is a SYN, its FLOWSIZE-th a FIN, and those between carry PSH \
        and ACK; after its FIN a flow takes new random ports and starts again with a SYN. \
        Every flow's three kinds of segment have their own fixed random sequence and \
        acknowledgment numbers, so that the checksums need no recomputing beyond the \
        ports (Click's \"invalid sequence numbers\"). When LIMIT packets are sent, a FIN \
        closes each flow still open, paced like the rest and counted; then the source \
        is done (STOP, END_CALL). After LIMIT the `rate` handler reads the average rate \
        between the first and the last packet (Click's); writing `rate` sets RATE. \
        Writing `active` true starts the count over. The random numbers come from a \
        SplitMix64 generator seeded with SEED, so that a run repeats.\n\n\
        Differences from Click: at LIMIT, Click also sends a FIN on each flow that never \
        sent its SYN; bricks closes only the flows that are open. Click stores the \
        random ports in host byte order; bricks writes them in network order (random \
        either way).",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        RATE,
        LIMIT,
        LENGTH,
        kw("SRCETH", "Ethernet address", "source Ethernet address"),
        kw("SRCIP", "IPv4 address", "source address"),
        kw("DSTETH", "Ethernet address", "destination Ethernet address"),
        kw("DSTIP", "IPv4 address", "destination address"),
        kw("FLOWS", "unsigned", "number of flows (1 to 1048576)"),
        kw(
            "FLOWSIZE",
            "unsigned",
            "packets per flow, SYN and FIN included; below 3 becomes 3, as in Click",
        ),
        LIMIT_KEYWORDS[1],
        Keyword {
            name: "SEED",
            ty: "unsigned",
            default: Some("1"),
            doc: "seed of the flow choice, the ports and the sequence numbers",
        },
        LIMIT_KEYWORDS[2],
        LIMIT_KEYWORDS[3],
        LIMIT_KEYWORDS[4],
    ],
    counters: &[(
        "count",
        "packets sent since the last reset, closing FINs included",
    )],
    example: "FastTCPFlows(0, 100, 60, 0:0:0:0:0:1, 10.0.0.1, 0:0:0:0:0:2, 10.0.0.2, 10, 5) \
        -> Discard;",
    see_also: &["FastUDPFlows", "FastUDPSource"],
};

/// The three segments of a flow, as indexes into the templates.
const SYN: usize = 0;
const DATA: usize = 1;
const FIN: usize = 2;
/// Their TCP flags (RFC 9293 section 3.1): SYN; PSH and ACK; FIN.
const FLAGS: [u8; 3] = [0x02, 0x18, 0x01];
/// Where the TCP header starts in the frame.
const TCP: usize = 34;

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let spec = FlowSpec::read(args)?;
    let (e, flows, rng, seed) = spec.finish(args, ports)?;
    Ok(Box::new(FastTCPFlows {
        s: Sender::new(e, spec.rate),
        gen: TcpFlowGen {
            frames: TcpFrames::new(spec.len, spec.src_eth, spec.src, spec.dst_eth, spec.dst),
            flows,
            // Click: "warning: flow size < 3, defaulting to 3".
            flowsize: spec.flowsize.max(3),
            open: 0,
            cursor: 0,
            // The sequence numbers' own key, apart from the flow choice.
            key: SplitMix(seed ^ 0x5eed_5eed).next(),
            rng,
        },
    }))
}

/// The three template frames (SYN, data, FIN) with everything but the
/// ports, sequence numbers and checksum, and the pseudo-header's sum.
#[derive(Debug)]
struct TcpFrames {
    frames: [Vec<u8>; 3],
    pseudo: u16,
    dst: Ipv4Addr,
}

impl TcpFrames {
    fn new(
        len: usize,
        src_eth: EthernetAddress,
        src: Ipv4Addr,
        dst_eth: EthernetAddress,
        dst: Ipv4Addr,
    ) -> TcpFrames {
        let frame = |flags: u8| {
            let mut f = vec![0u8; len];
            f[0..6].copy_from_slice(&dst_eth.0);
            f[6..12].copy_from_slice(&src_eth.0);
            f[12..14].copy_from_slice(&[0x08, 0x00]);
            let ip = &mut f[14..34];
            ip[0] = 0x45;
            ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
            ip[8] = 250;
            ip[9] = 6;
            ip[12..16].copy_from_slice(&src.octets());
            ip[16..20].copy_from_slice(&dst.octets());
            let sum = !checksum::data(ip);
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
            let tcp = &mut f[TCP..TCP + 20];
            tcp[12] = 5 << 4;
            tcp[13] = flags;
            tcp[14..16].copy_from_slice(&65535u16.to_be_bytes());
            f
        };
        TcpFrames {
            frames: FLAGS.map(frame),
            pseudo: checksum::pseudo_header_v4(src, dst, IpProtocol::TCP, (len - TCP) as u16),
            dst,
        }
    }

    /// Writes segment `kind` of a flow into `p`: its ports, sequence and
    /// acknowledgment numbers and checksum. The payload is zeros, so the
    /// header and the pseudo-header are the whole sum.
    fn write(&self, p: &mut Packet, kind: usize, sport: u16, dport: u16, seq_ack: u64) {
        if p.set_frame(&self.frames[kind]).is_err() {
            return;
        }
        let tcp = &mut p.data_mut()[TCP..TCP + 20];
        tcp[0..2].copy_from_slice(&sport.to_be_bytes());
        tcp[2..4].copy_from_slice(&dport.to_be_bytes());
        tcp[4..12].copy_from_slice(&seq_ack.to_be_bytes());
        let sum = !checksum::combine(&[checksum::data(tcp), self.pseudo]);
        tcp[16..18].copy_from_slice(&sum.to_be_bytes());
        p.set_network_header(14);
        p.anno_mut().dst_ip = self.dst;
    }
}

/// Sends the packets of many TCP flows.
#[derive(Debug)]
pub struct FastTCPFlows {
    s: Sender,
    gen: TcpFlowGen,
}

/// FastTCPFlows' frames and flows.
#[derive(Debug)]
struct TcpFlowGen {
    frames: TcpFrames,
    flows: Vec<Flow>,
    flowsize: u32,
    /// Flows that sent their SYN and not yet their FIN.
    open: usize,
    /// Where the search for an open flow to close goes on from.
    cursor: usize,
    /// Key of the sequence numbers.
    key: u64,
    rng: SplitMix,
}

impl TcpFlowGen {
    /// The sequence and acknowledgment numbers of segment `kind` of flow
    /// `i`: fixed for the flow's life, as Click draws them once per flow.
    fn seq_ack(&self, i: usize, kind: usize) -> u64 {
        SplitMix(self.key ^ ((i as u64) << 2 | kind as u64)).next()
    }

    /// Makes `n` packets: the flows' segments before LIMIT, closing FINs
    /// after it (a batch is all one or all the other).
    fn make(&mut self, e: &mut Emitter, b: &mut Batch, n: usize, cx: &Context<'_>) {
        let closing = e.remaining() == 0;
        e.fill_with(b, n, cx, |p: &mut Packet| {
            let (i, kind) = if closing {
                match self.close_one() {
                    Some(i) => (i, FIN),
                    // Cannot happen: at most `open` packets are asked for.
                    None => return,
                }
            } else {
                self.next_segment()
            };
            let f = self.flows[i];
            let seq_ack = self.seq_ack(i, kind);
            self.frames.write(p, kind, f.sport, f.dport, seq_ack);
        });
    }

    /// Click's `get_packet` before LIMIT: a random flow's next segment.
    fn next_segment(&mut self) -> (usize, usize) {
        let i = (self.rng.next() >> 2) as usize % self.flows.len();
        let f = &mut self.flows[i];
        if f.sent == self.flowsize {
            f.sport = self.rng.port();
            f.dport = self.rng.port();
            f.sent = 0;
        }
        f.sent += 1;
        // FLOWSIZE is at least 3: the first and the last differ.
        if f.sent == 1 {
            self.open += 1;
            (i, SYN)
        } else if f.sent == self.flowsize {
            self.open -= 1;
            (i, FIN)
        } else {
            (i, DATA)
        }
    }

    /// The next open flow, now closed; `None` when none is open. All the
    /// closing FINs together scan the flows about once.
    fn close_one(&mut self) -> Option<usize> {
        if self.open == 0 {
            return None;
        }
        let n = self.flows.len();
        // Bounded: `open` > 0 flows are open, so a full turn finds one.
        for _ in 0..n {
            let i = self.cursor;
            self.cursor = (self.cursor + 1) % n;
            let f = &mut self.flows[i];
            if f.sent > 0 && f.sent < self.flowsize {
                f.sent = self.flowsize;
                self.open -= 1;
                return Some(i);
            }
        }
        None
    }
}

impl Element for FastTCPFlows {
    fn task_kind(&self) -> TaskKind {
        if self.s.e.pull {
            TaskKind::None
        } else {
            TaskKind::Source
        }
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let gen = &mut self.gen;
        let tail = gen.open as u64;
        self.s
            .run_with_tail(cx, tail, |e, b, n, cx| gen.make(e, b, n, cx))
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        self.s.e.run_timer(cx);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let gen = &mut self.gen;
        let tail = gen.open as u64;
        self.s
            .pull_with_tail(out, max, cx, tail, |e, b, n, cx| gen.make(e, b, n, cx));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.s.e.count);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        self.s.read(handler)
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("count"),
            Handler::rw("rate"),
            Handler::w("reset"),
            Handler::w("active"),
            Handler::w("limit"),
        ];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.s.write(handler, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element, Harness};
    use bricks_wire::tcp::TcpPacket;

    const ARGS: &str = "0, 30, 60, 00:11:22:33:44:55, 10.0.0.1, 66:77:88:99:aa:bb, \
                        10.0.0.2, 4, 3";

    /// RFC 1071 the slow way, for the test's own check.
    fn sum(words: &[u8]) -> u16 {
        let mut s: u32 = 0;
        for c in words.chunks(2) {
            s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    /// Whether frame `f`'s IPv4 and TCP checksums are right, summed here
    /// apart from the wire crate, and the wire crate agrees.
    fn checksums_ok(f: &[u8]) -> bool {
        let mut pseudo = Vec::from(&f[26..34]);
        pseudo.extend_from_slice(&[0, 6]);
        pseudo.extend_from_slice(&((f.len() - 34) as u16).to_be_bytes());
        pseudo.extend_from_slice(&f[34..]);
        let tcp = TcpPacket::new_checked(&f[34..]).unwrap();
        let src = Ipv4Addr::new(f[26], f[27], f[28], f[29]);
        let dst = Ipv4Addr::new(f[30], f[31], f[32], f[33]);
        sum(&f[14..34]) == 0xffff && sum(&pseudo) == 0xffff && tcp.verify_checksum_v4(src, dst)
    }

    fn run_all(h: &mut Harness) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        // Bounded: LIMIT plus at most FLOWS closing FINs.
        for _ in 0..1000 {
            match h.run_task() {
                TaskResult::Worked => out.extend(h.take_bytes(0)),
                _ => break,
            }
        }
        out
    }

    #[test]
    fn frame_bytes_are_clicks() {
        let mut h = Harness::push(&CLASS, ARGS, 0, 1);
        let frames = run_all(&mut h);
        let f = &frames[0];
        assert_eq!(f.len(), 60);
        // Everything but the ports, sequence numbers and checksum, field
        // by field from Click's `initialize`.
        let fixed: [(usize, &[u8]); 6] = [
            (0, &[0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb]),
            (6, &[0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x00]),
            // IPv4: length 46, ID 0, no fragment bits, TTL 250, TCP.
            (14, &[0x45, 0x00, 0x00, 0x2e, 0, 0, 0, 0, 0xfa, 0x06]),
            (24, &[0xac, 0xc7, 10, 0, 0, 1, 10, 0, 0, 2]),
            // Data offset 5, SYN, window 65535.
            (46, &[0x50, 0x02, 0xff, 0xff]),
            // Urgent pointer 0, six bytes of zero payload.
            (52, &[0, 0, 0, 0, 0, 0, 0, 0]),
        ];
        for (at, bytes) in fixed {
            assert_eq!(&f[at..at + bytes.len()], bytes, "at {at}");
        }
        assert!(checksums_ok(f));
        let p = {
            let mut h = Harness::push(&CLASS, ARGS, 0, 1);
            h.run_task();
            h.take(0).remove(0)
        };
        assert_eq!(p.anno().dst_ip, Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(p.network_header_offset(), Some(14));
    }

    /// Each flow (by its ports) is SYN, data, FIN in that order, FLOWSIZE
    /// packets; at LIMIT the open flows get their FIN; every checksum is
    /// right.
    #[test]
    fn flows_are_syn_data_fin_and_close_at_limit() {
        let mut h = Harness::push(&CLASS, ARGS, 0, 1);
        let frames = run_all(&mut h);
        assert!(frames.len() >= 30 && frames.len() <= 34, "{}", frames.len());
        let count: usize = h.read_handler("count").unwrap().parse().unwrap();
        assert_eq!(count, frames.len(), "closing FINs are counted");
        let mut flows: std::collections::HashMap<[u8; 4], Vec<u8>> = Default::default();
        let mut seq: std::collections::HashMap<([u8; 4], u8), [u8; 8]> = Default::default();
        for f in &frames {
            assert!(checksums_ok(f));
            let ports: [u8; 4] = f[34..38].try_into().unwrap();
            let flags = f[47];
            flows.entry(ports).or_default().push(flags);
            // A flow's segments of one kind all carry the same numbers.
            let numbers: [u8; 8] = f[38..46].try_into().unwrap();
            assert_eq!(*seq.entry((ports, flags)).or_insert(numbers), numbers);
        }
        for (ports, kinds) in &flows {
            // Ports repeat only by chance; 16 random bits each side make
            // that unlikely with this seed (a repeat shows as a longer
            // list below).
            assert_eq!(kinds[0], 0x02, "{ports:?} starts with SYN: {kinds:?}");
            assert_eq!(*kinds.last().unwrap(), 0x01, "{ports:?} ends with FIN");
            assert!(kinds.len() <= 3, "{ports:?}: {kinds:?}");
            assert!(kinds[1..kinds.len() - 1].iter().all(|&k| k == 0x18));
        }
        // Once closed at LIMIT, nothing more: done.
        assert_eq!(h.run_task(), TaskResult::Done);
    }

    #[test]
    fn rate_paces_the_closing_fins_too() {
        let mut h = Harness::push(
            &CLASS,
            "1000, 2, 60, 0:0:0:0:0:1, 10.0.0.1, 0:0:0:0:0:2, 10.0.0.2, 1, 5",
            0,
            1,
        );
        h.advance_to(Timestamp(1_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take_bytes(0)[0][47], 0x02, "SYN");
        assert_eq!(h.run_task(), TaskResult::Waiting);
        h.advance_to(Timestamp(1_001_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take_bytes(0)[0][47], 0x18, "data");
        // LIMIT 2 reached with the flow open: its FIN, 1 ms later.
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), vec![Timestamp(1_002_000_000)]);
        h.advance_to(Timestamp(1_002_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take_bytes(0)[0][47], 0x01, "FIN");
        assert_eq!(h.run_task(), TaskResult::Done);
        assert_eq!(h.read_handler("count").unwrap(), "3");
        // Click's rate: 3 packets over 2 ms.
        assert_eq!(h.read_handler("rate").unwrap(), "1500");
    }

    #[test]
    fn pull_mode_and_reset() {
        use bricks_element::Processing;
        let ports = PortInfo {
            inputs: vec![],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(
            &CLASS,
            "0, 6, 60, 0:0:0:0:0:1, 10.0.0.1, 0:0:0:0:0:2, 10.0.0.2, 2, 3",
            ports,
        );
        let mut got = Vec::new();
        for _ in 0..20 {
            got.extend(h.pull(0, 4));
        }
        let n = got.len();
        assert!((6..=8).contains(&n), "{n}");
        assert!(got.iter().all(|p| checksums_ok(p.data())));
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.read_handler("count").unwrap(), "0");
        assert_eq!(h.pull(0, 1).len(), 1, "a reset starts over");
    }

    #[test]
    fn arguments() {
        let p = PortInfo::default();
        let ok = |a: &str| make_element(&CLASS, a, &p).is_ok();
        assert!(ok(
            "100000, 500000, 60, 0:0:0:0:0:0, 1.0.0.1, 1:1:1:1:1:1, 2.0.0.2, 100, 10"
        ));
        assert!(!ok(
            "1, 1, 60, 0:0:0:0:0:0, 1.0.0.1, 1:1:1:1:1:1, 2.0.0.2, 0, 10"
        ));
        assert!(!ok(
            "1, 1, 60, 0:0:0:0:0:0, 1.0.0.1, 1:1:1:1:1:1, 2.0.0.2, 1"
        ));
        assert!(!ok(
            "1, 1, 60, 0:0:0:0:0:0, 1.0.0.1, 1:1:1:1:1:1, 2.0.0.2, 1, 3, CHECKSUM false"
        ));
        // FLOWSIZE 1 becomes 3: SYN, data, FIN.
        let mut h = Harness::push(
            &CLASS,
            "0, 3, 80, 0:0:0:0:0:1, 10.0.0.1, 0:0:0:0:0:2, 10.0.0.2, 1, 1",
            0,
            1,
        );
        let frames = run_all(&mut h);
        let kinds: Vec<u8> = frames.iter().map(|f| f[47]).collect();
        assert_eq!(kinds, [0x02, 0x18, 0x01]);
        assert!(frames.iter().all(|f| f.len() == 80 && checksums_ok(f)));
    }
}
