//! MDS-BinSort (Hardekopf et al. §5.2): several [`BinSort`]s, one per
//! group of dequeuers (the paper: one per four dequeue threads), so that
//! enqueuers and dequeuers contend on several structures instead of one.
//!
//! * **Spread.** Enqueues go to the replicas in turn ([`Spread::RoundRobin`],
//!   the paper's) or to a pseudo-random one ([`Spread::Random`], which the
//!   paper proposes against convoying: an xorshift generator, seeded, so
//!   runs repeat). When the chosen replica is full the next ones are tried
//!   in order; the item is dropped only when all are full.
//! * **Merge.** A dequeuer takes from its own replicas
//!   ([`MdsBinSort::dequeue_among`]): among them, the one whose first
//!   non-empty bin is earliest (ties to the replica after the one that
//!   served last, so equal replicas take turns). Asked for a global order
//!   (`stride` 1), every replica is a candidate: the output is then in
//!   order of bins across all replicas, late by at most one bin like a
//!   single BinSort; FIFO order within a bin holds per replica only.
//!   With one replica per dequeuer, each keeps the one-bin bound for its
//!   own share of the traffic, not against the other replicas.

use super::{BinSort, BinSortConfig, Counters, Order, OrderError};

/// How an [`MdsBinSort`] spreads enqueues over its replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Spread {
    /// Each replica in turn.
    #[default]
    RoundRobin,
    /// A pseudo-random replica (xorshift64, seeded).
    Random(u64),
}

/// Replicated BinSort; with `M` its replicas count their memory
/// references ([`crate::memref`]).
#[derive(Debug)]
pub struct MdsBinSort<T, const M: bool = false> {
    replicas: Box<[BinSort<T, M>]>,
    spread: Spread,
    rng: u64,
    rr: usize,
    /// The replica the last merged dequeue served.
    last: usize,
    /// Items held in all, and the most ever held.
    held: usize,
    highwater: usize,
}

impl<T, const M: bool> MdsBinSort<T, M> {
    /// `replicas` BinSorts shaped like `cfg`, sharing `cfg.capacity`
    /// (each holds `capacity / replicas`, the first ones one more when it
    /// does not divide).
    pub fn new(
        cfg: BinSortConfig,
        replicas: usize,
        spread: Spread,
    ) -> Result<MdsBinSort<T, M>, OrderError> {
        super::check_capacity(cfg.capacity)?;
        if replicas == 0 || replicas > 1024 || replicas > cfg.capacity {
            return Err(OrderError::Replicas(replicas));
        }
        let each = cfg.capacity / replicas;
        let extra = cfg.capacity % replicas;
        let replicas = (0..replicas)
            .map(|i| {
                BinSort::new(BinSortConfig {
                    capacity: each + usize::from(i < extra),
                    ..cfg
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let rng = match spread {
            Spread::Random(seed) => seed | 1,
            Spread::RoundRobin => 1,
        };
        Ok(MdsBinSort {
            replicas: replicas.into(),
            spread,
            rng,
            rr: 0,
            last: 0,
            held: 0,
            highwater: 0,
        })
    }

    /// Number of replicas.
    pub fn replicas(&self) -> usize {
        self.replicas.len()
    }

    /// Replica `r`.
    pub fn replica(&self, r: usize) -> Option<&BinSort<T, M>> {
        self.replicas.get(r)
    }

    #[inline(always)]
    fn pick(&mut self) -> usize {
        let n = self.replicas.len();
        match self.spread {
            Spread::RoundRobin => {
                let r = self.rr;
                self.rr = if r + 1 == n { 0 } else { r + 1 };
                r
            }
            Spread::Random(_) => {
                let mut x = self.rng;
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                self.rng = x;
                ((u64::from(x as u32) * n as u64) >> 32) as usize
            }
        }
    }

    /// Dequeues from replica `r` only.
    #[inline]
    pub fn dequeue_from(&mut self, r: usize, now: u64) -> Option<T> {
        let x = self.replicas.get_mut(r)?.dequeue(now)?;
        self.held -= 1;
        Some(x)
    }

    /// Dequeues, at time `now`, from the replica with the earliest first
    /// non-empty bin among those `r` with `r % stride == offset` (stride 1:
    /// all of them, the global order). Ties go round robin.
    #[inline]
    pub fn dequeue_among(&mut self, offset: usize, stride: usize, now: u64) -> Option<T> {
        let n = self.replicas.len();
        let stride = stride.max(1);
        if offset >= n {
            return None;
        }
        // Start after the replica that served last, if it is one of ours.
        let mut r = if self.last % stride == offset && self.last + stride < n {
            self.last + stride
        } else {
            offset
        };
        let mine = (n - offset).div_ceil(stride);
        let mut best: Option<(u64, usize)> = None;
        for _ in 0..mine {
            if let Some(b) = self.replicas[r].first_bin(now) {
                if best.is_none_or(|(bb, _)| b < bb) {
                    best = Some((b, r));
                }
            }
            r += stride;
            if r >= n {
                r = offset;
            }
        }
        let (_, r) = best?;
        self.last = r;
        let x = self.replicas[r].dequeue(now)?;
        self.held -= 1;
        Some(x)
    }
}

impl<T, const M: bool> Order<T> for MdsBinSort<T, M> {
    #[inline]
    fn enqueue(&mut self, item: T, deadline: u64, now: u64) -> Result<(), T> {
        let n = self.replicas.len();
        let first = self.pick();
        let mut r = first;
        for _ in 0..n {
            let rep = &mut self.replicas[r];
            if rep.len() < rep.capacity() {
                rep.enqueue(item, deadline, now)?;
                self.held += 1;
                self.highwater = self.highwater.max(self.held);
                return Ok(());
            }
            r = if r + 1 == n { 0 } else { r + 1 };
        }
        // All full: the chosen replica refuses it and counts the drop.
        self.replicas[first].enqueue(item, deadline, now)
    }

    /// The global order: every replica merged.
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
        self.rr = 0;
        self.last = 0;
        self.held = 0;
        self.highwater = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn mds(cap: usize, n: usize, spread: Spread) -> MdsBinSort<u64> {
        let cfg = BinSortConfig {
            capacity: cap,
            bins: 64,
            ..Default::default()
        };
        MdsBinSort::<_>::new(cfg, n, spread).unwrap()
    }

    #[test]
    fn round_robin_spread_and_own_replica() {
        let mut m = mds(8, 2, Spread::RoundRobin);
        // Items 0..4 with decreasing deadlines: 0, 2 to replica 0; 1, 3 to 1.
        for i in 0..4u64 {
            m.enqueue(i, (10 - i) * MS, 0).unwrap();
        }
        assert_eq!(m.replica(0).unwrap().len(), 2);
        // Replica 0 alone, in its own order.
        assert_eq!(m.dequeue_from(0, 0), Some(2));
        assert_eq!(m.dequeue_among(0, 2, 0), Some(0));
        assert_eq!(m.dequeue_among(0, 2, 0), None);
        assert_eq!(m.dequeue_among(1, 2, 0), Some(3));
    }

    #[test]
    fn global_merge_takes_the_earliest_first_bin() {
        let mut m = mds(8, 2, Spread::RoundRobin);
        for (i, d) in [(0u64, 5), (1, 2), (2, 7), (3, 1)] {
            m.enqueue(i, d * MS, 0).unwrap();
        }
        let got: Vec<u64> = std::iter::from_fn(|| m.dequeue(0)).collect();
        assert_eq!(got, vec![3, 1, 0, 2]);
    }

    #[test]
    fn ties_take_turns() {
        let mut m = mds(8, 2, Spread::RoundRobin);
        for i in 0..4u64 {
            m.enqueue(i, MS, 0).unwrap();
        }
        let got: Vec<u64> = std::iter::from_fn(|| m.dequeue(0)).collect();
        assert_eq!(got, vec![1, 0, 3, 2]);
    }

    #[test]
    fn full_replica_overflows_to_the_next_then_drops() {
        let mut m = mds(4, 2, Spread::Random(7));
        for i in 0..4u64 {
            m.enqueue(i, 0, 0).unwrap();
        }
        assert_eq!(m.enqueue(9, 0, 0), Err(9));
        let c = m.counters();
        assert_eq!((c.length, c.drops, c.enqueued), (4, 1, 4));
        assert!(MdsBinSort::<u8>::new(BinSortConfig::default(), 0, Spread::RoundRobin).is_err());
    }

    proptest! {
        /// Merged across every replica, items leave in order of bins: never
        /// more than one bin later than the earliest deadline held.
        #[test]
        fn global_merge_late_by_at_most_one_bin(
            n in 1usize..5,
            seed in any::<u64>(),
            ops in prop::collection::vec((any::<bool>(), 0u64..32), 0..300),
        ) {
            let mut m = mds(64, n, Spread::Random(seed));
            let mut held: std::collections::HashMap<u64, u64> = Default::default();
            for (k, (enq, d)) in ops.into_iter().enumerate() {
                if enq {
                    let d = d * MS / 3;
                    if m.enqueue(k as u64, d, 0).is_ok() {
                        held.insert(k as u64, d);
                    }
                } else {
                    let min = held.values().min().copied();
                    match m.dequeue(0) {
                        Some(x) => {
                            let d = held.remove(&x).unwrap();
                            prop_assert!(d / MS <= min.unwrap() / MS);
                        }
                        None => prop_assert!(min.is_none()),
                    }
                }
                prop_assert_eq!(m.len(), held.len());
            }
        }
    }
}
