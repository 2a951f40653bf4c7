//! `ChatterSocket`: copies of the router's chatter for every client of a
//! TCP or UNIX-domain socket (Click's user-level
//! `elements/userlevel/chattersocket.cc`).
//!
//! Click's chatter is what goes through `click_chatter` and the default
//! error handler: what elements print (Print, IPPrint), warnings and
//! run-time errors, all of which end up on standard error. bricks has no
//! such handler: elements write to standard error themselves. So the tap
//! is standard error itself: while a client of a ChatterSocket on the
//! default channel is connected, a pipe stands in for file descriptor 2,
//! and a relay thread copies what comes through to the real standard
//! error first, then, a line at a time, to every such ChatterSocket. When
//! the last client leaves, file descriptor 2 is put back and the relay
//! ends once it has copied everything. A writer to standard error waits
//! for the relay exactly as it waited for the terminal or file before: the
//! relay writes there before anything else, and nothing else it does can
//! block.
//!
//! Each ChatterSocket serves its clients from a thread of its own, which
//! sleeps in poll(2) until a client connects or leaves, a socket can take
//! more, or a line arrives; every socket is non-blocking, and each client
//! keeps at most 500,000 bytes it has not taken (Click's `MAX_BACKLOG`):
//! one further behind is disconnected, as in Click, and the lines it lost
//! are counted. No worker ever touches a client's socket.

use bricks_element::{
    taken_from, ArgError, Args, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
};
use bricks_packet::Timestamp;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use socket2::{Domain, SockAddr, Socket, Type};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

/// The `ChatterSocket` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ChatterSocket",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "reports chatter messages to connected sockets (user-level)",
    synopsis: "ChatterSocket(\"TCP\", PORTNUMBER [, KEYWORDS])\n\
        ChatterSocket(\"UNIX\", FILENAME [, KEYWORDS])",
    description: "Listens on TCP port PORTNUMBER or on the UNIX-domain socket FILENAME and \
        sends every client a copy of the router's chatter, the messages it prints, from the \
        moment the client connects. What clients send is ignored. On connecting, a \
        client is first sent Click's greeting line `Click::ChatterSocket/1.0` followed by \
        CR LF (unless GREETING is false); then each message as one line ending in LF.\n\n\
        What is forwarded: everything bricks writes to its standard error while a client \
        is connected to a ChatterSocket on the default channel, as lines: what Print, \
        IPPrint and the other printing elements print, warnings and run-time errors, \
        ProgressBar's redraws, and anything else there; standard error still gets all of \
        it, first. Not forwarded: what is printed before the first client connects (so \
        Message and configuration warnings, printed when the configuration is read), and \
        what goes to standard output (a Script's `print`, handlers read at exit). A line \
        longer than 65,536 bytes is forwarded in pieces of that size.\n\n\
        CHANNEL: Click elements can send messages to a named channel (IPPrint's and \
        ARPPrint's CHANNEL), which only a ChatterSocket of that CHANNEL gets. bricks' \
        printing elements accept CHANNEL but always print on standard error, which is the \
        default channel; so a ChatterSocket with another CHANNEL sends its clients the \
        greeting and nothing else, and QUIET_CHANNEL (whether such a channel's messages \
        also go to standard error) is accepted and changes nothing.\n\n\
        A client stays until writing to it fails or its socket hangs up (one that only \
        shuts down its sending side still gets lines). A client more than 500,000 bytes \
        behind is disconnected, as in Click; the lines it did not get count in `lost`. \
        Nothing a client does slows the router: the sockets are served by a thread of the \
        element's own, never by a worker. If the socket cannot be opened when the router \
        starts, the run ends with the error, unless RETRIES is positive: then it is tried \
        again every second, RETRIES more times, with a warning each time (unless \
        RETRY_WARNINGS is false), and the router stops after the last failure, as in \
        Click. A UNIX socket's file is removed when the router stops (unless a ChangeUID \
        made bricks a user who may not remove it). On a hot swap, a new ChatterSocket of \
        the same name, socket and CHANNEL keeps the old one's socket, clients and \
        counters.\n\n\
        Where bricks differs from Click, on purpose: chatter is taken from standard error, \
        so it includes whatever else is written there and, as lines, what a client gets \
        may be cut differently; named channels get nothing (see CHANNEL); a TCP socket \
        listens on 127.0.0.1 only unless LOCALHOST is false (Click listens on every \
        address, and has no LOCALHOST); the socket opens when the router starts, so \
        `bricks check` opens nothing; a hot swap keeps the socket whatever RETRIES is. While \
        a client is connected standard error is a pipe to bricks' relay thread (a program \
        asking whether it is a terminal is told no), and should bricks die abruptly then, \
        the lines of its last instant may not reach standard error or the clients; when \
        the router stops as usual every line written until then is passed on, to each \
        client as far as its socket takes it without waiting.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "TYPE",
            ty: "TCP or UNIX",
            default: None,
            doc: "the socket type; positional, any case",
        },
        Keyword {
            name: "PORT",
            ty: "TCP port number or name",
            default: None,
            doc: "TCP: the port listened on; positional",
        },
        Keyword {
            name: "FILENAME",
            ty: "file name",
            default: None,
            doc: "UNIX: the socket's file, at most 107 bytes; it must not exist yet; \
                  positional",
        },
        Keyword {
            name: "CHANNEL",
            ty: "word",
            default: Some("default"),
            doc: "the chatter channel sent to clients; only the default one carries \
                  messages in bricks",
        },
        Keyword {
            name: "QUIET_CHANNEL",
            ty: "boolean",
            default: Some("true"),
            doc: "whether another channel's messages stay off standard error; accepted, no \
                  effect (bricks sends none)",
        },
        Keyword {
            name: "GREETING",
            ty: "boolean",
            default: Some("true"),
            doc: "send `Click::ChatterSocket/1.0` CR LF to each new client",
        },
        Keyword {
            name: "RETRIES",
            ty: "integer",
            default: Some("0"),
            doc: "how many more times to try to open the socket, a second apart, before \
                  stopping the router",
        },
        Keyword {
            name: "RETRY_WARNINGS",
            ty: "boolean",
            default: Some("true"),
            doc: "warn on every failed try that will be retried; otherwise only the last \
                  failure is reported",
        },
        Keyword {
            name: "LOCALHOST",
            ty: "boolean",
            default: Some("true"),
            doc: "TCP: listen on 127.0.0.1 only; false listens on every address, as Click \
                  does (not in Click)",
        },
    ],
    counters: &[
        ("clients", "connections accepted"),
        ("connected", "clients connected now"),
        ("messages", "lines sent to the clients connected then"),
        (
            "overruns",
            "clients disconnected for being more than 500,000 bytes behind",
        ),
        (
            "lost",
            "lines those clients did not get, and lines dropped because the element's \
             thread was 500,000 bytes behind",
        ),
    ],
    example: "// `nc 127.0.0.1 41901` while it runs shows the greeting, then the lines.\n\
        ChatterSocket(TCP, 41901);\n\
        RatedSource(\"hello\", RATE 5, LIMIT 10) -> Print(chatter) -> Discard;",
    see_also: &["ControlSocket", "Print", "Message"],
};

/// The line a client gets first (Click's protocol version 1.0).
const GREETING: &[u8] = b"Click::ChatterSocket/1.0\r\n";

/// How far, in bytes, a client may fall behind before it is disconnected
/// (Click's `MAX_BACKLOG`).
const MAX_BACKLOG: usize = 500_000;

/// The longest line forwarded whole; a longer one goes in pieces.
const MAX_LINE: usize = 65_536;

/// Between two tries to open the socket (Click's retry timer).
const RETRY_NS: u64 = 1_000_000_000;

/// `sizeof(sockaddr_un.sun_path)` on Linux.
const SUN_PATH: usize = 108;

/// Where a ChatterSocket listens.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Endpoint {
    /// A TCP port, on 127.0.0.1 only with `localhost`.
    Tcp { port: u16, localhost: bool },
    /// A UNIX-domain socket's file.
    Unix(PathBuf),
}

impl core::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Endpoint::Tcp { port, localhost } => {
                let ip = if *localhost {
                    Ipv4Addr::LOCALHOST
                } else {
                    Ipv4Addr::UNSPECIFIED
                };
                write!(f, "{ip}:{port}")
            }
            Endpoint::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

/// What the configuration says.
#[derive(Debug, Clone)]
struct Spec {
    endpoint: Endpoint,
    channel: String,
    greeting: bool,
    retries: i64,
    retry_warnings: bool,
}

impl Spec {
    /// Whether this socket gets the default channel, standard error.
    fn taps(&self) -> bool {
        self.channel == "default"
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let ty: String = args.read_mp("TYPE")?;
    let channel = args
        .read::<String>("CHANNEL")?
        .map(|c| c.trim().to_string())
        .unwrap_or_else(|| "default".into());
    if channel.is_empty() || channel.contains(|c: char| c.is_whitespace() || "\"'".contains(c)) {
        return Err(ArgError::new(format!(
            "bad argument CHANNEL: expected a word, found `{channel}`"
        )));
    }
    let _quiet_channel: Option<bool> = args.read("QUIET_CHANNEL")?;
    let greeting = args.read("GREETING")?.unwrap_or(true);
    let retries: i64 = args.read("RETRIES")?.unwrap_or(0);
    let retry_warnings = args.read("RETRY_WARNINGS")?.unwrap_or(true);
    let localhost = args.read::<bool>("LOCALHOST")?;
    let endpoint = match ty.trim().to_ascii_uppercase().as_str() {
        "TCP" => {
            let text: String = args.read_mp("PORT")?;
            let port = crate::standard::port_info::lookup(args, &text, 6)
                .map_err(|why| ArgError::new(format!("bad argument PORT: {why}")))?;
            Endpoint::Tcp {
                port,
                localhost: localhost.unwrap_or(true),
            }
        }
        "UNIX" => {
            let path: PathBuf = args.read_mp("FILENAME")?;
            if path.as_os_str().is_empty() {
                return Err(ArgError::new("bad argument FILENAME: expected a file name"));
            }
            if path.as_os_str().len() >= SUN_PATH {
                return Err(ArgError::new(format!(
                    "filename too long: a UNIX socket's name has at most {} bytes",
                    SUN_PATH - 1
                )));
            }
            if localhost.is_some() {
                return Err(ArgError::new("LOCALHOST: for TCP sockets only"));
            }
            Endpoint::Unix(path)
        }
        _ => {
            return Err(ArgError::new(format!(
                "unknown socket type `{ty}`: expected TCP or UNIX"
            )))
        }
    };
    let shared = args.shared(|_| Ok(Mutex::new(State::default())))?;
    Ok(Box::new(ChatterSocket {
        spec: Spec {
            endpoint,
            channel,
            greeting,
            retries,
            retry_warnings,
        },
        shared,
        owner: false,
        started: false,
        retry_at: None,
    }))
}

/// Why the socket could not be opened.
#[derive(Debug)]
struct OpenError {
    /// The call that failed (`socket`, `bind`, `listen`, ...).
    call: &'static str,
    /// Where, for `bind`.
    at: Option<String>,
    error: std::io::Error,
}

impl core::fmt::Display for OpenError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.at {
            Some(at) => write!(f, "{} {at}: {}", self.call, self.error),
            None => write!(f, "{}: {}", self.call, self.error),
        }
    }
}

/// Opens the listening socket, non-blocking, with Click's backlog of 2.
fn open(endpoint: &Endpoint) -> Result<Socket, OpenError> {
    let fail = |call, at: Option<String>| move |error| OpenError { call, at, error };
    let (domain, addr) = match endpoint {
        Endpoint::Tcp { port, localhost } => {
            let ip = if *localhost {
                Ipv4Addr::LOCALHOST
            } else {
                Ipv4Addr::UNSPECIFIED
            };
            (Domain::IPV4, SockAddr::from(SocketAddrV4::new(ip, *port)))
        }
        Endpoint::Unix(path) => (
            Domain::UNIX,
            SockAddr::unix(path).map_err(fail("bind", Some(endpoint.to_string())))?,
        ),
    };
    let sock = Socket::new(domain, Type::STREAM, None).map_err(fail("socket", None))?;
    if domain == Domain::IPV4 {
        sock.set_reuse_address(true)
            .map_err(fail("setsockopt SO_REUSEADDR", None))?;
    }
    sock.bind(&addr)
        .map_err(fail("bind", Some(endpoint.to_string())))?;
    sock.listen(2).map_err(fail("listen", None))?;
    sock.set_nonblocking(true)
        .map_err(fail("fcntl O_NONBLOCK", None))?;
    Ok(sock)
}

/// The counters, kept by the server thread and read by the element.
#[derive(Debug, Default)]
struct Counters {
    clients: AtomicU64,
    connected: AtomicU64,
    messages: AtomicU64,
    overruns: AtomicU64,
    lost: AtomicU64,
}

impl Counters {
    fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    fn sub(c: &AtomicU64, n: u64) {
        c.fetch_sub(n, Ordering::Relaxed);
    }

    fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }
}

/// What every worker's instance of one ChatterSocket shares.
#[derive(Default)]
struct State {
    /// The socket was opened, or tried: by the first instance to start.
    begun: bool,
    /// Tries left after the next (Click's `_retries`).
    retries: i64,
    /// The serving thread, once the socket is open.
    server: Option<ServerHandle>,
    counters: Arc<Counters>,
    /// Started instances not yet dropped: the last one stops the server.
    running: usize,
}

/// Sends the router's chatter to the clients of a socket.
pub struct ChatterSocket {
    spec: Spec,
    shared: Arc<Mutex<State>>,
    /// This instance opened the socket or took it over: it retries, and
    /// reports the counters (once, not once per worker).
    owner: bool,
    started: bool,
    /// When the next try to open the socket is due.
    retry_at: Option<Timestamp>,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ChatterSocket {
    /// One try to open the socket (Click's `initialize_socket`): on
    /// failure, a warning and another try in a second while tries are
    /// left, else the error and a stop.
    fn attempt(&mut self, cx: &mut Context<'_>) {
        let mut st = lock(&self.shared);
        st.retries -= 1;
        let opened = open(&self.spec.endpoint).and_then(|listener| {
            ServerHandle::spawn(listener, &self.spec, st.counters.clone()).map_err(|error| {
                OpenError {
                    call: "starting the server thread",
                    at: None,
                    error,
                }
            })
        });
        match opened {
            Ok(server) => st.server = Some(server),
            Err(e) if st.retries >= 0 => {
                if self.spec.retry_warnings {
                    let left = st.retries + 1;
                    let tries = if left == 1 { "try" } else { "tries" };
                    eprintln!("{}: warning: {e} ({left} {tries} left)", cx.name());
                }
                let at = Timestamp(cx.now().0.saturating_add(RETRY_NS));
                self.retry_at = Some(at);
                cx.schedule_at(at);
            }
            Err(e) => {
                drop(st);
                cx.report_error(e.to_string());
                cx.request_stop();
            }
        }
    }

    /// Stops the server thread, if this element has one: its clients are
    /// disconnected and a UNIX socket's file removed.
    fn stop_server(shared: &Mutex<State>) {
        let server = lock(shared).server.take();
        drop(server);
    }
}

impl Element for ChatterSocket {
    fn start(&mut self, cx: &mut Context<'_>) {
        let mut st = lock(&self.shared);
        if !std::mem::replace(&mut self.started, true) {
            st.running += 1;
        }
        if std::mem::replace(&mut st.begun, true) {
            // A retry taken over in a hot swap is due here now.
            if let Some(at) = self.retry_at {
                cx.schedule_at(at);
            }
            return;
        }
        self.owner = true;
        st.retries = self.spec.retries;
        drop(st);
        self.attempt(cx);
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        match self.retry_at {
            Some(at) if cx.now() >= at => self.retry_at = None,
            _ => return,
        }
        if !cx.stopping() {
            self.attempt(cx);
        }
    }

    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        let Some(old) = taken_from::<ChatterSocket>(old) else {
            return;
        };
        if Arc::ptr_eq(&old.shared, &self.shared) {
            // The same element, unchanged (its state is shared with the
            // new configuration): this instance takes over the old one's
            // part, so that the old one, dropped before this one starts,
            // does not stop the server.
            self.started = std::mem::take(&mut old.started);
            self.owner = std::mem::take(&mut old.owner);
            self.retry_at = old.retry_at.take();
            return;
        }
        let same = old.spec.endpoint == self.spec.endpoint && old.spec.channel == self.spec.channel;
        let mut theirs = lock(&old.shared);
        let Some(server) = theirs.server.take() else {
            return;
        };
        if !same {
            // Its socket would keep the new one from opening.
            drop(theirs);
            drop(server);
            return;
        }
        server
            .control
            .greeting
            .store(self.spec.greeting, Ordering::Relaxed);
        let mut mine = lock(&self.shared);
        mine.counters = theirs.counters.clone();
        mine.server = Some(server);
        mine.begun = true;
        self.owner = true;
    }

    fn shutdown(&mut self, _cx: &mut Context<'_>) {
        Self::stop_server(&self.shared);
    }

    fn stats(&self, s: &mut Stats) {
        let c = if self.owner {
            lock(&self.shared).counters.clone()
        } else {
            Arc::default()
        };
        for (name, v) in [
            ("clients", &c.clients),
            ("connected", &c.connected),
            ("messages", &c.messages),
            ("overruns", &c.overruns),
            ("lost", &c.lost),
        ] {
            s.counter(name, Counters::get(v));
        }
    }
}

impl Drop for ChatterSocket {
    fn drop(&mut self) {
        if !self.started {
            return;
        }
        let last = {
            let mut st = lock(&self.shared);
            st.running = st.running.saturating_sub(1);
            st.running == 0
        };
        if last {
            Self::stop_server(&self.shared);
        }
    }
}

/// A client's lines not yet written: shared with every other client,
/// written from `offset` into the first.
#[derive(Debug, Default)]
struct Backlog {
    lines: VecDeque<Arc<[u8]>>,
    offset: usize,
    /// Bytes not yet written.
    bytes: usize,
}

impl Backlog {
    /// Adds a line; `false` when the client is now more than
    /// [`MAX_BACKLOG`] bytes behind.
    fn push(&mut self, line: Arc<[u8]>) -> bool {
        if !line.is_empty() {
            self.bytes += line.len();
            self.lines.push_back(line);
        }
        self.bytes <= MAX_BACKLOG
    }

    /// Lines not yet written in full.
    fn len(&self) -> usize {
        self.lines.len()
    }

    fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Writes what `w` takes without blocking. `Err` when the client is
    /// gone.
    fn write_to(&mut self, mut w: impl Write) -> std::io::Result<()> {
        while let Some(line) = self.lines.front() {
            match w.write(&line[self.offset..]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.offset += n;
                    self.bytes -= n;
                    if self.offset == line.len() {
                        self.lines.pop_front();
                        self.offset = 0;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Cuts a byte stream into lines, each with its LF; a line longer than
/// [`MAX_LINE`] is given in pieces of that size.
#[derive(Debug, Default)]
struct Lines {
    partial: Vec<u8>,
}

impl Lines {
    fn feed(&mut self, mut bytes: &[u8], mut line: impl FnMut(Arc<[u8]>)) {
        while let Some(i) = bytes.iter().position(|&b| b == b'\n') {
            let (head, rest) = bytes.split_at(i + 1);
            if self.partial.is_empty() {
                line(Arc::from(head));
            } else {
                self.partial.extend_from_slice(head);
                line(Arc::from(std::mem::take(&mut self.partial)));
            }
            bytes = rest;
        }
        self.partial.extend_from_slice(bytes);
        while self.partial.len() >= MAX_LINE {
            let piece: Vec<u8> = self.partial.drain(..MAX_LINE).collect();
            line(Arc::from(piece));
        }
    }

    /// The last line, without its LF, at the end of the stream.
    fn finish(&mut self, mut line: impl FnMut(Arc<[u8]>)) {
        if !self.partial.is_empty() {
            line(Arc::from(std::mem::take(&mut self.partial)));
        }
    }
}

/// Lines waiting for a server thread, and how to wake it.
struct Control {
    inbox: Mutex<Inbox>,
    /// A byte written here wakes the thread (non-blocking: a full pipe
    /// means a wake is pending already).
    wake: OwnedFd,
    greeting: AtomicBool,
    counters: Arc<Counters>,
}

#[derive(Default)]
struct Inbox {
    lines: VecDeque<Arc<[u8]>>,
    bytes: usize,
    /// The element asked the thread to end.
    stop: bool,
    /// The thread has ended: lines are no longer taken.
    closed: bool,
}

impl Control {
    fn inbox(&self) -> MutexGuard<'_, Inbox> {
        self.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands a line to the thread; dropped and counted if the thread is
    /// [`MAX_BACKLOG`] bytes behind.
    fn post(&self, line: Arc<[u8]>) {
        {
            let mut inbox = self.inbox();
            if inbox.closed {
                return;
            }
            if inbox.bytes + line.len() > MAX_BACKLOG {
                Counters::add(&self.counters.lost, 1);
                return;
            }
            inbox.bytes += line.len();
            inbox.lines.push_back(line);
        }
        self.wake();
    }

    fn wake(&self) {
        let _ = nix::unistd::write(&self.wake, &[1]);
    }

    fn stop(&self) {
        self.inbox().stop = true;
        self.wake();
    }
}

/// The element's hold on its server thread: dropping it stops the
/// thread and waits for it.
struct ServerHandle {
    control: Arc<Control>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    fn spawn(listener: Socket, spec: &Spec, counters: Arc<Counters>) -> std::io::Result<Self> {
        let server = Server::new(listener, spec, counters).inspect_err(|_| {
            // Bound but never served: the file goes, as at the end.
            if let Endpoint::Unix(p) = &spec.endpoint {
                let _ = std::fs::remove_file(p);
            }
        })?;
        let control = server.control.clone();
        if spec.taps() {
            subscribe(&control);
        }
        let thread = std::thread::Builder::new()
            .name("chatter-socket".into())
            .spawn(move || server.run())?;
        Ok(ServerHandle {
            control,
            thread: Some(thread),
        })
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.control.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One connected client.
struct Client {
    sock: Socket,
    backlog: Backlog,
    /// It has closed its side: there is nothing more to read, though it
    /// may still be reading (`nc -N`); as in Click, it goes only when a
    /// write fails or the socket hangs up.
    eof: bool,
    /// poll(2) found the socket hung up or in error.
    hung: bool,
}

/// A listening socket and its clients, served by one thread.
struct Server {
    listener: Socket,
    /// A UNIX socket's file, removed at the end.
    unix_path: Option<PathBuf>,
    clients: Vec<Client>,
    control: Arc<Control>,
    /// The end of the wake pipe the thread polls.
    woken: OwnedFd,
    /// Standard error is tapped for this socket (the default channel).
    taps: bool,
    /// Held while `taps` and a client is connected.
    tap: Option<TapGuard>,
    /// The last accept failed for want of resources: leave the listener
    /// alone for a moment rather than spin on it.
    accept_backoff: bool,
    accept_errors: u64,
}

impl Server {
    fn new(listener: Socket, spec: &Spec, counters: Arc<Counters>) -> std::io::Result<Self> {
        use nix::fcntl::OFlag;
        let (woken, wake) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)?;
        let control = Arc::new(Control {
            inbox: Mutex::default(),
            wake,
            greeting: AtomicBool::new(spec.greeting),
            counters,
        });
        Ok(Server {
            listener,
            unix_path: match &spec.endpoint {
                Endpoint::Unix(p) => Some(p.clone()),
                Endpoint::Tcp { .. } => None,
            },
            clients: Vec::new(),
            control,
            woken,
            taps: spec.taps(),
            tap: None,
            accept_backoff: false,
            accept_errors: 0,
        })
    }

    fn run(mut self) {
        while self.step() {
            self.wait();
        }
    }

    /// Sleeps until a line arrives, the element says stop, a client
    /// connects, leaves or sends, or a client that is behind can take
    /// more.
    fn wait(&mut self) {
        let mut fds = Vec::with_capacity(2 + self.clients.len());
        fds.push(PollFd::new(self.woken.as_fd(), PollFlags::POLLIN));
        let backoff = std::mem::take(&mut self.accept_backoff);
        if !backoff {
            fds.push(PollFd::new(self.listener.as_fd(), PollFlags::POLLIN));
        }
        let first_client = fds.len();
        for c in &self.clients {
            let mut want = PollFlags::empty();
            if !c.eof {
                want |= PollFlags::POLLIN;
            }
            if !c.backlog.is_empty() {
                want |= PollFlags::POLLOUT;
            }
            // Hang-ups and errors are reported whatever is asked.
            fds.push(PollFd::new(c.sock.as_fd(), want));
        }
        let timeout = if backoff {
            PollTimeout::from(100u16)
        } else {
            PollTimeout::NONE
        };
        if nix::poll::poll(&mut fds, timeout).is_err() {
            return;
        }
        let broken = PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL;
        let hung: Vec<bool> = fds[first_client..]
            .iter()
            .map(|f| f.revents().is_some_and(|r| r.intersects(broken)))
            .collect();
        drop(fds);
        for (c, hung) in self.clients.iter_mut().zip(hung) {
            c.hung |= hung;
        }
    }

    /// Serves whatever is ready, without blocking. `false` once the
    /// element has said stop.
    fn step(&mut self) -> bool {
        let mut sink = [0u8; 64];
        while matches!(nix::unistd::read(&self.woken, &mut sink), Ok(n) if n > 0) {}
        let lines = {
            let mut inbox = self.control.inbox();
            if inbox.stop {
                drop(inbox);
                self.finish();
                return false;
            }
            inbox.bytes = 0;
            std::mem::take(&mut inbox.lines)
        };
        // Clients waiting to be accepted get the lines that came while
        // they waited.
        self.accept();
        for line in lines {
            self.deliver(line);
        }
        self.serve_clients();
        self.update_tap();
        true
    }

    /// The router stops: the clients get what was written to standard
    /// error up to now, as far as their sockets take it without waiting
    /// (Click wrote each message as it came, so its clients had it).
    fn finish(&mut self) {
        // Giving the tap up waits (a second at most) for the relay to
        // pass on everything written to the pipe.
        self.tap = None;
        let lines = {
            let mut inbox = self.control.inbox();
            inbox.closed = true;
            inbox.bytes = 0;
            std::mem::take(&mut inbox.lines)
        };
        for line in lines {
            self.deliver(line);
        }
        for c in &mut self.clients {
            let _ = c.backlog.write_to(&c.sock);
        }
    }

    /// Queues a line for every client; one now too far behind is
    /// disconnected, as in Click.
    fn deliver(&mut self, line: Arc<[u8]>) {
        if self.clients.is_empty() {
            return;
        }
        let counters = &self.control.counters;
        Counters::add(&counters.messages, 1);
        self.clients.retain_mut(|c| {
            if c.backlog.push(line.clone()) {
                return true;
            }
            Counters::add(&counters.overruns, 1);
            Counters::add(&counters.lost, c.backlog.len() as u64);
            Counters::sub(&counters.connected, 1);
            false
        });
    }

    /// Takes every pending connection; each new client gets the greeting
    /// first.
    fn accept(&mut self) {
        loop {
            let sock = match self.listener.accept() {
                Ok((sock, _)) => sock,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::ConnectionAborted => continue,
                Err(e) => {
                    if self.accept_errors == 0 {
                        eprintln!("ChatterSocket: accept: {e}");
                    }
                    self.accept_errors += 1;
                    self.accept_backoff = true;
                    return;
                }
            };
            if sock.set_nonblocking(true).is_err() {
                continue;
            }
            // Tapped before the greeting: a client that has read it gets
            // every line written after.
            self.clients.push(Client {
                sock,
                backlog: Backlog::default(),
                eof: false,
                hung: false,
            });
            self.update_tap();
            let c = self.clients.last_mut().expect("just pushed");
            if self.control.greeting.load(Ordering::Relaxed) {
                c.backlog.push(Arc::from(GREETING));
            }
            Counters::add(&self.control.counters.clients, 1);
            Counters::add(&self.control.counters.connected, 1);
        }
    }

    /// Writes what each client can take, reads and ignores what it sends,
    /// and lets go of those that are gone.
    fn serve_clients(&mut self) {
        let counters = &self.control.counters;
        self.clients.retain_mut(|c| {
            let mut buf = [0u8; 512];
            // What clients send is read and ignored, bounded, so that a
            // chatty client cannot hold the thread.
            let mut gone = c.hung;
            for _ in 0..16 {
                if gone || c.eof {
                    break;
                }
                match (&c.sock).read(&mut buf) {
                    Ok(0) => c.eof = true,
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(_) => {
                        gone = true;
                        break;
                    }
                }
            }
            gone = gone || c.backlog.write_to(&c.sock).is_err();
            if gone {
                Counters::sub(&counters.connected, 1);
            }
            !gone
        });
    }

    fn update_tap(&mut self) {
        if !self.taps {
            return;
        }
        match (self.clients.is_empty(), self.tap.is_some()) {
            (false, false) => match TapGuard::acquire() {
                Ok(t) => self.tap = Some(t),
                Err(e) => {
                    // Said once: the clients get the greeting only.
                    self.taps = false;
                    eprintln!("ChatterSocket: cannot tap standard error: {e}");
                }
            },
            (true, true) => self.tap = None,
            _ => {}
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.clients.clear();
        self.tap = None;
        if let Some(p) = &self.unix_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The inboxes of the ChatterSockets on the default channel.
static SUBSCRIBERS: Mutex<Vec<Weak<Control>>> = Mutex::new(Vec::new());

fn subscribe(control: &Arc<Control>) {
    let mut subs = SUBSCRIBERS.lock().unwrap_or_else(|e| e.into_inner());
    subs.retain(|w| w.strong_count() > 0);
    subs.push(Arc::downgrade(control));
}

/// Gives a line of standard error to every ChatterSocket on the default
/// channel.
fn publish(line: Arc<[u8]>) {
    let subs: Vec<Arc<Control>> = {
        let mut subs = SUBSCRIBERS.lock().unwrap_or_else(|e| e.into_inner());
        subs.retain(|w| w.strong_count() > 0);
        subs.iter().filter_map(Weak::upgrade).collect()
    };
    for c in subs {
        c.post(line.clone());
    }
}

/// Standard error, replaced by a pipe while any ChatterSocket has a
/// client.
struct Tap {
    users: usize,
    relay: Option<Relay>,
}

/// The relay thread and the real standard error it writes to.
struct Relay {
    original: OwnedFd,
    done: mpsc::Receiver<()>,
    thread: std::thread::JoinHandle<()>,
}

static TAP: Mutex<Tap> = Mutex::new(Tap {
    users: 0,
    relay: None,
});

/// One user's hold on the tap.
struct TapGuard(());

impl TapGuard {
    fn acquire() -> std::io::Result<TapGuard> {
        let mut tap = TAP.lock().unwrap_or_else(|e| e.into_inner());
        if tap.users == 0 {
            tap.relay = Some(Relay::install()?);
        }
        tap.users += 1;
        Ok(TapGuard(()))
    }
}

impl Drop for TapGuard {
    fn drop(&mut self) {
        let relay = {
            let mut tap = TAP.lock().unwrap_or_else(|e| e.into_inner());
            tap.users -= 1;
            if tap.users > 0 {
                return;
            }
            let Some(relay) = tap.relay.take() else {
                return;
            };
            // Under the lock: a new tap cannot be installed in between.
            let _ = nix::unistd::dup2_stderr(&relay.original);
            relay
        };
        // The pipe's last writer is gone: the relay copies what is left
        // and ends. A child process still holding it (a Script's `exec`)
        // is not waited for beyond a second.
        if relay.done.recv_timeout(Duration::from_secs(1)).is_ok() {
            let _ = relay.thread.join();
        }
    }
}

impl Relay {
    /// Puts a pipe in place of file descriptor 2, read by a new thread.
    fn install() -> std::io::Result<Relay> {
        let original = nix::unistd::dup(std::io::stderr())?;
        let out = original.try_clone()?;
        let (reader, writer) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let (tx, done) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("chatter-relay".into())
            .spawn(move || {
                relay(reader, out);
                let _ = tx.send(());
            })?;
        // If this fails the writer is dropped below and the relay ends at
        // once; standard error is unchanged.
        nix::unistd::dup2_stderr(&writer)?;
        Ok(Relay {
            original,
            done,
            thread,
        })
    }
}

/// Copies the pipe to the real standard error, then, by lines, to the
/// ChatterSockets; ends when every writer has closed the pipe.
fn relay(reader: OwnedFd, out: OwnedFd) {
    let mut reader = std::fs::File::from(reader);
    let mut out = std::fs::File::from(out);
    let mut buf = vec![0u8; 65_536];
    let mut lines = Lines::default();
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                // Standard error first: what it showed before is what it
                // shows now.
                let _ = out.write_all(&buf[..n]);
                lines.feed(&buf[..n], publish);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    lines.finish(publish);
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};
    use std::os::unix::net::UnixStream;

    fn ports() -> PortInfo {
        PortInfo {
            inputs: vec![],
            outputs: vec![],
        }
    }

    #[test]
    fn arguments_are_clicks_and_bad_ones_are_refused() {
        let ok = |a: &str| make_element(&CLASS, a, &ports()).map(|_| ());
        for a in [
            "TCP, 7777",
            "tcp, 7777, LOCALHOST false",
            "UNIX, /tmp/chatter",
            "unix, /tmp/chatter, CHANNEL verbose, QUIET_CHANNEL false",
            "TCP, 7777, GREETING false, RETRIES 3, RETRY_WARNINGS false",
            "TCP, 0",
        ] {
            assert!(ok(a).is_ok(), "{a}: {:?}", ok(a));
        }
        let err = |a: &str| ok(a).unwrap_err();
        assert!(err("UDP, 7777").contains("unknown socket type `UDP`"));
        assert!(err("TCP").contains("PORT"));
        assert!(err("TCP, 70000").contains("PORT"));
        assert!(err("TCP, nosuchservice").contains("nosuchservice"));
        assert!(err("UNIX").contains("FILENAME"));
        assert!(err(&format!("UNIX, /tmp/{}", "x".repeat(120))).contains("too long"));
        assert!(err("UNIX, /tmp/c, LOCALHOST true").contains("TCP"));
        assert!(err("TCP, 7777, CHANNEL \"two words\"").contains("CHANNEL"));
        assert!(err("TCP, 7777, RETRIES many").contains("RETRIES"));
        assert!(err("TCP, 7777, GREETING maybe").contains("GREETING"));
        assert!(err("TCP, 7777, BOGUS 1").contains("BOGUS"));
        assert!(err("").contains("TYPE"));
    }

    #[test]
    fn class_has_no_ports() {
        assert!(CLASS.port_count().inputs.contains(0));
        assert!(!CLASS.port_count().inputs.contains(1));
        assert!(!CLASS.port_count().outputs.contains(1));
    }

    #[test]
    fn lines_are_cut_at_lf_and_long_ones_in_pieces() {
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut l = Lines::default();
        l.feed(b"one\ntw", |x| got.push(x.to_vec()));
        l.feed(b"o\n\nthree", |x| got.push(x.to_vec()));
        assert_eq!(got, [b"one\n".to_vec(), b"two\n".to_vec(), b"\n".to_vec()]);
        l.finish(|x| got.push(x.to_vec()));
        assert_eq!(got.last().unwrap(), b"three");
        got.clear();
        let long = vec![b'x'; MAX_LINE * 2 + 10];
        l.feed(&long, |x| got.push(x.to_vec()));
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|p| p.len() == MAX_LINE));
        l.feed(b"\n", |x| got.push(x.to_vec()));
        assert_eq!(got[2].len(), 11);
    }

    /// A writer that takes `room` bytes, then would block.
    struct Slow {
        room: usize,
        got: Vec<u8>,
    }

    impl Write for Slow {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(ErrorKind::WouldBlock.into());
            }
            let n = b.len().min(self.room);
            self.room -= n;
            self.got.extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn backlog_writes_what_the_client_takes_and_keeps_the_rest() {
        let mut b = Backlog::default();
        assert!(b.push(Arc::from(&b"hello\n"[..])));
        assert!(b.push(Arc::from(&b"world\n"[..])));
        let mut w = Slow {
            room: 8,
            got: Vec::new(),
        };
        b.write_to(&mut w).unwrap();
        assert_eq!(w.got, b"hello\nwo");
        assert_eq!((b.len(), b.bytes), (1, 4));
        w.room = 100;
        b.write_to(&mut w).unwrap();
        assert_eq!(w.got, b"hello\nworld\n");
        assert!(b.is_empty());
        assert_eq!(b.bytes, 0);
        struct Gone;
        impl Write for Gone {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        b.push(Arc::from(&b"x\n"[..]));
        assert!(b.write_to(Gone).is_err());
    }

    #[test]
    fn backlog_is_bounded_as_clicks() {
        let mut b = Backlog::default();
        let line: Arc<[u8]> = Arc::from(vec![b'x'; 1000]);
        for _ in 0..MAX_BACKLOG / 1000 {
            assert!(b.push(line.clone()));
        }
        assert_eq!(b.bytes, MAX_BACKLOG);
        assert!(
            !b.push(Arc::from(&b"y"[..])),
            "one byte more is too far behind"
        );
    }

    fn spec(path: &std::path::Path, greeting: bool) -> Spec {
        Spec {
            endpoint: Endpoint::Unix(path.to_path_buf()),
            // Not the default channel: the tests leave standard error
            // alone.
            channel: "test".into(),
            greeting,
            retries: 0,
            retry_warnings: true,
        }
    }

    fn read_exactly(c: &mut UnixStream, n: usize) -> Vec<u8> {
        let mut b = vec![0; n];
        c.read_exact(&mut b).unwrap();
        b
    }

    /// A server stepped by hand: accepts, greets, forwards lines, lets
    /// go of clients that leave.
    #[test]
    fn server_greets_forwards_and_notices_clients_leaving() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.sock");
        let s = spec(&path, true);
        let counters = Arc::new(Counters::default());
        let mut server = Server::new(open(&s.endpoint).unwrap(), &s, counters.clone()).unwrap();
        let mut a = UnixStream::connect(&path).unwrap();
        a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert!(server.step());
        assert_eq!(read_exactly(&mut a, GREETING.len()), GREETING);
        assert_eq!(Counters::get(&counters.connected), 1);
        // A line before the second client connects reaches only the first.
        server.control.post(Arc::from(&b"first line\n"[..]));
        assert!(server.step());
        let mut b = UnixStream::connect(&path).unwrap();
        b.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        server.control.post(Arc::from(&b"second line\n"[..]));
        assert!(server.step());
        assert_eq!(read_exactly(&mut a, 23), b"first line\nsecond line\n");
        let mut want = GREETING.to_vec();
        want.extend_from_slice(b"second line\n");
        assert_eq!(read_exactly(&mut b, want.len()), want);
        assert_eq!(Counters::get(&counters.clients), 2);
        assert_eq!(Counters::get(&counters.messages), 2);
        // A client that only closes its side still gets lines.
        b.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(server.step());
        server.control.post(Arc::from(&b"third\n"[..]));
        assert!(server.step());
        assert_eq!(read_exactly(&mut b, 6), b"third\n");
        assert_eq!(Counters::get(&counters.connected), 2);
        // One that goes is let go: poll sees the hang-up.
        drop(a);
        server.wait();
        assert!(server.step());
        assert_eq!(Counters::get(&counters.connected), 1);
        server.control.stop();
        assert!(!server.step());
        drop(server);
        assert!(!path.exists(), "the socket's file is removed");
    }

    #[test]
    fn no_greeting_when_told_not_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quiet.sock");
        let s = spec(&path, false);
        let mut server = Server::new(open(&s.endpoint).unwrap(), &s, Arc::default()).unwrap();
        let mut a = UnixStream::connect(&path).unwrap();
        a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert!(server.step());
        server.control.post(Arc::from(&b"only this\n"[..]));
        assert!(server.step());
        assert_eq!(read_exactly(&mut a, 10), b"only this\n");
    }

    /// A client that reads nothing is cut off once 500,000 bytes behind;
    /// the server never waits for it, and counts what it lost.
    #[test]
    fn a_client_that_does_not_read_is_disconnected_not_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("slow.sock");
        let s = spec(&path, true);
        let counters = Arc::new(Counters::default());
        let mut server = Server::new(open(&s.endpoint).unwrap(), &s, counters.clone()).unwrap();
        let mut slow = UnixStream::connect(&path).unwrap();
        assert!(server.step());
        let line: Arc<[u8]> = Arc::from(
            vec![b'z'; 1023]
                .into_iter()
                .chain([b'\n'])
                .collect::<Vec<_>>(),
        );
        // At most 8 MB: far more than any socket buffer plus the backlog.
        let mut sent = 0;
        while Counters::get(&counters.overruns) == 0 && sent < 8192 {
            server.control.post(line.clone());
            assert!(server.step());
            sent += 1;
        }
        assert_eq!(Counters::get(&counters.overruns), 1);
        assert_eq!(Counters::get(&counters.connected), 0);
        assert!(Counters::get(&counters.lost) >= (MAX_BACKLOG / 1024) as u64);
        // What the kernel had taken is still there, then the end.
        slow.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut all = Vec::new();
        slow.read_to_end(&mut all).unwrap();
        assert!(all.starts_with(GREETING));
        assert!(all.len() < sent * 1024 + GREETING.len());
    }

    #[test]
    fn a_socket_file_in_the_way_fails_with_the_call_and_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("taken");
        std::fs::write(&path, b"").unwrap();
        let e = open(&Endpoint::Unix(path.clone())).unwrap_err().to_string();
        assert!(e.starts_with("bind "), "{e}");
        assert!(e.contains(&path.display().to_string()), "{e}");
    }

    /// The element, on a channel that leaves standard error alone:
    /// opened when it starts, served by its thread, closed at shutdown.
    #[test]
    fn element_serves_its_socket_while_the_router_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("el.sock");
        let mut h = Harness::new(
            &CLASS,
            &format!("UNIX, {}, CHANNEL test", path.display()),
            ports(),
        );
        assert!(!path.exists(), "nothing opens before the router starts");
        h.start();
        let mut c = UnixStream::connect(&path).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert_eq!(read_exactly(&mut c, GREETING.len()), GREETING);
        assert_eq!(h.stats().get("clients"), Some(1));
        h.shutdown();
        assert!(!path.exists());
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
    }

    /// RETRIES: a try a second, a warning each, then the error and a
    /// stop, as Click's.
    #[test]
    fn retries_then_gives_up_and_stops_the_router() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in-the-way");
        std::fs::write(&path, b"").unwrap();
        let mut h = Harness::new(
            &CLASS,
            &format!(
                "UNIX, {}, CHANNEL test, RETRIES 2, RETRY_WARNINGS false",
                path.display()
            ),
            ports(),
        );
        h.start();
        let t0 = h.now();
        assert_eq!(h.timers(), [Timestamp(t0.0 + RETRY_NS)]);
        assert!(!h.stop_requested());
        h.advance_to(Timestamp(t0.0 + RETRY_NS));
        assert_eq!(h.timers(), [Timestamp(t0.0 + 2 * RETRY_NS)]);
        assert!(!h.stop_requested());
        h.advance_to(Timestamp(t0.0 + 2 * RETRY_NS));
        assert!(h.timers().is_empty());
        assert!(h.stop_requested(), "the last failure stops the router");
        // The file was not ours: it stays.
        h.shutdown();
        assert!(path.exists());
    }

    #[test]
    fn retries_succeed_once_the_way_is_clear() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("later.sock");
        std::fs::write(&path, b"").unwrap();
        let mut h = Harness::new(
            &CLASS,
            &format!(
                "UNIX, {}, CHANNEL test, RETRIES 1, RETRY_WARNINGS false",
                path.display()
            ),
            ports(),
        );
        h.start();
        std::fs::remove_file(&path).unwrap();
        let t0 = h.now();
        h.advance_to(Timestamp(t0.0 + RETRY_NS));
        assert!(!h.stop_requested());
        assert!(UnixStream::connect(&path).is_ok());
        h.shutdown();
    }

    #[test]
    fn no_retries_is_an_error_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("blocked");
        std::fs::write(&path, b"").unwrap();
        let mut h = Harness::new(
            &CLASS,
            &format!("UNIX, {}, CHANNEL test", path.display()),
            ports(),
        );
        h.start();
        assert!(h.stop_requested());
        assert!(h.timers().is_empty());
    }
}
