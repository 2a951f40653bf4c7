//! Batches: up to [`MAX_BATCH`] packets handled by one element call.

use crate::{Packet, MAX_BATCH};
use arrayvec::ArrayVec;

/// A batch of packets.
///
/// Batches are passed by `&mut` and never moved by value (they are large),
/// and an element that receives one takes every packet out of it.
#[derive(Default)]
pub struct Batch {
    pkts: ArrayVec<Packet, MAX_BATCH>,
}

impl Batch {
    /// An empty batch.
    #[inline]
    pub fn new() -> Batch {
        Batch {
            pkts: ArrayVec::new(),
        }
    }

    /// Number of packets.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.pkts.len()
    }

    /// Whether there are no packets.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }

    /// Whether no more packets fit.
    #[inline(always)]
    pub fn is_full(&self) -> bool {
        self.pkts.is_full()
    }

    /// Room left.
    #[inline(always)]
    pub fn remaining(&self) -> usize {
        self.pkts.remaining_capacity()
    }

    /// Adds a packet; if the batch is full the packet is handed back.
    #[inline(always)]
    pub fn push(&mut self, p: Packet) -> Result<(), Packet> {
        self.pkts.try_push(p).map_err(|e| e.element())
    }

    /// Where the next packet goes: the first of the `remaining()` free
    /// slots, for writers that fill several and then
    /// [`Batch::set_len`] once.
    #[inline(always)]
    pub(crate) fn spare_ptr(&mut self) -> *mut Packet {
        let len = self.pkts.len();
        // SAFETY: `len <= MAX_BATCH`, so the pointer is within or one
        // past the array.
        unsafe { self.pkts.as_mut_ptr().add(len) }
    }

    /// Sets the number of packets.
    ///
    /// # Safety
    /// `len <= MAX_BATCH`, and the slots below `len` hold packets (those
    /// past the old length written through [`Batch::spare_ptr`]).
    #[inline(always)]
    pub(crate) unsafe fn set_len(&mut self, len: usize) {
        // SAFETY: as the caller promises.
        unsafe { self.pkts.set_len(len) }
    }

    /// Moves the packets of `slots`, in order, to the end of the batch,
    /// leaving `None` behind, as far as there is room; `None` slots are
    /// skipped. Returns the slots read: all of them, or as many as there
    /// was room for. A queue's ring hands its packets over this way:
    /// the batch's length is kept in a register and stored once, where a
    /// [`Batch::push`] a packet checks and stores it every time.
    #[inline]
    pub fn take_from(&mut self, slots: &mut [Option<Packet>]) -> usize {
        let start = self.pkts.len();
        // At most as many slots as there is room for, so that the loop
        // counts slots only.
        let read = slots.len().min(MAX_BATCH - start);
        let dst = self.spare_ptr();
        let mut n = 0;
        for s in &mut slots[..read] {
            if let Some(p) = s.take() {
                // SAFETY: `n` is below the slots read, so `start + n <
                // MAX_BATCH`: within the array.
                unsafe { dst.add(n).write(p) };
                n += 1;
            }
        }
        // SAFETY: the `n` slots past `start` were written above, and
        // `start + n <= MAX_BATCH`.
        unsafe { self.set_len(start + n) };
        read
    }

    /// Removes and returns the last packet.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<Packet> {
        self.pkts.pop()
    }

    /// The packets.
    #[inline(always)]
    pub fn as_slice(&self) -> &[Packet] {
        &self.pkts
    }

    /// The packets, writable.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [Packet] {
        &mut self.pkts
    }

    /// Iterates over the packets.
    #[inline(always)]
    pub fn iter(&self) -> core::slice::Iter<'_, Packet> {
        self.pkts.iter()
    }

    /// Iterates over the packets, writable.
    #[inline(always)]
    pub fn iter_mut(&mut self) -> core::slice::IterMut<'_, Packet> {
        self.pkts.iter_mut()
    }

    /// Takes all packets out, in order.
    #[inline(always)]
    pub fn drain(&mut self) -> arrayvec::Drain<'_, Packet, MAX_BATCH> {
        self.pkts.drain(..)
    }

    /// Drops every packet, returning the buffers to the pool in one go.
    ///
    /// Inlined down to the emptiness check: most batches dropped are
    /// empty (scratch batches, batches an element handed on), and a call
    /// would save registers for the freeing loop before finding nothing
    /// to free.
    #[inline(always)]
    pub fn clear(&mut self) {
        if !self.pkts.is_empty() {
            self.free_all();
        }
    }

    /// [`Batch::clear`] of a batch with packets.
    #[inline(never)]
    fn free_all(&mut self) {
        if self.pkts.len() == 1 {
            // A lone packet (behind a demultiplexer of many outputs): no
            // draining iterator to set up and tear down, and no registers
            // saved for one.
            drop(self.pkts.pop());
        } else {
            self.free_many();
        }
    }

    /// [`Batch::free_all`] of more than one packet, in a frame of its own.
    #[inline(never)]
    fn free_many(&mut self) {
        crate::pool::free_many(self.pkts.drain(..));
    }

    /// Keeps the packets for which `keep` returns true, in order; the
    /// others are dropped.
    #[inline(always)]
    pub fn retain(&mut self, keep: impl FnMut(&mut Packet) -> bool) {
        self.pkts.retain(keep)
    }

    /// Moves the packets `keep` rejects into `other` (in order) and keeps
    /// the rest here (in order). Packets that do not fit in `other` are
    /// dropped; callers size their batches so that this cannot happen.
    #[inline]
    pub fn split_off_into(&mut self, other: &mut Batch, mut keep: impl FnMut(&mut Packet) -> bool) {
        // Only as many flags as packets are written: a batch of one must
        // not pay for clearing room for `MAX_BATCH`.
        let mut flags: ArrayVec<bool, MAX_BATCH> = ArrayVec::new();
        let mut any = false;
        for p in self.pkts.iter_mut() {
            let k = keep(p);
            any |= !k;
            // Cannot fail: one flag per packet of this batch.
            let _ = flags.try_push(k);
        }
        if !any {
            return;
        }
        // Each packet moves once, to one side or the other, in order.
        let mut kept = ArrayVec::new();
        for (p, k) in self.pkts.drain(..).zip(flags) {
            if k {
                kept.push(p);
            } else {
                let _ = other.push(p);
            }
        }
        self.pkts = kept;
    }

    /// Appends packets from `other` until this batch is full; returns how
    /// many moved.
    #[inline]
    pub fn append(&mut self, other: &mut Batch) -> usize {
        let n = other.len().min(self.remaining());
        for p in other.pkts.drain(..n) {
            // Cannot fail: `n` is bounded by the room left.
            let _ = self.pkts.try_push(p);
        }
        n
    }
}

impl Drop for Batch {
    #[inline]
    fn drop(&mut self) {
        self.clear();
    }
}

impl core::fmt::Debug for Batch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Batch").field("len", &self.len()).finish()
    }
}

impl<'a> IntoIterator for &'a mut Batch {
    type Item = &'a mut Packet;
    type IntoIter = core::slice::IterMut<'a, Packet>;
    fn into_iter(self) -> Self::IntoIter {
        self.pkts.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(tag: u8) -> Packet {
        Packet::from_slice(&[tag; 8]).unwrap()
    }

    #[test]
    fn packets_taken_from_slots_keep_their_order_and_the_room() {
        let mut b = Batch::new();
        b.push(pkt(0)).unwrap();
        let mut slots: Vec<Option<Packet>> = vec![Some(pkt(1)), None, Some(pkt(2)), Some(pkt(3))];
        assert_eq!(b.take_from(&mut slots), 4);
        assert!(slots.iter().all(Option::is_none));
        let tags: Vec<u8> = b.iter().map(|p| p.data()[0]).collect();
        assert_eq!(tags, [0, 1, 2, 3]);
        // Room for two more: two slots read, the rest left where they are.
        while b.len() < MAX_BATCH - 2 {
            b.push(pkt(9)).unwrap();
        }
        let mut slots: Vec<Option<Packet>> = (10..14).map(|t| Some(pkt(t))).collect();
        assert_eq!(b.take_from(&mut slots), 2);
        assert_eq!(b.len(), MAX_BATCH);
        let last: Vec<u8> = b.iter().skip(MAX_BATCH - 2).map(|p| p.data()[0]).collect();
        assert_eq!(last, [10, 11]);
        assert!(slots[..2].iter().all(Option::is_none));
        assert!(slots[2..].iter().all(Option::is_some));
        assert_eq!(b.take_from(&mut slots[2..]), 0);
    }

    #[test]
    fn push_pop_order() {
        let mut b = Batch::new();
        for i in 0..5 {
            b.push(pkt(i)).unwrap();
        }
        let tags: Vec<u8> = b.drain().map(|p| p.data()[0]).collect();
        assert_eq!(tags, vec![0, 1, 2, 3, 4]);
        assert!(b.is_empty());
    }

    #[test]
    fn full_batch_returns_packet() {
        let mut b = Batch::new();
        for _ in 0..MAX_BATCH {
            b.push(pkt(0)).unwrap();
        }
        assert!(b.is_full());
        assert!(b.push(pkt(1)).is_err());
    }

    #[test]
    fn split_keeps_order_on_both_sides() {
        let mut b = Batch::new();
        for i in 0..10 {
            b.push(pkt(i)).unwrap();
        }
        let mut odd = Batch::new();
        b.split_off_into(&mut odd, |p| p.data()[0] % 2 == 0);
        let even: Vec<u8> = b.iter().map(|p| p.data()[0]).collect();
        let odds: Vec<u8> = odd.iter().map(|p| p.data()[0]).collect();
        assert_eq!(even, vec![0, 2, 4, 6, 8]);
        assert_eq!(odds, vec![1, 3, 5, 7, 9]);
    }

    #[test]
    fn append_moves_until_full() {
        let mut a = Batch::new();
        let mut b = Batch::new();
        for i in 0..3 {
            b.push(pkt(i)).unwrap();
        }
        assert_eq!(a.append(&mut b), 3);
        assert!(b.is_empty());
        assert_eq!(a.len(), 3);
    }
}
