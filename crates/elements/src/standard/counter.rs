//! `Counter`: counts packets and bytes and passes them on unchanged.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, PortInfo, Stats,
};

/// The `Counter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Counter",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "counts packets and bytes",
    synopsis: "Counter",
    description: "Passes packets through unchanged, counting them and their bytes, and \
        reports the average rate between the first and the last packet it saw, in \
        packets and bits per second (by the router's clock: the capture's own time in a \
        `--clock trace` run).",
    ports: "one input, one output; push or pull (agnostic)",
    keywords: &[],
    counters: &[
        ("count", "packets seen"),
        ("byte_count", "bytes seen"),
        (
            "rate_pps",
            "packets per second between the first and the last packet",
        ),
        (
            "rate_bps",
            "bits per second between the first and the last packet",
        ),
    ],
    example: "InfiniteSource(LIMIT 10) -> c :: Counter -> Discard;",
    see_also: &["AverageCounter"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _ = args;
    Ok(Box::new(Counter::default()))
}

/// Counts packets and bytes.
#[derive(Debug, Default)]
pub struct Counter {
    count: u64,
    bytes: u64,
    /// Router time of the first and the latest batch seen, in ns.
    first: Option<u64>,
    last: u64,
}

impl Counter {
    #[inline]
    fn account(&mut self, batch: &Batch, now: u64) {
        self.count += batch.len() as u64;
        self.bytes += batch.iter().map(|p| p.len() as u64).sum::<u64>();
        self.first.get_or_insert(now);
        self.last = now;
    }

    /// `units` per second between the first and the latest batch.
    fn rate(&self, units: u64) -> u64 {
        match self.first {
            Some(t0) if self.last > t0 => {
                (units as u128 * 1_000_000_000 / (self.last - t0) as u128) as u64
            }
            _ => 0,
        }
    }
}

impl Element for Counter {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.account(batch, cx.now().0);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, cx| self.account(b, cx.now().0));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("byte_count", self.bytes);
        s.counter("rate_pps", self.rate(self.count));
        s.counter("rate_bps", self.rate(self.bytes * 8));
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                *self = Counter::default();
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (Counter has `reset`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    #[test]
    fn counts_and_forwards() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.advance_to(bricks_packet::Timestamp(1_000_000_000));
        h.push_bytes(0, &[0u8; 60]);
        h.advance_to(bricks_packet::Timestamp(1_500_000_000));
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
    fn refuses_arguments() {
        let e = bricks_runtime::testing::make_element(&CLASS, "5", &Default::default());
        assert!(e.is_err());
    }
}
