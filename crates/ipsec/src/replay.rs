//! The anti-replay window of an inbound SA (RFC 4303 section 3.4.3), with
//! extended sequence numbers (appendix A), shared by every worker without a
//! lock.
//!
//! Several workers decapsulate packets of one SA at once, so the window is
//! made of words each worker updates with one compare-and-swap. Each word
//! holds a block of 32 sequence numbers: the low 32 bits are the block's
//! bitmap and the high 32 bits say which block it is (its number modulo
//! 2^32). A word whose tag is older than the block a packet needs is stale:
//! every number in it has left the window, so the packet's CAS recycles it
//! in place. Nothing ever walks the window to clear it when the right edge
//! moves, so a packet that jumps far ahead costs no more than any other,
//! and a CAS that loses to another worker only has to look again.
//!
//! The slots are a power of two, at least the window plus one block; then a
//! word can only be recycled once all of its numbers are out of the window
//! (the proof is in [`ReplayWindow::new`]).
//!
//! The check is in two steps, as RFC 4303 asks: [`ReplayWindow::check`]
//! before the integrity check (cheap, read-only: drops replays without
//! spending a decryption on them), and [`ReplayWindow::commit`] only after
//! the ICV verified, so that a forged packet cannot move the window. Two
//! workers that both pass `check` with the same number race in `commit`,
//! and exactly one of them wins.

use core::sync::atomic::{AtomicU64, Ordering};

/// The largest window accepted.
pub const MAX_WINDOW: u32 = 1 << 16;

/// Why a sequence number is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Already received.
    Replayed,
    /// To the left of the window.
    TooOld,
}

/// The receive window of one SA.
#[derive(Debug)]
pub struct ReplayWindow {
    /// The window size in packets; 0 turns replay checking off.
    size: u32,
    esn: bool,
    /// The highest sequence number accepted (all 64 bits with ESN).
    top: AtomicU64,
    /// Tagged 32-number blocks, see the module documentation.
    slots: Box<[AtomicU64]>,
    mask: u64,
}

impl ReplayWindow {
    /// A window of `size` packets (0 turns the check off; at most
    /// [`MAX_WINDOW`]); `esn` when the SA uses extended sequence numbers.
    ///
    /// Slot count `n` is a power of two with `32 n >= size + 32`. A block
    /// `b` can only be recycled by a block `b' >= b + n` sharing its slot.
    /// Every number of `b` is at most `32 (b + 1) - 1 <= 32 b' - 32 (n - 1)
    /// - 1`, and a packet of `b'` (number at least `32 b'`) only gets that
    /// far after its own window check, so all of `b` is at least
    /// `32 (n - 1) + 1 >= size` below it: out of the window.
    pub fn new(size: u32, esn: bool) -> ReplayWindow {
        let size = size.min(MAX_WINDOW);
        let n = (size as usize)
            .div_ceil(32)
            .saturating_add(1)
            .next_power_of_two();
        ReplayWindow {
            size,
            esn,
            top: AtomicU64::new(0),
            slots: (0..n).map(|_| AtomicU64::new(0)).collect(),
            mask: n as u64 - 1,
        }
    }

    /// The window size in packets.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// The highest sequence number accepted so far.
    pub fn top(&self) -> u64 {
        self.top.load(Ordering::Acquire)
    }

    /// The full sequence number a packet carrying the low 32 bits `low`
    /// most likely has (RFC 4303 appendix A2.1): the one closest to the
    /// window. Without ESN it is `low` itself.
    pub fn infer(&self, low: u32) -> u64 {
        if !self.esn {
            return u64::from(low);
        }
        let top = self.top();
        let (th, tl) = ((top >> 32) as u32, top as u32);
        let w = self.size.max(1);
        let hi = if tl >= w - 1 {
            // The window lies within one 2^32 span: numbers below its left
            // edge have wrapped into the next span.
            if low >= tl - (w - 1) {
                th
            } else {
                th.wrapping_add(1)
            }
        } else if low >= tl.wrapping_sub(w - 1) {
            // The window straddles a span boundary: numbers at its left,
            // high in the span, belong to the previous one.
            th.wrapping_sub(1)
        } else {
            th
        };
        (u64::from(hi) << 32) | u64::from(low)
    }

    /// Whether `seq` may be accepted, before its integrity check.
    pub fn check(&self, seq: u64) -> Result<(), Refused> {
        if self.size == 0 {
            return Ok(());
        }
        let top = self.top();
        if seq > top {
            return Ok(());
        }
        if seq == 0 || top - seq >= u64::from(self.size) {
            return Err(Refused::TooOld);
        }
        let (slot, tag, bit) = self.locate(seq);
        let word = self.slots[slot].load(Ordering::Acquire);
        let delta = tag.wrapping_sub((word >> 32) as u32) as i32;
        match delta {
            0 if word & bit != 0 => Err(Refused::Replayed),
            d if d < 0 => Err(Refused::TooOld),
            _ => Ok(()),
        }
    }

    /// Records `seq` as received, after its integrity check. Fails if
    /// another packet with the same number was committed first, or if the
    /// window moved past it in the meantime.
    pub fn commit(&self, seq: u64) -> Result<(), Refused> {
        if self.size == 0 {
            self.top.fetch_max(seq, Ordering::AcqRel);
            return Ok(());
        }
        let top = self.top();
        // `seq > top` is the window moving right; otherwise it must lie
        // inside it (written without `seq + size`, which overflows at the
        // last ESN numbers).
        if seq == 0 || (seq <= top && top - seq >= u64::from(self.size)) {
            return Err(Refused::TooOld);
        }
        let (slot, tag, bit) = self.locate(seq);
        let cell = &self.slots[slot];
        let mut word = cell.load(Ordering::Acquire);
        loop {
            let delta = tag.wrapping_sub((word >> 32) as u32) as i32;
            let new = match delta {
                0 if word & bit != 0 => return Err(Refused::Replayed),
                0 => word | bit,
                d if d > 0 => (u64::from(tag) << 32) | bit,
                _ => return Err(Refused::TooOld),
            };
            match cell.compare_exchange_weak(word, new, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => word = now,
            }
        }
        self.top.fetch_max(seq, Ordering::AcqRel);
        Ok(())
    }

    /// The slot, block tag and bit of `seq`.
    #[inline]
    fn locate(&self, seq: u64) -> (usize, u32, u64) {
        let block = seq >> 5;
        (
            (block & self.mask) as usize,
            block as u32,
            1u64 << (seq & 31),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn accept(w: &ReplayWindow, seq: u64) -> Result<(), Refused> {
        w.check(seq)?;
        w.commit(seq)
    }

    #[test]
    fn in_order_then_replayed() {
        let w = ReplayWindow::new(64, false);
        for s in 1..=200 {
            assert_eq!(accept(&w, s), Ok(()), "{s}");
        }
        assert_eq!(accept(&w, 200), Err(Refused::Replayed));
        assert_eq!(accept(&w, 137), Err(Refused::Replayed));
        assert_eq!(accept(&w, 136), Err(Refused::TooOld));
        assert_eq!(accept(&w, 1), Err(Refused::TooOld));
        assert_eq!(accept(&w, 0), Err(Refused::TooOld));
    }

    #[test]
    fn in_window_unseen_is_accepted_once() {
        let w = ReplayWindow::new(64, false);
        accept(&w, 100).unwrap();
        for s in [99, 50, 37, 98] {
            assert_eq!(accept(&w, s), Ok(()), "{s}");
            assert_eq!(accept(&w, s), Err(Refused::Replayed), "{s}");
        }
        // 100 - 64 = 36 is the first number outside.
        assert_eq!(accept(&w, 36), Err(Refused::TooOld));
    }

    #[test]
    fn a_check_without_commit_does_not_move_the_window() {
        // A forged packet with a high number fails its ICV: only check ran.
        let w = ReplayWindow::new(64, false);
        accept(&w, 10).unwrap();
        assert_eq!(w.check(1_000_000), Ok(()));
        assert_eq!(w.top(), 10);
        assert_eq!(accept(&w, 11), Ok(()));
        assert_eq!(accept(&w, 5), Ok(()));
    }

    #[test]
    fn a_jump_far_ahead_recycles_stale_blocks() {
        let w = ReplayWindow::new(64, false);
        for s in 1..=40 {
            accept(&w, s).unwrap();
        }
        accept(&w, 10_000).unwrap();
        // Numbers whose slots held old blocks are fresh again.
        for s in 9_937..10_000 {
            assert_eq!(accept(&w, s), Ok(()), "{s}");
        }
        assert_eq!(accept(&w, 9_936), Err(Refused::TooOld));
        assert_eq!(accept(&w, 9_990), Err(Refused::Replayed));
    }

    #[test]
    fn large_windows_tolerate_reordering() {
        let w = ReplayWindow::new(4096, false);
        // Two workers' packets interleaved 2,000 apart.
        for i in 1..=2_000u64 {
            assert_eq!(accept(&w, 2_000 + i), Ok(()));
            assert_eq!(accept(&w, i), Ok(()));
        }
        assert_eq!(accept(&w, 1_000), Err(Refused::Replayed));
    }

    #[test]
    fn disabled_window_accepts_everything() {
        let w = ReplayWindow::new(0, false);
        for s in [5, 5, 1, 0] {
            assert_eq!(accept(&w, s), Ok(()));
        }
    }

    #[test]
    fn esn_inference_follows_rfc4303_appendix_a() {
        let w = ReplayWindow::new(64, true);
        // Window within a span.
        w.commit((7 << 32) | 1000).unwrap();
        assert_eq!(w.infer(990), (7 << 32) | 990);
        assert_eq!(w.infer(5000), (7 << 32) | 5000);
        // Below the window: the low bits have wrapped, next span.
        assert_eq!(w.infer(10), (8 << 32) | 10);
        // Window straddling the boundary: top low bits small.
        let w = ReplayWindow::new(64, true);
        w.commit((3 << 32) | 10).unwrap();
        assert_eq!(w.infer(u32::MAX - 5), (2 << 32) | u64::from(u32::MAX - 5));
        assert_eq!(w.infer(4), (3 << 32) | 4);
        assert_eq!(w.infer(500), (3 << 32) | 500);
        // Crossing the boundary in order.
        let w = ReplayWindow::new(64, true);
        w.commit(u64::from(u32::MAX) - 1).unwrap();
        for low in [u32::MAX, 0, 1, 2] {
            let s = w.infer(low);
            assert_eq!(accept(&w, s), Ok(()), "{low}");
        }
        assert_eq!(w.top(), (1 << 32) | 2);
    }

    #[test]
    fn concurrent_commits_accept_each_number_once() {
        use std::sync::Arc;
        let w = Arc::new(ReplayWindow::new(1024, false));
        let accepted: Vec<BTreeSet<u64>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|t| {
                    let w = Arc::clone(&w);
                    s.spawn(move || {
                        let mut mine = BTreeSet::new();
                        // Every thread offers every number, in a different
                        // order within runs of 256.
                        for base in (1..20_000u64).step_by(256) {
                            for k in 0..256u64 {
                                let seq = base + (k * (2 * t + 1)) % 256;
                                if accept(&w, seq).is_ok() {
                                    mine.insert(seq);
                                }
                            }
                        }
                        mine
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all = BTreeSet::new();
        for set in &accepted {
            for &s in set {
                assert!(all.insert(s), "{s} accepted twice");
            }
        }
        // Every number was offered near the window's edge by someone, so
        // nearly all get through; none twice is what matters.
        assert!(all.len() > 19_000, "{}", all.len());
    }

    proptest::proptest! {
        /// Against a model: a set of seen numbers and the highest one.
        #[test]
        fn matches_a_model(size in 1u32..300, seqs in proptest::collection::vec(1u64..3000, 1..400)) {
            let w = ReplayWindow::new(size, false);
            let mut seen = BTreeSet::new();
            let mut top = 0u64;
            for s in seqs {
                let expect = if s + u64::from(size) <= top {
                    Err(Refused::TooOld)
                } else if seen.contains(&s) {
                    Err(Refused::Replayed)
                } else {
                    Ok(())
                };
                proptest::prop_assert_eq!(accept(&w, s), expect, "seq {} top {}", s, top);
                if expect.is_ok() {
                    seen.insert(s);
                    top = top.max(s);
                }
            }
        }
    }
}
