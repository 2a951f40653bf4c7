//! A bounded table from MAC addresses to ports, shared by every worker:
//! `L2Balancer`'s return table (where each external host is) and
//! `EtherSwitch`'s station table.
//!
//! Lookups and refreshes are lock-free; inserting a new address, moving one
//! to another port and evicting take a mutex that readers never see. The
//! table holds at most `capacity` addresses and evicts the oldest inserted
//! when a new one arrives (a FIFO of insertions), so a flood of forged
//! source addresses costs O(1) per frame and memory that was fixed at
//! configuration time.
//!
//! Layout: 4 x capacity slots (rounded up to a power of two) in buckets of
//! [`WAYS`], found by a keyed hash of the address: a lookup reads at most
//! one bucket. Each slot is two atomic words, the key (address plus a
//! presence bit) and the information (port and last-seen time in ms). A
//! reader loads the key, the information, and the key again: if the key
//! changed in between, the slot was reused and the lookup misses. With the
//! table at most a quarter full, a bucket overflows rarely (the hash is
//! keyed per table, so a sender cannot aim at one bucket); an overflowing
//! bucket evicts its least recently seen address.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::atomic::Ordering::Release;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Acquire, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

/// Slots per bucket: one cache line of 4 slots is 64 bytes; two lines.
pub const WAYS: usize = 8;
/// Bit that marks a slot's key as present (MAC addresses are 48 bits).
const PRESENT: u64 = 1 << 63;
/// Largest table the configuration may ask for.
pub const MAX_CAPACITY: usize = 1 << 22;

#[derive(Debug, Default)]
struct Slot {
    /// 0: empty; else the address with [`PRESENT`].
    key: AtomicU64,
    /// Port in the low 16 bits, last seen (ms) above.
    info: AtomicU64,
}

#[inline(always)]
fn encode(port: u16, ms: u64) -> u64 {
    ms << 16 | u64::from(port)
}

#[inline(always)]
fn decode(info: u64) -> (u16, u64) {
    (info as u16, info >> 16)
}

/// What the writer side keeps.
#[derive(Debug)]
struct Writer {
    /// Insertions in order: (slot, serial); stale when the slot's serial
    /// moved on.
    fifo: VecDeque<(u32, u64)>,
    /// Serial of the insertion each slot holds (0: empty).
    serials: Vec<u64>,
    next_serial: u64,
}

/// An entry as a lookup sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The port the address was last seen on.
    pub port: u16,
    /// When, in ms of the router's clock.
    pub seen_ms: u64,
}

/// What [`MacTable::learn`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learnt {
    /// Known on this port already (its time refreshed).
    Known,
    /// A new address; `evicted` when another had to make room.
    Inserted {
        /// An older address was evicted.
        evicted: bool,
    },
    /// Known on another port, quiet long enough: moved here.
    Moved,
    /// Known on another port and heard there too recently: left alone.
    Refused,
}

/// The shared table.
#[derive(Debug)]
pub struct MacTable {
    slots: Box<[Slot]>,
    /// Buckets - 1 (a power of two minus one).
    mask: u64,
    capacity: usize,
    /// An address known on one port moves to another only after this
    /// long without being heard on the first (0: at once).
    move_after_ms: u64,
    seed: u64,
    len: AtomicUsize,
    writer: Mutex<Writer>,
}

impl MacTable {
    /// A table of at most `capacity` addresses (1 to [`MAX_CAPACITY`]).
    pub fn new(capacity: usize, move_after_ms: u64) -> MacTable {
        let capacity = capacity.clamp(1, MAX_CAPACITY);
        let nslots = (capacity * 4).next_power_of_two().max(WAYS);
        let buckets = nslots / WAYS;
        // A per-table key: a sender who does not know it cannot choose
        // addresses that fall into one bucket.
        let seed = std::collections::hash_map::RandomState::new().hash_one(0x6d61_6373u64) | 1;
        MacTable {
            slots: (0..nslots).map(|_| Slot::default()).collect(),
            mask: (buckets - 1) as u64,
            capacity,
            move_after_ms,
            seed,
            len: AtomicUsize::new(0),
            writer: Mutex::new(Writer {
                fifo: VecDeque::with_capacity(capacity + 1),
                serials: vec![0; nslots],
                next_serial: 1,
            }),
        }
    }

    /// Most addresses held.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Addresses held now.
    pub fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline(always)]
    fn bucket(&self, mac: u64) -> usize {
        let mut h = (mac ^ self.seed).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 29;
        h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 32;
        ((h & self.mask) as usize) * WAYS
    }

    #[inline(always)]
    fn ways(&self, mac: u64) -> std::ops::Range<usize> {
        let b = self.bucket(mac);
        b..b + WAYS
    }

    /// Where `mac` (48 bits) was seen last.
    #[inline]
    pub fn lookup(&self, mac: u64) -> Option<Entry> {
        let want = mac | PRESENT;
        for s in &self.slots[self.ways(mac)] {
            if s.key.load(Acquire) == want {
                let info = s.info.load(Acquire);
                if s.key.load(Relaxed) != want {
                    return None;
                }
                let (port, seen_ms) = decode(info);
                return Some(Entry { port, seen_ms });
            }
        }
        None
    }

    fn find(&self, mac: u64) -> Option<usize> {
        let want = mac | PRESENT;
        self.ways(mac)
            .find(|&i| self.slots[i].key.load(Acquire) == want)
    }

    fn lock(&self) -> MutexGuard<'_, Writer> {
        // A panic elsewhere while holding the lock leaves the table
        // consistent (every step below is a whole store), so carry on.
        self.writer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records that `mac` was seen on `port` at `now_ms`.
    pub fn learn(&self, mac: u64, port: u16, now_ms: u64) -> Learnt {
        if let Some(i) = self.find(mac) {
            let s = &self.slots[i];
            let info = s.info.load(Acquire);
            let (p, seen) = decode(info);
            if p == port {
                // Lock-free refresh, at most once a millisecond. A failed
                // exchange means another worker refreshed or a writer moved
                // it: either way there is nothing left to do.
                if now_ms > seen {
                    let _ = s
                        .info
                        .compare_exchange(info, encode(port, now_ms), Release, Relaxed);
                }
                return Learnt::Known;
            }
            if now_ms.saturating_sub(seen) < self.move_after_ms {
                return Learnt::Refused;
            }
        }
        let mut w = self.lock();
        // Checked again under the lock: another worker may have inserted
        // or moved it meanwhile.
        if let Some(i) = self.find(mac) {
            let s = &self.slots[i];
            let (p, seen) = decode(s.info.load(Acquire));
            if p == port {
                return Learnt::Known;
            }
            if now_ms.saturating_sub(seen) < self.move_after_ms {
                return Learnt::Refused;
            }
            s.info.store(encode(port, now_ms), Release);
            return Learnt::Moved;
        }
        let mut evicted = false;
        if self.len.load(Relaxed) >= self.capacity {
            evicted |= self.evict_oldest(&mut w);
        }
        let ways = self.ways(mac);
        let free = ways.clone().find(|&i| self.slots[i].key.load(Relaxed) == 0);
        let i = match free {
            Some(i) => i,
            None => {
                // The bucket is full: its least recently seen address goes.
                let i = ways
                    .min_by_key(|&i| decode(self.slots[i].info.load(Relaxed)).1)
                    .unwrap_or(self.bucket(mac));
                self.clear(&mut w, i);
                evicted = true;
                i
            }
        };
        let s = &self.slots[i];
        s.info.store(encode(port, now_ms), Release);
        s.key.store(mac | PRESENT, Release);
        let serial = w.next_serial;
        w.next_serial += 1;
        w.serials[i] = serial;
        w.fifo.push_back((i as u32, serial));
        self.len.fetch_add(1, Relaxed);
        if w.fifo.len() > 2 * self.capacity {
            // Records of addresses evicted from full buckets: drop them so
            // the FIFO stays within twice the capacity (amortised O(1)).
            let Writer { fifo, serials, .. } = &mut *w;
            fifo.retain(|&(i, s)| serials[i as usize] == s);
        }
        Learnt::Inserted { evicted }
    }

    /// Forgets `mac`, if it is there.
    pub fn remove(&self, mac: u64) {
        let mut w = self.lock();
        if let Some(i) = self.find(mac) {
            self.clear(&mut w, i);
        }
    }

    /// Forgets `mac` if it was last seen at `seen_ms` (not refreshed since
    /// a reader found it stale).
    pub fn remove_if_unchanged(&self, mac: u64, seen_ms: u64) {
        let mut w = self.lock();
        if let Some(i) = self.find(mac) {
            if decode(self.slots[i].info.load(Acquire)).1 == seen_ms {
                self.clear(&mut w, i);
            }
        }
    }

    fn clear(&self, w: &mut Writer, i: usize) {
        self.slots[i].key.store(0, Release);
        w.serials[i] = 0;
        self.len.fetch_sub(1, Relaxed);
    }

    /// Evicts the oldest insertion still present.
    fn evict_oldest(&self, w: &mut Writer) -> bool {
        while let Some((i, serial)) = w.fifo.pop_front() {
            if w.serials[i as usize] == serial {
                self.clear(w, i as usize);
                return true;
            }
        }
        false
    }

    /// Every entry: (address, entry), in slot order. O(slots): for
    /// handlers, not for packets.
    pub fn entries(&self) -> Vec<(u64, Entry)> {
        let mut out = Vec::new();
        for s in self.slots.iter() {
            let k = s.key.load(Acquire);
            if k & PRESENT == 0 {
                continue;
            }
            let (port, seen_ms) = decode(s.info.load(Acquire));
            if s.key.load(Relaxed) == k {
                out.push((k & !PRESENT, Entry { port, seen_ms }));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(i: u64) -> u64 {
        0x5254_0000_0000 | i
    }

    #[test]
    fn learns_looks_up_and_refreshes() {
        let t = MacTable::new(16, 1000);
        assert_eq!(t.lookup(mac(1)), None);
        assert_eq!(t.learn(mac(1), 3, 10), Learnt::Inserted { evicted: false });
        assert_eq!(
            t.lookup(mac(1)),
            Some(Entry {
                port: 3,
                seen_ms: 10
            })
        );
        assert_eq!(t.learn(mac(1), 3, 20), Learnt::Known);
        assert_eq!(t.lookup(mac(1)).unwrap().seen_ms, 20);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn moves_only_after_quiet() {
        let t = MacTable::new(16, 1000);
        t.learn(mac(1), 0, 100);
        assert_eq!(t.learn(mac(1), 1, 600), Learnt::Refused);
        assert_eq!(t.lookup(mac(1)).unwrap().port, 0);
        // Heard on port 0 again: the quiet period starts over.
        t.learn(mac(1), 0, 900);
        assert_eq!(t.learn(mac(1), 1, 1800), Learnt::Refused);
        assert_eq!(t.learn(mac(1), 1, 1900), Learnt::Moved);
        assert_eq!(t.lookup(mac(1)).unwrap().port, 1);
        assert_eq!(t.len(), 1);
        // With no quiet period it moves at once.
        let t = MacTable::new(16, 0);
        t.learn(mac(1), 0, 100);
        assert_eq!(t.learn(mac(1), 1, 100), Learnt::Moved);
    }

    #[test]
    fn bounded_and_evicts_the_oldest() {
        let t = MacTable::new(4, 0);
        for i in 0..4 {
            assert_eq!(t.learn(mac(i), 0, i), Learnt::Inserted { evicted: false });
        }
        // Refreshing does not make an address younger in insertion order.
        t.learn(mac(0), 0, 50);
        assert_eq!(t.learn(mac(4), 1, 60), Learnt::Inserted { evicted: true });
        assert_eq!(t.len(), 4);
        assert_eq!(t.lookup(mac(0)), None, "the oldest insertion went");
        for i in 1..5 {
            assert!(t.lookup(mac(i)).is_some(), "{i}");
        }
        // Thousands more: never more than 4, always the last 4.
        for i in 5..5000 {
            t.learn(mac(i), (i % 3) as u16, i);
            assert!(t.len() <= 4);
        }
        for i in 4996..5000 {
            assert_eq!(t.lookup(mac(i)).unwrap().port, (i % 3) as u16);
        }
        assert_eq!(t.entries().len(), 4);
        let w = t.lock();
        assert!(w.fifo.len() <= 8);
    }

    #[test]
    fn removal() {
        let t = MacTable::new(8, 0);
        t.learn(mac(1), 2, 5);
        t.remove_if_unchanged(mac(1), 4);
        assert!(t.lookup(mac(1)).is_some(), "refreshed since: kept");
        t.remove_if_unchanged(mac(1), 5);
        assert!(t.lookup(mac(1)).is_none());
        assert!(t.is_empty());
        t.learn(mac(1), 2, 5);
        t.remove(mac(1));
        t.remove(mac(2));
        assert!(t.is_empty());
        // The stale FIFO record of the removed address is skipped.
        for i in 10..18 {
            t.learn(mac(i), 0, i);
        }
        assert_eq!(t.len(), 8);
        t.learn(mac(99), 0, 99);
        assert_eq!(t.len(), 8);
        assert!(t.lookup(mac(10)).is_none());
        assert!(t.lookup(mac(11)).is_some());
    }

    #[test]
    fn shared_between_threads() {
        let t = std::sync::Arc::new(MacTable::new(64, 0));
        let threads: Vec<_> = (0..4u64)
            .map(|w| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for n in 0..20_000u64 {
                        let m = mac(n % 200);
                        t.learn(m, w as u16, n);
                        if let Some(e) = t.lookup(m) {
                            assert!(e.port < 4);
                        }
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        assert!(t.len() <= 64);
        assert_eq!(t.entries().len(), t.len());
    }
}
