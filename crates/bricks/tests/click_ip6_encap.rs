//! Click's IPv6 encapsulation and marking elements (`IP6Encap`,
//! `UDPIP6Encap`, `MarkIP6Header`, `SetIP6Address`, `SetIP6DSCP`) in whole
//! configurations run by the `bricks` binary: the bytes they write to a
//! capture, checked against frames the Linux kernel sent, and round trips
//! through the elements that read what they wrote (CheckIP6Header,
//! CheckIPHeader, LookupIP6Route).

#[allow(dead_code)] // the helpers this test does not use
mod common;

use bricks_wire::udp::UdpPacket;
use common::read_pcap;
use std::net::Ipv6Addr;
use std::path::Path;

mod bounded;
use bounded::{output as bricks, run_reading as run};

/// `bytes` as a Click DATA argument.
fn data(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "\"\"".into();
    }
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("\\<{}>", hex.join(" "))
}

/// The one frame of capture `path`.
fn only_frame(path: &Path) -> Vec<u8> {
    let mut frames = read_pcap(path);
    assert_eq!(frames.len(), 1, "{}", path.display());
    frames.remove(0)
}

/// Whether the UDP datagram behind the IPv6 header at `ip` has the right
/// checksum for that header's addresses.
fn udp6_ok(ip: &[u8]) -> bool {
    let addr = |at: usize| Ipv6Addr::from(<[u8; 16]>::try_from(&ip[at..at + 16]).unwrap());
    UdpPacket::new_checked(&ip[40..]).is_ok_and(|u| u.verify_checksum_v6(addr(8), addr(24)))
}

/// The IPv6 header and UDP header Linux 6.x sent for `sendto` from
/// [2001:db8::1]:1234 to [2001:db8:1::2]:53 with IPV6_UNICAST_HOPS 255
/// and auto flow labels off (captured with tcpdump on a veth between two
/// network namespaces, transmit checksum offload off; the receiving
/// kernel counted no checksum error), for each payload; Click's
/// UDPIP6Encap makes the same headers.
const LINUX: [(&[u8], [u8; 48]); 3] = [
    (b"hello", linux_headers(13, 0x5b85)),
    (b"", linux_headers(8, 0x9f61)),
    // The checksum of this one computes to zero: sent as 0xffff.
    (&[0x9f, 0x5d], linux_headers(10, 0xffff)),
];

const fn linux_headers(len: u16, sum: u16) -> [u8; 48] {
    let l = len.to_be_bytes();
    let s = sum.to_be_bytes();
    [
        0x60, 0x00, 0x00, 0x00, l[0], l[1], 0x11, 0xff, // payload length, UDP, hlim 255
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, // 2001:db8::1
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, //
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01, 0x00, 0x00, // 2001:db8:1::2
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, //
        0x04, 0xd2, 0x00, 0x35, l[0], l[1], s[0], s[1], // 1234 -> 53, length, checksum
    ]
}

#[test]
fn udpip6encap_writes_what_linux_sends_and_check_ip6_header_takes_it() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, (payload, headers)) in LINUX.iter().enumerate() {
        let dump = tmp.path().join(format!("udp{i}.pcap"));
        let (out, err) = run(
            &format!(
                "InfiniteSource(DATA {}, LIMIT 1) \
                 -> UDPIP6Encap(2001:db8::1, 1234, 2001:db8:1::2, domain) \
                 -> c :: CheckIP6Header -> IP6Print(u) -> ToDump({}, ENCAP IP);",
                data(payload),
                dump.display()
            ),
            &["c.drops"],
        );
        assert_eq!(out, "0\n", "CheckIP6Header refused it");
        let plen = 8 + payload.len();
        assert_eq!(
            err.lines().collect::<Vec<_>>(),
            [format!(
                "u: 2001:db8::1 -> 2001:db8:1::2 plen {plen}, next 17, hlim 255"
            )]
        );
        let f = only_frame(&dump);
        assert_eq!(&f[..48], headers, "payload {payload:02x?}");
        assert_eq!(&f[48..], *payload);
        assert!(udp6_ok(&f));
    }
}

#[test]
fn udpip6encap_dst_anno_and_a_long_odd_payload() {
    // The destination from SetIP6Address's annotation; 1,001 bytes of
    // payload, an odd count, summed with the padding byte.
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("anno.pcap");
    let payload: Vec<u8> = (0..1001u32).map(|i| (i * 31 + 7) as u8).collect();
    let (out, _) = run(
        &format!(
            "InfiniteSource(DATA {}, LIMIT 2) -> SetIP6Address(2001:db8:77::7) \
             -> UDPIP6Encap(2001:db8::1, 40000, DST_ANNO, 4789) -> c :: CheckIP6Header \
             -> ToDump({}, ENCAP IP);",
            data(&payload),
            dump.display()
        ),
        &["c.drops"],
    );
    assert_eq!(out, "0\n");
    let frames = read_pcap(&dump);
    assert_eq!(frames.len(), 2);
    for f in frames {
        assert_eq!(f.len(), 48 + 1001);
        assert_eq!(&f[4..8], &[0x03, 0xf1, 17, 255]);
        assert_eq!(
            &f[24..40],
            &"2001:db8:77::7".parse::<Ipv6Addr>().unwrap().octets()
        );
        assert_eq!(&f[40..46], &[0x9c, 0x40, 0x12, 0xb5, 0x03, 0xf1]);
        assert_eq!(&f[48..], &payload[..]);
        assert!(udp6_ok(&f));
    }
}

#[test]
fn ip6encap_tunnel_round_trip() {
    // IPv4 in IPv6 (RFC 2473): the outer header, byte for byte, then the
    // inner packet back out through Strip(40) and CheckIPHeader unchanged.
    let inner: [u8; 28] = [
        0x45, 0x00, 0x00, 0x1c, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x66, 0xce, 10, 0, 0, 1, 10, 0,
        0, 2, 0x30, 0x39, 0x00, 0x09, 0x00, 0x08, 0x00, 0x00,
    ];
    let tmp = tempfile::tempdir().unwrap();
    let (outer, back) = (tmp.path().join("outer.pcap"), tmp.path().join("inner.pcap"));
    let (out, err) = run(
        &format!(
            "InfiniteSource(DATA {}, LIMIT 1) \
             -> e :: IP6Encap(ipip, 2001:db8:ff::1, 2001:db8:ff::2, HLIM 64, CLASS 0xb8) \
             -> c6 :: CheckIP6Header -> IP6Print(t) -> tee :: Tee; \
             tee[0] -> ToDump({}, ENCAP IP); \
             tee[1] -> Strip(40) -> c4 :: CheckIPHeader -> ToDump({}, ENCAP IP);",
            data(&inner),
            outer.display(),
            back.display()
        ),
        &["c6.drops", "c4.drops", "e.dst"],
    );
    assert_eq!(
        out,
        "c6.drops:\n0\n\nc4.drops:\n0\n\ne.dst:\n2001:db8:ff::2\n\n"
    );
    assert_eq!(
        err.trim_end(),
        "t: 2001:db8:ff::1 -> 2001:db8:ff::2 plen 28, next 4, hlim 64"
    );
    let f = only_frame(&outer);
    let want: [u8; 40] = [
        0x6b, 0x80, 0x00, 0x00, 0x00, 0x1c, 0x04,
        0x40, // class 0xb8, plen 28, next 4, hlim 64
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0xff, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, //
        0x20, 0x01, 0x0d, 0xb8, 0x00, 0xff, 0x00, 0x00, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02,
    ];
    assert_eq!(&f[..40], &want);
    assert_eq!(&f[40..], &inner);
    assert_eq!(only_frame(&back), inner);
}

#[test]
fn ip6encap_defaults_and_dst_anno() {
    // HLIM 250 and class 0 by default; DST_ANNO takes the annotation, and
    // an unset annotation leaves `::` (as Click).
    let tmp = tempfile::tempdir().unwrap();
    let (set, unset) = (tmp.path().join("set.pcap"), tmp.path().join("unset.pcap"));
    run(
        &format!(
            "InfiniteSource(DATA \\<aa bb>, LIMIT 1) -> SetIP6Address(2001:db8:5::5) \
             -> IP6Encap(ipv6, 2001:db8::1, DST_ANNO) -> ToDump({}, ENCAP IP); \
             InfiniteSource(DATA \\<aa bb>, LIMIT 1) -> IP6Encap(ipv6, 2001:db8::1, DST_ANNO) \
             -> ToDump({}, ENCAP IP);",
            set.display(),
            unset.display()
        ),
        &[],
    );
    let f = only_frame(&set);
    assert_eq!(&f[..8], &[0x60, 0, 0, 0, 0, 2, 41, 250]);
    assert_eq!(
        &f[24..40],
        &"2001:db8:5::5".parse::<Ipv6Addr>().unwrap().octets()
    );
    assert_eq!(&f[40..], &[0xaa, 0xbb]);
    let f = only_frame(&unset);
    assert_eq!(&f[24..40], &[0; 16]);
}

#[test]
fn mark_ip6_header_and_set_ip6_dscp_change_only_the_dscp_bits() {
    // An Ethernet frame with a UDP datagram whose traffic class has ECN
    // bits 01 and whose flow label is 0x12345: after the marking only the
    // six DSCP bits differ, and the UDP checksum (which the traffic class
    // is not part of) still holds.
    let mut ip = vec![0x60, 0x11, 0x23, 0x45, 0x00, 0x0c, 0x11, 0x40];
    ip.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
    ip.extend_from_slice(&"2001:db8:1::2".parse::<Ipv6Addr>().unwrap().octets());
    ip.extend_from_slice(&[0x9c, 0x40, 0x00, 0x35, 0x00, 0x0c, 0x00, 0x00, 1, 2, 3, 4]);
    let src = "2001:db8::1".parse().unwrap();
    let dst = "2001:db8:1::2".parse().unwrap();
    UdpPacket::new_unchecked(&mut ip[40..]).fill_checksum_v6(src, dst);
    let mut frame = vec![
        0x52, 0x54, 0, 0xaa, 0, 2, 0x52, 0x54, 0, 0xaa, 0, 1, 0x86, 0xdd,
    ];
    frame.extend_from_slice(&ip);
    let tmp = tempfile::tempdir().unwrap();
    let (before, after) = (
        tmp.path().join("before.pcap"),
        tmp.path().join("after.pcap"),
    );
    let (out, _) = run(
        &format!(
            "InfiniteSource(DATA {}, LIMIT 1) -> t :: Tee; \
             t[0] -> ToDump({}); \
             t[1] -> MarkIP6Header(14) -> s :: SetIP6DSCP(46) -> c :: CheckIP6Header(OFFSET 14) \
             -> ToDump({}); \
             InfiniteSource(DATA \\<60 00 00>, LIMIT 1) -> MarkIP6Header -> short :: SetIP6DSCP(1) \
             -> Discard;",
            data(&frame),
            before.display(),
            after.display()
        ),
        &["s.truncated", "c.drops", "short.truncated"],
    );
    assert_eq!(
        out,
        "s.truncated:\n0\n\nc.drops:\n0\n\nshort.truncated:\n1\n\n"
    );
    let (b, a) = (only_frame(&before), only_frame(&after));
    assert_eq!(b, frame);
    let diff: Vec<u8> = a.iter().zip(&b).map(|(x, y)| x ^ y).collect();
    let mut mask = vec![0u8; frame.len()];
    mask[14] = 0x0f;
    mask[15] = 0xc0;
    assert!(
        diff.iter().zip(&mask).all(|(d, m)| d & !m == 0),
        "{diff:02x?}"
    );
    // Traffic class 0xb9: DSCP 46 (EF), ECN 01 kept.
    assert_eq!(&a[14..18], &[0x6b, 0x91, 0x23, 0x45]);
    assert!(udp6_ok(&a[14..]));
}

#[test]
fn set_ip6_address_sets_the_annotation_lookup_ip6_route_uses() {
    // Three packets to 2001:db8:1::2 (route 0 by their header). With
    // SetIP6Address(2001:db8:9::1) before the lookup, they take the route
    // for 2001:db8:9::/64 instead; GetIP6Address(24) puts the header's
    // destination back in the annotation.
    let mut ip = vec![0x60, 0, 0, 0, 0, 0, 59, 64];
    ip.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
    ip.extend_from_slice(&"2001:db8:1::2".parse::<Ipv6Addr>().unwrap().octets());
    let routes = "2001:db8:1::/64 0, 2001:db8:9::/64 1";
    let (out, _) = run(
        &format!(
            "InfiniteSource(DATA {d}, LIMIT 3) -> CheckIP6Header -> SetIP6Address(2001:db8:9::1) \
             -> a :: LookupIP6Route({routes}); \
             a[0] -> a0 :: Counter -> Discard; a[1] -> a1 :: Counter -> Discard; \
             InfiniteSource(DATA {d}, LIMIT 3) -> CheckIP6Header -> SetIP6Address(2001:db8:9::1) \
             -> GetIP6Address(24) -> b :: LookupIP6Route({routes}); \
             b[0] -> b0 :: Counter -> Discard; b[1] -> b1 :: Counter -> Discard;",
            d = data(&ip)
        ),
        &["a0.count", "a1.count", "b0.count", "b1.count"],
    );
    assert_eq!(
        out,
        "a0.count:\n0\n\na1.count:\n3\n\nb0.count:\n3\n\nb1.count:\n0\n\n"
    );
}

#[test]
fn handlers_read_and_set_the_arguments() {
    // Written by a Script at start; `config` shows the new arguments as
    // Click's does after a reconfigure_keyword_handler write.
    let (out, _) = run(
        "Idle -> u :: UDPIP6Encap(2001:db8::1, 1234, 2001:db8:1::2, 53) \
         -> e :: IP6Encap(ipv6, ::1, ::2) -> s :: SetIP6DSCP(1) -> MarkIP6Header \
         -> SetIP6Address(::3) -> Idle; \
         Script(write u.dport ntp, write u.src 2001:db8::9, write e.dst DST_ANNO, \
         write s.dscp 46);",
        &[
            "u.config", "u.src", "u.sport", "u.dst", "u.dport", "e.config", "e.dst", "s.dscp",
        ],
    );
    assert_eq!(
        out,
        "u.config:\n2001:db8::9, 1234, 2001:db8:1::2, ntp\n\n\
         u.src:\n2001:db8::9\n\nu.sport:\n1234\n\nu.dst:\n2001:db8:1::2\n\n\
         u.dport:\n123\n\n\
         e.config:\nipv6, ::1, DST_ANNO\n\ne.dst:\nDST_ANNO\n\ns.dscp:\n46\n\n"
    );
}

#[test]
fn bad_arguments_are_refused() {
    for (config, what) in [
        ("IP6Encap(41, ::1)", "DST"),
        ("IP6Encap(300, ::1, ::2)", "PROTO"),
        ("IP6Encap(41, ::1, ::2, HLIM 256)", "HLIM"),
        ("IP6Encap(41, ::1, ::2, CLASS -1)", "CLASS"),
        ("UDPIP6Encap(::1, 5, ::2, 70000)", "DPORT"),
        ("UDPIP6Encap(::1, 5, 10.0.0.2, 6)", "DST"),
        ("MarkIP6Header(-14)", "OFFSET"),
        ("SetIP6Address(10.0.0.1)", "IPADDR"),
        ("SetIP6Address()", "IPADDR"),
        ("SetIP6DSCP(64)", "DSCP"),
    ] {
        let o = bricks(&["check", "-e", &format!("Idle -> {config} -> Idle;")]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{config} was taken");
        assert!(err.contains(what), "{config}: {err}");
    }
}
