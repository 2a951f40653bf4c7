//! TUN and TAP devices: the host's own network stack as one more
//! interface of the router.
//!
//! A TUN device carries IP packets, a TAP device Ethernet frames, between
//! a file descriptor (the router's end) and an interface of the host's
//! stack (`ip addr`, routes, a routing daemon's sockets). What the router
//! writes the host receives as if it came in on the interface; what the
//! host sends out of the interface the router reads. Click's user-level
//! `KernelTun`, `KernelTap`, `FromHost` and `ToHost` are built on this.
//!
//! Devices follow the life cycle of the live interfaces in
//! [`crate::live`]: elements [`declare`] what they need while the
//! configuration is checked (nothing is opened then, so `bricks check`
//! needs no privileges), the runner opens everything with
//! [`open_declared`] before any worker starts, and each worker takes its
//! own queue with [`take`]. With several workers the device is opened
//! with `IFF_MULTI_QUEUE`, one queue (file descriptor) per worker: the
//! kernel spreads the host's flows over the queues and no descriptor is
//! shared between cores (RouteBricks §4.2). The device is not persistent:
//! it disappears when the router closes its last queue, also when the
//! router is killed.
//!
//! The address, netmask, MAC, MTU and the link state are set with the
//! classic `SIOCSIF*` ioctls on an `AF_INET` datagram socket, as Click's
//! `KernelTun::updown` does. bricks depends on no netlink crate, and these
//! ioctls set exactly what Click sets (one IPv4 address and its mask) on
//! every kernel; a netlink dependency would buy nothing for that. An IPv6
//! address goes the same way, `SIOCSIFADDR` on an `AF_INET6` socket; a
//! device that mirrors a router's port for the host is made an IPv6
//! router's interface through its `forwarding` sysctl, before it is up.

use crate::DeviceError;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// What a device carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunKind {
    /// IP packets (IPv4 or IPv6), no link header (`IFF_TUN`).
    Tun,
    /// Ethernet frames (`IFF_TAP`).
    Tap,
}

impl TunKind {
    /// `tun` or `tap`.
    pub fn as_str(self) -> &'static str {
        match self {
            TunKind::Tun => "tun",
            TunKind::Tap => "tap",
        }
    }

    /// Bytes of link header in front of the network packet.
    pub fn link_header(self) -> usize {
        match self {
            TunKind::Tun => 0,
            TunKind::Tap => 14,
        }
    }
}

/// The MTU a device gets unless told otherwise (Click's `DEFAULT_MTU`).
pub const DEFAULT_MTU: u32 = 1500;

/// What a configuration asks of one host device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// The name elements find the device by: DEVNAME when given, else a
    /// name made from the element's arguments.
    pub key: String,
    /// The interface name asked for (`None`: the kernel picks `tun%d` or
    /// `tap%d`).
    pub devname: Option<String>,
    /// TUN or TAP.
    pub kind: TunKind,
    /// The host's address on the device and its netmask; `None` leaves
    /// the address alone (FromHost without DST).
    pub addr: Option<(Ipv4Addr, Ipv4Addr)>,
    /// A default route through this address, when given.
    pub gateway: Option<Ipv4Addr>,
    /// The device's MTU (network packet, no link header).
    pub mtu: u32,
    /// The host side's MAC (TAP only).
    pub ether: Option<[u8; 6]>,
    /// The host's IPv6 address on the device and its prefix length.
    pub addr6: Option<(Ipv6Addr, u8)>,
    /// The host side acts as an IPv6 router's interface
    /// (`net.ipv6.conf.DEV.forwarding` 1), set before the device is up.
    pub ipv6_router: bool,
}

impl HostSpec {
    /// A device of `kind` found by `key`, with no address, the default MTU
    /// and the kernel's MAC.
    pub fn new(key: &str, kind: TunKind) -> HostSpec {
        HostSpec {
            key: key.to_string(),
            devname: None,
            kind,
            addr: None,
            gateway: None,
            mtu: DEFAULT_MTU,
            ether: None,
            addr6: None,
            ipv6_router: false,
        }
    }
}

/// Checks an interface name as the kernel will (`dev_valid_name`):
/// 1 to 15 bytes, no `/`, no whitespace, not `.` or `..`. A `%d` is
/// allowed: the kernel replaces it with the first free number.
pub fn check_devname(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(format!(
            "`{name}`: an interface name has 1 to {} bytes",
            libc::IFNAMSIZ - 1
        ));
    }
    if name == "." || name == ".." || name.contains(['/', ':']) {
        return Err(format!("`{name}` is not a valid interface name"));
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("`{name}`: an interface name has no spaces"));
    }
    if name.matches('%').count() > 1 || (name.contains('%') && !name.contains("%d")) {
        return Err(format!("`{name}`: the only pattern allowed is one `%d`"));
    }
    Ok(())
}

/// One queue of a TUN or TAP device: a non-blocking file descriptor on
/// `/dev/net/tun`. Reads and writes are single system calls on `&self`,
/// so a worker's receiving and sending elements can share its queue.
#[derive(Debug)]
pub struct TunQueue {
    fd: OwnedFd,
    name: String,
}

fn ifreq_named(name: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain old data, for which all zeroes is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    // Leaves the last byte zero: names are checked shorter than IFNAMSIZ.
    for (d, s) in req
        .ifr_name
        .iter_mut()
        .take(libc::IFNAMSIZ - 1)
        .zip(name.bytes())
    {
        *d = s as libc::c_char;
    }
    req
}

fn ifreq_name(req: &libc::ifreq) -> String {
    let bytes: Vec<u8> = req
        .ifr_name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

impl TunQueue {
    /// Opens (creating it if needed) device `name` of `kind` in the
    /// calling thread's network namespace. `multi_queue` attaches one more
    /// queue to a multi-queue device. Returns the queue; its
    /// [`name`](Self::name) is the kernel's (a `%d` filled in).
    pub fn open(name: &str, kind: TunKind, multi_queue: bool) -> Result<TunQueue, DeviceError> {
        check_devname(name).map_err(DeviceError::Io)?;
        let path = c"/dev/net/tun";
        // SAFETY: `path` is a NUL-terminated string alive for the call.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            let hint = match e.raw_os_error() {
                Some(libc::ENOENT | libc::ENODEV) => {
                    " (is the kernel's `tun` module loaded? `modprobe tun`)"
                }
                Some(libc::EACCES | libc::EPERM) => " (needs root or CAP_NET_ADMIN)",
                _ => "",
            };
            return Err(DeviceError::Io(format!("/dev/net/tun: {e}{hint}")));
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut req = ifreq_named(name);
        let mut flags = libc::IFF_NO_PI
            | match kind {
                TunKind::Tun => libc::IFF_TUN,
                TunKind::Tap => libc::IFF_TAP,
            };
        if multi_queue {
            flags |= libc::IFF_MULTI_QUEUE;
        }
        req.ifr_ifru.ifru_flags = flags as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes one ifreq, which `req` is,
        // alive for the call; its name is NUL-terminated.
        let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            let hint = match e.raw_os_error() {
                Some(libc::EPERM | libc::EACCES) => " (needs root or CAP_NET_ADMIN)",
                Some(libc::EBUSY) => {
                    " (an interface of that name exists and is not a free TUN/TAP device \
                     of this kind)"
                }
                Some(libc::EINVAL) => {
                    " (an interface of that name exists with other settings: another \
                     kind, or queues)"
                }
                _ => "",
            };
            return Err(DeviceError::Io(format!(
                "{name}: creating the {} device: {e}{hint}",
                kind.as_str()
            )));
        }
        Ok(TunQueue {
            fd,
            name: ifreq_name(&req),
        })
    }

    /// The interface's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one packet into `buf`: `Ok(None)` when none is waiting. A
    /// packet longer than `buf` is cut to it (the caller makes `buf` larger
    /// than any packet it accepts, so a cut one is seen as too big).
    pub fn read(&self, buf: &mut [u8]) -> Result<Option<usize>, DeviceError> {
        // SAFETY: `buf` is valid for writes of its whole length for the
        // call; the kernel writes at most that many bytes.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EINTR) => Ok(None),
            _ => Err(DeviceError::from_errno(&self.name, "read", e)),
        }
    }

    /// Writes one packet: the host's stack receives it. Never blocks.
    pub fn write(&self, packet: &[u8]) -> std::io::Result<()> {
        // SAFETY: `packet` is valid for reads of its whole length for the
        // call.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), packet.as_ptr().cast(), packet.len()) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Whether a failed [`TunQueue::write`] means the kernel had no room for
/// the packet (it is worth counting, not worth a message each time).
pub fn is_overflow(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOBUFS | libc::EAGAIN | libc::ENOMEM)
    )
}

/// Packets the host sent out of device `name` that never reached the
/// router: the kernel drops them when the device's queue towards the
/// reader is full (`TX dropped` in `ip -s link`). Read from sysfs, which
/// shows the process's namespace when it was started by `ip netns exec`
/// or in its own mount namespace; `None` when it cannot be read.
pub fn host_side_drops(name: &str) -> Option<u64> {
    let path = format!("/sys/class/net/{name}/statistics/tx_dropped");
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A socket for the `SIOCSIF*` ioctls.
fn ioctl_socket() -> Result<OwnedFd, DeviceError> {
    // SAFETY: socket has no memory preconditions.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(DeviceError::Io(format!(
            "socket: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: `fd` was just made and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockaddr_in(a: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(a.octets()),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size (16 bytes) and
    // both are plain old data; the kernel reads a sockaddr_in back from it.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

fn ioctl_ifreq(
    sock: &OwnedFd,
    name: &str,
    what: &str,
    op: libc::Ioctl,
    req: &mut libc::ifreq,
) -> Result<(), DeviceError> {
    // SAFETY: every SIOC[GS]IF* request used here reads or writes one
    // ifreq, which `req` is, alive for the call; its name is
    // NUL-terminated.
    let r = unsafe { libc::ioctl(sock.as_raw_fd(), op, req as *mut libc::ifreq) };
    if r < 0 {
        return Err(DeviceError::Io(format!(
            "{name}: setting the {what}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Adds `addr/len` to device `name` with `SIOCSIFADDR` on an `AF_INET6`
/// socket (`struct in6_ifreq`), as `ifconfig NAME inet6 add` does. The
/// kernel runs Duplicate Address Detection on it once the link is up.
fn add_ipv6_address(name: &str, addr: Ipv6Addr, len: u8) -> Result<(), DeviceError> {
    let cname = std::ffi::CString::new(name)
        .map_err(|_| DeviceError::Io(format!("{name}: a NUL in the interface name")))?;
    // SAFETY: if_nametoindex reads the NUL-terminated name, alive here.
    let index = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if index == 0 {
        return Err(DeviceError::Io(format!(
            "{name}: its index: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: socket has no memory preconditions.
    let fd = unsafe { libc::socket(libc::AF_INET6, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(DeviceError::Io(format!(
            "{name}: an IPv6 socket to set {addr}/{len} with: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: `fd` was just made and is owned by nothing else.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = libc::in6_ifreq {
        ifr6_addr: libc::in6_addr {
            s6_addr: addr.octets(),
        },
        ifr6_prefixlen: u32::from(len),
        ifr6_ifindex: index as libc::c_int,
    };
    // SAFETY: SIOCSIFADDR on an AF_INET6 socket reads one struct
    // in6_ifreq, which `req` is, alive for the call.
    let r = unsafe {
        libc::ioctl(
            sock.as_raw_fd(),
            libc::SIOCSIFADDR,
            &mut req as *mut libc::in6_ifreq,
        )
    };
    if r < 0 {
        return Err(DeviceError::Io(format!(
            "{name}: setting the IPv6 address {addr}/{len}: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// The kernel's `struct rtentry` (`linux/route.h`), which the libc crate
/// has for musl only.
#[repr(C)]
struct RtEntry {
    rt_pad1: libc::c_ulong,
    rt_dst: libc::sockaddr,
    rt_gateway: libc::sockaddr,
    rt_genmask: libc::sockaddr,
    rt_flags: libc::c_ushort,
    rt_pad2: libc::c_short,
    rt_pad3: libc::c_ulong,
    rt_pad4: *mut libc::c_void,
    rt_metric: libc::c_short,
    rt_dev: *mut libc::c_char,
    rt_mtu: libc::c_ulong,
    rt_window: libc::c_ulong,
    rt_irtt: libc::c_ushort,
}

const RTF_UP: libc::c_ushort = 0x0001;
const RTF_GATEWAY: libc::c_ushort = 0x0002;

/// Gives device `name` the address, netmask, MAC and MTU of `spec`, sets
/// it up (and, for a TAP, lets it ARP), and adds the default route through
/// `spec.gateway`, as Click's `KernelTun::setup_tun` does. A MAC or MTU
/// that cannot be set is an error here (Click warns): a router that
/// answers ARP for the wrong MAC or drops packets at the wrong size is
/// worse than one that does not start.
pub fn configure(name: &str, spec: &HostSpec) -> Result<(), DeviceError> {
    let sock = ioctl_socket()?;
    if let Some(mac) = spec.ether {
        let mut req = ifreq_named(name);
        let mut sa: libc::sockaddr =
            // SAFETY: sockaddr is plain old data; all zeroes is valid.
            unsafe { std::mem::zeroed() };
        sa.sa_family = libc::ARPHRD_ETHER;
        for (d, s) in sa.sa_data.iter_mut().zip(mac) {
            *d = s as libc::c_char;
        }
        req.ifr_ifru.ifru_hwaddr = sa;
        ioctl_ifreq(
            &sock,
            name,
            "Ethernet address",
            libc::SIOCSIFHWADDR,
            &mut req,
        )?;
    }
    if spec.mtu != DEFAULT_MTU {
        let mut req = ifreq_named(name);
        req.ifr_ifru.ifru_mtu = spec.mtu as libc::c_int;
        ioctl_ifreq(&sock, name, "MTU", libc::SIOCSIFMTU, &mut req)?;
    }
    if let Some((addr, mask)) = spec.addr {
        // Linux wants the address first, then the mask (Click's comment).
        let mut req = ifreq_named(name);
        req.ifr_ifru.ifru_addr = sockaddr_in(addr);
        ioctl_ifreq(&sock, name, "address", libc::SIOCSIFADDR, &mut req)?;
        let mut req = ifreq_named(name);
        req.ifr_ifru.ifru_netmask = sockaddr_in(mask);
        ioctl_ifreq(&sock, name, "netmask", libc::SIOCSIFNETMASK, &mut req)?;
    }
    if spec.ipv6_router {
        // Per interface, this is the host-or-router switch of RFC 4861
        // (Linux's ip-sysctl.rst): the Router flag in the host's Neighbor
        // Advertisements, ff02::2 joined, no address, route or redirect
        // taken from Router Advertisements and Redirects. Packets are
        // forwarded only by `all.forwarding`, which is left alone. Set
        // before the link is up, so that the host never solicits routers
        // nor configures itself from what arrives.
        let path = format!("/proc/sys/net/ipv6/conf/{name}/forwarding");
        std::fs::write(&path, "1").map_err(|e| {
            DeviceError::Io(format!(
                "{name}: making it an IPv6 router's interface ({path}): {e}"
            ))
        })?;
    }
    if let Some((addr, len)) = spec.addr6 {
        add_ipv6_address(name, addr, len)?;
    }
    let mut req = ifreq_named(name);
    ioctl_ifreq(&sock, name, "flags", libc::SIOCGIFFLAGS, &mut req)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    let mut flags = unsafe { req.ifr_ifru.ifru_flags } as libc::c_int;
    flags |= libc::IFF_UP;
    if spec.kind == TunKind::Tap {
        flags &= !libc::IFF_NOARP;
    }
    req.ifr_ifru.ifru_flags = flags as libc::c_short;
    ioctl_ifreq(&sock, name, "link up", libc::SIOCSIFFLAGS, &mut req)?;
    if let Some(gw) = spec.gateway {
        let any = sockaddr_in(Ipv4Addr::UNSPECIFIED);
        let mut rt = RtEntry {
            rt_pad1: 0,
            rt_dst: any,
            rt_gateway: sockaddr_in(gw),
            rt_genmask: any,
            rt_flags: RTF_UP | RTF_GATEWAY,
            rt_pad2: 0,
            rt_pad3: 0,
            rt_pad4: std::ptr::null_mut(),
            rt_metric: 0,
            rt_dev: std::ptr::null_mut(),
            rt_mtu: 0,
            rt_window: 0,
            rt_irtt: 0,
        };
        // SAFETY: SIOCADDRT reads one struct rtentry, which `rt` is (the
        // kernel's layout), alive for the call; `rt_dev` is null.
        let r = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCADDRT, &mut rt as *mut RtEntry) };
        if r < 0 {
            return Err(DeviceError::Io(format!(
                "{name}: adding the default route through {gw}: {}",
                std::io::Error::last_os_error()
            )));
        }
    }
    Ok(())
}

/// One opened device: its kernel name and one queue per worker.
#[derive(Debug, Clone)]
pub struct HostDevice {
    /// The interface's name in the host.
    pub name: String,
    /// TUN or TAP.
    pub kind: TunKind,
    /// Its MTU.
    pub mtu: u32,
    queues: Vec<Arc<TunQueue>>,
}

#[derive(Default)]
struct Table {
    specs: Vec<HostSpec>,
    open: BTreeMap<String, HostDevice>,
}

fn table() -> MutexGuard<'static, Table> {
    static T: OnceLock<Mutex<Table>> = OnceLock::new();
    T.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Records that the configuration uses the host device `spec.key`.
/// Several elements may name one device (`FromHost(fake, ...)` and
/// `ToHost(fake)`); where two set something, they must agree.
pub fn declare(spec: HostSpec) -> Result<(), String> {
    let mut t = table();
    let Some(s) = t.specs.iter_mut().find(|s| s.key == spec.key) else {
        t.specs.push(spec);
        return Ok(());
    };
    if s.kind != spec.kind {
        return Err(format!(
            "`{}` is used as a {} device and as a {} device",
            spec.key,
            s.kind.as_str(),
            spec.kind.as_str()
        ));
    }
    let clash = |what: &str| {
        Err(format!(
            "`{}` is given two different {what}s; one device has one",
            spec.key
        ))
    };
    match (s.addr, spec.addr) {
        (Some(a), Some(b)) if a != b => return clash("address"),
        (None, b) => s.addr = b,
        _ => {}
    }
    match (s.gateway, spec.gateway) {
        (Some(a), Some(b)) if a != b => return clash("GATEWAY"),
        (None, b) => s.gateway = b,
        _ => {}
    }
    match (s.ether, spec.ether) {
        (Some(a), Some(b)) if a != b => return clash("ETHER"),
        (None, b) => s.ether = b,
        _ => {}
    }
    if s.mtu == DEFAULT_MTU {
        s.mtu = spec.mtu;
    } else if spec.mtu != DEFAULT_MTU && spec.mtu != s.mtu {
        return clash("MTU");
    }
    if s.devname.is_none() {
        s.devname = spec.devname;
    }
    Ok(())
}

/// The devices declared so far.
pub fn declared() -> Vec<HostSpec> {
    table().specs.clone()
}

/// The kind of the device declared under `key`, if any.
pub fn declared_kind(key: &str) -> Option<TunKind> {
    table().specs.iter().find(|s| s.key == key).map(|s| s.kind)
}

/// Creates and configures every declared device with one queue per
/// worker, and returns a line per device for the run's first lines.
pub fn open_declared(workers: usize) -> Result<Vec<String>, DeviceError> {
    let workers = workers.max(1);
    let mut lines = Vec::new();
    for spec in declared() {
        let multi = workers > 1;
        let pattern = spec
            .devname
            .clone()
            .unwrap_or_else(|| format!("{}%d", spec.kind.as_str()));
        let first = TunQueue::open(&pattern, spec.kind, multi)?;
        let name = first.name().to_string();
        let mut queues = vec![Arc::new(first)];
        for _ in 1..workers {
            queues.push(Arc::new(TunQueue::open(&name, spec.kind, true)?));
        }
        configure(&name, &spec)?;
        let mut line = format!(
            "{name}: {} device, {} queue{}, mtu {}",
            spec.kind.as_str(),
            workers,
            if workers == 1 { "" } else { "s" },
            spec.mtu
        );
        if let Some((a, m)) = spec.addr {
            let len = u32::from(m).leading_ones();
            line.push_str(&format!(", host address {a}/{len}"));
        }
        lines.push(line);
        table().open.insert(
            spec.key.clone(),
            HostDevice {
                name,
                kind: spec.kind,
                mtu: spec.mtu,
                queues,
            },
        );
    }
    Ok(lines)
}

/// The device opened under `key` and the queue of `worker` (a worker
/// beyond the queues gets none). Every element of the worker that names
/// the device gets the same queue.
pub fn take(key: &str, worker: usize) -> Option<(HostDevice, Option<Arc<TunQueue>>)> {
    let t = table();
    let dev = t.open.get(key)?;
    let q = dev.queues.get(worker).cloned();
    Some((dev.clone(), q))
}

/// The declared devices that are not open (a hot swap opens none), and
/// forgets their declarations, so that a refused configuration leaves
/// nothing behind.
pub fn unopened() -> Vec<String> {
    let mut t = table();
    let Table { specs, open } = &mut *t;
    let missing: Vec<String> = specs
        .iter()
        .filter(|s| !open.contains_key(&s.key))
        .map(|s| s.key.clone())
        .collect();
    specs.retain(|s| open.contains_key(&s.key));
    missing
}

/// Closes every device no element holds and forgets every declaration.
pub fn reset() {
    let mut t = table();
    t.specs.clear();
    t.open.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_are_checked_as_the_kernel_does() {
        assert!(check_devname("tun0").is_ok());
        assert!(check_devname("tap%d").is_ok());
        assert!(check_devname("a234567890abcde").is_ok());
        for bad in [
            "",
            "a234567890abcdef",
            "a/b",
            "a b",
            ".",
            "..",
            "x%s",
            "%d%d",
        ] {
            assert!(check_devname(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn declarations_of_one_device_merge_or_clash() {
        reset();
        let mut a = HostSpec::new("fake", TunKind::Tap);
        a.addr = Some((Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(255, 0, 0, 0)));
        declare(a.clone()).unwrap();
        // ToHost(fake) names the device without settings: it merges.
        declare(HostSpec::new("fake", TunKind::Tap)).unwrap();
        assert_eq!(declared(), [a.clone()]);
        let tun = declare(HostSpec::new("fake", TunKind::Tun)).unwrap_err();
        assert!(tun.contains("tap device and as a tun device"), "{tun}");
        let mut b = a.clone();
        b.mtu = 1400;
        declare(b).unwrap();
        let mut c = a.clone();
        c.mtu = 1300;
        assert!(declare(c).unwrap_err().contains("MTU"));
        assert_eq!(declared_kind("fake"), Some(TunKind::Tap));
        assert_eq!(declared_kind("other"), None);
        reset();
        assert!(declared().is_empty());
    }

    #[test]
    fn an_address_becomes_a_sockaddr_in() {
        let sa = sockaddr_in(Ipv4Addr::new(10, 9, 0, 1));
        assert_eq!(sa.sa_family, libc::AF_INET as libc::sa_family_t);
        let b: Vec<u8> = sa.sa_data[2..6].iter().map(|&c| c as u8).collect();
        assert_eq!(b, [10, 9, 0, 1]);
    }
}
