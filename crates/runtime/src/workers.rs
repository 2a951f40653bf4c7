//! Several workers: one pinned thread per core, each running its own
//! instance of the whole graph (RouteBricks §4.2: a packet is handled by
//! one core from reception to transmission, and a queue is touched by one
//! core only).
//!
//! Workers share nothing mutable but what elements share on purpose
//! (route and ARP tables through `Args::shared`, device queues handed out
//! once each). Counters stay per worker and are summed when read; a worker
//! publishes a copy of its counters every so often for live rates.

use crate::engine::{
    ElementStats, Engine, HandlerCall, HandlerReply, RunSummary, StopHandle, StopReason,
};
use crate::Plan;
use bricks_config::Diagnostic;
use bricks_element::Stats;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How to run the workers.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Number of workers (threads).
    pub threads: usize,
    /// Pin worker `i` to core `i` (modulo the cores this process may use).
    pub pin: bool,
    /// Time follows capture timestamps (see [`Engine::set_trace_clock`]).
    pub trace_clock: bool,
    /// Publish counters this often for [`Workers::live`].
    pub publish_every: Option<Duration>,
    /// The longest an idle worker sleeps before polling again. Zero spins.
    pub max_nap: Duration,
}

impl Default for WorkerOptions {
    fn default() -> WorkerOptions {
        WorkerOptions {
            threads: 1,
            pin: true,
            trace_clock: false,
            publish_every: None,
            max_nap: Duration::from_micros(200),
        }
    }
}

/// Running workers.
pub struct Workers {
    handles: Vec<JoinHandle<RunSummary>>,
    control: Control,
    cores: Vec<Option<usize>>,
}

/// Reaches running workers from any thread: their live counters, their
/// write handlers, a stop.
#[derive(Clone)]
pub struct Control {
    live: Vec<Arc<Mutex<Vec<ElementStats>>>>,
    mail: Vec<mpsc::Sender<HandlerCall>>,
    stop: StopHandle,
}

impl Control {
    /// The counters each worker last published.
    pub fn live(&self) -> Vec<Vec<ElementStats>> {
        self.live
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect()
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
                    value: value.to_string(),
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
        result
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
        let n = opts.threads.max(1);
        let stop = StopHandle::default();
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
        let mut mail = Vec::with_capacity(n);
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), Diagnostic>>();
        for (w, &core) in cores.iter().enumerate() {
            let plan = plan.clone();
            let stop = stop.clone();
            let slot = Arc::new(Mutex::new(Vec::new()));
            live.push(slot.clone());
            let opts = opts.clone();
            let ready = ready_tx.clone();
            let (mail_tx, mailbox) = mpsc::channel();
            mail.push(mail_tx);
            let h = std::thread::Builder::new()
                .name(format!("bricks-w{w}"))
                .spawn(move || {
                    if let Some(id) = core {
                        core_affinity::set_for_current(core_affinity::CoreId { id });
                    }
                    let mut engine = match Engine::for_worker(&plan, w, n) {
                        Ok(e) => {
                            let _ = ready.send(Ok(()));
                            e
                        }
                        Err(d) => {
                            let _ = ready.send(Err(d));
                            return RunSummary::empty(StopReason::NoTasks);
                        }
                    };
                    engine.set_stop_handle(stop);
                    engine.set_mailbox(mailbox);
                    engine.set_trace_clock(opts.trace_clock);
                    engine.max_nap = opts.max_nap;
                    engine.idle_sleep = !opts.max_nap.is_zero();
                    if let Some(every) = opts.publish_every {
                        engine.publish_stats(slot, every);
                    }
                    engine.run()
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
        let workers = Workers {
            handles,
            control: Control { live, mail, stop },
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
        self.handles.iter().all(|h| h.is_finished())
    }

    /// The counters each worker last published (empty before its first
    /// publication).
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
/// element order of the first worker that reports each.
pub fn sum_stats<'a>(
    per_worker: impl IntoIterator<Item = &'a [ElementStats]>,
) -> Vec<ElementStats> {
    let mut out: Vec<ElementStats> = Vec::new();
    for stats in per_worker {
        for e in stats {
            match out.iter_mut().find(|o| o.name == e.name) {
                Some(o) => o.stats.merge(&e.stats),
                None => out.push(ElementStats {
                    name: e.name.clone(),
                    class: e.class,
                    stats: {
                        let mut s = Stats::default();
                        s.merge(&e.stats);
                        s
                    },
                }),
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
        }
    }
}
