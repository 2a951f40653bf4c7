//! Memory references and words touched per packet, counted per element:
//! the measure Hardekopf et al. compare their blocks by (§4-§6: a
//! classification by tag costs one reference, by hash one per chain
//! entry read, and so on).
//!
//! Counting is compiled in only with the cargo feature `memrefs` (of
//! `bricks-qos`, or of `bricks-elements`, which turns this one on). Without
//! it [`MemRefs`] is an empty struct and [`MemRefs::add`] an empty inline
//! function, so an element that counts compiles to the same code as one
//! that does not.
//!
//! # Accounting
//!
//! A reference is one access to a separate memory location (a cache line
//! the previous access did not bring in); its words are the 8-byte words
//! the access uses. The elements count:
//!
//! | access | refs | words |
//! |---|---|---|
//! | a tag lookup (the record, [`crate::flow::RECORD_WORDS`]) | 1 | 8 |
//! | a hash lookup: the bucket | 1 | 1 |
//! | a hash lookup: each record of the chain read | 1 each | 8 each |
//! | the meters of the flow's record (already in cache) | 0 | 0 |
//! | `FlowLookup`: the route word of the record | 1 | 1 |
//! | a source-route hop read from the packet | 1 | 1 |
//!
//! Packet bytes of the headers a classifier reads are not counted: every
//! block reads them alike, and the paper counts table memory.

/// A per-element count of memory references and words touched.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MemRefs {
    #[cfg(feature = "memrefs")]
    refs: u64,
    #[cfg(feature = "memrefs")]
    words: u64,
}

/// Whether counting is compiled in.
pub const ENABLED: bool = cfg!(feature = "memrefs");

impl MemRefs {
    /// Counts `refs` references touching `words` words in all. Compiles to
    /// nothing without the `memrefs` feature.
    #[inline(always)]
    pub fn add(&mut self, refs: u64, words: u64) {
        #[cfg(feature = "memrefs")]
        {
            self.refs += refs;
            self.words += words;
        }
        let _ = (refs, words);
    }

    /// The counts `(mem_refs, mem_words)`, or `None` when counting is not
    /// compiled in (an element then reports no such counters).
    #[inline]
    pub fn get(&self) -> Option<(u64, u64)> {
        #[cfg(feature = "memrefs")]
        {
            Some((self.refs, self.words))
        }
        #[cfg(not(feature = "memrefs"))]
        {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_when_compiled_in() {
        let mut m = MemRefs::default();
        m.add(1, 8);
        m.add(3, 10);
        if ENABLED {
            assert_eq!(m.get(), Some((4, 18)));
        } else {
            assert_eq!(m.get(), None);
            assert_eq!(core::mem::size_of::<MemRefs>(), 0);
        }
    }
}
