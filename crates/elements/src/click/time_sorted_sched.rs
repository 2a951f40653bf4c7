//! `TimeSortedSched`: merges packet streams sorted by timestamp, as Click's
//! `elements/analysis/timesortedsched.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo,
};
use std::collections::VecDeque;

/// The `TimeSortedSched` class.
pub static CLASS: ElementClass = ElementClass {
    name: "TimeSortedSched",
    ports: "-/1",
    processing: "l/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "merges sorted packet streams by timestamp",
    synopsis: "TimeSortedSched([STOP, BUFFER])",
    description: "Answers each pull with the packet of earliest timestamp among the next \
        packets of its inputs, keeping up to BUFFER packets per input so that slightly \
        unsorted streams still come out in order. The `well_ordered` handler reads false \
        once a packet left earlier than one before it (an input was not sorted). With STOP \
        true, a pull that finds no packet while nothing upstream may have one (Click's \
        empty notifiers: sources at their end or inactive, empty queues, Idle) asks the \
        router to stop, once until packets flow again (a DriverManager counts each).",
    ports: "pull inputs (any number); one pull output",
    keywords: &[
        Keyword {
            name: "STOP",
            ty: "boolean",
            default: Some("false"),
            doc: "stop the router when no input may have packets",
        },
        Keyword {
            name: "BUFFER",
            ty: "unsigned, 1 to 1024",
            default: Some("1"),
            doc: "packets held per input",
        },
    ],
    counters: &[],
    example: "InfiniteSource(LIMIT 2) -> SetTimestamp(2) -> a :: Queue; \
        InfiniteSource(LIMIT 2) -> SetTimestamp(1) -> b :: Queue; \
        t :: TimeSortedSched(BUFFER 4); a -> [0]t; b -> [1]t; t -> Unqueue -> Discard;",
    see_also: &["FromDump", "PrioSched", "RoundRobinSched"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let stop: bool = args.read("STOP")?.unwrap_or(false);
    let buffer: usize = args.read("BUFFER")?.unwrap_or(1);
    if !(1..=1024).contains(&buffer) {
        return Err(ArgError::new(format!(
            "BUFFER must be between 1 and 1024, found {buffer}"
        )));
    }
    Ok(Box::new(TimeSortedSched {
        held: (0..ports.ninputs()).map(|_| VecDeque::new()).collect(),
        buffer,
        last: 0,
        well_ordered: true,
        stop,
        asleep: false,
    }))
}

/// Merges by timestamp.
#[derive(Debug)]
pub struct TimeSortedSched {
    /// Packets held per input, each sorted by timestamp.
    held: Vec<VecDeque<Packet>>,
    buffer: usize,
    last: u64,
    well_ordered: bool,
    /// STOP: ask the router to stop when no input may have packets.
    stop: bool,
    /// It found nothing while nothing upstream may have packets, and has
    /// not had a packet since (Click's task asleep on its notifiers): the
    /// stop is asked for once per such time.
    asleep: bool,
}

impl TimeSortedSched {
    fn refill(&mut self, cx: &mut Context<'_>) {
        for (i, q) in self.held.iter_mut().enumerate() {
            let want = self.buffer - q.len();
            if want == 0 {
                continue;
            }
            let mut b = Batch::new();
            cx.pull(i, &mut b, want);
            for p in b.drain() {
                // Insert in order, so that BUFFER absorbs local disorder.
                let t = p.anno().timestamp;
                let at = q
                    .iter()
                    .rposition(|x| x.anno().timestamp <= t)
                    .map_or(0, |k| k + 1);
                q.insert(at, p);
            }
        }
    }

    fn next(&mut self) -> Option<Packet> {
        let (i, _) = self
            .held
            .iter()
            .enumerate()
            .filter_map(|(i, q)| q.front().map(|p| (i, p.anno().timestamp)))
            .min_by_key(|&(i, t)| (t, i))?;
        let p = self.held[i].pop_front()?;
        let t = p.anno().timestamp.0;
        if t < self.last {
            self.well_ordered = false;
        }
        self.last = t;
        Some(p)
    }
}

impl Element for TimeSortedSched {
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let before = out.len();
        for _ in 0..max {
            self.refill(cx);
            let Some(p) = self.next() else { break };
            if let Err(p) = out.push(p) {
                drop(p);
                break;
            }
        }
        if out.len() > before {
            self.asleep = false;
        } else if self.stop
            && !self.asleep
            && self.held.iter().all(VecDeque::is_empty)
            && !(0..self.held.len()).any(|i| cx.upstream_active(i))
        {
            self.asleep = true;
            cx.request_stop();
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "well_ordered").then(|| self.well_ordered.to_string())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("well_ordered")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_element::Processing;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    const MS: u64 = 1_000_000;

    fn at(ms: u64) -> Packet {
        let mut p = Packet::from_slice(&udp(4)).unwrap();
        p.anno_mut().timestamp = Timestamp(ms * MS);
        p
    }

    fn merge(args: &str, a: &[u64], b: &[u64]) -> Vec<u64> {
        let ports = PortInfo {
            inputs: vec![Processing::Pull; 2],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, args, ports);
        h.feed(0, a.iter().map(|&t| at(t)));
        h.feed(1, b.iter().map(|&t| at(t)));
        let mut out = Vec::new();
        for _ in 0..20 {
            out.extend(h.pull(0, 1).iter().map(|p| p.anno().timestamp.0 / MS));
        }
        out
    }

    #[test]
    fn click_test_cases() {
        // Click's test/analysis/TimeSortedSched-01, in milliseconds.
        let f2 = [300, 800, 900, 1400];
        let out = merge("STOP true", &[100, 200, 1000, 1200, 5500], &f2);
        assert_eq!(out, vec![100, 200, 300, 800, 900, 1000, 1200, 1400, 5500]);
        let out = merge("", &[100, 1000, 200, 1200, 5500], &f2);
        assert_eq!(out, vec![100, 300, 800, 900, 1000, 200, 1200, 1400, 5500]);
        // A buffer of two sorts the swapped pair.
        let out = merge("BUFFER 2", &[100, 1000, 200, 1200, 5500], &f2);
        assert_eq!(out, vec![100, 200, 300, 800, 900, 1000, 1200, 1400, 5500]);
    }

    #[test]
    fn well_ordered_handler() {
        let mut t = TimeSortedSched {
            held: vec![VecDeque::from([at(5)]), VecDeque::from([at(3)])],
            buffer: 1,
            last: 0,
            well_ordered: true,
            stop: false,
            asleep: false,
        };
        assert_eq!(t.next().unwrap().anno().timestamp.0, 3 * MS);
        assert_eq!(t.read_handler("well_ordered").as_deref(), Some("true"));
        t.held[1].push_back(at(1));
        t.next();
        t.next();
        assert_eq!(t.read_handler("well_ordered").as_deref(), Some("false"));
        let ports = PortInfo::default();
        assert!(bricks_runtime::testing::make_element(&CLASS, "BUFFER 0", &ports).is_err());
    }
}
