//! `TimedSource` and `TimedSink`: one packet every INTERVAL, made or pulled
//! (Click's `timedsource.cc`, `timedsink.cc`). Both run on timers of the
//! router's clock, so a `--clock trace` run is repeatable to the byte.

use super::source::{Emitter, DEFAULT_DATA, LIMIT_KEYWORDS};
use bricks_element::args::Data;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_packet::{Timestamp, HEADROOM};
use std::time::Duration;

/// The `TimedSource` class.
pub static TIMED_SOURCE: ElementClass = ElementClass {
    name: "TimedSource",
    ports: "0/1",
    processing: "/h",
    manual: &SOURCE_MANUAL,
    make: make_source,
};

/// The `TimedSink` class.
pub static TIMED_SINK: ElementClass = ElementClass {
    name: "TimedSink",
    ports: "1/0",
    processing: "l/",
    manual: &SINK_MANUAL,
    make: make_sink,
};

const INTERVAL: Keyword = Keyword {
    name: "INTERVAL",
    ty: "time",
    default: Some("500 ms"),
    doc: "time between packets (the `interval` handler)",
};

static SOURCE_MANUAL: Manual = Manual {
    summary: "periodically generates a packet",
    synopsis: "TimedSource([INTERVAL, DATA, KEYWORDS])",
    description: "Pushes a packet of DATA about once every INTERVAL, the first INTERVAL after \
        the router starts. After LIMIT packets, at the next INTERVAL, it stops the router \
        (STOP) or makes its END_CALL, and is done. Writing `active` true or `reset` sends \
        the next packet at once.",
    ports: "no inputs; one push output",
    keywords: &[
        INTERVAL,
        Keyword {
            name: "DATA",
            ty: "data",
            default: Some("a 68-byte text"),
            doc: "the packet's bytes",
        },
        LIMIT_KEYWORDS[0],
        Keyword {
            name: "HEADROOM",
            ty: "unsigned",
            default: Some("128"),
            doc: "headroom of generated packets; accepted and reported, bricks' buffers \
                  always have 128 bytes",
        },
        LIMIT_KEYWORDS[1],
        LIMIT_KEYWORDS[2],
        LIMIT_KEYWORDS[3],
        LIMIT_KEYWORDS[4],
    ],
    counters: &[("count", "packets sent since the last reset")],
    example: "TimedSource(INTERVAL 0.1, LIMIT 3, STOP true) -> Print(tick) -> Discard;",
    see_also: &["InfiniteSource", "RatedSource", "TimedSink"],
};

static SINK_MANUAL: Manual = Manual {
    summary: "periodically pulls and drops a packet",
    synopsis: "TimedSink([INTERVAL])",
    description: "Pulls one packet every INTERVAL from its input and drops it; the first pull \
        is INTERVAL after the router starts. A run ends once the sources are done and a pull \
        finds nothing.",
    ports: "one pull input, no outputs",
    keywords: &[INTERVAL],
    counters: &[("count", "packets pulled and dropped")],
    example: "InfiniteSource(LIMIT 5) -> Queue -> TimedSink(0.1);",
    see_also: &["Shaper", "Discard", "TimedSource"],
};

/// Click's `Timestamp::unparse_interval`: `500ms`, `250us`, `1.500000s`.
pub(crate) fn unparse_interval(ns: u64) -> String {
    let (sec, sub) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if sec == 0 {
        if sub % 1_000_000 == 0 {
            format!("{}ms", sub / 1_000_000)
        } else {
            format!("{}us", sub / 1000)
        }
    } else {
        format!("{sec}.{:06}s", sub / 1000)
    }
}

fn parse_interval(text: &str) -> Result<u64, String> {
    let d = Duration::from_arg(text.trim()).map_err(|_| "bad interval".to_string())?;
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    if ns == 0 {
        return Err("bad interval".into());
    }
    Ok(ns)
}

fn read_interval(args: &mut Args<'_>) -> Result<u64, ArgError> {
    match args.read_p::<Duration>("INTERVAL")? {
        None => Ok(500_000_000),
        Some(d) => {
            let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            if ns == 0 {
                return Err(ArgError::new("INTERVAL must be more than 0"));
            }
            Ok(ns)
        }
    }
}

/// A timer that fires every `interval`, the first time `interval` after it
/// starts, or at once after [`Ticker::now_next`].
#[derive(Debug, Clone)]
pub(crate) struct Ticker {
    pub interval: u64,
    next: Option<u64>,
    at_once: bool,
}

impl Ticker {
    pub fn new(interval: u64) -> Ticker {
        Ticker {
            interval,
            next: None,
            at_once: false,
        }
    }

    /// The next tick is due now (Click's `schedule_now`).
    pub fn now_next(&mut self) {
        self.next = None;
        self.at_once = true;
    }

    /// Whether a tick is due at `now`; if not, the time it is due.
    pub fn due(&mut self, now: Timestamp) -> Result<(), Timestamp> {
        let at_once = std::mem::take(&mut self.at_once);
        let due = *self.next.get_or_insert(if at_once {
            now.0
        } else {
            now.0.saturating_add(self.interval)
        });
        if now.0 < due {
            Err(Timestamp(due))
        } else {
            Ok(())
        }
    }

    /// The tick due was taken: the next is an interval after it (never
    /// before `now`, so that a late router does not fire a burst).
    pub fn advance(&mut self, now: Timestamp) {
        let due = self.next.unwrap_or(now.0);
        self.next = Some(due.saturating_add(self.interval).max(now.0));
    }
}

fn make_source(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let interval = read_interval(args)?;
    let data: Option<Data> = args.read_p("DATA")?;
    let mut e = Emitter::read_limits(args, ports, false)?;
    e.active = args.read("ACTIVE")?.unwrap_or(true);
    let headroom: usize = args.read("HEADROOM")?.unwrap_or(HEADROOM);
    e.read_ends(args)?;
    e.set_data(data.map_or_else(|| DEFAULT_DATA.to_vec(), |d| d.0), None)
        .map_err(ArgError::new)?;
    Ok(Box::new(TimedSource {
        e,
        tick: Ticker::new(interval),
        headroom,
    }))
}

/// Sends a packet every INTERVAL.
#[derive(Debug)]
pub struct TimedSource {
    e: Emitter,
    tick: Ticker,
    headroom: usize,
}

impl TimedSource {
    /// Sends the packet due at `now`.
    fn send(&mut self, now: Timestamp, cx: &mut Context<'_>) {
        self.tick.advance(now);
        let mut b = Batch::new();
        self.e.fill(&mut b, 1, cx);
        cx.push(0, &mut b);
    }
}

impl Element for TimedSource {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if !self.e.active {
            return TaskResult::Idle;
        }
        let now = cx.now();
        if let Err(at) = self.tick.due(now) {
            cx.schedule_at(at);
            return TaskResult::Waiting;
        }
        if self.e.remaining() == 0 {
            return self.e.finished(cx);
        }
        self.send(now, cx);
        TaskResult::Worked
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        self.e.run_timer(cx);
        // Click's TimedSource sends from its timer: a packet due at an
        // instant leaves with the timers of that instant, in the order
        // of the configuration, before the tasks run (a Script's `wait`
        // that ends at the same instant, later in the configuration,
        // reads the count with it, as in Click). The task sends what the
        // timer did not (the first packet after `active` or `reset`)
        // and ends the source at its LIMIT.
        if !self.e.active || self.e.remaining() == 0 {
            return;
        }
        let now = cx.now();
        if self.tick.due(now).is_ok() {
            self.send(now, cx);
            if let Err(at) = self.tick.due(now) {
                cx.schedule_at(at);
            }
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.e.count);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "interval" => Some(unparse_interval(self.tick.interval)),
            "headroom" => Some(self.headroom.to_string()),
            "length" => None,
            _ => self.e.read(handler),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::rw("data"),
            Handler::rw("limit"),
            Handler::rw("interval"),
            Handler::rw("active"),
            Handler::r("count"),
            Handler::rw("headroom"),
            Handler::w("reset"),
        ];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "interval" => self.tick.interval = parse_interval(value)?,
            "headroom" => {
                self.headroom = usize::from_arg(value.trim()).map_err(|_| "bad headroom")?;
            }
            "active" | "reset" => {
                self.e.write(handler, value)?;
                self.tick.now_next();
            }
            "length" => return Err(format!("no write handler `{handler}`")),
            _ => self.e.write(handler, value)?,
        }
        Ok(())
    }
}

fn make_sink(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(TimedSink {
        tick: Ticker::new(read_interval(args)?),
        count: 0,
        found: true,
    }))
}

/// Pulls and drops a packet every INTERVAL.
#[derive(Debug)]
pub struct TimedSink {
    tick: Ticker,
    count: u64,
    /// Whether the last pull found a packet: while it does, the sink keeps
    /// the run going; once its input is dry, it lets the run end.
    found: bool,
}

impl Element for TimedSink {
    fn task_kind(&self) -> TaskKind {
        TaskKind::Pump
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let now = cx.now();
        if let Err(at) = self.tick.due(now) {
            cx.schedule_at(at);
            return if self.found {
                TaskResult::Waiting
            } else {
                TaskResult::Idle
            };
        }
        self.tick.advance(now);
        let mut b = Batch::new();
        cx.pull(0, &mut b, 1);
        self.count += b.len() as u64;
        self.found = !b.is_empty();
        b.clear();
        if self.found {
            TaskResult::Worked
        } else {
            TaskResult::Idle
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "interval").then(|| unparse_interval(self.tick.interval))
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::rw("interval")];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "interval" => {
                self.tick.interval = parse_interval(value)?;
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (TimedSink has interval)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::Harness;

    const S: u64 = 1_000_000_000;

    #[test]
    fn one_packet_per_interval_then_stop() {
        let mut h = Harness::push(
            &TIMED_SOURCE,
            "INTERVAL 0.1, DATA \\<aa bb>, LIMIT 2, STOP true",
            0,
            1,
        );
        h.advance_to(Timestamp(10 * S));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), vec![Timestamp(10 * S + S / 10)]);
        // The timer sends each packet, as Click's does; the task, run
        // after it at the same instant, has nothing to send.
        h.advance_to(Timestamp(10 * S + S / 10));
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        h.advance_to(Timestamp(10 * S + 2 * S / 10));
        let out = h.take(0);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].data(), &[0xaa, 0xbb]);
        assert_eq!(out[0].anno().timestamp, Timestamp(10 * S + 2 * S / 10));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        // A task run late (no timer call, as a busy router's) sends what
        // is due.
        let mut h = Harness::push(&TIMED_SOURCE, "INTERVAL 0.1, LIMIT 3", 0, 1);
        h.advance_to(Timestamp(10 * S));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        h.set_now(Timestamp(10 * S + S / 10));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 1);
        let mut h = Harness::push(
            &TIMED_SOURCE,
            "INTERVAL 0.1, DATA \\<aa bb>, LIMIT 2, STOP true",
            0,
            1,
        );
        h.advance_to(Timestamp(10 * S));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        h.advance_to(Timestamp(10 * S + S / 10));
        h.advance_to(Timestamp(10 * S + 2 * S / 10));
        let out = h.take(0);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].data(), &[0xaa, 0xbb]);
        assert_eq!(out[1].anno().timestamp, Timestamp(10 * S + 2 * S / 10));
        // Click stops at the tick after the last packet.
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert!(!h.stop_requested());
        h.advance_to(Timestamp(10 * S + 3 * S / 10));
        assert_eq!(h.run_task(), TaskResult::Done);
        assert!(h.stop_requested());
        assert_eq!(h.stats().get("count"), Some(2));
    }

    #[test]
    fn handlers_as_clicks() {
        let mut h = Harness::push(&TIMED_SOURCE, "0.25, ACTIVE false", 0, 1);
        assert_eq!(h.read_handler("interval").unwrap(), "250ms");
        assert_eq!(h.read_handler("headroom").unwrap(), "128");
        assert_eq!(h.read_handler("limit").unwrap(), "-1");
        h.advance_to(Timestamp(S));
        assert_eq!(h.run_task(), TaskResult::Idle);
        h.write_handler("active", "true").unwrap();
        // Made active: the next packet leaves at once.
        assert_eq!(h.run_task(), TaskResult::Worked);
        h.write_handler("interval", "1.5").unwrap();
        assert_eq!(h.read_handler("interval").unwrap(), "1.500000s");
        assert!(h.write_handler("interval", "0").is_err());
        assert!(h.write_handler("active", "maybe").is_err());
        assert_eq!(unparse_interval(20_000), "20us");
    }

    #[test]
    fn sink_pulls_one_per_interval() {
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![],
        };
        let mut h = Harness::new(&TIMED_SINK, "INTERVAL 0.5", ports);
        h.feed(0, (0..2u8).map(|i| Packet::from_slice(&[i]).unwrap()));
        h.advance_to(Timestamp(S));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        h.advance_to(Timestamp(S + S / 2));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.stats().get("count"), Some(1));
        assert_eq!(h.run_task(), TaskResult::Waiting);
        h.advance_to(Timestamp(2 * S));
        assert_eq!(h.run_task(), TaskResult::Worked);
        h.advance_to(Timestamp(3 * S));
        // Dry: the sink no longer holds the run open.
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.run_task(), TaskResult::Idle);
        assert_eq!(h.stats().get("count"), Some(2));
        assert_eq!(h.read_handler("interval").unwrap(), "500ms");
    }
}
