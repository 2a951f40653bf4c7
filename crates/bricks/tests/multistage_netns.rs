//! Multistage routers (Bianco et al. §III) in network namespaces, driven
//! through `bricks multistage up/status/kill/restart/down` as a user
//! would. conf/multistage/2x2.toml (two balancers, two routers, a Linux
//! bridge, a host behind each of the four front ports) is one router to
//! its hosts: ping between all of them, time exceeded from the gateway
//! address, TCP intact both ways, ARP learnt on every side with no static
//! entry; 10,000 UDP packets are shared evenly by the routers, a flow
//! stays on one router in per-flow mode, and per-packet mode's reordering
//! is measured; a router killed mid-stream costs each flow well under
//! 200 ms and is used again once restarted; a dead balancer takes only
//! its own front ports. conf/multistage/dtx3.toml spreads evenly over its
//! three back ports. Every router is taken down at the end, failed or not,
//! and no namespace is left.
//!
//! Needs root (skipped otherwise, a failure under CI=true). The routers
//! run under names unique to this process; the tests take turns, since
//! four or five boxes already share the machine's CPUs. Every traffic
//! source is bounded in packets and in time.

use bricks_netns::{output_timeout, skip_unless_root, Captured};
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

#[allow(dead_code)] // shared with the other tests
mod common;

use common::{bricks_within as bricks, one_at_a_time, root, Brought, BRICKS};

fn example(file: &str) -> String {
    std::fs::read_to_string(root().join("conf/multistage").join(file)).unwrap()
}

/// A host behind a front port, from the state record.
#[derive(Debug, Clone)]
struct Host {
    ns: String,
    address: String,
    iface: String,
    gateway: String,
    /// F_k, where its frames go.
    gateway_mac: String,
    balancer: String,
}

/// Multistage boxes brought up by `bricks multistage up`, taken down when dropped.
type Up = Brought;

impl Up {
    /// `bricks multistage up` on `text` under a name unique to this process
    /// and `tag`.
    fn start(tag: &str, text: &str) -> Up {
        Brought::up("multistage", "bm", tag, text, &["--backend", "packet"])
    }

    fn hosts(&self) -> Vec<Host> {
        let s = |h: &Value, k: &str| h[k].as_str().unwrap().to_string();
        self.state["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| Host {
                ns: s(h, "namespace"),
                address: s(h, "address"),
                iface: s(h, "iface"),
                gateway: s(h, "gateway"),
                gateway_mac: s(h, "gateway_mac"),
                balancer: s(h, "balancer"),
            })
            .collect()
    }

    fn host(&self, i: usize) -> Host {
        self.hosts()[i].clone()
    }

    fn boxes(&self) -> Vec<Value> {
        self.state["boxes"].as_array().unwrap().clone()
    }

    /// Index of box `name` in the record.
    fn box_index(&self, name: &str) -> usize {
        self.boxes()
            .iter()
            .position(|b| b["name"] == name)
            .unwrap_or_else(|| panic!("no box {name}"))
    }

    fn names(&self, role: &str) -> Vec<String> {
        self.boxes()
            .iter()
            .filter(|b| b["role"] == role)
            .map(|b| b["name"].as_str().unwrap().to_string())
            .collect()
    }

    fn socket(&self, name: &str) -> String {
        self.boxes()[self.box_index(name)]["socket"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn stats(&self, name: &str) -> Value {
        let (ok, out) = bricks(
            &["ctl", &self.socket(name), "stats"],
            Duration::from_secs(10),
        );
        assert!(ok, "{name}: {out}");
        serde_json::from_str(out.trim()).unwrap()
    }

    /// The name of balancer `name`'s L2Balancer element, and its stats.
    fn lb_element(&self, name: &str) -> (String, Value) {
        let v = self.stats(name);
        let element = v["workers"][0]["elements"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(_, e)| e["class"] == "L2Balancer")
            .map(|(n, _)| n.clone())
            .expect("an L2Balancer");
        (element, v)
    }

    /// Balancer `name`'s L2Balancer counters (one worker: sums are its own).
    fn lb(&self, name: &str) -> Value {
        let (element, v) = self.lb_element(name);
        v["total"][&element].clone()
    }

    fn lb_counter(&self, name: &str, k: &str) -> u64 {
        self.lb(name)[k].as_u64().unwrap_or(0)
    }

    /// Per-router counters `to_router0..` of a balancer.
    fn to_routers(&self, name: &str) -> Vec<u64> {
        let c = self.lb(name);
        (0..self.names("router").len())
            .map(|i| c[format!("to_router{i}")].as_u64().unwrap_or(0))
            .collect()
    }

    /// Sets every balancer's policy.
    fn policy(&self, policy: &str) {
        for b in self.names("balancer") {
            let handler = format!("{}.policy", self.lb_element(&b).0);
            let (ok, out) = bricks(
                &["ctl", &self.socket(&b), "write", &handler, policy],
                Duration::from_secs(10),
            );
            assert!(ok, "{b}: write lb.policy {policy}: {out}");
        }
    }

    fn ping_text(&self, from: usize, to: &str, extra: &[&str]) -> String {
        let ns = self.host(from).ns;
        let mut argv = vec!["ping", "-n"];
        argv.extend_from_slice(extra);
        argv.push(to);
        let out = output_timeout(&mut self.exec(&ns, &argv), Duration::from_secs(20)).unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Pings `to` from host `from`: at least one answer of three (the
    /// first may wait for ARP at both ends).
    fn ping(&self, from: usize, to: &str) -> Result<(), String> {
        let text = self.ping_text(from, to, &["-c", "3", "-i", "0.2", "-W", "2"]);
        if text.contains(" 0 received") || !text.contains("received") {
            return Err(format!("ping {} -> {to}: {text}", self.host(from).ns));
        }
        Ok(())
    }

    /// `bricks sink` behind host `h` for `secs` seconds.
    fn sink(&self, h: usize, secs: f64) -> Captured {
        let host = self.host(h);
        Captured::spawn(&mut self.exec(
            &host.ns,
            &[
                BRICKS,
                "sink",
                &host.iface,
                "--duration",
                &format!("{secs}"),
                "--backend",
                "packet",
                "--json",
            ],
        ))
        .unwrap()
    }

    /// `bricks gen` from host `from` to host `to`: `count` packets at
    /// `rate` packets/s in `nflows` 5-tuples drawn with `seed` (taken in
    /// turn with `round_robin`, so that each flow's packets are evenly
    /// spaced), bounded in time too; to F_k unless `dst_mac` says.
    fn gen(
        &self,
        (from, to): (usize, usize),
        rate: u64,
        count: u64,
        flows: (u32, bool, u64),
        dst_mac: Option<&str>,
    ) -> Command {
        let (nflows, round_robin, seed) = flows;
        let (a, b) = (self.host(from), self.host(to));
        let secs = count as f64 / rate as f64;
        let mut argv = vec![
            BRICKS.to_string(),
            "gen".into(),
            a.iface.clone(),
            "--rate".into(),
            rate.to_string(),
            "--count".into(),
            count.to_string(),
            "--duration".into(),
            format!("{}", secs + 2.0),
            "--src".into(),
            a.address.clone(),
            "--dst".into(),
            b.address.clone(),
            "--dst-mac".into(),
            dst_mac.unwrap_or(&a.gateway_mac).to_string(),
            "--flows".into(),
            nflows.to_string(),
            "--size".into(),
            "64".into(),
            "--seed".into(),
            seed.to_string(),
            "--backend".into(),
            "packet".into(),
            "--json".into(),
        ];
        if round_robin {
            argv.push("--round-robin".into());
        }
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        self.exec(&a.ns, &argv)
    }

    /// Starts `bricks sink` behind every receiver and `bricks gen` behind
    /// every sender of `flows` ((from, to) host pairs), `rate` packets/s
    /// and `count` packets per sender.
    fn start_udp(
        &self,
        flows: &[(usize, usize)],
        rate: u64,
        count: u64,
        nflows: u32,
        round_robin: bool,
    ) -> Udp {
        let mut rx: Vec<usize> = flows.iter().map(|f| f.1).collect();
        rx.sort_unstable();
        rx.dedup();
        let secs = count as f64 / rate as f64;
        let sinks = rx.iter().map(|&h| self.sink(h, secs + 3.0)).collect();
        std::thread::sleep(Duration::from_millis(800));
        let gens = flows
            .iter()
            .map(|&f| {
                Captured::spawn(&mut self.gen(f, rate, count, (nflows, round_robin, 1), None))
                    .unwrap()
            })
            .collect();
        Udp { sinks, gens, secs }
    }

    /// Waits for [`Up::start_udp`]'s traffic and sums the reports.
    fn finish_udp(&self, u: Udp) -> UdpResult {
        let Udp { sinks, gens, secs } = u;
        let mut r = UdpResult::default();
        for g in gens {
            let j = report(g, secs, "bricks gen");
            r.sent += j["sent"].as_u64().unwrap();
        }
        for s in sinks {
            r.add_sink(&report(s, secs, "bricks sink"));
        }
        eprintln!("  udp: {r}");
        r
    }

    fn udp(&self, flows: &[(usize, usize)], rate: u64, count: u64, nflows: u32) -> UdpResult {
        self.finish_udp(self.start_udp(flows, rate, count, nflows, false))
    }

    /// `bricks multistage status --json`.
    fn status(&self) -> Value {
        let (ok, out) = bricks(
            &[
                "multistage",
                "status",
                &self.name,
                "--interval",
                "0.3",
                "--json",
            ],
            Duration::from_secs(30),
        );
        assert!(ok, "{out}");
        serde_json::from_str(out.lines().last().unwrap()).unwrap()
    }

    fn kill(&self, node: &str) {
        let (ok, out) = bricks(
            &["multistage", "kill", &self.name, node],
            Duration::from_secs(20),
        );
        assert!(ok, "{out}");
    }

    fn restart(&self, node: &str) {
        let t = Instant::now();
        let (ok, out) = bricks(
            &["multistage", "restart", &self.name, node],
            Duration::from_secs(60),
        );
        assert!(ok, "{out}");
        eprintln!(
            "restarted {node} in {:.2} s: {}",
            t.elapsed().as_secs_f64(),
            out.trim()
        );
    }
}

/// Senders and sinks under way.
struct Udp {
    sinks: Vec<Captured>,
    gens: Vec<Captured>,
    secs: f64,
}

/// What they sent and received.
#[derive(Debug, Default)]
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

/// The JSON report a `bricks gen` or `bricks sink` prints last.
fn report(c: Captured, secs: f64, who: &str) -> Value {
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
}

impl UdpResult {
    fn add_sink(&mut self, j: &Value) {
        let p = j["probes"].as_u64().unwrap();
        self.received += p - j["duplicates"].as_u64().unwrap_or(0);
        self.probes += p;
        self.reordered += j["reordered"].as_u64().unwrap();
        self.flows += j["flows"].as_u64().unwrap();
        self.max_gap_ms = self.max_gap_ms.max(j["max_gap_ms"].as_f64().unwrap());
        self.max_flow_gap_ms = self
            .max_flow_gap_ms
            .max(j["max_flow_gap_ms"].as_f64().unwrap());
    }
}

impl std::fmt::Display for UdpResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} sent, {} received, {} reordered, {} flows, longest silence {:.1} ms (stream) \
             {:.1} ms (a flow)",
            self.sent,
            self.received,
            self.reordered,
            self.flows,
            self.max_gap_ms,
            self.max_flow_gap_ms
        )
    }
}

/// Each value's distance from an even share, as a fraction of the even
/// share: 0.05 is 5 %.
fn unevenness(v: &[u64]) -> f64 {
    let sum: u64 = v.iter().sum();
    let even = sum as f64 / v.len() as f64;
    v.iter()
        .map(|&x| (x as f64 - even).abs() / even.max(1.0))
        .fold(0.0, f64::max)
}

fn delta(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().zip(b).map(|(x, y)| y - x).collect()
}

/// The neighbour entry of `ip` in namespace `ns`: (MAC, state).
fn neighbour(ns: &str, ip: &str) -> Option<(String, String)> {
    let out = bricks_netns::ip(&["-n", ns, "neigh", "show", ip]).ok()?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let words: Vec<&str> = text.split_whitespace().collect();
    let mac = words.iter().position(|w| *w == "lladdr")?;
    Some((words.get(mac + 1)?.to_string(), words.last()?.to_string()))
}

#[test]
fn two_by_two_is_one_router_to_its_hosts() {
    if skip_unless_root("two_by_two_is_one_router_to_its_hosts").is_some() {
        return;
    }
    let _turn = one_at_a_time();
    let t0 = Instant::now();
    let up = Up::start("ping", &example("2x2.toml"));
    let hosts = up.hosts();
    assert_eq!(hosts.len(), 4);
    // Every box answers and every balancer sees both routers.
    let s = up.status();
    for b in s["boxes"].as_array().unwrap() {
        assert_eq!(b["answering"], true, "{b}");
        if b["role"] == "balancer" {
            assert_eq!(b["balancer"]["live"], 2, "{b}");
        }
    }
    // Ping, every ordered pair, and every host its own and a far gateway.
    for a in 0..hosts.len() {
        for (b, to) in hosts.iter().enumerate() {
            if a != b {
                up.ping(a, &to.address).unwrap();
            }
        }
        up.ping(a, &hosts[a].gateway).unwrap();
        up.ping(a, &hosts[(a + 2) % hosts.len()].gateway).unwrap();
    }
    // One router: TTL 1 gets "time exceeded" from the sender's gateway,
    // whichever router handled it.
    for a in [0, 3] {
        let far = &hosts[(a + 2) % 4].address;
        let text = up.ping_text(a, far, &["-c", "1", "-t", "1", "-W", "2"]);
        assert!(
            text.contains("Time to live exceeded")
                && text.contains(&format!("From {} ", hosts[a].gateway)),
            "ping -t 1 from {}: {text}",
            hosts[a].ns
        );
    }
    // ARP learnt everywhere, nothing static: every host has G_k at F_k,
    // and every router resolved a neighbour on every interface (each
    // host's reply reached both routers).
    for h in &hosts {
        let (mac, state) = neighbour(&h.ns, &h.gateway)
            .unwrap_or_else(|| panic!("{}: no neighbour entry for {}", h.ns, h.gateway));
        assert_eq!(mac, h.gateway_mac, "{}: G_k at the wrong MAC", h.ns);
        assert_ne!(state, "PERMANENT", "{}: a static entry", h.ns);
        let out = bricks_netns::ip(&["-n", &h.ns, "neigh", "show", "nud", "permanent"]).unwrap();
        assert!(out.stdout.is_empty(), "{}: static entries", h.ns);
    }
    for r in up.names("router") {
        let v = up.stats(&r);
        for k in 0..hosts.len() {
            let e = v["total"][format!("arpq{k}")]["entries"].as_u64();
            assert!(
                e.unwrap_or(0) >= 1,
                "{r} learnt nothing on interface {k}: {e:?}"
            );
        }
    }
    // TCP, 256 KiB each way between hosts of the two balancers and of one
    // balancer, all at once, checked byte for byte.
    let bytes = (256 << 10).to_string();
    let pairs = [(0, 3), (3, 0), (0, 1), (1, 0), (2, 1), (1, 2)];
    let mut servers = Vec::new();
    let mut senders = Vec::new();
    for (i, &(a, b)) in pairs.iter().enumerate() {
        let listen = format!("{}:{}", hosts[b].address, 7000 + i);
        servers.push((
            format!("{a}->{b}"),
            Captured::spawn(&mut up.exec(
                &hosts[b].ns,
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
        senders.push((a, listen));
    }
    std::thread::sleep(Duration::from_millis(500));
    let procs: Vec<Captured> = senders
        .iter()
        .map(|(a, to)| {
            Captured::spawn(&mut up.exec(
                &hosts[*a].ns,
                &[BRICKS, "demo", "tcp-send", "--to", to, "--bytes", &bytes],
            ))
            .unwrap()
        })
        .collect();
    for s in procs {
        let out = s.wait(Duration::from_secs(90), None).unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for (pair, s) in servers {
        let out = s.wait(Duration::from_secs(90), None).unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let j: Value = text
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("tcp {pair}: {text}"));
        assert_eq!(j["intact"], true, "tcp {pair}: {j}");
    }
    // A host cannot reach the back stage directly: frames it sends to a
    // router's internal MAC are dropped as spoofed, and no router sees
    // them.
    let lb = hosts[0].balancer.clone();
    let (spoofed, routed) = (
        up.lb_counter(&lb, "spoofed"),
        up.to_routers(&lb).iter().sum::<u64>(),
    );
    let demux_in = |r: &str| -> u64 {
        let v = up.stats(r);
        v["total"]["in"]["count"].as_u64().unwrap_or(0)
    };
    let router_in: Vec<u64> = up.names("router").iter().map(|r| demux_in(r)).collect();
    let out = output_timeout(
        &mut up.gen((0, 3), 1000, 200, (4, false, 1), Some("02:4d:53:00:00:00")),
        Duration::from_secs(20),
    )
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(up.lb_counter(&lb, "spoofed") - spoofed, 200);
    assert_eq!(up.to_routers(&lb).iter().sum::<u64>(), routed);
    // Routers see only the balancers' probes meanwhile: fewer frames than
    // the spoofed ones would have added.
    for (r, before) in up.names("router").iter().zip(router_in) {
        let seen = demux_in(r) - before;
        assert!(seen < 200, "{r} saw {seen} frames");
    }
    // Nothing came back that the balancers could not place.
    for b in up.names("balancer") {
        let c = up.lb(&b);
        eprintln!("{b}: {c}");
        assert_eq!(c["no_router"].as_u64().unwrap_or(0), 0, "{b}: {c}");
    }
    eprintln!("2x2 test: {:.1} s", t0.elapsed().as_secs_f64());
}

#[test]
fn two_by_two_balances_evenly_keeps_flows_and_measures_reordering() {
    if skip_unless_root("two_by_two_balances_evenly_keeps_flows_and_measures_reordering").is_some()
    {
        return;
    }
    let _turn = one_at_a_time();
    let t0 = Instant::now();
    let up = Up::start("bal", &example("2x2.toml"));
    let hosts = up.hosts();
    up.ping(0, &hosts[3].address).unwrap();
    let lb = hosts[0].balancer.clone();
    // Per packet (the file's rr): 10,000 packets over both routers.
    up.policy("rr");
    let before = up.to_routers(&lb);
    let got = up.udp(&[(0, 3)], 2000, 10_000, 16);
    let shares = delta(&before, &up.to_routers(&lb));
    let pct = 100.0 * got.reordered as f64 / got.probes.max(1) as f64;
    eprintln!(
        "rr: per-router {shares:?} ({:.2} % from even); {} of {} probes reordered ({pct:.2} %)",
        100.0 * unevenness(&shares),
        got.reordered,
        got.probes
    );
    assert!(got.received * 100 >= got.sent * 95, "{got:?}");
    assert!(
        shares.iter().sum::<u64>() * 100 >= got.sent * 95,
        "{shares:?} of {}",
        got.sent
    );
    assert!(unevenness(&shares) <= 0.05, "rr shares {shares:?}");
    // Per flow: each of 12 single-flow streams (one after the other, so
    // that the balancer's counters tell where each went) stays on one
    // router, and the flows use both.
    up.policy("flow");
    let mut used = [0u64; 2];
    for seed in 1..=12 {
        let before = up.to_routers(&lb);
        let out = output_timeout(
            &mut up.gen((0, 3), 1000, 300, (1, false, seed), None),
            Duration::from_secs(20),
        )
        .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let d = delta(&before, &up.to_routers(&lb));
        eprintln!("flow {seed}: per-router {d:?}");
        assert!(d.iter().sum::<u64>() >= 285, "flow {seed}: {d:?}");
        assert!(
            d.iter().filter(|&&x| x > 0).count() == 1,
            "flow {seed} took both routers: {d:?}"
        );
        for (u, x) in used.iter_mut().zip(&d) {
            *u += u64::from(*x > 0);
        }
    }
    assert!(used.iter().all(|&u| u > 0), "flows per router {used:?}");
    // Many flows at once in per-flow mode: nothing reordered.
    let got = up.udp(&[(0, 3)], 2000, 6000, 16);
    eprintln!(
        "flow: {} of {} probes reordered; flows per router {used:?}",
        got.reordered, got.probes
    );
    assert_eq!(got.reordered, 0, "{got:?}");
    eprintln!(
        "per-packet reordering {pct:.2} %, per-flow 0 %; balancing test {:.1} s",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn a_killed_router_costs_each_flow_under_200_ms_and_is_used_again() {
    if skip_unless_root("a_killed_router_costs_each_flow_under_200_ms_and_is_used_again").is_some()
    {
        return;
    }
    let _turn = one_at_a_time();
    let t0 = Instant::now();
    let up = Up::start("kill", &example("2x2.toml"));
    let hosts = up.hosts();
    up.ping(0, &hosts[3].address).unwrap();
    up.ping(3, &hosts[0].address).unwrap();
    let lb = hosts[0].balancer.clone();
    let victim = up.names("router")[1].clone();
    let down_before = up.lb_counter(&lb, "router_down");
    // 63 flows taken in turn (an odd count: per-packet round robin does
    // not pin a flow to a router), 4 s at 3,000 packets/s; the router is
    // killed a second in.
    let stream = up.start_udp(&[(0, 3)], 3000, 12_000, 63, true);
    std::thread::sleep(Duration::from_millis(1000));
    let before = up.to_routers(&lb);
    std::thread::sleep(Duration::from_millis(200));
    let mid = up.to_routers(&lb);
    assert!(
        mid[1] > before[1],
        "{victim} carried nothing: {before:?} {mid:?}"
    );
    up.kill(&victim);
    let got = up.finish_udp(stream);
    // Half the packets went to the victim: what was lost is how long it
    // was still chosen after it died.
    let lost = got.sent - got.received;
    eprintln!(
        "killed {victim}: longest silence of a flow {:.1} ms, of the stream {:.1} ms, lost {lost} \
         of {} (the dead router chosen for about {:.0} ms)",
        got.max_flow_gap_ms,
        got.max_gap_ms,
        got.sent,
        lost as f64 / 1500.0 * 1000.0
    );
    assert!(
        got.max_flow_gap_ms < 200.0,
        "a flow stopped for {} ms",
        got.max_flow_gap_ms
    );
    assert!(got.received * 100 >= got.sent * 90, "{got:?}");
    assert_eq!(got.flows, 63);
    // The balancers saw it go, and say so.
    assert!(up.lb_counter(&lb, "router_down") > down_before);
    let s = up.status();
    let v = up.box_index(&victim);
    assert_eq!(s["boxes"][v]["running"], false, "{s}");
    for b in s["boxes"].as_array().unwrap() {
        if b["role"] == "balancer" {
            assert_eq!(b["balancer"]["live"], 1, "{b}");
        }
    }
    // Traffic goes on through the other router alone.
    let before = up.to_routers(&lb);
    let got = up.udp(&[(0, 3)], 2000, 2000, 16);
    let d = delta(&before, &up.to_routers(&lb));
    assert!(got.received * 100 >= got.sent * 95, "{got:?}");
    assert_eq!(d[1], 0, "the dead router got traffic: {d:?}");
    // Restarted, it is used again.
    up.restart(&victim);
    let before = up.to_routers(&lb);
    let got = up.udp(&[(0, 3)], 2000, 2000, 16);
    let d = delta(&before, &up.to_routers(&lb));
    eprintln!("after restart: per-router {d:?}");
    assert!(got.received * 100 >= got.sent * 95, "{got:?}");
    assert!(d[1] >= 500, "{victim} not used after restart: {d:?}");
    // Per flow, the flows on the dead router stop until the balancers
    // miss its replies (probe_interval x probe_misses) and move them.
    up.policy("flow");
    let stream = up.start_udp(&[(0, 3)], 3000, 9000, 63, true);
    std::thread::sleep(Duration::from_millis(1200));
    up.kill(&victim);
    let got = up.finish_udp(stream);
    eprintln!(
        "killed {victim} in per-flow mode: longest silence of a flow {:.1} ms, lost {} of {}",
        got.max_flow_gap_ms,
        got.sent - got.received,
        got.sent
    );
    assert!(got.received * 100 >= got.sent * 90, "{got:?}");
    assert_eq!(got.flows, 63);
    assert!(
        got.max_flow_gap_ms < 1000.0,
        "flows stopped for {} ms",
        got.max_flow_gap_ms
    );
    up.restart(&victim);
    eprintln!("router failure test: {:.1} s", t0.elapsed().as_secs_f64());
}

#[test]
fn a_dead_balancer_takes_only_its_own_front_ports() {
    if skip_unless_root("a_dead_balancer_takes_only_its_own_front_ports").is_some() {
        return;
    }
    let _turn = one_at_a_time();
    let t0 = Instant::now();
    let up = Up::start("lbdie", &example("2x2.toml"));
    let hosts = up.hosts();
    for (a, b) in [(0, 2), (2, 3), (3, 1)] {
        up.ping(a, &hosts[b].address).unwrap();
    }
    let dead = hosts[0].balancer.clone();
    let (mine, theirs): (Vec<usize>, Vec<usize>) =
        (0..hosts.len()).partition(|&h| hosts[h].balancer == dead);
    assert_eq!((mine.len(), theirs.len()), (2, 2));
    up.kill(&dead);
    // The other balancer's hosts carry on between themselves.
    up.ping(theirs[0], &hosts[theirs[1]].address).unwrap();
    up.ping(theirs[1], &hosts[theirs[0]].address).unwrap();
    let got = up.udp(&[(theirs[0], theirs[1])], 2000, 2000, 16);
    assert!(got.received * 100 >= got.sent * 95, "{got:?}");
    // The dead balancer's ports are gone: its hosts reach nothing.
    let lost = up.ping(mine[0], &hosts[theirs[0]].address).is_err();
    let lost_back = up.ping(theirs[0], &hosts[mine[0]].address).is_err();
    eprintln!(
        "{dead} killed: hosts behind the other balancer ping each other and carry UDP \
         ({} of {}); behind {dead}: ping out {}, ping in {}",
        got.received,
        got.sent,
        if lost { "lost" } else { "answered" },
        if lost_back { "lost" } else { "answered" }
    );
    assert!(lost && lost_back, "traffic crossed a dead balancer");
    // Back, and its hosts with it. Its return table starts empty: a host
    // behind it is found again once it sends (until then what the
    // routers send it is counted in `unknown_return`, not flooded).
    up.restart(&dead);
    let unknown = up.lb_counter(&dead, "unknown_return");
    let silent = up.ping(theirs[1], &hosts[mine[1]].address).is_err();
    eprintln!(
        "{dead} restarted: a ping to a host behind it that has not sent yet is {} \
         ({} frames for unknown hosts dropped)",
        if silent { "lost" } else { "answered" },
        up.lb_counter(&dead, "unknown_return") - unknown
    );
    for &h in &mine {
        up.ping(h, &hosts[theirs[0]].address).unwrap();
    }
    up.ping(theirs[1], &hosts[mine[1]].address).unwrap();
    up.ping(theirs[0], &hosts[mine[0]].address).unwrap();
    eprintln!("balancer failure test: {:.1} s", t0.elapsed().as_secs_f64());
}

#[test]
fn dtx3_spreads_over_its_back_ports_evenly() {
    if skip_unless_root("dtx3_spreads_over_its_back_ports_evenly").is_some() {
        return;
    }
    let _turn = one_at_a_time();
    let t0 = Instant::now();
    let up = Up::start("dtx3", &example("dtx3.toml"));
    let hosts = up.hosts();
    assert_eq!(hosts.len(), 2);
    assert_eq!(up.names("router").len(), 3);
    up.ping(0, &hosts[1].address).unwrap();
    let lb = hosts[0].balancer.clone();
    let backs = |c: &Value| -> Vec<u64> {
        (0..3)
            .map(|j| c[format!("to_back{j}")].as_u64().unwrap_or(0))
            .collect()
    };
    let before = (backs(&up.lb(&lb)), up.to_routers(&lb));
    let got = up.udp(&[(0, 1)], 2000, 10_000, 32);
    let c = up.lb(&lb);
    let (per_back, per_router) = (
        delta(&before.0, &backs(&c)),
        delta(&before.1, &up.to_routers(&lb)),
    );
    eprintln!(
        "dtx3: per back port {per_back:?} ({:.2} % from even), per router {per_router:?}",
        100.0 * unevenness(&per_back)
    );
    assert!(got.received * 100 >= got.sent * 95, "{got:?}");
    assert!(
        per_back.iter().sum::<u64>() * 100 >= got.sent * 95,
        "{per_back:?} of {}",
        got.sent
    );
    assert!(unevenness(&per_back) <= 0.05, "back ports {per_back:?}");
    assert!(per_router.iter().all(|&x| x > 0), "{per_router:?}");
    // status shows the same shares.
    let s = up.status();
    let b = &s["boxes"][up.box_index(&lb)]["balancer"];
    assert_eq!(b["to_back_pps"].as_array().unwrap().len(), 3, "{s}");
    assert_eq!(b["live"], 3, "{s}");
    eprintln!("dtx3 test: {:.1} s", t0.elapsed().as_secs_f64());
}

#[test]
fn a_running_router_is_kept_and_a_dead_leftover_replaced() {
    if skip_unless_root("a_running_router_is_kept_and_a_dead_leftover_replaced").is_some() {
        return;
    }
    let _turn = one_at_a_time();
    let text = example("2x2.toml");
    let up = Up::start("left", &text);
    let file = up.dir.path().join("left.toml");
    let again = |what: &str| {
        bricks(
            &[
                "multistage",
                "up",
                file.to_str().unwrap(),
                "--name",
                &up.name,
                "--backend",
                "packet",
            ],
            Duration::from_secs(120),
        )
        .1
        .contains(what)
    };
    // Up: a second `up` of the same name refuses and leaves it alone.
    assert!(again(&format!("multistage router {} is up", up.name)));
    up.ping(0, &up.host(1).address).unwrap();
    let (ok, t) = bricks(
        &["multistage", "status", &up.name, "--interval", "0.3"],
        Duration::from_secs(30),
    );
    assert!(
        ok && t.contains("live 2/2") && t.contains("lb2: balanced"),
        "{t}"
    );
    // Every box killed (a crash of the whole router): the next `up`
    // removes the leftover and starts afresh.
    for b in up.boxes() {
        up.kill(b["name"].as_str().unwrap());
    }
    assert!(again("Removing a leftover"));
    up.ping(0, &up.host(1).address).unwrap();
}
