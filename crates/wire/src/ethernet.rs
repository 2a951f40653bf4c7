//! Ethernet II frames (IEEE 802.3 clause 3.2.6 with a type field; the
//! encapsulation of RFC 894): the first header of every packet bricks
//! receives.
//!
//! The frame check sequence is not part of the view: devices strip it on
//! receive and add it on transmit. A frame shorter than 60 bytes is padded
//! on the wire, so the payload may hold trailing zeros that the next header's
//! length field, not the frame, delimits.

use crate::network_endian::{read_u16, write_u16};
use crate::{AddressParseError, Error, Result};
use core::fmt;
use core::str::FromStr;

/// A 48-bit IEEE 802 MAC address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);
    /// `00:00:00:00:00:00`, as in the target of an ARP request.
    pub const UNSPECIFIED: EthernetAddress = EthernetAddress([0; 6]);

    /// The six octets.
    #[inline]
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// True for `ff:ff:ff:ff:ff:ff`.
    #[inline]
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// True for group addresses, the broadcast address among them: the I/G
    /// bit, the least significant bit of the first octet, is set.
    #[inline]
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// True for individual (unicast) addresses.
    #[inline]
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// True for locally administered addresses (the U/L bit is set).
    #[inline]
    pub const fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }
}

impl From<[u8; 6]> for EthernetAddress {
    #[inline]
    fn from(octets: [u8; 6]) -> Self {
        EthernetAddress(octets)
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Debug for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for EthernetAddress {
    type Err = AddressParseError;

    /// Reads `00:11:22:33:44:55` or `00-11-22-33-44-55` (one separator
    /// throughout; one or two hex digits per octet, either case).
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        let err = AddressParseError::EthernetAddress;
        let sep = if s.contains(':') { ':' } else { '-' };
        let mut octets = [0u8; 6];
        let mut parts = s.split(sep);
        for octet in octets.iter_mut() {
            let part = parts.next().ok_or(err)?;
            if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(err);
            }
            *octet = u8::from_str_radix(part, 16).map_err(|_| err)?;
        }
        if parts.next().is_some() {
            return Err(err);
        }
        Ok(EthernetAddress(octets))
    }
}

number_with_names! {
    /// The type field of an Ethernet II frame (IEEE registry of EtherTypes).
    pub struct EtherType(u16), unknown as "{:#06x}" {
        /// Internet Protocol version 4 (RFC 894).
        IPV4 = 0x0800, "IPv4";
        /// Address Resolution Protocol (RFC 826).
        ARP = 0x0806, "ARP";
        /// IEEE 802.1Q VLAN tag (C-tag).
        VLAN = 0x8100, "802.1Q";
        /// Internet Protocol version 6 (RFC 2464).
        IPV6 = 0x86dd, "IPv6";
        /// MPLS unicast (RFC 3032 section 5).
        MPLS_UNICAST = 0x8847, "MPLS";
        /// MPLS multicast (RFC 5332).
        MPLS_MULTICAST = 0x8848, "MPLS-multicast";
        /// IEEE 802.1ad service tag (S-tag, "QinQ").
        QINQ = 0x88a8, "802.1ad";
    }
}

impl EtherType {
    /// True for values below 0x0600, which are an IEEE 802.3 length, not a
    /// type: the frame carries LLC, not a protocol bricks forwards.
    #[inline]
    pub const fn is_length(self) -> bool {
        self.0 < 0x0600
    }
}

/// Length of the Ethernet II header.
pub const HEADER_LEN: usize = 14;

mod field {
    use crate::{Field, Rest};
    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: Rest = 14..;
}

/// A view of an Ethernet II frame (RFC 894).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Length of the Ethernet II header.
    pub const HEADER_LEN: usize = HEADER_LEN;

    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> EthernetFrame<T> {
        EthernetFrame { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<EthernetFrame<T>> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// Checks that the buffer holds the 14-byte header. Afterwards no
    /// accessor panics.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The destination address.
    #[inline]
    pub fn dst_addr(&self) -> EthernetAddress {
        read_addr(&self.buffer.as_ref()[field::DESTINATION])
    }

    /// The source address.
    #[inline]
    pub fn src_addr(&self) -> EthernetAddress {
        read_addr(&self.buffer.as_ref()[field::SOURCE])
    }

    /// The EtherType of the payload.
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType(read_u16(&self.buffer.as_ref()[field::ETHERTYPE]))
    }
}

#[inline(always)]
fn read_addr(field: &[u8]) -> EthernetAddress {
    EthernetAddress([field[0], field[1], field[2], field[3], field[4], field[5]])
}

impl<'a, T: AsRef<[u8]> + ?Sized> EthernetFrame<&'a T> {
    /// Everything after the header, padding included.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&addr.0);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&addr.0);
    }

    /// Sets the EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        write_u16(&mut self.buffer.as_mut()[field::ETHERTYPE], ethertype.0);
    }

    /// Everything after the header, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for EthernetFrame<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The fields of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    /// Source address.
    pub src_addr: EthernetAddress,
    /// Destination address.
    pub dst_addr: EthernetAddress,
    /// EtherType of the payload.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Reads the header of a frame.
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<EthernetRepr> {
        frame.check_len()?;
        Ok(EthernetRepr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// The number of bytes [`emit`](Self::emit) writes: the header only.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

impl fmt::Display for EthernetRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} > {}, ethertype {}",
            self.src_addr, self.dst_addr, self.ethertype
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An ARP request as Linux sends it from a veth: 192.0.2.1 asks for
    /// 192.0.2.2 (captured with tcpdump; no padding, as captured on the
    /// sending side of a veth pair).
    pub(crate) static ARP_REQUEST_FRAME: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x5e, 0x10, 0x00, 0x01, 0x08, 0x06, 0x00,
        0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x5e, 0x10, 0x00, 0x01, 0xc0, 0x00,
        0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x02, 0x02,
    ];

    /// A TCP RST from a real capture, padded to the 60-byte Ethernet
    /// minimum with six trailing zeros that belong to no header.
    static PADDED_TCP_FRAME: [u8; 60] = [
        0xbc, 0x30, 0x5b, 0xe8, 0xd3, 0x49, 0xb8, 0xac, 0x6f, 0x92, 0xd5, 0xbf, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x28, 0x00, 0x00, 0x40, 0x00, 0x40, 0x06, 0x3f, 0x9f, 0xac, 0x11, 0x51, 0xc5,
        0xac, 0x11, 0x51, 0x49, 0x00, 0x63, 0x9a, 0xef, 0x00, 0x00, 0x00, 0x00, 0x2e, 0xc1, 0x27,
        0x83, 0x50, 0x14, 0x00, 0x00, 0xc3, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn deconstruct() {
        let frame = EthernetFrame::new_checked(&ARP_REQUEST_FRAME[..]).unwrap();
        assert_eq!(frame.dst_addr(), EthernetAddress::BROADCAST);
        assert_eq!(
            frame.src_addr(),
            EthernetAddress([0x02, 0x00, 0x5e, 0x10, 0x00, 0x01])
        );
        assert_eq!(frame.ethertype(), EtherType::ARP);
        assert_eq!(frame.payload(), &ARP_REQUEST_FRAME[14..]);
        assert_eq!(frame.payload().len(), 28);

        let frame = EthernetFrame::new_checked(&PADDED_TCP_FRAME[..]).unwrap();
        assert_eq!(frame.dst_addr().to_string(), "bc:30:5b:e8:d3:49");
        assert_eq!(frame.src_addr().to_string(), "b8:ac:6f:92:d5:bf");
        assert_eq!(frame.ethertype(), EtherType::IPV4);
        assert_eq!(frame.payload().len(), 46);
    }

    #[test]
    fn construct() {
        let repr = EthernetRepr {
            src_addr: EthernetAddress([0x02, 0x00, 0x5e, 0x10, 0x00, 0x01]),
            dst_addr: EthernetAddress::BROADCAST,
            ethertype: EtherType::ARP,
        };
        let mut bytes = [0u8; 42];
        let mut frame = EthernetFrame::new_unchecked(&mut bytes[..]);
        repr.emit(&mut frame);
        frame
            .payload_mut()
            .copy_from_slice(&ARP_REQUEST_FRAME[14..]);
        assert_eq!(bytes, ARP_REQUEST_FRAME);
        assert_eq!(repr.buffer_len(), 14);
        assert_eq!(
            EthernetRepr::parse(&EthernetFrame::new_unchecked(&ARP_REQUEST_FRAME[..])),
            Ok(repr)
        );
        assert_eq!(
            repr.to_string(),
            "02:00:5e:10:00:01 > ff:ff:ff:ff:ff:ff, ethertype ARP"
        );
    }

    #[test]
    fn truncated() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                EthernetFrame::new_checked(&ARP_REQUEST_FRAME[..len]),
                Err(Error::Truncated)
            );
            assert_eq!(
                EthernetRepr::parse(&EthernetFrame::new_unchecked(&ARP_REQUEST_FRAME[..len])),
                Err(Error::Truncated)
            );
        }
        let frame = EthernetFrame::new_checked(&ARP_REQUEST_FRAME[..HEADER_LEN]).unwrap();
        assert!(frame.payload().is_empty());
    }

    #[test]
    fn address_classes() {
        let bcast = EthernetAddress::BROADCAST;
        assert!(bcast.is_broadcast() && bcast.is_multicast() && !bcast.is_unicast());
        let mcast = EthernetAddress([0x33, 0x33, 0xff, 0x00, 0x00, 0x02]);
        assert!(!mcast.is_broadcast() && mcast.is_multicast() && !mcast.is_unicast());
        let ucast = EthernetAddress([0x00, 0x1f, 0xca, 0xb3, 0x76, 0x40]);
        assert!(ucast.is_unicast() && !ucast.is_multicast() && !ucast.is_local());
        assert!(EthernetAddress([0x02, 0, 0, 0, 0, 1]).is_local());
    }

    #[test]
    fn address_text() {
        let addr = EthernetAddress([0x00, 0x11, 0x22, 0x33, 0x44, 0x55]);
        assert_eq!(addr.to_string(), "00:11:22:33:44:55");
        assert_eq!(format!("{addr:?}"), "00:11:22:33:44:55");
        assert_eq!("00:11:22:33:44:55".parse(), Ok(addr));
        assert_eq!("00-11-22-33-44-55".parse(), Ok(addr));
        assert_eq!("0:11:22:33:44:55".parse(), Ok(addr));
        assert_eq!(
            "AA:bb:CC:dd:EE:ff".parse(),
            Ok(EthernetAddress([0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]))
        );
        for bad in [
            "",
            "00:11:22:33:44",
            "00:11:22:33:44:55:66",
            "00:11:22:33:44:5g",
            "00:11-22:33:44:55",
            "00:11:22:33:44:",
            "000:11:22:33:44:55",
            "+0:11:22:33:44:55",
            "001122334455",
        ] {
            assert_eq!(
                bad.parse::<EthernetAddress>(),
                Err(AddressParseError::EthernetAddress),
                "{bad}"
            );
        }
    }

    #[test]
    fn ethertype_names() {
        assert_eq!(EtherType::from(0x86dd), EtherType::IPV6);
        assert_eq!(EtherType::QINQ.0, 0x88a8);
        assert_eq!(EtherType::MPLS_UNICAST.0, 0x8847);
        assert_eq!(EtherType::MPLS_MULTICAST.0, 0x8848);
        assert_eq!(EtherType::VLAN.to_string(), "802.1Q");
        assert_eq!(EtherType(0x88cc).to_string(), "0x88cc");
        assert!(EtherType(0x05dc).is_length());
        assert!(!EtherType::IPV4.is_length());
    }
}
