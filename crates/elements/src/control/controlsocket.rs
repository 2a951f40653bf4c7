//! `ControlSocket`: Click's handler protocol over TCP or a Unix socket
//! (Click's `elements/userlevel/controlsocket.cc`).
//!
//! This element checks its arguments, has no ports, and runs an idle task
//! that keeps the router running until it is stopped, as Click's driver
//! runs while a socket may still send commands; `bricks run` finds
//! ControlSocket elements in the plan and serves each on threads of its
//! own ([`ControlSocketConfig::parse`] gives it what to serve), so that
//! no client can slow a worker.

use std::path::PathBuf;

use bricks_element::{
    ArgError, Args, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo, TaskKind,
    TaskResult,
};

/// The `ControlSocket` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ControlSocket",
    ports: "0/0",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "opens a control socket that reads and writes handlers (Click's protocol)",
    synopsis: "ControlSocket(\"TCP\", PORTNUMBER [, KEYWORDS])\nControlSocket(\"UNIX\", FILENAME [, KEYWORDS])",
    description: "Listens for connections on a TCP port or a Unix socket and speaks Click's \
        ControlSocket protocol, version 1.3: on connecting, the server sends the line \
        `Click::ControlSocket/1.3`; then the client sends commands, one a line: \
        `READ handler [params]`, `READDATA handler n` (n bytes of parameters follow), \
        `WRITE handler value`, `WRITEDATA handler n` (n bytes of value follow), \
        `CHECKREAD handler`, `CHECKWRITE handler`, `LLRPC element#HEX [n]` (Click's \
        flat low-level calls with n bytes of data in and `DATA n` out, host byte order: \
        a Switch's GET_SWITCH and SET_SWITCH, a Counter's GET_COUNT and GET_RATE; others \
        fail with 522 as in Click) and `QUIT`. A router with a ControlSocket runs until it is \
        stopped (`WRITE stop`, a Script's `stop`, Ctrl-C), as Click's does, even when no \
        source is left. Every reply is a line `CODE text` (200 OK, 220 OK but with warnings, 500 \
        syntax error, 501 unimplemented command, 510 no such element, 511 no such handler, \
        520 handler error, 530 permission denied, 540 no router); a READ that succeeds is \
        followed by `DATA n` and n bytes. Handlers are named `ELEMENT.HANDLER`, or a bare \
        name for the router's own: `version`, `list` (the element count then one name a \
        line), `classes`, `config`, `flatconfig`, `requirements`, `handlers`, `stop` \
        (write). Its own read handler is `port` (TCP: the port it listens on, \
        the one found for `PORT+`) or `filename` (Unix).\n\nbricks differs from Click in a few ways: a TCP socket listens on \
        127.0.0.1 unless LOCALHOST is false (Click listens on every address unless \
        LOCALHOST is true); a Unix socket is made with mode 0600; a command line longer \
        than 64 KiB, a DATA block over 16 MiB, more than 32 clients at once and a client \
        silent for 60 seconds are refused or disconnected. The server runs on its own \
        threads: clients never slow forwarding.",
    ports: "none",
    keywords: &[
        Keyword {
            name: "TYPE",
            ty: "TCP or UNIX",
            default: None,
            doc: "the socket type; positional",
        },
        Keyword {
            name: "PORT",
            ty: "port number or file name",
            default: None,
            doc: "the TCP port (0-65535; `N+`: the first free port from N on, at most 256 tried) \
                or the Unix socket's file name; positional",
        },
        Keyword {
            name: "READONLY",
            ty: "boolean",
            default: Some("false"),
            doc: "refuse every write with 530",
        },
        Keyword {
            name: "PROXY",
            ty: "string",
            default: None,
            doc: "Click's proxy; refused (bricks has none)",
        },
        Keyword {
            name: "VERBOSE",
            ty: "boolean",
            default: Some("false"),
            doc: "print a line on standard error as clients come and go",
        },
        Keyword {
            name: "LOCALHOST",
            ty: "boolean",
            default: Some("true"),
            doc: "TCP only: listen on 127.0.0.1 only",
        },
        Keyword {
            name: "RETRIES",
            ty: "integer",
            default: Some("0"),
            doc: "how many more times to try to bind, a second apart",
        },
        Keyword {
            name: "RETRY_WARNINGS",
            ty: "boolean",
            default: Some("true"),
            doc: "warn on every failed bind that will be retried",
        },
    ],
    counters: &[],
    example: "ControlSocket(TCP, 41900); InfiniteSource(LIMIT 5) -> c :: Counter -> Discard;",
    see_also: &["ChatterSocket", "KernelHandlerProxy"],
};

/// Where a control socket listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A TCP port; with `upward` (Click's `PORT+`), the first free port
    /// from it on.
    Tcp {
        /// The port.
        port: u16,
        /// Try the following ports when it is taken.
        upward: bool,
    },
    /// A Unix socket file.
    Unix(PathBuf),
}

/// A ControlSocket's checked arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlSocketConfig {
    /// Where it listens.
    pub endpoint: Endpoint,
    /// Writes are refused.
    pub read_only: bool,
    /// Print connections on standard error.
    pub verbose: bool,
    /// TCP: bind to 127.0.0.1 only.
    pub localhost: bool,
    /// More bind attempts, a second apart.
    pub retries: u32,
    /// Warn on failed binds that are retried.
    pub retry_warnings: bool,
}

impl ControlSocketConfig {
    /// Reads a ControlSocket's arguments.
    pub fn parse(args: &mut Args<'_>) -> Result<ControlSocketConfig, ArgError> {
        let ty: String = args.read_mp("TYPE")?;
        let endpoint = match ty.to_ascii_uppercase().as_str() {
            "TCP" => {
                let text: String = args.read_mp("PORT")?;
                let (digits, upward) = match text.trim().strip_suffix('+') {
                    Some(d) => (d, true),
                    None => (text.trim(), false),
                };
                let port = digits.parse::<u16>().map_err(|_| {
                    ArgError::new(format!("PORT: expected port number, not `{text}`"))
                })?;
                Endpoint::Tcp { port, upward }
            }
            "UNIX" => {
                let file: PathBuf = args.read_mp("PORT")?;
                if file.as_os_str().is_empty() {
                    return Err(ArgError::new("FILENAME: expected a file name"));
                }
                Endpoint::Unix(file)
            }
            _ => {
                return Err(ArgError::new(format!(
                    "unknown socket type `{ty}` (expected TCP or UNIX)"
                )))
            }
        };
        let read_only = args.read::<bool>("READONLY")?.unwrap_or(false);
        if args.read::<String>("PROXY")?.is_some() {
            return Err(ArgError::new("PROXY: bricks has no handler proxy"));
        }
        let verbose = args.read::<bool>("VERBOSE")?.unwrap_or(false);
        let localhost = args.read::<bool>("LOCALHOST")?.unwrap_or(true);
        let retries = args.read::<u32>("RETRIES")?.unwrap_or(0);
        let retry_warnings = args.read::<bool>("RETRY_WARNINGS")?.unwrap_or(true);
        Ok(ControlSocketConfig {
            endpoint,
            read_only,
            verbose,
            localhost,
            retries,
            retry_warnings,
        })
    }
}

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let cfg = ControlSocketConfig::parse(args)?;
    Ok(Box::new(ControlSocket {
        endpoint: cfg.endpoint,
    }))
}

/// The element: only its `port` or `filename` handler at run time (the
/// binary serves the socket).
#[derive(Debug)]
pub struct ControlSocket {
    endpoint: Endpoint,
}

impl Element for ControlSocket {
    /// A source that never ends by itself: commands may still come, so
    /// the run goes on until a stop (which ends every source).
    fn task_kind(&self) -> TaskKind {
        TaskKind::Source
    }

    fn run_task(&mut self, _cx: &mut Context<'_>) -> TaskResult {
        TaskResult::Idle
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match (&self.endpoint, handler) {
            // `bricks run` binds before the routers start and gives a
            // `PORT+` socket the port it found as its argument.
            (Endpoint::Tcp { port, upward }, "port") => {
                Some(format!("{port}{}", if *upward { "+" } else { "" }))
            }
            (Endpoint::Unix(path), "filename") => Some(path.display().to_string()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const TCP: &[Handler] = &[Handler::r("port")];
        const UNIX: &[Handler] = &[Handler::r("filename")];
        match self.endpoint {
            Endpoint::Tcp { .. } => TCP,
            Endpoint::Unix(_) => UNIX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    fn parse(text: &str) -> Result<ControlSocketConfig, String> {
        let args = bricks_runtime::testing::parse_args(text)?;
        let mut a = Args::from_strs(&args);
        let c = ControlSocketConfig::parse(&mut a).map_err(|e| e.to_string())?;
        a.complete().map_err(|e| e.to_string())?;
        Ok(c)
    }

    #[test]
    fn arguments() {
        let c = parse("TCP, 41900").unwrap();
        assert_eq!(
            c.endpoint,
            Endpoint::Tcp {
                port: 41900,
                upward: false
            }
        );
        let c = parse("tcp, 41900+").unwrap();
        assert_eq!(
            c.endpoint,
            Endpoint::Tcp {
                port: 41900,
                upward: true
            }
        );
        assert!(c.localhost && !c.read_only);
        let c = parse("UNIX, /tmp/x, READONLY true, VERBOSE true").unwrap();
        assert_eq!(c.endpoint, Endpoint::Unix("/tmp/x".into()));
        assert!(c.read_only && c.verbose);
        assert!(parse("TCP, 70000").is_err());
        assert!(parse("UDP, 1").is_err());
        assert!(parse("TCP, 1, FOO 2").is_err());
        assert!(Harness::try_new(&CLASS, "TCP, 0", PortInfo::default()).is_ok());
        assert!(Harness::try_new(&CLASS, "TCP", PortInfo::default()).is_err());
    }
}
