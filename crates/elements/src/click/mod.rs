//! Click's small elements: the ones Click's own tests and example
//! configurations use for plumbing, printing and header tweaks. Each
//! follows its Click namesake (`elements/*/*.cc` of kohler/click): the same
//! arguments, ports, handlers and output formats.

pub mod adjust_timestamp;
pub mod arp_print;
pub mod ether_mirror;
pub mod input_switch;
pub mod mark_ip_ce;
pub mod message;
pub mod pad;
pub mod pull_switch;
pub mod random_sample;
pub mod random_seed;
pub mod resize;
pub mod set_ip_dscp;
pub mod set_vlan_anno;
pub mod store_ip_address;
pub mod time_filter;
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
    &random_sample::CLASS,
    &time_filter::CLASS,
    &message::CLASS,
    &adjust_timestamp::CLASS,
    &input_switch::CLASS,
    &set_vlan_anno::CLASS,
    &random_seed::CLASS,
    &ether_mirror::CLASS,
];
