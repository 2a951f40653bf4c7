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

use crate::image::{FrameImage, LineImage};
use crate::{Annotations, Buffer, Packet, HEADROOM};
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

/// Appends up to `n` fresh packets to `out`, calling `init` on each as it
/// is made: one visit to the free list and one pass over the packets
/// ([`fill`]), each buffer's first line written from one image.
#[inline]
pub(crate) fn alloc_with(out: &mut crate::Batch, n: usize, init: impl FnMut(&mut Packet)) {
    alloc_annotated(out, n, Annotations::default(), init);
}

/// [`alloc_with`] with each packet's annotations starting as `anno`.
#[inline(always)]
fn alloc_annotated(
    out: &mut crate::Batch,
    n: usize,
    anno: Annotations,
    mut init: impl FnMut(&mut Packet),
) {
    let line = LineImage::new(anno, HEADROOM, HEADROOM);
    fill(out, n, |mut buf| {
        line.write(&mut buf);
        let mut p = Packet::from_written(buf);
        init(&mut p);
        p
    });
}

/// Fills `out` with up to `n` packets, each a copy of `frame` (at most
/// [`crate::MAX_FRAME`] bytes) with annotations `anno`: a frame of up to
/// 128 bytes is written from an image held in registers.
#[inline]
pub(crate) fn alloc_copies(out: &mut crate::Batch, n: usize, anno: Annotations, frame: &[u8]) {
    #[inline(always)]
    fn copies<const K: usize>(out: &mut crate::Batch, n: usize, anno: Annotations, frame: &[u8]) {
        let line = LineImage::new(anno, HEADROOM, HEADROOM + frame.len());
        let bytes = FrameImage::<K>::new(frame);
        fill(out, n, |mut buf| {
            line.write(&mut buf);
            bytes.write(&mut buf);
            Packet::from_written(buf)
        });
    }
    match frame.len().div_ceil(16) {
        0 | 1 => copies::<1>(out, n, anno, frame),
        2 => copies::<2>(out, n, anno, frame),
        3 => copies::<3>(out, n, anno, frame),
        4 => copies::<4>(out, n, anno, frame),
        5 => copies::<5>(out, n, anno, frame),
        6 => copies::<6>(out, n, anno, frame),
        7 => copies::<7>(out, n, anno, frame),
        8 => copies::<8>(out, n, anno, frame),
        // Cannot fail: the caller keeps the frame within MAX_FRAME.
        _ => alloc_annotated(out, n, anno, |p| {
            let _ = p.set_frame(frame);
        }),
    }
}

/// Fills `out` with up to `n` packets that `make` builds from buffers off
/// the free list (fresh ones when it runs out).
///
/// The buffers are taken off the end of the list by moving its length
/// down once rather than popping one at a time (a length check and store
/// per packet), and each packet is initialised while its buffer is in
/// the cache line just touched. `make` may not reach the pool (it fills a
/// frame); if it did, that allocation or free would simply bypass the
/// borrowed list.
#[inline(always)]
fn fill(out: &mut crate::Batch, n: usize, mut make: impl FnMut(Box<Buffer>) -> Packet) {
    let n = n.min(out.remaining());
    let got = with_free(|f| {
        if f.len() < n {
            refill(f);
        }
        let take = n.min(f.len());
        let start = f.len() - take;
        let base = f.as_ptr();
        // SAFETY: the list is shortened first, so the `take` boxes past
        // its new length are owned by nobody but this loop, which moves
        // each out exactly once (`start + i < start + take <= old len`,
        // all initialised). The packets are written into the batch's
        // free slots (`take <= n <= out.remaining()`) and its length set
        // once after the loop, not per packet. Should `make` panic, the
        // boxes not yet read and the packets not yet counted are leaked,
        // never dropped twice.
        unsafe {
            f.set_len(start);
            let len = out.len();
            let slots = out.spare_ptr();
            for i in 0..take {
                let p = make(core::ptr::read(base.add(start + i)));
                slots.add(i).write(p);
            }
            out.set_len(len + take);
        }
        take
    })
    .unwrap_or(0);
    for _ in got..n {
        let p = make(fresh());
        let _ = out.push(p);
    }
}

/// [`alloc_with`] for one packet (a source pulled a packet at a time,
/// behind a scheduler of many inputs): one pop, without the batch loop's
/// set-up.
#[inline]
pub(crate) fn alloc_one(out: &mut crate::Batch, init: impl FnOnce(&mut Packet)) {
    if out.is_full() {
        return;
    }
    let mut p = Packet::from_buffer(alloc());
    init(&mut p);
    // Cannot fail: the batch had room.
    let _ = out.push(p);
}

/// Returns the buffers of `packets` with one visit to the free list.
///
/// With room for all of them below the bound (the usual case), the
/// boxes are written straight past the list's end and its length moved
/// once: no capacity or bound check per packet.
#[inline]
pub(crate) fn free_many(packets: impl ExactSizeIterator<Item = Packet>) {
    let mut packets = packets;
    with_free(|f| {
        let n = packets.len();
        if f.len() + n > POOL_LIMIT {
            spill(f);
        }
        if f.len() + n <= POOL_LIMIT {
            f.reserve(n);
            let len = f.len();
            // SAFETY: `reserve` made room for `n` more boxes past `len`;
            // at most `n` are written there (the iterator's exact length
            // bounds the loop) and the length covers only those written.
            // A packet's `into_buffer` cannot panic, so no written box is
            // left outside the list's length.
            unsafe {
                let base = f.as_mut_ptr().add(len);
                let mut written = 0;
                for p in packets.by_ref().take(n) {
                    base.add(written).write(p.into_buffer());
                    written += 1;
                }
                f.set_len(len + written);
            }
        }
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

    /// The depot is the process's: tests that fill it or take from it run
    /// one at a time, or one would take the buffers another counts on.
    static DEPOT_TESTS: Mutex<()> = Mutex::new(());

    /// One thread allocates, another frees what it receives (a queue
    /// between workers): once the freeing thread's list is full, its
    /// buffers come back to the allocating thread through the depot, so
    /// the allocator is asked for no more than a bounded number.
    #[test]
    fn buffers_freed_on_another_thread_come_back_through_the_depot() {
        let _one = DEPOT_TESTS.lock().unwrap_or_else(|e| e.into_inner());
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
    /// Packets made into a batch that already holds some go after them,
    /// in order, each made once; a batch with less room than asked for
    /// takes what fits.
    #[test]
    fn batches_are_filled_after_their_packets() {
        let mut b = crate::Batch::new();
        let mut made = 0usize;
        let mut make = |b: &mut crate::Batch, n: usize| {
            Packet::alloc_batch(b, n, |p| {
                p.set_frame(&[made as u8; 20]).unwrap();
                made += 1;
            });
        };
        make(&mut b, 5);
        make(&mut b, 40);
        make(&mut b, crate::MAX_BATCH);
        assert_eq!(b.len(), crate::MAX_BATCH);
        for (i, p) in b.iter().enumerate() {
            assert_eq!(p.data(), &[i as u8; 20][..]);
            assert_eq!(p.anno().paint, 0);
        }
        // Full: nothing more is made.
        make(&mut b, 3);
        assert_eq!(b.len(), crate::MAX_BATCH);
        assert_eq!(made, crate::MAX_BATCH);
    }

    /// Batches allocated and freed whole, past the list's bound: every
    /// packet is made with fresh annotations and its own frame, every
    /// buffer goes back to the list (or the depot past the bound), and the
    /// list never holds more than its bound.
    #[test]
    fn whole_batches_come_from_and_return_to_the_list() {
        let _one = DEPOT_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        std::thread::spawn(|| {
            let mut b = crate::Batch::new();
            Packet::alloc_batch(&mut b, 3, |p| {
                p.set_frame(&[1, 2, 3]).unwrap();
                p.anno_mut().paint = 7;
            });
            // The list may have been refilled from the depot: count from
            // what it held before the three came back.
            let before = pool_stats().free;
            b.clear();
            assert_eq!(pool_stats().free, before + 3);
            // More than the bound in all, a full batch at a time.
            for round in 0..(POOL_LIMIT / crate::MAX_BATCH + 3) {
                let mut b = crate::Batch::new();
                Packet::alloc_batch(&mut b, crate::MAX_BATCH + 5, |p| {
                    let tag = (round % 251) as u8;
                    p.set_frame(&[tag; 60]).unwrap();
                });
                assert_eq!(b.len(), crate::MAX_BATCH);
                for p in b.iter() {
                    assert_eq!(p.anno().paint, 0);
                    assert_eq!(p.data(), &[(round % 251) as u8; 60][..]);
                }
                // Kept alive so that the next round's batch cannot reuse them.
                std::mem::forget(b.drain().map(|p| p.into_buffer()).collect::<Vec<_>>());
            }
            let made: Vec<crate::Batch> = (0..(POOL_LIMIT / crate::MAX_BATCH + 2))
                .map(|_| {
                    let mut b = crate::Batch::new();
                    Packet::alloc_batch(&mut b, crate::MAX_BATCH, |_| {});
                    b
                })
                .collect();
            for mut b in made {
                let before = pool_stats().free;
                b.clear();
                let after = pool_stats().free;
                assert!(after <= POOL_LIMIT, "{after} buffers kept");
                assert!(
                    after == before + crate::MAX_BATCH || after <= before,
                    "{before} -> {after}"
                );
            }
            assert!(pool_stats().free > POOL_LIMIT - MAGAZINE - crate::MAX_BATCH);
        })
        .join()
        .unwrap();
    }
}
