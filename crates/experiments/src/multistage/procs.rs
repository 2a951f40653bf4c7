//! The processes the namespace experiments start (`bricks run`, `gen`,
//! `sink`, `multistage`), and the JSON reports they print.

pub(crate) use crate::io::last_json;
use crate::Error;
use bricks_netns::{Captured, ChildGuard};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// An error of experiment `workload`.
pub(crate) fn run_error(workload: &str, message: impl Into<String>) -> Error {
    Error::Run {
        workload: workload.into(),
        message: message.into(),
    }
}

/// Waits at most `timeout` for `c` and returns the JSON report it printed
/// last; `who` names it in errors.
pub(crate) fn report(c: Captured, timeout: Duration, who: &str) -> Result<Value, Error> {
    let out = c
        .wait(timeout, None)
        .map_err(|e| run_error(who, e.to_string()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(run_error(
            who,
            format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    last_json(&stdout).ok_or_else(|| run_error(who, format!("printed no JSON report: {stdout}")))
}

/// What `bricks gen --json` reports.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct GenReport {
    /// Frames sent.
    pub sent: u64,
    /// Seconds it sent for.
    pub elapsed: f64,
}

impl GenReport {
    pub(crate) fn parse(j: &Value) -> Option<GenReport> {
        Some(GenReport {
            sent: j["sent"].as_u64()?,
            elapsed: j["elapsed_s"].as_f64()?,
        })
    }

    /// Frames per second offered.
    pub(crate) fn pps(&self) -> f64 {
        self.sent as f64 / self.elapsed.max(1e-9)
    }
}

/// What `bricks sink --json` reports.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct SinkReport {
    /// Distinct probes received (duplicates left out).
    pub received: u64,
    /// Probes per second between the first and the last, in millions.
    pub mpps: f64,
}

impl SinkReport {
    pub(crate) fn parse(j: &Value) -> Option<SinkReport> {
        let probes = j["probes"].as_u64()?;
        Some(SinkReport {
            received: probes.saturating_sub(j["duplicates"].as_u64().unwrap_or(0)),
            mpps: j["mpps"].as_f64().unwrap_or(0.0),
        })
    }
}

/// `ip netns exec NS nice -n -20 [taskset -c CPU] EXE ARGS...`: other
/// jobs on the machine then get little of a CPU the bench's processes
/// want, so a busy machine disturbs the figures less.
pub(crate) fn in_ns(ns: &str, cpu: Option<usize>, exe: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns, "nice", "-n", "-20"]);
    if let Some(cpu) = cpu {
        c.args(["taskset", "-c", &cpu.to_string()]);
    }
    c.arg(exe).args(args);
    c
}

/// A `bricks run` whose standard error goes to a file, so that its
/// device reports can be read while it runs; stopped when dropped.
pub(crate) struct Router {
    child: ChildGuard,
    log: PathBuf,
}

impl Router {
    /// Starts `cmd` (a `bricks run`) and waits until its standard error
    /// has a line starting with each of `ready` (the interfaces it
    /// opened).
    pub(crate) fn start(mut cmd: Command, log: PathBuf, ready: &[&str]) -> Result<Router, Error> {
        let file = std::fs::File::create(&log)?;
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(file));
        let child = ChildGuard::spawn(&mut cmd).map_err(|e| run_error("router", e.to_string()))?;
        let mut r = Router { child, log };
        let t = Instant::now();
        loop {
            let text = std::fs::read_to_string(&r.log).unwrap_or_default();
            if ready.iter().all(|p| text.lines().any(|l| l.starts_with(p))) {
                break;
            }
            if let Some(status) = r.child.try_wait() {
                return Err(run_error(
                    "router",
                    format!("ended while starting ({status}): {}", text.trim()),
                ));
            }
            if t.elapsed() > Duration::from_secs(20) {
                return Err(run_error(
                    "router",
                    format!("not up after 20 s: {}", text.trim()),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        Ok(r)
    }

    /// The lines of its standard error that start with one of `prefixes`.
    pub(crate) fn lines(&self, prefixes: &[&str]) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| prefixes.iter().any(|p| l.starts_with(p)))
            .map(str::to_string)
            .collect()
    }

    /// Whether it still runs.
    pub(crate) fn running(&mut self) -> bool {
        self.child.try_wait().is_none()
    }

    /// Stops it (SIGTERM, SIGKILL after a grace).
    pub(crate) fn stop(mut self) {
        self.child.stop(Duration::from_secs(3));
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Runs `cmd` to its end within `timeout`; an error carries its output.
pub(crate) fn run_checked(
    cmd: &mut Command,
    timeout: Duration,
    who: &str,
) -> Result<String, Error> {
    let out =
        bricks_netns::output_timeout(cmd, timeout).map_err(|e| run_error(who, e.to_string()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(run_error(who, format!("{}: {}", out.status, text.trim())));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_read_from_the_last_json_line() {
        let text = "opening eth0\n{\"sent\": 10, \"elapsed_s\": 2.0}\n";
        let g = GenReport::parse(&last_json(text).unwrap()).unwrap();
        assert_eq!(g.sent, 10);
        assert_eq!(g.pps(), 5.0);
        let j = last_json("{\"probes\": 12, \"duplicates\": 2, \"mpps\": 0.5}\nbye").unwrap();
        let s = SinkReport::parse(&j).unwrap();
        assert_eq!((s.received, s.mpps), (10, 0.5));
        assert!(last_json("no json\n[1, 2]").is_none());
        assert!(GenReport::parse(&serde_json::json!({"sent": 1})).is_none());
    }
}
