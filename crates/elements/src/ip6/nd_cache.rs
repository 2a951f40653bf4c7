//! The state behind `IP6NDSolicitor`: the Neighbor Cache of RFC 4861
//! section 5.1, with the reachability states of section 7.3.2, and the
//! packets that wait for an address to be resolved (section 7.2.2).
//!
//! As with the ARP table ([`crate::ether::arp_table`]), the cache is split
//! in two, because bricks runs one instance of the graph per worker core
//! and an advertisement reaches whichever worker the NIC steered it to:
//!
//! - [`NdCache`], shared by every worker's instance of one element
//!   (through `Args::shared`): every entry with its state, its timing and
//!   its solicitation count, the interface's solicitation rate limit, and
//!   a generation counter that moves whenever an address becomes usable.
//! - [`Waiting`], one per worker: the packets that wait on this worker (a
//!   packet never changes core) and when to look at their address again.
//!
//! # States
//!
//! INCOMPLETE entries are made only for packets that need them, at most
//! QUERY_RATE a second, and solicited by multicast every RetransTimer
//! until MAX_MULTICAST_SOLICIT went unanswered; then the entry goes and
//! the waiting packets are given up. REACHABLE lasts ReachableTime after
//! the last confirmation (a solicited advertisement), a random 0.5 to 1.5
//! times BaseReachableTime drawn at each confirmation (section 6.3.2),
//! and then reads as STALE, without a timer. A packet sent to a STALE entry moves it to
//! DELAY; a packet sent DELAY_FIRST_PROBE_TIME later moves it to PROBE and
//! sends a unicast solicitation, repeated every RetransTimer as packets
//! come, and after MAX_UNICAST_SOLICIT unanswered ones the entry goes
//! (section 7.3.3). Transitions out of REACHABLE, DELAY and PROBE happen
//! when a packet uses the entry, not on a timer: without traffic nothing
//! needs probing (RFC 4861 allows this: "a node MAY delay probes").
//!
//! # What the link may change
//!
//! Nothing a neighbour sends unsolicited makes an entry the router did not
//! ask for, except what section 7.2.3 requires: a solicitation for one of
//! our addresses with a source link-layer address makes a STALE entry for
//! its sender. Those entries are bounded apart: at most half of each shard
//! (see below) holds entries that were only ever learnt that way, and a
//! new one evicts only another of them, so a flood of solicitations from
//! forged sources cycles through that half and never evicts a neighbour
//! the router resolved. Advertisements only change existing entries, by
//! the rules of section 7.2.5.
//!
//! # Why mutex shards, and what that costs
//!
//! The ARP table's readers never lock: its slots are atomic words keyed by
//! a 32-bit address. An IPv6 key is 128 bits and an entry here has more
//! state, so the cache is 16 shards, each a `HashMap` (seeded hash) under
//! its own mutex; a lookup locks one shard for a few loads and stores. An
//! uncontended lock is two atomic operations, and 16 shards keep workers
//! apart unless they send to the same neighbours; a lock-free layout like
//! the ARP table's is future work. Each shard holds ENTRY_CAPACITY / 16
//! entries (rounded up); an eviction scans one shard.
//!
//! Time is in nanoseconds on the engine clock, as passed in.

use crate::ether::arp_table::{QueryBucket, SEC};
use bricks_packet::Packet;
use bricks_wire::ethernet::EthernetAddress;
use bricks_wire::ndisc::NeighborFlags;
use std::cmp::Reverse;
use std::collections::hash_map::RandomState;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// BaseReachableTime's default (RFC 4861 section 10, REACHABLE_TIME): an
/// entry stays REACHABLE for a random 0.5 to 1.5 times it.
pub const REACHABLE_TIME: u64 = 30 * SEC;
/// RetransTimer's default (RETRANS_TIMER).
pub const RETRANS_TIMER: u64 = SEC;
/// DELAY_FIRST_PROBE_TIME.
pub const DELAY_FIRST_PROBE_TIME: u64 = 5 * SEC;
/// MAX_MULTICAST_SOLICIT.
pub const MAX_MULTICAST_SOLICIT: u32 = 3;
/// MAX_UNICAST_SOLICIT.
pub const MAX_UNICAST_SOLICIT: u32 = 3;
/// Shards of the shared cache.
const SHARDS: usize = 16;
/// The largest ENTRY_CAPACITY accepted.
pub const MAX_ENTRY_CAPACITY: usize = 1 << 20;
/// How often a worker that holds packets looks for addresses another
/// worker resolved, when no packet makes it look.
pub const RECHECK_INTERVAL: u64 = SEC / 1000;

/// Reachability state of a neighbour (RFC 4861 section 7.3.2), and
/// `Static` for entries inserted by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdState {
    /// Solicited, no answer yet.
    Incomplete,
    /// Confirmed within ReachableTime.
    Reachable,
    /// Not confirmed lately; used as is, confirmed when traffic needs it.
    Stale,
    /// Used while STALE; a probe follows unless confirmed meanwhile.
    Delay,
    /// Being probed with unicast solicitations.
    Probe,
    /// Inserted by hand: never changes, never probed, never evicted.
    Static,
}

impl NdState {
    /// The name RFC 4861 gives the state.
    pub fn as_str(self) -> &'static str {
        match self {
            NdState::Incomplete => "INCOMPLETE",
            NdState::Reachable => "REACHABLE",
            NdState::Stale => "STALE",
            NdState::Delay => "DELAY",
            NdState::Probe => "PROBE",
            NdState::Static => "STATIC",
        }
    }
}

/// One neighbour.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Meaningless while INCOMPLETE.
    eth: EthernetAddress,
    /// As stored: a REACHABLE entry older than ReachableTime reads STALE.
    state: NdState,
    /// The last confirmation (or when the address was learnt).
    confirmed_at: u64,
    /// The last time a packet wanted the entry, or it was made: the
    /// eviction order.
    used_at: u64,
    /// INCOMPLETE and PROBE: when the next solicitation is due. DELAY:
    /// when to start probing.
    next_at: u64,
    /// Solicitations sent in this INCOMPLETE or PROBE spell.
    probes: u32,
    /// False while the entry was only ever learnt from a solicitation:
    /// nothing of ours asked for it.
    asked: bool,
}

impl Entry {
    /// The state at `now`, given BaseReachableTime.
    fn state_at(&self, now: u64, base_reachable_time: u64) -> NdState {
        match self.state {
            NdState::Reachable
                if now
                    >= self
                        .confirmed_at
                        .saturating_add(self.reachable_for(base_reachable_time)) =>
            {
                NdState::Stale
            }
            s => s,
        }
    }

    /// How long the last confirmation keeps the entry REACHABLE:
    /// ReachableTime is "a uniformly distributed random value between
    /// MIN_RANDOM_FACTOR and MAX_RANDOM_FACTOR times BaseReachableTime"
    /// (RFC 4861 section 6.3.2), 0.5 to 1.5 times, so that neighbours
    /// confirmed together do not all fall STALE and probe together. It is
    /// drawn afresh at each confirmation, from a hash of its time and the
    /// neighbour's address: no state, no lock, the same every time the
    /// entry is read.
    fn reachable_for(&self, base: u64) -> u64 {
        let [a, b, c, d, e, f] = self.eth.0;
        let mac = u64::from_be_bytes([0, 0, a, b, c, d, e, f]);
        let mut z = self.confirmed_at ^ mac.rotate_left(23);
        // splitmix64's finaliser.
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        base / 2 + z % base.max(1)
    }

    /// Eviction rank, lowest first: entries learnt only from
    /// solicitations, then unanswered ones, then the rest; oldest use
    /// first within each. `None` for static entries.
    fn rank(&self) -> Option<(u8, u64)> {
        let class = match self.state {
            NdState::Static => return None,
            _ if !self.asked => 0,
            NdState::Incomplete => 1,
            _ => 2,
        };
        Some((class, self.used_at))
    }
}

#[derive(Debug, Default)]
struct Shard {
    map: HashMap<Ipv6Addr, Entry>,
    /// Entries with `asked` false.
    learnt: usize,
}

impl Shard {
    fn remove(&mut self, addr: &Ipv6Addr) -> Option<Entry> {
        let e = self.map.remove(addr)?;
        if !e.asked {
            self.learnt -= 1;
        }
        Some(e)
    }

    fn mark_asked(&mut self, addr: &Ipv6Addr) {
        if let Some(e) = self.map.get_mut(addr) {
            if !e.asked {
                e.asked = true;
                self.learnt -= 1;
            }
        }
    }

    /// The entry to evict among those `eligible` may pick.
    fn victim(&self, eligible: impl Fn(&Entry) -> bool) -> Option<Ipv6Addr> {
        self.map
            .iter()
            .filter(|(_, e)| eligible(e))
            .filter_map(|(a, e)| e.rank().map(|r| (r, *a)))
            .min()
            .map(|(_, a)| a)
    }
}

/// Timing and bounds of the cache, from the element's keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdTiming {
    /// BaseReachableTime, ns.
    pub reachable_time: u64,
    /// RetransTimer, ns.
    pub retrans_timer: u64,
    /// Multicast solicitations before an address is given up.
    pub max_multicast_solicit: u32,
}

impl Default for NdTiming {
    fn default() -> NdTiming {
        NdTiming {
            reachable_time: REACHABLE_TIME,
            retrans_timer: RETRANS_TIMER,
            max_multicast_solicit: MAX_MULTICAST_SOLICIT,
        }
    }
}

/// Why the cache did not take or change an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdRefusal {
    /// No entry for the address: nothing asked for it.
    Unsolicited,
    /// A static entry, which the link does not change.
    Static,
    /// An advertisement without the O flag would change a known address
    /// (section 7.2.5: it is ignored, and a REACHABLE entry becomes STALE).
    NoOverride,
    /// An advertisement for an INCOMPLETE entry without a target
    /// link-layer address.
    NoLinkAddress,
    /// The shard is full of static entries, or of entries a solicitation
    /// may not evict.
    Full,
    /// QUERY_RATE was used up: no new entry, no solicitation.
    RateLimited,
}

/// What a packet for a neighbour should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolve {
    /// Send it to `eth`; with `probe`, also send a unicast solicitation
    /// there (DELAY became PROBE, or a PROBE retransmission is due).
    Send {
        /// The neighbour's Ethernet address.
        eth: EthernetAddress,
        /// Whether to probe it now.
        probe: bool,
    },
    /// Hold it; with `solicit`, send a multicast solicitation now.
    /// `next_at` is when the address should be looked at again.
    Hold {
        /// Whether to solicit now.
        solicit: bool,
        /// When to call [`NdCache::retransmit`].
        next_at: u64,
    },
    /// Drop it: no entry could be made.
    Refused(NdRefusal),
}

/// What a due look at a held address found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Usable now: send what waits to `eth`.
    Resolved(EthernetAddress),
    /// Still INCOMPLETE; with `solicit`, send a multicast solicitation
    /// now. Look again at `next_at`.
    Wait {
        /// Whether to solicit now.
        solicit: bool,
        /// When to look again.
        next_at: u64,
    },
    /// MAX_MULTICAST_SOLICIT went unanswered, or the entry is gone:
    /// give up the packets.
    GiveUp,
}

/// One line of the `table` handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdEntryView {
    /// The neighbour.
    pub addr: Ipv6Addr,
    /// Its state now.
    pub state: NdState,
    /// Its Ethernet address (meaningless while INCOMPLETE).
    pub eth: EthernetAddress,
    /// Nanoseconds since it was last confirmed.
    pub age: u64,
}

/// The Neighbor Cache every worker's instance of one `IP6NDSolicitor`
/// shares.
pub struct NdCache {
    shards: Box<[Mutex<Shard>]>,
    shard_capacity: usize,
    hash: RandomState,
    timing: NdTiming,
    generation: AtomicU64,
    queries: QueryBucket,
    evictions: AtomicU64,
    len: AtomicUsize,
    instances: AtomicUsize,
}

impl core::fmt::Debug for NdCache {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NdCache")
            .field("entries", &self.len())
            .field("capacity", &self.capacity())
            .field("timing", &self.timing)
            .finish()
    }
}

impl NdCache {
    /// An empty cache for about `capacity` entries (rounded up to a
    /// multiple of 16) that sends at most `query_rate` multicast
    /// solicitations a second (0: no limit).
    pub fn new(capacity: usize, query_rate: u32, timing: NdTiming) -> NdCache {
        let capacity = capacity.clamp(1, MAX_ENTRY_CAPACITY);
        NdCache {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            shard_capacity: capacity.div_ceil(SHARDS),
            hash: RandomState::new(),
            timing,
            generation: AtomicU64::new(0),
            queries: QueryBucket::new(query_rate),
            evictions: AtomicU64::new(0),
            len: AtomicUsize::new(0),
            instances: AtomicUsize::new(0),
        }
    }

    /// Most entries.
    pub fn capacity(&self) -> usize {
        self.shard_capacity * SHARDS
    }

    /// Entries now, INCOMPLETE ones included.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries evicted to make room so far.
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// Changes that made an address usable so far.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The timing in force.
    pub fn timing(&self) -> NdTiming {
        self.timing
    }

    /// Notes one more worker using the cache; see [`NdCache::shared`].
    pub fn attach(&self) {
        self.instances.fetch_add(1, Ordering::Relaxed);
    }

    /// Notes one worker less.
    pub fn detach(&self) {
        self.instances.fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether more than one worker uses the cache.
    pub fn shared(&self) -> bool {
        self.instances.load(Ordering::Relaxed) > 1
    }

    fn shard(&self, addr: &Ipv6Addr) -> MutexGuard<'_, Shard> {
        let i = (self.hash.hash_one(addr) >> 32) as usize % SHARDS;
        self.shards[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Makes room for one more entry in `s` and adds `e`. A learnt entry
    /// (`asked` false) may only evict another learnt entry, and only
    /// half the shard may be learnt.
    fn insert(&self, s: &mut Shard, addr: Ipv6Addr, e: Entry) -> Result<(), NdRefusal> {
        let learn_cap = (self.shard_capacity / 2).max(1);
        let need_room = s.map.len() >= self.shard_capacity || (!e.asked && s.learnt >= learn_cap);
        if need_room {
            let victim = if e.asked {
                s.victim(|_| true)
            } else {
                s.victim(|v| !v.asked)
            };
            let Some(v) = victim else {
                return Err(NdRefusal::Full);
            };
            s.remove(&v);
            self.len.fetch_sub(1, Ordering::Relaxed);
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
        if !e.asked {
            s.learnt += 1;
        }
        s.map.insert(addr, e);
        self.len.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn incomplete(&self, now: u64) -> Entry {
        Entry {
            eth: EthernetAddress::UNSPECIFIED,
            state: NdState::Incomplete,
            confirmed_at: now,
            used_at: now,
            next_at: now.saturating_add(self.timing.retrans_timer),
            probes: 1,
            asked: true,
        }
    }

    /// What to do with a packet for `addr` at `now` (section 7.2.2 and
    /// 7.3.3), changing the entry's state as the packet uses it.
    pub fn resolve(&self, addr: Ipv6Addr, now: u64) -> Resolve {
        let rt = self.timing.reachable_time;
        let retrans = self.timing.retrans_timer;
        let mut s = self.shard(&addr);
        s.mark_asked(&addr);
        if let Some(e) = s.map.get_mut(&addr) {
            e.used_at = now;
            match e.state_at(now, rt) {
                NdState::Incomplete => {
                    return Resolve::Hold {
                        solicit: false,
                        next_at: e.next_at,
                    }
                }
                NdState::Reachable | NdState::Static => {
                    return Resolve::Send {
                        eth: e.eth,
                        probe: false,
                    }
                }
                NdState::Stale => {
                    e.state = NdState::Delay;
                    e.next_at = now.saturating_add(DELAY_FIRST_PROBE_TIME);
                    return Resolve::Send {
                        eth: e.eth,
                        probe: false,
                    };
                }
                NdState::Delay | NdState::Probe if now < e.next_at => {
                    return Resolve::Send {
                        eth: e.eth,
                        probe: false,
                    }
                }
                NdState::Delay => {
                    e.state = NdState::Probe;
                    e.probes = 1;
                    e.next_at = now.saturating_add(retrans);
                    return Resolve::Send {
                        eth: e.eth,
                        probe: true,
                    };
                }
                NdState::Probe if e.probes < MAX_UNICAST_SOLICIT => {
                    e.probes += 1;
                    e.next_at = now.saturating_add(retrans);
                    return Resolve::Send {
                        eth: e.eth,
                        probe: true,
                    };
                }
                NdState::Probe => {
                    // Unreachable: start again from INCOMPLETE.
                    s.remove(&addr);
                    self.len.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
        if !self.queries.take(now) {
            return Resolve::Refused(NdRefusal::RateLimited);
        }
        let e = self.incomplete(now);
        match self.insert(&mut s, addr, e) {
            Ok(()) => Resolve::Hold {
                solicit: true,
                next_at: e.next_at,
            },
            Err(r) => Resolve::Refused(r),
        }
    }

    /// The address to send to if `addr` is usable at `now`, without
    /// changing anything.
    pub fn usable(&self, addr: Ipv6Addr, now: u64) -> Option<EthernetAddress> {
        let s = self.shard(&addr);
        let e = s.map.get(&addr)?;
        (e.state_at(now, self.timing.reachable_time) != NdState::Incomplete).then_some(e.eth)
    }

    /// A due look at `addr`, for which this worker holds packets: resend
    /// the multicast solicitation, or give up after
    /// MAX_MULTICAST_SOLICIT (section 7.2.2).
    pub fn retransmit(&self, addr: Ipv6Addr, now: u64) -> Retry {
        let mut s = self.shard(&addr);
        let Some(e) = s.map.get_mut(&addr) else {
            return Retry::GiveUp;
        };
        if e.state != NdState::Incomplete {
            return Retry::Resolved(e.eth);
        }
        if now < e.next_at {
            // Another worker sent this one.
            return Retry::Wait {
                solicit: false,
                next_at: e.next_at,
            };
        }
        if e.probes >= self.timing.max_multicast_solicit {
            s.remove(&addr);
            self.len.fetch_sub(1, Ordering::Relaxed);
            return Retry::GiveUp;
        }
        e.next_at = now.saturating_add(self.timing.retrans_timer);
        let solicit = self.queries.take(now);
        if solicit {
            e.probes += 1;
        }
        Retry::Wait {
            solicit,
            next_at: e.next_at,
        }
    }

    /// Applies a Neighbor Advertisement for `target` (section 7.2.5).
    /// `Ok(true)` when it resolved an INCOMPLETE entry (held packets may
    /// leave).
    pub fn advertised(
        &self,
        target: Ipv6Addr,
        flags: NeighborFlags,
        lladdr: Option<EthernetAddress>,
        now: u64,
    ) -> Result<bool, NdRefusal> {
        let rt = self.timing.reachable_time;
        let mut s = self.shard(&target);
        let Some(e) = s.map.get_mut(&target) else {
            return Err(NdRefusal::Unsolicited);
        };
        match e.state_at(now, rt) {
            NdState::Static => Err(NdRefusal::Static),
            NdState::Incomplete => {
                let Some(eth) = lladdr else {
                    return Err(NdRefusal::NoLinkAddress);
                };
                e.eth = eth;
                e.state = if flags.solicited() {
                    NdState::Reachable
                } else {
                    NdState::Stale
                };
                e.confirmed_at = now;
                e.probes = 0;
                drop(s);
                self.bump();
                Ok(true)
            }
            state => {
                let changed = lladdr.is_some_and(|l| l != e.eth);
                if changed && !flags.override_() {
                    if state == NdState::Reachable {
                        e.state = NdState::Stale;
                    }
                    return Err(NdRefusal::NoOverride);
                }
                if let Some(l) = lladdr {
                    e.eth = l;
                }
                if flags.solicited() {
                    e.state = NdState::Reachable;
                    e.confirmed_at = now;
                    e.probes = 0;
                } else if changed {
                    e.state = NdState::Stale;
                }
                Ok(false)
            }
        }
    }

    /// Applies a Neighbor Solicitation for one of our addresses from
    /// `src` with source link-layer address `eth` (section 7.2.3): makes
    /// a STALE entry or updates one. `Ok(true)` when it resolved an
    /// INCOMPLETE entry.
    pub fn solicited_by(
        &self,
        src: Ipv6Addr,
        eth: EthernetAddress,
        now: u64,
    ) -> Result<bool, NdRefusal> {
        let mut s = self.shard(&src);
        match s.map.get_mut(&src) {
            None => {
                let e = Entry {
                    eth,
                    state: NdState::Stale,
                    confirmed_at: now,
                    used_at: now,
                    next_at: now,
                    probes: 0,
                    asked: false,
                };
                self.insert(&mut s, src, e).map(|()| false)
            }
            Some(e) if e.state == NdState::Static => Err(NdRefusal::Static),
            Some(e) if e.state == NdState::Incomplete => {
                e.eth = eth;
                e.state = NdState::Stale;
                e.confirmed_at = now;
                e.probes = 0;
                drop(s);
                self.bump();
                Ok(true)
            }
            Some(e) => {
                if e.eth != eth {
                    e.eth = eth;
                    e.state = NdState::Stale;
                }
                Ok(false)
            }
        }
    }

    /// Inserts or replaces a static entry.
    pub fn insert_static(
        &self,
        addr: Ipv6Addr,
        eth: EthernetAddress,
        now: u64,
    ) -> Result<(), NdRefusal> {
        let mut s = self.shard(&addr);
        let e = Entry {
            eth,
            state: NdState::Static,
            confirmed_at: now,
            used_at: now,
            next_at: now,
            probes: 0,
            asked: true,
        };
        if s.remove(&addr).is_some() {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        self.insert(&mut s, addr, e)?;
        drop(s);
        self.bump();
        Ok(())
    }

    /// Removes `addr`'s entry; whether there was one.
    pub fn remove(&self, addr: Ipv6Addr) -> bool {
        let mut s = self.shard(&addr);
        let had = s.remove(&addr).is_some();
        if had {
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
        had
    }

    /// Removes every entry.
    pub fn clear(&self) {
        for sh in self.shards.iter() {
            let mut s = sh.lock().unwrap_or_else(|e| e.into_inner());
            self.len.fetch_sub(s.map.len(), Ordering::Relaxed);
            *s = Shard::default();
        }
    }

    /// Every entry at `now`, in address order.
    pub fn entries(&self, now: u64) -> Vec<NdEntryView> {
        let mut v = Vec::with_capacity(self.len());
        for sh in self.shards.iter() {
            let s = sh.lock().unwrap_or_else(|e| e.into_inner());
            v.extend(s.map.iter().map(|(&addr, e)| NdEntryView {
                addr,
                state: e.state_at(now, self.timing.reachable_time),
                eth: e.eth,
                age: now.saturating_sub(e.confirmed_at),
            }));
        }
        v.sort_unstable_by_key(|e| e.addr);
        v
    }

    /// The state of `addr`'s entry at `now`.
    pub fn state(&self, addr: Ipv6Addr, now: u64) -> Option<NdState> {
        let s = self.shard(&addr);
        s.map
            .get(&addr)
            .map(|e| e.state_at(now, self.timing.reachable_time))
    }

    /// When `addr`'s entry stops being REACHABLE if nothing confirms it
    /// again (for an entry in that state).
    pub fn reachable_until(&self, addr: Ipv6Addr) -> Option<u64> {
        let s = self.shard(&addr);
        let e = s.map.get(&addr)?;
        (e.state == NdState::Reachable)
            .then(|| e.confirmed_at + e.reachable_for(self.timing.reachable_time))
    }
}

/// Packets one worker holds for one address.
#[derive(Debug)]
struct Queue {
    /// When to look at the address again.
    next_at: u64,
    packets: VecDeque<Packet>,
}

/// Why a packet was not held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldRefusal {
    /// CAPACITY packets already wait on this worker.
    Full,
}

/// A packet held.
#[derive(Debug)]
pub enum Held {
    /// Beside those before it.
    Kept,
    /// In place of the oldest of its address's, which ENTRY_PACKET_CAPACITY
    /// packets filled: that one, to drop.
    Replaced(Packet),
}

/// The packets one worker holds while addresses are resolved, bounded
/// per address and in all. When an address's queue is full the new
/// packet replaces its oldest (RFC 4861 section 7.2.2: "the new arrival
/// SHOULD replace the oldest entry"); when the worker's is, the new one
/// is refused.
#[derive(Debug)]
pub struct Waiting {
    by_addr: HashMap<Ipv6Addr, Queue>,
    /// (when, address) to look at; records that moved are skipped.
    due: BinaryHeap<Reverse<(u64, Ipv6Addr)>>,
    held: usize,
    capacity: usize,
    entry_capacity: usize,
    /// The cache generation last looked at.
    seen: u64,
}

impl Waiting {
    /// Holds at most `capacity` packets, `entry_capacity` per address (0:
    /// no limit for either).
    pub fn new(capacity: usize, entry_capacity: usize) -> Waiting {
        Waiting {
            by_addr: HashMap::new(),
            due: BinaryHeap::new(),
            held: 0,
            capacity,
            entry_capacity,
            seen: 0,
        }
    }

    /// Packets held now.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Keeps `p` until `addr` is resolved; look at it again at `next_at`.
    pub fn hold(&mut self, addr: Ipv6Addr, p: Packet, next_at: u64) -> Result<Held, HoldRefusal> {
        if let Some(h) = self.by_addr.get_mut(&addr) {
            if self.entry_capacity != 0 && h.packets.len() >= self.entry_capacity {
                if let Some(old) = h.packets.pop_front() {
                    h.packets.push_back(p);
                    return Ok(Held::Replaced(old));
                }
            }
        }
        if self.capacity != 0 && self.held >= self.capacity {
            return Err(HoldRefusal::Full);
        }
        let h = self.by_addr.entry(addr).or_insert_with(|| {
            self.due.push(Reverse((next_at, addr)));
            Queue {
                next_at,
                packets: VecDeque::new(),
            }
        });
        h.packets.push_back(p);
        self.held += 1;
        Ok(Held::Kept)
    }

    /// Takes the packets held for `addr`, oldest first.
    pub fn take(&mut self, addr: Ipv6Addr) -> Option<VecDeque<Packet>> {
        if self.held == 0 {
            return None;
        }
        let h = self.by_addr.remove(&addr)?;
        self.held -= h.packets.len();
        Some(h.packets)
    }

    /// Moves the next look at `addr` to `at`.
    pub fn reschedule(&mut self, addr: Ipv6Addr, at: u64) {
        if let Some(h) = self.by_addr.get_mut(&addr) {
            h.next_at = at;
            self.due.push(Reverse((at, addr)));
        }
    }

    /// The addresses whose look is due at `now`, each once.
    pub fn due(&mut self, now: u64) -> Vec<Ipv6Addr> {
        let mut out = Vec::new();
        while let Some(&Reverse((at, addr))) = self.due.peek() {
            if at > now {
                break;
            }
            self.due.pop();
            if self.by_addr.get(&addr).is_some_and(|h| h.next_at == at) {
                out.push(addr);
            }
        }
        if self.due.len() > 2 * self.by_addr.len() + 64 {
            self.due = self
                .by_addr
                .iter()
                .map(|(&a, h)| Reverse((h.next_at, a)))
                .collect();
        }
        out
    }

    /// When the next look is due.
    pub fn next_due(&self) -> Option<u64> {
        self.by_addr.values().map(|h| h.next_at).min()
    }

    /// Packets held for addresses `cache` resolved since the last call,
    /// with where to send them. One atomic load when nothing changed.
    pub fn take_resolved(
        &mut self,
        cache: &NdCache,
        now: u64,
    ) -> Vec<(EthernetAddress, VecDeque<Packet>)> {
        let g = cache.generation();
        if g == self.seen {
            return Vec::new();
        }
        self.seen = g;
        if self.held == 0 {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut released = 0;
        self.by_addr.retain(|&a, h| match cache.usable(a, now) {
            Some(eth) => {
                released += h.packets.len();
                out.push((eth, std::mem::take(&mut h.packets)));
                false
            }
            None => true,
        });
        self.held -= released;
        out
    }

    /// Drops everything held; how many packets that was.
    pub fn clear(&mut self) -> usize {
        let n = self.held;
        self.by_addr.clear();
        self.due.clear();
        self.held = 0;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_000 * SEC;
    const B: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);
    const B_MAC: EthernetAddress = EthernetAddress([0x52, 0x54, 0x00, 0xbb, 0x00, 0x02]);
    const SO: NeighborFlags = NeighborFlags(0x60);

    fn cache(capacity: usize) -> NdCache {
        NdCache::new(capacity, 0, NdTiming::default())
    }

    fn reachable_b(c: &NdCache) {
        assert!(matches!(
            c.resolve(B, T0),
            Resolve::Hold { solicit: true, .. }
        ));
        assert_eq!(c.advertised(B, SO, Some(B_MAC), T0), Ok(true));
    }

    #[test]
    fn states_follow_rfc_4861_section_7_3_3() {
        let c = cache(64);
        reachable_b(&c);
        assert_eq!(c.state(B, T0), Some(NdState::Reachable));
        let send = Resolve::Send {
            eth: B_MAC,
            probe: false,
        };
        let t = c.reachable_until(B).unwrap();
        assert!((T0 + 15 * SEC..T0 + 45 * SEC).contains(&t), "{}", t - T0);
        assert_eq!(c.resolve(B, t - 1), send);
        assert_eq!(c.state(B, t - 1), Some(NdState::Reachable));
        assert_eq!(c.state(B, t), Some(NdState::Stale));
        // A packet to a STALE entry: DELAY, then PROBE five seconds on.
        assert_eq!(c.resolve(B, t + SEC), send);
        assert_eq!(c.state(B, t + SEC), Some(NdState::Delay));
        assert_eq!(c.resolve(B, t + 5 * SEC), send);
        let probe = Resolve::Send {
            eth: B_MAC,
            probe: true,
        };
        assert_eq!(c.resolve(B, t + 6 * SEC), probe);
        assert_eq!(c.state(B, t + 6 * SEC), Some(NdState::Probe));
        assert_eq!(c.resolve(B, t + 6 * SEC + 1), send);
        assert_eq!(c.resolve(B, t + 7 * SEC), probe);
        assert_eq!(c.resolve(B, t + 8 * SEC), probe);
        // Three unanswered probes: the entry goes, the packet waits.
        assert!(matches!(
            c.resolve(B, t + 9 * SEC),
            Resolve::Hold { solicit: true, .. }
        ));
        assert_eq!(c.state(B, t + 9 * SEC), Some(NdState::Incomplete));
        // A solicited answer to a probe makes it REACHABLE again.
        assert_eq!(c.advertised(B, SO, Some(B_MAC), t + 9 * SEC), Ok(true));
        assert_eq!(c.state(B, t + 9 * SEC), Some(NdState::Reachable));
    }

    #[test]
    fn reachable_time_is_drawn_between_half_and_one_and_a_half_times_the_base() {
        // RFC 4861 section 6.3.2: neighbours confirmed at the same moment
        // fall STALE at different times, each within 0.5 to 1.5 times
        // BaseReachableTime (30 s here).
        let c = cache(1024);
        let mut spans = Vec::new();
        for i in 0..400u32 {
            let a = Ipv6Addr::from_bits(B.to_bits() + 1 + u128::from(i));
            let mac = EthernetAddress([2, 0, 0, 0, (i >> 8) as u8, i as u8]);
            assert!(matches!(c.resolve(a, T0), Resolve::Hold { .. }));
            assert_eq!(c.advertised(a, SO, Some(mac), T0), Ok(true));
            spans.push(c.reachable_until(a).unwrap() - T0);
        }
        let (lo, hi) = (spans.iter().min().unwrap(), spans.iter().max().unwrap());
        assert!(*lo >= 15 * SEC && *hi < 45 * SEC, "{lo} {hi}");
        assert!(*lo < 17 * SEC && *hi > 43 * SEC, "{lo} {hi}");
        let mut distinct = spans.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 390);
        // A new confirmation draws again.
        let a = Ipv6Addr::from_bits(B.to_bits() + 1);
        let before = c.reachable_until(a).unwrap() - T0;
        assert_eq!(c.advertised(a, SO, None, T0 + SEC), Ok(false));
        let after = c.reachable_until(a).unwrap() - (T0 + SEC);
        assert_ne!(before, after);
    }

    #[test]
    fn incomplete_gives_up_after_max_multicast_solicit() {
        let c = cache(64);
        let Resolve::Hold { next_at, .. } = c.resolve(B, T0) else {
            panic!()
        };
        assert_eq!(next_at, T0 + SEC);
        assert_eq!(
            c.retransmit(B, T0 + SEC),
            Retry::Wait {
                solicit: true,
                next_at: T0 + 2 * SEC
            }
        );
        assert_eq!(
            c.retransmit(B, T0 + 2 * SEC),
            Retry::Wait {
                solicit: true,
                next_at: T0 + 3 * SEC
            }
        );
        assert_eq!(c.retransmit(B, T0 + 3 * SEC), Retry::GiveUp);
        assert_eq!(c.state(B, T0 + 3 * SEC), None);
    }

    #[test]
    fn advertisements_follow_section_7_2_5() {
        let c = cache(64);
        // Nothing asked: nothing made.
        assert_eq!(
            c.advertised(B, SO, Some(B_MAC), T0),
            Err(NdRefusal::Unsolicited)
        );
        assert!(c.is_empty());
        c.resolve(B, T0);
        assert_eq!(c.advertised(B, SO, None, T0), Err(NdRefusal::NoLinkAddress));
        // Unsolicited (S clear) resolves to STALE.
        assert_eq!(
            c.advertised(B, NeighborFlags::OVERRIDE, Some(B_MAC), T0),
            Ok(true)
        );
        assert_eq!(c.state(B, T0), Some(NdState::Stale));
        c.advertised(B, SO, None, T0).unwrap();
        assert_eq!(c.state(B, T0), Some(NdState::Reachable));
        // Another address without O: ignored, REACHABLE becomes STALE.
        let other = EthernetAddress([2, 0, 0, 0, 0, 9]);
        assert_eq!(
            c.advertised(B, NeighborFlags::SOLICITED, Some(other), T0),
            Err(NdRefusal::NoOverride)
        );
        assert_eq!(c.state(B, T0), Some(NdState::Stale));
        assert_eq!(c.usable(B, T0), Some(B_MAC));
        // With O it moves.
        c.advertised(B, NeighborFlags::OVERRIDE, Some(other), T0)
            .unwrap();
        assert_eq!(c.usable(B, T0), Some(other));
        assert_eq!(c.state(B, T0), Some(NdState::Stale));
    }

    #[test]
    fn solicitation_flood_is_bounded_and_evicts_no_resolved_neighbour() {
        let c = cache(64);
        reachable_b(&c);
        for i in 0..10_000u32 {
            let src = Ipv6Addr::from_bits((0xfe80 << 112) | (u128::from(i) + 7));
            let _ = c.solicited_by(src, EthernetAddress([2, 0, 0, 0, 0, 1]), T0 + 1);
        }
        assert!(c.len() <= c.capacity() / 2 + 1, "{}", c.len());
        assert_eq!(c.state(B, T0 + 1), Some(NdState::Reachable));
        // Packets may still resolve new neighbours: they evict learnt ones.
        for i in 0..64u32 {
            let a = Ipv6Addr::from_bits(B.to_bits() + 100 + u128::from(i));
            assert!(matches!(c.resolve(a, T0 + 2), Resolve::Hold { .. }));
        }
        assert!(c.len() <= c.capacity());
        assert!(c.evictions() > 0);
    }

    #[test]
    fn solicitation_makes_stale_and_resolves_incomplete() {
        let c = cache(64);
        assert_eq!(c.solicited_by(B, B_MAC, T0), Ok(false));
        assert_eq!(c.state(B, T0), Some(NdState::Stale));
        let other = Ipv6Addr::from_bits(B.to_bits() + 1);
        c.resolve(other, T0);
        let g = c.generation();
        assert_eq!(c.solicited_by(other, B_MAC, T0), Ok(true));
        assert!(c.generation() > g);
        assert_eq!(c.usable(other, T0), Some(B_MAC));
    }

    #[test]
    fn static_entries_resist_the_link() {
        let c = cache(16);
        c.insert_static(B, B_MAC, T0).unwrap();
        assert_eq!(c.advertised(B, SO, Some(B_MAC), T0), Err(NdRefusal::Static));
        assert_eq!(c.solicited_by(B, B_MAC, T0), Err(NdRefusal::Static));
        assert_eq!(
            c.resolve(B, T0 + 100 * SEC),
            Resolve::Send {
                eth: B_MAC,
                probe: false
            }
        );
        assert!(c.remove(B));
        assert!(c.is_empty());
    }

    #[test]
    fn waiting_is_bounded_and_a_full_queue_keeps_the_newest() {
        let mut w = Waiting::new(3, 2);
        let p = |tag: u8| Packet::from_slice(&[tag; 40]).unwrap();
        let c = Ipv6Addr::from_bits(B.to_bits() + 1);
        assert!(matches!(w.hold(B, p(1), T0), Ok(Held::Kept)));
        assert!(matches!(w.hold(B, p(2), T0), Ok(Held::Kept)));
        // B's queue is full: the third replaces the first.
        match w.hold(B, p(3), T0) {
            Ok(Held::Replaced(old)) => assert_eq!(old.data()[0], 1),
            other => panic!("{other:?}"),
        }
        assert_eq!(w.held(), 2);
        assert!(matches!(w.hold(c, p(4), T0), Ok(Held::Kept)));
        // The worker's bound refuses the newest.
        assert_eq!(w.hold(c, p(5), T0).err(), Some(HoldRefusal::Full));
        assert_eq!(w.due(T0), [B, c]);
        let kept: Vec<u8> = w.take(B).unwrap().iter().map(|q| q.data()[0]).collect();
        assert_eq!(kept, [2, 3]);
        assert_eq!(w.held(), 1);
        assert_eq!(w.clear(), 1);
    }

    #[test]
    fn an_answer_on_one_worker_releases_packets_held_on_another() {
        let c = cache(64);
        let mut w1 = Waiting::new(0, 0);
        let Resolve::Hold { next_at, .. } = c.resolve(B, T0) else {
            panic!()
        };
        w1.hold(B, Packet::from_slice(&[1u8; 40]).unwrap(), next_at)
            .unwrap();
        assert!(w1.take_resolved(&c, T0).is_empty());
        // Worker 0 gets the advertisement.
        assert_eq!(c.advertised(B, SO, Some(B_MAC), T0), Ok(true));
        let out = w1.take_resolved(&c, T0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].0, B_MAC);
        assert_eq!(out[0].1.len(), 1);
        assert_eq!(w1.held(), 0);
        // Another worker does not solicit what one already did.
        assert_eq!(c.retransmit(B, T0), Retry::Resolved(B_MAC));
    }
}
