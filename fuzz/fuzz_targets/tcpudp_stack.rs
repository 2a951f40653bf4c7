//! Click's element-built TCP stack (conf/test-tcp.click) on hostile
//! input, and the other stateful TCP elements beside it:
//!
//! ```text
//! dmx :: TCPDemux -> [0] ack :: TCPAck [0] -> [0] con :: TCPConn [0] -> rob :: TCPBuffer -> [0] b2p
//! b2p :: BufferConverter -> Queue -> [1] con [1] -> [1] ack [1] -> [0] fid :: CopyFlowID [0]
//!     -> [0] seq :: CopyTCPSeq [0] -> out
//! con [2] -> [0] fid;    ack [2] -> [1] fid [1] -> [1] seq [1] -> out
//! ```
//!
//! with two more TCPConns registering in the same TCPDemux, TCPReflector
//! (push and pull), ToyTCP, WebGen and TCPIPSend.
//!
//! The input is a script of at most 48 steps: frames (any bytes, with the
//! annotations the elements read set in several ways, pushed wherever a
//! packet can enter), segments from the peer (valid IPv4/TCP to the
//! connection's ports, whose flags, options, window, payload, and sequence
//! and acknowledgment numbers near those the connection expects, come
//! from the input), answers to WebGen's and ToyTCP's connections (to the
//! address, port and initial sequence number they sent), `ctrl`, `reset`,
//! `data` and `send` handler calls, pulls, and clock steps that run the
//! timers (TCPAck's delayed ACK, ToyTCP's and WebGen's ticks).
//!
//! After every step: nothing panicked; every packet any element was
//! given left by an output or is counted by one of its counters, as its
//! manual says (TCPBuffer: held, pulled or counted, and it never holds
//! more than CAPACITY); the TCPDemux never holds more flows than its
//! CAPACITY (no more TCPConns are active at once); WebGen never keeps
//! more connections than its pool of 10 × RATE; ToyTCP sends no more than
//! LIMIT; nothing leaves longer than MAX_FRAME; and every packet an
//! element built or changed (SYNs, data segments, ACKs, replies, answers)
//! carries right IPv4 and TCP checksums, checked here byte by byte.
//! Every run starts from fresh elements, a fixed clock and a seeded
//! random stream, so a crash reproduces.
#![no_main]

use bricks_element::{click_random, Packet, Processing};
use bricks_elements::tcpudp;
use bricks_packet::{Timestamp, MAX_FRAME};
use libfuzzer_sys::fuzz_target;
use std::collections::VecDeque;

#[path = "support/header.rs"]
mod header;
#[path = "support/input.rs"]
mod input;
#[path = "support/rig.rs"]
mod rig;
#[path = "support/sum.rs"]
mod sum;

use input::Input;
use rig::{Refs, Rig};
use sum::sum;

const PUSH: Processing = Processing::Push;
const PULL: Processing = Processing::Pull;

/// Steps one input may take.
const MAX_STEPS: usize = 48;
/// The Queue between BufferConverter and TCPConn holds this many.
const QUEUE: usize = 1000;
/// TCPDemux's CAPACITY here.
const FLOWS: usize = 2;
/// TCPBuffer's CAPACITY here.
const HELD: u64 = 8;
/// WebGen's RATE here, and so its pool of 10 × RATE connections.
const RATE: u64 = 5;
/// ToyTCP's LIMIT here.
const TOY_LIMIT: u64 = 64;
/// Frames made by this harness from fuzz bytes carry this paint, so that
/// the checksum check skips them (their sums are whatever the input said).
const RAW: u8 = 0xab;

/// This end and the peer, as `ctrl connect` names them.
const LOCAL: [u8; 4] = [10, 9, 0, 2];
const LPORT: u16 = 4000;
const REMOTE: [u8; 4] = [10, 9, 0, 1];
const RPORT: u16 = 5000;
/// WebGen's server.
const SERVER: [u8; 4] = [10, 0, 0, 1];

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

fn be32(d: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
}

/// Whether `d` is an IPv4/TCP datagram (from its first byte, to its total
/// length) whose two checksums are right.
fn sums_ok(d: &[u8]) -> bool {
    if d.len() < 40 || d[0] >> 4 != 4 || d[9] != 6 {
        return false;
    }
    let hlen = usize::from(d[0] & 15) * 4;
    let len = usize::from(be16(d, 2));
    if hlen < 20 || len < hlen + 20 || len > d.len() {
        return false;
    }
    let seg = &d[hlen..len];
    let mut pseudo = d[12..20].to_vec();
    pseudo.extend([0, 6]);
    pseudo.extend((seg.len() as u16).to_be_bytes());
    pseudo.extend(seg);
    sum(&d[..hlen]) == 0xffff && sum(&pseudo) == 0xffff
}

/// An IPv4/TCP datagram, its sums computed here.
#[allow(clippy::too_many_arguments)]
fn datagram(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    window: u16,
    options: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let thl = 20 + options.len();
    let len = (20 + thl + payload.len()) as u16;
    let mut d = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0];
    d[2..4].copy_from_slice(&len.to_be_bytes());
    d.extend(src);
    d.extend(dst);
    let c = !sum(&d);
    d[10..12].copy_from_slice(&c.to_be_bytes());
    d.extend(sport.to_be_bytes());
    d.extend(dport.to_be_bytes());
    d.extend(seq.to_be_bytes());
    d.extend(ack.to_be_bytes());
    d.extend([((thl / 4) as u8) << 4, flags]);
    d.extend(window.to_be_bytes());
    d.extend([0, 0, 0, 0]);
    d.extend(options);
    d.extend(payload);
    let mut pseudo = d[12..20].to_vec();
    pseudo.extend([0, 6]);
    pseudo.extend(((thl + payload.len()) as u16).to_be_bytes());
    pseudo.extend(&d[20..]);
    let c = !sum(&pseudo);
    d[36..38].copy_from_slice(&c.to_be_bytes());
    d
}

/// A packet of `d` with the annotations `how` picks: none; the network
/// header at the start; 14 bytes of link header before it, annotated;
/// or an annotation anywhere, even outside the frame.
fn packet(d: &[u8], how: u8, raw: bool) -> Packet {
    let mut p = match how % 4 {
        2 => {
            let mut f = vec![0x5a; 14];
            f.extend_from_slice(d);
            f.truncate(MAX_FRAME);
            let mut p = Packet::from_slice(&f).unwrap();
            p.set_network_header(14);
            p
        }
        _ => Packet::from_slice(&d[..d.len().min(MAX_FRAME)]).unwrap(),
    };
    match how % 4 {
        1 => p.set_network_header(0),
        3 => header::anywhere(&mut p, how >> 2, 4),
        _ => {}
    }
    if raw {
        p.anno_mut().paint = RAW;
    }
    p
}

/// The IP header's offset as the TCP elements find it: the annotation
/// when it lies in the frame, else the start.
fn ip_at(p: &Packet) -> usize {
    match p.anno().l3_offset() {
        Some(_) => p.network_header_offset().unwrap_or(0).min(p.len()),
        None => 0,
    }
}

/// Every element, fresh, and what the harness counted of them.
struct Stack {
    dmx: Rig,
    ack: Rig,
    con: Rig,
    /// TCPConns registering in the same TCPDemux, for its bound.
    others: [Rig; 2],
    /// Which of con, others[0], others[1] are active (as their `ctrl`
    /// and `reset` writes said).
    active: [bool; 3],
    rob: Rig,
    b2p: Rig,
    fid: Rig,
    seq: Rig,
    refl: Rig,
    refl_pull: Rig,
    toy: Rig,
    web: Rig,
    send: Rig,
    now: Timestamp,
    /// Packets given to each element's inputs, and taken by pulls.
    n: Counts,
    /// con's initial sequence number, from its SYN.
    iss: Option<u32>,
    /// con's addresses and ports, from its SYN.
    con_flow: Option<([u8; 8], [u8; 4])>,
    /// The peer's next sequence number, as the harness plays it.
    peer_next: u32,
    /// WebGen's server's next sequence number, as the harness plays it.
    server_next: u32,
    /// WebGen's connections seen in its SYNs: client, port, ISS.
    web_flows: VecDeque<([u8; 4], u16, u32)>,
    /// ToyTCP's last SYN: port and ISS.
    toy_flow: Option<(u16, u32)>,
}

#[derive(Default)]
struct Counts {
    dmx_in: u64,
    dmx_out: u64,
    ack_in: u64,
    ack_out: [u64; 3],
    con_in: u64,
    con_fed: u64,
    con_out: [u64; 3],
    rob_in: u64,
    rob_out: u64,
    b2p_fed: u64,
    b2p_icmp: u64,
    b2p_out: u64,
    b2p_data: u64,
    copy_in: [[u64; 2]; 2],
    copy_out: [[u64; 2]; 2],
    refl_in: u64,
    refl_out: u64,
    toy_out: u64,
    send_out: u64,
    queue_drops: u64,
}

impl Stack {
    fn new(t0: Timestamp) -> Stack {
        use tcpudp::*;
        let none = Refs::default();
        let dmx = rig::new(
            &tcpdemux::CLASS,
            &format!("CAPACITY {FLOWS}"),
            &[PUSH],
            &[PUSH],
            &none,
        );
        let rob = rig::new(
            &tcpbuffer::CLASS,
            &format!("false, CAPACITY {HELD}"),
            &[PUSH],
            &[PULL],
            &none,
        );
        let to_dmx = Refs(vec![("TCPDemux", dmx.shared().expect("shared state"))]);
        let conn = || {
            rig::new(
                &tcpconn::CLASS,
                "",
                &[PUSH, PULL],
                &[PUSH, PULL, PUSH],
                &to_dmx,
            )
        };
        let mut s = Stack {
            con: conn(),
            others: [conn(), conn()],
            active: [false; 3],
            ack: rig::new(
                &tcpack::CLASS,
                "DELAY 20ms",
                &[PUSH; 2],
                &[PUSH; 3],
                &Refs(vec![("TCPBuffer", rob.shared().expect("shared state"))]),
            ),
            b2p: rig::new(&bufconv::CLASS, "1400", &[PULL, PUSH], &[PUSH], &none),
            fid: rig::new(&copyflowid::CLASS, "", &[PUSH; 2], &[PUSH; 2], &none),
            seq: rig::new(&copytcpseq::CLASS, "", &[PUSH; 2], &[PUSH; 2], &none),
            refl: rig::new(&tcpreflector::CLASS, "", &[PUSH], &[PUSH], &none),
            refl_pull: rig::new(&tcpreflector::CLASS, "", &[PULL], &[PULL], &none),
            toy: rig::new(
                &toytcp::CLASS,
                &format!("80, LIMIT {TOY_LIMIT}"),
                &[PUSH],
                &[PUSH],
                &none,
            ),
            web: rig::new(
                &webgen::CLASS,
                &format!("11.11.0.0/16, 10.0.0.1, {RATE}"),
                &[PUSH],
                &[PUSH],
                &none,
            ),
            send: rig::new(&tcpipsend::CLASS, "", &[], &[PUSH], &none),
            dmx,
            rob,
            now: t0,
            n: Counts::default(),
            iss: None,
            con_flow: None,
            peer_next: 0,
            server_next: 0,
            web_flows: VecDeque::new(),
            toy_flow: None,
        };
        for r in s.rigs() {
            r.set_now(t0);
        }
        s.toy.start();
        s.web.start();
        s.check_toy();
        s.check_web();
        s
    }

    fn rigs(&mut self) -> impl Iterator<Item = &mut Rig> {
        [
            &mut self.dmx,
            &mut self.ack,
            &mut self.con,
            &mut self.rob,
            &mut self.b2p,
            &mut self.fid,
            &mut self.seq,
            &mut self.refl,
            &mut self.refl_pull,
            &mut self.toy,
            &mut self.web,
            &mut self.send,
        ]
        .into_iter()
        .chain(self.others.iter_mut())
    }

    /// A segment from the peer into the stack: dmx -> ack -> con -> rob.
    fn incoming(&mut self, p: Packet) {
        self.n.dmx_in += 1;
        let out = self.dmx.run(0, [p]).swap_remove(0);
        self.n.dmx_out += out.len() as u64;
        if out.is_empty() {
            return;
        }
        self.n.ack_in += out.len() as u64;
        let out = self.ack_outputs(0, out);
        self.n.con_in += out.len() as u64;
        let mut got = self.con.run(0, out);
        self.syns(std::mem::take(&mut got[2]));
        let out = std::mem::take(&mut got[0]);
        self.n.con_out[0] += out.len() as u64;
        self.n.rob_in += out.len() as u64;
        self.rob.push_packets(0, out);
    }

    /// Pushes `ps` into TCPAck's input `port`; follows its bare ACKs and
    /// returns what left output `port`.
    fn ack_outputs(&mut self, port: usize, ps: Vec<Packet>) -> Vec<Packet> {
        let mut got = self.ack.run(port, ps);
        let [out0, out1, acks] = [0, 1, 2].map(|o| std::mem::take(&mut got[o]));
        self.n.ack_out[0] += out0.len() as u64;
        self.n.ack_out[1] += out1.len() as u64;
        self.bare_acks(acks);
        if port == 0 {
            assert!(out1.is_empty());
            out0
        } else {
            assert!(out0.is_empty());
            out1
        }
    }

    /// TCPAck's bare ACKs: ack [2] -> [1] fid [1] -> [1] seq [1] -> out.
    fn bare_acks(&mut self, acks: Vec<Packet>) {
        self.n.ack_out[2] += acks.len() as u64;
        for a in &acks {
            let d = a.data();
            assert!(d.len() == 40 && sums_ok(d) && d[33] == ACK, "a bare ACK");
        }
        self.copies(1, acks);
    }

    /// TCPConn's SYNs: con [2] -> [0] fid [0] -> [0] seq [0] -> out.
    fn syns(&mut self, syns: Vec<Packet>) {
        self.n.con_out[2] += syns.len() as u64;
        for p in &syns {
            let d = p.data();
            assert!(d.len() == 40 && sums_ok(d) && d[33] == SYN, "a SYN");
            self.iss = Some(be32(d, 24));
            self.con_flow = Some((d[12..20].try_into().unwrap(), d[20..24].try_into().unwrap()));
        }
        self.copies(0, syns);
    }

    /// Through CopyFlowID and CopyTCPSeq on `port`, to `out`.
    fn copies(&mut self, port: usize, ps: Vec<Packet>) {
        if ps.is_empty() {
            return;
        }
        self.n.copy_in[0][port] += ps.len() as u64;
        let out = self.fid.run(port, ps).swap_remove(port);
        self.n.copy_out[0][port] += out.len() as u64;
        if out.is_empty() {
            return;
        }
        self.n.copy_in[1][port] += out.len() as u64;
        let out = self.seq.run(port, out).swap_remove(port);
        self.n.copy_out[1][port] += out.len() as u64;
        for p in &out {
            // Out to the wire: built by an element (unless the harness
            // queued fuzz bytes), changed with incremental checksum
            // updates along the way.
            assert!(p.len() <= MAX_FRAME);
            if p.anno().paint != RAW {
                assert!(sums_ok(&p.data()[ip_at(p)..]), "{:02x?}", p.data());
            }
        }
    }

    /// BufferConverter's segments into the Queue before con [1].
    fn enqueue(&mut self, ps: Vec<Packet>) {
        let room = QUEUE.saturating_sub(self.con_queue());
        let mut ps = ps;
        if ps.len() > room {
            self.n.queue_drops += (ps.len() - room) as u64;
            ps.truncate(room);
        }
        self.n.con_fed += ps.len() as u64;
        self.con.feed(1, ps);
    }

    fn con_queue(&self) -> usize {
        self.con.fed(1)
    }

    /// Unqueue: con [1] -> [1] ack [1] -> fid -> seq -> out.
    fn outgoing(&mut self, max: usize) {
        let out = self.con.pull(1, max);
        self.n.con_out[1] += out.len() as u64;
        for p in &out {
            assert!(p.len() <= MAX_FRAME);
            if p.anno().paint != RAW {
                // BufferConverter's segments, with the connection's
                // addresses and ports.
                let d = &p.data()[ip_at(p)..];
                assert!(sums_ok(d));
                let (addrs, ports) = self.con_flow.expect("a connection sent its SYN");
                assert_eq!((&d[12..20], &d[20..24]), (&addrs[..], &ports[..]));
            }
        }
        if out.is_empty() {
            return;
        }
        self.n.ack_in += out.len() as u64;
        let out = self.ack_outputs(1, out);
        for p in &out {
            let d = &p.data()[ip_at(p)..];
            assert!(
                d[usize::from(d[0] & 15) * 4 + 13] & ACK != 0,
                "tagged with ACK"
            );
        }
        self.copies(0, out);
    }

    /// The application writes `data`.
    fn app_write(&mut self, data: &str) {
        let segs = self.b2p.call_handler("data", data, true);
        assert!(segs.is_ok());
        let out = self.b2p.take(0);
        assert_eq!(out.len(), data.len().div_ceil(1400));
        for p in &out {
            let d = p.data();
            assert!(d.len() <= 1440 && sums_ok(d) && d[33] == PSH);
        }
        self.n.b2p_out += out.len() as u64;
        self.enqueue(out);
    }

    /// The application reads: rob -> [0] b2p, `max` segments at most.
    fn app_read(&mut self, max: usize) {
        let got = self.rob.pull(0, max);
        self.n.rob_out += got.len() as u64;
        self.n.b2p_fed += got.len() as u64;
        self.b2p.feed(0, got);
        let text = self.b2p.call_handler("data", "", false).unwrap();
        self.n.b2p_data += u64::from(!text.is_empty());
    }

    /// Moves the clock on and runs every timer due.
    fn advance(&mut self, by_ns: u64) {
        self.now = Timestamp(self.now.0 + by_ns);
        let now = self.now;
        for r in self.rigs() {
            r.advance_to(now);
        }
        let acks = self.ack.take(2);
        self.bare_acks(acks);
        self.check_toy();
        self.check_web();
    }

    /// What ToyTCP sent: bare TCP headers from its port to 80.
    fn check_toy(&mut self) {
        for p in self.toy.take(0) {
            let d = p.data();
            assert!(d.len() == 20 || d.len() == 21);
            assert_eq!(be16(d, 2), 80);
            if d[13] == SYN {
                self.toy_flow = Some((be16(d, 0), be32(d, 4)));
            }
            self.n.toy_out += 1;
        }
    }

    /// What WebGen sent: TCP/IP with right sums; its SYNs name its
    /// connections.
    fn check_web(&mut self) -> usize {
        let out = self.web.take(0);
        let n = out.len();
        for p in out {
            let d = p.data();
            assert!(sums_ok(d) && d.len() <= MAX_FRAME, "{d:02x?}");
            if d[33] == SYN {
                assert_eq!(d[16..20], SERVER);
                self.web_flows
                    .push_back((d[12..16].try_into().unwrap(), be16(d, 20), be32(d, 24)));
                if self.web_flows.len() > 64 {
                    self.web_flows.pop_front();
                }
            }
        }
        n
    }

    /// `ctrl` or `reset` on TCPConn `i` (0: con).
    fn ctrl(&mut self, i: usize, handler: &str, value: &str) {
        let r = match i {
            0 => &mut self.con,
            _ => &mut self.others[i - 1],
        };
        let res = r.call_handler(handler, value, true);
        let syns = r.take(2);
        if handler == "reset" {
            self.active[i] = false;
        } else if res.is_ok() {
            assert!(!self.active[i], "a ctrl to an active TCPConn must fail");
            self.active[i] = true;
        } else {
            assert!(syns.is_empty());
        }
        if i == 0 {
            self.syns(syns);
        } else {
            assert!(syns.len() <= 1);
        }
        // Each active TCPConn holds one flow of the demultiplexer.
        let active = self.active.iter().filter(|&&a| a).count();
        assert!(
            active <= FLOWS,
            "{active} TCPConns active, CAPACITY {FLOWS}"
        );
    }

    /// Every element's counters against what went in and out.
    fn check(&mut self) {
        for r in self.rigs() {
            assert_eq!(r.stats().get("unconnected_drops"), None);
        }
        let n = &self.n;
        let c = |r: &Rig, names: &[&str]| -> u64 { names.iter().map(|k| r.counter(k)).sum() };
        assert_eq!(
            n.dmx_in,
            n.dmx_out + c(&self.dmx, &["unknown", "drops"]),
            "TCPDemux"
        );
        assert_eq!(
            n.ack_in,
            n.ack_out[0] + n.ack_out[1] + c(&self.ack, &["early", "drops"]),
            "TCPAck"
        );
        assert_eq!(n.ack_out[2], self.ack.counter("acks"));
        let con_pulled = n.con_fed - self.con_queue() as u64;
        assert_eq!(
            n.con_in + con_pulled,
            n.con_out[0] + n.con_out[1] + c(&self.con, &["inactive", "drops"]),
            "TCPConn"
        );
        assert_eq!(n.con_out[2], self.con.counter("syns"));
        let refused = c(&self.rob, &["duplicates", "old", "overflows", "drops"]);
        let held = n.rob_in.checked_sub(n.rob_out + refused);
        assert!(held.is_some_and(|h| h <= HELD), "TCPBuffer: {held:?} held");
        assert_eq!(n.b2p_out, self.b2p.counter("segments"));
        assert_eq!(n.b2p_icmp, self.b2p.counter("icmp"));
        let b2p_pulled = n.b2p_fed - self.b2p.fed(0) as u64;
        assert_eq!(
            b2p_pulled,
            n.b2p_data + c(&self.b2p, &["empty", "drops"]),
            "BufferConverter"
        );
        for (k, r) in [&self.fid, &self.seq].into_iter().enumerate() {
            assert_eq!(n.copy_in[k][0], n.copy_out[k][0]);
            assert_eq!(n.copy_in[k][1], n.copy_out[k][1] + r.counter("drops"));
        }
        let refl = c(&self.refl, &["replies", "ignored", "drops"])
            + c(&self.refl_pull, &["replies", "ignored", "drops"]);
        assert_eq!(n.refl_in, refl, "TCPReflector");
        assert_eq!(
            n.refl_out,
            self.refl.counter("replies") + self.refl_pull.counter("replies")
        );
        assert_eq!(n.toy_out, self.toy.counter("sent"));
        assert!(n.toy_out <= TOY_LIMIT);
        let w = |k: &str| self.web.counter(k);
        let ended = w("completed") + w("timeouts") + w("resets");
        assert!(
            w("initiated") >= ended && w("initiated") - ended <= 10 * RATE,
            "WebGen keeps {} connections",
            w("initiated").saturating_sub(ended)
        );
        assert_eq!(n.send_out, self.send.counter("count"));
    }

    /// The same bytes into the stateless reflector, pushed and pulled.
    fn reflect(&mut self, d: &[u8], how: u8) {
        for pull in [false, true] {
            let p = packet(d, how, true);
            let n = p.len();
            self.n.refl_in += 1;
            let out = if pull {
                self.refl_pull.feed(0, [p]);
                let out = self.refl_pull.pull(0, 4);
                assert_eq!(self.refl_pull.fed(0), 0);
                out
            } else {
                self.refl.run(0, [p]).swap_remove(0)
            };
            assert!(out.len() <= 1);
            self.n.refl_out += out.len() as u64;
            for q in &out {
                assert!(q.len() <= n);
                let d = &q.data()[ip_at(q)..];
                assert!(sums_ok(d), "a reply's sums");
                let f = d[usize::from(d[0] & 15) * 4 + 13];
                // ACK, ACK-FIN or SYN-ACK.
                assert!((ACK..=ACK | SYN).contains(&f), "flags {f:#x}");
            }
        }
    }

    /// Any frame wherever a packet may enter.
    fn raw(&mut self, d: &[u8], how: u8, r#where: u8) {
        match r#where % 8 {
            0 => self.incoming(packet(d, how, true)),
            1 => {
                self.n.ack_in += 1;
                let out = self.ack_outputs(1, vec![packet(d, how, true)]);
                self.copies(0, out);
            }
            2 => self.enqueue(vec![packet(d, how, true)]),
            3 => {
                self.n.b2p_icmp += 1;
                self.b2p.push_packets(1, [packet(d, how, true)]);
            }
            4 => {
                self.n.rob_in += 1;
                self.rob.push_packets(0, [packet(d, how, true)]);
            }
            5 => self.copies(usize::from(how & 1), vec![packet(d, how, true)]),
            6 => {
                self.toy.push_packets(0, [packet(d, how, true)]);
                self.check_toy();
            }
            _ => {
                self.web.push_packets(0, [packet(d, how, true)]);
                assert!(self.check_web() <= 1, "one answer at most for one segment");
            }
        }
        self.reflect(d, how);
    }

    /// A segment from the peer to this end, numbered near what the
    /// connection expects.
    fn peer_segment(&mut self, inp: &mut Input<'_>) {
        let flags = inp.byte();
        let how = inp.byte();
        let seq = match how & 0x30 {
            0x30 => inp.u32(),
            _ => self.peer_next.wrapping_add(inp.delta()),
        };
        let ack = match (how & 0x40, self.iss) {
            (0, Some(iss)) => iss.wrapping_add(1).wrapping_add(inp.delta()),
            _ => inp.u32(),
        };
        let window = inp.u16();
        let olen = usize::from(inp.byte() % 11) * 4;
        let mut options = inp.bytes(olen);
        options.resize(olen, 1);
        let payload = inp.frame();
        // Mostly the connection's own ports; else the demultiplexer's
        // other matches and misses.
        let (src, sport, dst, dport) = match how >> 7 {
            0 => (REMOTE, RPORT, LOCAL, LPORT),
            _ => ([10, 9, 0, inp.byte()], inp.u16(), LOCAL, inp.u16()),
        };
        let d = datagram(
            src, dst, sport, dport, seq, ack, flags, window, &options, &payload,
        );
        if flags & SYN != 0 {
            self.peer_next = seq.wrapping_add(1);
        } else if seq == self.peer_next {
            let fin = u32::from(flags & FIN != 0);
            self.peer_next = seq.wrapping_add(payload.len() as u32 + fin);
        }
        let how = how & 3;
        self.incoming(packet(&d, how, false));
        self.reflect(&d, how);
    }

    /// An answer from WebGen's server to one of its connections,
    /// numbered near what the connection expects.
    fn answer_web(&mut self, inp: &mut Input<'_>) {
        let pick = usize::from(inp.byte());
        let flags = inp.byte();
        let seq = match flags & SYN {
            0 => self.server_next.wrapping_add(inp.delta()),
            _ => inp.u32(),
        };
        let delta = inp.delta();
        let payload = inp.frame();
        let (client, port, iss) = match self.web_flows.len() {
            0 => ([11, 11, 0, 1], 1024, 0),
            n => self.web_flows[pick % n],
        };
        // The SYN, or the request (30 bytes, "GET /spec/D/D-C-F HTTP/1.0"
        // and two line ends) and its FIN.
        let ack = match pick & 0x80 {
            0 => iss.wrapping_add(1),
            _ => iss.wrapping_add(32),
        }
        .wrapping_add(delta);
        if flags & SYN != 0 {
            self.server_next = seq.wrapping_add(1);
        } else if seq == self.server_next {
            let fin = u32::from(flags & FIN != 0);
            self.server_next = seq.wrapping_add(payload.len() as u32 + fin);
        }
        let d = datagram(
            SERVER,
            client,
            80,
            port,
            seq,
            ack,
            flags,
            8192,
            &[],
            &payload,
        );
        self.web.push_packets(0, [packet(&d, 0, false)]);
        assert!(self.check_web() <= 1, "one answer at most for one segment");
    }

    /// A bare TCP header from ToyTCP's peer.
    fn answer_toy(&mut self, inp: &mut Input<'_>) {
        let flags = inp.byte();
        let (seq, delta) = (inp.u32(), inp.delta());
        let (port, iss) = self.toy_flow.unwrap_or((1024, 0));
        let mut h = vec![0u8; 20];
        h[0..2].copy_from_slice(&80u16.to_be_bytes());
        h[2..4].copy_from_slice(&port.to_be_bytes());
        h[4..8].copy_from_slice(&seq.to_be_bytes());
        h[8..12].copy_from_slice(&iss.wrapping_add(1).wrapping_add(delta).to_be_bytes());
        h[12] = 0x50;
        h[13] = flags;
        let before = self.n.toy_out;
        self.toy.push_packets(0, [Packet::from_slice(&h).unwrap()]);
        self.check_toy();
        // Two answers at most for one segment.
        assert!(self.n.toy_out - before <= 2);
    }

    /// TCPIPSend's `send`: fields from the input, or text.
    fn send(&mut self, inp: &mut Input<'_>) {
        let kind = inp.byte();
        let count = usize::from(inp.byte() % 5);
        let text = if kind & 1 == 0 {
            format!(
                "10.9.0.{} {} 10.9.0.{} {} {} {} {} {}",
                inp.byte(),
                inp.u16(),
                inp.byte(),
                inp.u16(),
                inp.u32(),
                inp.u32(),
                inp.byte(),
                count
            )
        } else {
            // At most 7 words: no COUNT, so one packet at most.
            let t = inp.text();
            t.split_whitespace().take(7).collect::<Vec<_>>().join(" ")
        };
        let r = self.send.call_handler("send", &text, true);
        let out = self.send.take(0);
        match (r.is_ok(), kind & 1) {
            (false, _) => assert!(out.is_empty()),
            (true, 0) => assert_eq!(out.len(), count),
            (true, _) => assert!(out.len() <= 1),
        }
        for p in &out {
            assert!(p.len() == 40 && sums_ok(p.data()));
        }
        self.n.send_out += out.len() as u64;
    }
}

fuzz_target!(|data: &[u8]| {
    let mut inp = Input(data);
    click_random::srandom(u32::from(inp.u16()));
    let mut s = Stack::new(Timestamp::from_parts(1_700_000_000, 123_456_789));
    for _ in 0..MAX_STEPS {
        if inp.0.is_empty() {
            break;
        }
        match inp.byte() % 12 {
            0 => {
                let (how, r#where) = (inp.byte(), inp.byte());
                let d = inp.frame();
                s.raw(&d, how, r#where);
            }
            1 | 2 => s.peer_segment(&mut inp),
            3 => match inp.byte() % 6 {
                0 | 1 => s.ctrl(0, "ctrl", "connect 10.9.0.2 4000 10.9.0.1 5000"),
                2 => s.ctrl(0, "ctrl", "listen 10.9.0.2 4000"),
                3 => s.ctrl(0, "reset", ""),
                _ => {
                    let v = inp.text();
                    s.ctrl(0, "ctrl", &v);
                }
            },
            4 => {
                let i = 1 + usize::from(inp.byte() & 1);
                match inp.byte() % 3 {
                    0 => s.ctrl(i, "reset", ""),
                    _ => {
                        let v = format!(
                            "connect 10.9.0.{} {} 10.9.0.1 {}",
                            inp.byte() % 4,
                            inp.byte() % 4,
                            inp.byte() % 4
                        );
                        s.ctrl(i, "ctrl", &v);
                    }
                }
            }
            5 => {
                let n = usize::from(inp.byte()) * 8;
                let text: String = inp
                    .bytes(n)
                    .iter()
                    .cycle()
                    .take(n)
                    .map(|&b| char::from(b' ' + b % 95))
                    .collect();
                s.app_write(&text);
            }
            6 => {
                let max = 1 + usize::from(inp.byte() % 8);
                s.app_read(max);
            }
            7 => {
                let max = 1 + usize::from(inp.byte() % 16);
                s.outgoing(max);
            }
            8 => {
                // Up to about 65 s, mostly a few milliseconds.
                let b = u64::from(inp.byte());
                s.advance(b * b * 1_000_000);
            }
            9 => s.answer_web(&mut inp),
            10 => s.answer_toy(&mut inp),
            _ => match inp.byte() % 4 {
                0 => s.send(&mut inp),
                1 => {
                    assert!(s.fid.call_handler("reset", "", true).is_ok());
                }
                2 => {
                    assert!(s.seq.call_handler("reset", "", true).is_ok());
                }
                _ => {
                    let _ = s.b2p.call_handler("data", "x", false);
                }
            },
        }
        s.check();
    }
});
