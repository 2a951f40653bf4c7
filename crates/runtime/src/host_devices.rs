//! The host's network devices as address names, as Click's user-level
//! `AddressInfo` finds them (`elements/standard/addressinfo.cc`): each
//! device's IPv4 address and prefix (`getifaddrs`, first address of a
//! device), its Ethernet address (Ethernet and 802.11 devices only) and
//! its default gateway (`/proc/net/route`, where Click asks `ip route
//! show to 0/0 oif DEV`). Read in the network namespace the router runs
//! in.

use bricks_element::addresses::AddressEntry;
use bricks_wire::ethernet::EthernetAddress;
use bricks_wire::ipv4::Ipv4Cidr;
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// Linux's `ARPHRD_ETHER` and `ARPHRD_IEEE80211` link types.
const ARPHRD_ETHER: u16 = 1;
const ARPHRD_IEEE80211: u16 = 801;

/// Longest device name Linux allows (`IFNAMSIZ` less its NUL).
pub const MAX_NAME: usize = 15;

/// The host's devices by name; empty when they cannot be read.
pub fn devices() -> HashMap<String, AddressEntry> {
    let mut out: HashMap<String, AddressEntry> = HashMap::new();
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return out;
    };
    for a in addrs {
        let Some(addr) = a.address else { continue };
        if let Some(sin) = addr.as_sockaddr_in() {
            let e = out.entry(a.interface_name.clone()).or_default();
            // Click keeps a device's first address.
            if e.ip.is_some() {
                continue;
            }
            let ip = sin.ip();
            e.ip = Some(ip);
            let mask = a.netmask.and_then(|m| m.as_sockaddr_in().map(|m| m.ip()));
            if let Some(len) = mask.and_then(prefix_len) {
                e.ipnet = Some(Ipv4Cidr::new(ip, len));
            }
        } else if let Some(ll) = addr.as_link_addr() {
            if matches!(ll.hatype(), ARPHRD_ETHER | ARPHRD_IEEE80211) {
                if let Some(mac) = ll.addr() {
                    out.entry(a.interface_name.clone()).or_default().eth =
                        Some(EthernetAddress(mac));
                }
            }
        }
    }
    if let Ok(routes) = std::fs::read_to_string("/proc/net/route") {
        for (dev, gw) in default_gateways(&routes) {
            if let Some(e) = out.get_mut(&dev) {
                e.gw.get_or_insert(gw);
            }
        }
    }
    out
}

/// The length of a contiguous netmask.
fn prefix_len(mask: Ipv4Addr) -> Option<u8> {
    let m = u32::from(mask);
    let len = m.leading_ones();
    (m.checked_shl(len).unwrap_or(0) == 0).then_some(len as u8)
}

/// The default routes through a gateway in `/proc/net/route`'s text: the
/// device and the gateway, in the table's order.
fn default_gateways(text: &str) -> Vec<(String, Ipv4Addr)> {
    /// `RTF_UP | RTF_GATEWAY`.
    const UP_GATEWAY: u32 = 0x3;
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (dev, dest, gw, flags, mask) =
                (f.first()?, f.get(1)?, f.get(2)?, f.get(3)?, f.get(7)?);
            let ok = hex(dest)? == 0 && hex(mask)? == 0 && hex(flags)? & UP_GATEWAY == UP_GATEWAY;
            // The kernel prints the address as a native-endian integer
            // of its network-order bytes.
            ok.then(|| {
                (
                    dev.to_string(),
                    Ipv4Addr::from(hex(gw).unwrap_or(0).to_ne_bytes()),
                )
            })
        })
        .collect()
}

/// Whether `word` could name a network device, with or without an
/// address suffix (`eth1`, `enp0s3:gw`): a device name as Linux allows
/// it that starts with a lowercase letter and holds a digit, the way
/// device names are made (a configuration's keywords are upper case, its
/// element names seldom numbered).
pub fn looks_like_device(word: &str) -> Option<&str> {
    let name = match word.rsplit_once(':') {
        Some((n, suffix)) if SUFFIXES.contains(&suffix) => n,
        Some(_) => return None,
        None => word,
    };
    let ok = (1..=MAX_NAME).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.bytes().any(|c| c.is_ascii_digit())
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'));
    ok.then_some(name)
}

/// The address suffixes a device name takes (Click's).
const SUFFIXES: &[&str] = &[
    "ip", "ip4", "ipnet", "net", "ip4net", "eth", "ether", "ethernet", "bcast", "gw",
];

/// The addresses a device this host lacks is given while its
/// configuration is checked: documentation addresses (RFC 5737, and a
/// locally administered Ethernet address) that every element accepts.
pub fn placeholder() -> AddressEntry {
    AddressEntry {
        ip: Some(Ipv4Addr::new(192, 0, 2, 2)),
        ipnet: Some(Ipv4Cidr::new(Ipv4Addr::new(192, 0, 2, 2), 24)),
        eth: Some(EthernetAddress([0x02, 0, 0, 0, 0, 0x02])),
        gw: Some(Ipv4Addr::new(192, 0, 2, 1)),
        ..AddressEntry::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_gateways_are_read_from_the_route_table() {
        let table =
            "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t0102A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n\
eth0\t0002A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n\
eth1\t00000000\t00000000\t0001\t0\t0\t0\t00000000\t0\t0\t0\n";
        let gw = if cfg!(target_endian = "little") {
            Ipv4Addr::new(192, 168, 2, 1)
        } else {
            Ipv4Addr::new(1, 2, 168, 192)
        };
        assert_eq!(default_gateways(table), vec![("eth0".to_string(), gw)]);
        assert!(default_gateways("").is_empty());
        assert!(default_gateways("h\nbad line\n\u{0}\n").is_empty());
    }

    #[test]
    fn device_names_are_told_from_other_words() {
        assert_eq!(looks_like_device("eth1"), Some("eth1"));
        assert_eq!(looks_like_device("eth0:gw"), Some("eth0"));
        assert_eq!(looks_like_device("enp0s31f6:bcast"), Some("enp0s31f6"));
        assert_eq!(looks_like_device("veth-a1.100"), Some("veth-a1.100"));
        for w in [
            "LIMIT",
            "true",
            "eth",
            "0:1:2:3:4:5",
            "fe80::1",
            "eth0:x",
            "a234567890123456",
            "10.0.0.1",
        ] {
            assert_eq!(looks_like_device(w), None, "{w}");
        }
    }

    #[test]
    fn netmasks_give_prefix_lengths() {
        assert_eq!(prefix_len(Ipv4Addr::new(255, 255, 255, 0)), Some(24));
        assert_eq!(prefix_len(Ipv4Addr::new(0, 0, 0, 0)), Some(0));
        assert_eq!(prefix_len(Ipv4Addr::new(255, 255, 255, 255)), Some(32));
        assert_eq!(prefix_len(Ipv4Addr::new(255, 0, 255, 0)), None);
    }

    #[test]
    fn loopback_is_found() {
        // Every namespace has `lo`, with 127.0.0.1 once it is up.
        let d = devices();
        if let Some(lo) = d.get("lo") {
            assert!(lo.eth.is_none(), "loopback is not Ethernet");
        }
    }
}
