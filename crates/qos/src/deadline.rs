//! Deadlines by Virtual Clock (Zhang, SIGCOMM 1990), the scheduler whose
//! deadlines the ordering structures sort (Hardekopf et al. §2.3: "most
//! scheduling algorithms compute a deadline for each packet").
//!
//! A flow reserved `rate` bits per second; its packet of `bytes` bytes
//! arriving at `now` gets the deadline
//!
//! ```text
//! deadline = max(now, the flow's last deadline) + bytes * 8 / rate
//! ```
//!
//! and the flow's last deadline becomes that deadline. A flow sending
//! within its rate gets deadlines that track the clock; one sending faster
//! sees its deadlines run ahead of the clock, so a deadline-sorted queue
//! sends it after the flows that kept to their reservation.
//!
//! Times are nanoseconds; rates bits per second. The arithmetic is exact
//! in 128 bits and saturates instead of wrapping.

use std::sync::atomic::{AtomicU64, Ordering};

/// Nanoseconds to send `bytes` bytes at `rate` bits per second, rounded
/// up (so a packet never gets an earlier deadline than its rate allows);
/// `u64::MAX` for a rate of 0.
#[inline]
pub fn tx_time_ns(bytes: u64, rate: u64) -> u64 {
    if rate == 0 {
        return u64::MAX;
    }
    let num = u128::from(bytes) * 8 * 1_000_000_000;
    let t = num.div_ceil(u128::from(rate));
    u64::try_from(t).unwrap_or(u64::MAX)
}

/// The Virtual Clock deadline of a packet of `bytes` bytes arriving at
/// `now` on a flow whose last deadline is `last` and whose rate is `rate`.
#[inline]
pub fn virtual_clock(now: u64, last: u64, bytes: u64, rate: u64) -> u64 {
    now.max(last).saturating_add(tx_time_ns(bytes, rate))
}

/// A flow's last deadline, shared by every worker and updated without a
/// lock: a compare-and-swap loop, so two packets of the flow stamped at
/// once on two cores get two distinct, consecutive deadlines (neither
/// update is lost).
#[derive(Debug, Default)]
pub struct LastDeadline(AtomicU64);

impl LastDeadline {
    /// A flow that has sent nothing yet.
    pub const fn new() -> LastDeadline {
        LastDeadline(AtomicU64::new(0))
    }

    /// The last deadline given.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Forgets the flow's history.
    pub fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// Stamps a packet of `bytes` bytes arriving at `now` at `rate`, and
    /// returns its deadline. Relaxed ordering is enough: the word is the
    /// only state, and its modification order alone orders the stamps.
    #[inline(always)]
    pub fn stamp(&self, now: u64, bytes: u64, rate: u64) -> u64 {
        let mut last = self.0.load(Ordering::Relaxed);
        loop {
            let d = virtual_clock(now, last, bytes, rate);
            match self
                .0
                .compare_exchange_weak(last, d, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return d,
                Err(seen) => last = seen,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time() {
        // 1,500 bytes at 12 Mbps: 1 ms.
        assert_eq!(tx_time_ns(1500, 12_000_000), 1_000_000);
        // 64 bytes at 1 Gbps: 512 ns.
        assert_eq!(tx_time_ns(64, 1_000_000_000), 512);
        // Rounded up: 1 byte at 3 bps is 2.666... s.
        assert_eq!(tx_time_ns(1, 3), 2_666_666_667);
        assert_eq!(tx_time_ns(1, 0), u64::MAX);
        assert_eq!(tx_time_ns(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn virtual_clock_tracks_the_clock_within_rate_and_runs_ahead_beyond() {
        let rate = 8_000_000; // 1 byte per us
                              // Within rate: one 1,000-byte packet every 2 ms.
        let mut last = 0;
        for k in 0..5u64 {
            let now = k * 2_000_000;
            last = virtual_clock(now, last, 1000, rate);
            assert_eq!(last, now + 1_000_000);
        }
        // Beyond: five at once run ahead one transmission time each.
        let lf = LastDeadline::new();
        let ds: Vec<u64> = (0..5).map(|_| lf.stamp(10_000, 1000, rate)).collect();
        assert_eq!(
            ds,
            vec![1_010_000, 2_010_000, 3_010_000, 4_010_000, 5_010_000]
        );
        assert_eq!(lf.get(), 5_010_000);
        lf.reset();
        assert_eq!(lf.get(), 0);
        assert_eq!(virtual_clock(u64::MAX - 1, 0, 100, 1), u64::MAX);
    }

    #[test]
    fn concurrent_stamps_lose_nothing() {
        let lf = std::sync::Arc::new(LastDeadline::new());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lf = lf.clone();
                std::thread::spawn(move || {
                    (0..10_000)
                        .map(|_| lf.stamp(0, 1, 8_000_000_000))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all: Vec<u64> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        all.sort_unstable();
        // 1 byte at 8 Gbps is 1 ns: every deadline from 1 to 40,000 once.
        assert_eq!(all, (1..=40_000).collect::<Vec<u64>>());
    }
}
