//! `ThreadSafeQueue`: one bounded FIFO that every worker's instance shares,
//! the way packets move from one worker to another.
//!
//! Each worker has its own copy of every element, so a plain `Queue` is
//! per worker. A ThreadSafeQueue's instances all hold the same ring, made
//! once when the configuration is checked (`Args::shared`): any worker may
//! push into it and any may pull from it. The ring is crossbeam's
//! `ArrayQueue`, a bounded lock-free multi-producer multi-consumer queue
//! (Vyukov's design: one compare-and-swap per packet and side, no lock,
//! no allocation after it is made). A packet that arrives at a full ring
//! is dropped and counted (tail drop).
//!
//! A packet made on one worker and freed on another returns its buffer to
//! the freeing thread's pool, which keeps at most 16 Ki buffers and gives
//! the rest back to the allocator: memory stays bounded, and a producer
//! whose packets always leave it allocates fresh buffers.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use crossbeam_queue::ArrayQueue;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The `ThreadSafeQueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ThreadSafeQueue",
    ports: "1/1",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores packets in a bounded FIFO shared by every worker",
    synopsis: "ThreadSafeQueue([CAPACITY])",
    description: "Like Queue, but one queue for all workers instead of one per worker: \
        packets pushed on any worker can be pulled on any worker, which is how packets \
        cross from one worker to another (place the puller with StaticThreadSched). The \
        queue is a bounded lock-free ring (no lock is ever taken); a packet arriving at a \
        full queue is dropped and counted (tail drop). The memory for CAPACITY packets is \
        reserved when the configuration is checked. A worker whose own sources are done \
        keeps pulling while packets can still reach it, so a run ends only when the shared \
        queues are drained (or their puller never runs: what is left is counted as \
        `length`). `length` and `highwater_length` describe the one shared queue and are \
        reported by worker 0's instance only; `drops` and `enqueued` are counted by the \
        worker that pushed, so the sums over the workers are the totals.",
    ports: "one push input; one pull output",
    keywords: &[Keyword {
        name: "CAPACITY",
        ty: "unsigned",
        default: Some("1000"),
        doc: "most packets held (1 to 16777216)",
    }],
    counters: &[
        ("length", "packets held now (worker 0 reports it)"),
        (
            "highwater_length",
            "most packets ever held (worker 0 reports it)",
        ),
        ("drops", "packets dropped because the queue was full"),
        ("enqueued", "packets accepted"),
    ],
    example: "InfiniteSource(LIMIT 10) -> ThreadSafeQueue(100) -> Unqueue -> Discard;",
    see_also: &["Queue", "StaticThreadSched", "Unqueue"],
};

/// What every instance shares.
#[derive(Debug)]
pub(crate) struct Shared {
    ring: ArrayQueue<Packet>,
    highwater: AtomicUsize,
}

impl Shared {
    /// An empty ring of `capacity` packets (at least 1).
    pub(crate) fn new(capacity: usize) -> Shared {
        Shared {
            ring: ArrayQueue::new(capacity.max(1)),
            highwater: AtomicUsize::new(0),
        }
    }
}

/// What a `Queue` that packets cross workers through keeps of its class:
/// its capacity and Click's notifiers.
#[derive(Debug, Clone, Copy)]
struct AsQueue {
    capacity: usize,
    /// Sources upstream see its room (Click's full notifier).
    full_notifier: bool,
    /// Pulling tasks see whether it is empty (Click's empty notifier),
    /// counting this worker's pulls.
    empty_note: Option<super::queue::EmptyNote>,
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let capacity: usize = args.read_p("CAPACITY")?.unwrap_or(1000);
    if capacity == 0 || capacity > 1 << 24 {
        return Err(ArgError::new(format!(
            "CAPACITY {capacity} out of range (1 to 16777216)"
        )));
    }
    let shared = args.shared(|_| Ok(Shared::new(capacity)))?;
    Ok(Box::new(ThreadSafeQueue {
        shared,
        reporter: true,
        drops: 0,
        enqueued: 0,
        queue: None,
    }))
}

/// A `Queue` (or SimpleQueue, NotifierQueue) that packets cross workers
/// through (`Args::crosses_workers`): this worker's handle on `shared`,
/// the ring every worker's copy of the queue holds, with the queue's
/// capacity, notifiers and `capacity` handler (read only: the ring's size
/// is fixed).
pub(crate) fn crossing_queue(
    shared: Arc<Shared>,
    capacity: usize,
    full_notifier: bool,
    empty_note: Option<super::queue::EmptyNote>,
) -> Box<dyn Element> {
    Box::new(ThreadSafeQueue {
        shared,
        reporter: true,
        drops: 0,
        enqueued: 0,
        queue: Some(AsQueue {
            capacity,
            full_notifier,
            empty_note,
        }),
    })
}

/// One worker's handle on the shared queue.
#[derive(Debug)]
pub struct ThreadSafeQueue {
    shared: Arc<Shared>,
    /// Reports the shared `length` and `highwater_length` (worker 0).
    reporter: bool,
    drops: u64,
    enqueued: u64,
    /// Set when this is a `Queue` packets cross workers through.
    queue: Option<AsQueue>,
}

impl Element for ThreadSafeQueue {
    fn empty_signal(&self, _port: usize) -> Option<bool> {
        let q = self.queue?;
        Some(
            q.empty_note
                .is_none_or(|n| n.awake(self.shared.ring.is_empty())),
        )
    }

    fn push_room(&self, _port: usize) -> Option<usize> {
        let q = self.queue.filter(|q| q.full_notifier)?;
        Some(q.capacity.saturating_sub(self.shared.ring.len()))
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match (handler, self.queue) {
            ("capacity", Some(q)) => Some(q.capacity.to_string()),
            _ => None,
        }
    }

    fn start(&mut self, cx: &mut Context<'_>) {
        self.reporter = cx.worker() == 0;
    }

    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let n = batch.len();
        let mut taken = 0;
        for p in batch.drain() {
            // A full ring hands the packet back; it is dropped here.
            if self.shared.ring.push(p).is_ok() {
                taken += 1;
            }
        }
        if taken < n as u64 && self.drops == 0 {
            cx.report_overflow();
        }
        self.enqueued += taken;
        self.drops += n as u64 - taken;
        let len = self.shared.ring.len();
        if len > self.shared.highwater.load(Ordering::Relaxed) {
            self.shared.highwater.fetch_max(len, Ordering::Relaxed);
        }
    }

    #[inline]
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, _cx: &mut Context<'_>) {
        let mut got = 0;
        let mut was_empty = false;
        for _ in 0..max.min(out.remaining()) {
            match self.shared.ring.pop() {
                Some(p) => {
                    got += 1;
                    let _ = out.push(p);
                }
                None => {
                    was_empty = got == 0;
                    break;
                }
            }
        }
        if let Some(note) = self.queue.as_mut().and_then(|q| q.empty_note.as_mut()) {
            note.pulled(was_empty, self.shared.ring.is_empty());
        }
    }

    /// Hot swap: the counters of this worker's old instance, and, when
    /// the ring is not the old one (CAPACITY changed), the old ring's
    /// packets, oldest first, as many as the new one holds (the rest are
    /// dropped and counted). Workers switch together, and no worker
    /// touches the old ring once they have met, so each moves what is
    /// left.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<ThreadSafeQueue>(old) else {
            return;
        };
        self.drops += old.drops;
        self.enqueued += old.enqueued;
        if Arc::ptr_eq(&self.shared, &old.shared) {
            return;
        }
        while let Some(p) = old.shared.ring.pop() {
            if self.shared.ring.push(p).is_err() {
                self.drops += 1;
            }
        }
        self.shared.highwater.fetch_max(
            old.shared.highwater.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
    }

    fn stats(&self, s: &mut Stats) {
        if self.reporter {
            s.counter("length", self.shared.ring.len() as u64);
            s.counter(
                "highwater_length",
                self.shared.highwater.load(Ordering::Relaxed) as u64,
            );
        }
        s.counter("drops", self.drops);
        s.counter("enqueued", self.enqueued);
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                // Called on every worker: the first empties the shared
                // ring, each clears its own counts.
                while self.shared.ring.pop().is_some() {}
                self.shared.highwater.store(0, Ordering::Relaxed);
                self.drops = 0;
                self.enqueued = 0;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (ThreadSafeQueue has `reset`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::{parse_args, Harness};
    use bricks_runtime::StopReason;
    use proptest::prelude::*;

    fn ports() -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Pull],
        }
    }

    fn tagged(range: std::ops::Range<u32>) -> Vec<Packet> {
        range
            .map(|i| Packet::from_slice(&i.to_be_bytes()).unwrap())
            .collect()
    }

    fn tag(p: &Packet) -> u32 {
        u32::from_be_bytes(p.data()[..4].try_into().unwrap())
    }

    #[test]
    fn fifo_order_tail_drop_and_counters() {
        let mut h = Harness::new(&CLASS, "3", ports());
        h.push_packets(0, tagged(0..5));
        let s = h.stats();
        assert_eq!(s.get("length"), Some(3));
        assert_eq!(s.get("drops"), Some(2));
        assert_eq!(s.get("enqueued"), Some(3));
        let got: Vec<u32> = h.pull(0, 10).iter().map(tag).collect();
        assert_eq!(got, vec![0, 1, 2]);
        assert_eq!(h.stats().get("highwater_length"), Some(3));
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.stats().get("highwater_length"), Some(0));
        assert!(h.write_handler("flush", "").is_err());
    }

    #[test]
    fn capacity_is_checked() {
        for bad in ["0", "99999999", "lots"] {
            let e = bricks_runtime::testing::make_element(&CLASS, bad, &ports());
            assert!(e.is_err(), "{bad}");
        }
    }

    /// Two instances made from one plan element share one ring.
    fn shared_pair(capacity: usize) -> (Box<dyn Element>, Box<dyn Element>) {
        let a = parse_args(&capacity.to_string()).unwrap();
        let slot = bricks_element::SharedSlot::new();
        let one = || {
            let mut args = Args::new(&a, None).with_shared(&slot);
            let e = make(&mut args, &ports()).unwrap();
            args.complete().unwrap();
            e
        };
        (one(), one())
    }

    /// Two producer threads push tagged packets into one shared queue
    /// while a consumer thread pulls: every packet arrives exactly once or
    /// is counted as dropped, and each producer's packets stay in order.
    fn stress(per_producer: u32, capacity: usize, burst: usize) {
        use bricks_element::Graph;
        let a = parse_args(&capacity.to_string()).unwrap();
        let slot = Arc::new(bricks_element::SharedSlot::new());
        let instance = |slot: &bricks_element::SharedSlot| {
            let mut args = Args::new(&a, None).with_shared(slot);
            let e = make(&mut args, &ports()).unwrap();
            args.complete().unwrap();
            Graph::new(
                vec![e],
                vec!["q".into()],
                vec![Box::new([])],
                vec![Box::new([])],
            )
        };
        let producers: Vec<_> = (0..2u32)
            .map(|k| {
                let g = instance(&slot);
                std::thread::spawn(move || {
                    let mut st = bricks_element::WorkerState::new(k as usize, 3);
                    let mut next = 0;
                    while next < per_producer {
                        let end = (next + burst as u32).min(per_producer);
                        let mut b = Batch::new();
                        for i in next..end {
                            let _ =
                                b.push(Packet::from_slice(&((k << 31) | i).to_be_bytes()).unwrap());
                        }
                        g.with_element(0, &mut st, |e, cx| e.push(0, &mut b, cx));
                        next = end;
                    }
                    g.stats(0).get("drops").unwrap()
                })
            })
            .collect();
        let g = instance(&slot);
        let mut st = bricks_element::WorkerState::new(2, 3);
        let mut seen = [Vec::new(), Vec::new()];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut finished = false;
        loop {
            let mut b = Batch::new();
            g.with_element(0, &mut st, |e, cx| e.pull(0, &mut b, burst, cx));
            let empty = b.is_empty();
            for p in b.drain() {
                let t = tag(&p);
                seen[(t >> 31) as usize].push(t & 0x7fff_ffff);
            }
            if empty {
                if finished {
                    break;
                }
                finished = producers.iter().all(|p| p.is_finished());
                assert!(std::time::Instant::now() < deadline, "stress test stuck");
                std::thread::yield_now();
            }
        }
        let drops: Vec<u64> = producers.into_iter().map(|p| p.join().unwrap()).collect();
        for (k, got) in seen.iter().enumerate() {
            // In order and no duplicates: strictly increasing.
            assert!(
                got.windows(2).all(|w| w[0] < w[1]),
                "producer {k} reordered"
            );
            assert_eq!(
                got.len() as u64 + drops[k],
                per_producer as u64,
                "producer {k}: lost or duplicated"
            );
        }
    }

    #[test]
    fn two_producers_one_consumer_lose_and_duplicate_nothing() {
        // A roomy queue: nothing may be dropped at all.
        stress(200_000, 1 << 20, 32);
        // A tight one: drops happen, and are all counted.
        stress(100_000, 64, 32);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]
        #[test]
        fn any_sizes_lose_nothing(n in 1u32..20_000, cap in 1usize..4096, burst in 1usize..256) {
            stress(n, cap, burst);
        }
    }

    #[test]
    fn instances_share_the_ring() {
        let (a, b) = shared_pair(10);
        let g = bricks_element::Graph::new(
            vec![a, b],
            vec!["a".into(), "b".into()],
            vec![Box::new([]), Box::new([])],
            vec![Box::new([]), Box::new([])],
        );
        let mut st = bricks_element::WorkerState::new(0, 1);
        let mut batch = Batch::new();
        for p in tagged(0..4) {
            let _ = batch.push(p);
        }
        g.with_element(0, &mut st, |e, cx| e.push(0, &mut batch, cx));
        let mut out = Batch::new();
        g.with_element(1, &mut st, |e, cx| e.pull(0, &mut out, 10, cx));
        assert_eq!(out.iter().map(tag).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_run_moves_packets_between_workers() {
        let s = super::super::testrun::run_workers(
            "src :: InfiniteSource(LIMIT 5000) -> q :: ThreadSafeQueue(10000) \
             -> u :: Unqueue -> c :: Counter -> Discard; StaticThreadSched(src 0, u 1);",
            2,
        );
        assert_eq!(s.total.reason, StopReason::SourcesDone);
        assert_eq!(
            s.per_worker[1].stats("c").and_then(|s| s.get("count")),
            Some(5000)
        );
        // Drained; worker 0 reports the shared length once.
        assert_eq!(s.total.stats("q").and_then(|s| s.get("length")), Some(0));
        assert_eq!(
            s.total.stats("q").and_then(|s| s.get("enqueued")),
            Some(5000)
        );
    }

    /// A run that ends because its sources are done: the last packets
    /// elements push as the router stops (a final Router Advertisement,
    /// made on worker 0) still cross to the worker that pulls them,
    /// because the workers agree a second time that nothing moves.
    #[test]
    fn last_packets_cross_workers_at_the_end_of_a_run() {
        let s = super::super::testrun::run_workers(
            "src :: InfiniteSource(LIMIT 50) -> Discard; \
             Idle -> ra :: IP6RouterAdvertiser(52:54:00:aa:00:01, PREFIX 2001:db8::/64) \
             -> q :: ThreadSafeQueue -> u :: Unqueue -> c :: Counter -> Discard; \
             StaticThreadSched(src 0, u 1);",
            2,
        );
        assert_eq!(s.total.reason, StopReason::SourcesDone);
        let stat = |e: &str, c: &str| s.total.stats(e).and_then(|s| s.get(c));
        assert_eq!(stat("ra", "advertisements"), Some(2), "first and final");
        assert_eq!(stat("ra", "final"), Some(1));
        assert_eq!(
            s.per_worker[1].stats("c").and_then(|s| s.get("count")),
            Some(2),
            "both pulled on worker 1"
        );
        assert_eq!(stat("q", "length"), Some(0));
    }
}
