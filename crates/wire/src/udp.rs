//! UDP datagrams (RFC 768), with checksums over the IPv4 pseudo-header and
//! the IPv6 one (RFC 8200 section 8.1).
//!
//! The view is bounded by the UDP length field, not by the buffer, so that
//! Ethernet padding after a short datagram is not taken for payload.

use crate::checksum;
use crate::ip::IpProtocol;
use crate::network_endian::{read_u16, write_u16};
use crate::{Error, Result};
use core::fmt;
use core::net::{Ipv4Addr, Ipv6Addr};

/// Length of the header.
pub const HEADER_LEN: usize = 8;

mod field {
    use crate::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

/// A view of a UDP datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Length of the header.
    pub const HEADER_LEN: usize = HEADER_LEN;

    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> UdpPacket<T> {
        UdpPacket { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<UdpPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the header (else `Truncated`), that the
    /// length field covers at least the header (else `Malformed`), and that
    /// the buffer holds the length the field announces (else `Truncated`).
    /// Afterwards no accessor panics.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let buffer_len = self.buffer.as_ref().len();
        if buffer_len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let len = usize::from(self.len());
        if len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if buffer_len < len {
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

    /// The length field: header and payload, in bytes.
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// The checksum field; zero over IPv4 means "not computed".
    #[inline]
    pub fn checksum(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    #[inline]
    fn datagram(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.len())]
    }

    /// True if the checksum is right for this datagram sent from `src` to
    /// `dst` over IPv4, or if there is none (a zero field, RFC 768).
    #[inline]
    pub fn verify_checksum_v4(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let pseudo = checksum::pseudo_header_v4(src, dst, IpProtocol::UDP, self.len());
        checksum::combine(&[pseudo, checksum::data(self.datagram())]) == !0
    }

    /// True if the checksum is right for this datagram sent from `src` to
    /// `dst` over IPv6; a zero field is wrong there (RFC 8200 section 8.1).
    #[inline]
    pub fn verify_checksum_v6(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        if self.checksum() == 0 {
            return false;
        }
        let pseudo = checksum::pseudo_header_v6(src, dst, IpProtocol::UDP, u32::from(self.len()));
        checksum::combine(&[pseudo, checksum::data(self.datagram())]) == !0
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> UdpPacket<&'a T> {
    /// The payload, up to the length field.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
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

    /// Sets the length field. Call `check_len` again afterwards.
    #[inline]
    pub fn set_len(&mut self, len: u16) {
        write_u16(&mut self.buffer.as_mut()[field::LENGTH], len);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    /// Computes and writes the checksum for IPv4. A computed zero is sent
    /// as `0xffff`, zero meaning "none" (RFC 768).
    #[inline]
    pub fn fill_checksum_v4(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let pseudo = checksum::pseudo_header_v4(src, dst, IpProtocol::UDP, self.len());
        let sum = !checksum::combine(&[pseudo, checksum::data(self.datagram())]);
        self.set_checksum(if sum == 0 { 0xffff } else { sum });
    }

    /// Computes and writes the checksum for IPv6 (mandatory there).
    #[inline]
    pub fn fill_checksum_v6(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let pseudo = checksum::pseudo_header_v6(src, dst, IpProtocol::UDP, u32::from(self.len()));
        let sum = !checksum::combine(&[pseudo, checksum::data(self.datagram())]);
        self.set_checksum(if sum == 0 { 0xffff } else { sum });
    }

    /// The payload, up to the length field, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for UdpPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The fields of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Length of the payload; at most 65527.
    pub payload_len: usize,
}

impl UdpRepr {
    /// Reads the header. The checksum needs the IP addresses: check it with
    /// [`UdpPacket::verify_checksum_v4`] or [`UdpPacket::verify_checksum_v6`].
    pub fn parse<T: AsRef<[u8]>>(packet: &UdpPacket<T>) -> Result<UdpRepr> {
        packet.check_len()?;
        Ok(UdpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: usize::from(packet.len()) - HEADER_LEN,
        })
    }

    /// The number of bytes [`emit`](Self::emit) writes: the header.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header with a zero checksum. Write the payload, then call
    /// [`UdpPacket::fill_checksum_v4`] or [`UdpPacket::fill_checksum_v6`].
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut UdpPacket<T>) {
        debug_assert!(self.payload_len <= usize::from(u16::MAX) - HEADER_LEN);
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len((HEADER_LEN + self.payload_len) as u16);
        packet.set_checksum(0);
    }
}

impl fmt::Display for UdpRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "UDP {} > {}, length {}",
            self.src_port, self.dst_port, self.payload_len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv4::Ipv4Packet;
    use crate::ipv6::Ipv6Packet;

    /// A DNS query for example.com (A, RD) from 192.0.2.1:53000 to
    /// 192.0.2.2:53, sent by Linux (captured with tcpdump).
    static DNS_QUERY_V4: [u8; 57] = [
        0x45, 0x00, 0x00, 0x39, 0x16, 0xcf, 0x40, 0x00, 0x40, 0x11, 0x9f, 0xe1, 0xc0, 0x00, 0x02,
        0x01, 0xc0, 0x00, 0x02, 0x02, 0xcf, 0x08, 0x00, 0x35, 0x00, 0x25, 0xc2, 0xc9, 0x1a, 0x2b,
        0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x65, 0x78, 0x61, 0x6d,
        0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d, 0x00, 0x00, 0x01, 0x00, 0x01,
    ];

    /// The same query over IPv6, 2001:db8::1 to 2001:db8::2.
    static DNS_QUERY_V6: [u8; 77] = [
        0x60, 0x08, 0xf0, 0x1a, 0x00, 0x25, 0x11, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xcf, 0x08, 0x00, 0x35, 0x00,
        0x25, 0xeb, 0x58, 0x1a, 0x2b, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x07, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d, 0x00, 0x00, 0x01,
        0x00, 0x01,
    ];

    const DNS_PAYLOAD_LEN: usize = 29;

    fn v4() -> (Ipv4Addr, Ipv4Addr, &'static [u8]) {
        let ip = Ipv4Packet::new_checked(&DNS_QUERY_V4[..]).unwrap();
        (ip.src_addr(), ip.dst_addr(), ip.payload())
    }

    #[test]
    fn deconstruct() {
        let (src, dst, bytes) = v4();
        let udp = UdpPacket::new_checked(bytes).unwrap();
        assert_eq!(udp.src_port(), 53000);
        assert_eq!(udp.dst_port(), 53);
        assert_eq!(udp.len(), 37);
        assert_eq!(udp.checksum(), 0xc2c9);
        assert!(udp.verify_checksum_v4(src, dst));
        assert!(!udp.verify_checksum_v4(dst, Ipv4Addr::new(192, 0, 2, 3)));
        assert_eq!(udp.payload().len(), DNS_PAYLOAD_LEN);
        assert_eq!(&udp.payload()[..2], &[0x1a, 0x2b]);
        assert_eq!(
            UdpRepr::parse(&udp),
            Ok(UdpRepr {
                src_port: 53000,
                dst_port: 53,
                payload_len: DNS_PAYLOAD_LEN
            })
        );

        let ip = Ipv6Packet::new_checked(&DNS_QUERY_V6[..]).unwrap();
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert_eq!(udp.checksum(), 0xeb58);
        assert!(udp.verify_checksum_v6(ip.src_addr(), ip.dst_addr()));
        assert!(!udp.verify_checksum_v6(ip.src_addr(), Ipv6Addr::LOCALHOST));
        assert_eq!(udp.payload(), &DNS_QUERY_V4[28..]);
    }

    #[test]
    fn construct() {
        let (src, dst, bytes) = v4();
        let repr = UdpRepr {
            src_port: 53000,
            dst_port: 53,
            payload_len: DNS_PAYLOAD_LEN,
        };
        assert_eq!(repr.buffer_len(), 8);
        assert_eq!(repr.to_string(), "UDP 53000 > 53, length 29");
        let mut buf = [0xa5u8; 37];
        let mut udp = UdpPacket::new_unchecked(&mut buf[..]);
        repr.emit(&mut udp);
        assert_eq!(udp.checksum(), 0);
        udp.payload_mut().copy_from_slice(&bytes[8..]);
        udp.fill_checksum_v4(src, dst);
        assert_eq!(&buf[..], bytes);

        let ip = Ipv6Packet::new_checked(&DNS_QUERY_V6[..]).unwrap();
        let mut udp = UdpPacket::new_unchecked(&mut buf[..]);
        udp.fill_checksum_v6(ip.src_addr(), ip.dst_addr());
        assert_eq!(&buf[..], ip.payload());
    }

    #[test]
    fn zero_checksum() {
        let (src, dst, bytes) = v4();
        let mut buf = [0u8; 37];
        buf.copy_from_slice(bytes);
        let mut udp = UdpPacket::new_unchecked(&mut buf[..]);
        udp.set_checksum(0);
        assert!(udp.verify_checksum_v4(src, dst));
        assert!(!udp.verify_checksum_v6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST));
        // A datagram whose checksum computes to zero is sent as 0xffff:
        // adjust the payload so the sum lands exactly there.
        udp.fill_checksum_v4(src, dst);
        let sum = udp.checksum();
        // (The payload starts on an even offset, so its first two bytes
        // are one 16-bit word of the sum.)
        let word = u16::from_be_bytes([udp.payload_mut()[0], udp.payload_mut()[1]]);
        let patched = checksum::combine(&[word, sum]);
        udp.payload_mut()[..2].copy_from_slice(&patched.to_be_bytes());
        udp.fill_checksum_v4(src, dst);
        assert_eq!(udp.checksum(), 0xffff);
        assert!(udp.verify_checksum_v4(src, dst));
    }

    #[test]
    fn truncated_malformed_overlong() {
        let (_, _, bytes) = v4();
        for len in 0..bytes.len() {
            assert_eq!(
                UdpPacket::new_checked(&bytes[..len]),
                Err(Error::Truncated),
                "len {len}"
            );
        }
        let mut buf = [0u8; 48];
        buf[..37].copy_from_slice(bytes);
        let udp = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(udp.payload().len(), DNS_PAYLOAD_LEN);
        for bad_len in 0..8u16 {
            let mut udp = UdpPacket::new_unchecked(&mut buf[..]);
            udp.set_len(bad_len);
            assert_eq!(udp.check_len(), Err(Error::Malformed));
        }
    }

    #[test]
    fn setters() {
        let mut buf = [0u8; 8];
        let mut udp = UdpPacket::new_unchecked(&mut buf[..]);
        udp.set_src_port(67);
        udp.set_dst_port(68);
        udp.set_len(8);
        udp.set_checksum(0xbeef);
        assert_eq!(buf, [0x00, 0x43, 0x00, 0x44, 0x00, 0x08, 0xbe, 0xef]);
        let udp = UdpPacket::new_checked(&buf[..]).unwrap();
        assert!(udp.payload().is_empty());
        assert_eq!(udp.into_inner(), &buf[..]);
    }
}
