//! A compiled longest-prefix-match table for the small route lists of
//! configuration files: one open-addressing hash table per distinct prefix
//! length, probed from the longest length down.
//!
//! A configuration's table has a handful of distinct lengths, so a lookup
//! costs a few multiply-shift hashes and compares, where scanning every
//! route costs a mask and a compare per route. It is rebuilt whenever the
//! route list changes (a control-path operation). Internet-size tables need
//! the structures of the `lpm` layer instead.

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

#[inline(always)]
fn hash(key: u32) -> u32 {
    key.wrapping_mul(0x9e37_79b1)
}

/// Longest-prefix match over (network, length) pairs.
#[derive(Debug, Clone, Default)]
pub struct PrefixTable {
    levels: Vec<Level>,
}

impl PrefixTable {
    /// Builds the table from `(network, prefix length)` pairs; the value
    /// found for an address is the index of its longest matching pair.
    /// Later duplicates of a prefix win.
    pub fn build(prefixes: impl IntoIterator<Item = (u32, u8)>) -> PrefixTable {
        let mut by_len: Vec<Vec<(u32, u32)>> = vec![Vec::new(); 33];
        for (i, (net, len)) in prefixes.into_iter().enumerate() {
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
        PrefixTable { levels }
    }

    /// The index of the longest prefix containing `addr`.
    #[inline]
    pub fn lookup(&self, addr: u32) -> Option<usize> {
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
