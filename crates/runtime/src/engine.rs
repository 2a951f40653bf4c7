//! The engine: runs one worker's graph until its sources finish or it is
//! told to stop, then drains what is in flight.
//!
//! A round runs every due timer, then tasks. Tasks run to completion: a
//! source's batch travels push by push until it is queued, sent or dropped
//! before the next task starts. When no task made progress for a while the
//! worker naps briefly instead of spinning (a device-driven router can turn
//! that off).
//!
//! Tasks share their worker by stride scheduling (Waldspurger and Weihl,
//! as in Click's `RouterThread`): each task has tickets (`ScheduleInfo`),
//! a stride inversely proportional to them, and a pass; the task with the
//! smallest pass runs next and its pass advances by its stride, whether it
//! found work or not. As in Click, tasks start in configuration order,
//! each one stride after the smallest pass of those before it, and of two
//! equal passes the one reached first runs first, so that the order of
//! runs is Click's (`SchedOrderTest` shows it). A round is as many runs as
//! there are tasks. When
//! every task has the same tickets, stride scheduling is plain round robin
//! and a round runs each task once, in order, with no heap at all.
//!
//! Several workers end a run together (see [`Termination`]).

use crate::hotswap::{HotswapRequests, SwapOrder};
use crate::placement::Placement;
use crate::{Plan, Termination};
use bricks_config::Diagnostic;
use bricks_element::{Graph, HandlerValue, Stats, TaskInfo, TaskKind, TaskResult, WorkerState};
use bricks_packet::Timestamp;
use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Stops a running engine from another thread or a signal handler.
#[derive(Debug, Clone, Default)]
pub struct StopHandle(Arc<AtomicBool>);

impl StopHandle {
    /// Asks the engine to stop: sources stop producing, packets already in
    /// the graph are delivered, then `run` returns.
    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Makes SIGINT and SIGTERM ask for a stop. A second signal while the
    /// graph drains ends the process at once.
    pub fn install_signal_handlers(&self) -> std::io::Result<()> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        for sig in [SIGINT, SIGTERM] {
            // Registered first so that it sees the flag before it is set.
            signal_hook::flag::register_conditional_shutdown(sig, 130, self.0.clone())?;
            signal_hook::flag::register(sig, self.0.clone())?;
        }
        Ok(())
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// Every source finished and the graph drained.
    SourcesDone,
    /// An element asked for a stop (Click's `STOP true`).
    Requested,
    /// A stop came from outside (a signal, a [`StopHandle`]).
    External,
    /// The configuration has no task, so nothing would ever happen.
    NoTasks,
}

/// In words, for the `stopped: ...` line a run ends with.
impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::SourcesDone => "every source is done and the graph has drained",
            StopReason::Requested => "an element asked to stop (STOP true, or a call of `stop`)",
            StopReason::External => {
                "stopped from outside (Ctrl-C, SIGTERM, --duration or the control socket)"
            }
            StopReason::NoTasks => {
                "the configuration has no source or task, so nothing would ever happen"
            }
        })
    }
}

/// One element's final counters.
#[derive(Debug, Clone)]
pub struct ElementStats {
    /// Element name.
    pub name: String,
    /// Element class.
    pub class: &'static str,
    /// Its counters.
    pub stats: Stats,
}

/// What a finished run reports.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// Why it ended.
    pub reason: StopReason,
    /// Wall-clock time it ran.
    pub elapsed: Duration,
    /// Counters of every element that has any.
    pub elements: Vec<ElementStats>,
    /// Errors elements reported while running.
    pub errors: Vec<String>,
    /// The read handlers asked for at exit ([`Engine::read_at_exit`]),
    /// `(element.handler, value)` in the order asked.
    pub reads: Vec<ExitRead>,
    /// The scheduling rounds it ran, and how many of them found nothing
    /// to do.
    pub polls: Polls,
}

/// A worker's scheduling rounds: every round polls each of its tasks
/// once. A round in which no task or timer made progress is an *empty
/// poll* in RouteBricks' words (§5.3): a polling router burns its CPU in
/// them when traffic is light, and its cycles per packet mean something
/// only once their cost is taken out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Polls {
    /// Rounds run.
    pub rounds: u64,
    /// Rounds in which nothing made progress.
    pub empty: u64,
}

/// Both counts summed (several workers' polls as one).
impl std::ops::Add for Polls {
    type Output = Polls;

    fn add(self, other: Polls) -> Polls {
        Polls {
            rounds: self.rounds + other.rounds,
            empty: self.empty + other.empty,
        }
    }
}

impl RunSummary {
    /// The counters of the element called `name`.
    pub fn stats(&self, name: &str) -> Option<&Stats> {
        self.elements
            .iter()
            .find(|e| e.name == name)
            .map(|e| &e.stats)
    }

    /// Counters as text, one element a line, zero counters left out (and
    /// elements with nothing to report); a drained queue therefore shows no
    /// `length`.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        for e in &self.elements {
            if e.stats.entries().iter().all(|&(_, v)| v == 0) {
                continue;
            }
            let _ = write!(s, "{} ({}):", e.name, e.class);
            for (k, v) in e.stats.entries().iter().filter(|(_, v)| *v != 0) {
                let _ = write!(s, " {k}={v}");
            }
            s.push('\n');
        }
        s
    }
}

/// The timers elements asked for ([`Context::schedule_at`]), earliest
/// first, and among equal times the element first in the configuration.
///
/// A task that waits for a time asks for it again every round it runs
/// and is not due (a TimedSource between two packets beside a busy
/// source runs millions of rounds a second), so a request the element
/// already has in the heap, at the same time, is not pushed again: the
/// heap holds it once, where it grew by one entry a round (tens of
/// megabytes a second). Requests at other times all stay: none is lost.
///
/// [`Context::schedule_at`]: bricks_element::Context::schedule_at
#[derive(Default)]
struct Timers {
    heap: BinaryHeap<Reverse<(Timestamp, usize)>>,
    /// Each element's last request, while it is in the heap.
    last: Vec<Option<Timestamp>>,
}

impl Timers {
    fn push(&mut self, t: Timestamp, element: usize) {
        if element >= self.last.len() {
            self.last.resize(element + 1, None);
        }
        if self.last[element] == Some(t) {
            return;
        }
        self.last[element] = Some(t);
        self.heap.push(Reverse((t, element)));
    }

    /// The earliest request: its time and element.
    fn peek(&self) -> Option<(Timestamp, usize)> {
        self.heap.peek().map(|&Reverse(r)| r)
    }

    fn pop(&mut self) -> Option<(Timestamp, usize)> {
        let Reverse((t, e)) = self.heap.pop()?;
        if let Some(last) = self.last.get_mut(e).filter(|l| **l == Some(t)) {
            *last = None;
        }
        Some((t, e))
    }

    fn clear(&mut self) {
        self.heap.clear();
        self.last.clear();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.heap.len()
    }
}

struct TaskSlot {
    element: usize,
    kind: TaskKind,
    done: bool,
    /// Its task is placed on this worker (done from the start otherwise).
    here: bool,
    /// Pass advance per run: [`STRIDE1`] / tickets.
    stride: u64,
    /// Virtual time of its next run.
    pass: u64,
    /// The order of its entry in the engine's heap: older entries of the
    /// same task (left behind when it ended outside a stride run and was
    /// woken again) are stale and skipped.
    entry: u64,
}

/// The stride of a task with one ticket. Click uses 2^16 with 32-bit
/// passes; 64-bit passes allow 2^32, so that strides are exact to a few
/// parts per million for any ticket count (2^16 / 3072 rounds to 21, 2.4 %
/// off).
pub const STRIDE1: u64 = 1 << 32;

/// Passes are moved back towards zero when the smallest reaches this, so
/// that they never overflow.
const PASS_REBASE: u64 = 1 << 62;

/// What a round did.
#[derive(Debug, Clone, Copy, Default)]
struct Round {
    /// Some task or timer made progress.
    worked: bool,
    /// Some task holds packets it will move at a later time.
    waiting: bool,
}

/// Rounds without work before a run whose sources are done ends, or one
/// on a simulated or trace clock jumps to its next timer. Click's tasks
/// run on until their notifiers put them to sleep, and a queue's empty
/// notifier sleeps only after ten pulls in a row have found it empty
/// (`SLEEPINESS_TRIGGER`): the pulling tasks make those pulls here too,
/// so that what depends on the notifier (ComparePackets' `more packets
/// in`, the `scheduled` and `signal` handlers) is as in Click.
const SETTLE_ROUNDS: u32 = 10;

/// Runs one worker's instance of a plan.
pub struct Engine {
    graph: Graph,
    classes: Vec<&'static str>,
    state: WorkerState,
    tasks: Vec<TaskSlot>,
    /// Tasks not done.
    live: usize,
    /// Tickets differ: run by pass from `by_pass`, not in order.
    stride: bool,
    /// (pass, order, task) of every live task, smallest pass first and,
    /// among equal passes, the one that got its pass first (Click's task
    /// list keeps equal passes in that order).
    by_pass: BinaryHeap<Reverse<(u64, u64, u32)>>,
    /// The order the next push into `by_pass` gets.
    next_seq: u64,
    term: Arc<Termination>,
    timers: Timers,
    stop: StopHandle,
    /// Nap when idle instead of spinning.
    pub idle_sleep: bool,
    /// The longest nap when idle.
    pub max_nap: Duration,
    stats_requests: Option<mpsc::Receiver<StatsRequest>>,
    mailbox: Option<mpsc::Receiver<HandlerCall>>,
    swaps: Option<mpsc::Receiver<SwapOrder>>,
    /// Where a configuration the graph asks to swap in goes (see
    /// [`Engine::take_hotswap_requests`]).
    hot_requests: Option<Arc<HotswapRequests>>,
    started: bool,
    /// Every element's [`Element::stopping`] hook has been called.
    ///
    /// [`Element::stopping`]: bricks_element::Element::stopping
    farewell: bool,
    exit_reads: Vec<String>,
    /// The run's workers, for counters read across them
    /// ([`bricks_element::peers`]), and the last request answered.
    peers: Option<Arc<bricks_element::peers::Peers>>,
    peers_seen: u64,
}

/// After a hot swap a parked worker takes part in the run again: the new
/// graph has sources and tasks of its own.
fn swapped(parked: &mut bool, term: &Termination) {
    if std::mem::replace(parked, false) {
        term.unpark();
    }
}

/// One value of a read handler asked for at exit (Click's `-h`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitRead {
    /// `element.handler`, or the reason nothing was read when the request
    /// matched no element.
    pub name: String,
    /// Print `name:` before the value: the request matched a pattern or a
    /// class (Click prints names then even for one handler).
    pub named: bool,
    /// The value, or why there is none.
    pub value: Result<HandlerValue, String>,
}

/// Whether `name` matches the shell pattern `pattern` (`*`, `?`, `[...]`,
/// as Click's `glob_match`). Iterative with one backtrack point for the
/// last `*`, so linear in practice and never recursive.
pub fn glob_match(name: &str, pattern: &str) -> bool {
    let (n, p): (Vec<char>, Vec<char>) = (name.chars().collect(), pattern.chars().collect());
    let (mut i, mut j) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    // A `[...]` class at p[j..]: whether it matches c, and where it ends.
    let class = |j: usize, c: char| -> Option<(bool, usize)> {
        let mut k = j + 1;
        let negate = p.get(k) == Some(&'!') || p.get(k) == Some(&'^');
        if negate {
            k += 1;
        }
        let mut hit = false;
        let first = k;
        while k < p.len() && (p[k] != ']' || k == first) {
            if k + 2 < p.len() && p[k + 1] == '-' && p[k + 2] != ']' {
                hit |= p[k] <= c && c <= p[k + 2];
                k += 3;
            } else {
                hit |= p[k] == c;
                k += 1;
            }
        }
        (k < p.len()).then_some((hit != negate, k + 1))
    };
    while i < n.len() {
        let step = match p.get(j) {
            Some('*') => {
                star = Some((j, i));
                j += 1;
                continue;
            }
            Some('?') => Some(j + 1),
            Some('[') => match class(j, n[i]) {
                Some((true, end)) => Some(end),
                Some((false, _)) => None,
                None => (n[i] == '[').then_some(j + 1),
            },
            Some(&c) => (c == n[i]).then_some(j + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                i += 1;
                j = next;
            }
            (None, Some((sj, si))) => {
                star = Some((sj, si + 1));
                i = si + 1;
                j = sj + 1;
            }
            (None, None) => return false,
        }
    }
    p[j..].iter().all(|&c| c == '*')
}

/// A handler call sent to a running worker from another thread.
#[derive(Debug)]
pub struct HandlerCall {
    /// Element name.
    pub element: String,
    /// Handler name.
    pub handler: String,
    /// The value written; `None` reads the handler.
    pub value: Option<String>,
    /// A read's parameters (Click's `READ handler params`); empty for
    /// most reads.
    pub params: String,
    /// Where the answer goes.
    pub reply: mpsc::Sender<HandlerReply>,
}

/// A worker's answer to a [`HandlerCall`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerReply {
    /// What the handler said: a read's value, nothing for a write.
    pub result: Result<Option<HandlerValue>, String>,
    /// The handler changes shared state: no other worker needs the call.
    pub shared: bool,
}

/// A reader on another thread asking for a worker's counters: the worker
/// sends them back on this channel.
pub type StatsRequest = mpsc::Sender<Vec<ElementStats>>;

impl Engine {
    /// Instantiates `plan` as worker 0 of 1.
    pub fn new(plan: &Plan) -> Result<Engine, Diagnostic> {
        Engine::for_worker(plan, 0, 1)
    }

    /// Instantiates `plan` as worker `worker` of `workers`. Alone, it ends
    /// when its own sources are done and its graph is drained; workers
    /// that share queues join one [`Termination`] with
    /// [`Engine::join_run`].
    pub fn for_worker(plan: &Plan, worker: usize, workers: usize) -> Result<Engine, Diagnostic> {
        let mut graph = plan.instantiate_for(workers)?;
        let tasks: Vec<TaskSlot> = plan
            .elements
            .iter()
            .enumerate()
            .filter(|(_, e)| e.task != TaskKind::None)
            .map(|(i, e)| {
                let here = e.placement.runs_on(
                    worker,
                    workers,
                    e.task == TaskKind::Source,
                    e.every_worker,
                );
                TaskSlot {
                    element: i,
                    kind: e.task,
                    // A task placed on another worker is finished here
                    // before it starts.
                    done: !here,
                    here,
                    stride: STRIDE1 / u64::from(e.tickets.max(1)),
                    pass: 0,
                    entry: 0,
                }
            })
            .collect();
        for t in &tasks {
            let e = &plan.elements[t.element];
            let home_thread = match e.placement {
                Placement::Worker(n) => (n % workers.max(1)) as i64,
                Placement::Nowhere => -1,
                Placement::Default if e.task == TaskKind::Source && !e.every_worker => 0,
                Placement::Default => worker as i64,
            };
            graph.set_task_info(
                t.element,
                TaskInfo {
                    tickets: e.tickets,
                    home_thread,
                    scheduled: Cell::new(!t.done),
                    placed: e.placement != Placement::Default,
                },
            );
        }
        let mut tasks = tasks;
        let live = tasks.iter().filter(|t| !t.done).count();
        let mut strides = tasks.iter().filter(|t| !t.done).map(|t| t.stride);
        let first = strides.next();
        let stride = strides.any(|s| Some(s) != first);
        let mut by_pass = BinaryHeap::new();
        let mut next_seq = 0;
        if stride {
            // As Click schedules tasks in configuration order: each starts
            // one stride after the smallest pass of those before it.
            let mut smallest = None;
            for (i, t) in tasks.iter_mut().enumerate().filter(|(_, t)| !t.done) {
                t.pass = smallest.unwrap_or(0) + t.stride;
                smallest = Some(smallest.map_or(t.pass, |p: u64| p.min(t.pass)));
                t.entry = next_seq;
                by_pass.push(Reverse((t.pass, next_seq, i as u32)));
                next_seq += 1;
            }
        }
        Ok(Engine {
            graph,
            classes: plan.elements.iter().map(|e| e.class.name).collect(),
            state: WorkerState::new(worker, workers),
            tasks,
            live,
            stride,
            by_pass,
            next_seq,
            // Alone until told otherwise: only this worker's view counts.
            term: Arc::new(Termination::new(1)),
            timers: Timers::default(),
            stop: StopHandle::default(),
            idle_sleep: true,
            max_nap: Duration::from_micros(200),
            stats_requests: None,
            mailbox: None,
            swaps: None,
            hot_requests: None,
            started: false,
            farewell: false,
            exit_reads: Vec::new(),
            peers: None,
            peers_seen: 0,
        })
    }

    /// Makes time follow the timestamps of packets read from captures
    /// instead of the wall clock, so that an offline run is repeatable.
    pub fn set_trace_clock(&mut self, on: bool) {
        self.state.trace_clock = on;
        if on {
            self.state.now = Timestamp(0);
        }
    }

    /// Sets the clock of a trace-clock run ([`Engine::set_trace_clock`])
    /// to `at`: Click's `--simtime` starts at 1000000000 s.
    pub fn set_clock(&mut self, at: Timestamp) {
        self.state.now = at;
    }

    /// Makes this engine one of the workers of a run that ends together
    /// (see [`Termination`]): it keeps running while another worker's
    /// sources run or packets move anywhere. Every worker of the run must
    /// join the same one, which counts them all.
    pub fn join_run(&mut self, term: Arc<Termination>) {
        self.term = term;
    }

    /// Makes a counter read through a handler on this worker (a
    /// `Script`'s `print c.count`) sum every worker's copy on `peers`, and
    /// this worker answer the others' reads between rounds.
    pub fn set_peers(&mut self, peers: Arc<bricks_element::peers::Peers>) {
        self.graph.set_peers(peers.clone(), self.state.worker);
        self.peers = Some(peers);
    }

    /// Answers the other workers' counter reads asked since the last
    /// answer: one atomic load a round when none was.
    #[inline]
    fn answer_peers(&mut self) {
        if let Some(p) = &self.peers {
            let asked = p.asked();
            if asked != self.peers_seen {
                self.peers_seen = asked;
                self.graph.serve_peers(&mut self.state);
                self.graph.run_deferred(&mut self.state);
            }
        }
    }

    /// A handle that stops this engine.
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// Makes this engine obey `stop` (shared by all workers of a run).
    pub fn set_stop_handle(&mut self, stop: StopHandle) {
        self.stop = stop;
    }

    /// Makes this engine answer requests for its counters arriving on
    /// `requests`, so that another thread can show live rates without
    /// touching the graph. Counters are collected only when asked for
    /// (checked with the mailbox): a worker that nobody reads spends
    /// nothing on them.
    pub fn answer_stats(&mut self, requests: mpsc::Receiver<StatsRequest>) {
        self.stats_requests = Some(requests);
    }

    /// Makes this engine answer write handler calls arriving on `mailbox`
    /// (checked between rounds: every thousand rounds or few thousand task
    /// runs, whichever comes first, and when idle).
    pub fn set_mailbox(&mut self, mailbox: mpsc::Receiver<HandlerCall>) {
        self.mailbox = Some(mailbox);
    }

    fn answer_mail(&mut self) {
        let Some(mb) = self.mailbox.as_ref() else {
            return;
        };
        while let Ok(call) = mb.try_recv() {
            let reply = match self.graph.find(&call.element) {
                None => HandlerReply {
                    result: Err(format!("no element `{}`", call.element)),
                    shared: true,
                },
                // Calls from outside never reach a private handler.
                Some(i)
                    if self
                        .graph
                        .with_element_ref(i, |el| el.handler_is_private(&call.handler)) =>
                {
                    HandlerReply {
                        result: Err(format!("no handler `{}`", call.handler)),
                        shared: true,
                    }
                }
                Some(i) => match &call.value {
                    Some(value) => HandlerReply {
                        shared: self
                            .graph
                            .with_element_ref(i, |el| el.handler_is_shared(&call.handler)),
                        // Through the element's `call_handler`, with this
                        // worker's clock: a write that stamps what it
                        // changes (an ARP `insert`) sees the time now.
                        result: self
                            .graph
                            .call_handler(i, &call.handler, value, true, &mut self.state)
                            .map(|_| None),
                    },
                    None if call.params.is_empty() => HandlerReply {
                        shared: false,
                        result: self
                            .graph
                            .read_handler(i, &call.handler, self.state.now)
                            .map(Some),
                    },
                    // A read with parameters (a Script's `add 1 1`).
                    None => HandlerReply {
                        shared: false,
                        result: self
                            .graph
                            .call_handler(i, &call.handler, &call.params, false, &mut self.state)
                            .map(|v| Some(HandlerValue::Text(v))),
                    },
                },
            };
            let _ = call.reply.send(reply);
        }
    }

    /// Answers what other threads asked between rounds; true when the
    /// graph was swapped for a new one.
    fn housekeeping(&mut self) -> bool {
        self.answer_mail();
        self.answer_stats_requests();
        self.take_swap()
    }

    /// Makes this engine switch to new graphs sent on `orders` (a hot
    /// swap; checked with the mailbox). See [`crate::hotswap`].
    pub fn set_swaps(&mut self, orders: mpsc::Receiver<SwapOrder>) {
        self.swaps = Some(orders);
    }

    /// Makes this engine hand configurations its graph asks to swap in (a
    /// Script's `hotconfig`) to `requests`, shared by the run's workers,
    /// and rest while one is wanted; the thread taking them swaps them in
    /// through [`Engine::set_swaps`]' orders. Without it such a request is
    /// an error.
    pub fn take_hotswap_requests(&mut self, requests: Arc<HotswapRequests>) {
        self.hot_requests = Some(requests);
    }

    /// Hands on a configuration the graph asked to swap in this round.
    fn pass_hotswap_request(&mut self, stopping: bool) {
        let Some(text) = self.state.hotswap_request.take() else {
            return;
        };
        match &self.hot_requests {
            Some(r) if !stopping => r.ask(text),
            Some(_) => self
                .state
                .errors
                .push("hotconfig: the router is stopping; nothing was changed".into()),
            None => self
                .state
                .errors
                .push("hotconfig: this run cannot swap configurations; nothing was changed".into()),
        }
    }

    /// Whether a configuration asked for is waiting to be swapped in.
    fn hotswap_wanted(&self) -> bool {
        self.hot_requests.as_ref().is_some_and(|r| r.wanted())
    }

    /// Carries out a pending hot swap order, if any: meets the other
    /// workers, then switches (see [`Engine::adopt`]).
    fn take_swap(&mut self) -> bool {
        let Some(order) = self.swaps.as_ref().and_then(|rx| rx.try_recv().ok()) else {
            return false;
        };
        if self.state.stopping {
            order.rendezvous.call_off();
            let _ = order.reply.send(Err("the router is stopping".into()));
            return false;
        }
        if !order.rendezvous.meet(order.deadline) {
            let _ = order.reply.send(Err(format!(
                "worker {} waited for the others in vain; nothing was changed",
                self.state.worker
            )));
            return false;
        }
        self.adopt(order.engine);
        let _ = order.reply.send(Ok(()));
        true
    }

    /// Switches to `new`'s graph between two rounds, with no packet inside
    /// the old graph but in its queues and devices: every new element
    /// whose name and class match an old one's takes its state
    /// ([`bricks_element::Element::take_state`]) and its unconnected
    /// drops; the old graph is dropped (device elements give back their
    /// queues still open); the new graph's elements start, its tasks
    /// replace the old ones and the old timers are forgotten (the new
    /// elements ask for their own). The engine's clock, mailboxes, stop
    /// handle and run keep going.
    pub fn adopt(&mut self, mut new: Engine) {
        self.timers.clear();
        self.state.timer_requests.clear();
        // Element indices of the old graph mean nothing in the new one;
        // a driver script of the new graph claims the role in its start.
        self.state.stop_manager = None;
        // Elements the new configuration does not keep (no element of the
        // same name and class) stop here: their last packets go into the
        // old graph first, so that queues the new graph takes over carry
        // them on.
        let kept: std::collections::HashSet<(&str, &str)> = new
            .graph
            .names()
            .iter()
            .zip(&new.classes)
            .map(|(n, c)| (n.as_str(), *c))
            .collect();
        for j in 0..self.graph.len() {
            if !kept.contains(&(self.graph.names()[j].as_str(), self.classes[j])) {
                self.graph
                    .with_element(j, &mut self.state, |el, cx| el.stopping(cx));
                self.graph.run_deferred(&mut self.state);
            }
        }
        drop(kept);
        let old = &self.graph;
        let index: HashMap<&str, usize> = old
            .names()
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        for i in 0..new.graph.len() {
            let Some(&j) = index.get(new.graph.names()[i].as_str()) else {
                continue;
            };
            if self.classes[j] != new.classes[i] {
                continue;
            }
            new.graph.with_element(i, &mut self.state, |el, cx| {
                old.with_element_mut(j, |o| el.take_state(o, cx))
            });
            new.graph.add_unconnected_drops(i, old.unconnected_drops(j));
        }
        drop(index);
        // Timers asked for while taking state are the new graph's; `start`
        // takes them with the new elements' own.
        drop(std::mem::replace(&mut self.graph, new.graph));
        if let Some(p) = &self.peers {
            self.graph.set_peers(p.clone(), self.state.worker);
        }
        self.classes = new.classes;
        self.tasks = std::mem::take(&mut new.tasks);
        self.live = new.live;
        self.stride = new.stride;
        self.by_pass = std::mem::take(&mut new.by_pass);
        self.next_seq = new.next_seq;
        self.started = false;
        self.start();
    }

    fn answer_stats_requests(&mut self) {
        let Some(rx) = self.stats_requests.as_ref() else {
            return;
        };
        // Readers that asked at about the same time share one collection.
        let mut stats = None;
        while let Ok(reply) = rx.try_recv() {
            let s = stats.get_or_insert_with(|| self.collect_stats());
            let _ = reply.send(s.clone());
        }
    }

    /// The running graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Reads handler `element.handler` on this worker's graph.
    pub fn read_handler(&self, element: &str, handler: &str) -> Result<HandlerValue, String> {
        let i = self
            .graph
            .find(element)
            .ok_or_else(|| format!("no element matching `{element}'"))?;
        self.graph.read_handler(i, handler, self.state.now)
    }

    /// Calls a write handler (`element.handler`) on this worker's graph.
    pub fn write_handler(
        &mut self,
        element: &str,
        handler: &str,
        value: &str,
    ) -> Result<(), String> {
        let i = self
            .graph
            .find(element)
            .ok_or_else(|| format!("no element `{element}`"))?;
        self.graph
            .call_handler(i, handler, value, true, &mut self.state)
            .map(|_| ())
    }

    #[inline]
    fn take_timer_requests(&mut self) {
        // Twice a round, usually with nothing asked for.
        if self.state.timer_requests.is_empty() {
            return;
        }
        for (t, e) in self.state.timer_requests.drain(..) {
            self.timers.push(t, e);
        }
    }

    /// Runs one round: due timers, then as many task runs as there are
    /// tasks (each task once when their tickets are equal). Returns
    /// whether anything made progress.
    pub fn step(&mut self) -> bool {
        self.round().worked
    }

    fn round(&mut self) -> Round {
        if !self.state.trace_clock {
            self.state.now = Timestamp::now();
        }
        let mut r = Round::default();
        while let Some((t, e)) = self.timers.peek() {
            if t > self.state.now {
                break;
            }
            self.timers.pop();
            self.graph
                .with_element(e, &mut self.state, |el, cx| el.run_timer(cx));
            self.graph.run_deferred(&mut self.state);
            r.worked = true;
        }
        if self.stride {
            self.stride_runs(&mut r);
        } else {
            for slot in self.tasks.iter_mut() {
                if slot.done {
                    continue;
                }
                let res = self
                    .graph
                    .with_element(slot.element, &mut self.state, |el, cx| el.run_task(cx));
                self.graph.run_deferred(&mut self.state);
                match res {
                    TaskResult::Worked => r.worked = true,
                    TaskResult::Idle => {}
                    TaskResult::Waiting => r.waiting = true,
                    TaskResult::Done => {
                        slot.done = true;
                        self.graph.task_finished(slot.element);
                        self.live -= 1;
                        r.worked = true;
                    }
                }
            }
        }
        self.take_timer_requests();
        self.wake_tasks();
        r
    }

    /// Runs again the finished tasks that handler writes gave work (a
    /// source `reset` after its LIMIT), as Click reschedules them; not
    /// once the router stops.
    fn wake_tasks(&mut self) {
        let woken = self.graph.take_woken();
        for i in woken {
            let slot = self
                .tasks
                .iter()
                .position(|t| t.element == i && t.done && t.here);
            match slot {
                Some(k) if !self.state.stopping => {
                    // Click: one stride after the smallest pass.
                    let base = self.by_pass.peek().map_or(0, |Reverse((p, _, _))| *p);
                    let t = &mut self.tasks[k];
                    t.done = false;
                    t.pass = base.saturating_add(t.stride);
                    let pass = t.pass;
                    self.live += 1;
                    if self.stride {
                        self.push_pass(pass, k);
                    }
                }
                _ => self.graph.task_finished(i),
            }
        }
    }

    /// Runs one task and accounts for its result.
    fn run_slot(&mut self, i: usize, r: &mut Round) {
        let element = self.tasks[i].element;
        let res = self
            .graph
            .with_element(element, &mut self.state, |el, cx| el.run_task(cx));
        self.graph.run_deferred(&mut self.state);
        match res {
            TaskResult::Worked => r.worked = true,
            TaskResult::Idle => {}
            TaskResult::Waiting => r.waiting = true,
            TaskResult::Done => {
                self.tasks[i].done = true;
                self.graph.task_finished(element);
                self.live -= 1;
                r.worked = true;
            }
        }
    }

    /// A stride-scheduled round: `live` runs, each of the task with the
    /// smallest pass. A round in which nothing moved is followed by a
    /// sweep that runs every task once more, outside the passes, so that a
    /// worker never mistakes a low-ticket task that was not picked this
    /// round for one with nothing to do.
    fn stride_runs(&mut self, r: &mut Round) {
        let mut runs = 0;
        while runs < self.live {
            let Some(Reverse((pass, entry, i))) = self.by_pass.pop() else {
                break;
            };
            let i = i as usize;
            if self.tasks[i].done || self.tasks[i].entry != entry {
                // Ended from outside (a stop, the sweep below), or an
                // entry from before it ended and was woken: dropped here.
                continue;
            }
            if pass >= PASS_REBASE {
                self.rebase(pass, i);
            }
            runs += 1;
            self.run_slot(i, r);
            let slot = &mut self.tasks[i];
            if !slot.done {
                slot.pass = slot.pass.wrapping_add(slot.stride);
                let pass = slot.pass;
                self.push_pass(pass, i);
            }
        }
        if !r.worked {
            for i in 0..self.tasks.len() {
                if !self.tasks[i].done {
                    self.run_slot(i, r);
                }
            }
            // Tasks that ended in the sweep are still in the heap; they
            // are skipped when popped.
        }
    }

    /// Moves every pass back by `base` (the smallest), keeping their
    /// differences; `running` was popped and is pushed back by the caller.
    fn rebase(&mut self, base: u64, running: usize) {
        for t in self.tasks.iter_mut() {
            t.pass = t.pass.saturating_sub(base);
        }
        let live: Vec<(u64, usize)> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|&(i, t)| !t.done && i != running)
            .map(|(i, t)| (t.pass, i))
            .collect();
        self.by_pass.clear();
        for (pass, i) in live {
            self.push_pass(pass, i);
        }
    }

    /// Queues task `i` to run at `pass`, after the tasks already queued at
    /// the same pass.
    fn push_pass(&mut self, pass: u64, i: usize) {
        self.tasks[i].entry = self.next_seq;
        self.by_pass.push(Reverse((pass, self.next_seq, i as u32)));
        self.next_seq += 1;
    }

    fn sources_running(&self) -> bool {
        self.tasks
            .iter()
            .any(|t| t.kind == TaskKind::Source && !t.done)
    }

    /// Marks every source of this worker done (a stop).
    fn end_sources(&mut self) {
        for t in self.tasks.iter_mut() {
            if t.kind == TaskKind::Source && !t.done {
                t.done = true;
                self.graph.task_finished(t.element);
                self.live -= 1;
            }
        }
    }

    /// Hands this worker's pending stop requests to its stop manager, if
    /// it has one ([`WorkerState::stop_manager`], a `DriverManager`): each
    /// request writes `router` to the manager's `step` handler (Click's
    /// `Master::verify_stop`, at most 1,000 steps at a time as there).
    /// Requests the manager takes no longer end the run; the manager ends
    /// it by giving up the role and requesting a stop. Stop requests made
    /// on other workers are passed to it ([`Termination::forward_stops`]);
    /// without a manager they end the run directly.
    fn step_stop_manager(&mut self) {
        if self.state.worker == 0 {
            // Stop managers live on worker 0 (a driver script claims the
            // role there, also in a configuration swapped in, and gives it
            // up at its end): the others follow what it says now.
            let managed = self.state.stop_manager.is_some();
            if managed != self.term.managed() {
                self.term.set_managed(managed);
            }
            // Requests passed on before the role was given up still count.
            let n = self.term.take_forwarded();
            if n > 0 {
                self.state.stop_requested = true;
                let n = u32::try_from(n).unwrap_or(u32::MAX);
                self.state.stop_events = self.state.stop_events.saturating_add(n);
            }
        } else if self.state.stop_requested && self.term.managed() {
            // Worker 0's stop manager counts this worker's requests too,
            // as Click's driver counts every thread's.
            self.term.forward_stops(self.state.stop_events.max(1));
            self.state.stop_requested = false;
            self.state.stop_events = 0;
            return;
        }
        let mut budget = 1000u32;
        while self.state.stop_requested && budget > 0 {
            let Some(m) = self.state.stop_manager else {
                break;
            };
            budget -= 1;
            self.state.stop_events = self.state.stop_events.saturating_sub(1);
            if self.state.stop_events == 0 {
                self.state.stop_requested = false;
            }
            let _ = self
                .graph
                .call_handler(m, "step", "router", true, &mut self.state);
            self.graph.run_deferred(&mut self.state);
        }
        self.take_timer_requests();
    }

    /// How long a stopped run keeps moving the packets already inside the
    /// graph before it ends regardless (see [`Engine::run`]).
    const DRAIN_LIMIT: Duration = Duration::from_secs(1);

    /// Runs until every source has finished and the graph has drained, or
    /// until a stop is asked for; then delivers what is in flight, shuts
    /// every element down, and reports the counters. With other workers
    /// (see [`Engine::join_run`]) it ends when they all agree there is
    /// nothing left to move.
    pub fn run(&mut self) -> RunSummary {
        let start = Instant::now();
        self.start();
        let mut idle_rounds = 0u32;
        let mut polls = Polls::default();
        // Task runs since the mail was last read: a graph with a hundred
        // thousand tasks reads it every round, not every thousand.
        let mut since = 0usize;
        let per_round = self.tasks.len().max(4);
        let worker = self.state.worker;
        let mut stopping: Option<StopReason> = None;
        let mut stop_began: Option<Instant> = None;
        let mut parked = false;
        // With a stop manager: the round begun when this worker ran out of
        // work, which the others must confirm before the end of the run is
        // a stop event (see `Termination::others_quiet`).
        let mut quiet_from: Option<u64> = None;
        let reason = if self.tasks.is_empty() {
            StopReason::NoTasks
        } else {
            loop {
                self.answer_peers();
                since += per_round;
                if since >= 4096 {
                    since = 0;
                    if self.housekeeping() {
                        swapped(&mut parked, &self.term);
                    }
                }
                self.pass_hotswap_request(stopping.is_some());
                if stopping.is_none() && self.hotswap_wanted() {
                    // Rest between rounds until the swap is made (the new
                    // configuration starts afresh: a stop the old one
                    // asked for meanwhile is forgotten, as Click's old
                    // router's) or refused (the old one goes on).
                    if self.housekeeping() {
                        swapped(&mut parked, &self.term);
                        self.state.stop_requested = false;
                        self.state.stop_events = 0;
                    }
                    std::thread::sleep(Duration::from_micros(50));
                    continue;
                }
                if let Some(t) = stop_began {
                    // A stop delivers what is in flight, but packets that
                    // circle for ever (a Queue feeding a Tee feeding the
                    // same Queue) must not keep the router running: Click
                    // stops at once; bricks gives them DRAIN_LIMIT.
                    if self.term.finished() || t.elapsed() > Self::DRAIN_LIMIT {
                        self.term.abandon();
                        break stopping.unwrap_or(StopReason::Requested);
                    }
                }
                if stopping.is_none() {
                    if self.stop.is_stopped() {
                        stopping = Some(StopReason::External);
                    } else {
                        self.step_stop_manager();
                        if self.state.hotswap_request.is_some() && self.hot_requests.is_some() {
                            // The manager swapped configurations as it
                            // stepped: the swap comes before its stop.
                            continue;
                        }
                        if self.state.stop_requested || self.term.stop_requested() {
                            self.term.request_stop();
                            stopping = Some(StopReason::Requested);
                        }
                    }
                    if stopping.is_some() {
                        stop_began = Some(Instant::now());
                        self.state.stopping = true;
                        self.end_sources();
                        // Their last packets drain with everything else
                        // in flight, on every worker, before the run ends.
                        self.farewell();
                    }
                }
                if parked && self.term.finished() {
                    if stopping.is_none() {
                        self.last_stage();
                        (stopping, stop_began, parked) =
                            (Some(StopReason::SourcesDone), Some(Instant::now()), false);
                        continue;
                    }
                    break stopping.unwrap_or(StopReason::SourcesDone);
                }
                let confirming = parked.then(|| self.term.round());
                let r = self.round();
                polls.rounds += 1;
                polls.empty += u64::from(!r.worked);
                // A stop does not wait for rate limiters.
                let waiting = r.waiting && stopping.is_none();
                if r.worked || waiting {
                    if parked {
                        parked = false;
                        self.term.unpark();
                    }
                    if r.worked {
                        idle_rounds = 0;
                        quiet_from = None;
                        continue;
                    }
                }
                let sources = self.sources_running();
                if !waiting && !sources && idle_rounds >= SETTLE_ROUNDS {
                    if stopping.is_none() && self.state.stop_manager.is_some() {
                        // The run would end here, once the other workers
                        // are idle too; with a stop manager that is a stop
                        // event like any other (Click's driver ends only
                        // on those), and the manager decides.
                        let quiet = match quiet_from {
                            None => {
                                quiet_from = Some(self.term.nudge());
                                false
                            }
                            Some(round) => self.term.others_quiet(worker, round),
                        };
                        if !self.state.stop_requested && quiet {
                            self.state.stop_requested = true;
                            self.state.stop_events = self.state.stop_events.saturating_add(1);
                        }
                    } else {
                        match confirming {
                            None => {
                                parked = true;
                                self.term.park();
                                continue;
                            }
                            Some(round) => {
                                if self.term.acknowledge(worker, round) {
                                    if stopping.is_none() {
                                        self.last_stage();
                                        (stopping, stop_began, parked) = (
                                            Some(StopReason::SourcesDone),
                                            Some(Instant::now()),
                                            false,
                                        );
                                        continue;
                                    }
                                    break stopping.unwrap_or(StopReason::SourcesDone);
                                }
                            }
                        }
                    }
                }
                if self.state.trace_clock && (sources || waiting) && idle_rounds >= SETTLE_ROUNDS {
                    // Nothing is due now: jump to the next thing that is.
                    if let Some((t, _)) = self.timers.peek() {
                        self.state.now = self.state.now.max(t);
                        continue;
                    }
                }
                idle_rounds += 1;
                if self.idle_sleep && idle_rounds > 64 {
                    if self.housekeeping() {
                        swapped(&mut parked, &self.term);
                        idle_rounds = 0;
                        continue;
                    }
                    let nap = match self.timers.peek() {
                        Some((t, _)) => Duration::from_nanos(t.0.saturating_sub(self.state.now.0)),
                        None => self.max_nap,
                    };
                    std::thread::sleep(nap.min(self.max_nap));
                } else if parked {
                    // Waiting for other workers without napping: let them
                    // have the core if they share it.
                    std::thread::yield_now();
                }
            }
        };
        self.drain();
        self.shutdown();
        // Readers on other workers now take this worker's final counts.
        self.graph.publish_to_peers(u64::MAX, true);
        let reads = self.exit_read_values();
        RunSummary {
            reason,
            elapsed: start.elapsed(),
            elements: self.collect_stats(),
            errors: std::mem::take(&mut self.state.errors),
            reads,
            polls,
        }
    }

    /// The values of the read handlers asked for at exit, as Click's
    /// driver expands them (userlevel/click.cc, `call_read_handlers`): the
    /// element name before the first `.` is an element, else a shell
    /// pattern over element names, else a class name; a request with no
    /// `.` reads a handler of the router itself (`list`, `version`).
    fn exit_read_values(&self) -> Vec<ExitRead> {
        let mut out = Vec::new();
        for full in &self.exit_reads {
            let Some((e, h)) = full.split_once('.') else {
                out.push(ExitRead {
                    name: full.clone(),
                    named: false,
                    value: self.router_handler(full),
                });
                continue;
            };
            if let Some(i) = self.graph.find(e) {
                out.push(ExitRead {
                    name: full.clone(),
                    named: false,
                    value: self.graph.read_handler(i, h, self.state.now),
                });
                continue;
            }
            let pattern = e.contains(['*', '?', '[']);
            let matches: Vec<usize> = (0..self.graph.len())
                .filter(|&i| {
                    if pattern {
                        glob_match(&self.graph.names()[i], e)
                    } else {
                        self.classes[i] == e
                    }
                })
                .collect();
            if matches.is_empty() {
                let what = if pattern {
                    "no element matching"
                } else {
                    "no element"
                };
                out.push(ExitRead {
                    name: full.clone(),
                    named: false,
                    value: Err(format!("{what} '{e}'")),
                });
            }
            for i in matches {
                // Elements without the handler are passed over, as Click does.
                if let Ok(v) = self.graph.read_handler(i, h, self.state.now) {
                    out.push(ExitRead {
                        name: format!("{}.{h}", self.graph.names()[i]),
                        named: true,
                        value: Ok(v),
                    });
                }
            }
        }
        out
    }

    /// A read handler of the router itself: `list` (the element count,
    /// then each name on a line, as Click's), `version`, `config`,
    /// `flatconfig`, `requirements`, `timewarp`.
    fn router_handler(&self, h: &str) -> Result<HandlerValue, String> {
        match h {
            "list" => {
                let mut s = format!("{}\n", self.graph.len());
                for n in self.graph.names() {
                    s.push_str(n);
                    s.push('\n');
                }
                Ok(HandlerValue::Text(s))
            }
            "version" => Ok(HandlerValue::Text(env!("CARGO_PKG_VERSION").to_string())),
            "timewarp" => Ok(HandlerValue::Text(Timestamp::warp().to_string())),
            _ => match self.graph.router_text(h) {
                Some(t) => Ok(HandlerValue::Text(t.to_string())),
                None => Err(format!("no '{h}' handler")),
            },
        }
    }

    /// Read handlers (`element.handler`) to read when the run has ended,
    /// after the elements' shutdown: their values are in
    /// [`RunSummary::reads`] (Click's `-h`).
    pub fn read_at_exit(&mut self, handlers: Vec<String>) {
        self.exit_reads = handlers;
    }

    /// Calls every element's start hook once (done by `run`; call it
    /// before `step` when driving the engine by hand).
    pub fn start(&mut self) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        for i in 0..self.graph.len() {
            self.graph
                .with_element(i, &mut self.state, |el, cx| el.start(cx));
        }
        if self.state.stop_manager.is_some() {
            // Before any worker runs a task: the others then pass their
            // stop requests to this one.
            self.term.set_managed(true);
        }
        self.take_timer_requests();
    }

    /// The sources are done and every worker agreed the graph has
    /// drained: the stopping hooks run now, and the workers agree once
    /// more, in the run's last stage ([`Termination::next`]), so that the
    /// hooks' packets are delivered whichever worker pulls them (a
    /// `ThreadSafeQueue`). Bounded as a stop is, by [`Self::DRAIN_LIMIT`].
    fn last_stage(&mut self) {
        self.term = self.term.next();
        self.state.stopping = true;
        self.end_sources();
        self.farewell();
    }

    /// Calls every element's stopping hook, once: they may push their
    /// last packets, which the rounds that follow deliver.
    fn farewell(&mut self) {
        if std::mem::replace(&mut self.farewell, true) {
            return;
        }
        for i in 0..self.graph.len() {
            self.graph
                .with_element(i, &mut self.state, |el, cx| el.stopping(cx));
            self.graph.run_deferred(&mut self.state);
        }
        self.take_timer_requests();
    }

    /// Stops the sources, calls every element's stopping hook (unless a
    /// stop already did), and runs the remaining tasks until nothing moves,
    /// so that packets already inside the graph, and those the hooks
    /// pushed, reach their destination.
    pub fn drain(&mut self) {
        self.state.stopping = true;
        self.end_sources();
        self.farewell();
        // Bounded: a pump that always claims progress cannot hold the
        // router hostage at exit.
        for _ in 0..1_000_000 {
            if !self.step() {
                break;
            }
        }
    }

    /// Calls every element's shutdown hook (flush files, count packets that
    /// can no longer be delivered).
    pub fn shutdown(&mut self) {
        for i in 0..self.graph.len() {
            self.graph
                .with_element(i, &mut self.state, |el, cx| el.shutdown(cx));
        }
    }

    /// Every element's counters.
    pub fn collect_stats(&self) -> Vec<ElementStats> {
        (0..self.graph.len())
            .filter_map(|i| {
                let stats = self.graph.stats(i);
                (!stats.is_empty()).then(|| ElementStats {
                    name: self.graph.names()[i].clone(),
                    class: self.classes[i],
                    stats,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod glob_tests {
    use super::glob_match;

    #[test]
    fn globs_match_as_click_s() {
        for (name, pattern, want) in [
            ("c1", "c*", true),
            ("c1", "c?", true),
            ("c12", "c?", false),
            ("r/x/q", "r/*", true),
            ("r/x/q", "*q", true),
            ("abc", "a[a-c]c", true),
            ("adc", "a[!a-c]c", true),
            ("abc", "a[!a-c]c", false),
            ("", "*", true),
            ("a", "", false),
            ("a[", "a[", true),
            ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "*a*a*a*a*a*c", false),
        ] {
            assert_eq!(glob_match(name, pattern), want, "{name} ~ {pattern}");
        }
    }
}

#[cfg(test)]
mod stopping_tests {
    use super::*;
    use bricks_config::{Source, SourceMap};
    use bricks_element::{
        ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
    };
    use std::collections::VecDeque;

    /// A source that sends one packet a run, `n` in all (forever when 0),
    /// and one packet more, of one byte, when the router stops.
    struct Bye {
        left: u64,
        forever: bool,
    }

    impl Element for Bye {
        fn task_kind(&self) -> TaskKind {
            TaskKind::Source
        }

        fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
            if self.forever {
                return TaskResult::Idle;
            }
            if self.left == 0 {
                return TaskResult::Done;
            }
            self.left -= 1;
            let mut b = Batch::new();
            let _ = b.push(Packet::from_slice(&[0; 60]).unwrap());
            cx.push(0, &mut b);
            TaskResult::Worked
        }

        fn stopping(&mut self, cx: &mut Context<'_>) {
            // A stop, or a hot swap that drops it.
            assert!(cx.stopping() || self.forever);
            let mut b = Batch::new();
            let _ = b.push(Packet::from_slice(&[1]).unwrap());
            cx.push(0, &mut b);
        }
    }

    /// A queue: push in, pull out.
    #[derive(Default)]
    struct Hold(VecDeque<Packet>);

    impl Element for Hold {
        fn push(&mut self, _port: usize, batch: &mut Batch, _cx: &mut Context<'_>) {
            self.0.extend(batch.drain());
        }

        fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
            if let Some(old) = bricks_element::taken_from::<Hold>(old) {
                self.0.append(&mut old.0);
            }
        }

        fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, _cx: &mut Context<'_>) {
            for _ in 0..max {
                match self.0.pop_front() {
                    Some(p) => {
                        let _ = out.push(p);
                    }
                    None => break,
                }
            }
        }
    }

    /// A device's sender: pulls, counts what it sends and, at shutdown,
    /// what it had sent by then (`closed_with`) and whether the stopping
    /// packet was among it.
    #[derive(Default)]
    struct Out {
        sent: u64,
        last_was_bye: bool,
        closed_with: u64,
    }

    impl Element for Out {
        fn task_kind(&self) -> TaskKind {
            TaskKind::Pump
        }

        fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
            cx.pull_task(32, |b, _| {
                for p in b.drain() {
                    self.sent += 1;
                    self.last_was_bye = p.len() == 1;
                }
            })
        }

        fn shutdown(&mut self, _cx: &mut Context<'_>) {
            self.closed_with = self.sent;
        }

        fn stats(&self, s: &mut Stats) {
            s.counter("sent", self.sent);
            s.counter("closed_with", self.closed_with);
            s.counter("last_was_bye", u64::from(self.last_was_bye));
        }
    }

    static MANUAL: Manual = Manual {
        summary: "test element",
        synopsis: "T",
        description: "a test element",
        ports: "test",
        keywords: &[],
        counters: &[],
        example: "",
        see_also: &[],
    };

    fn make_bye(args: &mut Args<'_>, _: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
        let n: u64 = args.read_p("N")?.unwrap_or(0);
        Ok(Box::new(Bye {
            left: n,
            forever: n == 0,
        }))
    }

    fn make_hold(_: &mut Args<'_>, _: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
        Ok(Box::<Hold>::default())
    }

    fn make_out(_: &mut Args<'_>, _: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
        Ok(Box::<Out>::default())
    }

    static BYE: ElementClass = ElementClass {
        name: "Bye",
        ports: "0/1",
        processing: "h/h",
        manual: &MANUAL,
        make: make_bye,
    };
    static HOLD: ElementClass = ElementClass {
        name: "Hold",
        ports: "1/1",
        processing: "h/l",
        manual: &MANUAL,
        make: make_hold,
    };
    static OUT: ElementClass = ElementClass {
        name: "Out",
        ports: "1/0",
        processing: "l/h",
        manual: &MANUAL,
        make: make_out,
    };

    /// Bye under another name: a hot swap from one to the other drops
    /// the old element.
    static QUIET: ElementClass = ElementClass {
        name: "Quiet",
        ..BYE
    };

    /// A task that waits for a time an hour away, as a TimedSource waits
    /// for its next packet: it asks for that time every round it runs,
    /// and counts the timer calls it gets.
    #[derive(Default)]
    struct Later {
        at: Option<Timestamp>,
        fired: u64,
    }

    impl Element for Later {
        fn task_kind(&self) -> TaskKind {
            TaskKind::Source
        }

        fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
            let now = cx.now();
            let at = *self.at.get_or_insert(Timestamp(now.0 + 3_600_000_000_000));
            cx.schedule_at(at);
            TaskResult::Waiting
        }

        fn run_timer(&mut self, _cx: &mut Context<'_>) {
            // Its time came: the next is an hour after the next run.
            self.fired += 1;
            self.at = None;
        }

        fn stats(&self, s: &mut Stats) {
            s.counter("fired", self.fired);
        }
    }

    fn make_later(_: &mut Args<'_>, _: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
        Ok(Box::<Later>::default())
    }

    static LATER: ElementClass = ElementClass {
        name: "Later",
        ports: "0/0",
        processing: "h/h",
        manual: &MANUAL,
        make: make_later,
    };

    /// A waiting task's request, asked again every round, is held once:
    /// the heap grew by one entry a round before (tens of megabytes a
    /// second beside a busy source). Requests at other times stay, and
    /// the element is called once when its time comes.
    #[test]
    fn a_timer_asked_for_every_round_is_held_once() {
        let mut e = Engine::new(&build("l :: Later; m :: Later;", None)).unwrap();
        e.state.trace_clock = true;
        e.start();
        for _ in 0..10_000 {
            e.step();
        }
        // One request each for l and m.
        assert_eq!(e.timers.len(), 2);
        // Its time comes: each element is called once, and asks again.
        e.state.now = Timestamp(e.state.now.0 + 3_700_000_000_000);
        e.step();
        e.step();
        let fired = |e: &Engine, n: &str| {
            let i = e.graph.find(n).unwrap();
            e.graph.stats(i).get("fired")
        };
        assert_eq!(fired(&e, "l"), Some(1));
        assert_eq!(fired(&e, "m"), Some(1));
        assert_eq!(e.timers.len(), 2);
    }

    /// Requests at other times are all kept, earliest first and, at one
    /// time, the element first in the configuration first; one the heap
    /// holds is not held twice.
    #[test]
    fn timers_keep_every_other_request_in_order() {
        let mut t = Timers::default();
        for (at, e) in [(9, 1), (5, 3), (5, 3), (5, 2), (7, 3), (5, 3)] {
            t.push(Timestamp(at), e);
        }
        let mut order = Vec::new();
        while let Some((at, e)) = t.pop() {
            order.push((at.0, e));
        }
        // The last (5, 3) followed a request at 7: held again, a
        // duplicate call at worst, never a lost one.
        assert_eq!(order, [(5, 2), (5, 3), (5, 3), (7, 3), (9, 1)]);
        t.push(Timestamp(1), 0);
        t.clear();
        assert_eq!(t.pop(), None);
    }

    fn build(text: &str, old: Option<&crate::Plan>) -> crate::Plan {
        let mut reg = crate::Registry::new();
        for c in [BYE, HOLD, OUT, QUIET, LATER] {
            reg.register(c);
        }
        let mut map = SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            Source {
                name: "<t>".into(),
                text: text.into(),
            },
        )
        .unwrap();
        match old {
            Some(old) => crate::build_hotswap(&router, &reg, Default::default(), old),
            None => crate::build(&router, &reg),
        }
        .unwrap()
    }

    fn plan(n: u64) -> crate::Plan {
        build(&format!("Bye({n}) -> Hold -> out :: Out;"), None)
    }

    #[test]
    fn an_element_a_hot_swap_drops_says_goodbye_through_the_kept_queue() {
        let old = build("b :: Bye(0) -> h :: Hold -> out :: Out;", None);
        let mut e = Engine::new(&old).unwrap();
        e.start();
        e.step();
        let new = build("b :: Quiet(0) -> h :: Hold -> out :: Out;", Some(&old));
        e.adopt(Engine::new(&new).unwrap());
        for _ in 0..3 {
            e.step();
        }
        let out = e
            .collect_stats()
            .into_iter()
            .find(|s| s.name == "out")
            .unwrap()
            .stats;
        assert_eq!(out.get("sent"), Some(1), "the old Bye's last packet");
        assert_eq!(out.get("last_was_bye"), Some(1));
        // Kept elements are not stopped: a swap to the same classes sends
        // nothing.
        let same = build("b :: Quiet(0) -> h :: Hold -> out :: Out;", Some(&new));
        e.adopt(Engine::new(&same).unwrap());
        for _ in 0..3 {
            e.step();
        }
        let out = e
            .collect_stats()
            .into_iter()
            .find(|s| s.name == "out")
            .unwrap()
            .stats;
        assert_eq!(out.get("sent"), Some(0));
    }

    #[test]
    fn packets_pushed_while_stopping_leave_before_shutdown() {
        // The sources end: the last packet is the stopping one, sent
        // through a queue and a pull task before the sender closed.
        let mut e = Engine::new(&plan(5)).unwrap();
        let s = e.run();
        assert_eq!(s.reason, StopReason::SourcesDone);
        let out = s.stats("out").unwrap();
        assert_eq!(out.get("sent"), Some(6));
        assert_eq!(out.get("closed_with"), Some(6));
        assert_eq!(out.get("last_was_bye"), Some(1));

        // A stop from outside, on two workers that end together: each
        // worker's instance says goodbye once, and it leaves.
        let plan = Arc::new(plan(0));
        let opts = crate::WorkerOptions {
            threads: 2,
            pin: false,
            ..Default::default()
        };
        let w = crate::Workers::start(plan, &opts).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        w.stop_handle().stop();
        assert!(w.wait_finished(Duration::from_secs(10)));
        let s = w.join();
        assert_eq!(s.total.reason, StopReason::External);
        let out = s.total.stats("out").unwrap();
        assert_eq!(out.get("sent"), Some(2));
        assert_eq!(out.get("closed_with"), Some(2));
    }
}
