//! What every element that counts memory references shares: the
//! `MEMREFS` keyword, its counters and their manual entries. The tables
//! and the units are `bricks_qos::memref`'s.
//!
//! An element that counts is generic over `const M: bool`, counts with
//! `if M { ... }` (compiled out for `M = false`), and its class's `make`
//! reads [`bricks_element::Args::memrefs`] to pick the instance.

use bricks_element::{Keyword, Stats};
use bricks_qos::memref::MemRefs;

/// The `MEMREFS` keyword, for an element's manual.
pub(crate) const KEYWORD: Keyword = Keyword {
    name: "MEMREFS",
    ty: "boolean",
    default: Some("false; true under `bricks run --memrefs`"),
    doc: "count the memory references and 32-bit words each packet costs (counters \
          mem_packets, mem_refs, mem_words); when false the counting code is compiled out",
};

/// The counters of an element that counts, for its manual.
pub(crate) const PACKETS: (&str, &str) = ("mem_packets", "packets counted (MEMREFS true only)");
/// See [`PACKETS`].
pub(crate) const REFS: (&str, &str) = (
    "mem_refs",
    "memory references made for them (MEMREFS true only)",
);
/// See [`PACKETS`].
pub(crate) const WORDS: (&str, &str) = (
    "mem_words",
    "32-bit words touched for them (MEMREFS true only)",
);

/// Packets counted and what they cost.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct MemCount {
    /// Packets counted.
    pub packets: u64,
    /// References and words for them.
    pub mem: MemRefs,
}

impl MemCount {
    /// Reports `mem_packets`, `mem_refs` and `mem_words`.
    pub fn stats(&self, s: &mut Stats) {
        s.counter(PACKETS.0, self.packets);
        s.counter(REFS.0, self.mem.refs);
        s.counter(WORDS.0, self.mem.words);
    }
}
