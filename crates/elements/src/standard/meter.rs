//! `Meter` and `BandwidthMeter`: send the whole packet stream to the output
//! that its current rate falls in (Click's `elements/standard/meter.cc` and
//! `bandwidthmeter.cc`). The rate is an exponentially weighted moving
//! average over 1 ms epochs of the router's clock, with weight 1/16 (Click's
//! `RateEWMA` with stability shift 4 and a 1000 Hz clock).

use super::bw_rated_unqueue::parse_bandwidth;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Manual, PortInfo, Stats,
};
use bricks_packet::Timestamp;

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
        must have n+1 outputs. The whole stream goes to one output: to split it, with at \
        most RATE1 packets a second on output 0, use RatedSplitter.",
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

/// Epoch length of the moving average, ns (Click's jiffy at 1000 Hz).
const EPOCH_NS: u64 = 1_000_000;
/// Fixed-point bits of the average.
const SCALE: u32 = 10;
/// Weight of a new epoch: 2^-STABILITY.
const STABILITY: u32 = 4;
/// Idle epochs after which the average is zero whatever it was.
const MAX_DECAY: u64 = 1024;

/// An exponentially weighted moving average of units per epoch.
#[derive(Debug, Clone, Default)]
pub(crate) struct RateEwma {
    /// Units per epoch, times 2^SCALE.
    avg: u64,
    /// The epoch being counted.
    epoch: u64,
    /// Units counted in it.
    count: u64,
}

impl RateEwma {
    #[inline]
    fn fold(avg: u64, sample: u64) -> u64 {
        if sample >= avg {
            avg + ((sample - avg) >> STABILITY)
        } else {
            avg - ((avg - sample) >> STABILITY)
        }
    }

    /// Counts `units` at time `now`.
    #[inline]
    pub(crate) fn update(&mut self, now: Timestamp, units: u64) {
        let e = now.0 / EPOCH_NS;
        if e > self.epoch {
            let sample = self.count.min(u64::MAX >> (SCALE + 1)) << SCALE;
            self.avg = Self::fold(self.avg, sample);
            let idle = e - self.epoch - 1;
            if idle >= MAX_DECAY {
                self.avg = 0;
            } else {
                // Bounded by MAX_DECAY, and stops once the average cannot
                // decay further.
                for _ in 0..idle {
                    if self.avg >> STABILITY == 0 {
                        self.avg = 0;
                        break;
                    }
                    self.avg -= self.avg >> STABILITY;
                }
            }
            self.epoch = e;
            self.count = 0;
        }
        self.count = self.count.saturating_add(units);
    }

    /// Units per second.
    #[inline]
    pub(crate) fn rate(&self) -> u64 {
        ((self.avg as u128 * (1_000_000_000 / EPOCH_NS) as u128) >> SCALE) as u64
    }
}

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

fn make_meter(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let rates = read_rates(args, ports, "Meter", u64::from_arg)?;
    Ok(Box::new(Meter {
        rates,
        bytes: false,
        ewma: RateEwma::default(),
    }))
}

fn make_bandwidth_meter(
    args: &mut Args<'_>,
    ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    let rates = read_rates(args, ports, "BandwidthMeter", parse_bandwidth)?;
    Ok(Box::new(Meter {
        rates,
        bytes: true,
        ewma: RateEwma::default(),
    }))
}

/// Sends packets to the output of their rate's band.
#[derive(Debug)]
pub struct Meter {
    /// Increasing band limits, packets or bytes per second.
    rates: Vec<u64>,
    /// Whether the rate counts bytes (BandwidthMeter) or packets.
    bytes: bool,
    ewma: RateEwma,
}

impl Element for Meter {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let now = cx.now();
        let (rates, bytes, ewma) = (&self.rates, self.bytes, &mut self.ewma);
        cx.push_classified(batch, |p| {
            ewma.update(now, if bytes { p.len() as u64 } else { 1 });
            let r = ewma.rate();
            // The rates are few (one or two); the band is the number of
            // limits at or below the rate.
            Some(rates.iter().take_while(|&&limit| r >= limit).count())
        });
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("rate", self.ewma.rate());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Packet;
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
