//! `Counter`: counts packets and bytes and passes them on unchanged, with
//! Click's rate estimates and count-triggered handler calls
//! (`elements/standard/counter.cc`).

use super::handler_call::HandlerCall;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The `Counter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Counter",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "measures packet count and rate",
    synopsis: "Counter([KEYWORDS COUNT_CALL, BYTE_COUNT_CALL])",
    description: "Passes packets through unchanged, counting them and their bytes. The \
        `rate`, `byte_rate` and `bit_rate` handlers are Click's: an exponentially weighted \
        moving average over 1 ms epochs (weight 1/16), per second, printed as Click prints \
        fixed-point numbers (`rate` has 10 fraction bits, `byte_rate` 4). Time is the \
        router's clock: the capture's own time in a `--clock trace` run. The counters \
        `rate_pps` and `rate_bps` give the average rate between the first and the last \
        packet seen. A call (COUNT_CALL, BYTE_COUNT_CALL) happens once, before the packet \
        that reaches the count is passed on; packets of the same batch before it have \
        gone on already. A call to an element that is busy (one upstream of this \
        Counter, in the middle of pushing) is made as soon as the push is over.",
    ports: "one input, one output; push or pull (agnostic)",
    keywords: &[
        Keyword {
            name: "COUNT_CALL",
            ty: "`N HANDLER [VALUE]`",
            default: Some("none"),
            doc: "when the packet count reaches N, write VALUE to HANDLER (`ELEMENT.NAME`, \
                  or `stop` to stop the router)",
        },
        Keyword {
            name: "BYTE_COUNT_CALL",
            ty: "`N HANDLER [VALUE]`",
            default: Some("none"),
            doc: "when the byte count reaches or exceeds N, write VALUE to HANDLER",
        },
    ],
    counters: &[
        ("count", "packets seen since the last reset"),
        ("byte_count", "bytes seen since the last reset"),
        (
            "rate_pps",
            "packets per second between the first and the last packet",
        ),
        (
            "rate_bps",
            "bits per second between the first and the last packet",
        ),
    ],
    example: "InfiniteSource(LIMIT 100) -> Counter(COUNT_CALL 5 s.switch 1) -> s :: Switch \
              -> Discard;  s[1] -> Discard;",
    see_also: &["AverageCounter", "Script"],
};

/// Click's `RateEWMAX<RateEWMAXParameters<4, SCALE, uint64_t, int64_t>>`:
/// samples are summed over an epoch of one jiffy (1 ms, Click's
/// user-level `CLICK_HZ`); when an epoch closes its sum updates the
/// average, `avg += (x << SCALE) + 8 - avg >> 4`, and epochs without
/// samples update it with 0.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RateEwma<const SCALE: u32> {
    avg: i64,
    current: i64,
    epoch: u64,
}

/// The router time (ns) a rate is read at, for an element whose latest
/// packet came at `last`: on a trace or simulated clock (`trace`) the
/// router's clock at the read (`clock`, where known, else `last`), the
/// wall clock otherwise; never before `last`. Click's rate reads update
/// the average to the moment of the read.
pub(crate) fn read_time(last: u64, trace: bool, clock: Option<u64>) -> u64 {
    if trace {
        clock.unwrap_or(last).max(last)
    } else {
        bricks_packet::Timestamp::now().0.max(last)
    }
}

/// Epochs per second (Click's `CLICK_HZ` at user level).
pub(crate) const HZ: u64 = 1000;
/// One epoch in nanoseconds.
pub(crate) const EPOCH_NS: u64 = 1_000_000_000 / HZ;
const STABILITY: u32 = 4;

impl<const SCALE: u32> RateEwma<SCALE> {
    fn step(&mut self, x: i64) {
        let x = (x << SCALE) + (1 << (STABILITY - 1));
        self.avg += (x - self.avg) >> STABILITY;
    }

    /// Moves to epoch `now`, applying the epochs that closed. Bounded:
    /// after 100 empty epochs Click sets the average to 0 outright.
    fn update_time(&mut self, now: u64) {
        if now == self.epoch {
            return;
        }
        let cur = self.current;
        self.step(cur);
        let gap = now.saturating_sub(self.epoch).saturating_sub(1);
        if gap >= 100 {
            self.avg = 0;
        } else {
            for _ in 0..gap {
                self.step(0);
            }
        }
        self.current = 0;
        self.epoch = now;
    }

    pub(crate) fn update(&mut self, delta: u64, now: u64) {
        self.update_time(now);
        self.current = self
            .current
            .saturating_add(delta.min(i64::MAX as u64) as i64);
    }

    /// Samples per epoch, scaled by `2^SCALE`, as of the last update
    /// (Click's `scaled_average()`).
    pub(crate) fn scaled_average(&self) -> i64 {
        self.avg
    }

    /// Samples per second, scaled by `2^SCALE` (Click's
    /// `scaled_average() * epoch_frequency()`).
    pub(crate) fn scaled_rate(&self, now: u64) -> i64 {
        let mut e = *self;
        e.update_time(now);
        e.avg.saturating_mul(HZ as i64)
    }
}

/// Click's `cp_unparse_real2` for a 32-bit fraction: Knuth's
/// `print_scaled`, the shortest decimal that reads back to the same value.
fn unparse_frac(real: u32, frac_bits: u32) -> String {
    let one: u32 = 1 << frac_bits;
    let mut real = real & (one - 1);
    if real == 0 {
        return String::new();
    }
    let mut s = String::from(".");
    real = 10 * real + 5;
    let mut allowable: u64 = 10;
    let mut rounder: u32 = 5;
    while rounder < (one >> 1) {
        rounder *= 10;
    }
    // At most 10 digits: `allowable` grows tenfold each time.
    for _ in 0..12 {
        if allowable > u64::from(one) {
            real = real.wrapping_add((one >> 1).wrapping_sub(rounder));
        }
        s.push(char::from(b'0' + (real >> frac_bits) as u8));
        real = 10 * (real & (one - 1));
        allowable *= 10;
        if u64::from(real) <= allowable {
            break;
        }
    }
    s
}

/// The text of rate handler `handler` for the fixed-point rate `scaled`
/// (`rate`'s has 10 fraction bits; `byte_rate`'s 4, and `bit_rate` is it
/// read with 1, as Click shifts the scale down by 3 rather than multiply
/// by 8).
fn rate_text(handler: &str, scaled: i64) -> Option<String> {
    let bits = match handler {
        "rate" => 10,
        "byte_rate" => 4,
        "bit_rate" => 1,
        _ => return None,
    };
    Some(unparse_real2(scaled, bits))
}

/// Click's `cp_unparse_real2(int64_t, frac_bits)`.
pub(crate) fn unparse_real2(v: i64, frac_bits: u32) -> String {
    let neg = v < 0;
    let u = v.unsigned_abs();
    let frac = unparse_frac((u & ((1u64 << frac_bits) - 1)) as u32, frac_bits);
    format!("{}{}{frac}", if neg { "-" } else { "" }, u >> frac_bits)
}

/// A COUNT_CALL or BYTE_COUNT_CALL: the count and the call.
#[derive(Debug, Clone)]
struct Call {
    at: u64,
    /// `None` when `count_call` was written with a count alone.
    call: Option<HandlerCall>,
    triggered: bool,
}

impl Call {
    /// Parses `N HANDLER [VALUE]`; the handler may be omitted when
    /// `optional` (Click's `count_call` write handler).
    fn parse(text: &str, what: &str, optional: bool) -> Result<Call, String> {
        let text = text.trim();
        let (n, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let at: u64 = n
            .parse()
            .map_err(|_| format!("'{what}' first word should be unsigned (count)"))?;
        let call = if rest.trim().is_empty() && optional {
            None
        } else {
            Some(HandlerCall::parse(rest)?)
        };
        Ok(Call {
            at,
            call,
            triggered: false,
        })
    }

    fn fire(&self, cx: &mut Context<'_>, pending: &mut Vec<HandlerCall>) {
        if let Some(c) = &self.call {
            c.call(cx, pending);
        }
    }
}

/// What the copies of one Counter with a COUNT_CALL or BYTE_COUNT_CALL
/// on every worker counted together. With several workers the calls go
/// by these sums, so each fires once, when the sum reaches its count, as
/// Click's one Counter's does; the copies' own counts stay per worker.
#[derive(Debug, Default)]
struct Totals {
    count: AtomicU64,
    bytes: AtomicU64,
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let count_call: Option<String> = args.read("COUNT_CALL")?;
    let byte_call: Option<String> = args.read("BYTE_COUNT_CALL")?;
    let parse = |t: Option<String>, what: &str| -> Result<Option<Call>, ArgError> {
        t.map(|t| Call::parse(&t, what, false).map_err(|e| ArgError::new(format!("{what}: {e}"))))
            .transpose()
    };
    let totals = if count_call.is_some() || byte_call.is_some() {
        Some(args.shared(|_| Ok(Totals::default()))?)
    } else {
        None
    };
    Ok(Box::new(Counter {
        count_call: parse(count_call, "COUNT_CALL")?,
        byte_call: parse(byte_call, "BYTE_COUNT_CALL")?,
        totals,
        ..Counter::default()
    }))
}

/// The counts a batch follows, as the calls see them
/// ([`Counter::counts_before`]).
#[derive(Debug, Clone, Copy, Default)]
struct Before {
    count: u64,
    bytes: u64,
    /// Every worker's sums ([`Totals`]), not this copy's counts.
    shared: bool,
}

/// Counts packets and bytes.
#[derive(Debug)]
pub struct Counter {
    count: u64,
    bytes: u64,
    /// Router time of the first and the latest batch seen, in ns.
    first: Option<u64>,
    last: u64,
    /// Whether the clock follows the packets (then reads use the latest
    /// time seen rather than the wall clock).
    trace: bool,
    rate: RateEwma<10>,
    byte_rate: RateEwma<4>,
    count_call: Option<Call>,
    byte_call: Option<Call>,
    /// Every worker's counts, for the calls configured (not for those
    /// written later through `count_call`, which go by this copy's).
    totals: Option<Arc<Totals>>,
    /// Calls to busy elements, made by the next timer.
    pending: Vec<HandlerCall>,
    /// Where the current rate epoch starts, in ns (`u64::MAX` before the
    /// first batch).
    epoch_start: u64,
}

impl Default for Counter {
    fn default() -> Counter {
        Counter {
            count: 0,
            bytes: 0,
            first: None,
            last: 0,
            trace: false,
            rate: RateEwma::default(),
            byte_rate: RateEwma::default(),
            count_call: None,
            byte_call: None,
            totals: None,
            pending: Vec::new(),
            epoch_start: u64::MAX,
        }
    }
}

impl Counter {
    #[inline(always)]
    fn account(&mut self, batch: &Batch, now: u64, trace: bool) {
        let n = batch.len() as u64;
        let bytes = batch.iter().map(|p| p.len() as u64).sum::<u64>();
        self.count += n;
        self.bytes += bytes;
        self.first.get_or_insert(now);
        self.last = now;
        self.trace = trace;
        // Most batches fall in the epoch of the one before: add to its
        // sums without a division.
        if now.wrapping_sub(self.epoch_start) < EPOCH_NS {
            self.rate.current += n as i64;
            self.byte_rate.current += bytes as i64;
        } else {
            self.new_epoch(n, bytes, now);
        }
    }

    /// The first batch of a new rate epoch.
    #[cold]
    #[inline(never)]
    fn new_epoch(&mut self, n: u64, bytes: u64, now: u64) {
        let epoch = now / EPOCH_NS;
        self.epoch_start = epoch * EPOCH_NS;
        self.rate.update(n, epoch);
        self.byte_rate.update(bytes, epoch);
    }

    /// The counts that a batch of `n` packets and `bytes` bytes follows,
    /// as the calls see them: this copy's, or with several workers the
    /// sums of every copy ([`Totals`]), this batch taken into them.
    #[inline]
    fn counts_before(&self, n: u64, bytes: u64, workers: usize) -> Before {
        match &self.totals {
            Some(t) if workers > 1 => Before {
                count: t.count.fetch_add(n, Ordering::Relaxed),
                bytes: t.bytes.fetch_add(bytes, Ordering::Relaxed),
                shared: true,
            },
            _ => Before {
                count: self.count,
                bytes: self.bytes,
                shared: false,
            },
        }
    }

    /// Whether the COUNT_CALL falls on the packet after `counted` of all.
    #[inline]
    fn count_hit(&self, counted: u64) -> bool {
        self.count_call
            .as_ref()
            .is_some_and(|c| !c.triggered && counted + 1 == c.at)
    }

    /// Whether the BYTE_COUNT_CALL falls on a packet of `len` bytes after
    /// `counted` bytes of all. With several workers only the copy whose
    /// packet crosses the count makes the call.
    #[inline]
    fn byte_hit(&self, counted: u64, len: u64, shared: bool) -> bool {
        self.byte_call
            .as_ref()
            .is_some_and(|c| !c.triggered && counted + len >= c.at && (!shared || counted < c.at))
    }

    /// Whether a call falls due in a batch of `n` packets and `bytes`
    /// bytes that follows the counts `before`: one comparison each.
    #[inline]
    fn call_due(&self, before: Before, n: u64, bytes: u64) -> bool {
        let c = self
            .count_call
            .as_ref()
            .is_some_and(|c| !c.triggered && before.count < c.at && before.count + n >= c.at);
        c || self.byte_hit(before.bytes, bytes, before.shared)
    }

    /// Passes `batch` on in pieces, making each call before the packet
    /// that reaches its count (the slow path, taken once per call).
    #[cold]
    #[inline(never)]
    fn push_with_calls(&mut self, batch: &mut Batch, before: Before, cx: &mut Context<'_>) {
        let now = cx.now().0;
        let trace = cx.trace_clock();
        let mut run = Batch::new();
        let (mut count, mut bytes) = (before.count, before.bytes);
        for p in batch.drain() {
            let len = p.len() as u64;
            let count_hit = self.count_hit(count);
            let byte_hit = self.byte_hit(bytes, len, before.shared);
            count += 1;
            bytes += len;
            if count_hit || byte_hit {
                // Everything before this packet goes on first.
                if !run.is_empty() {
                    self.account(&run, now, trace);
                    cx.push(0, &mut run);
                }
                // Click counts the packet, then calls, then emits it.
                let _ = run.push(p);
                self.account(&run, now, trace);
                let mut pending = std::mem::take(&mut self.pending);
                if count_hit {
                    if let Some(c) = self.count_call.as_mut() {
                        c.triggered = true;
                        c.fire(cx, &mut pending);
                    }
                }
                if byte_hit {
                    if let Some(c) = self.byte_call.as_mut() {
                        c.triggered = true;
                        c.fire(cx, &mut pending);
                    }
                }
                self.pending = pending;
                cx.push(0, &mut run);
            } else {
                let _ = run.push(p);
            }
        }
        if !run.is_empty() {
            self.account(&run, now, trace);
            cx.push(0, &mut run);
        }
    }

    /// `units` per second between the first and the latest batch.
    fn average(&self, units: u64) -> u64 {
        match self.first {
            Some(t0) if self.last > t0 => {
                (units as u128 * 1_000_000_000 / (self.last - t0) as u128) as u64
            }
            _ => 0,
        }
    }

    /// The epoch a read happens in: the router's clock at the read
    /// (`clock`, where known) on a trace or simulated clock, the wall
    /// clock's otherwise; never before the latest batch.
    fn read_epoch_at(&self, clock: Option<u64>) -> u64 {
        let now = match self.first {
            None => self.last,
            Some(_) => read_time(self.last, self.trace, clock),
        };
        now / EPOCH_NS
    }

    /// The epoch a read happens in, when the router's clock is not known.
    fn read_epoch(&self) -> u64 {
        self.read_epoch_at(None)
    }

    /// Read handler `handler` as it reads in epoch `epoch`.
    fn read_at(&self, handler: &str, epoch: u64) -> Option<String> {
        match handler {
            "rate" => rate_text(handler, self.rate.scaled_rate(epoch)),
            "byte_rate" | "bit_rate" => rate_text(handler, self.byte_rate.scaled_rate(epoch)),
            "count_call" => Some(
                self.count_call
                    .as_ref()
                    .map(|c| c.at.to_string())
                    .unwrap_or_default(),
            ),
            _ => None,
        }
    }

    fn reset(&mut self) {
        self.count = 0;
        self.bytes = 0;
        self.first = None;
        self.last = 0;
        self.rate = RateEwma::default();
        self.byte_rate = RateEwma::default();
        self.epoch_start = u64::MAX;
        for c in [&mut self.count_call, &mut self.byte_call]
            .into_iter()
            .flatten()
        {
            c.triggered = false;
        }
        if let Some(t) = &self.totals {
            t.count.store(0, Ordering::Relaxed);
            t.bytes.store(0, Ordering::Relaxed);
        }
    }
}

impl Element for Counter {
    /// Hot swap: counts, rates and the times they were measured over
    /// continue; the new COUNT_CALL and BYTE_COUNT_CALL fire when the
    /// continued counts reach them.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<Counter>(old) else {
            return;
        };
        self.count = old.count;
        self.bytes = old.bytes;
        self.first = old.first;
        self.last = old.last;
        self.rate = old.rate;
        self.byte_rate = old.byte_rate;
        self.epoch_start = old.epoch_start;
        self.pending.append(&mut old.pending);
        // Each worker's new copy adds its old copy's counts.
        if let Some(t) = &self.totals {
            t.count.fetch_add(old.count, Ordering::Relaxed);
            t.bytes.fetch_add(old.bytes, Ordering::Relaxed);
        }
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if self.count_call.is_some() || self.byte_call.is_some() {
            let (n, bytes) = (
                batch.len() as u64,
                batch.iter().map(|p| p.len() as u64).sum(),
            );
            let before = self.counts_before(n, bytes, cx.workers());
            if self.call_due(before, n, bytes) {
                self.push_with_calls(batch, before, cx);
                return;
            }
        }
        self.account(batch, cx.now().0, cx.trace_clock());
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        // A pull hands the whole batch over at once; calls are made before
        // it leaves. A pull stops at COUNT_CALL's packet, so that, as in
        // Click's packet-at-a-time pulls, the call acts before the next
        // packet is pulled (a call that switches the input pulled from).
        let workers = cx.workers();
        let counted = match &self.totals {
            Some(t) if workers > 1 => t.count.load(Ordering::Relaxed),
            _ => self.count,
        };
        let max = match &self.count_call {
            Some(c) if !c.triggered && counted < c.at => max.min((c.at - counted) as usize),
            _ => max,
        };
        let mut calls: Vec<Call> = Vec::new();
        cx.pull_with(out, max, |b, cx| {
            let n = b.len() as u64;
            let bytes = b.iter().map(|p| p.len() as u64).sum();
            let armed = self.count_call.is_some() || self.byte_call.is_some();
            let before = if armed {
                self.counts_before(n, bytes, workers)
            } else {
                Before::default()
            };
            if armed && self.call_due(before, n, bytes) {
                let byte_hit = self.byte_hit(before.bytes, bytes, before.shared);
                if let Some(c) = self.count_call.as_mut() {
                    if !c.triggered && before.count < c.at && before.count + n >= c.at {
                        c.triggered = true;
                        calls.push(c.clone());
                    }
                }
                if let Some(c) = self.byte_call.as_mut() {
                    if byte_hit {
                        c.triggered = true;
                        calls.push(c.clone());
                    }
                }
            }
            self.account(b, cx.now().0, cx.trace_clock());
        });
        let mut pending = std::mem::take(&mut self.pending);
        for c in &calls {
            c.fire(cx, &mut pending);
        }
        self.pending = pending;
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        HandlerCall::run_pending(cx, &mut self.pending);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("byte_count", self.bytes);
        s.counter("rate_pps", self.average(self.count));
        s.counter("rate_bps", self.average(self.bytes * 8));
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        self.read_at(handler, self.read_epoch())
    }

    fn read_handler_at(&self, handler: &str, now: bricks_packet::Timestamp) -> Option<String> {
        self.read_at(handler, self.read_epoch_at(Some(now.0)))
    }

    /// The rates add up over workers: each is a fixed-point number.
    fn summed_reads(&self, s: &mut Stats) {
        let epoch = self.read_epoch();
        let bytes = self.byte_rate.scaled_rate(epoch).max(0) as u64;
        s.counter("rate", self.rate.scaled_rate(epoch).max(0) as u64);
        s.counter("byte_rate", bytes);
        s.counter("bit_rate", bytes);
    }

    fn read_summed(&self, handler: &str, total: u64) -> Option<String> {
        rate_text(handler, total.min(i64::MAX as u64) as i64)
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::r("count"),
            Handler::r("byte_count"),
            Handler::r("rate"),
            Handler::r("bit_rate"),
            Handler::r("byte_rate"),
            Handler::w("reset"),
            Handler::w("reset_counts"),
            Handler::rw("count_call"),
            Handler::w("byte_count_call"),
        ];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "reset" | "reset_counts" => self.reset(),
            "count_call" => self.count_call = Some(Call::parse(value, handler, true)?),
            "byte_count_call" => self.byte_call = Some(Call::parse(value, handler, true)?),
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (Counter has reset, reset_counts, \
                     count_call, byte_count_call)"
                ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    #[test]
    fn counts_and_forwards() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.advance_to(Timestamp(1_000_000_000));
        h.push_bytes(0, &[0u8; 60]);
        h.advance_to(Timestamp(1_500_000_000));
        h.push_bytes(0, &[0u8; 100]);
        assert_eq!(h.take(0).len(), 2);
        assert_eq!(h.stats().get("count"), Some(2));
        assert_eq!(h.stats().get("byte_count"), Some(160));
        // Two packets half a second apart: 4 packets/s, 2560 bits/s.
        assert_eq!(h.stats().get("rate_pps"), Some(4));
        assert_eq!(h.stats().get("rate_bps"), Some(2560));
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.stats().get("count"), Some(0));
    }

    #[test]
    fn unparse_real2_is_clicks() {
        // Values from Click's cp_unparse_real2.
        assert_eq!(unparse_real2(0, 10), "0");
        assert_eq!(unparse_real2(1024, 10), "1");
        assert_eq!(unparse_real2(512, 10), "0.5");
        assert_eq!(unparse_real2(1536, 10), "1.5");
        assert_eq!(unparse_real2(1, 10), "0.001");
        assert_eq!(unparse_real2(256, 10), "0.25");
        assert_eq!(unparse_real2(8, 4), "0.5");
        assert_eq!(unparse_real2(1, 1), "0.5");
        assert_eq!(unparse_real2(-1536, 10), "-1.5");
        assert_eq!(unparse_real2(341, 10), "0.333");
    }

    #[test]
    fn ewma_rate_follows_clicks_arithmetic() {
        // One packet of 100 bytes per millisecond for 200 ms: the average
        // converges on 1000 packets/s.
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for i in 0..200u64 {
            h.advance_to(Timestamp(1_000_000_000 + i * 1_000_000));
            h.push_bytes(0, &[0u8; 100]);
        }
        h.take(0);
        // Computed by hand with Click's formulas: the epoch of the last
        // packet is still open, so 199 full epochs of 1 are averaged.
        let mut e = RateEwma::<10> {
            epoch: 1_000_000,
            ..Default::default()
        };
        for i in 0..200u64 {
            e.update(1, 1_000_000 + i);
        }
        let want = unparse_real2(e.scaled_rate(1_000_000 + 199), 10);
        let mut c = Counter::default();
        for i in 0..200u64 {
            let mut b = Batch::new();
            let _ = b.push(bricks_packet::Packet::from_slice(&[0u8; 100]).unwrap());
            c.account(&b, 1_000_000_000 + i * 1_000_000, true);
        }
        assert_eq!(c.read_handler("rate").unwrap(), want);
        // Long after, by the wall clock, the rate has decayed to nothing.
        assert_eq!(h.read_handler("rate").unwrap(), "0");
        let h = c;
        let r: f64 = want.parse().unwrap();
        assert!((990.0..=1000.5).contains(&r), "{want}");
        let b: f64 = h.read_handler("byte_rate").unwrap().parse().unwrap();
        assert!((99_000.0..=100_050.0).contains(&b), "{b}");
        let bits: f64 = h.read_handler("bit_rate").unwrap().parse().unwrap();
        assert!((b * 8.0 - bits).abs() < 8.0, "{bits} vs {b}");
    }

    #[test]
    fn rates_add_up_over_workers_in_fixed_point() {
        // Two copies that each counted 1000 packets/s of 100 bytes: the
        // numbers a copy tells the others are its own rates, and the text
        // of their sum is twice each.
        let mut c = Counter::default();
        for i in 0..200u64 {
            let mut b = Batch::new();
            let _ = b.push(bricks_packet::Packet::from_slice(&[0u8; 100]).unwrap());
            c.account(&b, 1_000_000_000 + i * 1_000_000, true);
        }
        let mut s = Stats::default();
        c.summed_reads(&mut s);
        for h in ["rate", "byte_rate", "bit_rate"] {
            let one: f64 = c.read_handler(h).unwrap().parse().unwrap();
            assert_eq!(c.read_summed(h, s.get(h).unwrap()), c.read_handler(h));
            let two: f64 = c
                .read_summed(h, 2 * s.get(h).unwrap())
                .unwrap()
                .parse()
                .unwrap();
            assert!((two - 2.0 * one).abs() <= 0.01 * one, "{h}: {two} vs {one}");
        }
        assert_eq!(c.read_summed("count", 5), None);
    }

    #[test]
    fn count_call_splits_the_batch() {
        let mut h = Harness::push(&CLASS, "COUNT_CALL 3 stop", 1, 1);
        let pkts: Vec<_> = (0..5u8)
            .map(|i| bricks_packet::Packet::from_slice(&[i]).unwrap())
            .collect();
        h.push_packets(0, pkts);
        assert!(h.stop_requested());
        assert_eq!(
            h.take_bytes(0),
            (0..5u8).map(|i| vec![i]).collect::<Vec<_>>()
        );
        assert_eq!(h.stats().get("count"), Some(5));
        assert_eq!(h.read_handler("count_call").unwrap(), "3");
    }

    #[test]
    fn byte_count_call_and_pull() {
        // 3 packets of 40 bytes: the byte count passes 100 at the third.
        let mut h = Harness::push(&CLASS, "BYTE_COUNT_CALL 100 stop", 1, 1);
        h.push_bytes(0, &[0u8; 40]);
        h.push_bytes(0, &[0u8; 40]);
        assert!(!h.stop_requested());
        h.push_bytes(0, &[0u8; 40]);
        assert!(h.stop_requested());
        // Pulled: a pull stops at the packet that reaches the count, and
        // the call is made before the next pull.
        let ports = PortInfo {
            inputs: vec![bricks_element::Processing::Pull],
            outputs: vec![bricks_element::Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "COUNT_CALL 2 stop", ports);
        h.feed(
            0,
            (0..3u8).map(|i| bricks_packet::Packet::from_slice(&[i]).unwrap()),
        );
        assert_eq!(h.pull(0, 1).len(), 1);
        assert!(!h.stop_requested());
        assert_eq!(h.pull(0, 2).len(), 1);
        assert!(h.stop_requested());
        assert_eq!(h.pull(0, 2).len(), 1);
        // A new count_call arms it again.
        h.write_handler("count_call", "10").unwrap();
        assert_eq!(h.read_handler("count_call").unwrap(), "10");
        assert!(h.write_handler("count_call", "x").is_err());
    }

    #[test]
    fn count_call_argument_checked() {
        let p = PortInfo::default();
        for bad in [
            "COUNT_CALL x s.active",
            "COUNT_CALL 5",
            "BYTE_COUNT_CALL 5 a.b.c.",
        ] {
            assert!(
                bricks_runtime::testing::make_element(&CLASS, bad, &p).is_err(),
                "{bad}"
            );
        }
        let c = Call::parse("5 s.active false", "COUNT_CALL", false).unwrap();
        assert_eq!(c.at, 5);
        assert_eq!(
            c.call.map(|c| c.unparse()).as_deref(),
            Some("s.active false")
        );
        let c = Call::parse("7", "count_call", true).unwrap();
        assert!(c.call.is_none());
    }

    #[test]
    fn refuses_positional_arguments() {
        let e = bricks_runtime::testing::make_element(&CLASS, "5", &Default::default());
        assert!(e.is_err());
    }
}
