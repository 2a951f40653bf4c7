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

/// The kernel index of interface `name`.
pub fn index(name: &str) -> Result<u32, IfError> {
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

/// Looks up interface `name`.
pub fn lookup(name: &str) -> Result<IfInfo, IfError> {
    let index = index(name)?;
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
    fn macs_parse() {
        assert_eq!(
            parse_mac("00:00:c0:3b:71:ef"),
            Some([0, 0, 0xc0, 0x3b, 0x71, 0xef])
        );
        assert_eq!(parse_mac("00:00:c0:3b:71"), None);
        assert_eq!(parse_mac("00:00:c0:3b:71:ef:01"), None);
    }
}
