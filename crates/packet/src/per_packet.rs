//! One value per packet of a batch, on the stack.

use crate::{Batch, Packet, MAX_BATCH};
use std::mem::MaybeUninit;

/// One value per packet of a batch: the addresses an element looks up,
/// the answers it gets back.
///
/// An element's batch loop fills it in one pass with no bound check and
/// no length stored per value, and nothing past the batch's length is
/// written: an `ArrayVec` checks its capacity and stores its length at
/// every push (6 of the 10 instructions a packet of gathering a batch's
/// addresses), and a zeroed `[T; MAX_BATCH]` writes kilobytes a batch,
/// which batches of one would pay for in full.
pub struct PerPacket<T: Copy> {
    values: [MaybeUninit<T>; MAX_BATCH],
    len: usize,
}

impl<T: Copy> PerPacket<T> {
    /// No values yet. Written in place by [`PerPacket::gather`] or
    /// [`PerPacket::fill`]: a constructor returning a filled array by
    /// value copies it (4 KiB a batch for IPv6 addresses).
    #[inline(always)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> PerPacket<T> {
        PerPacket {
            values: [const { MaybeUninit::uninit() }; MAX_BATCH],
            len: 0,
        }
    }

    /// Sets the values to `f` of each packet of `batch`, in order.
    #[inline(always)]
    pub fn gather(&mut self, batch: &Batch, mut f: impl FnMut(&Packet) -> T) {
        // A batch holds at most MAX_BATCH packets: the zip stops at the
        // batch's end.
        for (slot, p) in self.values.iter_mut().zip(batch.iter()) {
            slot.write(f(p));
        }
        self.len = batch.len();
    }

    /// Sets the values to `f` of each packet of `batch`, in order, where
    /// `f` may change the packet (an annotation it rewrites): an
    /// element computes every packet's output in one loop this way, and
    /// splits the batch by them afterwards.
    #[inline(always)]
    pub fn gather_mut(&mut self, batch: &mut Batch, mut f: impl FnMut(&mut Packet) -> T) {
        for (slot, p) in self.values.iter_mut().zip(batch.iter_mut()) {
            slot.write(f(p));
        }
        self.len = batch.len();
    }

    /// Sets the values to `n` copies of `value` (at most [`MAX_BATCH`];
    /// more are cut).
    #[inline(always)]
    pub fn fill(&mut self, n: usize, value: T) {
        let n = n.min(MAX_BATCH);
        for slot in &mut self.values[..n] {
            slot.write(value);
        }
        self.len = n;
    }

    /// The values.
    #[inline(always)]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` values were written by the constructor,
        // and `len <= MAX_BATCH`.
        unsafe { std::slice::from_raw_parts(self.values.as_ptr().cast(), self.len) }
    }

    /// The values, to be changed in place.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as `as_slice`.
        unsafe { std::slice::from_raw_parts_mut(self.values.as_mut_ptr().cast(), self.len) }
    }
}

impl<T: Copy> std::ops::Deref for PerPacket<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Copy> std::ops::DerefMut for PerPacket<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch_of(lens: &[usize]) -> Batch {
        let mut b = Batch::new();
        for &n in lens {
            b.push(Packet::from_slice(&vec![7; n]).unwrap())
                .unwrap_or_else(|_| panic!("full"));
        }
        b
    }

    #[test]
    fn one_value_per_packet_in_order() {
        let b = batch_of(&[10, 20, 30]);
        let mut v = PerPacket::new();
        v.gather(&b, |p| p.len());
        assert_eq!(&*v, &[10, 20, 30]);
        v.gather(&Batch::new(), |p| p.len());
        assert!(v.is_empty());
        assert!(PerPacket::<u8>::new().is_empty());
    }

    #[test]
    fn gathering_may_change_the_packets() {
        let mut b = batch_of(&[10, 20]);
        let mut v = PerPacket::new();
        v.gather_mut(&mut b, |p| {
            p.anno_mut().paint = 3;
            p.len() * 2
        });
        assert_eq!(&*v, &[20, 40]);
        assert!(b.iter().all(|p| p.anno().paint == 3));
    }

    #[test]
    fn a_full_batch_fills_every_slot_and_filled_is_cut_at_the_bound() {
        let b = batch_of(&vec![60; MAX_BATCH]);
        let mut v = PerPacket::new();
        v.gather(&b, |p| p.len() as u16);
        assert_eq!(v.len(), MAX_BATCH);
        assert!(v.iter().all(|&l| l == 60));
        let mut f = PerPacket::new();
        f.fill(MAX_BATCH + 5, None::<u32>);
        assert_eq!(f.len(), MAX_BATCH);
        f[3] = Some(9);
        assert_eq!(f.iter().flatten().copied().collect::<Vec<_>>(), vec![9]);
        f.fill(2, Some(1));
        assert_eq!(f.as_slice(), &[Some(1), Some(1)]);
    }
}
