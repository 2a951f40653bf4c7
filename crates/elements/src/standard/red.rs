//! `RED`: Random Early Detection over a queue's length, in Floyd's
//! "gentle" variant (Click's `elements/aqm/red.cc`).

use super::queue::QueueLength;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Keyword, Manual, PortInfo,
    Stats,
};
use std::sync::Arc;

/// The `RED` class.
pub static CLASS: ElementClass = ElementClass {
    name: "RED",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "drops packets early, at random, as a queue fills (Random Early Detection)",
    synopsis: "RED(MIN_THRESH, MAX_THRESH, MAX_P [, QUEUES, STABILITY])",
    description: "Keeps a moving average of a Queue's length (weight 2^-STABILITY for each \
        packet it sees) and marks packets with a probability that grows with it: none \
        while the average is at most MIN_THRESH; from 0 to MAX_P between MIN_THRESH and \
        MAX_THRESH; from MAX_P to 1 between MAX_THRESH and twice MAX_THRESH (Floyd's \
        gentle RED); every packet above. Marks are spread out as in Click: a packet \
        is marked when the count since the last mark reaches floor(u / p), u a uniform \
        draw made at each mark. A \
        marked packet goes to output 1 if there is one, and is dropped and counted \
        otherwise. Place it before the Queue it watches (push) or after it (pull).\n\n\
        Without QUEUES, the Queue found first downstream of output 0 (or, if there is \
        none, upstream of input 0) is watched, as Click finds it by flow. \
        Differences from Click: bricks watches one Queue element (QUEUES, or the fourth \
        argument, names it; Click takes a space-separated list of any Storage and sums \
        their lengths), and refuses a flow search that finds several. The length is the \
        sum over every worker's copy of that Queue. While the queue is empty the average \
        decays one step per packet (Click decays it for the time it has been empty). \
        MAX_P reads back as the counter `max_p_ppm`, in millionths.",
    ports: "one input, agnostic; output 0 agnostic, optional output 1 push for marked packets",
    keywords: &[
        Keyword {
            name: "MIN_THRESH",
            ty: "unsigned",
            default: None,
            doc: "average length below which nothing is marked (write to change)",
        },
        Keyword {
            name: "MAX_THRESH",
            ty: "unsigned",
            default: None,
            doc: "average length at which the probability reaches MAX_P (write to change)",
        },
        Keyword {
            name: "MAX_P",
            ty: "real, 0 to 1",
            default: None,
            doc: "marking probability at MAX_THRESH (write to change)",
        },
        Keyword {
            name: "QUEUES",
            ty: "element name",
            default: None,
            doc: "the Queue whose length is averaged",
        },
        Keyword {
            name: "STABILITY",
            ty: "unsigned",
            default: Some("4"),
            doc: "-log2 of the averaging weight w_q (1 to 16)",
        },
    ],
    counters: &[
        ("drops", "packets marked (dropped, or sent to output 1)"),
        ("queue_size", "the queue's length now"),
        ("avg_queue_size", "the average length, whole packets"),
        ("min_thresh", "MIN_THRESH"),
        ("max_thresh", "MAX_THRESH"),
        ("max_p_ppm", "MAX_P in millionths"),
    ],
    example: "InfiniteSource(LIMIT 100) -> RED(5, 50, 0.02, QUEUES q) -> q :: Queue(200) \
        -> Unqueue -> Discard;",
    see_also: &["Queue"],
};

/// Fixed-point bits of queue lengths (Click's QUEUE_SCALE).
pub(crate) const SCALE: u32 = 10;
/// Probabilities are out of this.
pub(crate) const ONE: u64 = 1 << 16;

/// MAX_P as a fraction out of [`ONE`] (Click's 16-bit fixed point).
pub(crate) fn parse_max_p(text: &str) -> Result<u64, String> {
    let p = f64::from_arg(text.trim())?;
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("MAX_P {p} must be between 0 and 1"));
    }
    Ok((p * ONE as f64).round() as u64)
}

/// Whether MIN_THRESH and MAX_THRESH go together.
pub(crate) fn check(min: u64, max: u64) -> Result<(), String> {
    if min > max {
        return Err(format!("MIN_THRESH {min} is greater than MAX_THRESH {max}"));
    }
    if max > 1 << 30 {
        return Err(format!("MAX_THRESH {max} too large (at most 2^30)"));
    }
    Ok(())
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let min: u64 = args.read_mp("MIN_THRESH")?;
    let max: u64 = args.read_mp("MAX_THRESH")?;
    let p: String = args.read_mp("MAX_P")?;
    let max_p = parse_max_p(&p).map_err(|why| ArgError::new(format!("bad MAX_P: {why}")))?;
    check(min, max).map_err(ArgError::new)?;
    let queue = find_queue(args, true)?;
    let stability = read_stability(args, true)?;
    Ok(Box::new(Red::new(
        queue,
        ports.noutputs() > 1,
        min,
        max,
        max_p,
        stability,
    )))
}

/// The Queue whose length is averaged: the one QUEUES names (a keyword,
/// or also the next positional argument with `positional`), or else the
/// one found by flow, as Click's RED finds it.
pub(crate) fn find_queue(
    args: &mut Args<'_>,
    positional: bool,
) -> Result<Arc<QueueLength>, ArgError> {
    if args.has_keyword("QUEUES") || (positional && args.has_positional()) {
        args.read_shared_of_mp::<QueueLength>("QUEUES", "Queue")
    } else {
        queue_by_flow(args, true)
    }
}

/// The one Queue found first by flow: with `downstream`, downstream of
/// output 0 or, if there is none, upstream of input 0 (Click's RED, which
/// may push into its queue or pull from it); otherwise upstream of input 0
/// only (Click's CoDel, which pulls from it).
pub(crate) fn queue_by_flow(
    args: &Args<'_>,
    downstream: bool,
) -> Result<Arc<QueueLength>, ArgError> {
    let mut found = Vec::new();
    if downstream {
        found = args
            .shared_by_flow::<QueueLength>(0, false, &["Queue"])
            .map_err(|why| ArgError::new(format!("the Queue downstream: {why}")))?;
    }
    if found.is_empty() {
        found = args
            .shared_by_flow::<QueueLength>(0, true, &["Queue"])
            .map_err(|why| ArgError::new(format!("the Queue upstream: {why}")))?;
    }
    let place = if downstream {
        "downstream or upstream"
    } else {
        "upstream"
    };
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(ArgError::new(format!("no Queue {place} to watch"))
            .with_help("connect it to a Queue, or name one: QUEUES q")),
        n => Err(ArgError::new(format!(
            "{n} Queues found nearest by flow: bricks watches one"
        ))
        .with_help("name the one to watch: QUEUES q")),
    }
}

/// STABILITY (a keyword, or also positional with `positional`), 1 to 16,
/// 4 by default.
pub(crate) fn read_stability(args: &mut Args<'_>, positional: bool) -> Result<u32, ArgError> {
    let stability: u32 = if positional {
        args.read_p("STABILITY")?
    } else {
        args.read("STABILITY")?
    }
    .unwrap_or(4);
    if !(1..=16).contains(&stability) {
        return Err(ArgError::new(format!(
            "STABILITY {stability} out of range (1 to 16)"
        )));
    }
    Ok(stability)
}

/// Random Early Detection.
#[derive(Debug)]
pub struct Red {
    queue: Arc<QueueLength>,
    has_reject: bool,
    min: u64,
    max: u64,
    /// Out of [`ONE`].
    max_p: u64,
    stability: u32,
    /// Average queue length, scaled by 2^SCALE.
    avg: u64,
    /// Packets since the last mark; -1 below MIN_THRESH.
    count: i64,
    /// Uniform draw out of [`ONE`] for the current gap between marks.
    random: u64,
    rng: u64,
    drops: u64,
}

impl Red {
    /// A RED over `queue`, which it starts watching; `has_reject`: marked
    /// packets go to output 1. The caller has checked the thresholds
    /// ([`check`]) and MAX_P ([`parse_max_p`]).
    pub(crate) fn new(
        queue: Arc<QueueLength>,
        has_reject: bool,
        min: u64,
        max: u64,
        max_p: u64,
        stability: u32,
    ) -> Red {
        queue.watch();
        Red {
            queue,
            has_reject,
            min,
            max,
            max_p,
            stability,
            avg: 0,
            count: -1,
            random: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
            drops: 0,
        }
    }

    /// MIN_THRESH and MAX_THRESH.
    pub(crate) fn thresholds(&self) -> (u64, u64) {
        (self.min, self.max)
    }

    /// MAX_P, out of [`ONE`].
    pub(crate) fn max_p(&self) -> u64 {
        self.max_p
    }

    /// Sets MAX_P, out of [`ONE`] (at most [`ONE`]).
    pub(crate) fn set_max_p(&mut self, max_p: u64) {
        self.max_p = max_p.min(ONE);
    }

    /// The average queue length, scaled by 2^[`SCALE`].
    pub(crate) fn average_scaled(&self) -> u64 {
        self.avg
    }

    /// The watched queue's length now.
    pub(crate) fn queue_size(&self) -> u64 {
        self.queue.get()
    }

    /// Packets marked so far.
    pub(crate) fn drops(&self) -> u64 {
        self.drops
    }

    /// xorshift64* (Vigna), 16 bits.
    #[inline]
    fn draw(&mut self) -> u64 {
        crate::rng::xorshift64star(&mut self.rng) >> 48
    }

    /// Marking probability out of [`ONE`] for the scaled average `a`
    /// above MIN_THRESH and at most twice MAX_THRESH.
    #[inline]
    fn probability(&self, a: u64) -> u64 {
        let (min, max) = (self.min << SCALE, self.max << SCALE);
        if a <= max {
            // max > min here, as min < a <= max.
            self.max_p * (a - min) / (max - min)
        } else {
            self.max_p + (ONE - self.max_p) * (a - max) / max
        }
    }

    /// Updates the average with the queue's length and says whether to
    /// mark the packet.
    #[inline]
    fn should_drop(&mut self) -> bool {
        let s = self.queue.get().min(1 << 40) << SCALE;
        self.avg = if s >= self.avg {
            self.avg + ((s - self.avg) >> self.stability)
        } else {
            self.avg - ((self.avg - s) >> self.stability)
        };
        let a = self.avg;
        if a <= self.min << SCALE {
            self.count = -1;
            return false;
        }
        if self.max == 0 || a > (self.max << SCALE) * 2 {
            self.count = -1;
            self.drops += 1;
            return true;
        }
        self.count += 1;
        let p = self.probability(a);
        if self.count > 0 && p > 0 && self.count as u64 >= self.random / p {
            self.count = 0;
            self.random = self.draw();
            self.drops += 1;
            return true;
        }
        if self.count == 0 {
            self.random = self.draw();
        }
        false
    }

    #[inline]
    fn verdict(&mut self) -> Option<usize> {
        if !self.should_drop() {
            Some(0)
        } else if self.has_reject {
            Some(1)
        } else {
            None
        }
    }
}

impl Element for Red {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |_| self.verdict());
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |_| self.verdict());
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
        s.counter("queue_size", self.queue.get());
        s.counter("avg_queue_size", self.avg >> SCALE);
        s.counter("min_thresh", self.min);
        s.counter("max_thresh", self.max);
        s.counter("max_p_ppm", self.max_p * 1_000_000 / ONE);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let (mut min, mut max) = (self.min, self.max);
        match handler {
            "min_thresh" => min = u64::from_arg(value.trim())?,
            "max_thresh" => max = u64::from_arg(value.trim())?,
            "max_p" => {
                self.max_p = parse_max_p(value)?;
                return Ok(());
            }
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (RED has min_thresh, max_thresh, max_p)"
                ))
            }
        }
        check(min, max)?;
        (self.min, self.max) = (min, max);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{FixedRefs, Packet, Processing};
    use bricks_runtime::testing::Harness;

    /// A 60-byte IPv4/UDP frame tagged in its last byte.
    fn udp(tag: u8) -> Packet {
        let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00];
        f.extend([
            0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f.extend([0x04, 0xd2, 0x16, 0x2e, 0, 26, 0, 0]);
        f.resize(60, 0);
        f[59] = tag;
        Packet::from_slice(&f).unwrap()
    }

    fn red(args: &str, outputs: usize) -> (Harness, Arc<QueueLength>) {
        let q = Arc::new(QueueLength::default());
        let refs = FixedRefs(vec![("q".into(), "Queue", q.clone() as _)]);
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; outputs],
        };
        let h = Harness::with_refs(&CLASS, args, ports, &refs).unwrap();
        (h, q)
    }

    #[test]
    fn short_queue_passes_everything() {
        let (mut h, q) = red("5, 50, 0.02, q", 1);
        q.change(3);
        h.push_packets(0, (0..200).map(|i| udp(i as u8)));
        assert_eq!(h.take(0).len(), 200);
        assert_eq!(h.stats().get("drops"), Some(0));
        assert_eq!(h.stats().get("queue_size"), Some(3));
        assert_eq!(h.stats().get("avg_queue_size"), Some(2));
    }

    #[test]
    fn long_queue_drops_everything() {
        // Twice MAX_THRESH and more: every packet once the average is there.
        let (mut h, q) = red("5, 50, 0.02, QUEUES q, STABILITY 1", 2);
        q.change(150);
        h.push_packets(0, (0..100).map(|i| udp(i as u8)));
        let (passed, marked) = (h.take(0).len(), h.take(1).len());
        assert_eq!(passed + marked, 100);
        assert!(passed <= 4 && marked >= 96, "{passed} {marked}");
        assert_eq!(h.stats().get("drops"), Some(marked as u64));
    }

    #[test]
    fn between_thresholds_drops_some() {
        // Average held at 30 of 10..50 with MAX_P 0.5: p_b is 0.25. As in
        // Click, a mark comes when the count reaches floor(u / p_b), u
        // uniform in [0, 1): gaps of 1 (half the time), 2 or 3, a mean of
        // 1.75, so 4 packets in 7 are marked.
        let (mut h, q) = red("10, 50, 0.5, q, 1", 1);
        q.change(30);
        h.push_packets(0, (0..4000).map(|i| udp(i as u8)));
        let passed = h.take(0).len() as u64;
        let drops = h.stats().get("drops").unwrap();
        assert_eq!(passed + drops, 4000);
        assert!((2000..=2550).contains(&drops), "drops {drops}");
        // Emptying the queue brings the average down and marking stops.
        q.change(-30);
        h.push_packets(0, (0..100).map(|i| udp(i as u8)));
        let before = h.stats().get("drops").unwrap();
        h.push_packets(0, (0..100).map(|i| udp(i as u8)));
        assert_eq!(h.stats().get("drops"), Some(before));
    }

    #[test]
    fn handlers_change_parameters() {
        let (h, _q) = red("5, 50, 0.02, q", 1);
        assert_eq!(h.stats().get("max_p_ppm"), Some(20_004));
        h.write_handler("max_thresh", "100").unwrap();
        h.write_handler("min_thresh", "20").unwrap();
        h.write_handler("max_p", "0.1").unwrap();
        let s = h.stats();
        assert_eq!(s.get("min_thresh"), Some(20));
        assert_eq!(s.get("max_thresh"), Some(100));
        assert!(h.write_handler("min_thresh", "200").is_err());
        assert!(h.write_handler("max_p", "1.5").is_err());
        assert!(h.write_handler("drops", "0").is_err());
        assert_eq!(h.stats().get("min_thresh"), Some(20));
    }

    #[test]
    fn configuration_errors() {
        let refs = FixedRefs(vec![("c".into(), "Counter", Arc::new(0u8) as _)]);
        let try_make = |args: &str| {
            bricks_runtime::testing::make_element_with_refs(
                &CLASS,
                args,
                &Default::default(),
                &refs,
            )
            .map(|_| ())
        };
        assert!(try_make("5, 50, 0.02").unwrap_err().contains("no Queue"));
        assert!(try_make("5, 50, 0.02, c")
            .unwrap_err()
            .contains("not a Queue"));
        assert!(try_make("5, 50, 0.02, nope").is_err());
        let (_, q) = red("5, 50, 0.02, q", 1);
        let refs = FixedRefs(vec![("q".into(), "Queue", q as _)]);
        for bad in [
            "50, 5, 0.02, q",
            "5, 50, 2, q",
            "5, 50, 0.02, q, 0",
            "5, 50, 0.02, q, 17",
        ] {
            let e = bricks_runtime::testing::make_element_with_refs(
                &CLASS,
                bad,
                &Default::default(),
                &refs,
            );
            assert!(e.is_err(), "{bad}");
        }
    }
}
