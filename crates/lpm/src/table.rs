//! The route-table traits every algorithm implements, and their errors.
//!
//! [`Lpm4`] and [`Lpm6`] are the datapath side: a longest-prefix match of
//! one address or of a batch, from any number of threads at once, through
//! `&self`. [`Lpm4Update`] and [`Lpm6Update`] are the control side: add,
//! change and withdraw routes while those threads keep looking up.
//!
//! # Updates while forwarding
//!
//! Updates also go through `&self`, so one `Arc<Dir24_8>` (say) is shared
//! by the forwarding workers and the routing daemon's thread. Each table
//! keeps its writer-side state (the rule store that tells what to restore
//! when a covering prefix is withdrawn, free lists) behind a mutex that
//! only writers take: updates are applied one at a time, readers never
//! lock, never wait and never allocate. The guarantees, and why they hold
//! (the tables differ only in what a "block" is):
//!
//! 1. **No half-updated entry.** Every entry a reader loads is one
//!    `AtomicU32` or `AtomicU64` that holds a whole answer or a whole link
//!    (next hop, its validity, the depth the writer needs, or the index of
//!    a block); it is replaced by a single store.
//! 2. **Only old or new answers.** The writer stores each entry's final
//!    value directly (it never paints a wide prefix first and a narrower
//!    one over it), so while a route changes, an address's entry moves from
//!    its answer before the update to its answer after it and a reader sees
//!    one or the other. Addresses the update does not cover are not
//!    written at all.
//! 3. **Publication.** A new block (tbl8 group, trie node, Poptrie node
//!    array) is filled completely, then linked with a Release store; readers
//!    load links with Acquire, so a reader that sees the link sees the
//!    filled block (RCU-style publication, as in `rcu_assign_pointer`).
//! 4. **Reclamation.** An unlinked block is not written again until the
//!    writer has bumped a shared reuse sequence number (once per batch of
//!    reused blocks), and a lookup reads that sequence before it starts
//!    and checks it after it ends, looking up again if it moved (see
//!    `src/mem.rs`; a sequence lock that only reuse trips). A lookup that
//!    read a block while it was being reused therefore never returns what
//!    it read there, and readers need not register anywhere. Memory is not
//!    returned to the allocator while the table lives.
//!
//! This is the design DPDK's `rte_lpm` uses for its tbl24/tbl8 (in-place
//! 32-bit entries, tbl8 groups filled before the tbl24 entry points to
//! them), with its optional RCU replaced by a reuse sequence that asks
//! nothing of the readers.

use crate::prefix::{Answer, NextHop, Prefix4, Prefix6};
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, Hasher, RandomState};

/// IPv4 longest-prefix match, the datapath side: lock-free, callable from
/// any number of threads while [`Lpm4Update`] changes the table.
pub trait Lpm4: Send + Sync {
    /// The next hop of the longest prefix that contains `addr` (host
    /// order), or `None` when no prefix does.
    fn lookup(&self, addr: u32) -> Option<NextHop>;

    /// Looks up every address of `addrs` into the same position of `out`
    /// (which must be at least as long). Tables override this to overlap
    /// the memory accesses of a batch, which is where their speed comes
    /// from (compare `rte_lpm_lookupx4` and VPP's `ip4_lookup`).
    fn lookup_batch(&self, addrs: &[u32], out: &mut [Option<NextHop>]) {
        for (a, o) in addrs.iter().zip(out.iter_mut()) {
            *o = self.lookup(*a);
        }
    }

    /// [`Lpm4::lookup_batch`] with raw answers, in place: each address of
    /// `addrs` is replaced by its next hop's index, or by
    /// [`NO_ROUTE`](crate::NO_ROUTE). A caller that indexes its next-hop
    /// table with the answer tests one bound where an `Option` costs a
    /// tag test besides; and the answers need no array of their own to
    /// clear beforehand.
    fn lookup_batch_raw(&self, addrs: &mut [u32]) {
        for a in addrs {
            *a = u32::answer(self.lookup(*a));
        }
    }

    /// Bytes of the lookup structure, the memory readers touch (touched
    /// part of any reserve included; writer-side rule store excluded).
    fn memory_bytes(&self) -> usize;

    /// The algorithm's name in reports (`dir24-8`, `trie4`, ...).
    fn name(&self) -> &'static str;
}

/// IPv4 route changes, applied while [`Lpm4`] readers keep looking up.
/// Writers are serialised by the table; readers are never blocked.
pub trait Lpm4Update: Lpm4 {
    /// Adds a route or changes its next hop; returns the previous next hop
    /// of exactly this prefix. Refused, with the table unchanged, when it
    /// would exceed the table's memory bound or the next hop is too large.
    fn insert(&self, prefix: Prefix4, next_hop: NextHop) -> Result<Option<NextHop>, LpmError>;

    /// Withdraws a route and returns its next hop (`None`: there was no
    /// such route, and nothing changed). Addresses it covered fall back to
    /// the next shorter covering prefix. Only copy-on-write tables can be
    /// refused, by their memory bound; DIR-24-8 and Trie4 never are.
    fn remove(&self, prefix: Prefix4) -> Result<Option<NextHop>, LpmError>;

    /// Number of routes held.
    fn route_count(&self) -> usize;
}

/// IPv6 longest-prefix match, the datapath side; see [`Lpm4`].
pub trait Lpm6: Send + Sync {
    /// The next hop of the longest prefix that contains `addr`.
    fn lookup(&self, addr: u128) -> Option<NextHop>;

    /// Looks up every address of `addrs` into the same position of `out`.
    fn lookup_batch(&self, addrs: &[u128], out: &mut [Option<NextHop>]) {
        for (a, o) in addrs.iter().zip(out.iter_mut()) {
            *o = self.lookup(*a);
        }
    }

    /// [`Lpm6::lookup_batch`] with raw answers (see
    /// [`Lpm4::lookup_batch_raw`]), into `out`.
    fn lookup_batch_raw(&self, addrs: &[u128], out: &mut [u32]) {
        for (a, o) in addrs.iter().zip(out.iter_mut()) {
            *o = u32::answer(self.lookup(*a));
        }
    }

    /// Bytes of the lookup structure; see [`Lpm4::memory_bytes`].
    fn memory_bytes(&self) -> usize;

    /// The algorithm's name in reports.
    fn name(&self) -> &'static str;
}

/// IPv6 route changes; see [`Lpm4Update`].
pub trait Lpm6Update: Lpm6 {
    /// Adds a route or changes its next hop; returns the previous one.
    fn insert(&self, prefix: Prefix6, next_hop: NextHop) -> Result<Option<NextHop>, LpmError>;

    /// Withdraws a route and returns its next hop.
    fn remove(&self, prefix: Prefix6) -> Result<Option<NextHop>, LpmError>;

    /// Number of routes held.
    fn route_count(&self) -> usize;
}

/// Why a table refused to be built or to take a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LpmError {
    /// The table would need more memory than its configured bound.
    MemoryBound {
        /// The algorithm (`dir24-8`, `trie4`, `poptrie6`).
        algorithm: &'static str,
        /// Bytes it would need (at least).
        needed: usize,
        /// The configured bound.
        bound: usize,
        /// What the memory goes to, e.g. `64 MiB tbl24 + 20,001 tbl8
        /// groups of 1 KiB`.
        detail: String,
    },
    /// A next hop above [`NextHop::MAX`], which the entries cannot hold.
    NextHopTooLarge {
        /// The next hop given.
        next_hop: u32,
    },
}

impl fmt::Display for LpmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LpmError::MemoryBound {
                algorithm,
                needed,
                bound,
                detail,
            } => {
                let needs = if *needed < 1024 {
                    format!("{needed} bytes ({detail})")
                } else {
                    format!("{} ({needed} bytes: {detail})", mib(*needed))
                };
                let limit = if *bound < 1024 {
                    format!("{bound} bytes")
                } else {
                    format!("{} ({bound} bytes)", mib(*bound))
                };
                write!(
                    f,
                    "{algorithm}: the table needs {needs} but the memory bound is {limit}; \
                     raise the bound or shrink the table"
                )
            }
            LpmError::NextHopTooLarge { next_hop } => write!(
                f,
                "next hop {next_hop} is above the largest a table can hold ({})",
                NextHop::MAX
            ),
        }
    }
}

impl std::error::Error for LpmError {}

/// `12.3 MiB`, or `1.5 KiB` below a MiB (sizes below a KiB are written
/// in bytes by the caller).
pub(crate) fn mib(bytes: usize) -> String {
    if bytes < 1 << 20 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// Refuses next hops the 22-bit entry fields cannot hold.
pub(crate) fn check_next_hop(nh: NextHop) -> Result<(), LpmError> {
    if nh.0 > NextHop::MAX {
        Err(LpmError::NextHopTooLarge { next_hop: nh.0 })
    } else {
        Ok(())
    }
}

/// The writer-side rule maps: keyed by prefix, hashed with a folded
/// multiply under a per-map random key. SipHash, the standard library's,
/// cost a third of an IPv6 update in profiles; this keeps the random key
/// (announcements come from peers, so the hash must not be predictable)
/// at a few cycles per key.
pub(crate) type RuleMap<K> = HashMap<K, NextHop, FoldState>;

/// Random keys for [`FoldHasher`].
#[derive(Debug, Clone)]
pub(crate) struct FoldState {
    k0: u64,
    k1: u64,
}

impl Default for FoldState {
    fn default() -> Self {
        let s = RandomState::new();
        FoldState {
            k0: s.hash_one(0x243f_6a88_85a3_08d3u64),
            k1: s.hash_one(0x1319_8a2e_0370_7344u64) | 1,
        }
    }
}

impl BuildHasher for FoldState {
    type Hasher = FoldHasher;

    fn build_hasher(&self) -> FoldHasher {
        FoldHasher {
            h: self.k0,
            k: self.k1,
        }
    }
}

/// Folded-multiply hasher (the construction of foldhash and aHash's
/// fallback): each word is mixed in with a 64x64->128-bit multiply whose
/// halves are xored.
#[derive(Debug, Clone)]
pub(crate) struct FoldHasher {
    h: u64,
    k: u64,
}

impl FoldHasher {
    #[inline(always)]
    fn mix(&mut self, x: u64) {
        let p = (self.h ^ x) as u128 * self.k as u128;
        self.h = p as u64 ^ (p >> 64) as u64;
    }
}

impl Hasher for FoldHasher {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            self.mix(u64::from_le_bytes(b));
        }
    }

    fn write_u8(&mut self, x: u8) {
        self.mix(x as u64);
    }

    fn write_u32(&mut self, x: u32) {
        self.mix(x as u64);
    }

    fn write_u64(&mut self, x: u64) {
        self.mix(x);
    }

    fn write_u128(&mut self, x: u128) {
        self.mix(x as u64);
        self.mix((x >> 64) as u64);
    }

    fn write_usize(&mut self, x: usize) {
        self.mix(x as u64);
    }

    fn finish(&self) -> u64 {
        let p = (self.h ^ 0x9e37_79b9_7f4a_7c15) as u128 * self.k as u128;
        p as u64 ^ (p >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_map_spreads_prefixes() {
        let s = FoldState::default();
        let mut seen = std::collections::HashSet::new();
        for a in 0..10_000u128 {
            seen.insert(s.hash_one((a << 80, 48u8)) >> 50);
        }
        // 10,000 keys into 16,384 buckets by the top bits: most distinct.
        assert!(seen.len() > 7_000, "{}", seen.len());
    }

    #[test]
    fn memory_error_gives_the_numbers() {
        let e = LpmError::MemoryBound {
            algorithm: "dir24-8",
            needed: 90 << 20,
            bound: 80 << 20,
            detail: "64 MiB tbl24 + 26624 tbl8 groups of 1 KiB".into(),
        };
        let s = e.to_string();
        assert!(s.contains("90.0 MiB") && s.contains("80.0 MiB"), "{s}");
        assert!(s.contains("26624 tbl8 groups"), "{s}");
        assert!(check_next_hop(NextHop(NextHop::MAX)).is_ok());
        assert!(check_next_hop(NextHop(NextHop::MAX + 1))
            .unwrap_err()
            .to_string()
            .contains("4194303"));
    }
}
