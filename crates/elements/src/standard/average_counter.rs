//! `AverageCounter`: counts packets and bytes and reports their average
//! rate between the first and the latest packet (Click's
//! `elements/standard/averagecounter.cc`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
};
use std::time::Duration;

/// The `AverageCounter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AverageCounter",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "counts packets and measures their average rate",
    synopsis: "AverageCounter([IGNORE])",
    description: "Passes packets unchanged, counting packets and bytes, and reports the \
        strict average rate over the time between the first and the most recent packet \
        (by the router's clock: the capture's time in a `--clock trace` run). Packets that \
        arrive within IGNORE of the first one are not counted, and that time is left out \
        of the rate: the warm-up of a measurement. Writing `reset` starts over. Rates are \
        whole units per second (Click prints fractions); they read 0 until the counted \
        time is positive.",
    ports: "one input, one output; push or pull (agnostic)",
    keywords: &[Keyword {
        name: "IGNORE",
        ty: "duration",
        default: Some("0"),
        doc: "time after the first packet whose packets are not counted; positional",
    }],
    counters: &[
        ("count", "packets counted"),
        ("byte_count", "bytes counted"),
        ("rate", "packets per second"),
        ("byte_rate", "bytes per second"),
        ("bit_rate", "bits per second"),
    ],
    example: "InfiniteSource(LIMIT 10) -> c :: AverageCounter -> Discard;",
    see_also: &["Counter"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let ignore: Duration = args.read_p("IGNORE")?.unwrap_or_default();
    Ok(Box::new(AverageCounter {
        ignore: ignore.as_nanos().min(u64::MAX as u128) as u64,
        count: 0,
        bytes: 0,
        first: None,
        last: 0,
    }))
}

/// Counts packets and bytes and averages their rate.
#[derive(Debug)]
pub struct AverageCounter {
    /// Warm-up after the first packet, ns.
    ignore: u64,
    count: u64,
    bytes: u64,
    /// Router time of the first and the latest packet, ns.
    first: Option<u64>,
    last: u64,
}

impl AverageCounter {
    #[inline]
    fn account(&mut self, batch: &Batch, now: u64) {
        let first = *self.first.get_or_insert(now);
        if now.saturating_sub(first) >= self.ignore {
            self.count += batch.len() as u64;
            self.bytes += batch.iter().map(|p| p.len() as u64).sum::<u64>();
        }
        self.last = now;
    }

    /// `units` per second over the counted time.
    fn rate(&self, units: u64) -> u64 {
        let Some(first) = self.first else { return 0 };
        let span = self.last.saturating_sub(first).saturating_sub(self.ignore);
        if span == 0 {
            return 0;
        }
        (units as u128 * 1_000_000_000 / span as u128).min(u64::MAX as u128) as u64
    }
}

impl Element for AverageCounter {
    /// Hot swap: the count and the time it was measured over continue.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<AverageCounter>(old) else {
            return;
        };
        self.count = old.count;
        self.bytes = old.bytes;
        self.first = old.first;
        self.last = old.last;
    }

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
        s.counter("rate", self.rate(self.count));
        s.counter("byte_rate", self.rate(self.bytes));
        s.counter("bit_rate", self.rate(self.bytes.saturating_mul(8)));
    }

    fn write_handler(&mut self, handler: &str, _value: &str) -> Result<(), String> {
        match handler {
            "reset" => {
                self.count = 0;
                self.bytes = 0;
                self.first = None;
                self.last = 0;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (AverageCounter has `reset`)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element, Harness};

    /// A 64-byte IPv4/UDP frame.
    fn udp() -> Packet {
        let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
        f.extend([
            0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.extend([0x04, 0xd2, 0x16, 0x2e, 0, 30, 0, 0]);
        f.resize(64, 0);
        Packet::from_slice(&f).unwrap()
    }

    #[test]
    fn averages_over_the_counted_time() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.advance_to(Timestamp(5_000_000_000));
        h.push_packets(0, [udp(), udp()]);
        assert_eq!(h.stats().get("rate"), Some(0));
        h.advance_to(Timestamp(5_500_000_000));
        h.push_packets(0, [udp(), udp()]);
        assert_eq!(h.take(0).len(), 4);
        let s = h.stats();
        assert_eq!(s.get("count"), Some(4));
        assert_eq!(s.get("byte_count"), Some(256));
        // Four packets in half a second.
        assert_eq!(s.get("rate"), Some(8));
        assert_eq!(s.get("byte_rate"), Some(512));
        assert_eq!(s.get("bit_rate"), Some(4096));
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.stats().get("count"), Some(0));
        assert_eq!(h.stats().get("rate"), Some(0));
        assert!(h.write_handler("count", "0").is_err());
    }

    #[test]
    fn ignore_leaves_out_the_warm_up() {
        let mut h = Harness::push(&CLASS, "IGNORE 1", 1, 1);
        h.advance_to(Timestamp(1_000_000_000));
        h.push_packets(0, [udp(), udp(), udp()]);
        h.advance_to(Timestamp(2_000_000_000));
        h.push_packets(0, [udp()]);
        h.advance_to(Timestamp(3_000_000_000));
        h.push_packets(0, [udp()]);
        // Every packet passes; only the last two count, over one second.
        assert_eq!(h.take(0).len(), 5);
        assert_eq!(h.stats().get("count"), Some(2));
        assert_eq!(h.stats().get("rate"), Some(2));
    }

    #[test]
    fn counts_when_pulled() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "", ports);
        h.feed(0, [udp(), udp()]);
        assert_eq!(h.pull(0, 8).len(), 2);
        assert_eq!(h.stats().get("byte_count"), Some(128));
        assert!(make_element(&CLASS, "IGNORE soon", &Default::default()).is_err());
    }
}
