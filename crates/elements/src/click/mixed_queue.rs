//! `MixedQueue`: a queue whose first input is FIFO and second LIFO, as
//! Click's `elements/standard/mixedqueue.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats,
};
use std::collections::VecDeque;

/// The `MixedQueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MixedQueue",
    ports: "2/1",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores packets in a FIFO/LIFO queue",
    synopsis: "MixedQueue([CAPACITY])",
    description: "A queue of at most CAPACITY packets whose head is pulled from output 0. \
        Packets pushed on input 0 join the tail (first in, first out); packets pushed on \
        input 1 go to the head (last in, first out). When the queue is full, a packet on \
        input 0 is dropped, and a packet on input 1 pushes out the packet at the tail to \
        make room. After pushes of A, B on input 0, C on input 1, D on input 0 and E on \
        input 1, the queue holds E C A B D. Handlers: `capacity` reads and sets CAPACITY \
        (a smaller one drops from the tail), `reset_counts` clears `drops` and \
        `highwater_length`.",
    ports: "two push inputs (FIFO, LIFO); one pull output",
    keywords: &[Keyword {
        name: "CAPACITY",
        ty: "unsigned",
        default: Some("1000"),
        doc: "most packets held; positional",
    }],
    counters: &[
        ("length", "packets held now"),
        ("highwater_length", "most packets ever held"),
        ("drops", "packets dropped because the queue was full"),
    ],
    example: "InfiniteSource(LIMIT 3) -> [0]q :: MixedQueue(10); \
        InfiniteSource(LIMIT 1) -> [1]q; q -> Unqueue -> Discard;",
    see_also: &["Queue", "SimpleQueue"],
};

/// Most packets a MixedQueue may hold, whatever CAPACITY says.
const MAX_CAPACITY: usize = 1 << 20;

fn capacity(n: usize) -> Result<usize, String> {
    if n > MAX_CAPACITY {
        Err(format!(
            "CAPACITY must be at most {MAX_CAPACITY}, found {n}"
        ))
    } else {
        Ok(n)
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let cap: usize = args.read_p("CAPACITY")?.unwrap_or(1000);
    let cap = capacity(cap).map_err(ArgError::new)?;
    Ok(Box::new(MixedQueue {
        q: VecDeque::with_capacity(cap.min(4096)),
        capacity: cap,
        highwater: 0,
        drops: 0,
    }))
}

/// The queue; its front is the head.
#[derive(Debug)]
pub struct MixedQueue {
    q: VecDeque<Packet>,
    capacity: usize,
    highwater: usize,
    drops: u64,
}

impl Element for MixedQueue {
    fn push(&mut self, port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
        for p in batch.drain() {
            if port == 0 {
                if self.q.len() < self.capacity {
                    self.q.push_back(p);
                } else {
                    self.drops += 1;
                }
            } else if self.capacity > 0 {
                if self.q.len() >= self.capacity {
                    self.q.pop_back();
                    self.drops += 1;
                }
                self.q.push_front(p);
            } else {
                self.drops += 1;
            }
        }
        self.highwater = self.highwater.max(self.q.len());
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, _cx: &mut Context<'_>) {
        for _ in 0..max {
            let Some(p) = self.q.pop_front() else { break };
            if let Err(p) = out.push(p) {
                self.q.push_front(p);
                break;
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("length", self.q.len() as u64);
        s.counter("highwater_length", self.highwater as u64);
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "capacity").then(|| self.capacity.to_string())
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "capacity" => {
                self.capacity = capacity(usize::from_arg(value.trim())?)?;
                while self.q.len() > self.capacity {
                    self.q.pop_back();
                    self.drops += 1;
                }
            }
            "reset_counts" => {
                self.drops = 0;
                self.highwater = self.q.len();
            }
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (capacity, reset_counts)"
                ))
            }
        }
        Ok(())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("capacity"), Handler::w("reset_counts")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    fn harness(args: &str) -> Harness {
        let ports = PortInfo {
            inputs: vec![Processing::Push; 2],
            outputs: vec![Processing::Pull],
        };
        Harness::new(&CLASS, args, ports)
    }

    fn pkt(tag: u8) -> Packet {
        // A 42-byte ARP request whose last byte is the tag.
        let mut f = [0u8; 42];
        f[..6].fill(0xff);
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        f[41] = tag;
        Packet::from_slice(&f).unwrap()
    }

    fn order(h: &mut Harness) -> Vec<u8> {
        h.pull(0, 64).iter().map(|p| p.data()[41]).collect()
    }

    #[test]
    fn click_manual_example() {
        let mut h = harness("");
        h.push_packets(0, [pkt(b'A'), pkt(b'B')]);
        h.push_packets(1, [pkt(b'C')]);
        h.push_packets(0, [pkt(b'D')]);
        h.push_packets(1, [pkt(b'E')]);
        assert_eq!(order(&mut h), b"ECABD".to_vec());
    }

    #[test]
    fn full_queue_drops_fifo_arrivals_and_lifo_evicts_tail() {
        let mut h = harness("2");
        h.push_packets(0, [pkt(1), pkt(2), pkt(3)]);
        h.push_packets(1, [pkt(4)]);
        assert_eq!(order(&mut h), vec![4, 1]);
        assert_eq!(h.stats().get("drops"), Some(2));
        assert_eq!(h.stats().get("highwater_length"), Some(2));
        h.write_handler("reset_counts", "").unwrap();
        assert_eq!(h.stats().get("drops"), Some(0));
        h.write_handler("capacity", "0").unwrap();
        h.push_packets(1, [pkt(5)]);
        assert!(order(&mut h).is_empty());
        assert!(h.write_handler("capacity", "99999999").is_err());
    }
}
