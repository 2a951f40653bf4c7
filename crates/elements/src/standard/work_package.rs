//! `WorkPackage`: a tunable, real per-packet cost (FastClick's research
//! element), to make a router slower than its generator on purpose.
//!
//! Per packet it draws W pseudo-random numbers (pure CPU work, a data
//! dependency chain the compiler cannot skip) and then makes N reads, each
//! either of the packet's bytes (R percent of them) or of a random word of
//! an S-megabyte array (cache and memory misses once S outgrows the
//! caches). Each read feeds the next random number, so the reads cannot
//! be overlapped or removed.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
};
use std::time::Instant;

/// The `WorkPackage` class.
pub static CLASS: ElementClass = ElementClass {
    name: "WorkPackage",
    ports: "1-/1-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "spends a set amount of CPU and memory work on each packet",
    synopsis: "WorkPackage(S, N, R, PAYLOAD [, W, ANALYSIS])",
    description: "Makes each packet cost real work, so that a test can make a router \
        slower than its generator by a chosen amount. Per packet: W rounds of a \
        pseudo-random number generator (xorshift64*; pure CPU work on one dependency \
        chain), then N dependent reads, R percent of them of the packet itself (its first \
        54 bytes, or all of it with PAYLOAD true) and the others of a random 32-bit word of \
        an array of S megabytes that each worker's instance allocates and fills when the \
        router starts. Packets leave on the output of the input they came in on, unchanged. \
        \n\nWhat a unit costs on the development machine (a virtual machine with 2 cores, \
        release build, measured with `bricks run` over 20000 to 100000 packets): one W \
        round about 2.5 ns; one read of the packet about 11 ns; one read of a 1 MB array \
        (cache) about 20 ns, of a 64 MB array (cache and TLB misses) about 400 ns; the \
        element's own cost per batch is negligible. Every packet also pays one round to \
        seed its reads. So `WorkPackage(S 1, N 0, R 0, PAYLOAD false, W 400)` costs about \
        1 us per packet: one core then forwards about 1 Mpps. The array is filled when the \
        router starts (about 6 ms per MB). With ANALYSIS true the element also measures \
        the time it spends (two clock reads per batch) and reports it.",
    ports: "one or more push inputs; as many push outputs",
    keywords: &[
        Keyword {
            name: "S",
            ty: "unsigned (MB)",
            default: None,
            doc: "array size per worker in megabytes (0 to 1024; 0 is one word)",
        },
        Keyword {
            name: "N",
            ty: "unsigned",
            default: None,
            doc: "dependent reads per packet (at most 1000000)",
        },
        Keyword {
            name: "R",
            ty: "unsigned (percent)",
            default: None,
            doc: "share of the reads that read the packet instead of the array (0 to 100)",
        },
        Keyword {
            name: "PAYLOAD",
            ty: "boolean",
            default: None,
            doc: "packet reads cover the whole packet (true) or its first 54 bytes (false)",
        },
        Keyword {
            name: "W",
            ty: "unsigned",
            default: Some("1"),
            doc: "pseudo-random rounds per packet (at most 100000000)",
        },
        Keyword {
            name: "ANALYSIS",
            ty: "boolean",
            default: Some("false"),
            doc: "measure the time spent (counters work_ns and cycles_work)",
        },
    ],
    counters: &[
        ("count", "packets worked on"),
        ("cycles_work", "W rounds done (with ANALYSIS)"),
        ("work_ns", "nanoseconds spent working (with ANALYSIS)"),
    ],
    example: "InfiniteSource(LIMIT 100) -> WorkPackage(S 1, N 10, R 20, PAYLOAD false, W 50) \
        -> Discard;",
    see_also: &["RatedUnqueue", "BandwidthRatedUnqueue"],
};

const MAX_MB: u64 = 1024;

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let s: u64 = args.read_mp("S")?;
    let n: u32 = args.read_mp("N")?;
    let r: u32 = args.read_mp("R")?;
    let payload: bool = args.read_mp("PAYLOAD")?;
    let w: u32 = args.read("W")?.unwrap_or(1);
    let analysis: bool = args.read("ANALYSIS")?.unwrap_or(false);
    if s > MAX_MB {
        return Err(ArgError::new(format!(
            "S {s} out of range (0 to {MAX_MB} megabytes)"
        )));
    }
    if r > 100 {
        return Err(ArgError::new(format!(
            "R {r} out of range (0 to 100 percent)"
        )));
    }
    if n > 1_000_000 || w > 100_000_000 {
        return Err(ArgError::new(
            "N (at most 1000000) or W (at most 100000000) out of range",
        ));
    }
    if ports.ninputs() != ports.noutputs() {
        return Err(ArgError::new(format!(
            "needs as many outputs as inputs, has {} and {}",
            ports.ninputs(),
            ports.noutputs()
        )));
    }
    let words = ((s << 20) / 4).max(1) as usize;
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let array: Vec<u32> = (0..words).map(|_| rng.next() as u32).collect();
    Ok(Box::new(WorkPackage {
        array,
        n,
        r,
        w,
        payload,
        analysis,
        rng,
        count: 0,
        rounds: 0,
        ns: 0,
        sink: 0,
    }))
}

/// xorshift64* (Vigna): one multiply and three shifts a round.
#[derive(Debug, Clone, Copy)]
struct XorShift(u64);

impl XorShift {
    #[inline(always)]
    fn next(&mut self) -> u64 {
        crate::rng::xorshift64star(&mut self.0)
    }
}

/// Spends work on packets.
#[derive(Debug)]
pub struct WorkPackage {
    array: Vec<u32>,
    n: u32,
    r: u32,
    w: u32,
    payload: bool,
    analysis: bool,
    rng: XorShift,
    count: u64,
    rounds: u64,
    ns: u64,
    /// Where the work's result goes, so that it is not optimised away.
    sink: u64,
}

impl WorkPackage {
    #[inline]
    fn work(&mut self, data: &[u8]) -> u64 {
        // Seeded from the generator whatever W is, so that every packet
        // reads other places (with W 0 too).
        let mut r = self.rng.next();
        for _ in 0..self.w {
            r = self.rng.next();
        }
        let span = if self.payload {
            data.len()
        } else {
            data.len().min(54)
        };
        let words = self.array.len() as u64;
        for _ in 0..self.n {
            // Ranges by multiply and shift (no division on the chain).
            let packet = ((r & 0xffff_ffff) * 100) >> 32 < u64::from(self.r);
            let word = if packet && span > 0 {
                let at = (((r >> 32) * span as u64) >> 32) as usize;
                let mut b = [0u8; 4];
                let end = (at + 4).min(data.len());
                b[..end - at].copy_from_slice(&data[at..end]);
                u32::from_le_bytes(b)
            } else {
                let at = (((r >> 32) * words) >> 32) as usize;
                self.array.get(at).copied().unwrap_or(0)
            };
            // The next place depends on the word just read: the reads
            // cannot overlap, each pays its full latency.
            r = u64::from(word) ^ (r << 24 ^ r << 16 ^ r << 8 ^ r >> 16);
            r = r.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        r
    }
}

impl Element for WorkPackage {
    #[inline]
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let start = self.analysis.then(Instant::now);
        let mut acc = 0u64;
        for p in batch.iter() {
            acc ^= self.work(p.data());
        }
        self.sink = std::hint::black_box(self.sink ^ acc);
        self.count += batch.len() as u64;
        if let Some(t) = start {
            self.ns += t.elapsed().as_nanos() as u64;
            self.rounds += u64::from(self.w) * batch.len() as u64;
        }
        cx.push(port, batch);
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        if self.analysis {
            s.counter("cycles_work", self.rounds);
            s.counter("work_ns", self.ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Packet;
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn packets_pass_unchanged_on_their_port() {
        let mut h = Harness::push(&CLASS, "1, 20, 50, true, W 10, ANALYSIS true", 2, 2);
        let frames: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; 1 + i as usize * 7]).collect();
        h.push_packets(1, frames.iter().map(|f| Packet::from_slice(f).unwrap()));
        h.push_bytes(0, &[]);
        h.push_bytes(0, &[1, 2]);
        assert_eq!(h.take_bytes(1), frames);
        assert_eq!(h.take_bytes(0), vec![vec![], vec![1, 2]]);
        let s = h.stats();
        assert_eq!(s.get("count"), Some(42));
        assert_eq!(s.get("cycles_work"), Some(420));
        assert!(s.get("work_ns").unwrap() > 0);
    }

    #[test]
    fn more_work_takes_longer() {
        // Real work: 200x the rounds cost clearly more time.
        let time = |w: u32| {
            let mut h = Harness::push(&CLASS, &format!("0, 0, 0, false, W {w}"), 1, 1);
            let t = Instant::now();
            for _ in 0..50 {
                h.push_packets(0, (0..32).map(|_| Packet::from_slice(&[0; 64]).unwrap()));
                h.take(0);
            }
            t.elapsed()
        };
        let small = time(10);
        let big = time(2000);
        assert!(big > small * 5, "{small:?} vs {big:?}");
    }

    #[test]
    fn arguments_are_checked() {
        let p = PortInfo {
            inputs: vec![bricks_element::Processing::Push],
            outputs: vec![bricks_element::Processing::Push],
        };
        assert!(make_element(&CLASS, "1, 1, 1", &p)
            .unwrap_err()
            .contains("PAYLOAD"));
        assert!(make_element(&CLASS, "2000, 1, 1, true", &p).is_err());
        assert!(make_element(&CLASS, "1, 1, 101, true", &p).is_err());
        assert!(make_element(&CLASS, "1, 1, 1, true, BOGUS 2", &p).is_err());
        let two_in = PortInfo {
            inputs: vec![bricks_element::Processing::Push; 2],
            outputs: vec![bricks_element::Processing::Push],
        };
        assert!(make_element(&CLASS, "1, 1, 1, true", &two_in)
            .unwrap_err()
            .contains("as many outputs"));
    }
}
