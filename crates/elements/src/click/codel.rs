//! `CoDel`: Controlled Delay active queue management (Nichols and
//! Jacobson, "Controlling Queue Delay", ACM Queue 10(5), 2012; RFC 8289),
//! as Click's `elements/aqm/codel.cc` places it: a pull element behind a
//! Queue, judging each packet by how long it sat there.
//!
//! The drop decisions follow RFC 8289 section 5 (its reference pseudocode)
//! where Click's code follows the older ACM Queue appendix: entry into the
//! dropping state as soon as the sojourn time has stayed above TARGET for
//! INTERVAL, and the Linux-derived starting count on re-entry.

use crate::standard::queue::QueueLength;
use crate::standard::red::queue_by_flow;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats,
};
use bricks_packet::ClickTime;
use std::sync::Arc;
use std::time::Duration;

/// The `CoDel` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CoDel",
    ports: "1/1",
    processing: "l/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "drops packets whose time in a queue stays above a target (CoDel, RFC 8289)",
    synopsis: "CoDel([TARGET, INTERVAL, QUEUES])",
    description: "Pulls packets from a Queue and drops some of them so that the time \
        packets spend in the queue (their sojourn time) comes back to TARGET: Controlled \
        Delay (Nichols and Jacobson 2012; RFC 8289). The sojourn time of a packet is the \
        router's time when CoDel pulls it minus its timestamp annotation, which a \
        SetTimestamp just before the Queue must set; packets whose annotation was never \
        set (its seconds are 0) pass and are not judged, as in Click. Once the sojourn \
        time has stayed at or above TARGET for INTERVAL (with more than one packet left \
        in the queue), CoDel drops a packet and enters its dropping state, where it \
        drops the packet at the head each time the next drop is due, due times spaced \
        INTERVAL/sqrt(count) apart, count being the drops of this dropping state; a \
        dropped packet is replaced by the next one in the queue, so a pull still gets \
        as many packets as it asked for while the queue has them. A packet below TARGET, or an empty queue, ends the dropping \
        state; entering it again soon after (within 16 INTERVALs) starts the count \
        from the drops made since the previous entry. TARGET and INTERVAL are times in \
        seconds with optional units (`5ms`), as Click's code reads them (Click's \
        manual speaks of integer milliseconds, but `CoDel(5, 100)` means 5 and 100 \
        seconds there too).\n\n\
        Without QUEUES, the Queue found first upstream of the input is the one whose \
        length the `stats` handler shows, as Click finds it by flow.\n\n\
        Differences from Click: the drop rules are RFC 8289's where Click's code \
        follows the 2012 appendix: the dropping state is entered once the sojourn \
        time has been above TARGET for INTERVAL (Click waits a further INTERVAL unless \
        it dropped recently), the count on re-entry within 16 INTERVALs is the drops \
        since the previous entry (Click: the last count minus 2, within one INTERVAL), \
        a packet is not counted above TARGET when at most one packet stays behind it \
        (RFC 8289's `bytes() <= maxpacket`, in packets: bricks' queues count packets), \
        and INTERVAL/sqrt(count) is computed in nanoseconds (Click: milliseconds \
        times 16 over an integer square root). The sojourn time is read from the \
        timestamp annotation (bricks packets have one timestamp; Click reads its \
        first-timestamp annotation). bricks watches one Queue element (Click: a list \
        of Storage elements), and `queues` is answered only when QUEUES names it. \
        TARGET and INTERVAL are at most an hour and INTERVAL more than 0. The \
        handlers `target` and `interval`, which Click's manual names, are the same as \
        `codel_target` and `codel_interval`, which its code defines.",
    ports: "one pull input, one pull output",
    keywords: &[
        Keyword {
            name: "TARGET",
            ty: "time",
            default: Some("5ms"),
            doc: "sojourn time to keep the queue at; positional",
        },
        Keyword {
            name: "INTERVAL",
            ty: "time",
            default: Some("100ms"),
            doc: "how long the sojourn time must stay above TARGET before a drop, and \
                the first spacing of drops (more than 0); positional",
        },
        Keyword {
            name: "QUEUES",
            ty: "element name",
            default: None,
            doc: "the Queue whose length `stats` shows (default: found upstream)",
        },
    ],
    counters: &[("drops", "packets dropped")],
    example: "InfiniteSource(LIMIT 100) -> SetTimestamp -> q :: Queue(200) \
        -> c :: CoDel(5ms, 100ms) -> Unqueue -> Discard;",
    see_also: &["Queue", "SetTimestamp", "RED", "AdaptiveRED"],
};

/// Longest TARGET or INTERVAL taken.
const MAX_TIME: Duration = Duration::from_secs(3600);
/// RFC 8289: re-entering the dropping state within this many INTERVALs
/// keeps the drop rate that controlled the queue the last time.
const REENTRY_INTERVALS: u64 = 16;
/// A pull replaces dropped packets with more pulls; this bounds how many
/// batches one pull takes in, so that it ends whatever is upstream.
const MAX_ROUNDS: usize = 64;

fn parse_time(key: &str, text: &str) -> Result<u64, String> {
    let d = Duration::from_arg(text.trim()).map_err(|why| format!("bad {key}: {why}"))?;
    if d > MAX_TIME {
        return Err(format!("{key} {text} is longer than an hour"));
    }
    Ok(d.as_nanos() as u64)
}

fn parse_interval(text: &str) -> Result<u64, String> {
    let ns = parse_time("INTERVAL", text)?;
    if ns == 0 {
        return Err("INTERVAL must be more than 0".into());
    }
    Ok(ns)
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let target_text: Option<String> = args.read_p("TARGET")?;
    let interval_text: Option<String> = args.read_p("INTERVAL")?;
    let target = match &target_text {
        Some(t) => parse_time("TARGET", t).map_err(ArgError::new)?,
        None => 5_000_000,
    };
    let interval = match &interval_text {
        Some(t) => parse_interval(t).map_err(ArgError::new)?,
        None => 100_000_000,
    };
    let queues: Option<String> = args.read("QUEUES")?;
    let (queue, queue_name) = match queues {
        Some(list) => {
            let names: Vec<&str> = list.split_whitespace().collect();
            let [name] = names[..] else {
                return Err(ArgError::new(format!(
                    "QUEUES names {} elements: bricks watches one Queue",
                    names.len()
                ))
                .with_help("name one Queue: QUEUES q"));
            };
            let q = args
                .shared_of_name::<QueueLength>(name, &["Queue"])
                .map_err(|why| ArgError::new(format!("QUEUES {why}")))?;
            (q, Some(name.to_string()))
        }
        None => (queue_by_flow(args, false)?, None),
    };
    queue.watch();
    Ok(Box::new(CoDel {
        queue,
        queue_name,
        target,
        interval,
        target_text: target_text
            .map(|t| t.trim().to_string())
            .unwrap_or_default(),
        interval_text: interval_text
            .map(|t| t.trim().to_string())
            .unwrap_or_default(),
        first_above_time: 0,
        drop_next: 0,
        count: 0,
        lastcount: 0,
        dropping: false,
        next: Next::Fresh,
        drops: 0,
    }))
}

/// Where the next packet pulled falls in RFC 8289's `dequeue()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// It starts a dequeue: the previous packet was delivered.
    Fresh,
    /// It replaces a packet dropped in the dropping state (the `while`
    /// loop).
    AfterDrop,
    /// It replaces the packet whose drop entered the dropping state: it
    /// is delivered whatever its sojourn time.
    AfterEntry,
}

/// Controlled Delay.
#[derive(Debug)]
pub struct CoDel {
    queue: Arc<QueueLength>,
    /// The Queue as QUEUES names it.
    queue_name: Option<String>,
    /// TARGET, nanoseconds.
    target: u64,
    /// INTERVAL, nanoseconds (more than 0).
    interval: u64,
    /// TARGET and INTERVAL as written (empty when not given), for Click's
    /// keyword read handlers.
    target_text: String,
    interval_text: String,
    /// When the sojourn time will have been above TARGET for INTERVAL;
    /// 0 while it is below.
    first_above_time: u64,
    /// When the next drop is due in the dropping state.
    drop_next: u64,
    /// Drops in this dropping state (the control law's count).
    count: u32,
    /// `count` when the dropping state was last entered.
    lastcount: u32,
    dropping: bool,
    next: Next,
    drops: u64,
}

impl CoDel {
    /// RFC 8289's `dodequeue()` for a packet pulled at `now` with
    /// `backlog` packets left behind it: whether it may be dropped, the
    /// sojourn time having been above TARGET for INTERVAL.
    #[inline]
    fn ok_to_drop(&mut self, stamp: u64, backlog: u64, now: u64) -> bool {
        if stamp < 1_000_000_000 {
            // Click: an annotation whose seconds are 0 was never set.
            return false;
        }
        let sojourn = now.saturating_sub(stamp);
        if sojourn < self.target || backlog <= 1 {
            self.first_above_time = 0;
            false
        } else if self.first_above_time == 0 {
            self.first_above_time = now.saturating_add(self.interval);
            false
        } else {
            now >= self.first_above_time
        }
    }

    /// RFC 8289's control law: `t + INTERVAL / sqrt(count)`.
    #[inline]
    fn control_law(&self, t: u64) -> u64 {
        let gap = self.interval as f64 / f64::from(self.count.max(1)).sqrt();
        t.saturating_add(gap as u64)
    }

    /// RFC 8289's `dequeue()`, one packet at a time: the packet stamped
    /// `stamp` was pulled at `now` with `backlog` packets behind it.
    /// Returns whether to drop it (the next packet pulled then replaces
    /// it).
    #[inline]
    fn judge(&mut self, stamp: u64, backlog: u64, now: u64) -> bool {
        let ok = self.ok_to_drop(stamp, backlog, now);
        let drop = match self.next {
            Next::Fresh if self.dropping => {
                if !ok {
                    self.dropping = false;
                    false
                } else {
                    now >= self.drop_next
                }
            }
            Next::Fresh => {
                if ok {
                    self.enter(now);
                    self.next = Next::AfterEntry;
                    self.drops += 1;
                    return true;
                }
                false
            }
            Next::AfterDrop => {
                if !ok {
                    self.dropping = false;
                    false
                } else {
                    self.drop_next = self.control_law(self.drop_next);
                    now >= self.drop_next
                }
            }
            Next::AfterEntry => false,
        };
        if drop {
            self.count = self.count.saturating_add(1);
            self.drops += 1;
            self.next = Next::AfterDrop;
        } else {
            self.next = Next::Fresh;
        }
        drop
    }

    /// Enters the dropping state at `now` (RFC 8289: if the queue went
    /// above TARGET again soon after it last went below, the drop rate
    /// that controlled it then is a good start).
    fn enter(&mut self, now: u64) {
        self.dropping = true;
        let delta = self.count.wrapping_sub(self.lastcount);
        let since = (now as i64).wrapping_sub(self.drop_next as i64);
        self.count = if delta > 1 && since < (REENTRY_INTERVALS * self.interval) as i64 {
            delta
        } else {
            1
        };
        self.drop_next = self.control_law(now);
        self.lastcount = self.count;
    }

    /// A pull found the queue empty: RFC 8289's `dodequeue()` returning
    /// no packet.
    fn empty(&mut self) {
        self.first_above_time = 0;
        if self.next != Next::AfterEntry {
            self.dropping = false;
        }
        self.next = Next::Fresh;
    }

    /// Judges the packets of `b`, pulled at `now`, in order; keeps those
    /// delivered.
    #[inline]
    fn judge_batch(&mut self, b: &mut Batch, now: u64) {
        let left = self.queue.get();
        let mut behind = b.len() as u64;
        b.retain(|p: &mut Packet| {
            behind -= 1;
            !self.judge(p.anno().timestamp.0, left + behind, now)
        });
    }

    fn set(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let text = value.trim();
        match handler {
            "codel_target" | "target" => {
                self.target = parse_time("TARGET", text)?;
                self.target_text = text.to_string();
            }
            "codel_interval" | "interval" => {
                self.interval = parse_interval(text)?;
                self.interval_text = text.to_string();
            }
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (CoDel has codel_target, codel_interval)"
                ))
            }
        }
        Ok(())
    }
}

impl Element for CoDel {
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let now = cx.now().0;
        let mut need = max.min(out.remaining());
        for _ in 0..MAX_ROUNDS {
            if need == 0 {
                break;
            }
            let mut b = Batch::new();
            cx.pull(0, &mut b, need);
            let got = b.len();
            self.judge_batch(&mut b, now);
            let kept = b.len();
            out.append(&mut b);
            if got < need {
                // The queue ran dry: the next dequeue finds nothing.
                self.empty();
                break;
            }
            need -= kept;
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        Some(match handler {
            "codel_target" | "target" => self.target_text.clone(),
            "codel_interval" | "interval" => self.interval_text.clone(),
            "stats" => format!("{} current queue\n{} drops\n", self.queue.get(), self.drops),
            "queues" => format!("{}\n", self.queue_name.as_deref()?),
            "config" => format!(
                "{}s, {} s, ",
                ClickTime(i128::from(self.target)),
                ClickTime(i128::from(self.interval))
            ),
            _ => return None,
        })
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.set(handler, value)
    }

    fn config_keyword(&self, handler: &str) -> Option<&'static str> {
        match handler {
            "codel_target" | "target" => Some("0 TARGET"),
            "codel_interval" | "interval" => Some("1 INTERVAL"),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const NAMED: &[Handler] = &[
            Handler::rw("codel_target"),
            Handler::rw("codel_interval"),
            Handler::rw("target"),
            Handler::rw("interval"),
            Handler::r("stats"),
            Handler::r("config"),
            Handler::r("queues"),
        ];
        if self.queue_name.is_some() {
            NAMED
        } else {
            &NAMED[..6]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{taken_from, FixedRefs, Processing};
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element_with_refs, Harness};

    const MS: u64 = 1_000_000;
    /// The clock's start: 1000 s after the epoch.
    const T0: u64 = 1_000_000 * MS;

    fn pull_ports() -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        }
    }

    fn refs() -> (FixedRefs, Arc<QueueLength>) {
        let q = Arc::new(QueueLength::default());
        let refs = FixedRefs(vec![
            ("q".into(), "Queue", q.clone() as _),
            ("c".into(), "Counter", Arc::new(0u8) as _),
        ]);
        (refs, q)
    }

    /// A CoDel with TARGET 5 ms and INTERVAL 100 ms, to drive by hand.
    fn codel() -> Box<dyn Element> {
        let (refs, _q) = refs();
        make_element_with_refs(&CLASS, "5ms, 100ms, QUEUES q", &pull_ports(), &refs).unwrap()
    }

    /// One RFC 8289 `dequeue()` at `now` from a long queue whose packets
    /// all waited `sojourn`: how many it dropped before delivering one.
    fn dequeue(c: &mut CoDel, now: u64, sojourn: u64) -> u32 {
        let mut drops = 0;
        while c.judge(now - sojourn, 100, now) {
            drops += 1;
            assert!(drops < 10_000, "never delivers");
        }
        drops
    }

    /// A 60-byte frame tagged `tag`, stamped `stamp`.
    fn stamped(tag: u8, stamp: u64) -> Packet {
        let mut p = Packet::from_slice(&[tag; 60]).unwrap();
        p.anno_mut().timestamp = Timestamp(stamp);
        p
    }

    #[test]
    fn waits_a_whole_interval_above_target_before_dropping() {
        let mut e = codel();
        let c = taken_from::<CoDel>(&mut *e).unwrap();
        for t in 0..100 {
            assert_eq!(dequeue(c, T0 + t * MS, 10 * MS), 0, "at {t} ms");
        }
        assert!(!c.dropping);
        assert_eq!(dequeue(c, T0 + 100 * MS, 10 * MS), 1);
        assert!(c.dropping);
        assert_eq!(c.count, 1);

        // A packet below TARGET starts the wait again.
        let mut e = codel();
        let c = taken_from::<CoDel>(&mut *e).unwrap();
        for t in 0..60 {
            assert_eq!(dequeue(c, T0 + t * MS, 10 * MS), 0);
        }
        assert_eq!(dequeue(c, T0 + 60 * MS, 4 * MS), 0);
        for t in 61..161 {
            assert_eq!(dequeue(c, T0 + t * MS, 10 * MS), 0, "at {t} ms");
        }
        assert_eq!(dequeue(c, T0 + 161 * MS, 10 * MS), 1);
        // At TARGET exactly counts as above (RFC 8289: below is `<`).
        let mut e = codel();
        let c = taken_from::<CoDel>(&mut *e).unwrap();
        assert_eq!(dequeue(c, T0, 5 * MS), 0);
        assert_eq!(dequeue(c, T0 + 100 * MS, 5 * MS), 1);
    }

    #[test]
    fn drops_are_spaced_interval_over_sqrt_count() {
        let mut e = codel();
        let c = taken_from::<CoDel>(&mut *e).unwrap();
        const STEP: u64 = MS / 10;
        let mut drops_at = Vec::new();
        let mut t = T0;
        while t <= T0 + 2000 * MS {
            for _ in 0..dequeue(c, t, 10 * MS) {
                drops_at.push(t);
            }
            t += STEP;
        }
        // Entered at 100 ms; the k-th drop after it is due at
        // 100 ms + 100 ms * (1/sqrt(1) + ... + 1/sqrt(k)), and made at
        // the first dequeue at or after that.
        assert_eq!(drops_at[0], T0 + 100 * MS);
        let mut due = (T0 + 100 * MS) as f64;
        for (k, &at) in drops_at.iter().enumerate().skip(1) {
            due += 100.0 * MS as f64 / (k as f64).sqrt();
            let late = at as f64 - due;
            assert!(
                (-1.0..STEP as f64 + 1.0).contains(&late),
                "drop {k} at {at}, due {due}"
            );
        }
        // 2 s in: 100 ms * sum(1/sqrt(k)), about 200 ms * (sqrt(k) - 0.73),
        // reaches 1.9 s at k = 104, the 105th drop.
        assert_eq!(drops_at.len(), 105);
        assert_eq!(c.count as usize, drops_at.len());
        // The gaps shrink as the count grows.
        let gaps: Vec<u64> = drops_at.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps[0] == 100 * MS && gaps[1] > 70 * MS && gaps[1] < 71 * MS);
        // 100 ms / sqrt(104), to a step.
        let last = *gaps.last().unwrap();
        assert!((9_700_000..9_900_000).contains(&last), "{last}");
    }

    #[test]
    fn leaves_below_target_and_reenters_at_the_last_rate() {
        let mut e = codel();
        let c = taken_from::<CoDel>(&mut *e).unwrap();
        let mut drops = 0;
        // Drops at 100, 200, 270.7, 328.4 and 378.4 ms.
        for t in 0..=390 {
            drops += dequeue(c, T0 + t * MS, 10 * MS);
        }
        assert_eq!((drops, c.count), (5, 5));
        assert!(c.dropping);
        // Below TARGET: out of the dropping state, and no drops however
        // long it stays there.
        assert_eq!(dequeue(c, T0 + 391 * MS, 2 * MS), 0);
        assert!(!c.dropping);
        for t in 392..500 {
            assert_eq!(dequeue(c, T0 + t * MS, 2 * MS), 0);
        }
        // Above again: a whole INTERVAL first, then the drop that enters
        // the state, which starts from the 4 drops of the last one
        // (RFC 8289: count - lastcount, re-entering within 16 INTERVALs).
        for t in 500..600 {
            assert_eq!(dequeue(c, T0 + t * MS, 10 * MS), 0, "at {t} ms");
        }
        assert_eq!(dequeue(c, T0 + 600 * MS, 10 * MS), 1);
        assert_eq!(c.count, 4);
        // The next drop 100 ms / sqrt(4) later.
        for t in 601..650 {
            assert_eq!(dequeue(c, T0 + t * MS, 10 * MS), 0, "at {t} ms");
        }
        assert_eq!(dequeue(c, T0 + 650 * MS, 10 * MS), 1);
        assert_eq!(c.count, 5);

        // Long after (more than 16 INTERVALs), the count starts at 1.
        assert_eq!(dequeue(c, T0 + 700 * MS, 2 * MS), 0);
        for t in 0..100 {
            assert_eq!(dequeue(c, T0 + (3000 + t) * MS, 10 * MS), 0);
        }
        assert_eq!(dequeue(c, T0 + 3100 * MS, 10 * MS), 1);
        assert_eq!(c.count, 1);
    }

    #[test]
    fn a_short_backlog_or_an_unstamped_packet_is_not_judged() {
        let mut e = codel();
        let c = taken_from::<CoDel>(&mut *e).unwrap();
        for t in 0..1000 {
            let now = T0 + t * MS;
            // One packet left behind: RFC 8289's one-MTU backlog.
            assert!(!c.judge(now - 50 * MS, 1, now));
            // Timestamp annotation never set (Click: its seconds are 0).
            assert!(!c.judge(0, 100, now));
            assert!(!c.judge(999_999_999, 100, now));
        }
        assert_eq!(c.first_above_time, 0);
        assert_eq!(c.drops, 0);
        // An unstamped packet ends a dropping state, as in Click.
        for t in 0..=100 {
            dequeue(c, T0 + (2000 + t) * MS, 10 * MS);
        }
        assert!(c.dropping);
        assert!(!c.judge(0, 100, T0 + 2101 * MS));
        assert!(!c.dropping);
        // A stamp in the future is a sojourn time of 0.
        assert!(!c.judge(T0 + 9000 * MS, 100, T0 + 2102 * MS));
    }

    #[test]
    fn a_pull_replaces_dropped_packets_and_an_empty_queue_resets() {
        let (refs, q) = refs();
        let mut h = Harness::with_refs(&CLASS, "QUEUES q", pull_ports(), &refs).unwrap();
        q.change(100);
        h.advance_to(Timestamp(T0));
        h.feed(0, [stamped(1, T0 - 10 * MS)]);
        assert_eq!(h.pull(0, 1).len(), 1);
        // 100 ms later, still above: the first packet is dropped and the
        // pull goes on to fill its two places.
        h.advance_to(Timestamp(T0 + 100 * MS));
        h.feed(0, (2..=4).map(|i| stamped(i, T0 + 80 * MS)));
        let got: Vec<u8> = h.pull(0, 2).iter().map(|p| p.data()[0]).collect();
        assert_eq!(got, [3, 4]);
        assert_eq!(h.read_handler("drops").unwrap(), "1");
        // Pulling from the empty queue ends the dropping state and the
        // wait: at 250 ms, past the next drop's time, nothing is dropped.
        assert!(h.pull(0, 4).is_empty());
        h.advance_to(Timestamp(T0 + 250 * MS));
        h.feed(0, (5..=6).map(|i| stamped(i, T0 + 200 * MS)));
        let got: Vec<u8> = h.pull(0, 1).iter().map(|p| p.data()[0]).collect();
        assert_eq!(got, [5]);
        assert_eq!(h.read_handler("drops").unwrap(), "1");
        // A pull bigger than the queue takes what there is.
        assert_eq!(h.pull(0, 256).len(), 1);
    }

    #[test]
    fn handlers_read_and_write_as_click() {
        let (refs, q) = refs();
        let mut h = Harness::with_refs(&CLASS, "10ms, INTERVAL 0.2, QUEUES q", pull_ports(), &refs)
            .unwrap();
        q.change(7);
        assert_eq!(h.read_handler("codel_target").unwrap(), "10ms");
        assert_eq!(h.read_handler("codel_interval").unwrap(), "0.2");
        assert_eq!(h.read_handler("interval").unwrap(), "0.2");
        assert_eq!(h.read_handler("config").unwrap(), "0.010000s, 0.200000 s, ");
        assert_eq!(h.read_handler("queues").unwrap(), "q\n");
        assert_eq!(
            h.read_handler("stats").unwrap(),
            "7 current queue\n0 drops\n"
        );
        assert_eq!(h.read_handler("drops").unwrap(), "0");
        h.write_handler("codel_target", " 1001ns ").unwrap();
        assert_eq!(h.read_handler("codel_target").unwrap(), "1001ns");
        assert_eq!(
            h.read_handler("config").unwrap(),
            "0.000001001s, 0.200000 s, "
        );
        h.write_handler("target", "0").unwrap();
        for (handler, bad) in [
            ("codel_interval", "0"),
            ("codel_interval", "-1"),
            ("codel_target", "5 parsecs"),
            ("codel_target", "2h"),
            ("drops", "0"),
        ] {
            assert!(h.write_handler(handler, bad).is_err(), "{handler} {bad}");
        }
        assert_eq!(h.read_handler("config").unwrap(), "0.000000s, 0.200000 s, ");
        assert!(h.call_write_handler("interval", "1").is_ok());
        assert_eq!(h.read_handler("codel_interval").unwrap(), "1");

        // Defaults: Click's keyword handlers read empty, `config` shows them.
        let h = Harness::with_refs(&CLASS, "QUEUES q", pull_ports(), &refs).unwrap();
        assert_eq!(h.read_handler("codel_target").unwrap(), "");
        assert_eq!(h.read_handler("config").unwrap(), "0.005000s, 0.100000 s, ");
    }

    #[test]
    fn bad_arguments_are_refused() {
        let (refs, _q) = refs();
        let try_make =
            |args: &str| make_element_with_refs(&CLASS, args, &pull_ports(), &refs).map(|_| ());
        assert!(try_make("").unwrap_err().contains("no Queue upstream"));
        assert!(try_make("QUEUES c")
            .unwrap_err()
            .contains("not one of Queue"));
        assert!(try_make("QUEUES q c")
            .unwrap_err()
            .contains("bricks watches one"));
        assert!(try_make("QUEUES nope").is_err());
        for bad in [
            "0.005, 0, QUEUES q",
            "-1, QUEUES q",
            "5 apples, QUEUES q",
            "2h, QUEUES q",
            "INTERVAL 0ms, QUEUES q",
            "5ms, 100ms, 7, QUEUES q",
            "FOO 1, QUEUES q",
        ] {
            assert!(try_make(bad).is_err(), "{bad}");
        }
        for good in ["0, QUEUES q", "TARGET 1, INTERVAL 2, QUEUES q", "QUEUES q"] {
            assert!(try_make(good).is_ok(), "{good}");
        }
    }
}
