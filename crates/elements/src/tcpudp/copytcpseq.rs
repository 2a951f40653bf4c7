//! `CopyTCPSeq`: remembers how far the TCP segments seen on one path
//! reach in sequence space and writes that number into the segments of
//! another, as Click's experimental `elements/local/copytcpseq.cc`: the
//! bare ACKs of TCPAck get the connection's next sequence number from its
//! outgoing segments.

use super::segment::{self, seq_gt};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Manual, Packet, PortInfo, Stats,
};
use std::sync::{Arc, Mutex, MutexGuard};

/// The `CopyTCPSeq` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CopyTCPSeq",
    ports: "2/2",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets TCP sequence numbers",
    synopsis: "CopyTCPSeq()",
    description: "TCP segments on input 0 go out of output 0 unchanged, and the element \
        remembers how far the furthest of them reaches: its sequence number plus its \
        length in sequence space (data, SYN and FIN), compared modulo 2^32 (RFC 9293 \
        section 3.4), since it started or its `reset` handler was written. Segments on \
        input 1 go out of output 1 with that number written in (the TCP checksum updated \
        incrementally): the next sequence number of the connection, which a bare ACK \
        must carry. Segments are TCP/IP, the IP header at the network header annotation \
        (else at the start).\n\n\
        Click remembers the highest segment's own sequence number, so its bare ACKs \
        carry a number the receiver has already seen past, and a TCP receiver discards \
        them (RFC 9293 section 3.10.7.4); bricks writes the number after it.\n\n\
        Before a number is remembered, segments on input 1 go on unchanged and are \
        counted (Click writes whatever its unset number holds); packets on input 1 that \
        hold no TCP segment are dropped and counted, and those on input 0 go on without \
        teaching anything. The remembered number is one for all workers.",
    ports: "input 0, output 0: segments to learn from; input 1, output 1: segments to \
        change; each agnostic",
    keywords: &[],
    counters: &[
        (
            "unset",
            "segments on input 1 before any number was learnt (unchanged)",
        ),
        (
            "drops",
            "packets on input 1 without a TCP segment (dropped)",
        ),
    ],
    example: super::STACK_EXAMPLE,
    see_also: &["CopyFlowID", "TCPAck"],
};

#[derive(Debug, Default)]
struct Shared(Mutex<Option<u32>>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Option<u32>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let seq = args.shared(|_| Ok(Shared::default()))?;
    Ok(Box::new(CopyTCPSeq {
        seq,
        unset: 0,
        drops: 0,
    }))
}

/// Copies the highest sequence number of one path into another.
#[derive(Debug)]
pub struct CopyTCPSeq {
    seq: Arc<Shared>,
    unset: u64,
    drops: u64,
}

impl CopyTCPSeq {
    fn monitor(&mut self, p: &Packet) {
        let Ok(s) = segment::locate_in(p) else {
            return;
        };
        let seq = s.seq(p.data()).wrapping_add(s.seq_len(p.data()));
        let mut m = self.seq.lock();
        match *m {
            Some(old) if !seq_gt(seq, old) => {}
            _ => *m = Some(seq),
        }
    }

    fn set(&mut self, p: &mut Packet) -> bool {
        let Ok(s) = segment::locate_in(p) else {
            self.drops += 1;
            return false;
        };
        let Some(seq) = *self.seq.lock() else {
            self.unset += 1;
            return true;
        };
        s.set_tcp32(p.data_mut(), 4, seq);
        true
    }

    fn apply(&mut self, port: usize, b: &mut Batch) {
        if port == 0 {
            for p in b.iter() {
                self.monitor(p);
            }
        } else {
            b.retain(|p| self.set(p));
        }
    }
}

impl Element for CopyTCPSeq {
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(port, batch);
        cx.push(port, batch);
    }

    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        cx.pull(port, &mut b, max);
        self.apply(port, &mut b);
        out.append(&mut b);
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                *self.seq.lock() = None;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (CopyTCPSeq has reset)"
            )),
        }
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "reset"
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::w("reset")];
        H
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("unset", self.unset);
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, tcp_ok, FlowRefs, Rig};
    use super::super::segment::{ACK, FIN, SYN};
    use super::*;
    use crate::ip::header::be32;
    use bricks_element::Processing;

    /// A segment of one byte at `seq`: it reaches `seq + 1`.
    fn seg(seq: u32) -> Vec<u8> {
        datagram([10, 0, 0, 1], [10, 0, 0, 2], 1, 2, seq, 0, ACK, &[], b"z")
    }

    #[test]
    fn writes_the_highest_number_seen() {
        let mut r = Rig::new(
            &CLASS,
            "",
            PortInfo {
                inputs: vec![Processing::Push; 2],
                outputs: vec![Processing::Push; 2],
            },
            &FlowRefs::default(),
        );
        r.push(1, &[&seg(5)]);
        assert_eq!(be32(&r.take(1)[0], 24), 5);
        assert_eq!(r.counter("unset"), 1);
        // 0xfffffff0 then 3 (after it, modulo 2^32) then 0xfffffff8.
        r.push(
            0,
            &[&seg(0xffff_fff0), &seg(3), &seg(0xffff_fff8), &seg(3)[..30]],
        );
        assert_eq!(r.take(0).len(), 4);
        r.push(1, &[&seg(9), &seg(9)[..30]]);
        let out = r.take(1);
        assert_eq!(out.len(), 1);
        assert_eq!(be32(&out[0], 24), 4);
        // A SYN counts for one, a FIN too.
        let syn = datagram([1; 4], [2; 4], 1, 2, 100, 0, SYN, &[], &[]);
        let fin = datagram([1; 4], [2; 4], 1, 2, 200, 0, FIN | ACK, &[], b"ab");
        r.write("reset", "").unwrap();
        r.push(0, &[&syn]);
        r.push(1, &[&seg(9)]);
        assert_eq!(be32(&r.take(1)[0], 24), 101);
        r.push(0, &[&fin]);
        r.push(1, &[&seg(9)]);
        assert_eq!(be32(&r.take(1)[0], 24), 203);
        assert!(tcp_ok(&out[0]));
        assert_eq!(r.counter("drops"), 1);
        r.write("reset", "").unwrap();
        r.push(0, &[&seg(1)]);
        r.push(1, &[&seg(9)]);
        assert_eq!(be32(&r.take(1)[0], 24), 2);
    }
}
