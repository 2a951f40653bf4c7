//! Arbitrary frames, clock steps and policy changes through L2Balancer
//! (every policy, DTX and DTX-n, with and without FRONT_MAC, a tiny return
//! table), its probes answered by ProbeResponders, and the same frames
//! through EtherSwitch. Nothing may panic; every frame is accounted for
//! once by the counters; nothing from the front reaches a back port
//! without a router's label for one of the balancer's front ports;
//! nothing internal and no 0x88B7 frame leaves by a front port.
//!
//! Input: one configuration byte, then records `[op, len, body...]`:
//! - `op` 0xff: the clock moves `len` ms (timers run); the routers whose
//!   bit is set in the body's first byte answer the probes sent so far.
//! - `op` 0xfe: the policy handler is written (`len` picks the value).
//! - top bit of `op` set: the body mutates a real frame (pairs of position
//!   and XOR mask; positions from 200 cut the frame), so the fuzzer reaches
//!   the deep paths without a corpus; else the body is the frame.
//! - bit 6 of `op`: the frame goes to the back input, else to front input
//!   `op & 1` (modulo the front ports).
#![no_main]

use bricks_elements::ether::ether_switch;
use bricks_elements::multistage::{
    is_internal, l2_balancer, probe_responder, router_mac, Probe, ProbeKind, ETHERTYPE_PROBE,
};
use bricks_packet::Timestamp;
use bricks_runtime::testing::Harness;
use libfuzzer_sys::fuzz_target;

const F0: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x0f, 0x00];
const F1: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x0f, 0x01];
const HOST_A: [u8; 6] = [0x52, 0x54, 0x00, 0x00, 0x00, 0x0a];

/// (arguments, front ports' global numbers, back ports, routers)
const CONFIGS: [(&str, &[u8], usize, u8); 4] = [
    (
        "FRONT 0 1, ROUTERS 3, FRONT_MAC 02:00:00:00:0f:00 02:00:00:00:0f:01, INTERVAL 10ms",
        &[0, 1],
        1,
        3,
    ),
    (
        "FRONT 0 1, ROUTERS 3, BACKS 2, POLICY flow, INTERVAL 10ms",
        &[0, 1],
        2,
        3,
    ),
    (
        "FRONT 5, ROUTERS 2, POLICY flowlet, DELTA 10ms, RETURN_CAPACITY 2, MOVE_AFTER 5ms, \
         FRONT_MAC 02:00:00:00:0f:00, INTERVAL 10ms",
        &[5],
        1,
        2,
    ),
    (
        "FRONT 0, ROUTERS 1, MISSES 1, INTERVAL 1ms, BACKS 3",
        &[0],
        3,
        1,
    ),
];

/// A UDP frame from A to F0.
fn udp() -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[..6].copy_from_slice(&F0);
    f[6..12].copy_from_slice(&HOST_A);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14..34].copy_from_slice(&[
        0x45, 0, 0, 50, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 2, 10, 1, 0, 2,
    ]);
    f[34..38].copy_from_slice(&[0x13, 0x88, 0, 53]);
    f
}

/// A's ARP reply to F0 (10.0.0.2 is at A).
fn arp_reply() -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&F0);
    f[6..12].copy_from_slice(&HOST_A);
    f[12..22].copy_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 2]);
    f[22..28].copy_from_slice(&HOST_A);
    f[28..32].copy_from_slice(&[10, 0, 0, 2]);
    f[32..38].copy_from_slice(&F0);
    f[38..42].copy_from_slice(&[10, 0, 0, 1]);
    f
}

fn templates() -> Vec<Vec<u8>> {
    let reply = Probe {
        kind: ProbeKind::Reply,
        balancer: 0,
        router: 0,
        front: 0,
        seq: 0,
    }
    .frame([0x02, 0x4d, 0x42, 0, 0, 0], router_mac(0, 0))
    .to_vec();
    let mut back = udp();
    back[..6].copy_from_slice(&HOST_A);
    back[6..12].copy_from_slice(&F1);
    let mut bcast = arp_reply();
    bcast[..6].fill(0xff);
    bcast[6..12].copy_from_slice(&F1);
    vec![udp(), arp_reply(), reply, back, bcast]
}

fn mutate(op: u8, body: &[u8], templates: &[Vec<u8>]) -> Vec<u8> {
    let mut f = templates[usize::from(op & 0x3f) % templates.len()].clone();
    for pair in body.chunks_exact(2) {
        let pos = usize::from(pair[0]);
        if pos < f.len() {
            f[pos] ^= pair[1];
        } else if pos >= 200 {
            f.truncate(pos - 200);
        }
    }
    f
}

/// Checks what left the balancer since the last look; returns the probes.
fn check_outputs(lb: &mut Harness, fronts: &[u8], backs: usize, routers: u8) -> Vec<Vec<u8>> {
    let nf = fronts.len();
    let mut probes = Vec::new();
    for o in 0..nf {
        for f in lb.take_bytes(o) {
            assert!(f.len() >= 14, "a runt out of front port {o}");
            assert!(
                !is_internal(&f[..6]),
                "an internal destination out of the front"
            );
            assert_ne!(
                f[12..14],
                ETHERTYPE_PROBE.to_be_bytes(),
                "0x88B7 out of the front"
            );
        }
    }
    for j in 0..backs {
        for f in lb.take_bytes(nf + j) {
            assert!(f.len() >= 14, "a runt out of back port {j}");
            if f[12..14] == ETHERTYPE_PROBE.to_be_bytes() {
                let p = Probe::parse(&f[14..]).expect("a well-formed probe");
                assert_eq!(p.kind, ProbeKind::Probe);
                assert!(p.router < routers);
                assert_eq!(f[..6], router_mac(p.router, 0));
                assert!(is_internal(&f[6..12]), "probes come from a back MAC");
                probes.push(f);
                continue;
            }
            assert_eq!(f[..3], [0x02, 0x4d, 0x53], "a router's label");
            assert!(f[3] < routers, "an existing router");
            assert!(fronts.contains(&f[4]), "one of this balancer's front ports");
            assert_eq!(f[5], 0);
            assert!(!is_internal(&f[6..12]), "an internal source from the front");
        }
    }
    probes
}

fuzz_target!(|data: &[u8]| {
    let Some((&cfg, mut rest)) = data.split_first() else {
        return;
    };
    let (args, fronts, backs, routers) = CONFIGS[usize::from(cfg) % CONFIGS.len()];
    let nf = fronts.len();
    let mut lb = Harness::push(&l2_balancer::CLASS, args, nf + 1, nf + backs);
    let mut responders: Vec<Harness> = (0..routers)
        .map(|r| {
            Harness::push(
                &probe_responder::CLASS,
                &format!("ROUTER {r}, FRONTS 2"),
                1,
                1,
            )
        })
        .collect();
    let mut sw = Harness::push(&ether_switch::CLASS, "TIMEOUT 1, CAPACITY 4", 3, 3);
    let templates = templates();
    let mut now: u64 = 1_000_000_000_000;
    lb.advance_to(Timestamp(now));
    sw.advance_to(Timestamp(now));
    lb.start();
    lb.advance_to(Timestamp(now));
    let mut pushed = 0u64;
    let mut sw_pushed = 0u64;
    let mut probes = Vec::new();
    while let Some((&op, tail)) = rest.split_first() {
        let Some((&len, tail)) = tail.split_first() else {
            break;
        };
        if op == 0xfe {
            rest = tail;
            let value = ["rr", "flow", "flowlet", "random"][usize::from(len) % 4];
            assert_eq!(lb.write_handler("policy", value).is_ok(), value != "random");
            continue;
        }
        let (body, tail) = tail.split_at(usize::from(len).min(tail.len()));
        rest = tail;
        if op == 0xff {
            now += u64::from(len) * 1_000_000;
            lb.advance_to(Timestamp(now));
            sw.advance_to(Timestamp(now));
            probes.extend(check_outputs(&mut lb, fronts, backs, routers));
            let alive = body.first().copied().unwrap_or(0xff);
            for p in std::mem::take(&mut probes) {
                for (r, h) in responders.iter_mut().enumerate() {
                    if alive & (1 << r) == 0 {
                        continue;
                    }
                    h.push_bytes(0, &p);
                    let replies = h.take(0);
                    pushed += replies.len() as u64;
                    lb.push_packets(nf, replies);
                }
            }
            continue;
        }
        let frame = if op & 0x80 != 0 {
            mutate(op, body, &templates)
        } else {
            body.to_vec()
        };
        let port = if op & 0x40 != 0 {
            nf
        } else {
            usize::from(op & 1) % nf
        };
        lb.push_bytes(port, &frame);
        pushed += 1;
        sw.push_bytes(usize::from(op & 3) % 3, &frame);
        sw_pushed += 1;
        probes.extend(check_outputs(&mut lb, fronts, backs, routers));
        for o in 0..3 {
            sw.take(o);
        }
    }
    let s = lb.stats();
    let c = |n: &str| s.get(n).unwrap_or(0);
    let accounted: u64 = [
        "balanced",
        "spoofed",
        "runt",
        "bad_source",
        "front_broadcast",
        "other_host",
        "other_type",
        "no_router",
        "arp_limited",
        "arp_to_routers",
        "returned",
        "unknown_return",
        "replicated",
        "replies",
        "other_probe",
    ]
    .iter()
    .map(|n| c(n))
    .sum();
    assert_eq!(accounted, pushed, "L2Balancer: every frame once: {s:?}");
    assert!(c("return_entries") <= 4096);
    assert!(c("live") <= u64::from(routers));
    let per: u64 = (0..routers).map(|r| c(&format!("to_router{r}"))).sum();
    assert_eq!(per, c("balanced"));
    let s = sw.stats();
    let c = |n: &str| s.get(n).unwrap_or(0);
    assert_eq!(
        c("forwarded") + c("flooded") + c("filtered") + c("runt"),
        sw_pushed,
        "EtherSwitch: every frame once: {s:?}"
    );
    assert!(c("table_size") <= 4);
});
