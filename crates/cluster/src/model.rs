//! The cluster as data. Built from a cluster file by [`Cluster::from_toml`]
//! (in `file.rs`), which refuses a cluster that cannot work; everything
//! else reads these types.

use std::fmt;
use std::net::Ipv4Addr;
use std::time::Duration;

/// A node's index in [`Cluster::nodes`]; also its id in labels (so at most
/// 255 nodes: 0xff is [`crate::label::NONE`]).
pub type NodeId = u8;

/// A whole cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// Its name (namespaces, sockets and messages use it).
    pub name: String,
    /// The id written into every label (byte 1 of the destination MAC), so
    /// that frames of another cluster on the same wire are refused.
    pub id: u8,
    /// R: the rate of each external port, bits per second.
    pub rate_bps: u64,
    /// The rate of each internal link, bits per second (R by default).
    pub internal_rate_bps: u64,
    /// How the internal links were laid out.
    pub topology: Topology,
    /// Flowlets on (RouteBricks §6.1) or off (per-packet Direct VLB).
    pub flowlets: bool,
    /// delta: packets of a flow closer than this take the same path.
    pub flowlet_delta: Duration,
    /// Hello period on every internal link.
    pub hello_interval: Duration,
    /// Hellos missed in a row before a link is taken as down.
    pub hello_misses: u32,
    /// Whether packets to the broadcast address of an external port's
    /// subnet are forwarded onto it (RFC 2644: off by default).
    pub directed_broadcast: bool,
    /// Nodes; index = [`NodeId`].
    pub nodes: Vec<Node>,
    /// Internal links.
    pub links: Vec<Link>,
    /// The routing table every node shares.
    pub routes: Vec<Route>,
}

/// How the internal links are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// Every pair of nodes with external ports joined by one link.
    FullMesh,
    /// A k-ary n-fly (RouteBricks §3.3): `n` stages of `k^(n-1)`
    /// intermediate-only nodes between the I/O nodes.
    Fly { k: u32, n: u32 },
    /// Links exactly as listed in the file.
    Custom,
}

/// What a node does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Has external ports: input and output node, and intermediate.
    Io,
    /// Only forwards between internal links (a k-ary n-fly's stages).
    Intermediate,
}

/// One server.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    pub role: Role,
    /// External ports (none for [`Role::Intermediate`]).
    pub ports: Vec<Port>,
}

/// An external port.
#[derive(Debug, Clone, PartialEq)]
pub struct Port {
    /// Interface name on the node.
    pub iface: String,
    /// The router's address on the port's subnet.
    pub address: Ipv4Addr,
    /// The subnet's prefix length.
    pub prefix_len: u8,
    /// The interface's MAC, when the file gives it (real servers); else
    /// the interface's own is used.
    pub mac: Option<[u8; 6]>,
}

/// An internal link between two nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub a: NodeId,
    /// Interface name on node `a`.
    pub a_iface: String,
    pub b: NodeId,
    /// Interface name on node `b`.
    pub b_iface: String,
}

/// A route of the shared table: traffic for `prefix/len` leaves the
/// cluster at `node`'s external port `port`, to `gateway` or (when none)
/// straight to the destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub prefix: Ipv4Addr,
    pub len: u8,
    pub node: NodeId,
    /// Index into the node's [`Node::ports`].
    pub port: u8,
    pub gateway: Option<Ipv4Addr>,
}

/// A cluster file that cannot work, with the reason (and the line, when
/// the TOML parser knows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterError(pub String);

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ClusterError {}

/// One end of an internal link, as seen from a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkEnd {
    /// Index into [`Cluster::links`].
    pub link: usize,
    /// The node at the other end.
    pub peer: NodeId,
    /// This node's interface.
    pub iface: String,
}

impl Cluster {
    /// The node called `name`.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as NodeId)
    }

    /// `node`'s internal links, in the order of [`Cluster::links`]: the
    /// order of its internal input and output ports in its configuration.
    pub fn link_ends(&self, node: NodeId) -> Vec<LinkEnd> {
        self.links
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                if l.a == node {
                    Some(LinkEnd {
                        link: i,
                        peer: l.b,
                        iface: l.a_iface.clone(),
                    })
                } else if l.b == node {
                    Some(LinkEnd {
                        link: i,
                        peer: l.a,
                        iface: l.b_iface.clone(),
                    })
                } else {
                    None
                }
            })
            .collect()
    }

    /// Nodes with external ports.
    pub fn io_nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.role == Role::Io)
            .map(|(i, _)| i as NodeId)
    }

    /// R/N: the share of its traffic for one output node an input node
    /// sends directly (Direct VLB), bits per second, N = I/O nodes.
    pub fn direct_share_bps(&self) -> u64 {
        self.rate_bps / (self.io_nodes().count().max(1) as u64)
    }
}
