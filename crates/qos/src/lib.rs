//! QoS building blocks after Hardekopf, Riché, Mudigonda, Dahlin, Vin and
//! Kaur, "Impact of Network Protocols on Programmable Router
//! Architectures" (§2-§6): the data structures behind bricks' QoS
//! elements (flow classification, route selection, packet ordering), with
//! no element of their own (those live in `bricks-elements`' `qos`
//! module).

#![forbid(unsafe_code)]

pub mod arch;
pub mod deadline;
pub mod file;
pub mod flow;
pub mod memref;
pub mod model;
pub mod order;
pub mod sroute;
