use super::*;
use crate::multistage::balancer_mac;
use bricks_element::{Edge, Graph, Processing, SharedSlot, WorkerState};
use std::sync::Mutex;

const MS: u64 = 1_000_000;
/// The tests' clock starts here (0 means "never").
const T0: u64 = 1_000_000_000;

/// External hosts and the front ports' own MACs.
const HOST_A: [u8; 6] = [0x52, 0x54, 0x00, 0x00, 0x00, 0x0a];
const HOST_B: [u8; 6] = [0x52, 0x54, 0x00, 0x00, 0x00, 0x0b];
const HOST_C: [u8; 6] = [0x52, 0x54, 0x00, 0x00, 0x00, 0x0c];
const F0: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x0f, 0x00];
const F1: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x0f, 0x01];

/// Records what an output receives.
struct Sink(Arc<Mutex<Vec<Packet>>>);

impl Element for Sink {
    fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
        self.0.lock().unwrap().extend(batch.drain());
    }
}

/// One worker's instance of a balancer, every output captured; the batch
/// sizes each output received are kept too.
struct Dut {
    graph: Graph,
    state: WorkerState,
    out: Vec<Arc<Mutex<Vec<Packet>>>>,
    nfronts: usize,
}

impl Dut {
    /// A balancer with `nfronts` front ports and `nbacks` back ports, as
    /// worker `worker` of `workers`, sharing `slot` with the others.
    fn worker(
        args: &str,
        nfronts: usize,
        nbacks: usize,
        slot: &SharedSlot,
        worker: usize,
        workers: usize,
    ) -> Dut {
        let parsed = bricks_runtime::testing::parse_args(args).unwrap();
        let ports = PortInfo {
            inputs: vec![Processing::Push; nfronts + 1],
            outputs: vec![Processing::Push; nfronts + nbacks],
        };
        let mut a = Args::new(&parsed, None).with_shared(slot);
        let e = make(&mut a, &ports).unwrap_or_else(|e| panic!("{args}: {}", e.message));
        a.complete().unwrap();
        let nout = nfronts + nbacks;
        let out: Vec<Arc<Mutex<Vec<Packet>>>> = (0..nout).map(|_| Default::default()).collect();
        let mut elements: Vec<Box<dyn Element>> = vec![e];
        let mut names = vec!["lb".to_string()];
        for (o, c) in out.iter().enumerate() {
            elements.push(Box::new(Sink(c.clone())));
            names.push(format!("out{o}"));
        }
        let mut outputs: Vec<Box<[Edge]>> = vec![(0..nout)
            .map(|o| Edge {
                element: o as u32 + 1,
                port: 0,
            })
            .collect()];
        let mut inputs: Vec<Box<[Edge]>> = vec![vec![Edge::NONE; nfronts + 1].into_boxed_slice()];
        for _ in 0..nout {
            outputs.push(Box::default());
            inputs.push(Box::default());
        }
        let mut state = WorkerState::new(worker, workers);
        state.now = Timestamp(T0);
        Dut {
            graph: Graph::new(elements, names, outputs, inputs),
            state,
            out,
            nfronts,
        }
    }

    fn new(args: &str, nfronts: usize, nbacks: usize) -> Dut {
        Dut::worker(args, nfronts, nbacks, &SharedSlot::new(), 0, 1)
    }

    fn start(&mut self) {
        self.graph
            .with_element(0, &mut self.state, |e, cx| e.start(cx));
    }

    fn push(&mut self, port: usize, packets: impl IntoIterator<Item = Packet>) {
        let mut b = Batch::new();
        for p in packets {
            if let Err(p) = b.push(p) {
                self.graph
                    .with_element(0, &mut self.state, |e, cx| e.push(port, &mut b, cx));
                b.clear();
                b.push(p).unwrap();
            }
        }
        self.graph
            .with_element(0, &mut self.state, |e, cx| e.push(port, &mut b, cx));
    }

    fn push_bytes(&mut self, port: usize, frame: &[u8]) {
        self.push(port, [Packet::from_slice(frame).unwrap()]);
    }

    fn back(&self) -> usize {
        self.nfronts
    }

    /// Sets the clock and runs the timer if one is due.
    fn advance_to(&mut self, ns: u64) {
        let t = Timestamp(ns);
        self.state.now = t;
        if self.state.timer_requests.iter().any(|&(at, _)| at <= t) {
            self.state.timer_requests.retain(|&(at, _)| at > t);
            self.graph
                .with_element(0, &mut self.state, |e, cx| e.run_timer(cx));
        }
    }

    fn take(&mut self, port: usize) -> Vec<Packet> {
        std::mem::take(&mut *self.out[port].lock().unwrap())
    }

    fn take_bytes(&mut self, port: usize) -> Vec<Vec<u8>> {
        self.take(port).iter().map(|p| p.data().to_vec()).collect()
    }

    fn take_all(&mut self) -> Vec<Vec<Vec<u8>>> {
        (0..self.out.len()).map(|o| self.take_bytes(o)).collect()
    }

    fn count(&self, name: &str) -> u64 {
        self.graph.stats(0).get(name).unwrap_or(0)
    }

    fn write_handler(&self, handler: &str, value: &str) -> Result<(), String> {
        self.graph.write_handler(0, handler, value)
    }

    /// Replies from `routers` (to balancer 0's back port 0), for front
    /// port `front`.
    fn replies(&mut self, routers: &[u8], front: u8) {
        let frames: Vec<Packet> = routers
            .iter()
            .map(|&r| Packet::from_slice(&reply(r, front, 0, balancer_mac(0, 0))).unwrap())
            .collect();
        let back = self.back();
        self.push(back, frames);
    }
}

/// A reply of router `router` for front port `front` to `balancer`.
fn reply(router: u8, front: u8, balancer: u8, to: [u8; 6]) -> Vec<u8> {
    Probe {
        kind: ProbeKind::Reply,
        balancer,
        router,
        front,
        seq: 0,
    }
    .frame(to, router_mac(router, front))
    .to_vec()
}

/// A 64-byte UDP frame from `src` to `dst`, 10.0.0.2:`sport` ->
/// 10.1.0.2:53.
fn udp(dst: [u8; 6], src: [u8; 6], sport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&50u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, 0, 2]);
    ip[16..20].copy_from_slice(&[10, 1, 0, 2]);
    ip[20..22].copy_from_slice(&sport.to_be_bytes());
    ip[22..24].copy_from_slice(&53u16.to_be_bytes());
    ip[24..26].copy_from_slice(&30u16.to_be_bytes());
    f
}

/// An ARP frame (`op` 1 request, 2 reply) from `src` (10.0.0.2) to `dst`.
fn arp(dst: [u8; 6], src: [u8; 6], op: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, op]);
    f[22..28].copy_from_slice(&src);
    f[28..32].copy_from_slice(&[10, 0, 0, 2]);
    if op == 2 {
        f[32..38].copy_from_slice(&dst);
    }
    f[38..42].copy_from_slice(&[10, 0, 0, 1]);
    f
}

fn packets(frames: impl IntoIterator<Item = Vec<u8>>) -> Vec<Packet> {
    frames
        .into_iter()
        .map(|f| Packet::from_slice(&f).unwrap())
        .collect()
}

/// The router a balanced frame was sent to (its destination MAC must be
/// a router's, for front port `front`).
fn router_of(frame: &[u8], front: u8) -> u8 {
    assert_eq!(&frame[..3], &[0x02, 0x4d, 0x53], "a router MAC");
    assert_eq!(frame[4], front, "the front port's MAC");
    assert_eq!(frame[5], 0);
    frame[3]
}

#[test]
fn round_robin_over_live_routers_is_even_and_rewrites_only_the_destination() {
    let mut d = Dut::new("FRONT 0, ROUTERS 4, FRONT_MAC 02:00:00:00:0f:00", 1, 1);
    d.replies(&[0, 1, 2, 3], 0);
    assert_eq!(d.count("live"), 4);
    let frame = udp(F0, HOST_A, 1000);
    for _ in 0..10_000 / 32 {
        d.push(0, packets(std::iter::repeat_n(frame.clone(), 32)));
    }
    d.push(0, packets(std::iter::repeat_n(frame.clone(), 10_000 % 32)));
    let out = d.take_bytes(1);
    assert_eq!(out.len(), 10_000);
    let mut per = [0u64; 4];
    for (n, f) in out.iter().enumerate() {
        let r = router_of(f, 0);
        assert_eq!(usize::from(r), n % 4, "frame {n} in turn");
        per[usize::from(r)] += 1;
        assert_eq!(&f[6..], &frame[6..], "only the destination changes");
    }
    let (lo, hi) = (per.iter().min().unwrap(), per.iter().max().unwrap());
    assert!(hi - lo <= 1, "{per:?}");
    for (r, n) in per.iter().enumerate() {
        assert_eq!(d.count(&format!("to_router{r}")), *n);
    }
    assert_eq!(d.count("balanced"), 10_000);
    assert_eq!(d.count("fast_hits"), 9_999, "all but the first");
    assert_eq!(d.count("to_back0"), 10_000);
    assert!(d.take_bytes(0).is_empty());
}

#[test]
fn only_live_routers_get_frames_and_none_live_drops() {
    let mut d = Dut::new("FRONT 3, ROUTERS 4", 1, 1);
    d.push(0, packets([udp(F0, HOST_A, 1), udp(F0, HOST_A, 2)]));
    assert!(
        d.take_all().iter().all(|o| o.is_empty()),
        "nothing before a reply"
    );
    assert_eq!(d.count("no_router"), 2);
    d.replies(&[1, 3], 3);
    d.push(0, packets((0..6).map(|s| udp(F0, HOST_A, s))));
    let routers: Vec<u8> = d.take_bytes(1).iter().map(|f| router_of(f, 3)).collect();
    assert_eq!(routers, [1, 3, 1, 3, 1, 3]);
    assert_eq!(d.count("balanced"), 6);
}

#[test]
fn per_flow_keeps_every_flow_on_one_router() {
    let mut d = Dut::new("FRONT 0, ROUTERS 4, POLICY flow", 1, 1);
    d.replies(&[0, 1, 2, 3], 0);
    // 200 flows, 10 packets each, interleaved.
    for _ in 0..10 {
        d.push(0, packets((0..200).map(|s| udp(F0, HOST_A, 5000 + s))));
    }
    let out = d.take_bytes(1);
    assert_eq!(out.len(), 2000);
    let mut seen: std::collections::HashMap<u16, u8> = Default::default();
    let mut per = [0u32; 4];
    for f in &out {
        let sport = u16::from_be_bytes([f[34], f[35]]);
        let r = router_of(f, 0);
        assert_eq!(*seen.entry(sport).or_insert(r), r, "flow {sport} moved");
        per[usize::from(r)] += 1;
    }
    assert!(
        per.iter().all(|&n| n >= 200),
        "flows spread over routers: {per:?}"
    );
    // Router 2 leaves: flows on the others stay put, router 2's move.
    d.start();
    d.advance_to(T0);
    let mut t = T0;
    for _ in 0..5 {
        t += 50 * MS;
        d.replies(&[0, 1, 3], 0);
        d.advance_to(t);
    }
    assert_eq!(d.count("live"), 3);
    d.take_all();
    d.push(0, packets((0..200).map(|s| udp(F0, HOST_A, 5000 + s))));
    for f in d.take_bytes(1) {
        let sport = u16::from_be_bytes([f[34], f[35]]);
        let r = router_of(&f, 0);
        assert_ne!(r, 2);
        if seen[&sport] != 2 {
            assert_eq!(seen[&sport], r, "flow {sport} on a live router moved");
        }
    }
}

#[test]
fn flowlets_change_router_only_after_delta() {
    let mut d = Dut::new("FRONT 0, ROUTERS 3, POLICY flowlet, DELTA 50ms", 1, 1);
    d.replies(&[0, 1, 2], 0);
    let send = |d: &mut Dut, at: u64, sport: u16| -> u8 {
        d.state.now = Timestamp(at);
        d.push(0, packets([udp(F0, HOST_A, sport)]));
        router_of(&d.take_bytes(1)[0], 0)
    };
    let first = send(&mut d, T0, 7);
    // Packets 40 ms apart: one flowlet for 400 ms, however long.
    let mut t = T0;
    for _ in 0..10 {
        t += 40 * MS;
        assert_eq!(send(&mut d, t, 7), first);
        // Another flow meanwhile moves the round robin on.
        send(&mut d, t, 8);
    }
    // A gap longer than DELTA: a new flowlet, on another router.
    t += 51 * MS;
    let second = send(&mut d, t, 7);
    assert_ne!(second, first);
    t += 50 * MS;
    assert_eq!(
        send(&mut d, t, 7),
        second,
        "exactly DELTA apart: same flowlet"
    );
    // The handler changes DELTA at run time.
    d.write_handler("delta", "200ms").unwrap();
    t += 150 * MS;
    assert_eq!(send(&mut d, t, 7), second);
    assert!(d.write_handler("delta", "0").is_err());
}

#[test]
fn dtx_n_alternates_back_ports() {
    let mut d = Dut::new("FRONT 0, ROUTERS 4, BACKS 3, BALANCER 2", 1, 3);
    let frames: Vec<Packet> = [0u8, 1, 2, 3]
        .iter()
        .map(|&r| Packet::from_slice(&reply(r, 0, 2, balancer_mac(2, 1))).unwrap())
        .collect();
    d.push(1, frames);
    assert_eq!(d.count("live"), 4);
    d.push(0, packets((0..12).map(|s| udp(F0, HOST_A, s))));
    assert!(d.take_bytes(0).is_empty());
    let mut n = 0;
    let outs: Vec<Vec<Vec<u8>>> = (1..4).map(|o| d.take_bytes(o)).collect();
    for (j, out) in outs.iter().enumerate() {
        assert_eq!(out.len(), 4, "back port {j}");
        for (m, f) in out.iter().enumerate() {
            // Frame m*3+j went out of back port j, to router (m*3+j) % 4.
            assert_eq!(usize::from(router_of(f, 0)), (m * 3 + j) % 4);
            n += 1;
        }
        assert_eq!(d.count(&format!("to_back{j}")), 4);
    }
    assert_eq!(n, 12);
}

#[test]
fn return_frames_go_out_of_the_port_their_destination_was_learnt_on() {
    let mut d = Dut::new("FRONT 0 1, ROUTERS 1", 2, 1);
    d.replies(&[0], 0);
    // A speaks on front 0, B on front 1 (their frames are balanced).
    d.push_bytes(0, &udp(F0, HOST_A, 1));
    d.push_bytes(1, &udp(F1, HOST_B, 1));
    assert_eq!(d.take_bytes(2).len(), 2);
    // Routers answer: to A, to B, to C (never seen), from F_k.
    let to_a = udp(HOST_A, F0, 53);
    let to_b = udp(HOST_B, F1, 53);
    let to_c = udp(HOST_C, F0, 53);
    d.push(2, packets([to_a.clone(), to_b.clone(), to_c, to_a.clone()]));
    assert_eq!(
        d.take_bytes(0),
        vec![to_a.clone(), to_a],
        "unmodified, in order"
    );
    assert_eq!(d.take_bytes(1), vec![to_b]);
    assert!(d.take_bytes(2).is_empty());
    assert_eq!(d.count("returned"), 3);
    assert_eq!(d.count("unknown_return"), 1);
    assert_eq!(d.count("return_entries"), 2);
}

#[test]
fn a_whole_return_batch_for_one_port_moves_on_whole() {
    let mut d = Dut::new("FRONT 0, ROUTERS 1", 1, 1);
    d.push_bytes(0, &arp([0xff; 6], HOST_A, 1));
    assert_eq!(d.count("front_broadcast"), 1, "dropped but learnt");
    d.push(1, packets(std::iter::repeat_n(udp(HOST_A, F0, 53), 40)));
    assert_eq!(d.take_bytes(0).len(), 40);
    assert_eq!(d.count("returned"), 40);
}

#[test]
fn the_return_table_is_bounded_and_evicts_the_oldest() {
    let mut d = Dut::new("FRONT 0, ROUTERS 1, RETURN_CAPACITY 4", 1, 1);
    let host = |i: u8| [0x52, 0x54, 0x00, 0x01, 0x00, i];
    for i in 0..5 {
        d.push_bytes(0, &udp(F0, host(i), 1));
    }
    assert_eq!(d.count("return_entries"), 4);
    assert_eq!(d.count("return_evictions"), 1);
    d.push(1, packets((0..5).map(|i| udp(host(i), F0, 53))));
    let out = d.take_bytes(0);
    assert_eq!(out.len(), 4);
    assert_eq!(&out[0][..6], &host(1), "host 0, the oldest, was evicted");
    assert_eq!(d.count("unknown_return"), 1);
    // A flood of forged sources keeps the table at its bound.
    for i in 0..=255u8 {
        d.push_bytes(0, &udp(F0, [0x52, 0x54, 0x00, 0x02, 0x00, i], 1));
    }
    assert_eq!(d.count("return_entries"), 4);
}

#[test]
fn a_station_moves_to_another_port_only_after_a_quiet_time() {
    let mut d = Dut::new("FRONT 0 1, ROUTERS 1, MOVE_AFTER 1s", 2, 1);
    d.push_bytes(0, &udp(F0, HOST_A, 1));
    // A forged frame with A's source on port 1, 100 ms later.
    d.state.now = Timestamp(T0 + 100 * MS);
    d.push_bytes(1, &udp(F1, HOST_A, 1));
    assert_eq!(d.count("station_refused"), 1);
    d.push_bytes(2, &udp(HOST_A, F0, 53));
    assert_eq!(d.take_bytes(0).len(), 1, "A still on port 0");
    // Quiet on port 0 for more than a second: A has moved.
    d.state.now = Timestamp(T0 + 1200 * MS);
    d.push_bytes(1, &udp(F1, HOST_A, 1));
    assert_eq!(d.count("station_moves"), 1);
    d.push_bytes(2, &udp(HOST_A, F0, 53));
    assert_eq!(d.take_bytes(1).len(), 1, "A now on port 1");
    assert!(d.take_bytes(0).is_empty());
}

#[test]
fn broadcasts_from_the_back_are_copied_to_every_front_port() {
    let mut d = Dut::new("FRONT 0 1 2, ROUTERS 1", 3, 1);
    let request = arp([0xff; 6], F0, 1);
    d.push_bytes(3, &request);
    for o in 0..3 {
        assert_eq!(d.take_bytes(o), vec![request.clone()], "front port {o}");
    }
    assert!(d.take_bytes(3).is_empty());
    assert_eq!(d.count("replicated"), 1);
    // A mixed batch: the returns keep their order, the broadcast's copies
    // follow them.
    d.push_bytes(1, &udp(F1, HOST_B, 9));
    d.take_all();
    let to_b = udp(HOST_B, F1, 53);
    d.push(3, packets([to_b.clone(), request.clone(), to_b.clone()]));
    assert_eq!(d.take_bytes(1), vec![to_b.clone(), to_b, request.clone()]);
    assert_eq!(d.take_bytes(0), vec![request.clone()]);
    assert_eq!(d.take_bytes(2), vec![request]);
}

#[test]
fn with_front_macs_a_broadcast_goes_out_of_its_own_port() {
    let mut d = Dut::new(
        "FRONT 4 5, ROUTERS 1, FRONT_MAC 02:00:00:00:0f:00 02:00:00:00:0f:01",
        2,
        1,
    );
    let request = arp([0xff; 6], F1, 1);
    d.push_bytes(2, &request);
    assert!(d.take_bytes(0).is_empty());
    assert_eq!(d.take_bytes(1), vec![request]);
    // Another balancer's port's request: every port.
    d.push_bytes(2, &arp([0xff; 6], [0x02, 0, 0, 0, 0x0f, 9], 1));
    assert_eq!(d.take_bytes(0).len(), 1);
    assert_eq!(d.take_bytes(1).len(), 1);
}

#[test]
fn arp_replies_are_copied_to_every_live_router() {
    let mut d = Dut::new("FRONT 7, ROUTERS 4", 1, 1);
    d.replies(&[0, 2, 3], 7);
    let r = arp(F0, HOST_A, 2);
    d.push_bytes(0, &r);
    let out = d.take_bytes(1);
    assert_eq!(out.len(), 3);
    for (f, want) in out.iter().zip([0u8, 2, 3]) {
        assert_eq!(router_of(f, 7), want);
        assert_eq!(&f[6..], &r[6..]);
    }
    assert_eq!(d.count("arp_to_routers"), 1);
    assert_eq!(d.count("balanced"), 0);
    // A unicast ARP request is balanced like IPv4: one router answers.
    d.push_bytes(0, &arp(F0, HOST_A, 1));
    assert_eq!(d.take_bytes(1).len(), 1);
    // A flood of replies is held to the budget per interval.
    d.push(0, packets(std::iter::repeat_n(r.clone(), 300)));
    assert_eq!(d.count("arp_limited"), 45);
    assert_eq!(d.take_bytes(1).len(), 255 * 3);
    d.state.now = Timestamp(T0 + 50 * MS);
    d.push_bytes(0, &r);
    assert_eq!(d.take_bytes(1).len(), 3, "a new interval, a new budget");
}

#[test]
fn mixed_front_batch_is_split_in_order() {
    let mut d = Dut::new("FRONT 0, ROUTERS 2, BACKS 2", 1, 2);
    d.replies(&[0, 1], 0);
    let batch = [
        udp(F0, HOST_A, 1),
        udp(router_mac(0, 0), HOST_A, 1),
        arp(F0, HOST_A, 2),
        udp(F0, HOST_A, 2),
        udp(F0, HOST_A, 3),
    ];
    d.push(0, packets(batch));
    let b0 = d.take_bytes(1);
    let b1 = d.take_bytes(2);
    // Data: back 0, back 1, back 0 (to routers 0, 1, 0); the ARP reply's
    // copies continue the back ports' rotation.
    assert_eq!(b0.len() + b1.len(), 5);
    let data0: Vec<u16> = b0
        .iter()
        .filter(|f| f[12..14] == [8, 0])
        .map(|f| u16::from_be_bytes([f[34], f[35]]))
        .collect();
    assert_eq!(data0, [1, 3]);
    assert_eq!(d.count("spoofed"), 1);
    assert_eq!(d.count("arp_to_routers"), 1);
    assert_eq!(d.count("balanced"), 3);
}

#[test]
fn spoofed_frames_at_the_front_are_dropped_and_counted() {
    let mut d = Dut::new("FRONT 0, ROUTERS 2", 1, 1);
    d.replies(&[0], 0);
    let forged_reply = reply(1, 0, 0, balancer_mac(0, 0));
    let frames = [
        udp(router_mac(1, 0), HOST_A, 1),
        udp(balancer_mac(0, 0), HOST_A, 1),
        udp(F0, router_mac(0, 0), 1),
        udp(F0, balancer_mac(3, 3), 1),
        forged_reply.clone(),
        {
            let mut f = forged_reply;
            f[..6].copy_from_slice(&F0);
            f[6..12].copy_from_slice(&HOST_A);
            f
        },
    ];
    d.push(0, packets(frames));
    assert!(d.take_all().iter().all(|o| o.is_empty()));
    assert_eq!(d.count("spoofed"), 6);
    assert_eq!(
        d.count("live"),
        1,
        "router 1 was not made live from outside"
    );
    assert_eq!(d.count("replies"), 1);
    assert_eq!(d.count("return_entries"), 0, "nothing learnt from them");
}

#[test]
fn other_front_frames_are_dropped_by_reason() {
    let mut d = Dut::new("FRONT 0, ROUTERS 1, FRONT_MAC 02:00:00:00:0f:00", 1, 1);
    d.replies(&[0], 0);
    let mut ipv6 = udp(F0, HOST_A, 1);
    ipv6[12..14].copy_from_slice(&[0x86, 0xdd]);
    let mut group_src = udp(F0, HOST_A, 1);
    group_src[6] = 0x01;
    d.push(
        0,
        packets([
            udp([0xff; 6], HOST_A, 1),
            udp([0x01, 0, 0x5e, 0, 0, 1], HOST_A, 1),
            udp(HOST_B, HOST_A, 1),
            ipv6,
            group_src,
            vec![0; 13],
        ]),
    );
    assert!(d.take_all().iter().all(|o| o.is_empty()));
    assert_eq!(d.count("front_broadcast"), 2);
    assert_eq!(d.count("other_host"), 1);
    assert_eq!(d.count("other_type"), 1);
    assert_eq!(d.count("bad_source"), 1);
    assert_eq!(d.count("runt"), 1);
    // Without FRONT_MAC, the packet type annotation decides.
    let mut d = Dut::new("FRONT 0, ROUTERS 1", 1, 1);
    d.replies(&[0], 0);
    let mut p = Packet::from_slice(&udp(HOST_B, HOST_A, 1)).unwrap();
    p.anno_mut().packet_type = PacketType::OtherHost;
    d.push(0, [p, Packet::from_slice(&udp(HOST_B, HOST_A, 1)).unwrap()]);
    assert_eq!(d.count("other_host"), 1);
    assert_eq!(d.take_bytes(1).len(), 1);
    // Runts from the back too.
    d.push_bytes(1, &[0; 5]);
    assert_eq!(d.count("runt"), 1);
}

#[test]
fn probes_go_to_every_router_every_interval() {
    let mut d = Dut::new(
        "FRONT 0, ROUTERS 3, BALANCER 5, BACKS 2, INTERVAL 50ms",
        1,
        2,
    );
    d.start();
    d.advance_to(T0);
    let b0 = d.take_bytes(1);
    let b1 = d.take_bytes(2);
    assert_eq!(b0.len() + b1.len(), 3);
    let mut seen = Vec::new();
    for (f, j) in b0.iter().map(|f| (f, 0u8)).chain(b1.iter().map(|f| (f, 1))) {
        assert_eq!(f.len(), 60);
        assert_eq!(&f[6..12], &balancer_mac(5, j), "from back port {j}'s MAC");
        assert_eq!(&f[12..14], &[0x88, 0xb7]);
        let p = Probe::parse(&f[14..]).unwrap();
        assert_eq!(p.kind, ProbeKind::Probe);
        assert_eq!(p.balancer, 5);
        assert_eq!(p.seq, 0);
        assert_eq!(&f[..6], &router_mac(p.router, 0));
        seen.push(p.router);
    }
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2]);
    assert_eq!(d.count("probes"), 3);
    // Not before the interval is over; then sequence 1.
    d.advance_to(T0 + 49 * MS);
    assert!(d.take_bytes(1).is_empty() && d.take_bytes(2).is_empty());
    d.advance_to(T0 + 50 * MS);
    let f = d.take_bytes(1);
    let g = d.take_bytes(2);
    assert_eq!(f.len() + g.len(), 3);
    assert_eq!(
        Probe::parse(&f.iter().chain(&g).next().unwrap()[14..])
            .unwrap()
            .seq,
        1
    );
}

#[test]
fn only_the_first_worker_probes() {
    let slot = SharedSlot::new();
    let mut w1 = Dut::worker("FRONT 0, ROUTERS 2", 1, 1, &slot, 1, 2);
    w1.start();
    w1.advance_to(T0 + 100 * MS);
    assert!(w1.take_bytes(1).is_empty());
    assert_eq!(w1.count("probes"), 0);
}

#[test]
fn a_silent_router_leaves_the_set_after_misses_and_comes_back() {
    let mut d = Dut::new("FRONT 0, ROUTERS 4, INTERVAL 50ms, MISSES 3", 1, 1);
    d.start();
    d.advance_to(T0);
    d.replies(&[0, 1, 2, 3], 0);
    assert_eq!(d.count("live"), 4);
    assert_eq!(d.count("router_up"), 4);
    // Router 2 falls silent at T0; the others answer every interval.
    let mut t = T0;
    let mut down_at = None;
    for _ in 0..6 {
        t += 50 * MS;
        d.replies(&[0, 1, 3], 0);
        d.advance_to(t);
        if down_at.is_none() && d.count("live") == 3 {
            down_at = Some(t);
        }
    }
    // 150 ms without a reply is not yet down; more than 150 ms is.
    assert_eq!(down_at, Some(T0 + 200 * MS));
    assert_eq!(d.count("router_down"), 1);
    d.take_all();
    d.push(0, packets((0..9).map(|s| udp(F0, HOST_A, s))));
    let routers: Vec<u8> = d.take_bytes(1).iter().map(|f| router_of(f, 0)).collect();
    assert!(!routers.contains(&2), "{routers:?}");
    assert_eq!(routers.len(), 9);
    // It answers again: back in the set at once.
    d.replies(&[2], 0);
    assert_eq!(d.count("live"), 4);
    assert_eq!(d.count("router_up"), 5);
    d.push(0, packets((0..8).map(|s| udp(F0, HOST_A, s))));
    let routers: Vec<u8> = d.take_bytes(1).iter().map(|f| router_of(f, 0)).collect();
    assert_eq!(routers.iter().filter(|&&r| r == 2).count(), 2);
    // 9 frames over 3 routers, then 8 over 4.
    assert_eq!(d.count("to_router0"), 5);
    assert_eq!(d.count("to_router2"), 2);
    assert_eq!(d.count("balanced"), 17);
    // All silent: no router, drops counted, never a loop.
    for _ in 0..5 {
        t += 50 * MS;
        d.advance_to(t);
    }
    assert_eq!(d.count("live"), 0);
    assert_eq!(d.count("router_down"), 5);
    d.take_all();
    d.push(0, packets((0..3).map(|s| udp(F0, HOST_A, s))));
    assert!(d.take_all().iter().all(|o| o.is_empty()));
    assert_eq!(d.count("no_router"), 3);
}

#[test]
fn a_stall_of_the_balancer_itself_does_not_kill_routers() {
    let mut d = Dut::new("FRONT 0, ROUTERS 1", 1, 1);
    d.start();
    d.advance_to(T0);
    d.replies(&[0], 0);
    // The balancer does not run for a second; its first timer after that
    // probes but judges no one, and the waiting replies are read first.
    d.advance_to(T0 + 1000 * MS);
    assert_eq!(d.count("live"), 1);
    d.replies(&[0], 0);
    d.advance_to(T0 + 1050 * MS);
    assert_eq!(d.count("live"), 1);
    assert_eq!(d.count("router_down"), 0);
}

#[test]
fn replies_for_others_do_not_count() {
    let mut d = Dut::new("FRONT 0, ROUTERS 2, BALANCER 1", 1, 1);
    let mine = balancer_mac(1, 0);
    let mut bad_src = reply(0, 0, 1, mine);
    bad_src[9] = 1;
    let mut probe = reply(0, 0, 1, mine);
    probe[18] = ProbeKind::Probe as u8;
    d.push(
        1,
        packets([
            reply(0, 0, 0, mine),               // another balancer's number
            reply(0, 0, 1, balancer_mac(0, 0)), // another balancer's MAC
            reply(2, 0, 1, mine),               // no router 2
            bad_src,                            // source not the router's
            probe,                              // not a reply
            vec![0x02, 0x4d, 0x42, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x88, 0xb7, 1],
        ]),
    );
    assert_eq!(d.count("other_probe"), 6);
    assert_eq!(d.count("live"), 0);
    d.push_bytes(1, &reply(1, 0, 1, mine));
    assert_eq!(d.count("replies"), 1);
    assert_eq!(d.count("live"), 1);
}

#[test]
fn workers_share_liveness_and_the_return_table() {
    let slot = SharedSlot::new();
    let mut w0 = Dut::worker("FRONT 0, ROUTERS 2", 1, 1, &slot, 0, 2);
    let mut w1 = Dut::worker("FRONT 0, ROUTERS 2", 1, 1, &slot, 1, 2);
    w0.start();
    w1.start();
    // A reply on worker 1 makes the router live for worker 0.
    w1.replies(&[1], 0);
    assert_eq!(w0.count("live"), 1);
    assert_eq!(w1.count("live"), 0, "reported by the first worker only");
    w0.push_bytes(0, &udp(F0, HOST_A, 1));
    assert_eq!(router_of(&w0.take_bytes(1)[0], 0), 1);
    // A learnt on worker 0, answered through worker 1.
    w1.push_bytes(1, &udp(HOST_A, F0, 53));
    assert_eq!(w1.take_bytes(0).len(), 1);
    // The policy handler is shared.
    assert!(w0
        .graph
        .with_element_ref(0, |e| e.handler_is_shared("policy")));
    w1.replies(&[0], 0);
    w0.write_handler("policy", "flow").unwrap();
    w1.push(0, packets(std::iter::repeat_n(udp(F0, HOST_A, 9), 6)));
    let routers: Vec<u8> = w1.take_bytes(1).iter().map(|f| router_of(f, 0)).collect();
    assert_eq!(routers.len(), 6);
    assert!(
        routers.iter().all(|&r| r == routers[0]),
        "worker 1 balances per flow: {routers:?}"
    );
}

#[test]
fn the_policy_changes_at_run_time() {
    let mut d = Dut::new("FRONT 0, ROUTERS 4", 1, 1);
    d.replies(&[0, 1, 2, 3], 0);
    d.write_handler("policy", "flow").unwrap();
    d.push(0, packets(std::iter::repeat_n(udp(F0, HOST_A, 9), 8)));
    let routers: Vec<u8> = d.take_bytes(1).iter().map(|f| router_of(f, 0)).collect();
    assert!(
        routers.iter().all(|&r| r == routers[0]),
        "one flow, one router"
    );
    d.write_handler("policy", "rr").unwrap();
    d.push(0, packets(std::iter::repeat_n(udp(F0, HOST_A, 9), 8)));
    let routers: Vec<u8> = d.take_bytes(1).iter().map(|f| router_of(f, 0)).collect();
    assert_eq!(
        routers
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        4
    );
    assert!(d.write_handler("policy", "random").is_err());
    assert!(d.write_handler("weights", "1").is_err());
}

#[test]
fn arguments_are_checked() {
    let ports = |i: usize, o: usize| PortInfo {
        inputs: vec![Processing::Push; i],
        outputs: vec![Processing::Push; o],
    };
    let err = |args: &str, i: usize, o: usize| {
        bricks_runtime::testing::make_element(&CLASS, args, &ports(i, o))
            .err()
            .unwrap_or_else(|| panic!("{args} accepted"))
    };
    assert!(err("ROUTERS 2", 2, 2).contains("FRONT"));
    assert!(err("FRONT 0, ROUTERS 0", 2, 2).contains("ROUTERS"));
    assert!(err("FRONT 0, ROUTERS 256", 2, 2).contains("ROUTERS"));
    assert!(err("FRONT 0 0, ROUTERS 2", 3, 3).contains("twice"));
    assert!(err("FRONT 255, ROUTERS 2", 2, 2).contains("254"));
    assert!(err("FRONT, ROUTERS 2", 2, 2).contains("FRONT"));
    assert!(err("FRONT 0, ROUTERS 2", 2, 3).contains("outputs"));
    assert!(err("FRONT 0, ROUTERS 2, BACKS 2", 2, 2).contains("outputs"));
    assert!(err(
        "FRONT 0, ROUTERS 2, BACKS 2, BACK_MAC 02:00:00:00:00:01",
        2,
        3
    )
    .contains("BACK_MAC"));
    assert!(err("FRONT 0, ROUTERS 2, BACK_MAC 03:00:00:00:00:01", 2, 2).contains("group"));
    assert!(err("FRONT 0 1, ROUTERS 2, FRONT_MAC 02:00:00:00:00:01", 3, 3).contains("FRONT_MAC"));
    assert!(err("FRONT 0, ROUTERS 2, FRONT_MAC 02:4d:53:00:00:00", 2, 2).contains("internal"));
    assert!(err("FRONT 0, ROUTERS 2, FRONT_MAC 01:00:5e:00:00:01", 2, 2).contains("group"));
    assert!(err("FRONT 0, ROUTERS 2, POLICY random", 2, 2).contains("POLICY"));
    assert!(err("FRONT 0, ROUTERS 2, MISSES 0", 2, 2).contains("MISSES"));
    assert!(err("FRONT 0, ROUTERS 2, INTERVAL 0", 2, 2).contains("INTERVAL"));
    assert!(err("FRONT 0, ROUTERS 2, RETURN_CAPACITY 0", 2, 2).contains("RETURN_CAPACITY"));
    assert!(err("FRONT 0, ROUTERS 2, WEIGHT 1", 2, 2).contains("WEIGHT"));
    assert!(bricks_runtime::testing::make_element(
        &CLASS,
        "FRONT 0 1, ROUTERS 255, BALANCER 3, BACKS 2, POLICY flowlet, DELTA 20ms, \
         INTERVAL 10ms, MISSES 5, RETURN_CAPACITY 100, MOVE_AFTER 2s, \
         BACK_MAC 02:00:00:00:00:01 02:00:00:00:00:02, \
         FRONT_MAC 02:00:00:00:0f:00 02:00:00:00:0f:01",
        &ports(3, 4)
    )
    .is_ok());
}

#[test]
fn fast_and_slow_frames_of_one_batch_share_the_rotation() {
    let mut d = Dut::new("FRONT 0, ROUTERS 2, FRONT_MAC 02:00:00:00:0f:00", 1, 1);
    d.replies(&[0, 1], 0);
    let batch = [
        udp(F0, HOST_A, 1),           // learns A
        udp(F0, HOST_A, 2),           // A again: the fast path
        udp(F0, router_mac(0, 0), 3), // spoofed
        udp(F0, HOST_A, 4),
        udp(F0, HOST_B, 5), // learns B
        udp(F0, HOST_B, 6),
        udp(F0, HOST_A, 7),
        udp(HOST_B, HOST_A, 8), // not for F0
    ];
    d.push(0, packets(batch));
    let out = d.take_bytes(1);
    let got: Vec<(u16, u8)> = out
        .iter()
        .map(|f| (u16::from_be_bytes([f[34], f[35]]), router_of(f, 0)))
        .collect();
    assert_eq!(got, [(1, 0), (2, 1), (4, 0), (5, 1), (6, 0), (7, 1)]);
    assert_eq!(d.count("to_router0"), 3);
    assert_eq!(d.count("to_router1"), 3);
    assert_eq!(d.count("to_back0"), 6);
    assert_eq!(d.count("spoofed"), 1);
    assert_eq!(d.count("other_host"), 1);
    assert_eq!(d.count("return_entries"), 2);
    assert_eq!(d.count("fast_hits"), 3, "frames 2, 4 and 6");
    // A source learnt long ago is learnt again (the cache expires).
    d.state.now = Timestamp(T0 + 20 * MS);
    d.push(0, packets([udp(F0, HOST_A, 9), udp(F0, HOST_A, 10)]));
    assert_eq!(d.take_bytes(1).len(), 2);
    assert_eq!(d.count("fast_hits"), 4);
    // From the learnt source, only IPv4 for F0 takes the fast path.
    let mut ipv6 = udp(F0, HOST_A, 11);
    ipv6[12..14].copy_from_slice(&[0x86, 0xdd]);
    d.push(
        0,
        packets([
            udp(F0, HOST_A, 12),
            ipv6,
            arp(F0, HOST_A, 2),
            udp([0xff; 6], HOST_A, 13),
            udp(router_mac(1, 0), HOST_A, 14),
            udp(F1, HOST_A, 15),
            udp(F0, HOST_A, 16),
        ]),
    );
    assert_eq!(d.count("fast_hits"), 6);
    assert_eq!(d.count("other_type"), 1);
    assert_eq!(d.count("arp_to_routers"), 1);
    assert_eq!(d.count("front_broadcast"), 1);
    assert_eq!(d.count("spoofed"), 2);
    assert_eq!(d.count("other_host"), 2);
    assert_eq!(d.take_bytes(1).len(), 4, "2 frames and 2 ARP copies");
}
