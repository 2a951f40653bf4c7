//! Runs a checked configuration on one or more workers and reports what
//! happened: live counters while it runs (a table, or JSON lines for
//! scripts and `bricks demo`), the summed counters at the end.

use crate::hotswap::Swapper;
use anyhow::Context as _;
use bricks_config::Source;
use bricks_io::live::{self, Spread};
use bricks_io::steer::Steering;
use bricks_runtime::{
    ElementStats, ExitRead, Plan, RunSummary, StopHandle, WorkerOptions, Workers,
};
use std::collections::HashMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How a configuration is run.
#[derive(Debug, Clone)]
pub(crate) struct RunSettings {
    /// Worker threads.
    pub threads: usize,
    /// Pin workers to cores.
    pub pin: bool,
    /// Stop after this long (sources still drain).
    pub duration: Option<Duration>,
    /// Print no counters.
    pub quiet: bool,
    /// Time follows capture timestamps.
    pub trace_clock: bool,
    /// Where that clock starts (`--simtime`).
    pub clock_start: bricks_packet::Timestamp,
    /// Print live counters this often.
    pub stats_interval: Option<Duration>,
    /// Live counters as JSON lines on stdout instead of a table on stderr.
    pub stats_json: bool,
    /// The longest an idle worker sleeps; zero spins.
    pub max_nap: Duration,
    /// How received packets reach the workers.
    pub spread: Spread,
    /// Answer control commands on this Unix socket.
    pub control: Option<std::path::PathBuf>,
    /// The group that may use the control sockets too (mode 0660).
    pub control_group: Option<String>,
    /// Answer one virtual router's commands on each (NAME, socket).
    pub router_control: Vec<(String, std::path::PathBuf)>,
    /// Serve Click's ControlSocket protocol on this TCP port of 127.0.0.1
    /// (`click -p PORT`; `PORT+`: the first free port from PORT).
    pub click_port: Option<String>,
    /// Serve Prometheus metrics on this address.
    pub metrics: Option<std::net::SocketAddr>,
    /// Print the memory-reference table at exit (`--memrefs`; the plan
    /// must have been built with counting on).
    pub memrefs: bool,
    /// Read handlers (`ELEMENT.HANDLER`) printed at exit (`-h`).
    pub handlers: Vec<String>,
    /// Stop right after start-up (`-q`).
    pub quit: bool,
    /// The read handler whose value is the exit status (`-x`).
    pub exit_handler: Option<String>,
    /// How the running configuration is hot-swapped (`bricks ctl SOCK
    /// hotswap FILE`, Click's `hotswap` handler, SIGHUP); `None`: it is
    /// not.
    pub reconfigure: Option<crate::hotswap::Reconfigure>,
    /// The process ends when the run does (`bricks run`): the plan is left
    /// for the operating system to reclaim, not freed piece by piece (a
    /// million inline routes take longer to free than to load).
    pub exits_after: bool,
}

impl Default for RunSettings {
    fn default() -> RunSettings {
        RunSettings {
            threads: 1,
            pin: true,
            duration: None,
            quiet: false,
            trace_clock: false,
            clock_start: bricks_packet::Timestamp(0),
            stats_interval: None,
            stats_json: false,
            max_nap: Duration::from_micros(50),
            spread: Spread::PerCore,
            control: None,
            control_group: None,
            router_control: Vec::new(),
            click_port: None,
            metrics: None,
            memrefs: false,
            handlers: Vec::new(),
            quit: false,
            exit_handler: None,
            reconfigure: None,
            exits_after: false,
        }
    }
}

/// What `-h ELEMENT.HANDLER ...` prints, as Click's driver does: each
/// value ends with a newline; with more than one handler, or one that
/// matched a pattern or a class, each is preceded by `ELEMENT.HANDLER:` and
/// followed by a blank line. The second part is the errors, one per handler
/// that is not there.
pub(crate) fn read_handlers(reads: &[ExitRead], asked: usize) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut errors = Vec::new();
    for r in reads {
        let mut v = match &r.value {
            Ok(v) => v.clone().into_text(),
            Err(e) => {
                errors.push(e.clone());
                continue;
            }
        };
        if !v.is_empty() && !v.ends_with('\n') {
            v.push('\n');
        }
        if asked > 1 || r.named {
            out.push_str(&format!("{}:\n{v}\n", r.name));
        } else {
            out.push_str(&v);
        }
    }
    (out, errors)
}

/// Starts the Prometheus endpoint of `bricks run --metrics`.
fn serve_metrics(
    addr: std::net::SocketAddr,
    plan: &Plan,
    control: bricks_runtime::Control,
    start: Instant,
) -> anyhow::Result<bricks_metrics::Server> {
    let mut info = bricks_metrics::RouterInfo::default();
    for e in &plan.elements {
        if matches!(e.class.name, "FromDevice" | "PollDevice" | "ToDevice") {
            let dev = e.args.iter().find_map(|a| {
                let (k, v) = bricks_config::split_keyword(&a.text);
                match k {
                    None | Some("DEVNAME") => Some(v.to_string()),
                    _ => None,
                }
            });
            if let Some(d) = dev {
                info.interfaces.insert(e.name.clone(), d);
            }
        }
    }
    let source = Arc::new(move || bricks_metrics::encode(&control.live(), &info, start.elapsed()));
    let server = bricks_metrics::serve(addr, bricks_metrics::Limits::default(), source)
        .with_context(|| format!("serving metrics on {addr}"))?;
    eprintln!("metrics: http://{}/metrics", server.local_addr());
    Ok(server)
}

/// Prints the errors elements reported while running; the exit status
/// says whether there were any.
/// An error whose messages were printed already: the command ends with
/// status 1 and says nothing more (as Click's driver after a handler
/// error).
#[derive(Debug)]
pub(crate) struct Reported;

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("errors reported above")
    }
}

impl std::error::Error for Reported {}

pub(crate) fn exit_status(summary: &RunSummary) -> std::process::ExitCode {
    for e in &summary.errors {
        eprintln!("error: {e}");
    }
    if summary.errors.is_empty() {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::from(1)
    }
}

/// The exit status `-x ELEMENT.HANDLER` asks for, as Click's driver
/// reads it: an integer is the status, a boolean is 0 for true and 1 for
/// false; anything else, or a handler that cannot be read, is an error
/// (status 255, Click's -1).
pub(crate) fn exit_handler_status(summary: &RunSummary, handler: &str) -> std::process::ExitCode {
    let value = summary.reads.iter().rev().find(|r| r.name == handler);
    let code: i64 = match value.map(|r| &r.value) {
        Some(Ok(v)) => {
            let text = v.clone().into_text();
            let t = text.trim();
            if let Ok(n) = t.parse::<i64>() {
                n
            } else if let Ok(b) = <bool as bricks_element::FromArg>::from_arg(t) {
                i64::from(!b)
            } else {
                eprintln!("error: exit handler value should be integer");
                -1
            }
        }
        Some(Err(e)) => {
            eprintln!("error: {e}");
            -1
        }
        None => {
            eprintln!("error: no '{handler}' handler");
            -1
        }
    };
    std::process::ExitCode::from(code as u8)
}

/// Loads the fast path every live `FromDevice(..., FASTPATH true)` asks
/// for, saying what it forwards in the kernel and what it leaves to the
/// configuration; a FASTPATH the configuration does not allow is an error
/// that says why.
fn start_fast_paths(
    plan: &Plan,
    quiet: bool,
) -> anyhow::Result<Vec<bricks_elements::fastpath::Running>> {
    use bricks_elements::fastpath::{self, Node};
    let nodes: Vec<Node> = plan
        .elements
        .iter()
        .map(|e| Node {
            name: &e.name,
            class: e.class.name,
            args: &e.args,
            ports: &e.ports,
            outputs: &e.outputs,
            shared: &e.shared,
        })
        .collect();
    let mut running = Vec::new();
    for found in fastpath::find(&nodes) {
        let ifname = match &found {
            Ok(c) => &c.input,
            Err((ifname, _)) => ifname,
        };
        // Offline (a capture binding) there is no kernel to forward in.
        if bricks_io::binding::lookup(ifname).is_some() {
            continue;
        }
        let c = found.map_err(|(ifname, why)| {
            anyhow::anyhow!("FASTPATH on {ifname}: the configuration does not allow it: {why}")
        })?;
        let (input, lookup, notes) = (c.input.clone(), c.lookup.clone(), c.notes.clone());
        let r = c
            .start()
            .map_err(|e| anyhow::anyhow!("FASTPATH on {input}: {e}"))?;
        live::set_fast_path(&input, r.fast_path.clone()).map_err(anyhow::Error::msg)?;
        if !quiet {
            eprintln!(
                "{input}: XDP fast path forwards {lookup}'s ordinary IPv4 packets in the kernel"
            );
            for n in notes {
                eprintln!("{input}: fast path: {n}");
            }
        }
        running.push(r);
    }
    Ok(running)
}

/// Checks `text` and runs it.
pub(crate) fn run_text(
    name: &str,
    text: &str,
    settings: &RunSettings,
) -> anyhow::Result<RunSummary> {
    let plan = crate::plan(
        Source {
            name: name.to_string(),
            text: text.to_string(),
        },
        &Default::default(),
    )
    .map_err(anyhow::Error::msg)?;
    run_plan(plan, settings)
}

/// Runs a checked plan until its sources finish, the duration passes, or
/// SIGINT/SIGTERM; returns the counters summed over the workers.
pub(crate) fn run_plan(plan: Plan, settings: &RunSettings) -> anyhow::Result<RunSummary> {
    // Whatever happens, the next configuration run by this process starts
    // with no interface open or declared.
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            live::reset();
            bricks_io::tun::reset();
        }
    }
    let _reset = Reset;
    for w in host_warnings(&plan) {
        eprintln!("warning: {w}");
    }
    let threads = settings.threads.max(1);
    let steering = Arc::new(Steering::new(threads));
    let mut dispatcher = None;
    live::started(threads, settings.spread);
    // XDP fast paths are loaded before the interfaces open, so that the
    // receiving interface gets the fast path's program from the start;
    // they live until the run ends.
    let _fast_paths = start_fast_paths(&plan, settings.quiet)?;
    if !live::declared().is_empty() {
        let (reports, d) = live::open_declared(threads, settings.spread, steering.clone())
            .map_err(anyhow::Error::msg)?;
        if !settings.quiet {
            for r in &reports {
                eprintln!("{r}");
            }
        }
        dispatcher = d;
    } else if settings.spread != Spread::PerCore {
        anyhow::bail!("--mode pipeline and serial need live interfaces (FromDevice)");
    }
    // Host devices (KernelTun, KernelTap, FromHost): made and addressed
    // now, one queue per worker, before any worker looks for its queue.
    if !bricks_io::tun::declared().is_empty() {
        let lines = bricks_io::tun::open_declared(threads).map_err(anyhow::Error::msg)?;
        if !settings.quiet {
            for l in &lines {
                eprintln!("{l}");
            }
        }
    }
    let dispatch_stop = Arc::new(AtomicBool::new(false));
    let dispatch_thread = dispatcher.map(|mut d| {
        let stop = dispatch_stop.clone();
        // The dispatcher gets the core after the workers'.
        let core = core_affinity::get_core_ids()
            .filter(|ids| settings.pin && !ids.is_empty())
            .map(|ids| ids[threads % ids.len()]);
        std::thread::Builder::new()
            .name("bricks-dispatch".into())
            .spawn(move || {
                if let Some(c) = core {
                    core_affinity::set_for_current(c);
                }
                d.run(&stop);
                d
            })
            .expect("spawning the dispatcher thread")
    });
    // Control sockets are bound before any worker runs: a `PORT+`
    // socket's `port` handler then reads the port it got from the start.
    let mut plan = plan;
    let sockets = crate::controlsocket::bind_all(&mut plan, settings.click_port.as_deref())?;
    let plan = Arc::new(plan);
    let opts = WorkerOptions {
        threads,
        pin: settings.pin,
        trace_clock: settings.trace_clock,
        clock_start: settings.clock_start,
        // `bricks ctl SOCK stats` reads what the workers last published:
        // with a control socket they publish at least 10 times a second.
        publish_every: settings.stats_interval.or_else(|| {
            (settings.control.is_some()
                || !settings.router_control.is_empty()
                || settings.metrics.is_some())
            .then_some(Duration::from_millis(100))
        }),
        max_nap: settings.max_nap,
        exit_reads: settings
            .handlers
            .iter()
            .chain(&settings.exit_handler)
            .cloned()
            .collect(),
        // A Script's `hotconfig` is swapped in by this thread.
        hotswap_requests: settings.reconfigure.is_some(),
    };
    // Signals are caught before any worker runs, so a SIGTERM that arrives
    // as soon as the first packet moves still ends the run cleanly.
    let signalled = StopHandle::default();
    signalled
        .install_signal_handlers()
        .context("installing signal handlers")?;
    // SIGHUP re-reads the configuration and hot-swaps it in; caught before
    // any worker runs, so that it never ends the router.
    let hup = Arc::new(AtomicBool::new(false));
    if settings.reconfigure.is_some() {
        signal_hook::flag::register(signal_hook::consts::SIGHUP, hup.clone())
            .context("installing signal handlers")?;
    }
    let workers = Workers::start_with(plan.clone(), &opts, settings.quit)
        .map_err(|d| anyhow::anyhow!("{}", d.message))?;
    let stop = workers.stop_handle();
    let swapper = settings
        .reconfigure
        .clone()
        .map(|how| Arc::new(Swapper::new(plan.clone(), workers.control(), how)));
    let _control = crate::control::serve(
        settings.control.as_deref(),
        &settings.router_control,
        settings.control_group.as_deref(),
        &plan,
        workers.control(),
        steering,
        swapper.as_ref(),
    )?;
    crate::controlsocket::serve(sockets, &plan, &workers.control(), swapper.as_ref());
    let start = Instant::now();
    let _metrics = match settings.metrics {
        Some(addr) => Some(serve_metrics(addr, &plan, workers.control(), start)?),
        None => None,
    };
    let control = workers.control();
    let mut last: Option<(Instant, Vec<Vec<ElementStats>>)> = None;
    let tick = settings
        .stats_interval
        .unwrap_or(Duration::from_millis(50))
        .min(Duration::from_millis(50));
    let mut next_report = settings.stats_interval.map(|i| start + i);
    // Which outside stop came first, to say so at the end.
    let mut stopped_by: Option<&str> = None;
    while !workers.finished() {
        if stopped_by.is_none() {
            if signalled.is_stopped() {
                stopped_by = Some("interrupted by a signal (Ctrl-C or SIGTERM)");
            } else if settings.duration.is_some_and(|d| start.elapsed() >= d) {
                stopped_by = Some("the --duration is over");
            }
            if stopped_by.is_some() {
                stop.stop();
            }
        }
        if workers.wait_finished(tick) {
            break;
        }
        if let Some(text) = control.take_hotswap_request() {
            if let Some(s) = &swapper {
                let source = bricks_config::Source {
                    name: "hotconfig".into(),
                    text,
                };
                if let Err(why) = s.swap(source) {
                    eprintln!("While calling `hotconfig':");
                    for line in why.lines() {
                        eprintln!("  {line}");
                    }
                }
            }
            control.hotswap_request_done();
        }
        if hup.swap(false, Ordering::Relaxed) && stopped_by.is_none() {
            if let Some(s) = &swapper {
                reread(s);
            }
        }
        if let (Some(at), Some(every)) = (next_report, settings.stats_interval) {
            if Instant::now() >= at {
                next_report = Some(at + every);
                let now = workers.live();
                report_live(start, &now, last.as_ref(), settings.stats_json);
                last = Some((Instant::now(), now));
            }
        }
    }
    let summary = workers.join();
    dispatch_stop.store(true, Ordering::Relaxed);
    if let Some(h) = dispatch_thread {
        if let (Ok(d), false) = (h.join(), settings.quiet) {
            let st = d.stats();
            eprintln!(
                "dispatcher: received={} handed={} dropped={}",
                st.received(),
                st.handed(),
                st.dropped()
            );
        }
    }
    if !settings.quiet {
        eprint!("{}", summary.total.render());
        let reason = match (summary.total.reason, stopped_by) {
            (bricks_runtime::StopReason::External, Some(why)) => why.to_string(),
            (reason, _) => reason.to_string(),
        };
        eprintln!(
            "stopped: {reason}, after {:.3} s",
            summary.total.elapsed.as_secs_f64()
        );
    }
    if !settings.handlers.is_empty() {
        let asked = &summary.total.reads;
        let asked = match &settings.exit_handler {
            // The exit handler's value is read last and not printed.
            Some(_) => &asked[..asked.len().saturating_sub(1)],
            None => asked,
        };
        let (out, errors) = read_handlers(asked, settings.handlers.len());
        print!("{out}");
        for e in &errors {
            eprintln!("{e}");
        }
        if !errors.is_empty() {
            return Err(Reported.into());
        }
    }
    if settings.memrefs {
        let m = MemrefsReport::of(&summary.total.elements);
        eprint!("{}", m.render());
        if settings.stats_json {
            println!("{}", m.json());
        }
    }
    if settings.stats_json && settings.stats_interval.is_some() {
        let per: Vec<Vec<ElementStats>> = summary
            .per_worker
            .iter()
            .map(|s| s.elements.clone())
            .collect();
        report_live(start, &per, None, true);
    }
    if settings.exits_after {
        std::mem::forget(plan);
    }
    Ok(summary.total)
}

/// SIGHUP: re-reads the configuration file and hot-swaps it in; says on
/// stderr what happened (a configuration that fails leaves the running
/// one, and says why).
fn reread(s: &Swapper) {
    let Some(file) = s.file() else {
        eprintln!(
            "SIGHUP: the configuration was not read from a file; nothing to re-read (use \
             `bricks ctl SOCK hotswap FILE`)"
        );
        return;
    };
    match s.swap_file(file) {
        Ok(msg) => eprint!("SIGHUP: {}: {msg}", file.display()),
        Err(e) => eprintln!(
            "SIGHUP: {}: not swapped, the running configuration stays:\n{}",
            file.display(),
            e.trim_end()
        ),
    }
}

/// One counting element's line of the `--memrefs` table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemrefsLine {
    pub name: String,
    pub class: &'static str,
    pub packets: u64,
    pub refs: u64,
    pub words: u64,
}

/// What `--memrefs` reports: every element that counted memory references
/// (those with a `mem_packets` counter), in declaration order, and the
/// router's sums per packet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemrefsReport {
    pub lines: Vec<MemrefsLine>,
}

impl MemrefsReport {
    /// The report of a run's summed counters.
    pub fn of(elements: &[ElementStats]) -> MemrefsReport {
        let lines = elements
            .iter()
            .filter_map(|e| {
                Some(MemrefsLine {
                    name: e.name.clone(),
                    class: e.class,
                    packets: e.stats.get("mem_packets")?,
                    refs: e.stats.get("mem_refs").unwrap_or(0),
                    words: e.stats.get("mem_words").unwrap_or(0),
                })
            })
            .collect();
        MemrefsReport { lines }
    }

    /// The packets that entered the router, for the per-packet sums: those
    /// of the counting element that counted the most (the first counting
    /// block on the path, which every packet passes; later ones see only
    /// what it let through). The first such element in declaration order.
    pub fn entered(&self) -> Option<&MemrefsLine> {
        self.lines
            .iter()
            .rev()
            .max_by_key(|l| l.packets)
            .filter(|l| l.packets > 0)
    }

    /// References and words summed over the counting elements.
    pub fn totals(&self) -> (u64, u64) {
        self.lines
            .iter()
            .fold((0, 0), |(r, w), l| (r + l.refs, w + l.words))
    }

    /// The table, for stderr.
    pub fn render(&self) -> String {
        let per = |x: u64, n: u64| {
            if n == 0 {
                "-".to_string()
            } else {
                format!("{:.2}", x as f64 / n as f64)
            }
        };
        let mut out =
            String::from("memory references (Hardekopf et al.'s units: a word is 32 bits)\n");
        if self.lines.is_empty() {
            out.push_str("no element counted memory references\n");
            return out;
        }
        let w = self
            .lines
            .iter()
            .map(|l| l.name.len())
            .max()
            .unwrap_or(0)
            .max("element".len());
        let c = self
            .lines
            .iter()
            .map(|l| l.class.len())
            .max()
            .unwrap_or(0)
            .max("class".len());
        out.push_str(&format!(
            "{:<w$}  {:<c$}  {:>12}  {:>14}  {:>14}  {:>9}  {:>9}\n",
            "element", "class", "packets", "references", "words", "refs/pkt", "words/pkt"
        ));
        for l in &self.lines {
            out.push_str(&format!(
                "{:<w$}  {:<c$}  {:>12}  {:>14}  {:>14}  {:>9}  {:>9}\n",
                l.name,
                l.class,
                l.packets,
                l.refs,
                l.words,
                per(l.refs, l.packets),
                per(l.words, l.packets)
            ));
        }
        let (refs, words) = self.totals();
        match self.entered() {
            Some(e) => out.push_str(&format!(
                "router: {} references, {} words per packet ({refs} and {words} over {} \
                 packets, those {} counted)\n",
                per(refs, e.packets),
                per(words, e.packets),
                e.packets,
                e.name
            )),
            None => out.push_str("router: no packet counted\n"),
        }
        out
    }

    /// The same as one JSON object.
    pub fn json(&self) -> String {
        let per = |x: u64, n: u64| (n > 0).then(|| x as f64 / n as f64);
        let elements: Vec<serde_json::Value> = self
            .lines
            .iter()
            .map(|l| {
                serde_json::json!({
                    "name": l.name,
                    "class": l.class,
                    "packets": l.packets,
                    "refs": l.refs,
                    "words": l.words,
                    "refs_per_packet": per(l.refs, l.packets),
                    "words_per_packet": per(l.words, l.packets),
                })
            })
            .collect();
        let (refs, words) = self.totals();
        let entered = self.entered();
        let n = entered.map_or(0, |e| e.packets);
        serde_json::json!({"memrefs": {
            "elements": elements,
            "refs": refs,
            "words": words,
            "packets": n,
            "packets_of": entered.map(|e| e.name.clone()),
            "refs_per_packet": per(refs, n),
            "words_per_packet": per(words, n),
        }})
        .to_string()
    }
}

/// A warning for each `ToHost` whose packets go nowhere: unless the
/// configuration makes a host device of its name (FromHost, KernelTap,
/// KernelTun) or its name is bound to a capture (`--device
/// host=pcap:,FILE`), it counts and drops what it is given.
pub(crate) fn host_warnings(plan: &Plan) -> Vec<String> {
    plan.elements
        .iter()
        .filter(|e| e.class.name == "ToHost")
        // ToHost(..., SNIFFERS true) is a ToHostSniffers: no host device.
        .filter(|e| {
            !bricks_element::Args::from_strs(&e.args)
                .read::<bool>("SNIFFERS")
                .ok()
                .flatten()
                .unwrap_or(false)
        })
        .filter_map(|e| {
            let name: String = bricks_element::Args::from_strs(&e.args)
                .read_p("DEVNAME")
                .ok()
                .flatten()
                .unwrap_or_else(|| "host".into());
            let device = bricks_io::tun::declared_kind(&name).is_some();
            let recorded = device
                || matches!(
                    bricks_io::binding::lookup(&name),
                    Some(bricks_io::binding::Binding::Pcap {
                        output: Some(_),
                        ..
                    })
                );
            let element = if e.name.starts_with("ToHost@") {
                format!("ToHost({name})")
            } else {
                format!("{} :: ToHost({name})", e.name)
            };
            (!recorded).then(|| {
                format!(
                    "{element}: packets to the host's stack are counted and dropped: no \
                     FromHost({name}, ...), KernelTap or KernelTun with DEVNAME {name} makes \
                     a device for them (`--device {name}=pcap:,FILE` records them instead)"
                )
            })
        })
        .collect()
}

/// One report of live counters.
fn report_live(
    start: Instant,
    per_worker: &[Vec<ElementStats>],
    last: Option<&(Instant, Vec<Vec<ElementStats>>)>,
    json: bool,
) {
    if json {
        println!("{}", stats_json(start.elapsed(), per_worker));
        let _ = std::io::stdout().flush();
        return;
    }
    // A table of the packet counters that moved, per element and worker.
    let Some((then, prev)) = last else {
        return;
    };
    let secs = then.elapsed().as_secs_f64().max(1e-9);
    let mut lines = Vec::new();
    let total = bricks_runtime::sum_stats(per_worker.iter().map(Vec::as_slice));
    let total_prev = bricks_runtime::sum_stats(prev.iter().map(Vec::as_slice));
    // Every `count` by element name, looked up once per element and
    // worker: a configuration may have a hundred thousand elements.
    let total_prev = counts(&total_prev);
    let now_per_worker: Vec<HashMap<&str, u64>> = per_worker.iter().map(|s| counts(s)).collect();
    let prev_per_worker: Vec<HashMap<&str, u64>> = prev.iter().map(|s| counts(s)).collect();
    for e in &total {
        let Some(count) = e.stats.get("count") else {
            continue;
        };
        let name = e.name.as_str();
        let before = total_prev.get(name).copied().unwrap_or(0);
        let rate = count.saturating_sub(before) as f64 / secs;
        if rate > 0.0 {
            let cores: Vec<String> = now_per_worker
                .iter()
                .enumerate()
                .map(|(w, s)| {
                    let now = s.get(name).copied().unwrap_or(0);
                    let was = prev_per_worker
                        .get(w)
                        .and_then(|p| p.get(name).copied())
                        .unwrap_or(0);
                    format!("w{w} {}", si(now.saturating_sub(was) as f64 / secs))
                })
                .collect();
            lines.push(format!(
                "  {:<16} {:>10} pkt/s   [{}]",
                e.name,
                si(rate),
                cores.join(", ")
            ));
        }
    }
    eprintln!("{:7.1} s", start.elapsed().as_secs_f64());
    for l in lines {
        eprintln!("{l}");
    }
}

/// Each element's `count` counter, by element name.
fn counts(stats: &[ElementStats]) -> HashMap<&str, u64> {
    stats
        .iter()
        .filter_map(|e| Some((e.name.as_str(), e.stats.get("count")?)))
        .collect()
}

/// `1.23M`, `456k`, `789`.
pub(crate) fn si(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// `{"elapsed":1.0,"workers":[{"worker":0,"elements":{"NAME":{"class":"C","count":1}}}]}`
pub(crate) fn stats_json(elapsed: Duration, per_worker: &[Vec<ElementStats>]) -> String {
    let workers: Vec<serde_json::Value> = per_worker
        .iter()
        .enumerate()
        .map(|(w, elements)| {
            let mut map = serde_json::Map::new();
            for e in elements {
                let mut counters = serde_json::Map::new();
                counters.insert("class".into(), e.class.into());
                for (k, v) in e.stats.entries() {
                    counters.insert(k.to_string(), (*v).into());
                }
                map.insert(e.name.clone(), counters.into());
            }
            serde_json::json!({"worker": w, "elements": map})
        })
        .collect();
    serde_json::json!({"elapsed": elapsed.as_secs_f64(), "workers": workers}).to_string()
}

/// A flag that SIGINT, SIGTERM and SIGHUP set: what long-running commands
/// (demo, cluster up, the benches) poll to stop and clean up, a closed
/// terminal included.
pub(crate) fn stop_on_signals() -> std::io::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, stop.clone()).map_err(|e| {
            std::io::Error::new(e.kind(), format!("installing signal handlers: {e}"))
        })?;
    }
    Ok(stop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{HandlerValue, Stats};

    fn el(name: &str, class: &'static str, counters: &[(&'static str, u64)]) -> ElementStats {
        let mut stats = Stats::default();
        for &(k, v) in counters {
            stats.counter(k, v);
        }
        ElementStats {
            name: name.into(),
            class,
            stats,
        }
    }

    #[test]
    fn read_handlers_print_as_click_does() {
        let r = |n: &str, named: bool, value: Result<HandlerValue, String>| ExitRead {
            name: n.to_string(),
            named,
            value,
        };
        let (out, err) =
            read_handlers(&[r("c.byte_count", false, Ok(HandlerValue::Count(420)))], 1);
        assert_eq!((out.as_str(), err.len()), ("420\n", 0));
        let (out, err) = read_handlers(
            &[
                r("c.count", false, Ok(HandlerValue::Count(7))),
                r("c.class", false, Ok(HandlerValue::Text("Counter".into()))),
                r("c.config", false, Ok(HandlerValue::Text(String::new()))),
            ],
            3,
        );
        assert!(err.is_empty(), "{err:?}");
        assert_eq!(out, "c.count:\n7\n\nc.class:\nCounter\n\nc.config:\n\n");
        let (out, err) = read_handlers(
            &[
                r("d.count", false, Err("no element 'd'".into())),
                r("c.q", false, Ok(HandlerValue::Text("a\nb\n".into()))),
            ],
            2,
        );
        assert_eq!(out, "c.q:\na\nb\n\n");
        assert_eq!(err, ["no element 'd'"]);
        // One request that matched a pattern prints names.
        let (out, _) = read_handlers(&[r("c1.count", true, Ok(HandlerValue::Count(1)))], 1);
        assert_eq!(out, "c1.count:\n1\n\n");
    }

    #[test]
    fn memrefs_report_divides_by_the_most_packets_counted() {
        let r = MemrefsReport::of(&[
            el("src", "InfiniteSource", &[("count", 10)]),
            el(
                "c",
                "TagClassifier",
                &[("mem_packets", 10), ("mem_refs", 10), ("mem_words", 80)],
            ),
            el(
                "q",
                "FIFOQueue",
                &[("mem_packets", 4), ("mem_refs", 24), ("mem_words", 48)],
            ),
        ]);
        assert_eq!(r.lines.len(), 2);
        assert_eq!(r.entered().map(|l| l.name.as_str()), Some("c"));
        assert_eq!(r.totals(), (34, 128));
        let t = r.render();
        assert!(
            t.contains("router: 3.40 references, 12.80 words per packet"),
            "{t}"
        );
        // Equal counts: the first declared.
        let r = MemrefsReport::of(&[
            el("a", "X", &[("mem_packets", 5)]),
            el("b", "Y", &[("mem_packets", 5)]),
        ]);
        assert_eq!(r.entered().map(|l| l.name.as_str()), Some("a"));
        // Nothing counted.
        let r = MemrefsReport::of(&[el("a", "X", &[("mem_packets", 0)])]);
        assert!(r.render().contains("router: no packet counted"));
        assert!(r.json().contains("\"refs_per_packet\":null"));
        assert!(MemrefsReport::of(&[])
            .render()
            .contains("no element counted memory references"));
    }
}
