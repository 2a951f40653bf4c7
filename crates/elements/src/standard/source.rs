//! `InfiniteSource` and `RatedSource`: emit copies of one packet, as fast
//! as possible or at a set rate.

use bricks_element::args::Data;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_packet::{Timestamp, DEFAULT_BURST, MAX_BATCH, MAX_FRAME};

/// The `InfiniteSource` class.
pub static INFINITE_SOURCE: ElementClass = ElementClass {
    name: "InfiniteSource",
    ports: "0/1",
    processing: "/a",
    manual: &INFINITE_MANUAL,
    make: make_infinite,
};

/// The `RatedSource` class.
pub static RATED_SOURCE: ElementClass = ElementClass {
    name: "RatedSource",
    ports: "0/1",
    processing: "/a",
    manual: &RATED_MANUAL,
    make: make_rated,
};

/// Click's default payload, kept so that configurations that rely on it
/// produce the same bytes.
const DEFAULT_DATA: &[u8] =
    b"Random bullshit in a packet, at least 64 bytes long. Well, now it is.";

const COMMON_KEYWORDS: [Keyword; 5] = [
    Keyword {
        name: "DATA",
        ty: "data",
        default: Some("a 68-byte text"),
        doc: "the packet's bytes, e.g. \\<00 11 22 ...>",
    },
    Keyword {
        name: "LIMIT",
        ty: "integer",
        default: Some("-1"),
        doc: "packets to emit in all; -1 for no limit",
    },
    Keyword {
        name: "STOP",
        ty: "boolean",
        default: Some("false"),
        doc: "stop the router (after delivering what is in flight) when LIMIT is reached",
    },
    Keyword {
        name: "ACTIVE",
        ty: "boolean",
        default: Some("true"),
        doc: "emit packets at all (false: wait for `active` to be written)",
    },
    Keyword {
        name: "LENGTH",
        ty: "unsigned",
        default: Some("length of DATA"),
        doc: "pad (with zeros) or cut DATA to this many bytes",
    },
];

static INFINITE_MANUAL: Manual = Manual {
    summary: "emits copies of one packet as fast as it can",
    synopsis: "InfiniteSource([DATA, LIMIT, BURST, ACTIVE, KEYWORDS])",
    description: "Each time its task runs, pushes BURST copies of DATA (fewer when LIMIT is \
        near). In pull mode it returns copies when pulled. Packets are timestamped with the \
        time of the scheduling round that made them. The source is done when LIMIT packets \
        have been emitted; with STOP true the router then stops once in-flight packets are \
        delivered.",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        COMMON_KEYWORDS[0],
        COMMON_KEYWORDS[1],
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "packets per task run (one batch, up to 256)",
        },
        COMMON_KEYWORDS[3],
        COMMON_KEYWORDS[2],
        COMMON_KEYWORDS[4],
    ],
    counters: &[("count", "packets emitted")],
    example: "InfiniteSource(DATA \\<00 01 02 03>, LIMIT 100, STOP true) -> Discard;",
    see_also: &["RatedSource", "WorkloadSource", "FromDump"],
};

static RATED_MANUAL: Manual = Manual {
    summary: "emits copies of one packet at a set rate",
    synopsis: "RatedSource([DATA, RATE, LIMIT, ACTIVE, KEYWORDS])",
    description: "Pushes copies of DATA at RATE packets per second, measured from the first \
        time its task runs; packets that fall due together leave as one batch. Done after \
        LIMIT packets.",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        COMMON_KEYWORDS[0],
        Keyword {
            name: "RATE",
            ty: "unsigned",
            default: Some("10"),
            doc: "packets per second",
        },
        COMMON_KEYWORDS[1],
        COMMON_KEYWORDS[3],
        COMMON_KEYWORDS[2],
        COMMON_KEYWORDS[4],
    ],
    counters: &[("count", "packets emitted")],
    example: "RatedSource(RATE 1000, LIMIT 10, STOP true) -> Discard;",
    see_also: &["InfiniteSource"],
};

/// The emitting part both sources share.
#[derive(Debug)]
struct Emitter {
    data: Vec<u8>,
    limit: Option<u64>,
    count: u64,
    stop: bool,
    active: bool,
    pull: bool,
}

impl Emitter {
    /// Reads the arguments in Click's positional order: DATA, (RATE),
    /// LIMIT, BURST, ACTIVE.
    fn read(
        args: &mut Args<'_>,
        ports: &PortInfo,
        rate: Option<&mut u64>,
    ) -> Result<(Emitter, Option<usize>), ArgError> {
        let data: Option<Data> = args.read_p("DATA")?;
        if let Some(rate) = rate {
            if let Some(r) = args.read_p("RATE")? {
                *rate = r;
            }
        }
        let limit: i64 = args.read_p("LIMIT")?.unwrap_or(-1);
        let burst: Option<usize> = args.read_p("BURST")?;
        let active: bool = args.read_p("ACTIVE")?.unwrap_or(true);
        let stop: bool = args.read("STOP")?.unwrap_or(false);
        let length: Option<usize> = args.read("LENGTH")?;
        let mut data = data.map(|d| d.0).unwrap_or_else(|| DEFAULT_DATA.to_vec());
        if let Some(l) = length {
            data.resize(l, 0);
        }
        if data.len() > MAX_FRAME {
            return Err(ArgError::new(format!(
                "DATA is {} bytes, more than the {MAX_FRAME}-byte packet buffer",
                data.len()
            )));
        }
        let e = Emitter {
            data,
            limit: u64::try_from(limit).ok(),
            count: 0,
            stop,
            active,
            pull: !ports.output_is_push(0),
        };
        Ok((e, burst))
    }

    fn remaining(&self) -> u64 {
        match self.limit {
            Some(l) => l.saturating_sub(self.count),
            None => u64::MAX,
        }
    }

    #[inline]
    fn fill(&mut self, b: &mut Batch, n: usize, cx: &Context<'_>) {
        let now = cx.now();
        let data = &self.data[..];
        let before = b.len();
        Packet::alloc_batch(b, n, |p| {
            // Cannot fail: DATA was checked against the buffer size.
            let _ = p.set_frame(data);
            p.anno_mut().timestamp = now;
        });
        self.count += (b.len() - before) as u64;
    }

    fn finished(&self, cx: &mut Context<'_>) -> TaskResult {
        if self.stop {
            cx.request_stop();
        }
        TaskResult::Done
    }

    fn write(&mut self, handler: &str, value: &str) -> Result<(), String> {
        use bricks_element::FromArg;
        match handler {
            "active" => self.active = bool::from_arg(value.trim())?,
            "limit" => self.limit = u64::try_from(i64::from_arg(value.trim())?).ok(),
            "reset" => self.count = 0,
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (active, limit, reset)"
                ))
            }
        }
        Ok(())
    }
}

fn make_infinite(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let (e, burst) = Emitter::read(args, ports, None)?;
    Ok(Box::new(InfiniteSource {
        e,
        burst: burst.unwrap_or(DEFAULT_BURST).clamp(1, MAX_BATCH),
    }))
}

fn make_rated(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let mut rate = 10u64;
    // RatedSource batches whatever is due; BURST is accepted for Click
    // compatibility and caps nothing.
    let (e, _burst) = Emitter::read(args, ports, Some(&mut rate))?;
    if rate == 0 {
        return Err(ArgError::new("RATE must be at least 1 packet per second"));
    }
    Ok(Box::new(RatedSource {
        e,
        rate,
        start: None,
    }))
}

/// Emits copies of a packet as fast as possible.
#[derive(Debug)]
pub struct InfiniteSource {
    e: Emitter,
    burst: usize,
}

impl Element for InfiniteSource {
    fn task_kind(&self) -> TaskKind {
        if self.e.pull {
            TaskKind::None
        } else {
            TaskKind::Source
        }
    }

    #[inline]
    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let left = self.e.remaining();
        if left == 0 {
            return self.e.finished(cx);
        }
        if !self.e.active {
            return TaskResult::Idle;
        }
        let n = (self.burst as u64).min(left) as usize;
        let mut b = Batch::new();
        self.e.fill(&mut b, n, cx);
        cx.push(0, &mut b);
        TaskResult::Worked
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        if !self.e.active {
            return;
        }
        let n = (max as u64).min(self.e.remaining()) as usize;
        self.e.fill(out, n, cx);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.e.count);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.e.write(handler, value)
    }
}

/// Emits copies of a packet at a set rate.
#[derive(Debug)]
pub struct RatedSource {
    e: Emitter,
    rate: u64,
    start: Option<(u64, u64)>,
}

impl RatedSource {
    /// Packets due by now that have not been sent.
    fn due(&mut self, cx: &Context<'_>) -> u64 {
        let now = cx.now().0;
        let (t0, c0) = *self.start.get_or_insert((now, self.e.count));
        let elapsed = now.saturating_sub(t0) as u128;
        let due = (elapsed * self.rate as u128 / 1_000_000_000) as u64 + 1;
        (c0 + due)
            .saturating_sub(self.e.count)
            .min(self.e.remaining())
    }
}

impl RatedSource {
    /// When the next packet falls due.
    fn next_due(&self) -> Timestamp {
        let Some((t0, c0)) = self.start else {
            return Timestamp(0);
        };
        let k = (self.e.count - c0) as u128; // packets sent since t0, the first at t0
        Timestamp(t0 + (k * 1_000_000_000 / self.rate as u128) as u64)
    }
}

impl Element for RatedSource {
    fn task_kind(&self) -> TaskKind {
        if self.e.pull {
            TaskKind::None
        } else {
            TaskKind::Source
        }
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if self.e.remaining() == 0 {
            return self.e.finished(cx);
        }
        if !self.e.active {
            self.start = None;
            return TaskResult::Idle;
        }
        let n = self.due(cx).min(MAX_BATCH as u64) as usize;
        if n == 0 {
            cx.schedule_at(self.next_due());
            return TaskResult::Idle;
        }
        let mut b = Batch::new();
        self.e.fill(&mut b, n, cx);
        cx.push(0, &mut b);
        TaskResult::Worked
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        if !self.e.active {
            return;
        }
        let n = self.due(cx).min(max as u64) as usize;
        self.e.fill(out, n, cx);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.e.count);
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        use bricks_element::FromArg;
        if handler == "rate" {
            let r = u64::from_arg(value.trim())?;
            if r == 0 {
                return Err("rate must be at least 1".into());
            }
            self.rate = r;
            self.start = None;
            return Ok(());
        }
        self.e.write(handler, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    #[test]
    fn emits_burst_until_limit() {
        let mut h = Harness::push(&INFINITE_SOURCE, "\\<01 02 03>, 5, BURST 2", 0, 1);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Done);
        let out = h.take_bytes(0);
        assert_eq!(out, vec![vec![1, 2, 3]; 5]);
        assert_eq!(h.stats().get("count"), Some(5));
        assert!(!h.stop_requested());
    }

    #[test]
    fn default_data_is_clicks() {
        let mut h = Harness::push(&INFINITE_SOURCE, "LIMIT 1", 0, 1);
        h.run_task();
        assert_eq!(h.take_bytes(0)[0], DEFAULT_DATA);
    }

    #[test]
    fn stop_requests_router_stop() {
        let mut h = Harness::push(&INFINITE_SOURCE, "LIMIT 1, STOP true", 0, 1);
        h.run_task();
        assert_eq!(h.run_task(), TaskResult::Done);
        assert!(h.stop_requested());
    }

    #[test]
    fn length_pads_data() {
        let mut h = Harness::push(&INFINITE_SOURCE, "DATA \\<ff>, LENGTH 4, LIMIT 1", 0, 1);
        h.run_task();
        assert_eq!(h.take_bytes(0), vec![vec![0xff, 0, 0, 0]]);
    }

    #[test]
    fn inactive_waits_for_handler() {
        let mut h = Harness::push(&INFINITE_SOURCE, "LIMIT 1, ACTIVE false", 0, 1);
        assert_eq!(h.run_task(), TaskResult::Idle);
        h.write_handler("active", "true").unwrap();
        assert_eq!(h.run_task(), TaskResult::Worked);
    }

    #[test]
    fn oversized_data_refused() {
        let e = bricks_runtime::testing::make_element(
            &INFINITE_SOURCE,
            "LENGTH 9000",
            &PortInfo {
                inputs: vec![],
                outputs: vec![bricks_element::Processing::Push],
            },
        );
        assert!(e.unwrap_err().contains("more than the"));
    }

    #[test]
    fn rated_source_paces() {
        let mut h = Harness::push(&RATED_SOURCE, "RATE 1000, LIMIT 100", 0, 1);
        h.advance_to(Timestamp(1_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked); // first packet is due at once
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.run_task(), TaskResult::Idle);
        h.advance_to(Timestamp(1_010_000_000)); // 10 ms later: 10 more
        h.run_task();
        assert_eq!(h.take(0).len(), 10);
        h.advance_to(Timestamp(2_000_000_000)); // far later: capped by LIMIT
        while h.run_task() == TaskResult::Worked {}
        assert_eq!(h.stats().get("count"), Some(100));
    }
}
