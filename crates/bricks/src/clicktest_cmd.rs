//! `bricks clicktest`: runs tests in Click's `.clicktest` format with
//! bricks standing in for Click's `click` driver.

use bricks_clicktest::{find_tests, parse_file, run_test, Options, Outcome, Report};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Run test cases in Click's `.clicktest` format.
///
/// Each test is a shell script (`%script`) with input files (`%file`,
/// `%stdin`) and expected outputs (`%expect FILE`, `%stdout`, `%stderr`;
/// `%expectv` byte for byte, `%expectx` line regexes; `%ignore` patterns);
/// a failing `%require` command skips it. Scripts run with `sh -e` in a
/// fresh directory, with `click` (and `click-buildtool provides`) on
/// their PATH answered by bricks. A test passes when every command
/// succeeds and every output matches: blank lines and trailing whitespace
/// do not count, and `{{ }}` in an expected line holds a Perl regular
/// expression. The format is Click's `test/clicktest` script's.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    bricks clicktest tests/clicktest\n  \
    bricks clicktest -V tests/clicktest/counter.clicktest\n  \
    bricks clicktest --reasons -j 2 ~/click/test")]
pub struct ClicktestArgs {
    /// Test files, or directories searched recursively for `*.clicktest`;
    /// `VAR=VALUE` words set environment variables for the scripts.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Print every test's result and the output of failing ones in full.
    #[arg(short = 'V', long)]
    verbose: bool,
    /// Print only failures and the summary.
    #[arg(short, long)]
    quiet: bool,
    /// Keep each test's directory (its files, `stdout`, `stderr`).
    #[arg(long = "preserve-temporaries", alias = "keep")]
    keep: bool,
    /// Put DIR first on the scripts' PATH (to run another `click`).
    #[arg(short, long = "path", value_name = "DIR")]
    path: Vec<PathBuf>,
    /// Seconds allowed to each script.
    #[arg(short, long, default_value_t = 45.0)]
    timeout: f64,
    /// Tests run at once.
    #[arg(short, long, default_value_t = 1)]
    jobs: usize,
    /// After the summary, count why tests failed or were skipped (missing
    /// element classes, missing Click tools, output that differs).
    #[arg(long)]
    reasons: bool,
}

/// A directory holding `click`, `click-align`, `click-buildtool`,
/// `click-combine`, `click-fastclassifier`, `click-flatten`,
/// `click-uncombine`, `click-undead` and `click-xform`, links to this
/// program, removed when dropped.
fn tool_dir() -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("bricks-click").tempdir()?;
    let exe = std::env::current_exe()?;
    for name in [
        "click",
        "click-align",
        "click-buildtool",
        "click-combine",
        "click-fastclassifier",
        "click-flatten",
        "click-uncombine",
        "click-undead",
        "click-xform",
        "clicktest",
    ] {
        std::os::unix::fs::symlink(&exe, dir.path().join(name))?;
    }
    Ok(dir)
}

pub fn clicktest(a: &ClicktestArgs) -> anyhow::Result<ExitCode> {
    let tools = tool_dir()?;
    let mut o = Options {
        timeout: Duration::from_secs_f64(a.timeout.max(0.1)),
        keep: a.keep,
        ..Options::default()
    };
    let cwd = std::env::current_dir()?;
    for p in &a.path {
        o.path_prepend.push(if p.is_absolute() {
            p.clone()
        } else {
            cwd.join(p)
        });
    }
    o.path_prepend.push(tools.path().to_path_buf());
    let mut paths = Vec::new();
    for w in &a.paths {
        match w.split_once('=') {
            Some((k, v))
                if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                o.vars.push((k.to_string(), v.to_string()))
            }
            _ => paths.push(PathBuf::from(w)),
        }
    }
    let files = find_tests(&paths)?;
    if files.is_empty() {
        anyhow::bail!("no .clicktest files in {}", a.paths.join(" "));
    }
    let next = AtomicUsize::new(0);
    let out = Mutex::new(Tally::default());
    std::thread::scope(|s| {
        for _ in 0..a.jobs.clamp(1, 64) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(f) = files.get(i) else { break };
                let reports = run_file(f, &o);
                let mut t = out.lock().unwrap_or_else(|e| e.into_inner());
                for r in reports {
                    t.record(&r, a);
                }
            });
        }
    });
    let t = out.into_inner().unwrap_or_else(|e| e.into_inner());
    println!(
        "clicktest: {} passed, {} failed, {} skipped",
        t.passed, t.failed, t.skipped
    );
    if a.reasons && !t.reasons.is_empty() {
        let mut v: Vec<(&String, &usize)> = t.reasons.iter().collect();
        v.sort_by(|x, y| y.1.cmp(x.1).then(x.0.cmp(y.0)));
        println!("\nwhy tests failed or were skipped (tests: reason):");
        for (r, n) in v {
            println!("  {n:>4}  {r}");
        }
    }
    let attempts = t.passed + t.failed + t.skipped;
    Ok(if t.failed > 0 || (attempts > 0 && t.skipped == attempts) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn run_file(f: &Path, o: &Options) -> Vec<Report> {
    match parse_file(f) {
        Ok(tests) => tests.iter().map(|t| run_test(t, o)).collect(),
        Err(e) => vec![Report {
            name: f.display().to_string(),
            outcome: Outcome::Fail(vec![format!("{}: {e}", f.display())]),
            warnings: Vec::new(),
            kept: None,
            elapsed: Duration::ZERO,
        }],
    }
}

#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
    skipped: usize,
    reasons: BTreeMap<String, usize>,
}

impl Tally {
    fn record(&mut self, r: &Report, a: &ClicktestArgs) {
        for w in &r.warnings {
            eprintln!("{w}");
        }
        let kept = r
            .kept
            .as_ref()
            .map(|k| format!(" [kept in {}]", k.display()))
            .unwrap_or_default();
        match &r.outcome {
            Outcome::Pass => {
                self.passed += 1;
                if !a.quiet {
                    println!("PASS {} ({:.2} s){kept}", r.name, r.elapsed.as_secs_f64());
                }
            }
            Outcome::Skip(why) => {
                self.skipped += 1;
                // Without its FILE:LINE, alike requirements count together.
                let what = why.split_once(": ").map_or(why.as_str(), |(_, w)| w);
                *self
                    .reasons
                    .entry(format!("skipped: {}", shorten(what)))
                    .or_default() += 1;
                if !a.quiet {
                    println!("SKIP {}: requirement failed: {why}{kept}", r.name);
                }
            }
            Outcome::Fail(msgs) => {
                self.failed += 1;
                *self.reasons.entry(reason(msgs)).or_default() += 1;
                println!("FAIL {}{kept}", r.name);
                let limit = if a.verbose { usize::MAX } else { 8 };
                for m in msgs.iter().take(limit) {
                    println!("    {m}");
                }
                if msgs.len() > limit {
                    println!("    ... ({} more lines; -V shows them)", msgs.len() - limit);
                }
            }
        }
    }
}

fn shorten(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(100) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// One line saying why a test failed, to count alike failures together.
fn reason(msgs: &[String]) -> String {
    const MISSING: &str = " is a Click element that bricks does not implement yet";
    for m in msgs {
        if let Some(i) = m.find(MISSING) {
            let name = m[..i].trim_end_matches(['`', '\'']);
            let name = name.rsplit(['`', '\'', ' ']).next().unwrap_or(name);
            return format!("missing element class {name}");
        }
    }
    for m in msgs {
        if let Some(pos) = m.find(": not found") {
            let cmd = m[..pos].rsplit([' ', ':']).next().unwrap_or("");
            return format!("missing command {cmd}");
        }
    }
    if msgs.iter().any(|m| m.contains("has unexpected value")) {
        return "output differs".to_string();
    }
    // A configuration error printed as Click prints it: FILE:LINE: message.
    for m in msgs.iter().skip(1) {
        let t = m.trim();
        let mut parts = t.splitn(3, ": ");
        if let (Some(place), Some(msg)) = (parts.next(), parts.next()) {
            let rest = parts.next().map(|r| format!(": {r}")).unwrap_or_default();
            if place
                .rsplit_once(':')
                .is_some_and(|(_, n)| n.parse::<u32>().is_ok())
            {
                return format!("error: {}", shorten(&format!("{msg}{rest}")));
            }
        }
        if t.starts_with("error") {
            return shorten(t);
        }
    }
    shorten(msgs.first().map(String::as_str).unwrap_or("failed"))
}

/// Bricks called as `clicktest`: Click's `clicktest` command line
/// (`[VAR=VALUE]... [-V|-VV|-q] [-p DIR] [-t SECONDS] [-j N]
/// [--preserve-temporaries] FILE...`) with Click's messages on standard
/// error: each failure's lines, `NAME: Success!` with `-V`, and
/// `clicktest: N successes, M failures, K skipped`.
pub fn click_clicktest(args: &[String]) -> ExitCode {
    let usage = "Usage: clicktest [-VVq] [-p DIR] [-t SECONDS] [-j N] [VAR=VALUE]... [FILE]...";
    let mut o = Options::default();
    let mut verbose = 0i32;
    let mut files: Vec<PathBuf> = Vec::new();
    let mut i = 0;
    let value = |i: &mut usize, flag: &str| -> Result<String, String> {
        *i += 1;
        args.get(*i - 1)
            .cloned()
            .ok_or_else(|| format!("clicktest: '{flag}' requires a value"))
    };
    while i < args.len() {
        let a = args[i].clone();
        i += 1;
        let r: Result<(), String> = (|| {
            match a.as_str() {
                "-V" | "--verbose" => verbose = 1,
                "-VV" | "--superverbose" => verbose = 2,
                "-q" | "--quiet" => verbose = -1,
                "--preserve-temporaries" | "--preserve-temps" => o.keep = true,
                "-v" | "--version" => {
                    println!("clicktest (bricks) {}", env!("CARGO_PKG_VERSION"));
                    std::process::exit(0);
                }
                "--help" => {
                    println!("'Clicktest' is a simple test harness.\n\n{usage}");
                    std::process::exit(0);
                }
                "-p" | "--path" => o.path_prepend.push(PathBuf::from(value(&mut i, "-p")?)),
                "-t" | "--timeout" => {
                    let t: f64 = value(&mut i, "-t")?
                        .parse()
                        .map_err(|_| "clicktest: bad timeout")?;
                    o.timeout = Duration::from_secs_f64(t.max(0.1));
                }
                "-j" | "--jobs" => {
                    let _ = value(&mut i, "-j")?;
                }
                _ if a.starts_with("-p") && a.len() > 2 => {
                    o.path_prepend.push(PathBuf::from(&a[2..]))
                }
                _ if a.starts_with("-j") && a[2..].chars().all(|c| c.is_ascii_digit()) => {}
                _ if a.starts_with('-') && a != "-" => {
                    return Err(format!("clicktest: unknown option '{a}'\n{usage}"))
                }
                _ => match a.split_once('=') {
                    Some((k, v))
                        if !k.is_empty()
                            && !k.starts_with(|c: char| c.is_ascii_digit())
                            && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                    {
                        o.vars.push((k.to_string(), v.to_string()))
                    }
                    _ => files.push(PathBuf::from(&a)),
                },
            }
            Ok(())
        })();
        if let Err(e) = r {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    for p in &mut o.path_prepend {
        if p.is_relative() {
            *p = cwd.join(&*p);
        }
    }
    let tools = match tool_dir() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("clicktest: {e}");
            return ExitCode::from(2);
        }
    };
    o.path_prepend.push(tools.path().to_path_buf());
    let files = match find_tests(&files) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("clicktest: {e}");
            return ExitCode::from(2);
        }
    };
    let (mut successes, mut failures, mut skips, mut bad_files) = (0usize, 0usize, 0usize, 0usize);
    let mut blocked: Vec<String> = Vec::new();
    for f in &files {
        let tests = match parse_file(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{}: {e}", f.display());
                bad_files += 1;
                continue;
            }
        };
        for t in &tests {
            for w in &t.errors {
                eprintln!("{w}");
            }
            if verbose == 1 {
                eprintln!("{}: Running...", t.name);
            } else if verbose > 1 && !t.info.trim().is_empty() {
                let first = t
                    .info
                    .trim_start_matches('\n')
                    .split("\n\n")
                    .next()
                    .unwrap_or("");
                eprintln!("{} Information:", t.name);
                for l in first.lines() {
                    eprintln!("  {l}");
                }
            }
            let r = run_test(t, &o);
            match &r.outcome {
                Outcome::Pass => {
                    successes += 1;
                    if verbose > 0 {
                        eprintln!("{}: Success!", t.name);
                    }
                }
                Outcome::Fail(msgs) => {
                    failures += 1;
                    for m in msgs {
                        // Lines that continue a message are indented by
                        // two spaces here; Click repeats the place.
                        match m.strip_prefix("  ") {
                            Some(rest) => eprintln!("{}:   {rest}", place(&msgs[0])),
                            None => eprintln!("{m}"),
                        }
                    }
                }
                Outcome::Skip(why) => {
                    skips += 1;
                    if verbose > 0 {
                        eprintln!("{why}");
                    } else {
                        blocked.push(why.split_once(" at '").map_or(why.clone(), |(_, c)| {
                            c.split_once('\'').map_or(c, |(c, _)| c).to_string()
                        }));
                    }
                }
            }
        }
    }
    if !blocked.is_empty() {
        blocked.sort();
        blocked.dedup();
        let n = skips;
        eprintln!(
            "clicktest: requirement failures blocked {n} test{}, use '-V' for details",
            if n == 1 { "" } else { "s" }
        );
        eprintln!(
            "clicktest: ({} '{}')",
            if blocked.len() == 1 {
                "command"
            } else {
                "commands"
            },
            blocked.join("', '")
        );
    }
    eprintln!(
        "clicktest: {successes} {}, {failures} {}, {skips} skipped",
        if successes == 1 {
            "success"
        } else {
            "successes"
        },
        if failures == 1 { "failure" } else { "failures" }
    );
    let attempts = successes + failures + skips;
    if bad_files > 0 {
        ExitCode::from(2)
    } else if attempts == 0 || (failures == 0 && skips < attempts) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `FILE:LINE` of a message `FILE:LINE: text`.
fn place(m: &str) -> &str {
    m.split_once(": ").map_or(m, |(p, _)| p)
}
