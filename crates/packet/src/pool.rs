//! The per-thread buffer pool.
//!
//! Each worker thread keeps a free list of buffers. Allocation pops, drop
//! pushes; neither locks nor touches an atomic. The list is bounded so that
//! a thread that only frees (a pipeline's consumer) does not hoard memory:
//! past the bound buffers go back to the allocator.
//!
//! Packets cross threads (a `ThreadSafeQueue` between workers, a
//! dispatcher's rings): then one thread only allocates and another only
//! frees. Past its bound the freeing thread hands whole magazines of
//! buffers to a shared depot, and a thread whose list is empty takes a
//! magazine from there before it asks the allocator, so a pipeline across
//! cores reuses its buffers too: one lock per magazine of
//! [`MAGAZINE`] buffers, never per packet, and only on those threads.
//!
//! The list lives in a `Cell` and is taken out for the length of one
//! operation: no borrow flag to check, and the batch operations keep the
//! list's length in a register instead of re-reading thread-local memory
//! for every packet. Nothing inside an operation can reach the pool again,
//! so the list is never found missing.

use crate::{Buffer, Packet};
use std::cell::{Cell, RefCell};
use std::sync::Mutex;

/// Buffers a thread keeps for reuse at most.
const POOL_LIMIT: usize = 16 * 1024;
/// Buffers moved to or from the depot at once.
const MAGAZINE: usize = 256;
/// Magazines the depot holds at most (16 Ki buffers, 35 MB); past that
/// buffers go back to the allocator.
const DEPOT_LIMIT: usize = 64;

/// Full magazines of free buffers that threads which free more than they
/// allocate leave for threads which allocate more than they free.
#[allow(clippy::vec_box)]
static DEPOT: Mutex<Vec<Vec<Box<Buffer>>>> = Mutex::new(Vec::new());

/// Moves a magazine off a free list that reached its bound into the
/// depot (or to the allocator when the depot is full).
#[cold]
#[allow(clippy::vec_box)]
fn spill(f: &mut Vec<Box<Buffer>>) {
    let magazine: Vec<Box<Buffer>> = f.split_off(f.len() - MAGAZINE.min(f.len()));
    let mut depot = DEPOT.lock().unwrap_or_else(|e| e.into_inner());
    if depot.len() < DEPOT_LIMIT {
        depot.push(magazine);
    }
}

/// Refills an empty free list with a magazine from the depot; whether
/// there was one.
#[cold]
#[allow(clippy::vec_box)]
fn refill(f: &mut Vec<Box<Buffer>>) -> bool {
    let magazine = DEPOT.lock().unwrap_or_else(|e| e.into_inner()).pop();
    match magazine {
        Some(m) => {
            f.extend(m);
            true
        }
        None => false,
    }
}

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
        free: with_free(|f| f.len()).unwrap_or(0),
    }
}

/// Runs `op` on the free list; `None` while the thread is being torn down.
#[inline(always)]
#[allow(clippy::vec_box)]
fn with_free<R>(op: impl FnOnce(&mut Vec<Box<Buffer>>) -> R) -> Option<R> {
    // A borrow rather than taking the list out and putting it back: one
    // flag check instead of moving the list twice and dropping the empty
    // one left behind. `op` never re-enters the pool.
    FREE.try_with(|cell| cell.try_borrow_mut().ok().map(|mut list| op(&mut list)))
        .ok()
        .flatten()
}

#[inline]
pub(crate) fn alloc() -> Box<Buffer> {
    with_free(|f| {
        if f.is_empty() {
            refill(f);
        }
        f.pop()
    })
    .flatten()
    .unwrap_or_else(fresh)
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
        if f.len() >= POOL_LIMIT {
            spill(f);
        }
        f.push(buf);
    });
}

/// Appends up to `n` fresh packets to `out` with one visit to the free
/// list.
#[inline]
pub(crate) fn alloc_into(out: &mut crate::Batch, n: usize) {
    let n = n.min(out.remaining());
    let got = with_free(|f| {
        if f.len() < n {
            refill(f);
        }
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
            if f.len() >= POOL_LIMIT {
                spill(f);
            }
            f.push(p.into_buffer());
        }
    });
    // Only at thread exit are any left: they go to the allocator.
    for p in packets {
        drop(p.into_buffer());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One thread allocates, another frees what it receives (a queue
    /// between workers): once the freeing thread's list is full, its
    /// buffers come back to the allocating thread through the depot, so
    /// the allocator is asked for no more than a bounded number.
    #[test]
    fn buffers_freed_on_another_thread_come_back_through_the_depot() {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Packet>>(4);
        let consumer = std::thread::spawn(move || {
            for batch in rx {
                drop(batch);
            }
        });
        let rounds = 2_000;
        let allocated = std::thread::spawn(move || {
            for _ in 0..rounds {
                let batch: Vec<Packet> = (0..64).map(|_| Packet::new()).collect();
                tx.send(batch).unwrap();
            }
            drop(tx);
            pool_stats().allocated
        })
        .join()
        .unwrap();
        consumer.join().unwrap();
        // 128,000 packets; without the depot every one past the first
        // few hundred would be a fresh allocation.
        assert!(
            allocated < (POOL_LIMIT + 8 * MAGAZINE) as u64,
            "{allocated} buffers allocated for {} packets",
            rounds * 64
        );
    }
}
