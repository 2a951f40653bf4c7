//! `bricks routes`: route files from the command line.

use anyhow::Context as _;
use bricks_lpm::source::{self, MrtOptions, OnError, PeerSelect, RouteTable};
use bricks_lpm::{Dir24_8, Lpm4, Lpm6, NextHop, Poptrie6, Prefix4, Prefix6, Trie4};
use clap::{Args, Subcommand};
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Memory bound used when building tables from the command line.
const MEMORY: usize = 1 << 30;

#[derive(Subcommand)]
pub enum RoutesCommand {
    /// Count a route file's prefixes by length, and build every lookup
    /// structure from it: memory and build time of each.
    Stats {
        /// Route file: text (`PREFIX [GATEWAY] OUTPUT` lines) or MRT
        /// TABLE_DUMP_V2, possibly gzip or bzip2 compressed. From an MRT
        /// dump, each prefix's route is the one BGP's decision process
        /// chooses among the peers' (highest LOCAL_PREF, shortest AS_PATH,
        /// lowest ORIGIN, lowest MED from the same neighbouring AS, lowest
        /// peer BGP identifier, lowest peer address).
        file: PathBuf,
        /// Refuse the file at its first malformed route instead of
        /// skipping (and reporting) it. An MRT dump cut short is refused
        /// either way.
        #[arg(long)]
        strict: bool,
        #[command(flatten)]
        peer: PeerArgs,
    },
    /// Look addresses up: for each, the matching prefix, the next hop and
    /// the output, or `no route`.
    Lookup {
        /// Route file.
        file: PathBuf,
        /// IPv4 or IPv6 addresses.
        #[arg(required = true)]
        addrs: Vec<IpAddr>,
        #[command(flatten)]
        peer: PeerArgs,
    },
    /// Follow a live route source and print every change as it is applied:
    /// a Linux routing table (`netlink:table=100`, `netlink:table=main,proto=bird`)
    /// or FRR zebra's FPM stream (`fpm`, `fpm:127.0.0.1:2620`). Lines are
    /// `+ PREFIX via GATEWAY dev IFACE` and `- PREFIX`; Ctrl-C ends with the
    /// counters (messages, routes set and withdrawn, skipped by reason).
    #[command(after_help = "Examples:\n  \
        bricks routes watch netlink:table=100\n  \
        bricks routes watch netlink:table=main,proto=bird --dump\n  \
        bricks routes watch fpm:127.0.0.1:2620")]
    Watch {
        /// `netlink[:table=ID][,proto=NAME]` or `fpm[:[ADDR:]PORT]`.
        source: String,
        /// Print the table once it has been read (a kernel table's dump; an
        /// FPM peer's replay) and exit.
        #[arg(long)]
        dump: bool,
        /// Only IPv4 (`-4`) or only IPv6 (`-6`) routes.
        #[arg(short = '4', conflicts_with = "v6")]
        v4: bool,
        /// Only IPv6 routes.
        #[arg(short = '6')]
        v6: bool,
        /// Stop after this many seconds.
        #[arg(long, value_name = "SECONDS")]
        duration: Option<f64>,
        /// Print no changes, only the counters at the end.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Generate a realistic table (today's prefix-length distributions,
    /// nested prefixes, a few equal-cost groups) as a text route file.
    Gen {
        /// IPv4 prefixes.
        #[arg(long, default_value_t = 1_000_000)]
        v4: usize,
        /// IPv6 prefixes.
        #[arg(long, default_value_t = 200_000)]
        v6: usize,
        /// Seed: the same seed gives the same table.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Output file (`-` for standard output).
        #[arg(short, long)]
        output: PathBuf,
    },
}

/// The peer an MRT dump's routes are taken from.
#[derive(Args, Debug, Clone, Copy)]
pub struct PeerArgs {
    /// MRT dumps only: take the routes of the peer with this address in
    /// the PEER_INDEX_TABLE, not the best of all peers'.
    #[arg(long, value_name = "ADDR", conflicts_with = "peer_as")]
    peer: Option<IpAddr>,
    /// MRT dumps only: take the routes of the peers of this AS, the best
    /// of theirs when there are several.
    #[arg(long, value_name = "AS")]
    peer_as: Option<u32>,
}

impl PeerArgs {
    fn select(self) -> Option<PeerSelect> {
        match (self.peer, self.peer_as) {
            (Some(a), _) => Some(PeerSelect::Address(a)),
            (None, Some(n)) => Some(PeerSelect::As(n)),
            (None, None) => None,
        }
    }
}

fn load(file: &Path, strict: bool, peer: PeerArgs) -> anyhow::Result<RouteTable> {
    let on_error = if strict {
        OnError::Refuse
    } else {
        OnError::Skip
    };
    let mrt = MrtOptions {
        peer: peer.select(),
        ..MrtOptions::default()
    };
    let (table, warnings) =
        source::load_with(file, on_error, &mrt).map_err(|e| anyhow::anyhow!("{e}"))?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    Ok(table)
}

pub fn routes(cmd: RoutesCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        RoutesCommand::Stats { file, strict, peer } => stats(&file, strict, peer),
        RoutesCommand::Lookup { file, addrs, peer } => lookup(&file, &addrs, peer),
        RoutesCommand::Watch {
            source,
            dump,
            v4,
            v6,
            duration,
            quiet,
        } => watch(&source, dump, (!v6, !v4), duration, quiet),
        RoutesCommand::Gen {
            v4,
            v6,
            seed,
            output,
        } => {
            let t = Instant::now();
            let table = bricks_lpm::gen::generate(v4, v6, seed);
            let out: Box<dyn std::io::Write> = if output.as_os_str() == "-" {
                Box::new(std::io::stdout().lock())
            } else {
                Box::new(
                    std::fs::File::create(&output)
                        .with_context(|| format!("creating {}", output.display()))?,
                )
            };
            source::text::write_text(&table, std::io::BufWriter::new(out))?;
            eprintln!(
                "{} IPv4 and {} IPv6 prefixes (seed {seed}) in {:.2} s",
                table.v4.len(),
                table.v6.len(),
                t.elapsed().as_secs_f64()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

fn stats(file: &Path, strict: bool, peer: PeerArgs) -> anyhow::Result<ExitCode> {
    let t = Instant::now();
    let table = load(file, strict, peer)?;
    println!(
        "{}: {} IPv4 and {} IPv6 prefixes, read in {:.2} s",
        file.display(),
        table.v4.len(),
        table.v6.len(),
        t.elapsed().as_secs_f64()
    );
    let ecmp = table.routes().filter(|(_, h)| h.len() > 1).count();
    println!("equal-cost groups: {ecmp}");
    let mut v4 = [0usize; 33];
    for (p, _) in &table.v4 {
        v4[p.len as usize] += 1;
    }
    let mut v6 = [0usize; 129];
    for (p, _) in &table.v6 {
        v6[p.len as usize] += 1;
    }
    println!("\nprefix length  IPv4      IPv6");
    for (len, &b) in v6.iter().enumerate() {
        let a = v4.get(len).copied().unwrap_or(0);
        if a + b > 0 {
            println!("/{len:<12} {a:<9} {b}");
        }
    }
    let interned = table.intern();
    println!("\nalgorithm     memory       build");
    if !interned.v4.is_empty() {
        let t = Instant::now();
        let d = Dir24_8::build(&interned.v4, MEMORY).map_err(|e| anyhow::anyhow!("{e}"))?;
        println!(
            "{:<13} {:<12} {:.3} s",
            d.name(),
            mib(d.memory_bytes()),
            t.elapsed().as_secs_f64()
        );
        let t = Instant::now();
        let r = Trie4::build(&interned.v4, MEMORY).map_err(|e| anyhow::anyhow!("{e}"))?;
        println!(
            "{:<13} {:<12} {:.3} s",
            r.name(),
            mib(r.memory_bytes()),
            t.elapsed().as_secs_f64()
        );
    }
    if !interned.v6.is_empty() {
        let t = Instant::now();
        let p = Poptrie6::build(&interned.v6, MEMORY).map_err(|e| anyhow::anyhow!("{e}"))?;
        println!(
            "{:<13} {:<12} {:.3} s",
            p.name(),
            mib(p.memory_bytes()),
            t.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn lookup(file: &Path, addrs: &[IpAddr], peer: PeerArgs) -> anyhow::Result<ExitCode> {
    let table = load(file, false, peer)?;
    let interned = table.intern();
    let d4 = Dir24_8::build(&interned.v4, MEMORY).map_err(|e| anyhow::anyhow!("{e}"))?;
    let d6 = Poptrie6::build(&interned.v6, MEMORY).map_err(|e| anyhow::anyhow!("{e}"))?;
    // The matching prefix itself, for the report: a map per family.
    let p4: HashMap<Prefix4, NextHop> = interned.v4.iter().copied().collect();
    let p6: HashMap<Prefix6, NextHop> = interned.v6.iter().copied().collect();
    for addr in addrs {
        let (prefix, nh) = match addr {
            IpAddr::V4(a) => {
                let a = u32::from(*a);
                let nh = d4.lookup(a);
                let prefix = (0..=32u8)
                    .rev()
                    .map(|l| Prefix4::new(a, l))
                    .find(|p| p4.contains_key(p))
                    .map(|p| format!("{}/{}", std::net::Ipv4Addr::from(p.addr), p.len));
                (prefix, nh)
            }
            IpAddr::V6(a) => {
                let a = u128::from(*a);
                let nh = d6.lookup(a);
                let prefix = (0..=128u8)
                    .rev()
                    .map(|l| Prefix6::new(a, l))
                    .find(|p| p6.contains_key(p))
                    .map(|p| format!("{}/{}", std::net::Ipv6Addr::from(p.addr), p.len));
                (prefix, nh)
            }
        };
        match (prefix, nh) {
            (Some(prefix), Some(nh)) => {
                let hops: Vec<String> = interned.groups[nh.0 as usize]
                    .iter()
                    .map(|h| match h.gateway {
                        Some(g) => format!("via {g} output {}", h.output),
                        None => format!("direct output {}", h.output),
                    })
                    .collect();
                println!("{addr} {prefix} {}", hops.join(" | "));
            }
            _ => println!("{addr} no route ({})", no_route(*addr, &interned)),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Why an address has no route, in words: how big the table of its family
/// is, and the prefix that comes closest (the most leading bits shared).
fn no_route(addr: IpAddr, table: &bricks_lpm::source::InternedRoutes) -> String {
    // (prefixes, closest prefix as text, leading bits it shares)
    let (family, n, closest) = match addr {
        IpAddr::V4(a) => {
            let a = u32::from(a);
            let best = table
                .v4
                .iter()
                .map(|(p, _)| (p, ((a ^ p.addr).leading_zeros() as u8).min(p.len)))
                .max_by_key(|&(p, shared)| (shared, std::cmp::Reverse(p.len)));
            let closest = best.map(|(p, shared)| {
                (
                    format!("{}/{}", std::net::Ipv4Addr::from(p.addr), p.len),
                    shared,
                )
            });
            ("IPv4", table.v4.len(), closest)
        }
        IpAddr::V6(a) => {
            let a = u128::from(a);
            let best = table
                .v6
                .iter()
                .map(|(p, _)| (p, ((a ^ p.addr).leading_zeros() as u8).min(p.len)))
                .max_by_key(|&(p, shared)| (shared, std::cmp::Reverse(p.len)));
            let closest = best.map(|(p, shared)| {
                (
                    format!("{}/{}", std::net::Ipv6Addr::from(p.addr), p.len),
                    shared,
                )
            });
            ("IPv6", table.v6.len(), closest)
        }
    };
    match closest {
        None => format!("the table has no {family} prefixes"),
        Some((prefix, shared)) => format!(
            "the table has {n} {family} prefixes and no default route; the closest is \
             {prefix}, which shares the first {shared} bits"
        ),
    }
}

/// The routes a watched source has set, for `--dump`.
#[derive(Clone, Default)]
struct Watched(
    std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<source::RoutePrefix, Vec<String>>>>,
);

impl bricks_control::RouteSink for Watched {
    fn set(&self, _: source::RoutePrefix, _: &[source::Hop]) -> Result<(), String> {
        Ok(())
    }
    fn remove(&self, _: source::RoutePrefix) -> Result<(), String> {
        Ok(())
    }
}

/// One route as `watch` prints it: `PREFIX via GW dev IF[, via ...]`.
fn route_line(r: &source::Route, names: &[String]) -> String {
    let hops: Vec<String> = r
        .hops
        .iter()
        .zip(names)
        .map(|(h, n)| match h.gateway {
            Some(g) => format!("via {g} dev {n}"),
            // A route that discards, named as `ip route` names it.
            None if matches!(n.as_str(), "blackhole" | "unreachable" | "prohibit") => n.clone(),
            None => format!("dev {n}"),
        })
        .collect();
    match hops.as_slice() {
        [one] if !one.starts_with("dev ") && !one.starts_with("via ") => {
            format!("{one} {}", r.prefix)
        }
        _ => format!("{} {}", r.prefix, hops.join(", ")),
    }
}

fn watch(
    spec: &str,
    dump: bool,
    (v4, v6): (bool, bool),
    duration: Option<f64>,
    quiet: bool,
) -> anyhow::Result<ExitCode> {
    use bricks_control::{Change, SourceSpec, SourceStats};
    use std::io::Write as _;
    let spec = SourceSpec::parse(spec).map_err(|e| anyhow::anyhow!("{e}"))?;
    let stop = crate::runner::stop_on_signals()?;
    let stats = std::sync::Arc::new(SourceStats::labelled(format!("routes watch {spec}")));
    let seen = Watched::default();
    let mut follower = bricks_control::follower(&spec, v4, v6, None, seen.clone(), stats.clone());
    let print = !quiet && !dump;
    let map = seen.0.clone();
    follower.observe(move |c| {
        let line = match c {
            Change::Set(r, names) => {
                let l = route_line(r, names);
                map.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(r.prefix, vec![l.clone()]);
                format!("+ {l}")
            }
            Change::Removed(p) => {
                map.lock().unwrap_or_else(|e| e.into_inner()).remove(p);
                format!("- {p}")
            }
        };
        if print {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    });
    let started = Instant::now();
    if let SourceSpec::Fpm { addr } = &spec {
        eprintln!("listening for zebra's FPM connection on {addr}");
    }
    let running = bricks_control::run(&spec, follower, "routes watch")
        .with_context(|| format!("following {spec}"))?;
    if dump {
        let ready = match &running {
            bricks_control::Running::Kernel(k) => k.wait_synced(Duration::from_secs(120)),
            // An FPM peer's replay has ended when its stream goes quiet.
            bricks_control::Running::Fpm(sub) => {
                let end = Instant::now() + Duration::from_secs(120);
                while !sub.connected() && Instant::now() < end && !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                let mut last = stats.get(bricks_control::Kind::Messages);
                let mut quiet_since = Instant::now();
                while quiet_since.elapsed() < bricks_control::fpm::REPLAY_QUIET
                    && Instant::now() < end
                {
                    std::thread::sleep(Duration::from_millis(50));
                    let now = stats.get(bricks_control::Kind::Messages);
                    if now != last {
                        last = now;
                        quiet_since = Instant::now();
                    }
                }
                sub.connected()
            }
        };
        anyhow::ensure!(ready, "{spec}: not read within 120 s");
        let mut out = std::io::stdout().lock();
        for l in seen.0.lock().unwrap_or_else(|e| e.into_inner()).values() {
            writeln!(out, "{}", l[0])?;
        }
    } else {
        let end = duration.map(|d| started + Duration::from_secs_f64(d));
        while !stop.load(Ordering::Relaxed) && end.is_none_or(|e| Instant::now() < e) {
            if let bricks_control::Running::Kernel(k) = &running {
                anyhow::ensure!(!k.finished(), "{spec}: the source stopped (see above)");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    drop(running);
    let routes = seen.0.lock().unwrap_or_else(|e| e.into_inner()).len();
    let mut summary: Vec<String> = stats
        .all()
        .filter(|(_, v)| *v > 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    summary.insert(0, format!("routes {routes}"));
    eprintln!(
        "{spec}: {} in {:.2} s",
        summary.join(", "),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
