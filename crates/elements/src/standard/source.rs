//! `InfiniteSource` and `RatedSource`: emit copies of one packet, as fast
//! as possible or at a set rate (Click's `infinitesource.cc`,
//! `ratedsource.cc`). The parts every generator shares, [`Emitter`] (the
//! LIMIT, STOP, END_CALL, ACTIVE and TIMESTAMP logic and their handlers)
//! and [`Pacer`] (packets due at a rate), are used by the other sources of
//! this group too.

use super::handler_call::HandlerCall;
use super::token_bucket::TokenBucket;
use bricks_element::args::Data;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    Packet, PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_packet::{Annotations, Timestamp, DEFAULT_BURST, MAX_BATCH, MAX_FRAME};

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
pub(crate) const DEFAULT_DATA: &[u8] =
    b"Random bullshit in a packet, at least 64 bytes long. Well, now it is.";

/// The keywords of [`Emitter`], for the manuals.
pub(crate) const LIMIT_KEYWORDS: [Keyword; 5] = [
    Keyword {
        name: "LIMIT",
        ty: "integer",
        default: Some("-1"),
        doc: "packets to emit in all; negative for no limit",
    },
    Keyword {
        name: "ACTIVE",
        ty: "boolean",
        default: Some("true"),
        doc: "emit packets at all (false: wait for `active` to be written)",
    },
    Keyword {
        name: "STOP",
        ty: "boolean",
        default: Some("false"),
        doc: "stop the router (after delivering what is in flight) when LIMIT is reached",
    },
    Keyword {
        name: "END_CALL",
        ty: "`ELEMENT.HANDLER [VALUE]`",
        default: Some("none"),
        doc: "write handler called once LIMIT packets are sent (`stop` stops the router); \
              not with STOP",
    },
    Keyword {
        name: "TIMESTAMP",
        ty: "boolean",
        default: Some("true"),
        doc: "set each packet's timestamp annotation to the current time",
    },
];

const DATA_KEYWORDS: [Keyword; 2] = [
    Keyword {
        name: "DATA",
        ty: "data",
        default: Some("a 68-byte text"),
        doc: "the packet's bytes, e.g. \\<00 11 22 ...>",
    },
    Keyword {
        name: "LENGTH",
        ty: "integer",
        default: Some("length of DATA"),
        doc: "the packet's length: DATA cut, or repeated to fill it (DATASIZE: deprecated name)",
    },
];

static INFINITE_MANUAL: Manual = Manual {
    summary: "generates packets whenever scheduled",
    synopsis: "InfiniteSource([DATA, LIMIT, BURST, ACTIVE, KEYWORDS])",
    description: "Each time its task runs, pushes BURST copies of DATA (fewer when LIMIT is \
        near). In pull mode it returns copies when pulled. Packets are timestamped with the \
        time of the scheduling round that made them. The source is done when LIMIT packets \
        have been emitted; with STOP true the router then stops once in-flight packets are \
        delivered, with END_CALL the handler is called. Writing `reset` or `limit` after the \
        source is done does not start it again.",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        DATA_KEYWORDS[0],
        LIMIT_KEYWORDS[0],
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "packets per task run (one batch, up to 256); Click's default is 1",
        },
        LIMIT_KEYWORDS[1],
        DATA_KEYWORDS[1],
        LIMIT_KEYWORDS[2],
        LIMIT_KEYWORDS[3],
        LIMIT_KEYWORDS[4],
    ],
    counters: &[("count", "packets emitted since the last reset")],
    example: "InfiniteSource(DATA \\<00 01 02 03>, LIMIT 100, STOP true) -> Discard;",
    see_also: &["RatedSource", "TimedSource", "RandomSource", "Script"],
};

static RATED_MANUAL: Manual = Manual {
    summary: "generates packets at specified rate",
    synopsis: "RatedSource([DATA, RATE, LIMIT, ACTIVE, KEYWORDS])",
    description: "Pushes copies of DATA at RATE packets per second through Click's token \
        bucket: it holds 2 packets below RATE 200 and 10 ms of packets from there (with \
        BANDWIDTH, at least twice LENGTH), starts full, so the first burst leaves at once, \
        and fills every millisecond, its rate rounded down a little as Click's is; packets \
        the bucket holds leave together as one batch. `reset` and a restart through \
        `active` start from one token. Done after LIMIT packets. Its handlers (`rate`, `active`, `limit`, `data`, `length`, `reset`) \
        read and write its settings, as Click's do.",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        DATA_KEYWORDS[0],
        Keyword {
            name: "RATE",
            ty: "unsigned",
            default: Some("10"),
            doc: "packets per second",
        },
        LIMIT_KEYWORDS[0],
        LIMIT_KEYWORDS[1],
        DATA_KEYWORDS[1],
        Keyword {
            name: "BANDWIDTH",
            ty: "bandwidth",
            default: Some("none"),
            doc: "set RATE from a bandwidth (e.g. 1Mbps) and the packet's length",
        },
        LIMIT_KEYWORDS[2],
        LIMIT_KEYWORDS[3],
        LIMIT_KEYWORDS[4],
    ],
    counters: &[("count", "packets emitted since the last reset")],
    example: "RatedSource(RATE 1000, LIMIT 10, STOP true) -> Discard;",
    see_also: &["InfiniteSource", "TimedSource", "FastUDPSource"],
};

/// Click's `setup_packet`: DATA cut to LENGTH, or repeated until LENGTH
/// bytes (zeros when DATA is empty).
pub(crate) fn build_packet(data: &[u8], length: Option<usize>) -> Vec<u8> {
    let Some(len) = length else {
        return data.to_vec();
    };
    if data.is_empty() {
        return vec![0; len];
    }
    data.iter().copied().cycle().take(len).collect()
}

/// The emitting part every source of this group shares: the packet, the
/// count and the LIMIT with what happens there (STOP, END_CALL).
#[derive(Debug)]
pub(crate) struct Emitter {
    /// DATA as given (the `data` handler).
    pub data: Vec<u8>,
    /// LENGTH, if given.
    pub length: Option<usize>,
    /// The packet sent: DATA at LENGTH.
    pub packet: Vec<u8>,
    pub limit: Option<u64>,
    pub count: u64,
    pub active: bool,
    pub pull: bool,
    pub timestamp: bool,
    end: Option<HandlerCall>,
    ended: bool,
    pending: Vec<HandlerCall>,
}

impl Emitter {
    /// An emitter of `packet`, reading LIMIT (positional when `limit_p`),
    /// ACTIVE, STOP, END_CALL and TIMESTAMP; ACTIVE is read positionally
    /// by the caller when its class has it so.
    pub fn read_limits(
        args: &mut Args<'_>,
        ports: &PortInfo,
        limit_p: bool,
    ) -> Result<Emitter, ArgError> {
        let limit: i64 = if limit_p {
            args.read_p("LIMIT")?
        } else {
            args.read("LIMIT")?
        }
        .unwrap_or(-1);
        Ok(Emitter {
            data: Vec::new(),
            length: None,
            packet: Vec::new(),
            limit: u64::try_from(limit).ok(),
            count: 0,
            active: true,
            pull: ports
                .outputs
                .first()
                .is_some_and(|_| !ports.output_is_push(0)),
            timestamp: true,
            end: None,
            ended: false,
            pending: Vec::new(),
        })
    }

    /// Reads the keywords that follow the positional ones: STOP, END_CALL,
    /// TIMESTAMP.
    pub fn read_ends(&mut self, args: &mut Args<'_>) -> Result<(), ArgError> {
        let stop: bool = args.read("STOP")?.unwrap_or(false);
        let end: Option<String> = args.read("END_CALL")?;
        self.timestamp = args.read("TIMESTAMP")?.unwrap_or(true);
        if stop && end.is_some() {
            return Err(ArgError::new("END_CALL and STOP are mutually exclusive"));
        }
        self.end = match end {
            Some(e) => Some(HandlerCall::parse(&e).map_err(ArgError::new)?),
            None if stop => Some(HandlerCall::parse("stop").map_err(ArgError::new)?),
            None => None,
        };
        Ok(())
    }

    /// Sets DATA and LENGTH and builds the packet.
    pub fn set_data(&mut self, data: Vec<u8>, length: Option<usize>) -> Result<(), String> {
        let packet = build_packet(&data, length);
        if packet.len() > MAX_FRAME {
            return Err(format!(
                "the packet is {} bytes, more than the {MAX_FRAME}-byte packet buffer",
                packet.len()
            ));
        }
        self.data = data;
        self.length = length;
        self.packet = packet;
        Ok(())
    }

    /// Packets left before LIMIT.
    pub fn remaining(&self) -> u64 {
        match self.limit {
            Some(l) => l.saturating_sub(self.count),
            None => u64::MAX,
        }
    }

    /// Appends `n` copies of the packet to `b`.
    #[inline]
    pub fn fill(&mut self, b: &mut Batch, n: usize, cx: &Context<'_>) {
        // `fill_with` over the fields, with the packet borrowed where it
        // is rather than taken out of the element and put back each call
        // (a source pulled a packet at a time is called per packet).
        let now = if self.timestamp {
            cx.now()
        } else {
            Timestamp(0)
        };
        let mut anno = Annotations::default();
        anno.timestamp = now;
        let before = b.len();
        // The frame was checked against MAX_FRAME when it was set.
        Packet::alloc_copies(b, n, anno, &self.packet);
        self.count += (b.len() - before) as u64;
    }

    /// Appends `n` packets made by `make` to `b`, timestamped (unless
    /// TIMESTAMP is false) and counted.
    #[inline]
    pub fn fill_with(
        &mut self,
        b: &mut Batch,
        n: usize,
        cx: &Context<'_>,
        mut make: impl FnMut(&mut Packet),
    ) {
        let now = if self.timestamp {
            cx.now()
        } else {
            Timestamp(0)
        };
        let before = b.len();
        Packet::alloc_batch(b, n, |p| {
            make(p);
            p.anno_mut().timestamp = now;
        });
        self.count += (b.len() - before) as u64;
    }

    /// Whether running out calls a handler (`STOP true`, `END_CALL`) that
    /// has not been called yet.
    pub fn has_end_call(&self) -> bool {
        self.end.is_some() && !self.ended
    }

    /// LIMIT is reached: the end call (or STOP) once, then the task is
    /// done.
    pub fn finished(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if !self.ended {
            self.ended = true;
            if let Some(c) = self.end.clone() {
                match c.own_call(cx.name()) {
                    // A call to this source itself (`END_CALL s.reset`):
                    // made here, since the element is busy running.
                    Some((h, v)) => {
                        if let Err(err) = self.write(h, v) {
                            eprintln!("{}: {}: {err}", cx.name(), c.unparse());
                        }
                    }
                    None => c.call(cx, &mut self.pending),
                }
            }
            if self.remaining() > 0 {
                // The call made room (a reset, a higher limit): go on.
                return TaskResult::Worked;
            }
        }
        if self.pending.is_empty() {
            TaskResult::Done
        } else {
            // The end call waits for a timer; the task stays until then.
            TaskResult::Waiting
        }
    }

    /// Makes end calls that found their element busy.
    pub fn run_timer(&mut self, cx: &mut Context<'_>) {
        HandlerCall::run_pending(cx, &mut self.pending);
    }

    /// The handlers every source answers: `active`, `limit`, `data`,
    /// `length`.
    pub fn read(&self, handler: &str) -> Option<String> {
        Some(match handler {
            "active" => self.active.to_string(),
            "limit" => self.limit.map_or("-1".into(), |l| l.to_string()),
            "data" => String::from_utf8_lossy(&self.data).into_owned(),
            "length" | "datasize" => self.length.map_or("-1".into(), |l| l.to_string()),
            _ => return None,
        })
    }

    /// The write handlers every source answers: `active`, `limit`,
    /// `reset`, `data`, `length`.
    pub fn write(&mut self, handler: &str, value: &str) -> Result<(), String> {
        let v = value.trim();
        match handler {
            "active" => self.active = bool::from_arg(v).map_err(|_| "syntax error".to_string())?,
            "limit" => {
                let l = i64::from_arg(v).map_err(|_| "limit parameter must be integer")?;
                self.limit = u64::try_from(l).ok();
            }
            "reset" => {
                self.count = 0;
                self.ended = false;
            }
            // Click's data handler is raw: the bytes as written.
            "data" => self.set_data(value.as_bytes().to_vec(), self.length)?,
            "length" | "datasize" => {
                let l = i64::from_arg(v).map_err(|_| "length must be integer")?;
                let data = std::mem::take(&mut self.data);
                self.set_data(data, usize::try_from(l).ok())?;
            }
            _ => {
                return Err(format!(
                    "no write handler `{handler}` (active, limit, reset, data, length)"
                ))
            }
        }
        Ok(())
    }
}

/// Packets due at a rate: the first at once, then one every 1/RATE s, on
/// the router's clock (so that `--clock trace` runs repeat exactly).
#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    /// Packets per second (at least 1).
    pub rate: u64,
    /// The time and count when pacing started.
    start: Option<(u64, u64)>,
}

impl Pacer {
    pub fn new(rate: u64) -> Pacer {
        Pacer { rate, start: None }
    }

    /// Starts over from the next packet (after a rate change or a pause).
    pub fn restart(&mut self) {
        self.start = None;
    }

    /// Packets due by `now` beyond the `count` already sent.
    pub fn due(&mut self, now: Timestamp, count: u64) -> u64 {
        let (t0, c0) = *self.start.get_or_insert((now.0, count));
        let elapsed = now.0.saturating_sub(t0) as u128;
        let due = (elapsed * self.rate as u128 / 1_000_000_000).min(u64::MAX as u128) as u64;
        c0.saturating_add(due)
            .saturating_add(1)
            .saturating_sub(count)
    }

    /// When the packet after `count` falls due.
    pub fn next_due(&self, count: u64) -> Timestamp {
        let Some((t0, c0)) = self.start else {
            return Timestamp(0);
        };
        let k = count.saturating_sub(c0) as u128; // sent since t0, the first at t0
        let ns = (k * 1_000_000_000).div_ceil(self.rate as u128);
        Timestamp(t0.saturating_add(ns.min(u64::MAX as u128) as u64))
    }
}

fn read_data(args: &mut Args<'_>) -> Result<Option<Vec<u8>>, ArgError> {
    Ok(args.read_p::<Data>("DATA")?.map(|d| d.0))
}

fn read_length(args: &mut Args<'_>) -> Result<Option<usize>, ArgError> {
    let mut length: Option<i64> = args.read("LENGTH")?;
    if let Some(l) = args.read("DATASIZE")? {
        length = Some(l);
    }
    Ok(length.and_then(|l| usize::try_from(l).ok()))
}

fn make_infinite(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let data = read_data(args)?;
    let mut e = Emitter::read_limits(args, ports, true)?;
    let burst: usize = args.read_p("BURST")?.unwrap_or(DEFAULT_BURST);
    if burst < 1 {
        return Err(ArgError::new("burst size must be >= 1"));
    }
    e.active = args.read_p("ACTIVE")?.unwrap_or(true);
    let length = read_length(args)?;
    e.read_ends(args)?;
    e.set_data(data.unwrap_or_else(|| DEFAULT_DATA.to_vec()), length)
        .map_err(ArgError::new)?;
    Ok(Box::new(InfiniteSource {
        e,
        burst: burst.min(MAX_BATCH),
        room_signal: None,
    }))
}

fn make_rated(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let data = read_data(args)?;
    let mut rate: u64 = args.read_p("RATE")?.unwrap_or(10);
    let mut e = Emitter::read_limits(args, ports, true)?;
    e.active = args.read_p("ACTIVE")?.unwrap_or(true);
    let length = read_length(args)?;
    let bandwidth: Option<String> = args.read("BANDWIDTH")?;
    let bandwidth_given = bandwidth.is_some();
    // RatedSource batches whatever its bucket holds; BURST is accepted for
    // configurations written for older Clicks and caps nothing.
    let _burst: Option<u64> = args.read("BURST")?;
    e.read_ends(args)?;
    e.set_data(data.unwrap_or_else(|| DEFAULT_DATA.to_vec()), length)
        .map_err(ArgError::new)?;
    if let Some(bw) = bandwidth {
        let bw = super::bw_rated_unqueue::parse_bandwidth(&bw).map_err(ArgError::new)?;
        if bw > 0 {
            rate = bw / (e.packet.len().max(1) as u64);
        }
    }
    if rate == 0 {
        return Err(ArgError::new("RATE must be at least 1 packet per second"));
    }
    super::rated_unqueue::check_tokens("RATE", rate)?;
    let mut size = rated_source_burst(rate);
    // Click's: with BANDWIDTH, at least twice LENGTH (in packets).
    if let (true, Some(len)) = (bandwidth_given, length) {
        size = size.max(2 * len as u64);
    }
    Ok(Box::new(RatedSource {
        e,
        bucket: TokenBucket::new(rate, size),
    }))
}

/// RatedSource's bucket size: 2 packets below 200 a second, otherwise
/// 10 ms of packets (Click's `ratedsource.cc`).
fn rated_source_burst(rate: u64) -> u64 {
    if rate < 200 {
        2
    } else {
        rate / 100
    }
}

/// Emits copies of a packet as fast as possible.
#[derive(Debug)]
pub struct InfiniteSource {
    e: Emitter,
    burst: usize,
    /// Whether the output reaches only queues (asked on the first run).
    room_signal: Option<bool>,
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
        // Click's full-queue notifier: a source in front of full queues
        // waits for room instead of making packets only to drop them. As
        // in Click, a source with an end call (`STOP true`, `END_CALL`)
        // also waits for room before making it: its last packets are
        // pulled out of the queue before the router stops.
        let signal = *self
            .room_signal
            .get_or_insert_with(|| cx.has_room_signal(0));
        let room = if signal && (left > 0 || self.e.has_end_call()) {
            cx.downstream_room(0)
        } else {
            None
        };
        if room == Some(0) {
            return TaskResult::Idle;
        }
        if left == 0 {
            return self.e.finished(cx);
        }
        if !self.e.active {
            return TaskResult::Idle;
        }
        let mut n = (self.burst as u64).min(left) as usize;
        if let Some(room) = room {
            n = n.min(room);
        }
        let mut b = Batch::new();
        self.e.fill(&mut b, n, cx);
        cx.push(0, &mut b);
        TaskResult::Worked
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        self.e.run_timer(cx);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        if !self.e.active {
            return;
        }
        if self.e.remaining() == 0 {
            let _ = self.e.finished(cx);
            return;
        }
        let n = (max as u64).min(self.e.remaining()) as usize;
        self.e.fill(out, n, cx);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.e.count);
    }

    fn empty_signal(&self, _port: usize) -> Option<bool> {
        // Pulled, Click's InfiniteSource is an empty notifier: asleep
        // while inactive or at its limit.
        Some(self.e.active && self.e.remaining() > 0)
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "burst" | "burstsize" => Some(self.burst.to_string()),
            _ => self.e.read(handler),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::rw("data"),
            Handler::rw("limit"),
            Handler::rw("burst"),
            Handler::rw("active"),
            Handler::r("count"),
            Handler::w("reset"),
            Handler::rw("length"),
        ];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "burst" | "burstsize" => {
                let b = i64::from_arg(value.trim())
                    .ok()
                    .filter(|&b| b >= 1)
                    .ok_or("burstsize parameter must be integer >= 1")?;
                self.burst = (b as usize).min(MAX_BATCH);
                Ok(())
            }
            _ => self.e.write(handler, value),
        }
    }
}

/// Emits copies of a packet at a set rate, through Click's token bucket
/// (it starts full: a first burst of its size).
#[derive(Debug)]
pub struct RatedSource {
    e: Emitter,
    bucket: TokenBucket,
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
            return TaskResult::Idle;
        }
        let now = cx.now();
        self.bucket.refill(now);
        let n = self
            .bucket
            .tokens()
            .min(self.e.remaining())
            .min(MAX_BATCH as u64) as usize;
        if n == 0 {
            if let Some(at) = self.bucket.time_until(1, now) {
                cx.schedule_at(at);
            }
            return TaskResult::Waiting;
        }
        let mut b = Batch::new();
        self.e.fill(&mut b, n, cx);
        self.bucket.remove(n as u64);
        cx.push(0, &mut b);
        TaskResult::Worked
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        self.e.run_timer(cx);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        if !self.e.active {
            return;
        }
        if self.e.remaining() == 0 {
            let _ = self.e.finished(cx);
            return;
        }
        self.bucket.refill(cx.now());
        let n = self.bucket.tokens().min(self.e.remaining()).min(max as u64) as usize;
        let before = out.len();
        self.e.fill(out, n, cx);
        self.bucket.remove((out.len() - before) as u64);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.e.count);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            // As Click reads it back from the bucket.
            "rate" => Some(self.bucket.rate().to_string()),
            _ => self.e.read(handler),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::rw("data"),
            Handler::rw("rate"),
            Handler::rw("limit"),
            Handler::rw("active"),
            Handler::r("count"),
            Handler::w("reset"),
            Handler::rw("length"),
        ];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "rate" => {
                let r = u64::from_arg(value.trim()).map_err(|_| "syntax error")?;
                if r == 0 {
                    return Err("rate must be at least 1".into());
                }
                super::rated_unqueue::check_tokens("rate", r).map_err(|e| e.to_string())?;
                self.bucket.assign_adjust(r, rated_source_burst(r));
                Ok(())
            }
            // A restart, or a reset, starts from one token, as Click's.
            "reset" => {
                self.bucket.set(1);
                self.e.write(handler, value)
            }
            "active" => {
                let was = self.e.active;
                self.e.write(handler, value)?;
                if self.e.active && !was {
                    self.bucket.set(1);
                }
                Ok(())
            }
            _ => self.e.write(handler, value),
        }
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
    fn end_call_stop_and_exclusive_with_stop() {
        let mut h = Harness::push(&INFINITE_SOURCE, "LIMIT 1, END_CALL stop", 0, 1);
        h.run_task();
        assert!(!h.stop_requested());
        assert_eq!(h.run_task(), TaskResult::Done);
        assert!(h.stop_requested());
        let e = bricks_runtime::testing::make_element(
            &INFINITE_SOURCE,
            "STOP true, END_CALL x.y",
            &Default::default(),
        );
        assert!(e.unwrap_err().contains("mutually exclusive"));
    }

    #[test]
    fn length_repeats_data_as_click_does() {
        let mut h = Harness::push(&INFINITE_SOURCE, "DATA \\<ff 01>, LENGTH 5, LIMIT 2", 0, 1);
        h.run_task();
        assert_eq!(h.take_bytes(0), vec![vec![0xff, 1, 0xff, 1, 0xff]; 2]);
        let mut h = Harness::push(&INFINITE_SOURCE, "DATA \\<ff 01 02>, LENGTH 2", 0, 1);
        h.write_handler("limit", "1").unwrap();
        h.run_task();
        assert_eq!(h.take_bytes(0), vec![vec![0xff, 1]]);
    }

    #[test]
    fn timestamp_false_leaves_the_annotation() {
        let mut h = Harness::push(&INFINITE_SOURCE, "LIMIT 1, TIMESTAMP false", 0, 1);
        h.advance_to(Timestamp(5_000_000_000));
        h.run_task();
        assert_eq!(h.take(0)[0].anno().timestamp, Timestamp(0));
        let mut h = Harness::push(&INFINITE_SOURCE, "LIMIT 1", 0, 1);
        h.advance_to(Timestamp(5_000_000_000));
        h.run_task();
        assert_eq!(h.take(0)[0].anno().timestamp, Timestamp(5_000_000_000));
    }

    #[test]
    fn handlers_read_and_write() {
        let h = Harness::push(&INFINITE_SOURCE, "\\<61 62>, 7, 3, false", 0, 1);
        assert_eq!(h.read_handler("data").unwrap(), "ab");
        assert_eq!(h.read_handler("limit").unwrap(), "7");
        assert_eq!(h.read_handler("burst").unwrap(), "3");
        assert_eq!(h.read_handler("active").unwrap(), "false");
        assert_eq!(h.read_handler("length").unwrap(), "-1");
        h.write_handler("data", "xyz").unwrap();
        h.write_handler("length", "4").unwrap();
        h.write_handler("burst", "2").unwrap();
        assert!(h.write_handler("burst", "0").is_err());
        assert_eq!(h.read_handler("burst").unwrap(), "2");
        assert_eq!(h.read_handler("length").unwrap(), "4");
        let mut h = h;
        h.write_handler("active", "true").unwrap();
        h.run_task();
        assert_eq!(h.take_bytes(0), vec![b"xyzx".to_vec(); 2]);
        h.write_handler("reset", "").unwrap();
        assert_eq!(h.stats().get("count"), Some(0));
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
        // Click's bucket: 10 ms of packets, full at the start.
        let mut h = Harness::push(&RATED_SOURCE, "RATE 1000, LIMIT 100", 0, 1);
        h.advance_to(Timestamp(1_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked); // the first burst at once
        assert_eq!(h.take(0).len(), 10);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), vec![Timestamp(1_001_000_000)]);
        h.advance_to(Timestamp(1_010_000_000)); // 10 ms later: 10 more
        h.run_task();
        assert_eq!(h.take(0).len(), 10);
        // A long gap earns at most the bucket's 10.
        h.advance_to(Timestamp(2_000_000_000));
        while h.run_task() == TaskResult::Worked {}
        assert_eq!(h.stats().get("count"), Some(30));
        // Run on, a millisecond at a time: capped by LIMIT.
        for ms in 1..=200 {
            h.advance_to(Timestamp(2_000_000_000 + ms * 1_000_000));
            while h.run_task() == TaskResult::Worked {}
        }
        assert_eq!(h.stats().get("count"), Some(100));
    }

    #[test]
    fn rated_source_counts_as_clicks() {
        // RATE 7 (a bucket of 2): 2 at once, then the bucket's rate, a
        // little under 7 a second: 8 after one second, 15 after two.
        let mut h = Harness::push(&RATED_SOURCE, "RATE 7", 0, 1);
        // The task runs every millisecond from `from` to `to`.
        let run = |h: &mut Harness, from: u64, to: u64| {
            for ms in from..=to {
                h.advance_to(Timestamp(1_000_000_000_000 + ms * 1_000_000));
                while h.run_task() == TaskResult::Worked {}
            }
            h.stats().get("count")
        };
        assert_eq!(run(&mut h, 0, 0), Some(2));
        assert_eq!(run(&mut h, 1, 999), Some(8));
        assert_eq!(run(&mut h, 1000, 1999), Some(15));
        assert_eq!(h.read_handler("rate").as_deref(), Ok("7"));
        // RATE 10000 reads back as Click's bucket has it.
        h.write_handler("rate", "10000").unwrap();
        assert_eq!(h.read_handler("rate").as_deref(), Ok("10005"));
        // A reset starts from one token.
        h.write_handler("reset", "").unwrap();
        assert_eq!(run(&mut h, 1999, 1999), Some(1));
    }

    #[test]
    fn pacer_saturates_at_absurd_rates() {
        let mut p = Pacer::new(u64::MAX);
        assert_eq!(p.due(Timestamp(0), 0), 1);
        assert_eq!(p.due(Timestamp(u64::MAX), 5), u64::MAX - 5);
        assert!(p.next_due(7) >= Timestamp(0));
    }

    #[test]
    fn rated_source_positional_order_and_handlers() {
        // Click: RatedSource(DATA, RATE, LIMIT, ACTIVE).
        let h = Harness::push(&RATED_SOURCE, "\\<0800>, 20, 1000, false", 0, 1);
        assert_eq!(h.read_handler("rate").unwrap(), "20");
        assert_eq!(h.read_handler("limit").unwrap(), "1000");
        assert_eq!(h.read_handler("active").unwrap(), "false");
        h.write_handler("rate", "50").unwrap();
        assert_eq!(h.read_handler("rate").unwrap(), "50");
        assert!(h.write_handler("rate", "fast").is_err());
        let h = Harness::push(&RATED_SOURCE, "LENGTH 100, BANDWIDTH 8kbps", 0, 1);
        assert_eq!(h.read_handler("rate").unwrap(), "10");
    }
}
