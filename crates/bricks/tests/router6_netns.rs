//! The dual-stack router between real Linux hosts over IPv6: the bricks
//! binary runs conf/dual-stack-router.click in a network namespace whose
//! kernel has IPv6 switched off, and the hosts' own tools check what it
//! does: ping6 both ways and to the router's addresses, Neighbor Discovery
//! in both directions with no static entry, a TCP transfer over IPv6 checked
//! byte for byte, path MTU discovery from bricks' Packet Too Big (the far
//! link's MTU is 1400 at the router, the hosts' 1500), hop limit 1 answered
//! with time exceeded from the router's address on the sender's side, no
//! route answered with unreachable (no route), a neighbour that never
//! answers with address unreachable. The router answers pings to its
//! link-local address and UDP to its addresses with port unreachable (the
//! hosts' sockets see the connection refused), and sends a packet from a
//! link-local source to no other link, answering it with "beyond scope of
//! source address". IPv4 keeps working beside it. A host
//! that accepts Router Advertisements configures an address in its link's
//! prefix from bricks' (SLAAC, RFC 4862) and takes the router as its
//! default.
//!
//! Needs root (skipped otherwise, a failure under CI=true). Each test
//! builds its own network, named uniquely, and everything is deleted when
//! it ends, failed or not.

#[allow(dead_code)] // shared with the other tests
mod common;

use bricks_netns::{output_timeout, skip_unless_root, Captured, Network};
use common::LiveRouter;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Probes from a host with UDP sockets (Python, which scripts/setup
/// installs): to the router's global, IPv4 and link-local addresses, and
/// from the host's link-local address to `argv[3]` beyond the router; one
/// line a probe, `reply`, `refused` (port unreachable), `timeout` or the
/// socket's error. Then a datagram of protocol 253 from a raw socket to
/// the router's IPv6 and IPv4 addresses, and the ICMP error that comes
/// back; then TCP connections to them, and how they fail.
const UDP_PROBES: &str = r#"
import socket, sys, errno
def link_local(ifname):
    for line in open('/proc/net/if_inet6'):
        a, _, _, scope, _, name = line.split()
        if name == ifname and scope == '20':
            return ':'.join(a[i:i + 4] for i in range(0, 32, 4))
def probe(family, dst, src=None):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.settimeout(3)
    if family == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, 25, 1)  # IPV6_RECVERR: non-fatal errors too
    if src:
        s.bind(src)
    s.connect(dst)
    s.send(b'probe')
    try:
        s.recv(100)
        return 'reply'
    except ConnectionRefusedError:
        return 'refused'
    except socket.timeout:
        return 'timeout'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
def proto_probe(family, dst):
    v6 = family == socket.AF_INET6
    r = socket.socket(family, socket.SOCK_RAW, socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP)
    r.settimeout(3)
    socket.socket(family, socket.SOCK_RAW, 253).sendto(b'probe-253', (dst, 0))
    try:
        while True:
            m = r.recv(2000)
            if not v6:
                m = m[(m[0] & 15) * 4:]  # raw IPv4 sockets get the IP header
                if m[0] == 3:
                    return 'unreachable code %d' % m[1]
            elif m[0] == 4:
                return 'parameter problem code %d pointer %d' % (m[1], int.from_bytes(m[4:8], 'big'))
    except socket.timeout:
        return 'timeout'
def tcp_probe(family, dst):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(dst)
        return 'connected'
    except socket.timeout:
        return 'timeout'
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
idx = socket.if_nametoindex('eth0')
print('global', probe(socket.AF_INET6, (sys.argv[1], 33434)))
print('ipv4', probe(socket.AF_INET, (sys.argv[2], 33434)))
print('link-local', probe(socket.AF_INET6, ('fe80::1', 33434, 0, idx)))
print('from link-local', probe(socket.AF_INET6, (sys.argv[3], 9), (link_local('eth0'), 0, 0, idx)))
print('ipv6 protocol 253', proto_probe(socket.AF_INET6, sys.argv[1]))
print('ipv4 protocol 253', proto_probe(socket.AF_INET, sys.argv[2]))
print('ipv6 tcp', tcp_probe(socket.AF_INET6, (sys.argv[1], 22)))
print('ipv4 tcp', tcp_probe(socket.AF_INET, (sys.argv[2], 22)))
"#;

const H1: &str = "2001:db8:1::2";
const H2: &str = "2001:db8:2::2";
const GW1: &str = "2001:db8:1::1";
const GW2: &str = "2001:db8:2::1";
/// The router's MTU towards h2 (MTU1); the veths' stays 1500.
const FAR_MTU: u32 = 1400;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A network with the router running in it.
struct Lab {
    // Fields drop in order: the router ends before its network goes.
    router: LiveRouter,
    net: Network,
    macs: [String; 2],
}

impl Lab {
    fn start(tag: &str, backend: &str, threads: usize) -> Lab {
        Lab::start_with(tag, backend, threads, None)
    }

    /// Like [`Lab::start`], with `accept_ra` (a host) taking Router
    /// Advertisements.
    fn start_with(tag: &str, backend: &str, threads: usize, accept_ra: Option<&str>) -> Lab {
        Lab::start_defined(tag, backend, threads, accept_ra, &[])
    }

    /// Like [`Lab::start_with`], with more `NAME=VALUE` defines for the
    /// configuration.
    fn start_defined(
        tag: &str,
        backend: &str,
        threads: usize,
        accept_ra: Option<&str>,
        more: &[&str],
    ) -> Lab {
        Lab::start_full(tag, backend, threads, accept_ra, more, &[])
    }

    /// Like [`Lab::start_defined`], with more `bricks run` arguments.
    fn start_full(
        tag: &str,
        backend: &str,
        threads: usize,
        accept_ra: Option<&str>,
        more: &[&str],
        extra: &[String],
    ) -> Lab {
        let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
        for ns in ["r", "h1", "h2"] {
            net.add_namespace(ns).unwrap();
        }
        // The router's kernel neither answers nor forwards: bricks does.
        net.sysctl("r", "net.ipv6.conf.all.disable_ipv6", "1")
            .unwrap();
        net.sysctl("r", "net.ipv6.conf.default.disable_ipv6", "1")
            .unwrap();
        net.sysctl("r", "net.ipv4.ip_forward", "0").unwrap();
        let mut macs = Vec::new();
        for (host, dev, addr, gw, v4, gw4) in [
            ("h1", "eth0", H1, GW1, "10.1.0.2/24", "10.1.0.1"),
            ("h2", "eth1", H2, GW2, "10.2.0.2/24", "10.2.0.1"),
        ] {
            net.sysctl(host, "net.ipv6.conf.all.disable_ipv6", "0")
                .unwrap();
            net.sysctl(host, "net.ipv6.conf.default.disable_ipv6", "0")
                .unwrap();
            // Addresses usable at once, not after duplicate address
            // detection; no router advertisements expected.
            net.sysctl(host, "net.ipv6.conf.default.accept_dad", "0")
                .unwrap();
            let ra = if accept_ra == Some(host) { "1" } else { "0" };
            net.sysctl(host, "net.ipv6.conf.default.accept_ra", ra)
                .unwrap();
            net.add_link(host, "eth0", "r", dev, 2).unwrap();
            net.disable_offloads(host, "eth0").unwrap();
            net.disable_offloads("r", dev).unwrap();
            net.add_addr(host, "eth0", v4).unwrap();
            net.add_route(host, &["default", "via", gw4]).unwrap();
            let out = output_timeout(
                &mut net.exec(
                    host,
                    &[
                        "ip",
                        "-6",
                        "addr",
                        "add",
                        &format!("{addr}/64"),
                        "dev",
                        "eth0",
                        "nodad",
                    ],
                ),
                Duration::from_secs(5),
            )
            .unwrap();
            assert!(out.status.success(), "{out:?}");
            let out = output_timeout(
                &mut net.exec(host, &["ip", "-6", "route", "add", "default", "via", gw]),
                Duration::from_secs(5),
            )
            .unwrap();
            assert!(out.status.success(), "{out:?}");
            macs.push(net.mac("r", dev).unwrap());
        }
        let conf = root().join("conf/dual-stack-router.click");
        let mut defines = vec![
            format!("BACKEND={backend}"),
            format!("MAC0={}", macs[0]),
            format!("MAC1={}", macs[1]),
            format!("MTU1={FAR_MTU}"),
        ];
        defines.extend(more.iter().map(|d| d.to_string()));
        let router = LiveRouter::start_with(&net, "r", &conf, threads, &defines, extra);
        Lab {
            router,
            net,
            macs: [macs[0].clone(), macs[1].clone()],
        }
    }

    fn wait_for(&self, what: &str, timeout: Duration, ok: impl Fn(&Lab) -> bool) {
        self.router.wait_for(what, timeout, |_| ok(self));
    }

    fn stderr(&self) -> String {
        self.router.stderr()
    }

    fn counter(&self, name: &str, counter: &str) -> u64 {
        self.router.counter(name, counter)
    }

    fn run(&self, ns: &str, argv: &[&str], secs: u64) -> std::process::Output {
        output_timeout(&mut self.net.exec(ns, argv), Duration::from_secs(secs))
            .unwrap_or_else(|e| panic!("{e}\nrouter stderr:\n{}", self.stderr()))
    }

    /// `ping -6` from `from`: its standard output.
    fn ping6(&self, from: &str, args: &[&str]) -> (bool, String) {
        let mut argv = vec!["ping", "-6", "-n"];
        argv.extend_from_slice(args);
        let out = self.run(from, &argv, 30);
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    fn ping(&self, from: &str, to: &str) {
        let (ok, text) = self.ping6(from, &["-c", "3", "-i", "0.2", "-W", "2", to]);
        assert!(
            ok && text.contains("3 received"),
            "ping -6 {from} -> {to}:\n{text}\nrouter stderr:\n{}",
            self.stderr()
        );
    }

    /// The router's MAC as the host learnt it by Neighbor Discovery.
    fn check_neighbour(&self, host: &str, router_ip: &str, mac: &str) {
        let out = self.run(host, &["ip", "-6", "neigh", "show", router_ip], 5);
        let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
        assert!(
            text.contains(&mac.to_lowercase()),
            "{host} does not know {router_ip} at {mac}: {text}"
        );
        assert!(
            ["reachable", "stale", "delay", "probe"]
                .iter()
                .any(|s| text.contains(s)),
            "{host}'s entry for {router_ip} is not a learnt one: {text}"
        );
        assert!(!text.contains("permanent"), "{text}");
    }

    /// Sends `mib` MiB from h1 to h2 over TCP/IPv6 and checks they arrive
    /// whole.
    fn tcp(&self, mib: u64) {
        let bin = env!("CARGO_BIN_EXE_bricks");
        let bytes = (mib << 20).to_string();
        let addr = format!("[{H2}]:5001");
        let server = Captured::spawn(&mut self.net.exec(
            "h2",
            &[
                bin,
                "demo",
                "tcp-serve",
                "--listen",
                &addr,
                "--bytes",
                &bytes,
            ],
        ))
        .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let sent = self.run(
            "h1",
            &[bin, "demo", "tcp-send", "--to", &addr, "--bytes", &bytes],
            90,
        );
        assert!(
            sent.status.success(),
            "tcp-send over IPv6: {}\nrouter stderr:\n{}",
            String::from_utf8_lossy(&sent.stderr),
            self.stderr()
        );
        let got = server.wait(Duration::from_secs(30), None).unwrap();
        let text = String::from_utf8_lossy(&got.stdout);
        let result: serde_json::Value = text
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("tcp-serve printed no result: {text}"));
        assert_eq!(result["intact"], true, "{result}");
        assert_eq!(result["received"].as_u64(), Some(mib << 20), "{result}");
    }
}

/// Everything an IPv6 router owes two hosts, on one backend and worker
/// count.
fn suite(tag: &str, backend: &str, threads: usize) {
    let name = format!("router6_netns {backend} {threads} worker(s)");
    if skip_unless_root(&name).is_some() {
        return;
    }
    let mut lab = Lab::start(tag, backend, threads);
    let prefix = lab.net.prefix().to_string();

    // Hosts reach each other through bricks over IPv6, both ways, and the
    // router answers pings to its addresses, on both sides and across.
    lab.ping("h1", H2);
    lab.ping("h2", H1);
    lab.ping("h1", GW1);
    lab.ping("h2", GW2);
    lab.ping("h1", GW2);
    // Its link-local address too: the reply goes back by the link the
    // request came in by.
    lab.ping("h1", "fe80::1%eth0");
    lab.wait_for(
        "ICMP6PingResponder's replies",
        Duration::from_secs(5),
        |l| l.counter("ping6", "replies") >= 12,
    );
    // A ping to all-nodes and to all-routers on a link: the router
    // answers from its link-local address on that link (RFC 4443 section
    // 4.2), as Linux hosts do.
    for (host, group) in [("h1", "ff02::1%eth0"), ("h2", "ff02::2%eth0")] {
        let (_, text) = lab.ping6(host, &["-c", "2", "-i", "0.2", "-W", "2", group]);
        assert!(
            text.contains("from fe80::1%eth0") || text.contains("from fe80::1:"),
            "ping -6 {group} from {host}: no answer from fe80::1\n{text}\nrouter stderr:\n{}",
            lab.stderr()
        );
    }
    lab.wait_for("multicast echo replies", Duration::from_secs(5), |l| {
        l.counter("mping6_0", "replies") >= 2 && l.counter("mping6_1", "replies") >= 2
    });
    udp_probes(&lab);
    redirect(&lab);

    // Neighbor Discovery both ways, nothing static: h1 asked for the
    // router first and got its advertisement; the router solicited h2
    // (whose kernel may learn the router's MAC from that solicitation
    // alone, RFC 4861 section 7.2.3); both hosts know the router's MACs.
    lab.check_neighbour("h1", GW1, &lab.macs[0]);
    lab.check_neighbour("h2", GW2, &lab.macs[1]);
    lab.wait_for("ND counters", Duration::from_secs(5), |l| {
        l.counter("nda0", "advertisements") >= 1 && l.counter("nds1", "solicitations") >= 1
    });

    // IPv4 beside it.
    let (ok, text) = {
        let out = lab.run(
            "h1",
            &[
                "ping", "-4", "-n", "-c", "2", "-i", "0.2", "-W", "2", "10.2.0.2",
            ],
            20,
        );
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    assert!(ok, "IPv4 ping through the dual-stack router:\n{text}");

    // A TCP transfer over IPv6 arrives whole. Its 1500-byte packets do not
    // fit the far link's 1400: bricks answers with Packet Too Big, h1 learns
    // the path MTU and the transfer completes.
    lab.tcp(4);
    lab.wait_for("Packet Too Big sent", Duration::from_secs(5), |l| {
        l.counter("mtu1", "long") >= 1
    });
    let out = lab.run("h1", &["ip", "-6", "route", "get", H2], 5);
    let route = String::from_utf8_lossy(&out.stdout);
    assert!(
        route.contains(&format!("mtu {FAR_MTU}")),
        "h1 did not learn the path MTU {FAR_MTU} towards {H2}: {route}"
    );

    // Hop limit 1: time exceeded from the router's address on h1's side.
    let (_, text) = lab.ping6("h1", &["-c", "1", "-t", "1", "-W", "3", H2]);
    assert!(
        text.contains(&format!("From {GW1}")) && text.contains("Time exceeded"),
        "ping -6 -t 1 from h1 did not see time exceeded from {GW1}:\n{text}\nrouter stderr:\n{}",
        lab.stderr()
    );

    // No route: destination unreachable (no route) from the router.
    let (_, text) = lab.ping6("h1", &["-c", "1", "-W", "3", "2001:db8:99::1"]);
    assert!(
        text.contains(&format!("From {GW1}")) && text.contains("No route"),
        "ping -6 to a destination without a route:\n{text}\nrouter stderr:\n{}",
        lab.stderr()
    );

    // An on-link neighbour that never answers: after three solicitations,
    // address unreachable from the router's address on that link.
    let (_, text) = lab.ping6("h1", &["-c", "1", "-W", "8", "2001:db8:2::99"]);
    assert!(
        text.contains(&format!("From {GW2}")) && text.contains("Address unreachable"),
        "ping -6 to an unresolvable neighbour:\n{text}\nrouter stderr:\n{}",
        lab.stderr()
    );
    lab.wait_for("IP6NDSolicitor's no_reply", Duration::from_secs(5), |l| {
        l.counter("nds1", "no_reply") >= 1
    });

    assert!(
        lab.router.child.try_wait().is_none(),
        "the router ended during the suite:\n{}",
        lab.stderr()
    );
    drop(lab);
    let left: Vec<String> = bricks_netns::list_namespaces()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// UDP to the router's addresses is refused (port unreachable, from the
/// address it was sent to, to a connected socket, which takes only that);
/// a packet from h1's link-local address to h2 never reaches h2's link
/// and h1 hears "beyond scope of source address" (EHOSTUNREACH).
/// `Icmp6InRedirects` of `host`'s network namespace.
fn redirects_taken(lab: &Lab, host: &str) -> u64 {
    let out = lab.run(host, &["cat", "/proc/net/snmp6"], 5);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("Icmp6InRedirects"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// A packet from h1 that the router sends back out of the link it came in
/// by earns h1 a redirect to the destination itself, and Linux takes it
/// (RFC 4861 section 8): from the router's link-local address, hop limit
/// 255, target and destination the on-link address.
fn redirect(lab: &Lab) {
    let dest = "2001:db8:1::77";
    let route = |verb: &str| {
        lab.run(
            "h1",
            &[
                "ip",
                "-6",
                "route",
                verb,
                &format!("{dest}/128"),
                "via",
                "fe80::1",
                "dev",
                "eth0",
            ],
            5,
        )
    };
    let out = route("add");
    assert!(out.status.success(), "{out:?}");
    let before = redirects_taken(lab, "h1");
    // Nobody has the address: the ping itself goes unanswered.
    let _ = lab.ping6("h1", &["-c", "1", "-W", "1", dest]);
    lab.wait_for("a redirect", Duration::from_secs(5), |l| {
        l.counter("redirect6_0", "generated") >= 1
    });
    let end = std::time::Instant::now() + Duration::from_secs(5);
    while redirects_taken(lab, "h1") <= before {
        assert!(
            std::time::Instant::now() < end,
            "h1 took no redirect (Icmp6InRedirects {before})\nrouter stderr:\n{}",
            lab.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = lab.run("h1", &["ip", "-6", "route", "get", dest], 5);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("via"),
        "h1 still sends {dest} through the router after the redirect: {text}"
    );
    // The router sent no redirect for packets from the other link.
    assert_eq!(lab.counter("redirect6_1", "generated"), 0);
    let _ = route("del");
}

fn udp_probes(lab: &Lab) {
    let has_python = lab
        .run("h1", &["python3", "-c", "pass"], 10)
        .status
        .success();
    if !has_python {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 is missing in CI (scripts/setup installs it)"
        );
        eprintln!("skipped the UDP probes: no python3 (scripts/setup installs it)");
        return;
    }
    let out = lab.run(
        "h1",
        &["python3", "-c", UDP_PROBES, GW2, "10.2.0.1", H2],
        30,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "global refused",
            "ipv4 refused",
            "link-local refused",
            "from link-local EHOSTUNREACH",
            "ipv6 protocol 253 parameter problem code 1 pointer 6",
            "ipv4 protocol 253 unreachable code 2",
            "ipv6 tcp EPROTO",
            "ipv4 tcp ENOPROTOOPT",
        ],
        "{}\nrouter stderr:\n{}",
        String::from_utf8_lossy(&out.stderr),
        lab.stderr()
    );
    // The packet turned back on the path out of eth1, never to reach it.
    lab.wait_for("the beyond-scope error", Duration::from_secs(5), |l| {
        l.counter("beyond1", "generated") == 1
    });
}

/// h1 takes Router Advertisements: from bricks' first one, sent when the
/// router starts, it forms an address in 2001:db8:1::/64 (its static one
/// aside), learns the router's link-local address as a default router,
/// and reaches h2 from the new address.
#[test]
fn slaac_from_router_advertisements() {
    if skip_unless_root("router6_netns slaac").is_some() {
        return;
    }
    let lab = Lab::start_with("v6ra", "packet", 1, Some("h1"));
    let slaac = |l: &Lab| -> Option<String> {
        let out = l.run("h1", &["ip", "-6", "addr", "show", "dev", "eth0"], 5);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.lines()
            .find(|line| line.contains("inet6 2001:db8:1:") && line.contains("dynamic"))
            .map(|line| line.split_whitespace().nth(1).unwrap_or("").to_string())
    };
    lab.wait_for("h1's SLAAC address", Duration::from_secs(40), |l| {
        slaac(l).is_some()
    });
    let addr = slaac(&lab).unwrap();
    let addr = addr.split('/').next().unwrap().to_string();
    assert_ne!(addr, H1);
    assert!(lab.counter("ra0", "advertisements") >= 1);
    let out = lab.run("h1", &["ip", "-6", "route", "show", "default"], 5);
    let routes = String::from_utf8_lossy(&out.stdout);
    assert!(
        routes.contains("via fe80::1"),
        "h1 has no default route from the advertisement: {routes}"
    );
    // The new address works through the router.
    let (ok, text) = lab.ping6("h1", &["-c", "2", "-i", "0.2", "-W", "2", "-I", &addr, H2]);
    assert!(
        ok && text.contains("2 received"),
        "ping -6 -I {addr}:\n{text}\nrouter stderr:\n{}",
        lab.stderr()
    );
    // h2 does not take advertisements: nothing but its static address.
    let out = lab.run("h2", &["ip", "-6", "addr", "show", "dev", "eth0"], 5);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("dynamic"));
}

/// h1's routes that came from Router Advertisements via the router's
/// link-local address, and its addresses formed from them.
fn ra_state(lab: &Lab) -> (bool, bool) {
    let out = lab.run("h1", &["ip", "-6", "route", "show", "default"], 5);
    let routes = String::from_utf8_lossy(&out.stdout).to_string();
    let out = lab.run("h1", &["ip", "-6", "addr", "show", "dev", "eth0"], 5);
    let addrs = String::from_utf8_lossy(&out.stdout).to_string();
    (
        routes.contains("via fe80::1"),
        addrs
            .lines()
            .any(|l| l.contains("inet6 2001:db8:1:") && l.contains("dynamic")),
    )
}

/// When bricks stops (SIGTERM), its final Router Advertisement (router
/// lifetime 0, RFC 4861 section 6.2.5) leaves before the device closes:
/// Linux on h1 drops its default route via the router at once, instead
/// of keeping it for the advertised 1,800 s, and keeps the address it
/// formed in the prefix, whose lifetimes the final advertisement repeats.
/// With FINAL false the route stays: it is the advertisement that removes
/// it, not the router's leaving. Before the stop, with FINAL true, the
/// `active` handler written through the control socket takes the route
/// away (`false`) and brings it back (`true`) while the router runs.
#[test]
fn a_stopping_router_withdraws_itself_as_default_router() {
    if skip_unless_root("router6_netns final advertisement").is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (tag, final_ra) in [("v6fin", true), ("v6nofin", false)] {
        let define = format!("RA_FINAL={final_ra}");
        let sock = dir.path().join(format!("{tag}.sock"));
        let extra = ["--control".to_string(), sock.display().to_string()];
        let mut lab = Lab::start_full(tag, "packet", 2, Some("h1"), &[&define], &extra);
        lab.wait_for(
            "h1's default route via fe80::1",
            Duration::from_secs(40),
            |l| ra_state(l) == (true, true),
        );
        if final_ra {
            let ctl = |value: &str| {
                let out = std::process::Command::new(env!("CARGO_BIN_EXE_bricks"))
                    .args(["ctl", sock.to_str().unwrap(), "write", "ra0.active", value])
                    .output()
                    .unwrap();
                let text = String::from_utf8_lossy(&out.stdout).to_string();
                assert!(out.status.success() && text.trim() == "ok", "{text}");
            };
            ctl("false");
            lab.wait_for(
                "h1's default route gone after ra0.active false",
                Duration::from_secs(5),
                |l| ra_state(l) == (false, true),
            );
            ctl("true");
            lab.wait_for(
                "h1's default route back after ra0.active true",
                Duration::from_secs(10),
                |l| ra_state(l) == (true, true),
            );
        }
        let status = lab.router.child.stop(Duration::from_secs(10));
        assert!(
            status.is_some_and(|s| s.success()),
            "bricks did not stop cleanly on SIGTERM: {status:?}\n{}",
            lab.stderr()
        );
        // The kernel acts on the advertisement as it arrives; give it a
        // moment all the same (and a route that stays, the same moment).
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        let mut state = ra_state(&lab);
        while final_ra && state.0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            state = ra_state(&lab);
        }
        if !final_ra {
            std::thread::sleep(Duration::from_secs(1));
            state = ra_state(&lab);
        }
        assert_eq!(
            state,
            (!final_ra, true),
            "FINAL {final_ra}: (default route via fe80::1, SLAAC address) after the stop\n{}",
            lab.stderr()
        );
    }
}

#[test]
fn af_packet_one_worker() {
    suite("v6p1", "packet", 1);
}

#[test]
fn af_xdp_two_workers() {
    suite("v6x2", "xdp", 2);
}

/// Behind a Linux bridge that snoops MLD and queries (an independent MLD
/// implementation), the router's reports put its port in the bridge's
/// multicast database for the solicited-node group of its addresses and
/// for all routers. So when another host on the link listens to the same
/// solicited-node group (h3's address shares 2001:db8:1::1's low 24
/// bits), the bridge still forwards h1's Neighbor Solicitations for the
/// router to it, and h1 reaches the router; without the reports it would
/// forward them to h3 alone.
#[test]
fn an_mld_snooping_switch_keeps_forwarding_solicitations_to_the_router() {
    let name = "an_mld_snooping_switch_keeps_forwarding_solicitations_to_the_router";
    if skip_unless_root(name).is_some() {
        return;
    }
    let mut net = Network::new(&Network::unique_prefix("v6mld")).unwrap();
    for ns in ["r", "h1", "h2", "h3", "sw"] {
        net.add_namespace(ns).unwrap();
    }
    net.sysctl("r", "net.ipv6.conf.all.disable_ipv6", "1")
        .unwrap();
    net.sysctl("r", "net.ipv6.conf.default.disable_ipv6", "1")
        .unwrap();
    fn sh(net: &Network, ns: &str, argv: &[&str]) -> String {
        let out = output_timeout(&mut net.exec(ns, argv), Duration::from_secs(10)).unwrap();
        assert!(out.status.success(), "{argv:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).to_string()
    }
    for ns in ["sw", "h1", "h2", "h3"] {
        for (k, v) in [
            ("net.ipv6.conf.all.disable_ipv6", "0"),
            ("net.ipv6.conf.default.disable_ipv6", "0"),
            ("net.ipv6.conf.default.accept_dad", "0"),
            ("net.ipv6.conf.default.accept_ra", "0"),
        ] {
            net.sysctl(ns, k, v).unwrap();
        }
    }
    sh(
        &net,
        "sw",
        &[
            "ip",
            "link",
            "add",
            "br0",
            "type",
            "bridge",
            "mcast_snooping",
            "1",
            "mcast_querier",
            "1",
            "mcast_startup_query_interval",
            "100",
        ],
    );
    sh(&net, "sw", &["ip", "link", "set", "br0", "up"]);
    for (ns, port) in [("h1", "p1"), ("h3", "p3"), ("r", "pr")] {
        net.add_link("sw", port, ns, "eth0", 1).unwrap();
        sh(&net, "sw", &["ip", "link", "set", port, "master", "br0"]);
        net.disable_offloads(ns, "eth0").unwrap();
    }
    net.add_link("h2", "eth0", "r", "eth1", 1).unwrap();
    net.disable_offloads("r", "eth1").unwrap();
    for (ns, addr) in [
        ("h1", "2001:db8:1::2/64"),
        ("h3", "2001:db8:1:0:1::1/64"),
        ("h2", "2001:db8:2::2/64"),
    ] {
        sh(
            &net,
            ns,
            &["ip", "-6", "addr", "add", addr, "dev", "eth0", "nodad"],
        );
    }
    let macs = [net.mac("r", "eth0").unwrap(), net.mac("r", "eth1").unwrap()];
    let conf = root().join("conf/dual-stack-router.click");
    let defines = [
        "BACKEND=packet".to_string(),
        format!("MAC0={}", macs[0]),
        format!("MAC1={}", macs[1]),
    ];
    let router = LiveRouter::start_with(&net, "r", &conf, 1, &defines, &[]);

    // The bridge learns the router's groups on its port, and h3's.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mdb = loop {
        let mdb = sh(&net, "sw", &["bridge", "mdb", "show"]);
        let has = |port: &str, group: &str| {
            mdb.lines().any(|l| {
                l.contains(&format!("port {port} ")) && l.contains(&format!("grp {group} "))
            })
        };
        if has("pr", "ff02::1:ff00:1") && has("pr", "ff02::2") && has("p3", "ff02::1:ff00:1") {
            break mdb;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the bridge did not learn the groups:\n{mdb}\nrouter stderr:\n{}",
            router.stderr()
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(router.counter("mld0", "reports") >= 1, "{mdb}");

    // h1 resolves the router through the snooping bridge and pings it.
    sh(&net, "h1", &["ip", "-6", "neigh", "flush", "dev", "eth0"]);
    let out = output_timeout(
        &mut net.exec(
            "h1",
            &["ping", "-6", "-n", "-c", "2", "-i", "0.2", "-W", "2", GW1],
        ),
        Duration::from_secs(15),
    )
    .unwrap();
    assert!(
        out.status.success(),
        "h1 could not reach the router through the snooping bridge:\n{}\n{mdb}\nrouter stderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        router.stderr()
    );
    drop(router);
    net.delete();
}
