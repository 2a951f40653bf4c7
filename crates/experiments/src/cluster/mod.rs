//! RouteBricks clusters run on this machine, and RB4 measured on them
//! (SOSP 2009 §6).
//!
//! The cluster itself (file, topologies, sizing, per-node configurations)
//! is `bricks_cluster`; the data plane is the `VLBNode` element. Here:
//!
//! - [`up`]: a whole cluster in network namespaces (`bricks cluster up`,
//!   `down`, `kill`, `restart`): one namespace per server, veth pairs as
//!   the internal links, one host namespace per external port, one
//!   `bricks run` per server.
//! - [`state`]: its record in `/run/bricks-cluster/NAME/state.json`.
//! - [`status`]: every server's `VLBNode` counters over its control
//!   socket, and the rates and loads they give (`bricks cluster status`).
//! - [`paper`]: the paper's §6.2 values and latency arithmetic beside
//!   the bench's figures, as the report's rows.
//! - [`bench`]: RouteBricks §6.2 on such a cluster: load against the
//!   external rate, reordering with and without flowlets, failover, the
//!   cluster's rate against one server's, one-way latency, and the
//!   paper's latency estimate redone (`bricks bench cluster`, and the
//!   `routebricks:cluster` unit of `bricks reproduce`).
//!
//! The `bricks` binary parses the command lines and calls in here.

pub mod bench;
pub mod paper;
pub mod state;
pub mod status;
pub mod up;

use bricks_cluster::{units, Cluster};
use std::path::Path;

/// Exit status for a cluster file that does not work (as for a
/// configuration that does not check).
pub const FILE_ERROR: u8 = 2;

/// Loads a cluster file; the error is printed as `bricks cluster check`
/// prints it.
pub fn load(file: &Path) -> Result<Cluster, String> {
    Cluster::load(file).map_err(|e| format!("{}: {e}", file.display()))
}

/// `10 Gbps`, `2.5 Gbps`, `400 Mbps`.
pub fn rate_text(bps: u64) -> String {
    units::format_rate(bps)
}

/// `1.23M`, `456k`, `789`.
pub(crate) fn si(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_print_short() {
        assert_eq!(rate_text(10_000_000_000), "10 Gbps");
        assert_eq!(rate_text(2_500_000_000), "2.5 Gbps");
        assert_eq!(rate_text(400_000_000), "400 Mbps");
        assert_eq!(si(1_234_567.0), "1.23M");
        assert_eq!(si(45_600.0), "45.6k");
        assert_eq!(si(789.0), "789");
    }
}
