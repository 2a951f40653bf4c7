//! BinSort (Hardekopf et al. §5.1, after [28]): approximate sort by
//! deadline in O(1) per enqueue.
//!
//! Time is cut into bins of a fixed interval (the paper: 1 ms, 1,024
//! bins); a deadline `d` belongs to the absolute bin `d / BIN`. The bins
//! form a circular array covering a window of BINS consecutive absolute
//! bins starting at the *base*; each bin is a FIFO (a linked list through
//! a node array reserved at construction, so nothing is allocated per
//! packet), and a bitmap holds one bit per non-empty bin. A dequeue takes
//! the head of the first non-empty bin, found from the bitmap a 64-bit
//! word at a time: the word of the bin just emptied, then a summary with
//! one bit per non-empty bitmap word, so a dequeue reads at most three
//! words for the default 1,024 bins (and BINS/4096 + 2 in general)
//! instead of the paper's scan of up to BINS/64 words when the router is
//! lightly loaded.
//!
//! The window moves with the clock: before each operation the base
//! advances to the bin of `now`, but never past a bin that still holds
//! packets, so the window always covers everything held and each slot of
//! the circular array holds packets of one absolute bin only.
//!
//! * A deadline in a bin before the base (already passed) is put in the
//!   base bin and counted in `late_bins`: it leaves before every later
//!   bin.
//! * A deadline beyond the window's last bin is counted in `beyond` and,
//!   by [`Beyond`], put in the last bin (`Clamp`, the default: nothing is
//!   lost, and it leaves after everything nearer) or refused (`Reject`).
//!
//! Guarantee: items leave in order of bins, and in arrival order within a
//! bin; so an item leaves before another whose deadline is earlier only if
//! both were in the same bin: it is late by less than one bin interval
//! (the paper's "error of one bin interval per router").

use super::{check_capacity, memref, Counters, Order, OrderError, NIL};

/// What a [`BinSort`] does with a deadline beyond its last bin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Beyond {
    /// Put it in the last bin.
    #[default]
    Clamp,
    /// Refuse it (a drop).
    Reject,
}

/// How a [`BinSort`] is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinSortConfig {
    /// Most items held.
    pub capacity: usize,
    /// A bin's interval in nanoseconds (1 ms in the paper).
    pub bin_ns: u64,
    /// Number of bins, a power of two (1,024 in the paper).
    pub bins: usize,
    /// Deadlines beyond the last bin.
    pub beyond: Beyond,
}

impl Default for BinSortConfig {
    fn default() -> Self {
        BinSortConfig {
            capacity: 1000,
            bin_ns: 1_000_000,
            bins: 1024,
            beyond: Beyond::Clamp,
        }
    }
}

/// One held item, on one cache line with its link: a list step touches
/// one line, not three.
#[derive(Debug)]
struct Node<T> {
    item: Option<T>,
    deadline: u64,
    /// The next node in the same bin, or in the free list.
    next: u32,
}

/// Approximate sort by deadline in bins; with `M` it counts its memory
/// references ([`crate::memref`]).
#[derive(Debug)]
pub struct BinSort<T, const M: bool = false> {
    cfg: BinSortConfig,
    /// `u64::MAX / bin_ns`: bins are found by a multiplication, not a
    /// division (see [`BinSort::bin_of`]).
    recip: u64,
    mask: u64,
    /// First and last node of each bin, `NIL` when empty.
    head: Box<[u32]>,
    tail: Box<[u32]>,
    /// One bit per non-empty bin.
    bitmap: Box<[u64]>,
    /// One bit per non-empty bitmap word, so that finding the next
    /// non-empty bin reads two words, not up to BINS/64.
    summary: Box<[u64]>,
    /// The nodes of the bins' lists and of the free list.
    nodes: Box<[Node<T>]>,
    free: u32,
    len: usize,
    /// The window's first absolute bin.
    base: u64,
    /// The first non-empty absolute bin (meaningful when `len > 0`).
    first: u64,
    c: Counters,
}

impl<T, const M: bool> BinSort<T, M> {
    /// A BinSort shaped by `cfg`; all its memory is reserved now.
    pub fn new(cfg: BinSortConfig) -> Result<BinSort<T, M>, OrderError> {
        check_capacity(cfg.capacity)?;
        if cfg.bin_ns == 0 {
            return Err(OrderError::BinWidth);
        }
        if !cfg.bins.is_power_of_two() || cfg.bins > 1 << 20 {
            return Err(OrderError::Bins(cfg.bins));
        }
        let n = cfg.capacity;
        Ok(BinSort {
            cfg,
            recip: u64::MAX / cfg.bin_ns,
            mask: cfg.bins as u64 - 1,
            head: vec![NIL; cfg.bins].into(),
            tail: vec![NIL; cfg.bins].into(),
            bitmap: vec![0; cfg.bins.div_ceil(64)].into(),
            summary: vec![0; cfg.bins.div_ceil(64 * 64)].into(),
            nodes: (1..=n as u32)
                .map(|i| Node {
                    item: None,
                    deadline: 0,
                    next: if i as usize == n { NIL } else { i },
                })
                .collect(),
            free: 0,
            len: 0,
            base: 0,
            first: 0,
            c: Counters::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &BinSortConfig {
        &self.cfg
    }

    /// The window's first absolute bin (deadline / bin interval), as of
    /// the last operation.
    pub fn base_bin(&self) -> u64 {
        self.base
    }

    /// The absolute bin of the next item to leave, after moving the window
    /// to `now`; `None` when empty. What [`MdsBinSort`](super::MdsBinSort)
    /// merges on.
    pub fn first_bin(&mut self, now: u64) -> Option<u64> {
        if self.len > 0 {
            // Length, base and first bin, counted as a dequeue's (not when
            // empty: idle polling).
            memref!(M, self.c, dequeue, 3, 5);
        }
        self.advance(now);
        (self.len > 0).then_some(self.first)
    }

    /// `t / bin_ns` by a multiply-high with the reciprocal: the estimate
    /// is at most two below the quotient (the reciprocal is short of
    /// 2^64 / bin_ns by less than 1 + 1/bin_ns), and the remainder
    /// corrects it.
    #[inline(always)]
    fn bin_of(&self, t: u64) -> u64 {
        let w = self.cfg.bin_ns;
        let mut q = ((u128::from(t) * u128::from(self.recip)) >> 64) as u64;
        let mut r = t - q * w;
        while r >= w {
            q += 1;
            r -= w;
        }
        q
    }

    /// Moves the base to the bin of `now`, stopping at the first non-empty
    /// bin. O(1): the first non-empty bin is kept up to date.
    #[inline(always)]
    fn advance(&mut self, now: u64) {
        let now_bin = self.bin_of(now);
        let to = if self.len == 0 {
            now_bin
        } else {
            now_bin.min(self.first)
        };
        self.base = self.base.max(to);
    }

    /// The first non-empty slot at or after `from` (circularly). Only
    /// called when something is held.
    #[inline]
    fn scan_from(&mut self, from: usize) -> usize {
        let w0 = from / 64;
        let hit = self.bitmap[w0] & (!0u64 << (from % 64));
        if hit != 0 {
            // The word just written: nothing more read.
            return w0 * 64 + hit.trailing_zeros() as usize;
        }
        // The next non-empty word after w0, circularly, from the summary;
        // back at w0 itself only its bits before `from` can be set.
        let (w, refs) = self.next_word(w0);
        // The summary words and the bitmap word found.
        memref!(M, self.c, dequeue, refs + 1, 2 * (refs + 1));
        w * 64 + self.bitmap[w].trailing_zeros() as usize
    }

    /// The first non-empty bitmap word after `after`, circularly (`after`
    /// itself last), and the summary words read. Only called when
    /// something is held.
    #[inline]
    fn next_word(&self, after: usize) -> (usize, u64) {
        let start = after + 1;
        let mut refs = 0;
        if start < self.bitmap.len() {
            let s0 = start / 64;
            for s in s0..self.summary.len() {
                refs += 1;
                let mut m = self.summary[s];
                if s == s0 {
                    m &= !0u64 << (start % 64);
                }
                if m != 0 {
                    return (s * 64 + m.trailing_zeros() as usize, refs);
                }
            }
        }
        for (s, &m) in self.summary.iter().enumerate() {
            refs += 1;
            if m != 0 {
                return (s * 64 + m.trailing_zeros() as usize, refs);
            }
        }
        (after, refs)
    }
}

impl<T, const M: bool> Order<T> for BinSort<T, M> {
    #[inline]
    fn enqueue(&mut self, item: T, deadline: u64, now: u64) -> Result<(), T> {
        // Length, base and first bin.
        memref!(M, self.c, enqueue, 3, 5);
        if self.len == self.cfg.capacity {
            self.c.drops += 1;
            return Err(item);
        }
        self.advance(now);
        let mut bin = self.bin_of(deadline);
        if bin < self.base {
            bin = self.base;
            self.c.late_bins += 1;
        } else if bin - self.base > self.mask {
            self.c.beyond += 1;
            if self.cfg.beyond == Beyond::Reject {
                self.c.drops += 1;
                return Err(item);
            }
            bin = self.base + self.mask;
        }
        let slot = (bin & self.mask) as usize;
        let node = self.free;
        let ni = node as usize;
        let nd = &mut self.nodes[ni];
        self.free = nd.next;
        nd.next = NIL;
        nd.item = Some(item);
        nd.deadline = deadline;
        let t = self.tail[slot];
        if t == NIL {
            self.head[slot] = node;
            let w = slot / 64;
            self.bitmap[w] |= 1 << (slot % 64);
            self.summary[w / 64] |= 1 << (w % 64);
            // Free list, the node (handle, deadline, link: one line, five
            // words), head, tail, bitmap word, summary word.
            memref!(M, self.c, enqueue, 6, 12);
        } else {
            self.nodes[t as usize].next = node;
            // Free list, the node, the old tail's link, tail.
            memref!(M, self.c, enqueue, 4, 8);
        }
        self.tail[slot] = node;
        if self.len == 0 || bin < self.first {
            self.first = bin;
        }
        self.len += 1;
        self.c.accepted(self.len);
        Ok(())
    }

    #[inline]
    fn dequeue(&mut self, now: u64) -> Option<T> {
        self.advance(now);
        if self.len == 0 {
            // Idle polling, not counted.
            return None;
        }
        // Length, base and first bin.
        memref!(M, self.c, dequeue, 3, 5);
        let slot = (self.first & self.mask) as usize;
        let node = self.head[slot];
        let ni = node as usize;
        let nd = &mut self.nodes[ni];
        let nx = nd.next;
        self.head[slot] = nx;
        let item = nd.item.take();
        let deadline = nd.deadline;
        nd.next = self.free;
        self.free = node;
        self.len -= 1;
        // Head, the node (five words), free list.
        memref!(M, self.c, dequeue, 3, 7);
        if nx == NIL {
            self.tail[slot] = NIL;
            let w = slot / 64;
            self.bitmap[w] &= !(1 << (slot % 64));
            // Tail and bitmap word, and the summary word when the bitmap
            // word empties.
            memref!(M, self.c, dequeue, 2, 3);
            if self.bitmap[w] == 0 {
                self.summary[w / 64] &= !(1 << (w % 64));
                memref!(M, self.c, dequeue, 1, 2);
            }
            if self.len > 0 {
                let s = self.scan_from(slot);
                let ahead = (s as u64).wrapping_sub(slot as u64) & self.mask;
                self.first += ahead;
            }
        }
        self.c.released(deadline, now);
        item
    }

    fn len(&self) -> usize {
        self.len
    }

    fn capacity(&self) -> usize {
        self.cfg.capacity
    }

    fn counters(&self) -> Counters {
        Counters {
            length: self.len as u64,
            ..self.c
        }
    }

    fn clear(&mut self, sink: &mut dyn FnMut(T)) {
        while let Some(x) = self.dequeue(self.base * self.cfg.bin_ns) {
            sink(x);
        }
        self.c = Counters::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const MS: u64 = 1_000_000;

    fn bs(capacity: usize, bins: usize, beyond: Beyond) -> BinSort<u64> {
        BinSort::<_>::new(BinSortConfig {
            capacity,
            bin_ns: MS,
            bins,
            beyond,
        })
        .unwrap()
    }

    #[test]
    fn earlier_bins_first_fifo_within_a_bin() {
        let mut b = bs(16, 1024, Beyond::Clamp);
        // Deadlines in ms: two in bin 5 (arrival order kept although the
        // second is earlier), one in bin 2, one in bin 900.
        for (i, d) in [
            (0, 5_700_000),
            (1, 5_100_000),
            (2, 2_000_000),
            (3, 900 * MS),
        ] {
            b.enqueue(i, d, 0).unwrap();
        }
        let got: Vec<u64> = std::iter::from_fn(|| b.dequeue(0)).collect();
        assert_eq!(got, vec![2, 0, 1, 3]);
        assert_eq!(b.counters().late, 0);
    }

    #[test]
    fn window_moves_with_the_clock_and_wraps() {
        let mut b = bs(8, 8, Beyond::Reject);
        // At 100 ms the window is bins 100..108.
        b.enqueue(1, 107 * MS, 100 * MS).unwrap();
        assert_eq!(b.enqueue(2, 108 * MS, 100 * MS), Err(2));
        assert_eq!(b.counters().beyond, 1);
        assert_eq!(b.counters().drops, 1);
        // The window cannot pass bin 107 while it holds an item...
        b.enqueue(3, 110 * MS, 106 * MS).unwrap();
        assert_eq!(b.base_bin(), 106);
        assert_eq!(b.first_bin(200 * MS), Some(107));
        assert_eq!(b.base_bin(), 107);
        // ...and a deadline behind the base goes in the first bin.
        b.enqueue(4, 50 * MS, 200 * MS).unwrap();
        assert_eq!(b.counters().late_bins, 1);
        let got: Vec<u64> = std::iter::from_fn(|| b.dequeue(200 * MS)).collect();
        assert_eq!(got, vec![1, 4, 3]);
        assert_eq!(b.counters().late, 3);
        // Empty, the base jumps to the clock.
        assert_eq!(b.first_bin(300 * MS), None);
        assert_eq!(b.base_bin(), 300);
    }

    #[test]
    fn beyond_clamps_to_the_last_bin() {
        let mut b = bs(8, 16, Beyond::Clamp);
        b.enqueue(1, 1_000 * MS, 0).unwrap();
        b.enqueue(2, 15 * MS, 0).unwrap();
        b.enqueue(3, 3 * MS, 0).unwrap();
        assert_eq!(b.counters().beyond, 1);
        let got: Vec<u64> = std::iter::from_fn(|| b.dequeue(0)).collect();
        assert_eq!(got, vec![3, 1, 2]);
    }

    #[test]
    fn full_drops_and_reuses_nodes() {
        let mut b = bs(3, 64, Beyond::Clamp);
        for round in 0..10u64 {
            for i in 0..4 {
                let r = b.enqueue(i, (i * 7 % 5) * MS, round);
                assert_eq!(r.is_err(), i == 3);
            }
            assert_eq!(std::iter::from_fn(|| b.dequeue(round)).count(), 3);
        }
        assert_eq!(b.counters().drops, 10);
        assert_eq!(b.counters().enqueued, 30);
    }

    proptest! {
        /// The multiply-high division is the division.
        #[test]
        fn bin_of_divides(t in any::<u64>(), w in 1u64..u64::MAX, small in 1u64..5_000_000) {
            for w in [w, small, 1, 1_000_000, u64::MAX] {
                let b = BinSort::<u8>::new(BinSortConfig { bin_ns: w, capacity: 1, bins: 1, ..Default::default() }).unwrap();
                prop_assert_eq!(b.bin_of(t), t / w);
                prop_assert_eq!(b.bin_of(u64::MAX), u64::MAX / w);
            }
        }
    }

    #[test]
    fn bad_shapes_refused() {
        let c = BinSortConfig::default();
        assert!(BinSort::<u8>::new(BinSortConfig { bins: 1000, ..c }).is_err());
        assert!(BinSort::<u8>::new(BinSortConfig { bin_ns: 0, ..c }).is_err());
        assert!(BinSort::<u8>::new(BinSortConfig { capacity: 0, ..c }).is_err());
        assert!(BinSort::<u8>::new(BinSortConfig { bins: 1, ..c }).is_ok());
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// An item whose deadline is `now` plus a drawn number of ns.
        Enq,
        Deq,
        /// The clock moves on by a drawn number of ns.
        Tick,
    }

    proptest! {
        /// With deadlines never behind the clock and never beyond the
        /// window, BinSort's output is exactly the items sorted by (bin,
        /// arrival): a later bin never leaves before an earlier one, and
        /// an item leaves at most one bin late.
        #[test]
        fn releases_by_bin_then_arrival(
            log_bins in 0u32..15,
            start in 0u64..1_000_000,
            cap in 1usize..40,
            ops in prop::collection::vec(prop_oneof![
                4 => Just(Op::Enq),
                3 => Just(Op::Deq),
                1 => Just(Op::Tick),
            ], 0..300),
            draws in prop::collection::vec(0u64..u64::MAX, 300),
        ) {
            let bins = 1usize << log_bins;
            let w = 1_000u64;
            // Time moves at most bins/2 bins in all; deadlines reach at
            // most bins/2 bins ahead: nothing can fall outside the window.
            let half = (bins as u64 * w / 2).max(1);
            let mut b = BinSort::<_>::new(BinSortConfig {
                capacity: cap, bin_ns: w, bins, beyond: Beyond::Reject,
            }).unwrap();
            let mut now = start * w;
            let end = now + half - 1;
            let mut model: BTreeMap<(u64, u64), u64> = BTreeMap::new();
            for (k, op) in ops.into_iter().enumerate() {
                let r = draws[k];
                match op {
                    Op::Enq => {
                        let d = now + r % half;
                        let ok = b.enqueue(k as u64, d, now).is_ok();
                        prop_assert_eq!(ok, model.len() < cap);
                        if ok {
                            model.insert((d / w, k as u64), d);
                        }
                    }
                    Op::Deq => {
                        let want = model.pop_first();
                        let got = b.dequeue(now);
                        prop_assert_eq!(got, want.map(|((_, s), _)| s));
                        if let Some((_, d)) = want {
                            if let Some(&d2) = model.values().min() {
                                prop_assert!(d < d2 + w, "later by more than a bin");
                            }
                        }
                    }
                    Op::Tick => now = (now + r % (w * 3)).min(end),
                }
                prop_assert_eq!(b.len(), model.len());
            }
            let c = b.counters();
            prop_assert_eq!((c.beyond, c.late_bins), (0, 0));
        }
    }
}
