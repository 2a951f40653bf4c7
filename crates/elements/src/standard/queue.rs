//! `Queue` / `SimpleQueue`: the push-to-pull boundary, a bounded FIFO.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats,
};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

/// The `Queue` class.
pub static QUEUE: ElementClass = ElementClass {
    name: "Queue",
    ports: "1/1",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

/// The `SimpleQueue` class (the same queue under Click's other name).
pub static SIMPLE_QUEUE: ElementClass = ElementClass {
    name: "SimpleQueue",
    ports: "1/1",
    processing: "h/l",
    manual: &SIMPLE_MANUAL,
    make: make_simple,
};

static SIMPLE_MANUAL: Manual = Manual {
    summary: "stores packets in a bounded FIFO (Click's name for a single-core Queue)",
    synopsis: "SimpleQueue([CAPACITY])",
    description: "Queue without Click's notifiers, as Click's SimpleQueue: a source \
        pushing into it does not wait while it is full, and what does not fit is dropped \
        and counted; the tasks pulling from it read as scheduled even when it is empty. Takes pushed packets and hands them out, oldest first, when \
        pulled. Writing `capacity` changes CAPACITY while the router runs.",
    example: "InfiniteSource(LIMIT 10) -> SimpleQueue(100) -> Unqueue -> Discard;",
    see_also: &["Queue"],
    ..MANUAL
};

static MANUAL: Manual = Manual {
    summary: "stores packets in a bounded FIFO",
    synopsis: "Queue([CAPACITY])",
    description: "Takes pushed packets and hands them out, oldest first, when pulled: the \
        boundary between a push path and a pull path (a scheduler, a device that sends when \
        it can). A packet arriving at a full queue is dropped and counted (tail drop). The \
        memory for CAPACITY packets is reserved up front. Writing `capacity` changes \
        CAPACITY while the router runs (`config` then shows it, as Click's does); packets \
        beyond a smaller capacity are dropped from the tail and counted in `drops` (Click \
        discards them uncounted). A source pushing into queues (InfiniteSource, \
        RandomSource) waits while they are full instead of making packets to drop: \
        Click's full-queue notifier.",
    ports: "one push input; one pull output",
    keywords: &[Keyword {
        name: "CAPACITY",
        ty: "unsigned",
        default: Some("1000"),
        doc: "most packets held",
    }],
    counters: &[
        ("length", "packets held now"),
        ("highwater_length", "most packets ever held"),
        ("drops", "packets dropped because the queue was full"),
        ("enqueued", "packets accepted"),
    ],
    example: "InfiniteSource(LIMIT 10) -> Queue(100) -> Unqueue -> Discard;",
    see_also: &["Unqueue", "RoundRobinSched", "PrioSched"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_queue(args, ports, true, true)
}

fn make_simple(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_queue(args, ports, false, false)
}

/// A Queue that does not tell its pushers when it is full (Click's
/// NotifierQueue): sources push on and what does not fit is dropped.
pub fn make_without_full_notifier(
    args: &mut Args<'_>,
    ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    make_queue(args, ports, false, true)
}

fn make_queue(
    args: &mut Args<'_>,
    _ports: &PortInfo,
    full_notifier: bool,
    empty_notifier: bool,
) -> Result<Box<dyn Element>, ArgError> {
    let capacity: usize = args.read_p("CAPACITY")?.unwrap_or(1000);
    if capacity == 0 || capacity > 1 << 24 {
        return Err(ArgError::new(format!(
            "CAPACITY {capacity} out of range (1 to 16777216)"
        )));
    }
    let length = args.shared(|_| Ok(QueueLength::default()))?;
    Ok(Box::new(Queue {
        length,
        q: VecDeque::with_capacity(capacity),
        capacity,
        highwater: 0,
        drops: 0,
        enqueued: 0,
        full_notifier,
        empty_notifier,
    }))
}

/// A queue's length as another element sees it (RED's QUEUES): the sum
/// over every worker's copy of the queue. It is kept only once an element
/// has asked with [`QueueLength::watch`], when the configuration is built,
/// so that an unwatched queue pays one load a batch.
#[derive(Debug, Default)]
pub struct QueueLength {
    watched: AtomicBool,
    len: AtomicI64,
}

impl QueueLength {
    /// Starts keeping the length.
    pub fn watch(&self) {
        self.watched.store(true, Ordering::Relaxed);
    }

    /// Packets held now, over every worker's copy.
    #[inline]
    pub fn get(&self) -> u64 {
        self.len.load(Ordering::Relaxed).max(0) as u64
    }

    /// Adds `delta` packets (negative: removes) if the length is watched.
    #[inline]
    pub(crate) fn change(&self, delta: i64) {
        if delta != 0 && self.watched.load(Ordering::Relaxed) {
            self.len.fetch_add(delta, Ordering::Relaxed);
        }
    }
}

/// A bounded FIFO of packets.
#[derive(Debug)]
pub struct Queue {
    length: Arc<QueueLength>,
    q: VecDeque<bricks_element::Packet>,
    capacity: usize,
    highwater: usize,
    drops: u64,
    enqueued: u64,
    /// Sources upstream see its room (Click's full-queue notifier); Click's
    /// SimpleQueue and NotifierQueue have none.
    full_notifier: bool,
    /// Tasks pulling see whether it is empty (Click's empty notifier);
    /// Click's SimpleQueue has none.
    empty_notifier: bool,
}

impl Element for Queue {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
        let room = self.capacity.saturating_sub(self.q.len());
        let n = batch.len();
        let take = n.min(room);
        let mut it = batch.drain();
        self.q.extend(it.by_ref().take(take));
        drop(it);
        self.length.change(take as i64);
        self.enqueued += take as u64;
        self.drops += (n - take) as u64;
        self.highwater = self.highwater.max(self.q.len());
    }

    #[inline]
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, _cx: &mut Context<'_>) {
        let n = max.min(self.q.len()).min(out.remaining());
        self.length.change(-(n as i64));
        for p in self.q.drain(..n) {
            let _ = out.push(p);
        }
    }

    /// Hot swap: the old queue's packets, oldest first, as many as the new
    /// capacity holds (Click's `Queue::take_state`; the rest are dropped
    /// and counted), and its counters.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<Queue>(old) else {
            return;
        };
        let n = old.q.len();
        let keep = n.min(self.capacity.saturating_sub(self.q.len()));
        old.length.change(-(n as i64));
        self.q.extend(old.q.drain(..keep));
        self.length.change(keep as i64);
        self.drops += old.drops + (n - keep) as u64;
        old.q.clear();
        self.enqueued += old.enqueued;
        self.highwater = self.highwater.max(old.highwater).max(self.q.len());
    }

    fn config_keyword(&self, handler: &str) -> Option<&'static str> {
        (handler == "capacity").then_some("0 CAPACITY")
    }

    fn empty_signal(&self, _port: usize) -> Option<bool> {
        Some(!self.empty_notifier || !self.q.is_empty())
    }

    fn push_room(&self, _port: usize) -> Option<usize> {
        self.full_notifier
            .then(|| self.capacity.saturating_sub(self.q.len()))
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("length", self.q.len() as u64);
        s.counter("highwater_length", self.highwater as u64);
        s.counter("drops", self.drops);
        s.counter("enqueued", self.enqueued);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "capacity" => Some(self.capacity.to_string()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        // Click's Queue handlers; the counters are read as counters.
        const H: &[Handler] = &[
            Handler::r("length"),
            Handler::r("highwater_length"),
            Handler::r("drops"),
            Handler::rw("capacity"),
            Handler::w("reset_counts"),
            Handler::w("reset"),
        ];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "capacity" => {
                let c: usize = value
                    .trim()
                    .parse()
                    .map_err(|_| format!("capacity: expected a packet count, not `{value}`"))?;
                if c == 0 || c > 1 << 24 {
                    return Err(format!("capacity {c} out of range (1 to 16777216)"));
                }
                // Packets beyond the new capacity are dropped from the
                // tail, as Click's live reconfiguration loses them; they
                // count as drops.
                if self.q.len() > c {
                    let lost = self.q.len() - c;
                    self.q.truncate(c);
                    self.length.change(-(lost as i64));
                    self.drops += lost as u64;
                }
                self.capacity = c;
                Ok(())
            }
            "reset_counts" => {
                self.drops = 0;
                self.highwater = self.q.len();
                Ok(())
            }
            "reset" => {
                self.length.change(-(self.q.len() as i64));
                self.q.clear();
                self.drops = 0;
                self.highwater = 0;
                self.enqueued = 0;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (Queue has `capacity`, `reset_counts`, `reset`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    fn harness(args: &str) -> Harness {
        Harness::new(
            &QUEUE,
            args,
            PortInfo {
                inputs: vec![Processing::Push],
                outputs: vec![Processing::Pull],
            },
        )
    }

    #[test]
    fn fifo_order_and_tail_drop() {
        let mut h = harness("3");
        h.push_packets(0, (0..5u8).map(|i| Packet::from_slice(&[i]).unwrap()));
        let s = h.stats();
        assert_eq!(s.get("length"), Some(3));
        assert_eq!(s.get("drops"), Some(2));
        let got: Vec<u8> = h.pull(0, 10).iter().map(|p| p.data()[0]).collect();
        assert_eq!(got, vec![0, 1, 2]);
        assert!(h.pull(0, 10).is_empty());
        assert_eq!(h.stats().get("highwater_length"), Some(3));
    }

    #[test]
    fn capacity_handler_reads_and_changes_the_bound() {
        let mut h = harness("2");
        assert_eq!(h.read_handler("capacity").as_deref(), Ok("2"));
        h.write_handler("capacity", "4").unwrap();
        h.push_packets(0, (0..6u8).map(|i| Packet::from_slice(&[i]).unwrap()));
        assert_eq!(h.stats().get("length"), Some(4));
        assert_eq!(h.stats().get("drops"), Some(2));
        h.write_handler("reset_counts", "").unwrap();
        assert_eq!(h.stats().get("drops"), Some(0));
        assert!(h.write_handler("capacity", "0").is_err());
    }

    #[test]
    fn pull_respects_max() {
        let mut h = harness("");
        h.push_packets(0, (0..5u8).map(|i| Packet::from_slice(&[i]).unwrap()));
        assert_eq!(h.pull(0, 2).len(), 2);
        assert_eq!(h.stats().get("length"), Some(3));
    }

    #[test]
    fn zero_capacity_refused() {
        let e = bricks_runtime::testing::make_element(&QUEUE, "0", &Default::default());
        assert!(e.unwrap_err().contains("CAPACITY 0 out of range"));
    }
}
