//! `CopyTCPSeq`: remembers how far the TCP segments seen on one path
//! reach in sequence space and writes that number into the segments of
//! another, as Click's experimental `elements/local/copytcpseq.cc`: the
//! bare ACKs of TCPAck get the connection's next sequence number from its
//! outgoing segments.

use super::segment::{self, seq_gt};
use super::{Copied, CopyRule, LearnAndCopy};
use bricks_element::{ElementClass, Manual, Packet};

/// The `CopyTCPSeq` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CopyTCPSeq",
    ports: "2/2",
    processing: "a/a",
    manual: &MANUAL,
    make: super::make_copy::<NextSeq>,
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

/// The rule of CopyTCPSeq: the furthest sequence number seen.
#[derive(Debug)]
pub struct NextSeq;

/// Copies the highest sequence number of one path into another.
pub type CopyTCPSeq = LearnAndCopy<NextSeq>;

impl CopyRule for NextSeq {
    type Value = u32;
    const CLASS: &'static str = "CopyTCPSeq";

    fn learn(p: &Packet, old: Option<u32>) -> Option<u32> {
        let Ok(s) = segment::locate_in(p) else {
            return old;
        };
        let seq = s.seq(p.data()).wrapping_add(s.seq_len(p.data()));
        match old {
            Some(old) if !seq_gt(seq, old) => Some(old),
            _ => Some(seq),
        }
    }

    fn write(p: &mut Packet, value: Option<u32>) -> Copied {
        let Ok(s) = segment::locate_in(p) else {
            return Copied::Dropped;
        };
        let Some(seq) = value else {
            return Copied::Unset;
        };
        s.set_tcp32(p.data_mut(), 4, seq);
        Copied::Written
    }
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, tcp_ok, Rig};
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
        let mut r = Rig::alone(&CLASS, "", &[Processing::Push; 2], &[Processing::Push; 2]);
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
