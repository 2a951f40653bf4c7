//! Virtual routers on one box as data. Built from a virtual-router file by
//! [`VirtualRouters::from_toml`] (in `file.rs`), which refuses a box that
//! cannot work; the configuration generator and the description read these
//! types.

use std::fmt;
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// Every virtual router of one box and the physical links they share.
#[derive(Debug, Clone, PartialEq)]
pub struct VirtualRouters {
    /// How demultiplexed packets reach the routers.
    pub queueing: Queueing,
    /// The box's physical interfaces.
    pub links: Vec<Link>,
    /// The virtual routers.
    pub routers: Vec<Router>,
}

/// How the demultiplexer hands packets to the routers (Egi et al. §3.2,
/// Fig. 15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queueing {
    /// Fig. 15(a): the demultiplexer pushes each packet straight into its
    /// router, run to completion on the core that received it.
    Direct,
    /// Fig. 15(b): each router interface gets an input queue, drained by a
    /// task whose share of the CPU follows the router's weight.
    PerRouter,
}

/// What tells a link's routers apart on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demux {
    /// 802.1Q VLAN ID: each router interface is a VLAN of the trunk.
    Vlan,
    /// Destination MAC: each router interface has a MAC of its own.
    Mac,
    /// Top MPLS label.
    Mpls,
    /// IP-in-IP (RFC 2003): the outer destination is the tunnel's local
    /// address.
    Ipip,
}

impl Demux {
    /// The word in the file and in `VRDemux(BY ...)`.
    pub fn word(self) -> &'static str {
        match self {
            Demux::Vlan => "vlan",
            Demux::Mac => "mac",
            Demux::Mpls => "mpls",
            Demux::Ipip => "ipip",
        }
    }
}

/// Where broadcast frames of a MAC-demultiplexed link go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broadcast {
    /// A copy to every router interface on the link (ARP requests reach
    /// whichever router owns the address).
    Replicate,
    /// Nowhere (dropped and counted).
    Drop,
    /// To this router (an index into [`VirtualRouters::routers`]), the
    /// link's default router.
    Router(usize),
}

/// The scheduler that shares a link's output between its routers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduler {
    /// Stride scheduling by tickets (`StrideSched`): packets in proportion
    /// to the weights.
    Stride,
    /// Deficit round robin (`DRRSched`): bytes in proportion to the
    /// weights.
    Drr,
}

/// A physical interface of the box.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// The interface's name (FromDevice/ToDevice's DEVNAME).
    pub name: String,
    /// Its MAC, when the file gives it; else `-D MAC_<name>=...` at run
    /// time.
    pub mac: Option<[u8; 6]>,
    /// How its routers are told apart.
    pub demux: Demux,
    /// The box's own address on the link (IP-in-IP only: the underlay).
    pub underlay: Option<(Ipv4Addr, u8)>,
    /// The underlay's next hop for tunnel remotes off its subnet (IP-in-IP
    /// only).
    pub gateway: Option<Ipv4Addr>,
    /// Where broadcasts go (MAC demultiplexing only; else `Drop`).
    pub broadcast: Broadcast,
    /// How the routers share the link's output.
    pub scheduler: Scheduler,
    /// The link's IP MTU.
    pub mtu: u16,
}

/// The route lookup element of a router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// DIR-24-8: the fastest, a fixed table of 2^24 entries per router.
    Direct,
    /// A 4-bit-stride trie: memory in proportion to the routes.
    Radix,
    /// A table read once from the configuration.
    Static,
    /// Click's general route table element (DIR-24-8 in bricks).
    LookupIpRoute,
}

impl Lookup {
    /// Every choice, in the order messages list them.
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

/// Where a router's packets for itself go once pings are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local {
    /// Counted and dropped (the router has no host stack behind it).
    Discard,
    /// To `ToHost(host_<router>)`, with an Ethernet header as Click's IP
    /// router gives them.
    Host,
}

/// One virtual router: a whole IPv4 router of its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Router {
    /// Its name: the compound element `NAME` whose elements are `NAME/...`.
    pub name: String,
    /// Its share of the CPU and of every shared link, relative to the
    /// other routers' weights.
    pub weight: u32,
    /// Its route lookup element.
    pub lookup: Lookup,
    /// A routes file the lookup element reads (`PREFIX [GATEWAY] OUTPUT`
    /// per line; output 0 is local delivery, output i + 1 interface i),
    /// as the file named it, resolved against the file's directory.
    pub routes_file: Option<PathBuf>,
    /// Routes given in the file.
    pub routes: Vec<Route>,
    /// Its interfaces, in the file's order (route table output i + 1 is
    /// interface i).
    pub interfaces: Vec<Interface>,
    /// Local delivery.
    pub local: Local,
}

/// A router's interface: its share of one link.
#[derive(Debug, Clone, PartialEq)]
pub struct Interface {
    /// Its name within the router (routes name it): given, else the
    /// link's name, or `LINK.N` when the router has several interfaces on
    /// the link.
    pub name: String,
    /// Index into [`VirtualRouters::links`].
    pub link: usize,
    /// What marks its frames on the link.
    pub tag: Tag,
    /// The router's address on the interface.
    pub address: Ipv4Addr,
    /// The interface subnet's prefix length.
    pub prefix_len: u8,
}

/// What marks an interface's packets on its link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// An 802.1Q VLAN ID, 1..=4094.
    Vlan(u16),
    /// The interface's own MAC (given, or derived by
    /// [`VirtualRouters::derived_mac`]).
    Mac([u8; 6]),
    /// MPLS: the label it receives (the demultiplexing tag) and the label
    /// it sends with.
    Mpls { incoming: u32, outgoing: u32 },
    /// An IP-in-IP tunnel between the box's `local` underlay address and
    /// `remote`.
    Tunnel { local: Ipv4Addr, remote: Ipv4Addr },
}

impl Tag {
    /// `vlan 10`, `mac 02:..`, `mpls in 100 out 200`, `tunnel A -> B`.
    pub fn text(&self) -> String {
        match self {
            Tag::Vlan(v) => format!("vlan {v}"),
            Tag::Mac(m) => format!("mac {}", crate::net::format_mac(m)),
            Tag::Mpls { incoming, outgoing } => format!("mpls in {incoming} out {outgoing}"),
            Tag::Tunnel { local, remote } => format!("tunnel {local} -> {remote}"),
        }
    }
}

/// A route of one router: traffic for `prefix/len` leaves by `interface`,
/// to `gateway` or (when none) straight to the destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub prefix: Ipv4Addr,
    pub len: u8,
    pub gateway: Option<Ipv4Addr>,
    /// Index into the router's [`Router::interfaces`].
    pub interface: usize,
}

/// A virtual-router file that cannot work, with the reason (and the line,
/// where the reason has a place in the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VrError(pub String);

impl fmt::Display for VrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for VrError {}

impl VirtualRouters {
    /// The router called `name`.
    pub fn router(&self, name: &str) -> Option<&Router> {
        self.routers.iter().find(|r| r.name == name)
    }

    /// The MAC an interface of a MAC-demultiplexed link gets when the file
    /// gives none: locally administered, `02:76` ("v" in ASCII), the
    /// router's index in two bytes, the interface's index, then 01. Unique
    /// on the box; the file's own MACs are checked against them.
    pub fn derived_mac(router: usize, interface: usize) -> [u8; 6] {
        [
            0x02,
            0x76,
            (router >> 8) as u8,
            router as u8,
            interface as u8,
            0x01,
        ]
    }

    /// The MAC a link's configuration uses until `-D MAC_<link>=...` gives
    /// the real one: locally administered and of a form no derived MAC has.
    pub fn placeholder_mac(link: usize) -> [u8; 6] {
        [0x02, 0x76, 0xff, (link >> 8) as u8, link as u8, 0x01]
    }

    /// The interfaces on link `link`, as (router, interface) indices, in
    /// the order of the routers and of their interfaces: the order of the
    /// link's demultiplexer outputs.
    pub fn link_interfaces(&self, link: usize) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        for (r, router) in self.routers.iter().enumerate() {
            for (i, itf) in router.interfaces.iter().enumerate() {
                if itf.link == link {
                    v.push((r, i));
                }
            }
        }
        v
    }

    /// The routers with at least one interface on link `link`, in order.
    pub fn link_routers(&self, link: usize) -> Vec<usize> {
        let mut v: Vec<usize> = self.link_interfaces(link).iter().map(|&(r, _)| r).collect();
        v.dedup();
        v
    }

    /// The IP MTU of a router interface: its link's, less the 4 bytes of
    /// an MPLS label or the 20 of an outer IPv4 header.
    pub fn interface_mtu(&self, itf: &Interface) -> u16 {
        let mtu = self.links[itf.link].mtu;
        match itf.tag {
            Tag::Vlan(_) | Tag::Mac(_) => mtu,
            Tag::Mpls { .. } => mtu - 4,
            Tag::Tunnel { .. } => mtu - 20,
        }
    }
}
