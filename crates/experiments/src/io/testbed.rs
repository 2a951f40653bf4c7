//! The test network with every subject's set-up: one run of a subject,
//! and the search for its loss-free rate.

use super::*;

/// The test network and everything the runs need to know about it.
pub(super) struct Testbed {
    pub(super) net: Network,
    pub(super) exe: String,
    pub(super) machine: Machine,
    pub(super) r0_mac: String,
    pub(super) r1_mac: String,
    pub(super) s0_mac: String,
    /// r0's NAPI threads (the router's receive work).
    pub(super) r0_napi: Vec<u32>,
    pub(super) cancel: Arc<AtomicBool>,
    pub(super) flows: u32,
    /// Queues of every veth, and the generator's workers.
    pub(super) queues: u32,
}

impl Testbed {
    pub(super) fn build(
        machine: Machine,
        flows: u32,
        cancel: Arc<AtomicBool>,
    ) -> anyhow::Result<Testbed> {
        Testbed::build_with_queues(machine, flows, cancel, queues())
    }

    /// The test network with `queues` queues per veth.
    pub(super) fn build_with_queues(
        machine: Machine,
        flows: u32,
        cancel: Arc<AtomicBool>,
        queues: u32,
    ) -> anyhow::Result<Testbed> {
        let Line {
            net,
            r0_mac,
            r1_mac,
            s0_mac,
            r0_napi,
            s0_napi,
        } = Line::build("io", "r", queues)?;
        let e = anyhow::Error::msg;
        net.add_addr("gen", "g0", G0_CIDR).map_err(e)?;
        net.add_addr("r", "r0", R0_CIDR).map_err(e)?;
        net.add_addr("r", "r1", R1_CIDR).map_err(e)?;
        net.add_addr("sink", "s0", S0_CIDR).map_err(e)?;
        // ARP never interferes with the Linux subject.
        let r = net.ns_name("r");
        let neigh = [
            "-n",
            &r,
            "neigh",
            "replace",
            S0_ADDR,
            "lladdr",
            &s0_mac,
            "dev",
            "r1",
            "nud",
            "permanent",
        ];
        bricks_netns::ip(&neigh).map_err(e)?;
        pin(&s0_napi, &[machine.tester_cpu()])?;
        let exe = std::env::current_exe()
            .context("finding the bricks executable")?
            .display()
            .to_string();
        Ok(Testbed {
            net,
            exe,
            machine,
            r0_mac,
            r1_mac,
            s0_mac,
            r0_napi,
            cancel,
            flows,
            queues,
        })
    }

    pub(super) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// `nice -n -20 taskset -c CPUS bricks ARGS...` in namespace `ns`
    /// (each program execs the next, so the PID is bricks').
    pub(super) fn bricks(&self, ns: &str, cpus: &[usize], args: &[&str]) -> Command {
        let list = cpu_list(cpus);
        let mut argv = vec!["nice", "-n", NICE, "taskset", "-c", &list, &self.exe];
        argv.extend_from_slice(args);
        self.net.exec(ns, &argv)
    }

    /// The sink, started before the generator; runs at most `secs`.
    pub(super) fn sink(&self, secs: f64) -> anyhow::Result<Proc> {
        let d = format!("{secs:.3}");
        Proc::spawn(&mut self.bricks(
            "sink",
            &[self.machine.tester_cpu()],
            &["sink", "s0", "--duration", &d, "--json"],
        ))
    }

    /// The generator: 64-byte UDP frames to the sink's address through
    /// r0, for `secs`, at `rate` or as fast as it can.
    pub(super) fn gen(&self, secs: f64, rate: Option<u64>) -> anyhow::Result<Proc> {
        let d = format!("{secs:.3}");
        let flows = self.flows.to_string();
        let rate = rate.map(|r| r.to_string());
        let threads = self.queues.to_string();
        let mut args = vec![
            "gen",
            "g0",
            // One worker per queue of g0, so both of r0's queues get
            // traffic.
            "--threads",
            &threads,
            "--duration",
            &d,
            "--src",
            G0_ADDR,
            "--dst",
            S0_ADDR,
            "--dst-mac",
            &self.r0_mac,
            "--flows",
            &flows,
            "--size",
            "64",
            "--backend",
            "xdp",
            "--json",
        ];
        if let Some(r) = &rate {
            args.extend_from_slice(&["--rate", r]);
        }
        Proc::spawn(&mut self.bricks("gen", &[self.machine.tester_cpu()], &args))
    }

    /// Whether `ifname` in `ns` carries an XDP program.
    pub(super) fn has_xdp(&self, ns: &str, ifname: &str) -> bool {
        self.net
            .exec(ns, &["ip", "-d", "link", "show", "dev", ifname])
            .stdin(Stdio::null())
            .output()
            .is_ok_and(|o| {
                let t = String::from_utf8_lossy(&o.stdout);
                t.contains("prog/xdp") || t.contains(" xdp")
            })
    }

    /// Starts what forwards for `s` and waits until it does; `extra`
    /// arguments go to `bricks run`.
    pub(super) fn start_router(
        &self,
        s: &Subject,
        cpus: &[usize],
        extra: &[&str],
    ) -> anyhow::Result<Option<Proc>> {
        self.net
            .sysctl(
                "r",
                "net.ipv4.ip_forward",
                if s.fwd == Forwarder::Linux { "1" } else { "0" },
            )
            .map_err(anyhow::Error::msg)?;
        let (mut p, ready): (Proc, Ready) = match &s.fwd {
            Forwarder::Linux => return Ok(None),
            Forwarder::XdpRedirect => (
                Proc::spawn(&mut self.bricks(
                    "r",
                    cpus,
                    &["bench", "io", "--xdp-hold", "redirect:r0:r1"],
                ))?,
                |out, _| out.iter().any(|l| l.starts_with("ready")),
            ),
            Forwarder::Bricks(b) => {
                let conf = bricks_config(b, &self.r1_mac, &self.s0_mac);
                let threads = b.threads.to_string();
                let nap = b.idle_nap_us.map(|n| n.to_string());
                let mut args = vec![
                    "run",
                    "-e",
                    &conf,
                    "--threads",
                    &threads,
                    "--mode",
                    b.mode,
                    "--stats-json",
                ];
                // One report at the end, unless the caller wants the
                // counters published more often (the control socket reads
                // what the workers last published).
                if !extra.contains(&"--stats-interval") {
                    args.extend_from_slice(&["--stats-interval", "86400"]);
                }
                if let Some(n) = &nap {
                    args.extend_from_slice(&["--idle-nap", n]);
                }
                args.extend_from_slice(extra);
                (
                    Proc::spawn(&mut self.bricks("r", cpus, &args))?,
                    |_, err| {
                        // Both interfaces are open once both report lines are
                        // out; the workers start right after.
                        err.iter().any(|l| l.starts_with("r0: "))
                            && err.iter().any(|l| l.starts_with("r1: "))
                    },
                )
            }
        };
        if !p.wait_ready(Duration::from_secs(20), &self.cancel, ready) {
            let f = p.finish(Duration::from_secs(2), &self.cancel);
            bail!("the router did not start: {}", f.why());
        }
        std::thread::sleep(Duration::from_millis(300));
        Ok(Some(p))
    }

    /// One run of `s`.
    pub(super) fn run(
        &self,
        s: &Subject,
        secs: f64,
        rate: Option<u64>,
    ) -> anyhow::Result<RunResult> {
        let load = load_average();
        let cpus = self.machine.cpus_for(s);
        pin(&self.r0_napi, &cpus)?;
        let router = self.start_router(s, &cpus, &[])?;
        // The sink is stopped once the generator is done; its own
        // duration is only a bound.
        let mut sink = self.sink(secs + 30.0)?;
        // Let the sink open its sockets before anything is sent.
        std::thread::sleep(SINK_START);
        // XDP_REDIRECT into a veth needs an XDP program on the peer; the
        // sink's AF_XDP program is one, AF_PACKET would leave none.
        let mut pass = None;
        if s.fwd == Forwarder::XdpRedirect && !self.has_xdp("sink", "s0") {
            let mut p = Proc::spawn(&mut self.bricks(
                "sink",
                &[self.machine.tester_cpu()],
                &["bench", "io", "--xdp-hold", "pass:s0"],
            ))?;
            if !p.wait_ready(Duration::from_secs(10), &self.cancel, |o, _| {
                o.iter().any(|l| l.starts_with("ready"))
            }) {
                bail!(
                    "cannot attach XDP_PASS to s0: {}",
                    p.finish(Duration::from_secs(1), &self.cancel).why()
                );
            }
            pass = Some(p);
        }
        let gen = self
            .gen(secs, rate)?
            .finish(Duration::from_secs_f64(secs + 30.0), &self.cancel);
        // Frames still in queues and rings arrive within microseconds to
        // a few milliseconds; the rest is lost.
        std::thread::sleep(DRAIN);
        sink.terminate();
        let sink = sink.finish(Duration::from_secs(15), &self.cancel);
        let router = router.map(|mut r| {
            r.terminate();
            r.finish(Duration::from_secs(15), &self.cancel)
        });
        drop(pass);
        if self.cancelled() {
            bail!("interrupted");
        }
        let mut notes = Vec::new();
        let mut counters = None;
        if let Some(r) = &router {
            if !r.ok() {
                bail!("the router failed: {}", r.why());
            }
            counters = parse_router(&r.stdout);
            for l in r.stderr.lines().chain(r.stdout.lines()) {
                if l.starts_with("r0: ")
                    || l.starts_with("r1: ")
                    || l.starts_with("ready")
                    || l.starts_with("dispatcher:")
                {
                    notes.push(l.to_string());
                }
            }
        }
        anyhow::ensure!(gen.ok(), "bricks gen failed: {}", gen.why());
        anyhow::ensure!(sink.ok(), "bricks sink failed: {}", sink.why());
        let gen_r = parse_gen(&gen.stdout)
            .with_context(|| format!("bricks gen printed no report: {}", gen.stdout))?;
        let sink_r = parse_sink(&sink.stdout)
            .with_context(|| format!("bricks sink printed no report: {}", sink.stdout))?;
        Ok(RunResult {
            gen: gen_r,
            sink: sink_r,
            router: counters,
            notes,
            load,
        })
    }
}

/// The search for a subject's loss-free rate.
#[derive(Debug, Clone, Default)]
pub(super) struct Search {
    /// (rate asked of the generator in packets/s, the run), in order.
    pub(super) probes: Vec<(u64, RunResult)>,
    /// The highest rate sent with at most the allowed loss (Mpps), and
    /// the loss then.
    pub(super) best: Option<(f64, f64)>,
    /// The subject lost no more than allowed even with the generator at
    /// full speed: `best` is what the generator could send, a lower bound
    /// of what the subject can forward.
    pub(super) tester_bound: bool,
}

/// Bisects the offered rate between nothing and what the generator
/// managed at full speed, starting at the rate the subject delivered
/// then; a probe passes when at most `max_loss` percent is lost. The
/// result is what the generator really sent in the best passing probe.
pub(super) fn search(
    bed: &Testbed,
    m: &Measured,
    secs: f64,
    steps: u32,
    max_loss: f64,
) -> anyhow::Result<Search> {
    let mut out = Search::default();
    let (Some(delivered), Some(offered)) = (m.mpps(), m.spread(RunResult::offered_mpps)) else {
        return Ok(out);
    };
    if let Some(loss) = m.spread(RunResult::loss_pct) {
        if loss.median <= max_loss {
            out.best = Some((offered.median, loss.median));
            out.tester_bound = true;
            return Ok(out);
        }
    }
    let mut lo = 0.0f64;
    let mut hi = offered.max.max(delivered.median) * 1e6;
    let mut rate = (delivered.median * 1e6).clamp(1.0, hi);
    for _ in 0..steps {
        if bed.cancelled() {
            break;
        }
        let r = bed.run(&m.subject, secs, Some(rate.round() as u64))?;
        let pass = r.loss_pct() <= max_loss && r.gen.sent > 0;
        if pass {
            lo = rate;
            if out.best.is_none_or(|(b, _)| r.offered_mpps() > b) {
                out.best = Some((r.offered_mpps(), r.loss_pct()));
            }
        } else {
            hi = rate;
        }
        out.probes.push((rate.round() as u64, r));
        rate = (lo + hi) / 2.0;
    }
    Ok(out)
}
