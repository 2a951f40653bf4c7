//! Sources, sinks, queues, schedulers and plumbing.

pub mod address_info;
pub mod align;
pub mod average_counter;
pub mod block;
pub mod block_thread;
pub mod burster;
pub mod bw_rated_unqueue;
pub mod check_packet;
pub mod clicky_info;
pub mod clipboard;
pub mod counter;
pub mod cpu_queue;
pub mod cpu_switch;
pub mod discard;
pub mod drr_sched;
pub mod fast_tcp_flows;
pub mod fast_udp;
pub mod front_drop_queue;
pub mod handler_call;
pub mod hash_switch;
pub mod hub;
pub mod idle;
pub mod mark_mac_header;
pub mod meter;
pub mod ms_queue;
pub mod null;
pub mod paint;
pub mod port_info;
pub mod print;
pub mod pull_tee;
pub mod queue;
pub mod random_bit_errors;
pub mod random_source;
pub mod rated_splitter;
pub mod rated_unqueue;
pub mod red;
pub mod round_robin_switch;
pub mod round_robin_unqueue;
pub mod sched;
pub mod schedule_info;
pub mod script;
pub mod set_anno_byte;
pub mod set_packet_type;
pub mod set_timestamp;
pub mod settings;
pub mod simple_sched;
pub mod source;
pub mod spinlock_info;
pub mod static_pull_switch;
pub mod static_thread_sched;
pub mod stride_sched;
pub mod strip;
pub mod strip_to_network_header;
pub mod suppressor;
pub mod switch;
pub mod tee;
#[cfg(test)]
pub(crate) mod testrun;
pub mod thread_safe_queue;
pub mod timed_source;
pub mod timed_unqueue;
pub(crate) mod token_bucket;
pub mod unqueue;
pub mod work_package;
pub mod workload;

use bricks_element::ElementClass;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &counter::CLASS,
    &discard::CLASS,
    &idle::CLASS,
    &paint::PAINT,
    &paint::PAINT_TEE,
    &paint::CHECK_PAINT,
    &paint::PAINT_SWITCH,
    &print::CLASS,
    &queue::QUEUE,
    &queue::SIMPLE_QUEUE,
    &sched::ROUND_ROBIN,
    &sched::PRIO,
    &source::INFINITE_SOURCE,
    &source::RATED_SOURCE,
    &settings::CLASS,
    &strip::STRIP,
    &strip::UNSTRIP,
    &strip_to_network_header::CLASS,
    &tee::CLASS,
    &unqueue::CLASS,
    &workload::CLASS,
    &schedule_info::CLASS,
    &script::SCRIPT,
    &script::DRIVER_MANAGER,
    &static_thread_sched::CLASS,
    &thread_safe_queue::CLASS,
    &stride_sched::CLASS,
    &drr_sched::CLASS,
    &rated_unqueue::CLASS,
    &bw_rated_unqueue::CLASS,
    &work_package::CLASS,
    &round_robin_switch::CLASS,
    &hash_switch::CLASS,
    &null::CLASS,
    &null::PUSH_NULL,
    &null::PULL_NULL,
    &pull_tee::CLASS,
    &switch::SWITCH,
    &switch::STATIC_SWITCH,
    &switch::RANDOM_SWITCH,
    &suppressor::CLASS,
    &meter::METER,
    &meter::BANDWIDTH_METER,
    &rated_splitter::RATED_SPLITTER,
    &rated_splitter::BANDWIDTH_RATED_SPLITTER,
    &red::CLASS,
    &average_counter::CLASS,
    &set_timestamp::CLASS,
    &mark_mac_header::CLASS,
    &set_packet_type::CLASS,
    &address_info::ADDRESS_INFO,
    &clicky_info::CLICKY_INFO,
    &block_thread::CLASS,
    &port_info::CLASS,
    &align::ALIGN,
    &align::ALIGNMENT_INFO,
    &timed_source::TIMED_SOURCE,
    &timed_source::TIMED_SINK,
    &random_source::CLASS,
    &fast_udp::FAST_UDP_SOURCE,
    &fast_udp::FAST_UDP_FLOWS,
    &fast_tcp_flows::CLASS,
    &front_drop_queue::CLASS,
    &hub::CLASS,
    &clipboard::CLASS,
    &null::NULL1,
    &discard::DISCARD_NO_FREE,
    &stride_sched::STRIDE_SWITCH,
    &cpu_switch::CLASS,
    &block::CLASS,
    &random_bit_errors::CLASS,
    &ms_queue::CLASS,
    &cpu_queue::CLASS,
    &spinlock_info::CLASS,
    &static_pull_switch::CLASS,
    &timed_unqueue::CLASS,
    &burster::CLASS,
    &simple_sched::SIMPLE_PRIO,
    &simple_sched::SIMPLE_ROUND_ROBIN,
    &round_robin_unqueue::CLASS,
    &set_anno_byte::CLASS,
    &check_packet::CLASS,
];
