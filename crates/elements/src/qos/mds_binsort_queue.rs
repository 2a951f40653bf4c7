//! `MDSBinSortQueue`: BinSort replicated (Hardekopf et al. §5.2's
//! MDS-BinSort: one BinSort per group of dequeuers, enqueues spread over
//! them), with each pull output serving its own replicas.

use super::binsort_queue::{read_config, BIN_COUNTERS, BIN_KEYWORDS};
use super::memrefs;
use super::ordered::{deadline_of, memrefs_doc, queue, Discipline, COUNTERS, MEM_COUNTERS};
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, Packet, PortInfo};
use bricks_qos::order::{Counters, MdsBinSort, Order, Spread};

/// The `MDSBinSortQueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MDSBinSortQueue",
    ports: "1/1-",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "BinSort replicated: enqueues spread over REPLICAS BinSorts, each output \
        pulling from its own",
    synopsis: "MDSBinSortQueue([CAPACITY, REPLICAS, BIN, BINS, BEYOND, SPREAD, SEED, GLOBAL, \
        MEMREFS bool])",
    description: concat!(
        "REPLICAS BinSorts (see BinSortQueue for the bins, the window and the \
        counters) share CAPACITY, each holding CAPACITY/REPLICAS packets. A pushed packet \
        goes to the next replica in turn (SPREAD rr, the paper's) or to a pseudo-random one \
        (SPREAD random, seeded by SEED so runs repeat; the paper's proposed cure for \
        convoying); when that replica is full the following ones are tried, and the packet \
        is dropped only when every replica is full. Merge: pull output p of N serves the \
        replicas r with r mod N = p (one replica per output when REPLICAS equals the \
        number of outputs, the paper's static mapping of dequeuers), taking from whichever \
        of them has the earliest first non-empty bin, ties taken in turn. With one output, \
        or GLOBAL true, every output merges every replica: packets then leave in order of \
        bins across all replicas, at most one BIN late like a single BinSort, and in \
        arrival order within a bin per replica only. Otherwise the one-bin bound holds \
        within each output's share. The deadline annotation orders packets as in \
        BinSortQueue. Under MEMREFS the replicas' counts are summed, and a merging pull also \
        counts the length, base and first bin of each non-empty replica it compares.",
        memrefs_doc!()
    ),
    ports: "one push input; one or more pull outputs",
    keywords: &[
        Keyword {
            name: "CAPACITY",
            ty: "unsigned",
            default: Some("1000"),
            doc: "most packets held in all, shared equally by the replicas",
        },
        Keyword {
            name: "REPLICAS",
            ty: "unsigned",
            default: Some("the number of outputs"),
            doc: "number of BinSorts, 1 to 1024 and at most CAPACITY",
        },
        BIN_KEYWORDS[0],
        BIN_KEYWORDS[1],
        BIN_KEYWORDS[2],
        Keyword {
            name: "SPREAD",
            ty: "`rr` or `random`",
            default: Some("rr"),
            doc: "how pushed packets are spread over the replicas",
        },
        Keyword {
            name: "SEED",
            ty: "unsigned",
            default: Some("1"),
            doc: "seed of SPREAD random",
        },
        Keyword {
            name: "GLOBAL",
            ty: "boolean",
            default: Some("false"),
            doc: "every output merges every replica (global order) instead of its own",
        },
        memrefs::KEYWORD,
    ],
    counters: &[
        COUNTERS[0],
        COUNTERS[1],
        COUNTERS[2],
        COUNTERS[3],
        COUNTERS[4],
        COUNTERS[5],
        BIN_COUNTERS[0],
        BIN_COUNTERS[1],
        MEM_COUNTERS[0],
        MEM_COUNTERS[1],
        MEM_COUNTERS[2],
        MEM_COUNTERS[3],
        MEM_COUNTERS[4],
        MEM_COUNTERS[5],
        MEM_COUNTERS[6],
    ],
    example: "q :: MDSBinSortQueue(100, REPLICAS 4, BIN 100us, BINS 256); \
        InfiniteSource(LIMIT 10, LENGTH 100) -> VirtualClock(RATE 8Mbps) -> q; \
        q[0] -> Unqueue -> Discard; q[1] -> Unqueue -> Discard;",
    see_also: &["BinSortQueue", "VirtualClock", "HashFIFOQueue"],
};

/// The replicas and how outputs merge them.
struct Mds<const M: bool> {
    m: MdsBinSort<Packet, M>,
    global: bool,
}

impl<const M: bool> Discipline for Mds<M> {
    const BINS: bool = true;
    const MEMREFS: bool = M;

    #[inline]
    fn put(&mut self, p: Packet, now: u64) -> Result<(), Packet> {
        let d = deadline_of(&p, now);
        self.m.enqueue(p, d, now)
    }

    #[inline]
    fn take(&mut self, port: usize, outputs: usize, now: u64) -> Option<Packet> {
        if self.global {
            self.m.dequeue_among(0, 1, now)
        } else {
            self.m.dequeue_among(port, outputs, now)
        }
    }

    fn counters(&self) -> Counters {
        self.m.counters()
    }

    fn clear(&mut self) {
        self.m.clear(&mut drop);
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let outputs = ports.outputs.len().max(1);
    let cfg = read_config(args)?;
    let replicas: usize = args.read_p("REPLICAS")?.unwrap_or(outputs);
    let spread: String = args.read("SPREAD")?.unwrap_or_else(|| "rr".into());
    let seed: u64 = args.read("SEED")?.unwrap_or(1);
    let global: bool = args.read("GLOBAL")?.unwrap_or(false);
    let spread = match spread.as_str() {
        "rr" => Spread::RoundRobin,
        "random" => Spread::Random(seed),
        o => {
            return Err(ArgError::new(format!(
                "SPREAD `{o}`: expected rr or random"
            )))
        }
    };
    if replicas < outputs && !global {
        return Err(ArgError::new(format!(
            "{replicas} replicas for {outputs} outputs: some outputs would have none"
        ))
        .with_help("give at least one replica per output, or GLOBAL true"));
    }
    let e = |e: bricks_qos::order::OrderError| ArgError::new(e.to_string());
    Ok(if args.memrefs()? {
        let m = MdsBinSort::<Packet, true>::new(cfg, replicas, spread).map_err(e)?;
        queue(Mds { m, global }, outputs, CLASS.name)
    } else {
        let m = MdsBinSort::<Packet>::new(cfg, replicas, spread).map_err(e)?;
        queue(Mds { m, global }, outputs, CLASS.name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qos::ordered::testing::{frame, ports, tags};
    use bricks_packet::Timestamp;
    use bricks_runtime::testing::Harness;

    const MS: u64 = 1_000_000;

    #[test]
    fn each_output_serves_its_own_replica() {
        let mut h = Harness::new(&CLASS, "8, REPLICAS 2, BINS 64", ports(2));
        let t0 = 1_000 * MS;
        h.advance_to(Timestamp(t0));
        // Round robin: tags 0 and 2 to replica 0, 1 and 3 to replica 1.
        let ds = [(0u8, 9u64), (1, 2), (2, 5), (3, 1)];
        h.push_packets(
            0,
            ds.iter()
                .map(|&(t, d)| frame([10, 0, 0, 2], t, t0 + d * MS)),
        );
        assert_eq!(tags(&h.pull(1, 10)), vec![3, 1]);
        assert_eq!(tags(&h.pull(0, 10)), vec![2, 0]);
    }

    #[test]
    fn one_output_merges_globally() {
        let mut h = Harness::new(&CLASS, "8, REPLICAS 2, BINS 64", ports(1));
        let t0 = 1_000 * MS;
        h.advance_to(Timestamp(t0));
        let ds = [(0u8, 9u64), (1, 2), (2, 5), (3, 1), (4, 7)];
        h.push_packets(
            0,
            ds.iter()
                .map(|&(t, d)| frame([10, 0, 0, 2], t, t0 + d * MS)),
        );
        assert_eq!(tags(&h.pull(0, 10)), vec![3, 1, 2, 4, 0]);
        assert_eq!(h.stats().get("dequeued"), Some(5));
    }

    #[test]
    fn full_everywhere_drops() {
        let mut h = Harness::new(&CLASS, "4, REPLICAS 2, SPREAD random, SEED 9", ports(1));
        h.push_packets(0, (0..6u8).map(|t| frame([10, 0, 0, 2], t, 0)));
        let s = h.stats();
        assert_eq!((s.get("length"), s.get("drops")), (Some(4), Some(2)));
    }

    #[test]
    fn bad_arguments_refused() {
        for (args, outs, why) in [
            ("8, REPLICAS 1", 2, "some outputs would have none"),
            ("8, SPREAD hash", 1, "rr or random"),
            ("2, REPLICAS 3", 1, "replicas"),
        ] {
            let e = bricks_runtime::testing::make_element(&CLASS, args, &ports(outs)).unwrap_err();
            assert!(e.contains(why), "{args}: {e}");
        }
    }
}
