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
//! IPv6 the same way, through the same ports and the same configuration
//! (conf/bgp-router.click is dual-stack): the peer's BIRD announces /48s
//! over an IPv6 BGP session with the router host's BIRD (or FRR's bgpd,
//! whose zebra streams them over FPM), whose packets and Neighbor
//! Discovery go up and down the TAP mirrors; bricks' IPv6 lookup learns
//! the routes, h1 pings an address inside one through bricks, and a
//! disabled session withdraws them within a second.
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
        net.sysctl("r", "net.ipv6.conf.all.forwarding", "0")
            .unwrap();
        net.add_link("h1", "eth0", "r", "eth0", 1).unwrap();
        net.add_link("peer", "eth0", "r", "eth1", 1).unwrap();
        // The ports are bricks'; the host's IPv6 lives on the TAPs, with
        // the link-local addresses the kernel would give the ports too.
        for dev in ["eth0", "eth1"] {
            net.sysctl("r", &format!("net.ipv6.conf.{dev}.disable_ipv6"), "1")
                .unwrap();
        }
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
        self.start_frr_with(
            fpm_port,
            "router bgp 65001\n bgp router-id 10.2.0.1\n no bgp ebgp-requires-policy\n\
             \x20neighbor 10.2.0.2 remote-as 65002\n neighbor 10.2.0.2 timers connect 1\n\
             \x20address-family ipv4 unicast\n  neighbor 10.2.0.2 activate\n exit-address-family\n",
        );
    }

    /// [`Lab::start_frr`] with bgpd configured by `bgpd`.
    fn start_frr_with(&mut self, fpm_port: u16, bgpd: &str) {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.dir.path().to_str().unwrap().to_string();
        // The daemons drop to user frr and write their sockets here.
        std::fs::set_permissions(self.dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let zebra = format!("hostname r\nfpm address 127.0.0.1 port {fpm_port}\n");
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

/// The IPv4 prefixes of a real Internet table (RouteViews' route-views2
/// RIB of 2014-05-13, `tests/data/routeviews/`), none inside the lab's
/// own networks: `n` of them, spread evenly over the table (all of it
/// when `n` is larger).
fn real_prefixes(n: usize) -> Vec<String> {
    use std::io::Read;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/routeviews/prefixes.20140513.0600-v4.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let all: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(';'))
        .filter_map(|l| l.split('\t').next())
        .filter(|p| {
            let (addr, len) = p.split_once('/').unwrap();
            let a: std::net::Ipv4Addr = addr.parse().unwrap();
            let len: u8 = len.parse().unwrap();
            len >= 8 && a.octets()[0] != 10 && a.octets()[0] != 198
        })
        .collect();
    assert!(all.len() > 500_000, "{} prefixes", all.len());
    let step = (all.len() / n.max(1)).max(1);
    all.iter()
        .step_by(step)
        .take(n)
        .map(|p| p.to_string())
        .collect()
}

/// A full table from BIRD: the peer announces the prefixes of a real
/// Internet table (`BRICKS_DAEMON_ROUTES` of them, 50,000 by default;
/// 500,000 for the figure in BENCHMARKS.md) and bricks loads it through
/// the router host's BIRD and kernel table 100 while h1's pings to the
/// peer keep being forwarded.
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
    let more = real_prefixes(n);
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

// ---------------------------------------------------------------------
// IPv6 through the same ports and the same configuration.

/// Prefixes the peer announces over IPv6; its address 2001:db8:99::5
/// answers pings.
const ANNOUNCED6: [&str; 2] = ["2001:db8:98::/48", "2001:db8:99::/48"];

impl Lab {
    /// IPv6 on h1 (2001:db8:1::2) and the peer (2001:db8:2::2, and
    /// 2001:db8:99::5 on its loopback), each with bricks as its default
    /// router. The router host's addresses are on the TAPs already.
    fn add_ipv6(&self) {
        let ip6 = |ns: &str, args: &[&str]| {
            let mut argv = vec!["ip", "-6"];
            argv.extend_from_slice(args);
            let out =
                output_timeout(&mut self.net.exec(ns, &argv), Duration::from_secs(5)).unwrap();
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
    }

    /// The peer's BIRD: AS 65002 over IPv6 (2001:db8:2::2 to the router's
    /// 2001:db8:2::1 on bricks1), announcing [`ANNOUNCED6`]. Its next hops
    /// are its own: the global address and, the session being direct, its
    /// link-local one.
    fn start_peer6(&mut self) {
        let statics: String = ANNOUNCED6
            .iter()
            .map(|p| format!("  route {p} blackhole;\n"))
            .collect();
        let conf = format!(
            "router id 10.2.0.2;\n\
             protocol device {{ scan time 1; }}\n\
             protocol static announced {{\n  ipv6;\n{statics}}}\n\
             protocol bgp tobricks {{\n  local 2001:db8:2::2 as 65002;\n  neighbor 2001:db8:2::1 as 65001;\n\
             \x20 connect delay time 1; connect retry time 1; error wait time 1, 2;\n\
             \x20 ipv6 {{ import none; export where proto = \"announced\"; }};\n}}\n"
        );
        self.bird("peer", "peer", &conf);
    }

    /// The router host's BIRD over IPv6: AS 65001, routes into kernel
    /// table 100.
    fn start_router_bird6(&mut self) {
        let conf = "router id 10.2.0.1;\n\
             protocol device { scan time 1; }\n\
             protocol kernel {\n  kernel table 100;\n  scan time 5;\n  learn off;\n\
             \x20 ipv6 { import none; export all; };\n}\n\
             protocol bgp peer {\n  local 2001:db8:2::1 as 65001;\n  neighbor 2001:db8:2::2 as 65002;\n\
             \x20 connect delay time 1; connect retry time 1; error wait time 1, 2;\n\
             \x20 ipv6 { import all; export none; };\n}\n";
        self.bird("r", "router", conf);
    }

    /// bricks' learnt IPv6 routes for the announced prefixes, sorted, as
    /// `PREFIX GATEWAY OUTPUT`.
    fn bricks_routes6(&self) -> Vec<String> {
        let out = output_timeout(
            std::process::Command::new(env!("CARGO_BIN_EXE_bricks")).args([
                "ctl",
                self.sock.to_str().unwrap(),
                "read",
                "rt6.table",
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
    }

    /// Whether the learnt IPv6 routes are [`ANNOUNCED6`], out of eth1
    /// (output 2) through the peer: its global address or a link-local
    /// one, as the daemon chose.
    fn has_announced6(&self) -> bool {
        let r = self.bricks_routes6();
        r.len() == ANNOUNCED6.len()
            && r.iter().zip(ANNOUNCED6).all(|(l, p)| {
                let w: Vec<&str> = l.split(' ').collect();
                w.len() == 3
                    && w[0] == p
                    && (w[1] == "2001:db8:2::2" || w[1].starts_with("fe80:"))
                    && w[2] == "2"
            })
    }

    fn ping6(&self, from: &str, to: &str) -> bool {
        output_timeout(
            &mut self
                .net
                .exec(from, &["ping", "-6", "-c", "1", "-W", "1", to]),
            Duration::from_secs(5),
        )
        .map(|o| o.status.success())
        .unwrap_or(false)
    }

    /// h1 reaches 2001:db8:99::5 within `timeout` (the first pings may
    /// wait for Neighbor Discovery on either side).
    fn ping6_within(&self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        loop {
            if self.ping6("h1", "2001:db8:99::5") {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
        }
    }
}

/// IPv6 routes from a real BGP session through bricks' own ports: the
/// peer's BIRD and the router host's BIRD speak BGP over IPv6 across eth1,
/// their packets and Neighbor Discovery going up and down the TAP mirror
/// (the host answers solicitations for its addresses, bricks' solicitor
/// learns from them); the router host's BIRD writes the routes into kernel
/// table 100; bricks' IPv6 lookup follows that table, and h1 pings an
/// address inside an announced prefix through bricks. `birdc disable` of
/// the session withdraws them from bricks within a second. IPv4 through
/// the same dual-stack router keeps working beside it.
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
    let mut lab = Lab::start("bgp6", "netlink:table=100");
    lab.add_ipv6();
    lab.start_peer6();
    assert!(!lab.ping6("h1", "2001:db8:99::5"));
    lab.start_router_bird6();
    let t = lab.wait_until("established session", Duration::from_secs(60), || {
        lab.birdc("router.ctl", &["show", "protocols", "peer"])
            .contains("Established")
    });
    eprintln!("IPv6 BGP session established through bricks in {t:?}");
    let t = lab.wait_until(
        "learnt IPv6 routes in bricks",
        Duration::from_secs(30),
        || lab.has_announced6(),
    );
    eprintln!(
        "the IPv6 routes in bricks {t:?} after the session: {:?}",
        lab.bricks_routes6()
    );
    assert!(
        lab.ping6_within(Duration::from_secs(10)),
        "h1 cannot reach an announced IPv6 prefix; router stderr:\n{}",
        lab.router.stderr()
    );
    // The session's packets went up eth1's TAP, and bricks knows the peer
    // from the Neighbor Discovery it was given a copy of (the peer's
    // solicitations for the router, or its answers to bricks' own).
    assert!(lab.router.counter("tohost1", "count") > 0);
    assert!(
        lab.router.counter("nds1", "learnt") + lab.router.counter("nds1", "advertisements") > 0
    );
    // IPv4 through the same router.
    assert!(lab.ping("h1", "10.2.0.2"), "IPv4 beside IPv6");

    lab.birdc("router.ctl", &["disable", "peer"]);
    let t = lab.wait_until("IPv6 withdrawal", Duration::from_secs(1), || {
        lab.bricks_routes6().is_empty()
    });
    eprintln!("withdrawn from bricks {t:?} after birdc disable");
    assert!(!lab.ping6("h1", "2001:db8:99::5"));
}

/// FRR over IPv6: bgpd peers with the peer's BIRD over IPv6 through
/// bricks' ports, zebra streams the routes over FPM to both of bricks'
/// lookups (the IPv6 ones reach `rt6`), h1 pings through them, and a
/// neighbour shutdown withdraws them over FPM within a second.
#[test]
fn frr_streams_ipv6_routes_over_fpm() {
    let test = "frr_streams_ipv6_routes_over_fpm";
    if let Some(why) = skip_unless_root(test) {
        eprintln!("{why}");
        return;
    }
    if !need("/usr/sbin/bird", test) || !need("/usr/lib/frr/zebra", test) {
        return;
    }
    let port = 2621;
    let mut lab = Lab::start("frr6", &format!("fpm:127.0.0.1:{port}"));
    lab.add_ipv6();
    lab.start_peer6();
    lab.start_frr_with(
        port,
        "router bgp 65001\n bgp router-id 10.2.0.1\n no bgp ebgp-requires-policy\n\
         \x20no bgp default ipv4-unicast\n\
         \x20neighbor 2001:db8:2::2 remote-as 65002\n neighbor 2001:db8:2::2 timers connect 1\n\
         \x20address-family ipv6 unicast\n  neighbor 2001:db8:2::2 activate\n exit-address-family\n",
    );
    let t = lab.wait_until(
        "IPv6 routes over FPM in bricks",
        Duration::from_secs(60),
        || lab.has_announced6(),
    );
    eprintln!(
        "the IPv6 routes in bricks {t:?} after FRR started: {:?}",
        lab.bricks_routes6()
    );
    lab.router
        .wait_for("the FPM connection counted", Duration::from_secs(5), |r| {
            r.counter("rt6", "fpm_connections") == 1
        });
    assert!(
        lab.ping6_within(Duration::from_secs(10)),
        "h1 cannot reach a prefix learnt over FPM; router stderr:\n{}",
        lab.router.stderr()
    );
    lab.vtysh(&[
        "configure terminal",
        "router bgp 65001",
        "neighbor 2001:db8:2::2 shutdown",
    ]);
    let t = lab.wait_until("IPv6 withdrawal over FPM", Duration::from_secs(1), || {
        lab.bricks_routes6().is_empty()
    });
    eprintln!("withdrawn from bricks {t:?} after the neighbour shutdown");
    assert!(!lab.ping6("h1", "2001:db8:99::5"));
    lab.vtysh(&[
        "configure terminal",
        "router bgp 65001",
        "no neighbor 2001:db8:2::2 shutdown",
    ]);
    lab.wait_until("IPv6 routes back over FPM", Duration::from_secs(60), || {
        lab.has_announced6()
    });
    let fib = lab.vtysh(&["show ipv6 route bgp"]);
    let n = fib.lines().filter(|l| l.starts_with("B>")).count();
    assert_eq!(n, ANNOUNCED6.len(), "FRR's FIB:\n{fib}");
}
