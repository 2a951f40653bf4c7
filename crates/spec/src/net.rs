//! Addresses as the description files write them: IPv4 prefixes and MAC
//! addresses, read and printed, and the arithmetic of subnets.

use std::fmt::Write as _;
use std::net::Ipv4Addr;

/// Reads `10.1.0.1/24`: an address and a prefix length 0..=32.
pub fn parse_prefix(s: &str) -> Result<(Ipv4Addr, u8), String> {
    parse_prefix_like(s, "10.1.0.1/24")
}

/// [`parse_prefix`], with `example` in the message when the length is
/// missing.
pub fn parse_prefix_like(s: &str, example: &str) -> Result<(Ipv4Addr, u8), String> {
    let (addr, len) = s
        .trim()
        .split_once('/')
        .ok_or_else(|| format!("`{s}` has no prefix length: write e.g. {example}"))?;
    let addr: Ipv4Addr = addr
        .parse()
        .map_err(|_| format!("`{s}`: `{addr}` is not an IPv4 address"))?;
    let len: u8 = match len.parse() {
        Ok(l) if l <= 32 && !len.starts_with('+') => l,
        _ => return Err(format!("`{s}`: prefix length `{len}` is not 0 to 32")),
    };
    Ok((addr, len))
}

/// The netmask of a prefix length (0..=32).
pub fn mask(len: u8) -> u32 {
    match len {
        0 => 0,
        l => u32::MAX << (32 - u32::from(l.min(32))),
    }
}

/// The network address of `addr/len`.
pub fn network(addr: Ipv4Addr, len: u8) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(addr) & mask(len))
}

/// The broadcast address of `addr/len`.
pub fn broadcast(addr: Ipv4Addr, len: u8) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(addr) | !mask(len))
}

/// Whether `addr` is in `net/len`.
pub fn contains(net: Ipv4Addr, len: u8, addr: Ipv4Addr) -> bool {
    network(addr, len) == network(net, len)
}

/// Whether two prefixes share an address (one holds the other).
pub fn overlap(a: Ipv4Addr, a_len: u8, b: Ipv4Addr, b_len: u8) -> bool {
    let len = a_len.min(b_len);
    network(a, len) == network(b, len)
}

/// Reads `02:00:00:00:01:01`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let bad = || format!("`{s}` is not a MAC address (six hex bytes, e.g. 02:00:00:00:01:01)");
    let mut mac = [0u8; 6];
    let mut parts = s.trim().split(':');
    for byte in &mut mac {
        let p = parts.next().unwrap_or("");
        if p.is_empty() || p.len() > 2 || !p.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        *byte = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(mac)
}

/// `02:00:00:00:01:01`.
pub fn format_mac(mac: &[u8; 6]) -> String {
    let mut s = String::with_capacity(17);
    for (i, b) in mac.iter().enumerate() {
        if i > 0 {
            s.push(':');
        }
        let _ = write!(s, "{b:02x}");
    }
    s
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
        assert_eq!(parse_prefix("0.0.0.0/0"), Ok((Ipv4Addr::UNSPECIFIED, 0)));
        assert_eq!(
            parse_prefix_like("10.1.0.1", "10.1.0.0/24").unwrap_err(),
            "`10.1.0.1` has no prefix length: write e.g. 10.1.0.0/24"
        );
        assert!(parse_prefix("10.1.0.1/33")
            .unwrap_err()
            .contains("not 0 to 32"));
        assert!(parse_prefix("10.1.0.1/+8").is_err());
        assert!(parse_prefix("10.1.0/8")
            .unwrap_err()
            .contains("not an IPv4"));
        assert_eq!(mask(0), 0);
        assert_eq!(mask(24), 0xffff_ff00);
        assert_eq!(mask(32), u32::MAX);
        let a = Ipv4Addr::new(10, 1, 2, 3);
        assert_eq!(network(a, 16), Ipv4Addr::new(10, 1, 0, 0));
        assert_eq!(broadcast(a, 24), Ipv4Addr::new(10, 1, 2, 255));
        assert_eq!(broadcast(a, 32), a);
        assert!(contains(Ipv4Addr::new(10, 1, 0, 0), 16, a));
        assert!(!contains(Ipv4Addr::new(10, 2, 0, 0), 16, a));
        assert!(overlap(a, 24, Ipv4Addr::new(10, 1, 0, 0), 16));
        assert!(!overlap(a, 24, Ipv4Addr::new(10, 1, 3, 1), 24));
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
            "02:00:00:00:01:101",
            "02::00:00:01:01",
            "02:00:00:00:01:+1",
            "",
        ] {
            assert!(parse_mac(bad).is_err(), "{bad}");
        }
    }
}
