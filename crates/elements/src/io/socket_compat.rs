//! `ToSocket` and `FromSocket`: Click's backward-compatible front ends of
//! [`Socket`](super::socket) (`elements/userlevel/tosocket.cc`,
//! `fromsocket.cc`). Each is a Socket under another name and other ports:
//! the same arguments, keywords, counters and behaviour, built by
//! `socket.rs`'s own constructor. ToSocket pulls and has no output, so it
//! is a client unless CLIENT says otherwise; FromSocket pushes what it
//! receives, a server unless told otherwise. Click warns that both are
//! deprecated when they are configured, and so does bricks.

use super::socket;
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};

/// The `ToSocket` class.
pub static TO_SOCKET: ElementClass = ElementClass {
    name: "ToSocket",
    ports: "0-1/0",
    processing: "l/",
    manual: &TO_MANUAL,
    make: make_to,
};

/// The `FromSocket` class.
pub static FROM_SOCKET: ElementClass = ElementClass {
    name: "FromSocket",
    ports: "0-1/0-1",
    processing: "h/h",
    manual: &FROM_MANUAL,
    make: make_from,
};

static TO_MANUAL: Manual = Manual {
    summary: "sends the packets it pulls to a socket (user-level; deprecated: use Socket)",
    synopsis: "ToSocket(TYPE, ADDR, PORT [, LOCAL_ADDR, LOCAL_PORT] [, KEYWORDS]) or \
        ToSocket(TYPE, FILENAME [, LOCAL_FILENAME] [, KEYWORDS])",
    description: "Pulls packets from its input and sends them over a socket to a remote host \
        or process: TYPE is TCP or UDP (with ADDR and PORT) or UNIX or UNIX_DGRAM (with \
        FILENAME). ToSocket exists, as in Click, only for backward compatibility: it is a \
        Socket with a pull input and no output, so a client (it connects, or sends \
        datagrams, to ADDR:PORT or FILENAME) unless CLIENT false makes it a server. It \
        takes every argument and keyword of Socket, with the same defaults, reports the \
        same counters, and behaves as Socket does, bricks' differences from Click's Socket \
        included (see Socket: nothing blocks a worker, a failed connect ends the run with an \
        error, the socket opens when the router starts). A packet is pulled only when there \
        is somewhere to write it. When configured it prints Click's warning `ToSocket is \
        deprecated, use Socket instead`.\n\n\
        Click declares ToSocket's ports as Socket's, at most one input and at most one \
        output, but makes them all pull, so an output could never work there (Socket pushes \
        what it receives); bricks declares no output.",
    ports: "at most one pull input; no outputs",
    keywords: socket::KEYWORDS,
    counters: socket::COUNTERS,
    example: "Socket(UDP, 127.0.0.1, 5557) -> Print(got, CONTENTS ASCII) -> Discard;\n\
        RatedSource(\"hello\", LIMIT 5, STOP true) -> Queue -> ToSocket(UDP, 127.0.0.1, 5557);",
    see_also: &["Socket", "FromSocket"],
};

static FROM_MANUAL: Manual = Manual {
    summary: "emits the packets it receives on a socket (user-level; deprecated: use Socket)",
    synopsis: "FromSocket(TYPE, ADDR, PORT [, LOCAL_ADDR, LOCAL_PORT] [, KEYWORDS]) or \
        FromSocket(TYPE, FILENAME [, LOCAL_FILENAME] [, KEYWORDS])",
    description: "Receives packets on a socket and pushes them on its output: TYPE is TCP or \
        UDP (with ADDR and PORT, which a server binds) or UNIX or UNIX_DGRAM (with FILENAME). \
        FromSocket exists, as in Click, only for backward compatibility: it is a Socket whose \
        ports push, usually with no input and one output, so a server (a TCP or UNIX server \
        accepts one connection at a time; a datagram server receives from anyone) unless \
        CLIENT true, or a local address, makes it a client. As in Click an optional input \
        sends what is pushed into it to the peer, and a FromSocket with no output is a \
        client. It takes every argument and keyword of Socket, with the same defaults, \
        reports the same counters, and behaves as Socket does, bricks' differences from \
        Click's Socket included (see Socket: nothing blocks a worker, pushes into a stream \
        that cannot take them are queued, then dropped and counted, the socket opens when \
        the router starts). When configured it prints Click's warning `FromSocket is \
        deprecated, use Socket instead`.",
    ports: "at most one push input; at most one push output",
    keywords: socket::KEYWORDS,
    counters: socket::COUNTERS,
    example: "FromSocket(UDP, 127.0.0.1, 5558) -> Print(got, CONTENTS ASCII) -> Discard;\n\
        RatedSource(\"hello\", LIMIT 5, STOP true) -> Socket(UDP, 127.0.0.1, 5558, \
        CLIENT true);",
    see_also: &["Socket", "ToSocket"],
};

fn make_to(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    socket::make_compat(args, ports, "ToSocket")
}

fn make_from(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    socket::make_compat(args, ports, "FromSocket")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};
    use std::net::UdpSocket;
    use std::os::unix::net::UnixListener;
    use std::time::Duration;

    fn to_ports() -> PortInfo {
        PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![],
        }
    }

    fn from_ports() -> PortInfo {
        PortInfo {
            inputs: vec![],
            outputs: vec![Processing::Push],
        }
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

    #[test]
    fn classes_declare_clicks_processing_and_socket_manual_parts() {
        assert!(TO_SOCKET.port_count().inputs.contains(1));
        assert!(!TO_SOCKET.port_count().outputs.contains(1));
        assert_eq!(TO_SOCKET.processing_spec().input(0), Processing::Pull);
        assert!(FROM_SOCKET.port_count().inputs.contains(0));
        assert!(FROM_SOCKET.port_count().outputs.contains(1));
        assert_eq!(FROM_SOCKET.processing_spec().output(0), Processing::Push);
        assert_eq!(FROM_SOCKET.processing_spec().input(0), Processing::Push);
        for m in [&TO_MANUAL, &FROM_MANUAL] {
            assert!(m.keywords.iter().any(|k| k.name == "CLIENT"));
            assert!(m.counters.iter().any(|c| c.0 == "sent"));
        }
    }

    #[test]
    fn arguments_are_sockets_and_bad_ones_are_refused() {
        for (class, ports) in [(&TO_SOCKET, to_ports()), (&FROM_SOCKET, from_ports())] {
            let ok = |a: &str| make_element(class, a, &ports).map(|_| ());
            assert!(ok("UDP, 127.0.0.1, 5000").is_ok());
            assert!(ok("tcp, 1.2.3.4, 80, CLIENT true, NODELAY false").is_ok());
            assert!(ok("UNIX, /tmp/x.sock, SNAPLEN 100, VERBOSE true").is_ok());
            assert!(ok("UNIX_DGRAM, /tmp/a.sock, /tmp/b.sock").is_ok());
            let err = |a: &str| ok(a).unwrap_err();
            assert!(err("SCTP, 1.2.3.4, 80").contains("unknown socket type `SCTP`"));
            assert!(err("UDP, 127.0.0.1").contains("PORT"));
            assert!(err("UDP, 127.0.0.1, 53, SNAPLEN 0").contains("SNAPLEN"));
            assert!(err("UDP, 127.0.0.1, 53, NOSUCH 1").contains("NOSUCH"));
            assert!(err("").contains("TYPE"));
        }
    }

    #[test]
    fn both_warn_that_they_are_deprecated() {
        let to = make_element(&TO_SOCKET, "UDP, 127.0.0.1, 9", &to_ports()).unwrap();
        assert_eq!(
            to.configure_message().as_deref(),
            Some("warning: ToSocket is deprecated, use Socket instead")
        );
        let from = make_element(&FROM_SOCKET, "UDP, 127.0.0.1, 9", &from_ports()).unwrap();
        assert_eq!(
            from.configure_message().as_deref(),
            Some("warning: FromSocket is deprecated, use Socket instead")
        );
        let plain = make_element(&socket::CLASS, "UDP, 127.0.0.1, 9", &from_ports()).unwrap();
        assert_eq!(plain.configure_message(), None);
    }

    #[test]
    fn to_socket_is_a_udp_client_that_pulls() {
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        peer.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let port = peer.local_addr().unwrap().port();
        let mut h = Harness::new(&TO_SOCKET, &format!("UDP, 127.0.0.1, {port}"), to_ports());
        h.start();
        h.feed(
            0,
            [b"one".as_slice(), b"two"].map(|d| Packet::from_slice(d).unwrap()),
        );
        assert!(run_until(&mut h, |h| counter(h, "sent") == 2));
        let mut buf = [0; 16];
        let mut got = Vec::new();
        for _ in 0..2 {
            let n = peer.recv(&mut buf).unwrap();
            got.push(buf[..n].to_vec());
        }
        assert_eq!(got, [b"one".to_vec(), b"two".to_vec()]);
    }

    #[test]
    fn to_socket_connects_to_a_unix_stream_server() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let server = UnixListener::bind(&path).unwrap();
        let mut h = Harness::new(&TO_SOCKET, &format!("UNIX, {}", path.display()), to_ports());
        h.start();
        let (mut conn, _) = server.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        h.feed(0, [Packet::from_slice(b"over unix").unwrap()]);
        assert!(run_until(&mut h, |h| counter(h, "sent") == 1));
        let mut got = [0; 9];
        std::io::Read::read_exact(&mut conn, &mut got).unwrap();
        assert_eq!(&got, b"over unix");
        assert_eq!(counter(&h, "connections"), 1);
    }

    #[test]
    fn from_socket_is_a_udp_server_that_pushes() {
        let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        let mut h = Harness::new(
            &FROM_SOCKET,
            &format!("UDP, 127.0.0.1, {port}"),
            from_ports(),
        );
        h.start();
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        peer.send_to(b"datagram", ("127.0.0.1", port)).unwrap();
        let mut got = Vec::new();
        assert!(run_until(&mut h, |h| {
            got.extend(h.take_bytes(0));
            !got.is_empty()
        }));
        assert_eq!(got, [b"datagram".to_vec()]);
        assert_eq!(counter(&h, "count"), 1);
    }
}
