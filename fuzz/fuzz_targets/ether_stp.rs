//! Arbitrary frames, well-formed BPDUs with arbitrary fields, and timer
//! advances through EtherSpanTree (IEEE 802.1D): nothing may panic; every
//! frame it sends must be a BPDU it would read back, from its own address
//! and about itself; every frame it is given is counted once (read or
//! dropped by reason); and after every step the ports' roles, states and
//! the suppressors and switch it drives must agree as 802.1D says.
//!
//! Input: one configuration byte (ports, timers, priority), then records
//! `[op, len, body...]`. With the top bit of `op` set, a frame record
//! mutates one of the real BPDUs below (pairs of position and XOR mask,
//! positions from 200 cutting the frame) instead of being the frame
//! itself, so the fuzzer reaches the protocol without a seed corpus.
#![no_main]

use bricks_element::{PortInfo, Processing};
use bricks_elements::ether::ether_span_tree::{Bpdu, ConfigBpdu, Rig, CLASS};
use bricks_packet::Timestamp;
use bricks_runtime::testing::Harness;
use libfuzzer_sys::fuzz_target;

/// Linux 6.18's root 8000.a6:06:19:dc:f1:41 on port 0x8001 (hello 1 s,
/// max age 6 s, forward delay 2 s).
const LINUX_ROOT: [u8; 52] = [
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, 0xa6, 0x06, 0x19, 0xdc, 0xf1, 0x41, 0x00, 0x26, 0x42, 0x42,
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0xa6, 0x06, 0x19, 0xdc, 0xf1, 0x41, 0x00, 0x00,
    0x00, 0x00, 0x80, 0x00, 0xa6, 0x06, 0x19, 0xdc, 0xf1, 0x41, 0x80, 0x01, 0x00, 0x00, 0x06, 0x00,
    0x01, 0x00, 0x02, 0x00,
];
/// Linux relaying root 1000.f6:91:79:fc:ab:22 at cost 2.
const LINUX_RELAY: [u8; 52] = [
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, 0x96, 0x3b, 0x9e, 0x9f, 0xff, 0x5e, 0x00, 0x26, 0x42, 0x42,
    0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0xf6, 0x91, 0x79, 0xfc, 0xab, 0x22, 0x00, 0x00,
    0x00, 0x02, 0x80, 0x00, 0x96, 0x3b, 0x9e, 0x9f, 0xff, 0x5e, 0x80, 0x02, 0x00, 0x01, 0x06, 0x00,
    0x01, 0x00, 0x02, 0x00,
];
/// Linux's root acknowledging a notification (flags TC and TCA).
const LINUX_TC_TCA: [u8; 52] = [
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, 0xf6, 0x91, 0x79, 0xfc, 0xab, 0x22, 0x00, 0x26, 0x42, 0x42,
    0x03, 0x00, 0x00, 0x00, 0x00, 0x81, 0x10, 0x00, 0xf6, 0x91, 0x79, 0xfc, 0xab, 0x22, 0x00, 0x00,
    0x00, 0x00, 0x10, 0x00, 0xf6, 0x91, 0x79, 0xfc, 0xab, 0x22, 0x80, 0x01, 0x00, 0x00, 0x06, 0x00,
    0x01, 0x00, 0x02, 0x00,
];
/// Linux's Topology Change Notification.
const LINUX_TCN: [u8; 21] = [
    0x01, 0x80, 0xc2, 0x00, 0x00, 0x00, 0xa6, 0x06, 0x19, 0xdc, 0xf1, 0x41, 0x00, 0x07, 0x42, 0x42,
    0x03, 0x00, 0x00, 0x00, 0x80,
];
const TEMPLATES: [&[u8]; 4] = [&LINUX_ROOT, &LINUX_RELAY, &LINUX_TC_TCA, &LINUX_TCN];

const ME: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
const ARGS: [&str; 4] = [
    "02:00:00:00:00:01, in, out, sw",
    "02:00:00:00:00:01, in, out, sw, PRIORITY 0x1000, HELLO_TIME 1, FORWARD_DELAY 2, MAX_AGE 6",
    "02:00:00:00:00:01, in, out, sw, PRIORITY 0, MAX_AGE 40, HELLO_TIME 10, FORWARD_DELAY 30",
    "02:00:00:00:00:01, in, out, sw, PRIORITY 0xffff, HELLO_TIME 1.5, FORWARD_DELAY 4",
];

fn mutate(op: u8, body: &[u8]) -> Vec<u8> {
    let mut f = TEMPLATES[usize::from(op >> 5) % TEMPLATES.len()].to_vec();
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

/// A well-formed configuration BPDU whose fields come from `body`
/// (missing bytes zero), from a small set of roots and bridges so that
/// ties and equal identifiers happen.
fn config_from(body: &[u8]) -> Vec<u8> {
    let b = |i: usize| body.get(i).copied().unwrap_or(0);
    let id = |sel: u8| -> u64 {
        match sel % 6 {
            0 => 0x8000_a606_19dc_f141,
            1 => 0x1000_f691_79fc_ab22,
            2 => 0xdead_0200_0000_0001, // this bridge with Click's priority
            3 => 0x1000_0200_0000_0001, // this bridge at 0x1000
            4 => u64::from(sel) << 40 | 0x0200_0000_00ee,
            _ => u64::from_be_bytes([b(8), b(9), b(10), b(11), b(12), b(13), b(14), b(15)]),
        }
    };
    let c = ConfigBpdu {
        tc: b(0) & 1 != 0,
        tca: b(0) & 2 != 0,
        root: id(b(1)),
        cost: u32::from(b(2) % 8),
        bridge: id(b(3)),
        port: 0x8000 | u16::from(b(4) % 5),
        message_age: u16::from(b(5)) * 16,
        max_age: u16::from(b(6)) * 64,
        hello_time: u16::from(b(7)) * 16,
        forward_delay: u16::from(b(0) >> 2) * 64,
    };
    let mut f = Bpdu::Config(c).emit([0x52, 0x54, 0, 0, 0, b(4)]).to_vec();
    f.truncate(52 + usize::from(b(7) & 8));
    f
}

/// The counters in the order the element's manual lists them.
fn counter(h: &Harness, name: &str) -> u64 {
    h.stats().get(name).unwrap_or(0)
}

/// Everything the element sent since the last check is a BPDU from its
/// address about itself.
fn check_output(h: &mut Harness, ports: usize) {
    let me = counter(h, "bridge");
    for port in 0..ports {
        for f in h.take_bytes(port) {
            assert_eq!(f.len(), 60, "BPDUs are padded to 60 bytes");
            assert_eq!(f[6..12], ME, "source address");
            match Bpdu::parse(&f) {
                Ok(Bpdu::Config(c)) => {
                    assert_eq!(c.bridge, me);
                    assert_eq!(c.port, 0x8001 + port as u16);
                    assert!(c.root <= me, "root worse than itself");
                    assert!(c.message_age < c.max_age);
                    assert!(c.root == me || c.message_age > 0, "relayed: aged");
                    assert!(
                        !c.tca || c.root != me || c.tc,
                        "an acknowledging root announces"
                    );
                }
                Ok(Bpdu::Tcn) => {}
                Err(r) => panic!("sent a frame it would drop ({r}): {f:02x?}"),
            }
        }
    }
}

/// Roles, states, the suppressors and the switch agree.
fn check_state(h: &Harness, rig: &Rig, ports: usize) {
    let s = h.stats();
    let is_root = s.get("is_root") == Some(1);
    assert_eq!(is_root, s.get("root") == s.get("bridge"));
    assert_eq!(is_root, s.get("root_port").is_none());
    assert!(s.get("root") <= s.get("bridge"));
    let states = h.read_handler("port_states").unwrap();
    let mut roots = 0;
    for (i, line) in states.lines().enumerate() {
        let words: Vec<&str> = line.split(' ').collect();
        assert_eq!(words.len(), 3, "{line}");
        assert_eq!(words[0], i.to_string());
        let code = s.get(&format!("state{i}")).unwrap();
        let expected = match words[1] {
            "listening" => 1,
            "learning" => 2,
            "forwarding" => 3,
            "blocking" => 4,
            other => panic!("state {other}"),
        };
        assert_eq!(code, expected);
        match words[2] {
            "root" => {
                roots += 1;
                assert_eq!(s.get("root_port"), Some(i as u64));
                assert_ne!(code, 4, "a root port does not block");
            }
            "designated" => assert_ne!(code, 4, "a designated port does not block"),
            "blocked" => assert_eq!(code, 4),
            other => panic!("role {other}"),
        }
        let drive = match code {
            2 => (true, false, true),
            3 => (true, true, false),
            _ => (false, false, false),
        };
        assert_eq!(rig.port(i), drive, "port {i} in state {code}");
    }
    assert_eq!(states.lines().count(), ports);
    assert_eq!(roots, usize::from(!is_root));
    assert_eq!(
        rig.short_timeout_ms().is_some(),
        s.get("topology_change") == Some(1)
    );
    let msgs = h.read_handler("msgs").unwrap();
    assert_eq!(msgs.lines().count(), ports + 1);
}

fuzz_target!(|data: &[u8]| {
    let Some((&cfg, mut rest)) = data.split_first() else {
        return;
    };
    let ports = 1 + usize::from(cfg & 3);
    let rig = Rig::new(ports);
    let mut h = Harness::with_refs(
        &CLASS,
        ARGS[usize::from(cfg >> 2) % ARGS.len()],
        PortInfo {
            inputs: vec![Processing::Push; ports],
            outputs: vec![Processing::Push; ports],
        },
        &rig.refs,
    )
    .unwrap();
    let mut now: u64 = 1_000_000_000_000;
    h.advance_to(Timestamp(now));
    h.start();
    check_output(&mut h, ports);
    check_state(&h, &rig, ports);
    let mut given = 0u64;
    while let Some((&op, tail)) = rest.split_first() {
        let Some((&len, tail)) = tail.split_first() else {
            break;
        };
        let (body, tail) = tail.split_at(usize::from(len).min(tail.len()));
        rest = tail;
        let port = usize::from(op >> 3) % ports;
        match op & 7 {
            0..=3 => {
                let frame = if op & 0x80 != 0 {
                    mutate(op, body)
                } else {
                    body.to_vec()
                };
                if let Ok(p) = bricks_packet::Packet::from_slice(&frame) {
                    given += 1;
                    h.push_packets(port, [p]);
                }
            }
            4 | 5 => {
                let step = body
                    .iter()
                    .take(2)
                    .fold(0u64, |a, &b| a * 256 + u64::from(b))
                    % 4096;
                now += step * 10_000_000;
                h.advance_to(Timestamp(now));
            }
            6 => {
                given += 1;
                h.push_bytes(port, &config_from(body));
            }
            _ => {
                given += 1;
                h.push_bytes(port, &LINUX_TCN);
            }
        }
        check_output(&mut h, ports);
        check_state(&h, &rig, ports);
    }
    let read = counter(&h, "bpdus") + counter(&h, "tcns") + counter(&h, "drops");
    assert_eq!(given, read, "frames not accounted for: {:?}", h.stats());
});
