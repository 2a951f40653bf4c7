//! `Meter` and `BandwidthMeter`: send the whole packet stream to the output
//! that its current rate falls in (Click's `elements/standard/meter.cc` and
//! `bandwidthmeter.cc`). The rate is an exponentially weighted moving
//! average over 1 ms epochs of the router's clock, with weight 1/16: Click's
//! `RateEWMA` (stability shift 4, 10 fraction bits, a 1000 Hz clock), the
//! one Counter's rates use, and the bands are compared in its fixed point,
//! so a packet goes where Click's Meter sends it.

use super::bw_rated_unqueue::parse_bandwidth;
use super::counter::{read_time, unparse_real2, RateEwma, EPOCH_NS, HZ};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Manual, PortInfo, Stats,
};

/// The `Meter` class.
pub static METER: ElementClass = ElementClass {
    name: "Meter",
    ports: "1/2-",
    processing: "h/h",
    manual: &METER_MANUAL,
    make: make_meter,
};

/// The `BandwidthMeter` class.
pub static BANDWIDTH_METER: ElementClass = ElementClass {
    name: "BandwidthMeter",
    ports: "1/2-",
    processing: "h/h",
    manual: &BANDWIDTH_METER_MANUAL,
    make: make_bandwidth_meter,
};

static METER_MANUAL: Manual = Manual {
    summary: "classifies the packet stream by its rate (packets/s)",
    synopsis: "Meter(RATE1, RATE2, ..., RATEn)",
    description: "Measures the rate of arriving packets, in packets per second, as an \
        exponentially weighted moving average (1 ms epochs of the router's clock, weight \
        1/16 a epoch, as Click's), and sends each packet out of the output of the band the \
        rate is in: below RATE1 to output 0, at least RATE1 but below RATE2 to output 1, \
        and so on; at least RATEn to output n. The rates must increase, and the element \
        must have n+1 outputs. As Click's, the rates are read as bandwidths: a plain \
        number is taken as is, `300Bps` is 300 (with units, Click does not warn), at most \
        4194303. The average and the bands are Click's fixed point, so each packet goes \
        where Click's Meter sends it; `rate` reads as Click prints it. The whole stream \
        goes to one output: to split it, with at most RATE1 packets a second on output 0, \
        use RatedSplitter.",
    ports: "one push input; n+1 push outputs",
    keywords: &[],
    counters: &[("rate", "the measured rate, packets per second")],
    example: "InfiniteSource(LIMIT 100) -> m :: Meter(10000); m[0] -> Discard; \
        m[1] -> Discard;",
    see_also: &["BandwidthMeter", "RatedSplitter"],
};

static BANDWIDTH_METER_MANUAL: Manual = Manual {
    summary: "classifies the packet stream by its rate (bytes/s)",
    synopsis: "BandwidthMeter(RATE1, RATE2, ..., RATEn)",
    description: "Like Meter, but measures the rate in bytes per second and takes \
        bandwidths (`8Mbps`, `1MBps`; a plain number is bytes per second): below RATE1 \
        packets go to output 0, at least RATEn to output n.",
    ports: "one push input; n+1 push outputs",
    keywords: &[],
    counters: &[("rate", "the measured rate, bytes per second")],
    example: "InfiniteSource(LIMIT 100) -> m :: BandwidthMeter(1Mbps); m[0] -> Discard; \
        m[1] -> Discard;",
    see_also: &["Meter", "BandwidthRatedSplitter"],
};

fn read_rates(
    args: &mut Args<'_>,
    ports: &PortInfo,
    class: &str,
    parse: fn(&str) -> Result<u64, String>,
) -> Result<Vec<u64>, ArgError> {
    let mut rates = Vec::new();
    for (text, span) in args.rest() {
        let r = parse(text.trim()).map_err(|why| ArgError::at(span, format!("bad rate: {why}")))?;
        if rates.last().is_some_and(|&last| r <= last) {
            return Err(ArgError::at(
                span,
                format!("{class} rates must increase ({text} is not above the rate before it)"),
            ));
        }
        // Click's limit: the rate in its fixed point must fit 32 bits.
        let max = u64::from(u32::MAX >> SCALE);
        if r > max {
            return Err(ArgError::at(
                span,
                format!("rate {} too large (max {max})", rates.len() + 1),
            ));
        }
        rates.push(r);
    }
    if rates.is_empty() {
        return Err(ArgError::new(format!("{class} needs at least one rate")));
    }
    if ports.noutputs() != rates.len() + 1 {
        return Err(ArgError::new(format!(
            "{class} with {} rate{} needs {} outputs, has {}",
            rates.len(),
            if rates.len() == 1 { "" } else { "s" },
            rates.len() + 1,
            ports.noutputs()
        )));
    }
    Ok(rates)
}

/// Fraction bits of the average.
const SCALE: u32 = 10;

fn make_meter(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    // Click's Meter reads its rates as bandwidths too (a plain number is
    // taken as is; with units, as bytes a second).
    let rates = read_rates(args, ports, "Meter", parse_bandwidth)?;
    Ok(Box::new(Meter::new(rates, false)))
}

fn make_bandwidth_meter(
    args: &mut Args<'_>,
    ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    let rates = read_rates(args, ports, "BandwidthMeter", parse_bandwidth)?;
    Ok(Box::new(Meter::new(rates, true)))
}

/// Sends packets to the output of their rate's band.
#[derive(Debug)]
pub struct Meter {
    /// Increasing band limits in the average's fixed point: units an
    /// epoch times 2^SCALE (Click's `(rate << scale) / HZ`).
    limits: Vec<i64>,
    /// Whether the rate counts bytes (BandwidthMeter) or packets.
    bytes: bool,
    ewma: RateEwma<SCALE>,
    /// Router time of the latest packet, ns; `None` before the first.
    last: Option<u64>,
    /// Whether the router's clock is a trace's (or simulated).
    trace: bool,
}

impl Meter {
    fn new(rates: Vec<u64>, bytes: bool) -> Meter {
        Meter {
            limits: rates.iter().map(|&r| ((r << SCALE) / HZ) as i64).collect(),
            bytes,
            ewma: RateEwma::default(),
            last: None,
            trace: false,
        }
    }

    /// The average as of a read now, units a second times 2^SCALE
    /// (Click's read does `update(0)` first): on a trace or simulated
    /// clock at the router's time of the read (`clock`, where known, else
    /// the latest packet's), at the wall clock's otherwise.
    fn scaled_rate(&self, clock: Option<u64>) -> i64 {
        let Some(last) = self.last else {
            return 0;
        };
        self.ewma
            .scaled_rate(read_time(last, self.trace, clock) / EPOCH_NS)
    }
}

impl Element for Meter {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = cx.now().0;
        self.last = Some(now);
        self.trace = cx.trace_clock();
        let epoch = now / EPOCH_NS;
        let (limits, bytes, ewma) = (&self.limits, self.bytes, &mut self.ewma);
        cx.push_classified(batch, |p| {
            ewma.update(if bytes { p.len() as u64 } else { 1 }, epoch);
            let r = ewma.scaled_average();
            // The limits are few (one or two); the band is the number of
            // limits at or below the average, as Click's `r < meters[i]`.
            Some(limits.iter().take_while(|&&limit| r >= limit).count())
        });
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("rate", (self.scaled_rate(None).max(0) >> SCALE) as u64);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "rate").then(|| unparse_real2(self.scaled_rate(None), SCALE))
    }

    fn read_handler_at(&self, handler: &str, now: bricks_packet::Timestamp) -> Option<String> {
        // Click's text: the fixed point printed in decimal.
        (handler == "rate").then(|| unparse_real2(self.scaled_rate(Some(now.0)), SCALE))
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("rate")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Packet;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element, Harness};

    /// A 60-byte IPv4/UDP frame.
    fn udp() -> Packet {
        let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
        f.extend([
            0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.extend([0x04, 0xd2, 0x16, 0x2e, 0, 26, 0, 0]);
        f.resize(60, 0);
        Packet::from_slice(&f).unwrap()
    }

    /// Pushes `per_ms` packets every millisecond for `ms` milliseconds from
    /// `start` ns; returns how many went to each of `outs` outputs.
    fn drive(h: &mut Harness, start: u64, ms: u64, per_ms: usize, outs: usize) -> Vec<usize> {
        let mut got = vec![0; outs];
        for i in 0..ms {
            h.advance_to(Timestamp(start + i * EPOCH_NS));
            h.push_packets(0, (0..per_ms).map(|_| udp()));
            for (o, g) in got.iter_mut().enumerate() {
                *g += h.take(o).len();
            }
        }
        got
    }

    #[test]
    fn meter_moves_up_and_down_the_bands() {
        // 10 packets a millisecond: 10,000 packets/s, between 5,000 and 20,000.
        let mut h = Harness::push(&METER, "5000, 20000", 1, 3);
        h.trace_clock();
        let got = drive(&mut h, 1_000_000_000, 300, 10, 3);
        assert_eq!(got.iter().sum::<usize>(), 3000);
        assert!(got[0] > 0, "starts below RATE1: {got:?}");
        assert_eq!(got[2], 0);
        let rate = h.stats().get("rate").unwrap();
        assert!((9_000..=10_000).contains(&rate), "rate {rate}");
        // Steady now: every packet in band 1.
        assert_eq!(drive(&mut h, 1_300_000_000, 10, 10, 3), vec![0, 100, 0]);
        // A second of silence: the average is gone.
        assert_eq!(drive(&mut h, 2_400_000_000, 1, 1, 3), vec![1, 0, 0]);
        assert_eq!(h.stats().get("rate"), Some(0));
    }

    #[test]
    fn bandwidth_meter_counts_bytes() {
        // 10 frames of 60 bytes a ms: 600,000 bytes/s, above 1 Mbps (125,000 B/s).
        let mut h = Harness::push(&BANDWIDTH_METER, "1Mbps", 1, 2);
        h.trace_clock();
        drive(&mut h, 0, 300, 10, 2);
        assert_eq!(drive(&mut h, 300 * EPOCH_NS, 5, 10, 2), vec![0, 50]);
        let rate = h.stats().get("rate").unwrap();
        assert!((540_000..=600_000).contains(&rate), "rate {rate}");
    }

    #[test]
    fn rates_must_increase_and_match_outputs() {
        let two = PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push; 2],
        };
        assert!(make_element(&METER, "100", &two).is_ok());
        let e = make_element(&METER, "100, 50", &two).unwrap_err();
        assert!(e.contains("increase"), "{e}");
        let e = make_element(&METER, "100, 200", &two).unwrap_err();
        assert!(e.contains("needs 3 outputs"), "{e}");
        assert!(make_element(&METER, "", &two).is_err());
        assert!(make_element(&BANDWIDTH_METER, "fast", &two).is_err());
    }
}
