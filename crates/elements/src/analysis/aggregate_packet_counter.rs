//! `AggregatePacketCounter`: counts packets per aggregate, packet number
//! and input (Click's `elements/analysis/aggpktcounter.cc`), to find the
//! packets of a flow seen on input 0 and not on input 1 (sent and not
//! received).
//!
//! Click keeps, per aggregate and input, a vector indexed by packet
//! number, which a single packet numbered 4294967295 grows to 16 GB.
//! This one keeps the counts of the (aggregate, packet number) pairs
//! seen, at most CAPACITY of them; a packet of a new pair beyond that is
//! passed on uncounted and counted in `overflows`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats,
};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `AggregatePacketCounter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AggregatePacketCounter",
    ports: "1-/1-",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

/// Default CAPACITY: (aggregate, packet number) pairs counted at most.
pub const DEFAULT_CAPACITY: usize = 1 << 20;
/// Largest CAPACITY.
pub const MAX_CAPACITY: usize = 1 << 26;

static MANUAL: Manual = Manual {
    summary: "counts packets per packet number and aggregate annotation",
    synopsis: "AggregatePacketCounter([KEYWORDS])",
    description: "Counts the packets seen for each aggregate annotation and packet number, \
        separately for each input. It has as many outputs as inputs: a packet arriving on \
        input N leaves by output N. Packets of aggregate 0 are not counted. The read \
        handler `received AGG` lists, one a line in increasing order, the packet numbers of \
        aggregate AGG seen on any input; `undelivered AGG` (two inputs or more) those seen \
        more often on input 0 than on input 1; `count` is the total counted; writing \
        `clear` forgets everything. Without an AGG the lists are empty. The counts are \
        shared by every worker. Differences from Click: bricks has no packet number or \
        sequence number annotation: with ANNO PACKET_NUMBER (the default) or \
        SEQUENCE_NUMBER every packet is number 0, as with NONE; ANNO AGGREGATE and \
        EXTRA_LENGTH read those annotations, and other annotations are refused. bricks counts \
        at most CAPACITY (aggregate, packet number) pairs (Click: until memory runs out); a \
        packet of a new pair beyond that passes uncounted, counted in `overflows`. A \
        different number of inputs and outputs is refused (Click crashes), and \
        `undelivered` with one input is an error (Click asserts). Reading `received` does \
        not create an empty aggregate as Click's does (which only its exit warning could \
        tell). NOTIFIER is accepted and not used, as in Click.",
    ports: "one or more inputs, as many outputs; push or pull",
    keywords: &[
        Keyword {
            name: "ANNO",
            ty: "annotation name",
            default: Some("PACKET_NUMBER"),
            doc: "where the packet number is: PACKET_NUMBER, SEQUENCE_NUMBER, NONE (all 0 in \
                  bricks), AGGREGATE or EXTRA_LENGTH",
        },
        Keyword {
            name: "NOTIFIER",
            ty: "element name",
            default: Some("none"),
            doc: "accepted and not used, as in Click",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned (bricks only)",
            default: Some("1048576"),
            doc: "most (aggregate, packet number) pairs counted; from 1 to 67108864",
        },
    ],
    counters: &[
        ("aggregates", "aggregates counted now"),
        (
            "overflows",
            "packets of a new (aggregate, packet number) pair not counted because CAPACITY was \
             reached",
        ),
    ],
    example: "s :: InfiniteSource(LIMIT 3, STOP true) -> AggregateLength -> [0] apc :: AggregatePacketCounter [0] -> Discard;\n\
              Idle -> [1] apc [1] -> Discard;",
    see_also: &["AggregateCounter", "AggregateIP", "AggregateIPFlows"],
};

/// Where a packet's number comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anno {
    /// Annotations bricks does not have (Click's PACKET_NUMBER,
    /// SEQUENCE_NUMBER), and NONE: every packet is number 0.
    Zero,
    Aggregate,
    ExtraLength,
}

impl Anno {
    fn number(self, p: &Packet) -> u32 {
        match self {
            Anno::Zero => 0,
            Anno::Aggregate => p.anno().flow,
            Anno::ExtraLength => p.anno().extra_length,
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    /// Per aggregate, per packet number, the count on each input.
    flows: HashMap<u32, BTreeMap<u32, Box<[u32]>>>,
    /// (aggregate, packet number) pairs held.
    pairs: usize,
    /// Packets counted since the last `clear`.
    total: u64,
    overflows: u64,
}

#[derive(Debug)]
struct Shared {
    counts: Mutex<Counts>,
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _notifier = args.read::<String>("NOTIFIER")?;
    let anno = match args.read::<String>("ANNO")?.as_deref() {
        None | Some("PACKET_NUMBER" | "SEQUENCE_NUMBER" | "NONE") => Anno::Zero,
        Some("AGGREGATE") => Anno::Aggregate,
        Some("EXTRA_LENGTH") => Anno::ExtraLength,
        Some(_) => return Err(ArgError::new("bad ANNO")),
    };
    let capacity = super::read_capacity(args, DEFAULT_CAPACITY, MAX_CAPACITY)?;
    if ports.ninputs() != ports.noutputs() {
        return Err(ArgError::new(format!(
            "{} inputs and {} outputs: AggregatePacketCounter needs as many outputs as inputs",
            ports.ninputs(),
            ports.noutputs()
        )));
    }
    let sh = args.shared(|_| {
        Ok(Shared {
            counts: Mutex::new(Counts::default()),
        })
    })?;
    Ok(Box::new(AggregatePacketCounter {
        sh,
        anno,
        capacity,
        ninputs: ports.ninputs(),
    }))
}

/// One worker's AggregatePacketCounter.
#[derive(Debug)]
pub struct AggregatePacketCounter {
    sh: Arc<Shared>,
    anno: Anno,
    capacity: usize,
    ninputs: usize,
}

impl AggregatePacketCounter {
    fn lock(&self) -> MutexGuard<'_, Counts> {
        self.sh.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts the packets of `batch`, which arrived on `port` (Click's
    /// `smaction`).
    fn count(&self, port: usize, batch: &Batch) {
        let mut c = self.lock();
        for p in batch.iter() {
            let agg = p.anno().flow;
            if agg == 0 {
                continue;
            }
            let n = self.anno.number(p);
            let known = c.flows.get(&agg).is_some_and(|f| f.contains_key(&n));
            if !known {
                if c.pairs >= self.capacity {
                    c.overflows += 1;
                    continue;
                }
                c.pairs += 1;
            }
            let ninputs = self.ninputs;
            let counts = c
                .flows
                .entry(agg)
                .or_default()
                .entry(n)
                .or_insert_with(|| vec![0; ninputs].into_boxed_slice());
            counts[port] = counts[port].saturating_add(1);
            c.total += 1;
        }
    }

    /// The `received` and `undelivered` lists of aggregate `param`.
    fn list(&self, param: &str, undelivered: bool) -> Result<String, String> {
        let param = param.trim();
        let agg = if param.is_empty() {
            0
        } else {
            u32::from_arg(param).map_err(|_| "argument should be aggregate number".to_string())?
        };
        if undelivered && self.ninputs < 2 {
            return Err("undelivered needs two inputs".into());
        }
        let c = self.lock();
        let mut out = String::new();
        for (n, counts) in c.flows.get(&agg).into_iter().flatten() {
            let listed = if undelivered {
                counts[0] > counts[1]
            } else {
                counts.iter().any(|&k| k > 0)
            };
            if listed {
                let _ = writeln!(out, "{n}");
            }
        }
        Ok(out)
    }
}

const HANDLERS: &[Handler] = &[
    Handler::r("count"),
    Handler::r("received"),
    Handler::r("undelivered"),
    Handler::w("clear"),
];

impl Element for AggregatePacketCounter {
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.count(port, batch);
        cx.push(port, batch);
    }

    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        cx.pull(port, &mut b, max);
        self.count(port, &b);
        out.append(&mut b);
    }

    fn stats(&self, s: &mut Stats) {
        let c = self.lock();
        s.counter("aggregates", c.flows.len() as u64);
        s.counter("overflows", c.overflows);
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "clear"
    }

    fn handlers(&self) -> &'static [Handler] {
        HANDLERS
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "count" => Some(self.lock().total.to_string()),
            "received" => self.list("", false).ok(),
            "undelivered" => self.list("", true).ok(),
            _ => None,
        }
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        _cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        match (handler, write) {
            ("received", false) => Some(self.list(value, false)),
            ("undelivered", false) => Some(self.list(value, true)),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        if handler != "clear" {
            return Err(format!("no write handler `{handler}`"));
        }
        let mut c = self.lock();
        c.flows.clear();
        c.pairs = 0;
        c.total = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    /// A UDP packet 18.26.4.44:30 -> 10.0.0.4:40, aggregate `agg`, with
    /// its packet number in the extra length annotation.
    fn udp(agg: u32, number: u32) -> Packet {
        let b = [
            0x45, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 0x12, 0x1a,
            0x04, 0x2c, 0x0a, 0x00, 0x00, 0x04, 0x00, 0x1e, 0x00, 0x28, 0x00, 0x0c, 0x00, 0x00,
            0xde, 0xad, 0xbe, 0xef,
        ];
        let mut p = Packet::from_slice(&b).unwrap();
        p.anno_mut().flow = agg;
        p.anno_mut().extra_length = number;
        p
    }

    #[test]
    fn sent_and_not_received() {
        let mut h = Harness::push(&CLASS, "ANNO EXTRA_LENGTH", 2, 2);
        h.push_packets(0, [udp(5, 1), udp(5, 2), udp(5, 3), udp(5, 3), udp(6, 1)]);
        h.push_packets(1, [udp(5, 1), udp(5, 3), udp(5, 9), udp(0, 4)]);
        assert_eq!(h.take(0).len(), 5);
        assert_eq!(h.take(1).len(), 4, "packets leave by their input's output");
        assert_eq!(
            h.read_handler_with("received", "5").unwrap(),
            "1\n2\n3\n9\n"
        );
        assert_eq!(h.read_handler_with("undelivered", "5").unwrap(), "2\n3\n");
        assert_eq!(h.read_handler_with("undelivered", "6").unwrap(), "1\n");
        assert_eq!(h.read_handler_with("received", "7").unwrap(), "");
        assert_eq!(h.read_handler_with("received", "").unwrap(), "");
        assert_eq!(h.read_handler("count").unwrap(), "8");
        assert_eq!(h.stats().get("aggregates"), Some(2));
        assert_eq!(
            h.read_handler_with("received", "x").unwrap_err(),
            "argument should be aggregate number"
        );
        h.write_handler("clear", "").unwrap();
        assert_eq!(h.read_handler("count").unwrap(), "0");
        assert_eq!(h.read_handler_with("received", "5").unwrap(), "");
    }

    #[test]
    fn default_anno_numbers_every_packet_0() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [udp(5, 1), udp(5, 2)]);
        assert_eq!(h.read_handler_with("received", "5").unwrap(), "0\n");
        assert_eq!(h.read_handler("count").unwrap(), "2");
        assert!(h.read_handler_with("undelivered", "5").is_err());
    }

    #[test]
    fn capacity_bounds_the_pairs() {
        let mut h = Harness::push(&CLASS, "ANNO EXTRA_LENGTH, CAPACITY 2", 1, 1);
        h.push_packets(0, [udp(1, 0), udp(1, u32::MAX), udp(2, 0), udp(1, 0)]);
        assert_eq!(h.take(0).len(), 4, "every packet passes");
        assert_eq!(h.stats().get("overflows"), Some(1));
        assert_eq!(h.read_handler("count").unwrap(), "3");
        assert_eq!(
            h.read_handler_with("received", "1").unwrap(),
            "0\n4294967295\n"
        );
    }

    #[test]
    fn pull_counts_on_the_pulled_port() {
        let mut h = Harness::new(
            &CLASS,
            "ANNO AGGREGATE",
            PortInfo {
                inputs: vec![Processing::Pull; 2],
                outputs: vec![Processing::Pull; 2],
            },
        );
        h.feed(1, [udp(3, 0)]);
        assert_eq!(h.pull(1, 8).len(), 1);
        assert_eq!(h.read_handler_with("received", "3").unwrap(), "3\n");
        assert_eq!(h.read_handler_with("undelivered", "3").unwrap(), "");
    }

    #[test]
    fn arguments_and_ports_are_checked() {
        let ports = |i: usize, o: usize| PortInfo {
            inputs: vec![Processing::Push; i],
            outputs: vec![Processing::Push; o],
        };
        assert!(Harness::try_new(&CLASS, "", ports(2, 1)).is_err());
        assert!(Harness::try_new(&CLASS, "ANNO PAINT", ports(1, 1)).is_err());
        assert!(Harness::try_new(&CLASS, "CAPACITY 0", ports(1, 1)).is_err());
        assert!(Harness::try_new(&CLASS, "NOTIFIER x, ANNO NONE", ports(1, 1)).is_ok());
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_packets(0, [Packet::from_slice(&[]).unwrap()]);
        assert_eq!(h.take(0).len(), 1, "an empty packet of aggregate 0 passes");
        assert_eq!(h.read_handler("count").unwrap(), "0");
    }
}
