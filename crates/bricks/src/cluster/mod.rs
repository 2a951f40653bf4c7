//! `bricks cluster`: RouteBricks clusters (SOSP 2009 §3, §6) from the
//! command line.
//!
//! The cluster itself (file, topologies, sizing, per-node configurations)
//! is `bricks_cluster`; the data plane is the `VLBNode` element. This
//! module only drives them:
//!
//! * `plan`: the paper's sizing method (§3.3, Fig. 3) for a port count;
//! * `check`, `config`: a cluster file validated, and the Click
//!   configuration one of its servers runs;
//! * `up`, `status`, `down`, `kill`, `restart`: a whole cluster on this
//!   machine, one network namespace per server, veth pairs as the
//!   internal links, one host namespace per external port, one `bricks
//!   run` per server; its state in `/run/bricks-cluster/NAME/state.json`.
//!   The orchestration is [`bricks_experiments::cluster`] (`up`, `state`,
//!   `status`), which `bricks bench cluster` and `bricks reproduce` drive
//!   too; this module parses the arguments and calls it.
//!
//! How long flows stop when a server fails is measured with `bricks gen`
//! and `bricks sink` (its `max_flow_gap`).

use anyhow::Context as _;
use bricks_cluster::{units, Cluster};
pub(crate) use bricks_experiments::cluster::{load, rate_text, status, up, FILE_ERROR};
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `bricks cluster` subcommands.
#[derive(Subcommand)]
pub(crate) enum ClusterCommand {
    /// Size a cluster router (RouteBricks §3.3): how many servers, in
    /// which topology, with which internal link rate and per-server
    /// processing rate.
    ///
    /// Each server takes as many external ports as it can process
    /// (--ports-per-server, s); the servers are a full mesh when the
    /// fanout allows it (N/s - 1 <= K), a k-ary n-fly with intermediate
    /// servers otherwise. With Direct VLB every server processes between
    /// 2sR (uniform traffic) and 3sR (worst case).
    #[command(after_help = "Examples:\n  \
        bricks cluster plan --ports 4 --rate 10G --fanout 4 --ports-per-server 1     # RB4: a full mesh\n  \
        bricks cluster plan --ports 1024 --rate 10G --fanout 10 --ports-per-server 1 # a 10-ary 3-fly\n  \
        bricks cluster plan --figure3                 # the table of the paper's Fig. 3\n  \
        bricks cluster plan --plot fig3.svg           # and its plot")]
    Plan(PlanArgs),
    /// Validate a cluster file and describe it; on errors, print the
    /// reason and exit with status 2.
    #[command(after_help = "Examples:\n  \
        bricks cluster check conf/cluster/rb4.toml\n  \
        bricks cluster check conf/cluster/fly.toml")]
    Check {
        /// The cluster file (TOML).
        file: PathBuf,
    },
    /// Print the Click configuration one server of the cluster runs.
    ///
    /// On real servers: copy the cluster file to every server (the
    /// configuration reads it, at the absolute path printed in it), cable
    /// the internal interfaces as the file's links say, set them
    /// promiscuous (`ip link set vn2 promisc on`: frames inside the cluster
    /// carry label MACs), and run on each server
    /// `bricks run node.click -D MAC0=<MAC of its first external port>`
    /// (MAC1 for a second port, ...) with `--control /run/bricks.sock` to
    /// watch it. The hosts behind port p use the port's address as their
    /// gateway.
    #[command(after_help = "Examples:\n  \
        bricks cluster config conf/cluster/rb4.toml n1 > n1.click\n  \
        bricks run n1.click -D MAC0=$(cat /sys/class/net/ext0/address) --control /run/bricks.sock\n  \
        bricks cluster config conf/cluster/rb4.toml n2 --backend packet")]
    Config {
        /// The cluster file (TOML).
        file: PathBuf,
        /// The node's name in the file.
        node: String,
        /// Device backend of the node's interfaces: auto, xdp or packet.
        #[arg(long, default_value = "auto")]
        backend: String,
    },
    /// Run a whole cluster on this machine (root): one network namespace
    /// per server, veth pairs as internal links, a host namespace behind
    /// every external port, `bricks run` in every server.
    ///
    /// Namespaces are `bc-NAME-NODE` (servers) and `bc-NAME-hNODEPORT`
    /// (hosts, e.g. bc-rb4-hn1ext0 behind n1's ext0, with the port's
    /// address + 1 and the port's address as default gateway). It returns
    /// once every server answers on its control socket and every internal
    /// link is up; the servers keep running until `bricks cluster down`.
    /// A dead leftover of the same name is removed first; Ctrl-C while it
    /// starts tears down what was built.
    #[command(after_help = "Examples:\n  \
        sudo bricks cluster up conf/cluster/rb4.toml\n  \
        sudo ip netns exec bc-rb4-hn1ext0 ping 10.2.0.2\n  \
        sudo bricks cluster status\n  \
        sudo bricks cluster kill rb4 n3; sudo bricks cluster restart rb4 n3\n  \
        sudo bricks cluster down")]
    Up(up::UpArgs),
    /// Rates of a running cluster, from every server's counters sampled
    /// twice: per server the packets from outside, delivered and
    /// forwarded (transit) per second and the load relative to the
    /// external rate; per internal link packets/s and up or down; the
    /// direct and balanced shares; reordering at the output servers.
    ///
    /// The load is (from outside + forwarded + delivered) / R, where R is
    /// the mean external input rate of the servers that receive any:
    /// Direct VLB keeps it between 2 (uniform traffic) and 3.
    #[command(after_help = "Examples:\n  \
        sudo bricks cluster status\n  \
        sudo bricks cluster status rb4 --interval 2 --json")]
    Status(status::StatusArgs),
    /// Stop a cluster: its servers (SIGTERM, SIGKILL after a grace), its
    /// namespaces, its state. Nothing up is not an error.
    #[command(after_help = "Examples:\n  \
        sudo bricks cluster down\n  \
        sudo bricks cluster down rb4\n  \
        sudo bricks cluster down --all")]
    Down {
        /// The cluster's name [default: the one that is up].
        name: Option<String>,
        /// Every cluster that is up.
        #[arg(long, conflicts_with = "name")]
        all: bool,
    },
    /// Stop one server's process (a failure, for experiments): SIGKILL by
    /// default. Its namespace and links stay; the others notice within
    /// the hello timeout.
    #[command(after_help = "Examples:\n  \
        sudo bricks cluster kill rb4 n3\n  \
        sudo bricks cluster kill rb4 n3 --signal term")]
    Kill {
        /// The cluster's name.
        name: String,
        /// The server.
        node: String,
        /// SIGKILL (a crash) or SIGTERM (a clean stop).
        #[arg(long, value_enum, default_value = "kill")]
        signal: up::StopSignal,
    },
    /// Start one server's process again (stopped first if it runs), with
    /// the same command line; waits until its links are up.
    #[command(after_help = "Examples:\n  \
        sudo bricks cluster restart rb4 n3")]
    Restart {
        /// The cluster's name.
        name: String,
        /// The server.
        node: String,
        /// Give up waiting for its links after this many seconds.
        #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
        timeout: f64,
    },
}

/// `bricks cluster plan` options.
#[derive(clap::Args)]
pub(crate) struct PlanArgs {
    /// External ports of the router (N).
    #[arg(long, value_name = "N", required_unless_present_any = ["figure3", "plot"])]
    ports: Option<u64>,
    /// Rate of each external port (R), bits per second: 10G, 2.5G, 100M
    /// or a plain number.
    #[arg(long, default_value = "10G", value_name = "R", value_parser = parse_rate)]
    rate: u64,
    /// Internal links a server can have (its NIC ports left for the
    /// cluster, K).
    #[arg(long, value_name = "K", required_unless_present_any = ["figure3", "plot"])]
    fanout: Option<u64>,
    /// External ports one server can process (s: it then runs at 2sR to
    /// 3sR).
    #[arg(long, default_value_t = 1, value_name = "S")]
    ports_per_server: u64,
    /// Print the table of the paper's Fig. 3: servers needed for N ports
    /// in its three server configurations.
    #[arg(long)]
    figure3: bool,
    /// Write Fig. 3 as an SVG plot to FILE.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

/// Reads a rate as the cluster file does (`10G`, `2.5Gbps`, `100 Mbit/s`),
/// or a plain number of bits per second.
pub(crate) fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let plain = !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let r = if plain {
        units::parse_rate(&format!("{t}bps"))
    } else {
        units::parse_rate(t)
    }?;
    if r == 0 {
        return Err(format!("`{s}`: the rate must be above 0"));
    }
    Ok(r)
}

/// Runs `bricks cluster ...`.
pub(crate) fn cluster(cmd: ClusterCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ClusterCommand::Plan(a) => plan(&a),
        ClusterCommand::Check { file } => check(&file),
        ClusterCommand::Config {
            file,
            node,
            backend,
        } => config(&file, &node, &backend),
        ClusterCommand::Up(a) => Ok(up::up_command(&a, crate::runner::stop_on_signals)?),
        ClusterCommand::Status(a) => Ok(status::status_command(&a)?),
        ClusterCommand::Down { name, all } => Ok(up::down_command(name.as_deref(), all)?),
        ClusterCommand::Kill { name, node, signal } => Ok(up::kill_command(&name, &node, signal)?),
        ClusterCommand::Restart {
            name,
            node,
            timeout,
        } => Ok(up::restart_command(
            &name,
            &node,
            timeout,
            crate::runner::stop_on_signals,
        )?),
    }
}

fn plan(a: &PlanArgs) -> anyhow::Result<ExitCode> {
    if let (Some(ports), Some(fanout)) = (a.ports, a.fanout) {
        let p = match bricks_cluster::plan::plan(ports, a.rate, fanout, a.ports_per_server) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(FILE_ERROR));
            }
        };
        print!(
            "{}",
            plan_text(ports, a.rate, fanout, a.ports_per_server, &p)
        );
    }
    if a.figure3 {
        if a.ports.is_some() {
            println!();
        }
        print!("{}", bricks_cluster::plan::figure3_table());
    }
    if let Some(path) = &a.plot {
        bricks_cluster::plan::figure3_svg(path)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("Fig. 3 plotted in {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// What `bricks cluster plan` prints for one sizing.
fn plan_text(
    ports: u64,
    rate: u64,
    fanout: u64,
    per_server: u64,
    p: &bricks_cluster::plan::Plan,
) -> String {
    use bricks_cluster::model::Topology;
    let topology = match p.topology {
        Topology::FullMesh => format!(
            "full mesh of {} servers ({} internal links each, fanout {fanout})",
            p.io_servers,
            p.io_servers.saturating_sub(1)
        ),
        Topology::Fly { k, n } => format!(
            "{k}-ary {n}-fly ({} servers need {} links each in a full mesh, fanout is {fanout})",
            p.io_servers,
            p.io_servers.saturating_sub(1)
        ),
        Topology::Custom => "custom".to_string(),
    };
    let total = p.io_servers + p.intermediate_servers;
    format!(
        "{ports} ports of {rate}, {per_server} port{s} per server, fanout {fanout}\n\
         topology:              {topology}\n\
         servers:               {total} ({io} I/O, {mid} intermediate)\n\
         internal link rate:    {link}\n\
         per-server processing: {min} to {max} (2sR uniform traffic .. 3sR worst case, s = {per_server})\n",
        rate = rate_text(rate),
        s = if per_server == 1 { "" } else { "s" },
        io = p.io_servers,
        mid = p.intermediate_servers,
        link = rate_text(p.internal_link_bps),
        min = rate_text(p.per_server_bps_min),
        max = rate_text(p.per_server_bps_max),
    )
}

fn check(file: &Path) -> anyhow::Result<ExitCode> {
    match Cluster::load(file) {
        Ok(c) => {
            print!("{}", c.describe());
            if !c.describe().ends_with('\n') {
                println!();
            }
            println!("ok: {}", file.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            Ok(ExitCode::from(FILE_ERROR))
        }
    }
}

fn config(file: &Path, node: &str, backend: &str) -> anyhow::Result<ExitCode> {
    let c = match load(file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(FILE_ERROR));
        }
    };
    let Some(id) = c.node_id(node) else {
        let names: Vec<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
        eprintln!(
            "error: {}: no node `{node}` (nodes: {})",
            file.display(),
            names.join(", ")
        );
        return Ok(ExitCode::from(FILE_ERROR));
    };
    anyhow::ensure!(
        ["auto", "xdp", "packet"].contains(&backend),
        "--backend {backend}: expected auto, xdp or packet"
    );
    // The node's VLBNode reads the file: an absolute path works from
    // wherever `bricks run` is started.
    let cluster_file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let options = bricks_cluster::config::ConfigOptions {
        cluster_file,
        backend: backend.to_string(),
    };
    print!("{}", bricks_cluster::config::node_config(&c, id, &options));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_si_suffixes() {
        assert_eq!(parse_rate("10G"), Ok(10_000_000_000));
        assert_eq!(parse_rate("2.5Gbps"), Ok(2_500_000_000));
        assert_eq!(parse_rate("100M"), Ok(100_000_000));
        assert_eq!(parse_rate("400000"), Ok(400_000));
        assert_eq!(parse_rate("40 Mbit/s"), Ok(40_000_000));
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("-1G").is_err());
        assert!(parse_rate("0").is_err());
    }
}
