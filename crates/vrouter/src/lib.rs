//! Virtual routers sharing one box and its interfaces (Egi et al., "Towards
//! High Performance Virtual Routers on Commodity Hardware", CoNEXT 2008,
//! §3.1-§3.2): several independent IPv4 routers, each with its own
//! addresses and route table, in one forwarding plane, told apart on each
//! shared link by a tag (VLAN ID, MAC, MPLS label or IP-in-IP tunnel
//! address) and sharing the CPU and the links by weight.
//!
//! * [`model`]: the box as data (links, routers, interfaces, routes), read
//!   from a TOML file and validated (`file`);
//! * [`config`]: the Click configuration it runs;
//! * [`VirtualRouters::describe`]: the box in words.
//!
//! The data plane is ordinary bricks elements (`VRDemux`, the tag
//! elements, `StrideSched`/`DRRSched`, `ScheduleInfo`) and the IP router
//! of conf/ip-router.click once per virtual router.

#![forbid(unsafe_code)]

pub mod config;
mod describe;
mod file;
pub mod model;
pub mod net;

pub use file::{link_element_name, MAX_LINKS, MAX_ROUTERS, MAX_WEIGHT};
pub use model::{
    Broadcast, Demux, Interface, Link, Local, Lookup, Queueing, Route, Router, Scheduler, Tag,
    VirtualRouters, VrError,
};
