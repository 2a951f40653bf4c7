//! The per-thread buffer pool.
//!
//! Each worker thread keeps a free list of buffers. Allocation pops, drop
//! pushes; neither locks nor touches an atomic. The list is bounded so that
//! a thread that only frees (a pipeline's consumer) does not hoard memory:
//! past the bound buffers go back to the allocator.

use crate::Buffer;
use std::cell::{Cell, RefCell};

/// Buffers a thread keeps for reuse at most.
const POOL_LIMIT: usize = 16 * 1024;

thread_local! {
    // Boxes on purpose: a free buffer is handed out as the same allocation
    // that a packet owns, so reuse moves a pointer, not 2 KiB.
    #[allow(clippy::vec_box)]
    static FREE: RefCell<Vec<Box<Buffer>>> = const { RefCell::new(Vec::new()) };
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
        free: FREE.with(|f| f.borrow().len()),
    }
}

#[inline]
pub(crate) fn alloc() -> Box<Buffer> {
    if let Some(b) = FREE.with(|f| f.borrow_mut().pop()) {
        return b;
    }
    fresh()
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
    // `try_with` because a packet can be dropped while the thread-local
    // storage is being torn down at thread exit.
    let _ = FREE.try_with(|f| {
        let mut f = f.borrow_mut();
        if f.len() < POOL_LIMIT {
            f.push(buf);
        }
    });
}
