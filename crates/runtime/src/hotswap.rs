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
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// A configuration that the router asked, from inside, to swap in (a
/// Script writing Click's `hotconfig`), for the thread that swaps
/// (`bricks run`'s). While one is wanted every worker rests between rounds
/// (see [`crate::Engine`]), so the old configuration neither goes on nor
/// stops until the swap is made or refused, as Click's driver swaps
/// before its old router runs again.
#[derive(Debug, Default)]
pub struct HotswapRequests {
    wanted: AtomicBool,
    text: Mutex<Option<String>>,
}

impl HotswapRequests {
    /// A worker asks for `text` (a later request replaces an earlier one
    /// not yet taken).
    pub fn ask(&self, text: String) {
        *self.text.lock().unwrap_or_else(|e| e.into_inner()) = Some(text);
        self.wanted.store(true, Ordering::Release);
    }

    /// Whether a swap is asked for and not yet made or refused.
    pub fn wanted(&self) -> bool {
        self.wanted.load(Ordering::Acquire)
    }

    /// The configuration asked for, if one waits.
    pub fn take(&self) -> Option<String> {
        self.text.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// The swap was made or refused: the workers go on.
    pub fn done(&self) {
        self.wanted.store(false, Ordering::Release);
    }
}

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
    use bricks_config::{Source, SourceMap};
    use bricks_element::{Args, Context, Element, ElementClass, Manual, PortInfo, Stats};
    use std::sync::Arc;

    /// Holds a number (`set`) and state shared by its instances.
    struct Keep {
        held: u64,
        table: Arc<AtomicUsize>,
    }

    impl Element for Keep {
        fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
            if let Some(old) = bricks_element::taken_from::<Keep>(old) {
                self.held = old.held;
            }
        }

        fn write_handler(&mut self, _handler: &str, value: &str) -> Result<(), String> {
            self.held = value.parse().map_err(|_| "a number".to_string())?;
            Ok(())
        }

        fn stats(&self, s: &mut Stats) {
            s.counter("held", self.held);
            // Which shared state it has.
            s.counter("table", Arc::as_ptr(&self.table) as usize as u64);
        }
    }

    static MANUAL: Manual = Manual {
        summary: "test element",
        synopsis: "Keep(N)",
        description: "holds a number",
        ports: "none",
        keywords: &[],
        counters: &[],
        example: "Keep(1);",
        see_also: &[],
    };

    fn make(
        args: &mut Args<'_>,
        _: &PortInfo,
    ) -> Result<Box<dyn Element>, bricks_element::ArgError> {
        let _: Option<u64> = args.read_p("N")?;
        let table = args.shared(|_| Ok(AtomicUsize::new(0)))?;
        Ok(Box::new(Keep { held: 0, table }))
    }

    static KEEP: ElementClass = ElementClass {
        name: "Keep",
        ports: "0/0",
        processing: "a/a",
        manual: &MANUAL,
        make,
    };

    /// The same element under another class.
    static OTHER: ElementClass = ElementClass {
        name: "Other",
        ..KEEP
    };

    fn build(text: &str, old: Option<&crate::Plan>) -> Result<crate::Plan, String> {
        let mut reg = crate::Registry::new();
        reg.register(KEEP);
        reg.register(OTHER);
        let mut map = SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            Source {
                name: "<t>".into(),
                text: text.into(),
            },
        )
        .map_err(|d| format!("{d:?}"))?;
        match old {
            Some(old) => crate::build_hotswap(&router, &reg, Default::default(), old),
            None => crate::build(&router, &reg),
        }
        .map_err(|d| format!("{d:?}"))
    }

    fn counter(e: &Engine, name: &str, c: &str) -> Option<u64> {
        e.collect_stats()
            .into_iter()
            .find(|s| s.name == name)
            .and_then(|s| s.stats.get(c))
    }

    #[test]
    fn state_goes_to_the_same_name_and_class_and_tables_to_the_same_arguments() {
        let old = build("k :: Keep(1); o :: Keep(2); gone :: Keep;", None).unwrap();
        let mut e = Engine::new(&old).unwrap();
        e.start();
        e.write_handler("k", "set", "5").unwrap();
        e.write_handler("o", "set", "7").unwrap();
        let (k_table, o_table) = (counter(&e, "k", "table"), counter(&e, "o", "table"));
        // A failing configuration is refused before anything changes.
        assert!(build("k :: Keep(1); x :: Nonesuch;", Some(&old)).is_err());
        assert_eq!(counter(&e, "k", "held"), Some(5));
        let new = build("k :: Keep(1); o :: Other(2); n :: Keep(3);", Some(&old)).unwrap();
        e.adopt(Engine::new(&new).unwrap());
        assert_eq!(counter(&e, "k", "held"), Some(5), "same name and class");
        assert_eq!(counter(&e, "o", "held"), Some(0), "another class");
        assert_eq!(counter(&e, "n", "held"), Some(0), "a new element");
        assert!(counter(&e, "gone", "held").is_none());
        // k's arguments did not change: its shared state is the old one.
        assert_eq!(counter(&e, "k", "table"), k_table);
        assert_ne!(counter(&e, "o", "table"), o_table);
        // Changed arguments: fresh shared state, the element's own state
        // taken all the same.
        let changed = build("k :: Keep(9);", Some(&new)).unwrap();
        e.adopt(Engine::new(&changed).unwrap());
        assert_eq!(counter(&e, "k", "held"), Some(5));
        assert_ne!(counter(&e, "k", "table"), k_table);
    }

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
