//! What the ordering queues (`FIFOQueue`, `HeapQueue`, `BinSortQueue`,
//! `MDSBinSortQueue`, `HashFIFOQueue`) share: a push input, pull outputs,
//! an ordering structure from `bricks_qos::order` behind them, and the
//! same counters. Each queue's file supplies its structure as a
//! [`Discipline`].

use bricks_element::{Batch, Context, Element, Packet, Stats};
use bricks_qos::order::Counters;

/// The counters every ordering queue has, for its manual.
pub(crate) const COUNTERS: &[(&str, &str)] = &[
    ("length", "packets held now"),
    ("highwater_length", "most packets ever held"),
    ("enqueued", "packets accepted"),
    ("dequeued", "packets pulled"),
    (
        "drops",
        "packets refused (the queue, or the replica the packet belongs to, was full)",
    ),
    (
        "late",
        "packets pulled after their deadline annotation (0, no deadline, is never late)",
    ),
];

/// The counters of a queue with MEMREFS true, for its manual.
pub(crate) const MEM_COUNTERS: [(&str, &str); 7] = [
    (
        "mem_packets",
        "packets pushed: enqueued or refused (MEMREFS true only)",
    ),
    (
        "mem_refs",
        "memory references of their enqueues and dequeues (MEMREFS true only)",
    ),
    (
        "mem_words",
        "32-bit words those touched (MEMREFS true only)",
    ),
    (
        "enqueue_refs",
        "memory references of enqueues (MEMREFS true only)",
    ),
    (
        "enqueue_words",
        "words touched by enqueues (MEMREFS true only)",
    ),
    (
        "dequeue_refs",
        "memory references of dequeues that gave a packet (MEMREFS true only)",
    ),
    ("dequeue_words", "words touched by them (MEMREFS true only)"),
];

/// The manual's sentence on MEMREFS for every ordering queue.
macro_rules! memrefs_doc {
    () => {
        " With MEMREFS true (or under `bricks run --memrefs`) the queue counts the memory \
        references and 32-bit words its structure makes (bricks_qos::memref has the table): \
        enqueue_refs and enqueue_words for the enqueues (refused ones included), \
        dequeue_refs and dequeue_words for the dequeues that gave a packet (a pull of an \
        empty queue is idle polling, not counted), mem_refs and mem_words their sums, and \
        mem_packets the packets pushed; with MEMREFS false the counting code is compiled \
        out."
    };
}
pub(crate) use memrefs_doc;

/// How a queue holds and orders packets.
pub(crate) trait Discipline: Send + 'static {
    /// Takes `p` at time `now` (ns on the engine clock), or gives it back.
    fn put(&mut self, p: Packet, now: u64) -> Result<(), Packet>;
    /// The next packet for pull output `port` of `outputs`.
    fn take(&mut self, port: usize, outputs: usize, now: u64) -> Option<Packet>;
    /// The structure's counters.
    fn counters(&self) -> Counters;
    /// Drops everything held and zeroes the counters.
    fn clear(&mut self);
    /// Whether to show BinSort's `late_bins` and `beyond`.
    const BINS: bool = false;
    /// Whether the structure counts memory references.
    const MEMREFS: bool = false;
}

/// The element of a queue over `d`.
pub(crate) fn queue<D: Discipline>(d: D, outputs: usize, class: &'static str) -> Box<dyn Element> {
    Box::new(OrderedQueue { d, outputs, class })
}

/// The deadline a packet is ordered by: its annotation, or `now` for a
/// packet nothing stamped (so undated packets are neither late nor early).
#[inline(always)]
pub(crate) fn deadline_of(p: &Packet, now: u64) -> u64 {
    match p.anno().deadline {
        0 => now,
        d => d,
    }
}

/// A queue element over discipline `D`.
pub(crate) struct OrderedQueue<D> {
    pub d: D,
    pub outputs: usize,
    pub class: &'static str,
}

impl<D: Discipline> Element for OrderedQueue<D> {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = cx.now().0;
        for p in batch.drain() {
            // A refused packet is dropped here; the structure counted it.
            let _ = self.d.put(p, now);
        }
    }

    #[inline]
    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let now = cx.now().0;
        let n = max.min(out.remaining());
        for _ in 0..n {
            match self.d.take(port, self.outputs, now) {
                Some(p) => {
                    let _ = out.push(p);
                }
                None => break,
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        let c = self.d.counters();
        s.counter("length", c.length);
        s.counter("highwater_length", c.highwater);
        s.counter("enqueued", c.enqueued);
        s.counter("dequeued", c.dequeued);
        s.counter("drops", c.drops);
        s.counter("late", c.late);
        if D::BINS {
            s.counter("late_bins", c.late_bins);
            s.counter("beyond", c.beyond);
        }
        if D::MEMREFS {
            let m = c.memrefs;
            let t = m.total();
            s.counter("mem_packets", c.enqueued + c.drops);
            s.counter("mem_refs", t.refs);
            s.counter("mem_words", t.words);
            s.counter("enqueue_refs", m.enqueue.refs);
            s.counter("enqueue_words", m.enqueue.words);
            s.counter("dequeue_refs", m.dequeue.refs);
            s.counter("dequeue_words", m.dequeue.words);
        }
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                self.d.clear();
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` ({} has `reset`)",
                self.class
            )),
        }
    }
}

/// Reads CAPACITY (positional first, default 1000) and checks its range.
pub(crate) fn read_capacity(
    args: &mut bricks_element::Args<'_>,
) -> Result<usize, bricks_element::ArgError> {
    let capacity: usize = args.read_p("CAPACITY")?.unwrap_or(1000);
    if capacity == 0 || capacity > bricks_qos::order::MAX_CAPACITY {
        return Err(bricks_element::ArgError::new(format!(
            "CAPACITY {capacity} out of range (1 to {})",
            bricks_qos::order::MAX_CAPACITY
        )));
    }
    Ok(capacity)
}

#[cfg(test)]
pub(crate) mod testing {
    use bricks_element::{Packet, PortInfo, Processing};

    /// Ports of a queue with `outputs` pull outputs.
    pub fn ports(outputs: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Pull; outputs],
        }
    }

    /// A UDP/IPv4 frame from 10.0.0.1 to `dst`, its first payload byte
    /// `tag`, with deadline annotation `deadline`.
    pub fn frame(dst: [u8; 4], tag: u8, deadline: u64) -> Packet {
        #[rustfmt::skip]
        let mut f: Vec<u8> = vec![
            // Ethernet: to 02:00:00:00:00:02 from 02:00:00:00:00:01, IPv4.
            2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00,
            // IPv4: 20-byte header, 32 bytes in all, TTL 64, UDP.
            0x45, 0, 0, 32, 0, 0, 0, 0, 64, 17, 0, 0,
            10, 0, 0, 1,
        ];
        f.extend_from_slice(&dst);
        // UDP 1234 -> 5678, 12 bytes, no checksum; 4 bytes of payload.
        f.extend_from_slice(&[0x04, 0xd2, 0x16, 0x2e, 0, 12, 0, 0, tag, 0, 0, 0]);
        // The IPv4 header checksum.
        let mut sum = 0u32;
        for w in f[14..34].chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let ck = !(sum as u16);
        f[24..26].copy_from_slice(&ck.to_be_bytes());
        let mut p = Packet::from_slice(&f).unwrap();
        p.set_network_header(14);
        p.anno_mut().deadline = deadline;
        p
    }

    /// The tags (first payload byte) of `ps`, in order.
    pub fn tags(ps: &[Packet]) -> Vec<u8> {
        ps.iter().map(|p| p.data()[42]).collect()
    }
}

#[cfg(test)]
mod tests {
    use bricks_config::{Source, SourceMap};
    use bricks_runtime::{build, Engine};

    /// Each ordering element's manual example builds, runs, and delivers
    /// every packet its source makes.
    #[test]
    fn manual_examples_run() {
        for class in [
            &super::super::fifo_queue::CLASS,
            &super::super::heap_queue::CLASS,
            &super::super::binsort_queue::CLASS,
            &super::super::mds_binsort_queue::CLASS,
            &super::super::hash_fifo_queue::CLASS,
            &super::super::virtual_clock::CLASS,
        ] {
            let m = class.manual;
            let mut map = SourceMap::default();
            let router = bricks_config::parse(
                &mut map,
                Source {
                    name: "<example>".into(),
                    text: m.example.to_string(),
                },
            )
            .unwrap_or_else(|_| panic!("{}: example does not parse", class.name));
            let plan = build(&router, &crate::registry()).unwrap_or_else(|d| {
                let text: Vec<String> = d.iter().map(|d| map.render(d)).collect();
                panic!("{}: {}", class.name, text.join("\n"))
            });
            let mut engine = Engine::new(&plan).unwrap();
            engine.idle_sleep = false;
            let summary = engine.run();
            assert!(summary.errors.is_empty(), "{:?}", summary.errors);
            let mut dequeued = 0;
            for e in &summary.elements {
                for (name, v) in e.stats.entries() {
                    if matches!(&**name, "drops" | "no_flow" | "unconnected_drops") {
                        assert_eq!(*v, 0, "{}: {}.{name}", class.name, e.name);
                    }
                    if name == "dequeued" {
                        dequeued += v;
                    }
                }
            }
            if class.name != "VirtualClock" {
                assert_eq!(dequeued, 10, "{}: {}", class.name, summary.render());
            }
        }
    }
}
