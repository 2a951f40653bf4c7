//! The engine: runs one worker's graph until its sources finish or it is
//! told to stop, then drains what is in flight.
//!
//! A round runs every due timer, then every task once. Tasks run to
//! completion: a source's batch travels push by push until it is queued,
//! sent or dropped before the next task starts. When no task made progress
//! for a while the worker naps briefly instead of spinning (a device-driven
//! router can turn that off).

use crate::Plan;
use bricks_config::Diagnostic;
use bricks_element::{Graph, Stats, TaskKind, TaskResult, WorkerState};
use bricks_packet::Timestamp;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
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
            StopReason::Requested => "an element asked to stop (STOP true)",
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

struct TaskSlot {
    element: usize,
    kind: TaskKind,
    done: bool,
}

/// Runs one worker's instance of a plan.
pub struct Engine {
    graph: Graph,
    classes: Vec<&'static str>,
    state: WorkerState,
    tasks: Vec<TaskSlot>,
    timers: BinaryHeap<Reverse<(Timestamp, usize)>>,
    stop: StopHandle,
    /// Nap when idle instead of spinning.
    pub idle_sleep: bool,
    /// The longest nap when idle.
    pub max_nap: Duration,
    stats_requests: Option<mpsc::Receiver<StatsRequest>>,
    mailbox: Option<mpsc::Receiver<HandlerCall>>,
    started: bool,
}

/// A write handler call sent to a running worker from another thread.
#[derive(Debug)]
pub struct HandlerCall {
    /// Element name.
    pub element: String,
    /// Handler name.
    pub handler: String,
    /// The value written.
    pub value: String,
    /// Where the answer goes.
    pub reply: mpsc::Sender<HandlerReply>,
}

/// A worker's answer to a [`HandlerCall`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerReply {
    /// What the handler said.
    pub result: Result<(), String>,
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

    /// Instantiates `plan` as worker `worker` of `workers`.
    pub fn for_worker(plan: &Plan, worker: usize, workers: usize) -> Result<Engine, Diagnostic> {
        let graph = plan.instantiate()?;
        let tasks = plan
            .elements
            .iter()
            .enumerate()
            .filter(|(_, e)| e.task != TaskKind::None)
            .map(|(i, e)| TaskSlot {
                element: i,
                kind: e.task,
                // A source that runs on worker 0 only is finished elsewhere
                // before it starts.
                done: e.task == TaskKind::Source
                    && worker != 0
                    && !graph.with_element_ref(i, |el| el.task_on_every_worker()),
            })
            .collect();
        Ok(Engine {
            graph,
            classes: plan.elements.iter().map(|e| e.class.name).collect(),
            state: WorkerState::new(worker, workers),
            tasks,
            timers: BinaryHeap::new(),
            stop: StopHandle::default(),
            idle_sleep: true,
            max_nap: Duration::from_micros(200),
            stats_requests: None,
            mailbox: None,
            started: false,
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
                Some(i) => HandlerReply {
                    shared: self
                        .graph
                        .with_element_ref(i, |el| el.handler_is_shared(&call.handler)),
                    result: self.graph.write_handler(i, &call.handler, &call.value),
                },
            };
            let _ = call.reply.send(reply);
        }
    }

    fn housekeeping(&mut self) {
        self.answer_mail();
        self.answer_stats_requests();
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

    /// Calls a write handler (`element.handler`) on this worker's graph.
    pub fn write_handler(&self, element: &str, handler: &str, value: &str) -> Result<(), String> {
        let i = self
            .graph
            .find(element)
            .ok_or_else(|| format!("no element `{element}`"))?;
        self.graph.write_handler(i, handler, value)
    }

    fn take_timer_requests(&mut self) {
        for (t, e) in self.state.timer_requests.drain(..) {
            self.timers.push(Reverse((t, e)));
        }
    }

    /// Runs one round: due timers, then each task once. Returns whether
    /// any task made progress.
    pub fn step(&mut self) -> bool {
        if !self.state.trace_clock {
            self.state.now = Timestamp::now();
        }
        let mut worked = false;
        while let Some(&Reverse((t, e))) = self.timers.peek() {
            if t > self.state.now {
                break;
            }
            self.timers.pop();
            self.graph
                .with_element(e, &mut self.state, |el, cx| el.run_timer(cx));
            self.graph.run_deferred(&mut self.state);
            worked = true;
        }
        for slot in self.tasks.iter_mut() {
            if slot.done {
                continue;
            }
            let r = self
                .graph
                .with_element(slot.element, &mut self.state, |el, cx| el.run_task(cx));
            self.graph.run_deferred(&mut self.state);
            match r {
                TaskResult::Worked => worked = true,
                TaskResult::Idle => {}
                TaskResult::Done => {
                    slot.done = true;
                    worked = true;
                }
            }
        }
        self.take_timer_requests();
        worked
    }

    fn sources_running(&self) -> bool {
        self.tasks
            .iter()
            .any(|t| t.kind == TaskKind::Source && !t.done)
    }

    /// Runs until every source has finished and the graph has drained, or
    /// until a stop is asked for; then delivers what is in flight, shuts
    /// every element down, and reports the counters.
    pub fn run(&mut self) -> RunSummary {
        let start = Instant::now();
        self.start();
        let mut idle_rounds = 0u32;
        // Task runs since the mail was last read: a graph with a hundred
        // thousand tasks reads it every round, not every thousand.
        let mut since = 0usize;
        let per_round = self.tasks.len().max(4);
        let reason = if self.tasks.is_empty() {
            StopReason::NoTasks
        } else {
            loop {
                since += per_round;
                if since >= 4096 {
                    since = 0;
                    self.housekeeping();
                }
                if self.stop.is_stopped() {
                    break StopReason::External;
                }
                if self.state.stop_requested {
                    break StopReason::Requested;
                }
                let worked = self.step();
                if worked {
                    idle_rounds = 0;
                    continue;
                }
                if self.state.trace_clock && self.sources_running() {
                    // Nothing is due now: jump to the next thing that is.
                    if let Some(&Reverse((t, _))) = self.timers.peek() {
                        self.state.now = self.state.now.max(t);
                        continue;
                    }
                }
                if !self.sources_running() {
                    break StopReason::SourcesDone;
                }
                idle_rounds += 1;
                if self.idle_sleep && idle_rounds > 64 {
                    self.housekeeping();
                    let nap = match self.timers.peek() {
                        Some(&Reverse((t, _))) => {
                            Duration::from_nanos(t.0.saturating_sub(self.state.now.0))
                        }
                        None => self.max_nap,
                    };
                    std::thread::sleep(nap.min(self.max_nap));
                }
            }
        };
        self.drain();
        self.shutdown();
        RunSummary {
            reason,
            elapsed: start.elapsed(),
            elements: self.collect_stats(),
            errors: std::mem::take(&mut self.state.errors),
        }
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
        self.take_timer_requests();
    }

    /// Stops the sources and runs the remaining tasks until nothing moves,
    /// so that packets already inside the graph reach their destination.
    pub fn drain(&mut self) {
        for t in self.tasks.iter_mut() {
            if t.kind == TaskKind::Source {
                t.done = true;
            }
        }
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
