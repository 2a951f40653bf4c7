//! The multistage router as data. Built from a multistage file by
//! [`Multistage::from_toml`] (in `file.rs`), which refuses a router that
//! cannot work; everything else reads these types.
//!
//! Front ports are numbered globally, 0..F-1 over all balancers in file
//! order: front port k is what the outside sees as the router's interface
//! k, with address G_k ([`FrontPort::address`]) and MAC F_k
//! ([`FrontPort::mac`], or the interface's own, given at run time).
//!
//! Inside, every frame is addressed by locally administered MACs
//! ("labels"): router i's MAC for front port k ([`router_mac`]) and
//! balancer b's back port j's MAC ([`back_mac`]) unless the file gives
//! real ones. A balancer balances a frame by writing the chosen router's
//! MAC for the frame's front port into its destination; the router knows
//! from that MAC which of its interfaces the frame came in by.

use std::fmt;
use std::net::Ipv4Addr;
use std::time::Duration;

/// The first three bytes of a router's MACs: `02:4d:53` ("MS").
pub const ROUTER_MAC_PREFIX: [u8; 3] = [0x02, 0x4d, 0x53];
/// The first three bytes of a balancer back port's derived MAC:
/// `02:4d:42` ("MB").
pub const BACK_MAC_PREFIX: [u8; 3] = [0x02, 0x4d, 0x42];
/// The EtherType of the balancers' liveness probes and the routers'
/// replies (IEEE 802 local experimental EtherType 2).
pub const PROBE_ETHERTYPE: u16 = 0x88b7;

/// Router `router`'s MAC for front port `front`: `02:4d:53:II:KK:00`.
pub fn router_mac(router: u8, front: u8) -> [u8; 6] {
    [
        ROUTER_MAC_PREFIX[0],
        ROUTER_MAC_PREFIX[1],
        ROUTER_MAC_PREFIX[2],
        router,
        front,
        0,
    ]
}

/// Balancer `balancer`'s back port `port`'s derived MAC:
/// `02:4d:42:BB:JJ:00`.
pub fn back_mac(balancer: u8, port: u8) -> [u8; 6] {
    [
        BACK_MAC_PREFIX[0],
        BACK_MAC_PREFIX[1],
        BACK_MAC_PREFIX[2],
        balancer,
        port,
        0,
    ]
}

/// Whether `mac` has the form of an internal MAC (a router's or a
/// balancer back port's derived one): balancers drop frames from outside
/// that carry one.
pub fn is_internal_mac(mac: &[u8; 6]) -> bool {
    mac[..3] == ROUTER_MAC_PREFIX || mac[..3] == BACK_MAC_PREFIX
}

/// The MAC front port `front` is configured with when the file gives
/// none: locally administered, never of an internal form, and the same in
/// every box's configuration. It works as it is (front ports are
/// promiscuous), but the interface's own MAC should be given with
/// `-D MACk=...` on every box.
pub fn placeholder_front_mac(front: u8) -> [u8; 6] {
    [0x02, 0x4d, 0x46, 0x00, front, 0x01]
}

/// A whole multistage router.
#[derive(Debug, Clone, PartialEq)]
pub struct Multistage {
    /// Its name (namespaces, sockets and messages use it).
    pub name: String,
    /// How balancers choose a router.
    pub policy: Policy,
    /// The flowlet gap (policy `flowlet`): a flow keeps its router while
    /// its packets come closer than this.
    pub delta: Duration,
    /// Where the balancing happens on a balancer.
    pub mode: Mode,
    /// Every balancer probes every router this often.
    pub probe_interval: Duration,
    /// Probe intervals without a reply before a router leaves the
    /// balancing set.
    pub probe_misses: u32,
    /// The front stage.
    pub balancers: Vec<Balancer>,
    /// The back stage.
    pub routers: Vec<Router>,
    /// The Ethernet switch joining the stages (on one machine, a Linux
    /// bridge in a namespace of its own).
    pub switch: String,
    /// The routes every router shares.
    pub routes: Vec<Route>,
}

/// How a balancer spreads frames over the live routers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Per-packet round robin (the paper's).
    RoundRobin,
    /// A hash of the 5-tuple: a flow always takes the same router.
    Flow,
    /// A flow keeps its router while its packets come within delta; a new
    /// flowlet takes the next router.
    Flowlet,
}

impl Policy {
    /// Every policy, in the order the file documents them.
    pub const ALL: [Policy; 3] = [Policy::RoundRobin, Policy::Flow, Policy::Flowlet];

    /// The word the file and `L2Balancer(POLICY ...)` use.
    pub fn word(self) -> &'static str {
        match self {
            Policy::RoundRobin => "rr",
            Policy::Flow => "flow",
            Policy::Flowlet => "flowlet",
        }
    }
}

/// Where a balancer does its work (the paper's §III-A).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Direct Transmission: frames are balanced at layer 2 as they
    /// arrive; with several back ports, DTX-n.
    Dtx,
    /// Output Driver Balancing: IP input processing first (header checks,
    /// a route lookup), the MAC rewritten on the way out.
    Odb,
}

impl Mode {
    /// The word the file uses.
    pub fn word(self) -> &'static str {
        match self {
            Mode::Dtx => "dtx",
            Mode::Odb => "odb",
        }
    }
}

/// A balancer: front ports outside, back ports on the switch.
#[derive(Debug, Clone, PartialEq)]
pub struct Balancer {
    pub name: String,
    /// Its front ports, in file order; their global indices are
    /// consecutive.
    pub fronts: Vec<FrontPort>,
    /// Its back ports (several: DTX-n).
    pub backs: Vec<BackPort>,
}

/// A front (external) port.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontPort {
    /// Its global index k.
    pub index: u8,
    /// Interface name on its balancer.
    pub iface: String,
    /// G_k: the router's address on the port's subnet.
    pub address: Ipv4Addr,
    /// The subnet's prefix length.
    pub prefix_len: u8,
    /// F_k, when the file gives it; else the interface's own, given with
    /// `-D MACk=...` ([`placeholder_front_mac`] until then).
    pub mac: Option<[u8; 6]>,
}

impl FrontPort {
    /// The port's subnet's network address.
    pub fn network(&self) -> Ipv4Addr {
        crate::units::network(self.address, self.prefix_len)
    }

    /// F_k as the configurations write it before `-D`: the file's MAC or
    /// the placeholder.
    pub fn mac_or_placeholder(&self) -> [u8; 6] {
        self.mac
            .unwrap_or_else(|| placeholder_front_mac(self.index))
    }
}

/// A back port, on the switch.
#[derive(Debug, Clone, PartialEq)]
pub struct BackPort {
    /// Interface name on its balancer.
    pub iface: String,
    /// The MAC the file gives, if any; else [`back_mac`].
    pub mac: Option<[u8; 6]>,
}

/// A layer-3 router of the back stage.
#[derive(Debug, Clone, PartialEq)]
pub struct Router {
    pub name: String,
    /// Its back NIC, on the switch.
    pub iface: String,
    /// Its route lookup element.
    pub lookup: Lookup,
}

/// The route lookup element of a router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// `DirectIPLookup` (DIR-24-8).
    Direct,
    /// `RadixIPLookup` (the default).
    Radix,
    /// `StaticIPLookup`.
    Static,
    /// `LookupIPRoute`.
    LookupIpRoute,
}

impl Lookup {
    /// Every lookup, in the order messages list them.
    pub const ALL: [Lookup; 4] = [
        Lookup::Direct,
        Lookup::Radix,
        Lookup::Static,
        Lookup::LookupIpRoute,
    ];

    /// The element class.
    pub fn class(self) -> &'static str {
        match self {
            Lookup::Direct => "DirectIPLookup",
            Lookup::Radix => "RadixIPLookup",
            Lookup::Static => "StaticIPLookup",
            Lookup::LookupIpRoute => "LookupIPRoute",
        }
    }
}

/// A route every router has: traffic for `prefix/len` leaves by front
/// port `port` (a global index), to `gateway` or (when none) straight to
/// the destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub prefix: Ipv4Addr,
    pub len: u8,
    pub port: u8,
    pub gateway: Option<Ipv4Addr>,
}

/// One box of the router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// Index into [`Multistage::balancers`].
    Balancer(usize),
    /// Index into [`Multistage::routers`].
    Router(usize),
}

/// A multistage file that cannot work, with the line (where it has one)
/// and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultistageError(pub String);

impl fmt::Display for MultistageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MultistageError {}

impl Multistage {
    /// Every front port with its balancer's index, in global order.
    pub fn fronts(&self) -> impl Iterator<Item = (usize, &FrontPort)> + '_ {
        self.balancers
            .iter()
            .enumerate()
            .flat_map(|(b, bal)| bal.fronts.iter().map(move |f| (b, f)))
    }

    /// The number of front ports, F.
    pub fn front_count(&self) -> usize {
        self.balancers.iter().map(|b| b.fronts.len()).sum()
    }

    /// Front port `k` and its balancer's index.
    pub fn front(&self, k: u8) -> Option<(usize, &FrontPort)> {
        self.fronts().find(|(_, f)| f.index == k)
    }

    /// The box called `name`.
    pub fn node(&self, name: &str) -> Option<Node> {
        if let Some(b) = self.balancers.iter().position(|b| b.name == name) {
            return Some(Node::Balancer(b));
        }
        self.routers
            .iter()
            .position(|r| r.name == name)
            .map(Node::Router)
    }

    /// Every box's name: the balancers, then the routers.
    pub fn node_names(&self) -> Vec<&str> {
        self.balancers
            .iter()
            .map(|b| b.name.as_str())
            .chain(self.routers.iter().map(|r| r.name.as_str()))
            .collect()
    }

    /// The MAC balancer `b`'s back port `j` uses: the file's, or
    /// [`back_mac`].
    pub fn back_port_mac(&self, b: usize, j: usize) -> [u8; 6] {
        self.balancers[b].backs[j]
            .mac
            .unwrap_or_else(|| back_mac(b as u8, j as u8))
    }

    /// How long a silent router stays in the balancing set.
    pub fn router_timeout(&self) -> Duration {
        self.probe_interval.saturating_mul(self.probe_misses)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_macs_have_their_forms() {
        assert_eq!(router_mac(1, 3), [0x02, 0x4d, 0x53, 1, 3, 0]);
        assert_eq!(back_mac(2, 0), [0x02, 0x4d, 0x42, 2, 0, 0]);
        assert!(is_internal_mac(&router_mac(254, 254)));
        assert!(is_internal_mac(&back_mac(0, 0)));
        assert!(!is_internal_mac(&placeholder_front_mac(7)));
        // Locally administered unicast, all of them.
        for m in [router_mac(0, 0), back_mac(0, 0), placeholder_front_mac(0)] {
            assert_eq!(m[0] & 0x03, 0x02);
        }
    }
}
