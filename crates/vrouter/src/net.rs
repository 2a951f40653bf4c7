//! Addresses as the virtual-router file writes them: IPv4 prefixes and
//! MAC addresses, read and printed.

use std::net::Ipv4Addr;

pub use bricks_spec::net::{
    broadcast, contains, format_mac, mask, network, overlap, parse_mac, parse_prefix,
};

/// Reads a dotted-quad IPv4 address.
pub fn parse_addr(s: &str) -> Result<Ipv4Addr, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{s}` is not an IPv4 address"))
}

/// Whether a host may have `addr`: not 0/8, loopback, multicast, class E
/// or the limited broadcast.
pub fn is_host_address(addr: Ipv4Addr) -> bool {
    let first = addr.octets()[0];
    first != 0 && first != 127 && first < 224
}

/// Whether `mac` may be an interface's own address: unicast and not all
/// zero.
pub fn is_unicast_mac(mac: &[u8; 6]) -> bool {
    mac[0] & 1 == 0 && mac != &[0; 6]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes() {
        assert_eq!(
            parse_prefix("10.1.0.1/24"),
            Ok((Ipv4Addr::new(10, 1, 0, 1), 24))
        );
        assert!(parse_prefix("10.1.0.1")
            .unwrap_err()
            .contains("no prefix length"));
        assert!(parse_prefix("10.1.0.1/33")
            .unwrap_err()
            .contains("not 0 to 32"));
        assert!(parse_prefix("10.1.0.1/+8").is_err());
        assert!(parse_prefix("10.1.0/8")
            .unwrap_err()
            .contains("not an IPv4"));
        let a = Ipv4Addr::new(10, 1, 2, 3);
        assert_eq!(network(a, 16), Ipv4Addr::new(10, 1, 0, 0));
        assert_eq!(broadcast(a, 16), Ipv4Addr::new(10, 1, 255, 255));
        assert_eq!(network(a, 0), Ipv4Addr::UNSPECIFIED);
        assert_eq!(broadcast(a, 32), a);
        assert!(contains(Ipv4Addr::new(10, 1, 0, 0), 16, a));
        assert!(!contains(Ipv4Addr::new(10, 2, 0, 0), 16, a));
        assert!(overlap(a, 8, Ipv4Addr::new(10, 9, 9, 9), 24));
        assert!(!overlap(a, 24, Ipv4Addr::new(10, 9, 9, 9), 24));
        assert!(is_host_address(a));
        assert!(!is_host_address(Ipv4Addr::new(224, 0, 0, 1)));
        assert!(!is_host_address(Ipv4Addr::new(127, 0, 0, 1)));
        assert!(!is_host_address(Ipv4Addr::new(0, 1, 0, 1)));
    }

    #[test]
    fn macs() {
        let m = parse_mac("02:0a:00:00:01:ff").unwrap();
        assert_eq!(m, [2, 10, 0, 0, 1, 255]);
        assert_eq!(format_mac(&m), "02:0a:00:00:01:ff");
        for bad in [
            "02:00:00:00:01",
            "02:00:00:00:01:01:01",
            "02:00:00:00:01:xx",
            "",
            "123:0:0:0:0:0",
        ] {
            assert!(parse_mac(bad).is_err(), "{bad}");
        }
        assert!(is_unicast_mac(&m));
        assert!(!is_unicast_mac(&[1, 0, 0, 0, 0, 1]));
        assert!(!is_unicast_mac(&[0; 6]));
    }
}
