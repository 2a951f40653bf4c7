//! RouteBricks clusters in network namespaces, driven through `bricks
//! cluster up/status/kill/restart/down` as a user would: the four-server
//! full mesh of conf/cluster/rb4.toml carries ping, TCP (checked byte for
//! byte) and UDP between every pair of hosts; load balancing reorders less
//! with flowlets than without; a server killed mid-stream costs the flows
//! through it well under a second and is used again once restarted; the
//! 3-ary 2-fly of conf/cluster/fly.toml forwards between its hosts. Every
//! cluster is taken down at the end, failed or not, and no namespace is
//! left.
//!
//! Needs root (skipped otherwise, a failure under CI=true). The clusters
//! run under names unique to this process; the tests take turns, since
//! four or nine routers already share the machine's CPUs.

use bricks_netns::{output_timeout, skip_unless_root, Captured};
use serde_json::Value;
use std::time::{Duration, Instant};

#[allow(dead_code)] // shared with the other tests
mod common;

use common::{bricks_within as bricks, one_at_a_time, root, Brought, BRICKS};

/// The text of `file` with the cluster's external rate set to `bps` (the
/// top-level `rate` key).
fn with_rate(file: &str, bps: u64) -> String {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let mut out = String::new();
    let mut top = true;
    let mut done = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') {
            if top && !done {
                out.push_str(&format!("rate = \"{bps}bps\"\n"));
                done = true;
            }
            top = false;
        }
        if top && !done && t.split('=').next().unwrap_or("").trim() == "rate" {
            out.push_str(&format!("rate = \"{bps}bps\"\n"));
            done = true;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Cluster boxes brought up by `bricks cluster up`, taken down when dropped.
type Up = Brought;

impl Up {
    /// `bricks cluster up` on `text` under a name unique to this process
    /// and `tag`.
    fn start(tag: &str, text: &str) -> Up {
        Brought::up("cluster", "bc", tag, text, &[])
    }

    fn hosts(&self) -> Vec<Value> {
        self.state["hosts"].as_array().unwrap().clone()
    }

    fn host(&self, i: usize) -> (String, String, String, String) {
        let h = &self.state["hosts"][i];
        let s = |k: &str| h[k].as_str().unwrap().to_string();
        (s("namespace"), s("address"), s("iface"), s("gateway_mac"))
    }

    fn node_index(&self, name: &str) -> usize {
        self.state["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .position(|n| n["name"] == name)
            .unwrap()
    }

    /// The server behind host `h`.
    fn node_of_host(&self, h: usize) -> usize {
        self.node_index(self.state["hosts"][h]["node"].as_str().unwrap())
    }

    fn socket(&self, node: usize) -> String {
        self.state["nodes"][node]["socket"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn node_name(&self, node: usize) -> String {
        self.state["nodes"][node]["name"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// A server's VLBNode counters (summed over workers).
    fn counters(&self, node: usize) -> Value {
        let (ok, out) = bricks(
            &["ctl", &self.socket(node), "stats"],
            Duration::from_secs(10),
        );
        assert!(ok, "{out}");
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        let name = v["workers"][0]["elements"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(_, e)| e["class"] == "VLBNode")
            .map(|(n, _)| n.clone())
            .expect("a VLBNode");
        v["total"][&name].clone()
    }

    fn counter(&self, node: usize, k: &str) -> u64 {
        self.counters(node)[k].as_u64().unwrap_or(0)
    }

    fn vlb_element(&self, node: usize) -> String {
        let (ok, out) = bricks(
            &["ctl", &self.socket(node), "stats"],
            Duration::from_secs(10),
        );
        assert!(ok, "{out}");
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        v["workers"][0]["elements"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(_, e)| e["class"] == "VLBNode")
            .map(|(n, _)| n.clone())
            .unwrap()
    }

    fn ping(&self, from: usize, to: usize) -> Result<(), String> {
        let (ns, _, _, _) = self.host(from);
        let (_, dst, _, _) = self.host(to);
        // The first packets wait for ARP at both ends: a few tries.
        let out = output_timeout(
            &mut self.exec(
                &ns,
                &["ping", "-n", "-c", "3", "-i", "0.2", "-W", "2", &dst],
            ),
            Duration::from_secs(20),
        )
        .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if text.contains(" 0 received") || !out.status.success() && !text.contains("received") {
            return Err(format!("ping {ns} -> {dst}: {text}"));
        }
        Ok(())
    }

    /// bricks gen from every `(from, [to...])` at `rate` packets/s for
    /// `count` packets each; bricks sink in every receiver. Returns (sent,
    /// received, reordered probes, probes).
    fn udp(
        &self,
        flows: &[(usize, Vec<usize>)],
        rate: u64,
        count: u64,
        nflows: u32,
    ) -> (u64, u64, u64, u64) {
        let r = self.finish_udp(self.start_udp(flows, rate, count, nflows, false));
        (r.sent, r.received, r.reordered, r.probes)
    }

    /// Starts [`Up::udp`]'s senders and sinks.
    /// `round_robin`: the generators take their flows in turn, so that
    /// each flow's packets are evenly spaced.
    fn start_udp(
        &self,
        flows: &[(usize, Vec<usize>)],
        rate: u64,
        count: u64,
        nflows: u32,
        round_robin: bool,
    ) -> Udp {
        let mut rx: Vec<usize> = flows.iter().flat_map(|f| f.1.clone()).collect();
        rx.sort_unstable();
        rx.dedup();
        let secs = count as f64 / rate as f64;
        let dur = format!("{}", secs + 3.0);
        let mut sinks = Vec::new();
        for &h in &rx {
            let (ns, _, iface, _) = self.host(h);
            sinks.push(
                Captured::spawn(&mut self.exec(
                    &ns,
                    &[
                        BRICKS,
                        "sink",
                        &iface,
                        "--duration",
                        &dur,
                        "--backend",
                        "packet",
                        "--json",
                    ],
                ))
                .unwrap(),
            );
        }
        std::thread::sleep(Duration::from_millis(800));
        let mut gens = Vec::new();
        for (from, to) in flows {
            let (ns, src, iface, mac) = self.host(*from);
            let dst: Vec<String> = to.iter().map(|&t| self.host(t).1).collect();
            gens.push(
                Captured::spawn(&mut self.exec(
                    &ns,
                    &[
                        BRICKS,
                        "gen",
                        &iface,
                        "--rate",
                        &rate.to_string(),
                        "--count",
                        &count.to_string(),
                        "--src",
                        &src,
                        "--dst",
                        &dst.join(","),
                        "--dst-mac",
                        &mac,
                        "--flows",
                        &nflows.to_string(),
                        "--size",
                        "64",
                        "--backend",
                        "packet",
                        "--json",
                        if round_robin {
                            "--round-robin"
                        } else {
                            "--seed=1" // the default: no change
                        },
                    ],
                ))
                .unwrap(),
            );
        }
        Udp { sinks, gens, secs }
    }

    /// Waits for traffic of [`Up::start_udp`] and sums the reports.
    fn finish_udp(&self, u: Udp) -> UdpResult {
        let Udp { sinks, gens, secs } = u;
        let json = |c: Captured, who: &str| -> Value {
            let out = c.wait(Duration::from_secs_f64(secs + 30.0), None).unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string();
            assert!(
                out.status.success(),
                "{who}: {}\n{text}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            text.lines()
                .rev()
                .find_map(|l| serde_json::from_str::<Value>(l).ok())
                .unwrap_or_else(|| panic!("{who} printed no JSON: {text}"))
        };
        let mut sent = 0;
        for g in gens {
            let j = json(g, "bricks gen");
            eprintln!("  gen: {} sent, {} drops", j["sent"], j["drops"]);
            sent += j["sent"].as_u64().unwrap();
        }
        let (mut received, mut reordered, mut probes) = (0, 0, 0);
        let (mut flows, mut max_gap_ms, mut max_flow_gap_ms) = (0, 0.0f64, 0.0f64);
        for s in sinks {
            let j = json(s, "bricks sink");
            eprintln!(
                "  sink: {} probes, {} packets, {} other",
                j["probes"], j["packets"], j["other_packets"]
            );
            let p = j["probes"].as_u64().unwrap();
            received += p - j["duplicates"].as_u64().unwrap_or(0);
            probes += p;
            reordered += j["reordered"].as_u64().unwrap();
            flows += j["flows"].as_u64().unwrap();
            max_gap_ms = max_gap_ms.max(j["max_gap_ms"].as_f64().unwrap());
            max_flow_gap_ms = max_flow_gap_ms.max(j["max_flow_gap_ms"].as_f64().unwrap());
        }
        UdpResult {
            sent,
            received,
            reordered,
            probes,
            flows,
            max_gap_ms,
            max_flow_gap_ms,
        }
    }
}

/// Senders and sinks under way.
struct Udp {
    sinks: Vec<Captured>,
    gens: Vec<Captured>,
    secs: f64,
}

/// What they sent and received.
struct UdpResult {
    sent: u64,
    received: u64,
    reordered: u64,
    probes: u64,
    flows: u64,
    /// The longest time without probes at a sink: of a whole stream, of
    /// any one flow.
    max_gap_ms: f64,
    max_flow_gap_ms: f64,
}

/// R of the test copies of rb4: 4 Mbit/s, so that the direct share R/N
/// is 1 Mbit/s, about 1,400 64-byte frames a second with their label.
const R_BPS: u64 = 4_000_000;

#[test]
fn rb4_full_mesh_forwards_ping_tcp_and_udp_between_every_pair() {
    if skip_unless_root("rb4_full_mesh_forwards_ping_tcp_and_udp_between_every_pair").is_some() {
        return;
    }
    let _turn = one_at_a_time();
    let t0 = Instant::now();
    let up = Up::start(
        "mesh",
        &std::fs::read_to_string(root().join("conf/cluster/rb4.toml")).unwrap(),
    );
    let n = up.hosts().len();
    assert_eq!(n, 4);
    assert_eq!(up.state["nodes"].as_array().unwrap().len(), 4);
    // Every server answers and every link is up.
    let (ok, status) = bricks(
        &["cluster", "status", &up.name, "--interval", "0.5", "--json"],
        Duration::from_secs(30),
    );
    assert!(ok, "{status}");
    let s: Value = serde_json::from_str(status.lines().last().unwrap()).unwrap();
    for node in s["nodes"].as_array().unwrap() {
        assert_eq!(node["answering"], true, "{node}");
        for l in node["links"].as_array().unwrap() {
            assert_eq!(l["up"], true, "{node}");
        }
    }
    // Ping, every ordered pair.
    for a in 0..n {
        for b in 0..n {
            if a != b {
                up.ping(a, b).unwrap();
            }
        }
    }
    // The cluster is one router: host 1 pings n2's address on its own
    // port and on host 2's side (answered by n2 after crossing the
    // cluster), and a packet with TTL 1 gets "time exceeded" from the
    // input node, as from any router.
    let (ns0, _, _, _) = up.host(0);
    let gateway = |h: usize| {
        up.state["hosts"][h]["gateway"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let far_gateway = gateway(1);
    let out = output_timeout(
        &mut up.exec(
            &ns0,
            &[
                "ping",
                "-n",
                "-c",
                "3",
                "-i",
                "0.2",
                "-W",
                "2",
                &far_gateway,
            ],
        ),
        Duration::from_secs(20),
    )
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!text.contains(" 0 received"), "ping {far_gateway}: {text}");
    let out = output_timeout(
        &mut up.exec(
            &ns0,
            &["ping", "-n", "-c", "1", "-t", "1", "-W", "2", &up.host(1).1],
        ),
        Duration::from_secs(20),
    )
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("Time to live exceeded") && text.contains(&gateway(0)),
        "ping -t 1: {text}"
    );
    // TCP, every ordered pair at once, 256 KiB each checked byte for byte.
    let bytes = (256 << 10).to_string();
    let mut servers = Vec::new();
    let mut senders = Vec::new();
    for a in 0..n {
        for b in 0..n {
            if a == b {
                continue;
            }
            let (ns_b, addr_b, _, _) = up.host(b);
            let listen = format!("{addr_b}:{}", 6000 + a * 10 + b);
            servers.push((
                format!("{a}->{b}"),
                Captured::spawn(&mut up.exec(
                    &ns_b,
                    &[
                        BRICKS,
                        "demo",
                        "tcp-serve",
                        "--listen",
                        &listen,
                        "--bytes",
                        &bytes,
                    ],
                ))
                .unwrap(),
            ));
            senders.push(listen);
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let mut send_procs = Vec::new();
    let mut k = 0;
    for a in 0..n {
        for b in 0..n {
            if a == b {
                continue;
            }
            let (ns_a, _, _, _) = up.host(a);
            send_procs.push(
                Captured::spawn(&mut up.exec(
                    &ns_a,
                    &[
                        BRICKS,
                        "demo",
                        "tcp-send",
                        "--to",
                        &senders[k],
                        "--bytes",
                        &bytes,
                    ],
                ))
                .unwrap(),
            );
            k += 1;
        }
    }
    for s in send_procs {
        let out = s.wait(Duration::from_secs(60), None).unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for (pair, s) in servers {
        let out = s.wait(Duration::from_secs(60), None).unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let j: Value = text
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("tcp {pair}: {text}"));
        assert_eq!(j["intact"], true, "tcp {pair}: {j}");
    }
    // UDP: uniform (every host to every other) and worst case (every host
    // to one), bounded counts.
    let uniform: Vec<(usize, Vec<usize>)> = (0..n)
        .map(|h| (h, (0..n).filter(|&o| o != h).collect()))
        .collect();
    let delivered_before: Vec<u64> = (0..4).map(|i| up.counter(i, "delivered")).collect();
    let (sent, received, _, _) = up.udp(&uniform, 1000, 1000, 32);
    eprintln!("udp uniform: {received}/{sent} received");
    assert!(received * 100 >= sent * 95, "uniform: {received} of {sent}");
    for (i, before) in delivered_before.iter().enumerate() {
        assert!(
            up.counter(i, "delivered") > before + 100,
            "server {i} delivered nothing"
        );
    }
    let worst: Vec<(usize, Vec<usize>)> = (1..n).map(|h| (h, vec![0])).collect();
    let out0 = up.node_of_host(0);
    let before = up.counter(out0, "delivered");
    let (sent, received, _, _) = up.udp(&worst, 1000, 1000, 32);
    eprintln!("udp worst case: {received}/{sent} received");
    assert!(
        received * 100 >= sent * 95,
        "worst case: {received} of {sent}"
    );
    assert!(up.counter(out0, "delivered") >= before + received);
    eprintln!("rb4 mesh test: {:.1} s", t0.elapsed().as_secs_f64());
}

#[test]
fn flowlets_reorder_less_than_per_packet_balancing() {
    if skip_unless_root("flowlets_reorder_less_than_per_packet_balancing").is_some() {
        return;
    }
    let _turn = one_at_a_time();
    let t0 = Instant::now();
    let up = Up::start("reo", &with_rate("conf/cluster/rb4.toml", R_BPS));
    up.ping(0, 1).unwrap();
    let in_node = up.node_of_host(0);
    let element = up.vlb_element(in_node);
    let mut figures = Vec::new();
    for flowlets in ["true", "false"] {
        for i in 0..4 {
            let (ok, out) = bricks(
                &[
                    "ctl",
                    &up.socket(i),
                    "write",
                    &format!("{element}.flowlets"),
                    flowlets,
                ],
                Duration::from_secs(10),
            );
            assert!(ok, "{out}");
        }
        let balanced = up.counter(in_node, "balanced");
        // 3,000 packets/s of 64 bytes to one host: twice the direct share,
        // in 64 flows: with flowlets, those that start while the share is
        // used up are balanced.
        let (sent, received, reordered, probes) = up.udp(&[(0, vec![1])], 3000, 6000, 64);
        assert!(received * 100 >= sent * 90, "{received} of {sent}");
        assert!(
            up.counter(in_node, "balanced") > balanced + 500,
            "load balancing did not kick in"
        );
        let pct = reordered as f64 * 100.0 / probes.max(1) as f64;
        eprintln!("flowlets {flowlets}: {reordered} of {probes} reordered ({pct:.3}%)");
        figures.push(pct);
    }
    let (with, without) = (figures[0], figures[1]);
    eprintln!("reordering: {with:.3}% with flowlets, {without:.3}% without");
    assert!(with < 1.0, "{with}% reordered with flowlets");
    assert!(with <= without, "flowlets {with}% vs per packet {without}%");
    eprintln!("reorder test: {:.1} s", t0.elapsed().as_secs_f64());
}

#[test]
fn a_killed_server_costs_well_under_a_second_and_is_used_again() {
    if skip_unless_root("a_killed_server_costs_well_under_a_second_and_is_used_again").is_some() {
        return;
    }
    let _turn = one_at_a_time();
    let t0 = Instant::now();
    let up = Up::start("kill", &with_rate("conf/cluster/rb4.toml", R_BPS));
    up.ping(0, 1).unwrap();
    // The stream goes from n1's host to n2's (64 flows, 4 s); the
    // intermediate that forwards most of it is killed a second in.
    let stream = up.start_udp(&[(0, vec![1])], 3000, 12_000, 64, true);
    std::thread::sleep(Duration::from_millis(700));
    let f0: Vec<u64> = (0..4).map(|i| up.counter(i, "forwarded")).collect();
    std::thread::sleep(Duration::from_millis(300));
    let f1: Vec<u64> = (0..4).map(|i| up.counter(i, "forwarded")).collect();
    let (a, b) = (up.node_of_host(0), up.node_of_host(1));
    let victim = (0..4)
        .filter(|&i| i != a && i != b)
        .max_by_key(|&i| f1[i] - f0[i])
        .unwrap();
    assert!(
        f1[victim] > f0[victim],
        "no balanced traffic through {victim}"
    );
    let vname = up.node_name(victim);
    let (ok, out) = bricks(
        &["cluster", "kill", &up.name, &vname],
        Duration::from_secs(20),
    );
    assert!(ok, "{out}");
    let got = up.finish_udp(stream);
    let gap = got.max_flow_gap_ms;
    eprintln!(
        "killed {vname}: longest silence of a flow {gap:.0} ms, of the stream {:.0} ms, lost {} of {}",
        got.max_gap_ms,
        got.sent - got.received,
        got.sent
    );
    assert!(gap < 1000.0, "flows stopped for {gap} ms");
    // Traffic kept flowing: most of it arrived, in every flow.
    assert!(
        got.received * 100 >= got.sent * 90,
        "{} of {} arrived",
        got.received,
        got.sent
    );
    assert_eq!(got.flows, 64);
    assert!(
        got.max_gap_ms < 1000.0,
        "the stream stopped for {} ms",
        got.max_gap_ms
    );
    // The other servers see the dead one's links down.
    let (ok, status) = bricks(
        &["cluster", "status", &up.name, "--interval", "0.3", "--json"],
        Duration::from_secs(30),
    );
    assert!(ok, "{status}");
    let st: Value = serde_json::from_str(status.lines().last().unwrap()).unwrap();
    assert_eq!(st["nodes"][victim]["answering"], false, "{st}");
    let peer = st["nodes"][a]["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["peer"] == vname.as_str())
        .unwrap()
        .clone();
    assert_eq!(peer["up"], false, "{st}");
    // Restarted, it forwards again.
    let t = Instant::now();
    let (ok, out) = bricks(
        &["cluster", "restart", &up.name, &vname],
        Duration::from_secs(60),
    );
    assert!(ok, "{out}");
    eprintln!("restarted {vname} in {:.2} s", t.elapsed().as_secs_f64());
    let before = up.counter(victim, "forwarded");
    let got = up.finish_udp(up.start_udp(&[(0, vec![1])], 3000, 6000, 64, true));
    let after = up.counter(victim, "forwarded");
    assert!(
        after > before + 100,
        "{vname} forwarded {before} -> {after} after restart"
    );
    assert!(got.received > 0);
    eprintln!("failover test: {:.1} s", t0.elapsed().as_secs_f64());
}

#[test]
fn fly_forwards_between_its_hosts() {
    if skip_unless_root("fly_forwards_between_its_hosts").is_some() {
        return;
    }
    let _turn = one_at_a_time();
    let t0 = Instant::now();
    let up = Up::start(
        "fly",
        &std::fs::read_to_string(root().join("conf/cluster/fly.toml")).unwrap(),
    );
    assert_eq!(up.state["nodes"].as_array().unwrap().len(), 9);
    let n = up.hosts().len();
    assert_eq!(n, 3);
    for a in 0..n {
        for b in 0..n {
            if a != b {
                up.ping(a, b).unwrap();
            }
        }
    }
    eprintln!("fly test: {:.1} s", t0.elapsed().as_secs_f64());
}

/// Two servers, the first with two external ports.
const TWO_PORTS: &str = r#"
name = "tp"
rate = "100Mbps"
hello_interval = "50ms"

[[node]]
name = "n1"
[[node.port]]
iface = "ext0"
address = "10.1.0.1/24"
[[node.port]]
iface = "ext1"
address = "10.5.0.1/24"

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
prefix = "10.5.0.0/24"
node = "n1"
port = "ext1"

[[route]]
prefix = "10.2.0.0/24"
node = "n2"
port = "ext0"
"#;

/// A field of `/proc/net/snmp` in namespace `ns`.
fn snmp(up: &Up, ns: &str, proto: &str, field: &str) -> u64 {
    let out = output_timeout(
        &mut up.exec(ns, &["cat", "/proc/net/snmp"]),
        Duration::from_secs(5),
    )
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(&format!("{proto}:")))
        .collect();
    rows[0]
        .split_whitespace()
        .zip(rows[1].split_whitespace())
        .find(|(n, _)| *n == field)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or_else(|| panic!("no {proto} {field}:\n{text}"))
}

/// Counter `k` summed over a server's elements of class `class`.
fn class_total(up: &Up, node: usize, class: &str, k: &str) -> u64 {
    let (ok, out) = bricks(&["ctl", &up.socket(node), "stats"], Duration::from_secs(10));
    assert!(ok, "{out}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    v["workers"][0]["elements"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, e)| e["class"] == class)
        .map(|(n, _)| v["total"][n][k].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn second_port_errors_come_from_its_address_and_directed_broadcasts_stay() {
    if skip_unless_root("second_port_errors_come_from_its_address_and_directed_broadcasts_stay")
        .is_some()
    {
        return;
    }
    let _turn = one_at_a_time();
    let up = Up::start("twoport", TWO_PORTS);
    let n = up.hosts().len();
    assert_eq!(n, 3);
    let gateway = |h: usize| {
        up.state["hosts"][h]["gateway"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let behind = |gw: &str| (0..n).find(|&h| gateway(h) == gw).unwrap();
    let (h_ext0, h_ext1, h_n2) = (behind("10.1.0.1"), behind("10.5.0.1"), behind("10.2.0.1"));
    for (a, b) in [(h_ext0, h_n2), (h_ext1, h_n2), (h_n2, h_ext1)] {
        up.ping(a, b).unwrap();
    }
    // RFC 1812 section 4.3.2.4: time exceeded from the second port's
    // address for a packet that came in by it.
    let (ns1, _, _, _) = up.host(h_ext1);
    let out = output_timeout(
        &mut up.exec(
            &ns1,
            &[
                "ping",
                "-n",
                "-c",
                "1",
                "-t",
                "1",
                "-W",
                "2",
                &up.host(h_n2).1,
            ],
        ),
        Duration::from_secs(20),
    )
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("Time to live exceeded") && text.contains("From 10.5.0.1 "),
        "ping -t 1 from behind ext1: {text}"
    );
    // RFC 2644: a ping to n2's subnet broadcast does not leave n2.
    let (ns0, _, _, _) = up.host(h_ext0);
    let (ns2, _, _, _) = up.host(h_n2);
    let before = snmp(&up, &ns2, "Icmp", "InMsgs");
    let n1 = up.node_index("n1");
    let refused = class_total(&up, n1, "CheckIPHeader", "bad_destination");
    let _ = output_timeout(
        &mut up.exec(
            &ns0,
            &[
                "ping",
                "-n",
                "-b",
                "-c",
                "3",
                "-i",
                "0.2",
                "-W",
                "1",
                "10.2.0.255",
            ],
        ),
        Duration::from_secs(20),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        class_total(&up, n1, "CheckIPHeader", "bad_destination") - refused,
        3,
        "n1 did not refuse the directed broadcasts"
    );
    assert_eq!(
        snmp(&up, &ns2, "Icmp", "InMsgs"),
        before,
        "a directed broadcast reached the host behind n2"
    );
}
