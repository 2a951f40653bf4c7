//! Multistage software routers (Bianco et al., "Scalable Layer-2/Layer-3
//! Multistage Switching Architectures for Software Routers", §III):
//! several PCs that the outside sees as one router. A front stage of
//! layer-2 load balancers takes frames on the router's external ports and
//! spreads them, by rewriting only the destination MAC, over a back stage
//! of layer-3 routers; one Ethernet switch joins the two stages.
//!
//! This crate holds what every box and every tool agrees on:
//!
//! * [`model`]: the multistage router as data (balancers with their front
//!   and back ports, routers, the switch, the routes every router shares,
//!   the balancing policy and liveness timing), read from a TOML file and
//!   validated (`file`), and the internal MACs ([`model::router_mac`],
//!   [`model::back_mac`]);
//! * [`config`]: the Click configuration each box runs;
//! * [`Multistage::describe`]: the whole router in words.
//!
//! The data plane is the `L2Balancer` and `ProbeResponder` elements, and
//! on each router the IPv4 router of conf/ip-router.click behind a
//! `VRDemux` that tells its interfaces apart by destination MAC.

#![forbid(unsafe_code)]

pub mod config;
mod describe;
mod file;
pub mod model;
pub mod units;

pub use file::{MAX_BALANCERS, MAX_BOX_NAME, MAX_FRONT_PORTS, MAX_NAME, MAX_ROUTERS};
pub use model::{
    BackPort, Balancer, FrontPort, Lookup, Mode, Multistage, MultistageError, Node, Policy, Route,
    Router,
};
