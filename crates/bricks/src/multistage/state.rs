//! The record of a multistage router running on this machine:
//! `/run/bricks-multistage/NAME/state.json`, written by `bricks multistage
//! up` before it creates anything and kept current as boxes start and
//! stop, so that `status`, `down`, `kill` and `restart` (and the next `up`
//! after a crash) know every namespace and process it made.
//!
//! Processes are recorded with their start time, as the cluster's are
//! (`bricks_experiments::cluster::state`, whose process helpers this module uses): a
//! reused PID never matches a stale record.

use anyhow::Context as _;
use bricks_experiments::netup::alive;
use bricks_experiments::netup::{proc_from, proc_json, string as s, strings};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Where every multistage router's state directory lives.
pub(crate) const STATE_ROOT: &str = "/run/bricks-multistage";

/// Every namespace of a multistage router starts with `bm-NAME-`.
pub(crate) fn prefix(name: &str) -> String {
    format!("bm-{name}-")
}

/// A multistage router's state directory.
pub(crate) fn dir(name: &str) -> PathBuf {
    Path::new(STATE_ROOT).join(name)
}

/// The name a multistage router runs under: its own name, or the one
/// given, with anything but letters, digits and `_` replaced by `_` (so
/// that `bm-NAME-` is the prefix of its namespaces and of no other's).
pub(crate) fn instance_name(name: &str) -> String {
    bricks_experiments::netup::instance_name(name)
}

/// What a box is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// An L2 balancer: front ports outside, back ports on the switch.
    Balancer,
    /// An L3 router: one port on the switch.
    Router,
}

impl Role {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::Balancer => "balancer",
            Role::Router => "router",
        }
    }

    fn parse(s: &str) -> anyhow::Result<Role> {
        match s {
            "balancer" => Ok(Role::Balancer),
            "router" => Ok(Role::Router),
            _ => anyhow::bail!("unknown role `{s}`"),
        }
    }
}

/// One interface of a box.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PortState {
    /// Its name in the box's namespace.
    pub iface: String,
    /// Its MAC.
    pub mac: String,
    /// Front ports: the global front port index. Back ports: the back port
    /// index on its box (0 for a router).
    pub index: usize,
    /// Back ports: the veth end in the switch namespace, a port of the
    /// bridge. Front ports: the host namespace's interface is behind it
    /// (see [`HostState`]), so this is empty.
    pub switch_port: String,
}

/// One box (a balancer or a router) of a running multistage router.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BoxState {
    pub name: String,
    pub role: Role,
    /// The balancer's or router's index (b or i in the MAC labels).
    pub index: usize,
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
    /// Front ports (balancers only), in the file's order.
    pub fronts: Vec<PortState>,
    /// Ports on the switch: a balancer's back ports, a router's one port.
    pub backs: Vec<PortState>,
}

/// A host behind one front port.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HostState {
    pub namespace: String,
    /// The balancer whose front port it is behind.
    pub balancer: String,
    /// The balancer's front interface.
    pub port: String,
    /// The global front port index k.
    pub front: usize,
    /// The host's interface.
    pub iface: String,
    pub address: String,
    pub prefix_len: u8,
    /// G_k, the router's address on this subnet: the host's gateway.
    pub gateway: String,
    /// The host interface's MAC.
    pub mac: String,
    /// F_k, the front port's MAC (where the host's frames go).
    pub gateway_mac: String,
}

/// The switch: a Linux bridge in a namespace of its own.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SwitchState {
    pub namespace: String,
    pub bridge: String,
}

/// A running multistage router.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct State {
    /// The name it runs under.
    pub name: String,
    /// The router's own name (in its file).
    pub multistage: String,
    /// The file `up` was given.
    pub source_file: PathBuf,
    /// The copy the configurations were made from.
    pub file: PathBuf,
    /// Every namespace: the switch, the boxes, the hosts.
    pub namespaces: Vec<String>,
    pub switch: SwitchState,
    /// Balancers first, in the file's order, then routers.
    pub boxes: Vec<BoxState>,
    pub hosts: Vec<HostState>,
    /// The `bricks multistage up` process while it builds the router.
    pub builder: Option<(u32, u64)>,
}

fn n(v: &Value, k: &str) -> anyhow::Result<usize> {
    v.get(k)
        .and_then(Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .with_context(|| format!("no number `{k}`"))
}

fn port_json(p: &PortState) -> Value {
    json!({"iface": p.iface, "mac": p.mac, "index": p.index, "switch_port": p.switch_port})
}

fn ports_from(v: &Value, k: &str) -> anyhow::Result<Vec<PortState>> {
    let mut out = Vec::new();
    for p in v.get(k).and_then(Value::as_array).into_iter().flatten() {
        out.push(PortState {
            iface: s(p, "iface")?,
            mac: s(p, "mac").unwrap_or_default(),
            index: n(p, "index")?,
            switch_port: s(p, "switch_port").unwrap_or_default(),
        });
    }
    Ok(out)
}

impl State {
    pub(crate) fn path(&self) -> PathBuf {
        dir(&self.name).join("state.json")
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "multistage": self.multistage,
            "source_file": self.source_file,
            "file": self.file,
            "builder": proc_json(self.builder),
            "namespaces": self.namespaces,
            "switch": {"namespace": self.switch.namespace, "bridge": self.switch.bridge},
            "boxes": self.boxes.iter().map(|b| json!({
                "name": b.name,
                "role": b.role.as_str(),
                "index": b.index,
                "namespace": b.namespace,
                "config": b.config,
                "socket": b.socket,
                "log": b.log,
                "argv": b.argv,
                "process": proc_json(b.process),
                "fronts": b.fronts.iter().map(port_json).collect::<Vec<_>>(),
                "backs": b.backs.iter().map(port_json).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "hosts": self.hosts.iter().map(|h| json!({
                "namespace": h.namespace,
                "balancer": h.balancer,
                "port": h.port,
                "front": h.front,
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
        let mut boxes = Vec::new();
        for b in v["boxes"].as_array().context("no `boxes`")? {
            boxes.push(BoxState {
                name: s(b, "name")?,
                role: Role::parse(&s(b, "role")?)?,
                index: n(b, "index")?,
                namespace: s(b, "namespace")?,
                config: s(b, "config")?.into(),
                socket: s(b, "socket")?.into(),
                log: s(b, "log")?.into(),
                argv: strings(b, "argv"),
                process: proc_from(&b["process"]),
                fronts: ports_from(b, "fronts")?,
                backs: ports_from(b, "backs")?,
            });
        }
        let mut hosts = Vec::new();
        for h in v["hosts"].as_array().context("no `hosts`")? {
            hosts.push(HostState {
                namespace: s(h, "namespace")?,
                balancer: s(h, "balancer")?,
                port: s(h, "port")?,
                front: n(h, "front")?,
                iface: s(h, "iface")?,
                address: s(h, "address")?,
                prefix_len: h["prefix_len"].as_u64().unwrap_or(24) as u8,
                gateway: s(h, "gateway")?,
                mac: s(h, "mac").unwrap_or_default(),
                gateway_mac: s(h, "gateway_mac").unwrap_or_default(),
            });
        }
        let sw = &v["switch"];
        Ok(State {
            name: s(v, "name")?,
            multistage: s(v, "multistage")?,
            source_file: s(v, "source_file")?.into(),
            file: s(v, "file")?.into(),
            namespaces: strings(v, "namespaces"),
            switch: SwitchState {
                namespace: s(sw, "namespace")?,
                bridge: s(sw, "bridge")?,
            },
            boxes,
            hosts,
            builder: proc_from(&v["builder"]),
        })
    }

    /// Writes the record (atomically: a reader never sees half of it).
    pub(crate) fn save(&self) -> anyhow::Result<()> {
        Ok(bricks_experiments::netup::save_json(
            &self.path(),
            &self.to_json(),
        )?)
    }

    /// The record of multistage router `name`; `Ok(None)` if there is
    /// none.
    pub(crate) fn load(name: &str) -> anyhow::Result<Option<State>> {
        let path = dir(name).join("state.json");
        let Some(v) = bricks_experiments::netup::load_json(&path, "a multistage state")? else {
            return Ok(None);
        };
        State::from_json(&v)
            .map(Some)
            .with_context(|| format!("{}: not a multistage state", path.display()))
    }

    /// The box called `name`.
    pub(crate) fn find_box(&self, name: &str) -> anyhow::Result<usize> {
        self.boxes
            .iter()
            .position(|b| b.name == name)
            .with_context(|| {
                format!(
                    "multistage router {} has no box `{name}` (boxes: {})",
                    self.name,
                    self.boxes
                        .iter()
                        .map(|b| b.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
    }

    /// The balancers, in the file's order.
    pub(crate) fn balancers(&self) -> impl Iterator<Item = &BoxState> {
        self.boxes.iter().filter(|b| b.role == Role::Balancer)
    }

    /// The routers, by index.
    pub(crate) fn routers(&self) -> impl Iterator<Item = &BoxState> {
        self.boxes.iter().filter(|b| b.role == Role::Router)
    }

    /// Whether any recorded process (a box, or the builder) still runs.
    pub(crate) fn anything_runs(&self) -> bool {
        self.builder.is_some_and(|(p, s)| alive(p, s))
            || self
                .boxes
                .iter()
                .any(|b| b.process.is_some_and(|(p, s)| alive(p, s)))
    }
}

/// The names of the multistage routers with a state directory.
pub(crate) fn recorded() -> Vec<String> {
    bricks_experiments::netup::recorded(STATE_ROOT)
}

/// The one multistage router that is recorded, when no name is given.
pub(crate) fn only_one(name: Option<&str>) -> anyhow::Result<Option<String>> {
    Ok(bricks_experiments::netup::only_one(
        STATE_ROOT,
        name,
        "multistage routers",
    )?)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn port(iface: &str, index: usize, switch_port: &str) -> PortState {
        PortState {
            iface: iface.into(),
            mac: "02:4d:42:00:00:00".into(),
            index,
            switch_port: switch_port.into(),
        }
    }

    pub(crate) fn sample() -> State {
        let dir = Path::new("/run/bricks-multistage/m");
        let boxed = |name: &str, role, index, fronts, backs| BoxState {
            name: String::from(name),
            role,
            index,
            namespace: format!("bm-m-{name}"),
            config: dir.join(format!("{name}.click")),
            socket: dir.join(format!("{name}.sock")),
            log: dir.join(format!("{name}.log")),
            argv: vec!["ip".into(), "netns".into()],
            process: Some((12, 34)),
            fronts,
            backs,
        };
        State {
            name: "m".into(),
            multistage: "2x2".into(),
            source_file: "/x/2x2.toml".into(),
            file: dir.join("multistage.toml"),
            namespaces: vec!["bm-m-sw".into(), "bm-m-b1".into(), "bm-m-r1".into()],
            switch: SwitchState {
                namespace: "bm-m-sw".into(),
                bridge: "br0".into(),
            },
            boxes: vec![
                boxed(
                    "b1",
                    Role::Balancer,
                    0,
                    vec![port("front0", 0, "")],
                    vec![port("back0", 0, "sw0")],
                ),
                boxed("r1", Role::Router, 0, vec![], vec![port("eth0", 0, "sw1")]),
            ],
            hosts: vec![HostState {
                namespace: "bm-m-hb1front0".into(),
                balancer: "b1".into(),
                port: "front0".into(),
                front: 0,
                iface: "eth0".into(),
                address: "10.0.0.2".into(),
                prefix_len: 24,
                gateway: "10.0.0.1".into(),
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
        assert_eq!(s.balancers().count(), 1);
        assert_eq!(s.routers().next().unwrap().name, "r1");
        assert_eq!(s.find_box("r1").unwrap(), 1);
        let e = s.find_box("r9").unwrap_err().to_string();
        assert!(e.contains("boxes: b1, r1"), "{e}");
    }

    #[test]
    fn a_record_with_an_unknown_role_is_refused() {
        let mut v = sample().to_json();
        v["boxes"][0]["role"] = "switch".into();
        assert!(State::from_json(&v).is_err());
    }

    #[test]
    fn names_are_made_safe_for_the_prefix() {
        assert_eq!(instance_name("my-2x2.a"), "my_2x2_a");
        assert_eq!(prefix("m"), "bm-m-");
    }
}
