//! Counters read across workers: a `Script` on one worker that reads
//! `c.count` gets the count of every worker's copy of `c`, as Click's one
//! graph has one `c`.
//!
//! Each worker runs its own copy of the graph, and a copy's counters can
//! only be read by the thread that runs it. So a reader asks: it names
//! the element, bumps a request number, and waits until every other
//! worker has published that element's counters on its board (or has
//! ended, leaving its final counters there). Workers look at the request
//! number between rounds (one atomic load); a worker waiting for others
//! answers their requests meanwhile, so two workers reading at once do
//! not wait for each other. A worker that does not answer within
//! [`PATIENCE`] (one busy in a long hot swap) is counted as last
//! published.
//!
//! Writes go the same way: a `Script` that writes `c.reset` on one worker
//! posts the write, and every other worker makes it on its own copy before
//! it answers anything else, so a read after the write sees it
//! everywhere. Handlers that change state every copy shares (a route
//! table) are written once, on the writer's worker.

use crate::Stats;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a reader waits for the other workers.
pub const PATIENCE: Duration = Duration::from_millis(500);

/// The elements ever asked about, at most this many: past them every
/// answer holds every element.
const MAX_WANTED: usize = 64;

/// Writes kept for workers that have not made them yet, at most this
/// many: a worker stalled past [`PATIENCE`] misses the oldest.
const MAX_WRITES: usize = 1024;

/// A write posted for every worker: its number, element index, handler
/// and value.
pub type PeerWrite = (u64, usize, String, String);

/// What one worker last published.
#[derive(Debug, Default)]
struct Board {
    /// The request number it answered last.
    answered: u64,
    /// The number of the last posted write it made.
    applied: u64,
    /// Its run is over: `stats` holds every element's final counters.
    done: bool,
    /// Counters by element index.
    stats: HashMap<usize, Stats>,
}

/// The requests and boards of one run's workers.
#[derive(Debug)]
pub struct Peers {
    /// The latest request number.
    asked: AtomicU64,
    /// The elements ever asked about (`None`: more than [`MAX_WANTED`],
    /// so every one), under the lock readers take to ask.
    wanted: Mutex<Option<Vec<usize>>>,
    /// Writes not yet made by every worker, oldest first.
    writes: Mutex<std::collections::VecDeque<PeerWrite>>,
    /// The number of the last write posted.
    posted: AtomicU64,
    boards: Box<[Mutex<Board>]>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Peers {
    /// Boards for `workers` workers.
    pub fn new(workers: usize) -> Peers {
        Peers {
            asked: AtomicU64::new(0),
            wanted: Mutex::new(Some(Vec::new())),
            writes: Mutex::default(),
            posted: AtomicU64::new(0),
            boards: (0..workers).map(|_| Mutex::default()).collect(),
        }
    }

    /// Workers on the boards.
    pub fn workers(&self) -> usize {
        self.boards.len()
    }

    /// The latest request number: a worker that answered an older one
    /// publishes ([`Peers::publish`]).
    #[inline]
    pub fn asked(&self) -> u64 {
        self.asked.load(Ordering::Acquire)
    }

    /// The elements asked about (`None`: every one).
    pub fn wanted(&self) -> Option<Vec<usize>> {
        lock(&self.wanted).clone()
    }

    /// Worker `me` publishes `stats` (element index, counters) as its
    /// answer to request `answered`; `done` when its run is over (then
    /// `stats` holds every element).
    pub fn publish(
        &self,
        me: usize,
        answered: u64,
        stats: impl IntoIterator<Item = (usize, Stats)>,
        done: bool,
    ) {
        let Some(b) = self.boards.get(me) else {
            return;
        };
        let mut b = lock(b);
        if b.done {
            return;
        }
        if done {
            b.stats.clear();
        }
        b.stats.extend(stats);
        b.answered = b.answered.max(answered);
        b.done = done;
    }

    /// The writes posted after write number `after`, oldest first.
    pub fn writes_after(&self, after: u64) -> Vec<PeerWrite> {
        if self.posted.load(Ordering::Acquire) <= after {
            return Vec::new();
        }
        lock(&self.writes)
            .iter()
            .filter(|w| w.0 > after)
            .cloned()
            .collect()
    }

    /// Worker `me` made the writes up to number `upto`.
    pub fn applied(&self, me: usize, upto: u64) {
        if let Some(b) = self.boards.get(me) {
            let mut b = lock(b);
            b.applied = b.applied.max(upto);
        }
    }

    /// Worker `me`, having written `handler` of element `index` on its own
    /// copy, posts the write for the others, who make it between their
    /// rounds, before they answer anything else; returns its number.
    pub fn post(&self, me: usize, index: usize, handler: &str, value: &str) -> u64 {
        let seq = {
            let mut w = lock(&self.writes);
            let seq = self.posted.load(Ordering::Acquire) + 1;
            if w.len() >= MAX_WRITES {
                w.pop_front();
            }
            w.push_back((seq, index, handler.to_string(), value.to_string()));
            self.posted.store(seq, Ordering::Release);
            self.asked.fetch_add(1, Ordering::AcqRel);
            seq
        };
        self.applied(me, seq);
        seq
    }

    /// [`Peers::post`], then waits (as [`Peers::gather`] does, calling
    /// `serve`) until the others have made the write.
    pub fn write(
        &self,
        me: usize,
        index: usize,
        handler: &str,
        value: &str,
        mut serve: impl FnMut(),
    ) {
        let seq = self.post(me, index, handler, value);
        self.wait(me, |b| b.applied >= seq, &mut serve);
        // Writes every worker has made are no longer kept.
        let done = self
            .boards
            .iter()
            .map(|b| {
                let b = lock(b);
                if b.done {
                    u64::MAX
                } else {
                    b.applied
                }
            })
            .min()
            .unwrap_or(0);
        lock(&self.writes).retain(|w| w.0 > done);
    }

    /// Waits until every other worker's board satisfies `ready` or its
    /// run is over, at most [`PATIENCE`], calling `serve` meanwhile.
    fn wait(&self, me: usize, ready: impl Fn(&Board) -> bool, serve: &mut impl FnMut()) {
        let deadline = Instant::now() + PATIENCE;
        let mut spins = 0u32;
        loop {
            let waiting = self
                .boards
                .iter()
                .enumerate()
                .filter(|&(w, _)| w != me)
                .any(|(_, b)| {
                    let b = lock(b);
                    !b.done && !ready(&b)
                });
            if !waiting || Instant::now() >= deadline {
                return;
            }
            serve();
            spins += 1;
            if spins > 64 {
                std::thread::sleep(Duration::from_micros(20));
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Worker `me` asks every other worker for element `index`'s
    /// counters and waits for their answers, calling `serve` while it
    /// waits (to answer their requests in turn). Returns the sum over
    /// the other workers of each counter of the element.
    pub fn gather(&self, me: usize, index: usize, mut serve: impl FnMut()) -> Stats {
        let mine = {
            let mut w = lock(&self.wanted);
            if let Some(list) = w.as_mut() {
                if !list.contains(&index) {
                    if list.len() < MAX_WANTED {
                        list.push(index);
                    } else {
                        *w = None;
                    }
                }
            }
            self.asked.fetch_add(1, Ordering::AcqRel) + 1
        };
        self.wait(me, |b| b.answered >= mine, &mut serve);
        let mut sum = Stats::default();
        for (w, b) in self.boards.iter().enumerate() {
            if w == me {
                continue;
            }
            if let Some(s) = lock(b).stats.get(&index) {
                sum.merge(s);
            }
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn counted(n: u64) -> Stats {
        let mut s = Stats::default();
        s.counter("count", n);
        s
    }

    #[test]
    fn a_reader_sums_what_the_others_publish_when_asked() {
        let p = Arc::new(Peers::new(3));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Workers 1 and 2 answer between their "rounds".
        let answerers: Vec<_> = (1..3)
            .map(|w| {
                let (p, done) = (p.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut seen = 0;
                    while !done.load(Ordering::Relaxed) {
                        let a = p.asked();
                        if a != seen {
                            let wanted = p.wanted().unwrap_or_default();
                            p.publish(
                                w,
                                a,
                                wanted
                                    .into_iter()
                                    .map(|i| (i, counted(10 * w as u64 + i as u64))),
                                false,
                            );
                            seen = a;
                        }
                        std::thread::yield_now();
                    }
                })
            })
            .collect();
        let s = p.gather(0, 4, || {});
        assert_eq!(s.get("count"), Some(14 + 24));
        done.store(true, Ordering::Relaxed);
        for a in answerers {
            a.join().unwrap();
        }
    }

    #[test]
    fn an_ended_worker_is_read_from_its_final_board_and_a_silent_one_is_waited_for_a_while() {
        let p = Peers::new(3);
        p.publish(1, 0, [(0, counted(5)), (1, counted(7))], true);
        // Worker 2 never answers: the reader gives up after PATIENCE.
        let t0 = Instant::now();
        let s = p.gather(0, 1, || {});
        assert!(t0.elapsed() >= PATIENCE);
        assert_eq!(s.get("count"), Some(7));
        // A published final board is not changed by later answers.
        p.publish(1, 9, [(1, counted(100))], false);
        p.publish(2, 9, [(1, counted(1))], true);
        assert_eq!(p.gather(0, 1, || {}).get("count"), Some(8));
    }

    #[test]
    fn a_write_is_made_by_every_other_worker_before_the_writer_goes_on() {
        let p = Arc::new(Peers::new(3));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let made = Arc::new(Mutex::new(Vec::new()));
        let others: Vec<_> = (1..3)
            .map(|w| {
                let (p, stop, made) = (p.clone(), stop.clone(), made.clone());
                std::thread::spawn(move || {
                    let (mut seen, mut applied) = (0, 0);
                    while !stop.load(Ordering::Relaxed) {
                        let a = p.asked();
                        if a != seen {
                            for (seq, i, h, v) in p.writes_after(applied) {
                                lock(&made).push((w, i, h, v));
                                applied = seq;
                            }
                            p.applied(w, applied);
                            seen = a;
                        }
                        std::thread::yield_now();
                    }
                })
            })
            .collect();
        p.write(0, 3, "reset", "", || {});
        p.write(0, 5, "active", "false", || {});
        let got = lock(&made).clone();
        assert_eq!(got.len(), 4, "{got:?}");
        for w in 1..3 {
            let mine: Vec<_> = got.iter().filter(|g| g.0 == w).map(|g| g.1).collect();
            assert_eq!(mine, [3, 5]);
        }
        // Made by everyone: nothing is kept.
        assert!(p.writes_after(0).is_empty());
        stop.store(true, Ordering::Relaxed);
        for o in others {
            o.join().unwrap();
        }
    }

    #[test]
    fn two_readers_at_once_answer_each_other_while_they_wait() {
        let p = Arc::new(Peers::new(2));
        let finished = Arc::new(AtomicU64::new(0));
        let readers: Vec<_> = (0..2)
            .map(|me| {
                let (p, finished) = (p.clone(), finished.clone());
                std::thread::spawn(move || {
                    let serve = || {
                        let a = p.asked();
                        p.publish(me, a, [(0, counted(me as u64 + 1))], false);
                    };
                    let t0 = Instant::now();
                    let other = p.gather(me, 0, serve);
                    let took = t0.elapsed();
                    // A worker goes on with its rounds, answering.
                    finished.fetch_add(1, Ordering::AcqRel);
                    while finished.load(Ordering::Acquire) < 2 {
                        serve();
                        std::thread::yield_now();
                    }
                    (other.get("count"), took)
                })
            })
            .collect();
        let got: Vec<_> = readers.into_iter().map(|r| r.join().unwrap()).collect();
        assert_eq!(got[0].0, Some(2));
        assert_eq!(got[1].0, Some(1));
        assert!(got.iter().all(|(_, t)| *t < PATIENCE), "{got:?}");
    }
}
