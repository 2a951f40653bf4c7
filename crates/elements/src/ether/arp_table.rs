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
//! Linux's neighbour table does and Click does not: a query is retried
//! every second while packets wait, and after RETRIES unanswered retries
//! the waiting packets are dropped instead of waiting for the entry to
//! expire five minutes later.
//!
//! The table is split in two, because bricks runs one instance of the graph
//! per worker core (RouteBricks §4.2) and an ARP reply reaches whichever
//! worker the NIC steered it to:
//!
//! - [`Neighbours`], shared by every worker's instance of one element
//!   (through `Args::shared`): the mappings learnt or inserted by hand
//!   (Known, Static), each with its renewal-poll timing, plus a small
//!   record of recent queries, so that N workers do not send N queries for
//!   one address. Workers read it on every packet without a lock.
//! - [`ArpTable`], one per worker: the packets waiting on this worker
//!   (a packet never changes core) and the query and retry timing of the
//!   addresses they wait for (the Pending entries).
//!
//! With one worker the two halves together behave exactly like one table.
//!
//! Time is in nanoseconds ([`Timestamp`]'s unit). Nothing here blocks or
//! sets timers; the element asks [`ArpTable::run_timer`] what is due.
//!
//! [`Timestamp`]: bricks_packet::Timestamp

use arc_swap::{ArcSwap, Guard};
use bricks_packet::Packet;
use bricks_wire::ethernet::EthernetAddress;
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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

fn allow_poll(polled_at: Option<u64>, polls: u32, now: u64) -> bool {
    polled_at.is_none_or(|t| now >= t.saturating_add(poll_gap(polls)))
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

/// `Neighbour::mapping`'s state bits (above the 48 address bits).
const KNOWN: u64 = 1 << 48;
const STATIC: u64 = 2 << 48;
/// `Neighbour::polled_at` when no renewal query went out since the last
/// answer.
const NEVER: u64 = u64::MAX;

/// One learnt or static mapping. Updated in place, so that a renewal or a
/// moved neighbour costs a few stores instead of a copy of the map.
#[derive(Debug)]
struct Neighbour {
    /// The Ethernet address (low 48 bits) and [`KNOWN`] or [`STATIC`]: one
    /// word, so a reader sees a whole mapping, old or new, never half of
    /// each. Stored last (Release) by writers.
    mapping: AtomicU64,
    /// When the mapping was last confirmed.
    live_at: AtomicU64,
    /// When the last renewal query went out, or [`NEVER`]. Claimed by
    /// compare-and-swap, so one worker sends each renewal.
    polled_at: AtomicU64,
    /// Renewal queries since the last answer.
    polls: AtomicU32,
}

/// A mapping as read from the shared table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mapping {
    eth: EthernetAddress,
    state: State,
    live_at: u64,
}

impl Neighbour {
    fn new(eth: EthernetAddress, state: State, now: u64) -> Neighbour {
        Neighbour {
            mapping: AtomicU64::new(pack(eth, state)),
            live_at: AtomicU64::new(now),
            polled_at: AtomicU64::new(NEVER),
            polls: AtomicU32::new(0),
        }
    }

    #[inline]
    fn read(&self) -> Mapping {
        let m = self.mapping.load(Ordering::Acquire);
        let b = m.to_be_bytes();
        Mapping {
            eth: EthernetAddress([b[2], b[3], b[4], b[5], b[6], b[7]]),
            state: if m & STATIC != 0 {
                State::Static
            } else {
                State::Known
            },
            live_at: self.live_at.load(Ordering::Relaxed),
        }
    }

    /// Writers hold [`Neighbours::writer`]; the mapping goes last so a
    /// reader that sees it sees the rest.
    fn set(&self, eth: EthernetAddress, state: State, now: u64) {
        self.polls.store(0, Ordering::Relaxed);
        if state == State::Known {
            self.polled_at.store(NEVER, Ordering::Relaxed);
        }
        self.live_at.store(now, Ordering::Relaxed);
        self.mapping.store(pack(eth, state), Ordering::Release);
    }

    /// Takes the right to send a renewal query now, if the rate limit
    /// allows one; at most one of several workers asking at once gets it.
    fn claim_poll(&self, now: u64) -> bool {
        let at = self.polled_at.load(Ordering::Relaxed);
        let polls = self.polls.load(Ordering::Relaxed);
        let last = (at != NEVER).then_some(at);
        if !allow_poll(last, polls, now) {
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

fn pack(eth: EthernetAddress, state: State) -> u64 {
    let e = eth.0;
    let bits = u64::from_be_bytes([0, 0, e[0], e[1], e[2], e[3], e[4], e[5]]);
    bits | if state == State::Static {
        STATIC
    } else {
        KNOWN
    }
}

type Map = HashMap<u32, Arc<Neighbour>, AddrHash>;

/// Slots in [`Neighbours::recent_queries`]: only addresses queried in the
/// last [`POLL_GAP`] matter, so a few thousand bytes cover any real burst.
const QUERY_SLOTS: usize = 1024;
/// `recent_queries` keeps time in units of 2^20 ns (about 1.05 ms) in 32
/// bits: it wraps after 52 days, and only differences under a second are
/// ever compared.
const QUERY_TIME_SHIFT: u32 = 20;
/// [`POLL_GAP`] in those units, rounded down: a query that one worker's
/// own rate limit allows is never refused because of its own earlier one.
const QUERY_GAP_UNITS: u32 = (POLL_GAP >> QUERY_TIME_SHIFT) as u32;

/// The neighbour mappings every worker's instance of one `ARPQuerier`
/// shares, read without a lock.
///
/// Readers load the map once per batch (one atomic load: an `arc-swap`
/// snapshot) and read each mapping from one atomic word. Writers (ARP
/// replies and requests, handlers, expiry) take a mutex that only writers
/// use. A change to an existing address (a renewal, a neighbour that moved,
/// a static entry over a learnt one) is stored in place; adding or removing
/// an address copies the map and publishes the copy (copy-on-write). ARP
/// adds and removes addresses rarely next to the packet rate, and a hash
/// map snapshot keeps the per-packet path to a hash, a load and a
/// compare. A lock-free open-addressing table would make additions
/// cheaper but needs per-slot sequence checks on every read; neighbour
/// tables are small (hundreds to thousands of entries), so the copy wins.
pub struct Neighbours {
    map: ArcSwap<Map>,
    /// Held by writers only, so that concurrent changes do not lose each
    /// other's copies.
    writer: Mutex<()>,
    /// Bumped (Release) after every change that can make an address
    /// usable: a worker that holds packets and sees it move looks for the
    /// addresses it waits for.
    generation: AtomicU64,
    /// Recent queries for unresolved addresses: the address in the high
    /// 32 bits, the time (see [`QUERY_TIME_SHIFT`]) in the low 32, in a slot
    /// chosen by hash. A collision only overwrites, so the worst it does
    /// is let a duplicate query out.
    recent_queries: Box<[AtomicU64]>,
    hash: AddrHash,
    /// Live [`ArpTable`]s over this table (the workers).
    instances: AtomicUsize,
}

impl core::fmt::Debug for Neighbours {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Neighbours")
            .field("entries", &self.map.load().len())
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .field("instances", &self.instances.load(Ordering::Relaxed))
            .finish()
    }
}

impl Default for Neighbours {
    fn default() -> Neighbours {
        Neighbours::new()
    }
}

/// A view of the shared mappings as of one moment; hold it for a batch.
#[derive(Debug)]
pub struct Snapshot(Guard<Arc<Map>>);

impl Snapshot {
    #[inline]
    fn get(&self, key: u32) -> Option<Mapping> {
        self.0.get(&key).map(|n| n.read())
    }

    /// The address to send to if `key`'s mapping is usable at `now`.
    #[inline]
    fn usable(&self, key: u32, now: u64, timeout: u64) -> Option<EthernetAddress> {
        let m = self.get(key)?;
        match m.state {
            State::Static => Some(m.eth),
            _ if !expired(m.live_at, now, timeout) => Some(m.eth),
            _ => None,
        }
    }
}

impl Neighbours {
    /// An empty table.
    pub fn new() -> Neighbours {
        let hash = AddrHash::random();
        Neighbours {
            map: ArcSwap::from_pointee(HashMap::with_hasher(hash)),
            writer: Mutex::new(()),
            generation: AtomicU64::new(0),
            recent_queries: (0..QUERY_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            hash,
            instances: AtomicUsize::new(0),
        }
    }

    /// The mappings now.
    #[inline]
    pub fn snapshot(&self) -> Snapshot {
        Snapshot(self.map.load())
    }

    /// Number of mappings.
    pub fn len(&self) -> usize {
        self.map.load().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Changes seen so far (see [`ArpTable::take_resolved`]).
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// How many workers' tables use this one.
    pub fn instances(&self) -> usize {
        self.instances.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Copies the map, lets `f` change the copy, publishes it. The caller
    /// holds the writer lock.
    fn replace<R>(&self, f: impl FnOnce(&mut Map) -> R) -> R {
        let mut m = Map::clone(&self.map.load());
        let r = f(&mut m);
        self.map.store(Arc::new(m));
        r
    }

    /// Records `ip` at `eth`, learnt at `now`. Returns false, changing
    /// nothing, if `ip` is static.
    fn learn(&self, key: u32, eth: EthernetAddress, now: u64) -> bool {
        {
            let _w = self.lock();
            let current = self.map.load();
            match current.get(&key) {
                Some(n) if n.read().state == State::Static => return false,
                Some(n) => n.set(eth, State::Known, now),
                None => self.replace(|m| {
                    m.insert(key, Arc::new(Neighbour::new(eth, State::Known, now)));
                }),
            }
        }
        self.forget_query(key);
        self.generation.fetch_add(1, Ordering::Release);
        true
    }

    fn insert_static(&self, key: u32, eth: EthernetAddress, now: u64) {
        {
            let _w = self.lock();
            let current = self.map.load();
            match current.get(&key) {
                Some(n) => n.set(eth, State::Static, now),
                None => self.replace(|m| {
                    m.insert(key, Arc::new(Neighbour::new(eth, State::Static, now)));
                }),
            }
        }
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Removes the mappings of `keys`, static ones only if `statics`.
    fn remove(&self, keys: &[u32], statics: bool) -> usize {
        if keys.is_empty() {
            return 0;
        }
        let _w = self.lock();
        self.replace(|m| {
            let mut n = 0;
            for k in keys {
                if let Some(e) = m.get(k) {
                    if statics || e.read().state != State::Static {
                        m.remove(k);
                        n += 1;
                    }
                }
            }
            n
        })
    }

    fn clear(&self) {
        {
            let _w = self.lock();
            self.map.store(Arc::new(HashMap::with_hasher(self.hash)));
        }
        for s in self.recent_queries.iter() {
            s.store(0, Ordering::Relaxed);
        }
    }

    /// Removes learnt mappings that expired by `now`; returns when the
    /// next one will have.
    fn sweep(&self, now: u64, timeout: u64) -> Option<u64> {
        if timeout == 0 {
            return None;
        }
        let mut next: Option<u64> = None;
        let mut gone = Vec::new();
        for (&k, n) in self.map.load().iter() {
            let m = n.read();
            if m.state != State::Known {
                continue;
            }
            if expired(m.live_at, now, timeout) {
                gone.push(k);
            } else {
                let at = m.live_at.saturating_add(timeout).saturating_add(1);
                next = Some(next.map_or(at, |t| t.min(at)));
            }
        }
        if !gone.is_empty() {
            let _w = self.lock();
            self.replace(|m| {
                for k in &gone {
                    // Renewed since the scan: keep it.
                    let still = m.get(k).is_some_and(|n| {
                        let e = n.read();
                        e.state == State::Known && expired(e.live_at, now, timeout)
                    });
                    if still {
                        m.remove(k);
                    }
                }
            });
        }
        next
    }

    fn query_slot(&self, key: u32) -> &AtomicU64 {
        let h = self.hash.hash_one(key);
        &self.recent_queries[(h >> (64 - QUERY_SLOTS.trailing_zeros())) as usize]
    }

    /// Takes the right to query `key` now: refused if some worker queried
    /// it less than [`POLL_GAP`] ago (another worker's query serves this
    /// one's packets too, since the answer lands in the shared table).
    fn claim_query(&self, key: u32, now: u64) -> bool {
        let slot = self.query_slot(key);
        let t = (now >> QUERY_TIME_SHIFT) as u32;
        let mine = (u64::from(key) << 32) | u64::from(t);
        let mut cur = slot.load(Ordering::Relaxed);
        loop {
            if cur != 0 && (cur >> 32) as u32 == key {
                // Either side of now: workers' clocks differ slightly.
                let d = t.wrapping_sub(cur as u32) as i32;
                if d.unsigned_abs() < QUERY_GAP_UNITS {
                    return false;
                }
            }
            match slot.compare_exchange_weak(cur, mine, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(v) => cur = v,
            }
        }
    }

    /// Forgets the last query for `key` (answered, or its entry is gone):
    /// a fresh attempt may query at once.
    fn forget_query(&self, key: u32) {
        let slot = self.query_slot(key);
        let cur = slot.load(Ordering::Relaxed);
        if cur != 0 && (cur >> 32) as u32 == key {
            let _ = slot.compare_exchange(cur, 0, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
}

// ---------------------------------------------------------------------
// The per-worker half.

/// One unresolved address on this worker: its query timing and the
/// packets waiting for it.
#[derive(Debug)]
struct Waiting {
    /// When the query started, moved forward while packets keep coming.
    live_at: u64,
    /// When this worker last queried (or found a query just sent).
    polled_at: Option<u64>,
    /// Queries since the entry was made.
    polls: u32,
    held: VecDeque<Packet>,
}

impl Waiting {
    fn new(now: u64) -> Waiting {
        Waiting {
            live_at: now,
            polled_at: None,
            polls: 0,
            held: VecDeque::new(),
        }
    }

    fn allow_poll(&self, now: u64) -> bool {
        allow_poll(self.polled_at, self.polls, now)
    }

    fn mark_poll(&mut self, now: u64) {
        self.polled_at = Some(now);
        self.polls = self.polls.saturating_add(1);
    }

    /// When the next retry (or the decision to give up) is due.
    fn retry_due(&self) -> u64 {
        self.polled_at.map_or(0, |t| {
            t.saturating_add(RETRY_INTERVAL.max(poll_gap(self.polls)))
        })
    }
}

/// Limits and timeouts, from the element's keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most packets waiting in all (0: no limit).
    pub capacity: usize,
    /// Most entries (0: no limit).
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
}

impl Default for Limits {
    /// Click's defaults.
    fn default() -> Limits {
        Limits {
            capacity: 2048,
            entry_capacity: 0,
            entry_packet_capacity: 0,
            slim_factor: 2,
            timeout: 300 * SEC,
            poll_timeout: 60 * SEC,
            retries: 2,
        }
    }
}

/// Packets the table dropped, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drops {
    /// Waited through every retry without an answer.
    pub no_reply: u64,
    /// Over CAPACITY or ENTRY_PACKET_CAPACITY, or their entry was evicted
    /// for ENTRY_CAPACITY.
    pub hold_overflow: u64,
    /// Their entry expired while they waited.
    pub expired: u64,
    /// Removed by the `delete` or `clear` handlers.
    pub cleared: u64,
}

impl Drops {
    /// All of them.
    pub fn total(&self) -> u64 {
        self.no_reply + self.hold_overflow + self.expired + self.cleared
    }
}

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// A usable mapping; `poll` asks the caller to send a renewal query
    /// (POLL_TIMEOUT passed and the rate limit allows one).
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
    /// The earliest expiry of a learnt entry, if any.
    pub next_expiry: Option<u64>,
}

/// One worker's view of the table: the shared mappings plus the addresses
/// this worker waits for.
pub struct ArpTable {
    shared: Arc<Neighbours>,
    waiting: HashMap<u32, Waiting, AddrHash>,
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
        ArpTable::with_neighbours(limits, Arc::new(Neighbours::new()))
    }

    /// A worker's table over mappings shared with other workers.
    pub fn with_neighbours(limits: Limits, shared: Arc<Neighbours>) -> ArpTable {
        shared.instances.fetch_add(1, Ordering::Relaxed);
        ArpTable {
            seen_generation: shared.generation(),
            shared,
            waiting: HashMap::with_hasher(AddrHash::random()),
            limits,
            held: 0,
            drops: Drops::default(),
        }
    }

    /// The shared mappings.
    pub fn neighbours(&self) -> &Arc<Neighbours> {
        &self.shared
    }

    /// Whether other workers use the same mappings.
    pub fn shared_with_others(&self) -> bool {
        self.shared.instances() > 1
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Number of entries this worker sees: the shared mappings and the
    /// addresses it waits for.
    pub fn len(&self) -> usize {
        self.shared.len() + self.waiting_only_len()
    }

    /// Addresses this worker waits for that have no shared mapping.
    pub fn waiting_only_len(&self) -> usize {
        let snap = self.shared.snapshot();
        self.waiting
            .keys()
            .filter(|&&k| snap.get(k).is_none())
            .count()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Packets waiting on this worker.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Packets dropped so far on this worker.
    pub fn drops(&self) -> &Drops {
        &self.drops
    }

    /// The shared mappings now; hold it for a batch of lookups.
    #[inline]
    pub fn snapshot(&self) -> Snapshot {
        self.shared.snapshot()
    }

    /// The mapping for `ip`, if it is usable at `now`.
    pub fn lookup(&self, ip: Ipv4Addr, now: u64) -> Lookup {
        self.lookup_in(&self.snapshot(), ip, now)
    }

    /// [`ArpTable::lookup`] in a snapshot taken for a batch.
    #[inline]
    pub fn lookup_in(&self, snap: &Snapshot, ip: Ipv4Addr, now: u64) -> Lookup {
        let Some(n) = snap.0.get(&ip.to_bits()) else {
            return Lookup::Unknown;
        };
        let m = n.read();
        match m.state {
            State::Static => Lookup::Known {
                eth: m.eth,
                poll: false,
            },
            _ if !expired(m.live_at, now, self.limits.timeout) => {
                let pt = self.limits.poll_timeout;
                let poll = pt != 0 && now >= m.live_at.saturating_add(pt) && n.claim_poll(now);
                Lookup::Known { eth: m.eth, poll }
            }
            _ => Lookup::Unknown,
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

    fn contains(&self, snap: &Snapshot, key: u32) -> bool {
        self.waiting.contains_key(&key) || snap.0.contains_key(&key)
    }

    /// Keeps `p` until `ip` is resolved (Click's `append_query`).
    pub fn hold(&mut self, ip: Ipv4Addr, p: Packet, now: u64) -> Hold {
        let key = ip.to_bits();
        if !self.waiting.contains_key(&key) {
            // A learnt entry that expired starts resolving afresh too, so
            // that RETRIES counts this attempt's queries only.
            let snap = self.shared.snapshot();
            if !snap.0.contains_key(&key) {
                self.make_room_for_entry(&snap);
            }
            self.waiting.insert(key, Waiting::new(now));
        }
        let limits = self.limits;
        let Some(e) = self.waiting.get_mut(&key) else {
            unreachable!("entry inserted above")
        };
        // Keep an entry that is still wanted from expiring (Click).
        if limits.timeout != 0 {
            e.live_at = e.live_at.max(now.saturating_sub(limits.timeout));
        }
        if limits.entry_packet_capacity != 0 && e.held.len() >= limits.entry_packet_capacity {
            self.drops.hold_overflow += 1;
            return Hold::Dropped;
        }
        self.held += 1;
        if limits.capacity != 0 && self.held > limits.capacity {
            self.slim();
        }
        let Some(e) = self.waiting.get_mut(&key) else {
            unreachable!("slim drops packets, not entries")
        };
        e.held.push_back(p);
        let allowed = e.allow_poll(now);
        if allowed {
            // Counted even when another worker's query serves: retries
            // and giving up follow this worker's own attempts.
            e.mark_poll(now);
        }
        let query = allowed && self.shared.claim_query(key, now);
        Hold::Queued {
            query,
            retry_at: e.retry_due(),
        }
    }

    /// Drops the oldest waiting packets, oldest entries first, until
    /// `capacity - capacity / slim_factor` packets wait, counting the one
    /// about to be added (Click's `slim`). Dropping a batch at once keeps
    /// the cost of finding the oldest entries rare.
    fn slim(&mut self) {
        let cap = self.limits.capacity;
        let target = (cap - cap / self.limits.slim_factor).max(1);
        let mut order: Vec<(u64, u32)> = self
            .waiting
            .iter()
            .filter(|(_, e)| !e.held.is_empty())
            .map(|(&k, e)| (e.live_at, k))
            .collect();
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
            }
        }
    }

    /// Evicts the oldest learnt or pending entries when a new one would
    /// exceed ENTRY_CAPACITY: an eighth of them at once, so that a flood
    /// of new addresses costs one scan per many entries. The count is of
    /// the entries this worker sees (shared ones and its own pending ones).
    fn make_room_for_entry(&mut self, snap: &Snapshot) {
        let cap = self.limits.entry_capacity;
        if cap == 0 {
            return;
        }
        let len = snap.0.len()
            + self
                .waiting
                .keys()
                .filter(|k| !snap.0.contains_key(k))
                .count();
        if len < cap {
            return;
        }
        // An address both learnt (expired) and waited for is one pending
        // entry, aged from when its new query started.
        let mut victims: Vec<(u64, u32)> = self
            .waiting
            .iter()
            .filter(|(&k, _)| snap.get(k).is_none_or(|m| m.state != State::Static))
            .map(|(&k, e)| (e.live_at, k))
            .collect();
        victims.extend(snap.0.iter().filter_map(|(&k, n)| {
            let m = n.read();
            (m.state == State::Known && !self.waiting.contains_key(&k)).then_some((m.live_at, k))
        }));
        let n = (len + 1 - cap).max(cap / 8).max(1).min(victims.len());
        if n == 0 {
            return;
        }
        if n < victims.len() {
            victims.select_nth_unstable(n - 1);
        }
        let mut shared = Vec::new();
        for &(_, k) in &victims[..n] {
            if let Some(e) = self.waiting.remove(&k) {
                self.held -= e.held.len();
                self.drops.hold_overflow += e.held.len() as u64;
                self.shared.forget_query(k);
            }
            if snap.0.contains_key(&k) {
                shared.push(k);
            }
        }
        self.shared.remove(&shared, false);
    }

    /// Records `ip` at `eth`, learnt from ARP at `now`, and hands back the
    /// packets that waited for it on this worker, oldest first (other
    /// workers find the mapping through [`ArpTable::take_resolved`]). A
    /// static entry is left alone (`None`).
    pub fn learn(
        &mut self,
        ip: Ipv4Addr,
        eth: EthernetAddress,
        now: u64,
    ) -> Option<VecDeque<Packet>> {
        let key = ip.to_bits();
        let snap = self.shared.snapshot();
        if !self.contains(&snap, key) {
            self.make_room_for_entry(&snap);
        }
        drop(snap);
        if !self.shared.learn(key, eth, now) {
            return None;
        }
        let held = self
            .waiting
            .remove(&key)
            .map(|w| w.held)
            .unwrap_or_default();
        self.held -= held.len();
        Some(held)
    }

    /// Like [`ArpTable::learn`], but only if `ip` already has a learnt
    /// entry or this worker waits for it (RFC 826's merge step).
    pub fn update(
        &mut self,
        ip: Ipv4Addr,
        eth: EthernetAddress,
        now: u64,
    ) -> Option<VecDeque<Packet>> {
        let key = ip.to_bits();
        match self.shared.snapshot().get(key) {
            Some(m) if m.state == State::Static => None,
            Some(_) => self.learn(ip, eth, now),
            None if self.waiting.contains_key(&key) => self.learn(ip, eth, now),
            None => None,
        }
    }

    /// Inserts a static entry, for every worker. Packets waiting for `ip`
    /// are sent at each worker's next call ([`ArpTable::take_resolved`]).
    pub fn insert_static(&mut self, ip: Ipv4Addr, eth: EthernetAddress, now: u64) {
        self.shared.insert_static(ip.to_bits(), eth, now);
    }

    /// Packets this worker holds for addresses that became usable since
    /// the last call (learnt on another worker, or inserted by hand), with
    /// the address to send them to. Costs one atomic load when nothing
    /// changed, so the element calls it on every batch and timer.
    pub fn take_resolved(&mut self, now: u64) -> Vec<(EthernetAddress, VecDeque<Packet>)> {
        // Generation first, then the map: a change published before the
        // generation we read is in the snapshot; a later one moves the
        // generation again.
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
        let shared =
            self.shared.snapshot().0.contains_key(&key) && self.shared.remove(&[key], true) > 0;
        self.shared.forget_query(key);
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
        self.held = 0;
    }

    /// Drops every waiting packet without counting it, and returns how
    /// many there were (for the element's shutdown count).
    pub fn discard_held(&mut self) -> usize {
        let n = self.held;
        for e in self.waiting.values_mut() {
            e.held.clear();
        }
        self.held = 0;
        n
    }

    /// Expires old entries, retries queries that are due, gives up on
    /// addresses that used up their retries.
    pub fn run_timer(&mut self, now: u64) -> TimerWork {
        let limits = self.limits;
        let mut work = TimerWork::default();
        let (mut held, mut drops) = (self.held, self.drops);
        let shared = &self.shared;
        self.waiting.retain(|&k, e| {
            if expired(e.live_at, now, limits.timeout) {
                held -= e.held.len();
                drops.expired += e.held.len() as u64;
                shared.forget_query(k);
                return false;
            }
            if !e.held.is_empty() && now >= e.retry_due() {
                if e.polls > limits.retries {
                    held -= e.held.len();
                    drops.no_reply += e.held.len() as u64;
                    e.held.clear();
                } else {
                    e.mark_poll(now);
                    if shared.claim_query(k, now) {
                        work.queries.push(Ipv4Addr::from_bits(k));
                    }
                }
            }
            if !e.held.is_empty() {
                let due = e.retry_due();
                work.next_retry = Some(work.next_retry.map_or(due, |t| t.min(due)));
            }
            if limits.timeout != 0 {
                let at = e.live_at.saturating_add(limits.timeout).saturating_add(1);
                work.next_expiry = Some(work.next_expiry.map_or(at, |t| t.min(at)));
            }
            true
        });
        self.held = held;
        self.drops = drops;
        if let Some(at) = self.shared.sweep(now, limits.timeout) {
            work.next_expiry = Some(work.next_expiry.map_or(at, |t| t.min(at)));
        }
        work
    }

    /// What this worker knows of `key`: the shared mapping when it is
    /// usable (or expired and not waited for), else the pending entry.
    fn entry(&self, snap: &Snapshot, key: u32, now: u64) -> Option<Mapping> {
        let shared = snap.get(key);
        let usable = shared
            .filter(|m| m.state == State::Static || !expired(m.live_at, now, self.limits.timeout));
        usable
            .or_else(|| {
                self.waiting.get(&key).map(|w| Mapping {
                    eth: EthernetAddress::BROADCAST,
                    state: State::Pending,
                    live_at: w.live_at,
                })
            })
            .or(shared)
    }

    /// The table as text, one entry per line in address order: IP, 1 if
    /// the entry is usable (0 if not), Ethernet address, seconds since it
    /// was last confirmed, then `static` for static entries. The first four
    /// columns are Click's `table` handler's. Shared entries and this
    /// worker's pending ones are listed.
    pub fn text(&self, now: u64) -> String {
        let snap = self.shared.snapshot();
        let mut keys: Vec<u32> = snap.0.keys().copied().collect();
        keys.extend(self.waiting.keys().filter(|k| !snap.0.contains_key(k)));
        keys.sort_unstable();
        let mut s = String::new();
        for k in keys {
            let Some(e) = self.entry(&snap, k, now) else {
                continue;
            };
            let ok = match e.state {
                State::Pending => false,
                State::Known => !expired(e.live_at, now, self.limits.timeout),
                State::Static => true,
            };
            let age = now.saturating_sub(e.live_at);
            let _ = write!(
                s,
                "{} {} {} {}.{:03}",
                Ipv4Addr::from_bits(k),
                u8::from(ok),
                e.eth,
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
        let snap = self.shared.snapshot();
        match snap.get(ip.to_bits()) {
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

    fn table(limits: Limits) -> ArpTable {
        ArpTable::new(limits)
    }

    /// Two workers' tables over one set of mappings.
    fn two_workers(limits: Limits) -> (ArpTable, ArpTable) {
        let shared = Arc::new(Neighbours::new());
        (
            ArpTable::with_neighbours(limits, shared.clone()),
            ArpTable::with_neighbours(limits, shared),
        )
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
        let released = t.learn(IP, ETH, t0 + SEC).unwrap();
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
        assert!(t.learn(IP, ETH, 3 * SEC).unwrap().is_empty());
        let tags: Vec<u8> = t
            .learn(other, ETH, 3 * SEC)
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
        t.insert_static(Ipv4Addr::new(10, 0, 0, 1), ETH, 0);
        t.learn(Ipv4Addr::new(10, 0, 0, 2), ETH, SEC);
        t.learn(Ipv4Addr::new(10, 0, 0, 3), ETH, 2 * SEC);
        assert_eq!(t.len(), 2);
        assert_eq!(t.state(Ipv4Addr::new(10, 0, 0, 1)), Some(State::Static));
        assert_eq!(t.state(Ipv4Addr::new(10, 0, 0, 3)), Some(State::Known));
    }

    #[test]
    fn entry_capacity_counts_pending_entries_too() {
        let mut t = table(Limits {
            entry_capacity: 2,
            ..Limits::default()
        });
        t.hold(Ipv4Addr::new(10, 0, 0, 5), pkt(1), SEC);
        t.learn(Ipv4Addr::new(10, 0, 0, 2), ETH, 2 * SEC);
        // The pending entry is the oldest: it goes, with its packet.
        t.learn(Ipv4Addr::new(10, 0, 0, 3), ETH, 3 * SEC);
        assert_eq!(t.len(), 2);
        assert_eq!(t.held(), 0);
        assert_eq!(t.drops().hold_overflow, 1);
        assert_eq!(t.state(Ipv4Addr::new(10, 0, 0, 5)), None);
    }

    #[test]
    fn retries_then_gives_up() {
        let mut t = table(Limits::default());
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
        assert_eq!(t.text(12 * SEC), "10.0.0.2 0 ff:ff:ff:ff:ff:ff 0.000\n");
        // The sweep drops the stale mapping, not the packet.
        t.run_timer(12 * SEC);
        assert_eq!(t.held(), 1);
        assert_eq!(t.state(IP), Some(State::Pending));
    }

    #[test]
    fn static_entries_resist_learning_and_expiry() {
        let mut t = table(Limits {
            timeout: SEC,
            ..Limits::default()
        });
        t.insert_static(IP, ETH, 0);
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
            "10.0.0.2 1 02:00:00:00:00:02 100.000 static\n"
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
        ] {
            let n = Neighbour::new(eth, state, 7);
            assert_eq!(
                n.read(),
                Mapping {
                    eth,
                    state,
                    live_at: 7
                }
            );
        }
    }

    #[test]
    fn learnt_on_one_worker_releases_on_another() {
        let (mut a, mut b) = two_workers(Limits::default());
        let t0 = 10 * SEC;
        b.hold(IP, pkt(1), t0);
        b.hold(IP, pkt(2), t0);
        assert!(b.take_resolved(t0).is_empty());
        // A learns from a reply it did not ask for: nothing of its own
        // waited.
        assert!(a.learn(IP, ETH, t0 + 1).unwrap().is_empty());
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
        let (mut a, mut b) = two_workers(Limits::default());
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
        let (mut a, b) = two_workers(Limits::default());
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
        a.insert_static(IP, ETH, SEC);
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
    /// old one and half of a new one), nor loses an address while others
    /// come and go around it.
    #[test]
    fn readers_see_old_or_new_mappings_only() {
        use std::sync::atomic::AtomicBool;
        let limits = Limits {
            timeout: 0,
            poll_timeout: 0,
            ..Limits::default()
        };
        let (mut w, r) = two_workers(limits);
        let old = EthernetAddress([0x02, 0x11, 0x11, 0x11, 0x11, 0x11]);
        let new = EthernetAddress([0x02, 0xee, 0xee, 0xee, 0xee, 0xee]);
        let fixed = Ipv4Addr::new(10, 0, 0, 7);
        w.learn(IP, old, 0);
        w.insert_static(fixed, old, 0);
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..20_000u32 {
                    let eth = if i % 2 == 0 { new } else { old };
                    // Changed in place: a learnt entry and a static one.
                    w.learn(IP, eth, u64::from(i));
                    w.insert_static(fixed, eth, u64::from(i));
                    // Others come and go: the map is copied and replaced.
                    let other = Ipv4Addr::from_bits(0x0a01_0000 + i % 64);
                    if i % 2 == 0 {
                        w.learn(other, new, u64::from(i));
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
                            assert_eq!(eth, new);
                        }
                    }
                    reads += 1;
                }
            });
        });
        assert_eq!(w.len(), 2 + 32);
    }
}
