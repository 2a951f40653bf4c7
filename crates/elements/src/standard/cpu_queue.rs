//! `CPUQueue`: one FIFO per worker (Click's per-CPU queues,
//! `elements/standard/cpuqueue.cc`). A packet goes into the queue of the
//! worker that pushes it; a pull, on any worker and any output, takes the
//! next packet round robin over the workers' queues, starting after the
//! queue the last packet came from. Each queue is a bounded lock-free
//! ring (crossbeam's `ArrayQueue`), so pushing and pulling on different
//! workers is safe.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use crossbeam_queue::ArrayQueue;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

/// The `CPUQueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CPUQueue",
    ports: "1/1-",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores packets in one FIFO queue per worker",
    synopsis: "CPUQueue([CAPACITY])",
    description: "Stores packets in first-in-first-out queues, one per worker (Click's one \
        per CPU): a packet is always stored in the queue of the worker that pushes it, and \
        dropped and counted when that queue already holds CAPACITY packets. Every output is \
        pulled the same way: round robin over the workers' queues, starting after the \
        queue the last pulled packet came from. The queues are bounded lock-free rings, \
        made when the first packet arrives (CAPACITY slots per worker). `capacity` reads \
        CAPACITY and `drops` the packets dropped, as in Click (each worker counts its own; \
        the sum over the workers is the total).",
    ports: "one push input; one or more pull outputs",
    keywords: &[Keyword {
        name: "CAPACITY",
        ty: "unsigned",
        default: Some("128"),
        doc: "most packets each worker's queue holds (0 to 16777216; 0 drops every packet); \
              positional",
    }],
    counters: &[(
        "drops",
        "packets dropped because their worker's queue was full",
    )],
    example: "InfiniteSource(LIMIT 10) -> CPUQueue(100) -> Unqueue -> Discard;",
    see_also: &["ThreadSafeQueue", "Queue", "CPUSwitch"],
};

/// What every worker's instance shares.
#[derive(Debug)]
struct Shared {
    capacity: usize,
    rings: OnceLock<Box<[ArrayQueue<Packet>]>>,
    /// The queue the next pull starts at (Click's `_last`).
    next: AtomicUsize,
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let capacity: usize = args.read_p("CAPACITY")?.unwrap_or(128);
    if capacity > 1 << 24 {
        return Err(ArgError::new(format!(
            "CAPACITY {capacity} out of range (0 to 16777216)"
        )));
    }
    let sh = args.shared(|_| {
        Ok(Shared {
            capacity,
            rings: OnceLock::new(),
            next: AtomicUsize::new(0),
        })
    })?;
    Ok(Box::new(CpuQueue { sh, drops: 0 }))
}

/// One worker's handle on the shared queues.
#[derive(Debug)]
pub struct CpuQueue {
    sh: Arc<Shared>,
    drops: u64,
}

impl CpuQueue {
    fn rings(&self, workers: usize) -> Option<&[ArrayQueue<Packet>]> {
        if self.sh.capacity == 0 {
            return None;
        }
        let cap = self.sh.capacity;
        Some(
            self.sh
                .rings
                .get_or_init(|| (0..workers.max(1)).map(|_| ArrayQueue::new(cap)).collect()),
        )
    }
}

impl Element for CpuQueue {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let Some(rings) = self.rings(cx.workers()) else {
            self.drops += batch.len() as u64;
            batch.clear();
            return;
        };
        let ring = &rings[cx.worker() % rings.len()];
        let mut dropped = 0;
        for p in batch.drain() {
            if ring.push(p).is_err() {
                dropped += 1;
            }
        }
        self.drops += dropped;
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let Some(rings) = self.rings(cx.workers()) else {
            return;
        };
        let n = rings.len();
        for _ in 0..max.min(out.remaining()) {
            let start = self.sh.next.load(Relaxed) % n;
            let found = (0..n).find_map(|i| {
                let q = (start + i) % n;
                rings[q].pop().map(|p| (q, p))
            });
            match found {
                Some((q, p)) => {
                    self.sh.next.store((q + 1) % n, Relaxed);
                    let _ = out.push(p);
                }
                None => break,
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "capacity").then(|| self.sh.capacity.to_string())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("capacity")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_element::{Graph, Processing, WorkerState};
    use bricks_runtime::testing::{make_element, parse_args, Harness};

    fn ports(outputs: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Pull; outputs],
        }
    }

    fn dgram(n: usize) -> Packet {
        Packet::from_slice(&udp(n)).unwrap()
    }

    #[test]
    fn one_worker_fifo_tail_drop_and_handlers() {
        let mut h = Harness::new(&CLASS, "2", ports(2));
        h.push_packets(0, (1..=3).map(dgram));
        let lens: Vec<usize> = h.pull(1, 8).iter().map(|p| p.len()).collect();
        assert_eq!(lens, [29, 30]);
        assert!(h.pull(0, 8).is_empty());
        assert_eq!(h.read_handler("capacity").unwrap(), "2");
        assert_eq!(h.read_handler("drops").unwrap(), "1");
        let h = Harness::new(&CLASS, "", ports(1));
        assert_eq!(h.read_handler("capacity").unwrap(), "128");
    }

    #[test]
    fn capacity_zero_drops_everything() {
        let mut h = Harness::new(&CLASS, "0", ports(1));
        h.push_packets(0, (1..=3).map(dgram));
        assert!(h.pull(0, 8).is_empty());
        assert_eq!(h.stats().get("drops"), Some(3));
        assert!(make_element(&CLASS, "99999999", &ports(1)).is_err());
        assert!(make_element(&CLASS, "-1", &ports(1)).is_err());
        assert!(make_element(&CLASS, "1, 2", &ports(1)).is_err());
    }

    /// Two workers' instances of one plan element: each pushes into its
    /// own queue, and a pull takes from them in turn.
    #[test]
    fn workers_queues_are_pulled_round_robin() {
        let a = parse_args("4").unwrap();
        let slot = bricks_element::SharedSlot::new();
        let one = || {
            let mut args = Args::new(&a, None).with_shared(&slot);
            let e = make(&mut args, &ports(1)).unwrap();
            args.complete().unwrap();
            Graph::new(
                vec![e],
                vec!["q".into()],
                vec![Box::new([bricks_element::Edge::NONE])],
                vec![Box::new([bricks_element::Edge::NONE])],
            )
        };
        let (g0, g1) = (one(), one());
        let (mut w0, mut w1) = (WorkerState::new(0, 2), WorkerState::new(1, 2));
        let push = |g: &Graph, w: &mut WorkerState, sizes: &[usize]| {
            let mut b = Batch::new();
            for &n in sizes {
                let _ = b.push(dgram(n));
            }
            g.with_element(0, w, |e, cx| e.push(0, &mut b, cx));
        };
        push(&g0, &mut w0, &[1, 2, 3, 4, 5]);
        push(&g1, &mut w1, &[11, 12]);
        let mut out = Batch::new();
        g1.with_element(0, &mut w1, |e, cx| e.pull(0, &mut out, 16, cx));
        let got: Vec<usize> = out.drain().map(|p| p.len() - 28).collect();
        assert_eq!(got, [1, 11, 2, 12, 3, 4]);
        assert_eq!(g0.stats(0).get("drops"), Some(1));
        assert_eq!(g1.stats(0).get("drops"), Some(0));
    }
}
