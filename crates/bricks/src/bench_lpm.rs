//! `bricks bench lpm`: route lookup at Internet scale, measured.
//!
//! Tables come from the seeded generator (today's prefix-length
//! distributions). Two address mixes: uniform random addresses, the worst
//! case for caches, and a trace-like mix in which 90% of lookups go to
//! 1,000 popular destinations. Lookups per second are the median of
//! several runs over 4M addresses, one at a time and in batches of 32.

use crate::bench::engine_for;
use bricks_lpm::source::RouteTable;
use bricks_lpm::{Dir24_8, Lpm4, Lpm4Update, Lpm6, NextHop, Poptrie6, Prefix4, Prefix6, Trie4};
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MEMORY: usize = 1 << 30;

#[derive(clap::Args)]
pub struct LpmArgs {
    /// IPv4 prefixes of the large table.
    #[arg(long, default_value_t = 1_000_000)]
    v4: usize,
    /// IPv6 prefixes.
    #[arg(long, default_value_t = 200_000)]
    v6: usize,
    /// Timed runs per figure; the median is reported.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Seconds of the update-while-forwarding run.
    #[arg(long, default_value_t = 3)]
    update_seconds: u64,
    /// Packets through the IPv4 forwarding path with the large table.
    #[arg(long, default_value_t = 4_000_000)]
    packets: u64,
}

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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Addresses: uniform, and a trace-like mix (90% to 1,000 destinations
/// inside the table's prefixes).
fn v4_addrs(routes: &[(Prefix4, NextHop)], n: usize, rng: &mut Rng) -> (Vec<u32>, Vec<u32>) {
    let uniform: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let popular: Vec<u32> = (0..1000)
        .map(|_| {
            let (p, _) = routes[(rng.next() % routes.len() as u64) as usize];
            p.addr | (rng.next() as u32 & !Prefix4::mask(p.len))
        })
        .collect();
    let trace = (0..n)
        .map(|_| {
            if rng.next() % 10 < 9 {
                popular[(rng.next() % 1000) as usize]
            } else {
                rng.next() as u32
            }
        })
        .collect();
    (uniform, trace)
}

fn rate4(t: &dyn Lpm4, addrs: &[u32], batch: usize, runs: usize) -> f64 {
    let mut out = vec![None; batch.max(1)];
    let mut rates = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        if batch <= 1 {
            for a in addrs {
                black_box(t.lookup(*a));
            }
        } else {
            for chunk in addrs.chunks(batch) {
                t.lookup_batch(chunk, &mut out[..chunk.len()]);
                black_box(&out);
            }
        }
        rates.push(addrs.len() as f64 / start.elapsed().as_secs_f64());
    }
    median(rates)
}

fn rate6(t: &dyn Lpm6, addrs: &[u128], batch: usize, runs: usize) -> f64 {
    let mut out = vec![None; batch.max(1)];
    let mut rates = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        if batch <= 1 {
            for a in addrs {
                black_box(t.lookup(*a));
            }
        } else {
            for chunk in addrs.chunks(batch) {
                t.lookup_batch(chunk, &mut out[..chunk.len()]);
                black_box(&out);
            }
        }
        rates.push(addrs.len() as f64 / start.elapsed().as_secs_f64());
    }
    median(rates)
}

fn mlps(r: f64) -> String {
    format!("{:.1}", r / 1e6)
}

fn mib(b: usize) -> String {
    format!("{:.1}", b as f64 / (1 << 20) as f64)
}

fn table(v4: usize, v6: usize) -> (RouteTable, bricks_lpm::source::InternedRoutes) {
    let t = bricks_lpm::gen::generate(v4, v6, 1);
    let i = t.intern();
    (t, i)
}

pub fn bench(a: LpmArgs) -> anyhow::Result<ExitCode> {
    let runs = a.runs.max(1);
    let mut rng = Rng(7);
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
        let (_, interned) = table(size, 0);
        let (uniform, trace) = v4_addrs(&interned.v4, 4_000_000, &mut rng);
        let label = format!("{}K v4", size / 1000);
        let t0 = Instant::now();
        let d = Dir24_8::build(&interned.v4, MEMORY).map_err(|e| anyhow::anyhow!("{e}"))?;
        let build_d = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let r = Trie4::build(&interned.v4, MEMORY).map_err(|e| anyhow::anyhow!("{e}"))?;
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
        let refs: Vec<usize> = uniform[..200_000]
            .iter()
            .map(|&x| r.lookup_counting(x).1)
            .collect();
        let avg = refs.iter().sum::<usize>() as f64 / refs.len() as f64;
        println!(
            "{:<9} {:>9}  memory references per lookup (uniform): best {} average {:.2} worst {}",
            label,
            "trie4",
            refs.iter().min().unwrap_or(&0),
            avg,
            refs.iter().max().unwrap_or(&0)
        );
        if size == a.v4 {
            big_routes = interned.v4;
        }
    }

    // IPv6.
    let (_, i6) = table(0, a.v6);
    let p = Poptrie6::build(&i6.v6, MEMORY).map_err(|e| anyhow::anyhow!("{e}"))?;
    let uniform6: Vec<u128> = (0..4_000_000)
        .map(|_| (0x2000u128 << 112) | ((rng.next() as u128) << 64 | rng.next() as u128) >> 3)
        .collect();
    let inside6: Vec<u128> = (0..4_000_000)
        .map(|_| {
            let (p, _) = i6.v6[(rng.next() % i6.v6.len() as u64) as usize];
            p.addr | (((rng.next() as u128) << 64 | rng.next() as u128) & !Prefix6::mask(p.len))
        })
        .collect();
    let t0 = Instant::now();
    let _ = Poptrie6::build(&i6.v6, MEMORY).map_err(|e| anyhow::anyhow!("{e}"))?;
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

    updates(&big_routes, a.update_seconds)?;
    forwarding(&big_routes, a.packets, runs)?;
    Ok(ExitCode::SUCCESS)
}

/// Route changes applied by one thread while another looks up.
fn updates(routes: &[(Prefix4, NextHop)], seconds: u64) -> anyhow::Result<()> {
    let d = Arc::new(Dir24_8::build(routes, MEMORY).map_err(|e| anyhow::anyhow!("{e}"))?);
    let mut rng = Rng(11);
    let addrs: Vec<u32> = (0..1 << 20).map(|_| rng.next() as u32).collect();
    let reader = |d: Arc<Dir24_8>, stop: Arc<AtomicBool>, n: Arc<AtomicU64>, addrs: Vec<u32>| {
        std::thread::spawn(move || {
            let mut out = [None; 32];
            let mut count = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for chunk in addrs.chunks(32) {
                    d.lookup_batch(chunk, &mut out[..chunk.len()]);
                    black_box(&out);
                }
                count += addrs.len() as u64;
            }
            n.store(count, Ordering::Relaxed);
        })
    };
    let span = Duration::from_secs(seconds.max(1));
    // Alone.
    let (stop, n) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    let h = reader(d.clone(), stop.clone(), n.clone(), addrs.clone());
    std::thread::sleep(span);
    stop.store(true, Ordering::Relaxed);
    h.join().map_err(|_| anyhow::anyhow!("reader panicked"))?;
    let alone = n.load(Ordering::Relaxed) as f64 / span.as_secs_f64();
    // With a writer changing routes: each change adds a /24 or withdraws
    // the one added before it, so the table stays the same size.
    let (stop, n) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
    );
    let h = reader(d.clone(), stop.clone(), n.clone(), addrs);
    let start = Instant::now();
    let mut changes = 0u64;
    let mut pending: Option<Prefix4> = None;
    while start.elapsed() < span {
        for _ in 0..1000 {
            match pending.take() {
                Some(p) => {
                    d.remove(p).map_err(|e| anyhow::anyhow!("{e}"))?;
                }
                None => {
                    let p = Prefix4::new(rng.next() as u32, 24);
                    d.insert(p, NextHop((rng.next() % 16) as u32))
                        .map_err(|e| anyhow::anyhow!("{e}"))?;
                    pending = Some(p);
                }
            }
            changes += 1;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    h.join().map_err(|_| anyhow::anyhow!("reader panicked"))?;
    let during = n.load(Ordering::Relaxed) as f64 / elapsed;
    println!(
        "\nupdates while forwarding (dir24-8, {}K prefixes, writer and reader on separate cores):",
        routes.len() / 1000
    );
    println!(
        "  {:.0} route changes/s applied; reader {} M lookups/s during, {} M lookups/s alone ({:.2}x)",
        changes as f64 / elapsed,
        mlps(during),
        mlps(alone),
        during / alone
    );
    Ok(())
}

/// The IPv4 forwarding path with the large table behind DirectIPLookup.
fn forwarding(routes: &[(Prefix4, NextHop)], packets: u64, runs: usize) -> anyhow::Result<()> {
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
    let mut rng = Rng(3);
    let dsts: Vec<String> = (0..4096)
        .map(|_| {
            let (p, _) = routes[(rng.next() % routes.len() as u64) as usize];
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
    for (label, lookup) in [
        (
            "DirectIPLookup, 1M-prefix table",
            format!("DirectIPLookup(ROUTES {})", file.display()),
        ),
        (
            "RadixIPLookup, 1M-prefix table",
            format!("RadixIPLookup(ROUTES {})", file.display()),
        ),
        (
            "StaticIPLookup, 1 route",
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
                anyhow::bail!("{}", s.errors.join("\n"));
            }
            ns.push(secs * 1e9 / packets as f64);
        }
        println!("  {label:<34} {:.1} ns/packet", median(ns));
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
