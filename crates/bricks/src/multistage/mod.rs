//! `bricks multistage`: multistage routers (Bianco et al., §III: L2
//! load balancers in front of L3 routers over an Ethernet switch) from the
//! command line.
//!
//! The router itself (file, checks, each box's configuration) is
//! `bricks_multistage`; the data plane is the `L2Balancer` and
//! `ProbeResponder` elements and the IPv4 router of conf/ip-router.click.
//! This module only drives them:
//!
//! * `check`: a multistage file validated and described;
//! * `config`: the Click configuration one of its boxes runs;
//! * `up`, `status`, `down`, `kill`, `restart` ([`up`], [`status`]): a
//!   whole multistage router on this machine, one network namespace per
//!   box, a Linux bridge as the switch, one host namespace per front port,
//!   one `bricks run` per box; its state in
//!   `/run/bricks-multistage/NAME/state.json` ([`state`]).
//!
//! Each subcommand is one variant of [`MultistageCommand`] and one arm of
//! [`multistage`]; commands that run a whole router on this machine live
//! in modules of their own next to this one.

pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod up;

use anyhow::Context as _;
use bricks_multistage::config::{node_config, ConfigOptions};
use bricks_multistage::Multistage;
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit status for a multistage file that does not work (as for a
/// configuration that does not check).
pub(crate) const FILE_ERROR: u8 = 2;

/// `bricks multistage` subcommands.
#[derive(Subcommand)]
pub(crate) enum MultistageCommand {
    /// Validate a multistage file and describe it: the balancers and
    /// routers, every front port with its address G_k and MAC F_k, the
    /// internal MACs (each router's per front port, each balancer's back
    /// ports), the policy, probe timing and routes. On errors, print the
    /// line and the reason and exit with status 2.
    #[command(after_help = "Examples:\n  \
        bricks multistage check conf/multistage/2x2.toml\n  \
        bricks multistage check conf/multistage/dtx3.toml")]
    Check {
        /// The multistage file (TOML).
        file: PathBuf,
    },
    /// Print the Click configuration one box (a balancer or a router)
    /// runs.
    ///
    /// Its first lines give the command that runs it, with its control
    /// socket and a `-D MACk=...` for every front port whose MAC the file
    /// does not give: front port k's MAC (F_k) must be the same on every
    /// box, since the routers send from it. On real machines: cable every
    /// balancer's back ports and every router's back NIC to one Ethernet
    /// switch, run each balancer's and each router's configuration on it,
    /// and give the hosts behind front port k its address G_k as their
    /// gateway.
    #[command(after_help = "Examples:\n  \
        bricks multistage config conf/multistage/2x2.toml lb1 -o lb1.click\n  \
        sudo bricks run lb1.click --control /run/bricks-multistage/2x2/lb1.sock \\\n      \
        -D MAC0=$(cat /sys/class/net/ext0/address) -D MAC1=$(cat /sys/class/net/ext1/address)\n  \
        bricks multistage config conf/multistage/2x2.toml r1 --backend packet > r1.click\n  \
        bricks ctl /run/bricks-multistage/2x2/lb1.sock read lb.live")]
    Config {
        /// The multistage file (TOML).
        file: PathBuf,
        /// The box: a balancer's or a router's name in the file.
        node: String,
        /// Write the configuration to this file instead of standard
        /// output.
        #[arg(short = 'o', long, value_name = "OUT.click")]
        output: Option<PathBuf>,
        /// Device backend of the box's interfaces: auto, xdp or packet.
        #[arg(long, default_value = "auto")]
        backend: String,
        /// The control socket in the printed run command [default:
        /// /run/bricks-multistage/NAME/NODE.sock].
        #[arg(long, value_name = "PATH")]
        control: Option<String>,
    },
    /// Run a whole multistage router on this machine (root): a network
    /// namespace per balancer and per router, the switch as a Linux
    /// bridge in a namespace of its own with a veth to every back port,
    /// a host namespace behind every front port, `bricks run` in every
    /// box.
    ///
    /// Namespaces are `bm-NAME-BOX`, `bm-NAME-SWITCH` and
    /// `bm-NAME-hBOXIFACE` (the host behind a front port, e.g.
    /// bm-2x2-hlb1ext0, with the port's address + 1 and the port's address
    /// as its gateway). It returns once every box answers on its control
    /// socket and every balancer sees every router; the boxes keep
    /// running until `bricks multistage down`. A dead leftover of the same
    /// name is removed first; Ctrl-C while it starts tears down what was
    /// built.
    #[command(after_help = "Examples:\n  \
        sudo bricks multistage up conf/multistage/2x2.toml\n  \
        sudo ip netns exec bm-2x2-hlb1ext0 ping 10.2.0.2\n  \
        sudo bricks multistage status\n  \
        sudo bricks multistage kill 2x2 r2; sudo bricks multistage restart 2x2 r2\n  \
        sudo bricks multistage down")]
    Up(up::UpArgs),
    /// Rates of a running multistage router, sampled twice: per box and
    /// per port packets/s (from the kernel's end of every veth), each
    /// balancer's shares per router and per back port, what it returned
    /// and refused, and how many routers it sees live.
    #[command(after_help = "Examples:\n  \
        sudo bricks multistage status\n  \
        sudo bricks multistage status 2x2 --interval 2 --json")]
    Status(status::StatusArgs),
    /// Stop a multistage router: its boxes (SIGTERM, SIGKILL after a
    /// grace), its namespaces (the bridge and veths with them), its state.
    /// Nothing up is not an error.
    #[command(after_help = "Examples:\n  \
        sudo bricks multistage down\n  \
        sudo bricks multistage down 2x2\n  \
        sudo bricks multistage down --all")]
    Down {
        /// The multistage router's name [default: the one that is up].
        name: Option<String>,
        /// Every multistage router that is up.
        #[arg(long, conflicts_with = "name")]
        all: bool,
    },
    /// Stop one box's process (a failure, for experiments): SIGKILL by
    /// default. Its namespace and links stay; a router leaves the
    /// balancing set once the balancers miss its replies; a balancer's
    /// front ports go with it.
    #[command(after_help = "Examples:\n  \
        sudo bricks multistage kill 2x2 r2\n  \
        sudo bricks multistage kill 2x2 lb1 --signal term")]
    Kill {
        /// The multistage router's name.
        name: String,
        /// The box.
        node: String,
        /// SIGKILL (a crash) or SIGTERM (a clean stop).
        #[arg(long, value_enum, default_value = "kill")]
        signal: bricks_experiments::cluster::up::StopSignal,
    },
    /// Start one box's process again (stopped first if it runs), with the
    /// same command line; waits until the balancers see every running
    /// router.
    #[command(after_help = "Examples:\n  \
        sudo bricks multistage restart 2x2 r2")]
    Restart {
        /// The multistage router's name.
        name: String,
        /// The box.
        node: String,
        /// Give up waiting after this many seconds.
        #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
        timeout: f64,
    },
}

/// Runs `bricks multistage ...`.
pub(crate) fn multistage(cmd: MultistageCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        MultistageCommand::Check { file } => check(&file),
        MultistageCommand::Config {
            file,
            node,
            output,
            backend,
            control,
        } => config(&file, &node, output.as_deref(), &backend, control),
        MultistageCommand::Up(a) => up::up_command(&a),
        MultistageCommand::Status(a) => status::status_command(&a),
        MultistageCommand::Down { name, all } => up::down_command(name.as_deref(), all),
        MultistageCommand::Kill { name, node, signal } => up::kill_command(&name, &node, signal),
        MultistageCommand::Restart {
            name,
            node,
            timeout,
        } => up::restart_command(&name, &node, timeout),
    }
}

/// Loads a multistage file; the error is printed as `check` prints it.
pub(crate) fn load(file: &Path) -> Result<Multistage, String> {
    Multistage::load(file).map_err(|e| format!("{}: {e}", file.display()))
}

fn check(file: &Path) -> anyhow::Result<ExitCode> {
    match load(file) {
        Ok(ms) => {
            print!("{}", ms.describe());
            println!("ok: {}", file.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Ok(ExitCode::from(FILE_ERROR))
        }
    }
}

fn config(
    file: &Path,
    node: &str,
    output: Option<&Path>,
    backend: &str,
    control: Option<String>,
) -> anyhow::Result<ExitCode> {
    let ms = match load(file) {
        Ok(ms) => ms,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(FILE_ERROR));
        }
    };
    let Some(id) = ms.node(node) else {
        eprintln!(
            "error: {}: no box `{node}` (balancers and routers: {})",
            file.display(),
            ms.node_names().join(", ")
        );
        return Ok(ExitCode::from(FILE_ERROR));
    };
    anyhow::ensure!(
        ["auto", "xdp", "packet"].contains(&backend),
        "--backend {backend}: expected auto, xdp or packet"
    );
    let mut options = ConfigOptions::new(&ms, id, &file.display().to_string());
    options.backend = backend.to_string();
    if let Some(path) = output {
        options.output = path.display().to_string();
    }
    if let Some(c) = control {
        options.control = c;
    }
    let text = node_config(&ms, id, &options);
    match output {
        None => print!("{text}"),
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "{}: {node} of multistage router {}; run it with the command at its top",
                path.display(),
                ms.name
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
