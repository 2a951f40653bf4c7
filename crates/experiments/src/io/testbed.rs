//! The test network with every subject's set-up: one run of a subject,
//! and the search for its loss-free rate.

use super::*;

/// The test network and everything the runs need to know about it.
pub(super) struct Testbed {
    pub(super) net: Network,
    pub(super) exe: String,
    pub(super) machine: Machine,
    /// The forwarding ports: one for `bench io`, two for the NIC paper's
    /// two-port side of Figs. 4 and 5.
    pub(super) ports: Vec<Port>,
    pub(super) cancel: Arc<AtomicBool>,
    pub(super) flows: u32,
    /// Queues of every veth, and each generator's workers.
    pub(super) queues: u32,
    /// Send with XDP live frames (one queue) to the subjects that read
    /// one queue.
    pub(super) live: bool,
}

impl Testbed {
    pub(super) fn build(
        machine: Machine,
        flows: u32,
        cancel: Arc<AtomicBool>,
    ) -> Result<Testbed, Error> {
        Testbed::build_with(machine, flows, cancel, "io", queues(), 1)
    }

    /// The test network with `ports` forwarding ports of `queues` queues
    /// per veth; its namespaces' names carry `tag`, so that networks with
    /// different tags can exist side by side.
    pub(super) fn build_with(
        machine: Machine,
        flows: u32,
        cancel: Arc<AtomicBool>,
        tag: &str,
        queues: u32,
        ports: u32,
    ) -> Result<Testbed, Error> {
        let Line { net, ports } = Line::build_ports(tag, "r", queues, ports)?;
        for p in &ports {
            p.address(&net, "r")?;
            pin(&p.sink_napi, &[machine.tester_cpu()])?;
        }
        let exe = std::env::current_exe()
            .context("finding the bricks executable")?
            .display()
            .to_string();
        Ok(Testbed {
            net,
            exe,
            machine,
            ports,
            cancel,
            flows,
            queues,
            live: false,
        })
    }

    /// The first forwarding port (`g0 -- r0, r1 -- s0`).
    pub(super) fn port0(&self) -> &Port {
        &self.ports[0]
    }

    pub(super) fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// `nice -n -20 taskset -c CPUS bricks ARGS...` in namespace `ns`
    /// (each program execs the next, so the PID is bricks').
    pub(super) fn bricks(&self, ns: &str, cpus: &[usize], args: &[&str]) -> Command {
        self.bricks_at(NICE, ns, cpus, args)
    }

    /// [`Testbed::bricks`] at niceness `nice`.
    fn bricks_at(&self, nice: &str, ns: &str, cpus: &[usize], args: &[&str]) -> Command {
        let list = cpu_list(cpus);
        let mut argv = vec!["nice", "-n", nice, "taskset", "-c", &list, &self.exe];
        argv.extend_from_slice(args);
        self.net.exec(ns, &argv)
    }

    /// The sink of `port`, started before the generator; runs at most
    /// `secs`.
    pub(super) fn sink(&self, port: &Port, secs: f64) -> Result<Proc, Error> {
        let d = format!("{secs:.3}");
        Proc::spawn(&mut self.bricks(
            "sink",
            &[self.machine.tester_cpu()],
            &["sink", &port.sink_if, "--duration", &d, "--json"],
        ))
    }

    /// The generator of `port`: 64-byte UDP frames to the sink's address
    /// through the router's input, for `secs`, at `rate` or as fast as it
    /// can; with XDP live frames on one queue when `live`.
    pub(super) fn gen(
        &self,
        port: &Port,
        secs: f64,
        rate: Option<u64>,
        live: bool,
    ) -> Result<Proc, Error> {
        let d = format!("{secs:.3}");
        let flows = self.flows.to_string();
        let rate = rate.map(|r| r.to_string());
        let (threads, backend) = if live {
            ("1".to_string(), "live")
        } else {
            (self.queues.to_string(), "xdp")
        };
        let (src, dst) = (port.gen_addr(), port.sink_addr());
        let mut args = vec![
            "gen",
            &port.gen_if,
            // One worker per queue of the generator's veth, so every
            // queue of the router's input gets traffic.
            "--threads",
            &threads,
            "--duration",
            &d,
            "--src",
            &src,
            "--dst",
            &dst,
            "--dst-mac",
            &port.in_mac,
            "--flows",
            &flows,
            "--size",
            "64",
            "--backend",
            backend,
            "--json",
        ];
        if let Some(r) = &rate {
            args.extend_from_slice(&["--rate", r]);
        }
        // The live generator turns in the kernel even while it waits for
        // its next frame's time, and it shares the tester CPU with the
        // sink: at the lowest priority, so that the sink always has the
        // CPU it needs, and a tester too busy to keep up shows as frames
        // the generator did not send (the offered rate), not as frames
        // the sink lost.
        let nice = if live { GEN_LIVE_NICE } else { NICE };
        Proc::spawn(&mut self.bricks_at(nice, "gen", &[self.machine.tester_cpu()], &args))
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

    /// Starts what forwards `port` for `s` and waits until it does;
    /// `extra` arguments go to `bricks run`.
    pub(super) fn start_router(
        &self,
        s: &Subject,
        port: &Port,
        cpus: &[usize],
        extra: &[&str],
    ) -> Result<Option<Proc>, Error> {
        self.net.sysctl(
            "r",
            "net.ipv4.ip_forward",
            if s.fwd == Forwarder::Linux { "1" } else { "0" },
        )?;
        // Busy polling keeps r0's NAPI thread off the worker's CPU only
        // while the interface defers it (up to 200 us after each poll);
        // every other subject has the kernel's defaults.
        let (defer, flush) = match &s.fwd {
            Forwarder::Bricks(b) if b.busy_poll_us.is_some() => ("2", "200000"),
            _ => ("0", "0"),
        };
        for (knob, value) in [
            ("napi_defer_hard_irqs", defer),
            ("gro_flush_timeout", flush),
        ] {
            let set = format!("echo {value} > /sys/class/net/{}/{knob}", port.in_if);
            sh(self.net.exec("r", &["sh", "-c", &set]))
                .with_context(|| format!("setting {}'s {knob}", port.in_if))?;
        }
        // Both interfaces are open once both of bricks' report lines are
        // out; the workers start right after.
        let (in_line, out_line) = (format!("{}: ", port.in_if), format!("{}: ", port.out_if));
        let mut p = match &s.fwd {
            Forwarder::Linux => return Ok(None),
            Forwarder::XdpRedirect => {
                let spec = format!("redirect:{}:{}", port.in_if, port.out_if);
                Proc::spawn(&mut self.bricks("r", cpus, &["bench", "io", "--xdp-hold", &spec]))?
            }
            Forwarder::Bricks(b) => {
                let conf = bricks_config(b, port);
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
                Proc::spawn(&mut self.bricks("r", cpus, &args))?
            }
        };
        let ready = |out: &[String], err: &[String]| match s.fwd {
            Forwarder::XdpRedirect => out.iter().any(|l| l.starts_with("ready")),
            _ => {
                err.iter().any(|l| l.starts_with(&in_line))
                    && err.iter().any(|l| l.starts_with(&out_line))
            }
        };
        if !p.wait_ready(Duration::from_secs(20), &self.cancel, ready) {
            let f = p.finish(Duration::from_secs(2), &self.cancel);
            return Err(Error::Process(format!(
                "the router did not start: {}",
                f.why()
            )));
        }
        std::thread::sleep(Duration::from_millis(300));
        Ok(Some(p))
    }

    /// One run of `s`: on every port at once, the figures summed over
    /// the ports.
    ///
    /// With more than one port, each port has a router of its own,
    /// pinned to one of the subject's CPUs in turn, with the subject's
    /// workers: `bricks run` in per-core mode gives every device's first
    /// queue to worker 0, so one process with two one-queue ports would
    /// leave its second worker idle; a process per port gives each port's
    /// queue a core of its own, as the NIC paper's two ports had.
    pub(super) fn run(
        &self,
        s: &Subject,
        secs: f64,
        rate: Option<u64>,
    ) -> Result<RunResult, Error> {
        let load = load_average();
        let cpus = self.machine.cpus_for(s);
        let placed: Vec<(&Port, Vec<usize>)> = match self.ports.as_slice() {
            [one] => vec![(one, cpus)],
            many => many
                .iter()
                .enumerate()
                .map(|(k, p)| (p, vec![cpus[k % cpus.len()]]))
                .collect(),
        };
        let mut routers = Vec::new();
        for (p, c) in &placed {
            pin(&p.in_napi, c)?;
            routers.push(self.start_router(s, p, c, &[])?);
        }
        // The sinks are stopped once the generators are done; their own
        // duration is only a bound.
        let mut sinks = Vec::new();
        for p in &self.ports {
            sinks.push(self.sink(p, secs + 30.0)?);
        }
        // Let the sinks open their sockets before anything is sent.
        std::thread::sleep(SINK_START);
        // XDP_REDIRECT into a veth needs an XDP program on the peer; the
        // sink's AF_XDP program is one, AF_PACKET would leave none.
        let mut passes = Vec::new();
        for p in &self.ports {
            if s.fwd == Forwarder::XdpRedirect && !self.has_xdp("sink", &p.sink_if) {
                let spec = format!("pass:{}", p.sink_if);
                let mut x = Proc::spawn(&mut self.bricks(
                    "sink",
                    &[self.machine.tester_cpu()],
                    &["bench", "io", "--xdp-hold", &spec],
                ))?;
                if !x.wait_ready(Duration::from_secs(10), &self.cancel, |o, _| {
                    o.iter().any(|l| l.starts_with("ready"))
                }) {
                    return Err(Error::Process(format!(
                        "cannot attach XDP_PASS to {}: {}",
                        p.sink_if,
                        x.finish(Duration::from_secs(1), &self.cancel).why()
                    )));
                }
                passes.push(x);
            }
        }
        // The router's CPUs alone (not a subject spread over the tester's).
        let router_cpus: Vec<usize> = if s.wide {
            Vec::new()
        } else {
            placed.iter().flat_map(|(_, c)| c.iter().copied()).collect()
        };
        let work_before = other_work::snapshot();
        let ticks_before = cpu_ticks(&router_cpus);
        let live = self.live && s.reads_one_queue() && self.ports.len() == 1;
        let mut gens = Vec::new();
        for p in &self.ports {
            gens.push(self.gen(p, secs, rate, live)?);
        }
        let gens: Vec<Finished> = gens
            .into_iter()
            .map(|g| g.finish(Duration::from_secs_f64(secs + 30.0), &self.cancel))
            .collect();
        let other = other_work::other_cpus(work_before, other_work::snapshot());
        let router_busy = if router_cpus.is_empty() {
            None
        } else {
            busy_between(ticks_before, cpu_ticks(&router_cpus))
        };
        // Frames still in queues and rings arrive within microseconds to
        // a few milliseconds; the rest is lost.
        std::thread::sleep(DRAIN);
        let sinks: Vec<Finished> = sinks
            .into_iter()
            .map(|mut k| {
                k.terminate();
                k.finish(Duration::from_secs(15), &self.cancel)
            })
            .collect();
        let routers: Vec<Finished> = routers
            .into_iter()
            .flatten()
            .map(|mut r| {
                r.terminate();
                r.finish(Duration::from_secs(15), &self.cancel)
            })
            .collect();
        drop(passes);
        if self.cancelled() {
            return Err(Error::Interrupted);
        }
        let mut notes = Vec::new();
        let mut counters: Option<RouterCounters> = None;
        for r in &routers {
            if !r.ok() {
                return Err(Error::Process(format!("the router failed: {}", r.why())));
            }
            if let Some(c) = parse_router(&r.stdout) {
                counters = Some(counters.unwrap_or_default().plus(&c));
            }
            for l in r.stderr.lines().chain(r.stdout.lines()) {
                let port_line = self.ports.iter().any(|p| {
                    l.starts_with(&format!("{}: ", p.in_if))
                        || l.starts_with(&format!("{}: ", p.out_if))
                });
                if port_line || l.starts_with("ready") || l.starts_with("dispatcher:") {
                    notes.push(l.to_string());
                }
            }
        }
        let (mut gen_r, mut sink_r) = (Vec::new(), Vec::new());
        for (gen, sink) in gens.iter().zip(&sinks) {
            if !gen.ok() {
                return Err(Error::Process(format!("bricks gen failed: {}", gen.why())));
            }
            if !sink.ok() {
                return Err(Error::Process(format!(
                    "bricks sink failed: {}",
                    sink.why()
                )));
            }
            gen_r.push(parse_gen(&gen.stdout).ok_or_else(|| no_report("gen", &gen.stdout))?);
            sink_r.push(parse_sink(&sink.stdout).ok_or_else(|| no_report("sink", &sink.stdout))?);
        }
        Ok(RunResult {
            gen: GenReport::sum(&gen_r),
            sink: SinkReport::sum(&sink_r),
            router: counters,
            notes,
            load,
            other,
            router_busy,
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
/// then. A trial passes when at most `max_loss` percent is lost, and a
/// rate passes when at least half of its `trials` do (its trials stop
/// once that is decided): with 2, a rate whose first trial fails is tried
/// again, so that one burst of loss from elsewhere on the machine does
/// not put the rest of the search a step lower. This is the goal exceed
/// ratio of 50 % of FD.io CSIT's MLRsearch (draft-ietf-bmwg-mlrsearch).
/// The result is what the generator really sent in the best passing
/// trial of a passing rate.
pub(super) fn search(
    bed: &Testbed,
    m: &Measured,
    secs: f64,
    steps: u32,
    trials: u32,
    max_loss: f64,
) -> Result<Search, Error> {
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
    let trials = trials.max(1);
    let need = trials.div_ceil(2);
    let mut lo = 0.0f64;
    let mut hi = offered.max.max(delivered.median) * 1e6;
    let mut rate = (delivered.median * 1e6).clamp(1.0, hi);
    for _ in 0..steps {
        let (mut passed, mut failed) = (0, 0);
        let mut best: Option<(f64, f64)> = None;
        while passed < need && failed <= trials - need {
            if bed.cancelled() {
                return Ok(out);
            }
            let r = bed.run(&m.subject, secs, Some(rate.round() as u64))?;
            if r.loss_pct() <= max_loss && r.gen.sent > 0 {
                passed += 1;
                if best.is_none_or(|(b, _)| r.offered_mpps() > b) {
                    best = Some((r.offered_mpps(), r.loss_pct()));
                }
            } else {
                failed += 1;
            }
            out.probes.push((rate.round() as u64, r));
        }
        if passed >= need {
            lo = rate;
            if let Some((b, loss)) = best {
                if out.best.is_none_or(|(o, _)| b > o) {
                    out.best = Some((b, loss));
                }
            }
        } else {
            hi = rate;
        }
        rate = (lo + hi) / 2.0;
    }
    Ok(out)
}
