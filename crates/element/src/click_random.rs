//! Click's shared random stream (`click_random()`, `click_srandom()`):
//! at user level Click draws from the C library's `random()`, which
//! `RandomSeed` seeds, so a seeded configuration makes the same choices
//! in every run and in bricks as in Click (a rewriter's random port).
//!
//! This is glibc's `random()` (its default TYPE_3 additive feedback
//! generator, x[i] = x[i-3] + x[i-31]) rewritten here because the choices
//! must match Click's bit for bit, which no general-purpose crate
//! promises. It is not for anything that must be unpredictable.
//! Unseeded, it starts as glibc's does (`srandom(1)`), so runs repeat.

use std::sync::Mutex;

const DEGREE: usize = 31;
const SEPARATION: usize = 3;

/// The largest value [`random`] returns (Click's `CLICK_RAND_MAX`).
pub const RAND_MAX: u32 = 0x7fff_ffff;

struct State {
    table: [u32; DEGREE],
    front: usize,
    rear: usize,
}

impl State {
    const fn unseeded() -> State {
        State {
            table: [0; DEGREE],
            front: 0,
            rear: 0,
        }
    }

    fn seed(&mut self, seed: u32) {
        let seed = if seed == 0 { 1 } else { seed };
        self.table[0] = seed;
        // glibc keeps the word in an int32_t: a seed above 2^31 starts
        // negative, and each step is truncated to 32 bits.
        let mut word = seed as i32;
        for i in 1..DEGREE {
            let hi = i64::from(word) / 127_773;
            let lo = i64::from(word) % 127_773;
            word = (16_807 * lo - 2_836 * hi) as i32;
            if word < 0 {
                word = word.wrapping_add(2_147_483_647);
            }
            self.table[i] = word as u32;
        }
        self.front = SEPARATION;
        self.rear = 0;
        for _ in 0..10 * DEGREE {
            self.next();
        }
    }

    fn next(&mut self) -> u32 {
        let v = self.table[self.front].wrapping_add(self.table[self.rear]);
        self.table[self.front] = v;
        self.front = (self.front + 1) % DEGREE;
        self.rear = (self.rear + 1) % DEGREE;
        v >> 1
    }
}

/// The stream with whether it was seeded yet.
static STREAM: Mutex<(bool, State)> = Mutex::new((false, State::unseeded()));

fn with<T>(f: impl FnOnce(&mut State) -> T) -> T {
    let mut g = STREAM.lock().unwrap_or_else(|e| e.into_inner());
    if !g.0 {
        g.1.seed(1);
        g.0 = true;
    }
    f(&mut g.1)
}

/// Seeds the stream (Click's `click_srandom`; 0 counts as 1, as in glibc).
pub fn srandom(seed: u32) {
    let mut g = STREAM.lock().unwrap_or_else(|e| e.into_inner());
    g.1.seed(seed);
    g.0 = true;
}

/// Seeds the stream and draws `n` numbers from it at once, so that no
/// other thread's draw comes between (Click's `click_srandom(seed)` then
/// `click_random()` `n` times, as its SourceIPHashMapper does).
pub fn seeded_draws(seed: u32, n: usize) -> Vec<u32> {
    let mut g = STREAM.lock().unwrap_or_else(|e| e.into_inner());
    g.1.seed(seed);
    g.0 = true;
    (0..n).map(|_| g.1.next()).collect()
}

/// The next number of the stream, 0 to [`RAND_MAX`] (Click's
/// `click_random()`).
pub fn random() -> u32 {
    with(State::next)
}

/// A number from `low` to `high` inclusive, drawn as Click's
/// `click_random(low, high)` draws it (`low` when `low >= high`).
pub fn random_between(low: u32, high: u32) -> u32 {
    if low >= high {
        return low;
    }
    with(|s| {
        let span = high - low;
        if span > RAND_MAX {
            loop {
                let r = (s.next() << 17) ^ (s.next() >> 14);
                if r <= span {
                    return r + low;
                }
            }
        } else if span == 1 {
            low + ((s.next() >> 14) & 1)
        } else {
            let count = (RAND_MAX + 1) / (span + 1);
            let max = count * (span + 1);
            loop {
                let r = s.next();
                if r < max {
                    return r / count + low;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// glibc's `srandom(1)` sequence (and its default one): the first
    /// values any C program prints with `random()`.
    #[test]
    fn seed_1_gives_glibcs_sequence() {
        let mut s = State::unseeded();
        s.seed(1);
        let first: Vec<u32> = (0..5).map(|_| s.next()).collect();
        assert_eq!(
            first,
            [
                1_804_289_383,
                846_930_886,
                1_681_692_777,
                1_714_636_915,
                1_957_747_793
            ]
        );
        // A seed of 0 is taken as 1, as glibc does.
        let mut z = State::unseeded();
        z.seed(0);
        assert_eq!(z.next(), 1_804_289_383);
    }

    /// glibc's `srandom(42)` and a seed above 2^31.
    #[test]
    fn other_seeds_match_glibc() {
        let mut s = State::unseeded();
        s.seed(42);
        assert_eq!(s.next(), 71_876_166);
        let mut big = State::unseeded();
        big.seed(3_000_000_000);
        assert_eq!(big.next(), 2_058_147_116);
    }

    /// Click's ranged draw from the seed-1 stream: 1804289383 / 33288 =
    /// 54202 in 0..=64510, the port Click's rewriter picks in
    /// 1024-65534 with RandomSeed(1).
    #[test]
    fn a_range_is_drawn_as_click_draws_it() {
        srandom(1);
        assert_eq!(random_between(0, 64_510), 54_202);
        assert_eq!(random_between(7, 7), 7);
        assert_eq!(random_between(9, 3), 9);
        srandom(1);
        assert_eq!(random(), 1_804_289_383);
    }
}
