//! A whole cluster on one machine: `bricks cluster up`, `down`, `kill`,
//! `restart`.
//!
//! Every server is a network namespace `bc-NAME-NODE` running
//! `bricks run` on the configuration `bricks_cluster::config::node_config`
//! gives it; every internal link is a veth pair with the interface names
//! of the cluster file, promiscuous (frames inside the cluster carry label
//! MACs, RouteBricks §6.1) and without offloads; behind every external
//! port is a host namespace `bc-NAME-hNODEPORT` whose only interface has
//! the port's address + 1 and the port's address as its gateway, as a
//! host on the router's subnet would. Linux does not forward in the
//! servers' namespaces and their interfaces have no address: the servers'
//! bricks processes are the only path between the hosts.
//!
//! Several routers share the machine's few CPUs: each runs one worker by
//! default, unpinned (the scheduler spreads them), niced, and napping
//! when idle (`bricks run --idle-nap`), so that idle servers cost little.

use super::state::{self, HostState, NodeState, State};
use super::status;
use crate::netup::{self, interrupted, DownReport};
use crate::StopOnSignals;
use crate::{Context as _, Error};
use bricks_cluster::Cluster;
use bricks_netns::Network;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// `bricks cluster up` options.
#[derive(clap::Args, Clone)]
pub struct UpArgs {
    /// The cluster file (TOML).
    pub file: PathBuf,
    /// Run it under this name instead of the file's (namespaces
    /// `bc-NAME-...`, state in /run/bricks-cluster/NAME): two copies of
    /// one file can then run side by side.
    #[arg(long)]
    pub name: Option<String>,
    /// Device backend of the servers' interfaces: auto, xdp or packet.
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Worker threads per server (each veth gets as many queues).
    #[arg(short = 't', long, default_value_t = 1, value_name = "N")]
    pub threads: usize,
    /// The longest an idle server's worker sleeps, in microseconds (0
    /// busy-polls: a whole CPU per server).
    #[arg(long, default_value_t = 200, value_name = "MICROSECONDS")]
    pub idle_nap: u64,
    /// Niceness of the servers' processes.
    #[arg(
        long,
        default_value_t = 5,
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub nice: i32,
    /// Give up when the servers and their links are not up after this
    /// many seconds.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub timeout: f64,
    /// Print only the final summary line.
    #[arg(short, long)]
    pub quiet: bool,
}

impl UpArgs {
    /// Defaults for `file` (what the bench and tests start from).
    pub fn new(file: &Path) -> UpArgs {
        UpArgs {
            file: file.to_path_buf(),
            name: None,
            backend: "auto".into(),
            threads: 1,
            idle_nap: 200,
            nice: 5,
            timeout: 60.0,
            quiet: true,
        }
    }
}

pub use crate::netup::StopSignal;

/// Exit status of a command interrupted by a signal.
const INTERRUPTED: u8 = 130;

/// The host interface behind every external port.
const HOST_IF: &str = "eth0";

/// MTU of the internal links: a 1500-byte packet plus the 26-byte label
/// (Ethernet header and shim), with room to spare.
const INTERNAL_MTU: &str = "1600";

/// How long a server gets to end after SIGTERM.
const GRACE: Duration = Duration::from_secs(3);

fn need_root(what: &str) -> Option<ExitCode> {
    if bricks_netns::is_root() {
        return None;
    }
    eprintln!(
        "error: bricks cluster {what} needs root: it manages network namespaces, veths and the \
         servers' processes (sudo {} cluster {what} ...)",
        std::env::args().next().unwrap_or_else(|| "bricks".into())
    );
    Some(ExitCode::from(super::FILE_ERROR))
}

/// `bricks cluster up`.
pub fn up_command(a: &UpArgs, stop_on_signals: StopOnSignals) -> Result<ExitCode, Error> {
    let cluster = match super::load(&a.file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(super::FILE_ERROR));
        }
    };
    if let Some(code) = need_root("up") {
        return Ok(code);
    }
    let stop = stop_on_signals()?;
    match up(a, &cluster, &stop) {
        Ok(st) => {
            print!("{}", summary(&st, &cluster));
            Ok(ExitCode::SUCCESS)
        }
        Err(e) if stop.load(Ordering::Relaxed) => {
            eprintln!("interrupted ({e:#}); the cluster was torn down");
            Ok(ExitCode::from(INTERRUPTED))
        }
        Err(e) => Err(e),
    }
}

/// What `up` prints when the cluster is up.
fn summary(st: &State, cluster: &Cluster) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "cluster {} is up: {} servers ({}), {} internal links, R = {}",
        st.name,
        st.nodes.len(),
        topology_name(cluster),
        cluster.links.len(),
        super::rate_text(cluster.rate_bps)
    );
    for n in &st.nodes {
        let _ = writeln!(
            s,
            "  {:<6} ns {:<18} pid {:<8} links {}{}",
            n.name,
            n.namespace,
            n.process.map_or("-".into(), |(p, _)| p.to_string()),
            n.links
                .iter()
                .map(|(i, p)| format!("{i}->{p}"))
                .collect::<Vec<_>>()
                .join(" "),
            if n.macs.is_empty() {
                String::new()
            } else {
                format!("  ports {}", n.macs.join(" "))
            }
        );
    }
    let _ = writeln!(s, "hosts:");
    for h in &st.hosts {
        let _ = writeln!(
            s,
            "  {:<22} {}/{} via {} ({} {})",
            h.namespace, h.address, h.prefix_len, h.gateway, h.node, h.port
        );
    }
    if let (Some(a), Some(b)) = (st.hosts.first(), st.hosts.get(1)) {
        let _ = writeln!(
            s,
            "try:\n  sudo ip netns exec {} ping {}\n  sudo bricks ctl {} stats\n  \
             sudo bricks cluster status {}\n  sudo bricks cluster down {}",
            a.namespace,
            b.address,
            st.nodes[0].socket.display(),
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

fn topology_name(c: &Cluster) -> String {
    use bricks_cluster::model::Topology;
    match c.topology {
        Topology::FullMesh => "full mesh".into(),
        Topology::Fly { k, n } => format!("{k}-ary {n}-fly"),
        Topology::Custom => "custom topology".into(),
    }
}

/// The host address behind a port: the port's address + 1, if that is
/// still a host address of the subnet.
pub fn host_address(addr: Ipv4Addr, len: u8) -> Result<Ipv4Addr, Error> {
    let a = u32::from(addr);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    let h = a.wrapping_add(1);
    if !(len <= 30 && h & mask == a & mask && h & !mask != !mask) {
        return Err(Error::Argument(format!(
            "{addr}/{len}: no room for a host at the port's address + 1"
        )));
    }
    Ok(Ipv4Addr::from(h))
}

/// Builds and starts cluster `cluster` (read from `a.file`) as `a` says;
/// returns its state once every server answers and every link is up. On
/// an error, or when `stop` is set, everything built so far is removed.
pub fn up(a: &UpArgs, cluster: &Cluster, stop: &AtomicBool) -> Result<State, Error> {
    if !["auto", "xdp", "packet"].contains(&a.backend.as_str()) {
        return Err(Error::Argument(format!(
            "--backend {}: expected auto, xdp or packet",
            a.backend
        )));
    }
    if a.threads < 1 {
        return Err(Error::Argument("--threads must be at least 1".into()));
    }
    let name = state::instance_name(a.name.as_deref().unwrap_or(&cluster.name));
    if name.is_empty() {
        return Err(Error::Argument("the cluster needs a name (--name)".into()));
    }
    remove_leftover(&name, a.quiet)?;
    let dir = state::dir(&name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut st = plan_state(a, cluster, &name)?;
    if let Err(e) = st.save() {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e);
    }
    match build(a, cluster, &mut st, stop) {
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

/// Removes what a cluster of this name left (its servers all ended);
/// refuses if one still runs.
fn remove_leftover(name: &str, quiet: bool) -> Result<(), Error> {
    if let Some(old) = State::load(name)? {
        if old.anything_runs() {
            return Err(Error::Argument(format!(
                "cluster {name} is up (see `bricks cluster status {name}`); `bricks cluster down \
             {name}` first, or give another --name"
            )));
        }
        if !quiet {
            println!("Removing a leftover cluster {name} (its servers had ended).");
        }
        teardown(&old);
    } else if state::dir(name).exists() {
        let _ = std::fs::remove_dir_all(state::dir(name));
    }
    // Namespaces of a record that is gone.
    Network::clean_prefix(&state::prefix(name)).map_err(Error::from)
}

/// The state before anything is built: every name and path.
fn plan_state(a: &UpArgs, cluster: &Cluster, name: &str) -> Result<State, Error> {
    let dir = state::dir(name);
    let prefix = state::prefix(name);
    let cluster_file = dir.join("cluster.toml");
    std::fs::copy(&a.file, &cluster_file)
        .with_context(|| format!("copying {} to {}", a.file.display(), cluster_file.display()))?;
    let mut st = State {
        name: name.to_string(),
        cluster: cluster.name.clone(),
        source_file: std::fs::canonicalize(&a.file).unwrap_or_else(|_| a.file.clone()),
        cluster_file,
        rate_bps: cluster.rate_bps,
        namespaces: Vec::new(),
        nodes: Vec::new(),
        hosts: Vec::new(),
        builder: Some((
            std::process::id(),
            state::start_time(std::process::id()).unwrap_or(0),
        )),
    };
    for (i, n) in cluster.nodes.iter().enumerate() {
        let ns = format!("{prefix}{}", n.name);
        st.namespaces.push(ns.clone());
        st.nodes.push(NodeState {
            name: n.name.clone(),
            namespace: ns,
            config: dir.join(format!("{}.click", n.name)),
            socket: dir.join(format!("{}.sock", n.name)),
            log: dir.join(format!("{}.log", n.name)),
            argv: Vec::new(),
            process: None,
            macs: Vec::new(),
            links: cluster
                .link_ends(i as bricks_cluster::NodeId)
                .into_iter()
                .map(|e| (e.iface, cluster.nodes[usize::from(e.peer)].name.clone()))
                .collect(),
        });
    }
    for n in &cluster.nodes {
        for p in &n.ports {
            let ns = format!("{prefix}h{}{}", n.name, p.iface);
            st.namespaces.push(ns.clone());
            st.hosts.push(HostState {
                namespace: ns,
                node: n.name.clone(),
                port: p.iface.clone(),
                iface: HOST_IF.into(),
                address: host_address(p.address, p.prefix_len)?.to_string(),
                prefix_len: p.prefix_len,
                gateway: p.address.to_string(),
                mac: String::new(),
                gateway_mac: String::new(),
            });
        }
    }
    Ok(st)
}

pub fn mac_text(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Builds the namespaces and links, writes the configurations, starts
/// the servers and waits until they are up. `st` is saved as it fills.
fn build(a: &UpArgs, cluster: &Cluster, st: &mut State, stop: &AtomicBool) -> Result<(), Error> {
    let prefix = state::prefix(&st.name);
    // Network prefixes every namespace it makes; it deletes them when
    // dropped, which is what an error here wants. Once the cluster is up
    // it is forgotten: the namespaces outlive this process.
    let mut net = Network::new(&prefix)?;
    let short = |ns: &str| ns.strip_prefix(&prefix).unwrap_or(ns).to_string();
    let queues = a.threads as u32;
    for ns in &st.namespaces {
        interrupted(stop)?;
        let s = short(ns);
        net.add_namespace(&s)?;
        // No IPv6: Linux would send solicitations of its own on every
        // link. Set before the links exist, so they inherit it.
        net.sysctl(&s, "net.ipv6.conf.all.disable_ipv6", "1")?;
        net.sysctl(&s, "net.ipv6.conf.default.disable_ipv6", "1")?;
    }
    for n in &st.nodes {
        net.sysctl(&short(&n.namespace), "net.ipv4.ip_forward", "0")?;
    }
    let node_ns: Vec<String> = st.nodes.iter().map(|n| short(&n.namespace)).collect();
    for l in &cluster.links {
        interrupted(stop)?;
        let (na, nb) = (&node_ns[usize::from(l.a)], &node_ns[usize::from(l.b)]);
        net.add_link(na, &l.a_iface, nb, &l.b_iface, queues)?;
        for (ns, ifname) in [(na, &l.a_iface), (nb, &l.b_iface)] {
            // Label MACs are no interface's own address; labelled
            // frames are 26 bytes longer than the packets they carry.
            bricks_netns::ip(&[
                "-n",
                &net.ns_name(ns),
                "link",
                "set",
                ifname,
                "promisc",
                "on",
                "mtu",
                INTERNAL_MTU,
            ])?;
            net.disable_offloads(ns, ifname)?;
        }
    }
    let mut h = 0;
    for (i, n) in cluster.nodes.iter().enumerate() {
        for p in &n.ports {
            interrupted(stop)?;
            let host = short(&st.hosts[h].namespace);
            let ns = &node_ns[i];
            net.add_link(&host, HOST_IF, ns, &p.iface, queues)?;
            if let Some(mac) = &p.mac {
                // The file's MAC (a real server's): set while down.
                let full = net.ns_name(ns);
                for args in [
                    vec!["-n", &full, "link", "set", &p.iface, "down"],
                    vec![
                        "-n",
                        &full,
                        "link",
                        "set",
                        &p.iface,
                        "address",
                        &mac_text(mac),
                    ],
                    vec!["-n", &full, "link", "set", &p.iface, "up"],
                ] {
                    bricks_netns::ip(&args)?;
                }
            }
            net.disable_offloads(&host, HOST_IF)?;
            net.disable_offloads(ns, &p.iface)?;
            let hs = &mut st.hosts[h];
            net.add_addr(&host, HOST_IF, &format!("{}/{}", hs.address, hs.prefix_len))?;
            net.add_route(&host, &["default", "via", &hs.gateway])?;
            hs.mac = net.mac(&host, HOST_IF)?;
            let port_mac = net.mac(ns, &p.iface)?;
            hs.gateway_mac = port_mac.clone();
            st.nodes[i].macs.push(port_mac);
            h += 1;
        }
    }
    let exe = std::env::current_exe().context("finding the bricks binary")?;
    for (i, n) in st.nodes.iter_mut().enumerate() {
        let options = bricks_cluster::config::ConfigOptions {
            cluster_file: st.cluster_file.clone(),
            backend: a.backend.clone(),
        };
        let text =
            bricks_cluster::config::node_config(cluster, i as bricks_cluster::NodeId, &options);
        std::fs::write(&n.config, text)
            .with_context(|| format!("writing {}", n.config.display()))?;
        n.argv = node_argv(a, &exe, n);
    }
    st.save()?;
    for i in 0..st.nodes.len() {
        interrupted(stop)?;
        let p = spawn_node(&st.nodes[i])?;
        st.nodes[i].process = Some(p);
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

/// The command line of a server.
fn node_argv(a: &UpArgs, exe: &Path, n: &NodeState) -> Vec<String> {
    let mut v: Vec<String> = [
        "ip",
        "netns",
        "exec",
        &n.namespace,
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
            &n.config.display().to_string(),
            "--threads",
            &a.threads.to_string(),
            // Several routers share the CPUs: let the scheduler place
            // them (pinned, every one-worker router would sit on CPU 0).
            "--no-pin",
            "--idle-nap",
            &a.idle_nap.to_string(),
            "--control",
            &n.socket.display().to_string(),
            "-D",
            &format!("BACKEND={}", a.backend),
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    for (p, mac) in n.macs.iter().enumerate() {
        v.push("-D".into());
        v.push(format!("MAC{p}={mac}"));
    }
    v
}

/// Starts a server's process, detached (its own process group, output to
/// its log), so that it outlives `up`; returns (PID, start time). `ip
/// netns exec` and `nice` exec the next program, so the PID is bricks'.
fn spawn_node(n: &NodeState) -> Result<(u32, u64), Error> {
    spawn_logged(&n.argv, &n.log)
}

/// Starts `argv` detached, its own process group, its output appended to
/// `log`; returns (PID, start time). Also starts a multistage router's
/// boxes.
pub fn spawn_logged(argv: &[String], log: &Path) -> Result<(u32, u64), Error> {
    if argv.is_empty() {
        return Err(Error::Process("no command line to start".into()));
    }
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let child = cmd
        .spawn()
        .with_context(|| format!("starting {}", argv.join(" ")))?;
    let pid = child.id();
    // Not waited for here: `state::wait_gone` reaps it if this process
    // stops it, and init adopts it when this process ends.
    drop(child);
    let start = state::start_time(pid).unwrap_or(0);
    Ok((pid, start))
}

/// The last `n` lines of a server's log.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Waits until every server (or only `only`) answers on its control
/// socket and reports each of its internal links up.
fn wait_up(
    st: &State,
    only: Option<usize>,
    timeout: Duration,
    stop: &AtomicBool,
    quiet: bool,
) -> Result<(), Error> {
    let start = Instant::now();
    let which: Vec<usize> = match only {
        Some(i) => vec![i],
        None => (0..st.nodes.len()).collect(),
    };
    let mut pending = which.clone();
    let mut why = String::new();
    while !pending.is_empty() {
        interrupted(stop)?;
        let mut still = Vec::new();
        for &i in &pending {
            let n = &st.nodes[i];
            if let Some((pid, s)) = n.process {
                if !state::alive(pid, s) {
                    return Err(Error::Process(format!(
                        "server {} ended while starting; its log ({}):\n{}",
                        n.name,
                        n.log.display(),
                        log_tail(&n.log, 30)
                    )));
                }
            }
            match status::node_counters(&n.socket) {
                Ok(c) => {
                    let down: Vec<&str> = n
                        .links
                        .iter()
                        .filter(|(iface, _)| c.link_up(iface) != Some(true))
                        .map(|(iface, _)| iface.as_str())
                        .collect();
                    if down.is_empty() {
                        continue;
                    }
                    why = format!("{}: links not up yet: {}", n.name, down.join(" "));
                }
                Err(e) => why = format!("{}: {e:#}", n.name),
            }
            still.push(i);
        }
        pending = still;
        if pending.is_empty() {
            break;
        }
        if start.elapsed() > timeout {
            let n = &st.nodes[pending[0]];
            return Err(Error::Process(format!(
                "not up after {:.0} s ({why}); {}'s log ({}):\n{}",
                timeout.as_secs_f64(),
                n.name,
                n.log.display(),
                log_tail(&n.log, 30)
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if !quiet {
        println!(
            "{} up after {:.1} s",
            if which.len() == 1 {
                format!("server {}", st.nodes[which[0]].name)
            } else {
                format!("{} servers", which.len())
            },
            start.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Stops every recorded process, deletes the namespaces and the state
/// directory. Never fails: whatever is already gone is skipped.
pub fn teardown(st: &State) -> DownReport {
    let stopped = netup::stop_all(
        st.nodes
            .iter()
            .filter_map(|n| n.process.map(|(p, s)| (n.name.as_str(), p, s))),
        GRACE,
    );
    let namespaces = netup::delete_namespaces(&st.namespaces, &state::prefix(&st.name));
    let _ = std::fs::remove_dir_all(state::dir(&st.name));
    DownReport {
        stopped,
        namespaces,
    }
}

/// Takes cluster `name` down; `Ok(None)` if nothing of it was up.
pub fn down(name: &str) -> Result<Option<DownReport>, Error> {
    match State::load(name)? {
        Some(st) => Ok(Some(teardown(&st))),
        // No record; namespaces without one still go.
        None => Ok(netup::down_unrecorded(
            &state::prefix(name),
            &state::dir(name),
        )),
    }
}

/// `bricks cluster down`.
pub fn down_command(name: Option<&str>, all: bool) -> Result<ExitCode, Error> {
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
            what: "cluster",
            short: "cluster",
            one: "server",
            many: "servers",
        },
        down,
    )
}

fn loaded(name: &str) -> Result<State, Error> {
    State::load(name)?.ok_or_else(|| {
        let up = state::recorded();
        Error::Argument(if up.is_empty() {
            format!("cluster {name} is not up (no cluster is)")
        } else {
            format!("cluster {name} is not up (up: {})", up.join(", "))
        })
    })
}

/// Stops one server's process; returns whether it was running.
pub fn kill_node(st: &mut State, node: usize, how: StopSignal) -> Result<bool, Error> {
    let was = netup::end_process(&mut st.nodes[node].process, how, GRACE);
    st.save()?;
    Ok(was)
}

/// Starts one server's process again (stopping it first if it runs) and
/// waits until its links are up.
pub fn restart_node(
    st: &mut State,
    node: usize,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<(), Error> {
    if let Some((pid, s)) = st.nodes[node].process.take() {
        state::stop(pid, s, GRACE);
    }
    if st.nodes[node].argv.is_empty() {
        return Err(Error::Process(format!(
            "no command line recorded for {}",
            st.nodes[node].name
        )));
    }
    let p = spawn_node(&st.nodes[node])?;
    st.nodes[node].process = Some(p);
    st.save()?;
    wait_up(st, Some(node), timeout, stop, true)
}

/// `bricks cluster kill`.
pub fn kill_command(name: &str, node: &str, how: StopSignal) -> Result<ExitCode, Error> {
    if let Some(code) = need_root("kill") {
        return Ok(code);
    }
    let mut st = loaded(name)?;
    let i = st.node(node)?;
    let was = kill_node(&mut st, i, how)?;
    if was {
        println!(
            "server {node} of cluster {name} stopped ({}); `bricks cluster restart {name} {node}` \
             starts it again",
            how.name()
        );
    } else {
        println!("server {node} of cluster {name} was not running");
    }
    Ok(ExitCode::SUCCESS)
}

/// `bricks cluster restart`.
pub fn restart_command(
    name: &str,
    node: &str,
    timeout: f64,
    stop_on_signals: StopOnSignals,
) -> Result<ExitCode, Error> {
    if let Some(code) = need_root("restart") {
        return Ok(code);
    }
    let mut st = loaded(name)?;
    let i = st.node(node)?;
    let stop = stop_on_signals()?;
    let t = Instant::now();
    restart_node(&mut st, i, Duration::from_secs_f64(timeout.max(1.0)), &stop)?;
    println!(
        "server {node} of cluster {name} is up again (PID {}, links up after {:.2} s)",
        st.nodes[i].process.map_or(0, |p| p.0),
        t.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_addresses_follow_the_port() {
        assert_eq!(
            host_address(Ipv4Addr::new(10, 1, 0, 1), 24).unwrap(),
            Ipv4Addr::new(10, 1, 0, 2)
        );
        assert!(host_address(Ipv4Addr::new(10, 1, 0, 254), 24).is_err());
        assert!(host_address(Ipv4Addr::new(10, 1, 0, 255), 24).is_err());
        assert!(host_address(Ipv4Addr::new(10, 1, 0, 1), 31).is_err());
    }
}
