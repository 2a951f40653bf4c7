//! IPv6 headers (RFC 8200 section 3) and IPv6 prefixes (RFC 4291 section
//! 2.3).
//!
//! Only the fixed 40-byte header is viewed; extension headers are the
//! payload, named by [`Ipv6Packet::next_header`]. A payload length of zero
//! with a Hop-by-Hop header would announce a jumbogram (RFC 2675); bricks
//! does not forward those, and the view treats the payload as empty.

use crate::network_endian::{read_u16, read_u32, write_u16, write_u32};
use crate::{AddressParseError, Error, Result};
use core::fmt;
use core::net::Ipv6Addr;
use core::str::FromStr;

pub use crate::ip::IpProtocol;

/// Length of the fixed header.
pub const HEADER_LEN: usize = 40;
/// The smallest MTU every IPv6 link must carry (RFC 8200 section 5).
pub const MIN_MTU: usize = 1280;

mod field {
    use crate::{Field, Rest};
    pub const VER_TC_FLOW: Field = 0..4;
    pub const LENGTH: Field = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Field = 8..24;
    pub const DST_ADDR: Field = 24..40;
    pub const PAYLOAD: Rest = 40..;
}

const FLOW_LABEL_MASK: u32 = 0x000f_ffff;

/// A view of an IPv6 packet: fixed header and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

#[inline(always)]
fn read_addr(field: &[u8]) -> Ipv6Addr {
    let mut octets = [0u8; 16];
    octets.copy_from_slice(&field[..16]);
    Ipv6Addr::from(octets)
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Length of the fixed header.
    pub const HEADER_LEN: usize = HEADER_LEN;

    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Ipv6Packet<T> {
        Ipv6Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Ipv6Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the fixed header and the payload length
    /// it announces. Afterwards no accessor panics. Bytes past the payload
    /// (Ethernet padding) are allowed and ignored. The version is not
    /// checked here.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN || len < HEADER_LEN + usize::from(self.payload_len()) {
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

    #[inline]
    fn ver_tc_flow(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::VER_TC_FLOW])
    }

    /// The version field; 6 for a valid packet.
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// The traffic class: DSCP and ECN (RFC 2474, RFC 3168).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (self.ver_tc_flow() >> 20) as u8
    }

    /// Differentiated services code point.
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// Explicit congestion notification.
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 0x03
    }

    /// The 20-bit flow label (RFC 6437).
    #[inline]
    pub fn flow_label(&self) -> u32 {
        self.ver_tc_flow() & FLOW_LABEL_MASK
    }

    /// The payload length: everything after the fixed header, extension
    /// headers included.
    #[inline]
    pub fn payload_len(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// The type of the header after this one.
    #[inline]
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NXT_HDR])
    }

    /// The hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// The source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv6Addr {
        read_addr(&self.buffer.as_ref()[field::SRC_ADDR])
    }

    /// The destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv6Addr {
        read_addr(&self.buffer.as_ref()[field::DST_ADDR])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv6Packet<&'a T> {
    /// The payload, `payload_len` bytes after the fixed header.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    #[inline]
    fn set_ver_tc_flow(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::VER_TC_FLOW], value);
    }

    /// Sets the version field.
    #[inline]
    pub fn set_version(&mut self, version: u8) {
        let byte = &mut self.buffer.as_mut()[0];
        *byte = (*byte & 0x0f) | (version << 4);
    }

    /// Sets the traffic class.
    #[inline]
    pub fn set_traffic_class(&mut self, tc: u8) {
        let word = (self.ver_tc_flow() & 0xf00f_ffff) | (u32::from(tc) << 20);
        self.set_ver_tc_flow(word);
    }

    /// Sets the DSCP; bits above the low six are ignored.
    #[inline]
    pub fn set_dscp(&mut self, dscp: u8) {
        self.set_traffic_class((self.traffic_class() & 0x03) | (dscp << 2));
    }

    /// Sets the ECN field; bits above the low two are ignored.
    #[inline]
    pub fn set_ecn(&mut self, ecn: u8) {
        self.set_traffic_class((self.traffic_class() & 0xfc) | (ecn & 0x03));
    }

    /// Sets the flow label; bits above the low twenty are ignored.
    #[inline]
    pub fn set_flow_label(&mut self, label: u32) {
        let word = (self.ver_tc_flow() & !FLOW_LABEL_MASK) | (label & FLOW_LABEL_MASK);
        self.set_ver_tc_flow(word);
    }

    /// Sets the payload length. Call `check_len` again afterwards.
    #[inline]
    pub fn set_payload_len(&mut self, len: u16) {
        write_u16(&mut self.buffer.as_mut()[field::LENGTH], len);
    }

    /// Sets the next header type.
    #[inline]
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.buffer.as_mut()[field::NXT_HDR] = value.0;
    }

    /// Sets the hop limit.
    #[inline]
    pub fn set_hop_limit(&mut self, value: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = value;
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&addr.octets());
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: Ipv6Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&addr.octets());
    }

    /// The payload, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[field::PAYLOAD.start..end]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Ipv6Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The fields of an IPv6 fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    /// Source address.
    pub src_addr: Ipv6Addr,
    /// Destination address.
    pub dst_addr: Ipv6Addr,
    /// Type of the next header.
    pub next_header: IpProtocol,
    /// Length of everything after the fixed header.
    pub payload_len: usize,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class (DSCP and ECN).
    pub traffic_class: u8,
    /// Flow label, 20 bits.
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Reads the fixed header; a version other than 6 is `Malformed`.
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv6Packet<T>) -> Result<Ipv6Repr> {
        packet.check_len()?;
        if packet.version() != 6 {
            return Err(Error::Malformed);
        }
        Ok(Ipv6Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    /// The number of bytes [`emit`](Self::emit) writes: the fixed header.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the fixed header; the payload is the caller's to write.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv6Packet<T>) {
        debug_assert!(self.payload_len <= usize::from(u16::MAX));
        packet.set_ver_tc_flow(
            (6 << 28) | (u32::from(self.traffic_class) << 20) | (self.flow_label & FLOW_LABEL_MASK),
        );
        packet.set_payload_len(self.payload_len as u16);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

impl fmt::Display for Ipv6Repr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IPv6 {} > {}: {}, hlim {}, payload length {}",
            self.src_addr, self.dst_addr, self.next_header, self.hop_limit, self.payload_len
        )
    }
}

/// An IPv6 prefix: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ipv6Cidr {
    address: Ipv6Addr,
    prefix_len: u8,
}

impl Ipv6Cidr {
    /// A prefix from an address and a length.
    ///
    /// # Panics
    /// If `prefix_len` is greater than 128.
    pub const fn new(address: Ipv6Addr, prefix_len: u8) -> Ipv6Cidr {
        assert!(prefix_len <= 128, "IPv6 prefix length above 128");
        Ipv6Cidr {
            address,
            prefix_len,
        }
    }

    /// The address, host bits included.
    #[inline]
    pub const fn address(&self) -> Ipv6Addr {
        self.address
    }

    /// The prefix length, 0..=128.
    #[inline]
    pub const fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    #[inline]
    const fn mask(&self) -> u128 {
        match u128::MAX.checked_shl(128 - self.prefix_len as u32) {
            Some(mask) => mask,
            None => 0,
        }
    }

    /// The netmask, `ffff:ffff::` for a /32.
    #[inline]
    pub const fn netmask(&self) -> Ipv6Addr {
        Ipv6Addr::from_bits(self.mask())
    }

    /// The prefix with the host bits cleared.
    #[inline]
    pub const fn network(&self) -> Ipv6Cidr {
        Ipv6Cidr {
            address: Ipv6Addr::from_bits(self.address.to_bits() & self.mask()),
            prefix_len: self.prefix_len,
        }
    }

    /// True if `addr` is within the prefix.
    #[inline]
    pub const fn contains_addr(&self, addr: &Ipv6Addr) -> bool {
        (addr.to_bits() ^ self.address.to_bits()) & self.mask() == 0
    }

    /// True if `other` is within this prefix (equal or more specific).
    #[inline]
    pub const fn contains_subnet(&self, other: &Ipv6Cidr) -> bool {
        self.prefix_len <= other.prefix_len && self.contains_addr(&other.address)
    }
}

impl fmt::Display for Ipv6Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix_len)
    }
}

impl FromStr for Ipv6Cidr {
    type Err = AddressParseError;

    /// Reads `ADDRESS/LENGTH`, such as `2001:db8::/32`.
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        let (addr, len) = s.split_once('/').ok_or(AddressParseError::PrefixLen)?;
        let address = addr
            .parse::<Ipv6Addr>()
            .map_err(|_| AddressParseError::Ipv6Address)?;
        let prefix_len = crate::ipv4::parse_prefix_len(len, 128)?;
        Ok(Ipv6Cidr {
            address,
            prefix_len,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `ping -6 -s 16 2001:db8::2` on Linux: an ICMPv6 echo request with
    /// flow label 0x563b1 (captured with tcpdump, Ethernet header removed).
    pub(crate) static ECHO_REQUEST: [u8; 64] = [
        0x60, 0x05, 0x63, 0xb1, 0x00, 0x18, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x80, 0x00, 0xd0, 0xa6, 0x11,
        0x0b, 0x00, 0x01, 0x3a, 0x57, 0x02, 0x6b, 0x00, 0x00, 0x00, 0x00, 0xf7, 0xc2, 0x0e, 0x00,
        0x00, 0x00, 0x00, 0x00,
    ];

    pub(crate) const SRC: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    pub(crate) const DST: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);

    fn echo_repr() -> Ipv6Repr {
        Ipv6Repr {
            src_addr: SRC,
            dst_addr: DST,
            next_header: IpProtocol::ICMPV6,
            payload_len: 24,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0x563b1,
        }
    }

    #[test]
    fn deconstruct() {
        let packet = Ipv6Packet::new_checked(&ECHO_REQUEST[..]).unwrap();
        assert_eq!(packet.version(), 6);
        assert_eq!(packet.traffic_class(), 0);
        assert_eq!((packet.dscp(), packet.ecn()), (0, 0));
        assert_eq!(packet.flow_label(), 0x563b1);
        assert_eq!(packet.payload_len(), 24);
        assert_eq!(packet.next_header(), IpProtocol::ICMPV6);
        assert_eq!(packet.hop_limit(), 64);
        assert_eq!(packet.src_addr(), SRC);
        assert_eq!(packet.dst_addr(), DST);
        assert_eq!(packet.payload(), &ECHO_REQUEST[40..]);
        assert_eq!(Ipv6Repr::parse(&packet), Ok(echo_repr()));
    }

    #[test]
    fn construct() {
        let repr = echo_repr();
        assert_eq!(repr.buffer_len(), 40);
        let mut bytes = [0xa5u8; 64];
        let mut packet = Ipv6Packet::new_unchecked(&mut bytes[..]);
        repr.emit(&mut packet);
        packet.payload_mut().copy_from_slice(&ECHO_REQUEST[40..]);
        assert_eq!(bytes, ECHO_REQUEST);
        assert_eq!(
            repr.to_string(),
            "IPv6 2001:db8::1 > 2001:db8::2: ICMPv6, hlim 64, payload length 24"
        );
    }

    #[test]
    fn setters() {
        let mut bytes = ECHO_REQUEST;
        let mut packet = Ipv6Packet::new_unchecked(&mut bytes[..]);
        packet.set_traffic_class(0xb8);
        assert_eq!(
            (packet.dscp(), packet.ecn(), packet.flow_label()),
            (46, 0, 0x563b1)
        );
        packet.set_ecn(3);
        packet.set_dscp(10);
        assert_eq!(packet.traffic_class(), 0x2b);
        packet.set_flow_label(0xfff_ffff);
        assert_eq!(packet.flow_label(), 0xf_ffff);
        assert_eq!((packet.version(), packet.traffic_class()), (6, 0x2b));
        packet.set_version(4);
        assert_eq!(packet.version(), 4);
        assert_eq!(Ipv6Repr::parse(&packet), Err(Error::Malformed));
        packet.set_version(6);
        packet.set_hop_limit(1);
        packet.set_next_header(IpProtocol::UDP);
        packet.set_src_addr(DST);
        packet.set_dst_addr(Ipv6Addr::LOCALHOST);
        packet.set_payload_len(0);
        assert_eq!(packet.hop_limit(), 1);
        assert_eq!(packet.next_header(), IpProtocol::UDP);
        assert_eq!(packet.src_addr(), DST);
        assert_eq!(packet.dst_addr(), Ipv6Addr::LOCALHOST);
        assert!(packet.payload_mut().is_empty());
    }

    #[test]
    fn truncated_and_overlong() {
        for len in 0..ECHO_REQUEST.len() {
            assert_eq!(
                Ipv6Packet::new_checked(&ECHO_REQUEST[..len]),
                Err(Error::Truncated)
            );
        }
        let mut padded = [0u8; 80];
        padded[..64].copy_from_slice(&ECHO_REQUEST);
        let packet = Ipv6Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(packet.payload(), &ECHO_REQUEST[40..]);
    }

    #[test]
    fn cidr() {
        let cidr: Ipv6Cidr = "2001:db8::/32".parse().unwrap();
        assert_eq!(cidr.prefix_len(), 32);
        assert_eq!(cidr.netmask(), "ffff:ffff::".parse::<Ipv6Addr>().unwrap());
        assert!(cidr.contains_addr(&SRC));
        assert!(!cidr.contains_addr(&"2001:db9::1".parse().unwrap()));
        assert_eq!(cidr.to_string(), "2001:db8::/32");
        let host = Ipv6Cidr::new(SRC, 64);
        assert_eq!(host.address(), SRC);
        assert_eq!(host.network().to_string(), "2001:db8::/64");
        assert!(cidr.contains_subnet(&host) && !host.contains_subnet(&cidr));
        let all: Ipv6Cidr = "::/0".parse().unwrap();
        assert!(all.contains_addr(&Ipv6Addr::LOCALHOST));
        assert_eq!(all.netmask(), Ipv6Addr::UNSPECIFIED);
        let one: Ipv6Cidr = "::1/128".parse().unwrap();
        assert!(one.contains_addr(&Ipv6Addr::LOCALHOST) && !one.contains_addr(&SRC));

        assert_eq!(
            "2001:db8::".parse::<Ipv6Cidr>(),
            Err(AddressParseError::PrefixLen)
        );
        assert_eq!(
            "2001:db8::/129".parse::<Ipv6Cidr>(),
            Err(AddressParseError::PrefixLen)
        );
        assert_eq!(
            "2001:db8:::/32".parse::<Ipv6Cidr>(),
            Err(AddressParseError::Ipv6Address)
        );
        assert_eq!(
            "10.0.0.0/8".parse::<Ipv6Cidr>(),
            Err(AddressParseError::Ipv6Address)
        );
    }
}
