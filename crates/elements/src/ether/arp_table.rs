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
//! Time is in nanoseconds ([`Timestamp`]'s unit). Nothing here blocks or
//! sets timers; the element asks [`ArpTable::run_timer`] what is due.
//!
//! [`Timestamp`]: bricks_packet::Timestamp

use bricks_packet::Packet;
use bricks_wire::ethernet::EthernetAddress;
use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hasher};
use std::net::Ipv4Addr;

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

/// One IPv4 address's mapping and the packets waiting for it.
#[derive(Debug)]
struct Entry {
    eth: EthernetAddress,
    state: State,
    /// When the mapping was last confirmed (or the query started).
    live_at: u64,
    /// When the last query for this address went out.
    polled_at: Option<u64>,
    /// Queries since the last answer.
    polls: u32,
    held: VecDeque<Packet>,
}

impl Entry {
    fn pending(now: u64) -> Entry {
        Entry {
            eth: EthernetAddress::BROADCAST,
            state: State::Pending,
            live_at: now,
            polled_at: None,
            polls: 0,
            held: VecDeque::new(),
        }
    }

    fn expired(&self, now: u64, timeout: u64) -> bool {
        self.state != State::Static && timeout != 0 && self.live_at.saturating_add(timeout) < now
    }

    fn poll_gap(&self) -> u64 {
        if self.polls >= SLOW_AFTER {
            SLOW_POLL_GAP
        } else {
            POLL_GAP
        }
    }

    fn allow_poll(&self, now: u64) -> bool {
        self.polled_at
            .is_none_or(|t| now >= t.saturating_add(self.poll_gap()))
    }

    fn mark_poll(&mut self, now: u64) {
        self.polled_at = Some(now);
        self.polls = self.polls.saturating_add(1);
    }

    /// When the next retry (or the decision to give up) is due.
    fn retry_due(&self) -> u64 {
        self.polled_at
            .map_or(0, |t| t.saturating_add(RETRY_INTERVAL.max(self.poll_gap())))
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

/// A hasher for IPv4 keys: one multiply folded to 64 bits (foldhash's
/// mixing) with a per-table random seed, much cheaper per packet than
/// SipHash and not predictable from outside.
#[derive(Clone, Copy)]
struct AddrHash {
    seed: u64,
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

/// The table.
pub struct ArpTable {
    map: HashMap<u32, Entry, AddrHash>,
    limits: Limits,
    /// Packets waiting, all entries together.
    held: usize,
    drops: Drops,
    /// A static entry was inserted while packets waited for it; the
    /// element sends them at its next call ([`ArpTable::take_resolved`]).
    resolved_waiting: bool,
}

impl core::fmt::Debug for ArpTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ArpTable")
            .field("entries", &self.map.len())
            .field("held", &self.held)
            .field("limits", &self.limits)
            .finish()
    }
}

impl ArpTable {
    /// An empty table.
    pub fn new(limits: Limits) -> ArpTable {
        let seed = RandomState::new().hash_one(0x5eed_u64);
        ArpTable {
            map: HashMap::with_hasher(AddrHash { seed }),
            limits,
            held: 0,
            drops: Drops::default(),
            resolved_waiting: false,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Packets waiting.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Packets dropped so far.
    pub fn drops(&self) -> &Drops {
        &self.drops
    }

    /// Whether packets wait for an address that is now known.
    pub fn has_resolved_waiting(&self) -> bool {
        self.resolved_waiting
    }

    /// The mapping for `ip`, if it is usable at `now`.
    #[inline]
    pub fn lookup(&mut self, ip: Ipv4Addr, now: u64) -> Lookup {
        let Some(e) = self.map.get_mut(&ip.to_bits()) else {
            return Lookup::Unknown;
        };
        match e.state {
            State::Static => Lookup::Known {
                eth: e.eth,
                poll: false,
            },
            State::Known if !e.expired(now, self.limits.timeout) => {
                let pt = self.limits.poll_timeout;
                let poll = pt != 0 && now >= e.live_at.saturating_add(pt) && e.allow_poll(now);
                if poll {
                    e.mark_poll(now);
                }
                Lookup::Known { eth: e.eth, poll }
            }
            _ => Lookup::Unknown,
        }
    }

    /// Keeps `p` until `ip` is resolved (Click's `append_query`).
    pub fn hold(&mut self, ip: Ipv4Addr, p: Packet, now: u64) -> Hold {
        let key = ip.to_bits();
        if !self.map.contains_key(&key) {
            self.make_room_for_entry();
            self.map.insert(key, Entry::pending(now));
        }
        let limits = self.limits;
        let Some(e) = self.map.get_mut(&key) else {
            unreachable!("entry inserted above")
        };
        if e.state != State::Pending {
            // A learnt entry that expired: start resolving afresh, so that
            // RETRIES counts this attempt's queries only.
            *e = Entry {
                held: std::mem::take(&mut e.held),
                ..Entry::pending(now)
            };
        }
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
        let Some(e) = self.map.get_mut(&key) else {
            unreachable!("slim drops packets, not entries")
        };
        e.held.push_back(p);
        let query = e.allow_poll(now);
        if query {
            e.mark_poll(now);
        }
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
            .map
            .iter()
            .filter(|(_, e)| !e.held.is_empty())
            .map(|(&k, e)| (e.live_at, k))
            .collect();
        order.sort_unstable();
        for (_, k) in order {
            if self.held <= target {
                break;
            }
            if let Some(e) = self.map.get_mut(&k) {
                while self.held > target && e.held.pop_front().is_some() {
                    self.held -= 1;
                    self.drops.hold_overflow += 1;
                }
            }
        }
    }

    /// Evicts the oldest learnt or pending entries when a new one would
    /// exceed ENTRY_CAPACITY: an eighth of them at once, so that a flood
    /// of new addresses costs one scan per many entries.
    fn make_room_for_entry(&mut self) {
        let cap = self.limits.entry_capacity;
        if cap == 0 || self.map.len() < cap {
            return;
        }
        let mut victims: Vec<(u64, u32)> = self
            .map
            .iter()
            .filter(|(_, e)| e.state != State::Static)
            .map(|(&k, e)| (e.live_at, k))
            .collect();
        let n = (self.map.len() + 1 - cap)
            .max(cap / 8)
            .max(1)
            .min(victims.len());
        if n == 0 {
            return;
        }
        if n < victims.len() {
            victims.select_nth_unstable(n - 1);
        }
        for &(_, k) in &victims[..n] {
            if let Some(e) = self.map.remove(&k) {
                self.held -= e.held.len();
                self.drops.hold_overflow += e.held.len() as u64;
            }
        }
    }

    /// Records `ip` at `eth`, learnt from ARP at `now`, and hands back the
    /// packets that waited for it, oldest first. A static entry is left
    /// alone (`None`).
    pub fn learn(
        &mut self,
        ip: Ipv4Addr,
        eth: EthernetAddress,
        now: u64,
    ) -> Option<VecDeque<Packet>> {
        let key = ip.to_bits();
        if !self.map.contains_key(&key) {
            self.make_room_for_entry();
        }
        let e = self.map.entry(key).or_insert_with(|| Entry::pending(now));
        if e.state == State::Static {
            return None;
        }
        e.eth = eth;
        e.state = State::Known;
        e.live_at = now;
        e.polled_at = None;
        e.polls = 0;
        let held = std::mem::take(&mut e.held);
        self.held -= held.len();
        Some(held)
    }

    /// Like [`ArpTable::learn`], but only if `ip` already has a learnt or
    /// pending entry (RFC 826's merge step).
    pub fn update(
        &mut self,
        ip: Ipv4Addr,
        eth: EthernetAddress,
        now: u64,
    ) -> Option<VecDeque<Packet>> {
        match self.map.get(&ip.to_bits()) {
            Some(e) if e.state != State::Static => self.learn(ip, eth, now),
            _ => None,
        }
    }

    /// Inserts a static entry. Packets waiting for `ip` are sent at the
    /// element's next call.
    pub fn insert_static(&mut self, ip: Ipv4Addr, eth: EthernetAddress, now: u64) {
        let e = self
            .map
            .entry(ip.to_bits())
            .or_insert_with(|| Entry::pending(now));
        e.eth = eth;
        e.state = State::Static;
        e.live_at = now;
        e.polls = 0;
        if !e.held.is_empty() {
            self.resolved_waiting = true;
        }
    }

    /// Packets waiting for addresses that became known by hand, with the
    /// address to send them to.
    pub fn take_resolved(&mut self) -> Vec<(EthernetAddress, VecDeque<Packet>)> {
        self.resolved_waiting = false;
        let mut out = Vec::new();
        for e in self.map.values_mut() {
            if e.state != State::Pending && !e.held.is_empty() {
                let held = std::mem::take(&mut e.held);
                self.held -= held.len();
                out.push((e.eth, held));
            }
        }
        out
    }

    /// Removes the entry for `ip`; its waiting packets are dropped.
    /// Returns whether there was one.
    pub fn remove(&mut self, ip: Ipv4Addr) -> bool {
        match self.map.remove(&ip.to_bits()) {
            Some(e) => {
                self.held -= e.held.len();
                self.drops.cleared += e.held.len() as u64;
                true
            }
            None => false,
        }
    }

    /// Removes every entry; waiting packets are dropped.
    pub fn clear(&mut self) {
        self.drops.cleared += self.held as u64;
        self.map.clear();
        self.held = 0;
        self.resolved_waiting = false;
    }

    /// Drops every waiting packet without counting it, and returns how
    /// many there were (for the element's shutdown count).
    pub fn discard_held(&mut self) -> usize {
        let n = self.held;
        for e in self.map.values_mut() {
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
        self.map.retain(|&k, e| {
            if e.expired(now, limits.timeout) {
                held -= e.held.len();
                drops.expired += e.held.len() as u64;
                return false;
            }
            if e.state == State::Pending && !e.held.is_empty() && now >= e.retry_due() {
                if e.polls > limits.retries {
                    held -= e.held.len();
                    drops.no_reply += e.held.len() as u64;
                    e.held.clear();
                } else {
                    e.mark_poll(now);
                    work.queries.push(Ipv4Addr::from_bits(k));
                }
            }
            if e.state == State::Pending && !e.held.is_empty() {
                let due = e.retry_due();
                work.next_retry = Some(work.next_retry.map_or(due, |t| t.min(due)));
            }
            if e.state != State::Static && limits.timeout != 0 {
                let at = e.live_at.saturating_add(limits.timeout).saturating_add(1);
                work.next_expiry = Some(work.next_expiry.map_or(at, |t| t.min(at)));
            }
            true
        });
        self.held = held;
        self.drops = drops;
        work
    }

    /// The table as text, one entry per line in address order: IP, 1 if
    /// the entry is usable (0 if not), Ethernet address, seconds since it
    /// was last confirmed, then `static` for static entries. The first four
    /// columns are Click's `table` handler's.
    pub fn text(&self, now: u64) -> String {
        let mut keys: Vec<u32> = self.map.keys().copied().collect();
        keys.sort_unstable();
        let mut s = String::new();
        for k in keys {
            let e = &self.map[&k];
            let ok = match e.state {
                State::Pending => false,
                State::Known => !e.expired(now, self.limits.timeout),
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

    /// The state of `ip`'s entry, for tests and diagnostics.
    pub fn state(&self, ip: Ipv4Addr) -> Option<State> {
        self.map.get(&ip.to_bits()).map(|e| e.state)
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
}
