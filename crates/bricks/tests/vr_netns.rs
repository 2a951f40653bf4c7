//! Virtual routers between real Linux hosts: two tenants, `red` and
//! `blue`, with the same addresses (10.0.0.0/24 on one side, 10.1.0.0/24
//! on the other), each routed by its own virtual router inside one
//! `bricks run` in a namespace, over shared links demultiplexed by 802.1Q
//! VLAN, by destination MAC, and by the outer address of IP-in-IP
//! tunnels. The configuration is the one `bricks vr config` expands from a
//! virtual-router file. The hosts' own tools check what each tenant gets
//! (pings, TCP transfers checked byte for byte, ARP learnt with no static
//! entry, time exceeded from the tenant's own router) and what it must
//! never get (the other tenant's packets, counted by the hosts' kernels
//! and captured on their interfaces).
//!
//! Hosts sit on VLANs through real 802.1Q devices where the kernel has
//! them, and through a user-space access switch otherwise
//! (`bricks_netns::vlan`); IP-in-IP likewise through `ipip` devices or a
//! user-space endpoint (`bricks_netns::ipip`).
//!
//! Needs root (skipped otherwise, a failure under CI=true). Each test
//! builds its own network, named uniquely, and deletes it when it ends.

#[allow(dead_code)] // shared with the other namespace tests
mod common;

use bricks_netns::ipip::{have_kernel_ipip, IpipTunnel};
use bricks_netns::vlan::{have_kernel_vlan, VlanSwitch};
use bricks_netns::{output_timeout, skip_unless_root, Captured, Network};
use common::LiveRouter;
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

fn bricks() -> &'static str {
    env!("CARGO_BIN_EXE_bricks")
}

/// A test network with the virtual routers running in namespace `r`.
struct Lab {
    // Fields drop in order: the router ends before the switches and
    // tunnels, and those before the network goes.
    router: Option<LiveRouter>,
    switches: Vec<VlanSwitch>,
    tunnels: Vec<IpipTunnel>,
    net: Network,
    dir: tempfile::TempDir,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
        net.add_namespace("r").unwrap();
        net.sysctl("r", "net.ipv4.ip_forward", "0").unwrap();
        Lab {
            router: None,
            switches: Vec::new(),
            tunnels: Vec::new(),
            net,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn host(&mut self, name: &str) {
        self.net.add_namespace(name).unwrap();
        for key in [
            "net.ipv6.conf.all.disable_ipv6",
            "net.ipv6.conf.default.disable_ipv6",
        ] {
            self.net.sysctl(name, key, "1").unwrap();
        }
    }

    /// A trunk from the router's `dev` to switch namespace `sw`, with one
    /// host per `(host, vlan, address/len, gateway)` on that VLAN.
    fn trunk(&mut self, sw: &str, dev: &str, hosts: &[(&str, u16, &str, &str)]) {
        self.net.add_namespace(sw).unwrap();
        self.net.add_link(sw, "trunk", "r", dev, 1).unwrap();
        self.net.disable_offloads("r", dev).unwrap();
        self.net.disable_offloads(sw, "trunk").unwrap();
        let kernel = have_kernel_vlan();
        let mut access = Vec::new();
        for &(host, vlan, addr, gw) in hosts {
            self.host(host);
            if kernel {
                // A real VLAN device on the trunk, moved into the host.
                let (swns, hostns) = (self.net.ns_name(sw), self.net.ns_name(host));
                let v = format!("v{vlan}");
                let vid = vlan.to_string();
                for args in [
                    vec![
                        "-n", &swns, "link", "add", "link", "trunk", "name", &v, "type", "vlan",
                        "id", &vid,
                    ],
                    vec!["-n", &swns, "link", "set", &v, "netns", &hostns],
                    vec!["-n", &hostns, "link", "set", &v, "name", "eth0"],
                    vec!["-n", &hostns, "link", "set", "eth0", "up"],
                ] {
                    bricks_netns::ip(&args).unwrap();
                }
            } else {
                let port = format!("p{vlan}");
                self.net.add_link(host, "eth0", sw, &port, 1).unwrap();
                self.net.disable_offloads(host, "eth0").unwrap();
                access.push((port, vlan));
            }
            self.net.add_addr(host, "eth0", addr).unwrap();
            self.net.add_route(host, &["default", "via", gw]).unwrap();
        }
        if !kernel {
            let ports: Vec<(&str, u16)> = access.iter().map(|(p, v)| (p.as_str(), *v)).collect();
            let swns = self.net.ns_name(sw);
            self.switches
                .push(VlanSwitch::start(&swns, "trunk", &ports).unwrap());
        }
    }

    /// Expands `vr` (a virtual-router file) with `bricks vr config` and
    /// runs it in `r` with one control socket per router.
    fn start(&mut self, vr: &str, threads: usize, backend: &str) {
        let file = self.dir.path().join("routers.toml");
        std::fs::write(&file, vr).unwrap();
        let conf = self.dir.path().join("routers.click");
        let out = std::process::Command::new(bricks())
            .args(["vr", "config"])
            .arg(&file)
            .arg("-o")
            .arg(&conf)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "bricks vr config: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let defines = vec![format!("BACKEND={backend}")];
        let args: Vec<String> = ["red", "blue"]
            .iter()
            .flat_map(|r| {
                [
                    "--router-control".to_string(),
                    format!("{r}={}", self.socket(r).display()),
                ]
            })
            .collect();
        self.router = Some(LiveRouter::start_with(
            &self.net, "r", &conf, threads, &defines, &args,
        ));
    }

    fn socket(&self, router: &str) -> PathBuf {
        self.dir.path().join(format!("{router}.sock"))
    }

    fn router(&self) -> &LiveRouter {
        self.router.as_ref().expect("router started")
    }

    fn stderr(&self) -> String {
        self.router.as_ref().map(|r| r.stderr()).unwrap_or_default()
    }

    fn run(&self, ns: &str, argv: &[&str], secs: u64) -> Output {
        output_timeout(&mut self.net.exec(ns, argv), Duration::from_secs(secs))
            .unwrap_or_else(|e| panic!("{e}\nrouter stderr:\n{}", self.stderr()))
    }

    fn ping_ok(&self, from: &str, to: &str, count: u32) -> bool {
        let n = count.to_string();
        let out = self.run(
            from,
            &["ping", "-n", "-c", &n, "-i", "0.2", "-W", "2", to],
            30,
        );
        String::from_utf8_lossy(&out.stdout).contains(&format!("{count} received"))
    }

    fn ping(&self, from: &str, to: &str) {
        assert!(
            self.ping_ok(from, to, 3),
            "ping {from} -> {to} failed\nrouter stderr:\n{}",
            self.stderr()
        );
    }

    /// A field of `/proc/net/snmp` in namespace `ns`.
    fn snmp(&self, ns: &str, proto: &str, field: &str) -> u64 {
        let out = self.run(ns, &["cat", "/proc/net/snmp"], 5);
        let text = String::from_utf8_lossy(&out.stdout);
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(&format!("{proto}:")))
            .collect();
        rows[0]
            .split_whitespace()
            .zip(rows[1].split_whitespace())
            .find(|(n, _)| *n == field)
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or_else(|| panic!("no {proto} {field} in /proc/net/snmp"))
    }

    /// Pings `to` from `from`; the echo requests must reach `own` and not
    /// `other` (the other tenant's host with the same address).
    fn ping_reaches_only(&self, from: &str, to: &str, own: &str, other: &str) {
        let (own0, other0) = (
            self.snmp(own, "Icmp", "InEchos"),
            self.snmp(other, "Icmp", "InEchos"),
        );
        self.ping(from, to);
        let (own1, other1) = (
            self.snmp(own, "Icmp", "InEchos"),
            self.snmp(other, "Icmp", "InEchos"),
        );
        assert!(own1 >= own0 + 3, "{own} got {} of 3 echoes", own1 - own0);
        assert_eq!(
            other1, other0,
            "{other} (the other tenant) got echoes meant for {own}"
        );
    }

    fn check_neighbour(&self, host: &str, router_ip: &str) -> String {
        let out = self.run(host, &["ip", "neigh", "show", router_ip], 5);
        let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
        assert!(
            ["reachable", "stale", "delay", "probe"]
                .iter()
                .any(|s| text.contains(s))
                && !text.contains("permanent"),
            "{host}'s entry for {router_ip} is not a learnt one: {text}"
        );
        text
    }

    fn ttl_exceeded(&self, from: &str, to: &str, gw: &str) {
        let out = self.run(
            from,
            &["ping", "-n", "-c", "1", "-t", "1", "-W", "2", to],
            10,
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("From {gw}")) && text.contains("Time to live exceeded"),
            "ping -t 1 from {from}: no time exceeded from {gw}:\n{text}\nrouter stderr:\n{}",
            self.stderr()
        );
    }

    /// Starts a TCP receiver of `bytes` bytes at `addr` in `ns`.
    fn tcp_server(&self, ns: &str, addr: &str, bytes: u64) -> Captured {
        let b = bytes.to_string();
        Captured::spawn(&mut self.net.exec(
            ns,
            &[
                bricks(),
                "demo",
                "tcp-serve",
                "--listen",
                addr,
                "--bytes",
                &b,
            ],
        ))
        .unwrap()
    }

    fn tcp_send(&self, ns: &str, addr: &str, bytes: u64) -> Captured {
        let b = bytes.to_string();
        Captured::spawn(&mut self.net.exec(
            ns,
            &[bricks(), "demo", "tcp-send", "--to", addr, "--bytes", &b],
        ))
        .unwrap()
    }

    fn tcp_result(&self, server: Captured, bytes: u64) {
        let got = server.wait(Duration::from_secs(60), None).unwrap();
        let text = String::from_utf8_lossy(&got.stdout);
        let result: serde_json::Value = text
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| {
                panic!(
                    "tcp-serve printed no result: {text}{}\nrouter stderr:\n{}",
                    String::from_utf8_lossy(&got.stderr),
                    self.stderr()
                )
            });
        assert_eq!(result["intact"], true, "{result}");
        assert_eq!(result["received"].as_u64(), Some(bytes), "{result}");
    }

    /// Starts tcpdump in `ns` counting frames that match `filter`.
    fn capture(&self, ns: &str, filter: &str) -> Captured {
        let mut argv = vec!["tcpdump", "-i", "eth0", "-n", "-l", "-p"];
        argv.extend(filter.split(' '));
        Captured::spawn(&mut self.net.exec(ns, &argv)).unwrap()
    }

    /// Stops a capture; a line per frame it saw.
    fn captured(&self, cap: Captured) -> Vec<String> {
        std::thread::sleep(Duration::from_millis(300));
        let _ = std::process::Command::new("kill")
            .args(["-INT", &cap.id().to_string()])
            .status();
        let out = cap.wait(Duration::from_secs(5), None).unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `bricks ctl SOCKET args...`.
    fn ctl(&self, router: &str, args: &[&str]) -> Output {
        std::process::Command::new(bricks())
            .arg("ctl")
            .arg(self.socket(router))
            .args(args)
            .output()
            .unwrap()
    }

    fn counter_sum(&self, prefix: &str, counter: &str) -> u64 {
        let stats = self.router().stats();
        let Some(s) = stats.as_ref() else { return 0 };
        s["workers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w["elements"].as_object())
            .flat_map(|e| e.iter())
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(_, c)| c[counter].as_u64().unwrap_or(0))
            .sum()
    }

    fn finish(mut self) {
        let prefix = self.net.prefix().to_string();
        if let Some(r) = self.router.as_mut() {
            assert!(
                r.child.try_wait().is_none(),
                "the router ended during the test:\n{}",
                r.stderr()
            );
        }
        drop(self);
        let left: Vec<String> = bricks_netns::list_namespaces()
            .unwrap()
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}

/// The two tenants' routers on VLAN trunks eth0 (VLANs 10 and 20) and eth1
/// (110 and 120), the same addresses in both.
fn vlan_file(mac0: &str, mac1: &str) -> String {
    format!(
        r#"
[[link]]
name = "eth0"
mac = "{mac0}"
demux = "vlan"

[[link]]
name = "eth1"
mac = "{mac1}"
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
  prefix = "10.77.0.0/16"
  gateway = "10.1.0.2"

[[router]]
name = "blue"
weight = 1
lookup = "RadixIPLookup"

  [[router.interface]]
  link = "eth0"
  vlan = 20
  address = "10.0.0.1/24"

  [[router.interface]]
  link = "eth1"
  vlan = 120
  address = "10.1.0.1/24"

  [[router.route]]
  prefix = "10.88.0.0/16"
  gateway = "10.1.0.2"
"#
    )
}

fn vlan_tenants(tag: &str, backend: &str, threads: usize) {
    let name = format!("vr_netns vlan {backend} {threads} worker(s)");
    if skip_unless_root(&name).is_some() {
        return;
    }
    let mut lab = Lab::new(tag);
    lab.trunk(
        "sw0",
        "eth0",
        &[
            ("a0", 10, "10.0.0.2/24", "10.0.0.1"),
            ("b0", 20, "10.0.0.2/24", "10.0.0.1"),
            ("c0", 30, "10.0.0.3/24", "10.0.0.1"),
        ],
    );
    lab.trunk(
        "sw1",
        "eth1",
        &[
            ("a1", 110, "10.1.0.2/24", "10.1.0.1"),
            ("b1", 120, "10.1.0.2/24", "10.1.0.1"),
        ],
    );
    let (mac0, mac1) = (
        lab.net.mac("r", "eth0").unwrap(),
        lab.net.mac("r", "eth1").unwrap(),
    );
    lab.start(&vlan_file(&mac0, &mac1), threads, backend);

    // Each tenant reaches its own far host, never the other tenant's, with
    // the same addresses on both.
    lab.ping_reaches_only("a0", "10.1.0.2", "a1", "b1");
    lab.ping_reaches_only("b0", "10.1.0.2", "b1", "a1");
    lab.ping_reaches_only("a1", "10.0.0.2", "a0", "b0");
    lab.ping_reaches_only("b1", "10.0.0.2", "b0", "a0");
    // Each router answers for its own address.
    lab.ping("a0", "10.0.0.1");
    lab.ping("b1", "10.1.0.1");
    // ARP, nothing static: the hosts learnt their router's MAC.
    assert!(lab
        .check_neighbour("a0", "10.0.0.1")
        .contains(&mac0.to_lowercase()));
    assert!(lab
        .check_neighbour("b1", "10.1.0.1")
        .contains(&mac1.to_lowercase()));
    // Time exceeded from the tenant's own router.
    lab.ttl_exceeded("a0", "10.1.0.2", "10.0.0.1");
    lab.ttl_exceeded("b0", "10.1.0.2", "10.0.0.1");

    // A TCP transfer per tenant at once, to the same address, each
    // arriving whole at its own host; red's goes to port 5001 and blue's
    // to 5002, and a capture on each receiver sees its own tenant's
    // segments and none of the other's.
    let (ra, rb) = (6u64 << 20, 4u64 << 20);
    let cap_a = lab.capture("a1", "tcp");
    let cap_b = lab.capture("b1", "tcp");
    let sa = lab.tcp_server("a1", "10.1.0.2:5001", ra);
    let sb = lab.tcp_server("b1", "10.1.0.2:5002", rb);
    std::thread::sleep(Duration::from_millis(300));
    let ca = lab.tcp_send("a0", "10.1.0.2:5001", ra);
    let cb = lab.tcp_send("b0", "10.1.0.2:5002", rb);
    lab.tcp_result(sa, ra);
    lab.tcp_result(sb, rb);
    for c in [ca, cb] {
        let out = c.wait(Duration::from_secs(30), None).unwrap();
        assert!(
            out.status.success(),
            "tcp-send: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for (host, cap, own, other) in [
        ("a1", cap_a, ".5001", ".5002"),
        ("b1", cap_b, ".5002", ".5001"),
    ] {
        let lines = lab.captured(cap);
        // The server's address and port as tcpdump prints them, to it
        // ("10.1.0.2.5001:") or from it ("10.1.0.2.5001 >"); a client's
        // ephemeral port such as 50012 must not count.
        let count = |port: &str| {
            let (to, from) = (format!("10.1.0.2{port}:"), format!("10.1.0.2{port} >"));
            lines
                .iter()
                .filter(|l| l.contains(&to) || l.contains(&from))
                .count()
        };
        assert!(
            count(own) > 100,
            "{host} captured {} of its own segments",
            count(own)
        );
        assert_eq!(count(other), 0, "{host} saw the other tenant's transfer");
    }

    // A host on a VLAN no router has gets nowhere, and the router counts it.
    assert!(!lab.ping_ok("c0", "10.0.0.1", 2));
    lab.router()
        .wait_for("unknown VLAN drops", Duration::from_secs(5), |_| {
            lab.counter_sum("", "unknown_tag") >= 2
        });

    // One tenant's routes change while the other's traffic flows: nothing
    // of the other is lost, and the change is the tenant's alone.
    bricks_netns::run(
        &mut lab
            .net
            .exec("a1", &["ip", "addr", "add", "10.99.0.1/32", "dev", "lo"]),
    )
    .unwrap();
    bricks_netns::run(
        &mut lab
            .net
            .exec("b1", &["ip", "addr", "add", "10.99.0.1/32", "dev", "lo"]),
    )
    .unwrap();
    let flood = Captured::spawn(&mut lab.net.exec(
        "b0",
        &[
            "ping", "-n", "-q", "-c", "300", "-i", "0.01", "-W", "2", "10.1.0.2",
        ],
    ))
    .unwrap();
    for i in 0..40 {
        let route = format!("10.{}.0.0/16 10.1.0.2 2", 100 + i);
        let out = lab.ctl("red", &["write", "rt.add", &route]);
        assert!(
            out.status.success(),
            "red's rt.add {route}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = lab.ctl("red", &["write", "rt.add", "10.99.0.0/16 10.1.0.2 2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    for i in 0..40 {
        let prefix = format!("10.{}.0.0/16", 100 + i);
        let out = lab.ctl("red", &["write", "rt.remove", &prefix]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let out = flood.wait(Duration::from_secs(30), None).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("300 received"),
        "blue's pings while red's routes changed:\n{text}"
    );
    // red now reaches 10.99.0.1 (at a1); blue does not have that route.
    lab.ping_reaches_only("a0", "10.99.0.1", "a1", "b1");
    assert!(!lab.ping_ok("b0", "10.99.0.1", 2));
    // red's socket cannot touch blue.
    let out = lab.ctl("red", &["write", "blue/rt.add", "10.99.0.0/16 10.1.0.2 2"]);
    assert!(
        !out.status.success() || String::from_utf8_lossy(&out.stdout).starts_with("error"),
        "red's socket wrote to blue's table"
    );
    assert!(!lab.ping_ok("b0", "10.99.0.1", 2));
    lab.finish();
}

#[test]
fn vlan_tenants_af_xdp_one_worker() {
    vlan_tenants("vrx1", "xdp", 1);
}

#[test]
fn vlan_tenants_af_packet_two_workers() {
    vlan_tenants("vrp2", "packet", 2);
}

/// Two routers with a MAC each on each shared link; their hosts share
/// the link's LAN (a Linux bridge) and use their own router as gateway.
fn mac_file(macs: &[String; 4]) -> String {
    format!(
        r#"
[[link]]
name = "eth0"
demux = "mac"
broadcast = "replicate"

[[link]]
name = "eth1"
demux = "mac"
broadcast = "replicate"

[[router]]
name = "red"

  [[router.interface]]
  link = "eth0"
  mac = "{}"
  address = "10.0.0.1/24"

  [[router.interface]]
  link = "eth1"
  mac = "{}"
  address = "10.1.0.1/24"

  [[router.route]]
  prefix = "10.77.0.0/16"
  gateway = "10.1.0.2"

[[router]]
name = "blue"

  [[router.interface]]
  link = "eth0"
  mac = "{}"
  address = "10.0.0.254/24"

  [[router.interface]]
  link = "eth1"
  mac = "{}"
  address = "10.1.0.254/24"

  [[router.route]]
  prefix = "10.88.0.0/16"
  gateway = "10.1.0.3"
"#,
        macs[0], macs[1], macs[2], macs[3]
    )
}

/// A LAN: a Linux bridge in namespace `sw` joining the router's `dev` and
/// one host per `(host, address/len, gateway)`.
fn lan(lab: &mut Lab, sw: &str, dev: &str, hosts: &[(&str, &str, &str)]) {
    lab.net.add_namespace(sw).unwrap();
    lab.net.add_link(sw, "uplink", "r", dev, 1).unwrap();
    lab.net.disable_offloads("r", dev).unwrap();
    let swns = lab.net.ns_name(sw);
    bricks_netns::ip(&["-n", &swns, "link", "add", "br0", "type", "bridge"]).unwrap();
    bricks_netns::ip(&["-n", &swns, "link", "set", "uplink", "master", "br0"]).unwrap();
    for (i, &(host, addr, gw)) in hosts.iter().enumerate() {
        lab.host(host);
        let port = format!("p{i}");
        lab.net.add_link(host, "eth0", sw, &port, 1).unwrap();
        lab.net.disable_offloads(host, "eth0").unwrap();
        bricks_netns::ip(&["-n", &swns, "link", "set", &port, "master", "br0"]).unwrap();
        lab.net.add_addr(host, "eth0", addr).unwrap();
        lab.net.add_route(host, &["default", "via", gw]).unwrap();
    }
    bricks_netns::ip(&["-n", &swns, "link", "set", "br0", "up"]).unwrap();
}

#[test]
fn mac_demultiplexed_routers_on_shared_lans() {
    if skip_unless_root("mac_demultiplexed_routers_on_shared_lans").is_some() {
        return;
    }
    let mut lab = Lab::new("vrm");
    lan(
        &mut lab,
        "sw0",
        "eth0",
        &[
            ("a0", "10.0.0.2/24", "10.0.0.1"),
            ("b0", "10.0.0.3/24", "10.0.0.254"),
        ],
    );
    lan(
        &mut lab,
        "sw1",
        "eth1",
        &[
            ("a1", "10.1.0.2/24", "10.1.0.1"),
            ("b1", "10.1.0.3/24", "10.1.0.254"),
        ],
    );
    let macs = [
        "02:00:00:00:0a:00".to_string(),
        "02:00:00:00:0a:01".to_string(),
        "02:00:00:00:0b:00".to_string(),
        "02:00:00:00:0b:01".to_string(),
    ];
    lab.start(&mac_file(&macs), 1, "xdp");
    // Each host resolves its own router's address to that router's MAC
    // (the ARP request was replicated to both routers; only the owner
    // answered) and reaches the far side through it.
    lab.ping("a0", "10.1.0.2");
    lab.ping("b0", "10.1.0.3");
    lab.ping("a1", "10.0.0.2");
    assert!(lab
        .check_neighbour("a0", "10.0.0.1")
        .contains("02:00:00:00:0a:00"));
    assert!(lab
        .check_neighbour("b0", "10.0.0.254")
        .contains("02:00:00:00:0b:00"));
    assert!(lab
        .check_neighbour("b1", "10.1.0.254")
        .contains("02:00:00:00:0b:01"));
    lab.ttl_exceeded("b0", "10.1.0.3", "10.0.0.254");
    // Each router forwarded its own tenant's pings only: red's and blue's
    // own counters.
    let server = lab.tcp_server("b1", "10.1.0.3:5001", 4 << 20);
    std::thread::sleep(Duration::from_millis(300));
    let client = lab.tcp_send("b0", "10.1.0.3:5001", 4 << 20);
    lab.tcp_result(server, 4 << 20);
    let _ = client.wait(Duration::from_secs(30), None);
    // The demultiplexer handed blue's transfer to blue (output 1 on each
    // link: routers in file order), red got only its pings.
    let demux = |link: &str, out: &str| lab.router().counter(&format!("{link}/demux"), out);
    lab.router().wait_for(
        "blue's frames at eth0's demultiplexer",
        Duration::from_secs(5),
        |_| demux("eth0", "out1") > 1000,
    );
    let (red, blue) = (demux("eth0", "out0"), demux("eth0", "out1"));
    assert!(
        blue > 1000 && red < 100,
        "eth0's demultiplexer: red {red}, blue {blue} frames (blue carried 4 MiB)"
    );
    lab.finish();
}

/// Two routers reached through IP-in-IP tunnels ending at addresses of
/// their own on one underlay link (192.0.2.0/24), and by VLAN on the far
/// side.
fn ipip_file(mac0: &str, mac1: &str) -> String {
    format!(
        r#"
[[link]]
name = "eth0"
mac = "{mac0}"
demux = "ipip"
address = "192.0.2.1/24"

[[link]]
name = "eth1"
mac = "{mac1}"
demux = "vlan"

[[router]]
name = "red"

  [[router.interface]]
  link = "eth0"
  tunnel = {{ local = "192.0.2.10", remote = "192.0.2.2" }}
  address = "10.0.0.1/30"

  [[router.interface]]
  link = "eth1"
  vlan = 110
  address = "10.1.0.1/24"

  [[router.route]]
  prefix = "10.50.0.0/16"
  gateway = "10.0.0.2"

[[router]]
name = "blue"

  [[router.interface]]
  link = "eth0"
  tunnel = {{ local = "192.0.2.11", remote = "192.0.2.3" }}
  address = "10.0.0.1/30"

  [[router.interface]]
  link = "eth1"
  vlan = 120
  address = "10.1.0.1/24"

  [[router.route]]
  prefix = "10.50.0.0/16"
  gateway = "10.0.0.2"
"#
    )
}

#[test]
fn ip_in_ip_tunnels_to_each_tenant() {
    if skip_unless_root("ip_in_ip_tunnels_to_each_tenant").is_some() {
        return;
    }
    let mut lab = Lab::new("vri");
    lan(
        &mut lab,
        "sw0",
        "eth0",
        &[
            ("a0", "192.0.2.2/24", "192.0.2.1"),
            ("b0", "192.0.2.3/24", "192.0.2.1"),
        ],
    );
    lab.trunk(
        "sw1",
        "eth1",
        &[
            ("a1", 110, "10.1.0.2/24", "10.1.0.1"),
            ("b1", 120, "10.1.0.2/24", "10.1.0.1"),
        ],
    );
    // Each tenant's tunnel: 10.0.0.2 inside, to its router's endpoint.
    let kernel = have_kernel_ipip();
    for (host, local, remote) in [
        ("a0", "192.0.2.2", "192.0.2.10"),
        ("b0", "192.0.2.3", "192.0.2.11"),
    ] {
        let ns = lab.net.ns_name(host);
        if kernel {
            bricks_netns::ip(&[
                "-n", &ns, "link", "add", "tun0", "type", "ipip", "local", local, "remote", remote,
            ])
            .unwrap();
        } else {
            lab.tunnels
                .push(IpipTunnel::start(&ns, "tun0", remote.parse().unwrap()).unwrap());
        }
        bricks_netns::ip(&["-n", &ns, "addr", "add", "10.0.0.2/30", "dev", "tun0"]).unwrap();
        // The kernel's ipip devices have the underlay's MTU less the
        // outer header; the user-space one gets the same.
        bricks_netns::ip(&["-n", &ns, "link", "set", "tun0", "mtu", "1480", "up"]).unwrap();
        bricks_netns::ip(&["-n", &ns, "route", "add", "10.1.0.0/24", "dev", "tun0"]).unwrap();
    }
    let (mac0, mac1) = (
        lab.net.mac("r", "eth0").unwrap(),
        lab.net.mac("r", "eth1").unwrap(),
    );
    lab.start(&ipip_file(&mac0, &mac1), 1, "xdp");
    lab.ping_reaches_only("a0", "10.1.0.2", "a1", "b1");
    lab.ping_reaches_only("b0", "10.1.0.2", "b1", "a1");
    lab.ping("a0", "10.0.0.1");
    let server = lab.tcp_server("a1", "10.1.0.2:5001", 2 << 20);
    std::thread::sleep(Duration::from_millis(300));
    let client = lab.tcp_send("a0", "10.1.0.2:5001", 2 << 20);
    lab.tcp_result(server, 2 << 20);
    let _ = client.wait(Duration::from_secs(30), None);
    // The underlay: the hosts learnt the box's MAC for the tunnel ends.
    assert!(lab
        .check_neighbour("a0", "192.0.2.10")
        .contains(&mac0.to_lowercase()));
    lab.finish();
}
