//! A compiled longest-prefix-match table for the small route lists of
//! configuration files: one open-addressing hash table per distinct prefix
//! length, probed from the longest length down.
//!
//! A configuration's table has a handful of distinct lengths, so a lookup
//! costs a few multiply-shift hashes and compares, where scanning every
//! route costs a mask and a compare per route. In front of the levels, a
//! multibit trie of stride 8 (controlled prefix expansion, Srinivasan and
//! Varghese, "Fast address lookups using controlled prefix expansion",
//! 1999) answers with one load per address byte: a node of 256 entries
//! holds, for each next byte, the route every address under it takes, or
//! the node of the next byte where a longer prefix splits it. A
//! configuration's table needs a few nodes (one per /8, /16 and /24 that
//! holds a longer prefix); past [`MAX_NODES`] the rest is left to the
//! levels, which is what bounds the memory of a large table. The nodes lie
//! one after the other in one array, so a step of the walk is an OR of
//! the next byte into the node's start and one bounds check. The table is
//! rebuilt whenever the route list changes (a control-path operation).
//! Internet-size tables need the structures of the `lpm` layer instead.

use std::collections::HashSet;

/// One prefix length's routes.
#[derive(Debug, Clone)]
struct Level {
    mask: u32,
    /// Right shift that turns the hash into a slot index.
    shift: u32,
    /// (network, route index); index `u32::MAX` marks an empty slot.
    slots: Box<[(u32, u32)]>,
}

const EMPTY: u32 = u32::MAX;

/// A trie entry: no route for any address under it.
const NO_ROUTE: u32 = 0x7fff_ffff;
/// A trie entry with this bit set names the node of the next byte by
/// where it starts in [`PrefixTable::nodes`] (a multiple of 256), so the
/// walk finds the next entry at that start plus the byte.
const NODE: u32 = 0x8000_0000;
/// A trie entry: past the node budget; the levels answer. As a node it
/// starts past the end of [`PrefixTable::nodes`] (far shorter), so the
/// walk tells it apart with the bounds check it makes anyway.
const LEVELS: u32 = u32::MAX;
/// Trie nodes (1 KiB each) a table may have below the root.
const MAX_NODES: usize = 64;

#[inline(always)]
fn hash(key: u32) -> u32 {
    key.wrapping_mul(0x9e37_79b1)
}

/// Longest-prefix match over (network, length) pairs.
#[derive(Debug, Clone)]
pub struct PrefixTable {
    /// The trie's root, by the address's first byte. An entry is a route
    /// index, [`NO_ROUTE`], [`NODE`] with an index in `nodes`, or
    /// [`LEVELS`].
    root: Box<[u32; 256]>,
    /// The trie's other nodes, 256 entries each, one after the other.
    nodes: Vec<u32>,
    levels: Vec<Level>,
}

impl Default for PrefixTable {
    fn default() -> PrefixTable {
        PrefixTable::build([])
    }
}

impl PrefixTable {
    /// Builds the table from `(network, prefix length)` pairs; the value
    /// found for an address is the index of its longest matching pair.
    /// Later duplicates of a prefix win.
    pub fn build(prefixes: impl IntoIterator<Item = (u32, u8)>) -> PrefixTable {
        let mut by_len: Vec<Vec<(u32, u32)>> = vec![Vec::new(); 33];
        for (i, (net, len)) in prefixes.into_iter().enumerate() {
            assert!(i < NO_ROUTE as usize, "too many routes");
            let len = len.min(32);
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            by_len[len as usize].push((net & mask, i as u32));
        }
        let mut levels = Vec::new();
        for len in (0..=32u32).rev() {
            let entries = &by_len[len as usize];
            if entries.is_empty() {
                continue;
            }
            let bits = (entries.len() * 2)
                .next_power_of_two()
                .trailing_zeros()
                .max(1);
            let mut slots = vec![(0u32, EMPTY); 1 << bits].into_boxed_slice();
            let slot_mask = (1usize << bits) - 1;
            for &(net, idx) in entries {
                let mut s = (hash(net) >> (32 - bits)) as usize;
                loop {
                    if slots[s].1 == EMPTY || slots[s].0 == net {
                        slots[s] = (net, idx);
                        break;
                    }
                    s = (s + 1) & slot_mask;
                }
            }
            levels.push(Level {
                mask: if len == 0 { 0 } else { u32::MAX << (32 - len) },
                shift: 32 - bits,
                slots,
            });
        }
        // split[d]: the (8 * d + 8)-bit prefixes that hold a longer
        // prefix, whose trie entry at depth d must be a node.
        let mut split: [HashSet<u32>; 3] = Default::default();
        for (len, entries) in by_len.iter().enumerate() {
            for (d, set) in split.iter_mut().enumerate() {
                let bits = 8 * d as u32 + 8;
                if len as u32 > bits {
                    set.extend(entries.iter().map(|&(net, _)| net >> (32 - bits)));
                }
            }
        }
        let mut table = PrefixTable {
            root: Box::new([NO_ROUTE; 256]),
            nodes: Vec::new(),
            levels,
        };
        *table.root = table.node(0, 0, &split);
        table
    }

    /// The trie node for the addresses whose first `8 * depth` bits are
    /// those of `base`; its children are added to `nodes`.
    fn node(&mut self, base: u32, depth: usize, split: &[HashSet<u32>; 3]) -> [u32; 256] {
        let mut node = [NO_ROUTE; 256];
        let shift = 24 - 8 * depth as u32;
        for b in 0..256u32 {
            let sub = base | b << shift;
            let e = if depth < 3 && split[depth].contains(&(sub >> shift)) {
                if self.nodes.len() < MAX_NODES * 256 {
                    // Its place is taken before its own children's.
                    let at = self.nodes.len();
                    self.nodes.extend([NO_ROUTE; 256]);
                    let child = self.node(sub, depth + 1, split);
                    self.nodes[at..at + 256].copy_from_slice(&child);
                    NODE | at as u32
                } else {
                    LEVELS
                }
            } else {
                // No longer prefix under `sub`: the prefixes that hold any
                // of its addresses hold all of them, so its first address
                // answers for every one.
                self.lookup_levels(sub).map_or(NO_ROUTE, |i| i as u32)
            };
            node[b as usize] = e;
        }
        node
    }

    /// The index of the longest prefix containing `addr`.
    #[inline(always)]
    pub fn lookup(&self, addr: u32) -> Option<usize> {
        let i = self.lookup_index(addr);
        (i != NO_ROUTE).then_some(i as usize)
    }

    /// [`PrefixTable::lookup`] as a bare index, which is `0x7fff_ffff`
    /// when no prefix contains `addr`: past the end of any list of the
    /// prefixes, so that the caller's bounds check on its list is also
    /// its test for no route.
    #[inline(always)]
    pub fn lookup_index(&self, addr: u32) -> u32 {
        let e = self.root[(addr >> 24) as usize];
        if e & NODE == 0 {
            return e;
        }
        self.lookup_below(e, addr)
    }

    /// [`PrefixTable::lookup_index`] from the node `e` of the root on.
    #[inline(always)]
    fn lookup_below(&self, mut e: u32, addr: u32) -> u32 {
        // At most three more bytes: a /32 is a route in a last-byte node,
        // never a node.
        for shift in [16, 8, 0] {
            let at = (e & !NODE) | ((addr >> shift) & 0xff);
            let Some(&next) = self.nodes.get(at as usize) else {
                return self.lookup_levels(addr).map_or(NO_ROUTE, |i| i as u32);
            };
            e = next;
            if e & NODE == 0 {
                break;
            }
        }
        e
    }

    /// [`PrefixTable::lookup`] by the levels alone (past the node budget,
    /// and while building), out of line.
    #[inline(never)]
    fn lookup_levels(&self, addr: u32) -> Option<usize> {
        for level in &self.levels {
            let key = addr & level.mask;
            let n = level.slots.len();
            let mut s = (hash(key) >> level.shift) as usize;
            // Tables are at most half full, so a probe always meets an
            // empty slot.
            loop {
                let (net, idx) = level.slots[s & (n - 1)];
                if idx == EMPTY {
                    break;
                }
                if net == key {
                    return Some(idx as usize);
                }
                s += 1;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(prefixes: &[(u32, u8)], addr: u32) -> Option<usize> {
        let mut best: Option<(u8, usize)> = None;
        for (i, &(net, len)) in prefixes.iter().enumerate() {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            if addr & mask == net & mask && best.is_none_or(|(l, _)| len >= l) {
                best = Some((len, i));
            }
        }
        best.map(|(_, i)| i)
    }

    #[test]
    fn longest_wins_and_default_route() {
        let p = [(0x0a00_0000, 8), (0x0a01_0000, 16), (0, 0)];
        let t = PrefixTable::build(p);
        assert_eq!(t.lookup(0x0a01_0203), Some(1));
        assert_eq!(t.lookup(0x0a02_0203), Some(0));
        assert_eq!(t.lookup(0x0b00_0000), Some(2));
        assert_eq!(
            PrefixTable::build([(0x0a00_0000, 8)]).lookup(0x0b00_0000),
            None
        );
    }

    /// The trie answers for the bytes without longer prefixes and goes a
    /// byte deeper where one splits them.
    #[test]
    fn trie_nodes_where_longer_prefixes_split() {
        // 10/8 holds a /16; 1/8 is a /8 given twice (the later wins);
        // 192/2 covers 192-255 but 200/8 holds a /32.
        let p = [
            (0x0a00_0000, 8),
            (0x0a01_0000, 16),
            (0x0100_0000, 8),
            (0x0100_0000, 8),
            (0xc000_0000, 2),
            (0xc800_0001, 32),
        ];
        let t = PrefixTable::build(p);
        let root = &t.root;
        assert_eq!(root[1], 3);
        assert_eq!(root[2], NO_ROUTE);
        assert_eq!(root[255], 4);
        assert_ne!(root[10] & NODE, 0);
        assert_ne!(root[200] & NODE, 0);
        // 10/8, 200/8, 200.0/16, 200.0.0/24.
        assert_eq!(t.nodes.len(), 4 * 256);
        assert_eq!(t.lookup(0x0102_0304), Some(3));
        assert_eq!(t.lookup(0x0a01_0203), Some(1));
        assert_eq!(t.lookup(0x0a02_0203), Some(0));
        assert_eq!(t.lookup(0xc800_0001), Some(5));
        assert_eq!(t.lookup(0xc800_0002), Some(4));
        assert_eq!(t.lookup(0xc801_0001), Some(4));
        assert_eq!(t.lookup(0xff00_0000), Some(4));
        assert_eq!(t.lookup(0x0200_0000), None);
        assert_eq!(PrefixTable::default().lookup(0x0102_0304), None);
    }

    /// Past the node budget the levels answer, and agree.
    #[test]
    fn over_the_node_budget_the_levels_answer() {
        // A /32 in each of 100 /8s would need 300 nodes.
        let mut p: Vec<(u32, u8)> = (0..100u32).map(|i| (i << 24 | 0x0001_0203, 32)).collect();
        p.push((0, 0));
        p.push((0x0500_0000, 8));
        let t = PrefixTable::build(p.iter().copied());
        assert_eq!(t.nodes.len(), MAX_NODES * 256);
        assert!(t.root.contains(&LEVELS));
        for i in 0..110u32 {
            for a in [i << 24 | 0x0001_0203, i << 24 | 0x0001_0204, i << 24] {
                assert_eq!(t.lookup(a), naive(&p, a), "{a:#x}");
            }
        }
    }

    proptest! {
        #[test]
        fn agrees_with_a_scan(
            prefixes in proptest::collection::vec((any::<u32>(), 0u8..=32), 0..40),
            addrs in proptest::collection::vec(any::<u32>(), 50),
        ) {
            let t = PrefixTable::build(prefixes.iter().copied());
            for a in addrs {
                // Aim half the lookups inside a prefix.
                for probe in [a, prefixes.first().map_or(a, |p| p.0 ^ (a & 0xff))] {
                    let want = naive(&prefixes, probe).map(|i| {
                        // Duplicates: the later one wins in both.
                        let (net, len) = prefixes[i];
                        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
                        prefixes.iter().rposition(|&(n, l)| l == len && n & mask == net & mask).unwrap()
                    });
                    prop_assert_eq!(t.lookup(probe), want);
                }
            }
        }
    }
}
