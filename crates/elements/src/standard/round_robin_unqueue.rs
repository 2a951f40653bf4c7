//! `RoundRobinUnqueue`: a task that pulls from its inputs in turn and
//! pushes each packet out of the output of the input it came from, as
//! Click's `elements/local/rrunqueue.cc`.
//!
//! Click's task serves one input per run, up to BURST packets, and moves
//! on to the next input whether or not it found any. bricks tries the
//! inputs in the same order but goes on to the next input within the run
//! when one is empty: a run that reports nothing done means every input
//! was empty, which is what lets the engine end a run whose queues have
//! drained.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_packet::MAX_BATCH;

/// The `RoundRobinUnqueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "RoundRobinUnqueue",
    ports: "-/-",
    processing: "l/h",
    manual: &MANUAL,
    make,
};

/// Packets one run moves at most with BURST 0 ("until nothing comes
/// back"), so that an input that never runs dry (a pull source without a
/// limit) cannot hold the worker for ever.
const UNTIL_EMPTY_MAX: usize = 65_536;

static MANUAL: Manual = Manual {
    summary: "pulls from its inputs in turn, pushes to the matching outputs",
    synopsis: "RoundRobinUnqueue([BURST])",
    description: "Pull-to-push converter. Pulls packets from its input ports in round robin \
        fashion, then pushes each out of the output corresponding to the input it came \
        from (input i to output i; the element needs as many outputs as inputs). Each time \
        its task runs it pulls at most BURST packets from one input, then moves on to the \
        next input. With BURST 0 it pulls until nothing comes back.\n\n\
        Differences from Click: when the input whose turn it is gives nothing, bricks goes \
        on to the next input in the same task run (Click's task spends a run on it), so the \
        inputs are tried in Click's order but an empty input costs no run; BURST 0 stops \
        after 65536 packets in one run, so that an input that never runs dry cannot hold \
        the worker; a negative BURST is refused (Click treats it as 1). Packets are pulled \
        in batches and each batch pushed before the next is pulled. The `packets` handler \
        reads Click's text, `N packets`; as a counter (in run summaries) it adds up every \
        worker's.",
    ports: "any number of pull inputs; as many push outputs",
    keywords: &[Keyword {
        name: "BURST",
        ty: "integer, 0 or more",
        default: Some("1"),
        doc: "packets pulled at most per task run, from one input; 0 for until the input \
              gives nothing; positional",
    }],
    counters: &[("packets", "packets moved (read as `N packets`)")],
    example: "q0 :: Queue; q1 :: Queue; rr :: RoundRobinUnqueue(2); \
        InfiniteSource(LIMIT 4) -> q0 -> [0]rr[0] -> Discard; \
        InfiniteSource(LIMIT 4) -> q1 -> [1]rr[1] -> Discard;",
    see_also: &["Unqueue", "RatedUnqueue", "BandwidthRatedUnqueue"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let burst: i64 = args.read_p("BURST")?.unwrap_or(1);
    let burst = usize::try_from(burst)
        .map_err(|_| ArgError::new(format!("bad BURST {burst}: must be 0 or more")))?;
    if ports.noutputs() != ports.ninputs() {
        return Err(ArgError::new(format!(
            "number of outputs must equal to number of inputs (it has {} input{} and {} \
             output{})",
            ports.ninputs(),
            if ports.ninputs() == 1 { "" } else { "s" },
            ports.noutputs(),
            if ports.noutputs() == 1 { "" } else { "s" },
        )));
    }
    Ok(Box::new(RoundRobinUnqueue {
        inputs: ports.ninputs(),
        burst: if burst == 0 { UNTIL_EMPTY_MAX } else { burst },
        next: 0,
        packets: 0,
    }))
}

/// Pulls from inputs in turn, pushes to the matching outputs.
#[derive(Debug)]
pub struct RoundRobinUnqueue {
    inputs: usize,
    /// Packets one turn moves at most.
    burst: usize,
    /// The input whose turn it is.
    next: usize,
    packets: u64,
}

impl RoundRobinUnqueue {
    /// Input `port`'s turn: moves up to `burst` packets to output `port`;
    /// how many.
    fn turn(&mut self, port: usize, cx: &mut Context<'_>) -> usize {
        let mut moved = 0;
        while moved < self.burst {
            let mut b = Batch::new();
            cx.pull(port, &mut b, (self.burst - moved).min(MAX_BATCH));
            if b.is_empty() {
                break;
            }
            moved += b.len();
            cx.push(port, &mut b);
        }
        moved
    }
}

impl Element for RoundRobinUnqueue {
    fn task_kind(&self) -> TaskKind {
        TaskKind::pump_if(self.inputs > 0)
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        for _ in 0..self.inputs {
            let port = self.next;
            self.next = if port + 1 >= self.inputs { 0 } else { port + 1 };
            let moved = self.turn(port, cx);
            if moved > 0 {
                self.packets += moved as u64;
                return TaskResult::Worked;
            }
        }
        TaskResult::Idle
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("packets", self.packets);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "packets").then(|| format!("{} packets\n", self.packets))
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: [Handler; 1] = [Handler::r("packets")];
        &HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::super::testrun::{count, plan, run};
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    fn ports(n: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull; n],
            outputs: vec![Processing::Push; n],
        }
    }

    fn feed(h: &mut Harness, port: usize, n: u8) {
        h.feed(
            port,
            (0..n).map(|i| Packet::from_slice(&[port as u8 * 16 + i]).unwrap()),
        );
    }

    fn bytes(ps: Vec<Packet>) -> Vec<u8> {
        ps.iter().map(|p| p.data()[0]).collect()
    }

    #[test]
    fn one_packet_per_run_from_each_input_in_turn() {
        let mut h = Harness::new(&CLASS, "", ports(3));
        feed(&mut h, 0, 2);
        feed(&mut h, 1, 1);
        feed(&mut h, 2, 2);
        // Runs: input 0, 1, 2, 0, (1 empty) 2, then all empty.
        let mut order = Vec::new();
        loop {
            let r = h.run_task();
            let got: Vec<(usize, u8)> = (0..3)
                .flat_map(|o| bytes(h.take(o)).into_iter().map(move |b| (o, b)))
                .collect();
            if r == TaskResult::Idle {
                assert!(got.is_empty());
                break;
            }
            assert_eq!(got.len(), 1, "{got:?}");
            order.push(got[0]);
        }
        assert_eq!(
            order,
            vec![(0, 0x00), (1, 0x10), (2, 0x20), (0, 0x01), (2, 0x21)]
        );
        assert_eq!(h.stats().get("packets"), Some(5));
        assert_eq!(h.read_handler("packets").as_deref(), Ok("5 packets\n"));
    }

    #[test]
    fn burst_packets_from_one_input_then_the_next() {
        let mut h = Harness::new(&CLASS, "BURST 3", ports(2));
        feed(&mut h, 0, 5);
        feed(&mut h, 1, 4);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(bytes(h.take(0)), vec![0x00, 0x01, 0x02]);
        assert!(h.take(1).is_empty());
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(bytes(h.take(1)), vec![0x10, 0x11, 0x12]);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(bytes(h.take(0)), vec![0x03, 0x04]);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(bytes(h.take(1)), vec![0x13]);
        assert_eq!(h.run_task(), TaskResult::Idle);
    }

    #[test]
    fn burst_0_empties_an_input_per_run() {
        let mut h = Harness::new(&CLASS, "0", ports(2));
        h.feed(0, (0..600).map(|_| Packet::from_slice(&[0]).unwrap()));
        feed(&mut h, 1, 3);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 600);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(1).len(), 3);
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.stats().get("packets"), Some(603));
    }

    #[test]
    fn an_empty_input_passes_its_turn_within_the_run() {
        let mut h = Harness::new(&CLASS, "", ports(3));
        feed(&mut h, 2, 2);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(bytes(h.take(2)), vec![0x20]);
        // Next turn is input 0's: 0 and 1 are empty, 2 gives its second.
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(bytes(h.take(2)), vec![0x21]);
        feed(&mut h, 0, 1);
        feed(&mut h, 2, 1);
        // After input 2 comes input 0.
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(bytes(h.take(0)), vec![0x00]);
    }

    #[test]
    fn arguments_and_ports() {
        let m = |a: &str, n: usize| make_element(&CLASS, a, &ports(n));
        assert!(m("", 2).is_ok());
        assert!(m("BURST 0", 2).is_ok());
        assert!(m("8", 0).is_ok());
        assert!(m("-1", 2).unwrap_err().contains("bad BURST"));
        assert!(m("many", 2).unwrap_err().contains("BURST"));
        assert!(m("1, 2", 2).unwrap_err().contains("too many"));
        let uneven = PortInfo {
            inputs: vec![Processing::Pull; 2],
            outputs: vec![Processing::Push],
        };
        let e = make_element(&CLASS, "", &uneven).unwrap_err();
        assert!(
            e.contains("number of outputs must equal to number of inputs"),
            "{e}"
        );
        let e = plan(
            "rr :: RoundRobinUnqueue; Idle -> Queue -> [0]rr; Idle -> Queue -> [1]rr; \
             rr -> Discard;",
        )
        .unwrap_err();
        assert!(e.contains("number of outputs"), "{e}");
        // No ports, no task.
        let s = run("RoundRobinUnqueue; InfiniteSource(LIMIT 1) -> Discard;");
        assert_eq!(count(&s, "RoundRobinUnqueue@1", "packets"), 0);
    }

    #[test]
    fn the_example_runs() {
        let s = run(CLASS.manual.example);
        assert_eq!(count(&s, "rr", "packets"), 8, "{}", s.render());
        assert_eq!(count(&s, "q0", "length"), 0, "{}", s.render());
    }
}
