//! Every node of the example clusters gets a configuration that the real
//! parser and element registry accept, with VLBNode's ports as the node's
//! links and ports say.

use bricks_cluster::config::{node_config, ConfigOptions};
use bricks_cluster::Cluster;
use bricks_config::{Source, SourceMap};
use std::path::{Path, PathBuf};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../conf/cluster")
        .join(name)
        .canonicalize()
        .expect("example cluster file")
}

fn builds(file: &Path) {
    let c = Cluster::load(file).expect("a good cluster file");
    let registry = bricks_elements::registry();
    for (i, n) in c.nodes.iter().enumerate() {
        let text = node_config(
            &c,
            i as u8,
            &ConfigOptions {
                cluster_file: file.to_path_buf(),
                backend: "packet".into(),
            },
        );
        let mut map = SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            Source {
                name: format!("{}.click", n.name),
                text: text.clone(),
            },
        )
        .unwrap_or_else(|d| {
            let msgs: Vec<String> = d.iter().map(|d| map.render(d)).collect();
            panic!("{}: {}\n{text}", n.name, msgs.join("\n"))
        });
        if let Err(d) = bricks_runtime::build(&router, &registry) {
            let msgs: Vec<String> = d.iter().map(|d| map.render(d)).collect();
            panic!("{}: {}\n{text}", n.name, msgs.join("\n"));
        }
    }
}

#[test]
fn every_rb4_node_builds() {
    builds(&example("rb4.toml"));
}

#[test]
fn every_fly_node_builds_including_the_intermediate_only_ones() {
    builds(&example("fly.toml"));
}
