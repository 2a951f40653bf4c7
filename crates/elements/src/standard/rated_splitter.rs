//! `RatedSplitter` and `BandwidthRatedSplitter`: split a stream at a rate,
//! packets within it to output 0, the rest to output 1 (Click's
//! `elements/standard/ratedsplitter.cc` and `bwratedsplitter.cc`).

use super::bw_rated_unqueue::{parse_bandwidth, unparse_bandwidth};
use super::rated_unqueue::{check_tokens, read_bucket};
use super::token_bucket::TokenBucket;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, PortInfo,
    Stats,
};
use std::time::Duration;

/// The `RatedSplitter` class.
pub static RATED_SPLITTER: ElementClass = ElementClass {
    name: "RatedSplitter",
    ports: "1/1-2",
    processing: "h/h",
    manual: &RATED_SPLITTER_MANUAL,
    make: make_rated_splitter,
};

/// The `BandwidthRatedSplitter` class.
pub static BANDWIDTH_RATED_SPLITTER: ElementClass = ElementClass {
    name: "BandwidthRatedSplitter",
    ports: "1/1-2",
    processing: "h/h",
    manual: &BANDWIDTH_RATED_SPLITTER_MANUAL,
    make: make_bandwidth_rated_splitter,
};

static KEYWORDS: [Keyword; 3] = [
    Keyword {
        name: "RATE",
        ty: "unsigned",
        default: None,
        doc: "packets per second of output 0 (write `rate` to change); positional",
    },
    BURST_DURATION,
    Keyword {
        name: "BURST_SIZE",
        ty: "unsigned",
        default: Some("RATE x BURST_DURATION"),
        doc: "bucket size in packets",
    },
];

static BANDWIDTH_KEYWORDS: [Keyword; 3] = [
    Keyword {
        name: "RATE",
        ty: "bandwidth",
        default: None,
        doc: "bytes per second of output 0 (write `rate` to change); positional",
    },
    BURST_DURATION,
    Keyword {
        name: "BURST_BYTES",
        ty: "unsigned",
        default: Some("RATE x BURST_DURATION"),
        doc: "bucket size in bytes",
    },
];

const BURST_DURATION: Keyword = Keyword {
    name: "BURST_DURATION",
    ty: "duration",
    default: Some("20ms"),
    doc: "bucket size as time at RATE",
};

static RATED_SPLITTER_MANUAL: Manual = Manual {
    summary: "splits a packet stream at a rate (packets/s)",
    synopsis: "RatedSplitter(RATE [, KEYWORDS])",
    description: "Sends at most RATE packets a second, on average, to output 0 and the \
        others to output 1, through a token bucket on the router's clock (each packet to \
        output 0 takes a token; the bucket fills every millisecond at RATE a second up to \
        its size and starts full; it is Click's, to the token, so its fill rate rounds down \
        a little as Click's does). Unlike Meter it splits the stream rather than sending \
        all of it to one output.",
    ports: "one push input; one or two push outputs (over-rate packets are dropped and counted when output 1 is missing)",
    keywords: &KEYWORDS,
    counters: &[
        (
            "rate",
            "packets per second of output 0 (write `rate` to change)",
        ),
        ("passed", "packets sent to output 0"),
        ("over", "packets over the rate, sent to output 1"),
    ],
    example: "InfiniteSource(LIMIT 100) -> s :: RatedSplitter(1000); s[0] -> Discard; \
        s[1] -> Discard;",
    see_also: &["BandwidthRatedSplitter", "Meter", "RatedUnqueue"],
};

static BANDWIDTH_RATED_SPLITTER_MANUAL: Manual = Manual {
    summary: "splits a packet stream at a rate (bytes/s)",
    synopsis: "BandwidthRatedSplitter(RATE [, KEYWORDS])",
    description: "Like RatedSplitter, with RATE a bandwidth (`8Mbps`, `1MBps`; a plain \
        number is bytes per second): the bucket holds BURST_BYTES and 128 KiB more; a packet \
        goes to output 0 while it holds at least 128 KiB, and takes as many tokens as the \
        packet has bytes (or all there are); otherwise it goes to output 1.",
    ports: "one push input; two push outputs",
    keywords: &BANDWIDTH_KEYWORDS,
    counters: &[
        (
            "rate",
            "bytes per second of output 0 (write `rate` to change)",
        ),
        ("passed", "packets sent to output 0"),
        ("over", "packets over the rate, sent to output 1"),
    ],
    example: "InfiniteSource(LIMIT 100) -> s :: BandwidthRatedSplitter(1Mbps); \
        s[0] -> Discard; s[1] -> Discard;",
    see_also: &["RatedSplitter", "BandwidthMeter", "BandwidthRatedUnqueue"],
};

fn parse_packet_rate(text: &str) -> Result<u64, String> {
    let r = u64::from_arg(text.trim())?;
    if r == 0 {
        return Err("RATE must be at least 1".into());
    }
    Ok(r)
}

fn make_splitter(args: &mut Args<'_>, bytes: bool) -> Result<Box<dyn Element>, ArgError> {
    let text: String = args.read_mp("RATE")?;
    let parse = if bytes {
        parse_bandwidth
    } else {
        parse_packet_rate
    };
    let rate = parse(&text).map_err(|why| ArgError::new(format!("bad RATE: {why}")))?;
    check_tokens("RATE", rate)?;
    let (window, size) = read_bucket(args, if bytes { "BURST_BYTES" } else { "BURST_SIZE" })?;
    let mut capacity = size.unwrap_or_else(|| TokenBucket::capacity_for(rate, window));
    if bytes {
        capacity = TokenBucket::bandwidth_capacity(capacity);
    }
    Ok(Box::new(RatedSplitter {
        bucket: TokenBucket::new(rate, capacity),
        window,
        size,
        bytes,
        passed: 0,
        over: 0,
    }))
}

fn make_rated_splitter(
    args: &mut Args<'_>,
    _ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    make_splitter(args, false)
}

fn make_bandwidth_rated_splitter(
    args: &mut Args<'_>,
    _ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    make_splitter(args, true)
}

/// Splits a stream at a rate.
#[derive(Debug)]
pub struct RatedSplitter {
    bucket: TokenBucket,
    window: Duration,
    size: Option<u64>,
    /// Tokens are bytes (BandwidthRatedSplitter) or packets.
    bytes: bool,
    passed: u64,
    over: u64,
}

impl Element for RatedSplitter {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.bucket.refill(cx.now());
        let bytes = self.bytes;
        let (bucket, passed, over) = (&mut self.bucket, &mut self.passed, &mut self.over);
        cx.push_classified(batch, |p| {
            // A byte bucket lets one packet of any size through while it
            // holds the threshold (see TokenBucket::BANDWIDTH_THRESHOLD).
            let fits = if bytes {
                let ready = bucket.bandwidth_ready();
                if ready {
                    bucket.remove(p.len() as u64);
                }
                ready
            } else {
                bucket.remove_if(1)
            };
            if fits {
                *passed += 1;
                Some(0)
            } else {
                *over += 1;
                Some(1)
            }
        });
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("rate", self.bucket.rate());
        s.counter("passed", self.passed);
        s.counter("over", self.over);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        // A bandwidth reads as Click prints it; the `rate` counter keeps
        // the number.
        (handler == "rate" && self.bytes).then(|| unparse_bandwidth(self.bucket.rate()))
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "rate" => {
                let r = if self.bytes {
                    parse_bandwidth(value)?
                } else {
                    parse_packet_rate(value)?
                };
                let cap = self
                    .size
                    .unwrap_or_else(|| TokenBucket::capacity_for(r, self.window));
                let cap = if self.bytes {
                    TokenBucket::bandwidth_capacity(cap)
                } else {
                    cap
                };
                check_tokens("rate", r).map_err(|e| e.to_string())?;
                self.bucket.assign(r, cap);
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}` (rate)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Packet;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element, Harness};

    /// A 100-byte IPv4/UDP frame.
    fn udp() -> Packet {
        let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
        f.extend([
            0x45, 0, 0, 86, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.extend([0x04, 0xd2, 0x16, 0x2e, 0, 66, 0, 0]);
        f.resize(100, 0);
        Packet::from_slice(&f).unwrap()
    }

    #[test]
    fn splits_at_the_packet_rate() {
        // 1000 packets/s with a 10-packet bucket.
        let mut h = Harness::push(&RATED_SPLITTER, "1000, BURST_SIZE 10", 1, 2);
        h.advance_to(Timestamp(1_000_000_000));
        h.push_packets(0, (0..30).map(|_| udp()));
        assert_eq!((h.take(0).len(), h.take(1).len()), (10, 20));
        // 5 ms later: 5 tokens.
        h.advance_to(Timestamp(1_005_000_000));
        h.push_packets(0, (0..30).map(|_| udp()));
        assert_eq!((h.take(0).len(), h.take(1).len()), (5, 25));
        assert_eq!(h.stats().get("passed"), Some(15));
        assert_eq!(h.stats().get("over"), Some(45));
        h.write_handler("rate", "2000").unwrap();
        // Read back from the bucket's fractions a tick, as Click reads it.
        assert_eq!(h.stats().get("rate"), Some(2001));
        assert!(h.write_handler("rate", "0").is_err());
        assert!(h.write_handler("burst", "1").is_err());
    }

    #[test]
    fn splits_at_the_byte_rate() {
        // 80 kbit/s = 10,000 bytes/s; a 1,000-byte burst passes 10 frames
        // of 100 and, as Click's (a frame passes while the bucket holds
        // the 131072-byte threshold), an 11th that takes it below.
        let mut h = Harness::push(&BANDWIDTH_RATED_SPLITTER, "80kbps, BURST_BYTES 1000", 1, 2);
        h.advance_to(Timestamp(0));
        h.push_packets(0, (0..12).map(|_| udp()));
        assert_eq!((h.take(0).len(), h.take(1).len()), (11, 1));
        // 25 ms: 250 bytes, two frames.
        h.advance_to(Timestamp(25_000_000));
        h.push_packets(0, (0..4).map(|_| udp()));
        assert_eq!((h.take(0).len(), h.take(1).len()), (2, 2));
        // Read back as Click reads it (80.04kbps).
        assert_eq!(h.stats().get("rate"), Some(10_005));
    }

    #[test]
    fn long_run_keeps_the_rate() {
        // 200 packets a second for 10 s into RATE 100 with a bucket of 2:
        // the 2 the bucket starts with, then 100 a second.
        let mut h = Harness::push(&RATED_SPLITTER, "RATE 100, BURST_SIZE 2", 1, 2);
        for i in 0..2000u64 {
            h.advance_to(Timestamp(i * 5_000_000));
            h.push_packets(0, [udp()]);
        }
        assert_eq!(h.take(0).len(), 1001);
        assert_eq!(h.take(1).len(), 999);
    }

    #[test]
    fn bad_rates_refused() {
        assert!(make_element(&RATED_SPLITTER, "0", &Default::default()).is_err());
        assert!(make_element(&RATED_SPLITTER, "", &Default::default()).is_err());
        assert!(make_element(
            &BANDWIDTH_RATED_SPLITTER,
            "10 furlongs",
            &Default::default()
        )
        .is_err());
    }
}
