//! `bricks bench routes`: routes from a Linux table into a DIR-24-8 table
//! over rtnetlink, measured in a network namespace made for the run.
//!
//! - Kernel load: N routes written over a netlink socket ([`load`]),
//!   timed from the first send to the last acknowledgement: into table
//!   100 while a follower listens, into table 101 with no listener, and
//!   (first run) through `ip -batch` into table 102 for comparison.
//! - Follow rate: a [`bricks_control::Follower`] on table 100, writing
//!   into the route table the lookup elements use
//!   (`bricks_elements::route::table::RouteTable` over
//!   `bricks_lpm::Dir24_8`), while the routes are written and a reader
//!   forwards: routes applied per second from the first to the last, and
//!   the lag after the kernel's last insert.
//! - Full-table load: a follower started on the full table dumps and
//!   applies it (the time to load a million routes from the kernel), with
//!   the reader's lookups per second during it against an idle table.
//! - The same routes without a socket: the decoder alone over the
//!   datagrams, the decoder and follower from the datagrams, the `add`
//!   write handler, and `Lpm4Update::insert` (`bricks bench lpm`'s update
//!   path), each while the reader forwards, for the ratios.

pub mod load;

use crate::error::Error;
use crate::measure::Sample;
use bricks_control::netlink;
use bricks_control::{kernel, Filter, Follower, Kind, RouteSink, SourceStats};
use bricks_elements::route::table::{build_v4, RouteTable, DEFAULT_MEMORY};
use bricks_lpm::bench::random_addresses4;
use bricks_lpm::source::{Hop, RoutePrefix};
use bricks_lpm::{Dir24_8, Lpm4, Lpm4Update, NextHop, Prefix4};
use bricks_netns::{in_namespace, Network};
use load::KernelRoute;
use std::hint::black_box;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The followed table.
const TABLE: u32 = 100;
/// The table written with no listener.
const TABLE_ALONE: u32 = 101;
/// The table `ip -batch` writes.
const TABLE_IP: u32 = 102;
/// Distinct onlink gateways of the routes (their next-hop groups).
const GATEWAYS: u32 = 16;
/// Addresses the reader looks up, in batches of [`BATCH`].
const READER_ADDRS: usize = 1 << 20;
const BATCH: usize = 32;

/// `bricks bench routes`'s arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct RoutesArgs {
    /// Routes written into the kernel table (default 1,000,000; 100,000
    /// with --quick).
    #[arg(long)]
    pub routes: Option<usize>,
    /// A brief run: 100,000 routes, one run.
    #[arg(long)]
    pub quick: bool,
    /// Runs, each in a fresh namespace; the median and range are reported
    /// (default 3, 1 with --quick).
    #[arg(long)]
    pub runs: Option<usize>,
    /// Skip timing `ip -batch`.
    #[arg(long)]
    pub no_ip_batch: bool,
}

/// The machine: CPU model, cores, kernel.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!(
        "{}, {cores} cores, Linux {}",
        crate::measure::cpu_model(),
        crate::measure::kernel_release()
    )
}

fn fail(message: impl Into<String>) -> Error {
    Error::Run {
        workload: "routes".into(),
        message: message.into(),
    }
}

/// Counts the routes a sink applied and when: the first, and the latest.
struct Progress {
    epoch: Instant,
    applied: AtomicU64,
    /// Nanoseconds after `epoch` (plus one; 0: none yet).
    first: AtomicU64,
    last: AtomicU64,
}

impl Progress {
    fn new() -> Arc<Progress> {
        Arc::new(Progress {
            epoch: Instant::now(),
            applied: AtomicU64::new(0),
            first: AtomicU64::new(0),
            last: AtomicU64::new(0),
        })
    }

    fn tick(&self) {
        let now = self.epoch.elapsed().as_nanos() as u64 + 1;
        if self.applied.fetch_add(1, Ordering::Relaxed) == 0 {
            self.first.store(now, Ordering::Relaxed);
        }
        self.last.store(now, Ordering::Relaxed);
    }

    fn applied(&self) -> usize {
        self.applied.load(Ordering::Relaxed) as usize
    }

    fn at(&self, v: &AtomicU64) -> Option<Instant> {
        match v.load(Ordering::Relaxed) {
            0 => None,
            n => Some(self.epoch + Duration::from_nanos(n - 1)),
        }
    }

    /// Routes per second from the first applied to the last.
    fn rate(&self) -> f64 {
        match (self.at(&self.first), self.at(&self.last)) {
            (Some(a), Some(b)) if b > a => (self.applied() - 1) as f64 / (b - a).as_secs_f64(),
            _ => 0.0,
        }
    }
}

type Table = RouteTable<Dir24_8>;

/// The lookup elements' table, written through `set_route` as
/// DirectIPLookup's live source writes it.
struct TableSink {
    table: Arc<Table>,
    progress: Arc<Progress>,
}

impl RouteSink for TableSink {
    fn set(&self, prefix: RoutePrefix, hops: &[Hop]) -> Result<(), String> {
        self.table.set_route(prefix, hops)?;
        self.progress.tick();
        Ok(())
    }

    fn remove(&self, prefix: RoutePrefix) -> Result<(), String> {
        self.table.remove_route(prefix)
    }
}

fn empty_table() -> Result<Arc<Table>, Error> {
    build_v4(Vec::new(), 1, |r| {
        Dir24_8::build(r, DEFAULT_MEMORY).map(Box::new)
    })
    .map(Arc::new)
    .map_err(|e| fail(format!("building the table: {}", e.message)))
}

fn follower(
    table: &Arc<Table>,
    progress: &Arc<Progress>,
) -> (Follower<TableSink>, Arc<SourceStats>) {
    let stats = Arc::new(SourceStats::labelled("bench routes"));
    stats.quiet();
    let f = Follower::new(
        Filter {
            table: Some(TABLE),
            protocol: None,
            v4: true,
            v6: false,
            devices: Some(vec!["d0".into()]),
        },
        TableSink {
            table: table.clone(),
            progress: progress.clone(),
        },
        stats.clone(),
    );
    (f, stats)
}

/// Runs `work` while a reader thread looks up `addrs` in `lpm` in
/// batches; returns its result and the reader's lookups per second.
fn while_reading<R: Send>(
    lpm: &dyn Lpm4,
    addrs: &[u32],
    work: impl FnOnce() -> R + Send,
) -> (R, f64) {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut out = vec![None; BATCH];
            let mut n = 0usize;
            let start = Instant::now();
            // 64K addresses between looks at the flag, round the list; at
            // least one part, so that a reader scheduled late still
            // measures something.
            for part in addrs.chunks(1 << 16).cycle() {
                for c in part.chunks(BATCH) {
                    lpm.lookup_batch(c, &mut out);
                }
                n += part.len();
                if done.load(Ordering::Relaxed) {
                    break;
                }
            }
            black_box(&out);
            n as f64 / start.elapsed().as_secs_f64()
        });
        let r = work();
        done.store(true, Ordering::Relaxed);
        (r, reader.join().expect("the reader does not panic"))
    })
}

/// The reader alone for `secs`, on the calling thread.
fn idle_reader(lpm: &dyn Lpm4, addrs: &[u32], secs: f64) -> f64 {
    let mut out = vec![None; BATCH];
    let mut n = 0usize;
    let start = Instant::now();
    for part in addrs.chunks(1 << 16).cycle() {
        for c in part.chunks(BATCH) {
            lpm.lookup_batch(c, &mut out);
        }
        n += part.len();
        if start.elapsed().as_secs_f64() >= secs {
            break;
        }
    }
    black_box(&out);
    n as f64 / start.elapsed().as_secs_f64()
}

/// Waits until `progress` counts `n` routes, at most `limit`.
fn wait_applied(progress: &Progress, n: usize, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while progress.applied() < n {
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// A bound on waiting for `n` routes: a minute plus 20 us a route.
fn limit_for(n: usize) -> Duration {
    Duration::from_secs(60) + Duration::from_micros(20 * n as u64)
}

/// The routes: generated prefixes (today's length distribution), each via
/// one of [`GATEWAYS`] onlink gateways on `oif`.
fn routes(n: usize, oif: u32) -> Vec<KernelRoute> {
    let t = bricks_lpm::gen::generate(n, 0, 1).intern();
    t.v4.iter()
        .map(|&(prefix, nh)| KernelRoute {
            prefix,
            oif,
            gateway: gateway(nh.0),
        })
        .collect()
}

fn gateway(i: u32) -> Ipv4Addr {
    Ipv4Addr::new(10, 255, 0, 1 + (i % GATEWAYS) as u8)
}

/// One run's figures.
#[derive(Debug, Default, Clone)]
struct RunFigures {
    routes: usize,
    kernel_alone_s: f64,
    kernel_followed_s: f64,
    ip_batch_s: Option<f64>,
    follow_rate: f64,
    lag_s: f64,
    resyncs: u64,
    reader_follow: f64,
    dump_s: f64,
    reader_dump: f64,
    reader_idle_empty: f64,
    reader_idle_full: f64,
    decode_rate: f64,
    buffer_rate: f64,
    handler_rate: f64,
    lpm_rate: f64,
}

/// Creates the run's namespace with an interface `d0`; returns the
/// namespace's name and `d0`'s index.
fn namespace(net: &mut Network) -> Result<(String, u32), Error> {
    let ns = net.add_namespace("r").map_err(|e| fail(e.0))?;
    let ip = |args: &[&str]| {
        let mut all = vec!["-n", ns.as_str()];
        all.extend_from_slice(args);
        bricks_netns::ip(&all).map_err(|e| fail(e.0))
    };
    // A dummy interface where the kernel has them; else a veth pair,
    // both ends up so that `d0` has a carrier.
    if ip(&["link", "add", "d0", "type", "dummy"]).is_err() {
        ip(&["link", "add", "d0", "type", "veth", "peer", "name", "d0p"])?;
        ip(&["link", "set", "d0p", "up"])?;
    }
    ip(&["link", "set", "d0", "up"])?;
    let out = ip(&["-o", "link", "show", "d0"])?;
    let text = String::from_utf8_lossy(&out.stdout);
    let index = text
        .split(':')
        .next()
        .and_then(|i| i.trim().parse().ok())
        .ok_or_else(|| fail(format!("no index for d0 in `{}`", text.trim())))?;
    Ok((ns, index))
}

fn load_in(ns: &str, batches: Arc<Vec<Vec<u8>>>) -> Result<load::Loaded, Error> {
    let loaded = in_namespace(ns, move || load::send(&batches))
        .map_err(|e| fail(format!("writing routes: {e}")))?;
    if loaded.accepted() == 0 {
        return Err(fail(format!(
            "the kernel refused every route (errno {})",
            loaded.first_error.unwrap_or(0)
        )));
    }
    Ok(loaded)
}

fn run_once(n: usize, ip_batch: bool, addrs: &[u32]) -> Result<RunFigures, Error> {
    let mut net = Network::new(&Network::unique_prefix("rt")).map_err(|e| fail(e.0))?;
    let (ns, oif) = namespace(&mut net)?;
    let routes = routes(n, oif);
    let mut f = RunFigures {
        routes: routes.len(),
        ..RunFigures::default()
    };
    let followed = Arc::new(load::batches(&routes, TABLE));
    let limit = limit_for(routes.len());

    // Follow while the kernel is written, a reader forwarding.
    let table = empty_table()?;
    f.reader_idle_empty = idle_reader(&*table.lpm, addrs, 1.0);
    let progress = Progress::new();
    let (fol, stats) = follower(&table, &progress);
    let following = in_namespace(&ns, move || kernel::follow(fol, "bench routes"))
        .map_err(|e| fail(format!("following table {TABLE}: {e}")))?;
    if !following.wait_synced(Duration::from_secs(30)) {
        return Err(fail("the follower did not read the empty table"));
    }
    let (r, reader) = while_reading(&*table.lpm, addrs, || {
        let loaded = load_in(&ns, followed.clone())?;
        let all = wait_applied(&progress, loaded.accepted(), limit);
        Ok::<_, Error>((loaded, all))
    });
    let (loaded, all) = r?;
    if !all {
        return Err(fail(format!(
            "the follower applied {} of {} routes within {limit:?}",
            progress.applied(),
            loaded.accepted()
        )));
    }
    f.routes = loaded.accepted();
    f.kernel_followed_s = loaded.seconds();
    f.follow_rate = progress.rate();
    f.lag_s = progress.at(&progress.last).map_or(0.0, |t| {
        t.saturating_duration_since(loaded.end).as_secs_f64()
    });
    f.resyncs = stats.get(Kind::Resyncs);
    f.reader_follow = reader;
    drop(following);

    // A follower started on the full table: the dump, a reader forwarding.
    let table = empty_table()?;
    let progress = Progress::new();
    let (fol, _) = follower(&table, &progress);
    let ((dump, synced), reader) = while_reading(&*table.lpm, addrs, || {
        let t = Instant::now();
        let following = in_namespace(&ns, move || kernel::follow(fol, "bench routes"));
        let synced = following.as_ref().is_ok_and(|fo| fo.wait_synced(limit));
        (t.elapsed().as_secs_f64(), synced.then_some(following))
    });
    match synced {
        Some(Ok(following)) => drop(following),
        _ => return Err(fail("the follower did not dump the full table")),
    }
    if progress.applied() != f.routes {
        return Err(fail(format!(
            "the dump applied {} of {} routes",
            progress.applied(),
            f.routes
        )));
    }
    f.dump_s = dump;
    f.reader_dump = reader;
    f.reader_idle_full = idle_reader(&*table.lpm, addrs, 1.0);

    // The kernel alone: no listener.
    let alone = Arc::new(load::batches(&routes, TABLE_ALONE));
    f.kernel_alone_s = load_in(&ns, alone)?.seconds();

    if ip_batch {
        f.ip_batch_s = Some(ip_batch_time(&ns, &routes)?);
    }

    // The same routes without a socket, each while the reader forwards.
    let links = in_namespace(&ns, kernel::links).map_err(|e| fail(format!("links: {e}")))?;
    drop(net);
    f.decode_rate = decode_rate(&followed, addrs, &table);
    f.buffer_rate = buffer_rate(&followed, &links, addrs)?;
    f.handler_rate = handler_rate(&routes, addrs)?;
    f.lpm_rate = lpm_rate(&routes, addrs)?;
    Ok(f)
}

/// `ip -batch` writing the routes into [`TABLE_IP`]: seconds.
fn ip_batch_time(ns: &str, routes: &[KernelRoute]) -> Result<f64, Error> {
    let mut text = String::with_capacity(routes.len() * 64);
    for r in routes {
        text.push_str(&format!(
            "route replace {}/{} via {} dev d0 onlink table {TABLE_IP}\n",
            Ipv4Addr::from(r.prefix.addr),
            r.prefix.len,
            r.gateway
        ));
    }
    let file = std::env::temp_dir().join(format!("bricks-bench-routes-{}.ip", std::process::id()));
    std::fs::write(&file, text)?;
    let t = Instant::now();
    let out = bricks_netns::output_timeout(
        std::process::Command::new("ip").args([
            "-n",
            ns,
            "-force",
            "-batch",
            &file.display().to_string(),
        ]),
        limit_for(routes.len()),
    );
    let secs = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&file);
    let out = out.map_err(|e| fail(format!("ip -batch: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!(
            "ip -batch: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        )));
    }
    Ok(secs)
}

/// The decoder alone over the datagrams: route messages per second.
fn decode_rate(batches: &[Vec<u8>], addrs: &[u32], table: &Table) -> f64 {
    let ((n, secs), _) = while_reading(&*table.lpm, addrs, || {
        let t = Instant::now();
        let mut n = 0usize;
        for b in batches {
            for raw in netlink::messages(b).flatten() {
                if let Ok(netlink::Message::Route(r)) = netlink::decode(raw) {
                    black_box(&r);
                    n += 1;
                }
            }
        }
        (n, t.elapsed().as_secs_f64())
    });
    n as f64 / secs
}

/// The decoder and follower from the datagrams into a fresh table, no
/// socket: routes applied per second.
fn buffer_rate(batches: &[Vec<u8>], links: &[u8], addrs: &[u32]) -> Result<f64, Error> {
    let table = empty_table()?;
    let progress = Progress::new();
    let (mut fol, _) = follower(&table, &progress);
    fol.feed(links);
    let (secs, _) = while_reading(&*table.lpm, addrs, || {
        let t = Instant::now();
        for b in batches {
            fol.feed(b);
        }
        t.elapsed().as_secs_f64()
    });
    Ok(progress.applied() as f64 / secs)
}

/// Click's `add` write handler into a fresh table: routes per second.
fn handler_rate(routes: &[KernelRoute], addrs: &[u32]) -> Result<f64, Error> {
    let table = empty_table()?;
    let lines: Vec<String> = routes
        .iter()
        .map(|r| {
            format!(
                "{}/{} {} 0",
                Ipv4Addr::from(r.prefix.addr),
                r.prefix.len,
                r.gateway
            )
        })
        .collect();
    let ((ok, secs), _) = while_reading(&*table.lpm, addrs, || {
        let t = Instant::now();
        let ok = lines
            .iter()
            .filter(|l| table.handle("add", l).is_ok())
            .count();
        (ok, t.elapsed().as_secs_f64())
    });
    if ok != routes.len() {
        return Err(fail(format!(
            "the add handler took {ok} of {} routes",
            routes.len()
        )));
    }
    Ok(ok as f64 / secs)
}

/// `Lpm4Update::insert` into a fresh DIR-24-8 (`bricks bench lpm`'s
/// update path): routes per second.
fn lpm_rate(routes: &[KernelRoute], addrs: &[u32]) -> Result<f64, Error> {
    let d = Dir24_8::build(&[], DEFAULT_MEMORY).map_err(|e| fail(e.to_string()))?;
    let updates: Vec<(Prefix4, NextHop)> = routes
        .iter()
        .map(|r| (r.prefix, NextHop(u32::from(r.gateway.octets()[3]))))
        .collect();
    let (secs, _) = while_reading(&d, addrs, || {
        let t = Instant::now();
        for &(p, nh) in &updates {
            black_box(d.insert(p, nh).ok());
        }
        t.elapsed().as_secs_f64()
    });
    Ok(updates.len() as f64 / secs)
}

/// One printed row: label, median and range, unit.
fn row(label: &str, s: &Sample, digits: usize, unit: &str) {
    println!("  {label:<58} {:>26} {unit}", s.show(digits));
}

/// Runs `bricks bench routes`: whether everything ran (a skip for want of
/// root is a success unless `CI=true`).
pub fn bench(a: &RoutesArgs) -> Result<bool, Error> {
    if !bricks_netns::is_root() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        eprintln!(
            "bricks bench routes: needs root to create a network namespace and write its routing tables; {}",
            if ci { "CI=true: failing" } else { "skipped" }
        );
        return Ok(!ci);
    }
    let n = a
        .routes
        .unwrap_or(if a.quick { 100_000 } else { 1_000_000 })
        .max(1);
    let runs = a.runs.unwrap_or(if a.quick { 1 } else { 3 }).max(1);
    let addrs = random_addresses4(READER_ADDRS, 11);
    println!(
        "bricks bench routes: {n} generated IPv4 routes (seed 1) via {GATEWAYS} onlink gateways on one interface (dummy, or veth without it), \
         kernel table {TABLE} of a fresh namespace per run; median (min-max) of {runs} run{}",
        if runs == 1 { "" } else { "s" }
    );
    println!("machine: {}", machine());
    println!(
        "reader: one thread, DIR-24-8 lookups of uniform random addresses in batches of {BATCH}"
    );
    let mut all: Vec<RunFigures> = Vec::with_capacity(runs);
    for i in 0..runs {
        let f = run_once(n, i == 0 && !a.no_ip_batch, &addrs)?;
        all.push(f);
    }
    let s = |g: &dyn Fn(&RunFigures) -> f64| Sample(all.iter().map(g).collect());
    let m = |v: f64| v / 1e6;
    let routes = all[0].routes;
    if routes != n {
        println!("(the kernel refused {} of the {n} routes)", n - routes);
    }

    println!("\nkernel, {routes} routes written in batches of RTM_NEWROUTE (create|replace) over netlink:");
    row(
        "kernel insert, no listener",
        &s(&|f| f.kernel_alone_s),
        3,
        "s",
    );
    row(
        "kernel insert rate, no listener",
        &s(&|f| m(routes as f64 / f.kernel_alone_s)),
        3,
        "M routes/s",
    );
    row(
        "kernel insert, a follower listening",
        &s(&|f| f.kernel_followed_s),
        3,
        "s",
    );
    row(
        "kernel insert rate, a follower listening",
        &s(&|f| m(routes as f64 / f.kernel_followed_s)),
        3,
        "M routes/s",
    );
    if let Some(t) = all[0].ip_batch_s {
        row(
            "ip -batch (route replace, first run only)",
            &Sample(vec![t]),
            3,
            "s",
        );
    }

    println!("\nfollowing table {TABLE} into DIR-24-8 (the lookup elements' table) while the kernel is written:");
    row(
        "follow rate, first to last route applied",
        &s(&|f| m(f.follow_rate)),
        3,
        "M routes/s",
    );
    row(
        "follow lag after the kernel's last insert",
        &s(&|f| f.lag_s * 1e3),
        1,
        "ms",
    );
    row(
        "reader during the follow",
        &s(&|f| m(f.reader_follow)),
        1,
        "M lookups/s",
    );
    let resyncs: u64 = all.iter().map(|f| f.resyncs).sum();
    if resyncs > 0 {
        println!("  ({resyncs} resync(s): the socket's buffer overflowed and the table was dumped again)");
    }

    println!("\nfull-table load: a follower started on the full table dumps and applies it:");
    row("dump and apply", &s(&|f| f.dump_s), 3, "s");
    row(
        "dump and apply rate",
        &s(&|f| m(routes as f64 / f.dump_s)),
        3,
        "M routes/s",
    );
    row(
        "reader during the full-table load",
        &s(&|f| m(f.reader_dump)),
        1,
        "M lookups/s",
    );
    row(
        "reader, idle full table",
        &s(&|f| m(f.reader_idle_full)),
        1,
        "M lookups/s",
    );
    row(
        "reader, idle empty table",
        &s(&|f| m(f.reader_idle_empty)),
        1,
        "M lookups/s",
    );

    println!("\nthe same routes without a socket, in memory, the reader forwarding:");
    row(
        "decoder alone (netlink::decode)",
        &s(&|f| m(f.decode_rate)),
        3,
        "M routes/s",
    );
    row(
        "decoder + follower -> DIR-24-8 (from buffers)",
        &s(&|f| m(f.buffer_rate)),
        3,
        "M routes/s",
    );
    row(
        "write handler `add` -> DIR-24-8",
        &s(&|f| m(f.handler_rate)),
        3,
        "M routes/s",
    );
    row(
        "Lpm4Update::insert (bench lpm's update path)",
        &s(&|f| m(f.lpm_rate)),
        3,
        "M routes/s",
    );

    println!("\nratios (each run's own, then the median):");
    row(
        "follow rate / Lpm4Update::insert (goal >= 0.5)",
        &s(&|f| f.follow_rate / f.lpm_rate),
        2,
        "",
    );
    row(
        "follow rate / write handler `add`",
        &s(&|f| f.follow_rate / f.handler_rate),
        2,
        "",
    );
    row(
        "follow rate / kernel insert rate, a follower listening",
        &s(&|f| f.follow_rate * f.kernel_followed_s / routes as f64),
        2,
        "",
    );
    row(
        "follow rate / decoder + follower from buffers",
        &s(&|f| f.follow_rate / f.buffer_rate),
        2,
        "",
    );
    row(
        "dump and apply rate / Lpm4Update::insert",
        &s(&|f| routes as f64 / f.dump_s / f.lpm_rate),
        2,
        "",
    );
    row(
        "dump and apply rate / write handler `add`",
        &s(&|f| routes as f64 / f.dump_s / f.handler_rate),
        2,
        "",
    );
    row(
        "decoder + follower from buffers / write handler `add`",
        &s(&|f| f.buffer_rate / f.handler_rate),
        2,
        "",
    );
    row(
        "reader during full-table load / idle full table",
        &s(&|f| f.reader_dump / f.reader_idle_full),
        2,
        "",
    );
    row(
        "reader during follow / idle full table",
        &s(&|f| f.reader_follow / f.reader_idle_full),
        2,
        "",
    );
    Ok(true)
}
