//! `Socket`: packets over a TCP, UDP or UNIX-domain socket (Click's
//! user-level `elements/userlevel/socket.cc`). Packets do not flow through
//! the element: what comes in is written to the socket, what is read from
//! it comes out.
//!
//! As in Click nothing is framed: on a stream (TCP, UNIX) each packet's
//! bytes are written as they are, one after the other, and each read of up
//! to SNAPLEN bytes becomes one packet, wherever the writer's packets
//! began; on a datagram socket (UDP, UNIX_DGRAM) a packet is a datagram.
//! A server accepts one connection at a time and, once it ends, the next;
//! a datagram server answers whoever sent to it last. ALLOW and DENY name
//! IPv4 route tables looked up with a client's address before its
//! connection or datagram is taken.
//!
//! Unlike Click's, nothing here blocks a worker: the socket is opened when
//! the router starts (never while a configuration is only checked), a
//! client connects without waiting, reads and accepts are bounded per task
//! run, and a stream that cannot take more keeps what it was given in a
//! bounded queue. Every worker's instance shares one socket: pushes from
//! any worker are written under a lock, and one worker (the first whose
//! task runs) receives.
//!
//! Click's older names for it, ToSocket and FromSocket, are built here
//! too (`make_compat`, called from `socket_compat.rs`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Processing,
    Stats, TaskKind, TaskResult,
};
use bricks_packet::Packet;
use socket2::{Domain, Protocol, SockAddr, Type};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::OwnedFd;
use std::os::unix::net::{UnixDatagram, UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `Socket` class.
pub static CLASS: ElementClass = ElementClass {
    name: "Socket",
    ports: "0-1/0-1",
    processing: "a/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "a socket transport: TCP, UDP or UNIX-domain (user-level)",
    synopsis: "Socket(TYPE, ADDR, PORT [, LOCAL_ADDR, LOCAL_PORT] [, KEYWORDS]) or \
        Socket(TYPE, FILENAME [, LOCAL_FILENAME] [, KEYWORDS])",
    description: "Transports packets over a socket. Packets do not flow through Socket: each \
        packet on its input is sent to the remote host or process, and what is received from \
        it is emitted on the output. TYPE is TCP or UDP (with ADDR and PORT) or UNIX or \
        UNIX_DGRAM (with FILENAME).\n\n\
        A server (the default) binds ADDR:PORT or FILENAME. A TCP or UNIX server accepts one \
        connection at a time (the next waits in a backlog of 2) and, when it ends, accepts the \
        next; a UDP or UNIX_DGRAM server receives from anyone and sends to whoever sent it the \
        last datagram. A client (CLIENT true, or no output, or LOCAL_ADDR, LOCAL_PORT or \
        LOCAL_FILENAME given) connects to ADDR:PORT or FILENAME (TCP, UNIX) or sends datagrams \
        there (UDP, UNIX_DGRAM), from the local address when one is given. A UDP client with \
        ADDR 0.0.0.0 sends each packet to its destination address annotation, port PORT.\n\n\
        Nothing is framed, as in Click: on a TCP or UNIX stream each packet's bytes are written \
        as they are, and each read of up to SNAPLEN bytes becomes one packet, so the packets \
        that come out need not match those that went in. On UDP and UNIX_DGRAM a packet is a \
        datagram; a longer one is cut to SNAPLEN, the missing length kept in the extra-length \
        annotation.\n\n\
        ALLOW and DENY name IPv4 route tables (RadixIPLookup, DirectIPLookup, StaticIPLookup, \
        ...). A server looks a TCP client's address up before taking its connection, and a UDP \
        sender's before taking its datagram: found in ALLOW, it is taken; otherwise found in \
        DENY, it is refused (the connection closed, the datagram dropped); otherwise taken. So \
        ALLOW alone refuses nobody: pair it with DENY holding 0.0.0.0/0. The lookups go \
        through the table's `lookup` handler, so a table changed at run time applies at once.\n\n\
        Where bricks differs from Click, on purpose: nothing blocks a worker. Click's push waits \
        until the socket can take the packet; here a stream that cannot take more (or that is \
        still connecting) keeps up to 256 packets in order and writes them when it can, and \
        drops what comes beyond, counted in `queue_full`; a datagram the kernel refuses is \
        dropped and counted there too (a pull input instead keeps it and pulls no more until \
        it is sent). A client connects without waiting: a failed connect, bind or listen is \
        reported with the address (the run ends with an error) where Click refuses to start. \
        The socket is opened when the router starts, so `bricks check` needs no network. A \
        client whose connection ends stays closed, as in Click. A datagram server with no \
        sender yet drops what it is given (Click sends it to its own address). LOCAL_ADDR \
        alone binds the client's source address (Click binds only with a LOCAL_PORT). With no \
        output the element still reads, to notice a peer that goes away, and drops what it \
        reads (counted in `ignored`; Click does not read, and a server of Click's with no \
        output accepts no connection). A TCP server's socket has SO_REUSEADDR, so that a \
        restarted router binds its port again at once. The UNIX socket file a server or a \
        client binds is removed when the router stops. Reads and accepts are bounded by BURST \
        per task run.\n\n\
        With several workers every worker's instance shares the socket: packets pushed on any \
        worker are written, the first worker to run the element's task receives, and a pull \
        input is pulled on each worker.",
    ports: "at most one input, push or pull; at most one push output",
    keywords: KEYWORDS,
    counters: COUNTERS,
    example: "RatedSource(\"hello\", LIMIT 5, STOP true) -> Socket(UDP, 127.0.0.1, 5555, \
        CLIENT true);\n\
        Socket(TCP, 0.0.0.0, 5556) -> Print(got, CONTENTS ASCII) -> Discard;",
    see_also: &[
        "ToSocket",
        "FromSocket",
        "RawSocket",
        "McastSocket",
        "RadixIPLookup",
    ],
};

/// Socket's keywords, which ToSocket and FromSocket take too.
pub(super) const KEYWORDS: &[Keyword] = &[
    Keyword {
        name: "TYPE",
        ty: "TCP, UDP, UNIX or UNIX_DGRAM",
        default: None,
        doc: "the kind of socket; positional, any case",
    },
    Keyword {
        name: "ADDR",
        ty: "IPv4 address",
        default: None,
        doc: "TCP, UDP: the address a server binds or a client connects or sends to; \
              positional",
    },
    Keyword {
        name: "PORT",
        ty: "port: number or name (PortInfo, well-known)",
        default: None,
        doc: "TCP, UDP: the port with ADDR; positional",
    },
    Keyword {
        name: "LOCAL_ADDR",
        ty: "IPv4 address",
        default: Some("none"),
        doc: "TCP, UDP: a client's own address, bound before it connects or sends; \
              positional; ignored by a server",
    },
    Keyword {
        name: "LOCAL_PORT",
        ty: "port",
        default: Some("0: the kernel's choice"),
        doc: "TCP, UDP: a client's own port; positional; ignored by a server",
    },
    Keyword {
        name: "FILENAME",
        ty: "file name",
        default: None,
        doc: "UNIX, UNIX_DGRAM: the socket file a server binds or a client connects or \
              sends to (shorter than 108 bytes); positional",
    },
    Keyword {
        name: "LOCAL_FILENAME",
        ty: "file name",
        default: Some("none"),
        doc: "UNIX, UNIX_DGRAM: a client's own socket file, bound before it connects or \
              sends (a UNIX_DGRAM client needs one to receive answers); positional",
    },
    Keyword {
        name: "CLIENT",
        ty: "boolean",
        default: Some("false; true with no output or with a local address"),
        doc: "connect (or send) to the address instead of binding it",
    },
    Keyword {
        name: "SNAPLEN",
        ty: "unsigned",
        default: Some("2048"),
        doc: "the most bytes read into one packet; 1 to 2048, the largest packet bricks \
              holds",
    },
    Keyword {
        name: "NODELAY",
        ty: "boolean",
        default: Some("true"),
        doc: "TCP: send segments at once (TCP_NODELAY, no Nagle algorithm)",
    },
    Keyword {
        name: "SNDBUF",
        ty: "unsigned",
        default: Some("the kernel's (wmem_default)"),
        doc: "the socket's send buffer in bytes",
    },
    Keyword {
        name: "RCVBUF",
        ty: "unsigned",
        default: Some("the kernel's (rmem_default)"),
        doc: "the socket's receive buffer in bytes",
    },
    Keyword {
        name: "TIMESTAMP",
        ty: "boolean",
        default: Some("true"),
        doc: "stamp received packets with the time they were read",
    },
    Keyword {
        name: "HEADROOM",
        ty: "unsigned",
        default: Some("128"),
        doc: "room before received packets; bricks packets always have 128 bytes, so \
              larger values are refused",
    },
    Keyword {
        name: "ALLOW",
        ty: "IPv4 route table element name",
        default: Some("none"),
        doc: "a TCP or UDP server takes clients whose address this table has a route for",
    },
    Keyword {
        name: "DENY",
        ty: "IPv4 route table element name",
        default: Some("none"),
        doc: "a TCP or UDP server refuses clients this table has a route for, unless \
              ALLOW has one",
    },
    Keyword {
        name: "VERBOSE",
        ty: "boolean",
        default: Some("false"),
        doc: "say when a connection is opened, refused or closed, and when a datagram is \
              refused",
    },
    Keyword {
        name: "PROPER",
        ty: "boolean",
        default: Some("false"),
        doc: "PlanetLab's Proper port binding; accepted and ignored, as by a Click built \
              without Proper",
    },
    Keyword {
        name: "BURST",
        ty: "unsigned",
        default: Some("32"),
        doc: "reads, datagrams or accepted connections per task run, and packets pulled \
              from a pull input per run; 1 to 256 (not in Click)",
    },
];

/// Socket's counters, which ToSocket and FromSocket report too.
pub(super) const COUNTERS: &[(&str, &str)] = &[
    ("count", "packets received and emitted"),
    ("bytes", "their bytes"),
    ("sent", "packets written whole to the socket"),
    ("sent_bytes", "their bytes"),
    (
        "drops",
        "input packets not sent: no connection, queue full, or a failed write",
    ),
    (
        "no_connection",
        "input packets given while there was no connection or no one to send to",
    ),
    (
        "queue_full",
        "input packets dropped for lack of room: the stream's queue of 256 full, or a \
         datagram the kernel refused (EAGAIN, ENOBUFS)",
    ),
    (
        "connections",
        "connections accepted (server) or made (client)",
    ),
    (
        "closed",
        "connections that ended: the peer went away, or an error",
    ),
    (
        "denied",
        "connections and datagrams refused by ALLOW and DENY",
    ),
    (
        "ignored",
        "reads and datagrams received with no output, dropped",
    ),
    (
        "errors",
        "failed reads, writes and accepts of any other kind",
    ),
];

/// The classes whose `lookup` handler answers Click's IPRouteTable
/// lookups, which ALLOW and DENY may name.
const ROUTE_TABLES: &[&str] = &[
    "DirectIPLookup",
    "LookupIPRoute",
    "RadixIPLookup",
    "RangeIPLookup",
    "StaticIPLookup",
    "LinearIPLookup",
];

/// Packets a stream keeps while it cannot write (or is connecting).
const WRITE_QUEUE: usize = 256;

/// Click's listen backlog.
const BACKLOG: i32 = 2;

/// The longest `sun_path`, its terminating NUL included.
const SUN_PATH: usize = 108;

/// Click's TYPE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tcp,
    Udp,
    Unix,
    UnixDgram,
}

impl Kind {
    fn is_stream(self) -> bool {
        matches!(self, Kind::Tcp | Kind::Unix)
    }
}

/// Where a socket is bound, connects or sends.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Addr {
    Inet(SocketAddrV4),
    Unix(PathBuf),
}

impl core::fmt::Display for Addr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Addr::Inet(a) => write!(f, "{a}"),
            Addr::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

impl Addr {
    fn sockaddr(&self) -> std::io::Result<SockAddr> {
        match self {
            Addr::Inet(a) => Ok(SockAddr::from(*a)),
            Addr::Unix(p) => SockAddr::unix(p),
        }
    }
}

/// What the configuration says.
#[derive(Debug, Clone)]
struct Spec {
    kind: Kind,
    /// ADDR:PORT or FILENAME: bound by a server, the peer of a client.
    remote: Addr,
    /// A client's LOCAL_ADDR:LOCAL_PORT or LOCAL_FILENAME.
    local: Option<Addr>,
    client: bool,
    snaplen: usize,
    nodelay: bool,
    sndbuf: Option<usize>,
    rcvbuf: Option<usize>,
    timestamp: bool,
    verbose: bool,
    allow: Option<String>,
    deny: Option<String>,
    burst: usize,
}

/// Checks that ALLOW or DENY names a route table of this configuration.
fn check_table(args: &Args<'_>, key: &str, name: &str) -> Result<(), ArgError> {
    match args.names_element_of(name, ROUTE_TABLES) {
        Ok(()) => Ok(()),
        Err(why) => Err(ArgError::new(format!(
            "bad argument {key}: {why} (ALLOW and DENY name an IPv4 route table: {})",
            ROUTE_TABLES.join(", ")
        ))),
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_socket(args, ports, None)
}

/// Builds a Socket for one of Click's backward-compatible front ends
/// (ToSocket, FromSocket, in `socket_compat`): the same arguments and
/// behaviour, the ports the front end's class declares, and Click's
/// warning that `class` is deprecated.
pub(super) fn make_compat(
    args: &mut Args<'_>,
    ports: &PortInfo,
    class: &'static str,
) -> Result<Box<dyn Element>, ArgError> {
    make_socket(args, ports, Some(class))
}

fn make_socket(
    args: &mut Args<'_>,
    ports: &PortInfo,
    deprecated: Option<&'static str>,
) -> Result<Box<dyn Element>, ArgError> {
    let ty: String = args.read_mp("TYPE")?;
    let kind = match ty.to_ascii_uppercase().as_str() {
        "TCP" => Kind::Tcp,
        "UDP" => Kind::Udp,
        "UNIX" => Kind::Unix,
        "UNIX_DGRAM" => Kind::UnixDgram,
        _ => {
            return Err(ArgError::new(format!(
                "unknown socket type `{ty}`: expected TCP, UDP, UNIX or UNIX_DGRAM"
            )))
        }
    };
    let (remote, local) = match kind {
        Kind::Tcp | Kind::Udp => {
            let proto = if kind == Kind::Tcp { 6 } else { 17 };
            let addr: Ipv4Addr = args.read_mp("ADDR")?;
            let port: String = args.read_mp("PORT")?;
            let local_addr: Option<Ipv4Addr> = args.read_p("LOCAL_ADDR")?;
            let local_port: Option<String> = args.read_p("LOCAL_PORT")?;
            let port_of = |key: &str, text: &str| {
                crate::standard::port_info::lookup(args, text, proto)
                    .map_err(|why| ArgError::new(format!("bad argument {key}: {why}")))
            };
            let port = port_of("PORT", &port)?;
            let local_port = match local_port {
                Some(p) => port_of("LOCAL_PORT", &p)?,
                None => 0,
            };
            let local_addr = local_addr.unwrap_or(Ipv4Addr::UNSPECIFIED);
            let local = (!local_addr.is_unspecified() || local_port != 0)
                .then(|| Addr::Inet(SocketAddrV4::new(local_addr, local_port)));
            (Addr::Inet(SocketAddrV4::new(addr, port)), local)
        }
        Kind::Unix | Kind::UnixDgram => {
            let remote: PathBuf = args.read_mp("FILENAME")?;
            let local: Option<PathBuf> = args.read_p("LOCAL_FILENAME")?;
            for (what, p) in [("remote", Some(&remote)), ("local", local.as_ref())] {
                if let Some(p) = p {
                    if p.as_os_str().len() >= SUN_PATH {
                        return Err(ArgError::new(format!(
                            "{what} filename '{}' too long: a UNIX socket's name has at most \
                             {} bytes",
                            p.display(),
                            SUN_PATH - 1
                        )));
                    }
                }
            }
            (Addr::Unix(remote), local.map(Addr::Unix))
        }
    };
    let (snaplen, burst) = super::read_socket_sizes(args, 1)?;
    let _proper: Option<bool> = args.read("PROPER")?;
    let allow: Option<String> = args.read("ALLOW")?;
    let deny: Option<String> = args.read("DENY")?;
    for (key, name) in [("ALLOW", &allow), ("DENY", &deny)] {
        if let Some(name) = name {
            check_table(args, key, name)?;
        }
    }
    let has_output = ports.noutputs() > 0;
    let client = match args.read::<bool>("CLIENT")? {
        Some(c) => c,
        None => local.is_some() || !has_output,
    };
    let spec = Spec {
        kind,
        remote,
        // Click: a server ignores the local arguments.
        local: if client { local } else { None },
        client,
        snaplen,
        nodelay: args.read("NODELAY")?.unwrap_or(true),
        sndbuf: args.read("SNDBUF")?,
        rcvbuf: args.read("RCVBUF")?,
        timestamp: args.read("TIMESTAMP")?.unwrap_or(true),
        verbose: args.read("VERBOSE")?.unwrap_or(false),
        allow,
        deny,
        burst,
    };
    let endpoint = args.shared(|_| Ok(Mutex::new(Endpoint::default())))?;
    let pull_input = ports.inputs.first() == Some(&Processing::Pull);
    Ok(Box::new(Socket {
        endpoint,
        deprecated,
        io: Io {
            spec,
            has_output,
            pull_input,
            allow: None,
            deny: None,
            buf: Vec::new(),
            c: Counters::default(),
        },
    }))
}

/// Why the socket could not be opened; each names the address.
#[derive(Debug)]
enum OpenError {
    /// `socket()` or an option before bind failed.
    Setup(&'static str, std::io::Error),
    /// The address could not be bound (in use, not local, no permission).
    Bind(Addr, std::io::Error),
    /// A stream server could not listen.
    Listen(Addr, std::io::Error),
    /// A client could not connect.
    Connect(Addr, std::io::Error),
}

impl core::fmt::Display for OpenError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            OpenError::Setup(what, e) => write!(f, "{what}: {e}"),
            OpenError::Bind(a, e) => write!(f, "bind {a}: {e}"),
            OpenError::Listen(a, e) => write!(f, "listen on {a}: {e}"),
            OpenError::Connect(a, e) => write!(f, "connect to {a}: {e}"),
        }
    }
}

/// A listening stream socket.
enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// A connected stream.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn read(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => {
                let mut s: &TcpStream = s;
                s.read(buf)
            }
            Stream::Unix(s) => {
                let mut s: &UnixStream = s;
                s.read(buf)
            }
        }
    }

    /// Writes; a peer gone is EPIPE, not SIGPIPE (the router ignores it).
    fn write(&self, data: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Tcp(s) => {
                let mut s: &TcpStream = s;
                s.write(data)
            }
            Stream::Unix(s) => {
                let mut s: &UnixStream = s;
                s.write(data)
            }
        }
    }
}

/// A datagram socket.
enum Datagram {
    Udp(UdpSocket),
    Unix(UnixDatagram),
}

/// Whom a datagram goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Peer {
    Inet(SocketAddrV4),
    Unix(PathBuf),
}

/// The socket every worker's instance shares, and what is waiting to be
/// written to it.
#[derive(Default)]
struct Endpoint {
    /// Opened (or tried): once per router, by the first worker to start.
    opened: bool,
    /// It could not be opened, or a client could not connect.
    failed: bool,
    listener: Option<Listener>,
    /// A stream client's connect in progress.
    connecting: Option<socket2::Socket>,
    conn: Option<Stream>,
    dgram: Option<Datagram>,
    /// A datagram server's last sender.
    peer: Option<Peer>,
    /// Packets a stream could not write yet, in order; the first has
    /// `written` of its bytes written. At most [`WRITE_QUEUE`].
    pending: VecDeque<Packet>,
    written: usize,
    /// The worker that receives: the first to run the task.
    receiver: Option<usize>,
    /// The UNIX socket file this element bound, removed when it closes.
    bound_path: Option<PathBuf>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.close();
    }
}

impl Endpoint {
    /// Closes every socket and removes the socket file it bound.
    fn close(&mut self) {
        self.listener = None;
        self.connecting = None;
        self.conn = None;
        self.dgram = None;
        if let Some(p) = self.bound_path.take() {
            let _ = std::fs::remove_file(p);
        }
    }

    /// Opens the socket as `spec` says. A client's connect may still be in
    /// progress when this returns.
    fn open(&mut self, spec: &Spec) -> Result<(), OpenError> {
        self.opened = true;
        let domain = match spec.remote {
            Addr::Inet(_) => Domain::IPV4,
            Addr::Unix(_) => Domain::UNIX,
        };
        let (ty, proto) = match spec.kind {
            Kind::Tcp => (Type::STREAM, Some(Protocol::TCP)),
            Kind::Udp => (Type::DGRAM, Some(Protocol::UDP)),
            Kind::Unix => (Type::STREAM, None),
            Kind::UnixDgram => (Type::DGRAM, None),
        };
        let sock =
            socket2::Socket::new(domain, ty, proto).map_err(|e| OpenError::Setup("socket", e))?;
        if spec.kind == Kind::Tcp && spec.nodelay {
            sock.set_tcp_nodelay(true)
                .map_err(|e| OpenError::Setup("TCP_NODELAY", e))?;
        }
        if let Some(n) = spec.sndbuf {
            sock.set_send_buffer_size(n)
                .map_err(|e| OpenError::Setup("SO_SNDBUF", e))?;
        }
        if let Some(n) = spec.rcvbuf {
            sock.set_recv_buffer_size(n)
                .map_err(|e| OpenError::Setup("SO_RCVBUF", e))?;
        }
        sock.set_nonblocking(true)
            .map_err(|e| OpenError::Setup("O_NONBLOCK", e))?;
        let bind = if spec.client {
            spec.local.as_ref()
        } else {
            Some(&spec.remote)
        };
        if let Some(at) = bind {
            if spec.kind == Kind::Tcp && !spec.client {
                sock.set_reuse_address(true)
                    .map_err(|e| OpenError::Setup("SO_REUSEADDR", e))?;
            }
            let sa = at.sockaddr().map_err(|e| OpenError::Bind(at.clone(), e))?;
            sock.bind(&sa).map_err(|e| OpenError::Bind(at.clone(), e))?;
            if let Addr::Unix(p) = at {
                self.bound_path = Some(p.clone());
            }
        }
        if !spec.client {
            if spec.kind.is_stream() {
                sock.listen(BACKLOG)
                    .map_err(|e| OpenError::Listen(spec.remote.clone(), e))?;
                self.listener = Some(match spec.kind {
                    Kind::Tcp => Listener::Tcp(sock.into()),
                    _ => Listener::Unix(OwnedFd::from(sock).into()),
                });
            } else {
                self.dgram = Some(datagram(spec.kind, sock));
            }
            return Ok(());
        }
        if !spec.kind.is_stream() {
            self.dgram = Some(datagram(spec.kind, sock));
            return Ok(());
        }
        let to = spec
            .remote
            .sockaddr()
            .map_err(|e| OpenError::Connect(spec.remote.clone(), e))?;
        match sock.connect(&to) {
            Ok(()) => self.conn = Some(stream(spec.kind, sock)),
            Err(e) if in_progress(&e) => self.connecting = Some(sock),
            Err(e) => return Err(OpenError::Connect(spec.remote.clone(), e)),
        }
        Ok(())
    }

    /// Whether a packet could be written now, if the socket takes it.
    fn can_write(&self, spec: &Spec) -> bool {
        if spec.kind.is_stream() {
            self.conn.is_some()
        } else {
            self.dgram.is_some() && (spec.client || self.peer.is_some())
        }
    }

    /// Whether a client's connect has finished: `Ok(true)` connected,
    /// `Ok(false)` still in progress.
    fn finish_connect(&mut self, spec: &Spec) -> Result<bool, OpenError> {
        let Some(sock) = &self.connecting else {
            return Ok(self.conn.is_some());
        };
        let err = |e| OpenError::Connect(spec.remote.clone(), e);
        let done = match spec.kind {
            // A UNIX connect refused for a full backlog is made again.
            Kind::Unix => {
                let to = spec.remote.sockaddr().map_err(err)?;
                match sock.connect(&to) {
                    Ok(()) => true,
                    Err(e) if in_progress(&e) => false,
                    Err(e) if e.raw_os_error() == Some(IS_CONN) => true,
                    Err(e) => return Err(err(e)),
                }
            }
            _ => {
                if let Some(e) = sock.take_error().map_err(err)? {
                    return Err(err(e));
                }
                sock.peer_addr().is_ok()
            }
        };
        if done {
            if let Some(sock) = self.connecting.take() {
                self.conn = Some(stream(spec.kind, sock));
            }
        }
        Ok(done)
    }
}

fn datagram(kind: Kind, sock: socket2::Socket) -> Datagram {
    match kind {
        Kind::Udp => Datagram::Udp(sock.into()),
        _ => Datagram::Unix(OwnedFd::from(sock).into()),
    }
}

fn stream(kind: Kind, sock: socket2::Socket) -> Stream {
    match kind {
        Kind::Tcp => Stream::Tcp(sock.into()),
        _ => Stream::Unix(OwnedFd::from(sock).into()),
    }
}

/// `EINPROGRESS` (TCP) or `EAGAIN` (UNIX, backlog full): a non-blocking
/// connect not finished.
fn in_progress(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(IN_PROGRESS) || e.kind() == ErrorKind::WouldBlock
}

const IN_PROGRESS: i32 = rustix::io::Errno::INPROGRESS.raw_os_error();
const IS_CONN: i32 = rustix::io::Errno::ISCONN.raw_os_error();
/// `ENOBUFS`: the interface queue is full; like a full socket buffer.
const NO_BUFS: i32 = rustix::io::Errno::NOBUFS.raw_os_error();

/// The longest datagram read whole (the longest UDP payload over IPv4);
/// a longer UNIX datagram's missing length is not known.
const MAX_DATAGRAM: usize = 65_535;

/// What became of one write.
enum Written {
    /// The whole packet is written.
    Whole,
    /// A stream took this many of its bytes so far, no more now.
    Part(usize),
    /// Nothing could be written now.
    Blocked,
    /// No one to send it to.
    NoPeer,
    /// It failed for another reason.
    Failed(std::io::Error),
}

/// Counters, per instance: the workers' add up.
#[derive(Debug, Default, Clone)]
struct Counters {
    count: u64,
    bytes: u64,
    sent: u64,
    sent_bytes: u64,
    drops: u64,
    no_connection: u64,
    queue_full: u64,
    connections: u64,
    closed: u64,
    denied: u64,
    ignored: u64,
    errors: u64,
}

/// One worker's side: the configuration, counters and read buffer.
struct Io {
    spec: Spec,
    has_output: bool,
    pull_input: bool,
    /// ALLOW and DENY's indexes in this worker's graph.
    allow: Option<usize>,
    deny: Option<usize>,
    buf: Vec<u8>,
    c: Counters,
}

/// Sends and receives packets on a socket.
pub struct Socket {
    endpoint: Arc<Mutex<Endpoint>>,
    /// The deprecated class this Socket was configured as (ToSocket,
    /// FromSocket), which Click warns about.
    deprecated: Option<&'static str>,
    io: Io,
}

fn lock(e: &Mutex<Endpoint>) -> MutexGuard<'_, Endpoint> {
    // Every critical section only makes non-blocking calls; a panic in
    // one leaves the state usable.
    e.lock().unwrap_or_else(|e| e.into_inner())
}

impl Io {
    fn say(&self, cx: &Context<'_>, msg: std::fmt::Arguments<'_>) {
        if self.spec.verbose {
            eprintln!("bricks: {}: {msg}", cx.name());
        }
    }

    /// Opens the shared socket if no worker has; resolves ALLOW and DENY
    /// in this worker's graph.
    fn start(&mut self, ep: &mut Endpoint, cx: &mut Context<'_>) {
        for (key, name, slot) in [
            ("ALLOW", &self.spec.allow, &mut self.allow),
            ("DENY", &self.spec.deny, &mut self.deny),
        ] {
            if let Some(name) = name {
                *slot = cx.find_element(name);
                if slot.is_none() && cx.worker() == 0 {
                    cx.report_error(format!("{key} `{name}`: no such element"));
                }
            }
        }
        if ep.opened {
            return;
        }
        match ep.open(&self.spec) {
            Ok(()) => {
                if ep.listener.is_some() {
                    self.say(
                        cx,
                        format_args!("listening for connections on {}", self.spec.remote),
                    );
                }
                if ep.conn.is_some() {
                    self.c.connections += 1;
                    self.say(
                        cx,
                        format_args!("opened connection to {}", self.spec.remote),
                    );
                }
            }
            Err(e) => self.fail(ep, cx, e),
        }
    }

    fn fail(&mut self, ep: &mut Endpoint, cx: &mut Context<'_>, e: OpenError) {
        ep.failed = true;
        ep.close();
        self.c.drops += ep.pending.len() as u64;
        self.c.no_connection += ep.pending.len() as u64;
        ep.pending.clear();
        eprintln!("bricks: {}: {e}", cx.name());
        cx.report_error(e.to_string());
    }

    /// Whether a server takes a client at `ip` (Click's `allowed`).
    fn allowed(&mut self, cx: &mut Context<'_>, ip: Ipv4Addr) -> bool {
        let found = |cx: &mut Context<'_>, table: Option<usize>, on_error: bool| {
            let Some(i) = table else {
                return false;
            };
            match cx.call_handler(i, "lookup", &ip.to_string(), false) {
                Ok(out) => !out.trim().is_empty() && !out.trim().starts_with('-'),
                Err(_) => on_error,
            }
        };
        // A table that cannot answer allows no one and denies everyone.
        if found(cx, self.allow, false) {
            return true;
        }
        !found(cx, self.deny, true)
    }

    fn close_conn(&mut self, ep: &mut Endpoint, cx: &Context<'_>, why: Option<std::io::Error>) {
        if ep.conn.take().is_none() {
            return;
        }
        self.c.closed += 1;
        match why {
            Some(e) => self.say(cx, format_args!("closed connection: {e}")),
            None => self.say(cx, format_args!("closed connection")),
        }
        // What was waiting for this connection will not reach the next.
        let n = ep.pending.len() as u64;
        self.c.drops += n;
        self.c.no_connection += n;
        ep.pending.clear();
        ep.written = 0;
    }

    /// Accepts the next connection when a server has none. Returns
    /// whether one was accepted or refused.
    fn accept(&mut self, ep: &mut Endpoint, cx: &mut Context<'_>) -> bool {
        if ep.conn.is_some() {
            return false;
        }
        let Some(listener) = &ep.listener else {
            return false;
        };
        let mut worked = false;
        for _ in 0..self.spec.burst {
            let (conn, from) = match listener {
                Listener::Tcp(l) => match l.accept() {
                    Ok((s, SocketAddr::V4(a))) => (Stream::Tcp(s), Some(a)),
                    Ok((s, SocketAddr::V6(_))) => (Stream::Tcp(s), None),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.error(cx, "accept", &e);
                        break;
                    }
                },
                Listener::Unix(l) => match l.accept() {
                    Ok((s, _)) => (Stream::Unix(s), None),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.error(cx, "accept", &e);
                        break;
                    }
                },
            };
            worked = true;
            if let Some(a) = from {
                if !self.allowed(cx, *a.ip()) {
                    self.c.denied += 1;
                    self.say(cx, format_args!("denied connection from {a}"));
                    continue;
                }
            }
            let set = match &conn {
                Stream::Tcp(s) => s
                    .set_nonblocking(true)
                    .and_then(|()| s.set_nodelay(self.spec.nodelay)),
                Stream::Unix(s) => s.set_nonblocking(true),
            };
            if let Err(e) = set {
                self.error(cx, "accept", &e);
                continue;
            }
            self.c.connections += 1;
            match from {
                Some(a) => self.say(cx, format_args!("opened connection from {a}")),
                None => self.say(cx, format_args!("opened connection")),
            }
            ep.conn = Some(conn);
            break;
        }
        worked
    }

    fn error(&mut self, cx: &Context<'_>, what: &str, e: &std::io::Error) {
        if self.c.errors == 0 || self.spec.verbose {
            eprintln!("bricks: {}: {what}: {e}", cx.name());
        }
        self.c.errors += 1;
    }

    /// Makes a packet of `n` bytes read, `len` long on the wire.
    fn packet(&mut self, n: usize, len: usize, now: bricks_packet::Timestamp) -> Option<Packet> {
        let mut p = Packet::from_slice(&self.buf[..n]).ok()?;
        if len > n {
            p.anno_mut().extra_length = (len - n).try_into().unwrap_or(u32::MAX);
        }
        if self.spec.timestamp {
            p.anno_mut().timestamp = now;
        }
        Some(p)
    }

    /// Takes what was read: into `out` with an output, dropped without.
    fn received(&mut self, p: Packet, out: &mut Batch) {
        if !self.has_output {
            self.c.ignored += 1;
            return;
        }
        self.c.count += 1;
        self.c.bytes += p.len() as u64;
        let _ = out.push(p);
    }

    /// Reads up to BURST times from the connection or datagram socket.
    fn receive(&mut self, ep: &mut Endpoint, cx: &mut Context<'_>, out: &mut Batch) -> bool {
        let now = cx.now();
        let mut worked = false;
        if self.buf.is_empty() {
            let size = if self.spec.kind.is_stream() {
                self.spec.snaplen
            } else {
                MAX_DATAGRAM
            };
            self.buf = vec![0; size];
        }
        for _ in 0..self.spec.burst {
            if let Some(conn) = &ep.conn {
                let snaplen = self.spec.snaplen;
                match conn.read(&mut self.buf[..snaplen]) {
                    Ok(0) => {
                        self.close_conn(ep, cx, None);
                        worked = true;
                        break;
                    }
                    Ok(n) => {
                        worked = true;
                        if let Some(p) = self.packet(n, n, now) {
                            self.received(p, out);
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.close_conn(ep, cx, Some(e));
                        worked = true;
                        break;
                    }
                }
                continue;
            }
            let Some(dgram) = &ep.dgram else {
                break;
            };
            let (len, from) = match dgram {
                Datagram::Udp(s) => match s.recv_from(&mut self.buf) {
                    Ok((n, SocketAddr::V4(a))) => (n, Some(Peer::Inet(a))),
                    Ok((n, SocketAddr::V6(_))) => (n, None),
                    Err(e) => {
                        if !self.recv_error(cx, &e) {
                            break;
                        }
                        continue;
                    }
                },
                Datagram::Unix(s) => match s.recv_from(&mut self.buf) {
                    Ok((n, a)) => (n, a.as_pathname().map(|p| Peer::Unix(p.to_path_buf()))),
                    Err(e) => {
                        if !self.recv_error(cx, &e) {
                            break;
                        }
                        continue;
                    }
                },
            };
            worked = true;
            if !self.spec.client {
                if let Some(Peer::Inet(a)) = &from {
                    if !self.allowed(cx, *a.ip()) {
                        self.c.denied += 1;
                        self.say(cx, format_args!("dropped datagram from {a}"));
                        continue;
                    }
                }
                // Click answers whoever sent last.
                if from.is_some() {
                    ep.peer = from;
                }
            }
            let n = len.min(self.spec.snaplen);
            if let Some(p) = self.packet(n, len, now) {
                self.received(p, out);
            }
        }
        worked
    }

    /// A datagram receive error: whether to read on.
    fn recv_error(&mut self, cx: &Context<'_>, e: &std::io::Error) -> bool {
        match e.kind() {
            ErrorKind::WouldBlock => false,
            ErrorKind::Interrupted => true,
            // An ICMP error for an earlier datagram: nothing to read.
            ErrorKind::ConnectionRefused => true,
            _ => {
                self.error(cx, "recv", e);
                false
            }
        }
    }

    /// Where a datagram goes: the client's address (or, for ADDR
    /// 0.0.0.0, the packet's destination annotation), or a server's last
    /// sender.
    fn destination(&self, ep: &Endpoint, p: &Packet) -> Option<Peer> {
        if !self.spec.client {
            return ep.peer.clone();
        }
        Some(match &self.spec.remote {
            Addr::Inet(a) if a.ip().is_unspecified() => {
                Peer::Inet(SocketAddrV4::new(p.anno().dst_ip, a.port()))
            }
            Addr::Inet(a) => Peer::Inet(*a),
            Addr::Unix(path) => Peer::Unix(path.clone()),
        })
    }

    /// Writes `p` from byte `from` on.
    fn write(&self, ep: &Endpoint, p: &Packet, from: usize) -> Written {
        if let Some(conn) = &ep.conn {
            let data = p.data();
            let mut at = from;
            // Ends: every successful write takes at least one byte.
            while at < data.len() {
                match conn.write(&data[at..]) {
                    Ok(0) => return Written::Failed(ErrorKind::WriteZero.into()),
                    Ok(n) => at += n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock && at > from => {
                        return Written::Part(at)
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return Written::Blocked,
                    Err(e) => return Written::Failed(e),
                }
            }
            return Written::Whole;
        }
        let Some(dgram) = &ep.dgram else {
            return Written::NoPeer;
        };
        let Some(to) = self.destination(ep, p) else {
            return Written::NoPeer;
        };
        loop {
            let r = match (dgram, &to) {
                (Datagram::Udp(s), Peer::Inet(a)) => s.send_to(p.data(), *a),
                (Datagram::Unix(s), Peer::Unix(path)) => s.send_to(p.data(), path),
                _ => return Written::NoPeer,
            };
            return match r {
                Ok(_) => Written::Whole,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => Written::Blocked,
                Err(e) if e.raw_os_error() == Some(NO_BUFS) => Written::Blocked,
                Err(e) => Written::Failed(e),
            };
        }
    }

    fn sent(&mut self, p: &Packet) {
        self.c.sent += 1;
        self.c.sent_bytes += p.len() as u64;
    }

    fn drop_for(&mut self, n: u64, no_connection: bool) {
        self.c.drops += n;
        if no_connection {
            self.c.no_connection += n;
        } else {
            self.c.queue_full += n;
        }
    }

    /// Keeps `p` to write later, or drops it when the queue is full.
    fn enqueue(&mut self, ep: &mut Endpoint, p: Packet) {
        if ep.pending.len() >= WRITE_QUEUE {
            self.drop_for(1, false);
        } else {
            ep.pending.push_back(p);
        }
    }

    /// Writes what is waiting, in order. Returns whether anything was.
    fn flush(&mut self, ep: &mut Endpoint, cx: &Context<'_>) -> bool {
        let mut worked = false;
        // Ends: each round writes the first packet whole or stops.
        while let Some(p) = ep.pending.front() {
            match self.write(ep, p, ep.written) {
                Written::Whole => {
                    worked = true;
                    ep.written = 0;
                    if let Some(p) = ep.pending.pop_front() {
                        self.sent(&p);
                    }
                }
                Written::Part(at) => {
                    worked = true;
                    ep.written = at;
                    break;
                }
                Written::Blocked => break,
                Written::NoPeer => {
                    let n = ep.pending.len() as u64;
                    ep.pending.clear();
                    ep.written = 0;
                    self.drop_for(n, true);
                    break;
                }
                Written::Failed(e) => {
                    worked = true;
                    ep.pending.pop_front();
                    ep.written = 0;
                    self.c.drops += 1;
                    self.write_failed(ep, cx, e);
                }
            }
        }
        worked
    }

    /// A write failed: a stream's connection is over (Click closes it), a
    /// datagram is lost.
    fn write_failed(&mut self, ep: &mut Endpoint, cx: &Context<'_>, e: std::io::Error) {
        if ep.conn.is_some() {
            self.close_conn(ep, cx, Some(e));
        } else {
            self.error(cx, "send", &e);
        }
    }

    /// Sends a batch: written now, queued behind what waits (a stream, or
    /// anything pulled with `keep`), or dropped and counted.
    fn send(&mut self, ep: &mut Endpoint, cx: &Context<'_>, b: &mut Batch, keep: bool) {
        let stream = self.spec.kind.is_stream();
        if ep.failed || !ep.opened || (stream && ep.conn.is_none() && ep.connecting.is_none()) {
            self.drop_for(b.len() as u64, true);
            b.clear();
            return;
        }
        let queue = stream || keep;
        let mut drain = b.drain();
        let mut gone = false;
        for p in drain.by_ref() {
            if !ep.pending.is_empty() || ep.connecting.is_some() {
                if queue {
                    self.enqueue(ep, p);
                } else {
                    self.drop_for(1, false);
                }
                continue;
            }
            match self.write(ep, &p, 0) {
                Written::Whole => self.sent(&p),
                Written::Part(at) => {
                    ep.written = at;
                    ep.pending.push_back(p);
                }
                Written::Blocked if queue => ep.pending.push_back(p),
                Written::Blocked => self.drop_for(1, false),
                Written::NoPeer => self.drop_for(1, true),
                Written::Failed(e) => {
                    self.c.drops += 1;
                    self.write_failed(ep, cx, e);
                    if stream {
                        gone = true;
                        break;
                    }
                }
            }
        }
        if gone {
            // The connection is gone: the rest has nowhere to go.
            let rest = drain.count() as u64;
            self.drop_for(rest, true);
        }
    }
}

impl Socket {
    /// One task run: connect, accept, receive, write what waits, pull.
    fn step(&mut self, cx: &mut Context<'_>) -> TaskResult {
        let mut out = Batch::new();
        let mut worked = false;
        {
            let mut ep = lock(&self.endpoint);
            if !ep.opened {
                self.io.start(&mut ep, cx);
            }
            if ep.failed {
                return TaskResult::Done;
            }
            if ep.connecting.is_some() {
                match ep.finish_connect(&self.io.spec) {
                    Ok(true) => {
                        worked = true;
                        self.io.c.connections += 1;
                        let to = &self.io.spec.remote;
                        self.io.say(cx, format_args!("opened connection to {to}"));
                    }
                    Ok(false) => {}
                    Err(e) => {
                        self.io.fail(&mut ep, cx, e);
                        return TaskResult::Done;
                    }
                }
            }
            let me = cx.worker();
            if *ep.receiver.get_or_insert(me) == me {
                worked |= self.io.accept(&mut ep, cx);
                worked |= self.io.receive(&mut ep, cx, &mut out);
            }
            worked |= self.io.flush(&mut ep, cx);
            // Pulled only when there is somewhere to write: until then the
            // packets wait upstream, as in Click.
            if self.io.pull_input && ep.pending.is_empty() && ep.can_write(&self.io.spec) {
                let room = self.io.spec.burst.min(WRITE_QUEUE);
                let mut b = Batch::new();
                cx.pull(0, &mut b, room);
                if !b.is_empty() {
                    worked = true;
                    self.io.send(&mut ep, cx, &mut b, true);
                }
            }
        }
        if !out.is_empty() {
            cx.push(0, &mut out);
        }
        if worked {
            TaskResult::Worked
        } else {
            TaskResult::Idle
        }
    }
}

impl Element for Socket {
    fn configure_message(&self) -> Option<String> {
        self.deprecated
            .map(|class| format!("warning: {class} is deprecated, use Socket instead"))
    }

    fn start(&mut self, cx: &mut Context<'_>) {
        let mut ep = lock(&self.endpoint);
        self.io.start(&mut ep, cx);
    }

    fn task_kind(&self) -> TaskKind {
        // A receiver runs for as long as the router does; a sender only
        // moves what it is given (and connects, accepts, writes what
        // waits), so a finished run may end.
        if self.io.has_output {
            TaskKind::Source
        } else {
            TaskKind::Pump
        }
    }

    fn task_on_every_worker(&self) -> bool {
        // Each worker pulls its own copy of a pull input.
        self.io.pull_input
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut ep = lock(&self.endpoint);
        if !ep.opened {
            self.io.start(&mut ep, cx);
        }
        self.io.send(&mut ep, cx, batch, false);
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        self.step(cx)
    }

    fn stopping(&mut self, cx: &mut Context<'_>) {
        // One last try at what waits; what is left is counted at shutdown.
        let mut ep = lock(&self.endpoint);
        self.io.flush(&mut ep, cx);
    }

    fn shutdown(&mut self, _cx: &mut Context<'_>) {
        let mut ep = lock(&self.endpoint);
        let n = ep.pending.len() as u64;
        ep.pending.clear();
        ep.written = 0;
        self.io.drop_for(n, true);
        ep.close();
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.io.c;
        s.counter("count", c.count);
        s.counter("bytes", c.bytes);
        s.counter("sent", c.sent);
        s.counter("sent_bytes", c.sent_bytes);
        s.counter("drops", c.drops);
        s.counter("no_connection", c.no_connection);
        s.counter("queue_full", c.queue_full);
        s.counter("connections", c.connections);
        s.counter("closed", c.closed);
        s.counter("denied", c.denied);
        s.counter("ignored", c.ignored);
        s.counter("errors", c.errors);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};
    use std::io::{Read, Write};
    use std::time::Duration;

    fn ports(nin: usize, nout: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Push; nin],
            outputs: vec![Processing::Push; nout],
        }
    }

    /// A port nothing listens on now (bound and released).
    fn free_port() -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let u = UdpSocket::bind(("127.0.0.1", l.local_addr().unwrap().port()));
        let port = l.local_addr().unwrap().port();
        drop((l, u));
        port
    }

    /// Runs the harness's task until `done` holds: at most 2 s.
    fn run_until(h: &mut Harness, mut done: impl FnMut(&mut Harness) -> bool) -> bool {
        for _ in 0..400 {
            h.run_task();
            if done(h) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    fn counter(h: &Harness, name: &str) -> u64 {
        h.stats().get(name).unwrap_or(0)
    }

    fn packet(bytes: &[u8]) -> Packet {
        Packet::from_slice(bytes).unwrap()
    }

    /// Reads from a stream until `want` bytes came (2 s at most).
    fn read_exactly(s: &mut impl Read, want: usize) -> Vec<u8> {
        let mut got = vec![0; want];
        s.read_exact(&mut got).unwrap();
        got
    }

    #[test]
    fn arguments_are_clicks_and_bad_ones_are_refused() {
        let ok = |a: &str| make_element(&CLASS, a, &ports(1, 1)).map(|_| ());
        assert!(ok("TCP, 0.0.0.0, 80").is_ok());
        assert!(ok("tcp, 1.2.3.4, 80, CLIENT true, NODELAY false, VERBOSE true").is_ok());
        assert!(ok("TCP, 1.2.3.4, 80, 0.0.0.0, 54321").is_ok());
        assert!(ok("UDP, 127.0.0.1, domain, SNAPLEN 100, TIMESTAMP false, PROPER true").is_ok());
        assert!(ok("UDP, 0.0.0.0, 53, CLIENT true, SNDBUF 65536, RCVBUF 65536").is_ok());
        assert!(ok("UNIX, /tmp/bricks.sock, HEADROOM 28").is_ok());
        assert!(ok("UNIX_DGRAM, /tmp/a.sock, /tmp/b.sock").is_ok());
        let err = |a: &str| ok(a).unwrap_err();
        assert!(err("SCTP, 1.2.3.4, 80").contains("unknown socket type `SCTP`"));
        assert!(err("UDP, 127.0.0.1").contains("PORT"));
        assert!(err("UDP, 127.0.0.1, 70000").contains("out of range"));
        assert!(err("UDP, 127.0.0.1, nosuchport").contains("nosuchport"));
        assert!(err("TCP, nowhere, 80").contains("ADDR"));
        assert!(err("UDP, 127.0.0.1, 53, SNAPLEN 0").contains("SNAPLEN"));
        assert!(err("UDP, 127.0.0.1, 53, SNAPLEN 5000").contains("SNAPLEN"));
        assert!(err("UDP, 127.0.0.1, 53, HEADROOM 500").contains("HEADROOM"));
        assert!(err("UDP, 127.0.0.1, 53, BURST 0").contains("BURST"));
        assert!(err("UDP, 127.0.0.1, 53, BOGUS 1").contains("BOGUS"));
        assert!(err("UNIX, /tmp/x, LOCAL_PORT 5").contains("LOCAL_PORT"));
        let long = format!("UNIX, /tmp/{}", "x".repeat(120));
        assert!(err(&long).contains("too long"));
        // Alone, no other element can be named.
        assert!(err("TCP, 0.0.0.0, 80, ALLOW allow").contains("ALLOW"));
    }

    #[test]
    fn client_is_assumed_without_output_or_with_a_local_address() {
        let spec = |a: &str, nout: usize| {
            let e = make_element(&CLASS, a, &ports(1, nout)).unwrap();
            let mut e = e;
            let s = <dyn Element>::as_any_mut(&mut *e)
                .downcast_mut::<Socket>()
                .unwrap();
            s.io.spec.clone()
        };
        assert!(!spec("TCP, 0.0.0.0, 80", 1).client);
        assert!(spec("TCP, 1.2.3.4, 80", 0).client);
        assert!(spec("TCP, 1.2.3.4, 80, 0.0.0.0, 5000", 1).client);
        assert!(!spec("TCP, 1.2.3.4, 80, 0.0.0.0, 5000, CLIENT false", 1).client);
        assert_eq!(
            spec("TCP, 1.2.3.4, 80, 0.0.0.0, 5000, CLIENT false", 1).local,
            None
        );
        assert!(spec("UNIX_DGRAM, /tmp/a, /tmp/b", 1).client);
    }

    #[test]
    fn udp_server_answers_its_last_sender_and_udp_client_sends_both_ways() {
        let port = free_port();
        let mut h = Harness::push(&CLASS, &format!("UDP, 127.0.0.1, {port}"), 1, 1);
        // Nothing opened before the router starts.
        let probe = UdpSocket::bind(("127.0.0.1", port)).unwrap();
        drop(probe);
        h.start();
        // No sender yet: nowhere to answer.
        h.push_bytes(0, b"too early");
        assert_eq!(counter(&h, "no_connection"), 1);
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        peer.send_to(b"ping", ("127.0.0.1", port)).unwrap();
        let mut got = Vec::new();
        assert!(run_until(&mut h, |h| {
            got.extend(h.take_bytes(0));
            !got.is_empty()
        }));
        assert_eq!(got, [b"ping".to_vec()]);
        h.push_bytes(0, b"pong");
        let mut buf = [0; 64];
        let (n, from) = peer.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"pong");
        assert_eq!(from.port(), port);
        assert_eq!(counter(&h, "count"), 1);
        assert_eq!(counter(&h, "sent"), 1);
        assert_eq!(counter(&h, "sent_bytes"), 4);

        // A client: sends to ADDR:PORT, receives from anyone.
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let sport = server.local_addr().unwrap().port();
        let mut c = Harness::push(
            &CLASS,
            &format!("UDP, 127.0.0.1, {sport}, CLIENT true"),
            1,
            1,
        );
        c.start();
        c.push_bytes(0, b"hello");
        let (n, client) = server.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        server.send_to(&[7; 3000], client).unwrap();
        let mut got = Vec::new();
        assert!(run_until(&mut c, |c| {
            got.extend(c.take(0));
            !got.is_empty()
        }));
        // Cut to SNAPLEN, the rest in the extra-length annotation.
        assert_eq!(got[0].len(), 2048);
        assert_eq!(got[0].anno().extra_length, 3000 - 2048);
        assert_ne!(got[0].anno().timestamp.secs(), 0);
    }

    #[test]
    fn udp_client_with_zero_address_sends_to_the_destination_annotation() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        server
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let port = server.local_addr().unwrap().port();
        let mut c = Harness::push(&CLASS, &format!("UDP, 0.0.0.0, {port}"), 1, 0);
        c.start();
        let mut p = packet(b"by annotation");
        p.anno_mut().dst_ip = Ipv4Addr::LOCALHOST;
        c.push_packets(0, [p]);
        let mut buf = [0; 64];
        let (n, _) = server.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"by annotation");
    }

    #[test]
    fn tcp_server_accepts_one_client_at_a_time_and_the_next_when_it_goes() {
        let port = free_port();
        let mut h = Harness::push(&CLASS, &format!("TCP, 127.0.0.1, {port}"), 1, 1);
        h.start();
        let mut a = TcpStream::connect(("127.0.0.1", port)).unwrap();
        a.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert!(run_until(&mut h, |h| counter(h, "connections") == 1));
        a.write_all(b"hello").unwrap();
        let mut got = Vec::new();
        assert!(run_until(&mut h, |h| {
            got.extend(h.take_bytes(0).concat());
            got.len() >= 5
        }));
        assert_eq!(got, b"hello");
        // Packets are written as they are, one after the other.
        h.push_packets(0, [packet(b"wor"), packet(b"ld")]);
        assert_eq!(read_exactly(&mut a, 5), b"world");
        // A second client waits in the backlog while the first is served.
        let mut b = TcpStream::connect(("127.0.0.1", port)).unwrap();
        b.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        h.run_task();
        assert_eq!(counter(&h, "connections"), 1);
        // The first goes away: the server takes the second.
        drop(a);
        assert!(run_until(&mut h, |h| counter(h, "connections") == 2));
        assert_eq!(counter(&h, "closed"), 1);
        h.push_bytes(0, b"second");
        assert_eq!(read_exactly(&mut b, 6), b"second");
        drop(b);
        assert!(run_until(&mut h, |h| counter(h, "closed") == 2));
        // No client: dropped and counted.
        h.push_bytes(0, b"nobody");
        assert_eq!(counter(&h, "no_connection"), 1);
        assert_eq!(counter(&h, "drops"), 1);
        assert_eq!(counter(&h, "sent"), 3);
    }

    #[test]
    fn tcp_client_connects_sends_receives_and_stays_closed_when_the_peer_goes() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let mut h = Harness::push(
            &CLASS,
            &format!("TCP, 127.0.0.1, {port}, CLIENT true, SNAPLEN 4"),
            1,
            1,
        );
        h.start();
        // Given at once, while the connect may still be in progress: kept.
        h.push_packets(0, [packet(b"abc"), packet(b"def"), packet(b"ghi")]);
        let (mut conn, _) = server.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert!(run_until(&mut h, |h| counter(h, "sent") == 3));
        assert_eq!(read_exactly(&mut conn, 9), b"abcdefghi");
        assert_eq!(counter(&h, "connections"), 1);
        // Reads of at most SNAPLEN bytes, whatever the writes were.
        conn.write_all(b"0123456789").unwrap();
        let mut got = Vec::new();
        assert!(run_until(&mut h, |h| {
            got.extend(h.take_bytes(0));
            got.concat().len() >= 10
        }));
        assert_eq!(got.concat(), b"0123456789");
        assert!(got.iter().all(|p| p.len() <= 4), "{got:?}");
        // The server goes away: the client notices and does not reconnect.
        drop(conn);
        drop(server);
        assert!(run_until(&mut h, |h| counter(h, "closed") == 1));
        h.push_bytes(0, b"lost");
        assert_eq!(counter(&h, "no_connection"), 1);
        assert_eq!(counter(&h, "connections"), 1);
    }

    #[test]
    fn a_stream_that_cannot_write_keeps_a_bounded_queue() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        let mut h = Harness::push(
            &CLASS,
            &format!("TCP, 127.0.0.1, {port}, CLIENT true, SNDBUF 4096"),
            1,
            0,
        );
        h.start();
        let (mut conn, _) = server.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        // The peer reads nothing: the socket fills, then the queue, then
        // packets are dropped; the worker never waits.
        let frame = [0x55u8; 1400];
        let batches = 20;
        for _ in 0..batches {
            h.push_packets(0, (0..100).map(|_| packet(&frame)));
        }
        let given = batches * 100;
        let sent = counter(&h, "sent");
        let full = counter(&h, "queue_full");
        assert!(full > 0, "nothing dropped");
        assert!(given - sent - full <= WRITE_QUEUE as u64 + 1);
        // The peer reads: what was queued goes out, whole and in order.
        let mut total = 0usize;
        let mut buf = vec![0; 65536];
        for _ in 0..2000 {
            h.run_task();
            match conn.read(&mut buf) {
                Ok(n) => total += n,
                Err(e) => panic!("{e}"),
            }
            if counter(&h, "sent") + full == given {
                break;
            }
        }
        assert_eq!(counter(&h, "sent") + full, given);
        // Drain the rest the kernel holds.
        conn.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        while let Ok(n) = conn.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n;
        }
        assert_eq!(total as u64, counter(&h, "sent") * 1400);
    }

    #[test]
    fn unix_stream_server_and_client_exchange_and_the_file_goes_away() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let mut h = Harness::push(&CLASS, &format!("UNIX, {}", path.display()), 1, 1);
        h.start();
        assert!(path.exists());
        let mut a = UnixStream::connect(&path).unwrap();
        a.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        a.write_all(b"over unix").unwrap();
        let mut got = Vec::new();
        assert!(run_until(&mut h, |h| {
            got.extend(h.take_bytes(0).concat());
            got.len() >= 9
        }));
        assert_eq!(got, b"over unix");
        h.push_bytes(0, b"back");
        assert_eq!(read_exactly(&mut a, 4), b"back");

        // A client of that server.
        let path2 = dir.path().join("c.sock");
        let server = UnixListener::bind(&path2).unwrap();
        let mut c = Harness::push(
            &CLASS,
            &format!("UNIX, {}, CLIENT true", path2.display()),
            1,
            1,
        );
        c.start();
        c.push_bytes(0, b"client");
        let (mut conn, _) = server.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert!(run_until(&mut c, |c| counter(c, "sent") == 1));
        assert_eq!(read_exactly(&mut conn, 6), b"client");
        // The peer goes away; writing finds it gone (EPIPE, not a signal).
        drop(conn);
        assert!(run_until(&mut c, |c| {
            c.push_bytes(0, b"x");
            counter(c, "closed") == 1
        }));
        h.shutdown();
        assert!(!path.exists(), "the server's socket file is left");
    }

    #[test]
    fn unix_datagram_server_and_client_exchange() {
        let dir = tempfile::tempdir().unwrap();
        let spath = dir.path().join("d.sock");
        let mut h = Harness::push(&CLASS, &format!("UNIX_DGRAM, {}", spath.display()), 1, 1);
        h.start();
        let peer = UnixDatagram::bind(dir.path().join("peer.sock")).unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        peer.send_to(b"dgram", &spath).unwrap();
        let mut got = Vec::new();
        assert!(run_until(&mut h, |h| {
            got.extend(h.take_bytes(0));
            !got.is_empty()
        }));
        assert_eq!(got, [b"dgram".to_vec()]);
        h.push_bytes(0, b"answer");
        let mut buf = [0; 64];
        let n = peer.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"answer");

        // A client bound to LOCAL_FILENAME, so that it is answered.
        let srv_path = dir.path().join("srv.sock");
        let srv = UnixDatagram::bind(&srv_path).unwrap();
        srv.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let local = dir.path().join("local.sock");
        let mut c = Harness::push(
            &CLASS,
            &format!("UNIX_DGRAM, {}, {}", srv_path.display(), local.display()),
            1,
            1,
        );
        c.start();
        c.push_bytes(0, b"to server");
        let (n, from) = srv.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"to server");
        assert_eq!(from.as_pathname(), Some(local.as_path()));
        srv.send_to(b"to client", &local).unwrap();
        let mut got = Vec::new();
        assert!(run_until(&mut c, |c| {
            got.extend(c.take_bytes(0));
            !got.is_empty()
        }));
        assert_eq!(got, [b"to client".to_vec()]);
        // The server goes away: datagrams fail and are counted.
        drop(srv);
        std::fs::remove_file(&srv_path).unwrap();
        c.push_bytes(0, b"lost");
        assert_eq!(counter(&c, "drops"), 1);
        assert_eq!(counter(&c, "errors"), 1);
        c.shutdown();
        assert!(!local.exists());
    }

    /// Builds `config` into one engine, started, that never naps.
    fn engine(config: &str) -> Result<bricks_runtime::Engine, String> {
        let mut map = bricks_config::SourceMap::default();
        let render = |map: &bricks_config::SourceMap, d: Vec<bricks_config::Diagnostic>| {
            d.iter()
                .map(|d| map.render(d))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let router = bricks_config::parse(
            &mut map,
            bricks_config::Source {
                name: "<test>".into(),
                text: config.to_string(),
            },
        )
        .map_err(|d| render(&map, d))?;
        let plan =
            bricks_runtime::build(&router, &crate::registry()).map_err(|d| render(&map, d))?;
        let mut e = bricks_runtime::Engine::new(&plan).map_err(|d| d.message)?;
        e.idle_sleep = false;
        Ok(e)
    }

    fn read_count(e: &bricks_runtime::Engine, element: &str, handler: &str) -> u64 {
        e.read_handler(element, handler)
            .unwrap()
            .into_text()
            .parse()
            .unwrap()
    }

    fn step_until(
        e: &mut bricks_runtime::Engine,
        mut done: impl FnMut(&bricks_runtime::Engine) -> bool,
    ) -> bool {
        for _ in 0..400 {
            e.step();
            if done(e) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    const TABLES: &str = "allow :: RadixIPLookup(127.0.0.2/32 0);\n\
        deny :: RadixIPLookup(127.0.0.0/8 0);\n\
        Idle -> allow -> Discard; Idle -> deny -> Discard;\n";

    #[test]
    fn allow_and_deny_pick_udp_senders_and_tcp_clients() {
        let uport = free_port();
        let tport = free_port();
        let mut e = engine(&format!(
            "{TABLES}\
             u :: Socket(UDP, 0.0.0.0, {uport}, ALLOW allow, DENY deny) -> uc :: Counter -> Discard;\n\
             t :: Socket(TCP, 0.0.0.0, {tport}, ALLOW allow, DENY deny) -> tc :: Counter -> Discard;\n"
        ))
        .unwrap();
        e.start();
        let good = UdpSocket::bind("127.0.0.2:0").unwrap();
        let bad = UdpSocket::bind("127.0.0.3:0").unwrap();
        bad.send_to(b"no", ("127.0.0.1", uport)).unwrap();
        good.send_to(b"yes", ("127.0.0.1", uport)).unwrap();
        assert!(step_until(&mut e, |e| read_count(e, "u", "count") == 1
            && read_count(e, "u", "denied") == 1));
        assert_eq!(read_count(&e, "uc", "count"), 1);

        // A denied client is disconnected; an allowed one is served.
        let connect_from = |ip: Ipv4Addr| {
            let s = socket2::Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
            s.bind(&SockAddr::from(SocketAddrV4::new(ip, 0))).unwrap();
            s.connect(&SockAddr::from(SocketAddrV4::new(
                Ipv4Addr::LOCALHOST,
                tport,
            )))
            .unwrap();
            let s: TcpStream = s.into();
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            s
        };
        let mut denied = connect_from(Ipv4Addr::new(127, 0, 0, 3));
        assert!(step_until(&mut e, |e| read_count(e, "t", "denied") == 1));
        let mut buf = [0; 8];
        assert!(matches!(denied.read(&mut buf), Ok(0) | Err(_)));
        let mut allowed = connect_from(Ipv4Addr::new(127, 0, 0, 2));
        allowed.write_all(b"in").unwrap();
        assert!(step_until(&mut e, |e| read_count(e, "tc", "count") >= 1));
        assert_eq!(read_count(&e, "t", "connections"), 1);
    }

    #[test]
    fn allow_and_deny_must_name_route_tables() {
        let port = free_port();
        let err = engine(&format!(
            "Idle -> d :: Discard; Socket(UDP, 0.0.0.0, {port}, ALLOW d) -> Discard;"
        ))
        .err()
        .unwrap();
        assert!(err.contains("is a Discard, not one of"), "{err}");
        let err = engine(&format!(
            "Socket(UDP, 0.0.0.0, {port}, DENY nothing) -> Discard;"
        ))
        .err()
        .unwrap();
        assert!(err.contains("does not name an element"), "{err}");
        assert!(engine(&format!(
            "{TABLES} Socket(UDP, 0.0.0.0, {port}, ALLOW allow) -> Discard;"
        ))
        .is_ok());
    }

    #[test]
    fn failed_bind_and_connect_are_reported_with_the_address() {
        // Another socket holds the port.
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = taken.local_addr().unwrap().port();
        let mut e = engine(&format!("Socket(TCP, 127.0.0.1, {port}) -> Discard;")).unwrap();
        let s = e.run();
        assert!(
            s.errors
                .iter()
                .any(|m| m.contains(&format!("bind 127.0.0.1:{port}"))),
            "{:?}",
            s.errors
        );
        drop(taken);
        let closed = free_port();
        let mut e = engine(&format!(
            "Socket(TCP, 127.0.0.1, {closed}, CLIENT true) -> Discard;"
        ))
        .unwrap();
        let s = e.run();
        assert!(
            s.errors
                .iter()
                .any(|m| m.contains(&format!("connect to 127.0.0.1:{closed}"))
                    && m.contains("refused")),
            "{:?}",
            s.errors
        );
    }

    #[test]
    fn a_pull_input_is_pulled_only_when_there_is_a_connection() {
        let port = free_port();
        let mut h = Harness::new(
            &CLASS,
            &format!("TCP, 127.0.0.1, {port}, BURST 2"),
            PortInfo {
                inputs: vec![Processing::Pull],
                outputs: vec![Processing::Push],
            },
        );
        h.start();
        h.feed(0, [packet(b"a"), packet(b"b"), packet(b"c")]);
        h.run_task();
        assert_eq!(counter(&h, "drops"), 0);
        let mut a = TcpStream::connect(("127.0.0.1", port)).unwrap();
        a.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        assert!(run_until(&mut h, |h| counter(h, "sent") == 3));
        assert_eq!(read_exactly(&mut a, 3), b"abc");
    }
}
