//! Per-element benchmarks: the time one `push` of a batch takes, per
//! packet, for batches of 1, 32 and 256 64-byte frames.
//!
//! Each benchmark builds the smallest graph that runs one element as the
//! engine would: the element under test, and a [`Sink`] on each of its
//! outputs that drops what it gets. A measured `push` is therefore the
//! element's own work, the batch hand-over to the next element, and the
//! return of the buffers to the pool, the same for every element. The
//! frames are the ones `bricks bench core` uses, so that these figures
//! can be read next to the whole-path figures in BENCHMARKS.md (section
//! "Per element (criterion)").
//!
//! ```text
//! cargo bench -p bricks-elements --bench elements
//! ```

use bricks_element::{
    Batch, Context, Edge, Element, ElementClass, Graph, Packet, PortInfo, Processing, Stats,
    WorkerState,
};
use bricks_elements::{classify, ether, ip, nat, standard};
use bricks_runtime::testing::make_element;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// A 64-byte Ethernet/IPv4/UDP frame from 18.26.4.99 port 1024 to 1.0.0.2
/// port 1025, TTL 64, DF, valid header checksum: `bricks bench core`'s
/// frame.
const FRAME: [u8; 64] = [
    // Ethernet: destination, source, type IPv4.
    0x00, 0x00, 0xc0, 0x3b, 0x71, 0xef, 0x00, 0x20, 0x6a, 0x12, 0x34, 0x56, 0x08, 0x00,
    // IPv4: 20-byte header, total length 50, DF, TTL 64, UDP, checksum.
    0x45, 0x00, 0x00, 0x32, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x23, 0x3d,
    // Source 18.26.4.99, destination 1.0.0.2.
    0x12, 0x1a, 0x04, 0x63, 0x01, 0x00, 0x00, 0x02,
    // UDP: ports 1024 -> 1025, length 30, no checksum.
    0x04, 0x00, 0x04, 0x01, 0x00, 0x1e, 0x00, 0x00, // 22 bytes of payload.
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
];

/// Length of the Ethernet header.
const ETHER_LEN: usize = 14;

/// The frame's IP destination.
const DST: Ipv4Addr = Ipv4Addr::new(1, 0, 0, 2);

const BATCH_SIZES: [usize; 3] = [1, 32, 256];

/// Packets prepared before each timed stretch. Large enough that the two
/// clock reads around a stretch cost well under 1% of it even for the
/// cheapest element; small enough that the prepared packets' touched
/// cache lines (about 200 KiB) stay in L2, as they would for frames a
/// driver has just received.
const PACKETS_PER_STRETCH: usize = 1024;

/// The end of every output: drops the batch and counts what it dropped.
/// The count is one addition per batch; it lets each benchmark check,
/// before timing, that its packets take the path it means to measure.
#[derive(Default)]
struct Sink {
    packets: u64,
}

impl Element for Sink {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
        self.packets += batch.len() as u64;
        batch.clear();
    }

    fn stats(&self, stats: &mut Stats) {
        stats.counter("packets", self.packets);
    }
}

/// What the element under test expects to find in its input packets.
#[derive(Debug, Clone, Copy)]
enum Input {
    /// The Ethernet frame as received.
    Frame,
    /// Ethernet header stripped (it stays in the headroom), no annotations:
    /// what `Strip(14)` hands to `CheckIPHeader`.
    Stripped,
    /// Stripped, with the network header and destination annotations set:
    /// what `CheckIPHeader` hands to the rest of an IP router.
    Checked,
}

impl Input {
    /// Fills the empty `batch` with `n` packets from the pool.
    fn fill(self, batch: &mut Batch, n: usize) {
        Packet::alloc_batch(batch, n, |p| {
            p.set_frame(&FRAME).expect("a 64-byte frame fits a buffer");
            match self {
                Input::Frame => {}
                Input::Stripped => p.pull_front(ETHER_LEN),
                Input::Checked => {
                    p.pull_front(ETHER_LEN);
                    p.set_network_header(0);
                    p.anno_mut().dst_ip = DST;
                }
            }
        });
    }
}

/// One element wired to sinks, with the worker state a push needs.
struct Bench {
    graph: Graph,
    worker: WorkerState,
}

impl Bench {
    /// Element 0 is `class(args)` with one push input and `ports.outputs`;
    /// each push output `p` leads to a sink at index `p + 1`, and a pull
    /// output to a sink (at the same index) that pulls from it.
    fn new(class: &ElementClass, args: &str, ports: PortInfo) -> Bench {
        let dut = make_element(class, args, &ports)
            .unwrap_or_else(|e| panic!("{}({args}): {e}", class.name));
        let mut elements = vec![dut];
        let mut names = vec![class.name.to_string()];
        let mut dut_outputs = Vec::new();
        let mut inputs: Vec<Box<[Edge]>> = vec![Box::new([Edge::NONE])];
        for (p, processing) in ports.outputs.iter().enumerate() {
            let sink = Edge {
                element: elements.len() as u32,
                port: 0,
            };
            let upstream = Edge {
                element: 0,
                port: p as u32,
            };
            match processing {
                Processing::Pull => {
                    dut_outputs.push(Edge::NONE);
                    inputs.push(Box::new([upstream]));
                }
                _ => {
                    dut_outputs.push(sink);
                    inputs.push(Box::new([]));
                }
            }
            elements.push(Box::new(Sink::default()) as Box<dyn Element>);
            names.push(format!("sink{p}"));
        }
        let mut outputs: Vec<Box<[Edge]>> = vec![dut_outputs.into_boxed_slice()];
        outputs.extend((1..elements.len()).map(|_| Box::new([]) as Box<[Edge]>));
        Bench {
            graph: Graph::new(elements, names, outputs, inputs),
            worker: WorkerState::new(0, 1),
        }
    }

    /// A push element with `outputs` push outputs.
    fn push_element(class: &ElementClass, args: &str, outputs: usize) -> Bench {
        Bench::new(
            class,
            args,
            PortInfo {
                inputs: vec![Processing::Push],
                outputs: vec![Processing::Push; outputs],
            },
        )
    }

    /// Pushes `batch` into the element under test, as the engine does.
    #[inline]
    fn push(&mut self, batch: &mut Batch) {
        self.graph
            .with_element(0, &mut self.worker, |e, cx| e.push(0, batch, cx));
    }

    /// Pulls up to `max` packets from output `port` through its sink, and
    /// drops them; returns how many there were.
    #[inline]
    fn pull(&mut self, port: usize, out: &mut Batch, max: usize) -> usize {
        self.graph
            .with_element(port + 1, &mut self.worker, |_, cx| cx.pull(0, out, max));
        let n = out.len();
        out.clear();
        n
    }

    /// Packets the sink on output `port` has dropped so far.
    fn sunk(&self, port: usize) -> u64 {
        self.graph
            .stats(port + 1)
            .get("packets")
            .expect("a sink counts")
    }
}

/// Times `op` on batches of `n` packets prepared by `input`, refilling a
/// reusable set of batches between timed stretches.
///
/// Criterion's `iter_batched` with `BatchSize::SmallInput` would prepare a
/// tenth of a sample's iterations at once: with 256 packets per batch that
/// is over a million 2 KiB buffers, far beyond the pool and the caches.
/// Refilling a fixed set of batches keeps memory small and warm, and only
/// the pushes are inside the timed stretch.
fn time_batches(
    iters: u64,
    n: usize,
    input: Input,
    batches: &mut [Batch],
    mut op: impl FnMut(&mut Batch),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters as usize;
    while left > 0 {
        let k = left.min(batches.len());
        for b in &mut batches[..k] {
            input.fill(b, n);
        }
        let start = Instant::now();
        for b in &mut batches[..k] {
            op(b);
        }
        total += start.elapsed();
        left -= k;
    }
    total
}

fn batches_per_stretch(n: usize) -> usize {
    (PACKETS_PER_STRETCH / n).max(1)
}

/// Benchmarks one push element: `input` packets in, all expected to leave
/// by output `expect`.
fn bench_push(
    c: &mut Criterion,
    label: &str,
    mut make: impl FnMut() -> Bench,
    input: Input,
    expect: usize,
) {
    let mut group = c.benchmark_group(label);
    for n in BATCH_SIZES {
        let mut bench = make();
        let mut batches: Vec<Batch> = (0..batches_per_stretch(n)).map(|_| Batch::new()).collect();
        // The element must pass every packet to the output whose path is
        // meant to be measured, not a drop or error path.
        input.fill(&mut batches[0], n);
        bench.push(&mut batches[0]);
        assert_eq!(
            bench.sunk(expect),
            n as u64,
            "{label}: packets did not leave by output {expect}"
        );
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter_custom(|iters| {
                time_batches(iters, n, input, &mut batches, |batch| bench.push(batch))
            })
        });
    }
    group.finish();
}

/// Queue: a push of the batch, then a pull of the same number of packets
/// from its pull output.
fn bench_queue(c: &mut Criterion) {
    let make = || {
        Bench::new(
            &standard::queue::QUEUE,
            "",
            PortInfo {
                inputs: vec![Processing::Push],
                outputs: vec![Processing::Pull],
            },
        )
    };
    let mut group = c.benchmark_group("Queue");
    for n in BATCH_SIZES {
        let mut bench = make();
        let mut batches: Vec<Batch> = (0..batches_per_stretch(n)).map(|_| Batch::new()).collect();
        let mut out = Batch::new();
        Input::Frame.fill(&mut batches[0], n);
        bench.push(&mut batches[0]);
        assert_eq!(
            bench.pull(0, &mut out, n),
            n,
            "Queue: pulled fewer than pushed"
        );
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter_custom(|iters| {
                time_batches(iters, n, Input::Frame, &mut batches, |batch| {
                    bench.push(batch);
                    bench.pull(0, &mut out, n);
                })
            })
        });
    }
    group.finish();
}

/// 15 /16 routes to output 0 and 1.0.0.0/8 to output 1, as in
/// `bricks bench core`'s ipv4 workload: the frame's destination misses the
/// /16 level and matches at /8.
fn routes() -> String {
    let mut routes: Vec<String> = (0..15).map(|i| format!("10.{i}.0.0/16 0")).collect();
    routes.push("1.0.0.0/8 1".into());
    routes.join(", ")
}

fn elements(c: &mut Criterion) {
    let header: &[u8; 20] = FRAME[ETHER_LEN..ETHER_LEN + 20]
        .try_into()
        .expect("20 bytes");
    assert_eq!(
        bricks_wire::checksum::header20(header),
        0xffff,
        "FRAME's IP checksum"
    );

    let push = Bench::push_element;
    const MACS: &str = "02:00:00:00:00:01, 02:00:00:00:00:02";
    bench_push(
        c,
        "EtherRewrite",
        || push(&ether::ether_rewrite::CLASS, MACS, 1),
        Input::Frame,
        0,
    );
    bench_push(
        c,
        "EtherEncap",
        || push(&ether::ether_encap::CLASS, &format!("0x0800, {MACS}"), 1),
        Input::Stripped,
        0,
    );
    bench_push(
        c,
        "Strip",
        || push(&standard::strip::STRIP, "14", 1),
        Input::Frame,
        0,
    );
    bench_push(
        c,
        "CheckIPHeader",
        || push(&ip::checkipheader::CLASS, "", 1),
        Input::Stripped,
        0,
    );
    bench_push(
        c,
        "DecIPTTL",
        || push(&ip::decipttl::CLASS, "", 1),
        Input::Checked,
        0,
    );
    bench_push(
        c,
        "StaticIPLookup",
        || push(&ip::staticiplookup::CLASS, &routes(), 2),
        Input::Checked,
        1,
    );
    bench_push(
        c,
        "Classifier",
        || {
            push(
                &classify::classifier::CLASS,
                "12/0806 20/0001, 12/0806 20/0002, 12/0800, -",
                4,
            )
        },
        Input::Frame,
        2,
    );
    // The frame goes to UDP port 1025: every test of the pattern runs and
    // the packet leaves by the `-` output.
    bench_push(
        c,
        "IPClassifier",
        || push(&classify::ip_classifier::CLASS, "udp dst port 5000, -", 2),
        Input::Checked,
        1,
    );
    bench_push(
        c,
        "Counter",
        || push(&standard::counter::CLASS, "", 1),
        Input::Frame,
        0,
    );
    // One established mapping: every packet is looked up in the shared
    // table, its source address and port rewritten with the IP and UDP
    // checksums patched, and sent on (the first batch made the mapping).
    bench_push(
        c,
        "IPRewriter",
        || {
            push(
                &nat::iprewriter::CLASS,
                "pattern 1.0.0.1 1024-65535# - - 0 1",
                2,
            )
        },
        Input::Checked,
        0,
    );
    bench_queue(c);
    bench_vrdemux(c);
    bench_l2balancer(c);
}

/// L2Balancer in DTX mode (the paper's §III-A): one front port whose MAC
/// is the frame's destination, one back port, per-packet round robin over
/// 4 live routers, as `bricks multistage` configures it. Each frame gets
/// its destination MAC rewritten and the batch leaves whole by the back
/// port (output 1).
fn bench_l2balancer(c: &mut Criterion) {
    use bricks_elements::multistage::{l2_balancer, router_mac, Probe, ProbeKind};
    let make = || {
        let mut bench = Bench::new(
            &l2_balancer::CLASS,
            "FRONT 0, ROUTERS 4, POLICY rr, FRONT_MAC 00:00:c0:3b:71:ef",
            PortInfo {
                inputs: vec![Processing::Push; 2],
                outputs: vec![Processing::Push; 2],
            },
        );
        // The four routers answer a probe: all live.
        let mut replies = Batch::new();
        for r in 0..4 {
            let reply = Probe {
                kind: ProbeKind::Reply,
                balancer: 0,
                router: r,
                front: 0,
                seq: 0,
            };
            let frame = reply.frame([0x02, 0x4d, 0x42, 0, 0, 0], router_mac(r, 0));
            let _ = replies.push(Packet::from_slice(&frame).expect("a 60-byte frame"));
        }
        bench
            .graph
            .with_element(0, &mut bench.worker, |e, cx| e.push(1, &mut replies, cx));
        bench
    };
    bench_push(c, "L2Balancer/dtx-rr-4", make, Input::Frame, 1);
}

/// VRDemux with 1 and 1,024 virtual routers, by VLAN ID and by MAC
/// address: the frames of a batch go to routers in turn (frame `i` of the
/// stretch to router `i mod routers`), so with 1,024 routers no two
/// frames of a batch share an output and every batch is split, the most
/// expensive case; with one router the batch moves on whole.
fn bench_vrdemux(c: &mut Criterion) {
    use bricks_elements::vrouter::vr_demux::CLASS as VRDEMUX;
    let mac = |i: usize| [0x02, 0, 0, 0, (i >> 8) as u8, i as u8];
    for (mode, routers) in [("vlan", 1), ("vlan", 1024), ("mac", 1), ("mac", 1024)] {
        let mut pairs = Vec::new();
        let mut frames = Vec::new();
        for i in 0..routers {
            let mut f = FRAME.to_vec();
            if mode == "vlan" {
                let vid = (i + 1) as u16;
                f.splice(12..12, [0x81, 0x00, (vid >> 8) as u8, vid as u8]);
                f.truncate(FRAME.len());
                pairs.push(format!("{vid} {i}"));
            } else {
                let m = mac(i);
                f[..6].copy_from_slice(&m);
                let text: Vec<String> = m.iter().map(|b| format!("{b:02x}")).collect();
                pairs.push(format!("{} {i}", text.join(":")));
            }
            frames.push(f);
        }
        let args = format!("BY {mode}, {}", pairs.join(", "));
        let mut group = c.benchmark_group(format!("VRDemux/{mode}/{routers}"));
        for n in BATCH_SIZES {
            let mut bench = Bench::push_element(&VRDEMUX, &args, routers);
            let mut batches: Vec<Batch> =
                (0..batches_per_stretch(n)).map(|_| Batch::new()).collect();
            let mut next = 0usize;
            let mut fill = |b: &mut Batch| {
                Packet::alloc_batch(b, n, |p| {
                    p.set_frame(&frames[next % frames.len()])
                        .expect("a 64-byte frame fits a buffer");
                    next += 1;
                })
            };
            // Every frame must reach a router, none be dropped.
            fill(&mut batches[0]);
            bench.push(&mut batches[0]);
            let sunk: u64 = (0..routers).map(|o| bench.sunk(o)).sum();
            assert_eq!(sunk, n as u64, "VRDemux({mode}): frames were dropped");
            group.throughput(Throughput::Elements(n as u64));
            group.bench_function(BenchmarkId::from_parameter(n), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    let mut left = iters as usize;
                    while left > 0 {
                        let k = left.min(batches.len());
                        for b in &mut batches[..k] {
                            fill(b);
                        }
                        let start = Instant::now();
                        for b in &mut batches[..k] {
                            bench.push(b);
                        }
                        total += start.elapsed();
                        left -= k;
                    }
                    total
                })
            });
        }
        group.finish();
    }
}

/// Short warm-up and measurement: 30 benchmarks in about three minutes on
/// a 2-core machine, setup included.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = elements
}
criterion_main!(benches);
