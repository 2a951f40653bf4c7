//! `McastSocket`: a UDP multicast transport (Click's user-level
//! `elements/userlevel/mcastsocket.cc`). Packets that come in are sent as
//! datagrams to a multicast group; datagrams received from the group are
//! emitted, so any number of routers and processes (QEMU's `-net
//! socket,mcast=`) on a LAN share one virtual segment.
//!
//! As in Click there are two sockets: one bound to the group's address
//! and port, a member of the group, that receives (with `SO_REUSEADDR`, so
//! several listeners on one host share the group), and one that sends,
//! bound to SOURCEIP (and SOURCEPORT) when they are given. The sockets are
//! opened when the router starts, never while a configuration is only
//! checked. Receiving is a source task on worker 0: up to BURST datagrams
//! per task run without blocking, so the worker naps as with any idle
//! source. Sending never blocks (Click's push blocks until the socket may
//! send): what the kernel refuses is dropped and counted.

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Handler, Keyword, Manual, PortInfo,
    Stats, TaskKind, TaskResult,
};
use bricks_packet::Packet;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};

/// The `McastSocket` class.
pub static CLASS: ElementClass = ElementClass {
    name: "McastSocket",
    ports: "0-1/0-1",
    processing: "a/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "a UDP multicast socket transport (user-level)",
    synopsis: "McastSocket(MCASTIP, MCASTPORT [, SOURCEIP] [, SOURCEPORT] [, KEYWORDS])",
    description: "Transports packets over multicast UDP. Packets do not flow through \
        McastSocket: each packet on its input is sent as one UDP datagram to the multicast \
        group MCASTIP, port MCASTPORT, and each datagram received from the group is emitted \
        on its output, so any number of routers and other processes (QEMU's `-net \
        socket,mcast=`) on a LAN share one virtual link.\n\n\
        With SOURCEIP (and optionally SOURCEPORT) the datagrams leave from that address, on \
        its interface, the group is joined there, and datagrams from that address and port \
        (the element's own, looped back) are not emitted. Without SOURCEIP the routing table \
        chooses the interface, and the element receives its own datagrams while LOOP is true; \
        set LOOP false when no other listener runs on this host.\n\n\
        The input is agnostic: pushed packets are sent at once, a pull input is pulled up to \
        BURST packets per task run. Sending never blocks (Click's push waits for the socket): \
        a datagram the kernel refuses is dropped and counted in `drops`. Received datagrams \
        longer than SNAPLEN are cut to SNAPLEN, the missing length kept in the extra-length \
        annotation. Receiving reads at most BURST datagrams per task run. The sockets are \
        opened when the router starts, so `bricks check` needs no network. With several \
        workers, worker 0 receives and each worker sends what reaches its own copy.",
    ports: "at most one input, agnostic; at most one push output",
    keywords: &[
        Keyword {
            name: "MCASTIP",
            ty: "IPv4 address",
            default: None,
            doc: "the multicast group; positional",
        },
        Keyword {
            name: "MCASTPORT",
            ty: "UDP port: number or name (PortInfo, well-known)",
            default: None,
            doc: "the group's port; positional",
        },
        Keyword {
            name: "SOURCEIP",
            ty: "IPv4 address",
            default: Some("none: the routing table chooses"),
            doc: "send from this address, on its interface, join the group there, and drop \
                  datagrams from this address and port; positional",
        },
        Keyword {
            name: "SOURCEPORT",
            ty: "UDP port",
            default: Some("0: the kernel's choice"),
            doc: "send from this port (with SOURCEIP); positional",
        },
        Keyword {
            name: "LOOP",
            ty: "boolean",
            default: Some("true"),
            doc: "whether this host's listeners, this element included, receive copies of \
                  what is sent (IP_MULTICAST_LOOP)",
        },
        Keyword {
            name: "SNAPLEN",
            ty: "unsigned",
            default: Some("2048"),
            doc: "the longest datagram received whole; 1 to 2048, the largest packet bricks \
                  holds",
        },
        Keyword {
            name: "SNDBUF",
            ty: "unsigned",
            default: Some("the kernel's (wmem_default)"),
            doc: "the send socket's buffer size in bytes",
        },
        Keyword {
            name: "RCVBUF",
            ty: "unsigned",
            default: Some("the kernel's (rmem_default)"),
            doc: "the receive socket's buffer size in bytes",
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
            name: "BURST",
            ty: "unsigned",
            default: Some("32"),
            doc: "datagrams received, and packets pulled from a pull input, per task run; \
                  1 to 256 (not in Click)",
        },
    ],
    counters: &[
        ("count", "datagrams received and emitted"),
        (
            "own",
            "datagrams received from SOURCEIP:SOURCEPORT, not emitted",
        ),
        ("sent", "datagrams sent"),
        (
            "drops",
            "packets not sent: refused by the kernel, or no socket",
        ),
        ("errors", "receive or send errors other than a full socket"),
    ],
    example: "RatedSource(\"hi\", LIMIT 5, STOP true) -> McastSocket(233.252.0.0, 1234, \
        127.0.0.1) -> Print(got, CONTENTS ASCII) -> Discard;",
    see_also: &["FromHost", "KernelTun"],
};

/// What the configuration says.
#[derive(Debug, Clone)]
struct Spec {
    group: SocketAddrV4,
    source: Option<SocketAddrV4>,
    looped: bool,
    snaplen: usize,
    sndbuf: Option<usize>,
    rcvbuf: Option<usize>,
    timestamp: bool,
    burst: usize,
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let group: Ipv4Addr = args.read_mp("MCASTIP")?;
    let gport: String = args.read_mp("MCASTPORT")?;
    let source: Option<Ipv4Addr> = args.read_p("SOURCEIP")?;
    let sport: Option<String> = args.read_p("SOURCEPORT")?;
    let port = |key: &str, text: &str| {
        crate::standard::port_info::lookup(args, text, 17)
            .map_err(|why| ArgError::new(format!("bad argument {key}: {why}")))
    };
    let gport = port("MCASTPORT", &gport)?;
    let sport = match sport {
        Some(s) => port("SOURCEPORT", &s)?,
        None => 0,
    };
    if !group.is_multicast() {
        return Err(ArgError::new(format!(
            "bad argument MCASTIP: {group} is not a multicast address (224.0.0.0/4)"
        )));
    }
    let (snaplen, burst) = super::read_socket_sizes(args, 1)?;
    let spec = Spec {
        group: SocketAddrV4::new(group, gport),
        // Click: a source port alone (SOURCEIP 0.0.0.0) binds nothing.
        source: source
            .filter(|a| !a.is_unspecified())
            .map(|a| SocketAddrV4::new(a, sport)),
        looped: args.read("LOOP")?.unwrap_or(true),
        snaplen,
        sndbuf: args.read("SNDBUF")?,
        rcvbuf: args.read("RCVBUF")?,
        timestamp: args.read("TIMESTAMP")?.unwrap_or(true),
        burst,
    };
    Ok(Box::new(McastSocket {
        spec,
        pull_input: ports
            .inputs
            .first()
            .map(|p| *p == bricks_element::Processing::Pull),
        has_output: ports.noutputs() > 0,
        recv: None,
        send: None,
        started: false,
        failed: false,
        buf: Vec::new(),
        count: 0,
        own: 0,
        sent: 0,
        drops: 0,
        errors: 0,
    }))
}

/// The receive socket: bound to the group's address and port, a member
/// of the group (on SOURCEIP's interface, if given).
fn receive_socket(s: &Spec) -> std::io::Result<UdpSocket> {
    let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    if let Some(n) = s.rcvbuf {
        sock.set_recv_buffer_size(n)?;
    }
    sock.set_reuse_address(true)?;
    sock.bind(&SockAddr::from(s.group))?;
    let iface = s.source.map_or(Ipv4Addr::UNSPECIFIED, |a| *a.ip());
    sock.join_multicast_v4(s.group.ip(), &iface)?;
    sock.set_nonblocking(true)?;
    Ok(sock.into())
}

/// The send socket, bound to SOURCEIP:SOURCEPORT if given (the source
/// port as bound, when the kernel chose it).
fn send_socket(s: &mut Spec) -> std::io::Result<UdpSocket> {
    let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    if let Some(n) = s.sndbuf {
        sock.set_send_buffer_size(n)?;
    }
    if let Some(src) = s.source {
        sock.bind(&SockAddr::from(src))?;
        if let Some(bound) = sock.local_addr()?.as_socket_ipv4() {
            s.source = Some(bound);
        }
        sock.set_multicast_if_v4(src.ip())?;
    }
    sock.set_multicast_loop_v4(s.looped)?;
    sock.set_nonblocking(true)?;
    Ok(sock.into())
}

/// Sends and receives multicast datagrams.
pub struct McastSocket {
    spec: Spec,
    /// `Some(true)` for a pull input, `Some(false)` push, `None` none.
    pull_input: Option<bool>,
    has_output: bool,
    recv: Option<UdpSocket>,
    send: Option<UdpSocket>,
    started: bool,
    /// The sockets could not be opened (said once).
    failed: bool,
    /// One datagram of any length (SNAPLEN of it is kept).
    buf: Vec<u8>,
    count: u64,
    own: u64,
    sent: u64,
    drops: u64,
    errors: u64,
}

impl McastSocket {
    fn open(&mut self, cx: &mut Context<'_>) {
        self.started = true;
        let result = (|| {
            let send = send_socket(&mut self.spec)?;
            // One worker receives: every socket of the group gets every
            // datagram.
            let recv = if self.has_output && cx.worker() == 0 {
                Some(receive_socket(&self.spec)?)
            } else {
                None
            };
            Ok::<_, std::io::Error>((send, recv))
        })();
        match result {
            Ok((send, recv)) => {
                self.send = Some(send);
                if recv.is_some() {
                    self.buf = vec![0; MAX_DATAGRAM];
                }
                self.recv = recv;
            }
            Err(e) => {
                self.failed = true;
                let msg = format!("{}: {e}", self.spec.group);
                eprintln!("bricks: {}: {msg}", cx.name());
                cx.report_error(msg);
            }
        }
    }

    /// Reads up to BURST datagrams and pushes them. Returns whether any
    /// came.
    fn receive(&mut self, cx: &mut Context<'_>) -> bool {
        let Some(sock) = &self.recv else {
            return false;
        };
        let mut out = Batch::new();
        let mut any = false;
        let now = cx.now();
        for _ in 0..self.spec.burst {
            // The buffer holds any datagram: its whole length is known.
            let (len, from) = match sock.recv_from(&mut self.buf) {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    if self.errors == 0 {
                        eprintln!("bricks: {}: {e}", cx.name());
                    }
                    self.errors += 1;
                    break;
                }
            };
            any = true;
            let from = match from {
                SocketAddr::V4(a) => Some(a),
                SocketAddr::V6(_) => None,
            };
            if self.spec.source.is_some() && from == self.spec.source {
                // Our own datagram, looped back.
                self.own += 1;
                continue;
            }
            let n = len.min(self.spec.snaplen);
            let Ok(mut p) = Packet::from_slice(&self.buf[..n]) else {
                self.errors += 1;
                continue;
            };
            if len > n {
                p.anno_mut().extra_length = (len - n).try_into().unwrap_or(u32::MAX);
            }
            if self.spec.timestamp {
                p.anno_mut().timestamp = now;
            }
            self.count += 1;
            let _ = out.push(p);
        }
        if !out.is_empty() {
            cx.push(0, &mut out);
        }
        any
    }

    fn send(&mut self, b: &mut Batch) {
        let Some(sock) = &self.send else {
            self.drops += b.len() as u64;
            b.clear();
            return;
        };
        let to = self.spec.group;
        for p in b.drain() {
            loop {
                match sock.send_to(p.data(), to) {
                    Ok(_) => self.sent += 1,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => self.drops += 1,
                    Err(e) if e.raw_os_error() == Some(NO_BUFS) => self.drops += 1,
                    Err(_) => {
                        self.errors += 1;
                        self.drops += 1;
                    }
                }
                break;
            }
        }
    }
}

/// `ENOBUFS`: the interface queue is full; like a full socket buffer.
const NO_BUFS: i32 = rustix::io::Errno::NOBUFS.raw_os_error();

/// The longest UDP datagram over IPv4.
const MAX_DATAGRAM: usize = 65_507;

impl Element for McastSocket {
    fn start(&mut self, cx: &mut Context<'_>) {
        self.open(cx);
    }

    fn task_kind(&self) -> TaskKind {
        if self.has_output || self.pull_input == Some(true) {
            TaskKind::Source
        } else {
            TaskKind::None
        }
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        if !self.started {
            self.open(cx);
        }
        self.send(batch);
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if !self.started {
            self.open(cx);
        }
        if self.failed {
            return TaskResult::Done;
        }
        let mut worked = self.receive(cx);
        if self.pull_input == Some(true) {
            let before = self.sent + self.drops;
            let burst = self.spec.burst;
            cx.pull_task(burst, |b, _| self.send(b));
            worked |= self.sent + self.drops > before;
        }
        if worked {
            TaskResult::Worked
        } else {
            TaskResult::Idle
        }
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("own", self.own);
        s.counter("sent", self.sent);
        s.counter("drops", self.drops);
        s.counter("errors", self.errors);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        match handler {
            "count" => Some(self.count.to_string()),
            _ => None,
        }
    }

    fn handlers(&self) -> &'static [Handler] {
        const H: &[Handler] = &[Handler::r("count")];
        H
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::make_element;

    fn ports(nin: usize, nout: usize) -> PortInfo {
        PortInfo {
            inputs: vec![bricks_element::Processing::Push; nin],
            outputs: vec![bricks_element::Processing::Push; nout],
        }
    }

    #[test]
    fn arguments_are_clicks() {
        let ok = |a: &str| make_element(&CLASS, a, &ports(1, 1)).map(|_| ());
        assert!(ok("233.252.0.0, 1234").is_ok());
        assert!(ok("233.252.0.0, 1234, 127.0.0.1").is_ok());
        assert!(ok("233.252.0.0, 1234, 127.0.0.1, 5000, LOOP false, SNAPLEN 100").is_ok());
        assert!(ok("239.0.0.1, 1234, SNDBUF 65536, RCVBUF 65536, TIMESTAMP false").is_ok());
        assert!(ok("10.0.0.1, 1234").unwrap_err().contains("multicast"));
        assert!(ok("233.252.0.0").is_err());
        assert!(ok("233.252.0.0, 1234, SNAPLEN 0").is_err());
        assert!(ok("233.252.0.0, 1234, SNAPLEN 70000").is_err());
        assert!(ok("233.252.0.0, 1234, HEADROOM 500").is_err());
        assert!(ok("233.252.0.0, 1234, BOGUS 1").is_err());
    }
}
