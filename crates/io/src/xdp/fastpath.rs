//! The XDP fast path: the common IPv4 forwarding case done in the kernel.
//!
//! `bpf/fastpath.c` and its maps: see [`FastPath`].

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard};

use aya::maps::lpm_trie::Key;
use aya::maps::{Array, DevMap, HashMap, LpmTrie, MapData, PerCpuArray, XskMap};
use aya::programs::xdp::XdpLinkId;
use aya::programs::Xdp;
use aya::Ebpf;

use super::program::{self, chain, errno, take, IfKey};
use super::XdpMode;
use crate::queue::DeviceError;

/// The fast path program.
static FASTPATH: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/fastpath.o"));

/// Its name in the object.
const PROG: &str = "bricks_fastpath";

/// Route outputs with a port (`BRICKS_MAX_PORTS` in `bpf/fastpath.c`).
pub const MAX_PORTS: usize = 256;

/// Extra source addresses sent to user space (`BRICKS_MAX_BAD_SRC`).
pub const MAX_BAD_SRC: usize = 256;

/// `bricks_ports[].flags`: the slot describes a port.
const PORT_VALID: u32 = 1;
/// `bricks_ports[].flags`: `dst` is the destination of every frame.
const PORT_STATIC_DST: u32 = 2;

/// Counters before the reasons in `bricks_stats`: forwarded frames and
/// their bytes.
const STAT_REASONS: u32 = 2;

/// Why a frame went to user space, in the order of `bricks_stats` (after
/// `STAT_REASONS`) and of [`FastPathStats::to_user`].
pub const TO_USER_REASONS: [&str; 11] = [
    "not_ipv4",
    "l2_multicast",
    "ip_options",
    "bad_header",
    "bad_address",
    "ttl",
    "no_route",
    "slow_output",
    "too_big",
    "no_neighbour",
    "other_host",
];

/// One route output forwarded by the fast path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FastPathPort {
    /// The output interface, in the input interface's network namespace.
    pub ifname: String,
    /// Ethernet source written on forwarded frames.
    pub src_mac: [u8; 6],
    /// `Some`: the Ethernet destination of every frame (EtherEncap);
    /// `None`: the neighbour table's entry for the next hop (ARPQuerier),
    /// and a frame whose next hop has none goes to user space.
    pub dst_mac: Option<[u8; 6]>,
    /// The largest IPv4 total length forwarded here; a longer packet goes
    /// to user space (which fragments it or answers ICMP). 0: no limit.
    pub mtu: u32,
}

/// What a fast path forwards, fixed when it is made.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FastPathSpec {
    /// Ports by route output number (at most [`MAX_PORTS`]); `None`, or an
    /// output beyond the vector: that output's frames go to user space.
    pub ports: Vec<Option<FastPathPort>>,
    /// Addresses whose frames (as source or destination) always go to
    /// user space, besides
    /// 0.0.0.0/8, 127.0.0.0/8 and 224.0.0.0/3 (at most [`MAX_BAD_SRC`];
    /// a router's own addresses, say).
    pub bad_src: Vec<Ipv4Addr>,
    /// `Some`: frames unicast to another MAC than this one (the input
    /// interface's) go to user space, where FromDevice drops them unless
    /// PROMISC; `None`: any unicast destination.
    pub accept_dst: Option<[u8; 6]>,
    /// The most routes the LPM trie holds (0 is taken as 1).
    pub max_routes: u32,
    /// The most neighbour entries (0 is taken as 1).
    pub max_neighbours: u32,
}

/// A fast path's counters, summed over CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FastPathStats {
    /// Frames forwarded in the kernel.
    pub forwarded: u64,
    /// Their bytes, Ethernet header included.
    pub forwarded_bytes: u64,
    /// Frames sent to user space, by reason, in the order of
    /// [`TO_USER_REASONS`].
    pub to_user: Vec<(&'static str, u64)>,
}

impl FastPathStats {
    /// The count of one reason of [`TO_USER_REASONS`] (0 for an unknown
    /// name).
    pub fn reason(&self, name: &str) -> u64 {
        self.to_user
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, c)| *c)
    }
}

/// An XDP fast path for one input interface: its loaded program and the
/// maps that steer it. Clones share it; two `FastPath`s are equal when
/// they are the same one.
///
/// A router configuration whose IPv4 path is only CheckIPHeader, a route
/// lookup, DecIPTTL and EtherEncap or ARPQuerier does the same work for
/// almost every packet, and that work fits in an XDP program
/// (`bpf/fastpath.c`): it checks the header, looks the destination up in
/// an LPM trie, decrements the TTL (RFC 1624 incremental checksum, as
/// Click's DecIPTTL), writes the Ethernet header and `XDP_REDIRECT`s the
/// frame through a DEVMAP to the output interface, never reaching user
/// space. Every frame the program is not sure about goes, unchanged, to
/// the AF_XDP socket of its receive queue, exactly as bricks' plain
/// steering program sends every frame, so user space handles it as it
/// would with no fast path. Only these reach the kernel's forwarding
/// path:
///
/// 1. an Ethernet unicast destination (the input's own MAC, with
///    [`FastPathSpec::accept_dst`]) and EtherType 0x0800 directly (no
///    VLAN tag);
/// 2. IPv4 with no options (IHL 5), a total length that fills the frame
///    exactly (no Ethernet padding), a correct header checksum;
/// 3. source and destination outside 0.0.0.0/8, 127.0.0.0/8 and
///    224.0.0.0/3, and neither in [`FastPathSpec::bad_src`];
/// 4. TTL above 1;
/// 5. a route whose output is not [`FastPath::SLOW`] and has a port;
/// 6. a total length within the port's MTU;
/// 7. a destination MAC: the port's static one, or the neighbour table's
///    entry for the route's gateway (or the destination itself).
///
/// The counters ([`FastPath::stats`]) say how many frames were forwarded
/// and, by the first rule they failed, how many went to user space.
///
/// A [`FastPath`] is made for one input interface, loaded but not
/// attached; opening an AF_XDP queue of that interface with
/// [`XdpConfig::fast_path`](super::XdpConfig::fast_path) attaches it in
/// place of the plain steering program, and closing the interface's last
/// queue detaches it. Its routes, neighbours and counters stay usable for
/// as long as the `FastPath` lives, attached or not. Every method may be
/// called from any thread while traffic flows: each is a few `bpf(2)`
/// map updates behind a mutex, never work per packet.
///
/// **The output interface must accept redirected frames.** Native XDP
/// hands a redirected frame to the output driver's `ndo_xdp_xmit`. A
/// veth passes it to its peer, which takes it only while the peer has
/// NAPI enabled: an XDP program attached to the peer, or GRO switched on
/// there (`ethtool -K <peer> gro on`, Linux 5.13+). Otherwise the frame
/// is dropped by the kernel, after the fast path counted it forwarded.
/// The kernel also drops a redirected frame longer than the output's MTU
/// (plus its Ethernet header): give [`FastPathPort::mtu`] the output's
/// MTU.
///
/// Interface names are resolved, and the program attached, in the
/// calling thread's network namespace; a fast path is attached only in
/// the namespace where it was made.
#[derive(Clone)]
pub struct FastPath(Arc<Inner>);

// Callable from any thread: the control plane updates routes while the
// queues run elsewhere.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<FastPath>();
};

struct Inner {
    input: String,
    /// The network namespace (device, inode) the names were resolved in.
    netns: (u64, u64),
    /// Ports by output, as given.
    ports: usize,
    maps: Mutex<Maps>,
}

/// The loaded object, its attachment and every map handle.
struct Maps {
    ebpf: Ebpf,
    /// Set while the program is attached to the input interface.
    link: Option<XdpLinkId>,
    native: bool,
    handles: Handles,
}

/// The map handles: file descriptors of their own, valid while they live,
/// attached or not.
struct Handles {
    xsks: XskMap<MapData>,
    routes: LpmTrie<MapData, [u8; 4], [u32; 2]>,
    neigh: HashMap<MapData, [u32; 2], [u8; 8]>,
    stats: PerCpuArray<MapData, u64>,
    /// Held so the filled maps live as long as the program's users.
    _ports: Array<MapData, [u8; 20]>,
    _tx: DevMap<MapData>,
    _bad_src: HashMap<MapData, u32, u8>,
    _input: Array<MapData, [u8; 24]>,
}

impl core::fmt::Debug for FastPath {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FastPath")
            .field("input", &self.0.input)
            .finish_non_exhaustive()
    }
}

impl PartialEq for FastPath {
    fn eq(&self, other: &FastPath) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for FastPath {}

/// `bricks_ports` value: `struct port` of `bpf/fastpath.c`.
fn port_value(flags: u32, src: [u8; 6], dst: [u8; 6], mtu: u32) -> [u8; 20] {
    let mut v = [0u8; 20];
    v[0..4].copy_from_slice(&flags.to_ne_bytes());
    v[4..10].copy_from_slice(&src);
    v[10..16].copy_from_slice(&dst);
    v[16..20].copy_from_slice(&mtu.to_ne_bytes());
    v
}

/// The bit of the program's bad-address filter for `w` (as [`wire`]
/// gives it): `filter_bit` in `bpf/fastpath.c`.
fn filter_bit(w: u32) -> u64 {
    1 << ((w ^ (w >> 8) ^ (w >> 16) ^ (w >> 24)) & 63)
}

/// An address as the program reads it from the packet: network order in
/// memory.
fn wire(a: Ipv4Addr) -> u32 {
    u32::from_ne_bytes(a.octets())
}

fn netns() -> Result<(u64, u64), DeviceError> {
    use std::os::unix::fs::MetadataExt;
    let ns = std::fs::metadata("/proc/thread-self/ns/net")
        .map_err(|e| DeviceError::Io(format!("reading this thread's network namespace: {e}")))?;
    Ok((ns.dev(), ns.ino()))
}

impl FastPath {
    /// A route output meaning "to user space" (an equal-cost group, an
    /// output with work the fast path does not do).
    pub const SLOW: u32 = u32::MAX;

    /// Loads the fast path for `input_ifname` and fills its ports; it is
    /// attached when a queue of that interface opens with it
    /// ([`XdpConfig::fast_path`](super::XdpConfig::fast_path)). The route
    /// and neighbour tables start empty: every frame goes to user space
    /// until routes are set.
    ///
    /// Fails with the name of an interface that does not exist (in the
    /// calling thread's network namespace), on more than [`MAX_PORTS`]
    /// ports or [`MAX_BAD_SRC`] bad sources, or when the kernel refuses
    /// the program.
    pub fn new(input_ifname: &str, spec: FastPathSpec) -> Result<FastPath, DeviceError> {
        let io = |what: String| DeviceError::Io(format!("fast path of {input_ifname}: {what}"));
        crate::ifinfo::index(input_ifname).map_err(|e| io(e.to_string()))?;
        if spec.ports.len() > MAX_PORTS {
            return Err(io(format!(
                "{} route outputs with ports; the fast path has room for {MAX_PORTS}",
                spec.ports.len()
            )));
        }
        let bad_src: BTreeSet<Ipv4Addr> = spec.bad_src.iter().copied().collect();
        if bad_src.len() > MAX_BAD_SRC {
            return Err(io(format!(
                "{} bad source addresses; the fast path has room for {MAX_BAD_SRC}",
                bad_src.len()
            )));
        }
        let mut outputs = Vec::new();
        for (i, p) in spec.ports.iter().enumerate() {
            if let Some(p) = p {
                let index =
                    crate::ifinfo::index(&p.ifname).map_err(|e| io(format!("output {i}: {e}")))?;
                outputs.push((i as u32, index, p));
            }
        }
        let netns = netns()?;
        let sizes = [
            ("bricks_routes", spec.max_routes.max(1)),
            ("bricks_neigh", spec.max_neighbours.max(1)),
        ];
        let mut ebpf = program::load(input_ifname, FASTPATH, PROG, &sizes, |_| Ok(()))?;
        let handles = (|| -> Result<Handles, String> {
            let xsks = take(&mut ebpf, "bricks_xsks")?;
            let routes = take(&mut ebpf, "bricks_routes")?;
            let neigh = take(&mut ebpf, "bricks_neigh")?;
            let stats = take(&mut ebpf, "bricks_stats")?;
            let mut ports: Array<MapData, [u8; 20]> = take(&mut ebpf, "bricks_ports")?;
            let mut tx: DevMap<MapData> = take(&mut ebpf, "bricks_tx")?;
            let mut bad: HashMap<MapData, u32, u8> = take(&mut ebpf, "bricks_bad_src")?;
            let mut input: Array<MapData, [u8; 24]> = take(&mut ebpf, "bricks_input")?;
            // `struct input`: check_mac, mac, pad, bad_filter.
            let mut v = [0u8; 24];
            if let Some(mac) = spec.accept_dst {
                v[0..4].copy_from_slice(&1u32.to_ne_bytes());
                v[4..10].copy_from_slice(&mac);
            }
            let filter = bad_src.iter().fold(0u64, |f, a| f | filter_bit(wire(*a)));
            v[16..24].copy_from_slice(&filter.to_ne_bytes());
            input
                .set(0, v, 0)
                .map_err(|e| format!("the input's settings: {}", chain(&e)))?;
            for &(i, index, p) in &outputs {
                let (flags, dst) = match p.dst_mac {
                    Some(d) => (PORT_VALID | PORT_STATIC_DST, d),
                    None => (PORT_VALID, [0; 6]),
                };
                tx.set(i, index, None, 0)
                    .map_err(|e| format!("output {i} ({}): {}", p.ifname, chain(&e)))?;
                ports
                    .set(i, port_value(flags, p.src_mac, dst, p.mtu), 0)
                    .map_err(|e| format!("output {i} ({}): {}", p.ifname, chain(&e)))?;
            }
            for a in &bad_src {
                bad.insert(wire(*a), 1, 0)
                    .map_err(|e| format!("bad source {a}: {}", chain(&e)))?;
            }
            Ok(Handles {
                xsks,
                routes,
                neigh,
                stats,
                _ports: ports,
                _tx: tx,
                _bad_src: bad,
                _input: input,
            })
        })()
        .map_err(io)?;
        Ok(FastPath(Arc::new(Inner {
            input: input_ifname.to_string(),
            netns,
            ports: spec.ports.len(),
            maps: Mutex::new(Maps {
                ebpf,
                link: None,
                native: false,
                handles,
            }),
        })))
    }

    fn maps(&self) -> MutexGuard<'_, Maps> {
        // Every change under the lock is one map update: a panic elsewhere
        // leaves the handles consistent.
        self.0.maps.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The input interface this fast path was made for.
    pub fn input(&self) -> &str {
        &self.0.input
    }

    /// Adds or replaces the route to `addr/len` (host bits are ignored):
    /// its frames leave through port `output` ([`FastPath::SLOW`], or an
    /// output with no port: to user space), to `gateway`'s neighbour
    /// entry, or with no gateway to the destination's own.
    pub fn set_route(
        &self,
        addr: Ipv4Addr,
        len: u8,
        output: u32,
        gateway: Option<Ipv4Addr>,
    ) -> Result<(), DeviceError> {
        let key = route_key(addr, len)?;
        let value = [output, gateway.map_or(0, wire)];
        self.maps()
            .handles
            .routes
            .insert(&key, value, 0)
            .map_err(|e| {
                DeviceError::Io(format!(
                    "fast path of {}: cannot set the route to {addr}/{len}: {}",
                    self.0.input,
                    chain(&e)
                ))
            })
    }

    /// Removes the route to `addr/len`; a route that is not there is no
    /// error.
    pub fn remove_route(&self, addr: Ipv4Addr, len: u8) -> Result<(), DeviceError> {
        let key = route_key(addr, len)?;
        match self.maps().handles.routes.remove(&key) {
            Ok(()) => Ok(()),
            Err(e) if errno(&e) == Some(libc::ENOENT) => Ok(()),
            Err(e) => Err(DeviceError::Io(format!(
                "fast path of {}: cannot remove the route to {addr}/{len}: {}",
                self.0.input,
                chain(&e)
            ))),
        }
    }

    /// Sets the MAC address of neighbour `ip` on port `output`, used for
    /// routes through that port with no static destination.
    pub fn set_neighbour(
        &self,
        output: u32,
        ip: Ipv4Addr,
        mac: [u8; 6],
    ) -> Result<(), DeviceError> {
        if output as usize >= self.0.ports {
            return Err(DeviceError::Io(format!(
                "fast path of {}: neighbour {ip} on output {output}, which has no port \
                 (the fast path has {})",
                self.0.input, self.0.ports
            )));
        }
        let mut value = [0u8; 8];
        value[..6].copy_from_slice(&mac);
        self.maps()
            .handles
            .neigh
            .insert([output, wire(ip)], value, 0)
            .map_err(|e| {
                DeviceError::Io(format!(
                    "fast path of {}: cannot set neighbour {ip} on output {output}: {}",
                    self.0.input,
                    chain(&e)
                ))
            })
    }

    /// Forgets neighbour `ip` on port `output` (its frames go to user
    /// space again); one that is not there is ignored.
    pub fn remove_neighbour(&self, output: u32, ip: Ipv4Addr) {
        let _ = self.maps().handles.neigh.remove(&[output, wire(ip)]);
    }

    /// The counters, summed over CPUs (one `bpf(2)` call per counter: read
    /// them at report intervals).
    pub fn stats(&self) -> FastPathStats {
        let maps = self.maps();
        let read = |i: u32| -> u64 {
            maps.handles
                .stats
                .get(&i, 0)
                .map(|v| v.iter().copied().fold(0u64, u64::wrapping_add))
                .unwrap_or(0)
        };
        FastPathStats {
            forwarded: read(0),
            forwarded_bytes: read(1),
            to_user: TO_USER_REASONS
                .iter()
                .zip(STAT_REASONS..)
                .map(|(&name, i)| (name, read(i)))
                .collect(),
        }
    }

    /// `native` or `generic` while attached to the input interface, `None`
    /// before a queue opened with it and after the last one closed.
    pub fn mode(&self) -> Option<&'static str> {
        let maps = self.maps();
        maps.link
            .as_ref()
            .map(|_| if maps.native { "native" } else { "generic" })
    }

    /// Attaches the program to `ifname` (index `ifindex`, `key` as the
    /// steering table knows it); returns whether it runs natively and why
    /// not.
    pub(crate) fn attach(
        &self,
        ifname: &str,
        ifindex: u32,
        key: IfKey,
        mode: XdpMode,
    ) -> Result<(bool, Option<String>), DeviceError> {
        if ifname != self.0.input {
            return Err(DeviceError::Io(format!(
                "{ifname}: the fast path given was made for {}; make one per input interface",
                self.0.input
            )));
        }
        if (key.0, key.1) != self.0.netns {
            return Err(DeviceError::Io(format!(
                "{ifname}: the fast path was made in another network namespace; \
                 make it in the namespace where the interface is opened"
            )));
        }
        let mut maps = self.maps();
        if maps.link.is_some() {
            return Err(DeviceError::Io(format!(
                "{ifname}: the fast path is already attached; one fast path serves one interface"
            )));
        }
        let a = program::attach_loaded(&mut maps.ebpf, PROG, ifname, ifindex, mode)?;
        maps.link = Some(a.link);
        maps.native = a.native;
        Ok((a.native, a.fallback_reason))
    }

    /// Detaches the program (nothing when it is not attached).
    pub(crate) fn detach(&self) {
        let mut maps = self.maps();
        if let Some(link) = maps.link.take() {
            if let Some(p) = maps
                .ebpf
                .program_mut(PROG)
                .and_then(|p| <&mut Xdp>::try_from(p).ok())
            {
                let _ = p.detach(link);
            }
        }
    }

    /// Sends the frames of receive queue `queue` that the fast path does
    /// not forward to AF_XDP socket `fd`.
    pub(crate) fn set_xsk(
        &self,
        queue: u32,
        fd: std::os::fd::BorrowedFd<'_>,
    ) -> Result<(), String> {
        self.maps()
            .handles
            .xsks
            .set(queue, fd, 0)
            .map_err(|e| chain(&e))
    }

    /// Takes receive queue `queue`'s socket out of the XSKMAP.
    pub(crate) fn unset_xsk(&self, queue: u32) {
        let _ = self.maps().handles.xsks.unset(queue);
    }
}

/// The LPM trie key of `addr/len`, host bits cleared.
fn route_key(addr: Ipv4Addr, len: u8) -> Result<Key<[u8; 4]>, DeviceError> {
    if len > 32 {
        return Err(DeviceError::Io(format!(
            "route {addr}/{len}: an IPv4 prefix is at most 32 bits"
        )));
    }
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    let net = u32::from(addr) & mask;
    Ok(Key::new(u32::from(len), net.to_be_bytes()))
}
