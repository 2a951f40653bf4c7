//! What the IPv4 elements share: where a packet's IP header is, the option
//! type octets they act on (RFC 791 section 3.1), how addresses are
//! classified (RFC 1812 sections 4.2.2.11 and 5.3.7), and the lists of
//! addresses and prefixes their arguments take.

use bricks_element::{FromArg, Packet};
use bricks_packet::Timestamp;
use bricks_wire::Ipv4Cidr;
use std::net::Ipv4Addr;

/// End of option list.
pub(crate) const IPOPT_EOL: u8 = 0;
/// No operation (padding between options).
pub(crate) const IPOPT_NOP: u8 = 1;
/// Record Route.
pub(crate) const IPOPT_RR: u8 = 7;
/// Internet Timestamp.
pub(crate) const IPOPT_TS: u8 = 68;
/// Loose Source and Record Route.
pub(crate) const IPOPT_LSRR: u8 = 131;
/// Strict Source and Record Route.
pub(crate) const IPOPT_SSRR: u8 = 137;

/// The IP protocol number of ICMP.
pub(crate) const PROTO_ICMP: u8 = 1;

/// Bytes of the frame in front of the IP header (an Ethernet header the
/// configuration did not strip), empty when the header starts the frame or
/// when no element located it.
#[inline]
pub(crate) fn prefix_len(p: &Packet) -> usize {
    match p.anno().l3_offset() {
        Some(_) => p.network_header_offset().unwrap_or(0).min(p.len()),
        None => 0,
    }
}

/// Reads a big-endian 16-bit word at `at`; the caller has checked bounds.
#[inline(always)]
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// Reads a big-endian 32-bit word at `at`; the caller has checked bounds.
#[inline(always)]
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Whether `addr` (host order) is a class D (multicast) or class E
/// (reserved, which includes the limited broadcast 255.255.255.255)
/// address: never the source of a datagram (RFC 1812 section 5.3.7,
/// RFC 1122 section 3.2.1.3).
#[inline(always)]
pub(crate) const fn is_multicast_or_reserved(addr: u32) -> bool {
    addr >= 0xe000_0000
}

/// Whether `addr` (host order) is a class D multicast address.
#[inline(always)]
pub(crate) const fn is_multicast(addr: u32) -> bool {
    addr & 0xf000_0000 == 0xe000_0000
}

/// Milliseconds since midnight UT, the unit of the IP Timestamp option
/// (RFC 791 section 3.1, "Internet Timestamp").
#[inline]
pub(crate) fn ms_since_midnight(t: Timestamp) -> u32 {
    ((t.secs() % 86_400) * 1000) as u32 + t.subsec_nanos() / 1_000_000
}

/// A space-separated list of IPv4 addresses (Click's `IPAddressList`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AddressList(pub(crate) Vec<Ipv4Addr>);

impl AddressList {
    /// The addresses as host-order integers, for cheap comparisons.
    pub(crate) fn bits(&self) -> Vec<u32> {
        self.0.iter().map(|a| u32::from(*a)).collect()
    }
}

impl FromArg for AddressList {
    const TYPE: &'static str = "space-separated IPv4 addresses";
    fn from_arg(text: &str) -> Result<Self, String> {
        text.split_whitespace()
            .map(|w| w.parse().map_err(|_| format!("found `{w}`")))
            .collect::<Result<Vec<_>, _>>()
            .map(AddressList)
    }
}

/// A space-separated list of `ADDR/LEN` (or `ADDR/MASK`) prefixes, the
/// router's interface addresses with their subnets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PrefixList(pub(crate) Vec<Ipv4Cidr>);

impl FromArg for PrefixList {
    const TYPE: &'static str = "space-separated IPv4 prefixes (ADDR/LEN)";
    fn from_arg(text: &str) -> Result<Self, String> {
        text.split_whitespace()
            .map(|w| {
                if w.contains('/') {
                    w.parse::<Ipv4Cidr>().map_err(|_| format!("found `{w}`"))
                } else {
                    w.parse::<Ipv4Addr>()
                        .map(|a| Ipv4Cidr::new(a, 32))
                        .map_err(|_| format!("found `{w}`"))
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map(PrefixList)
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Packets for the tests of the ip elements, written out byte by byte.

    use bricks_wire::checksum;

    /// Fills in the IPv4 header checksum of `ip` (header length from IHL).
    pub(crate) fn fix_ip_checksum(ip: &mut [u8]) {
        let hlen = usize::from(ip[0] & 0x0f) * 4;
        ip[10] = 0;
        ip[11] = 0;
        let sum = !checksum::data(&ip[..hlen]);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
    }

    /// Whether the IPv4 header checksum of `ip` is correct.
    pub(crate) fn ip_checksum_ok(ip: &[u8]) -> bool {
        let hlen = usize::from(ip[0] & 0x0f) * 4;
        checksum::data(&ip[..hlen]) == 0xffff
    }

    /// An ICMP echo request from 192.0.2.1 to 198.51.100.7, TTL 64, 84
    /// bytes (`ping -c 1`): header 45 00 00 54, ICMP type 8 with a 56-byte
    /// payload of 0x10..0x47.
    pub(crate) fn echo_request() -> Vec<u8> {
        let mut p = vec![
            0x45, 0x00, 0x00, 0x54, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x01, 0x00, 0x00, 192, 0, 2, 1,
            198, 51, 100, 7, // IPv4
            0x08, 0x00, 0x00, 0x00, 0x12, 0x34, 0x00, 0x01, // ICMP echo, id 0x1234, seq 1
        ];
        p.extend(0x10u8..0x48);
        fix_ip_checksum(&mut p);
        let sum = !checksum::data(&p[20..]);
        p[22..24].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(p.len(), 84);
        p
    }

    /// A UDP datagram from 10.0.0.1:1234 to 10.1.2.3:53 with `payload_len`
    /// bytes of payload (byte i is i mod 251), TTL 64, DF clear.
    pub(crate) fn udp(payload_len: usize) -> Vec<u8> {
        let total = 28 + payload_len;
        let mut p = vec![
            0x45,
            0x00,
            (total >> 8) as u8,
            total as u8,
            0xab,
            0xcd,
            0x00,
            0x00,
            0x40,
            0x11,
            0x00,
            0x00,
            10,
            0,
            0,
            1,
            10,
            1,
            2,
            3,
            0x04,
            0xd2,
            0x00,
            0x35,
            ((8 + payload_len) >> 8) as u8,
            (8 + payload_len) as u8,
            0x00,
            0x00, // UDP checksum unused
        ];
        p.extend((0..payload_len).map(|i| (i % 251) as u8));
        fix_ip_checksum(&mut p);
        p
    }

    /// A UDP datagram whose header carries `options` (padded by the
    /// caller to a multiple of 4 bytes) and 8 bytes of payload.
    pub(crate) fn udp_with_options(options: &[u8]) -> Vec<u8> {
        assert_eq!(options.len() % 4, 0);
        let hlen = 20 + options.len();
        let total = hlen + 16;
        let mut p = vec![
            0x40 | (hlen / 4) as u8,
            0x00,
            (total >> 8) as u8,
            total as u8,
            0x00,
            0x07,
            0x00,
            0x00,
            0x40,
            0x11,
            0x00,
            0x00,
            10,
            0,
            0,
            1,
            10,
            1,
            2,
            3,
        ];
        p.extend_from_slice(options);
        p.extend_from_slice(&[0x04, 0xd2, 0x00, 0x35, 0x00, 0x10, 0x00, 0x00]);
        p.extend_from_slice(b"payload!");
        fix_ip_checksum(&mut p);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_classes() {
        assert!(is_multicast_or_reserved(u32::from(Ipv4Addr::BROADCAST)));
        assert!(is_multicast_or_reserved(u32::from(Ipv4Addr::new(
            224, 0, 0, 1
        ))));
        assert!(is_multicast_or_reserved(u32::from(Ipv4Addr::new(
            240, 0, 0, 1
        ))));
        assert!(!is_multicast_or_reserved(u32::from(Ipv4Addr::new(
            223, 255, 255, 255
        ))));
        assert!(is_multicast(u32::from(Ipv4Addr::new(239, 1, 2, 3))));
        assert!(!is_multicast(u32::from(Ipv4Addr::new(240, 1, 2, 3))));
    }

    #[test]
    fn milliseconds_since_midnight() {
        // 2001-09-09 01:46:40.123 UT is 6400.123 s after midnight.
        let t = Timestamp::from_parts(1_000_000_000, 123_456_789);
        assert_eq!(ms_since_midnight(t), 6_400_123);
        assert!(ms_since_midnight(Timestamp::from_parts(86_399, 999_999_999)) < 86_400_000);
    }

    #[test]
    fn lists() {
        let l = AddressList::from_arg("1.2.3.4  5.6.7.8").unwrap();
        assert_eq!(l.bits(), vec![0x0102_0304, 0x0506_0708]);
        assert!(AddressList::from_arg("1.2.3.4 x")
            .unwrap_err()
            .contains("`x`"));
        let p = PrefixList::from_arg("18.26.4.1/24 1.0.0.1/255.0.0.0 9.9.9.9").unwrap();
        assert_eq!(p.0[1].prefix_len(), 8);
        assert_eq!(p.0[2].prefix_len(), 32);
        assert!(PrefixList::from_arg("1.2.3.4/33").is_err());
    }
}
