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

use anyhow::Context as _;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where every cluster's state directory lives.
pub(crate) const STATE_ROOT: &str = "/run/bricks-cluster";

/// Every namespace of a cluster starts with `bc-NAME-`.
pub(crate) fn prefix(name: &str) -> String {
    format!("bc-{name}-")
}

/// A cluster's state directory.
pub(crate) fn dir(name: &str) -> PathBuf {
    Path::new(STATE_ROOT).join(name)
}

/// The name a cluster runs under: its own name, or the one given, with
/// anything but letters, digits and `_` replaced by `_` (so that `bc-NAME-`
/// is the prefix of this cluster's namespaces and of no other's).
pub(crate) fn instance_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// One server of a running cluster.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodeState {
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
pub(crate) struct HostState {
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
pub(crate) struct State {
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

fn proc_json(p: Option<(u32, u64)>) -> Value {
    match p {
        Some((pid, start)) => json!({"pid": pid, "start_time": start}),
        None => Value::Null,
    }
}

fn proc_from(v: &Value) -> Option<(u32, u64)> {
    Some((
        u32::try_from(v.get("pid")?.as_u64()?).ok()?,
        v.get("start_time")?.as_u64()?,
    ))
}

fn s(v: &Value, k: &str) -> anyhow::Result<String> {
    v.get(k)
        .and_then(Value::as_str)
        .map(str::to_string)
        .with_context(|| format!("no string `{k}`"))
}

fn strings(v: &Value, k: &str) -> Vec<String> {
    v.get(k)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl State {
    pub(crate) fn path(&self) -> PathBuf {
        dir(&self.name).join("state.json")
    }

    pub(crate) fn to_json(&self) -> Value {
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

    pub(crate) fn from_json(v: &Value) -> anyhow::Result<State> {
        let mut nodes = Vec::new();
        for n in v["nodes"].as_array().context("no `nodes`")? {
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
        for h in v["hosts"].as_array().context("no `hosts`")? {
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
    pub(crate) fn save(&self) -> anyhow::Result<()> {
        let path = self.path();
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(&self.to_json())?;
        std::fs::write(&tmp, text + "\n").with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
    }

    /// The record of cluster `name`; `Ok(None)` if there is none.
    pub(crate) fn load(name: &str) -> anyhow::Result<Option<State>> {
        let path = dir(name).join("state.json");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let v: Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a cluster state", path.display()))?;
        State::from_json(&v)
            .map(Some)
            .with_context(|| format!("{}: not a cluster state", path.display()))
    }

    pub(crate) fn node(&self, name: &str) -> anyhow::Result<usize> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .with_context(|| {
                format!(
                    "cluster {} has no node `{name}` (nodes: {})",
                    self.name,
                    self.nodes
                        .iter()
                        .map(|n| n.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }

    /// Whether any recorded process (a server, or the builder) still runs.
    pub(crate) fn anything_runs(&self) -> bool {
        self.builder.is_some_and(|(p, s)| alive(p, s))
            || self
                .nodes
                .iter()
                .any(|n| n.process.is_some_and(|(p, s)| alive(p, s)))
    }
}

/// The names of the clusters with a state directory.
pub(crate) fn recorded() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(STATE_ROOT) else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .flatten()
        .filter(|e| e.path().join("state.json").exists())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

/// The one cluster that is recorded, when no name is given.
pub(crate) fn only_one(name: Option<&str>) -> anyhow::Result<Option<String>> {
    if let Some(n) = name {
        return Ok(Some(n.to_string()));
    }
    let all = recorded();
    match all.len() {
        0 => Ok(None),
        1 => Ok(all.into_iter().next()),
        _ => anyhow::bail!("several clusters are up ({}): name one", all.join(", ")),
    }
}

/// The process's start time in clock ticks since boot (field 22 of
/// `/proc/PID/stat`).
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The process runs (not a zombie) and is the one recorded.
pub(crate) fn alive(pid: u32, start: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some(i) = stat.rfind(')') else {
        return false;
    };
    let rest = &stat[i + 1..];
    !rest.trim_start().starts_with('Z')
        && rest
            .split_whitespace()
            .nth(19)
            .and_then(|t| t.parse::<u64>().ok())
            == Some(start)
}

/// CPU time the process has used, user + system, in seconds (fields 14
/// and 15 of `/proc/PID/stat`, in clock ticks).
pub(crate) fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    // SAFETY: sysconf has no memory preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Some((utime + stime) as f64 / if hz > 0 { hz as f64 } else { 100.0 })
}

/// Sends `signal` to the recorded process if it is still the one
/// recorded.
pub(crate) fn signal(pid: u32, start: u64, signal: i32) {
    if alive(pid, start) {
        // SAFETY: kill has no memory preconditions; `alive` has just
        // matched this PID's start time, so the signal goes to the
        // process the record names.
        unsafe { libc::kill(pid as libc::pid_t, signal) };
    }
}

/// SIGTERM, then SIGKILL if it still runs after `grace`; waits until it
/// is gone (at most a few seconds more). Returns whether it had to be
/// killed.
pub(crate) fn stop(pid: u32, start: u64, grace: Duration) -> bool {
    signal(pid, start, libc::SIGTERM);
    if wait_gone(pid, start, grace) {
        return false;
    }
    signal(pid, start, libc::SIGKILL);
    wait_gone(pid, start, Duration::from_secs(5));
    true
}

/// Waits at most `timeout` for the process to end.
pub(crate) fn wait_gone(pid: u32, start: u64, timeout: Duration) -> bool {
    let end = Instant::now() + timeout;
    loop {
        reap(pid);
        if !alive(pid, start) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reaps `pid` if it is an ended child of this process (`up` and
/// `restart` start the servers; a server they stop must not stay a
/// zombie while they run).
fn reap(pid: u32) {
    let mut status = 0;
    // SAFETY: waitpid writes one int, `status`, alive for the call;
    // WNOHANG never blocks, and a PID that is not our child only gives
    // ECHILD.
    unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) };
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

    #[test]
    fn our_own_process_is_alive_and_a_wrong_start_time_is_not() {
        let me = std::process::id();
        let start = start_time(me).unwrap();
        assert!(alive(me, start));
        assert!(!alive(me, start + 1));
        assert!(cpu_seconds(me).is_some());
    }
}
