//! The record of a cluster running on this machine:
//! `/run/bricks-cluster/NAME/state.json`, written by `bricks cluster up`
//! before it creates anything and kept current as servers start and stop,
//! so that `status`, `down`, `kill` and `restart` (and the next `up` after
//! a crash) know every namespace and process it made.
//!
//! A process is recorded with its start time (field 22 of
//! `/proc/PID/stat`): a PID reused by some other process after ours ended
//! never matches, so a stale record never leads to signalling anything
//! else.

use crate::netup::{proc_from, proc_json, string as s, strings};
use crate::{Context as _, Error};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

pub use crate::netup::{alive, cpu_seconds, start_time, stop};

/// Where every cluster's state directory lives.
pub const STATE_ROOT: &str = "/run/bricks-cluster";

/// Every namespace of a cluster starts with `bc-NAME-`.
pub fn prefix(name: &str) -> String {
    format!("bc-{name}-")
}

/// A cluster's state directory.
pub fn dir(name: &str) -> PathBuf {
    Path::new(STATE_ROOT).join(name)
}

/// The name a cluster runs under: its own name, or the one given, with
/// anything but letters, digits and `_` replaced by `_` (so that `bc-NAME-`
/// is the prefix of this cluster's namespaces and of no other's).
pub fn instance_name(name: &str) -> String {
    crate::netup::instance_name(name)
}

/// One server of a running cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeState {
    pub name: String,
    pub namespace: String,
    /// Its Click configuration.
    pub config: PathBuf,
    /// Its control socket.
    pub socket: PathBuf,
    /// Its stdout and stderr.
    pub log: PathBuf,
    /// The command line it runs (`ip netns exec ... bricks run ...`).
    pub argv: Vec<String>,
    /// Its process, while it runs: (PID, start time).
    pub process: Option<(u32, u64)>,
    /// MAC of each external port, in the file's order.
    pub macs: Vec<String>,
    /// Its internal interfaces and the node at the other end.
    pub links: Vec<(String, String)>,
}

/// A host behind one external port.
#[derive(Debug, Clone, PartialEq)]
pub struct HostState {
    pub namespace: String,
    pub node: String,
    /// The node's external interface.
    pub port: String,
    /// The host's interface.
    pub iface: String,
    pub address: String,
    pub prefix_len: u8,
    /// The port's address: the host's default gateway.
    pub gateway: String,
    /// The host interface's MAC.
    pub mac: String,
    /// The node's port MAC (where the host's frames go).
    pub gateway_mac: String,
}

/// A running cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// The name it runs under.
    pub name: String,
    /// The cluster's own name (in its file).
    pub cluster: String,
    /// The file `up` was given.
    pub source_file: PathBuf,
    /// The copy the servers read.
    pub cluster_file: PathBuf,
    /// R, bits per second.
    pub rate_bps: u64,
    /// Every namespace, servers first.
    pub namespaces: Vec<String>,
    pub nodes: Vec<NodeState>,
    pub hosts: Vec<HostState>,
    /// The `bricks cluster up` process while it builds the cluster.
    pub builder: Option<(u32, u64)>,
}

impl State {
    pub fn path(&self) -> PathBuf {
        dir(&self.name).join("state.json")
    }

    pub fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "cluster": self.cluster,
            "source_file": self.source_file,
            "cluster_file": self.cluster_file,
            "rate_bps": self.rate_bps,
            "builder": proc_json(self.builder),
            "namespaces": self.namespaces,
            "nodes": self.nodes.iter().map(|n| json!({
                "name": n.name,
                "namespace": n.namespace,
                "config": n.config,
                "socket": n.socket,
                "log": n.log,
                "argv": n.argv,
                "process": proc_json(n.process),
                "macs": n.macs,
                "links": n.links.iter().map(|(i, p)| json!({"iface": i, "peer": p})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "hosts": self.hosts.iter().map(|h| json!({
                "namespace": h.namespace,
                "node": h.node,
                "port": h.port,
                "iface": h.iface,
                "address": h.address,
                "prefix_len": h.prefix_len,
                "gateway": h.gateway,
                "mac": h.mac,
                "gateway_mac": h.gateway_mac,
            })).collect::<Vec<_>>(),
        })
    }

    pub fn from_json(v: &Value) -> Result<State, Error> {
        let mut nodes = Vec::new();
        for n in v["nodes"]
            .as_array()
            .ok_or_else(|| Error::Record("no `nodes`".into()))?
        {
            nodes.push(NodeState {
                name: s(n, "name")?,
                namespace: s(n, "namespace")?,
                config: s(n, "config")?.into(),
                socket: s(n, "socket")?.into(),
                log: s(n, "log")?.into(),
                argv: strings(n, "argv"),
                process: proc_from(&n["process"]),
                macs: strings(n, "macs"),
                links: n["links"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|l| {
                                Some((
                                    l.get("iface")?.as_str()?.to_string(),
                                    l.get("peer")?.as_str()?.to_string(),
                                ))
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            });
        }
        let mut hosts = Vec::new();
        for h in v["hosts"]
            .as_array()
            .ok_or_else(|| Error::Record("no `hosts`".into()))?
        {
            hosts.push(HostState {
                namespace: s(h, "namespace")?,
                node: s(h, "node")?,
                port: s(h, "port")?,
                iface: s(h, "iface")?,
                address: s(h, "address")?,
                prefix_len: h["prefix_len"].as_u64().unwrap_or(24) as u8,
                gateway: s(h, "gateway")?,
                mac: s(h, "mac").unwrap_or_default(),
                gateway_mac: s(h, "gateway_mac").unwrap_or_default(),
            });
        }
        Ok(State {
            name: s(v, "name")?,
            cluster: s(v, "cluster")?,
            source_file: s(v, "source_file")?.into(),
            cluster_file: s(v, "cluster_file")?.into(),
            rate_bps: v["rate_bps"].as_u64().unwrap_or(0),
            namespaces: strings(v, "namespaces"),
            nodes,
            hosts,
            builder: proc_from(&v["builder"]),
        })
    }

    /// Writes the record (atomically: a reader never sees half of it).
    pub fn save(&self) -> Result<(), Error> {
        crate::netup::save_json(&self.path(), &self.to_json())
    }

    /// The record of cluster `name`; `Ok(None)` if there is none.
    pub fn load(name: &str) -> Result<Option<State>, Error> {
        let path = dir(name).join("state.json");
        let Some(v) = crate::netup::load_json(&path, "a cluster state")? else {
            return Ok(None);
        };
        State::from_json(&v)
            .map(Some)
            .with_context(|| format!("{}: not a cluster state", path.display()))
    }

    pub fn node(&self, name: &str) -> Result<usize, Error> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| {
                Error::Argument(format!(
                    "cluster {} has no node `{name}` (nodes: {})",
                    self.name,
                    self.nodes
                        .iter()
                        .map(|n| n.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    /// Whether any recorded process (a server, or the builder) still runs.
    pub fn anything_runs(&self) -> bool {
        self.builder.is_some_and(|(p, s)| alive(p, s))
            || self
                .nodes
                .iter()
                .any(|n| n.process.is_some_and(|(p, s)| alive(p, s)))
    }
}

/// The names of the clusters with a state directory.
pub fn recorded() -> Vec<String> {
    crate::netup::recorded(STATE_ROOT)
}

/// The one cluster that is recorded, when no name is given.
pub fn only_one(name: Option<&str>) -> Result<Option<String>, Error> {
    crate::netup::only_one(STATE_ROOT, name, "clusters")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> State {
        State {
            name: "rb4".into(),
            cluster: "rb4".into(),
            source_file: "/x/rb4.toml".into(),
            cluster_file: "/run/bricks-cluster/rb4/cluster.toml".into(),
            rate_bps: 10_000_000,
            namespaces: vec!["bc-rb4-n1".into(), "bc-rb4-hn1ext0".into()],
            nodes: vec![NodeState {
                name: "n1".into(),
                namespace: "bc-rb4-n1".into(),
                config: "/run/bricks-cluster/rb4/n1.click".into(),
                socket: "/run/bricks-cluster/rb4/n1.sock".into(),
                log: "/run/bricks-cluster/rb4/n1.log".into(),
                argv: vec!["ip".into(), "netns".into()],
                process: Some((12, 34)),
                macs: vec!["02:00:00:00:00:01".into()],
                links: vec![("vn2".into(), "n2".into())],
            }],
            hosts: vec![HostState {
                namespace: "bc-rb4-hn1ext0".into(),
                node: "n1".into(),
                port: "ext0".into(),
                iface: "eth0".into(),
                address: "10.1.0.2".into(),
                prefix_len: 24,
                gateway: "10.1.0.1".into(),
                mac: "02:00:00:00:00:02".into(),
                gateway_mac: "02:00:00:00:00:01".into(),
            }],
            builder: None,
        }
    }

    #[test]
    fn state_round_trips_through_json() {
        let s = sample();
        assert_eq!(State::from_json(&s.to_json()).unwrap(), s);
    }

    #[test]
    fn names_are_made_safe_for_the_prefix() {
        assert_eq!(instance_name("rb4"), "rb4");
        assert_eq!(instance_name("my-fly.2"), "my_fly_2");
        assert_eq!(prefix("rb4"), "bc-rb4-");
    }
}
