//! Hot swap (Click's `hotswap`): a running router changes its
//! configuration without losing a packet.
//!
//! The new plan is checked and every worker's graph instantiated while the
//! old one forwards (elements with unchanged arguments share the old
//! tables: [`crate::build_hotswap`]). Then every worker stops at a round
//! boundary, where no packet is between elements but only in queues and
//! devices, and waits for the others ([`Rendezvous`]): from then on no
//! worker touches the old graph, so an element may take state the old
//! graph shares between workers (a `ThreadSafeQueue`'s ring). Each worker
//! offers every new element the old element of the same name and class
//! ([`bricks_element::Element::take_state`]), drops the old graph (device
//! elements give their queues back, still open, for the new ones to take),
//! starts the new graph and goes on. If any worker cannot join within a
//! time limit, none switches, and the old configuration keeps running.

use crate::Engine;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Workers meeting at a round boundary before they switch: all of them
/// switch or none does.
#[derive(Debug)]
pub struct Rendezvous {
    workers: usize,
    arrived: AtomicUsize,
    state: AtomicU8,
}

const WAIT: u8 = 0;
const GO: u8 = 1;
const ABORT: u8 = 2;

impl Rendezvous {
    /// A meeting of `workers` workers.
    pub fn new(workers: usize) -> Rendezvous {
        Rendezvous {
            workers,
            arrived: AtomicUsize::new(0),
            state: AtomicU8::new(WAIT),
        }
    }

    /// Arrives and waits for the others until `deadline`. True: every
    /// worker arrived, switch. False: the meeting was called off (a
    /// worker did not come in time); keep the old graph. Every worker
    /// gets the same answer: the last to arrive and a worker giving up
    /// race for one compare-and-swap.
    pub fn meet(&self, deadline: Instant) -> bool {
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.workers {
            return self.decide(GO);
        }
        loop {
            match self.state.load(Ordering::Acquire) {
                GO => return true,
                ABORT => return false,
                _ => {}
            }
            if Instant::now() >= deadline {
                return self.decide(ABORT);
            }
            std::thread::yield_now();
        }
    }

    /// Calls the meeting off unless it has been decided (a worker that
    /// could not take part).
    pub fn call_off(&self) {
        self.decide(ABORT);
    }

    fn decide(&self, want: u8) -> bool {
        match self
            .state
            .compare_exchange(WAIT, want, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => want == GO,
            Err(now) => now == GO,
        }
    }
}

/// What a worker is sent to switch: its instance of the new plan, the
/// meeting, and where to say how it went.
pub struct SwapOrder {
    /// The new graph, made for this worker.
    pub engine: Engine,
    /// The meeting of all workers.
    pub rendezvous: std::sync::Arc<Rendezvous>,
    /// How long the worker waits for the others.
    pub deadline: Instant,
    /// `Ok` once switched; the reason otherwise.
    pub reply: mpsc::Sender<Result<(), String>>,
}

/// How long workers wait for each other at the switch. A worker answers
/// between rounds, within a millisecond unless a round is very long.
pub const MEET_WITHIN: Duration = Duration::from_secs(2);

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn all_meet_or_none() {
        let r = Arc::new(Rendezvous::new(3));
        let deadline = Instant::now() + Duration::from_secs(5);
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let r = r.clone();
                std::thread::spawn(move || r.meet(deadline))
            })
            .collect();
        assert!(hs.into_iter().all(|h| h.join().unwrap()));
        // One never comes: the others give up, and a late one too.
        let r = Rendezvous::new(3);
        let soon = Instant::now() + Duration::from_millis(20);
        assert!(!r.meet(soon));
        assert!(!r.meet(soon));
        assert!(!r.meet(soon));
        let r = Rendezvous::new(2);
        r.call_off();
        assert!(!r.meet(Instant::now() + Duration::from_secs(1)));
    }
}
