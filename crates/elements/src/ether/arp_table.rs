//! The state behind `ARPQuerier`: IPv4 → Ethernet mappings (RFC 826's
//! translation table), packets waiting for a mapping, and the timing rules
//! for queries and expiry.
//!
//! The rules are Click's `ARPTable` (elements/ethernet/arptable.hh):
//! entries expire TIMEOUT after they were last confirmed; at most 10 queries
//! a second go out for one address, and one every 2 seconds once 10 in a
//! row went unanswered; a total of CAPACITY packets may wait, and when a
//! packet would exceed it the oldest waiting packets are dropped until only
//! `CAPACITY - CAPACITY / CAPACITY_SLIM_FACTOR` remain. bricks adds what
//! Linux's neighbour table does and Click does not: waiting packets are
//! dropped after RETRIES unanswered retries, a second apart (none by
//! default: as Click, only packets send queries), a retry being skipped
//! while packets send queries of their own; the table is bounded (ENTRY_CAPACITY,
//! 4096 entries by default; Linux's `gc_thresh3` is 1024), unresolved
//! entries are evicted before resolved ones, oldest first; and queries
//! leave each interface at a bounded rate (QUERY_RATE), whatever the
//! traffic asks for.
//!
//! The table is split in two, because bricks runs one instance of the graph
//! per worker core (RouteBricks §4.2) and an ARP reply reaches whichever
//! worker the NIC steered it to:
//!
//! - [`Neighbours`], shared by every worker's instance of one element
//!   (through `Args::shared`): every entry, Pending (queried, no answer
//!   yet: the addresses "we asked about"), Known or Static, each with its
//!   query timing, and the interface's query rate limit. Workers read it
//!   on every packet without a lock.
//! - [`ArpTable`], one per worker: the packets waiting on this worker (a
//!   packet never changes core) and the retry timing of the addresses
//!   they wait for.
//!
//! # Why a fixed-size open-addressed table
//!
//! A hostile host can make a router learn or query an address per frame
//! it sends, so adding an entry must cost O(1) and must not disturb the
//! readers (a copy-on-write map cost a copy of the whole table per new
//! address: 20,000 distinct senders took 10 s). [`Neighbours`] is an array
//! of slots, twice ENTRY_CAPACITY rounded up to a power of two, probed
//! linearly from a seeded hash for at most [`PROBE_LIMIT`] slots. Each slot
//! is a handful of atomic words: readers never lock, never allocate, and
//! see one mapping word (Ethernet address and state) whole. A slot that
//! changes address is guarded by a sequence number (a per-slot seqlock), so
//! a reader never takes one address's mapping for another's; a reader that
//! meets a slot mid-change treats it as a miss, which only makes the packet
//! wait for a query, so readers never wait for a writer. Writers (ARP
//! frames, handlers, expiry) take one mutex that readers never touch, do
//! O(1) work, and publish nothing new: changes are stores into the slots.
//! Removals leave tombstones; when tombstones and entries fill three
//! quarters of the slots the array is rebuilt into a fresh one (an
//! `arc-swap` publication), which happens at most once per ENTRY_CAPACITY/2
//! insertions: amortised O(1). The alternatives cost more: a sharded map
//! still copies or locks a shard per insertion, and a map under a
//! read-write lock makes every packet take the lock.
//!
//! Eviction and expiry follow two FIFO queues of (address, time) records,
//! one for Pending and one for Known entries, kept by the writers. A record
//! whose entry was renewed since is put back at the end with its new time
//! (a second chance), one whose entry is gone is dropped, so the work of a
//! timer run or an eviction is proportional to what expires or is evicted,
//! never a scan of the table. The per-worker retries use a deadline heap
//! for the same reason.
//!
//! Time is in nanoseconds ([`Timestamp`]'s unit), always the engine's
//! clock as passed in, so `--clock trace` runs are deterministic. Nothing
//! here blocks or sets timers; the element asks [`ArpTable::run_timer`]
//! what is due.
//!
//! [`Timestamp`]: bricks_packet::Timestamp

use arc_swap::{ArcSwap, Guard};
use bricks_packet::Packet;
use bricks_wire::ethernet::EthernetAddress;
use std::cmp::Reverse;
use std::collections::hash_map::RandomState;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};
use std::net::Ipv4Addr;
use std::sync::atomic::{fence, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One second.
pub const SEC: u64 = 1_000_000_000;
/// Queries for one address are at least this far apart: Click's "at most
/// 10 queries a second for any IP address".
const POLL_GAP: u64 = SEC / 10;
/// ... and this far apart once [`SLOW_AFTER`] in a row went unanswered.
const SLOW_POLL_GAP: u64 = 2 * SEC;
const SLOW_AFTER: u32 = 10;
/// Time between retries of a query while packets wait (Linux's
/// `retrans_time`).
pub const RETRY_INTERVAL: u64 = SEC;
/// How often a worker that holds packets looks for mappings that another
/// worker learnt, when no packet arrives to make it look (see
/// [`ArpTable::take_resolved`]).
pub const RECHECK_INTERVAL: u64 = SEC / 1000;
/// ENTRY_CAPACITY's default: four times Linux's `gc_thresh3`, a few
/// hundred kilobytes of slots.
pub const DEFAULT_ENTRY_CAPACITY: usize = 4096;
/// The largest ENTRY_CAPACITY accepted (about 100 MB of slots).
pub const MAX_ENTRY_CAPACITY: usize = 1 << 20;
/// QUERY_RATE's default, queries a second for one interface.
pub const DEFAULT_QUERY_RATE: u32 = 256;
/// Slots a lookup or an insertion looks at, at most. With at most half the
/// slots in use and a hash the sender cannot predict, a run this long is
/// vanishingly rare; an insertion that meets one evicts within it.
pub const PROBE_LIMIT: usize = 32;

/// How far an entry's address can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Queried, no answer yet; the address is meaningless.
    Pending,
    /// Learnt from an ARP packet; expires TIMEOUT after `live_at`.
    Known,
    /// Inserted by hand: never expires, never polled, not overwritten by
    /// ARP traffic.
    Static,
}

fn poll_gap(polls: u32) -> u64 {
    if polls >= SLOW_AFTER {
        SLOW_POLL_GAP
    } else {
        POLL_GAP
    }
}

fn expired(live_at: u64, now: u64, timeout: u64) -> bool {
    timeout != 0 && live_at.saturating_add(timeout) < now
}

/// A hasher for IPv4 keys: one multiply folded to 64 bits (foldhash's
/// mixing) with a per-table random seed, much cheaper per packet than
/// SipHash and not predictable from outside.
#[derive(Clone, Copy)]
struct AddrHash {
    seed: u64,
}

impl AddrHash {
    fn random() -> AddrHash {
        AddrHash {
            seed: RandomState::new().hash_one(0x5eed_u64),
        }
    }
}

struct AddrHasher {
    seed: u64,
    state: u64,
}

impl BuildHasher for AddrHash {
    type Hasher = AddrHasher;
    fn build_hasher(&self) -> AddrHasher {
        AddrHasher {
            seed: self.seed,
            state: 0,
        }
    }
}

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(u32::from(b));
        }
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        let x = (self.state ^ u64::from(n)) ^ self.seed;
        let m = u128::from(x) * 0x9e37_79b9_7f4a_7c15;
        self.state = (m as u64) ^ ((m >> 64) as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.state
    }
}

// ---------------------------------------------------------------------
// The shared half.

/// `Slot::key` of a slot never used since the array was built: probes
/// stop here.
const EMPTY: u64 = 0;
/// `Slot::key` of a slot whose entry was removed: probes go on.
const TOMB: u64 = 1;
/// Set in `Slot::key` above the 32 address bits when the slot holds one.
const LIVE: u64 = 1 << 32;

/// `Slot::mapping`'s state bits (above the 48 address bits).
const PENDING: u64 = 1 << 48;
const KNOWN: u64 = 2 << 48;
const STATIC: u64 = 3 << 48;
const STATE_BITS: u64 = 3 << 48;
/// `Slot::polled_at` when no query went out since the entry was made or
/// last answered.
const NEVER: u64 = u64::MAX;

/// One entry's place in the shared array.
#[derive(Debug, Default)]
struct Slot {
    /// Even when `key` is stable; odd while a writer changes it (and the
    /// fields that go with a new address). Only writers change it, under
    /// the writer lock.
    seq: AtomicU32,
    /// [`EMPTY`], [`TOMB`], or [`LIVE`] | the IPv4 address.
    key: AtomicU64,
    /// The Ethernet address (low 48 bits) and [`PENDING`], [`KNOWN`] or
    /// [`STATIC`]: one word, so a reader sees a whole mapping, old or new.
    mapping: AtomicU64,
    /// Known: when the mapping was last confirmed. Pending: when the
    /// address was last wanted by a packet.
    live_at: AtomicU64,
    /// When the last query (or renewal poll) went out, or [`NEVER`].
    /// Claimed by compare-and-swap, so one worker sends each.
    polled_at: AtomicU64,
    /// Queries since the last answer.
    polls: AtomicU32,
    /// Click's `_live_at_j`, for the `table` handler only (never for
    /// expiry): when the mapping was made or last set, moved up to TIMEOUT
    /// before now while packets wait for it (Click keeps a wanted entry
    /// "just this side of expiring"), so the age the handler prints is
    /// Click's.
    shown: AtomicU64,
    /// The entry's place in Click's age list, which orders the `table`
    /// handler's lines after `shown`: an entry made or set goes last
    /// (increasing positive numbers), one moved up by a waiting packet
    /// goes before the others of its age (decreasing negative numbers).
    order: AtomicI64,
}

/// A mapping as read from the shared table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mapping {
    eth: EthernetAddress,
    state: State,
    live_at: u64,
}

fn pack(eth: EthernetAddress, state: State) -> u64 {
    let e = eth.0;
    let bits = u64::from_be_bytes([0, 0, e[0], e[1], e[2], e[3], e[4], e[5]]);
    bits | match state {
        State::Pending => PENDING,
        State::Known => KNOWN,
        State::Static => STATIC,
    }
}

fn unpack(m: u64) -> (EthernetAddress, State) {
    let b = m.to_be_bytes();
    let state = match m & STATE_BITS {
        STATIC => State::Static,
        KNOWN => State::Known,
        _ => State::Pending,
    };
    (EthernetAddress([b[2], b[3], b[4], b[5], b[6], b[7]]), state)
}

impl Slot {
    #[inline]
    fn mapping(&self) -> Mapping {
        let (eth, state) = unpack(self.mapping.load(Ordering::Acquire));
        Mapping {
            eth,
            state,
            live_at: self.live_at.load(Ordering::Relaxed),
        }
    }

    /// Changes the mapping of the address the slot already holds. Writers
    /// only; the mapping goes last so a reader that sees it sees the rest.
    fn set(&self, eth: EthernetAddress, state: State, now: u64) {
        self.polls.store(0, Ordering::Relaxed);
        self.polled_at.store(NEVER, Ordering::Relaxed);
        self.live_at.store(now, Ordering::Relaxed);
        self.shown.store(now, Ordering::Relaxed);
        self.mapping.store(pack(eth, state), Ordering::Release);
    }

    /// Makes an expired Known entry Pending again, wanted `now`. As in
    /// Click, the stale Ethernet address stays (shown in `table`, never
    /// used) and so does the entry's age.
    fn set_pending(&self, now: u64) {
        let (eth, _) = unpack(self.mapping.load(Ordering::Relaxed));
        self.polls.store(0, Ordering::Relaxed);
        self.polled_at.store(NEVER, Ordering::Relaxed);
        self.live_at.store(now, Ordering::Relaxed);
        self.mapping
            .store(pack(eth, State::Pending), Ordering::Release);
    }

    /// Whether the per-address rate limit lets a query out now.
    fn poll_allowed(&self, now: u64) -> bool {
        let at = self.polled_at.load(Ordering::Relaxed);
        let polls = self.polls.load(Ordering::Relaxed);
        at == NEVER || now >= at.saturating_add(poll_gap(polls))
    }

    /// Takes the right to send a query now, if the rate limit allows one;
    /// at most one of several workers asking at once gets it.
    fn claim_poll(&self, now: u64) -> bool {
        let at = self.polled_at.load(Ordering::Relaxed);
        let polls = self.polls.load(Ordering::Relaxed);
        if at != NEVER && now < at.saturating_add(poll_gap(polls)) {
            return false;
        }
        let won = self
            .polled_at
            .compare_exchange(at, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        if won {
            self.polls.fetch_add(1, Ordering::Relaxed);
        }
        won
    }
}

/// The slot array: a power of two long, probed linearly.
struct Slots {
    slots: Box<[Slot]>,
    hash: AddrHash,
}

impl Slots {
    fn new(len: usize, hash: AddrHash) -> Slots {
        Slots {
            slots: (0..len).map(|_| Slot::default()).collect(),
            hash,
        }
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    #[inline]
    fn home(&self, key: u32) -> usize {
        (self.hash.hash_one(key) >> 32) as usize & self.mask()
    }

    /// The slot holding `key`, read without a lock: `None` if there is
    /// none, or if the slot is being given to another address right now.
    #[inline]
    fn find(&self, key: u32) -> Option<(&Slot, Mapping)> {
        let want = LIVE | u64::from(key);
        let mut i = self.home(key);
        for _ in 0..PROBE_LIMIT {
            let s = &self.slots[i];
            let seq = s.seq.load(Ordering::Acquire);
            let k = s.key.load(Ordering::Relaxed);
            if k == EMPTY && seq & 1 == 0 {
                return None;
            }
            if k == want {
                let m = s.mapping();
                fence(Ordering::Acquire);
                if seq & 1 == 0 && s.seq.load(Ordering::Relaxed) == seq {
                    return Some((s, m));
                }
                // Mid-change: as good as absent (the packet waits).
                return None;
            }
            i = (i + 1) & self.mask();
        }
        None
    }

    /// The index of `key`'s slot. Writers only (the lock keeps it stable).
    fn index_of(&self, key: u32) -> Option<usize> {
        let want = LIVE | u64::from(key);
        let mut i = self.home(key);
        for _ in 0..PROBE_LIMIT {
            match self.slots[i].key.load(Ordering::Relaxed) {
                EMPTY => return None,
                k if k == want => return Some(i),
                _ => i = (i + 1) & self.mask(),
            }
        }
        None
    }

    /// Gives slot `i` to `key` (or frees it when `key` is [`TOMB`]).
    /// Writers only.
    fn write_key(&self, i: usize, key: u64, mapping: u64, now: u64) {
        let s = &self.slots[i];
        let seq = s.seq.load(Ordering::Relaxed);
        s.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        s.key.store(key, Ordering::Relaxed);
        s.mapping.store(mapping, Ordering::Relaxed);
        s.live_at.store(now, Ordering::Relaxed);
        s.shown.store(now, Ordering::Relaxed);
        s.polled_at.store(NEVER, Ordering::Relaxed);
        s.polls.store(0, Ordering::Relaxed);
        s.seq.store(seq.wrapping_add(2), Ordering::Release);
    }
}

/// The per-interface limit on queries: a token bucket kept as one word
/// (the generic cell rate algorithm: the time at which the bucket will be
/// full again), shared by the workers without a lock.
#[derive(Debug)]
pub(crate) struct QueryBucket {
    /// When the bucket is next full (ns); 0 at start.
    tat: AtomicU64,
    /// Time one query costs (ns); 0 for no limit.
    interval: u64,
    /// How far `tat` may run ahead of now: a burst of one second's worth.
    tolerance: u64,
}

impl QueryBucket {
    pub(crate) fn new(rate: u32) -> QueryBucket {
        let interval = if rate == 0 { 0 } else { SEC / u64::from(rate) };
        QueryBucket {
            tat: AtomicU64::new(0),
            interval,
            tolerance: interval.saturating_mul(u64::from(rate.saturating_sub(1))),
        }
    }

    pub(crate) fn allows(&self, now: u64) -> bool {
        self.interval == 0 || self.tat.load(Ordering::Relaxed).saturating_sub(now) <= self.tolerance
    }

    pub(crate) fn take(&self, now: u64) -> bool {
        if self.interval == 0 {
            return true;
        }
        let mut tat = self.tat.load(Ordering::Relaxed);
        loop {
            let base = tat.max(now);
            if base - now > self.tolerance {
                return false;
            }
            match self.tat.compare_exchange_weak(
                tat,
                base + self.interval,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(v) => tat = v,
            }
        }
    }
}

/// What the writers keep beside the slots: the eviction and expiry order,
/// and how full the array is.
#[derive(Debug, Default)]
struct Writer {
    /// (address, `live_at` when recorded) of Pending entries, oldest first.
    pending: VecDeque<(u32, u64)>,
    /// The same for Known entries.
    known: VecDeque<(u32, u64)>,
    /// Slots that hold an entry or a tombstone.
    used: usize,
}

/// Why the table did not take a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The address has a static entry, which ARP traffic does not change.
    Static,
    /// Nobody asked for the address (no Pending entry) and the frame may
    /// not create one; or a frame that cannot be told apart from another
    /// interface's tried to change a known mapping.
    Unsolicited,
    /// Every entry is static and the table is full.
    Full,
}

/// What ARP traffic may do to the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learn {
    /// Make an entry, or update any entry (a request for our address from
    /// the subnet, RFC 826's merge; `insert`).
    Create,
    /// Update an existing entry, Pending or Known, and resolve packets
    /// waiting for it (a reply addressed to us).
    Update,
    /// Confirm a Known entry whose Ethernet address is unchanged, nothing
    /// else (a broadcast frame: it may have come from another interface).
    Refresh,
    /// Resolve a Pending entry, or confirm a Known one whose Ethernet
    /// address is unchanged: a reply to our own query for an address
    /// outside the interface's subnet (a next hop the routes chose; Click
    /// learns these), which may not change what is already known.
    Answer,
}

/// Entries the shared table made room for, and how often it rebuilt its
/// array; shared by the workers.
#[derive(Debug, Default)]
pub struct TableWork {
    /// Entries evicted to make room for new ones.
    pub evictions: AtomicU64,
    /// Times the slot array was rebuilt (published anew).
    pub rebuilds: AtomicU64,
    /// Slots copied by those rebuilds.
    pub slots_copied: AtomicU64,
}

/// The entries every worker's instance of one `ARPQuerier` shares, read
/// without a lock (see the module documentation for why this shape).
pub struct Neighbours {
    slots: ArcSwap<Slots>,
    writer: Mutex<Writer>,
    /// Entries now.
    len: AtomicUsize,
    /// Most entries.
    capacity: usize,
    /// Bumped (Release) after every change that can make an address
    /// usable: a worker that holds packets and sees it move looks for the
    /// addresses it waits for.
    generation: AtomicU64,
    queries: QueryBucket,
    hash: AddrHash,
    work: TableWork,
    /// Live [`ArpTable`]s over this table (the workers).
    instances: AtomicUsize,
    /// The last number given out for [`Slot::order`].
    order: AtomicI64,
}

impl core::fmt::Debug for Neighbours {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Neighbours")
            .field("entries", &self.len())
            .field("capacity", &self.capacity)
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .field("instances", &self.instances.load(Ordering::Relaxed))
            .finish()
    }
}

impl Default for Neighbours {
    fn default() -> Neighbours {
        Neighbours::new(DEFAULT_ENTRY_CAPACITY, DEFAULT_QUERY_RATE)
    }
}

/// A view of the shared entries as of one moment; hold it for a batch.
pub struct Snapshot(Guard<Arc<Slots>>);

impl core::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Snapshot")
            .field("slots", &self.0.slots.len())
            .finish()
    }
}

impl Snapshot {
    #[inline]
    fn get(&self, key: u32) -> Option<Mapping> {
        self.0.find(key).map(|(_, m)| m)
    }

    /// The address to send to if `key`'s mapping is usable at `now`.
    #[inline]
    fn usable(&self, key: u32, now: u64, timeout: u64) -> Option<EthernetAddress> {
        let m = self.get(key)?;
        match m.state {
            State::Static => Some(m.eth),
            State::Known if !expired(m.live_at, now, timeout) => Some(m.eth),
            _ => None,
        }
    }
}

impl Neighbours {
    /// An empty table for at most `capacity` entries (at least 1, at most
    /// [`MAX_ENTRY_CAPACITY`]) that sends at most `query_rate` queries a
    /// second (0: no limit).
    pub fn new(capacity: usize, query_rate: u32) -> Neighbours {
        let capacity = capacity.clamp(1, MAX_ENTRY_CAPACITY);
        let hash = AddrHash::random();
        Neighbours {
            slots: ArcSwap::from_pointee(Slots::new(Self::slot_count(capacity), hash)),
            writer: Mutex::new(Writer::default()),
            len: AtomicUsize::new(0),
            capacity,
            generation: AtomicU64::new(0),
            queries: QueryBucket::new(query_rate),
            hash,
            work: TableWork::default(),
            instances: AtomicUsize::new(0),
            order: AtomicI64::new(0),
        }
    }

    /// Puts `slot`'s entry last in the age list (made or set now).
    fn to_back(&self, slot: &Slot) {
        let n = self.order.fetch_add(1, Ordering::Relaxed) + 1;
        slot.order.store(n, Ordering::Relaxed);
    }

    /// A packet wants the Pending entry in `slot` at `now`: as Click's
    /// `append_query`, the age the `table` handler shows stops at TIMEOUT,
    /// and the entry moves up the age list. Display only: a worker may do
    /// it without the writer lock, and a race with a writer reusing the
    /// slot only misplaces that one line.
    fn keep_shown(&self, slot: &Slot, now: u64, timeout: u64) {
        let floor = now.saturating_sub(timeout);
        if timeout != 0 && slot.shown.load(Ordering::Relaxed) < floor {
            slot.shown.store(floor, Ordering::Relaxed);
            let n = self.order.fetch_add(1, Ordering::Relaxed) + 1;
            slot.order.store(-n, Ordering::Relaxed);
        }
    }

    fn slot_count(capacity: usize) -> usize {
        (capacity * 2).next_power_of_two().max(PROBE_LIMIT)
    }

    /// The entries now.
    #[inline]
    pub fn snapshot(&self) -> Snapshot {
        Snapshot(self.slots.load())
    }

    /// Number of entries, Pending ones included.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Most entries (ENTRY_CAPACITY).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The writers' work so far.
    pub fn work(&self) -> &TableWork {
        &self.work
    }

    /// Changes seen so far (see [`ArpTable::take_resolved`]).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Every mapping usable at `now` (worker clock, nanoseconds) with
    /// entries living `timeout` (0: for ever): static entries, and known
    /// ones not yet expired. Walks the whole table: for a copy kept
    /// outside the element (the XDP fast path's), never per packet.
    pub fn usable_entries(&self, now: u64, timeout: u64) -> Vec<(Ipv4Addr, EthernetAddress)> {
        let slots = self.slots.load();
        let mut out = Vec::new();
        for s in slots.slots.iter() {
            let k = s.key.load(Ordering::Relaxed);
            if k & LIVE == 0 {
                continue;
            }
            let ip = Ipv4Addr::from(k as u32);
            // Read through the lock-free lookup, which ignores a slot
            // being rewritten.
            if let Some((_, m)) = slots.find(k as u32) {
                let ok = match m.state {
                    State::Static => true,
                    State::Known => !expired(m.live_at, now, timeout),
                    State::Pending => false,
                };
                if ok {
                    out.push((ip, m.eth));
                }
            }
        }
        out
    }

    /// How many workers' tables use this one.
    pub fn instances(&self) -> usize {
        self.instances.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes the entry in slot `i`. The caller holds the lock.
    fn remove_at(&self, slots: &Slots, i: usize) {
        slots.write_key(i, TOMB, 0, 0);
        self.len.fetch_sub(1, Ordering::Relaxed);
    }

    /// Evicts the oldest Pending entry, or else the oldest Known one.
    /// Returns false if only static entries are left.
    fn evict_one(&self, w: &mut Writer, slots: &Slots) -> bool {
        for state in [State::Pending, State::Known] {
            loop {
                let q = if state == State::Pending {
                    &mut w.pending
                } else {
                    &mut w.known
                };
                let Some((key, stamp)) = q.pop_front() else {
                    break;
                };
                let Some(i) = slots.index_of(key) else {
                    continue;
                };
                let m = slots.slots[i].mapping();
                if m.state != state {
                    continue;
                }
                if m.live_at != stamp {
                    // Renewed since it was queued: a second chance.
                    q.push_back((key, m.live_at));
                    continue;
                }
                self.remove_at(slots, i);
                self.work.evictions.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        }
        false
    }

    /// Adds `key` (absent) with `mapping`. The caller holds the lock.
    fn insert(
        &self,
        w: &mut Writer,
        key: u32,
        eth: EthernetAddress,
        state: State,
        now: u64,
    ) -> Result<(), Refusal> {
        let mut slots = self.slots.load_full();
        if self.len() >= self.capacity && !self.evict_one(w, &slots) {
            return Err(Refusal::Full);
        }
        if w.used + 1 > slots.slots.len() / 4 * 3 {
            slots = self.rebuild(w);
        }
        let mut i = slots.home(key);
        let mut free = None;
        let mut oldest: Option<(u64, usize)> = None;
        for _ in 0..PROBE_LIMIT {
            let s = &slots.slots[i];
            match s.key.load(Ordering::Relaxed) {
                EMPTY | TOMB => {
                    free = Some(i);
                    break;
                }
                _ => {
                    let m = s.mapping();
                    // Pending before Known, then the oldest.
                    let rank = match m.state {
                        State::Pending => m.live_at / 2,
                        State::Known => u64::MAX / 2 + m.live_at / 2,
                        State::Static => u64::MAX,
                    };
                    if m.state != State::Static && oldest.is_none_or(|(r, _)| rank < r) {
                        oldest = Some((rank, i));
                    }
                }
            }
            i = (i + 1) & slots.mask();
        }
        let i = match (free, oldest) {
            (Some(i), _) => {
                if slots.slots[i].key.load(Ordering::Relaxed) == EMPTY {
                    w.used += 1;
                }
                i
            }
            (None, Some((_, i))) => {
                // A full run of slots: make room in it.
                self.remove_at(&slots, i);
                self.work.evictions.fetch_add(1, Ordering::Relaxed);
                i
            }
            (None, None) => return Err(Refusal::Full),
        };
        slots.write_key(i, LIVE | u64::from(key), pack(eth, state), now);
        self.to_back(&slots.slots[i]);
        self.len.fetch_add(1, Ordering::Relaxed);
        match state {
            State::Pending => w.pending.push_back((key, now)),
            State::Known => w.known.push_back((key, now)),
            State::Static => {}
        }
        self.compact_queues(w, &slots);
        Ok(())
    }

    /// Copies the entries into a fresh array without tombstones and
    /// publishes it. Readers holding the old one finish their batch on it.
    fn rebuild(&self, w: &mut Writer) -> Arc<Slots> {
        let old = self.slots.load_full();
        let new = Slots::new(old.slots.len(), self.hash);
        let mut used = 0;
        for s in old.slots.iter() {
            let k = s.key.load(Ordering::Relaxed);
            if k & LIVE == 0 {
                continue;
            }
            let key = k as u32;
            let mut i = new.home(key);
            while new.slots[i].key.load(Ordering::Relaxed) != EMPTY {
                i = (i + 1) & new.mask();
            }
            let d = &new.slots[i];
            d.key.store(k, Ordering::Relaxed);
            d.mapping
                .store(s.mapping.load(Ordering::Relaxed), Ordering::Relaxed);
            d.live_at
                .store(s.live_at.load(Ordering::Relaxed), Ordering::Relaxed);
            d.polled_at
                .store(s.polled_at.load(Ordering::Relaxed), Ordering::Relaxed);
            d.polls
                .store(s.polls.load(Ordering::Relaxed), Ordering::Relaxed);
            d.shown
                .store(s.shown.load(Ordering::Relaxed), Ordering::Relaxed);
            d.order
                .store(s.order.load(Ordering::Relaxed), Ordering::Relaxed);
            used += 1;
        }
        w.used = used;
        let new = Arc::new(new);
        self.slots.store(new.clone());
        self.work.rebuilds.fetch_add(1, Ordering::Relaxed);
        self.work
            .slots_copied
            .fetch_add(old.slots.len() as u64, Ordering::Relaxed);
        new
    }

    /// Drops queue records of entries that are gone or changed state, once
    /// they outnumber the entries: O(entries) per as many changes.
    fn compact_queues(&self, w: &mut Writer, slots: &Slots) {
        let limit = 2 * self.capacity + 64;
        for state in [State::Pending, State::Known] {
            let q = if state == State::Pending {
                &mut w.pending
            } else {
                &mut w.known
            };
            if q.len() > limit {
                q.retain(|&(key, _)| {
                    slots
                        .index_of(key)
                        .is_some_and(|i| slots.slots[i].mapping().state == state)
                });
            }
        }
    }

    /// Applies what an ARP frame or a handler says of `key`.
    fn resolve(&self, key: u32, eth: EthernetAddress, now: u64, how: Learn) -> Result<(), Refusal> {
        let mut w = self.lock();
        let slots = self.slots.load_full();
        match slots.index_of(key) {
            Some(i) => {
                let s = &slots.slots[i];
                let m = s.mapping();
                match (m.state, how) {
                    (State::Static, _) => return Err(Refusal::Static),
                    (State::Pending, Learn::Refresh) => return Err(Refusal::Unsolicited),
                    (State::Known, Learn::Refresh | Learn::Answer) if m.eth != eth => {
                        return Err(Refusal::Unsolicited)
                    }
                    (State::Pending, _) => {
                        s.set(eth, State::Known, now);
                        w.known.push_back((key, now));
                        self.compact_queues(&mut w, &slots);
                    }
                    (State::Known, _) => s.set(eth, State::Known, now),
                }
                self.to_back(s);
            }
            None if how == Learn::Create => self.insert(&mut w, key, eth, State::Known, now)?,
            None => return Err(Refusal::Unsolicited),
        }
        drop(w);
        self.generation.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// Sets `key`'s mapping by hand (`insert`), Known or Static, whatever
    /// the entry was.
    fn insert_by_hand(
        &self,
        key: u32,
        eth: EthernetAddress,
        state: State,
        now: u64,
    ) -> Result<(), Refusal> {
        let mut w = self.lock();
        let slots = self.slots.load_full();
        match slots.index_of(key) {
            Some(i) => {
                let s = &slots.slots[i];
                let was = s.mapping().state;
                s.set(eth, state, now);
                self.to_back(s);
                if state == State::Known && was != State::Known {
                    w.known.push_back((key, now));
                    self.compact_queues(&mut w, &slots);
                }
            }
            None => self.insert(&mut w, key, eth, state, now)?,
        }
        drop(w);
        self.generation.fetch_add(1, Ordering::Release);
        Ok(())
    }

    /// Makes `key` Pending (absent, or a Known entry that expired), unless
    /// the table is full of static entries. Returns its slot's table.
    fn make_pending(&self, key: u32, now: u64, timeout: u64) -> Result<(), Refusal> {
        let mut w = self.lock();
        let slots = self.slots.load_full();
        match slots.index_of(key) {
            Some(i) => {
                let s = &slots.slots[i];
                let m = s.mapping();
                if m.state == State::Known && expired(m.live_at, now, timeout) {
                    s.set_pending(now);
                    w.pending.push_back((key, now));
                    self.compact_queues(&mut w, &slots);
                }
                Ok(())
            }
            None => self.insert(&mut w, key, EthernetAddress::BROADCAST, State::Pending, now),
        }
    }

    /// Removes `key`'s entry, a static one only if `statics`.
    fn remove(&self, key: u32, statics: bool) -> bool {
        let _w = self.lock();
        let slots = self.slots.load_full();
        match slots.index_of(key) {
            Some(i) if statics || slots.slots[i].mapping().state != State::Static => {
                self.remove_at(&slots, i);
                true
            }
            _ => false,
        }
    }

    fn clear(&self) {
        let mut w = self.lock();
        let cap = self.slots.load().slots.len();
        self.slots.store(Arc::new(Slots::new(cap, self.hash)));
        *w = Writer::default();
        self.len.store(0, Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Removes the entries that expired by `now` (Known ones TIMEOUT after
    /// they were confirmed, Pending ones `pending_life` after they were
    /// last wanted); returns when the next one may. The work is the
    /// entries looked at, which expired or were renewed since queued. If
    /// another worker is at it, does nothing.
    fn expire(&self, now: u64, timeout: u64, pending_life: u64) -> Option<u64> {
        let Ok(mut w) = self.writer.try_lock() else {
            return Some(now.saturating_add(SEC));
        };
        let slots = self.slots.load_full();
        let mut next: Option<u64> = None;
        for (state, life) in [(State::Pending, pending_life), (State::Known, timeout)] {
            if life == 0 {
                continue;
            }
            let q = if state == State::Pending {
                &mut w.pending
            } else {
                &mut w.known
            };
            while let Some(&(key, stamp)) = q.front() {
                if !expired(stamp, now, life) {
                    let at = stamp.saturating_add(life).saturating_add(1);
                    next = Some(next.map_or(at, |t| t.min(at)));
                    break;
                }
                q.pop_front();
                let Some(i) = slots.index_of(key) else {
                    continue;
                };
                let m = slots.slots[i].mapping();
                if m.state != state {
                    continue;
                }
                if expired(m.live_at, now, life) {
                    slots.write_key(i, TOMB, 0, 0);
                    self.len.fetch_sub(1, Ordering::Relaxed);
                } else {
                    q.push_back((key, m.live_at));
                }
            }
        }
        next
    }

    /// Whether a query for `key` may go out now, claiming it if so: the
    /// per-address rate (Click's) and the interface's QUERY_RATE. `None`
    /// when the interface's rate refused it.
    fn claim_query(&self, slot: &Slot, now: u64) -> Option<bool> {
        if !slot.poll_allowed(now) {
            return Some(false);
        }
        if !self.queries.take(now) {
            return None;
        }
        Some(slot.claim_poll(now))
    }
}

// ---------------------------------------------------------------------
// The per-worker half.

/// One unresolved address on this worker: the packets waiting for it and
/// this worker's retries.
#[derive(Debug)]
struct Waiting {
    /// When the first of the waiting packets came.
    since: u64,
    /// Retries so far.
    tries: u32,
    /// When the next retry (or the decision to give up) is due.
    retry_at: u64,
    held: VecDeque<Packet>,
}

/// Limits and timeouts, from the element's keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most packets waiting in all (0: no limit).
    pub capacity: usize,
    /// Most entries, Pending ones included.
    pub entry_capacity: usize,
    /// Most packets waiting for one address (0: no limit).
    pub entry_packet_capacity: usize,
    /// On overflow, drop until `capacity - capacity / slim_factor` wait.
    pub slim_factor: usize,
    /// Entry lifetime in ns (0: forever).
    pub timeout: u64,
    /// Age in ns after which using an entry sends a renewal query (0: never).
    pub poll_timeout: u64,
    /// Unanswered retries after which waiting packets are dropped.
    pub retries: u32,
    /// Most queries a second from this interface (0: no limit).
    pub query_rate: u32,
}

impl Limits {
    /// How long a Pending entry lives after a packet last wanted it: long
    /// enough for every retry.
    fn pending_life(&self) -> u64 {
        RETRY_INTERVAL.saturating_mul(u64::from(self.retries) + 2)
    }
}

impl Default for Limits {
    /// Click's defaults, and bricks' bounds.
    fn default() -> Limits {
        Limits {
            capacity: 2048,
            entry_capacity: DEFAULT_ENTRY_CAPACITY,
            entry_packet_capacity: 0,
            slim_factor: 2,
            timeout: 300 * SEC,
            poll_timeout: 60 * SEC,
            // Click sends queries only as packets come (its tests count
            // them); retries are asked for with RETRIES.
            retries: 0,
            query_rate: DEFAULT_QUERY_RATE,
        }
    }
}

/// Packets the table dropped, by reason, and what it refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drops {
    /// Waited through every retry without an answer.
    pub no_reply: u64,
    /// Over CAPACITY or ENTRY_PACKET_CAPACITY.
    pub hold_overflow: u64,
    /// Waited longer than TIMEOUT.
    pub expired: u64,
    /// Removed by the `delete` or `clear` handlers.
    pub cleared: u64,
    /// Not packets: new entries refused because the table was full of
    /// static entries.
    pub table_full: u64,
    /// Not packets: queries not sent because the interface's QUERY_RATE
    /// was used up.
    pub query_rate_limited: u64,
}

impl Drops {
    /// All the packets dropped.
    pub fn total(&self) -> u64 {
        self.no_reply + self.hold_overflow + self.expired + self.cleared
    }
}

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// A usable mapping; `poll` asks the caller to send a renewal query
    /// (POLL_TIMEOUT passed and the rate limits allow one).
    Known { eth: EthernetAddress, poll: bool },
    /// Nothing usable: the packet should wait.
    Unknown,
}

/// What became of a packet given to [`ArpTable::hold`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// It waits. `query` asks the caller to send a query now; `retry_at`
    /// is when [`ArpTable::run_timer`] next needs to run for this entry.
    Queued { query: bool, retry_at: u64 },
    /// Dropped: ENTRY_PACKET_CAPACITY packets already wait for this
    /// address (counted in `hold_overflow`).
    Dropped,
}

/// What [`ArpTable::run_timer`] did and wants.
#[derive(Debug, Default)]
pub struct TimerWork {
    /// Addresses to query again now (broadcast).
    pub queries: Vec<Ipv4Addr>,
    /// The earliest pending retry, if any.
    pub next_retry: Option<u64>,
    /// The earliest expiry of an entry, if any.
    pub next_expiry: Option<u64>,
}

/// One worker's view of the table: the shared entries plus the packets
/// this worker holds.
pub struct ArpTable {
    shared: Arc<Neighbours>,
    waiting: HashMap<u32, Waiting, AddrHash>,
    /// (retry time, address) of waiting entries; a record whose entry
    /// moved its retry or left is skipped when it comes up.
    retries: BinaryHeap<Reverse<(u64, u32)>>,
    limits: Limits,
    /// Packets waiting, all entries together.
    held: usize,
    drops: Drops,
    /// The shared generation last looked at by [`ArpTable::take_resolved`].
    seen_generation: u64,
}

impl core::fmt::Debug for ArpTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ArpTable")
            .field("shared", &self.shared)
            .field("waiting", &self.waiting.len())
            .field("held", &self.held)
            .field("limits", &self.limits)
            .finish()
    }
}

impl Drop for ArpTable {
    fn drop(&mut self) {
        self.shared.instances.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ArpTable {
    /// An empty table of its own.
    pub fn new(limits: Limits) -> ArpTable {
        let shared = Neighbours::new(limits.entry_capacity, limits.query_rate);
        ArpTable::with_neighbours(limits, Arc::new(shared))
    }

    /// A worker's table over entries shared with other workers.
    pub fn with_neighbours(limits: Limits, shared: Arc<Neighbours>) -> ArpTable {
        shared.instances.fetch_add(1, Ordering::Relaxed);
        ArpTable {
            seen_generation: shared.generation(),
            shared,
            waiting: HashMap::with_hasher(AddrHash::random()),
            retries: BinaryHeap::new(),
            limits,
            held: 0,
            drops: Drops::default(),
        }
    }

    /// The shared entries.
    pub fn neighbours(&self) -> &Arc<Neighbours> {
        &self.shared
    }

    /// Whether other workers use the same entries.
    pub fn shared_with_others(&self) -> bool {
        self.shared.instances() > 1
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Number of entries (shared by all workers), Pending ones included.
    pub fn len(&self) -> usize {
        self.shared.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Addresses this worker holds packets for.
    pub fn waiting_len(&self) -> usize {
        self.waiting.len()
    }

    /// Packets waiting on this worker.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Packets dropped and entries refused so far on this worker.
    pub fn drops(&self) -> &Drops {
        &self.drops
    }

    /// The shared entries now; hold it for a batch of lookups.
    #[inline]
    pub fn snapshot(&self) -> Snapshot {
        self.shared.snapshot()
    }

    /// The mapping for `ip`, if it is usable at `now`.
    pub fn lookup(&mut self, ip: Ipv4Addr, now: u64) -> Lookup {
        let snap = self.snapshot();
        self.lookup_in(&snap, ip, now)
    }

    /// [`ArpTable::lookup`] in a snapshot taken for a batch.
    #[inline]
    pub fn lookup_in(&mut self, snap: &Snapshot, ip: Ipv4Addr, now: u64) -> Lookup {
        let Some((slot, m)) = snap.0.find(ip.to_bits()) else {
            return Lookup::Unknown;
        };
        match m.state {
            State::Static => Lookup::Known {
                eth: m.eth,
                poll: false,
            },
            State::Known if !expired(m.live_at, now, self.limits.timeout) => {
                let pt = self.limits.poll_timeout;
                let poll = pt != 0
                    && now >= m.live_at.saturating_add(pt)
                    && match self.shared.claim_query(slot, now) {
                        Some(p) => p,
                        None => {
                            self.drops.query_rate_limited += 1;
                            false
                        }
                    };
                Lookup::Known { eth: m.eth, poll }
            }
            _ => Lookup::Unknown,
        }
    }

    /// The address [`ArpTable::lookup_in`] would answer for `ip` with no
    /// renewal poll due, found without side effects (no poll claimed, no
    /// counter moved); `None` when the answer could be anything else. Being
    /// pure, its answer for one address holds for a whole batch looked up
    /// in one snapshot at one time.
    #[inline]
    pub fn settled_in(&self, snap: &Snapshot, ip: Ipv4Addr, now: u64) -> Option<EthernetAddress> {
        let (_, m) = snap.0.find(ip.to_bits())?;
        match m.state {
            State::Static => Some(m.eth),
            State::Known => {
                let l = &self.limits;
                let no_poll = l.poll_timeout == 0 || now < m.live_at.saturating_add(l.poll_timeout);
                (no_poll && !expired(m.live_at, now, l.timeout)).then_some(m.eth)
            }
            _ => None,
        }
    }

    /// The packets this worker holds for `ip`, which the caller found
    /// usable: they leave before any newer packet for it. `None` if there
    /// are none.
    #[inline]
    pub fn take_waiting(&mut self, ip: Ipv4Addr) -> Option<VecDeque<Packet>> {
        if self.held == 0 {
            return None;
        }
        let w = self.waiting.remove(&ip.to_bits())?;
        self.held -= w.held.len();
        Some(w.held)
    }

    /// Keeps `p` until `ip` is resolved (Click's `append_query`), and says
    /// whether to query for it now.
    pub fn hold(&mut self, ip: Ipv4Addr, p: Packet, now: u64) -> Hold {
        let key = ip.to_bits();
        if let std::collections::hash_map::Entry::Vacant(v) = self.waiting.entry(key) {
            // Without retries nothing is sent at retry_at: the packets
            // are given up when the Pending entry would go (two seconds).
            let first = if self.limits.retries == 0 {
                2 * RETRY_INTERVAL
            } else {
                RETRY_INTERVAL
            };
            let retry_at = now.saturating_add(first);
            v.insert(Waiting {
                since: now,
                tries: 0,
                retry_at,
                held: VecDeque::new(),
            });
            self.retries.push(Reverse((retry_at, key)));
            self.compact_retries();
        }
        let limits = self.limits;
        let Some(e) = self.waiting.get_mut(&key) else {
            unreachable!("entry inserted above")
        };
        if limits.entry_packet_capacity != 0 && e.held.len() >= limits.entry_packet_capacity {
            self.drops.hold_overflow += 1;
            return Hold::Dropped;
        }
        e.held.push_back(p);
        let retry_at = e.retry_at;
        self.held += 1;
        if limits.capacity != 0 && self.held > limits.capacity {
            self.slim(key);
        }
        let query = self.want(key, now);
        Hold::Queued { query, retry_at }
    }

    /// Notes that a packet wants `key` resolved: makes it Pending in the
    /// shared table if needed, and claims a query if the rate limits allow.
    fn want(&mut self, key: u32, now: u64) -> bool {
        let timeout = self.limits.timeout;
        let snap = self.shared.snapshot();
        let found = snap.0.find(key);
        let usable = found.is_some_and(|(_, m)| {
            m.state == State::Static
                || (m.state == State::Known && !expired(m.live_at, now, timeout))
        });
        if usable {
            // Resolved meanwhile: the packets leave at the next look.
            return false;
        }
        match found {
            Some((slot, m)) if m.state == State::Pending => {
                slot.live_at.store(now, Ordering::Relaxed);
            }
            _ => {
                drop(snap);
                // Only addresses the interface can query for become
                // Pending: a flood of new destinations makes no more
                // entries than QUERY_RATE allows.
                if !self.shared.queries.allows(now) {
                    self.drops.query_rate_limited += 1;
                    return false;
                }
                if self.shared.make_pending(key, now, timeout).is_err() {
                    self.drops.table_full += 1;
                    return false;
                }
            }
        }
        let snap = self.shared.snapshot();
        let Some((slot, _)) = snap.0.find(key) else {
            return false;
        };
        self.shared.keep_shown(slot, now, timeout);
        match self.shared.claim_query(slot, now) {
            Some(q) => q,
            None => {
                self.drops.query_rate_limited += 1;
                false
            }
        }
    }

    /// Drops the oldest waiting packets, oldest entries first, until
    /// `capacity - capacity / slim_factor` packets wait (Click's `slim`).
    /// Dropping a batch at once keeps the cost of finding the oldest
    /// entries (a sort of at most CAPACITY entries) rare: amortised
    /// O(log CAPACITY) per packet. `keep`'s entry stays even if emptied.
    fn slim(&mut self, keep: u32) {
        let cap = self.limits.capacity;
        let target = (cap - cap / self.limits.slim_factor).max(1);
        let mut order: Vec<(u64, u32)> = self.waiting.iter().map(|(&k, e)| (e.since, k)).collect();
        order.sort_unstable();
        for (_, k) in order {
            if self.held <= target {
                break;
            }
            if let Some(e) = self.waiting.get_mut(&k) {
                while self.held > target && e.held.pop_front().is_some() {
                    self.held -= 1;
                    self.drops.hold_overflow += 1;
                }
                if e.held.is_empty() && k != keep {
                    self.waiting.remove(&k);
                }
            }
        }
    }

    /// Rebuilds the retry heap from the waiting entries once stale records
    /// outnumber them: O(entries) per as many retries.
    fn compact_retries(&mut self) {
        if self.retries.len() > 2 * self.waiting.len() + 64 {
            self.retries = self
                .waiting
                .iter()
                .map(|(&k, w)| Reverse((w.retry_at, k)))
                .collect();
        }
    }

    /// Applies an ARP frame's sender mapping (`how` says what it may do)
    /// and hands back the packets that waited for it on this worker,
    /// oldest first (other workers find the mapping through
    /// [`ArpTable::take_resolved`]).
    pub fn resolve(
        &mut self,
        ip: Ipv4Addr,
        eth: EthernetAddress,
        now: u64,
        how: Learn,
    ) -> Result<VecDeque<Packet>, Refusal> {
        let key = ip.to_bits();
        if let Err(r) = self.shared.resolve(key, eth, now, how) {
            if r == Refusal::Full {
                self.drops.table_full += 1;
            }
            return Err(r);
        }
        let held = self
            .waiting
            .remove(&key)
            .map(|w| w.held)
            .unwrap_or_default();
        self.held -= held.len();
        Ok(held)
    }

    /// Records `ip` at `eth`, making an entry if there is none.
    pub fn learn(
        &mut self,
        ip: Ipv4Addr,
        eth: EthernetAddress,
        now: u64,
    ) -> Option<VecDeque<Packet>> {
        self.resolve(ip, eth, now, Learn::Create).ok()
    }

    /// Like [`ArpTable::learn`], but only if `ip` already has an entry,
    /// Pending or Known (RFC 826's merge step).
    pub fn update(
        &mut self,
        ip: Ipv4Addr,
        eth: EthernetAddress,
        now: u64,
    ) -> Option<VecDeque<Packet>> {
        self.resolve(ip, eth, now, Learn::Update).ok()
    }

    /// Inserts a static entry, for every worker. Packets waiting for `ip`
    /// are sent at each worker's next call ([`ArpTable::take_resolved`]).
    pub fn insert_static(
        &mut self,
        ip: Ipv4Addr,
        eth: EthernetAddress,
        now: u64,
    ) -> Result<(), Refusal> {
        self.shared
            .insert_by_hand(ip.to_bits(), eth, State::Static, now)
    }

    /// The `insert` handler of ARPQuerier and ARPTable: `IP ETH` (a Known
    /// entry, as Click's) or `IP ETH static`, stamped `now`. `good`
    /// says whether ETH may be a neighbour's address.
    pub fn insert_handler(
        &mut self,
        value: &str,
        now: u64,
        good: impl FnOnce(EthernetAddress) -> Result<(), String>,
    ) -> Result<(), String> {
        use bricks_element::FromArg;
        let words: Vec<&str> = value.split_ascii_whitespace().collect();
        let [i, e, rest @ ..] = words.as_slice() else {
            return Err("expected `IP ETH` or `IP ETH static`".into());
        };
        let fixed = match rest {
            [] => false,
            ["static"] => true,
            _ => return Err("expected `IP ETH` or `IP ETH static`".into()),
        };
        let eth =
            EthernetAddress::from_arg(e).map_err(|e| format!("expected Ethernet address, {e}"))?;
        good(eth)?;
        let ip = Ipv4Addr::from_arg(i).map_err(|e| format!("expected IPv4 address, {e}"))?;
        let state = if fixed { State::Static } else { State::Known };
        self.shared
            .insert_by_hand(ip.to_bits(), eth, state, now)
            .map_err(|_| {
                format!(
                    "the ARP table is full of static entries ({}): delete one or raise \
                     ENTRY_CAPACITY",
                    self.shared.capacity()
                )
            })
    }

    /// Inserts a Known entry by hand, for every worker (Click's `insert`):
    /// it replaces whatever `ip` had and expires TIMEOUT from `now` like a
    /// learnt one. Packets waiting for `ip` are sent as with
    /// [`ArpTable::insert_static`].
    pub fn insert(&mut self, ip: Ipv4Addr, eth: EthernetAddress, now: u64) -> Result<(), Refusal> {
        self.shared
            .insert_by_hand(ip.to_bits(), eth, State::Known, now)
    }

    /// Packets this worker holds for addresses that became usable since
    /// the last call (learnt on another worker, or inserted by hand), with
    /// the address to send them to. Costs one atomic load when nothing
    /// changed, so the element calls it on every batch and timer.
    pub fn take_resolved(&mut self, now: u64) -> Vec<(EthernetAddress, VecDeque<Packet>)> {
        // Generation first, then the entries: a change published before
        // the generation we read is seen; a later one moves it again.
        let g = self.shared.generation();
        if g == self.seen_generation {
            return Vec::new();
        }
        self.seen_generation = g;
        if self.held == 0 {
            return Vec::new();
        }
        let snap = self.shared.snapshot();
        let timeout = self.limits.timeout;
        let mut out = Vec::new();
        let mut released = 0;
        self.waiting
            .retain(|&k, w| match snap.usable(k, now, timeout) {
                Some(eth) => {
                    if !w.held.is_empty() {
                        released += w.held.len();
                        out.push((eth, std::mem::take(&mut w.held)));
                    }
                    false
                }
                None => true,
            });
        self.held -= released;
        out
    }

    /// Removes the entry for `ip` (for every worker) and the packets this
    /// worker holds for it. Returns whether there was one.
    pub fn remove(&mut self, ip: Ipv4Addr) -> bool {
        let key = ip.to_bits();
        let shared = self.shared.remove(key, true);
        match self.waiting.remove(&key) {
            Some(e) => {
                self.held -= e.held.len();
                self.drops.cleared += e.held.len() as u64;
                true
            }
            None => shared,
        }
    }

    /// Removes every shared entry and this worker's waiting packets.
    pub fn clear(&mut self) {
        self.shared.clear();
        self.drops.cleared += self.held as u64;
        self.waiting.clear();
        self.retries.clear();
        self.held = 0;
    }

    /// Drops every waiting packet without counting it, and returns how
    /// many there were (for the element's shutdown count).
    pub fn discard_held(&mut self) -> usize {
        let n = self.held;
        self.waiting.clear();
        self.retries.clear();
        self.held = 0;
        n
    }

    /// Retries queries that are due, gives up on addresses that used up
    /// their retries, expires old entries. The work is proportional to
    /// the retries due and the entries that expire.
    pub fn run_timer(&mut self, now: u64) -> TimerWork {
        let limits = self.limits;
        let mut work = TimerWork::default();
        while let Some(&Reverse((due, key))) = self.retries.peek() {
            if due > now {
                work.next_retry = Some(due);
                break;
            }
            self.retries.pop();
            let Some(w) = self.waiting.get_mut(&key) else {
                continue;
            };
            if w.retry_at != due {
                continue;
            }
            if w.tries >= limits.retries || expired(w.since, now, limits.timeout) {
                let n = w.held.len();
                if w.tries >= limits.retries {
                    self.drops.no_reply += n as u64;
                } else {
                    self.drops.expired += n as u64;
                }
                self.held -= n;
                self.waiting.remove(&key);
                continue;
            }
            // Click sends queries only as packets come, at most 10 a
            // second; a retry is for when packets stopped coming. If a
            // packet sent a query within the last interval, this one is
            // skipped, not counted, and the next interval looked at.
            let polled_at = {
                let snap = self.shared.snapshot();
                snap.0
                    .find(key)
                    .map_or(NEVER, |(slot, _)| slot.polled_at.load(Ordering::Relaxed))
            };
            if polled_at != NEVER
                && polled_at <= now
                && now - polled_at < RETRY_INTERVAL
                && w.tries == 0
            {
                let at = now.saturating_add(RETRY_INTERVAL);
                w.retry_at = at;
                self.retries.push(Reverse((at, key)));
                continue;
            }
            w.tries += 1;
            let at = now.saturating_add(RETRY_INTERVAL);
            w.retry_at = at;
            self.retries.push(Reverse((at, key)));
            if self.want(key, now) {
                work.queries.push(Ipv4Addr::from_bits(key));
            }
        }
        self.compact_retries();
        work.next_expiry = self
            .shared
            .expire(now, limits.timeout, limits.pending_life());
        work
    }

    /// What this worker knows of `key` at `now`.
    fn entry(&self, snap: &Snapshot, key: u32, now: u64) -> Option<Mapping> {
        let m = snap.get(key);
        match m {
            Some(m) if m.state == State::Known && expired(m.live_at, now, self.limits.timeout) => {
                if self.waiting.contains_key(&key) {
                    Some(Mapping {
                        state: State::Pending,
                        ..m
                    })
                } else {
                    Some(m)
                }
            }
            Some(m) => Some(m),
            None => self.waiting.get(&key).map(|w| Mapping {
                eth: EthernetAddress::BROADCAST,
                state: State::Pending,
                live_at: w.since,
            }),
        }
    }

    /// The usable entries at `now`: address, Ethernet address, when it was
    /// last confirmed, and whether it is static. A hot swap copies them
    /// into a new table.
    pub fn usable(&self, now: u64) -> Vec<(Ipv4Addr, EthernetAddress, u64, bool)> {
        let snap = self.shared.snapshot();
        snap.0
            .slots
            .iter()
            .filter_map(|s| {
                let k = s.key.load(Ordering::Relaxed);
                (k & LIVE != 0).then_some(k as u32)
            })
            .filter_map(|k| {
                let e = snap.get(k)?;
                let ok = match e.state {
                    State::Pending => false,
                    State::Known => !expired(e.live_at, now, self.limits.timeout),
                    State::Static => true,
                };
                ok.then(|| {
                    (
                        Ipv4Addr::from_bits(k),
                        e.eth,
                        e.live_at,
                        e.state == State::Static,
                    )
                })
            })
            .collect()
    }

    /// The table as text, Click's `table` handler: one entry per line,
    /// oldest first (Click's age list): IP, 1 if the entry is usable (0 if
    /// not), Ethernet address, seconds since it was made or last confirmed
    /// (Click's age, which stops at TIMEOUT while packets wait for the
    /// entry), then `static` for static entries (bricks). A Pending entry
    /// shows FF-FF-FF-FF-FF-FF, or the address it had before it expired.
    pub fn text(&self, now: u64) -> String {
        let snap = self.shared.snapshot();
        // (age-list place, address) of every entry; an address only this
        // worker waits for (its entry evicted) goes by when it started.
        let mut lines: Vec<((u64, i64), u32)> = snap
            .0
            .slots
            .iter()
            .filter_map(|s| {
                let k = s.key.load(Ordering::Relaxed);
                let place = (
                    s.shown.load(Ordering::Relaxed),
                    s.order.load(Ordering::Relaxed),
                );
                (k & LIVE != 0).then_some((place, k as u32))
            })
            .collect();
        let in_slots: std::collections::HashSet<u32> = lines.iter().map(|l| l.1).collect();
        lines.extend(
            self.waiting
                .iter()
                .filter(|(k, _)| !in_slots.contains(k))
                .map(|(&k, w)| ((w.since, i64::MAX), k)),
        );
        lines.sort_unstable();
        let mut s = String::new();
        for ((shown, _), k) in lines {
            let Some(e) = self.entry(&snap, k, now) else {
                continue;
            };
            let ok = match e.state {
                State::Pending => false,
                State::Known => !expired(e.live_at, now, self.limits.timeout),
                State::Static => true,
            };
            let age = now.saturating_sub(shown);
            let _ = write!(
                s,
                "{} {} {} {}.{:03}",
                Ipv4Addr::from_bits(k),
                u8::from(ok),
                super::dashed(&e.eth.0),
                age / SEC,
                age % SEC / 1_000_000
            );
            if e.state == State::Static {
                s.push_str(" static");
            }
            s.push('\n');
        }
        s
    }

    /// The state of `ip`'s entry as this worker sees it at `now`, for tests
    /// and diagnostics.
    pub fn state_at(&self, ip: Ipv4Addr, now: u64) -> Option<State> {
        self.entry(&self.shared.snapshot(), ip.to_bits(), now)
            .map(|e| e.state)
    }

    /// The state of `ip`'s entry, ignoring expiry.
    pub fn state(&self, ip: Ipv4Addr) -> Option<State> {
        match self.shared.snapshot().get(ip.to_bits()) {
            Some(m) => Some(m.state),
            None => self
                .waiting
                .contains_key(&ip.to_bits())
                .then_some(State::Pending),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
    const ETH: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);

    fn pkt(tag: u8) -> Packet {
        Packet::from_slice(&[tag]).unwrap()
    }

    /// Click's defaults with bricks' retries asked for.
    const RETRY2: Limits = Limits {
        capacity: 2048,
        entry_capacity: DEFAULT_ENTRY_CAPACITY,
        entry_packet_capacity: 0,
        slim_factor: 2,
        timeout: 300 * SEC,
        poll_timeout: 60 * SEC,
        retries: 2,
        query_rate: DEFAULT_QUERY_RATE,
    };

    #[test]
    fn no_timer_queries_by_default() {
        let mut t = table(Limits::default());
        let t0 = 100 * SEC;
        assert!(matches!(
            t.hold(IP, pkt(1), t0),
            Hold::Queued { query: true, .. }
        ));
        // As Click: no query but the packets' own; the held packet is
        // given up two seconds later.
        let w = t.run_timer(t0 + SEC);
        assert!(w.queries.is_empty());
        assert_eq!(t.held(), 1);
        let w = t.run_timer(t0 + 2 * SEC);
        assert!(w.queries.is_empty());
        assert_eq!(t.held(), 0);
        assert_eq!(t.drops().no_reply, 1);
    }

    #[test]
    fn a_retry_waits_while_packets_query() {
        let mut t = table(RETRY2);
        let t0 = 100 * SEC;
        t.hold(IP, pkt(1), t0);
        // A packet 0.25 s later sends its own query; the retry at 1 s is
        // skipped, the one at 2 s is sent.
        assert!(matches!(
            t.hold(IP, pkt(2), t0 + SEC / 4),
            Hold::Queued { query: true, .. }
        ));
        let w = t.run_timer(t0 + SEC);
        assert!(w.queries.is_empty());
        assert_eq!(w.next_retry, Some(t0 + 2 * SEC));
        assert_eq!(t.run_timer(t0 + 2 * SEC).queries, [IP]);
        assert_eq!(t.held(), 2);
    }

    fn table(limits: Limits) -> ArpTable {
        ArpTable::new(limits)
    }

    /// Two workers' tables over one set of entries.
    fn two_workers(limits: Limits) -> (ArpTable, ArpTable) {
        let shared = Arc::new(Neighbours::new(limits.entry_capacity, limits.query_rate));
        (
            ArpTable::with_neighbours(limits, shared.clone()),
            ArpTable::with_neighbours(limits, shared),
        )
    }

    fn nth(i: u32) -> Ipv4Addr {
        Ipv4Addr::from_bits(0x0a00_0000 + 10 + i)
    }

    #[test]
    fn queries_are_rate_limited_like_click() {
        let mut t = table(Limits::default());
        let t0 = 1000 * SEC;
        assert!(matches!(
            t.hold(IP, pkt(1), t0),
            Hold::Queued { query: true, .. }
        ));
        assert!(matches!(
            t.hold(IP, pkt(2), t0 + POLL_GAP - 1),
            Hold::Queued { query: false, .. }
        ));
        assert!(matches!(
            t.hold(IP, pkt(3), t0 + POLL_GAP),
            Hold::Queued { query: true, .. }
        ));
        assert_eq!(t.held(), 3);
        let released = t.update(IP, ETH, t0 + SEC).unwrap();
        let tags: Vec<u8> = released.iter().map(|p| p.data()[0]).collect();
        assert_eq!(tags, [1, 2, 3]);
        assert_eq!(t.held(), 0);
        assert_eq!(
            t.lookup(IP, t0 + SEC),
            Lookup::Known {
                eth: ETH,
                poll: false
            }
        );
    }

    #[test]
    fn slow_polls_after_ten_unanswered() {
        let mut t = table(Limits {
            retries: 100,
            ..Limits::default()
        });
        let mut now = 5 * SEC;
        let mut sent = 0;
        for _ in 0..100 {
            if let Hold::Queued { query: true, .. } = t.hold(IP, pkt(0), now) {
                sent += 1;
            }
            now += POLL_GAP;
        }
        // Ten seconds of traffic every 100 ms: 10 fast queries, then one
        // every 2 s.
        assert!((13..=15).contains(&sent), "{sent}");
    }

    #[test]
    fn query_rate_is_limited_per_interface() {
        let mut t = table(Limits {
            query_rate: 10,
            ..Limits::default()
        });
        let t0 = 7 * SEC;
        let q = |h: Hold| matches!(h, Hold::Queued { query: true, .. });
        let sent = (0..100).filter(|&i| q(t.hold(nth(i), pkt(0), t0))).count();
        // A burst of one second's worth, then nothing until time passes.
        assert_eq!(sent, 10);
        assert_eq!(t.drops().query_rate_limited, 90);
        // Only the addresses queried became Pending entries.
        assert_eq!(t.len(), 10);
        assert!(!q(t.hold(nth(200), pkt(0), t0 + SEC / 20)));
        assert!(q(t.hold(nth(201), pkt(0), t0 + SEC / 10)));
        // Renewal polls draw on the same bucket.
        assert_eq!(t.neighbours().queries.interval, SEC / 10);
    }

    #[test]
    fn capacity_slims_oldest_first() {
        let mut t = table(Limits {
            capacity: 4,
            ..Limits::default()
        });
        let other = Ipv4Addr::new(10, 0, 0, 3);
        for i in 0..3 {
            t.hold(IP, pkt(i), SEC);
        }
        t.hold(other, pkt(10), 2 * SEC);
        assert_eq!(t.held(), 4);
        // The fifth packet slims to 4 - 4/2 = 2 waiting, itself included.
        t.hold(other, pkt(11), 2 * SEC);
        assert_eq!(t.held(), 2);
        assert_eq!(t.drops().hold_overflow, 3);
        assert_eq!(t.waiting_len(), 1, "an emptied entry is forgotten");
        assert!(t.update(IP, ETH, 3 * SEC).unwrap().is_empty());
        let tags: Vec<u8> = t
            .update(other, ETH, 3 * SEC)
            .unwrap()
            .iter()
            .map(|p| p.data()[0])
            .collect();
        assert_eq!(tags, [10, 11]);
    }

    #[test]
    fn entry_capacity_evicts_oldest() {
        let mut t = table(Limits {
            entry_capacity: 2,
            ..Limits::default()
        });
        t.insert_static(Ipv4Addr::new(10, 0, 0, 1), ETH, 0).unwrap();
        t.learn(Ipv4Addr::new(10, 0, 0, 2), ETH, SEC);
        t.learn(Ipv4Addr::new(10, 0, 0, 3), ETH, 2 * SEC);
        assert_eq!(t.len(), 2);
        assert_eq!(t.state(Ipv4Addr::new(10, 0, 0, 1)), Some(State::Static));
        assert_eq!(t.state(Ipv4Addr::new(10, 0, 0, 3)), Some(State::Known));
        assert_eq!(t.neighbours().work().evictions.load(Ordering::Relaxed), 1);
        // Only static entries left: a new one is refused, not forced in.
        t.insert_static(Ipv4Addr::new(10, 0, 0, 3), ETH, 0).unwrap();
        assert!(t.learn(Ipv4Addr::new(10, 0, 0, 4), ETH, 3 * SEC).is_none());
        assert_eq!(t.drops().table_full, 1);
        assert_eq!(
            t.insert_static(Ipv4Addr::new(10, 0, 0, 4), ETH, 0),
            Err(Refusal::Full)
        );
    }

    #[test]
    fn pending_entries_are_evicted_before_known_ones() {
        let mut t = table(Limits {
            entry_capacity: 8,
            query_rate: 0,
            ..Limits::default()
        });
        let gw = Ipv4Addr::new(10, 0, 0, 1);
        t.learn(gw, ETH, SEC);
        t.learn(IP, ETH, SEC);
        // A flood of packets to addresses nobody has.
        for i in 0..1000 {
            t.hold(nth(i), pkt(0), 2 * SEC + u64::from(i));
        }
        assert_eq!(t.len(), 8);
        assert_eq!(t.state(gw), Some(State::Known));
        assert_eq!(t.state(IP), Some(State::Known));
        // The newest Pending entries stay: an answer for one is taken, an
        // answer for an evicted one is unsolicited.
        assert!(t.update(nth(999), ETH, 3 * SEC).is_some());
        assert_eq!(
            t.resolve(nth(0), ETH, 3 * SEC, Learn::Update).err(),
            Some(Refusal::Unsolicited)
        );
        // Held packets are bounded by CAPACITY, waiting entries with them.
        assert!(t.held() <= 2048 && t.waiting_len() <= t.held());
    }

    #[test]
    fn updates_do_not_create_and_broadcasts_do_not_move() {
        let mut t = table(Limits::default());
        assert_eq!(
            t.resolve(IP, ETH, SEC, Learn::Update).err(),
            Some(Refusal::Unsolicited)
        );
        assert_eq!(
            t.resolve(IP, ETH, SEC, Learn::Refresh).err(),
            Some(Refusal::Unsolicited)
        );
        assert!(t.is_empty());
        t.hold(IP, pkt(1), SEC);
        // A broadcast frame does not resolve what we asked for...
        assert_eq!(
            t.resolve(IP, ETH, SEC, Learn::Refresh).err(),
            Some(Refusal::Unsolicited)
        );
        assert_eq!(t.resolve(IP, ETH, SEC, Learn::Update).unwrap().len(), 1);
        // ... nor move a known neighbour; it confirms an unchanged one.
        let other = EthernetAddress([2, 0, 0, 0, 0, 9]);
        assert_eq!(
            t.resolve(IP, other, 2 * SEC, Learn::Refresh).err(),
            Some(Refusal::Unsolicited)
        );
        assert!(t.resolve(IP, ETH, 3 * SEC, Learn::Refresh).is_ok());
        assert_eq!(t.text(3 * SEC), "10.0.0.2 1 02-00-00-00-00-02 0.000\n");
        assert!(t.resolve(IP, other, 4 * SEC, Learn::Update).is_ok());
        assert_eq!(
            t.lookup(IP, 4 * SEC),
            Lookup::Known {
                eth: other,
                poll: false
            }
        );
    }

    /// 100,000 distinct senders learnt into a 4,096-entry table: each costs
    /// O(1) writes, and the array is rebuilt only once per 2,048 insertions
    /// (copy-on-write copied the whole map per new address).
    #[test]
    fn learning_many_neighbours_does_not_copy_the_table() {
        let limits = Limits::default();
        let mut t = table(limits);
        let n = 100_000u32;
        for i in 0..n {
            let eth = EthernetAddress([2, 0, 0, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
            assert!(t
                .learn(Ipv4Addr::from_bits(0x0a00_0000 + i), eth, u64::from(i))
                .is_some());
        }
        let w = t.neighbours().work();
        let slots = Neighbours::slot_count(limits.entry_capacity) as u64;
        assert_eq!(t.len(), limits.entry_capacity);
        assert_eq!(
            w.evictions.load(Ordering::Relaxed),
            u64::from(n) - limits.entry_capacity as u64
        );
        let rebuilds = w.rebuilds.load(Ordering::Relaxed);
        assert!(
            rebuilds <= u64::from(n) / (limits.entry_capacity as u64 / 2) + 1,
            "{rebuilds} rebuilds"
        );
        assert!(w.slots_copied.load(Ordering::Relaxed) <= 4 * u64::from(n) + slots);
        // The newest are the ones kept, and readable.
        for i in n - 100..n {
            assert!(matches!(
                t.lookup(Ipv4Addr::from_bits(0x0a00_0000 + i), u64::from(n)),
                Lookup::Known { .. }
            ));
        }
        assert_eq!(
            t.lookup(Ipv4Addr::from_bits(0x0a00_0000), u64::from(n)),
            Lookup::Unknown
        );
        // Expiry removes them all, each looked at once.
        t.run_timer(u64::from(n) + limits.timeout + 1);
        assert!(t.is_empty());
    }

    #[test]
    fn retries_then_gives_up() {
        let mut t = table(RETRY2);
        let t0 = 100 * SEC;
        let Hold::Queued { retry_at, .. } = t.hold(IP, pkt(1), t0) else {
            panic!()
        };
        assert_eq!(retry_at, t0 + SEC);
        assert!(t.run_timer(t0 + SEC / 2).queries.is_empty());
        let w = t.run_timer(t0 + SEC);
        assert_eq!(w.queries, [IP]);
        assert_eq!(w.next_retry, Some(t0 + 2 * SEC));
        assert_eq!(t.run_timer(t0 + 2 * SEC).queries, [IP]);
        let w = t.run_timer(t0 + 3 * SEC);
        assert!(w.queries.is_empty());
        assert_eq!(w.next_retry, None);
        assert_eq!(t.drops().no_reply, 1);
        assert_eq!(t.held(), 0);
        assert_eq!(t.state(IP), Some(State::Pending));
        // The Pending entry goes once nothing wants it any more.
        t.run_timer(t0 + 2 * SEC + RETRY2.pending_life() + 1);
        assert_eq!(t.state(IP), None);
    }

    #[test]
    fn expiry() {
        let mut t = table(Limits {
            timeout: 10 * SEC,
            ..Limits::default()
        });
        t.learn(IP, ETH, SEC);
        assert!(matches!(t.lookup(IP, 11 * SEC), Lookup::Known { .. }));
        assert_eq!(t.lookup(IP, 11 * SEC + 1), Lookup::Unknown);
        let w = t.run_timer(5 * SEC);
        assert_eq!(w.next_expiry, Some(11 * SEC + 1));
        t.run_timer(11 * SEC + 1);
        assert!(t.is_empty());
    }

    #[test]
    fn renewed_entries_outlive_their_first_deadline() {
        let mut t = table(Limits {
            timeout: 10 * SEC,
            ..Limits::default()
        });
        t.learn(IP, ETH, SEC);
        t.update(IP, ETH, 8 * SEC);
        assert_eq!(t.run_timer(12 * SEC).next_expiry, Some(18 * SEC + 1));
        assert_eq!(t.state(IP), Some(State::Known));
        t.run_timer(18 * SEC + 1);
        assert!(t.is_empty());
    }

    #[test]
    fn expired_entry_waited_for_reads_as_pending() {
        let mut t = table(Limits {
            timeout: 10 * SEC,
            ..Limits::default()
        });
        t.learn(IP, ETH, SEC);
        assert!(matches!(
            t.hold(IP, pkt(1), 12 * SEC),
            Hold::Queued { query: true, .. }
        ));
        assert_eq!(t.len(), 1);
        assert_eq!(t.state_at(IP, 12 * SEC), Some(State::Pending));
        // As Click: the stale address stays on show, and the age stops at
        // TIMEOUT while a packet waits.
        assert_eq!(t.text(12 * SEC), "10.0.0.2 0 02-00-00-00-00-02 10.000\n");
        t.run_timer(12 * SEC);
        assert_eq!(t.held(), 1);
        assert_eq!(t.state(IP), Some(State::Pending));
    }

    #[test]
    fn table_lists_oldest_first_with_clicks_ages() {
        const MS: u64 = SEC / 1000;
        let mut t = table(Limits {
            timeout: 100 * MS,
            ..Limits::default()
        });
        let [a, b, c] = [1, 2, 3].map(|i| Ipv4Addr::new(10, 0, 0, i));
        t.insert(a, EthernetAddress([2, 0, 0, 0, 0, 0xa]), 0)
            .unwrap();
        t.insert(b, EthernetAddress([2, 0, 0, 0, 0, 0xb]), 0)
            .unwrap();
        t.hold(c, pkt(1), 0);
        // At 120 ms a and b have expired; packets want all three, in that
        // order. Each stops at TIMEOUT old and moves up the list, the last
        // one wanted first (Click's ARPTable::append_query).
        for (i, ip) in [a, b, c].into_iter().enumerate() {
            t.hold(ip, pkt(2 + i as u8), 120 * MS);
        }
        assert!(t.resolve(a, ETH, 150 * MS, Learn::Update).is_ok());
        assert_eq!(
            t.text(170 * MS),
            "10.0.0.3 0 FF-FF-FF-FF-FF-FF 0.150\n\
             10.0.0.2 0 02-00-00-00-00-0B 0.150\n\
             10.0.0.1 1 02-00-00-00-00-02 0.020\n"
        );
        // An entry inserted by hand expires like a learnt one.
        assert_eq!(t.lookup(b, 170 * MS), Lookup::Unknown);
        assert_eq!(t.state_at(a, 251 * MS), Some(State::Known));
        assert_eq!(t.lookup(a, 251 * MS), Lookup::Unknown);
    }

    #[test]
    fn static_entries_resist_learning_and_expiry() {
        let mut t = table(Limits {
            timeout: SEC,
            ..Limits::default()
        });
        t.insert_static(IP, ETH, 0).unwrap();
        assert!(t.learn(IP, EthernetAddress([9; 6]), 5).is_none());
        assert!(t.update(IP, EthernetAddress([9; 6]), 5).is_none());
        t.run_timer(100 * SEC);
        assert_eq!(
            t.lookup(IP, 100 * SEC),
            Lookup::Known {
                eth: ETH,
                poll: false
            }
        );
        assert_eq!(
            t.text(100 * SEC),
            "10.0.0.2 1 02-00-00-00-00-02 100.000 static\n"
        );
    }

    #[test]
    fn hasher_spreads_neighbours() {
        let h = AddrHash { seed: 0 };
        let a = h.hash_one(0x0a00_0001u32);
        let b = h.hash_one(0x0a00_0002u32);
        assert_ne!(a >> 57, b >> 57);
        assert_ne!(a & 0xff, b & 0xff);
    }

    #[test]
    fn mapping_word_round_trips() {
        for (eth, state) in [
            (ETH, State::Known),
            (EthernetAddress([0xff; 6]), State::Static),
            (EthernetAddress([0; 6]), State::Known),
            (EthernetAddress([0xff; 6]), State::Pending),
        ] {
            assert_eq!(unpack(pack(eth, state)), (eth, state));
        }
    }

    #[test]
    fn learnt_on_one_worker_releases_on_another() {
        let (mut a, mut b) = two_workers(Limits::default());
        let t0 = 10 * SEC;
        b.hold(IP, pkt(1), t0);
        b.hold(IP, pkt(2), t0);
        assert!(b.take_resolved(t0).is_empty());
        // The reply reaches A: B asked, so it is taken.
        assert!(a.update(IP, ETH, t0 + 1).unwrap().is_empty());
        assert_eq!(
            b.lookup(IP, t0 + 2),
            Lookup::Known {
                eth: ETH,
                poll: false
            }
        );
        let r = b.take_resolved(t0 + 2);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0, ETH);
        let tags: Vec<u8> = r[0].1.iter().map(|p| p.data()[0]).collect();
        assert_eq!(tags, [1, 2]);
        assert_eq!(b.held(), 0);
        assert!(b.take_resolved(t0 + 3).is_empty(), "nothing changed since");
        assert_eq!((a.len(), b.len()), (1, 1));
    }

    #[test]
    fn take_waiting_releases_before_newer_packets() {
        let (mut a, mut b) = two_workers(Limits::default());
        b.hold(IP, pkt(1), SEC);
        a.learn(IP, ETH, SEC);
        let held = b.take_waiting(IP).unwrap();
        assert_eq!(held.len(), 1);
        assert_eq!(b.held(), 0);
        assert!(b.take_waiting(IP).is_none());
    }

    #[test]
    fn workers_share_the_query_rate_limit() {
        let (mut a, mut b) = two_workers(RETRY2);
        let t0 = 10 * SEC;
        let q = |h: Hold| matches!(h, Hold::Queued { query: true, .. });
        assert!(q(a.hold(IP, pkt(1), t0)));
        // A's query is out: B's packet waits on it.
        assert!(!q(b.hold(IP, pkt(2), t0 + SEC / 100)));
        // Retries: whoever comes first within a gap speaks for both, and
        // each keeps its own schedule.
        assert_eq!(a.run_timer(t0 + SEC).queries, [IP]);
        let wb = b.run_timer(t0 + SEC + SEC / 100);
        assert!(wb.queries.is_empty(), "A's retry serves B");
        assert_eq!(wb.next_retry, Some(t0 + 2 * SEC + SEC / 100));
        // Past B's own gap and A's: B may ask.
        assert!(q(b.hold(IP, pkt(3), t0 + SEC + SEC / 100 + POLL_GAP)));
        // Another address is not affected.
        assert!(q(b.hold(Ipv4Addr::new(10, 0, 0, 3), pkt(5), t0 + SEC)));
    }

    #[test]
    fn renewal_poll_is_claimed_by_one_worker() {
        let (mut a, mut b) = two_workers(Limits::default());
        a.learn(IP, ETH, SEC);
        let later = 61 * SEC;
        let polls = [
            a.lookup(IP, later),
            b.lookup(IP, later),
            a.lookup(IP, later),
        ];
        let n = polls
            .iter()
            .filter(|l| matches!(l, Lookup::Known { poll: true, .. }))
            .count();
        assert_eq!(n, 1);
        // The rate limit is shared too.
        assert_eq!(
            b.lookup(IP, later + POLL_GAP),
            Lookup::Known {
                eth: ETH,
                poll: true
            }
        );
    }

    #[test]
    fn static_entries_are_shared() {
        let (mut a, mut b) = two_workers(Limits::default());
        b.hold(IP, pkt(1), SEC);
        a.insert_static(IP, ETH, SEC).unwrap();
        assert_eq!(b.state(IP), Some(State::Static));
        assert_eq!(b.take_resolved(SEC).len(), 1);
        assert!(b.learn(IP, EthernetAddress([9; 6]), 2 * SEC).is_none());
        assert!(a.remove(IP));
        assert_eq!(b.lookup(IP, 2 * SEC), Lookup::Unknown);
        assert!(!b.remove(IP));
    }

    #[test]
    fn dropped_tables_leave_the_count() {
        let (a, b) = two_workers(Limits::default());
        assert!(a.shared_with_others());
        drop(b);
        assert!(!a.shared_with_others());
        assert_eq!(a.neighbours().instances(), 1);
    }

    /// A reader never sees a mapping that was never written (half of an
    /// old one and half of a new one, or another address's), nor loses an
    /// address while others come and go around it and the array is
    /// rebuilt under it.
    #[test]
    fn readers_see_old_or_new_mappings_only() {
        use std::sync::atomic::AtomicBool;
        let limits = Limits {
            timeout: 0,
            poll_timeout: 0,
            entry_capacity: 64,
            ..Limits::default()
        };
        let (mut w, mut r) = two_workers(limits);
        let old = EthernetAddress([0x02, 0x11, 0x11, 0x11, 0x11, 0x11]);
        let new = EthernetAddress([0x02, 0xee, 0xee, 0xee, 0xee, 0xee]);
        let fixed = Ipv4Addr::new(10, 0, 0, 7);
        w.insert_static(IP, old, 0).unwrap();
        w.insert_static(fixed, old, 0).unwrap();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..20_000u32 {
                    let eth = if i % 2 == 0 { new } else { old };
                    // Changed in place.
                    w.insert_static(IP, eth, u64::from(i)).unwrap();
                    w.insert_static(fixed, eth, u64::from(i)).unwrap();
                    // Others come and go, each with a MAC of its own.
                    let other = Ipv4Addr::from_bits(0x0a01_0000 + i % 64);
                    if i % 2 == 0 {
                        let b = other.octets();
                        w.learn(other, EthernetAddress([2, 0, b[0], b[1], b[2], b[3]]), 1);
                    } else {
                        w.remove(other);
                    }
                }
                done.store(true, Ordering::Release);
            });
            s.spawn(|| {
                let mut reads = 0u64;
                while !done.load(Ordering::Acquire) || reads < 1000 {
                    let snap = r.snapshot();
                    for ip in [IP, fixed] {
                        match r.lookup_in(&snap, ip, 1) {
                            Lookup::Known { eth, .. } => {
                                assert!(eth == old || eth == new, "torn mapping {eth}")
                            }
                            Lookup::Unknown => panic!("{ip} vanished"),
                        }
                    }
                    for i in 0..64 {
                        let other = Ipv4Addr::from_bits(0x0a01_0000 + i);
                        if let Lookup::Known { eth, .. } = r.lookup_in(&snap, other, 1) {
                            let b = other.octets();
                            assert_eq!(eth, EthernetAddress([2, 0, b[0], b[1], b[2], b[3]]));
                        }
                    }
                    reads += 1;
                }
            });
        });
        assert_eq!(w.len(), 2 + 32);
        assert!(matches!(w.lookup(IP, 1), Lookup::Known { .. }));
    }
}
