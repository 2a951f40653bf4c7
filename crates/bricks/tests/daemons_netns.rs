//! Real routing daemons feeding bricks, in network namespaces.
//!
//! conf/bgp-router.click runs in namespace `r` with its two ports, eth0
//! towards host h1 and eth1 towards a peer router. The peer's BIRD (AS
//! 65002) announces prefixes over eBGP to a daemon on the router host
//! (AS 65001), whose BGP packets reach it through bricks: the router's
//! own traffic goes up the TAP mirror of each port (bricks0, bricks1) and
//! the host's replies leave by the port. The router host's daemon writes
//! its routes into kernel table 100 (BIRD's kernel protocol) or streams
//! them over FPM (FRR's zebra), and bricks forwards by them:
//!
//! - h1 reaches the announced prefixes through bricks;
//! - a disabled BGP session withdraws them from bricks within a second;
//! - a flap of 100 withdraw/announce cycles leaves bricks' table equal to
//!   the daemon's (`birdc show route` against `bricks ctl ... read
//!   rt.table`).
//!
//! IPv6: the peer's BIRD announces /48s over MP-BGP (a session on a link
//! of its own), the router host's BIRD writes them into table 100, and an
//! IPv6 bricks router (`LookupIP6Route(..., ROUTES netlink:table=100)`)
//! forwards h1's stream to the peer by them until the session is disabled.
//!
//! Needs root and the daemons (scripts/setup installs bird2 and frr);
//! skipped with the reason otherwise, a failure under CI=true. Every
//! namespace, daemon and file is removed when a test ends, failed or not.

#[allow(dead_code)] // shared with the other tests
mod common;

use bricks_netns::{output_timeout, skip_unless_root, ChildGuard, Network};
use common::LiveRouter;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Prefixes the peer announces: 198.51.100.0/24 (its address
/// 198.51.100.1 answers pings) and 20 more.
fn announced() -> Vec<String> {
    let mut v = vec!["198.51.100.0/24".to_string()];
    v.extend((0..20).map(|i| format!("10.{}.{}.0/24", 200 + i / 10, i % 10)));
    v
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Skips (or fails under CI) when a daemon's binary is missing.
fn need(path: &str, test: &str) -> bool {
    if Path::new(path).exists() {
        return true;
    }
    assert!(
        !in_ci(),
        "{test}: {path} is missing (scripts/setup installs it)"
    );
    eprintln!("skipped {test}: {path} is missing (scripts/setup installs it)");
    false
}

/// A daemon in a namespace, stopped (by its PID) when dropped.
struct Daemon {
    _child: ChildGuard,
}

fn spawn(net: &Network, ns: &str, argv: &[&str]) -> Daemon {
    let mut cmd = net.exec(ns, argv);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Daemon {
        _child: ChildGuard::spawn(&mut cmd).unwrap(),
    }
}

struct Lab {
    // Fields drop in order: daemons, then the router, then the network.
    daemons: Vec<Daemon>,
    router: LiveRouter,
    net: Network,
    dir: tempfile::TempDir,
    sock: PathBuf,
}

impl Lab {
    /// The namespaces, the peer's BIRD and bricks; `routes` is the
    /// router's ROUTES source.
    fn start(tag: &str, routes: &str) -> Lab {
        Lab::start_on(tag, routes, "auto")
    }

    /// [`Lab::start`] on a given backend (auto, xdp, packet).
    fn start_on(tag: &str, routes: &str, backend: &str) -> Lab {
        let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
        for ns in ["r", "h1", "peer"] {
            net.add_namespace(ns).unwrap();
        }
        net.sysctl("r", "net.ipv4.ip_forward", "0").unwrap();
        net.add_link("h1", "eth0", "r", "eth0", 1).unwrap();
        net.add_link("peer", "eth0", "r", "eth1", 1).unwrap();
        if backend == "packet" {
            // AF_PACKET leaves the kernel its copy of every frame: it must
            // neither answer ARP on the ports nor take the router's own
            // traffic there (it comes up the TAPs).
            net.sysctl("r", "net.ipv4.conf.all.rp_filter", "1").unwrap();
            for dev in ["eth0", "eth1"] {
                net.sysctl("r", &format!("net.ipv4.conf.{dev}.rp_filter"), "1")
                    .unwrap();
                net.sysctl("r", &format!("net.ipv4.conf.{dev}.arp_ignore"), "8")
                    .unwrap();
            }
        }
        for (ns, dev) in [
            ("h1", "eth0"),
            ("peer", "eth0"),
            ("r", "eth0"),
            ("r", "eth1"),
        ] {
            net.disable_offloads(ns, dev).unwrap();
        }
        net.add_addr("h1", "eth0", "10.1.0.2/24").unwrap();
        net.add_route("h1", &["default", "via", "10.1.0.1"])
            .unwrap();
        net.add_addr("peer", "eth0", "10.2.0.2/24").unwrap();
        net.add_route("peer", &["default", "via", "10.2.0.1"])
            .unwrap();
        net.add_addr("peer", "lo", "198.51.100.1/24").unwrap();
        let macs = [net.mac("r", "eth0").unwrap(), net.mac("r", "eth1").unwrap()];
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("ctl.sock");
        let conf = common::root().join("conf/bgp-router.click");
        let defines = vec![
            format!("MAC0={}", macs[0]),
            format!("MAC1={}", macs[1]),
            format!("ROUTES={routes}"),
            format!("BACKEND={backend}"),
        ];
        let router = LiveRouter::start_with(
            &net,
            "r",
            &conf,
            1,
            &defines,
            &["--control".into(), sock.to_str().unwrap().into()],
        );
        Lab {
            daemons: Vec::new(),
            router,
            net,
            dir,
            sock,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The peer: BIRD, AS 65002, announcing [`announced`] to 10.2.0.1.
    fn start_peer(&mut self) {
        self.start_peer_with(&[]);
    }

    /// The peer with `more` prefixes announced besides [`announced`] (in
    /// a static protocol of their own, `table`).
    fn start_peer_with(&mut self, more: &[String]) {
        let statics: String = announced()
            .iter()
            .map(|p| format!("  route {p} blackhole;\n"))
            .collect();
        let table: String = more
            .iter()
            .map(|p| format!("  route {p} blackhole;\n"))
            .collect();
        let conf = format!(
            "router id 10.2.0.2;\n\
             protocol device {{ scan time 1; }}\n\
             protocol static announced {{\n  ipv4;\n{statics}}}\n\
             protocol static fulltable {{\n  ipv4;\n{table}}}\n\
             protocol bgp tobricks {{\n  local 10.2.0.2 as 65002;\n  neighbor 10.2.0.1 as 65001;\n\
             \x20 connect delay time 1; connect retry time 1; error wait time 1, 2;\n\
             \x20 ipv4 {{ import none; export where proto = \"announced\" || proto = \"fulltable\"; }};\n}}\n"
        );
        self.bird("peer", "peer", &conf);
    }

    /// The router host's BIRD: AS 65001, routes into kernel table 100.
    fn start_router_bird(&mut self) {
        let conf = "router id 10.2.0.1;\n\
             protocol device { scan time 1; }\n\
             protocol kernel {\n  kernel table 100;\n  scan time 5;\n  learn off;\n\
             \x20 ipv4 { import none; export all; };\n}\n\
             protocol bgp peer {\n  local 10.2.0.1 as 65001;\n  neighbor 10.2.0.2 as 65002;\n\
             \x20 connect delay time 1; connect retry time 1; error wait time 1, 2;\n\
             \x20 ipv4 { import all; export none; };\n}\n";
        self.bird("r", "router", conf);
    }

    /// BIRD with configuration `conf` in namespace `ns`: its files are
    /// `NAME.conf`, `NAME.ctl` (the control socket) and `NAME.pid`.
    fn bird(&mut self, ns: &str, name: &str, conf: &str) {
        let file = self.path(&format!("{name}.conf"));
        std::fs::write(&file, conf).unwrap();
        let sock = self.path(&format!("{name}.ctl"));
        let pid = self.path(&format!("{name}.pid"));
        let d = spawn(
            &self.net,
            ns,
            &[
                "bird",
                "-f",
                "-c",
                file.to_str().unwrap(),
                "-s",
                sock.to_str().unwrap(),
                "-P",
                pid.to_str().unwrap(),
            ],
        );
        self.daemons.push(d);
    }

    /// `birdc -s SOCK CMD...` for the daemon whose socket is `which`.
    fn birdc(&self, which: &str, cmd: &[&str]) -> String {
        let sock = self.path(which);
        let mut argv = vec!["birdc", "-s", sock.to_str().unwrap()];
        argv.extend_from_slice(cmd);
        let out = output_timeout(
            std::process::Command::new(argv[0]).args(&argv[1..]),
            Duration::from_secs(10),
        )
        .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// bricks' learnt routes (not the configured connected ones), sorted,
    /// as `PREFIX GATEWAY`.
    fn bricks_routes(&self) -> Vec<String> {
        let out = output_timeout(
            std::process::Command::new(env!("CARGO_BIN_EXE_bricks")).args([
                "ctl",
                self.sock.to_str().unwrap(),
                "read",
                "rt.table",
            ]),
            Duration::from_secs(10),
        )
        .unwrap();
        assert!(out.status.success(), "{out:?}");
        let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| {
                !["10.1.0.", "10.2.0.", "255.255.255.255"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .map(|l| {
                let w: Vec<&str> = l.split('\t').collect();
                format!("{} {}", w[0], w[1])
            })
            .collect();
        v.sort();
        v
    }

    fn wait_until(&self, what: &str, timeout: Duration, ok: impl Fn() -> bool) -> Duration {
        let start = Instant::now();
        while !ok() {
            assert!(
                start.elapsed() < timeout,
                "no {what} within {timeout:?}; router stderr:\n{}",
                self.router.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        start.elapsed()
    }

    fn ping(&self, from: &str, to: &str) -> bool {
        output_timeout(
            &mut self.net.exec(from, &["ping", "-c", "1", "-W", "1", to]),
            Duration::from_secs(5),
        )
        .map(|o| o.status.success())
        .unwrap_or(false)
    }
}

fn expected() -> Vec<String> {
    let mut v: Vec<String> = announced()
        .iter()
        .map(|p| format!("{p} 10.2.0.2"))
        .collect();
    v.sort();
    v
}

/// The router host's BIRD peers through bricks; its routes reach bricks
/// and h1 through them; a disabled session withdraws them within a second;
/// the session comes back.
fn session_and_withdrawal(lab: &mut Lab) {
    // Before any daemon speaks, h1 cannot reach the peer's prefixes.
    assert!(!lab.ping("h1", "198.51.100.1"));
    lab.start_router_bird();
    // The session comes up through bricks' ports and TAP mirrors.
    let t = lab.wait_until("established session", Duration::from_secs(60), || {
        lab.birdc("router.ctl", &["show", "protocols", "peer"])
            .contains("Established")
    });
    eprintln!("BGP session established through bricks in {t:?}");
    let t = lab.wait_until("learnt routes in bricks", Duration::from_secs(30), || {
        lab.bricks_routes() == expected()
    });
    eprintln!(
        "{} routes in bricks {t:?} after the session",
        expected().len()
    );
    assert!(
        lab.ping("h1", "198.51.100.1"),
        "h1 cannot reach an announced prefix"
    );
    assert!(lab.router.counter("tohost1", "count") > 0);

    // The session goes down: the routes leave bricks within a second.
    lab.birdc("router.ctl", &["disable", "peer"]);
    let t = lab.wait_until("withdrawal", Duration::from_secs(1), || {
        lab.bricks_routes().is_empty()
    });
    eprintln!("withdrawn from bricks {t:?} after birdc disable");
    assert!(!lab.ping("h1", "198.51.100.1"));
    lab.birdc("router.ctl", &["enable", "peer"]);
    lab.wait_until("routes back", Duration::from_secs(60), || {
        lab.bricks_routes() == expected()
    });
}

#[test]
fn bird_over_ebgp_through_bricks_feeds_its_routes() {
    let test = "bird_over_ebgp_through_bricks_feeds_its_routes";
    if let Some(why) = skip_unless_root(test) {
        eprintln!("{why}");
        return;
    }
    if !need("/usr/sbin/bird", test) {
        return;
    }
    let mut lab = Lab::start("bird", "netlink:table=100");
    lab.start_peer();
    session_and_withdrawal(&mut lab);

    // A flap: 100 withdraw/announce cycles of the peer's announcements.
    for _ in 0..100 {
        lab.birdc("peer.ctl", &["disable", "announced"]);
        lab.birdc("peer.ctl", &["enable", "announced"]);
    }
    // BIRD 2 prints `PREFIX unicast [peer ...] * (100) [AS65002i]` and
    // on the next line `via 10.2.0.2 on bricks1`.
    let daemon = || {
        let text = lab.birdc("router.ctl", &["show", "route", "protocol", "peer"]);
        let mut v = Vec::new();
        let mut prefix: Option<String> = None;
        for l in text.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            if !l.starts_with(char::is_whitespace) && w.first().is_some_and(|x| x.contains('/')) {
                prefix = Some(w[0].to_string());
            }
            if let (Some(i), Some(p)) = (w.iter().position(|x| *x == "via"), &prefix) {
                if let Some(gw) = w.get(i + 1) {
                    v.push(format!("{p} {gw}"));
                }
            }
        }
        v.sort();
        v
    };
    lab.wait_until(
        "bricks equal to BIRD after the flap",
        Duration::from_secs(30),
        || {
            let b = lab.bricks_routes();
            b == expected() && daemon() == b
        },
    );
    eprintln!(
        "after the flap: bricks {} routes, BIRD {}",
        lab.bricks_routes().len(),
        daemon().len()
    );
    assert!(lab.ping("h1", "198.51.100.1"));
}

impl Lab {
    /// FRR on the router host: zebra streaming its FIB over FPM to bricks
    /// (`dplane_fpm_nl`, port `fpm_port` on loopback) and bgpd peering with
    /// the peer, both as FRR's own user (frr) with every socket and file in
    /// the test's directory.
    fn start_frr(&mut self, fpm_port: u16) {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.dir.path().to_str().unwrap().to_string();
        // The daemons drop to user frr and write their sockets here.
        std::fs::set_permissions(self.dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let zebra = format!("hostname r\nfpm address 127.0.0.1 port {fpm_port}\n");
        let bgpd = "router bgp 65001\n bgp router-id 10.2.0.1\n no bgp ebgp-requires-policy\n\
             \x20neighbor 10.2.0.2 remote-as 65002\n neighbor 10.2.0.2 timers connect 1\n\
             \x20address-family ipv4 unicast\n  neighbor 10.2.0.2 activate\n exit-address-family\n";
        std::fs::write(self.path("zebra.conf"), zebra).unwrap();
        std::fs::write(self.path("bgpd.conf"), bgpd).unwrap();
        let zserv = format!("{dir}/zserv.api");
        let common = |name: &str| -> Vec<String> {
            vec![
                "-f".into(),
                format!("{dir}/{name}.conf"),
                "-i".into(),
                format!("{dir}/{name}.pid"),
                "-z".into(),
                zserv.clone(),
                "--vty_socket".into(),
                dir.clone(),
            ]
        };
        let mut z: Vec<String> = vec![
            "/usr/lib/frr/zebra".into(),
            "-M".into(),
            "dplane_fpm_nl".into(),
        ];
        z.extend(common("zebra"));
        let zs: Vec<&str> = z.iter().map(String::as_str).collect();
        let d = spawn(&self.net, "r", &zs);
        self.daemons.push(d);
        // bgpd connects to zebra's socket once it exists.
        let sock = PathBuf::from(&zserv);
        self.wait_until("zebra's socket", Duration::from_secs(10), || sock.exists());
        let mut b: Vec<String> = vec!["/usr/lib/frr/bgpd".into()];
        b.extend(common("bgpd"));
        let bs: Vec<&str> = b.iter().map(String::as_str).collect();
        let d = spawn(&self.net, "r", &bs);
        self.daemons.push(d);
    }

    /// `vtysh -c CMD...` against the test's FRR.
    fn vtysh(&self, cmds: &[&str]) -> String {
        let dir = self.dir.path().to_str().unwrap();
        let mut argv = vec!["vtysh", "--vty_socket", dir];
        for c in cmds {
            argv.extend(["-c", c]);
        }
        let out = output_timeout(&mut self.net.exec("r", &argv), Duration::from_secs(10)).unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

#[test]
fn frr_streams_its_fib_over_fpm() {
    let test = "frr_streams_its_fib_over_fpm";
    if let Some(why) = skip_unless_root(test) {
        eprintln!("{why}");
        return;
    }
    if !need("/usr/sbin/bird", test) || !need("/usr/lib/frr/zebra", test) {
        return;
    }
    let port = 2620;
    let mut lab = Lab::start("frr", &format!("fpm:127.0.0.1:{port}"));
    lab.start_peer();
    assert!(!lab.ping("h1", "198.51.100.1"));
    lab.start_frr(port);
    let t = lab.wait_until("routes over FPM in bricks", Duration::from_secs(60), || {
        lab.bricks_routes() == expected()
    });
    eprintln!(
        "{} routes in bricks {t:?} after FRR started",
        expected().len()
    );
    lab.router
        .wait_for("the FPM connection counted", Duration::from_secs(5), |r| {
            r.counter("rt", "fpm_connections") == 1
        });
    assert!(
        lab.ping("h1", "198.51.100.1"),
        "h1 cannot reach a prefix learnt over FPM"
    );
    // The session shut down: zebra withdraws over FPM within a second.
    lab.vtysh(&[
        "configure terminal",
        "router bgp 65001",
        "neighbor 10.2.0.2 shutdown",
    ]);
    let t = lab.wait_until("withdrawal over FPM", Duration::from_secs(1), || {
        lab.bricks_routes().is_empty()
    });
    eprintln!("withdrawn from bricks {t:?} after the neighbour shutdown");
    lab.vtysh(&[
        "configure terminal",
        "router bgp 65001",
        "no neighbor 10.2.0.2 shutdown",
    ]);
    lab.wait_until("routes back over FPM", Duration::from_secs(60), || {
        lab.bricks_routes() == expected()
    });
    // A flap of the peer's announcements ends equal to zebra's FIB.
    for _ in 0..100 {
        lab.birdc("peer.ctl", &["disable", "announced"]);
        lab.birdc("peer.ctl", &["enable", "announced"]);
    }
    lab.wait_until(
        "bricks equal to FRR after the flap",
        Duration::from_secs(30),
        || lab.bricks_routes() == expected(),
    );
    let fib = lab.vtysh(&["show ip route bgp"]);
    let n = fib.lines().filter(|l| l.starts_with("B>")).count();
    assert_eq!(n, expected().len(), "FRR's FIB:\n{fib}");
}

#[test]
fn bird_peers_through_bricks_on_af_packet() {
    let test = "bird_peers_through_bricks_on_af_packet";
    if let Some(why) = skip_unless_root(test) {
        eprintln!("{why}");
        return;
    }
    if !need("/usr/sbin/bird", test) {
        return;
    }
    let mut lab = Lab::start_on("birdp", "netlink:table=100", "packet");
    lab.start_peer();
    session_and_withdrawal(&mut lab);
    assert!(
        lab.router.stderr().contains("af_packet"),
        "{}",
        lab.router.stderr()
    );
}

/// A full table from BIRD: the peer announces a generated Internet-like
/// table (`BRICKS_DAEMON_ROUTES` prefixes, 50,000 by default; 500,000 for
/// the figure in BENCHMARKS.md) and bricks loads it through the router
/// host's BIRD and kernel table 100 while h1's pings to the peer keep
/// being forwarded.
#[test]
fn a_full_table_from_bird_loads_while_forwarding() {
    let test = "a_full_table_from_bird_loads_while_forwarding";
    if let Some(why) = skip_unless_root(test) {
        eprintln!("{why}");
        return;
    }
    if !need("/usr/sbin/bird", test) {
        return;
    }
    let n: usize = std::env::var("BRICKS_DAEMON_ROUTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    // Internet-like prefixes, none inside the lab's own networks.
    let gen = bricks_lpm::gen::generate(n + n / 10, 0, 7);
    let more: Vec<String> = gen
        .v4
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| p.len >= 8 && (p.addr >> 24) != 10 && (p.addr >> 24) != 198)
        .take(n)
        .map(|p| format!("{}/{}", std::net::Ipv4Addr::from(p.addr), p.len))
        .collect();
    let want = more.len() + announced().len();
    let mut lab = Lab::start("birdfull", "netlink:table=100");
    lab.start_peer_with(&more);
    let pinger = bricks_netns::Captured::spawn(&mut lab.net.exec(
        "h1",
        &["ping", "-i", "0.05", "-c", "2400", "-W", "1", "10.2.0.2"],
    ))
    .unwrap();
    let started = Instant::now();
    lab.start_router_bird();
    let last = std::cell::Cell::new(Instant::now());
    let bound = Duration::from_secs(60 + n as u64 / 2000);
    let t = lab.wait_until("the full table in bricks", bound, || {
        if last.get().elapsed() > Duration::from_secs(10) {
            last.set(Instant::now());
            eprintln!(
                "  {} routes in bricks; BIRD: {}",
                lab.router.counter("rt", "routes"),
                lab.birdc("router.ctl", &["show", "protocols"])
                    .replace('\n', " | ")
            );
        }
        lab.router.counter("rt", "routes") as usize >= want + 5
    });
    eprintln!(
        "{want} routes from BIRD in bricks {t:?} after the router's BIRD started ({:.0} routes/s end to end)",
        want as f64 / t.as_secs_f64()
    );
    assert_eq!(lab.bricks_routes().len(), want);
    let _ = started;
    // SIGINT: ping prints its summary and ends.
    // SAFETY: kill(2) on the pid of a child this test started and still
    // holds (it cannot have been reaped and reused).
    unsafe { libc::kill(pinger.id() as i32, libc::SIGINT) };
    let out = pinger.wait(Duration::from_secs(10), None).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("packet loss"))
        .unwrap_or("");
    eprintln!("pings through bricks during the load: {line}");
    assert!(line.contains(" 0% packet loss"), "{text}");
}

/// The IPv6 router of [`bird_ipv6_routes_over_bgp_steer_ipv6_traffic`]:
/// two ports (h1 on eth0, the peer on eth1), Neighbor Discovery both
/// ways, the IPv6 checks, the hop limit, and `LookupIP6Route` fed from
/// kernel table 100.
fn config6() -> String {
    let mut c = String::from(
        "rt :: LookupIP6Route(2001:db8:1::/64 0, 2001:db8:2::/64 1,\n\
         \x20   ROUTES netlink:table=100, DEVICES \"eth0 eth1\");\n",
    );
    for i in 0..2 {
        let n = i + 1;
        c.push_str(&format!(
            "in{i} :: FromDevice(eth{i});\n\
             q{i} :: Queue(1024) -> ToDevice(eth{i});\n\
             in{i} -> c{i} :: Classifier(12/86dd 20/3a 54/87, 12/86dd 20/3a 54/88, 12/86dd, -);\n\
             nda{i} :: IP6NDAdvertiser(2001:db8:{n}::1/128 $MAC{i}) -> q{i};\n\
             nds{i} :: IP6NDSolicitor(2001:db8:{n}::1/64, $MAC{i}) -> q{i};\n\
             c{i}[0] -> ns{i} :: Tee(2);\n\
             ns{i}[0] -> nda{i};\n\
             ns{i}[1] -> [1]nds{i};\n\
             c{i}[1] -> [1]nds{i};\n\
             c{i}[2] -> Strip(14) -> CheckIP6Header -> rt;\n\
             c{i}[3] -> Discard;\n\
             rt[{i}] -> dh{i} :: DecIP6HLIM -> [0]nds{i};\n\
             dh{i}[1] -> Discard;\n"
        ));
    }
    c
}

/// IPv6 routes from a real BGP session: the peer's BIRD announces two /48s
/// over MP-BGP (an IPv6 session on a link of its own beside bricks' ports)
/// with its address on bricks' port as the next hop; the router host's
/// BIRD writes them into kernel table 100; bricks follows that table and
/// forwards h1's IPv6 stream to the peer by them. `birdc disable` of the
/// session withdraws them from bricks within a second.
#[test]
fn bird_ipv6_routes_over_bgp_steer_ipv6_traffic() {
    let test = "bird_ipv6_routes_over_bgp_steer_ipv6_traffic";
    if let Some(why) = skip_unless_root(test) {
        eprintln!("{why}");
        return;
    }
    if !need("/usr/sbin/bird", test) {
        return;
    }
    let mut net = Network::new(&Network::unique_prefix("bgp6")).unwrap();
    for ns in ["r", "h1", "peer"] {
        net.add_namespace(ns).unwrap();
    }
    net.sysctl("r", "net.ipv6.conf.all.forwarding", "0")
        .unwrap();
    net.add_link("h1", "eth0", "r", "eth0", 1).unwrap();
    net.add_link("peer", "eth0", "r", "eth1", 1).unwrap();
    // The BGP session's own link, the kernel's on both sides.
    net.add_link("peer", "bgp", "r", "bgp", 1).unwrap();
    for (ns, dev) in [
        ("h1", "eth0"),
        ("peer", "eth0"),
        ("r", "eth0"),
        ("r", "eth1"),
    ] {
        net.disable_offloads(ns, dev).unwrap();
    }
    let ip6 = |ns: &str, args: &[&str]| {
        let mut argv = vec!["ip", "-6"];
        argv.extend_from_slice(args);
        let out = output_timeout(&mut net.exec(ns, &argv), Duration::from_secs(5)).unwrap();
        assert!(out.status.success(), "{ns}: {argv:?}: {out:?}");
    };
    ip6(
        "h1",
        &["addr", "add", "2001:db8:1::2/64", "dev", "eth0", "nodad"],
    );
    ip6("h1", &["route", "add", "default", "via", "2001:db8:1::1"]);
    ip6(
        "peer",
        &["addr", "add", "2001:db8:2::2/64", "dev", "eth0", "nodad"],
    );
    ip6("peer", &["route", "add", "default", "via", "2001:db8:2::1"]);
    ip6("peer", &["addr", "add", "2001:db8:99::5/128", "dev", "lo"]);
    ip6(
        "peer",
        &["addr", "add", "fd00:6::2/64", "dev", "bgp", "nodad"],
    );
    ip6("r", &["addr", "add", "fd00:6::1/64", "dev", "bgp", "nodad"]);
    // The router host's view of eth1's network, so that its BIRD takes
    // the peer's next hop as directly connected; the frames themselves
    // are bricks'.
    ip6(
        "r",
        &["addr", "add", "2001:db8:2::9/64", "dev", "eth1", "nodad"],
    );
    let macs = [net.mac("r", "eth0").unwrap(), net.mac("r", "eth1").unwrap()];
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("router6.click");
    std::fs::write(&conf, config6()).unwrap();
    let sock = dir.path().join("ctl.sock");
    let defines = vec![format!("MAC0={}", macs[0]), format!("MAC1={}", macs[1])];
    let router = LiveRouter::start_with(
        &net,
        "r",
        &conf,
        1,
        &defines,
        &["--control".into(), sock.to_str().unwrap().into()],
    );
    let learnt = || -> Vec<String> {
        let out = output_timeout(
            std::process::Command::new(env!("CARGO_BIN_EXE_bricks")).args([
                "ctl",
                sock.to_str().unwrap(),
                "read",
                "rt.table",
            ]),
            Duration::from_secs(10),
        )
        .unwrap();
        assert!(out.status.success(), "{out:?}");
        let mut v: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("2001:db8:9"))
            .map(|l| l.split('\t').collect::<Vec<_>>().join(" "))
            .collect();
        v.sort();
        v
    };
    let mut daemons = Vec::new();
    let bird = |daemons: &mut Vec<Daemon>, ns: &str, name: &str, conf: &str| {
        let file = dir.path().join(format!("{name}.conf"));
        std::fs::write(&file, conf).unwrap();
        let ctl = dir.path().join(format!("{name}.ctl"));
        let pid = dir.path().join(format!("{name}.pid"));
        daemons.push(spawn(
            &net,
            ns,
            &[
                "bird",
                "-f",
                "-c",
                file.to_str().unwrap(),
                "-s",
                ctl.to_str().unwrap(),
                "-P",
                pid.to_str().unwrap(),
            ],
        ));
    };
    bird(
        &mut daemons,
        "peer",
        "peer",
        "router id 10.6.0.2;\n\
         protocol device { scan time 1; }\n\
         protocol static announced { ipv6;\n\
         \x20 route 2001:db8:99::/48 blackhole;\n  route 2001:db8:98::/48 blackhole;\n}\n\
         protocol bgp tobricks {\n  local fd00:6::2 as 65002;\n  neighbor fd00:6::1 as 65001;\n\
         \x20 connect delay time 1; connect retry time 1; error wait time 1, 2;\n\
         \x20 ipv6 { import none; export where proto = \"announced\"; next hop address 2001:db8:2::2; };\n}\n",
    );
    bird(
        &mut daemons,
        "r",
        "router",
        "router id 10.6.0.1;\n\
         protocol device { scan time 1; }\n\
         protocol kernel {\n  kernel table 100;\n  scan time 5;\n  learn off;\n\
         \x20 ipv6 { import none; export all; };\n}\n\
         protocol bgp peer {\n  local fd00:6::1 as 65001;\n  neighbor fd00:6::2 as 65002;\n\
         \x20 connect delay time 1; connect retry time 1; error wait time 1, 2;\n\
         \x20 ipv6 { import all; export none; };\n}\n",
    );
    let want = vec![
        "2001:db8:98::/48 2001:db8:2::2 1".to_string(),
        "2001:db8:99::/48 2001:db8:2::2 1".to_string(),
    ];
    let start = Instant::now();
    while learnt() != want {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "bricks has {:?}, not {want:?}, 60 s after the daemons started; router stderr:\n{}",
            learnt(),
            router.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "the BGP routes in bricks {:?} after BIRD started",
        start.elapsed()
    );

    // h1's stream reaches the peer through bricks by the learnt route.
    let stop = Arc::new(AtomicBool::new(false));
    let (got, recv) = common::udp_receiver(net.ns_name("peer"), "::", 9000, stop.clone());
    let send_stop = Arc::new(AtomicBool::new(false));
    let flow = common::udp_sender(
        net.ns_name("h1"),
        "[::]:0",
        "[2001:db8:99::5]:9000",
        send_stop.clone(),
    );
    let until = Instant::now() + Duration::from_secs(10);
    while got.lock().unwrap().len() < 200 {
        assert!(Instant::now() < until, "h1's stream did not reach the peer");
        std::thread::sleep(Duration::from_millis(20));
    }

    // Disabling the session withdraws the routes from bricks within a
    // second, and the stream stops.
    let ctl = dir.path().join("router.ctl");
    let out = output_timeout(
        std::process::Command::new("birdc").args(["-s", ctl.to_str().unwrap(), "disable", "peer"]),
        Duration::from_secs(10),
    )
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let t = Instant::now();
    while !learnt().is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "still {:?} a second after `birdc disable peer`",
            learnt()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let withdrawn = t.elapsed();
    eprintln!("withdrawn from bricks {withdrawn:?} after `birdc disable peer`");
    std::thread::sleep(Duration::from_millis(300));
    let before = got.lock().unwrap().len();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        got.lock().unwrap().len(),
        before,
        "packets reached the peer after the withdrawal"
    );
    send_stop.store(true, Ordering::Relaxed);
    flow.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    recv.join().unwrap();
    drop(daemons);
}
