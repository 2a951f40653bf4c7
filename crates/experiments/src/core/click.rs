//! Click's userlevel driver as the peer of `bricks bench core`
//! (`--click PATH`): the same workloads written for Click, timed and
//! counted as whole `click FILE` processes.
//!
//! A process's start-up (parsing, element set-up, the driver's first
//! rounds) is cancelled by differences: time is (T(N) - T(N/10)) /
//! (0.9 N), instructions are callgrind's (I(210,000) - I(10,000)) /
//! 200,000, the same two points as bricks' own count. Every run prints
//! its sink's `count` handler (`click -h SINK.count FILE`, read after the
//! driver stops) and a run that did not forward every packet is an
//! error, so that a peer that drops, loops or never starts cannot print a
//! figure. `-q` is never passed: it means "do not run the driver".

use super::Workload;
use crate::measure::callgrind_command;
use crate::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Why Click does not run `w`, or `None` when it does.
pub(super) fn unsupported(w: Workload) -> Option<&'static str> {
    match w {
        Workload::Minimal | Workload::Nulls | Workload::Ipv4 | Workload::Iprouter => None,
        Workload::Ipv6 | Workload::Ipv6Flows => Some(
            "LookupIP6Route's ROUTES FILE (the 200K-prefix table) is a bricks addition; \
             Click's table takes its routes inline",
        ),
        Workload::Cluster => {
            Some("VLBNode is a bricks element (RouteBricks' cluster node); Click has none")
        }
    }
}

/// A workload written for Click.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ClickConfig {
    /// The configuration text.
    pub text: String,
    /// The element whose `count` is the packets forwarded.
    pub sink: &'static str,
    /// Packets the source makes.
    pub packets: u64,
}

/// `w`'s configuration for Click: bricks' (`super::config`) with these
/// differences, each a substitution that must match exactly once, so that
/// a change to bricks' text cannot silently leave Click running something
/// else. Click's InfiniteSource takes the same `DATA \<hex>, LIMIT N,
/// BURST 32, STOP true`.
///
/// - minimal and nulls: `StoreData(0, \<02 00 00 00 00 02 02 00 00 00 00
///   01>)` in place of `EtherRewrite(02:00:00:00:00:01,
///   02:00:00:00:00:02)` (the same 12-byte rewrite: destination, then
///   source), because Click's EtherRewrite writes where the MAC header
///   annotation points, which an InfiniteSource's packets do not have (it
///   crashes on them). nulls keeps its 8 `Null`s, Click's own element.
/// - iprouter: conf/ip-router.click with `FromDevice(eth0)` replaced by
///   the source, named `src` and with `ACTIVE false`, `FromDevice(eth1)`
///   by `Idle`, `ToDevice(ethN)` by `Discard(BURST 32)` (Click's Discard
///   pulls one packet per task run by default; bricks' ToDevice and
///   Discard pull batches), `toh :: ToHost` by `toh :: Discard`, and
///   `, MARTIANS true` removed (a bricks keyword, not Click's); plus
///   `Script(write arpq1.insert 1.0.0.2 00:00:C0:00:00:02, write
///   src.active true);` appended, because bricks' bench inserts that
///   static ARP entry through a handler before it runs (`super::engine`)
///   and Click needs it before the source starts.
/// - minimal, nulls and ipv4: the forwarding path's Discard is named `sink`, so
///   that its count can be read (a name costs nothing per packet).
pub(super) fn config(w: Workload, packets: u64) -> Result<ClickConfig, Error> {
    if let Some(why) = unsupported(w) {
        return Err(Error::Config {
            workload: w.name().into(),
            message: format!("no Click configuration: {why}"),
        });
    }
    let bricks = super::config(w, packets)?;
    let sub = |text: &str, from: &str, to: &str| substitute(w, text, from, to);
    let (text, sink) = match w {
        Workload::Minimal | Workload::Nulls => (
            sub(
                &bricks,
                "-> EtherRewrite(02:00:00:00:00:01, 02:00:00:00:00:02) -> Discard;",
                "-> StoreData(0, \\<02 00 00 00 00 02 02 00 00 00 00 01>) -> sink :: Discard;",
            )?,
            "sink",
        ),
        Workload::Ipv4 => (
            sub(
                &bricks,
                "02:00:00:00:00:02) -> Discard;",
                "02:00:00:00:00:02) -> sink :: Discard;",
            )?,
            "sink",
        ),
        Workload::Iprouter => {
            // bricks' text already has the source in FromDevice(eth0)'s
            // place, Idle for FromDevice(eth1), Discard for each ToDevice
            // and for ToHost.
            let mut t = sub(&bricks, "InfiniteSource(", "src :: InfiniteSource(")?;
            t = sub(&t, "STOP true)", "STOP true, ACTIVE false)")?;
            t = sub(
                &t,
                "todevice0 :: Discard;",
                "todevice0 :: Discard(BURST 32);",
            )?;
            t = sub(
                &t,
                "todevice1 :: Discard;",
                "todevice1 :: Discard(BURST 32);",
            )?;
            t = sub(&t, ", MARTIANS true", "")?;
            t.push_str(
                "\nScript(write arpq1.insert 1.0.0.2 00:00:C0:00:00:02, write src.active true);\n",
            );
            (t, "todevice1")
        }
        Workload::Ipv6 | Workload::Ipv6Flows | Workload::Cluster => unreachable!("refused above"),
    };
    Ok(ClickConfig {
        text,
        sink,
        packets,
    })
}

/// `text` with its one occurrence of `from` replaced by `to`.
fn substitute(w: Workload, text: &str, from: &str, to: &str) -> Result<String, Error> {
    match text.matches(from).count() {
        1 => Ok(text.replacen(from, to, 1)),
        n => Err(Error::Config {
            workload: w.name().into(),
            message: format!(
                "writing it for Click: `{from}` occurs {n} times in bricks' configuration, \
                 not once"
            ),
        }),
    }
}

/// A Click userlevel driver (`click` binary).
#[derive(Debug)]
pub(super) struct Click {
    path: PathBuf,
    /// The first line of `click --version` (`click (Click) 2.1`).
    pub version: String,
}

/// A workload's Click configuration in a file, for `click FILE`.
pub(super) struct ClickFile {
    config: ClickConfig,
    workload: Workload,
    file: tempfile::NamedTempFile,
}

impl Click {
    /// The driver at `path`, checked: it exists, is an executable file and
    /// answers `--version` as Click does.
    pub fn new(path: &Path) -> Result<Click, Error> {
        let refuse = |why: String| Error::CannotRun(format!("--click {}: {why}", path.display()));
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => refuse(
                "no such file (build Click with ./configure --enable-userlevel && make, \
                 and give its userlevel/click)"
                    .into(),
            ),
            _ => refuse(e.to_string()),
        })?;
        if !meta.is_file() {
            return Err(refuse(
                "not a file (give Click's userlevel/click binary)".into(),
            ));
        }
        if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 == 0 {
            return Err(refuse("not executable (chmod +x it)".into()));
        }
        let out = Command::new(path)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| refuse(format!("cannot run it: {e}")))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text.lines().next().unwrap_or("").trim().to_string();
        if !out.status.success() || !version.contains("(Click)") {
            return Err(refuse(format!(
                "`--version` did not answer as Click's userlevel driver does \
                 (`click (Click) 2.1`); it printed `{version}` and exited with {}",
                out.status
            )));
        }
        Ok(Click {
            path: path.to_path_buf(),
            version,
        })
    }

    /// `w` for `packets` packets, written to a temporary file that lives
    /// as long as the result.
    pub fn file(&self, w: Workload, packets: u64) -> Result<ClickFile, Error> {
        ClickFile::new(w, config(w, packets)?)
    }

    /// Runs `f` once as `click -h SINK.count FILE`; returns its wall time
    /// in seconds, start-up included, after checking that every packet
    /// reached the sink.
    pub fn run(&self, f: &ClickFile) -> Result<f64, Error> {
        let t = Instant::now();
        let out = Command::new(&self.path)
            .args(f.args())
            .stdin(Stdio::null())
            .output();
        let secs = t.elapsed().as_secs_f64();
        let out = out.map_err(|e| f.error(format!("running {}: {e}", self.path.display())))?;
        if !out.status.success() {
            return Err(f.error(format!(
                "Click ({}) exited with {}: {}",
                self.path.display(),
                out.status,
                last_lines(&String::from_utf8_lossy(&out.stderr), 5)
            )));
        }
        f.check(&String::from_utf8_lossy(&out.stdout))?;
        Ok(secs)
    }

    /// Instructions callgrind counts over one whole run of `f`, after
    /// checking that every packet reached the sink.
    pub fn instructions(&self, f: &ClickFile) -> Result<u64, Error> {
        let (instructions, stdout) = callgrind_command(&self.path, &f.args())?;
        f.check(&stdout)?;
        Ok(instructions)
    }
}

impl ClickFile {
    fn new(workload: Workload, config: ClickConfig) -> Result<ClickFile, Error> {
        let mut file = tempfile::Builder::new()
            .prefix(&format!(
                "bricks-bench-core-click-{}-{}-",
                workload.name(),
                config.packets
            ))
            .suffix(".click")
            .tempfile()?;
        file.write_all(config.text.as_bytes())?;
        file.flush()?;
        Ok(ClickFile {
            config,
            workload,
            file,
        })
    }

    fn args(&self) -> Vec<std::ffi::OsString> {
        vec![
            "-h".into(),
            format!("{}.count", self.config.sink).into(),
            self.file.path().into(),
        ]
    }

    fn error(&self, message: String) -> Error {
        Error::Run {
            workload: self.workload.name().into(),
            message,
        }
    }

    /// Refuses a run whose sink's count (what `-h SINK.count` printed)
    /// is not the packets the source made.
    fn check(&self, stdout: &str) -> Result<(), Error> {
        let count = stdout.trim().parse::<u64>().ok();
        if count == Some(self.config.packets) {
            return Ok(());
        }
        let got = count.map_or_else(|| format!("`{}`", stdout.trim()), |c| c.to_string());
        Err(self.error(format!(
            "Click's {}.count is {got} after a run of {} packets: the peer did not forward \
             what bricks forwards, so its figures would mean nothing ({})",
            self.config.sink,
            self.config.packets,
            self.file.path().display()
        )))
    }
}

/// One workload's Click runs: a timed pair of N/10 and N packets, and the
/// callgrind pair.
pub(super) struct ClickRuns<'a> {
    click: &'a Click,
    small: ClickFile,
    big: ClickFile,
    count_small: ClickFile,
    count_big: ClickFile,
}

impl<'a> ClickRuns<'a> {
    /// The files of `w`'s runs, the timed pair for `packets` (at least
    /// 10, so that N/10 is a run of its own).
    pub fn new(click: &'a Click, w: Workload, packets: u64) -> Result<ClickRuns<'a>, Error> {
        Ok(ClickRuns {
            click,
            small: click.file(w, packets / 10)?,
            big: click.file(w, packets)?,
            count_small: click.file(w, super::CALLGRIND_SMALL)?,
            count_big: click.file(w, super::CALLGRIND_BIG)?,
        })
    }

    /// One unmeasured, checked run of the callgrind pair's small file:
    /// the binary's pages come into memory, and a misconfigured peer is
    /// refused before anything is timed.
    pub fn warm_up(&self) -> Result<(), Error> {
        self.click.run(&self.count_small).map(|_| ())
    }

    /// ns per packet from one timed pair: (T(N) - T(N/10)) / (N - N/10).
    pub fn time_ns(&self) -> Result<f64, Error> {
        let small = self.click.run(&self.small)?;
        let big = self.click.run(&self.big)?;
        let packets = self.big.config.packets - self.small.config.packets;
        Ok((big - small) * 1e9 / packets.max(1) as f64)
    }

    /// Instructions per packet: callgrind's whole-program counts of the
    /// two runs, their difference over the difference in packets.
    pub fn instructions(&self) -> Result<f64, Error> {
        let small = self.click.instructions(&self.count_small)?;
        let big = self.click.instructions(&self.count_big)?;
        let packets = self.count_big.config.packets - self.count_small.config.packets;
        Ok(big.saturating_sub(small) as f64 / packets as f64)
    }
}

/// The last `n` lines of `text`, joined with " | ".
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// The Click driver the environment variable BRICKS_TEST_CLICK names, for
/// the tests that run Click; `None`, with the reason printed, without it.
#[cfg(test)]
pub(super) fn test_driver() -> Option<String> {
    let path = std::env::var("BRICKS_TEST_CLICK").ok();
    if path.is_none() {
        eprintln!(
            "skipped: no Click driver (BRICKS_TEST_CLICK=/path/to/click/userlevel/click \
             runs this test)"
        );
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_rewrites_with_store_data() {
        let c = config(Workload::Minimal, 1000).unwrap();
        assert!(!c.text.contains("EtherRewrite"), "{}", c.text);
        assert!(c
            .text
            .contains("StoreData(0, \\<02 00 00 00 00 02 02 00 00 00 00 01>) -> sink :: Discard;"));
        assert!(c.text.contains("LIMIT 1000, BURST 32, STOP true)"));
        assert_eq!((c.sink, c.packets), ("sink", 1000));
    }

    #[test]
    fn nulls_is_minimal_with_eight_nulls_for_click_too() {
        let minimal = config(Workload::Minimal, 1000).unwrap();
        let c = config(Workload::Nulls, 1000).unwrap();
        assert_eq!(c.text.matches("Null").count(), 8, "{}", c.text);
        assert!(c.text.contains(
            "-> Null -> Null -> StoreData(0, \\<02 00 00 00 00 02 02 00 00 00 00 01>) \
             -> sink :: Discard;"
        ));
        assert_eq!(c.text.replace("Null -> ", ""), minimal.text);
        assert_eq!((c.sink, c.packets), ("sink", 1000));
    }

    #[test]
    fn ipv4_names_the_forwarding_sink_only() {
        let c = config(Workload::Ipv4, 10_000).unwrap();
        assert_eq!(c.text.matches("sink :: Discard").count(), 1);
        assert!(c.text.contains(
            "EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02) -> sink :: Discard;"
        ));
        assert!(c.text.contains("c[1] -> Discard; dt[1] -> Discard;"));
        assert!(c.text.contains("LIMIT 10000,"));
        // Otherwise bricks' text as it is.
        let bricks = super::super::config(Workload::Ipv4, 10_000).unwrap();
        assert_eq!(c.text.replace("sink :: ", ""), bricks);
    }

    #[test]
    fn iprouter_is_written_for_click() {
        let c = config(Workload::Iprouter, 210_000).unwrap();
        let t = &c.text;
        assert_eq!(c.sink, "todevice1");
        // The configuration without its comments (conf/ip-router.click's
        // header explains MARTIANS; Click skips comments).
        let code: String = t
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!code.contains("MARTIANS"), "{code}");
        for gone in ["FromDevice", "ToDevice(", "ToHost"] {
            assert!(!code.contains(gone), "{gone} in {code}");
        }
        assert!(t.contains("src :: InfiniteSource(DATA \\<00 00 C0 3B 71 EF"));
        assert!(t.contains("LIMIT 210000, BURST 32, STOP true, ACTIVE false) -> c0;"));
        assert!(t.contains("Idle -> c1;"));
        assert!(t.contains("todevice0 :: Discard(BURST 32);"));
        assert!(t.contains("todevice1 :: Discard(BURST 32);"));
        assert!(t.contains("toh :: Discard;"));
        assert!(t.contains("CheckIPHeader(INTERFACES 18.26.4.1/24 1.0.0.1/8)"));
        assert!(t.trim_end().ends_with(
            "Script(write arpq1.insert 1.0.0.2 00:00:C0:00:00:02, write src.active true);"
        ));
        for name in ["arpq1", "rt", "c0", "c1", "out1", "toh"] {
            assert!(t.contains(&format!("{name} ::")), "{name} missing");
        }
    }

    #[test]
    fn workloads_without_a_click_form_say_why() {
        for w in [Workload::Ipv6, Workload::Ipv6Flows, Workload::Cluster] {
            let why = unsupported(w).unwrap();
            let e = config(w, 10).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
        for w in [
            Workload::Minimal,
            Workload::Nulls,
            Workload::Ipv4,
            Workload::Iprouter,
        ] {
            assert_eq!(unsupported(w), None);
        }
    }

    #[test]
    fn a_substitution_must_match_once() {
        let e = substitute(Workload::Minimal, "a a", "a", "b").unwrap_err();
        assert!(e.to_string().contains("occurs 2 times"), "{e}");
        let e = substitute(Workload::Minimal, "a", "c", "b").unwrap_err();
        assert!(e.to_string().contains("`c` occurs 0 times"), "{e}");
        assert_eq!(
            substitute(Workload::Minimal, "xay", "a", "b").unwrap(),
            "xby"
        );
    }

    #[test]
    fn a_missing_or_unexecutable_click_is_refused() {
        let e = Click::new(Path::new("/nonexistent/click"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--click /nonexistent/click: no such file"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let e = Click::new(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a file"), "{e}");
        let plain = dir.path().join("click");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let e = Click::new(&plain).unwrap_err().to_string();
        assert!(e.contains("not executable"), "{e}");
        // Executable, but not Click. (Not a script written here: running
        // a file just written races with other tests' forks, ETXTBSY.)
        if Path::new("/bin/echo").exists() {
            let e = Click::new(Path::new("/bin/echo")).unwrap_err().to_string();
            assert!(e.contains("did not answer as Click"), "{e}");
        }
    }

    /// Click's peer end to end, with the driver BRICKS_TEST_CLICK names
    /// (Click's `userlevel/click`); skipped without it.
    #[test]
    fn click_peer_runs_and_refuses_a_misconfigured_peer() {
        let Some(path) = test_driver() else {
            return;
        };
        let click = Click::new(Path::new(&path)).unwrap();
        assert!(click.version.contains("(Click)"));
        for w in [
            Workload::Minimal,
            Workload::Nulls,
            Workload::Ipv4,
            Workload::Iprouter,
        ] {
            let runs = ClickRuns::new(&click, w, 100_000).unwrap();
            runs.warm_up().unwrap();
            let ns = runs.time_ns().unwrap();
            // Loose: the machine may be busy; a peer that did nothing
            // was refused by the count check already.
            assert!(ns.is_finite() && ns < 100_000.0, "{w:?}: {ns} ns/packet");
        }
        // The router without its ARP entry holds the packets for ARP and
        // sends queries instead: refused, naming the workload.
        let mut c = config(Workload::Iprouter, 10_000).unwrap();
        c.text = c
            .text
            .replace("write arpq1.insert 1.0.0.2 00:00:C0:00:00:02, ", "");
        let f = ClickFile::new(Workload::Iprouter, c).unwrap();
        let e = click.run(&f).unwrap_err().to_string();
        assert!(
            e.starts_with("workload iprouter: Click's todevice1.count is "),
            "{e}"
        );
        // A configuration Click refuses: its error, naming the workload.
        let mut c = config(Workload::Minimal, 10).unwrap();
        c.text = c.text.replace("StoreData", "NoSuchElement");
        let f = ClickFile::new(Workload::Minimal, c).unwrap();
        let e = click.run(&f).unwrap_err().to_string();
        assert!(e.starts_with("workload minimal: Click ("), "{e}");
        if crate::measure::valgrind_available() {
            let runs = ClickRuns::new(&click, Workload::Minimal, 100_000).unwrap();
            let i = runs.instructions().unwrap();
            assert!(i > 10.0 && i < 100_000.0, "{i} instructions/packet");
        }
    }

    #[test]
    fn a_run_that_lost_packets_is_refused() {
        let f = Click {
            path: PathBuf::from("/bin/true"),
            version: String::new(),
        }
        .file(Workload::Minimal, 100)
        .unwrap();
        assert!(f.check("100\n").is_ok());
        let e = f.check("99\n").unwrap_err().to_string();
        assert!(
            e.starts_with("workload minimal: Click's sink.count is 99 after a run of 100"),
            "{e}"
        );
        let e = f.check("").unwrap_err().to_string();
        assert!(e.contains("is `` after"), "{e}");
    }
}
