//! The software dispatcher: one core reads every receive queue and hands
//! each packet to a worker through a single-producer single-consumer ring.
//!
//! This is what bricks does where the device cannot split traffic itself.
//! Two modes, both from the papers:
//!
//! - [`Mode::Serial`], the NIC paper's "serial NIC" (§4.2): the device is a
//!   FIFO, and the dispatcher classifies every packet in software with
//!   [`Steering`] (flow rules, MAC rules, RSS) to pick its worker.
//! - [`Mode::Pipeline`], RouteBricks' pipeline scenario (§4.2, Fig. 6a): no
//!   per-packet classification, each batch read from receive queue `q` goes
//!   whole to worker `q % workers`.
//!
//! RouteBricks measured what a hand-over between cores costs (up to 64% of
//! the forwarding rate), and the NIC paper found software splitting 3x
//! slower than hardware queues; both modes exist to be measured against
//! the default, where each worker owns its own device queues.
//!
//! Each worker reads its ring through a [`RingRx`], which implements
//! [`RxQueue`], so a worker's `FromDevice` reads it like a device queue.
//! The dispatcher never blocks: a packet that finds its ring full is
//! dropped and counted, as a NIC drops when its descriptor ring is full.
//!
//! Buffers cross cores too. A packet's buffer comes from the dispatcher
//! thread's pool and goes back to the pool of the worker that drops it
//! (`bricks_packet`'s pools are per thread), so left alone the dispatcher
//! would allocate and zero a fresh buffer for every packet while each
//! worker's pool overflowed into the allocator: in the benchmark that
//! costs far more than the hand-over itself. So each ring has a twin going
//! the other way: a worker that reads `n` packets sends up to `n` empty
//! buffers back from its pool (keeping [`SPARE_RESERVE`] for its own use),
//! and the dispatcher takes them into its pool when its own runs low, the
//! way a NIC driver refills its receive ring from the buffers the stack
//! has freed.

use crate::queue::{DeviceError, RxQueue, RxStats};
use crate::steer::Steering;
use bricks_packet::{Batch, Packet, DEFAULT_BURST, MAX_BATCH};
use rtrb::{Consumer, Producer, RingBuffer};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Packets a ring holds unless told otherwise.
pub const DEFAULT_RING_CAPACITY: usize = 4096;

/// Free buffers a worker keeps in its pool before it sends any back to the
/// dispatcher: enough for what its own elements allocate (ICMP errors,
/// copies) in a few batches.
pub const SPARE_RESERVE: usize = 512;

/// The dispatcher takes returned buffers into its pool when it holds fewer
/// free ones than this: a few rounds' worth.
const RECLAIM_BELOW: usize = 4 * MAX_BATCH;

/// Empty rounds in a row before the dispatcher naps.
const IDLE_ROUNDS_BEFORE_NAP: u32 = 64;
/// How long it naps: short next to the time a device's receive ring takes
/// to fill (4096 minimum-size frames arrive in about 275 µs at 10 Gb/s),
/// so a burst after a quiet spell finds room.
const NAP: Duration = Duration::from_micros(50);

/// How the dispatcher picks a packet's worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Whole batches from receive queue `q` go to worker `q % workers`.
    Pipeline,
    /// Every packet is classified by the [`Steering`] rules.
    Serial,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Pipeline => "pipeline",
            Mode::Serial => "serial",
        })
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "pipeline" => Ok(Mode::Pipeline),
            "serial" => Ok(Mode::Serial),
            _ => Err(format!(
                "unknown dispatch mode `{s}`: expected pipeline or serial"
            )),
        }
    }
}

/// A worker's end of one ring: the packets the dispatcher read from one
/// interface for this worker.
pub struct RingRx {
    ifname: String,
    worker: u32,
    ring: Consumer<Packet>,
    /// Packets the dispatcher dropped because this ring was full; written
    /// by the dispatcher, read here.
    drops: Arc<AtomicU64>,
    /// Empty buffers on their way back to the dispatcher's pool.
    spares: Producer<Packet>,
    scratch: Batch,
    packets: u64,
    bytes: u64,
}

impl RingRx {
    /// Packets waiting in the ring.
    pub fn len(&self) -> usize {
        self.ring.slots()
    }

    /// Whether no packet is waiting.
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Whether the dispatcher is gone and every packet it handed over has
    /// been read: nothing will ever come out of this ring again.
    pub fn is_closed(&self) -> bool {
        self.ring.is_abandoned() && self.ring.is_empty()
    }

    /// Sends up to `n` free buffers of this thread's pool back to the
    /// dispatcher, keeping [`SPARE_RESERVE`].
    #[inline]
    fn give_back(&mut self, n: usize) {
        let free = bricks_packet::pool_stats().free;
        if free <= SPARE_RESERVE {
            return;
        }
        let k = n.min(free - SPARE_RESERVE);
        // A full return ring means the dispatcher has plenty: keep them.
        let Ok(chunk) = self.spares.write_chunk_uninit(k) else {
            return;
        };
        Packet::alloc_batch(&mut self.scratch, k, |_| {});
        chunk.fill_from_iter(self.scratch.drain());
    }
}

impl RxQueue for RingRx {
    fn ifname(&self) -> &str {
        &self.ifname
    }

    /// The worker this ring feeds.
    fn queue(&self) -> u32 {
        self.worker
    }

    fn backend(&self) -> &'static str {
        "ring"
    }

    /// Moves up to `max` packets from the ring into `batch`, in the order
    /// the dispatcher handed them over. A ring whose dispatcher has stopped
    /// is simply empty: the worker's stop comes from its own engine.
    fn recv(&mut self, batch: &mut Batch, max: usize) -> Result<usize, DeviceError> {
        let n = max.min(batch.remaining()).min(self.ring.slots());
        if n == 0 {
            return Ok(0);
        }
        let Ok(chunk) = self.ring.read_chunk(n) else {
            return Ok(0);
        };
        let mut bytes = 0;
        for p in chunk {
            bytes += p.len() as u64;
            // Cannot fail: `n` is at most the room left in the batch.
            let _ = batch.push(p);
        }
        self.packets += n as u64;
        self.bytes += bytes;
        self.give_back(n);
        Ok(n)
    }

    /// `ring_drops` counts what the dispatcher dropped because this ring
    /// was full.
    fn stats(&self) -> RxStats {
        RxStats {
            packets: self.packets,
            bytes: self.bytes,
            ring_drops: self.drops.load(Ordering::Relaxed),
            oversized: 0,
        }
    }
}

impl fmt::Debug for RingRx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingRx")
            .field("ifname", &self.ifname)
            .field("worker", &self.worker)
            .field("waiting", &self.len())
            .finish()
    }
}

/// One interface the dispatcher reads.
struct Device {
    ifname: String,
    queues: Vec<Box<dyn RxQueue>>,
    /// False once a queue reported its interface gone: not polled again.
    live: Vec<bool>,
    /// One ring per worker, its drop counter, and its twin that brings
    /// empty buffers back.
    rings: Vec<Producer<Packet>>,
    drops: Vec<Arc<AtomicU64>>,
    returns: Vec<Consumer<Packet>>,
    received: u64,
    errors: u64,
    last_error: Option<DeviceError>,
}

/// Counters of one worker's rings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerDispatchStats {
    /// Packets placed in the worker's rings.
    pub handed: u64,
    /// Packets dropped because one of its rings was full.
    pub dropped: u64,
}

/// Counters of one interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceDispatchStats {
    /// The interface.
    pub ifname: String,
    /// Packets read from its queues.
    pub received: u64,
    /// Failed reads.
    pub errors: u64,
    /// The last failure, if any.
    pub last_error: Option<DeviceError>,
}

/// The dispatcher's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DispatchStats {
    /// Per worker, by index.
    pub workers: Vec<WorkerDispatchStats>,
    /// Per interface, in the order they were added.
    pub devices: Vec<DeviceDispatchStats>,
}

impl DispatchStats {
    /// Packets read from every interface.
    pub fn received(&self) -> u64 {
        self.devices.iter().map(|d| d.received).sum()
    }

    /// Packets handed to every worker.
    pub fn handed(&self) -> u64 {
        self.workers.iter().map(|w| w.handed).sum()
    }

    /// Packets dropped at full rings.
    pub fn dropped(&self) -> u64 {
        self.workers.iter().map(|w| w.dropped).sum()
    }
}

/// Reads every receive queue of its interfaces and hands the packets to
/// the workers' rings. It runs on one core of its own.
pub struct Dispatcher {
    mode: Mode,
    workers: usize,
    steering: Arc<Steering>,
    ring_capacity: usize,
    burst: usize,
    devices: Vec<Device>,
    handed: Vec<u64>,
    /// The batch being dispatched, and in serial mode each packet's worker
    /// and the packets sorted per worker: kept here so that a round
    /// allocates nothing.
    batch: Batch,
    classes: [u8; MAX_BATCH],
    staged: Vec<Batch>,
}

impl Dispatcher {
    /// A dispatcher for `workers` workers; in serial mode `steering` picks
    /// each packet's worker, and it can be changed by other threads while
    /// the dispatcher runs. Each ring holds `ring_capacity` packets.
    ///
    /// # Panics
    /// If `workers` is 0, differs from `steering.workers()`, or
    /// `ring_capacity` is 0.
    pub fn new(
        mode: Mode,
        workers: usize,
        steering: Arc<Steering>,
        ring_capacity: usize,
    ) -> Dispatcher {
        assert!(workers > 0, "Dispatcher: no workers");
        assert_eq!(
            workers,
            steering.workers(),
            "Dispatcher: {workers} workers but steering rules for {}",
            steering.workers()
        );
        assert!(ring_capacity > 0, "Dispatcher: rings of 0 packets");
        Dispatcher {
            mode,
            workers,
            steering,
            ring_capacity,
            burst: DEFAULT_BURST,
            devices: Vec::new(),
            handed: vec![0; workers],
            batch: Batch::new(),
            classes: [0; MAX_BATCH],
            staged: match mode {
                Mode::Serial => (0..workers).map(|_| Batch::new()).collect(),
                Mode::Pipeline => Vec::new(),
            },
        }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The steering rules serial mode follows.
    pub fn steering(&self) -> &Arc<Steering> {
        &self.steering
    }

    /// Sets how many packets [`run`](Self::run) reads from a queue per
    /// visit (RouteBricks' kp; 32 by default, at most 256).
    pub fn set_burst(&mut self, kp: usize) {
        self.burst = kp.clamp(1, MAX_BATCH);
    }

    /// Takes over the receive queues of `ifname` and returns the workers'
    /// ends of its rings, one per worker in worker order.
    pub fn add_device(&mut self, ifname: &str, queues: Vec<Box<dyn RxQueue>>) -> Vec<RingRx> {
        let mut rings = Vec::with_capacity(self.workers);
        let mut drops = Vec::with_capacity(self.workers);
        let mut returns = Vec::with_capacity(self.workers);
        let mut ends = Vec::with_capacity(self.workers);
        for worker in 0..self.workers {
            let (producer, consumer) = RingBuffer::new(self.ring_capacity);
            let (spares, returned) = RingBuffer::new(self.ring_capacity);
            let dropped = Arc::new(AtomicU64::new(0));
            rings.push(producer);
            drops.push(dropped.clone());
            returns.push(returned);
            ends.push(RingRx {
                ifname: ifname.to_string(),
                worker: worker as u32,
                ring: consumer,
                drops: dropped,
                spares,
                scratch: Batch::new(),
                packets: 0,
                bytes: 0,
            });
        }
        self.devices.push(Device {
            ifname: ifname.to_string(),
            live: vec![true; queues.len()],
            queues,
            rings,
            drops,
            returns,
            received: 0,
            errors: 0,
            last_error: None,
        });
        ends
    }

    /// One round: reads up to `kp` packets from every queue of every
    /// interface and hands them over. Never blocks. Returns how many
    /// packets were read.
    pub fn poll(&mut self, kp: usize) -> usize {
        let kp = kp.clamp(1, MAX_BATCH);
        let Dispatcher {
            mode,
            workers,
            steering,
            devices,
            handed,
            batch,
            classes,
            staged,
            ..
        } = self;
        let mut moved = 0;
        for dev in devices.iter_mut() {
            if bricks_packet::pool_stats().free < RECLAIM_BELOW {
                for ring in &mut dev.returns {
                    reclaim(ring, batch);
                }
            }
            for (q, queue) in dev.queues.iter_mut().enumerate() {
                if !dev.live[q] {
                    continue;
                }
                if let Err(e) = queue.recv(batch, kp) {
                    dev.errors += 1;
                    if matches!(e, DeviceError::Gone(_)) {
                        dev.live[q] = false;
                    }
                    dev.last_error = Some(e);
                }
                let n = batch.len();
                if n == 0 {
                    continue;
                }
                dev.received += n as u64;
                moved += n;
                match mode {
                    Mode::Pipeline => {
                        let w = q % *workers;
                        hand_over(&mut dev.rings[w], batch, &mut handed[w], &dev.drops[w]);
                    }
                    Mode::Serial => {
                        // One snapshot of the rules for the whole batch.
                        steering.classify_batch(batch, &mut classes[..]);
                        for (p, &w) in batch.drain().zip(classes.iter()) {
                            // Cannot fail: a staged batch is emptied below
                            // and gets at most one batch's packets.
                            let _ = staged[usize::from(w)].push(p);
                        }
                        for (w, stage) in staged.iter_mut().enumerate() {
                            if !stage.is_empty() {
                                hand_over(&mut dev.rings[w], stage, &mut handed[w], &dev.drops[w]);
                            }
                        }
                    }
                }
            }
        }
        moved
    }

    /// Polls until `stop` is set, napping briefly after many empty rounds
    /// in a row so that an idle dispatcher does not burn its core.
    pub fn run(&mut self, stop: &AtomicBool) {
        let mut idle_rounds = 0u32;
        while !stop.load(Ordering::Relaxed) {
            if self.poll(self.burst) > 0 {
                idle_rounds = 0;
                continue;
            }
            idle_rounds += 1;
            if idle_rounds > IDLE_ROUNDS_BEFORE_NAP {
                std::thread::sleep(NAP);
            }
        }
    }

    /// The counters.
    pub fn stats(&self) -> DispatchStats {
        let mut workers: Vec<WorkerDispatchStats> = self
            .handed
            .iter()
            .map(|&handed| WorkerDispatchStats { handed, dropped: 0 })
            .collect();
        for dev in &self.devices {
            for (w, d) in workers.iter_mut().zip(&dev.drops) {
                w.dropped += d.load(Ordering::Relaxed);
            }
        }
        DispatchStats {
            workers,
            devices: self
                .devices
                .iter()
                .map(|d| DeviceDispatchStats {
                    ifname: d.ifname.clone(),
                    received: d.received,
                    errors: d.errors,
                    last_error: d.last_error.clone(),
                })
                .collect(),
        }
    }
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dispatcher")
            .field("mode", &self.mode)
            .field("workers", &self.workers)
            .field("ring_capacity", &self.ring_capacity)
            .field("devices", &self.devices.len())
            .finish()
    }
}

/// Takes up to a batch of returned buffers into this thread's pool.
#[inline]
fn reclaim(ring: &mut Consumer<Packet>, scratch: &mut Batch) {
    let n = ring.slots().min(scratch.remaining());
    if n == 0 {
        return;
    }
    if let Ok(chunk) = ring.read_chunk(n) {
        for p in chunk {
            // Cannot fail: `n` is at most the room left.
            let _ = scratch.push(p);
        }
    }
    // One visit to the pool for all of them.
    scratch.clear();
}

/// Moves every packet of `batch` into `ring` in one chunk (one index
/// update the worker sees, not one per packet); what does not fit is
/// dropped and counted.
#[inline]
fn hand_over(ring: &mut Producer<Packet>, batch: &mut Batch, handed: &mut u64, drops: &AtomicU64) {
    let n = batch.len();
    // `write_chunk_uninit` looks at the worker's index only when the room
    // it last saw is not enough.
    let room = match ring.write_chunk_uninit(n) {
        Ok(chunk) => chunk.fill_from_iter(batch.drain()),
        Err(rtrb::chunks::ChunkError::TooFewSlots(free)) => match ring.write_chunk_uninit(free) {
            Ok(chunk) => chunk.fill_from_iter(batch.drain().take(free)),
            Err(_) => 0,
        },
    };
    *handed += room as u64;
    if room < n {
        drops.fetch_add((n - room) as u64, Ordering::Relaxed);
        batch.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_wire::{
        EtherType, EthernetAddress, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Addr, Ipv4Packet,
        Ipv4Repr, UdpPacket, UdpRepr,
    };
    use std::collections::{HashMap, VecDeque};
    use std::sync::atomic::AtomicUsize;
    use std::sync::Mutex;

    /// A 64-byte Ethernet/IPv4/UDP frame of flow `flow` (source port
    /// 10000 + flow) carrying `seq` and `epoch` in its payload.
    fn udp_frame(flow: u16, seq: u32, epoch: u8) -> Vec<u8> {
        let payload_len = 22;
        let mut f = vec![0u8; 14 + 20 + 8 + payload_len];
        EthernetRepr {
            src_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x02]),
            dst_addr: EthernetAddress([0x02, 0, 0, 0, 0, 0x01]),
            ethertype: EtherType::IPV4,
        }
        .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
        Ipv4Repr {
            src_addr: Ipv4Addr::new(10, 0, (flow >> 8) as u8, flow as u8),
            dst_addr: Ipv4Addr::new(10, 1, 0, 1),
            next_header: IpProtocol::UDP,
            payload_len: 8 + payload_len,
            hop_limit: 64,
            dscp_ecn: 0,
            ident: 0,
            dont_frag: true,
        }
        .emit(&mut Ipv4Packet::new_unchecked(&mut f[14..]));
        UdpRepr {
            src_port: 10000 + flow,
            dst_port: 53,
            payload_len,
        }
        .emit(&mut UdpPacket::new_unchecked(&mut f[34..]));
        f[42..44].copy_from_slice(&flow.to_be_bytes());
        f[44..48].copy_from_slice(&seq.to_be_bytes());
        f[48] = epoch;
        f
    }

    /// (flow, seq, epoch) of a frame made by `udp_frame`.
    fn stamp(p: &Packet) -> (u16, u32, u8) {
        let d = p.data();
        (
            u16::from_be_bytes([d[42], d[43]]),
            u32::from_be_bytes([d[44], d[45], d[46], d[47]]),
            d[48],
        )
    }

    /// A receive queue serving frames from a list.
    struct ListQueue {
        ifname: String,
        queue: u32,
        frames: VecDeque<Vec<u8>>,
        fail: Option<DeviceError>,
        packets: u64,
    }

    impl ListQueue {
        fn new(queue: u32, frames: impl IntoIterator<Item = Vec<u8>>) -> ListQueue {
            ListQueue {
                ifname: "eth0".into(),
                queue,
                frames: frames.into_iter().collect(),
                fail: None,
                packets: 0,
            }
        }
    }

    impl RxQueue for ListQueue {
        fn ifname(&self) -> &str {
            &self.ifname
        }
        fn queue(&self) -> u32 {
            self.queue
        }
        fn backend(&self) -> &'static str {
            "list"
        }
        fn recv(&mut self, batch: &mut Batch, max: usize) -> Result<usize, DeviceError> {
            if let Some(e) = &self.fail {
                return Err(e.clone());
            }
            let n = max.min(batch.remaining()).min(self.frames.len());
            for f in self.frames.drain(..n) {
                batch.push(Packet::from_slice(&f).unwrap()).unwrap();
            }
            self.packets += n as u64;
            Ok(n)
        }
        fn stats(&self) -> RxStats {
            RxStats {
                packets: self.packets,
                ..RxStats::default()
            }
        }
    }

    fn drain(rx: &mut RingRx) -> Vec<Packet> {
        let mut out = Vec::new();
        let mut b = Batch::new();
        while rx.recv(&mut b, 32).unwrap() > 0 {
            out.extend(b.drain());
        }
        out
    }

    #[test]
    fn pipeline_hands_whole_batches_by_queue_number() {
        let steering = Arc::new(Steering::new(2));
        let mut d = Dispatcher::new(Mode::Pipeline, 2, steering, 64);
        let queues: Vec<Box<dyn RxQueue>> = (0..3u16)
            .map(|q| {
                Box::new(ListQueue::new(
                    q.into(),
                    (0..5).map(move |s| udp_frame(q, s, 0)),
                )) as Box<dyn RxQueue>
            })
            .collect();
        let mut rx = d.add_device("eth0", queues);
        assert_eq!(d.poll(32), 15);
        // Queues 0 and 2 go to worker 0, queue 1 to worker 1, in order,
        // whatever the packets' flows.
        let got0: Vec<_> = drain(&mut rx[0]).iter().map(stamp).collect();
        let got1: Vec<_> = drain(&mut rx[1]).iter().map(stamp).collect();
        let want0: Vec<_> = (0..5)
            .map(|s| (0, s, 0))
            .chain((0..5).map(|s| (2, s, 0)))
            .collect();
        assert_eq!(got0, want0);
        assert_eq!(got1, (0..5).map(|s| (1, s, 0)).collect::<Vec<_>>());
        let stats = d.stats();
        assert_eq!(stats.received(), 15);
        assert_eq!(stats.workers[0].handed, 10);
        assert_eq!(stats.workers[1].handed, 5);
        assert_eq!(stats.dropped(), 0);
        assert_eq!(d.poll(32), 0);
    }

    #[test]
    fn serial_steers_each_packet_and_keeps_flow_order() {
        let steering = Arc::new(Steering::new(4));
        let mut d = Dispatcher::new(Mode::Serial, 4, steering.clone(), 1024);
        let frames: Vec<_> = (0..20)
            .flat_map(|s| (0..64u16).map(move |f| udp_frame(f, s, 0)))
            .collect();
        let mut rx = d.add_device("eth0", vec![Box::new(ListQueue::new(0, frames))]);
        while d.poll(32) > 0 {}
        let mut total = 0;
        for (w, ring) in rx.iter_mut().enumerate() {
            let mut last: HashMap<u16, u32> = HashMap::new();
            let got = drain(ring);
            assert!(!got.is_empty(), "worker {w} got nothing from 64 flows");
            for p in &got {
                assert_eq!(steering.worker_for(p.data()), w);
                let (flow, seq, _) = stamp(p);
                if let Some(prev) = last.insert(flow, seq) {
                    assert_eq!(seq, prev + 1, "flow {flow} out of order");
                }
            }
            total += got.len();
            assert_eq!(ring.stats().packets, got.len() as u64);
        }
        assert_eq!(total, 64 * 20);
        assert_eq!(d.stats().handed(), 64 * 20);
    }

    #[test]
    fn a_full_ring_drops_and_counts_without_blocking() {
        let steering = Arc::new(Steering::new(1));
        let mut d = Dispatcher::new(Mode::Serial, 1, steering, 4);
        let frames = (0..10).map(|s| udp_frame(1, s, 0));
        let mut rx = d.add_device("eth0", vec![Box::new(ListQueue::new(0, frames))]);
        assert_eq!(d.poll(32), 10);
        let stats = d.stats();
        assert_eq!(stats.workers[0].handed, 4);
        assert_eq!(stats.workers[0].dropped, 6);
        assert_eq!(rx[0].stats().ring_drops, 6);
        // The first four are kept, in order.
        let seqs: Vec<u32> = drain(&mut rx[0]).iter().map(|p| stamp(p).1).collect();
        assert_eq!(seqs, vec![0, 1, 2, 3]);
    }

    #[test]
    fn ring_rx_looks_like_a_device_queue() {
        let steering = Arc::new(Steering::new(3));
        let mut d = Dispatcher::new(Mode::Pipeline, 3, steering, 16);
        let rx = d.add_device("eth7", Vec::new());
        assert_eq!(rx.len(), 3);
        for (w, r) in rx.iter().enumerate() {
            assert_eq!(r.ifname(), "eth7");
            assert_eq!(r.queue(), w as u32);
            assert_eq!(r.backend(), "ring");
            assert!(r.is_empty() && !r.is_closed());
        }
        drop(d);
        assert!(rx.iter().all(RingRx::is_closed));
    }

    #[test]
    fn recv_respects_max_and_the_batch_room() {
        let steering = Arc::new(Steering::new(1));
        let mut d = Dispatcher::new(Mode::Pipeline, 1, steering, 64);
        let frames = (0..40).map(|s| udp_frame(0, s, 0));
        let mut rx = d.add_device("eth0", vec![Box::new(ListQueue::new(0, frames))]);
        d.poll(64);
        let mut b = Batch::new();
        assert_eq!(rx[0].recv(&mut b, 7).unwrap(), 7);
        for _ in 0..b.remaining() - 3 {
            b.push(Packet::new()).unwrap();
        }
        assert_eq!(rx[0].recv(&mut b, 32).unwrap(), 3);
        assert!(b.is_full());
        assert_eq!(rx[0].len(), 30);
        assert_eq!(rx[0].stats().packets, 10);
    }

    #[test]
    fn a_gone_queue_is_counted_and_no_longer_polled() {
        let steering = Arc::new(Steering::new(1));
        let mut d = Dispatcher::new(Mode::Serial, 1, steering, 64);
        let mut bad = ListQueue::new(1, []);
        bad.fail = Some(DeviceError::Gone("eth0".into()));
        let good = ListQueue::new(0, (0..3).map(|s| udp_frame(0, s, 0)));
        let _rx = d.add_device("eth0", vec![Box::new(good), Box::new(bad)]);
        assert_eq!(d.poll(32), 3);
        assert_eq!(d.poll(32), 0);
        let stats = d.stats();
        assert_eq!(stats.devices[0].errors, 1);
        assert_eq!(
            stats.devices[0].last_error,
            Some(DeviceError::Gone("eth0".into()))
        );
    }

    #[test]
    fn run_returns_when_stopped() {
        let steering = Arc::new(Steering::new(1));
        let mut d = Dispatcher::new(Mode::Serial, 1, steering, 64);
        let mut rx = d.add_device(
            "eth0",
            vec![Box::new(ListQueue::new(
                0,
                (0..5).map(|s| udp_frame(0, s, 0)),
            ))],
        );
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| d.run(&stop));
            while rx[0].len() < 5 {
                std::thread::yield_now();
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(drain(&mut rx[0]).len(), 5);
    }

    /// A receive queue that makes frames of `flows` flows round-robin, up
    /// to `total`, stamped with the current epoch, and holds back while
    /// `limit` packets are in flight so that the test's rings never fill
    /// (a sender with flow control): the test is about steering, not
    /// about drops.
    struct Generator {
        flows: u16,
        next: u32,
        total: u32,
        epoch: Arc<AtomicUsize>,
        delivered: Arc<AtomicU64>,
        limit: u64,
    }

    impl RxQueue for Generator {
        fn ifname(&self) -> &str {
            "eth0"
        }
        fn queue(&self) -> u32 {
            0
        }
        fn backend(&self) -> &'static str {
            "generator"
        }
        fn recv(&mut self, batch: &mut Batch, max: usize) -> Result<usize, DeviceError> {
            let in_flight = u64::from(self.next) - self.delivered.load(Ordering::Acquire);
            let room = self.limit.saturating_sub(in_flight) as usize;
            let n = max
                .min(room)
                .min(batch.remaining())
                .min((self.total - self.next) as usize);
            let epoch = self.epoch.load(Ordering::Relaxed) as u8;
            for _ in 0..n {
                let i = self.next;
                let flow = (i % u32::from(self.flows)) as u16;
                let seq = i / u32::from(self.flows);
                batch
                    .push(Packet::from_slice(&udp_frame(flow, seq, epoch)).unwrap())
                    .unwrap();
                self.next += 1;
            }
            Ok(n)
        }
        fn stats(&self) -> RxStats {
            RxStats::default()
        }
    }

    /// What a consumer saw: per (worker, flow) the sequence numbers in
    /// arrival order, and per (flow, epoch) the workers it arrived at.
    #[derive(Default)]
    struct Seen {
        seqs: HashMap<(usize, u16), Vec<u32>>,
        workers: HashMap<(u16, u8), Vec<usize>>,
        count: u64,
    }

    fn consume(rx: &mut [RingRx], seen: &Mutex<Seen>, delivered: &AtomicU64, total: u64) {
        let mut b = Batch::new();
        let mut local = Seen::default();
        while local.count < total {
            let mut got = 0;
            for (w, ring) in rx.iter_mut().enumerate() {
                got += ring.recv(&mut b, 32).unwrap();
                for p in b.drain() {
                    let (flow, seq, epoch) = stamp(&p);
                    local.seqs.entry((w, flow)).or_default().push(seq);
                    let ws = local.workers.entry((flow, epoch)).or_default();
                    if !ws.contains(&w) {
                        ws.push(w);
                    }
                    local.count += 1;
                }
            }
            delivered.fetch_add(got as u64, Ordering::Release);
            if got == 0 {
                std::thread::yield_now();
            }
        }
        *seen.lock().unwrap() = local;
    }

    #[test]
    fn resteering_mid_stream_loses_nothing_and_keeps_flow_order() {
        const FLOWS: u16 = 32;
        const TOTAL: u32 = 40_000;
        let pinned_src: std::net::SocketAddr = "10.0.0.5:10005".parse().unwrap();
        let changes = [
            "queues 1".to_string(),
            "queues 2".to_string(),
            "key symmetric".to_string(),
            format!("flow udp {pinned_src} 10.1.0.1:53 1"),
        ];
        let steering = Arc::new(Steering::new(2));
        let mut d = Dispatcher::new(Mode::Serial, 2, steering.clone(), 1024);
        let epoch = Arc::new(AtomicUsize::new(0));
        let delivered = Arc::new(AtomicU64::new(0));
        let mut rx = d.add_device(
            "eth0",
            vec![Box::new(Generator {
                flows: FLOWS,
                next: 0,
                total: TOTAL,
                epoch: epoch.clone(),
                delivered: delivered.clone(),
                limit: 512,
            })],
        );
        let seen = Mutex::new(Seen::default());
        std::thread::scope(|s| {
            s.spawn(|| consume(&mut rx, &seen, &delivered, u64::from(TOTAL)));
            let mut read = 0u64;
            let mut next_change = 0;
            while read < u64::from(TOTAL) {
                read += d.poll(32) as u64;
                let due = (next_change + 1) as u64 * u64::from(TOTAL) / (changes.len() as u64 + 1);
                if next_change < changes.len() && read >= due {
                    steering.apply(&changes[next_change]).unwrap();
                    next_change += 1;
                    epoch.store(next_change, Ordering::Relaxed);
                }
            }
            assert_eq!(next_change, changes.len());
        });
        let seen = seen.into_inner().unwrap();
        let stats = d.stats();
        assert_eq!(stats.received(), u64::from(TOTAL));
        assert_eq!(stats.handed(), u64::from(TOTAL));
        assert_eq!(stats.dropped(), 0);
        assert_eq!(seen.count, u64::from(TOTAL));
        // Every packet of every flow arrived once, and on each worker a
        // flow's packets arrived in order.
        for flow in 0..FLOWS {
            let mut all: Vec<u32> = (0..2)
                .flat_map(|w| seen.seqs.get(&(w, flow)).cloned().unwrap_or_default())
                .collect();
            for w in 0..2 {
                if let Some(seqs) = seen.seqs.get(&(w, flow)) {
                    assert!(
                        seqs.windows(2).all(|p| p[0] < p[1]),
                        "flow {flow} reordered on {w}"
                    );
                }
            }
            all.sort_unstable();
            let want: Vec<u32> = (0..TOTAL / u32::from(FLOWS)).collect();
            assert_eq!(all, want, "flow {flow}");
        }
        // Between two changes a flow stays on one worker; with one queue
        // everything is on worker 0; the pinned flow ends on worker 1.
        for ((flow, epoch), workers) in &seen.workers {
            assert_eq!(workers.len(), 1, "flow {flow} split in epoch {epoch}");
            if *epoch == 1 {
                assert_eq!(workers[0], 0);
            }
        }
        assert_eq!(seen.workers[&(5, 4)], vec![1]);
        // Both workers had traffic with two queues.
        assert!((0..FLOWS).any(|f| seen.workers.get(&(f, 0)) == Some(&vec![1])));
    }

    #[test]
    fn a_control_thread_may_change_the_rules_at_any_moment() {
        const TOTAL: u32 = 30_000;
        let steering = Arc::new(Steering::new(4));
        let mut d = Dispatcher::new(Mode::Serial, 4, steering.clone(), 512);
        let delivered = Arc::new(AtomicU64::new(0));
        let mut rx = d.add_device(
            "eth0",
            vec![Box::new(Generator {
                flows: 64,
                next: 0,
                total: TOTAL,
                epoch: Arc::new(AtomicUsize::new(0)),
                delivered: delivered.clone(),
                limit: 256,
            })],
        );
        let seen = Mutex::new(Seen::default());
        let stop = AtomicBool::new(false);
        let commands = [
            "queues 1",
            "queues 4",
            "key symmetric",
            "queues 3",
            "mac 02:00:00:00:00:01 2",
            "key default",
            "flow udp 10.0.0.7:10007 10.1.0.1:53 3",
            "mac del 02:00:00:00:00:01",
            "queues 2",
        ];
        std::thread::scope(|s| {
            s.spawn(|| consume(&mut rx, &seen, &delivered, u64::from(TOTAL)));
            s.spawn(|| {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    steering.apply(commands[i % commands.len()]).unwrap();
                    i += 1;
                    std::thread::sleep(Duration::from_micros(100));
                }
            });
            let mut read = 0u64;
            while read < u64::from(TOTAL) {
                read += d.poll(32) as u64;
            }
            // The consumer finishes on its own; then the control thread.
            while delivered.load(Ordering::Acquire) < u64::from(TOTAL) {
                std::thread::yield_now();
            }
            stop.store(true, Ordering::Relaxed);
        });
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.count, u64::from(TOTAL));
        assert_eq!(d.stats().handed(), u64::from(TOTAL));
        for seqs in seen.seqs.values() {
            assert!(seqs.windows(2).all(|p| p[0] < p[1]));
        }
    }

    #[test]
    fn buffers_come_back_from_the_workers() {
        const TOTAL: u32 = 40_000;
        let steering = Arc::new(Steering::new(2));
        let mut d = Dispatcher::new(Mode::Serial, 2, steering, 1024);
        let delivered = Arc::new(AtomicU64::new(0));
        let mut rx = d.add_device(
            "eth0",
            vec![Box::new(Generator {
                flows: 16,
                next: 0,
                total: TOTAL,
                epoch: Arc::new(AtomicUsize::new(0)),
                delivered: delivered.clone(),
                limit: 512,
            })],
        );
        let seen = Mutex::new(Seen::default());
        let before = bricks_packet::pool_stats().allocated;
        std::thread::scope(|s| {
            s.spawn(|| consume(&mut rx, &seen, &delivered, u64::from(TOTAL)));
            let mut read = 0u64;
            while read < u64::from(TOTAL) {
                read += d.poll(32) as u64;
            }
        });
        assert_eq!(seen.into_inner().unwrap().count, u64::from(TOTAL));
        // Without the return rings every packet would need a new buffer;
        // with them the dispatcher allocates about what is in flight, what
        // the worker keeps and what it keeps itself.
        let allocated = bricks_packet::pool_stats().allocated - before;
        assert!(
            allocated < u64::from(TOTAL) / 4,
            "{allocated} buffers allocated for {TOTAL} packets"
        );
    }

    #[test]
    fn modes_parse_and_print() {
        for m in [Mode::Pipeline, Mode::Serial] {
            assert_eq!(m.to_string().parse::<Mode>(), Ok(m));
        }
        assert!("parallel".parse::<Mode>().unwrap_err().contains("expected"));
    }
}
