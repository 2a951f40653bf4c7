//! Counters an element reports.

use std::borrow::Cow;

/// Named counters of one element. Each worker reports its own; readers sum
/// them by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    entries: Vec<(Cow<'static, str>, u64)>,
}

impl Stats {
    /// Records counter `name`; a name given twice adds up. Names are
    /// usually static; per-object counters (one SA's, say) are built.
    pub fn counter(&mut self, name: impl Into<Cow<'static, str>>, value: u64) {
        let name = name.into();
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => *v += value,
            None => self.entries.push((name, value)),
        }
    }

    /// Adds every counter of `other`.
    pub fn merge(&mut self, other: &Stats) {
        for (n, v) in &other.entries {
            self.counter(n.clone(), *v);
        }
    }

    /// The counters in the order they were first reported.
    pub fn entries(&self) -> &[(Cow<'static, str>, u64)] {
        &self.entries
    }

    /// One counter's value.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.entries
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
    }

    /// Whether nothing was reported.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
