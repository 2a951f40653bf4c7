//! `RandomSample`: keeps each packet with a probability, as Click's
//! `elements/standard/randomsample.cc`.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats,
};

/// The `RandomSample` class.
pub static CLASS: ElementClass = ElementClass {
    name: "RandomSample",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "samples packets with some probability",
    synopsis: "RandomSample([P, SAMPLE, DROP, ACTIVE])",
    description: "Sends each packet to output 0 with probability P, independently; the \
        others go to output 1, or are dropped and counted when there is no output 1. Give \
        P, or one of SAMPLE (the same) and DROP (1 - P). While inactive every packet goes \
        to output 0. The generator is a xorshift64* with a fixed seed per element, so a \
        run is repeatable. Handlers: `sampling_prob`, `drop_prob` and `active` read and \
        write; `drops` reads.",
    ports: "one input, one or two outputs; agnostic (output 1 push)",
    keywords: &[
        Keyword {
            name: "P",
            ty: "real number, 0 to 1",
            default: None,
            doc: "probability a packet is kept; positional",
        },
        Keyword {
            name: "SAMPLE",
            ty: "real number, 0 to 1",
            default: None,
            doc: "the same as P",
        },
        Keyword {
            name: "DROP",
            ty: "real number, 0 to 1",
            default: None,
            doc: "probability a packet is not kept",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "whether packets are sampled at all",
        },
    ],
    counters: &[("drops", "packets not sampled (dropped or sent to output 1)")],
    example: "InfiniteSource(LIMIT 100) -> RandomSample(0.25) -> c :: Counter -> Discard;",
    see_also: &["RandomSwitch", "RED"],
};

fn prob(text: &str) -> Result<f64, String> {
    let p = f64::from_arg(text)?;
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("probability must be between 0 and 1, found {p}"))
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let p: Option<String> = args.read_p("P")?;
    let sample: Option<String> = args.read("SAMPLE")?;
    let drop: Option<String> = args.read("DROP")?;
    let active = args.read("ACTIVE")?.unwrap_or(true);
    let bad = |e: String| ArgError::new(e);
    let p = match (sample.or(p), drop) {
        (Some(_), Some(_)) => return Err(bad("give at most one of SAMPLE and DROP".into())),
        (Some(p), None) => prob(&p).map_err(bad)?,
        (None, Some(d)) => 1.0 - prob(&d).map_err(bad)?,
        (None, None) => return Err(bad("give one of P, SAMPLE and DROP".into())),
    };
    Ok(Box::new(RandomSample {
        threshold: threshold(p),
        active,
        has_reject: ports.noutputs() > 1,
        drops: 0,
        rng: 0x9e37_79b9_7f4a_7c15,
    }))
}

/// `p` as a 32-bit fixed-point threshold out of 2^32.
fn threshold(p: f64) -> u64 {
    (p * 4_294_967_296.0).round() as u64
}

/// Samples packets.
#[derive(Debug)]
pub struct RandomSample {
    threshold: u64,
    active: bool,
    has_reject: bool,
    drops: u64,
    rng: u64,
}

impl RandomSample {
    #[inline]
    fn next(&mut self) -> u64 {
        crate::rng::xorshift64star(&mut self.rng) >> 32
    }

    #[inline]
    fn classify(&mut self, _p: &mut Packet) -> Option<usize> {
        if !self.active || self.next() < self.threshold {
            return Some(0);
        }
        self.drops += 1;
        self.has_reject.then_some(1)
    }

    fn prob(&self) -> f64 {
        self.threshold as f64 / 4_294_967_296.0
    }
}

impl Element for RandomSample {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.classify(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.classify(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "sampling_prob" => Some(format!("{}", self.prob())),
            "drop_prob" => Some(format!("{}", 1.0 - self.prob())),
            "active" => Some(self.active.to_string()),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let v = value.trim();
        match handler {
            "sampling_prob" => self.threshold = threshold(prob(v)?),
            "drop_prob" => self.threshold = threshold(1.0 - prob(v)?),
            "active" => self.active = bool::from_arg(v)?,
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (sampling_prob, drop_prob, active)"
                ))
            }
        }
        Ok(())
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::rw("sampling_prob"),
            Handler::rw("drop_prob"),
            Handler::rw("active"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_runtime::testing::{make_element, Harness};

    fn send(h: &mut Harness, n: usize) {
        let p = Packet::from_slice(&udp(8)).unwrap();
        h.push_packets(0, (0..n).map(|_| p.duplicate()));
    }

    #[test]
    fn keeps_about_p_of_the_packets() {
        let mut h = Harness::push(&CLASS, "0.25", 1, 2);
        send(&mut h, 4000);
        let kept = h.take(0).len();
        let other = h.take(1).len();
        assert_eq!(kept + other, 4000);
        assert!((800..1200).contains(&kept), "{kept}");
        assert_eq!(h.stats().get("drops"), Some(other as u64));
    }

    #[test]
    fn extremes_inactive_and_drop_keyword() {
        let mut h = Harness::push(&CLASS, "DROP 1", 1, 1);
        send(&mut h, 100);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(100));
        h.write_handler("active", "false").unwrap();
        send(&mut h, 10);
        assert_eq!(h.take(0).len(), 10);
        h.write_handler("active", "true").unwrap();
        h.write_handler("sampling_prob", "1").unwrap();
        send(&mut h, 10);
        assert_eq!(h.take(0).len(), 10);
        assert!(h.write_handler("drop_prob", "1.5").is_err());
    }

    #[test]
    fn arguments_and_read_handlers() {
        let ports = PortInfo::default();
        let e = make_element(&CLASS, "SAMPLE 0.5", &ports).unwrap();
        assert_eq!(e.read_handler("sampling_prob").as_deref(), Some("0.5"));
        assert_eq!(e.read_handler("drop_prob").as_deref(), Some("0.5"));
        assert_eq!(e.read_handler("active").as_deref(), Some("true"));
        assert!(make_element(&CLASS, "", &ports).is_err());
        assert!(make_element(&CLASS, "2", &ports).is_err());
        assert!(make_element(&CLASS, "SAMPLE 0.1, DROP 0.1", &ports).is_err());
    }
}
