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
//! Every structure takes a `const M: bool` (default `false`): with `M =
//! true` it also counts, per operation, the memory references it makes
//! and the 32-bit words it touches ([`Counters::memrefs`]), by the table
//! of [`crate::memref`]; with `M = false` the counting code is compiled
//! out and the counts stay zero. `Fifo::<u64>::new(..)` does not count,
//! `BinSort::<u64, true>::new(..)` does.

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

use crate::memref::QueueMemRefs;

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
    /// Memory references and words by operation; zero unless the
    /// structure counts (`M = true`).
    pub memrefs: QueueMemRefs,
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
        self.memrefs.merge(&o.memrefs);
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

/// Counts `$refs` references touching `$words` words for operation `$op`
/// (`enqueue` or `dequeue`) in counters `$c` when `$m` (the structure's
/// const parameter) is true; compiled out otherwise.
macro_rules! memref {
    ($m:expr, $c:expr, $op:ident, $refs:expr, $words:expr) => {
        if $m {
            $c.memrefs.$op.add($refs as u64, $words as u64);
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

#[cfg(test)]
mod memref_tests {
    use super::*;
    use crate::memref::MemRefs;

    fn m(refs: u64, words: u64) -> MemRefs {
        MemRefs { refs, words }
    }

    /// References per enqueue + dequeue pair with `n` items held.
    fn per_pair<O: Order<u64>>(mut o: O, n: u64) -> f64 {
        for i in 0..n {
            o.enqueue(i, 1 + (i * 7919) % 1_000_000, 0).unwrap();
        }
        let before = o.counters().memrefs.total();
        for i in 0..1000 {
            o.enqueue(i, 1 + (i * 104_729) % 1_000_000, 0).unwrap();
            o.dequeue(0).unwrap();
        }
        let after = o.counters().memrefs.total();
        (after.refs - before.refs) as f64 / 1000.0
    }

    #[test]
    fn binsort_flat_heap_grows_with_log_n() {
        let cfg = |capacity| BinSortConfig {
            capacity,
            ..Default::default()
        };
        let b10 = per_pair(BinSort::<u64, true>::new(cfg(20)).unwrap(), 10);
        let b10k = per_pair(BinSort::<u64, true>::new(cfg(20_000)).unwrap(), 10_000);
        let h10 = per_pair(DeadlineHeap::<u64, true>::new(20).unwrap(), 10);
        let h10k = per_pair(DeadlineHeap::<u64, true>::new(20_000).unwrap(), 10_000);
        let f = per_pair(Fifo::<u64, true>::new(20_000).unwrap(), 10_000);
        assert!(b10k <= b10 + 3.0, "BinSort {b10} -> {b10k}");
        assert!(h10k > h10 * 2.0, "heap {h10} -> {h10k}");
        assert_eq!(f, 6.0, "FIFO");
    }

    #[test]
    fn not_counting_counts_nothing() {
        let mut b = BinSort::<u64>::new(BinSortConfig::default()).unwrap();
        let mut h = DeadlineHeap::<u64>::new(8).unwrap();
        let mut f = Fifo::<u64>::new(8).unwrap();
        for i in 0..4 {
            b.enqueue(i, i * 1_000_000, 0).unwrap();
            h.enqueue(i, 10 - i, 0).unwrap();
            f.enqueue(i, 0, 0).unwrap();
        }
        for _ in 0..5 {
            b.dequeue(0);
            h.dequeue(0);
            f.dequeue(0);
        }
        let zero = QueueMemRefs::default();
        assert_eq!(b.counters().memrefs, zero);
        assert_eq!(h.counters().memrefs, zero);
        assert_eq!(f.counters().memrefs, zero);
    }

    #[test]
    fn fifo_exact_counts() {
        let mut f = Fifo::<u64, true>::new(2).unwrap();
        f.enqueue(1, 0, 0).unwrap();
        f.enqueue(2, 0, 0).unwrap();
        assert_eq!(f.enqueue(3, 0, 0), Err(3));
        assert_eq!(f.counters().memrefs.enqueue, m(3 + 3 + 2, 6 + 6 + 2));
        f.dequeue(0).unwrap();
        f.dequeue(0).unwrap();
        assert_eq!(f.dequeue(0), None);
        assert_eq!(f.counters().memrefs.dequeue, m(3 + 3, 6 + 6));
    }

    #[test]
    fn heap_exact_counts() {
        let mut h = DeadlineHeap::<u64, true>::new(4).unwrap();
        // Into an empty heap: no sift.
        h.enqueue(0, 30, 0).unwrap();
        assert_eq!(h.counters().memrefs.enqueue, m(3, 9));
        // Later than its parent: one compare, no swap.
        h.enqueue(1, 40, 0).unwrap();
        assert_eq!(h.counters().memrefs.enqueue, m(3 + 3 + 1, 9 + 9 + 4));
        // Earlier than the root: one compare and one swap.
        h.enqueue(2, 10, 0).unwrap();
        assert_eq!(
            h.counters().memrefs.enqueue,
            m(7 + 3 + 1 + 2, 22 + 9 + 4 + 12)
        );
        // Held [10, 40, 30]: the root goes, 30 moves up, its one child
        // (40) compared, no swap.
        assert_eq!(h.dequeue(0), Some(2));
        assert_eq!(h.counters().memrefs.dequeue, m(3 + 1, 13 + 4));
        // Held [30, 40]: 40 to the root, no child left.
        assert_eq!(h.dequeue(0), Some(0));
        assert_eq!(h.dequeue(0), Some(1));
        assert_eq!(h.dequeue(0), None);
        assert_eq!(h.counters().memrefs.dequeue, m(4 + 3 + 3, 17 + 13 + 13));
    }

    #[test]
    fn binsort_exact_counts() {
        let cfg = BinSortConfig {
            capacity: 3,
            bin_ns: 1_000,
            bins: 128,
            beyond: Beyond::Clamp,
        };
        let mut b = BinSort::<u64, true>::new(cfg).unwrap();
        // Two items in bin 0 (empty, then not), one in bin 100 (in another
        // bitmap word).
        b.enqueue(0, 0, 0).unwrap();
        assert_eq!(b.counters().memrefs.enqueue, m(3 + 6, 5 + 12));
        b.enqueue(1, 10, 0).unwrap();
        b.enqueue(2, 100_000, 0).unwrap();
        assert_eq!(
            b.counters().memrefs.enqueue,
            m(9 + 3 + 4 + 3 + 6, 17 + 5 + 8 + 5 + 12)
        );
        // Full: refused after the first line.
        assert_eq!(b.enqueue(3, 0, 0), Err(3));
        assert_eq!(b.counters().memrefs.enqueue, m(25 + 3, 47 + 5));
        // Bin 0 keeps one item.
        assert_eq!(b.dequeue(0), Some(0));
        assert_eq!(b.counters().memrefs.dequeue, m(6, 12));
        // Bin 0 empties (its bitmap word too): the next bin is found from
        // the summary (one word) and bitmap word 1.
        assert_eq!(b.dequeue(0), Some(1));
        assert_eq!(b.counters().memrefs.dequeue, m(12 + 3 + 2, 24 + 5 + 4));
        // The last item: its bin and bitmap word empty, nothing held after.
        assert_eq!(b.dequeue(0), Some(2));
        assert_eq!(b.counters().memrefs.dequeue, m(17 + 6 + 3, 33 + 12 + 5));
        assert_eq!(b.dequeue(0), None);
        assert_eq!(b.counters().memrefs.dequeue, m(26, 50));
    }
}
