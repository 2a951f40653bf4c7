//! One conformance suite for every device backend: the same frames, the
//! same checks, over a real veth pair between two network namespaces.
//!
//! Each backend must deliver frames byte for byte and in order per flow,
//! take at most `max` frames per poll, count what it sends and receives,
//! drop and count (never block) when its transmit ring is full, and report
//! an interface that disappears as gone.

use bricks_io::afpacket::{self, PacketConfig};
use bricks_io::xdp::{self, XdpConfig};
use bricks_io::{DeviceError, RxQueue, TxQueue};
use bricks_netns::{in_namespace, skip_unless_root, Network};
use bricks_packet::{Batch, Packet};
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug)]
enum Backend {
    Xdp,
    Packet,
}

/// Opens every receive queue of `ifname` (2 here) in namespace `ns`.
fn open_rx(b: Backend, ns: &str, ifname: &'static str) -> Vec<Box<dyn RxQueue>> {
    in_namespace(ns, move || -> Vec<Box<dyn RxQueue>> {
        match b {
            Backend::Xdp => (0..2)
                .map(|q| {
                    let (rx, _tx) = xdp::open_queue(ifname, q, &XdpConfig::default()).unwrap();
                    Box::new(rx) as Box<dyn RxQueue>
                })
                .collect(),
            Backend::Packet => afpacket::open(ifname, 1, &PacketConfig::default())
                .unwrap()
                .into_iter()
                .map(|(rx, _)| Box::new(rx) as Box<dyn RxQueue>)
                .collect(),
        }
    })
}

/// Opens one transmit queue of `ifname` in namespace `ns`.
fn open_tx(b: Backend, ns: &str, ifname: &'static str) -> Box<dyn TxQueue> {
    in_namespace(ns, move || -> Box<dyn TxQueue> {
        match b {
            Backend::Xdp => Box::new(xdp::open_queue(ifname, 0, &XdpConfig::default()).unwrap().1),
            Backend::Packet => Box::new(
                afpacket::open(ifname, 1, &PacketConfig::default())
                    .unwrap()
                    .pop()
                    .unwrap()
                    .1,
            ),
        }
    })
}

/// A 64-byte Ethernet/IPv4/UDP frame of flow `flow` carrying `seq`.
fn frame(flow: u16, seq: u32) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&50u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 80, 0, 1]);
    ip[16..20].copy_from_slice(&[10, 81, 0, 1]);
    let mut sum = 0u32;
    for c in ip.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    f[34..36].copy_from_slice(&(1000 + flow).to_be_bytes());
    f[36..38].copy_from_slice(&9u16.to_be_bytes());
    f[38..40].copy_from_slice(&30u16.to_be_bytes());
    f[42..46].copy_from_slice(&seq.to_be_bytes());
    f
}

struct Pair {
    net: Network,
}

impl Pair {
    fn new(tag: &str) -> Pair {
        let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
        net.add_namespace("a").unwrap();
        net.add_namespace("b").unwrap();
        net.add_link("a", "va", "b", "vb", 2).unwrap();
        Pair { net }
    }
    fn a(&self) -> String {
        self.net.ns_name("a")
    }
    fn b(&self) -> String {
        self.net.ns_name("b")
    }
}

/// Sends `frames` in batches of 32, flushing each.
fn send_all(tx: &mut dyn TxQueue, frames: &[Vec<u8>]) -> usize {
    let mut placed = 0;
    for chunk in frames.chunks(32) {
        let mut b = Batch::new();
        for f in chunk {
            let _ = b.push(Packet::from_slice(f).unwrap());
        }
        placed += tx.enqueue(&mut b).unwrap();
        assert!(b.is_empty(), "enqueue takes every packet");
        tx.flush().unwrap();
        // Give a copy-mode veth time to drain; the point here is
        // correctness, not speed.
        std::thread::sleep(Duration::from_micros(200));
    }
    let t = Instant::now();
    while tx.pending() > 0 && t.elapsed() < Duration::from_secs(2) {
        tx.flush().unwrap();
    }
    placed
}

/// Receives until `n` frames arrived or 5 s passed, at most `max` per poll.
fn receive(rx: &mut [Box<dyn RxQueue>], n: usize, max: usize) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let t = Instant::now();
    while got.len() < n && t.elapsed() < Duration::from_secs(5) {
        for q in rx.iter_mut() {
            let mut b = Batch::new();
            let k = q.recv(&mut b, max).unwrap();
            assert!(k <= max, "recv returned {k} > max {max}");
            assert_eq!(k, b.len());
            got.extend(b.iter().map(|p| p.data().to_vec()));
            b.clear();
        }
    }
    got
}

fn frames_cross_byte_for_byte_in_flow_order(b: Backend, tag: &str) {
    let pair = Pair::new(tag);
    let mut rx = open_rx(b, &pair.b(), "vb");
    let mut tx = open_tx(b, &pair.a(), "va");
    let sent: Vec<Vec<u8>> = (0..600u32).map(|i| frame((i % 12) as u16, i)).collect();
    assert_eq!(send_all(tx.as_mut(), &sent), sent.len());
    let got = receive(&mut rx, sent.len(), 32);
    // Linux may send its own frames (IPv6 router solicitations) on a
    // fresh link: keep ours.
    let got: Vec<Vec<u8>> = got
        .into_iter()
        .filter(|f| f.len() == 64 && f[12] == 8)
        .collect();
    let mut want = sent.clone();
    let mut have = got.clone();
    want.sort();
    have.sort();
    assert_eq!(have, want, "{b:?}: every frame, byte for byte, once");
    // Per flow, the sequence numbers arrive in the order they were sent.
    let mut last: HashMap<[u8; 2], u32> = HashMap::new();
    for f in &got {
        let seq = u32::from_be_bytes(f[42..46].try_into().unwrap());
        let prev = last.insert([f[34], f[35]], seq);
        assert!(
            prev.is_none_or(|p| p < seq),
            "{b:?}: reordered within a flow"
        );
    }
    let rx_packets: u64 = rx.iter().map(|q| q.stats().packets).sum();
    assert!(rx_packets >= sent.len() as u64);
    let s = tx.stats();
    assert_eq!(s.packets, sent.len() as u64, "{b:?}: tx counter");
    assert_eq!(s.bytes, 64 * sent.len() as u64);
    assert!(s.kicks > 0);
}

fn recv_takes_at_most_max(b: Backend, tag: &str) {
    let pair = Pair::new(tag);
    let mut rx = open_rx(b, &pair.b(), "vb");
    let mut tx = open_tx(b, &pair.a(), "va");
    let sent: Vec<Vec<u8>> = (0..100u32).map(|i| frame(1, i)).collect();
    send_all(tx.as_mut(), &sent);
    std::thread::sleep(Duration::from_millis(50));
    let got = receive(&mut rx, 100, 7);
    assert!(got.len() >= 100, "{b:?}: {} of 100", got.len());
}

fn full_transmit_ring_drops_and_counts(b: Backend, tag: &str) {
    let pair = Pair::new(tag);
    let mut tx = open_tx(b, &pair.a(), "va");
    let t = Instant::now();
    let mut offered = 0u64;
    // Far more than any ring holds, without a flush in between.
    for i in 0..400u32 {
        let mut batch = Batch::new();
        for j in 0..64 {
            let _ = batch.push(Packet::from_slice(&frame(1, i * 64 + j)).unwrap());
        }
        offered += 64;
        tx.enqueue(&mut batch).unwrap();
        assert!(batch.is_empty());
    }
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "{b:?}: enqueue blocked"
    );
    let s = tx.stats();
    assert!(s.ring_full > 0, "{b:?}: nothing dropped: {s:?}");
    assert_eq!(s.packets + s.ring_full, offered, "{b:?}: {s:?}");
}

fn a_deleted_interface_is_gone(b: Backend, tag: &str) {
    let pair = Pair::new(tag);
    let mut rx = open_rx(b, &pair.b(), "vb");
    bricks_netns::ip(&["-n", &pair.b(), "link", "del", "vb"]).unwrap();
    let t = Instant::now();
    let mut gone = false;
    while !gone && t.elapsed() < Duration::from_secs(3) {
        for q in rx.iter_mut() {
            let mut batch = Batch::new();
            if let Err(DeviceError::Gone(_)) = q.recv(&mut batch, 32) {
                gone = true;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(gone, "{b:?}: a deleted interface was not reported gone");
}

macro_rules! suite {
    ($($name:ident => $backend:expr, $tag:literal;)*) => {$(
        mod $name {
            use super::*;
            #[test]
            fn frames_cross() {
                if skip_unless_root(concat!(stringify!($name), "::frames_cross")).is_none() {
                    frames_cross_byte_for_byte_in_flow_order($backend, concat!($tag, "f"));
                }
            }
            #[test]
            fn recv_max() {
                if skip_unless_root(concat!(stringify!($name), "::recv_max")).is_none() {
                    recv_takes_at_most_max($backend, concat!($tag, "m"));
                }
            }
            #[test]
            fn full_ring() {
                if skip_unless_root(concat!(stringify!($name), "::full_ring")).is_none() {
                    full_transmit_ring_drops_and_counts($backend, concat!($tag, "r"));
                }
            }
            #[test]
            fn gone() {
                if skip_unless_root(concat!(stringify!($name), "::gone")).is_none() {
                    a_deleted_interface_is_gone($backend, concat!($tag, "g"));
                }
            }
        }
    )*};
}

suite! {
    af_xdp => Backend::Xdp, "cx";
    af_packet => Backend::Packet, "cp";
}
