//! Memory references and words touched per packet, counted per element:
//! the measure Hardekopf et al. compare their blocks by (§3.2, §4-§6: a
//! classification by tag costs one reference, by hash one per chain entry
//! read plus the flow state, a trie lookup one per level, and so on).
//!
//! # Switching it on
//!
//! Counting is a run-time choice that costs nothing when off. Every
//! structure and element that counts is generic over a `const M: bool`
//! (`BinSort<T, M>`, `TagClassifier<M>`, ...; `M` defaults to `false`),
//! and its counting code is `if M { ... }`, which the compiler removes
//! for `M = false`: the non-counting instance is the same code as a
//! structure that never counted. The elements take the keyword
//! `MEMREFS true|false` and their class's `make` picks the instance;
//! `bricks run --memrefs` sets the default of that keyword to true for
//! every element of the run and prints a table of the counts at exit.
//!
//! # Accounting
//!
//! The paper's units (§3.2 and Table 4, SRAM bandwidth = words x 32 bits
//! x packets/s):
//!
//! * a **word** is 32 bits;
//! * a **reference** is one access to a separate memory location: one
//!   variable, one table entry, one array slot, whose words lie together.
//!   Reading a variable and writing it back in the same operation (a
//!   length, a head index) is one reference, its words counted once.
//!
//! Sizes, in words: an index, a length or a link is 1 (32 bits); a
//! deadline, a time or a 64-bit bitmap word is 2; a packet handle is 2
//! (a 64-bit pointer); a heap key (deadline and arrival sequence) is 4.
//! Packet bytes are not counted: every block reads its headers alike, and
//! the paper counts table and queue memory.
//!
//! | access | refs | words |
//! |---|---|---|
//! | tag lookup: the flow's record ([`crate::flow::RECORD_WORDS`]) | 1 | 8 |
//! | hash lookup: the bucket | 1 | 1 |
//! | hash lookup: each record of the chain read | 1 each | 8 each |
//! | the meters of the flow's record (in the record already read) | 0 | 0 |
//! | `FlowLookup`: the route word of the record | 1 | 1 |
//! | `SourceRouteLookup`: the hop read from the packet's route (6 bytes) | 1 | 2 |
//! | `VirtualClock` by flow: the rate and last deadline in the flow's record | 1 | 4 |
//! | `VirtualClock` at RATE: the shared last deadline | 1 | 2 |
//! | trie4 route lookup: each level's entry (64 bits) | 1 each | 2 each |
//! | DIR-24-8 route lookup: the /24 entry, and the long table's if any | 1 or 2 | 1 or 2 |
//! | FIFO enqueue: head, length, the slot (handle and deadline) | 3 | 6 |
//! | FIFO dequeue: head, length, the slot | 3 | 6 |
//! | FIFO enqueue refused: head, length | 2 | 2 |
//! | heap enqueue: length, sequence, the new entry (key, handle) | 3 | 9 |
//! | heap sift-up, each level: the parent's key | 1 | 4 |
//! | heap dequeue: length, the root entry, the last entry | 3 | 13 |
//! | heap sift-down, each level: each child's key | 1 each | 4 each |
//! | heap swap (either sift): both entries written | 2 | 12 |
//! | BinSort, either operation: length, base bin, first bin | 3 | 5 |
//! | BinSort enqueue to an empty bin: free list, node (handle, deadline, link), head, tail, bitmap word, summary word | 6 | 12 |
//! | BinSort enqueue to a non-empty bin: free list, node, old tail's link, tail | 4 | 8 |
//! | BinSort dequeue: head, node, free list | 3 | 7 |
//! | BinSort dequeue emptying its bin: tail, bitmap word (and the summary word when the bitmap word empties) | 2 (3) | 3 (5) |
//! | BinSort, the next non-empty bin elsewhere: each summary word, the bitmap word | 1 each | 2 each |
//! | MDS-BinSort merged dequeue: each non-empty candidate replica's length, base and first bin | 3 each | 5 each |
//! | hashed FIFO: the replica's FIFO (the hash is computed, not read) | as FIFO | as FIFO |
//!
//! A full structure refuses after its first line (FIFO 2, 2; heap 2, 3;
//! BinSort 3, 5). A dequeue that finds a structure empty is not counted:
//! it is a consumer polling while idle, not work for a packet. The paper measured 14.5 references and 40
//! words per packet for its linked-list BinSort with locks and spilled
//! registers (§5.3); the counts here are of bricks' structures, without
//! locks: 13 references and 25 words per packet (enqueue and dequeue)
//! through a bin that holds several packets.

/// Memory references made and 32-bit words touched (see the module doc).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MemRefs {
    /// References made.
    pub refs: u64,
    /// 32-bit words touched.
    pub words: u64,
}

impl MemRefs {
    /// Counts `refs` references touching `words` words in all.
    #[inline(always)]
    pub fn add(&mut self, refs: u64, words: u64) {
        self.refs += refs;
        self.words += words;
    }

    /// Adds another count to this one.
    #[inline]
    pub fn merge(&mut self, o: &MemRefs) {
        self.add(o.refs, o.words);
    }
}

/// The counts of a queue, by operation: what its enqueues (refused ones
/// included) and its dequeues (empty ones included) cost.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct QueueMemRefs {
    /// Made by enqueues.
    pub enqueue: MemRefs,
    /// Made by dequeues.
    pub dequeue: MemRefs,
}

impl QueueMemRefs {
    /// Enqueues and dequeues together.
    pub fn total(&self) -> MemRefs {
        let mut t = self.enqueue;
        t.merge(&self.dequeue);
        t
    }

    /// Adds another count to this one.
    pub fn merge(&mut self, o: &QueueMemRefs) {
        self.enqueue.merge(&o.enqueue);
        self.dequeue.merge(&o.dequeue);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_and_merges() {
        let mut m = MemRefs::default();
        m.add(1, 8);
        m.add(3, 10);
        assert_eq!(m, MemRefs { refs: 4, words: 18 });
        let mut q = QueueMemRefs {
            enqueue: m,
            ..Default::default()
        };
        q.merge(&QueueMemRefs {
            enqueue: MemRefs { refs: 1, words: 1 },
            dequeue: MemRefs { refs: 2, words: 5 },
        });
        assert_eq!(q.total(), MemRefs { refs: 7, words: 24 });
    }
}
