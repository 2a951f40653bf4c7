//! Arbitrary bytes as a packet through the IPv4/IPv6 translators
//! (ProtocolTranslator64, ProtocolTranslator46) and through
//! AddressTranslator's two inputs in its static, dynamic-address and
//! dynamic-port forms. Nothing may panic or loop; a translated IPv4 packet
//! has a correct header checksum and its total length, a translated IPv6
//! packet its payload length (AddressTranslator's no more than its length); a packet translated one way and back is
//! still a packet of the first kind.
#![no_main]

use bricks_element::{Packet, PortInfo, Processing};
use bricks_elements::ip6;
use bricks_runtime::testing::Harness;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

fn harness(class: &bricks_element::ElementClass, args: &str, n: usize) -> Harness {
    let ports = PortInfo {
        inputs: vec![Processing::Push; n],
        outputs: vec![Processing::Push; n],
    };
    Harness::new(class, args, ports)
}

struct Duts {
    pt64: Harness,
    pt46: Harness,
    at: Vec<Harness>,
}

fn duts() -> Duts {
    Duts {
        pt64: harness(&ip6::protocol_translator64::CLASS, "", 1),
        pt46: harness(&ip6::protocol_translator46::CLASS, "", 1),
        at: vec![
            harness(
                &ip6::address_translator::CLASS,
                "1, 0, ::ffff:0.0.0.2 ::1.0.0.1, 0",
                2,
            ),
            harness(&ip6::address_translator::CLASS, "0, 1, 0, 0, ::1.0.0.1", 2),
            harness(
                &ip6::address_translator::CLASS,
                "0, 1, 1, 0, ::ffff:18.26.4.116 1300 1302, CAPACITY 4",
                2,
            ),
        ],
    }
}

thread_local! {
    static DUTS: RefCell<Duts> = RefCell::new(duts());
}

fn ipv4_ok(d: &[u8]) {
    assert!(d.len() >= 20 && d[0] >> 4 == 4);
    let ihl = usize::from(d[0] & 15) * 4;
    assert!(ihl >= 20 && ihl <= d.len());
    assert_eq!(usize::from(u16::from_be_bytes([d[2], d[3]])), d.len());
    let mut sum = 0u32;
    for w in d[..ihl].chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    assert_eq!(sum, 0xffff, "IPv4 header checksum");
}

fn ipv6_ok(d: &[u8]) {
    assert!(d.len() >= 40 && d[0] >> 4 == 6);
    assert_eq!(usize::from(u16::from_be_bytes([d[4], d[5]])), d.len() - 40);
}

/// AddressTranslator rewrites in place and keeps link padding, as Click's.
fn ipv6_within(d: &[u8]) {
    assert!(d.len() >= 40 && d[0] >> 4 == 6);
    assert!(usize::from(u16::from_be_bytes([d[4], d[5]])) <= d.len() - 40);
}

fn one(h: &mut Harness, port: usize, p: Packet) -> Vec<Packet> {
    h.push_packets(port, [p]);
    (0..2).flat_map(|o| h.take(o)).collect()
}

fuzz_target!(|data: &[u8]| {
    if data.len() > bricks_packet::MAX_FRAME {
        return;
    }
    DUTS.with(|d| {
        let d = &mut *d.borrow_mut();
        let packet = || Packet::from_slice(data).expect("fits");
        d.pt64.push_packets(0, [packet()]);
        for q in d.pt64.take(0) {
            ipv4_ok(q.data());
            d.pt46.push_packets(0, [q]);
            for r in d.pt46.take(0) {
                ipv6_ok(r.data());
            }
        }
        d.pt46.push_packets(0, [packet()]);
        for q in d.pt46.take(0) {
            ipv6_ok(q.data());
            d.pt64.push_packets(0, [q]);
            for r in d.pt64.take(0) {
                ipv4_ok(r.data());
            }
        }
        for h in &mut d.at {
            for port in 0..2 {
                for q in one(h, port, packet()) {
                    ipv6_within(q.data());
                }
            }
        }
    });
});
