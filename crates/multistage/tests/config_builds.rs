//! Every box of every example multistage router gets a configuration that
//! the real parser and element registry accept, in both modes, with the
//! balancers' and routers' ports as the file says.

use bricks_config::{Source, SourceMap};
use bricks_multistage::config::{node_config, ConfigOptions};
use bricks_multistage::{Mode, Multistage, Node};
use std::path::{Path, PathBuf};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conf/multistage")
        .join(name)
}

/// Builds every box's configuration; returns each box's plan summary.
fn builds(ms: &Multistage) -> Vec<(String, bricks_runtime::Plan)> {
    let registry = bricks_elements::registry();
    let mut plans = Vec::new();
    for name in ms.node_names() {
        let node = ms.node(name).expect("a box");
        let text = node_config(ms, node, &ConfigOptions::new(ms, node, "example.toml"));
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
        match bricks_runtime::build(&router, &registry) {
            Ok(plan) => plans.push((name.to_string(), plan)),
            Err(d) => {
                let msgs: Vec<String> = d.iter().map(|d| map.render(d)).collect();
                panic!("{name}: {}\n{text}", msgs.join("\n"));
            }
        }
    }
    plans
}

/// The plan's element called `name`: its class and its numbers of inputs
/// and outputs.
fn element(plan: &bricks_runtime::Plan, name: &str) -> (String, usize, usize) {
    let e = plan
        .elements
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no element {name}"));
    (e.class.name.to_string(), e.inputs.len(), e.outputs.len())
}

fn check_ports(ms: &Multistage, plans: &[(String, bricks_runtime::Plan)]) {
    for (name, plan) in plans {
        match ms.node(name).unwrap() {
            Node::Balancer(b) => {
                let bal = &ms.balancers[b];
                let (class, inputs, outputs) = element(plan, "lb");
                assert_eq!(class, "L2Balancer");
                assert_eq!(inputs, bal.fronts.len() + 1, "{name}");
                assert_eq!(outputs, bal.fronts.len() + bal.backs.len(), "{name}");
            }
            Node::Router(_) => {
                let (class, _, outputs) = element(plan, "demux");
                assert_eq!(class, "VRDemux");
                assert_eq!(outputs, ms.front_count(), "{name}");
                let (class, _, outputs) = element(plan, "rt");
                assert_eq!(
                    class,
                    ms.routers
                        .iter()
                        .find(|r| &r.name == name)
                        .unwrap()
                        .lookup
                        .class()
                );
                assert_eq!(outputs, ms.front_count() + 1, "{name}");
                assert_eq!(element(plan, "probe").0, "ProbeResponder");
            }
        }
    }
}

#[test]
fn every_box_of_2x2_builds() {
    let ms = Multistage::load(&example("2x2.toml")).unwrap();
    let plans = builds(&ms);
    assert_eq!(plans.len(), 4);
    check_ports(&ms, &plans);
}

#[test]
fn every_box_of_dtx3_builds() {
    let ms = Multistage::load(&example("dtx3.toml")).unwrap();
    let plans = builds(&ms);
    assert_eq!(plans.len(), 4);
    check_ports(&ms, &plans);
}

#[test]
fn every_box_builds_in_odb_mode_with_given_macs() {
    let text = std::fs::read_to_string(example("2x2.toml"))
        .unwrap()
        .replace("mode = \"dtx\"", "mode = \"odb\"")
        .replace("policy = \"rr\"", "policy = \"flow\"")
        .replacen(
            "address = \"10.0.0.1/24\"",
            "address = \"10.0.0.1/24\"\n  mac = \"02:00:00:00:00:10\"",
            1,
        )
        .replacen(
            "iface = \"back0\"",
            "iface = \"back0\"\n  mac = \"02:00:00:00:0b:00\"",
            1,
        );
    let ms = Multistage::from_toml(&text).unwrap();
    assert_eq!(ms.mode, Mode::Odb);
    let plans = builds(&ms);
    check_ports(&ms, &plans);
}
