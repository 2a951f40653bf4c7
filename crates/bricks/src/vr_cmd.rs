//! `bricks vr`: virtual routers on one box (Egi et al., CoNEXT 2008
//! §3.1-§3.2) from the command line.
//!
//! The box itself (file, checks, the configuration it runs) is
//! `bricks_vrouter`; the data plane is ordinary elements (`VRDemux`, the
//! tag elements, the schedulers) and the IP router once per virtual router.
//! This module only drives it:
//!
//! * `check`: a virtual-router file validated and described;
//! * `config`: the Click configuration it expands into, which runs with
//!   plain `bricks run`.

use anyhow::Context as _;
use bricks_vrouter::config::{config, default_output, ConfigOptions};
use bricks_vrouter::VirtualRouters;
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit status for a file that does not work (as for a configuration that
/// does not check).
const FILE_ERROR: u8 = 2;

/// `bricks vr` subcommands.
#[derive(Subcommand)]
pub(crate) enum VrCommand {
    /// Validate a virtual-router file and describe it: each link with its
    /// routers' tags and shares, each router with its route table's
    /// outputs (the numbers a routes file uses) and routes. On errors,
    /// print the line and the reason and exit with status 2.
    #[command(after_help = "Examples:\n  \
        bricks vr check conf/vr/two-tenants.toml\n  \
        bricks vr check conf/vr/ipip.toml")]
    Check {
        /// The virtual-router file (TOML).
        file: PathBuf,
    },
    /// Print the Click configuration of the box: one compound element per
    /// router (its elements named ROUTER/..., its route table ROUTER/rt),
    /// and per link its FromDevice, VRDemux, tags, a queue per router and
    /// the scheduler that shares it by weight.
    ///
    /// The configuration runs with `bricks run`; its first lines give the
    /// command, with one `--router-control ROUTER=SOCKET` per router (a
    /// control socket that reaches only that router's elements) and the
    /// `-D MAC_<link>=...` of every link whose MAC the file does not give.
    #[command(after_help = "Examples:\n  \
        bricks vr config conf/vr/two-tenants.toml -o two-tenants.click\n  \
        sudo bricks run two-tenants.click --router-control red=/run/bricks/red.sock \\\n      \
        --router-control blue=/run/bricks/blue.sock\n  \
        bricks ctl /run/bricks/red.sock write red/rt.add 192.168.0.0/16 10.1.0.254 2\n  \
        bricks vr config conf/vr/weighted.toml --backend packet > weighted.click\n  \
        bricks check weighted.click")]
    Config {
        /// The virtual-router file (TOML).
        file: PathBuf,
        /// Write the configuration to this file instead of standard
        /// output.
        #[arg(short = 'o', long, value_name = "OUT.click")]
        output: Option<PathBuf>,
        /// Device backend of the links: auto, xdp or packet.
        #[arg(long, default_value = "auto")]
        backend: String,
        /// Directory of the per-router control sockets in the printed run
        /// command.
        #[arg(long, default_value = "/run/bricks", value_name = "DIR")]
        socket_dir: String,
    },
}

/// Runs `bricks vr ...`.
pub(crate) fn vr(cmd: VrCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        VrCommand::Check { file } => check(&file),
        VrCommand::Config {
            file,
            output,
            backend,
            socket_dir,
        } => config_command(&file, output.as_deref(), &backend, &socket_dir),
    }
}

fn check(file: &Path) -> anyhow::Result<ExitCode> {
    match VirtualRouters::load(file) {
        Ok(vr) => {
            print!("{}", vr.describe());
            println!("ok: {}", file.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            Ok(ExitCode::from(FILE_ERROR))
        }
    }
}

fn config_command(
    file: &Path,
    output: Option<&Path>,
    backend: &str,
    socket_dir: &str,
) -> anyhow::Result<ExitCode> {
    let vr = match VirtualRouters::load(file) {
        Ok(vr) => vr,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return Ok(ExitCode::from(FILE_ERROR));
        }
    };
    anyhow::ensure!(
        ["auto", "xdp", "packet"].contains(&backend),
        "--backend {backend}: expected auto, xdp or packet"
    );
    let options = ConfigOptions {
        source: file.display().to_string(),
        output: output
            .map(|o| o.display().to_string())
            .unwrap_or_else(|| default_output(file)),
        backend: backend.to_string(),
        socket_dir: socket_dir.to_string(),
    };
    let text = config(&vr, &options);
    match output {
        None => print!("{text}"),
        Some(path) => {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "{}: {} router{}, {} link{}; run it with the command at its top",
                path.display(),
                vr.routers.len(),
                if vr.routers.len() == 1 { "" } else { "s" },
                vr.links.len(),
                if vr.links.len() == 1 { "" } else { "s" }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
