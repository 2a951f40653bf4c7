//! `TCPAck`: TCP's acknowledgments for a connection built of elements, as
//! Click's experimental `elements/local/tcpack.cc`. Incoming segments move
//! the acknowledgment number on (as far as the TCPBuffer downstream holds
//! the stream without a hole); outgoing segments carry it; when no
//! outgoing segment has carried it for DELAY, a bare ACK is sent (a
//! delayed ACK, RFC 9293 section 3.8.6.3).

use super::segment::{self, TcpIp, ACK, FIN, RST, SYN};
use super::tcpbuffer::{self, Buffer};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_packet::Timestamp;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The `TCPAck` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TCPAck",
    ports: "2/3",
    processing: "aa/aah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "acknowledges TCP packets",
    synopsis: "TCPAck([DELAY])",
    description: "Acknowledges TCP like a TCP endpoint, for a connection made of elements \
        (TCPConn, TCPBuffer, BufferConverter). Packets are TCP/IP with the IP header at the \
        network header annotation (else at the start); input and output 0 carry the \
        connection's incoming segments, input and output 1 its outgoing ones, both push \
        or pull.\n\n\
        Nothing passes before a SYN-ACK has been seen: incoming (the next number to \
        acknowledge is its sequence number plus one) or outgoing (its acknowledgment \
        number). An incoming segment that starts at the number expected moves it on by \
        the segment's length, and then past whatever the TCPBuffer downstream of output 0 \
        (found by flow, Click's flow-based router context: the configuration must have \
        one) already holds without a hole; any incoming data segment, in order or not, \
        asks for an acknowledgment. SYN, FIN and RST segments pass without one. An \
        outgoing segment gets the acknowledgment number and the ACK bit (its TCP \
        checksum updated) and satisfies the request; a request that no outgoing segment \
        satisfied within DELAY makes a bare ACK (40 bytes, TOS 0x10, Don't Fragment, TTL \
        255, window 32120) on output 2, without addresses, ports or sequence number: \
        CopyFlowID and CopyTCPSeq downstream fill them in.\n\n\
        Differences from Click: Click does not set the ACK bit on the segments it tags \
        (RFC 9293 makes the acknowledgment number count only with it); Click reads any \
        packet as TCP, bricks drops what is not and counts it. The state is one for all \
        workers.",
    ports: "input 0 and output 0: incoming segments; input 1 and output 1: outgoing \
        segments; output 2 (push): bare ACKs",
    keywords: &[Keyword {
        name: "DELAY",
        ty: "time (seconds, or with a unit: 20ms), millisecond precision",
        default: Some("20ms"),
        doc: "how long an acknowledgment may wait for an outgoing segment; positional",
    }],
    counters: &[
        ("acks", "bare ACKs sent"),
        (
            "tagged",
            "outgoing segments given the acknowledgment number",
        ),
        (
            "out_of_order",
            "incoming data segments not at the expected number",
        ),
        ("early", "segments before any SYN-ACK (dropped)"),
        ("drops", "packets that hold no TCP segment (dropped)"),
    ],
    example: super::STACK_EXAMPLE,
    see_also: &["TCPBuffer", "TCPConn", "CopyFlowID", "CopyTCPSeq"],
};

/// The acknowledgment state, one for all workers.
#[derive(Debug, Default)]
struct AckState {
    synack: bool,
    needack: bool,
    ack_nxt: u32,
}

/// The state every worker's TCPAck instance shares.
#[derive(Debug, Default)]
struct Shared(Mutex<AckState>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, AckState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let delay: Duration = args.read_p("DELAY")?.unwrap_or(Duration::from_millis(20));
    // Click keeps whole milliseconds.
    let delay_ns = u64::try_from(delay.as_millis())
        .unwrap_or(u64::MAX / 1_000_000)
        .saturating_mul(1_000_000);
    let buffer = tcpbuffer::downstream_buffer(args, 0)?;
    let state = args.shared(|_| Ok(Shared::default()))?;
    Ok(Box::new(TCPAck {
        state,
        buffer,
        delay_ns,
        timer_at: None,
        acks: 0,
        tagged: 0,
        out_of_order: 0,
        early: 0,
        drops: 0,
    }))
}

/// Acknowledges TCP segments.
#[derive(Debug)]
pub struct TCPAck {
    state: Arc<Shared>,
    buffer: Arc<Buffer>,
    delay_ns: u64,
    /// When this instance's timer is due, while it is set.
    timer_at: Option<Timestamp>,
    acks: u64,
    tagged: u64,
    out_of_order: u64,
    early: u64,
    drops: u64,
}

impl TCPAck {
    /// An incoming segment: whether it goes on (Click's `iput`).
    fn iput(&mut self, p: &Packet, cx: &mut Context<'_>) -> bool {
        let Ok(s) = segment::locate_in(p) else {
            self.drops += 1;
            return false;
        };
        let d = p.data();
        let flags = s.flags(d);
        let mut st = self.state.lock();
        if !st.synack && flags & (SYN | ACK) == SYN | ACK {
            st.ack_nxt = s.seq(d).wrapping_add(1);
            st.synack = true;
        }
        if !st.synack {
            self.early += 1;
            return false;
        }
        if flags & (SYN | FIN | RST) != 0 {
            return true;
        }
        if s.seq(d) == st.ack_nxt {
            let next = st.ack_nxt.wrapping_add(s.seq_len(d));
            st.ack_nxt = self.buffer.next_missing(next).unwrap_or(next);
        } else {
            self.out_of_order += 1;
        }
        st.needack = true;
        drop(st);
        if self.timer_at.is_none() {
            let at = Timestamp(cx.now().0.saturating_add(self.delay_ns));
            self.timer_at = Some(at);
            cx.schedule_at(at);
        }
        true
    }

    /// An outgoing segment: whether it goes on, tagged (Click's `oput`).
    fn oput(&mut self, p: &mut Packet) -> bool {
        let Ok(s) = segment::locate_in(p) else {
            self.drops += 1;
            return false;
        };
        let d = p.data_mut();
        let mut st = self.state.lock();
        if s.flags(d) & (SYN | ACK) == SYN | ACK {
            st.ack_nxt = s.ack(d);
            st.synack = true;
        }
        if !st.synack {
            self.early += 1;
            return false;
        }
        st.needack = false;
        s.set_tcp32(d, 8, st.ack_nxt);
        s.set_flags(d, s.flags(d) | ACK);
        self.tagged += 1;
        true
    }

    fn filter(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if port == 0 {
            batch.retain(|p| self.iput(p, cx));
        } else {
            batch.retain(|p| self.oput(p));
        }
    }
}

impl Element for TCPAck {
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.filter(port, batch, cx);
        cx.push(port, batch);
    }

    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        cx.pull(port, &mut b, max);
        self.filter(port, &mut b, cx);
        out.append(&mut b);
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        match self.timer_at {
            Some(at) if cx.now() >= at => self.timer_at = None,
            _ => return,
        }
        let ack_nxt = {
            let mut st = self.state.lock();
            if !st.needack {
                return;
            }
            st.needack = false;
            st.ack_nxt
        };
        let bare = TcpIp {
            ack: ack_nxt,
            flags: ACK,
            window: 32120,
            tos: 0x10,
            df: true,
            ..TcpIp::default()
        };
        if let Some(p) = bare.packet() {
            self.acks += 1;
            cx.push_one(2, p);
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("acks", self.acks);
        s.counter("tagged", self.tagged);
        s.counter("out_of_order", self.out_of_order);
        s.counter("early", self.early);
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, port_info, tcp_ok, FlowRefs, Rig};
    use super::super::segment::PSH;
    use super::super::tcpbuffer;
    use super::*;
    use crate::ip::header::be32;
    use bricks_element::Processing;

    fn seg(seq: u32, ack: u32, flags: u8, len: usize) -> Vec<u8> {
        datagram(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            80,
            4000,
            seq,
            ack,
            flags,
            &[],
            &vec![b'x'; len],
        )
    }

    /// A TCPAck with a TCPBuffer downstream (a rig of its own, whose
    /// buffer the TCPAck finds) and push ports.
    fn rigs() -> (Rig, Rig) {
        let buf = Rig::alone(
            &tcpbuffer::CLASS,
            "",
            &[Processing::Push],
            &[Processing::Pull],
        );
        let refs = FlowRefs(vec![("TCPBuffer", buf.state())]);
        let ack = Rig::new(
            &CLASS,
            "DELAY 20ms",
            port_info(&[Processing::Push; 2], &[Processing::Push; 3]),
            &refs,
        );
        (ack, buf)
    }

    #[test]
    fn needs_a_tcpbuffer_downstream() {
        let err = Rig::try_new(
            &CLASS,
            "",
            port_info(&[Processing::Push; 2], &[Processing::Push; 3]),
            &FlowRefs::default(),
        )
        .err()
        .unwrap();
        assert!(
            err.contains("need at least 1 downstream TCPBuffer"),
            "{err}"
        );
    }

    #[test]
    fn acknowledges_in_order_data_and_tags_outgoing_segments() {
        let (mut ack, mut buf) = rigs();
        let t0 = ack.now();
        // Nothing before a SYN-ACK.
        ack.push(0, &[&seg(5, 0, ACK, 3)]);
        ack.push(1, &[&seg(1, 0, PSH, 3)]);
        assert!(ack.take(0).is_empty() && ack.take(1).is_empty());
        assert_eq!(ack.counter("early"), 2);
        // The SYN-ACK: next to acknowledge is 1001.
        let synack = seg(1000, 77, SYN | ACK, 0);
        ack.push(0, &[&synack]);
        buf.push(0, &[&synack]);
        assert_eq!(ack.take(0).len(), 1);
        // Data at 1001 (10 bytes); 1021 already waits in the buffer.
        let later = seg(1021, 77, ACK, 5);
        buf.push(0, &[&later]);
        ack.push(0, &[&seg(1001, 77, ACK, 10)]);
        // 1011 is missing: acknowledge up to it.
        ack.push(1, &[&seg(77, 0, PSH, 4)]);
        let out = ack.take(1);
        assert_eq!(be32(&out[0], 28), 1011);
        assert_eq!(out[0][33], PSH | ACK);
        assert!(tcp_ok(&out[0]));
        // The outgoing segment carried the acknowledgment: no bare ACK.
        ack.advance_to(Timestamp(t0.0 + 30_000_000));
        assert!(ack.take(2).is_empty());
        // 1011 arrives, and the stream runs on through 1021 to 1026.
        buf.push(0, &[&seg(1011, 77, ACK, 10)]);
        ack.push(0, &[&seg(1011, 77, ACK, 10)]);
        ack.advance_to(Timestamp(t0.0 + 40_000_000));
        assert!(ack.take(2).is_empty(), "not yet 20 ms");
        ack.advance_to(Timestamp(t0.0 + 60_000_000));
        let bare = ack.take(2);
        assert_eq!(bare.len(), 1);
        assert_eq!(bare[0].len(), 40);
        assert_eq!(be32(&bare[0], 28), 1026);
        assert_eq!(bare[0][33], ACK);
        assert_eq!(bare[0][1], 0x10);
        assert_eq!(ack.counter("acks"), 1);
        // Out of order data asks for an acknowledgment of the same number.
        ack.push(0, &[&seg(2000, 77, ACK, 1)]);
        assert_eq!(ack.counter("out_of_order"), 1);
        ack.advance_to(Timestamp(t0.0 + 100_000_000));
        assert_eq!(be32(&ack.take(2)[0], 28), 1026);
    }

    #[test]
    fn an_outgoing_synack_sets_the_number() {
        let (mut ack, _buf) = rigs();
        ack.push(1, &[&seg(500, 9000, SYN | ACK, 0)]);
        ack.push(1, &[&seg(501, 0, PSH, 2)]);
        let out = ack.take(1);
        assert_eq!(out.len(), 2);
        assert_eq!(be32(&out[1], 28), 9000);
        ack.push(0, &[&seg(1, 2, ACK, 3)[..20]]);
        assert_eq!(ack.counter("drops"), 1);
    }
}
