//! When a run of several workers is over.
//!
//! A worker alone is done when its sources are done and a round moves
//! nothing. With queues shared between workers (`ThreadSafeQueue`) that is
//! not enough: a worker with no source of its own must keep pulling while
//! another worker's sources run, and must not leave while packets wait for
//! it in a shared queue or are still inside another worker's graph on
//! their way to one.
//!
//! The workers agree with a counting protocol. A worker whose own sources
//! are done and whose round moved nothing *parks*: it leaves the `busy`
//! count. A parked worker keeps polling; a round that moves packets
//! unparks it. Every park and unpark starts a new confirmation round
//! (`round`). A parked worker acknowledges the current round after a whole
//! round of its own that began in it and moved nothing. The run is over
//! when nobody is busy, every worker has acknowledged the current round,
//! and the round is still current: every worker has then looked at every
//! queue it pulls from since the last packet moved anywhere, and found
//! nothing (a packet can only enter a shared queue in a round that moved
//! it, which bumps the round before anyone can park again). A queue whose
//! puller never runs does not hold the run up: its packets are counted as
//! its `length` at the end.
//!
//! Only idle workers touch these atomics: a busy worker's rounds cost
//! nothing here.
//!
//! A run whose sources finished has a last stage: once the workers agree
//! the graph has drained, their elements' stopping hooks push their last
//! packets, and the workers agree again over a fresh [`Termination`]
//! ([`Termination::next`]) that those have moved too.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, OnceLock};

/// The run-wide state the workers of one run share to agree that it is
/// over (see the module documentation).
#[derive(Debug)]
pub struct Termination {
    busy: AtomicUsize,
    round: AtomicU64,
    acks: Box<[AtomicU64]>,
    finished: AtomicBool,
    stop_requested: AtomicBool,
    /// Worker 0 has a stop manager (a driver `Script`, a `DriverManager`):
    /// the other workers' stop requests go to it rather than end the run.
    managed: AtomicBool,
    /// Stop requests other workers passed to the stop manager and it has
    /// not taken yet.
    forwarded: AtomicU64,
    /// A worker gave up on the run (see [`Termination::abandon`]).
    abandoned: AtomicBool,
    /// The run's last stage, once a worker asked for it
    /// ([`Termination::next`]).
    next: OnceLock<Arc<Termination>>,
}

impl Termination {
    /// For a run of `workers` workers, all busy at first.
    pub fn new(workers: usize) -> Termination {
        let workers = workers.max(1);
        Termination {
            busy: AtomicUsize::new(workers),
            round: AtomicU64::new(0),
            // No worker has acknowledged anything yet.
            acks: (0..workers).map(|_| AtomicU64::new(u64::MAX)).collect(),
            finished: AtomicBool::new(false),
            stop_requested: AtomicBool::new(false),
            managed: AtomicBool::new(false),
            forwarded: AtomicU64::new(0),
            abandoned: AtomicBool::new(false),
            next: OnceLock::new(),
        }
    }

    /// The agreement of the run's last stage: once the workers have agreed
    /// that this one is over, their elements' stopping hooks may push
    /// packets, and the workers agree a second time, in the same way, that
    /// those have moved too. The same object for every worker that asks;
    /// all workers busy at first. A run abandoned is abandoned in its last
    /// stage too.
    pub(crate) fn next(&self) -> Arc<Termination> {
        self.next
            .get_or_init(|| {
                let t = Termination::new(self.workers());
                if self.abandoned.load(SeqCst) {
                    t.abandon();
                }
                Arc::new(t)
            })
            .clone()
    }

    /// How many workers take part.
    pub fn workers(&self) -> usize {
        self.acks.len()
    }

    /// The current confirmation round; read before a parked worker's round.
    pub(crate) fn round(&self) -> u64 {
        self.round.load(SeqCst)
    }

    /// A worker whose sources are done had a round that moved nothing.
    pub(crate) fn park(&self) {
        self.busy.fetch_sub(1, SeqCst);
        self.round.fetch_add(1, SeqCst);
    }

    /// A parked worker moved packets again.
    pub(crate) fn unpark(&self) {
        self.busy.fetch_add(1, SeqCst);
        self.round.fetch_add(1, SeqCst);
    }

    /// Parked worker `worker` had a whole round that began in confirmation
    /// round `round` and moved nothing. Returns whether the run is over.
    pub(crate) fn acknowledge(&self, worker: usize, round: u64) -> bool {
        if let Some(a) = self.acks.get(worker) {
            a.store(round, SeqCst);
        }
        self.finished()
            || (self.busy.load(SeqCst) == 0
                && self.acks.iter().all(|a| a.load(SeqCst) == round)
                && self.round.load(SeqCst) == round
                && {
                    self.finished.store(true, SeqCst);
                    true
                })
    }

    /// Whether every worker but `me`, which is busy, is parked and has
    /// acknowledged the current round: the run would be over if `me`
    /// parked. A stop manager's worker asks this before it takes the end
    /// of its own work for the end of the run (Click's driver sees one
    /// graph: its `wait_stop` waits for every thread).
    /// `since` is the round [`Termination::nudge`] began when `me` ran
    /// out of work: the round acknowledged must be that one or a later
    /// one, so that packets `me` moved before it were looked for.
    pub(crate) fn others_quiet(&self, me: usize, since: u64) -> bool {
        let now = self.round.load(SeqCst);
        now >= since
            && self.busy.load(SeqCst) <= 1
            && self
                .acks
                .iter()
                .enumerate()
                .all(|(w, a)| w == me || a.load(SeqCst) == now)
            && self.round.load(SeqCst) == now
    }

    /// Begins a confirmation round without parking: a busy worker that
    /// ran out of work asks the parked ones to look again (what it moved
    /// may have reached them). Returns the new round.
    pub(crate) fn nudge(&self) -> u64 {
        self.round.fetch_add(1, SeqCst) + 1
    }

    /// Ends the run for everyone: a worker could not start or panicked,
    /// and the others must not wait for it.
    pub fn abandon(&self) {
        self.abandoned.store(true, SeqCst);
        self.finished.store(true, SeqCst);
        if let Some(n) = self.next.get() {
            n.abandon();
        }
    }

    /// Whether some worker found the run over.
    pub(crate) fn finished(&self) -> bool {
        self.finished.load(SeqCst)
    }

    /// An element asked the router to stop (`STOP true`): every worker
    /// stops its sources.
    pub(crate) fn request_stop(&self) {
        self.stop_requested.store(true, SeqCst);
    }

    /// Says whether worker 0 has a stop manager now.
    pub(crate) fn set_managed(&self, on: bool) {
        self.managed.store(on, SeqCst);
    }

    /// Whether stop requests are the stop manager's to count.
    #[inline]
    pub(crate) fn managed(&self) -> bool {
        self.managed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Passes `n` stop requests made on another worker to the stop
    /// manager (Click's driver counts every thread's).
    pub(crate) fn forward_stops(&self, n: u32) {
        self.forwarded.fetch_add(u64::from(n), SeqCst);
    }

    /// The stop requests passed to the stop manager since it last took
    /// them.
    #[inline]
    pub(crate) fn take_forwarded(&self) -> u64 {
        if self.forwarded.load(std::sync::atomic::Ordering::Relaxed) == 0 {
            return 0;
        }
        self.forwarded.swap(0, SeqCst)
    }

    /// Whether a stop was requested by an element on any worker.
    #[inline]
    pub(crate) fn stop_requested(&self) -> bool {
        self.stop_requested
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worker_finishes_after_an_idle_parked_round() {
        let t = Termination::new(1);
        t.park();
        let r = t.round();
        assert!(t.acknowledge(0, r));
    }

    #[test]
    fn a_busy_worker_or_a_stale_round_holds_the_run() {
        let t = Termination::new(2);
        t.park();
        let r = t.round();
        // Worker 1 is still busy.
        assert!(!t.acknowledge(0, r));
        t.park();
        // Worker 0's acknowledgement is for a round before worker 1 parked.
        assert!(!t.acknowledge(1, t.round()));
        let r = t.round();
        assert!(!t.acknowledge(1, r));
        // Worker 0 moved packets in between: a new round.
        t.unpark();
        assert!(!t.acknowledge(0, r));
        t.park();
        let r = t.round();
        assert!(!t.acknowledge(0, r));
        assert!(t.acknowledge(1, r));
        assert!(t.finished());
    }

    #[test]
    fn the_last_stage_is_one_fresh_agreement_and_shares_abandonment() {
        let t = Termination::new(2);
        t.park();
        t.park();
        let r = t.round();
        assert!(!t.acknowledge(0, r));
        assert!(t.acknowledge(1, r));
        // Both workers get the same last stage, everyone busy again.
        let (a, b) = (t.next(), t.next());
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!a.finished());
        a.park();
        let r = a.round();
        assert!(!a.acknowledge(0, r), "worker 1 is still busy in it");
        // A worker that gives up ends the last stage too, made before or
        // after.
        t.abandon();
        assert!(a.finished());
        let u = Termination::new(2);
        u.abandon();
        assert!(u.next().finished());
    }
}
