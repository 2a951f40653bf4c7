//! The cluster file: a TOML description of the servers, their external
//! ports, the internal links and the routing table they share, read into
//! a [`Cluster`] and refused, with the reason, when it cannot work.
//!
//! ```toml
//! name = "rb4"              # required; a-z, 0-9 and '-', at most 8 characters
//!                           # (it prefixes namespace and interface names)
//! id = 1                    # cluster id in every label, 0..=255; default 1
//! rate = "100Mbps"          # R per external port: bps, kbps (Kbps), Mbps or Gbps; required
//! internal_rate = "100Mbps" # each internal link's rate; default = rate
//! topology = "full-mesh"    # "full-mesh" (default), "K-ary N-fly" (e.g. "3-ary 2-fly")
//!                           # or "custom"
//! max_fanout = 3            # optional: most internal links a server can have
//!                           # (checked for full-mesh and custom)
//! flowlets = true           # RouteBricks §6.1 flowlets; default true
//! flowlet_delta = "100ms"   # delta: us, ms or s; default 100ms
//! hello_interval = "50ms"   # hello period on every internal link; default 50ms
//! hello_misses = 3          # hellos missed in a row before a link is down; default 3
//! directed_broadcast = false # forward packets to an external port's subnet
//!                           # broadcast onto it (RFC 2644); default false
//! routes_file = "rb4.routes" # optional, relative to this file; lines
//!                           # "PREFIX/LEN NODE PORT [GATEWAY]", '#' comments
//!
//! [[node]]
//! name = "n1"               # a-z and 0-9, at most 4 characters (it is in
//!                           # interface names)
//! [[node.port]]             # an external port; a node without any is
//! iface = "ext0"            # intermediate-only (custom topology only)
//! address = "10.1.0.1/24"   # the router's address on the port's subnet
//! mac = "02:00:00:00:01:01" # optional: the interface's MAC, written into the
//!                           # node's configuration (else given with -D)
//!
//! [[node]]
//! name = "n2"
//! [[node.port]]
//! iface = "ext0"
//! address = "10.2.0.1/24"
//!
//! [[link]]                  # only with topology = "custom"
//! a = "n1"
//! a_iface = "vn2"           # optional: "v" + the peer's name by default
//! b = "n2"
//! b_iface = "vn1"
//!
//! [[route]]
//! prefix = "10.2.0.0/24"
//! node = "n2"               # traffic for the prefix leaves the cluster at n2,
//! port = "ext0"             # by this port (its iface),
//! gateway = "10.2.0.254"    # to this next hop; default: straight to the destination
//! ```
//!
//! With `topology = "full-mesh"` every pair of nodes gets one link, in the
//! order (0,1), (0,2), .., (1,2), ..; the interface on each side is "v"
//! plus the other node's name. With `topology = "K-ary N-fly"` (RouteBricks
//! §3.3) the listed nodes are the I/O nodes, at most K^N of them, and N
//! stages of K^(N-1) intermediate-only nodes named `s{stage}{index}` (s10,
//! s11, .., s20, ..) are added: see [`crate::topology`] for the wiring.
//! `conf/cluster/rb4.toml` (the paper's RB4) and `conf/cluster/fly.toml` (a
//! 3-ary 2-fly) are complete examples.
//!
//! Unknown keys are refused (a typo is an error, with the line and
//! column), and so is every cluster that cannot work: no nodes or more
//! than 255; names too long or with other characters; the same name,
//! interface, MAC or subnet twice; a MAC of the cluster's label form; a
//! full mesh larger than `max_fanout` allows; a fly with K < 2, N < 1 or
//! more I/O nodes than K^N; custom links from a node to itself, twice
//! between two nodes, or leaving the cluster in pieces; routes to an
//! unknown node or port, with host bits set, given twice, or via a gateway
//! off the port's subnet; zero rates, zero `hello_misses` or a zero
//! `flowlet_delta`. Where the reason has a place in the file, the message
//! starts with its line.

use crate::label;
use crate::model::{Cluster, ClusterError, Link, Node, NodeId, Port, Role, Route, Topology};
use crate::topology::fly_layout;
use crate::units::{
    broadcast, format_mac, network, overlap, parse_duration, parse_mac, parse_prefix, parse_rate,
};
use serde::Deserialize;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;

/// Most nodes in a cluster: node ids are one byte and 0xff is
/// [`label::NONE`].
pub const MAX_NODES: usize = 255;
/// Most external ports of one node: port indices are one byte of a label.
pub const MAX_PORTS: usize = 255;
/// Longest cluster name.
pub const MAX_CLUSTER_NAME: usize = 8;
/// Longest node name.
pub const MAX_NODE_NAME: usize = 4;
/// Longest interface name (Linux's IFNAMSIZ less the NUL).
pub const MAX_IFACE: usize = 15;
/// Largest routes file read.
const MAX_ROUTES_FILE: u64 = 64 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCluster {
    name: Spanned<String>,
    id: Option<Spanned<i64>>,
    rate: Spanned<String>,
    internal_rate: Option<Spanned<String>>,
    topology: Option<Spanned<String>>,
    max_fanout: Option<Spanned<i64>>,
    flowlets: Option<bool>,
    flowlet_delta: Option<Spanned<String>>,
    hello_interval: Option<Spanned<String>>,
    hello_misses: Option<Spanned<i64>>,
    directed_broadcast: Option<bool>,
    routes_file: Option<Spanned<String>>,
    #[serde(default)]
    node: Vec<FileNode>,
    #[serde(default)]
    link: Vec<FileLink>,
    #[serde(default)]
    route: Vec<FileRoute>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileNode {
    name: Spanned<String>,
    #[serde(default)]
    port: Vec<FilePort>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilePort {
    iface: Spanned<String>,
    address: Spanned<String>,
    mac: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLink {
    a: Spanned<String>,
    a_iface: Option<Spanned<String>>,
    b: Spanned<String>,
    b_iface: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRoute {
    prefix: Spanned<String>,
    node: Spanned<String>,
    port: Spanned<String>,
    gateway: Option<Spanned<String>>,
}

/// A route as written, in the file or the routes file, with where.
struct RouteText {
    at: String,
    prefix: String,
    node: String,
    port: String,
    gateway: Option<String>,
}

impl Cluster {
    /// Reads a cluster file's text. A `routes_file` is read relative to
    /// the current directory; [`Cluster::load`] reads it relative to the
    /// cluster file.
    pub fn from_toml(text: &str) -> Result<Cluster, ClusterError> {
        Cluster::from_toml_in(text, Path::new("."))
    }

    /// Reads a cluster file's text; a `routes_file` is read relative to
    /// `dir`.
    pub fn from_toml_in(text: &str, dir: &Path) -> Result<Cluster, ClusterError> {
        let file: FileCluster = bricks_spec::from_toml(text).map_err(ClusterError)?;
        build(text, file, dir)
    }

    /// Reads and checks a cluster file.
    pub fn load(path: &Path) -> Result<Cluster, ClusterError> {
        let (text, dir) = bricks_spec::read(path).map_err(ClusterError)?;
        Cluster::from_toml_in(&text, dir)
    }
}

/// Builds error messages that start with a place in the file.
type Places<'a> = bricks_spec::Places<'a, ClusterError>;

fn plain(message: impl Into<String>) -> ClusterError {
    ClusterError(message.into())
}

fn valid_cluster_name(s: &str) -> bool {
    bricks_spec::valid_name(s, MAX_CLUSTER_NAME, true)
}

fn valid_node_name(s: &str) -> bool {
    bricks_spec::valid_name(s, MAX_NODE_NAME, false)
}

/// Interface names: what Linux takes, less what would need quoting in a
/// Click configuration or a shell.
fn check_iface(s: &str) -> Result<(), String> {
    bricks_spec::check_iface(s, "interface", MAX_IFACE)
}

fn positive_rate(p: &Places<'_>, key: &str, s: &Spanned<String>) -> Result<u64, ClusterError> {
    let bps = parse_rate(s.get_ref()).map_err(|e| p.err(s, format!("{key}: {e}")))?;
    if bps == 0 {
        return Err(p.err(s, format!("{key} is 0: a cluster needs a rate above 0")));
    }
    Ok(bps)
}

fn duration(
    p: &Places<'_>,
    key: &str,
    s: Option<&Spanned<String>>,
    default: Duration,
) -> Result<Duration, ClusterError> {
    match s {
        None => Ok(default),
        Some(s) => parse_duration(s.get_ref()).map_err(|e| p.err(s, format!("{key}: {e}"))),
    }
}

/// Reads `K-ary N-fly` (and `full-mesh`, `custom`).
fn parse_topology(s: &str) -> Result<Topology, String> {
    let expected = "expected \"full-mesh\", \"K-ary N-fly\" (e.g. \"3-ary 2-fly\") or \"custom\"";
    match s.trim() {
        "full-mesh" => return Ok(Topology::FullMesh),
        "custom" => return Ok(Topology::Custom),
        _ => {}
    }
    let words: Vec<&str> = s.split_whitespace().collect();
    let fly = match words.as_slice() {
        [k, n] => k
            .strip_suffix("-ary")
            .and_then(|k| k.parse::<u32>().ok())
            .zip(n.strip_suffix("-fly").and_then(|n| n.parse::<u32>().ok())),
        _ => None,
    };
    let Some((k, n)) = fly else {
        return Err(format!("topology `{s}`: {expected}"));
    };
    if k < 2 {
        return Err(format!(
            "topology `{s}`: a k-ary n-fly needs k >= 2 (k is each stage node's fanout)"
        ));
    }
    if n < 1 {
        return Err(format!("topology `{s}`: a k-ary n-fly needs n >= 1 stage"));
    }
    Ok(Topology::Fly { k, n })
}

fn build(text: &str, f: FileCluster, dir: &Path) -> Result<Cluster, ClusterError> {
    let p = Places::new(text, ClusterError);

    // The cluster's own keys.
    let name = f.name.get_ref().clone();
    if !valid_cluster_name(&name) {
        return Err(p.err(
            &f.name,
            format!(
                "cluster name `{name}`: use a-z, 0-9 and '-', at most {MAX_CLUSTER_NAME} \
                 characters (it prefixes namespace and interface names)"
            ),
        ));
    }
    let id = match &f.id {
        None => 1,
        Some(s) => u8::try_from(*s.get_ref())
            .map_err(|_| p.err(s, format!("id {} is not 0 to 255", s.get_ref())))?,
    };
    let rate_bps = positive_rate(&p, "rate", &f.rate)?;
    let internal_rate_bps = match &f.internal_rate {
        None => rate_bps,
        Some(s) => positive_rate(&p, "internal_rate", s)?,
    };
    let topology = match &f.topology {
        None => Topology::FullMesh,
        Some(s) => parse_topology(s.get_ref()).map_err(|e| p.err(s, e))?,
    };
    let max_fanout = match &f.max_fanout {
        None => None,
        Some(s) => Some(
            usize::try_from(*s.get_ref())
                .map_err(|_| p.err(s, format!("max_fanout {} is below 0", s.get_ref())))?,
        ),
    };
    let flowlets = f.flowlets.unwrap_or(true);
    let flowlet_delta = duration(
        &p,
        "flowlet_delta",
        f.flowlet_delta.as_ref(),
        Duration::from_millis(100),
    )?;
    if flowlet_delta.is_zero() {
        let s = f.flowlet_delta.as_ref().expect("the default is not 0");
        return Err(p.err(
            s,
            "flowlet_delta is 0; use flowlets = false to turn flowlets off",
        ));
    }
    let hello_interval = duration(
        &p,
        "hello_interval",
        f.hello_interval.as_ref(),
        Duration::from_millis(50),
    )?;
    if hello_interval.is_zero() {
        let s = f.hello_interval.as_ref().expect("the default is not 0");
        return Err(p.err(s, "hello_interval is 0: hellos need a period"));
    }
    let hello_misses =
        match &f.hello_misses {
            None => 3,
            Some(s) => match u32::try_from(*s.get_ref()) {
                Ok(0) => return Err(p.err(
                    s,
                    "hello_misses is 0: a link is taken as down after at least one missed hello",
                )),
                Ok(m) => m,
                Err(_) => {
                    return Err(p.err(
                        s,
                        format!("hello_misses {} is not 1 to {}", s.get_ref(), u32::MAX),
                    ))
                }
            },
        };

    // Nodes and their external ports.
    if f.node.is_empty() {
        return Err(plain(
            "no nodes: a cluster needs at least one [[node]] with an external port",
        ));
    }
    if f.node.len() > MAX_NODES {
        return Err(plain(format!(
            "{} nodes: a cluster has at most {MAX_NODES} (node ids are one byte)",
            f.node.len()
        )));
    }
    let mut nodes: Vec<Node> = Vec::with_capacity(f.node.len());
    let mut names: HashMap<String, String> = HashMap::new();
    for n in &f.node {
        let node_name = n.name.get_ref();
        if !valid_node_name(node_name) {
            return Err(p.err(
                &n.name,
                format!(
                    "node name `{node_name}`: use a-z and 0-9, at most {MAX_NODE_NAME} \
                     characters (it is in interface names)"
                ),
            ));
        }
        if let Some(first) = names.insert(node_name.clone(), p.line(&n.name)) {
            return Err(p.err(
                &n.name,
                format!("node name `{node_name}` is used twice (first at {first})"),
            ));
        }
        if n.port.len() > MAX_PORTS {
            return Err(p.err(
                &n.name,
                format!(
                    "node {node_name} has {} ports; at most {MAX_PORTS}",
                    n.port.len()
                ),
            ));
        }
        let mut ports = Vec::with_capacity(n.port.len());
        for fp in &n.port {
            let iface = fp.iface.get_ref();
            check_iface(iface).map_err(|e| p.err(&fp.iface, format!("node {node_name}: {e}")))?;
            if ports.iter().any(|q: &Port| &q.iface == iface) {
                return Err(p.err(
                    &fp.iface,
                    format!("node {node_name} has two external ports named {iface}"),
                ));
            }
            let (address, prefix_len) = parse_prefix(fp.address.get_ref())
                .map_err(|e| p.err(&fp.address, format!("node {node_name} port {iface}: {e}")))?;
            check_port_address(address, prefix_len)
                .map_err(|e| p.err(&fp.address, format!("node {node_name} port {iface}: {e}")))?;
            let mac = match &fp.mac {
                None => None,
                Some(m) => {
                    let mac = parse_mac(m.get_ref())
                        .map_err(|e| p.err(m, format!("node {node_name} port {iface}: {e}")))?;
                    check_port_mac(&mac, id)
                        .map_err(|e| p.err(m, format!("node {node_name} port {iface}: {e}")))?;
                    Some(mac)
                }
            };
            ports.push(Port {
                iface: iface.clone(),
                address,
                prefix_len,
                mac,
            });
        }
        let role = if ports.is_empty() {
            if topology != Topology::Custom {
                return Err(p.err(
                    &n.name,
                    format!(
                        "node {node_name} has no [[node.port]]: with topology = \"{}\" every \
                         listed node is an I/O node (intermediate-only nodes are for \
                         topology = \"custom\")",
                        topology_text(topology)
                    ),
                ));
            }
            Role::Intermediate
        } else {
            Role::Io
        };
        nodes.push(Node {
            name: node_name.clone(),
            role,
            ports,
        });
    }
    let io_count = nodes.iter().filter(|n| n.role == Role::Io).count();
    if io_count == 0 {
        return Err(plain(
            "no node has an external port: a cluster needs at least one [[node.port]]",
        ));
    }

    // Internal links.
    if topology != Topology::Custom {
        if let Some(l) = f.link.first() {
            return Err(p.err(
                &l.a,
                format!(
                    "[[link]] is only for topology = \"custom\"; topology = \"{}\" lays its \
                     links out itself",
                    topology_text(topology)
                ),
            ));
        }
    }
    let mut links: Vec<Link> = Vec::new();
    let mut link_place: Vec<Option<String>> = Vec::new();
    match topology {
        Topology::FullMesh => {
            let n = nodes.len();
            if let Some(k) = max_fanout {
                if n - 1 > k {
                    let fly_k = k.max(2) as u64;
                    let mut fly_n = 1u32;
                    let mut reach = fly_k;
                    while reach < n as u64 {
                        reach = reach.saturating_mul(fly_k);
                        fly_n += 1;
                    }
                    return Err(plain(format!(
                        "fanout too small: a full mesh of {n} nodes needs {} internal links \
                         per node, max_fanout is {k}; use topology = \"{fly_k}-ary {fly_n}-fly\"",
                        n - 1
                    )));
                }
            }
            for a in 0..n {
                for b in a + 1..n {
                    links.push(Link {
                        a: a as NodeId,
                        a_iface: format!("v{}", nodes[b].name),
                        b: b as NodeId,
                        b_iface: format!("v{}", nodes[a].name),
                    });
                    link_place.push(None);
                }
            }
        }
        Topology::Fly { k, n } => {
            let layout = fly_layout(nodes.len(), k, n).map_err(plain)?;
            for s in &layout.stage_names {
                if s.len() > MAX_NODE_NAME {
                    return Err(plain(format!(
                        "a {k}-ary {n}-fly has {} nodes per stage: its stage node names \
                         (like {s}) would be longer than {MAX_NODE_NAME} characters",
                        layout.per_stage
                    )));
                }
                if let Some(first) = names.get(s) {
                    return Err(plain(format!(
                        "node name `{s}` (at {first}) is also the name of a stage node the \
                         {k}-ary {n}-fly adds (s10, s11, .., s20, ..): rename it"
                    )));
                }
                nodes.push(Node {
                    name: s.clone(),
                    role: Role::Intermediate,
                    ports: Vec::new(),
                });
            }
            for &(a, b) in &layout.links {
                links.push(Link {
                    a: a as NodeId,
                    a_iface: format!("v{}", nodes[b].name),
                    b: b as NodeId,
                    b_iface: format!("v{}", nodes[a].name),
                });
                link_place.push(None);
            }
        }
        Topology::Custom => {
            let mut pairs: HashMap<(NodeId, NodeId), String> = HashMap::new();
            for l in &f.link {
                let end = |s: &Spanned<String>| -> Result<NodeId, ClusterError> {
                    nodes
                        .iter()
                        .position(|n| &n.name == s.get_ref())
                        .map(|i| i as NodeId)
                        .ok_or_else(|| {
                            p.err(
                                s,
                                format!(
                                    "[[link]]: no node `{}` (nodes: {})",
                                    s.get_ref(),
                                    node_list(&nodes)
                                ),
                            )
                        })
                };
                let (a, b) = (end(&l.a)?, end(&l.b)?);
                if a == b {
                    return Err(p.err(
                        &l.a,
                        format!("[[link]] from {} to itself", nodes[a as usize].name),
                    ));
                }
                if let Some(first) = pairs.insert((a.min(b), a.max(b)), p.line(&l.a)) {
                    return Err(p.err(
                        &l.a,
                        format!(
                            "a second [[link]] between {} and {} (the first is at {first})",
                            nodes[a as usize].name, nodes[b as usize].name
                        ),
                    ));
                }
                let iface = |given: &Option<Spanned<String>>, peer: NodeId| match given {
                    Some(s) => s.get_ref().clone(),
                    None => format!("v{}", nodes[peer as usize].name),
                };
                links.push(Link {
                    a,
                    a_iface: iface(&l.a_iface, b),
                    b,
                    b_iface: iface(&l.b_iface, a),
                });
                link_place.push(Some(p.line(&l.a)));
            }
            if let Some(k) = max_fanout {
                for (i, node) in nodes.iter().enumerate() {
                    let degree = links
                        .iter()
                        .filter(|l| usize::from(l.a) == i || usize::from(l.b) == i)
                        .count();
                    if degree > k {
                        return Err(plain(format!(
                            "fanout too small: node {} has {degree} internal links, max_fanout \
                             is {k}",
                            node.name
                        )));
                    }
                }
            }
        }
    }

    // Interface names: valid, and each name once per node.
    let mut ifaces: Vec<HashMap<String, String>> = nodes
        .iter()
        .map(|n| {
            n.ports
                .iter()
                .map(|port| (port.iface.clone(), format!("external port {}", port.iface)))
                .collect()
        })
        .collect();
    for (i, l) in links.iter().enumerate() {
        for (node, iface, peer) in [(l.a, &l.a_iface, l.b), (l.b, &l.b_iface, l.a)] {
            let here = || match &link_place[i] {
                Some(line) => format!("{line}: "),
                None => String::new(),
            };
            let owner = &nodes[node as usize].name;
            check_iface(iface).map_err(|e| {
                plain(format!(
                    "{}node {owner}, link to {}: {e}",
                    here(),
                    nodes[peer as usize].name
                ))
            })?;
            let what = format!("the link to {}", nodes[peer as usize].name);
            if let Some(other) = ifaces[node as usize].insert(iface.clone(), what.clone()) {
                return Err(plain(format!(
                    "{}node {owner}: interface {iface} is used twice ({other} and {what})",
                    here()
                )));
            }
        }
    }

    // One piece: every node reaches node 0 over internal links.
    if let Some(lost) = first_unreachable(nodes.len(), &links) {
        return Err(plain(format!(
            "{} cannot reach {}: the internal links leave the cluster in pieces",
            nodes[lost].name, nodes[0].name
        )));
    }

    // MACs: once each.
    let mut macs: HashMap<[u8; 6], String> = HashMap::new();
    for node in &nodes {
        for port in &node.ports {
            if let Some(mac) = port.mac {
                let here = format!("{} {}", node.name, port.iface);
                if let Some(other) = macs.insert(mac, here.clone()) {
                    return Err(plain(format!(
                        "MAC {} is given to both {other} and {here}",
                        format_mac(&mac)
                    )));
                }
            }
        }
    }

    // Subnets: no two ports share one, on one node or two.
    check_subnets(&nodes)?;

    // Routes.
    let mut texts: Vec<RouteText> = f
        .route
        .iter()
        .map(|r| RouteText {
            at: p.line(&r.prefix),
            prefix: r.prefix.get_ref().clone(),
            node: r.node.get_ref().clone(),
            port: r.port.get_ref().clone(),
            gateway: r.gateway.as_ref().map(|g| g.get_ref().clone()),
        })
        .collect();
    if let Some(rf) = &f.routes_file {
        texts.extend(read_routes_file(dir, rf.get_ref()).map_err(|e| p.err(rf, e))?);
    }
    let routes = check_routes(&nodes, &texts)?;

    Ok(Cluster {
        name,
        id,
        rate_bps,
        internal_rate_bps,
        topology,
        flowlets,
        flowlet_delta,
        hello_interval,
        hello_misses,
        directed_broadcast: f.directed_broadcast.unwrap_or(false),
        nodes,
        links,
        routes,
    })
}

/// How the file writes a topology.
pub(crate) fn topology_text(t: Topology) -> String {
    match t {
        Topology::FullMesh => "full-mesh".into(),
        Topology::Fly { k, n } => format!("{k}-ary {n}-fly"),
        Topology::Custom => "custom".into(),
    }
}

fn node_list(nodes: &[Node]) -> String {
    let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    names.join(", ")
}

/// A port's address: a unicast address inside its subnet, not the
/// subnet's network or broadcast address.
fn check_port_address(a: Ipv4Addr, len: u8) -> Result<(), String> {
    if a.is_unspecified() || a.is_broadcast() || a.is_multicast() || a.is_loopback() {
        return Err(format!("{a} is not a unicast address"));
    }
    if len == 0 {
        return Err(format!("{a}/0: a port's subnet cannot be every address"));
    }
    if len <= 30 {
        if a == network(a, len) {
            return Err(format!(
                "{a}/{len} is the network address of its subnet; give the router's own \
                 address, e.g. {}/{len}",
                Ipv4Addr::from(u32::from(a) + 1)
            ));
        }
        if a == broadcast(a, len) {
            return Err(format!(
                "{a}/{len} is the broadcast address of its subnet; give the router's own \
                 address"
            ));
        }
    }
    Ok(())
}

/// A port's MAC: unicast, not zero, and not of the form of this cluster's
/// labels (frames inside the cluster would be taken for it, and it for
/// them).
fn check_port_mac(mac: &[u8; 6], id: u8) -> Result<(), String> {
    let text = format_mac(mac);
    if mac[0] & 1 != 0 {
        return Err(format!("MAC {text} is a group (multicast) address"));
    }
    if *mac == [0; 6] {
        return Err("MAC 00:00:00:00:00:00 is not an interface's address".into());
    }
    if label::Dst::parse(mac).is_some_and(|d| d.cluster == id) {
        return Err(format!(
            "MAC {text} has the form of this cluster's labels (02:{id:02x}:..:..:..:00, \
             RouteBricks §6.1): frames inside the cluster carry such MACs; choose another"
        ));
    }
    Ok(())
}

/// The first node (by id) that cannot reach node 0 over `links`.
fn first_unreachable(n: usize, links: &[Link]) -> Option<usize> {
    let mut adjacent: Vec<Vec<usize>> = vec![Vec::new(); n];
    for l in links {
        adjacent[l.a as usize].push(l.b as usize);
        adjacent[l.b as usize].push(l.a as usize);
    }
    let mut seen = vec![false; n];
    let mut stack = vec![0usize];
    seen[0] = true;
    while let Some(x) = stack.pop() {
        for &y in &adjacent[x] {
            if !seen[y] {
                seen[y] = true;
                stack.push(y);
            }
        }
    }
    seen.iter().position(|s| !s)
}

/// No two external ports in overlapping subnets: hosts behind them could
/// not be told apart, nor could ARP on one port be answered for the
/// other.
fn check_subnets(nodes: &[Node]) -> Result<(), ClusterError> {
    // Each subnet as an address interval; sorted by start, an overlap is a
    // start at or before the largest end seen so far.
    let mut spans: Vec<(u32, u32, usize, usize)> = Vec::new();
    for (n, node) in nodes.iter().enumerate() {
        for (i, port) in node.ports.iter().enumerate() {
            let start = u32::from(network(port.address, port.prefix_len));
            let end = u32::from(broadcast(port.address, port.prefix_len));
            spans.push((start, end, n, i));
        }
    }
    spans.sort_unstable();
    let mut widest: Option<(u32, usize, usize)> = None;
    for &(start, end, n, i) in &spans {
        if let Some((max_end, pn, pi)) = widest {
            if start <= max_end {
                let (a, b) = (&nodes[pn].ports[pi], &nodes[n].ports[i]);
                let where_ = if pn == n {
                    format!("two ports of {}", nodes[n].name)
                } else {
                    "ports of different nodes".to_string()
                };
                debug_assert!(overlap(a.address, a.prefix_len, b.address, b.prefix_len));
                return Err(plain(format!(
                    "{} {} {}/{} and {} {} {}/{} are in the same subnet: {where_} need \
                     subnets of their own",
                    nodes[pn].name,
                    a.iface,
                    a.address,
                    a.prefix_len,
                    nodes[n].name,
                    b.iface,
                    b.address,
                    b.prefix_len
                )));
            }
        }
        if widest.is_none_or(|(max_end, _, _)| end > max_end) {
            widest = Some((end, n, i));
        }
    }
    Ok(())
}

/// Reads a routes file: `PREFIX/LEN NODE PORT [GATEWAY]` a line, `#`
/// comments.
fn read_routes_file(dir: &Path, name: &str) -> Result<Vec<RouteText>, String> {
    let path = dir.join(name);
    let text = bricks_spec::read_limited(&path, &path.display().to_string(), MAX_ROUTES_FILE)
        .map_err(|e| format!("routes_file: {e}"))?;
    parse_routes(name, &text).map_err(|e| e.0)
}

/// Parses the text of a routes file called `name` (for messages).
fn parse_routes(name: &str, text: &str) -> Result<Vec<RouteText>, ClusterError> {
    let mut routes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = format!("{name} line {}", i + 1);
        match words.as_slice() {
            [] => {}
            [prefix, node, port] | [prefix, node, port, _] => routes.push(RouteText {
                at,
                prefix: prefix.to_string(),
                node: node.to_string(),
                port: port.to_string(),
                gateway: words.get(3).map(|g| g.to_string()),
            }),
            _ => {
                return Err(plain(format!(
                    "{at}: expected PREFIX/LEN NODE PORT [GATEWAY], e.g. \
                     \"10.2.0.0/24 n2 ext0\", found {} words",
                    words.len()
                )))
            }
        }
    }
    Ok(routes)
}

/// Checks the routes against the nodes and makes them [`Route`]s.
fn check_routes(nodes: &[Node], texts: &[RouteText]) -> Result<Vec<Route>, ClusterError> {
    let mut routes = Vec::with_capacity(texts.len());
    let mut seen: HashMap<(Ipv4Addr, u8), &str> = HashMap::new();
    for r in texts {
        let fail = |m: String| plain(format!("{}: route {}: {m}", r.at, r.prefix));
        let (prefix, len) = parse_prefix(&r.prefix).map_err(&fail)?;
        let net = network(prefix, len);
        if net != prefix {
            return Err(fail(format!(
                "host bits are set; did you mean {net}/{len}?"
            )));
        }
        if let Some(first) = seen.insert((prefix, len), &r.at) {
            return Err(fail(format!(
                "the prefix is given twice (first at {first})"
            )));
        }
        let node = nodes.iter().position(|n| n.name == r.node).ok_or_else(|| {
            fail(format!(
                "no node `{}` (nodes: {})",
                r.node,
                node_list(nodes)
            ))
        })?;
        let n = &nodes[node];
        if n.ports.is_empty() {
            return Err(fail(format!(
                "node {} has no external ports: routes leave the cluster at I/O nodes",
                n.name
            )));
        }
        let port = n
            .ports
            .iter()
            .position(|p| p.iface == r.port)
            .ok_or_else(|| {
                let ports: Vec<&str> = n.ports.iter().map(|p| p.iface.as_str()).collect();
                fail(format!(
                    "node {} has no port `{}` (its ports: {})",
                    n.name,
                    r.port,
                    ports.join(", ")
                ))
            })?;
        let out = &n.ports[port];
        let gateway = match &r.gateway {
            None => None,
            Some(g) => {
                let gw: Ipv4Addr = g
                    .parse()
                    .map_err(|_| fail(format!("gateway `{g}` is not an IPv4 address")))?;
                if !overlap(gw, 32, out.address, out.prefix_len) {
                    return Err(fail(format!(
                        "gateway {gw} is not on {} {}'s subnet {}/{}: it could not be \
                         reached by ARP",
                        n.name,
                        out.iface,
                        network(out.address, out.prefix_len),
                        out.prefix_len
                    )));
                }
                if gw == out.address {
                    return Err(fail(format!(
                        "gateway {gw} is the router's own address on {} {}",
                        n.name, out.iface
                    )));
                }
                Some(gw)
            }
        };
        routes.push(Route {
            prefix,
            len,
            node: node as NodeId,
            port: port as u8,
            gateway,
        });
    }
    Ok(routes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal good file to break in one place at a time.
    const TWO: &str = r#"
name = "t2"
rate = "1Gbps"

[[node]]
name = "n1"
[[node.port]]
iface = "ext0"
address = "10.1.0.1/24"

[[node]]
name = "n2"
[[node.port]]
iface = "ext0"
address = "10.2.0.1/24"

[[route]]
prefix = "10.1.0.0/24"
node = "n1"
port = "ext0"

[[route]]
prefix = "10.2.0.0/24"
node = "n2"
port = "ext0"
"#;

    fn err(text: &str) -> String {
        Cluster::from_toml(text).expect_err("should be refused").0
    }

    fn conf(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../conf/cluster")
            .join(name)
    }

    #[test]
    fn minimal_file_and_defaults() {
        let c = Cluster::from_toml(TWO).unwrap();
        assert_eq!(c.name, "t2");
        assert_eq!(c.id, 1);
        assert_eq!(c.rate_bps, 1_000_000_000);
        assert_eq!(c.internal_rate_bps, 1_000_000_000);
        assert_eq!(c.topology, Topology::FullMesh);
        assert!(c.flowlets);
        assert_eq!(c.flowlet_delta, Duration::from_millis(100));
        assert_eq!(c.hello_interval, Duration::from_millis(50));
        assert_eq!(c.hello_misses, 3);
        assert!(!c.directed_broadcast, "off by default (RFC 2644)");
        assert_eq!(
            c.links,
            vec![Link {
                a: 0,
                a_iface: "vn2".into(),
                b: 1,
                b_iface: "vn1".into()
            }]
        );
        assert_eq!(c.routes[1].node, 1);
        assert_eq!(c.routes[1].port, 0);
        assert_eq!(c.routes[1].gateway, None);
        assert_eq!(c.nodes[0].ports[0].mac, None);
    }

    #[test]
    fn rb4_example() {
        let c = Cluster::load(&conf("rb4.toml")).unwrap();
        assert_eq!(c.name, "rb4");
        assert_eq!(c.rate_bps, 100_000_000);
        assert_eq!(c.nodes.len(), 4);
        assert!(c.nodes.iter().all(|n| n.role == Role::Io));
        // One link per pair, in pair order.
        let pairs: Vec<(u8, u8)> = c.links.iter().map(|l| (l.a, l.b)).collect();
        assert_eq!(pairs, [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]);
        assert_eq!(c.links[4].a_iface, "vn4");
        assert_eq!(c.links[4].b_iface, "vn2");
        for (i, n) in c.nodes.iter().enumerate() {
            assert_eq!(n.name, format!("n{}", i + 1));
            assert_eq!(n.ports.len(), 1);
            assert_eq!(n.ports[0].iface, "ext0");
            assert_eq!(n.ports[0].address, Ipv4Addr::new(10, i as u8 + 1, 0, 1));
            assert_eq!(n.ports[0].prefix_len, 24);
            let r = &c.routes[i];
            assert_eq!(
                (r.prefix, r.len),
                (Ipv4Addr::new(10, i as u8 + 1, 0, 0), 24)
            );
            assert_eq!((r.node, r.port, r.gateway), (i as u8, 0, None));
        }
        assert_eq!(c.routes.len(), 4);
    }

    #[test]
    fn fly_example() {
        let c = Cluster::load(&conf("fly.toml")).unwrap();
        assert_eq!(c.topology, Topology::Fly { k: 3, n: 2 });
        let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            ["n1", "n2", "n3", "s10", "s11", "s12", "s20", "s21", "s22"]
        );
        assert_eq!(c.io_nodes().count(), 3);
        assert!(c.nodes[3..]
            .iter()
            .all(|n| n.role == Role::Intermediate && n.ports.is_empty()));
        // I/O nodes on terminals 0, 3, 6: stage nodes 0, 1, 2 of each stage.
        let ends = |n: u8| -> Vec<String> {
            c.link_ends(n)
                .iter()
                .map(|e| c.nodes[e.peer as usize].name.clone())
                .collect()
        };
        assert_eq!(ends(0), ["s10", "s20"]);
        assert_eq!(ends(1), ["s11", "s21"]);
        assert_eq!(ends(2), ["s12", "s22"]);
        // s10 = stage 1 node 0: its I/O node and the three stage-2 nodes
        // that differ from 0 in digit 0.
        assert_eq!(ends(3), ["n1", "s20", "s21", "s22"]);
        assert_eq!(c.links.len(), 6 + 9);
        assert_eq!(c.link_ends(0)[0].iface, "vs10");
    }

    #[test]
    fn toml_errors_have_line_and_column() {
        let e = err(&TWO.replace("rate = ", "rte = "));
        assert!(
            e.starts_with("line 3, column 1: unknown field `rte`"),
            "{e}"
        );
        let e = err(&TWO.replacen("iface = \"ext0\"", "ifcae = \"ext0\"", 1));
        assert!(
            e.starts_with("line 8, column 1: unknown field `ifcae`"),
            "{e}"
        );
        let e = err(&TWO.replace("rate = \"1Gbps\"", ""));
        assert!(e.contains("missing field `rate`"), "{e}");
        let e = err("name = \"x\"\nrate = [");
        assert!(e.starts_with("line 2, column"), "{e}");
    }

    #[test]
    fn cluster_keys_are_checked() {
        assert!(err(&TWO.replace("\"t2\"", "\"Big\"")).contains("cluster name `Big`"));
        assert!(err(&TWO.replace("\"t2\"", "\"ninechars\"")).contains("at most 8"));
        assert!(err(&TWO.replace("rate = \"1Gbps\"", "rate = \"0Mbps\""))
            .starts_with("line 3: rate is 0"));
        assert!(err(&TWO.replace(
            "rate = \"1Gbps\"",
            "rate = \"1Gbps\"\ninternal_rate = \"0bps\""
        ))
        .contains("internal_rate is 0"));
        assert!(err(&TWO.replace("rate = \"1Gbps\"", "rate = \"1GB\"")).contains("unknown unit"));
        assert!(
            err(&TWO.replace("rate = \"1Gbps\"", "rate = \"1Gbps\"\nid = 256"))
                .contains("id 256 is not 0 to 255")
        );
        let e = err(&TWO.replace(
            "rate = \"1Gbps\"",
            "rate = \"1Gbps\"\nflowlet_delta = \"0ms\"",
        ));
        assert!(
            e.contains("flowlet_delta is 0; use flowlets = false to turn flowlets off"),
            "{e}"
        );
        assert!(
            err(&TWO.replace("rate = \"1Gbps\"", "rate = \"1Gbps\"\nhello_misses = 0"))
                .contains("hello_misses is 0")
        );
        assert!(err(&TWO.replace(
            "rate = \"1Gbps\"",
            "rate = \"1Gbps\"\nhello_interval = \"0s\""
        ))
        .contains("hello_interval is 0"));
        assert!(
            err(&TWO.replace("rate = \"1Gbps\"", "rate = \"1Gbps\"\ntopology = \"mesh\""))
                .contains("expected \"full-mesh\"")
        );
        assert!(err(&TWO.replace(
            "rate = \"1Gbps\"",
            "rate = \"1Gbps\"\ntopology = \"1-ary 2-fly\""
        ))
        .contains("k >= 2"));
        assert!(err(&TWO.replace(
            "rate = \"1Gbps\"",
            "rate = \"1Gbps\"\ntopology = \"2-ary 0-fly\""
        ))
        .contains("n >= 1"));
        let c = Cluster::from_toml(&TWO.replace(
            "rate = \"1Gbps\"",
            "rate = \"1Gbps\"\nid = 7\ninternal_rate = \"2.5Gbps\"\nflowlets = false\n\
             directed_broadcast = true\n\
             flowlet_delta = \"1s\"\nhello_interval = \"250us\"\nhello_misses = 5",
        ))
        .unwrap();
        assert_eq!(c.id, 7);
        assert_eq!(c.internal_rate_bps, 2_500_000_000);
        assert!(!c.flowlets);
        assert!(c.directed_broadcast);
        assert_eq!(c.flowlet_delta, Duration::from_secs(1));
        assert_eq!(c.hello_interval, Duration::from_micros(250));
        assert_eq!(c.hello_misses, 5);
    }

    #[test]
    fn nodes_are_checked() {
        assert!(err("name = \"x\"\nrate = \"1Gbps\"\n").starts_with("no nodes"));
        let e = err(&TWO.replace("name = \"n2\"", "name = \"n1\""));
        assert_eq!(e, "line 12: node name `n1` is used twice (first at line 6)");
        assert!(err(&TWO.replace("\"n2\"", "\"node2\"")).contains("node name `node2`"));
        assert!(err(&TWO.replace("\"n2\"", "\"N2\"")).contains("node name `N2`"));
        let too_many: String = (0..256)
            .map(|i| format!("[[node]]\nname = \"n{i}\"\n"))
            .collect();
        assert!(err(&format!("name = \"x\"\nrate = \"1Gbps\"\n{too_many}"))
            .starts_with("256 nodes: a cluster has at most 255"));
        // A node without ports only in a custom topology.
        let e = err(&format!("{TWO}\n[[node]]\nname = \"n3\"\n"));
        assert!(e.contains("node n3 has no [[node.port]]"), "{e}");
    }

    #[test]
    fn ports_are_checked() {
        let e = err(&TWO.replacen("\"ext0\"", "\"averyverylongname\"", 1));
        assert!(
            e.contains("is 17 bytes long; Linux allows at most 15"),
            "{e}"
        );
        assert!(err(&TWO.replacen("\"ext0\"", "\"ext 0\"", 1)).contains("interface name `ext 0`"));
        let e = err(&TWO.replace(
            "address = \"10.1.0.1/24\"",
            "address = \"10.1.0.1/24\"\n[[node.port]]\niface = \"ext0\"\naddress = \"10.3.0.1/24\"",
        ));
        assert_eq!(e, "line 11: node n1 has two external ports named ext0");
        assert!(err(&TWO.replace("10.1.0.1/24", "10.1.0.1")).contains("no prefix length"));
        assert!(err(&TWO.replace("10.1.0.1/24", "10.1.0.0/24")).contains("network address"));
        assert!(err(&TWO.replace("10.1.0.1/24", "10.1.0.255/24")).contains("broadcast address"));
        assert!(err(&TWO.replace("10.1.0.1/24", "224.0.0.1/24")).contains("not a unicast"));
        // Two nodes in one subnet.
        let e = err(&TWO.replace("10.2.0.1/24", "10.1.0.2/24"));
        assert_eq!(
            e,
            "n1 ext0 10.1.0.1/24 and n2 ext0 10.1.0.2/24 are in the same subnet: ports of \
             different nodes need subnets of their own"
        );
        // A larger subnet holding another.
        let e = err(&TWO.replace("10.2.0.1/24", "10.0.0.1/8"));
        assert!(
            e.contains("n2 ext0 10.0.0.1/8 and n1 ext0 10.1.0.1/24 are in the same subnet"),
            "{e}"
        );
        // Two ports of one node.
        let e = err(&TWO.replace(
            "address = \"10.1.0.1/24\"",
            "address = \"10.1.0.1/24\"\n[[node.port]]\niface = \"ext1\"\naddress = \"10.1.0.2/25\"",
        ));
        assert!(e.contains("two ports of n1"), "{e}");
    }

    #[test]
    fn macs_are_checked() {
        let with_macs = |a: &str, b: &str| {
            TWO.replace(
                "address = \"10.1.0.1/24\"",
                &format!("address = \"10.1.0.1/24\"\nmac = \"{a}\""),
            )
            .replace(
                "address = \"10.2.0.1/24\"",
                &format!("address = \"10.2.0.1/24\"\nmac = \"{b}\""),
            )
        };
        let c = Cluster::from_toml(&with_macs("02:00:00:00:01:01", "02:00:00:00:02:01")).unwrap();
        assert_eq!(c.nodes[1].ports[0].mac, Some([2, 0, 0, 0, 2, 1]));
        let e = err(&with_macs("02:00:00:00:01:01", "02:00:00:00:01:01"));
        assert_eq!(
            e,
            "MAC 02:00:00:00:01:01 is given to both n1 ext0 and n2 ext0"
        );
        // 02:01:..:00 is a label of cluster 1.
        let e = err(&with_macs("02:00:00:00:01:01", "02:01:00:00:ff:00"));
        assert!(e.contains("has the form of this cluster's labels"), "{e}");
        // ... but not of cluster 2's.
        assert!(Cluster::from_toml(
            &with_macs("02:00:00:00:01:01", "02:01:00:00:ff:00").replace("rate", "id = 2\nrate")
        )
        .is_ok());
        assert!(err(&with_macs("03:00:00:00:01:01", "02:00:00:00:02:01")).contains("multicast"));
        assert!(err(&with_macs("02:00:00:00:01", "02:00:00:00:02:01")).contains("not a MAC"));
    }

    #[test]
    fn routes_are_checked() {
        let e = err(&TWO.replace("prefix = \"10.2.0.0/24\"", "prefix = \"10.2.0.1/24\""));
        assert_eq!(
            e,
            "line 23: route 10.2.0.1/24: host bits are set; did you mean 10.2.0.0/24?"
        );
        let e = err(&TWO.replace("prefix = \"10.2.0.0/24\"", "prefix = \"10.1.0.0/24\""));
        assert_eq!(
            e,
            "line 23: route 10.1.0.0/24: the prefix is given twice (first at line 18)"
        );
        let e = err(&TWO.replace("node = \"n2\"", "node = \"n9\""));
        assert_eq!(
            e,
            "line 23: route 10.2.0.0/24: no node `n9` (nodes: n1, n2)"
        );
        let e = err(&TWO.replace(
            "node = \"n2\"\nport = \"ext0\"",
            "node = \"n2\"\nport = \"eth9\"",
        ));
        assert_eq!(
            e,
            "line 23: route 10.2.0.0/24: node n2 has no port `eth9` (its ports: ext0)"
        );
        let gw = |g: &str| {
            TWO.replace(
                "node = \"n2\"\nport = \"ext0\"",
                &format!("node = \"n2\"\nport = \"ext0\"\ngateway = \"{g}\""),
            )
        };
        let c = Cluster::from_toml(&gw("10.2.0.254")).unwrap();
        assert_eq!(c.routes[1].gateway, Some(Ipv4Addr::new(10, 2, 0, 254)));
        assert!(err(&gw("10.3.0.254")).contains("is not on n2 ext0's subnet 10.2.0.0/24"));
        assert!(err(&gw("10.2.0.1")).contains("the router's own address"));
        assert!(err(&gw("x")).contains("not an IPv4 address"));
    }

    #[test]
    fn routes_file_lines() {
        let r = parse_routes(
            "t.routes",
            "# comment\n10.9.0.0/16 n2 ext0 10.2.0.254  # via\n\n0.0.0.0/0 n1 ext0\n",
        )
        .unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].at, "t.routes line 2");
        assert_eq!(r[0].gateway.as_deref(), Some("10.2.0.254"));
        assert_eq!(r[1].prefix, "0.0.0.0/0");
        let e = parse_routes("t.routes", "10.9.0.0/16 n2\n").err().unwrap();
        assert!(
            e.0.starts_with("t.routes line 1: expected PREFIX/LEN NODE PORT"),
            "{e}"
        );

        let dir =
            std::env::temp_dir().join(format!("bricks-cluster-routes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("t.routes"),
            "10.9.0.0/16 n2 ext0 10.2.0.254\n10.9.0.0/16 n1 ext0\n",
        )
        .unwrap();
        let text = TWO.replace(
            "rate = \"1Gbps\"",
            "rate = \"1Gbps\"\nroutes_file = \"t.routes\"",
        );
        let e = Cluster::from_toml_in(&text, &dir).err().unwrap().0;
        assert_eq!(
            e,
            "t.routes line 2: route 10.9.0.0/16: the prefix is given twice (first at t.routes line 1)"
        );
        std::fs::write(dir.join("t.routes"), "10.9.0.0/16 n2 ext0 10.2.0.254\n").unwrap();
        let c = Cluster::from_toml_in(&text, &dir).unwrap();
        assert_eq!(c.routes.len(), 3);
        assert_eq!(c.routes[2].prefix, Ipv4Addr::new(10, 9, 0, 0));
        // Missing, or not a file.
        let e = Cluster::from_toml_in(&text.replace("t.routes", "none.routes"), &dir)
            .err()
            .unwrap()
            .0;
        assert!(e.starts_with("line 4: routes_file: cannot read"), "{e}");
        let e = Cluster::from_toml_in(&text.replace("t.routes", "."), &dir)
            .err()
            .unwrap()
            .0;
        assert!(e.contains("is not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn full_mesh_fanout() {
        let four: String = (1..=4)
            .map(|i| {
                format!("[[node]]\nname = \"n{i}\"\n[[node.port]]\niface = \"ext0\"\naddress = \"10.{i}.0.1/24\"\n")
            })
            .collect();
        let head = "name = \"x\"\nrate = \"1Gbps\"\n";
        assert!(Cluster::from_toml(&format!("{head}max_fanout = 3\n{four}")).is_ok());
        assert_eq!(
            err(&format!("{head}max_fanout = 2\n{four}")),
            "fanout too small: a full mesh of 4 nodes needs 3 internal links per node, \
             max_fanout is 2; use topology = \"2-ary 2-fly\""
        );
        // The suggestion works.
        let c = Cluster::from_toml(&format!("{head}topology = \"2-ary 2-fly\"\n{four}")).unwrap();
        assert_eq!(c.nodes.len(), 8);
    }

    #[test]
    fn fly_is_checked() {
        let three = TWO.replace(
            "rate = \"1Gbps\"",
            "rate = \"1Gbps\"\ntopology = \"2-ary 1-fly\"",
        );
        let c = Cluster::from_toml(&three).unwrap();
        // n = 1: one stage of one node, one link per I/O node.
        assert_eq!(c.nodes.len(), 3);
        assert_eq!(c.nodes[2].name, "s10");
        assert_eq!(c.links.len(), 2);
        let e = err(&format!(
            "{three}\n[[node]]\nname = \"n3\"\n[[node.port]]\niface = \"ext0\"\naddress = \"10.3.0.1/24\"\n"
        ));
        assert!(
            e.contains("a 2-ary 1-fly has 2 terminals: at most 2 I/O nodes, the file lists 3"),
            "{e}"
        );
        let e = err(&three.replace("\"n2\"", "\"s10\""));
        assert!(
            e.contains("node name `s10` (at line 13) is also the name of a stage node"),
            "{e}"
        );
        let e = err(&TWO.replace(
            "rate = \"1Gbps\"",
            "rate = \"1Gbps\"\ntopology = \"2-ary 8-fly\"",
        ));
        assert!(e.contains("more than the 255 nodes"), "{e}");
        let e = err(&TWO.replace(
            "rate = \"1Gbps\"",
            "rate = \"1Gbps\"\ntopology = \"2-ary 40-fly\"",
        ));
        assert!(e.contains("255"), "{e}");
        let e = err(&TWO.replace(
            "rate = \"1Gbps\"",
            "rate = \"1Gbps\"\ntopology = \"101-ary 2-fly\"",
        ));
        assert!(e.contains("longer than 4 characters"), "{e}");
        let e = err(&format!("{}\n[[link]]\na = \"n1\"\nb = \"n2\"\n", TWO));
        assert!(
            e.contains("[[link]] is only for topology = \"custom\""),
            "{e}"
        );
    }

    #[test]
    fn custom_links_are_checked() {
        let custom = |links: &str| {
            format!(
                "{}\n[[node]]\nname = \"m\"\n{links}",
                TWO.replace(
                    "rate = \"1Gbps\"",
                    "rate = \"1Gbps\"\ntopology = \"custom\""
                )
            )
        };
        let link = |a: &str, b: &str| format!("[[link]]\na = \"{a}\"\nb = \"{b}\"\n");
        // A star through an intermediate-only node.
        let c = Cluster::from_toml(&custom(&(link("n1", "m") + &link("m", "n2")))).unwrap();
        assert_eq!(c.nodes[2].role, Role::Intermediate);
        assert_eq!(c.links[1].a_iface, "vn2");
        assert_eq!(c.links[1].b_iface, "vm");
        let e = err(&custom(&link("n1", "m")));
        assert_eq!(
            e,
            "n2 cannot reach n1: the internal links leave the cluster in pieces"
        );
        let e = err(&custom(
            &(link("n1", "m") + &link("m", "n2") + &link("n2", "m")),
        ));
        assert!(
            e.contains("a second [[link]] between n2 and m (the first is at line"),
            "{e}"
        );
        let e = err(&custom(&(link("n1", "n1"))));
        assert!(e.contains("[[link]] from n1 to itself"), "{e}");
        let e = err(&custom(&(link("n1", "n7"))));
        assert!(e.contains("no node `n7` (nodes: n1, n2, m)"), "{e}");
        // Interface names: given ones, clashes with a port.
        let e = err(&custom(&(link("n1", "m") + &link("m", "n2")).replacen(
            "b = \"m\"",
            "b = \"m\"\na_iface = \"ext0\"",
            1,
        )));
        assert!(
            e.contains(
                "node n1: interface ext0 is used twice (external port ext0 and the link to m)"
            ),
            "{e}"
        );
        let e = err(&custom(&(link("n1", "m") + &link("m", "n2")).replacen(
            "b = \"m\"",
            "b = \"m\"\nb_iface = \"this-is-far-too-long\"",
            1,
        )));
        assert!(
            e.contains("node m, link to n1: interface name `this-is-far-too-long`"),
            "{e}"
        );
        // max_fanout counts each node's links.
        let e =
            err(&custom(&(link("n1", "m") + &link("m", "n2")))
                .replace("rate", "max_fanout = 1\nrate"));
        assert_eq!(
            e,
            "fanout too small: node m has 2 internal links, max_fanout is 1"
        );
    }

    #[test]
    fn never_panics_on_bad_values() {
        for text in [
            "",
            "name = 1",
            "[[node]]",
            "name = \"x\"\nrate = \"1Gbps\"\nid = -1\n[[node]]\nname = \"a\"",
            "name = \"x\"\nrate = \"1Gbps\"\nhello_misses = 99999999999\n",
            "name = \"x\"\nrate = \"1Gbps\"\nmax_fanout = -3\n",
            "name = \"x\"\nrate = \"1Gbps\"\ntopology = \"4294967295-ary 4294967295-fly\"\n[[node]]\nname = \"a\"\n[[node.port]]\niface = \"e\"\naddress = \"1.0.0.1/8\"\n",
            "name = \"é\"",
        ] {
            assert!(Cluster::from_toml(text).is_err(), "{text}");
        }
    }
}
