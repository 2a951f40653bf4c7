//! The table VRDemux looks tags up in: MAC addresses, MPLS labels and IPv4
//! tunnel addresses to outputs, built once from the configuration; a
//! packet reads it once and counts itself beside the tag it found.
//!
//! Open addressing with linear probing over a power-of-two array at most
//! half full, and multiplicative hashing: one multiply and a shift pick
//! the first slot, and the probe that follows reads adjacent slots of 16
//! bytes, usually one cache line. Probes do not wrap around: the array
//! goes on past its last home slot for as far as the longest probe
//! reaches, so a lookup reads one run of slots with one bounds check for
//! the run.
//!
//! The multiplier is chosen when the table is built, for the keys it
//! holds. Fibonacci hashing (2^64 / phi) spreads any keys evenly, each
//! one usually alone in its cache line. Keys that run in sequence, as
//! operators number routers' MAC addresses, labels and tunnel endpoints,
//! fill every slot of a line instead when the multiplier is the power of
//! two that makes the home slot the key's low bits: a thousand routers'
//! MAC addresses then take 256 cache lines where they took some 500,
//! and more of them stay in the first-level cache beside the rest of a
//! router's work. The table takes the low bits when they give fewer
//! lines and no longer a probe than Fibonacci hashing (so a miss costs
//! no more).
//!
//! Why not `std::collections::HashMap`: its default hasher, SipHash-1-3,
//! exists to stop an attacker who chooses the *inserted* keys from making
//! long chains (HashDoS). Here every key comes from the configuration and
//! no key is added while packets flow, so there is nothing for a sender
//! to flood: a packet can only look up (and count). What matters is the cost of
//! that lookup, and SipHash costs tens of cycles per tag before the first
//! memory access, more than the rest of the demultiplexer. The longest
//! probe any configured key needs is recorded when the table is built, and
//! a lookup never probes further, so a miss, whatever key a hostile frame
//! carries, costs at most that many slot reads: O(1) in the number of
//! routers.

/// The tag of an empty slot. A slot's tag is its key shifted up 16 bits
/// and its output (below 65,535) beneath. Keys are below 2^48 - 1 and
/// outputs below 65,535, so no key's tag is this.
const EMPTY: u64 = u64::MAX;

/// The first key a table cannot hold.
const KEY_END: u64 = (1 << 48) - 1;

/// 2^64 / phi: consecutive keys (labels 100, 101, ...; addresses in one
/// subnet) land far apart.
const FIBONACCI: u64 = 0x9e37_79b9_7f4a_7c15;

/// Smallest table, in slots.
const MIN_SLOTS: usize = 16;

/// A slot: a key and its output as one word, and the packets counted for
/// the key beside it, so that the count a lookup adds to is in the cache
/// line it read (counts kept apart, by output, took a second line a
/// packet: with a thousand routers, a cache miss more).
#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
struct Slot {
    /// `key << 16 | output`, or [`EMPTY`].
    tag: u64,
    count: u64,
}

impl Slot {
    const EMPTY: Slot = Slot {
        tag: EMPTY,
        count: 0,
    };
}

/// A map from tags (below 2^48 - 1) to outputs (below 65,535), fixed
/// when built, counting the packets looked up for each.
#[derive(Debug, Clone)]
pub struct TagTable {
    /// The home slots (a power of two of them), then the slots the
    /// longest probe from the last home slots reaches.
    slots: Box<[Slot]>,
    /// The hash's multiplier: [`FIBONACCI`], or `1 << shift` for the
    /// key's low bits.
    mul: u64,
    /// 64 minus log2 of the number of home slots.
    shift: u32,
    /// Most slots past the first that any key's lookup reads.
    max_probe: usize,
    len: usize,
}

impl Default for TagTable {
    /// A table holding nothing, with no slots (and no allocation: an
    /// element moves its table out and back for every batch).
    fn default() -> TagTable {
        TagTable {
            slots: Box::new([]),
            mul: FIBONACCI,
            shift: 63,
            max_probe: 0,
            len: 0,
        }
    }
}

impl TagTable {
    /// A table holding `entries` (tag, output). Keys must be below
    /// 2^48 - 1 (a MAC address of a single station, a label, an IPv4
    /// address) and outputs below 65,535: others are left out. A repeated
    /// key keeps its first output (the caller refuses duplicates with a
    /// better message first).
    pub fn new(entries: &[(u64, u32)]) -> TagTable {
        let n = (entries.len() * 2).next_power_of_two().max(MIN_SLOTS);
        let shift = 64 - n.trailing_zeros();
        let spread = Self::build(entries, n, FIBONACCI, shift);
        let low_bits = Self::build(entries, n, 1 << shift, shift);
        if low_bits.max_probe <= spread.max_probe && low_bits.lines() < spread.lines() {
            low_bits
        } else {
            spread
        }
    }

    /// The table of `entries` in `n` home slots (`2^(64 - shift)`) under
    /// multiplier `mul`.
    fn build(entries: &[(u64, u32)], n: usize, mul: u64, shift: u32) -> TagTable {
        // A probe passes over occupied slots only, so it ends at most
        // `entries.len()` slots past its home.
        let mut slots = vec![Slot::EMPTY; n + entries.len()];
        let mut max_probe = 0;
        let mut len = 0;
        for &(key, out) in entries {
            debug_assert!(key < KEY_END && out < 0xffff, "{key:#x} {out}");
            if key >= KEY_END || out >= 0xffff {
                continue;
            }
            let home = Self::home_in(key, mul, shift);
            for (probe, slot) in slots[home..].iter_mut().enumerate() {
                if slot.tag >> 16 == key {
                    break;
                }
                if slot.tag == EMPTY {
                    slot.tag = key << 16 | u64::from(out);
                    max_probe = usize::max(max_probe, probe);
                    len += 1;
                    break;
                }
            }
        }
        // Every lookup reads within its home slot and `max_probe` more.
        slots.truncate(n + max_probe);
        TagTable {
            slots: slots.into_boxed_slice(),
            mul,
            shift,
            max_probe,
            len,
        }
    }

    /// How many cache lines (of 64 bytes, four slots) hold keys: what a
    /// run of lookups spread over all of them keeps in the cache.
    fn lines(&self) -> usize {
        let mut lines = 0;
        let mut last = usize::MAX;
        for (i, s) in self.slots.iter().enumerate() {
            if s.tag != EMPTY && i / 4 != last {
                last = i / 4;
                lines += 1;
            }
        }
        lines
    }

    /// The home slot of `key` in a table of `2^(64 - shift)` home slots
    /// under multiplier `mul`.
    #[inline(always)]
    fn home_in(key: u64, mul: u64, shift: u32) -> usize {
        (key.wrapping_mul(mul) >> shift) as usize
    }

    /// The output of `key`, if configured, counting nothing (what the
    /// tests compare with a map; a packet's lookup counts).
    #[cfg(test)]
    fn get(&self, key: u64) -> Option<u32> {
        let i = self.find(key)?;
        self.slots.get(i).map(|s| (s.tag & 0xffff) as u32)
    }

    /// The output of `key`, if configured, counting a packet for it.
    #[inline(always)]
    pub fn get_counted(&mut self, key: u64) -> Option<u32> {
        self.get_counted_by(key, 1)
    }

    /// The output of `key`, if configured, counting `n` packets for it.
    #[inline(always)]
    pub fn get_counted_by(&mut self, key: u64, n: u64) -> Option<u32> {
        if key >= KEY_END {
            // No such key is held, and it would match an empty slot.
            return None;
        }
        // The usual key is at its home: one bounds check to reach the
        // slot that is counted, the probe past it out of line.
        let home = Self::home_in(key, self.mul, self.shift);
        let slot = match self.slots.get_mut(home) {
            Some(s) if s.tag >> 16 == key => s,
            _ => {
                let i = self.probe(key, home)?;
                self.slots.get_mut(i)?
            }
        };
        slot.count += n;
        Some((slot.tag & 0xffff) as u32)
    }

    /// The output and the packets counted of every key held.
    pub fn counts(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.slots
            .iter()
            .filter(|s| s.tag != EMPTY)
            .map(|s| ((s.tag & 0xffff) as u32, s.count))
    }

    /// The slot holding `key`.
    #[cfg(test)]
    fn find(&self, key: u64) -> Option<usize> {
        if key >= KEY_END {
            return None;
        }
        self.probe(key, Self::home_in(key, self.mul, self.shift))
    }

    /// The slot holding `key` (below [`KEY_END`]), looked for slot by
    /// slot from its home slot `home`.
    #[inline(never)]
    fn probe(&self, key: u64, home: usize) -> Option<usize> {
        let last = home + self.max_probe;
        let mut i = home;
        loop {
            let tag = self.slots.get(i)?.tag;
            if tag >> 16 == key {
                return Some(i);
            }
            if tag == EMPTY || i >= last {
                return None;
            }
            i += 1;
        }
    }

    /// Number of tags.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no tags.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most slots past the first that any lookup reads.
    pub fn max_probe(&self) -> usize {
        self.max_probe
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn finds_what_it_holds_and_nothing_else() {
        let entries: Vec<(u64, u32)> = (0..1024)
            .map(|i| (0x0200_0000_0000 + i, i as u32))
            .collect();
        let t = TagTable::new(&entries);
        assert_eq!(t.len(), 1024);
        // 2,048 home slots and the longest probe past the last.
        assert_eq!(t.slots.len(), 2048 + t.max_probe());
        for &(k, o) in &entries {
            assert_eq!(t.get(k), Some(o));
        }
        assert_eq!(t.get(0x0200_0000_0000 + 1024), None);
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(EMPTY - 1), None);
        assert_eq!(t.get(KEY_END), None);
        assert_eq!(t.get(EMPTY >> 16), None);
        // Consecutive keys fill lines: each at its home, four a line.
        assert_eq!(t.max_probe(), 0);
        assert_eq!(t.lines(), 256);
        assert_eq!(t.mul, 1 << t.shift);
    }

    #[test]
    fn keys_that_clash_in_their_low_bits_are_spread() {
        // Addresses apart by multiples of 2^16: under their low bits all
        // would share one home slot.
        let entries: Vec<(u64, u32)> = (0..512)
            .map(|i| (0x0200_0000_0000 + (i << 16), i as u32))
            .collect();
        let t = TagTable::new(&entries);
        assert_eq!(t.mul, FIBONACCI);
        assert!(t.max_probe() < 8, "max probe {}", t.max_probe());
        for &(k, o) in &entries {
            assert_eq!(t.get(k), Some(o));
        }
        assert_eq!(t.get(0x0200_0000_0000 + (512 << 16)), None);
    }

    #[test]
    fn lookups_count_by_key() {
        let mut t = TagTable::new(&[(10, 0), (11, 1), (12, 1)]);
        for k in [10, 11, 11, 12, 13, 10, 10] {
            t.get_counted(k);
        }
        let mut counts: Vec<(u32, u64)> = t.counts().collect();
        counts.sort_unstable();
        assert_eq!(counts, [(0, 3), (1, 1), (1, 2)]);
        // A plain lookup counts nothing.
        assert_eq!(t.get(10), Some(0));
        assert_eq!(t.counts().map(|c| c.1).sum::<u64>(), 6);
    }

    #[test]
    fn small_and_empty_tables() {
        let t = TagTable::new(&[]);
        assert!(t.is_empty());
        assert_eq!(t.get(5), None);
        // The default, which holds no slots at all.
        let mut t = TagTable::default();
        assert!(t.is_empty());
        assert_eq!(
            (t.get(0), t.get_counted(0), t.get_counted(5)),
            (None, None, None)
        );
        assert_eq!(t.counts().count(), 0);
        let t = TagTable::new(&[(5, 1), (5, 2)]);
        assert_eq!(t.len(), 1);
        assert_eq!(t.get(5), Some(1));
    }

    proptest! {
        /// Runs of keys, as operators number them: the table takes their
        /// low bits and still finds each, and nothing else.
        #[test]
        fn runs_of_keys_are_found_under_their_low_bits(
            base in 0u64..1 << 47,
            step in 1u64..4,
            len in 1usize..600,
            probes in proptest::collection::vec(0u64..1 << 48, 0..50),
        ) {
            let entries: Vec<(u64, u32)> =
                (0..len).map(|i| (base + i as u64 * step, i as u32)).collect();
            let mut t = TagTable::new(&entries);
            prop_assert_eq!(t.len(), len);
            for &(k, o) in &entries {
                prop_assert_eq!(t.get_counted(k), Some(o));
            }
            for k in probes {
                let held = entries.iter().find(|e| e.0 == k).map(|e| e.1);
                prop_assert_eq!(t.get(k), held);
            }
            prop_assert_eq!(t.counts().map(|c| c.1).sum::<u64>(), len as u64);
        }

        #[test]
        fn agrees_with_a_hash_map(
            keys in proptest::collection::vec(0u64..1 << 48, 0..300),
            probes in proptest::collection::vec(0u64..1 << 48, 0..100),
        ) {
            let mut map = HashMap::new();
            let mut entries = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                if map.insert(*k, i as u32).is_none() {
                    entries.push((*k, i as u32));
                } else {
                    map.insert(*k, entries.iter().find(|e| e.0 == *k).unwrap().1);
                }
            }
            let mut t = TagTable::new(&entries);
            // Whichever multiplier it took, a miss reads no further than
            // under Fibonacci hashing.
            let n = (entries.len() * 2).next_power_of_two().max(MIN_SLOTS);
            let spread = TagTable::build(&entries, n, FIBONACCI, 64 - n.trailing_zeros());
            prop_assert!(t.max_probe() <= spread.max_probe());
            for k in keys.iter().chain(&probes) {
                prop_assert_eq!(t.get(*k), map.get(k).copied());
                // The counting lookup reads the home slot its own way.
                prop_assert_eq!(t.get_counted(*k), map.get(k).copied());
            }
            // Every key of the table at its highest is not held.
            prop_assert_eq!(t.get_counted(KEY_END), None);
            let held = keys.iter().chain(&probes).filter(|k| map.contains_key(k)).count();
            prop_assert_eq!(t.counts().map(|c| c.1).sum::<u64>(), held as u64);
        }
    }
}
