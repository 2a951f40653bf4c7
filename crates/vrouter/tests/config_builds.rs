//! Every example virtual-router file expands into a configuration that the
//! real parser and element registry accept, with one compound per router
//! (its elements named ROUTER/...) and each link's elements named LINK/....

use bricks_config::{Source, SourceMap};
use bricks_vrouter::config::{config, ConfigOptions};
use bricks_vrouter::VirtualRouters;
use std::path::{Path, PathBuf};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conf/vr")
        .join(name)
}

/// Expands `name`, parses and builds it; returns the text and the parsed
/// router.
fn builds(name: &str) -> (VirtualRouters, String, bricks_config::Router) {
    let vr = VirtualRouters::load(&example(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let text = config(
        &vr,
        &ConfigOptions {
            source: format!("conf/vr/{name}"),
            output: "out.click".into(),
            backend: "packet".into(),
            ..ConfigOptions::default()
        },
    );
    let mut map = SourceMap::default();
    let router = bricks_config::parse(
        &mut map,
        Source {
            name: format!("{name}.click"),
            text: text.clone(),
        },
    )
    .unwrap_or_else(|d| {
        let msgs: Vec<String> = d.iter().map(|d| map.render(d)).collect();
        panic!("{name}: {}\n{text}", msgs.join("\n"))
    });
    let registry = bricks_elements::registry();
    if let Err(d) = bricks_runtime::build(&router, &registry) {
        let msgs: Vec<String> = d.iter().map(|d| map.render(d)).collect();
        panic!("{name}: {}\n{text}", msgs.join("\n"));
    }
    (vr, text, router)
}

/// Every element belongs to a router (`ROUTER/...`) or a link
/// (`LINK/...`), except the one ScheduleInfo of per-router queueing.
fn every_element_is_named_by_its_owner(vr: &VirtualRouters, router: &bricks_config::Router) {
    let owners: Vec<String> = vr
        .routers
        .iter()
        .map(|r| r.name.clone())
        .chain(
            vr.links
                .iter()
                .map(|l| bricks_vrouter::link_element_name(&l.name)),
        )
        .collect();
    for e in &router.elements {
        if e.class == "ScheduleInfo" {
            continue;
        }
        let owner = e.name.split('/').next().unwrap_or("");
        assert!(
            e.name.contains('/') && owners.iter().any(|o| o == owner),
            "{} ({}) belongs to no router or link",
            e.name,
            e.class
        );
    }
    for r in &vr.routers {
        let rt = router
            .element(&format!("{}/rt", r.name))
            .unwrap_or_else(|| panic!("{}/rt", r.name));
        assert_eq!(rt.class, r.lookup.class());
        for i in 0..r.interfaces.len() {
            if !matches!(r.interfaces[i].tag, bricks_vrouter::Tag::Tunnel { .. }) {
                assert!(router.element(&format!("{}/arpq{i}", r.name)).is_some());
                assert!(router.element(&format!("{}/ar{i}", r.name)).is_some());
            }
            assert!(router.element(&format!("{}/dt{i}", r.name)).is_some());
        }
    }
}

#[test]
fn two_tenants_builds() {
    let (vr, text, router) = builds("two-tenants.toml");
    every_element_is_named_by_its_owner(&vr, &router);
    assert!(text.contains("--router-control red=/run/bricks/red.sock"));
    assert!(text.contains("--router-control blue=/run/bricks/blue.sock"));
    assert_eq!(router.element("eth0/demux").unwrap().class, "VRDemux");
    assert_eq!(router.element("eth0/sched").unwrap().class, "StrideSched");
    assert_eq!(router.element("eth0/untag0").unwrap().class, "VLANDecap");
    assert_eq!(router.element("eth1/tag1").unwrap().class, "VLANEncap");
    assert!(router.element("ScheduleInfo@1").is_none());
}

#[test]
fn weighted_builds_with_per_router_queueing() {
    let (vr, text, router) = builds("weighted.toml");
    every_element_is_named_by_its_owner(&vr, &router);
    assert!(text.contains("ScheduleInfo(eth0/unq0 2, eth0/unq1 1, eth1/unq0 2, eth1/unq1 1);"));
    assert_eq!(router.element("eth0/unq0").unwrap().class, "Unqueue");
    assert_eq!(router.element("eth1/sched").unwrap().class, "DRRSched");
    assert!(text.contains("eth1/sched :: DRRSched(1518, QUANTA 3036 1518);"));
}

#[test]
fn mac_builds() {
    let (vr, text, router) = builds("mac.toml");
    every_element_is_named_by_its_owner(&vr, &router);
    assert!(text.contains("eth0/in :: FromDevice(eth0, BACKEND $BACKEND, PROMISC true);"));
    // lab's MACs are derived: router 1, interfaces 0 and 1.
    assert!(text.contains("02:76:00:01:00:01 1"), "{text}");
    assert!(text.contains("BROADCAST replicate"));
    assert!(text.contains("BROADCAST 0"));
}

#[test]
fn ipip_builds() {
    let (vr, text, router) = builds("ipip.toml");
    every_element_is_named_by_its_owner(&vr, &router);
    assert!(text.contains("IPEncap(4, 192.0.2.10, 198.51.100.1)"));
    assert!(text.contains("ARPResponder(192.0.2.1 192.0.2.10 192.0.2.11 $MAC_eth0)"));
    assert!(text.contains("StaticIPLookup(192.0.2.0/24 0, 0.0.0.0/0 192.0.2.254 0)"));
    // The tunnel's inner MTU.
    assert!(text.contains("IPFragmenter(1480)"));
    assert_eq!(router.element("eth0/prio").unwrap().class, "PrioSched");
}

#[test]
fn mpls_builds() {
    let (vr, text, router) = builds("mpls.toml");
    every_element_is_named_by_its_owner(&vr, &router);
    assert!(text.contains("MPLSPush(LABEL 1100)"));
    assert!(text.contains("VRDemux(BY mpls, 100 0, 200 1, NOTAG 2)"));
    assert!(text.contains("IPFragmenter(1496)"));
    assert_eq!(router.element("eth0/pop1").unwrap().class, "MPLSPop");
}
