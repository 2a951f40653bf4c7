//! RouteBricks clusters (SOSP 2009 §3, §6): several servers that together
//! are one router. Each server ("node") is a line card for its external
//! ports and a switch for the others; packets cross the cluster with Direct
//! Valiant Load Balancing over internal links.
//!
//! This crate holds what every node and every tool agrees on:
//!
//! * [`model`]: the cluster as data (nodes, external ports, internal links,
//!   the routing table all nodes share, timing knobs), read from a TOML
//!   cluster file and validated (`file`);
//! * [`label`]: how a packet inside the cluster says where it goes: the
//!   output node, output port and intermediate node in the destination MAC
//!   (so a NIC could steer by MAC), and a 12-byte shim after the Ethernet
//!   header with what the output node needs without parsing IP (next hop,
//!   flow tag and sequence number for the reorder metric);
//! * [`topology`]: full mesh and k-ary n-fly construction, next hops;
//! * [`plan`]: the paper's sizing method (Fig. 3);
//! * [`config`]: the Click configuration each node runs.

pub mod config;
mod describe;
mod file;
pub mod label;
pub mod model;
pub mod plan;
pub mod topology;
pub mod units;

pub use model::{Cluster, ClusterError, Link, Node, NodeId, Port, Role, Route};
