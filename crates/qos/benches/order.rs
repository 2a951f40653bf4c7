//! Packet ordering structures as the queue fills: one enqueue plus one
//! dequeue per iteration with n = 10, 100, 1,000 and 10,000 items held
//! (Hardekopf et al. §5: the heap's cost grows with log n, BinSort's and
//! the FIFO's stay flat). Deadlines are Virtual-Clock-like: the clock
//! moves 100 ns per iteration and each new deadline lies up to 500 ms
//! ahead of it, so BinSort's 1 ms bins, 1,024 of them, hold everything.
//!
//! `cargo bench -p bricks-qos --bench order`

use bricks_qos::order::{
    BinSort, BinSortConfig, DeadlineHeap, Fifo, HashFifo, MdsBinSort, Order, Spread,
};
use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

const HELD: [usize; 4] = [10, 100, 1_000, 10_000];

/// A cheap deterministic stream of deadlines.
struct Clock {
    now: u64,
    x: u64,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            now: 1_000_000_000,
            x: 0x9e37_79b9_7f4a_7c15,
        }
    }

    #[inline(always)]
    fn tick(&mut self) -> u64 {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        self.now += 100;
        self.now + self.x % 500_000_000
    }
}

fn run<O: Order<u64>>(c: &mut Criterion, name: &str, make: impl Fn(usize) -> O) {
    let mut g = c.benchmark_group(format!("order/{name}"));
    g.throughput(Throughput::Elements(1));
    for n in HELD {
        let mut o = make(n + 1);
        let mut clock = Clock::new();
        for i in 0..n as u64 {
            let d = clock.tick();
            o.enqueue(i, d, clock.now).unwrap();
        }
        g.bench_with_input(BenchmarkId::new("enq+deq", n), &n, |b, _| {
            b.iter(|| {
                let d = clock.tick();
                let _ = o.enqueue(black_box(7), d, clock.now);
                black_box(o.dequeue(clock.now))
            })
        });
    }
    g.finish();
}

fn hash_fifo(c: &mut Criterion) {
    let mut g = c.benchmark_group("order/hash_fifo4");
    g.throughput(Throughput::Elements(1));
    for n in HELD {
        let mut o = HashFifo::<_>::new(4 * (n + 1), 4).unwrap();
        let mut clock = Clock::new();
        for i in 0..n as u64 {
            let d = clock.tick();
            o.enqueue_hashed(d as u32, i, d, clock.now).unwrap();
        }
        g.bench_with_input(BenchmarkId::new("enq+deq", n), &n, |b, _| {
            let mut r = 0usize;
            b.iter(|| {
                let d = clock.tick();
                let _ = o.enqueue_hashed((d >> 3) as u32, 7, d, clock.now);
                r = (r + 1) & 3;
                black_box(o.dequeue_among(r % 2, 2, clock.now))
            })
        });
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    run(c, "fifo", |cap| Fifo::<_>::new(cap).unwrap());
    run(c, "heap", |cap| DeadlineHeap::<_>::new(cap).unwrap());
    run(c, "binsort", |cap| {
        BinSort::<_>::new(BinSortConfig {
            capacity: cap,
            ..Default::default()
        })
        .unwrap()
    });
    run(c, "mds_binsort4_global", |cap| {
        MdsBinSort::<_>::new(
            BinSortConfig {
                capacity: 4 * cap,
                ..Default::default()
            },
            4,
            Spread::RoundRobin,
        )
        .unwrap()
    });
    hash_fifo(c);
}

criterion_group! {
    name = order;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1));
    targets = benches
}
/// `QOS_ORDER_RAW=<structure>[+memrefs]:<n>:<pairs>` runs `pairs` enqueue +
/// dequeue pairs with `n` held and nothing else, for counting cycles and
/// instructions with `perf stat -e cycles:u,instructions:u` (the
/// difference between `pairs` and 0 is the structure's cost; unlike wall
/// time, user-mode cycles do not count time other processes took).
fn raw(spec: &str) {
    let mut it = spec.split(':');
    let (Some(name), Some(n), Some(pairs)) = (it.next(), it.next(), it.next()) else {
        panic!("QOS_ORDER_RAW=<fifo|heap|binsort|mds>[+memrefs]:<n>:<pairs>");
    };
    let n: usize = n.parse().unwrap();
    let pairs: u64 = pairs.parse().unwrap();
    fn go<O: Order<u64>>(mut o: O, n: usize, pairs: u64) {
        let mut clock = Clock::new();
        for i in 0..n as u64 {
            let d = clock.tick();
            o.enqueue(i, d, clock.now).unwrap();
        }
        for _ in 0..pairs {
            let d = clock.tick();
            let _ = o.enqueue(black_box(7), d, clock.now);
            black_box(o.dequeue(clock.now));
        }
        // Read, so that the counting is not optimised away.
        black_box(o.counters());
    }
    let cfg = BinSortConfig {
        capacity: 4 * (n + 1),
        ..Default::default()
    };
    match name {
        "fifo" => go(Fifo::<_>::new(n + 1).unwrap(), n, pairs),
        "heap" => go(DeadlineHeap::<_>::new(n + 1).unwrap(), n, pairs),
        "binsort" => go(BinSort::<_>::new(cfg).unwrap(), n, pairs),
        "mds" => go(
            MdsBinSort::<_>::new(cfg, 4, Spread::RoundRobin).unwrap(),
            n,
            pairs,
        ),
        // The counting instances, for what counting costs.
        "fifo+memrefs" => go(Fifo::<_, true>::new(n + 1).unwrap(), n, pairs),
        "heap+memrefs" => go(DeadlineHeap::<_, true>::new(n + 1).unwrap(), n, pairs),
        "binsort+memrefs" => go(BinSort::<_, true>::new(cfg).unwrap(), n, pairs),
        "mds+memrefs" => go(
            MdsBinSort::<_, true>::new(cfg, 4, Spread::RoundRobin).unwrap(),
            n,
            pairs,
        ),
        o => panic!("unknown structure {o}"),
    }
}

fn main() {
    if let Ok(spec) = std::env::var("QOS_ORDER_RAW") {
        raw(&spec);
        return;
    }
    order();
    Criterion::default().configure_from_args().final_summary();
}
