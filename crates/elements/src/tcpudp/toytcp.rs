//! `ToyTCP`: a toy TCP client that stresses a receiver, as Click's
//! experimental `elements/local/toytcp.cc`: it opens a connection to
//! DPORT and then answers every segment it receives with a one-byte
//! segment just ahead of the stream (sequence numbers past the next one
//! expected, so they wait in the receiver's out-of-order queue, RFC 9293
//! section 3.10.7.4), one more every six, growing the exchange.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_packet::Timestamp;
use std::sync::{Arc, Mutex, MutexGuard};

use super::segment::{port_word, ACK, RST, SYN};
use crate::ip::header::{be16, be32};

/// The `ToyTCP` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ToyTCP",
    ports: "1/1",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

/// Click's timer period.
const TICK_NS: u64 = 1_000_000_000;

static MANUAL: Manual = Manual {
    summary: "a toy TCP client that keeps a receiver busy",
    synopsis: "ToyTCP(DPORT [, LIMIT])",
    description: "Opens a TCP connection to port DPORT and keeps its peer receiving \
        segments. Input and output carry bare TCP segments: the packet starts with the \
        TCP header (strip the IP header before, as `Strip(34)` does for Ethernet and a \
        20-byte IP header; add one after with IPEncap and SetTCPChecksum).\n\n\
        Once a second a timer sends a SYN from a source port picked from the clock (1024 \
        to 61023) with an initial sequence number from the clock's seconds, until a \
        segment from DPORT to that port acknowledges it: then the connection is up. Every \
        segment that arrives is answered, and every sixth twice: before the connection, \
        with the SYN again; after, with an ACK for the peer's SYN carrying one byte at a \
        sequence number up to 4096 past the next one (never the next one itself, so the \
        data waits in the peer's out-of-order queue and the peer answers with duplicate \
        ACKs, which are answered in turn). The timer also sends one such segment a \
        second. The window alternates between 61440 and, every fourth segment, 30720. A \
        reset from the peer stops everything until the next tick, which starts again \
        with a new port and sequence number.\n\n\
        Click prints its counts every second and a line when it connects; bricks counts \
        (`good`, `bad`, `sent`, `connections`) instead. LIMIT (a bricks addition; Click \
        has no bound) stops sending after that many segments, so that the exchange, \
        which grows by one segment in six each round trip, stays bounded. The connection \
        is one for all workers; the timer runs on the first.",
    ports: "one push input, one push output",
    keywords: &[
        Keyword {
            name: "DPORT",
            ty: "TCP port: number or name",
            default: None,
            doc: "the peer's port; positional",
        },
        Keyword {
            name: "LIMIT",
            ty: "unsigned",
            default: Some("no limit"),
            doc: "most segments sent in all (bricks)",
        },
    ],
    counters: &[
        ("good", "segments received from the peer, resets aside"),
        ("bad", "resets received"),
        ("sent", "segments sent"),
        ("connections", "connections made"),
    ],
    example: "FromDevice(eth0, 0) -> Classifier(12/0800 23/06) -> Strip(34) -> ToyTCP(5432) \
        -> IPEncap(6, 18.26.4.106, 18.26.4.123) -> SetTCPChecksum \
        -> EtherEncap(0x0800, 0:e0:29:5:e5:6f, 00:90:27:e0:23:1f) -> Queue -> ToDevice(eth0);",
    see_also: &["TCPReflector", "IPEncap", "SetTCPChecksum"],
};

/// The connection's state, one for all workers (Click's members).
#[derive(Debug, Default)]
struct Toy {
    started: bool,
    sport: u16,
    iss: u32,
    snd_nxt: u32,
    rcv_nxt: u32,
    connected: bool,
    grow: u32,
    wc: u32,
    reset: bool,
    /// Segments sent since the start (Click's `_out`, which also spreads
    /// the data's sequence numbers).
    out: u64,
}

impl Toy {
    /// Click's `restart`: a port and an initial sequence number from the
    /// clock.
    fn restart(&mut self, now: Timestamp) {
        self.iss = (now.secs() as u32) & 0x0fff_ffff;
        self.snd_nxt = self.iss;
        self.rcv_nxt = 0;
        let usec = now.subsec_nanos() / 1000;
        self.sport = 1024 + (usec % 60_000) as u16;
        self.connected = false;
        self.grow = 0;
        self.wc = 0;
        self.reset = false;
        self.started = true;
    }
}

#[derive(Debug, Default)]
struct Shared(Mutex<Toy>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Toy> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let dport: String = args.read_mp("DPORT")?;
    let dport =
        port_word(dport.trim()).map_err(|why| ArgError::new(format!("bad DPORT: {why}")))?;
    let limit: Option<u64> = args.read("LIMIT")?;
    let toy = args.shared(|_| Ok(Shared::default()))?;
    Ok(Box::new(ToyTCP {
        toy,
        dport,
        limit: limit.unwrap_or(u64::MAX),
        next_tick: None,
        good: 0,
        bad: 0,
        sent: 0,
        connections: 0,
    }))
}

/// A toy TCP client.
#[derive(Debug)]
pub struct ToyTCP {
    toy: Arc<Shared>,
    dport: u16,
    limit: u64,
    /// When this instance's timer is next due (worker 0's only).
    next_tick: Option<Timestamp>,
    good: u64,
    bad: u64,
    sent: u64,
    connections: u64,
}

impl ToyTCP {
    /// Click's `tcp_input`: learns from a segment of the peer.
    fn input(&mut self, t: &mut Toy, seg: &[u8]) {
        if seg.len() < 20 || be16(seg, 0) != self.dport || be16(seg, 2) != t.sport {
            return;
        }
        let (seq, ack, flags) = (be32(seg, 4), be32(seg, 8), seg[13]);
        if flags & (ACK | RST) == ACK && ack == t.iss.wrapping_add(1) && !t.connected {
            t.snd_nxt = t.iss.wrapping_add(1);
            t.rcv_nxt = seq.wrapping_add(1);
            t.connected = true;
            self.connections += 1;
        }
        if flags & RST != 0 {
            self.bad += 1;
            t.reset = true;
        } else {
            self.good += 1;
        }
    }

    /// Click's `tcp_output`: the next segment, `None` past LIMIT.
    fn output(&mut self, t: &mut Toy) -> Option<Packet> {
        if t.out >= self.limit {
            return None;
        }
        let paylen = usize::from(t.connected);
        let mut p = Packet::new();
        p.put_back(20 + paylen).ok()?;
        let th = p.data_mut();
        th[0..2].copy_from_slice(&t.sport.to_be_bytes());
        th[2..4].copy_from_slice(&self.dport.to_be_bytes());
        let seq = if t.connected {
            t.snd_nxt
                .wrapping_add(1)
                .wrapping_add((t.out & 0xfff) as u32)
        } else {
            t.snd_nxt
        };
        th[4..8].copy_from_slice(&seq.to_be_bytes());
        th[12] = 5 << 4;
        if t.connected {
            th[13] = ACK;
            th[8..12].copy_from_slice(&t.rcv_nxt.to_be_bytes());
        } else {
            th[13] = SYN;
        }
        let window: u16 = if t.wc > 2 { 30 * 1024 } else { 60 * 1024 };
        t.wc = if t.wc > 2 { 0 } else { t.wc + 1 };
        th[14..16].copy_from_slice(&window.to_be_bytes());
        t.out += 1;
        self.sent += 1;
        Some(p)
    }

    fn start_if_needed(&self, t: &mut Toy, now: Timestamp) {
        if !t.started {
            t.restart(now);
        }
    }
}

impl Element for ToyTCP {
    fn start(&mut self, cx: &mut Context<'_>) {
        let now = cx.now();
        self.start_if_needed(&mut self.toy.lock(), now);
        if cx.worker() == 0 {
            let at = Timestamp(now.0.saturating_add(TICK_NS));
            self.next_tick = Some(at);
            cx.schedule_at(at);
        }
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let toy = Arc::clone(&self.toy);
        let mut t = toy.lock();
        self.start_if_needed(&mut t, cx.now());
        let mut out = Batch::new();
        for p in batch.drain() {
            if t.reset {
                continue;
            }
            self.input(&mut t, p.data());
            drop(p);
            for _ in 0..1 + usize::from(t.grow >= 5) {
                if let Some(q) = self.output(&mut t) {
                    if let Err(q) = out.push(q) {
                        cx.push(0, &mut out);
                        let _ = out.push(q);
                    }
                }
            }
            t.grow = if t.grow >= 5 { 0 } else { t.grow + 1 };
        }
        drop(t);
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
        let toy = Arc::clone(&self.toy);
        let mut t = toy.lock();
        if t.reset {
            t.restart(now);
        }
        let p = self.output(&mut t);
        drop(t);
        if let Some(p) = p {
            cx.push_one(0, p);
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("good", self.good);
        s.counter("bad", self.bad);
        s.counter("sent", self.sent);
        s.counter("connections", self.connections);
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::Rig;
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::make_element;

    fn rig(args: &str) -> Rig {
        Rig::alone(&CLASS, args, &[Processing::Push], &[Processing::Push])
    }

    /// A bare TCP header from the peer's `from` port to `to`.
    fn from_peer(from: u16, to: u16, seq: u32, ack: u32, flags: u8) -> Vec<u8> {
        let mut h = vec![0u8; 20];
        h[0..2].copy_from_slice(&from.to_be_bytes());
        h[2..4].copy_from_slice(&to.to_be_bytes());
        h[4..8].copy_from_slice(&seq.to_be_bytes());
        h[8..12].copy_from_slice(&ack.to_be_bytes());
        h[12] = 0x50;
        h[13] = flags;
        h
    }

    #[test]
    fn syns_each_second_then_data_ahead_of_the_stream() {
        let mut r = rig("5432");
        let t0 = Timestamp::from_parts(1_000_000_123, 456_789_000);
        r.set_now(t0);
        r.start();
        assert!(r.take(0).is_empty());
        r.advance_to(Timestamp(t0.0 + TICK_NS));
        let syn = r.take(0);
        assert_eq!(syn.len(), 1);
        let s = &syn[0];
        let sport = be16(s, 0);
        // The port from the clock's microseconds, the ISS from its seconds.
        assert_eq!(sport, 1024 + (456_789 % 60_000) as u16);
        let iss = 1_000_000_123 & 0x0fff_ffff;
        assert_eq!(be32(s, 4), iss);
        assert_eq!((be16(s, 2), s[13], s.len()), (5432, SYN, 20));
        // The SYN-ACK connects; the answer acknowledges it, one byte ahead.
        r.push(0, &[&from_peer(5432, sport, 7000, iss + 1, SYN | ACK)]);
        let a = r.take(0);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].len(), 21);
        assert_eq!(a[0][13], ACK);
        assert_eq!(be32(&a[0], 8), 7001);
        // Sent 1 before: seq = ISS + 1 + 1 + 1.
        assert_eq!(be32(&a[0], 4), iss + 3);
        assert_eq!(r.counter("connections"), 1);
        // Every sixth segment in gets two out.
        for _ in 0..5 {
            r.push(0, &[&from_peer(5432, sport, 7001, iss + 1, ACK)]);
        }
        assert_eq!(r.take(0).len(), 6);
        // Segments for another port are answered but teach nothing.
        r.push(
            0,
            &[&from_peer(5432, sport.wrapping_add(1), 1, 1, ACK | RST)],
        );
        assert_eq!(r.take(0).len(), 1);
        assert_eq!(r.counter("bad"), 0);
        // A reset silences it until the next tick, which starts over.
        r.push(0, &[&from_peer(5432, sport, 7001, 0, RST)]);
        assert_eq!(r.counter("bad"), 1);
        // (That segment is still answered, as in Click.)
        assert_eq!(r.take(0).len(), 1);
        r.push(0, &[&from_peer(5432, sport, 7001, iss + 1, ACK)]);
        assert!(r.take(0).is_empty());
        r.advance_to(Timestamp(t0.0 + 2 * TICK_NS));
        let again = r.take(0);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0][13], SYN);
    }

    #[test]
    fn limit_bounds_what_is_sent() {
        let mut r = rig("DPORT 80, LIMIT 3");
        let t0 = Timestamp::from_parts(50, 0);
        r.set_now(t0);
        r.start();
        for k in 1..=5 {
            r.advance_to(Timestamp(t0.0 + k * TICK_NS));
        }
        let f = from_peer(1, 2, 3, 4, ACK);
        r.push(0, &[&f, &f, &f, &f]);
        assert_eq!(r.take(0).len(), 3);
        assert_eq!(r.counter("sent"), 3);
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(m("5432").is_ok());
        assert!(m("www").is_ok());
        assert!(m("").is_err());
        assert!(m("70000").is_err());
        assert!(m("80, 5").is_err());
        assert!(m("80, LIMIT 5").is_ok());
    }
}
