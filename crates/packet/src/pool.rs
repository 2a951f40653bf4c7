//! The per-thread buffer pool.
//!
//! Each worker thread keeps a free list of buffers. Allocation pops, drop
//! pushes; neither locks nor touches an atomic. The list is bounded so that
//! a thread that only frees (a pipeline's consumer) does not hoard memory:
//! past the bound buffers go back to the allocator.
//!
//! The list lives in a `Cell` and is taken out for the length of one
//! operation: no borrow flag to check, and the batch operations keep the
//! list's length in a register instead of re-reading thread-local memory
//! for every packet. Nothing inside an operation can reach the pool again,
//! so the list is never found missing.

use crate::{Buffer, Packet};
use std::cell::Cell;

/// Buffers a thread keeps for reuse at most.
const POOL_LIMIT: usize = 16 * 1024;

thread_local! {
    // Boxes on purpose: a free buffer is handed out as the same allocation
    // that a packet owns, so reuse moves a pointer, not 2 KiB.
    #[allow(clippy::vec_box)]
    static FREE: Cell<Vec<Box<Buffer>>> = const { Cell::new(Vec::new()) };
    static ALLOCATED: Cell<u64> = const { Cell::new(0) };
}

/// Counters of the current thread's pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers obtained from the allocator by this thread so far.
    pub allocated: u64,
    /// Buffers waiting in the free list.
    pub free: usize,
}

/// The current thread's pool counters.
pub fn pool_stats() -> PoolStats {
    PoolStats {
        allocated: ALLOCATED.with(|a| a.get()),
        free: with_free(|f| f.len()).unwrap_or(0),
    }
}

/// Runs `op` on the free list; `None` while the thread is being torn down.
#[inline(always)]
#[allow(clippy::vec_box)]
fn with_free<R>(op: impl FnOnce(&mut Vec<Box<Buffer>>) -> R) -> Option<R> {
    FREE.try_with(|cell| {
        let mut list = cell.take();
        let r = op(&mut list);
        cell.set(list);
        r
    })
    .ok()
}

#[inline]
pub(crate) fn alloc() -> Box<Buffer> {
    with_free(|f| f.pop()).flatten().unwrap_or_else(fresh)
}

#[cold]
fn fresh() -> Box<Buffer> {
    ALLOCATED.with(|a| a.set(a.get() + 1));
    Box::new(Buffer {
        anno: Default::default(),
        head: 0,
        tail: 0,
        data: [0; crate::BUFFER_SIZE],
    })
}

#[inline]
pub(crate) fn free(buf: Box<Buffer>) {
    // At thread exit the list may be gone; the buffer then simply goes
    // back to the allocator.
    with_free(|f| {
        if f.len() < POOL_LIMIT {
            f.push(buf);
        }
    });
}

/// Appends up to `n` fresh packets to `out` with one visit to the free
/// list.
#[inline]
pub(crate) fn alloc_into(out: &mut crate::Batch, n: usize) {
    let n = n.min(out.remaining());
    let got = with_free(|f| {
        let take = n.min(f.len());
        let start = f.len() - take;
        for b in f.drain(start..) {
            let _ = out.push(Packet::from_buffer(b));
        }
        take
    })
    .unwrap_or(0);
    for _ in got..n {
        let _ = out.push(Packet::from_buffer(fresh()));
    }
}

/// Returns the buffers of `packets` with one visit to the free list.
#[inline]
pub(crate) fn free_many(packets: impl Iterator<Item = Packet>) {
    let mut packets = packets;
    with_free(|f| {
        f.reserve(POOL_LIMIT.saturating_sub(f.len()).min(crate::MAX_BATCH));
        for p in packets.by_ref() {
            let b = p.into_buffer();
            if f.len() < POOL_LIMIT {
                f.push(b);
            }
        }
    });
    // Only at thread exit are any left: they go to the allocator.
    for p in packets {
        drop(p.into_buffer());
    }
}
