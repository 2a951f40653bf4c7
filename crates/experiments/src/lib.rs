//! The benchmarks of bricks. Papers' experiments rerun on bricks each
//! build their workloads from Click text, measure them on this machine,
//! put the paper's value or shape beside bricks', give a verdict with its
//! reason, and draw a plot; the measurements of bricks itself (`core`,
//! `lpm`, `io`, `ipsec`) print tables against the project's goals.
//!
//! The `bricks` binary only parses the command line and calls in here
//! (`bricks bench vr` is [`vr::bench`]), so that the measurements can be
//! tested and reused without the CLI.
//!
//! - [`cluster`]: RouteBricks clusters in network namespaces (what
//!   `bricks cluster up`, `status`, `down`, `kill` and `restart` run) and
//!   RB4 measured on one: RouteBricks §6.2 (`bricks bench cluster`).
//! - [`netup`]: what bringing up namespaces and processes shares between
//!   `bricks cluster up` and `bricks multistage up`: their records, the
//!   processes recorded with their start times, tearing down.
//! - [`core`]: the element graph in memory on one core: time and
//!   instructions per packet of minimal forwarding, IPv4 and IPv6 routing,
//!   Click's IP router and a packet crossing a three-server cluster
//!   (`bricks bench core`).
//! - [`io`]: forwarding between veths in network namespaces: bricks
//!   against Linux and XDP_REDIRECT, RouteBricks' batching and spreading
//!   choices, loss-free rates and latency (`bricks bench io`).
//! - [`ipsec`]: ESP tunnel mode: encapsulation and decapsulation in
//!   memory by suite and size, one SA's sequence counter shared by two
//!   workers, and conf/ipsec-gw.click between veths against Linux's XFRM
//!   (`bricks bench ipsec`).
//! - [`lpm`]: route lookup at Internet scale: every algorithm's lookups
//!   per second on generated tables, memory, build time, updates while
//!   lookups run, and the IPv4 forwarding path with a 1M-prefix table
//!   (`bricks bench lpm`).
//! - [`measure`]: configurations to plans, one worker or several, timing
//!   with medians and spreads, instructions per packet with callgrind.
//! - [`frames`]: the test frames, built with `bricks_wire`'s `Repr`s.
//! - [`report`]: result rows, verdicts and the tables they print as.
//! - [`plan`]: RouteBricks Fig. 3, servers against ports from the cluster
//!   planner.
//! - [`plot`]: line charts as SVG.
//! - [`multistage`]: Bianco et al., "Scalable Layer-2/Layer-3 Multistage
//!   Switching Architectures for Software Routers" (HPSR 2007), §II-C and
//!   §IV (`bricks bench multistage`).
//! - [`qos`]: Hardekopf et al., "Impact of Network Protocols on
//!   Programmable Router Architectures", §3-§6 (`bricks bench qos`).
//! - [`reproduce`]: all of the above by the papers' figures and tables,
//!   each run in a child process, and one report (HTML and Markdown) with
//!   the papers' values beside bricks' (`bricks reproduce`).
//! - [`routebricks`]: Dobrescu et al., "RouteBricks: Exploiting
//!   Parallelism to Scale Software Routers" (SOSP 2009), §5: Table 3's
//!   instructions per packet, §5.3's small against large packets and
//!   Fig. 8's rates for minimal forwarding, IP routing and IPsec, on one
//!   worker in memory.
//! - [`routes`]: routes from a Linux table over rtnetlink into DIR-24-8:
//!   the kernel's insert time, the follow rate and lag, a full-table load
//!   against forwarding (`bricks bench routes`).
//! - [`vr`]: Egi et al., "Towards High Performance Virtual Routers on
//!   Commodity Hardware" (CoNEXT 2008), §2.4-§3.2.

#![forbid(unsafe_code)]

pub mod cluster;
pub mod core;
pub mod error;
pub mod frames;
pub mod io;
pub mod ipsec;
pub mod lpm;
pub mod measure;
pub mod multistage;
pub mod netup;
pub mod plan;
pub mod plot;
pub mod qos;
pub mod report;
pub mod reproduce;
pub mod routebricks;
pub mod routes;
pub mod vr;

pub use error::{Context, Error};

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Installs the process's handlers for SIGINT, SIGTERM and SIGHUP and
/// returns the flag they set. The benches that build networks and start
/// processes call it once they have something to clean up, and poll the
/// flag; the binary owns the process's signals, so it passes this in.
pub type StopOnSignals = fn() -> std::io::Result<Arc<AtomicBool>>;
