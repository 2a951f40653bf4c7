//! IPv6 longest-prefix match: [`Poptrie6`], a Poptrie (Asai and Ohara,
//! "Poptrie: A Compressed Trie with Population Count for Fast and Scalable
//! Software IP Routing Table Lookup", SIGCOMM 2015) with a 20-bit direct
//! pointing array and 6-bit strides.
//!
//! # Why Poptrie
//!
//! An IPv6 table of 200K prefixes is mostly /48 (about half), /32, /40,
//! /44, /36 and /29, spread over a few RIR blocks of 2000::/3. Two
//! families of structures do LPM at this size:
//!
//! - *Expanded multibit tries* (DIR-24-8 carried on: `rte_lpm6`'s 24-bit
//!   table then 8-bit groups) look up in few accesses but each /48 under a
//!   different /40 gets its own 256-entry group: roughly a kilobyte per
//!   prefix, 100-200 MiB for 200K, and a structure that large misses cache
//!   at every level.
//! - *Hash tables per length* (Waldvogel's binary search on lengths) are
//!   compact but cost several hashes and probes per lookup.
//!
//! Poptrie keeps the multibit trie's few dependent loads and compresses
//! each node to a bitmap: a node holds a 64-bit `vector` (which of its 64
//! slots lead to a child node), a 64-bit `leafvec` (where a run of equal
//! leaves starts) and the base indexes of its children and of its leaves,
//! which sit contiguously in two arrays; a lookup finds the next index
//! with a population count. Leaves are pushed (each holds the final answer
//! for its range, so a lookup reads exactly one leaf) and runs of equal
//! leaves are stored once, and a region with one or two rules in it is
//! one node of 24 bytes with no leaves (a compact node, below). 200K
//! prefixes shaped like today's table ([`crate::gen`]) take 8.1 MiB, 4 of them the
//! direct pointing array, against 100 MiB and more for an expanded trie;
//! the hot upper levels stay in cache.
//!
//! The direct pointing array covers the first 20 bits (2^20 entries, 4
//! MiB, a leaf or the index of the node for that /20), chosen for the
//! length distribution: with 6-bit strides after it the levels end at /26,
//! /32, /38, /44, /50, so a /32 ends exactly at a level, and 20 + 18 x 6 =
//! 128 leaves no partial last stride.
//!
//! # Compact nodes
//!
//! Most /48s are alone in their /32 (often in their /26), and a plain
//! Poptrie reaches such a /48 through a chain of one-child nodes (/32,
//! /38, /44) and then a leaf: seven dependent loads counting the direct
//! pointing entry. Instead, a region (the region of any node: a /20, a
//! /26, ...) whose rules longer than itself come down to one or two that
//! show (a rule whose leaf equals the answer around it does not), at
//! most 41 bits deeper than the region together, is a *compact node*:
//! the same three words, with `vector` 0; the second word holds the
//! rules' lengths below the region and their two leaves (bit 0 clear,
//! which no normal node has: a normal node's slot 0 is a child or starts
//! a leaf run), the third their bits below the region and the region's
//! inherited leaf (leaves are 23 bits for this). A lookup that reaches
//! it compares the address's next bits with the longer rule's, then the
//! other's, and takes that leaf or the inherited one, without a leaf
//! load and without a branch (a single rule is stored with an empty
//! second one whose leaf is the inherited one). A /48 alone in its /26
//! is then three loads (direct entry, the /20's node, the compact node),
//! one alone in its /32 or with one other rule there four. On the
//! generated 200K table 85% of lookups of addresses inside its prefixes
//! end at a compact node and 80% take four loads or fewer, and the
//! table shrinks from 15.7 to 8.1 MiB. The writer keeps the invariant
//! on every change: a region left with one or two rules that show
//! becomes a compact node (its old subtree freed), a compact node given
//! another rule is rebuilt from the region's rules, and a region where
//! no rule shows is a leaf.
//!
//! A lookup is a chain of dependent loads that miss cache on a large
//! table, so [`Lpm6::lookup_batch`] interleaves 32 lookups, advancing each
//! by one load per pass after prefetching it (both cache lines of a node
//! that straddles two: two nodes in eight do) (about 2x the speed of one
//! lookup at a time). The population counts use the POPCNT instruction,
//! selected at run time, since the x86_64 baseline lacks it.
//!
//! # Updates
//!
//! Nodes are immutable once linked. A route change rebuilds the node that
//! holds the prefix (reusing every untouched slot's subtree as is) into
//! fresh blocks, and copies the path above it only as far as it must: a
//! node is three words, and when a rebuilt node keeps its `vector` and
//! `leafvec`, one atomic store of its third word (where its children and
//! leaves are, or a compact node's rule bits and inherited leaf)
//! publishes it in place; otherwise its parent is copied, up to
//! a new node for the /20 published with one Release store of the direct
//! pointing entry. Path copying, the RCU idiom: a lookup sees the whole old
//! path or the whole new one. Replaced blocks go to limbo and are reused
//! only after a reuse-sequence bump that lookups check (`src/mem.rs`);
//! lookups bound-check every index they follow, so a reused block can only
//! cause a retry. Prefixes of /20 or shorter rewrite the direct-pointing
//! entries they cover, one at a time, once the new content of every one
//! of them is built: the memory bound refuses such a change whole, and
//! it needs room for the new subtrees of all the entries it covers
//! beside the old ones. The writer keeps the rules in an
//! ordered map (the rules under a region, to rebuild it) and a hash map
//! (the rules covering a prefix).

#![deny(unsafe_code)]

use crate::mem::{prefetch, BlockPool, ReuseSeq, Zeroed, HUGE_TABLE};
use crate::prefix::{Answer, NextHop, Prefix6};
use crate::table::{check_next_hop, Lpm6, Lpm6Update, LpmError, RuleMap};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Bits resolved by the direct pointing array.
const DIR_BITS: u8 = 20;
const DIR_LEN: usize = 1 << DIR_BITS;
const DIR_BYTES: usize = DIR_LEN * 4;
const STRIDE: u8 = 6;
/// Direct-pointing entry: a node index rather than a leaf.
const NODE: u32 = 1 << 31;
/// A leaf is 23 bits (the valid bit and the next hop), so that compact
/// nodes hold leaves as they are.
const VALID: u32 = 1 << 22;
const NH_MASK: u32 = (1 << 22) - 1;
/// A node is three words: vector, leafvec, leaf base | child base << 32.
const NODE_WORDS: usize = 3;
const NODE_BYTES: usize = NODE_WORDS * 8;
const LEAF_BYTES: usize = 4;
/// Node levels below the direct pointing array.
const LEVELS: usize = (128 - DIR_BITS as usize) / STRIDE as usize;
/// Addresses resolved together by [`Lpm6::lookup_batch`].
const LANES: usize = 32;
/// The most bits below its region a compact node's rules may have
/// together: their patterns share the node's third word with a leaf.
const COMPACT_MAX: u8 = 41;
/// A region with at most this many rules is checked for a compact node
/// (its rules that show: some may repeat the answer around them).
const COMPACT_SCAN: usize = 4;
/// The bits of a leaf.
const LEAF_MASK: u64 = (1 << 23) - 1;

/// Prefetches both cache lines a node may straddle (a node is 24 bytes:
/// two in eight cross a line), so a lookup's next pass finds all three
/// words in cache.
#[inline(always)]
fn prefetch_node(w: &[AtomicU64; NODE_WORDS]) {
    prefetch(&w[0]);
    prefetch(&w[2]);
}

/// Whether a node's words are a compact node: a normal node's slot 0 is
/// a child (bit 0 of `vector`) or starts a leaf run (bit 0 of
/// `leafvec`); a compact node has both clear.
#[inline(always)]
fn is_compact(vector: u64, leafvec: u64) -> bool {
    (vector | leafvec) & 1 == 0
}

/// Whether the top `n` bits of `x` are 0 (all of them for `n` = 0).
#[inline(always)]
fn top_zero(x: u64, n: u64) -> bool {
    (x >> 1) >> (63 - n) == 0
}

/// The answer of a compact node (second and third words `info`,
/// `bits`) for `key`, the address shifted left by the node's region: the
/// first rule's leaf if its pattern matches, else the second's if its
/// pattern matches (an empty one always does), else the inherited leaf.
#[inline(always)]
fn compact_answer(info: u64, bits: u64, key: u128) -> u32 {
    let top = (key >> 64) as u64;
    let na = (info >> 2) & 63;
    let nb = (info >> 8) & 63;
    let b = std::hint::select_unpredictable(top_zero(top ^ bits << na, nb), info >> 37, bits);
    let e = std::hint::select_unpredictable(top_zero(top ^ bits, na), info >> 14, b);
    (e & LEAF_MASK) as u32
}

/// The words of a compact node for the region `/r` with the rules `x`
/// and `y` (address, length, leaf), `x` not shorter and longer than `r`,
/// at most [`COMPACT_MAX`] bits below `r` together, and `inherited`
/// elsewhere. A single rule is `x` with `y` empty (length `r`, leaf
/// `inherited`).
fn compact(r: u8, x: (u128, u8, u32), y: (u128, u8, u32), inherited: u32) -> [u64; 3] {
    let (na, nb) = (x.1 - r, y.1 - r);
    debug_assert!(na >= nb && na >= 1 && na + nb <= COMPACT_MAX);
    let bits = |a: u128, n: u8| ((a << r) >> 64) as u64 & !(u64::MAX >> n);
    [
        0,
        (na as u64) << 2 | (nb as u64) << 8 | (x.2 as u64) << 14 | (y.2 as u64) << 37,
        bits(x.0, na) | bits(y.0, nb) >> na | inherited as u64,
    ]
}

#[inline(always)]
fn leaf(nh: NextHop) -> u32 {
    VALID | nh.0
}

#[inline(always)]
fn answer(l: u32) -> Option<NextHop> {
    (l & VALID != 0).then_some(NextHop(l & NH_MASK))
}

/// The slot of `addr` in a node whose region is `r` bits long.
#[inline(always)]
fn chunk(addr: u128, r: u8) -> usize {
    ((addr >> (128 - r - STRIDE)) & 63) as usize
}

fn has_popcnt() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("popcnt");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Bits `0..=v` of a word.
#[inline(always)]
fn upto(v: usize) -> u64 {
    u64::MAX >> (63 - v)
}

/// `63 - v` for the slot `v` in the top six bits of `key`: how far to
/// shift a node's bitmap left so that bit `v` is its top bit and bits
/// above `v` fall off (one shift, no mask).
#[inline(always)]
fn rest(key: u128) -> u32 {
    (!((key >> 64) as u64) >> (64 - STRIDE)) as u32
}

/// The child of slot `63 - sh` counted from 0, if the slot has one: the
/// set bits of `vector` below it.
#[inline(always)]
fn child_rank(vector: u64, sh: u32) -> Option<u32> {
    let s = vector << sh;
    ((s as i64) < 0).then(|| s.count_ones() - 1)
}

/// The leaf index of slot `63 - sh` of a node with `leafvec` and `bases`:
/// the last run that starts at or before the slot.
#[inline(always)]
fn leaf_index(leafvec: u64, bases: u64, sh: u32) -> usize {
    (bases as u32 as usize)
        .wrapping_add((leafvec << sh).count_ones() as usize)
        .wrapping_sub(1)
}

/// A slot of a node while the writer builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The answer for the whole slot.
    Leaf(u32),
    /// A child node: its three words.
    Node([u64; 3]),
}

/// What rebuilding a region produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The region's node (or leaf) is unchanged where its parent holds
    /// it; whatever changed below was published in place.
    Same,
    /// New content for the region, not yet linked.
    New(Slot),
}

/// The route change being applied: the prefix, and the rules that cover
/// it (and it, if present), shortest first.
struct Change<'a> {
    p: Prefix6,
    chain: &'a [(u8, u32)],
}

/// The `vector` and `leafvec` a node of these slots has.
fn shape(slots: &[Slot; 64]) -> (u64, u64) {
    let (mut vector, mut leafvec, mut last) = (0u64, 0u64, None);
    for (v, s) in slots.iter().enumerate() {
        match *s {
            Slot::Node(_) => vector |= 1 << v,
            Slot::Leaf(l) => {
                if last != Some(l) {
                    leafvec |= 1 << v;
                    last = Some(l);
                }
            }
        }
    }
    (vector, leafvec)
}

/// The Poptrie; see the module doc. Share it with an `Arc`: lookups and
/// updates both take `&self`.
pub struct Poptrie6 {
    dir: Zeroed<[AtomicU32]>,
    nodes: Zeroed<[AtomicU64]>,
    leaves: Zeroed<[AtomicU32]>,
    seq: ReuseSeq,
    bound: usize,
    touched: AtomicUsize,
    /// The CPU has POPCNT (see [`Poptrie6::lookup_one_popcnt`]).
    popcnt: bool,
    writer: Mutex<Writer>,
}

struct Writer {
    /// Ordered, for the rules under a region.
    rules: BTreeMap<(u128, u8), NextHop>,
    /// The same rules, for probing one prefix.
    exact: RuleMap<(u128, u8)>,
    per_len: [u32; 129],
    nodes: BlockPool,
    leaves: BlockPool,
    /// Blocks written by the update in progress (freed if it fails) and
    /// blocks it replaces (freed once it is published): (is_node, start,
    /// size).
    made: Vec<(bool, u32, usize)>,
    replaced: Vec<(bool, u32, usize)>,
    /// Whether the arrays were asked to use huge pages (at
    /// [`HUGE_TABLE`] rules).
    huge: bool,
}

impl Writer {
    /// The longest rule with length in `lo..=hi` that covers `addr`, as a
    /// leaf with its length.
    fn best(&self, addr: u128, lo: u8, hi: u8) -> Option<(u8, u32)> {
        (lo..=hi).rev().find_map(|l| {
            if self.per_len[l as usize] == 0 {
                return None;
            }
            self.exact
                .get(&(addr & Prefix6::mask(l), l))
                .map(|&nh| (l, leaf(nh)))
        })
    }

    /// Rules strictly inside the region `addr/r` (longer than `r`), in
    /// (address, length) order.
    fn under(&self, addr: u128, r: u8) -> Vec<(u128, u8, u32)> {
        if r >= 128 {
            return Vec::new();
        }
        let last = addr | !Prefix6::mask(r);
        self.rules
            .range((addr, r + 1)..=(last, 128))
            .map(|(&(a, l), &nh)| (a, l, leaf(nh)))
            .collect()
    }
}

impl std::fmt::Debug for Poptrie6 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Poptrie6")
            .field("memory_bytes", &self.memory_bytes())
            .field("bound", &self.bound)
            .finish_non_exhaustive()
    }
}

impl Default for Poptrie6 {
    fn default() -> Self {
        Poptrie6::new()
    }
}

impl Poptrie6 {
    /// The memory bound of [`Poptrie6::new`]: 256 MiB (200K prefixes shaped
    /// like today's table take about 16 MiB).
    pub const DEFAULT_MEMORY_BOUND: usize = 256 << 20;

    /// An empty table with the default bound.
    pub fn new() -> Poptrie6 {
        Poptrie6::with_memory_bound(Self::DEFAULT_MEMORY_BOUND).expect("default bound fits")
    }

    /// An empty table that refuses to grow past `bound` bytes.
    pub fn with_memory_bound(bound: usize) -> Result<Poptrie6, LpmError> {
        if bound < DIR_BYTES {
            return Err(LpmError::MemoryBound {
                algorithm: "poptrie6",
                needed: DIR_BYTES,
                bound,
                detail: "the direct pointing array alone takes 4 MiB".into(),
            });
        }
        let rest = bound - DIR_BYTES;
        // Both arenas are reserved for the whole budget (address space,
        // not memory); the budget is enforced on what they use together.
        let node_cap = (rest / NODE_BYTES).min(u32::MAX as usize);
        let leaf_cap = (rest / LEAF_BYTES).min(u32::MAX as usize);
        let dir = Zeroed::huge_slice(DIR_LEN);
        let nodes = Zeroed::huge_slice(node_cap * NODE_WORDS);
        let leaves = Zeroed::huge_slice(leaf_cap);
        Ok(Poptrie6 {
            dir,
            nodes,
            leaves,
            seq: ReuseSeq::default(),
            bound,
            touched: AtomicUsize::new(0),
            popcnt: has_popcnt(),
            writer: Mutex::new(Writer {
                rules: BTreeMap::new(),
                exact: RuleMap::default(),
                per_len: [0; 129],
                nodes: BlockPool::new(node_cap, 64),
                leaves: BlockPool::new(leaf_cap, 64),
                made: Vec::new(),
                replaced: Vec::new(),
                huge: false,
            }),
        })
    }

    /// A table of `routes` within `bound` bytes (a prefix given twice
    /// keeps its last next hop), built bottom-up in one pass over the
    /// sorted prefixes.
    pub fn build(routes: &[(Prefix6, NextHop)], bound: usize) -> Result<Poptrie6, LpmError> {
        let t = Poptrie6::with_memory_bound(bound)?;
        {
            let mut w = t.lock();
            for &(p, nh) in routes {
                check_next_hop(nh)?;
                let p = Prefix6::new(p.addr, p.len);
                if w.rules.insert((p.addr, p.len), nh).is_none() {
                    w.per_len[p.len as usize] += 1;
                }
                w.exact.insert((p.addr, p.len), nh);
            }
            t.huge_pages_when_large(&mut w);
            let all: Vec<(u128, u8, u32)> = w
                .rules
                .iter()
                .map(|(&(a, l), &nh)| (a, l, leaf(nh)))
                .collect();
            // Direct pointing: paint the short prefixes, parents first.
            let mut top = vec![0u32; DIR_LEN];
            for &(a, l, v) in all.iter().filter(|r| r.1 <= DIR_BITS) {
                let first = (a >> (128 - DIR_BITS)) as usize;
                top[first..first + (1 << (DIR_BITS - l))].fill(v);
            }
            let deep: Vec<(u128, u8, u32)> = all.into_iter().filter(|r| r.1 > DIR_BITS).collect();
            let mut i = 0;
            let mut result = Ok(());
            while i < deep.len() {
                let d = (deep[i].0 >> (128 - DIR_BITS)) as usize;
                let mut e = i;
                while e < deep.len() && (deep[e].0 >> (128 - DIR_BITS)) as usize == d {
                    e += 1;
                }
                let region = (d as u128) << (128 - DIR_BITS);
                match t.build_fresh(&mut w, &deep[i..e], region, DIR_BITS, top[d]) {
                    Ok(Slot::Leaf(v)) => top[d] = v,
                    Ok(Slot::Node(desc)) => match t.store_top(&mut w, desc) {
                        Ok(b) => top[d] = NODE | b,
                        Err(err) => result = Err(err),
                    },
                    Err(err) => result = Err(err),
                }
                if result.is_err() {
                    break;
                }
                i = e;
            }
            result?;
            w.made.clear();
            // The array is zero: a small table touches only its entries.
            for (x, &v) in t.dir.iter().zip(&top) {
                if v != 0 {
                    x.store(v, Ordering::Relaxed);
                }
            }
        }
        Ok(t)
    }

    /// Asks for huge pages once the table holds [`HUGE_TABLE`] rules.
    fn huge_pages_when_large(&self, w: &mut Writer) {
        if !w.huge && w.rules.len() >= HUGE_TABLE {
            w.huge = true;
            self.dir.use_huge_pages();
            self.nodes.use_huge_pages();
            self.leaves.use_huge_pages();
        }
    }

    /// The configured memory bound.
    pub fn memory_bound(&self) -> usize {
        self.bound
    }

    /// Nodes and leaves in use.
    pub fn node_and_leaf_count(&self) -> (usize, usize) {
        let w = self.lock();
        (w.nodes.live(), w.leaves.live())
    }

    fn lock(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The node arena as whole nodes: one bounds check per node.
    #[inline(always)]
    fn node_slice(&self) -> &[[AtomicU64; NODE_WORDS]] {
        self.nodes.as_chunks::<NODE_WORDS>().0
    }

    /// Follows node `n` down for `addr` to its leaf; `None` if an index
    /// leads outside the arenas (a block reused under the lookup). The
    /// address is shifted left as levels are consumed, so each slot is
    /// the top six bits: a constant shift instead of a variable one.
    #[inline(always)]
    fn walk(&self, mut n: u32, addr: u128) -> Option<u32> {
        let nodes = self.node_slice();
        let mut key = addr << DIR_BITS;
        for _ in 0..LEVELS {
            let w = nodes.get(n as usize)?;
            let vector = w[0].load(Ordering::Relaxed);
            let bases = w[2].load(Ordering::Relaxed);
            let sh = rest(key);
            if let Some(rank) = child_rank(vector, sh) {
                n = ((bases >> 32) as u32).wrapping_add(rank);
                key <<= STRIDE;
            } else {
                let leafvec = w[1].load(Ordering::Relaxed);
                if is_compact(vector, leafvec) {
                    return Some(compact_answer(leafvec, bases, key));
                }
                let i = leaf_index(leafvec, bases, sh);
                return self.leaves.get(i).map(|l| l.load(Ordering::Relaxed));
            }
        }
        None
    }

    #[inline(always)]
    fn lookup_one(&self, addr: u128) -> Option<NextHop> {
        loop {
            let s = self.seq.begin();
            let d = self.dir[(addr >> (128 - DIR_BITS)) as usize].load(Ordering::Acquire);
            if d & NODE == 0 {
                return answer(d);
            }
            let l = self.walk(d & !NODE, addr);
            if let (Some(l), true) = (l, self.seq.validate(s)) {
                return answer(l);
            }
        }
    }

    /// [`Poptrie6::lookup_one`] compiled with the POPCNT instruction (the
    /// x86_64 baseline lacks it, and without it a population count is a
    /// dozen instructions).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn lookup_one_popcnt(&self, addr: u128) -> Option<NextHop> {
        self.lookup_one(addr)
    }

    /// [`Poptrie6::lookup_one`] without POPCNT, out of line: inlined into
    /// [`Lpm6::lookup`], its registers were saved and restored there
    /// around the jump to the POPCNT walk too, 19 instructions a lookup
    /// that only the CPUs without POPCNT need.
    #[inline(never)]
    fn lookup_one_plain(&self, addr: u128) -> Option<NextHop> {
        self.lookup_one(addr)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn lookup_lanes_popcnt<A: Answer>(&self, addrs: &[u128], out: &mut [A]) {
        self.lookup_lanes(addrs, out)
    }

    /// [`Lpm6::lookup`] out of line: the batch loop's own registers and
    /// frame stay as the lanes need them.
    #[inline(never)]
    fn lookup_apart(&self, addr: u128) -> Option<NextHop> {
        Lpm6::lookup(self, addr)
    }

    /// The three words of node `n`.
    fn read_node(&self, n: u32) -> [u64; 3] {
        let b = n as usize * NODE_WORDS;
        [0, 1, 2].map(|k| self.nodes[b + k].load(Ordering::Relaxed))
    }

    /// Slot `v` of a node.
    fn slot(&self, [vector, leafvec, bases]: [u64; 3], v: usize) -> Slot {
        debug_assert!(!is_compact(vector, leafvec));
        if vector & (1 << v) != 0 {
            Slot::Node(self.read_node((bases >> 32) as u32 + (vector & upto(v)).count_ones() - 1))
        } else {
            let i = bases as u32 as usize + (leafvec & upto(v)).count_ones() as usize - 1;
            Slot::Leaf(self.leaves[i].load(Ordering::Relaxed))
        }
    }

    /// The 64 slots of a node.
    fn decode(&self, desc: [u64; 3]) -> [Slot; 64] {
        let [vector, leafvec, bases] = desc;
        debug_assert!(!is_compact(vector, leafvec));
        let mut child = (bases >> 32) as u32;
        // The leaf of a slot is the last run that starts at or before it.
        let mut leaf_at = (bases as u32 as usize).wrapping_sub(1);
        let mut leaf = 0;
        std::array::from_fn(|v| {
            if vector & (1 << v) != 0 {
                child += 1;
                Slot::Node(self.read_node(child - 1))
            } else {
                if leafvec & (1 << v) != 0 {
                    leaf_at = leaf_at.wrapping_add(1);
                    leaf = self.leaves[leaf_at].load(Ordering::Relaxed);
                }
                Slot::Leaf(leaf)
            }
        })
    }

    fn alloc(&self, w: &mut Writer, is_node: bool, size: usize) -> Result<u32, LpmError> {
        let (nh, lh) = (w.nodes.high_water(), w.leaves.high_water());
        let used = DIR_BYTES + nh * NODE_BYTES + lh * LEAF_BYTES;
        let left = self.bound.saturating_sub(used);
        let got = if is_node {
            w.nodes
                .alloc_limited(size, &self.seq, nh + left / NODE_BYTES)
        } else {
            w.leaves
                .alloc_limited(size, &self.seq, lh + left / LEAF_BYTES)
        };
        let Some(b) = got else {
            let unit = if is_node { NODE_BYTES } else { LEAF_BYTES };
            return Err(LpmError::MemoryBound {
                algorithm: "poptrie6",
                needed: used + size * unit,
                bound: self.bound,
                detail: format!(
                    "4 MiB direct pointing + {} nodes of 24 bytes + {} leaves of 4 bytes, \
                     and {} more {}",
                    nh,
                    lh,
                    size,
                    if is_node { "nodes" } else { "leaves" }
                ),
            });
        };
        w.made.push((is_node, b, size));
        self.touched.store(
            DIR_BYTES + w.nodes.high_water() * NODE_BYTES + w.leaves.high_water() * LEAF_BYTES,
            Ordering::Relaxed,
        );
        Ok(b)
    }

    /// Writes a node from its slots, or returns the one leaf when all
    /// slots are the same leaf (the region then needs no node).
    fn assemble(&self, w: &mut Writer, slots: &[Slot; 64]) -> Result<Slot, LpmError> {
        if let Slot::Leaf(first) = slots[0] {
            if slots.iter().all(|s| *s == Slot::Leaf(first)) {
                return Ok(Slot::Leaf(first));
            }
        }
        let mut vector = 0u64;
        let mut leafvec = 0u64;
        let mut children = [[0u64; 3]; 64];
        let mut runs = [0u32; 64];
        let (mut nc, mut nr) = (0, 0);
        for (v, s) in slots.iter().enumerate() {
            match *s {
                Slot::Node(d) => {
                    vector |= 1 << v;
                    children[nc] = d;
                    nc += 1;
                }
                Slot::Leaf(l) => {
                    if nr == 0 || runs[nr - 1] != l {
                        leafvec |= 1 << v;
                        runs[nr] = l;
                        nr += 1;
                    }
                }
            }
        }
        let mut cbase = 0;
        if nc > 0 {
            cbase = self.alloc(w, true, nc)?;
            let b = cbase as usize * NODE_WORDS;
            for (x, &y) in self.nodes[b..b + nc * NODE_WORDS]
                .iter()
                .zip(children[..nc].iter().flatten())
            {
                x.store(y, Ordering::Relaxed);
            }
        }
        let mut lbase = 0;
        if nr > 0 {
            lbase = self.alloc(w, false, nr)?;
            for (x, &l) in self.leaves[lbase as usize..].iter().zip(&runs[..nr]) {
                x.store(l, Ordering::Relaxed);
            }
        }
        Ok(Slot::Node([
            vector,
            leafvec,
            lbase as u64 | (cbase as u64) << 32,
        ]))
    }

    /// Builds the region `region/r` from scratch: `rules` are the rules
    /// under it in (address, length) order (rules not longer than `r` are
    /// ignored) and `inherited` the answer where none of them applies.
    fn build_fresh(
        &self,
        w: &mut Writer,
        rules: &[(u128, u8, u32)],
        region: u128,
        r: u8,
        inherited: u32,
    ) -> Result<Slot, LpmError> {
        let mut longer = rules.iter().filter(|x| x.1 > r).copied();
        let few: Vec<(u128, u8, u32)> = longer.by_ref().take(COMPACT_SCAN).collect();
        if few.is_empty() {
            return Ok(Slot::Leaf(inherited));
        }
        if longer.next().is_none() {
            if let Some(s) = Self::compact_slot(r, &few, inherited) {
                return Ok(s);
            }
        }
        let mut paint = [inherited; 64];
        for &(a, l, v) in rules.iter().filter(|x| x.1 > r && x.1 <= r + STRIDE) {
            let first = chunk(a, r);
            paint[first..first + (1 << (r + STRIDE - l))].fill(v);
        }
        let mut slots = paint.map(Slot::Leaf);
        let mut i = 0;
        while i < rules.len() {
            let v = chunk(rules[i].0, r);
            let mut e = i;
            let mut deep = false;
            while e < rules.len() && chunk(rules[e].0, r) == v {
                deep |= rules[e].1 > r + STRIDE;
                e += 1;
            }
            if deep {
                let sub = region | (v as u128) << (128 - r - STRIDE);
                slots[v] = self.build_fresh(w, &rules[i..e], sub, r + STRIDE, paint[v])?;
            }
            i = e;
        }
        self.assemble(w, &slots)
    }

    /// The content of the region `/r` whose rules (longer than `r`, in
    /// (address, length) order) are `rules`: the inherited leaf when
    /// none of them shows (each answers what the region would answer
    /// without it), else a compact node for the one or two that show; `None` when more show or they are too deep for one node.
    fn compact_slot(r: u8, rules: &[(u128, u8, u32)], inherited: u32) -> Option<Slot> {
        // A rule shows when its leaf differs from that of the longest
        // other rule covering it (or the inherited one); dropping every
        // rule that does not show changes no answer.
        let shown: Vec<(u128, u8, u32)> = rules
            .iter()
            .filter(|&&(a, l, v)| {
                let cover = rules
                    .iter()
                    .filter(|c| c.1 < l && a & Prefix6::mask(c.1) == c.0)
                    .max_by_key(|c| c.1)
                    .map_or(inherited, |c| c.2);
                v != cover
            })
            .copied()
            .collect();
        match *shown.as_slice() {
            [] => Some(Slot::Leaf(inherited)),
            [x] => (x.1 - r <= COMPACT_MAX)
                .then(|| Slot::Node(compact(r, x, (0, r, inherited), inherited))),
            [x, y] => {
                let (x, y) = if x.1 >= y.1 { (x, y) } else { (y, x) };
                (x.1 - r + y.1 - r <= COMPACT_MAX).then(|| Slot::Node(compact(r, x, y, inherited)))
            }
            _ => None,
        }
    }

    /// Rebuilds the region `region/r`, which contains the changed prefix
    /// (longer than `r`), from its old content (`old`: a node, or a leaf
    /// for the whole region): only slots the change touches are rebuilt,
    /// the others keep their leaf or child subtree.
    ///
    /// Path copying stops as low as it can. A node is three words, so a
    /// changed node normally needs a new copy of its parent's children
    /// block; but when its `vector` and `leafvec` stay the same, only its
    /// third word (where its own children and leaves are) changes, and one
    /// atomic store of that word in place publishes the new blocks: a
    /// reader combines the unchanged words with the old or the new third
    /// word, both consistent. Likewise leaves whose runs do not move are
    /// stored in place. Such a level returns [`Outcome::Same`], and the
    /// levels above it are not copied.
    fn rebuild(
        &self,
        w: &mut Writer,
        region: u128,
        r: u8,
        inherited: u32,
        old: Slot,
        ch: &Change<'_>,
    ) -> Result<Outcome, LpmError> {
        let p = ch.p;
        // A region left with one or two rules that show becomes a compact
        // node (the old subtree goes whole); a compact node that gets
        // another rule is rebuilt from the rules (at most five).
        let last = region | !Prefix6::mask(r);
        let mut range = w.rules.range((region, r + 1)..=(last, 128));
        let few: Vec<(u128, u8, u32)> = range
            .by_ref()
            .take(COMPACT_SCAN)
            .map(|(&(a, l), &nh)| (a, l, leaf(nh)))
            .collect();
        let compact_new = match range.next() {
            None => Self::compact_slot(r, &few, inherited),
            Some(_) => None,
        };
        if let Some(new) = compact_new {
            if new == old {
                return Ok(Outcome::Same);
            }
            if let Slot::Node(d) = old {
                self.retire(w, d);
            }
            return Ok(Outcome::New(new));
        }
        if let Slot::Node(d) = old {
            if is_compact(d[0], d[1]) {
                let under = w.under(region, r);
                let new = self.build_fresh(w, &under, region, r, inherited)?;
                return Ok(if new == old {
                    Outcome::Same
                } else {
                    Outcome::New(new)
                });
            }
        }
        let decode = |old: Slot| match old {
            Slot::Node(desc) => self.decode(desc),
            leaf @ Slot::Leaf(_) => [leaf; 64],
        };
        let first = chunk(p.addr, r);
        let slot_len = r + STRIDE;
        // The longest rule of the chain (rules covering `p`, up to `p`
        // itself) with a length in `lo..=hi`.
        let from_chain = |lo: u8, hi: u8| ch.chain.iter().rev().find(|c| c.0 >= lo && c.0 <= hi);
        if p.len <= slot_len {
            let old_slots = decode(old);
            let mut slots = old_slots;
            let shared = from_chain(r + 1, p.len).map_or(inherited, |c| c.1);
            // The slots `p` spans take `shared` or the answer of a longer
            // rule inside `p`; rules too long for this level get subtrees.
            let span = 1usize << (slot_len - p.len);
            let mut value = [shared; 64];
            let under = w.under(p.addr, p.len);
            for &(a, l, x) in under.iter().filter(|u| u.1 <= slot_len) {
                let v = chunk(a, r);
                value[v..v + (1 << (slot_len - l))].fill(x);
            }
            let mut k = 0;
            for v in first..first + span {
                let a = region | (v as u128) << (128 - slot_len);
                let lo = k;
                while k < under.len() && chunk(under[k].0, r) == v {
                    k += 1;
                }
                let deep = &under[lo..k];
                if !deep.iter().any(|u| u.1 > slot_len) && slots[v] == Slot::Leaf(value[v]) {
                    continue;
                }
                if let Slot::Node(d) = slots[v] {
                    self.retire(w, d);
                }
                slots[v] = self.build_fresh(w, deep, a, slot_len, value[v])?;
            }
            self.assemble_over(w, &slots, old, &old_slots)
        } else {
            // Down the path, only the slot holding `p` is read; the whole
            // node is decoded only if it has to be copied.
            let a = region | (first as u128) << (128 - slot_len);
            let value = from_chain(r + 1, slot_len).map_or(inherited, |c| c.1);
            let child = match old {
                Slot::Node(desc) => self.slot(desc, first),
                leaf @ Slot::Leaf(_) => leaf,
            };
            match self.rebuild(w, a, slot_len, value, child, ch)? {
                Outcome::Same => Ok(Outcome::Same),
                Outcome::New(new) => {
                    if let (Slot::Node(o), Slot::Node(n), Slot::Node(me)) = (child, new, old) {
                        if o[0] == n[0] && o[1] == n[1] {
                            // The child keeps its shape: swap its third
                            // word where it sits in this node's children.
                            let rank = (me[0] & upto(first)).count_ones() - 1;
                            let at = ((me[2] >> 32) as u32 + rank) as usize * NODE_WORDS + 2;
                            self.nodes[at].store(n[2], Ordering::Release);
                            return Ok(Outcome::Same);
                        }
                    }
                    let old_slots = decode(old);
                    let mut slots = old_slots;
                    slots[first] = new;
                    self.assemble_over(w, &slots, old, &old_slots)
                }
            }
        }
    }

    /// Like [`Poptrie6::assemble`] for a node that replaces `old`: returns
    /// [`Outcome::Same`] when `old` already is `slots`, after storing in
    /// place the leaves that changed without moving a run; otherwise
    /// schedules `old`'s blocks for freeing and writes a new node.
    fn assemble_over(
        &self,
        w: &mut Writer,
        slots: &[Slot; 64],
        old: Slot,
        old_slots: &[Slot; 64],
    ) -> Result<Outcome, LpmError> {
        if let Slot::Node(d) = old {
            let (vector, leafvec) = shape(slots);
            let same_children = slots
                .iter()
                .zip(old_slots)
                .all(|(n, o)| !matches!(n, Slot::Node(_)) || n == o);
            if vector == d[0] && leafvec == d[1] && same_children {
                let mut at = (d[2] as u32 as usize).wrapping_sub(1);
                for (v, s) in slots.iter().enumerate() {
                    if leafvec & (1 << v) != 0 {
                        at = at.wrapping_add(1);
                        if let Slot::Leaf(l) = *s {
                            if self.leaves[at].load(Ordering::Relaxed) != l {
                                self.leaves[at].store(l, Ordering::Release);
                            }
                        }
                    }
                }
                return Ok(Outcome::Same);
            }
            self.retire_blocks(w, d);
        } else if slots.iter().all(|s| *s == old) {
            return Ok(Outcome::Same);
        }
        self.assemble(w, slots).map(Outcome::New)
    }

    /// Schedules the blocks of a replaced node (not its children) for
    /// freeing once the update is published.
    fn retire_blocks(&self, w: &mut Writer, [vector, leafvec, bases]: [u64; 3]) {
        if is_compact(vector, leafvec) {
            return;
        }
        if vector != 0 {
            w.replaced
                .push((true, (bases >> 32) as u32, vector.count_ones() as usize));
        }
        if leafvec != 0 {
            w.replaced
                .push((false, bases as u32, leafvec.count_ones() as usize));
        }
    }

    /// Schedules a replaced node and its whole subtree for freeing.
    fn retire(&self, w: &mut Writer, desc: [u64; 3]) {
        if is_compact(desc[0], desc[1]) {
            return;
        }
        for s in self.decode(desc) {
            if let Slot::Node(d) = s {
                self.retire(w, d);
            }
        }
        self.retire_blocks(w, desc);
    }

    /// Writes the node for a /20 into a block of its own; returns it.
    fn store_top(&self, w: &mut Writer, desc: [u64; 3]) -> Result<u32, LpmError> {
        let b = self.alloc(w, true, 1)?;
        for (x, &y) in self.nodes[b as usize * NODE_WORDS..].iter().zip(&desc) {
            x.store(y, Ordering::Relaxed);
        }
        Ok(b)
    }

    /// The direct-pointing entry for `new`, its node (if any) written.
    fn top_value(&self, w: &mut Writer, new: Slot) -> Result<u32, LpmError> {
        Ok(match new {
            Slot::Leaf(v) => v,
            Slot::Node(desc) => NODE | self.store_top(w, desc)?,
        })
    }

    /// Publishes `new` as the content of direct-pointing entry `d`.
    fn publish(&self, w: &mut Writer, d: usize, new: Slot) -> Result<(), LpmError> {
        let old = self.dir[d].load(Ordering::Relaxed);
        let value = self.top_value(w, new)?;
        self.dir[d].store(value, Ordering::Release);
        if old & NODE != 0 {
            w.replaced.push((true, old & !NODE, 1));
        }
        Ok(())
    }

    /// Brings the structure in line with the rule store after the route
    /// `p` changed there.
    fn apply(&self, w: &mut Writer, p: Prefix6) -> Result<(), LpmError> {
        let top_of = |d: usize| (d as u128) << (128 - DIR_BITS);
        if p.len <= DIR_BITS {
            // One pass over the rules under `p`: paint the direct-pointing
            // entries it spans with the prefixes of /20 or shorter (with
            // their lengths), and group the longer ones by entry.
            let first = (p.addr >> (128 - DIR_BITS)) as usize;
            let n = 1usize << (DIR_BITS - p.len);
            let (l0, v0) = w.best(p.addr, 0, p.len).unwrap_or((0, 0));
            let mut paint = vec![(l0, v0); n];
            let last = p.addr | !Prefix6::mask(p.len);
            let under: Vec<(u128, u8, u32)> = w
                .rules
                .range((p.addr, p.len + 1)..=(last, 128))
                .map(|(&(a, l), &nh)| (a, l, leaf(nh)))
                .collect();
            for &(a, l, v) in under.iter().filter(|r| r.1 <= DIR_BITS) {
                let i = (a >> (128 - DIR_BITS)) as usize - first;
                paint[i..i + (1 << (DIR_BITS - l))].fill((l, v));
            }
            // Every entry's new content is built before any is published,
            // so a failure (the memory bound) leaves them all as they were.
            // (Publishing each entry as it was built, and rebuilding the
            // published ones from the restored rules after a failure, could
            // fail again: the memory they gave back waits in limbo.) At
            // most one store per entry: 2^20 for ::/0.
            let mut stores: Vec<(usize, u32)> = Vec::new();
            let mut k = 0;
            for (i, &(l, value)) in paint.iter().enumerate() {
                let d = first + i;
                let lo = k;
                while k < under.len() && (under[k].0 >> (128 - DIR_BITS)) as usize == d {
                    k += 1;
                }
                if l > p.len {
                    // A longer prefix covers this /20: `p` does not show.
                    continue;
                }
                let old = self.dir[d].load(Ordering::Relaxed);
                let deep = under[lo..k].iter().any(|r| r.1 > DIR_BITS);
                if old & NODE == 0 && !deep {
                    if old != value {
                        stores.push((d, value));
                    }
                    continue;
                }
                if old & NODE != 0 {
                    self.retire(w, self.read_node(old & !NODE));
                    w.replaced.push((true, old & !NODE, 1));
                }
                let new = self.build_fresh(w, &under[lo..k], top_of(d), DIR_BITS, value)?;
                stores.push((d, self.top_value(w, new)?));
            }
            for (d, v) in stores {
                self.dir[d].store(v, Ordering::Release);
            }
        } else {
            let d = (p.addr >> (128 - DIR_BITS)) as usize;
            let a = top_of(d);
            // The rules that cover `p` (and `p`), shortest first: every
            // level on its path takes its inherited answer from them.
            let chain: Vec<(u8, u32)> = (0..=p.len)
                .filter(|&l| w.per_len[l as usize] > 0)
                .filter_map(|l| {
                    w.exact
                        .get(&(p.addr & Prefix6::mask(l), l))
                        .map(|&nh| (l, leaf(nh)))
                })
                .collect();
            let value = chain
                .iter()
                .rev()
                .find(|c| c.0 <= DIR_BITS)
                .map_or(0, |c| c.1);
            let old = self.dir[d].load(Ordering::Relaxed);
            let old = if old & NODE != 0 {
                Slot::Node(self.read_node(old & !NODE))
            } else {
                Slot::Leaf(old)
            };
            let ch = Change { p, chain: &chain };
            match self.rebuild(w, a, DIR_BITS, value, old, &ch)? {
                Outcome::Same => {}
                Outcome::New(Slot::Node(n)) if matches!(old, Slot::Node(o) if o[0] == n[0] && o[1] == n[1]) =>
                {
                    // Same shape: swap the third word of the /20's node.
                    let b = (self.dir[d].load(Ordering::Relaxed) & !NODE) as usize;
                    self.nodes[b * NODE_WORDS + 2].store(n[2], Ordering::Release);
                }
                Outcome::New(new) => self.publish(w, d, new)?,
            }
        }
        Ok(())
    }

    /// Frees the blocks the published change replaced and forgets the
    /// blocks it wrote (they are linked now).
    fn settle(&self, w: &mut Writer) {
        for (is_node, b, size) in std::mem::take(&mut w.replaced) {
            self.free(w, is_node, b, size);
        }
        w.made.clear();
    }

    /// Runs `apply` for a rule-store change. On failure nothing of it was
    /// published (`apply` builds everything before it links anything):
    /// the blocks it wrote are freed, the blocks it meant to replace are
    /// kept, and `undo` restores the rule store.
    fn commit(
        &self,
        w: &mut Writer,
        p: Prefix6,
        undo: impl FnOnce(&mut Writer),
    ) -> Result<(), LpmError> {
        match self.apply(w, p) {
            Ok(()) => {
                self.settle(w);
                Ok(())
            }
            Err(e) => {
                w.replaced.clear();
                for (is_node, b, size) in std::mem::take(&mut w.made) {
                    self.free(w, is_node, b, size);
                }
                undo(w);
                Err(e)
            }
        }
    }

    fn free(&self, w: &mut Writer, is_node: bool, b: u32, size: usize) {
        if is_node {
            w.nodes.free(b, size, &self.seq);
        } else {
            w.leaves.free(b, size, &self.seq);
        }
    }

    /// One lookup per lane, interleaved: each pass advances every lane
    /// still in a node by one level, after prefetching what each lane
    /// loads next, so the cache misses of all lanes overlap instead of
    /// adding up. Every lane in a pass is at the same depth, so the lanes
    /// still walking are kept in a compact list (no per-lane state bits);
    /// a lane that reaches its leaf leaves the list and its (prefetched)
    /// leaf is read after the last pass. A lane whose address equals the
    /// one before it (a burst of one flow) takes that lane's answer.
    #[inline(always)]
    fn lookup_lanes<A: Answer>(&self, addrs: &[u128], out: &mut [A]) {
        let n = addrs.len().min(LANES);
        let addrs = &addrs[..n];
        let out = &mut out[..n];
        // A batch of one address (one flow's burst), told by a loop that
        // stops at the first other address: one walk, its answer copied.
        if let Some((&a0, rest)) = addrs.split_first() {
            if !rest.is_empty() && rest.iter().all(|&a| a == a0) {
                out.fill(A::answer(self.lookup_apart(a0)));
                return;
            }
        }
        let nodes = self.node_slice();
        // The directory in registers: read through `self`, its address
        // and length were loaded again for every prefetch.
        let dir: &[AtomicU32] = &self.dir;
        for &a in addrs {
            if let Some(d) = dir.get((a >> (128 - DIR_BITS)) as usize) {
                prefetch(d);
            }
        }
        'retry: loop {
            let s = self.seq.begin();
            let mut res = [0u32; LANES];
            // The walking lanes: node to read, key shifted to its level,
            // and lane number.
            let mut node = [0u32; LANES];
            let mut key = [0u128; LANES];
            let mut lane = [0u8; LANES];
            let mut m = 0;
            // The lanes at their leaf: leaf index and lane number. Each
            // list holds a lane at most once, so its length stays below
            // LANES where it is written: the `& (LANES - 1)` on those
            // indexes changes nothing but spares the bounds checks.
            let mut at = [0usize; LANES];
            let mut leaf_lane = [0u8; LANES];
            let mut nl = 0;
            // Lanes that repeat the address before them.
            let mut same = 0u32;
            let mut prev = None;
            for (k, &a) in addrs.iter().enumerate() {
                if prev == Some(a) {
                    same |= 1 << k;
                    continue;
                }
                prev = Some(a);
                let d = dir[(a >> (128 - DIR_BITS)) as usize].load(Ordering::Acquire);
                if d & NODE != 0 {
                    let x = d & !NODE;
                    if let Some(w) = nodes.get(x as usize) {
                        prefetch_node(w);
                    }
                    node[m & (LANES - 1)] = x;
                    key[m & (LANES - 1)] = a << DIR_BITS;
                    lane[m & (LANES - 1)] = k as u8;
                    m += 1;
                } else {
                    res[k] = d;
                }
            }
            let mut depth = 0;
            while m != 0 {
                if depth == LEVELS {
                    // Deeper than any prefix: a reused block misled it.
                    continue 'retry;
                }
                depth += 1;
                let mut still = 0;
                for j in 0..m.min(LANES) {
                    let Some(w) = nodes.get(node[j] as usize) else {
                        continue 'retry;
                    };
                    let vector = w[0].load(Ordering::Relaxed);
                    let bases = w[2].load(Ordering::Relaxed);
                    let sh = rest(key[j]);
                    if let Some(rank) = child_rank(vector, sh) {
                        let x = ((bases >> 32) as u32).wrapping_add(rank);
                        if let Some(c) = nodes.get(x as usize) {
                            prefetch_node(c);
                        }
                        node[still & (LANES - 1)] = x;
                        key[still & (LANES - 1)] = key[j] << STRIDE;
                        lane[still & (LANES - 1)] = lane[j];
                        still += 1;
                    } else {
                        // A compact node answers here; otherwise the
                        // lane joins the leaf list. No branch on which:
                        // a compact lane writes its answer, prefetches
                        // leaf 0 and is left off the list.
                        let leafvec = w[1].load(Ordering::Relaxed);
                        let compact = is_compact(vector, leafvec);
                        res[lane[j] as usize & (LANES - 1)] =
                            compact_answer(leafvec, bases, key[j]);
                        let i = std::hint::select_unpredictable(
                            compact,
                            0,
                            leaf_index(leafvec, bases, sh),
                        );
                        if let Some(l) = self.leaves.get(i) {
                            prefetch(l);
                        }
                        at[nl & (LANES - 1)] = i;
                        leaf_lane[nl & (LANES - 1)] = lane[j];
                        nl += !compact as usize;
                    }
                }
                m = still;
            }
            for j in 0..nl.min(LANES) {
                let Some(l) = self.leaves.get(at[j]) else {
                    continue 'retry;
                };
                res[leaf_lane[j] as usize & (LANES - 1)] = l.load(Ordering::Relaxed);
            }
            if self.seq.validate(s) {
                if same == 0 {
                    for (o, &r) in out.iter_mut().zip(&res) {
                        *o = A::answer(answer(r));
                    }
                    return;
                }
                // A repeated address copies the answer before it, made
                // once for the run.
                let mut last = A::answer(None);
                for (k, o) in out.iter_mut().enumerate() {
                    if same & (1 << k) == 0 {
                        last = A::answer(answer(res[k]));
                    }
                    *o = last;
                }
                return;
            }
        }
    }
}

impl Poptrie6 {
    /// [`Lpm6::lookup_batch`] in either answer form.
    #[allow(unsafe_code)]
    #[inline(always)]
    fn lookup_batch_as<A: Answer>(&self, addrs: &[u128], out: &mut [A]) {
        assert!(out.len() >= addrs.len(), "output shorter than the batch");
        for (a, o) in addrs.chunks(LANES).zip(out.chunks_mut(LANES)) {
            #[cfg(target_arch = "x86_64")]
            if self.popcnt {
                // SAFETY: as in `lookup`: the CPU has POPCNT.
                unsafe { self.lookup_lanes_popcnt(a, o) };
                continue;
            }
            self.lookup_lanes(a, o);
        }
    }
}

impl Lpm6 for Poptrie6 {
    #[inline]
    #[allow(unsafe_code)]
    fn lookup(&self, addr: u128) -> Option<NextHop> {
        #[cfg(target_arch = "x86_64")]
        if self.popcnt {
            // SAFETY: `popcnt` is set only when the CPU was detected to
            // have POPCNT, the one feature the function is compiled with.
            return unsafe { self.lookup_one_popcnt(addr) };
        }
        self.lookup_one_plain(addr)
    }

    fn lookup_batch(&self, addrs: &[u128], out: &mut [Option<NextHop>]) {
        self.lookup_batch_as(addrs, out)
    }

    fn lookup_batch_raw(&self, addrs: &[u128], out: &mut [u32]) {
        self.lookup_batch_as(addrs, out)
    }

    fn memory_bytes(&self) -> usize {
        self.touched.load(Ordering::Relaxed).max(DIR_BYTES)
    }

    fn name(&self) -> &'static str {
        "poptrie6"
    }
}

impl Lpm6Update for Poptrie6 {
    fn insert(&self, p: Prefix6, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        check_next_hop(nh)?;
        let p = Prefix6::new(p.addr, p.len);
        let mut w = self.lock();
        let key = (p.addr, p.len);
        let prev = w.rules.insert(key, nh);
        w.exact.insert(key, nh);
        if prev.is_none() {
            w.per_len[p.len as usize] += 1;
            self.huge_pages_when_large(&mut w);
        }
        if prev == Some(nh) {
            return Ok(prev);
        }
        self.commit(&mut w, p, |w| match prev {
            Some(old) => {
                w.rules.insert(key, old);
                w.exact.insert(key, old);
            }
            None => {
                w.rules.remove(&key);
                w.exact.remove(&key);
                w.per_len[key.1 as usize] -= 1;
            }
        })?;
        Ok(prev)
    }

    fn remove(&self, p: Prefix6) -> Result<Option<NextHop>, LpmError> {
        let p = Prefix6::new(p.addr, p.len);
        let mut w = self.lock();
        let key = (p.addr, p.len);
        let Some(old) = w.rules.remove(&key) else {
            return Ok(None);
        };
        w.exact.remove(&key);
        w.per_len[p.len as usize] -= 1;
        self.commit(&mut w, p, |w| {
            w.rules.insert(key, old);
            w.exact.insert(key, old);
            w.per_len[key.1 as usize] += 1;
        })?;
        Ok(Some(old))
    }

    fn route_count(&self) -> usize {
        self.lock().rules.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str, len: u8) -> Prefix6 {
        Prefix6::new(s.parse::<std::net::Ipv6Addr>().unwrap().into(), len)
    }

    fn ip(s: &str) -> u128 {
        s.parse::<std::net::Ipv6Addr>().unwrap().into()
    }

    /// Huge pages are asked for at `HUGE_TABLE` rules, built or added,
    /// and not before; a built table's direct pointing array is written
    /// only where it holds something.
    #[test]
    fn large_tables_ask_for_huge_pages() {
        let routes: Vec<_> = (0..HUGE_TABLE as u128)
            .map(|i| {
                (
                    Prefix6::new(0x2001_0db8_u128 << 96 | i << 80, 48),
                    NextHop(1),
                )
            })
            .collect();
        let t = Poptrie6::build(&routes[1..], Poptrie6::DEFAULT_MEMORY_BOUND).unwrap();
        assert!(!t.lock().huge);
        t.insert(routes[0].0, NextHop(2)).unwrap();
        assert!(t.lock().huge);
        assert_eq!(t.lookup(ip("2001:db8::1")), Some(NextHop(2)));
        let t = Poptrie6::build(&routes, Poptrie6::DEFAULT_MEMORY_BOUND).unwrap();
        assert!(t.lock().huge);
        assert_eq!(t.lookup(ip("2001:db8:fff::1")), Some(NextHop(1)));
        assert_eq!(t.lookup(ip("2001:db9::1")), None);
        let t = Poptrie6::build(&[(p("::", 0), NextHop(3))], 8 << 20).unwrap();
        assert_eq!(t.lookup(ip("ffff::1")), Some(NextHop(3)));
    }

    #[test]
    fn levels_and_collapse() {
        let t = Poptrie6::new();
        t.insert(p("2001:db8::", 32), NextHop(1)).unwrap();
        t.insert(p("2001:db8:1::", 48), NextHop(2)).unwrap();
        t.insert(p("2001:db8:1:2::", 64), NextHop(3)).unwrap();
        assert_eq!(t.lookup(ip("2001:db8:1:2::5")), Some(NextHop(3)));
        assert_eq!(t.lookup(ip("2001:db8:1:3::5")), Some(NextHop(2)));
        assert_eq!(t.lookup(ip("2001:db8:2::")), Some(NextHop(1)));
        assert_eq!(t.lookup(ip("2001:db9::")), None);
        // A more-specific with the covering prefix's next hop needs no node.
        let (n0, _) = t.node_and_leaf_count();
        t.insert(p("2001:db8:5::", 48), NextHop(1)).unwrap();
        assert_eq!(t.node_and_leaf_count().0, n0);
        t.remove(p("2001:db8:1::", 48)).unwrap();
        assert_eq!(t.lookup(ip("2001:db8:1:2::5")), Some(NextHop(3)));
        assert_eq!(t.lookup(ip("2001:db8:1:3::5")), Some(NextHop(1)));
        t.remove(p("2001:db8:1:2::", 64)).unwrap();
        t.remove(p("2001:db8::", 32)).unwrap();
        t.remove(p("2001:db8:5::", 48)).unwrap();
        assert_eq!(t.node_and_leaf_count(), (0, 0));
        assert_eq!(t.lookup(ip("2001:db8:1:2::5")), None);
    }

    #[test]
    fn bound_is_enforced_and_undone() {
        let t = Poptrie6::with_memory_bound(DIR_BYTES + 100).unwrap();
        t.insert(p("2001:db8::", 32), NextHop(1)).unwrap();
        let e = t.insert(p("2001:db8:1:2::", 64), NextHop(3)).unwrap_err();
        assert!(e.to_string().contains("poptrie6: the table needs"), "{e}");
        assert_eq!(t.lookup(ip("2001:db8:1:2::5")), Some(NextHop(1)));
        assert_eq!(t.route_count(), 1);
    }
    /// A chain of nested prefixes at every level boundary of the trie
    /// (the direct pointing array's /20, then each 6-bit stride: /26,
    /// /32, ..., /122, and /128) and one bit on either side of each, under
    /// ::/0: single and batched lookups of each prefix's first and last
    /// address and the addresses just outside agree with a scan as the
    /// chain is built, and as it is taken down from the top (each removal
    /// uncovering the next shorter prefix) and from the bottom.
    #[test]
    fn level_boundaries_agree_with_a_scan() {
        let base = ip("2a00:1450:4001:81a:f0e1:d2c3:b4a5:9687");
        let mut lens = vec![0u8, 1];
        for b in (DIR_BITS..=128).step_by(STRIDE as usize).chain([128]) {
            lens.extend([b - 1, b, (b + 1).min(128)]);
        }
        lens.sort_unstable();
        lens.dedup();
        let chain: Vec<(Prefix6, NextHop)> = lens
            .iter()
            .map(|&l| (Prefix6::new(base, l), NextHop(l as u32)))
            .collect();
        let probes: Vec<u128> = chain
            .iter()
            .flat_map(|(q, _)| {
                let last = q.addr | !Prefix6::mask(q.len);
                [q.addr, last, q.addr.wrapping_sub(1), last.wrapping_add(1)]
            })
            .chain([0, u128::MAX, base])
            .collect();
        let check = |t: &Poptrie6, rules: &[(Prefix6, NextHop)]| {
            let mut out = vec![None; probes.len()];
            t.lookup_batch(&probes, &mut out);
            for (&a, &b) in probes.iter().zip(&out) {
                let want = scan(rules, a);
                assert_eq!(t.lookup(a), want, "{a:#034x} with {} rules", rules.len());
                assert_eq!(b, want, "batched {a:#034x} with {} rules", rules.len());
            }
        };
        let t = Poptrie6::new();
        for k in 0..chain.len() {
            t.insert(chain[k].0, chain[k].1).unwrap();
            check(&t, &chain[..=k]);
        }
        assert_eq!(
            Poptrie6::build(&chain, Poptrie6::DEFAULT_MEMORY_BOUND)
                .map(|b| probes.iter().all(|&a| b.lookup(a) == t.lookup(a))),
            Ok(true)
        );
        // From the longest down: each removal uncovers the prefix above.
        for k in (0..chain.len()).rev() {
            assert_eq!(t.remove(chain[k].0).unwrap(), Some(chain[k].1));
            check(&t, &chain[..k]);
        }
        assert_eq!(t.node_and_leaf_count(), (0, 0));
        // From ::/0 down: the longer prefixes keep answering.
        for &(q, nh) in &chain {
            t.insert(q, nh).unwrap();
        }
        for k in 0..chain.len() {
            t.remove(chain[k].0).unwrap();
            check(&t, &chain[k + 1..]);
        }
        assert_eq!(t.node_and_leaf_count(), (0, 0));
    }

    /// A change of a /20 or shorter over eight /20s with nodes, under
    /// bounds from none to ample: it is made whole or refused whole,
    /// never left in some of the direct-pointing entries it covers. (A
    /// refusal part of the way once rebuilt the entries already published
    /// from the restored rules, which could run out of memory too, the
    /// memory they gave back being in limbo; found by the `lpm_poptrie6`
    /// fuzz target.)
    #[test]
    fn short_prefix_refused_midway_changes_nothing() {
        let mut routes = vec![(p("2001::", 16), NextHop(1))];
        for i in 0..8u128 {
            let a = ip("2001:0:0:1234::") | i << 108;
            routes.push((Prefix6::new(a, 48), NextHop(2)));
        }
        let roomy = Poptrie6::build(&routes, Poptrie6::DEFAULT_MEMORY_BOUND).unwrap();
        let probes: Vec<u128> = routes
            .iter()
            .flat_map(|(q, _)| [q.addr, q.addr | 1 << 80, q.addr | 1 << 100])
            .collect();
        let before: Vec<_> = probes.iter().map(|&a| roomy.lookup(a)).collect();
        assert!(before.contains(&Some(NextHop(1))) && before.contains(&Some(NextHop(2))));
        let changed: Vec<_> = before
            .iter()
            .map(|&h| h.map(|h| if h.0 == 1 { NextHop(3) } else { h }))
            .collect();
        // Bounds from none to room for two copies of every /20's subtree:
        // the change is refused, or refused part-way, or made.
        let mut refused = 0;
        for extra in (0..1600).step_by(8) {
            let t = Poptrie6::build(&routes, roomy.memory_bytes() + extra).unwrap();
            let want = match t.insert(p("2001::", 16), NextHop(3)) {
                Ok(prev) => {
                    assert_eq!(prev, Some(NextHop(1)));
                    &changed
                }
                Err(e) => {
                    assert!(e.to_string().contains("poptrie6"), "{e}");
                    assert_eq!(t.route_count(), routes.len());
                    refused += 1;
                    &before
                }
            };
            let mut out = vec![None; probes.len()];
            t.lookup_batch(&probes, &mut out);
            assert_eq!(&out, want, "bound {extra} bytes over the table");
            let single: Vec<_> = probes.iter().map(|&a| t.lookup(a)).collect();
            assert_eq!(&single, want, "bound {extra} bytes over the table");
        }
        assert!(refused > 0);
    }

    /// Compact nodes: a /48 alone under its /20 is one node; a sibling
    /// /48 under the same /32 turns it into a path of normal nodes ending
    /// in a compact node for the two, a third sibling into a normal node
    /// for the /32, and removing the siblings folds it back; a covering
    /// /32 (the inherited answer), a next-hop change (stored in place), a
    /// rule too deep for one compact node (a /128 under a /20) and
    /// removing everything. Every step is checked against a scan, single
    /// and batched.
    #[test]
    fn compact_nodes_form_and_dissolve() {
        let a = p("2001:db8:1::", 48);
        let b = p("2001:db8:ff00::", 48);
        let c = p("2001:db8:8000::", 48);
        let covering = p("2001:db8::", 32);
        let deep = p("2001:db8:1:2:3:4:5:6", 128);
        let probes: Vec<u128> = [a, b, c, covering, deep]
            .iter()
            .flat_map(|q| {
                let last = q.addr | !Prefix6::mask(q.len);
                [
                    q.addr,
                    last,
                    q.addr.wrapping_sub(1),
                    last.wrapping_add(1),
                    q.addr | 0x1234 << 20,
                    q.addr ^ 1 << (128 - q.len as u32),
                ]
            })
            .chain([0, u128::MAX, ip("2001:db9::1"), ip("2001:db8:2::1")])
            .collect();
        let t = Poptrie6::new();
        let mut rules: Vec<(Prefix6, NextHop)> = Vec::new();
        let check = |t: &Poptrie6, rules: &[(Prefix6, NextHop)], step: &str| {
            let mut out = vec![None; probes.len()];
            t.lookup_batch(&probes, &mut out);
            for (&x, &o) in probes.iter().zip(&out) {
                let want = scan(rules, x);
                assert_eq!(t.lookup(x), want, "{step}: {x:#034x}");
                assert_eq!(o, want, "{step}, batched: {x:#034x}");
            }
            let built = Poptrie6::build(rules, Poptrie6::DEFAULT_MEMORY_BOUND).unwrap();
            for &x in &probes {
                assert_eq!(built.lookup(x), scan(rules, x), "{step}, built: {x:#034x}");
            }
        };
        let set = |t: &Poptrie6, rules: &mut Vec<(Prefix6, NextHop)>, q: Prefix6, nh| {
            t.insert(q, nh).unwrap();
            rules.retain(|r| r.0 != q);
            rules.push((q, nh));
        };
        let unset = |t: &Poptrie6, rules: &mut Vec<(Prefix6, NextHop)>, q: Prefix6| {
            let had = rules.iter().find(|r| r.0 == q).map(|r| r.1);
            assert_eq!(t.remove(q).unwrap(), had);
            rules.retain(|r| r.0 != q);
        };
        // A /48 alone: one compact node for its /20, no leaves.
        set(&t, &mut rules, a, NextHop(1));
        check(&t, &rules, "a alone");
        assert_eq!(t.node_and_leaf_count(), (1, 0));
        // A sibling under the same /32: normal nodes for the /20 and the
        // /26 (one leaf each), a compact node for the /32 (16 + 16 bits).
        set(&t, &mut rules, b, NextHop(2));
        check(&t, &rules, "a and b");
        assert_eq!(t.node_and_leaf_count(), (3, 2));
        // A third: a normal node for the /32, compact nodes below it.
        set(&t, &mut rules, c, NextHop(3));
        check(&t, &rules, "a, b and c");
        assert!(t.node_and_leaf_count().0 > 3);
        unset(&t, &mut rules, c);
        check(&t, &rules, "c removed");
        assert_eq!(t.node_and_leaf_count(), (3, 2));
        // The sibling's removal folds the path back into one node.
        unset(&t, &mut rules, b);
        check(&t, &rules, "b removed");
        assert_eq!(t.node_and_leaf_count(), (1, 0));
        // A next-hop change of the compact node's rule.
        set(&t, &mut rules, a, NextHop(3));
        check(&t, &rules, "a changed");
        assert_eq!(t.node_and_leaf_count(), (1, 0));
        // A covering /32: two rules under the /20 (one compact node, 12
        // + 28 bits), the /32's answer inherited around the /48.
        set(&t, &mut rules, covering, NextHop(4));
        check(&t, &rules, "covering /32");
        set(&t, &mut rules, covering, NextHop(5));
        check(&t, &rules, "covering /32 changed");
        set(&t, &mut rules, b, NextHop(2));
        check(&t, &rules, "b again under the /32");
        // The /48 with the /32's next hop answers like the /32.
        set(&t, &mut rules, a, NextHop(5));
        check(&t, &rules, "a as the /32");
        unset(&t, &mut rules, b);
        check(&t, &rules, "b removed under the /32");
        unset(&t, &mut rules, covering);
        check(&t, &rules, "covering removed");
        assert_eq!(t.node_and_leaf_count(), (1, 0));
        // A /128 is 108 bits below its /20: too deep for one compact node.
        unset(&t, &mut rules, a);
        assert_eq!(t.node_and_leaf_count(), (0, 0));
        set(&t, &mut rules, deep, NextHop(6));
        check(&t, &rules, "deep alone");
        assert!(t.node_and_leaf_count().0 > 1);
        set(&t, &mut rules, a, NextHop(1));
        check(&t, &rules, "deep under a");
        for q in [deep, a] {
            unset(&t, &mut rules, q);
            check(&t, &rules, "taken down");
        }
        assert_eq!(t.node_and_leaf_count(), (0, 0));
    }

    /// Longest-prefix match by a scan of every rule: the definition,
    /// with nothing shared with the table under test.
    fn scan(rules: &[(Prefix6, NextHop)], a: u128) -> Option<NextHop> {
        rules
            .iter()
            .filter(|(p, _)| a & Prefix6::mask(p.len) == p.addr)
            .max_by_key(|(p, _)| p.len)
            .map(|&(_, nh)| nh)
    }

    /// Single and batched lookups agree with [`scan`] on random nested
    /// tables, before and after removals and re-insertions. The lengths
    /// include ::/0, /128, the level boundaries around /48 (node levels
    /// end at /44 and /50) and /64, /65.
    #[test]
    fn random_tables_agree_with_a_scan() {
        const LENS: [u8; 20] = [
            0, 1, 19, 20, 21, 26, 32, 33, 44, 47, 48, 49, 50, 51, 56, 63, 64, 65, 127, 128,
        ];
        let mut r = crate::bench::SplitMix64(42);
        for round in 0..40 {
            let rand = |r: &mut crate::bench::SplitMix64| {
                (r.next_u64() as u128) << 64 | r.next_u64() as u128
            };
            // A few bases, and prefixes nested under them and each other.
            let bases: Vec<u128> = (0..3).map(|_| rand(&mut r)).collect();
            let mut rules: Vec<(Prefix6, NextHop)> = Vec::new();
            for _ in 0..(10 + round * 3) {
                let len = LENS[(r.next_u64() % LENS.len() as u64) as usize];
                let base = match rules.len() {
                    n if n > 0 && r.next_u64().is_multiple_of(2) => {
                        rules[(r.next_u64() % n as u64) as usize].0.addr
                    }
                    _ => bases[(r.next_u64() % 3) as usize],
                };
                // Flip a few low bits of the base inside the new length.
                let flip = rand(&mut r).checked_shr((r.next_u64() % 129).max(len as u64) as u32);
                let flip = flip.unwrap_or(0);
                let p = Prefix6::new(base ^ flip, len);
                rules.retain(|(q, _)| *q != p);
                rules.push((p, NextHop((r.next_u64() % 5) as u32)));
            }
            let t = Poptrie6::build(&rules, Poptrie6::DEFAULT_MEMORY_BOUND).unwrap();
            let probes = |rules: &[(Prefix6, NextHop)], r: &mut crate::bench::SplitMix64| {
                let mut v: Vec<u128> = vec![0, u128::MAX];
                for (p, _) in rules {
                    let last = p.addr | !Prefix6::mask(p.len);
                    v.extend([p.addr, last, p.addr.wrapping_sub(1), last.wrapping_add(1)]);
                    v.push(p.addr | (rand(r) & !Prefix6::mask(p.len)));
                }
                v.extend((0..20).map(|_| rand(r)));
                v
            };
            let check = |t: &Poptrie6, rules: &[(Prefix6, NextHop)], addrs: &[u128]| {
                let mut out = vec![None; addrs.len()];
                t.lookup_batch(addrs, &mut out);
                for (&a, &b) in addrs.iter().zip(&out) {
                    let want = scan(rules, a);
                    assert_eq!(t.lookup(a), want, "single lookup of {a:#034x}");
                    assert_eq!(b, want, "batched lookup of {a:#034x}");
                }
            };
            check(&t, &rules, &probes(&rules, &mut r));
            // Withdraw a third of the rules, one at a time, then announce
            // some again with other next hops.
            let mut gone = Vec::new();
            for k in (0..rules.len()).rev().step_by(3) {
                let (p, nh) = rules.remove(k);
                assert_eq!(t.remove(p).unwrap(), Some(nh));
                gone.push(p);
                check(
                    &t,
                    &rules,
                    &probes(&rules[rules.len().saturating_sub(3)..], &mut r),
                );
            }
            check(&t, &rules, &probes(&rules, &mut r));
            for p in gone.into_iter().step_by(2) {
                t.insert(p, NextHop(7)).unwrap();
                rules.push((p, NextHop(7)));
            }
            let mut all = probes(&rules, &mut r);
            all.extend(probes(&[(Prefix6::new(0, 0), NextHop(0))], &mut r));
            check(&t, &rules, &all);
        }
    }

    /// The walks compiled without POPCNT, for CPUs that lack it, answer
    /// as the POPCNT ones do, single and batched.
    #[test]
    fn lookups_without_popcnt_agree() {
        let g = crate::gen::generate(0, 20_000, 3).intern();
        let with = Poptrie6::build(&g.v6, Poptrie6::DEFAULT_MEMORY_BOUND).unwrap();
        let mut without = Poptrie6::build(&g.v6, Poptrie6::DEFAULT_MEMORY_BOUND).unwrap();
        without.popcnt = false;
        let mut addrs = crate::bench::addresses_in6(&g.v6, 3_000, 4);
        addrs.extend([0, u128::MAX]);
        let (mut a, mut b) = (vec![None; addrs.len()], vec![None; addrs.len()]);
        with.lookup_batch(&addrs, &mut a);
        without.lookup_batch(&addrs, &mut b);
        assert_eq!(a, b);
        for (&x, &want) in addrs.iter().zip(&a) {
            assert_eq!(without.lookup(x), want, "{x:#034x}");
            assert_eq!(with.lookup(x), want, "{x:#034x}");
        }
        assert!(a.iter().filter(|o| o.is_some()).count() > addrs.len() / 2);
    }

    /// Batched lookups (with bursts of one address, whole batches of
    /// one, batches of every size) agree with single ones on a table shaped like today's, and
    /// again after route changes.
    #[test]
    fn batches_with_repeats_agree() {
        let g = crate::gen::generate(0, 20_000, 3).intern();
        let t = Poptrie6::build(&g.v6, Poptrie6::DEFAULT_MEMORY_BOUND).unwrap();
        let inside = crate::bench::addresses_in6(&g.v6, 3_000, 4);
        let mut addrs = Vec::new();
        for (i, &a) in inside.iter().enumerate() {
            // Runs of one to four copies, and now and then the address
            // one past it (same path, maybe another leaf).
            addrs.extend(std::iter::repeat_n(a, 1 + i % 4));
            if i % 5 == 0 {
                addrs.push(a ^ 1);
            }
        }
        addrs.extend([0, u128::MAX, u128::MAX, 0]);
        // Whole batches of one flow, and one that ends a batch early.
        addrs.extend(std::iter::repeat_n(inside[1], 70));
        addrs.extend(std::iter::repeat_n(inside[2], 31));
        let check = |t: &Poptrie6| {
            for size in [1, 2, 7, 31, 32, 33, 64, 100] {
                let mut out = vec![Some(NextHop(u32::MAX)); addrs.len()];
                for (a, o) in addrs.chunks(size).zip(out.chunks_mut(size)) {
                    t.lookup_batch(a, o);
                }
                for (&a, &o) in addrs.iter().zip(&out) {
                    assert_eq!(o, t.lookup(a), "batch of {size}: {a:#034x}");
                }
            }
        };
        check(&t);
        for (k, &(p, _)) in g.v6.iter().enumerate().step_by(7).take(500) {
            if k % 2 == 0 {
                t.remove(p).unwrap();
            } else {
                t.insert(p, NextHop(k as u32 % 1000)).unwrap();
            }
        }
        check(&t);
    }
}
