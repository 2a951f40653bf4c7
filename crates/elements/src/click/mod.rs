//! Click's small elements: the ones Click's own tests and example
//! configurations use for plumbing, printing and header tweaks. Each
//! follows its Click namesake (`elements/*/*.cc` of kohler/click): the same
//! arguments, ports, handlers and output formats.

pub mod adjust_timestamp;
pub mod aliases;
pub mod arp_print;
pub mod check_ip_header2;
pub mod crc32;
pub mod delay_unqueue;
pub mod ensure_ether;
pub mod ether_mirror;
pub mod icmp_ip_encap;
pub mod input_switch;
pub mod link_unqueue;
pub mod mark_ip_ce;
pub mod message;
pub mod mixed_queue;
pub mod pad;
pub mod pull_switch;
pub mod random_sample;
pub mod random_seed;
pub mod resize;
pub mod set_ip_dscp;
pub mod set_vlan_anno;
pub mod shaper;
pub mod store_data;
pub mod store_ip_address;
pub mod time_filter;
pub mod time_sorted_sched;
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
    &delay_unqueue::DELAY_UNQUEUE,
    &delay_unqueue::DELAY_SHAPER,
    &shaper::CLASS,
    &aliases::NOTIFIER_QUEUE,
    &aliases::FULL_NOTE_QUEUE,
    &mixed_queue::CLASS,
    &aliases::LINEAR_IP_LOOKUP,
    &aliases::UNQUEUE2,
    &icmp_ip_encap::ICMP_PING_ENCAP,
    &icmp_ip_encap::ICMP_IP_ENCAP,
    &time_sorted_sched::CLASS,
    &store_data::CLASS,
    &crc32::SET_CRC32,
    &crc32::CHECK_CRC32,
    &ensure_ether::CLASS,
    &link_unqueue::CLASS,
    &check_ip_header2::CLASS,
];
