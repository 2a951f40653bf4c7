//! `click-xform`, `click-align`, `click-undead`, `click-combine` and
//! `click-uncombine`: Click's configuration tools, with Click's command
//! lines. The work is done by `bricks_config::tools`;
//! this is the command-line glue.

use crate::click_cmd::{self, opt, parse_ordered, parse_with, Item, Opt, Value};
use bricks_config::archive::{self, Member};
use bricks_config::{Options, Router, Source, SourceMap};
use std::ffi::OsString;
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

/// `--help` (the tool's usage) or `--version`, printed.
fn help_or_version(long: &str, program: &str, usage: &str) -> ExitCode {
    if long == "help" {
        print!("{usage}");
    } else {
        print!("{}", version(program));
    }
    ExitCode::SUCCESS
}

/// The options of every tool that reads one configuration and writes one:
/// `-e EXPR`, `-f FILE` and `-o FILE`, each at most once.
fn io_option(
    long: &str,
    value: String,
    input: &mut Option<Input>,
    output: &mut Option<String>,
) -> Result<(), String> {
    match long {
        "expression" => set_input(input, Input::Expr(value)),
        "file" => set_input(input, Input::File(value)),
        _ if output.is_some() => Err("output file specified twice".into()),
        _ => {
            *output = Some(value);
            Ok(())
        }
    }
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
    read_archived(input, defines).map(|r| (r.router, r.map))
}

/// A configuration read, with the other members of its archive.
struct Read {
    name: String,
    router: Router,
    map: SourceMap,
    members: Vec<Member>,
}

/// [`read_router`] for a configuration that may be a Click archive (its
/// `config` member is the configuration, as Click's tools read it).
fn read_archived(input: Option<Input>, defines: &[(String, String)]) -> Option<Read> {
    let (name, text) = match input.unwrap_or(Input::Stdin) {
        Input::Stdin => read_text("-"),
        Input::File(f) => read_text(&f),
        // Click's tools call an expression `config` in their messages.
        Input::Expr(e) => Ok(("config".to_string(), e)),
    }
    .map_err(|e| eprintln!("{e}"))
    .ok()?;
    let (text, members) = archive::split_config(&text)
        .map_err(|e| eprintln!("{name}: {e}"))
        .ok()?;
    let mut map = SourceMap::default();
    let options = Options {
        defines: defines.to_vec(),
        ..Options::default()
    };
    match bricks_config::parse_with(&mut map, Source::new(name.clone(), text), &options) {
        Ok(router) => Some(Read {
            name,
            router,
            map,
            members,
        }),
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
            "help" | "version" => return help_or_version(o.long, P, XFORM_USAGE),
            "expression" | "file" | "output" => io_option(o.long, v, &mut input, &mut output),
            "patterns" => {
                pattern_files.push(v);
                Ok(())
            }
            "reverse" => {
                reverse = !o.negated;
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
            "help" | "version" => return help_or_version(o.long, P, ALIGN_USAGE),
            "expression" | "file" | "output" => io_option(o.long, v, &mut input, &mut output),
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
            "help" | "version" => return help_or_version(o.long, P, UNDEAD_USAGE),
            "expression" | "file" | "output" => io_option(o.long, v, &mut input, &mut output),
            // One driver, and the configuration is all bricks writes.
            "config" | "kernel" | "user" | "verbose" => Ok(()),
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

const COMBINE_USAGE: &str = "\
'Click-combine' combines several Click router configurations at their network
devices and writes the combined configuration to the standard output. The
combination is controlled by link specifications. The click-uncombine tool can
extract components from these combined configurations.

Usage: click-combine [OPTION]... [ROUTERFILE | ROUTERNAME=FILE | LINKSPEC]

Options:
  -o, --output FILE      Write combined configuration to FILE.
  -n, --name NAME        The next router component name is NAME.
  -f, --file FILE        Read router component configuration from FILE.
  -e, --expression EXPR  Use EXPR as router component configuration.
  -l, --link LINKSPEC    Add a link between router components. LINKSPEC has the
                         form 'NAME1.COMP1=NAME2.COMP2'. Each NAME is a router
                         component name. Each COMP is either an element name or
                         a device name (for linking at From/To/PollDevices).
  -c, --config           Output config only (not an archive).
      --help             Print this message and exit.
  -v, --version          Print version number and exit.

Components are named 1, 2, ... in order unless named. Each component's
elements become NAME/element. A link replaces NAME1's ToDevice(COMP1) (or
the element named COMP1) and NAME2's FromDevice or PollDevice(COMP2) (or the
element named COMP2) with one RouterLink element; links sharing an end are
one RouterLink. The combined configuration is written as a Click archive
holding it, its component map and RouterLink's element map. The combination
is for analysis and for click-uncombine: bricks runs no RouterLink.
";

const UNCOMBINE_USAGE: &str = "\
'Click-uncombine' reads a combined Click configuration produced by
click-combine and writes one of its components to the standard output.

Usage: click-uncombine [OPTION]... [ROUTERFILE [COMPONENTNAME]]

Options:
  -f, --file FILE             Read router configuration from FILE.
  -n, --name NAME             Output the router component named NAME.
  -o, --output FILE           Write output to FILE.
      --help                  Print this message and exit.
  -v, --version               Print version number and exit.
";

/// Writes `config` with `members` (an archive when there are any).
fn write_archived(output: Option<&str>, config: String, members: &[Member]) -> ExitCode {
    match archive::join_config(config, members) {
        Ok(text) => write_output(output, &text),
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

/// A command line read in order (see [`parse_ordered`]) as pairs of an
/// option's long name and its value (empty for a flag), and words with
/// no name.
fn in_order(
    options: &'static [Opt],
    args: &[String],
) -> Result<Vec<(Option<&'static str>, String)>, String> {
    Ok(parse_ordered(options, args)?
        .into_iter()
        .map(|item| match item {
            Item::Opt(o) => (Some(o.long), o.value.unwrap_or_default()),
            Item::Word(w) => (None, w),
        })
        .collect())
}

const COMBINE_OPTIONS: &[Opt] = &[
    opt("config", Some('c'), Value::None, false),
    opt("expression", Some('e'), Value::Required, false),
    opt("file", Some('f'), Value::Required, false),
    opt("help", None, Value::None, false),
    opt("link", Some('l'), Value::Required, false),
    opt("name", Some('n'), Value::Required, false),
    opt("output", Some('o'), Value::Required, false),
    opt("version", Some('v'), Value::None, false),
];

const UNCOMBINE_OPTIONS: &[Opt] = &[
    opt("file", Some('f'), Value::Required, false),
    opt("help", None, Value::None, false),
    opt("name", Some('n'), Value::Required, false),
    opt("output", Some('o'), Value::Required, false),
    opt("version", Some('v'), Value::None, false),
];

/// `click-combine [OPTION]... [ROUTERFILE | ROUTERNAME=FILE | LINKSPEC]...`
pub fn combine(args: &[String]) -> ExitCode {
    const P: &str = "click-combine";
    const SYNOPSIS: &str = "[OPTION]... [ROUTERFILE]";
    let opts = match in_order(COMBINE_OPTIONS, args) {
        Ok(o) => o,
        Err(e) => return usage_error(P, SYNOPSIS, &format!("{P}: {e}")),
    };
    let mut reads: Vec<(String, Read)> = Vec::new();
    let mut next_name: Option<String> = None;
    let mut links = Vec::new();
    let mut output: Option<String> = None;
    let mut config_only = false;
    let mut failed = false;
    let mut read = |name: Option<String>, input: Input, next: &mut Option<String>| {
        if let (Some(n), Some(prev)) = (&name, next.as_ref()) {
            eprintln!("warning: router name specified twice ('{prev}' and '{n}')");
        }
        let name = next
            .take()
            .or(name)
            .unwrap_or_else(|| (reads.len() + 1).to_string());
        match read_archived(Some(input), &[]) {
            Some(r) => reads.push((name, r)),
            None => failed = true,
        }
    };
    for (long, v) in opts {
        match long {
            Some(h @ ("help" | "version")) => return help_or_version(h, P, COMBINE_USAGE),
            Some("file") => read(None, Input::File(v), &mut next_name),
            Some("expression") => read(None, Input::Expr(v), &mut next_name),
            Some("name") => {
                if next_name.is_some() {
                    eprintln!("{P}: warning: router name specified twice");
                }
                next_name = Some(v);
            }
            Some("link") => links.push(v),
            Some("config") => config_only = true,
            Some("output") if output.is_some() => {
                return usage_error(P, SYNOPSIS, &format!("{P}: output file specified twice"))
            }
            Some("output") => output = Some(v),
            _ => {
                // NAME:FILE or NAME=FILE name a component; A.x=B.y is a link.
                if let Some((n, f)) = v.split_once(':') {
                    read(
                        Some(n.to_string()),
                        Input::File(f.to_string()),
                        &mut next_name,
                    );
                } else if let Some((n, f)) = v.split_once('=').filter(|(n, _)| !n.contains('.')) {
                    read(
                        Some(n.to_string()),
                        Input::File(f.to_string()),
                        &mut next_name,
                    );
                } else if v.contains('=') {
                    links.push(v);
                } else {
                    read(None, Input::File(v), &mut next_name);
                }
            }
        }
    }
    if failed {
        return ExitCode::from(1);
    }
    let comps: Vec<bricks_config::tools::Component<'_>> = reads
        .iter()
        .map(|(name, r)| bricks_config::tools::Component {
            name: name.clone(),
            router: &r.router,
            map: &r.map,
            members: &r.members,
        })
        .collect();
    match bricks_config::tools::combine(&comps, &links) {
        Ok(c) => {
            for m in &c.messages {
                eprintln!("{P}: {m}");
            }
            let members = if config_only { Vec::new() } else { c.members };
            write_archived(output.as_deref(), c.config, &members)
        }
        Err(errors) => {
            for e in &errors {
                eprintln!("{P}: {e}");
            }
            ExitCode::from(1)
        }
    }
}

/// `click-uncombine [OPTION]... [ROUTERFILE [COMPONENTNAME]]`
pub fn uncombine(args: &[String]) -> ExitCode {
    const P: &str = "click-uncombine";
    const SYNOPSIS: &str = "[OPTION]... [ROUTERFILE [COMPONENTNAME]]";
    let opts = match in_order(UNCOMBINE_OPTIONS, args) {
        Ok(o) => o,
        Err(e) => return usage_error(P, SYNOPSIS, &format!("{P}: {e}")),
    };
    let mut file: Option<String> = None;
    let mut component: Option<String> = None;
    let mut output: Option<String> = None;
    for (long, v) in opts {
        let twice = |what: &str| usage_error(P, SYNOPSIS, &format!("{P}: {what} specified twice"));
        match long {
            Some(h @ ("help" | "version")) => return help_or_version(h, P, UNCOMBINE_USAGE),
            Some("file") if file.is_some() => return twice("combined router"),
            Some("file") => file = Some(v),
            Some("output") if output.is_some() => return twice("output file"),
            Some("output") => output = Some(v),
            Some("name") if component.is_some() => return twice("component name"),
            Some("name") => component = Some(v),
            _ if file.is_some() && component.is_some() => return twice("component name"),
            _ if file.is_some() => component = Some(v),
            _ => file = Some(v),
        }
    }
    let Some(component) = component else {
        return usage_error(P, SYNOPSIS, &format!("{P}: no component specified"));
    };
    let input = match file {
        Some(f) if f != "-" => Input::File(f),
        _ => Input::Stdin,
    };
    let Some(r) = read_archived(Some(input), &[]) else {
        return ExitCode::from(1);
    };
    match bricks_config::tools::uncombine(&r.router, &r.map, &r.members, &component, &r.name) {
        Ok(u) => write_archived(output.as_deref(), u.config, &u.members),
        Err(errors) => {
            for e in &errors {
                eprintln!("{P}: {e}");
            }
            ExitCode::from(1)
        }
    }
}

const FASTCLASSIFIER_OPTIONS: &[Opt] = &[
    opt("clickpath", Some('C'), Value::Required, false),
    opt("combine", None, Value::None, true),
    opt("classes", None, Value::None, true),
    opt("config", Some('c'), Value::None, false),
    opt("expression", Some('e'), Value::Required, false),
    opt("file", Some('f'), Value::Required, false),
    opt("help", None, Value::None, false),
    opt("kernel", Some('k'), Value::None, false),
    opt("output", Some('o'), Value::Required, false),
    opt("quiet", Some('q'), Value::None, false),
    opt("reverse", Some('r'), Value::None, false),
    opt("source", Some('s'), Value::None, false),
    opt("user", Some('u'), Value::None, false),
    opt("version", Some('v'), Value::None, false),
];

const FASTCLASSIFIER_USAGE: &str = "\
'Click-fastclassifier' transforms a router configuration by replacing generic
Classifier elements with specific generated code. In bricks, every Classifier,
IPClassifier and IPFilter is compiled into a decision tree when the
configuration loads, which is what Click's tool does ahead of time: here it
loads the configuration (so every classifier's patterns are compiled and
checked) and writes it flattened, to run as it is.

Usage: click-fastclassifier [OPTION]... [ROUTERFILE]

Options:
  -f, --file FILE               Read router configuration from FILE.
  -e, --expression EXPR         Use EXPR as router configuration.
  -o, --output FILE             Write output to FILE.
      --no-combine              Accepted.
      --no-classes              Accepted.
  -k, --kernel                  Accepted; bricks has one driver.
  -u, --user                    Accepted; bricks has one driver.
  -c, --config                  Accepted: the configuration is all that is written.
  -r, --reverse                 Accepted: the configuration is written back as it is.
  -q, --quiet                   Accepted: there is nothing to compile.
  -C, --clickpath PATH          Accepted; bricks has no CLICKPATH.
      --help                    Print this message and exit.
  -v, --version                 Print version number and exit.

-s (source code only) is refused: bricks generates no source code.
";

/// `click-fastclassifier [OPTION]... [ROUTERFILE]`: the configuration,
/// loaded (its classifiers compiled) and written flattened.
pub fn fastclassifier(args: &[String], run: impl FnOnce(Vec<OsString>) -> ExitCode) -> ExitCode {
    const P: &str = "click-fastclassifier";
    const SYNOPSIS: &str = "[OPTION]... [ROUTERFILE]";
    let usage = |m: &str| usage_error(P, SYNOPSIS, &format!("{P}: {m}"));
    let (opts, words) = match parse_with(FASTCLASSIFIER_OPTIONS, args) {
        Ok(x) => x,
        Err(e) => return usage(&e),
    };
    let mut input: Vec<String> = Vec::new();
    let mut out = "-".to_string();
    for o in opts {
        let v = o.value.unwrap_or_default();
        match o.long {
            h @ ("help" | "version") => return help_or_version(h, P, FASTCLASSIFIER_USAGE),
            "source" => return usage("-s: bricks generates no source code (its classifiers are compiled when the configuration loads)"),
            "file" | "expression" if !input.is_empty() => return usage("router configuration specified twice"),
            "file" => input = vec![v],
            "expression" => input = vec!["-e".into(), v],
            "output" => out = v,
            _ => {}
        }
    }
    for w in words {
        if !input.is_empty() {
            return usage("router configuration specified twice");
        }
        input = vec![w];
    }
    let mut rest = vec!["-q".to_string()];
    rest.extend(input);
    rest.extend(["-o".to_string(), out]);
    click_cmd::click(&rest, run)
}

const FLATTEN_OPTIONS: &[Opt] = &[
    opt("classes", Some('c'), Value::None, false),
    opt("clickpath", Some('C'), Value::Required, false),
    opt("config", None, Value::None, false),
    opt("declarations", Some('d'), Value::None, false),
    opt("decls", None, Value::None, false),
    opt("elements", None, Value::None, false),
    opt("expand-vars", None, Value::None, true),
    opt("expression", Some('e'), Value::Required, false),
    opt("file", Some('f'), Value::Required, false),
    opt("help", None, Value::None, false),
    opt("names", Some('n'), Value::None, false),
    opt("output", Some('o'), Value::Required, false),
    opt("version", Some('v'), Value::None, false),
];

const FLATTEN_USAGE: &str = "\
'Click-flatten' reads a Click configuration, flattens it (removing any
compound elements), and writes an equivalent configuration to the standard
output.

Usage: click-flatten [OPTION]... [ROUTERFILE]

Options:
  -c, --classes             Output list of classes used by configuration.
  -n, --names               Output list of element names in flat config.
  -d, --declarations        Output list of declarations in flat config.
  -f, --file FILE           Read router configuration from FILE.
  -e, --expression EXPR     Use EXPR as router configuration.
      --config              Output configuration only (not an archive).
      --expand-vars         Accepted: variables are always expanded.
  -o, --output FILE         Write output configuration to FILE.
  -C, --clickpath PATH      Accepted; bricks has no CLICKPATH.
      --help                Print this message and exit.
  -v, --version             Print version number and exit.

The configuration is read, not checked: element classes need not be ones
bricks has (`bricks check` checks). A Click archive's `config` member is
read, and its other members are written with the result unless --config.
";

/// `click-flatten [OPTION]... [ROUTERFILE]`
pub fn flatten(args: &[String]) -> ExitCode {
    const P: &str = "click-flatten";
    const SYNOPSIS: &str = "[OPTION]... [ROUTERFILE]";
    let (opts, words) = match parse_with(FLATTEN_OPTIONS, args) {
        Ok(x) => x,
        Err(e) => return usage_error(P, SYNOPSIS, &format!("{P}: {e}")),
    };
    #[derive(Clone, Copy, PartialEq)]
    enum Action {
        Flatten,
        Config,
        Classes,
        Names,
        Declarations,
    }
    let mut action = Action::Flatten;
    let mut input = None;
    let mut output: Option<String> = None;
    let mut defines = Vec::new();
    for o in opts {
        let v = o.value.unwrap_or_default();
        let r = match o.long {
            "help" | "version" => return help_or_version(o.long, P, FLATTEN_USAGE),
            "expression" | "file" | "output" => io_option(o.long, v, &mut input, &mut output),
            "config" => {
                action = Action::Config;
                Ok(())
            }
            "classes" => {
                action = Action::Classes;
                Ok(())
            }
            "names" | "elements" => {
                action = Action::Names;
                Ok(())
            }
            "declarations" | "decls" => {
                action = Action::Declarations;
                Ok(())
            }
            "expand-vars" | "clickpath" => Ok(()),
            other => Err(format!("unrecognized option '--{other}'")),
        };
        if let Err(e) = r {
            return usage_error(P, SYNOPSIS, &e);
        }
    }
    if let Err(e) = take_words(words, &mut input, &mut defines) {
        return usage_error(P, SYNOPSIS, &e);
    }
    let Some(r) = read_archived(input, &defines) else {
        return ExitCode::from(1);
    };
    let flat = bricks_config::flatten(&r.router);
    // Click prints its lists sorted, one item a line.
    let list = |mut items: Vec<String>| {
        items.sort();
        items.dedup();
        items.iter().map(|i| format!("{i}\n")).collect::<String>()
    };
    let elements = &r.router.elements;
    let text = match action {
        Action::Flatten => return write_archived(output.as_deref(), flat, &r.members),
        Action::Config => flat,
        Action::Classes => list(elements.iter().map(|e| e.class.to_string()).collect()),
        Action::Names => list(elements.iter().map(|e| e.name.to_string()).collect()),
        Action::Declarations => list(
            elements
                .iter()
                .map(|e| format!("{} :: {}", e.name, e.class))
                .collect(),
        ),
    };
    write_output(output.as_deref(), &text)
}
