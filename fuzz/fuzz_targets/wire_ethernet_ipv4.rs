//! Arbitrary bytes as an Ethernet frame through every bricks-wire view:
//! VLAN and QinQ tags, MPLS stacks, ARP, IPv4 (options included), IPv6,
//! ICMP, ICMPv6, UDP, TCP and ESP, with every getter, options iterator and
//! `Repr::parse` called, and every parsed `Repr` emitted back and compared.
//! Nothing may panic once `check_len` passed.
//!
//! The walk itself lives in crates/wire/tests/support/exercise.rs, which
//! `cargo test -p bricks-wire` also runs under proptest.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/wire/tests/support/exercise.rs"]
mod exercise;

fuzz_target!(|data: &[u8]| {
    exercise::exercise_frame(data);
    // The same bytes as a bare IP packet, as they arrive from a tunnel or
    // a layer-3 device, reach the IP parsers without an Ethernet header.
    exercise::exercise_ipv4(data, 0);
    exercise::exercise_ipv6(data, 0);
});
