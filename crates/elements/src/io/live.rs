//! `FromDevice` and `ToDevice` on live Linux interfaces.
//!
//! Each worker's instance takes the queues the runner assigned to its
//! worker (`bricks_io::live`): a receive queue and a transmit queue are
//! touched by one core only (RouteBricks §4.2). Receiving polls each owned
//! queue for up to BURST frames (the paper's kp); sending places frames in
//! the transmit ring and tells the kernel once per BURST frames (kn), or
//! when the oldest placed frame has waited FLUSH, so that a lone packet at
//! a low rate is not held back for long.
//!
//! As a host's network card and Linux do (`PACKET_OTHERHOST`), a receiver
//! that is not promiscuous drops frames unicast to another MAC than the
//! interface's: AF_XDP sees every frame that reaches the wire of a veth or
//! a promiscuous card, and a router must not route a frame that was not
//! sent to it (RFC 1812 section 5.3.4: a packet received as a link-layer
//! unicast to someone else is not the router's to forward).

use super::capture::set_packet_type;
use bricks_element::{Batch, Context, Element, Stats, TaskKind, TaskResult};
use bricks_io::live;
use bricks_io::{DeviceError, RxQueue, RxStats, TxQueue, TxStats};
use bricks_packet::{Packet, PacketType, Timestamp};

/// Receives from the queues of a live interface this worker owns.
pub struct LiveRx {
    name: String,
    burst: usize,
    queues: Vec<Box<dyn RxQueue>>,
    taken: bool,
    /// The worker whose queues these are.
    worker: usize,
    /// Counters of queues that went away.
    closed: RxStats,
    errors: u64,
    /// Whether frames for other hosts are kept (PROMISC).
    promisc: bool,
    /// The interface's MAC, read when the router starts; `None` when it
    /// has none (a tunnel) or is promiscuous: nothing is filtered.
    mac: Option<[u8; 6]>,
    /// Frames dropped because they were unicast to another MAC.
    other_host: u64,
    /// The interface's XDP fast path, on worker 0's instance only (its
    /// counters are the interface's, counted once).
    fast_path: Option<bricks_io::xdp::FastPath>,
}

impl LiveRx {
    /// Receives from interface `name`, up to `burst` frames per queue and
    /// poll; frames unicast to another MAC than the interface's are
    /// dropped unless `promisc`.
    pub fn new(name: String, burst: usize, promisc: bool) -> LiveRx {
        LiveRx {
            name,
            burst,
            queues: Vec::new(),
            taken: false,
            worker: 0,
            closed: RxStats::default(),
            errors: 0,
            promisc,
            mac: None,
            other_host: 0,
            fast_path: None,
        }
    }

    fn take_queues(&mut self, worker: usize) {
        self.taken = true;
        self.worker = worker;
        self.queues = live::take_rx(&self.name, worker);
        self.fast_path = if worker == 0 {
            live::fast_path(&self.name)
        } else {
            None
        };
        if !self.promisc {
            self.mac = bricks_io::ifinfo::lookup(&self.name)
                .ok()
                .map(|i| i.mac)
                .filter(|m| *m != [0; 6]);
        }
    }

    /// Sets each frame's packet type and drops, counting them, the frames
    /// for other hosts unless promiscuous.
    fn accept(&mut self, b: &mut Batch) {
        let Some(mac) = self.mac else {
            for p in b.iter_mut() {
                set_packet_type(p);
            }
            return;
        };
        let before = b.len();
        b.retain(|p| packet_type(p, &mac) != PacketType::OtherHost);
        self.other_host += (before - b.len()) as u64;
    }

    fn totals(&self) -> RxStats {
        let mut t = self.closed;
        for q in &self.queues {
            add_rx(&mut t, &q.stats());
        }
        t
    }
}

fn add_rx(t: &mut RxStats, s: &RxStats) {
    t.packets += s.packets;
    t.bytes += s.bytes;
    t.ring_drops += s.ring_drops;
    t.oversized += s.oversized;
}

fn add_tx(t: &mut TxStats, s: &TxStats) {
    t.packets += s.packets;
    t.bytes += s.bytes;
    t.ring_full += s.ring_full;
    t.kicks += s.kicks;
    t.errors += s.errors;
}

/// Says that an interface went away, on stderr at once (the router keeps
/// running) and in the run's errors.
fn report_gone(cx: &mut Context<'_>, msg: String) {
    let msg = DeviceError::Gone(msg).to_string();
    eprintln!(
        "bricks: {}: {msg}; the rest of the router keeps forwarding",
        cx.name()
    );
    cx.report_error(msg);
}

/// A receiver dropped while its queues are open (a hot swap replaced it
/// with an element of another name or device) gives them back, so that
/// the new configuration's receiver of the interface takes them without
/// closing a socket or losing a frame.
impl Drop for LiveRx {
    fn drop(&mut self) {
        live::give_back_rx(&self.name, self.worker, std::mem::take(&mut self.queues));
    }
}

impl Element for LiveRx {
    fn start(&mut self, cx: &mut Context<'_>) {
        if !self.taken {
            self.take_queues(cx.worker());
        }
    }

    /// Hot swap: the old receiver's open queues, if it read the same
    /// interface, and its counters.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<LiveRx>(old) else {
            return;
        };
        if old.name != self.name || !old.taken {
            return;
        }
        self.taken = true;
        self.worker = old.worker;
        self.queues = std::mem::take(&mut old.queues);
        self.mac = if self.promisc { None } else { old.mac };
        self.closed = old.closed;
        self.errors = old.errors;
        self.other_host = old.other_host;
    }

    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn task_on_every_worker(&self) -> bool {
        true
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if !self.taken {
            self.take_queues(cx.worker());
        }
        if self.queues.is_empty() {
            return TaskResult::Done;
        }
        let mut worked = false;
        let mut i = 0;
        while i < self.queues.len() {
            let mut b = Batch::new();
            match self.queues[i].recv(&mut b, self.burst) {
                Ok(0) => i += 1,
                Ok(_) => {
                    self.accept(&mut b);
                    cx.push(0, &mut b);
                    worked = true;
                    i += 1;
                }
                Err(DeviceError::Gone(m)) => {
                    let q = self.queues.remove(i);
                    add_rx(&mut self.closed, &q.stats());
                    report_gone(cx, m);
                }
                Err(DeviceError::Io(m)) => {
                    // A failed poll is retried; only the first is worth a
                    // message.
                    if self.errors == 0 {
                        eprintln!("bricks: {}: {m}", cx.name());
                    }
                    self.errors += 1;
                    i += 1;
                }
            }
        }
        if self.queues.is_empty() {
            TaskResult::Done
        } else if worked {
            TaskResult::Worked
        } else {
            TaskResult::Idle
        }
    }

    fn stats(&self, s: &mut Stats) {
        let t = self.totals();
        s.counter("count", t.packets);
        s.counter("bytes", t.bytes);
        s.counter("ring_drops", t.ring_drops);
        s.counter("oversized", t.oversized);
        s.counter("errors", self.errors);
        s.counter("queues", self.queues.len() as u64);
        s.counter("other_host", self.other_host);
        if let Some(fp) = &self.fast_path {
            let f = fp.stats();
            s.counter("fastpath_forwarded", f.forwarded);
            s.counter("fastpath_bytes", f.forwarded_bytes);
            for (why, n) in f.to_user {
                s.counter(format!("fastpath_{why}"), n);
            }
        }
    }
}

/// Sets `p`'s packet type from its destination MAC for an interface whose
/// address is `mac`, and returns it.
fn packet_type(p: &mut Packet, mac: &[u8; 6]) -> PacketType {
    set_packet_type(p);
    let t = p.anno().packet_type;
    if t == PacketType::Host && p.data().get(..6).is_some_and(|d| d != mac) {
        p.anno_mut().packet_type = PacketType::OtherHost;
        return PacketType::OtherHost;
    }
    t
}

/// Packets a pulling ToDevice takes per round at least.
const PULL: usize = 64;

/// Sends on the transmit queue of a live interface this worker owns.
pub struct LiveTx {
    name: String,
    burst: usize,
    flush_ns: u64,
    pull: bool,
    tx: Option<Box<dyn TxQueue>>,
    taken: bool,
    /// The worker whose queue this is.
    worker: usize,
    /// When the oldest unflushed frame must go at the latest.
    deadline: Option<u64>,
    closed: TxStats,
    /// Packets dropped for lack of a queue (the interface went away).
    no_queue: u64,
}

impl LiveTx {
    /// Sends on interface `name`, telling the kernel every `burst` frames
    /// or after `flush_ns` nanoseconds.
    pub fn new(name: String, burst: usize, flush_ns: u64, pull: bool) -> LiveTx {
        LiveTx {
            name,
            burst,
            flush_ns,
            pull,
            tx: None,
            taken: false,
            worker: 0,
            deadline: None,
            closed: TxStats::default(),
            no_queue: 0,
        }
    }

    fn lose_queue(&mut self, cx: &mut Context<'_>, msg: String) {
        if let Some(q) = self.tx.take() {
            add_tx(&mut self.closed, &q.stats());
        }
        self.deadline = None;
        report_gone(cx, msg);
    }

    fn flush(&mut self, cx: &mut Context<'_>) {
        self.deadline = None;
        if let Some(tx) = self.tx.as_mut() {
            if let Err(DeviceError::Gone(m)) = tx.flush() {
                self.lose_queue(cx, m);
            }
        }
    }

    /// Sends `b` in runs of at most `burst` frames, each followed by a kick
    /// once `burst` frames are pending: kn is the frames per kick however
    /// many packets one pull or push brings.
    fn send(&mut self, b: &mut Batch, cx: &mut Context<'_>) {
        if b.len() <= self.burst {
            return self.send_run(b, cx);
        }
        let mut run = Batch::new();
        let mut all = std::mem::take(b);
        for p in all.drain() {
            let _ = run.push(p);
            if run.len() == self.burst {
                self.send_run(&mut run, cx);
            }
        }
        if !run.is_empty() {
            self.send_run(&mut run, cx);
        }
    }

    fn send_run(&mut self, b: &mut Batch, cx: &mut Context<'_>) {
        if !self.taken {
            self.taken = true;
            self.worker = cx.worker();
            self.tx = live::take_tx(&self.name, cx.worker());
        }
        let Some(tx) = self.tx.as_mut() else {
            self.no_queue += b.len() as u64;
            b.clear();
            return;
        };
        if let Err(DeviceError::Gone(m)) = tx.enqueue(b) {
            b.clear();
            self.lose_queue(cx, m);
            return;
        }
        b.clear();
        let pending = tx.pending();
        if pending >= self.burst || self.flush_ns == 0 {
            self.flush(cx);
        } else if pending > 0 && self.deadline.is_none() {
            let at = cx.now().0.saturating_add(self.flush_ns);
            self.deadline = Some(at);
            cx.schedule_at(Timestamp(at));
        }
    }
}

/// A sender dropped with its queue open (see `LiveRx`'s `Drop`) sends
/// what it holds and gives the queue back.
impl Drop for LiveTx {
    fn drop(&mut self) {
        if let Some(mut q) = self.tx.take() {
            let _ = q.flush();
            live::give_back_tx(&self.name, self.worker, q);
        }
    }
}

impl Element for LiveTx {
    fn start(&mut self, cx: &mut Context<'_>) {
        if !self.taken {
            self.taken = true;
            self.worker = cx.worker();
            self.tx = live::take_tx(&self.name, cx.worker());
        }
    }

    /// Hot swap: the old sender's open queue, if it sent on the same
    /// interface (what it held is sent first), and its counters.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<LiveTx>(old) else {
            return;
        };
        if old.name != self.name || !old.taken {
            return;
        }
        if let Some(q) = old.tx.as_mut() {
            let _ = q.flush();
        }
        self.taken = true;
        self.worker = old.worker;
        self.tx = old.tx.take();
        self.closed = old.closed;
        self.no_queue = old.no_queue;
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.send(batch, cx);
    }

    fn task_kind(&self) -> TaskKind {
        TaskKind::pump_if(self.pull)
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        // Pull as much as a receive poll brings in (kp), whatever kn is:
        // a small kn must mean frequent kicks, not a slow drain of the
        // Queue in front.
        let pull = self.burst.max(PULL);
        cx.pull_task(pull, |b, cx| self.send(b, cx))
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        if self.deadline.is_some_and(|d| d <= cx.now().0) {
            self.flush(cx);
        }
    }

    fn shutdown(&mut self, cx: &mut Context<'_>) {
        self.flush(cx);
    }

    fn stats(&self, s: &mut Stats) {
        let mut t = self.closed;
        if let Some(q) = &self.tx {
            add_tx(&mut t, &q.stats());
        }
        s.counter("count", t.packets);
        s.counter("bytes", t.bytes);
        s.counter("drops", t.ring_full + t.errors + self.no_queue);
        s.counter("ring_full", t.ring_full);
        s.counter("kicks", t.kicks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ARP request (broadcast), an IPv4 multicast (IGMP to 224.0.0.22),
    /// a ping to the interface and the same ping to another host's MAC.
    fn frames(mac: [u8; 6]) -> Vec<Vec<u8>> {
        let ping_tail = [
            0x02, 0x42, 0xac, 0x11, 0x00, 0x02, 0x08, 0x00, 0x45, 0x00, 0x00, 0x1c, 0x1c, 0x46,
            0x40, 0x00, 0x40, 0x01, 0x06, 0x8f, 0x0a, 0x00, 0x01, 0x02, 0x0a, 0x00, 0x02, 0x02,
            0x08, 0x00, 0xf7, 0xff, 0x00, 0x00, 0x00, 0x00,
        ];
        let mut arp = vec![0xff; 6];
        arp.extend([0x02, 0x42, 0xac, 0x11, 0x00, 0x02, 0x08, 0x06]);
        arp.extend([0, 1, 8, 0, 6, 4, 0, 1]);
        arp.extend([0x02, 0x42, 0xac, 0x11, 0x00, 0x02, 10, 0, 1, 2]);
        arp.extend([0, 0, 0, 0, 0, 0, 10, 0, 1, 1]);
        let mut igmp = vec![0x01, 0x00, 0x5e, 0x00, 0x00, 0x16];
        igmp.extend(&ping_tail);
        let mut mine = mac.to_vec();
        mine.extend(&ping_tail);
        let mut other = vec![0x02, 0x42, 0xac, 0x11, 0x00, 0x99];
        other.extend(&ping_tail);
        vec![arp, igmp, mine, other]
    }

    fn batch(frames: &[Vec<u8>]) -> Batch {
        let mut b = Batch::new();
        for f in frames {
            b.push(Packet::from_slice(f).unwrap()).unwrap();
        }
        b
    }

    #[test]
    fn frames_for_other_hosts_are_dropped_and_counted() {
        let mac = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
        let mut rx = LiveRx::new("eth0".into(), 32, false);
        rx.mac = Some(mac);
        let mut b = batch(&frames(mac));
        rx.accept(&mut b);
        let types: Vec<PacketType> = b.iter().map(|p| p.anno().packet_type).collect();
        assert_eq!(
            types,
            [
                PacketType::Broadcast,
                PacketType::Multicast,
                PacketType::Host
            ]
        );
        assert_eq!(&b.as_slice()[2].data()[..6], &mac);
        assert_eq!(rx.other_host, 1);
        let mut s = Stats::default();
        rx.stats(&mut s);
        assert_eq!(s.get("other_host"), Some(1));
    }

    #[test]
    fn promiscuous_or_without_a_mac_nothing_is_dropped() {
        let mac = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
        // PROMISC true never learns the MAC, so it filters nothing.
        let mut rx = LiveRx::new("eth0".into(), 32, true);
        let mut b = batch(&frames(mac));
        rx.accept(&mut b);
        assert_eq!(b.len(), 4);
        assert_eq!(rx.other_host, 0);
    }
}
