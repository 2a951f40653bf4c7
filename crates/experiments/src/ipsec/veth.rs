//! conf/ipsec-gw.click between veths in network namespaces against
//! Linux's XFRM and Linux forwarding without ESP, rate by rate.

use super::*;

/// Queues of every veth (RX and TX).
pub(super) const QUEUES: u32 = 2;
/// How long frames get to arrive after the generator stops.
pub(super) const DRAIN: Duration = Duration::from_millis(300);
/// Niceness of generator and gateway (see `bricks bench io`).
pub(super) const NICE: &str = "-20";
/// Flows the generator sends.
pub(super) const FLOWS: &str = "256";
/// The loss below which a rate counts as forwarded.
pub(super) const MAX_LOSS_PCT: f64 = 1.0;

/// What runs in the gateway namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gateway {
    /// conf/ipsec-gw.click.
    Bricks,
    /// The kernel's XFRM with the same SA.
    LinuxXfrm,
    /// The kernel forwarding without ESP: what Linux does at least for
    /// every packet it would also encrypt, so an upper bound of XFRM.
    LinuxForward,
}

impl Gateway {
    pub(super) fn label(self) -> &'static str {
        match self {
            Gateway::Bricks => "bricks ipsec-gw.click",
            Gateway::LinuxXfrm => "Linux XFRM",
            Gateway::LinuxForward => "Linux forwarding, no ESP",
        }
    }
}

/// One offered rate.
#[derive(Debug, Clone, Copy)]
pub(super) struct Step {
    /// Packets per second asked of the generator (`None`: flat out).
    pub(super) asked: Option<u64>,
    /// What it sent, in Mpps.
    pub(super) offered: f64,
    /// What reached the sink, in Mpps.
    pub(super) delivered: f64,
    pub(super) loss_pct: f64,
}

/// Every step of one gateway with one size, or why it did not run.
pub(super) struct Ladder {
    pub(super) gateway: Gateway,
    pub(super) size: u16,
    pub(super) steps: Vec<Step>,
    pub(super) error: Option<String>,
    /// bricks' own counters, in words.
    pub(super) notes: Vec<String>,
}

impl Ladder {
    pub(super) fn best(&self) -> Option<f64> {
        self.steps
            .iter()
            .map(|s| s.delivered)
            .max_by(|a, b| a.total_cmp(b))
    }

    /// The highest rate sent with at most MAX_LOSS_PCT lost.
    pub(super) fn loss_free(&self) -> Option<f64> {
        self.steps
            .iter()
            .filter(|s| s.loss_pct <= MAX_LOSS_PCT)
            .map(|s| s.offered)
            .max_by(|a, b| a.total_cmp(b))
    }
}

/// Why the kernel may refuse an ESP state, from its configuration when it
/// shows one: "; this kernel is built without ..." or nothing.
pub(super) fn kernel_lacks_esp() -> String {
    let Ok(out) = Command::new("sh")
        .args(["-c", "zcat /proc/config.gz 2>/dev/null"])
        .stdin(Stdio::null())
        .output()
    else {
        return String::new();
    };
    let config = String::from_utf8_lossy(&out.stdout);
    let missing: Vec<&str> = ["CONFIG_INET_ESP", "CONFIG_CRYPTO_GCM"]
        .into_iter()
        .filter(|k| config.lines().any(|l| l == format!("# {k} is not set")))
        .collect();
    if missing.is_empty() {
        String::new()
    } else {
        format!("; this kernel is built without {}", missing.join(" and "))
    }
}

/// The last few lines of a process's stderr, for an error message.
pub(super) fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

/// The test network.
pub(super) struct Testbed {
    pub(super) net: Network,
    pub(super) exe: String,
    pub(super) dir: PathBuf,
    pub(super) tester_cpu: usize,
    pub(super) router_cpu: usize,
    pub(super) r0_mac: String,
    pub(super) r1_mac: String,
    pub(super) s0_mac: String,
    pub(super) cancel: Arc<AtomicBool>,
}

impl Testbed {
    pub(super) fn build(dir: &Path, cancel: Arc<AtomicBool>) -> Result<Testbed, Error> {
        let cpus: Vec<usize> = core_affinity::get_core_ids()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.id)
            .collect();
        let tester_cpu = cpus.first().copied().unwrap_or(0);
        let router_cpu = cpus.last().copied().unwrap_or(0);
        let Line { net, mut ports } = Line::build("ipsec", "gw", QUEUES)?;
        let Port {
            in_mac: r0_mac,
            out_mac: r1_mac,
            sink_mac: s0_mac,
            in_napi: r0_napi,
            sink_napi: s0_napi,
            ..
        } = ports.remove(0);
        // The sink is the peer's address, so that it answers the gateway's
        // ARP; it drops the ESP it cannot decrypt, counted by the veth.
        net.add_addr("sink", "s0", "10.0.0.2/24")?;
        for (k, v) in [
            ("net.ipv4.icmp_msgs_per_sec", "0"),
            ("net.ipv4.icmp_msgs_burst", "0"),
        ] {
            // Fewer "protocol unreachable" answers to the gateway; the
            // kernel limits them anyway, so a refusal is harmless.
            let _ = net.sysctl("sink", k, v);
        }
        pin(&r0_napi, &[router_cpu])?;
        pin(&s0_napi, &[tester_cpu])?;
        let exe = std::env::current_exe()
            .context("finding the bricks executable")?
            .display()
            .to_string();
        Ok(Testbed {
            net,
            exe,
            dir: dir.to_path_buf(),
            tester_cpu,
            router_cpu,
            r0_mac,
            r1_mac,
            s0_mac,
            cancel,
        })
    }

    pub(super) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// `nice -n -20 taskset -c CPU bricks ARGS...` in namespace `ns`.
    pub(super) fn bricks(&self, ns: &str, cpu: usize, args: &[&str]) -> Command {
        let cpu = cpu.to_string();
        let mut argv = vec!["nice", "-n", NICE, "taskset", "-c", &cpu, &self.exe];
        argv.extend_from_slice(args);
        self.net.exec(ns, &argv)
    }

    /// `ip -n GW ARGS...`.
    pub(super) fn ip_gw(&self, args: &[&str]) -> Result<(), Error> {
        let ns = self.net.ns_name("gw");
        let mut v = vec!["-n", ns.as_str()];
        v.extend_from_slice(args);
        bricks_netns::ip(&v).map(drop).map_err(Error::from)
    }

    /// Frames and bytes s0 has received.
    pub(super) fn sink_counters(&self) -> Result<(u64, u64), Error> {
        let out = bricks_netns::run(&mut self.net.exec(
            "sink",
            &[
                "cat",
                "/sys/class/net/s0/statistics/rx_packets",
                "/sys/class/net/s0/statistics/rx_bytes",
            ],
        ))
        .map_err(Error::from)?;
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Vec<u64> = text
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        match v.as_slice() {
            [p, b] => Ok((*p, *b)),
            _ => Err(Error::Network(format!("cannot read s0's counters: {text}"))),
        }
    }

    /// One run of the generator at `rate` (flat out when `None`) with
    /// `size`-byte inner packets; what was sent and what arrived.
    pub(super) fn step(&self, size: u16, secs: f64, rate: Option<u64>) -> Result<Step, Error> {
        let before = self.sink_counters()?;
        let d = format!("{secs:.3}");
        let frame = (size + 14).to_string();
        let threads = QUEUES.to_string();
        let rate_s = rate.map(|r| r.to_string());
        let mut args = vec![
            "gen",
            "g0",
            "--threads",
            &threads,
            "--duration",
            &d,
            "--src",
            "192.168.1.2",
            "--dst",
            "192.168.2.2",
            "--dst-mac",
            &self.r0_mac,
            "--flows",
            FLOWS,
            "--size",
            &frame,
            "--backend",
            "xdp",
            "--json",
        ];
        if let Some(r) = &rate_s {
            args.extend_from_slice(&["--rate", r]);
        }
        let out = Captured::spawn(&mut self.bricks("gen", self.tester_cpu, &args))
            .map_err(Error::from)?
            .wait(
                Duration::from_secs_f64(secs + 30.0),
                Some(self.cancel.as_ref()),
            )
            .map_err(Error::from)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            return Err(Error::Process(format!(
                "bricks gen failed ({}): {}",
                out.status,
                tail(&String::from_utf8_lossy(&out.stderr))
            )));
        }
        let j = last_json(&stdout)
            .ok_or_else(|| Error::Process(format!("bricks gen printed no report: {stdout}")))?;
        let sent = j["sent"].as_u64().unwrap_or(0);
        let elapsed = j["elapsed_s"].as_f64().unwrap_or(0.0);
        if sent == 0 || elapsed <= 0.0 {
            return Err(Error::Process(format!("bricks gen sent nothing: {stdout}")));
        }
        std::thread::sleep(DRAIN);
        let after = self.sink_counters()?;
        let got = after.0.saturating_sub(before.0);
        Ok(Step {
            asked: rate,
            offered: sent as f64 / elapsed / 1e6,
            delivered: got as f64 / elapsed / 1e6,
            loss_pct: sent.saturating_sub(got) as f64 * 100.0 / sent as f64,
        })
    }

    /// Runs the rate ladder for one size: doubling rates until the
    /// gateway loses more than MAX_LOSS_PCT (or the generator cannot send
    /// what is asked), two bisections between the last rate that passed
    /// and the first that did not, then the generator flat out.
    pub(super) fn ladder(&self, size: u16, st: &Settings) -> Result<Vec<Step>, Error> {
        let rates: &[u64] = if st.quick {
            &[100_000]
        } else {
            &[100_000, 200_000, 400_000, 800_000, 1_600_000, 3_200_000]
        };
        let mut steps = Vec::new();
        let check = || {
            if self.cancelled() {
                return Err(Error::Interrupted);
            }
            Ok(())
        };
        let passed = |s: &Step| s.loss_pct <= MAX_LOSS_PCT;
        let mut lo = 0;
        let mut hi = None;
        for &r in rates {
            check()?;
            let s = self.step(size, st.seconds, Some(r))?;
            steps.push(s);
            if s.offered * 1e6 < r as f64 * 0.9 {
                // The generator's limit: asking for more says nothing.
                break;
            }
            if !passed(&s) {
                hi = Some(r);
                break;
            }
            lo = r;
        }
        if let Some(mut hi) = hi {
            for _ in 0..if st.quick { 0 } else { 2 } {
                check()?;
                let mid = (lo + hi) / 2;
                let s = self.step(size, st.seconds, Some(mid))?;
                steps.push(s);
                if passed(&s) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
        check()?;
        steps.push(self.step(size, st.seconds, None)?);
        Ok(steps)
    }

    /// Starts conf/ipsec-gw.click on r0 (LAN) and r1 (WAN) and waits until
    /// both interfaces are open.
    pub(super) fn start_bricks(&self) -> Result<(ChildGuard, PathBuf, PathBuf), Error> {
        let conf = include_str!("../../../../conf/ipsec-gw.click");
        let defs = [
            format!("LAN_MAC={}", self.r0_mac),
            format!("WAN_MAC={}", self.r1_mac),
            format!("SA_FILE={}", self.dir.join("gw.sa").display()),
        ];
        let mut args = vec!["run", "-e", conf];
        for d in ["LAN=r0", "WAN=r1", "BACKEND=xdp"] {
            args.extend_from_slice(&["-D", d]);
        }
        for d in &defs {
            args.extend_from_slice(&["-D", d]);
        }
        args.extend_from_slice(&["--stats-json", "--stats-interval", "86400"]);
        let out = self.dir.join("gw.out");
        let err = self.dir.join("gw.err");
        let mut cmd = self.bricks("gw", self.router_cpu, &args);
        cmd.stdin(Stdio::null())
            .stdout(std::fs::File::create(&out)?)
            .stderr(std::fs::File::create(&err)?);
        let mut child = ChildGuard::spawn(&mut cmd).map_err(Error::from)?;
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&err).unwrap_or_default();
            let ready = text.lines().any(|l| l.starts_with("r0: "))
                && text.lines().any(|l| l.starts_with("r1: "));
            if ready {
                break;
            }
            if child.try_wait().is_some() || Instant::now() >= end || self.cancelled() {
                child.kill();
                return Err(Error::Process(format!(
                    "the bricks gateway did not start: {}",
                    tail(&std::fs::read_to_string(&err).unwrap_or_default())
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        Ok((child, out, err))
    }

    /// Stops the bricks gateway and reads its counters.
    pub(super) fn stop_bricks(
        &self,
        mut child: ChildGuard,
        out: &Path,
        err: &Path,
    ) -> Result<Vec<String>, Error> {
        let status = child.stop(Duration::from_secs(15));
        let stdout = std::fs::read_to_string(out).unwrap_or_default();
        let stderr = std::fs::read_to_string(err).unwrap_or_default();
        if !status.is_some_and(|s| s.success()) {
            return Err(Error::Process(format!(
                "the bricks gateway failed ({}): {}",
                status.map_or("it did not exit within 15 s".to_string(), |s| s.to_string()),
                tail(&stderr)
            )));
        }
        let mut notes: Vec<String> = stderr
            .lines()
            .filter(|l| l.starts_with("r0: ") || l.starts_with("r1: "))
            .map(str::to_string)
            .collect();
        if let Some(j) = last_json(&stdout) {
            let sum = |el: &str, k: &str| -> u64 {
                j["workers"]
                    .as_array()
                    .map(|ws| {
                        ws.iter()
                            .map(|w| w["elements"][el][k].as_u64().unwrap_or(0))
                            .sum()
                    })
                    .unwrap_or(0)
            };
            let line = format!(
                "bricks counters: in0 {} received ({} ring drops), esp_out {} protected, \
                 out1 {} sent ({} drops), q1 {} drops",
                sum("in0", "count"),
                sum("in0", "ring_drops"),
                sum("esp_out", "protected"),
                sum("out1", "count"),
                sum("out1", "drops"),
                sum("q1", "drops"),
            );
            notes.push(line);
        }
        Ok(notes)
    }

    /// Gives the gateway namespace Linux addresses, a route to the remote
    /// network through the peer, and with `xfrm` the SA and the outbound
    /// policy of conf/ipsec-gw.sa; then turns forwarding on.
    pub(super) fn configure_linux(&self, xfrm: bool) -> Result<(), Error> {
        self.ip_gw(&["addr", "add", "192.168.1.1/24", "dev", "r0"])?;
        self.ip_gw(&["addr", "add", "10.0.0.1/24", "dev", "r1"])?;
        self.ip_gw(&[
            "neigh",
            "replace",
            "10.0.0.2",
            "lladdr",
            &self.s0_mac,
            "dev",
            "r1",
            "nud",
            "permanent",
        ])?;
        self.ip_gw(&[
            "route",
            "add",
            "192.168.2.0/24",
            "via",
            "10.0.0.2",
            "dev",
            "r1",
        ])?;
        if xfrm {
            // The state line of conf/ipsec-gw.sa, as a Linux peer takes it.
            let state = Suite::Aes128Gcm.state(0x1001, 1).replace('\'', "");
            let ns = self.net.ns_name("gw");
            let mut args = vec!["-n", ns.as_str(), "xfrm"];
            args.extend(state.split_whitespace());
            let out = Command::new("ip")
                .args(&args)
                .stdin(Stdio::null())
                .output()
                .context("running ip xfrm")?;
            if !out.status.success() {
                return Err(Error::Network(format!(
                    "the kernel refused the SA (`ip xfrm {state}`: {}){}",
                    String::from_utf8_lossy(&out.stderr).trim(),
                    kernel_lacks_esp()
                )));
            }
            let pol = policy("192.168.1.0/24", "out", 1);
            let mut args = vec!["xfrm"];
            args.extend(pol.split_whitespace());
            self.ip_gw(&args)?;
        }
        self.net
            .sysctl("gw", "net.ipv4.ip_forward", "1")
            .map_err(Error::from)?;
        Ok(())
    }

    /// Undoes [`Testbed::configure_linux`], so that bricks gets the
    /// interfaces bare.
    pub(super) fn unconfigure_linux(&self) {
        let _ = self.net.sysctl("gw", "net.ipv4.ip_forward", "0");
        let _ = self.ip_gw(&["xfrm", "policy", "flush"]);
        let _ = self.ip_gw(&["xfrm", "state", "flush"]);
        let _ = self.ip_gw(&["route", "flush", "192.168.2.0/24"]);
        let _ = self.ip_gw(&["neigh", "flush", "dev", "r1"]);
        let _ = self.ip_gw(&["addr", "flush", "dev", "r0"]);
        let _ = self.ip_gw(&["addr", "flush", "dev", "r1"]);
    }

    /// Every size through one gateway.
    pub(super) fn gateway(&self, g: Gateway, sizes: &[u16], st: &Settings) -> Vec<Ladder> {
        let mut out: Vec<Ladder> = sizes
            .iter()
            .map(|&size| Ladder {
                gateway: g,
                size,
                steps: Vec::new(),
                error: None,
                notes: Vec::new(),
            })
            .collect();
        let fail = |out: &mut Vec<Ladder>, e: String| {
            for l in out.iter_mut() {
                l.error.get_or_insert_with(|| e.clone());
            }
        };
        match g {
            Gateway::Bricks => {
                let (child, o, e) = match self.start_bricks() {
                    Ok(x) => x,
                    Err(e) => {
                        fail(&mut out, format!("{e:#}"));
                        return out;
                    }
                };
                // The gateway learns the peer's MAC with ARP on the first
                // packet: a few packets before the measurement.
                let _ = self.step(64, 0.2, Some(10_000));
                for l in out.iter_mut() {
                    match self.ladder(l.size, st) {
                        Ok(s) => l.steps = s,
                        Err(e) => l.error = Some(format!("{e:#}")),
                    }
                }
                match self.stop_bricks(child, &o, &e) {
                    Ok(notes) => {
                        for l in out.iter_mut() {
                            l.notes = notes.clone();
                        }
                    }
                    Err(e) => fail(&mut out, format!("{e:#}")),
                }
            }
            Gateway::LinuxXfrm | Gateway::LinuxForward => {
                let r = self.configure_linux(g == Gateway::LinuxXfrm);
                if let Err(e) = r {
                    self.unconfigure_linux();
                    fail(&mut out, format!("{e:#}"));
                    return out;
                }
                for l in out.iter_mut() {
                    match self.ladder(l.size, st) {
                        Ok(s) => l.steps = s,
                        Err(e) => l.error = Some(format!("{e:#}")),
                    }
                }
                self.unconfigure_linux();
            }
        }
        out
    }
}

pub(super) fn veth_section(
    sizes: &[u16],
    dir: &Path,
    st: &Settings,
    cancel: &Arc<AtomicBool>,
    progress: bool,
) -> Result<String, Error> {
    let mut o = String::new();
    if !bricks_netns::is_root() {
        let _ = writeln!(
            o,
            "through veths: skipped, it needs root (network namespaces, XDP, NAPI threads): \
             sudo {} bench ipsec --only veth",
            std::env::args().next().unwrap_or_else(|| "bricks".into())
        );
        return Ok(o);
    }
    for (tool, hint) in [
        ("ethtool", "ethtool"),
        ("taskset", "util-linux"),
        ("chrt", "util-linux"),
    ] {
        let found = Command::new(tool)
            .arg("--version")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            let _ = writeln!(
                o,
                "through veths: skipped, it needs `{tool}` (apt-get install {hint})"
            );
            return Ok(o);
        }
    }
    let bed = Testbed::build(dir, cancel.clone()).context("building the test network")?;
    let mut ladders = Vec::new();
    for g in [Gateway::LinuxXfrm, Gateway::LinuxForward, Gateway::Bricks] {
        if bed.cancelled() {
            break;
        }
        if progress {
            eprint!("\r{:60}\rveth: {}", "", g.label());
        }
        ladders.extend(bed.gateway(g, sizes, st));
    }
    if progress {
        eprint!("\r{:60}\r", "");
    }
    let (tester, router) = (bed.tester_cpu, bed.router_cpu);
    drop(bed);
    if cancel.load(Ordering::Relaxed) {
        return Err(Error::Interrupted);
    }
    let _ = writeln!(
        o,
        "through veths: bricks gen (UDP 192.168.1.2 -> 192.168.2.2, {FLOWS} flows, 2 AF_XDP \
         queues) -> [r0 gateway r1] -> s0 (10.0.0.2, Linux, counts frames); {} s per rate; \
         generator and s0's NAPI on CPU {tester}, gateway and r0's NAPI on CPU {router}; \
         AES-128-GCM (conf/ipsec-gw.sa)",
        st.seconds
    );
    let _ = writeln!(
        o,
        "{:<26} {:>5} {:>10} {:>9} {:>10} {:>12} {:>7}",
        "gateway", "inner", "asked Mpps", "offered", "delivered", "inner Gbps", "loss %"
    );
    let mut said = BTreeSet::new();
    for l in &ladders {
        if let Some(e) = &l.error {
            if l.steps.is_empty() {
                // Said once per gateway when every size failed alike.
                if said.insert((l.gateway.label(), e.clone())) {
                    let _ = writeln!(o, "{:<26} {:>5} unavailable: {e}", l.gateway.label(), "all");
                }
                continue;
            }
        }
        for s in &l.steps {
            let _ = writeln!(
                o,
                "{:<26} {:>5} {:>10} {:>9.3} {:>10.3} {:>12.2} {:>7.1}",
                l.gateway.label(),
                l.size,
                s.asked
                    .map_or("max".to_string(), |r| format!("{:.3}", r as f64 / 1e6)),
                s.offered,
                s.delivered,
                s.delivered * f64::from(l.size) * 8.0 / 1e3,
                s.loss_pct
            );
        }
        if let Some(e) = &l.error {
            let _ = writeln!(o, "{:<26} {:>5} failed: {e}", l.gateway.label(), l.size);
        }
    }
    let _ = writeln!(
        o,
        "\n{:<26} {:>5} {:>15} {:>18}",
        "highest rates (Mpps)", "inner", "delivered", "loss-free (<=1%)"
    );
    for l in &ladders {
        if l.steps.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "{:<26} {:>5} {:>15.3} {:>18}",
            l.gateway.label(),
            l.size,
            l.best().unwrap_or(0.0),
            l.loss_free()
                .map_or("none".to_string(), |v| format!("{v:.3}"))
        );
    }
    let find = |g, size| ladders.iter().find(|l| l.gateway == g && l.size == size);
    let _ = writeln!(o);
    for &size in sizes {
        let bricks = find(Gateway::Bricks, size).and_then(Ladder::best);
        let xfrm = find(Gateway::LinuxXfrm, size).and_then(Ladder::best);
        let fwd = find(Gateway::LinuxForward, size).and_then(Ladder::best);
        match (bricks, xfrm) {
            (Some(b), Some(x)) if x > 0.0 => {
                let _ = writeln!(
                    o,
                    "{size}-byte: bricks / Linux XFRM = {:.2}   goal >= 2: {}",
                    b / x,
                    met(b / x >= 2.0)
                );
            }
            _ => {
                let _ = writeln!(
                    o,
                    "{size}-byte: bricks / Linux XFRM: not measured (Linux XFRM {})",
                    if xfrm.is_none() {
                        "unavailable"
                    } else {
                        "delivered nothing"
                    }
                );
            }
        }
        if let (Some(b), Some(f)) = (bricks, fwd) {
            if f > 0.0 {
                let free = find(Gateway::Bricks, size)
                    .and_then(Ladder::loss_free)
                    .zip(find(Gateway::LinuxForward, size).and_then(Ladder::loss_free))
                    .map_or("-".to_string(), |(b, f)| format!("{:.2}", b / f));
                let _ = writeln!(
                    o,
                    "{size}-byte: bricks ESP / Linux forwarding without ESP = {:.2} (highest \
                     delivered; loss-free: {free}); with the same generator Linux XFRM delivers \
                     no more than Linux forwarding, so this is a lower bound of bricks / Linux \
                     XFRM here: goal >= 2 {}",
                    b / f,
                    if b / f >= 2.0 { "met" } else { "open" }
                );
            }
        }
    }
    let notes: BTreeSet<&String> = ladders.iter().flat_map(|l| l.notes.iter()).collect();
    for n in notes {
        let _ = writeln!(o, "{n}");
    }
    Ok(o)
}

// ---------------------------------------------------------------------
