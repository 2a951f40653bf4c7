//! What a run measured, on disk as `results.json` beside the report, so
//! that the report can be written again and two runs compared.

use crate::report::{Row, Verdict};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The format's version; a file of another version is refused.
pub const VERSION: u32 = 1;

/// The machine a run was made on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// `/proc/cpuinfo`'s model name.
    pub cpu: String,
    /// Cores (logical CPUs) online.
    pub cores: usize,
    /// `uname -r`.
    pub kernel: String,
    /// bricks' version.
    pub bricks: String,
    /// How AF_XDP ran when `bench io`'s router opened its interfaces:
    /// `native` (in the driver) or `generic` (SKB) mode, `copy` or
    /// `zero-copy`, with the kernel's reason when it fell back (`native
    /// copy` on veths); `None` when that unit did not run. Runs stored
    /// before it was recorded read as `None`.
    #[serde(default)]
    pub af_xdp: Option<String>,
}

/// Where the `routebricks:io` unit leaves the AF_XDP mode it saw, in the
/// run's `raw/` directory, for the parent to put in [`Machine::af_xdp`].
pub const AF_XDP_FILE: &str = "af_xdp.txt";

impl Machine {
    /// This machine.
    pub fn here() -> Machine {
        Machine {
            cpu: crate::measure::cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: crate::measure::kernel_release(),
            bricks: env!("CARGO_PKG_VERSION").to_string(),
            af_xdp: None,
        }
    }
}

/// A summary row as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRow {
    /// The figure or table it belongs to, as the bench labels it.
    pub experiment: String,
    /// What is compared.
    pub measure: String,
    /// The paper's value, shape or goal.
    pub paper: String,
    /// bricks' value.
    pub bricks: String,
    /// `holds`, `differs` or `not run`.
    pub verdict: String,
    /// Why.
    pub why: String,
}

impl From<&Row> for StoredRow {
    fn from(r: &Row) -> StoredRow {
        let (verdict, why) = match &r.verdict {
            Verdict::Holds(w) => ("holds", w),
            Verdict::Differs(w) => ("differs", w),
            Verdict::NotRun(w) => ("not run", w),
        };
        StoredRow {
            experiment: r.experiment.clone(),
            measure: r.measure.clone(),
            paper: r.paper.clone(),
            bricks: r.bricks.clone(),
            verdict: verdict.into(),
            why: why.clone(),
        }
    }
}

/// One unit's run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitRun {
    /// The unit's key.
    pub key: String,
    /// The command it stands for.
    pub command: String,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The share of the machine's CPU time others used just before it
    /// started (0 to 1).
    pub busy_before: f64,
    /// Its rows.
    pub rows: Vec<StoredRow>,
    /// Why it produced no rows, when it did not.
    pub error: Option<String>,
    /// Its plots, relative to the report's directory.
    pub plots: Vec<String>,
    /// Its log, relative to the report's directory.
    pub log: String,
}

/// Above this share of the CPU taken by others, a unit ran on a busy
/// machine and is marked so.
pub const BUSY: f64 = 0.2;

impl UnitRun {
    /// Whether others were using the machine when it started.
    pub fn busy(&self) -> bool {
        self.busy_before > BUSY
    }
}

/// A whole run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// [`VERSION`].
    pub version: u32,
    /// `--quick`.
    pub quick: bool,
    /// When it started, in seconds since the Unix epoch.
    pub started: u64,
    /// The papers selected, by key.
    pub papers: Vec<String>,
    /// The machine.
    pub machine: Machine,
    /// The command that made it.
    pub command: String,
    /// The units, in the order run.
    pub units: Vec<UnitRun>,
}

impl Run {
    /// The run of unit `key`.
    pub fn unit(&self, key: &str) -> Option<&UnitRun> {
        self.units.iter().find(|u| u.key == key)
    }

    /// Reads `DIR/results.json`.
    pub fn load(dir: &Path) -> Result<Run, String> {
        let path = dir.join("results.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: {e} (run `bricks reproduce -o {}` first)",
                path.display(),
                dir.display()
            )
        })?;
        let run: Run =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if run.version != VERSION {
            return Err(format!(
                "{}: results of format {}, this bricks reads {VERSION}",
                path.display(),
                run.version
            ));
        }
        Ok(run)
    }

    /// Writes `DIR/results.json`.
    pub fn save(&self, dir: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(dir.join("results.json"), text + "\n")
    }
}

/// The share of CPU time used on this machine over `window`, from
/// `/proc/stat` (0 when it cannot be read).
pub fn busy_share(window: std::time::Duration) -> f64 {
    fn sample() -> Option<(u64, u64)> {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        let line = text.lines().next()?.strip_prefix("cpu ")?;
        let v: Vec<u64> = line
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal
        let idle = v.get(3)? + v.get(4).unwrap_or(&0);
        let total: u64 = v.iter().take(8).sum();
        Some((idle, total))
    }
    let Some((i0, t0)) = sample() else {
        return 0.0;
    };
    std::thread::sleep(window);
    let Some((i1, t1)) = sample() else {
        return 0.0;
    };
    let dt = t1.saturating_sub(t0);
    if dt == 0 {
        return 0.0;
    }
    1.0 - i1.saturating_sub(i0) as f64 / dt as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_survive_the_disk() {
        let dir = std::env::temp_dir().join(format!("bricks-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let run = Run {
            version: VERSION,
            quick: true,
            started: 1,
            papers: vec!["vr".into()],
            machine: Machine::here(),
            command: "bricks reproduce vr --quick".into(),
            units: vec![UnitRun {
                key: "vr:scaling".into(),
                rows: vec![StoredRow::from(&Row {
                    experiment: "Fig. 16".into(),
                    measure: "m".into(),
                    paper: "p".into(),
                    bricks: "b".into(),
                    verdict: Verdict::Differs("why".into()),
                })],
                ..UnitRun::default()
            }],
        };
        run.save(&dir).unwrap();
        let back = Run::load(&dir).unwrap();
        assert_eq!(back, run);
        assert_eq!(back.units[0].rows[0].verdict, "differs");
        std::fs::write(dir.join("results.json"), "{\"version\": 99}").unwrap();
        assert!(Run::load(&dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(Run::load(&dir).unwrap_err().contains("bricks reproduce -o"));
    }

    /// The machine record carries the AF_XDP mode, and a results.json
    /// written before it existed still loads (without one).
    #[test]
    fn the_machine_record_carries_the_af_xdp_mode() {
        let m = Machine {
            af_xdp: Some("native copy".into()),
            ..Machine::here()
        };
        let text = serde_json::to_string(&m).unwrap();
        assert!(text.contains("\"af_xdp\":\"native copy\""), "{text}");
        assert_eq!(serde_json::from_str::<Machine>(&text).unwrap(), m);
        let old = r#"{"cpu": "c", "cores": 2, "kernel": "6.1", "bricks": "0.1.0"}"#;
        assert_eq!(serde_json::from_str::<Machine>(old).unwrap().af_xdp, None);
    }

    #[test]
    fn the_machine_is_busy_only_by_share() {
        let s = busy_share(std::time::Duration::from_millis(50));
        assert!((0.0..=1.0).contains(&s));
    }
}
