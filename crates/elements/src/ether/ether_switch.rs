//! `EtherSwitch`: Click's learning Ethernet bridge (IEEE 802.1D without
//! the spanning tree). Input and output `i` are one LAN; a frame's source
//! address is learnt on its input, and a frame for a learnt unicast
//! address goes out of that address's port only (dropped if that is where
//! it came from); others are flooded to every other port.
//!
//! Unlike Click's, the station table is bounded (CAPACITY, oldest entry
//! evicted) and shared by every worker ([`MacTable`]), so a station learnt
//! on one core is known on all and a flood of forged sources costs O(1)
//! per frame.

use crate::multistage::mac_table::{Learnt, MacTable, MAX_CAPACITY};
use crate::multistage::{mac_bytes, mac_text, mac_u64};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use bricks_packet::MAX_BATCH;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// The `EtherSwitch` class.
pub static CLASS: ElementClass = ElementClass {
    name: "EtherSwitch",
    ports: "2-/2-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "learning, forwarding Ethernet switch",
    synopsis: "EtherSwitch(KEYWORDS TIMEOUT, CAPACITY)",
    description: "Expects and produces Ethernet frames. Input i and output i are one LAN \
        (the element has as many outputs as inputs, at least two); it acts as a learning, \
        forwarding switch among them. A frame arriving on input I from source address A \
        associates A with I; later frames for A leave by output I only, unless they came \
        from input I, in which case they are dropped. Frames for an unknown, expired, \
        broadcast or multicast address are flooded to every output but the one of their \
        input. An association lasts TIMEOUT after A was last heard; with TIMEOUT 0 nothing \
        is learnt and the element is a hub. \
        \n\nThe table holds at most CAPACITY addresses (the oldest learnt is evicted for a \
        new one; Click's table has no bound) and is shared by every worker. Group source \
        addresses are never learnt. Frames shorter than an Ethernet header are dropped \
        and counted. Time is the router's clock (Click uses the packet's timestamp). \
        Read `table` as the counters `table ADDRESS` (the port) and `table_size`, and \
        `timeout` in seconds; the write handler `timeout` sets TIMEOUT. \
        \n\nAn EtherSpanTree naming the switch sets two things (IEEE 802.1D-1998): a port in \
        the learning state has the addresses of its frames learnt, and the frames dropped \
        (counted in `learning`); during a topology change, associations last at most the \
        spanning tree's forward delay.",
    ports: "two or more push inputs; as many push outputs",
    keywords: MANUAL_KEYWORDS,
    counters: MANUAL_COUNTERS,
    example: "// Two LANs: a frame from 52:54:00:00:00:01 is flooded to the other.\n\
        InfiniteSource(DATA \\<ff ff ff ff ff ff 52 54 00 00 00 01 08 06 \
        00 01 08 00 06 04 00 01 52 54 00 00 00 01 0a 00 00 01>, LIMIT 1) -> [0]sw :: EtherSwitch;\n\
        Idle -> [1]sw;\n\
        sw[0] -> Discard; sw[1] -> Discard;",
    see_also: &["L2Balancer", "HostEtherFilter"],
};

/// EtherSwitch's keywords (ListenEtherSwitch's too).
pub(super) static MANUAL_KEYWORDS: &[Keyword] = &[
    Keyword {
        name: "TIMEOUT",
        ty: "duration (seconds when no unit)",
        default: Some("300"),
        doc: "how long an association lasts after its address was last heard; 0: a hub",
    },
    Keyword {
        name: "CAPACITY",
        ty: "unsigned integer",
        default: Some("4096"),
        doc: "most addresses the table holds",
    },
];

/// EtherSwitch's counters (ListenEtherSwitch's too).
pub(super) static MANUAL_COUNTERS: &[(&str, &str)] = &[
    ("forwarded", "frames sent out of their destination's port"),
    ("flooded", "frames copied to every other port"),
    (
        "filtered",
        "frames for an address on their own input's port, dropped",
    ),
    ("runt", "frames shorter than an Ethernet header, dropped"),
    (
        "learning",
        "frames from a port an EtherSpanTree holds in the learning state: learnt from, dropped",
    ),
    ("evictions", "addresses evicted to make room"),
    (
        "table ADDRESS",
        "the port of each learnt address (first worker)",
    ),
    ("table_size", "addresses learnt (first worker)"),
    ("timeout", "TIMEOUT in seconds (first worker)"),
];

/// What every worker's instance shares (and an EtherSpanTree naming the
/// switch reaches).
#[derive(Debug)]
pub(crate) struct Shared {
    table: MacTable,
    timeout_ms: AtomicU64,
    /// The spanning tree's short aging during a topology change (802.1D
    /// section 8.3.5), in milliseconds; 0 when none.
    short_timeout_ms: AtomicU64,
    /// The ports in the spanning tree's learning state.
    learning: Box<[AtomicBool]>,
}

impl Shared {
    /// A table of `capacity` addresses among `lans` LANs.
    pub(crate) fn new(capacity: usize, timeout: Duration, lans: usize) -> Shared {
        Shared {
            table: MacTable::new(capacity, 0),
            timeout_ms: AtomicU64::new(timeout.as_millis().min(u128::from(u64::MAX)) as u64),
            short_timeout_ms: AtomicU64::new(0),
            learning: (0..lans).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// How many LANs the switch joins.
    pub(crate) fn lans(&self) -> usize {
        self.learning.len()
    }

    /// Puts port `port` in the learning state (addresses learnt, frames
    /// dropped) or takes it out.
    pub(crate) fn set_learning(&self, port: usize, on: bool) {
        if let Some(l) = self.learning.get(port) {
            l.store(on, Relaxed);
        }
    }

    /// Whether port `port` is in the learning state.
    pub(crate) fn learning(&self, port: usize) -> bool {
        self.learning.get(port).is_some_and(|l| l.load(Relaxed))
    }

    /// The short aging of a topology change, ms, if one lasts.
    pub(crate) fn short_timeout_ms(&self) -> Option<u64> {
        Some(self.short_timeout_ms.load(Relaxed)).filter(|&ms| ms != 0)
    }

    /// Sets the short aging of a topology change (`None` ends it).
    pub(crate) fn set_short_timeout(&self, t: Option<Duration>) {
        let ms = t.map_or(0, |t| t.as_millis().clamp(1, u128::from(u64::MAX)) as u64);
        self.short_timeout_ms.store(ms, Relaxed);
    }

    /// TIMEOUT, shortened during a topology change (a hub stays a hub).
    fn timeout_now_ms(&self) -> u64 {
        let t = self.timeout_ms.load(Relaxed);
        match self.short_timeout_ms.load(Relaxed) {
            0 => t,
            s if t != 0 => t.min(s),
            _ => 0,
        }
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    if ports.ninputs() != ports.noutputs() {
        return Err(ArgError::new(format!(
            "EtherSwitch needs as many outputs as inputs (one pair per LAN), not {} and {}",
            ports.ninputs(),
            ports.noutputs()
        )));
    }
    Ok(Box::new(build(args, ports.ninputs())?))
}

/// A switch among `lans` LANs from its arguments (`ListenEtherSwitch`
/// adds a listening output to one).
pub(super) fn build(args: &mut Args<'_>, lans: usize) -> Result<EtherSwitch, ArgError> {
    let timeout: Duration = args.read("TIMEOUT")?.unwrap_or(Duration::from_secs(300));
    let capacity: usize = args.read("CAPACITY")?.unwrap_or(4096);
    if capacity == 0 || capacity > MAX_CAPACITY {
        return Err(ArgError::new(format!(
            "CAPACITY {capacity}: from 1 to {MAX_CAPACITY}"
        )));
    }
    let sh = args.shared(|_| Ok(Shared::new(capacity, timeout, lans)))?;
    Ok(EtherSwitch {
        sh,
        n: lans,
        first_worker: true,
        c: Counts::default(),
    })
}

#[derive(Debug, Default)]
struct Counts {
    forwarded: u64,
    flooded: u64,
    filtered: u64,
    runt: u64,
    evictions: u64,
    learning: u64,
}

/// One worker's instance.
#[derive(Debug)]
pub struct EtherSwitch {
    sh: Arc<Shared>,
    n: usize,
    first_worker: bool,
    c: Counts,
}

/// Per-frame verdicts besides an output.
pub(super) const DROP: u16 = u16::MAX;
pub(super) const FLOOD: u16 = u16::MAX - 1;

impl EtherSwitch {
    /// TIMEOUT now, in milliseconds (shorter during a topology change).
    pub(super) fn timeout_ms(&self) -> u64 {
        self.sh.timeout_now_ms()
    }

    /// A batch from a port in the learning state: sources learnt, frames
    /// dropped.
    fn learn_only(&mut self, source: usize, batch: &mut Batch, now_ms: u64) {
        let learn = self.sh.timeout_ms.load(Relaxed) != 0;
        for p in batch.drain() {
            let Some(h) = p.data().first_chunk::<14>() else {
                self.c.runt += 1;
                continue;
            };
            self.c.learning += 1;
            if learn && h[6] & 1 == 0 {
                if let Learnt::Inserted { evicted: true } =
                    self.sh
                        .table
                        .learn(mac_u64(&h[6..12]), source as u16, now_ms)
                {
                    self.c.evictions += 1;
                }
            }
        }
    }

    /// Counts a flooded frame (for `ListenEtherSwitch`'s own flooding).
    pub(super) fn count_flood(&mut self) {
        self.c.flooded += 1;
    }

    /// Learns the frame's source and picks its output, [`FLOOD`] or
    /// [`DROP`] (a runt, or a frame for its own LAN).
    #[inline]
    pub(super) fn verdict(
        &mut self,
        source: usize,
        p: &Packet,
        now_ms: u64,
        timeout_ms: u64,
    ) -> u16 {
        let Some(h) = p.data().first_chunk::<14>() else {
            self.c.runt += 1;
            return DROP;
        };
        if timeout_ms == 0 {
            return FLOOD;
        }
        let table = &self.sh.table;
        if h[6] & 1 == 0 {
            if let Learnt::Inserted { evicted: true } =
                table.learn(mac_u64(&h[6..12]), source as u16, now_ms)
            {
                self.c.evictions += 1;
            }
        }
        if h[0] & 1 != 0 {
            return FLOOD;
        }
        let dst = mac_u64(&h[..6]);
        match table.lookup(dst) {
            Some(e) if now_ms.saturating_sub(e.seen_ms) < timeout_ms => {
                if usize::from(e.port) == source {
                    self.c.filtered += 1;
                    DROP
                } else if usize::from(e.port) < self.n {
                    self.c.forwarded += 1;
                    e.port
                } else {
                    FLOOD
                }
            }
            Some(e) => {
                // Expired: forgotten (as Click does), unless heard again
                // meanwhile.
                table.remove_if_unchanged(dst, e.seen_ms);
                FLOOD
            }
            None => FLOOD,
        }
    }

    fn flood(&mut self, source: usize, p: Packet, cx: &mut Context<'_>) {
        self.c.flooded += 1;
        let last = if source + 1 == self.n {
            self.n - 2
        } else {
            self.n - 1
        };
        for o in 0..self.n {
            if o == source {
                continue;
            }
            if o == last {
                cx.push_one(o, p);
                return;
            }
            cx.push_one(o, p.duplicate());
        }
    }
}

impl Element for EtherSwitch {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.first_worker = cx.worker() == 0;
    }

    fn push(&mut self, source: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now_ms = cx.now().0 / 1_000_000;
        if self.sh.learning(source) {
            return self.learn_only(source, batch, now_ms);
        }
        let timeout_ms = self.sh.timeout_now_ms();
        let mut ports = [0u16; MAX_BATCH];
        let mut differ = 0u16;
        let mut first = None;
        for (slot, p) in ports.iter_mut().zip(batch.iter()) {
            let v = self.verdict(source, p, now_ms, timeout_ms);
            *slot = v;
            differ |= v ^ *first.get_or_insert(v);
        }
        match first {
            Some(v) if differ == 0 && v < FLOOD => {
                cx.push(usize::from(v), batch);
                return;
            }
            Some(DROP) if differ == 0 => {
                batch.clear();
                return;
            }
            _ => {}
        }
        // Mixed: runs of one output in arrival order, so every output
        // sees its frames (flooded copies included) in order.
        let mut out = Batch::new();
        let mut run = DROP;
        for (p, &v) in batch.drain().zip(ports.iter()) {
            if v != run && !out.is_empty() {
                cx.push(usize::from(run), &mut out);
            }
            run = v;
            match v {
                DROP => drop(p),
                FLOOD => self.flood(source, p, cx),
                _ => {
                    let _ = out.push(p);
                }
            }
        }
        if !out.is_empty() {
            cx.push(usize::from(run), &mut out);
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("forwarded", self.c.forwarded);
        s.counter("flooded", self.c.flooded);
        s.counter("filtered", self.c.filtered);
        s.counter("runt", self.c.runt);
        s.counter("learning", self.c.learning);
        s.counter("evictions", self.c.evictions);
        if self.first_worker {
            let table = &self.sh.table;
            let mut entries = table.entries();
            entries.sort_unstable_by_key(|&(m, _)| m);
            for (m, e) in entries {
                s.counter(
                    format!("table {}", mac_text(&mac_bytes(m))),
                    u64::from(e.port),
                );
            }
            s.counter("table_size", table.len() as u64);
            s.counter("timeout", self.sh.timeout_ms.load(Relaxed) / 1000);
        }
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "timeout"
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "timeout" => {
                let t = Duration::from_arg(value.trim())
                    .map_err(|e| format!("timeout: expected a duration, {e}"))?;
                self.sh
                    .timeout_ms
                    .store(t.as_millis().min(u128::from(u64::MAX)) as u64, Relaxed);
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}` (timeout)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element, Harness};

    const A: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0a];
    const B: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0b];
    const C: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0c];
    const T0: u64 = 1_000_000_000;

    fn frame(dst: [u8; 6], src: [u8; 6], tag: u8) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = tag;
        f
    }

    fn switch(args: &str, n: usize) -> Harness {
        let mut h = Harness::push(&CLASS, args, n, n);
        h.advance_to(Timestamp(T0));
        h
    }

    fn tags(h: &mut Harness, port: usize) -> Vec<u8> {
        h.take(port).iter().map(|p| p.data()[14]).collect()
    }

    #[test]
    fn floods_unknown_then_forwards_learnt() {
        let mut h = switch("", 3);
        // A on LAN 0 to B (unknown): flooded to 1 and 2, not back to 0.
        h.push_bytes(0, &frame(B, A, 1));
        assert_eq!(tags(&mut h, 0), []);
        assert_eq!(tags(&mut h, 1), [1]);
        assert_eq!(tags(&mut h, 2), [1]);
        // B answers from LAN 2: A is known, only LAN 0 gets it.
        h.push_bytes(2, &frame(A, B, 2));
        assert_eq!(tags(&mut h, 0), [2]);
        assert_eq!(tags(&mut h, 1), []);
        // Now A to B goes to LAN 2 only.
        h.push_bytes(0, &frame(B, A, 3));
        assert_eq!(tags(&mut h, 2), [3]);
        assert_eq!(tags(&mut h, 1), []);
        let s = h.stats();
        assert_eq!(s.get("flooded"), Some(1));
        assert_eq!(s.get("forwarded"), Some(2));
        assert_eq!(s.get("table_size"), Some(2));
        assert_eq!(s.get("table 52:54:00:00:00:0a"), Some(0));
        assert_eq!(s.get("table 52:54:00:00:00:0b"), Some(2));
        assert_eq!(s.get("timeout"), Some(300));
    }

    #[test]
    fn frames_for_their_own_lan_are_dropped() {
        let mut h = switch("", 2);
        h.push_bytes(0, &frame(C, A, 1));
        h.push_bytes(0, &frame(A, C, 2));
        h.take(1);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("filtered"), Some(1));
    }

    #[test]
    fn broadcasts_are_flooded_and_group_sources_not_learnt() {
        let mut h = switch("", 3);
        let mut f = frame([0xff; 6], A, 1);
        h.push_bytes(1, &f);
        assert_eq!(tags(&mut h, 0), [1]);
        assert_eq!(tags(&mut h, 2), [1]);
        assert!(h.take(1).is_empty());
        f[6] = 0x01;
        h.push_bytes(1, &f);
        assert_eq!(h.stats().get("table_size"), Some(1));
    }

    #[test]
    fn associations_expire_after_the_timeout() {
        let mut h = switch("TIMEOUT 10", 2);
        h.push_bytes(1, &frame(C, B, 1));
        h.take(0);
        h.advance_to(Timestamp(T0 + 9_999_000_000));
        h.push_bytes(0, &frame(B, A, 2));
        assert_eq!(tags(&mut h, 1), [2], "still known: sent, not flooded");
        h.advance_to(Timestamp(T0 + 10_000_000_000));
        h.push_bytes(0, &frame(B, A, 3));
        // Expired: flooded (to the one other LAN) and forgotten.
        assert_eq!(tags(&mut h, 1), [3]);
        let s = h.stats();
        assert_eq!(s.get("flooded"), Some(2));
        assert_eq!(s.get("table 52:54:00:00:00:0b"), None);
    }

    #[test]
    fn timeout_zero_is_a_hub() {
        let mut h = switch("TIMEOUT 0", 3);
        h.push_bytes(2, &frame(A, B, 1));
        h.push_bytes(0, &frame(B, A, 2));
        assert_eq!(tags(&mut h, 0), [1]);
        assert_eq!(tags(&mut h, 1), [1, 2]);
        assert_eq!(tags(&mut h, 2), [2]);
        assert_eq!(h.stats().get("table_size"), Some(0));
        // The handler makes it learn.
        h.write_handler("timeout", "300").unwrap();
        h.push_bytes(2, &frame(A, B, 3));
        h.push_bytes(0, &frame(B, A, 4));
        h.take(0);
        h.take(1);
        assert_eq!(tags(&mut h, 2), [4]);
        assert!(h.write_handler("timeout", "soon").is_err());
        assert!(h.write_handler("table", "").is_err());
    }

    #[test]
    fn a_mixed_batch_keeps_every_outputs_order() {
        let mut h = switch("", 3);
        h.push_bytes(1, &frame(C, B, 0));
        h.push_bytes(2, &frame(A, C, 0));
        for o in 0..3 {
            h.take(o);
        }
        // To B (LAN 1), to nobody known (flood), to C (LAN 2), to B.
        let frames: Vec<Packet> = [
            frame(B, A, 1),
            frame([0xff; 6], A, 2),
            frame(C, A, 3),
            frame(B, A, 4),
        ]
        .iter()
        .map(|f| Packet::from_slice(f).unwrap())
        .collect();
        h.push_packets(0, frames);
        assert_eq!(tags(&mut h, 1), [1, 2, 4]);
        assert_eq!(tags(&mut h, 2), [2, 3]);
        assert!(h.take(0).is_empty());
    }

    #[test]
    fn the_table_is_bounded() {
        let mut h = switch("CAPACITY 8", 2);
        for i in 0..100u8 {
            h.push_bytes(0, &frame(A, [0x52, 0x54, 0, 0, 1, i], i));
        }
        let s = h.stats();
        assert_eq!(s.get("table_size"), Some(8));
        assert_eq!(s.get("evictions"), Some(92));
        assert_eq!(s.get("table 52:54:00:00:01:63"), Some(0));
        h.push_bytes(0, &[0; 13]);
        assert_eq!(h.stats().get("runt"), Some(1));
    }

    /// What an EtherSpanTree sets: a port in the learning state, then
    /// the short aging of a topology change.
    #[test]
    fn spanning_tree_learning_and_short_aging() {
        use bricks_element::{Edge, Graph, WorkerState};
        let sh = Arc::new(Shared::new(16, Duration::from_secs(300), 2));
        let sw = EtherSwitch {
            sh: sh.clone(),
            n: 2,
            first_worker: true,
            c: Counts::default(),
        };
        let graph = Graph::new(
            vec![Box::new(sw)],
            vec!["sw".into()],
            vec![Box::new([Edge::NONE, Edge::NONE])],
            vec![Box::new([Edge::NONE, Edge::NONE])],
        );
        let mut state = WorkerState::new(0, 1);
        state.now = Timestamp(T0);
        let mut push = |port: usize, frames: &[&[u8]]| {
            let mut b = Batch::new();
            for f in frames {
                b.push(Packet::from_slice(f).unwrap()).unwrap();
            }
            graph.with_element(0, &mut state, |e, cx| e.push(port, &mut b, cx));
        };
        sh.set_learning(1, true);
        assert!(sh.learning(1) && !sh.learning(0));
        push(1, &[&frame(A, B, 1), &[0; 10]]);
        let s = graph.stats(0);
        assert_eq!(s.get("learning"), Some(1));
        assert_eq!(s.get("runt"), Some(1));
        assert_eq!(s.get("flooded"), Some(0), "learnt from, not forwarded");
        assert_eq!(s.get("table 52:54:00:00:00:0b"), Some(1));
        assert_eq!(s.get("unconnected_drops").unwrap_or(0), 0);
        // Forwarding again: B is known on port 1.
        sh.set_learning(1, false);
        push(0, &[&frame(B, A, 2)]);
        assert_eq!(graph.stats(0).get("forwarded"), Some(1));
        // A topology change shortens TIMEOUT; a hub stays a hub.
        let timeout = || {
            graph.with_element_mut(0, |e| {
                bricks_element::taken_from::<EtherSwitch>(e)
                    .unwrap()
                    .timeout_ms()
            })
        };
        assert_eq!(timeout(), 300_000);
        sh.set_short_timeout(Some(Duration::from_secs(15)));
        assert_eq!(sh.short_timeout_ms(), Some(15_000));
        assert_eq!(timeout(), 15_000);
        sh.set_short_timeout(None);
        assert_eq!(timeout(), 300_000);
        sh.timeout_ms.store(0, Relaxed);
        sh.set_short_timeout(Some(Duration::from_secs(15)));
        assert_eq!(timeout(), 0);
    }

    #[test]
    fn arguments_are_checked() {
        let ports = |n: usize, m: usize| PortInfo {
            inputs: vec![bricks_element::Processing::Push; n],
            outputs: vec![bricks_element::Processing::Push; m],
        };
        assert!(make_element(&CLASS, "", &ports(2, 3)).is_err());
        assert!(make_element(&CLASS, "CAPACITY 0", &ports(2, 2)).is_err());
        assert!(make_element(&CLASS, "TIMEOUT never", &ports(2, 2)).is_err());
        assert!(make_element(&CLASS, "AGE 5", &ports(2, 2)).is_err());
        assert!(make_element(&CLASS, "TIMEOUT 5min, CAPACITY 10", &ports(2, 2)).is_ok());
    }
}
