//! The probe header `GenStamp` writes into a UDP payload and
//! `TrafficSink` reads back, and how both find that payload in a frame.
//!
//! ```text
//!  0               4               8              12                      18
//! +---------------+---------------+---------------+-----------------------+
//! | magic "BRK1"  | flow id (u32) | sequence (u32)| transmit time (u48 ns)|
//! +---------------+---------------+---------------+-----------------------+
//! ```
//!
//! All fields are big-endian. The header is 18 bytes so that it fits the
//! smallest Ethernet frame: 60 bytes without the FCS leave exactly 18
//! bytes of UDP payload after Ethernet, IPv4 and UDP headers. Two fields
//! are shorter than the counters they carry, and the receiver restores
//! them:
//!
//! - the sequence number is the low 32 bits of a per-flow 64-bit count;
//!   [`extend_seq`] widens it again relative to the highest sequence seen
//!   in the flow (RFC 3550 §A.1's extended sequence number), which is right
//!   as long as reordering and loss bursts in one flow stay below 2^31
//!   packets;
//! - the transmit time is the low 48 bits of `CLOCK_MONOTONIC` in
//!   nanoseconds (about 78 hours), and [`elapsed48`] subtracts modulo
//!   2^48, which is right for any latency below 39 hours.
//!
//! `CLOCK_MONOTONIC` is the same clock in every process of one machine, so
//! a generator and a sink in two processes (or two network namespaces)
//! measure one-way latency without synchronising anything.

use bricks_wire::ipv4::Ipv4Packet;
use bricks_wire::ipv6::Ipv6Packet;
use bricks_wire::udp::UdpPacket;
use bricks_wire::{EtherType, IpProtocol};

/// The first four bytes of every probe.
pub const MAGIC: [u8; 4] = *b"BRK1";
/// Length of the probe header.
pub const HEADER_LEN: usize = 18;
/// Transmit times are kept modulo 2^48 ns.
pub const TIME_MASK: u64 = (1 << 48) - 1;

mod field {
    use core::ops::Range;
    pub const MAGIC: Range<usize> = 0..4;
    pub const FLOW: Range<usize> = 4..8;
    pub const SEQ: Range<usize> = 8..12;
    pub const TIME: Range<usize> = 12..18;
}

/// Why a buffer is not a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeError {
    /// Fewer than [`HEADER_LEN`] bytes.
    Truncated,
    /// The first four bytes are not [`MAGIC`]: some other payload.
    NotAProbe,
}

impl core::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ProbeError::Truncated => "payload shorter than a probe header (18 bytes)",
            ProbeError::NotAProbe => "payload does not start with the probe magic `BRK1`",
        })
    }
}

impl std::error::Error for ProbeError {}

/// A view of a probe header at the start of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Probe<T> {
    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Probe<T> {
        Probe { buffer }
    }

    /// Wraps a buffer that holds a whole header starting with [`MAGIC`].
    /// Afterwards no getter panics.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Probe<T>, ProbeError> {
        let p = Probe::new_unchecked(buffer);
        p.check_len()?;
        if p.buffer.as_ref()[field::MAGIC] != MAGIC {
            return Err(ProbeError::NotAProbe);
        }
        Ok(p)
    }

    /// Checks that the buffer holds a whole header; afterwards no getter
    /// and no setter panics.
    #[inline]
    pub fn check_len(&self) -> Result<(), ProbeError> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(ProbeError::Truncated)
        } else {
            Ok(())
        }
    }

    /// The flow id.
    #[inline]
    pub fn flow(&self) -> u32 {
        u32::from_be_bytes(
            self.buffer.as_ref()[field::FLOW]
                .try_into()
                .unwrap_or([0; 4]),
        )
    }

    /// The low 32 bits of the sequence number within the flow.
    #[inline]
    pub fn seq32(&self) -> u32 {
        u32::from_be_bytes(
            self.buffer.as_ref()[field::SEQ]
                .try_into()
                .unwrap_or([0; 4]),
        )
    }

    /// The low 48 bits of the transmit time, ns of `CLOCK_MONOTONIC`.
    #[inline]
    pub fn time48(&self) -> u64 {
        let b = &self.buffer.as_ref()[field::TIME];
        let mut w = [0u8; 8];
        w[2..].copy_from_slice(b);
        u64::from_be_bytes(w)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Probe<T> {
    /// Writes the magic.
    #[inline]
    pub fn set_magic(&mut self) {
        self.buffer.as_mut()[field::MAGIC].copy_from_slice(&MAGIC);
    }

    /// Sets the flow id.
    #[inline]
    pub fn set_flow(&mut self, flow: u32) {
        self.buffer.as_mut()[field::FLOW].copy_from_slice(&flow.to_be_bytes());
    }

    /// Sets the sequence number (its low 32 bits are sent).
    #[inline]
    pub fn set_seq(&mut self, seq: u64) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&(seq as u32).to_be_bytes());
    }

    /// Sets the transmit time (its low 48 bits are sent).
    #[inline]
    pub fn set_time(&mut self, ns: u64) {
        self.buffer.as_mut()[field::TIME].copy_from_slice(&ns.to_be_bytes()[2..]);
    }
}

/// The fields of a probe header, for building probes in tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeRepr {
    /// Flow id.
    pub flow: u32,
    /// Sequence number within the flow (only the low 32 bits travel).
    pub seq: u64,
    /// Transmit time in ns (only the low 48 bits travel).
    pub time: u64,
}

impl ProbeRepr {
    /// Reads a checked probe; the sequence and time are as sent (32 and
    /// 48 bits).
    pub fn parse<T: AsRef<[u8]>>(p: &Probe<T>) -> ProbeRepr {
        ProbeRepr {
            flow: p.flow(),
            seq: u64::from(p.seq32()),
            time: p.time48(),
        }
    }

    /// The bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Probe<T>) {
        p.set_magic();
        p.set_flow(self.flow);
        p.set_seq(self.seq);
        p.set_time(self.time);
    }
}

/// Widens a 32-bit sequence number to the 64-bit one nearest to `highest`,
/// the highest (extended) sequence seen so far in its flow.
#[inline]
pub fn extend_seq(highest: u64, seq32: u32) -> u64 {
    let delta = seq32.wrapping_sub(highest as u32) as i32;
    // Saturating: a packet "before 0" can only be garbage, and counting it
    // as a very late packet is harmless.
    highest.saturating_add_signed(i64::from(delta))
}

/// Nanoseconds from a 48-bit transmit time to `now` (full 64-bit
/// `CLOCK_MONOTONIC`), or `None` if the stamp lies in the future (the two
/// ends do not share a clock).
#[inline]
pub fn elapsed48(now: u64, time48: u64) -> Option<u64> {
    let d = now.wrapping_sub(time48) & TIME_MASK;
    (d < 1 << 47).then_some(d)
}

/// Where a frame's UDP datagram is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpAt {
    /// Frame offset of the IP header.
    pub l3: usize,
    /// Frame offset of the UDP header.
    pub l4: usize,
    /// Frame offset just past the datagram (its length field, not the
    /// frame end, which may carry Ethernet padding).
    pub end: usize,
    /// Carried over IPv6 (the UDP checksum is mandatory there).
    pub v6: bool,
}

/// Finds the UDP datagram of an Ethernet frame (up to two VLAN tags) or of
/// a frame whose IP header starts at `l3` (the network header annotation).
/// `None` for anything else: not IP, not UDP, a fragment (only the first
/// one has the header, and a later one's bytes are not its start), an
/// IPv6 packet with extension headers, or a truncated header.
#[inline]
pub fn locate_udp(frame: &[u8], l3: Option<usize>) -> Option<UdpAt> {
    let plain = match l3 {
        Some(off) => Some(off),
        None => (frame.get(12..14) == Some(&[0x08, 0x00][..])).then_some(14),
    };
    if let Some(at) = plain.and_then(|off| plain_udp4(frame, off)) {
        return Some(at);
    }
    locate_any_udp(frame, l3)
}

/// What nearly every generated packet is, IPv4 without options, read with
/// plain loads from one bounds-checked 28-byte window. `None` sends the
/// packet down the general path, which reaches the same verdict on
/// anything this one refuses.
#[inline(always)]
fn plain_udp4(frame: &[u8], l3: usize) -> Option<UdpAt> {
    let h: &[u8; 28] = frame.get(l3..l3 + 28)?.try_into().ok()?;
    let be16 = |i: usize| usize::from(u16::from_be_bytes([h[i], h[i + 1]]));
    // Version 4, 20-byte header, UDP, neither MF nor a fragment offset.
    if h[0] != 0x45 || h[9] != 17 || be16(6) & 0x3fff != 0 {
        return None;
    }
    let total = be16(2);
    let udp_len = be16(24);
    if total < 28 || l3 + total > frame.len() || udp_len < 8 || udp_len > total - 20 {
        return None;
    }
    Some(UdpAt {
        l3,
        l4: l3 + 20,
        end: l3 + 20 + udp_len,
        v6: false,
    })
}

/// [`locate_udp`] for every case: VLAN tags, IPv4 options, IPv6.
fn locate_any_udp(frame: &[u8], l3: Option<usize>) -> Option<UdpAt> {
    let (l3, ethertype) = match l3 {
        Some(off) => {
            let version = frame.get(off)? >> 4;
            let t = match version {
                4 => EtherType::IPV4,
                6 => EtherType::IPV6,
                _ => return None,
            };
            (off, t)
        }
        None => {
            let mut off = 12;
            let mut t = EtherType::from(u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]));
            for _ in 0..2 {
                if t != EtherType::VLAN && t != EtherType::QINQ {
                    break;
                }
                off += 4;
                t = EtherType::from(u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]));
            }
            (off + 2, t)
        }
    };
    let ip = frame.get(l3..)?;
    let (l4, end, v6) = if ethertype == EtherType::IPV4 {
        let p = Ipv4Packet::new_checked(ip).ok()?;
        if p.version() != 4
            || p.next_header() != IpProtocol::UDP
            || p.more_frags()
            || p.frag_offset() != 0
        {
            return None;
        }
        (l3 + p.header_len(), l3 + usize::from(p.total_len()), false)
    } else if ethertype == EtherType::IPV6 {
        let p = Ipv6Packet::new_checked(ip).ok()?;
        if p.version() != 6 || p.next_header() != IpProtocol::UDP {
            return None;
        }
        (l3 + 40, l3 + 40 + usize::from(p.payload_len()), true)
    } else {
        return None;
    };
    let udp = UdpPacket::new_checked(frame.get(l4..end)?).ok()?;
    Some(UdpAt {
        l3,
        l4,
        end: l4 + usize::from(udp.len()),
        v6,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    static BYTES: [u8; 18] = [
        b'B', b'R', b'K', b'1', // magic
        0x00, 0x00, 0x01, 0x02, // flow 258
        0x00, 0x00, 0x00, 0x07, // seq 7
        0x00, 0x01, 0x00, 0x00, 0x00, 0x05, // time 2^32 + 5
    ];

    #[test]
    fn deconstruct() {
        let p = Probe::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.flow(), 258);
        assert_eq!(p.seq32(), 7);
        assert_eq!(p.time48(), (1 << 32) + 5);
        assert_eq!(
            ProbeRepr::parse(&p),
            ProbeRepr {
                flow: 258,
                seq: 7,
                time: (1 << 32) + 5
            }
        );
    }

    #[test]
    fn construct_keeps_low_bits() {
        let mut buf = [0u8; 18];
        let r = ProbeRepr {
            flow: 258,
            seq: (5 << 32) | 7,
            time: (0xabcd << 48) | (1 << 32) | 5,
        };
        r.emit(&mut Probe::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn truncated_and_foreign() {
        assert_eq!(
            Probe::new_checked(&BYTES[..17]).unwrap_err(),
            ProbeError::Truncated
        );
        let mut other = BYTES;
        other[3] = b'2';
        assert_eq!(
            Probe::new_checked(&other[..]).unwrap_err(),
            ProbeError::NotAProbe
        );
    }

    #[test]
    fn overlong_reads_the_start() {
        let mut long = [0xeeu8; 40];
        long[..18].copy_from_slice(&BYTES);
        assert_eq!(Probe::new_checked(&long[..]).unwrap().seq32(), 7);
    }

    #[test]
    fn sequence_extension() {
        assert_eq!(extend_seq(0, 0), 0);
        assert_eq!(extend_seq(10, 12), 12);
        assert_eq!(extend_seq(10, 3), 3);
        // Across the 2^32 wrap, forward and back.
        let h = (1u64 << 32) - 2;
        assert_eq!(extend_seq(h, 1), (1 << 32) + 1);
        assert_eq!(extend_seq((1 << 32) + 1, u32::MAX - 1), h);
        // Before zero: saturates.
        assert_eq!(extend_seq(1, u32::MAX), 0);
    }

    #[test]
    fn elapsed_wraps_at_48_bits() {
        assert_eq!(elapsed48(1_000, 400), Some(600));
        let now = (7u64 << 48) | 10;
        let stamp = TIME_MASK - 4; // just before the wrap
        assert_eq!(elapsed48(now, stamp), Some(15));
        assert_eq!(elapsed48(400, 1_000), None);
    }

    /// Ethernet + IPv4 + UDP with 18 payload bytes: the smallest frame.
    fn frame_v4() -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&46u16.to_be_bytes());
        f[23] = 17;
        f[38..40].copy_from_slice(&26u16.to_be_bytes());
        f
    }

    #[test]
    fn locates_udp_over_ipv4_vlan_and_annotation() {
        let f = frame_v4();
        let at = locate_udp(&f, None).unwrap();
        assert_eq!(
            at,
            UdpAt {
                l3: 14,
                l4: 34,
                end: 60,
                v6: false
            }
        );
        assert_eq!(locate_udp(&f[14..], Some(0)).unwrap().l4, 20);
        let mut tagged = f[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        tagged.extend_from_slice(&f[12..]);
        assert_eq!(locate_udp(&tagged, None).unwrap().l4, 38);
    }

    #[test]
    fn fast_and_general_paths_agree() {
        use proptest::prelude::*;
        let base = frame_v4();
        proptest!(|(edits in proptest::collection::vec((14usize..60, any::<u8>()), 0..4),
                    len in 30usize..=60)| {
            let mut f = base.clone();
            for (i, v) in edits {
                f[i] = v;
            }
            let f = &f[..len];
            prop_assert_eq!(locate_udp(f, None), locate_any_udp(f, None));
            prop_assert_eq!(locate_udp(&f[14..], Some(0)), locate_any_udp(&f[14..], Some(0)));
        });
    }

    #[test]
    fn refuses_what_is_not_udp() {
        let mut tcp = frame_v4();
        tcp[23] = 6;
        assert_eq!(locate_udp(&tcp, None), None);
        let mut frag = frame_v4();
        frag[20] = 0x20; // more fragments
        assert_eq!(locate_udp(&frag, None), None);
        let mut arp = frame_v4();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(locate_udp(&arp, None), None);
        let f = frame_v4();
        assert_eq!(locate_udp(&f[..40], None), None);
        assert_eq!(locate_udp(&f[..5], None), None);
    }

    #[test]
    fn locates_udp_over_ipv6() {
        let mut f = vec![0u8; 14 + 40 + 8 + 18];
        f[12..14].copy_from_slice(&[0x86, 0xdd]);
        f[14] = 0x60;
        f[18..20].copy_from_slice(&26u16.to_be_bytes());
        f[20] = 17;
        f[58..60].copy_from_slice(&26u16.to_be_bytes());
        let at = locate_udp(&f, None).unwrap();
        assert!(at.v6);
        assert_eq!((at.l4, at.end), (54, 80));
    }
}
