//! `ProgressBar`: draws how far a job has come on standard error (Click's
//! `elements/userlevel/progressbar.cc`, itself after the progress meter of
//! OpenSSH's `scp`). It reads a position and a size from other elements'
//! read handlers (a FromDump's `filepos` and `filesize`, a Counter's
//! `count` against a FIXED_SIZE) and redraws one line.
//!
//! The line is made by [`draw`], a pure function of what is shown, so that
//! its text is tested for given positions and sizes. The element reads the
//! handlers from a timer on worker 0, UPDATE apart, never per packet, and
//! hands the line to a thread of its own that writes it: a terminal that
//! is slow or stopped (^S) holds that thread, never a worker. As in Click
//! nothing is ever drawn when standard error is not a terminal.

use bricks_element::{
    ArgError, Args, Context, Element, ElementClass, FromArg, Handler, Keyword, Manual, PortInfo,
};
use bricks_packet::Timestamp;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The `ProgressBar` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ProgressBar",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "prints a progress bar to standard error",
    synopsis: "ProgressBar(POSHANDLER [, SIZEHANDLER, KEYWORDS])",
    description: "Reads progress from read handlers and draws an ASCII-art bar on standard \
        error, saying how much has been done and how much remains. POSHANDLER and \
        SIZEHANDLER are read handlers, ELEMENT.HANDLER, each answering a nonnegative real \
        number; each may be a space-separated list, whose values are added. POSHANDLER is \
        read at every redraw, SIZEHANDLER once, the first time the bar comes up: the job is \
        complete when the position reaches the size. Without SIZEHANDLER, FIXED_SIZE is the \
        size; with neither, a bar bounces to show that something moves. Handlers naming no \
        element, or that cannot be read, are an error when the router starts, and the run \
        ends at once with it (Click refuses to initialize).\n\n\
        Each redraw rewrites one line, as Click's: BANNER, the percentage done (when the \
        size is known), the bar between `|` signs (stars filling it up to the fraction \
        done; with no size, three stars that bounce; dashes for a position that cannot \
        be read), the position (abbreviated past 100,000 as KB, MB, GB, TB, PB; left out \
        under FIXED_SIZE) and the time left, `MM:SS ETA` (`--:-- ETA` when it cannot be \
        told), or, once over, the time it took.\n\n\
        The bar stops when `mark_done` or `mark_stopped` is written, or when the router \
        stops (its last line then ends with a newline). A position that does not move for \
        5 seconds shows `- stalled -`, and stalls do not count in the time the estimate uses. \
        As in Click, nothing at all is drawn when standard error is not a terminal (nor, \
        with CHECK_STDOUT, when standard output is one), nor while the process is not in \
        its terminal's foreground; the handlers still answer (`pos` stays 0, as the bar \
        never reads the position).\n\n\
        Where bricks differs from Click, on purpose: the width of the terminal is taken \
        from the COLUMNS environment variable, 80 without it (Click asks the terminal); \
        whether the process is in the foreground comes from /proc/self/stat (Click asks \
        the terminal); the lines are written by a thread of the element's own, so that a \
        stopped terminal never holds a worker, and one that cannot keep up sees only the \
        latest line; the handlers are read on worker 0, in that worker's graph (a \
        Counter's count there, with several workers); UPDATE must be at least 1 ms and \
        FIXED_SIZE may not be negative; handlers are ELEMENT.HANDLER, not the router's own.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "POSHANDLER",
            ty: "read handlers, space-separated",
            default: None,
            doc: "the position, ELEMENT.HANDLER (the values of several are added); positional",
        },
        Keyword {
            name: "SIZEHANDLER",
            ty: "read handlers, space-separated",
            default: Some("none"),
            doc: "the size, read once when the bar first comes up; positional",
        },
        Keyword {
            name: "FIXED_SIZE",
            ty: "nonnegative real",
            default: Some("no fixed size"),
            doc: "the size when there is no SIZEHANDLER; only the fraction is drawn then, not \
                  the position",
        },
        Keyword {
            name: "BANNER",
            ty: "string",
            default: Some("empty"),
            doc: "printed before the bar",
        },
        Keyword {
            name: "UPDATE",
            ty: "seconds (millisecond precision)",
            default: Some("0.25"),
            doc: "how often the bar is redrawn",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "false: the bar does not show itself until `active` is written true",
        },
        Keyword {
            name: "DELAY",
            ty: "seconds (millisecond precision)",
            default: Some("0"),
            doc: "draw nothing until this long after the bar comes up (no bar for jobs that \
                  end at once)",
        },
        Keyword {
            name: "CHECK_STDOUT",
            ty: "boolean",
            default: Some("false"),
            doc: "draw nothing when standard output is a terminal",
        },
    ],
    counters: &[],
    example: "c :: Counter;\n\
        RatedSource(LIMIT 20, RATE 100, STOP true) -> c -> Discard;\n\
        ProgressBar(c.count, FIXED_SIZE 20, BANNER counting, UPDATE 0.1);",
    see_also: &["FromDump", "Counter"],
};

/// Seconds a position must stand still to be shown as stalled (Click's
/// `STALLTIME`).
const STALL_SECS: u64 = 5;

/// The longest bar, in characters.
const MAX_BAR: i64 = 240;

/// The width of a terminal that does not say (Click's).
const DEFAULT_WIDTH: usize = 80;

/// Units of an abbreviated position, up to petabytes.
const PREFIXES: [char; 6] = [' ', 'K', 'M', 'G', 'T', 'P'];

const NS_PER_MS: u64 = 1_000_000;
const NS_PER_SEC: u64 = 1_000_000_000;

/// One read handler, `ELEMENT.HANDLER`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HandlerRef {
    element: String,
    handler: String,
}

impl HandlerRef {
    /// Parses `ELEMENT.HANDLER`, split at the first dot as Click does.
    fn parse(word: &str) -> Result<HandlerRef, String> {
        match word.split_once('.') {
            Some((e, h)) if !e.is_empty() && !h.is_empty() => Ok(HandlerRef {
                element: e.to_string(),
                handler: h.to_string(),
            }),
            _ => Err(format!(
                "`{word}` is not a read handler: write ELEMENT.HANDLER (the router's own \
                 handlers cannot be read here)"
            )),
        }
    }

    /// A space-separated list of handlers.
    fn parse_list(text: &str) -> Result<Vec<HandlerRef>, String> {
        text.split_whitespace().map(HandlerRef::parse).collect()
    }
}

/// A handler found in this worker's graph.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Resolved {
    index: usize,
    handler: String,
    /// `ELEMENT.HANDLER` with the element's full name, as Click prints it.
    name: String,
}

/// Why a handler cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HandlerError {
    /// No element of that name.
    NoElement(String),
    /// The element has no such read handler.
    Unreadable(String, String),
}

impl core::fmt::Display for HandlerError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            HandlerError::NoElement(e) => write!(f, "no element named `{e}`"),
            HandlerError::Unreadable(h, why) => write!(f, "cannot read `{h}`: {why}"),
        }
    }
}

fn resolve(cx: &mut Context<'_>, refs: &[HandlerRef]) -> Result<Vec<Resolved>, HandlerError> {
    refs.iter()
        .map(|r| {
            let index = cx
                .find_element(&r.element)
                .ok_or_else(|| HandlerError::NoElement(r.element.clone()))?;
            let full = cx
                .call_handler(index, "name", "", false)
                .unwrap_or_else(|_| r.element.clone());
            let name = format!("{full}.{}", r.handler);
            // Click checks that the handler exists and reads; reading
            // it once is how bricks knows.
            cx.call_handler(index, &r.handler, "", false)
                .map_err(|why| HandlerError::Unreadable(name.clone(), why))?;
            Ok(Resolved {
                index,
                handler: r.handler.clone(),
                name,
            })
        })
        .collect()
}

/// What one drawing of the bar shows; [`draw`] makes Click's line of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame<'a> {
    /// Printed before the bar, when not empty.
    pub banner: &'a str,
    /// The terminal's width, in columns.
    pub width: usize,
    /// The position, when every position handler answered a number.
    pub pos: Option<f64>,
    /// The size, when known.
    pub size: Option<f64>,
    /// The size is FIXED_SIZE, not read from handlers: only the fraction
    /// is drawn, and the bar is 8 columns longer.
    pub fixed_size: bool,
    /// The job is over (`mark_done`, `mark_stopped`, the router stopped):
    /// the line ends with a newline and shows the time it took.
    pub done: bool,
    /// Seconds since the bar came up, stalls left out.
    pub elapsed: f64,
    /// Whole seconds since the position last moved.
    pub still_for: u64,
}

/// Click's progress line for `f`, starting with a carriage return.
pub fn draw(f: &Frame<'_>) -> String {
    let have_pos = f.pos.is_some();
    let have_size = f.size.is_some();
    let pos = f.pos.unwrap_or(0.0);
    let size = f.size.unwrap_or(0.0);
    // How far along, 0 to 100; -1 for an unknown position.
    let therm = if !have_pos {
        -1.0
    } else if !have_size {
        // No size: a bar that bounces back and forth as the position
        // grows by 100,000 steps.
        let t = ((pos / 100_000.0) as i64) % 200;
        (if t > 100 { 200 - t } else { t }) as f64
    } else if size > 0.0 {
        ((100.0 * pos / size) as i64).clamp(0, 100) as f64
    } else {
        100.0
    };
    let mut s = String::from("\r");
    if !f.banner.is_empty() {
        s.push_str(f.banner);
        s.push(' ');
    }
    if have_pos && have_size {
        let _ = write!(s, "{:3}% ", therm as i64);
    } else if have_size {
        s.push_str("  -% ");
    }
    let fraction_only = have_size && f.fixed_size;
    let mut bar = f.width as i64 - (s.len() as i64 + 25);
    if fraction_only {
        bar += 8;
    }
    let bar = bar.min(MAX_BAR);
    if bar > 0 {
        let bar = bar as usize;
        let (left, mark, right) = if therm < 0.0 || (!have_size && f.done) {
            (0, "-".repeat(bar), 0)
        } else if !have_size && bar > 3 {
            let at = ((bar - 3) as f64 * therm / 100.0) as usize;
            (at, "***".to_string(), bar - at - 3)
        } else if !have_size {
            let at = ((bar - 1) as f64 * therm / 100.0) as usize;
            (at, "*".to_string(), bar - at - 1)
        } else {
            let at = (bar as f64 * therm / 100.0) as usize;
            (0, "*".repeat(at), bar - at)
        };
        s.push('|');
        s.extend(std::iter::repeat_n(' ', left));
        s.push_str(&mark);
        s.extend(std::iter::repeat_n(' ', right));
        s.push('|');
    }
    if fraction_only {
        // The position means something only as a fraction of the size.
        s.push(' ');
    } else if have_pos {
        let mut which = 0;
        let mut short = pos;
        while short >= 100_000.0 && which + 1 < PREFIXES.len() {
            which += 1;
            short /= 1024.0;
        }
        let unit = PREFIXES[which];
        let b = if unit == ' ' { ' ' } else { 'B' };
        let _ = write!(s, " {:5}{unit}{b} ", short.max(0.0) as u64);
    } else {
        s.push_str(" -----   ");
    }
    if !f.done && (!have_pos || !have_size || f.elapsed <= 0.0 || pos > size) {
        s.push_str("   --:-- ETA");
    } else if f.still_for >= STALL_SECS {
        s.push_str(" - stalled -");
    } else {
        let (left, eta) = if f.done || !have_pos || pos < 1e-6 {
            (f.elapsed as i64, false)
        } else {
            ((size / (pos / f.elapsed) - f.elapsed) as i64, true)
        };
        let hours = left / 3600;
        if hours != 0 {
            let _ = write!(s, "{hours:2}:");
        } else {
            s.push_str("   ");
        }
        let secs = left % 3600;
        let _ = write!(
            s,
            "{:02}:{:02}{}",
            secs / 60,
            secs % 60,
            if eta { " ETA" } else { "    " }
        );
    }
    if f.done {
        s.push('\n');
    }
    s
}

/// Where the bar's life is (Click's `ST_FIRST` ... `ST_DEAD`, in its
/// order: comparisons follow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Status {
    /// Not shown yet: the size is read at the next redraw.
    First,
    /// Shown and going.
    Middle,
    /// Over; the last line is drawn.
    Done,
    /// Over before it was ever shown.
    FirstDone,
    /// Never drawn: standard error is not a terminal.
    Dead,
}

/// The latest line, waiting for the writer thread.
#[derive(Default)]
struct Slot {
    line: Option<String>,
    closed: bool,
}

/// A thread that writes lines to standard error, so that a terminal that
/// blocks holds it and not a worker. A line not yet written is replaced
/// by the next (a redraw makes the whole line), but never one ending a
/// bar: the next is added to it.
struct Painter {
    slot: Arc<(Mutex<Slot>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Painter {
    fn new() -> Option<Painter> {
        let slot: Arc<(Mutex<Slot>, Condvar)> = Arc::default();
        let theirs = Arc::clone(&slot);
        let thread = std::thread::Builder::new()
            .name("progress-bar".into())
            .spawn(move || {
                let (m, cv) = &*theirs;
                loop {
                    let line = {
                        let mut s = m.lock().unwrap_or_else(|e| e.into_inner());
                        // Ends: `finish` sets `closed` and wakes it.
                        while s.line.is_none() && !s.closed {
                            s = cv.wait(s).unwrap_or_else(|e| e.into_inner());
                        }
                        match s.line.take() {
                            Some(l) => l,
                            None => return,
                        }
                    };
                    let mut err = std::io::stderr().lock();
                    let _ = err.write_all(line.as_bytes());
                    let _ = err.flush();
                }
            })
            .ok()?;
        Some(Painter {
            slot,
            thread: Some(thread),
        })
    }

    fn send(&self, line: String) {
        let (m, cv) = &*self.slot;
        let mut s = m.lock().unwrap_or_else(|e| e.into_inner());
        match &mut s.line {
            Some(old) if old.ends_with('\n') => old.push_str(&line),
            slot => *slot = Some(line),
        }
        cv.notify_one();
    }

    /// Writes what waits, then ends the thread.
    fn finish(&mut self) {
        let (m, cv) = &*self.slot;
        m.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        cv.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Painter {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Where lines go.
enum Output {
    /// Not known before the element starts.
    Unknown,
    /// Standard error is not a terminal (or CHECK_STDOUT found standard
    /// output to be one): nothing is drawn, ever.
    Silent,
    /// A terminal, written by a thread.
    Terminal(Painter),
    /// Lines kept for a test, drawn `width` columns wide.
    #[cfg(test)]
    Kept(Arc<Mutex<Vec<String>>>, usize),
}

impl Output {
    /// Click's choice when the bar is initialized.
    fn detect(check_stdout: bool) -> Output {
        if !std::io::stderr().is_terminal() || (check_stdout && std::io::stdout().is_terminal()) {
            return Output::Silent;
        }
        match Painter::new() {
            Some(p) => Output::Terminal(p),
            None => Output::Silent,
        }
    }

    /// Whether the process is in its terminal's foreground (Click's
    /// `foregroundproc`): never when there is no terminal.
    fn in_foreground(&self) -> bool {
        match self {
            Output::Terminal(_) => foreground_from_proc(),
            #[cfg(test)]
            Output::Kept(..) => true,
            _ => false,
        }
    }

    fn width(&self) -> usize {
        match self {
            #[cfg(test)]
            Output::Kept(_, w) => *w,
            _ => std::env::var("COLUMNS")
                .ok()
                .and_then(|c| c.trim().parse().ok())
                .filter(|&c: &usize| c > 0)
                .unwrap_or(DEFAULT_WIDTH),
        }
    }

    fn write(&self, line: String) {
        match self {
            Output::Terminal(p) => p.send(line),
            #[cfg(test)]
            Output::Kept(lines, _) => lines.lock().unwrap().push(line),
            _ => {}
        }
    }

    fn finish(&mut self) {
        if let Output::Terminal(p) = self {
            p.finish();
        }
    }
}

/// Whether this process's group is its terminal's foreground group: the
/// `pgrp` and `tpgid` fields of /proc/self/stat. Without /proc, assumed.
fn foreground_from_proc() -> bool {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return true;
    };
    foreground_in_stat(&stat).unwrap_or(true)
}

/// The foreground test on the text of a /proc/PID/stat file; `None` when
/// it cannot be read.
fn foreground_in_stat(stat: &str) -> Option<bool> {
    // The command name, in parentheses, may hold anything: the fields
    // come after its last `)`: state ppid pgrp session tty_nr tpgid.
    let (_, rest) = stat.rsplit_once(')')?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let pgrp: i64 = f.get(2)?.parse().ok()?;
    let tpgid: i64 = f.get(5)?.parse().ok()?;
    Some(pgrp == tpgid)
}

fn read_ms(args: &mut Args<'_>, key: &'static str) -> Result<Option<u64>, ArgError> {
    // Click's SecondsArg(3): milliseconds, rounded.
    Ok(args
        .read::<Duration>(key)?
        .map(|d| (d.as_secs_f64() * 1000.0).round() as u64))
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let pos_text: String = args.read_mp("POSHANDLER")?;
    let size_text: Option<String> = args.read_p("SIZEHANDLER")?;
    let interval_ms = read_ms(args, "UPDATE")?.unwrap_or(250);
    if interval_ms == 0 {
        return Err(ArgError::new(
            "UPDATE must be at least 1 ms (0.001): the bar is redrawn that often",
        ));
    }
    let banner: String = args.read("BANNER")?.unwrap_or_default();
    let active: bool = args.read("ACTIVE")?.unwrap_or(true);
    let delay_ms = read_ms(args, "DELAY")?.unwrap_or(0);
    let check_stdout: bool = args.read("CHECK_STDOUT")?.unwrap_or(false);
    let fixed: Option<f64> = args.read("FIXED_SIZE")?;
    if fixed.is_some_and(|s| s < 0.0) {
        return Err(ArgError::new(format!(
            "FIXED_SIZE {}: a size is not negative",
            fixed.unwrap_or_default()
        )));
    }
    let bad = |key: &str, why: String| ArgError::new(format!("bad argument {key}: {why}"));
    let pos_refs = HandlerRef::parse_list(&pos_text).map_err(|w| bad("POSHANDLER", w))?;
    if pos_refs.is_empty() {
        return Err(bad("POSHANDLER", "no handler given".into()));
    }
    let size_refs = match &size_text {
        Some(t) => HandlerRef::parse_list(t).map_err(|w| bad("SIZEHANDLER", w))?,
        None => Vec::new(),
    };
    Ok(Box::new(ProgressBar {
        pos_refs,
        size_refs,
        pos_hs: Vec::new(),
        size_hs: Vec::new(),
        banner,
        interval_ms,
        delay_ms,
        active,
        check_stdout,
        have_size: fixed.is_some(),
        size: fixed.unwrap_or(-1.0),
        status: Status::First,
        last_pos: 0.0,
        start: Timestamp(0),
        stall_ns: 0,
        last_time: Timestamp(0),
        delay_until: Timestamp(0),
        next: None,
        home: false,
        out: Output::Unknown,
    }))
}

/// Draws a progress bar.
pub struct ProgressBar {
    /// POSHANDLER and SIZEHANDLER as written, then as found at start.
    pos_refs: Vec<HandlerRef>,
    size_refs: Vec<HandlerRef>,
    pos_hs: Vec<Resolved>,
    size_hs: Vec<Resolved>,
    banner: String,
    interval_ms: u64,
    delay_ms: u64,
    active: bool,
    check_stdout: bool,
    /// The size is known: FIXED_SIZE, or read from SIZEHANDLER.
    have_size: bool,
    size: f64,
    status: Status,
    /// The position when it last moved (the `pos` handler).
    last_pos: f64,
    /// When the bar came up, the time stalls took, when the position last
    /// moved, and when DELAY is over.
    start: Timestamp,
    stall_ns: u64,
    last_time: Timestamp,
    delay_until: Timestamp,
    /// When the timer is due; `None` when it is not scheduled.
    next: Option<Timestamp>,
    /// This instance draws: it is worker 0's. The others only answer
    /// handlers.
    home: bool,
    out: Output,
}

impl ProgressBar {
    /// Sums the values of `hs` (Click's `get_value`): the sum of those
    /// that read as numbers, and whether all did (and there was one).
    fn value(cx: &mut Context<'_>, hs: &[Resolved]) -> (f64, bool) {
        let mut sum = 0.0;
        let mut all = true;
        for h in hs {
            let v = cx
                .call_handler(h.index, &h.handler, "", false)
                .ok()
                .and_then(|t| t.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite());
            match v {
                Some(v) => sum += v,
                None => all = false,
            }
        }
        (sum, all && !hs.is_empty())
    }

    fn schedule(&mut self, cx: &mut Context<'_>, at: Timestamp) {
        if self.home {
            self.next = Some(at);
            cx.schedule_at(at);
        }
    }

    fn schedule_after(&mut self, cx: &mut Context<'_>, ms: u64) {
        let at = Timestamp(cx.now().0.saturating_add(ms.saturating_mul(NS_PER_MS)));
        self.schedule(cx, at);
    }

    /// One redraw (Click's `run_timer`).
    fn redraw(&mut self, cx: &mut Context<'_>) {
        if !self.home || !self.active || self.status == Status::Dead {
            return;
        }
        let now = cx.now();
        if matches!(self.status, Status::First | Status::FirstDone) {
            if !self.have_size {
                (self.size, self.have_size) = Self::value(cx, &self.size_hs);
            }
            self.last_pos = 0.0;
            self.start = now;
            self.last_time = now;
            self.stall_ns = 0;
            self.delay_until = Timestamp(now.0.saturating_add(self.delay_ms * NS_PER_MS));
            if self.status == Status::First {
                self.status = Status::Middle;
            }
        }
        if !self.out.in_foreground() {
            self.schedule_after(cx, self.interval_ms);
            return;
        }
        if now < self.delay_until {
            let at = self.delay_until;
            self.schedule(cx, at);
            return;
        }
        let (pos, have_pos) = Self::value(cx, &self.pos_hs);
        let mut wait = now.0.saturating_sub(self.last_time.0);
        if pos > self.last_pos {
            self.last_time = now;
            self.last_pos = pos;
            if wait >= STALL_SECS * NS_PER_SEC {
                self.stall_ns += wait;
            }
            // Click keeps the fraction of a second: only whole seconds
            // are compared below.
            wait %= NS_PER_SEC;
        }
        let elapsed = now
            .0
            .saturating_sub(self.start.0)
            .saturating_sub(self.stall_ns) as f64
            / NS_PER_SEC as f64;
        let line = draw(&Frame {
            banner: &self.banner,
            width: self.out.width(),
            pos: have_pos.then_some(pos),
            size: self.have_size.then_some(self.size),
            fixed_size: self.size_hs.is_empty(),
            done: self.status >= Status::Done,
            elapsed,
            still_for: wait / NS_PER_SEC,
        });
        self.out.write(line);
        if self.status < Status::Done {
            self.schedule_after(cx, self.interval_ms);
        } else {
            self.active = false;
        }
    }

    /// Ends the bar (Click's `complete`): `full` takes the position as
    /// the size, so that the bar shows 100%.
    fn complete(&mut self, cx: &mut Context<'_>, full: bool) {
        if self.status < Status::Done && self.active {
            if full {
                self.have_size = true;
                self.size = Self::value(cx, &self.pos_hs).0;
            }
            self.status = if self.status == Status::First {
                Status::FirstDone
            } else {
                Status::Done
            };
            self.next = None;
            self.redraw(cx);
        }
    }

    fn names(hs: &[Resolved]) -> String {
        hs.iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The write handlers that need the router: they read handlers or
    /// draw.
    fn write_with(
        &mut self,
        handler: &str,
        value: &str,
        cx: &mut Context<'_>,
    ) -> Option<Result<(), String>> {
        Some(match handler {
            "mark_stopped" => {
                self.complete(cx, false);
                Ok(())
            }
            "mark_done" => {
                self.complete(cx, true);
                Ok(())
            }
            "active" => bool::from_arg(value.trim())
                .map_err(|_| "type mismatch: expected true or false".to_string())
                .map(|on| {
                    self.active = on;
                    if on && self.next.is_none() {
                        let now = cx.now();
                        self.schedule(cx, now);
                    }
                }),
            "reset" => {
                self.have_size = false;
                self.status = Status::First;
                self.active = true;
                let now = cx.now();
                self.schedule(cx, now);
                Ok(())
            }
            "poshandler" | "sizehandler" => HandlerRef::parse_list(value)
                .and_then(|refs| resolve(cx, &refs).map_err(|e| e.to_string()))
                .map(|hs| {
                    if handler == "poshandler" {
                        self.pos_hs = hs;
                    } else {
                        self.size_hs = hs;
                        self.have_size = false;
                    }
                }),
            _ => return None,
        })
    }
}

/// Click's `size` is a real number.
fn parse_size(value: &str) -> Result<f64, String> {
    f64::from_arg(value.trim()).map_err(|_| "expected real number".to_string())
}

impl Element for ProgressBar {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.home = cx.worker() == 0;
        let found =
            resolve(cx, &self.pos_refs).and_then(|p| Ok((p, resolve(cx, &self.size_refs)?)));
        match found {
            Ok((p, s)) => (self.pos_hs, self.size_hs) = (p, s),
            Err(e) => {
                self.home = false;
                if cx.worker() == 0 {
                    cx.report_error(e.to_string());
                    cx.request_stop();
                }
                return;
            }
        }
        if !self.home {
            return;
        }
        if matches!(self.out, Output::Unknown) {
            self.out = Output::detect(self.check_stdout);
        }
        self.status = if matches!(self.out, Output::Silent) {
            Status::Dead
        } else {
            Status::First
        };
        if self.active && self.status != Status::Dead {
            let now = cx.now();
            self.schedule(cx, now);
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        match self.next {
            Some(at) if cx.now() >= at => self.next = None,
            // Asked for before a reschedule, or unscheduled since.
            _ => return,
        }
        self.redraw(cx);
    }

    fn shutdown(&mut self, cx: &mut Context<'_>) {
        // Click's cleanup: a bar that is going draws its last line.
        if self.status == Status::Middle {
            self.status = Status::Done;
            self.next = None;
            self.redraw(cx);
        }
        self.out.finish();
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        use crate::analysis::timestamp_accum::real_text;
        Some(match handler {
            "pos" => real_text(self.last_pos),
            "size" => real_text(self.size),
            "active" => self.active.to_string(),
            "banner" => self.banner.clone(),
            "poshandler" => Self::names(&self.pos_hs),
            "sizehandler" => Self::names(&self.size_hs),
            _ => return None,
        })
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[
            Handler::w("mark_stopped"),
            Handler::w("mark_done"),
            Handler::rw("active"),
            Handler::rw("banner"),
            Handler::rw("poshandler"),
            Handler::rw("sizehandler"),
            Handler::r("pos"),
            Handler::rw("size"),
            Handler::w("reset"),
        ];
        H
    }

    fn write_handler(&mut self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            // Click's banner is a raw string: taken as written.
            "banner" => self.banner = value.to_string(),
            "size" => self.size = parse_size(value)?,
            "mark_stopped" | "mark_done" | "active" | "reset" | "poshandler" | "sizehandler" => {
                return Err(format!(
                    "`{handler}` is written through the router (a Script, a control socket, \
                     bricks ctl)"
                ))
            }
            _ => return Err(format!("no write handler `{handler}`")),
        }
        Ok(())
    }

    fn call_handler(
        &mut self,
        handler: &str,
        value: &str,
        write: bool,
        cx: &mut Context<'_>,
    ) -> Option<Result<String, String>> {
        if !write {
            return None;
        }
        self.write_with(handler, value, cx)
            .map(|r| r.map(|()| String::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;
    use bricks_runtime::Engine;

    fn frame() -> Frame<'static> {
        Frame {
            banner: "",
            width: 80,
            pos: None,
            size: None,
            fixed_size: false,
            done: false,
            elapsed: 1.0,
            still_for: 0,
        }
    }

    /// `|` + `fill` + `|`.
    fn bar(fill: &str) -> String {
        format!("|{fill}|")
    }

    #[test]
    fn a_known_size_draws_the_fraction_the_position_and_the_eta() {
        // 80 columns: "\r" and " 74% " leave 80 - (6 + 25) = 49 for the bar.
        let line = draw(&Frame {
            pos: Some(23_874_560.0),
            size: Some(32_262_000.0),
            elapsed: 1.0,
            ..frame()
        });
        let stars = 49 * 74 / 100;
        let want = format!(
            "\r 74% {} 23315KB    00:00 ETA",
            bar(&format!("{}{}", "*".repeat(stars), " ".repeat(49 - stars)))
        );
        assert_eq!(line, want);
        // Halfway after 40 s: 40 s to go.
        let line = draw(&Frame {
            pos: Some(500.0),
            size: Some(1000.0),
            elapsed: 40.0,
            ..frame()
        });
        assert!(line.starts_with("\r 50% |"), "{line:?}");
        assert!(line.ends_with("|   500      00:40 ETA"), "{line:?}");
        // Over an hour to go.
        let line = draw(&Frame {
            pos: Some(1.0),
            size: Some(10_000.0),
            elapsed: 1.0,
            ..frame()
        });
        assert!(line.ends_with("     1    2:46:39 ETA"), "{line:?}");
    }

    #[test]
    fn an_unknown_size_bounces_and_an_unknown_position_is_dashed() {
        // "\r" leaves 80 - 26 = 54 columns; the stars sit at 51 * t / 100.
        let line = draw(&Frame {
            pos: Some(5_184.0 * 1024.0),
            ..frame()
        });
        // 5,308,416 / 100,000 = 53: 53 % 200 = 53.
        let at = 51 * 53 / 100;
        assert_eq!(
            line,
            format!(
                "\r{}  5184KB    --:-- ETA",
                bar(&format!("{}***{}", " ".repeat(at), " ".repeat(54 - at - 3)))
            )
        );
        // Past 100 it comes back: 150 -> 50.
        let back = draw(&Frame {
            pos: Some(15_000_000.0),
            ..frame()
        });
        let at = 51 * 50 / 100;
        assert!(
            back.starts_with(&format!("\r|{}***", " ".repeat(at))),
            "{back:?}"
        );
        // A position that cannot be read.
        let line = draw(&Frame {
            size: Some(100.0),
            ..frame()
        });
        assert_eq!(
            line,
            format!("\r  -% {} -----      --:-- ETA", bar(&"-".repeat(80 - 31)))
        );
        // No size, over: a dashed bar and the time it took.
        let line = draw(&Frame {
            pos: Some(42.0),
            done: true,
            elapsed: 75.0,
            ..frame()
        });
        assert_eq!(
            line,
            format!("\r{}    42      01:15    \n", bar(&"-".repeat(54)))
        );
    }

    #[test]
    fn a_fixed_size_shows_only_the_fraction_with_a_longer_bar() {
        let line = draw(&Frame {
            banner: "x",
            pos: Some(50.0),
            size: Some(100.0),
            fixed_size: true,
            elapsed: 0.25,
            ..frame()
        });
        // "\rx  50% " is 8: 80 - 33 + 8 = 55 columns, 27 of them stars.
        let want = format!(
            "\rx  50% {}    00:00 ETA",
            bar(&format!("{}{}", "*".repeat(27), " ".repeat(28)))
        );
        assert_eq!(line, want);
    }

    #[test]
    fn stalls_done_and_narrow_terminals() {
        let stalled = draw(&Frame {
            pos: Some(10.0),
            size: Some(100.0),
            elapsed: 3.0,
            still_for: 5,
            ..frame()
        });
        assert!(stalled.ends_with("    10    - stalled -"), "{stalled:?}");
        let done = draw(&Frame {
            pos: Some(100.0),
            size: Some(100.0),
            done: true,
            elapsed: 3725.0,
            ..frame()
        });
        assert!(done.starts_with("\r100% |****"), "{done:?}");
        assert!(done.ends_with("   100    1:02:05    \n"), "{done:?}");
        // Past the size: no estimate.
        let over = draw(&Frame {
            pos: Some(120.0),
            size: Some(100.0),
            ..frame()
        });
        assert!(over.starts_with("\r100% "), "{over:?}");
        assert!(over.ends_with("   --:-- ETA"), "{over:?}");
        // A size of 0 is complete.
        assert!(draw(&Frame {
            pos: Some(0.0),
            size: Some(0.0),
            ..frame()
        })
        .starts_with("\r100% "));
        // Too narrow for a bar: none is drawn.
        let narrow = draw(&Frame {
            width: 20,
            pos: Some(1.0),
            size: Some(2.0),
            ..frame()
        });
        assert!(!narrow.contains('|'), "{narrow:?}");
        assert!(narrow.starts_with("\r 50%      1 "), "{narrow:?}");
        // Big positions are abbreviated, up to petabytes.
        let big = draw(&Frame {
            pos: Some(3.0 * 1024f64.powi(5) * 100_000.0),
            ..frame()
        });
        assert!(big.contains(" 300000PB "), "{big:?}");
        // The bar is at most 240 wide.
        let wide = draw(&Frame {
            width: 1000,
            pos: Some(1.0),
            size: Some(1.0),
            ..frame()
        });
        assert!(wide.contains(&bar(&"*".repeat(240))), "{wide:?}");
    }

    #[test]
    fn foreground_is_read_from_proc_stat() {
        let mine = "4242 (bricks (x) y) S 1 4242 4242 34816 4242 4194304 0";
        assert_eq!(foreground_in_stat(mine), Some(true));
        let bg = "4242 (bricks) S 1 4242 4242 34816 5000 4194304 0";
        assert_eq!(foreground_in_stat(bg), Some(false));
        let none = "4242 (bricks) S 1 4242 4242 0 -1 4194304 0";
        assert_eq!(foreground_in_stat(none), Some(false));
        assert_eq!(foreground_in_stat("garbage"), None);
    }

    #[test]
    fn arguments_are_clicks_and_bad_ones_are_refused() {
        let ok = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(ok("fd.filepos").is_ok());
        assert!(ok("fd.filepos, fd.filesize").is_ok());
        assert!(ok("a.count b.count, FIXED_SIZE 100").is_ok());
        assert!(ok(
            "fd.filepos, fd.filesize, BANNER \"a file\", UPDATE 0.5, ACTIVE false, DELAY 2, \
             CHECK_STDOUT true"
        )
        .is_ok());
        let err = |a: &str| ok(a).unwrap_err();
        assert!(err("").contains("POSHANDLER"));
        assert!(err("fd").contains("`fd` is not a read handler"));
        assert!(err("fd., x.y").contains("POSHANDLER"));
        assert!(err("fd.filepos, .size").contains("SIZEHANDLER"));
        assert!(err("c.count, UPDATE 0").contains("UPDATE must be at least 1 ms"));
        assert!(err("c.count, UPDATE soon").contains("UPDATE"));
        assert!(err("c.count, FIXED_SIZE -1").contains("not negative"));
        assert!(err("c.count, ACTIVE maybe").contains("ACTIVE"));
        assert!(err("c.count, NOSUCH 1").contains("NOSUCH"));
    }

    /// Builds `config` on a trace clock, the ProgressBar `pb` drawing
    /// into the returned lines, 80 columns wide, and starts it.
    fn engine(config: &str) -> (Engine, Arc<Mutex<Vec<String>>>) {
        let mut map = bricks_config::SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            bricks_config::Source {
                name: "<test>".into(),
                text: config.to_string(),
            },
        )
        .unwrap();
        let plan = bricks_runtime::build(&router, &crate::registry()).unwrap();
        let mut e = Engine::new(&plan).unwrap();
        e.idle_sleep = false;
        e.set_trace_clock(true);
        let lines: Arc<Mutex<Vec<String>>> = Arc::default();
        let i = e.graph().find("pb").unwrap();
        let kept = Arc::clone(&lines);
        e.graph().with_element_mut(i, |el| {
            let pb = bricks_element::taken_from::<ProgressBar>(el).unwrap();
            pb.out = Output::Kept(kept, 80);
        });
        e.start();
        (e, lines)
    }

    fn read(e: &Engine, handler: &str) -> String {
        e.read_handler("pb", handler).unwrap().into_text()
    }

    /// Moves the trace clock to `ms` and runs one round.
    fn at_ms(e: &mut Engine, ms: u64) {
        e.set_clock(Timestamp(ms * NS_PER_MS));
        e.step();
    }

    #[test]
    fn redraws_from_its_timer_and_ends_with_a_newline() {
        let (mut e, lines) = engine(
            "c :: Counter;\n\
             InfiniteSource(LIMIT 50, BURST 64, STOP false) -> c -> Discard;\n\
             pb :: ProgressBar(c.count, FIXED_SIZE 100, BANNER x, UPDATE 0.25);",
        );
        assert_eq!(read(&e, "poshandler"), "c.count");
        assert_eq!(read(&e, "sizehandler"), "");
        assert_eq!(read(&e, "size"), "100");
        // The first redraw is due at once, before the source runs.
        at_ms(&mut e, 0);
        for _ in 0..4 {
            e.step();
        }
        assert_eq!(lines.lock().unwrap().len(), 1);
        assert!(lines.lock().unwrap()[0].starts_with("\rx   0% |   "));
        // Not again before UPDATE.
        at_ms(&mut e, 249);
        assert_eq!(lines.lock().unwrap().len(), 1);
        at_ms(&mut e, 250);
        let want = format!(
            "\rx  50% |{}{}|    00:00 ETA",
            "*".repeat(27),
            " ".repeat(28)
        );
        assert_eq!(lines.lock().unwrap()[1], want);
        assert_eq!(read(&e, "pos"), "50");
        // mark_done takes the position as the size: 100%, then nothing.
        e.write_handler("pb", "mark_done", "").unwrap();
        let last = lines.lock().unwrap()[2].clone();
        assert!(last.starts_with("\rx 100% |*****"), "{last:?}");
        assert!(last.ends_with("    00:00    \n"), "{last:?}");
        assert_eq!(read(&e, "active"), "false");
        assert_eq!(read(&e, "size"), "50");
        at_ms(&mut e, 2000);
        assert_eq!(lines.lock().unwrap().len(), 3);
        // reset brings it back, the size read again (none: FIXED_SIZE is
        // gone, as in Click).
        e.write_handler("pb", "reset", "").unwrap();
        at_ms(&mut e, 2001);
        at_ms(&mut e, 2002);
        assert_eq!(lines.lock().unwrap().len(), 4);
        assert_eq!(read(&e, "active"), "true");
        assert_eq!(read(&e, "size"), "0");
        e.drain();
        e.shutdown();
        let lines = lines.lock().unwrap();
        assert!(lines.last().unwrap().ends_with('\n'), "{lines:?}");
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn delay_active_and_handler_writes() {
        let (mut e, lines) = engine(
            "c :: Counter; d :: Counter;\n\
             InfiniteSource(LIMIT 10, BURST 64, STOP false) -> c -> d -> Discard;\n\
             pb :: ProgressBar(c.count d.count, c.count, DELAY 1, ACTIVE false);",
        );
        at_ms(&mut e, 0);
        at_ms(&mut e, 5000);
        assert!(lines.lock().unwrap().is_empty());
        assert_eq!(read(&e, "active"), "false");
        e.write_handler("pb", "active", "true").unwrap();
        assert!(e.write_handler("pb", "active", "maybe").is_err());
        // Comes up now, reads the size, waits for DELAY.
        at_ms(&mut e, 5001);
        at_ms(&mut e, 5002);
        assert!(lines.lock().unwrap().is_empty());
        assert_eq!(read(&e, "size"), "10");
        at_ms(&mut e, 6001);
        assert!(lines.lock().unwrap().is_empty());
        at_ms(&mut e, 6002);
        let line = lines.lock().unwrap()[0].clone();
        // Two position handlers add up: 20 of 10 is 100%, and past the
        // size there is no estimate.
        assert!(line.starts_with("\r100% |"), "{line:?}");
        assert!(line.ends_with("|    20      --:-- ETA"), "{line:?}");
        e.write_handler("pb", "poshandler", "d.count").unwrap();
        assert_eq!(read(&e, "poshandler"), "d.count");
        let err = e
            .write_handler("pb", "poshandler", "nosuch.count")
            .unwrap_err();
        assert!(err.contains("no element named `nosuch`"), "{err}");
        let err = e
            .write_handler("pb", "sizehandler", "c.nosuch")
            .unwrap_err();
        assert!(err.contains("cannot read `c.nosuch`"), "{err}");
        e.write_handler("pb", "banner", "a b").unwrap();
        assert_eq!(read(&e, "banner"), "a b");
        e.write_handler("pb", "size", "12.5").unwrap();
        assert_eq!(read(&e, "size"), "12.5");
        assert!(e.write_handler("pb", "size", "big").is_err());
        // mark_stopped keeps the size: the bar ends where it is.
        e.write_handler("pb", "mark_stopped", "").unwrap();
        let last = lines.lock().unwrap().last().unwrap().clone();
        assert!(last.starts_with("\ra b  80% |"), "{last:?}");
        assert!(last.ends_with('\n'));
    }

    #[test]
    fn unknown_handlers_end_the_run_with_an_error() {
        let mut map = bricks_config::SourceMap::default();
        let router = bricks_config::parse(
            &mut map,
            bricks_config::Source {
                name: "<test>".into(),
                text: "InfiniteSource(LIMIT 100000000, STOP false) -> c :: Counter -> Discard;\n\
                       ProgressBar(c.nosuch);"
                    .into(),
            },
        )
        .unwrap();
        let plan = bricks_runtime::build(&router, &crate::registry()).unwrap();
        let mut e = Engine::new(&plan).unwrap();
        e.set_trace_clock(true);
        let s = e.run();
        assert_eq!(s.reason, bricks_runtime::StopReason::Requested);
        assert!(
            s.errors
                .iter()
                .any(|m| m.contains("cannot read `c.nosuch`")),
            "{:?}",
            s.errors
        );
    }
}
