//! Running one test: a fresh directory with the test's files, its
//! `%require` and `%script` run by `sh -e` with a time limit, then its
//! output files compared with their expectations.

use crate::compare::{check_file, Mismatch};
use crate::parse::ClickTest;
use crate::shell::{script_text, Command};
use std::fs;
use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How tests are run.
#[derive(Clone, Debug)]
pub struct Options {
    /// Directories put first on the scripts' `PATH` (where `click` is).
    pub path_prepend: Vec<PathBuf>,
    /// Environment variables for the scripts (`VAR=VALUE` arguments).
    pub vars: Vec<(String, String)>,
    /// Time allowed to each script (Click's default: 45 s).
    pub timeout: Duration,
    /// Keep each test's directory (Click's `--preserve-temporaries`).
    pub keep: bool,
    /// Where the test directories are made.
    pub workdir: PathBuf,
    /// The directory `./` and `$rundir` name in scripts.
    pub rundir: PathBuf,
}

impl Default for Options {
    fn default() -> Self {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Options {
            path_prepend: Vec::new(),
            vars: Vec::new(),
            timeout: Duration::from_secs(45),
            keep: false,
            workdir: std::env::temp_dir(),
            rundir: cwd,
        }
    }
}

/// How a test ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    /// What went wrong, one message per line.
    Fail(Vec<String>),
    /// A `%require` command failed: the command and its error.
    Skip(String),
}

/// The result of one test.
#[derive(Clone, Debug)]
pub struct Report {
    pub name: String,
    pub outcome: Outcome,
    /// Problems in the test file itself (reported, not failures).
    pub warnings: Vec<String>,
    /// Where the test's files are, when kept.
    pub kept: Option<PathBuf>,
    pub elapsed: Duration,
}

/// Largest file a script may write (its output is bounded like any input).
const MAX_FILE_BYTES: u64 = 256 << 20;

/// Runs `test` and compares its output.
pub fn run_test(test: &ClickTest, o: &Options) -> Report {
    let start = Instant::now();
    let mut report = Report {
        name: test.name.clone(),
        outcome: Outcome::Pass,
        warnings: test.errors.clone(),
        kept: None,
        elapsed: Duration::ZERO,
    };
    if test.script.is_empty() {
        report.outcome = Outcome::Fail(vec![format!("{}: no %script section", test.name)]);
        return report;
    }
    let dir = match tempfile::Builder::new()
        .prefix("clicktest")
        .tempdir_in(&o.workdir)
    {
        Ok(d) => d,
        Err(e) => {
            report.outcome = Outcome::Fail(vec![format!(
                "{}: making a test directory: {e}",
                o.workdir.display()
            )]);
            return report;
        }
    };
    report.outcome = run_in(test, o, dir.path());
    if o.keep {
        report.kept = Some(dir.keep());
    }
    report.elapsed = start.elapsed();
    report
}

fn run_in(test: &ClickTest, o: &Options, dir: &Path) -> Outcome {
    let rundir = o.rundir.display().to_string();
    if !test.require.is_empty() {
        if let Err(e) = fs::write(dir.join("%require"), script_text(&test.require, &rundir)) {
            return Outcome::Fail(vec![format!("writing %require: {e}")]);
        }
        match shell(dir, "%require", None, false, o) {
            Ok(0) => {}
            Ok(status) => {
                let (cmd, err) = failure(dir, &test.require, status, o, "requirement ");
                return Outcome::Skip(if err.is_empty() {
                    cmd
                } else {
                    format!("{cmd}: {}", err.join(" "))
                });
            }
            Err(e) => return Outcome::Fail(vec![format!("running %require: {e}")]),
        }
    }
    if let Err(e) = save_files(test, dir) {
        return Outcome::Fail(vec![format!("writing the test's files: {e}")]);
    }
    if let Err(e) = fs::write(dir.join("%script"), script_text(&test.script, &rundir)) {
        return Outcome::Fail(vec![format!("writing %script: {e}")]);
    }
    let stdin = test.has_file("stdin").then(|| dir.join("stdin"));
    match shell(dir, "%script", stdin.as_deref(), true, o) {
        Ok(0) => {}
        Ok(status) => {
            let (cmd, err) = failure(dir, &test.script, status, o, "");
            let mut msgs = vec![cmd];
            msgs.extend(err.into_iter().map(|l| format!("  {l}")));
            return Outcome::Fail(msgs);
        }
        Err(e) => return Outcome::Fail(vec![format!("running %script: {e}")]),
    }
    let mut msgs = Vec::new();
    for (file, alternates) in &test.expects {
        match fs::read(dir.join(file)) {
            Ok(raw) => {
                if let Some(m) = check_file(test, file, &raw, alternates) {
                    msgs.extend(mismatch_lines(&test.name, &m));
                }
            }
            Err(e) => msgs.push(format!("{}: {file}: {e}", test.name)),
        }
    }
    if msgs.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Fail(msgs)
    }
}

fn mismatch_lines(name: &str, m: &Mismatch) -> Vec<String> {
    let mut m = m.clone();
    if m.expectedline.is_none() {
        m.expectedline = Some(name.to_string());
    }
    m.to_string().lines().map(str::to_string).collect()
}

fn save_files(test: &ClickTest, dir: &Path) -> std::io::Result<()> {
    // Directories named by expected files exist too, as in Click, so a
    // script can write `sub/OUT`.
    for (name, _) in &test.expects {
        if let Some(parent) = dir.join(name).parent() {
            fs::create_dir_all(parent)?;
        }
    }
    for (name, data) in &test.files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::File::create(&path)?.write_all(data)?;
    }
    Ok(())
}

/// Runs `sh -e SCRIPT` in `dir` in a process group of its own, standard
/// error to `dir/stderr` and standard output to `dir/stdout` (or nowhere);
/// on timeout the group is killed and the status is 124, as in Click.
fn shell(
    dir: &Path,
    script: &str,
    stdin: Option<&Path>,
    keep_stdout: bool,
    o: &Options,
) -> std::io::Result<i32> {
    let stdin = match stdin {
        Some(p) => Stdio::from(fs::File::open(p)?),
        None => Stdio::null(),
    };
    let stdout = if keep_stdout {
        Stdio::from(fs::File::create(dir.join("stdout"))?)
    } else {
        Stdio::null()
    };
    let stderr_path = dir.join("stderr");
    let stderr = Stdio::from(fs::File::create(&stderr_path)?);
    let mut path = o
        .path_prepend
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>();
    path.push(std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()));
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-e")
        .arg(script)
        .current_dir(dir)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .env("PATH", path.join(":"))
        .env("LC_ALL", "C")
        .env("rundir", &o.rundir)
        .env_remove("VALGRIND");
    for (k, v) in &o.vars {
        cmd.env(k, v);
    }
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::setpgid(0, 0);
            let lim = libc::rlimit {
                rlim_cur: MAX_FILE_BYTES,
                rlim_max: MAX_FILE_BYTES,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let pgid = child.id() as i32;
    let deadline = Instant::now() + o.timeout;
    let mut delay = Duration::from_micros(100);
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s.code().unwrap_or(128);
        }
        if Instant::now() >= deadline {
            // SAFETY: signalling the process group this function created.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            let _ = child.wait();
            if let Ok(mut f) = fs::OpenOptions::new().append(true).open(&stderr_path) {
                let _ = writeln!(f, "clicktest_failure:timeout");
            }
            break 124;
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_millis(50));
    };
    // Whatever the script left behind in its group goes with it.
    // SAFETY: as above; the group is ours.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    Ok(status)
}

/// The failing command and the error output it printed, from the
/// `clicktest_lineno:` markers in `dir/stderr`.
fn failure(
    dir: &Path,
    commands: &[Command],
    status: i32,
    o: &Options,
    kind: &str,
) -> (String, Vec<String>) {
    let text = fs::read(dir.join("stderr")).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let (mut lineno, mut failure, mut errortext) = (None, None, Vec::new());
    for l in text.lines() {
        if let Some(n) = l.strip_prefix("clicktest_lineno:") {
            lineno = Some(n.to_string());
            errortext.clear();
        } else if let Some(f) = l.strip_prefix("clicktest_failure:") {
            failure = Some(f.to_string());
        } else if !l.starts_with("clicktest_subtest ") && !l.trim().is_empty() {
            errortext.push(l.to_string());
        }
    }
    let failure_text = match failure.as_deref() {
        None => format!("error {status}"),
        Some("timeout") => format!("timed out after {} s", o.timeout.as_secs_f64()),
        Some("1") => "failure".to_string(),
        Some(f) => format!("error {f}"),
    };
    let cmd = lineno
        .as_ref()
        .and_then(|n| commands.iter().find(|c| &c.lineno == n));
    let where_ = lineno.clone().unwrap_or_default();
    let head = match cmd {
        Some(c) => {
            let mut t: String = c
                .text
                .trim()
                .chars()
                .map(|ch| if ch.is_control() { '^' } else { ch })
                .collect();
            if t.chars().count() > 40 {
                t = t.chars().take(40).collect::<String>() + "...";
            }
            format!("{where_}: {kind}{failure_text} at '{t}'")
        }
        None => format!("{where_}: {kind}{failure_text} at undefined point in script"),
    };
    const MAX_LINES: usize = 20;
    if errortext.len() > MAX_LINES {
        let n = errortext.len() - MAX_LINES;
        errortext.truncate(MAX_LINES);
        errortext.push(format!("({n} more lines)"));
    }
    (head, errortext)
}
