//! Click's small elements: the ones Click's own tests and example
//! configurations use for plumbing, printing and header tweaks. Each
//! follows its Click namesake (`elements/*/*.cc` of kohler/click): the same
//! arguments, ports, handlers and output formats.

pub mod arp_print;
pub mod mark_ip_ce;
pub mod pad;
pub mod pull_switch;
pub mod resize;
pub mod set_ip_dscp;
pub mod store_ip_address;
pub mod truncate;

use bricks_element::ElementClass;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &truncate::CLASS,
    &arp_print::CLASS,
    &pull_switch::PULL_SWITCH,
    &pull_switch::SIMPLE_PULL_SWITCH,
    &store_ip_address::CLASS,
    &set_ip_dscp::CLASS,
    &mark_ip_ce::CLASS,
    &pad::CLASS,
    &resize::CLASS,
];
