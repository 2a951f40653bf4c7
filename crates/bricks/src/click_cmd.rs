//! `click`: Click's user-level driver command line, run by bricks.
//!
//! The bricks binary answers to the name `click` (a link or copy named
//! `click`, or `bricks click ARGS`): Click's options, parsed the way
//! Click's CLP library parses them (bundled short options such as `-qo-`
//! or `-qh c.count`, `--opt=value`, unique prefixes of long options,
//! `--no-` negations), become the matching `bricks run` arguments. Also
//! `click-buildtool provides FEATURE...`, which Click's tests use to skip
//! what a build lacks.

use std::ffi::OsString;
use std::process::ExitCode;

/// A Click driver option.
pub(crate) struct Opt {
    long: &'static str,
    short: Option<char>,
    value: Value,
    negatable: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value {
    None,
    Required,
    Optional,
}

const OPTIONS: &[Opt] = &[
    opt("allow-reconfigure", Some('R'), Value::None, true),
    opt("clickpath", Some('C'), Value::Required, false),
    opt("expression", Some('e'), Value::Required, false),
    opt("dpdk", None, Value::None, false),
    opt("file", Some('f'), Value::Required, false),
    opt("handler", Some('h'), Value::Required, false),
    opt("help", None, Value::None, false),
    opt("output", Some('o'), Value::Required, false),
    opt("socket", None, Value::Required, false),
    opt("port", Some('p'), Value::Required, false),
    opt("quit", Some('q'), Value::None, false),
    opt("simtime", None, Value::Optional, false),
    opt("simulation-time", None, Value::Optional, false),
    opt("threads", Some('j'), Value::Required, false),
    opt("cpu", None, Value::Optional, true),
    opt("affinity", Some('a'), Value::Optional, true),
    opt("time", Some('t'), Value::None, false),
    opt("unix-socket", Some('u'), Value::Required, false),
    opt("version", Some('v'), Value::None, false),
    opt("warnings", None, Value::None, true),
    opt("exit-handler", Some('x'), Value::Required, false),
    opt("", Some('w'), Value::None, false),
];

pub(crate) const fn opt(
    long: &'static str,
    short: Option<char>,
    value: Value,
    negatable: bool,
) -> Opt {
    Opt {
        long,
        short,
        value,
        negatable,
    }
}

/// One option as parsed: its long name, whether `--no-` negated it, and
/// its value.
pub(crate) struct Parsed {
    pub long: &'static str,
    pub negated: bool,
    pub value: Option<String>,
}

const USAGE: &str = "\
'click' runs a Click router configuration with bricks. It installs the
configuration, reporting any errors to standard error, and then runs it
until it stops.

Usage: click [OPTION]... [ROUTERFILE] [PARAM=VALUE]...

Options:
  -f, --file FILE               Read router configuration from FILE.
  -e, --expression EXPR         Use EXPR as router configuration.
  -j, --threads N               Start N threads (bricks workers).
  -a, --affinity[=N]            Pin threads to CPUs (the default); --no-affinity
                                does not.
  -p, --port PORT               Listen for control connections on TCP PORT
                                of 127.0.0.1 (PORT+: the first free port).
  -u, --unix-socket FILE        Listen for control connections on Unix socket
                                FILE (bricks run --control).
  -R, --allow-reconfigure       Accepted; the `hotconfig` write handler
                                (hot swap) is always there.
  -h, --handler ELEMENT.H       Call ELEMENT's read handler H after running
                                driver and print result to standard output.
  -x, --exit-handler ELEMENT.H  Use handler ELEMENT.H value for exit status.
  -o, --output FILE             Write flattened router configuration to FILE.
  -q, --quit                    Do not run driver.
  -t, --time                    Print information on how long driver took.
  -w, --no-warnings             Do not print warnings.
      --simtime                 Run in simulation time.
  -C, --clickpath PATH          Accepted and ignored.
      --help                    Print this message and exit.
  -v, --version                 Print version number and exit.

bricks' own options are reached with `bricks run --help`.
";

fn find_long(options: &'static [Opt], name: &str) -> Result<(&'static Opt, bool), String> {
    let (name, negated) = match name.strip_prefix("no-") {
        Some(rest)
            if !options
                .iter()
                .any(|o| !o.long.is_empty() && o.long.starts_with(name)) =>
        {
            (rest, true)
        }
        _ => (name, false),
    };
    if let Some(o) = options
        .iter()
        .find(|o| !o.long.is_empty() && o.long == name)
    {
        return check_negation(o, negated, name);
    }
    let matches: Vec<&Opt> = options
        .iter()
        .filter(|o| !o.long.is_empty() && o.long.starts_with(name))
        .collect();
    match matches.as_slice() {
        [o] => check_negation(o, negated, name),
        [] => Err(format!("unrecognized option '--{name}'")),
        _ => Err(format!("option '--{name}' is ambiguous")),
    }
}

fn check_negation(
    o: &'static Opt,
    negated: bool,
    name: &str,
) -> Result<(&'static Opt, bool), String> {
    if negated && !o.negatable {
        Err(format!("unrecognized option '--no-{name}'"))
    } else {
        Ok((o, negated))
    }
}

/// Splits Click's command line into options and other words, as CLP does.
fn parse(args: &[String]) -> Result<(Vec<Parsed>, Vec<String>), String> {
    parse_with(OPTIONS, args)
}

/// Splits a Click tool's command line into the options of `options` and
/// other words, as CLP does.
pub(crate) fn parse_with(
    options: &'static [Opt],
    args: &[String],
) -> Result<(Vec<Parsed>, Vec<String>), String> {
    let mut opts = Vec::new();
    let mut words = Vec::new();
    for item in parse_ordered(options, args)? {
        match item {
            Item::Opt(o) => opts.push(o),
            Item::Word(w) => words.push(w),
        }
    }
    Ok((opts, words))
}

/// One piece of a Click tool's command line.
pub(crate) enum Item {
    Opt(Parsed),
    Word(String),
}

/// A Click tool's command line as CLP reads it, options and other words
/// in the order given: for tools whose options apply in order
/// (click-combine's `-n NAME` names the next router read).
pub(crate) fn parse_ordered(options: &'static [Opt], args: &[String]) -> Result<Vec<Item>, String> {
    let mut items = Vec::new();
    let mut i = 0;
    let mut only_words = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if only_words || a == "-" || !a.starts_with('-') {
            items.push(Item::Word(a.clone()));
            continue;
        }
        if a == "--" {
            only_words = true;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let (o, negated) = find_long(options, name)?;
            let value = match (o.value, attached) {
                (Value::None, Some(_)) => return Err(format!("'--{}' takes no value", o.long)),
                (Value::Required, None) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Some(v.clone())
                    }
                    None => return Err(format!("'--{}' requires a value", o.long)),
                },
                (_, v) => v,
            };
            items.push(Item::Opt(Parsed {
                long: o.long,
                negated,
                value,
            }));
            continue;
        }
        // Bundled short options: `-qo-` is -q then -o with value `-`.
        let chars: Vec<char> = a[1..].chars().collect();
        let mut j = 0;
        while j < chars.len() {
            let c = chars[j];
            j += 1;
            let Some(o) = options.iter().find(|o| o.short == Some(c)) else {
                return Err(format!("unrecognized option '-{c}'"));
            };
            let rest: String = chars[j..].iter().collect();
            let value = match o.value {
                Value::None => None,
                Value::Optional => {
                    j = chars.len();
                    (!rest.is_empty()).then_some(rest)
                }
                Value::Required => {
                    j = chars.len();
                    if !rest.is_empty() {
                        Some(rest)
                    } else if let Some(v) = args.get(i) {
                        i += 1;
                        Some(v.clone())
                    } else {
                        return Err(format!("'-{c}' requires a value"));
                    }
                }
            };
            let long = if o.short == Some('w') {
                "no-warnings"
            } else {
                o.long
            };
            items.push(Item::Opt(Parsed {
                long,
                negated: false,
                value,
            }));
        }
    }
    Ok(items)
}

/// What the `click` command line asks for.
pub enum Invocation {
    /// Print this and exit with success.
    Print(String),
    /// `bricks run` with these arguments; `time` when `-t` asks for the
    /// times taken.
    Run { argv: Vec<OsString>, time: bool },
}

/// Whether `word` is a `NAME=VALUE` parameter (a name of letters, digits
/// and `_` before the `=`), as Click's driver tells them from files.
fn is_param(word: &str) -> bool {
    match word.split_once('=') {
        Some((n, _)) => !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        None => false,
    }
}

/// Turns Click's driver arguments into a `bricks run` command line.
pub fn translate(args: &[String]) -> Result<Invocation, String> {
    let (opts, words) = parse(args)?;
    let mut run: Vec<OsString> = vec![
        "bricks".into(),
        "run".into(),
        "--quiet".into(),
        "--error-format=click".into(),
    ];
    let mut config: Option<(bool, String)> = None;
    let mut time = false;
    let mut set_config = |is_expr: bool, v: String| {
        if config.is_some() {
            return Err("router configuration specified twice".to_string());
        }
        config = Some((is_expr, v));
        Ok(())
    };
    let mut params = Vec::new();
    for w in words {
        if is_param(&w) {
            params.push(w);
        } else {
            set_config(false, w)?;
        }
    }
    for p in opts {
        let v = p.value.clone().unwrap_or_default();
        match p.long {
            "help" => return Ok(Invocation::Print(USAGE.to_string())),
            "version" => {
                return Ok(Invocation::Print(format!(
                    "click (Click) 2.1 compatible: bricks {}\n",
                    env!("CARGO_PKG_VERSION")
                )))
            }
            "expression" => set_config(true, v)?,
            "file" => set_config(false, v)?,
            "handler" => run.extend(["-h".into(), v.into()]),
            "exit-handler" => run.extend(["-x".into(), v.into()]),
            "quit" => run.push("-q".into()),
            "threads" => {
                let n: i64 = v.parse().map_err(|_| format!("'--threads' expects an integer, not '{v}'"))?;
                run.extend(["-t".into(), n.max(1).to_string().into()]);
            }
            "affinity" | "cpu" if p.negated => run.push("--no-pin".into()),
            "affinity" | "cpu" => {}
            "simtime" | "simulation-time" => match p.value {
                Some(s) => run.push(format!("--simtime={s}").into()),
                // Spelled out: bricks' optional value would take the next word.
                None => run.push("--simtime=1000000000".into()),
            },
            "unix-socket" => run.extend(["--control".into(), v.into()]),
            "time" => time = true,
            "allow-reconfigure" | "clickpath" | "warnings" | "no-warnings" => {}
            "output" => run.extend(["-o".into(), v.into()]),
            "port" => run.extend(["--click-port".into(), v.into()]),
            "socket" => {
                return Err(format!(
                    "'--{}' (a TCP control socket) is not available: use '-u FILE' or bricks run --control",
                    p.long
                ))
            }
            "dpdk" => return Err("'--dpdk' is not available: bricks reads devices itself".into()),
            other => return Err(format!("unrecognized option '--{other}'")),
        }
    }
    match config {
        Some((true, e)) => run.extend(["-e".into(), e.into()]),
        Some((false, f)) => run.push(f.into()),
        // Click reads the configuration from standard input.
        None => run.push("-".into()),
    }
    run.extend(params.into_iter().map(OsString::from));
    Ok(Invocation::Run { argv: run, time })
}

/// CPU times of this process, user and system.
fn cpu_times() -> (std::time::Duration, std::time::Duration) {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let d = |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (d(ru.ru_utime), d(ru.ru_stime))
}

/// Click's `-t` line: user and system CPU seconds, then wall time.
pub fn time_line(
    user: std::time::Duration,
    sys: std::time::Duration,
    wall: std::time::Duration,
) -> String {
    let wall_cs = (wall.as_millis() + 5) / 10;
    format!(
        "{:.3}u {:.3}s {}:{:02}.{:02}",
        user.as_secs_f64(),
        sys.as_secs_f64(),
        wall_cs / 6000,
        (wall_cs / 100) % 60,
        wall_cs % 100
    )
}

/// Runs the driver command line `args` (without the program name) with
/// `run`, the `bricks run` entry point.
pub fn click(args: &[String], run: impl FnOnce(Vec<OsString>) -> ExitCode) -> ExitCode {
    match translate(args) {
        Ok(Invocation::Print(t)) => {
            print!("{t}");
            ExitCode::SUCCESS
        }
        Ok(Invocation::Run { argv, time }) => {
            let (u0, s0) = cpu_times();
            let t0 = std::time::Instant::now();
            let code = run(argv);
            if time {
                let (u1, s1) = cpu_times();
                println!(
                    "{}",
                    time_line(u1.saturating_sub(u0), s1.saturating_sub(s0), t0.elapsed())
                );
            }
            code
        }
        Err(e) => {
            eprintln!("click: {e}");
            eprintln!(
                "Usage: click [OPTION]... [ROUTERFILE]\nTry 'click --help' for more information."
            );
            ExitCode::from(1)
        }
    }
}

/// Build features bricks has, as `click-buildtool provides` names them.
const FEATURES: &[&str] = &[
    "userlevel",
    "umultithread",
    "int64",
    "ip6",
    "pcap",
    "linux",
    "stride",
];

/// `click-buildtool provides FEATURE...`: success when bricks has every
/// feature or element class named. Other `click-buildtool` commands are
/// not available.
pub fn buildtool(args: &[String]) -> ExitCode {
    match args.first().map(String::as_str) {
        Some("provides") => {
            let reg = bricks_elements::registry();
            let missing: Vec<&String> = args[1..]
                .iter()
                .filter(|f| !FEATURES.contains(&f.as_str()) && reg.get(f).is_none())
                .collect();
            if missing.is_empty() {
                ExitCode::SUCCESS
            } else {
                let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
                eprintln!(
                    "click-buildtool: bricks does not provide {}",
                    names.join(", ")
                );
                ExitCode::from(1)
            }
        }
        Some("--help") | None => {
            println!("Usage: click-buildtool provides FEATURE...\n\nExits with success when bricks provides every FEATURE: an element class or a\nbuild feature ({}).", FEATURES.join(", "));
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("click-buildtool: '{other}' is not available in bricks (only 'provides')");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(args: &[&str]) -> Vec<String> {
        match translate(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>()) {
            Ok(Invocation::Run { argv, .. }) => argv
                .into_iter()
                .map(|a| a.into_string().expect("utf-8"))
                .collect(),
            Ok(Invocation::Print(t)) => vec![t],
            Err(e) => vec![format!("error: {e}")],
        }
    }

    #[test]
    fn bundled_short_options_take_their_values() {
        assert_eq!(
            argv(&["-qh", "c.count", "F"]),
            [
                "bricks",
                "run",
                "--quiet",
                "--error-format=click",
                "-q",
                "-h",
                "c.count",
                "F"
            ]
        );
        assert_eq!(
            argv(&["-qe", "Idle"]),
            [
                "bricks",
                "run",
                "--quiet",
                "--error-format=click",
                "-q",
                "-e",
                "Idle"
            ]
        );
        assert_eq!(
            argv(&["-hc.count", "-j2", "F"]),
            [
                "bricks",
                "run",
                "--quiet",
                "--error-format=click",
                "-h",
                "c.count",
                "-t",
                "2",
                "F"
            ]
        );
        assert_eq!(
            argv(&["-qo-", "F"]),
            [
                "bricks",
                "run",
                "--quiet",
                "--error-format=click",
                "-q",
                "-o",
                "-",
                "F"
            ]
        );
    }

    #[test]
    fn long_options_prefixes_negations_and_parameters() {
        assert_eq!(
            argv(&[
                "--simtime",
                "--thr=3",
                "--no-affinity",
                "F",
                "A=1",
                "B_2=x=y"
            ]),
            [
                "bricks",
                "run",
                "--quiet",
                "--error-format=click",
                "--simtime=1000000000",
                "-t",
                "3",
                "--no-pin",
                "F",
                "A=1",
                "B_2=x=y"
            ]
        );
        assert_eq!(
            argv(&["--simtime=5", "-e", "x"]),
            [
                "bricks",
                "run",
                "--quiet",
                "--error-format=click",
                "--simtime=5",
                "-e",
                "x"
            ]
        );
        assert_eq!(
            argv(&["-p", "41900+", "x.click"]),
            [
                "bricks",
                "run",
                "--quiet",
                "--error-format=click",
                "--click-port",
                "41900+",
                "x.click"
            ]
        );
        assert_eq!(
            argv(&["-R", "-w", "--affinity=1"]),
            ["bricks", "run", "--quiet", "--error-format=click", "-"]
        );
        assert_eq!(
            argv(&["F", "G"]),
            ["error: router configuration specified twice"]
        );
        assert_eq!(
            argv(&["--nonsense"]),
            ["error: unrecognized option '--nonsense'"]
        );
        assert_eq!(argv(&["-e"]), ["error: '-e' requires a value"]);
    }

    #[test]
    fn time_line_is_clicks() {
        use std::time::Duration;
        assert_eq!(
            time_line(
                Duration::from_millis(1234),
                Duration::from_millis(5),
                Duration::from_millis(61_237)
            ),
            "1.234u 0.005s 1:01.24"
        );
    }
}
