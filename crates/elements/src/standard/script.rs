//! `Script` and `DriverManager`: Click's scripting language for
//! controlling a running router (elements/standard/script.cc,
//! drivermanager.cc). A script is a list of instructions, one per
//! argument: it sets variables, prints, reads and writes handlers, waits
//! for a time or for a step, jumps, and stops the router. Text undergoes
//! Click's substitutions (`$var`, `${var}`, `$(handler args)`, see
//! [`text::expand`]) and quoting rules (`set` keeps quotes, `setq` removes
//! a layer).
//!
//! The interpreter is a port of Click's `Script::step`: an instruction
//! pointer, a step count that blocking instructions (`pause`, `wait`)
//! consume, and at most 1,000 jumps without blocking before the script is
//! disabled ("too many jumps, giving up"), so no script can hold a worker.
//! Handler calls nest at most [`MAX_CALL_DEPTH`] deep (a script whose
//! `run` reads another script's `run` ...), and an element called while it
//! is running answers "element busy", so every call ends.
//!
//! Types: `ACTIVE` (runs at start), `PASSIVE` (runs when its `run` handler
//! is called), `PACKET` (runs for each packet, which leaves on the output
//! the script returns), `PROXY` (runs for any handler called on it), and
//! `DRIVER` (a `DriverManager`): it manages the router's stop requests;
//! `SIGNAL` scripts run when the process receives a signal.
//! While a driver script is running, a stop request (`STOP true` on a
//! source, `write stop`, another script's `stop`) steps it past one
//! `pause`/`wait_stop` instead of ending the run, and the run ends when
//! the script ends (`stop`, or its last instruction). When every source
//! is done and the graph has drained, that too is a stop request for it.

mod funcs;
mod text;

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, Packet,
    PortInfo, Stats, TaskKind, TaskResult,
};
use bricks_packet::Timestamp;
use funcs::Rng;
use std::cell::Cell;
use std::collections::VecDeque;
use std::io::Write;
use std::time::Duration;
use text::{
    bool_text, is_blank, parse_bool, parse_int, shift_word, string_word, uncomment, unquote,
};
pub use text::{expand, VarKind};

/// The `Script` class.
pub static SCRIPT: ElementClass = ElementClass {
    name: "Script",
    ports: "-/-",
    processing: "ah/ah",
    manual: &SCRIPT_MANUAL,
    make: make_script,
};

/// The `DriverManager` class: a `Script` whose default type is `DRIVER`.
pub static DRIVER_MANAGER: ElementClass = ElementClass {
    name: "DriverManager",
    ports: "-/-",
    processing: "ah/ah",
    manual: &DRIVER_MANAGER_MANUAL,
    make: make_driver_manager,
};

static TYPE_KEYWORD: [Keyword; 1] = [Keyword {
    name: "TYPE",
    ty: "ACTIVE, PASSIVE, PACKET, PROXY, DRIVER or SIGNAL SIGNO...",
    default: Some("PACKET with ports, else ACTIVE (DRIVER for DriverManager)"),
    doc: "when the script runs: at start (ACTIVE), when its `run` handler is called \
          (PASSIVE), for each packet (PACKET: `$input` is the input port, the value \
          returned is the output port), for any handler called on it (PROXY: `$0` is the \
          handler's name, `$write` whether it was written), as the router's stop \
          manager (DRIVER), or when the process receives one of the signals SIGNO (SIGNAL: \
          INT, HUP, USR1, ... or numbers; a signal arriving while it runs runs it again \
          after an `end`; a run that stops short of `end` leaves its signals their default \
          action until it gets there, and one that came meanwhile takes that action then, \
          as in Click). INT and TERM also stop the router.",
}];

static SCRIPT_MANUAL: Manual = Manual {
    summary: "scripts a router: variables, handler calls, waits, jumps, stop",
    synopsis: "Script([TYPE type,] INSTRUCTIONS...)",
    description: "Runs a script of instructions, one per argument, each subject to \
        substitution: `$var` and `${var}` are variables, `$(HANDLER ARGS)` the value of a \
        read handler (`$(c.count)`, `$(add $x 1)`: a handler without an element is the \
        script's own), `$args`, `$1`..`$9` and `$#` the arguments of the `run` call, `$?` \
        the status of the last write (0, or negative on error), `$$` the process id. \
        Instructions: `set VAR TEXT` (`setq` removes a layer of quotes), `init VAR TEXT` \
        and `export VAR [TEXT]` (once, at start; `export` also makes a read handler VAR), \
        `print [>FILE|>>FILE] TEXT|HANDLER` (to standard output or a file; `printn` \
        without the newline, `printq`/`printnq` unquote the handler's arguments), \
        `read HANDLER [ARGS]` (name and value to standard error), `write HANDLER [ARGS]` \
        (`write stop` stops the router), `save TEXT [FILE]`, `append TEXT [FILE]`, \
        `pause [N]` / `wait_step [N]` / `wait_stop [N]` (block until stepped N times), \
        `wait TIME` / `wait_time TIME` / `wait_for TIME` (block for TIME or until a step), \
        `label L`, `goto L [CONDITION]` (`goto exit|end|stop|error|loop|begin` too), \
        `loop`, `end`, `exit`, `stop` (end and stop the router), `return [VALUE]` \
        (`returnq`), `error [MSG]` (`errorq`). A script that jumps 1,000 times without \
        blocking is disabled with \"too many jumps, giving up\". Read handlers with \
        arguments: add, sub, min, max, mul, div, idiv (integers, or reals when an \
        argument is not an integer), mod, rem, neg, abs, eq, ne, lt, gt, le, ge (numbers, \
        else strings), not, and, or, nand, nor, if, in, first, length, unquote, sprintf, \
        random, htons, htonl, ntohs, ntohl, readable, writable, now, cat, catq, kill \
        (`kill SIGNO PID...`), get, shift; \
        write handlers step, goto, set; run is read and write.",
    ports: "none, except for PACKET scripts: inputs and outputs, push or pull; a packet \
        leaves on the output its script returns (`end`: 0; `exit` or a bad port: dropped \
        and counted)",
    keywords: &TYPE_KEYWORD,
    counters: &[(
        "drops",
        "packets a PACKET script dropped (exit, or no such output)",
    )],
    example: "InfiniteSource(LIMIT 5) -> c :: Counter -> Discard;\n\
        Script(wait 0.01, print $(c.count), write c.reset, print $(add $(c.count) 1), stop);",
    see_also: &["DriverManager"],
};

static DRIVER_MANAGER_MANUAL: Manual = Manual {
    summary: "a Script that manages the router's stop requests",
    synopsis: "DriverManager(INSTRUCTIONS...)",
    description: "A Script whose default TYPE is DRIVER (see Script for the \
        instructions). A stop request (a source's `STOP true`, `write stop`, another \
        script's `stop`) does not end the run while a DriverManager runs: it steps the \
        manager's script past one `pause`/`wait_stop`, or cuts a `wait` short. The run \
        ends at the script's `stop` (also its implicit last instruction), or at the first \
        stop request after it ended with `end`, `exit` or `error`. When every source is \
        done and the graph has drained, that too is a stop request. `DriverManager(wait_stop 2, print c.count)` lets two \
        sources stop before it prints and ends the run. The manager runs on worker 0; \
        stop requests made on other workers end the run directly.",
    ports: "none",
    keywords: &TYPE_KEYWORD,
    counters: &[],
    example: "InfiniteSource(LIMIT 3, STOP true) -> c :: Counter -> Discard;\n\
        InfiniteSource(LIMIT 4, STOP true) -> c2 :: Counter -> Discard;\n\
        DriverManager(wait_stop 2, print $(add $(c.count) $(c2.count)));",
    see_also: &["Script"],
};

/// At most this many jumps without blocking before a script is disabled
/// (Click's `max_jumps`).
const MAX_JUMPS: u32 = 1000;

/// How deep handler calls through scripts nest on one worker.
pub const MAX_CALL_DEPTH: u32 = 32;

/// The largest file `cat` reads.
const MAX_CAT: u64 = text::MAX_TEXT as u64;

/// How many `step`, `goto` and `run` writes that arrived without a
/// context (a control socket) wait for the script's task.
const MAX_PENDING: usize = 64;

thread_local! {
    static CALL_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// What a script is for (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Active,
    Driver,
    Passive,
    Proxy,
    Packet,
    /// Runs when the process receives one of its signals.
    Signal,
}

/// An instruction (Click's `Insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Initial,
    WaitStep,
    WaitTime,
    Print,
    PrintQ,
    PrintN,
    PrintNQ,
    Read,
    ReadQ,
    Write,
    WriteQ,
    Set,
    SetQ,
    Init,
    InitQ,
    Export,
    ExportQ,
    Save,
    Append,
    Label,
    Goto,
    Return,
    ReturnQ,
    Exit,
    End,
    Stop,
    Error,
    ErrorQ,
}

/// Where a `goto` leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    At(usize),
    /// `goto exit`, `end`, `stop`, `error`: finishes as that instruction.
    Finish(Op),
}

#[derive(Debug, Clone)]
struct Insn {
    op: Op,
    /// `pause`: the steps to wait for; `set` and friends: the variable.
    arg: i64,
    /// `pause`: the steps seen so far.
    arg2: i64,
    target: Target,
    text: String,
}

/// How the script was prodded (Click's `STEP_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StepType {
    Normal,
    /// A stop request handed to the driver script.
    Router,
    Timer,
    Jump,
}

/// Which of the step handlers was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StepWhat {
    Step,
    Run,
    Goto,
}

/// A `Script` or `DriverManager`.
pub struct Script {
    kind: Kind,
    class: &'static str,
    insns: Vec<Insn>,
    /// (name, value) of every variable.
    vars: Vec<(String, String)>,
    /// The variables exported as read handlers.
    exports: Vec<usize>,
    pos: usize,
    step_count: i64,
    write_status: i64,
    run_handler_name: String,
    run_args: String,
    run_write: bool,
    /// Click's `_cur_steps`: steps asked for while the script runs.
    cur_steps: Option<i64>,
    /// The script blocked during a stop request's step: the run goes on.
    raised: bool,
    /// When the pending `wait` ends.
    timer_at: Option<Timestamp>,
    last_error: Option<String>,
    pending: VecDeque<(&'static str, String)>,
    rng: Rng,
    drops: u64,
    /// TYPE SIGNAL: the signals, the flag each one's handler sets, and
    /// the handlers' registrations (removed at shutdown).
    signals: Vec<i32>,
    signal_flags: Vec<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Whether the script is not installed as its signals' handler: from
    /// when a run started by a signal stops short of `end` (in a wait,
    /// at `stop`) until it reaches `end`, a signal has its default action
    /// (Click's one-shot handlers). A signal arriving while the script
    /// runs waits for the run's end, as Click's `process_signals`.
    signal_disarmed: std::sync::Arc<std::sync::atomic::AtomicBool>,
    signal_ids: Vec<signal_hook::SigId>,
}

fn make_script(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make(args, ports, "Script", None)
}

fn make_driver_manager(
    args: &mut Args<'_>,
    ports: &PortInfo,
) -> Result<Box<dyn Element>, ArgError> {
    make(args, ports, "DriverManager", Some(Kind::Driver))
}

fn make(
    args: &mut Args<'_>,
    ports: &PortInfo,
    class: &'static str,
    default: Option<Kind>,
) -> Result<Box<dyn Element>, ArgError> {
    let type_arg: Option<String> = args.read("TYPE")?;
    let lines: Vec<(String, bricks_config::Span)> = args
        .rest()
        .into_iter()
        .map(|(t, s)| (t.to_string(), s))
        .collect();
    let has_ports = ports.ninputs() > 0 || ports.noutputs() > 0;
    let mut signals = Vec::new();
    let kind = match type_arg.as_deref().map(str::trim) {
        Some("ACTIVE") => Kind::Active,
        Some("PASSIVE") => Kind::Passive,
        Some("PACKET") | Some("PUSH") => Kind::Packet,
        Some("PROXY") => Kind::Proxy,
        Some("DRIVER") => Kind::Driver,
        Some(t) if t.split_whitespace().next() == Some("SIGNAL") => {
            signals = t
                .split_whitespace()
                .skip(1)
                .map(signal_number)
                .collect::<Option<Vec<i32>>>()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| ArgError::new("bad signal number"))?;
            Kind::Signal
        }
        Some(t) => return Err(ArgError::new(format!("bad TYPE `{t}'"))),
        None => default.unwrap_or(if has_ports {
            Kind::Packet
        } else {
            Kind::Active
        }),
    };
    if kind == Kind::Packet && ports.ninputs() == 0 {
        return Err(ArgError::new("PACKET script must have inputs"));
    }
    if kind != Kind::Packet && has_ports {
        return Err(ArgError::new("ports allowed only on PACKET scripts"));
    }
    let mut s = Script::parse(kind, class, &lines)?;
    s.signals = signals;
    s.rng = Rng::new(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
    );
    Ok(Box::new(s))
}

impl Script {
    fn new(kind: Kind, class: &'static str) -> Script {
        Script {
            kind,
            class,
            insns: Vec::new(),
            vars: Vec::new(),
            exports: Vec::new(),
            pos: 0,
            step_count: 0,
            write_status: 0,
            run_handler_name: String::new(),
            run_args: String::new(),
            run_write: false,
            cur_steps: None,
            raised: false,
            timer_at: None,
            last_error: None,
            pending: VecDeque::new(),
            rng: Rng::new(1),
            drops: 0,
            signals: Vec::new(),
            signal_flags: Vec::new(),
            signal_disarmed: Default::default(),
            signal_ids: Vec::new(),
        }
    }

    /// Reads the instructions (Click's `Script::configure`).
    fn parse(
        kind: Kind,
        class: &'static str,
        lines: &[(String, bricks_config::Span)],
    ) -> Result<Script, ArgError> {
        let mut s = Script::new(kind, class);
        let mut spans = Vec::new();
        for (raw, span) in lines {
            let syntax = |name: &str| ArgError::at(*span, format!("syntax error at `{name}'"));
            let mut rest = uncomment(raw);
            let name = shift_word(&mut rest);
            if name.is_empty() {
                continue;
            }
            let op = match name.as_str() {
                "append" => Op::Append,
                "end" => Op::End,
                "error" => Op::Error,
                "errorq" => Op::ErrorQ,
                "exit" => Op::Exit,
                "export" => Op::Export,
                "exportq" => Op::ExportQ,
                "goto" => Op::Goto,
                "init" => Op::Init,
                "initq" => Op::InitQ,
                "label" => Op::Label,
                "loop" => {
                    if !rest.is_empty() {
                        return Err(syntax(&name));
                    }
                    s.add(Op::Goto, 0, Target::At(0), String::new(), *span, &mut spans);
                    continue;
                }
                "pause" | "wait_step" | "wait_stop" => Op::WaitStep,
                "print" => Op::Print,
                "printn" => Op::PrintN,
                "printnq" => Op::PrintNQ,
                "printq" => Op::PrintQ,
                "read" => Op::Read,
                "readq" => Op::ReadQ,
                "return" => Op::Return,
                "returnq" => Op::ReturnQ,
                "save" => Op::Save,
                "set" => Op::Set,
                "setq" => Op::SetQ,
                "stop" => Op::Stop,
                "wait" => {
                    if rest.is_empty() {
                        Op::WaitStep
                    } else {
                        Op::WaitTime
                    }
                }
                "wait_for" | "wait_time" => Op::WaitTime,
                "write" => Op::Write,
                "writeq" => Op::WriteQ,
                _ => return Err(syntax(&name)),
            };
            match op {
                Op::WaitStep => {
                    let n = if rest.is_empty() {
                        1
                    } else {
                        parse_int(&rest)
                            .filter(|&n| (0..=i64::from(u32::MAX)).contains(&n))
                            .ok_or_else(|| syntax(&name))?
                    };
                    s.add(op, n, Target::At(0), String::new(), *span, &mut spans);
                }
                Op::Return
                | Op::ReturnQ
                | Op::Set
                | Op::SetQ
                | Op::Init
                | Op::InitQ
                | Op::Export
                | Op::ExportQ => {
                    let (var, text) = if matches!(op, Op::Return | Op::ReturnQ) {
                        ("_".to_string(), rest)
                    } else {
                        let var = shift_word(&mut rest);
                        if var.is_empty() || (matches!(op, Op::Set | Op::SetQ) && rest.is_empty()) {
                            return Err(syntax(&name));
                        }
                        (var, rest)
                    };
                    let v = s.variable(&var, true) as i64;
                    if matches!(op, Op::Export | Op::ExportQ) && !s.exports.contains(&(v as usize))
                    {
                        s.exports.push(v as usize);
                    }
                    s.add(op, v, Target::At(0), text, *span, &mut spans);
                }
                Op::Label => {
                    let word = shift_word(&mut rest);
                    if word.is_empty() || !rest.is_empty() {
                        return Err(syntax(&name));
                    }
                    s.add(op, 0, Target::At(0), word, *span, &mut spans);
                }
                Op::End | Op::Exit | Op::Stop => {
                    if !rest.is_empty() {
                        return Err(syntax(&name));
                    }
                    s.add(op, 0, Target::At(0), rest, *span, &mut spans);
                }
                _ => s.add(op, 0, Target::At(0), rest, *span, &mut spans),
            }
        }
        // Labels are known now: resolve the gotos.
        for (i, span) in spans.iter().enumerate() {
            if s.insns[i].op == Op::Goto && !s.insns[i].text.is_empty() {
                let mut cond = std::mem::take(&mut s.insns[i].text);
                let label = shift_word(&mut cond);
                let target = s.find_label(&label);
                if target == Target::At(s.insns.len()) {
                    return Err(ArgError::at(*span, format!("no such label `{label}'")));
                }
                s.insns[i].target = target;
                s.insns[i].text = cond;
            }
        }
        if s.insns.is_empty() && kind == Kind::Driver {
            s.add(
                Op::WaitStep,
                1,
                Target::At(0),
                String::new(),
                None,
                &mut spans,
            );
        }
        let last = if kind == Kind::Driver {
            Op::Stop
        } else {
            Op::End
        };
        s.add(last, 0, Target::At(0), String::new(), None, &mut spans);
        Ok(s)
    }

    fn add(
        &mut self,
        op: Op,
        arg: i64,
        target: Target,
        text: String,
        span: impl Into<Option<bricks_config::Span>>,
        spans: &mut Vec<bricks_config::Span>,
    ) {
        let span = span.into().unwrap_or_default();
        // The first instruction is one that takes the first step.
        if self.insns.is_empty() && !matches!(op, Op::Initial | Op::WaitStep | Op::WaitTime) {
            self.add(Op::Initial, 0, Target::At(0), String::new(), span, spans);
        }
        self.insns.push(Insn {
            op,
            arg,
            arg2: 0,
            target,
            text,
        });
        spans.push(span);
    }

    fn find_label(&self, label: &str) -> Target {
        if let Some(i) = self
            .insns
            .iter()
            .position(|i| i.op == Op::Label && i.text == label)
        {
            return Target::At(i);
        }
        match label {
            "exit" => Target::Finish(Op::Exit),
            "end" => Target::Finish(Op::End),
            "stop" => Target::Finish(Op::Stop),
            "error" => Target::Finish(Op::Error),
            "errorq" => Target::Finish(Op::ErrorQ),
            "begin" | "loop" => Target::At(0),
            _ => Target::At(self.insns.len()),
        }
    }

    fn variable(&mut self, name: &str, add: bool) -> usize {
        if let Some(i) = self.vars.iter().position(|(n, _)| n == name) {
            return i;
        }
        if add {
            self.vars.push((name.to_string(), String::new()));
        }
        self.vars.len() - usize::from(add)
    }

    fn var_index(&self, name: &str) -> Option<usize> {
        self.vars.iter().position(|(n, _)| n == name)
    }

    fn set_var(&mut self, i: usize, mut value: String) {
        text::bound(&mut value);
        if let Some(v) = self.vars.get_mut(i) {
            v.1 = value;
        }
    }

    /// Reports a failed handler call as Click's default error handler
    /// does from a running script: the context line, then the indented
    /// error, without the element's name.
    fn report_call(&mut self, desc: &str, e: &str) {
        let message = format!("While calling `{desc}':\n  {e}");
        eprintln!("{message}");
        self.last_error = Some(message);
    }

    fn report(&mut self, cx: &Context<'_>, message: &str) {
        eprintln!("{} :: {}: {message}", cx.name(), self.class);
        self.last_error = Some(message.to_string());
    }

    /// Sets the `init` and `export` variables and starts an active or
    /// driver script (Click's `Script::initialize`).
    fn initialize(&mut self, cx: &mut Context<'_>) {
        for i in 0..self.insns.len() {
            let op = self.insns[i].op;
            if matches!(op, Op::Init | Op::InitQ | Op::Export | Op::ExportQ) {
                let text = self.insns[i].text.clone();
                let mut v = self.expand(&text, false, cx);
                if matches!(op, Op::InitQ | Op::ExportQ) {
                    v = unquote(&v);
                }
                self.set_var(self.insns[i].arg as usize, v);
            }
        }
        if self.kind == Kind::Signal && cx.worker() == home_worker(self.kind, cx) {
            for &sig in &self.signals {
                let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                self.signal_flags.push(flag.clone());
                let r = signal_hook::flag::register_conditional_default(
                    sig,
                    self.signal_disarmed.clone(),
                )
                .and_then(|a| {
                    self.signal_ids.push(a);
                    signal_hook::flag::register(sig, flag)
                });
                match r {
                    Ok(id) => self.signal_ids.push(id),
                    Err(e) => cx.report_error(format!("cannot handle signal {sig}: {e}")),
                }
            }
        }
        if !matches!(self.kind, Kind::Active | Kind::Driver)
            || cx.worker() != home_worker(self.kind, cx)
        {
            return;
        }
        if self.kind == Kind::Driver {
            if cx.stop_manager().is_some_and(|m| m != cx.element_index()) {
                cx.report_error("router has more than one driver script");
                return;
            }
            cx.manage_stops(true);
        }
        match self.insns.first().map(|i| i.op) {
            Some(Op::WaitTime) => {
                let text = self.insns[0].text.clone();
                self.schedule_wait(&text, cx);
            }
            Some(Op::Initial) => {
                self.insns[0].arg = 1;
                if self.kind == Kind::Driver {
                    // The first stop request runs the script up to its
                    // first blocking instruction (Click lowers the
                    // runcount here).
                    cx.request_stop();
                } else {
                    let now = cx.now();
                    self.timer_at = Some(now);
                    cx.schedule_at(now);
                }
            }
            _ => {}
        }
    }

    fn schedule_wait(&mut self, text: &str, cx: &mut Context<'_>) -> bool {
        let t = self.expand(text, false, cx);
        match <Duration as bricks_element::FromArg>::from_arg(&unquote(&t)) {
            Ok(d) => {
                let at = Timestamp(cx.now().0.saturating_add(d.as_nanos() as u64));
                self.timer_at = Some(at);
                cx.schedule_at(at);
                true
            }
            Err(_) => {
                self.report(cx, "syntax error at `wait'");
                false
            }
        }
    }

    /// Substitutes variables and handler calls in `text`.
    fn expand(&mut self, text: &str, quote_result: bool, cx: &mut Context<'_>) -> String {
        let mut lookup = |name: &str, kind: VarKind| self.lookup(name, kind, cx);
        expand(text, &mut lookup, quote_result)
    }

    /// One substitution (Click's `Script::Expander::expand`).
    fn lookup(&mut self, name: &str, kind: VarKind, cx: &mut Context<'_>) -> Option<String> {
        if kind == VarKind::Call {
            return match self.call(name, false, false, cx) {
                Ok((_, v)) => Some(v),
                Err(e) => {
                    self.report(cx, &e);
                    None
                }
            };
        }
        if let Some(i) = self.var_index(name) {
            return Some(self.vars[i].1.clone());
        }
        match name {
            "?" => Some(self.write_status.to_string()),
            "args" => Some(self.run_args.clone()),
            "$" => Some(std::process::id().to_string()),
            "0" => Some(self.run_handler_name.clone()),
            "#" => Some(text::words(&self.run_args).len().to_string()),
            "write" => Some(bool_text(self.run_write)),
            n if n
                .as_bytes()
                .first()
                .is_some_and(|b| (b'1'..=b'9').contains(b)) =>
            {
                let k: usize = n.parse().ok()?;
                let mut rest = self.run_args.clone();
                let mut word = String::new();
                for _ in 0..k {
                    word = shift_word(&mut rest);
                    if word.is_empty() && rest.is_empty() {
                        break;
                    }
                }
                Some(word)
            }
            _ => None,
        }
    }

    /// Calls the handler `desc` names (`[ELEMENT.]HANDLER [ARGS]`, Click's
    /// `HandlerCall`): returns its name as Click prints it and the value.
    fn call(
        &mut self,
        desc: &str,
        write: bool,
        unquote_value: bool,
        cx: &mut Context<'_>,
    ) -> Result<(String, String), String> {
        let mut value = desc.to_string();
        let word = shift_word(&mut value);
        let name = string_word(&word)
            .filter(|n| !n.is_empty())
            .ok_or("syntax error")?;
        if unquote_value {
            value = unquote(&value);
        }
        let here = cx.name().to_string();
        let own = |h: &str| format!("{here}.{h}");
        if let Some(h) = name.strip_prefix('.') {
            return self
                .global(h, &value, write, cx)
                .map(|v| (h.to_string(), v));
        }
        if name.ends_with('.') {
            return Err("syntax error".into());
        }
        if let Some((e, h)) = name.split_once('.') {
            match cx.find_element(e) {
                Some(i) if i == cx.element_index() => {
                    return self.own(h, &value, write, cx).map(|v| (own(h), v));
                }
                Some(i) => {
                    let v = if write {
                        cx.write_handler_everywhere(i, h, &value, true)?
                    } else {
                        cx.call_handler(i, h, &value, false)?
                    };
                    return Ok((name.clone(), v));
                }
                None => {
                    if self.has_handler(&name, write) {
                        return self.own(&name, &value, write, cx).map(|v| (own(&name), v));
                    }
                    return Err(format!("no element named `{e}'"));
                }
            }
        }
        if self.has_handler(&name, write) {
            return self.own(&name, &value, write, cx).map(|v| (own(&name), v));
        }
        self.global(&name, &value, write, cx)
            .map(|v| (name.clone(), v))
    }

    /// The router's own handlers: `stop` (write: stop requests, Click's
    /// `adjust_runcount(-N)`), `version`, `timewarp` (the clock's
    /// speed; a write changes it for the whole process, as Click's) and
    /// `hotconfig` (write: a configuration to swap in, as Click's `-R`).
    fn global(
        &mut self,
        h: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Result<String, String> {
        match (h, write) {
            ("stop", true) => {
                let n = parse_int(value.trim()).unwrap_or(1).clamp(1, 1000);
                for _ in 0..n {
                    cx.request_stop();
                }
                Ok(String::new())
            }
            ("version", false) => Ok(env!("CARGO_PKG_VERSION").to_string()),
            ("hotconfig" | "hotswap", true) => {
                cx.request_hotswap(value.to_string());
                Ok(String::new())
            }
            ("timewarp", false) => Ok(Timestamp::warp().to_string()),
            ("timewarp", true) => Timestamp::write_warp(value).map(|()| String::new()),
            (_, true) => Err(format!("no `{h}' write handler")),
            (_, false) => Err(format!("no `{h}' read handler")),
        }
    }

    /// Whether [`Script::global`] has handler `h` for a read or a write.
    fn is_global(h: &str, write: bool) -> bool {
        if write {
            matches!(h, "stop" | "hotconfig" | "hotswap" | "timewarp")
        } else {
            matches!(h, "version" | "timewarp")
        }
    }

    fn has_handler(&self, h: &str, write: bool) -> bool {
        if write {
            return matches!(h, "step" | "goto" | "run" | "set");
        }
        matches!(
            h,
            "run" | "now" | "cat" | "catq" | "kill" | "readable" | "writable" | "get" | "shift"
        ) || funcs::NAMES.contains(&h)
            || self.exports.iter().any(|&i| self.vars[i].0 == h)
    }

    /// One of the script's own handlers, or `Err` when it has no such
    /// handler.
    fn own(
        &mut self,
        h: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Result<String, String> {
        match self.own_handler(h, value, write, cx) {
            Some(r) => r,
            None if write => Err(format!("no `{}.{h}' write handler", cx.name())),
            None => Err(format!("no `{}.{h}' read handler", cx.name())),
        }
    }

    fn own_handler(
        &mut self,
        h: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        let depth = CALL_DEPTH.with(|d| d.get());
        if depth >= MAX_CALL_DEPTH {
            return Some(Err("handler calls nested too deeply".into()));
        }
        CALL_DEPTH.with(|d| d.set(depth + 1));
        let r = self.own_handler_at(h, value, write, cx);
        CALL_DEPTH.with(|d| d.set(depth));
        r
    }

    fn own_handler_at(
        &mut self,
        h: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        Some(match (h, write) {
            ("step", true) => self.step_handler(StepWhat::Step, value, h, write, cx),
            ("goto", true) => self.step_handler(StepWhat::Goto, value, h, write, cx),
            ("run", _) => self.step_handler(StepWhat::Run, value, h, write, cx),
            ("set", true) => {
                let mut rest = value.to_string();
                let name = shift_word(&mut rest);
                if name.is_empty() {
                    return Some(Err("no variable".into()));
                }
                if name == "args" {
                    self.run_args = rest;
                } else {
                    let i = self.variable(&name, true);
                    self.set_var(i, rest);
                }
                Ok(String::new())
            }
            ("get" | "shift", false) => {
                let mut rest = value.to_string();
                let mut name = shift_word(&mut rest);
                if name.is_empty() && h == "shift" {
                    name = "args".into();
                }
                if name.is_empty() {
                    return Some(Err("no variable".into()));
                }
                if !rest.is_empty() {
                    return Some(Err("too many arguments".into()));
                }
                let slot = if name == "args" {
                    Some(&mut self.run_args)
                } else {
                    self.var_index(&name).map(|i| &mut self.vars[i].1)
                };
                let Some(slot) = slot else {
                    return Some(Err(format!("undefined variable `{name}'")));
                };
                if h == "get" {
                    Ok(slot.clone())
                } else {
                    Ok(shift_word(slot))
                }
            }
            ("now", false) => {
                let t = cx.now().0;
                Ok(format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000))
            }
            ("cat" | "catq", false) => {
                let name = string_word(value.trim()).filter(|n| !n.is_empty());
                let Some(name) = name else {
                    return Some(Err("bad FILE".into()));
                };
                read_file(&name).map(|t| if h == "catq" { funcs::quoted(&t) } else { t })
            }
            ("kill", false) => kill(value),
            ("readable" | "writable", false) => {
                let mut all = true;
                for name in text::words(value) {
                    all &= self.handler_exists(&unquote(&name), h == "writable", cx);
                }
                Ok(bool_text(all))
            }
            (_, false) if funcs::NAMES.contains(&h) => {
                return funcs::call(h, value, &mut self.rng);
            }
            (_, false) if value.is_empty() && self.exports.iter().any(|&i| self.vars[i].0 == h) => {
                Ok(self.read_export(h).unwrap_or_default())
            }
            _ if self.kind == Kind::Proxy => {
                self.run_handler_name = h.to_string();
                return Some(self.step_handler(StepWhat::Run, value, h, write, cx));
            }
            _ => return None,
        })
    }

    fn read_export(&self, h: &str) -> Option<String> {
        self.exports
            .iter()
            .find(|&&i| self.vars[i].0 == h)
            .map(|&i| self.vars[i].1.clone())
    }

    fn handler_exists(&mut self, name: &str, write: bool, cx: &mut Context<'_>) -> bool {
        let (element, h) = match name.split_once('.') {
            Some((e, h)) => match cx.find_element(e) {
                Some(i) => (Some(i), h),
                None => return false,
            },
            None => (None, name),
        };
        match element {
            Some(i) if i != cx.element_index() => {
                let Ok(list) = cx.call_handler(i, "handlers", "", false) else {
                    return false;
                };
                list.lines().any(|l| {
                    l.split_once('\t').is_some_and(|(n, flags)| {
                        n == h && flags.contains(if write { 'w' } else { 'r' })
                    })
                })
            }
            _ => self.has_handler(h, write) || (element.is_none() && Script::is_global(h, write)),
        }
    }

    /// Click's `Script::step_handler`: `step [N|router]`, `goto LABEL`,
    /// `run [ARGS]`.
    fn step_handler(
        &mut self,
        what: StepWhat,
        value: &str,
        name: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Result<String, String> {
        let data = uncomment(value);
        if self.kind != Kind::Proxy || what != StepWhat::Run {
            self.run_handler_name = name.to_string();
        }
        self.run_write = write;
        let (nsteps, step_type) = match what {
            StepWhat::Goto => {
                let Target::At(at) = self.find_label(&uncomment(&data)) else {
                    return Err("jump to nonexistent label".into());
                };
                if at >= self.insns.len() {
                    return Err("jump to nonexistent label".into());
                }
                for i in &mut self.insns[at..] {
                    if i.op == Op::WaitStep {
                        i.arg2 = 0;
                    }
                }
                self.pos = at;
                (0, StepType::Jump)
            }
            StepWhat::Run => {
                self.pos = 0;
                self.run_args = value.to_string();
                (0, StepType::Jump)
            }
            StepWhat::Step => match data.as_str() {
                "router" => (1, StepType::Router),
                "" => (1, StepType::Normal),
                d => match parse_int(d).and_then(|n| i32::try_from(n).ok()) {
                    Some(n) => (i64::from(n), StepType::Normal),
                    None => {
                        self.run_handler_name.clear();
                        return Err("syntax error".into());
                    }
                },
            },
        };
        self.raised = false;
        self.last_error = None;
        match self.cur_steps.as_mut() {
            None => self.run_steps(nsteps, step_type, cx),
            Some(cur) => {
                if what == StepWhat::Step {
                    *cur = cur.saturating_add(nsteps);
                }
            }
        }
        let (status, ret) = self.complete_step(true);
        self.run_handler_name.clear();
        if status != 0 || self.run_args.is_empty() {
            self.run_args.clear();
        }
        self.run_write = false;
        if step_type == StepType::Router && !self.raised {
            // A stop request found the script at its end: the run ends.
            cx.manage_stops(false);
            cx.request_stop();
        }
        if status < 0 {
            return Err(self
                .last_error
                .take()
                .unwrap_or_else(|| "script error".to_string()));
        }
        Ok(ret)
    }

    /// Steps until nothing more is asked for (the loop of Click's
    /// `step_handler` around `step`).
    fn run_steps(&mut self, nsteps: i64, mut step_type: StepType, cx: &mut Context<'_>) {
        self.cur_steps = Some(nsteps);
        let mut njumps = 0;
        while let Some(n) = self.cur_steps.filter(|&n| n >= 0) {
            self.cur_steps = Some(-1);
            njumps = self.step(n, step_type, njumps, cx);
            if step_type != StepType::Router {
                step_type = StepType::Normal;
            }
            if njumps > MAX_JUMPS {
                break;
            }
        }
        self.cur_steps = None;
    }

    /// Runs instructions until one blocks or the script ends (Click's
    /// `Script::step`); returns the jumps made, plus one.
    fn step(
        &mut self,
        nsteps: i64,
        step_type: StepType,
        mut njumps: u32,
        cx: &mut Context<'_>,
    ) -> u32 {
        let nsteps = nsteps.saturating_add(self.step_count);
        while nsteps - self.step_count >= 0 && self.pos < self.insns.len() && njumps < MAX_JUMPS {
            let ipos = self.pos;
            self.pos += 1;
            let op = self.insns[ipos].op;
            match op {
                Op::Stop => {
                    self.step_count += 1;
                    self.pos -= 1;
                    if step_type != StepType::Router {
                        cx.request_stop();
                    }
                    return njumps + 1;
                }
                Op::WaitStep => {
                    let insn = &mut self.insns[ipos];
                    while self.step_count < nsteps && insn.arg2 < insn.arg {
                        insn.arg2 += 1;
                        self.step_count += 1;
                    }
                    if self.step_count == nsteps && insn.arg2 < insn.arg {
                        self.pos -= 1;
                        break;
                    }
                }
                Op::WaitTime => {
                    if self.step_count == nsteps {
                        let text = self.insns[ipos].text.clone();
                        if self.schedule_wait(&text, cx) {
                            self.pos -= 1;
                        }
                        break;
                    }
                    self.step_count += 1;
                    self.timer_at = None;
                }
                Op::Initial => {
                    if self.insns[ipos].arg != 0 {
                        self.step_count += 1;
                        self.insns[ipos].arg = 0;
                    }
                }
                Op::Save | Op::Append | Op::Print | Op::PrintQ | Op::PrintN | Op::PrintNQ => {
                    self.print(ipos, cx);
                }
                Op::Read | Op::ReadQ => {
                    let text = self.insns[ipos].text.clone();
                    let desc = self.expand(&text, false, cx);
                    match self.call(&desc, false, op == Op::ReadQ, cx) {
                        Ok((name, v)) => eprintln!("{name}:\n{v}"),
                        Err(e) => self.report_call(&desc, &e),
                    }
                }
                Op::Write | Op::WriteQ => {
                    let text = self.insns[ipos].text.clone();
                    let desc = self.expand(&text, false, cx);
                    self.write_status = match self.call(&desc, true, op == Op::WriteQ, cx) {
                        Ok(_) => 0,
                        Err(e) => {
                            self.report_call(&desc, &e);
                            -22
                        }
                    };
                }
                Op::Return | Op::ReturnQ | Op::Set | Op::SetQ => {
                    let text = self.insns[ipos].text.clone();
                    let mut v = self.expand(&text, false, cx);
                    if matches!(op, Op::SetQ | Op::ReturnQ) {
                        v = unquote(&v);
                    }
                    self.set_var(self.insns[ipos].arg as usize, v);
                    if matches!(op, Op::Return | Op::ReturnQ) && self.pos == ipos + 1 {
                        self.pos -= 1;
                        break;
                    }
                }
                Op::Goto => {
                    let text = self.insns[ipos].text.clone();
                    let cond_text = self.expand(&text, false, cx);
                    let cond = if is_blank(&cond_text) {
                        Some(true)
                    } else {
                        parse_bool(cond_text.trim())
                    };
                    match cond {
                        None => self.report(cx, &format!("bad condition `{cond_text}'")),
                        Some(true) => match self.insns[ipos].target {
                            Target::Finish(_) => {
                                self.pos -= 1;
                                return njumps + 1;
                            }
                            Target::At(at) => {
                                for i in &mut self.insns[at.min(ipos)..ipos] {
                                    if i.op == Op::WaitStep {
                                        i.arg2 = 0;
                                    }
                                }
                                self.pos = at;
                            }
                        },
                        Some(false) => {}
                    }
                }
                Op::Error | Op::ErrorQ => {
                    let text = self.insns[ipos].text.clone();
                    let mut msg = self.expand(&text, false, cx);
                    if op == Op::ErrorQ {
                        msg = unquote(&msg);
                    }
                    if !msg.is_empty() {
                        self.report(cx, &msg);
                    }
                    self.pos -= 1;
                    return njumps + 1;
                }
                Op::End | Op::Exit => {
                    self.pos -= 1;
                    return njumps + 1;
                }
                Op::Label | Op::Init | Op::InitQ | Op::Export | Op::ExportQ => {}
            }
            if self.pos != ipos + 1 {
                njumps += 1;
            }
        }
        if njumps >= MAX_JUMPS {
            self.report(cx, "too many jumps, giving up");
            self.pos = self.insns.len();
            self.timer_at = None;
        }
        if step_type == StepType::Router {
            self.raised = true;
        }
        njumps + 1
    }

    /// `print` and its kin, `save` and `append`.
    fn print(&mut self, ipos: usize, cx: &mut Context<'_>) {
        let op = self.insns[ipos].op;
        let mut text = self.insns[ipos].text.clone();
        if matches!(op, Op::Save | Op::Append) {
            let word = shift_word(&mut text);
            let file = if text.is_empty() {
                "-".to_string()
            } else {
                text
            };
            let redirect = if op == Op::Save { ">" } else { ">>" };
            text = format!("{redirect}{file} {word}");
        }
        let mut file: Option<(String, bool)> = None;
        if let Some(r) = text.strip_prefix('>') {
            let append = r.starts_with('>');
            let mut r = r[usize::from(append)..].to_string();
            let name = shift_word(&mut r);
            text = r;
            if !name.is_empty() && name != "-" {
                file = Some((name, append));
            }
        }
        let handler = text
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'@' || b == b'_');
        let before = self.last_error.is_some();
        let mut ok = true;
        let mut result = if handler {
            let desc = self.expand(&text, false, cx);
            match self.call(&desc, false, matches!(op, Op::PrintQ | Op::PrintNQ), cx) {
                Ok((_, v)) => v,
                Err(e) => {
                    self.report_call(&desc, &e);
                    ok = false;
                    String::new()
                }
            }
        } else {
            let e = self.expand(&text, true, cx);
            unquote(&e)
        };
        ok &= before || self.last_error.is_none();
        if ok && !result.ends_with('\n') && !matches!(op, Op::PrintN | Op::PrintNQ) {
            result.push('\n');
        }
        let written = match file {
            None => {
                let mut out = std::io::stdout().lock();
                out.write_all(result.as_bytes()).and_then(|()| out.flush())
            }
            Some((name, append)) => std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(append)
                .truncate(!append)
                .open(&name)
                .and_then(|mut f| f.write_all(result.as_bytes()))
                .map_err(|e| std::io::Error::new(e.kind(), format!("{name}: {e}"))),
        };
        if let Err(e) = written {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                self.report(cx, &e.to_string());
            }
        }
    }

    /// What the script ended or blocked on (Click's `complete_step`): the
    /// status (-1 error, 1 stop, 0 otherwise) and the value returned.
    fn complete_step(&mut self, want_value: bool) -> (i32, String) {
        let last = self.insns.get(self.pos).map(|i| match (i.op, i.target) {
            (Op::Goto, Target::Finish(op)) => op,
            (op, _) => op,
        });
        let mut value = String::new();
        if want_value {
            match last {
                Some(Op::Return | Op::ReturnQ) => {
                    if let Some(i) = self.var_index("_") {
                        value = self.vars[i].1.clone();
                    }
                }
                Some(Op::End) if self.kind == Kind::Packet => value = "0".into(),
                _ => {}
            }
        }
        let status = match last {
            Some(Op::Error | Op::ErrorQ) => -1,
            Some(Op::Stop) => 1,
            _ => 0,
        };
        (status, value)
    }

    /// Runs the script for one packet from input `port`; the output it
    /// goes to, if any.
    fn classify(&mut self, port: usize, cx: &mut Context<'_>) -> Option<usize> {
        let i = self.variable("input", true);
        self.set_var(i, port.to_string());
        self.pos = 0;
        self.run_steps(0, StepType::Jump, cx);
        let (_, out) = self.complete_step(true);
        parse_int(out.trim()).and_then(|p| usize::try_from(p).ok())
    }
}

impl Script {
    /// A signal script that ended with `end` handles its signals again.
    fn rearm_signals(&mut self) {
        if self.kind == Kind::Signal && self.at_end() {
            self.signal_disarmed
                .store(false, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Whether any of the script's signals arrived since the last look
    /// (each one's flag is cleared).
    fn signal_arrived(&self) -> bool {
        self.signal_flags.iter().fold(false, |any, f| {
            f.swap(false, std::sync::atomic::Ordering::Relaxed) | any
        })
    }

    /// After a run started by a signal: a script that reached `end` stays
    /// its signals' handler, and signals that came during the run start
    /// it again. One that stopped short gives its signals their default
    /// action, and a signal that came during the run gets it now (Click's
    /// `Master::process_signals` redelivers it to the process).
    fn after_signal_run(&mut self) {
        if self.at_end() {
            return;
        }
        self.signal_disarmed
            .store(true, std::sync::atomic::Ordering::Relaxed);
        for (i, f) in self.signal_flags.iter().enumerate() {
            if f.swap(false, std::sync::atomic::Ordering::Relaxed) {
                let _ = signal_hook::low_level::raise(self.signals[i]);
            }
        }
    }

    /// Whether the script stands at `end` (or a jump to it).
    fn at_end(&self) -> bool {
        self.insns
            .get(self.pos)
            .map(|i| (i.op, i.target))
            .is_some_and(|l| matches!(l, (Op::End, _) | (Op::Goto, Target::Finish(Op::End))))
    }

    fn unregister_signals(&mut self) {
        for id in self.signal_ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        self.unregister_signals();
    }
}

/// The signals a SIGNAL script may name, as Click's (script.cc).
/// The worker a script runs on: worker 0, or where `StaticThreadSched`
/// placed it (none: `usize::MAX`). A driver script stays on worker 0,
/// where the run's stop requests are counted.
fn home_worker(kind: Kind, cx: &Context<'_>) -> usize {
    match cx.placed_on() {
        Some(w) if kind != Kind::Driver => w.unwrap_or(usize::MAX),
        _ => 0,
    }
}

fn signal_number(word: &str) -> Option<i32> {
    use signal_hook::consts::*;
    let n = match word {
        "ABRT" => SIGABRT,
        "ALRM" => SIGALRM,
        "HUP" => SIGHUP,
        "INT" => SIGINT,
        "IO" => SIGIO,
        "PIPE" => SIGPIPE,
        "QUIT" => SIGQUIT,
        "TERM" => SIGTERM,
        "TSTP" => SIGTSTP,
        "USR1" => SIGUSR1,
        "USR2" => SIGUSR2,
        w => parse_int(w).and_then(|n| i32::try_from(n).ok())?,
    };
    // Signals whose handlers cannot be replaced are refused, as signal 0.
    ((1..32).contains(&n) && !signal_hook::consts::FORBIDDEN.contains(&n)).then_some(n)
}

/// `kill SIGNO PID...`: sends a signal to processes.
fn kill(value: &str) -> Result<String, String> {
    let mut rest = value.to_string();
    let word = shift_word(&mut rest);
    let sig = signal_number(&word)
        .and_then(rustix::process::Signal::from_named_raw)
        .ok_or("bad SIGNO")?;
    while !rest.is_empty() {
        let pid = parse_int(&shift_word(&mut rest))
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw)
            .ok_or("bad PID")?;
        if pid.as_raw_nonzero().get() as u32 == std::process::id() {
            // To this process: delivered to this thread before `kill`
            // returns, so that the script it wakes runs this round, as
            // Click handles its signals before its next timers.
            signal_hook::low_level::raise(sig.as_raw())
                .map_err(|e| format!("kill({}, {word}): {e}", pid.as_raw_nonzero()))?;
            continue;
        }
        rustix::process::kill_process(pid, sig)
            .map_err(|e| format!("kill({}, {word}): {e}", pid.as_raw_nonzero()))?;
    }
    Ok(String::new())
}

/// Reads a file for `cat`, bounded in size.
fn read_file(name: &str) -> Result<String, String> {
    use std::io::Read;
    let f = std::fs::File::open(name).map_err(|e| format!("{name}: {e}"))?;
    let mut buf = Vec::new();
    f.take(MAX_CAT)
        .read_to_end(&mut buf)
        .map_err(|e| format!("{name}: {e}"))?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

impl Element for Script {
    fn push(&mut self, port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut run = Batch::new();
        let mut run_port = usize::MAX;
        for p in batch.drain() {
            let out = self.classify(port, cx).filter(|&o| o < cx.noutputs());
            match out {
                Some(o) => {
                    if o != run_port || run.is_full() {
                        cx.push(run_port, &mut run);
                        run_port = o;
                    }
                    let _ = run.push(p);
                }
                None => self.drops += 1,
            }
        }
        if !run.is_empty() {
            cx.push(run_port, &mut run);
        }
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        let mut b = Batch::new();
        cx.pull(0, &mut b, max);
        let packets: Vec<Packet> = b.drain().collect();
        for p in packets {
            match self.classify(0, cx) {
                Some(0) => {
                    let _ = out.push(p);
                }
                Some(o) if o < cx.noutputs() && cx.output_connected(o) => cx.push_one(o, p),
                _ => self.drops += 1,
            }
        }
    }

    fn task_kind(&self) -> TaskKind {
        TaskKind::Pump
    }

    fn start(&mut self, cx: &mut Context<'_>) {
        self.initialize(cx);
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if cx.worker() != home_worker(self.kind, cx) {
            return TaskResult::Done;
        }
        // A signal script runs once per burst of its signals, even while
        // the router stops (a SIGINT also stops it), but not while it is
        // blocked in a wait of its own (Click reinstalls the handler only
        // when the script completes).
        if self.kind == Kind::Signal && self.timer_at.is_none() && self.signal_arrived() {
            if let Err(e) = self.step_handler(StepWhat::Run, "", "run", false, cx) {
                self.report(cx, &e);
            }
            self.after_signal_run();
            return TaskResult::Worked;
        }
        if cx.stopping() {
            return TaskResult::Done;
        }
        let mut worked = false;
        while let Some((h, v)) = self.pending.pop_front() {
            worked = true;
            if let Err(e) = self.own(h, &v, true, cx) {
                self.report(cx, &e);
            }
        }
        if worked {
            TaskResult::Worked
        } else if self.timer_at.is_some() {
            TaskResult::Waiting
        } else {
            TaskResult::Idle
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        if cx.stopping() {
            // The router has stopped: as in Click, scripts no longer run
            // (a `wait 0` loop would otherwise keep the drain busy).
            self.timer_at = None;
            return;
        }
        match self.timer_at {
            Some(t) if cx.now() >= t => {}
            // A wait that a step cut short, or one rescheduled later.
            _ => return,
        }
        self.timer_at = None;
        self.last_error = None;
        self.run_steps(1, StepType::Timer, cx);
        let _ = self.complete_step(false);
        self.rearm_signals();
    }

    fn shutdown(&mut self, _cx: &mut Context<'_>) {
        self.unregister_signals();
    }

    fn stats(&self, s: &mut Stats) {
        if self.kind == Kind::Packet {
            s.counter("drops", self.drops);
        }
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        // Without a context (a control socket): `set` at once, the step
        // handlers when the script's task next runs.
        match handler {
            "set" => {
                let mut rest = value.to_string();
                let name = shift_word(&mut rest);
                if name.is_empty() {
                    return Err("no variable".into());
                }
                let i = self.variable(&name, true);
                self.set_var(i, rest);
                Ok(())
            }
            "step" | "goto" | "run" => {
                if self.pending.len() >= MAX_PENDING {
                    return Err("too many pending calls".into());
                }
                let h = match handler {
                    "step" => "step",
                    "goto" => "goto",
                    _ => "run",
                };
                self.pending.push_back((h, value.to_string()));
                Ok(())
            }
            _ => Err(format!("no write handler `{handler}`")),
        }
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        self.read_export(handler)
    }

    fn handler_is_private(&self, handler: &str) -> bool {
        // Click's private handlers: they read files and send signals.
        matches!(handler, "cat" | "catq" | "kill")
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if !write && value.is_empty() && self.read_export(handler).is_some() {
            return None;
        }
        self.own_handler(handler, value, write, cx)
    }

    fn handlers(&self) -> &'static [Handler] {
        static HANDLERS: &[Handler] = &[
            Handler::w("step"),
            Handler::w("goto"),
            Handler::rw("run"),
            Handler::r("add"),
            Handler::r("sub"),
            Handler::r("min"),
            Handler::r("max"),
            Handler::r("mul"),
            Handler::r("div"),
            Handler::r("idiv"),
            Handler::r("mod"),
            Handler::r("rem"),
            Handler::r("neg"),
            Handler::r("abs"),
            Handler::r("eq"),
            Handler::r("ne"),
            Handler::r("gt"),
            Handler::r("ge"),
            Handler::r("lt"),
            Handler::r("le"),
            Handler::r("not"),
            Handler::r("sprintf"),
            Handler::r("first"),
            Handler::r("random"),
            Handler::r("and"),
            Handler::r("or"),
            Handler::r("nand"),
            Handler::r("nor"),
            Handler::r("if"),
            Handler::r("in"),
            Handler::r("now"),
            Handler::r("readable"),
            Handler::r("writable"),
            Handler::r("length"),
            Handler::r("unquote"),
            Handler::r("htons"),
            Handler::r("htonl"),
            Handler::r("ntohs"),
            Handler::r("ntohl"),
            Handler::r("cat"),
            Handler::r("catq"),
            Handler::r("kill"),
            Handler::r("get"),
            Handler::w("set"),
            Handler::r("shift"),
        ];
        HANDLERS
    }
}

#[cfg(test)]
mod tests;
