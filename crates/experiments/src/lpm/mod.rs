//! `bricks bench lpm`: route lookup at Internet scale, measured.
//!
//! Tables come from the seeded generator (today's prefix-length
//! distributions). Two address mixes: uniform random addresses, the worst
//! case for caches, and a trace-like mix in which 90% of lookups go to
//! 1,000 popular destinations. Lookups per second are the median of
//! several runs over 4M addresses, one at a time and in batches of 32.

use crate::measure::engine_for;
use crate::measure::Sample;
use crate::Error;
use bricks_lpm::bench::{
    addresses_in4, addresses_in6, churn4, measure4, measure6, measure_updates_while_forwarding4,
    memory_references, random_addresses4, SplitMix64,
};
use bricks_lpm::source::InternedRoutes;
use bricks_lpm::{
    Dir24_8, Lpm4, Lpm4Update, Lpm6, Lpm6Update, NextHop, Poptrie6, Prefix4, Prefix6, Trie4,
};
use std::process::ExitCode;
use std::time::Instant;

const MEMORY: usize = 1 << 30;

/// `bricks bench lpm` options.
#[derive(clap::Args)]
pub struct LpmArgs {
    /// IPv4 prefixes of the large table.
    #[arg(long, default_value_t = 1_000_000)]
    pub v4: usize,
    /// IPv6 prefixes.
    #[arg(long, default_value_t = 200_000)]
    pub v6: usize,
    /// Timed runs per figure; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Seconds of the update-while-forwarding run.
    #[arg(long, default_value_t = 3)]
    pub update_seconds: u64,
    /// Packets through the IPv4 forwarding path with the large table.
    #[arg(long, default_value_t = 4_000_000)]
    pub packets: u64,
}

/// Addresses: uniform, and a trace-like mix (90% to 1,000 destinations
/// inside the table's prefixes, 10% uniform).
fn v4_addrs(routes: &[(Prefix4, NextHop)], n: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
    let uniform = random_addresses4(n, seed);
    let popular = addresses_in4(routes, 1000, seed + 1);
    let mut r = SplitMix64(seed + 2);
    let trace = (0..n)
        .map(|i| {
            if r.next_u64() % 10 < 9 {
                popular[(r.next_u64() % 1000) as usize]
            } else {
                uniform[i]
            }
        })
        .collect();
    (uniform, trace)
}

/// Median lookups/s of several single-round measurements.
fn rate4(t: &dyn Lpm4, addrs: &[u32], batch: usize, runs: usize) -> f64 {
    Sample((0..runs).map(|_| measure4(t, addrs, batch, 1)).collect()).median()
}

/// IPv6 counterpart of [`rate4`].
fn rate6(t: &dyn Lpm6, addrs: &[u128], batch: usize, runs: usize) -> f64 {
    Sample((0..runs).map(|_| measure6(t, addrs, batch, 1)).collect()).median()
}

fn mlps(r: f64) -> String {
    format!("{:.1}", r / 1e6)
}

fn mib(b: usize) -> String {
    format!("{:.1}", b as f64 / (1 << 20) as f64)
}

fn table(v4: usize, v6: usize) -> InternedRoutes {
    bricks_lpm::gen::generate(v4, v6, 1).intern()
}

/// A table that could not be built (more memory than allowed, for one).
fn build_error(e: impl std::fmt::Display) -> Error {
    Error::Run {
        workload: "bench lpm".into(),
        message: format!("building the table: {e}"),
    }
}

/// Runs `bricks bench lpm`.
pub fn bench(a: &LpmArgs) -> Result<ExitCode, Error> {
    let runs = a.runs.max(1);
    println!("bricks bench lpm: generated tables (seed 1), 4M lookups per run, median of {runs} runs, one core");
    println!(
        "\n{:<9} {:>9} {:>9} {:>8} {:>14} {:>14} {:>14} {:>14}",
        "table",
        "algorithm",
        "MiB",
        "build s",
        "uniform 1x",
        "uniform x32",
        "trace 1x",
        "trace x32"
    );
    println!(
        "{:<9} {:>9} {:>9} {:>8} {:>14} {:>14} {:>14} {:>14}",
        "", "", "", "", "M lookups/s", "", "", ""
    );
    let mut big_routes = Vec::new();
    for size in [a.v4, 256_000] {
        let interned = table(size, 0);
        let (uniform, trace) = v4_addrs(&interned.v4, 4_000_000, 7);
        let label = format!("{}K v4", size / 1000);
        let t0 = Instant::now();
        let d = Dir24_8::build(&interned.v4, MEMORY).map_err(build_error)?;
        let build_d = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let r = Trie4::build(&interned.v4, MEMORY).map_err(build_error)?;
        let build_r = t0.elapsed().as_secs_f64();
        for (t, build) in [(&d as &dyn Lpm4, build_d), (&r as &dyn Lpm4, build_r)] {
            println!(
                "{:<9} {:>9} {:>9} {:>8.3} {:>14} {:>14} {:>14} {:>14}",
                label,
                t.name(),
                mib(t.memory_bytes()),
                build,
                mlps(rate4(t, &uniform, 1, runs)),
                mlps(rate4(t, &uniform, 32, runs)),
                mlps(rate4(t, &trace, 1, runs)),
                mlps(rate4(t, &trace, 32, runs)),
            );
        }
        // Hardekopf et al.'s cost model: memory references per lookup.
        let refs = memory_references(&r, &uniform[..200_000]);
        println!(
            "{:<9} {:>9}  memory references per lookup (uniform): best {} average {:.2} worst {}",
            label, "trie4", refs.best, refs.average, refs.worst
        );
        if size == a.v4 {
            big_routes = interned.v4;
        }
    }

    // IPv6.
    let i6 = table(0, a.v6);
    let p = Poptrie6::build(&i6.v6, MEMORY).map_err(build_error)?;
    // Uniform in 2000::/3: random bits under the 3-bit global unicast tag.
    let uniform6: Vec<u128> = addresses_in6(&[], 4_000_000, 9)
        .into_iter()
        .map(|a| (0x2000u128 << 112) | a >> 3)
        .collect();
    let inside6 = addresses_in6(&i6.v6, 4_000_000, 10);
    let t0 = Instant::now();
    let _ = Poptrie6::build(&i6.v6, MEMORY).map_err(build_error)?;
    println!(
        "{:<9} {:>9} {:>9} {:>8.3} {:>14} {:>14} {:>14} {:>14}",
        format!("{}K v6", a.v6 / 1000),
        p.name(),
        mib(p.memory_bytes()),
        t0.elapsed().as_secs_f64(),
        mlps(rate6(&p, &uniform6, 1, runs)),
        mlps(rate6(&p, &uniform6, 32, runs)),
        mlps(rate6(&p, &inside6, 1, runs)),
        mlps(rate6(&p, &inside6, 32, runs)),
    );
    println!("(IPv6 columns: uniform in 2000::/3, and addresses inside the table's prefixes)");

    if big_routes.is_empty() {
        // `--v4 0`: no IPv4 table to update or forward with.
        println!("(no IPv4 table: updates while forwarding and the IPv4 path are skipped)");
        return Ok(ExitCode::SUCCESS);
    }
    updates(&big_routes, a.update_seconds)?;
    change_costs(&big_routes, &i6.v6, runs)?;
    forwarding(&big_routes, a.packets, runs)?;
    Ok(ExitCode::SUCCESS)
}

/// The 99th percentile of `v` (sorted here).
fn p99(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() * 99 / 100).copied().unwrap_or(0.0)
}

/// What one route change costs the writer. Both tables push answers down
/// to their leaves, so the default route rewrites every entry it covers
/// (DIR-24-8's 2^24 and Poptrie's 2^20 direct entries, and the nodes
/// under them), while a long prefix touches a few entries. The new long
/// prefixes are from the benchmarking and documentation ranges
/// (198.18.0.0/15, 2001:db8::/32).
fn change_costs(
    v4: &[(Prefix4, NextHop)],
    v6: &[(Prefix6, NextHop)],
    runs: usize,
) -> Result<(), Error> {
    fn timed<T>(f: impl FnOnce() -> T) -> f64 {
        let t = Instant::now();
        std::hint::black_box(f());
        t.elapsed().as_secs_f64()
    }
    let d = Dir24_8::build(v4, MEMORY).map_err(build_error)?;
    let p = Poptrie6::build(v6, MEMORY).map_err(build_error)?;
    let mut add4 = Vec::new();
    let mut del4 = Vec::new();
    let mut add6 = Vec::new();
    let mut del6 = Vec::new();
    for r in 0..runs as u32 {
        let nh = NextHop(1 + r % 7);
        add4.push(timed(|| d.insert(Prefix4::new(0, 0), nh)));
        del4.push(timed(|| d.remove(Prefix4::new(0, 0))));
        add6.push(timed(|| p.insert(Prefix6::new(0, 0), nh)));
        del6.push(timed(|| p.remove(Prefix6::new(0, 0))));
    }
    let mut one4: Vec<f64> = (0..512u32)
        .map(|i| timed(|| d.insert(Prefix4::new(0xc612_0000 | i << 8, 24), NextHop(3))))
        .collect();
    let mut one6: Vec<f64> = (0..1000u128)
        .map(|i| timed(|| p.insert(Prefix6::new(0x2001_0db8 << 96 | i << 80, 48), NextHop(3))))
        .collect();
    let ms = |v: Vec<f64>| format!("{:.1} ms", Sample(v).median() * 1e3);
    let us = |v: &[f64]| format!("{:.2} us", Sample(v.to_vec()).median() * 1e6);
    println!("\nroute changes (the writer alone; median of {runs} for the default route):");
    println!(
        "  dir24-8, {}K prefixes: 0.0.0.0/0 added in {}, removed in {}; a new /24 in {} (median of 512; 99th percentile {:.2} us)",
        v4.len() / 1000,
        ms(add4),
        ms(del4),
        us(&one4),
        p99(&mut one4) * 1e6
    );
    println!(
        "  poptrie6, {}K prefixes: ::/0 added in {}, removed in {}; a new /48 in {} (median of 1000; 99th percentile {:.2} us)",
        v6.len() / 1000,
        ms(add6),
        ms(del6),
        us(&one6),
        p99(&mut one6) * 1e6
    );
    Ok(())
}

/// Route changes applied by one thread while another looks up (BGP-like
/// churn: withdrawals and re-announcements with other next hops).
fn updates(routes: &[(Prefix4, NextHop)], seconds: u64) -> Result<(), Error> {
    let d = Dir24_8::build(routes, MEMORY).map_err(build_error)?;
    let addrs = random_addresses4(1 << 20, 11);
    let alone = measure4(&d, &addrs, 32, 8);
    // Enough changes for about `seconds` at a few million per second.
    let changes = churn4(routes, (seconds.max(1) * 3_000_000) as usize, 12);
    let (rate, during) = measure_updates_while_forwarding4(&d, &changes, &addrs, 32);
    println!(
        "\nupdates while forwarding (dir24-8, {}K prefixes, writer and reader on separate cores):",
        routes.len() / 1000
    );
    println!(
        "  {:.0} route changes/s applied ({} changes); reader {} M lookups/s during, {} M lookups/s alone ({:.2}x)",
        rate,
        changes.len(),
        mlps(during),
        mlps(alone),
        during / alone
    );
    Ok(())
}

/// The IPv4 forwarding path with the large table behind DirectIPLookup.
fn forwarding(routes: &[(Prefix4, NextHop)], packets: u64, runs: usize) -> Result<(), Error> {
    let dir = std::env::temp_dir().join(format!("bricks-bench-lpm-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let file = dir.join("routes.txt");
    // One output per route, all forwarded the same way below.
    let mut text = String::with_capacity(routes.len() * 24);
    for (p, _) in routes {
        text.push_str(&format!(
            "{}/{} 0\n",
            std::net::Ipv4Addr::from(p.addr),
            p.len
        ));
    }
    std::fs::write(&file, text)?;
    // Destinations drawn from 4,096 of the table's prefixes.
    let mut r = SplitMix64(3);
    let dsts: Vec<String> = (0..4096)
        .map(|_| {
            let (p, _) = routes[(r.next_u64() % routes.len() as u64) as usize];
            format!("{}/{}", std::net::Ipv4Addr::from(p.addr), p.len)
        })
        .collect();
    let config = |lookup: &str, n: u64| {
        format!(
            "WorkloadSource(FLOWS 65536, DST {}, LIMIT {n}, STOP true) -> Strip(14) -> CheckIPHeader \
             -> rt :: {lookup} -> dt :: DecIPTTL -> EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02) \
             -> Discard; dt[1] -> Discard;",
            dsts.join(" ")
        )
    };
    println!("\nIPv4 forwarding path (WorkloadSource -> Strip -> CheckIPHeader -> lookup -> DecIPTTL -> EtherEncap -> Discard), 64-byte packets:");
    let k = routes.len() / 1000;
    for (label, lookup) in [
        (
            format!("DirectIPLookup, {k}K-prefix table"),
            format!("DirectIPLookup(ROUTES {})", file.display()),
        ),
        (
            format!("RadixIPLookup, {k}K-prefix table"),
            format!("RadixIPLookup(ROUTES {})", file.display()),
        ),
        (
            "StaticIPLookup, 1 route".to_string(),
            "StaticIPLookup(0.0.0.0/0 0)".to_string(),
        ),
    ] {
        let mut ns = Vec::new();
        for _ in 0..runs {
            let mut e = engine_for("<bench lpm>", config(&lookup, packets))?;
            let t = Instant::now();
            let s = e.run();
            let secs = t.elapsed().as_secs_f64();
            if !s.errors.is_empty() {
                return Err(Error::Run {
                    workload: "bench lpm".into(),
                    message: s.errors.join("\n"),
                });
            }
            ns.push(secs * 1e9 / packets as f64);
        }
        println!("  {label:<34} {:.1} ns/packet", Sample(ns).median());
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
