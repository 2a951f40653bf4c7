//! The virtual-router file: a TOML description of the box's links and the
//! virtual routers sharing them, read into [`VirtualRouters`] and refused,
//! with the line and the reason, when it cannot work.
//!
//! ```toml
//! queueing = "direct"           # "direct" (default: Egi et al. Fig. 15(a)) or
//!                               # "per-router" (Fig. 15(b)): see below
//!
//! [[link]]                      # a physical interface of the box
//! name = "eth0"                 # its Linux name
//! mac = "02:00:00:00:00:01"     # optional; else -D MAC_eth0=... at run time
//! demux = "vlan"                # vlan | mac | mpls | ipip: what tells its routers apart
//! address = "192.0.2.1/24"      # ipip only (required there): the box's underlay address
//! gateway = "192.0.2.254"       # ipip only, optional: the underlay next hop for
//!                               # tunnel remotes off the underlay subnet
//! broadcast = "replicate"       # mac only: replicate (default) | drop | a router's name
//! scheduler = "stride"          # stride (default: packets by weight) | drr (bytes by weight)
//! mtu = 1500                    # the link's IP MTU; default 1500
//!
//! [[router]]
//! name = "red"                  # a-z, 0-9 and '_', starting with a letter: the
//!                               # compound element whose elements are red/...
//! weight = 2                    # share of the CPU and of each shared link; default 1
//! lookup = "RadixIPLookup"      # DirectIPLookup, RadixIPLookup (default),
//!                               # StaticIPLookup or LookupIPRoute
//! routes_file = "red.routes"    # optional, relative to this file, read by the lookup
//!                               # element: "PREFIX [GATEWAY] OUTPUT" per line, output 0
//!                               # local delivery, output i the router's i-th interface
//! local = "discard"             # packets for the router itself (pings are answered):
//!                               # discard (default) | host (ToHost(host_red))
//!   [[router.interface]]
//!   link = "eth0"
//!   vlan = 10                   # the tag, of the link's demux kind: vlan = ID,
//!                               # mac = "..." (optional: derived when absent),
//!                               # mpls = { in = 100, out = 200 },
//!                               # tunnel = { local = "192.0.2.10", remote = "198.51.100.1" }
//!   address = "10.0.0.1/24"     # the router's address on the interface
//!   name = "lan"                # optional: the link's name, or eth0.10 (VLAN 10) and
//!                               # eth0.2 (its second interface on eth0) when it has several
//!   [[router.route]]
//!   prefix = "0.0.0.0/0"
//!   gateway = "10.0.0.254"      # optional: straight to the destination when absent
//!   interface = "lan"           # optional when the gateway is on one of the subnets
//! ```
//!
//! Overlapping addresses between routers are allowed: two tenants may both
//! use 10.0.0.0/24 on different VLANs of one trunk. What cannot work is
//! refused: unknown keys (with line and column); no links or no routers;
//! names that are not valid or given twice; two interfaces (of one router
//! or of two) claiming the same tag on one link; a tag of another kind
//! than the link's demux, or none; VLAN IDs outside 1-4094; MPLS labels
//! outside 16-1048575; a weight of 0; an unknown link or lookup; interface
//! addresses that are not a host's or are their subnet's network or
//! broadcast address; overlapping subnets within one router; the same
//! address for two routers on a `mac` or `mpls` link (their ARP is not
//! separated by a tag); an `ipip` link without an underlay address, or a
//! tunnel remote it cannot reach; a router without routes (neither
//! `[[router.route]]` nor `routes_file`); routes with host bits set, given
//! twice, for a prefix the router installs itself, via a gateway off the
//! interface's subnet, or to an output the router does not have.

use crate::model::{
    Broadcast, Demux, Interface, Link, Local, Lookup, Queueing, Route, Router, Scheduler, Tag,
    VirtualRouters, VrError,
};
use crate::net::{
    broadcast, contains, format_mac, is_host_address, is_unicast_mac, network, overlap, parse_addr,
    parse_mac, parse_prefix,
};
use serde::Deserialize;
use std::collections::HashMap;
use std::io::Read as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// Most links of one box.
pub const MAX_LINKS: usize = 256;
/// Most routers of one box (derived MACs hold the index in two bytes;
/// VLAN IDs run out first anyway).
pub const MAX_ROUTERS: usize = 4096;
/// Most interfaces of one router (derived MACs hold the index in a byte).
pub const MAX_INTERFACES: usize = 256;
/// Most routes given inline for one router; larger tables go in a routes
/// file.
pub const MAX_INLINE_ROUTES: usize = 65_536;
/// Largest weight.
pub const MAX_WEIGHT: i64 = 1000;
/// Longest router name.
pub const MAX_ROUTER_NAME: usize = 32;
/// Longest interface name (Linux's IFNAMSIZ less the NUL).
pub const MAX_IFACE: usize = 15;
/// Smallest and largest link MTU: tunnels keep 68 bytes inside (RFC 791's
/// minimum), frames fit bricks' 2,048-byte packet buffers.
pub const MTU_RANGE: (i64, i64) = (128, 2000);
/// Routes files up to this size are read and checked line by line; larger
/// ones (and binary MRT dumps) are left to the lookup element.
const MAX_CHECKED_ROUTES_FILE: u64 = 64 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileBox {
    queueing: Option<Spanned<String>>,
    #[serde(default)]
    link: Vec<FileLink>,
    #[serde(default)]
    router: Vec<FileRouter>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLink {
    name: Spanned<String>,
    mac: Option<Spanned<String>>,
    demux: Spanned<String>,
    address: Option<Spanned<String>>,
    gateway: Option<Spanned<String>>,
    broadcast: Option<Spanned<String>>,
    scheduler: Option<Spanned<String>>,
    mtu: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRouter {
    name: Spanned<String>,
    weight: Option<Spanned<i64>>,
    lookup: Option<Spanned<String>>,
    routes_file: Option<Spanned<String>>,
    local: Option<Spanned<String>>,
    #[serde(default)]
    interface: Vec<FileInterface>,
    #[serde(default)]
    route: Vec<FileRoute>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileInterface {
    link: Spanned<String>,
    name: Option<Spanned<String>>,
    address: Spanned<String>,
    vlan: Option<Spanned<i64>>,
    mac: Option<Spanned<String>>,
    mpls: Option<Spanned<FileMpls>>,
    tunnel: Option<Spanned<FileTunnel>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMpls {
    #[serde(rename = "in")]
    incoming: i64,
    #[serde(rename = "out")]
    outgoing: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTunnel {
    local: String,
    remote: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRoute {
    prefix: Spanned<String>,
    gateway: Option<Spanned<String>>,
    interface: Option<Spanned<String>>,
}

impl VirtualRouters {
    /// Reads a virtual-router file's text; a `routes_file` is read
    /// relative to the current directory ([`VirtualRouters::load`] reads it
    /// relative to the file).
    pub fn from_toml(text: &str) -> Result<VirtualRouters, VrError> {
        VirtualRouters::from_toml_in(text, Path::new("."))
    }

    /// Reads a virtual-router file's text; a `routes_file` is read relative
    /// to `dir`.
    pub fn from_toml_in(text: &str, dir: &Path) -> Result<VirtualRouters, VrError> {
        let file: FileBox = bricks_spec::from_toml(text).map_err(VrError)?;
        build(text, file, dir)
    }

    /// Reads and checks a virtual-router file.
    pub fn load(path: &Path) -> Result<VirtualRouters, VrError> {
        let (text, dir) = bricks_spec::read(path).map_err(VrError)?;
        VirtualRouters::from_toml_in(&text, dir)
    }
}

/// Builds error messages that start with a place in the file.
type Places<'a> = bricks_spec::Places<'a, VrError>;

fn plain(message: impl Into<String>) -> VrError {
    VrError(message.into())
}

/// Interface names: what Linux takes, less what would need quoting in a
/// Click configuration or a shell.
fn check_iface(s: &str) -> Result<(), String> {
    bricks_spec::check_iface(s, "link", MAX_IFACE)
}

/// The name a link's elements take in the configuration (`eth0.100` ->
/// `eth0_100/...`): Click names hold letters, digits and '_'.
pub fn link_element_name(link: &str) -> String {
    let s: String = link
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.starts_with(|c: char| c.is_ascii_alphabetic()) {
        s
    } else {
        format!("l_{s}")
    }
}

fn valid_router_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_ROUTER_NAME
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// A router's interface address: a host's address, and not its subnet's
/// network or broadcast address (except on /31 and /32, RFC 3021).
fn check_address(addr: Ipv4Addr, len: u8) -> Result<(), String> {
    if !is_host_address(addr) {
        return Err(format!(
            "{addr}/{len}: {addr} is not a unicast host address"
        ));
    }
    if len < 31 {
        if addr == network(addr, len) {
            return Err(format!(
                "{addr}/{len}: the host bits are zero, so this is the subnet's network \
                 address; give the router's own address, e.g. {}/{len}",
                Ipv4Addr::from(u32::from(addr) + 1)
            ));
        }
        if addr == broadcast(addr, len) {
            return Err(format!(
                "{addr}/{len}: this is the subnet's broadcast address"
            ));
        }
    }
    Ok(())
}

fn build(text: &str, f: FileBox, dir: &Path) -> Result<VirtualRouters, VrError> {
    let p = Places::new(text, VrError);
    let queueing = match &f.queueing {
        None => Queueing::Direct,
        Some(s) => match s.get_ref().as_str() {
            "direct" => Queueing::Direct,
            "per-router" => Queueing::PerRouter,
            other => {
                return Err(p.err(
                    s,
                    format!("queueing `{other}`: expected \"direct\" or \"per-router\""),
                ))
            }
        },
    };

    // Links.
    if f.link.is_empty() {
        return Err(plain(
            "no links: the file needs at least one [[link]] (a physical interface)",
        ));
    }
    if f.link.len() > MAX_LINKS {
        return Err(plain(format!(
            "{} links: at most {MAX_LINKS}",
            f.link.len()
        )));
    }
    let mut links: Vec<Link> = Vec::with_capacity(f.link.len());
    // Element name -> (link name, line), to catch eth0.1 and eth0-1.
    let mut element_names: HashMap<String, (String, String)> = HashMap::new();
    for fl in &f.link {
        let name = fl.name.get_ref();
        check_iface(name).map_err(|e| p.err(&fl.name, e))?;
        let el = link_element_name(name);
        if let Some((other, line)) = element_names.get(&el) {
            return Err(p.err(
                &fl.name,
                if other == name {
                    format!("link `{name}` is given twice (first at {line})")
                } else {
                    format!(
                        "links `{other}` ({line}) and `{name}` would both be named `{el}` in \
                         the configuration; rename one"
                    )
                },
            ));
        }
        element_names.insert(el, (name.clone(), p.line(&fl.name)));
        let mac = match &fl.mac {
            None => None,
            Some(m) => {
                let mac =
                    parse_mac(m.get_ref()).map_err(|e| p.err(m, format!("link {name}: {e}")))?;
                if !is_unicast_mac(&mac) {
                    return Err(p.err(
                        m,
                        format!(
                            "link {name}: {} is not a unicast MAC address",
                            format_mac(&mac)
                        ),
                    ));
                }
                Some(mac)
            }
        };
        let demux = match fl.demux.get_ref().as_str() {
            "vlan" => Demux::Vlan,
            "mac" => Demux::Mac,
            "mpls" => Demux::Mpls,
            "ipip" => Demux::Ipip,
            other => {
                return Err(p.err(
                    &fl.demux,
                    format!(
                        "link {name}: demux `{other}`: expected \"vlan\", \"mac\", \"mpls\" or \
                         \"ipip\""
                    ),
                ))
            }
        };
        let underlay = match (&fl.address, demux) {
            (None, Demux::Ipip) => {
                return Err(p.err(
                    &fl.name,
                    format!(
                        "link {name} (demux = \"ipip\") has no address: an IP-in-IP link needs \
                         the box's underlay address, e.g. address = \"192.0.2.1/24\""
                    ),
                ))
            }
            (None, _) => None,
            (Some(a), Demux::Ipip) => {
                let (addr, len) =
                    parse_prefix(a.get_ref()).map_err(|e| p.err(a, format!("link {name}: {e}")))?;
                check_address(addr, len).map_err(|e| p.err(a, format!("link {name}: {e}")))?;
                Some((addr, len))
            }
            (Some(a), _) => {
                return Err(p.err(
                    a,
                    format!(
                        "link {name}: address is only for demux = \"ipip\" (the underlay); the \
                         routers' addresses go in their [[router.interface]]"
                    ),
                ))
            }
        };
        let gateway = match &fl.gateway {
            None => None,
            Some(g) => {
                let Some((ul, ul_len)) = underlay else {
                    return Err(p.err(
                        g,
                        format!("link {name}: gateway is only for demux = \"ipip\" (the underlay's next hop)"),
                    ));
                };
                let gw = parse_addr(g.get_ref())
                    .map_err(|e| p.err(g, format!("link {name}: gateway {e}")))?;
                if gw == ul || !contains(ul, ul_len, gw) || !is_host_address(gw) {
                    return Err(p.err(
                        g,
                        format!(
                            "link {name}: gateway {gw} must be another host on the underlay \
                             subnet {}/{ul_len}",
                            network(ul, ul_len)
                        ),
                    ));
                }
                Some(gw)
            }
        };
        if let (Some(b), false) = (&fl.broadcast, demux == Demux::Mac) {
            return Err(p.err(
                b,
                format!(
                    "link {name}: broadcast is only for demux = \"mac\" (with {}, broadcasts \
                     carry the tag of their router)",
                    demux.word()
                ),
            ));
        }
        let scheduler = match &fl.scheduler {
            None => Scheduler::Stride,
            Some(s) => match s.get_ref().as_str() {
                "stride" => Scheduler::Stride,
                "drr" => Scheduler::Drr,
                other => {
                    return Err(p.err(
                        s,
                        format!("link {name}: scheduler `{other}`: expected \"stride\" or \"drr\""),
                    ))
                }
            },
        };
        let mtu = match &fl.mtu {
            None => 1500,
            Some(m) => {
                let v = *m.get_ref();
                if v < MTU_RANGE.0 || v > MTU_RANGE.1 {
                    return Err(p.err(
                        m,
                        format!(
                            "link {name}: mtu {v} is not {} to {} (frames must fit bricks' \
                             2048-byte buffers, tunnels need room inside)",
                            MTU_RANGE.0, MTU_RANGE.1
                        ),
                    ));
                }
                v as u16
            }
        };
        links.push(Link {
            name: name.clone(),
            mac,
            demux,
            underlay,
            gateway,
            // Resolved once the routers are known.
            broadcast: if demux == Demux::Mac {
                Broadcast::Replicate
            } else {
                Broadcast::Drop
            },
            scheduler,
            mtu,
        });
    }
    let link_names = || {
        links
            .iter()
            .map(|l| l.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };

    // Routers.
    if f.router.is_empty() {
        return Err(plain("no routers: the file needs at least one [[router]]"));
    }
    if f.router.len() > MAX_ROUTERS {
        return Err(plain(format!(
            "{} routers: at most {MAX_ROUTERS}",
            f.router.len()
        )));
    }
    let mut routers: Vec<Router> = Vec::with_capacity(f.router.len());
    let mut router_lines: HashMap<String, String> = HashMap::new();
    // (link, tag) -> (router, line) of the interface that claims it.
    let mut tags: HashMap<(usize, TagKey), (usize, String)> = HashMap::new();
    // Interface MACs of mac links: MAC -> what has it.
    let mut macs: HashMap<[u8; 6], String> = HashMap::new();
    for link in &links {
        if let Some(m) = link.mac {
            macs.insert(m, format!("link {}", link.name));
        }
    }
    // (link, address) -> router, on links whose ARP is not tagged.
    let mut arp_addresses: HashMap<(usize, Ipv4Addr), (String, String)> = HashMap::new();
    for (r, fr) in f.router.iter().enumerate() {
        let name = fr.name.get_ref();
        if !valid_router_name(name) {
            return Err(p.err(
                &fr.name,
                format!(
                    "router name `{name}`: use a-z, 0-9 and '_', starting with a letter, at most \
                     {MAX_ROUTER_NAME} characters (its elements are named {name}/...)"
                ),
            ));
        }
        if let Some(first) = router_lines.insert(name.clone(), p.line(&fr.name)) {
            return Err(p.err(
                &fr.name,
                format!("router name `{name}` is used twice (first at {first})"),
            ));
        }
        if let Some((link, line)) = element_names.get(name) {
            return Err(p.err(
                &fr.name,
                format!(
                    "router name `{name}` is also the configuration name of link {link} \
                     ({line}); rename the router"
                ),
            ));
        }
        let weight = match &fr.weight {
            None => 1,
            Some(w) => {
                let v = *w.get_ref();
                if v == 0 {
                    return Err(p.err(
                        w,
                        format!(
                            "router {name}: weight 0 would never schedule it; weights are 1 to \
                             {MAX_WEIGHT}, shares in proportion"
                        ),
                    ));
                }
                if !(1..=MAX_WEIGHT).contains(&v) {
                    return Err(p.err(
                        w,
                        format!("router {name}: weight {v} is not 1 to {MAX_WEIGHT}"),
                    ));
                }
                v as u32
            }
        };
        let lookup = match &fr.lookup {
            None => Lookup::Radix,
            Some(s) => Lookup::ALL
                .into_iter()
                .find(|l| l.class() == s.get_ref())
                .ok_or_else(|| {
                    p.err(
                        s,
                        format!(
                            "router {name}: lookup `{}`: expected one of {}",
                            s.get_ref(),
                            Lookup::ALL.map(|l| l.class()).join(", ")
                        ),
                    )
                })?,
        };
        let local = match &fr.local {
            None => Local::Discard,
            Some(s) => match s.get_ref().as_str() {
                "discard" => Local::Discard,
                "host" => Local::Host,
                other => {
                    return Err(p.err(
                        s,
                        format!("router {name}: local `{other}`: expected \"discard\" or \"host\""),
                    ))
                }
            },
        };

        // Interfaces.
        if fr.interface.is_empty() {
            return Err(p.err(
                &fr.name,
                format!("router {name} has no [[router.interface]]"),
            ));
        }
        if fr.interface.len() > MAX_INTERFACES {
            return Err(p.err(
                &fr.name,
                format!(
                    "router {name} has {} interfaces; at most {MAX_INTERFACES}",
                    fr.interface.len()
                ),
            ));
        }
        let mut interfaces: Vec<Interface> = Vec::with_capacity(fr.interface.len());
        let mut itf_lines: Vec<String> = Vec::new();
        for (i, fi) in fr.interface.iter().enumerate() {
            let link_name = fi.link.get_ref();
            let Some(l) = links.iter().position(|k| &k.name == link_name) else {
                return Err(p.err(
                    &fi.link,
                    format!(
                        "router {name}: no link `{link_name}` (links: {})",
                        link_names()
                    ),
                ));
            };
            let link = &links[l];
            let here = format!("router {name} interface on {link_name}");
            let (address, prefix_len) = parse_prefix(fi.address.get_ref())
                .map_err(|e| p.err(&fi.address, format!("{here}: {e}")))?;
            check_address(address, prefix_len)
                .map_err(|e| p.err(&fi.address, format!("{here}: {e}")))?;
            let tag = interface_tag(&p, fi, link, &here, r, i)?;
            if let Tag::Tunnel { local, remote } = tag {
                let (ul, ul_len) = link.underlay.expect("ipip links have an underlay");
                let at = fi.tunnel.as_ref().expect("a tunnel tag has its table");
                if local == remote {
                    return Err(p.err(
                        at,
                        format!("{here}: the tunnel's local and remote are both {local}"),
                    ));
                }
                if !contains(ul, ul_len, remote) && link.gateway.is_none() {
                    return Err(p.err(
                        at,
                        format!(
                            "{here}: tunnel remote {remote} is not on the underlay subnet \
                             {}/{ul_len} and link {link_name} has no gateway",
                            network(ul, ul_len)
                        ),
                    ));
                }
                if remote == ul {
                    return Err(p.err(
                        at,
                        format!("{here}: tunnel remote {remote} is the box's own underlay address"),
                    ));
                }
            }
            if let Tag::Mac(m) = tag {
                let what = format!("router {name}'s interface on {link_name}");
                if let Some(other) = macs.insert(m, what.clone()) {
                    let at = fi
                        .mac
                        .as_ref()
                        .map_or_else(|| p.line(&fi.link), |s| p.line(s));
                    return Err(VrError(format!(
                        "{at}: MAC {} is given to both {other} and {what}",
                        format_mac(&m)
                    )));
                }
            }
            let key = TagKey::of(&tag);
            let tag_place = tag_span_line(&p, fi);
            if let Some((other, line)) = tags.get(&(l, key)) {
                let msg = if *other == r {
                    format!(
                        "router {name} has two interfaces on {link_name} with {} (the first at \
                         {line})",
                        key.text()
                    )
                } else {
                    format!(
                        "{} on link {link_name} is claimed by both router {} ({line}) and \
                         router {name}",
                        key.text(),
                        routers[*other].name
                    )
                };
                return Err(VrError(format!("{tag_place}: {msg}")));
            }
            tags.insert((l, key), (r, tag_place.clone()));
            if matches!(link.demux, Demux::Mac | Demux::Mpls) {
                if let Some((other, line)) =
                    arp_addresses.insert((l, address), (name.clone(), p.line(&fi.address)))
                {
                    return Err(p.err(
                        &fi.address,
                        format!(
                            "{here}: router {other} ({line}) has the address {address} on \
                             {link_name} too; on a {} link ARP is not separated by a tag, so \
                             routers there need addresses of their own",
                            link.demux.word()
                        ),
                    ));
                }
            }
            for (j, other) in interfaces.iter().enumerate() {
                if overlap(address, prefix_len, other.address, other.prefix_len) {
                    return Err(p.err(
                        &fi.address,
                        format!(
                            "{here}: {address}/{prefix_len} overlaps {}/{} of the router's \
                             interface at {}; a router's subnets must be apart",
                            other.address, other.prefix_len, itf_lines[j]
                        ),
                    ));
                }
            }
            interfaces.push(Interface {
                name: String::new(),
                link: l,
                tag,
                address,
                prefix_len,
            });
            itf_lines.push(p.line(&fi.link));
        }
        name_interfaces(&p, name, &fr.interface, &mut interfaces, &links)?;

        // Routes.
        if fr.route.len() > MAX_INLINE_ROUTES {
            return Err(p.err(
                &fr.name,
                format!(
                    "router {name} has {} [[router.route]]; at most {MAX_INLINE_ROUTES} inline \
                     (put larger tables in a routes_file)",
                    fr.route.len()
                ),
            ));
        }
        let routes = router_routes(&p, name, &fr.route, &interfaces)?;
        let routes_file = match &fr.routes_file {
            None => None,
            Some(s) => {
                let path = dir.join(s.get_ref());
                let count = check_routes_file(&path, s.get_ref(), interfaces.len())
                    .map_err(|e| p.err(s, format!("router {name}: routes_file: {e}")))?;
                if count == Some(0) && routes.is_empty() {
                    return Err(p.err(
                        s,
                        format!(
                            "router {name}: routes_file {} has no routes and the router has no \
                             [[router.route]]: a router without routes is refused",
                            s.get_ref()
                        ),
                    ));
                }
                Some(path)
            }
        };
        if routes.is_empty() && routes_file.is_none() {
            return Err(p.err(
                &fr.name,
                format!(
                    "router {name} has no routes: give [[router.route]] or a routes_file (its \
                     connected subnets alone make a router that only talks to its neighbours)"
                ),
            ));
        }
        routers.push(Router {
            name: name.clone(),
            weight,
            lookup,
            routes_file,
            routes,
            interfaces,
            local,
        });
    }

    // Broadcast settings need the routers; every link needs a router.
    for (l, fl) in f.link.iter().enumerate() {
        let users: Vec<usize> = routers
            .iter()
            .enumerate()
            .filter(|(_, r)| r.interfaces.iter().any(|i| i.link == l))
            .map(|(r, _)| r)
            .collect();
        if users.is_empty() {
            return Err(p.err(
                &fl.name,
                format!(
                    "no router has an interface on link {}: remove the link or give a router \
                     a [[router.interface]] with link = \"{}\"",
                    links[l].name, links[l].name
                ),
            ));
        }
        if let Some(b) = &fl.broadcast {
            links[l].broadcast = match b.get_ref().as_str() {
                "replicate" => Broadcast::Replicate,
                "drop" => Broadcast::Drop,
                other => {
                    let Some(r) = routers.iter().position(|r| r.name == other) else {
                        return Err(p.err(
                            b,
                            format!(
                                "link {}: broadcast `{other}`: expected \"replicate\", \"drop\" \
                                 or the name of a router on the link",
                                links[l].name
                            ),
                        ));
                    };
                    if !users.contains(&r) {
                        return Err(p.err(
                            b,
                            format!(
                                "link {}: broadcast goes to router {other}, which has no \
                                 interface on the link",
                                links[l].name
                            ),
                        ));
                    }
                    Broadcast::Router(r)
                }
            };
        }
    }

    Ok(VirtualRouters {
        queueing,
        links,
        routers,
    })
}

/// A tag as a key: what two interfaces on one link must not share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum TagKey {
    Vlan(u16),
    Mac([u8; 6]),
    Mpls(u32),
    Local(Ipv4Addr),
}

impl TagKey {
    fn of(tag: &Tag) -> TagKey {
        match *tag {
            Tag::Vlan(v) => TagKey::Vlan(v),
            Tag::Mac(m) => TagKey::Mac(m),
            Tag::Mpls { incoming, .. } => TagKey::Mpls(incoming),
            Tag::Tunnel { local, .. } => TagKey::Local(local),
        }
    }

    fn text(&self) -> String {
        match self {
            TagKey::Vlan(v) => format!("VLAN {v}"),
            TagKey::Mac(m) => format!("MAC {}", format_mac(m)),
            TagKey::Mpls(l) => format!("MPLS label {l}"),
            TagKey::Local(a) => format!("tunnel local address {a}"),
        }
    }
}

/// The line of an interface's tag (its link when the tag is derived).
fn tag_span_line(p: &Places<'_>, fi: &FileInterface) -> String {
    if let Some(s) = &fi.vlan {
        p.line(s)
    } else if let Some(s) = &fi.mac {
        p.line(s)
    } else if let Some(s) = &fi.mpls {
        p.line(s)
    } else if let Some(s) = &fi.tunnel {
        p.line(s)
    } else {
        p.line(&fi.link)
    }
}

/// The interface's tag: exactly one, of its link's kind.
fn interface_tag(
    p: &Places<'_>,
    fi: &FileInterface,
    link: &Link,
    here: &str,
    router: usize,
    index: usize,
) -> Result<Tag, VrError> {
    let given: Vec<(&str, String)> = [
        fi.vlan.as_ref().map(|s| ("vlan", p.line(s))),
        fi.mac.as_ref().map(|s| ("mac", p.line(s))),
        fi.mpls.as_ref().map(|s| ("mpls", p.line(s))),
        fi.tunnel.as_ref().map(|s| ("tunnel", p.line(s))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let wanted = match link.demux {
        Demux::Vlan => "vlan",
        Demux::Mac => "mac",
        Demux::Mpls => "mpls",
        Demux::Ipip => "tunnel",
    };
    if let Some((kind, line)) = given.iter().find(|(k, _)| *k != wanted) {
        return Err(VrError(format!(
            "{line}: {here}: `{kind}` does not match the link's demux = \"{}\", whose \
             interfaces take `{wanted}`",
            link.demux.word()
        )));
    }
    let example = match link.demux {
        Demux::Vlan => "vlan = 10",
        Demux::Mac => "mac = \"02:00:00:00:00:10\"",
        Demux::Mpls => "mpls = { in = 100, out = 200 }",
        Demux::Ipip => "tunnel = { local = \"192.0.2.10\", remote = \"198.51.100.1\" }",
    };
    match link.demux {
        Demux::Vlan => {
            let Some(v) = &fi.vlan else {
                return Err(p.err(
                    &fi.link,
                    format!("{here}: the link is a VLAN trunk: give the interface's VLAN, e.g. {example}"),
                ));
            };
            let id = *v.get_ref();
            if !(1..=4094).contains(&id) {
                return Err(p.err(
                    v,
                    format!(
                        "{here}: VLAN {id} is not 1 to 4094 (0 means no VLAN and 4095 is \
                         reserved, IEEE 802.1Q)"
                    ),
                ));
            }
            Ok(Tag::Vlan(id as u16))
        }
        Demux::Mac => match &fi.mac {
            None => Ok(Tag::Mac(VirtualRouters::derived_mac(router, index))),
            Some(m) => {
                let mac = parse_mac(m.get_ref()).map_err(|e| p.err(m, format!("{here}: {e}")))?;
                if !is_unicast_mac(&mac) {
                    return Err(p.err(
                        m,
                        format!("{here}: {} is not a unicast MAC address", format_mac(&mac)),
                    ));
                }
                Ok(Tag::Mac(mac))
            }
        },
        Demux::Mpls => {
            let Some(m) = &fi.mpls else {
                return Err(p.err(
                    &fi.link,
                    format!("{here}: the link demultiplexes by MPLS label: give {example}"),
                ));
            };
            let label = |v: i64, which: &str| -> Result<u32, VrError> {
                if !(16..=1_048_575).contains(&v) {
                    return Err(p.err(
                        m,
                        format!(
                            "{here}: MPLS {which} label {v} is not 16 to 1048575 (labels are \
                             20 bits; 0 to 15 are reserved, RFC 3032)"
                        ),
                    ));
                }
                Ok(v as u32)
            };
            Ok(Tag::Mpls {
                incoming: label(m.get_ref().incoming, "in")?,
                outgoing: label(m.get_ref().outgoing, "out")?,
            })
        }
        Demux::Ipip => {
            let Some(t) = &fi.tunnel else {
                return Err(p.err(
                    &fi.link,
                    format!("{here}: the link carries IP-in-IP tunnels: give {example}"),
                ));
            };
            let addr = |s: &str, which: &str| -> Result<Ipv4Addr, VrError> {
                let a =
                    parse_addr(s).map_err(|e| p.err(t, format!("{here}: tunnel {which}: {e}")))?;
                if !is_host_address(a) {
                    return Err(p.err(
                        t,
                        format!("{here}: tunnel {which} {a} is not a unicast host address"),
                    ));
                }
                Ok(a)
            };
            Ok(Tag::Tunnel {
                local: addr(&t.get_ref().local, "local")?,
                remote: addr(&t.get_ref().remote, "remote")?,
            })
        }
    }
}

/// Gives every interface its name: the file's, else the link's name when
/// the router has one interface on the link, else `LINK.VLAN` (VLAN
/// links) or `LINK.N` (its N-th interface on the link, from 1).
fn name_interfaces(
    p: &Places<'_>,
    router: &str,
    file: &[FileInterface],
    interfaces: &mut [Interface],
    links: &[Link],
) -> Result<(), VrError> {
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut nth: HashMap<usize, usize> = HashMap::new();
    for (i, fi) in file.iter().enumerate() {
        let l = interfaces[i].link;
        let on_link = interfaces.iter().filter(|x| x.link == l).count();
        let n = nth.entry(l).or_insert(0);
        *n += 1;
        let name = match &fi.name {
            Some(s) => {
                let v = s.get_ref();
                if v.is_empty()
                    || v.len() > 64
                    || !v
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
                {
                    return Err(p.err(
                        s,
                        format!(
                            "router {router}: interface name `{v}`: use letters, digits, '.', \
                             '-' and '_', at most 64"
                        ),
                    ));
                }
                v.clone()
            }
            None if on_link == 1 => links[l].name.clone(),
            None => match interfaces[i].tag {
                Tag::Vlan(v) => format!("{}.{v}", links[l].name),
                _ => format!("{}.{n}", links[l].name),
            },
        };
        let line = fi
            .name
            .as_ref()
            .map_or_else(|| p.line(&fi.link), |s| p.line(s));
        if let Some(first) = seen.insert(name.clone(), line.clone()) {
            return Err(VrError(format!(
                "{line}: router {router} has two interfaces named {name} (first at {first}); \
                 give them distinct `name`s"
            )));
        }
        interfaces[i].name = name;
    }
    Ok(())
}

/// The prefixes a router installs itself: its own addresses, its subnets'
/// network and broadcast addresses, its connected subnets, the limited
/// broadcast, local network control multicast and 0.0.0.0.
pub(crate) fn installed_prefixes(interfaces: &[Interface]) -> Vec<(Ipv4Addr, u8, String)> {
    let mut v = Vec::new();
    for i in interfaces {
        v.push((i.address, 32, format!("{}'s address", i.name)));
        if i.prefix_len < 31 {
            v.push((
                broadcast(i.address, i.prefix_len),
                32,
                format!("{}'s subnet broadcast", i.name),
            ));
            v.push((
                network(i.address, i.prefix_len),
                32,
                format!("{}'s network address", i.name),
            ));
        }
        if i.prefix_len < 32 {
            v.push((
                network(i.address, i.prefix_len),
                i.prefix_len,
                format!("{}'s connected subnet", i.name),
            ));
        }
    }
    v.push((Ipv4Addr::BROADCAST, 32, "the limited broadcast".into()));
    v.push((
        Ipv4Addr::new(224, 0, 0, 0),
        24,
        "local network control multicast".into(),
    ));
    v.push((Ipv4Addr::UNSPECIFIED, 32, "0.0.0.0".into()));
    v
}

fn router_routes(
    p: &Places<'_>,
    router: &str,
    file: &[FileRoute],
    interfaces: &[Interface],
) -> Result<Vec<Route>, VrError> {
    let installed: HashMap<(Ipv4Addr, u8), String> = installed_prefixes(interfaces)
        .into_iter()
        .map(|(a, l, what)| ((a, l), what))
        .collect();
    let mut seen: HashMap<(Ipv4Addr, u8), String> = HashMap::new();
    let mut routes = Vec::with_capacity(file.len());
    for fr in file {
        let text = fr.prefix.get_ref();
        let here = format!("router {router} route {text}");
        let (prefix, len) = parse_prefix(text)
            .map_err(|e| p.err(&fr.prefix, format!("router {router}: route {e}")))?;
        if prefix != network(prefix, len) {
            return Err(p.err(
                &fr.prefix,
                format!(
                    "{here}: host bits are set; did you mean {}/{len}?",
                    network(prefix, len)
                ),
            ));
        }
        if let Some(what) = installed.get(&(prefix, len)) {
            return Err(p.err(
                &fr.prefix,
                format!("{here}: the router installs this prefix itself ({what})"),
            ));
        }
        if let Some(first) = seen.insert((prefix, len), p.line(&fr.prefix)) {
            return Err(p.err(
                &fr.prefix,
                format!("{here}: the prefix is given twice (first at {first})"),
            ));
        }
        let gateway = match &fr.gateway {
            None => None,
            Some(g) => Some(
                parse_addr(g.get_ref()).map_err(|e| p.err(g, format!("{here}: gateway {e}")))?,
            ),
        };
        let names = || {
            interfaces
                .iter()
                .map(|i| i.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let interface = match (&fr.interface, gateway) {
            (Some(s), _) => interfaces
                .iter()
                .position(|i| &i.name == s.get_ref())
                .ok_or_else(|| {
                    p.err(
                        s,
                        format!(
                            "{here}: router {router} has no interface `{}` (its interfaces: {})",
                            s.get_ref(),
                            names()
                        ),
                    )
                })?,
            (None, Some(gw)) => {
                let on: Vec<usize> = interfaces
                    .iter()
                    .enumerate()
                    .filter(|(_, i)| contains(i.address, i.prefix_len, gw))
                    .map(|(k, _)| k)
                    .collect();
                match on.as_slice() {
                    [k] => *k,
                    _ => {
                        return Err(p.err(
                            &fr.prefix,
                            format!(
                                "{here}: gateway {gw} is on none of the router's subnets; give \
                                 the interface (its interfaces: {})",
                                names()
                            ),
                        ))
                    }
                }
            }
            (None, None) => {
                return Err(p.err(
                    &fr.prefix,
                    format!(
                        "{here}: give the interface it leaves by, or a gateway (its interfaces: \
                         {})",
                        names()
                    ),
                ))
            }
        };
        let itf = &interfaces[interface];
        if let Some(gw) = gateway {
            let tunnel = matches!(itf.tag, Tag::Tunnel { .. });
            if gw == itf.address {
                return Err(p.err(
                    &fr.prefix,
                    format!(
                        "{here}: gateway {gw} is the router's own address on {}",
                        itf.name
                    ),
                ));
            }
            if !tunnel && !contains(itf.address, itf.prefix_len, gw) {
                return Err(p.err(
                    &fr.prefix,
                    format!(
                        "{here}: gateway {gw} is not on {}'s subnet {}/{}",
                        itf.name,
                        network(itf.address, itf.prefix_len),
                        itf.prefix_len
                    ),
                ));
            }
        }
        routes.push(Route {
            prefix,
            len,
            gateway,
            interface,
        });
    }
    Ok(routes)
}

/// Checks a routes file as the lookup elements read it. Returns how many
/// routes it holds, or `None` when it is not checked here (binary, or too
/// large to read twice).
fn check_routes_file(path: &Path, shown: &str, interfaces: usize) -> Result<Option<usize>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a regular file"));
    }
    if meta.len() > MAX_CHECKED_ROUTES_FILE {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CHECKED_ROUTES_FILE).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {shown}: {e}"))?;
    let Ok(text) = String::from_utf8(bytes) else {
        // An MRT dump or a compressed table: the lookup element reads it.
        return Ok(None);
    };
    let mut count = 0;
    for (n, raw) in text.lines().enumerate() {
        let line = raw
            .split('#')
            .next()
            .unwrap_or("")
            .split("//")
            .next()
            .unwrap_or("")
            .trim();
        if line.is_empty() {
            continue;
        }
        let at = format!("{shown} line {}", n + 1);
        let words: Vec<&str> = line.split_whitespace().collect();
        let (prefix, gateway, out) = match words.as_slice() {
            [p, o] => (*p, None, *o),
            [p, g, o] => (*p, Some(*g), *o),
            _ => {
                return Err(format!(
                    "{at}: expected PREFIX/LEN [GATEWAY] OUTPUT, got `{line}`"
                ))
            }
        };
        let (addr, len) = parse_prefix(prefix).map_err(|e| format!("{at}: {e}"))?;
        if addr != network(addr, len) {
            return Err(format!(
                "{at}: {prefix}: host bits are set; did you mean {}/{len}?",
                network(addr, len)
            ));
        }
        if let Some(g) = gateway.filter(|g| *g != "-") {
            parse_addr(g).map_err(|e| format!("{at}: gateway {e}"))?;
        }
        let o: usize = out
            .parse()
            .map_err(|_| format!("{at}: output `{out}` is not a number"))?;
        if o > interfaces {
            return Err(format!(
                "{at}: output {o}, but the router has {interfaces} interface{} (outputs 0, local \
                 delivery, to {interfaces})",
                if interfaces == 1 { "" } else { "s" }
            ));
        }
        count += 1;
    }
    Ok(Some(count))
}

/// A routes file path as the configuration should name it: absolute, so
/// that `bricks run` finds it from any directory.
pub fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two routers sharing two VLAN trunks, with overlapping addresses.
    /// Line numbers matter: the tests assert them.
    const TWO: &str = r#"[[link]]
name = "eth0"
mac = "02:00:00:00:00:01"
demux = "vlan"

[[link]]
name = "eth1"
demux = "vlan"

[[router]]
name = "red"
weight = 2
  [[router.interface]]
  link = "eth0"
  vlan = 10
  address = "10.0.0.1/24"
  [[router.interface]]
  link = "eth1"
  vlan = 110
  address = "10.1.0.1/24"
  [[router.route]]
  prefix = "0.0.0.0/0"
  gateway = "10.1.0.254"

[[router]]
name = "blue"
  [[router.interface]]
  link = "eth0"
  vlan = 20
  address = "10.0.0.1/24"
  [[router.interface]]
  link = "eth1"
  vlan = 120
  address = "10.1.0.1/24"
  [[router.route]]
  prefix = "172.16.0.0/12"
  interface = "eth1"
"#;

    fn err(text: &str) -> String {
        match VirtualRouters::from_toml(text) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e.0,
        }
    }

    #[test]
    fn two_routers_with_overlapping_addresses() {
        let vr = VirtualRouters::from_toml(TWO).unwrap();
        assert_eq!(vr.queueing, Queueing::Direct);
        assert_eq!(vr.links.len(), 2);
        assert_eq!(vr.links[0].mac, Some([2, 0, 0, 0, 0, 1]));
        assert_eq!(vr.links[1].mac, None);
        assert_eq!(vr.links[0].mtu, 1500);
        let (red, blue) = (&vr.routers[0], &vr.routers[1]);
        assert_eq!((red.weight, blue.weight), (2, 1));
        assert_eq!(red.lookup, Lookup::Radix);
        assert_eq!(red.interfaces[0].tag, Tag::Vlan(10));
        assert_eq!(red.interfaces[1].name, "eth1");
        assert_eq!(red.interfaces[0].address, blue.interfaces[0].address);
        // The gateway tells the interface.
        assert_eq!(
            red.routes[0],
            Route {
                prefix: Ipv4Addr::UNSPECIFIED,
                len: 0,
                gateway: Some(Ipv4Addr::new(10, 1, 0, 254)),
                interface: 1
            }
        );
        assert_eq!(blue.routes[0].interface, 1);
        assert_eq!(vr.link_interfaces(0), vec![(0, 0), (1, 0)]);
        assert_eq!(vr.link_routers(1), vec![0, 1]);
    }

    #[test]
    fn the_same_tag_twice_on_a_link() {
        assert_eq!(
            err(&TWO.replace("vlan = 20", "vlan = 10")),
            "line 29: VLAN 10 on link eth0 is claimed by both router red (line 15) and router blue"
        );
        // The same VLAN on another link is another tag.
        assert!(VirtualRouters::from_toml(&TWO.replace("vlan = 20", "vlan = 110")).is_ok());
    }

    #[test]
    fn two_interfaces_of_one_router_with_one_tag() {
        let text = TWO.replace(
            "  [[router.interface]]\n  link = \"eth1\"\n  vlan = 110\n  address = \"10.1.0.1/24\"",
            "  [[router.interface]]\n  link = \"eth0\"\n  vlan = 10\n  address = \"10.1.0.1/24\"",
        );
        assert_eq!(
            err(&text),
            "line 19: router red has two interfaces on eth0 with VLAN 10 (the first at line 15)"
        );
        // Another VLAN of the same link is fine, and names the interfaces
        // by VLAN.
        let text = text.replacen(
            "vlan = 10\n  address = \"10.1.0.1/24\"",
            "vlan = 11\n  address = \"10.1.0.1/24\"",
            1,
        );
        let text = text.replace(
            "gateway = \"10.1.0.254\"",
            "gateway = \"10.1.0.254\"\n  interface = \"eth0.11\"",
        );
        let vr = VirtualRouters::from_toml(&text).unwrap();
        assert_eq!(vr.routers[0].interfaces[0].name, "eth0.10");
        assert_eq!(vr.routers[0].interfaces[1].name, "eth0.11");
    }

    #[test]
    fn a_weight_of_zero() {
        assert_eq!(
            err(&TWO.replace("weight = 2", "weight = 0")),
            "line 12: router red: weight 0 would never schedule it; weights are 1 to 1000, \
             shares in proportion"
        );
        assert_eq!(
            err(&TWO.replace("weight = 2", "weight = 1001")),
            "line 12: router red: weight 1001 is not 1 to 1000"
        );
        assert!(err(&TWO.replace("weight = 2", "weight = -1")).starts_with("line 12:"));
    }

    #[test]
    fn a_router_without_routes() {
        let text = TWO.replace(
            "  [[router.route]]\n  prefix = \"172.16.0.0/12\"\n  interface = \"eth1\"\n",
            "",
        );
        assert_eq!(
            err(&text),
            "line 26: router blue has no routes: give [[router.route]] or a routes_file (its \
             connected subnets alone make a router that only talks to its neighbours)"
        );
    }

    #[test]
    fn an_unknown_link() {
        assert_eq!(
            err(&TWO.replace(
                "link = \"eth1\"\n  vlan = 120",
                "link = \"eth9\"\n  vlan = 120"
            )),
            "line 32: router blue: no link `eth9` (links: eth0, eth1)"
        );
    }

    #[test]
    fn a_tag_of_another_kind() {
        assert_eq!(
            err(&TWO.replace("vlan = 20", "mpls = { in = 100, out = 200 }")),
            "line 29: router blue interface on eth0: `mpls` does not match the link's demux = \
             \"vlan\", whose interfaces take `vlan`"
        );
        assert_eq!(
            err(&TWO.replace("  vlan = 20\n", "")),
            "line 28: router blue interface on eth0: the link is a VLAN trunk: give the \
             interface's VLAN, e.g. vlan = 10"
        );
        // Two tags: the one of the wrong kind is named.
        assert!(
            err(&TWO.replace("vlan = 20", "vlan = 20\n  mac = \"02:00:00:00:00:09\""))
                .starts_with("line 30: router blue interface on eth0: `mac` does not match")
        );
    }

    #[test]
    fn vlan_ids_outside_1_to_4094() {
        for bad in ["0", "4095", "-3", "70000"] {
            assert_eq!(
                err(&TWO.replace("vlan = 20", &format!("vlan = {bad}"))),
                format!(
                    "line 29: router blue interface on eth0: VLAN {bad} is not 1 to 4094 (0 \
                     means no VLAN and 4095 is reserved, IEEE 802.1Q)"
                )
            );
        }
        assert!(VirtualRouters::from_toml(&TWO.replace("vlan = 20", "vlan = 4094")).is_ok());
    }

    #[test]
    fn duplicate_router_names() {
        assert_eq!(
            err(&TWO.replace("name = \"blue\"", "name = \"red\"")),
            "line 26: router name `red` is used twice (first at line 11)"
        );
        assert!(err(&TWO.replace("name = \"blue\"", "name = \"Blue\""))
            .starts_with("line 26: router name `Blue`: use a-z"));
        assert!(
            err(&TWO.replace("name = \"blue\"", "name = \"eth0\"")).starts_with(
                "line 26: router name `eth0` is also the configuration name of link eth0"
            )
        );
        assert!(err(&TWO.replace("name = \"eth1\"", "name = \"eth0\""))
            .starts_with("line 7: link `eth0` is given twice (first at line 2)"));
    }

    #[test]
    fn interface_addresses() {
        assert_eq!(
            err(&TWO.replace("address = \"10.0.0.1/24\"\n  [[router.interface]]\n  link = \"eth1\"\n  vlan = 120", "address = \"10.0.0.0/24\"\n  [[router.interface]]\n  link = \"eth1\"\n  vlan = 120")),
            "line 30: router blue interface on eth0: 10.0.0.0/24: the host bits are zero, so \
             this is the subnet's network address; give the router's own address, e.g. \
             10.0.0.1/24"
        );
        let bad = |a: &str| err(&TWO.replacen("10.0.0.1/24", a, 1));
        assert!(bad("10.0.0.255/24").ends_with("this is the subnet's broadcast address"));
        assert!(bad("10.0.0.1").contains("has no prefix length"));
        assert!(bad("10.0.0.1/33").contains("prefix length `33` is not 0 to 32"));
        assert!(bad("224.0.0.1/24").contains("not a unicast host address"));
        assert!(bad("10.0.0.1/24/1").starts_with("line 16:"));
        // /31 has no network or broadcast address (RFC 3021).
        assert!(VirtualRouters::from_toml(&TWO.replacen("10.0.0.1/24", "10.0.0.0/31", 1)).is_ok());
        // One router's subnets must be apart.
        let e = bad("10.1.0.9/16");
        assert!(
            e.starts_with(
                "line 20: router red interface on eth1: 10.1.0.1/24 overlaps 10.1.0.9/16"
            ),
            "{e}"
        );
    }

    #[test]
    fn unknown_keys() {
        let e = err(&TWO.replace("weight = 2", "weight = 2\ncolour = \"red\""));
        assert!(
            e.starts_with("line 13, column 1: unknown field `colour`"),
            "{e}"
        );
        let e = err(&TWO.replace("vlan = 10", "vlan = 10\n  vlna = 3"));
        assert!(
            e.starts_with("line 16, column 3: unknown field `vlna`"),
            "{e}"
        );
        let e = err(&format!("colour = 1\n{TWO}"));
        assert!(
            e.starts_with("line 1, column 1: unknown field `colour`"),
            "{e}"
        );
        let e = err(&TWO.replace("vlan = 20", "mpls = { in = 1, out = 2, ttl = 3 }"));
        assert!(e.contains("unknown field `ttl`"), "{e}");
    }

    #[test]
    fn an_ipip_link_without_an_underlay_address() {
        let text = TWO.replace(
            "name = \"eth1\"\ndemux = \"vlan\"",
            "name = \"eth1\"\ndemux = \"ipip\"",
        );
        assert_eq!(
            err(&text),
            "line 7: link eth1 (demux = \"ipip\") has no address: an IP-in-IP link needs the \
             box's underlay address, e.g. address = \"192.0.2.1/24\""
        );
        // ... and an address where it means nothing.
        assert!(err(&TWO.replace(
            "demux = \"vlan\"\n\n[[router]]",
            "demux = \"vlan\"\naddress = \"192.0.2.1/24\"\n\n[[router]]"
        ))
        .starts_with("line 9: link eth1: address is only for demux = \"ipip\""));
    }

    const TUNNELS: &str = r#"[[link]]
name = "eth0"
demux = "ipip"
address = "192.0.2.1/24"

[[router]]
name = "a"
  [[router.interface]]
  name = "tun"
  link = "eth0"
  tunnel = { local = "192.0.2.10", remote = "192.0.2.20" }
  address = "10.255.0.1/30"
  [[router.route]]
  prefix = "0.0.0.0/0"
  interface = "tun"

[[router]]
name = "b"
  [[router.interface]]
  link = "eth0"
  tunnel = { local = "192.0.2.11", remote = "192.0.2.20" }
  address = "10.255.0.1/30"
  [[router.route]]
  prefix = "10.0.0.0/8"
  gateway = "10.255.0.2"
"#;

    #[test]
    fn tunnels() {
        let vr = VirtualRouters::from_toml(TUNNELS).unwrap();
        assert_eq!(
            vr.routers[1].interfaces[0].tag,
            Tag::Tunnel {
                local: Ipv4Addr::new(192, 0, 2, 11),
                remote: Ipv4Addr::new(192, 0, 2, 20)
            }
        );
        assert_eq!(vr.interface_mtu(&vr.routers[0].interfaces[0]), 1480);
        assert_eq!(
            err(&TUNNELS.replace("192.0.2.11", "192.0.2.10")),
            "line 21: tunnel local address 192.0.2.10 on link eth0 is claimed by both router a \
             (line 11) and router b"
        );
        assert_eq!(
            err(&TUNNELS.replacen("remote = \"192.0.2.20\"", "remote = \"198.51.100.1\"", 1)),
            "line 11: router a interface on eth0: tunnel remote 198.51.100.1 is not on the \
             underlay subnet 192.0.2.0/24 and link eth0 has no gateway"
        );
        let with_gw = TUNNELS
            .replacen("remote = \"192.0.2.20\"", "remote = \"198.51.100.1\"", 1)
            .replace(
                "address = \"192.0.2.1/24\"",
                "address = \"192.0.2.1/24\"\ngateway = \"192.0.2.254\"",
            );
        assert_eq!(
            VirtualRouters::from_toml(&with_gw).unwrap().links[0].gateway,
            Some(Ipv4Addr::new(192, 0, 2, 254))
        );
        assert!(err(&TUNNELS.replace(
            "address = \"192.0.2.1/24\"",
            "address = \"192.0.2.1/24\"\ngateway = \"10.0.0.1\""
        ))
        .starts_with(
            "line 5: link eth0: gateway 10.0.0.1 must be another host on the underlay subnet"
        ));
        assert!(
            err(&TUNNELS.replacen("remote = \"192.0.2.20\"", "remote = \"192.0.2.10\"", 1))
                .contains("the tunnel's local and remote are both 192.0.2.10")
        );
        assert!(
            err(&TUNNELS.replacen("remote = \"192.0.2.20\"", "remote = \"192.0.2.1\"", 1))
                .contains("is the box's own underlay address")
        );
        // Tunnels on a VLAN link are refused.
        assert!(err(&TUNNELS.replace(
            "demux = \"ipip\"\naddress = \"192.0.2.1/24\"",
            "demux = \"vlan\""
        ))
        .contains("`tunnel` does not match the link's demux = \"vlan\""));
    }

    const MPLS: &str = r#"[[link]]
name = "eth0"
demux = "mpls"

[[router]]
name = "a"
  [[router.interface]]
  link = "eth0"
  mpls = { in = 100, out = 200 }
  address = "10.9.0.1/24"
  [[router.route]]
  prefix = "0.0.0.0/0"
  gateway = "10.9.0.254"

[[router]]
name = "b"
  [[router.interface]]
  link = "eth0"
  mpls = { in = 101, out = 201 }
  address = "10.9.0.2/24"
  [[router.route]]
  prefix = "0.0.0.0/0"
  gateway = "10.9.0.254"
"#;

    #[test]
    fn mpls_labels() {
        let vr = VirtualRouters::from_toml(MPLS).unwrap();
        assert_eq!(
            vr.routers[1].interfaces[0].tag,
            Tag::Mpls {
                incoming: 101,
                outgoing: 201
            }
        );
        assert_eq!(vr.interface_mtu(&vr.routers[0].interfaces[0]), 1496);
        assert_eq!(
            err(&MPLS.replace("in = 101", "in = 100")),
            "line 19: MPLS label 100 on link eth0 is claimed by both router b (line 9) and router a"
                .replace("router b (line 9) and router a", "router a (line 9) and router b")
        );
        assert!(err(&MPLS.replace("in = 101", "in = 15")).starts_with(
            "line 19: router b interface on eth0: MPLS in label 15 is not 16 to 1048575"
        ));
        assert!(err(&MPLS.replace("out = 201", "out = 1048576")).contains("MPLS out label 1048576"));
        // Untagged ARP: addresses must differ between routers.
        assert!(err(&MPLS.replace("10.9.0.2/24", "10.9.0.1/24")).starts_with(
            "line 20: router b interface on eth0: router a (line 10) has the address 10.9.0.1 on eth0 too"
        ));
    }

    const MACS: &str = r#"[[link]]
name = "eth0"
mac = "02:00:00:00:00:01"
demux = "mac"
broadcast = "b"

[[router]]
name = "a"
  [[router.interface]]
  link = "eth0"
  mac = "02:00:00:00:0a:01"
  address = "10.9.0.1/24"
  [[router.route]]
  prefix = "0.0.0.0/0"
  gateway = "10.9.0.254"

[[router]]
name = "b"
  [[router.interface]]
  link = "eth0"
  address = "10.9.0.2/24"
  [[router.route]]
  prefix = "0.0.0.0/0"
  gateway = "10.9.0.254"
"#;

    #[test]
    fn macs() {
        let vr = VirtualRouters::from_toml(MACS).unwrap();
        assert_eq!(vr.links[0].broadcast, Broadcast::Router(1));
        assert_eq!(
            vr.routers[1].interfaces[0].tag,
            Tag::Mac([0x02, 0x76, 0, 1, 0, 1])
        );
        assert_eq!(
            err(&MACS.replace("02:00:00:00:0a:01", "02:00:00:00:00:01")),
            "line 11: MAC 02:00:00:00:00:01 is given to both link eth0 and router a's interface on eth0"
        );
        assert!(err(&MACS.replace("02:00:00:00:0a:01", "02:76:00:01:00:01")).starts_with(
            "line 20: MAC 02:76:00:01:00:01 is given to both router a's interface on eth0 and router b's"
        ));
        assert!(err(&MACS.replace("02:00:00:00:0a:01", "01:00:00:00:0a:01"))
            .contains("not a unicast MAC"));
        assert!(err(&MACS.replace("broadcast = \"b\"", "broadcast = \"c\"")).starts_with(
            "line 5: link eth0: broadcast `c`: expected \"replicate\", \"drop\" or the name of a router"
        ));
        assert_eq!(
            VirtualRouters::from_toml(&MACS.replace("broadcast = \"b\"", "broadcast = \"drop\""))
                .unwrap()
                .links[0]
                .broadcast,
            Broadcast::Drop
        );
        assert!(err(&TWO.replace(
            "demux = \"vlan\"\n\n[[link]]",
            "demux = \"vlan\"\nbroadcast = \"drop\"\n\n[[link]]"
        ))
        .starts_with("line 5: link eth0: broadcast is only for demux = \"mac\""));
    }

    #[test]
    fn routes_are_checked() {
        let route = |extra: &str| {
            TWO.replace(
                "  prefix = \"172.16.0.0/12\"\n  interface = \"eth1\"\n",
                &format!("  prefix = \"172.16.0.0/12\"\n  interface = \"eth1\"\n  [[router.route]]\n{extra}"),
            )
        };
        assert_eq!(
            err(&route("  prefix = \"192.168.1.1/16\"\n  interface = \"eth0\"\n")),
            "line 39: router blue route 192.168.1.1/16: host bits are set; did you mean 192.168.0.0/16?"
        );
        assert_eq!(
            err(&route("  prefix = \"172.16.0.0/12\"\n  interface = \"eth0\"\n")),
            "line 39: router blue route 172.16.0.0/12: the prefix is given twice (first at line 36)"
        );
        assert_eq!(
            err(&route("  prefix = \"10.1.0.0/24\"\n  interface = \"eth0\"\n")),
            "line 39: router blue route 10.1.0.0/24: the router installs this prefix itself (eth1's connected subnet)"
        );
        assert_eq!(
            err(&route("  prefix = \"10.9.0.0/16\"\n  interface = \"lan\"\n")),
            "line 40: router blue route 10.9.0.0/16: router blue has no interface `lan` (its interfaces: eth0, eth1)"
        );
        assert!(err(&route(
            "  prefix = \"10.9.0.0/16\"\n  gateway = \"10.7.0.1\"\n"
        ))
        .contains("gateway 10.7.0.1 is on none of the router's subnets"));
        assert!(err(&route(
            "  prefix = \"10.9.0.0/16\"\n  gateway = \"10.0.0.9\"\n  interface = \"eth1\"\n"
        ))
        .contains("gateway 10.0.0.9 is not on eth1's subnet 10.1.0.0/24"));
        assert!(
            err(&route("  prefix = \"10.9.0.0/16\"\n")).contains("give the interface it leaves by")
        );
        assert!(err(&route(
            "  prefix = \"10.9.0.0/16\"\n  gateway = \"10.0.0.1\"\n"
        ))
        .contains("gateway 10.0.0.1 is the router's own address on eth0"));
    }

    #[test]
    fn routes_files() {
        let dir = std::env::temp_dir().join(format!("bricks-vr-routes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = TWO
            .replace(
                "  [[router.route]]\n  prefix = \"172.16.0.0/12\"\n  interface = \"eth1\"\n",
                "",
            )
            .replace(
                "name = \"blue\"",
                "name = \"blue\"\nroutes_file = \"b.routes\"",
            );
        std::fs::write(
            dir.join("b.routes"),
            "# blue\n172.16.0.0/12 10.1.0.253 2\n10.5.0.0/16 - 1 // no gateway\n",
        )
        .unwrap();
        let vr = VirtualRouters::from_toml_in(&text, &dir).unwrap();
        assert_eq!(vr.routers[1].routes_file, Some(dir.join("b.routes")));
        std::fs::write(dir.join("b.routes"), "172.16.0.0/12 10.1.0.253 3\n").unwrap();
        assert_eq!(
            VirtualRouters::from_toml_in(&text, &dir).unwrap_err().0,
            "line 27: router blue: routes_file: b.routes line 1: output 3, but the router has 2 \
             interfaces (outputs 0, local delivery, to 2)"
        );
        std::fs::write(dir.join("b.routes"), "\n172.16.0.1/12 2\n").unwrap();
        assert!(VirtualRouters::from_toml_in(&text, &dir)
            .unwrap_err()
            .0
            .contains("b.routes line 2: 172.16.0.1/12: host bits are set"));
        std::fs::write(dir.join("b.routes"), "# nothing\n").unwrap();
        assert!(VirtualRouters::from_toml_in(&text, &dir)
            .unwrap_err()
            .0
            .contains("has no routes"));
        let e = VirtualRouters::from_toml_in(&text.replace("b.routes", "none.routes"), &dir)
            .unwrap_err()
            .0;
        assert!(
            e.starts_with("line 27: router blue: routes_file: cannot read none.routes"),
            "{e}"
        );
        let e = VirtualRouters::from_toml_in(&text.replace("b.routes", "."), &dir)
            .unwrap_err()
            .0;
        assert!(e.contains(". is not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn links_are_checked() {
        assert_eq!(
            err("[[router]]\nname = \"a\"\n"),
            "no links: the file needs at least one [[link]] (a physical interface)"
        );
        assert_eq!(
            err("[[link]]\nname = \"eth0\"\ndemux = \"vlan\"\n"),
            "no routers: the file needs at least one [[router]]"
        );
        assert!(
            err(&TWO.replacen("demux = \"vlan\"", "demux = \"qinq\"", 1)).starts_with(
                "line 4: link eth0: demux `qinq`: expected \"vlan\", \"mac\", \"mpls\" or \"ipip\""
            )
        );
        assert!(err(&TWO.replacen("\"eth0\"", "\"a very long name\"", 1))
            .starts_with("line 2: link name"));
        assert!(err(&TWO
            .replacen("\"eth1\"", "\"eth.0\"", 1)
            .replace("name = \"eth0\"", "name = \"eth_0\"")
            .replace("link = \"eth0\"", "link = \"eth_0\"")
            .replace("link = \"eth1\"", "link = \"eth.0\""))
        .starts_with("line 7: links `eth_0` (line 2) and `eth.0` would both be named `eth_0`"));
        assert!(
            err(&TWO.replacen("demux = \"vlan\"", "demux = \"vlan\"\nmtu = 9000", 1))
                .starts_with("line 5: link eth0: mtu 9000 is not 128 to 2000")
        );
        assert!(err(&TWO.replacen(
            "demux = \"vlan\"",
            "demux = \"vlan\"\nscheduler = \"fifo\"",
            1
        ))
        .contains("expected \"stride\" or \"drr\""));
        assert!(err(&format!("queueing = \"fair\"\n{TWO}")).starts_with("line 1: queueing `fair`"));
        let e = err(&format!(
            "{TWO}\n[[link]]\nname = \"eth2\"\ndemux = \"vlan\"\n"
        ));
        assert!(
            e.starts_with("line 40: no router has an interface on link eth2"),
            "{e}"
        );
        assert!(err(&TWO.replace("weight = 2", "weight = 2\nlookup = \"Dir24\"")).contains(
            "lookup `Dir24`: expected one of DirectIPLookup, RadixIPLookup, StaticIPLookup, LookupIPRoute"
        ));
    }

    #[test]
    fn never_panics_on_bad_values() {
        for text in [
            "",
            "link = 1",
            "[[link]]",
            "[[link]]\nname = \"\"\ndemux = \"vlan\"",
            "[[link]]\nname = \"e\"\ndemux = \"vlan\"\nmtu = -99999999999",
            "[[link]]\nname = \"é\"\ndemux = \"vlan\"",
            "[[link]]\nname = \"e\"\ndemux = \"mac\"\n[[router]]\nname = \"r\"\n[[router.interface]]\nlink = \"e\"\naddress = \"1.0.0.1/8\"",
            "[[link]]\nname = \"e\"\ndemux = \"vlan\"\n[[router]]\nname = \"r\"\n[[router.interface]]\nlink = \"e\"\nvlan = 99999999999999\naddress = \"1.0.0.1/8\"",
        ] {
            assert!(VirtualRouters::from_toml(text).is_err(), "{text}");
        }
    }
}
