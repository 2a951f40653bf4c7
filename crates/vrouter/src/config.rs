//! The Click configuration a box of virtual routers runs (Egi et al.,
//! CoNEXT 2008, §3.1's common forwarding plane with §3.2's software
//! demultiplexing): one compound element per router, whose elements are
//! named `ROUTER/...`, and per link the elements that share it, named
//! `LINK/...`.
//!
//! ```text
//!  FromDevice ─ VRDemux ─┬ tag off (VLANDecap, MPLSPop, decap) ─ [i]red ─┐
//!   (link)     by tag    └ ...                               ─ [j]blue ─┤
//!                                                                        │
//!  red[i] ─ tag on (VLANEncap, MPLSPush, IPEncap + ARP) ─ Queue ─┐       │
//!  blue[j] ─ ...                                         ─ Queue ─┴ StrideSched ─ ToDevice
//! ```
//!
//! Each router is the IP router of conf/ip-router.click with its own
//! addresses: per interface an ARPResponder and an ARPQuerier (the link's
//! MAC, or the interface's own on a MAC-demultiplexed link), CheckIPHeader
//! over its interfaces, its own route table `ROUTER/rt` (write handlers
//! `add`, `set`, `remove`), DecIPTTL, IPGWOptions, FixIPSrc and
//! IPFragmenter per output with their ICMP errors from the router's own
//! address, and ICMPPingResponder for its addresses. Its compound input
//! and output i are its interface i: Ethernet frames without the link's
//! tag, or inner IPv4 packets for a tunnel. So routers never see each
//! other's packets, and two routers may use the same addresses.
//!
//! The sharing belongs to the box, outside the routers: each router has
//! its own Queue on each link it sends on, and the link's scheduler pulls
//! from them in proportion to the routers' weights (`StrideSched` tickets,
//! or `DRRSched` quanta of weight x one full frame). With `queueing =
//! "per-router"` each router interface also gets an input Queue drained by
//! an Unqueue whose `ScheduleInfo` tickets are its router's weight, so the
//! CPU is shared by weight too (the paper's Fig. 15(b)); `direct`, the
//! default, pushes from the demultiplexer straight into the router (Fig.
//! 15(a)): one core handles a packet from wire to wire without a queue in
//! between, which is what bricks' run-to-completion engine is fastest at,
//! and the paper found re-queueing in software only a partial fix (the
//! packets it drops have already cost their memory accesses).
//!
//! Variables (`-D NAME=VALUE` on `bricks run`): `BACKEND` (auto, xdp or
//! packet) and `MAC_<link>` for every link whose MAC the file does not give
//! (a placeholder until then) and whose routers use the link's MAC.

use crate::file::link_element_name;
use crate::model::{Broadcast, Demux, Local, Queueing, Router, Scheduler, Tag, VirtualRouters};
use crate::net::{broadcast, format_mac, network};
use std::fmt::Write as _;
use std::path::Path;

/// Capacity of every queue the configuration declares.
pub const QUEUE_CAPACITY: usize = 1024;

/// What the configuration needs besides the routers.
#[derive(Debug, Clone)]
pub struct ConfigOptions {
    /// The virtual-router file as the user named it (for the header).
    pub source: String,
    /// The configuration's file name in the run command of the header.
    pub output: String,
    /// Default device backend: auto, xdp or packet.
    pub backend: String,
    /// Directory of the per-router control sockets in the run command.
    pub socket_dir: String,
}

impl Default for ConfigOptions {
    fn default() -> Self {
        ConfigOptions {
            source: "vr.toml".into(),
            output: "vr.click".into(),
            backend: "auto".into(),
            socket_dir: "/run/bricks".into(),
        }
    }
}

/// Click's string quoting.
fn quoted(s: &str) -> String {
    let mut q = String::from("\"");
    for c in s.chars() {
        if c == '"' || c == '\\' {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    q
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Weights divided by their greatest common divisor (2, 4 -> 1, 2).
fn reduced(weights: &[u32]) -> Vec<u32> {
    let g = weights.iter().copied().fold(0, gcd).max(1);
    weights.iter().map(|w| w / g).collect()
}

/// The `$MAC_...` variable of a link.
fn mac_var(vr: &VirtualRouters, link: usize) -> String {
    format!("MAC_{}", link_element_name(&vr.links[link].name))
}

/// The MAC a router interface answers ARP with and sends from.
fn interface_mac(vr: &VirtualRouters, router: usize, itf: usize) -> String {
    let i = &vr.routers[router].interfaces[itf];
    match i.tag {
        Tag::Mac(m) => format_mac(&m),
        _ => format!("${}", mac_var(vr, i.link)),
    }
}

/// The whole configuration.
pub fn config(vr: &VirtualRouters, options: &ConfigOptions) -> String {
    let mut s = String::new();
    header(&mut s, vr, options);
    for r in 0..vr.routers.len() {
        router(&mut s, vr, r);
    }
    for l in 0..vr.links.len() {
        link(&mut s, vr, l);
    }
    if vr.queueing == Queueing::PerRouter {
        schedule_info(&mut s, vr);
    }
    s
}

fn header(w: &mut String, vr: &VirtualRouters, o: &ConfigOptions) {
    let routers: Vec<String> = vr
        .routers
        .iter()
        .map(|r| format!("{} (weight {})", r.name, r.weight))
        .collect();
    let links: Vec<String> = vr
        .links
        .iter()
        .map(|l| format!("{} ({})", l.name, l.demux.word()))
        .collect();
    let _ = writeln!(
        w,
        "// {} virtual router{} on one box: {}.",
        vr.routers.len(),
        if vr.routers.len() == 1 { "" } else { "s" },
        routers.join(", ")
    );
    let _ = writeln!(w, "// Links: {}.", links.join(", "));
    let _ = writeln!(
        w,
        "// Generated by `bricks vr config {}`; edit freely.",
        o.source
    );
    let _ = writeln!(w, "//");
    let _ = writeln!(
        w,
        "// Run it with one control socket per router (each reads and writes only"
    );
    let _ = writeln!(w, "// its own router's elements, ROUTER/...):");
    let _ = writeln!(w, "//");
    let _ = write!(w, "//   bricks run {}", o.output);
    for r in &vr.routers {
        let _ = write!(
            w,
            " \\\n//       --router-control {}={}/{}.sock",
            r.name,
            o.socket_dir.trim_end_matches('/'),
            r.name
        );
    }
    let missing: Vec<String> = (0..vr.links.len())
        .filter(|&l| uses_link_mac(vr, l) && vr.links[l].mac.is_none())
        .map(|l| format!("-D {}=<{}'s MAC>", mac_var(vr, l), vr.links[l].name))
        .collect();
    for m in &missing {
        let _ = write!(w, " \\\n//       {m}");
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "//");
    let _ = writeln!(
        w,
        "// Router ROUTER is the compound element ROUTER (route table ROUTER/rt, with"
    );
    let _ = writeln!(
        w,
        "// write handlers add, set and remove); link LINK's elements are LINK/...:"
    );
    let _ = writeln!(
        w,
        "// the VRDemux that hands each frame to its router by tag, the tags taken off"
    );
    let _ = writeln!(
        w,
        "// and put back, a Queue per router and the scheduler sharing the link by"
    );
    let _ = writeln!(w, "// weight.");
    match vr.queueing {
        Queueing::Direct => {
            let _ = writeln!(
                w,
                "// Queueing \"direct\" (Egi et al. Fig. 15(a)): the demultiplexer pushes each"
            );
            let _ = writeln!(
                w,
                "// packet straight into its router; weights share each link's output."
            );
        }
        Queueing::PerRouter => {
            let _ = writeln!(
                w,
                "// Queueing \"per-router\" (Egi et al. Fig. 15(b)): each router interface has"
            );
            let _ = writeln!(
                w,
                "// an input Queue drained by an Unqueue with its router's weight in tickets"
            );
            let _ = writeln!(
                w,
                "// (ScheduleInfo at the end); weights share each link's output too."
            );
        }
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "define(");
    let _ = writeln!(w, "    $BACKEND {},", o.backend);
    for l in 0..vr.links.len() {
        if !uses_link_mac(vr, l) {
            continue;
        }
        let link = &vr.links[l];
        match link.mac {
            Some(m) => {
                let _ = writeln!(w, "    ${} {},", mac_var(vr, l), format_mac(&m));
            }
            None => {
                let _ = writeln!(
                    w,
                    "    ${} {},  // a placeholder: give {}'s MAC with -D {}=...",
                    mac_var(vr, l),
                    format_mac(&VirtualRouters::placeholder_mac(l)),
                    link.name,
                    mac_var(vr, l)
                );
            }
        }
    }
    let _ = writeln!(w, ");");
    let _ = writeln!(w);
}

/// Whether anything on link `l` sends from the link's own MAC (all but
/// MAC-demultiplexed links, whose interfaces have MACs of their own).
fn uses_link_mac(vr: &VirtualRouters, l: usize) -> bool {
    vr.links[l].demux != Demux::Mac
}

fn rule(w: &mut String) {
    let _ = writeln!(
        w,
        "// ---------------------------------------------------------------------"
    );
}

/// A router interface in words: `eth0 (link eth0, vlan 10) 10.0.0.1/24`.
fn interface_text(vr: &VirtualRouters, r: &Router, i: usize) -> String {
    let itf = &r.interfaces[i];
    format!(
        "{} (link {}, {}) {}/{}",
        itf.name,
        vr.links[itf.link].name,
        itf.tag.text(),
        itf.address,
        itf.prefix_len
    )
}

fn router(w: &mut String, vr: &VirtualRouters, ri: usize) {
    let r = &vr.routers[ri];
    rule(w);
    let _ = writeln!(
        w,
        "// Router {} (weight {}): {}, {} interface{}.",
        r.name,
        r.weight,
        r.lookup.class(),
        r.interfaces.len(),
        if r.interfaces.len() == 1 { "" } else { "s" }
    );
    for i in 0..r.interfaces.len() {
        let _ = writeln!(
            w,
            "//   input/output {i}, rt output {}: {}",
            i + 1,
            interface_text(vr, r, i)
        );
    }
    let _ = writeln!(w);
    let _ = writeln!(w, "elementclass VRouter_{} {{", r.name);

    // The route table.
    let _ = writeln!(
        w,
        "    // The route table: output 0 is local delivery, output i + 1 leaves by"
    );
    let _ = writeln!(
        w,
        "    // interface i. Change it while running: write {}/rt.add, .set, .remove.",
        r.name
    );
    let _ = writeln!(w, "    rt :: {}(", r.lookup.class());
    let _ = writeln!(
        w,
        "        // The router's own addresses, its subnets' network and broadcast"
    );
    let _ = writeln!(
        w,
        "        // addresses, the limited broadcast, local network control multicast."
    );
    for itf in &r.interfaces {
        let _ = writeln!(w, "        {}/32 0,", itf.address);
        if itf.prefix_len < 31 {
            let _ = writeln!(
                w,
                "        {}/32 0,",
                broadcast(itf.address, itf.prefix_len)
            );
            let _ = writeln!(w, "        {}/32 0,", network(itf.address, itf.prefix_len));
        }
    }
    let _ = writeln!(w, "        255.255.255.255/32 0,");
    let _ = writeln!(w, "        224.0.0.0/24 0,");
    let _ = writeln!(w, "        0.0.0.0/32 0,");
    let _ = writeln!(w, "        // Connected subnets.");
    for (i, itf) in r.interfaces.iter().enumerate() {
        if itf.prefix_len < 32 {
            let _ = writeln!(
                w,
                "        {}/{} {},",
                network(itf.address, itf.prefix_len),
                itf.prefix_len,
                i + 1
            );
        }
    }
    if !r.routes.is_empty() {
        let _ = writeln!(w, "        // Routes of the file.");
    }
    for route in &r.routes {
        let gw = route.gateway.map(|g| format!(" {g}")).unwrap_or_default();
        let _ = writeln!(
            w,
            "        {}/{}{gw} {},",
            route.prefix,
            route.len,
            route.interface + 1
        );
    }
    if let Some(path) = &r.routes_file {
        let _ = writeln!(
            w,
            "        ROUTES {},",
            quoted(&crate::file::absolute(path).display().to_string())
        );
    }
    let _ = writeln!(w, "    );");
    let interfaces: Vec<String> = r
        .interfaces
        .iter()
        .map(|i| format!("{}/{}", i.address, i.prefix_len))
        .collect();
    let _ = writeln!(
        w,
        "    // The IP input path (RFC 1812 section 5.2.2, martians section 5.3.7)."
    );
    let _ = writeln!(
        w,
        "    ip :: CheckIPHeader(INTERFACES {}, MARTIANS true) -> GetIPAddress(16) -> rt;",
        interfaces.join(" ")
    );
    let _ = writeln!(
        w,
        "    // Local delivery: pings answered, the rest {}.",
        match r.local {
            Local::Discard => "counted and dropped",
            Local::Host => "to the host",
        }
    );
    let _ = writeln!(w, "    rt[0] -> ping :: ICMPPingResponder -> rt;");
    match r.local {
        Local::Discard => {
            let _ = writeln!(w, "    ping[1] -> local :: Discard;");
        }
        Local::Host => {
            let _ = writeln!(
                w,
                "    ping[1] -> EtherEncap(0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2) -> local :: ToHost(host_{});",
                r.name
            );
        }
    }

    for (i, itf) in r.interfaces.iter().enumerate() {
        let a = itf.address;
        let _ = writeln!(w);
        let _ = writeln!(w, "    // Interface {i}: {}.", interface_text(vr, r, i));
        let tunnel = matches!(itf.tag, Tag::Tunnel { .. });
        if tunnel {
            let _ = writeln!(
                w,
                "    // A point-to-point tunnel: inner IPv4 packets in and out, no ARP."
            );
            let _ = writeln!(w, "    input[{i}] -> ip;");
        } else {
            let mac = interface_mac(vr, ri, i);
            let _ = writeln!(
                w,
                "    input[{i}] -> c{i} :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);"
            );
            let _ = writeln!(
                w,
                "    c{i}[0] -> ar{i} :: ARPResponder({a} {mac}) -> [{i}]output;"
            );
            let _ = writeln!(
                w,
                "    arpq{i} :: ARPQuerier({a}/{}, {mac}) -> [{i}]output;",
                itf.prefix_len
            );
            let _ = writeln!(w, "    c{i}[1] -> [1]arpq{i};");
            let _ = writeln!(w, "    c{i}[2] -> Strip(14) -> ip;");
            let _ = writeln!(w, "    c{i}[3] -> other{i} :: Discard;");
        }
        let _ = writeln!(w, "    rt[{}] -> DropBroadcasts", i + 1);
        let _ = writeln!(w, "        -> gio{i} :: IPGWOptions({a})");
        let _ = writeln!(w, "        -> FixIPSrc({a})");
        let _ = writeln!(w, "        -> dt{i} :: DecIPTTL");
        let _ = writeln!(
            w,
            "        -> fr{i} :: IPFragmenter({})",
            vr.interface_mtu(itf)
        );
        if tunnel {
            let _ = writeln!(w, "        -> [{i}]output;");
        } else {
            let _ = writeln!(w, "        -> [0]arpq{i};");
        }
        let _ = writeln!(w, "    dt{i}[1] -> ICMPError({a}, timeexceeded) -> rt;");
        let _ = writeln!(
            w,
            "    fr{i}[1] -> ICMPError({a}, unreachable, needfrag) -> rt;"
        );
        let _ = writeln!(
            w,
            "    gio{i}[1] -> ICMPError({a}, parameterproblem) -> rt;"
        );
    }
    let _ = writeln!(w, "}}");
    let _ = writeln!(w, "{} :: VRouter_{};", r.name, r.name);
    let _ = writeln!(w);
}

/// The element that takes the tag off what demultiplexer output `o`
/// (router `r`'s interface `i`) hands on, or `None` when nothing does.
fn tag_off(vr: &VirtualRouters, l: usize, o: usize, r: usize, i: usize) -> Option<String> {
    let link = &vr.links[l];
    let name = link_element_name(&link.name);
    let itf = &vr.routers[r].interfaces[i];
    match itf.tag {
        Tag::Vlan(_) => Some(format!("{name}/untag{o} :: VLANDecap")),
        Tag::Mac(_) => None,
        Tag::Mpls { .. } => Some(format!("{name}/pop{o} :: MPLSPop")),
        Tag::Tunnel { remote, .. } => {
            let (ul, len) = link.underlay.expect("ipip links have an underlay");
            Some(format!(
                "{name}/decap{o} :: Strip(14)\n    -> {name}/outer{o} :: CheckIPHeader(INTERFACES {ul}/{len}, MARTIANS true)\n    -> {name}/from{o} :: IPClassifier(src host {remote}, -)\n    -> {name}/inner{o} :: StripIPHeader"
            ))
        }
    }
}

fn link(w: &mut String, vr: &VirtualRouters, l: usize) {
    let link = &vr.links[l];
    let n = link_element_name(&link.name);
    let dev = &link.name;
    let itfs = vr.link_interfaces(l);
    let routers = vr.link_routers(l);
    rule(w);
    let kind = match link.demux {
        Demux::Vlan => "a VLAN trunk (802.1Q), routers told apart by VLAN ID".to_string(),
        Demux::Mac => "shared by MAC: each router interface has a MAC of its own".to_string(),
        Demux::Mpls => "MPLS, routers told apart by their incoming label".to_string(),
        Demux::Ipip => {
            let (a, len) = link.underlay.expect("ipip links have an underlay");
            format!(
                "IP-in-IP tunnels over the underlay {a}/{len}, routers told apart by the \
                 outer destination"
            )
        }
    };
    let _ = writeln!(w, "// Link {dev}: {kind}; MTU {}.", link.mtu);
    for (o, &(r, i)) in itfs.iter().enumerate() {
        let _ = writeln!(
            w,
            "//   demux output {o}: router {} interface {i}, {}",
            vr.routers[r].name,
            interface_text(vr, &vr.routers[r], i)
        );
    }
    let _ = writeln!(w);

    // Input: the device, the demultiplexer, the tags taken off.
    let promisc = if link.demux == Demux::Mac {
        ", PROMISC true"
    } else {
        ""
    };
    let _ = writeln!(w, "{n}/in :: FromDevice({dev}, BACKEND $BACKEND{promisc});");
    let mut args: Vec<String> = vec![format!("BY {}", link.demux.word())];
    for (o, &(r, i)) in itfs.iter().enumerate() {
        let tag = match vr.routers[r].interfaces[i].tag {
            Tag::Vlan(v) => v.to_string(),
            Tag::Mac(m) => format_mac(&m),
            Tag::Mpls { incoming, .. } => incoming.to_string(),
            Tag::Tunnel { local, .. } => local.to_string(),
        };
        args.push(format!("{tag} {o}"));
    }
    let notag = matches!(link.demux, Demux::Mpls | Demux::Ipip).then_some(itfs.len());
    if let Some(k) = notag {
        args.push(format!("NOTAG {k}"));
    }
    if link.demux == Demux::Mac {
        let b = match link.broadcast {
            Broadcast::Replicate => "replicate".to_string(),
            Broadcast::Drop => "drop".to_string(),
            Broadcast::Router(r) => itfs
                .iter()
                .position(|&(x, _)| x == r)
                .expect("the broadcast router is on the link")
                .to_string(),
        };
        args.push(format!("BROADCAST {b}"));
    }
    let _ = writeln!(w, "{n}/demux :: VRDemux({});", args.join(", "));
    let _ = writeln!(w, "{n}/in -> {n}/demux;");
    for (o, &(r, i)) in itfs.iter().enumerate() {
        let rname = &vr.routers[r].name;
        let mut chain = format!("{n}/demux[{o}]");
        if let Some(t) = tag_off(vr, l, o, r, i) {
            chain.push_str(&format!("\n    -> {t}"));
        }
        if vr.queueing == Queueing::PerRouter {
            chain.push_str(&format!(
                "\n    -> {n}/inq{o} :: Queue({QUEUE_CAPACITY}) -> {n}/unq{o} :: Unqueue"
            ));
        }
        let _ = writeln!(w, "{chain}\n    -> [{i}]{rname};");
        if matches!(vr.routers[r].interfaces[i].tag, Tag::Tunnel { .. }) {
            let _ = writeln!(w, "{n}/from{o}[1] -> {n}/stranger{o} :: Discard;");
        }
    }

    // Frames without a tag: ARP on MPLS and IP-in-IP links.
    if let Some(k) = notag {
        let _ = writeln!(
            w,
            "{n}/demux[{k}] -> {n}/arp :: Classifier(12/0806 20/0001, 12/0806 20/0002, -);"
        );
        let _ = writeln!(w, "{n}/arp[2] -> {n}/other :: Discard;");
        if link.demux == Demux::Mpls {
            let _ = writeln!(
                w,
                "// ARP carries no label: every router on the link sees it, and each answers"
            );
            let _ = writeln!(w, "// and learns only for its own address.");
            let _ = writeln!(w, "{n}/arp[0] -> {n}/arpt :: Tee({});", itfs.len());
            let _ = writeln!(w, "{n}/arp[1] -> {n}/arpt;");
            for (o, &(r, i)) in itfs.iter().enumerate() {
                let _ = writeln!(w, "{n}/arpt[{o}] -> [{i}]{};", vr.routers[r].name);
            }
        } else {
            let (ul, len) = link.underlay.expect("ipip links have an underlay");
            let mut answers = vec![ul.to_string()];
            for &(r, i) in &itfs {
                if let Tag::Tunnel { local, .. } = vr.routers[r].interfaces[i].tag {
                    let t = local.to_string();
                    if !answers.contains(&t) {
                        answers.push(t);
                    }
                }
            }
            let _ = writeln!(
                w,
                "// The box answers ARP for its underlay address and every tunnel's local"
            );
            let _ = writeln!(
                w,
                "// address; each router resolves its tunnels' remotes itself."
            );
            let _ = writeln!(
                w,
                "{n}/arp[0] -> {n}/ar :: ARPResponder({} ${}) -> {n}/ctl :: Queue({QUEUE_CAPACITY});",
                answers.join(" "),
                mac_var(vr, l)
            );
            let _ = writeln!(w, "{n}/arp[1] -> {n}/arpt :: Tee({});", routers.len());
            let gw = link
                .gateway
                .map(|g| format!(", 0.0.0.0/0 {g} 0"))
                .unwrap_or_default();
            for (k, &r) in routers.iter().enumerate() {
                let rname = &vr.routers[r].name;
                let _ = writeln!(
                    w,
                    "{n}/ul_{rname} :: GetIPAddress(16)\n    -> {n}/ulrt_{rname} :: StaticIPLookup({}/{len} 0{gw})\n    -> {n}/ularp_{rname} :: ARPQuerier({ul}/{len}, ${})\n    -> {n}/q_{rname} :: Queue({QUEUE_CAPACITY});",
                    network(ul, len),
                    mac_var(vr, l)
                );
                let _ = writeln!(w, "{n}/arpt[{k}] -> [1]{n}/ularp_{rname};");
            }
        }
    }

    // Output: the tags put back, a queue per router.
    let _ = writeln!(w);
    for (o, &(r, i)) in itfs.iter().enumerate() {
        let rname = &vr.routers[r].name;
        let first_on_link = itfs.iter().position(|&(x, _)| x == r) == Some(o);
        let q = if first_on_link && link.demux != Demux::Ipip {
            format!("{n}/q_{rname} :: Queue({QUEUE_CAPACITY})")
        } else {
            format!("{n}/q_{rname}")
        };
        match vr.routers[r].interfaces[i].tag {
            Tag::Vlan(v) => {
                let _ = writeln!(
                    w,
                    "{rname}[{i}] -> {n}/tag{o} :: VLANEncap(VLAN_ID {v}) -> {q};"
                );
            }
            Tag::Mac(_) => {
                let _ = writeln!(w, "{rname}[{i}] -> {q};");
            }
            Tag::Mpls { outgoing, .. } => {
                let _ = writeln!(w, "{rname}[{i}] -> {n}/kind{o} :: Classifier(12/0806, -);");
                let _ = writeln!(w, "{n}/kind{o}[0] -> {q};");
                let _ = writeln!(
                    w,
                    "{n}/kind{o}[1] -> {n}/push{o} :: MPLSPush(LABEL {outgoing}) -> {n}/q_{rname};"
                );
            }
            Tag::Tunnel { local, remote } => {
                let _ = writeln!(
                    w,
                    "{rname}[{i}] -> {n}/encap{o} :: IPEncap(4, {local}, {remote}) -> {n}/ul_{rname};"
                );
            }
        }
    }

    // The scheduler sharing the link by weight, the device.
    let weights: Vec<u32> = routers.iter().map(|&r| vr.routers[r].weight).collect();
    let share = if routers.len() == 1 {
        format!("{n}/q_{}", vr.routers[routers[0]].name)
    } else {
        let w_ = reduced(&weights);
        let sched = match link.scheduler {
            Scheduler::Stride => format!(
                "StrideSched({})",
                w_.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Scheduler::Drr => {
                // A quantum of one full frame per unit of weight.
                let frame = u32::from(link.mtu) + 18;
                format!(
                    "DRRSched({frame}, QUANTA {})",
                    w_.iter()
                        .map(|x| (x * frame).to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            }
        };
        let _ = writeln!(
            w,
            "// The link's output, shared by weight ({}).",
            routers
                .iter()
                .map(|&r| format!("{} {}", vr.routers[r].name, vr.routers[r].weight))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(w, "{n}/sched :: {sched};");
        for (k, &r) in routers.iter().enumerate() {
            let _ = writeln!(w, "{n}/q_{} -> [{k}]{n}/sched;", vr.routers[r].name);
        }
        format!("{n}/sched")
    };
    let out = format!("{n}/out :: ToDevice({dev}, BACKEND $BACKEND)");
    if link.demux == Demux::Ipip {
        let _ = writeln!(w, "// The box's own ARP replies go first.");
        let _ = writeln!(w, "{n}/prio :: PrioSched;");
        let _ = writeln!(w, "{n}/ctl -> [0]{n}/prio;");
        let _ = writeln!(w, "{share} -> [1]{n}/prio;");
        let _ = writeln!(w, "{n}/prio -> {out};");
    } else {
        let _ = writeln!(w, "{share} -> {out};");
    }
    let _ = writeln!(w);
}

fn schedule_info(w: &mut String, vr: &VirtualRouters) {
    let weights: Vec<u32> = vr.routers.iter().map(|r| r.weight).collect();
    let tickets = reduced(&weights);
    let mut entries = Vec::new();
    for l in 0..vr.links.len() {
        let n = link_element_name(&vr.links[l].name);
        for (o, &(r, _)) in vr.link_interfaces(l).iter().enumerate() {
            entries.push(format!("{n}/unq{o} {}", tickets[r]));
        }
    }
    rule(w);
    let _ = writeln!(
        w,
        "// Each router's input tasks get its weight in tickets (Egi et al. Fig. 15(b))."
    );
    let _ = writeln!(w, "ScheduleInfo({});", entries.join(", "));
}

/// The configuration's default file name for a virtual-router file
/// (`two-tenants.toml` -> `two-tenants.click`).
pub fn default_output(file: &Path) -> String {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "vr".into());
    format!("{stem}.click")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"
[[link]]
name = "eth0.5"
demux = "vlan"
mtu = 1400
[[router]]
name = "r"
local = "host"
  [[router.interface]]
  link = "eth0.5"
  vlan = 7
  address = "10.0.0.1/24"
  [[router.route]]
  prefix = "0.0.0.0/0"
  gateway = "10.0.0.254"
"#;

    #[test]
    fn weights_are_reduced() {
        assert_eq!(reduced(&[2, 4, 6]), vec![1, 2, 3]);
        assert_eq!(reduced(&[7]), vec![1]);
        assert_eq!(reduced(&[3, 5]), vec![3, 5]);
    }

    #[test]
    fn one_router_on_one_link() {
        let vr = VirtualRouters::from_toml(ONE).unwrap();
        let text = config(&vr, &ConfigOptions::default());
        // Link names become element names Click accepts.
        assert!(
            text.contains("eth0_5/in :: FromDevice(eth0.5, BACKEND $BACKEND);"),
            "{text}"
        );
        assert!(
            text.contains("$MAC_eth0_5 02:76:ff:00:00:01,  // a placeholder"),
            "{text}"
        );
        assert!(text.contains("-D MAC_eth0_5=<eth0.5's MAC>"), "{text}");
        // No scheduler for a link with one router.
        assert!(text.contains("eth0_5/q_r -> eth0_5/out :: ToDevice(eth0.5, BACKEND $BACKEND);"));
        assert!(!text.contains("StrideSched"));
        assert!(text.contains("IPFragmenter(1400)"));
        assert!(text.contains("-> local :: ToHost(host_r);"));
        assert!(text.contains("0.0.0.0/0 10.0.0.254 1,"));
        assert!(!text.contains("ScheduleInfo"));
        assert_eq!(
            default_output(Path::new("conf/vr/two-tenants.toml")),
            "two-tenants.click"
        );
    }
}
