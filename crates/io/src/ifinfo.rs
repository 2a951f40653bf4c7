//! What the kernel says about an interface: its index, queues, address.
//!
//! Read from sysfs and `if_nametoindex`, so a missing interface is reported
//! by name before any socket is opened. sysfs shows the network namespace
//! it was mounted in: a process started by `ip netns exec` (which remounts
//! it) sees its own interfaces, but a thread that only called `setns` sees
//! the index of its new namespace and the sysfs of its old one.

use std::path::Path;

/// Facts about one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfInfo {
    /// Its name.
    pub name: String,
    /// Its kernel index.
    pub index: u32,
    /// Receive queues (`/sys/class/net/NAME/queues/rx-*`).
    pub rx_queues: u32,
    /// Transmit queues.
    pub tx_queues: u32,
    /// Hardware address.
    pub mac: [u8; 6],
    /// MTU in bytes.
    pub mtu: u32,
    /// Driver name (`veth`, `ixgbe`, ...), if it has one.
    pub driver: Option<String>,
}

/// Why an interface could not be looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfError {
    /// No interface of that name in this network namespace.
    NoSuchInterface(String),
    /// The name is not a valid interface name.
    BadName(String),
}

impl core::fmt::Display for IfError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            IfError::NoSuchInterface(n) => write!(
                f,
                "no interface `{n}` in this network namespace (`ip link` lists the ones there are)"
            ),
            IfError::BadName(n) => write!(f, "`{n}` is not a valid interface name"),
        }
    }
}

impl std::error::Error for IfError {}

/// The kernel index of interface `name`, which may also be an Ethernet
/// address (see [`resolve`]).
pub fn index(name: &str) -> Result<u32, IfError> {
    let name = &resolve(name)?;
    index_of(name)
}

/// The name of the interface `name` means: `name` itself, unless no
/// interface is called that and `name` is an Ethernet address
/// (`00:00:5a:98:f9:28`, or with dashes), in which case the Ethernet
/// interface with that address and the smallest index, as Click's kernel
/// FromDevice finds a device by its address.
pub fn resolve(name: &str) -> Result<String, IfError> {
    match (index_of(name), mac_name(name)) {
        (Err(IfError::BadName(_) | IfError::NoSuchInterface(_)), Some(mac)) => {
            by_mac(&mac).ok_or_else(|| IfError::NoSuchInterface(name.into()))
        }
        (Ok(_), _) => Ok(name.to_string()),
        (Err(e), None) => Err(e),
    }
}

/// `name` read as an Ethernet address: six groups of one or two hex
/// digits separated by colons or by dashes.
fn mac_name(name: &str) -> Option<[u8; 6]> {
    let sep = if name.contains(':') { ':' } else { '-' };
    let mut mac = [0u8; 6];
    let mut parts = name.split(sep);
    for b in mac.iter_mut() {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// The Ethernet interface (ARPHRD_ETHER, or 802.11) with address `mac`
/// and the smallest index in this network namespace.
fn by_mac(mac: &[u8; 6]) -> Option<String> {
    let mut best: Option<(u32, String)> = None;
    for e in std::fs::read_dir("/sys/class/net").ok()?.flatten() {
        let dir = e.path();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        // 1: ARPHRD_ETHER, 801: ARPHRD_IEEE80211.
        if !matches!(read("type").trim(), "1" | "801") {
            continue;
        }
        if parse_mac(read("address").trim()).as_ref() != Some(mac) {
            continue;
        }
        let Ok(index) = read("ifindex").trim().parse::<u32>() else {
            continue;
        };
        if best.as_ref().is_none_or(|(i, _)| index < *i) {
            best = Some((index, e.file_name().to_string_lossy().into_owned()));
        }
    }
    best.map(|(_, n)| n)
}

fn index_of(name: &str) -> Result<u32, IfError> {
    let c = std::ffi::CString::new(name).map_err(|_| IfError::BadName(name.into()))?;
    if name.is_empty() || name.len() >= libc::IF_NAMESIZE {
        return Err(IfError::BadName(name.into()));
    }
    // SAFETY: `c` is a valid NUL-terminated string for the whole call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        Err(IfError::NoSuchInterface(name.into()))
    } else {
        Ok(i)
    }
}

/// Looks up interface `name` (or the one [`resolve`] finds for an
/// Ethernet address; [`IfInfo::name`] is then its name).
pub fn lookup(name: &str) -> Result<IfInfo, IfError> {
    let name = &resolve(name)?;
    let index = index_of(name)?;
    let dir = Path::new("/sys/class/net").join(name);
    let (mut rx_queues, mut tx_queues) = (0, 0);
    if let Ok(entries) = std::fs::read_dir(dir.join("queues")) {
        for e in entries.flatten() {
            let n = e.file_name();
            let n = n.to_string_lossy();
            rx_queues += u32::from(n.starts_with("rx-"));
            tx_queues += u32::from(n.starts_with("tx-"));
        }
    }
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
    let mac = parse_mac(read("address").trim()).unwrap_or([0; 6]);
    let mtu = read("mtu").trim().parse().unwrap_or(1500);
    let driver = std::fs::read_link(dir.join("device/driver"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .or_else(|| {
            // Virtual devices have no `device` link; uevent names the kind.
            read("uevent")
                .lines()
                .find_map(|l| l.strip_prefix("DEVTYPE=").map(str::to_string))
        });
    Ok(IfInfo {
        name: name.into(),
        index,
        rx_queues: rx_queues.max(1),
        tx_queues: tx_queues.max(1),
        mac,
        mtu,
        driver,
    })
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for b in mac.iter_mut() {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_found_and_a_missing_name_is_named() {
        let lo = lookup("lo").unwrap();
        assert_eq!(lo.index, index("lo").unwrap());
        assert!(lo.rx_queues >= 1 && lo.tx_queues >= 1);
        let e = lookup("bricks-nope0").unwrap_err();
        assert_eq!(e, IfError::NoSuchInterface("bricks-nope0".into()));
        assert!(e.to_string().contains("ip link"));
        assert!(matches!(
            lookup("a-name-far-too-long-for-linux"),
            Err(IfError::BadName(_))
        ));
    }

    #[test]
    fn an_ethernet_address_names_its_interface() {
        // Loopback's all-zero address is not an Ethernet device's.
        assert_eq!(
            mac_name("00:00:5A:98:f9:28"),
            Some([0, 0, 0x5a, 0x98, 0xf9, 0x28])
        );
        assert_eq!(
            mac_name("0-0-5a-98-f9-28"),
            Some([0, 0, 0x5a, 0x98, 0xf9, 0x28])
        );
        assert_eq!(mac_name("00:00:5a:98:f9"), None);
        assert_eq!(mac_name("000:00:5a:98:f9:28"), None);
        assert_eq!(mac_name("eth0"), None);
        assert_eq!(
            lookup("00:00:00:00:00:00").unwrap_err(),
            IfError::NoSuchInterface("00:00:00:00:00:00".into())
        );
        assert_eq!(resolve("lo").unwrap(), "lo");
        // Every Ethernet interface here is found by its own address.
        for e in std::fs::read_dir("/sys/class/net").unwrap().flatten() {
            let dir = e.path();
            let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
            if read("type").trim() != "1" || read("address").trim() == "00:00:00:00:00:00" {
                continue;
            }
            let by_addr = lookup(read("address").trim()).unwrap();
            assert_eq!(by_addr.mac, parse_mac(read("address").trim()).unwrap());
            assert_eq!(index(read("address").trim()).unwrap(), by_addr.index);
        }
    }

    #[test]
    fn macs_parse() {
        assert_eq!(
            parse_mac("00:00:c0:3b:71:ef"),
            Some([0, 0, 0xc0, 0x3b, 0x71, 0xef])
        );
        assert_eq!(parse_mac("00:00:c0:3b:71"), None);
        assert_eq!(parse_mac("00:00:c0:3b:71:ef:01"), None);
    }
}
