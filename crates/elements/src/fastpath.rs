//! Which packets of a configuration the XDP fast path may forward in the
//! kernel, and keeping its copy of the routes and neighbours current.
//!
//! A `FromDevice(eth0, FASTPATH true)` asks for it. The configuration's
//! graph is followed from that FromDevice through the elements of Click's
//! IPv4 forwarding path, and for each output of the route lookup it
//! reaches, through the elements of the output path to a ToDevice. Every
//! element on the way must be one whose effect on an ordinary packet the
//! XDP program reproduces exactly:
//!
//! - input: `Classifier` (the output of a bare `12/0800` pattern, only
//!   other-EtherType patterns before it), `Paint`, `Strip(14)`,
//!   `CheckIPHeader` (its address lists go to the program, which leaves
//!   packets from or to them up here), `MarkIPHeader`, `GetIPAddress(16)`;
//! - the lookup: `StaticIPLookup`/`LinearIPLookup`, `DirectIPLookup`,
//!   `LookupIPRoute`, `RadixIPLookup`, `RangeIPLookup`;
//! - each output: `DropBroadcasts`, `PaintTee` (a packet leaving by the
//!   interface it came in on goes up for its redirect), `IPGWOptions`,
//!   `FixIPSrc`, `DecIPTTL`, `IPFragmenter` (its MTU bounds what the
//!   program forwards), then `EtherEncap(0x0800, SRC, DST)` or
//!   `ARPQuerier` (the program reads the querier's entries), any queue,
//!   and `ToDevice`.
//!
//! The program forwards only packets none of these elements would treat
//! apart (see `bricks_io::xdp::fastpath`): no options, TTL above 1, a
//! valid header, ordinary addresses, a route to an output that qualifies,
//! a known neighbour. Every other packet reaches the configuration as
//! before. An output whose path holds any other element (a Counter, a
//! Print, a Tee) is not forwarded by the program at all, and the reason
//! is printed when the router starts.

use crate::ether::arp_table::Neighbours;
use crate::ip::staticiplookup::StaticShared;
use crate::route::lookup::v4_table;
use crate::route::table::{RouteChange, RouteObserver};
use bricks_config::Arg;
use bricks_element::{Args, PortInfo, SharedSlot};
use bricks_io::xdp::{FastPath, FastPathPort, FastPathSpec};
use std::any::Any;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One element of a configuration, as the analysis reads it.
pub struct Node<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its class's name.
    pub class: &'a str,
    /// Its arguments.
    pub args: &'a [Arg],
    /// Its ports.
    pub ports: &'a PortInfo,
    /// Where each output leads: every (element, input) it connects to.
    pub outputs: &'a [Vec<(usize, usize)>],
    /// The state its instances share.
    pub shared: &'a SharedSlot,
}

/// Where a fast path's routes come from.
enum Routes {
    /// A DIR-24-8 or trie table's shared state.
    Table(Arc<dyn Any + Send + Sync>),
    /// A StaticIPLookup's configured routes and observer.
    Static(Arc<StaticShared>),
}

/// A fast path the configuration allows, not yet loaded.
pub struct Candidate {
    /// The receiving interface.
    pub input: String,
    /// The lookup element it follows.
    pub lookup: String,
    ports: Vec<Option<FastPathPort>>,
    bad: Vec<Ipv4Addr>,
    accept_dst: Option<[u8; 6]>,
    routes: Routes,
    /// ARPQuerier outputs: output, shared entries, entry lifetime (ns).
    neighbours: Vec<(u32, Arc<Neighbours>, u64)>,
    /// The outputs the program leaves to the configuration, and why.
    pub notes: Vec<String>,
}

/// What the analysis of one `FASTPATH true` FromDevice found.
pub type Finding = Result<Candidate, (String, String)>;

/// Most routes a fast path's table holds; routes beyond go to user space.
pub const MAX_ROUTES: u32 = 4 << 20;
/// Most neighbours a fast path's table holds.
pub const MAX_NEIGHBOURS: u32 = 1 << 16;

/// How often the neighbour copies are brought up to date.
const NEIGHBOUR_SYNC: Duration = Duration::from_millis(20);

fn is(class: &str, names: &[&str]) -> bool {
    names.contains(&class)
}

fn args_of<'a>(n: &'a Node<'a>) -> Args<'a> {
    Args::new(n.args, None).with_shared(n.shared)
}

/// The one element and input output `port` of `n` leads to.
fn next(nodes: &[Node], i: usize, port: usize) -> Result<(usize, usize), String> {
    let n = &nodes[i];
    match n.outputs.get(port).map(|v| v.as_slice()) {
        Some([one]) => Ok(*one),
        Some([]) | None => Err(format!("{}[{port}] is not connected", n.name)),
        Some(_) => Err(format!("{}[{port}] leads to several elements", n.name)),
    }
}

/// The text of a positional argument, trimmed.
fn arg<'a>(n: &Node<'a>, i: usize) -> Option<&'a str> {
    n.args.get(i).map(|a| a.text.trim())
}

/// Every FromDevice or PollDevice with `FASTPATH true`: the fast path
/// its graph allows, or why it allows none.
pub fn find(nodes: &[Node]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if !is(n.class, &["FromDevice", "PollDevice"]) {
            continue;
        }
        // As FromDevice reads its arguments (it checked them already).
        let mut a = args_of(n);
        let wanted = a.read::<bool>("FASTPATH").ok().flatten().unwrap_or(false);
        let Ok(device) = crate::io::device::read_device(&mut a) else {
            continue;
        };
        if wanted {
            let (input, promisc) = (device.name.clone(), device.promisc);
            out.push(analyse(nodes, i, input, promisc).map_err(|why| (device.name, why)));
        }
    }
    out
}

fn analyse(nodes: &[Node], from: usize, input: String, promisc: bool) -> Result<Candidate, String> {
    let f = &nodes[from];
    // FromDevice drops frames unicast to other MACs unless PROMISC: the
    // program leaves them to it.
    let accept_dst = if promisc {
        None
    } else {
        Some(
            bricks_io::ifinfo::lookup(&input)
                .map_err(|e| e.to_string())?
                .mac,
        )
    };
    let (mut i, mut port) = next(nodes, from, 0)?;
    let mut paint: Option<u8> = None;
    let mut stripped = false;
    let mut bad: Vec<Ipv4Addr> = Vec::new();
    // Input side: up to the lookup.
    let (lookup, routes) = loop {
        let n = &nodes[i];
        if port != 0 {
            return Err(format!("{} is reached on input {port}", n.name));
        }
        match n.class {
            "Classifier" if !stripped => {
                let mut taken = None;
                for (k, a) in n.args.iter().enumerate() {
                    let t = a.text.trim();
                    if t == "12/0800" {
                        taken = Some(k);
                        break;
                    }
                    let other_type = t.strip_prefix("12/").is_some_and(|rest| {
                        let ty = rest.split_whitespace().next().unwrap_or("");
                        ty.len() == 4
                            && ty.bytes().all(|b| b.is_ascii_hexdigit())
                            && !ty.eq_ignore_ascii_case("0800")
                    });
                    if !other_type {
                        return Err(format!(
                            "{}: pattern `{t}` comes before `12/0800` and may match IPv4 frames",
                            n.name
                        ));
                    }
                }
                let k = taken.ok_or_else(|| format!("{}: no `12/0800` pattern", n.name))?;
                (i, port) = next(nodes, i, k)?;
            }
            "Paint" if !stripped => {
                if n.args.len() != 1 {
                    return Err(format!("{}: only Paint(COLOR) is followed", n.name));
                }
                paint = Some(
                    arg(n, 0)
                        .and_then(|c| c.parse().ok())
                        .ok_or_else(|| format!("{}: COLOR is not a number", n.name))?,
                );
                (i, port) = next(nodes, i, 0)?;
            }
            "Strip" if !stripped => {
                if arg(n, 0) != Some("14") || n.args.len() != 1 {
                    return Err(format!("{}: only Strip(14) is followed", n.name));
                }
                stripped = true;
                (i, port) = next(nodes, i, 0)?;
            }
            "CheckIPHeader" if stripped => {
                let c = crate::ip::checkipheader::configure(&mut args_of(n), false)
                    .map_err(|e| format!("{}: {e}", n.name))?;
                let (addrs, at_zero) = c.fast_path_view();
                if !at_zero {
                    return Err(format!("{}: an OFFSET is not followed", n.name));
                }
                bad.extend(addrs);
                (i, port) = next(nodes, i, 0)?;
            }
            "MarkIPHeader" if stripped && n.args.iter().all(|a| a.text.trim() == "0") => {
                (i, port) = next(nodes, i, 0)?;
            }
            "GetIPAddress" if stripped && arg(n, 0) == Some("16") && n.args.len() == 1 => {
                (i, port) = next(nodes, i, 0)?;
            }
            _ => {
                if let Some(routes) = lookup_routes(n).filter(|_| stripped) {
                    break (i, routes);
                }
                return Err(format!(
                    "{} ({}) is on the way from {} to a route lookup; the fast path \
                     follows Classifier, Paint, Strip(14), CheckIPHeader, MarkIPHeader, \
                     GetIPAddress(16) and an IPv4 lookup",
                    n.name, n.class, f.name
                ));
            }
        }
    };
    let rt = &nodes[lookup];
    let mut ports = Vec::new();
    let mut notes = Vec::new();
    let mut neighbours = Vec::new();
    for k in 0..rt.ports.noutputs() {
        match output_path(nodes, lookup, k, paint, &input) {
            Ok((p, n)) => {
                if let Some(n) = n {
                    neighbours.push((k as u32, n.0, n.1));
                }
                ports.push(Some(p));
            }
            Err(why) => {
                notes.push(format!("{}[{k}] stays in user space: {why}", rt.name));
                ports.push(None);
            }
        }
    }
    if ports.iter().all(Option::is_none) {
        return Err(format!(
            "no output of {} leads to a ToDevice the fast path can follow: {}",
            rt.name,
            notes.join("; ")
        ));
    }
    bad.sort_unstable();
    bad.dedup();
    Ok(Candidate {
        input,
        accept_dst,
        lookup: rt.name.to_string(),
        ports,
        bad,
        routes,
        neighbours,
        notes,
    })
}

/// The route source of an IPv4 lookup element.
fn lookup_routes(n: &Node) -> Option<Routes> {
    let shared = n.shared.get()?;
    if v4_table(shared).is_some() {
        return Some(Routes::Table(shared.clone()));
    }
    shared
        .clone()
        .downcast::<StaticShared>()
        .ok()
        .map(Routes::Static)
}

type NeighbourSource = (Arc<Neighbours>, u64);

/// An output path's Ethernet header: source, static destination (none:
/// the ARPQuerier's entries, with the querier's table).
type Link = ([u8; 6], Option<[u8; 6]>, Option<NeighbourSource>);

/// Follows lookup output `k` to a ToDevice.
fn output_path(
    nodes: &[Node],
    lookup: usize,
    k: usize,
    paint: Option<u8>,
    input: &str,
) -> Result<(FastPathPort, Option<NeighbourSource>), String> {
    let (mut i, mut port) = next(nodes, lookup, k)?;
    let mut mtu = 0u32;
    let mut hairpin = false;
    let mut l2: Option<Link> = None;
    for _ in 0..64 {
        let n = &nodes[i];
        let first_input = port == 0;
        match n.class {
            "DropBroadcasts" | "IPGWOptions" | "FixIPSrc" | "DecIPTTL"
                if l2.is_none() && first_input =>
            {
                (i, port) = next(nodes, i, 0)?;
            }
            "PaintTee" if l2.is_none() && first_input => {
                let c: Option<u8> = arg(n, 0).and_then(|c| c.parse().ok());
                if c.is_none() || n.args.len() != 1 {
                    return Err(format!("{}: only PaintTee(COLOR) is followed", n.name));
                }
                hairpin |= c == paint;
                (i, port) = next(nodes, i, 0)?;
            }
            "IPFragmenter" if l2.is_none() && first_input => {
                let mut a = args_of(n);
                let m: u32 = a.read_mp("MTU").map_err(|e| format!("{}: {e}", n.name))?;
                mtu = if mtu == 0 { m } else { mtu.min(m) };
                (i, port) = next(nodes, i, 0)?;
            }
            "EtherEncap" if l2.is_none() && first_input => {
                let mut a = args_of(n);
                let ty: String = a.read_mp("ETHERTYPE").map_err(|e| e.to_string())?;
                let ty = ty.trim().to_ascii_lowercase();
                if ty != "0x0800" && ty != "2048" && ty != "0800" {
                    return Err(format!("{}: EtherType {ty} is not IPv4", n.name));
                }
                let src: bricks_wire::ethernet::EthernetAddress =
                    a.read_mp("SRC").map_err(|e| format!("{}: {e}", n.name))?;
                let dst: bricks_wire::ethernet::EthernetAddress =
                    a.read_mp("DST").map_err(|e| format!("{}: {e}", n.name))?;
                l2 = Some((src.0, Some(dst.0), None));
                (i, port) = next(nodes, i, 0)?;
            }
            "ARPQuerier" if l2.is_none() && first_input => {
                let q = crate::ether::arp_querier::ArpQuerier::from_args(&mut args_of(n), n.ports)
                    .map_err(|e| format!("{}: {e}", n.name))?;
                let (eth, table, timeout) = q.fast_path_view();
                l2 = Some((eth.0, None, Some((table, timeout))));
                (i, port) = next(nodes, i, 0)?;
            }
            "Queue" | "SimpleQueue" | "ThreadSafeQueue" | "NotifierQueue" | "FullNoteQueue"
                if l2.is_some() =>
            {
                (i, port) = next(nodes, i, 0)?;
            }
            "ToDevice" if l2.is_some() => {
                let ifname = arg(n, 0).unwrap_or("").to_string();
                if hairpin && ifname == input {
                    return Err(format!(
                        "a PaintTee sends packets that leave by {input}, where they came in, \
                         to an ICMP redirect"
                    ));
                }
                let (src, dst, neigh) = l2.take().expect("checked");
                // The kernel drops a redirected frame longer than the
                // output's MTU; ToDevice refuses it too, and counts it.
                if let Ok(info) = bricks_io::ifinfo::lookup(&ifname) {
                    if info.mtu > 0 {
                        mtu = if mtu == 0 {
                            info.mtu
                        } else {
                            mtu.min(info.mtu)
                        };
                    }
                }
                return Ok((
                    FastPathPort {
                        ifname,
                        src_mac: src,
                        dst_mac: dst,
                        mtu,
                    },
                    neigh,
                ));
            }
            _ => {
                return Err(format!(
                    "{} ({}) is on its way to a ToDevice",
                    n.name, n.class
                ))
            }
        }
    }
    Err("the path is too long".into())
}

impl Candidate {
    /// Loads the program's maps with the routes and neighbours of now
    /// and keeps them current: route changes are applied as the table
    /// makes them, neighbour changes within [`NEIGHBOUR_SYNC`]. Returns
    /// what the receiving interface must be opened with.
    pub fn start(self) -> Result<Running, String> {
        let spec = FastPathSpec {
            ports: self.ports,
            bad_src: self.bad,
            accept_dst: self.accept_dst,
            max_routes: MAX_ROUTES,
            max_neighbours: MAX_NEIGHBOURS,
        };
        let fp = FastPath::new(&self.input, spec).map_err(|e| e.to_string())?;
        let apply = {
            let fp = fp.clone();
            move |c: &RouteChange| {
                // A failed update (a full table) leaves the prefix to user
                // space: the route is removed so that no stale one stays.
                let r = match c {
                    RouteChange::Set(a, len, hops) => match hops.as_slice() {
                        [(out, gw)] => fp.set_route(*a, *len, *out, *gw),
                        _ => fp.set_route(*a, *len, FastPath::SLOW, None),
                    },
                    RouteChange::Remove(a, len) => fp.remove_route(*a, *len),
                };
                if r.is_err() {
                    if let RouteChange::Set(a, len, _) = c {
                        let _ = fp.remove_route(*a, *len);
                    }
                }
            }
        };
        let observer: RouteObserver = Arc::new(apply.clone());
        let initial = match &self.routes {
            Routes::Table(shared) => v4_table(shared)
                .expect("checked when found")
                .observe_v4(observer),
            Routes::Static(s) => {
                s.observer.add(observer);
                s.initial_changes()
            }
        };
        for c in &initial {
            apply(c);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let thread = (!self.neighbours.is_empty()).then(|| {
            let fp = fp.clone();
            let stop = stop.clone();
            let neighbours = self.neighbours;
            std::thread::Builder::new()
                .name("bricks-fastpath".into())
                .spawn(move || sync_neighbours(&fp, &neighbours, &stop))
                .expect("spawning the fast path's neighbour thread")
        });
        Ok(Running {
            input: self.input,
            fast_path: fp,
            stop,
            thread,
        })
    }
}

/// Mirrors the ARPQueriers' usable entries into the program's table
/// until `stop`.
fn sync_neighbours(fp: &FastPath, sources: &[(u32, Arc<Neighbours>, u64)], stop: &AtomicBool) {
    use std::collections::HashMap;
    let mut mirrored: HashMap<(u32, Ipv4Addr), [u8; 6]> = HashMap::new();
    while !stop.load(Ordering::Relaxed) {
        let now = bricks_packet::Timestamp::now().0;
        let mut want: HashMap<(u32, Ipv4Addr), [u8; 6]> = HashMap::new();
        for (out, n, timeout) in sources {
            // A little margin, so that the program stops using an entry
            // before the querier would find it expired.
            let margin = timeout.saturating_sub(timeout / 16);
            for (ip, eth) in n.usable_entries(now, margin) {
                want.insert((*out, ip), eth.0);
            }
        }
        mirrored.retain(|k, mac| {
            let keep = want.get(k) == Some(mac);
            if !keep {
                fp.remove_neighbour(k.0, k.1);
            }
            keep
        });
        for (k, mac) in want {
            if let std::collections::hash_map::Entry::Vacant(e) = mirrored.entry(k) {
                if fp.set_neighbour(k.0, k.1, mac).is_ok() {
                    e.insert(mac);
                }
            }
        }
        std::thread::sleep(NEIGHBOUR_SYNC);
    }
}

/// A fast path in use: its program's handle, and the thread keeping its
/// neighbours current (stopped on drop).
pub struct Running {
    /// The receiving interface.
    pub input: String,
    /// The program and its maps.
    pub fast_path: FastPath,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::testrun::plan;

    /// The fast paths a configuration allows, found as the runner finds
    /// them.
    fn findings(config: &str) -> Vec<Finding> {
        let p = plan(config).unwrap();
        let nodes: Vec<Node> = p
            .elements
            .iter()
            .map(|e| Node {
                name: &e.name,
                class: e.class.name,
                args: &e.args,
                ports: &e.ports,
                outputs: &e.outputs,
                shared: &e.shared,
            })
            .collect();
        find(&nodes)
    }

    /// Click's IP router (conf/demo-router.click's shape) on interfaces
    /// that need not exist: PROMISC true, so no MAC is read.
    const ROUTER: &str = "
        rt :: StaticIPLookup(10.1.0.1/32 0, 10.2.0.1/32 0, 10.1.0.0/24 1, 10.2.0.0/24 2,
                             0.0.0.0/0 10.2.0.254 2);
        ip :: Strip(14) -> CheckIPHeader(INTERFACES 10.1.0.1/24 10.2.0.1/24, MARTIANS true)
            -> GetIPAddress(16) -> [0]rt;
        FromDevice(fpt0, PROMISC true, FASTPATH true)
            -> c0 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
        c0[0] -> Discard; c0[1] -> Discard; c0[3] -> Discard;
        c0[2] -> Paint(1) -> ip;
        FromDevice(fpt1, PROMISC true)
            -> c1 :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);
        c1[0] -> Discard; c1[1] -> Discard; c1[3] -> Discard;
        c1[2] -> Paint(2) -> ip;
        q0 :: Queue -> ToDevice(fpt0); q1 :: Queue -> ToDevice(fpt1);
        arpq0 :: ARPQuerier(10.1.0.1, 02:00:00:00:01:01) -> q0;
        arpq1 :: ARPQuerier(10.2.0.1, 02:00:00:00:02:01) -> q1;
        Idle -> [1]arpq0; Idle -> [1]arpq1;
        rt[0] -> ping :: ICMPPingResponder -> rt; ping[1] -> Discard;
        rt[1] -> DropBroadcasts -> cp0 :: PaintTee(1) -> gio0 :: IPGWOptions(10.1.0.1)
            -> FixIPSrc(10.1.0.1) -> dt0 :: DecIPTTL -> fr0 :: IPFragmenter(1400) -> [0]arpq0;
        rt[2] -> DropBroadcasts -> cp1 :: PaintTee(2) -> gio1 :: IPGWOptions(10.2.0.1)
            -> FixIPSrc(10.2.0.1) -> dt1 :: DecIPTTL -> fr1 :: IPFragmenter(1400) -> [0]arpq1;
        cp0[1] -> Discard; gio0[1] -> Discard; dt0[1] -> Discard; fr0[1] -> Discard;
        cp1[1] -> Discard; gio1[1] -> Discard; dt1[1] -> Discard; fr1[1] -> Discard;
    ";

    #[test]
    fn clicks_ip_router_is_followed_to_each_arp_querier() {
        let f = findings(ROUTER);
        assert_eq!(f.len(), 1, "only the FromDevice that asks");
        let c = f.into_iter().next().unwrap().unwrap();
        assert_eq!((c.input.as_str(), c.lookup.as_str()), ("fpt0", "rt"));
        // Output 0 is local delivery; output 1 leaves where the packets
        // came in (the PaintTee's redirect); output 2 is forwarded, its
        // next hop's MAC from arpq1's entries, within the fragmenter's MTU.
        assert_eq!(c.ports.len(), 3);
        assert!(c.ports[0].is_none() && c.ports[1].is_none());
        let p = c.ports[2].as_ref().unwrap();
        assert_eq!(p.ifname, "fpt1");
        assert_eq!(p.src_mac, [2, 0, 0, 0, 2, 1]);
        assert_eq!(p.dst_mac, None);
        assert_eq!(p.mtu, 1400);
        assert_eq!(c.neighbours.len(), 1);
        assert_eq!(c.neighbours[0].0, 2);
        assert!(c.notes[0].contains("ping"), "{:?}", c.notes);
        assert!(c.notes[1].contains("PaintTee"), "{:?}", c.notes);
        assert_eq!(c.accept_dst, None, "PROMISC true");
        // CheckIPHeader's subnets' network and broadcast addresses, and
        // the router's own (MARTIANS), go up to it.
        for a in [
            "10.1.0.0",
            "10.1.0.255",
            "10.2.0.255",
            "10.1.0.1",
            "10.2.0.1",
        ] {
            assert!(c.bad.contains(&a.parse().unwrap()), "{a}: {:?}", c.bad);
        }
        match &c.routes {
            Routes::Static(s) => assert_eq!(s.initial_changes().len(), 5),
            Routes::Table(_) => panic!("a StaticIPLookup's routes"),
        }
    }

    #[test]
    fn the_bench_path_takes_ether_encap_and_a_table_lookup() {
        let f = findings(
            "FromDevice(fpt2, PROMISC true, FASTPATH true) -> c :: Classifier(12/0800, -)
                 -> Strip(14) -> CheckIPHeader
                 -> rt :: DirectIPLookup(10.2.0.0/16 0, 10.1.0.0/16 1)
                 -> dt :: DecIPTTL -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02)
                 -> Queue -> ToDevice(fpt3);
             c[1] -> Discard; rt[1] -> Counter -> Discard; dt[1] -> Discard;",
        );
        let c = f.into_iter().next().unwrap().unwrap();
        let p = c.ports[0].as_ref().unwrap();
        assert_eq!(
            (p.ifname.as_str(), p.dst_mac),
            ("fpt3", Some([2, 0, 0, 0, 0, 2]))
        );
        assert_eq!(p.src_mac, [2, 0, 0, 0, 0, 1]);
        assert!(c.ports[1].is_none());
        assert!(
            c.notes[0].contains("Counter"),
            "a Counter on the way keeps the output in user space: {:?}",
            c.notes
        );
        assert!(matches!(c.routes, Routes::Table(_)));
        assert!(c.neighbours.is_empty());
    }

    #[test]
    fn a_path_the_program_cannot_reproduce_is_refused_with_the_reason() {
        let cases = [
            // A pattern before the IPv4 one that may match IPv4 frames.
            (
                "FromDevice(fpt4, PROMISC true, FASTPATH true) -> c :: Classifier(23/06, 12/0800, -);
                 c[0] -> Discard; c[2] -> Discard;
                 c[1] -> Strip(14) -> CheckIPHeader -> rt :: StaticIPLookup(0/0 0)
                 -> EtherEncap(0x0800, 2:0:0:0:0:1, 2:0:0:0:0:2) -> Queue -> ToDevice(fpt5);",
                "23/06",
            ),
            // An element the program does not know, before the lookup.
            (
                "FromDevice(fpt4, PROMISC true, FASTPATH true) -> Classifier(12/0800) -> Strip(14)
                 -> Counter -> CheckIPHeader -> rt :: StaticIPLookup(0/0 0)
                 -> EtherEncap(0x0800, 2:0:0:0:0:1, 2:0:0:0:0:2) -> Queue -> ToDevice(fpt5);",
                "Counter",
            ),
            // No output reaches a ToDevice.
            (
                "FromDevice(fpt4, PROMISC true, FASTPATH true) -> Classifier(12/0800) -> Strip(14)
                 -> CheckIPHeader -> rt :: StaticIPLookup(0/0 0) -> Discard;",
                "no output of rt",
            ),
            // A CheckIPHeader reading the header elsewhere.
            (
                "FromDevice(fpt4, PROMISC true, FASTPATH true) -> Classifier(12/0800)
                 -> CheckIPHeader(OFFSET 14) -> rt :: StaticIPLookup(0/0 0) -> Discard;",
                "CheckIPHeader",
            ),
        ];
        for (config, why) in cases {
            let f = findings(config);
            match f.into_iter().next().unwrap() {
                Ok(_) => panic!("allowed: {config}"),
                Err((ifname, e)) => {
                    assert_eq!(ifname, "fpt4");
                    assert!(e.contains(why), "{e} (expected {why})");
                }
            }
        }
    }
}
