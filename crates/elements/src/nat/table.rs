//! The flow set: every mapping of one rewriter (or of several that share
//! a MAPPING_CAPACITY), shared by all workers.
//!
//! Synchronisation. A flow and its reply may arrive on different workers
//! (after translation the RSS hash differs), so one table serves them all.
//! Lookups go to one of [`SHARDS`] hash shards, each behind its own short
//! mutex: a lookup locks one shard, copies the 24-byte entry, stamps the
//! flow's last-use time and unlocks; no lookup ever holds two locks.
//! Creating, expiring and evicting flows (the slow path) takes the
//! control mutex first and then one shard at a time, so the lock order is
//! always control then shard and cannot deadlock. The per-flow state the
//! fast path writes (last use, TCP/UDP state bits) is in atomics in a
//! slot array allocated once, at MAPPING_CAPACITY entries.
//!
//! Expiry. Flows are kept in a queue in creation order. A flow whose
//! last use is older than its timeout is expired: a lookup ignores it,
//! each new flow reaps a few from the queue's head (amortised O(1)), and
//! a REAP_INTERVAL timer sweeps the whole queue off the packet path. When
//! the set is full a new flow evicts the first of a few queued flows that
//! is past its guarantee (idle longer than GUARANTEE); if all it looks at
//! are guaranteed, the new flow is refused (Click's admission control).
//! Click evicts the best-effort flow that expires first, using heaps; the
//! queue approximates that order in O(1) per flow.
//!
//! The hash is keyed with a random seed per table, so chosen flow ids do
//! not pile into one bucket.

use super::flow::{Key, Tuple};
use super::seq::{DeltaRefused, SeqDeltas};
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

/// Number of lookup shards (a power of two).
pub const SHARDS: usize = 64;
/// Flows a new flow reaps from the queue's head at most.
const REAP_PER_NEW_FLOW: usize = 4;
/// Queued flows a new flow looks at for one to evict when the set is full.
const EVICT_PROBES: usize = 16;
/// Largest MAPPING_CAPACITY.
pub const MAX_CAPACITY: usize = 1 << 24;
/// Default MAPPING_CAPACITY (Click's is unbounded).
pub const DEFAULT_CAPACITY: usize = 65_536;

/// A keyed multiply-xor hash of a [`Key`]'s two words.
#[derive(Clone)]
pub struct KeyedHash {
    k0: u64,
    k1: u64,
}

impl KeyedHash {
    fn new() -> KeyedHash {
        let s = RandomState::new();
        let mut h = s.build_hasher();
        h.write_u64(0x6e61_7470);
        let k0 = h.finish() | 1;
        let mut h = s.build_hasher();
        h.write_u64(k0);
        KeyedHash {
            k0,
            k1: h.finish() | 1,
        }
    }

    #[inline(always)]
    fn hash(&self, key: &Key) -> u64 {
        let (a, b) = key.words();
        let x = u128::from(a ^ self.k0) * u128::from(b ^ self.k1);
        let y = (x as u64) ^ ((x >> 64) as u64);
        // A second round so the shard bits depend on every key bit.
        y ^ (y >> 29).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}

/// Hashes a key precomputed by [`KeyedHash`] (the map stores that).
#[derive(Default, Clone, Copy)]
pub struct PreHashed(u64);

impl Hasher for PreHashed {
    fn write(&mut self, _bytes: &[u8]) {
        unreachable!("only write_u64 is used")
    }
    #[inline(always)]
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    #[inline(always)]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A key with its hash, so the shard map does not hash twice.
#[derive(Clone, Copy, PartialEq, Eq)]
struct HKey {
    hash: u64,
    key: Key,
}

impl std::hash::Hash for HKey {
    #[inline(always)]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

type Shard = HashMap<HKey, Entry, std::hash::BuildHasherDefault<PreHashed>>;

/// One direction of a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// What the packet's flow becomes.
    pub new: Tuple,
    /// The output it leaves by.
    pub output: u16,
    /// Which fields are written (`flow::W_*`).
    pub writes: u8,
    /// This is the reply direction.
    pub reply: bool,
    /// The flow's slot.
    pub slot: u32,
    /// The reply annotation (REPLY_ANNO) to set, if any.
    pub reply_anno: Option<u8>,
    /// The flow has sequence-number deltas ([`FlowSet::apply_seq`]).
    pub seq: bool,
    /// The flow's timeouts (copied here so a lookup can tell an expired
    /// flow without the control lock).
    pub timeouts: Timeouts,
}

/// Timeouts of one flow, milliseconds (0 guarantee: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// The flow's lifetime after its last packet, by its state.
    pub idle: u64,
    /// TCP: after payload in both directions (`idle` until then). UDP:
    /// once streaming.
    pub established: u64,
    /// TCP after FIN or RST.
    pub done: u64,
    pub guarantee: u64,
    /// TCP state tracking (else UDP streaming tracking).
    pub tcp: bool,
}

/// State bits of a flow, written by the fast path.
pub const F_DATA_FWD: u8 = 1;
pub const F_DATA_REPLY: u8 = 2;
pub const F_DONE: u8 = 4;
/// Two bits count a flow's packets up to 3 (UDP streaming).
const F_COUNT_SHIFT: u8 = 3;
/// A reply packet has been seen.
const F_REPLY_SEEN: u8 = 32;

/// What the fast path touches of a flow.
#[derive(Default)]
struct Slot {
    last_ms: AtomicU64,
    flags: AtomicU8,
}

/// What the slow path keeps of a flow.
#[derive(Debug, Clone, Copy)]
struct Rec {
    fwd: Key,
    rev: Key,
    timeouts: Timeouts,
    /// Counts live flows' generations, so the queue can hold stale ids.
    gen: u32,
    live: bool,
    owner: u16,
    input: u16,
    /// The forward entry's output and the reply's (for the table handler).
    fout: u16,
    rout: u16,
}

struct Control {
    recs: Vec<Rec>,
    free: Vec<u32>,
    queue: VecDeque<(u32, u32)>,
    size: usize,
}

/// Why a new flow got no mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The set is full of guaranteed flows.
    Full,
    /// No free port or address in the pattern's range.
    NoFreeValue,
}

/// A new flow's description.
pub struct NewFlow {
    pub fwd: Key,
    pub fwd_entry: Entry,
    pub rev: Key,
    pub rev_entry: Entry,
    pub timeouts: Timeouts,
    pub input: u16,
    /// What the packet that makes the flow says of its state (`F_DATA_FWD`,
    /// `F_DONE`), as Click applies that packet to the new flow.
    pub note: u8,
}

/// Mappings shared by every worker (and by rewriters sharing capacity).
pub struct FlowSet {
    hash: KeyedHash,
    shards: Box<[Mutex<Shard>]>,
    slots: Box<[Slot]>,
    control: Mutex<Control>,
    capacity: AtomicUsize,
    next_owner: AtomicUsize,
    /// Sequence-number deltas by slot, of the few flows that have any
    /// (taken after the control and shard locks, never before).
    seq: Mutex<HashMap<u32, SeqDeltas>>,
}

impl core::fmt::Debug for FlowSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FlowSet")
            .field("capacity", &self.capacity.load(Relaxed))
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A worker that panicked mid-update leaves at worst a stale entry.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl FlowSet {
    /// A set of at most `capacity` flows (both directions of a flow are
    /// one).
    pub fn new(capacity: usize) -> FlowSet {
        let capacity = capacity.clamp(1, MAX_CAPACITY);
        let per_shard = (capacity * 2 / SHARDS).max(4);
        FlowSet {
            hash: KeyedHash::new(),
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard::with_capacity_and_hasher(
                        per_shard,
                        Default::default(),
                    ))
                })
                .collect(),
            slots: (0..capacity).map(|_| Slot::default()).collect(),
            control: Mutex::new(Control {
                recs: Vec::new(),
                free: Vec::new(),
                queue: VecDeque::new(),
                size: 0,
            }),
            capacity: AtomicUsize::new(capacity),
            next_owner: AtomicUsize::new(0),
            seq: Mutex::new(HashMap::new()),
        }
    }

    /// A new owner id for a rewriter joining the set.
    pub fn new_owner(&self) -> u16 {
        self.next_owner.fetch_add(1, Relaxed) as u16
    }

    #[inline(always)]
    fn hkey(&self, key: &Key) -> HKey {
        HKey {
            hash: self.hash.hash(key),
            key: *key,
        }
    }

    #[inline(always)]
    fn shard(&self, h: &HKey) -> &Mutex<Shard> {
        &self.shards[(h.hash >> 58) as usize & (SHARDS - 1)]
    }

    fn expired(&self, r: &Rec, slot: u32, now_ms: u64) -> bool {
        let s = &self.slots[slot as usize];
        let idle = now_ms.saturating_sub(s.last_ms.load(Relaxed));
        idle >= timeout_of(&r.timeouts, s.flags.load(Relaxed))
    }

    /// The live entry for `key`, stamping its flow as used now and
    /// noting `payload`/`fin_rst` for the TCP state (the fast path).
    #[inline]
    pub fn lookup(&self, key: &Key, now_ms: u64, note: u8) -> Option<Entry> {
        let h = self.hkey(key);
        let shard = lock(self.shard(&h));
        let e = *shard.get(&h)?;
        let s = &self.slots[e.slot as usize];
        let last = s.last_ms.load(Relaxed);
        let flags = s.flags.load(Relaxed);
        if now_ms.saturating_sub(last) >= timeout_of(&e.timeouts, flags) {
            // Expired: as good as gone; the slow path removes it.
            return None;
        }
        s.last_ms.store(now_ms.max(last), Relaxed);
        let data = match (note & F_DATA_FWD != 0, e.reply) {
            (false, _) => 0,
            (true, false) => F_DATA_FWD,
            (true, true) => F_DATA_REPLY,
        };
        let seen = if e.reply { F_REPLY_SEEN } else { 0 };
        let count = (flags >> F_COUNT_SHIFT) & 3;
        let add_count = if count < 3 { 1 << F_COUNT_SHIFT } else { 0 };
        let want = (flags | data | (note & F_DONE) | seen).wrapping_add(add_count);
        if want != flags {
            s.flags.store(want, Relaxed);
        }
        drop(shard);
        Some(e)
    }

    /// Whether `key` is mapped (live or not yet reaped).
    pub fn contains(&self, key: &Key) -> bool {
        let h = self.hkey(key);
        lock(self.shard(&h)).contains_key(&h)
    }

    /// The live entry for `key`, without marking the flow used (Click's
    /// `get_entry` with no input: a look, not a packet).
    pub fn peek(&self, key: &Key, now_ms: u64) -> Option<Entry> {
        let e = self.get(key)?;
        let s = &self.slots[e.slot as usize];
        let idle = now_ms.saturating_sub(s.last_ms.load(Relaxed));
        (idle < timeout_of(&e.timeouts, s.flags.load(Relaxed))).then_some(e)
    }

    /// Records that from sequence number `trigger` on, the bytes of the
    /// flow in `slot` going its `reply` direction move by `delta`
    /// (Click's `update_seqno_delta`). False: the flow is gone.
    pub fn add_seq_delta(
        &self,
        slot: u32,
        reply: bool,
        trigger: u32,
        delta: i32,
    ) -> Result<bool, DeltaRefused> {
        let c = lock(&self.control);
        let Some(r) = c.recs.get(slot as usize).copied().filter(|r| r.live) else {
            return Ok(false);
        };
        for k in [r.fwd, r.rev] {
            let h = self.hkey(&k);
            if let Some(e) = lock(self.shard(&h)).get_mut(&h) {
                if e.slot == slot {
                    e.seq = true;
                }
            }
        }
        lock(&self.seq)
            .entry(slot)
            .or_default()
            .update(reply, trigger, delta)?;
        drop(c);
        Ok(true)
    }

    /// The reply annotation the flow in `slot` sets on its replies.
    pub fn reply_anno(&self, slot: u32) -> Option<u8> {
        let c = lock(&self.control);
        let r = c.recs.get(slot as usize).filter(|r| r.live)?;
        self.get(&r.rev).filter(|e| e.slot == slot)?.reply_anno
    }

    /// Sets the reply annotation of the flow in `slot` (FTPPortMapper
    /// gives a data flow its control flow's).
    pub fn set_reply_anno(&self, slot: u32, anno: Option<u8>) {
        let c = lock(&self.control);
        let Some(r) = c.recs.get(slot as usize).filter(|r| r.live) else {
            return;
        };
        let h = self.hkey(&r.rev);
        if let Some(e) = lock(self.shard(&h)).get_mut(&h) {
            if e.slot == slot {
                e.reply_anno = anno;
            }
        }
    }

    /// Moves the sequence numbers of the TCP segment `tcp` of the flow in
    /// `slot`, going its `reply` direction, by the flow's deltas.
    pub fn apply_seq(&self, slot: u32, reply: bool, tcp: &mut [u8]) {
        if let Some(d) = lock(&self.seq).get_mut(&slot) {
            d.apply(reply, tcp);
        }
    }

    fn get(&self, key: &Key) -> Option<Entry> {
        let h = self.hkey(key);
        lock(self.shard(&h)).get(&h).copied()
    }

    fn remove_key(&self, key: &Key, slot: u32) {
        let h = self.hkey(key);
        let mut s = lock(self.shard(&h));
        if s.get(&h).is_some_and(|e| e.slot == slot) {
            s.remove(&h);
        }
    }

    fn destroy(&self, c: &mut Control, slot: u32) {
        let r = c.recs[slot as usize];
        if !r.live {
            return;
        }
        self.remove_key(&r.fwd, slot);
        self.remove_key(&r.rev, slot);
        let r = &mut c.recs[slot as usize];
        r.live = false;
        r.gen = r.gen.wrapping_add(1);
        c.free.push(slot);
        c.size -= 1;
        lock(&self.seq).remove(&slot);
    }

    /// Reaps up to `n` flows from the queue's head (all with `n` =
    /// usize::MAX): expired ones go, live ones go to the back.
    fn reap(&self, c: &mut Control, now_ms: u64, n: usize) -> usize {
        let mut gone = 0;
        for _ in 0..n.min(c.queue.len()) {
            let Some((slot, gen)) = c.queue.pop_front() else {
                break;
            };
            let r = c.recs[slot as usize];
            if !r.live || r.gen != gen {
                continue;
            }
            if self.expired(&r, slot, now_ms) {
                self.destroy(c, slot);
                gone += 1;
            } else {
                c.queue.push_back((slot, gen));
            }
        }
        gone
    }

    /// Removes every expired flow (the REAP_INTERVAL sweep), and flows
    /// beyond the capacity.
    pub fn reap_all(&self, now_ms: u64) -> usize {
        let mut c = lock(&self.control);
        let n = c.queue.len();
        let gone = self.reap(&mut c, now_ms, n);
        let cap = self.capacity.load(Relaxed);
        if c.size > cap {
            // Click's shrink_heap: best-effort flows first, then
            // guaranteed ones, each by expiry.
            let mut order: Vec<(bool, u64, u32)> = c
                .queue
                .iter()
                .filter(|&&(slot, gen)| {
                    let r = &c.recs[slot as usize];
                    r.live && r.gen == gen
                })
                .map(|&(slot, _)| {
                    let (at, best_effort) = self.expiry(&c.recs[slot as usize], slot, now_ms);
                    (!best_effort, at, slot)
                })
                .collect();
            order.sort_unstable();
            for (_, _, slot) in order {
                if c.size <= cap {
                    break;
                }
                self.destroy(&mut c, slot);
            }
            let Control { queue, recs, .. } = &mut *c;
            queue.retain(|&(s, g)| recs[s as usize].live && recs[s as usize].gen == g);
        }
        gone
    }

    /// Removes the mappings of `owner` that its input `input` made (a
    /// rewriter's `patternN` write: Click drops that input's flows with
    /// its old spec).
    pub fn clear_input(&self, owner: u16, input: u16) {
        self.remove_where(|r| r.owner == owner && r.input == input);
    }

    /// Removes every flow of `owner` (all with `None`): `clear`.
    pub fn clear(&self, owner: Option<u16>) {
        self.remove_where(|r| owner.is_none_or(|o| o == r.owner));
    }

    /// Removes every live flow `doomed` picks, under the control lock.
    fn remove_where(&self, doomed: impl Fn(&Rec) -> bool) {
        let mut c = lock(&self.control);
        for slot in 0..c.recs.len() as u32 {
            let r = c.recs[slot as usize];
            if r.live && doomed(&r) {
                self.destroy(&mut c, slot);
            }
        }
        let Control { queue, recs, .. } = &mut *c;
        queue.retain(|&(s, g)| recs[s as usize].live && recs[s as usize].gen == g);
    }

    /// The slow path for a packet whose flow `fwd` had no live entry:
    /// under the control lock, looks again (another worker may have made
    /// it), removes an expired mapping, then asks `make` for the new flow
    /// (`make` may call [`FlowSet::contains`] to search a range) and
    /// stores both directions. Returns the forward entry.
    pub fn create(
        &self,
        fwd: &Key,
        now_ms: u64,
        make: impl FnOnce(&FlowSet) -> Result<NewFlow, Refused>,
    ) -> Result<Entry, Refused> {
        let mut c = lock(&self.control);
        if let Some(e) = self.get(fwd) {
            let r = c.recs[e.slot as usize];
            if !self.expired(&r, e.slot, now_ms) {
                self.slots[e.slot as usize].last_ms.store(now_ms, Relaxed);
                return Ok(e);
            }
            self.destroy(&mut c, e.slot);
        }
        self.reap(&mut c, now_ms, REAP_PER_NEW_FLOW);
        let nf = make(self)?;
        // A reply flow mapped already (a fixed pattern reused): that
        // flow goes, as in Click's store_flow.
        if let Some(old) = self.get(&nf.rev) {
            self.destroy(&mut c, old.slot);
        }
        if c.size >= self.capacity.load(Relaxed) {
            let t = &nf.timeouts;
            let new_expiry = now_ms.saturating_add(timeout_of(t, nf.note & (F_DATA_FWD | F_DONE)));
            if !self.evict(&mut c, now_ms, new_expiry, t.guarantee > 0) {
                return Err(Refused::Full);
            }
        }
        let slot = match c.free.pop() {
            Some(s) => s,
            None => {
                let s = c.recs.len() as u32;
                if (s as usize) >= self.slots.len() {
                    return Err(Refused::Full);
                }
                c.recs.push(Rec {
                    fwd: nf.fwd,
                    rev: nf.rev,
                    timeouts: nf.timeouts,
                    gen: 0,
                    live: false,
                    owner: 0,
                    input: 0,
                    fout: 0,
                    rout: 0,
                });
                s
            }
        };
        let gen = c.recs[slot as usize].gen;
        c.recs[slot as usize] = Rec {
            fwd: nf.fwd,
            rev: nf.rev,
            timeouts: nf.timeouts,
            gen,
            live: true,
            owner: nf.fwd.owner,
            input: nf.input,
            fout: nf.fwd_entry.output,
            rout: nf.rev_entry.output,
        };
        let s = &self.slots[slot as usize];
        s.last_ms.store(now_ms, Relaxed);
        // The packet that makes the flow counts, as in Click's apply.
        s.flags.store(
            (nf.note & (F_DATA_FWD | F_DONE)) | (1 << F_COUNT_SHIFT),
            Relaxed,
        );
        c.size += 1;
        c.queue.push_back((slot, gen));
        let fe = Entry {
            slot,
            ..nf.fwd_entry
        };
        let re = Entry {
            slot,
            ..nf.rev_entry
        };
        for (k, e) in [(nf.fwd, fe), (nf.rev, re)] {
            let h = self.hkey(&k);
            lock(self.shard(&h)).insert(h, e);
        }
        Ok(fe)
    }

    /// When a flow expires (absolute milliseconds), and whether it is past
    /// its guarantee (best effort) at `now_ms`.
    fn expiry(&self, r: &Rec, slot: u32, now_ms: u64) -> (u64, bool) {
        let s = &self.slots[slot as usize];
        let last = s.last_ms.load(Relaxed);
        let at = last.saturating_add(timeout_of(&r.timeouts, s.flags.load(Relaxed)));
        (at, now_ms.saturating_sub(last) >= r.timeouts.guarantee)
    }

    /// Makes room for a new flow that would expire at `new_expiry` and is
    /// guaranteed or not, as Click's `shrink_heap_for_new_flow`: the
    /// best-effort flow (past its guarantee) that expires first goes;
    /// a best-effort new flow that would expire first is itself refused,
    /// and so is any when every flow is guaranteed (admission control).
    /// Click keeps heaps; this looks at the first [`EVICT_PROBES`] queued
    /// flows, so a new flow costs O(1). False: refused.
    fn evict(&self, c: &mut Control, now_ms: u64, new_expiry: u64, new_guaranteed: bool) -> bool {
        while c.queue.front().is_some_and(|&(slot, gen)| {
            let r = &c.recs[slot as usize];
            !r.live || r.gen != gen
        }) {
            c.queue.pop_front();
        }
        let mut best: Option<(u64, u32)> = None;
        for &(slot, gen) in c.queue.iter().take(EVICT_PROBES) {
            let r = c.recs[slot as usize];
            if !r.live || r.gen != gen {
                continue;
            }
            let (at, best_effort) = self.expiry(&r, slot, now_ms);
            if best_effort && best.is_none_or(|(b, _)| at < b) {
                best = Some((at, slot));
            }
        }
        match best {
            Some((at, _)) if !new_guaranteed && new_expiry <= at => false,
            Some((_, slot)) => {
                self.destroy(c, slot);
                true
            }
            None => false,
        }
    }

    /// Flows in the set.
    pub fn size(&self) -> usize {
        lock(&self.control).size
    }

    /// Flows of one rewriter.
    pub fn count_owner(&self, owner: u16) -> usize {
        let c = lock(&self.control);
        c.recs.iter().filter(|r| r.live && r.owner == owner).count()
    }

    /// The capacity.
    pub fn capacity(&self) -> usize {
        self.capacity.load(Relaxed)
    }

    /// Sets the capacity, at most the one the set was made with (its
    /// slots are allocated once); flows beyond it go now.
    pub fn set_capacity(&self, n: usize, now_ms: u64) -> Result<(), String> {
        if n == 0 || n > self.slots.len() {
            return Err(format!(
                "capacity: from 1 to {} (the configured MAPPING_CAPACITY)",
                self.slots.len()
            ));
        }
        self.capacity.store(n, Relaxed);
        self.reap_all(now_ms);
        Ok(())
    }

    /// Click's table lines of `owner`'s live mappings with protocol
    /// `proto` (any with `None`), both directions, sorted.
    pub fn unparse(&self, owner: u16, proto: Option<u8>, now_ms: u64) -> String {
        let c = lock(&self.control);
        let mut lines = Vec::new();
        for (slot, r) in c.recs.iter().enumerate() {
            if !r.live || r.owner != owner || proto.is_some_and(|p| p != r.fwd.proto) {
                continue;
            }
            let s = &self.slots[slot];
            let exp = (s.last_ms.load(Relaxed) + timeout_of(&r.timeouts, s.flags.load(Relaxed)))
                .saturating_sub(now_ms)
                .div_ceil(1000);
            for (k, reply) in [(r.fwd, false), (r.rev, true)] {
                if let Some(e) = self.get(&k) {
                    let (a, b) = if reply { ("", "*") } else { ("*", "") };
                    // Click's TCPRewriter shows a flow's current delta.
                    let d = lock(&self.seq)
                        .get(&(slot as u32))
                        .map_or(0, |d| d.current(reply));
                    let seq = match d {
                        0 => String::new(),
                        d if d > 0 => format!(" seq +{d}"),
                        d => format!(" seq {d}"),
                    };
                    lines.push(format!(
                        "{} => {}{seq} [{a}{} {b}{}] i{} exp{exp}",
                        k.tuple, e.new, r.fout, r.rout, r.input
                    ));
                }
            }
        }
        lines.sort();
        let mut out = String::new();
        for l in lines {
            out += &l;
            out.push('\n');
        }
        out
    }
}

/// A flow's timeout for its state bits.
fn timeout_of(t: &Timeouts, flags: u8) -> u64 {
    if t.tcp {
        if flags & F_DONE != 0 {
            t.done
        } else if flags & (F_DATA_FWD | F_DATA_REPLY) == (F_DATA_FWD | F_DATA_REPLY) {
            t.established
        } else {
            t.idle
        }
    } else {
        // UDP streaming: three packets, one of them a reply.
        let count = (flags >> F_COUNT_SHIFT) & 3;
        if count >= 3 && flags & F_REPLY_SEEN != 0 {
            t.established
        } else {
            t.idle
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: u32, sp: u16) -> Key {
        Key {
            tuple: Tuple {
                saddr: s,
                sport: sp,
                daddr: 9,
                dport: 80,
            },
            proto: 6,
            owner: 0,
        }
    }

    const T: Timeouts = Timeouts {
        idle: 300_000,
        established: 86_400_000,
        done: 240_000,
        guarantee: 5_000,
        tcp: true,
    };

    fn flow(k: Key, port: u16) -> NewFlow {
        let new = Tuple {
            saddr: 1,
            sport: port,
            ..k.tuple
        };
        let rev = Key {
            tuple: new.reverse(),
            ..k
        };
        NewFlow {
            fwd: k,
            fwd_entry: Entry {
                new,
                output: 0,
                writes: super::super::flow::W_ALL,
                reply: false,
                slot: 0,
                reply_anno: None,
                seq: false,
                timeouts: T,
            },
            rev,
            rev_entry: Entry {
                new: k.tuple.reverse(),
                output: 1,
                writes: super::super::flow::W_ALL,
                reply: true,
                slot: 0,
                reply_anno: None,
                seq: false,
                timeouts: T,
            },
            timeouts: T,
            input: 0,
            note: 0,
        }
    }

    #[test]
    fn both_directions_are_found() {
        let set = FlowSet::new(8);
        let k = key(5, 1000);
        let e = set.create(&k, 0, |_| Ok(flow(k, 2000))).unwrap();
        assert_eq!(e.new.sport, 2000);
        let back = Key {
            tuple: e.new.reverse(),
            ..k
        };
        let r = set.lookup(&back, 10, 0).unwrap();
        assert!(r.reply);
        assert_eq!(r.new, k.tuple.reverse());
        assert_eq!(set.size(), 1);
    }

    #[test]
    fn a_full_set_refuses_guaranteed_flows_and_evicts_idle_ones() {
        let set = FlowSet::new(2);
        for i in 0..2 {
            let k = key(i, 1);
            set.create(&k, 0, |_| Ok(flow(k, 100 + i as u16))).unwrap();
        }
        let k = key(7, 1);
        assert_eq!(
            set.create(&k, 1000, |_| Ok(flow(k, 200))),
            Err(Refused::Full)
        );
        // Flow 0 is used again; flow 1 is not and loses its guarantee.
        set.lookup(&key(0, 1), 4_000, 0).unwrap();
        assert!(set.create(&k, 6_000, |_| Ok(flow(k, 200))).is_ok());
        assert!(set.lookup(&key(1, 1), 6_000, 0).is_none());
        assert!(set.lookup(&key(0, 1), 6_000, 0).is_some());
        assert_eq!(set.size(), 2);
    }

    #[test]
    fn a_full_set_evicts_the_flow_that_expires_first() {
        let set = FlowSet::new(3);
        let mut replies = Vec::new();
        for i in 0..3 {
            let k = key(i, 1);
            let e = set.create(&k, 0, |_| Ok(flow(k, 100 + i as u16))).unwrap();
            replies.push(Key {
                tuple: e.new.reverse(),
                ..k
            });
        }
        // Flows 0 and 2 carry data both ways (24 hours); flow 1 does not
        // and expires first, although it is not the oldest.
        for i in [0, 2] {
            set.lookup(&key(i, 1), 1_000, F_DATA_FWD);
            set.lookup(&replies[i as usize], 1_000, F_DATA_FWD);
        }
        set.lookup(&key(1, 1), 2_000, 0);
        let k = key(9, 1);
        let e = set.create(&k, 10_000, |_| Ok(flow(k, 200))).unwrap();
        set.lookup(&k, 10_000, F_DATA_FWD);
        set.lookup(
            &Key {
                tuple: e.new.reverse(),
                ..k
            },
            10_000,
            F_DATA_FWD,
        );
        assert!(set.lookup(&key(1, 1), 10_000, 0).is_none());
        assert!(set.lookup(&key(0, 1), 10_000, 0).is_some());
        assert!(set.lookup(&key(2, 1), 10_000, 0).is_some());
        // Without a guarantee, a new flow that would expire before every
        // other is itself refused.
        let mut nf = flow(key(10, 1), 300);
        nf.timeouts.guarantee = 0;
        assert_eq!(
            set.create(&key(10, 1), 20_000, |_| Ok(nf)),
            Err(Refused::Full)
        );
    }

    /// UDP streams after three packets, one a reply; the first packet,
    /// which made the flow, counts (Click's UDPFlow).
    #[test]
    fn udp_streams_after_three_packets_counting_the_first() {
        let set = FlowSet::new(4);
        let k = key(1, 1);
        let mut nf = flow(k, 100);
        let t = Timeouts {
            idle: 4_000,
            established: 5_000,
            done: 4_000,
            guarantee: 1_000,
            tcp: false,
        };
        (nf.timeouts, nf.fwd_entry.timeouts, nf.rev_entry.timeouts) = (t, t, t);
        let e = set.create(&k, 0, |_| Ok(nf)).unwrap();
        let back = Key {
            tuple: e.new.reverse(),
            ..k
        };
        set.lookup(&back, 100, 0).unwrap();
        set.lookup(&back, 200, 0).unwrap();
        assert_eq!(set.reap_all(4_300), 0, "streaming: 5 s from 0.2 s");
        assert_eq!(set.reap_all(5_200), 1);
    }

    #[test]
    fn idle_flows_expire_and_are_reaped() {
        let set = FlowSet::new(4);
        let k = key(1, 1);
        set.create(&k, 0, |_| Ok(flow(k, 100))).unwrap();
        assert_eq!(set.reap_all(299_999), 0);
        assert_eq!(set.reap_all(300_000), 1);
        assert_eq!(set.size(), 0);
        assert!(set.lookup(&k, 300_001, 0).is_none());
    }

    #[test]
    fn tcp_state_picks_the_timeout() {
        let set = FlowSet::new(4);
        let k = key(1, 1);
        let e = set.create(&k, 0, |_| Ok(flow(k, 100))).unwrap();
        let back = Key {
            tuple: e.new.reverse(),
            ..k
        };
        set.lookup(&k, 1, F_DATA_FWD);
        set.lookup(&back, 2, F_DATA_FWD);
        assert_eq!(set.reap_all(400_000), 0, "established: 24 hours");
        set.lookup(&k, 400_000, F_DONE);
        assert_eq!(set.reap_all(640_000), 1, "done: 4 minutes");
    }
}

#[cfg(test)]
mod threads {
    use super::*;
    use std::sync::Arc;

    /// A flow made on one worker is found, both ways, on another.
    #[test]
    fn workers_share_mappings() {
        let set = Arc::new(FlowSet::new(1024));
        let maker = {
            let set = Arc::clone(&set);
            std::thread::spawn(move || {
                for i in 0..500u16 {
                    let k = Key {
                        tuple: Tuple {
                            saddr: 7,
                            sport: i,
                            daddr: 9,
                            dport: 80,
                        },
                        proto: 17,
                        owner: 0,
                    };
                    let t = Timeouts {
                        idle: 1000,
                        established: 1000,
                        done: 1000,
                        guarantee: 0,
                        tcp: false,
                    };
                    let new = Tuple {
                        saddr: 1,
                        sport: 10_000 + i,
                        ..k.tuple
                    };
                    let e = |new, reply| Entry {
                        new,
                        output: u16::from(reply),
                        writes: 15,
                        reply,
                        slot: 0,
                        reply_anno: None,
                        seq: false,
                        timeouts: t,
                    };
                    set.create(&k, 0, |_| {
                        Ok(NewFlow {
                            fwd: k,
                            fwd_entry: e(new, false),
                            rev: Key {
                                tuple: new.reverse(),
                                ..k
                            },
                            rev_entry: e(k.tuple.reverse(), true),
                            timeouts: t,
                            input: 0,
                            note: 0,
                        })
                    })
                    .unwrap();
                }
            })
        };
        maker.join().unwrap();
        let found = std::thread::spawn(move || {
            (0..500u16)
                .filter(|&i| {
                    let back = Key {
                        tuple: Tuple {
                            saddr: 9,
                            sport: 80,
                            daddr: 1,
                            dport: 10_000 + i,
                        },
                        proto: 17,
                        owner: 0,
                    };
                    set.lookup(&back, 1, 0)
                        .is_some_and(|e| e.reply && e.new.dport == i)
                })
                .count()
        })
        .join()
        .unwrap();
        assert_eq!(found, 500);
    }
}
