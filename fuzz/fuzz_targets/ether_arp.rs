//! Arbitrary frames, timer events and handler writes through ARPResponder,
//! both inputs of ARPQuerier, and HostEtherFilter: nothing may panic, every
//! frame they emit must be well formed, and ARPQuerier must account for
//! every IP packet it was given (sent, dropped by reason, or held until
//! shutdown).
//!
//! Input: one configuration byte, then records `[op, len, body...]`. With
//! the top bit of `op` set, the body mutates one of the real frames below
//! (pairs of position and XOR mask) instead of being the frame itself, so
//! the fuzzer reaches the deep paths without a seed corpus.
#![no_main]

use bricks_elements::ether::{arp_querier, arp_responder, host_ether_filter};
use bricks_packet::{Packet, Timestamp};
use bricks_runtime::testing::Harness;
use libfuzzer_sys::fuzz_target;
use std::net::Ipv4Addr;

/// Captured from Linux: 10.0.0.1 (52:54:00:aa:00:01) asks for 10.0.0.2.
const REQUEST: [u8; 42] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, 0x08, 0x06, 0x00, 0x01,
    0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x02,
];
/// Linux's reply: 10.0.0.2 is at 52:54:00:bb:00:02.
const REPLY: [u8; 42] = [
    0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, 0x52, 0x54, 0x00, 0xbb, 0x00, 0x02, 0x08, 0x06, 0x00, 0x01,
    0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 0x52, 0x54, 0x00, 0xbb, 0x00, 0x02, 0x0a, 0x00, 0x00, 0x02,
    0x52, 0x54, 0x00, 0xaa, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x01,
];
/// Linux's gratuitous ARP for 10.0.0.2.
const GRATUITOUS: [u8; 42] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0x00, 0xbb, 0x00, 0x02, 0x08, 0x06, 0x00, 0x01,
    0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x52, 0x54, 0x00, 0xbb, 0x00, 0x02, 0x0a, 0x00, 0x00, 0x02,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x02,
];
/// The IPv4 header of Linux's echo request from 10.0.0.1 to 10.0.0.2.
const ECHO_IP: [u8; 20] = [
    0x45, 0x00, 0x00, 0x54, 0xc8, 0x50, 0x40, 0x00, 0x40, 0x01, 0x5e, 0x56, 0x0a, 0x00, 0x00, 0x01,
    0x0a, 0x00, 0x00, 0x02,
];
const TEMPLATES: [&[u8]; 4] = [&REQUEST, &REPLY, &GRATUITOUS, &ECHO_IP];

const MY_MAC: [u8; 6] = [0x52, 0x54, 0x00, 0xaa, 0x00, 0x01];
const QUERIER_ARGS: [&str; 4] = [
    "10.0.0.1/24, 52:54:00:aa:00:01",
    "10.0.0.1/24, 52:54:00:aa:00:01, CAPACITY 3, CAPACITY_SLIM_FACTOR 3",
    "10.0.0.1, 52:54:00:aa:00:01, ENTRY_CAPACITY 2, ENTRY_PACKET_CAPACITY 2, TIMEOUT 2, POLL_TIMEOUT 1",
    "10.0.0.1/30, 52:54:00:aa:00:01, RETRIES 0, BROADCAST_POLL true, TIMEOUT 0, POLL_TIMEOUT 0",
];

fn mutate(op: u8, body: &[u8]) -> Vec<u8> {
    let mut f = TEMPLATES[usize::from(op >> 3) % TEMPLATES.len()].to_vec();
    for pair in body.chunks_exact(2) {
        let pos = usize::from(pair[0]);
        if pos < f.len() {
            f[pos] ^= pair[1];
        } else if pos >= 200 {
            // Positions past the end cut the frame, to reach truncation.
            f.truncate(pos - 200);
        }
    }
    f
}

/// Checks what came out of the querier; returns the IP frames seen.
fn check_querier_output(q: &mut Harness, outputs: usize) -> u64 {
    let mut ip_frames = 0;
    for port in 0..outputs {
        for f in q.take_bytes(port) {
            assert!(f.len() >= 14, "runt from ARPQuerier");
            assert_eq!(f[6..12], MY_MAC, "ARPQuerier source address");
            match (f[12], f[13]) {
                (0x08, 0x00) => {
                    assert_eq!(port, 0, "IP frame on the query output");
                    ip_frames += 1;
                }
                (0x08, 0x06) => {
                    assert_eq!(f.len(), 42);
                    assert_eq!(f[20..22], [0, 1], "queries are requests");
                    assert_eq!(port, outputs - 1, "query on the wrong output");
                }
                t => panic!("unexpected EtherType {t:?} from ARPQuerier"),
            }
        }
    }
    ip_frames
}

fuzz_target!(|data: &[u8]| {
    let Some((&cfg, mut rest)) = data.split_first() else {
        return;
    };
    let outputs = 1 + usize::from(cfg >> 7);
    let mut q = Harness::push(
        &arp_querier::CLASS,
        QUERIER_ARGS[usize::from(cfg) % 4],
        2,
        outputs,
    );
    let mut r = Harness::push(
        &arp_responder::CLASS,
        "10.0.0.2 10.0.1.0/24 52:54:00:bb:00:02, 10.0.0.0/8 52:54:00:cc:00:03",
        1,
        outputs,
    );
    let mut f = Harness::push(
        &host_ether_filter::CLASS,
        "52:54:00:aa:00:01, DROP_OWN true, OFFSET 0",
        1,
        outputs,
    );
    let mut now: u64 = 1_000_000_000_000;
    for h in [&mut q, &mut r, &mut f] {
        h.advance_to(Timestamp(now));
    }
    let (mut ip_in, mut ip_out) = (0u64, 0u64);
    while let Some((&op, tail)) = rest.split_first() {
        let Some((&len, tail)) = tail.split_first() else {
            break;
        };
        let (body, tail) = tail.split_at(usize::from(len).min(tail.len()));
        rest = tail;
        let frame = if op & 0x80 != 0 {
            mutate(op, body)
        } else {
            body.to_vec()
        };
        match op & 7 {
            0 => {
                r.push_bytes(0, &frame);
                for reply in r.take_bytes(0) {
                    assert_eq!(reply.len(), 42);
                    assert_eq!(reply[12..14], [0x08, 0x06]);
                    assert_eq!(reply[20..22], [0, 2]);
                    assert_eq!(reply[..6], reply[32..38], "reply goes to the requester");
                }
            }
            1 | 6 => {
                let mut p = Packet::from_slice(&frame).unwrap();
                if op & 7 == 1 {
                    let host = body.last().copied().unwrap_or(0) & 7;
                    p.anno_mut().dst_ip = Ipv4Addr::new(10, 0, 0, host);
                }
                ip_in += 1;
                q.push_packets(0, [p]);
            }
            2 => q.push_bytes(1, &frame),
            3 => {
                f.push_bytes(0, &frame);
                for out in f.take_bytes(0) {
                    assert!(out.len() >= 14);
                    assert_ne!(out[6..12], MY_MAC, "own frame not filtered");
                }
            }
            4 => {
                let step = body
                    .iter()
                    .take(2)
                    .fold(0u64, |a, &b| a * 256 + u64::from(b))
                    % 4096;
                now += step * 10_000_000;
                for h in [&mut q, &mut r, &mut f] {
                    h.advance_to(Timestamp(now));
                }
            }
            _ => {
                let x = body.first().copied().unwrap_or(0) & 7;
                let _ = match body.get(1).copied().unwrap_or(0) % 5 {
                    0 => q.write_handler("insert", &format!("10.0.0.{x} 52:54:00:cc:00:0{x}")),
                    1 => q.write_handler("delete", &format!("10.0.0.{x}")),
                    2 => q.write_handler("clear", ""),
                    3 => q.write_handler("ipaddr", &format!("10.0.0.{x}")),
                    _ => r.write_handler("add", &format!("10.0.2.{x} 52:54:00:dd:00:0{x}")),
                };
            }
        }
        ip_out += check_querier_output(&mut q, outputs);
    }
    q.shutdown();
    ip_out += check_querier_output(&mut q, outputs);
    let s = q.stats();
    assert_eq!(s.get("held"), Some(0));
    let drops = s.get("drops").unwrap_or(0);
    assert_eq!(
        ip_in,
        ip_out + drops,
        "ARPQuerier lost track of packets: {s:?}"
    );
});
