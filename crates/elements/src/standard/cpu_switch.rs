//! `CPUSwitch`: sends each packet to the output of the worker that
//! handles it (Click's `elements/standard/cpuswitch.cc`, which uses the
//! current CPU). bricks pins one worker per core, so the worker index is
//! its CPU as the configuration sees it: output `worker % N`.

use bricks_element::{ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo};

/// The `CPUSwitch` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CPUSwitch",
    ports: "1/1-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "classifies packets by the worker that handles them",
    synopsis: "CPUSwitch",
    description: "Sends every packet out of output W mod N, where W is the index of the \
        worker running it (0 for the first) and N the number of outputs: with as many \
        outputs as workers, each worker's packets leave by its own output, to a per-worker \
        queue or device queue. Click uses the number of the CPU the thread runs on; bricks \
        uses the worker index, which is the same on a router whose workers are pinned to \
        CPUs 0 to N-1 and stays meaningful when they are pinned elsewhere or not at all. \
        A batch belongs to one worker, so it leaves whole by one output.",
    ports: "one push input; one or more push outputs",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LIMIT 4) -> s :: CPUSwitch; s[0] -> Discard; s[1] -> Discard;",
    see_also: &["RoundRobinSwitch", "StrideSwitch", "HashSwitch"],
};

fn make(_args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(CpuSwitch {
        n: ports.noutputs().max(1),
    }))
}

/// Sends packets to the output of their worker.
#[derive(Debug)]
pub struct CpuSwitch {
    n: usize,
}

impl Element for CpuSwitch {
    #[inline]
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push(cx.worker() % self.n, batch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Edge, Graph, Packet, Processing, WorkerState};
    use bricks_runtime::testing::{make_element, Harness};
    use std::sync::{Arc, Mutex};

    /// An ICMP echo request in an Ethernet frame, 42 bytes.
    const PING: [u8; 42] = [
        0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00, // Ethernet
        0x45, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x01, 0x66, 0xde, 10, 0, 0, 1, 10, 0,
        0, 2, // IPv4
        0x08, 0x00, 0xf7, 0xfe, 0x00, 0x01, 0x00, 0x00, // ICMP echo
    ];

    struct Sink(Arc<Mutex<Vec<Packet>>>);

    impl Element for Sink {
        fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
            self.0.lock().unwrap().extend(batch.drain());
        }
    }

    /// How many packets of one batch of 3 each of `noutputs` outputs gets
    /// on worker `worker` of `workers`.
    fn counts_on(worker: usize, workers: usize, noutputs: usize) -> Vec<usize> {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; noutputs],
        };
        let e = make_element(&CLASS, "", &ports).unwrap();
        let sinks: Vec<Arc<Mutex<Vec<Packet>>>> =
            (0..noutputs).map(|_| Default::default()).collect();
        let mut elements: Vec<Box<dyn Element>> = vec![e];
        let mut names = vec!["cs".to_string()];
        let mut outputs: Vec<Box<[Edge]>> = vec![(0..noutputs)
            .map(|o| Edge {
                element: o as u32 + 1,
                port: 0,
            })
            .collect()];
        let mut inputs: Vec<Box<[Edge]>> = vec![vec![Edge::NONE].into_boxed_slice()];
        for (o, s) in sinks.iter().enumerate() {
            elements.push(Box::new(Sink(s.clone())));
            names.push(format!("out{o}"));
            outputs.push(Box::default());
            inputs.push(Box::default());
        }
        let graph = Graph::new(elements, names, outputs, inputs);
        let mut state = WorkerState::new(worker, workers);
        let mut b = Batch::new();
        for _ in 0..3 {
            b.push(Packet::from_slice(&PING).unwrap()).unwrap();
        }
        graph.with_element(0, &mut state, |e, cx| e.push(0, &mut b, cx));
        sinks.iter().map(|s| s.lock().unwrap().len()).collect()
    }

    #[test]
    fn each_worker_uses_its_output() {
        assert_eq!(counts_on(0, 4, 4), [3, 0, 0, 0]);
        assert_eq!(counts_on(1, 4, 4), [0, 3, 0, 0]);
        assert_eq!(counts_on(3, 4, 4), [0, 0, 0, 3]);
    }

    #[test]
    fn more_workers_than_outputs_wrap_around() {
        assert_eq!(counts_on(2, 3, 2), [3, 0]);
        assert_eq!(counts_on(5, 8, 2), [0, 3]);
        assert_eq!(counts_on(7, 8, 1), [3]);
    }

    #[test]
    fn passes_packets_unchanged_even_short_ones() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, &PING);
        h.push_bytes(0, &PING[..1]);
        assert_eq!(h.take_bytes(0), vec![PING.to_vec(), PING[..1].to_vec()]);
        assert!(h.take(1).is_empty());
    }

    #[test]
    fn takes_no_arguments() {
        assert!(make_element(&CLASS, "1", &PortInfo::default()).is_err());
    }

    #[test]
    fn runs_in_a_configuration() {
        use crate::standard::testrun::{count, run};
        run(MANUAL.example);
        // One worker, worker 0: everything leaves by output 0.
        let s = run("InfiniteSource(LIMIT 5) -> s :: CPUSwitch; \
            s[0] -> a :: Discard; s[1] -> b :: Discard;");
        assert_eq!((count(&s, "a", "count"), count(&s, "b", "count")), (5, 0));
    }
}
