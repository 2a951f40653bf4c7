//! `click-xform`, `click-align` and `click-undead`: Click's configuration
//! tools, with
//! Click's command lines. The work is done by `bricks_config::tools`;
//! this is the command-line glue.

use crate::click_cmd::{opt, parse_with, Opt, Value};
use bricks_config::{Options, Router, Source, SourceMap};
use std::io::Read as _;
use std::process::ExitCode;

/// Replacements `click-xform` makes before deciding that its patterns
/// undo each other.
const MAX_REPLACEMENTS: usize = 100_000;

const XFORM_OPTIONS: &[Opt] = &[
    opt("expression", Some('e'), Value::Required, false),
    opt("file", Some('f'), Value::Required, false),
    opt("help", None, Value::None, false),
    opt("output", Some('o'), Value::Required, false),
    opt("patterns", Some('p'), Value::Required, false),
    opt("reverse", Some('r'), Value::None, true),
    opt("version", Some('v'), Value::None, false),
];

const XFORM_USAGE: &str = "\
'Click-xform' replaces patterns of elements with other sets of elements inside
a Click router configuration. Both patterns and configuration are Click-
language files. The transformed router configuration is written to the
standard output.

Usage: click-xform [OPTION]... [ROUTERFILE] [PATTERNFILE]...

Options:
  -p, --patterns PATTERNFILE    Read patterns from PATTERNFILE. Can be given
                                more than once.
  -f, --file FILE               Read router configuration from FILE.
  -e, --expression EXPR         Use EXPR as router configuration.
  -o, --output FILE             Write output to FILE.
  -r, --reverse                 Apply patterns in reverse.
      --help                    Print this message and exit.
  -v, --version                 Print version number and exit.

A pattern file declares element classes in pairs: NAME, the elements to look
for, and NAME_Replacement, what replaces them. In NAME, an argument written
$VAR matches any argument (the same one wherever $VAR appears), and $VAR in
NAME_Replacement's arguments becomes what it matched. A match must use every
port of NAME, and the elements matched may be connected to the rest of the
configuration only through NAME's ports. Replacement repeats until no
pattern matches.
";

const ALIGN_OPTIONS: &[Opt] = &[
    opt("assertions", None, Value::None, true),
    opt("bsdmodule", Some('b'), Value::None, false),
    opt("expression", Some('e'), Value::Required, false),
    opt("file", Some('f'), Value::Required, false),
    opt("help", None, Value::None, false),
    opt("linuxmodule", Some('l'), Value::None, false),
    opt("output", Some('o'), Value::Required, false),
    opt("userlevel", Some('u'), Value::None, false),
    opt("verbose", Some('V'), Value::None, false),
    opt("version", Some('v'), Value::None, false),
];

const ALIGN_USAGE: &str = "\
'Click-align' adds any required 'Align' elements to a Click router
configuration. The resulting router will work on machines that don't allow
unaligned accesses. Its configuration is written to the standard output.

Usage: click-align [OPTION]... [ROUTERFILE]

Options:
  -f, --file FILE               Read router configuration from FILE.
  -e, --expression EXPR         Use EXPR as router configuration.
  -o, --output FILE             Write output to FILE.
      --assertions              Insert CheckAlign assertions, not Aligns.
  -V, --verbose                 Say why each Align element is added.
  -b, --bsdmodule               Accepted; bricks has one driver.
  -l, --linuxmodule             Accepted; bricks has one driver.
  -u, --userlevel               Accepted; bricks has one driver.
      --help                    Print this message and exit.
  -v, --version                 Print version number and exit.

bricks reads packet headers at any alignment, so it needs none of the Align
elements added; click-align is here so that Click users' scripts, which pipe
configurations through it, run unchanged. Its output runs under bricks.
";

const UNDEAD_OPTIONS: &[Opt] = &[
    opt("config", Some('c'), Value::None, true),
    opt("expression", Some('e'), Value::Required, false),
    opt("file", Some('f'), Value::Required, false),
    opt("help", None, Value::None, false),
    opt("kernel", Some('k'), Value::None, true),
    opt("output", Some('o'), Value::Required, false),
    opt("user", Some('u'), Value::None, true),
    opt("verbose", Some('V'), Value::None, true),
    opt("version", Some('v'), Value::None, false),
];

const UNDEAD_USAGE: &str = "\
'Click-undead' transforms a router configuration by removing dead code. This
includes any elements that are not connected both to a packet source and to a
packet sink. It also removes redundant elements, such as Null and StaticSwitch.

Usage: click-undead [OPTION]... [ROUTERFILE]

Options:
  -f, --file FILE               Read router configuration from FILE.
  -e, --expression EXPR         Use EXPR as router configuration.
  -o, --output FILE             Write output to FILE.
  -k, --kernel                  Accepted; bricks has one driver.
  -u, --user                    Accepted; bricks has one driver.
  -c, --config                  Write new configuration only.
  -V, --verbose                 Accepted.
      --help                    Print this message and exit.
  -v, --version                 Print version number and exit.

A source is an element with no inputs, or one of the classes Click marks as
sources (InfiniteSource, devices, sockets); a sink one with no outputs, or one
Click marks as a sink (ToDump, ToDevice, ToHost...). An element is kept when
packets can reach it from a source and leave it for a sink, following each
class's flow between its ports, or when it has no ports at all (AddressInfo,
ScheduleInfo, Script). StaticSwitch and StaticPullSwitch become the connection
they choose, Null elements their neighbours, and schedulers and tees left
with one port are bypassed. Ports that lost their connections are tied to an
Idle.
";

/// Where the configuration comes from.
enum Input {
    Stdin,
    File(String),
    Expr(String),
}

fn set_input(input: &mut Option<Input>, new: Input) -> Result<(), String> {
    if input.is_some() {
        return Err("router configuration specified twice".into());
    }
    *input = Some(new);
    Ok(())
}

/// The words after the options of a tool that reads one configuration:
/// `NAME=VALUE` defines, and the router file.
fn take_words(
    words: Vec<String>,
    input: &mut Option<Input>,
    defines: &mut Vec<(String, String)>,
) -> Result<(), String> {
    for w in words {
        if is_define(&w) {
            let (k, v) = w.split_once('=').unwrap_or_default();
            defines.push((k.to_string(), v.to_string()));
        } else {
            set_input(input, Input::File(w))?;
        }
    }
    Ok(())
}

fn is_define(word: &str) -> bool {
    match word.split_once('=') {
        Some((n, _)) => !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        None => false,
    }
}

/// An I/O error as C's `strerror` words it (Click's messages).
fn os_message(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn read_text(file: &str) -> Result<(String, String), String> {
    if file == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| format!("<stdin>: {e}"))?;
        Ok(("<stdin>".into(), s))
    } else {
        std::fs::read_to_string(file)
            .map(|s| (file.to_string(), s))
            .map_err(|e| format!("{file}: {}", os_message(&e)))
    }
}

/// Reads and expands the configuration; errors are printed.
fn read_router(input: Option<Input>, defines: &[(String, String)]) -> Option<(Router, SourceMap)> {
    let (name, text) = match input.unwrap_or(Input::Stdin) {
        Input::Stdin => read_text("-"),
        Input::File(f) => read_text(&f),
        Input::Expr(e) => Ok(("<expr>".to_string(), e)),
    }
    .map_err(|e| eprintln!("{e}"))
    .ok()?;
    let mut map = SourceMap::default();
    let options = Options {
        defines: defines.to_vec(),
        ..Options::default()
    };
    match bricks_config::parse_with(&mut map, Source::new(name, text), &options) {
        Ok(r) => Some((r, map)),
        Err(diags) => {
            for d in &diags {
                eprint!("{}", map.render_click(d, ""));
            }
            None
        }
    }
}

fn write_output(output: Option<&str>, text: &str) -> ExitCode {
    match output {
        Some(f) if f != "-" => match std::fs::write(f, text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{f}: {}", os_message(&e));
                ExitCode::from(1)
            }
        },
        _ => {
            use std::io::Write as _;
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            ExitCode::SUCCESS
        }
    }
}

/// A command-line error: the message (Click's option parser prefixes its
/// own with the program's name, the tools' other errors have none), then
/// the short usage.
fn usage_error(program: &str, synopsis: &str, message: &str) -> ExitCode {
    eprintln!("{message}");
    eprintln!("Usage: {program} {synopsis}\nTry '{program} --help' for more information.");
    ExitCode::from(1)
}

const XFORM_SYNOPSIS: &str = "[OPTION]... [ROUTERFILE] [PATTERNFILE]...";
const UNDEAD_SYNOPSIS: &str = "[OPTION]... [ROUTERFILE]";
const ALIGN_SYNOPSIS: &str = "[OPTION]... [ROUTERFILE]";

fn version(program: &str) -> String {
    format!(
        "{program} (Click) 2.1 compatible: bricks {}\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// `click-xform [OPTION]... [ROUTERFILE] [PATTERNFILE]...`
pub fn xform(args: &[String]) -> ExitCode {
    const P: &str = "click-xform";
    let (opts, words) = match parse_with(XFORM_OPTIONS, args) {
        Ok(x) => x,
        Err(e) => return usage_error(P, XFORM_SYNOPSIS, &format!("{P}: {e}")),
    };
    let mut input = None;
    let mut output: Option<String> = None;
    let mut pattern_files = Vec::new();
    let mut reverse = false;
    let mut defines = Vec::new();
    for o in opts {
        let v = o.value.unwrap_or_default();
        let r = match o.long {
            "help" => {
                print!("{XFORM_USAGE}");
                return ExitCode::SUCCESS;
            }
            "version" => {
                print!("{}", version(P));
                return ExitCode::SUCCESS;
            }
            "expression" => set_input(&mut input, Input::Expr(v)),
            "file" => set_input(&mut input, Input::File(v)),
            "patterns" => {
                pattern_files.push(v);
                Ok(())
            }
            "reverse" => {
                reverse = !o.negated;
                Ok(())
            }
            "output" if output.is_some() => Err("output file specified twice".into()),
            "output" => {
                output = Some(v);
                Ok(())
            }
            other => Err(format!("unrecognized option '--{other}'")),
        };
        if let Err(e) = r {
            return usage_error(P, XFORM_SYNOPSIS, &e);
        }
    }
    let mut first = true;
    for w in words {
        if is_define(&w) {
            let (k, v) = w.split_once('=').unwrap_or_default();
            defines.push((k.to_string(), v.to_string()));
        } else if first {
            first = false;
            if let Err(e) = set_input(&mut input, Input::File(w)) {
                return usage_error(P, XFORM_SYNOPSIS, &e);
            }
        } else {
            pattern_files.push(w);
        }
    }
    let Some((router, router_map)) = read_router(input, &defines) else {
        return ExitCode::from(1);
    };
    if pattern_files.is_empty() {
        eprintln!("warning: no patterns read");
    }
    let mut patterns = Vec::new();
    let mut failed = false;
    for f in &pattern_files {
        let (name, text) = match read_text(f) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("{e}");
                failed = true;
                continue;
            }
        };
        let mut map = SourceMap::default();
        match bricks_config::tools::read_patterns(&mut map, Source::new(name, text)) {
            Ok(p) => patterns.extend(p),
            Err(diags) => {
                for d in &diags {
                    eprint!("{}", map.render_click(d, ""));
                }
                failed = true;
            }
        }
    }
    if failed {
        return ExitCode::from(1);
    }
    if reverse {
        patterns = patterns.iter().rev().map(|p| p.reversed()).collect();
    }
    match bricks_config::tools::xform(&router, &router_map, &patterns, MAX_REPLACEMENTS) {
        Ok(x) => write_output(output.as_deref(), &x.config),
        Err(e) => {
            eprintln!("{P}: {e}");
            ExitCode::from(1)
        }
    }
}

/// `click-align [OPTION]... [ROUTERFILE]`
pub fn align(args: &[String]) -> ExitCode {
    const P: &str = "click-align";
    let (opts, words) = match parse_with(ALIGN_OPTIONS, args) {
        Ok(x) => x,
        Err(e) => return usage_error(P, ALIGN_SYNOPSIS, &format!("{P}: {e}")),
    };
    let mut input = None;
    let mut output: Option<String> = None;
    let mut assertions = false;
    let mut verbose = false;
    let mut defines = Vec::new();
    let mut driver = false;
    for o in opts {
        let v = o.value.unwrap_or_default();
        let r = match o.long {
            "help" => {
                print!("{ALIGN_USAGE}");
                return ExitCode::SUCCESS;
            }
            "version" => {
                print!("{}", version(P));
                return ExitCode::SUCCESS;
            }
            "expression" => set_input(&mut input, Input::Expr(v)),
            "file" => set_input(&mut input, Input::File(v)),
            "assertions" => {
                assertions = !o.negated;
                Ok(())
            }
            "verbose" => {
                verbose = true;
                Ok(())
            }
            "userlevel" | "linuxmodule" | "bsdmodule" if driver => {
                Err("driver specified twice".into())
            }
            "userlevel" | "linuxmodule" | "bsdmodule" => {
                driver = true;
                Ok(())
            }
            "output" if output.is_some() => Err("output file specified twice".into()),
            "output" => {
                output = Some(v);
                Ok(())
            }
            other => Err(format!("unrecognized option '--{other}'")),
        };
        if let Err(e) = r {
            return usage_error(P, ALIGN_SYNOPSIS, &e);
        }
    }
    if let Err(e) = take_words(words, &mut input, &mut defines) {
        return usage_error(P, ALIGN_SYNOPSIS, &e);
    }
    let Some((router, router_map)) = read_router(input, &defines) else {
        return ExitCode::from(1);
    };
    let a = bricks_config::tools::align(&router, &router_map, assertions, verbose);
    for n in &a.notes {
        eprintln!("{n}");
    }
    match a.aligns_added {
        0 => {}
        1 => eprintln!("warning: added 1 Align element"),
        n => eprintln!("warning: added {n} Align elements"),
    }
    write_output(output.as_deref(), &a.config)
}

/// `click-undead [OPTION]... [ROUTERFILE]`
pub fn undead(args: &[String]) -> ExitCode {
    const P: &str = "click-undead";
    let (opts, words) = match parse_with(UNDEAD_OPTIONS, args) {
        Ok(x) => x,
        Err(e) => return usage_error(P, UNDEAD_SYNOPSIS, &format!("{P}: {e}")),
    };
    let mut input = None;
    let mut output: Option<String> = None;
    let mut defines = Vec::new();
    for o in opts {
        let v = o.value.unwrap_or_default();
        let r = match o.long {
            "help" => {
                print!("{UNDEAD_USAGE}");
                return ExitCode::SUCCESS;
            }
            "version" => {
                print!("{}", version(P));
                return ExitCode::SUCCESS;
            }
            "expression" => set_input(&mut input, Input::Expr(v)),
            "file" => set_input(&mut input, Input::File(v)),
            // One driver, and the configuration is all bricks writes.
            "config" | "kernel" | "user" | "verbose" => Ok(()),
            "output" if output.is_some() => Err("output file specified twice".into()),
            "output" => {
                output = Some(v);
                Ok(())
            }
            other => Err(format!("unrecognized option '--{other}'")),
        };
        if let Err(e) = r {
            return usage_error(P, UNDEAD_SYNOPSIS, &e);
        }
    }
    if let Err(e) = take_words(words, &mut input, &mut defines) {
        return usage_error(P, UNDEAD_SYNOPSIS, &e);
    }
    let Some((router, router_map)) = read_router(input, &defines) else {
        return ExitCode::from(1);
    };
    match bricks_config::tools::undead(&router, &router_map) {
        Ok(u) => {
            for m in &u.messages {
                eprintln!("{m}");
            }
            write_output(output.as_deref(), &u.config)
        }
        Err(messages) => {
            for m in &messages {
                eprintln!("{m}");
            }
            ExitCode::from(1)
        }
    }
}
