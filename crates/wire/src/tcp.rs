//! TCP segment headers (RFC 9293 section 3.1) and their options, with
//! checksums over the IPv4 and IPv6 pseudo-headers.
//!
//! TCP carries no length of its own: the segment is the IP payload, so the
//! view must be given exactly that (`Ipv4Packet::payload()` is bounded by
//! the IP total length for this reason), and the checksum covers the whole
//! buffer.

use crate::checksum;
use crate::ip::IpProtocol;
use crate::network_endian::{read_u16, read_u32, write_u16, write_u32};
use crate::{Error, Result};
use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};
use core::ops::{BitAnd, BitOr, BitOrAssign, Not};

/// Length of the header without options.
pub const HEADER_LEN: usize = 20;
/// Largest header, with 40 bytes of options.
pub const MAX_HEADER_LEN: usize = 60;

mod field {
    use crate::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const SEQ_NUM: Field = 4..8;
    pub const ACK_NUM: Field = 8..12;
    pub const DATA_OFFSET: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WIN_SIZE: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
    pub const URGENT: Field = 18..20;
}

/// The eight control bits of a TCP header (RFC 9293 section 3.1; ECE and
/// CWR from RFC 3168).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    /// No more data from sender.
    pub const FIN: TcpFlags = TcpFlags(0x01);
    /// Synchronize sequence numbers.
    pub const SYN: TcpFlags = TcpFlags(0x02);
    /// Reset the connection.
    pub const RST: TcpFlags = TcpFlags(0x04);
    /// Push function.
    pub const PSH: TcpFlags = TcpFlags(0x08);
    /// Acknowledgment field is significant.
    pub const ACK: TcpFlags = TcpFlags(0x10);
    /// Urgent pointer field is significant.
    pub const URG: TcpFlags = TcpFlags(0x20);
    /// ECN-Echo (RFC 3168).
    pub const ECE: TcpFlags = TcpFlags(0x40);
    /// Congestion Window Reduced (RFC 3168).
    pub const CWR: TcpFlags = TcpFlags(0x80);

    /// No flag set.
    #[inline]
    pub const fn empty() -> TcpFlags {
        TcpFlags(0)
    }

    /// The raw bits.
    #[inline]
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// True if every flag of `other` is set in `self`.
    #[inline]
    pub const fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// True if any flag of `other` is set in `self`.
    #[inline]
    pub const fn intersects(self, other: TcpFlags) -> bool {
        self.0 & other.0 != 0
    }

    /// True if no flag is set.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl BitOr for TcpFlags {
    type Output = TcpFlags;
    #[inline]
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | rhs.0)
    }
}

impl BitOrAssign for TcpFlags {
    #[inline]
    fn bitor_assign(&mut self, rhs: TcpFlags) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for TcpFlags {
    type Output = TcpFlags;
    #[inline]
    fn bitand(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 & rhs.0)
    }
}

impl Not for TcpFlags {
    type Output = TcpFlags;
    #[inline]
    fn not(self) -> TcpFlags {
        TcpFlags(!self.0)
    }
}

impl fmt::Display for TcpFlags {
    /// tcpdump's notation: `S` for SYN, `.` for ACK, so `S.` is SYN-ACK.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        for (flag, c) in [
            (TcpFlags::FIN, 'F'),
            (TcpFlags::SYN, 'S'),
            (TcpFlags::RST, 'R'),
            (TcpFlags::PSH, 'P'),
            (TcpFlags::ACK, '.'),
            (TcpFlags::URG, 'U'),
            (TcpFlags::ECE, 'E'),
            (TcpFlags::CWR, 'W'),
        ] {
            if self.contains(flag) {
                fmt::Write::write_char(f, c)?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for TcpFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TcpFlags({self})")
    }
}

/// A view of a TCP segment: header, options and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Length of the header without options.
    pub const HEADER_LEN: usize = HEADER_LEN;

    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> TcpPacket<T> {
        TcpPacket { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<TcpPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the fixed header (else `Truncated`),
    /// that the data offset is at least 5 words (else `Malformed`), and that
    /// the buffer holds the header it announces (else `Truncated`).
    /// Afterwards no accessor panics.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = self.header_len();
        if header_len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if len < header_len {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives the buffer back.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::SRC_PORT])
    }

    /// The destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::DST_PORT])
    }

    /// The sequence number.
    #[inline]
    pub fn seq_number(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::SEQ_NUM])
    }

    /// The acknowledgment number.
    #[inline]
    pub fn ack_number(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::ACK_NUM])
    }

    /// The header length in bytes (data offset times 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::DATA_OFFSET] >> 4) * 4
    }

    /// The control bits.
    #[inline]
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.buffer.as_ref()[field::FLAGS])
    }

    /// The FIN flag.
    #[inline]
    pub fn fin(&self) -> bool {
        self.flags().contains(TcpFlags::FIN)
    }

    /// The SYN flag.
    #[inline]
    pub fn syn(&self) -> bool {
        self.flags().contains(TcpFlags::SYN)
    }

    /// The RST flag.
    #[inline]
    pub fn rst(&self) -> bool {
        self.flags().contains(TcpFlags::RST)
    }

    /// The PSH flag.
    #[inline]
    pub fn psh(&self) -> bool {
        self.flags().contains(TcpFlags::PSH)
    }

    /// The ACK flag.
    #[inline]
    pub fn ack(&self) -> bool {
        self.flags().contains(TcpFlags::ACK)
    }

    /// The URG flag.
    #[inline]
    pub fn urg(&self) -> bool {
        self.flags().contains(TcpFlags::URG)
    }

    /// The ECE flag.
    #[inline]
    pub fn ece(&self) -> bool {
        self.flags().contains(TcpFlags::ECE)
    }

    /// The CWR flag.
    #[inline]
    pub fn cwr(&self) -> bool {
        self.flags().contains(TcpFlags::CWR)
    }

    /// The window field, before any window scaling.
    #[inline]
    pub fn window_len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::WIN_SIZE])
    }

    /// The checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// The urgent pointer.
    #[inline]
    pub fn urgent_at(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::URGENT])
    }

    /// True if the checksum is right for this segment, the whole buffer,
    /// sent from `src` to `dst` over IPv4.
    #[inline]
    pub fn verify_checksum_v4(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        let data = self.buffer.as_ref();
        let Ok(len) = u16::try_from(data.len()) else {
            return false;
        };
        let pseudo = checksum::pseudo_header_v4(src, dst, IpProtocol::TCP, len);
        checksum::combine(&[pseudo, checksum::data(data)]) == !0
    }

    /// True if the checksum is right for this segment, the whole buffer,
    /// sent from `src` to `dst` over IPv6.
    #[inline]
    pub fn verify_checksum_v6(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        let data = self.buffer.as_ref();
        let Ok(len) = u32::try_from(data.len()) else {
            return false;
        };
        let pseudo = checksum::pseudo_header_v6(src, dst, IpProtocol::TCP, len);
        checksum::combine(&[pseudo, checksum::data(data)]) == !0
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> TcpPacket<&'a T> {
    /// The options: the header after its fixed 20 bytes.
    #[inline]
    pub fn options(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// An iterator over the options.
    #[inline]
    pub fn options_iter(&self) -> TcpOptionsIter<'a> {
        TcpOptionsIter::new(self.options())
    }

    /// The payload: everything after the header.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    /// Sets the source port.
    #[inline]
    pub fn set_src_port(&mut self, port: u16) {
        write_u16(&mut self.buffer.as_mut()[field::SRC_PORT], port);
    }

    /// Sets the destination port.
    #[inline]
    pub fn set_dst_port(&mut self, port: u16) {
        write_u16(&mut self.buffer.as_mut()[field::DST_PORT], port);
    }

    /// Sets the sequence number.
    #[inline]
    pub fn set_seq_number(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::SEQ_NUM], value);
    }

    /// Sets the acknowledgment number.
    #[inline]
    pub fn set_ack_number(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::ACK_NUM], value);
    }

    /// Sets the header length in bytes, a multiple of 4 from 20 to 60,
    /// keeping the reserved bits. Call `check_len` again afterwards.
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        let byte = &mut self.buffer.as_mut()[field::DATA_OFFSET];
        *byte = (*byte & 0x0f) | (((len / 4) as u8) << 4);
    }

    /// Sets the control bits.
    #[inline]
    pub fn set_flags(&mut self, flags: TcpFlags) {
        self.buffer.as_mut()[field::FLAGS] = flags.0;
    }

    /// Sets the window field.
    #[inline]
    pub fn set_window_len(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::WIN_SIZE], value);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    /// Sets the urgent pointer.
    #[inline]
    pub fn set_urgent_at(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::URGENT], value);
    }

    /// Computes and writes the checksum for IPv4, over the whole buffer.
    ///
    /// # Panics
    /// If the buffer is longer than 65535 bytes, which no IPv4 packet is.
    #[inline]
    pub fn fill_checksum_v4(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let data = self.buffer.as_ref();
        let len = u16::try_from(data.len()).expect("TCP segment longer than an IPv4 packet");
        let pseudo = checksum::pseudo_header_v4(src, dst, IpProtocol::TCP, len);
        let sum = !checksum::combine(&[pseudo, checksum::data(data)]);
        self.set_checksum(sum);
    }

    /// Computes and writes the checksum for IPv6, over the whole buffer.
    #[inline]
    pub fn fill_checksum_v6(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let data = self.buffer.as_ref();
        let len = data.len() as u32;
        let pseudo = checksum::pseudo_header_v6(src, dst, IpProtocol::TCP, len);
        let sum = !checksum::combine(&[pseudo, checksum::data(data)]);
        self.set_checksum(sum);
    }

    /// The options, mutably.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let header_len = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..header_len]
    }

    /// The payload, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let header_len = self.header_len();
        &mut self.buffer.as_mut()[header_len..]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for TcpPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

number_with_names! {
    /// The kind octet of a TCP option (IANA "TCP Option Kind Numbers").
    pub struct TcpOptionKind(u8), unknown as "option {}" {
        /// End of Option List.
        EOL = 0, "eol";
        /// No Operation.
        NOP = 1, "nop";
        /// Maximum Segment Size (RFC 9293 section 3.2).
        MSS = 2, "mss";
        /// Window Scale (RFC 7323).
        WINDOW_SCALE = 3, "wscale";
        /// SACK Permitted (RFC 2018).
        SACK_PERMITTED = 4, "sackOK";
        /// SACK blocks (RFC 2018).
        SACK = 5, "sack";
        /// Timestamps (RFC 7323).
        TIMESTAMP = 8, "TS";
    }
}

/// One TCP option.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpOption<'a> {
    /// The kind octet.
    pub kind: TcpOptionKind,
    /// The octets after the kind and length octets; empty for EOL and NOP.
    pub data: &'a [u8],
}

impl TcpOption<'_> {
    /// The maximum segment size, if this is a well-formed MSS option.
    #[inline]
    pub fn mss(&self) -> Option<u16> {
        match (self.kind, self.data) {
            (TcpOptionKind::MSS, &[hi, lo]) => Some(u16::from_be_bytes([hi, lo])),
            _ => None,
        }
    }

    /// The shift count, if this is a well-formed Window Scale option.
    #[inline]
    pub fn window_scale(&self) -> Option<u8> {
        match (self.kind, self.data) {
            (TcpOptionKind::WINDOW_SCALE, &[shift]) => Some(shift),
            _ => None,
        }
    }

    /// TSval and TSecr, if this is a well-formed Timestamps option.
    #[inline]
    pub fn timestamp(&self) -> Option<(u32, u32)> {
        match (self.kind, self.data) {
            (TcpOptionKind::TIMESTAMP, &[a, b, c, d, e, f, g, h]) => Some((
                u32::from_be_bytes([a, b, c, d]),
                u32::from_be_bytes([e, f, g, h]),
            )),
            _ => None,
        }
    }
}

/// An iterator over TCP options, stopping after End of Option List.
///
/// An option other than EOL and NOP whose length octet is missing, below 2,
/// or past the end of the options is yielded as `Err(Error::Malformed)` and
/// ends the iteration.
#[derive(Debug, Clone)]
pub struct TcpOptionsIter<'a> {
    options: &'a [u8],
    done: bool,
}

impl<'a> TcpOptionsIter<'a> {
    /// Iterates over an options area.
    #[inline]
    pub fn new(options: &'a [u8]) -> TcpOptionsIter<'a> {
        TcpOptionsIter {
            options,
            done: false,
        }
    }
}

impl<'a> Iterator for TcpOptionsIter<'a> {
    type Item = Result<TcpOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let (&kind, rest) = self.options.split_first()?;
        let kind = TcpOptionKind(kind);
        match kind {
            TcpOptionKind::EOL => {
                self.done = true;
                return Some(Ok(TcpOption { kind, data: &[] }));
            }
            TcpOptionKind::NOP => {
                self.options = rest;
                return Some(Ok(TcpOption { kind, data: &[] }));
            }
            _ => {}
        }
        match rest.first().map(|&len| usize::from(len)) {
            Some(len) if len >= 2 && len <= self.options.len() => {
                let data = &self.options[2..len];
                self.options = &self.options[len..];
                Some(Ok(TcpOption { kind, data }))
            }
            _ => {
                self.done = true;
                Some(Err(Error::Malformed))
            }
        }
    }
}

impl core::iter::FusedIterator for TcpOptionsIter<'_> {}

/// The fields of a TCP header without options, enough to build segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq_number: u32,
    /// Acknowledgment number.
    pub ack_number: u32,
    /// Control bits.
    pub flags: TcpFlags,
    /// Window field, unscaled.
    pub window_len: u16,
    /// Urgent pointer.
    pub urgent_at: u16,
}

impl TcpRepr {
    /// Reads the header; options are skipped, not represented. The checksum
    /// needs the IP addresses: check it with
    /// [`TcpPacket::verify_checksum_v4`] or [`TcpPacket::verify_checksum_v6`].
    pub fn parse<T: AsRef<[u8]>>(packet: &TcpPacket<T>) -> Result<TcpRepr> {
        packet.check_len()?;
        Ok(TcpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq_number: packet.seq_number(),
            ack_number: packet.ack_number(),
            flags: packet.flags(),
            window_len: packet.window_len(),
            urgent_at: packet.urgent_at(),
        })
    }

    /// The number of bytes [`emit`](Self::emit) writes: the 20-byte header.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes a 20-byte header with a zero checksum. Write the payload, then
    /// call [`TcpPacket::fill_checksum_v4`] or [`TcpPacket::fill_checksum_v6`]
    /// on a view of exactly the segment.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut TcpPacket<T>) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq_number);
        packet.set_ack_number(self.ack_number);
        packet.buffer.as_mut()[field::DATA_OFFSET] = ((HEADER_LEN / 4) as u8) << 4;
        packet.set_flags(self.flags);
        packet.set_window_len(self.window_len);
        packet.set_checksum(0);
        packet.set_urgent_at(self.urgent_at);
    }
}

impl fmt::Display for TcpRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TCP {} > {}: Flags [{}], seq {}",
            self.src_port, self.dst_port, self.flags, self.seq_number
        )?;
        if self.flags.contains(TcpFlags::ACK) {
            write!(f, ", ack {}", self.ack_number)?;
        }
        write!(f, ", win {}", self.window_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv4::Ipv4Packet;
    use crate::ipv6::Ipv6Packet;

    /// A SYN from Linux, 192.0.2.1:52060 to 192.0.2.2:80, with MSS, SACK
    /// permitted, timestamps and window scale (captured with tcpdump).
    static SYN_V4: [u8; 60] = [
        0x45, 0x00, 0x00, 0x3c, 0x41, 0xcb, 0x40, 0x00, 0x40, 0x06, 0x74, 0xed, 0xc0, 0x00, 0x02,
        0x01, 0xc0, 0x00, 0x02, 0x02, 0xcb, 0x5c, 0x00, 0x50, 0xfd, 0x2f, 0x16, 0xf9, 0x00, 0x00,
        0x00, 0x00, 0xa0, 0x02, 0xfa, 0xf0, 0x74, 0x83, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04,
        0x02, 0x08, 0x0a, 0xcf, 0x18, 0xa5, 0x96, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x0a,
    ];

    /// The RST-ACK the closed port answered with.
    static RST_V4: [u8; 40] = [
        0x45, 0x00, 0x00, 0x28, 0x00, 0x00, 0x40, 0x00, 0x40, 0x06, 0xb6, 0xcc, 0xc0, 0x00, 0x02,
        0x02, 0xc0, 0x00, 0x02, 0x01, 0x00, 0x50, 0xcb, 0x5c, 0x00, 0x00, 0x00, 0x00, 0xfd, 0x2f,
        0x16, 0xfa, 0x50, 0x14, 0x00, 0x00, 0x4b, 0xf6, 0x00, 0x00,
    ];

    /// A SYN over IPv6, 2001:db8::1:39918 to 2001:db8::2:443.
    static SYN_V6: [u8; 80] = [
        0x60, 0x00, 0x0e, 0x08, 0x00, 0x28, 0x06, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x9b, 0xee, 0x01, 0xbb, 0xf2,
        0x25, 0x71, 0x4f, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfd, 0x20, 0x8d, 0xeb, 0x00, 0x00,
        0x02, 0x04, 0x05, 0xa0, 0x04, 0x02, 0x08, 0x0a, 0x54, 0x64, 0x0c, 0x0d, 0x00, 0x00, 0x00,
        0x00, 0x01, 0x03, 0x03, 0x0a,
    ];

    fn segment(bytes: &[u8]) -> (Ipv4Addr, Ipv4Addr, &[u8]) {
        let ip = Ipv4Packet::new_checked(bytes).unwrap();
        (ip.src_addr(), ip.dst_addr(), ip.payload())
    }

    #[test]
    fn deconstruct_syn() {
        let (src, dst, bytes) = segment(&SYN_V4);
        let tcp = TcpPacket::new_checked(bytes).unwrap();
        assert_eq!(tcp.src_port(), 52060);
        assert_eq!(tcp.dst_port(), 80);
        assert_eq!(tcp.seq_number(), 4_247_721_721);
        assert_eq!(tcp.ack_number(), 0);
        assert_eq!(tcp.header_len(), 40);
        assert_eq!(tcp.flags(), TcpFlags::SYN);
        assert!(tcp.syn() && !tcp.ack() && !tcp.fin() && !tcp.rst());
        assert!(!tcp.psh() && !tcp.urg() && !tcp.ece() && !tcp.cwr());
        assert_eq!(tcp.window_len(), 64240);
        assert_eq!(tcp.checksum(), 0x7483);
        assert_eq!(tcp.urgent_at(), 0);
        assert!(tcp.verify_checksum_v4(src, dst));
        assert!(!tcp.verify_checksum_v4(src, Ipv4Addr::new(192, 0, 2, 3)));
        assert_eq!(tcp.options().len(), 20);
        assert!(tcp.payload().is_empty());

        let options: Vec<_> = tcp.options_iter().map(|o| o.unwrap()).collect();
        let kinds: Vec<_> = options.iter().map(|o| o.kind).collect();
        assert_eq!(
            kinds,
            [
                TcpOptionKind::MSS,
                TcpOptionKind::SACK_PERMITTED,
                TcpOptionKind::TIMESTAMP,
                TcpOptionKind::NOP,
                TcpOptionKind::WINDOW_SCALE
            ]
        );
        assert_eq!(options[0].mss(), Some(1460));
        assert_eq!(options[2].timestamp(), Some((3_474_498_966, 0)));
        assert_eq!(options[4].window_scale(), Some(10));
        assert_eq!(options[1].mss(), None);
        assert_eq!(options[0].window_scale(), None);
        assert_eq!(options[0].timestamp(), None);
        assert_eq!(
            TcpRepr::parse(&tcp).unwrap().to_string(),
            "TCP 52060 > 80: Flags [S], seq 4247721721, win 64240"
        );
    }

    #[test]
    fn deconstruct_rst_and_v6() {
        let (src, dst, bytes) = segment(&RST_V4);
        let tcp = TcpPacket::new_checked(bytes).unwrap();
        assert_eq!(tcp.flags(), TcpFlags::RST | TcpFlags::ACK);
        assert_eq!(tcp.flags().to_string(), "R.");
        assert_eq!(tcp.ack_number(), 4_247_721_722);
        assert_eq!(tcp.window_len(), 0);
        assert!(tcp.verify_checksum_v4(src, dst));
        assert_eq!(tcp.options_iter().count(), 0);

        let ip = Ipv6Packet::new_checked(&SYN_V6[..]).unwrap();
        let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
        assert_eq!((tcp.src_port(), tcp.dst_port()), (39918, 443));
        assert!(tcp.verify_checksum_v6(ip.src_addr(), ip.dst_addr()));
        assert!(!tcp.verify_checksum_v6(ip.src_addr(), Ipv6Addr::LOCALHOST));
        assert_eq!(
            tcp.options_iter().next().unwrap().unwrap().mss(),
            Some(1440)
        );
    }

    #[test]
    fn construct() {
        let (src, dst, bytes) = segment(&RST_V4);
        let repr = TcpRepr {
            src_port: 80,
            dst_port: 52060,
            seq_number: 0,
            ack_number: 4_247_721_722,
            flags: TcpFlags::RST | TcpFlags::ACK,
            window_len: 0,
            urgent_at: 0,
        };
        assert_eq!(TcpRepr::parse(&TcpPacket::new_unchecked(bytes)), Ok(repr));
        assert_eq!(repr.buffer_len(), 20);
        let mut buf = [0xa5u8; 20];
        let mut tcp = TcpPacket::new_unchecked(&mut buf[..]);
        repr.emit(&mut tcp);
        tcp.fill_checksum_v4(src, dst);
        assert_eq!(&buf[..], bytes);

        // The SYN, options included, rebuilt through setters.
        let (src, dst, bytes) = segment(&SYN_V4);
        let mut buf = [0u8; 40];
        let mut tcp = TcpPacket::new_unchecked(&mut buf[..]);
        tcp.set_src_port(52060);
        tcp.set_dst_port(80);
        tcp.set_seq_number(4_247_721_721);
        tcp.set_ack_number(0);
        tcp.set_header_len(40);
        tcp.set_flags(TcpFlags::SYN);
        tcp.set_window_len(64240);
        tcp.set_urgent_at(0);
        tcp.options_mut().copy_from_slice(&bytes[20..40]);
        tcp.fill_checksum_v4(src, dst);
        assert!(tcp.payload_mut().is_empty());
        assert_eq!(&buf[..], bytes);

        let ip = Ipv6Packet::new_checked(&SYN_V6[..]).unwrap();
        let mut buf = [0u8; 40];
        buf.copy_from_slice(ip.payload());
        let mut tcp = TcpPacket::new_unchecked(&mut buf[..]);
        tcp.set_checksum(0);
        tcp.fill_checksum_v6(ip.src_addr(), ip.dst_addr());
        assert_eq!(&buf[..], ip.payload());
    }

    #[test]
    fn truncated_and_bad_header_len() {
        let (_, _, bytes) = segment(&SYN_V4);
        for len in 0..bytes.len() {
            assert_eq!(
                TcpPacket::new_checked(&bytes[..len]),
                Err(Error::Truncated),
                "len {len}"
            );
        }
        for offset in 0..5u8 {
            let mut buf = [0u8; 40];
            buf.copy_from_slice(bytes);
            buf[12] = offset << 4;
            assert_eq!(TcpPacket::new_checked(&buf[..]), Err(Error::Malformed));
        }
        // Payload is whatever follows the header.
        let mut buf = [0u8; 44];
        buf[..40].copy_from_slice(bytes);
        let tcp = TcpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(tcp.payload().len(), 4);
    }

    #[test]
    fn malformed_options() {
        let collect = |options: &[u8]| -> Vec<Result<TcpOptionKind>> {
            TcpOptionsIter::new(options)
                .map(|o| o.map(|o| o.kind))
                .collect()
        };
        assert_eq!(
            collect(&[0x01, 0x02]),
            [Ok(TcpOptionKind::NOP), Err(Error::Malformed)]
        );
        assert_eq!(collect(&[0x02, 0x05, 0x05, 0xb4]), [Err(Error::Malformed)]);
        assert_eq!(collect(&[0x08, 0x01]), [Err(Error::Malformed)]);
        assert_eq!(
            collect(&[0x04, 0x02, 0x00, 0x01]),
            [Ok(TcpOptionKind::SACK_PERMITTED), Ok(TcpOptionKind::EOL)]
        );
        assert_eq!(collect(&[]), []);
        // A short MSS option parses as an option but not as an MSS.
        let option = TcpOptionsIter::new(&[0x02, 0x03, 0x05])
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(option.mss(), None);
    }

    #[test]
    fn flags() {
        let synack = TcpFlags::SYN | TcpFlags::ACK;
        assert!(synack.contains(TcpFlags::SYN) && synack.intersects(TcpFlags::ACK | TcpFlags::FIN));
        assert!(!synack.contains(TcpFlags::SYN | TcpFlags::FIN));
        assert_eq!(synack & !TcpFlags::ACK, TcpFlags::SYN);
        let mut flags = TcpFlags::empty();
        assert!(flags.is_empty());
        assert_eq!(flags.to_string(), "none");
        flags |= TcpFlags::PSH;
        flags |= TcpFlags::ACK;
        assert_eq!(flags.to_string(), "P.");
        assert_eq!(TcpFlags(0xff).to_string(), "FSRP.UEW");
        assert_eq!(format!("{synack:?}"), "TcpFlags(S.)");
        assert_eq!(synack.bits(), 0x12);
        assert_eq!(TcpOptionKind::SACK_PERMITTED.to_string(), "sackOK");
    }
}
