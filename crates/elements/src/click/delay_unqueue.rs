//! `DelayUnqueue` and `DelayShaper`: hold each packet until a delay after
//! its timestamp, as Click's `elements/standard/delayunqueue.cc` (pull to
//! push) and `delayshaper.cc` (pull to pull).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, TaskKind, TaskResult,
};
use std::time::Duration;

/// The `DelayUnqueue` class.
pub static DELAY_UNQUEUE: ElementClass = ElementClass {
    name: "DelayUnqueue",
    ports: "1/1",
    processing: "l/h",
    manual: &UNQUEUE_MANUAL,
    make: make_unqueue,
};

/// The `DelayShaper` class.
pub static DELAY_SHAPER: ElementClass = ElementClass {
    name: "DelayShaper",
    ports: "1/1",
    processing: "l/l",
    manual: &SHAPER_MANUAL,
    make: make_shaper,
};

static DELAY: &[Keyword] = &[Keyword {
    name: "DELAY",
    ty: "duration",
    default: None,
    doc: "how long after its timestamp a packet leaves; positional",
}];

static UNQUEUE_MANUAL: Manual = Manual {
    summary: "delay-inducing pull-to-push converter",
    synopsis: "DelayUnqueue(DELAY)",
    description: "Pulls packets from its input one at a time and pushes each no earlier \
        than DELAY after its timestamp annotation (a packet without one, or, as in Click, \
        with one under a second, is stamped when pulled). On output the timestamp is the delayed time. While it waits it holds the \
        packet and sets a timer, so that with `--clock trace` the clock jumps ahead. The \
        `delay` handler reads and sets DELAY.",
    ports: "one pull input; one push output",
    keywords: DELAY,
    counters: &[],
    example: "InfiniteSource(LIMIT 3) -> Queue -> DelayUnqueue(0.1) -> Print(TIMESTAMP true) \
        -> Discard;",
    see_also: &["DelayShaper", "Unqueue", "RatedUnqueue", "SetTimestamp"],
};

static SHAPER_MANUAL: Manual = Manual {
    summary: "shapes traffic to meet delay requirements",
    synopsis: "DelayShaper(DELAY)",
    description: "Pull to pull: pulls a packet from its input and returns it to a pull \
        no earlier than DELAY after its timestamp annotation (a packet without one, or, \
        as in Click, with one under a second, is stamped when pulled); until then it holds that one packet and every pull returns \
        nothing. On output the timestamp is the current time. The `delay` handler reads \
        and sets DELAY. bricks has no notifiers: the task pulling through a DelayShaper \
        sees nothing to do while it waits, so a run whose sources are done ends without \
        waiting for the packets it holds; DelayUnqueue keeps a run going until they \
        leave.",
    ports: "one pull input; one pull output",
    keywords: DELAY,
    counters: &[],
    example: "InfiniteSource(LIMIT 3) -> Queue -> DelayShaper(0.1) -> Unqueue \
        -> Print(TIMESTAMP true) -> Discard;",
    see_also: &["DelayUnqueue", "Shaper", "SetTimestamp"],
};

fn delay(args: &mut Args<'_>) -> Result<u64, ArgError> {
    let d: Duration = args.read_mp("DELAY")?;
    Ok(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn make_unqueue(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(DelayUnqueue(Delay::new(delay(args)?))))
}

fn make_shaper(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(DelayShaper(Delay::new(delay(args)?))))
}

/// Most packets a DelayUnqueue pushes per run of its task.
const BURST: usize = 32;

/// What both elements share: the one packet held and its due time.
#[derive(Debug)]
struct Delay {
    delay: u64,
    held: Option<Packet>,
    /// The time a timer was asked for, so that it is asked once.
    timer: Option<u64>,
}

impl Delay {
    fn new(delay: u64) -> Delay {
        Delay {
            delay,
            held: None,
            timer: None,
        }
    }

    /// The held packet, pulling one if none is held; its timestamp is its
    /// due time.
    fn fill(&mut self, cx: &mut Context<'_>) -> Option<&Packet> {
        if self.held.is_none() {
            let mut b = Batch::new();
            cx.pull(0, &mut b, 1);
            let mut p = b.pop()?;
            let now = cx.now();
            let t = &mut p.anno_mut().timestamp;
            // Click's test for a timestamp that is not set: no whole
            // seconds (a query ARPQuerier stamped with a trace's 0.12 s
            // waits DELAY from now, as in Click).
            if t.secs() == 0 {
                *t = now;
            }
            t.0 = t.0.saturating_add(self.delay);
            self.held = Some(p);
        }
        self.held.as_ref()
    }

    /// The held packet if it is due; else a timer is set for it.
    fn take_due(&mut self, cx: &mut Context<'_>) -> Result<Packet, bool> {
        let Some(due) = self.fill(cx).map(|p| p.anno().timestamp) else {
            return Err(false);
        };
        if due <= cx.now() {
            self.timer = None;
            return self.held.take().ok_or(false);
        }
        if self.timer != Some(due.0) {
            self.timer = Some(due.0);
            cx.schedule_at(due);
        }
        Err(true)
    }

    fn read(&self, handler: &str) -> Option<String> {
        (handler == "delay").then(|| {
            let d = Duration::from_nanos(self.delay);
            format!("{}.{:06}", d.as_secs(), d.subsec_micros())
        })
    }

    fn write(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "delay" => {
                let d = <Duration as bricks_element::FromArg>::from_arg(value.trim())?;
                self.delay = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}` (delay)")),
        }
    }
}

const HANDLERS: &[Handler] = &[Handler::rw("delay")];

/// Pull to push, with a delay.
#[derive(Debug)]
pub struct DelayUnqueue(Delay);

impl Element for DelayUnqueue {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Pump
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let mut out = Batch::new();
        let mut waiting = false;
        while out.len() < BURST {
            match self.0.take_due(cx) {
                Ok(p) => {
                    let _ = out.push(p);
                }
                Err(w) => {
                    waiting = w;
                    break;
                }
            }
        }
        if !out.is_empty() {
            cx.push(0, &mut out);
            TaskResult::Worked
        } else if waiting {
            TaskResult::Waiting
        } else {
            TaskResult::Idle
        }
    }

    fn run_timer(&mut self, _cx: &mut Context<'_>) {
        // The task runs every round; the timer only wakes the engine.
        self.0.timer = None;
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        self.0.read(handler)
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.0.write(handler, value)
    }

    fn handlers(&self) -> &'static [Handler] {
        HANDLERS
    }
}

/// Pull to pull, with a delay.
#[derive(Debug)]
pub struct DelayShaper(Delay);

impl Element for DelayShaper {
    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        for _ in 0..max {
            let Ok(mut p) = self.0.take_due(cx) else {
                break;
            };
            p.anno_mut().timestamp = cx.now();
            if out.push(p).is_err() {
                break;
            }
        }
    }

    fn run_timer(&mut self, _cx: &mut Context<'_>) {
        self.0.timer = None;
    }

    fn shutdown(&mut self, _cx: &mut Context<'_>) {
        self.0.held = None;
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        self.0.read(handler)
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.0.write(handler, value)
    }

    fn handlers(&self) -> &'static [Handler] {
        HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_element::Processing;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::{make_element, Harness};

    const S: u64 = 1_000_000_000;

    fn stamped(t: u64) -> Packet {
        let mut p = Packet::from_slice(&udp(4)).unwrap();
        p.anno_mut().timestamp = Timestamp(t);
        p
    }

    #[test]
    fn unqueue_waits_for_the_delay() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Push],
        };
        let mut h = Harness::new(&DELAY_UNQUEUE, "0.03s", ports);
        h.advance_to(Timestamp(10 * S));
        h.feed(0, [stamped(10 * S), stamped(10 * S + S / 100)]);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), vec![Timestamp(10 * S + 3 * S / 100)]);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers().len(), 1);
        h.advance_to(Timestamp(10 * S + 3 * S / 100));
        // The first leaves; the second, due at 10.04 s, waits.
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.timers(), vec![Timestamp(10 * S + 4 * S / 100)]);
        let out = h.take(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].anno().timestamp, Timestamp(10 * S + 3 * S / 100));
        h.advance_to(Timestamp(11 * S));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.run_task(), TaskResult::Idle);
    }

    #[test]
    fn unstamped_packets_are_stamped_when_pulled() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Push],
        };
        let mut h = Harness::new(&DELAY_UNQUEUE, "1", ports);
        h.advance_to(Timestamp(5 * S));
        h.feed(0, [stamped(0)]);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), vec![Timestamp(6 * S)]);
    }

    #[test]
    fn shaper_returns_nothing_until_due() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&DELAY_SHAPER, "DELAY 0.5", ports);
        h.advance_to(Timestamp(S));
        h.feed(0, [stamped(S), stamped(S)]);
        assert!(h.pull(0, 8).is_empty());
        h.advance_to(Timestamp(S + S / 2));
        let out = h.pull(0, 8);
        // The second packet is due too, as both were stamped at 1 s.
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].anno().timestamp, Timestamp(S + S / 2));
    }

    #[test]
    fn delay_handler() {
        let ports = PortInfo::default();
        let mut e = make_element(&DELAY_SHAPER, "30ms", &ports).unwrap();
        assert_eq!(e.read_handler("delay").as_deref(), Some("0.030000"));
        e.write_handler("delay", "2").unwrap();
        assert_eq!(e.read_handler("delay").as_deref(), Some("2.000000"));
        assert!(e.write_handler("delay", "-1").is_err());
        assert!(make_element(&DELAY_UNQUEUE, "", &ports).is_err());
    }
}
