//! Exact sort (Hardekopf et al. §5.1): a binary heap on (deadline,
//! arrival sequence). The sequence number makes the order total, so items
//! with equal deadlines leave in arrival order and the output is exactly a
//! stable sort of the input by deadline. Enqueue and dequeue cost O(log n)
//! comparisons and memory references: the paper's reason to rule it out
//! at line rate, measured here beside `BinSort` (benches/order.rs).

use super::{check_capacity, memref, Counters, Order, OrderError};

/// One held item: its key packed as deadline (high 64 bits) and arrival
/// sequence (low 64), so one compare orders two entries.
#[derive(Debug)]
struct Entry<T> {
    key: u128,
    item: T,
}

/// A bounded binary min-heap of items by (deadline, arrival); with `M`
/// it counts its memory references ([`crate::memref`]).
#[derive(Debug)]
pub struct DeadlineHeap<T, const M: bool = false> {
    heap: Vec<Entry<T>>,
    capacity: usize,
    seq: u64,
    c: Counters,
}

impl<T, const M: bool> DeadlineHeap<T, M> {
    /// A heap holding at most `capacity` items; its memory is reserved now.
    pub fn new(capacity: usize) -> Result<DeadlineHeap<T, M>, OrderError> {
        check_capacity(capacity)?;
        Ok(DeadlineHeap {
            heap: Vec::with_capacity(capacity),
            capacity,
            seq: 0,
            c: Counters::default(),
        })
    }

    /// The earliest deadline held.
    pub fn peek_deadline(&self) -> Option<u64> {
        self.heap.first().map(|e| (e.key >> 64) as u64)
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            // The parent's key.
            memref!(M, self.c, enqueue, 1, 4);
            if self.heap[parent].key <= self.heap[i].key {
                break;
            }
            self.heap.swap(parent, i);
            // Two entries rewritten (key and handle).
            memref!(M, self.c, enqueue, 2, 12);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let mut m = l;
            memref!(M, self.c, dequeue, 1, 4);
            if r < n {
                memref!(M, self.c, dequeue, 1, 4);
                if self.heap[r].key < self.heap[l].key {
                    m = r;
                }
            }
            if self.heap[i].key <= self.heap[m].key {
                break;
            }
            self.heap.swap(i, m);
            memref!(M, self.c, dequeue, 2, 12);
            i = m;
        }
    }
}

impl<T, const M: bool> Order<T> for DeadlineHeap<T, M> {
    #[inline]
    fn enqueue(&mut self, item: T, deadline: u64, _now: u64) -> Result<(), T> {
        // Length and sequence.
        memref!(M, self.c, enqueue, 2, 3);
        if self.heap.len() == self.capacity {
            self.c.drops += 1;
            return Err(item);
        }
        let key = (u128::from(deadline) << 64) | u128::from(self.seq);
        self.seq = self.seq.wrapping_add(1);
        self.heap.push(Entry { key, item });
        // The new entry.
        memref!(M, self.c, enqueue, 1, 6);
        let i = self.heap.len() - 1;
        self.sift_up(i);
        self.c.accepted(self.heap.len());
        Ok(())
    }

    #[inline]
    fn dequeue(&mut self, now: u64) -> Option<T> {
        if self.heap.is_empty() {
            // Idle polling, not counted.
            return None;
        }
        // Length.
        memref!(M, self.c, dequeue, 1, 1);
        let last = self.heap.len() - 1;
        self.heap.swap(0, last);
        let e = self.heap.pop()?;
        // The root (read, then overwritten) and the last entry.
        memref!(M, self.c, dequeue, 2, 12);
        self.sift_down(0);
        self.c.released((e.key >> 64) as u64, now);
        Some(e.item)
    }

    fn len(&self) -> usize {
        self.heap.len()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn counters(&self) -> Counters {
        Counters {
            length: self.heap.len() as u64,
            ..self.c
        }
    }

    fn clear(&mut self, sink: &mut dyn FnMut(T)) {
        for e in self.heap.drain(..) {
            sink(e.item);
        }
        self.seq = 0;
        self.c = Counters::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_deadlines_keep_arrival_order() {
        let mut h = DeadlineHeap::<_>::new(8).unwrap();
        for (i, d) in [5u64, 3, 5, 3, 1].into_iter().enumerate() {
            h.enqueue(i, d, 0).unwrap();
        }
        assert_eq!(h.peek_deadline(), Some(1));
        let got: Vec<usize> = std::iter::from_fn(|| h.dequeue(0)).collect();
        assert_eq!(got, vec![4, 1, 3, 0, 2]);
    }

    #[test]
    fn full_heap_drops_and_counts() {
        let mut h = DeadlineHeap::<_>::new(2).unwrap();
        h.enqueue(0u8, 9, 0).unwrap();
        h.enqueue(1u8, 8, 0).unwrap();
        assert_eq!(h.enqueue(2u8, 1, 0), Err(2));
        let c = h.counters();
        assert_eq!((c.length, c.drops, c.enqueued), (2, 1, 2));
        assert_eq!(h.dequeue(10), Some(1));
        assert_eq!(h.counters().late, 1);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Enq(u64),
        Deq,
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        prop::collection::vec(
            prop_oneof![3 => (0u64..50).prop_map(Op::Enq), 2 => Just(Op::Deq)],
            0..400,
        )
    }

    proptest! {
        /// Interleaved enqueues and dequeues: each dequeue gives the first
        /// item of a stable sort of what is held by deadline.
        #[test]
        fn heap_is_an_exact_stable_sort(ops in ops(), cap in 1usize..64) {
            let mut h = DeadlineHeap::<_>::new(cap).unwrap();
            let mut model: std::collections::BTreeSet<(u64, u64)> = Default::default();
            let mut seq = 0u64;
            for op in ops {
                match op {
                    Op::Enq(d) => {
                        let r = h.enqueue(seq, d, 0);
                        prop_assert_eq!(r.is_ok(), model.len() < cap);
                        if r.is_ok() {
                            model.insert((d, seq));
                        }
                        seq += 1;
                    }
                    Op::Deq => {
                        let want = model.pop_first().map(|(_, s)| s);
                        prop_assert_eq!(h.dequeue(0), want);
                    }
                }
                prop_assert_eq!(h.len(), model.len());
            }
            let mut rest = Vec::new();
            h.clear(&mut |x| rest.push(x));
            prop_assert_eq!(rest.len(), model.len());
        }

        /// Everything in, then everything out: the output is the input
        /// sorted (stably) by deadline.
        #[test]
        fn heap_sorts_like_sort(ds in prop::collection::vec(0u64..1_000, 0..300)) {
            let mut h = DeadlineHeap::<_>::new(300).unwrap();
            for (i, &d) in ds.iter().enumerate() {
                h.enqueue(i, d, 0).unwrap();
            }
            let got: Vec<usize> = std::iter::from_fn(|| h.dequeue(0)).collect();
            let mut want: Vec<usize> = (0..ds.len()).collect();
            want.sort_by_key(|&i| ds[i]);
            prop_assert_eq!(got, want);
        }
    }
}
