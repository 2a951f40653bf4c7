//! `FrontDropQueue`: a bounded FIFO that makes room for a new packet by
//! dropping the oldest (Click's `elements/standard/frontdropqueue.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats,
};
use std::collections::VecDeque;

/// The `FrontDropQueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FrontDropQueue",
    ports: "1/1-2",
    processing: "h/lh",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "stores packets in a drop-from-front FIFO",
    synopsis: "FrontDropQueue([CAPACITY])",
    description: "Stores pushed packets and hands them out, oldest first, when pulled. A \
        packet arriving while CAPACITY packets are held makes room by dropping the oldest \
        one (head drop): the newest packets survive, which suits data whose value fades \
        with age. Dropped packets go to output 1 if it is connected, else they are freed \
        and counted. Writing `capacity` changes CAPACITY while the router runs; a smaller \
        capacity keeps the newest packets and drops the oldest, as Click's live \
        reconfiguration does (bricks counts them in `drops`). Sources pushing into it are \
        never held back: it is never full.",
    ports: "one push input; a pull output and an optional push output for dropped packets",
    keywords: &[Keyword {
        name: "CAPACITY",
        ty: "unsigned",
        default: Some("1000"),
        doc: "most packets held",
    }],
    counters: &[
        ("length", "packets held now"),
        ("highwater_length", "most packets ever held"),
        ("drops", "packets dropped from the head"),
    ],
    example: "InfiniteSource(LIMIT 10) -> FrontDropQueue(4) -> Unqueue -> Discard;",
    see_also: &["Queue"],
};

/// The largest CAPACITY (the same bound as Queue's).
const MAX_CAPACITY: usize = 1 << 24;

fn parse_capacity(text: &str) -> Result<usize, String> {
    let c: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("capacity: expected a packet count, not `{text}`"))?;
    if c == 0 || c > MAX_CAPACITY {
        return Err(format!("CAPACITY {c} out of range (1 to {MAX_CAPACITY})"));
    }
    Ok(c)
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let capacity: usize = args.read_p("CAPACITY")?.unwrap_or(1000);
    let capacity = parse_capacity(&capacity.to_string()).map_err(ArgError::new)?;
    Ok(Box::new(FrontDropQueue {
        q: VecDeque::with_capacity(capacity.min(4096)),
        capacity,
        highwater: 0,
        drops: 0,
        drop_output: ports.noutputs() > 1,
    }))
}

/// A bounded FIFO that drops from the head.
#[derive(Debug)]
pub struct FrontDropQueue {
    q: VecDeque<Packet>,
    capacity: usize,
    highwater: usize,
    drops: u64,
    drop_output: bool,
}

impl Element for FrontDropQueue {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        // A batch longer than the capacity keeps only its newest packets;
        // the older ones pass through the queue's head and are dropped.
        let mut dropped = Batch::new();
        for p in batch.drain() {
            if self.q.len() == self.capacity {
                if let Some(old) = self.q.pop_front() {
                    if self.drops == 0 {
                        cx.report_overflow();
                    }
                    self.drops += 1;
                    if self.drop_output {
                        // At most one drop per input packet: it fits.
                        let _ = dropped.push(old);
                    }
                }
            }
            self.q.push_back(p);
        }
        self.highwater = self.highwater.max(self.q.len());
        if !dropped.is_empty() {
            cx.push(1, &mut dropped);
        }
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, _cx: &mut Context<'_>) {
        let n = max.min(self.q.len()).min(out.remaining());
        for p in self.q.drain(..n) {
            let _ = out.push(p);
        }
    }

    /// Hot swap: the old queue's packets (the newest, when the new
    /// capacity is smaller: this queue drops from the front; the others
    /// are counted as drops) and its counters.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<FrontDropQueue>(old) else {
            return;
        };
        let n = old.q.len();
        let skip = n.saturating_sub(self.capacity);
        self.q.extend(old.q.drain(..).skip(skip));
        self.drops += old.drops + skip as u64;
        self.highwater = self.highwater.max(old.highwater).max(self.q.len());
    }

    fn config_keyword(&self, handler: &str) -> Option<&'static str> {
        (handler == "capacity").then_some("0 CAPACITY")
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("length", self.q.len() as u64);
        s.counter("highwater_length", self.highwater as u64);
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "capacity").then(|| self.capacity.to_string())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("length"),
            Handler::r("highwater_length"),
            Handler::r("drops"),
            Handler::rw("capacity"),
            Handler::w("reset_counts"),
            Handler::w("reset"),
        ];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "capacity" => {
                let c = parse_capacity(value)?;
                if self.q.len() > c {
                    // Click keeps the newest packets and frees the oldest.
                    let lost = self.q.len() - c;
                    self.q.drain(..lost);
                    self.drops += lost as u64;
                }
                self.capacity = c;
                Ok(())
            }
            "reset_counts" => {
                self.drops = 0;
                self.highwater = self.q.len();
                Ok(())
            }
            "reset" => {
                self.q.clear();
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (FrontDropQueue has `capacity`, `reset_counts`, \
                 `reset`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::Harness;

    fn harness(args: &str, drop_output: bool) -> Harness {
        let mut outputs = vec![Processing::Pull];
        if drop_output {
            outputs.push(Processing::Push);
        }
        Harness::new(
            &CLASS,
            args,
            PortInfo {
                inputs: vec![Processing::Push],
                outputs,
            },
        )
    }

    fn bytes(v: &[u8]) -> impl Iterator<Item = Packet> + '_ {
        v.iter().map(|&i| Packet::from_slice(&[0x45, i]).unwrap())
    }

    #[test]
    fn full_queue_drops_the_oldest() {
        let mut h = harness("3", false);
        h.push_packets(0, bytes(&[0, 1, 2, 3, 4]));
        let s = h.stats();
        assert_eq!(s.get("length"), Some(3));
        assert_eq!(s.get("drops"), Some(2));
        let got: Vec<u8> = h.pull(0, 10).iter().map(|p| p.data()[1]).collect();
        assert_eq!(got, vec![2, 3, 4]);
    }

    #[test]
    fn dropped_packets_leave_by_output_1() {
        let mut h = harness("2", true);
        h.push_packets(0, bytes(&[0, 1, 2, 3]));
        assert_eq!(h.take_bytes(1), vec![vec![0x45, 0], vec![0x45, 1]]);
        let got: Vec<u8> = h.pull(0, 10).iter().map(|p| p.data()[1]).collect();
        assert_eq!(got, vec![2, 3]);
    }

    #[test]
    fn shrinking_keeps_the_newest() {
        let mut h = harness("", false);
        h.push_packets(0, bytes(&[0, 1, 2, 3]));
        h.write_handler("capacity", "100").unwrap();
        assert_eq!(h.read_handler("capacity").as_deref(), Ok("100"));
        h.write_handler("capacity", "1").unwrap();
        let got: Vec<u8> = h.pull(0, 10).iter().map(|p| p.data()[1]).collect();
        assert_eq!(got, vec![3]);
        assert_eq!(h.stats().get("drops"), Some(3));
        assert!(h.write_handler("capacity", "0").is_err());
    }
}
