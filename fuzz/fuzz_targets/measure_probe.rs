//! The probe parser of `bricks sink` on arbitrary frames: finding the UDP
//! datagram must never panic and never point outside the frame, and a
//! frame through GenStamp then TrafficSink must be counted exactly once.
#![no_main]

use bricks_elements::measure::{gen_stamp, probe, traffic_sink};
use bricks_packet::Packet;
use bricks_runtime::testing::Harness;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (l3, frame) = match data.split_first() {
        Some((&b, rest)) if b & 0x80 != 0 => (Some(usize::from(b & 0x7f)), rest),
        Some((_, rest)) => (None, rest),
        None => return,
    };
    if let Some(at) = probe::locate_udp(frame, l3) {
        assert!(
            at.l3 < at.l4 && at.l4 + 8 <= at.end && at.end <= frame.len(),
            "{at:?}"
        );
        if let Ok(p) = probe::Probe::new_checked(&frame[at.l4 + 8..at.end]) {
            let _ = probe::ProbeRepr::parse(&p);
        }
    }
    let Ok(mut p) = Packet::from_slice(frame) else {
        return;
    };
    if let Some(o) = l3.filter(|&o| o <= frame.len()) {
        p.set_network_header(o);
    }
    let mut stamp = Harness::push(&gen_stamp::CLASS, "", 1, 1);
    stamp.push_packets(0, [p]);
    let out = stamp.take(0);
    assert_eq!(out.len(), 1, "GenStamp passes every packet on");
    let mut sink = Harness::push(&traffic_sink::CLASS, "", 1, 0);
    sink.push_packets(0, out);
    assert_eq!(sink.stats().get("count"), Some(1));
});
