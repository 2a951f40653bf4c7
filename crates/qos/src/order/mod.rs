//! Packet ordering (Hardekopf et al. §5): the structures that decide in
//! which order the packets queued for one output leave.
//!
//! * [`Fifo`]: arrival order, a circular array (§5.2's FIFO);
//! * [`DeadlineHeap`]: exact sort by deadline, a binary heap on
//!   (deadline, arrival sequence), so equal deadlines leave in arrival
//!   order; O(log n) per packet, the cost §5.1 rules out at line rate;
//! * [`BinSort`]: approximate sort (§5.1): deadlines fall into bins of a
//!   fixed interval (1 ms, 1,024 bins in the paper), FIFO within a bin, a
//!   bitmap of non-empty bins; never late by more than one bin;
//! * [`MdsBinSort`]: one `BinSort` per group of dequeuers, enqueues spread
//!   over them, with a documented merge;
//! * [`HashFifo`]: FIFOs replicated by a hash of the destination, so each
//!   destination keeps its order (§5.2, for TCP).
//!
//! Every structure is bounded by the capacity given at construction,
//! allocates nothing afterwards, and implements [`Order`]. Time and
//! deadlines are nanoseconds on the caller's clock (bricks' engine clock,
//! so runs are repeatable with `--clock trace`).
//!
//! With the `memrefs` feature each structure also counts, per operation,
//! the memory references it makes and the words it touches, in the units
//! of [`crate::memref`]: 8-byte words (a packet handle, a deadline or an
//! index is one word, a heap key two), and one reference per separate
//! location read or written (a slot, a node, a bin's head or tail, a
//! bitmap word, the structure's own length and indices), not the packet
//! bytes. The paper's 32-bit words are twice as many. Without the feature
//! the counting code is compiled out.

mod binsort;
mod fifo;
mod hash_fifo;
mod heap;
mod mds_binsort;

pub use binsort::{Beyond, BinSort, BinSortConfig};
pub use fifo::Fifo;
pub use hash_fifo::HashFifo;
pub use heap::DeadlineHeap;
pub use mds_binsort::{MdsBinSort, Spread};

/// Most packets any ordering structure holds (16 Mi): indices fit in 32
/// bits with room for a "none" value.
pub const MAX_CAPACITY: usize = 1 << 24;

/// What every ordering structure does: take a packet with its deadline,
/// give back the next one to send.
pub trait Order<T> {
    /// Takes `item` whose deadline is `deadline`, at time `now`; gives it
    /// back when it cannot be held (full, or out of range when so
    /// configured), counted as a drop.
    fn enqueue(&mut self, item: T, deadline: u64, now: u64) -> Result<(), T>;
    /// The next item to send at time `now`, if any. Work-conserving: an
    /// item leaves even when its deadline is still ahead.
    fn dequeue(&mut self, now: u64) -> Option<T>;
    /// Items held.
    fn len(&self) -> usize;
    /// Whether nothing is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Most items held.
    fn capacity(&self) -> usize;
    /// The counters.
    fn counters(&self) -> Counters;
    /// Drops every item held (they are returned to the caller one by one
    /// through `sink`) and zeroes the counters.
    fn clear(&mut self, sink: &mut dyn FnMut(T));
}

/// What an ordering structure counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Items held now.
    pub length: u64,
    /// Most items ever held.
    pub highwater: u64,
    /// Items accepted.
    pub enqueued: u64,
    /// Items handed out.
    pub dequeued: u64,
    /// Items refused: the structure (or, for replicated ones, every
    /// replica the item could go to) was full, or its deadline was beyond
    /// the range of a `BinSort` that rejects those.
    pub drops: u64,
    /// Items handed out after their deadline (a deadline of 0 means
    /// none and is never late).
    pub late: u64,
    /// `BinSort`: items whose deadline fell in a bin already passed; they
    /// were put in the first bin (and leave before every later bin).
    pub late_bins: u64,
    /// `BinSort`: items whose deadline lay beyond the last bin; put in the
    /// last bin (`Beyond::Clamp`) or dropped (`Beyond::Reject`, also in
    /// `drops`).
    pub beyond: u64,
    /// Memory references and words per operation (`memrefs` feature).
    pub memrefs: MemRefs,
}

impl Counters {
    pub(crate) fn add(&mut self, o: &Counters) {
        self.length += o.length;
        self.highwater += o.highwater;
        self.enqueued += o.enqueued;
        self.dequeued += o.dequeued;
        self.drops += o.drops;
        self.late += o.late;
        self.late_bins += o.late_bins;
        self.beyond += o.beyond;
        self.memrefs.add(&o.memrefs);
    }

    #[inline(always)]
    pub(crate) fn accepted(&mut self, len: usize) {
        self.enqueued += 1;
        self.highwater = self.highwater.max(len as u64);
    }

    #[inline(always)]
    pub(crate) fn released(&mut self, deadline: u64, now: u64) {
        self.dequeued += 1;
        self.late += u64::from(deadline != 0 && now > deadline);
    }
}

/// Memory references made and 32-bit words touched, by operation. Always
/// zero unless bricks-qos is built with the `memrefs` feature.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemRefs {
    /// References made by enqueues (drops included).
    pub enqueue_refs: u64,
    /// Words touched by enqueues.
    pub enqueue_words: u64,
    /// References made by dequeues.
    pub dequeue_refs: u64,
    /// Words touched by dequeues.
    pub dequeue_words: u64,
}

impl MemRefs {
    fn add(&mut self, o: &MemRefs) {
        self.enqueue_refs += o.enqueue_refs;
        self.enqueue_words += o.enqueue_words;
        self.dequeue_refs += o.dequeue_refs;
        self.dequeue_words += o.dequeue_words;
    }
}

/// Counts `$refs` references touching `$words` words for operation `$op`
/// (`enqueue` or `dequeue`) in counters `$c`, when `memrefs` is on; nothing
/// otherwise.
macro_rules! memref {
    ($c:expr, enqueue, $refs:expr, $words:expr) => {
        #[cfg(feature = "memrefs")]
        {
            $c.memrefs.enqueue_refs += $refs as u64;
            $c.memrefs.enqueue_words += $words as u64;
        }
    };
    ($c:expr, dequeue, $refs:expr, $words:expr) => {
        #[cfg(feature = "memrefs")]
        {
            $c.memrefs.dequeue_refs += $refs as u64;
            $c.memrefs.dequeue_words += $words as u64;
        }
    };
}
pub(crate) use memref;

/// Index of the item with "no next".
pub(crate) const NIL: u32 = u32::MAX;

/// Checks a capacity given to a constructor.
pub(crate) fn check_capacity(capacity: usize) -> Result<(), OrderError> {
    if capacity == 0 || capacity > MAX_CAPACITY {
        return Err(OrderError::Capacity(capacity));
    }
    Ok(())
}

/// A structure that cannot be built as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrderError {
    /// The capacity is 0 or above [`MAX_CAPACITY`].
    Capacity(usize),
    /// A bin interval of 0 ns.
    BinWidth,
    /// A number of bins that is not a power of two from 1 to 2^20.
    Bins(usize),
    /// A number of replicas from 1 to 1,024 is needed, and no more than
    /// the capacity.
    Replicas(usize),
}

impl std::fmt::Display for OrderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OrderError::Capacity(c) => {
                write!(f, "capacity {c} out of range (1 to {MAX_CAPACITY})")
            }
            OrderError::BinWidth => write!(f, "a bin interval must be at least 1 ns"),
            OrderError::Bins(b) => write!(
                f,
                "{b} bins: give a power of two from 1 to 1048576 (bins are found with a mask)"
            ),
            OrderError::Replicas(r) => write!(
                f,
                "{r} replicas: give 1 to 1024, and no more than the capacity"
            ),
        }
    }
}

impl std::error::Error for OrderError {}

#[cfg(all(test, feature = "memrefs"))]
mod memref_tests {
    use super::*;

    /// References per enqueue + dequeue pair with `n` items held.
    fn per_pair<O: Order<u64>>(mut o: O, n: u64) -> f64 {
        for i in 0..n {
            o.enqueue(i, 1 + (i * 7919) % 1_000_000, 0).unwrap();
        }
        let before = o.counters().memrefs;
        for i in 0..1000 {
            o.enqueue(i, 1 + (i * 104_729) % 1_000_000, 0).unwrap();
            o.dequeue(0).unwrap();
        }
        let after = o.counters().memrefs;
        let refs =
            after.enqueue_refs + after.dequeue_refs - before.enqueue_refs - before.dequeue_refs;
        refs as f64 / 1000.0
    }

    #[test]
    fn binsort_flat_heap_grows_with_log_n() {
        let cfg = |capacity| BinSortConfig {
            capacity,
            ..Default::default()
        };
        let b10 = per_pair(BinSort::new(cfg(20)).unwrap(), 10);
        let b10k = per_pair(BinSort::new(cfg(20_000)).unwrap(), 10_000);
        let h10 = per_pair(DeadlineHeap::new(20).unwrap(), 10);
        let h10k = per_pair(DeadlineHeap::new(20_000).unwrap(), 10_000);
        let f = per_pair(Fifo::new(20_000).unwrap(), 10_000);
        assert!(b10k <= b10 + 3.0, "BinSort {b10} -> {b10k}");
        assert!(h10k > h10 * 2.0, "heap {h10} -> {h10k}");
        assert!(f <= 10.0, "FIFO {f}");
    }
}
