//! BinSort (Hardekopf et al. §5.1, after [28]): approximate sort by
//! deadline in O(1) per enqueue.
//!
//! Time is cut into bins of a fixed interval (the paper: 1 ms, 1,024
//! bins); a deadline `d` belongs to the absolute bin `d / BIN`. The bins
//! form a circular array covering a window of BINS consecutive absolute
//! bins starting at the *base*; each bin is a FIFO (a linked list through
//! a node array reserved at construction, so nothing is allocated per
//! packet), and a bitmap holds one bit per non-empty bin. A dequeue takes
//! the head of the first non-empty bin, found by scanning the bitmap a
//! 64-bit word at a time from the base: O(1) when the router is busy (the
//! first bin holds packets), at most BINS/64 words when it is not.
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

/// Approximate sort by deadline in bins.
#[derive(Debug)]
pub struct BinSort<T> {
    cfg: BinSortConfig,
    mask: u64,
    /// First and last node of each bin, `NIL` when empty.
    head: Box<[u32]>,
    tail: Box<[u32]>,
    /// One bit per non-empty bin.
    bitmap: Box<[u64]>,
    /// Next node in the same bin, or in the free list.
    next: Box<[u32]>,
    items: Box<[Option<T>]>,
    deadlines: Box<[u64]>,
    free: u32,
    len: usize,
    /// The window's first absolute bin.
    base: u64,
    /// The first non-empty absolute bin (meaningful when `len > 0`).
    first: u64,
    c: Counters,
}

impl<T> BinSort<T> {
    /// A BinSort shaped by `cfg`; all its memory is reserved now.
    pub fn new(cfg: BinSortConfig) -> Result<BinSort<T>, OrderError> {
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
            mask: cfg.bins as u64 - 1,
            head: vec![NIL; cfg.bins].into(),
            tail: vec![NIL; cfg.bins].into(),
            bitmap: vec![0; cfg.bins.div_ceil(64)].into(),
            next: (1..=n as u32)
                .map(|i| if i as usize == n { NIL } else { i })
                .collect(),
            items: (0..n).map(|_| None).collect(),
            deadlines: vec![0; n].into(),
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
        self.advance(now);
        (self.len > 0).then_some(self.first)
    }

    /// Moves the base to the bin of `now`, stopping at the first non-empty
    /// bin. O(1): the first non-empty bin is kept up to date.
    #[inline(always)]
    fn advance(&mut self, now: u64) {
        let now_bin = now / self.cfg.bin_ns;
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
        let words = self.bitmap.len();
        let w0 = from / 64;
        let bit = from % 64;
        let mut refs = 1u64;
        let hit = self.bitmap[w0] & (!0u64 << bit);
        let found = if hit != 0 {
            w0 * 64 + hit.trailing_zeros() as usize
        } else {
            let mut found = None;
            for k in 1..=words {
                let w = (w0 + k) % words;
                refs += 1;
                let mut v = self.bitmap[w];
                if w == w0 {
                    // Back where the scan began: only the bits before it.
                    v &= !(!0u64 << bit);
                }
                if v != 0 {
                    found = Some(w * 64 + v.trailing_zeros() as usize);
                    break;
                }
            }
            found.unwrap_or(from)
        };
        memref!(self.c, dequeue, refs, refs);
        let _ = refs;
        found
    }
}

impl<T> Order<T> for BinSort<T> {
    #[inline]
    fn enqueue(&mut self, item: T, deadline: u64, now: u64) -> Result<(), T> {
        // Length, base and first bin.
        memref!(self.c, enqueue, 3, 3);
        if self.len == self.cfg.capacity {
            self.c.drops += 1;
            return Err(item);
        }
        self.advance(now);
        let mut bin = deadline / self.cfg.bin_ns;
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
        self.free = self.next[ni];
        self.next[ni] = NIL;
        self.items[ni] = Some(item);
        self.deadlines[ni] = deadline;
        let t = self.tail[slot];
        if t == NIL {
            self.head[slot] = node;
            self.bitmap[slot / 64] |= 1 << (slot % 64);
            // Free list, the node (next, handle, deadline), head, tail, bitmap
            // word: the node's three arrays are three locations.
            memref!(self.c, enqueue, 7, 7);
        } else {
            self.next[t as usize] = node;
            // Free list, node (next, handle, deadline), tail, old tail's next.
            memref!(self.c, enqueue, 6, 6);
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
        // Length, base and first bin.
        memref!(self.c, dequeue, 3, 3);
        self.advance(now);
        if self.len == 0 {
            return None;
        }
        let slot = (self.first & self.mask) as usize;
        let node = self.head[slot];
        let ni = node as usize;
        let nx = self.next[ni];
        self.head[slot] = nx;
        let item = self.items[ni].take();
        let deadline = self.deadlines[ni];
        self.next[ni] = self.free;
        self.free = node;
        self.len -= 1;
        // Head, node (next, handle, deadline), free list.
        memref!(self.c, dequeue, 5, 5);
        if nx == NIL {
            self.tail[slot] = NIL;
            self.bitmap[slot / 64] &= !(1 << (slot % 64));
            memref!(self.c, dequeue, 2, 2);
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
        BinSort::new(BinSortConfig {
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
            log_bins in 0u32..8,
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
            let mut b = BinSort::new(BinSortConfig {
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
