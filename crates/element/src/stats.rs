//! Counters an element reports.
//!
//! An element may report many counters (an IPsec element one set per SA),
//! and readers sum the counters of every worker: recording a counter and
//! merging two sets therefore cost O(1) per counter, never a search
//! through the counters already recorded.

use std::borrow::Cow;
use std::collections::HashMap;

/// Up to this many counters a name is found by a scan (cheaper than
/// hashing for the few counters most elements have); beyond it, by an
/// index.
const SCAN: usize = 16;

/// Named counters of one element. Each worker reports its own; readers sum
/// them by name.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    entries: Vec<(Cow<'static, str>, u64)>,
    /// Position of each name in `entries`, built once there are more than
    /// [`SCAN`] of them.
    index: Option<HashMap<Cow<'static, str>, usize>>,
}

impl PartialEq for Stats {
    fn eq(&self, other: &Stats) -> bool {
        self.entries == other.entries
    }
}

impl Eq for Stats {}

impl Stats {
    /// Records counter `name`; a name given twice adds up. Names are
    /// usually static; per-object counters (one SA's, say) are built.
    pub fn counter(&mut self, name: impl Into<Cow<'static, str>>, value: u64) {
        let name = name.into();
        match self.position(&name) {
            Some(i) => self.entries[i].1 += value,
            None => self.append(name, value),
        }
    }

    /// Adds every counter of `other`. Two workers' instances of one element
    /// report the same counters in the same order: those are added by
    /// position, the rest by name.
    pub fn merge(&mut self, other: &Stats) {
        if self.entries.is_empty() {
            self.clone_from(other);
            return;
        }
        for (i, (n, v)) in other.entries.iter().enumerate() {
            match self.entries.get_mut(i) {
                Some((m, w)) if m == n => *w += *v,
                _ => self.counter(n.clone(), *v),
            }
        }
    }

    /// The counters in the order they were first reported.
    pub fn entries(&self) -> &[(Cow<'static, str>, u64)] {
        &self.entries
    }

    /// One counter's value.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.position(name).map(|i| self.entries[i].1)
    }

    /// Whether nothing was reported.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn position(&self, name: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(name).copied(),
            None => self.entries.iter().position(|(n, _)| n == name),
        }
    }

    fn append(&mut self, name: Cow<'static, str>, value: u64) {
        let at = self.entries.len();
        if let Some(index) = &mut self.index {
            index.insert(name.clone(), at);
        } else if at >= SCAN {
            let mut index: HashMap<Cow<'static, str>, usize> = self
                .entries
                .iter()
                .enumerate()
                .map(|(i, (n, _))| (n.clone(), i))
                .collect();
            index.insert(name.clone(), at);
            self.index = Some(index);
        }
        self.entries.push((name, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_given_twice_adds_up_below_and_above_the_index_threshold() {
        for n in [3, SCAN, 5 * SCAN] {
            let mut s = Stats::default();
            for round in 0..2 {
                for i in 0..n {
                    s.counter(format!("c{i}"), (i + round) as u64);
                }
            }
            assert_eq!(s.entries().len(), n);
            for i in 0..n {
                assert_eq!(s.get(&format!("c{i}")), Some(2 * i as u64 + 1), "c{i}");
            }
            assert_eq!(s.get("missing"), None);
            assert_eq!(s.entries()[0].0, "c0", "first-reported order is kept");
        }
    }

    #[test]
    fn merge_adds_by_name_whatever_the_order() {
        let mut a = Stats::default();
        let mut b = Stats::default();
        for i in 0..40u64 {
            a.counter(format!("c{i}"), i);
            // b reports in the other order and one counter a lacks.
            b.counter(format!("c{}", 39 - i), 1);
        }
        b.counter("extra", 7);
        a.merge(&b);
        assert_eq!(a.entries().len(), 41);
        for i in 0..40u64 {
            assert_eq!(a.get(&format!("c{i}")), Some(i + 1));
        }
        assert_eq!(a.get("extra"), Some(7));
    }

    #[test]
    fn many_counters_are_found_without_scanning() {
        // 200k distinct names: a scan per name would take ~2e10 string
        // comparisons, the index about 2e5 lookups.
        let mut s = Stats::default();
        let n = 200_000u64;
        for i in 0..n {
            s.counter(format!("sa{i}"), i);
        }
        let mut t = s.clone();
        t.merge(&s);
        assert_eq!(t.get("sa199999"), Some(2 * 199_999));
        assert_eq!(
            t.entries().iter().map(|&(_, v)| v).sum::<u64>(),
            n * (n - 1)
        );
    }

    #[test]
    fn equality_ignores_the_index() {
        let mut a = Stats::default();
        let mut b = Stats::default();
        for i in 0..2 * SCAN {
            a.counter(format!("c{i}"), 1);
        }
        for i in 0..2 * SCAN {
            b.counter(format!("c{i}"), 1);
        }
        assert_eq!(a, b);
        b.counter("c0", 1);
        assert_ne!(a, b);
    }
}
