//! The kernel source against the running kernel, in a namespace of its
//! own: IPv4 and IPv6 routes of table 100 added, changed, given a second
//! path and deleted with `ip route`, each change seen by the follower as
//! the kernel reports it (IPv6 ECMP siblings, metrics, nexthop objects).
//!
//! Needs root (skipped otherwise, a failure under CI=true).

use bricks_control::{kernel, Filter, Follower, RouteSink, SourceStats};
use bricks_lpm::source::{Hop, RoutePrefix};
use bricks_netns::{in_namespace, output_timeout, skip_unless_root, Network};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Default)]
struct MapSink(Arc<Mutex<HashMap<String, Vec<Hop>>>>);

impl RouteSink for MapSink {
    fn set(&self, prefix: RoutePrefix, hops: &[Hop]) -> Result<(), String> {
        self.0
            .lock()
            .unwrap()
            .insert(prefix.to_string(), hops.to_vec());
        Ok(())
    }
    fn remove(&self, p: RoutePrefix) -> Result<(), String> {
        self.0.lock().unwrap().remove(&p.to_string());
        Ok(())
    }
}

fn ip(net: &Network, args: &[&str]) {
    let mut argv = vec!["ip"];
    argv.extend_from_slice(args);
    let out = output_timeout(&mut net.exec("k", &argv), Duration::from_secs(5)).unwrap();
    assert!(out.status.success(), "{argv:?}: {out:?}");
}

fn wait(sink: &MapSink, what: &str, ok: impl Fn(&HashMap<String, Vec<Hop>>) -> bool) {
    let end = Instant::now() + Duration::from_secs(5);
    while !ok(&sink.0.lock().unwrap()) {
        assert!(Instant::now() < end, "{what}: {:?}", sink.0.lock().unwrap());
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn ipv4_and_ipv6_routes_follow_the_kernel() {
    if let Some(why) = skip_unless_root("ipv4_and_ipv6_routes_follow_the_kernel") {
        eprintln!("{why}");
        return;
    }
    let mut net = Network::new(&Network::unique_prefix("ctlk")).unwrap();
    net.add_namespace("k").unwrap();
    net.add_namespace("o").unwrap();
    net.add_link("k", "a0", "o", "x0", 1).unwrap();
    net.add_link("k", "a1", "o", "x1", 1).unwrap();
    for dev in ["a0", "a1"] {
        ip(&net, &["link", "set", dev, "up"]);
    }
    ip(&net, &["addr", "add", "10.0.0.1/24", "dev", "a0"]);
    ip(&net, &["addr", "add", "10.0.1.1/24", "dev", "a1"]);
    // A route there before the follower starts comes with the dump.
    ip(
        &net,
        &[
            "route",
            "add",
            "10.9.0.0/16",
            "via",
            "10.0.0.2",
            "metric",
            "10",
            "table",
            "100",
        ],
    );
    let sink = MapSink::default();
    let stats = Arc::new(SourceStats::default());
    stats.quiet();
    let filter = Filter {
        table: Some(100),
        protocol: None,
        v4: true,
        v6: true,
        devices: Some(vec!["a0".into(), "a1".into()]),
    };
    let f = Follower::new(filter, sink.clone(), stats.clone());
    let ns = net.ns_name("k");
    let following = in_namespace(&ns, move || kernel::follow(f, "test").unwrap());
    assert!(following.wait_synced(Duration::from_secs(10)));
    wait(&sink, "the dumped route", |m| m.contains_key("10.9.0.0/16"));

    // IPv4: a lower metric wins, its deletion restores the other.
    ip(
        &net,
        &[
            "route",
            "add",
            "10.9.0.0/16",
            "via",
            "10.0.1.2",
            "metric",
            "5",
            "table",
            "100",
        ],
    );
    wait(&sink, "metric 5", |m| {
        m.get("10.9.0.0/16").is_some_and(|h| h[0].output == 1)
    });
    ip(
        &net,
        &["route", "del", "10.9.0.0/16", "metric", "5", "table", "100"],
    );
    wait(&sink, "metric 10 again", |m| {
        m.get("10.9.0.0/16").is_some_and(|h| h[0].output == 0)
    });
    // IPv4 multipath.
    ip(
        &net,
        &[
            "route",
            "add",
            "10.8.0.0/16",
            "table",
            "100",
            "nexthop",
            "via",
            "10.0.0.2",
            "nexthop",
            "via",
            "10.0.1.2",
        ],
    );
    wait(&sink, "ECMP", |m| {
        m.get("10.8.0.0/16").is_some_and(|h| h.len() == 2)
    });

    // IPv6 through link-local gateways: a route, a second path appended,
    // one path deleted, the route deleted.
    ip(
        &net,
        &[
            "-6",
            "route",
            "add",
            "2001:db8:9::/48",
            "via",
            "fe80::2",
            "dev",
            "a0",
            "table",
            "100",
        ],
    );
    wait(&sink, "IPv6 route", |m| {
        m.get("2001:db8:9::/48").is_some_and(|h| h.len() == 1)
    });
    ip(
        &net,
        &[
            "-6",
            "route",
            "append",
            "2001:db8:9::/48",
            "via",
            "fe80::3",
            "dev",
            "a1",
            "table",
            "100",
        ],
    );
    wait(&sink, "IPv6 second path", |m| {
        m.get("2001:db8:9::/48").is_some_and(|h| h.len() == 2)
    });
    ip(
        &net,
        &[
            "-6",
            "route",
            "del",
            "2001:db8:9::/48",
            "via",
            "fe80::2",
            "dev",
            "a0",
            "table",
            "100",
        ],
    );
    wait(&sink, "IPv6 one path left", |m| {
        m.get("2001:db8:9::/48")
            .is_some_and(|h| h.len() == 1 && h[0].output == 1)
    });
    ip(
        &net,
        &["-6", "route", "del", "2001:db8:9::/48", "table", "100"],
    );
    wait(&sink, "IPv6 route gone", |m| {
        !m.contains_key("2001:db8:9::/48")
    });

    // Nexthop objects (Linux 5.3).
    let nh = output_timeout(
        &mut net.exec(
            "k",
            &[
                "ip", "nexthop", "add", "id", "7", "via", "10.0.1.2", "dev", "a1",
            ],
        ),
        Duration::from_secs(5),
    )
    .unwrap();
    if nh.status.success() {
        ip(
            &net,
            &["route", "add", "10.7.0.0/16", "nhid", "7", "table", "100"],
        );
        wait(&sink, "route by nexthop object", |m| {
            m.get("10.7.0.0/16").is_some_and(|h| h[0].output == 1)
        });
        ip(
            &net,
            &[
                "nexthop", "replace", "id", "7", "via", "10.0.0.2", "dev", "a0",
            ],
        );
        wait(&sink, "changed nexthop object", |m| {
            m.get("10.7.0.0/16").is_some_and(|h| h[0].output == 0)
        });
    }
    // A link going away takes its routes with it (the kernel deletes them
    // without a notification per route: the follower must not keep them).
    ip(&net, &["link", "del", "a1"]);
    let out = output_timeout(
        &mut net.exec("k", &["ip", "-4", "route", "show", "table", "100"]),
        Duration::from_secs(5),
    )
    .unwrap();
    let mut kernel: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with(char::is_whitespace))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    kernel.sort();
    wait(&sink, "the kernel's IPv4 routes after the link went", |m| {
        let mut ours: Vec<String> = m.keys().filter(|k| !k.contains(':')).cloned().collect();
        ours.sort();
        ours == kernel
    });
    assert!(!sink.0.lock().unwrap().contains_key("10.8.0.0/16"));
    drop(following);
    drop(net);
}
