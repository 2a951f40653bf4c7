//! One element built as the graph builder builds it, with a shared-state
//! slot that other elements may find by flow (Click's flow-based router
//! context: an IPsec element finds the RadixIPsecLookup upstream, a
//! TCPConn the TCPDemux upstream, a TCPAck the TCPBuffer downstream),
//! its push outputs captured and its pull inputs fed from queues. The
//! runtime's `Harness` cannot share state between elements: each one it
//! builds makes its own.
#![allow(dead_code)]

use bricks_config::Arg;
use bricks_element::{
    Args, Batch, Context, Edge, Element, ElementClass, ElementRefs, Graph, Packet, PortInfo,
    Processing, SharedSlot, Stats, WorkerState,
};
use bricks_packet::Timestamp;
use std::any::Any;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

type Shared<T> = Arc<Mutex<T>>;

struct Capture(Shared<Vec<Packet>>);

impl Element for Capture {
    fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
        self.0.lock().unwrap().extend(batch.drain());
    }
}

struct Feed(Shared<VecDeque<Packet>>);

impl Element for Feed {
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, _cx: &mut Context<'_>) {
        let mut q = self.0.lock().unwrap();
        while out.len() < max {
            let Some(p) = q.pop_front() else { break };
            if let Err(p) = out.push(p) {
                q.push_front(p);
                break;
            }
        }
    }
}

/// The other elements of the configuration, by class: each is upstream,
/// downstream and in scope of every port of the element being built.
#[derive(Default, Clone)]
pub struct Refs(pub Vec<(&'static str, Arc<dyn Any + Send + Sync>)>);

impl Refs {
    fn of(&self, classes: &[&str]) -> Vec<usize> {
        (0..self.0.len())
            .filter(|&i| classes.contains(&self.0[i].0))
            .collect()
    }
}

impl ElementRefs for Refs {
    fn find(&self, _name: &str) -> Option<(usize, String, &'static str)> {
        None
    }

    fn shared_of(&self, index: usize) -> Result<Arc<dyn Any + Send + Sync>, String> {
        self.0
            .get(index)
            .map(|e| e.1.clone())
            .ok_or_else(|| "no such element".into())
    }

    fn in_scope(&self, class: &str) -> Vec<usize> {
        self.of(&[class])
    }

    fn downstream(&self, _output: usize, classes: &[&str]) -> Vec<usize> {
        self.of(classes)
    }

    fn upstream(&self, _input: usize, classes: &[&str]) -> Vec<usize> {
        self.of(classes)
    }
}

/// `args` as the configuration parser splits them; each text is parsed
/// once (targets build their elements afresh for every input).
fn parsed(args: &str) -> Vec<Arg> {
    thread_local! {
        static PARSED: RefCell<HashMap<String, Vec<Arg>>> = RefCell::new(HashMap::new());
    }
    PARSED.with(|m| {
        m.borrow_mut()
            .entry(args.to_string())
            .or_insert_with(|| bricks_runtime::testing::parse_args(args).unwrap())
            .clone()
    })
}

/// One element under test.
pub struct Rig {
    graph: Graph,
    pub state: WorkerState,
    captured: Vec<Shared<Vec<Packet>>>,
    feeds: Vec<Shared<VecDeque<Packet>>>,
    slot: SharedSlot,
    noutputs: usize,
}

impl Rig {
    /// Builds `class(args)` with these ports; panics on a configuration
    /// error (the targets' configurations are fixed).
    pub fn new(
        class: &ElementClass,
        args: &str,
        inputs: &[Processing],
        outputs: &[Processing],
        refs: &Refs,
    ) -> Rig {
        let ports = PortInfo {
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
        };
        let parsed = parsed(args);
        let slot = SharedSlot::new();
        let element = {
            let mut a = Args::new(&parsed, None).with_shared(&slot).with_refs(refs);
            let e = (class.make)(&mut a, &ports)
                .unwrap_or_else(|e| panic!("{}({args}): {}", class.name, e.message));
            a.complete()
                .unwrap_or_else(|e| panic!("{}({args}): {}", class.name, e.message));
            e
        };
        let mut elements: Vec<Box<dyn Element>> = vec![element];
        let (mut outs, mut ins) = (vec![], vec![]);
        let (mut captured, mut feeds) = (vec![], vec![]);
        let (mut dut_out, mut dut_in) = (vec![], vec![]);
        for proc_ in &ports.outputs {
            let c: Shared<Vec<Packet>> = Default::default();
            captured.push(c.clone());
            if *proc_ == Processing::Push {
                dut_out.push(Edge {
                    element: elements.len() as u32,
                    port: 0,
                });
                elements.push(Box::new(Capture(c)));
                outs.push(Box::new([]) as Box<[Edge]>);
                ins.push(Box::new([]) as Box<[Edge]>);
            } else {
                dut_out.push(Edge::NONE);
            }
        }
        for proc_ in &ports.inputs {
            let f: Shared<VecDeque<Packet>> = Default::default();
            feeds.push(f.clone());
            if *proc_ == Processing::Pull {
                dut_in.push(Edge {
                    element: elements.len() as u32,
                    port: 0,
                });
                elements.push(Box::new(Feed(f)));
                outs.push(Box::new([]) as Box<[Edge]>);
                ins.push(Box::new([]) as Box<[Edge]>);
            } else {
                dut_in.push(Edge::NONE);
            }
        }
        outs.insert(0, dut_out.into_boxed_slice());
        ins.insert(0, dut_in.into_boxed_slice());
        let names = (0..elements.len()).map(|i| format!("e{i}")).collect();
        Rig {
            graph: Graph::new(elements, names, outs, ins),
            state: WorkerState::new(0, 1),
            captured,
            feeds,
            slot,
            noutputs: ports.outputs.len(),
        }
    }

    /// The element's shared state, for the elements that find it.
    pub fn shared(&self) -> Arc<dyn Any + Send + Sync> {
        self.slot
            .get()
            .expect("the element keeps shared state")
            .clone()
    }

    /// Pushes `packets` into input `port`, one batch.
    pub fn push(&mut self, port: usize, packets: impl IntoIterator<Item = Packet>) {
        let mut b = Batch::new();
        for p in packets {
            if let Err(p) = b.push(p) {
                self.push_batch(port, &mut b);
                b.clear();
                let _ = b.push(p);
            }
        }
        self.push_batch(port, &mut b);
    }

    fn push_batch(&mut self, port: usize, b: &mut Batch) {
        if b.is_empty() {
            return;
        }
        self.graph
            .with_element(0, &mut self.state, |e, cx| e.push(port, b, cx));
        // An element must take every packet (the graph drops what it
        // leaves and counts it against it, as `unconnected_drops`).
        assert!(b.is_empty(), "the element left packets in its batch");
    }

    /// Pushes `packets` and returns what came out of each output.
    pub fn run(
        &mut self,
        port: usize,
        packets: impl IntoIterator<Item = Packet>,
    ) -> Vec<Vec<Packet>> {
        self.push(port, packets);
        self.take_all()
    }

    /// Queues packets for pull input `port`.
    pub fn feed(&mut self, port: usize, packets: impl IntoIterator<Item = Packet>) {
        self.feeds[port].lock().unwrap().extend(packets);
    }

    /// Packets still queued for pull input `port`.
    pub fn fed(&self, port: usize) -> usize {
        self.feeds[port].lock().unwrap().len()
    }

    /// Pulls up to `max` packets from output `port`.
    pub fn pull(&mut self, port: usize, max: usize) -> Vec<Packet> {
        let mut b = Batch::new();
        self.graph
            .with_element(0, &mut self.state, |e, cx| e.pull(port, &mut b, max, cx));
        b.drain().collect()
    }

    /// What push output `port` gave since the last take.
    pub fn take(&mut self, port: usize) -> Vec<Packet> {
        std::mem::take(&mut *self.captured[port].lock().unwrap())
    }

    /// What every output gave since the last take, by output.
    pub fn take_all(&mut self) -> Vec<Vec<Packet>> {
        (0..self.noutputs).map(|o| self.take(o)).collect()
    }

    pub fn stats(&self) -> Stats {
        self.graph.stats(0)
    }

    /// A counter; 0 when the element does not report it.
    pub fn counter(&self, name: &str) -> u64 {
        self.stats().get(name).unwrap_or(0)
    }

    /// Calls a handler as the engine does for a control socket (with the
    /// worker's context, so that it may push packets).
    pub fn call(&mut self, handler: &str, value: &str, write: bool) -> Result<String, String> {
        self.graph
            .call_handler(0, handler, value, write, &mut self.state)
    }

    /// Reads a handler as Click prints it.
    pub fn read(&self, handler: &str) -> Result<String, String> {
        self.graph.read_handler(0, handler).map(|v| v.into_text())
    }

    pub fn start(&mut self) {
        self.graph
            .with_element(0, &mut self.state, |e, cx| e.start(cx));
    }

    /// Moves the clock to `t` and runs the element's timer once if it
    /// asked for one at or before `t`.
    pub fn advance_to(&mut self, t: Timestamp) {
        self.state.now = t;
        if self.state.timer_requests.iter().any(|&(at, _)| at <= t) {
            self.state.timer_requests.retain(|&(at, _)| at > t);
            self.graph
                .with_element(0, &mut self.state, |e, cx| e.run_timer(cx));
        }
    }
}
