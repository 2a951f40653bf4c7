//! `AdaptiveRED`: RED whose MAX_P follows the load (Floyd, Gummadi and
//! Shenker, "Adaptive RED: An Algorithm for Increasing the Robustness of
//! RED's Active Queue Management", 2001), as Click's
//! `elements/aqm/adaptivered.cc`: the RED of `standard/red.rs` with its
//! thresholds set around a target queue length, and a timer that moves
//! MAX_P every half second, additively up and multiplicatively down.

use crate::standard::red::{self, Red, ONE, SCALE};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats,
};
use bricks_packet::Timestamp;

/// The `AdaptiveRED` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AdaptiveRED",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "drops packets early, at random, adapting its drop probability to the load \
        (Adaptive RED)",
    synopsis: "AdaptiveRED(TARGET, MAX_P [, QUEUES, STABILITY])",
    description: "RED (see RED) with MIN_THRESH set to TARGET/2 and MAX_THRESH to \
        TARGET + TARGET/2 (TARGET is raised to 10 if smaller, as in Click), whose MAX_P \
        adapts to the load (Floyd, Gummadi and Shenker 2001): every 0.5 s, if the \
        average queue length is below the middle of the thresholds (TARGET) and MAX_P \
        is above 0.01, MAX_P is multiplied by 0.9; if the average is above it and MAX_P \
        is below 0.5, MAX_P grows by 0.01 or by a quarter of itself, whichever is less. \
        MAX_P so stays between about 0.009 and 0.51. As in Click, the average is the \
        one RED keeps, updated as packets pass, and the target is the middle of the \
        thresholds where the paper takes a band from 40% to 60% of the way between \
        them. Marked packets go to output 1 if there is one, and are dropped and \
        counted otherwise.\n\n\
        Differences from Click: those of RED (one Queue element watched, found by flow \
        when QUEUES is not given; the counters `queue_size`, `avg_queue_size` in whole \
        packets, `min_thresh`, `max_thresh` and `max_p_ppm` in millionths). The write \
        handlers `min_thresh`, `max_thresh` and `max_p` set those parameters as RED's \
        do (Click rewrites AdaptiveRED's own arguments with them, resetting MAX_P); the \
        `max_p` read handler gives the current, adapted MAX_P (Click's reads the \
        configuration's MAX_P keyword or third argument), and `stats` reads as Click's \
        RED `stats`; there is no `queues` handler, and `config` shows the arguments as \
        written (Click's shows the current thresholds and MAX_P). The first \
        adaptation comes 0.5 s after the router starts (in a run on a packet trace, \
        0.5 s after the first packet); a run that stalls does not catch up missed \
        adaptations.",
    ports: "one input, agnostic; output 0 agnostic, optional output 1 push for marked packets",
    keywords: &[
        Keyword {
            name: "TARGET",
            ty: "unsigned",
            default: None,
            doc: "target average queue length, packets (at least 10)",
        },
        Keyword {
            name: "MAX_P",
            ty: "real, 0 to 1",
            default: None,
            doc: "initial marking probability at MAX_THRESH",
        },
        Keyword {
            name: "QUEUES",
            ty: "element name",
            default: None,
            doc: "the Queue whose length is averaged (keyword only)",
        },
        Keyword {
            name: "STABILITY",
            ty: "unsigned",
            default: Some("4"),
            doc: "-log2 of the averaging weight w_q, 1 to 16 (keyword only)",
        },
    ],
    counters: &[
        ("drops", "packets marked (dropped, or sent to output 1)"),
        ("queue_size", "the queue's length now"),
        ("avg_queue_size", "the average length, whole packets"),
        ("min_thresh", "MIN_THRESH"),
        ("max_thresh", "MAX_THRESH"),
        ("max_p_ppm", "the current MAX_P in millionths"),
    ],
    example: "InfiniteSource(LIMIT 100) -> a :: AdaptiveRED(20, 0.02, QUEUES q) \
        -> q :: Queue(200) -> Unqueue -> Discard;",
    see_also: &["RED", "Queue"],
};

/// How often MAX_P adapts, nanoseconds (Click's ADAPTIVE_INTERVAL).
const ADAPT_INTERVAL: u64 = 500_000_000;
/// 0.01 out of [`ONE`] (Click's ONE_HUNDREDTH).
const ONE_HUNDREDTH: u64 = 655;
/// 0.9 out of [`ONE`] (Click's NINE_TENTHS).
const NINE_TENTHS: u64 = 58982;
/// MAX_P grows while below this: 0.5.
const HALF: u64 = ONE / 2;

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let target: u64 = args.read_mp("TARGET")?;
    let p: String = args.read_mp("MAX_P")?;
    let max_p = red::parse_max_p(&p).map_err(|why| ArgError::new(format!("bad MAX_P: {why}")))?;
    if !args.has_keyword("QUEUES") {
        // Asked for by name, so that errors list it among the arguments.
        let _: Option<String> = args.read("QUEUES")?;
    }
    let queue = red::find_queue(args, false)?;
    let stability = red::read_stability(args, false)?;
    let target = target.max(10);
    let (min, max) = (target / 2, target + target / 2);
    red::check(min, max).map_err(|why| ArgError::new(format!("TARGET {target}: {why}")))?;
    Ok(Box::new(AdaptiveRed {
        red: Red::new(queue, ports.noutputs() > 1, min, max, max_p, stability),
        next_adapt: None,
    }))
}

/// RED with MAX_P adapted to the load.
#[derive(Debug)]
pub struct AdaptiveRed {
    red: Red,
    /// When MAX_P next adapts; `None` until the clock is known.
    next_adapt: Option<u64>,
}

impl AdaptiveRed {
    /// Asks for the first adaptation, once the clock reads a real time
    /// (a run on a packet trace starts at 0 until its first packet).
    #[inline]
    fn arm(&mut self, cx: &mut Context<'_>) {
        if self.next_adapt.is_none() && cx.now().0 != 0 {
            let at = cx.now().0.saturating_add(ADAPT_INTERVAL);
            self.next_adapt = Some(at);
            cx.schedule_at(Timestamp(at));
        }
    }

    /// One step of Adaptive RED (Click's `run_timer`): MAX_P down by a
    /// tenth while the average is below the target, up by
    /// min(0.01, MAX_P/4) while it is above.
    fn adapt(&mut self) {
        let (min, max) = self.red.thresholds();
        let avg = self.red.average_scaled() >> SCALE;
        let part = (max - min) / 2;
        let p = self.red.max_p();
        if avg < min + part && p > ONE_HUNDREDTH {
            self.red.set_max_p((p * NINE_TENTHS) >> 16);
        } else if avg > max - part && p < HALF {
            self.red.set_max_p(p + ONE_HUNDREDTH.min(p / 4));
        }
    }
}

/// A fixed-point value with `bits` fraction bits as Click's
/// `cp_unparse_real2` writes it: the fewest decimals that read back as the
/// same value.
fn unparse_fixed(value: u64, bits: u32) -> String {
    let whole = value >> bits;
    let frac = value & ((1 << bits) - 1);
    if frac == 0 {
        return whole.to_string();
    }
    let x = value as f64 / (1u64 << bits) as f64;
    for digits in 1..=9 {
        let s = format!("{x:.digits$}");
        let back: f64 = s.parse().unwrap_or(0.0);
        if (back * (1u64 << bits) as f64).round() as u64 == value {
            return s.trim_end_matches('0').to_string();
        }
    }
    format!("{x:.9}")
}

impl Element for AdaptiveRed {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.arm(cx);
    }

    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.arm(cx);
        self.red.push(port, batch, cx);
    }

    fn pull(&mut self, port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        self.arm(cx);
        self.red.pull(port, out, max, cx);
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        let now = cx.now().0;
        let Some(due) = self.next_adapt else {
            return;
        };
        if now < due {
            return;
        }
        self.adapt();
        // Click reschedules from the due time; after a stall, the next
        // step comes a whole interval later rather than at once.
        let mut next = due.saturating_add(ADAPT_INTERVAL);
        if next <= now {
            next = now.saturating_add(ADAPT_INTERVAL);
        }
        self.next_adapt = Some(next);
        cx.schedule_at(Timestamp(next));
    }

    fn stats(&self, s: &mut Stats) {
        self.red.stats(s);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "max_p" => Some(unparse_fixed(self.red.max_p(), 16)),
            "stats" => Some(format!(
                "{} current queue\n{} avg queue\n{} drops\n",
                self.red.queue_size(),
                unparse_fixed(self.red.average_scaled(), SCALE),
                self.red.drops()
            )),
            _ => None,
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "min_thresh" | "max_thresh" | "max_p" => self.red.write_handler(handler, value),
            _ => Err(format!(
                "no write handler `{handler}` (AdaptiveRED has min_thresh, max_thresh, max_p)"
            )),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::rw("min_thresh"),
            Handler::rw("max_thresh"),
            Handler::rw("max_p"),
            Handler::r("stats"),
        ];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::queue::QueueLength;
    use bricks_element::{FixedRefs, Packet, Processing};
    use bricks_runtime::testing::{make_element_with_refs, Harness};
    use std::sync::Arc;

    const MS: u64 = 1_000_000;
    /// The clock's start: 1000 s after the epoch.
    const T0: u64 = 1_000_000 * MS;

    fn refs() -> (FixedRefs, Arc<QueueLength>) {
        let q = Arc::new(QueueLength::default());
        (FixedRefs(vec![("q".into(), "Queue", q.clone() as _)]), q)
    }

    /// An AdaptiveRED started at T0 over a queue of `len` packets.
    fn ared(args: &str, len: i64) -> (Harness, Arc<QueueLength>) {
        let (refs, q) = refs();
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        let mut h = Harness::with_refs(&CLASS, args, ports, &refs).unwrap();
        q.change(len);
        h.advance_to(Timestamp(T0));
        h.start();
        (h, q)
    }

    fn packets(n: usize) -> impl Iterator<Item = Packet> {
        (0..n).map(|_| Packet::from_slice(&[0; 60]).unwrap())
    }

    /// MAX_P in millionths after each of `steps` adaptations, with packets
    /// passing in between (they keep the average at the queue's length).
    fn adapt(h: &mut Harness, steps: u64) -> Vec<u64> {
        (0..steps)
            .map(|_| {
                h.push_packets(0, packets(20));
                h.take(0);
                let due = h.timers()[0];
                h.advance_to(due);
                assert_eq!(h.timers(), [Timestamp(due.0 + 500 * MS)]);
                h.stats().get("max_p_ppm").unwrap()
            })
            .collect()
    }

    #[test]
    fn thresholds_come_from_the_target() {
        let (h, _) = ared("25, 0.1, QUEUES q", 0);
        let s = h.stats();
        assert_eq!(
            (s.get("min_thresh"), s.get("max_thresh")),
            (Some(12), Some(37))
        );
        // Click raises a TARGET below 10 to 10.
        let (h, _) = ared("4, 0.1, QUEUES q", 0);
        let s = h.stats();
        assert_eq!(
            (s.get("min_thresh"), s.get("max_thresh")),
            (Some(5), Some(15))
        );
        assert_eq!(h.timers(), [Timestamp(T0 + 500 * MS)]);
    }

    #[test]
    fn max_p_rises_under_persistent_load_up_to_a_half() {
        // Target 20 (thresholds 10 and 30), queue held at 40.
        let (mut h, _q) = ared("20, 0.02, QUEUES q, STABILITY 1", 40);
        let ppm = adapt(&mut h, 100);
        // 0.02 + min(0.01, 0.02/4): Click's 16-bit fixed point.
        assert_eq!(ppm[0], (1311 + 1311 / 4) * 1_000_000 / 65536);
        assert!(ppm.windows(2).all(|w| w[0] <= w[1]), "{ppm:?}");
        // Additive steps of 0.01 at most once MAX_P passes 0.04.
        assert!(ppm.windows(2).all(|w| w[1] - w[0] <= 10_000), "{ppm:?}");
        let last = *ppm.last().unwrap();
        assert!((500_000..510_000).contains(&last), "{ppm:?}");
        let read: f64 = h.read_handler("max_p").unwrap().parse().unwrap();
        assert!((0.5..0.51).contains(&read), "{read}");
        assert!(h.stats().get("drops").unwrap() > 0);
    }

    #[test]
    fn max_p_falls_under_light_load_down_to_a_hundredth() {
        let (mut h, _q) = ared("20, 0.3, QUEUES q, STABILITY 1", 2);
        let ppm = adapt(&mut h, 100);
        assert_eq!(ppm[0], ((19661 * 58982) >> 16) * 1_000_000 / 65536);
        assert!(ppm.windows(2).all(|w| w[0] >= w[1]), "{ppm:?}");
        let last = *ppm.last().unwrap();
        assert!((8_900..=10_000).contains(&last), "{ppm:?}");
        assert_eq!(h.stats().get("drops"), Some(0));
    }

    #[test]
    fn max_p_holds_at_the_target_and_follows_the_load() {
        // The average creeps up to 21 * 1024 - 1 in fixed point: 20 whole
        // packets, the target, so MAX_P stays.
        let (mut h, q) = ared("20, 0.1, QUEUES q, STABILITY 1", 21);
        let ppm = adapt(&mut h, 10);
        assert!(ppm.iter().all(|&p| p == 100_006), "{ppm:?}");
        // Load, then none: up, then down again.
        q.change(29);
        let up = adapt(&mut h, 5);
        assert!(up[4] > 100_006, "{up:?}");
        q.change(-50);
        let down = adapt(&mut h, 5);
        assert!(down[4] < up[4], "{down:?}");
    }

    #[test]
    fn the_first_adaptation_waits_for_a_clock() {
        // A run on a packet trace starts its clock at 0.
        let (refs, _q) = refs();
        let mut h =
            Harness::with_refs(&CLASS, "20, 0.1, QUEUES q", Default::default(), &refs).unwrap();
        h.advance_to(Timestamp(0));
        h.start();
        assert!(h.timers().is_empty());
        h.advance_to(Timestamp(T0));
        h.push_packets(0, packets(1));
        assert_eq!(h.timers(), [Timestamp(T0 + 500 * MS)]);
        h.push_packets(0, packets(1));
        assert_eq!(h.timers().len(), 1);
        // A stalled run does not catch up: the next step is a whole
        // interval after the late one.
        h.advance_to(Timestamp(T0 + 5000 * MS));
        assert_eq!(h.timers(), [Timestamp(T0 + 5500 * MS)]);
    }

    #[test]
    fn handlers() {
        let (mut h, q) = ared("20, 0.02, QUEUES q, STABILITY 1", 40);
        assert_eq!(h.read_handler("max_p").unwrap(), "0.02");
        h.push_packets(0, packets(30));
        let stats = h.read_handler("stats").unwrap();
        assert!(stats.starts_with("40 current queue\n39.99"), "{stats}");
        assert!(stats.ends_with(" drops\n"), "{stats}");
        h.write_handler("max_p", "0.1").unwrap();
        assert_eq!(h.read_handler("max_p").unwrap(), "0.1");
        assert_eq!(h.stats().get("max_p_ppm"), Some(100_006));
        h.write_handler("min_thresh", "12").unwrap();
        assert_eq!(h.stats().get("min_thresh"), Some(12));
        assert!(h.write_handler("min_thresh", "100").is_err());
        assert!(h.write_handler("max_p", "2").is_err());
        let err = h.write_handler("target", "5").unwrap_err();
        assert!(err.contains("AdaptiveRED has"), "{err}");
        q.change(-40);
        assert!(h
            .read_handler("stats")
            .unwrap()
            .starts_with("0 current queue\n"));
    }

    #[test]
    fn bad_arguments_are_refused() {
        let (refs, _q) = refs();
        let try_make = |args: &str| {
            make_element_with_refs(&CLASS, args, &Default::default(), &refs).map(|_| ())
        };
        assert!(try_make("20, 0.1").unwrap_err().contains("no Queue"));
        for bad in [
            "20",
            "20, 1.5, QUEUES q",
            "20, -0.1, QUEUES q",
            "twenty, 0.1, QUEUES q",
            "20, 0.1, q",
            "20, 0.1, QUEUES q, STABILITY 0",
            "20, 0.1, QUEUES q, STABILITY 17",
            "20, 0.1, QUEUES q, 4",
            "2000000000, 0.1, QUEUES q",
            "20, 0.1, QUEUES nope",
        ] {
            assert!(try_make(bad).is_err(), "{bad}");
        }
        assert!(try_make("MAX_P 0.5, TARGET 30, STABILITY 2, QUEUES q").is_ok());
    }

    #[test]
    fn fixed_point_reads_back_as_click_writes_it() {
        assert_eq!(unparse_fixed(1311, 16), "0.02");
        assert_eq!(unparse_fixed(655, 16), "0.01");
        assert_eq!(unparse_fixed(1 << 16, 16), "1");
        assert_eq!(unparse_fixed(3 << 9, 10), "1.5");
        assert_eq!(unparse_fixed(0, 16), "0");
    }
}
