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

use std::alloc::Layout;
use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// Atomics that all-zero bytes make a valid value (0).
pub(crate) trait ZeroValid: Sync + Send {}
// `AtomicU32` and `AtomicU64` have the size and bit validity of `u32` and
// `u64` (documented on the types), for which all-zero bytes are 0.
impl ZeroValid for AtomicU32 {}
impl ZeroValid for AtomicU64 {}

const PAGE: usize = 4 << 10;
const HUGE: usize = 2 << 20;

/// Routes from which a table asks for huge pages (see [`Zeroed`]): a
/// table this large touches its big arrays all over.
pub(crate) const HUGE_TABLE: usize = 4096;

/// A zeroed array of atomics in an anonymous mapping of its own: the
/// memory of every lookup table here. A mapping is zero when it is made
/// and its pages are backed when first touched, so a large reserve that
/// is mostly unused costs address space, not memory.
///
/// An array made for huge pages (`huge_slice`, `huge_array`) of 2 MiB or
/// more starts on a 2 MiB boundary and its mapping runs to the next one,
/// so that [`Zeroed::use_huge_pages`] can back all of it with transparent
/// huge pages (`madvise(MADV_HUGEPAGE)`): a lookup in a table of megabytes
/// touches a few random pages, and with 4 KiB pages each of them can miss
/// the TLB (a page walk that, under a hypervisor, is itself several
/// misses); with 2 MiB pages the table's pages fit in the TLB. The
/// allocator cannot give this: it places a large block a few bytes into a
/// mapping of its own, so only the 2 MiB pages wholly inside the block
/// (one of a 4 MiB array) could be huge. A touched huge page is 2 MiB of
/// memory, so tables ask for them only once they hold [`HUGE_TABLE`]
/// routes: a router with a thousand small tables keeps them in 4 KiB
/// pages. Where transparent huge pages are off, only the alignment
/// changes.
pub(crate) struct Zeroed<A: ?Sized> {
    ptr: std::ptr::NonNull<A>,
    /// Bytes mapped at `ptr` (0: nothing mapped, the array is empty).
    mapped: usize,
}

// SAFETY: a `Zeroed` owns its mapping and gives out only shared
// references to its elements, which are atomics (`ZeroValid: Sync + Send`).
#[allow(unsafe_code)]
unsafe impl<A: ?Sized + Sync + Send> Send for Zeroed<A> {}
#[allow(unsafe_code)]
unsafe impl<A: ?Sized + Sync + Send> Sync for Zeroed<A> {}

impl<T: ZeroValid> Zeroed<[T]> {
    /// `n` zero elements.
    pub(crate) fn slice(n: usize) -> Self {
        Self::slice_in(n, false)
    }

    /// `n` zero elements, placed for huge pages (see [`Zeroed`]).
    pub(crate) fn huge_slice(n: usize) -> Self {
        Self::slice_in(n, true)
    }

    fn slice_in(n: usize, huge: bool) -> Self {
        let (p, mapped) = map_zeroed(Layout::array::<T>(n).expect("array size"), huge);
        Zeroed {
            ptr: NonNull::slice_from_raw_parts(p.cast::<T>(), n),
            mapped,
        }
    }
}

impl<T: ZeroValid, const N: usize> Zeroed<[T; N]> {
    /// `N` zero elements placed for huge pages (see [`Zeroed`]), as an
    /// array: indexes its length bounds need no check.
    pub(crate) fn huge_array() -> Self {
        let (p, mapped) = map_zeroed(Layout::new::<[T; N]>(), true);
        Zeroed {
            ptr: p.cast::<[T; N]>(),
            mapped,
        }
    }
}

impl<A: ?Sized> Zeroed<A> {
    /// Asks the kernel to back the array with transparent huge pages
    /// from now on (pages touched before are merged later, if at all):
    /// for an array placed for them, of 2 MiB or more; a hint, which
    /// changes nothing where it is refused.
    #[allow(unsafe_code)]
    pub(crate) fn use_huge_pages(&self) {
        let start = self.ptr.as_ptr() as *mut u8 as usize;
        #[cfg(target_os = "linux")]
        if self.mapped >= HUGE && start.is_multiple_of(HUGE) {
            // SAFETY: the range is this array's own mapping; MADV_HUGEPAGE
            // changes how it is backed, never its contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, self.mapped, libc::MADV_HUGEPAGE);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = start;
    }
}

impl<A: ?Sized> std::ops::Deref for Zeroed<A> {
    type Target = A;

    #[inline(always)]
    #[allow(unsafe_code)]
    fn deref(&self) -> &A {
        // SAFETY: `ptr` points into a live private mapping of `mapped`
        // bytes (or, for an empty array, is dangling with nothing to
        // read), aligned for the elements, which are zero-valid atomics
        // written only through shared references; it is unmapped only in
        // `drop`, when no reference from here is left.
        unsafe { self.ptr.as_ref() }
    }
}

impl<A: ?Sized> Drop for Zeroed<A> {
    #[allow(unsafe_code)]
    fn drop(&mut self) {
        if self.mapped > 0 {
            // SAFETY: the range is exactly the mapping `map_zeroed` kept
            // for this array, and no reference to it outlives `self`.
            unsafe {
                libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.mapped);
            }
        }
    }
}

impl<A: ?Sized> std::fmt::Debug for Zeroed<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zeroed")
            .field("mapped", &self.mapped)
            .finish()
    }
}

/// A private anonymous mapping for `layout`, placed for huge pages when
/// asked for and it takes 2 MiB or more (see [`Zeroed`]): the start and
/// the bytes mapped. Fails like the allocator when the kernel refuses.
#[allow(unsafe_code)]
fn map_zeroed(layout: Layout, huge: bool) -> (NonNull<u8>, usize) {
    assert!(layout.align() <= PAGE, "elements aligned within a page");
    let bytes = layout.size();
    if bytes == 0 {
        return (NonNull::<u64>::dangling().cast(), 0);
    }
    let huge = huge && bytes >= HUGE;
    let mapped = bytes.next_multiple_of(if huge { HUGE } else { PAGE });
    // A huge array maps 2 MiB more than it keeps, to cut an aligned range
    // out of it.
    let reserve = if huge { mapped + HUGE } else { mapped };
    // SAFETY: a new private anonymous mapping; it aliases nothing.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            reserve,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        std::alloc::handle_alloc_error(layout);
    }
    let base = base as usize;
    let start = if huge {
        base.next_multiple_of(HUGE)
    } else {
        base
    };
    if huge {
        let head = start - base;
        let tail = base + reserve - (start + mapped);
        // SAFETY: both ranges lie inside the mapping just made and outside
        // the part kept, so what is left mapped is exactly [start, start
        // + mapped).
        unsafe {
            if head > 0 {
                libc::munmap(base as *mut libc::c_void, head);
            }
            if tail > 0 {
                libc::munmap((start + mapped) as *mut libc::c_void, tail);
            }
        }
    }
    (
        NonNull::new(start as *mut u8).expect("mmap returned a mapping"),
        mapped,
    )
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
    fn zeroed_arrays_are_zero_and_writable_to_their_end() {
        let a = Zeroed::<[AtomicU32]>::slice(1000);
        assert_eq!(a.len(), 1000);
        assert!(a.iter().all(|x| x.load(Ordering::Relaxed) == 0));
        a[999].store(7, Ordering::Relaxed);
        assert_eq!(a[999].load(Ordering::Relaxed), 7);
        prefetch(&a[10]);
        let empty = Zeroed::<[AtomicU64]>::huge_slice(0);
        assert!(empty.is_empty());
        // Three and a bit MiB: a huge mapping of two 2 MiB pages, the
        // second partly past the array.
        let n = (3 << 20) / 8 + 5;
        let b = Zeroed::<[AtomicU64]>::huge_slice(n);
        assert_eq!(b.len(), n);
        assert_eq!(
            b.as_ptr() as usize % HUGE,
            0,
            "a huge array starts on a 2 MiB boundary"
        );
        assert!(b.iter().all(|x| x.load(Ordering::Relaxed) == 0));
        for i in [0, n / 2, n - 1] {
            b[i].store(i as u64 + 1, Ordering::Relaxed);
            assert_eq!(b[i].load(Ordering::Relaxed), i as u64 + 1);
        }
        // Below 2 MiB a huge array is an ordinary one.
        let c = Zeroed::<[AtomicU32]>::huge_slice(100);
        assert_eq!(c.len(), 100);
        let d = Zeroed::<[AtomicU32; 1 << 20]>::huge_array();
        assert_eq!(d.as_ptr() as usize % HUGE, 0);
        d[(1 << 20) - 1].store(3, Ordering::Relaxed);
        assert_eq!(d.iter().map(|x| x.load(Ordering::Relaxed)).sum::<u32>(), 3);
    }
}
