//! FIFO as a circular array (Hardekopf et al. §5.2): the slots are
//! reserved at construction, enqueue writes at the tail, dequeue reads at
//! the head; O(1) and a handful of memory references per packet. Unlike
//! the IXP1200's, the array is exactly CAPACITY long: indices wrap by a
//! compare, not a power-of-two mask (the paper's array was 164 % too big
//! for the mask's sake).

use super::{check_capacity, memref, Counters, Order, OrderError};

/// A bounded FIFO in a circular array; with `M` it counts its memory
/// references ([`crate::memref`]).
#[derive(Debug)]
pub struct Fifo<T, const M: bool = false> {
    slots: Box<[Option<(T, u64)>]>,
    head: usize,
    len: usize,
    c: Counters,
}

impl<T, const M: bool> Fifo<T, M> {
    /// A FIFO holding at most `capacity` items.
    pub fn new(capacity: usize) -> Result<Fifo<T, M>, OrderError> {
        check_capacity(capacity)?;
        Ok(Fifo {
            slots: (0..capacity).map(|_| None).collect(),
            head: 0,
            len: 0,
            c: Counters::default(),
        })
    }

    /// The deadline of the item at the head, if any.
    pub fn peek_deadline(&self) -> Option<u64> {
        self.slots[self.head].as_ref().map(|s| s.1)
    }
}

impl<T, const M: bool> Order<T> for Fifo<T, M> {
    #[inline]
    fn enqueue(&mut self, item: T, deadline: u64, _now: u64) -> Result<(), T> {
        // Head and length.
        memref!(M, self.c, enqueue, 2, 2);
        let cap = self.slots.len();
        if self.len == cap {
            self.c.drops += 1;
            return Err(item);
        }
        let mut tail = self.head + self.len;
        if tail >= cap {
            tail -= cap;
        }
        self.slots[tail] = Some((item, deadline));
        self.len += 1;
        // The slot (handle and deadline).
        memref!(M, self.c, enqueue, 1, 4);
        self.c.accepted(self.len);
        Ok(())
    }

    #[inline]
    fn dequeue(&mut self, now: u64) -> Option<T> {
        if self.len == 0 {
            // Idle polling, not counted.
            return None;
        }
        // Head and length.
        memref!(M, self.c, dequeue, 2, 2);
        let (item, deadline) = self.slots[self.head].take()?;
        self.head += 1;
        if self.head == self.slots.len() {
            self.head = 0;
        }
        self.len -= 1;
        // The slot.
        memref!(M, self.c, dequeue, 1, 4);
        self.c.released(deadline, now);
        Some(item)
    }

    fn len(&self) -> usize {
        self.len
    }

    fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn counters(&self) -> Counters {
        Counters {
            length: self.len as u64,
            ..self.c
        }
    }

    fn clear(&mut self, sink: &mut dyn FnMut(T)) {
        while let Some(x) = self.dequeue(0) {
            sink(x);
        }
        self.head = 0;
        self.c = Counters::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_wrap_and_tail_drop() {
        let mut f = Fifo::<_>::new(3).unwrap();
        for round in 0..5u32 {
            for i in 0..4u32 {
                let r = f.enqueue(round * 10 + i, 0, 0);
                assert_eq!(r.is_err(), i == 3, "round {round} item {i}");
            }
            assert_eq!(f.len(), 3);
            let got: Vec<u32> = std::iter::from_fn(|| f.dequeue(0)).collect();
            assert_eq!(got, vec![round * 10, round * 10 + 1, round * 10 + 2]);
        }
        let c = f.counters();
        assert_eq!(
            (c.enqueued, c.dequeued, c.drops, c.highwater),
            (15, 15, 5, 3)
        );
    }

    #[test]
    fn late_counted_against_the_clock() {
        let mut f = Fifo::<_>::new(4).unwrap();
        f.enqueue(1u8, 100, 0).unwrap();
        f.enqueue(2u8, 300, 0).unwrap();
        assert_eq!(f.peek_deadline(), Some(100));
        assert_eq!(f.dequeue(200), Some(1));
        assert_eq!(f.dequeue(200), Some(2));
        assert_eq!(f.counters().late, 1);
        assert_eq!(f.dequeue(200), None);
    }

    #[test]
    fn capacity_bounds() {
        assert_eq!(Fifo::<u8>::new(0).unwrap_err(), OrderError::Capacity(0));
        assert!(Fifo::<u8>::new(super::super::MAX_CAPACITY + 1).is_err());
    }
}
