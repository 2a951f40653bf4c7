//! `WebGen`: a web client load generator, as Click's experimental
//! `elements/local/webgen.cc`: RATE new HTTP/1.0 connections a second,
//! each from a random address of PREFIX and a random port, to DST port 80;
//! each sends one request (with its FIN), acknowledges the answer and the
//! server's FIN, and is then done. A connection not answered within a
//! second sends again, six times at most (RFC 9293 section 3.8.1's
//! retransmission, with Click's fixed timeout and count).
//!
//! The connections are a fixed pool of control blocks, as many as Click
//! allocates (ten times RATE), indexed by source address and port; blocks
//! waiting for an answer are kept in the order they last sent, so each
//! tick looks only at those whose second is up.

use super::segment::{self, seq_gt, TcpIp, ACK, FIN, PSH, RST, SYN};
use bricks_element::{
    click_random, ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::Timestamp;
use bricks_wire::Ipv4Cidr;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `WebGen` class.
pub static CLASS: ElementClass = ElementClass {
    name: "WebGen",
    ports: "1/1",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

/// Click's timer period.
const TICK_NS: u64 = 1_000_000;
/// Click's retransmission timeout: one second.
const RESEND_NS: u64 = 1_000_000_000;
/// Click's `resend_max`.
const RESEND_MAX: u8 = 5;
/// The highest RATE: its pool is ten times as many blocks.
const MAX_RATE: u32 = 10_000;

static MANUAL: Manual = Manual {
    summary: "generates HTTP connections",
    synopsis: "WebGen(PREFIX, DST, RATE)",
    description: "Opens RATE connections a second to DST port 80, each from a random \
        address of PREFIX and a random source port (1024 to 61023), and asks each for a \
        random page: `GET /spec/D/D-C-F HTTP/1.0` with D from 0 to 9, C from 0 to 2, F \
        from 0 to 8, sent with the FIN right after the handshake. Incoming packets are \
        TCP/IP (the IP header first: strip the link header before); answers are \
        acknowledged, and a connection whose server has sent its FIN is acknowledged a \
        last time and done. A connection that has not sent for a second sends its SYN or \
        its unacknowledged request again, and when it has had six such seconds (Click's \
        count: its `resend_max` of 5 plus one) it gives up. A segment of no connection \
        is answered with a reset (a reset is not). Packets out are TCP/IP: TTL 250, an \
        identification counting up, window 61440, both checksums, the destination \
        annotation set.\n\n\
        Connections live in a pool of 10 × RATE control blocks, Click's number: a \
        connection due when the pool is empty is not made, and is counted. The timer \
        runs every millisecond, on the first worker; the pool is one for all workers. \
        Click prints its counts every five seconds; bricks keeps them as counters. Click \
        answers a reset with a reset and divides by zero for a RATE of 0; bricks does \
        neither, and takes RATE up to 10000.",
    ports: "one push input, one push output",
    keywords: &[
        Keyword {
            name: "PREFIX",
            ty: "IPv4 prefix",
            default: None,
            doc: "the clients' addresses; positional",
        },
        Keyword {
            name: "DST",
            ty: "IPv4 address",
            default: None,
            doc: "the web server; positional",
        },
        Keyword {
            name: "RATE",
            ty: "unsigned, 1 to 10000",
            default: None,
            doc: "connections started a second; positional",
        },
    ],
    counters: &[
        ("initiated", "connections started"),
        ("completed", "connections done (both FINs)"),
        ("timeouts", "connections given up after five sends"),
        ("resets", "connections reset by the server"),
        ("refused", "connections not made: the pool was empty"),
        (
            "unknown",
            "segments of no connection (answered with a reset)",
        ),
        ("drops", "packets that hold no TCP segment"),
    ],
    example: "kt :: KernelTap(11.11.0.0/16); kt -> Strip(14) \
        -> WebGen(11.11.0.0/16, 10.0.0.1, 100) \
        -> EtherEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2) -> kt;",
    see_also: &["ToyTCP", "StatelessTCPResponder", "KernelTap"],
};

/// A connection's control block (Click's `CB`).
#[derive(Debug)]
struct Cb {
    src: Ipv4Addr,
    sport: u16,
    iss: u32,
    snd_una: u32,
    snd_nxt: u32,
    rcv_nxt: u32,
    connected: bool,
    got_fin: bool,
    sent_fin: bool,
    closed: bool,
    do_send: bool,
    resends: u8,
    last_send: u64,
    request: Vec<u8>,
    /// The retransmission list, by index; `None` at its ends.
    prev: Option<u32>,
    next: Option<u32>,
    /// Whether the block is on the retransmission list.
    listed: bool,
}

impl Default for Cb {
    fn default() -> Cb {
        Cb {
            src: Ipv4Addr::UNSPECIFIED,
            sport: 0,
            iss: 0,
            snd_una: 0,
            snd_nxt: 0,
            rcv_nxt: 0,
            connected: false,
            got_fin: false,
            sent_fin: false,
            closed: false,
            do_send: false,
            resends: 0,
            last_send: 0,
            request: Vec::new(),
            prev: None,
            next: None,
            listed: false,
        }
    }
}

/// The pool and everything the timer and the input share.
#[derive(Debug, Default)]
struct Gen {
    started: bool,
    cbs: Vec<Cb>,
    free: Vec<u32>,
    /// Connections by source address and port.
    by_flow: HashMap<(Ipv4Addr, u16), u32>,
    /// The retransmission list, oldest send first.
    head: Option<u32>,
    tail: Option<u32>,
    /// When the next connection is due.
    start_at: u64,
    id: u16,
}

impl Gen {
    fn unlink(&mut self, i: u32) {
        let (prev, next, listed) = {
            let c = &self.cbs[i as usize];
            (c.prev, c.next, c.listed)
        };
        if !listed {
            return;
        }
        match prev {
            Some(p) => self.cbs[p as usize].next = next,
            None => self.head = next,
        }
        match next {
            Some(n) => self.cbs[n as usize].prev = prev,
            None => self.tail = prev,
        }
        let c = &mut self.cbs[i as usize];
        (c.prev, c.next, c.listed) = (None, None, false);
    }

    /// Moves block `i` to the end of the retransmission list, sent `now`.
    fn touch(&mut self, i: u32, now: u64) {
        self.unlink(i);
        let tail = self.tail;
        {
            let c = &mut self.cbs[i as usize];
            c.last_send = now;
            (c.prev, c.next, c.listed) = (tail, None, true);
        }
        match tail {
            Some(t) => self.cbs[t as usize].next = Some(i),
            None => self.head = Some(i),
        }
        self.tail = Some(i);
    }

    /// Gives block `i` back to the pool (Click's `recycle`).
    fn recycle(&mut self, i: u32) {
        self.unlink(i);
        let c = &self.cbs[i as usize];
        self.by_flow.remove(&(c.src, c.sport));
        self.free.push(i);
    }
}

#[derive(Debug, Default)]
struct Shared(Mutex<Gen>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Gen> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let prefix: Ipv4Cidr = args.read_mp("PREFIX")?;
    let dst: Ipv4Addr = args.read_mp("DST")?;
    let rate: u32 = args.read_mp("RATE")?;
    if rate == 0 || rate > MAX_RATE {
        return Err(ArgError::new(format!(
            "RATE {rate}: must be 1 to {MAX_RATE} connections a second"
        )));
    }
    let gen = args.shared(|_| Ok(Shared::default()))?;
    Ok(Box::new(WebGen {
        gen,
        mask: u32::from(prefix.netmask()),
        prefix: u32::from(prefix.address()) & u32::from(prefix.netmask()),
        dst,
        interval_ns: 1_000_000_000 / u64::from(rate),
        pool: 10 * rate as usize,
        next_tick: None,
        c: Counts::default(),
    }))
}

#[derive(Debug, Default)]
struct Counts {
    initiated: u64,
    completed: u64,
    timeouts: u64,
    resets: u64,
    refused: u64,
    unknown: u64,
    drops: u64,
}

/// An HTTP connection generator.
#[derive(Debug)]
pub struct WebGen {
    gen: Arc<Shared>,
    mask: u32,
    prefix: u32,
    dst: Ipv4Addr,
    interval_ns: u64,
    pool: usize,
    next_tick: Option<Timestamp>,
    c: Counts,
}

impl WebGen {
    /// A new connection's block (Click's `CB::reset` with `pick_src`).
    fn open(&mut self, g: &mut Gen) -> Option<u32> {
        let i = match g.free.pop() {
            Some(i) => i,
            None if g.cbs.len() < self.pool => {
                g.cbs.push(Cb::default());
                (g.cbs.len() - 1) as u32
            }
            None => return None,
        };
        let src = Ipv4Addr::from((click_random::random() & !self.mask) | self.prefix);
        let sport = 1024 + (click_random::random() % 60_000) as u16;
        if g.by_flow.contains_key(&(src, sport)) {
            // The same address and port twice: let the older one be.
            g.free.push(i);
            return None;
        }
        let iss = click_random::random() & 0x0fff_ffff;
        let (dir, c, file) = (
            click_random::random_between(0, 9),
            click_random::random_between(0, 2),
            click_random::random_between(0, 8),
        );
        g.cbs[i as usize] = Cb {
            src,
            sport,
            iss,
            snd_una: iss,
            snd_nxt: iss,
            request: format!("GET /spec/{dir}/{dir}-{c}-{file} HTTP/1.0\r\n\r\n").into_bytes(),
            ..Cb::default()
        };
        g.by_flow.insert((src, sport), i);
        Some(i)
    }

    /// Click's `tcp_send`: the segment block `i` owes, if any.
    fn send(&mut self, g: &mut Gen, i: u32, now: u64) -> Option<Packet> {
        g.touch(i, now);
        let id = g.id;
        let c = &mut g.cbs[i as usize];
        let len = c.request.len() as u32;
        let unacked = c.connected && c.snd_una.wrapping_sub(c.iss).wrapping_sub(1) < len;
        let (seq, payload_len) = if unacked {
            c.snd_nxt = c.iss.wrapping_add(1).wrapping_add(len);
            (c.iss.wrapping_add(1), c.request.len())
        } else {
            (c.snd_nxt.wrapping_add(u32::from(c.sent_fin)), 0)
        };
        if c.connected && !c.do_send && payload_len == 0 {
            return None;
        }
        c.do_send = false;
        let (flags, ack) = if c.connected {
            let mut f = ACK;
            if payload_len > 0 {
                f |= PSH | FIN;
            }
            if c.got_fin {
                f |= FIN;
            }
            (f, c.rcv_nxt)
        } else {
            (SYN, 0)
        };
        if flags & FIN != 0 {
            c.sent_fin = true;
        }
        if c.sent_fin && c.got_fin && !c.closed {
            c.closed = true;
            self.c.completed += 1;
        }
        g.id = g.id.wrapping_add(1);
        TcpIp {
            src: c.src,
            dst: self.dst,
            sport: c.sport,
            dport: 80,
            seq,
            ack,
            flags,
            window: 60 * 1024,
            ttl: 250,
            id,
            payload: &c.request[..payload_len],
            ..TcpIp::default()
        }
        .packet()
    }

    /// Click's `tcp_input`: what the segment `p` asks to send.
    fn input(&mut self, g: &mut Gen, p: &Packet, now: u64) -> Option<Packet> {
        let Ok(s) = segment::locate(p.data(), 0) else {
            self.c.drops += 1;
            return None;
        };
        let d = p.data();
        let flags = s.flags(d);
        let (seq, ack) = (s.seq(d), s.ack(d));
        let dlen = s.payload_len() as u32;
        let Some(&i) = g
            .by_flow
            .get(&(s.dst(d), s.dport(d)))
            .filter(|_| s.sport(d) == 80)
        else {
            self.c.unknown += 1;
            if flags & RST != 0 {
                return None;
            }
            // Click answers with the segment's numbers turned around.
            return TcpIp {
                src: s.dst(d),
                dst: s.src(d),
                sport: s.dport(d),
                dport: s.sport(d),
                seq: ack,
                ack: seq,
                flags: RST,
                window: 60 * 1024,
                ttl: 250,
                ..TcpIp::default()
            }
            .packet();
        };
        let c = &mut g.cbs[i as usize];
        if flags & (ACK | RST) == ACK && ack == c.iss.wrapping_add(1) && !c.connected {
            c.snd_nxt = c.iss.wrapping_add(1);
            c.snd_una = c.snd_nxt;
            c.rcv_nxt = seq.wrapping_add(1);
            c.connected = true;
            c.do_send = true;
        } else if dlen > 0 {
            c.do_send = true;
            if seq_gt(seq.wrapping_add(dlen), c.rcv_nxt) {
                c.rcv_nxt = seq.wrapping_add(dlen);
            }
        }
        if flags & ACK != 0 && seq_gt(ack, c.snd_una) {
            c.snd_una = ack;
        }
        if flags & FIN != 0 && seq.wrapping_add(dlen) == c.rcv_nxt && !c.got_fin {
            c.got_fin = true;
            c.rcv_nxt = c.rcv_nxt.wrapping_add(1);
            c.do_send = true;
        }
        if flags & RST != 0 {
            self.c.resets += 1;
            g.recycle(i);
            return None;
        }
        let out = self.send(g, i, now);
        if g.cbs[i as usize].closed {
            g.recycle(i);
        }
        out
    }

    /// Click's `run_timer`: new connections, then retransmissions.
    fn tick(&mut self, g: &mut Gen, now: u64, out: &mut Vec<Packet>) {
        // A clock that jumped ahead (a second past the interval) starts
        // one connection, not a burst.
        if now.saturating_sub(g.start_at) > self.interval_ns.saturating_add(RESEND_NS) {
            g.start_at = now.saturating_sub(self.interval_ns + 1);
        }
        while now.saturating_sub(g.start_at) > self.interval_ns {
            g.start_at += self.interval_ns;
            match self.open(g) {
                Some(i) => {
                    self.c.initiated += 1;
                    out.extend(self.send(g, i, now));
                }
                None => self.c.refused += 1,
            }
        }
        // Each block at most once: those that send go to the end.
        let last = g.tail;
        while let Some(i) = g.head {
            if now.saturating_sub(g.cbs[i as usize].last_send) <= RESEND_NS {
                break;
            }
            let c = &mut g.cbs[i as usize];
            c.resends += 1;
            if c.resends > RESEND_MAX + 1 {
                self.c.timeouts += 1;
                g.recycle(i);
            } else {
                // A SYN or an unacknowledged request is sent again; a
                // connection waiting for its server only moves to the end.
                out.extend(self.send(g, i, now));
            }
            if Some(i) == last {
                break;
            }
        }
    }
}

impl Element for WebGen {
    fn start(&mut self, cx: &mut Context<'_>) {
        let now = cx.now();
        {
            let mut g = self.gen.lock();
            if !g.started {
                g.started = true;
                g.start_at = now.0;
            }
        }
        if cx.worker() == 0 {
            self.next_tick = Some(now);
            cx.schedule_at(now);
        }
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = cx.now().0;
        let gen = Arc::clone(&self.gen);
        let mut g = gen.lock();
        let mut out = Batch::new();
        for p in batch.drain() {
            if let Some(q) = self.input(&mut g, &p, now) {
                // At most one answer per packet in: `out` has room.
                let _ = out.push(q);
            }
        }
        drop(g);
        cx.push(0, &mut out);
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        let now = cx.now();
        match self.next_tick {
            Some(at) if now >= at => {}
            _ => return,
        }
        let at = Timestamp(now.0.saturating_add(TICK_NS));
        self.next_tick = Some(at);
        cx.schedule_at(at);
        let gen = Arc::clone(&self.gen);
        let mut sent = Vec::new();
        self.tick(&mut gen.lock(), now.0, &mut sent);
        let mut b = Batch::new();
        for p in sent {
            if let Err(p) = b.push(p) {
                cx.push(0, &mut b);
                let _ = b.push(p);
            }
        }
        cx.push(0, &mut b);
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("initiated", c.initiated);
        s.counter("completed", c.completed);
        s.counter("timeouts", c.timeouts);
        s.counter("resets", c.resets);
        s.counter("refused", c.refused);
        s.counter("unknown", c.unknown);
        s.counter("drops", c.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, ip_ok, tcp_ok, Rig};
    use super::*;
    use crate::ip::header::{be16, be32};
    use bricks_element::Processing;
    use bricks_runtime::testing::make_element;

    fn rig(args: &str) -> Rig {
        Rig::alone(&CLASS, args, &[Processing::Push], &[Processing::Push])
    }

    const MS: u64 = 1_000_000;

    /// From the server 10.0.0.1:80 to the client of `syn`.
    fn answer(syn: &[u8], seq: u32, ack: u32, flags: u8, data: &[u8]) -> Vec<u8> {
        let client: [u8; 4] = syn[12..16].try_into().unwrap();
        datagram(
            [10, 0, 0, 1],
            client,
            80,
            be16(syn, 20),
            seq,
            ack,
            flags,
            &[],
            data,
        )
    }

    #[test]
    fn a_connection_from_syn_to_both_fins() {
        let mut r = rig("7.1.0.0/16, 10.0.0.1, 10");
        let t0 = r.now().0;
        r.start();
        // 10 a second: the first is due 100 ms on.
        r.advance_to(Timestamp(t0));
        assert!(r.take(0).is_empty());
        for k in 1..=101 {
            r.advance_to(Timestamp(t0 + k * MS));
        }
        let syn = r.take(0);
        assert_eq!(syn.len(), 1, "one connection in 101 ms");
        let syn = &syn[0];
        assert!(ip_ok(syn) && tcp_ok(syn));
        assert_eq!(syn[12..14], [7, 1]);
        assert_eq!(syn[16..20], [10, 0, 0, 1]);
        assert_eq!((be16(syn, 22), syn[33], syn[8]), (80, SYN, 250));
        let iss = be32(syn, 24);
        // The SYN-ACK: the request goes with its FIN.
        r.push(0, &[&answer(syn, 5000, iss + 1, SYN | ACK, &[])]);
        let req = r.take(0);
        assert_eq!(req.len(), 1);
        let req = &req[0];
        assert!(tcp_ok(req));
        assert_eq!(req[33], ACK | PSH | FIN);
        assert_eq!((be32(req, 24), be32(req, 28)), (iss + 1, 5001));
        let text = String::from_utf8(req[40..].to_vec()).unwrap();
        assert!(
            text.starts_with("GET /spec/") && text.ends_with(" HTTP/1.0\r\n\r\n"),
            "{text}"
        );
        let len = (req.len() - 40) as u32;
        // The answer and the server's FIN: acknowledged, and done.
        r.push(
            0,
            &[&answer(
                syn,
                5001,
                iss + 2 + len,
                ACK | FIN,
                b"HTTP/1.0 200 OK\r\n",
            )],
        );
        let last = r.take(0);
        assert_eq!(last.len(), 1);
        assert_eq!(last[0][33], ACK | FIN);
        assert_eq!(be32(&last[0], 28), 5001 + 17 + 1);
        assert_eq!(be32(&last[0], 24), iss + 1 + len + 1);
        assert_eq!(r.counter("completed"), 1);
        // Done: the next segment of that connection gets a reset.
        r.push(0, &[&answer(syn, 5019, iss + 2 + len, ACK, &[])]);
        assert_eq!(r.take(0)[0][33], RST);
        assert_eq!(r.counter("unknown"), 1);
        // A reset is not answered.
        r.push(0, &[&answer(syn, 5019, iss + 2 + len, RST, &[])]);
        assert!(r.take(0).is_empty());
    }

    #[test]
    fn unanswered_connections_retry_then_give_up() {
        let mut r = rig("7.1.0.0/16, 10.0.0.1, 1");
        let t0 = r.now().0;
        r.start();
        // A tick every 10 ms for 9 s: connections start each second and
        // each sends its SYN again every second, giving up after six.
        let mut k = 0;
        while k * 10 <= 9_000 {
            r.advance_to(Timestamp(t0 + k * 10 * MS));
            k += 1;
        }
        let out = r.take(0);
        assert!(out.iter().all(|p| p[33] == SYN && tcp_ok(p)));
        assert!(r.counter("initiated") >= 8);
        assert!(r.counter("timeouts") >= 1, "{}", r.counter("timeouts"));
        // Every connection sent at most seven times (once, then six more).
        let mut per: HashMap<(Vec<u8>, u16), usize> = HashMap::new();
        for p in &out {
            *per.entry((p[12..16].to_vec(), be16(p, 20))).or_default() += 1;
        }
        assert!(per.values().all(|&n| n <= 7), "{per:?}");
        assert!(per.values().any(|&n| n == 7), "{per:?}");
    }

    #[test]
    fn the_pool_is_bounded() {
        let mut r = rig("7.1.0.0/16, 10.0.0.1, 100");
        let t0 = r.now().0;
        r.start();
        // 100 a second, never answered, for 15 s in ticks of 10 ms: a
        // pool of 1000 is enough (each lives about 7 s); none refused.
        let mut k = 0;
        while k * 10 <= 15_000 {
            r.advance_to(Timestamp(t0 + k * 10 * MS));
            let _ = r.take(0);
            k += 1;
        }
        assert!(r.counter("initiated") >= 1400);
        assert_eq!(r.counter("refused"), 0);
        let g = r.shared::<Shared>();
        assert!(g.lock().cbs.len() <= 1000);
    }

    #[test]
    fn a_clock_jump_starts_one_connection() {
        let mut r = rig("7.1.0.0/16, 10.0.0.1, 1000");
        let t0 = r.now().0;
        r.start();
        r.advance_to(Timestamp(t0 + 100_000 * MS));
        assert_eq!(r.counter("initiated"), 1);
        r.advance_to(Timestamp(t0 + 100_010 * MS));
        assert_eq!(r.counter("initiated"), 11);
    }

    #[test]
    fn not_tcp_is_dropped() {
        let mut r = rig("7.1.0.0/16, 10.0.0.1, 1");
        let mut udp = datagram([1; 4], [2; 4], 80, 1, 0, 0, ACK, &[], &[]);
        udp[9] = 17;
        r.push(0, &[&udp, &udp[..30]]);
        assert!(r.take(0).is_empty());
        assert_eq!(r.counter("drops"), 2);
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(m("7.1.0.0/16, 1.0.0.1, 500").is_ok());
        assert!(m("7.1.0.0/16, 1.0.0.1, 0").is_err());
        assert!(m("7.1.0.0/16, 1.0.0.1, 10001").is_err());
        assert!(m("7.1.0.0/16, 1.0.0.1").is_err());
        assert!(m("nowhere, 1.0.0.1, 5").is_err());
    }
}
