//! Several workers: one pinned thread per core, each running its own
//! instance of the whole graph (RouteBricks §4.2: a packet is handled by
//! one core from reception to transmission, and a queue is touched by one
//! core only).
//!
//! Workers share nothing mutable but what elements share on purpose
//! (route and ARP tables through `Args::shared`, device queues handed out
//! once each). Counters stay per worker and are summed when read. For live
//! rates a reader asks each worker for a copy of its counters, which the
//! worker makes between rounds; a worker nobody asks spends nothing on
//! them.

use crate::engine::{
    ElementStats, Engine, ExitRead, HandlerCall, HandlerReply, Polls, RunSummary, StatsRequest,
    StopHandle, StopReason,
};
use crate::hotswap::{HotswapRequests, Rendezvous, SwapOrder, MEET_WITHIN};
use crate::{Plan, Termination};
use bricks_config::Diagnostic;
use bricks_element::HandlerValue;
use bricks_packet::Timestamp;
use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How to run the workers.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Number of workers (threads).
    pub threads: usize,
    /// Pin worker `i` to core `i` (modulo the cores this process may use).
    pub pin: bool,
    /// Time follows capture timestamps (see [`Engine::set_trace_clock`]).
    pub trace_clock: bool,
    /// Where a trace clock starts (Click's `--simtime`); 0 by default.
    pub clock_start: Timestamp,
    /// Let [`Workers::live`] read the counters, each worker collecting
    /// them at most twice in this time (and only when they are read).
    pub publish_every: Option<Duration>,
    /// The longest an idle worker sleeps before polling again. Zero spins.
    pub max_nap: Duration,
    /// Read handlers (`element.handler`) every worker reads when the run
    /// has ended (Click's `-h`); see [`RunSummary::reads`].
    pub exit_reads: Vec<String>,
    /// Some thread takes configurations the router asks to swap in
    /// ([`Control::take_hotswap_request`]); without one a Script's
    /// `hotconfig` write is reported as an error and changes nothing.
    pub hotswap_requests: bool,
}

impl Default for WorkerOptions {
    fn default() -> WorkerOptions {
        WorkerOptions {
            threads: 1,
            pin: true,
            trace_clock: false,
            clock_start: Timestamp(0),
            publish_every: None,
            max_nap: Duration::from_micros(200),
            exit_reads: Vec::new(),
            hotswap_requests: false,
        }
    }
}

/// Running workers.
pub struct Workers {
    handles: Vec<JoinHandle<RunSummary>>,
    ended: Arc<Ended>,
    control: Control,
    cores: Vec<Option<usize>>,
}

/// Reaches running workers from any thread: their live counters, their
/// write handlers, a stop.
#[derive(Clone)]
pub struct Control {
    live: Vec<Arc<Mutex<Snapshot>>>,
    stats: Vec<mpsc::Sender<StatsRequest>>,
    /// How old a copy of the counters may be before a worker is asked
    /// again; `None`: live counters are off.
    every: Option<Duration>,
    mail: Vec<mpsc::Sender<HandlerCall>>,
    swaps: Vec<mpsc::Sender<SwapOrder>>,
    stop: StopHandle,
    requests: Option<Arc<HotswapRequests>>,
}

/// The last copy of one worker's counters a reader got.
#[derive(Default)]
struct Snapshot {
    /// When it was taken; `None` before the first one.
    at: Option<Instant>,
    /// The worker has finished: these are its final counters.
    done: bool,
    stats: Vec<ElementStats>,
}

/// Stack of a worker thread: room for a pull chain of
/// [`bricks_element::MAX_PULL_DEPTH`] elements with pushes
/// [`bricks_element::MAX_PUSH_DEPTH`] deep under it, whatever the
/// elements keep on the stack (a batch is 2 KiB). Only what is used is
/// ever backed by memory.
const WORKER_STACK: usize = 16 << 20;

/// How long a reader waits for a worker to answer (it does between rounds,
/// within a millisecond unless a round is very long).
const STATS_WAIT: Duration = Duration::from_secs(1);

impl Control {
    /// Each worker's counters, at most half `publish_every` old (the final ones
    /// of a worker that has finished; nothing while live counters are off
    /// or before a worker first answers).
    pub fn live(&self) -> Vec<Vec<ElementStats>> {
        let Some(every) = self.every else {
            return vec![Vec::new(); self.live.len()];
        };
        let lock = |w: usize| self.live[w].lock().unwrap_or_else(|e| e.into_inner());
        // Ask every worker first, then wait: they collect in parallel.
        let asked: Vec<Option<mpsc::Receiver<Vec<ElementStats>>>> = (0..self.live.len())
            .map(|w| {
                let s = lock(w);
                // A copy is reused while younger than half the interval:
                // `at` is when the last answer came, so a reader that asks
                // once per interval (`bricks run --stats-interval`) finds
                // it a little younger than the interval each time, and
                // would otherwise get the same counters every other time.
                if s.done || s.at.is_some_and(|at| at.elapsed() < every / 2) {
                    return None;
                }
                drop(s);
                let (tx, rx) = mpsc::channel();
                self.stats[w].send(tx).ok().map(|()| rx)
            })
            .collect();
        let deadline = Instant::now() + STATS_WAIT;
        asked
            .into_iter()
            .enumerate()
            .map(|(w, rx)| {
                let fresh = rx.and_then(|rx| {
                    rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                        .ok()
                });
                let mut s = lock(w);
                if let (Some(stats), false) = (fresh, s.done) {
                    s.at = Some(Instant::now());
                    s.stats = stats;
                }
                s.stats.clone()
            })
            .collect()
    }

    /// A configuration the router asked to swap in (a Script's
    /// `hotconfig`), if one waits: swap it ([`Control::hotswap`], through
    /// whatever builds plans) and then call
    /// [`Control::hotswap_request_done`], whether it was swapped or not.
    pub fn take_hotswap_request(&self) -> Option<String> {
        self.requests.as_ref().and_then(|r| r.take())
    }

    /// The swap asked for is made or refused: the workers go on.
    pub fn hotswap_request_done(&self) {
        if let Some(r) = &self.requests {
            r.done();
        }
    }

    /// Switches every worker to `plan` (a hot swap, see
    /// [`crate::hotswap`]; build it with [`crate::build_hotswap`] from the
    /// running plan). Each worker's graph is instantiated here, while the
    /// workers forward with the old one; then all of them switch between
    /// two rounds, or none does and the old configuration keeps running.
    pub fn hotswap(&self, plan: &Plan) -> Result<(), String> {
        let n = self.swaps.len();
        let mut engines = Vec::with_capacity(n);
        for w in 0..n {
            engines.push(Engine::for_worker(plan, w, n).map_err(|d| d.message)?);
        }
        let rendezvous = Arc::new(Rendezvous::new(n));
        let deadline = Instant::now() + MEET_WITHIN;
        let mut replies = Vec::with_capacity(n);
        for (w, engine) in engines.into_iter().enumerate() {
            let (tx, rx) = mpsc::channel();
            let order = SwapOrder {
                engine,
                rendezvous: rendezvous.clone(),
                deadline,
                reply: tx,
            };
            if self.swaps[w].send(order).is_err() {
                // That worker has finished: nobody switches.
                rendezvous.call_off();
                return Err(format!("worker {w} is not running; nothing was changed"));
            }
            replies.push(rx);
        }
        let mut result = Ok(());
        for (w, rx) in replies.into_iter().enumerate() {
            let r = rx
                .recv_timeout(MEET_WITHIN + Duration::from_secs(3))
                .unwrap_or_else(|_| Err(format!("worker {w} did not answer")));
            if result.is_ok() {
                result = r;
            }
        }
        result
    }

    /// Stops every worker.
    pub fn stop(&self) {
        self.stop.stop();
    }

    /// Calls write handler `element.handler` with `value`: on worker 0
    /// first, then, unless the handler changes shared state, on every other
    /// worker. Returns the first error.
    pub fn write_handler(&self, element: &str, handler: &str, value: &str) -> Result<(), String> {
        let call = |w: usize| -> Option<HandlerReply> {
            let (tx, rx) = mpsc::channel();
            self.mail[w]
                .send(HandlerCall {
                    element: element.to_string(),
                    handler: handler.to_string(),
                    value: Some(value.to_string()),
                    params: String::new(),
                    reply: tx,
                })
                .ok()?;
            // A worker answers between rounds; one that has finished
            // never will.
            rx.recv_timeout(Duration::from_secs(2)).ok()
        };
        let mut first = None;
        let mut shared = false;
        for w in 0..self.mail.len() {
            if let Some(r) = call(w) {
                shared = r.shared;
                first.get_or_insert(r.result);
                break;
            }
        }
        let Some(result) = first else {
            return Err("no worker is running".into());
        };
        if !shared {
            for w in 1..self.mail.len() {
                if let Some(HandlerReply { result: Err(e), .. }) = call(w) {
                    return Err(format!("worker {w}: {e}"));
                }
            }
        }
        result.map(|_| ())
    }

    /// Reads handler `element.handler` of the running workers: a counter
    /// summed over them, other values from the first worker that answers.
    pub fn read_handler(&self, element: &str, handler: &str) -> Result<String, String> {
        self.read_handler_with(element, handler, "")
    }

    /// Reads handler `element.handler` with parameters `params` (Click's
    /// `READ handler params`, a Script's `add 1 1`), as
    /// [`Control::read_handler`] does.
    pub fn read_handler_with(
        &self,
        element: &str,
        handler: &str,
        params: &str,
    ) -> Result<String, String> {
        let answers: Vec<Result<HandlerValue, String>> = (0..self.mail.len())
            .filter_map(|w| {
                let (tx, rx) = mpsc::channel();
                self.mail[w]
                    .send(HandlerCall {
                        element: element.to_string(),
                        handler: handler.to_string(),
                        value: None,
                        params: params.to_string(),
                        reply: tx,
                    })
                    .ok()?;
                let r = rx.recv_timeout(Duration::from_secs(2)).ok()?;
                Some(
                    r.result
                        .and_then(|v| v.ok_or_else(|| "no value".to_string())),
                )
            })
            .collect();
        if answers.is_empty() {
            return Err("no worker is running".into());
        }
        combine(answers.into_iter()).map(HandlerValue::into_text)
    }
}

/// Ends the run for every worker when the thread holding it unwinds.
struct Abandon(Arc<Termination>);

impl Drop for Abandon {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abandon();
        }
    }
}

/// Opened once every worker has started its elements: no worker runs a
/// task before then, as Click initializes every element before any thread
/// runs (a packet Script on worker 1 may signal the process before worker
/// 0's signal Script has installed its handler otherwise).
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    fn wait(&self) {
        let g = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let _g = self
            .cv
            .wait_while(g, |open| !*open)
            .unwrap_or_else(|e| e.into_inner());
    }
}

/// A worker's word that it is ready (or why it is not), said once; a
/// worker that panics before saying it says so on unwinding, so that the
/// thread starting the run never waits for it.
struct Ready(Option<mpsc::Sender<Result<(), Diagnostic>>>);

impl Ready {
    fn say(&mut self, r: Result<(), Diagnostic>) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(r);
        }
    }
}

impl Drop for Ready {
    fn drop(&mut self) {
        self.say(Err(Diagnostic {
            span: Default::default(),
            message: "a worker ended before it started".into(),
            help: None,
            notes: Vec::new(),
        }));
    }
}

/// How many workers have ended, for a thread that waits for them all.
#[derive(Default)]
struct Ended {
    count: Mutex<usize>,
    cv: Condvar,
}

/// Counts its worker as ended when the thread returns or unwinds.
struct EndGuard(Arc<Ended>);

impl Drop for EndGuard {
    fn drop(&mut self) {
        let mut c = self.0.count.lock().unwrap_or_else(|e| e.into_inner());
        *c += 1;
        self.0.cv.notify_all();
    }
}

/// What a finished multi-worker run reports.
#[derive(Debug, Clone)]
pub struct WorkersSummary {
    /// Each worker's own summary, in worker order.
    pub per_worker: Vec<RunSummary>,
    /// Counters summed over the workers, errors of all of them.
    pub total: RunSummary,
}

impl Workers {
    /// Instantiates the plan once per worker (each on its own thread) and
    /// starts them. Fails before anything runs if an instance cannot be
    /// made.
    pub fn start(plan: Arc<Plan>, opts: &WorkerOptions) -> Result<Workers, Diagnostic> {
        Workers::start_with(plan, opts, false)
    }

    /// Like [`Workers::start`], but stopped before anything runs when
    /// `quit` (Click's `-q`): the elements are made and initialized, their
    /// sources end at once, and the counters stay at their initial values.
    pub fn start_with(
        plan: Arc<Plan>,
        opts: &WorkerOptions,
        quit: bool,
    ) -> Result<Workers, Diagnostic> {
        let n = opts.threads.max(1);
        let stop = StopHandle::default();
        if quit {
            stop.stop();
        }
        let cores: Vec<Option<usize>> = if opts.pin {
            let ids = core_affinity::get_core_ids().unwrap_or_default();
            (0..n)
                .map(|i| (!ids.is_empty()).then(|| ids[i % ids.len()].id))
                .collect()
        } else {
            vec![None; n]
        };
        let mut handles = Vec::with_capacity(n);
        let mut live = Vec::with_capacity(n);
        let mut stats = Vec::with_capacity(n);
        let mut mail = Vec::with_capacity(n);
        let mut swaps = Vec::with_capacity(n);
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), Diagnostic>>();
        let gate = Arc::new(Gate::default());
        // One run: a worker keeps polling while another's sources run and
        // while packets move anywhere (queues shared between workers).
        let term = Arc::new(Termination::new(n));
        // Counters read through handlers sum every worker's copy.
        let peers = Arc::new(bricks_element::peers::Peers::new(n));
        let ended = Arc::new(Ended::default());
        let requests = opts
            .hotswap_requests
            .then(|| Arc::new(HotswapRequests::default()));
        for (w, &core) in cores.iter().enumerate() {
            let plan = plan.clone();
            let peers = peers.clone();
            let end_guard = EndGuard(ended.clone());
            let requests = requests.clone();
            let term = term.clone();
            let stop = stop.clone();
            let slot = Arc::new(Mutex::new(Snapshot::default()));
            live.push(slot.clone());
            let (stats_tx, stats_rx) = mpsc::channel();
            stats.push(stats_tx);
            let opts = opts.clone();
            let mut ready = Ready(Some(ready_tx.clone()));
            let gate = gate.clone();
            let (mail_tx, mailbox) = mpsc::channel();
            mail.push(mail_tx);
            let (swap_tx, swap_rx) = mpsc::channel();
            swaps.push(swap_tx);
            let h = std::thread::Builder::new()
                .name(format!("bricks-w{w}"))
                .stack_size(WORKER_STACK)
                .spawn(move || {
                    let _ended = end_guard;
                    if let Some(id) = core {
                        core_affinity::set_for_current(core_affinity::CoreId { id });
                    }
                    // A worker that panics or cannot start ends the run for
                    // the others, which would otherwise wait for it.
                    let _abandon = Abandon(term.clone());
                    let mut engine = match Engine::for_worker(&plan, w, n) {
                        Ok(e) => e,
                        Err(d) => {
                            term.abandon();
                            ready.say(Err(d));
                            return RunSummary::empty(StopReason::NoTasks);
                        }
                    };
                    engine.set_stop_handle(stop);
                    engine.join_run(term);
                    if n > 1 {
                        engine.set_peers(peers);
                    }
                    engine.set_mailbox(mailbox);
                    engine.set_swaps(swap_rx);
                    if let Some(r) = requests {
                        engine.take_hotswap_requests(r);
                    }
                    engine.set_trace_clock(opts.trace_clock);
                    if opts.trace_clock {
                        engine.set_clock(opts.clock_start);
                    }
                    engine.max_nap = opts.max_nap;
                    engine.idle_sleep = !opts.max_nap.is_zero();
                    engine.read_at_exit(opts.exit_reads.clone());
                    let publish = opts.publish_every.is_some();
                    if publish {
                        engine.answer_stats(stats_rx);
                    }
                    // Every element of every worker starts before any
                    // task runs.
                    engine.start();
                    ready.say(Ok(()));
                    gate.wait();
                    let summary = engine.run();
                    if publish {
                        let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
                        s.done = true;
                        s.stats = summary.elements.clone();
                    }
                    // Readers still waiting see the channel close and take
                    // the final counters just stored.
                    drop(engine);
                    summary
                })
                .expect("spawning a worker thread");
            handles.push(h);
        }
        drop(ready_tx);
        let mut failure = None;
        for _ in 0..n {
            if let Ok(Err(d)) = ready_rx.recv() {
                failure.get_or_insert(d);
            }
        }
        gate.open();
        let workers = Workers {
            handles,
            ended,
            control: Control {
                live,
                stats,
                every: opts.publish_every,
                mail,
                swaps,
                stop,
                requests,
            },
            cores,
        };
        match failure {
            Some(d) => {
                workers.control.stop();
                let _ = workers.join();
                Err(d)
            }
            None => Ok(workers),
        }
    }

    /// Stops every worker (they drain and shut down).
    pub fn stop_handle(&self) -> StopHandle {
        self.control.stop.clone()
    }

    /// A handle for other threads: live counters, write handlers, stop.
    pub fn control(&self) -> Control {
        self.control.clone()
    }

    /// The core each worker is pinned to.
    pub fn cores(&self) -> &[Option<usize>] {
        &self.cores
    }

    /// Whether every worker has finished.
    pub fn finished(&self) -> bool {
        *self.ended.count.lock().unwrap_or_else(|e| e.into_inner()) >= self.handles.len()
    }

    /// Waits until every worker has finished or `timeout` has passed;
    /// returns whether they have. A run that ends returns at once rather
    /// than at the waiter's next poll.
    pub fn wait_finished(&self, timeout: Duration) -> bool {
        let n = self.handles.len();
        let c = self.ended.count.lock().unwrap_or_else(|e| e.into_inner());
        let (c, _) = self
            .ended
            .cv
            .wait_timeout_while(c, timeout, |c| *c < n)
            .unwrap_or_else(|e| e.into_inner());
        *c >= n
    }

    /// Each worker's counters (see [`Control::live`]).
    pub fn live(&self) -> Vec<Vec<ElementStats>> {
        self.control.live()
    }

    /// Waits for every worker and sums their counters.
    pub fn join(self) -> WorkersSummary {
        let per_worker: Vec<RunSummary> = self
            .handles
            .into_iter()
            .enumerate()
            .map(|(w, h)| {
                h.join().unwrap_or_else(|_| {
                    let mut s = RunSummary::empty(StopReason::External);
                    s.errors.push(format!("worker {w} panicked"));
                    s
                })
            })
            .collect();
        let total = RunSummary::sum(&per_worker);
        WorkersSummary { per_worker, total }
    }
}

/// Sums the counters of several workers element by element, keeping the
/// element order of the first worker that reports each. Linear in the
/// number of counters: workers run one plan, so an element is usually at
/// the same position in every list; otherwise it is found by name.
pub fn sum_stats<'a>(
    per_worker: impl IntoIterator<Item = &'a [ElementStats]>,
) -> Vec<ElementStats> {
    let mut out: Vec<ElementStats> = Vec::new();
    let mut position: HashMap<&'a str, usize> = HashMap::new();
    for stats in per_worker {
        for (i, e) in stats.iter().enumerate() {
            let at = match out.get(i) {
                Some(o) if o.name == e.name => Some(i),
                _ => position.get(e.name.as_str()).copied(),
            };
            match at {
                Some(at) => out[at].stats.merge(&e.stats),
                None => {
                    position.insert(&e.name, out.len());
                    out.push(e.clone());
                }
            }
        }
    }
    out
}

impl RunSummary {
    fn empty(reason: StopReason) -> RunSummary {
        RunSummary {
            reason,
            elapsed: Duration::ZERO,
            elements: Vec::new(),
            errors: Vec::new(),
            reads: Vec::new(),
            polls: Polls::default(),
        }
    }

    /// One summary for several workers: counters summed, errors
    /// concatenated, the longest time, and the reason that says most (an
    /// outside stop over a finished source).
    pub fn sum(per_worker: &[RunSummary]) -> RunSummary {
        let rank = |r: StopReason| match r {
            StopReason::NoTasks => 0,
            StopReason::SourcesDone => 1,
            StopReason::Requested => 2,
            StopReason::External => 3,
        };
        RunSummary {
            reason: per_worker
                .iter()
                .map(|s| s.reason)
                .max_by_key(|&r| rank(r))
                .unwrap_or(StopReason::NoTasks),
            elapsed: per_worker
                .iter()
                .map(|s| s.elapsed)
                .max()
                .unwrap_or_default(),
            elements: sum_stats(per_worker.iter().map(|s| s.elements.as_slice())),
            errors: per_worker.iter().flat_map(|s| s.errors.clone()).collect(),
            reads: combine_reads(per_worker),
            polls: per_worker.iter().fold(Polls::default(), |a, s| a + s.polls),
        }
    }
}

/// The workers' answers to the read handlers asked for at exit, as one:
/// a counter sums over the workers, text is the first worker's that has
/// the handler.
fn combine_reads(per_worker: &[RunSummary]) -> Vec<ExitRead> {
    let Some(first) = per_worker.first() else {
        return Vec::new();
    };
    first
        .reads
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let answers = per_worker
                .iter()
                .filter_map(|s| s.reads.get(i))
                .filter(|o| o.name == r.name);
            ExitRead {
                value: combine(answers.map(|o| o.value.clone())),
                ..r.clone()
            }
        })
        .collect()
}

/// One value from every worker's answer to one read (see
/// [`combine_reads`]).
fn combine(
    answers: impl Iterator<Item = Result<HandlerValue, String>>,
) -> Result<HandlerValue, String> {
    let mut out: Option<Result<HandlerValue, String>> = None;
    for a in answers {
        out = Some(match (out, a) {
            (None, a) => a,
            (Some(Ok(HandlerValue::Count(x))), Ok(HandlerValue::Count(y))) => {
                Ok(HandlerValue::Count(x + y))
            }
            (Some(Err(_)), a) => a,
            (Some(o), _) => o,
        });
    }
    out.unwrap_or_else(|| Err("no worker ran".into()))
}
