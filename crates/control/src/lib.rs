//! Routes from the control plane: bricks' route tables fed live by the
//! routing daemons a production router runs.
//!
//! Two sources, one decoder ([`netlink`]) and one follower ([`follow`]):
//!
//! - [`kernel`]: a Linux routing table followed over rtnetlink. BIRD's
//!   kernel protocol, FRR's zebra and `ip route` write there; bricks dumps
//!   the table at start and applies every change after.
//! - [`fpm`]: zebra's Forwarding Plane Manager stream (`dplane_fpm_nl`):
//!   the same netlink route messages over TCP, for a FIB that never goes
//!   through the kernel.
//!
//! A source is named in a configuration by a [`SourceSpec`]:
//! `netlink:table=100`, `netlink:table=main,proto=bird`, `fpm`,
//! `fpm:127.0.0.1:2620`. The follower maps each route's outgoing interface
//! to the lookup element's output of that interface by name and its
//! gateway to the destination annotation, and hands whole routes and
//! withdrawals to a [`RouteSink`]: the element's shared table.

pub mod follow;
pub mod fpm;
pub mod kernel;
pub mod netlink;
pub mod stats;

pub use follow::{Change, Filter, Follower, Limits, RouteSink};
pub use stats::{Kind, SourceStats};

use std::net::SocketAddr;

/// Where routes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSpec {
    /// A kernel routing table (`netlink:table=100,proto=bird`).
    Netlink {
        /// The table id (`main` is 254).
        table: u32,
        /// Only routes of this protocol.
        protocol: Option<u8>,
    },
    /// An FPM listener (`fpm` or `fpm:ADDR:PORT`).
    Fpm {
        /// Where to listen.
        addr: SocketAddr,
    },
}

impl std::fmt::Display for SourceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceSpec::Netlink { table, protocol } => {
                write!(f, "netlink:table={table}")?;
                if let Some(p) = protocol {
                    write!(f, ",proto={p}")?;
                }
                Ok(())
            }
            SourceSpec::Fpm { addr } => write!(f, "fpm:{addr}"),
        }
    }
}

/// Routing table names of `/etc/iproute2/rt_tables`.
const TABLES: &[(&str, u32)] = &[("main", 254), ("local", 255), ("default", 253)];

/// Route protocol names of `/etc/iproute2/rt_protos` (and FRR's).
const PROTOCOLS: &[(&str, u8)] = &[
    ("redirect", 1),
    ("kernel", 2),
    ("boot", 3),
    ("static", 4),
    ("zebra", 11),
    ("bird", 12),
    ("dhcp", 16),
    ("babel", 42),
    ("bgp", 186),
    ("isis", 187),
    ("ospf", 188),
    ("rip", 189),
    ("eigrp", 192),
];

impl SourceSpec {
    /// Whether `text` names a live source rather than a file.
    pub fn is_source(text: &str) -> bool {
        let t = text.trim();
        t.starts_with("netlink:") || t == "netlink" || t == "fpm" || t.starts_with("fpm:")
    }

    /// Parses `netlink[:table=T][,proto=P]` or `fpm[:[ADDR:]PORT]`.
    pub fn parse(text: &str) -> Result<SourceSpec, String> {
        let t = text.trim();
        if let Some(rest) = t.strip_prefix("netlink").map(|r| r.trim_start_matches(':')) {
            let mut table = 254;
            let mut protocol = None;
            for kv in rest.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| format!("`{kv}`: expected table=ID or proto=NAME"))?;
                match k.trim() {
                    "table" => {
                        let v = v.trim();
                        table = match TABLES.iter().find(|(n, _)| *n == v) {
                            Some((_, id)) => *id,
                            None => v.parse().map_err(|_| {
                                format!("table `{v}`: a number or main, local, default")
                            })?,
                        };
                    }
                    "proto" | "protocol" => {
                        let v = v.trim();
                        protocol = Some(match PROTOCOLS.iter().find(|(n, _)| *n == v) {
                            Some((_, id)) => *id,
                            None => v.parse().map_err(|_| {
                                let names: Vec<&str> = PROTOCOLS.iter().map(|(n, _)| *n).collect();
                                format!("protocol `{v}`: a number or one of {}", names.join(", "))
                            })?,
                        });
                    }
                    other => {
                        return Err(format!("unknown netlink option `{other}` (table, proto)"))
                    }
                }
            }
            return Ok(SourceSpec::Netlink { table, protocol });
        }
        if let Some(rest) = t.strip_prefix("fpm") {
            let rest = rest.strip_prefix(':').unwrap_or(rest);
            let addr = if rest.is_empty() {
                SocketAddr::from(([127, 0, 0, 1], fpm::DEFAULT_PORT))
            } else if let Ok(port) = rest.parse::<u16>() {
                SocketAddr::from(([127, 0, 0, 1], port))
            } else {
                rest.parse()
                    .map_err(|_| format!("`{rest}`: expected PORT or ADDR:PORT"))?
            };
            return Ok(SourceSpec::Fpm { addr });
        }
        Err(format!(
            "`{t}` is no route source (netlink:table=ID[,proto=NAME] or fpm[:ADDR:PORT])"
        ))
    }
}

/// A running source; dropping it stops it.
pub enum Running {
    /// A followed kernel table.
    Kernel(kernel::Following),
    /// A subscription to an FPM listener.
    Fpm(fpm::Subscription),
}

impl Running {
    /// Waits until a kernel table's first dump is applied (at most
    /// `timeout`); an FPM source is ready at once (its peer comes when it
    /// comes).
    pub fn wait_ready(&self, timeout: std::time::Duration) -> bool {
        match self {
            Running::Kernel(k) => k.wait_synced(timeout),
            Running::Fpm(_) => true,
        }
    }
}

/// A follower of `spec`'s routes for `sink`: the families asked for, the
/// table and protocol the spec names, interfaces mapped by `devices`
/// (`None`: everything to output 0).
pub fn follower<S: RouteSink>(
    spec: &SourceSpec,
    v4: bool,
    v6: bool,
    devices: Option<Vec<String>>,
    sink: S,
    stats: std::sync::Arc<SourceStats>,
) -> Follower<S> {
    let (table, protocol) = match spec {
        SourceSpec::Netlink { table, protocol } => (Some(*table), *protocol),
        SourceSpec::Fpm { .. } => (None, None),
    };
    let filter = Filter {
        table,
        protocol,
        v4,
        v6,
        devices,
    };
    let f = Follower::new(filter, sink, stats);
    match spec {
        SourceSpec::Netlink { .. } => f,
        SourceSpec::Fpm { .. } => f.whole_routes(),
    }
}

/// Starts `follower` on `spec`'s source: the kernel table's dump and
/// changes, or a subscription to the FPM listener. `label` names the
/// source's thread and errors.
pub fn run<S: RouteSink>(
    spec: &SourceSpec,
    mut follower: Follower<S>,
    label: &str,
) -> std::io::Result<Running> {
    match spec {
        SourceSpec::Netlink { .. } => Ok(Running::Kernel(kernel::follow(follower, label)?)),
        SourceSpec::Fpm { addr } => {
            // zebra names interfaces by the kernel's index: learn the names
            // now and again when an unknown index comes.
            follower.feed(&kernel::links()?);
            follower.refresh_links_with(|| kernel::links().unwrap_or_default());
            Ok(Running::Fpm(fpm::subscribe(*addr, Box::new(follower))?))
        }
    }
}

/// [`follower`] and [`run`] at once.
pub fn start<S: RouteSink>(
    spec: &SourceSpec,
    v4: bool,
    v6: bool,
    devices: Option<Vec<String>>,
    sink: S,
    stats: std::sync::Arc<SourceStats>,
    label: &str,
) -> std::io::Result<Running> {
    run(spec, follower(spec, v4, v6, devices, sink, stats), label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_as_documented() {
        assert_eq!(
            SourceSpec::parse("netlink:table=100").unwrap(),
            SourceSpec::Netlink {
                table: 100,
                protocol: None
            }
        );
        assert_eq!(
            SourceSpec::parse("netlink:table=main,proto=bird").unwrap(),
            SourceSpec::Netlink {
                table: 254,
                protocol: Some(12)
            }
        );
        assert_eq!(
            SourceSpec::parse("netlink").unwrap(),
            SourceSpec::Netlink {
                table: 254,
                protocol: None
            }
        );
        assert_eq!(
            SourceSpec::parse("fpm").unwrap(),
            SourceSpec::Fpm {
                addr: "127.0.0.1:2620".parse().unwrap()
            }
        );
        assert_eq!(
            SourceSpec::parse("fpm:[::1]:2621").unwrap(),
            SourceSpec::Fpm {
                addr: "[::1]:2621".parse().unwrap()
            }
        );
        assert!(SourceSpec::parse("netlink:tabel=1")
            .unwrap_err()
            .contains("unknown netlink option"));
        assert!(SourceSpec::parse("netlink:proto=carrier-pigeon")
            .unwrap_err()
            .contains("bird"));
        assert!(SourceSpec::is_source("fpm:2620"));
        assert!(!SourceSpec::is_source("routes.txt"));
        let s = SourceSpec::parse("netlink:table=100,proto=186").unwrap();
        assert_eq!(SourceSpec::parse(&s.to_string()).unwrap(), s);
    }
}
