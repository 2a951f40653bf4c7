//! A multibit trie with a 4-bit stride, the IPv4 longest-prefix match of
//! Hardekopf, Riché, Mudigonda et al. ("Impact of Network Protocols on
//! Programmable Router Architectures", §4.1), kept to compare against
//! DIR-24-8 and to report the cost model of that paper: memory references
//! per lookup, best 1, average 3, worst 8 in their measurements.
//!
//! # Structure
//!
//! Eight levels of nodes of 16 entries; level `k` is indexed by address
//! bits `31-4k ..= 28-4k`. A prefix of length `L` lives at level
//! `(L - 1) / 4` (`/0` at level 0), expanded into the `2^(4k+4-L)` entries
//! it covers there (controlled prefix expansion, Srinivasan and Varghese,
//! SIGMETRICS 1998). Each entry is one 64-bit word holding both the best
//! prefix of its level that covers it (next hop, valid bit, length) and
//! the link to a child node, so reading a level is one load: one memory
//! reference, as in the paper, which issues "one one-word SRAM load to read
//! each level of the tree traversed".
//!
//! **Not leaf-pushed.** A lookup walks down while there is a child and
//! remembers the last valid next hop it passed; shorter prefixes are not
//! copied into the leaves below them. This keeps an update local to one
//! level (a /8 change rewrites 16 entries of one node, never a subtree),
//! and it is the trie the paper's depth figures describe: a lookup stops
//! at depth 1 when the first level has no child for the address, and goes
//! to depth 8 only under a prefix longer than /28.
//!
//! # Lookups of a batch
//!
//! One lookup is a chain of dependent loads, a level each: when the
//! nodes are not in L1 (a large table, or a thousand small ones), each
//! level waits on the one before. [`Lpm4::lookup_batch`] and
//! [`Trie4::lookup_each`] (a batch whose addresses belong to different
//! tables, as virtual routers' packets do) walk the lookups of a chunk in
//! lockstep instead: level by level, every lookup of the chunk loads its
//! entry before any goes deeper, so the loads of one level are
//! independent and their misses overlap (group prefetching, Chen et al.,
//! ICDE 2004). The step is branch-free, so a mispredicted "go deeper"
//! cannot serialise it again.
//!
//! # Updates
//!
//! In place, with the guarantees of [`crate::table`]: entries change whole
//! (one 64-bit store keeps the child link and replaces the prefix part),
//! a new node is zeroed before it is linked, and an emptied node (no
//! prefix, no child) is unlinked and reused only after a reuse-sequence
//! bump, which lookups check (`src/mem.rs`).

#![deny(unsafe_code)]

use crate::mem::{BlockPool, ReuseSeq, Zeroed};
use crate::prefix::{Answer, NextHop, Prefix4};
use crate::table::{check_next_hop, Lpm4, Lpm4Update, LpmError, RuleMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

const NH_MASK: u64 = (1 << 22) - 1;
const VALID: u64 = 1 << 22;
const DEPTH_SHIFT: u32 = 23;
const CHILD: u64 = 1 << 29;
/// The link part of an entry: child flag and index.
const LINK: u64 = CHILD | (u32::MAX as u64) << 32;
const FANOUT: usize = 16;
const NODE_BYTES: usize = FANOUT * 8;
const LEVELS: usize = 8;
/// Lookups walked in lockstep: more misses than a core keeps in flight,
/// and a chunk's state (a few hundred bytes) stays in L1.
const CHUNK: usize = 32;
const _: () = assert!(CHUNK <= 64, "a chunk's lookups are the bits of a u64");

#[inline(always)]
fn leaf(nh: NextHop, depth: u8) -> u64 {
    VALID | (depth as u64) << DEPTH_SHIFT | nh.0 as u64
}

#[inline(always)]
fn depth(e: u64) -> u8 {
    ((e >> DEPTH_SHIFT) & 0x3f) as u8
}

#[inline(always)]
fn slot(addr: u32, level: usize) -> usize {
    ((addr >> (28 - 4 * level)) & 0xf) as usize
}

/// The level a prefix of length `len` lives at.
fn level_of(len: u8) -> usize {
    if len == 0 {
        0
    } else {
        (len as usize - 1) / 4
    }
}

/// The 4-bit-stride trie; see the module doc.
pub struct Trie4 {
    nodes: Zeroed<[AtomicU64]>,
    seq: ReuseSeq,
    bound: usize,
    nodes_touched: AtomicUsize,
    writer: Mutex<Writer>,
}

struct Writer {
    rules: Vec<RuleMap<u32>>,
    lens: u64,
    routes: usize,
    pool: BlockPool,
}

impl std::fmt::Debug for Trie4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trie4")
            .field("memory_bytes", &self.memory_bytes())
            .field("bound", &self.bound)
            .finish_non_exhaustive()
    }
}

impl Default for Trie4 {
    fn default() -> Self {
        Trie4::new()
    }
}

impl Trie4 {
    /// The memory bound of [`Trie4::new`]: 1 GiB of address space, of which
    /// a table uses what its nodes take (a million prefixes: 82 MiB when
    /// spread at random, 54 MiB shaped like the real table by
    /// [`crate::gen`]).
    pub const DEFAULT_MEMORY_BOUND: usize = 1 << 30;

    /// An empty trie with the default bound.
    pub fn new() -> Trie4 {
        Trie4::with_memory_bound(Self::DEFAULT_MEMORY_BOUND).expect("default bound fits")
    }

    /// An empty trie that refuses to grow past `bound` bytes.
    pub fn with_memory_bound(bound: usize) -> Result<Trie4, LpmError> {
        let cap = (bound / NODE_BYTES).min(u32::MAX as usize);
        if cap == 0 {
            return Err(LpmError::MemoryBound {
                algorithm: "trie4",
                needed: NODE_BYTES,
                bound,
                detail: "the root node".into(),
            });
        }
        let nodes = Zeroed::slice(cap * FANOUT);
        let seq = ReuseSeq::default();
        let mut pool = BlockPool::new(cap, 1);
        let root = pool.alloc(1, &seq);
        debug_assert_eq!(root, Some(0));
        Ok(Trie4 {
            nodes,
            seq,
            bound,
            nodes_touched: AtomicUsize::new(1),
            writer: Mutex::new(Writer {
                rules: vec![RuleMap::default(); 33],
                lens: 0,
                routes: 0,
                pool,
            }),
        })
    }

    /// A trie of `routes` (a prefix given twice keeps its last next hop),
    /// inserted shortest first.
    pub fn build(routes: &[(Prefix4, NextHop)], bound: usize) -> Result<Trie4, LpmError> {
        let t = Trie4::with_memory_bound(bound)?;
        // Shorter prefixes first, so that longer ones overwrite them; by
        // address within a length (those are disjoint, their order does
        // not matter), so that consecutive inserts walk the same upper
        // nodes while they are in cache. Stable, so that a prefix given
        // twice keeps its last hop: a counting sort by length (route
        // lists usually come in address order, which it keeps), then a
        // sort of any length whose prefixes are not in order.
        let mut start = [0usize; 34];
        for (p, _) in routes {
            start[usize::from(p.len.min(32)) + 1] += 1;
        }
        for l in 1..34 {
            start[l] += start[l - 1];
        }
        let mut sorted = vec![(Prefix4::new(0, 0), NextHop(0)); routes.len()];
        let mut next = start;
        for &(p, nh) in routes {
            let l = usize::from(p.len.min(32));
            sorted[next[l]] = (p, nh);
            next[l] += 1;
        }
        for l in 0..33 {
            let bucket = &mut sorted[start[l]..start[l + 1]];
            if !bucket.is_sorted_by_key(|r| r.0.addr) {
                bucket.sort_by_key(|r| r.0.addr);
            }
        }
        {
            // One lock for the whole build.
            let mut w = t.lock();
            for (p, nh) in sorted {
                t.insert_locked(&mut w, p, nh)?;
            }
        }
        Ok(t)
    }

    /// The lookup, also returning how many memory references (entry
    /// loads, one per level visited) it made: 1 to 8.
    #[inline]
    pub fn lookup_counting(&self, addr: u32) -> (Option<NextHop>, usize) {
        loop {
            let s = self.seq.begin();
            let mut node = 0usize;
            let mut best = 0u64;
            let mut refs = 0;
            let mut torn = false;
            for level in 0..LEVELS {
                // A node reused under this lookup can hold any link; the
                // bound check turns that into a retry, not a panic.
                let Some(e) = self.nodes.get(node * FANOUT + slot(addr, level)) else {
                    torn = true;
                    break;
                };
                let e = e.load(Ordering::Acquire);
                refs += 1;
                if e & VALID != 0 {
                    best = e;
                }
                if e & CHILD == 0 {
                    break;
                }
                node = (e >> 32) as usize;
            }
            if self.seq.validate(s) && !torn {
                let nh = (best & VALID != 0).then_some(NextHop((best & NH_MASK) as u32));
                return (nh, refs);
            }
        }
    }

    /// Looks up `addrs[i]` in `tries[i]` into `out[i]`, for a batch whose
    /// addresses belong to different tables (the packets of many virtual
    /// routers): the walks go level by level together, as
    /// [`Lpm4::lookup_batch`]'s do (see the module doc).
    pub fn lookup_each<A: Answer>(tries: &[&Trie4], addrs: &[u32], out: &mut [A]) {
        assert!(
            tries.len() >= addrs.len() && out.len() >= addrs.len(),
            "as many tables and outputs as addresses"
        );
        for (k, a) in addrs.chunks(CHUNK).enumerate() {
            let at = k * CHUNK;
            lockstep(|i| tries[at + i], a, &mut out[at..at + a.len()]);
        }
    }

    /// Nodes in use.
    pub fn node_count(&self) -> usize {
        self.lock().pool.live()
    }

    fn lock(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn entry(&self, node: usize, slot: usize) -> &AtomicU64 {
        &self.nodes[node * FANOUT + slot]
    }

    /// Writes into `path` the `(node, slot)` pairs from the root to the
    /// node at `level` that `addr` leads to, creating missing nodes when
    /// `create`; false when a node is missing and not created. Entry
    /// `level` is the node at `level` (its slot is unused).
    fn path(
        &self,
        w: &mut Writer,
        addr: u32,
        level: usize,
        create: bool,
        path: &mut [(usize, usize); LEVELS + 1],
    ) -> Result<bool, LpmError> {
        let mut node = 0usize;
        for (l, step) in path.iter_mut().enumerate().take(level) {
            let s = slot(addr, l);
            *step = (node, s);
            let e = self.entry(node, s).load(Ordering::Relaxed);
            if e & CHILD != 0 {
                node = (e >> 32) as usize;
                continue;
            }
            if !create {
                return Ok(false);
            }
            // Missing from here down: check there is room for all of them
            // before linking any, so a refusal leaves nothing behind.
            let missing = level - l;
            if !w.pool.can_alloc(1, missing) {
                return Err(LpmError::MemoryBound {
                    algorithm: "trie4",
                    needed: (w.pool.live() + missing) * NODE_BYTES,
                    bound: self.bound,
                    detail: format!("{} nodes of 128 bytes", w.pool.live() + missing),
                });
            }
            let c = w.pool.alloc(1, &self.seq).expect("room was checked") as usize;
            for x in &self.nodes[c * FANOUT..(c + 1) * FANOUT] {
                x.store(0, Ordering::Relaxed);
            }
            // Publication: the zeroed node is linked after it is written.
            self.entry(node, s)
                .store(e | CHILD | (c as u64) << 32, Ordering::Release);
            self.nodes_touched
                .store(w.pool.high_water(), Ordering::Relaxed);
            node = c;
        }
        path[level] = (node, 0);
        Ok(true)
    }

    /// [`Lpm4Update::insert`] under the writer lock `w`.
    fn insert_locked(
        &self,
        w: &mut Writer,
        p: Prefix4,
        nh: NextHop,
    ) -> Result<Option<NextHop>, LpmError> {
        check_next_hop(nh)?;
        let p = Prefix4::new(p.addr, p.len);
        let level = level_of(p.len);
        // On the stack: a table is built by a million of these.
        let mut path = [(0usize, 0usize); LEVELS + 1];
        self.path(w, p.addr, level, true, &mut path)?;
        let node = path[level].0;
        let first = slot(p.addr, level);
        let n = 1 << (4 * level + 4 - p.len as usize);
        let len = p.len;
        self.rewrite(node, first, n, leaf(nh, len), |t| {
            t & VALID == 0 || depth(t) <= len
        });
        let prev = w.rules[len as usize].insert(p.addr, nh);
        if prev.is_none() {
            w.routes += 1;
            w.lens |= 1 << len;
        }
        Ok(prev)
    }

    /// Stores `v` as the prefix part of the entries `[first, first + n)`
    /// of `node` that pass `owns`, keeping their links.
    fn rewrite(&self, node: usize, first: usize, n: usize, v: u64, owns: impl Fn(u64) -> bool) {
        for e in &self.nodes[node * FANOUT + first..node * FANOUT + first + n] {
            let t = e.load(Ordering::Relaxed);
            let new = (t & LINK) | v;
            if new != t && owns(t) {
                e.store(new, Ordering::Release);
            }
        }
    }
}

/// The lookups of `addrs` (at most [`CHUNK`]), `addrs[i]` in `trie(i)`,
/// walked level by level together; see the module doc.
#[inline(always)]
fn lockstep<'a, A: Answer>(trie: impl Fn(usize) -> &'a Trie4, addrs: &[u32], out: &mut [A]) {
    let n = addrs.len();
    debug_assert!(n <= CHUNK && out.len() >= n);
    let mut seq = [0u64; CHUNK];
    let mut node = [0u32; CHUNK];
    let mut best = [0u64; CHUNK];
    for (i, s) in seq.iter_mut().enumerate().take(n) {
        *s = trie(i).seq.begin();
    }
    // Lookups still walking, and those that met a link out of bounds (a
    // node reused under them): they look up again on their own.
    let mut walking = u64::MAX.checked_shr(64 - n as u32).unwrap_or(0);
    let mut torn = 0u64;
    for level in 0..LEVELS {
        if walking == 0 {
            break;
        }
        let mut deeper = 0u64;
        let mut m = walking;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let at = node[i] as usize * FANOUT + slot(addrs[i], level);
            let e = match trie(i).nodes.get(at) {
                Some(e) => e.load(Ordering::Acquire),
                None => {
                    torn |= 1 << i;
                    0
                }
            };
            best[i] = if e & VALID != 0 { e } else { best[i] };
            node[i] = (e >> 32) as u32;
            deeper |= ((e & CHILD) >> CHILD.trailing_zeros()) << i;
        }
        walking = deeper;
    }
    for (i, o) in out.iter_mut().enumerate().take(n) {
        let t = trie(i);
        *o = A::answer(if torn & (1 << i) == 0 && t.seq.validate(seq[i]) {
            let b = best[i];
            (b & VALID != 0).then_some(NextHop((b & NH_MASK) as u32))
        } else {
            t.lookup(addrs[i])
        });
    }
}

impl Lpm4 for Trie4 {
    #[inline]
    fn lookup(&self, addr: u32) -> Option<NextHop> {
        self.lookup_counting(addr).0
    }

    fn lookup_batch(&self, addrs: &[u32], out: &mut [Option<NextHop>]) {
        assert!(out.len() >= addrs.len(), "output shorter than the batch");
        for (a, o) in addrs.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            lockstep(|_| self, a, o);
        }
    }

    fn lookup_batch_raw(&self, addrs: &mut [u32]) {
        for chunk in addrs.chunks_mut(CHUNK) {
            let mut a = [0; CHUNK];
            a[..chunk.len()].copy_from_slice(chunk);
            lockstep(|_| self, &a[..chunk.len()], chunk);
        }
    }

    fn memory_bytes(&self) -> usize {
        self.nodes_touched.load(Ordering::Relaxed) * NODE_BYTES
    }

    fn name(&self) -> &'static str {
        "trie4"
    }
}

impl Lpm4Update for Trie4 {
    fn insert(&self, p: Prefix4, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        let mut w = self.lock();
        self.insert_locked(&mut w, p, nh)
    }

    fn remove(&self, p: Prefix4) -> Result<Option<NextHop>, LpmError> {
        let p = Prefix4::new(p.addr, p.len);
        let len = p.len;
        let level = level_of(len);
        let mut w = self.lock();
        let Some(old) = w.rules[len as usize].remove(&p.addr) else {
            return Ok(None);
        };
        w.routes -= 1;
        if w.rules[len as usize].is_empty() {
            w.lens &= !(1 << len);
        }
        let mut path = [(0usize, 0usize); LEVELS + 1];
        let found = self.path(&mut w, p.addr, level, false, &mut path)?;
        assert!(found, "a route has its path");
        // Only prefixes of the same level are expanded into this node;
        // shorter ones are met higher up by the lookup.
        let lowest = if level == 0 { 0 } else { 4 * level as u8 + 1 };
        let repl = (lowest..len)
            .rev()
            .filter(|l| w.lens & (1 << l) != 0)
            .find_map(|l| {
                w.rules[l as usize]
                    .get(&(p.addr & Prefix4::mask(l)))
                    .map(|&nh| leaf(nh, l))
            })
            .unwrap_or(0);
        let node = path[level].0;
        let n = 1 << (4 * level + 4 - len as usize);
        self.rewrite(node, slot(p.addr, level), n, repl, |t| {
            t & VALID != 0 && depth(t) == len
        });
        // Unlink nodes left with neither a prefix nor a child.
        for l in (1..=level).rev() {
            let node = path[l].0;
            let empty = self.nodes[node * FANOUT..(node + 1) * FANOUT]
                .iter()
                .all(|e| e.load(Ordering::Relaxed) & (VALID | CHILD) == 0);
            if !empty {
                break;
            }
            let (parent, s) = path[l - 1];
            let e = self.entry(parent, s).load(Ordering::Relaxed);
            self.entry(parent, s).store(e & !LINK, Ordering::Release);
            w.pool.free(node as u32, 1, &self.seq);
        }
        Ok(Some(old))
    }

    fn route_count(&self) -> usize {
        self.lock().routes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: [u8; 4], len: u8) -> Prefix4 {
        Prefix4::new(u32::from_be_bytes(a), len)
    }

    #[test]
    fn references_follow_the_depth() {
        let t = Trie4::new();
        t.insert(p([0, 0, 0, 0], 0), NextHop(1)).unwrap();
        t.insert(p([10, 0, 0, 0], 8), NextHop(2)).unwrap();
        t.insert(p([10, 1, 2, 3], 32), NextHop(3)).unwrap();
        // 192/4 has no child: one reference.
        assert_eq!(t.lookup_counting(0xc000_0001), (Some(NextHop(1)), 1));
        // 10.128.x.x: the /8 at level 1, then an empty level-2 entry.
        assert_eq!(t.lookup_counting(0x0a80_0000), (Some(NextHop(2)), 3));
        assert_eq!(t.lookup_counting(0x0a01_0203), (Some(NextHop(3)), 8));
        assert_eq!(t.lookup_counting(0x0a01_0204), (Some(NextHop(2)), 8));
        assert_eq!(t.node_count(), 8);
        t.remove(p([10, 1, 2, 3], 32)).unwrap();
        assert_eq!(t.node_count(), 2);
        assert_eq!(t.lookup_counting(0x0a01_0203), (Some(NextHop(2)), 2));
    }

    #[test]
    fn bound_refuses_without_leftovers() {
        let t = Trie4::with_memory_bound(4 * NODE_BYTES).unwrap();
        let e = t.insert(p([10, 1, 2, 3], 32), NextHop(3)).unwrap_err();
        assert!(e.to_string().contains("8 nodes"), "{e}");
        assert_eq!(t.node_count(), 1);
        t.insert(p([10, 1, 0, 0], 16), NextHop(3)).unwrap();
        assert_eq!(t.node_count(), 4);
    }
}
