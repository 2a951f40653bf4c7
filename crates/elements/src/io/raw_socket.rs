//! `RawSocket`: whole IPv4 packets through the host's raw sockets (Click's
//! user-level `elements/userlevel/rawsocket.cc`, raw(7)). Packets pulled
//! from the input are sent as they are, IP header included; every packet
//! of protocol TYPE the host receives is copied to the output, IP header
//! included.
//!
//! Click sends and receives on one socket of protocol TYPE with
//! `IP_HDRINCL`; here a socket of protocol IPPROTO_RAW, which Linux
//! always treats as `IP_HDRINCL`, sends, and one of protocol TYPE
//! receives: the same packets either way. The sockets are opened when the
//! router starts (never while a configuration is only checked) and need
//! CAP_NET_RAW then. Nothing blocks a worker: reads are bounded per task
//! run, and a packet the kernel refuses for lack of room is kept and sent
//! again on the next run before anything else is pulled (Click retries it
//! after a backoff).
//!
//! Click's older names for it, ToRawSocket and FromRawSocket, are built
//! here too (`make_compat`, called from `raw_socket_compat.rs`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo, Stats,
    TaskKind, TaskResult,
};
use bricks_packet::Packet;
use socket2::{Domain, Protocol, SockAddr, Type};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::{Arc, Mutex};

/// The `RawSocket` class.
pub static CLASS: ElementClass = ElementClass {
    name: "RawSocket",
    ports: "0-1/0-1",
    processing: "l/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sends and receives raw IPv4 packets through the host's raw sockets (user-level)",
    synopsis: "RawSocket(TYPE [, PORT] [, KEYWORDS])",
    description: "Sends and receives whole IPv4 packets, IP header included, through raw \
        sockets of the host (raw(7)). Packets do not flow through RawSocket: each packet \
        pulled from the input is sent to the destination address of its IP header, which \
        must start the packet (or sit at its network header annotation); the kernel fills \
        in the header checksum and total length, and the source address and identification \
        when they are zero. Broadcast destinations are allowed. Every packet of protocol \
        TYPE that the host receives, on any interface, is copied to the output, cut to \
        SNAPLEN, with the network header and destination address annotations set; the host \
        still handles it as usual (it answers a ping itself).\n\n\
        TYPE is TCP, UDP, GRE or ICMP, or any IP protocol by name or number. PORT is, as in \
        Click, a TCP or UDP port, a GRE key or an ICMP identifier; it does not select what is \
        received. For TCP and UDP a PORT other than 0 is bound on a TCP or UDP socket of the \
        host's for as long as the router runs, so that no other program takes it (and, for \
        UDP, the host sends no port unreachable errors for it): Click does so for PlanetLab's \
        port registration.\n\n\
        Where bricks differs from Click, on purpose: a socket of protocol IPPROTO_RAW sends \
        and one of protocol TYPE receives (Click sets IP_HDRINCL on one socket); the sockets \
        are opened when the router starts, so `bricks check` needs no privileges; a packet \
        the kernel refuses for lack of room is kept and sent first on the next task run, no \
        more being pulled meanwhile (Click retries after a backoff timer); reads are bounded \
        by BURST per task run; received packets are stamped with the time they were read, \
        not the kernel's receive time; a packet that is not IPv4 is dropped and counted, \
        either way. Needs CAP_NET_RAW (root) when the router runs. With several workers, \
        the first worker to run the element's task receives and each worker sends what it \
        pulls.",
    ports: "at most one pull input: IPv4 packets to send; at most one push output: IPv4 \
        packets received",
    keywords: KEYWORDS,
    counters: COUNTERS,
    example: "InfiniteSource(LIMIT 1) -> Queue -> RawSocket(ICMP) -> IPPrint(reply) -> Discard;",
    see_also: &["Socket", "KernelTun", "FromHost"],
};

/// RawSocket's arguments, which ToRawSocket and FromRawSocket share.
pub(super) const KEYWORDS: &[Keyword] = &[
    Keyword {
        name: "TYPE",
        ty: "IP protocol: TCP, UDP, GRE, ICMP, another name, or 0 to 255",
        default: None,
        doc: "the protocol of the packets received; positional, any case",
    },
    Keyword {
        name: "PORT",
        ty: "port (TCP, UDP) or unsigned 16-bit (GRE key, ICMP identifier)",
        default: Some("0: none"),
        doc: "TCP, UDP: a port held for the router's packets; positional; selects \
              nothing received",
    },
    Keyword {
        name: "SNAPLEN",
        ty: "unsigned",
        default: Some("2048"),
        doc: "the most bytes kept of a received packet, the rest counted in the \
              extra-length annotation; 20 to 2048, the largest packet bricks holds",
    },
    Keyword {
        name: "HEADROOM",
        ty: "unsigned",
        default: Some("128"),
        doc: "room before received packets; bricks packets always have 128 bytes, so \
              larger values are refused",
    },
    Keyword {
        name: "PROPER",
        ty: "boolean",
        default: Some("false"),
        doc: "PlanetLab's Proper binding; accepted and ignored",
    },
    Keyword {
        name: "BURST",
        ty: "unsigned",
        default: Some("32"),
        doc: "packets received, and pulled from the input, per task run; 1 to 256 (not \
              in Click)",
    },
];

/// RawSocket's counters, which ToRawSocket and FromRawSocket share.
pub(super) const COUNTERS: &[(&str, &str)] = &[
    ("count", "packets received and emitted"),
    ("bytes", "their bytes"),
    ("sent", "packets sent"),
    ("sent_bytes", "their bytes"),
    (
        "drops",
        "input packets not sent: not IPv4, refused by the kernel, or no socket",
    ),
    (
        "bad",
        "packets that were not IPv4 (shorter than a header, another version), either way",
    ),
    (
        "held",
        "packets refused for lack of room and kept (with those pulled after them) to \
         send again",
    ),
    ("errors", "failed reads and sends of any other kind"),
];

/// Click's `T_IP_PROTO` names.
const PROTOCOLS: &[(&str, u8)] = &[
    ("icmp", 1),
    ("igmp", 2),
    ("ipip", 4),
    ("tcp", 6),
    ("udp", 17),
    ("dccp", 33),
    ("gre", 47),
    ("esp", 50),
    ("ah", 51),
    ("ospf", 89),
    ("sctp", 132),
];

/// `SOCK_RAW` (Linux): socket2 names it only with its `all` feature.
const SOCK_RAW: i32 = 3;

/// IPPROTO_RAW: a raw socket of this protocol sends with the IP header
/// included and receives nothing.
const IPPROTO_RAW: u8 = 255;

/// The shortest IPv4 header.
const IPV4_HEADER: usize = 20;

/// The longest IPv4 packet: a read buffer this long knows every
/// packet's whole length.
const MAX_PACKET: usize = 65_535;

fn protocol(text: &str) -> Option<u8> {
    if let Ok(n) = text.parse::<u8>() {
        return Some(n);
    }
    let lower = text.to_ascii_lowercase();
    PROTOCOLS.iter().find(|(n, _)| *n == lower).map(|&(_, p)| p)
}

/// What the configuration says.
#[derive(Debug, Clone)]
struct Spec {
    protocol: u8,
    port: u16,
    snaplen: usize,
    burst: usize,
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_raw_socket(args, ports, None)
}

/// Builds a RawSocket configured as `class`, one of Click's older names
/// for it (ToRawSocket, FromRawSocket): the same arguments and behaviour,
/// and Click's warning that `class` is deprecated.
pub(super) fn make_compat(
    args: &mut Args<'_>,
    ports: &PortInfo,
    class: &'static str,
) -> Result<Box<dyn Element>, ArgError> {
    make_raw_socket(args, ports, Some(class))
}

fn make_raw_socket(
    args: &mut Args<'_>,
    ports: &PortInfo,
    deprecated: Option<&'static str>,
) -> Result<Box<dyn Element>, ArgError> {
    let ty: String = args.read_mp("TYPE")?;
    let proto = protocol(ty.trim()).ok_or_else(|| {
        ArgError::new(format!(
            "bad argument TYPE: `{ty}` is not an IP protocol (TCP, UDP, GRE, ICMP, another \
             name, or 0 to 255)"
        ))
    })?;
    let port = match args.read_p::<String>("PORT")? {
        None => 0,
        Some(text) if proto == 6 || proto == 17 => {
            crate::standard::port_info::lookup(args, &text, proto)
                .map_err(|why| ArgError::new(format!("bad argument PORT: {why}")))?
        }
        Some(text) => text.trim().parse::<u16>().map_err(|_| {
            ArgError::new(format!(
                "bad argument PORT: expected 0 to 65535 (a GRE key or ICMP identifier), found \
                 `{text}`"
            ))
        })?,
    };
    let (snaplen, burst) = super::read_socket_sizes(args, IPV4_HEADER)?;
    let _proper: Option<bool> = args.read("PROPER")?;
    let endpoint = args.shared(|_| Ok(Mutex::new(RawEndpoint::default())))?;
    Ok(Box::new(RawSocket {
        spec: Spec {
            protocol: proto,
            port,
            snaplen,
            burst,
        },
        has_input: ports.ninputs() > 0,
        has_output: ports.noutputs() > 0,
        deprecated,
        endpoint,
        recv: None,
        send: None,
        started: false,
        held: VecDeque::new(),
        buf: Vec::new(),
        count: 0,
        bytes: 0,
        sent: 0,
        sent_bytes: 0,
        drops: 0,
        bad: 0,
        held_times: 0,
        errors: 0,
    }))
}

/// Why the sockets could not be opened.
#[derive(Debug)]
enum OpenError {
    /// A raw socket could not be made (no CAP_NET_RAW, usually).
    Raw(u8, std::io::Error),
    /// An option could not be set.
    Option(&'static str, std::io::Error),
    /// PORT could not be held.
    Port(&'static str, u16, std::io::Error),
}

impl core::fmt::Display for OpenError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            OpenError::Raw(p, e) if e.kind() == ErrorKind::PermissionDenied => write!(
                f,
                "raw socket of protocol {p}: {e} (needs CAP_NET_RAW: run as root)"
            ),
            OpenError::Raw(p, e) => write!(f, "raw socket of protocol {p}: {e}"),
            OpenError::Option(what, e) => write!(f, "{what}: {e}"),
            OpenError::Port(proto, port, e) => write!(f, "bind {proto} 0.0.0.0:{port}: {e}"),
        }
    }
}

/// The sockets every worker's instance shares.
#[derive(Default)]
struct RawEndpoint {
    opened: bool,
    failed: bool,
    recv: Option<Arc<socket2::Socket>>,
    send: Option<Arc<socket2::Socket>>,
    /// The socket holding PORT (TCP, UDP).
    _port: Option<socket2::Socket>,
    /// The worker that receives: the first to run the task.
    receiver: Option<usize>,
}

impl RawEndpoint {
    fn open(&mut self, s: &Spec, recv: bool, send: bool) -> Result<(), OpenError> {
        self.opened = true;
        let raw = |proto: u8| {
            socket2::Socket::new(
                Domain::IPV4,
                Type::from(SOCK_RAW),
                Some(Protocol::from(i32::from(proto))),
            )
            .map_err(|e| OpenError::Raw(proto, e))
        };
        if recv {
            let sock = raw(s.protocol)?;
            sock.set_nonblocking(true)
                .map_err(|e| OpenError::Option("O_NONBLOCK", e))?;
            self.recv = Some(Arc::new(sock));
        }
        if send {
            let sock = raw(IPPROTO_RAW)?;
            sock.set_broadcast(true)
                .map_err(|e| OpenError::Option("SO_BROADCAST", e))?;
            sock.set_nonblocking(true)
                .map_err(|e| OpenError::Option("O_NONBLOCK", e))?;
            self.send = Some(Arc::new(sock));
        }
        if s.port != 0 && (s.protocol == 6 || s.protocol == 17) {
            let (ty, name) = if s.protocol == 6 {
                (Type::STREAM, "TCP")
            } else {
                (Type::DGRAM, "UDP")
            };
            let at = SockAddr::from(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, s.port));
            let sock = socket2::Socket::new(Domain::IPV4, ty, None)
                .and_then(|sock| sock.bind(&at).map(|()| sock))
                .map_err(|e| OpenError::Port(name, s.port, e))?;
            self._port = Some(sock);
        }
        Ok(())
    }
}

/// Sends and receives raw IPv4 packets.
pub struct RawSocket {
    spec: Spec,
    has_input: bool,
    has_output: bool,
    /// The deprecated class this RawSocket was configured as
    /// (ToRawSocket, FromRawSocket), if any.
    deprecated: Option<&'static str>,
    endpoint: Arc<Mutex<RawEndpoint>>,
    /// This worker's view of the shared sockets: the receive socket only
    /// on the worker that receives.
    recv: Option<Arc<socket2::Socket>>,
    send: Option<Arc<socket2::Socket>>,
    started: bool,
    /// Packets pulled that the kernel had no room for, sent first on the
    /// next run; at most BURST.
    held: VecDeque<Packet>,
    buf: Vec<u8>,
    count: u64,
    bytes: u64,
    sent: u64,
    sent_bytes: u64,
    drops: u64,
    bad: u64,
    held_times: u64,
    errors: u64,
}

/// What became of one send.
enum Sent {
    Yes,
    /// Refused for lack of room (EAGAIN, ENOBUFS): try again later.
    NoRoom,
    /// Not IPv4, or failed for good: dropped.
    Dropped,
}

/// `ENOBUFS`: the interface queue is full; like a full socket buffer.
const NO_BUFS: i32 = rustix::io::Errno::NOBUFS.raw_os_error();

impl RawSocket {
    fn start_here(&mut self, cx: &mut Context<'_>) {
        self.started = true;
        let mut ep = self.endpoint.lock().unwrap_or_else(|e| e.into_inner());
        if !ep.opened {
            if let Err(e) = ep.open(&self.spec, self.has_output, self.has_input) {
                ep.failed = true;
                ep.recv = None;
                ep.send = None;
                eprintln!("bricks: {}: {e}", cx.name());
                cx.report_error(e.to_string());
            }
        }
        self.send = ep.send.clone();
    }

    /// Reads up to BURST packets into `out`. Returns whether any came.
    fn receive(&mut self, sock: &socket2::Socket, cx: &Context<'_>, out: &mut Batch) -> bool {
        let now = cx.now();
        if self.buf.is_empty() {
            self.buf = vec![0; MAX_PACKET];
        }
        let mut any = false;
        for _ in 0..self.spec.burst {
            let mut r: &socket2::Socket = sock;
            let len = match r.read(&mut self.buf) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    if self.errors == 0 {
                        eprintln!("bricks: {}: recv: {e}", cx.name());
                    }
                    self.errors += 1;
                    break;
                }
            };
            any = true;
            let n = len.min(self.spec.snaplen);
            let Some(dst) = ipv4_destination(&self.buf[..n]) else {
                self.bad += 1;
                continue;
            };
            let Ok(mut p) = Packet::from_slice(&self.buf[..n]) else {
                self.errors += 1;
                continue;
            };
            p.set_network_header(0);
            let a = p.anno_mut();
            a.dst_ip = dst;
            a.timestamp = now;
            if len > n {
                a.extra_length = (len - n).try_into().unwrap_or(u32::MAX);
            }
            self.count += 1;
            self.bytes += n as u64;
            let _ = out.push(p);
        }
        any
    }

    fn send_one(&mut self, p: &Packet) -> Sent {
        let ip = if p.network_header_offset().is_some() {
            p.l3_bytes()
        } else {
            p.data()
        };
        let Some(dst) = ipv4_destination(ip) else {
            self.bad += 1;
            self.drops += 1;
            return Sent::Dropped;
        };
        let Some(sock) = &self.send else {
            self.drops += 1;
            return Sent::Dropped;
        };
        let to = SockAddr::from(SocketAddrV4::new(dst, 0));
        loop {
            return match sock.send_to(ip, &to) {
                Ok(_) => {
                    self.sent += 1;
                    self.sent_bytes += ip.len() as u64;
                    Sent::Yes
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => Sent::NoRoom,
                Err(e) if e.raw_os_error() == Some(NO_BUFS) => Sent::NoRoom,
                Err(e) => {
                    if self.errors == 0 {
                        eprintln!("bricks: RawSocket: sendto {dst}: {e}");
                    }
                    self.errors += 1;
                    self.drops += 1;
                    Sent::Dropped
                }
            };
        }
    }

    /// Sends what is held, then, when nothing is, pulls and sends up to
    /// BURST packets; those the kernel has no room for are held, in
    /// order (at most BURST). Returns whether any was sent or dropped.
    fn send_pulled(&mut self, cx: &mut Context<'_>) -> bool {
        let mut worked = false;
        while let Some(p) = self.held.pop_front() {
            if let Sent::NoRoom = self.send_one(&p) {
                self.held.push_front(p);
                return worked;
            }
            worked = true;
        }
        let mut b = Batch::new();
        cx.pull(0, &mut b, self.spec.burst);
        for p in b.drain() {
            worked = true;
            if !self.held.is_empty() {
                self.held.push_back(p);
            } else if let Sent::NoRoom = self.send_one(&p) {
                self.held_times += 1;
                self.held.push_back(p);
            }
        }
        worked
    }
}

/// The destination of the IPv4 packet `ip` starts with, if it is one
/// (version 4, a whole header).
fn ipv4_destination(ip: &[u8]) -> Option<Ipv4Addr> {
    let first = *ip.first()?;
    let hlen = usize::from(first & 0x0f) * 4;
    if first >> 4 != 4 || hlen < IPV4_HEADER || ip.len() < hlen {
        return None;
    }
    Some(Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]))
}

impl Element for RawSocket {
    fn configure_message(&self) -> Option<String> {
        self.deprecated
            .map(|class| format!("warning: {class} is deprecated, use RawSocket instead"))
    }

    fn start(&mut self, cx: &mut Context<'_>) {
        self.start_here(cx);
    }

    fn task_kind(&self) -> TaskKind {
        if self.has_output {
            TaskKind::Source
        } else if self.has_input {
            TaskKind::Pump
        } else {
            TaskKind::None
        }
    }

    fn task_on_every_worker(&self) -> bool {
        // Each worker pulls its own copy of the input.
        self.has_input
    }

    fn run_task(&mut self, cx: &mut Context<'_>) -> TaskResult {
        if !self.started {
            self.start_here(cx);
        }
        let mut worked = false;
        if self.has_output && self.recv.is_none() {
            let mut ep = self.endpoint.lock().unwrap_or_else(|e| e.into_inner());
            if ep.failed {
                return TaskResult::Done;
            }
            let me = cx.worker();
            if *ep.receiver.get_or_insert(me) == me {
                self.recv = ep.recv.clone();
            }
        }
        if let Some(sock) = self.recv.clone() {
            let mut out = Batch::new();
            worked |= self.receive(&sock, cx, &mut out);
            if !out.is_empty() {
                cx.push(0, &mut out);
            }
        }
        if self.has_input {
            worked |= self.send_pulled(cx);
        }
        if worked {
            TaskResult::Worked
        } else {
            TaskResult::Idle
        }
    }

    fn shutdown(&mut self, _cx: &mut Context<'_>) {
        self.drops += self.held.len() as u64;
        self.held.clear();
        self.recv = None;
        self.send = None;
        let mut ep = self.endpoint.lock().unwrap_or_else(|e| e.into_inner());
        ep.recv = None;
        ep.send = None;
        ep._port = None;
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("count", self.count);
        s.counter("bytes", self.bytes);
        s.counter("sent", self.sent);
        s.counter("sent_bytes", self.sent_bytes);
        s.counter("drops", self.drops);
        s.counter("bad", self.bad);
        s.counter("held", self.held_times);
        s.counter("errors", self.errors);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::Processing;
    use bricks_runtime::testing::{make_element, Harness};
    use std::time::Duration;

    fn ports(nin: usize, nout: usize) -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull; nin],
            outputs: vec![Processing::Push; nout],
        }
    }

    #[test]
    fn arguments_are_clicks_and_bad_ones_are_refused() {
        let ok = |a: &str| make_element(&CLASS, a, &ports(1, 1)).map(|_| ());
        for a in [
            "ICMP",
            "icmp, 77",
            "TCP, 80",
            "UDP, domain",
            "GRE, 1234",
            "47",
            "UDP, 53, SNAPLEN 100, HEADROOM 28, PROPER false, BURST 4",
        ] {
            assert!(ok(a).is_ok(), "{a}: {:?}", ok(a));
        }
        let err = |a: &str| ok(a).unwrap_err();
        assert!(err("IPX").contains("not an IP protocol"));
        assert!(err("300").contains("not an IP protocol"));
        assert!(err("ICMP, 70000").contains("PORT"));
        assert!(err("UDP, nosuchport").contains("nosuchport"));
        assert!(err("ICMP, SNAPLEN 10").contains("SNAPLEN"));
        assert!(err("ICMP, SNAPLEN 4000").contains("SNAPLEN"));
        assert!(err("ICMP, HEADROOM 500").contains("HEADROOM"));
        assert!(err("ICMP, BOGUS 1").contains("BOGUS"));
    }

    #[test]
    fn ipv4_destination_needs_a_whole_ipv4_header() {
        let mut h = [0u8; 20];
        h[0] = 0x45;
        h[16..20].copy_from_slice(&[10, 0, 0, 1]);
        assert_eq!(ipv4_destination(&h), Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(ipv4_destination(&h[..19]), None);
        h[0] = 0x46;
        assert_eq!(ipv4_destination(&h), None);
        h[0] = 0x65;
        assert_eq!(ipv4_destination(&h), None);
        assert_eq!(ipv4_destination(&[]), None);
    }

    /// An ICMP echo request from 127.0.0.1 to itself.
    fn echo_request(id: u16, seq: u16) -> Packet {
        let mut icmp = vec![8, 0, 0, 0];
        icmp.extend_from_slice(&id.to_be_bytes());
        icmp.extend_from_slice(&seq.to_be_bytes());
        icmp.extend_from_slice(b"bricks raw socket");
        let sum = !bricks_wire::checksum::data(&icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        let total = (20 + icmp.len()) as u16;
        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&total.to_be_bytes());
        // Identification and checksum 0: the kernel fills them in.
        ip.extend_from_slice(&[0, 0, 0, 0, 64, 1, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1]);
        ip.extend_from_slice(&icmp);
        Packet::from_slice(&ip).unwrap()
    }

    /// An echo request sent through RawSocket(ICMP) is answered by the
    /// host, and the answer comes out of the same element. Root only.
    #[test]
    fn icmp_echo_request_through_raw_socket_is_answered() {
        if bricks_netns::skip_unless_root("icmp_echo_request_through_raw_socket_is_answered")
            .is_some()
        {
            return;
        }
        let id = (std::process::id() as u16) ^ 0x5a5a;
        let mut h = Harness::new(&CLASS, "ICMP", ports(1, 1));
        h.start();
        h.feed(
            0,
            [
                echo_request(id, 1),
                Packet::from_slice(&[0x45; 10]).unwrap(),
            ],
        );
        let mut reply = None;
        for _ in 0..400 {
            h.run_task();
            reply = h.take(0).into_iter().find(|p| {
                let d = p.data();
                d.len() >= 28 && d[9] == 1 && d[20] == 0 && d[24..26] == id.to_be_bytes()
            });
            if reply.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let reply = reply.expect("no echo reply within 2 s");
        assert_eq!(reply.network_header_offset(), Some(0));
        assert_eq!(reply.anno().dst_ip, Ipv4Addr::LOCALHOST);
        assert!(reply.data().ends_with(b"bricks raw socket"));
        let stats = h.stats();
        assert_eq!(stats.get("sent"), Some(1));
        assert_eq!(stats.get("sent_bytes"), Some(45));
        // The 10-byte packet is no IPv4 packet.
        assert_eq!(stats.get("bad"), Some(1));
        assert_eq!(stats.get("drops"), Some(1));
        assert!(stats.get("count").unwrap() >= 1);
        h.shutdown();
    }

    /// PORT holds a UDP port for the router while it runs. Root only.
    #[test]
    fn udp_port_is_held_while_the_router_runs() {
        if bricks_netns::skip_unless_root("udp_port_is_held_while_the_router_runs").is_some() {
            return;
        }
        let port = {
            let s = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
            s.local_addr().unwrap().port()
        };
        let mut h = Harness::new(&CLASS, &format!("UDP, {port}"), ports(0, 1));
        // Nothing held before the router starts.
        drop(std::net::UdpSocket::bind(("0.0.0.0", port)).unwrap());
        h.start();
        assert!(std::net::UdpSocket::bind(("0.0.0.0", port)).is_err());
        h.shutdown();
        assert!(std::net::UdpSocket::bind(("0.0.0.0", port)).is_ok());
    }
}
