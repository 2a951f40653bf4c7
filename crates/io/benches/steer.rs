//! Software traffic splitting: what the serial-NIC dispatcher pays per
//! packet.
//!
//! - `toeplitz`: the Toeplitz hash alone over an IPv4 4-tuple (12 bytes)
//!   and an IPv6 one (36 bytes), table-driven.
//! - `steer`: one frame's worker, from the Ethernet header on: parse,
//!   hash, indirection table (and rule lookups where there are rules).
//! - `classify_batch`: a batch of 32 frames of 32 flows under one snapshot
//!   of the rules.
//! - `handover`: one dispatcher round per iteration on one thread: 32
//!   packets made by a queue (pool buffer, 64-byte copy), classified
//!   (serial) or not (pipeline), pushed into the rings, read back by the
//!   workers' `RingRx` and dropped. Per packet.
//! - `handover_cross_core`: the same with the workers' side on another
//!   thread, so every packet crosses cores as it does in a router.
//!
//! ```text
//! cargo bench -p bricks-io --bench steer
//! ```

use bricks_io::dispatch::{Dispatcher, Mode, RingRx};
use bricks_io::steer::{Steering, Toeplitz};
use bricks_io::{DeviceError, RxQueue, RxStats};
use bricks_packet::{Batch, Packet};
use bricks_wire::{
    EtherType, EthernetAddress, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Addr, Ipv4Packet,
    Ipv4Repr, Ipv6Addr, Ipv6Packet, Ipv6Repr,
};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BURST: usize = 32;
const WORKERS: usize = 4;

/// A 64-byte Ethernet/IPv4/UDP frame of flow `i` (source address and port
/// vary with it).
fn ipv4_udp(i: u16) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    EthernetRepr {
        src_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x02]),
        dst_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x01]),
        ethertype: EtherType::IPV4,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    Ipv4Repr {
        src_addr: Ipv4Addr::new(10, 0, (i >> 8) as u8, i as u8),
        dst_addr: Ipv4Addr::new(192, 0, 2, 1),
        next_header: IpProtocol::UDP,
        payload_len: 30,
        hop_limit: 64,
        dscp_ecn: 0,
        ident: 0,
        dont_frag: true,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut f[14..]));
    f[34..36].copy_from_slice(&(1024 + i).to_be_bytes());
    f[36..38].copy_from_slice(&53u16.to_be_bytes());
    f[38..40].copy_from_slice(&30u16.to_be_bytes());
    f
}

/// An 86-byte Ethernet/IPv6/TCP frame.
fn ipv6_tcp(i: u16) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 40 + 20 + 12];
    EthernetRepr {
        src_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x02]),
        dst_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x01]),
        ethertype: EtherType::IPV6,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    Ipv6Repr {
        src_addr: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, i),
        dst_addr: Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1),
        next_header: IpProtocol::TCP,
        payload_len: 32,
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut Ipv6Packet::new_unchecked(&mut f[14..]));
    f[54..56].copy_from_slice(&(1024 + i).to_be_bytes());
    f[56..58].copy_from_slice(&443u16.to_be_bytes());
    f[66] = 5 << 4;
    f
}

/// A receive queue that serves the same frames round-robin, `BURST` at a
/// time, while `budget` allows (unbounded when it is `u64::MAX`) and,
/// when it has a `window`, while fewer than that many of the packets it
/// served are still unread (`served` minus `consumed`): a sender with flow
/// control, so that the cross-core figure is the hand-over's rate, not the
/// rate of dropping at a full ring.
struct Replay {
    frames: Vec<Vec<u8>>,
    next: usize,
    budget: Arc<AtomicU64>,
    window: Option<(u64, Arc<AtomicU64>, Arc<AtomicU64>)>,
}

impl RxQueue for Replay {
    fn ifname(&self) -> &str {
        "eth0"
    }
    fn queue(&self) -> u32 {
        0
    }
    fn backend(&self) -> &'static str {
        "replay"
    }
    fn recv(&mut self, batch: &mut Batch, max: usize) -> Result<usize, DeviceError> {
        let budget = self.budget.load(Ordering::Relaxed);
        let mut n = (max as u64).min(budget) as usize;
        if let Some((window, served, consumed)) = &self.window {
            let in_flight = served.load(Ordering::Relaxed) - consumed.load(Ordering::Acquire);
            n = n.min(window.saturating_sub(in_flight) as usize);
            served.fetch_add(n as u64, Ordering::Relaxed);
        }
        if budget != u64::MAX {
            self.budget.fetch_sub(n as u64, Ordering::Relaxed);
        }
        let (frames, next) = (&self.frames, &mut self.next);
        Packet::alloc_batch(batch, n, |p| {
            p.set_frame(&frames[*next]).unwrap();
            *next = (*next + 1) % frames.len();
        });
        Ok(n)
    }
    fn stats(&self) -> RxStats {
        RxStats::default()
    }
}

fn toeplitz(c: &mut Criterion) {
    let t = Toeplitz::new(Default::default());
    let v4: [u8; 12] = [66, 9, 149, 187, 161, 142, 100, 80, 0x0a, 0xea, 0x06, 0xe6];
    let v6: [u8; 36] = core::array::from_fn(|i| (i * 7 + 3) as u8);
    let mut g = c.benchmark_group("toeplitz");
    g.throughput(Throughput::Elements(1));
    g.bench_function("ipv4_4tuple_12B", |b| b.iter(|| t.hash(black_box(&v4))));
    g.bench_function("ipv6_4tuple_36B", |b| b.iter(|| t.hash(black_box(&v6))));
    g.finish();
}

fn steer(c: &mut Criterion) {
    let s = Steering::new(WORKERS);
    let (v4, v6) = (ipv4_udp(7), ipv6_tcp(7));
    let mut g = c.benchmark_group("steer");
    g.throughput(Throughput::Elements(1));
    {
        let rules = s.rules();
        g.bench_function("ipv4_udp_rss", |b| {
            b.iter(|| rules.worker_for(black_box(&v4)))
        });
        g.bench_function("ipv6_tcp_rss", |b| {
            b.iter(|| rules.worker_for(black_box(&v6)))
        });
    }
    // 1,000 flow rules and 16 MAC rules, none matching: the RSS answer
    // after both lookups.
    for i in 0..1000u16 {
        s.apply(&format!(
            "flow udp 172.16.{}.{}:1 192.0.2.1:53 1",
            i >> 8,
            i & 0xff
        ))
        .unwrap();
    }
    for i in 0..16 {
        s.apply(&format!("mac 02:00:00:00:01:{i:02x} 2")).unwrap();
    }
    {
        let rules = s.rules();
        g.bench_function("ipv4_udp_1000_flows_16_macs", |b| {
            b.iter(|| rules.worker_for(black_box(&v4)))
        });
    }
    // Through the shared handle: one snapshot load per packet.
    g.bench_function("ipv4_udp_via_steering_handle", |b| {
        b.iter(|| s.worker_for(black_box(&v4)))
    });
    g.finish();
}

fn classify_batch(c: &mut Criterion) {
    let s = Steering::new(WORKERS);
    let mut batch = Batch::new();
    for i in 0..BURST as u16 {
        batch
            .push(Packet::from_slice(&ipv4_udp(i)).unwrap())
            .unwrap();
    }
    let mut out = [0u8; BURST];
    let mut g = c.benchmark_group("classify_batch");
    g.throughput(Throughput::Elements(BURST as u64));
    g.bench_function("ipv4_udp_32", |b| {
        b.iter(|| {
            s.classify_batch(black_box(&batch), &mut out);
            black_box(&out);
        })
    });
    let mut batch6 = Batch::new();
    for i in 0..BURST as u16 {
        batch6
            .push(Packet::from_slice(&ipv6_tcp(i)).unwrap())
            .unwrap();
    }
    g.bench_function("ipv6_tcp_32", |b| {
        b.iter(|| {
            s.classify_batch(black_box(&batch6), &mut out);
            black_box(&out);
        })
    });
    g.finish();
}

fn dispatcher(
    mode: Mode,
    budget: Arc<AtomicU64>,
    window: Option<(u64, Arc<AtomicU64>, Arc<AtomicU64>)>,
) -> (Dispatcher, Vec<RingRx>) {
    let mut d = Dispatcher::new(mode, WORKERS, Arc::new(Steering::new(WORKERS)), 4096);
    // Pipeline needs one queue per worker to spread: four queues replaying
    // the same flows.
    let queues = match mode {
        Mode::Serial => 1,
        Mode::Pipeline => WORKERS,
    };
    let queues: Vec<Box<dyn RxQueue>> = (0..queues)
        .map(|_| {
            Box::new(Replay {
                frames: (0..64).map(ipv4_udp).collect(),
                next: 0,
                budget: budget.clone(),
                window: window.clone(),
            }) as Box<dyn RxQueue>
        })
        .collect();
    let rx = d.add_device("eth0", queues);
    (d, rx)
}

fn handover(c: &mut Criterion) {
    let mut g = c.benchmark_group("handover");
    for mode in [Mode::Serial, Mode::Pipeline] {
        let (mut d, mut rx) = dispatcher(mode, Arc::new(AtomicU64::new(u64::MAX)), None);
        let per_round = match mode {
            Mode::Serial => BURST,
            Mode::Pipeline => BURST * WORKERS,
        };
        g.throughput(Throughput::Elements(per_round as u64));
        let mut b2 = Batch::new();
        g.bench_function(format!("{mode}_same_thread"), |b| {
            b.iter(|| {
                let n = d.poll(BURST);
                let mut got = 0;
                for r in rx.iter_mut() {
                    got += r.recv(&mut b2, 256).unwrap();
                    b2.clear();
                }
                assert_eq!(n, got);
            })
        });
        assert_eq!(d.stats().dropped(), 0);
    }
    g.finish();
}

fn handover_cross_core(c: &mut Criterion) {
    let mut g = c.benchmark_group("handover_cross_core");
    g.throughput(Throughput::Elements(1));
    for mode in [Mode::Serial, Mode::Pipeline] {
        let budget = Arc::new(AtomicU64::new(0));
        let consumed = Arc::new(AtomicU64::new(0));
        // At most half a ring's worth in flight over all queues and
        // workers: no ring ever fills.
        let window = (2048, Arc::new(AtomicU64::new(0)), consumed.clone());
        let (mut d, mut rx) = dispatcher(mode, budget.clone(), Some(window));
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut b = Batch::new();
                while !stop.load(Ordering::Relaxed) {
                    let mut got = 0;
                    for r in rx.iter_mut() {
                        got += r.recv(&mut b, 256).unwrap();
                        b.clear();
                    }
                    if got > 0 {
                        consumed.fetch_add(got as u64, Ordering::Release);
                    } else {
                        // On a shared machine a spinning side can hold
                        // the core the other one needs.
                        std::thread::yield_now();
                    }
                }
            });
            g.bench_function(format!("{mode}"), |b| {
                b.iter_custom(|iters| {
                    let before = consumed.load(Ordering::Acquire);
                    budget.store(iters, Ordering::Relaxed);
                    let start = Instant::now();
                    while budget.load(Ordering::Relaxed) > 0 {
                        if d.poll(BURST) == 0 {
                            std::thread::yield_now();
                        }
                    }
                    while consumed.load(Ordering::Acquire) - before < iters {
                        std::thread::yield_now();
                    }
                    start.elapsed()
                })
            });
            stop.store(true, Ordering::Relaxed);
        });
        let stats = d.stats();
        println!(
            "handover_cross_core/{mode}: handed {}, dropped at full rings {}",
            stats.handed(),
            stats.dropped()
        );
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    targets = toeplitz, steer, classify_batch, handover, handover_cross_core
}
criterion_main!(benches);
