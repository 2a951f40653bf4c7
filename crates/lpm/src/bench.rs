//! Measurements behind `bricks bench lpm`: lookups per second (single or
//! batched), memory references per lookup of the 4-bit trie (the cost
//! model of Hardekopf et al. §4.2), route changes per second, alone and
//! while a reader forwards. The traffic is RouteBricks' (§5.1): random
//! destination addresses, which defeat the caches; for IPv6, where random
//! addresses almost all miss every prefix, addresses drawn inside the
//! table's prefixes.

#![deny(unsafe_code)]

use crate::prefix::{NextHop, Prefix4, Prefix6};
use crate::table::{Lpm4, Lpm4Update, Lpm6, Lpm6Update};
use crate::trie4::Trie4;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Lookups per second of `table` over `addrs`, repeated `rounds` times:
/// one [`Lpm4::lookup`] at a time when `batch` is 0 or 1, else
/// [`Lpm4::lookup_batch`] over consecutive runs of `batch` addresses.
pub fn measure4(table: &dyn Lpm4, addrs: &[u32], batch: usize, rounds: usize) -> f64 {
    measure(
        addrs,
        batch,
        rounds,
        |a| table.lookup(a),
        |c, o| table.lookup_batch(c, o),
    )
}

/// Lookups per second of an IPv6 table; see [`measure4`].
pub fn measure6(table: &dyn Lpm6, addrs: &[u128], batch: usize, rounds: usize) -> f64 {
    measure(
        addrs,
        batch,
        rounds,
        |a| table.lookup(a),
        |c, o| table.lookup_batch(c, o),
    )
}

/// Lookups per second through either family's `lookup` / `lookup_batch`.
fn measure<A: Copy>(
    addrs: &[A],
    batch: usize,
    rounds: usize,
    lookup: impl Fn(A) -> Option<NextHop>,
    lookup_batch: impl Fn(&[A], &mut [Option<NextHop>]),
) -> f64 {
    let mut out = vec![None; batch.max(1)];
    let mut sum = 0u64;
    let start = Instant::now();
    for _ in 0..rounds {
        if batch <= 1 {
            for &a in addrs {
                sum = sum.wrapping_add(lookup(a).map_or(0, |h| h.0 as u64));
            }
        } else {
            for c in addrs.chunks(batch) {
                lookup_batch(c, &mut out);
                sum = sum.wrapping_add(out[0].map_or(0, |h| h.0 as u64));
            }
        }
    }
    black_box(sum);
    (addrs.len() * rounds) as f64 / start.elapsed().as_secs_f64()
}

/// Memory references per lookup, the cost model of Hardekopf et al.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefStats {
    /// Fewest references of one lookup.
    pub best: usize,
    /// Mean over the addresses.
    pub average: f64,
    /// Most references of one lookup.
    pub worst: usize,
}

/// Memory references per lookup of `trie` over `addrs` (one per level
/// visited; the paper: best 1, average 3, worst 8).
pub fn memory_references(trie: &Trie4, addrs: &[u32]) -> RefStats {
    let (mut best, mut worst, mut total) = (usize::MAX, 0, 0usize);
    for &a in addrs {
        let (_, r) = trie.lookup_counting(a);
        best = best.min(r);
        worst = worst.max(r);
        total += r;
    }
    RefStats {
        best: if addrs.is_empty() { 0 } else { best },
        average: total as f64 / addrs.len().max(1) as f64,
        worst,
    }
}

/// A route change: announce (`Some`) or withdraw (`None`).
pub type Update4 = (Prefix4, Option<NextHop>);
/// An IPv6 route change.
pub type Update6 = (Prefix6, Option<NextHop>);

/// Route changes per second of applying `updates` in order.
pub fn measure_updates4(table: &dyn Lpm4Update, updates: &[Update4]) -> f64 {
    apply(updates, |p, nh| table.insert(p, nh), |p| table.remove(p))
}

/// Route changes per second of an IPv6 table; see [`measure_updates4`].
pub fn measure_updates6(table: &dyn Lpm6Update, updates: &[Update6]) -> f64 {
    apply(updates, |p, nh| table.insert(p, nh), |p| table.remove(p))
}

/// Route changes per second while another thread forwards: one reader
/// looks up `addrs` in batches of `batch` for as long as the writer
/// applies `updates`. Returns (updates/s, the reader's lookups/s).
pub fn measure_updates_while_forwarding4<T: Lpm4Update + ?Sized>(
    table: &T,
    updates: &[Update4],
    addrs: &[u32],
    batch: usize,
) -> (f64, f64) {
    while_forwarding(
        addrs,
        batch,
        |c, o| table.lookup_batch(c, o),
        || apply(updates, |p, nh| table.insert(p, nh), |p| table.remove(p)),
    )
}

/// IPv6 version of [`measure_updates_while_forwarding4`].
pub fn measure_updates_while_forwarding6<T: Lpm6Update + ?Sized>(
    table: &T,
    updates: &[Update6],
    addrs: &[u128],
    batch: usize,
) -> (f64, f64) {
    while_forwarding(
        addrs,
        batch,
        |c, o| table.lookup_batch(c, o),
        || apply(updates, |p, nh| table.insert(p, nh), |p| table.remove(p)),
    )
}

/// Applies `updates` in order; returns changes per second.
fn apply<P: Copy, E>(
    updates: &[(P, Option<NextHop>)],
    insert: impl Fn(P, NextHop) -> Result<Option<NextHop>, E>,
    remove: impl Fn(P) -> Result<Option<NextHop>, E>,
) -> f64 {
    let start = Instant::now();
    for &(p, nh) in updates {
        let r = match nh {
            Some(nh) => insert(p, nh),
            None => remove(p),
        };
        black_box(r.ok());
    }
    updates.len() as f64 / start.elapsed().as_secs_f64()
}

/// Runs `write` (returning its rate) while a reader thread looks up
/// `addrs` in batches; returns (the writer's rate, the reader's
/// lookups/s).
fn while_forwarding<A: Sync>(
    addrs: &[A],
    batch: usize,
    lookup_batch: impl Fn(&[A], &mut [Option<NextHop>]) + Sync,
    write: impl FnOnce() -> f64,
) -> (f64, f64) {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut out = vec![None; batch.max(1)];
            let mut n = 0usize;
            let start = Instant::now();
            while !done.load(Ordering::Relaxed) {
                for c in addrs.chunks(batch.max(1)) {
                    lookup_batch(c, &mut out);
                }
                n += addrs.len();
            }
            black_box(&out);
            n as f64 / start.elapsed().as_secs_f64()
        });
        let rate = write();
        done.store(true, Ordering::Relaxed);
        (rate, reader.join().expect("reader"))
    })
}

/// SplitMix64: a small, seeded generator for reproducible traffic.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `n` uniformly random IPv4 addresses (RouteBricks' traffic).
pub fn random_addresses4(n: usize, seed: u64) -> Vec<u32> {
    let mut r = SplitMix64(seed);
    (0..n).map(|_| r.next_u64() as u32).collect()
}

/// `n` addresses, each random inside a random route of `routes`.
pub fn addresses_in4(routes: &[(Prefix4, NextHop)], n: usize, seed: u64) -> Vec<u32> {
    let mut r = SplitMix64(seed);
    if routes.is_empty() {
        return random_addresses4(n, seed);
    }
    (0..n)
        .map(|_| {
            let p = routes[(r.next_u64() % routes.len() as u64) as usize].0;
            p.addr | (r.next_u64() as u32 & !Prefix4::mask(p.len))
        })
        .collect()
}

/// `n` addresses, each random inside a random route of `routes`.
pub fn addresses_in6(routes: &[(Prefix6, NextHop)], n: usize, seed: u64) -> Vec<u128> {
    let mut r = SplitMix64(seed);
    if routes.is_empty() {
        return (0..n)
            .map(|_| (r.next_u64() as u128) << 64 | r.next_u64() as u128)
            .collect();
    }
    (0..n)
        .map(|_| {
            let p = routes[(r.next_u64() % routes.len() as u64) as usize].0;
            let host = (r.next_u64() as u128) << 64 | r.next_u64() as u128;
            p.addr | (host & !Prefix6::mask(p.len))
        })
        .collect()
}

/// A stream of `n` route changes on a table holding `routes`, the churn
/// BGP brings: a random route is withdrawn, and later announced again
/// with another next hop; at most a few hundred routes are out at a time,
/// so the table keeps its size.
pub fn churn4(routes: &[(Prefix4, NextHop)], n: usize, seed: u64) -> Vec<Update4> {
    churn(routes, n, seed)
}

/// IPv6 churn; see [`churn4`].
pub fn churn6(routes: &[(Prefix6, NextHop)], n: usize, seed: u64) -> Vec<Update6> {
    churn(routes, n, seed)
}

fn churn<P: Copy>(routes: &[(P, NextHop)], n: usize, seed: u64) -> Vec<(P, Option<NextHop>)> {
    let mut r = SplitMix64(seed);
    let mut out = Vec::with_capacity(n);
    let mut pending: std::collections::VecDeque<(P, NextHop)> = Default::default();
    if routes.is_empty() {
        return out;
    }
    while out.len() < n {
        if pending.len() >= 256 || (!pending.is_empty() && r.next_u64().is_multiple_of(2)) {
            let (p, nh) = pending.pop_front().expect("not empty");
            out.push((p, Some(NextHop((nh.0 + 1) % 16))));
        } else {
            let (p, nh) = routes[(r.next_u64() % routes.len() as u64) as usize];
            out.push((p, None));
            pending.push_back((p, nh));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir24_8::Dir24_8;
    use crate::table::Lpm4Update;

    #[test]
    fn measurements_run() {
        let routes: Vec<_> = (0..100u32)
            .map(|i| (Prefix4::new(i << 20, 12 + (i % 20) as u8), NextHop(i % 4)))
            .collect();
        let trie = Trie4::build(&routes, Trie4::DEFAULT_MEMORY_BOUND).unwrap();
        let addrs = addresses_in4(&routes, 1000, 1);
        assert!(measure4(&trie, &addrs, 1, 1) > 0.0);
        assert!(measure4(&trie, &addrs, 32, 1) > 0.0);
        let refs = memory_references(&trie, &addrs);
        assert!(refs.best >= 1 && refs.worst <= 8 && refs.average >= refs.best as f64);
        let dir = Dir24_8::new();
        for &(p, nh) in &routes {
            dir.insert(p, nh).unwrap();
        }
        let updates = churn4(&routes, 500, 2);
        assert_eq!(updates.len(), 500);
        // The reader's rate depends on scheduling (it may not finish a
        // round before 500 updates are done); only the writer's is checked.
        let (u, _) = measure_updates_while_forwarding4(&dir, &updates, &addrs, 32);
        assert!(u > 0.0);
        assert!(measure_updates4(&dir, &updates) > 0.0);
    }
}
