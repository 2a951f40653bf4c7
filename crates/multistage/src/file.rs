//! The multistage file: a TOML description of the balancers, the routers,
//! the switch between them and the routes the routers share, read into a
//! [`Multistage`] and refused, with the line and the reason, when it
//! cannot work.
//!
//! ```toml
//! name = "2x2"               # required; a-z, 0-9 and '-', at most 8 characters
//!                            # (it prefixes namespace and socket names)
//! policy = "rr"              # rr (per-packet round robin, the paper's; default),
//!                            # flow (5-tuple hash) or flowlet
//! delta = "50ms"             # flowlet gap (policy flowlet); default 50ms
//! mode = "dtx"               # dtx (default; several back ports: DTX-n) or odb
//! probe_interval = "50ms"    # every balancer probes every router this often; default 50ms
//! probe_misses = 3           # intervals without a reply before a router is out; default 3
//! routes_file = "2x2.routes" # optional, relative to this file; lines
//!                            # "PREFIX/LEN PORT [GATEWAY]" or "PREFIX/LEN GATEWAY",
//!                            # '#' comments
//!
//! [switch]                   # optional
//! name = "sw"                # default "sw"; on one machine, a Linux bridge
//!
//! [[balancer]]
//! name = "lb1"               # a-z and 0-9, at most 6 characters; names are
//!                            # shared by balancers, routers and the switch
//!   [[balancer.front]]       # front port 0 (numbered over all balancers in order)
//!   iface = "ext0"
//!   address = "10.0.0.1/24"  # G_0: the router's address on the port's subnet
//!   mac = "02:00:00:00:00:10" # optional: F_0; else the interface's, -D MAC0=... at run time
//!   [[balancer.back]]        # a back port on the switch; several: DTX-n
//!   iface = "back0"
//!   mac = "02:00:00:00:01:00" # optional; else 02:4d:42:BB:JJ:00
//!
//! [[router]]
//! name = "r1"
//! iface = "eth0"             # its back NIC, on the switch
//! lookup = "RadixIPLookup"   # DirectIPLookup, RadixIPLookup (default),
//!                            # StaticIPLookup or LookupIPRoute
//!
//! [[route]]                  # every router's; the front subnets are in already
//! prefix = "0.0.0.0/0"
//! port = "lb1:ext0"          # BALANCER:IFACE, the front port it leaves by; optional
//!                            # when the gateway is on a front subnet
//! gateway = "10.0.0.254"     # optional: straight to the destination when absent
//! ```
//!
//! `conf/multistage/2x2.toml` (the paper's two balancers and two routers)
//! and `conf/multistage/dtx3.toml` (one balancer with three back ports,
//! three routers) are complete examples.
//!
//! Unknown keys are refused (a typo is an error, with the line and
//! column), and so is every router that cannot work: no balancer or no
//! router; a balancer without a front or a back port; more than 255
//! routers, front ports, balancers or back ports on one balancer (each
//! index is one byte of an internal MAC); names that are not valid or
//! given twice; an interface used twice on one balancer; a MAC given
//! twice, not a unicast one, or of the internal forms (02:4d:53:.. and
//! 02:4d:42:..); front addresses that are not a host's; overlapping front
//! subnets; routes with host bits set, given twice, for a front subnet
//! (connected already), to an unknown port, with no port nor gateway, or
//! via a gateway off every front subnet (or off the named port's, or the
//! router's own address); an unknown policy, mode or lookup; zero or
//! absurd intervals and miss counts.

use crate::model::{
    is_internal_mac, BackPort, Balancer, FrontPort, Lookup, Mode, Multistage, MultistageError,
    Policy, Route, Router,
};
use crate::units::{
    broadcast, contains, format_duration, format_mac, network, overlap, parse_duration, parse_mac,
    parse_prefix,
};
use serde::Deserialize;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;

/// Longest multistage name.
pub const MAX_NAME: usize = 8;
/// Longest box (balancer, router, switch) name.
pub const MAX_BOX_NAME: usize = 6;
/// Most routers: the router index is one byte of its MACs.
pub const MAX_ROUTERS: usize = 255;
/// Most front ports over all balancers: the front port index is one byte
/// of the routers' MACs.
pub const MAX_FRONT_PORTS: usize = 255;
/// Most balancers: the balancer index is one byte of its back MACs.
pub const MAX_BALANCERS: usize = 255;
/// Most back ports of one balancer: the port index is one byte of its MAC.
pub const MAX_BACK_PORTS: usize = 255;
/// Longest interface name (Linux's IFNAMSIZ less the NUL).
pub const MAX_IFACE: usize = 15;
/// Shortest probe interval: every balancer probes every router, and each
/// router answers once per front port.
pub const MIN_PROBE_INTERVAL: Duration = Duration::from_millis(1);
/// Longest probe interval: a dead router would keep its share for longer
/// than anyone waits.
pub const MAX_PROBE_INTERVAL: Duration = Duration::from_secs(10);
/// Most probe intervals a router may miss.
pub const MAX_PROBE_MISSES: i64 = 100;
/// Longest flowlet gap.
pub const MAX_DELTA: Duration = Duration::from_secs(60);
/// Largest routes file read.
const MAX_ROUTES_FILE: u64 = 64 << 20;
/// Default switch name.
const DEFAULT_SWITCH: &str = "sw";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileMultistage {
    name: Spanned<String>,
    policy: Option<Spanned<String>>,
    delta: Option<Spanned<String>>,
    mode: Option<Spanned<String>>,
    probe_interval: Option<Spanned<String>>,
    probe_misses: Option<Spanned<i64>>,
    routes_file: Option<Spanned<String>>,
    switch: Option<FileSwitch>,
    #[serde(default)]
    balancer: Vec<FileBalancer>,
    #[serde(default)]
    router: Vec<FileRouter>,
    #[serde(default)]
    route: Vec<FileRoute>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSwitch {
    name: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileBalancer {
    name: Spanned<String>,
    #[serde(default)]
    front: Vec<FileFront>,
    #[serde(default)]
    back: Vec<FileBack>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFront {
    iface: Spanned<String>,
    address: Spanned<String>,
    mac: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileBack {
    iface: Spanned<String>,
    mac: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRouter {
    name: Spanned<String>,
    iface: Spanned<String>,
    lookup: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRoute {
    prefix: Spanned<String>,
    port: Option<Spanned<String>>,
    gateway: Option<Spanned<String>>,
}

/// A route as written, in the file or the routes file, with where.
struct RouteText {
    at: String,
    prefix: String,
    port: Option<String>,
    gateway: Option<String>,
}

impl Multistage {
    /// Reads a multistage file's text. A `routes_file` is read relative to
    /// the current directory; [`Multistage::load`] reads it relative to
    /// the file.
    pub fn from_toml(text: &str) -> Result<Multistage, MultistageError> {
        Multistage::from_toml_in(text, Path::new("."))
    }

    /// Reads a multistage file's text; a `routes_file` is read relative
    /// to `dir`.
    pub fn from_toml_in(text: &str, dir: &Path) -> Result<Multistage, MultistageError> {
        let file: FileMultistage = bricks_spec::from_toml(text).map_err(MultistageError)?;
        build(text, file, dir)
    }

    /// Reads and checks a multistage file.
    pub fn load(path: &Path) -> Result<Multistage, MultistageError> {
        let (text, dir) = bricks_spec::read(path).map_err(MultistageError)?;
        Multistage::from_toml_in(&text, dir)
    }
}

/// Builds error messages that start with a place in the file.
type Places<'a> = bricks_spec::Places<'a, MultistageError>;

fn plain(message: impl Into<String>) -> MultistageError {
    MultistageError(message.into())
}

fn valid_name(s: &str) -> bool {
    bricks_spec::valid_name(s, MAX_NAME, true)
}

fn valid_box_name(s: &str) -> bool {
    bricks_spec::valid_name(s, MAX_BOX_NAME, false)
}

/// Interface names: what Linux takes, less what would need quoting in a
/// Click configuration or a shell.
fn check_iface(s: &str) -> Result<(), String> {
    bricks_spec::check_iface(s, "interface", MAX_IFACE)
}

/// A MAC the file gives: unicast, not zero, not of an internal form.
fn check_mac(mac: &[u8; 6]) -> Result<(), String> {
    let text = format_mac(mac);
    if mac[0] & 1 != 0 {
        return Err(format!("MAC {text} is a group (multicast) address"));
    }
    if *mac == [0; 6] {
        return Err("MAC 00:00:00:00:00:00 is not an interface's address".into());
    }
    if is_internal_mac(mac) {
        return Err(format!(
            "MAC {text} has the form of the internal MACs (02:4d:53:.. for routers, \
             02:4d:42:.. for back ports): balancers drop such frames from outside; choose \
             another"
        ));
    }
    Ok(())
}

/// A front port's address: a host's address inside its subnet, not the
/// subnet's network or broadcast address.
fn check_front_address(a: Ipv4Addr, len: u8) -> Result<(), String> {
    if a.is_unspecified() || a.is_broadcast() || a.is_multicast() || a.is_loopback() {
        return Err(format!("{a} is not a unicast address"));
    }
    if len == 0 {
        return Err(format!("{a}/0: a front subnet cannot be every address"));
    }
    if len == 32 {
        return Err(format!(
            "{a}/32: a front subnet needs room for a host besides the router"
        ));
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

fn duration(
    p: &Places<'_>,
    key: &str,
    s: Option<&Spanned<String>>,
    default: Duration,
    max: Duration,
) -> Result<Duration, MultistageError> {
    let Some(s) = s else {
        return Ok(default);
    };
    let d = parse_duration(s.get_ref()).map_err(|e| p.err(s, format!("{key}: {e}")))?;
    if d.is_zero() {
        return Err(p.err(s, format!("{key} is 0")));
    }
    if d > max {
        return Err(p.err(
            s,
            format!(
                "{key} is {}: more than {}",
                format_duration(d),
                format_duration(max)
            ),
        ));
    }
    Ok(d)
}

fn build(text: &str, f: FileMultistage, dir: &Path) -> Result<Multistage, MultistageError> {
    let p = Places::new(text, MultistageError);

    let name = f.name.get_ref().clone();
    if !valid_name(&name) {
        return Err(p.err(
            &f.name,
            format!(
                "name `{name}`: use a-z, 0-9 and '-', at most {MAX_NAME} characters (it \
                 prefixes namespace and socket names)"
            ),
        ));
    }
    let policy = match &f.policy {
        None => Policy::RoundRobin,
        Some(s) => Policy::ALL
            .into_iter()
            .find(|x| x.word() == s.get_ref().trim())
            .ok_or_else(|| {
                p.err(
                    s,
                    format!("policy `{}`: expected rr, flow or flowlet", s.get_ref()),
                )
            })?,
    };
    let mode = match &f.mode {
        None => Mode::Dtx,
        Some(s) => match s.get_ref().trim() {
            "dtx" => Mode::Dtx,
            "odb" => Mode::Odb,
            other => {
                return Err(p.err(
                    s,
                    format!(
                        "mode `{other}`: expected dtx (balancing at layer 2; several back \
                         ports make it DTX-n) or odb (IP input processing first)"
                    ),
                ))
            }
        },
    };
    let delta = duration(
        &p,
        "delta",
        f.delta.as_ref(),
        Duration::from_millis(50),
        MAX_DELTA,
    )?;
    let probe_interval = duration(
        &p,
        "probe_interval",
        f.probe_interval.as_ref(),
        Duration::from_millis(50),
        MAX_PROBE_INTERVAL,
    )?;
    if probe_interval < MIN_PROBE_INTERVAL {
        let s = f.probe_interval.as_ref().expect("the default is longer");
        return Err(p.err(
            s,
            format!(
                "probe_interval is {}: less than {} (every balancer probes every router, \
                 and each answers once per front port)",
                format_duration(probe_interval),
                format_duration(MIN_PROBE_INTERVAL)
            ),
        ));
    }
    let probe_misses = match &f.probe_misses {
        None => 3,
        Some(s) => {
            let m = *s.get_ref();
            if m < 1 {
                return Err(p.err(
                    s,
                    format!("probe_misses is {m}: a router is out after at least 1 missed probe"),
                ));
            }
            if m > MAX_PROBE_MISSES {
                return Err(p.err(
                    s,
                    format!("probe_misses is {m}: more than {MAX_PROBE_MISSES}"),
                ));
            }
            m as u32
        }
    };

    // Names: balancers, routers and the switch share one space.
    let mut names: HashMap<String, String> = HashMap::new();
    let mut claim = |s: &Spanned<String>, what: &str| -> Result<(), MultistageError> {
        let n = s.get_ref();
        if !valid_box_name(n) {
            return Err(p.err(
                s,
                format!(
                    "{what} name `{n}`: use a-z and 0-9, at most {MAX_BOX_NAME} characters \
                     (it is in namespace and interface names)"
                ),
            ));
        }
        if let Some(first) = names.insert(n.clone(), p.line(s)) {
            return Err(p.err(s, format!("name `{n}` is used twice (first at {first})")));
        }
        Ok(())
    };
    let switch = match &f.switch {
        Some(sw) => {
            claim(&sw.name, "switch")?;
            sw.name.get_ref().clone()
        }
        None => DEFAULT_SWITCH.to_string(),
    };

    // Balancers and their ports.
    if f.balancer.is_empty() {
        return Err(plain(
            "no [[balancer]]: a multistage router needs at least one balancer in front",
        ));
    }
    if f.balancer.len() > MAX_BALANCERS {
        return Err(p.err(
            &f.balancer[MAX_BALANCERS].name,
            format!(
                "{} balancers: at most {MAX_BALANCERS} (the balancer index is one byte of \
                 its back MACs)",
                f.balancer.len()
            ),
        ));
    }
    let mut balancers: Vec<Balancer> = Vec::with_capacity(f.balancer.len());
    let mut macs: HashMap<[u8; 6], String> = HashMap::new();
    let mut front_count = 0usize;
    // The line of each front port's address, by global index.
    let mut front_lines: Vec<String> = Vec::new();
    for fb in &f.balancer {
        claim(&fb.name, "balancer")?;
        let bname = fb.name.get_ref();
        if fb.front.is_empty() {
            return Err(p.err(
                &fb.name,
                format!("balancer {bname} has no [[balancer.front]] port"),
            ));
        }
        if fb.back.is_empty() {
            return Err(p.err(
                &fb.name,
                format!(
                    "balancer {bname} has no [[balancer.back]] port: it could not reach the \
                     switch"
                ),
            ));
        }
        if fb.back.len() > MAX_BACK_PORTS {
            return Err(p.err(
                &fb.name,
                format!(
                    "balancer {bname} has {} back ports; at most {MAX_BACK_PORTS}",
                    fb.back.len()
                ),
            ));
        }
        let mut ifaces: HashMap<String, String> = HashMap::new();
        let mut iface = |s: &Spanned<String>| -> Result<(), MultistageError> {
            check_iface(s.get_ref()).map_err(|e| p.err(s, format!("balancer {bname}: {e}")))?;
            if let Some(first) = ifaces.insert(s.get_ref().clone(), p.line(s)) {
                return Err(p.err(
                    s,
                    format!(
                        "balancer {bname} uses interface {} twice (first at {first})",
                        s.get_ref()
                    ),
                ));
            }
            Ok(())
        };
        let mut mac =
            |m: &Option<Spanned<String>>, port: &str| -> Result<Option<[u8; 6]>, MultistageError> {
                let Some(m) = m else {
                    return Ok(None);
                };
                let here = format!("{bname} {port}");
                let mac = parse_mac(m.get_ref()).map_err(|e| p.err(m, format!("{here}: {e}")))?;
                check_mac(&mac).map_err(|e| p.err(m, format!("{here}: {e}")))?;
                if let Some(first) = macs.insert(mac, format!("{here} ({})", p.line(m))) {
                    return Err(p.err(
                        m,
                        format!(
                            "MAC {} is given to both {first} and {here}",
                            format_mac(&mac)
                        ),
                    ));
                }
                Ok(Some(mac))
            };
        let mut fronts = Vec::with_capacity(fb.front.len());
        for ff in &fb.front {
            iface(&ff.iface)?;
            let ifname = ff.iface.get_ref();
            if front_count >= MAX_FRONT_PORTS {
                return Err(p.err(
                    &ff.iface,
                    format!(
                        "more than {MAX_FRONT_PORTS} front ports (the front port index is one \
                         byte of the routers' MACs)"
                    ),
                ));
            }
            let (address, prefix_len) = parse_prefix(ff.address.get_ref())
                .map_err(|e| p.err(&ff.address, format!("{bname} {ifname}: {e}")))?;
            check_front_address(address, prefix_len)
                .map_err(|e| p.err(&ff.address, format!("{bname} {ifname}: {e}")))?;
            front_lines.push(p.line(&ff.address));
            fronts.push(FrontPort {
                index: front_count as u8,
                iface: ifname.clone(),
                address,
                prefix_len,
                mac: mac(&ff.mac, ifname)?,
            });
            front_count += 1;
        }
        let mut backs = Vec::with_capacity(fb.back.len());
        for fk in &fb.back {
            iface(&fk.iface)?;
            backs.push(BackPort {
                iface: fk.iface.get_ref().clone(),
                mac: mac(&fk.mac, fk.iface.get_ref())?,
            });
        }
        balancers.push(Balancer {
            name: bname.clone(),
            fronts,
            backs,
        });
    }

    // Routers.
    if f.router.is_empty() {
        return Err(plain(
            "no [[router]]: a multistage router needs at least one router behind its balancers",
        ));
    }
    if f.router.len() > MAX_ROUTERS {
        return Err(p.err(
            &f.router[MAX_ROUTERS].name,
            format!(
                "{} routers: at most {MAX_ROUTERS} (the router index is one byte of its MACs)",
                f.router.len()
            ),
        ));
    }
    let mut routers = Vec::with_capacity(f.router.len());
    for fr in &f.router {
        claim(&fr.name, "router")?;
        let rname = fr.name.get_ref();
        check_iface(fr.iface.get_ref())
            .map_err(|e| p.err(&fr.iface, format!("router {rname}: {e}")))?;
        let lookup = match &fr.lookup {
            None => Lookup::Radix,
            Some(s) => Lookup::ALL
                .into_iter()
                .find(|l| l.class() == s.get_ref().trim())
                .ok_or_else(|| {
                    p.err(
                        s,
                        format!(
                            "router {rname}: lookup `{}`: expected one of {}",
                            s.get_ref(),
                            Lookup::ALL.map(|l| l.class()).join(", ")
                        ),
                    )
                })?,
        };
        routers.push(Router {
            name: rname.clone(),
            iface: fr.iface.get_ref().clone(),
            lookup,
        });
    }

    check_subnets(&balancers, &front_lines)?;

    // Routes.
    let mut texts: Vec<RouteText> = f
        .route
        .iter()
        .map(|r| RouteText {
            at: p.line(&r.prefix),
            prefix: r.prefix.get_ref().clone(),
            port: r.port.as_ref().map(|s| s.get_ref().clone()),
            gateway: r.gateway.as_ref().map(|g| g.get_ref().clone()),
        })
        .collect();
    if let Some(rf) = &f.routes_file {
        texts.extend(read_routes_file(dir, rf.get_ref()).map_err(|e| p.err(rf, e))?);
    }
    let routes = check_routes(&balancers, &texts)?;

    Ok(Multistage {
        name,
        policy,
        delta,
        mode,
        probe_interval,
        probe_misses,
        balancers,
        routers,
        switch,
        routes,
    })
}

/// `lb1:ext0`, how routes name a front port.
pub(crate) fn port_name(b: &Balancer, f: &FrontPort) -> String {
    format!("{}:{}", b.name, f.iface)
}

/// No two front ports in overlapping subnets: the routers could not tell
/// which port a destination is behind, nor answer ARP for the right one.
fn check_subnets(balancers: &[Balancer], lines: &[String]) -> Result<(), MultistageError> {
    // Each subnet as an address interval; sorted by start, an overlap is
    // a start at or before the largest end seen so far.
    let mut spans: Vec<(u32, u32, &Balancer, &FrontPort)> = Vec::new();
    for b in balancers {
        for f in &b.fronts {
            let start = u32::from(network(f.address, f.prefix_len));
            let end = u32::from(broadcast(f.address, f.prefix_len));
            spans.push((start, end, b, f));
        }
    }
    spans.sort_unstable_by_key(|&(s, e, _, f)| (s, std::cmp::Reverse(e), f.index));
    let mut widest: Option<(u32, &Balancer, &FrontPort)> = None;
    for &(start, end, b, f) in &spans {
        if let Some((max_end, pb, pf)) = widest {
            if start <= max_end {
                debug_assert!(overlap(pf.address, pf.prefix_len, f.address, f.prefix_len));
                return Err(plain(format!(
                    "{}: front ports {} {}/{} (at {}) and {} {}/{} have overlapping subnets: \
                     each front port needs a subnet of its own",
                    lines[usize::from(f.index)],
                    port_name(pb, pf),
                    pf.address,
                    pf.prefix_len,
                    lines[usize::from(pf.index)],
                    port_name(b, f),
                    f.address,
                    f.prefix_len
                )));
            }
        }
        if widest.is_none_or(|(max_end, _, _)| end > max_end) {
            widest = Some((end, b, f));
        }
    }
    Ok(())
}

/// Reads a routes file: `PREFIX/LEN PORT [GATEWAY]` or `PREFIX/LEN
/// GATEWAY` a line, `#` comments.
fn read_routes_file(dir: &Path, name: &str) -> Result<Vec<RouteText>, String> {
    let path = dir.join(name);
    let text = bricks_spec::read_limited(&path, name, MAX_ROUTES_FILE)
        .map_err(|e| format!("routes_file: {e}"))?;
    parse_routes(name, &text).map_err(|e| e.0)
}

/// Parses the text of a routes file called `name` (for messages).
fn parse_routes(name: &str, text: &str) -> Result<Vec<RouteText>, MultistageError> {
    let mut routes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = format!("{name} line {}", i + 1);
        let route = |port: Option<&str>, gateway: Option<&str>| RouteText {
            at: at.clone(),
            prefix: words[0].to_string(),
            port: port.map(str::to_string),
            gateway: gateway.map(str::to_string),
        };
        match words.as_slice() {
            [] => {}
            [_, second] if second.parse::<Ipv4Addr>().is_ok() => {
                routes.push(route(None, Some(second)))
            }
            [_, port] => routes.push(route(Some(port), None)),
            [_, port, gateway] => routes.push(route(Some(port), Some(gateway))),
            _ => {
                return Err(plain(format!(
                    "{at}: expected PREFIX/LEN PORT [GATEWAY] or PREFIX/LEN GATEWAY, e.g. \
                     \"10.9.0.0/16 lb1:ext0 10.0.0.254\", found {} word{}",
                    words.len(),
                    if words.len() == 1 { "" } else { "s" }
                )))
            }
        }
    }
    Ok(routes)
}

/// Checks the routes against the front ports and makes them [`Route`]s.
fn check_routes(
    balancers: &[Balancer],
    texts: &[RouteText],
) -> Result<Vec<Route>, MultistageError> {
    let fronts: Vec<(&Balancer, &FrontPort)> = balancers
        .iter()
        .flat_map(|b| b.fronts.iter().map(move |f| (b, f)))
        .collect();
    let port_list = || {
        fronts
            .iter()
            .map(|(b, f)| port_name(b, f))
            .collect::<Vec<_>>()
            .join(", ")
    };
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
        if let Some((b, f)) = fronts
            .iter()
            .find(|(_, f)| f.prefix_len == len && f.network() == prefix)
        {
            return Err(fail(format!(
                "it is front port {}'s subnet, which every router has already",
                port_name(b, f)
            )));
        }
        let named = match &r.port {
            None => None,
            Some(name) => {
                let Some((bname, iface)) = name.split_once(':') else {
                    return Err(fail(format!(
                        "port `{name}`: expected BALANCER:IFACE, e.g. {}",
                        port_name(fronts[0].0, fronts[0].1)
                    )));
                };
                let found = fronts
                    .iter()
                    .find(|(b, f)| b.name == bname && f.iface == iface)
                    .ok_or_else(|| {
                        fail(format!(
                            "no front port `{name}` (front ports: {})",
                            port_list()
                        ))
                    })?;
                Some(*found)
            }
        };
        let gateway = match &r.gateway {
            None => None,
            Some(g) => Some(
                g.trim()
                    .parse::<Ipv4Addr>()
                    .map_err(|_| fail(format!("gateway `{g}` is not an IPv4 address")))?,
            ),
        };
        let (b, f) = match (named, gateway) {
            (None, None) => {
                return Err(fail("a route needs a port, a gateway or both".to_string()))
            }
            (Some(bf), _) => bf,
            (None, Some(gw)) => *fronts
                .iter()
                .find(|(_, f)| contains(f.address, f.prefix_len, gw))
                .ok_or_else(|| {
                    fail(format!(
                        "gateway {gw} is off every front subnet: no router could reach it \
                         by ARP"
                    ))
                })?,
        };
        if let Some(gw) = gateway {
            if !contains(f.address, f.prefix_len, gw) {
                return Err(fail(format!(
                    "gateway {gw} is not on {}'s subnet {}/{}: it could not be reached by \
                     ARP",
                    port_name(b, f),
                    f.network(),
                    f.prefix_len
                )));
            }
            if gw == f.address {
                return Err(fail(format!(
                    "gateway {gw} is the router's own address on {}",
                    port_name(b, f)
                )));
            }
            if f.prefix_len <= 30 && (gw == f.network() || gw == broadcast(f.address, f.prefix_len))
            {
                return Err(fail(format!(
                    "gateway {gw} is the network or broadcast address of {}'s subnet",
                    port_name(b, f)
                )));
            }
        }
        routes.push(Route {
            prefix,
            len,
            port: f.index,
            gateway,
        });
    }
    Ok(routes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two balancers of one front port each, two routers.
    const TWO: &str = r#"name = "t"

[[balancer]]
name = "lb1"
  [[balancer.front]]
  iface = "ext0"
  address = "10.0.0.1/24"
  [[balancer.back]]
  iface = "back0"

[[balancer]]
name = "lb2"
  [[balancer.front]]
  iface = "ext0"
  address = "10.1.0.1/24"
  [[balancer.back]]
  iface = "back0"

[[router]]
name = "r1"
iface = "eth0"

[[router]]
name = "r2"
iface = "eth0"

[[route]]
prefix = "0.0.0.0/0"
gateway = "10.1.0.254"
"#;

    fn err(text: &str) -> String {
        match Multistage::from_toml(text) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e.0,
        }
    }

    /// The 1-based line of the first line of `TWO` containing `needle`
    /// (after `skip` earlier matches).
    fn line_of(text: &str, needle: &str, skip: usize) -> usize {
        text.lines()
            .enumerate()
            .filter(|(_, l)| l.contains(needle))
            .nth(skip)
            .map(|(i, _)| i + 1)
            .unwrap_or_else(|| panic!("{needle} not in the text"))
    }

    #[test]
    fn a_good_file_reads_with_its_defaults() {
        let m = Multistage::from_toml(TWO).unwrap();
        assert_eq!(m.name, "t");
        assert_eq!(m.policy, Policy::RoundRobin);
        assert_eq!(m.mode, Mode::Dtx);
        assert_eq!(m.delta, Duration::from_millis(50));
        assert_eq!(m.probe_interval, Duration::from_millis(50));
        assert_eq!(m.probe_misses, 3);
        assert_eq!(m.switch, "sw");
        assert_eq!(m.front_count(), 2);
        assert_eq!(m.balancers[1].fronts[0].index, 1);
        assert_eq!(m.routers[0].lookup, Lookup::Radix);
        // The gateway names the port: lb2's ext0, front port 1.
        assert_eq!(
            m.routes,
            vec![Route {
                prefix: Ipv4Addr::UNSPECIFIED,
                len: 0,
                port: 1,
                gateway: Some(Ipv4Addr::new(10, 1, 0, 254)),
            }]
        );
        let m = Multistage::from_toml(&TWO.replace(
            "name = \"t\"\n",
            "name = \"t\"\npolicy = \"flowlet\"\ndelta = \"20ms\"\nmode = \"odb\"\n\
             probe_interval = \"10ms\"\nprobe_misses = 5\n[switch]\nname = \"br0\"\n",
        ))
        .unwrap();
        assert_eq!(m.policy, Policy::Flowlet);
        assert_eq!(m.delta, Duration::from_millis(20));
        assert_eq!(m.mode, Mode::Odb);
        assert_eq!(m.router_timeout(), Duration::from_millis(50));
        assert_eq!(m.switch, "br0");
    }

    #[test]
    fn unknown_keys_and_bad_toml_are_refused_with_the_line() {
        let e = err(&TWO.replace("iface = \"eth0\"", "iface = \"eth0\"\nspeed = 10"));
        assert!(
            e.starts_with(&format!(
                "line {}, column 1: unknown field `speed`",
                line_of(TWO, "iface = \"eth0\"", 0) + 1
            )),
            "{e}"
        );
        assert!(err("name = [").starts_with("line 1"));
        assert!(err("").contains("missing field `name`"));
    }

    #[test]
    fn knobs_are_checked_with_the_line() {
        let with = |k: &str| TWO.replace("name = \"t\"\n", &format!("name = \"t\"\n{k}\n"));
        assert_eq!(
            err(&with("policy = \"random\"")),
            "line 2: policy `random`: expected rr, flow or flowlet"
        );
        assert!(err(&with("mode = \"dtx3\"")).starts_with("line 2: mode `dtx3`: expected dtx"));
        assert_eq!(
            err(&with("probe_interval = \"0ms\"")),
            "line 2: probe_interval is 0"
        );
        assert_eq!(
            err(&with("probe_interval = \"1h\"")),
            "line 2: probe_interval: duration `1h`: unknown unit `h` (use us, ms or s)"
        );
        assert_eq!(
            err(&with("probe_interval = \"11s\"")),
            "line 2: probe_interval is 11 s: more than 10 s"
        );
        assert!(err(&with("probe_interval = \"500us\""))
            .starts_with("line 2: probe_interval is 500 us: less than 1 ms"));
        assert_eq!(
            err(&with("probe_misses = 0")),
            "line 2: probe_misses is 0: a router is out after at least 1 missed probe"
        );
        assert_eq!(
            err(&with("probe_misses = 1000")),
            "line 2: probe_misses is 1000: more than 100"
        );
        assert_eq!(err(&with("delta = \"0s\"")), "line 2: delta is 0");
        assert_eq!(
            err(&with("delta = \"2s\"\ndelta = \"1s\""))
                .split(':')
                .next(),
            Some("line 3, column 1")
        );
        assert_eq!(
            err(&with("delta = \"61s\"")),
            "line 2: delta is 61 s: more than 60 s"
        );
    }

    #[test]
    fn names_are_checked_with_the_line() {
        assert!(
            err(&TWO.replace("name = \"t\"", "name = \"Too-Long-Name\""))
                .starts_with("line 1: name `Too-Long-Name`")
        );
        let e = err(&TWO.replace("name = \"r2\"", "name = \"lb1\""));
        assert_eq!(
            e,
            format!(
                "line {}: name `lb1` is used twice (first at line {})",
                line_of(TWO, "name = \"r2\"", 0),
                line_of(TWO, "name = \"lb1\"", 0)
            )
        );
        let e = err(&TWO.replace("name = \"r2\"", "name = \"router2\""));
        assert!(
            e.contains("router name `router2`: use a-z and 0-9, at most 6"),
            "{e}"
        );
        let e = err(&format!("{TWO}[switch]\nname = \"r1\"\n"));
        assert!(e.contains("name `r1` is used twice"), "{e}");
        let e = err(&format!("{TWO}[switch]\nname = \"S\"\n"));
        assert!(e.contains("switch name `S`"), "{e}");
    }

    #[test]
    fn stages_must_not_be_empty() {
        let no_routers: String = TWO.split("[[router]]").next().unwrap().to_string();
        assert!(err(&no_routers).starts_with("no [[router]]"));
        assert!(
            err("name = \"t\"\n[[router]]\nname = \"r\"\niface = \"e\"\n")
                .starts_with("no [[balancer]]")
        );
        let e = err(&TWO.replacen("  [[balancer.back]]\n  iface = \"back0\"\n", "", 1));
        assert_eq!(
            e,
            format!(
                "line {}: balancer lb1 has no [[balancer.back]] port: it could not reach the switch",
                line_of(TWO, "name = \"lb1\"", 0)
            )
        );
        let e = err(&TWO.replacen(
            "  [[balancer.front]]\n  iface = \"ext0\"\n  address = \"10.1.0.1/24\"\n",
            "",
            1,
        ));
        assert_eq!(
            e,
            format!(
                "line {}: balancer lb2 has no [[balancer.front]] port",
                line_of(TWO, "name = \"lb2\"", 0)
            )
        );
    }

    #[test]
    fn too_many_routers_or_front_ports_are_refused() {
        let head = TWO.split("[[router]]").next().unwrap().to_string();
        let routers = |n: usize| -> String {
            (0..n)
                .map(|i| format!("[[router]]\nname = \"r{i}\"\niface = \"eth0\"\n"))
                .collect()
        };
        assert!(Multistage::from_toml(&format!("{head}{}", routers(255))).is_ok());
        let text = format!("{head}{}", routers(256));
        let e = err(&text);
        assert_eq!(
            e,
            format!(
                "line {}: 256 routers: at most 255 (the router index is one byte of its MACs)",
                line_of(&text, "name = \"r255\"", 0)
            )
        );
        let fronts = |n: usize| -> String {
            (0..n)
                .map(|i| {
                    format!(
                        "  [[balancer.front]]\n  iface = \"e{i}\"\n  address = \"10.{}.{}.1/24\"\n",
                        100 + i / 256,
                        i % 256
                    )
                })
                .collect()
        };
        let many = |n: usize| {
            TWO.replace(
                "  [[balancer.front]]\n  iface = \"ext0\"\n  address = \"10.1.0.1/24\"\n",
                &fronts(n),
            )
            .replace("10.1.0.254", "10.0.0.254")
        };
        assert!(Multistage::from_toml(&many(254)).is_ok());
        let text = many(255);
        assert_eq!(
            err(&text),
            format!(
                "line {}: more than 255 front ports (the front port index is one byte of the \
                 routers' MACs)",
                line_of(&text, "iface = \"e254\"", 0)
            )
        );
    }

    #[test]
    fn interfaces_are_checked_with_the_line() {
        let e = err(&TWO.replacen("iface = \"back0\"", "iface = \"ext0\"", 1));
        assert_eq!(
            e,
            format!(
                "line {}: balancer lb1 uses interface ext0 twice (first at line {})",
                line_of(TWO, "iface = \"back0\"", 0),
                line_of(TWO, "iface = \"ext0\"", 0)
            )
        );
        let e = err(&TWO.replacen("\"eth0\"", "\"a-very-long-name0\"", 1));
        assert!(
            e.contains("router r1: interface name `a-very-long-name0` is 17 bytes"),
            "{e}"
        );
        let e = err(&TWO.replacen("\"ext0\"", "\"ext 0\"", 1));
        assert!(e.contains("balancer lb1: interface name `ext 0`"), "{e}");
        // The same name on two boxes is fine.
        assert!(Multistage::from_toml(TWO).is_ok());
    }

    #[test]
    fn macs_are_checked_with_the_line() {
        let with = |a: &str, b: &str| {
            TWO.replacen(
                "address = \"10.0.0.1/24\"",
                &format!("address = \"10.0.0.1/24\"\n  mac = \"{a}\""),
                1,
            )
            .replacen(
                "iface = \"back0\"",
                &format!("iface = \"back0\"\n  mac = \"{b}\""),
                1,
            )
        };
        let m = Multistage::from_toml(&with("02:00:00:00:00:10", "02:00:00:00:01:00")).unwrap();
        assert_eq!(m.balancers[0].fronts[0].mac, Some([2, 0, 0, 0, 0, 0x10]));
        assert_eq!(m.back_port_mac(0, 0), [2, 0, 0, 0, 1, 0]);
        assert_eq!(m.back_port_mac(1, 0), [2, 0x4d, 0x42, 1, 0, 0]);
        let text = with("02:00:00:00:00:10", "02:00:00:00:00:10");
        assert_eq!(
            err(&text),
            format!(
                "line {}: MAC 02:00:00:00:00:10 is given to both lb1 ext0 (line {}) and lb1 back0",
                line_of(&text, "mac", 1),
                line_of(&text, "mac", 0)
            )
        );
        let e = err(&with("02:4d:53:00:00:00", "02:00:00:00:01:00"));
        assert!(
            e.contains("lb1 ext0: MAC 02:4d:53:00:00:00 has the form of the internal MACs"),
            "{e}"
        );
        let e = err(&with("02:00:00:00:00:10", "02:4d:42:07:00:00"));
        assert!(e.contains("has the form of the internal MACs"), "{e}");
        assert!(err(&with("01:00:5e:00:00:01", "02:00:00:00:01:00")).contains("multicast"));
        assert!(err(&with("00:00:00:00:00:00", "02:00:00:00:01:00")).contains("not an interface's"));
        assert!(err(&with("02:00:00:00:00", "02:00:00:00:01:00")).contains("not a MAC"));
    }

    #[test]
    fn front_addresses_and_subnets_are_checked() {
        let at = line_of(TWO, "10.0.0.1/24", 0);
        let e = err(&TWO.replace("10.0.0.1/24", "10.0.0.0/24"));
        assert!(
            e.starts_with(&format!(
                "line {at}: lb1 ext0: 10.0.0.0/24 is the network address"
            )),
            "{e}"
        );
        assert!(err(&TWO.replace("10.0.0.1/24", "10.0.0.255/24")).contains("broadcast address"));
        assert!(err(&TWO.replace("10.0.0.1/24", "10.0.0.1")).contains("no prefix length"));
        assert!(err(&TWO.replace("10.0.0.1/24", "10.0.0.1/32")).contains("room for a host"));
        assert!(err(&TWO.replace("10.0.0.1/24", "224.0.0.1/24")).contains("not a unicast"));
        // /31: point to point, no network or broadcast address.
        assert!(Multistage::from_toml(&TWO.replace("10.0.0.1/24", "10.0.0.0/31")).is_ok());
        let e = err(&TWO.replace("10.1.0.1/24", "10.0.0.2/24"));
        assert_eq!(
            e,
            format!(
                "line {}: front ports lb1:ext0 10.0.0.1/24 (at line {at}) and lb2:ext0 \
                 10.0.0.2/24 have overlapping subnets: each front port needs a subnet of its \
                 own",
                line_of(TWO, "10.1.0.1/24", 0)
            )
        );
        let e = err(&TWO
            .replace("10.1.0.1/24", "10.0.0.1/8")
            .replace("10.1.0.254", "10.0.0.254"));
        // The wider subnet is named first; the line is the later port's.
        assert_eq!(
            e,
            format!(
                "line {at}: front ports lb2:ext0 10.0.0.1/8 (at line {}) and lb1:ext0 \
                 10.0.0.1/24 have overlapping subnets: each front port needs a subnet of its \
                 own",
                line_of(TWO, "10.1.0.1/24", 0)
            )
        );
    }

    #[test]
    fn routes_are_checked_with_the_line() {
        let at = line_of(TWO, "prefix = \"0.0.0.0/0\"", 0);
        let with = |route: &str| format!("{TWO}\n[[route]]\n{route}\n");
        let line = at + 4;
        let m = Multistage::from_toml(&with("prefix = \"192.168.0.0/16\"\nport = \"lb1:ext0\""))
            .unwrap();
        assert_eq!(m.routes[1].port, 0);
        assert_eq!(m.routes[1].gateway, None);
        let m = Multistage::from_toml(&with(
            "prefix = \"192.168.0.0/16\"\nport = \"lb1:ext0\"\ngateway = \"10.0.0.9\"",
        ))
        .unwrap();
        assert_eq!(m.routes[1].gateway, Some(Ipv4Addr::new(10, 0, 0, 9)));
        assert_eq!(
            err(&with("prefix = \"192.168.0.0/16\"\nport = \"lb3:ext0\"")),
            format!(
                "line {line}: route 192.168.0.0/16: no front port `lb3:ext0` (front ports: \
                 lb1:ext0, lb2:ext0)"
            )
        );
        assert!(err(&with("prefix = \"192.168.0.0/16\"\nport = \"ext0\""))
            .contains("expected BALANCER:IFACE, e.g. lb1:ext0"));
        assert_eq!(
            err(&with(
                "prefix = \"192.168.0.0/16\"\ngateway = \"172.16.0.1\""
            )),
            format!(
                "line {line}: route 192.168.0.0/16: gateway 172.16.0.1 is off every front \
                 subnet: no router could reach it by ARP"
            )
        );
        assert!(err(&with(
            "prefix = \"192.168.0.0/16\"\nport = \"lb1:ext0\"\ngateway = \"10.1.0.9\""
        ))
        .contains("gateway 10.1.0.9 is not on lb1:ext0's subnet 10.0.0.0/24"));
        assert!(
            err(&with("prefix = \"192.168.0.0/16\"\ngateway = \"10.0.0.1\""))
                .contains("the router's own address on lb1:ext0")
        );
        assert!(err(&with(
            "prefix = \"192.168.0.0/16\"\ngateway = \"10.0.0.255\""
        ))
        .contains("network or broadcast"));
        assert!(err(&with("prefix = \"192.168.0.0/16\"\ngateway = \"x\""))
            .contains("gateway `x` is not an IPv4 address"));
        assert_eq!(
            err(&with("prefix = \"192.168.0.0/16\"")),
            format!("line {line}: route 192.168.0.0/16: a route needs a port, a gateway or both")
        );
        assert_eq!(
            err(&with("prefix = \"192.168.0.1/16\"\nport = \"lb1:ext0\"")),
            format!("line {line}: route 192.168.0.1/16: host bits are set; did you mean 192.168.0.0/16?")
        );
        assert_eq!(
            err(&with("prefix = \"0.0.0.0/0\"\nport = \"lb1:ext0\"")),
            format!("line {line}: route 0.0.0.0/0: the prefix is given twice (first at line {at})")
        );
        assert_eq!(
            err(&with("prefix = \"10.1.0.0/24\"\nport = \"lb2:ext0\"")),
            format!(
                "line {line}: route 10.1.0.0/24: it is front port lb2:ext0's subnet, which \
                 every router has already"
            )
        );
    }

    #[test]
    fn routes_files_are_read_and_checked() {
        let r = parse_routes(
            "t.routes",
            "# comment\n10.9.0.0/16 lb1:ext0 10.0.0.254  # via\n\n172.16.0.0/12 10.1.0.9\n\
             192.168.0.0/16 lb2:ext0\n",
        )
        .unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].at, "t.routes line 2");
        assert_eq!(r[1].port, None);
        assert_eq!(r[1].gateway.as_deref(), Some("10.1.0.9"));
        assert_eq!(r[2].port.as_deref(), Some("lb2:ext0"));
        let e = parse_routes("t.routes", "10.9.0.0/16\n").err().unwrap();
        assert!(
            e.0.starts_with("t.routes line 1: expected PREFIX/LEN PORT"),
            "{e}"
        );

        let dir = std::env::temp_dir().join(format!("bricks-ms-routes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("t.routes"),
            "10.9.0.0/16 10.0.0.254\n10.9.0.0/16 lb2:ext0\n",
        )
        .unwrap();
        let text = TWO.replace(
            "name = \"t\"\n",
            "name = \"t\"\nroutes_file = \"t.routes\"\n",
        );
        let e = Multistage::from_toml_in(&text, &dir).err().unwrap().0;
        assert_eq!(
            e,
            "t.routes line 2: route 10.9.0.0/16: the prefix is given twice (first at t.routes line 1)"
        );
        std::fs::write(dir.join("t.routes"), "10.9.0.0/16 10.0.0.254\n").unwrap();
        let m = Multistage::from_toml_in(&text, &dir).unwrap();
        assert_eq!(m.routes.len(), 2);
        assert_eq!(m.routes[1].port, 0);
        let e = Multistage::from_toml_in(&text.replace("t.routes", "none.routes"), &dir)
            .err()
            .unwrap()
            .0;
        assert!(
            e.starts_with("line 2: routes_file: cannot read none.routes"),
            "{e}"
        );
        let e = Multistage::from_toml_in(&text.replace("t.routes", "."), &dir)
            .err()
            .unwrap()
            .0;
        assert!(e.contains("is not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn lookups_are_checked() {
        let m = Multistage::from_toml(&TWO.replacen(
            "iface = \"eth0\"",
            "iface = \"eth0\"\nlookup = \"DirectIPLookup\"",
            1,
        ))
        .unwrap();
        assert_eq!(m.routers[0].lookup, Lookup::Direct);
        let e = err(&TWO.replacen(
            "iface = \"eth0\"",
            "iface = \"eth0\"\nlookup = \"Dir24\"",
            1,
        ));
        assert!(e.contains("router r1: lookup `Dir24`: expected one of DirectIPLookup, RadixIPLookup, StaticIPLookup, LookupIPRoute"), "{e}");
    }

    #[test]
    fn never_panics_on_bad_values() {
        for text in [
            "",
            "name = 1",
            "[[balancer]]",
            "name = \"x\"\nprobe_misses = -99999999999\n",
            "name = \"x\"\nprobe_interval = \"99999999999999999999s\"\n",
            "name = \"é\"",
            "name = \"x\"\n[[balancer]]\nname = \"a\"\n[[balancer.front]]\niface = \"e\"\naddress = \"255.255.255.255/0\"\n",
        ] {
            assert!(Multistage::from_toml(text).is_err(), "{text}");
        }
    }
}
