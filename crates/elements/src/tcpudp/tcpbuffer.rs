//! `TCPBuffer`: a TCP reorder buffer, as Click's experimental
//! `elements/local/tcpbuffer.cc`: segments pushed in any order are pulled
//! out in sequence order (RFC 9293 section 3.10.7.4, "segments are
//! processed in sequence"), waiting at a hole unless SKIP says to jump it.
//! TCPAck upstream asks it for the first sequence number still missing,
//! so the buffer's state is shared (by every worker's instance and by the
//! TCPAck elements that find it downstream).

use super::segment::{self, seq_gt, seq_lt};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `TCPBuffer` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TCPBuffer",
    ports: "1/1",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

/// Click's `TCPBuffer::_capacity`, which Click declares and never checks.
const DEFAULT_CAPACITY: usize = 128;

static MANUAL: Manual = Manual {
    summary: "buffers TCP segments and releases them in order",
    synopsis: "TCPBuffer([SKIP, CAPACITY])",
    description: "Keeps the TCP segments pushed into it (IP header at the network header \
        annotation, else at the start) sorted by sequence number, and gives them out in \
        that order when pulled. The first segment pulled sets where the stream stands; \
        after it, a pull gets the next segment only when it starts exactly where the \
        previous one ended (its sequence number plus its payload, plus one for a SYN or \
        a FIN), so the puller sees the stream without holes. With SKIP true a pull takes \
        the first segment whatever its number: still in order, holes skipped. A segment \
        whose sequence number is already buffered is dropped, and so, once pulling has \
        begun, is one that starts before where the stream stands (a retransmission); \
        of two segments at one sequence number the longer is kept (a bare ACK does not \
        hide the data that follows it at the same number).\n\n\
        TCPAck elements upstream ask this buffer, found by flow (Click's flow-based \
        router context), for the first sequence number missing from it. The buffer is \
        one for all workers.\n\n\
        Differences from Click: Click never drops old segments (its flag for it is never \
        set, so a retransmission blocks the buffer for good), keeps the first of two \
        segments at one number (so data behind a bare ACK is lost) and never bounds the \
        buffer; \
        bricks drops them and holds at most CAPACITY segments (a bricks keyword; the \
        default is the capacity Click declares, 128), dropping and counting new segments \
        beyond it, and drops what is not a TCP segment.",
    ports: "one push input; one pull output",
    keywords: &[
        Keyword {
            name: "SKIP",
            ty: "boolean",
            default: Some("false"),
            doc: "let pulls skip holes; positional",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned, at least 1",
            default: Some("128"),
            doc: "most segments held (bricks)",
        },
    ],
    counters: &[
        (
            "duplicates",
            "segments whose sequence number was buffered already (the shorter dropped)",
        ),
        ("old", "segments before where the stream stands"),
        ("overflows", "segments that found the buffer full"),
        ("drops", "packets that hold no TCP segment"),
    ],
    example: super::STACK_EXAMPLE,
    see_also: &["TCPAck", "TCPConn", "BufferConverter"],
};

/// A buffered segment: its sequence number and length in sequence space.
#[derive(Debug)]
struct Held {
    seq: u32,
    len: u32,
    packet: Packet,
}

/// The buffer's state.
#[derive(Debug, Default)]
struct Reorder {
    /// Sorted by sequence number, no two alike.
    held: VecDeque<Held>,
    /// Where the stream stands: the end of the last segment pulled.
    first_seq: u32,
    /// Whether anything was pulled (Click's `_start_pull`).
    start_pull: bool,
}

/// What a TCPBuffer holds, shared with the TCPAck elements upstream.
#[derive(Debug)]
pub(crate) struct Buffer {
    state: Mutex<Reorder>,
    capacity: usize,
}

/// Why a pushed segment was not kept.
enum Refused {
    Duplicate,
    Old,
    Full,
}

impl Buffer {
    fn lock(&self) -> MutexGuard<'_, Reorder> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn insert(&self, held: Held) -> Result<(), Refused> {
        let mut r = self.lock();
        if r.start_pull && seq_lt(held.seq, r.first_seq) {
            return Err(Refused::Old);
        }
        // Before the first segment with a larger number (Click's walk).
        let at = r
            .held
            .iter()
            .position(|h| !seq_lt(h.seq, held.seq))
            .unwrap_or(r.held.len());
        if let Some(h) = r.held.get_mut(at).filter(|h| h.seq == held.seq) {
            // A bare ACK and then data at the same number: the data stays.
            if held.len > h.len {
                *h = held;
            }
            return Err(Refused::Duplicate);
        }
        if r.held.len() >= self.capacity {
            return Err(Refused::Full);
        }
        r.held.insert(at, held);
        Ok(())
    }

    /// Takes the segments a pull may have, at most `max`.
    fn take(&self, skip: bool, max: usize, out: &mut Batch) {
        let mut r = self.lock();
        while out.len() < max {
            let Some(h) = r.held.front() else { break };
            if r.start_pull && !skip && h.seq != r.first_seq {
                break;
            }
            let Some(h) = r.held.pop_front() else { break };
            r.first_seq = h.seq.wrapping_add(h.len);
            r.start_pull = true;
            // `out` has room: checked above.
            let _ = out.push(h.packet);
        }
    }

    /// The first sequence number at or after `pos` that the buffer is
    /// missing, `None` while it has seen nothing (Click's
    /// `next_missing_seq_no`).
    pub fn next_missing(&self, pos: u32) -> Option<u32> {
        let r = self.lock();
        let mut expect = r.first_seq;
        if let Some(first) = r.held.front() {
            if !r.start_pull {
                expect = first.seq;
            }
            for h in &r.held {
                if h.seq != expect {
                    if !seq_lt(expect, pos) {
                        return Some(expect);
                    } else if seq_gt(h.seq, pos) {
                        return Some(pos);
                    }
                }
                expect = h.seq.wrapping_add(h.len);
            }
        } else if !r.start_pull {
            return None;
        }
        Some(if seq_lt(expect, pos) { pos } else { expect })
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let skip = args.read_p("SKIP")?.unwrap_or(false);
    let capacity: usize = args.read_p("CAPACITY")?.unwrap_or(DEFAULT_CAPACITY);
    if capacity == 0 {
        return Err(ArgError::new("CAPACITY must be at least 1"));
    }
    let buffer = args.shared(|_| {
        Ok(Buffer {
            state: Mutex::new(Reorder::default()),
            capacity,
        })
    })?;
    Ok(Box::new(TCPBuffer {
        buffer,
        skip,
        duplicates: 0,
        old: 0,
        overflows: 0,
        drops: 0,
    }))
}

/// Reorders TCP segments.
#[derive(Debug)]
pub struct TCPBuffer {
    buffer: Arc<Buffer>,
    skip: bool,
    duplicates: u64,
    old: u64,
    overflows: u64,
    drops: u64,
}

impl Element for TCPBuffer {
    fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
        for packet in batch.drain() {
            let Ok(s) = segment::locate_in(&packet) else {
                self.drops += 1;
                continue;
            };
            let d = packet.data();
            let held = Held {
                seq: s.seq(d),
                len: s.seq_len(d),
                packet,
            };
            match self.buffer.insert(held) {
                Ok(()) => {}
                Err(Refused::Duplicate) => self.duplicates += 1,
                Err(Refused::Old) => self.old += 1,
                Err(Refused::Full) => self.overflows += 1,
            }
        }
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, _cx: &mut Context<'_>) {
        self.buffer.take(self.skip, max, out);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("duplicates", self.duplicates);
        s.counter("old", self.old);
        s.counter("overflows", self.overflows);
        s.counter("drops", self.drops);
    }
}

/// The buffer of the TCPBuffer downstream of output `output` of the
/// element being configured (Click's `visit_downstream` for a TCPBuffer).
pub(crate) fn downstream_buffer(args: &Args<'_>, output: usize) -> Result<Arc<Buffer>, ArgError> {
    args.shared_by_flow::<Buffer>(output, false, &[CLASS.name])
        .map_err(ArgError::new)?
        .into_iter()
        .next()
        .ok_or_else(|| ArgError::new("need at least 1 downstream TCPBuffer"))
}

#[cfg(test)]
mod tests {
    use super::super::segment::testing::{datagram, Rig};
    use super::super::segment::{ACK, FIN, SYN};
    use super::*;
    use crate::ip::header::be32;
    use bricks_element::Processing;
    use bricks_runtime::testing::make_element;

    fn seg(seq: u32, flags: u8, len: usize) -> Vec<u8> {
        datagram(
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            80,
            4000,
            seq,
            1,
            flags,
            &[],
            &vec![b'x'; len],
        )
    }

    fn rig(args: &str) -> Rig {
        Rig::alone(&CLASS, args, &[Processing::Push], &[Processing::Pull])
    }

    fn seqs(frames: &[Vec<u8>]) -> Vec<u32> {
        frames.iter().map(|f| be32(f, 24)).collect()
    }

    #[test]
    fn releases_in_order_and_waits_at_holes() {
        let mut r = rig("");
        let b = r.shared::<Buffer>();
        assert_eq!(b.next_missing(0), None);
        // A SYN-ACK at 100 sets the start; data at 101 (10 bytes), 111, 121.
        r.push(0, &[&seg(111, ACK, 10), &seg(100, SYN | ACK, 0)]);
        assert_eq!(b.next_missing(100), Some(101));
        assert_eq!(seqs(&r.pull(0, 8)), [100]);
        // 111 waits for 101.
        assert!(r.pull(0, 8).is_empty());
        assert_eq!(b.next_missing(101), Some(101));
        r.push(0, &[&seg(121, ACK | FIN, 5)]);
        r.push(0, &[&seg(101, ACK, 10)]);
        assert_eq!(b.next_missing(101), Some(127));
        assert_eq!(seqs(&r.pull(0, 2)), [101, 111]);
        assert_eq!(seqs(&r.pull(0, 8)), [121]);
        assert_eq!(b.next_missing(101), Some(127));
        assert_eq!(b.next_missing(200), Some(200));
    }

    #[test]
    fn duplicates_and_retransmissions_are_dropped() {
        let mut r = rig("false");
        r.push(0, &[&seg(1, ACK, 10), &seg(1, ACK, 10), &seg(11, ACK, 3)]);
        assert_eq!(r.counter("duplicates"), 1);
        assert_eq!(seqs(&r.pull(0, 8)), [1, 11]);
        // A retransmission of what was pulled does not block the stream.
        r.push(0, &[&seg(1, ACK, 10), &seg(14, ACK, 1)]);
        assert_eq!(r.counter("old"), 1);
        assert_eq!(seqs(&r.pull(0, 8)), [14]);
        r.push(0, &[&seg(1, ACK, 10)[..30]]);
        assert_eq!(r.counter("drops"), 1);
    }

    #[test]
    fn data_replaces_a_bare_ack_at_its_number() {
        let mut r = rig("");
        r.push(0, &[&seg(100, SYN | ACK, 0)]);
        assert_eq!(r.pull(0, 8).len(), 1);
        r.push(
            0,
            &[&seg(101, ACK, 0), &seg(101, ACK, 17), &seg(101, ACK, 0)],
        );
        assert_eq!(r.counter("duplicates"), 2);
        let out = r.pull(0, 8);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].len(), 57);
    }

    #[test]
    fn skip_jumps_holes_in_order() {
        let mut r = rig("SKIP true");
        r.push(0, &[&seg(50, ACK, 1), &seg(10, ACK, 1), &seg(30, ACK, 1)]);
        assert_eq!(seqs(&r.pull(0, 8)), [10, 30, 50]);
    }

    #[test]
    fn the_buffer_is_bounded() {
        let mut r = rig("CAPACITY 3");
        for k in 0..5u32 {
            r.push(0, &[&seg(1000 + 10 * k, ACK, 1)]);
        }
        assert_eq!(r.counter("overflows"), 2);
        assert_eq!(seqs(&r.pull(0, 8)), [1000]);
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut r = rig("");
        let b = r.shared::<Buffer>();
        r.push(0, &[&seg(5, ACK, 4), &seg(0xffff_fffe, ACK, 7)]);
        assert_eq!(seqs(&r.pull(0, 8)), [0xffff_fffe, 5]);
        assert_eq!(b.next_missing(0), Some(9));
    }

    #[test]
    fn arguments() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(m("").is_ok());
        assert!(m("true").is_ok());
        assert!(m("maybe").is_err());
        assert!(m("CAPACITY 0").is_err());
    }
}
