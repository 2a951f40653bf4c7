//! `Shaper`: lets at most RATE packets a second through a pull path, as
//! Click's `elements/standard/shaper.cc`.

use crate::standard::bw_rated_unqueue::parse_bandwidth;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo,
};
use bricks_packet::Timestamp;

/// The `Shaper` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Shaper",
    ports: "1/1-2",
    processing: "l/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "shapes traffic to maximum rate (pkt/s)",
    synopsis: "Shaper(RATE)",
    description: "A pull element that lets at most RATE packets per second through output \
        0: a pull finds nothing until the next packet is due, one every 1/RATE seconds, \
        and sets a timer for it. Unused time accumulates up to one packet or a \
        millisecond's worth of packets, whichever is more, so a puller that runs less \
        often than 1/RATE still gets the rate. Pulls on the optional output 1 return \
        packets from the input only when output 0 would hold them back (Click's \
        sampling in pull context). The `rate` handler reads and sets RATE (0 lets nothing \
        through output 0), `reset` forgets the credit.\n\n\
        bricks has no notifiers: the task pulling through a Shaper sees nothing to do \
        while it holds packets back, so a run whose sources are done ends without waiting \
        for them. Use RatedUnqueue where a run must drain at a rate.",
    ports: "one pull input; one or two pull outputs",
    keywords: &[Keyword {
        name: "RATE",
        ty: "real number, packets per second",
        default: None,
        doc: "most packets per second; positional",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 20) -> Queue -> Shaper(1000) -> Unqueue -> Discard;",
    see_also: &[
        "BandwidthShaper",
        "RatedUnqueue",
        "RatedSplitter",
        "DelayShaper",
    ],
};

/// The `BandwidthShaper` class.
pub static BANDWIDTH_SHAPER: ElementClass = ElementClass {
    name: "BandwidthShaper",
    ports: "1/1",
    processing: "l/l",
    manual: &BW_MANUAL,
    make: make_bw,
};

static BW_MANUAL: Manual = Manual {
    summary: "shapes traffic to maximum rate (bytes/s)",
    synopsis: "BandwidthShaper(RATE)",
    description: "A pull element that lets at most RATE bytes per second through (Click's \
        bandwidth notation: `131072B/s`, `1Mbps`, `128kbps`). A pull gets packets while \
        the element is not ahead of RATE; each packet then counts its length, so one large \
        packet may put it ahead, and the next pull finds nothing until the time it took \
        at RATE has passed (a timer is set for it). Unused time accumulates up to a \
        millisecond, or one 1500-byte packet's time if longer. The `rate` handler reads \
        RATE in bytes per second and sets it. Like Shaper, it cannot keep a run whose \
        sources are done going.",
    ports: "one pull input; one pull output",
    keywords: &[Keyword {
        name: "RATE",
        ty: "bandwidth",
        default: None,
        doc: "most bytes per second; positional",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 20, LENGTH 1000) -> Queue -> BandwidthShaper(1Mbps) \
        -> Unqueue -> Discard;",
    see_also: &["Shaper", "BandwidthRatedUnqueue", "DelayShaper"],
};

fn make_bw(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let text: String = args.read_mp("RATE")?;
    let r = parse_bandwidth(&text).map_err(|e| ArgError::new(format!("bad argument RATE: {e}")))?;
    let mut s = BandwidthShaper {
        ns_per_byte: 0.0,
        rate: 0,
        burst: 0,
        credit: None,
        last: 0,
        timer: None,
    };
    s.set_rate(r);
    Ok(Box::new(s))
}

/// A byte-rate shaper: credit in nanoseconds, which a packet may overdraw.
#[derive(Debug)]
pub struct BandwidthShaper {
    ns_per_byte: f64,
    /// Bytes per second.
    rate: u64,
    burst: i64,
    credit: Option<i64>,
    last: u64,
    timer: Option<u64>,
}

impl BandwidthShaper {
    fn set_rate(&mut self, bytes_per_sec: u64) {
        self.rate = bytes_per_sec.max(1);
        self.ns_per_byte = 1e9 / self.rate as f64;
        self.burst = (1_000_000f64)
            .max(1500.0 * self.ns_per_byte)
            .min(i64::MAX as f64) as i64;
    }

    fn cost(&self, len: usize) -> i64 {
        (len as f64 * self.ns_per_byte).min(i64::MAX as f64) as i64
    }
}

impl Element for BandwidthShaper {
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let now = cx.now().0;
        let elapsed = i64::try_from(now.saturating_sub(self.last)).unwrap_or(i64::MAX);
        let mut credit = match self.credit {
            None => 0,
            Some(c) => c.saturating_add(elapsed).min(self.burst),
        };
        self.last = now;
        let mut n = 0;
        while n < max && credit >= 0 {
            let mut b = Batch::new();
            cx.pull(0, &mut b, 1);
            let Some(p) = b.pop() else { break };
            credit = credit.saturating_sub(self.cost(p.len()));
            if out.push(p).is_err() {
                break;
            }
            n += 1;
        }
        self.credit = Some(credit);
        if credit < 0 {
            let at = now.saturating_add(credit.unsigned_abs());
            if self.timer != Some(at) {
                self.timer = Some(at);
                cx.schedule_at(Timestamp(at));
            }
        }
    }

    fn run_timer(&mut self, _cx: &mut Context<'_>) {
        self.timer = None;
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "rate").then(|| format!("{}", self.rate))
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "rate" => {
                let r = parse_bandwidth(value)?;
                self.set_rate(r);
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (BandwidthShaper has `rate`)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("rate")];
        H
    }
}

fn rate(text: &str) -> Result<f64, String> {
    let r = f64::from_arg(text)?;
    if r >= 0.0 {
        Ok(r)
    } else {
        Err(format!("RATE must not be negative, found {r}"))
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let text: String = args.read_mp("RATE")?;
    let r = rate(&text).map_err(|e| ArgError::new(format!("bad argument RATE: {e}")))?;
    let mut s = Shaper {
        rate: r,
        gap: 0,
        burst: 0,
        credit: None,
        last: 0,
        timer: None,
    };
    s.set_rate(r);
    Ok(Box::new(s))
}

/// A packet-rate token bucket, in nanoseconds of credit.
#[derive(Debug)]
pub struct Shaper {
    rate: f64,
    /// Nanoseconds per packet.
    gap: u64,
    /// Most credit kept, in nanoseconds.
    burst: u64,
    /// Credit in nanoseconds; `None` until the first pull, which starts
    /// with one packet's worth.
    credit: Option<u64>,
    last: u64,
    timer: Option<u64>,
}

impl Shaper {
    fn set_rate(&mut self, r: f64) {
        self.rate = r;
        // Rate 0 lets nothing through output 0.
        self.gap = if r > 0.0 {
            ((1e9 / r) as u64).max(1)
        } else {
            u64::MAX
        };
        self.burst = self.gap.max(1_000_000);
    }

    /// How many packets may leave now, at most `max`.
    fn allowed(&mut self, now: u64, max: usize) -> usize {
        let credit = match self.credit {
            None => self.gap,
            Some(c) => c.saturating_add(now.saturating_sub(self.last)),
        }
        .min(self.burst.max(self.gap));
        self.credit = Some(credit);
        self.last = now;
        usize::try_from(credit / self.gap).map_or(max, |n| n.min(max))
    }
}

impl Element for Shaper {
    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let now = cx.now().0;
        let n = self.allowed(now, max);
        if port == 1 {
            // Only what the shaper would hold back now leaves here.
            if n == 0 {
                cx.pull(0, out, max);
            }
            return;
        }
        if n == 0 {
            let credit = self.credit.unwrap_or(0);
            let at = now.saturating_add(self.gap.saturating_sub(credit));
            if self.timer != Some(at) {
                self.timer = Some(at);
                cx.schedule_at(Timestamp(at));
            }
            return;
        }
        let before = out.len();
        cx.pull(0, out, n);
        let got = (out.len() - before) as u64;
        self.credit = self
            .credit
            .map(|c| c.saturating_sub(got.saturating_mul(self.gap)));
    }

    fn run_timer(&mut self, _cx: &mut Context<'_>) {
        self.timer = None;
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "rate").then(|| format!("{}", self.rate))
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "rate" => {
                let r = rate(value.trim())?;
                self.set_rate(r);
                Ok(())
            }
            "reset" => {
                self.credit = None;
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}` (rate, reset)")),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("rate"), Handler::w("reset")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    const S: u64 = 1_000_000_000;

    fn harness(args: &str) -> Harness {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull; 2],
        };
        let mut h = Harness::new(&CLASS, args, ports);
        h.feed(0, (0..100).map(|_| Packet::from_slice(&udp(4)).unwrap()));
        h
    }

    #[test]
    fn ten_packets_a_second() {
        let mut h = harness("10");
        h.advance_to(Timestamp(100 * S));
        assert_eq!(h.pull(0, 32).len(), 1);
        assert!(h.pull(0, 32).is_empty());
        assert_eq!(h.timers(), vec![Timestamp(100 * S + S / 10)]);
        let mut got = 1;
        for step in 1..=20u64 {
            h.advance_to(Timestamp(100 * S + step * S / 20));
            got += h.pull(0, 32).len();
        }
        // One second later: the first packet, then ten more.
        assert_eq!(got, 11);
    }

    #[test]
    fn bursts_up_to_a_millisecond_and_port_1_takes_what_is_held_back() {
        let mut h = harness("1000000");
        h.advance_to(Timestamp(S));
        assert_eq!(h.pull(0, 256).len(), 1);
        // A second later a millisecond's worth (1000) is due: the other 99.
        h.advance_to(Timestamp(2 * S));
        assert_eq!(h.pull(0, 256).len(), 99);
        let mut h = harness("1");
        h.advance_to(Timestamp(S));
        assert_eq!(h.pull(1, 8).len(), 0);
        assert_eq!(h.pull(0, 8).len(), 1);
        assert_eq!(h.pull(1, 8).len(), 8);
    }

    #[test]
    fn bandwidth_shaper_counts_bytes() {
        // 1000 bytes/s and 100-byte packets: one packet per 100 ms.
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&BANDWIDTH_SHAPER, "1000Bps", ports);
        h.feed(0, (0..20).map(|_| Packet::from_slice(&udp(72)).unwrap()));
        h.advance_to(Timestamp(10 * S));
        assert_eq!(h.pull(0, 32).len(), 1);
        assert!(h.pull(0, 32).is_empty());
        assert_eq!(h.timers(), vec![Timestamp(10 * S + S / 10)]);
        let mut got = 1;
        for step in 1..=20u64 {
            h.advance_to(Timestamp(10 * S + step * S / 20));
            got += h.pull(0, 32).len();
        }
        assert_eq!(got, 11);
        let mut e = make_element(&BANDWIDTH_SHAPER, "1Mbps", &PortInfo::default()).unwrap();
        assert_eq!(e.read_handler("rate").as_deref(), Some("125000"));
        e.write_handler("rate", "2kBps").unwrap();
        assert_eq!(e.read_handler("rate").as_deref(), Some("2000"));
        assert!(e.write_handler("rate", "fast").is_err());
    }

    #[test]
    fn rate_handler() {
        let ports = PortInfo::default();
        let mut e = make_element(&CLASS, "100", &ports).unwrap();
        assert_eq!(e.read_handler("rate").as_deref(), Some("100"));
        e.write_handler("rate", "2.5").unwrap();
        assert_eq!(e.read_handler("rate").as_deref(), Some("2.5"));
        assert!(e.write_handler("rate", "-1").is_err());
        e.write_handler("rate", "0").unwrap();
        e.write_handler("reset", "").unwrap();
        assert!(make_element(&CLASS, "", &ports).is_err());
    }
}
