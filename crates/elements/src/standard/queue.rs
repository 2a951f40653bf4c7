//! `Queue` / `SimpleQueue`: the push-to-pull boundary, a bounded FIFO.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

/// The `Queue` class.
pub static QUEUE: ElementClass = ElementClass {
    name: "Queue",
    ports: "1/1-2",
    processing: "h/lh",
    manual: &MANUAL,
    make,
};

/// The `SimpleQueue` class (the same queue under Click's other name).
pub static SIMPLE_QUEUE: ElementClass = ElementClass {
    name: "SimpleQueue",
    ports: "1/1-2",
    processing: "h/lh",
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
        it can). A packet arriving at a full queue is dropped and counted (tail drop), or, with a \
        second output, counted and pushed out of it, as Click's queues do. The \
        memory for CAPACITY packets is reserved up front. Writing `capacity` changes \
        CAPACITY while the router runs (`config` then shows it, as Click's does); packets \
        beyond a smaller capacity are dropped from the tail and counted in `drops` (Click \
        discards them uncounted). A source pushing into queues (InfiniteSource, \
        RandomSource) waits while they are full instead of making packets to drop: \
        Click's full-queue notifier. With several workers each has its own copy, except \
        where StaticThreadSched places the tasks so that a worker pushes into the queue \
        and none of its pullers runs there: then every worker's copy holds one shared \
        queue (as ThreadSafeQueue), and `capacity` is read only.",
    ports: "one push input; a pull output and an optional push output for dropped packets",
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
    make_queue(args, ports, true, Some(EmptyNote::QUEUE))
}

/// A Queue whose empty notifier sleeps as soon as a pull leaves it empty
/// (Click's QuickNoteQueue), not after ten pulls that find it so.
pub fn make_quick_note(
    args: &mut Args<'_>,
    ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    make_queue(args, ports, true, Some(EmptyNote::QUICK))
}

fn make_simple(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_queue(args, ports, false, None)
}

/// A Queue that does not tell its pushers when it is full (Click's
/// NotifierQueue): sources push on and what does not fit is dropped.
pub fn make_without_full_notifier(
    args: &mut Args<'_>,
    ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    make_queue(args, ports, false, Some(EmptyNote::QUEUE))
}

/// Click's empty notifier of a queue (`NotifierQueue`'s `_empty_note`),
/// for the tasks pulling from it: awake while the queue holds packets,
/// and after it empties until ten pulls in a row have found it empty
/// (Click's `SLEEPINESS_TRIGGER` of 9, and the pull after them); a
/// QuickNoteQueue's sleeps at the pull that leaves it empty. A push
/// wakes it (the queue is no longer empty); a pull that takes a packet
/// starts the count again. One per worker's copy of a queue: each counts
/// its own pulls.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EmptyNote {
    /// Pulls in a row that found the queue empty, at most [`ASLEEP`].
    sleepiness: u8,
    quick: bool,
}

/// [`EmptyNote::sleepiness`] at which the notifier sleeps.
const ASLEEP: u8 = 10;

impl EmptyNote {
    /// Queue's, NotifierQueue's, FullNoteQueue's.
    pub(crate) const QUEUE: EmptyNote = EmptyNote {
        sleepiness: 0,
        quick: false,
    };
    /// QuickNoteQueue's.
    pub(crate) const QUICK: EmptyNote = EmptyNote {
        sleepiness: 0,
        quick: true,
    };

    /// A pull that found the queue empty (`was_empty`) or took from it,
    /// leaving it empty or not (`now_empty`).
    #[inline]
    pub(crate) fn pulled(&mut self, was_empty: bool, now_empty: bool) {
        self.sleepiness = if was_empty {
            (self.sleepiness + 1).min(ASLEEP)
        } else {
            0
        };
        if self.quick && now_empty {
            self.sleepiness = ASLEEP;
        }
    }

    /// Whether the notifier is awake, for a queue that is `empty` or not.
    pub(crate) fn awake(&self, empty: bool) -> bool {
        !empty || self.sleepiness < ASLEEP
    }
}

fn make_queue(
    args: &mut Args<'_>,
    ports: &PortInfo,
    full_notifier: bool,
    empty_note: Option<EmptyNote>,
) -> Result<Box<dyn Element>, ArgError> {
    let capacity: usize = args.read_p("CAPACITY")?.unwrap_or(1000);
    if capacity == 0 || capacity > 1 << 24 {
        return Err(ArgError::new(format!(
            "CAPACITY {capacity} out of range (1 to 16777216)"
        )));
    }
    let length = args.shared(|_| Ok(QueueLength::default()))?;
    if args.crosses_workers() {
        // Pushed on a worker where nothing pulls it: one ring for every
        // worker's copy, as a ThreadSafeQueue (see `crosses_workers`).
        let ring = length
            .crossing
            .get_or_init(|| Arc::new(super::thread_safe_queue::Shared::new(capacity)));
        return Ok(super::thread_safe_queue::crossing_queue(
            Arc::clone(ring),
            capacity,
            full_notifier,
            empty_note,
        ));
    }
    Ok(Box::new(Queue {
        drop_output: ports.noutputs() > 1,
        length,
        q: Ring::with_capacity(capacity),
        capacity,
        highwater: 0,
        drops: 0,
        enqueued: 0,
        full_notifier,
        empty_note,
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
    /// The one ring of a queue that packets cross workers through
    /// ([`Args::crosses_workers`]), made by the first worker's instance.
    crossing: std::sync::OnceLock<Arc<super::thread_safe_queue::Shared>>,
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

/// The queue's storage: a ring of packet slots, as many as the capacity.
///
/// A packet is stored or taken with one index that wraps by a compare:
/// the general extend and drain paths of `VecDeque` cost about 21
/// instructions a packet each way in Click's IP router, the ring a few.
#[derive(Debug)]
struct Ring {
    slots: Box<[Option<bricks_element::Packet>]>,
    /// The oldest packet's slot.
    head: usize,
    len: usize,
}

impl Ring {
    fn with_capacity(capacity: usize) -> Ring {
        Ring {
            slots: std::iter::repeat_with(|| None).take(capacity).collect(),
            head: 0,
            len: 0,
        }
    }

    #[inline(always)]
    fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slot `i` of the ring, for `i` below twice its size.
    #[inline(always)]
    fn wrap(&self, i: usize) -> usize {
        if i >= self.slots.len() {
            i - self.slots.len()
        } else {
            i
        }
    }

    /// Adds up to `n` packets from `packets` after the newest, in order:
    /// a loop over at most two runs of slots, with no wrap test per
    /// packet.
    #[inline(always)]
    fn extend(&mut self, mut packets: impl Iterator<Item = bricks_element::Packet>, n: usize) {
        if self.len + n > self.slots.len() {
            self.reserve(self.len + n);
        }
        let size = self.slots.len();
        let start = self.wrap(self.head + self.len);
        let first = n.min(size - start);
        let (front, back) = self.slots.split_at_mut(start);
        let mut added = 0;
        for (slot, p) in back[..first].iter_mut().zip(packets.by_ref()) {
            // The slot is empty (it is past the newest packet): nothing to
            // drop.
            std::mem::forget(slot.replace(p));
            added += 1;
        }
        if added == first {
            for (slot, p) in front[..n - first].iter_mut().zip(packets) {
                std::mem::forget(slot.replace(p));
                added += 1;
            }
        }
        self.len += added;
    }

    /// Moves the oldest `n` packets (fewer if it holds fewer) to `out`,
    /// which has room for them, oldest first: at most two runs of slots,
    /// each handed over whole ([`Batch::take_from`]).
    #[inline]
    fn take_front_into(&mut self, n: usize, out: &mut Batch) {
        let n = n.min(self.len);
        debug_assert!(n <= out.remaining());
        let size = self.slots.len();
        let first = n.min(size - self.head);
        let (front, back) = self.slots.split_at_mut(self.head);
        out.take_from(&mut back[..first]);
        out.take_from(&mut front[..n - first]);
        self.head = self.wrap(self.head + n);
        self.len -= n;
    }

    /// Takes the oldest packet.
    #[inline(always)]
    fn pop_front(&mut self) -> Option<bricks_element::Packet> {
        if self.len == 0 {
            return None;
        }
        let p = self.slots[self.head].take();
        self.head = self.wrap(self.head + 1);
        self.len -= 1;
        p
    }

    /// Drops the newest packets until `n` are left.
    fn truncate(&mut self, n: usize) {
        while self.len > n {
            let i = self.wrap(self.head + self.len - 1);
            self.slots[i] = None;
            self.len -= 1;
        }
    }

    fn clear(&mut self) {
        self.truncate(0);
        self.head = 0;
    }

    /// Makes room for `capacity` packets, keeping those held in order.
    fn reserve(&mut self, capacity: usize) {
        if capacity <= self.slots.len() {
            return;
        }
        let mut grown = Ring::with_capacity(capacity);
        while let Some(p) = self.pop_front() {
            grown.slots[grown.len] = Some(p);
            grown.len += 1;
        }
        *self = grown;
    }
}

/// A bounded FIFO of packets.
#[derive(Debug)]
pub struct Queue {
    length: Arc<QueueLength>,
    q: Ring,
    capacity: usize,
    highwater: usize,
    drops: u64,
    enqueued: u64,
    /// Sources upstream see its room (Click's full-queue notifier); Click's
    /// SimpleQueue and NotifierQueue have none.
    full_notifier: bool,
    /// Tasks pulling see whether it is empty (Click's empty notifier);
    /// Click's SimpleQueue has none.
    empty_note: Option<EmptyNote>,
    /// Dropped packets leave by output 1 (Click's `checked_output_push(1,
    /// p)`) instead of being freed.
    drop_output: bool,
}

impl Queue {
    /// What did not fit of a batch (`rest`; the drops are counted by the
    /// caller): out of output 1 when it is connected, else freed. The
    /// first drop prints Click's overflow message.
    #[cold]
    fn overflow(&mut self, rest: impl Iterator<Item = Packet>, cx: &mut Context<'_>) {
        if self.drops == 0 {
            cx.report_overflow();
        }
        if self.drop_output {
            let mut dropped = Batch::new();
            for p in rest {
                // What did not fit of one batch fits another.
                let _ = dropped.push(p);
            }
            cx.push(1, &mut dropped);
        }
    }
}

/// Click's `SimpleQueue` operations, for an element that works a queue
/// directly (QueueYankTest): off the data path, so kept simple (a yank
/// is O(n), as Click's is).
impl Queue {
    /// Packets held.
    pub fn size(&self) -> usize {
        self.q.len()
    }

    /// Adds `p` after the newest packet, or gives it back when the queue
    /// is full (Click's `enq`).
    pub fn enq(&mut self, p: Packet) -> Result<(), Packet> {
        if self.q.len() >= self.capacity {
            return Err(p);
        }
        self.q.extend(std::iter::once(p), 1);
        self.length.change(1);
        self.enqueued += 1;
        self.highwater = self.highwater.max(self.q.len());
        Ok(())
    }

    /// Takes the oldest packet (Click's `deq`).
    pub fn deq(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.length.change(-1);
        Some(p)
    }

    /// Takes the oldest packet `pred` holds for, leaving the others in
    /// order (Click's `yank1`).
    pub fn yank1(&mut self, mut pred: impl FnMut(&Packet) -> bool) -> Option<Packet> {
        let mut found = None;
        self.rebuild(|p| {
            if found.is_none() && pred(&p) {
                found = Some(p);
                None
            } else {
                Some(p)
            }
        });
        found
    }

    /// Takes every packet `pred` holds for into `out`, the newest first
    /// (Click's `yank`), leaving the others in order.
    pub fn yank(&mut self, mut pred: impl FnMut(&Packet) -> bool, out: &mut Vec<Packet>) {
        let mut taken = Vec::new();
        self.rebuild(|p| {
            if pred(&p) {
                taken.push(p);
                None
            } else {
                Some(p)
            }
        });
        out.extend(taken.into_iter().rev());
    }

    /// Passes every packet, oldest first, through `f`, keeping those it
    /// gives back.
    fn rebuild(&mut self, mut f: impl FnMut(Packet) -> Option<Packet>) {
        let n = self.q.len();
        let mut kept = Vec::with_capacity(n);
        while let Some(p) = self.q.pop_front() {
            kept.extend(f(p));
        }
        let left = kept.len();
        self.q.extend(kept.into_iter(), left);
        self.length.change(left as i64 - n as i64);
    }
}

impl Element for Queue {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let room = self.capacity.saturating_sub(self.q.len());
        let n = batch.len();
        let take = n.min(room);
        let mut it = batch.drain();
        self.q.extend(it.by_ref(), take);
        if take < n {
            self.overflow(it, cx);
        }
        self.length.change(take as i64);
        self.enqueued += take as u64;
        self.drops += (n - take) as u64;
        self.highwater = self.highwater.max(self.q.len());
    }

    #[inline]
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, _cx: &mut Context<'_>) {
        let n = max.min(self.q.len()).min(out.remaining());
        let was_empty = self.q.is_empty();
        self.length.change(-(n as i64));
        self.q.take_front_into(n, out);
        if let Some(note) = &mut self.empty_note {
            note.pulled(was_empty, self.q.is_empty());
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
        self.q
            .extend(std::iter::from_fn(|| old.q.pop_front()).take(keep), keep);
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
        Some(self.empty_note.is_none_or(|n| n.awake(self.q.is_empty())))
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
                self.q.reserve(c);
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
    fn empty_note_sleeps_after_ten_empty_pulls_or_at_once_when_quick() {
        let mut n = EmptyNote::QUEUE;
        // Awake from the start, as a new Click notifier is.
        assert!(n.awake(true));
        for _ in 0..9 {
            n.pulled(true, true);
            assert!(n.awake(true));
        }
        n.pulled(true, true);
        assert!(!n.awake(true));
        // A push wakes it; a pull that takes a packet starts the count again.
        assert!(n.awake(false));
        n.pulled(false, true);
        assert!(n.awake(true));
        let mut q = EmptyNote::QUICK;
        q.pulled(false, false);
        assert!(q.awake(true));
        q.pulled(false, true);
        assert!(!q.awake(true));
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
    fn bytes(ps: &[bricks_element::Packet]) -> Vec<u8> {
        ps.iter().map(|p| p.data()[0]).collect()
    }

    /// The ring wraps around its end and keeps the order, also when the
    /// capacity is raised or lowered while packets wrap.
    #[test]
    fn order_is_kept_around_the_ring_and_across_capacity_changes() {
        let mut h = harness("4");
        let mut next = 0u8;
        let mut push = |h: &mut Harness, n: u8| {
            h.push_packets(
                0,
                (next..next + n).map(|i| Packet::from_slice(&[i]).unwrap()),
            );
            next += n;
        };
        push(&mut h, 3);
        assert_eq!(bytes(&h.pull(0, 2)), vec![0, 1]);
        // Slots 3, 0, 1 hold the next three: the ring has wrapped.
        push(&mut h, 3);
        assert_eq!(h.stats().get("length"), Some(4));
        h.write_handler("capacity", "7").unwrap();
        push(&mut h, 4);
        assert_eq!(h.stats().get("drops"), Some(1));
        assert_eq!(bytes(&h.pull(0, 3)), vec![2, 3, 4]);
        h.write_handler("capacity", "2").unwrap();
        // 5, 6, 7, 8 held; the newest two go.
        assert_eq!(h.stats().get("drops"), Some(3));
        push(&mut h, 1);
        assert_eq!(bytes(&h.pull(0, 10)), vec![5, 6]);
        push(&mut h, 3);
        assert_eq!(bytes(&h.pull(0, 10)), vec![11, 12]);
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.stats().get("length"), Some(0));
    }
}
