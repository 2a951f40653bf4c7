//! `AggregateLast`: holds the latest packet of each aggregate and lets it
//! through when the `clear` handler is written (Click's
//! `elements/analysis/aggregatelast.cc`).
//!
//! A packet replacing an earlier one of its aggregate takes the earlier
//! one's bytes into its extra length annotation, so the packet let
//! through stands for the whole aggregate; the earlier one leaves by
//! output 1, or is dropped. Click holds packets until memory runs out;
//! this one holds at most CAPACITY.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `AggregateLast` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AggregateLast",
    ports: "1/1-2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

/// Default CAPACITY: packets held at most.
pub const DEFAULT_CAPACITY: usize = 16_384;
/// Largest CAPACITY.
pub const MAX_CAPACITY: usize = 1 << 20;

static MANUAL: Manual = Manual {
    summary: "lets through last packet per aggregate annotation",
    synopsis: "AggregateLast([KEYWORDS])",
    description: "Holds the latest packet with each value of the aggregate annotation. \
        When a packet of an aggregate arrives, the packet held for it leaves by output 1 (or \
        is dropped) and the new one is held instead, its extra length annotation increased \
        by the earlier packet's length and extra length. Writing the `clear` handler lets \
        every held packet out of output 0, in increasing order of aggregate, and empties the \
        table; with STOP_AFTER_CLEAR the router then stops. Held packets are lost when the \
        router stops without `clear` (`DriverManager(wait, write al.clear)`), as in Click. \
        The table is shared by every worker. Differences from Click: bricks has no extra \
        packets or first timestamp annotations, so only the extra length tells the \
        aggregate's volume; bricks holds at most CAPACITY packets (Click: until memory runs \
        out), and a packet of a new aggregate beyond that is dropped, as Click loses one it \
        has no memory for, and counted in `overflows`. NOTIFIER is accepted and not used: \
        bricks' AggregateIPFlows announces no deleted flows, so packets leave at `clear` \
        only.",
    ports: "one push input; output 0 the last packets, output 1 (optional) the others",
    keywords: &[
        Keyword {
            name: "NOTIFIER",
            ty: "element name",
            default: Some("none"),
            doc: "an AggregateIPFlows announcing deleted aggregates; accepted, not used",
        },
        Keyword {
            name: "STOP_AFTER_CLEAR",
            ty: "boolean",
            default: Some("false"),
            doc: "stop the router once `clear` has let the packets out",
        },
        Keyword {
            name: "CAPACITY",
            ty: "unsigned (bricks only)",
            default: Some("16384"),
            doc: "most packets held; from 1 to 1048576",
        },
    ],
    counters: &[
        ("held", "packets held now"),
        (
            "overflows",
            "packets of a new aggregate dropped because CAPACITY was reached",
        ),
    ],
    example:
        "InfiniteSource(LIMIT 3, STOP true) -> AggregateLength -> al :: AggregateLast -> Discard;\n\
              DriverManager(wait, write al.clear);",
    see_also: &[
        "AggregateFirst",
        "AggregateIP",
        "AggregateIPFlows",
        "AggregateCounter",
        "AggregateFilter",
    ],
};

#[derive(Debug, Default)]
struct Table {
    held: BTreeMap<u32, Packet>,
    overflows: u64,
}

#[derive(Debug)]
struct Shared {
    table: Mutex<Table>,
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _notifier = args.read::<String>("NOTIFIER")?;
    let stop_after_clear = args.read::<bool>("STOP_AFTER_CLEAR")?.unwrap_or(false);
    let capacity = super::read_capacity(args, DEFAULT_CAPACITY, MAX_CAPACITY)?;
    let sh = args.shared(|_| {
        Ok(Shared {
            table: Mutex::new(Table::default()),
        })
    })?;
    Ok(Box::new(AggregateLast {
        sh,
        capacity,
        stop_after_clear,
        two_outputs: ports.noutputs() > 1,
    }))
}

/// One worker's AggregateLast.
#[derive(Debug)]
pub struct AggregateLast {
    sh: Arc<Shared>,
    capacity: usize,
    stop_after_clear: bool,
    two_outputs: bool,
}

impl AggregateLast {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.sh.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every held packet, in increasing order of aggregate; the table
    /// empties.
    fn take_all(&self) -> Vec<Packet> {
        std::mem::take(&mut self.lock().held)
            .into_values()
            .collect()
    }
}

/// Pushes `packets` out of `port` in batches.
fn push_all(cx: &mut Context<'_>, port: usize, packets: Vec<Packet>) {
    let mut b = Batch::new();
    for p in packets {
        if let Err(p) = b.push(p) {
            cx.push(port, &mut b);
            b.clear();
            let _ = b.push(p);
        }
    }
    cx.push(port, &mut b);
}

impl Element for AggregateLast {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut replaced = Vec::new();
        {
            let capacity = self.capacity;
            let mut t = self.lock();
            for mut p in batch.drain() {
                let agg = p.anno().flow;
                let full = t.held.len() >= capacity;
                match t.held.get_mut(&agg) {
                    Some(old) => {
                        let a = p.anno_mut();
                        a.extra_length = a
                            .extra_length
                            .wrapping_add(old.len() as u32)
                            .wrapping_add(old.anno().extra_length);
                        replaced.push(std::mem::replace(old, p));
                    }
                    None if full => t.overflows += 1,
                    None => {
                        t.held.insert(agg, p);
                    }
                }
            }
        }
        if self.two_outputs {
            push_all(cx, 1, replaced);
        }
    }

    fn stats(&self, s: &mut Stats) {
        let t = self.lock();
        s.counter("held", t.held.len() as u64);
        s.counter("overflows", t.overflows);
    }

    fn handler_is_shared(&self, handler: &str) -> bool {
        handler == "clear"
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::w("clear")];
        H
    }

    fn call_handler(
        &mut self,
        handler: &str,
        _value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if handler != "clear" || !write {
            return None;
        }
        let all = self.take_all();
        push_all(cx, 0, all);
        if self.stop_after_clear {
            cx.request_stop();
        }
        Some(Ok(String::new()))
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        if handler != "clear" {
            return Err(format!("no write handler `{handler}` (clear)"));
        }
        // Without the router to push into, held packets are dropped.
        drop(self.take_all());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    /// A UDP packet 18.26.4.44:30 -> 10.0.0.4:40 with `n` bytes of data
    /// (IP ID `id`), aggregate `agg`.
    fn udp(id: u8, n: usize, agg: u32) -> Packet {
        let mut b = vec![
            0x45, 0x00, 0x00, 0x00, 0x00, id, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 0x12, 0x1a, 0x04,
            0x2c, 0x0a, 0x00, 0x00, 0x04, 0x00, 0x1e, 0x00, 0x28, 0x00, 0x00, 0x00, 0x00,
        ];
        b.resize(28 + n, 0xab);
        let len = b.len() as u16;
        b[2..4].copy_from_slice(&len.to_be_bytes());
        b[24..26].copy_from_slice(&(len - 20).to_be_bytes());
        let mut p = Packet::from_slice(&b).unwrap();
        p.anno_mut().flow = agg;
        p
    }

    fn ids_and_extra(ps: &[Packet]) -> Vec<(u8, u32, u32)> {
        ps.iter()
            .map(|p| (p.data()[5], p.anno().flow, p.anno().extra_length))
            .collect()
    }

    #[test]
    fn last_packet_leaves_at_clear_with_the_aggregates_bytes() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_packets(0, [udp(1, 4, 9), udp(2, 0, 3), udp(3, 10, 9), udp(4, 2, 9)]);
        assert!(h.take(0).is_empty());
        assert_eq!(
            ids_and_extra(&h.take(1)),
            vec![(1, 9, 0), (3, 9, 32)],
            "replaced packets leave by output 1 with what they stood for"
        );
        assert_eq!(h.stats().get("held"), Some(2));
        h.call_write_handler("clear", "").unwrap();
        // 32 + 38 bytes before the last packet of aggregate 9.
        assert_eq!(ids_and_extra(&h.take(0)), vec![(2, 3, 0), (4, 9, 70)]);
        assert_eq!(h.stats().get("held"), Some(0));
        assert!(!h.stop_requested());
    }

    #[test]
    fn stop_after_clear_and_one_output() {
        let mut h = Harness::push(&CLASS, "STOP_AFTER_CLEAR true", 1, 1);
        h.push_packets(0, [udp(1, 0, 1), udp(2, 0, 1)]);
        h.call_write_handler("clear", "").unwrap();
        assert_eq!(ids_and_extra(&h.take(0)), vec![(2, 1, 28)]);
        assert!(h.stop_requested());
    }

    #[test]
    fn capacity_bounds_the_packets_held() {
        let mut h = Harness::push(&CLASS, "CAPACITY 1", 1, 2);
        h.push_packets(0, [udp(1, 0, 1), udp(2, 0, 2), udp(3, 0, 1)]);
        assert_eq!(h.stats().get("overflows"), Some(1));
        assert_eq!(ids_and_extra(&h.take(1)), vec![(1, 1, 0)]);
        h.call_write_handler("clear", "").unwrap();
        assert_eq!(ids_and_extra(&h.take(0)), vec![(3, 1, 28)]);
        let push = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        assert!(Harness::try_new(&CLASS, "CAPACITY 0", push.clone()).is_err());
        assert!(Harness::try_new(&CLASS, "NOTIFIER x, STOP_AFTER_CLEAR maybe", push).is_err());
    }

    #[test]
    fn a_truncated_packet_is_held_like_any_other() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        let mut short = Packet::from_slice(&[0x45, 0x00]).unwrap();
        short.anno_mut().extra_length = 38;
        h.push_packets(0, [short, udp(2, 0, 0)]);
        h.call_write_handler("clear", "").unwrap();
        assert_eq!(ids_and_extra(&h.take(0)), vec![(2, 0, 40)]);
        assert!(h.write_handler("bogus", "").is_err());
    }
}
