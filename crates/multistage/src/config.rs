//! The Click configuration each box of a multistage router runs (Bianco et
//! al. §III, items 1-5).
//!
//! A balancer:
//!
//! ```text
//!  front port k ─ FromDevice(PROMISC) ─ Classifier ─ ARP request for G_k ─ ARPResponder(G_k F_k) ─┐
//!                                                 └ the rest (odb: IPv4 checked first) ─ [i]lb   │
//!  back port j ─ FromDevice(PROMISC) ─ [F_b]lb                                                  │
//!  lb[i] ─ Queue ─ ToDevice (front port i) ◄─────────────────────────────────────────────────────┘
//!  lb[F_b + j] ─ Queue ─ ToDevice (back port j)
//! ```
//!
//! `lb` is the `L2Balancer`: it balances what comes in by front ports over
//! the live routers by destination MAC, switches what comes back by the
//! hosts' MACs it learnt, copies the routers' ARP requests out of every
//! front port and ARP replies for F_k to every router, and probes the
//! routers. Front ports are promiscuous: hosts send to F_k, which need not
//! be the interface's own MAC. Back ports are promiscuous too, since the
//! balancer's back MACs are labels of its own.
//!
//! A router:
//!
//! ```text
//!  back NIC ─ FromDevice(PROMISC) ─ Classifier ─ 0x88B7 ─ ProbeResponder ─────────────┐
//!                                             └ VRDemux(BY mac) ─ [k] interface k ─ ┤
//!  interface k: ARPResponder(G_k F_k), ARPQuerier(G_k, F_k), IPv4 ─ ip ─ rt           │
//!  rt[k + 1] ─ DropBroadcasts, IPGWOptions, FixIPSrc, DecIPTTL, IPFragmenter ─ arpq_k ┤
//!                                                       Queue ─ ToDevice (back NIC) ◄┘
//! ```
//!
//! Each router is the IPv4 router of conf/ip-router.click with one
//! interface per front port: the balancers address frames from front port
//! k to the router's MAC for k (02:4d:53:II:KK:00), so `VRDemux` tells the
//! interfaces apart by destination MAC (broadcasts to every interface).
//! Interface k answers ARP and resolves next hops with G_k and F_k, so
//! what it sends is addressed as if it came from front port k itself; the
//! switch carries it to the balancer the next hop is behind. The ARP
//! replies the balancers copy to the router arrive at its MAC for k, and
//! are addressed to F_k again (`StoreEtherAddress`) before the
//! `ARPQuerier`, which takes replies to its own MAC only.
//!
//! Variables (`-D NAME=VALUE` on `bricks run`): `BACKEND` (auto, xdp or
//! packet), `MAC0`, `MAC1`, ... (F_k, front port k's MAC, for every front
//! port whose MAC the file does not give; it must be the same on every
//! box) and `MTU` (routers: of the external links).

use crate::model::{router_mac, Mode, Multistage, Node};
use crate::units::{broadcast, click_duration, format_mac, network};
use std::fmt::Write as _;

/// Capacity of every queue the configurations declare.
pub const QUEUE_CAPACITY: usize = 1024;

/// What a box's configuration needs besides the multistage router.
#[derive(Debug, Clone)]
pub struct ConfigOptions {
    /// The multistage file as the user named it (for the header).
    pub source: String,
    /// The configuration's file name in the header's run command.
    pub output: String,
    /// Default device backend: auto, xdp or packet.
    pub backend: String,
    /// The control socket in the header's run command.
    pub control: String,
}

impl ConfigOptions {
    /// Options for `node` of `ms` with the defaults: `NODE.click`,
    /// backend auto, the socket of [`default_control`].
    pub fn new(ms: &Multistage, node: Node, source: &str) -> ConfigOptions {
        let name = node_name(ms, node);
        ConfigOptions {
            source: source.to_string(),
            output: format!("{name}.click"),
            backend: "auto".into(),
            control: default_control(ms, name),
        }
    }
}

/// The control socket a box's run command names by default:
/// `/run/bricks-multistage/NAME/BOX.sock`.
pub fn default_control(ms: &Multistage, node: &str) -> String {
    format!("/run/bricks-multistage/{}/{node}.sock", ms.name)
}

/// A box's name.
pub fn node_name(ms: &Multistage, node: Node) -> &str {
    match node {
        Node::Balancer(b) => &ms.balancers[b].name,
        Node::Router(r) => &ms.routers[r].name,
    }
}

/// The configuration of a box.
pub fn node_config(ms: &Multistage, node: Node, options: &ConfigOptions) -> String {
    match node {
        Node::Balancer(b) => balancer_config(ms, b, options),
        Node::Router(r) => router_config(ms, r, options),
    }
}

/// The `-D MACk=...` a box's run command needs: one per front port it
/// uses whose MAC the file does not give.
fn missing_macs<'a>(
    ms: &'a Multistage,
    fronts: impl Iterator<Item = (usize, &'a crate::model::FrontPort)>,
) -> Vec<String> {
    fronts
        .filter(|(_, p)| p.mac.is_none())
        .map(|(b, p)| {
            format!(
                "-D MAC{}=<{} {}'s MAC>",
                p.index, ms.balancers[b].name, p.iface
            )
        })
        .collect()
}

/// The header's run command.
fn run_command(w: &mut String, o: &ConfigOptions, defines: &[String]) {
    let _ = writeln!(w, "// Run it:");
    let _ = write!(w, "//   bricks run {} --control {}", o.output, o.control);
    for d in defines {
        let _ = write!(w, " \\\n//       {d}");
    }
    let _ = writeln!(w);
}

/// The `define` of the F_k variables of `fronts`.
fn mac_defines<'a>(
    w: &mut String,
    ms: &'a Multistage,
    fronts: impl Iterator<Item = (usize, &'a crate::model::FrontPort)>,
) {
    for (b, p) in fronts {
        let k = p.index;
        let here = format!("{} {}", ms.balancers[b].name, p.iface);
        match p.mac {
            Some(m) => {
                let _ = writeln!(w, "    $MAC{k} {},  // F_{k}: {here}", format_mac(&m));
            }
            None => {
                let _ = writeln!(
                    w,
                    "    $MAC{k} {},  // F_{k}: {here}'s MAC; give it with -D MAC{k}=... on every box",
                    format_mac(&p.mac_or_placeholder())
                );
            }
        }
    }
}

/// Balancer `b`'s configuration.
pub fn balancer_config(ms: &Multistage, b: usize, o: &ConfigOptions) -> String {
    let bal = &ms.balancers[b];
    let fb = bal.fronts.len();
    let n = bal.backs.len();
    let mut s = String::new();
    let w = &mut s;
    let fronts: Vec<String> = bal
        .fronts
        .iter()
        .map(|p| format!("{} ({})", p.index, p.iface))
        .collect();
    let backs: Vec<&str> = bal.backs.iter().map(|p| p.iface.as_str()).collect();
    let _ = writeln!(
        w,
        "// Balancer {} (balancer {b}) of multistage router {}: front port{} {}; back port{} {}.",
        bal.name,
        ms.name,
        if fb == 1 { "" } else { "s" },
        fronts.join(", "),
        if n == 1 { "" } else { "s" },
        backs.join(", ")
    );
    let _ = writeln!(
        w,
        "// Generated by `bricks multistage config {} {}`.",
        o.source, bal.name
    );
    let _ = writeln!(w, "//");
    run_command(w, o, &missing_macs(ms, bal.fronts.iter().map(|p| (b, p))));
    let _ = writeln!(w, "//");
    let mode = match (ms.mode, n) {
        (Mode::Dtx, 1) => "DTX: frames are balanced at layer 2 as they arrive".to_string(),
        (Mode::Dtx, n) => format!(
            "DTX-{n}: frames are balanced at layer 2 as they arrive, and spread\n// over \
             the {n} back ports by a second round robin"
        ),
        (Mode::Odb, _) => "ODB: IPv4 packets are checked and looked up first (Strip,\n// \
            CheckIPHeader, a default route, Unstrip), then balanced"
            .to_string(),
    };
    let _ = writeln!(w, "// Mode {mode}.");
    let _ = writeln!(
        w,
        "// lb balances IPv4 frames for F_k over the live routers ({} in all) by writing the",
        ms.routers.len()
    );
    let _ = writeln!(
        w,
        "// router's MAC for front port k (02:4d:53:II:KK:00) into their destination; it"
    );
    let _ = writeln!(
        w,
        "// switches what the routers send back by the hosts' MACs it learnt on the front"
    );
    let _ = writeln!(
        w,
        "// ports, and probes every router every {} (out after {} missed).",
        click_duration(ms.probe_interval),
        ms.probe_misses
    );
    let _ = writeln!(w, "// Watch it: bricks ctl {} read lb.live", o.control);
    let _ = writeln!(
        w,
        "// Change the policy: bricks ctl {} write lb.policy flow",
        o.control
    );
    let _ = writeln!(w);
    let _ = writeln!(w, "define(");
    let _ = writeln!(w, "    $BACKEND {},", o.backend);
    mac_defines(w, ms, bal.fronts.iter().map(|p| (b, p)));
    let _ = writeln!(w, ");");
    let _ = writeln!(w);

    let front_list: Vec<String> = bal.fronts.iter().map(|p| p.index.to_string()).collect();
    let mut args = vec![
        format!("FRONT {}", front_list.join(" ")),
        format!("ROUTERS {}", ms.routers.len()),
        format!("BALANCER {b}"),
        format!("BACKS {n}"),
        format!("POLICY {}", ms.policy.word()),
        format!("DELTA {}", click_duration(ms.delta)),
        format!("INTERVAL {}", click_duration(ms.probe_interval)),
        format!("MISSES {}", ms.probe_misses),
    ];
    // F_k: the balancer takes only frames for it from outside (front
    // ports are promiscuous), and copies the routers' ARP requests out of
    // the port whose F_k they come from.
    let front_macs: Vec<String> = bal
        .fronts
        .iter()
        .map(|p| format!("$MAC{}", p.index))
        .collect();
    args.push(format!("FRONT_MAC {}", front_macs.join(" ")));
    if bal.backs.iter().any(|p| p.mac.is_some()) {
        let macs: Vec<String> = (0..n)
            .map(|j| format_mac(&ms.back_port_mac(b, j)))
            .collect();
        args.push(format!("BACK_MAC {}", macs.join(" ")));
    }
    let _ = writeln!(w, "lb :: L2Balancer({});", args.join(", "));
    let _ = writeln!(w);

    for (i, p) in bal.fronts.iter().enumerate() {
        let k = p.index;
        let dev = &p.iface;
        let target = u32::from(p.address);
        let _ = writeln!(
            w,
            "// Front port {k}: {dev}, G_{k} = {}/{}, F_{k} = $MAC{k}; lb input and output {i}.",
            p.address, p.prefix_len
        );
        let _ = writeln!(
            w,
            "in_f{k} :: FromDevice({dev}, BACKEND $BACKEND, PROMISC true);"
        );
        let _ = writeln!(
            w,
            "q_f{k} :: Queue({QUEUE_CAPACITY}) -> out_f{k} :: ToDevice({dev}, BACKEND $BACKEND);"
        );
        match ms.mode {
            Mode::Dtx => {
                let _ = writeln!(
                    w,
                    "c_f{k} :: Classifier(12/0806 20/0001 38/{target:08x}, -);"
                );
            }
            Mode::Odb => {
                let _ = writeln!(
                    w,
                    "c_f{k} :: Classifier(12/0806 20/0001 38/{target:08x}, 12/0800, -);"
                );
            }
        }
        let _ = writeln!(w, "in_f{k} -> c_f{k};");
        let _ = writeln!(
            w,
            "c_f{k}[0] -> ar_f{k} :: ARPResponder({} $MAC{k}) -> q_f{k};",
            p.address
        );
        match ms.mode {
            Mode::Dtx => {
                let _ = writeln!(w, "c_f{k}[1] -> [{i}]lb;");
            }
            Mode::Odb => {
                let _ = writeln!(w, "c_f{k}[1] -> Strip(14)");
                let _ = writeln!(w, "    -> ip_f{k} :: CheckIPHeader");
                let _ = writeln!(w, "    -> GetIPAddress(16)");
                let _ = writeln!(w, "    -> rt_f{k} :: StaticIPLookup(0.0.0.0/0 0)");
                let _ = writeln!(w, "    -> Unstrip(14)");
                let _ = writeln!(w, "    -> [{i}]lb;");
                let _ = writeln!(w, "c_f{k}[2] -> [{i}]lb;");
            }
        }
        let _ = writeln!(w, "lb[{i}] -> q_f{k};");
        let _ = writeln!(w);
    }
    for (j, p) in bal.backs.iter().enumerate() {
        let dev = &p.iface;
        let _ = writeln!(
            w,
            "// Back port {j}: {dev} on switch {}, MAC {}; lb output {}.",
            ms.switch,
            format_mac(&ms.back_port_mac(b, j)),
            fb + j
        );
        let _ = writeln!(
            w,
            "in_b{j} :: FromDevice({dev}, BACKEND $BACKEND, PROMISC true) -> [{fb}]lb;"
        );
        let _ = writeln!(
            w,
            "lb[{}] -> q_b{j} :: Queue({QUEUE_CAPACITY}) -> out_b{j} :: ToDevice({dev}, BACKEND $BACKEND);",
            fb + j
        );
        let _ = writeln!(w);
    }
    s
}

/// Router `r`'s configuration.
pub fn router_config(ms: &Multistage, r: usize, o: &ConfigOptions) -> String {
    let router = &ms.routers[r];
    let f = ms.front_count();
    let dev = &router.iface;
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(
        w,
        "// Router {} (router {r}) of multistage router {}: back NIC {dev} on switch {}, one",
        router.name, ms.name, ms.switch
    );
    let _ = writeln!(
        w,
        "// interface per front port ({f}), {}.",
        router.lookup.class()
    );
    let _ = writeln!(
        w,
        "// Generated by `bricks multistage config {} {}`.",
        o.source, router.name
    );
    let _ = writeln!(w, "//");
    run_command(w, o, &missing_macs(ms, ms.fronts()));
    let _ = writeln!(w, "//");
    let _ = writeln!(
        w,
        "// The balancers hand this router frames for its MAC for front port k"
    );
    let _ = writeln!(
        w,
        "// (02:4d:53:{r:02x}:KK:00); demux gives them to interface k, which routes as that"
    );
    let _ = writeln!(
        w,
        "// port would: ARP with G_k and F_k, ICMP errors from the port's address. What it"
    );
    let _ = writeln!(
        w,
        "// sends carries F_k as its source, and the switch takes it to the balancer the"
    );
    let _ = writeln!(
        w,
        "// next hop is behind. Probes from the balancers are answered by probe."
    );
    let _ = writeln!(
        w,
        "// Change routes while running: bricks ctl {} write rt.add PREFIX [GW] OUT.",
        o.control
    );
    let _ = writeln!(w);
    let _ = writeln!(w, "define(");
    let _ = writeln!(w, "    $BACKEND {},", o.backend);
    mac_defines(w, ms, ms.fronts());
    let _ = writeln!(w, "    $MTU 1500,");
    let _ = writeln!(w, ");");
    let _ = writeln!(w);

    let _ = writeln!(
        w,
        "// The back NIC: promiscuous, since every MAC of this router is a label."
    );
    let _ = writeln!(
        w,
        "in :: FromDevice({dev}, BACKEND $BACKEND, PROMISC true);"
    );
    let _ = writeln!(
        w,
        "q :: Queue({QUEUE_CAPACITY}) -> out :: ToDevice({dev}, BACKEND $BACKEND);"
    );
    let _ = writeln!(w, "c :: Classifier(12/88b7, -);");
    let _ = writeln!(w, "in -> c;");
    let _ = writeln!(
        w,
        "c[0] -> probe :: ProbeResponder(ROUTER {r}, FRONTS {f}) -> q;"
    );
    let _ = writeln!(w, "c[1] -> demux :: VRDemux(BY mac,");
    for (b, p) in ms.fronts() {
        let _ = writeln!(
            w,
            "    {} {},  // front port {}: {} {}",
            format_mac(&router_mac(r as u8, p.index)),
            p.index,
            p.index,
            ms.balancers[b].name,
            p.iface
        );
    }
    let _ = writeln!(w, "    BROADCAST replicate);");
    let _ = writeln!(w);

    // The route table.
    let _ = writeln!(
        w,
        "// The route table: output 0 is the router itself, output k + 1 leaves by"
    );
    let _ = writeln!(w, "// interface k (front port k).");
    let _ = writeln!(w, "rt :: {}(", router.lookup.class());
    let _ = writeln!(
        w,
        "    // The front ports' addresses, their subnets' network and broadcast"
    );
    let _ = writeln!(
        w,
        "    // addresses, the limited broadcast, local network control multicast."
    );
    for (_, p) in ms.fronts() {
        let _ = writeln!(w, "    {}/32 0,", p.address);
        if p.prefix_len < 31 {
            let _ = writeln!(w, "    {}/32 0,", broadcast(p.address, p.prefix_len));
            let _ = writeln!(w, "    {}/32 0,", network(p.address, p.prefix_len));
        }
    }
    let _ = writeln!(w, "    255.255.255.255/32 0,");
    let _ = writeln!(w, "    224.0.0.0/24 0,");
    let _ = writeln!(w, "    0.0.0.0/32 0,");
    let _ = writeln!(w, "    // The front subnets.");
    for (_, p) in ms.fronts() {
        let _ = writeln!(
            w,
            "    {}/{} {},",
            network(p.address, p.prefix_len),
            p.prefix_len,
            u16::from(p.index) + 1
        );
    }
    if !ms.routes.is_empty() {
        let _ = writeln!(w, "    // The routes of the file.");
    }
    for route in &ms.routes {
        let gw = route.gateway.map(|g| format!(" {g}")).unwrap_or_default();
        let _ = writeln!(
            w,
            "    {}/{}{gw} {},",
            route.prefix,
            route.len,
            u16::from(route.port) + 1
        );
    }
    let _ = writeln!(w, ");");
    let interfaces: Vec<String> = ms
        .fronts()
        .map(|(_, p)| format!("{}/{}", p.address, p.prefix_len))
        .collect();
    let _ = writeln!(
        w,
        "// The IP input path (RFC 1812 section 5.2.2; martians, section 5.3.7)."
    );
    let _ = writeln!(
        w,
        "ip :: CheckIPHeader(INTERFACES {}, MARTIANS true) -> GetIPAddress(16) -> rt;",
        interfaces.join(" ")
    );
    let _ = writeln!(
        w,
        "// The router itself: pings answered, the rest counted and dropped."
    );
    let _ = writeln!(w, "rt[0] -> ping :: ICMPPingResponder -> rt;");
    let _ = writeln!(w, "ping[1] -> local :: Discard;");

    for (b, p) in ms.fronts() {
        let k = p.index;
        let a = p.address;
        let _ = writeln!(w);
        let _ = writeln!(
            w,
            "// Interface {k}: front port {k}, {} {}, G_{k} = {a}/{}, F_{k} = $MAC{k}.",
            ms.balancers[b].name, p.iface, p.prefix_len
        );
        let _ = writeln!(
            w,
            "demux[{k}] -> c{k} :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);"
        );
        let _ = writeln!(w, "c{k}[0] -> ar{k} :: ARPResponder({a} $MAC{k}) -> q;");
        let _ = writeln!(
            w,
            "arpq{k} :: ARPQuerier({a}/{}, $MAC{k}) -> q;",
            p.prefix_len
        );
        let _ = writeln!(
            w,
            "// The balancers copy ARP replies for F_{k} to this router's MAC for port {k}:"
        );
        let _ = writeln!(w, "// addressed to F_{k} again, as the querier takes them.");
        let _ = writeln!(
            w,
            "c{k}[1] -> StoreEtherAddress($MAC{k}, dst) -> [1]arpq{k};"
        );
        let _ = writeln!(w, "c{k}[2] -> Strip(14) -> ip;");
        let _ = writeln!(w, "c{k}[3] -> other{k} :: Discard;");
        let _ = writeln!(w, "rt[{}] -> DropBroadcasts", u16::from(k) + 1);
        let _ = writeln!(w, "    -> gio{k} :: IPGWOptions({a})");
        let _ = writeln!(w, "    -> FixIPSrc({a})");
        let _ = writeln!(w, "    -> dt{k} :: DecIPTTL");
        let _ = writeln!(w, "    -> fr{k} :: IPFragmenter($MTU)");
        let _ = writeln!(w, "    -> [0]arpq{k};");
        let _ = writeln!(w, "dt{k}[1] -> ICMPError({a}, timeexceeded) -> rt;");
        let _ = writeln!(
            w,
            "fr{k}[1] -> ICMPError({a}, unreachable, needfrag) -> rt;"
        );
        let _ = writeln!(w, "gio{k}[1] -> ICMPError({a}, parameterproblem) -> rt;");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn example(name: &str) -> Multistage {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../conf/multistage")
            .join(name);
        Multistage::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn config_of(ms: &Multistage, node: &str) -> String {
        let n = ms.node(node).expect("a box of the example");
        node_config(ms, n, &ConfigOptions::new(ms, n, "2x2.toml"))
    }

    #[test]
    fn a_balancer_answers_arp_for_its_ports_and_feeds_the_balancer() {
        let ms = example("2x2.toml");
        let t = config_of(&ms, "lb2");
        assert!(
            t.contains(
                "//   bricks run lb2.click --control /run/bricks-multistage/2x2/lb2.sock \\\n\
                 //       -D MAC2=<lb2 ext0's MAC> \\\n//       -D MAC3=<lb2 ext1's MAC>\n"
            ),
            "{t}"
        );
        assert!(
            t.contains(
                "lb :: L2Balancer(FRONT 2 3, ROUTERS 2, BALANCER 1, BACKS 1, POLICY rr, \
                 DELTA 50ms, INTERVAL 50ms, MISSES 3, FRONT_MAC $MAC2 $MAC3);"
            ),
            "{t}"
        );
        // Front port 2 is lb2's first: input and output 0; G_2 = 10.2.0.1.
        assert!(t.contains("in_f2 :: FromDevice(ext0, BACKEND $BACKEND, PROMISC true);"));
        assert!(
            t.contains("c_f2 :: Classifier(12/0806 20/0001 38/0a020001, -);"),
            "{t}"
        );
        assert!(t.contains("c_f2[0] -> ar_f2 :: ARPResponder(10.2.0.1 $MAC2) -> q_f2;"));
        assert!(t.contains("c_f2[1] -> [0]lb;\nlb[0] -> q_f2;"));
        assert!(t.contains("c_f3[1] -> [1]lb;\nlb[1] -> q_f3;"));
        // The back port: lb's input 2 and output 2.
        assert!(t.contains("in_b0 :: FromDevice(back0, BACKEND $BACKEND, PROMISC true) -> [2]lb;"));
        assert!(t.contains(
            "lb[2] -> q_b0 :: Queue(1024) -> out_b0 :: ToDevice(back0, BACKEND $BACKEND);"
        ));
        assert!(
            t.contains("// Back port 0: back0 on switch sw, MAC 02:4d:42:01:00:00; lb output 2.")
        );
        assert!(t.contains("$MAC3 02:4d:46:00:03:01,  // F_3: lb2 ext1's MAC; give it with -D MAC3=... on every box"));
        assert!(!t.contains("$MAC0"), "{t}");
    }

    #[test]
    fn dtx_n_and_given_back_macs_reach_the_balancer() {
        let ms = example("dtx3.toml");
        let t = config_of(&ms, "lb1");
        assert!(t.contains("BACKS 3,"), "{t}");
        assert!(t.contains("// Mode DTX-3:"), "{t}");
        for j in 0..3 {
            assert!(
                t.contains(&format!("-> [2]lb;\nlb[{}] -> q_b{j} ", 2 + j)),
                "{t}"
            );
        }
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf/multistage/dtx3.toml"),
        )
        .unwrap()
        .replacen(
            "iface = \"back1\"",
            "iface = \"back1\"\n  mac = \"02:00:00:00:0b:01\"",
            1,
        );
        let ms = Multistage::from_toml(&text).unwrap();
        let t = config_of(&ms, "lb1");
        assert!(
            t.contains("BACK_MAC 02:4d:42:00:00:00 02:00:00:00:0b:01 02:4d:42:00:02:00);"),
            "{t}"
        );
    }

    #[test]
    fn odb_checks_and_looks_up_ipv4_before_the_balancer() {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf/multistage/2x2.toml"),
        )
        .unwrap()
        .replace("mode = \"dtx\"", "mode = \"odb\"");
        let ms = Multistage::from_toml(&text).unwrap();
        let t = config_of(&ms, "lb1");
        assert!(
            t.contains("c_f0 :: Classifier(12/0806 20/0001 38/0a000001, 12/0800, -);"),
            "{t}"
        );
        assert!(t.contains(
            "c_f0[1] -> Strip(14)\n    -> ip_f0 :: CheckIPHeader\n    -> GetIPAddress(16)\n    \
             -> rt_f0 :: StaticIPLookup(0.0.0.0/0 0)\n    -> Unstrip(14)\n    -> [0]lb;\n\
             c_f0[2] -> [0]lb;"
        ), "{t}");
    }

    #[test]
    fn a_router_has_one_interface_per_front_port() {
        let ms = example("2x2.toml");
        let t = config_of(&ms, "r2");
        assert!(
            t.contains("c[0] -> probe :: ProbeResponder(ROUTER 1, FRONTS 4) -> q;"),
            "{t}"
        );
        for k in 0..4u8 {
            assert!(
                t.contains(&format!("    02:4d:53:01:{k:02x}:00 {k},")),
                "{k}: {t}"
            );
            assert!(
                t.contains(&format!("demux[{k}] -> c{k} :: Classifier(")),
                "{t}"
            );
            assert!(t.contains(&format!(
                "c{k}[0] -> ar{k} :: ARPResponder(10.{k}.0.1 $MAC{k}) -> q;"
            )));
            assert!(t.contains(&format!(
                "arpq{k} :: ARPQuerier(10.{k}.0.1/24, $MAC{k}) -> q;"
            )));
            assert!(t.contains(&format!(
                "c{k}[1] -> StoreEtherAddress($MAC{k}, dst) -> [1]arpq{k};"
            )));
            assert!(t.contains(&format!("    10.{k}.0.0/24 {},\n", k + 1)));
            assert!(t.contains(&format!(
                "dt{k}[1] -> ICMPError(10.{k}.0.1, timeexceeded) -> rt;"
            )));
        }
        assert!(t.contains("    BROADCAST replicate);"));
        assert!(t.contains("rt :: RadixIPLookup("));
        assert!(t.contains("    0.0.0.0/0 10.3.0.254 4,\n"), "{t}");
        assert!(t.contains(
            "ip :: CheckIPHeader(INTERFACES 10.0.0.1/24 10.1.0.1/24 10.2.0.1/24 10.3.0.1/24, \
             MARTIANS true) -> GetIPAddress(16) -> rt;"
        ));
        // Every front MAC is wanted on a router.
        for k in 0..4 {
            assert!(t.contains(&format!("-D MAC{k}=<")), "{t}");
        }
    }

    #[test]
    fn given_front_macs_need_no_define() {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf/multistage/2x2.toml"),
        )
        .unwrap()
        .replacen(
            "address = \"10.0.0.1/24\"",
            "address = \"10.0.0.1/24\"\n  mac = \"02:00:00:00:00:10\"",
            1,
        );
        let ms = Multistage::from_toml(&text).unwrap();
        let t = config_of(&ms, "lb1");
        assert!(
            t.contains("    $MAC0 02:00:00:00:00:10,  // F_0: lb1 ext0\n"),
            "{t}"
        );
        assert!(!t.contains("-D MAC0"), "{t}");
        assert!(t.contains("-D MAC1=<lb1 ext1's MAC>"), "{t}");
    }
}
