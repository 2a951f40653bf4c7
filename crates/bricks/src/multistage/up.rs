//! A whole multistage router on one machine: `bricks multistage up`,
//! `down`, `kill`, `restart`.
//!
//! Bianco et al. §III on one machine. Every box is a network namespace
//! `bm-NAME-BOX` running `bricks run` on the configuration
//! `bricks_multistage::config::node_config` gives it. The switch is an
//! unmodified Linux bridge (`br0`, no STP, backward learning as any
//! Ethernet switch does, §III-B) in a namespace of its own,
//! `bm-NAME-SWITCH`, with a veth to every balancer back port and every
//! router's back NIC. Behind every front port is a host namespace
//! `bm-NAME-hBOXIFACE` whose only interface has the port's address + 1
//! and the port's address G_k as its gateway, as a host on the router's
//! subnet would.
//!
//! Balancer back ports get the MACs the configurations use
//! (`02:4d:42:BB:JJ:00`, or the file's); front ports keep their veth's
//! MAC, or take the file's, and F_k reaches every box that needs it with
//! `-D MACk=...`. Every box interface is promiscuous (routers carry one
//! MAC per front port; front ports see frames for F_k) and without
//! offloads; Linux forwards nothing in the boxes and their interfaces
//! have no address, so the bricks processes and the bridge are the only
//! path between the hosts.
//!
//! As for the cluster (`bricks_experiments::cluster::up`), every box runs one worker
//! by default, unpinned, niced and napping when idle.

use super::state::{self, BoxState, HostState, PortState, Role, State, SwitchState};
use super::status::{self, count};
use anyhow::Context as _;
use bricks_experiments::cluster::up::{host_address, log_tail, mac_text, spawn_logged, StopSignal};
use bricks_experiments::netup::{
    self, alive, interrupted, start_time, stop as stop_process, DownReport,
};
use bricks_multistage::config::{node_config, ConfigOptions};
use bricks_multistage::{Multistage, Node};
use bricks_netns::Network;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `bricks multistage up` options.
#[derive(clap::Args, Clone)]
pub(crate) struct UpArgs {
    /// The multistage file (TOML).
    pub file: PathBuf,
    /// Run it under this name instead of the file's (namespaces
    /// `bm-NAME-...`, state in /run/bricks-multistage/NAME): two copies of
    /// one file can then run side by side.
    #[arg(long)]
    pub name: Option<String>,
    /// Device backend of the boxes' interfaces: auto, xdp or packet.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Worker threads per box (each veth gets as many queues).
    #[arg(short = 't', long, default_value_t = 1, value_name = "N")]
    pub threads: usize,
    /// The longest an idle box's worker sleeps, in microseconds (0
    /// busy-polls: a whole CPU per box).
    #[arg(long, default_value_t = 200, value_name = "MICROSECONDS")]
    pub idle_nap: u64,
    /// Niceness of the boxes' processes.
    #[arg(
        long,
        default_value_t = 5,
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub nice: i32,
    /// Give up when the boxes are not up, or the balancers do not see
    /// every router, after this many seconds.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Print only the summary.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Exit status of a command interrupted by a signal.
const INTERRUPTED: u8 = 130;

/// The host interface behind every front port.
const HOST_IF: &str = "eth0";

/// The bridge in the switch's namespace.
const BRIDGE: &str = "br0";

/// How long a box gets to end after SIGTERM.
const GRACE: Duration = Duration::from_secs(3);

fn need_root(what: &str) -> Option<ExitCode> {
    if bricks_netns::is_root() {
        return None;
    }
    eprintln!(
        "error: bricks multistage {what} needs root: it manages network namespaces, a bridge, \
         veths and the boxes' processes (sudo {} multistage {what} ...)",
        std::env::args().next().unwrap_or_else(|| "bricks".into())
    );
    Some(ExitCode::from(super::FILE_ERROR))
}

/// `bricks multistage up`.
pub(crate) fn up_command(a: &UpArgs) -> anyhow::Result<ExitCode> {
    let ms = match super::load(&a.file) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(super::FILE_ERROR));
        }
    };
    if let Some(code) = need_root("up") {
        return Ok(code);
    }
    let stop = crate::runner::stop_on_signals()?;
    match up(a, &ms, &stop) {
        Ok(st) => {
            print!("{}", summary(&st, &ms));
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if stop.load(Ordering::Relaxed) => {
            eprintln!("interrupted ({e:#}); the multistage router was torn down");
            Ok(ExitCode::from(INTERRUPTED))
        }
        Err(e) => Err(e),
    }
}

/// What `up` prints when the router is up.
fn summary(st: &State, ms: &Multistage) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let backs: usize = ms.balancers.iter().map(|b| b.backs.len()).sum();
    let _ = writeln!(
        s,
        "multistage {} is up: {} ({}, {}), {}, switch {} (Linux bridge {BRIDGE} in {}); \
         {} {}, policy {}",
        st.name,
        count(ms.balancers.len(), "balancer"),
        count(ms.front_count(), "front port"),
        count(backs, "back port"),
        count(ms.routers.len(), "router"),
        ms.switch,
        st.switch.namespace,
        ms.mode.word(),
        if backs > ms.balancers.len() {
            "with several back ports (DTX-n)"
        } else {
            "with one back port each"
        },
        ms.policy.word()
    );
    for b in &st.boxes {
        let ports: Vec<String> = b
            .fronts
            .iter()
            .map(|p| format!("{} (k={}, {})", p.iface, p.index, p.mac))
            .chain(
                b.backs
                    .iter()
                    .map(|p| format!("{} ({}, switch {})", p.iface, p.mac, p.switch_port)),
            )
            .collect();
        let _ = writeln!(
            s,
            "  {:<8} {:<8} ns {:<16} pid {:<8} {}",
            b.name,
            b.role.as_str(),
            b.namespace,
            b.process.map_or("-".into(), |(p, _)| p.to_string()),
            ports.join(", ")
        );
    }
    let _ = writeln!(s, "hosts:");
    for h in &st.hosts {
        let _ = writeln!(
            s,
            "  {:<20} {}/{} via {} (front port {}: {} {})",
            h.namespace, h.address, h.prefix_len, h.gateway, h.front, h.balancer, h.port
        );
    }
    if let (Some(a), Some(b)) = (st.hosts.first(), st.hosts.last()) {
        let lb = st
            .balancers()
            .next()
            .map(|b| b.socket.display().to_string());
        let _ = writeln!(
            s,
            "try:\n  sudo ip netns exec {} ping {}\n  sudo bricks ctl {} stats\n  \
             sudo bricks multistage status {}\n  sudo bricks multistage down {}",
            a.namespace,
            b.address,
            lb.unwrap_or_default(),
            st.name,
            st.name
        );
    }
    let _ = writeln!(
        s,
        "state: {} (logs and configurations beside it)",
        st.path().display()
    );
    s
}

/// The name of the bridge port behind a box's interface: `BOX-IFACE`
/// where that fits an interface name, else `BOX-J`.
fn switch_port_name(node: &str, iface: &str, j: usize) -> String {
    let full = format!("{node}-{iface}");
    if full.len() <= 15 {
        full
    } else {
        format!("{node}-{j}")
    }
}

/// Builds and starts multistage router `ms` (read from `a.file`) as `a`
/// says; returns its state once every box answers and every balancer sees
/// every router. On an error, or when `stop` is set, everything built so
/// far is removed.
pub(crate) fn up(a: &UpArgs, ms: &Multistage, stop: &AtomicBool) -> anyhow::Result<State> {
    anyhow::ensure!(
        ["auto", "xdp", "packet"].contains(&a.backend.as_str()),
        "--backend {}: expected auto, xdp or packet",
        a.backend
    );
    anyhow::ensure!(a.threads >= 1, "--threads must be at least 1");
    let name = state::instance_name(a.name.as_deref().unwrap_or(&ms.name));
    anyhow::ensure!(
        !name.is_empty(),
        "the multistage router needs a name (--name)"
    );
    remove_leftover(&name, a.quiet)?;
    let dir = state::dir(&name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut st = plan_state(a, ms, &name)?;
    let copied = std::fs::copy(&a.file, &st.file)
        .with_context(|| format!("copying {} to {}", a.file.display(), st.file.display()));
    if let Err(e) = copied.and_then(|_| st.save()) {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e);
    }
    match build(a, ms, &mut st, stop) {
        Ok(()) => {
            st.builder = None;
            st.save()?;
            Ok(st)
        }
        Err(e) => {
            teardown(&st);
            Err(e)
        }
    }
}

/// Removes what a multistage router of this name left (its boxes all
/// ended); refuses if one still runs.
fn remove_leftover(name: &str, quiet: bool) -> anyhow::Result<()> {
    if let Some(old) = State::load(name)? {
        anyhow::ensure!(
            !old.anything_runs(),
            "multistage router {name} is up (see `bricks multistage status {name}`); \
             `bricks multistage down {name}` first, or give another --name"
        );
        if !quiet {
            println!("Removing a leftover multistage router {name} (its boxes had ended).");
        }
        teardown(&old);
    } else if state::dir(name).exists() {
        let _ = std::fs::remove_dir_all(state::dir(name));
    }
    // Namespaces of a record that is gone.
    Network::clean_prefix(&state::prefix(name)).map_err(anyhow::Error::msg)
}

/// The state before anything is built: every name and path (nothing is
/// written).
fn plan_state(a: &UpArgs, ms: &Multistage, name: &str) -> anyhow::Result<State> {
    let dir = state::dir(name);
    let prefix = state::prefix(name);
    let file = dir.join("multistage.toml");
    let switch_ns = format!("{prefix}{}", ms.switch);
    let mut st = State {
        name: name.to_string(),
        multistage: ms.name.clone(),
        source_file: std::fs::canonicalize(&a.file).unwrap_or_else(|_| a.file.clone()),
        file,
        namespaces: vec![switch_ns.clone()],
        switch: SwitchState {
            namespace: switch_ns,
            bridge: BRIDGE.into(),
        },
        boxes: Vec::new(),
        hosts: Vec::new(),
        builder: Some((
            std::process::id(),
            start_time(std::process::id()).unwrap_or(0),
        )),
    };
    let new_box = |node: &str, role: Role, index: usize| BoxState {
        name: node.to_string(),
        role,
        index,
        namespace: format!("{prefix}{node}"),
        config: dir.join(format!("{node}.click")),
        socket: dir.join(format!("{node}.sock")),
        log: dir.join(format!("{node}.log")),
        argv: Vec::new(),
        process: None,
        fronts: Vec::new(),
        backs: Vec::new(),
    };
    for (b, bal) in ms.balancers.iter().enumerate() {
        let mut x = new_box(&bal.name, Role::Balancer, b);
        for p in &bal.fronts {
            x.fronts.push(PortState {
                iface: p.iface.clone(),
                mac: p.mac.as_ref().map(mac_text).unwrap_or_default(),
                index: usize::from(p.index),
                switch_port: String::new(),
            });
            let ns = format!("{prefix}h{}{}", bal.name, p.iface);
            st.namespaces.push(ns.clone());
            st.hosts.push(HostState {
                namespace: ns,
                balancer: bal.name.clone(),
                port: p.iface.clone(),
                front: usize::from(p.index),
                iface: HOST_IF.into(),
                address: host_address(p.address, p.prefix_len)?.to_string(),
                prefix_len: p.prefix_len,
                gateway: p.address.to_string(),
                mac: String::new(),
                gateway_mac: String::new(),
            });
        }
        for (j, p) in bal.backs.iter().enumerate() {
            x.backs.push(PortState {
                iface: p.iface.clone(),
                mac: mac_text(&ms.back_port_mac(b, j)),
                index: j,
                switch_port: switch_port_name(&bal.name, &p.iface, j),
            });
        }
        st.namespaces.push(x.namespace.clone());
        st.boxes.push(x);
    }
    for (i, r) in ms.routers.iter().enumerate() {
        let mut x = new_box(&r.name, Role::Router, i);
        x.backs.push(PortState {
            iface: r.iface.clone(),
            mac: String::new(),
            index: 0,
            switch_port: switch_port_name(&r.name, &r.iface, 0),
        });
        st.namespaces.push(x.namespace.clone());
        st.boxes.push(x);
    }
    let mut seen = BTreeSet::new();
    for ns in &st.namespaces {
        anyhow::ensure!(
            seen.insert(ns.as_str()),
            "two parts of the router would share namespace {ns}: rename a box or an interface"
        );
    }
    let mut ports = BTreeSet::new();
    for p in st.boxes.iter().flat_map(|b| &b.backs) {
        anyhow::ensure!(
            ports.insert(p.switch_port.as_str()),
            "two back ports would share the bridge port name {}",
            p.switch_port
        );
    }
    Ok(st)
}

/// `ip -n NS link set IFACE ARGS...`.
fn link_set(ns: &str, iface: &str, args: &[&str]) -> anyhow::Result<()> {
    let mut v = vec!["-n", ns, "link", "set", iface];
    v.extend_from_slice(args);
    bricks_netns::ip(&v).map_err(anyhow::Error::msg)?;
    Ok(())
}

/// Gives `iface` the MAC `mac` (set while it is down).
fn set_mac(ns: &str, iface: &str, mac: &str) -> anyhow::Result<()> {
    link_set(ns, iface, &["down"])?;
    link_set(ns, iface, &["address", mac])?;
    link_set(ns, iface, &["up"])
}

/// Builds the namespaces, the bridge and the links, writes the
/// configurations, starts the boxes and waits until they are up. `st` is
/// saved as it fills.
fn build(a: &UpArgs, ms: &Multistage, st: &mut State, stop: &AtomicBool) -> anyhow::Result<()> {
    let e = anyhow::Error::msg;
    let prefix = state::prefix(&st.name);
    // Network deletes the namespaces it made when dropped, which is what
    // an error here wants; once the router is up it is forgotten: the
    // namespaces outlive this process.
    let mut net = Network::new(&prefix).map_err(e)?;
    let short = |ns: &str| ns.strip_prefix(&prefix).unwrap_or(ns).to_string();
    let queues = a.threads as u32;
    for ns in &st.namespaces {
        interrupted(stop)?;
        let s = short(ns);
        net.add_namespace(&s).map_err(e)?;
        // No IPv6: Linux would send solicitations of its own on every
        // link. Set before the links exist, so they inherit it.
        net.sysctl(&s, "net.ipv6.conf.all.disable_ipv6", "1")
            .map_err(e)?;
        net.sysctl(&s, "net.ipv6.conf.default.disable_ipv6", "1")
            .map_err(e)?;
    }
    for b in &st.boxes {
        net.sysctl(&short(&b.namespace), "net.ipv4.ip_forward", "0")
            .map_err(e)?;
    }
    // The switch: a plain learning bridge, no STP (nothing to loop), up
    // before its ports join so that they forward at once.
    let sw = short(&st.switch.namespace);
    let sw_full = st.switch.namespace.clone();
    bricks_netns::ip(&[
        "-n",
        &sw_full,
        "link",
        "add",
        BRIDGE,
        "type",
        "bridge",
        "stp_state",
        "0",
    ])
    .map_err(e)?;
    link_set(&sw_full, BRIDGE, &["up"])?;
    for b in st.boxes.iter_mut() {
        let ns = short(&b.namespace);
        for p in b.backs.iter_mut() {
            interrupted(stop)?;
            net.add_link(&ns, &p.iface, &sw, &p.switch_port, queues)
                .map_err(e)?;
            if b.role == Role::Balancer {
                // The MAC the balancer probes from and the switch learns.
                set_mac(&b.namespace, &p.iface, &p.mac)?;
            } else {
                p.mac = net.mac(&ns, &p.iface).map_err(e)?;
            }
            link_set(&b.namespace, &p.iface, &["promisc", "on"])?;
            link_set(&sw_full, &p.switch_port, &["master", BRIDGE])?;
            net.disable_offloads(&ns, &p.iface).map_err(e)?;
            net.disable_offloads(&sw, &p.switch_port).map_err(e)?;
        }
    }
    let mut h = 0;
    for b in st.boxes.iter_mut().filter(|b| b.role == Role::Balancer) {
        let ns = short(&b.namespace);
        for p in b.fronts.iter_mut() {
            interrupted(stop)?;
            let host = short(&st.hosts[h].namespace);
            net.add_link(&host, HOST_IF, &ns, &p.iface, queues)
                .map_err(e)?;
            if p.mac.is_empty() {
                p.mac = net.mac(&ns, &p.iface).map_err(e)?;
            } else {
                set_mac(&b.namespace, &p.iface, &p.mac)?;
            }
            link_set(&b.namespace, &p.iface, &["promisc", "on"])?;
            net.disable_offloads(&host, HOST_IF).map_err(e)?;
            net.disable_offloads(&ns, &p.iface).map_err(e)?;
            let hs = &mut st.hosts[h];
            net.add_addr(&host, HOST_IF, &format!("{}/{}", hs.address, hs.prefix_len))
                .map_err(e)?;
            net.add_route(&host, &["default", "via", &hs.gateway])
                .map_err(e)?;
            hs.mac = net.mac(&host, HOST_IF).map_err(e)?;
            hs.gateway_mac = p.mac.clone();
            h += 1;
        }
    }
    st.save()?;
    // F_k of every front port, for the boxes that use it.
    let front_macs: Vec<(usize, String)> = st
        .balancers()
        .flat_map(|b| b.fronts.iter().map(|p| (p.index, p.mac.clone())))
        .collect();
    let exe = std::env::current_exe().context("finding the bricks binary")?;
    for b in st.boxes.iter_mut() {
        let node = match b.role {
            Role::Balancer => Node::Balancer(b.index),
            Role::Router => Node::Router(b.index),
        };
        let options = ConfigOptions {
            source: st.source_file.display().to_string(),
            output: b.config.display().to_string(),
            backend: a.backend.clone(),
            control: b.socket.display().to_string(),
        };
        std::fs::write(&b.config, node_config(ms, node, &options))
            .with_context(|| format!("writing {}", b.config.display()))?;
        let macs: Vec<(usize, String)> = match b.role {
            Role::Balancer => b.fronts.iter().map(|p| (p.index, p.mac.clone())).collect(),
            Role::Router => front_macs.clone(),
        };
        b.argv = box_argv(a, &exe, b, &macs);
    }
    st.save()?;
    for i in 0..st.boxes.len() {
        interrupted(stop)?;
        let p = spawn_logged(&st.boxes[i].argv, &st.boxes[i].log)?;
        st.boxes[i].process = Some(p);
        st.save()?;
    }
    wait_up(
        st,
        None,
        Duration::from_secs_f64(a.timeout.max(1.0)),
        stop,
        a.quiet,
    )?;
    // Up: the namespaces now belong to the record, not to this process.
    std::mem::forget(net);
    Ok(())
}

/// The command line of a box; `macs` are the F_k it is given.
fn box_argv(a: &UpArgs, exe: &Path, b: &BoxState, macs: &[(usize, String)]) -> Vec<String> {
    let mut v: Vec<String> = [
        "ip",
        "netns",
        "exec",
        &b.namespace,
        "nice",
        "-n",
        &a.nice.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(exe.display().to_string());
    v.extend(
        [
            "run",
            &b.config.display().to_string(),
            "--threads",
            &a.threads.to_string(),
            // Several boxes share the CPUs: let the scheduler place them.
            "--no-pin",
            "--idle-nap",
            &a.idle_nap.to_string(),
            "--control",
            &b.socket.display().to_string(),
            "-D",
            &format!("BACKEND={}", a.backend),
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    for (k, mac) in macs {
        v.push("-D".into());
        v.push(format!("MAC{k}={mac}"));
    }
    v
}

/// Why `st` is not up yet, as far as the boxes in `which` go: `None` when
/// each of them answers and every running balancer counts every running
/// router live.
fn not_up_yet(st: &State, which: &[usize]) -> anyhow::Result<Option<String>> {
    let running_routers = st
        .routers()
        .filter(|r| r.process.is_some_and(|(p, s)| alive(p, s)))
        .count() as u64;
    for &i in which {
        let b = &st.boxes[i];
        if let Some((pid, s)) = b.process {
            anyhow::ensure!(
                alive(pid, s),
                "box {} ended while starting; its log ({}):\n{}",
                b.name,
                b.log.display(),
                log_tail(&b.log, 30)
            );
        }
        if b.role == Role::Router {
            if let Err(e) = status::query_stats(b) {
                return Ok(Some(format!("{}: {e:#}", b.name)));
            }
        }
    }
    for b in st.balancers() {
        let mine = which.contains(&st.find_box(&b.name)?);
        if !mine && !b.process.is_some_and(|(p, s)| alive(p, s)) {
            continue;
        }
        match status::balancer_counters(b) {
            Ok(c) => {
                let live = c.gauge("live").unwrap_or(0);
                if live != running_routers {
                    return Ok(Some(format!(
                        "{} sees {live} of {running_routers} running routers live",
                        b.name
                    )));
                }
            }
            Err(e) => return Ok(Some(format!("{}: {e:#}", b.name))),
        }
    }
    Ok(None)
}

/// Waits until every box (or only `only`) answers on its control socket
/// and every running balancer sees every running router.
fn wait_up(
    st: &State,
    only: Option<usize>,
    timeout: Duration,
    stop: &AtomicBool,
    quiet: bool,
) -> anyhow::Result<()> {
    let start = Instant::now();
    let which: Vec<usize> = match only {
        Some(i) => vec![i],
        None => (0..st.boxes.len()).collect(),
    };
    loop {
        interrupted(stop)?;
        let Some(why) = not_up_yet(st, &which)? else {
            break;
        };
        if start.elapsed() > timeout {
            let b = which
                .iter()
                .map(|&i| &st.boxes[i])
                .find(|b| why.starts_with(&b.name))
                .unwrap_or(&st.boxes[which[0]]);
            anyhow::bail!(
                "not up after {:.0} s ({why}); {}'s log ({}):\n{}",
                timeout.as_secs_f64(),
                b.name,
                b.log.display(),
                log_tail(&b.log, 30)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if !quiet {
        println!(
            "{} up after {:.1} s",
            if which.len() == 1 {
                format!("box {}", st.boxes[which[0]].name)
            } else {
                format!("{} boxes", which.len())
            },
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Stops every recorded process, deletes the namespaces (the bridge and
/// every veth go with them) and the state directory. Never fails:
/// whatever is already gone is skipped.
pub(crate) fn teardown(st: &State) -> DownReport {
    let stopped = netup::stop_all(
        st.boxes
            .iter()
            .filter_map(|b| b.process.map(|(p, s)| (b.name.as_str(), p, s))),
        GRACE,
    );
    let namespaces = netup::delete_namespaces(&st.namespaces, &state::prefix(&st.name));
    let _ = std::fs::remove_dir_all(state::dir(&st.name));
    DownReport {
        stopped,
        namespaces,
    }
}

/// Takes multistage router `name` down; `Ok(None)` if nothing of it was
/// up.
pub(crate) fn down(name: &str) -> anyhow::Result<Option<DownReport>> {
    match State::load(name)? {
        Some(st) => Ok(Some(teardown(&st))),
        // No record; namespaces without one still go.
        None => Ok(netup::down_unrecorded(
            &state::prefix(name),
            &state::dir(name),
        )),
    }
}

/// `bricks multistage down`.
pub(crate) fn down_command(name: Option<&str>, all: bool) -> anyhow::Result<ExitCode> {
    if let Some(code) = need_root("down") {
        return Ok(code);
    }
    let names = if all {
        state::recorded()
    } else {
        match state::only_one(name)? {
            Some(n) => vec![n],
            None => Vec::new(),
        }
    };
    netup::down_each(
        names,
        &netup::Nouns {
            what: "multistage router",
            short: "multistage",
            one: "box",
            many: "boxes",
        },
        down,
    )
}

fn loaded(name: &str) -> anyhow::Result<State> {
    State::load(name)?.with_context(|| {
        let up = state::recorded();
        if up.is_empty() {
            format!("multistage router {name} is not up (none is)")
        } else {
            format!("multistage router {name} is not up (up: {})", up.join(", "))
        }
    })
}

/// Stops one box's process; returns whether it was running.
pub(crate) fn kill_box(st: &mut State, i: usize, how: StopSignal) -> anyhow::Result<bool> {
    let was = netup::end_process(&mut st.boxes[i].process, how, GRACE);
    st.save()?;
    Ok(was)
}

/// Starts one box's process again (stopping it first if it runs) and
/// waits until it answers and the balancers see every running router.
pub(crate) fn restart_box(
    st: &mut State,
    i: usize,
    timeout: Duration,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    if let Some((pid, s)) = st.boxes[i].process.take() {
        stop_process(pid, s, GRACE);
    }
    anyhow::ensure!(
        !st.boxes[i].argv.is_empty(),
        "no command line recorded for {}",
        st.boxes[i].name
    );
    let p = spawn_logged(&st.boxes[i].argv, &st.boxes[i].log)?;
    st.boxes[i].process = Some(p);
    st.save()?;
    wait_up(st, Some(i), timeout, stop, true)
}

/// `bricks multistage kill`.
pub(crate) fn kill_command(name: &str, node: &str, how: StopSignal) -> anyhow::Result<ExitCode> {
    if let Some(code) = need_root("kill") {
        return Ok(code);
    }
    let mut st = loaded(name)?;
    let i = st.find_box(node)?;
    let was = kill_box(&mut st, i, how)?;
    if was {
        println!(
            "{} {node} of multistage {name} stopped ({}); `bricks multistage restart {name} \
             {node}` starts it again",
            st.boxes[i].role.as_str(),
            how.name()
        );
    } else {
        println!("{node} of multistage {name} was not running");
    }
    Ok(ExitCode::SUCCESS)
}

/// `bricks multistage restart`.
pub(crate) fn restart_command(name: &str, node: &str, timeout: f64) -> anyhow::Result<ExitCode> {
    if let Some(code) = need_root("restart") {
        return Ok(code);
    }
    let mut st = loaded(name)?;
    let i = st.find_box(node)?;
    let stop = crate::runner::stop_on_signals()?;
    let t = Instant::now();
    restart_box(&mut st, i, Duration::from_secs_f64(timeout.max(1.0)), &stop)?;
    println!(
        "{} {node} of multistage {name} is up again (PID {}, in the balancing set after {:.2} s)",
        st.boxes[i].role.as_str(),
        st.boxes[i].process.map_or(0, |p| p.0),
        t.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bridge_ports_are_named_after_their_box_within_fifteen_bytes() {
        assert_eq!(switch_port_name("lb1", "back0", 0), "lb1-back0");
        assert_eq!(switch_port_name("r1", "eth0", 0), "r1-eth0");
        assert_eq!(switch_port_name("lb1abc", "enp3s0f1np1", 7), "lb1abc-7");
    }

    fn example() -> (Multistage, PathBuf) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conf/multistage/2x2.toml");
        (Multistage::load(&path).unwrap(), path)
    }

    #[test]
    fn the_plan_names_every_namespace_port_and_host() {
        let (ms, path) = example();
        let name = format!("unit{}", std::process::id());
        let a = UpArgs {
            file: path,
            name: Some(name.clone()),
            backend: "packet".into(),
            threads: 1,
            idle_nap: 200,
            nice: 5,
            timeout: 10.0,
            quiet: true,
        };
        let st = plan_state(&a, &ms, &name).unwrap();
        assert_eq!(st.switch.namespace, format!("bm-{name}-sw"));
        assert_eq!(st.boxes.len(), 4);
        assert_eq!(st.balancers().count(), 2);
        let lb2 = &st.boxes[1];
        assert_eq!(lb2.fronts[1].index, 3);
        assert_eq!(lb2.backs[0].mac, "02:4d:42:01:00:00");
        assert_eq!(lb2.backs[0].switch_port, "lb2-back0");
        assert_eq!(st.boxes[3].backs[0].switch_port, "r2-eth0");
        assert_eq!(st.hosts.len(), 4);
        assert_eq!(st.hosts[3].namespace, format!("bm-{name}-hlb2ext1"));
        assert_eq!(st.hosts[3].address, "10.3.0.2");
        assert_eq!(st.hosts[3].gateway, "10.3.0.1");
        // The switch, four boxes and four hosts.
        assert_eq!(st.namespaces.len(), 9);
        let b = &st.boxes[3];
        let argv = box_argv(
            &a,
            Path::new("/bin/bricks"),
            b,
            &[(0, "02:00:00:00:00:01".into())],
        );
        let line = argv.join(" ");
        assert!(
            line.starts_with(&format!(
                "ip netns exec bm-{name}-r2 nice -n 5 /bin/bricks run "
            )),
            "{line}"
        );
        assert!(
            line.ends_with("-D BACKEND=packet -D MAC0=02:00:00:00:00:01"),
            "{line}"
        );
    }
}
