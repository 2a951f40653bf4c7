//! Images of a new packet's buffer: its first line (annotations and frame
//! bounds) and a short frame, as 16-byte chunks.
//!
//! A batch of new packets that all start alike (a source's copies of one
//! frame, a device's received frames with default annotations) has each
//! buffer written from an image made once for the batch. The compiler
//! keeps the image's chunks in vector registers across the batch loop:
//! five stores a packet for the first line, where writing the fields of
//! `Annotations` one by one took eight to ten stores, and a frame of up
//! to 128 bytes with one store per 16 bytes and no loads, where a copy
//! from the source's frame reloaded it for every packet (the compiler
//! cannot tell that the packet buffers it writes are not that frame).

use crate::{Annotations, Buffer, BUFFER_SIZE, HEADROOM};
use core::mem::{offset_of, size_of, MaybeUninit};

// SSE2 is part of x86_64, so its 16-byte vector type needs no feature
// check; elsewhere a `u128` does the same in two registers.
#[cfg(target_arch = "x86_64")]
type Chunk = core::arch::x86_64::__m128i;
#[cfg(not(target_arch = "x86_64"))]
type Chunk = u128;

const CHUNK: usize = size_of::<Chunk>();

/// The fields in front of a buffer's frame bytes, laid out as in
/// [`Buffer`].
#[repr(C)]
struct Line {
    anno: Annotations,
    head: u32,
    tail: u32,
}

/// Bytes in front of the frame bytes.
const LINE: usize = offset_of!(Buffer, data);

const _: () = {
    assert!(offset_of!(Buffer, anno) == offset_of!(Line, anno));
    assert!(offset_of!(Buffer, head) == offset_of!(Line, head));
    assert!(offset_of!(Buffer, tail) == offset_of!(Line, tail));
    assert!(size_of::<Line>() == LINE);
    assert!(LINE.is_multiple_of(CHUNK));
    assert!(align_of::<Buffer>() >= align_of::<Chunk>());
    assert!(align_of::<Aligned<u8>>() >= align_of::<Chunk>());
    // The longest frame image fits behind the headroom.
    assert!(HEADROOM + FRAME_IMAGE_MAX <= BUFFER_SIZE);
};

/// Reads a chunk of an image being made, once a batch, so that the
/// compiler keeps it as one 16-byte value in a register. A plain read
/// would be seen through: the compiler would fold the constant fields
/// back into stores of their own (eight to ten a packet, as before) and
/// keep the frame's chunks on the stack, reloading them for every packet.
///
/// # Safety
///
/// `src` is valid for reading a `T` and aligned.
#[inline(always)]
unsafe fn opaque<T>(src: *const T) -> T {
    // SAFETY: as the caller promises.
    unsafe { core::ptr::read_volatile(src) }
}

/// A value aligned for reading as chunks.
#[repr(C, align(16))]
struct Aligned<T>(T);

/// A buffer's first line as it should be: annotations, start and end.
#[derive(Clone, Copy)]
pub(crate) struct LineImage([MaybeUninit<Chunk>; LINE / CHUNK]);

impl LineImage {
    /// The line of a packet with annotations `anno` and its frame at
    /// `head..tail`. The caller keeps `head <= tail <= BUFFER_SIZE`.
    #[inline(always)]
    pub(crate) fn new(anno: Annotations, head: usize, tail: usize) -> LineImage {
        debug_assert!(head <= tail && tail <= BUFFER_SIZE);
        let line = Aligned(MaybeUninit::new(Line {
            anno,
            head: head as u32,
            tail: tail as u32,
        }));
        let src = line.0.as_ptr().cast::<MaybeUninit<Chunk>>();
        // SAFETY: `Line` is `LINE` bytes (checked above), so the chunks
        // lie within it, aligned; its padding is read into `MaybeUninit` chunks,
        // which may hold anything. See `opaque` for the volatile reads.
        LineImage(core::array::from_fn(|i| unsafe { opaque(src.add(i)) }))
    }

    /// Overwrites `buf`'s annotations and frame bounds with the image's.
    #[inline(always)]
    pub(crate) fn write(&self, buf: &mut Buffer) {
        let dst = (buf as *mut Buffer).cast::<MaybeUninit<Chunk>>();
        for (i, c) in self.0.iter().enumerate() {
            // SAFETY: the chunks cover the buffer's first `LINE` bytes,
            // aligned (a buffer is aligned to at least a chunk); they are
            // the bytes of a valid `Line`, so the fields stay valid.
            unsafe { dst.add(i).write(*c) };
        }
    }
}

/// Longest frame [`FrameImage`] holds.
pub(crate) const FRAME_IMAGE_MAX: usize = 128;

/// The first `K` chunks of a frame, zero past its end.
#[derive(Clone, Copy)]
pub(crate) struct FrameImage<const K: usize>([Chunk; K]);

impl<const K: usize> FrameImage<K> {
    /// The image of `frame`, which is at most `K` chunks long.
    #[inline(always)]
    pub(crate) fn new(frame: &[u8]) -> FrameImage<K> {
        const { assert!(K * CHUNK <= FRAME_IMAGE_MAX) };
        let mut bytes = Aligned([0u8; FRAME_IMAGE_MAX]);
        let n = frame.len().min(K * CHUNK);
        bytes.0[..n].copy_from_slice(&frame[..n]);
        let src = bytes.0.as_ptr().cast::<Chunk>();
        // SAFETY: `K` chunks lie within `bytes`, aligned, all initialised.
        FrameImage(core::array::from_fn(|i| unsafe { opaque(src.add(i)) }))
    }

    /// Writes the image at the start of `buf`'s headroom-aligned frame
    /// (`HEADROOM`); bytes past the frame's end are the buffer's own and
    /// outside the frame.
    #[inline(always)]
    pub(crate) fn write(&self, buf: &mut Buffer) {
        let dst = buf.data[HEADROOM..].as_mut_ptr().cast::<Chunk>();
        for (i, c) in self.0.iter().enumerate() {
            // SAFETY: `HEADROOM + K * CHUNK <= BUFFER_SIZE` (checked
            // above), so every chunk lies in `data`; unaligned stores.
            unsafe { dst.add(i).write_unaligned(*c) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Batch, Packet};

    #[test]
    fn line_image_sets_annotations_and_bounds() {
        let anno = Annotations {
            timestamp: crate::Timestamp(123_456_789),
            paint: 7,
            param_off: Some(9),
            ..Default::default()
        };
        let mut p = Packet::new();
        p.anno_mut().flow_hash = 0xdead_beef;
        p.set_frame(&[1; 300]).unwrap();
        LineImage::new(anno, HEADROOM, HEADROOM + 60).write(p.buf_mut());
        assert_eq!(*p.anno(), anno);
        assert_eq!(p.len(), 60);
        assert_eq!(p.headroom(), HEADROOM);
        assert_eq!(p.data(), &[1; 60][..]);
    }

    #[test]
    fn frame_image_writes_the_frame_and_zeros_past_it() {
        let frame: Vec<u8> = (1..=40).collect();
        let mut b = Batch::new();
        Packet::alloc_batch(&mut b, 1, |p| p.set_frame(&[0xee; 64]).unwrap());
        let mut p = b.pop().unwrap();
        FrameImage::<3>::new(&frame).write(p.buf_mut());
        assert_eq!(&p.data()[..40], &frame[..]);
        assert_eq!(&p.data()[40..48], &[0; 8]);
        assert_eq!(&p.data()[48..], &[0xee; 16]);
    }

    #[test]
    fn copies_of_every_length_start_clean_in_used_buffers() {
        let anno = Annotations {
            timestamp: crate::Timestamp(42),
            device: 3,
            ..Default::default()
        };
        for len in (0..=160).chain([255, 256, 1500, crate::MAX_FRAME]) {
            let frame: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            // Used buffers back in the pool, with other frames, offsets
            // and annotations in them.
            let mut used = Batch::new();
            Packet::alloc_batch(&mut used, 40, |p| {
                p.set_frame(&[0xab; 300]).unwrap();
                p.anno_mut().flow_hash = 99;
                p.anno_mut().param_off = Some(3);
                p.set_network_header(14);
                p.pull_front(10);
            });
            drop(used);
            let mut b = Batch::new();
            Packet::alloc_batch(&mut b, crate::MAX_BATCH - 5, |_| {});
            Packet::alloc_copies(&mut b, 40, anno, &frame);
            assert_eq!(b.len(), crate::MAX_BATCH, "stops when the batch is full");
            for p in b.iter().skip(crate::MAX_BATCH - 5) {
                assert_eq!(p.data(), &frame[..], "length {len}");
                assert_eq!(p.headroom(), HEADROOM);
                assert_eq!(*p.anno(), anno);
                assert_eq!(p.anno().l3_offset(), None);
            }
        }
        let mut b = Batch::new();
        Packet::alloc_copies(&mut b, 4, anno, &[0; crate::MAX_FRAME + 1]);
        assert!(
            b.is_empty(),
            "a frame too long for a buffer makes no packets"
        );
    }
}
