//! Serves Click's `ControlSocket` elements of a plan (Click's
//! `elements/userlevel/controlsocket.cc`, protocol version 1.3).
//!
//! Each ControlSocket gets a listening thread and one thread per client,
//! bounded in number; lines, data blocks and idle time are bounded too, so
//! a hostile client costs a thread at most and never touches forwarding:
//! handlers reach the workers through [`Control`] mailboxes.

use crate::hotswap::Swapper;
use bricks_elements::control::controlsocket::{ControlSocketConfig, Endpoint};
use bricks_runtime::{Control, Plan};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The longest command line a client may send.
const MAX_LINE: usize = 64 << 10;
/// The largest READDATA/WRITEDATA block.
const MAX_DATA: usize = 16 << 20;
/// Clients served at once per socket.
const MAX_CLIENTS: usize = 32;
/// A client silent this long is disconnected.
const IDLE: Duration = Duration::from_secs(60);

/// What a client's handlers can reach.
struct Router {
    control: Control,
    plan: Arc<Plan>,
    read_only: bool,
    /// What hot-swaps the configuration (the `hotswap` write handler).
    swapper: Option<Arc<Swapper>>,
}

impl Router {
    /// The configuration running now (another after a hot swap).
    fn plan(&self) -> Arc<Plan> {
        match &self.swapper {
            Some(s) => s.plan(),
            None => self.plan.clone(),
        }
    }
}

/// The name of the control socket of `click -p PORT`, as Click's driver
/// names the ControlSocket it adds.
const DRIVER_SOCKET: &str = "click_driver@@ControlSocket";

/// A ControlSocket's listener, bound before the workers start so that
/// its `port` handler can tell the port a `PORT+` found.
pub(crate) struct Bound {
    name: String,
    cfg: ControlSocketConfig,
    listener: Listener,
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// Binds every ControlSocket of `plan`, and one on TCP port `driver_port`
/// of 127.0.0.1 (`click -p PORT`: Click's text, `PORT+` for the first free
/// port from PORT) if given. A TCP socket given as `PORT+` has its port
/// argument replaced in `plan` by the port it got, so that the element's
/// `port` handler reads it (Click's does the same).
pub(crate) fn bind_all(plan: &mut Plan, driver_port: Option<&str>) -> anyhow::Result<Vec<Bound>> {
    if let Some(p) = driver_port {
        add_driver_socket(plan, p);
    }
    let sockets: Vec<_> = plan
        .elements
        .iter()
        .enumerate()
        .filter(|(_, e)| e.class.name == "ControlSocket")
        .map(|(i, e)| (i, e.name.clone(), e.args.clone()))
        .collect();
    let mut bound = Vec::new();
    for (index, name, socket_args) in sockets {
        let mut args = bricks_element::Args::from_strs(&socket_args);
        let cfg = ControlSocketConfig::parse(&mut args)
            .map_err(|err| anyhow::anyhow!("{name}: {err}"))?;
        let listener = match &cfg.endpoint {
            Endpoint::Tcp { port, upward } => {
                let host = if cfg.localhost {
                    "127.0.0.1"
                } else {
                    "0.0.0.0"
                };
                let tries = if *upward { 256 } else { 1 };
                let l = bind(&cfg, &name, || {
                    let mut last = None;
                    for p in (*port..=u16::MAX).take(tries) {
                        match TcpListener::bind((host, p)) {
                            Ok(l) => return Ok(l),
                            Err(e) => last = Some(e),
                        }
                    }
                    Err(last.unwrap_or_else(|| std::io::ErrorKind::AddrInUse.into()))
                })?;
                if *upward {
                    if let (Some(e), Ok(a)) = (plan.elements.get_mut(index), l.local_addr()) {
                        let mut args = e.args.to_vec();
                        set_port_arg(&mut args, a.port());
                        e.args = args.into();
                    }
                }
                Listener::Tcp(l)
            }
            Endpoint::Unix(path) => {
                let _ = std::fs::remove_file(path);
                let l = bind(&cfg, &name, || UnixListener::bind(path))?;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
                Listener::Unix(l)
            }
        };
        bound.push(Bound {
            name,
            cfg,
            listener,
        });
    }
    Ok(bound)
}

/// Adds the ControlSocket of `click -p PORT` to `plan` as an element of
/// its own, named as Click's driver names it, so that its `port` handler
/// can be read (`click_driver@@ControlSocket.port`). Bricks binds it to
/// loopback only: whoever reaches it may reconfigure the router (Click
/// binds every address).
fn add_driver_socket(plan: &mut Plan, port: &str) {
    let arg = |text: &str| bricks_config::Arg {
        text: text.into(),
        span: Default::default(),
    };
    plan.elements.push(bricks_runtime::PlanElement {
        name: DRIVER_SOCKET.to_string(),
        class: bricks_elements::control::controlsocket::CLASS,
        args: vec![arg("TCP"), arg(port), arg("LOCALHOST true")].into(),
        config_span: Default::default(),
        ports: Default::default(),
        outputs: Vec::new(),
        inputs: Vec::new(),
        task: bricks_element::TaskKind::None,
        every_worker: false,
        tickets: bricks_runtime::DEFAULT_TICKETS,
        placement: bricks_runtime::Placement::Default,
        shared: Arc::new(bricks_element::SharedSlot::new()),
    });
}

/// Replaces a `PORT+` argument (positional or `PORT N+`) by `port`.
fn set_port_arg(args: &mut [bricks_config::Arg], port: u16) {
    for a in args.iter_mut() {
        let t = a.text.trim();
        let keyword = t
            .strip_prefix("PORT")
            .filter(|rest| rest.starts_with(char::is_whitespace))
            .map(str::trim);
        match keyword {
            Some(v) if v.ends_with('+') => a.text = format!("PORT {port}").into(),
            None if t.ends_with('+') && t[..t.len() - 1].parse::<u16>().is_ok() => {
                a.text = port.to_string().into()
            }
            _ => continue,
        }
        return;
    }
}

/// Serves every socket [`bind_all`] bound, each on a thread of its own;
/// the threads live until the process ends.
pub(crate) fn serve(
    bound: Vec<Bound>,
    plan: &Arc<Plan>,
    control: &Control,
    swapper: Option<&Arc<Swapper>>,
) {
    // Tests shorten the idle time to see a silent client go.
    let idle = std::env::var("BRICKS_CONTROLSOCKET_IDLE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(IDLE, Duration::from_millis);
    serve_with_idle(bound, plan, control, idle, swapper)
}

fn serve_with_idle(
    bound: Vec<Bound>,
    plan: &Arc<Plan>,
    control: &Control,
    idle: Duration,
    swapper: Option<&Arc<Swapper>>,
) {
    for Bound {
        name,
        cfg,
        listener,
    } in bound
    {
        let router = Arc::new(Router {
            control: control.clone(),
            plan: plan.clone(),
            read_only: cfg.read_only,
            swapper: swapper.cloned(),
        });
        let clients = Arc::new(AtomicUsize::new(0));
        match listener {
            Listener::Tcp(l) => {
                spawn(format!("{name} accept"), move || {
                    for s in l.incoming().flatten() {
                        let (r, c) = (router.clone(), clients.clone());
                        let _ = s.set_read_timeout(Some(idle));
                        let _ = s.set_write_timeout(Some(idle));
                        if let Ok(w) = s.try_clone() {
                            client(r, c, s, w, cfg.verbose);
                        }
                    }
                });
            }
            Listener::Unix(l) => {
                spawn(format!("{name} accept"), move || {
                    for s in l.incoming().flatten() {
                        let (r, c) = (router.clone(), clients.clone());
                        let _ = s.set_read_timeout(Some(idle));
                        let _ = s.set_write_timeout(Some(idle));
                        if let Ok(w) = s.try_clone() {
                            client(r, c, s, w, cfg.verbose);
                        }
                    }
                });
            }
        }
    }
}

fn bind<L>(
    cfg: &ControlSocketConfig,
    name: &str,
    f: impl Fn() -> std::io::Result<L>,
) -> anyhow::Result<L> {
    let mut tries = 0;
    loop {
        match f() {
            Ok(l) => return Ok(l),
            Err(e) if tries < cfg.retries => {
                if cfg.retry_warnings {
                    eprintln!("{name}: {e} (retrying)");
                }
                tries += 1;
                std::thread::sleep(Duration::from_secs(1));
            }
            Err(e) => anyhow::bail!("{name}: {e}"),
        }
    }
}

fn spawn(name: String, f: impl FnOnce() + Send + 'static) {
    let _ = std::thread::Builder::new().name(name).spawn(f);
}

/// Serves one client on its own thread, or refuses it when too many are
/// connected.
fn client<R: Read + Send + 'static, W: Write + Send + 'static>(
    router: Arc<Router>,
    clients: Arc<AtomicUsize>,
    r: R,
    mut w: W,
    verbose: bool,
) {
    if clients.fetch_add(1, Ordering::SeqCst) >= MAX_CLIENTS {
        clients.fetch_sub(1, Ordering::SeqCst);
        let _ = w.write_all(b"Click::ControlSocket/1.3\r\n540 Too many clients\r\n");
        return;
    }
    spawn("controlsocket client".into(), move || {
        if verbose {
            eprintln!("ControlSocket: client connected");
        }
        let _ = session(&router, BufReader::new(r), &mut w);
        clients.fetch_sub(1, Ordering::SeqCst);
        if verbose {
            eprintln!("ControlSocket: client gone");
        }
    });
}

/// Reads one line of at most [`MAX_LINE`] bytes; `None` at the end.
fn read_line(r: &mut impl BufRead) -> std::io::Result<Option<Result<String, ()>>> {
    let mut buf = Vec::new();
    let n = r.take(MAX_LINE as u64 + 1).read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() != Some(&b'\n') && buf.len() > MAX_LINE {
        return Ok(Some(Err(())));
    }
    Ok(Some(Ok(String::from_utf8_lossy(&buf)
        .trim_end_matches(['\r', '\n'])
        .to_string())))
}

fn session(router: &Router, mut r: impl BufRead, w: &mut impl Write) -> std::io::Result<()> {
    w.write_all(b"Click::ControlSocket/1.3\r\n")?;
    loop {
        let line = match read_line(&mut r)? {
            None => return Ok(()),
            Some(Err(())) => {
                w.write_all(b"500 Line too long\r\n")?;
                return Ok(());
            }
            Some(Ok(l)) => l,
        };
        let mut words = line.trim().splitn(2, [' ', '\t']);
        let cmd = words.next().unwrap_or("").to_ascii_uppercase();
        let rest = words.next().unwrap_or("").trim();
        let reply = match cmd.as_str() {
            "" => continue,
            "QUIT" => {
                w.write_all(b"200 Goodbye!\r\n")?;
                return Ok(());
            }
            "READ" => {
                let (h, params) = split_word(rest);
                read(router, h, params, w)?;
                continue;
            }
            "READDATA" => match data(&mut r, rest)? {
                Ok((h, d)) => {
                    read(router, &h, &d, w)?;
                    continue;
                }
                Err(e) => e,
            },
            "WRITE" => {
                let (h, v) = split_word(rest);
                write(router, h, v)
            }
            "WRITEDATA" => match data(&mut r, rest)? {
                Ok((h, d)) => write(router, &h, &d),
                Err(e) => e,
            },
            "CHECKREAD" => check(router, rest, false),
            "CHECKWRITE" => check(router, rest, true),
            "LLRPC" => {
                let (name, n) = split_word(rest);
                let n = if n.is_empty() {
                    Ok(0)
                } else {
                    n.parse::<usize>()
                };
                match n {
                    Ok(n) if n <= MAX_LLRPC_DATA && !name.is_empty() => {
                        let mut input = vec![0; n];
                        r.read_exact(&mut input)?;
                        match llrpc(router, name, &input) {
                            Ok((reply, out)) => {
                                write!(w, "{reply}\r\nDATA {}\r\n", out.len())?;
                                w.write_all(&out)?;
                                continue;
                            }
                            Err(e) => e,
                        }
                    }
                    Ok(_) if !name.is_empty() => "521 Data too long".into(),
                    _ => "500 Syntax error in 'llrpc'".into(),
                }
            }
            _ => format!("501 Unimplemented command '{}'", cmd),
        };
        w.write_all(reply.as_bytes())?;
        w.write_all(b"\r\n")?;
    }
}

fn split_word(s: &str) -> (&str, &str) {
    match s.split_once([' ', '\t']) {
        Some((a, b)) => (a, b.trim_start()),
        None => (s, ""),
    }
}

/// Reads `HANDLER N` then N bytes.
fn data(r: &mut impl BufRead, rest: &str) -> std::io::Result<Result<(String, String), String>> {
    let (h, n) = split_word(rest);
    let Ok(n) = n.trim().parse::<usize>() else {
        return Ok(Err("500 Syntax error".into()));
    };
    if n > MAX_DATA {
        return Ok(Err("500 Data too long".into()));
    }
    let mut buf = vec![0; n];
    r.read_exact(&mut buf)?;
    Ok(Ok((
        h.to_string(),
        String::from_utf8_lossy(&buf).into_owned(),
    )))
}

const GLOBAL_READ: &[&str] = &[
    "version",
    "list",
    "classes",
    "config",
    "flatconfig",
    "requirements",
    "handlers",
    "timewarp",
];

/// Splits `E.H` into the element and handler; a bare name is the router's.
fn resolve<'a>(router: &Router, name: &'a str) -> Result<(Option<&'a str>, &'a str), String> {
    if name.is_empty() {
        return Err("500 Syntax error".into());
    }
    match name.rsplit_once('.') {
        Some((e, h)) => {
            if !router.plan().elements.iter().any(|x| x.name == e) {
                return Err(format!("510 No element named '{e}'"));
            }
            Ok((Some(e), h))
        }
        None => Ok((None, name)),
    }
}

fn global_read(router: &Router, h: &str) -> Option<String> {
    let plan = &router.plan();
    Some(match h {
        "version" => format!("{}\n", env!("CARGO_PKG_VERSION")),
        "timewarp" => format!("{}\n", bricks_packet::Timestamp::warp()),
        "list" => {
            let mut s = format!("{}\n", plan.elements.len());
            for e in &plan.elements {
                s.push_str(&e.name);
                s.push('\n');
            }
            s
        }
        "classes" => {
            let mut names: Vec<&str> = bricks_elements::classes().map(|c| c.name).collect();
            names.sort_unstable();
            names.dedup();
            names.iter().map(|n| format!("{n}\n")).collect()
        }
        "config" => plan.texts.config().to_string(),
        "flatconfig" => plan.texts.flatconfig().to_string(),
        "requirements" => plan.texts.requirements(),
        "handlers" => [
            "version\tr",
            "list\tr",
            "classes\tr",
            "config\tr",
            "flatconfig\tr",
            "requirements\tr",
            "handlers\tr",
            "stop\tw",
            "hotconfig\tw",
            "hotswap\tw",
        ]
        .iter()
        .map(|n| format!("{n}\n"))
        .collect(),
        _ => return None,
    })
}

fn read(router: &Router, name: &str, params: &str, w: &mut impl Write) -> std::io::Result<()> {
    let result = match resolve(router, name) {
        Err(e) => Err(e),
        Ok((None, h)) => global_read(router, h).ok_or_else(|| no_handler(name)),
        Ok((Some(e), h)) => router
            .control
            .read_handler_with(e, h, params)
            .map_err(|why| classify_error("Read", name, &why)),
    };
    match result {
        Ok(v) => {
            write!(w, "200 Read handler '{name}' OK\r\nDATA {}\r\n", v.len())?;
            w.write_all(v.as_bytes())
        }
        Err(e) => write!(w, "{e}\r\n"),
    }
}

/// The most data an LLRPC takes: Click's flat LLRPCs carry at most a
/// few words (the size field allows 4095 bytes).
const MAX_LLRPC_DATA: usize = 4095;

// Click's LLRPC numbers as sent on a ControlSocket (`include/click/llrpc.h`,
// portable form): direction bits, a 12-bit size, flags and the command.
const LLRPC_VOID: u32 = 0x2000_0000;
const LLRPC_OUT: u32 = 0x4000_0000;
const LLRPC_IN: u32 = 0x8000_0000;
const LLRPC_FLAT: u32 = 0x0000_4000;
const LLRPC_GET_RATE: u32 = 1;
const LLRPC_GET_COUNT: u32 = 3;
const LLRPC_GET_SWITCH: u32 = 5;
const LLRPC_SET_SWITCH: u32 = 6;

/// Click's `LLRPC ELEMENT#HEX`: a low-level call with binary data in and
/// out, host byte order. Only the flat ones can cross a socket, as in
/// Click; bricks answers those Click's own elements answer, through the
/// elements' handlers: a Switch's GET_SWITCH and SET_SWITCH (its `switch`
/// handler) and a Counter's GET_COUNT (0: `count`, 1: `byte_count`) and
/// GET_RATE (`rate`). Every other one fails as Click's default does
/// (Invalid argument). Returns the reply line and the data sent back.
fn llrpc(router: &Router, name: &str, input: &[u8]) -> Result<(String, Vec<u8>), String> {
    let Some((element, number)) = name.split_once('#') else {
        return Err(format!("500 Syntax error in LLRPC name '{name}'"));
    };
    let hex = number.trim_start_matches("0x").trim_start_matches("0X");
    let Ok(command) = u32::from_str_radix(hex, 16) else {
        return Err(format!("500 Syntax error in LLRPC name '{name}'"));
    };
    let Some((class, noutputs)) = router
        .plan()
        .elements
        .iter()
        .find(|x| x.name == element)
        .map(|x| (x.class.name, x.ports.noutputs()))
    else {
        return Err(format!("510 No element named '{element}'"));
    };
    let size = ((command >> 16) & 0xfff) as usize;
    if size == 0 || command & (LLRPC_IN | LLRPC_OUT) == 0 || command & LLRPC_FLAT == 0 {
        return Err(format!("501 Cannot call LLRPC '{name}' remotely"));
    }
    if router.read_only {
        return Err(format!("530 Permission denied for '{name}'"));
    }
    if command & LLRPC_IN != 0 && input.len() != size {
        return Err(format!(
            "522 LLRPC '{name}' requires {size} bytes input data"
        ));
    }
    let word = |d: &[u8]| {
        d.get(..4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let invalid = || format!("522 LLRPC '{name}' error: Invalid argument");
    // A handler's number, as the 32 bits Click's call returns.
    let read_word = |h: &str| -> Result<Vec<u8>, String> {
        let v = router
            .control
            .read_handler(element, h)
            .map_err(|_| invalid())?;
        let n: f64 = v.trim().parse().map_err(|_| invalid())?;
        Ok((n as i64 as u32).to_ne_bytes().to_vec())
    };
    let base = command & 0x0fff_ffff & !LLRPC_VOID;
    let out: Vec<u8> = match (base & 0x3fff, class) {
        (LLRPC_GET_SWITCH, "Switch") if size == 4 => read_word("switch")?,
        (LLRPC_SET_SWITCH, "Switch") if size == 4 => {
            // Click's Switch refuses an output it does not have here
            // (its `switch` handler takes one as "none").
            let v = word(input).ok_or_else(invalid)? as i32;
            if i64::from(v) >= noutputs as i64 {
                return Err(invalid());
            }
            router
                .control
                .write_handler(element, "switch", &v.to_string())
                .map_err(|_| invalid())?;
            Vec::new()
        }
        (LLRPC_GET_COUNT, "Counter") if size == 4 => match word(input) {
            Some(0) => read_word("count")?,
            Some(1) => read_word("byte_count")?,
            _ => return Err(invalid()),
        },
        (LLRPC_GET_RATE, "Counter") if size == 4 => match word(input) {
            Some(0) => read_word("rate")?,
            _ => return Err(invalid()),
        },
        _ => return Err(invalid()),
    };
    let out = if command & LLRPC_OUT != 0 {
        out
    } else {
        Vec::new()
    };
    Ok((format!("200 LLRPC '{name}' OK"), out))
}

fn no_handler(name: &str) -> String {
    format!("511 No handler named '{name}'")
}

fn classify_error(what: &str, name: &str, why: &str) -> String {
    if why.starts_with("no '")
        || why.contains("no handler")
        || why.contains("no read handler")
        || why.contains("no write handler")
        || why.contains("unknown handler")
    {
        no_handler(name)
    } else {
        handler_error(what, name, why)
    }
}

/// A handler's error as Click's ControlSocket sends it: `520-WHAT handler
/// 'NAME' error:`, then each line of `why`, the last with `520 ` and the
/// others with `520-` (lines of one reply end with `\r\n`, the last one's
/// added by the caller).
fn handler_error(what: &str, name: &str, why: &str) -> String {
    let lines: Vec<&str> = why
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty())
        .collect();
    if lines.is_empty() {
        return format!("520 {what} handler '{name}' error");
    }
    let mut s = format!("520-{what} handler '{name}' error:");
    for (i, l) in lines.iter().enumerate() {
        let sep = if i + 1 == lines.len() { ' ' } else { '-' };
        s.push_str(&format!("\r\n520{sep}{l}"));
    }
    s
}

fn write(router: &Router, name: &str, value: &str) -> String {
    if router.read_only {
        return "530 Permission denied".into();
    }
    match resolve(router, name) {
        Err(e) => e,
        Ok((None, "stop")) => {
            router.control.stop();
            format!("200 Write handler '{name}' OK")
        }
        // Click's `hotconfig` (its driver's, with `-R`; bricks' name for it
        // is `hotswap`): the value is the new configuration's text.
        Ok((None, "hotconfig" | "hotswap")) => match &router.swapper {
            None => no_handler(name),
            Some(s) => match s.swap(bricks_config::Source {
                name: "hotswap".into(),
                text: value.to_string(),
            }) {
                Ok(_) => format!("200 Write handler '{name}' OK"),
                Err(why) => handler_error("Write", name, &why),
            },
        },
        // Click's driver's `timewarp`: the clock's speed, for the process.
        Ok((None, "timewarp")) => match bricks_packet::Timestamp::write_warp(value) {
            Ok(()) => format!("200 Write handler '{name}' OK"),
            Err(why) => handler_error("Write", name, &why),
        },
        Ok((None, _)) => no_handler(name),
        Ok((Some(e), h)) => match router.control.write_handler(e, h, value) {
            Ok(()) => format!("200 Write handler '{name}' OK"),
            Err(why) => classify_error("Write", name, &why),
        },
    }
}

fn check(router: &Router, name: &str, write: bool) -> String {
    let (e, h) = match resolve(router, name) {
        Err(e) => return e,
        Ok(x) => x,
    };
    let ok = match e {
        None if write => {
            matches!(h, "stop" | "timewarp")
                || (matches!(h, "hotconfig" | "hotswap") && router.swapper.is_some())
        }
        None => GLOBAL_READ.contains(&h),
        Some(e) => {
            if write {
                if router.read_only {
                    return "530 Permission denied".into();
                }
                handler_list(router, e, true).iter().any(|x| x == h)
            } else {
                handler_list(router, e, false).iter().any(|x| x == h)
                    || router.control.read_handler(e, h).is_ok()
            }
        }
    };
    if ok {
        format!(
            "200 {} handler '{name}' OK",
            if write { "Write" } else { "Read" }
        )
    } else {
        no_handler(name)
    }
}

/// The element's handlers of one kind, from its `handlers` read handler
/// (`name<TAB>rw` lines).
fn handler_list(router: &Router, e: &str, write: bool) -> Vec<String> {
    let Ok(text) = router.control.read_handler(e, "handlers") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let (n, m) = l.split_once('\t')?;
            (if write {
                m.contains('w')
            } else {
                m.contains('r')
            })
            .then(|| n.to_string())
        })
        .collect()
}
