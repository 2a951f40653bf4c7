//! `ToRawSocket` and `FromRawSocket`: Click's backward-compatible front
//! ends of [`RawSocket`](super::raw_socket)
//! (`elements/userlevel/torawsocket.cc`, `fromrawsocket.cc`). Each is a
//! RawSocket under another name and with fewer ports: the same arguments,
//! keywords, counters and behaviour, built by `raw_socket.rs`'s own
//! constructor. ToRawSocket is a RawSocket with no output (it only sends
//! what it pulls), FromRawSocket one with no input (it only emits what it
//! receives). Click warns that both are deprecated when they are
//! configured, and so does bricks.

use super::raw_socket;
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};

/// The `ToRawSocket` class.
pub static TO_RAW_SOCKET: ElementClass = ElementClass {
    name: "ToRawSocket",
    ports: "0-1/0",
    processing: "l/",
    manual: &TO_MANUAL,
    make: make_to,
};

/// The `FromRawSocket` class.
pub static FROM_RAW_SOCKET: ElementClass = ElementClass {
    name: "FromRawSocket",
    ports: "0/0-1",
    processing: "/h",
    manual: &FROM_MANUAL,
    make: make_from,
};

/// An ICMP echo request from 127.0.0.1 to itself, identifier 0x6272, with
/// its checksums: the examples' ping.
macro_rules! loopback_echo_request {
    () => {
        "\\<45000022 00000000 40017cd9 7f000001 7f000001 08005e43 62720001 627269636b73>"
    };
}

static TO_MANUAL: Manual = Manual {
    summary: "sends the IPv4 packets it pulls through a raw socket (user-level; deprecated: \
        use RawSocket)",
    synopsis: "ToRawSocket(TYPE [, PORT] [, KEYWORDS])",
    description: "Sends each packet pulled from its input, a whole IPv4 packet with its IP \
        header, through a raw socket to the destination address of that header. TYPE is \
        TCP, UDP, GRE or ICMP, or any IP protocol by name or number; PORT is, as in Click, a \
        TCP or UDP source port (held for the router while it runs), a GRE key or an ICMP \
        identifier. ToRawSocket exists, as in Click, only for backward compatibility: it is \
        a RawSocket with no outputs. It takes every argument and keyword of RawSocket, with \
        the same defaults, reports the same counters, and behaves as RawSocket does, \
        bricks' differences from Click's RawSocket included (see RawSocket: nothing blocks a \
        worker, the sockets open when the router starts and need CAP_NET_RAW then, a packet \
        the kernel has no room for is kept and sent first on the next task run). When \
        configured it prints the warning `ToRawSocket is deprecated, use RawSocket \
        instead` (Click's names FromRawSocket there, a slip).\n\n\
        Click declares ToRawSocket's ports as RawSocket's, at most one input and at most \
        one output, but makes them all pull, so an output could never work there (RawSocket \
        pushes what it receives); bricks declares no output.",
    ports: "at most one pull input: IPv4 packets to send; no outputs",
    keywords: raw_socket::KEYWORDS,
    counters: raw_socket::COUNTERS,
    example: concat!(
        "// Pings this host over loopback (needs root).\n\
        InfiniteSource(DATA ",
        loopback_echo_request!(),
        ", LIMIT 1) -> Queue -> ToRawSocket(ICMP);"
    ),
    see_also: &["RawSocket", "FromRawSocket", "Socket"],
};

static FROM_MANUAL: Manual = Manual {
    summary: "emits the IPv4 packets it receives on a raw socket (user-level; deprecated: use \
        RawSocket)",
    synopsis: "FromRawSocket(TYPE [, PORT] [, KEYWORDS])",
    description: "Copies every packet of protocol TYPE that the host receives, a whole IPv4 \
        packet with its IP header, to its output, as RawSocket does. TYPE is TCP, UDP, GRE \
        or ICMP, or any IP protocol by name or number; PORT is, as in Click, a TCP or UDP \
        port (held for the router while it runs), a GRE key or an ICMP identifier; it \
        selects nothing received. FromRawSocket exists, as in Click, only for backward \
        compatibility: it is a RawSocket with no inputs. It takes every argument and \
        keyword of RawSocket, with the same defaults, reports the same counters, and \
        behaves as RawSocket does, bricks' differences from Click's RawSocket included (see \
        RawSocket: reads are bounded by BURST per task run, the sockets open when the \
        router starts and need CAP_NET_RAW then). When configured it prints Click's warning \
        `FromRawSocket is deprecated, use RawSocket instead`.\n\n\
        Click declares FromRawSocket's ports as RawSocket's, at most one input and at most \
        one output, but makes them all push, so an input could never work there (RawSocket \
        pulls what it sends); bricks declares no input.",
    ports: "no inputs; at most one push output: IPv4 packets received",
    keywords: raw_socket::KEYWORDS,
    counters: raw_socket::COUNTERS,
    example: concat!(
        "// Pings this host over loopback and prints the echo reply (needs root).\n\
        FromRawSocket(ICMP) -> Classifier(20/00 24/6272) -> c :: Counter(COUNT_CALL 1 stop)\n    \
        -> IPPrint(reply) -> Discard;\n\
        InfiniteSource(DATA ",
        loopback_echo_request!(),
        ", LIMIT 1) -> Queue -> RawSocket(ICMP);"
    ),
    see_also: &["RawSocket", "ToRawSocket", "Socket"],
};

fn make_to(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    raw_socket::make_compat(args, ports, "ToRawSocket")
}

fn make_from(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    raw_socket::make_compat(args, ports, "FromRawSocket")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};
    use std::net::Ipv4Addr;
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

    #[test]
    fn classes_declare_their_ports_and_share_raw_sockets_manual_parts() {
        assert!(TO_RAW_SOCKET.port_count().inputs.contains(1));
        assert!(TO_RAW_SOCKET.port_count().inputs.contains(0));
        assert!(!TO_RAW_SOCKET.port_count().outputs.contains(1));
        assert_eq!(TO_RAW_SOCKET.processing_spec().input(0), Processing::Pull);
        assert!(!FROM_RAW_SOCKET.port_count().inputs.contains(1));
        assert!(FROM_RAW_SOCKET.port_count().outputs.contains(1));
        assert!(FROM_RAW_SOCKET.port_count().outputs.contains(0));
        assert_eq!(
            FROM_RAW_SOCKET.processing_spec().output(0),
            Processing::Push
        );
        for m in [&TO_MANUAL, &FROM_MANUAL] {
            let names =
                |k: &[bricks_element::Keyword]| k.iter().map(|k| k.name).collect::<Vec<_>>();
            assert_eq!(names(m.keywords), names(raw_socket::KEYWORDS));
            assert_eq!(m.counters, raw_socket::COUNTERS);
        }
    }

    #[test]
    fn arguments_are_raw_sockets_and_bad_ones_are_refused() {
        for (class, ports) in [
            (&TO_RAW_SOCKET, to_ports()),
            (&FROM_RAW_SOCKET, from_ports()),
        ] {
            let ok = |a: &str| make_element(class, a, &ports).map(|_| ());
            for a in [
                "ICMP",
                "UDP, 47",
                "tcp, 80, SNAPLEN 100",
                "GRE, 1234, PROPER true",
                "ICMP, 7, HEADROOM 28, BURST 8",
                "89",
            ] {
                assert!(ok(a).is_ok(), "{}({a}): {:?}", class.name, ok(a));
            }
            let err = |a: &str| ok(a).unwrap_err();
            assert!(err("IPX").contains("not an IP protocol"));
            assert!(err("ICMP, 70000").contains("PORT"));
            assert!(err("UDP, nosuchport").contains("nosuchport"));
            assert!(err("ICMP, SNAPLEN 4000").contains("SNAPLEN"));
            assert!(err("ICMP, BURST 0").contains("BURST"));
            assert!(err("ICMP, NOSUCH 1").contains("NOSUCH"));
            assert!(err("").contains("TYPE"));
        }
    }

    #[test]
    fn both_warn_that_they_are_deprecated() {
        let to = make_element(&TO_RAW_SOCKET, "ICMP", &to_ports()).unwrap();
        assert_eq!(
            to.configure_message().as_deref(),
            Some("warning: ToRawSocket is deprecated, use RawSocket instead")
        );
        let from = make_element(&FROM_RAW_SOCKET, "UDP, 53", &from_ports()).unwrap();
        assert_eq!(
            from.configure_message().as_deref(),
            Some("warning: FromRawSocket is deprecated, use RawSocket instead")
        );
        let plain = make_element(&raw_socket::CLASS, "ICMP", &from_ports()).unwrap();
        assert_eq!(plain.configure_message(), None);
    }

    /// The examples' packet is the IPv4 ICMP echo request it claims to be:
    /// both checksums verify.
    #[test]
    fn the_examples_echo_request_is_well_formed() {
        let hex: String = loopback_echo_request!()
            .trim_start_matches("\\<")
            .trim_end_matches('>')
            .split_whitespace()
            .collect();
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        assert_eq!(bytes.len(), 34);
        assert_eq!(usize::from(u16::from_be_bytes([bytes[2], bytes[3]])), 34);
        assert_eq!(bricks_wire::checksum::data(&bytes[..20]), 0xffff);
        assert_eq!(bricks_wire::checksum::data(&bytes[20..]), 0xffff);
        assert_eq!(&bytes[12..16], &Ipv4Addr::LOCALHOST.octets());
        assert_eq!(&bytes[16..20], &Ipv4Addr::LOCALHOST.octets());
        assert_eq!(bytes[20], 8, "an echo request");
    }

    /// ToRawSocket sends what it pulls; FromRawSocket, on its own, emits
    /// the host's echo reply. Root only.
    #[test]
    fn to_raw_socket_pings_and_from_raw_socket_sees_the_reply() {
        if bricks_netns::skip_unless_root("to_raw_socket_pings_and_from_raw_socket_sees_the_reply")
            .is_some()
        {
            return;
        }
        let id = (std::process::id() as u16) ^ 0xa5a5;
        let mut from = Harness::new(&FROM_RAW_SOCKET, "ICMP", from_ports());
        from.start();
        let mut to = Harness::new(&TO_RAW_SOCKET, "ICMP", to_ports());
        to.start();
        to.feed(0, [echo_request(id)]);
        let mut reply = None;
        for _ in 0..400 {
            to.run_task();
            from.run_task();
            reply = from.take(0).into_iter().find(|p| {
                let d = p.data();
                d.len() >= 28 && d[9] == 1 && d[20] == 0 && d[24..26] == id.to_be_bytes()
            });
            if reply.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(reply.is_some(), "no echo reply within 2 s");
        assert_eq!(to.stats().get("sent"), Some(1));
        assert_eq!(
            to.stats().get("count"),
            Some(0),
            "ToRawSocket receives nothing"
        );
        assert_eq!(from.stats().get("sent"), Some(0));
        to.shutdown();
        from.shutdown();
    }

    /// An ICMP echo request from 127.0.0.1 to itself with identifier `id`.
    fn echo_request(id: u16) -> Packet {
        let mut icmp = vec![8, 0, 0, 0];
        icmp.extend_from_slice(&id.to_be_bytes());
        icmp.extend_from_slice(&[0, 1]);
        icmp.extend_from_slice(b"bricks raw compat");
        let sum = !bricks_wire::checksum::data(&icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        let total = (20 + icmp.len()) as u16;
        let mut ip = vec![0x45, 0];
        ip.extend_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&[0, 0, 0, 0, 64, 1, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1]);
        ip.extend_from_slice(&icmp);
        Packet::from_slice(&ip).unwrap()
    }
}
