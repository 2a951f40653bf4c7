//! A linear table for a few IPv4 routes: the prefixes longest first in one
//! array of 64-bit words, the first that contains the address wins. This
//! is Click's `LinearIPLookup` and what a virtual router's table of a
//! handful of routes wants: five routes are one cache line and some
//! thirty instructions, where a trie walks six levels of nodes of their
//! own. A thousand routers' tables then take a thousand lines, not a
//! thousand tries.
//!
//! # Bounds
//!
//! A lookup reads every route until the first match, so the table holds
//! at most [`Linear4::MAX_ROUTES`] (and fewer when its memory bound says
//! so): the cost of a packet stays bounded whatever is announced into it.
//! Larger tables belong in a trie or DIR-24-8.
//!
//! # Updates while forwarding
//!
//! Two copies of the array; readers use the one the version word names.
//! The writer fills the other copy, then publishes it by bumping the
//! version (Release) and fencing (Release) before it ever writes a copy
//! again. A reader checks, after its scan, that the version has not moved
//! (Acquire fence, then a load) and scans again if it has: only a lookup
//! that overlapped a publication retries, and no reader waits for a
//! writer. This is the reuse sequence of [`crate::table`] with a whole
//! copy as the reused block.

#![deny(unsafe_code)]

use crate::prefix::{NextHop, Prefix4};
use crate::table::{check_next_hop, Lpm4, Lpm4Update, LpmError};
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Words a copy holds: its route count, then the routes.
const WORDS: usize = Linear4::MAX_ROUTES + 1;
/// Bytes a route takes: a word in each copy.
const ROUTE_BYTES: usize = 16;
/// Where a word keeps the next hop (22 bits, [`NextHop::MAX`]), above
/// the host bits' count.
const HOP_SHIFT: u32 = 6;
const HOST_BITS: u64 = 0x3f;

/// Publications of every linear table: see [`Linear4::publications`].
static PUBLICATIONS: AtomicU64 = AtomicU64::new(0);

/// A route as one word: the address in the high half, the next hop, and
/// in the low six bits the count of host bits (32 less the length). A
/// router's few routes, its copy's count and the version are then one
/// cache line: with a thousand routers, what a packet misses on.
#[inline(always)]
fn word(p: Prefix4, nh: NextHop) -> u64 {
    u64::from(p.addr) << 32 | u64::from(nh.0) << HOP_SHIFT | u64::from(32 - p.len.min(32))
}

/// Whether the route `e` contains the address `a` (in the high half, the
/// low half zero): their XOR's high half is zero above the host bits,
/// whose count the XOR keeps in its low bits (`a`'s are zero). Shifting
/// by the count and then by 32 leaves those bits alone, for /0 too (two
/// shifts, where one of 64 would be none): a load, three ALU
/// instructions and a branch a route, where making a netmask from the
/// length took two more.
#[inline(always)]
fn contains(e: u64, a: u64) -> bool {
    let x = a ^ e;
    (x >> (x & HOST_BITS)) >> 32 == 0
}

/// The linear table; see the module doc. In C's layout, so that the
/// version and the first copy's start share a line.
#[repr(C)]
pub struct Linear4 {
    /// Which copy readers use (its low bit), bumped at every publication.
    version: AtomicU64,
    /// Each copy's route count, then its routes longest first.
    copies: [[AtomicU64; WORDS]; 2],
    capacity: usize,
    bound: usize,
    /// The routes, longest prefix first: the writer's side.
    writer: Mutex<Vec<(Prefix4, NextHop)>>,
}

impl std::fmt::Debug for Linear4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Linear4")
            .field("routes", &self.route_count())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl Linear4 {
    /// The most routes a linear table holds.
    pub const MAX_ROUTES: usize = 256;

    /// The memory bound that allows [`Linear4::MAX_ROUTES`].
    pub const MAX_MEMORY_BOUND: usize = Self::MAX_ROUTES * ROUTE_BYTES;

    /// An empty table of as many routes as `bound` bytes hold (16 a
    /// route: a word in each of the two copies), at most
    /// [`Linear4::MAX_ROUTES`].
    pub fn with_memory_bound(bound: usize) -> Result<Linear4, LpmError> {
        let capacity = (bound / ROUTE_BYTES).min(Self::MAX_ROUTES);
        if capacity == 0 {
            return Err(LpmError::MemoryBound {
                algorithm: "linear",
                needed: ROUTE_BYTES,
                bound,
                detail: "one route".into(),
            });
        }
        Ok(Linear4 {
            // Odd: the first publication goes to copy 0, beside it.
            version: AtomicU64::new(1),
            copies: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            capacity,
            bound,
            writer: Mutex::new(Vec::new()),
        })
    }

    /// A table of `routes` (a prefix given twice keeps its last next hop).
    pub fn build(routes: &[(Prefix4, NextHop)], bound: usize) -> Result<Linear4, LpmError> {
        let t = Linear4::with_memory_bound(bound)?;
        {
            let mut w = t.lock();
            for &(p, nh) in routes {
                check_next_hop(nh)?;
                t.put(&mut w, Prefix4::new(p.addr, p.len), nh)?;
            }
            t.publish(&w);
        }
        Ok(t)
    }

    /// How many routes the table may hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn lock(&self) -> MutexGuard<'_, Vec<(Prefix4, NextHop)>> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds or changes `p` in the writer's list, not yet published.
    fn put(
        &self,
        w: &mut Vec<(Prefix4, NextHop)>,
        p: Prefix4,
        nh: NextHop,
    ) -> Result<Option<NextHop>, LpmError> {
        if let Some(r) = w.iter_mut().find(|r| r.0 == p) {
            return Ok(Some(std::mem::replace(&mut r.1, nh)));
        }
        if w.len() == self.capacity {
            return Err(LpmError::MemoryBound {
                algorithm: "linear",
                needed: (w.len() + 1) * ROUTE_BYTES,
                bound: self.bound,
                detail: format!(
                    "{} routes of 16 bytes; a linear table holds at most {}, use a trie or \
                     DIR-24-8 for more",
                    w.len() + 1,
                    Self::MAX_ROUTES
                ),
            });
        }
        // Longest first; prefixes of one length are disjoint, so their
        // order does not matter.
        let at = w.partition_point(|r| r.0.len >= p.len);
        w.insert(at, (p, nh));
        Ok(None)
    }

    /// Writes `w` into the copy readers do not use, then makes it theirs.
    fn publish(&self, w: &[(Prefix4, NextHop)]) {
        let v = self.version.load(Ordering::Relaxed);
        let c = ((v + 1) & 1) as usize;
        let copy = &self.copies[c];
        for (slot, &(p, nh)) in copy[1..].iter().zip(w) {
            slot.store(word(p, nh), Ordering::Relaxed);
        }
        copy[0].store(w.len() as u64, Ordering::Relaxed);
        self.version.store(v + 1, Ordering::Release);
        // Every later write into a copy (the next publication's) is
        // ordered after the new version, so a reader that reads one of
        // them sees the version move when it checks.
        fence(Ordering::Release);
        // After the version: whoever sees this count move sees the new
        // version too.
        PUBLICATIONS.fetch_add(1, Ordering::Release);
    }

    /// How many times any linear table has published its routes: a copy
    /// of tables' routes kept elsewhere (a virtual-router lookup's, a line
    /// a router) checks this one word a batch, and [`Linear4::version`]
    /// of its tables only when it moved.
    pub fn publications() -> u64 {
        PUBLICATIONS.load(Ordering::Acquire)
    }

    /// This table's version: it moves at every publication.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// The routes, longest prefix first, as the last publication made
    /// them (the writers change and publish them under one lock).
    pub fn routes(&self) -> Vec<(Prefix4, NextHop)> {
        self.lock().clone()
    }
}

impl Lpm4 for Linear4 {
    #[inline]
    fn lookup(&self, addr: u32) -> Option<NextHop> {
        let a = u64::from(addr) << 32;
        loop {
            let v = self.version.load(Ordering::Acquire);
            let c = (v & 1) as usize;
            let copy = &self.copies[c];
            let n = (copy[0].load(Ordering::Relaxed) as usize).min(Self::MAX_ROUTES);
            let mut found = None;
            for e in &copy[1..=n] {
                let e = e.load(Ordering::Relaxed);
                if contains(e, a) {
                    found = Some(NextHop((e >> HOP_SHIFT) as u32 & NextHop::MAX));
                    break;
                }
            }
            fence(Ordering::Acquire);
            if self.version.load(Ordering::Relaxed) == v {
                return found;
            }
        }
    }

    fn memory_bytes(&self) -> usize {
        // The version and both copies' counts and routes.
        8 + 2 * 8 * (1 + self.route_count())
    }

    fn name(&self) -> &'static str {
        "linear"
    }
}

impl Lpm4Update for Linear4 {
    fn insert(&self, p: Prefix4, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        check_next_hop(nh)?;
        let mut w = self.lock();
        let prev = self.put(&mut w, Prefix4::new(p.addr, p.len), nh)?;
        self.publish(&w);
        Ok(prev)
    }

    fn remove(&self, p: Prefix4) -> Result<Option<NextHop>, LpmError> {
        let p = Prefix4::new(p.addr, p.len);
        let mut w = self.lock();
        let Some(at) = w.iter().position(|r| r.0 == p) else {
            return Ok(None);
        };
        let (_, nh) = w.remove(at);
        self.publish(&w);
        Ok(Some(nh))
    }

    fn route_count(&self) -> usize {
        self.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: [u8; 4], len: u8) -> Prefix4 {
        Prefix4::new(u32::from_be_bytes(a), len)
    }

    #[test]
    fn the_longest_prefix_wins_whatever_the_order_given() {
        let t = Linear4::build(
            &[
                (p([0, 0, 0, 0], 0), NextHop(1)),
                (p([10, 1, 2, 3], 32), NextHop(3)),
                (p([10, 0, 0, 0], 8), NextHop(2)),
            ],
            Linear4::MAX_MEMORY_BOUND,
        )
        .unwrap();
        assert_eq!(
            t.lookup(u32::from_be_bytes([10, 1, 2, 3])),
            Some(NextHop(3))
        );
        assert_eq!(
            t.lookup(u32::from_be_bytes([10, 1, 2, 4])),
            Some(NextHop(2))
        );
        assert_eq!(
            t.lookup(u32::from_be_bytes([11, 0, 0, 0])),
            Some(NextHop(1))
        );
        t.remove(p([0, 0, 0, 0], 0)).unwrap();
        assert_eq!(t.lookup(u32::from_be_bytes([11, 0, 0, 0])), None);
    }

    #[test]
    fn the_bound_refuses_a_route_too_many_and_keeps_the_table() {
        let t = Linear4::with_memory_bound(3 * ROUTE_BYTES).unwrap();
        assert_eq!(t.capacity(), 3);
        for i in 0..3u8 {
            t.insert(p([10, i, 0, 0], 16), NextHop(u32::from(i)))
                .unwrap();
        }
        let e = t.insert(p([10, 9, 0, 0], 16), NextHop(9)).unwrap_err();
        assert!(e.to_string().contains("use a trie"), "{e}");
        // Changing a route it has is no new route.
        assert_eq!(
            t.insert(p([10, 1, 0, 0], 16), NextHop(7)),
            Ok(Some(NextHop(1)))
        );
        assert_eq!(t.route_count(), 3);
        assert_eq!(
            t.lookup(u32::from_be_bytes([10, 1, 5, 5])),
            Some(NextHop(7))
        );
        assert_eq!(t.lookup(u32::from_be_bytes([10, 9, 5, 5])), None);
        assert!(Linear4::with_memory_bound(ROUTE_BYTES - 1).is_err());
        assert_eq!(
            Linear4::with_memory_bound(usize::MAX).unwrap().capacity(),
            Linear4::MAX_ROUTES
        );
    }
}
