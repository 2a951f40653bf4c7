//! `BinSortQueue`: packets sorted approximately by their deadline
//! annotation in bins of a fixed interval (Hardekopf et al. §5.1's
//! BinSort: 1 ms bins, 1,024 of them, a bitmap of non-empty bins; O(1)
//! per packet, late by at most one bin).

use super::memrefs;
use super::ordered::{
    deadline_of, memrefs_doc, queue, read_capacity, Discipline, COUNTERS, MEM_COUNTERS,
};
use bricks_element::{ArgError, Args, Element, ElementClass, Keyword, Manual, Packet, PortInfo};
use bricks_qos::order::{Beyond, BinSort, BinSortConfig, Counters, Order};
use std::time::Duration;

/// The `BinSortQueue` class.
pub static CLASS: ElementClass = ElementClass {
    name: "BinSortQueue",
    ports: "1/1",
    processing: "h/l",
    manual: &MANUAL,
    make,
};

/// BinSort's keywords, shared with `MDSBinSortQueue`.
pub(crate) const BIN_KEYWORDS: [Keyword; 3] = [
    Keyword {
        name: "BIN",
        ty: "duration",
        default: Some("1ms"),
        doc: "each bin's interval: the most a packet can leave late, 1 ns to 1 hour",
    },
    Keyword {
        name: "BINS",
        ty: "unsigned",
        default: Some("1024"),
        doc: "number of bins, a power of two up to 1048576; BIN x BINS is the range of \
              deadlines sorted",
    },
    Keyword {
        name: "BEYOND",
        ty: "`clamp` or `reject`",
        default: Some("clamp"),
        doc: "a deadline beyond the last bin: put it in the last bin, or drop it",
    },
];

/// BinSort's extra counters, shared with `MDSBinSortQueue`.
pub(crate) const BIN_COUNTERS: [(&str, &str); 2] = [
    (
        "late_bins",
        "packets whose deadline bin had already passed: put in the first bin",
    ),
    (
        "beyond",
        "packets whose deadline lay beyond the last bin (clamped, or dropped and also in drops)",
    ),
];

static MANUAL: Manual = Manual {
    summary: "hands out packets by deadline bins (approximate sort in O(1), BinSort)",
    synopsis: "BinSortQueue([CAPACITY, BIN, BINS, BEYOND, MEMREFS bool])",
    description: concat!(
        "Takes pushed packets and hands them out, when pulled, in order of their \
        deadline annotation cut into bins of BIN each: a packet's bin is its deadline \
        divided by BIN; the BINS bins form a window that starts at the bin of the current \
        time (but never passes a bin that still holds packets) and moves with the clock. \
        Each bin is a FIFO (a list through an array reserved up front) and a bitmap marks \
        the non-empty ones: a pull takes the oldest packet of the first non-empty bin, \
        scanning the bitmap 64 bins per word, so enqueue is O(1) and dequeue O(1) while \
        the first bin has packets. Packets never leave before those of an earlier bin; \
        within a bin they leave in arrival order, so a packet leaves at most one BIN late \
        relative to exact deadline order (HeapQueue). The queue is work-conserving. A \
        deadline in a bin already passed goes in the first bin (late_bins); one beyond the \
        window is put in the last bin or dropped (BEYOND; counted in beyond). A packet with \
        no deadline (0) is ordered as if its deadline were its arrival time. A packet \
        arriving when CAPACITY packets are held is dropped and counted. Times are the \
        engine clock's (`--clock trace` makes them follow the packets).",
        memrefs_doc!()
    ),
    ports: "one push input; one pull output",
    keywords: &[
        Keyword {
            name: "CAPACITY",
            ty: "unsigned",
            default: Some("1000"),
            doc: "most packets held (1 to 16777216)",
        },
        BIN_KEYWORDS[0],
        BIN_KEYWORDS[1],
        BIN_KEYWORDS[2],
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
    example: "InfiniteSource(LIMIT 10, LENGTH 100) -> VirtualClock(RATE 8Mbps) \
        -> BinSortQueue(100, BIN 100us, BINS 256) -> Unqueue -> Discard;",
    see_also: &["VirtualClock", "MDSBinSortQueue", "HeapQueue", "FIFOQueue"],
};

impl<const M: bool> Discipline for BinSort<Packet, M> {
    const BINS: bool = true;
    const MEMREFS: bool = M;

    #[inline]
    fn put(&mut self, p: Packet, now: u64) -> Result<(), Packet> {
        let d = deadline_of(&p, now);
        self.enqueue(p, d, now)
    }

    #[inline]
    fn take(&mut self, _port: usize, _outputs: usize, now: u64) -> Option<Packet> {
        self.dequeue(now)
    }

    fn counters(&self) -> Counters {
        Order::counters(self)
    }

    fn clear(&mut self) {
        Order::clear(self, &mut drop);
    }
}

/// Reads CAPACITY, BIN, BINS and BEYOND.
pub(crate) fn read_config(args: &mut Args<'_>) -> Result<BinSortConfig, ArgError> {
    let capacity = read_capacity(args)?;
    let bin: Duration = args.read_p("BIN")?.unwrap_or(Duration::from_millis(1));
    let bins: usize = args.read_p("BINS")?.unwrap_or(1024);
    let beyond = match args.read_p::<String>("BEYOND")?.as_deref() {
        None | Some("clamp") => Beyond::Clamp,
        Some("reject") => Beyond::Reject,
        Some(o) => {
            return Err(ArgError::new(format!(
                "BEYOND `{o}`: expected clamp or reject"
            )))
        }
    };
    let bin_ns = bin.as_nanos();
    if bin_ns == 0 || bin_ns > 3_600_000_000_000 {
        return Err(ArgError::new(format!(
            "BIN {bin:?} out of range (1 ns to 1 hour)"
        )));
    }
    let cfg = BinSortConfig {
        capacity,
        bin_ns: bin_ns as u64,
        bins,
        beyond,
    };
    if !bins.is_power_of_two() || bins > 1 << 20 {
        return Err(ArgError::new(format!(
            "BINS {bins}: expected a power of two from 1 to 1048576"
        )));
    }
    Ok(cfg)
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let cfg = read_config(args)?;
    let e = |e: bricks_qos::order::OrderError| ArgError::new(e.to_string());
    Ok(if args.memrefs()? {
        queue(BinSort::<Packet, true>::new(cfg).map_err(e)?, 1, CLASS.name)
    } else {
        queue(BinSort::<Packet>::new(cfg).map_err(e)?, 1, CLASS.name)
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
    fn bins_in_order_fifo_within_one() {
        let mut h = Harness::new(&CLASS, "8, BIN 1ms, BINS 16", ports(1));
        let t0 = 1_000 * MS;
        h.advance_to(Timestamp(t0));
        // Bins (ms after t0): 3, 1, 3 (earlier deadline, same bin), 1.
        let ds = [
            (0u8, 3_900_000u64),
            (1, 1_000_000),
            (2, 3_100_000),
            (3, 1_500_000),
        ];
        h.push_packets(0, ds.iter().map(|&(t, d)| frame([10, 0, 0, 2], t, t0 + d)));
        assert_eq!(tags(&h.pull(0, 10)), vec![1, 3, 0, 2]);
        let s = h.stats();
        assert_eq!(
            (s.get("late"), s.get("late_bins"), s.get("beyond")),
            (Some(0), Some(0), Some(0))
        );
    }

    #[test]
    fn passed_and_beyond_deadlines() {
        let mut h = Harness::new(&CLASS, "8, BIN 1ms, BINS 16, BEYOND reject", ports(1));
        let t0 = 1_000 * MS;
        h.advance_to(Timestamp(t0));
        h.push_packets(
            0,
            [
                frame([10, 0, 0, 2], 0, t0 + 5 * MS),
                // 16 bins from t0: 16 ms ahead is beyond.
                frame([10, 0, 0, 2], 1, t0 + 16 * MS),
                // A deadline long passed goes first.
                frame([10, 0, 0, 2], 2, t0 - 50 * MS),
            ],
        );
        let s = h.stats();
        assert_eq!(
            (s.get("beyond"), s.get("drops"), s.get("late_bins")),
            (Some(1), Some(1), Some(1))
        );
        assert_eq!(tags(&h.pull(0, 10)), vec![2, 0]);
        assert_eq!(h.stats().get("late"), Some(1));
        // Clamped by default.
        let mut h = Harness::new(&CLASS, "8, BIN 1ms, BINS 16", ports(1));
        h.advance_to(Timestamp(t0));
        h.push_packets(
            0,
            [
                frame([10, 0, 0, 2], 0, t0 + 99 * MS),
                frame([10, 0, 0, 2], 1, t0 + 15 * MS),
            ],
        );
        assert_eq!(tags(&h.pull(0, 10)), vec![0, 1]);
        assert_eq!(h.stats().get("beyond"), Some(1));
    }

    #[test]
    fn bad_arguments_refused() {
        let ports = ports(1);
        for (args, why) in [
            ("10, BINS 1000", "power of two"),
            ("10, BIN 0ms", "out of range"),
            ("10, BEYOND drop", "clamp or reject"),
            ("0", "out of range"),
        ] {
            let e = bricks_runtime::testing::make_element(&CLASS, args, &ports).unwrap_err();
            assert!(e.contains(why), "{args}: {e}");
        }
    }
}
