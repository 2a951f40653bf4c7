//! A FIFO replicated by destination (Hardekopf et al. §5.2): replicas
//! spread the contention of one circular array over several, and choosing
//! the replica by a hash of the destination address keeps every
//! destination's packets in one FIFO, so they are never reordered (TCP
//! relies on it). Packets to different destinations may leave in another
//! order than they came.

use super::{check_capacity, Counters, Fifo, Order, OrderError};

/// FIFOs replicated by a hash of the destination; with `M` its replicas
/// count their memory references ([`crate::memref`]).
#[derive(Debug)]
pub struct HashFifo<T, const M: bool = false> {
    replicas: Box<[Fifo<T, M>]>,
    /// Where [`HashFifo::dequeue_among`] resumes its round robin.
    next: usize,
    /// Items held in all, and the most ever held.
    held: usize,
    highwater: usize,
}

impl<T, const M: bool> HashFifo<T, M> {
    /// `replicas` FIFOs sharing `capacity` (each holds `capacity /
    /// replicas`, the first ones one more when it does not divide).
    pub fn new(capacity: usize, replicas: usize) -> Result<HashFifo<T, M>, OrderError> {
        check_capacity(capacity)?;
        if replicas == 0 || replicas > 1024 || replicas > capacity {
            return Err(OrderError::Replicas(replicas));
        }
        let each = capacity / replicas;
        let extra = capacity % replicas;
        let replicas = (0..replicas)
            .map(|i| Fifo::new(each + usize::from(i < extra)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(HashFifo {
            replicas: replicas.into(),
            next: 0,
            held: 0,
            highwater: 0,
        })
    }

    /// Number of replicas.
    pub fn replicas(&self) -> usize {
        self.replicas.len()
    }

    /// The replica of a destination whose hash is `hash` (any 32-bit hash:
    /// its high bits choose, by multiplication rather than division).
    #[inline(always)]
    pub fn replica_of(&self, hash: u32) -> usize {
        ((u64::from(hash) * self.replicas.len() as u64) >> 32) as usize
    }

    /// Enqueues `item` for the destination hashed to `hash`; refused when
    /// that destination's replica is full.
    #[inline]
    pub fn enqueue_hashed(&mut self, hash: u32, item: T, deadline: u64, now: u64) -> Result<(), T> {
        let r = self.replica_of(hash);
        self.replicas[r].enqueue(item, deadline, now)?;
        self.held += 1;
        self.highwater = self.highwater.max(self.held);
        Ok(())
    }

    /// Dequeues from replica `r` only.
    #[inline]
    pub fn dequeue_from(&mut self, r: usize, now: u64) -> Option<T> {
        let x = self.replicas.get_mut(r)?.dequeue(now)?;
        self.held -= 1;
        Some(x)
    }

    /// Dequeues from the replicas `r` with `r % stride == offset`, round
    /// robin: each call starts after the replica the last one served, so
    /// no destination starves. With `stride` 1 and `offset` 0, every
    /// replica.
    #[inline]
    pub fn dequeue_among(&mut self, offset: usize, stride: usize, now: u64) -> Option<T> {
        let n = self.replicas.len();
        let stride = stride.max(1);
        let mine = n.saturating_sub(offset).div_ceil(stride);
        for _ in 0..mine {
            self.next = if self.next + stride < n && self.next % stride == offset {
                self.next + stride
            } else {
                offset
            };
            if let Some(x) = self.replicas[self.next].dequeue(now) {
                self.held -= 1;
                return Some(x);
            }
        }
        None
    }

    /// Counters of replica `r`.
    pub fn replica_counters(&self, r: usize) -> Option<Counters> {
        self.replicas.get(r).map(|f| f.counters())
    }
}

impl<T, const M: bool> Order<T> for HashFifo<T, M> {
    /// Without a destination every item goes to replica 0: use
    /// [`HashFifo::enqueue_hashed`].
    fn enqueue(&mut self, item: T, deadline: u64, now: u64) -> Result<(), T> {
        self.enqueue_hashed(0, item, deadline, now)
    }

    fn dequeue(&mut self, now: u64) -> Option<T> {
        self.dequeue_among(0, 1, now)
    }

    fn len(&self) -> usize {
        self.held
    }

    fn capacity(&self) -> usize {
        self.replicas.iter().map(|f| f.capacity()).sum()
    }

    fn counters(&self) -> Counters {
        let mut c = Counters::default();
        for f in self.replicas.iter() {
            c.add(&f.counters());
        }
        c.highwater = self.highwater as u64;
        c
    }

    fn clear(&mut self, sink: &mut dyn FnMut(T)) {
        for f in self.replicas.iter_mut() {
            f.clear(sink);
        }
        self.next = 0;
        self.held = 0;
        self.highwater = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shapes() {
        let h = HashFifo::<u8>::new(10, 3).unwrap();
        assert_eq!(h.capacity(), 10);
        assert_eq!(h.replica_of(0), 0);
        assert_eq!(h.replica_of(u32::MAX), 2);
        assert!(HashFifo::<u8>::new(2, 3).is_err());
        assert!(HashFifo::<u8>::new(8, 0).is_err());
    }

    #[test]
    fn dequeue_among_serves_only_its_replicas_round_robin() {
        let mut h = HashFifo::<_>::new(40, 4).unwrap();
        // One item per replica, twice.
        for round in 0..2u32 {
            for r in 0..4u32 {
                let hash = r << 30;
                h.enqueue_hashed(hash, round * 10 + r, 0, 0).unwrap();
            }
        }
        // Output 1 of 2 owns replicas 1 and 3.
        let got: Vec<u32> = std::iter::from_fn(|| h.dequeue_among(1, 2, 0)).collect();
        assert_eq!(got, vec![1, 3, 11, 13]);
        let got: Vec<u32> = std::iter::from_fn(|| h.dequeue_among(0, 2, 0)).collect();
        assert_eq!(got, vec![0, 2, 10, 12]);
        assert!(h.is_empty());
    }

    #[test]
    fn full_replica_drops_even_with_room_elsewhere() {
        let mut h = HashFifo::<_>::new(4, 2).unwrap();
        h.enqueue_hashed(1, 'a', 0, 0).unwrap();
        h.enqueue_hashed(1, 'b', 0, 0).unwrap();
        assert_eq!(h.enqueue_hashed(1, 'c', 0, 0), Err('c'));
        h.enqueue_hashed(u32::MAX, 'd', 0, 0).unwrap();
        assert_eq!(h.counters().drops, 1);
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn highwater_of_the_whole() {
        let mut h = HashFifo::<_>::new(8, 2).unwrap();
        h.enqueue_hashed(0, 1, 0, 0).unwrap();
        h.enqueue_hashed(0, 2, 0, 0).unwrap();
        assert_eq!(h.dequeue_from(0, 0), Some(1));
        assert_eq!(h.dequeue_from(0, 0), Some(2));
        h.enqueue_hashed(u32::MAX, 3, 0, 0).unwrap();
        h.enqueue_hashed(u32::MAX, 4, 0, 0).unwrap();
        let c = h.counters();
        assert_eq!((c.length, c.highwater), (2, 2));
    }

    proptest! {
        /// Whatever the interleaving, each destination's items leave in
        /// the order they came, and none is lost or invented.
        #[test]
        fn per_destination_order_kept(
            replicas in 1usize..6,
            outputs in 1usize..4,
            ops in prop::collection::vec((any::<bool>(), 0u32..8, 0usize..4), 0..400),
        ) {
            let mut h = HashFifo::<_>::new(64, replicas).unwrap();
            let mut sent: Vec<Vec<u32>> = vec![Vec::new(); 8];
            let mut got: Vec<Vec<u32>> = vec![Vec::new(); 8];
            let mut seq = 0u32;
            for (enq, dst, out) in ops {
                if enq {
                    let hash = dst.wrapping_mul(0x9e37_79b9);
                    if h.enqueue_hashed(hash, (dst << 16) | seq, 0, 0).is_ok() {
                        sent[dst as usize].push(seq);
                    }
                    seq += 1;
                } else if let Some(x) = h.dequeue_among(out % outputs, outputs, 0) {
                    got[(x >> 16) as usize].push(x & 0xffff);
                }
            }
            h.clear(&mut |x| got[(x >> 16) as usize].push(x & 0xffff));
            prop_assert_eq!(got, sent);
        }
    }
}
