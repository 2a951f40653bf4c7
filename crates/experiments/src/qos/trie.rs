//! Fig. 4 (§4): route selection "pre", the 4-bit-stride multibit trie
//! (`bricks_lpm::Trie4`, the trie behind `RadixIPLookup`), at the
//! paper's best, average and worst depths (1, 3 and 8 levels read) and
//! on a realistic table; and §4.2's local memory: the references saved
//! when each worker keeps the trie's top two levels (the paper: 22% in
//! the worst case to 67% in the average one).
//!
//! Three measurements:
//!
//! - `RadixIPLookup` in a router's input path (`Strip -> CheckIPHeader
//!   -> GetIPAddress -> RadixIPLookup`) on one worker, with routes that
//!   make the frame's destination read 1, 3 or 8 levels: ns and
//!   instructions per packet over the same path without the lookup;
//! - the trie alone, timed over many lookups of one address per depth;
//! - a table of 100,000 prefixes shaped like today's (`bricks_lpm::gen`;
//!   the paper: "an average core router stores about 100,000 unique
//!   prefixes"), looked up at destinations drawn from its prefixes (each
//!   prefix alike, an address at random within it): the levels read
//!   (`Trie4::lookup_counting`), their average (the paper: 2.76), and the
//!   time per lookup.
//!
//! A level is one 64-bit entry load: one reference of two 32-bit words
//! (the paper's trie loads one 32-bit word per level).

use super::{opt0, time_interleaved, Experiment, Settings};
use crate::frames::{click_data, udp_frame};
use crate::measure::{Sample, Workload};
use crate::plot::{Chart, Series};
use crate::report::{Row, Table, Verdict};
use crate::Error;
use bricks_lpm::{Lpm4, NextHop, Prefix4, Trie4};
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Instant;

/// The paper's depths: best, average, worst.
pub const DEPTHS: [usize; 3] = [1, 3, 8];
/// "In a typical router today average trie lookup depth is 2.76".
pub const PAPER_AVERAGE_DEPTH: f64 = 2.76;
/// §4.2: two levels in local memory save 22% (worst) to 67% (average).
pub const PAPER_SAVED: (f64, f64) = (0.22, 0.67);
/// Levels kept per worker in §4.2's local memory.
pub const LOCAL_LEVELS: usize = 2;
/// 32-bit words per level read.
pub const WORDS_PER_LEVEL: f64 = 2.0;

const DST: Ipv4Addr = Ipv4Addr::new(1, 0, 0, 2);

/// Routes under which [`DST`] reads `depth` levels (1, 3 or 8): a
/// default route, and a prefix at the level where the walk must stop.
pub fn routes_for(depth: usize) -> Vec<(Prefix4, u32)> {
    let mut v = vec![(Prefix4::new(0, 0), 0)];
    // A prefix of length L lives at level (L - 1) / 4.
    let len = match depth {
        1 => None,
        d => Some((4 * d) as u8),
    };
    if let Some(len) = len {
        v.push((Prefix4::new(u32::from(DST), len), 0));
    }
    v
}

/// The input path with `RadixIPLookup` reading `depth` levels for every
/// packet (`depth` 0: the path without the lookup).
pub fn workload(depth: usize, packets: u64) -> Workload {
    let frame = udp_frame(
        [2, 0, 0, 0, 0, 2],
        [2, 0, 0, 0, 0, 1],
        Ipv4Addr::new(10, 0, 0, 1),
        DST,
        60,
    );
    let lookup = if depth == 0 {
        String::new()
    } else {
        let routes: Vec<String> = routes_for(depth)
            .iter()
            .map(|(p, out)| format!("{}/{} {out}", Ipv4Addr::from(p.addr), p.len))
            .collect();
        format!(" -> rt :: RadixIPLookup({})", routes.join(", "))
    };
    Workload::new(
        format!("trie-{depth}"),
        format!(
            "InfiniteSource(DATA {}, LIMIT {packets}, BURST 32) -> Strip(14) -> CheckIPHeader \
             -> GetIPAddress(16){lookup} -> sink :: Discard;",
            click_data(&frame)
        ),
        &["sink"],
    )
}

/// The workloads callgrind re-runs: `trie-D`, D = 0 (no lookup), 1, 3, 8.
pub fn workload_by_name(name: &str, packets: u64) -> Option<Workload> {
    let d: usize = name.strip_prefix("trie-")?.parse().ok()?;
    (d == 0 || DEPTHS.contains(&d)).then(|| workload(d, packets))
}

/// SplitMix64 for the destinations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// How destinations are drawn from a realistic table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    /// Each prefix alike, an address at random within it.
    PerPrefix,
    /// Each routed address alike (an address under a /16 as likely as
    /// one under a /24, so short prefixes weigh by their size).
    PerAddress,
}

/// A realistic trie of `prefixes` routes and `lookups` destinations drawn
/// from its prefixes.
fn realistic(prefixes: usize, lookups: usize, draw: Draw) -> Result<(Trie4, Vec<u32>), Error> {
    let table = bricks_lpm::gen::generate(prefixes, 0, 0x2002);
    let routes: Vec<(Prefix4, NextHop)> = table
        .v4
        .iter()
        .map(|(p, hops)| (*p, NextHop(hops.first().map_or(0, |h| h.output))))
        .collect();
    let trie = Trie4::build(&routes, Trie4::DEFAULT_MEMORY_BOUND).map_err(|e| Error::Run {
        workload: "trie-realistic".into(),
        message: e.to_string(),
    })?;
    let mut rng = Rng(0x4d2);
    if draw == Draw::PerAddress {
        // The routed space is the union of the prefixes that no other
        // covers (the table is sorted by address, a covering prefix
        // first): an address drawn uniformly over it, exactly.
        let mut top: Vec<Prefix4> = Vec::new();
        for (p, _) in &routes {
            if !top.last().is_some_and(|t| t.contains(p.addr)) {
                top.push(*p);
            }
        }
        let mut cumulative = Vec::with_capacity(top.len());
        let mut total = 0u64;
        for p in &top {
            total += 1u64 << (32 - u32::from(p.len));
            cumulative.push(total);
        }
        let addrs = (0..lookups)
            .map(|_| {
                let r = rng.next() % total.max(1);
                let i = cumulative.partition_point(|&c| c <= r);
                let before = if i == 0 { 0 } else { cumulative[i - 1] };
                top.get(i)
                    .map_or(0, |p| p.addr.wrapping_add((r - before) as u32))
            })
            .collect();
        return Ok((trie, addrs));
    }
    let addrs = (0..lookups)
        .map(|_| {
            let r = rng.next();
            let (p, _) = routes[(r % routes.len() as u64) as usize];
            let host = if p.len >= 32 {
                0
            } else {
                (r >> 32) as u32 & (u32::MAX >> p.len)
            };
            p.addr | host
        })
        .collect();
    Ok((trie, addrs))
}

/// Levels read per lookup of `addrs`: the average, and the share that
/// [`LOCAL_LEVELS`] levels kept per worker would save.
pub fn levels(trie: &Trie4, addrs: &[u32]) -> (f64, f64, [u64; 9]) {
    let mut hist = [0u64; 9];
    let (mut all, mut local) = (0u64, 0u64);
    for &a in addrs {
        let (_, refs) = trie.lookup_counting(a);
        hist[refs.min(8)] += 1;
        all += refs as u64;
        local += refs.min(LOCAL_LEVELS) as u64;
    }
    let n = addrs.len().max(1) as f64;
    (all as f64 / n, local as f64 / (all.max(1) as f64), hist)
}

/// Nanoseconds per lookup of `addrs` in `trie`, `runs` times.
fn time_lookups(trie: &Trie4, addrs: &[u32], runs: usize) -> Sample {
    let pass = || {
        let t = Instant::now();
        let mut hits = 0u64;
        for &a in addrs {
            hits += u64::from(black_box(trie.lookup(black_box(a))).is_some());
        }
        black_box(hits);
        t.elapsed().as_secs_f64() * 1e9 / addrs.len().max(1) as f64
    };
    pass();
    Sample((0..runs.max(1)).map(|_| pass()).collect())
}

/// Runs Fig. 4.
pub fn run(s: &Settings) -> Result<Vec<Row>, Error> {
    let exp = Experiment::Fig4;
    let packets = s.pick(5_000_000, 200_000);
    println!("  timing the input path with and without the lookup, in turn ...");
    let makers: Vec<Box<dyn Fn(u64) -> Workload>> = std::iter::once(0)
        .chain(DEPTHS)
        .map(|d| Box::new(move |n| workload(d, n)) as Box<dyn Fn(u64) -> Workload>)
        .collect();
    let refs: Vec<&dyn Fn(u64) -> Workload> = makers.iter().map(|b| b.as_ref()).collect();
    let mut timed = time_interleaved(&refs, packets, s.runs)?.into_iter();
    let base = timed.next().unwrap_or_default();
    let base_instr = s.instructions("trie-0")?;
    let mut t = Table::new(&[
        "depth",
        "levels read (lookup_counting)",
        "RadixIPLookup ns/packet over the path",
        "instr/packet (lookup's)",
        "Trie4 alone ns/lookup",
        "refs / words per lookup (32-bit)",
        "saved by 2 levels per worker",
        "paper refs",
    ]);
    let mut measured = Vec::new();
    let mut own_instr: Vec<Option<f64>> = Vec::new();
    for &d in &DEPTHS {
        println!("  trie-{d} ...");
        let routes: Vec<(Prefix4, NextHop)> = routes_for(d)
            .into_iter()
            .map(|(p, o)| (p, NextHop(o)))
            .collect();
        let trie = Trie4::build(&routes, 1 << 20).map_err(|e| Error::Run {
            workload: format!("trie-{d}"),
            message: e.to_string(),
        })?;
        let (avg, saved, _) = levels(&trie, &[u32::from(DST)]);
        let ns = timed.next().unwrap_or_default();
        let instr = s.instructions(&format!("trie-{d}"))?;
        let alone = time_lookups(
            &trie,
            &vec![u32::from(DST); s.pick(4_000_000, 400_000)],
            s.runs,
        );
        t.push(vec![
            d.to_string(),
            format!("{avg:.0}"),
            format!("{:+.1}", ns.median() - base.median()),
            opt0(instr.zip(base_instr).map(|(a, b)| a - b)),
            alone.show(2),
            format!("{avg:.0} / {:.0}", avg * WORDS_PER_LEVEL),
            format!("{:.0}%", saved * 100.0),
            d.to_string(),
        ]);
        measured.push((d, avg, saved, ns.median() - base.median(), alone.median()));
        own_instr.push(instr.zip(base_instr).map(|(a, b)| a - b));
    }
    let (prefixes, lookups) = s.pick((100_000, 1_000_000), (20_000, 100_000));
    println!("  realistic table of {prefixes} prefixes ...");
    let (trie, addrs) = realistic(prefixes, lookups, Draw::PerPrefix)?;
    let (avg, saved, hist) = levels(&trie, &addrs);
    let alone = time_lookups(&trie, &addrs, s.runs);
    let (trie_a, addrs_a) = realistic(prefixes, lookups, Draw::PerAddress)?;
    let (avg_a, saved_a, _) = levels(&trie_a, &addrs_a);
    let alone_a = time_lookups(&trie_a, &addrs_a, s.runs);
    for (what, avg, saved, alone) in [
        ("each prefix alike", avg, saved, &alone),
        ("each routed address alike", avg_a, saved_a, &alone_a),
    ] {
        t.push(vec![
            format!("realistic, {prefixes} prefixes, {what}"),
            format!("{avg:.2}"),
            "-".into(),
            "-".into(),
            alone.show(2),
            format!("{avg:.2} / {:.2}", avg * WORDS_PER_LEVEL),
            format!("{:.0}%", saved * 100.0),
            format!("{PAPER_AVERAGE_DEPTH} (average)"),
        ]);
    }
    println!(
        "Fig. 4: InfiniteSource (64-byte frames) -> Strip -> CheckIPHeader -> GetIPAddress -> \
         RadixIPLookup -> Discard, one worker, {packets} packets per run, the path without the \
         lookup {} ns/packet{}; the trie alone timed over one address per depth, and over \
         {lookups} destinations drawn from a generated table (each prefix alike)\n",
        base.show(1),
        base_instr.map_or(String::new(), |i| format!(", {i:.0} instructions"))
    );
    print!("{}", t.render());
    println!(
        "\nlevels read on the realistic table: {}",
        (1..=8)
            .map(|l| format!(
                "{l}: {:.1}%",
                hist[l] as f64 * 100.0 / lookups.max(1) as f64
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let pts = |f: fn(&(usize, f64, f64, f64, f64)) -> f64| -> Vec<(f64, f64)> {
        measured.iter().map(|m| (m.0 as f64, f(m))).collect()
    };
    Chart {
        title: "Fig. 4: trie lookup cost against the levels read".into(),
        x_label: "trie depth (levels read)".into(),
        y_label: "ns or references per lookup".into(),
        log_x: false,
        series: vec![
            Series::measured("bricks RadixIPLookup, ns over the path", pts(|m| m.3)),
            Series::measured("bricks Trie4 alone, ns per lookup", pts(|m| m.4)),
            Series::measured(
                "bricks, references with 2 levels per worker",
                pts(|m| m.1 * (1.0 - m.2)),
            ),
            Series::reference("paper: one reference per level", pts(|m| m.0 as f64)),
        ],
    }
    .write_svg(&s.out.join("fig4-trie.svg"))?;

    let worst = measured.iter().find(|m| m.0 == 8).map_or(0.0, |m| m.2);
    let d3 = measured.iter().find(|m| m.0 == 3).map_or(0.0, |m| m.2);
    let ns1 = measured[0].3;
    let ns8 = measured[measured.len() - 1].3;
    Ok(vec![
        Row {
            experiment: exp.figure().into(),
            measure: "references per lookup at depths 1, 3, 8".into(),
            paper: "1, 3, 8 (one load per level)".into(),
            bricks: measured
                .iter()
                .map(|m| format!("{:.0}", m.1))
                .collect::<Vec<_>>()
                .join(", "),
            verdict: Verdict::from_check(
                measured.iter().all(|m| (m.1 - m.0 as f64).abs() < 1e-9),
                "one 64-bit entry load per level, as the paper's one-word load",
            ),
        },
        Row {
            experiment: exp.figure().into(),
            measure: "ns per packet against depth (RadixIPLookup, one core)".into(),
            paper: "worst case needs 2x the threads of the average (4 against 2)".into(),
            bricks: format!(
                "depth 1 {ns1:+.1}, depth 8 {ns8:+.1} ns over the path ({:.1} ns per level){}",
                (ns8 - ns1) / 7.0,
                match (own_instr[0], own_instr[own_instr.len() - 1]) {
                    (Some(a), Some(b)) => format!(
                        "; {a:.0} and {b:.0} instructions ({:.1} per level)",
                        (b - a) / 7.0
                    ),
                    _ => String::new(),
                }
            ),
            verdict: Verdict::from_check(
                match (own_instr[0], own_instr[own_instr.len() - 1]) {
                    (Some(a), Some(b)) => b > a && ns8 > ns1 - 2.0,
                    _ => ns8 > ns1,
                },
                "the deeper walk costs more (instructions exactly; ns within the noise of a \
                 shared machine); the levels of one address stay in cache here, so a level \
                 costs a dependent load hit, not an SRAM latency",
            ),
        },
        Row {
            experiment: exp.figure().into(),
            measure: format!("average depth, {prefixes} generated prefixes"),
            paper: format!("{PAPER_AVERAGE_DEPTH}"),
            bricks: format!(
                "{avg:.2} with each prefix alike ({:.1} ns per lookup), {avg_a:.2} with each \
                 routed address alike ({:.1} ns)",
                alone.median(),
                alone_a.median()
            ),
            verdict: Verdict::from_check(
                (avg - PAPER_AVERAGE_DEPTH).abs() <= 0.75
                    || (avg_a - PAPER_AVERAGE_DEPTH).abs() <= 0.75,
                "the depth depends on the traffic: 60% of today's prefixes are /24s, read in 6 \
                 levels unless a shorter prefix ends the walk, while an address drawn over the \
                 routed space mostly falls under a short prefix, with fewer levels; the paper's \
                 figure is a 2001 table's",
            ),
        },
        Row {
            experiment: exp.figure().into(),
            measure: "references saved by the top 2 levels per worker".into(),
            paper: format!(
                "{:.0}% (worst) to {:.0}% (average)",
                PAPER_SAVED.0 * 100.0,
                PAPER_SAVED.1 * 100.0
            ),
            bricks: format!(
                "depth 8: {:.0}%, depth 3: {:.0}%, realistic: {:.0}%",
                worst * 100.0,
                d3 * 100.0,
                saved * 100.0
            ),
            verdict: Verdict::from_check(
                (worst - 0.25).abs() < 1e-9 && (d3 - 2.0 / 3.0).abs() < 1e-9,
                "2 of 8 and 2 of 3 levels: 25% and 67% (the paper's 22% counts its SDRAM \
                 route-entry read as well)",
            ),
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_make_the_depths() {
        for d in DEPTHS {
            let routes: Vec<(Prefix4, NextHop)> = routes_for(d)
                .into_iter()
                .map(|(p, o)| (p, NextHop(o)))
                .collect();
            let t = Trie4::build(&routes, 1 << 20).unwrap();
            assert_eq!(t.lookup_counting(u32::from(DST)).1, d);
            let (avg, saved, _) = levels(&t, &[u32::from(DST)]);
            assert_eq!(avg, d as f64);
            assert!((saved - (d.min(2) as f64 / d as f64)).abs() < 1e-12);
            let r = workload(d, 1000).run().unwrap();
            assert_eq!(r.delivered, 1000);
        }
        assert!(workload_by_name("trie-2", 1).is_none());
        for draw in [Draw::PerPrefix, Draw::PerAddress] {
            let (trie, addrs) = realistic(2000, 1000, draw).unwrap();
            assert_eq!(addrs.len(), 1000, "{draw:?}");
            // Every destination lies in a prefix: each lookup finds a route.
            assert!(addrs.iter().all(|&a| trie.lookup(a).is_some()));
            let (avg, _, _) = levels(&trie, &addrs);
            assert!((1.0..=8.0).contains(&avg));
        }
    }
}
