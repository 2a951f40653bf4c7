//! DIR-24-8: IPv4 longest-prefix match in one memory access for prefixes
//! up to /24 and two beyond, the "D-lookup" RouteBricks routes with
//! (RouteBricks §5.1, after Gupta, Lin and McKeown, "Routing Lookups in
//! Hardware at Memory Access Speeds", INFOCOM 1998), laid out as DPDK's
//! `rte_lpm` lays it out.
//!
//! # Structure
//!
//! - **tbl24**: 2^24 32-bit entries, one per /24, indexed by the top 24
//!   bits of the address (64 MiB). An entry is either a *leaf* (valid bit, depth of the prefix
//!   it came from, 22-bit next hop) or *extended* (top bit set, index of a
//!   tbl8 group).
//! - **tbl8**: groups of 256 leaves, one group per /24 that holds a prefix
//!   longer than /24, indexed by the last 8 bits. Groups come from an
//!   arena reserved up to the memory bound (address space only until
//!   used), with a free list; a table that would exceed the bound is
//!   refused with [`LpmError::MemoryBound`].
//!
//! Prefixes are expanded (controlled prefix expansion): a /16 fills 256
//! tbl24 entries, a /28 16 entries of its /24's group, and each entry
//! remembers the length of the prefix that wrote it, so that a longer
//! prefix is never overwritten by a shorter one and a withdraw restores
//! exactly the entries the prefix owned, with the next shorter covering
//! prefix found in the writer-side rule store (one hash map per length).
//! A group whose last longer-than-/24 prefix is withdrawn is folded back
//! into its tbl24 entry and freed.
//!
//! # Lookups
//!
//! [`Lpm4::lookup_batch`] works like `rte_lpm_lookupx4` and VPP's
//! `ip4_lookup`: for each chunk of the batch it first computes every tbl24
//! index and prefetches it, then loads the entries (prefetching the tbl8
//! entry of those that are extended), then resolves, so the cache misses
//! of a whole chunk overlap instead of being paid one after another.
//!
//! # Updates
//!
//! In place, entry by entry, as described in [`crate::table`]: each entry
//! goes straight from its old answer to its new one; a new group is filled
//! before the tbl24 entry links it (Release); a folded group is reused only
//! after a reuse-sequence bump, and a lookup that read a tbl8 entry checks
//! that sequence (`src/mem.rs`). Building from a route list does not
//! insert route by route: it sorts the prefixes and sweeps the address
//! space once, writing each tbl24 entry at most once.

#![deny(unsafe_code)]

use crate::mem::{prefetch, BlockPool, ReuseSeq, Zeroed, HUGE_TABLE};
use crate::prefix::{Answer, NextHop, Prefix4};
use crate::table::{check_next_hop, Lpm4, Lpm4Update, LpmError, RuleMap};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

const EXT: u32 = 1 << 31;
const VALID: u32 = 1 << 30;
const DEPTH_SHIFT: u32 = 22;
const NH_MASK: u32 = (1 << 22) - 1;
const TBL24_LEN: usize = 1 << 24;
const TBL24_BYTES: usize = TBL24_LEN * 4;
const GROUP_LEN: usize = 256;
const GROUP_BYTES: usize = GROUP_LEN * 4;
/// Group indexes must leave the top bit of an entry free.
const MAX_GROUPS: usize = 1 << 23;
/// Lookups of a batch are resolved this many at a time: enough misses in
/// flight to cover memory latency, few enough that the chunk's state stays
/// in registers and L1.
const CHUNK: usize = 16;

#[inline(always)]
fn leaf(nh: NextHop, depth: u8) -> u32 {
    VALID | (depth as u32) << DEPTH_SHIFT | nh.0
}

#[inline(always)]
fn depth(e: u32) -> u8 {
    ((e >> DEPTH_SHIFT) & 0x3f) as u8
}

#[inline(always)]
fn answer(e: u32) -> Option<NextHop> {
    if e & VALID != 0 {
        Some(NextHop(e & NH_MASK))
    } else {
        None
    }
}

/// The DIR-24-8 table; see the module doc. Share it between threads with
/// an `Arc`: lookups and updates both take `&self`.
pub struct Dir24_8 {
    tbl24: Zeroed<[AtomicU32; TBL24_LEN]>,
    tbl8: Zeroed<[AtomicU32]>,
    seq: ReuseSeq,
    bound: usize,
    groups_touched: AtomicUsize,
    writer: Mutex<Writer>,
}

struct Writer {
    rules: Vec<RuleMap<u32>>,
    /// Bit `l` set when some rule has length `l`.
    lens: u64,
    routes: usize,
    pool: BlockPool,
    /// Per group: how many prefixes longer than /24 it holds.
    group_rules: Vec<u32>,
    /// Whether the arrays were asked to use huge pages (at
    /// [`HUGE_TABLE`] routes).
    huge: bool,
}

impl Writer {
    /// The entry the longest rule shorter than `len` that covers `addr`
    /// writes, or 0 (no route).
    fn covering(&self, addr: u32, len: u8) -> u32 {
        (0..len)
            .rev()
            .filter(|l| self.lens & (1 << l) != 0)
            .find_map(|l| {
                self.rules[l as usize]
                    .get(&(addr & Prefix4::mask(l)))
                    .map(|&nh| leaf(nh, l))
            })
            .unwrap_or(0)
    }
}

impl std::fmt::Debug for Dir24_8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dir24_8")
            .field("memory_bytes", &self.memory_bytes())
            .field("bound", &self.bound)
            .finish_non_exhaustive()
    }
}

impl Dir24_8 {
    /// The memory bound [`Dir24_8::new`] uses: 256 MiB, the 64 MiB tbl24
    /// and room for 196,608 tbl8 groups (a real table needs a few
    /// thousand).
    pub const DEFAULT_MEMORY_BOUND: usize = 256 << 20;

    /// An empty table with the default memory bound.
    pub fn new() -> Dir24_8 {
        Dir24_8::with_memory_bound(Self::DEFAULT_MEMORY_BOUND).expect("default bound fits")
    }

    /// An empty table that will refuse to grow past `bound` bytes. Refused
    /// when `bound` does not even hold the tbl24.
    pub fn with_memory_bound(bound: usize) -> Result<Dir24_8, LpmError> {
        if bound < TBL24_BYTES {
            return Err(LpmError::MemoryBound {
                algorithm: "dir24-8",
                needed: TBL24_BYTES,
                bound,
                detail: "the tbl24 alone takes 64 MiB".into(),
            });
        }
        let groups = ((bound - TBL24_BYTES) / GROUP_BYTES).min(MAX_GROUPS);
        let tbl24 = Zeroed::huge_array();
        let tbl8 = Zeroed::huge_slice(groups * GROUP_LEN);
        Ok(Dir24_8 {
            tbl24,
            tbl8,
            seq: ReuseSeq::default(),
            bound,
            groups_touched: AtomicUsize::new(0),
            writer: Mutex::new(Writer {
                rules: vec![RuleMap::default(); 33],
                lens: 0,
                routes: 0,
                pool: BlockPool::new(groups, 1),
                group_rules: Vec::new(),
                huge: false,
            }),
        })
    }

    /// A table of `routes` within `bound` bytes (a prefix given twice
    /// keeps its last next hop), built by one sweep over the sorted
    /// prefixes. Refused with the numbers when the tbl8 groups it needs do
    /// not fit.
    pub fn build(routes: &[(Prefix4, NextHop)], bound: usize) -> Result<Dir24_8, LpmError> {
        let t = Dir24_8::with_memory_bound(bound)?;
        {
            let mut w = t.lock();
            for &(p, nh) in routes {
                check_next_hop(nh)?;
                let p = Prefix4::new(p.addr, p.len);
                if w.rules[p.len as usize].insert(p.addr, nh).is_none() {
                    w.routes += 1;
                    w.lens |= 1 << p.len;
                }
            }
            t.huge_pages_when_large(&mut w);
            let mut long: Vec<u32> = w.rules[25..]
                .iter()
                .flat_map(|m| m.keys().map(|a| a >> 8))
                .collect();
            long.sort_unstable();
            long.dedup();
            if long.len() > w.pool.capacity() {
                return Err(t.bound_error(long.len()));
            }
            let mut sorted: Vec<(u32, u8, u32)> = w
                .rules
                .iter()
                .enumerate()
                .flat_map(|(l, m)| {
                    m.iter()
                        .map(move |(&a, &nh)| (a, l as u8, leaf(nh, l as u8)))
                })
                .collect();
            sorted.sort_unstable_by_key(|&(a, l, _)| (a, l));
            let mut sweep = Sweep {
                t: &t,
                w: &mut w,
                buf: [0; GROUP_LEN],
            };
            sweep.run(&sorted);
            let w = &mut *w;
            w.group_rules = vec![0; w.pool.high_water()];
            for m in &w.rules[25..] {
                for a in m.keys() {
                    let g = t.tbl24[(a >> 8) as usize].load(Ordering::Relaxed) & !EXT;
                    w.group_rules[g as usize] += 1;
                }
            }
            t.groups_touched
                .store(w.pool.high_water(), Ordering::Relaxed);
        }
        Ok(t)
    }

    /// Asks for huge pages once the table holds [`HUGE_TABLE`] routes.
    fn huge_pages_when_large(&self, w: &mut Writer) {
        if !w.huge && w.routes >= HUGE_TABLE {
            w.huge = true;
            self.tbl24.use_huge_pages();
            self.tbl8.use_huge_pages();
        }
    }

    /// The configured memory bound.
    pub fn memory_bound(&self) -> usize {
        self.bound
    }

    /// tbl8 groups in use.
    pub fn tbl8_groups(&self) -> usize {
        self.lock().pool.live()
    }

    /// Bytes of the writer-side rule store (not part of
    /// [`Lpm4::memory_bytes`], which counts what lookups touch).
    pub fn writer_bytes(&self) -> usize {
        let w = self.lock();
        let rules: usize = w.rules.iter().map(|m| m.capacity() * 9).sum();
        rules + w.group_rules.capacity() * 4
    }

    fn lock(&self) -> MutexGuard<'_, Writer> {
        // A writer that panicked left every entry either old or new (each
        // store is whole), so the state is still usable.
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bound_error(&self, groups: usize) -> LpmError {
        LpmError::MemoryBound {
            algorithm: "dir24-8",
            needed: TBL24_BYTES + groups * GROUP_BYTES,
            bound: self.bound,
            detail: format!("64 MiB tbl24 + {groups} tbl8 groups of 1 KiB"),
        }
    }

    #[inline(always)]
    fn group_entry(&self, e: u32, addr: u32) -> &AtomicU32 {
        &self.tbl8[((e & !EXT) as usize) << 8 | (addr & 0xff) as usize]
    }

    /// Looks up at most [`CHUNK`] addresses into `out`.
    #[inline(always)]
    fn lookup_chunk<A: Answer>(&self, addrs: &[u32], out: &mut [A]) {
        let ent = self.chunk_entries(addrs);
        for (o, &e) in out.iter_mut().zip(&ent[..addrs.len()]) {
            *o = A::answer(answer(e));
        }
    }

    /// Looks up at most [`CHUNK`] addresses, each replaced by its raw
    /// answer.
    #[inline(always)]
    fn lookup_chunk_in_place(&self, chunk: &mut [u32]) {
        let ent = self.chunk_entries(chunk);
        for (a, &e) in chunk.iter_mut().zip(&ent) {
            *a = u32::answer(answer(e));
        }
    }

    /// The final entries (a tbl24 entry, or its group's) of at most
    /// [`CHUNK`] addresses, read consistently. A whole chunk (all but
    /// the last of a batch, and all of a batch of 32) goes through loops
    /// of a constant count, which the compiler unrolls: their counting
    /// and bounds were 5 of the 11 instructions an address.
    #[inline(always)]
    fn chunk_entries(&self, addrs: &[u32]) -> [u32; CHUNK] {
        match <&[u32; CHUNK]>::try_from(addrs) {
            Ok(a) => self.entries_of(a),
            _ => self.entries_of(addrs),
        }
    }

    #[inline(always)]
    fn entries_of(&self, addrs: &[u32]) -> [u32; CHUNK] {
        debug_assert!(addrs.len() <= CHUNK);
        // The table's address in a register: read through `self` after
        // each entry's Acquire load, it was loaded again for each.
        let tbl24: &[AtomicU32; TBL24_LEN] = &self.tbl24;
        for &a in addrs {
            prefetch(&tbl24[(a >> 8) as usize]);
        }
        let mut ent = [0u32; CHUNK];
        loop {
            let s = self.seq.begin();
            let mut ext = false;
            for (e, &a) in ent.iter_mut().zip(addrs) {
                *e = tbl24[(a >> 8) as usize].load(Ordering::Acquire);
                if *e & EXT != 0 {
                    ext = true;
                    prefetch(self.group_entry(*e, a));
                }
            }
            if ext {
                for (e, &a) in ent.iter_mut().zip(addrs) {
                    if *e & EXT != 0 {
                        *e = self.group_entry(*e, a).load(Ordering::Relaxed);
                    }
                }
                if !self.seq.validate(s) {
                    continue;
                }
            }
            return ent;
        }
    }

    /// Stores `v` into the entries of group `g` in `[lo, hi)` whose depth
    /// passes `owns`.
    fn rewrite_group(&self, g: u32, lo: usize, hi: usize, v: u32, owns: impl Fn(u32) -> bool) {
        let base = (g as usize) << 8;
        for e in &self.tbl8[base + lo..base + hi] {
            let t = e.load(Ordering::Relaxed);
            if t != v && owns(t) {
                e.store(v, Ordering::Release);
            }
        }
    }

    /// Stores `v` into every entry of the /24s `[first, first + n)` (and
    /// of their groups) whose current value passes `owns`.
    fn rewrite_range(&self, first: usize, n: usize, v: u32, owns: impl Fn(u32) -> bool) {
        for e in &self.tbl24[first..first + n] {
            let t = e.load(Ordering::Relaxed);
            if t & EXT != 0 {
                self.rewrite_group(t & !EXT, 0, GROUP_LEN, v, &owns);
            } else if t != v && owns(t) {
                e.store(v, Ordering::Release);
            }
        }
    }
}

impl Default for Dir24_8 {
    fn default() -> Self {
        Dir24_8::new()
    }
}

/// The build sweep: walks the prefixes in address order with a stack of
/// the prefixes that cover the current address, and writes each run of
/// addresses with one answer once.
struct Sweep<'a, 'w> {
    t: &'a Dir24_8,
    w: &'a mut MutexGuard<'w, Writer>,
    buf: [u32; GROUP_LEN],
}

impl Sweep<'_, '_> {
    fn run(&mut self, sorted: &[(u32, u8, u32)]) {
        let mut stack: Vec<(u64, u32)> = Vec::with_capacity(33);
        let mut cursor = 0u64;
        for &(addr, len, v) in sorted {
            let start = addr as u64;
            while let Some(&(end, top)) = stack.last() {
                if end > start {
                    break;
                }
                self.emit(cursor, end, top);
                cursor = end;
                stack.pop();
            }
            self.emit(cursor, start, stack.last().map_or(0, |s| s.1));
            cursor = start;
            stack.push((start + (1u64 << (32 - len)), v));
        }
        while let Some((end, top)) = stack.pop() {
            self.emit(cursor, end, top);
            cursor = end;
        }
        self.emit(cursor, 1 << 32, 0);
    }

    /// Addresses `[s, e)` all have entry value `v`.
    fn emit(&mut self, s: u64, e: u64, v: u32) {
        let mut a = s;
        while a < e {
            let blk = (a >> 8) as usize;
            if a & 0xff == 0 && e - a >= 256 {
                let n = ((e - a) >> 8) as usize;
                if v != 0 {
                    for x in &self.t.tbl24[blk..blk + n] {
                        x.store(v, Ordering::Relaxed);
                    }
                }
                a += (n as u64) << 8;
            } else {
                // Part of a /24 that holds a longer prefix: collect the
                // group and write it out once its last address is known.
                let stop = e.min(((blk as u64) + 1) << 8);
                let lo = (a & 0xff) as usize;
                let hi = (stop - ((blk as u64) << 8)) as usize;
                self.buf[lo..hi].fill(v);
                a = stop;
                if hi == GROUP_LEN {
                    let g = self
                        .w
                        .pool
                        .alloc(1, &self.t.seq)
                        .expect("groups were counted before the sweep");
                    let base = (g as usize) << 8;
                    for (x, &b) in self.t.tbl8[base..base + GROUP_LEN].iter().zip(&self.buf) {
                        x.store(b, Ordering::Relaxed);
                    }
                    self.t.tbl24[blk].store(EXT | g, Ordering::Release);
                }
            }
        }
    }
}

impl Dir24_8 {
    /// The lookup, also returning how many memory references (32-bit
    /// entry loads) it made: 1 (the tbl24 entry) or 2 (and the tbl8
    /// entry of its group).
    #[inline]
    pub fn lookup_counting(&self, addr: u32) -> (Option<NextHop>, usize) {
        loop {
            let s = self.seq.begin();
            let e = self.tbl24[(addr >> 8) as usize].load(Ordering::Acquire);
            if e & EXT == 0 {
                return (answer(e), 1);
            }
            let t = self.group_entry(e, addr).load(Ordering::Relaxed);
            if self.seq.validate(s) {
                return (answer(t), 2);
            }
        }
    }
}

impl Lpm4 for Dir24_8 {
    #[inline]
    fn lookup(&self, addr: u32) -> Option<NextHop> {
        self.lookup_counting(addr).0
    }

    fn lookup_batch(&self, addrs: &[u32], out: &mut [Option<NextHop>]) {
        assert!(out.len() >= addrs.len(), "output shorter than the batch");
        for (a, o) in addrs.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            self.lookup_chunk(a, o);
        }
    }

    fn lookup_batch_raw(&self, addrs: &mut [u32]) {
        for chunk in addrs.chunks_mut(CHUNK) {
            self.lookup_chunk_in_place(chunk);
        }
    }

    fn memory_bytes(&self) -> usize {
        TBL24_BYTES + self.groups_touched.load(Ordering::Relaxed) * GROUP_BYTES
    }

    fn name(&self) -> &'static str {
        "dir24-8"
    }
}

impl Lpm4Update for Dir24_8 {
    fn insert(&self, p: Prefix4, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        check_next_hop(nh)?;
        let p = Prefix4::new(p.addr, p.len);
        let len = p.len;
        let v = leaf(nh, len);
        let mut w = self.lock();
        let prev = w.rules[len as usize].get(&p.addr).copied();
        if len > 24 {
            let i = (p.addr >> 8) as usize;
            let lo = (p.addr & 0xff) as usize;
            let hi = lo + (1 << (32 - len));
            let e = self.tbl24[i].load(Ordering::Relaxed);
            if e & EXT == 0 {
                let Some(g) = w.pool.alloc(1, &self.seq) else {
                    return Err(self.bound_error(w.pool.live() + 1));
                };
                let base = (g as usize) << 8;
                for (k, x) in self.tbl8[base..base + GROUP_LEN].iter().enumerate() {
                    x.store(if (lo..hi).contains(&k) { v } else { e }, Ordering::Relaxed);
                }
                // Publication: the group is complete before it is linked.
                self.tbl24[i].store(EXT | g, Ordering::Release);
                let gi = g as usize;
                if w.group_rules.len() <= gi {
                    w.group_rules.resize(gi + 1, 0);
                }
                w.group_rules[gi] = 1;
                self.groups_touched
                    .store(w.pool.high_water(), Ordering::Relaxed);
            } else {
                let g = e & !EXT;
                self.rewrite_group(g, lo, hi, v, |t| depth(t) <= len);
                if prev.is_none() {
                    w.group_rules[g as usize] += 1;
                }
            }
        } else {
            let first = (p.addr >> 8) as usize;
            self.rewrite_range(first, 1 << (24 - len), v, |t| depth(t) <= len);
        }
        w.rules[len as usize].insert(p.addr, nh);
        if prev.is_none() {
            w.routes += 1;
            w.lens |= 1 << len;
            self.huge_pages_when_large(&mut w);
        }
        Ok(prev)
    }

    fn remove(&self, p: Prefix4) -> Result<Option<NextHop>, LpmError> {
        let p = Prefix4::new(p.addr, p.len);
        let len = p.len;
        let mut w = self.lock();
        let Some(old) = w.rules[len as usize].remove(&p.addr) else {
            return Ok(None);
        };
        w.routes -= 1;
        if w.rules[len as usize].is_empty() {
            w.lens &= !(1 << len);
        }
        let repl = w.covering(p.addr, len);
        // Entries `p` wrote: valid, with its length (no other prefix of
        // that length covers them).
        let owned = |t: u32| t & VALID != 0 && depth(t) == len;
        if len > 24 {
            let i = (p.addr >> 8) as usize;
            let lo = (p.addr & 0xff) as usize;
            let e = self.tbl24[i].load(Ordering::Relaxed);
            debug_assert!(e & EXT != 0, "a prefix longer than /24 has a group");
            let g = e & !EXT;
            self.rewrite_group(g, lo, lo + (1 << (32 - len)), repl, owned);
            w.group_rules[g as usize] -= 1;
            if w.group_rules[g as usize] == 0 {
                // Only prefixes up to /24 cover this /24 now: every entry
                // of the group holds the same leaf. Fold it back.
                let v = self.tbl8[(g as usize) << 8].load(Ordering::Relaxed);
                self.tbl24[i].store(v, Ordering::Release);
                w.pool.free(g, 1, &self.seq);
            }
        } else {
            let first = (p.addr >> 8) as usize;
            self.rewrite_range(first, 1 << (24 - len), repl, owned);
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

    fn ip(a: [u8; 4]) -> u32 {
        u32::from_be_bytes(a)
    }

    #[test]
    fn groups_are_made_and_folded() {
        let t = Dir24_8::new();
        t.insert(p([10, 0, 0, 0], 8), NextHop(1)).unwrap();
        t.insert(p([10, 1, 2, 128], 25), NextHop(2)).unwrap();
        assert_eq!(t.tbl8_groups(), 1);
        assert_eq!(t.lookup(ip([10, 1, 2, 200])), Some(NextHop(2)));
        assert_eq!(t.lookup(ip([10, 1, 2, 1])), Some(NextHop(1)));
        // A shorter prefix under the group does not hide the /25.
        t.insert(p([10, 1, 0, 0], 16), NextHop(3)).unwrap();
        assert_eq!(t.lookup(ip([10, 1, 2, 200])), Some(NextHop(2)));
        assert_eq!(t.lookup(ip([10, 1, 2, 1])), Some(NextHop(3)));
        assert_eq!(t.remove(p([10, 1, 2, 128], 25)), Ok(Some(NextHop(2))));
        assert_eq!(t.tbl8_groups(), 0);
        assert_eq!(t.lookup(ip([10, 1, 2, 200])), Some(NextHop(3)));
        assert_eq!(t.remove(p([10, 1, 0, 0], 16)), Ok(Some(NextHop(3))));
        assert_eq!(t.lookup(ip([10, 1, 2, 200])), Some(NextHop(1)));
        assert_eq!(t.route_count(), 1);
    }

    #[test]
    fn build_sweep_matches_inserts() {
        let routes = [
            (p([0, 0, 0, 0], 0), NextHop(9)),
            (p([10, 0, 0, 0], 8), NextHop(1)),
            (p([10, 1, 2, 0], 24), NextHop(2)),
            (p([10, 1, 2, 4], 30), NextHop(3)),
            (p([10, 1, 2, 5], 32), NextHop(4)),
            (p([10, 1, 3, 0], 25), NextHop(5)),
            (p([255, 255, 255, 255], 32), NextHop(6)),
        ];
        let t = Dir24_8::build(&routes, Dir24_8::DEFAULT_MEMORY_BOUND).unwrap();
        let u = Dir24_8::new();
        for &(q, nh) in &routes {
            u.insert(q, nh).unwrap();
        }
        for a in [
            ip([10, 1, 2, 4]),
            ip([10, 1, 2, 5]),
            ip([10, 1, 2, 6]),
            ip([10, 1, 2, 8]),
            ip([10, 1, 3, 1]),
            ip([10, 1, 3, 129]),
            ip([11, 0, 0, 0]),
            u32::MAX,
            u32::MAX - 1,
        ] {
            assert_eq!(t.lookup(a), u.lookup(a), "{a:#x}");
        }
        assert_eq!(t.lookup(ip([10, 1, 2, 5])), Some(NextHop(4)));
        assert_eq!(t.tbl8_groups(), 3);
        // The group counts let withdraws fold groups of a built table.
        t.remove(p([10, 1, 3, 0], 25)).unwrap();
        assert_eq!(t.tbl8_groups(), 2);
    }

    #[test]
    fn bound_is_enforced_with_numbers() {
        let t = Dir24_8::with_memory_bound(TBL24_BYTES + 2 * GROUP_BYTES).unwrap();
        t.insert(p([1, 0, 0, 0], 25), NextHop(1)).unwrap();
        t.insert(p([1, 0, 1, 0], 25), NextHop(1)).unwrap();
        let e = t.insert(p([1, 0, 2, 0], 25), NextHop(1)).unwrap_err();
        assert!(e.to_string().contains("3 tbl8 groups"), "{e}");
        assert_eq!(t.lookup(ip([1, 0, 2, 0])), None);
        // Freed groups are reused.
        t.remove(p([1, 0, 0, 0], 25)).unwrap();
        t.insert(p([1, 0, 2, 0], 25), NextHop(1)).unwrap();
        assert_eq!(t.lookup(ip([1, 0, 2, 0])), Some(NextHop(1)));
        let routes: Vec<_> = (0..3).map(|i| (p([2, 0, i, 0], 26), NextHop(1))).collect();
        let e = Dir24_8::build(&routes, TBL24_BYTES + 2 * GROUP_BYTES).unwrap_err();
        assert!(
            e.to_string().contains("needs 64.0 MiB (67111936 bytes"),
            "{e}"
        );
        assert!(Dir24_8::with_memory_bound(1 << 20).is_err());
    }

    /// Huge pages are asked for at `HUGE_TABLE` routes, built or added,
    /// and not before: a small table stays in 4 KiB pages.
    #[test]
    fn large_tables_ask_for_huge_pages() {
        let routes: Vec<_> = (0..HUGE_TABLE as u32)
            .map(|i| (Prefix4::new(0x0a00_0000 | i << 8, 24), NextHop(1)))
            .collect();
        let t = Dir24_8::build(&routes[1..], Dir24_8::DEFAULT_MEMORY_BOUND).unwrap();
        assert!(!t.lock().huge);
        t.insert(routes[0].0, NextHop(2)).unwrap();
        assert!(t.lock().huge);
        assert_eq!(t.lookup(0x0a00_0001), Some(NextHop(2)));
        let t = Dir24_8::build(&routes, Dir24_8::DEFAULT_MEMORY_BOUND).unwrap();
        assert!(t.lock().huge);
        assert_eq!(t.lookup(0x0a0f_ff01), Some(NextHop(1)));
    }
}
