//! `KernelFilter`: keeps the host's own network stack away from the
//! packets that arrive on interfaces a user-level router reads (Click's
//! `elements/userlevel/kernelfilter.cc`). A router that reads an interface
//! with `FromDevice` sees every frame, but so does the host: it answers
//! pings and ARP for the interface's address, resets TCP connections it
//! knows nothing of and sends ICMP errors, beside the router's own answers.
//! KernelFilter adds one iptables(8) rule per interface,
//! `-A INPUT -i DEVNAME -j DROP`, when the router starts, and deletes it
//! (`-D`, newest first) when the router stops. A packet socket (FromDevice
//! with AF_PACKET, tcpdump) still gets its copy of each frame: it is
//! handed over before the frame reaches netfilter's INPUT hook.
//!
//! The rules belong to the host, not to a worker: every worker's instance
//! shares one [`Filters`] (the element's shared state), and whichever
//! instance starts first adds them all, once; whichever shuts down first
//! deletes them. The state is made when the configuration is checked,
//! but nothing is run then: `bricks check` and a configuration that is
//! built and never started touch no firewall. iptables is run directly,
//! never through a shell, so a device name is one argument whatever it
//! holds, and it is checked as Linux checks interface names
//! (`dev_valid_name` in `net/core/dev.c`) when the configuration is read.

use bricks_element::{
    ArgError, Args, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
};
use std::io::Read as _;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The `KernelFilter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "KernelFilter",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "blocks the host's kernel from handling packets that arrive on given \
        interfaces, with iptables (user-level)",
    synopsis: "KernelFilter(FILTERSPEC, ... [, IPTABLES_COMMAND COMMAND])",
    description: "Installs firewall rules that stop the host's own network stack from \
        handling the packets that arrive on some interfaces, for a router that reads those \
        interfaces itself with FromDevice: without it the host answers pings and ARP \
        requests for the interface's addresses, resets TCP connections it knows nothing \
        of and sends ICMP errors, beside what the router does. FromDevice with AF_PACKET \
        (BACKEND packet) and tcpdump(1) still see the packets: they get their copy before \
        the firewall does. (Frames that FromDevice takes with AF_XDP never reach the \
        host's stack in the first place; KernelFilter then still covers what the XDP \
        program passes on to the kernel.)\n\n\
        Each FILTERSPEC is `drop dev DEVNAME`, the only form Click understands: the \
        kernel drops every packet arriving on interface DEVNAME (iptables' `-i`: a \
        name ending in `+` matches every interface whose name begins with the rest). \
        When the router starts, KernelFilter runs `iptables -A INPUT -i DEVNAME -j DROP` \
        for each FILTERSPEC, in order; when it stops (its sources are done, a `stop` \
        handler or Script, `--duration`, SIGINT or SIGTERM) it runs `iptables -D INPUT \
        -i DEVNAME -j DROP` for each rule it added, newest first. With several workers \
        this happens once, not once per worker. `bricks check`, and a configuration \
        that is checked and never run, touch no rule.\n\n\
        The command is IPTABLES_COMMAND if given, else /sbin/iptables or \
        /usr/sbin/iptables, whichever can be run (Debian 12's is iptables-nft; \
        iptables-legacy takes the same arguments); with neither, the router does not \
        start. If a command fails (its exit status is not 0, or it runs for more than \
        10 seconds), the rules added before it are deleted again and the router does \
        not start: the error names the command and gives its output, and the run ends \
        at once with exit status 1 before any packet moves, also under a driver script \
        (DriverManager, a Script of TYPE DRIVER), which does not get to take the stop \
        for one of its events (one written after KernelFilter may see its sources run \
        one round first). A rule that \
        cannot be deleted at the end is reported the same way, and the run's exit \
        status is then 1; delete it by hand with the command the error gives. If bricks \
        ends without stopping (SIGKILL, a crash), its rules stay in place, as Click's \
        do: `iptables -S INPUT` lists them.\n\n\
        A hot swap to a configuration with the same KernelFilter (same name and \
        arguments) keeps its rules; otherwise the old element's rules are deleted \
        before the new configuration's are added. A KernelFilter of a configuration \
        swapped in that fails ends the run the same way.\n\n\
        Differences from Click: iptables is run directly, not through sh(1): a device \
        name is one argument, whatever it holds, and IPTABLES_COMMAND is split into \
        words as a shell would split it (quotes and backslashes), but shell operators \
        (`;`, `|`, `&`, `<`, `>`, `(`, `)`, `$`, backquote) are refused, since nothing \
        would interpret them. DEVNAME is checked as Linux checks interface names (1 to \
        15 bytes, no `/`, `:` or white space, not `.` or `..`) when the configuration is \
        read, and may be quoted. A command fails by its exit status: Click's took any \
        text on standard output for a failure and missed the exit status and standard \
        error, so a failing iptables went unnoticed. Rules are deleted with the command \
        that added them (Click's cleanup ignores IPTABLES_COMMAND). The first failure \
        stops the others and undoes what was done, where Click tried every FILTERSPEC. \
        The `rules` handler is a bricks addition.\n\n\
        Handlers: `rules` (read) lists the rules in place now, one command line each as \
        it was run to add them (empty before the router starts and after it stops).",
    ports: "none",
    keywords: &[
        Keyword {
            name: "FILTERSPEC",
            ty: "`drop dev DEVNAME`",
            default: Some("none: no rule"),
            doc: "the kernel drops packets arriving on interface DEVNAME; positional, \
                repeatable",
        },
        Keyword {
            name: "IPTABLES_COMMAND",
            ty: "command line (words)",
            default: Some("/sbin/iptables or /usr/sbin/iptables"),
            doc: "the iptables command to run, words split as a shell splits them \
                (`\"sudo /usr/sbin/iptables -w\"`); run directly, without a shell",
        },
    ],
    counters: &[],
    example: "// A user-level router on eth1: the host no longer answers what\n\
        // arrives there (iptables -A INPUT -i eth1 -j DROP while it runs).\n\
        kf :: KernelFilter(drop dev eth1);\n\
        FromDevice(eth1) -> c :: Counter -> Discard;",
    see_also: &["FromDevice", "ToDevice", "KernelTap"],
};

/// How long one iptables command may run before it is killed and counted
/// as failed: iptables-legacy waits for the xtables lock when told to
/// (`-w`), and a router must not hang at its start or end.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// The bytes of a command's output kept for its error message.
const OUTPUT_KEPT: usize = 4096;

/// Where Click looks for iptables, in order.
const IPTABLES_PATHS: [&str; 2] = ["/sbin/iptables", "/usr/sbin/iptables"];

/// Click's one message for a FILTERSPEC it does not understand.
const SPEC_FORM: &str = "arguments must follow 'drop dev DEVNAME'";

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let command = match args.read::<String>("IPTABLES_COMMAND")? {
        Some(text) => Some(
            command_words(&text)
                .map_err(|why| ArgError::new(format!("bad argument IPTABLES_COMMAND: {why}")))?,
        ),
        None => None,
    };
    let mut devices = Vec::new();
    for (text, span) in args.rest() {
        if text.trim().is_empty() {
            // `KernelFilter()`, a trailing comma.
            continue;
        }
        devices.push(filter_device(text).map_err(|why| ArgError::at(span, why))?);
    }
    let spec = FilterSpec { devices, command };
    let filters = args.shared(|_| Ok(Filters::new(spec)))?;
    Ok(Box::new(KernelFilter { filters }))
}

/// The device of one FILTERSPEC, `drop dev DEVNAME`. The words are split
/// and unquoted as Click's `push_back_words` and `WordArg` do.
fn filter_device(text: &str) -> Result<String, String> {
    let words = spec_words(text)?;
    match words.as_slice() {
        [action, kind, dev] if action == "drop" && kind == "dev" && !dev.is_empty() => {
            check_device_name(dev)?;
            Ok(dev.clone())
        }
        _ => Err(SPEC_FORM.to_string()),
    }
}

/// The words of a FILTERSPEC: separated by space outside quotes, each
/// then unquoted (Click's `cp_spacevec`).
fn spec_words(text: &str) -> Result<Vec<String>, String> {
    let b = text.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() {
            match b[i] {
                q @ (b'"' | b'\'') => {
                    i += 1;
                    while i < b.len() && b[i] != q {
                        // A backslash escapes the next byte inside double
                        // quotes only.
                        i += if q == b'"' && b[i] == b'\\' { 2 } else { 1 };
                    }
                    if i >= b.len() {
                        return Err(format!("unterminated string: missing `{}`", char::from(q)));
                    }
                    i += 1;
                }
                _ => i += 1,
            }
        }
        words.push(bricks_config::unquote(&text[start..i])?);
    }
    Ok(words)
}

/// Why `name` cannot be a Linux interface's name, as the kernel's
/// `dev_valid_name` decides: 1 to 15 bytes (IFNAMSIZ is 16 with the
/// final NUL), not `.` or `..`, and no `/`, `:` or space as the kernel's
/// `isspace` sees it (which counts byte 0xA0 too). NUL, which would end
/// the name early, is refused as well.
fn check_device_name(name: &str) -> Result<(), String> {
    const IFNAMSIZ: usize = 16;
    if name.is_empty() {
        return Err("bad DEVNAME: an interface name cannot be empty".into());
    }
    if name.len() >= IFNAMSIZ {
        return Err(format!(
            "bad DEVNAME `{}`: {} bytes long, but Linux interface names have at most {}",
            name.escape_default(),
            name.len(),
            IFNAMSIZ - 1
        ));
    }
    if name == "." || name == ".." {
        return Err(format!(
            "bad DEVNAME `{name}`: Linux interface names cannot be `.` or `..`"
        ));
    }
    let space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0xa0);
    if let Some(&c) = name
        .as_bytes()
        .iter()
        .find(|&&c| c == b'/' || c == b':' || c == 0 || space(c))
    {
        return Err(format!(
            "bad DEVNAME `{}`: Linux interface names cannot hold {}",
            name.escape_default(),
            match c {
                b'/' => "`/`".to_string(),
                b':' => "`:`".to_string(),
                0 => "a NUL byte".to_string(),
                c => format!("white space (byte {c:#04x})"),
            }
        ));
    }
    Ok(())
}

/// IPTABLES_COMMAND split into words as sh(1) splits a simple command:
/// white space separates words, `'...'` is literal, `"..."` keeps
/// everything but `\"`, `\\`, `\$` and `` \` ``, and a backslash outside
/// quotes keeps the next character. Click ran the text through a shell;
/// bricks runs the words directly, so what only a shell would act on (an
/// operator, a redirection, an expansion) is refused rather than passed to
/// iptables as an argument.
fn command_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    let shell_only = |c: char| {
        format!("`{c}` means something only to a shell, and bricks runs the command without one (quote it if it is part of a word)")
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unterminated string: missing `'`".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("unterminated string: missing `\"`".into()),
                        },
                        Some(c @ ('$' | '`')) => return Err(shell_only(c)),
                        Some(c) => word.push(c),
                        None => return Err("unterminated string: missing `\"`".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => {
                    in_word = true;
                    word.push(c);
                }
                None => return Err("a lone `\\` at the end".into()),
            },
            '|' | '&' | ';' | '<' | '>' | '(' | ')' | '$' | '`' => return Err(shell_only(c)),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() || words[0].is_empty() {
        return Err("names no command".into());
    }
    if let Some(w) = words.iter().find(|w| w.contains('\0')) {
        return Err(format!("`{}` holds a NUL byte", w.escape_default()));
    }
    Ok(words)
}

/// What the configuration asks for; the same for every worker's instance.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FilterSpec {
    /// Interfaces whose packets the host must not handle, in order.
    devices: Vec<String>,
    /// IPTABLES_COMMAND in words; `None`: look for iptables as Click does.
    command: Option<Vec<String>>,
}

impl FilterSpec {
    /// The iptables command to run: IPTABLES_COMMAND, else the first of
    /// Click's places that this process can execute (access(2), as
    /// Click's `access(..., X_OK)`).
    fn program(&self) -> Result<Vec<String>, String> {
        if let Some(c) = &self.command {
            return Ok(c.clone());
        }
        IPTABLES_PATHS
            .iter()
            .find(|p| nix::unistd::access(**p, nix::unistd::AccessFlags::X_OK).is_ok())
            .map(|p| vec![p.to_string()])
            .ok_or_else(|| {
                format!(
                    "no `iptables` executable found: neither {} can be run; install \
                     iptables or give IPTABLES_COMMAND",
                    IPTABLES_PATHS.join(" nor ")
                )
            })
    }
}

/// One rule in place: the command that added it, which deletes it too.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    program: Vec<String>,
    device: String,
}

impl Rule {
    /// The whole command line that adds the rule (`add`) or deletes it.
    fn argv(&self, add: bool) -> Vec<String> {
        let mut v = self.program.clone();
        for w in [if add { "-A" } else { "-D" }, "INPUT", "-i"] {
            v.push(w.to_string());
        }
        v.push(self.device.clone());
        v.push("-j".to_string());
        v.push("DROP".to_string());
        v
    }
}

/// Where the rules are in the router's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing was tried yet (the configuration is only checked, or the
    /// router has not started).
    Waiting,
    /// The rules are in place (those in [`Inner::active`]).
    Installed,
    /// Adding them failed; what was added is deleted again.
    Failed,
    /// The router stopped and the rules were deleted (or deleting them was
    /// tried and reported): they are never added again.
    Removed,
}

#[derive(Debug)]
struct Inner {
    phase: Phase,
    /// Rules in place, oldest first.
    active: Vec<Rule>,
    /// Adding the rules failed: every instance keeps the router from
    /// running, even once the phase has moved on to `Removed`.
    refused: bool,
}

/// What a start did.
#[derive(Debug, PartialEq, Eq)]
enum Started {
    /// This call added the rules.
    Added,
    /// Another instance did already, or failed already (and said so), or
    /// the router has stopped.
    Nothing,
}

/// The rules of one configured KernelFilter, shared by every worker's
/// instance of it: they are the host's, so they are added and deleted
/// once. A mutex orders the workers; it is taken only when the router
/// starts and stops and when `rules` is read.
#[derive(Debug)]
pub struct Filters {
    spec: FilterSpec,
    inner: Mutex<Inner>,
}

impl Filters {
    fn new(spec: FilterSpec) -> Filters {
        Filters {
            spec,
            inner: Mutex::new(Inner {
                phase: Phase::Waiting,
                active: Vec::new(),
                refused: false,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds every rule, unless an instance did already. On a failure the
    /// rules added before it are deleted again, newest first, and `Err`
    /// says what failed and what was undone.
    fn start(&self) -> Result<Started, String> {
        let mut inner = self.lock();
        if inner.phase != Phase::Waiting {
            return Ok(Started::Nothing);
        }
        if self.spec.devices.is_empty() {
            inner.phase = Phase::Installed;
            return Ok(Started::Added);
        }
        let program = match self.spec.program() {
            Ok(p) => p,
            Err(e) => {
                inner.phase = Phase::Failed;
                inner.refused = true;
                return Err(e);
            }
        };
        for device in &self.spec.devices {
            let rule = Rule {
                program: program.clone(),
                device: device.clone(),
            };
            if let Err(e) = run_command(&rule.argv(true)) {
                let undone = inner.active.len();
                let left = delete_rules(&mut inner.active);
                inner.phase = Phase::Failed;
                inner.refused = true;
                let mut msg = format!("{e}; the router does not start");
                if undone > 0 && left.is_empty() {
                    msg.push_str(&format!(
                        " (the {undone} rule{} added before it {} deleted again)",
                        if undone == 1 { "" } else { "s" },
                        if undone == 1 { "was" } else { "were" }
                    ));
                }
                for l in left {
                    msg.push_str(&format!("\n{l}"));
                }
                return Err(msg);
            }
            inner.active.push(rule);
        }
        inner.phase = Phase::Installed;
        Ok(Started::Added)
    }

    /// Deletes every rule in place, newest first, once; returns an error
    /// line for each one that could not be (it stays in place).
    fn stop(&self) -> Vec<String> {
        let mut inner = self.lock();
        if inner.phase == Phase::Waiting {
            // Never started (a hot swap refused): nothing to delete, but
            // nothing may be added later either.
            inner.phase = Phase::Removed;
            return Vec::new();
        }
        inner.phase = Phase::Removed;
        delete_rules(&mut inner.active)
    }

    /// Whether adding the rules failed, so that the router must not run.
    fn refused(&self) -> bool {
        self.lock().refused
    }

    /// The rules in place, as the command lines that added them.
    fn rules_text(&self) -> String {
        self.lock()
            .active
            .iter()
            .map(|r| shell_line(&r.argv(true)) + "\n")
            .collect()
    }
}

impl Drop for Filters {
    /// The last resort: a run that ended without any instance shutting
    /// down (a worker that panicked) still deletes its rules when the
    /// configuration goes away.
    fn drop(&mut self) {
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        for e in delete_rules(&mut inner.active) {
            eprintln!("error: KernelFilter: {e}");
        }
    }
}

/// Deletes `rules`, newest first (Click's cleanup order), and empties
/// the list; returns an error line for each rule left in place.
fn delete_rules(rules: &mut Vec<Rule>) -> Vec<String> {
    let mut left = Vec::new();
    while let Some(rule) = rules.pop() {
        if let Err(e) = run_command(&rule.argv(false)) {
            left.push(format!(
                "could not delete a rule, which stays in place: {e}; delete it by hand with `{}`",
                shell_line(&rule.argv(false))
            ));
        }
    }
    left
}

/// A command as a user would type it: words holding anything but plain
/// characters are single-quoted.
fn shell_line(argv: &[String]) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(plain) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why a command failed.
#[derive(Debug)]
enum CommandError {
    /// It could not be started (no such program, no permission).
    Spawn(String, std::io::Error),
    /// It ended with a status other than 0, saying `output` (standard
    /// output and error together, the first [`OUTPUT_KEPT`] bytes).
    Failed(String, ExitStatus, String),
    /// It ran longer than its time limit ([`COMMAND_TIMEOUT`]) and was
    /// killed.
    TimedOut(String, Duration),
    /// Waiting for it failed.
    Wait(String, std::io::Error),
}

impl core::fmt::Display for CommandError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            CommandError::Spawn(line, e) => write!(f, "`{line}`: cannot run it: {e}"),
            CommandError::Failed(line, status, out) => {
                let out = out.trim();
                if out.is_empty() {
                    write!(f, "`{line}` failed ({status}) with no output")
                } else {
                    write!(f, "`{line}` failed ({status}): {out}")
                }
            }
            CommandError::TimedOut(line, limit) => write!(
                f,
                "`{line}` was still running after {limit:?} and was killed"
            ),
            CommandError::Wait(line, e) => write!(f, "`{line}`: waiting for it: {e}"),
        }
    }
}

/// Runs `argv` directly (no shell) with standard input empty, as Click
/// did, and standard output and error kept together for the message.
/// Succeeds when it exits with status 0 within [`COMMAND_TIMEOUT`].
fn run_command(argv: &[String]) -> Result<(), CommandError> {
    run_command_within(argv, COMMAND_TIMEOUT)
}

/// [`run_command`] with a time limit of `timeout`.
fn run_command_within(argv: &[String], timeout: Duration) -> Result<(), CommandError> {
    let line = shell_line(argv);
    let Some((program, args)) = argv.split_first() else {
        return Err(CommandError::Spawn(
            line,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "no command"),
        ));
    };
    let (mut reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return Err(CommandError::Spawn(line, e)),
    };
    let writer2 = match writer.try_clone() {
        Ok(w) => w,
        Err(e) => return Err(CommandError::Spawn(line, e)),
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2);
    let spawned = cmd.spawn();
    // The command holds the pipe's write ends until dropped: read sees
    // the end of the output only once the child's are the last.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return Err(CommandError::Spawn(line, e)),
    };
    // Read without blocking, so that a child (or a child of it) that
    // keeps the pipe open cannot hold the router past the deadline.
    if let Err(e) = nix::fcntl::fcntl(
        &reader,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    ) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(CommandError::Wait(line, e.into()));
    }
    let mut output = Vec::new();
    let mut buf = [0u8; 1024];
    // Reads what is there now, at most 64 KiB at a time, so that a child
    // that writes without end still meets the deadline; what goes past
    // OUTPUT_KEPT is read and dropped, so the child never blocks on a
    // full pipe.
    let mut drain = |reader: &mut std::io::PipeReader, output: &mut Vec<u8>| {
        for _ in 0..64 {
            match reader.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let keep = n.min(OUTPUT_KEPT.saturating_sub(output.len()));
                    output.extend_from_slice(&buf[..keep]);
                }
            }
        }
    };
    let deadline = Instant::now() + timeout;
    let status = loop {
        drain(&mut reader, &mut output);
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CommandError::TimedOut(line, timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CommandError::Wait(line, e));
            }
        }
    };
    drain(&mut reader, &mut output);
    if status.success() {
        Ok(())
    } else {
        let text = String::from_utf8_lossy(&output).into_owned();
        Err(CommandError::Failed(line, status, text))
    }
}

/// Ends the run at once: a failed start is Click's failed `initialize`,
/// after which the router never runs, not a stop event for a driver
/// script (DriverManager, a Script of TYPE DRIVER) to count and go on.
/// So the stop role is taken from whoever holds it on this worker and
/// given up, and the stop asked for then ends the run directly.
fn refuse(cx: &mut Context<'_>) {
    cx.manage_stops(true);
    cx.manage_stops(false);
    cx.request_stop();
}

/// Keeps the host's stack from handling what arrives on some interfaces
/// while the router runs.
#[derive(Debug)]
pub struct KernelFilter {
    filters: Arc<Filters>,
}

impl Element for KernelFilter {
    fn start(&mut self, cx: &mut Context<'_>) {
        // Every element of every worker starts before any task or timer
        // runs: the rules are in place before the first packet moves.
        if let Err(e) = self.filters.start() {
            // Said once, by the instance that tried.
            cx.report_error(e);
        }
        if self.filters.refused() {
            refuse(cx);
            // A driver script that starts after this element claims the
            // stop role again and would count the stop as one of its
            // events: stop once more, from a timer due in the first round,
            // once every element has started.
            cx.schedule_at(cx.now());
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        if self.filters.refused() {
            refuse(cx);
        }
    }

    fn stopping(&mut self, cx: &mut Context<'_>) {
        // A hot swap dropping this element (the new configuration has no
        // KernelFilter of its name): its rules go now. A router that stops
        // deletes them at shutdown, after the last packets, as Click's
        // cleanup does.
        if !cx.stopping() {
            for e in self.filters.stop() {
                cx.report_error(e);
            }
        }
    }

    fn shutdown(&mut self, cx: &mut Context<'_>) {
        for e in self.filters.stop() {
            cx.report_error(e);
        }
    }

    fn take_state(&mut self, old: &mut dyn Element, cx: &mut Context<'_>) {
        let Some(old) = bricks_element::taken_from::<KernelFilter>(old) else {
            return;
        };
        // Unchanged arguments share the old state: the rules stay. Other
        // arguments: the old rules go before the new ones come.
        if !Arc::ptr_eq(&self.filters, &old.filters) {
            for e in old.filters.stop() {
                cx.report_error(e);
            }
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "rules").then(|| self.filters.rules_text())
    }

    fn handlers(&self) -> &'static [Handler] {
        const HANDLERS: &[Handler] = &[Handler::r("rules")];
        HANDLERS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Edge, Graph, SharedSlot, WorkerState};
    use bricks_runtime::testing::{make_element, parse_args};
    use std::os::unix::fs::PermissionsExt as _;
    use std::path::PathBuf;

    fn ports() -> PortInfo {
        PortInfo {
            inputs: vec![],
            outputs: vec![],
        }
    }

    /// The spec a KernelFilter configured with `args` holds, or its error.
    fn spec(args: &str) -> Result<FilterSpec, String> {
        let mut e = make_element(&CLASS, args, &ports())?;
        let k = bricks_element::taken_from::<KernelFilter>(&mut *e).expect("a KernelFilter");
        Ok(k.filters.spec.clone())
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn filter_specs_name_devices_in_order() {
        assert_eq!(
            spec("drop dev eth0, drop dev eth1"),
            Ok(FilterSpec {
                devices: strings(&["eth0", "eth1"]),
                command: None
            })
        );
        // Quoted words and extra space, as Click's word splitting reads
        // them; comments are gone before the element sees them.
        assert_eq!(
            spec("  \"drop\"   dev  'veth-1'  /* outside */").map(|s| s.devices),
            Ok(strings(&["veth-1"]))
        );
        // iptables' wildcard: every interface whose name begins with eth.
        assert_eq!(
            spec("drop dev eth+").map(|s| s.devices),
            Ok(strings(&["eth+"]))
        );
        // No FILTERSPEC: nothing to do, as in Click.
        assert_eq!(spec("").map(|s| s.devices), Ok(vec![]));
        assert_eq!(
            spec("IPTABLES_COMMAND /opt/ipt").map(|s| (s.devices, s.command)),
            Ok((vec![], Some(strings(&["/opt/ipt"]))))
        );
    }

    #[test]
    fn anything_but_drop_dev_devname_is_clicks_error() {
        for bad in [
            "accept dev eth0",
            "drop eth0",
            "drop dev",
            "drop",
            "drop dev eth0 eth1",
            "DROP dev eth0",
            "drop DEV eth0",
            "drop dev \"\"",
            "drop dev eth0, drop if eth1",
        ] {
            assert_eq!(spec(bad), Err(SPEC_FORM.to_string()), "{bad}");
        }
        // An unknown keyword is a FILTERSPEC like any other argument.
        assert_eq!(spec("BOGUS 1"), Err(SPEC_FORM.to_string()));
        assert!(spec("drop dev \"eth0")
            .unwrap_err()
            .contains("unterminated"));
    }

    #[test]
    fn device_names_are_checked_as_linux_checks_them() {
        assert!(spec("drop dev abcdefghijklmno").is_ok(), "15 bytes");
        for (bad, why) in [
            ("drop dev abcdefghijklmnop", "16 bytes long"),
            ("drop dev a/b", "`/`"),
            ("drop dev eth0:1", "`:`"),
            ("drop dev .", "`.` or `..`"),
            ("drop dev ..", "`.` or `..`"),
            ("drop dev \"a b\"", "white space (byte 0x20)"),
            ("drop dev \"a\\tb\"", "white space (byte 0x09)"),
            ("drop dev \"a\\x00b\"", "NUL"),
            // U+00E0 is C3 A0 in UTF-8: the kernel's isspace takes 0xA0.
            ("drop dev \"\u{e0}\"", "white space (byte 0xa0)"),
        ] {
            let e = spec(bad).unwrap_err();
            assert!(e.starts_with("bad DEVNAME"), "{bad}: {e}");
            assert!(e.contains(why), "{bad}: {e}");
        }
        // Dots and dashes inside a name are fine; so is a leading dash,
        // which reaches iptables as -i's argument.
        assert!(check_device_name("br-1.100").is_ok());
        assert!(check_device_name("-x").is_ok());
        assert!(check_device_name("...").is_ok());
    }

    #[test]
    fn iptables_command_is_split_as_a_shell_splits_words() {
        let w = |t: &str| command_words(t);
        assert_eq!(w("iptables"), Ok(strings(&["iptables"])));
        assert_eq!(
            w("  sudo\t/usr/sbin/iptables  -w "),
            Ok(strings(&["sudo", "/usr/sbin/iptables", "-w"]))
        );
        assert_eq!(
            w(r#"'/opt/my dir/ipt' "a \"b\" \$c \x" d\ e"#),
            Ok(strings(&["/opt/my dir/ipt", r#"a "b" $c \x"#, "d e"]))
        );
        assert_eq!(w("''"), Err("names no command".into()));
        assert_eq!(w("   "), Err("names no command".into()));
        for bad in [
            "iptables; rm -rf /",
            "iptables | cat",
            "iptables > /dev/null",
            "iptables &",
            "$(which iptables)",
            "`which iptables`",
            "\"$HOME/ipt\"",
            "(iptables)",
        ] {
            let e = w(bad).unwrap_err();
            assert!(e.contains("only to a shell"), "{bad}: {e}");
        }
        assert!(w("'open").unwrap_err().contains("unterminated"));
        assert!(w("\"open").unwrap_err().contains("unterminated"));
        // Through the element: Click's quoted form.
        assert_eq!(
            spec("drop dev eth0, IPTABLES_COMMAND \"sudo iptables -w\"").map(|s| s.command),
            Ok(Some(strings(&["sudo", "iptables", "-w"])))
        );
        let e = spec("IPTABLES_COMMAND \"iptables 2>/dev/null\"").unwrap_err();
        assert!(e.starts_with("bad argument IPTABLES_COMMAND"), "{e}");
    }

    #[test]
    fn rules_are_clicks_iptables_arguments_one_argument_per_word() {
        let r = Rule {
            program: strings(&["sudo", "/usr/sbin/iptables"]),
            device: "eth+".into(),
        };
        assert_eq!(
            r.argv(true),
            strings(&[
                "sudo",
                "/usr/sbin/iptables",
                "-A",
                "INPUT",
                "-i",
                "eth+",
                "-j",
                "DROP"
            ])
        );
        assert_eq!(
            r.argv(false),
            strings(&[
                "sudo",
                "/usr/sbin/iptables",
                "-D",
                "INPUT",
                "-i",
                "eth+",
                "-j",
                "DROP"
            ])
        );
        assert_eq!(
            shell_line(&strings(&["/opt/my dir/ipt", "-i", "it's"])),
            r#"'/opt/my dir/ipt' -i 'it'\''s'"#
        );
    }

    #[test]
    fn without_iptables_command_clicks_places_are_searched() {
        let s = FilterSpec {
            devices: strings(&["eth0"]),
            command: None,
        };
        let found = IPTABLES_PATHS
            .iter()
            .find(|p| nix::unistd::access(**p, nix::unistd::AccessFlags::X_OK).is_ok());
        match (s.program(), found) {
            (Ok(p), Some(f)) => assert_eq!(p, vec![f.to_string()]),
            (Err(e), None) => {
                assert!(e.contains("no `iptables` executable found"), "{e}");
                assert!(e.contains("IPTABLES_COMMAND"), "{e}");
            }
            (got, found) => panic!("{got:?} with {found:?} on this host"),
        }
        let s = FilterSpec {
            devices: vec![],
            command: Some(strings(&["x", "y"])),
        };
        assert_eq!(s.program(), Ok(strings(&["x", "y"])));
    }

    /// A stand-in for iptables in a temporary directory: it appends its
    /// arguments to `log` and fails, saying so on standard error, for a
    /// device whose name begins with `fail`. It is run as `/bin/sh
    /// SCRIPT`, not executed itself: a file just written may still be open
    /// in a child another test thread forks, and exec(2) of it would fail
    /// with ETXTBSY.
    struct FakeIptables {
        _dir: tempfile::TempDir,
        path: PathBuf,
        log: PathBuf,
    }

    impl FakeIptables {
        fn new() -> FakeIptables {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("fake-iptables");
            let log = dir.path().join("log");
            std::fs::write(
                &path,
                format!(
                    "#!/bin/sh\n\
                     echo \"$*\" >> '{}'\n\
                     case \"$4\" in fail*) echo \"no such device $4\" >&2; exit 2;; esac\n\
                     exit 0\n",
                    log.display()
                ),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            FakeIptables {
                _dir: dir,
                path,
                log,
            }
        }

        fn calls(&self) -> Vec<String> {
            std::fs::read_to_string(&self.log)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect()
        }

        fn filters(&self, devices: &[&str]) -> Filters {
            Filters::new(FilterSpec {
                devices: strings(devices),
                command: Some(self.command()),
            })
        }

        fn command(&self) -> Vec<String> {
            vec!["/bin/sh".into(), self.path.display().to_string()]
        }

        /// The command as the `rules` handler and errors print it.
        fn line(&self) -> String {
            shell_line(&self.command())
        }
    }

    #[test]
    fn rules_are_added_in_order_once_and_deleted_newest_first_once() {
        let fake = FakeIptables::new();
        let f = fake.filters(&["eth0", "eth1"]);
        assert_eq!(f.rules_text(), "");
        assert_eq!(f.start(), Ok(Started::Added));
        assert_eq!(f.start(), Ok(Started::Nothing));
        let p = fake.line();
        assert_eq!(
            f.rules_text(),
            format!("{p} -A INPUT -i eth0 -j DROP\n{p} -A INPUT -i eth1 -j DROP\n")
        );
        assert!(f.stop().is_empty());
        assert!(f.stop().is_empty());
        // Stopped for good: a late start adds nothing.
        assert_eq!(f.start(), Ok(Started::Nothing));
        assert_eq!(f.rules_text(), "");
        assert_eq!(
            fake.calls(),
            [
                "-A INPUT -i eth0 -j DROP",
                "-A INPUT -i eth1 -j DROP",
                "-D INPUT -i eth1 -j DROP",
                "-D INPUT -i eth0 -j DROP",
            ]
        );
        drop(f);
        assert_eq!(fake.calls().len(), 4, "nothing left for Drop to delete");
    }

    #[test]
    fn a_failure_undoes_the_rules_added_before_it() {
        let fake = FakeIptables::new();
        let f = fake.filters(&["eth0", "eth1", "fail2", "eth3"]);
        let e = f.start().unwrap_err();
        let p = fake.line();
        assert!(
            e.starts_with(&format!(
                "`{p} -A INPUT -i fail2 -j DROP` failed (exit status: 2)"
            )),
            "{e}"
        );
        assert!(e.contains("no such device fail2"), "{e}");
        assert!(e.contains("the router does not start"), "{e}");
        assert!(
            e.contains("the 2 rules added before it were deleted again"),
            "{e}"
        );
        assert_eq!(
            fake.calls(),
            [
                "-A INPUT -i eth0 -j DROP",
                "-A INPUT -i eth1 -j DROP",
                "-A INPUT -i fail2 -j DROP",
                "-D INPUT -i eth1 -j DROP",
                "-D INPUT -i eth0 -j DROP",
            ]
        );
        assert_eq!(f.rules_text(), "");
        // Failed is final: no instance tries again, stopping deletes
        // nothing more.
        assert_eq!(f.start(), Ok(Started::Nothing));
        assert!(f.stop().is_empty());
        assert_eq!(fake.calls().len(), 5);
    }

    #[test]
    fn commands_that_cannot_run_or_fail_silently_are_reported() {
        let f = Filters::new(FilterSpec {
            devices: strings(&["eth0"]),
            command: Some(strings(&["/nonexistent/bricks-iptables"])),
        });
        let e = f.start().unwrap_err();
        assert!(
            e.starts_with(
                "`/nonexistent/bricks-iptables -A INPUT -i eth0 -j DROP`: cannot run it:"
            ),
            "{e}"
        );
        let f = Filters::new(FilterSpec {
            devices: strings(&["eth0"]),
            command: Some(strings(&["false"])),
        });
        let e = f.start().unwrap_err();
        assert!(
            e.starts_with(
                "`false -A INPUT -i eth0 -j DROP` failed (exit status: 1) with no output"
            ),
            "{e}"
        );
        // Output is bounded, and kept whole up to the bound.
        let loud = strings(&["sh", "-c", "yes 0123456789 | head -c 100000; exit 3", "sh"]);
        match run_command(&loud) {
            Err(CommandError::Failed(_, status, out)) => {
                assert_eq!(status.code(), Some(3));
                assert_eq!(out.len(), OUTPUT_KEPT);
                assert!(out.starts_with("0123456789\n0123456789\n"));
            }
            other => panic!("{other:?}"),
        }
        assert!(run_command(&strings(&["true"])).is_ok());
    }

    #[test]
    fn a_command_is_bounded_in_time_whatever_it_does() {
        let limit = Duration::from_millis(300);
        for argv in [
            // Hangs.
            strings(&["sleep", "5"]),
            // Writes without end.
            strings(&["yes"]),
        ] {
            let start = Instant::now();
            let e = run_command_within(&argv, limit).unwrap_err();
            assert!(matches!(e, CommandError::TimedOut(..)), "{argv:?}: {e}");
            assert_eq!(
                e.to_string(),
                format!(
                    "`{}` was still running after 300ms and was killed",
                    argv.join(" ")
                )
            );
            assert!(start.elapsed() < Duration::from_secs(3), "{argv:?}");
        }
        // A child of the command that keeps the output open does not
        // hold the caller once the command itself has ended.
        let start = Instant::now();
        let bg = strings(&["sh", "-c", "sleep 5 & exit 0"]);
        assert!(run_command_within(&bg, Duration::from_secs(4)).is_ok());
        assert!(start.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn a_rule_that_cannot_be_deleted_is_reported_with_the_command_to_delete_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ipt");
        // Adds succeed, deletes fail.
        std::fs::write(
            &path,
            "#!/bin/sh\n[ \"$1\" = -A ] && exit 0\necho \"Bad rule\" >&2\nexit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let f = Filters::new(FilterSpec {
            devices: strings(&["eth0"]),
            command: Some(vec!["/bin/sh".into(), path.display().to_string()]),
        });
        assert_eq!(f.start(), Ok(Started::Added));
        let errors = f.stop();
        assert_eq!(errors.len(), 1, "{errors:?}");
        let p = shell_line(&["/bin/sh".into(), path.display().to_string()]);
        assert!(
            errors[0].starts_with("could not delete a rule"),
            "{}",
            errors[0]
        );
        assert!(errors[0].contains("Bad rule"), "{}", errors[0]);
        assert!(
            errors[0].ends_with(&format!(
                "delete it by hand with `{p} -D INPUT -i eth0 -j DROP`"
            )),
            "{}",
            errors[0]
        );
        assert!(f.stop().is_empty(), "reported once");
    }

    /// Elements of one configured KernelFilter on `workers` workers,
    /// sharing their state as the runtime makes them share it.
    fn workers(args: &str, workers: usize) -> Vec<(Graph, WorkerState)> {
        let slot = SharedSlot::new();
        let parsed = parse_args(args).unwrap();
        (0..workers)
            .map(|w| {
                let mut a = Args::new(&parsed, None).with_shared(&slot);
                let e = (CLASS.make)(&mut a, &ports()).unwrap();
                a.complete().unwrap();
                let no_edges: Box<[Edge]> = Box::new([]);
                let g = Graph::new(
                    vec![e],
                    vec!["kf".into()],
                    vec![no_edges.clone()],
                    vec![no_edges],
                );
                (g, WorkerState::new(w, workers))
            })
            .collect()
    }

    fn with_fake(fake: &FakeIptables, devices: &str) -> String {
        format!(
            "{devices}, IPTABLES_COMMAND \"/bin/sh '{}'\"",
            fake.path.display()
        )
    }

    #[test]
    fn every_worker_starts_and_stops_but_the_rules_change_once() {
        let fake = FakeIptables::new();
        let mut ws = workers(&with_fake(&fake, "drop dev eth0, drop dev eth1"), 3);
        for (g, s) in ws.iter_mut() {
            g.with_element(0, s, |e, cx| e.start(cx));
            assert!(s.errors.is_empty() && !s.stop_requested && s.timer_requests.is_empty());
        }
        assert_eq!(fake.calls().len(), 2);
        let p = fake.line();
        for (g, _) in &ws {
            assert_eq!(
                g.read_handler(0, "rules", bricks_packet::Timestamp(0))
                    .unwrap()
                    .into_text(),
                format!("{p} -A INPUT -i eth0 -j DROP\n{p} -A INPUT -i eth1 -j DROP\n")
            );
        }
        // A router that stops: the stopping hook leaves the rules for
        // shutdown, which deletes them once.
        for (g, s) in ws.iter_mut() {
            s.stopping = true;
            g.with_element(0, s, |e, cx| e.stopping(cx));
        }
        assert_eq!(fake.calls().len(), 2);
        for (g, s) in ws.iter_mut() {
            g.with_element(0, s, |e, cx| e.shutdown(cx));
            assert!(s.errors.is_empty());
        }
        assert_eq!(
            fake.calls()[2..],
            ["-D INPUT -i eth1 -j DROP", "-D INPUT -i eth0 -j DROP"]
        );
        drop(ws);
        assert_eq!(fake.calls().len(), 4);
    }

    #[test]
    fn a_failed_start_is_reported_once_and_stops_the_router() {
        let fake = FakeIptables::new();
        let mut ws = workers(&with_fake(&fake, "drop dev eth0, drop dev fail1"), 2);
        // Worker 0 runs a driver script (element 7) that manages stops.
        ws[0].1.stop_manager = Some(7);
        for (g, s) in ws.iter_mut() {
            g.with_element(0, s, |e, cx| e.start(cx));
        }
        let (first, second) = (&ws[0].1, &ws[1].1);
        assert_eq!(first.errors.len(), 1, "{:?}", first.errors);
        assert!(first.errors[0].starts_with("kf: `"), "{}", first.errors[0]);
        assert!(first.errors[0].contains("no such device fail1"));
        assert!(second.errors.is_empty());
        assert_eq!(fake.calls().len(), 3, "{:?}", fake.calls());
        // Every worker stops, with no stop manager left to count it as
        // an event, and again from a timer in the first round.
        for s in [first, second] {
            assert!(s.stop_requested);
            assert_eq!(s.stop_manager, None);
            assert_eq!(s.timer_requests.len(), 1);
        }
        let (g, s) = &mut ws[0];
        s.stop_requested = false;
        s.stop_manager = Some(7);
        g.with_element(0, s, |e, cx| e.run_timer(cx));
        assert!(s.stop_requested);
        assert_eq!(s.stop_manager, None);
        for (g, s) in ws.iter_mut() {
            g.with_element(0, s, |e, cx| e.shutdown(cx));
        }
        assert_eq!(fake.calls().len(), 3);
    }

    #[test]
    fn a_hot_swap_keeps_shared_rules_and_deletes_replaced_ones() {
        let fake = FakeIptables::new();
        let mut old = workers(&with_fake(&fake, "drop dev eth0"), 1);
        let (g, s) = &mut old[0];
        g.with_element(0, s, |e, cx| e.start(cx));
        assert_eq!(fake.calls().len(), 1);
        // A dropped element (no KernelFilter of its name in the new
        // configuration): stopping without the router stopping.
        g.with_element(0, s, |e, cx| e.stopping(cx));
        assert_eq!(fake.calls()[1..], ["-D INPUT -i eth0 -j DROP"]);

        // Same name and class, other arguments: the old rules go when the
        // new element takes over, then the new ones come.
        let fake = FakeIptables::new();
        let mut old = workers(&with_fake(&fake, "drop dev eth0"), 1);
        let mut new = workers(&with_fake(&fake, "drop dev eth1"), 1);
        let (og, os) = &mut old[0];
        og.with_element(0, os, |e, cx| e.start(cx));
        let (ng, ns) = &mut new[0];
        og.with_element_mut(0, |old_el| {
            ng.with_element(0, ns, |e, cx| e.take_state(old_el, cx));
        });
        ng.with_element(0, ns, |e, cx| e.start(cx));
        assert_eq!(
            fake.calls(),
            [
                "-A INPUT -i eth0 -j DROP",
                "-D INPUT -i eth0 -j DROP",
                "-A INPUT -i eth1 -j DROP"
            ]
        );
        drop(old);
        assert_eq!(fake.calls().len(), 3);
        drop(new);
        assert_eq!(
            fake.calls()[3..],
            ["-D INPUT -i eth1 -j DROP"],
            "Drop deletes"
        );
    }

    #[test]
    fn building_an_element_runs_nothing() {
        let fake = FakeIptables::new();
        let ws = workers(&with_fake(&fake, "drop dev eth0"), 2);
        drop(ws);
        assert!(fake.calls().is_empty());
        assert!(!fake.log.exists());
    }
}
