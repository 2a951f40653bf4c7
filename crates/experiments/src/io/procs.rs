//! The processes a run starts (`bricks gen`, `sink`, `run`, XDP
//! holders), read while they run, and the JSON reports they print.

use super::*;

/// What `bricks gen --json` reports (the fields the bench uses).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct GenReport {
    pub(super) sent: u64,
    pub(super) elapsed: f64,
}

/// What `bricks sink --json` reports (the fields the bench uses).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct SinkReport {
    /// Distinct probes received (duplicates left out).
    pub(super) received: u64,
    /// Probes per second between the first and the last probe, in
    /// millions.
    pub(super) mpps: f64,
    /// Latency percentiles in ns: p50, p90, p99, p99.9, max.
    pub(super) latency: [u64; 5],
}

impl GenReport {
    /// Several generators that ran side by side as one: the frames summed,
    /// the time chosen so that the rate is the sum of their rates.
    pub(super) fn sum(parts: &[GenReport]) -> GenReport {
        let sent: u64 = parts.iter().map(|g| g.sent).sum();
        let rate: f64 = parts
            .iter()
            .filter(|g| g.elapsed > 0.0)
            .map(|g| g.sent as f64 / g.elapsed)
            .sum();
        GenReport {
            sent,
            elapsed: if rate > 0.0 { sent as f64 / rate } else { 0.0 },
        }
    }
}

impl SinkReport {
    /// Several sinks that ran side by side as one: frames and rates
    /// summed, each latency percentile the worst of theirs.
    pub(super) fn sum(parts: &[SinkReport]) -> SinkReport {
        let mut latency = [0u64; 5];
        for p in parts {
            for (l, x) in latency.iter_mut().zip(p.latency) {
                *l = (*l).max(x);
            }
        }
        SinkReport {
            received: parts.iter().map(|s| s.received).sum(),
            mpps: parts.iter().map(|s| s.mpps).sum(),
            latency,
        }
    }
}

/// The last line of `text` that is a JSON object.
pub fn last_json(text: &str) -> Option<serde_json::Value> {
    text.lines()
        .rev()
        .find_map(|l| serde_json::from_str::<serde_json::Value>(l.trim()).ok())
        .filter(serde_json::Value::is_object)
}

pub(super) fn parse_gen(text: &str) -> Option<GenReport> {
    let j = last_json(text)?;
    Some(GenReport {
        sent: j["sent"].as_u64()?,
        elapsed: j["elapsed_s"].as_f64()?,
    })
}

pub(super) fn parse_sink(text: &str) -> Option<SinkReport> {
    let j = last_json(text)?;
    let probes = j["probes"].as_u64()?;
    let dups = j["duplicates"].as_u64().unwrap_or(0);
    let l = &j["latency_ns"];
    let p = |k: &str| l[k].as_u64().unwrap_or(0);
    Some(SinkReport {
        received: probes.saturating_sub(dups),
        mpps: j["mpps"].as_f64()?,
        latency: [p("p50"), p("p90"), p("p99"), p("p999"), p("max")],
    })
}

/// The router's counters at the end of a bricks run, summed over workers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct RouterCounters {
    pub(super) received: u64,
    pub(super) ring_drops: u64,
    pub(super) queue_drops: u64,
    pub(super) sent: u64,
    pub(super) tx_drops: u64,
}

impl RouterCounters {
    /// These counters and `o`'s, summed (two routers side by side).
    pub(super) fn plus(self, o: &RouterCounters) -> RouterCounters {
        RouterCounters {
            received: self.received + o.received,
            ring_drops: self.ring_drops + o.ring_drops,
            queue_drops: self.queue_drops + o.queue_drops,
            sent: self.sent + o.sent,
            tx_drops: self.tx_drops + o.tx_drops,
        }
    }
}

/// Reads `bricks run --stats-json`'s last line.
pub(super) fn parse_router(text: &str) -> Option<RouterCounters> {
    let j = last_json(text)?;
    let mut c = RouterCounters::default();
    for w in j["workers"].as_array()? {
        let e = &w["elements"];
        let g = |el: &str, k: &str| e[el][k].as_u64().unwrap_or(0);
        c.received += g("rx", "count");
        c.ring_drops += g("rx", "ring_drops");
        c.queue_drops += g("q", "drops");
        c.sent += g("tx", "count");
        c.tx_drops += g("tx", "drops");
    }
    Some(c)
}

/// One run of one subject.
#[derive(Debug, Clone, Default)]
pub(super) struct RunResult {
    pub(super) gen: GenReport,
    pub(super) sink: SinkReport,
    pub(super) router: Option<RouterCounters>,
    /// How the router opened its interfaces (bricks' report lines), or
    /// where the XDP program runs.
    pub(super) notes: Vec<String>,
    /// The 1-minute load average when the run started.
    pub(super) load: f64,
    /// CPUs' worth of work that was not the bench's while the generator
    /// sent: other processes and the hypervisor's steal
    /// (`other_work`).
    pub(super) other: Option<f64>,
    /// How busy the router's CPUs were while the generator sent (0 to 1,
    /// over all of them: user, system, interrupts and softirqs, of which
    /// the XDP programs and NAPI threads), from `/proc/stat`.
    pub(super) router_busy: Option<f64>,
}

impl RunResult {
    /// Frames forwarded per second per busy router CPU (Mpps): what the
    /// router would forward with its CPUs fully busy, if its cost per
    /// frame stayed the same. `None` without a CPU measurement.
    pub(super) fn mpps_per_busy_cpu(&self) -> Option<f64> {
        let b = self.router_busy?;
        (b > 0.01).then(|| self.sink.mpps / b)
    }

    pub(super) fn offered_mpps(&self) -> f64 {
        if self.gen.elapsed > 0.0 {
            self.gen.sent as f64 / self.gen.elapsed / 1e6
        } else {
            0.0
        }
    }

    pub(super) fn loss_pct(&self) -> f64 {
        if self.gen.sent == 0 {
            return 0.0;
        }
        self.gen.sent.saturating_sub(self.sink.received) as f64 * 100.0 / self.gen.sent as f64
    }
}

/// A child process whose output is read while it runs (to see when it is
/// ready) and kept (to read its report). Killed, by its PID, if dropped
/// while it runs.
pub(super) struct Proc {
    pub(super) guard: ChildGuard,
    pub(super) lines: mpsc::Receiver<(bool, String)>,
    pub(super) stdout: Vec<String>,
    pub(super) stderr: Vec<String>,
    pub(super) readers: Vec<std::thread::JoinHandle<()>>,
}

/// How a [`Proc`] ended.
pub(super) struct Finished {
    pub(super) status: Option<ExitStatus>,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

impl Finished {
    pub(super) fn ok(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// The last lines of stderr, for an error message.
    pub(super) fn why(&self) -> String {
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
        match self.status {
            Some(s) => format!("{s}: {tail}"),
            None => format!("did not end in time: {tail}"),
        }
    }
}

impl Proc {
    pub(super) fn spawn(cmd: &mut Command) -> Result<Proc, Error> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut guard = ChildGuard::spawn(cmd)?;
        let (tx, lines) = mpsc::channel();
        let mut readers = Vec::new();
        let child = guard.child_mut();
        let streams: [(bool, Option<Box<dyn std::io::Read + Send>>); 2] = [
            (false, child.stdout.take().map(|s| Box::new(s) as _)),
            (true, child.stderr.take().map(|s| Box::new(s) as _)),
        ];
        for (is_err, s) in streams {
            let Some(s) = s else { continue };
            let tx = tx.clone();
            readers.push(std::thread::spawn(move || {
                for l in std::io::BufReader::new(s).lines() {
                    let Ok(l) = l else { break };
                    if tx.send((is_err, l)).is_err() {
                        break;
                    }
                }
            }));
        }
        Ok(Proc {
            guard,
            lines,
            stdout: Vec::new(),
            stderr: Vec::new(),
            readers,
        })
    }

    pub(super) fn take(&mut self, (is_err, l): (bool, String)) {
        if is_err {
            self.stderr.push(l);
        } else {
            self.stdout.push(l);
        }
    }

    /// Reads output until `ready` says so (true), the process ends, or
    /// the time is up (false).
    pub(super) fn wait_ready(
        &mut self,
        timeout: Duration,
        cancel: &AtomicBool,
        ready: impl Fn(&[String], &[String]) -> bool,
    ) -> bool {
        let end = Instant::now() + timeout;
        loop {
            if ready(&self.stdout, &self.stderr) {
                return true;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() || cancel.load(Ordering::Relaxed) {
                return false;
            }
            match self.lines.recv_timeout(left.min(Duration::from_millis(50))) {
                Ok(l) => self.take(l),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if self.guard.try_wait().is_some() {
                        // Ended: whatever it printed is read below.
                        while let Ok(l) = self.lines.recv_timeout(Duration::from_millis(200)) {
                            self.take(l);
                        }
                        return ready(&self.stdout, &self.stderr);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return ready(&self.stdout, &self.stderr)
                }
            }
        }
    }

    /// Asks it to stop (SIGTERM).
    pub(super) fn terminate(&mut self) {
        self.guard.signal(libc::SIGTERM);
    }

    /// Waits at most `timeout` (or until `cancel`) for it to end, kills it
    /// otherwise, and returns everything it printed.
    pub(super) fn finish(mut self, timeout: Duration, cancel: &AtomicBool) -> Finished {
        let end = Instant::now() + timeout;
        let status = loop {
            if let Some(s) = self.guard.try_wait() {
                break Some(s);
            }
            if Instant::now() >= end || cancel.load(Ordering::Relaxed) {
                self.guard.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        for r in std::mem::take(&mut self.readers) {
            let _ = r.join();
        }
        while let Ok(l) = self.lines.try_recv() {
            self.take(l);
        }
        Finished {
            status,
            stdout: self.stdout.join("\n"),
            stderr: self.stderr.join("\n"),
        }
    }
}

/// The error of a `bricks PROGRAM` that printed no JSON report.
pub(super) fn no_report(program: &str, stdout: &str) -> Error {
    Error::Process(format!("bricks {program} printed no report: {stdout}"))
}

/// Runs a command to its end; an error carries its stderr.
pub(super) fn sh(mut cmd: Command) -> Result<(), Error> {
    bricks_netns::run(&mut cmd).map(drop).map_err(Error::from)
}
