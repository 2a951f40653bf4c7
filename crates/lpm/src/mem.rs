//! Memory shared between one writer and lock-free readers: zeroed atomic
//! arrays, the prefetch hint, and [`ReuseSeq`] with
//! [`BlockPool`], the reclamation scheme every table here uses.
//!
//! Tables publish new memory (a DIR-24-8 tbl8 group, a trie node) with a
//! Release store of the link to it, and readers follow links with Acquire
//! loads, so a reader that sees a link sees what was written behind it.
//! The hard part is memory that is unlinked and later reused: a reader that
//! loaded the old link just before it was cleared may still be reading the
//! block when the writer refills it for another prefix. DPDK's `rte_lpm`
//! solves this with an RCU quiescent-state report from every reader thread
//! (`rte_lpm_rcu_qsbr_add`); here readers need not register anywhere.
//! Instead the writer parks unlinked blocks in a limbo list and, before it
//! writes into any of them again, increments a shared sequence number
//! ([`ReuseSeq::bump`]). A reader reads the sequence before it starts and
//! checks it is unchanged after it finishes ([`ReuseSeq::begin`],
//! [`ReuseSeq::validate`]); if it moved, the reader may have read a block
//! that was being reused and looks up again. This is a sequence lock
//! (Boehm, "Can Seqlocks Get Along With Programming Language Memory
//! Models?", MSPC 2012) that only reuse of memory trips, not ordinary
//! updates, and the writer bumps it once per batch of reused blocks
//! ([`LIMBO_BATCH`]), so readers almost never retry.

#![deny(unsafe_code)]

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// A boxed slice of `n` zero atomics. The allocation is zeroed by the
/// allocator (`calloc`, so fresh pages from the kernel are not touched):
/// a large reserve that is mostly unused costs address space, not memory.
#[allow(unsafe_code)]
pub(crate) fn zeroed_u32(n: usize) -> Box<[AtomicU32]> {
    let b: Box<[MaybeUninit<AtomicU32>]> = Box::new_zeroed_slice(n);
    // SAFETY: `AtomicU32` has the same size and bit validity as `u32`
    // (documented on the type), so all-zero bytes are a valid `AtomicU32`
    // holding 0, and `new_zeroed_slice` zeroed every element.
    unsafe { b.assume_init() }
}

/// A boxed slice of `n` zero `AtomicU64`s; see [`zeroed_u32`].
#[allow(unsafe_code)]
pub(crate) fn zeroed_u64(n: usize) -> Box<[AtomicU64]> {
    let b: Box<[MaybeUninit<AtomicU64>]> = Box::new_zeroed_slice(n);
    // SAFETY: as in `zeroed_u32`: `AtomicU64` has the bit validity of
    // `u64`, for which all-zero bytes are a valid value.
    unsafe { b.assume_init() }
}

/// Asks the kernel to back `s` with transparent huge pages where it can
/// (`madvise(MADV_HUGEPAGE)` on the 2 MiB pages inside it). A lookup in a
/// table of tens of MiB touches a handful of random pages, and with 4 KiB
/// pages nearly each of them misses the TLB too; with 2 MiB pages the
/// table's pages all fit in the TLB. A hint: where it is refused, or on
/// systems without it, nothing changes.
#[allow(unsafe_code)]
pub(crate) fn advise_huge<T>(s: &[T]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = s.as_ptr() as usize;
        let end = start + std::mem::size_of_val(s);
        let first = start.next_multiple_of(HUGE);
        let last = end / HUGE * HUGE;
        if last > first {
            // SAFETY: the range lies inside the live allocation of `s`
            // (rounded inwards to whole huge pages); MADV_HUGEPAGE changes
            // how the range is backed, never its contents or its mapping.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = s;
}

/// Hints the CPU to bring the cache line of `r` into all cache levels.
#[inline(always)]
#[allow(unsafe_code)]
pub(crate) fn prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint: it never faults, reads nothing into
    // the program and writes nothing; the pointer comes from a live
    // reference. SSE, which provides it, is part of the x86_64 baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            r as *const T as *const i8,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

/// The reuse sequence: readers detect that memory they read may have been
/// reused while they read it. On its own cache line, so that the writer's
/// other stores do not evict it from the readers' caches.
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct ReuseSeq(AtomicU64);

impl ReuseSeq {
    /// Reader: the sequence before a lookup. Acquire, so that every unlink
    /// the writer made before a bump this load sees is visible to the
    /// loads that follow (the reader cannot then find an unlinked block).
    #[inline(always)]
    pub(crate) fn begin(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Reader: whether no block was reused since [`ReuseSeq::begin`]
    /// returned `s`. The Acquire fence pairs with the Release fence in
    /// [`ReuseSeq::bump`]: if any load of the lookup read a value written
    /// into a reused block, the bump that preceded that write is visible
    /// here and the check fails.
    #[inline(always)]
    pub(crate) fn validate(&self, s: u64) -> bool {
        fence(Ordering::Acquire);
        self.0.load(Ordering::Relaxed) == s
    }

    /// Writer: the current value (only the writer changes it).
    pub(crate) fn current(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Writer: called after blocks were unlinked and before any of them is
    /// written again. The Release store orders the unlinks before the new
    /// value; the Release fence orders the new value before every later
    /// store into reused memory.
    pub(crate) fn bump(&self) {
        let s = self.0.load(Ordering::Relaxed);
        self.0.store(s + 1, Ordering::Release);
        fence(Ordering::Release);
    }
}

/// Reused blocks are released to readers in batches of this many, so a
/// reader retries at most once per this many freed blocks.
pub(crate) const LIMBO_BATCH: usize = 256;

/// Writer-side bookkeeping of an arena of fixed-capacity units cut into
/// blocks of `1..=max_block` units: a bump pointer over never-used units,
/// per-size free lists of blocks that are safe to reuse, and per-size
/// limbo lists of blocks unlinked since the last [`ReuseSeq::bump`].
/// Blocks are reused only at their exact size, which leaves no waste
/// inside blocks; a table whose sizes churn reuses blocks of every size.
#[derive(Debug)]
pub(crate) struct BlockPool {
    capacity: usize,
    fresh: usize,
    free: Vec<Vec<u32>>,
    limbo: Vec<VecDeque<(u64, u32)>>,
    limbo_units: usize,
    live_units: usize,
}

impl BlockPool {
    /// A pool over `capacity` units with blocks of up to `max_block`.
    pub(crate) fn new(capacity: usize, max_block: usize) -> BlockPool {
        BlockPool {
            capacity,
            fresh: 0,
            free: vec![Vec::new(); max_block + 1],
            limbo: vec![VecDeque::new(); max_block + 1],
            limbo_units: 0,
            live_units: 0,
        }
    }

    /// Units ever handed out: the part of the arena that has been touched.
    pub(crate) fn high_water(&self) -> usize {
        self.fresh
    }

    /// Units in blocks that are linked (allocated and not freed).
    pub(crate) fn live(&self) -> usize {
        self.live_units
    }

    /// Units the arena has room for.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether `n` more blocks of `size` units can be allocated now.
    pub(crate) fn can_alloc(&self, size: usize, n: usize) -> bool {
        self.free[size].len() + self.limbo[size].len() + (self.capacity - self.fresh) / size >= n
    }

    /// A block of `size` units, or `None` when the arena is full. May bump
    /// `seq` to make blocks in limbo reusable.
    pub(crate) fn alloc(&mut self, size: usize, seq: &ReuseSeq) -> Option<u32> {
        self.alloc_limited(size, seq, self.capacity)
    }

    /// Like [`BlockPool::alloc`], but the high-water mark may not pass
    /// `limit` units (for arenas that share one byte budget).
    pub(crate) fn alloc_limited(
        &mut self,
        size: usize,
        seq: &ReuseSeq,
        limit: usize,
    ) -> Option<u32> {
        let got = self.take(size, seq, limit.min(self.capacity));
        if got.is_some() {
            self.live_units += size;
        }
        got
    }

    fn take(&mut self, size: usize, seq: &ReuseSeq, limit: usize) -> Option<u32> {
        if let Some(b) = self.free[size].pop() {
            return Some(b);
        }
        let fresh_left = limit.saturating_sub(self.fresh);
        if !self.limbo[size].is_empty()
            && (self.limbo_units >= LIMBO_BATCH * size || fresh_left < size)
        {
            self.release_limbo(seq);
            return self.free[size].pop();
        }
        if fresh_left >= size {
            let b = self.fresh as u32;
            self.fresh += size;
            return Some(b);
        }
        None
    }

    /// Moves every limbo block to the free lists, bumping `seq` first if
    /// some block was unlinked since the last bump.
    fn release_limbo(&mut self, seq: &ReuseSeq) {
        let now = seq.current();
        if self
            .limbo
            .iter()
            .any(|l| l.back().is_some_and(|&(at, _)| at >= now))
        {
            seq.bump();
        }
        for (size, l) in self.limbo.iter_mut().enumerate() {
            for (_, b) in l.drain(..) {
                self.free[size].push(b);
            }
        }
        self.limbo_units = 0;
    }

    /// Parks an unlinked block of `size` units at `block` until readers
    /// can no longer be reading it.
    pub(crate) fn free(&mut self, block: u32, size: usize, seq: &ReuseSeq) {
        self.limbo[size].push_back((seq.current(), block));
        self.limbo_units += size;
        self.live_units -= size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_waits_for_a_bump() {
        let seq = ReuseSeq::default();
        let mut p = BlockPool::new(4, 2);
        let a = p.alloc(1, &seq).unwrap();
        let b = p.alloc(1, &seq).unwrap();
        assert_ne!(a, b);
        p.free(a, 1, &seq);
        let s = seq.begin();
        // Fresh units are preferred while the limbo is small.
        let c = p.alloc(2, &seq).unwrap();
        assert_eq!(c, 2);
        assert!(seq.validate(s));
        // The arena is full: reusing `a` needs a bump first.
        assert_eq!(p.alloc(1, &seq), Some(a));
        assert!(!seq.validate(s));
        assert_eq!(p.alloc(1, &seq), None);
        assert_eq!(p.high_water(), 4);
        assert_eq!(p.live(), 4);
    }

    #[test]
    fn zeroed_arrays_are_zero() {
        let a = zeroed_u32(1000);
        assert!(a.iter().all(|x| x.load(Ordering::Relaxed) == 0));
        let b = zeroed_u64(3);
        assert!(b.iter().all(|x| x.load(Ordering::Relaxed) == 0));
        prefetch(&a[10]);
    }
}
