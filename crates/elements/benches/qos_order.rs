//! The ordering queues as elements, as they fill: one push of a 32-packet
//! batch and one pull of 32 packets per iteration, with n = 10, 100,
//! 1,000 and 10,000 packets held, so the time is per packet through the
//! element's push and pull, batch hand-over included. Deadlines are
//! stamped like VirtualClock's, up to 500 ms ahead of a clock that moves
//! 100 ns a packet; destinations are spread over the address space
//! (HashFIFOQueue).
//!
//! ```text
//! cargo bench -p bricks-elements --bench qos_order
//! ```

use bricks_element::{Batch, Edge, ElementClass, Graph, Packet, PortInfo, Processing, WorkerState};
use bricks_elements::qos::{
    binsort_queue, fifo_queue, hash_fifo_queue, heap_queue, mds_binsort_queue,
};
use bricks_packet::Timestamp;
use bricks_runtime::testing::make_element;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::net::Ipv4Addr;

const HELD: [usize; 4] = [10, 100, 1_000, 10_000];
const BATCH: usize = 32;

/// An Ethernet/IPv4/UDP frame to 10.0.0.2 (the network header at 14).
const FRAME: [u8; 46] = [
    2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 32, 0, 0, 0, 0, 64, 17, 0x66, 0xcb,
    10, 0, 0, 1, 10, 0, 0, 2, 0x04, 0xd2, 0x16, 0x2e, 0, 12, 0, 0, 1, 0, 0, 0,
];

struct Clock {
    now: u64,
    x: u64,
}

impl Clock {
    #[inline(always)]
    fn deadline(&mut self) -> u64 {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        self.now += 100;
        self.now + self.x % 500_000_000
    }
}

fn bench_class(c: &mut Criterion, class: &ElementClass, args: &str) {
    let mut g = c.benchmark_group(format!("qos_element/{}", class.name));
    g.throughput(Throughput::Elements(BATCH as u64));
    for n in HELD {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Pull],
        };
        let args = format!("{}, {args}", n + 2 * BATCH);
        let dut = make_element(class, args.trim_end_matches(", "), &ports).unwrap();
        let graph = Graph::new(
            vec![dut],
            vec![class.name.into()],
            vec![Box::new([Edge::NONE])],
            vec![Box::new([Edge::NONE])],
        );
        let mut worker = WorkerState::new(0, 1);
        let mut clock = Clock {
            now: 1_000_000_000,
            x: 0x9e37_79b9_7f4a_7c15,
        };
        let mut batch = Batch::new();
        // Fill to n.
        let mut left = n;
        while left > 0 {
            let k = left.min(BATCH);
            Packet::alloc_batch(&mut batch, k, |p| {
                p.set_frame(&FRAME).unwrap();
                p.set_network_header(14);
                p.anno_mut().deadline = clock.deadline();
                p.anno_mut().dst_ip = Ipv4Addr::from(clock.x as u32 | 1);
            });
            worker.now = Timestamp(clock.now);
            graph.with_element(0, &mut worker, |e, cx| e.push(0, &mut batch, cx));
            left -= k;
        }
        let mut out = Batch::new();
        Packet::alloc_batch(&mut batch, BATCH, |p| {
            p.set_frame(&FRAME).unwrap();
            p.set_network_header(14);
        });
        g.bench_with_input(BenchmarkId::new("push+pull", n), &n, |b, _| {
            b.iter(|| {
                for p in batch.iter_mut() {
                    p.anno_mut().deadline = clock.deadline();
                    p.anno_mut().dst_ip = Ipv4Addr::from(clock.x as u32 | 1);
                }
                worker.now = Timestamp(clock.now);
                graph.with_element(0, &mut worker, |e, cx| {
                    e.push(0, &mut batch, cx);
                    e.pull(0, &mut out, BATCH, cx);
                });
                // The pulled packets go round again.
                std::mem::swap(&mut batch, &mut out);
                black_box(batch.len())
            })
        });
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_class(c, &fifo_queue::CLASS, "");
    bench_class(c, &heap_queue::CLASS, "");
    bench_class(c, &binsort_queue::CLASS, "");
    bench_class(c, &mds_binsort_queue::CLASS, "REPLICAS 4");
    bench_class(c, &hash_fifo_queue::CLASS, "REPLICAS 4");
}

criterion_group! {
    name = qos_order;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1));
    targets = benches
}
criterion_main!(qos_order);
