//! Click's small elements: the ones Click's own tests and example
//! configurations use for plumbing, printing and header tweaks. Each
//! follows its Click namesake (`elements/*/*.cc` of kohler/click): the same
//! arguments, ports, handlers and output formats.

/// Click's test elements' `CHECK(x)`: returns `Err` with the check's file,
/// line and text, in Click's words, when `x` is false.
macro_rules! click_check {
    ($e:expr) => {
        if !$e {
            return Err(format!(
                "{}:{}: test `{}' failed",
                file!(),
                line!(),
                stringify!($e)
            ));
        }
    };
}
pub(crate) use click_check;

pub mod adaptive_red;
pub mod adjust_timestamp;
pub mod aliases;
pub mod arp_faker;
pub mod arp_print;
pub mod bypass;
pub mod check_ip_header2;
pub mod check_length;
pub mod check_pattern;
pub mod codel;
pub mod compare_packets;
pub mod crc32;
pub mod delay_unqueue;
pub mod ensure_ether;
pub mod error_element;
pub mod ether_count;
pub mod ether_mirror;
pub mod ether_pause_source;
pub mod force_icmp;
pub mod force_ip;
pub mod force_tcp;
pub mod force_udp;
pub mod from_handler;
pub mod handler_task;
pub mod icmp_ip_encap;
pub mod increment_seq_no;
pub mod input_switch;
pub mod ip_name_info;
pub mod link_unqueue;
pub mod mark_ip_ce;
pub mod message;
pub mod mixed_queue;
pub mod mt_die_test;
pub mod notifier_debug;
pub mod null_task;
pub mod nulls;
pub mod pad;
pub mod pull_switch;
pub mod push_anno;
pub mod queue_yank_test;
pub mod quick_note_queue;
pub mod random_sample;
pub mod random_seed;
pub mod read_anno;
pub mod reframe;
pub mod resize;
pub mod sched_order_test;
pub mod send_pattern;
pub mod set_ip_dscp;
pub mod set_timestamp_delta;
pub mod set_vlan_anno;
pub mod shaper;
pub mod simple_idle;
pub mod sorted_ip_lookup;
pub mod store_data;
pub mod store_ip_address;
pub mod store_udp_time_seq_record;
pub mod time_filter;
pub mod time_sorted_sched;
pub mod timer_test;
pub mod token_bucket_test;
pub mod truncate;
pub mod upstream_notifier;

use bricks_element::{Batch, Context, Element, ElementClass, Packet, Stats};

/// What a one-input, one-output element does to each packet on its own
/// (Click's `simple_action`): rewrite it in place, or refuse it.
pub trait SimpleAction: Send + 'static {
    /// Rewrites `p`; false drops it, and [`SimpleElement`] counts it.
    fn simple_action(&mut self, p: &mut Packet) -> bool;
}

/// The element around a [`SimpleAction`] (FastClick's `SimpleElement`):
/// runs it over each batch, on push and pull alike, and drops and counts
/// as `drops` the packets it refuses. The Force* fuzzing elements,
/// PushAnno and ReadAnno are all this loop.
#[derive(Debug)]
pub struct SimpleElement<A> {
    action: A,
    drops: u64,
}

impl<A: SimpleAction> SimpleElement<A> {
    /// `action` as an element, its drop counter at 0.
    pub fn new(action: A) -> Self {
        SimpleElement { action, drops: 0 }
    }

    #[inline]
    fn apply(&mut self, b: &mut Batch) {
        let before = b.len();
        b.retain(|p| self.action.simple_action(p));
        self.drops += (before - b.len()) as u64;
    }
}

impl<A: SimpleAction> Element for SimpleElement<A> {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.apply(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.apply(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }
}

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &mt_die_test::CLASS,
    &truncate::CLASS,
    &check_length::CLASS,
    &arp_print::CLASS,
    &pull_switch::PULL_SWITCH,
    &pull_switch::SIMPLE_PULL_SWITCH,
    &bypass::CLASS,
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
    &aliases::LOOKUP_IP_ROUTE_MP,
    &sorted_ip_lookup::CLASS,
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
    &shaper::BANDWIDTH_SHAPER,
    &set_timestamp_delta::CLASS,
    &codel::CLASS,
    &adaptive_red::CLASS,
    &force_ip::CLASS,
    &force_udp::CLASS,
    &force_tcp::CLASS,
    &force_icmp::CLASS,
    &check_pattern::CLASS,
    &send_pattern::CLASS,
    &compare_packets::CLASS,
    &nulls::NULL2,
    &nulls::NULL3,
    &nulls::NULL4,
    &nulls::NULL5,
    &nulls::NULL6,
    &nulls::NULL7,
    &nulls::NULL8,
    &null_task::CLASS,
    &handler_task::CLASS,
    &error_element::CLASS,
    &simple_idle::CLASS,
    &arp_faker::CLASS,
    &ether_pause_source::CLASS,
    &ip_name_info::IP_NAME_INFO,
    &ip_name_info::IP_FIELD_INFO,
    &increment_seq_no::CLASS,
    &store_udp_time_seq_record::CLASS,
    &ether_count::CLASS,
    &push_anno::CLASS,
    &read_anno::CLASS,
    &reframe::CLASS,
    &upstream_notifier::CLASS,
    &notifier_debug::CLASS,
    &quick_note_queue::CLASS,
    &from_handler::CLASS,
    &sched_order_test::CLASS,
    &timer_test::CLASS,
    &token_bucket_test::CLASS,
    &queue_yank_test::CLASS,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{echo_request, udp};
    use crate::standard::testrun::plan;
    use bricks_runtime::testing::Harness;

    /// Every push-capable element of this group, on every prefix of real
    /// frames and with header annotations pointing anywhere: no panic, and
    /// every packet comes out or is counted.
    #[test]
    fn hostile_packets_do_not_panic() {
        let cases: &[(&ElementClass, &str, usize)] = &[
            (&truncate::CLASS, "10", 1),
            (&check_length::CLASS, "30", 2),
            (&pad::CLASS, "64", 1),
            (&resize::CLASS, "-3, 5", 1),
            (&resize::CLASS, "100, -100", 1),
            (&arp_print::CLASS, "ACTIVE false", 1),
            (&store_ip_address::CLASS, "src", 2),
            (&store_ip_address::CLASS, "1.2.3.4, 30", 1),
            (&set_ip_dscp::CLASS, "7", 1),
            (&mark_ip_ce::CLASS, "true", 1),
            (&random_sample::CLASS, "0.5", 1),
            (&time_filter::CLASS, "START_AFTER 1", 2),
            (&adjust_timestamp::CLASS, "-5", 1),
            (&set_vlan_anno::CLASS, "3", 1),
            (&ether_mirror::CLASS, "", 1),
            (&icmp_ip_encap::ICMP_PING_ENCAP, "1.0.0.1, 2.0.0.2", 1),
            (&store_data::CLASS, "10, \\<ffffffff>", 1),
            (&crc32::SET_CRC32, "", 1),
            (&crc32::CHECK_CRC32, "", 1),
            (&ensure_ether::CLASS, "", 1),
            (&check_ip_header2::CLASS, "", 1),
            (&force_ip::CLASS, "", 1),
            (&force_udp::CLASS, "", 1),
            (&force_udp::CLASS, "53", 1),
            (&force_tcp::CLASS, "0, true, 2", 1),
            (&force_icmp::CLASS, "", 1),
            (&force_icmp::CLASS, "unreachable, port", 1),
            (&check_pattern::CLASS, "10", 1),
            (&nulls::NULL5, "", 1),
            (&increment_seq_no::CLASS, "OFFSET 20", 1),
            (&store_udp_time_seq_record::CLASS, "0", 1),
            (&store_udp_time_seq_record::CLASS, "14, DELTA true", 1),
            (&ether_count::CLASS, "", 1),
            (&push_anno::CLASS, "", 1),
            (&read_anno::CLASS, "", 1),
            (&upstream_notifier::CLASS, "true", 1),
        ];
        let frames = [udp(12), echo_request(), vec![0xff; 60]];
        for &(class, args, outputs) in cases {
            let mut h = Harness::push(class, args, 1, outputs);
            let mut sent = 0u64;
            for f in &frames {
                for n in 0..=f.len() {
                    for l3 in [None, Some(0), Some(14), Some(40)] {
                        let mut p = Packet::from_slice(&f[..n]).unwrap();
                        if let Some(off) = l3 {
                            p.set_network_header(off);
                        }
                        h.push_packets(0, [p]);
                        sent += 1;
                    }
                }
            }
            let out: u64 = (0..outputs).map(|o| h.take(o).len() as u64).sum();
            let stats = h.stats();
            let dropped: u64 = ["drops", "unconnected_drops"]
                .iter()
                .filter_map(|k| stats.get(k))
                .sum();
            assert_eq!(out + dropped, sent, "{} {args}", class.name);
        }
    }

    /// The classes of this file added with the misc batch: every manual
    /// example checks (Error's must fail), and those that end run clean.
    #[test]
    fn misc_manual_examples() {
        let runs: &[&ElementClass] = &[
            &force_ip::CLASS,
            &force_udp::CLASS,
            &force_tcp::CLASS,
            &force_icmp::CLASS,
            &compare_packets::CLASS,
            &nulls::NULL2,
            &nulls::NULL8,
            &null_task::CLASS,
            &ether_pause_source::CLASS,
            &ip_name_info::IP_NAME_INFO,
            &ip_name_info::IP_FIELD_INFO,
            &increment_seq_no::CLASS,
            &ether_count::CLASS,
            &push_anno::CLASS,
            &read_anno::CLASS,
            &reframe::CLASS,
            &upstream_notifier::CLASS,
            &notifier_debug::CLASS,
            &quick_note_queue::CLASS,
        ];
        // Examples that run until stopped: checked only.
        let checks: &[&ElementClass] = &[
            &check_pattern::CLASS,
            &send_pattern::CLASS,
            &handler_task::CLASS,
            &simple_idle::CLASS,
            &arp_faker::CLASS,
            &store_udp_time_seq_record::CLASS,
            &from_handler::CLASS,
        ];
        for class in runs.iter().chain(checks) {
            let m = class.manual;
            assert!(m.example.contains(class.name), "{} example", class.name);
            assert!(!m.summary.is_empty() && !m.description.is_empty());
            let p = plan(m.example).unwrap_or_else(|e| panic!("{}: {e}", class.name));
            if runs.iter().any(|c| c.name == class.name) {
                let mut engine = bricks_runtime::Engine::new(&p).unwrap();
                engine.idle_sleep = false;
                let summary = engine.run();
                assert!(
                    summary.errors.is_empty(),
                    "{}: {:?}",
                    class.name,
                    summary.errors
                );
            }
        }
        let err = plan(error_element::CLASS.manual.example).unwrap_err();
        assert!(err.contains("always fails to initialize"), "{err}");
    }
}
