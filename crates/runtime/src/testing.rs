//! A harness that runs one element in isolation, for element unit tests:
//! packets go into its inputs, whatever comes out of each output is
//! captured, pull inputs are fed from lists, and time can be moved by hand.

use bricks_config::{Arg, Source, SourceMap};
use bricks_element::{
    Args, Batch, Context, Edge, Element, ElementClass, ElementRefs, Graph, Packet, PortInfo,
    Processing, SharedSlot, Stats, TaskResult, WorkerState,
};
use bricks_packet::Timestamp;
use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

type Shared<T> = Arc<Mutex<T>>;

/// Records every packet pushed into it (push) or nothing (pull side).
struct Capture(Shared<Vec<Packet>>);

impl Element for Capture {
    fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
        let mut v = self.0.lock().unwrap();
        v.extend(batch.drain());
    }
}

/// Hands out queued packets when pulled.
struct Feed(Shared<VecDeque<Packet>>);

impl Element for Feed {
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, _cx: &mut Context<'_>) {
        let mut q = self.0.lock().unwrap();
        for _ in 0..max {
            let Some(p) = q.pop_front() else { break };
            if let Err(p) = out.push(p) {
                q.push_front(p);
                break;
            }
        }
    }
}

/// Parses an argument string the way a configuration would.
pub fn parse_args(text: &str) -> Result<Vec<Arg>, String> {
    let mut map = SourceMap::default();
    let src = format!("x :: Harness({text});");
    let r = bricks_config::parse(
        &mut map,
        Source {
            name: "<test>".into(),
            text: src,
        },
    )
    .map_err(|d| {
        d.iter()
            .map(|d| map.render(d))
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(r.elements[0].args.to_vec())
}

/// Parses configuration `text` and builds its plan with `registry`'s
/// classes, as `bricks run -e` does; on failure, every diagnostic's
/// message (and help), one a line.
pub fn plan(text: &str, registry: &crate::Registry) -> Result<crate::Plan, String> {
    let mut map = SourceMap::default();
    let r = bricks_config::parse(&mut map, Source::from_string(text)).map_err(|d| {
        d.iter()
            .map(|d| map.render(d))
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    crate::build(&r, registry).map_err(|e| {
        e.iter()
            .map(|d| match &d.help {
                Some(h) => format!("{}; {h}", d.message),
                None => d.message.clone(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// Builds an element of `class` from `args` with the given ports, as the
/// graph builder would; returns the argument error's text on failure.
pub fn make_element(
    class: &ElementClass,
    args: &str,
    ports: &PortInfo,
) -> Result<Box<dyn Element>, String> {
    make_element_with_refs(class, args, ports, &bricks_element::FixedRefs::default())
}

/// Like [`make_element`], with other elements its arguments may name
/// (`TABLE ft`).
pub fn make_element_with_refs(
    class: &ElementClass,
    args: &str,
    ports: &PortInfo,
    refs: &dyn ElementRefs,
) -> Result<Box<dyn Element>, String> {
    build(class, &parse_args(args)?, ports, refs, &SharedSlot::new())
}

/// Builds an element as the graph builder does, its shared state (if it
/// keeps one) put in `slot`.
fn build(
    class: &ElementClass,
    args: &[Arg],
    ports: &PortInfo,
    refs: &dyn ElementRefs,
    slot: &SharedSlot,
) -> Result<Box<dyn Element>, String> {
    let mut a = Args::new(args, None).with_shared(slot).with_refs(refs);
    let e = (class.make)(&mut a, ports).map_err(|e| e.message)?;
    a.complete().map_err(|e| e.message)?;
    Ok(e)
}

/// Other elements as Click's flow-based router context finds them, by
/// class: each is upstream, downstream and in scope of every port of the
/// element under test, its shared state given (a TCPConn finds the
/// TCPDemux upstream, an IPsec element the RadixIPsecLookup).
#[derive(Default, Clone)]
pub struct FlowRefs(pub Vec<(&'static str, Arc<dyn Any + Send + Sync>)>);

impl FlowRefs {
    fn of(&self, classes: &[&str]) -> Vec<usize> {
        (0..self.0.len())
            .filter(|&i| classes.contains(&self.0[i].0))
            .collect()
    }
}

impl ElementRefs for FlowRefs {
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

/// One element under test, wired to captures and feeds.
pub struct Harness {
    graph: Graph,
    state: WorkerState,
    captured: Vec<Shared<Vec<Packet>>>,
    feeds: Vec<Shared<VecDeque<Packet>>>,
    /// The element's shared state, where it keeps one (other elements
    /// find it through [`FlowRefs`]).
    slot: SharedSlot,
}

impl Harness {
    /// An element with `ninputs` push inputs and `noutputs` push outputs.
    pub fn push(class: &ElementClass, args: &str, ninputs: usize, noutputs: usize) -> Harness {
        Harness::new(
            class,
            args,
            PortInfo {
                inputs: vec![Processing::Push; ninputs],
                outputs: vec![Processing::Push; noutputs],
            },
        )
    }

    /// An element with the given resolved ports. Push outputs are captured;
    /// pull inputs are fed from [`Harness::feed`].
    pub fn new(class: &ElementClass, args: &str, ports: PortInfo) -> Harness {
        Harness::try_new(class, args, ports).unwrap_or_else(|e| panic!("{}: {e}", class.name))
    }

    /// Like [`Harness::new`], but returns the configuration error.
    pub fn try_new(class: &ElementClass, args: &str, ports: PortInfo) -> Result<Harness, String> {
        Harness::with_refs(class, args, ports, &bricks_element::FixedRefs::default())
    }

    /// Like [`Harness::try_new`], with other elements the arguments may
    /// name (`TABLE ft`): their shared state in `refs`.
    pub fn with_refs(
        class: &ElementClass,
        args: &str,
        ports: PortInfo,
        refs: &dyn ElementRefs,
    ) -> Result<Harness, String> {
        Harness::from_args(class, &parse_args(args)?, ports, refs)
    }

    /// Like [`Harness::with_refs`], with the arguments already parsed
    /// ([`parse_args`]): what a fuzz target that builds its element
    /// afresh for every input parses once.
    pub fn from_args(
        class: &ElementClass,
        args: &[Arg],
        ports: PortInfo,
        refs: &dyn ElementRefs,
    ) -> Result<Harness, String> {
        let slot = SharedSlot::new();
        let element = build(class, args, &ports, refs, &slot)?;
        let mut elements: Vec<Box<dyn Element>> = vec![element];
        let mut names = vec!["dut".to_string()];
        let mut outs: Vec<Box<[Edge]>> = Vec::new();
        let mut ins: Vec<Box<[Edge]>> = Vec::new();
        let mut captured = Vec::new();
        let mut feeds = Vec::new();
        let mut dut_out = Vec::new();
        for (p, proc_) in ports.outputs.iter().enumerate() {
            let c: Shared<Vec<Packet>> = Default::default();
            captured.push(c.clone());
            if *proc_ == Processing::Push {
                dut_out.push(Edge {
                    element: elements.len() as u32,
                    port: 0,
                });
                elements.push(Box::new(Capture(c)));
                names.push(format!("out{p}"));
                outs.push(Box::new([]));
                ins.push(Box::new([]));
            } else {
                dut_out.push(Edge::NONE);
            }
        }
        let mut dut_in = Vec::new();
        for (p, proc_) in ports.inputs.iter().enumerate() {
            let f: Shared<VecDeque<Packet>> = Default::default();
            feeds.push(f.clone());
            if *proc_ == Processing::Pull {
                dut_in.push(Edge {
                    element: elements.len() as u32,
                    port: 0,
                });
                elements.push(Box::new(Feed(f)));
                names.push(format!("in{p}"));
                outs.push(Box::new([]));
                ins.push(Box::new([]));
            } else {
                dut_in.push(Edge::NONE);
            }
        }
        outs.insert(0, dut_out.into_boxed_slice());
        ins.insert(0, dut_in.into_boxed_slice());
        Ok(Harness {
            graph: Graph::new(elements, names, outs, ins),
            state: WorkerState::new(0, 1),
            captured,
            feeds,
            slot,
        })
    }

    /// The element's shared state, for the elements that find it
    /// ([`FlowRefs`]); `None` when it keeps none.
    pub fn shared(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.slot.get().cloned()
    }

    /// [`Harness::shared`] as the type the element made it; panics when
    /// it keeps none or another type.
    pub fn shared_as<T: Any + Send + Sync>(&self) -> Arc<T> {
        self.shared()
            .expect("the element keeps shared state")
            .downcast::<T>()
            .unwrap_or_else(|_| panic!("shared state of another type"))
    }

    /// Pushes `packets` into input `port` as one batch per 256 packets.
    pub fn push_packets(&mut self, port: usize, packets: impl IntoIterator<Item = Packet>) {
        let mut b = Batch::new();
        for p in packets {
            if let Err(p) = b.push(p) {
                self.push_batch(port, &mut b);
                let _ = b.push(p);
            }
        }
        self.push_batch(port, &mut b);
    }

    /// Pushes batch `b` into input `port`. An element must take every
    /// packet (the graph drops what it leaves and counts it against it, as
    /// `unconnected_drops`): this panics when it does not.
    pub fn push_batch(&mut self, port: usize, b: &mut Batch) {
        if b.is_empty() {
            return;
        }
        self.graph
            .with_element(0, &mut self.state, |e, cx| e.push(port, b, cx));
        assert!(b.is_empty(), "the element left packets in its batch");
    }

    /// Pushes `packets` into input `port` and takes what came out of
    /// each push output, by output.
    pub fn run(
        &mut self,
        port: usize,
        packets: impl IntoIterator<Item = Packet>,
    ) -> Vec<Vec<Packet>> {
        self.push_packets(port, packets);
        self.take_all()
    }

    /// Pushes one frame (bytes) into input `port`.
    pub fn push_bytes(&mut self, port: usize, frame: &[u8]) {
        self.push_packets(port, [Packet::from_slice(frame).unwrap()]);
    }

    /// Queues packets for the element to pull from input `port`.
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

    /// Calls the element's start hook, as a worker does before its first
    /// round (elements that arm timers or take resources there).
    pub fn start(&mut self) {
        self.graph
            .with_element(0, &mut self.state, |e, cx| e.start(cx));
    }

    /// Runs the element's task once.
    pub fn run_task(&mut self) -> TaskResult {
        self.graph
            .with_element(0, &mut self.state, |e, cx| e.run_task(cx))
    }

    /// Sets the clock to `t` and runs the element's timer if it asked for
    /// one at or before `t`.
    pub fn advance_to(&mut self, t: Timestamp) {
        self.state.now = t;
        let due = self.state.timer_requests.iter().any(|&(at, _)| at <= t);
        if due {
            self.state.timer_requests.retain(|&(at, _)| at > t);
            self.graph
                .with_element(0, &mut self.state, |e, cx| e.run_timer(cx));
        }
    }

    /// Sets the clock to `t` without running a timer.
    pub fn set_now(&mut self, t: Timestamp) {
        self.state.now = t;
    }

    /// Makes the clock a trace's (`--clock trace`, `--simtime`): elements
    /// then read time only from it, never from the wall clock.
    pub fn trace_clock(&mut self) {
        self.state.trace_clock = true;
    }

    /// The current clock.
    pub fn now(&self) -> Timestamp {
        self.state.now
    }

    /// Times the element has asked to be woken at.
    pub fn timers(&self) -> Vec<Timestamp> {
        self.state.timer_requests.iter().map(|&(t, _)| t).collect()
    }

    /// Takes the packets captured on output `port` so far.
    pub fn take(&mut self, port: usize) -> Vec<Packet> {
        std::mem::take(&mut *self.captured[port].lock().unwrap())
    }

    /// Takes what every push output captured so far, by output.
    pub fn take_all(&mut self) -> Vec<Vec<Packet>> {
        (0..self.captured.len()).map(|o| self.take(o)).collect()
    }

    /// Takes the frames captured on output `port`, as bytes.
    pub fn take_bytes(&mut self, port: usize) -> Vec<Vec<u8>> {
        self.take(port).iter().map(|p| p.data().to_vec()).collect()
    }

    /// The element's counters (plus packets it pushed to unconnected
    /// outputs, as `unconnected_drops`).
    pub fn stats(&self) -> Stats {
        self.graph.stats(0)
    }

    /// Calls a write handler.
    pub fn write_handler(&self, handler: &str, value: &str) -> Result<(), String> {
        self.graph.write_handler(0, handler, value)
    }

    /// Calls a write handler as the engine does for a control socket, a
    /// Script or `bricks ctl`: through the element's `call_handler`
    /// first, with the worker's context, so that a handler may push
    /// packets (captured like any output) or read the clock.
    pub fn call_write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.call_handler(handler, value, true).map(|_| ())
    }

    /// Reads a handler as Click prints it: the element's own, then the
    /// common ones (`class`, `config`, ...), then a counter.
    pub fn read_handler(&self, handler: &str) -> Result<String, String> {
        self.graph
            .read_handler(0, handler, self.state.now)
            .map(|v| v.into_text())
    }

    /// Reads a handler with parameters (Click's `READ handler params`,
    /// a Script's `$(e.handler params)`).
    pub fn read_handler_with(&mut self, handler: &str, params: &str) -> Result<String, String> {
        self.call_handler(handler, params, false)
    }

    /// Calls a handler as the engine does for a control socket: a read
    /// with parameters `value`, or a write of `value`, with the worker's
    /// context.
    pub fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
    ) -> Result<String, String> {
        self.graph
            .call_handler(0, handler, value, write, &mut self.state)
    }

    /// A counter; 0 when the element does not report it.
    pub fn counter(&self, name: &str) -> u64 {
        self.stats().get(name).unwrap_or(0)
    }

    /// Marks the router as stopping and calls the element's stopping
    /// hook, as a worker does when the router begins to stop; what the
    /// element pushes there is captured like any output.
    pub fn stopping(&mut self) {
        self.state.stopping = true;
        self.graph
            .with_element(0, &mut self.state, |e, cx| e.stopping(cx));
    }

    /// Calls the element's shutdown hook.
    pub fn shutdown(&mut self) {
        self.graph
            .with_element(0, &mut self.state, |e, cx| e.shutdown(cx));
    }

    /// Whether the element asked the router to stop.
    pub fn stop_requested(&self) -> bool {
        self.state.stop_requested
    }
}
