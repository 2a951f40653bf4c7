//! Click's token bucket (`include/click/tokenbucket.hh`: `TokenBucketX`
//! with jiffy ticks and 32-bit tokens), ported exactly, for the rated
//! elements (RatedUnqueue, BandwidthRatedUnqueue, RatedSplitter,
//! BandwidthRatedSplitter).
//!
//! The bucket fills once a jiffy (a millisecond of the router's clock) by
//! a whole number of token fractions: a token is `token_scale` fractions,
//! and `token_scale` is as large as 32 bits allow for the bucket's size.
//! Both round down, so the bucket fills a little slower than RATE (RATE 2
//! with a 50-token bucket earns 19 tokens in ten seconds, not 20), and a
//! token is never earned between two jiffies. That is what Click's
//! elements and their regression tests count on; an exact bucket sends
//! one packet more than Click over the same time.

use bricks_packet::Timestamp;
use std::time::Duration;

/// Ticks a second (Click's `CLICK_HZ` at user level).
const HZ: u64 = 1000;
/// Nanoseconds a tick.
const TICK_NS: u64 = 1_000_000_000 / HZ;
/// The most fractions a bucket holds (Click's `max_tokens`).
const MAX: u32 = u32::MAX;

/// A token bucket on the router's clock, as Click's `TokenBucket`.
#[derive(Debug, Clone)]
pub(crate) struct TokenBucket {
    /// Fractions earned a tick; 0 for an idle bucket.
    tokens_per_tick: u32,
    /// Fractions a token.
    token_scale: u32,
    /// Ticks from empty to full.
    time_until_full: u64,
    /// Fractions held.
    fraction: u32,
    /// The tick of the last refill; `None` before the first, which only
    /// notes the time.
    at: Option<u64>,
}

/// The largest rate, burst or bucket size a bucket takes (Click's tokens
/// are 32-bit unsigned).
pub(crate) const MAX_TOKENS: u64 = MAX as u64;

impl TokenBucket {
    /// A bucket of `capacity` tokens filled at `rate` tokens a second,
    /// full unless the rate is 0 (Click's `TokenBucket(rate, capacity)`;
    /// a size of 0 is 1, see [`TokenBucket::assign`]).
    pub(crate) fn new(rate: u64, capacity: u64) -> TokenBucket {
        let mut b = TokenBucket {
            tokens_per_tick: 0,
            token_scale: 1,
            time_until_full: u64::MAX,
            fraction: if rate != 0 { MAX } else { 0 },
            at: None,
        };
        b.assign(rate, capacity);
        b
    }

    /// A byte bucket sends a packet (of any size) only while it holds
    /// this many bytes, and holds this many more than its burst, as
    /// Click's bandwidth elements do (`tb_bandwidth_thresh`).
    pub(crate) const BANDWIDTH_THRESHOLD: u64 = 131_072;

    /// Bucket size for `rate` tokens a second over `window`, as Click's
    /// `RatedUnqueue::configure_helper`: the window in whole milliseconds,
    /// the product rounded down, at most [`MAX_TOKENS`].
    pub(crate) fn capacity_for(rate: u64, window: Duration) -> u64 {
        let c = rate as u128 * window.as_millis() / 1000;
        c.min(MAX_TOKENS as u128) as u64
    }

    /// A byte bucket's size: BURST_BYTES and the threshold (Click adds
    /// them, saturating).
    pub(crate) fn bandwidth_capacity(burst: u64) -> u64 {
        (burst + Self::BANDWIDTH_THRESHOLD).min(MAX_TOKENS)
    }

    /// Makes the rate unlimited or idle (Click's `assign(bool)`); the
    /// bucket keeps its fractions.
    pub(crate) fn assign_special(&mut self, unlimited: bool) {
        self.token_scale = 1;
        if unlimited {
            self.tokens_per_tick = MAX;
            self.time_until_full = 0;
        } else {
            self.tokens_per_tick = 0;
            self.time_until_full = u64::MAX;
        }
    }

    /// A new rate and size; the bucket keeps its fractions, as Click's
    /// reconfiguration does (a full bucket stays full). A size of 0 is 1,
    /// as Click's rated elements make it (`tokens ? tokens : 1`).
    pub(crate) fn assign(&mut self, rate: u64, capacity: u64) {
        let rate = rate.min(MAX_TOKENS);
        let mut capacity = capacity.clamp(1, MAX_TOKENS);
        // Each tick's fractions must fit in 32 bits.
        if rate != 0 {
            capacity = capacity.max((rate - 1) / HZ + 1);
        }
        let scale = MAX_TOKENS / capacity;
        let per_tick = rate * scale / HZ;
        self.token_scale = scale as u32;
        if rate == 0 {
            self.tokens_per_tick = 0;
            self.time_until_full = u64::MAX;
        } else {
            self.tokens_per_tick = per_tick.clamp(1, MAX_TOKENS) as u32;
            self.time_until_full = (MAX_TOKENS - 1) / self.tokens_per_tick as u64 + 1;
        }
    }

    /// A new rate and size keeping the whole tokens held (Click's
    /// `assign_adjust`, what RatedSource's `rate` handler does).
    pub(crate) fn assign_adjust(&mut self, rate: u64, capacity: u64) {
        let old_scale = self.token_scale;
        self.assign(rate, capacity);
        if old_scale != self.token_scale {
            let f = self.fraction as u64 * self.token_scale as u64 / old_scale as u64;
            self.fraction = f.min(MAX_TOKENS) as u32;
        }
    }

    /// Holds exactly `tokens` (all it can if fewer fit).
    pub(crate) fn set(&mut self, tokens: u64) {
        self.fraction = self.fractions(tokens).unwrap_or(MAX);
    }

    /// Tokens as fractions, `None` when they do not fit (more than the
    /// bucket can hold).
    #[inline]
    fn fractions(&self, tokens: u64) -> Option<u32> {
        let f = tokens.checked_mul(self.token_scale as u64)?;
        u32::try_from(f).ok()
    }

    /// Adds the fractions earned in the whole ticks since the last refill.
    #[inline]
    pub(crate) fn refill(&mut self, now: Timestamp) {
        let tick = now.0 / TICK_NS;
        let last = *self.at.get_or_insert(tick);
        let diff = tick.saturating_sub(last);
        if diff >= self.time_until_full {
            self.fraction = MAX;
        } else if diff > 0 {
            // diff < time_until_full, so diff x tokens_per_tick < MAX.
            let earned = (diff * self.tokens_per_tick as u64) as u32;
            self.fraction = self.fraction.checked_add(earned).unwrap_or(MAX);
        }
        self.at = Some(tick);
    }

    /// Whether the bucket holds `tokens` whole tokens.
    #[inline]
    pub(crate) fn contains(&self, tokens: u64) -> bool {
        self.fractions(tokens).is_some_and(|f| f <= self.fraction)
    }

    /// Whole tokens held.
    #[inline]
    pub(crate) fn tokens(&self) -> u64 {
        (self.fraction / self.token_scale) as u64
    }

    /// The most whole tokens the bucket holds.
    pub(crate) fn capacity(&self) -> u64 {
        (MAX / self.token_scale) as u64
    }

    pub(crate) fn full(&self) -> bool {
        self.fraction == MAX
    }

    pub(crate) fn empty(&self) -> bool {
        self.fraction == 0
    }

    pub(crate) fn set_full(&mut self) {
        self.fraction = MAX;
    }

    pub(crate) fn clear(&mut self) {
        self.fraction = 0;
    }

    /// Takes `tokens`, or empties the bucket if it holds fewer.
    #[inline]
    pub(crate) fn remove(&mut self, tokens: u64) {
        let f = self.fractions(tokens).unwrap_or(MAX);
        self.fraction = self.fraction.saturating_sub(f);
    }

    /// Takes `tokens` if the bucket holds them.
    #[inline]
    pub(crate) fn remove_if(&mut self, tokens: u64) -> bool {
        match self.fractions(tokens) {
            Some(f) if f <= self.fraction => {
                self.fraction -= f;
                true
            }
            _ => false,
        }
    }

    /// Whether a byte bucket may send a packet now
    /// ([`TokenBucket::BANDWIDTH_THRESHOLD`]).
    #[inline]
    pub(crate) fn bandwidth_ready(&self) -> bool {
        self.contains(Self::BANDWIDTH_THRESHOLD)
    }

    /// When the bucket will hold `tokens` whole tokens: now, or the start
    /// of the tick that brings them (Click's `time_until_contains`, in
    /// whole ticks); `None` if never. Tokens come only at a tick, so the
    /// time is the same for every `now` within one.
    pub(crate) fn time_until(&self, tokens: u64, now: Timestamp) -> Option<Timestamp> {
        let ticks = self.ticks_until(tokens)?;
        if ticks == 0 {
            return Some(now);
        }
        let tick = now.0 / TICK_NS;
        Some(Timestamp(
            tick.saturating_add(ticks).saturating_mul(TICK_NS),
        ))
    }

    /// Whole ticks until the bucket holds `tokens` (Click's
    /// `time_until_contains`); `None` if never.
    pub(crate) fn ticks_until(&self, tokens: u64) -> Option<u64> {
        let f = self.fractions(tokens)?;
        if f <= self.fraction || self.time_until_full == 0 {
            return Some(0);
        }
        if self.tokens_per_tick == 0 {
            return None;
        }
        Some((f - self.fraction - 1) as u64 / self.tokens_per_tick as u64 + 1)
    }

    /// The rate as Click reads it back (`TokenRateX::rate`): from the
    /// fractions a tick, with Click's rounding term of half a tick's
    /// fractions, so RATE 2000 with a 40-token bucket reads 2001 and
    /// RATE 100 with a one-token bucket reads 100.
    pub(crate) fn rate(&self) -> u64 {
        let tpt = self.tokens_per_tick as u64;
        let r = (tpt / 2 + tpt * HZ) / self.token_scale as u64;
        r.min(MAX_TOKENS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: u64) -> Timestamp {
        Timestamp(ms * TICK_NS)
    }

    /// Tokens taken one at a time from `at_ms(0)` to `at_ms(end)`,
    /// refilling every millisecond.
    fn drain(b: &mut TokenBucket, end: u64) -> u64 {
        let mut n = 0;
        for ms in 0..=end {
            b.refill(at_ms(ms));
            while b.remove_if(1) {
                n += 1;
            }
        }
        n
    }

    #[test]
    fn a_bucket_fills_a_little_slower_than_its_rate_as_clicks() {
        // RATE 2, 50 tokens: token_scale 85,899,345, 171,798 a tick;
        // ten seconds earn 19.9999 tokens, so 50 + 19.
        let mut b = TokenBucket::new(2, 50);
        assert_eq!(b.token_scale, 85_899_345);
        assert_eq!(b.tokens_per_tick, 171_798);
        assert_eq!(drain(&mut b, 10_000), 69);
        // RATE 100 with a one-token bucket: a token takes 11 ticks
        // (10 ticks are 5 fractions short), so 1 + 909 in ten seconds.
        let mut b = TokenBucket::new(100, 1);
        assert_eq!(drain(&mut b, 10_000), 910);
        assert_eq!(b.rate(), 100);
    }

    #[test]
    fn the_size_comes_from_whole_milliseconds_and_fits_a_ticks_tokens() {
        assert_eq!(TokenBucket::capacity_for(2, Duration::from_millis(20)), 0);
        assert_eq!(TokenBucket::capacity_for(2, Duration::from_secs(25)), 50);
        assert_eq!(
            TokenBucket::capacity_for(1000, Duration::from_micros(1999)),
            1
        );
        assert_eq!(
            TokenBucket::capacity_for(u32::MAX as u64, Duration::from_secs(9)),
            MAX_TOKENS
        );
        // A bucket smaller than a tick's tokens grows to hold them.
        let b = TokenBucket::new(1_000_000, 1);
        assert_eq!(b.tokens(), 1000);
        assert_eq!(TokenBucket::bandwidth_capacity(MAX_TOKENS), MAX_TOKENS);
        // A size of 0 (RATE 2 over the default 20 ms) is one token.
        let b = TokenBucket::new(2, 0);
        assert_eq!((b.capacity(), b.tokens()), (1, 1));
    }

    #[test]
    fn the_wait_for_a_token_is_whole_ticks_and_removal_never_goes_below_empty() {
        let mut b = TokenBucket::new(100, 1);
        b.refill(at_ms(5));
        assert!(b.remove_if(1));
        assert!(!b.contains(1));
        assert_eq!(b.time_until(1, at_ms(5)), Some(at_ms(16)));
        // The same tick from anywhere within it.
        assert_eq!(b.time_until(1, Timestamp(at_ms(6).0 - 1)), Some(at_ms(16)));
        b.refill(at_ms(15));
        assert!(!b.contains(1));
        b.refill(at_ms(16));
        assert!(b.contains(1));
        assert_eq!(b.time_until(1, at_ms(16)), Some(at_ms(16)));
        // More than the bucket can hold: never.
        assert_eq!(b.time_until(2, at_ms(16)), None);
        assert!(!b.contains(2));
        b.remove(1000);
        assert_eq!(b.tokens(), 0);
        // A clock that goes back earns nothing.
        b.refill(at_ms(3));
        assert_eq!(b.tokens(), 0);
    }

    #[test]
    fn an_adjusted_rate_keeps_the_tokens_and_set_sets_them() {
        let mut b = TokenBucket::new(1000, 20);
        b.refill(at_ms(0));
        assert!(b.remove_if(15));
        b.assign_adjust(10_000, 100);
        assert_eq!(b.tokens(), 5);
        b.set(1);
        assert_eq!(b.tokens(), 1);
        b.set(1000);
        assert!(b.full());
    }

    #[test]
    fn a_new_rate_keeps_how_full_the_bucket_is() {
        let mut b = TokenBucket::new(1000, 20);
        b.refill(at_ms(0));
        assert_eq!(b.tokens(), 20);
        b.assign(10_000, 200);
        assert_eq!(b.tokens(), 200);
        // Read back as Click reads it.
        assert_eq!(b.rate(), 10_005);
    }
}
