//! `AggregateFilter`: sends packets to outputs by their aggregate
//! annotation (Click's `elements/analysis/aggregatefilter.cc`).
//!
//! Click expands every listed aggregate into a byte per aggregate, in
//! groups of 256; a range such as `0-4294967295` makes it allocate 4 GB
//! (and loop forever, its counter wrapping). This one keeps the filters
//! as sorted, disjoint ranges, so the table is as large as the
//! configuration that wrote it, and a packet is looked up by binary
//! search.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, FromArg, Manual, PortInfo, Stats,
};

/// The `AggregateFilter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "AggregateFilter",
    ports: "1/1-254",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "filters packets based on aggregate annotation",
    synopsis: "AggregateFilter(ACTION_1 AGGREGATES, ..., ACTION_N AGGREGATES)",
    description: "Filters packets by their aggregate annotation. Each argument is an ACTION \
        and a space-separated list of AGGREGATES; a packet goes where the first filter \
        listing its aggregate says. An ACTION is an output number, `allow` (output 0), or \
        `drop` or `deny`; an output the element does not have drops too. AGGREGATES are \
        unsigned numbers and ranges `LOW-HIGH` (a range with HIGH below LOW is empty); a \
        lone `all` or `-` matches every aggregate not listed before, and makes later \
        filters match nothing (they are ignored with a warning, unless its output does not \
        exist). Packets no filter matches are dropped. An aggregate listed again for \
        another output keeps its first output, with a warning. Counted: `dropped`. \
        Differences from Click: the filters are kept as ranges, so `0-4294967295` costs one \
        entry (Click allocates a byte per aggregate and never finishes this range); a \
        warning about a range of aggregates already filtered names the range once \
        (Click: one warning per aggregate); the first bad argument stops the configuration \
        (Click reports them all).",
    ports: "one push input; 1 to 254 push outputs",
    keywords: &[],
    counters: &[(
        "dropped",
        "packets dropped: no filter matched, `drop`, or a missing output",
    )],
    example: "InfiniteSource(LIMIT 3, STOP true) -> AggregateLength\n\
              -> af :: AggregateFilter(allow 1-40, 1 all) -> Discard;\n\
              af[1] -> Discard;",
    see_also: &["IPFilter", "Classifier", "AggregateIP", "AggregateIPFlows"],
};

/// Aggregates `lo..=hi` go to output `port` (dropped when the element
/// has no such output).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Range {
    lo: u32,
    hi: u32,
    port: usize,
}

/// The filters: disjoint ranges in increasing order, and the output of
/// every other aggregate.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Filters {
    ranges: Vec<Range>,
    default: usize,
}

impl Filters {
    /// Adds `lo..=hi` for `port` where no earlier filter lists the
    /// aggregates; warns (into `warnings`) where one lists them for
    /// another output.
    fn add(&mut self, lo: u32, hi: u32, port: usize, argno: usize, warnings: &mut Vec<String>) {
        let mut gaps = Vec::new();
        let mut cur = u64::from(lo);
        let end = u64::from(hi);
        let first = self.ranges.partition_point(|r| r.hi < lo);
        for r in self.ranges[first..].iter().take_while(|r| r.lo <= hi) {
            if u64::from(r.lo) > cur {
                gaps.push((cur as u32, r.lo - 1));
            }
            if r.port != port {
                let (a, b) = (r.lo.max(lo), r.hi.min(hi));
                warnings.push(if a == b {
                    format!(
                        "pattern {argno}: aggregate {a} already filtered to output {}",
                        r.port
                    )
                } else {
                    format!(
                        "pattern {argno}: aggregates {a}-{b} already filtered to output {}",
                        r.port
                    )
                });
            }
            cur = u64::from(r.hi) + 1;
        }
        if cur <= end {
            gaps.push((cur as u32, hi));
        }
        self.ranges
            .extend(gaps.into_iter().map(|(lo, hi)| Range { lo, hi, port }));
        self.ranges.sort_unstable_by_key(|r| r.lo);
    }

    fn port(&self, agg: u32) -> usize {
        let i = self.ranges.partition_point(|r| r.hi < agg);
        match self.ranges.get(i) {
            Some(r) if r.lo <= agg => r.port,
            _ => self.default,
        }
    }
}

/// Click's `configure`: the filters of `patterns` for `noutputs`
/// outputs, and the warnings.
fn parse(patterns: &[&str], noutputs: usize) -> Result<(Filters, Vec<String>), String> {
    let mut f = Filters {
        ranges: Vec::new(),
        default: noutputs + 1,
    };
    let mut warnings = Vec::new();
    for (argno, pat) in patterns.iter().enumerate() {
        let words: Vec<&str> = pat.split_whitespace().collect();
        if words.is_empty() {
            return Err(format!("empty pattern {argno}"));
        }
        if f.default <= noutputs {
            warnings.push(format!("pattern {argno} matches no packets"));
            continue;
        }
        let port = match words[0] {
            "allow" => 0,
            "drop" | "deny" => noutputs,
            w => usize::from_arg(w)
                .map_err(|_| format!("pattern {argno}: expected a port number"))?,
        };
        match &words[1..] {
            [] => return Err(format!("pattern {argno} has no aggregates")),
            ["all" | "-"] => f.default = port,
            aggs => {
                for w in aggs {
                    let (lo, hi) = match u32::from_arg(w) {
                        Ok(a) => (a, a),
                        Err(_) => w
                            .split_once('-')
                            .and_then(|(a, b)| {
                                Some((u32::from_arg(a).ok()?, u32::from_arg(b).ok()?))
                            })
                            .ok_or_else(|| {
                                format!("pattern {argno}: bad aggregate number '{w}'")
                            })?,
                    };
                    if lo <= hi {
                        f.add(lo, hi, port, argno, &mut warnings);
                    }
                }
            }
        }
    }
    Ok((f, warnings))
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let rest = args.rest();
    let mut texts: Vec<&str> = rest.iter().map(|(t, _)| t.trim()).collect();
    // `AggregateFilter()` and a trailing comma give an empty argument,
    // which Click's argument splitting leaves out.
    if texts.last().is_some_and(|t| t.is_empty()) {
        texts.pop();
    }
    let (filters, warnings) = parse(&texts, ports.noutputs()).map_err(ArgError::new)?;
    Ok(Box::new(AggregateFilter {
        filters,
        noutputs: ports.noutputs(),
        warnings,
        dropped: 0,
    }))
}

/// One worker's AggregateFilter.
#[derive(Debug)]
pub struct AggregateFilter {
    filters: Filters,
    noutputs: usize,
    warnings: Vec<String>,
    dropped: u64,
}

impl Element for AggregateFilter {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let (f, n, dropped) = (&self.filters, self.noutputs, &mut self.dropped);
        cx.push_classified(batch, |p| {
            let port = f.port(p.anno().flow);
            if port < n {
                Some(port)
            } else {
                *dropped += 1;
                None
            }
        });
    }

    fn configure_message(&self) -> Option<String> {
        (!self.warnings.is_empty()).then(|| {
            self.warnings
                .iter()
                .map(|w| format!("warning: {w}"))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("dropped", self.dropped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    /// An ICMP echo request 10.0.0.1 -> 10.0.0.2 with aggregate `agg`.
    fn ping(agg: u32) -> Packet {
        let b = [
            0x45, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x01, 0x00, 0x00, 10, 0, 0, 1,
            10, 0, 0, 2, 0x08, 0x00, 0xf7, 0xff, 0x00, 0x00, 0x00, 0x00,
        ];
        let mut p = Packet::from_slice(&b).unwrap();
        p.anno_mut().flow = agg;
        p
    }

    fn aggs(h: &mut Harness, port: usize) -> Vec<u32> {
        h.take(port).iter().map(|p| p.anno().flow).collect()
    }

    #[test]
    fn first_matching_filter_decides() {
        let mut h = Harness::push(&CLASS, "allow 1 3-5, 1 4-8 0x10, drop 9", 1, 2);
        h.push_packets(0, [1, 2, 3, 4, 6, 9, 16, 100].map(ping));
        assert_eq!(aggs(&mut h, 0), vec![1, 3, 4]);
        assert_eq!(aggs(&mut h, 1), vec![6, 16]);
        assert_eq!(h.stats().get("dropped"), Some(3));
    }

    #[test]
    fn all_sets_the_default_and_silences_later_patterns() {
        let mut h = Harness::push(&CLASS, "1 7, allow all, 1 8", 1, 2);
        h.push_packets(0, [7, 8, 0, u32::MAX].map(ping));
        assert_eq!(aggs(&mut h, 0), vec![8, 0, u32::MAX]);
        assert_eq!(aggs(&mut h, 1), vec![7]);
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; 2],
        };
        let e = make_element(&CLASS, "1 7, allow all, 1 8", &ports).unwrap();
        assert_eq!(
            e.configure_message().unwrap(),
            "warning: pattern 2 matches no packets"
        );
        // An output it does not have leaves later patterns in force.
        let mut h = Harness::push(&CLASS, "5 -, allow 3", 1, 1);
        h.push_packets(0, [3, 4].map(ping));
        assert_eq!(aggs(&mut h, 0), vec![3]);
    }

    #[test]
    fn the_whole_range_costs_one_entry() {
        let (f, w) = parse(&["allow 0-4294967295"], 1).unwrap();
        assert_eq!(f.ranges.len(), 1);
        assert!(w.is_empty());
        assert_eq!(f.port(u32::MAX), 0);
        let (f, w) = parse(&["drop 10-20", "allow 0-4294967295"], 1).unwrap();
        assert_eq!(f.ranges.len(), 3);
        assert_eq!(
            w,
            vec!["pattern 1: aggregates 10-20 already filtered to output 1"]
        );
        assert_eq!((f.port(9), f.port(10), f.port(21)), (0, 1, 0));
        let (_, w) = parse(&["allow 4", "1 2-6"], 2).unwrap();
        assert_eq!(
            w,
            vec!["pattern 1: aggregate 4 already filtered to output 0"]
        );
        let (f, w) = parse(&["1 5-2", "allow 5 5"], 2).unwrap();
        assert!(w.is_empty());
        assert_eq!(
            f.ranges,
            vec![Range {
                lo: 5,
                hi: 5,
                port: 0
            }]
        );
    }

    #[test]
    fn bad_patterns_are_refused() {
        let e = |p: &[&str]| parse(p, 2).unwrap_err();
        assert_eq!(e(&["allow"]), "pattern 0 has no aggregates");
        assert_eq!(e(&["maybe 1"]), "pattern 0: expected a port number");
        assert_eq!(
            e(&["allow 1", "allow x"]),
            "pattern 1: bad aggregate number 'x'"
        );
        assert_eq!(e(&["allow 1-"]), "pattern 0: bad aggregate number '1-'");
        assert_eq!(e(&["allow 1", ""]), "empty pattern 1");
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push],
        };
        assert!(Harness::try_new(&CLASS, "allow 1 all", ports.clone()).is_err());
        // No pattern: every packet is dropped.
        let mut h = Harness::new(&CLASS, "", ports);
        h.push_packets(0, [ping(0)]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("dropped"), Some(1));
    }
}
