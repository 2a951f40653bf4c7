//! The cluster file parser on arbitrary text: a cluster or a reason, never
//! a panic; whatever it accepts describes itself, and every node's Click
//! configuration can be generated.
#![no_main]

use bricks_cluster::config::{node_config, ConfigOptions};
use bricks_cluster::Cluster;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(c) = Cluster::from_toml(text) else {
        return;
    };
    let _ = c.describe();
    let options = ConfigOptions {
        cluster_file: "/dev/null".into(),
        backend: "packet".into(),
    };
    for id in 0..c.nodes.len() {
        let _ = node_config(&c, id as u8, &options);
        let _ = c.next_hops(id as u8);
    }
});
