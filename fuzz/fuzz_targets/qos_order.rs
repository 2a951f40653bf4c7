//! Any sequence of enqueues, dequeues and clock steps through every packet
//! ordering structure of bricks-qos, each checked against a model after
//! every step: the FIFO against a VecDeque, the heap against an ordered
//! set of (deadline, arrival), BinSort against its specification (the
//! window's base follows the clock but never passes a held bin; passed
//! deadlines go to the first bin, those beyond the window to the last bin
//! or are refused), the destination-hashed FIFO for per-destination
//! order, MDS-BinSort for conservation and bounds. Nothing may panic; the
//! counters must agree with the models.
#![no_main]

use bricks_qos::order::{
    Beyond, BinSort, BinSortConfig, DeadlineHeap, Fifo, HashFifo, MdsBinSort, Order, Spread,
};
use libfuzzer_sys::fuzz_target;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// BinSort as its documentation specifies it.
struct BinModel {
    cap: usize,
    w: u64,
    m: u64,
    reject: bool,
    base: u64,
    held: BTreeMap<(u64, u64), u64>,
    late_bins: u64,
    beyond: u64,
}

impl BinModel {
    fn advance(&mut self, now: u64) {
        let now_bin = now / self.w;
        let to = match self.held.keys().next() {
            None => now_bin,
            Some(&(b, _)) => now_bin.min(b),
        };
        self.base = self.base.max(to);
    }

    fn enqueue(&mut self, seq: u64, d: u64, now: u64) -> bool {
        if self.held.len() == self.cap {
            return false;
        }
        self.advance(now);
        let mut bin = d / self.w;
        if bin < self.base {
            bin = self.base;
            self.late_bins += 1;
        } else if bin - self.base >= self.m {
            self.beyond += 1;
            if self.reject {
                return false;
            }
            bin = self.base + self.m - 1;
        }
        self.held.insert((bin, seq), d);
        true
    }

    fn dequeue(&mut self, now: u64) -> Option<u64> {
        self.advance(now);
        self.held.pop_first().map(|((_, s), _)| s)
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let cap = 1 + data[0] as usize % 32;
    let bins = 1usize << (data[1] % 15);
    let reject = data[2] & 1 == 1;
    let replicas = 1 + (data[2] >> 1) as usize % 4;
    let w = 1 + u64::from(data[3]) * 7;
    let cfg = BinSortConfig {
        capacity: cap,
        bin_ns: w,
        bins,
        beyond: if reject {
            Beyond::Reject
        } else {
            Beyond::Clamp
        },
    };
    let mut fifo = Fifo::<_>::new(cap).unwrap();
    let mut heap = DeadlineHeap::<_>::new(cap).unwrap();
    let mut bs = BinSort::<_>::new(cfg).unwrap();
    let mut hf = HashFifo::<_>::new(cap.max(replicas), replicas).unwrap();
    let mut mds = MdsBinSort::<_>::new(
        BinSortConfig {
            capacity: cap.max(replicas),
            ..cfg
        },
        replicas,
        Spread::Random(u64::from(data[0]) + 1),
    )
    .unwrap();

    let mut fifo_model: VecDeque<u64> = VecDeque::new();
    let mut heap_model: BTreeSet<(u64, u64)> = BTreeSet::new();
    let mut bin_model = BinModel {
        cap,
        w,
        m: bins as u64,
        reject,
        base: 0,
        held: BTreeMap::new(),
        late_bins: 0,
        beyond: 0,
    };
    let mut hf_sent: HashMap<u32, VecDeque<u64>> = HashMap::new();
    let mut hf_len = 0usize;
    let mut mds_held: HashMap<u64, u64> = HashMap::new();

    let mut now = 0u64;
    let span = 2 * bins as i64 * w as i64;
    for (k, c) in data[4..].chunks_exact(3).enumerate() {
        let seq = k as u64;
        let v = i16::from_le_bytes([c[1], c[2]]) as i64;
        match c[0] % 5 {
            0 | 1 => {
                let d = (now as i64 + v % span).max(0) as u64;
                let dst = u32::from(c[0] >> 3).wrapping_mul(0x9e37_79b9);
                // FIFO.
                let ok = fifo.enqueue(seq, d, now).is_ok();
                assert_eq!(ok, fifo_model.len() < cap);
                if ok {
                    fifo_model.push_back(seq);
                }
                // Heap.
                let ok = heap.enqueue(seq, d, now).is_ok();
                assert_eq!(ok, heap_model.len() < cap);
                if ok {
                    heap_model.insert((d, seq));
                }
                // BinSort.
                let ok = bs.enqueue(seq, d, now).is_ok();
                assert_eq!(ok, bin_model.enqueue(seq, d, now));
                assert_eq!(bs.base_bin(), bin_model.base);
                // Hashed FIFO.
                if hf.enqueue_hashed(dst, seq, d, now).is_ok() {
                    hf_sent.entry(dst).or_default().push_back(seq);
                    hf_len += 1;
                }
                // MDS.
                if mds.enqueue(seq, d, now).is_ok() {
                    mds_held.insert(seq, d);
                }
            }
            2 => {
                assert_eq!(fifo.dequeue(now), fifo_model.pop_front());
                assert_eq!(heap.dequeue(now), heap_model.pop_first().map(|(_, s)| s));
                assert_eq!(bs.dequeue(now), bin_model.dequeue(now));
                let out = usize::from(c[1]) % 2;
                if let Some(x) = hf.dequeue_among(out % replicas.min(2), replicas.min(2), now) {
                    // It must be the oldest of its destination.
                    let q = hf_sent
                        .values_mut()
                        .find(|q| q.front() == Some(&x))
                        .expect("a destination's FIFO out of order");
                    q.pop_front();
                    hf_len -= 1;
                }
                let got = if c[2] & 1 == 0 {
                    mds.dequeue(now)
                } else {
                    mds.dequeue_from(usize::from(c[1]) % replicas, now)
                };
                if let Some(x) = got {
                    assert!(mds_held.remove(&x).is_some(), "MDS gave an item twice");
                }
            }
            3 => now = now.saturating_add(u64::from(c[1]) * w / 2),
            _ => now = now.saturating_add((v.unsigned_abs()) * w),
        }
        assert_eq!(fifo.len(), fifo_model.len());
        assert_eq!(heap.len(), heap_model.len());
        assert_eq!(bs.len(), bin_model.held.len());
        assert_eq!(hf.len(), hf_len);
        assert_eq!(mds.len(), mds_held.len());
        assert!(mds.len() <= mds.capacity() && hf.len() <= hf.capacity());
    }
    let c = bs.counters();
    assert_eq!(
        (c.late_bins, c.beyond),
        (bin_model.late_bins, bin_model.beyond)
    );
    let mut rest = 0;
    mds.clear(&mut |_| rest += 1);
    assert_eq!(rest, mds_held.len());
});
