//! Packets, the per-core buffer pool they come from, batches, and annotations.
//!
//! A [`Packet`] owns one fixed-size buffer with [`HEADROOM`] bytes in front
//! of the frame so that encapsulations (an Ethernet header after `Strip`, an
//! ESP tunnel header, a cluster MAC rewrite) never copy the payload. Buffers
//! come from a pool that belongs to the current thread: in bricks a packet
//! stays on the core that received it (RouteBricks §4.2, "one core per
//! packet"), so a thread-local free list needs no lock and no atomic
//! operation, and steady-state forwarding allocates nothing. A packet that
//! does cross cores (the pipeline mode that exists to be measured) simply
//! returns its buffer to the pool of the core that drops it.
//!
//! A [`Batch`] carries up to [`MAX_BATCH`] packets through the element graph
//! so that the cost of an element call is paid once per batch, not once per
//! packet (RouteBricks §4.2 poll-driven batching, FastClick's `PacketBatch`).

use std::mem::ManuallyDrop;

mod anno;
mod batch;
mod image;
mod per_packet;
mod pool;

pub use anno::{Annotations, ClickTime, PacketType, Timestamp};
pub use batch::Batch;
pub use per_packet::PerPacket;
pub use pool::{pool_stats, PoolStats};

/// Bytes reserved in front of the frame for headers added later.
pub const HEADROOM: usize = 128;
/// Largest frame a buffer holds after the headroom: Ethernet with VLAN tags at
/// MTU 1500 fits with room to spare; larger frames are refused by
/// [`Packet::from_slice`] and counted by the input element as oversized.
pub const MAX_FRAME: usize = 2048;
/// Total size of one buffer.
pub const BUFFER_SIZE: usize = HEADROOM + MAX_FRAME;
/// Most packets one batch can carry.
pub const MAX_BATCH: usize = 256;
/// Default batch size (RouteBricks' kp = 32).
pub const DEFAULT_BURST: usize = 32;

/// The storage behind a packet: annotations and offsets in the first cache
/// line, frame bytes after them.
#[repr(C, align(64))]
pub(crate) struct Buffer {
    pub(crate) anno: Annotations,
    /// Offset of the first frame byte in `data`.
    pub(crate) head: u32,
    /// Offset one past the last frame byte in `data`.
    pub(crate) tail: u32,
    pub(crate) data: [u8; BUFFER_SIZE],
}

/// One packet: an owned buffer with the frame at `data()`.
///
/// Dropping a packet returns its buffer to the current thread's pool.
///
/// Invariant, kept by every method that moves the frame's ends:
/// `head <= tail <= BUFFER_SIZE`. The frame accessors rely on it to slice
/// without bounds checks (they run several times per packet per element).
pub struct Packet {
    // `ManuallyDrop` so that `Drop` can hand the box back to the pool.
    buf: ManuallyDrop<Box<Buffer>>,
}

/// Why a frame could not be made into a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketError {
    /// The frame is longer than [`MAX_FRAME`] bytes.
    Oversized { len: usize },
    /// There is not enough headroom or tailroom for the requested change.
    NoRoom { need: usize, have: usize },
}

impl core::fmt::Display for PacketError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PacketError::Oversized { len } => {
                write!(
                    f,
                    "frame of {len} bytes exceeds the {MAX_FRAME}-byte buffer"
                )
            }
            PacketError::NoRoom { need, have } => {
                write!(f, "needs {need} bytes of room, buffer has {have}")
            }
        }
    }
}

impl std::error::Error for PacketError {}

impl Packet {
    /// An empty packet (length 0, full headroom), with default annotations.
    #[inline]
    pub fn new() -> Packet {
        Packet::from_buffer(pool::alloc())
    }

    #[inline(always)]
    pub(crate) fn from_buffer(mut buf: Box<Buffer>) -> Packet {
        buf.anno = Annotations::default();
        buf.head = HEADROOM as u32;
        buf.tail = HEADROOM as u32;
        Packet {
            buf: ManuallyDrop::new(buf),
        }
    }

    /// A packet of a buffer whose first line was written from a
    /// [`image::LineImage`].
    #[inline(always)]
    pub(crate) fn from_written(buf: Box<Buffer>) -> Packet {
        Packet {
            buf: ManuallyDrop::new(buf),
        }
    }

    /// Gives up the packet's buffer without returning it to the pool.
    #[inline(always)]
    pub(crate) fn into_buffer(self) -> Box<Buffer> {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `me` is never used or dropped again, so the box is moved
        // out exactly once.
        unsafe { ManuallyDrop::take(&mut me.buf) }
    }

    /// Fills `out` with up to `n` new packets (fewer if `out` fills up),
    /// calling `init` on each: one trip to the pool for the whole batch.
    #[inline]
    pub fn alloc_batch(out: &mut Batch, n: usize, mut init: impl FnMut(&mut Packet)) {
        if n == 1 {
            return pool::alloc_one(out, |p| init(p));
        }
        pool::alloc_with(out, n, init);
    }

    /// Fills `out` with up to `n` copies of `frame` (fewer if `out` fills
    /// up), each with annotations `anno`: a source's identical packets.
    /// Each buffer is written from an image of its first line and, for
    /// frames of up to 128 bytes, of its frame, made once for the batch.
    /// A frame longer than [`MAX_FRAME`] makes no packets.
    #[inline]
    pub fn alloc_copies(out: &mut Batch, n: usize, anno: Annotations, frame: &[u8]) {
        if frame.len() > MAX_FRAME {
            return;
        }
        pool::alloc_copies(out, n, anno, frame);
    }

    /// A packet holding a copy of `frame`.
    #[inline]
    pub fn from_slice(frame: &[u8]) -> Result<Packet, PacketError> {
        if frame.len() > MAX_FRAME {
            return Err(PacketError::Oversized { len: frame.len() });
        }
        let mut p = Packet::new();
        p.set_frame(frame)?;
        Ok(p)
    }

    /// Replaces the frame with a copy of `frame`, keeping the headroom
    /// (no zero-filling first, unlike `set_len`).
    #[inline]
    pub fn set_frame(&mut self, frame: &[u8]) -> Result<(), PacketError> {
        let b = self.buf_mut();
        let head = b.head as usize;
        if frame.len() > BUFFER_SIZE - head {
            return Err(PacketError::NoRoom {
                need: frame.len(),
                have: BUFFER_SIZE - head,
            });
        }
        copy_small(&mut b.data[head..head + frame.len()], frame);
        b.tail = (head + frame.len()) as u32;
        Ok(())
    }

    #[inline(always)]
    fn buf(&self) -> &Buffer {
        &self.buf
    }

    #[inline(always)]
    fn buf_mut(&mut self) -> &mut Buffer {
        &mut self.buf
    }

    /// The frame bytes.
    #[inline(always)]
    pub fn data(&self) -> &[u8] {
        let b = self.buf();
        debug_assert!(b.head <= b.tail && b.tail as usize <= BUFFER_SIZE);
        // SAFETY: the type invariant head <= tail <= BUFFER_SIZE.
        unsafe { b.data.get_unchecked(b.head as usize..b.tail as usize) }
    }

    /// The frame bytes, writable.
    #[inline(always)]
    pub fn data_mut(&mut self) -> &mut [u8] {
        let b = self.buf_mut();
        debug_assert!(b.head <= b.tail && b.tail as usize <= BUFFER_SIZE);
        // SAFETY: the type invariant head <= tail <= BUFFER_SIZE.
        unsafe { b.data.get_unchecked_mut(b.head as usize..b.tail as usize) }
    }

    /// Frame length in bytes.
    #[inline(always)]
    pub fn len(&self) -> usize {
        let b = self.buf();
        (b.tail - b.head) as usize
    }

    /// Whether the frame is empty.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes free in front of the frame.
    #[inline(always)]
    pub fn headroom(&self) -> usize {
        self.buf().head as usize
    }

    /// Bytes free after the frame.
    #[inline(always)]
    pub fn tailroom(&self) -> usize {
        BUFFER_SIZE - self.buf().tail as usize
    }

    /// Offset of the frame's first byte inside the buffer. Header annotations
    /// are buffer offsets so that they survive `pull` and `push`.
    #[inline(always)]
    pub fn head_offset(&self) -> usize {
        self.buf().head as usize
    }

    /// Prepends `n` bytes (Click's `push`); the new bytes are uninitialised
    /// garbage the caller overwrites.
    #[inline]
    pub fn push_front(&mut self, n: usize) -> Result<(), PacketError> {
        let b = self.buf_mut();
        if n > b.head as usize {
            return Err(PacketError::NoRoom {
                need: n,
                have: b.head as usize,
            });
        }
        b.head -= n as u32;
        Ok(())
    }

    /// Prepends a copy of `front` (Click's `push` and a write of the new
    /// bytes): one room check, no check of the frame's length after.
    #[inline]
    pub fn push_front_bytes<const N: usize>(&mut self, front: &[u8; N]) -> Result<(), PacketError> {
        self.push_front_with(|h: &mut [u8; N]| *h = *front)
    }

    /// Prepends `N` bytes and has `write` fill them in place: one room
    /// check, and the bytes go straight to the buffer (an element writing
    /// a header as overlapping words makes one store a word).
    #[inline]
    pub fn push_front_with<const N: usize>(
        &mut self,
        write: impl FnOnce(&mut [u8; N]),
    ) -> Result<(), PacketError> {
        let b = self.buf_mut();
        let head = b.head as usize;
        if N > head {
            return Err(PacketError::NoRoom {
                need: N,
                have: head,
            });
        }
        let new = head - N;
        debug_assert!(head <= BUFFER_SIZE);
        // SAFETY: `new + N == head <= BUFFER_SIZE`, the type invariant
        // head <= tail <= BUFFER_SIZE.
        let front = unsafe { b.data.get_unchecked_mut(new..head) };
        if let Some(front) = front.first_chunk_mut::<N>() {
            write(front);
        }
        b.head = new as u32;
        Ok(())
    }

    /// Removes `n` bytes from the front (Click's `pull`). Removing more than
    /// the frame holds leaves an empty frame.
    #[inline]
    pub fn pull_front(&mut self, n: usize) {
        let b = self.buf_mut();
        // The new start, clamped to the end: one add and one compare in a
        // batch loop, where `n.min(BUFFER_SIZE)` is computed once.
        let head = (b.head as usize + n.min(BUFFER_SIZE)).min(b.tail as usize);
        b.head = head as u32;
    }

    /// Appends `n` zero bytes at the end (Click's `put`).
    #[inline]
    pub fn put_back(&mut self, n: usize) -> Result<(), PacketError> {
        let b = self.buf_mut();
        let tail = b.tail as usize;
        if n > BUFFER_SIZE - tail {
            return Err(PacketError::NoRoom {
                need: n,
                have: BUFFER_SIZE - tail,
            });
        }
        b.data[tail..tail + n].fill(0);
        b.tail += n as u32;
        Ok(())
    }

    /// Removes `n` bytes from the end (Click's `take`).
    #[inline]
    pub fn take_back(&mut self, n: usize) {
        let b = self.buf_mut();
        let n = n.min((b.tail - b.head) as usize);
        b.tail -= n as u32;
    }

    /// Sets the frame length, keeping the front; growing zero-fills.
    #[inline]
    pub fn set_len(&mut self, len: usize) -> Result<(), PacketError> {
        let cur = self.len();
        if len <= cur {
            self.take_back(cur - len);
            Ok(())
        } else {
            self.put_back(len - cur)
        }
    }

    /// Moves the frame start back to the buffer offset `offset`, as Click's
    /// `Unstrip` does: bytes between `offset` and the current head become
    /// part of the frame again (their old contents are still there).
    #[inline]
    pub fn set_head_offset(&mut self, offset: usize) -> Result<(), PacketError> {
        let b = self.buf_mut();
        if offset > b.tail as usize {
            return Err(PacketError::NoRoom {
                need: offset,
                have: b.tail as usize,
            });
        }
        b.head = offset as u32;
        Ok(())
    }

    /// The bytes of the buffer from `offset` to the end of the frame. Used
    /// with header annotations, which are buffer offsets.
    #[inline]
    pub fn bytes_from(&self, offset: usize) -> &[u8] {
        let b = self.buf();
        let start = offset.min(b.tail as usize);
        debug_assert!(b.tail as usize <= BUFFER_SIZE);
        // SAFETY: `start <= tail` and the type invariant tail <=
        // BUFFER_SIZE (every hop reading a header annotation passes here).
        unsafe { b.data.get_unchecked(start..b.tail as usize) }
    }

    /// Writable counterpart of [`Packet::bytes_from`].
    #[inline]
    pub fn bytes_from_mut(&mut self, offset: usize) -> &mut [u8] {
        let b = self.buf_mut();
        let start = offset.min(b.tail as usize);
        debug_assert!(b.tail as usize <= BUFFER_SIZE);
        // SAFETY: as in `bytes_from`.
        unsafe { b.data.get_unchecked_mut(start..b.tail as usize) }
    }

    /// The network (IP) header, as located by the network header
    /// annotation, to the end of the frame; `None` if no element has set
    /// it.
    #[inline]
    pub fn network_header(&self) -> Option<&[u8]> {
        let off = self.anno().l3_offset()?;
        Some(self.bytes_from(off as usize))
    }

    /// Writable counterpart of [`Packet::network_header`].
    #[inline]
    pub fn network_header_mut(&mut self) -> Option<&mut [u8]> {
        let off = self.anno().l3_offset()?;
        Some(self.bytes_from_mut(off as usize))
    }

    /// The network header and everything after it, or the whole frame
    /// when no element has located the header (where an IPv4 or IPv6
    /// header is after `Strip(14)`). Callers check the length of what they
    /// get; an annotation past the frame's end gives no bytes.
    #[inline(always)]
    pub fn l3_bytes(&self) -> &[u8] {
        self.bytes_from(self.l3_start() as usize)
    }

    /// Writable counterpart of [`Packet::l3_bytes`].
    #[inline(always)]
    pub fn l3_bytes_mut(&mut self) -> &mut [u8] {
        let start = self.l3_start() as usize;
        self.bytes_from_mut(start)
    }

    /// Where [`Packet::l3_bytes`] starts in `data`: the annotation, or the
    /// frame's start when it is unset.
    #[inline(always)]
    fn l3_start(&self) -> u32 {
        let b = self.buf();
        if b.anno.l3 == anno::NO_L3 {
            b.head
        } else {
            u32::from(b.anno.l3)
        }
    }

    /// The first `N` bytes of [`Packet::l3_bytes`], `None` when the frame
    /// ends before them.
    ///
    /// The header elements' batch loops read their fixed fields through
    /// this: for an annotated header it is one comparison of the
    /// annotation's end with the frame's, which also fails for the unset
    /// annotation, so the frame start is only looked at then.
    #[inline(always)]
    pub fn l3_chunk_mut<const N: usize>(&mut self) -> Option<&mut [u8; N]> {
        let start = self.l3_chunk_start::<N>()?;
        // SAFETY: `start + N <= tail <= BUFFER_SIZE` (`l3_chunk_start` and
        // the type invariant), so the `N` bytes at `start` are in `data`.
        Some(unsafe {
            &mut *self
                .buf_mut()
                .data
                .as_mut_ptr()
                .add(start)
                .cast::<[u8; N]>()
        })
    }

    /// Read-only counterpart of [`Packet::l3_chunk_mut`].
    #[inline(always)]
    pub fn l3_chunk<const N: usize>(&self) -> Option<&[u8; N]> {
        let start = self.l3_chunk_start::<N>()?;
        // SAFETY: as in `l3_chunk_mut`.
        Some(unsafe { &*self.buf().data.as_ptr().add(start).cast::<[u8; N]>() })
    }

    /// Where [`Packet::l3_chunk_mut`]'s bytes start in `data`, if the
    /// frame holds all `N` of them.
    #[inline(always)]
    fn l3_chunk_start<const N: usize>(&self) -> Option<usize> {
        let b = self.buf();
        let mut start = b.anno.l3 as usize;
        if start + N > b.tail as usize {
            if b.anno.l3 != anno::NO_L3 {
                return None;
            }
            start = b.head as usize;
            if start + N > b.tail as usize {
                return None;
            }
        }
        debug_assert!(b.tail as usize <= BUFFER_SIZE);
        Some(start)
    }

    /// The `N` bytes `at` bytes into the frame, if the frame holds them:
    /// a fixed field read in a batch loop with one comparison with the
    /// frame's end.
    #[inline(always)]
    pub fn chunk_at<const N: usize>(&self, at: usize) -> Option<&[u8; N]> {
        let b = self.buf();
        // The end is found first, with `at + N` fixed in a batch loop: one
        // add and one compare a packet, and the bytes read `N` before the
        // end by the load's own offset. Clamped so that the sums cannot
        // wrap; a batch loop's fixed `at` is clamped once.
        let end = b.head as usize + (at.min(BUFFER_SIZE) + N);
        if end > b.tail as usize {
            return None;
        }
        debug_assert!(b.tail as usize <= BUFFER_SIZE);
        // SAFETY: `end <= tail <= BUFFER_SIZE` (the type invariant), so
        // the `N` bytes before `end` are inside `data`.
        Some(unsafe { &*b.data.as_ptr().add(end - N).cast::<[u8; N]>() })
    }

    /// The length of [`Packet::l3_bytes`], by one subtraction (through the
    /// slice it is a compare and a move more in a batch loop).
    #[inline(always)]
    pub fn l3_len(&self) -> usize {
        self.buf().tail.saturating_sub(self.l3_start()) as usize
    }

    /// Marks the network header as starting `offset` bytes into the frame.
    #[inline]
    pub fn set_network_header(&mut self, offset: usize) {
        // At most twice BUFFER_SIZE, so never the unset annotation; the
        // clamp of a batch loop's fixed offset is computed once.
        let abs = self.head_offset() + offset.min(BUFFER_SIZE);
        self.anno_mut().l3 = abs as u16;
    }

    /// Offset of the network header inside the current frame, if it is
    /// annotated and not stripped away.
    #[inline]
    pub fn network_header_offset(&self) -> Option<usize> {
        let off = self.anno().l3_offset()? as usize;
        off.checked_sub(self.head_offset())
    }

    /// The annotations.
    #[inline(always)]
    pub fn anno(&self) -> &Annotations {
        &self.buf().anno
    }

    /// The annotations, writable.
    #[inline(always)]
    pub fn anno_mut(&mut self) -> &mut Annotations {
        &mut self.buf_mut().anno
    }

    /// A deep copy with the same annotations (Click's `clone`, which shares
    /// data; bricks copies instead, which keeps every packet writable).
    pub fn duplicate(&self) -> Packet {
        let mut p = Packet::new();
        let src = self.buf();
        let dst = p.buf_mut();
        dst.anno = src.anno;
        dst.head = src.head;
        dst.tail = src.tail;
        dst.data[src.head as usize..src.tail as usize]
            .copy_from_slice(&src.data[src.head as usize..src.tail as usize]);
        // Header annotations may point before `head` (an Unstrip can bring
        // those bytes back), so copy the headroom that is in use too.
        if let Some(l3) = src.anno.l3_offset() {
            let l3 = (l3 as usize).min(src.head as usize);
            dst.data[l3..src.head as usize].copy_from_slice(&src.data[l3..src.head as usize]);
        }
        p
    }
}

/// Copies `src` into `dst` (same length). Frames of 16 to 128 bytes, the
/// minimum-size packets that dominate packet rates (64 bytes for IPv4,
/// 78 or more with an IPv6 header), are copied with two overlapping
/// fixed-size moves the compiler inlines, instead of a call to `memcpy`.
/// The second move is no wider than the bytes past the first need: a
/// 78-byte frame takes five 16-byte loads and stores, not eight.
#[inline(always)]
fn copy_small(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if dst.len() != n {
        return dst.copy_from_slice(src);
    }
    // Tested in this order, 32 to 64 bytes (IPv4's minimum frames) and
    // 65 to 80 (IPv6's) are two compares from the top (a match put
    // the ranges in an order of its own, three compares before 64).
    if n <= 64 {
        if n >= 32 {
            copy_fixed::<32>(&mut dst[..32], &src[..32]);
            copy_fixed::<32>(&mut dst[n - 32..], &src[n - 32..]);
        } else if n >= 16 {
            copy_fixed::<16>(&mut dst[..16], &src[..16]);
            copy_fixed::<16>(&mut dst[n - 16..], &src[n - 16..]);
        } else {
            dst.copy_from_slice(src);
        }
    } else if n <= 80 {
        copy_fixed::<64>(&mut dst[..64], &src[..64]);
        copy_fixed::<16>(&mut dst[n - 16..], &src[n - 16..]);
    } else if n <= 96 {
        copy_fixed::<64>(&mut dst[..64], &src[..64]);
        copy_fixed::<32>(&mut dst[n - 32..], &src[n - 32..]);
    } else if n <= 128 {
        copy_fixed::<64>(&mut dst[..64], &src[..64]);
        copy_fixed::<64>(&mut dst[n - 64..], &src[n - 64..]);
    } else {
        dst.copy_from_slice(src);
    }
}

#[inline(always)]
fn copy_fixed<const N: usize>(dst: &mut [u8], src: &[u8]) {
    if let (Some(d), Some(s)) = (dst.first_chunk_mut::<N>(), src.first_chunk::<N>()) {
        *d = *s;
    }
}

impl Default for Packet {
    fn default() -> Self {
        Packet::new()
    }
}

impl Drop for Packet {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: drop runs once; the box is not touched after this.
        let buf = unsafe { ManuallyDrop::take(&mut self.buf) };
        pool::free(buf);
    }
}

impl core::fmt::Debug for Packet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Packet")
            .field("len", &self.len())
            .field("headroom", &self.headroom())
            .field("anno", self.anno())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_pushed_on_the_front_fit_the_headroom_or_are_refused() {
        let mut p = Packet::from_slice(&[9, 8, 7]).unwrap();
        let room = p.headroom();
        p.push_front_bytes(&[1, 2]).unwrap();
        assert_eq!(p.data(), &[1, 2, 9, 8, 7]);
        assert_eq!(p.headroom(), room - 2);
        // More than the headroom: refused, the packet unchanged.
        let big = [3u8; 4096];
        assert!(room < big.len());
        assert!(p.push_front_bytes(&big).is_err());
        assert_eq!(p.data(), &[1, 2, 9, 8, 7]);
        assert_eq!(p.headroom(), room - 2);
        // Written in place, here as two overlapping words.
        p.push_front_with(|h: &mut [u8; 10]| {
            h[2..].copy_from_slice(&0x0a0b_0c0d_0e0f_1011u64.to_be_bytes());
            h[..8].copy_from_slice(&0x2021_2223_2425_2627u64.to_be_bytes());
        })
        .unwrap();
        let front = [0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x10, 0x11];
        assert_eq!(&p.data()[..10], &front);
        assert_eq!(&p.data()[10..], &[1, 2, 9, 8, 7]);
        assert_eq!(p.headroom(), room - 12);
        let refused = p.push_front_with(|h: &mut [u8; 4096]| h.fill(3));
        assert!(refused.is_err());
        assert_eq!(p.len(), 15);
        assert_eq!(p.headroom(), room - 12);
    }

    #[test]
    fn frames_of_every_small_length_are_copied_whole() {
        // Every width copy_small picks, and its edges; buffers come back
        // from the pool, so a byte left from the frame before shows.
        for n in 0..=200usize {
            let frame: Vec<u8> = (0..n).map(|i| (i * 7 + n) as u8).collect();
            let p = Packet::from_slice(&frame).unwrap();
            assert_eq!(p.data(), &frame[..], "{n} bytes");
        }
    }

    #[test]
    fn from_slice_and_views() {
        let p = Packet::from_slice(&[1, 2, 3, 4]).unwrap();
        assert_eq!(p.data(), &[1, 2, 3, 4]);
        assert_eq!(p.len(), 4);
        assert_eq!(p.headroom(), HEADROOM);
        assert_eq!(p.tailroom(), BUFFER_SIZE - HEADROOM - 4);
    }

    #[test]
    fn oversized_is_refused() {
        let big = vec![0u8; MAX_FRAME + 1];
        assert_eq!(
            Packet::from_slice(&big).unwrap_err(),
            PacketError::Oversized { len: MAX_FRAME + 1 }
        );
        assert!(Packet::from_slice(&big[..MAX_FRAME]).is_ok());
    }

    #[test]
    fn strip_and_unstrip() {
        let mut p = Packet::from_slice(
            &[0xaa; 14]
                .iter()
                .chain(&[0x45; 20])
                .copied()
                .collect::<Vec<_>>(),
        )
        .unwrap();
        p.pull_front(14);
        assert_eq!(p.len(), 20);
        assert_eq!(p.data()[0], 0x45);
        p.push_front(14).unwrap();
        assert_eq!(p.data()[0], 0xaa);
        assert_eq!(p.len(), 34);
    }

    #[test]
    fn push_beyond_headroom_fails() {
        let mut p = Packet::from_slice(&[0; 10]).unwrap();
        assert!(p.push_front(HEADROOM + 1).is_err());
        assert!(p.push_front(HEADROOM).is_ok());
        assert_eq!(p.headroom(), 0);
    }

    #[test]
    fn pull_more_than_len_empties() {
        let mut p = Packet::from_slice(&[0; 10]).unwrap();
        p.pull_front(100);
        assert!(p.is_empty());
    }

    #[test]
    fn put_and_take() {
        let mut p = Packet::from_slice(&[9; 10]).unwrap();
        p.put_back(6).unwrap();
        assert_eq!(p.data(), &[9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 0, 0, 0, 0, 0, 0]);
        p.take_back(12);
        assert_eq!(p.data(), &[9, 9, 9, 9]);
        p.set_len(6).unwrap();
        assert_eq!(p.data(), &[9, 9, 9, 9, 0, 0]);
        assert!(p.put_back(BUFFER_SIZE).is_err());
    }

    #[test]
    fn header_chunks_follow_the_annotation_or_the_frame_start() {
        let mut frame = [0u8; 34];
        frame[0] = 0xee;
        frame[14] = 0x45;
        let mut p = Packet::from_slice(&frame).unwrap();
        // No annotation: the frame's start, if it holds the bytes.
        assert_eq!(p.anno().l3_offset(), None);
        assert_eq!(p.l3_chunk::<20>().map(|h| h[0]), Some(0xee));
        assert_eq!(p.l3_len(), 34);
        assert!(p.l3_chunk::<35>().is_none());
        // Annotated: the header's bytes, and only while the frame holds
        // them all (the frame's start is not a fallback then).
        p.set_network_header(14);
        assert_eq!(p.l3_chunk::<20>().map(|h| h[0]), Some(0x45));
        assert!(p.l3_chunk::<21>().is_none());
        assert_eq!(p.l3_len(), 20);
        p.l3_chunk_mut::<20>().unwrap()[8] = 7;
        assert_eq!(p.data()[22], 7);
        p.take_back(1);
        assert!(p.l3_chunk::<20>().is_none());
        assert_eq!(p.l3_len(), 19);
        // A header set past the frame's end has no bytes, is still set,
        // and is never taken for the unset annotation.
        p.set_network_header(usize::MAX);
        assert!(p.anno().l3_offset().is_some());
        assert!(p.l3_chunk::<1>().is_none());
        assert_eq!(p.l3_len(), 0);
        assert!(p.network_header().unwrap().is_empty());
    }

    #[test]
    fn chunks_at_an_offset_stay_in_the_frame() {
        let mut p = Packet::from_slice(&[1, 2, 3, 4, 5, 6]).unwrap();
        assert_eq!(p.chunk_at::<4>(2), Some(&[3, 4, 5, 6]));
        assert_eq!(p.chunk_at::<4>(3), None);
        assert_eq!(p.chunk_at::<0>(6), Some(&[]));
        assert_eq!(p.chunk_at::<1>(usize::MAX), None);
        p.pull_front(2);
        assert_eq!(p.chunk_at::<4>(0), Some(&[3, 4, 5, 6]));
        p.pull_front(usize::MAX);
        assert!(p.is_empty());
        assert_eq!(p.chunk_at::<1>(0), None);
    }

    #[test]
    fn network_header_survives_strip() {
        let mut p = Packet::from_slice(&[0u8; 34]).unwrap();
        p.data_mut()[14] = 0x45;
        p.set_network_header(14);
        p.pull_front(14);
        assert_eq!(p.network_header().unwrap()[0], 0x45);
        assert_eq!(p.network_header_offset(), Some(0));
        p.pull_front(1);
        assert_eq!(p.network_header_offset(), None);
    }

    #[test]
    fn duplicate_is_deep() {
        let mut a = Packet::from_slice(&[1, 2, 3]).unwrap();
        a.anno_mut().paint = 7;
        let mut b = a.duplicate();
        b.data_mut()[0] = 9;
        assert_eq!(a.data(), &[1, 2, 3]);
        assert_eq!(b.data(), &[9, 2, 3]);
        assert_eq!(b.anno().paint, 7);
    }

    #[test]
    fn buffers_are_recycled() {
        let before = pool_stats();
        for _ in 0..1000 {
            let p = Packet::from_slice(&[0; 64]).unwrap();
            drop(p);
        }
        let after = pool_stats();
        // At most one fresh allocation for the loop: every later packet
        // reuses the buffer the previous one returned.
        assert!(
            after.allocated - before.allocated <= 1,
            "{before:?} -> {after:?}"
        );
    }

    #[test]
    fn new_packet_has_clean_annotations() {
        let mut p = Packet::new();
        p.anno_mut().paint = 3;
        p.anno_mut().dst_ip = [10, 0, 0, 1].into();
        drop(p);
        let q = Packet::new();
        assert_eq!(q.anno().paint, 0);
        assert_eq!(q.anno().dst_ip, std::net::Ipv4Addr::UNSPECIFIED);
    }
}
