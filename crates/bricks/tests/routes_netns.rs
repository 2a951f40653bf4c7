//! Routes learnt live from a Linux routing table while traffic flows.
//!
//! A three-port router (h1, h2, h3 on its ports) runs with
//! `DirectIPLookup(..., ROUTES netlink:table=100, DEVICES "eth0 eth1 eth2")`
//! in a namespace whose kernel does not forward. `ip route add`, `replace`
//! and `del` in table 100 of that namespace move a UDP stream from h1
//! (one packet a millisecond, numbered) between h2 and h3 and off again;
//! a second stream to a route that never changes must lose nothing. Then a
//! flap of many changes leaves bricks' table (`bricks ctl ... read
//! rt.table`) equal to the kernel's (`ip route show table 100`).
//!
//! Needs root (skipped otherwise, a failure under CI=true). Everything is
//! deleted when the test ends, failed or not.

mod common;

use bricks_netns::{output_timeout, skip_unless_root, Network};
use common::{udp_receiver as receiver, udp_sender as sender, LiveRouter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The router: three ports, ARP both ways, the IPv4 checks, TTL, and the
/// route table fed from kernel table 100.
fn config() -> String {
    let mut c = String::from(
        "rt :: DirectIPLookup(10.1.0.0/24 0, 10.2.0.0/24 1, 10.3.0.0/24 2,\n\
         \x20   ROUTES netlink:table=100, DEVICES \"eth0 eth1 eth2 blackhole|unreachable|prohibit\");\n\
         rt[3] -> rejected :: Counter -> Discard;\n",
    );
    for i in 0..3 {
        let n = i + 1;
        c.push_str(&format!(
            "in{i} :: FromDevice(eth{i}, BACKEND $BACKEND);\n\
             q{i} :: Queue(1024) -> ToDevice(eth{i});\n\
             in{i} -> c{i} :: Classifier(12/0806 20/0001, 12/0806 20/0002, 12/0800, -);\n\
             c{i}[0] -> ARPResponder(10.{n}.0.1 $MAC{i}) -> q{i};\n\
             arpq{i} :: ARPQuerier(10.{n}.0.1, $MAC{i}) -> q{i};\n\
             c{i}[1] -> [1]arpq{i};\n\
             c{i}[2] -> Strip(14) -> CheckIPHeader -> GetIPAddress(16) -> rt;\n\
             c{i}[3] -> Discard;\n\
             rt[{i}] -> dt{i} :: DecIPTTL -> [0]arpq{i};\n\
             dt{i}[1] -> Discard;\n"
        ));
    }
    c
}

struct Lab {
    router: LiveRouter,
    net: Network,
    sock: std::path::PathBuf,
    dir: tempfile::TempDir,
}

impl Lab {
    fn start(tag: &str, backend: &str) -> Lab {
        let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
        for ns in ["r", "h1", "h2", "h3"] {
            net.add_namespace(ns).unwrap();
        }
        net.sysctl("r", "net.ipv4.ip_forward", "0").unwrap();
        let mut macs = Vec::new();
        for (i, host) in ["h1", "h2", "h3"].iter().enumerate() {
            let n = i + 1;
            let dev = format!("eth{i}");
            net.add_link(host, "eth0", "r", &dev, 1).unwrap();
            net.disable_offloads(host, "eth0").unwrap();
            net.disable_offloads("r", &dev).unwrap();
            net.add_addr(host, "eth0", &format!("10.{n}.0.2/24"))
                .unwrap();
            net.add_route(host, &["default", "via", &format!("10.{n}.0.1")])
                .unwrap();
            macs.push(net.mac("r", &dev).unwrap());
        }
        // The destinations behind h2 and h3.
        for host in ["h2", "h3"] {
            net.add_addr(host, "lo", "10.9.0.5/32").unwrap();
        }
        net.add_addr("h3", "lo", "10.8.0.5/32").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("router.click");
        std::fs::write(&conf, config()).unwrap();
        let sock = dir.path().join("ctl.sock");
        let defines: Vec<String> = vec![
            format!("BACKEND={backend}"),
            format!("MAC0={}", macs[0]),
            format!("MAC1={}", macs[1]),
            format!("MAC2={}", macs[2]),
        ];
        // The route that never changes, there before the router starts:
        // the first dump brings it.
        let lab_net = net;
        let out = output_timeout(
            &mut lab_net.exec(
                "r",
                &[
                    "ip",
                    "route",
                    "add",
                    "10.8.0.0/16",
                    "via",
                    "10.3.0.2",
                    "dev",
                    "eth2",
                    "onlink",
                    "table",
                    "100",
                ],
            ),
            Duration::from_secs(5),
        )
        .unwrap();
        assert!(out.status.success(), "{out:?}");
        let router = LiveRouter::start_with(
            &lab_net,
            "r",
            &conf,
            1,
            &defines,
            &["--control".into(), sock.to_str().unwrap().into()],
        );
        Lab {
            router,
            net: lab_net,
            sock,
            dir,
        }
    }

    /// `ip route ARGS... table 100` in the router's namespace.
    fn route(&self, args: &[&str]) {
        let mut argv = vec!["ip", "route"];
        argv.extend_from_slice(args);
        argv.extend(["table", "100"]);
        let out = output_timeout(&mut self.net.exec("r", &argv), Duration::from_secs(5)).unwrap();
        assert!(out.status.success(), "{argv:?}: {out:?}");
    }

    fn ctl_read(&self, handler: &str) -> String {
        let out = output_timeout(
            std::process::Command::new(env!("CARGO_BIN_EXE_bricks")).args([
                "ctl",
                self.sock.to_str().unwrap(),
                "read",
                handler,
            ]),
            Duration::from_secs(10),
        )
        .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// The bound the issue sets on following a change.
const FOLLOW: Duration = Duration::from_millis(100);

/// The steering a test's route changes must show: `sent` holds each
/// numbered packet's send time, `h2` and `h3` what each receiver got, and
/// the route was added via h2, replaced via h3 and deleted at `t`.
/// Nothing arrives before the add; every packet sent from [`FOLLOW`] after
/// each change until the next takes the new path and none the old; none is
/// forwarded after the delete.
fn assert_steered(sent: &[Instant], h2: &[u64], h3: &[u64], t: [Instant; 3]) {
    let [t_add, t_change, t_del] = t;
    let sent_at = |seq: u64| sent[seq as usize];
    for &s in h2.iter().chain(h3) {
        assert!(
            sent_at(s) >= t_add,
            "packet {s} arrived before its route existed"
        );
    }
    let window = |from: Instant, to: Instant| {
        (0..sent.len() as u64).filter(move |&s| sent_at(s) >= from + FOLLOW && sent_at(s) < to)
    };
    for s in window(t_add, t_change) {
        assert!(
            h2.contains(&s),
            "packet {s} (after the add) did not reach h2"
        );
    }
    for s in window(t_change, t_del) {
        assert!(
            h3.contains(&s),
            "packet {s} (after the replace) did not reach h3"
        );
        assert!(
            !h2.contains(&s),
            "packet {s} (after the replace) still reached h2"
        );
    }
    for s in window(t_del, Instant::now()) {
        assert!(
            !h2.contains(&s) && !h3.contains(&s),
            "packet {s} (after the delete) was still forwarded"
        );
    }
}

#[test]
fn kernel_route_changes_steer_traffic_within_100_ms() {
    if let Some(why) = skip_unless_root("kernel_route_changes_steer_traffic_within_100_ms") {
        eprintln!("{why}");
        return;
    }
    let lab = Lab::start("rtnl", "auto");
    lab.router
        .wait_for("the first dump", Duration::from_secs(10), |r| {
            r.counter("rt", "route_updates_set") >= 1
        });
    let stop = Arc::new(AtomicBool::new(false));
    let (h2, h2t) = receiver(lab.net.ns_name("h2"), "0.0.0.0", 9000, stop.clone());
    let (h3, h3t) = receiver(lab.net.ns_name("h3"), "0.0.0.0", 9000, stop.clone());
    let (bg, bgt) = receiver(lab.net.ns_name("h3"), "0.0.0.0", 9001, stop.clone());
    let send_stop = Arc::new(AtomicBool::new(false));
    let flow = sender(
        lab.net.ns_name("h1"),
        "0.0.0.0:0",
        "10.9.0.5:9000",
        send_stop.clone(),
    );
    let background = sender(
        lab.net.ns_name("h1"),
        "0.0.0.0:0",
        "10.8.0.5:9001",
        send_stop.clone(),
    );

    std::thread::sleep(Duration::from_millis(500));
    let t_add = Instant::now();
    lab.route(&[
        "add",
        "10.9.0.0/16",
        "via",
        "10.2.0.2",
        "dev",
        "eth1",
        "onlink",
    ]);
    std::thread::sleep(Duration::from_millis(1000));
    let t_change = Instant::now();
    lab.route(&[
        "replace",
        "10.9.0.0/16",
        "via",
        "10.3.0.2",
        "dev",
        "eth2",
        "onlink",
    ]);
    std::thread::sleep(Duration::from_millis(1000));
    let t_del = Instant::now();
    lab.route(&["del", "10.9.0.0/16"]);
    std::thread::sleep(Duration::from_millis(800));
    send_stop.store(true, Ordering::Relaxed);
    let sent = flow.join().unwrap();
    let bg_sent = background.join().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for t in [h2t, h3t, bgt] {
        t.join().unwrap();
    }
    let h2: Vec<u64> = h2.lock().unwrap().iter().map(|x| x.0).collect();
    let h3: Vec<u64> = h3.lock().unwrap().iter().map(|x| x.0).collect();
    let sent_at = |seq: u64| sent[seq as usize];
    assert_steered(&sent, &h2, &h3, [t_add, t_change, t_del]);
    // How fast it followed: the first packet on the new path after each
    // change, measured from the change.
    let first_after = |got: &[u64], t: Instant| {
        got.iter()
            .filter(|&&s| sent_at(s) >= t)
            .map(|&s| sent_at(s).saturating_duration_since(t))
            .min()
    };
    eprintln!(
        "followed: add {:?}, replace {:?}",
        first_after(&h2, t_add),
        first_after(&h3, t_change)
    );
    // The route that never changed lost nothing.
    let bg: Vec<u64> = bg.lock().unwrap().iter().map(|x| x.0).collect();
    assert_eq!(
        bg.len(),
        bg_sent.len(),
        "the unchanged route lost {} of {} packets",
        bg_sent.len() - bg.len(),
        bg_sent.len()
    );
    assert!(lab.router.counter("rt", "route_updates_removed") >= 1);

    // A flap: 100 rounds of changes to 50 prefixes through `ip -batch`,
    // then bricks' table must be the kernel's.
    let mut batch = String::new();
    for round in 0..100 {
        for p in 0..50 {
            let prefix = format!("10.{}.{}.0/24", 100 + p / 10, p % 10);
            let via = if (round + p) % 2 == 0 {
                "10.2.0.2 dev eth1"
            } else {
                "10.3.0.2 dev eth2"
            };
            if (round * 7 + p) % 5 == 0 {
                batch.push_str(&format!("route del {prefix} table 100\n"));
            } else {
                batch.push_str(&format!(
                    "route replace {prefix} via {via} onlink table 100\n"
                ));
            }
        }
    }
    let file = lab.dir.path().join("flap.batch");
    std::fs::write(&file, batch).unwrap();
    // `-force`: a delete of a prefix already gone is no error to stop on.
    let _ = output_timeout(
        &mut lab
            .net
            .exec("r", &["ip", "-force", "-batch", file.to_str().unwrap()]),
        Duration::from_secs(60),
    )
    .unwrap();
    let kernel = || {
        let out = output_timeout(
            &mut lab
                .net
                .exec("r", &["ip", "-4", "route", "show", "table", "100"]),
            Duration::from_secs(5),
        )
        .unwrap();
        let mut routes: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let gw = w
                    .iter()
                    .position(|x| *x == "via")
                    .map(|i| w[i + 1])
                    .unwrap_or("-");
                let dev = w
                    .iter()
                    .position(|x| *x == "dev")
                    .map(|i| w[i + 1])
                    .unwrap();
                let out = &dev[3..];
                let prefix = if w[0].contains('/') {
                    w[0].to_string()
                } else {
                    format!("{}/32", w[0])
                };
                format!("{prefix}\t{gw}\t{out}")
            })
            .collect();
        routes.sort();
        routes
    };
    let bricks = || {
        let mut routes: Vec<String> = lab
            .ctl_read("rt.table")
            .lines()
            .filter(|l| {
                !l.starts_with("10.1.0.0/24")
                    && !l.starts_with("10.2.0.0/24")
                    && !l.starts_with("10.3.0.0/24")
            })
            .map(str::to_string)
            .collect();
        routes.sort();
        routes
    };
    let end = Instant::now() + Duration::from_secs(10);
    while bricks() != kernel() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        bricks(),
        kernel(),
        "bricks' table differs from the kernel's"
    );
    eprintln!(
        "after the flap: {} routes in table 100, {} set and {} withdrawn by bricks",
        kernel().len(),
        lab.router.counter("rt", "route_updates_set"),
        lab.router.counter("rt", "route_updates_removed")
    );

    // A blackhole inside a covering route: its packets are discarded by
    // the output DEVICES names for it, the covering route's still flow.
    lab.route(&[
        "add",
        "10.64.0.0/10",
        "via",
        "10.2.0.2",
        "dev",
        "eth1",
        "onlink",
    ]);
    lab.route(&["add", "blackhole", "10.66.0.0/16"]);
    lab.net.add_addr("h2", "lo", "10.65.0.5/32").unwrap();
    lab.net.add_addr("h2", "lo", "10.66.0.5/32").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let stop = Arc::new(AtomicBool::new(false));
    let (covered, ct) = receiver(lab.net.ns_name("h2"), "0.0.0.0", 9002, stop.clone());
    let (holed, ht) = receiver(lab.net.ns_name("h2"), "0.0.0.0", 9003, stop.clone());
    let send_stop = Arc::new(AtomicBool::new(false));
    let a = sender(
        lab.net.ns_name("h1"),
        "0.0.0.0:0",
        "10.65.0.5:9002",
        send_stop.clone(),
    );
    let b = sender(
        lab.net.ns_name("h1"),
        "0.0.0.0:0",
        "10.66.0.5:9003",
        send_stop.clone(),
    );
    std::thread::sleep(Duration::from_millis(300));
    send_stop.store(true, Ordering::Relaxed);
    let (a_sent, b_sent) = (a.join().unwrap().len(), b.join().unwrap().len());
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    ct.join().unwrap();
    ht.join().unwrap();
    assert_eq!(
        covered.lock().unwrap().len(),
        a_sent,
        "the covering route lost packets"
    );
    assert!(
        holed.lock().unwrap().is_empty(),
        "a blackholed packet was forwarded"
    );
    lab.router.wait_for(
        "every blackholed packet at the reject output",
        Duration::from_secs(5),
        |r| r.counter("rejected", "count") >= b_sent as u64,
    );
    let table = lab.ctl_read("rt.table");
    assert!(table.contains("10.66.0.0/16\t-\t3"), "{table}");
}

/// The IPv6 router: three ports, Neighbor Discovery both ways, the IPv6
/// checks, the hop limit, and `LookupIP6Route` fed from kernel table
/// `table`.
fn config6(table: u32) -> String {
    let mut c = format!(
        "rt :: LookupIP6Route(2001:db8:1::/64 0, 2001:db8:2::/64 1, 2001:db8:3::/64 2,\n\
         \x20   ROUTES netlink:table={table}, DEVICES \"eth0 eth1 eth2\");\n",
    );
    for i in 0..3 {
        let n = i + 1;
        c.push_str(&format!(
            "in{i} :: FromDevice(eth{i}, BACKEND $BACKEND);\n\
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

/// IPv6 routes in kernel table 100 (`ip -6 route add|replace|del`, as a
/// routing daemon's kernel protocol writes them) steer an IPv6 stream
/// through `LookupIP6Route` between real Linux hosts, which find the
/// router and the next hops by Neighbor Discovery.
#[test]
fn ipv6_kernel_routes_steer_traffic() {
    if let Some(why) = skip_unless_root("ipv6_kernel_routes_steer_traffic") {
        eprintln!("{why}");
        return;
    }
    let mut net = Network::new(&Network::unique_prefix("rt6")).unwrap();
    for ns in ["r", "h1", "h2", "h3"] {
        net.add_namespace(ns).unwrap();
    }
    net.sysctl("r", "net.ipv6.conf.all.forwarding", "0")
        .unwrap();
    let ip6 = |net: &Network, ns: &str, args: &[&str]| {
        let mut argv = vec!["ip", "-6"];
        argv.extend_from_slice(args);
        let out = output_timeout(&mut net.exec(ns, &argv), Duration::from_secs(5)).unwrap();
        assert!(out.status.success(), "{ns}: {argv:?}: {out:?}");
    };
    let mut macs = Vec::new();
    for (i, host) in ["h1", "h2", "h3"].iter().enumerate() {
        let n = i + 1;
        let dev = format!("eth{i}");
        net.add_link(host, "eth0", "r", &dev, 1).unwrap();
        net.disable_offloads(host, "eth0").unwrap();
        net.disable_offloads("r", &dev).unwrap();
        ip6(
            &net,
            host,
            &[
                "addr",
                "add",
                &format!("2001:db8:{n}::2/64"),
                "dev",
                "eth0",
                "nodad",
            ],
        );
        ip6(
            &net,
            host,
            &[
                "route",
                "add",
                "default",
                "via",
                &format!("2001:db8:{n}::1"),
            ],
        );
        macs.push(net.mac("r", &dev).unwrap());
    }
    for host in ["h2", "h3"] {
        ip6(
            &net,
            host,
            &["addr", "add", "2001:db8:99::5/128", "dev", "lo"],
        );
    }
    ip6(
        &net,
        "h3",
        &["addr", "add", "2001:db8:88::5/128", "dev", "lo"],
    );
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("router6.click");
    std::fs::write(&conf, config6(100)).unwrap();
    let defines: Vec<String> = vec![
        "BACKEND=auto".into(),
        format!("MAC0={}", macs[0]),
        format!("MAC1={}", macs[1]),
        format!("MAC2={}", macs[2]),
    ];
    let route = |args: &[&str]| {
        let mut argv = vec!["route"];
        argv.extend_from_slice(args);
        argv.extend(["table", "100"]);
        ip6(&net, "r", &argv);
    };
    // A route there before the router starts comes with the first dump.
    route(&[
        "add",
        "2001:db8:88::/48",
        "via",
        "2001:db8:3::2",
        "dev",
        "eth2",
        "onlink",
    ]);
    let router = LiveRouter::start_with(&net, "r", &conf, 1, &defines, &[]);
    router.wait_for("the first dump", Duration::from_secs(10), |r| {
        r.counter("rt", "route_updates_set") >= 1
    });
    let stop = Arc::new(AtomicBool::new(false));
    let (h2, h2t) = receiver(net.ns_name("h2"), "::", 9000, stop.clone());
    let (h3, h3t) = receiver(net.ns_name("h3"), "::", 9000, stop.clone());
    let (bg, bgt) = receiver(net.ns_name("h3"), "::", 9001, stop.clone());
    let send_stop = Arc::new(AtomicBool::new(false));
    let flow = sender(
        net.ns_name("h1"),
        "[::]:0",
        "[2001:db8:99::5]:9000",
        send_stop.clone(),
    );
    let background = sender(
        net.ns_name("h1"),
        "[::]:0",
        "[2001:db8:88::5]:9001",
        send_stop.clone(),
    );
    std::thread::sleep(Duration::from_millis(500));
    let t_add = Instant::now();
    route(&[
        "add",
        "2001:db8:99::/48",
        "via",
        "2001:db8:2::2",
        "dev",
        "eth1",
        "onlink",
    ]);
    std::thread::sleep(Duration::from_millis(1000));
    let t_change = Instant::now();
    route(&[
        "replace",
        "2001:db8:99::/48",
        "via",
        "2001:db8:3::2",
        "dev",
        "eth2",
        "onlink",
    ]);
    std::thread::sleep(Duration::from_millis(1000));
    let t_del = Instant::now();
    route(&["del", "2001:db8:99::/48"]);
    std::thread::sleep(Duration::from_millis(800));
    send_stop.store(true, Ordering::Relaxed);
    let sent = flow.join().unwrap();
    let bg_sent = background.join().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    for t in [h2t, h3t, bgt] {
        t.join().unwrap();
    }
    let h2: Vec<u64> = h2.lock().unwrap().iter().map(|x| x.0).collect();
    let h3: Vec<u64> = h3.lock().unwrap().iter().map(|x| x.0).collect();
    assert_steered(&sent, &h2, &h3, [t_add, t_change, t_del]);
    let bg: Vec<u64> = bg.lock().unwrap().iter().map(|x| x.0).collect();
    assert_eq!(
        bg.len(),
        bg_sent.len(),
        "the unchanged IPv6 route lost {} of {} packets",
        bg_sent.len() - bg.len(),
        bg_sent.len()
    );
    assert!(router.counter("rt", "route_updates_removed") >= 1);
}
