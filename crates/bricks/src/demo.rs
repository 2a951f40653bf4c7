//! `bricks demo`: a router between real Linux hosts, built on the spot.
//!
//! As root it builds a network of namespaces (`bdemo-h1`, `bdemo-h2`,
//! `bdemo-r`; see [`topology`]), runs `conf/dual-stack-router.click` with
//! `bricks run` in the router's namespace, sends real traffic from the
//! hosts' own stacks (ping and ping6 both ways, TCP transfers over IPv4
//! and IPv6 checked byte for byte, a UDP load from `bricks gen` to `bricks
//! sink`), shows the router's
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
const BUILTIN_CONFIG: &str = include_str!("../../../conf/dual-stack-router.click");
const DEFAULT_CONFIG: &str = "conf/dual-stack-router.click";

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
    /// The router's configuration [default: conf/dual-stack-router.click, or the
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
        let path = dir.path().join("dual-stack-router.click");
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
    tcp6: Option<Result<TcpResult, String>>,
    udp: Option<Result<UdpResult, String>>,
    router: Option<Sample>,
    router_error: Option<String>,
    /// A signal cut the traffic phases short.
    interrupted: bool,
}

impl Report {
    /// The last line: PASS, FAIL or INTERRUPTED, and what it means.
    fn verdict(&self) -> String {
        if self.router_error.is_none() && self.interrupted {
            return "INTERRUPTED: stopped before the traffic was done.".into();
        }
        if self.passed() {
            return "PASS: the router forwarded all the traffic.".into();
        }
        let mut failed: Vec<String> = self
            .pings
            .iter()
            .filter(|(_, r)| !r.as_ref().is_ok_and(|p| p.received > 0))
            .map(|(l, _)| l.clone())
            .collect();
        let (p0, p1) = (&PORTS[0], &PORTS[1]);
        if self
            .tcp
            .as_ref()
            .is_some_and(|t| !t.as_ref().is_ok_and(TcpResult::intact))
        {
            failed.push(format!("tcp {} -> {}", p0.host, p1.host));
        }
        if self
            .tcp6
            .as_ref()
            .is_some_and(|t| !t.as_ref().is_ok_and(TcpResult::intact))
        {
            failed.push(format!("tcp6 {} -> {}", p0.host, p1.host));
        }
        if self
            .udp
            .as_ref()
            .is_some_and(|u| !u.as_ref().is_ok_and(|u| u.received > 0))
        {
            failed.push(format!("udp {} -> {}", p0.host, p1.host));
        }
        if self.router_error.is_some() {
            failed.push("the router".into());
        }
        format!("FAIL: {} (see the summary above).", failed.join(", "))
    }

    fn passed(&self) -> bool {
        self.pings
            .iter()
            .all(|(_, r)| r.as_ref().is_ok_and(|p| p.received > 0))
            && [&self.tcp, &self.tcp6].iter().all(|t| {
                t.as_ref()
                    .is_none_or(|t| t.as_ref().is_ok_and(TcpResult::intact))
            })
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
    println!("bricks demo: a router between two Linux hosts, in network namespaces\n");
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
    println!(
        "Building the network: namespaces {PREFIX}{}, {PREFIX}{ROUTER}, {PREFIX}{}, two veth \
         links...",
        PORTS[0].host, PORTS[1].host
    );
    let built = Instant::now();
    let topo = Topology::build(PREFIX)?;
    println!("Built in {:.1} s:\n", built.elapsed().as_secs_f64());
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
    let mut shown: Vec<String> = vec!["ip".into(), "netns".into(), "exec".into()];
    shown.push(format!("{PREFIX}{ROUTER}"));
    shown.push(program_path(&exe));
    shown.extend(argv[1..].iter().cloned());
    println!(
        "Starting the router in {PREFIX}{ROUTER}, {} worker{} pinned to cores; as root:",
        a.threads,
        if a.threads == 1 { "" } else { "s" }
    );
    print!("{}", command_lines(&shown, 78));
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
                        "Traffic done; rates until {d} s after the router came up (Ctrl-C \
                         ends sooner)."
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
                    "Traffic done. The network stays up; try, in another terminal:\n    \
                     sudo ip netns exec {PREFIX}{} ping {}\n    \
                     sudo ip netns exec {PREFIX}{} ping -t 1 {}\n    \
                     sudo ip netns exec {PREFIX}{} ping -6 {}\n\
                     The rates keep showing each second. Ctrl-C ends the demo.",
                    h1.host, h2.host_ip, h2.host, h1.host_ip, h1.host, h2.host_ip6
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
    println!("{}", report.verdict());
    Ok(if report.router_error.is_none() && report.interrupted {
        // What ran is reported; what did not run is no failure.
        ExitCode::from(130)
    } else if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// How to name the running bricks binary in a command a user copies:
/// relative to the current directory when it is under it (as
/// `target/release/bricks` is after `cargo run`, where `bricks` is not on
/// the PATH), its absolute path otherwise.
fn program_path(exe: &Path) -> String {
    let rel = std::env::current_dir()
        .ok()
        .and_then(|cwd| exe.strip_prefix(cwd).ok().map(Path::to_path_buf));
    match rel {
        // A bare name would be looked up on the PATH.
        Some(r) if r.components().count() == 1 => format!("./{}", r.display()),
        Some(r) => r.display().to_string(),
        None => exe.display().to_string(),
    }
}

/// `word`, quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._+-:=,@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A shell command, two spaces in, broken into lines of at most `width`
/// columns (a longer word gets a line of its own) with ` \` at the end of
/// all but the last, so that it can be pasted as it is. An option and its
/// value stay on one line.
fn command_lines(words: &[String], width: usize) -> String {
    let mut units: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = shell_word(&words[i]);
        if w.starts_with('-') && i + 1 < words.len() && !words[i + 1].starts_with('-') {
            units.push(format!("{w} {}", shell_word(&words[i + 1])));
            i += 2;
        } else {
            units.push(w);
            i += 1;
        }
    }
    let mut lines: Vec<String> = vec!["  ".into()];
    for u in units {
        let last = lines.last_mut().expect("one line at least");
        if last.trim().is_empty() {
            last.push_str(&u);
        } else if last.len() + 1 + u.len() + 2 <= width {
            last.push(' ');
            last.push_str(&u);
        } else {
            lines.push(format!("    {u}"));
        }
    }
    let mut s = lines.join(" \\\n");
    s.push('\n');
    s
}

/// `text` broken at spaces into lines of at most `width` columns, the
/// first starting with `first`, the others indented as far.
fn wrap(first: &str, text: &str, width: usize) -> String {
    let indent = " ".repeat(first.len());
    let mut out = String::new();
    let mut line = first.to_string();
    for word in text.split(' ') {
        let empty = line.len() == first.len();
        if !empty && line.len() + 1 + word.len() > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = indent.clone();
        } else if !empty {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(line.trim_end());
    out
}

fn print_topology(topo: &Topology) {
    let (p0, p1) = (&PORTS[0], &PORTS[1]);
    let left = format!("{}/{}", p0.host_ip, p0.len);
    let middle = format!(
        "{} [ {}  bricks  {} ] {}",
        p0.dev, p0.router_ip, p1.router_ip, p1.dev
    );
    let right = format!("{}/{}", p1.host_ip, p1.len);
    println!(
        "  {:<w0$}    {:<w1$}    {PREFIX}{}",
        format!("{PREFIX}{}", p0.host),
        format!("{PREFIX}{ROUTER}"),
        p1.host,
        w0 = left.len(),
        w1 = middle.len(),
    );
    println!("  {left} -- {middle} -- {right}");
    println!(
        "  router MACs: {} {}, {} {}",
        p0.dev, topo.router_macs[0], p1.dev, topo.router_macs[1]
    );
    println!(
        "  {} queues per link; bricks routes, Linux in {PREFIX}{ROUTER} does not\n",
        topology::QUEUES
    );
}

/// What the reader of the router's counters prints, and when: nothing
/// until the router is up, then the rates of every sample, zero or not.
#[derive(Default)]
struct LiveView {
    /// Rows are printed as samples come (from the router being up until
    /// it is stopped).
    show: bool,
    /// The rows of the latest sample while they are not shown yet: the
    /// first sample comes before the demo knows the router is up.
    pending: Option<String>,
    /// Samples shown since the column headings were last printed.
    since_header: usize,
    /// The demo is stopping the router.
    stopping: bool,
}

/// The column headings come back after this many samples.
const HEADER_EVERY: usize = 10;

impl LiveView {
    fn sample(&mut self, rows: String) {
        if self.show {
            self.print(&rows);
        } else {
            self.pending = Some(rows);
        }
    }

    /// Starts showing: the legend, and the rows held back.
    fn start(&mut self) {
        print!("{}", Rates::legend());
        self.show = true;
        self.since_header = 0;
        if let Some(rows) = self.pending.take() {
            self.print(&rows);
        }
    }

    fn print(&mut self, rows: &str) {
        // One print, so that the rows stay together between the traffic
        // phases' lines.
        if self.since_header == 0 {
            print!("{}\n{rows}", Rates::header());
        } else {
            print!("{rows}");
        }
        self.since_header = (self.since_header + 1) % HEADER_EVERY;
    }
}

/// The running router: its process, its counters as they come, and what
/// it printed on stderr.
struct RouterProcess {
    child: ChildGuard,
    latest: Arc<Mutex<Option<Sample>>>,
    stderr: Arc<Mutex<Vec<String>>>,
    /// Echo stderr lines as they come (while starting).
    echo: Arc<AtomicBool>,
    /// Rate rows as samples come (while running).
    live: Arc<Mutex<LiveView>>,
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
        let live = Arc::new(Mutex::new(LiveView::default()));
        let mut readers = Vec::new();
        {
            let (latest, live) = (latest.clone(), live.clone());
            readers.push(std::thread::spawn(move || {
                // The counters start at zero with the router.
                let mut prev = Sample::default();
                for line in std::io::BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    let Some(sample) = Sample::parse(&line) else {
                        continue;
                    };
                    if let Some(r) = Rates::between(&prev, &sample, &PORTS) {
                        lock(&live).sample(r.render());
                    }
                    *lock(&latest) = Some(sample.clone());
                    prev = sample;
                }
                // The router closed its output: it has ended. Unless the
                // demo stopped it, that is news.
                let view = lock(&live);
                if !view.stopping {
                    if view.show {
                        println!("The router ended unexpectedly.");
                    }
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
                        println!("{}", wrap("  router: ", &line, 80));
                    }
                    let mut l = lock(&lines);
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
            live,
            readers,
        })
    }

    fn latest(&self) -> Option<Sample> {
        lock(&self.latest).clone()
    }

    fn exited(&mut self) -> bool {
        self.child.try_wait().is_some()
    }

    /// The last lines the router printed on stderr.
    fn stderr_tail(&self, n: usize) -> String {
        let l = lock(&self.stderr);
        l[l.len().saturating_sub(n)..].join("\n")
    }

    /// Waits for the first counters: then every device is open and every
    /// worker runs.
    fn wait_ready(&mut self, stop: &AtomicBool) -> anyhow::Result<()> {
        let start = Instant::now();
        loop {
            if self.latest().is_some() {
                self.echo.store(false, Ordering::Relaxed);
                let mut view = lock(&self.live);
                println!("Router up after {:.1} s.\n", start.elapsed().as_secs_f64());
                view.start();
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
        {
            let mut view = lock(&self.live);
            view.show = false;
            view.stopping = true;
        }
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

/// Locks `m`, also after a thread panicked holding it (what it guards
/// stays usable: counters and lines).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
        for v6 in [false, true] {
            for (from, to) in [(p0, p1), (p1, p0)] {
                if self.stopped() {
                    return;
                }
                let (cmd, dst) = if v6 {
                    ("ping6", to.host_ip6.to_string())
                } else {
                    ("ping", to.host_ip.to_string())
                };
                let label = format!("{cmd} {} -> {}", from.host, to.host);
                println!("{label}: 3 echo requests to {dst} ({cmd} -c 3)");
                let r = self.ping(from.host, &dst);
                match &r {
                    Ok(p) => println!("{label}: {}", ping_line(p)),
                    Err(e) => println!("{label}: FAILED: {e}"),
                }
                report.pings.push((label, r));
            }
        }
        if self.stopped() {
            return;
        }
        let bytes = a.tcp_mib << 20;
        println!(
            "tcp {} -> {}: sending {} MiB to {}:5001 over TCP",
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
        println!(
            "tcp6 {} -> {}: sending {} MiB to [{}]:5001 over TCP/IPv6",
            p0.host, p1.host, a.tcp_mib, p1.host_ip6
        );
        let r = self.tcp(p0.host, p1.host, &format!("[{}]:5001", p1.host_ip6), bytes);
        match &r {
            Ok(t) => println!("tcp6 {} -> {}: {}", p0.host, p1.host, tcp_line(t)),
            Err(e) => println!("tcp6 {} -> {}: FAILED: {e}", p0.host, p1.host),
        }
        report.tcp6 = Some(r);
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
            "udp {} -> {}: bricks gen sends {} packets/s of 64 bytes for {secs} s, 16 flows",
            p0.host, p1.host, a.udp_rate
        );
        let r = self.udp(a.udp_rate, secs).map_err(|e| format!("{e:#}"));
        match &r {
            Ok(u) => {
                println!("udp {} -> {}: {u}", p0.host, p1.host);
                if let Some(l) = u.latency() {
                    println!("    {l}");
                }
            }
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

/// `16 MiB in 0.21 s = 640 Mbit/s, checked byte for byte`: the rate over
/// the transfer's own duration (a second's sample of the router's rates
/// would average it with the idle rest of that second).
fn tcp_line(t: &TcpResult) -> String {
    let mib = t.received as f64 / (1 << 20) as f64;
    let mib = if t.received.is_multiple_of(1 << 20) {
        format!("{mib:.0}")
    } else {
        format!("{mib:.1}")
    };
    let check = if t.intact() {
        "checked byte for byte".to_string()
    } else if t.received != t.expected {
        format!("INCOMPLETE ({} of {} bytes)", t.received, t.expected)
    } else {
        format!("CORRUPTED from byte {}", t.first_bad.unwrap_or(0))
    };
    // Three digits of the duration: a fast transfer takes tens of ms.
    let secs = if t.seconds < 1.0 {
        format!("{:.3}", t.seconds)
    } else {
        format!("{:.2}", t.seconds)
    };
    format!(
        "{mib} MiB in {secs} s = {:.0} Mbit/s, {check}",
        t.mbits_per_s()
    )
}

fn print_summary(r: &Report) {
    println!("\nSummary");
    let result = |label: &str, ok: bool, text: &str| {
        let mark = if ok { "PASS" } else { "FAIL" };
        println!("{}", wrap(&format!("  {mark}  {label:<14} "), text, 80));
    };
    for (label, p) in &r.pings {
        match p {
            Ok(p) => result(label, p.received > 0, &ping_line(p)),
            Err(e) => result(label, false, e),
        }
    }
    let (p0, p1) = (&PORTS[0], &PORTS[1]);
    for (name, t) in [("tcp", &r.tcp), ("tcp6", &r.tcp6)] {
        let label = format!("{name} {} -> {}", p0.host, p1.host);
        match t {
            Some(Ok(t)) => result(&label, t.intact(), &tcp_line(t)),
            Some(Err(e)) => result(&label, false, e),
            None => {}
        }
    }
    let udp = format!("udp {} -> {}", p0.host, p1.host);
    match &r.udp {
        Some(Ok(l)) => {
            result(&udp, l.received > 0, &l.to_string());
            if let Some(lat) = l.latency() {
                println!("{:23}{lat}", "");
            }
        }
        Some(Err(e)) => result(&udp, false, e),
        None => {}
    }
    if let Some(s) = &r.router {
        println!(
            "  router: {} worker{}, {:.1} s; packets and bytes per port:",
            s.workers.len(),
            if s.workers.len() == 1 { "" } else { "s" },
            s.elapsed
        );
        print!("{}", rates::port_table(s, &PORTS));
        for (i, p) in PORTS.iter().enumerate() {
            println!(
                "    ARP on {}: answered {} who-has {}, sent {} queries, learnt {} replies",
                p.dev,
                s.total(&format!("ar{i}"), "replies"),
                p.router_ip,
                s.total(&format!("arpq{i}"), "queries"),
                s.total(&format!("arpq{i}"), "responses"),
            );
        }
        for (i, p) in PORTS.iter().enumerate() {
            println!(
                "    ND on {}: answered {} solicitations for {}, sent {}, learnt {} advertisements",
                p.dev,
                s.total(&format!("nda{i}"), "advertisements"),
                p.router_ip6,
                s.total(&format!("nds{i}"), "solicitations"),
                s.total(&format!("nds{i}"), "advertisements"),
            );
        }
        println!(
            "    dropped on no port: {} bad IP headers, {} without a route, {} to the router",
            s.class_total("CheckIPHeader", "drops"),
            s.total("rt", "no_route"),
            s.total("local", "count"),
        );
        println!(
            "    IPv6: {} bad headers, {} without a route, {} to the router (MLD, ...)",
            s.class_total("CheckIP6Header", "drops"),
            s.total("no_route6", "count"),
            s.total("local6", "count"),
        );
    }
    if let Some(e) = &r.router_error {
        println!("  FAIL  router: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_command_is_broken_into_lines_a_shell_joins_back() {
        let words: Vec<String> = "ip netns exec bdemo-r target/release/bricks run \
            conf/demo-router.click --threads 2 --stats-interval 1 --stats-json \
            -D BACKEND=auto -D DEV0=eth0 -D IP0=10.1.0.1 -D NET0=10.1.0.0 -D LEN0=24 \
            -D BCAST0=10.1.0.255 -D MAC0=02:00:00:00:01:01 -D DEV1=eth1"
            .split_whitespace()
            .map(String::from)
            .collect();
        let text = command_lines(&words, 78);
        assert!(text.lines().count() > 1, "{text}");
        for l in text.lines() {
            assert!(l.len() <= 78, "too long: {l}");
            // An option is never parted from its value.
            assert!(!l.trim_end_matches(" \\").ends_with("-D"), "{l}");
        }
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[..lines.len() - 1].iter().all(|l| l.ends_with(" \\")));
        assert!(!lines[lines.len() - 1].ends_with('\\'));
        let joined: Vec<String> = text
            .replace(" \\\n", " ")
            .split_whitespace()
            .map(String::from)
            .collect();
        assert_eq!(joined, words);
    }

    #[test]
    fn words_the_shell_would_split_are_quoted() {
        assert_eq!(shell_word("-D"), "-D");
        assert_eq!(
            shell_word("MAC0=02:00:00:00:01:01"),
            "MAC0=02:00:00:00:01:01"
        );
        assert_eq!(shell_word("/tmp/my dir/x"), "'/tmp/my dir/x'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn the_program_is_named_so_that_it_runs_from_here() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            program_path(&cwd.join("target/release/bricks")),
            "target/release/bricks"
        );
        assert_eq!(program_path(&cwd.join("bricks")), "./bricks");
        assert_eq!(
            program_path(Path::new("/nonexistent/bin/bricks")),
            "/nonexistent/bin/bricks"
        );
    }

    #[test]
    fn wrapped_text_keeps_its_words_and_indents_the_rest() {
        let text = "eth0: af_xdp native copy, rx q0->w0 q1->w1 (zero-copy refused: eth0: \
            the driver has no AF_XDP zero-copy (Operation not supported (os error 95)))";
        let w = wrap("  router: ", text, 80);
        let lines: Vec<&str> = w.lines().collect();
        assert!(lines.len() > 1, "{w}");
        assert!(lines[0].starts_with("  router: eth0:"));
        assert!(lines[1..]
            .iter()
            .all(|l| l.starts_with("          ") && !l.starts_with("           ")));
        assert!(lines.iter().all(|l| l.len() <= 80), "{w}");
        let words: Vec<&str> = w.split_whitespace().skip(1).collect();
        assert_eq!(words, text.split_whitespace().collect::<Vec<_>>());
    }

    #[test]
    fn the_tcp_line_gives_the_transfers_own_rate() {
        let t = TcpResult {
            expected: 16 << 20,
            received: 16 << 20,
            first_bad: None,
            seconds: 0.2,
        };
        // 16 MiB = 134.2 Mbit, in 0.2 s.
        assert_eq!(
            tcp_line(&t),
            "16 MiB in 0.200 s = 671 Mbit/s, checked byte for byte"
        );
        let short = TcpResult {
            received: 3 << 19,
            ..t.clone()
        };
        assert!(tcp_line(&short).starts_with("1.5 MiB in"));
        assert!(tcp_line(&short).contains("INCOMPLETE (1572864 of 16777216 bytes)"));
        let bad = TcpResult {
            first_bad: Some(1000),
            ..t
        };
        assert!(tcp_line(&bad).ends_with("CORRUPTED from byte 1000"));
    }

    #[test]
    fn the_verdict_says_pass_or_fail_and_what_failed() {
        let ping = PingResult {
            sent: 3,
            received: 3,
            rtt_ms: None,
            errors: Vec::new(),
        };
        let mut r = Report::default();
        r.pings.push(("ping h1 -> h2".into(), Ok(ping.clone())));
        r.pings.push((
            "ping h2 -> h1".into(),
            Ok(PingResult {
                received: 0,
                ..ping
            }),
        ));
        r.tcp = Some(Err("connection refused".into()));
        assert_eq!(
            r.verdict(),
            "FAIL: ping h2 -> h1, tcp h1 -> h2 (see the summary above)."
        );
        r.pings.pop();
        r.tcp = None;
        assert_eq!(r.verdict(), "PASS: the router forwarded all the traffic.");
        r.interrupted = true;
        assert!(r.verdict().starts_with("INTERRUPTED"));
        r.router_error = Some("the router ended by itself".into());
        assert_eq!(r.verdict(), "FAIL: the router (see the summary above).");
    }
}
