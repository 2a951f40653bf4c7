//! `bricks demo`: a router between real Linux hosts, built on the spot.
//!
//! As root it builds a network of namespaces (`bdemo-h1`, `bdemo-h2`,
//! `bdemo-r`; see [`topology`]), runs `conf/demo-router.click` with
//! `bricks run` in the router's namespace, sends real traffic from the
//! hosts' own stacks (ping both ways, a TCP transfer checked byte for
//! byte, a UDP load from `bricks gen` to `bricks sink`), shows the router's
//! per-port and per-core rates while it runs, prints a summary, and tears
//! it all down: on a normal end, on Ctrl-C or SIGTERM, and on any error or
//! panic (everything it makes is owned by a guard). A run killed outright
//! is cleaned up by the next one.
//!
//! Without the privileges it says what it needs and runs the same
//! configuration in memory instead ([`memory`]).

mod memory;
mod rates;
mod topology;
mod traffic;

use anyhow::Context as _;
use bricks_netns::{Captured, ChildGuard, NetnsError};
use clap::ValueEnum;
use rates::{Rates, Sample};
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use topology::{PidFile, Topology, PORTS, PREFIX, ROUTER};
use traffic::{PingResult, TcpResult, UdpResult};

/// The configuration the demo runs, built in so that the demo also works
/// outside the repository.
const BUILTIN_CONFIG: &str = include_str!("../../../conf/demo-router.click");
const DEFAULT_CONFIG: &str = "conf/demo-router.click";

/// `bricks demo` options.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
#[command(after_help = "Examples:\n  \
    sudo bricks demo                  # traffic once, then live rates until Ctrl-C\n  \
    sudo bricks demo --duration 20    # end by itself after 20 seconds\n  \
    sudo bricks demo --backend packet --threads 1\n  \
    bricks demo --in-memory           # no root needed")]
pub(crate) struct DemoArgs {
    /// End after this many seconds, counted from when the router is up
    /// (the traffic phases always run to their end). Without it, the demo
    /// keeps showing rates after the traffic until Ctrl-C.
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// Router worker threads, each pinned to a core.
    #[arg(short = 't', long, default_value_t = 2, value_name = "N")]
    threads: usize,
    /// How the router reads and sends packets.
    #[arg(long, value_enum, default_value = "auto")]
    backend: Backend,
    /// The router's configuration [default: conf/demo-router.click, or the
    /// copy built into bricks when there is no such file].
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Mebibytes the TCP transfer sends.
    #[arg(long, default_value_t = 16, value_name = "MIB")]
    tcp_mib: u64,
    /// Packets per second of the UDP load.
    #[arg(long, default_value_t = 20_000, value_name = "PPS")]
    udp_rate: u64,
    /// Run the in-memory demo (no namespaces, no root needed).
    #[arg(long)]
    in_memory: bool,
    #[command(subcommand)]
    helper: Option<traffic::Helper>,
}

/// The router's device backend (`-D BACKEND=...`).
#[derive(Clone, Copy, ValueEnum)]
enum Backend {
    /// AF_XDP where it works, AF_PACKET otherwise.
    Auto,
    /// AF_XDP only.
    Xdp,
    /// AF_PACKET only.
    Packet,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::Xdp => "xdp",
            Backend::Packet => "packet",
        }
    }
}

/// Runs `bricks demo`.
pub(crate) fn demo(a: DemoArgs) -> anyhow::Result<ExitCode> {
    if let Some(h) = a.helper {
        return traffic::helper(h);
    }
    if let Some(d) = a.duration {
        anyhow::ensure!(
            d.is_finite() && d > 0.0,
            "--duration must be a positive number of seconds"
        );
    }
    anyhow::ensure!(a.threads >= 1, "--threads must be at least 1");
    let config = ConfigFile::resolve(a.config.as_deref())?;
    if a.in_memory {
        return memory::run(config.path());
    }
    if !may_create_namespaces() {
        println!(
            "bricks demo builds a network of Linux network namespaces (two hosts and a router \
             joined by veth links), which needs root, or the capabilities CAP_NET_ADMIN and \
             CAP_SYS_ADMIN. Run it as root: sudo {} demo\n\nMeanwhile, here is the same router \
             configuration run in memory on scripted frames.\n",
            std::env::args().next().unwrap_or_else(|| "bricks".into())
        );
        return memory::run(config.path());
    }
    let stop = crate::runner::stop_on_signals()?;
    live(&a, config.path(), stop)
}

/// The configuration file, or a temporary copy of the built-in one.
enum ConfigFile {
    Given(PathBuf),
    /// The copy, and its directory (deleted when dropped).
    Builtin {
        path: PathBuf,
        _dir: tempfile::TempDir,
    },
}

impl ConfigFile {
    fn resolve(given: Option<&Path>) -> anyhow::Result<ConfigFile> {
        if let Some(p) = given {
            anyhow::ensure!(p.exists(), "{}: no such file", p.display());
            return Ok(ConfigFile::Given(p.to_path_buf()));
        }
        let default = Path::new(DEFAULT_CONFIG);
        if default.exists() {
            return Ok(ConfigFile::Given(default.to_path_buf()));
        }
        let dir = tempfile::tempdir().context("making a scratch directory")?;
        let path = dir.path().join("demo-router.click");
        std::fs::write(&path, BUILTIN_CONFIG)
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(ConfigFile::Builtin { path, _dir: dir })
    }

    fn path(&self) -> &Path {
        match self {
            ConfigFile::Given(p) | ConfigFile::Builtin { path: p, .. } => p,
        }
    }
}

/// Root, or both capabilities namespaces need in the effective set.
fn may_create_namespaces() -> bool {
    if bricks_netns::is_root() {
        return true;
    }
    const CAP_NET_ADMIN: u32 = 12;
    const CAP_SYS_ADMIN: u32 = 21;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim();
            u64::from_str_radix(hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_NET_ADMIN) != 0 && caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// The programs the live demo runs, and the Debian package of each.
fn check_tools() -> anyhow::Result<()> {
    let mut missing = Vec::new();
    for (tool, package) in [("ip", "iproute2"), ("ping", "iputils-ping")] {
        let found = Command::new(tool)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !found {
            missing.push(package);
        }
    }
    if !bricks_netns::have_ethtool() {
        missing.push("ethtool");
    }
    anyhow::ensure!(
        missing.is_empty(),
        "bricks demo needs {}: apt-get install {} (or run scripts/setup)",
        missing.join(", "),
        missing.join(" ")
    );
    Ok(())
}

/// How long the router may take to come up (load an XDP program, open
/// every queue) before the demo gives up.
const ROUTER_START: Duration = Duration::from_secs(30);

/// What the traffic phases found.
#[derive(Default)]
struct Report {
    pings: Vec<(String, Result<PingResult, String>)>,
    tcp: Option<Result<TcpResult, String>>,
    udp: Option<Result<UdpResult, String>>,
    router: Option<Sample>,
    router_error: Option<String>,
    /// A signal cut the traffic phases short.
    interrupted: bool,
}

impl Report {
    fn passed(&self) -> bool {
        self.pings
            .iter()
            .all(|(_, r)| r.as_ref().is_ok_and(|p| p.received > 0))
            && self
                .tcp
                .as_ref()
                .is_none_or(|t| t.as_ref().is_ok_and(TcpResult::intact))
            && self
                .udp
                .as_ref()
                .is_none_or(|u| u.as_ref().is_ok_and(|u| u.received > 0))
            && self.router_error.is_none()
    }
}

fn live(a: &DemoArgs, config: &Path, stop: Arc<AtomicBool>) -> anyhow::Result<ExitCode> {
    check_tools()?;
    let exe = std::env::current_exe().context("finding the bricks binary")?;
    let (pids, ended) = PidFile::claim(Path::new(topology::STATE_FILE))?;
    for e in &ended {
        println!("Ended a leftover {e} of an earlier demo.");
    }
    let leftovers: Vec<String> = bricks_netns::list_namespaces()?
        .into_iter()
        .filter(|n| n.starts_with(PREFIX))
        .collect();
    if !leftovers.is_empty() {
        println!("Deleting leftover namespaces: {}", leftovers.join(" "));
    }
    let topo = Topology::build(PREFIX)?;
    print_topology(&topo);

    // The router, in its own process group: Ctrl-C in the terminal
    // reaches the demo only, which then stops the router itself and
    // collects its last counters.
    let mut argv: Vec<String> = vec![
        exe.display().to_string(),
        "run".into(),
        config.display().to_string(),
        "--threads".into(),
        a.threads.to_string(),
        "--stats-interval".into(),
        "1".into(),
        "--stats-json".into(),
        "-D".into(),
        format!("BACKEND={}", a.backend.name()),
    ];
    for d in topo.defines() {
        argv.push("-D".into());
        argv.push(d);
    }
    println!(
        "Router: ip netns exec {PREFIX}{ROUTER} bricks {}\n",
        argv[1..].join(" ")
    );
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let mut cmd = topo.net.exec(ROUTER, &refs);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut router = RouterProcess::start(&mut cmd, stop.clone())?;
    pids.record("router", router.child.id())?;
    router.wait_ready(&stop)?;

    let mut report = Report::default();
    let started = Instant::now();
    let ctx = Phases {
        topo: &topo,
        exe: &exe,
        stop: &stop,
        pids: &pids,
    };
    ctx.run(a, &mut report, started);
    report.interrupted = stop.load(Ordering::Relaxed);

    // Keep showing rates: until the duration is over, or until Ctrl-C.
    if !stop.load(Ordering::Relaxed) {
        match a.duration {
            Some(d) => {
                let end = started + Duration::from_secs_f64(d);
                if Instant::now() < end {
                    println!(
                        "\nShowing the router's rates until {d} s have passed (Ctrl-C ends it \
                         sooner)."
                    );
                }
                while Instant::now() < end && !stop.load(Ordering::Relaxed) {
                    if router.exited() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            None => {
                let (h1, h2) = (&PORTS[0], &PORTS[1]);
                println!(
                    "\nThe network stays up; try, in another terminal:\n    \
                     sudo ip netns exec {PREFIX}{} ping {}\n    \
                     sudo ip netns exec {PREFIX}{} ping -t 1 {}\n\
                     Rates show whenever packets flow. Ctrl-C ends the demo.",
                    h1.host, h2.host_ip, h2.host, h1.host_ip
                );
                while !stop.load(Ordering::Relaxed) && !router.exited() {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
    }
    if stop.load(Ordering::Relaxed) {
        println!("\nStopping.");
    }
    let (last, error) = router.stop();
    report.router = last;
    report.router_error = error;
    print_summary(&report);
    drop(router);
    drop(topo);
    drop(pids);
    println!("\nThe network ({PREFIX}*) is deleted.");
    Ok(if report.router_error.is_none() && report.interrupted {
        // What ran is reported; what did not run is no failure.
        ExitCode::from(130)
    } else if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_topology(topo: &Topology) {
    println!("bricks demo: a router between two Linux hosts, in network namespaces\n");
    let (p0, p1) = (&PORTS[0], &PORTS[1]);
    println!(
        "  {PREFIX}{} {}/{}  --  {} [ {PREFIX}{ROUTER}: bricks {} | {} ] {}  --  {PREFIX}{} {}/{}",
        p0.host,
        p0.host_ip,
        p0.len,
        p0.dev,
        p0.router_ip,
        p1.router_ip,
        p1.dev,
        p1.host,
        p1.host_ip,
        p1.len
    );
    println!(
        "  router MACs: {} {}, {} {}; {} queues per link; Linux does not forward in {PREFIX}{ROUTER}\n",
        p0.dev,
        topo.router_macs[0],
        p1.dev,
        topo.router_macs[1],
        topology::QUEUES
    );
}

/// The running router: its process, its counters as they come, and what
/// it printed on stderr.
struct RouterProcess {
    child: ChildGuard,
    latest: Arc<Mutex<Option<Sample>>>,
    stderr: Arc<Mutex<Vec<String>>>,
    /// Echo stderr lines as they come (while starting).
    echo: Arc<AtomicBool>,
    /// Print rate lines as samples come (while running).
    show: Arc<AtomicBool>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl RouterProcess {
    /// Starts the router; if it ends before [`RouterProcess::stop`] is
    /// called, `stop` is set, so that the demo does not wait for traffic
    /// that can no longer flow.
    fn start(cmd: &mut Command, stop: Arc<AtomicBool>) -> anyhow::Result<RouterProcess> {
        let mut child = ChildGuard::spawn(cmd)?;
        let stdout = child.child_mut().stdout.take().context("router stdout")?;
        let stderr = child.child_mut().stderr.take().context("router stderr")?;
        let latest = Arc::new(Mutex::new(None::<Sample>));
        let lines = Arc::new(Mutex::new(Vec::new()));
        let echo = Arc::new(AtomicBool::new(true));
        let show = Arc::new(AtomicBool::new(true));
        let mut readers = Vec::new();
        {
            let (latest, show) = (latest.clone(), show.clone());
            readers.push(std::thread::spawn(move || {
                let mut prev: Option<Sample> = None;
                for line in std::io::BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    let Some(sample) = Sample::parse(&line) else {
                        continue;
                    };
                    if let Some(r) = prev
                        .as_ref()
                        .and_then(|p| Rates::between(p, &sample, &PORTS))
                    {
                        if show.load(Ordering::Relaxed) && !r.idle() {
                            print!("{}", r.render());
                        }
                    }
                    *latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(sample.clone());
                    prev = Some(sample);
                }
                // The router closed its output: it has ended.
                if show.load(Ordering::Relaxed) {
                    println!("The router ended unexpectedly.");
                    stop.store(true, Ordering::Relaxed);
                }
            }));
        }
        {
            let (lines, echo) = (lines.clone(), echo.clone());
            readers.push(std::thread::spawn(move || {
                for line in std::io::BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if echo.load(Ordering::Relaxed) {
                        println!("  router: {line}");
                    }
                    let mut l = lines.lock().unwrap_or_else(|e| e.into_inner());
                    l.push(line);
                    if l.len() > 400 {
                        l.drain(..200);
                    }
                }
            }));
        }
        Ok(RouterProcess {
            child,
            latest,
            stderr: lines,
            echo,
            show,
            readers,
        })
    }

    fn latest(&self) -> Option<Sample> {
        self.latest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn exited(&mut self) -> bool {
        self.child.try_wait().is_some()
    }

    /// The last lines the router printed on stderr.
    fn stderr_tail(&self, n: usize) -> String {
        let l = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        l[l.len().saturating_sub(n)..].join("\n")
    }

    /// Waits for the first counters: then every device is open and every
    /// worker runs.
    fn wait_ready(&mut self, stop: &AtomicBool) -> anyhow::Result<()> {
        let start = Instant::now();
        loop {
            if self.latest().is_some() {
                self.echo.store(false, Ordering::Relaxed);
                println!("Router up after {:.1} s.\n", start.elapsed().as_secs_f64());
                return Ok(());
            }
            // A router that ended closes its output, which also sets
            // `stop`: give it a moment to be reaped before blaming a signal.
            let ended = if stop.load(Ordering::Relaxed) {
                self.child.wait_timeout(Duration::from_millis(500))
            } else {
                self.child.try_wait()
            };
            if let Some(status) = ended {
                // Let the reader catch the last lines.
                std::thread::sleep(Duration::from_millis(100));
                anyhow::bail!(
                    "the router ended before it was up ({status}):\n{}",
                    self.stderr_tail(30)
                );
            }
            anyhow::ensure!(
                !stop.load(Ordering::Relaxed),
                "stopped while the router started"
            );
            anyhow::ensure!(
                start.elapsed() < ROUTER_START,
                "the router printed no counters within {ROUTER_START:?}:\n{}",
                self.stderr_tail(30)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the router (SIGTERM, so it prints its final counters) and
    /// returns those, and an error if it failed on its own.
    fn stop(&mut self) -> (Option<Sample>, Option<String>) {
        self.show.store(false, Ordering::Relaxed);
        let ended_early = self.child.try_wait();
        let status = match ended_early {
            Some(s) => Some(s),
            None => self.child.stop(Duration::from_secs(5)),
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let error = match (ended_early, status) {
            (Some(s), _) => Some(format!(
                "the router ended by itself ({s}):\n{}",
                self.stderr_tail(20)
            )),
            (None, Some(s)) if !s.success() => Some(format!(
                "the router failed ({s}):\n{}",
                self.stderr_tail(20)
            )),
            (None, None) => Some("the router did not stop within 5 s and was killed".into()),
            _ => None,
        };
        (self.latest(), error)
    }
}

/// What the traffic phases need.
struct Phases<'a> {
    topo: &'a Topology,
    exe: &'a Path,
    stop: &'a AtomicBool,
    pids: &'a PidFile,
}

impl Phases<'_> {
    fn run(&self, a: &DemoArgs, report: &mut Report, started: Instant) {
        let (p0, p1) = (&PORTS[0], &PORTS[1]);
        for (from, to) in [(p0, p1), (p1, p0)] {
            if self.stopped() {
                return;
            }
            let label = format!("ping {} -> {}", from.host, to.host);
            println!("{label}: ping -c 3 {}", to.host_ip);
            let r = self.ping(from.host, &to.host_ip.to_string());
            match &r {
                Ok(p) => println!("{label}: {}", ping_line(p)),
                Err(e) => println!("{label}: FAILED: {e}"),
            }
            report.pings.push((label, r));
        }
        if self.stopped() {
            return;
        }
        let bytes = a.tcp_mib << 20;
        println!(
            "tcp {} -> {}: sending {} MiB to {}:5001",
            p0.host, p1.host, a.tcp_mib, p1.host_ip
        );
        let r = self.tcp(p0.host, p1.host, &format!("{}:5001", p1.host_ip), bytes);
        match &r {
            Ok(t) => println!("tcp {} -> {}: {}", p0.host, p1.host, tcp_line(t)),
            Err(e) => println!("tcp {} -> {}: FAILED: {e}", p0.host, p1.host),
        }
        report.tcp = Some(r);
        if self.stopped() {
            return;
        }
        // The UDP load fits in what is left of --duration, within 1..=3 s.
        let secs = a.duration.map_or(3.0, |d| {
            (d - started.elapsed().as_secs_f64() - 1.0)
                .clamp(1.0, 3.0)
                .round()
        });
        println!(
            "udp {} -> {}: bricks gen, {} packets/s of 64 bytes for {secs} s, 16 flows",
            p0.host, p1.host, a.udp_rate
        );
        let r = self.udp(a.udp_rate, secs).map_err(|e| format!("{e:#}"));
        match &r {
            Ok(u) => println!("udp {} -> {}: {u}", p0.host, p1.host),
            Err(e) => println!("udp {} -> {}: FAILED: {e}", p0.host, p1.host),
        }
        report.udp = Some(r);
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Starts `argv` in namespace `ns` with its output captured, and
    /// records it in the state file (a killed demo's next run ends it).
    fn spawn(&self, ns: &str, role: &str, argv: &[&str]) -> Result<Captured, NetnsError> {
        let c = Captured::spawn(&mut self.topo.net.exec(ns, argv))?;
        let _ = self.pids.record(role, c.id());
        Ok(c)
    }

    fn ping(&self, ns: &str, dst: &str) -> Result<PingResult, String> {
        let argv = ["ping", "-n", "-c", "3", "-i", "0.2", "-W", "2", dst];
        let out = self
            .spawn(ns, "ping", &argv)
            .and_then(|c| c.wait(Duration::from_secs(15), Some(self.stop)))
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout);
        PingResult::parse(&text).ok_or_else(|| {
            format!(
                "{}{}",
                text.trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })
    }

    fn tcp(&self, from: &str, to: &str, addr: &str, bytes: u64) -> Result<TcpResult, String> {
        let exe = self.exe.display().to_string();
        let n = bytes.to_string();
        let server = self
            .spawn(
                to,
                "tcp-serve",
                &[&exe, "demo", "tcp-serve", "--listen", addr, "--bytes", &n],
            )
            .map_err(|e| e.to_string())?;
        let sender = self
            .spawn(
                from,
                "tcp-send",
                &[&exe, "demo", "tcp-send", "--to", addr, "--bytes", &n],
            )
            .and_then(|c| c.wait(Duration::from_secs(60), Some(self.stop)))
            .map_err(|e| e.to_string())?;
        let served = server
            .wait(Duration::from_secs(15), Some(self.stop))
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&served.stdout);
        match text.lines().rev().find_map(TcpResult::from_json) {
            Some(r) => Ok(r),
            None => Err(format!(
                "the receiver reported nothing: {} {} / sender: {}",
                text.trim(),
                String::from_utf8_lossy(&served.stderr).trim(),
                String::from_utf8_lossy(&sender.stderr).trim()
            )),
        }
    }

    /// A UDP load: `bricks gen` in h1 sends `rate` packets a second for
    /// `secs` seconds to h2, through the router; `bricks sink` in h2
    /// counts them and measures their one-way latency from the send times
    /// the generator stamped in them.
    fn udp(&self, rate: u64, secs: f64) -> anyhow::Result<UdpResult> {
        let exe = self.exe.display().to_string();
        let (p0, p1) = (&PORTS[0], &PORTS[1]);
        let count = ((rate as f64 * secs) as u64).max(1);
        let sink = self.spawn(
            p1.host,
            "sink",
            &[
                &exe,
                "sink",
                p1.host_if,
                "--duration",
                &(secs + 3.0).to_string(),
                "--expect",
                &count.to_string(),
                "--json",
            ],
        )?;
        // The sink is listening once its process is up and its device
        // open; give it that long before the first packet.
        std::thread::sleep(Duration::from_secs(1));
        let gen = self
            .spawn(
                p0.host,
                "gen",
                &[
                    &exe,
                    "gen",
                    p0.host_if,
                    "--rate",
                    &rate.to_string(),
                    "--count",
                    &count.to_string(),
                    "--src",
                    &p0.host_ip.to_string(),
                    "--dst",
                    &p1.host_ip.to_string(),
                    "--dst-mac",
                    &self.topo.router_macs[0],
                    "--flows",
                    "16",
                    "--size",
                    "64",
                    // Two transmit queues, so both router queues (and
                    // both router cores) see traffic.
                    "--threads",
                    "2",
                    "--json",
                ],
            )?
            .wait(Duration::from_secs_f64(secs + 20.0), Some(self.stop))?;
        anyhow::ensure!(
            gen.status.success(),
            "bricks gen failed ({}): {}",
            gen.status,
            String::from_utf8_lossy(&gen.stderr).trim()
        );
        let sunk = sink.wait(Duration::from_secs_f64(secs + 20.0), Some(self.stop))?;
        anyhow::ensure!(
            sunk.status.success(),
            "bricks sink failed ({}): {}",
            sunk.status,
            String::from_utf8_lossy(&sunk.stderr).trim()
        );
        let json = |out: &std::process::Output, who: &str| {
            let text = String::from_utf8_lossy(&out.stdout);
            text.lines()
                .rev()
                .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .with_context(|| format!("bricks {who} printed no JSON: {}", text.trim()))
        };
        UdpResult::from_reports(&json(&gen, "gen")?, &json(&sunk, "sink")?)
            .context("reading the reports of bricks gen and bricks sink")
    }
}

fn ping_line(p: &PingResult) -> String {
    let mut s = format!("{}/{} replies", p.received, p.sent);
    if let Some((min, avg, max)) = p.rtt_ms {
        s.push_str(&format!(", rtt min/avg/max {min:.3}/{avg:.3}/{max:.3} ms"));
    }
    for e in &p.errors {
        s.push_str(&format!("; {e}"));
    }
    s
}

fn tcp_line(t: &TcpResult) -> String {
    format!(
        "{:.1} MiB in {:.2} s, {:.1} MB/s, {}",
        t.received as f64 / (1 << 20) as f64,
        t.seconds,
        t.mbytes_per_s(),
        if t.intact() {
            "intact".to_string()
        } else if t.received != t.expected {
            format!("INCOMPLETE ({} of {} bytes)", t.received, t.expected)
        } else {
            format!("CORRUPTED from byte {}", t.first_bad.unwrap_or(0))
        }
    )
}

fn print_summary(r: &Report) {
    println!("\nSummary");
    for (label, p) in &r.pings {
        match p {
            Ok(p) => println!("  {label}: {}", ping_line(p)),
            Err(e) => println!("  {label}: FAILED: {e}"),
        }
    }
    let (p0, p1) = (&PORTS[0], &PORTS[1]);
    match &r.tcp {
        Some(Ok(t)) => println!("  tcp {} -> {}: {}", p0.host, p1.host, tcp_line(t)),
        Some(Err(e)) => println!("  tcp {} -> {}: FAILED: {e}", p0.host, p1.host),
        None => {}
    }
    match &r.udp {
        Some(Ok(l)) => println!("  udp {} -> {}: {l}", p0.host, p1.host),
        Some(Err(e)) => println!("  udp {} -> {}: FAILED: {e}", p0.host, p1.host),
        None => {}
    }
    if let Some(s) = &r.router {
        println!(
            "  router ({} worker{}, after {:.1} s):",
            s.workers.len(),
            if s.workers.len() == 1 { "" } else { "s" },
            s.elapsed
        );
        print!("{}", rates::port_table(s, &PORTS));
        for (i, p) in PORTS.iter().enumerate() {
            println!(
                "    {} ARP: answered {} requests for {}, sent {} queries, learnt {} replies, \
                 dropped {} packets waiting",
                p.dev,
                s.total(&format!("ar{i}"), "replies"),
                p.router_ip,
                s.total(&format!("arpq{i}"), "queries"),
                s.total(&format!("arpq{i}"), "responses"),
                s.total(&format!("arpq{i}"), "drops"),
            );
        }
    }
    if let Some(e) = &r.router_error {
        println!("  router: {e}");
    }
    println!(
        "  {}",
        if r.router_error.is_none() && r.interrupted {
            "interrupted before the traffic was done"
        } else if r.passed() {
            "all traffic went through"
        } else {
            "SOMETHING FAILED (see above)"
        }
    );
}
