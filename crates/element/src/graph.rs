//! One worker's instance of the element graph, and the context an element
//! sees while it runs.

use crate::{Element, HandlerValue, Stats};
use arrayvec::ArrayVec;
use bricks_packet::{Batch, Packet, Timestamp, MAX_BATCH};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};

mod notifier;

/// One end of a connection: an element and one of its ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    /// Element index in the graph.
    pub element: u32,
    /// Port number on that element.
    pub port: u32,
}

impl Edge {
    /// No connection.
    pub const NONE: Edge = Edge {
        element: u32::MAX,
        port: u32::MAX,
    };

    /// Whether this is a real connection.
    #[inline(always)]
    pub fn is_some(self) -> bool {
        self.element != u32::MAX
    }
}

/// The elements of one worker and how their ports are connected.
///
/// Elements sit in `RefCell`s: a push or pull borrows the callee for the
/// length of one batch. Click allows push cycles (an IP router sends its
/// ICMP errors back into the route lookup that is still handling the
/// batch that caused them); a push that reaches an element already busy
/// further up the call chain is deferred instead, and delivered as soon as
/// that element's own push returns, before its caller goes on (the order
/// Click's nested call gives: a `Bypass` whose bypass path leads back into
/// it emits the packet before the next one comes); what a task's own
/// element is sent back is delivered when the task's run returns. Pull
/// cycles are refused when the graph is built.
///
/// A push is a call, so a chain of pushes is a chain of calls on the
/// worker's stack. A push that would nest deeper than [`MAX_PUSH_DEPTH`]
/// calls is deferred the same way: a chain of ten thousand elements runs
/// in segments of that depth instead of overflowing the stack, at the cost
/// of queueing each packet once per segment.
pub struct Graph {
    /// The elements, each with where its push outputs lead.
    elements: Vec<Node>,
    names: Vec<String>,
    /// What the generic read handlers say of each element (empty when the
    /// graph was built without it).
    meta: Vec<ElementMeta>,
    /// For each element, the input each output passes pulls to while the
    /// element is busy ([`Element::pull_passes_to`]).
    pull_passes: Vec<Box<[Option<u32>]>>,
    /// Packets pushed to an output that no connection takes.
    unconnected: Vec<Cell<u64>>,
    /// Packets pushed into an element that was busy (a push cycle) or
    /// too deep in the stack: (element, input port, packet), delivered
    /// when the busy element returns ([`Context::push`]) or by
    /// `run_deferred`.
    deferred: RefCell<VecDeque<(u32, u32, Packet)>>,
    /// Handler writes to an element that was busy further up the stack
    /// (a packet `Script` resetting the `Unqueue` that pushed to it):
    /// (element, handler, value), made by `run_deferred`.
    deferred_writes: RefCell<VecDeque<(usize, String, String)>>,
    /// Elements whose finished task a handler write may have given work
    /// again (a source `reset` after its LIMIT), for the worker to run
    /// again: Click reschedules such a task. At most one entry a task.
    woken: RefCell<Vec<usize>>,
    /// Read handlers of the router itself with fixed text (`config`,
    /// `flatconfig`, `requirements`), made when read.
    router_texts: Option<RouterTextFn>,
    /// For each push output a source has asked about, the storage inputs
    /// its packets can reach, or `None` when some path ends elsewhere (a
    /// `Discard`, a device): see [`Graph::downstream_room`].
    room_paths: RefCell<HashMap<(u32, u32), RoomPath>>,
    /// Configurations changed by keyword write handlers
    /// ([`Element::config_keyword`]), by element.
    config_now: RefCell<HashMap<usize, String>>,
    /// What the task handlers say of each element with a task on this
    /// worker's graph (empty until the engine sets them).
    tasks: Vec<Option<TaskInfo>>,
    /// The configuration's AddressInfo names, for handler values
    /// ([`Element::handler_addresses`]).
    addresses: Option<std::sync::Arc<crate::addresses::AddressBook>>,
    /// The run's other workers and this one's number, when several run
    /// the graph: a counter read through a handler sums every worker's
    /// copy ([`crate::peers`]).
    peers: Option<(std::sync::Arc<crate::peers::Peers>, usize)>,
    /// The number of the last write posted by another worker made here.
    peer_applied: Cell<u64>,
}

/// One element of a [`Graph`] with the downstream end of each of its push
/// outputs and the upstream end of each of its pull inputs, side by side:
/// a push or pull reads the edge from the calling element's node (which
/// its [`Context`] holds) and finds the other element's borrow flag and
/// lists in one record, with no table of tables between.
struct Node {
    cell: RefCell<Box<dyn Element>>,
    outs: Box<[Edge]>,
    ins: Box<[Edge]>,
    /// When two or more push outputs lead to the same input (a lookup's
    /// outputs all into one `DecIPTTL`): for each output, the first
    /// output leading where it does. A batch split over such outputs goes
    /// on whole, as one batch in arrival order.
    same_as: Option<Box<[u16]>>,
    /// Every push output is connected and all lead to one input (a
    /// demultiplexer's outputs into one shared plane): any packet with
    /// an output goes on with the batch, with no `same_as` to read.
    one_input: bool,
    /// This element's index in the graph.
    index: u32,
    /// Packets were pushed back into this element while it was busy
    /// (a push cycle): its caller delivers them when its push returns.
    sent_back: Cell<bool>,
}

/// Replaces each of `ports` by the first output leading where it does
/// (`same_as`; a drop, past the list, stays) and returns the port when
/// they are now all the same. Out of line: only a mixed batch of an
/// element with such outputs comes here.
#[inline(never)]
fn fold_same_as(ports: &mut [u16], same_as: &[u16]) -> Option<u16> {
    for port in ports.iter_mut() {
        if let Some(&to) = same_as.get(usize::from(*port)) {
            *port = to;
        }
    }
    let first = *ports.first()?;
    ports.iter().all(|&p| p == first).then_some(first)
}

/// [`Node::one_input`] for push outputs `outs`: two or more, all
/// connected to one input.
fn outputs_one_input(outs: &[Edge]) -> bool {
    match outs {
        [first, rest @ ..] if !rest.is_empty() && first.is_some() => {
            rest.iter().all(|e| e == first)
        }
        _ => false,
    }
}

/// [`Node::same_as`] for push outputs `outs`: `None` when every connected
/// output leads somewhere else.
fn outputs_same_as(outs: &[Edge]) -> Option<Box<[u16]>> {
    if outs.len() > usize::from(u16::MAX) {
        return None;
    }
    let mut first: HashMap<(u32, u32), u16> = HashMap::new();
    let mut any = false;
    let same_as: Box<[u16]> = outs
        .iter()
        .enumerate()
        .map(|(i, e)| {
            if !e.is_some() {
                return i as u16;
            }
            let f = *first.entry((e.element, e.port)).or_insert(i as u16);
            any |= usize::from(f) != i;
            f
        })
        .collect();
    any.then_some(same_as)
}

/// What the handlers Click gives every element with a task
/// (`Element::add_task_handlers`: `scheduled`, `tickets`, `home_thread`)
/// say of one element on one worker.
#[derive(Debug, Clone)]
pub struct TaskInfo {
    /// Its stride-scheduling tickets (`ScheduleInfo`).
    pub tickets: u32,
    /// The worker its task runs on, -1 for none (`StaticThreadSched`).
    pub home_thread: i64,
    /// The task will run again on this worker: it is placed here and has
    /// not finished.
    pub scheduled: Cell<bool>,
    /// `StaticThreadSched` placed it: on `home_thread` only.
    pub placed: bool,
}

/// The storage inputs a push output reaches, or `None` when a path leaves
/// them ([`Graph::downstream_room`]).
type RoomPath = Option<Box<[Edge]>>;

/// The router's fixed-text read handlers (`config`, `flatconfig`,
/// `requirements`): the text of a handler by name, `None` for any other.
pub type RouterTextFn = std::sync::Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What the read handlers every element has (Click's `class`, `config`,
/// `ports`) say of one element; fixed when the graph is built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElementMeta {
    /// The class name.
    pub class: &'static str,
    /// The arguments as written; the `config` handler joins them by `, `
    /// when it is read.
    pub args: std::sync::Arc<[bricks_config::Arg]>,
    /// Click's `ports` text: each port's processing and connections.
    pub ports: String,
}

/// The read handlers every element has, in the order Click lists them.
const GENERIC_HANDLERS: [&str; 5] = ["name", "class", "config", "ports", "handlers"];

/// The read handlers of every element with a task, in Click's order.
const TASK_HANDLERS: [&str; 3] = ["scheduled", "tickets", "home_thread"];

/// The deepest a chain of pushes and pulls nests before a push is deferred
/// (see [`Graph`]). Far more than any real router needs (Click's IP router
/// is about 20 deep), and little enough stack for any worker thread.
pub const MAX_PUSH_DEPTH: u32 = 64;

/// The most batches sent back into an element that one return of its
/// push delivers (a packet going round a cycle forever is handed on a
/// batch at a time from the task's return instead).
const MAX_CYCLE_ROUNDS: usize = 1024;

/// The most handler writes waiting for a busy element, and the most made
/// in one [`Graph::run_deferred`].
const MAX_DEFERRED_WRITES: usize = 4096;

/// The longest chain of pulls a configuration may have. A pull cannot be
/// deferred like a push (its caller waits for the packets), so each
/// element of the chain is a call on the stack; the graph check refuses
/// longer chains rather than let a worker overflow its stack.
pub const MAX_PULL_DEPTH: usize = 256;

/// Prefix of the names under which a worker tells the others the numbers
/// behind its summed read handlers ([`Element::summed_reads`]); no counter
/// name starts with it.
const SUMMED: &str = "\u{1}sum:";

impl Graph {
    /// Drops packets an element could not hand on (an unconnected port,
    /// or packets it left in a pushed batch), counting them against it.
    #[cold]
    #[inline(never)]
    fn drop_leftovers(&self, element: usize, batch: &mut Batch) {
        let c = &self.unconnected[element];
        c.set(c.get() + batch.len() as u64);
        batch.clear();
    }

    /// Builds a graph. `outputs[e][p]` is where push output `p` of element
    /// `e` leads ([`Edge::NONE`] for pull outputs and unconnected optional
    /// outputs); `inputs[e][p]` is where pull input `p` of `e` comes from.
    pub fn new(
        elements: Vec<Box<dyn Element>>,
        names: Vec<String>,
        outputs: Vec<Box<[Edge]>>,
        inputs: Vec<Box<[Edge]>>,
    ) -> Graph {
        assert_eq!(elements.len(), names.len());
        assert_eq!(elements.len(), outputs.len());
        assert_eq!(elements.len(), inputs.len());
        // [`Edge::NONE`] must name no element: a push or pull finds an
        // unconnected port by the other end's bounds check alone.
        assert!(elements.len() < u32::MAX as usize);
        let n = elements.len();
        let pull_passes = elements
            .iter()
            .zip(&outputs)
            .map(|(e, outs)| {
                (0..outs.len())
                    .map(|p| e.pull_passes_to(p).map(|i| i as u32))
                    .collect()
            })
            .collect();
        Graph {
            pull_passes,
            elements: elements
                .into_iter()
                .zip(outputs)
                .zip(inputs)
                .enumerate()
                .map(|(index, ((e, outs), ins))| Node {
                    cell: RefCell::new(e),
                    same_as: outputs_same_as(&outs),
                    one_input: outputs_one_input(&outs),
                    outs,
                    ins,
                    index: index as u32,
                    sent_back: Cell::new(false),
                })
                .collect(),
            names,
            meta: Vec::new(),
            unconnected: (0..n).map(|_| Cell::new(0)).collect(),
            deferred: RefCell::new(VecDeque::new()),
            deferred_writes: RefCell::new(VecDeque::new()),
            woken: RefCell::new(Vec::new()),
            router_texts: None,
            room_paths: RefCell::new(HashMap::new()),
            config_now: RefCell::new(HashMap::new()),
            tasks: Vec::new(),
            addresses: None,
            peers: None,
            peer_applied: Cell::new(0),
        }
    }

    /// Gives handler values the configuration's AddressInfo names.
    pub fn set_addresses(&mut self, book: std::sync::Arc<crate::addresses::AddressBook>) {
        self.addresses = Some(book);
    }

    /// `value` for handler `handler` of element `index` (`e`) with the
    /// address names the element wants read in it replaced.
    fn with_addresses<'v>(
        &self,
        index: usize,
        e: &dyn Element,
        handler: &str,
        value: &'v str,
    ) -> std::borrow::Cow<'v, str> {
        match (&self.addresses, e.handler_addresses(handler)) {
            (Some(book), Some(reading)) => book.rewrite(&self.names[index], value, reading).0,
            _ => value.into(),
        }
    }

    /// Gives element `index` the task handlers (`scheduled`, `tickets`,
    /// `home_thread`), as this worker runs its task.
    pub fn set_task_info(&mut self, index: usize, info: TaskInfo) {
        if self.tasks.len() < self.elements.len() {
            self.tasks.resize(self.elements.len(), None);
        }
        self.tasks[index] = Some(info);
    }

    /// The task of element `index` finished on this worker.
    pub fn task_finished(&self, index: usize) {
        if let Some(Some(t)) = self.tasks.get(index) {
            t.scheduled.set(false);
        }
    }

    /// A write handler of element `index` succeeded: if its task had
    /// finished here, it is offered to the worker to run again (see
    /// [`Graph::take_woken`]).
    fn wrote(&self, index: usize) {
        if let Some(Some(t)) = self.tasks.get(index) {
            if !t.scheduled.replace(true) {
                self.woken.borrow_mut().push(index);
            }
        }
    }

    /// The elements whose finished tasks handler writes woke since the
    /// last call: the worker runs those it has again and calls
    /// [`Graph::task_finished`] for the others.
    pub fn take_woken(&self) -> Vec<usize> {
        std::mem::take(&mut *self.woken.borrow_mut())
    }

    /// How many packets push output `port` of `element` can take before
    /// every queue they could reach is full: the least room of the storage
    /// elements ([`Element::push_room`]) reached through push connections,
    /// or `None` when some path ends in anything but storage (which takes
    /// packets without limit, if only to drop them). Click's
    /// `Notifier::downstream_full_signal`, with the room rather than a
    /// flag so that a source fills a queue exactly. The paths are found
    /// once per output (bounded by the number of elements) and cached.
    pub fn downstream_room(&self, element: usize, port: usize) -> Option<usize> {
        let key = (element as u32, port as u32);
        self.find_room_path(key);
        let paths = self.room_paths.borrow();
        let ends = paths.get(&key)?.as_ref()?;
        let mut room = usize::MAX;
        for e in ends.iter() {
            // A queue busy further up the stack cannot be asked; its room
            // is unknown, so it does not hold the source back.
            let r = self.elements[e.element as usize]
                .cell
                .try_borrow()
                .ok()
                .and_then(|q| q.push_room(e.port as usize))?;
            room = room.min(r);
        }
        Some(room)
    }

    /// Whether push output `port` of `element` reaches only storage, so
    /// that [`Graph::downstream_room`] can ever hold a source back. It
    /// cannot change while the graph runs: a source asks once and, when
    /// the answer is no, never again.
    pub fn has_room_signal(&self, element: usize, port: usize) -> bool {
        let key = (element as u32, port as u32);
        self.find_room_path(key);
        self.room_paths
            .borrow()
            .get(&key)
            .is_some_and(|p| p.is_some())
    }

    fn find_room_path(&self, key: (u32, u32)) {
        if !self.room_paths.borrow().contains_key(&key) {
            let found = self.storage_reached(key.0 as usize, key.1 as usize);
            self.room_paths.borrow_mut().insert(key, found);
        }
    }

    /// The storage inputs reachable from push output `port` of `element`,
    /// or `None` when a path leaves them (see [`Graph::downstream_room`]).
    fn storage_reached(&self, element: usize, port: usize) -> RoomPath {
        let mut ends = Vec::new();
        let mut seen = vec![false; self.elements.len()];
        let mut todo = vec![*self.elements[element].outs.get(port)?];
        while let Some(edge) = todo.pop() {
            if !edge.is_some() {
                // An unconnected push output drops what it is given.
                return None;
            }
            let e = edge.element as usize;
            let storage = self.elements[e]
                .cell
                .try_borrow()
                .ok()
                .and_then(|el| el.push_room(edge.port as usize))
                .is_some();
            if storage {
                if !ends.contains(&edge) {
                    ends.push(edge);
                }
                continue;
            }
            if std::mem::replace(&mut seen[e], true) {
                continue;
            }
            let outs = &self.elements[e].outs;
            if outs.iter().all(|o| !o.is_some()) {
                // A sink, or an element whose outputs are all pull or
                // unconnected: it never refuses a packet.
                return None;
            }
            todo.extend(outs.iter().copied());
        }
        Some(ends.into_boxed_slice())
    }

    /// Delivers packets whose push was deferred because their element was
    /// busy (see the type's documentation), and makes the handler writes
    /// deferred for the same reason ([`Graph::call_handler`]). Returns
    /// whether there were any.
    #[inline]
    pub fn run_deferred(&self, worker: &mut WorkerState) -> bool {
        // After every task run, and almost always with nothing deferred.
        if self.deferred.borrow().is_empty() && self.deferred_writes.borrow().is_empty() {
            return false;
        }
        self.run_deferred_now(worker)
    }

    #[inline(never)]
    fn run_deferred_now(&self, worker: &mut WorkerState) -> bool {
        let mut any = false;
        // Bounded: a write may lead to another deferred write.
        for _ in 0..MAX_DEFERRED_WRITES {
            any |= self.run_deferred_pushes(worker);
            let next = self.deferred_writes.borrow_mut().pop_front();
            let Some((i, handler, value)) = next else {
                break;
            };
            any = true;
            if let Err(e) = self.call_handler(i, &handler, &value, true, worker) {
                worker
                    .errors
                    .push(format!("{}.{handler}: {e}", self.names[i]));
            }
        }
        any
    }

    fn run_deferred_pushes(&self, worker: &mut WorkerState) -> bool {
        let mut any = false;
        loop {
            let mut b = Batch::new();
            let (element, port) = {
                let mut d = self.deferred.borrow_mut();
                let Some(&(e, p, _)) = d.front() else { break };
                while let Some(&(e2, p2, _)) = d.front() {
                    if (e2, p2) != (e, p) || b.is_full() {
                        break;
                    }
                    if let Some((_, _, pkt)) = d.pop_front() {
                        let _ = b.push(pkt);
                    }
                }
                (e as usize, p as usize)
            };
            any = true;
            self.with_element(element, worker, |el, cx| el.push(port, &mut b, cx));
        }
        any
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.elements.len()
    }

    /// Whether the graph has no elements.
    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// Element names, by index.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Index of the element called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Runs `f` on element `index` with a context for it.
    pub fn with_element<R>(
        &self,
        index: usize,
        worker: &mut WorkerState,
        f: impl FnOnce(&mut dyn Element, &mut Context<'_>) -> R,
    ) -> R {
        let node = &self.elements[index];
        let mut e = node.cell.borrow_mut();
        let mut cx = Context {
            graph: self,
            node,
            depth: 0,
            worker,
        };
        f(&mut **e, &mut cx)
    }

    /// Runs `f` on element `index` alone, outside of any packet
    /// processing (a hot swap hands it to its successor).
    pub fn with_element_mut<R>(&self, index: usize, f: impl FnOnce(&mut dyn Element) -> R) -> R {
        f(&mut **self.elements[index].cell.borrow_mut())
    }

    /// Packets element `index` pushed to unconnected outputs.
    pub fn unconnected_drops(&self, index: usize) -> u64 {
        self.unconnected[index].get()
    }

    /// Adds `n` to element `index`'s unconnected drops (a hot swap carries
    /// them over from the element it replaced).
    pub fn add_unconnected_drops(&self, index: usize, n: u64) {
        let c = &self.unconnected[index];
        c.set(c.get() + n);
    }

    /// Reads element `index` outside of any packet processing.
    pub fn with_element_ref<R>(&self, index: usize, f: impl FnOnce(&dyn Element) -> R) -> R {
        f(&**self.elements[index].cell.borrow())
    }

    /// Collects the counters of element `index`.
    pub fn stats(&self, index: usize) -> Stats {
        self.try_stats(index)
            .unwrap_or_else(|| panic!("{}: element busy", self.names[index]))
    }

    /// [`Graph::stats`], or `None` for an element busy further up the
    /// stack (or no element `index`).
    fn try_stats(&self, index: usize) -> Option<Stats> {
        let mut s = Stats::default();
        self.elements
            .get(index)?
            .cell
            .try_borrow()
            .ok()?
            .stats(&mut s);
        let u = self.unconnected[index].get();
        if u > 0 {
            s.counter("unconnected_drops", u);
        }
        Some(s)
    }

    /// What element `index` tells the other workers: its counters, and
    /// the numbers behind its summed read handlers
    /// ([`Element::summed_reads`]) under [`SUMMED`]-prefixed names.
    fn peer_stats(&self, index: usize) -> Option<Stats> {
        let mut s = self.try_stats(index)?;
        let mut sums = Stats::default();
        self.elements[index]
            .cell
            .try_borrow()
            .ok()?
            .summed_reads(&mut sums);
        for (name, v) in sums.entries() {
            s.counter(format!("{SUMMED}{name}"), *v);
        }
        Some(s)
    }

    /// The sum over every worker's copy of element `index` of the number
    /// behind summed read handler `handler`, when it has one.
    fn summed_read(
        &self,
        index: usize,
        handler: &str,
        worker: &mut WorkerState,
    ) -> Option<Result<String, String>> {
        let (peers, me) = self.peers.as_ref()?;
        let mut own = Stats::default();
        let e = self.elements[index].cell.try_borrow().ok()?;
        e.summed_reads(&mut own);
        let mine = own.get(handler)?;
        drop(e);
        let others = peers.gather(*me, index, || self.serve_peers(worker));
        let total = mine.saturating_add(others.get(&format!("{SUMMED}{handler}")).unwrap_or(0));
        let e = self.elements[index].cell.try_borrow().ok()?;
        e.read_summed(handler, total).map(Ok)
    }

    /// Makes counters read through handlers sum the copies of every
    /// worker on `peers`, this graph being worker `me`'s.
    pub fn set_peers(&mut self, peers: std::sync::Arc<crate::peers::Peers>, me: usize) {
        self.peers = (peers.workers() > 1).then_some((peers, me));
    }

    /// Answers the other workers: makes the writes they posted since the
    /// last ones made here, then publishes the counters they asked for.
    pub fn serve_peers(&self, worker: &mut WorkerState) {
        let Some((peers, me)) = &self.peers else {
            return;
        };
        let asked = peers.asked();
        let mut last = self.peer_applied.get();
        for (seq, i, handler, value) in peers.writes_after(last) {
            if i < self.elements.len() {
                // An error was the writer's to report, on its own copy.
                let _ = self.call_handler_at(i, &handler, &value, true, worker, 0);
            }
            last = seq;
        }
        self.peer_applied.set(last);
        peers.applied(*me, last);
        self.publish_to_peers(asked, false);
    }

    /// Publishes the counters the other workers asked for as the answer
    /// to request `answered`, or, with `done`, every element's final
    /// counters. Elements busy further up the stack are left out.
    pub fn publish_to_peers(&self, answered: u64, done: bool) {
        let Some((peers, me)) = &self.peers else {
            return;
        };
        let one = |i: usize| Some((i, self.peer_stats(i)?));
        match peers.wanted().filter(|_| !done) {
            Some(list) => peers.publish(*me, answered, list.into_iter().filter_map(one), done),
            None => peers.publish(
                *me,
                answered,
                (0..self.elements.len()).filter_map(one),
                done,
            ),
        }
    }

    /// Sets what the generic read handlers say of each element, by index.
    /// Sets the router's fixed-text read handlers.
    pub fn set_router_texts(&mut self, texts: RouterTextFn) {
        self.router_texts = Some(texts);
    }

    /// A fixed-text read handler of the router (`config`, `flatconfig`,
    /// `requirements`), when the graph was built with them.
    pub fn router_text(&self, handler: &str) -> Option<String> {
        self.router_texts.as_ref().and_then(|f| f(handler))
    }

    pub fn set_meta(&mut self, meta: Vec<ElementMeta>) {
        assert_eq!(meta.len(), self.elements.len());
        self.meta = meta;
    }

    /// Calls a write handler on element `index`. Fails when the element is
    /// busy further up this worker's stack (a handler written from inside
    /// the element's own packet processing).
    pub fn write_handler(&self, index: usize, handler: &str, value: &str) -> Result<(), String> {
        let mut e = self.elements[index]
            .cell
            .try_borrow_mut()
            .map_err(|_| format!("{}: element busy", self.names[index]))?;
        let value = &*self.with_addresses(index, &**e, handler, value);
        e.write_handler(handler, value)?;
        self.reconfigured(index, &**e, handler, value);
        self.wrote(index);
        Ok(())
    }

    /// After write handler `handler` of element `index` took `value`:
    /// if it sets an argument, the `config` read handler shows it.
    fn reconfigured(&self, index: usize, e: &dyn Element, handler: &str, value: &str) {
        let Some(spec) = e.config_keyword(handler) else {
            return;
        };
        let old = self.config_text(index);
        let new = reconfigure(&old, spec, value);
        self.config_now.borrow_mut().insert(index, new);
    }

    /// The configuration text of element `index` as its `config` read
    /// handler shows it.
    fn config_text(&self, index: usize) -> String {
        if let Some(c) = self.config_now.borrow().get(&index) {
            return c.clone();
        }
        self.meta
            .get(index)
            .map(|m| {
                let texts: Vec<&str> = m.args.iter().map(|a| a.text.as_str()).collect();
                texts.join(", ")
            })
            .unwrap_or_default()
    }

    /// Calls handler `handler` of element `index` with a context
    /// ([`Element::call_handler`]): a read with parameters `value`, or a
    /// write of `value`; handlers the element does not take there are
    /// its plain read and write handlers. A write to an element busy
    /// further up this worker's stack (Click calls it there and then) is
    /// made as soon as the outermost push returns, as deferred pushes
    /// are; a read of a busy element fails.
    pub fn call_handler(
        &self,
        index: usize,
        handler: &str,
        value: &str,
        write: bool,
        worker: &mut WorkerState,
    ) -> Result<String, String> {
        self.call_handler_at(index, handler, value, write, worker, 0)
    }

    /// [`Graph::call_handler`] from `depth` pushes and pulls down this
    /// worker's stack (an element's handler call), which pushes the
    /// handler makes count on from.
    fn call_handler_at(
        &self,
        index: usize,
        handler: &str,
        value: &str,
        write: bool,
        worker: &mut WorkerState,
        depth: u32,
    ) -> Result<String, String> {
        let Ok(mut e) = self.elements[index].cell.try_borrow_mut() else {
            let mut d = self.deferred_writes.borrow_mut();
            if write && d.len() < MAX_DEFERRED_WRITES {
                d.push_back((index, handler.to_string(), value.to_string()));
                return Ok(String::new());
            }
            return Err(format!("{}: element busy", self.names[index]));
        };
        let value = &*self.with_addresses(index, &**e, handler, value);
        let mut cx = Context {
            graph: self,
            node: &self.elements[index],
            depth,
            worker,
        };
        if let Some(r) = e.call_handler(handler, value, write, &mut cx) {
            if write && r.is_ok() {
                self.wrote(index);
            }
            return r;
        }
        if write {
            e.write_handler(handler, value)?;
            self.reconfigured(index, &**e, handler, value);
            self.wrote(index);
            return Ok(String::new());
        }
        drop(e);
        if !value.is_empty() {
            return Err(format!(
                "read handler '{}.{handler}' does not take parameters",
                self.names[index]
            ));
        }
        if let Some(r) = self.summed_read(index, handler, worker) {
            return r;
        }
        match (self.read_handler(index, handler, worker.now)?, &self.peers) {
            // A counter: every worker's copy counts (Click's one element).
            (HandlerValue::Count(v), Some((peers, me))) => {
                let others = peers.gather(*me, index, || self.serve_peers(worker));
                Ok(HandlerValue::Count(v + others.get(handler).unwrap_or(0)).into_text())
            }
            (v, _) => Ok(v.into_text()),
        }
    }

    /// Reads handler `handler` of element `index`: the element's own read
    /// handler, then the handlers every element has (`name`, `class`,
    /// `config`, `ports`, `handlers`), then a counter by name.
    pub fn read_handler(
        &self,
        index: usize,
        handler: &str,
        now: Timestamp,
    ) -> Result<HandlerValue, String> {
        let e = self.elements[index]
            .cell
            .try_borrow()
            .map_err(|_| format!("{}: element busy", self.names[index]))?;
        if let Some(v) = e.read_handler_at(handler, now) {
            return Ok(HandlerValue::Text(v));
        }
        let meta = self.meta.get(index);
        match handler {
            "name" => return Ok(HandlerValue::Text(self.names[index].clone())),
            "class" if meta.is_some() => {
                return Ok(HandlerValue::Text(
                    meta.map(|m| m.class).unwrap_or_default().into(),
                ))
            }
            "config" if meta.is_some() => return Ok(HandlerValue::Text(self.config_text(index))),
            "ports" if meta.is_some() => {
                return Ok(HandlerValue::Text(
                    meta.map(|m| m.ports.clone()).unwrap_or_default(),
                ))
            }
            "handlers" => {
                drop(e);
                return Ok(HandlerValue::Text(self.handlers_text(index)));
            }
            _ => {}
        }
        if let Some(Some(t)) = self.tasks.get(index) {
            match handler {
                "scheduled" => {
                    drop(e);
                    let awake = t.scheduled.get() && self.task_awake(index);
                    return Ok(HandlerValue::Text(awake.to_string()));
                }
                "tickets" => return Ok(HandlerValue::Text(t.tickets.to_string())),
                "home_thread" => return Ok(HandlerValue::Text(t.home_thread.to_string())),
                _ => {}
            }
        }
        drop(e);
        match self.stats(index).get(handler) {
            Some(v) => Ok(HandlerValue::Count(v)),
            None => Err(format!("no '{}.{handler}' handler", self.names[index])),
        }
    }

    /// Whether the task of element `index` would be scheduled in Click,
    /// where a task sleeps on its notifiers: a task that pulls, while
    /// nothing upstream may have packets ([`Graph::upstream_active`]); a
    /// source that pushes, while every queue it reaches is full. bricks'
    /// tasks run on and find nothing; this is what `scheduled` reads.
    fn task_awake(&self, index: usize) -> bool {
        let ins = &self.elements[index].ins;
        if ins.iter().any(|e| e.is_some()) {
            return (0..ins.len()).any(|i| ins[i].is_some() && self.upstream_active(index, i));
        }
        !(self.has_room_signal(index, 0) && self.downstream_room(index, 0) == Some(0))
    }

    /// Click's upstream empty signal of pull input `port` of `element`
    /// (`Notifier::upstream_empty_signal`): whether a pull through it may
    /// find packets. Asks the elements upstream ([`Element::empty_signal`]),
    /// through those that do not know to their own pull inputs; a path
    /// that reaches an element with no answer and no pull inputs (a pull
    /// source without a notifier) may always have packets. Walks the
    /// graph: for handlers, never per packet.
    pub fn upstream_active(&self, element: usize, port: usize) -> bool {
        self.upstream_active_within(element, port, MAX_PUSH_DEPTH)
    }

    fn upstream_active_within(&self, element: usize, port: usize, depth: u32) -> bool {
        let Some(edge) = self.elements[element].ins.get(port).filter(|e| e.is_some()) else {
            return false;
        };
        let src = edge.element as usize;
        if depth == 0 {
            return true;
        }
        let known = match self.elements[src].cell.try_borrow() {
            Ok(e) => e.empty_signal(edge.port as usize),
            // Busy further up the stack: it is pulling, so it may have
            // packets.
            Err(_) => return true,
        };
        if let Some(active) = known {
            return active;
        }
        let ins = &self.elements[src].ins;
        if !ins.iter().any(|e| e.is_some()) {
            return true;
        }
        (0..ins.len()).any(|i| ins[i].is_some() && self.upstream_active_within(src, i, depth - 1))
    }

    /// Click's `handlers` text for element `index`: one `name<TAB>flags`
    /// line per handler, `r` for read, `w` for write.
    pub fn handlers_text(&self, index: usize) -> String {
        let mut lines: Vec<(String, bool, bool)> = GENERIC_HANDLERS
            .iter()
            .map(|h| (h.to_string(), true, false))
            .collect();
        if let Some(Some(_)) = self.tasks.get(index) {
            lines.extend(TASK_HANDLERS.iter().map(|h| (h.to_string(), true, false)));
        }
        let Ok(e) = self.elements[index].cell.try_borrow() else {
            return String::new();
        };
        let own = e.handlers();
        drop(e);
        for (name, _) in self.stats(index).entries() {
            if !own.iter().any(|h| h.name == name) {
                lines.push((name.to_string(), true, false));
            }
        }
        for h in own {
            match lines.iter_mut().find(|l| l.0 == h.name) {
                Some(l) => {
                    l.1 |= h.read;
                    l.2 |= h.write;
                }
                None => lines.push((h.name.to_string(), h.read, h.write)),
            }
        }
        let mut s = String::new();
        for (name, r, w) in lines {
            s.push_str(&name);
            s.push('\t');
            if r {
                s.push('r');
            }
            if w {
                s.push('w');
            }
            s.push('\n');
        }
        s
    }

    /// The element a handler name written inside element `from` means:
    /// Click looks a name up in the compound element `from` sits in, then
    /// in each enclosing one, then at the top level.
    pub fn resolve(&self, from: usize, name: &str) -> Option<usize> {
        let own = &self.names[from];
        let mut prefix = own.as_str();
        while let Some((outer, _)) = prefix.rsplit_once('/') {
            if let Some(i) = self.find(&format!("{outer}/{name}")) {
                return Some(i);
            }
            prefix = outer;
        }
        self.find(name)
    }
}

/// State of one worker that every element can reach through its
/// [`Context`].
#[derive(Debug)]
pub struct WorkerState {
    /// This worker's number, from 0.
    pub worker: usize,
    /// How many workers run this graph.
    pub workers: usize,
    /// Time at the start of the current scheduling round.
    pub now: Timestamp,
    /// Set by an element that wants the router to stop (Click's
    /// `STOP true`).
    pub stop_requested: bool,
    /// Stop requests not yet handed to the stop manager (Click's driver
    /// stop events, each one `adjust_runcount(-1)`).
    pub stop_events: u32,
    /// The element that manages stop requests (a `DriverManager`): while
    /// it is set, a stop request steps that element's script (its `step`
    /// handler written `router`) instead of ending the run; it ends the
    /// run by clearing this and requesting a stop.
    pub stop_manager: Option<usize>,
    /// The router is stopping: sources have ended and what is in flight
    /// drains. Elements that act on their own (scripts) rest.
    pub stopping: bool,
    /// Timers requested this round: (expiry, element).
    pub timer_requests: Vec<(Timestamp, usize)>,
    /// Time comes from the packets read (offline runs of captures), not
    /// from the wall clock: runs are then repeatable to the byte.
    pub trace_clock: bool,
    /// Errors elements reported while running (a capture that turned out
    /// damaged, a file that could not be written).
    pub errors: Vec<String>,
    /// A configuration's text written to the router's `hotconfig`
    /// handler from inside (a Script): the worker hands it to the run,
    /// which swaps it in (see [`Context::request_hotswap`]).
    pub hotswap_request: Option<String>,
    /// Scratch of [`Context::dispatch`] for batches spread over many
    /// outputs: per output, the last packet of the batch being split that
    /// goes there, stamped with that split's number.
    group_marks: GroupMarks,
}

/// Per output, `stamp << 8 | position`: the position in the batch being
/// split of the last packet found for that output, valid while `stamp`
/// is the current split's. Stamps make clearing unnecessary: a split
/// touches only the entries of the outputs its packets go to.
#[derive(Debug, Default)]
struct GroupMarks {
    marks: Vec<u32>,
    stamp: u32,
}

impl GroupMarks {
    /// Stamps that fit above the 8 bits of position.
    const STAMPS: u32 = 1 << 24;

    /// Starts a split of packets bound for outputs up to `max_port`; the
    /// split's stamp.
    #[inline]
    fn begin(&mut self, max_port: u16) -> u32 {
        if self.marks.len() <= usize::from(max_port) {
            self.marks.resize(usize::from(max_port) + 1, 0);
        }
        self.stamp += 1;
        if self.stamp == Self::STAMPS {
            self.marks.fill(0);
            self.stamp = 1;
        }
        self.stamp
    }
}

impl WorkerState {
    /// State for worker `worker` of `workers`.
    pub fn new(worker: usize, workers: usize) -> WorkerState {
        WorkerState {
            worker,
            workers,
            now: Timestamp::now(),
            stop_requested: false,
            stop_events: 0,
            stop_manager: None,
            stopping: false,
            timer_requests: Vec::new(),
            trace_clock: false,
            errors: Vec::new(),
            hotswap_request: None,
            group_marks: GroupMarks::default(),
        }
    }
}

/// What an element sees of the graph and its worker while it runs.
pub struct Context<'a> {
    graph: &'a Graph,
    /// This element's node: a push or pull reads its edge here, with no
    /// lookup of the element first.
    node: &'a Node,
    /// Pushes and pulls in progress on this worker's stack below this
    /// element's call (see [`MAX_PUSH_DEPTH`]); carried by the context,
    /// where a push finds it without a load from the graph and leaves
    /// nothing to restore.
    depth: u32,
    worker: &'a mut WorkerState,
}

impl<'a> Context<'a> {
    /// This element's index in the graph.
    #[inline(always)]
    pub fn element_index(&self) -> usize {
        self.node.index as usize
    }

    /// This element's name.
    pub fn name(&self) -> &str {
        &self.graph.names[self.element_index()]
    }

    /// This element's class name as the configuration wrote it (empty
    /// when the graph was built without it).
    pub fn class(&self) -> &str {
        self.graph.class(self.element_index())
    }

    /// Writes Click's `%p{element}: overflow` to standard error, as
    /// Click's queues do at their first drop.
    #[cold]
    pub fn report_overflow(&self) {
        eprintln!("{} :: {}: overflow", self.name(), self.class());
    }

    /// Time at the start of the current scheduling round.
    #[inline(always)]
    pub fn now(&self) -> Timestamp {
        self.worker.now
    }

    /// The worker this runs on.
    #[inline(always)]
    pub fn worker(&self) -> usize {
        self.worker.worker
    }

    /// The worker `StaticThreadSched` placed this element's task on
    /// (`Some(None)`: on none), or `None` when it was not placed.
    pub fn placed_on(&self) -> Option<Option<usize>> {
        let i = self.element_index();
        match self.graph.tasks.get(i) {
            Some(Some(t)) if t.placed => Some(usize::try_from(t.home_thread).ok()),
            _ => None,
        }
    }

    /// How many workers run this graph.
    #[inline(always)]
    pub fn workers(&self) -> usize {
        self.worker.workers
    }

    /// Number of outputs this element has in the configuration.
    #[inline(always)]
    pub fn noutputs(&self) -> usize {
        self.node.outs.len()
    }

    /// How many packets push output `port` can take before every queue
    /// they reach is full, or `None` when they can reach something that
    /// never refuses them (see [`Graph::downstream_room`]). A source that
    /// finds 0 sends nothing and reports itself idle.
    #[inline]
    pub fn downstream_room(&self, port: usize) -> Option<usize> {
        self.graph.downstream_room(self.element_index(), port)
    }

    /// What Click's `NotifierDebug` prints for this element (see
    /// [`Graph::notifier_signal_text`]). Walks the graph: for handlers.
    pub fn notifier_signal_text(&self) -> String {
        self.graph.notifier_signal_text(self.element_index())
    }

    /// Click's upstream empty signal of pull input `port`: whether a pull
    /// from it may find packets (see [`Graph::upstream_active`]). Walks
    /// the graph: for handlers and rare events, not per packet.
    pub fn upstream_active(&self, port: usize) -> bool {
        self.graph.upstream_active(self.element_index(), port)
    }

    /// Whether [`Context::downstream_room`] can ever answer for push
    /// output `port` (see [`Graph::has_room_signal`]); fixed for the run.
    pub fn has_room_signal(&self, port: usize) -> bool {
        self.graph.has_room_signal(self.element_index(), port)
    }

    /// Whether push output `port` leads somewhere.
    #[inline(always)]
    pub fn output_connected(&self, port: usize) -> bool {
        self.node.outs.get(port).is_some_and(|e| e.is_some())
    }

    /// Whether time follows the packets (an offline run of captures)
    /// rather than the wall clock. Sources then hold each packet until the
    /// clock reaches its timestamp, asking for a timer at that time; the
    /// engine jumps the clock to the next timer when nothing else is due,
    /// so captures from several interfaces interleave in time order.
    #[inline]
    pub fn trace_clock(&self) -> bool {
        self.worker.trace_clock
    }

    /// Reports an error that stops this element but not the router; the
    /// run ends with a failure status.
    pub fn report_error(&mut self, message: impl Into<String>) {
        let m = format!("{}: {}", self.name(), message.into());
        self.worker.errors.push(m);
    }

    /// Reads handler `element.handler` of another element of this worker's
    /// graph (Click's `Script` `read`), the element named as Click looks
    /// names up from inside this one's compound.
    pub fn read_handler(&mut self, element: &str, handler: &str) -> Result<String, String> {
        let i = self
            .find_element(element)
            .ok_or_else(|| format!("no element matching `{element}'"))?;
        self.call_handler(i, handler, "", false)
    }

    /// Calls write handler `element.handler` of another element of this
    /// worker's graph (Click's `Script` `write`).
    pub fn write_handler(
        &mut self,
        element: &str,
        handler: &str,
        value: &str,
    ) -> Result<(), String> {
        let i = self
            .find_element(element)
            .ok_or_else(|| format!("no element matching `{element}'"))?;
        self.call_handler(i, handler, value, true).map(|_| ())
    }

    /// The element `name` means when written inside this one, as Click
    /// looks names up: in this element's compound, then each enclosing
    /// one, then at the top level.
    pub fn find_element(&self, name: &str) -> Option<usize> {
        self.graph.resolve(self.element_index(), name)
    }

    /// Runs `f` on element `index` of this worker's graph as its own type
    /// `T` (an element that works another directly, as Click's `cast`
    /// lets one: QueueYankTest and its queue). `None` when the element is
    /// of another type, busy further up the stack, or no element.
    pub fn with_element_as<T: Element + 'static, R>(
        &mut self,
        index: usize,
        f: impl FnOnce(&mut T) -> R,
    ) -> Option<R> {
        let mut e = self.graph.elements.get(index)?.cell.try_borrow_mut().ok()?;
        crate::taken_from::<T>(&mut **e).map(f)
    }

    /// Calls a handler of element `index` of this worker's graph: a read
    /// (with parameters `value`, usually empty) or a write of `value`
    /// (see [`Graph::call_handler`]). An element cannot call its own
    /// handlers this way: it is busy.
    pub fn call_handler(
        &mut self,
        index: usize,
        handler: &str,
        value: &str,
        write: bool,
    ) -> Result<String, String> {
        if index >= self.graph.len() {
            return Err(format!("no element number {index}"));
        }
        self.graph
            .call_handler_at(index, handler, value, write, self.worker, self.depth)
    }

    /// Writes handler `handler` of element `index` as Click's one element
    /// would be written: on this worker's copy and, with several workers,
    /// on every other worker's (they make it between their rounds, before
    /// they answer anything else; see [`crate::peers`]), unless the
    /// handler changes state all copies share. With `wait` (a `Script`'s
    /// `write`) this returns once they have made it; without (a call made
    /// from packet processing, a Counter's COUNT_CALL, which must not wait
    /// for other workers) it goes on at once.
    pub fn write_handler_everywhere(
        &mut self,
        index: usize,
        handler: &str,
        value: &str,
        wait: bool,
    ) -> Result<String, String> {
        let r = self.call_handler(index, handler, value, true)?;
        if let Some((peers, me)) = self.peers_to_write(index, handler) {
            if wait {
                let graph = self.graph;
                let worker = &mut *self.worker;
                peers.write(me, index, handler, value, || graph.serve_peers(worker));
            } else {
                peers.post(me, index, handler, value);
            }
        }
        Ok(r)
    }

    /// The other workers a write of `handler` of element `index` must
    /// reach, and this worker's number: none with one worker, or for a
    /// handler that changes state every copy shares.
    fn peers_to_write(
        &self,
        index: usize,
        handler: &str,
    ) -> Option<(&'a std::sync::Arc<crate::peers::Peers>, usize)> {
        let (peers, me) = self.graph.peers.as_ref()?;
        let shared = self.graph.elements[index]
            .cell
            .try_borrow()
            .map(|e| e.handler_is_shared(handler))
            .unwrap_or(true);
        (!shared).then_some((peers, *me))
    }

    /// Asks the router to stop once in-flight packets are delivered. With
    /// a stop manager (see [`Context::manage_stops`]) this is a stop event
    /// that steps the manager instead.
    pub fn request_stop(&mut self) {
        self.worker.stop_requested = true;
        self.worker.stop_events = self.worker.stop_events.saturating_add(1);
    }

    /// Asks the run to swap in the configuration `text` (Click's
    /// `hotconfig` write handler, written by a Script): after this round
    /// the workers rest until the new configuration replaces this one
    /// between two rounds, its elements taking the state of the old ones
    /// of the same name and class, or is refused (the reason is printed
    /// and this one goes on). A stop asked for before the swap is
    /// forgotten, as Click's old router's is.
    pub fn request_hotswap(&mut self, text: String) {
        self.worker.hotswap_request = Some(text);
    }

    /// Whether the router is stopping (see [`WorkerState::stopping`]).
    pub fn stopping(&self) -> bool {
        self.worker.stopping
    }

    /// The element that manages this worker's stop requests, if any.
    pub fn stop_manager(&self) -> Option<usize> {
        self.worker.stop_manager
    }

    /// Makes this element the manager of this worker's stop requests
    /// (`on`), or gives that up (Click's driver `Script`, a
    /// `DriverManager`): see [`WorkerState::stop_manager`].
    pub fn manage_stops(&mut self, on: bool) {
        if on {
            self.worker.stop_manager = Some(self.element_index());
        } else if self.worker.stop_manager == Some(self.element_index()) {
            self.worker.stop_manager = None;
        }
    }

    /// Asks for [`Element::run_timer`] to be called at or after `at`.
    pub fn schedule_at(&mut self, at: Timestamp) {
        self.worker.timer_requests.push((at, self.element_index()));
    }

    /// The node of the element at the end of `edge`, `None` for
    /// [`Edge::NONE`]: its element is past the end of the graph
    /// (`Graph::new` makes sure), so one bounds check finds both.
    #[inline(always)]
    fn node_of(&self, edge: Edge) -> Option<&'a Node> {
        self.graph.elements.get(edge.element as usize)
    }

    /// Pushes `batch` out of push output `port`; the batch is empty after.
    ///
    /// Every hop of every packet passes here, a batch at a time; when a
    /// demultiplexer spreads traffic over many outputs the batches are of
    /// one packet, so the common path is kept short and the rare ones
    /// (unconnected port, deferral, packets left behind) are out of line.
    /// It is inlined into the pushing element, whose own call frame it
    /// shares.
    #[inline(always)]
    pub fn push(&mut self, port: usize, batch: &mut Batch) {
        if batch.is_empty() {
            return;
        }
        let Some(&edge) = self.node.outs.get(port) else {
            return self.push_unconnected(batch);
        };
        let Some(node) = self.node_of(edge) else {
            return self.push_unconnected(batch);
        };
        // Deferred: too deep a chain of calls, or a cycle back into an
        // element still busy further up.
        if self.depth >= MAX_PUSH_DEPTH {
            return self.defer(edge, batch);
        }
        let Ok(mut e) = node.cell.try_borrow_mut() else {
            node.sent_back.set(true);
            return self.defer(edge, batch);
        };
        let mut cx = Context {
            graph: self.graph,
            node,
            depth: self.depth + 1,
            worker: &mut *self.worker,
        };
        e.push(edge.port as usize, batch, &mut cx);
        drop(e);
        // An element must take every packet; whatever it left is dropped
        // here and counted against it rather than leaked downstream.
        if !batch.is_empty() {
            self.graph.drop_leftovers(edge.element as usize, batch);
        }
        if node.sent_back.get() {
            self.deliver_sent_back(edge, node);
        }
    }

    /// Delivers what was pushed back into `edge`'s element while it was
    /// busy, now that its push returned: a batch at a time, by input, in
    /// the order sent, until none is left (what the delivery itself sends
    /// back comes next), at most [`MAX_CYCLE_ROUNDS`] batches; the rest
    /// waits for the task's return.
    #[cold]
    #[inline(never)]
    fn deliver_sent_back(&mut self, edge: Edge, node: &'a Node) {
        for _ in 0..MAX_CYCLE_ROUNDS {
            // Set again if this delivery sends packets back once more.
            node.sent_back.set(false);
            let mut b = Batch::new();
            let mut port = None;
            {
                let mut d = self.graph.deferred.borrow_mut();
                let mut i = 0;
                while i < d.len() && !b.is_full() {
                    let (e, p, _) = d[i];
                    if e != edge.element || port.is_some_and(|q| q != p) {
                        if e == edge.element {
                            break;
                        }
                        i += 1;
                        continue;
                    }
                    port = Some(p);
                    if let Some((_, _, pkt)) = d.remove(i) {
                        let _ = b.push(pkt);
                    }
                }
            }
            let Some(port) = port else { return };
            let to = Edge {
                element: edge.element,
                port,
            };
            let Ok(mut e) = node.cell.try_borrow_mut() else {
                // Not reached: the element has just returned.
                return self.defer(to, &mut b);
            };
            let mut cx = Context {
                graph: self.graph,
                node,
                depth: self.depth + 1,
                worker: &mut *self.worker,
            };
            e.push(to.port as usize, &mut b, &mut cx);
            drop(e);
            if !b.is_empty() {
                self.graph.drop_leftovers(to.element as usize, &mut b);
            }
        }
    }

    /// A push out of a port with nothing connected: the packets are
    /// dropped and counted against this element.
    #[cold]
    #[inline(never)]
    fn push_unconnected(&mut self, batch: &mut Batch) {
        self.graph.drop_leftovers(self.element_index(), batch);
    }

    /// Queues `batch` for `edge`, to be delivered when the call chain has
    /// unwound ([`Graph::run_deferred`]).
    #[cold]
    #[inline(never)]
    fn defer(&mut self, edge: Edge, batch: &mut Batch) {
        let mut d = self.graph.deferred.borrow_mut();
        d.extend(batch.drain().map(|p| (edge.element, edge.port, p)));
    }

    /// Pushes a single packet out of `port`.
    #[inline]
    pub fn push_one(&mut self, port: usize, p: Packet) {
        let mut b = Batch::new();
        let _ = b.push(p);
        self.push(port, &mut b);
    }

    /// Pulls up to `max` packets from whatever feeds pull input `port` and
    /// appends them to `out`. Inlined into the pulling element, as
    /// [`Context::push`] is; an element busy further up the stack is
    /// handled out of line.
    #[inline(always)]
    pub fn pull(&mut self, port: usize, out: &mut Batch, max: usize) {
        let Some(&edge) = self.node.ins.get(port) else {
            return;
        };
        let Some(node) = self.node_of(edge) else {
            return;
        };
        let max = max.min(out.remaining());
        if max == 0 {
            return;
        }
        let Ok(mut e) = node.cell.try_borrow_mut() else {
            return self.pull_busy(edge, out, max);
        };
        // A pull cannot be deferred (its caller waits for the packets);
        // it counts so that pushes made under it defer sooner. Every
        // level is a call on this stack: the count cannot overflow.
        let mut cx = Context {
            graph: self.graph,
            node,
            depth: self.depth + 1,
            worker: &mut *self.worker,
        };
        e.pull(edge.port as usize, out, max, &mut cx);
    }

    /// [`Context::pull`] from `edge` when its element is busy further up
    /// this pull: passed through when it only hands such pulls on
    /// (Bypass); otherwise the pull gets nothing (the configuration check
    /// refuses pull cycles).
    #[cold]
    #[inline(never)]
    fn pull_busy(&mut self, edge: Edge, out: &mut Batch, max: usize) {
        let mut edge = edge;
        let (node, mut e) = loop {
            let src = edge.element as usize;
            let Some(node) = self.node_of(edge) else {
                return;
            };
            if let Ok(e) = node.cell.try_borrow_mut() {
                break (node, e);
            }
            let passed = self.graph.pull_passes[src]
                .get(edge.port as usize)
                .copied()
                .flatten()
                .and_then(|i| node.ins.get(i as usize).copied());
            match passed {
                Some(up) if up.is_some() => edge = up,
                _ => return,
            }
        };
        let mut cx = Context {
            graph: self.graph,
            node,
            depth: self.depth + 1,
            worker: &mut *self.worker,
        };
        e.pull(edge.port as usize, out, max, &mut cx);
    }

    /// The task of an element whose input is pull (a sink after a Queue):
    /// pulls up to `burst` packets from input 0 and hands them to `take` as
    /// if they had been pushed.
    #[inline]
    pub fn pull_task(
        &mut self,
        burst: usize,
        take: impl FnOnce(&mut Batch, &mut Self),
    ) -> crate::TaskResult {
        let mut b = Batch::new();
        self.pull(0, &mut b, burst);
        if b.is_empty() {
            return crate::TaskResult::Idle;
        }
        take(&mut b, self);
        crate::TaskResult::Worked
    }

    /// Sends each packet of `batch` to the output `classify` picks, or drops
    /// it when `classify` says `None` (the element counts why); `classify`
    /// is called once for each packet, in the batch's order. Packets
    /// keep their order within each output. The common case, every packet
    /// to output 0, forwards the batch as it is. A mixed batch goes out in
    /// increasing port order, output 0 first: where each output gets one
    /// packet, downstream sees them in the order Click's packet-at-a-time
    /// switch would send them.
    #[inline]
    pub fn push_classified(
        &mut self,
        batch: &mut Batch,
        mut classify: impl FnMut(&mut Packet) -> Option<usize>,
    ) {
        self.push_classified_by(batch, &UNITS, move |p, ()| classify(p));
    }

    /// [`Context::push_classified`] with a value for each packet, computed
    /// beforehand (a lookup's answers): `classify` gets `values[i]` with
    /// the batch's `i`th packet. The values are read by the packet's
    /// position, with one bounds check for the batch, where an iterator
    /// the closure carried was tested for its end at every packet.
    ///
    /// # Panics
    ///
    /// When `values` is shorter than the batch.
    #[inline]
    pub fn push_classified_by<T: Copy>(
        &mut self,
        batch: &mut Batch,
        values: &[T],
        mut classify: impl FnMut(&mut Packet, T) -> Option<usize>,
    ) {
        assert!(values.len() >= batch.len(), "a value for every packet");
        if let ([p], [v, ..]) = (batch.as_mut_slice(), values) {
            // One packet (an element behind a demultiplexer of many
            // outputs sees little else): one push, to its output.
            match classify(p, *v) {
                Some(port) => self.push(port, batch),
                None => batch.clear(),
            }
            return;
        }
        self.dispatch(batch, values, classify, true);
        self.push(0, batch);
    }

    /// [`Context::push_classified_by`] for outputs computed beforehand as
    /// numbers, one a packet, where a number no output has (`u16::MAX`)
    /// drops the packet: a lookup's or a demultiplexer's answers. A batch
    /// whose packets all have the same output, or all have outputs that
    /// lead to one input (a shared plane behind a demultiplexer), goes on
    /// whole through the first packet's output. One pass over the numbers
    /// finds out, with no branch a packet, so that it compiles to vector
    /// compares; the packets themselves are not touched.
    ///
    /// # Panics
    ///
    /// When `outs` is shorter than the batch.
    #[inline]
    pub fn push_by_outputs(&mut self, batch: &mut Batch, outs: &[u16]) {
        let outs = &outs[..batch.len()];
        let Some(&first) = outs.first() else {
            return;
        };
        let (mut differ, mut highest) = (0u16, 0u16);
        for &o in outs {
            differ |= o ^ first;
            highest = highest.max(o);
        }
        let nouts = self.node.outs.len();
        let whole = differ == 0 || (self.node.one_input && usize::from(highest) < nouts);
        if whole && usize::from(first) < nouts {
            return self.push(usize::from(first), batch);
        }
        self.push_classified_by(batch, outs, |_, o| Some(usize::from(o)));
    }

    /// [`Context::push_by_outputs`] for a classifier that counts what it
    /// drops, and so knows whether it `kept` every packet of the batch
    /// (each of `outs` then names one of its outputs): such a batch goes
    /// on whole with no pass over `outs` (4 instructions a packet) when
    /// the outputs all lead to one input (a demultiplexer in front of a
    /// shared plane) or there is one. Otherwise as `push_by_outputs`.
    #[inline]
    pub fn push_by_kept_outputs(&mut self, batch: &mut Batch, outs: &[u16], kept: bool) {
        let nouts = self.node.outs.len();
        if kept && (self.node.one_input || nouts == 1) {
            let outs = &outs[..batch.len()];
            debug_assert!(outs.iter().all(|&o| usize::from(o) < nouts));
            if let Some(&first) = outs.first() {
                return self.push(usize::from(first), batch);
            }
        }
        self.push_by_outputs(batch, outs);
    }

    /// [`Context::push_classified`] for an element whose usual packet
    /// leaves by output 0 once `usual` has done its work on it (a hop
    /// limit decremented): `usual` runs over the batch in one loop, with
    /// no output recorded, until it refuses a packet, which it must leave
    /// as it was; the batch then goes out of output 0 whole. From the
    /// first packet refused on, `classify` decides, the packets before
    /// it going to output 0 unchanged.
    #[inline]
    pub fn push_usual(
        &mut self,
        batch: &mut Batch,
        mut usual: impl FnMut(&mut Packet) -> bool,
        classify: impl FnMut(&mut Packet) -> Option<usize>,
    ) {
        let mut done = 0;
        for p in batch.iter_mut() {
            if !usual(p) {
                break;
            }
            done += 1;
        }
        if done == batch.len() {
            return self.push(0, batch);
        }
        self.push_unusual(batch, done, classify);
    }

    /// The rest of [`Context::push_usual`] for a batch with a packet
    /// `usual` refused, out of line.
    #[cold]
    #[inline(never)]
    fn push_unusual(
        &mut self,
        batch: &mut Batch,
        done: usize,
        mut classify: impl FnMut(&mut Packet) -> Option<usize>,
    ) {
        let mut seen = 0;
        self.push_classified(batch, |p| {
            seen += 1;
            if seen <= done {
                Some(0)
            } else {
                classify(p)
            }
        });
    }

    /// Pulls up to `max` packets from input 0, applies `f` to the batch,
    /// and appends what is left to `out`: the pull side of an element that
    /// works on batches in place.
    #[inline]
    pub fn pull_with(
        &mut self,
        out: &mut Batch,
        max: usize,
        f: impl FnOnce(&mut Batch, &mut Self),
    ) {
        let mut b = Batch::new();
        self.pull(0, &mut b, max);
        if b.is_empty() {
            return;
        }
        f(&mut b, self);
        out.append(&mut b);
    }

    /// The pull side of [`Context::push_classified`]: pulls from input 0,
    /// returns the packets classified to output 0 in `out`, and pushes the
    /// others out of their (push) outputs.
    #[inline]
    pub fn pull_classified(
        &mut self,
        out: &mut Batch,
        max: usize,
        mut classify: impl FnMut(&mut Packet) -> Option<usize>,
    ) {
        let mut b = Batch::new();
        self.pull(0, &mut b, max);
        if b.is_empty() {
            return;
        }
        self.dispatch(&mut b, &UNITS, move |p, ()| classify(p), false);
        out.append(&mut b);
    }

    /// Classifies `batch`, pushes every packet bound for an output other
    /// than 0 out of that output, drops the `None`s, and leaves the output-0
    /// packets in `batch`; with `push_zero`, a mixed batch's output-0
    /// packets are pushed too and `batch` is left empty. Each output gets
    /// its packets in order, as one batch; the outputs are served in
    /// order of their number, or, past 16 outputs, in the order of their
    /// first packets.
    #[inline]
    fn dispatch<T: Copy>(
        &mut self,
        batch: &mut Batch,
        values: &[T],
        mut classify: impl FnMut(&mut Packet, T) -> Option<usize>,
        push_zero: bool,
    ) {
        // The scratch lists are sized for the batch: when a demultiplexer
        // spreads batches over many outputs, the elements behind it see
        // batches of one or two, and clearing room for `MAX_BATCH` ports
        // each time would cost more than the packets' own work.
        if let ([p], [v, ..]) = (batch.as_mut_slice(), values) {
            // One packet (an element behind a demultiplexer of many
            // outputs sees little else): no lists at all.
            match classify(p, *v) {
                Some(0) => {}
                Some(port) => self.push(port, batch),
                None => batch.clear(),
            }
        } else if batch.len() <= SMALL_BATCH {
            self.dispatch_in::<SMALL_BATCH, T>(batch, values, classify, push_zero);
        } else {
            self.dispatch_large(batch, values, classify, push_zero);
        }
    }

    /// [`Context::dispatch_in`] for batches of more than [`SMALL_BATCH`]
    /// packets, out of line: its lists take some kilobytes of stack, which
    /// every call of the element would otherwise reserve (and probe),
    /// batches of one included.
    #[inline(never)]
    fn dispatch_large<T: Copy>(
        &mut self,
        batch: &mut Batch,
        values: &[T],
        classify: impl FnMut(&mut Packet, T) -> Option<usize>,
        push_zero: bool,
    ) {
        self.dispatch_in::<MAX_BATCH, T>(batch, values, classify, push_zero);
    }

    /// [`Context::dispatch`] for batches of at most `N` packets.
    #[inline]
    fn dispatch_in<const N: usize, T: Copy>(
        &mut self,
        batch: &mut Batch,
        values: &[T],
        mut classify: impl FnMut(&mut Packet, T) -> Option<usize>,
        push_zero: bool,
    ) {
        const DROP: u16 = u16::MAX;
        /// Above this many outputs a mixed batch is split by chaining.
        const MANY_PORTS: usize = 16;
        #[inline(always)]
        fn port_of<T, F: FnMut(&mut Packet, T) -> Option<usize>>(
            p: &mut Packet,
            v: T,
            classify: &mut F,
        ) -> u16 {
            // `None`, and a port no element has (65,535 and above), are
            // dropped: one compare and a move on either path.
            classify(p, v).unwrap_or(usize::MAX).min(usize::from(DROP)) as u16
        }
        let pkts = batch.as_mut_slice();
        let n = pkts.len();
        // Checked once here, so that the loops below index `values`
        // with no check of their own.
        let values = &values[..n];
        let Some(head) = pkts.first_mut() else {
            return;
        };
        let first = port_of(head, values[0], &mut classify);
        // The usual batch is bound for one output: its packets are
        // classified until one differs, with nothing recorded. Outputs
        // that lead to the same input as the first's are the same (a
        // lookup's eight outputs into one `DecIPTTL`): the batch goes on
        // whole through the first's, in arrival order, with no list of
        // ports to fold afterwards (12.7 instructions a packet).
        let same_as = self.node.same_as.as_deref().unwrap_or(&[]);
        let home = same_as
            .get(usize::from(first))
            .map_or(u32::MAX, |&h| u32::from(h));
        let mut same = 1;
        let mut other = first;
        let nouts = self.node.outs.len();
        if self.node.one_input && usize::from(first) < nouts {
            // Every output leads where the first's does: only a packet
            // without one (dropped) stops the run.
            while same < n {
                other = port_of(&mut pkts[same], values[same], &mut classify);
                if usize::from(other) >= nouts {
                    break;
                }
                same += 1;
            }
        } else {
            while same < n {
                other = port_of(&mut pkts[same], values[same], &mut classify);
                if other != first
                    && same_as
                        .get(usize::from(other))
                        .is_none_or(|&h| u32::from(h) != home)
                {
                    break;
                }
                same += 1;
            }
        }
        if same == n {
            match first {
                0 => {}
                DROP => batch.clear(),
                port => self.push(port as usize, batch),
            }
            return;
        }
        // A mixed batch: the port of every packet.
        let mut ports = [first; N];
        ports[same] = other;
        for ((slot, p), &v) in ports[same + 1..n]
            .iter_mut()
            .zip(&mut pkts[same + 1..])
            .zip(&values[same + 1..])
        {
            *slot = port_of(p, v, &mut classify);
        }
        let len = n;
        if !same_as.is_empty() {
            // Outputs that lead to the same input are one: the batch may
            // still go on whole, in arrival order.
            if let Some(first) = fold_same_as(&mut ports[..len], same_as) {
                match first {
                    0 => {}
                    DROP => batch.clear(),
                    port => self.push(port as usize, batch),
                }
                return;
            }
        }
        let max_port = ports[..len]
            .iter()
            .filter(|&&p| p != DROP)
            .max()
            .copied()
            .unwrap_or(0);
        let mut out = Batch::new();
        if max_port as usize > MANY_PORTS {
            // Many outputs (a demultiplexer of a thousand virtual
            // routers): a scan per output would cost O(outputs), so the
            // packets are chained by output in one pass (each packet
            // points to the next for the same output) and each chain is
            // pushed in turn, outputs in the order their first packet
            // came: O(packets), whatever the number of outputs.
            // First whether every packet goes to an output of its own,
            // none dropped (consecutive packets for different routers):
            // the chains are then the packets in order, and each goes out
            // as it comes, with no chains or slots to build.
            let stamp = self.worker.group_marks.begin(max_port);
            let marks = &mut self.worker.group_marks.marks;
            let mut alone = push_zero;
            for &port in &ports[..len] {
                if port == DROP {
                    alone = false;
                    continue;
                }
                let m = &mut marks[usize::from(port)];
                alone &= *m >> 8 != stamp;
                *m = stamp << 8;
            }
            if alone {
                for (p, &port) in batch.drain().zip(&ports[..len]) {
                    let _ = out.push(p);
                    self.push(usize::from(port), &mut out);
                }
                return;
            }
            let stamp = self.worker.group_marks.begin(max_port);
            let marks = &mut self.worker.group_marks.marks;
            // Positions fit in a byte: a batch holds at most 256 packets.
            let mut next = [0u8; N];
            let mut heads: ArrayVec<u8, N> = ArrayVec::new();
            for (i, &port) in ports[..len].iter().enumerate() {
                if port == DROP {
                    continue;
                }
                let m = &mut marks[usize::from(port)];
                if *m >> 8 == stamp {
                    next[(*m & 0xff) as usize] = i as u8;
                } else {
                    heads.push(i as u8);
                }
                *m = stamp << 8 | i as u32;
            }
            // Each chain ends at its output's last packet, left in the
            // mark; taken before any push, whose elements split batches
            // of their own with the same marks.
            let tails: ArrayVec<u8, N> = heads
                .iter()
                .map(|&h| (marks[usize::from(ports[usize::from(h)])] & 0xff) as u8)
                .collect();
            // Filled in place: `collect` builds the list and returns it by
            // value, a copy of the whole list per batch.
            let mut slots: ArrayVec<Option<Packet>, N> = ArrayVec::new();
            slots.extend(batch.drain().map(Some));
            for (&head, &tail) in heads.iter().zip(&tails) {
                let port = ports[usize::from(head)];
                let mut at = head;
                loop {
                    if let Some(p) = slots[usize::from(at)].take() {
                        let _ = out.push(p);
                    }
                    if at == tail {
                        break;
                    }
                    at = next[usize::from(at)];
                }
                if port == 0 && !push_zero {
                    batch.append(&mut out);
                } else {
                    self.push(usize::from(port), &mut out);
                }
            }
            // The dropped packets' slots are still full: they go with
            // `slots`.
            return;
        }
        // At most MANY_PORTS outputs: the packets are chained by output in
        // one pass (each points to the next for the same output), then
        // each output's chain is moved into its batch, outputs in
        // increasing order: O(packets + outputs), each packet moved once.
        // (Splitting the batch in place per output moved the whole 2 KiB
        // batch each time, more than the packets' own work.)
        const END: u16 = u16::MAX;
        let mut head = [END; MANY_PORTS + 1];
        let mut tail = [0u16; MANY_PORTS + 1];
        let mut next = [END; N];
        for (i, &port) in ports[..len].iter().enumerate() {
            if port == DROP {
                continue;
            }
            let port = usize::from(port);
            // Positions fit: a batch holds at most 256 packets.
            if head[port] == END {
                head[port] = i as u16;
            } else {
                next[usize::from(tail[port])] = i as u16;
            }
            tail[port] = i as u16;
        }
        // Filled in place: `collect` builds the list and returns it by
        // value, a copy of the whole list per batch.
        let mut slots: ArrayVec<Option<Packet>, N> = ArrayVec::new();
        slots.extend(batch.drain().map(Some));
        for port in 0..=usize::from(max_port) {
            let mut at = head[port];
            if at == END {
                continue;
            }
            // Output 0's packets stay in `batch` for the caller unless
            // they are pushed too.
            let keep = port == 0 && !push_zero;
            let to = if keep { &mut *batch } else { &mut out };
            loop {
                if let Some(q) = slots[usize::from(at)].take() {
                    let _ = to.push(q);
                }
                if at == tail[port] {
                    break;
                }
                at = next[usize::from(at)];
            }
            if !keep {
                self.push(port, &mut out);
            }
        }
        // The dropped packets' slots are still full: they go with `slots`.
    }
}

/// No value for each packet ([`Context::push_classified`] through
/// [`Context::push_classified_by`]): zero bytes, as long as any batch.
const UNITS: [(); MAX_BATCH] = [(); MAX_BATCH];

/// Batches of at most this many packets are dispatched with scratch lists
/// of this size (see [`Context::dispatch`]): the default burst, so that
/// the usual batch does not clear lists sized for `MAX_BATCH`.
const SMALL_BATCH: usize = bricks_packet::DEFAULT_BURST;

/// Click's `configuration_handler` for a write: `spec` is `"N KEYWORD"`
/// or `"KEYWORD"`. The keyword's arguments are removed and `KEYWORD VALUE`
/// appended, unless the keyword is absent and positional argument N is
/// given, which then becomes VALUE.
fn reconfigure(config: &str, spec: &str, value: &str) -> String {
    let (argno, keyword) = match spec.split_once(' ') {
        Some((n, k)) if n.len() == 1 && n.as_bytes()[0].is_ascii_digit() => {
            (n.parse::<usize>().ok(), k)
        }
        _ => (None, spec),
    };
    let mut conf = bricks_config::split_args(config);
    let before = conf.len();
    conf.retain(|a| bricks_config::split_keyword(a).0 != Some(keyword));
    let found = conf.len() != before;
    match argno {
        Some(n)
            if !found && n < conf.len() && bricks_config::split_keyword(&conf[n]).0.is_none() =>
        {
            conf[n] = value.to_string();
        }
        _ => conf.push(format!("{keyword} {value}")),
    }
    conf.join(", ")
}

#[cfg(test)]
mod reconfigure_tests {
    use super::reconfigure;

    #[test]
    fn a_keyword_write_replaces_the_keyword_or_the_positional_argument() {
        // As Click's configuration_handler: the keyword's arguments go and
        // `KEYWORD VALUE` is appended ...
        assert_eq!(reconfigure("", "0 CAPACITY", "10"), "CAPACITY 10");
        assert_eq!(
            reconfigure("CAPACITY 5, X 1", "0 CAPACITY", "10"),
            "X 1, CAPACITY 10"
        );
        // ... unless the argument is given by position.
        assert_eq!(reconfigure("100", "0 CAPACITY", "10"), "10");
        assert_eq!(reconfigure("a, b", "1 DATA", "c"), "a, c");
        // A keyword without a position is always appended.
        assert_eq!(reconfigure("100", "RATE", "7"), "100, RATE 7");
    }
}

#[cfg(test)]
mod push_tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    type Log<T> = Arc<Mutex<Vec<T>>>;

    /// Forwards each batch out of output 0, noting its index and the
    /// batch's size.
    struct Forward(Log<(usize, usize)>);

    impl Element for Forward {
        fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
            self.0
                .lock()
                .unwrap()
                .push((cx.element_index(), batch.len()));
            cx.push(0, batch);
        }
    }

    /// Sends a packet whose first byte is not 0 back into itself through
    /// output 0 (a push cycle) with that byte one less, and one whose
    /// first byte is 0 out of output 1; notes the bytes it sees.
    struct Bounce(Log<u8>);

    impl Element for Bounce {
        fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
            let (mut back, mut done) = (Batch::new(), Batch::new());
            for mut p in batch.drain() {
                let b = p.data()[0];
                self.0.lock().unwrap().push(b);
                if b == 0 {
                    let _ = done.push(p);
                } else {
                    p.data_mut()[0] = b - 1;
                    let _ = back.push(p);
                }
            }
            cx.push(1, &mut done);
            cx.push(0, &mut back);
        }
    }

    /// Keeps the first byte of what it is given.
    struct Sink(Log<u8>);

    impl Element for Sink {
        fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
            let mut got = self.0.lock().unwrap();
            got.extend(batch.drain().map(|p| p.data()[0]));
        }
    }

    /// Takes nothing it is given.
    struct Leave;

    impl Element for Leave {
        fn push(&mut self, _port: usize, _batch: &mut Batch, _cx: &mut Context<'_>) {}
    }

    fn batch(bytes: &[u8]) -> Batch {
        let mut b = Batch::new();
        for &x in bytes {
            let _ = b.push(Packet::from_slice(&[x; 20]).unwrap());
        }
        b
    }

    fn edge(element: u32) -> Edge {
        Edge { element, port: 0 }
    }

    fn graph(elements: Vec<Box<dyn Element>>, outputs: Vec<Box<[Edge]>>) -> Graph {
        let n = elements.len();
        let names = (0..n).map(|i| format!("e{i}")).collect();
        let inputs = (0..n).map(|_| Box::from([])).collect();
        Graph::new(elements, names, outputs, inputs)
    }

    #[test]
    fn a_push_back_into_a_busy_element_is_deferred_until_it_returns() {
        let (seen, sunk): (Log<u8>, Log<u8>) = Default::default();
        let g = graph(
            vec![Box::new(Bounce(seen.clone())), Box::new(Sink(sunk.clone()))],
            vec![Box::new([edge(0), edge(1)]), Box::new([])],
        );
        let mut w = WorkerState::new(0, 1);
        g.with_element(0, &mut w, |e, cx| e.push(0, &mut batch(&[2, 0]), cx));
        // The packet sent back was not handed to the element while it was
        // still busy with the batch.
        assert_eq!(*seen.lock().unwrap(), [2, 0]);
        assert_eq!(*sunk.lock().unwrap(), [0]);
        assert!(g.run_deferred(&mut w));
        assert_eq!(*seen.lock().unwrap(), [2, 0, 1, 0]);
        assert_eq!(*sunk.lock().unwrap(), [0, 0]);
        assert!(!g.run_deferred(&mut w));
        assert_eq!(g.unconnected_drops(0), 0);
    }

    /// Pushes each packet of its batch on by itself.
    struct OneByOne;

    impl Element for OneByOne {
        fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
            for p in batch.drain() {
                cx.push_one(0, p);
            }
        }
    }

    #[test]
    fn what_a_busy_element_is_sent_back_comes_when_its_push_returns() {
        let (seen, sunk): (Log<u8>, Log<u8>) = Default::default();
        let g = graph(
            vec![
                Box::new(OneByOne),
                Box::new(Bounce(seen.clone())),
                Box::new(Sink(sunk.clone())),
            ],
            vec![
                Box::new([edge(1)]),
                Box::new([edge(1), edge(2)]),
                Box::new([]),
            ],
        );
        let mut w = WorkerState::new(0, 1);
        g.with_element(0, &mut w, |e, cx| e.push(0, &mut batch(&[2, 1]), cx));
        // Each packet goes round the cycle to its end before the next
        // leaves the first element, as Click's nested calls take it.
        assert_eq!(*seen.lock().unwrap(), [2, 1, 0, 1, 0]);
        assert_eq!(*sunk.lock().unwrap(), [0, 0]);
        assert!(!g.run_deferred(&mut w));
    }

    #[test]
    fn a_chain_deeper_than_the_limit_runs_in_segments() {
        let n = 2 * MAX_PUSH_DEPTH as usize + 10;
        let (log, sunk): (Log<(usize, usize)>, Log<u8>) = Default::default();
        let mut elements: Vec<Box<dyn Element>> = Vec::new();
        let mut outputs: Vec<Box<[Edge]>> = Vec::new();
        for i in 0..n {
            elements.push(Box::new(Forward(log.clone())));
            outputs.push(Box::new([edge(i as u32 + 1)]));
        }
        elements.push(Box::new(Sink(sunk.clone())));
        outputs.push(Box::new([]));
        let g = graph(elements, outputs);
        let mut w = WorkerState::new(0, 1);
        g.with_element(0, &mut w, |e, cx| e.push(0, &mut batch(&[7, 8]), cx));
        // Element 0 runs with no push under it, so element k is k deep:
        // the one at the limit defers its push.
        let first: Vec<usize> = log.lock().unwrap().iter().map(|&(i, _)| i).collect();
        assert_eq!(first, (0..=MAX_PUSH_DEPTH as usize).collect::<Vec<_>>());
        assert!(sunk.lock().unwrap().is_empty());
        while g.run_deferred(&mut w) {}
        let all = log.lock().unwrap().clone();
        assert_eq!(all.len(), n);
        assert!(all
            .iter()
            .enumerate()
            .all(|(k, &(i, len))| i == k && len == 2));
        assert_eq!(*sunk.lock().unwrap(), [7, 8]);
    }

    /// Sends a packet whose first byte is `b` out of output `b % 20`, or
    /// drops it when `b` is 255; notes the bytes in the order asked.
    struct Split(Log<u8>);

    impl Element for Split {
        fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
            cx.push_classified(batch, |p| {
                let b = p.data()[0];
                self.0.lock().unwrap().push(b);
                (b != 255).then_some(usize::from(b) % 20)
            });
        }
    }

    /// Sends each packet to the output its first byte names (255: none),
    /// by [`Context::push_by_outputs`], or with `.0` true by
    /// [`Context::push_by_kept_outputs`], kept when every output is one
    /// it has.
    struct ByOutputs(bool);

    impl Element for ByOutputs {
        fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
            let outs: Vec<u16> = batch
                .iter()
                .map(|p| match p.data()[0] {
                    255 => u16::MAX,
                    b => u16::from(b),
                })
                .collect();
            let nouts = cx.node.outs.len();
            let kept = outs.iter().all(|&o| usize::from(o) < nouts);
            if self.0 {
                cx.push_by_kept_outputs(batch, &outs, kept);
            } else {
                cx.push_by_outputs(batch, &outs);
            }
        }
    }

    /// Notes the input port and first byte of what it is given.
    struct PortSink(Log<(usize, u8)>);

    impl Element for PortSink {
        fn push(&mut self, port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
            let mut got = self.0.lock().unwrap();
            got.extend(batch.drain().map(|p| (port, p.data()[0])));
        }
    }

    /// `e` with `outputs` outputs, output `p` into input `p` of a
    /// [`PortSink`] noting into `sunk`.
    fn fanned_into_sink(e: impl Element + 'static, outputs: u32, sunk: &Log<(usize, u8)>) -> Graph {
        let outs: Vec<Edge> = (0..outputs)
            .map(|p| Edge {
                element: 1,
                port: p,
            })
            .collect();
        graph(
            vec![Box::new(e), Box::new(PortSink(sunk.clone()))],
            vec![outs.into_boxed_slice(), Box::new([])],
        )
    }

    #[test]
    fn a_classified_push_asks_once_per_packet_in_order_and_keeps_order_per_output() {
        let (asked, sunk): (Log<u8>, Log<(usize, u8)>) = Default::default();
        let g = fanned_into_sink(Split(asked.clone()), 20, &sunk);
        let mut w = WorkerState::new(0, 1);
        // One packet, a few to few outputs, a small and a large batch to
        // many outputs, with drops.
        let few: Vec<u8> = vec![1, 0, 1, 255, 2, 0];
        let small: Vec<u8> = (0..30).map(|i| (i * 7 % 23) as u8).chain([255]).collect();
        let large: Vec<u8> = (0..200).map(|i| (i * 13 % 41) as u8).collect();
        for bytes in [vec![5], few, small, large] {
            asked.lock().unwrap().clear();
            sunk.lock().unwrap().clear();
            g.with_element(0, &mut w, |e, cx| e.push(0, &mut batch(&bytes), cx));
            assert_eq!(*asked.lock().unwrap(), bytes);
            let sunk = sunk.lock().unwrap();
            for port in 0..20 {
                let want: Vec<u8> = bytes
                    .iter()
                    .copied()
                    .filter(|&b| b != 255 && usize::from(b) % 20 == port)
                    .collect();
                let got: Vec<u8> = sunk
                    .iter()
                    .filter(|&&(p, _)| p == port)
                    .map(|&(_, b)| b)
                    .collect();
                assert_eq!(got, want, "output {port} of {bytes:?}");
            }
            let dropped = bytes.iter().filter(|&&b| b == 255).count();
            assert_eq!(sunk.len() + dropped, bytes.len());
        }
    }

    /// Notes every batch it is given: its input port and first bytes.
    struct BatchLog(Log<(usize, Vec<u8>)>);

    impl Element for BatchLog {
        fn push(&mut self, port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
            let bytes = batch.drain().map(|p| p.data()[0]).collect();
            self.0.lock().unwrap().push((port, bytes));
        }
    }

    /// Sends its `i`th packet out of output `ports[i]` (a value computed
    /// beforehand, as a lookup's answers are), or drops it for `None`.
    struct ByValue(Vec<Option<usize>>);

    impl Element for ByValue {
        fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
            let ports = std::mem::take(&mut self.0);
            cx.push_classified_by(batch, &ports, |p, port| {
                // The value is the packet's own: its first byte says
                // which position it had.
                assert_eq!(ports[usize::from(p.data()[0])], port);
                port
            });
        }
    }

    #[test]
    fn a_classified_push_by_values_gives_each_packet_its_own_value() {
        let sunk: Log<(usize, u8)> = Log::default();
        let g = fanned_into_sink(ByValue(Vec::new()), 4, &sunk);
        let mut w = WorkerState::new(0, 1);
        type Case<'a> = (&'a [Option<usize>], &'a [(usize, u8)]);
        let cases: [Case; 5] = [
            // One packet; a batch all to one output; a mixed batch.
            (&[Some(2)], &[(2, 0)]),
            (&[Some(1); 3], &[(1, 0), (1, 1), (1, 2)]),
            (
                &[Some(3), None, Some(0), Some(3)],
                &[(0, 2), (3, 0), (3, 3)],
            ),
            // A port no element can have (65,535 and above) is dropped,
            // as `None` is.
            (
                &[Some(1), Some(usize::MAX), Some(65_535), Some(1)],
                &[(1, 0), (1, 3)],
            ),
            (&[Some(70_000), Some(2)], &[(2, 1)]),
        ];
        for (ports, want) in cases {
            sunk.lock().unwrap().clear();
            let bytes: Vec<u8> = (0..ports.len() as u8).collect();
            g.with_element(0, &mut w, |e, cx| {
                crate::taken_from::<ByValue>(e).unwrap().0 = ports.to_vec();
                e.push(0, &mut batch(&bytes), cx)
            });
            assert_eq!(*sunk.lock().unwrap(), want, "{ports:?}");
        }
    }

    #[test]
    #[should_panic(expected = "a value for every packet")]
    fn a_classified_push_by_values_refuses_fewer_values_than_packets() {
        let g = graph(
            vec![Box::new(ByValue(Vec::new())), Box::new(Leave)],
            vec![Box::new([edge(1)]), Box::new([])],
        );
        let mut w = WorkerState::new(0, 1);
        g.with_element(0, &mut w, |e, cx| {
            crate::taken_from::<ByValue>(e).unwrap().0 = vec![Some(0)];
            e.push(0, &mut batch(&[0, 1]), cx)
        });
    }

    #[test]
    fn outputs_to_the_same_input_send_one_batch_in_arrival_order() {
        // Outputs p and p + 10 both lead to input p of the sink; output
        // 19 to another element's.
        let asked: Log<u8> = Log::default();
        let batches: Log<(usize, Vec<u8>)> = Log::default();
        let other: Log<(usize, Vec<u8>)> = Log::default();
        let outs: Vec<Edge> = (0..20u32)
            .map(|p| match p {
                19 => edge(2),
                p => Edge {
                    element: 1,
                    port: p % 10,
                },
            })
            .collect();
        let g = graph(
            vec![
                Box::new(Split(asked.clone())),
                Box::new(BatchLog(batches.clone())),
                Box::new(BatchLog(other.clone())),
            ],
            vec![outs.into_boxed_slice(), Box::new([]), Box::new([])],
        );
        assert_eq!(g.elements[0].same_as.as_deref().map(|s| s[13]), Some(3));
        let mut w = WorkerState::new(0, 1);
        type Batches<'a> = &'a [(usize, &'a [u8])];
        let cases: [(&[u8], Batches, Batches); 6] = [
            // Outputs 3 and 13: one batch, in the order the packets came.
            (&[13, 3, 3, 13], &[(3, &[13, 3, 3, 13])], &[]),
            (&[0, 10, 10, 0], &[(0, &[0, 10, 10, 0])], &[]),
            // The same, then a packet that leads elsewhere: split.
            (&[13, 3, 13, 4], &[(3, &[13, 3, 13]), (4, &[4])], &[]),
            // Outputs 0 and 10 lead to input 0, kept by the classifier
            // as output 0: one batch.
            (&[10, 0, 10, 255, 0], &[(0, &[10, 0, 10, 0])], &[]),
            // Two inputs of the sink: one batch each, lower output first.
            (&[15, 2, 5, 12], &[(2, &[2, 12]), (5, &[15, 5])], &[]),
            // Output 19 leads elsewhere.
            (&[19, 9, 19], &[(9, &[9])], &[(0, &[19, 19])]),
        ];
        for (bytes, want, want_other) in cases {
            batches.lock().unwrap().clear();
            other.lock().unwrap().clear();
            g.with_element(0, &mut w, |e, cx| e.push(0, &mut batch(bytes), cx));
            let got = batches.lock().unwrap().clone();
            let want: Vec<(usize, Vec<u8>)> = want.iter().map(|(p, b)| (*p, b.to_vec())).collect();
            assert_eq!(got, want, "{bytes:?}");
            let got = other.lock().unwrap().clone();
            let want: Vec<(usize, Vec<u8>)> =
                want_other.iter().map(|(p, b)| (*p, b.to_vec())).collect();
            assert_eq!(got, want, "{bytes:?}");
        }
        // Outputs leading to different inputs: no list.
        assert!(outputs_same_as(&[edge(1), edge(2), Edge::NONE, Edge::NONE]).is_none());
    }

    #[test]
    fn batches_by_output_numbers_go_on_whole_when_they_can() {
        // With and without the word that no packet was dropped.
        for kept in [false, true] {
            by_output_numbers(kept);
        }
    }

    fn by_output_numbers(kept: bool) {
        // Four outputs into one input (a shared plane), and two outputs
        // into two inputs.
        let batches: Log<(usize, Vec<u8>)> = Log::default();
        let sunk: Log<(usize, u8)> = Log::default();
        let g = graph(
            vec![
                Box::new(ByOutputs(kept)),
                Box::new(BatchLog(batches.clone())),
            ],
            vec![vec![edge(1); 4].into_boxed_slice(), Box::new([])],
        );
        let mut w = WorkerState::new(0, 1);
        type Batches<'a> = &'a [(usize, &'a [u8])];
        let cases: [(&[u8], Batches); 5] = [
            (&[3, 1, 0, 2], &[(0, &[3, 1, 0, 2])]),
            (&[2, 2], &[(0, &[2, 2])]),
            (&[1], &[(0, &[1])]),
            // A dropped packet (or one for an output there is not) goes,
            // the rest still together in order.
            (&[0, 255, 3], &[(0, &[0, 3])]),
            (&[255, 255], &[]),
        ];
        for (bytes, want) in cases {
            batches.lock().unwrap().clear();
            g.with_element(0, &mut w, |e, cx| e.push(0, &mut batch(bytes), cx));
            let got = batches.lock().unwrap().clone();
            let want: Vec<(usize, Vec<u8>)> = want.iter().map(|(p, b)| (*p, b.to_vec())).collect();
            assert_eq!(got, want, "{bytes:?}");
        }
        let g = fanned_into_sink(ByOutputs(kept), 2, &sunk);
        g.with_element(0, &mut w, |e, cx| e.push(0, &mut batch(&[1, 1, 1]), cx));
        g.with_element(0, &mut w, |e, cx| {
            e.push(0, &mut batch(&[1, 0, 7, 255, 1]), cx)
        });
        let got = sunk.lock().unwrap().clone();
        // Each to its own output's input; 7 and 255 name no output.
        assert_eq!(got, [(1, 1), (1, 1), (1, 1), (0, 0), (1, 1), (1, 1)]);
    }

    #[test]
    fn outputs_all_into_one_input_send_the_batch_on_whole() {
        let asked: Log<u8> = Log::default();
        let batches: Log<(usize, Vec<u8>)> = Log::default();
        let outs: Vec<Edge> = (0..20).map(|_| edge(1)).collect();
        let g = graph(
            vec![
                Box::new(Split(asked.clone())),
                Box::new(BatchLog(batches.clone())),
            ],
            vec![outs.into_boxed_slice(), Box::new([])],
        );
        assert!(g.elements[0].one_input);
        let mut w = WorkerState::new(0, 1);
        type Batches<'a> = &'a [(usize, &'a [u8])];
        let cases: [(&[u8], Batches); 5] = [
            (&[7, 3, 19, 0], &[(0, &[7, 3, 19, 0])]),
            (&[0, 0, 0], &[(0, &[0, 0, 0])]),
            // A packet without an output is dropped; the rest go on
            // together, in order.
            (&[0, 5, 255, 6], &[(0, &[0, 5, 6])]),
            (&[255, 4, 9], &[(0, &[4, 9])]),
            (&[255, 255], &[]),
        ];
        for (bytes, want) in cases {
            asked.lock().unwrap().clear();
            batches.lock().unwrap().clear();
            g.with_element(0, &mut w, |e, cx| e.push(0, &mut batch(bytes), cx));
            // Every packet classified once.
            assert_eq!(*asked.lock().unwrap(), bytes, "{bytes:?}");
            let got = batches.lock().unwrap().clone();
            let want: Vec<(usize, Vec<u8>)> = want.iter().map(|(p, b)| (*p, b.to_vec())).collect();
            assert_eq!(got, want, "{bytes:?}");
        }
        // Not for one output, an unconnected output, or two inputs.
        assert!(!outputs_one_input(&[edge(1)]));
        assert!(!outputs_one_input(&[edge(1), Edge::NONE]));
        assert!(!outputs_one_input(&[Edge::NONE, Edge::NONE]));
        assert!(!outputs_one_input(&[edge(1), edge(2)]));
        assert!(outputs_one_input(&[edge(2), edge(2), edge(2)]));
    }

    #[test]
    fn packets_pushed_nowhere_or_left_behind_are_counted() {
        let (log, sunk): (Log<(usize, usize)>, Log<u8>) = Default::default();
        let g = graph(
            vec![
                Box::new(Forward(log.clone())),
                Box::new(Forward(log.clone())),
                Box::new(Leave),
                Box::new(Sink(sunk)),
            ],
            vec![
                Box::new([Edge::NONE]),
                Box::new([edge(2)]),
                Box::new([edge(3)]),
                Box::new([]),
            ],
        );
        let mut w = WorkerState::new(0, 1);
        // An unconnected output drops against the pusher.
        g.with_element(0, &mut w, |e, cx| e.push(0, &mut batch(&[1, 2, 3]), cx));
        assert_eq!(g.unconnected_drops(0), 3);
        // So does a port the element does not have.
        g.with_element(3, &mut w, |_, cx| cx.push(5, &mut batch(&[1])));
        assert_eq!(g.unconnected_drops(3), 1);
        // What an element leaves in a batch it was given is dropped
        // against it, not its upstream.
        g.with_element(1, &mut w, |e, cx| e.push(0, &mut batch(&[1, 2]), cx));
        assert_eq!(g.unconnected_drops(1), 0);
        assert_eq!(g.unconnected_drops(2), 2);
        assert_eq!(*log.lock().unwrap(), [(0, 3), (1, 2)]);
    }
}
