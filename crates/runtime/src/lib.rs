//! The runtime: turns a parsed Click configuration into a checked
//! [`Plan`], instantiates it as a [`Graph`] per worker, and runs it.
//!
//! The layers below know nothing of scheduling: `config` parses the
//! language, `element` defines what an element is. Here the graph is checked
//! (classes exist, port counts fit, push meets push and pull meets pull,
//! every port is connected, no push or pull cycle), arguments are read, and
//! the engine runs tasks to completion on one worker thread (RouteBricks
//! §4.2: a packet is handled start to finish by the core that received it).
//!
//! [`Graph`]: bricks_element::Graph

#![forbid(unsafe_code)]

pub mod addresses;
mod build;
mod click_classes;
mod crossing;
mod engine;
pub mod host_devices;
pub mod hotswap;
mod placement;
mod termination;
pub mod testing;
mod workers;

pub use bricks_element::Registry;
pub use build::{
    build, build_hotswap, build_with, configure_message, split_configure_message, BuildOptions,
    Plan, PlanElement, RouterTexts,
};
pub use click_classes::{is_click_class, CLICK_CLASSES};
pub use engine::{
    ElementStats, Engine, ExitRead, HandlerCall, HandlerReply, Polls, RunSummary, StopHandle,
    StopReason,
};
pub use placement::{Placement, DEFAULT_TICKETS, MAX_TICKETS};
pub use termination::Termination;
pub use workers::{sum_stats, Control, WorkerOptions, Workers, WorkersSummary};
