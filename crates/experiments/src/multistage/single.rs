//! Fig. 5 (§II-C): one software router's forwarding rate against the
//! Ethernet frame size, with buffers recycled and allocated per packet,
//! beside the theoretical line rate. The paper's Linux PC reached about
//! 640 kpps of 64-byte frames, far from a gigabit port's 1488 kpps, and
//! line rate only for large frames; recycling buffers was "slightly"
//! better than allocating them.
//!
//! Here: one bricks IPv4 router (`FromDevice -> Classifier -> Strip ->
//! CheckIPHeader -> StaticIPLookup -> DecIPTTL -> EtherEncap -> Queue ->
//! ToDevice`, one worker) between two veths, in three network namespaces
//! (`gen`, `r`, `sink`, prefixed with this process' id), `bricks gen`
//! sending as fast as it can and `bricks sink` counting, as `bricks bench
//! io` does: generator and sink on the first CPU, the router on the last,
//! and the receive work of each veth in threaded NAPI at real-time
//! priority on its receiver's CPU (so that the kernel's share of the
//! router's work is counted on the router's CPU). Frame sizes are the
//! paper's (FCS included: `bricks gen --size` is 4 bytes less).
//!
//! bricks has no switch that turns its per-core buffer pool off, so the
//! "allocated per packet" curve is computed: the cost of taking a buffer
//! from the pool and giving it back is measured in memory against a fresh
//! zeroed heap allocation of the same size, in batches of 32 as sources
//! and sinks do, and the difference is added to each measured packet
//! time.

use super::model::{line_rate_pps, PAPER_PACKET_RATE};
use super::procs::{in_ns, report, run_error, GenReport, Router, SinkReport};
use super::{cannot_use_namespaces, not_run, Experiment, Findings, Settings};
use crate::frames::{click_data, udp_frame};
use crate::measure::{time_ns, Sample, Workload};
use crate::plot::{Chart, Series};
use crate::report::{Row, Table, Verdict};
use crate::Error;
use bricks_netns::{Captured, Network};
use bricks_packet::{Batch, Packet, BUFFER_SIZE};
use bricks_wire::Ipv4Addr;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The frame sizes (bytes, FCS included) of the figure.
pub const SIZES: [usize; 6] = [64, 128, 256, 512, 1024, 1518];
/// Frames per batch in the allocation measurement (a source's burst).
const ALLOC_BATCH: usize = 32;
/// The sink's head start, and how long it waits after the generator.
const SINK_LEAD: Duration = Duration::from_millis(700);
const SINK_TAIL: f64 = 0.8;
/// SCHED_FIFO priority of the veths' NAPI threads.
const NAPI_PRIORITY: &str = "10";

/// The router: Click's IPv4 forwarding path from `input` to `output`,
/// addressed from `src_mac` to `dst_mac`.
pub(crate) fn router_text(input: &str, output: &str, src_mac: &str, dst_mac: &str) -> String {
    format!(
        "{input}\n\
         \t-> c :: Classifier(12/0800, -)\n\
         \t-> Strip(14)\n\
         \t-> CheckIPHeader\n\
         \t-> rt :: StaticIPLookup(10.71.0.0/24 0, 10.70.0.0/24 1)\n\
         \t-> dt :: DecIPTTL\n\
         \t-> EtherEncap(0x0800, {src_mac}, {dst_mac})\n\
         \t-> q :: Queue\n\
         \t-> {output};\n\
         c[1] -> Discard;\nrt[1] -> Discard;\ndt[1] -> Discard;\n"
    )
}

/// The router in memory: `packets` 64-byte frames from an
/// `InfiniteSource`, counted by the `tx` Discard.
pub fn memory_router(packets: u64) -> Workload {
    let frame = udp_frame(
        [0x02, 0, 0, 0, 0x70, 0x01],
        [0x02, 0, 0, 0, 0x70, 0x02],
        Ipv4Addr::new(10, 70, 0, 2),
        Ipv4Addr::new(10, 71, 0, 2),
        60,
    );
    let input = format!(
        "InfiniteSource(DATA {}, LIMIT {packets}, BURST 32)",
        click_data(&frame)
    );
    Workload::new(
        "router-64",
        router_text(
            &input,
            "tx :: Discard",
            "02:00:00:00:71:01",
            "02:00:00:00:71:02",
        ),
        &["tx"],
    )
}

/// One router's 64-byte rate in memory, packets/s.
pub fn memory_rate_64(s: &Settings) -> Result<f64, Error> {
    let ns = time_ns(memory_router, s.pick(5_000_000, 500_000), s.runs)?;
    Ok(1e9 / ns.median())
}

/// Nanoseconds per packet of taking `ALLOC_BATCH` buffers from the pool
/// and giving them back, `rounds` times.
pub fn pool_ns(rounds: usize) -> f64 {
    let mut b = Batch::new();
    Packet::alloc_batch(&mut b, ALLOC_BATCH, |_| {});
    b.clear();
    let t = Instant::now();
    for _ in 0..rounds {
        Packet::alloc_batch(&mut b, ALLOC_BATCH, |p| {
            black_box(p);
        });
        black_box(&mut b);
        b.clear();
    }
    t.elapsed().as_nanos() as f64 / (rounds * ALLOC_BATCH).max(1) as f64
}

/// Nanoseconds per packet of allocating `ALLOC_BATCH` zeroed buffers of a
/// packet's size on the heap and freeing them, `rounds` times.
pub fn heap_ns(rounds: usize) -> f64 {
    let mut v: Vec<Box<[u8]>> = Vec::with_capacity(ALLOC_BATCH);
    let t = Instant::now();
    for _ in 0..rounds {
        for _ in 0..ALLOC_BATCH {
            v.push(black_box(vec![0u8; BUFFER_SIZE].into_boxed_slice()));
        }
        black_box(&mut v);
        v.clear();
    }
    t.elapsed().as_nanos() as f64 / (rounds * ALLOC_BATCH).max(1) as f64
}

/// The rate `pps` would drop to if every packet cost `extra_ns` more.
pub fn with_extra_ns(pps: f64, extra_ns: f64) -> f64 {
    if pps <= 0.0 {
        return 0.0;
    }
    1.0 / (1.0 / pps + extra_ns.max(0.0) * 1e-9)
}

/// The CPUs this process may use, in order.
fn cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let list = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or("0")
        .trim()
        .to_string();
    let mut v = Vec::new();
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) {
            v.extend(a..=b.min(a + 1023));
        }
    }
    if v.is_empty() {
        v.push(0);
    }
    v
}

/// PIDs of the kernel threads named `napi/IFNAME-...`.
fn napi_threads(ifname: &str) -> Vec<u32> {
    let prefix = format!("napi/{ifname}-");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim_end().starts_with(&prefix))
        })
        .collect()
}

/// Runs `cmd`; an error carries its stderr.
fn sh(mut cmd: Command) -> Result<(), Error> {
    bricks_netns::run(&mut cmd)
        .map(drop)
        .map_err(|e| run_error("veth line setup", e.to_string()))
}

/// The three namespaces and the router between them: `bricks gen` in
/// `gen` sends through the router in `r` to `bricks sink` in `sink`.
pub(crate) struct Line {
    net: Network,
    exe: PathBuf,
    r0_mac: String,
    tester: usize,
    router_cpu: usize,
    router: Option<Router>,
    /// How the veths' receive work is placed.
    napi: String,
}

impl Line {
    fn build(exe: &Path) -> Result<Line, Error> {
        Line::build_with(exe, "msf5", |r1_mac, s0_mac| {
            router_text(
                "FromDevice(r0, BACKEND auto)",
                "ToDevice(r1, BACKEND auto)",
                r1_mac,
                s0_mac,
            )
        })
    }

    /// The line with the router `conf(r1_mac, s0_mac)` returns (it reads
    /// `r0`, sends on `r1` to the sink's MAC), one worker; namespaces
    /// prefixed with `prefix` and this process' id.
    pub(crate) fn build_with(
        exe: &Path,
        prefix: &str,
        conf: impl Fn(&str, &str) -> String,
    ) -> Result<Line, Error> {
        let e = |e: bricks_netns::NetnsError| run_error("veth line setup", e.0);
        let mut net = Network::new(&Network::unique_prefix(prefix)).map_err(e)?;
        for ns in ["gen", "r", "sink"] {
            net.add_namespace(ns).map_err(e)?;
            net.sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
                .map_err(e)?;
            net.sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
                .map_err(e)?;
        }
        net.add_link("gen", "g0", "r", "r0", 1).map_err(e)?;
        net.add_link("r", "r1", "sink", "s0", 1).map_err(e)?;
        net.add_addr("gen", "g0", "10.70.0.2/24").map_err(e)?;
        net.add_addr("sink", "s0", "10.71.0.2/24").map_err(e)?;
        let r0_mac = net.mac("r", "r0").map_err(e)?;
        let r1_mac = net.mac("r", "r1").map_err(e)?;
        let s0_mac = net.mac("sink", "s0").map_err(e)?;
        let cpus = cpus();
        let tester = cpus[0];
        let router_cpu = cpus[cpus.len() - 1];
        // Senders hand over finished frames (no TSO), so that a receiving
        // veth takes them through NAPI.
        for (ns, ifname) in [("gen", "g0"), ("r", "r1")] {
            sh(net.exec(
                ns,
                &[
                    "ethtool", "-K", ifname, "tx", "off", "tso", "off", "gso", "off",
                ],
            ))?;
        }
        let napi = match (
            threaded_napi(&net, "r", "r0", router_cpu),
            threaded_napi(&net, "sink", "s0", tester),
        ) {
            (Ok(()), Ok(())) => format!(
                "veth receive work in threaded NAPI, SCHED_FIFO, on the receiver's CPU \
                 (router CPU {router_cpu}, tester CPU {tester})"
            ),
            (Err(e), _) | (_, Err(e)) => {
                format!("threaded NAPI not available ({e}): receive work where the kernel puts it")
            }
        };
        let conf = conf(&r1_mac, &s0_mac);
        let log = std::env::temp_dir().join(format!(
            "bricks-bench-multistage-router-{}.log",
            std::process::id()
        ));
        let cmd = in_ns(
            &net.ns_name("r"),
            Some(router_cpu),
            exe,
            &["run", "-e", &conf, "--threads", "1"],
        );
        let router = Router::start(cmd, log, &["r0: ", "r1: "])?;
        let napi = format!(
            "{napi}; router: {}",
            router.lines(&["r0: ", "r1: "]).join("; ")
        );
        Ok(Line {
            net,
            exe: exe.to_path_buf(),
            r0_mac,
            tester,
            router_cpu,
            router: Some(router),
            napi,
        })
    }

    /// One run: `bricks gen` as fast as it can for `secs` at `frame` bytes
    /// (FCS included); (offered, forwarded) packets/s.
    pub(crate) fn run(&mut self, frame: usize, secs: f64) -> Result<(f64, f64), Error> {
        if !self.router.as_mut().is_some_and(Router::running) {
            return Err(run_error("veth line", "the router ended"));
        }
        let sink_secs = SINK_LEAD.as_secs_f64() + secs + SINK_TAIL;
        let sink = Captured::spawn(&mut in_ns(
            &self.net.ns_name("sink"),
            Some(self.tester),
            &self.exe,
            &[
                "sink",
                "s0",
                "--duration",
                &format!("{sink_secs:.3}"),
                "--json",
            ],
        ))
        .map_err(|e| run_error("bricks sink", e.0))?;
        std::thread::sleep(SINK_LEAD);
        let size = (frame - 4).to_string();
        let gen = Captured::spawn(&mut in_ns(
            &self.net.ns_name("gen"),
            Some(self.tester),
            &self.exe,
            &[
                "gen",
                "g0",
                "--duration",
                &format!("{secs:.3}"),
                "--src",
                "10.70.0.2",
                "--dst",
                "10.71.0.2",
                "--dst-mac",
                &self.r0_mac,
                "--flows",
                "256",
                "--size",
                &size,
                "--json",
            ],
        ))
        .map_err(|e| run_error("bricks gen", e.0))?;
        let limit = Duration::from_secs_f64(sink_secs + 30.0);
        let g = report(gen, limit, "bricks gen")?;
        let k = report(sink, limit, "bricks sink")?;
        let g = GenReport::parse(&g).ok_or_else(|| run_error("bricks gen", "no sent count"))?;
        let k = SinkReport::parse(&k).ok_or_else(|| run_error("bricks sink", "no probe count"))?;
        let forwarded = if k.mpps > 0.0 {
            k.mpps * 1e6
        } else {
            k.received as f64 / g.elapsed.max(1e-9)
        };
        Ok((g.pps(), forwarded))
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if let Some(r) = self.router.take() {
            r.stop();
        }
        self.net.delete();
    }
}

/// Turns on GRO (so that a plain veth receives through NAPI) and threaded
/// NAPI on `ifname`, the threads at real-time priority on `cpu`.
fn threaded_napi(net: &Network, ns: &str, ifname: &str, cpu: usize) -> Result<(), Error> {
    sh(net.exec(ns, &["ethtool", "-K", ifname, "gro", "on"]))?;
    let before = napi_threads(ifname);
    let set = format!("echo 1 > /sys/class/net/{ifname}/threaded");
    sh(net.exec(ns, &["sh", "-c", &set]))?;
    let mut new = Vec::new();
    for _ in 0..50 {
        new = napi_threads(ifname)
            .into_iter()
            .filter(|p| !before.contains(p))
            .collect();
        if !new.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if new.is_empty() {
        return Err(run_error(
            "veth line setup",
            format!("no NAPI thread for {ifname}"),
        ));
    }
    for pid in new {
        let pid = pid.to_string();
        let mut c = Command::new("chrt");
        c.args(["-f", "-p", NAPI_PRIORITY, &pid]);
        sh(c)?;
        let mut c = Command::new("taskset");
        c.args(["-pc", &cpu.to_string(), &pid]);
        sh(c)?;
    }
    Ok(())
}

/// One router's 64-byte forwarding rate on veths, packets/s (one short
/// run; for Fig. 1 when Fig. 5 does not run).
pub fn veth_rate_64(s: &Settings) -> Result<f64, Error> {
    let exe = s
        .exe
        .as_deref()
        .ok_or_else(|| run_error("fig5", "no bricks binary"))?;
    let mut line = Line::build(exe)?;
    line.run(64, s.pick(3.0, 1.0))?;
    let (_, fwd) = line.run(64, s.pick(3.0, 1.0))?;
    Ok(fwd)
}

/// One frame size's runs.
struct Point {
    frame: usize,
    offered: Sample,
    forwarded: Sample,
}

/// Runs Fig. 5.
pub fn run(s: &Settings, found: &mut Findings) -> Result<Vec<Row>, Error> {
    let exp = Experiment::Fig5;
    let measure = "one router's forwarding rate against frame size (veths)";
    let paper = "~640 kpps at 64 B; recycling slightly better";
    // The allocation costs, in memory (no root needed).
    let rounds = s.pick(200_000, 20_000);
    let mut pool = Vec::new();
    let mut heap = Vec::new();
    for _ in 0..s.runs {
        pool.push(pool_ns(rounds));
        heap.push(heap_ns(rounds));
    }
    let (pool, heap) = (Sample(pool), Sample(heap));
    let extra = heap.median() - pool.median();
    println!(
        "Buffers in memory, batches of {ALLOC_BATCH}: from the per-core pool {} ns a packet, \
         fresh zeroed {BUFFER_SIZE}-byte heap allocations {} ns: {extra:+.1} ns a packet without \
         recycling",
        pool.show(1),
        heap.show(1)
    );
    let mut rows = Vec::new();
    let alloc_row = |forwarded_64: Option<f64>| Row {
        experiment: exp.figure().into(),
        measure: "buffers recycled (per-core pool) against allocated per packet".into(),
        paper: "recycling slightly better".into(),
        bricks: format!(
            "pool {:.1} ns, heap {:.1} ns a packet{}",
            pool.median(),
            heap.median(),
            forwarded_64.map_or(String::new(), |f| format!(
                "; 64 B: {:.0} kpps recycled, {:.0} kpps allocating (computed)",
                f / 1e3,
                with_extra_ns(f, extra) / 1e3
            ))
        ),
        verdict: Verdict::from_check(
            extra > 0.0,
            match forwarded_64 {
                Some(f) => format!(
                    "allocating would cost {extra:.1} ns a packet more, {:.1} % of the 64-byte \
                     rate (measured in memory: bricks has no switch to turn the pool off)",
                    (1.0 - with_extra_ns(f, extra) / f) * 100.0
                ),
                None => format!(
                    "allocating would cost {extra:.1} ns a packet more (measured in memory: \
                     bricks has no switch to turn the pool off)"
                ),
            },
        ),
    };
    let why = match (cannot_use_namespaces(s), s.exe.as_deref()) {
        (None, Some(exe)) => return run_veths(s, found, exe, (&pool, &heap), alloc_row),
        (Some(why), _) => why,
        (None, None) => "the bricks binary was not found".into(),
    };
    println!("(veth part skipped: {why})");
    rows.push(not_run(exp, measure, paper, why));
    rows.push(alloc_row(None));
    Ok(rows)
}

fn run_veths(
    s: &Settings,
    found: &mut Findings,
    exe: &Path,
    (pool, heap): (&Sample, &Sample),
    alloc_row: impl Fn(Option<f64>) -> Row,
) -> Result<Vec<Row>, Error> {
    let exp = Experiment::Fig5;
    let extra = heap.median() - pool.median();
    let sizes: Vec<usize> = if s.quick {
        vec![64, 512, 1518]
    } else {
        SIZES.to_vec()
    };
    let secs = s.pick(3.0, 1.0);
    let mut line = Line::build(exe)?;
    // An unmeasured run: ARP-free path warm, pools filled.
    line.run(64, 0.5)?;
    let mut points: Vec<Point> = sizes
        .iter()
        .map(|&frame| Point {
            frame,
            offered: Sample::default(),
            forwarded: Sample::default(),
        })
        .collect();
    // Runs go round the sizes, so that a change in the machine's load
    // touches them all.
    for _ in 0..s.runs {
        for p in points.iter_mut() {
            let (o, f) = line.run(p.frame, secs)?;
            p.offered.0.push(o);
            p.forwarded.0.push(f);
        }
    }
    let napi = line.napi.clone();
    let router_cpu = line.router_cpu;
    drop(line);
    let mut t = Table::new(&[
        "frame (bytes)",
        "offered (kpps)",
        "forwarded (kpps)",
        "forwarded (Gbit/s)",
        "allocating per packet (kpps, computed)",
        "1 Gbit/s line (kpps)",
        "10 Gbit/s line (kpps)",
    ]);
    for p in &points {
        let f = p.forwarded.median();
        t.push(vec![
            p.frame.to_string(),
            format!("{:.0}", p.offered.median() / 1e3),
            p.forwarded.map(|v| v / 1e3).show(0),
            format!("{:.2}", super::model::gbps(f, p.frame)),
            format!("{:.0}", with_extra_ns(f, extra) / 1e3),
            format!("{:.0}", line_rate_pps(1e9, p.frame) / 1e3),
            format!("{:.0}", line_rate_pps(10e9, p.frame) / 1e3),
        ]);
    }
    println!(
        "\nFig. 5: one bricks IPv4 router (one worker, CPU {router_cpu}) between veths, bricks gen \
         as fast as it can, {secs} s per run; {napi}\n"
    );
    print!("{}", t.render());

    let kpps = |f: &dyn Fn(&Point) -> f64| -> Vec<(f64, f64)> {
        points
            .iter()
            .map(|p| (p.frame as f64, f(p) / 1e3))
            .collect()
    };
    let line_curve = |bps: f64| -> Vec<(f64, f64)> {
        sizes
            .iter()
            .map(|&f| (f as f64, line_rate_pps(bps, f) / 1e3))
            .collect()
    };
    Chart {
        title: "Fig. 5: one router's forwarding rate against frame size".into(),
        x_label: "Ethernet frame size (bytes)".into(),
        y_label: "forwarding rate (kpps)".into(),
        log_x: false,
        series: vec![
            Series::measured(
                "bricks, buffers recycled (veths)",
                kpps(&|p| p.forwarded.median()),
            ),
            Series::measured(
                "bricks, a buffer allocated per packet (computed)",
                kpps(&|p| with_extra_ns(p.forwarded.median(), extra)),
            ),
            Series::reference("1 Gbit/s line rate", line_curve(1e9)),
            Series::reference("10 Gbit/s line rate", line_curve(10e9)),
            Series::reference(
                "paper: ~640 kpps at 64 B",
                vec![
                    (64.0, PAPER_PACKET_RATE / 1e3),
                    (128.0, PAPER_PACKET_RATE / 1e3),
                ],
            ),
        ],
    }
    .write_svg(&s.out.join("fig5-router.svg"))?;

    let f64_ = points[0].forwarded.median();
    found.packet_rate = Some((
        f64_,
        "one bricks IPv4 router on veths, 64 bytes (Fig. 5)".into(),
    ));
    let gen_bound = points[0].forwarded.median() >= 0.97 * points[0].offered.median();
    let last = &points[points.len() - 1];
    let one_g_at = points
        .iter()
        .find(|p| p.forwarded.median() >= 0.99 * line_rate_pps(1e9, p.frame))
        .map(|p| p.frame);
    let mut rows = vec![Row {
        experiment: exp.figure().into(),
        measure: "64-byte forwarding rate, one router, one worker (veths)".into(),
        paper: format!("~{:.0} kpps (1 Gbit/s line: 1488)", PAPER_PACKET_RATE / 1e3),
        bricks: format!(
            "{} kpps ({:.1}x the paper's), {:.0} kpps offered",
            points[0].forwarded.map(|v| v / 1e3).show(0),
            f64_ / PAPER_PACKET_RATE,
            points[0].offered.median() / 1e3
        ),
        verdict: Verdict::from_check(
            f64_ >= PAPER_PACKET_RATE,
            if gen_bound {
                format!(
                    "at least the paper's rate; bricks forwarded all the generator offered, so \
                     {:.0} kpps is a lower bound of the router's",
                    f64_ / 1e3
                )
            } else {
                format!(
                    "the router, not the generator, is the limit: {:.0} % of what was offered",
                    f64_ / points[0].offered.median() * 100.0
                )
            },
        ),
    }];
    rows.push(Row {
        experiment: exp.figure().into(),
        measure: "rate against frame size: line rate for large frames".into(),
        paper: "packet-rate bound for small frames, 1 Gbit/s line rate for large ones".into(),
        bricks: format!(
            "{:.0} kpps at {} B ({:.2} Gbit/s); 1 Gbit/s line rate {}",
            last.forwarded.median() / 1e3,
            last.frame,
            super::model::gbps(last.forwarded.median(), last.frame),
            match one_g_at {
                Some(f) => format!("from {f} B on"),
                None => "at no size".into(),
            }
        ),
        verdict: Verdict::from_check(
            one_g_at.is_some_and(|f| f > 64),
            match one_g_at {
                Some(64) => "1 Gbit/s line rate already at 64 bytes: no packet-rate bound below \
                     a gigabit port"
                    .to_string(),
                Some(f) => format!(
                    "packet-rate bound below {f} bytes, a gigabit port filled from there on, as \
                     in the paper"
                ),
                None => "a gigabit port is never filled".to_string(),
            },
        ),
    });
    rows.push(alloc_row(Some(f64_)));
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_cost_lowers_the_rate() {
        // 1 Mpps is 1,000 ns a packet; 250 ns more gives 800 kpps.
        assert!((with_extra_ns(1e6, 250.0) - 800e3).abs() < 1e-6);
        assert_eq!(with_extra_ns(1e6, 0.0), 1e6);
        assert_eq!(with_extra_ns(0.0, 10.0), 0.0);
    }

    #[test]
    fn the_memory_router_forwards_every_packet() {
        let r = memory_router(1000).run().unwrap();
        assert_eq!(r.delivered, 1000);
        assert_eq!(r.counter("q", "drops"), 0);
    }

    #[test]
    fn allocation_costs_are_measured() {
        let (p, h) = (pool_ns(1000), heap_ns(1000));
        assert!(p > 0.0 && h > 0.0, "{p} {h}");
    }

    #[test]
    fn cpus_are_listed() {
        let c = cpus();
        assert!(!c.is_empty());
        assert!(c.windows(2).all(|w| w[0] < w[1]), "{c:?}");
    }
}
