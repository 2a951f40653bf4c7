//! `RandomSource`: packets of random bytes (Click's `randomsource.cc`),
//! as fast as scheduled or at a RATE.

use super::source::{Emitter, Pacer, LIMIT_KEYWORDS};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual,
    PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_packet::{DEFAULT_BURST, MAX_BATCH, MAX_FRAME};

/// The `RandomSource` class.
pub static CLASS: ElementClass = ElementClass {
    name: "RandomSource",
    ports: "0/1",
    processing: "/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "generates random packets whenever scheduled",
    synopsis: "RandomSource(LENGTH [, LIMIT, BURST, ACTIVE, KEYWORDS])",
    description: "Creates packets of LENGTH bytes filled with random bytes and pushes BURST \
        of them each time its task runs (or returns them when pulled), until LIMIT packets. \
        With RATE, packets leave at that many per second on the router's clock instead. \
        The bytes come from a SplitMix64 generator seeded with SEED, so that a run repeats \
        (Click's come from `click_random`).",
    ports: "no inputs; one output, push or pull",
    keywords: &[
        Keyword {
            name: "LENGTH",
            ty: "unsigned",
            default: None,
            doc: "bytes per packet (up to 2048)",
        },
        LIMIT_KEYWORDS[0],
        Keyword {
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "packets per task run (up to 256); Click's default is 1",
        },
        LIMIT_KEYWORDS[1],
        Keyword {
            name: "RATE",
            ty: "unsigned",
            default: Some("none"),
            doc: "packets per second (none: as fast as scheduled)",
        },
        Keyword {
            name: "SEED",
            ty: "unsigned",
            default: Some("1"),
            doc: "seed of the random bytes",
        },
        LIMIT_KEYWORDS[2],
        LIMIT_KEYWORDS[3],
        LIMIT_KEYWORDS[4],
    ],
    counters: &[("count", "packets emitted since the last reset")],
    example: "RandomSource(64, LIMIT 1000, STOP true) -> Queue -> Unqueue -> Discard;",
    see_also: &["InfiniteSource", "RatedSource"],
};

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
/// number generators", OOPSLA 2014): fast, and plenty for packet bytes.
#[derive(Debug, Clone)]
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn fill(&mut self, out: &mut [u8]) {
        let mut chunks = out.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        let r = self.next().to_le_bytes();
        rest.copy_from_slice(&r[..rest.len()]);
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let length: i64 = args.read_mp("LENGTH")?;
    let mut e = Emitter::read_limits(args, ports, true)?;
    let burst: usize = args.read_p("BURST")?.unwrap_or(DEFAULT_BURST);
    e.active = args.read_p("ACTIVE")?.unwrap_or(true);
    let rate: Option<u64> = args.read("RATE")?;
    let seed: u64 = args.read("SEED")?.unwrap_or(1);
    e.read_ends(args)?;
    let len = usize::try_from(length)
        .ok()
        .filter(|&l| l <= MAX_FRAME)
        .ok_or_else(|| ArgError::new(format!("bad length {length}")))?;
    if burst < 1 {
        return Err(ArgError::new("burst size must be >= 1"));
    }
    if rate == Some(0) {
        return Err(ArgError::new("RATE must be at least 1 packet per second"));
    }
    e.set_data(Vec::new(), Some(len)).map_err(ArgError::new)?;
    Ok(Box::new(RandomSource {
        e,
        burst: burst.min(MAX_BATCH),
        pacer: rate.map(Pacer::new),
        rng: SplitMix(seed),
        room_signal: None,
    }))
}

/// Emits packets of random bytes.
#[derive(Debug)]
pub struct RandomSource {
    e: Emitter,
    burst: usize,
    pacer: Option<Pacer>,
    rng: SplitMix,
    /// Whether the output reaches only queues (asked on the first run).
    room_signal: Option<bool>,
}

impl RandomSource {
    fn emit(&mut self, b: &mut Batch, n: usize, cx: &Context<'_>) {
        let len = self.e.length.unwrap_or(0);
        let rng = &mut self.rng;
        self.e.fill_with(b, n, cx, |p| {
            // Cannot fail: LENGTH was checked against the buffer size.
            if p.set_len(len).is_ok() {
                rng.fill(p.data_mut());
            }
        });
    }

    /// Packets to make now, at most `max`.
    fn due(&mut self, max: u64, cx: &Context<'_>) -> u64 {
        let n = max.min(self.e.remaining());
        match &mut self.pacer {
            Some(p) => p.due(cx.now(), self.e.count).min(n),
            None => n,
        }
    }
}

impl Element for RandomSource {
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
            if let Some(p) = &mut self.pacer {
                p.restart();
            }
            return TaskResult::Idle;
        }
        let max = if self.pacer.is_some() {
            MAX_BATCH
        } else {
            self.burst
        };
        let mut max = max;
        // Click's full-queue notifier (see InfiniteSource).
        let signal = *self
            .room_signal
            .get_or_insert_with(|| cx.has_room_signal(0));
        if signal {
            if let Some(room) = cx.downstream_room(0) {
                if room == 0 {
                    return TaskResult::Idle;
                }
                max = max.min(room);
            }
        }
        let n = self.due(max as u64, cx) as usize;
        if n == 0 {
            if let Some(p) = &self.pacer {
                cx.schedule_at(p.next_due(self.e.count));
            }
            return TaskResult::Waiting;
        }
        let mut b = Batch::new();
        self.emit(&mut b, n, cx);
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
        let n = self.due(max as u64, cx) as usize;
        self.emit(out, n, cx);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.e.count);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "burst" => Some(self.burst.to_string()),
            "rate" => self.pacer.as_ref().map(|p| p.rate.to_string()),
            "data" | "datasize" => None,
            _ => self.e.read(handler),
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
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
            "burst" => {
                let b = i64::from_arg(value.trim())
                    .ok()
                    .filter(|&b| b >= 1)
                    .ok_or("burst size must be >= 1")?;
                self.burst = (b as usize).min(MAX_BATCH);
                Ok(())
            }
            "length" => {
                let l = usize::from_arg(value.trim())
                    .ok()
                    .filter(|&l| l <= MAX_FRAME)
                    .ok_or_else(|| format!("bad length {}", value.trim()))?;
                self.e.set_data(Vec::new(), Some(l))
            }
            "data" | "datasize" => Err(format!("no write handler `{handler}`")),
            _ => self.e.write(handler, value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    #[test]
    fn random_bytes_of_length_until_limit() {
        let mut h = Harness::push(&CLASS, "13, 5, 2", 0, 1);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Done);
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 5);
        assert!(out.iter().all(|p| p.len() == 13));
        // Different packets, not all zero, and the same for the same seed.
        assert_ne!(out[0], out[1]);
        assert!(out[0].iter().any(|&b| b != 0));
        let mut again = Harness::push(&CLASS, "13, 5, 2", 0, 1);
        again.run_task();
        assert_eq!(again.take_bytes(0)[..2], out[..2]);
        let mut other = Harness::push(&CLASS, "13, 5, 2, SEED 7", 0, 1);
        other.run_task();
        assert_ne!(other.take_bytes(0)[0], out[0]);
    }

    #[test]
    fn splitmix_reference_value() {
        // SplitMix64 seeded with 0: first output 0xe220a8397b1dcdaf.
        assert_eq!(SplitMix(0).next(), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn rate_paces_and_handlers() {
        let mut h = Harness::push(&CLASS, "LENGTH 4, RATE 100, LIMIT 3, STOP true", 0, 1);
        h.advance_to(Timestamp(1_000_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.run_task(), TaskResult::Waiting);
        assert_eq!(h.timers(), vec![Timestamp(1_010_000_000)]);
        h.advance_to(Timestamp(1_020_000_000));
        assert_eq!(h.run_task(), TaskResult::Worked);
        assert_eq!(h.take(0).len(), 3);
        assert_eq!(h.run_task(), TaskResult::Done);
        assert!(h.stop_requested());
        assert_eq!(h.read_handler("length").unwrap(), "4");
        assert_eq!(h.read_handler("rate").unwrap(), "100");
        h.write_handler("length", "60").unwrap();
        assert!(h.write_handler("length", "9000").is_err());
        assert!(h.write_handler("burst", "0").is_err());
    }

    #[test]
    fn bad_arguments() {
        let p = PortInfo::default();
        for bad in [
            "",
            "-1",
            "9000",
            "64, BURST 0",
            "64, STOP true, END_CALL x.y",
        ] {
            assert!(
                bricks_runtime::testing::make_element(&CLASS, bad, &p).is_err(),
                "{bad}"
            );
        }
    }
}
