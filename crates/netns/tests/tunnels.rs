//! The user-space stand-ins for kernel VLAN and IP-in-IP devices, checked
//! with Linux hosts alone (no router): two access switches joined by a
//! trunk keep VLANs apart, and two user-space IP-in-IP endpoints carry
//! pings between inner addresses.
//!
//! Needs root (skipped otherwise, a failure under CI=true).

use bricks_netns::ipip::IpipTunnel;
use bricks_netns::vlan::VlanSwitch;
use bricks_netns::{output_timeout, skip_unless_root, Network};
use std::sync::atomic::Ordering;
use std::time::Duration;

fn ping(net: &Network, from: &str, to: &str) -> bool {
    let out = output_timeout(
        &mut net.exec(from, &["ping", "-n", "-c", "2", "-i", "0.2", "-W", "1", to]),
        Duration::from_secs(10),
    )
    .unwrap();
    out.status.success()
}

#[test]
fn access_switches_keep_vlans_apart_across_a_trunk() {
    if let Some(why) = skip_unless_root("access_switches_keep_vlans_apart_across_a_trunk") {
        eprintln!("{why}");
        return;
    }
    let mut net = Network::new(&Network::unique_prefix("vsw")).unwrap();
    for ns in ["sw0", "sw1", "a", "b", "c"] {
        net.add_namespace(ns).unwrap();
    }
    net.add_link("sw0", "trunk", "sw1", "trunk", 1).unwrap();
    net.add_link("a", "eth0", "sw0", "pa", 1).unwrap();
    net.add_link("b", "eth0", "sw1", "pb", 1).unwrap();
    net.add_link("c", "eth0", "sw1", "pc", 1).unwrap();
    net.add_addr("a", "eth0", "10.0.0.1/24").unwrap();
    net.add_addr("b", "eth0", "10.0.0.2/24").unwrap();
    net.add_addr("c", "eth0", "10.0.0.3/24").unwrap();
    let s0 = VlanSwitch::start(&net.ns_name("sw0"), "trunk", &[("pa", 10)]).unwrap();
    let s1 = VlanSwitch::start(&net.ns_name("sw1"), "trunk", &[("pb", 10), ("pc", 20)]).unwrap();
    assert!(ping(&net, "a", "10.0.0.2"), "a and b share VLAN 10");
    assert!(!ping(&net, "a", "10.0.0.3"), "c is on VLAN 20");
    assert!(s0.counts().tagged.load(Ordering::Relaxed) > 0);
    assert!(s1.counts().untagged.load(Ordering::Relaxed) > 0);
    drop((s0, s1));
    net.delete();
}

#[test]
fn user_space_ipip_endpoints_carry_pings() {
    if let Some(why) = skip_unless_root("user_space_ipip_endpoints_carry_pings") {
        eprintln!("{why}");
        return;
    }
    let mut net = Network::new(&Network::unique_prefix("vip")).unwrap();
    for ns in ["a", "b"] {
        net.add_namespace(ns).unwrap();
    }
    net.add_link("a", "eth0", "b", "eth0", 1).unwrap();
    net.add_addr("a", "eth0", "192.0.2.1/24").unwrap();
    net.add_addr("b", "eth0", "192.0.2.2/24").unwrap();
    let ta = IpipTunnel::start(&net.ns_name("a"), "tun0", "192.0.2.2".parse().unwrap()).unwrap();
    let tb = IpipTunnel::start(&net.ns_name("b"), "tun0", "192.0.2.1".parse().unwrap()).unwrap();
    for (ns, addr, peer) in [
        ("a", "10.9.0.1/32", "10.9.0.2"),
        ("b", "10.9.0.2/32", "10.9.0.1"),
    ] {
        net.add_addr(ns, "tun0", addr).unwrap();
        bricks_netns::run(&mut net.exec(ns, &["ip", "link", "set", "tun0", "up"])).unwrap();
        net.add_route(ns, &[peer, "dev", "tun0"]).unwrap();
    }
    assert!(ping(&net, "a", "10.9.0.2"));
    assert!(ta.counts().encapsulated.load(Ordering::Relaxed) >= 2);
    assert!(tb.counts().decapsulated.load(Ordering::Relaxed) >= 2);
    drop((ta, tb));
    net.delete();
}
