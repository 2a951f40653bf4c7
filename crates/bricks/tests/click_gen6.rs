//! Click's `FastUDPSourceIP6`, `FastTCPFlows` and `IP6Fragmenter` in whole
//! configurations run by the `bricks` binary, with bounded sources: the
//! frames they write to a capture, checked byte for byte and with sums
//! computed here, read back by tcpdump (which verifies every checksum),
//! reassembled here, and (as root) sent into a Linux network namespace,
//! whose kernel must reassemble the fragments and take every datagram and
//! segment with no checksum error.
//!
//! The namespace test needs root (skipped otherwise, a failure under
//! CI=true). Its namespaces are named `bx6frag<pid>-a` and `-b`, joined
//! by one veth pair and nothing else, and deleted when the test ends,
//! failed or not.

#[allow(dead_code)] // the helpers this test does not use
mod common;

use common::read_pcap;
use std::collections::HashMap;
use std::net::Ipv6Addr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod bounded;
use bounded::run_reading as run;

/// The values of several handlers read at exit (`NAME:` then the value
/// and a blank line each), in the order asked.
fn values(out: &str) -> Vec<String> {
    out.split("\n\n")
        .filter(|b| !b.is_empty())
        .map(|b| b.split_once(":\n").expect("NAME:\nVALUE").1.to_string())
        .collect()
}

/// `bytes` as a Click DATA argument.
fn data(bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("\\<{}>", hex.join(" "))
}

/// RFC 1071 the slow way, apart from the wire crate.
fn sum(bytes: &[u8]) -> u16 {
    let mut s: u64 = 0;
    for c in bytes.chunks(2) {
        s += u64::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The ones' complement sum of the upper-layer packet `upper` with the
/// IPv6 pseudo-header of `ip` (RFC 8200 section 8.1).
fn sum6(ip: &[u8], next: u8, upper: &[u8]) -> u16 {
    let mut all = ip[8..40].to_vec();
    all.extend((upper.len() as u32).to_be_bytes());
    all.extend([0, 0, 0, next]);
    all.extend(upper);
    sum(&all)
}

/// The same with the IPv4 pseudo-header of `ip`.
fn sum4(ip: &[u8], proto: u8, upper: &[u8]) -> u16 {
    let mut all = ip[12..20].to_vec();
    all.extend([0, proto]);
    all.extend((upper.len() as u16).to_be_bytes());
    all.extend(upper);
    sum(&all)
}

/// `tcpdump -nn -vv -r path`, one line a packet, or `None` (with the
/// reason printed) when tcpdump is not installed.
fn tcpdump(path: &Path) -> Option<Vec<String>> {
    let o = match Command::new("tcpdump")
        .args(["-nn", "-vv", "-r"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("tcpdump not run ({e}): checksums checked here only");
            return None;
        }
    };
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // -vv puts a packet's IPv4 header and its TCP part on two lines.
    let text = String::from_utf8_lossy(&o.stdout).replace("\n    ", " ");
    Some(text.lines().map(str::to_string).collect())
}

const A: &str = "2001:db8::1";
const B: &str = "2001:db8::2";

fn addr6(s: &str) -> [u8; 16] {
    s.parse::<Ipv6Addr>().unwrap().octets()
}

/// An Ethernet frame from `src_mac` to `dst_mac` holding a UDP datagram
/// from A port 40000 to B port `dport` behind extension headers `ext`
/// (the first named by `first`, the last naming UDP), with a payload of
/// `len` bytes counting up and the checksum summed here.
fn udp6_frame(
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    first: u8,
    ext: &[u8],
    dport: u16,
    len: usize,
) -> Vec<u8> {
    let mut f = dst_mac.to_vec();
    f.extend(src_mac);
    f.extend([0x86, 0xdd]);
    let plen = (ext.len() + 8 + len) as u16;
    f.extend([0x60, 0, 0, 0]);
    f.extend(plen.to_be_bytes());
    f.extend([first, 64]);
    f.extend(addr6(A));
    f.extend(addr6(B));
    f.extend(ext);
    let ulen = (8 + len) as u16;
    f.extend(40000u16.to_be_bytes());
    f.extend(dport.to_be_bytes());
    f.extend(ulen.to_be_bytes());
    f.extend([0, 0]);
    f.extend((0..len).map(|i| (i * 13 + 5) as u8));
    let u = 14 + 40 + ext.len();
    let cksum = match !sum6(&f[14..], 17, &f[u..]) {
        0 => 0xffff,
        c => c,
    };
    f[u + 6..u + 8].copy_from_slice(&cksum.to_be_bytes());
    f
}

/// Reassembles Ethernet frames of IPv6 fragments as a receiver does (RFC
/// 8200 section 4.5), checking each against `mtu`: the rebuilt frame.
fn reassemble(frames: &[Vec<u8>], mtu: usize) -> Vec<u8> {
    let first = &frames[0];
    let (mut next_at, mut at) = (14 + 6, 14 + 40);
    while first[next_at] != 44 {
        next_at = at;
        at += (usize::from(first[at + 1]) + 1) * 8;
    }
    let mut data = Vec::new();
    let mut last = false;
    for f in frames {
        assert!(f.len() - 14 <= mtu, "{} bytes", f.len());
        // The same per-fragment headers, each fragment's own length.
        assert_eq!(&f[..18], &first[..18]);
        assert_eq!(&f[20..at], &first[20..at]);
        assert_eq!(
            usize::from(u16::from_be_bytes([f[18], f[19]])) + 54,
            f.len()
        );
        let field = u16::from_be_bytes([f[at + 2], f[at + 3]]);
        let off = usize::from(field >> 3) * 8;
        assert_eq!(&f[at + 4..at + 8], &first[at + 4..at + 8], "identification");
        assert_eq!(off, data.len(), "in order, without holes");
        let piece = &f[at + 8..];
        if field & 1 == 1 {
            assert_eq!(piece.len() % 8, 0);
        } else {
            last = true;
        }
        data.extend_from_slice(piece);
    }
    assert!(last, "the last fragment came");
    let mut out = first[..at].to_vec();
    out[next_at] = first[at];
    out.extend(data);
    let plen = (out.len() - 54) as u16;
    out[18..20].copy_from_slice(&plen.to_be_bytes());
    out
}

#[test]
fn fast_udp_source_ip6_frames_are_clicks() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("udp6.pcap");
    let (out, _) = run(
        &format!(
            "s :: FastUDPSourceIP6(0, 5, 100, 00:11:22:33:44:55, 2001:db8::1, 1234, \
             66:77:88:99:aa:bb, 2001:db8:1::2, 5678, INTERVAL 2) -> ToDump({});",
            dump.display()
        ),
        &["s.count"],
    );
    assert_eq!(out, "5\n");
    let frames = read_pcap(&dump);
    assert_eq!(frames.len(), 5);
    for (k, f) in frames.iter().enumerate() {
        // Click's frame, built here field by field: the ports one up
        // after every two packets.
        let incr = (k / 2) as u16;
        let mut want = vec![
            0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0, 0x11, 0x22, 0x33, 0x44, 0x55,
        ];
        want.extend([0x86, 0xdd, 0x60, 0, 0, 0, 0, 46, 17, 250]);
        want.extend(addr6("2001:db8::1"));
        want.extend(addr6("2001:db8:1::2"));
        want.extend((1234 + incr).to_be_bytes());
        want.extend((5678 + incr).to_be_bytes());
        want.extend([0, 46, 0, 0]);
        want.resize(100, 0);
        let cksum = !sum6(&want[14..], 17, &want[54..]);
        want[60..62].copy_from_slice(&cksum.to_be_bytes());
        assert_eq!(f, &want, "frame {k}");
    }
    if let Some(lines) = tcpdump(&dump) {
        assert_eq!(lines.len(), 5, "{lines:#?}");
        for l in &lines {
            assert!(l.contains("hlim 250"), "{l}");
            assert!(l.contains("[udp sum ok]"), "{l}");
        }
    }
}

#[test]
fn fast_tcp_flows_are_syn_data_fin() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("tcp.pcap");
    let (out, _) = run(
        &format!(
            "s :: FastTCPFlows(0, 60, 70, 0:0:0:0:0:1, 10.0.0.1, 0:0:0:0:0:2, 10.0.0.2, 5, 4, \
             SEED 7) -> c :: Counter -> ToDump({});",
            dump.display()
        ),
        &["s.count", "c.count"],
    );
    let counts: Vec<usize> = values(&out).iter().map(|v| v.parse().unwrap()).collect();
    assert_eq!(counts[0], counts[1]);
    // LIMIT 60, then a FIN for each of the (at most 5) flows still open.
    assert!((60..=65).contains(&counts[0]), "{out}");
    let frames = read_pcap(&dump);
    assert_eq!(frames.len(), counts[0]);
    let mut flows: HashMap<[u8; 4], Vec<u8>> = HashMap::new();
    for f in &frames {
        assert_eq!(f.len(), 70);
        assert_eq!(&f[12..24], &[8, 0, 0x45, 0, 0, 56, 0, 0, 0, 0, 250, 6]);
        assert_eq!(sum(&f[14..34]), 0xffff, "IPv4 checksum");
        assert_eq!(sum4(&f[14..34], 6, &f[34..]), 0xffff, "TCP checksum");
        assert_eq!(&f[46..48], &[0x50, f[47]]);
        assert_eq!(&f[48..50], &[0xff, 0xff], "window");
        assert!(f[50..].iter().skip(2).all(|&b| b == 0));
        flows
            .entry(f[34..38].try_into().unwrap())
            .or_default()
            .push(f[47]);
    }
    for (ports, kinds) in &flows {
        assert_eq!(kinds[0], 0x02, "{ports:?}: SYN first: {kinds:?}");
        assert_eq!(*kinds.last().unwrap(), 0x01, "{ports:?}: FIN last");
        assert!(kinds.len() <= 4, "{ports:?}: {kinds:?}");
        assert!(kinds[1..kinds.len() - 1].iter().all(|&k| k == 0x18));
    }
    if let Some(lines) = tcpdump(&dump) {
        assert_eq!(lines.len(), frames.len());
        let mut syn = 0;
        for l in &lines {
            assert!(l.contains("ttl 250"), "{l}");
            assert!(l.contains("(correct)"), "{l}");
            assert!(!l.contains("incorrect") && !l.contains("bad cksum"), "{l}");
            syn += usize::from(l.contains("Flags [S]"));
        }
        assert_eq!(syn, flows.len());
    }
}

#[test]
fn ip6fragmenter_in_a_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("frags.pcap");
    let (dst, src) = ([2; 6], [1; 6]);
    // Hop-by-Hop (PadN) and Destination Options (PadN) before UDP.
    let ext = [60, 0, 1, 4, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0];
    let orig = udp6_frame(dst, src, 0, &ext, 9999, 1500);
    // Already a fragment (offset 0, M): to output 1.
    let frag = udp6_frame(dst, src, 44, &[17, 0, 0, 1, 0, 0, 0, 7], 9999, 1000);
    // Twenty Destination Options headers: a chain the walk gives up on.
    let endless: Vec<u8> = (0..20).flat_map(|_| [60, 0, 1, 4, 0, 0, 0, 0]).collect();
    let hostile = udp6_frame(dst, src, 60, &endless, 9999, 800);
    let (out, _) = run(
        &format!(
            "InfiniteSource(DATA {}, LIMIT 1) -> MarkIP6Header(14) -> fr :: IP6Fragmenter(600) \
             -> ToDump({}); \
             InfiniteSource(DATA {}, LIMIT 1) -> MarkIP6Header(14) -> fr; \
             InfiniteSource(DATA {}, LIMIT 1) -> MarkIP6Header(14) -> fr; \
             fr[1] -> big :: Counter -> Discard;",
            data(&orig),
            dump.display(),
            data(&frag),
            data(&hostile),
        ),
        &[
            "fr.fragmented",
            "fr.fragments",
            "fr.already_fragment",
            "fr.bad_chain",
            "fr.drops",
            "big.count",
        ],
    );
    assert_eq!(values(&out), ["1", "3", "1", "1", "1", "1"]);
    let frames = read_pcap(&dump);
    assert_eq!(frames.len(), 3);
    // Each fragment: Ethernet, 40 + 8 (Hop-by-Hop) repeated, a Fragment
    // header, then 544 octets ((600 - 56) rounded down to 8) of the 1516
    // after the Hop-by-Hop header; the last has 428.
    assert_eq!(
        frames.iter().map(Vec::len).collect::<Vec<_>>(),
        [614, 614, 498]
    );
    assert_eq!(reassemble(&frames, 600), orig);
    if let Some(lines) = tcpdump(&dump) {
        assert_eq!(lines.len(), 3, "{lines:#?}");
        for (l, want) in lines.iter().zip(["0|544", "544|544", "1088|428"]) {
            assert!(l.contains("frag (0x"), "{l}");
            assert!(l.contains(want), "{l} lacks {want}");
        }
    }
}

/// Namespace `b`'s counters from `/proc/net/FILE`: `snmp6` has one
/// `Name value` a line, `snmp` a line of names then one of values.
fn counters(net: &bricks_netns::Network, file: &str) -> HashMap<String, u64> {
    let o = net
        .exec("b", &["cat", &format!("/proc/net/{file}")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut m = HashMap::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let mut w = l.split_whitespace();
        let (Some(name), Some(value)) = (w.next(), w.next()) else {
            continue;
        };
        if let Ok(v) = value.parse() {
            m.insert(name.to_string(), v);
        } else if let Some(values) = lines.get(i + 1) {
            // snmp: "Tcp: Names..." then "Tcp: values...".
            let proto = name.trim_end_matches(':');
            for (n, v) in l.split_whitespace().zip(values.split_whitespace()).skip(1) {
                if let Ok(v) = v.parse() {
                    m.insert(format!("{proto}{n}"), v);
                }
            }
        }
    }
    m
}

/// Waits until `done` holds for namespace b's counters (5 s at most).
fn settle(
    net: &bricks_netns::Network,
    file: &str,
    done: impl Fn(&HashMap<String, u64>) -> bool,
) -> HashMap<String, u64> {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let c = counters(net, file);
        if done(&c) || std::time::Instant::now() > deadline {
            return c;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn linux_takes_what_bricks_sends() {
    if bricks_netns::skip_unless_root("linux_takes_what_bricks_sends").is_some() {
        return;
    }
    let prefix = format!("bx6frag{}-", std::process::id() % 100_000);
    // Deleted when dropped, also when an assertion below fails.
    let mut net = bricks_netns::Network::new(&prefix).unwrap();
    net.add_namespace("a").unwrap();
    net.add_namespace("b").unwrap();
    net.add_link("a", "eth0", "b", "eth0", 1).unwrap();
    if bricks_netns::have_ethtool() {
        // Receive checksum offload off: the kernel verifies every sum.
        net.disable_offloads("b", "eth0").unwrap();
    } else {
        eprintln!("no ethtool: the veth may skip checksum checks");
    }
    for (ns, cidrs) in [
        ("a", ["2001:db8::1/64", "10.9.0.1/24"]),
        ("b", ["2001:db8::2/64", "10.9.0.2/24"]),
    ] {
        let full = net.ns_name(ns);
        for cidr in cidrs {
            let mut args = vec!["-n", &full, "addr", "add", cidr, "dev", "eth0"];
            if cidr.contains(':') {
                args.push("nodad");
            }
            bricks_netns::ip(&args).unwrap();
        }
    }
    let mac = |ns: &str| common::mac_bytes(&net.mac(ns, "eth0").unwrap());
    let (a_mac, b_mac) = (mac("a"), mac("b"));
    let fmt_mac = |m: [u8; 6]| {
        m.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    let b = net.ns_name("b");
    let sock = bricks_netns::in_namespace(&b, || {
        let s = std::net::UdpSocket::bind("[::]:9999").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    });
    let sock_zero = bricks_netns::in_namespace(&b, || {
        let s = std::net::UdpSocket::bind("[::]:9998").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    });
    let raw =
        bricks_netns::in_namespace(&net.ns_name("a"), || bricks_netns::RawSocket::open("eth0"));
    let send_all = |frames: &[Vec<u8>]| {
        for (i, f) in frames.iter().enumerate() {
            raw.send(f);
            if i % 32 == 31 {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    };
    let tmp = tempfile::tempdir().unwrap();

    // 1. Fragments of two datagrams, one behind Hop-by-Hop and
    // Destination Options headers: the kernel rebuilds both.
    let before = counters(&net, "snmp6");
    let two_options: &[u8] = &[60, 0, 1, 4, 0, 0, 0, 0, 17, 0, 1, 4, 0, 0, 0, 0];
    let datagrams = [
        (udp6_frame(b_mac, a_mac, 17, &[], 9999, 1800), 0),
        (udp6_frame(b_mac, a_mac, 0, two_options, 9999, 1700), 16),
    ];
    for (k, (d, ext)) in datagrams.iter().enumerate() {
        let dump = tmp.path().join(format!("frag{k}.pcap"));
        run(
            &format!(
                "InfiniteSource(DATA {}, LIMIT 1) -> MarkIP6Header(14) \
                 -> IP6Fragmenter(600) -> ToDump({});",
                data(d),
                dump.display()
            ),
            &[],
        );
        let frags = read_pcap(&dump);
        assert!(frags.len() >= 3, "{} fragments", frags.len());
        assert_eq!(reassemble(&frags, 600), *d);
        send_all(&frags);
        let mut buf = [0u8; 4096];
        let (n, from) = sock
            .recv_from(&mut buf)
            .expect("Linux delivers the datagram");
        // The payload, after Ethernet, IPv6, the options and UDP.
        assert_eq!(&buf[..n], &d[14 + 40 + ext + 8..], "datagram {k}");
        assert_eq!(from.ip().to_string(), A);
    }
    let after = settle(&net, "snmp6", |c| {
        c["Ip6ReasmOKs"] >= before["Ip6ReasmOKs"] + 2
    });
    assert_eq!(after["Ip6ReasmOKs"] - before["Ip6ReasmOKs"], 2);
    assert_eq!(after["Ip6ReasmFails"], before["Ip6ReasmFails"]);
    assert_eq!(after["Udp6InCsumErrors"], before["Udp6InCsumErrors"]);

    // 2. FastUDPSourceIP6's datagrams, ports moving: each one delivered.
    let dump = tmp.path().join("udp6.pcap");
    run(
        &format!(
            "FastUDPSourceIP6(0, 20, 100, {}, {A}, 1234, {}, {B}, 9998) -> ToDump({});",
            fmt_mac(a_mac),
            fmt_mac(b_mac),
            dump.display()
        ),
        &[],
    );
    send_all(&read_pcap(&dump));
    let mut buf = [0u8; 128];
    for i in 0..20 {
        let (n, from) = sock_zero
            .recv_from(&mut buf)
            .unwrap_or_else(|e| panic!("datagram {i}: {e}"));
        assert_eq!(&buf[..n], &[0u8; 38][..]);
        assert_eq!(from.port(), 1234);
    }
    let now = counters(&net, "snmp6");
    assert_eq!(now["Udp6InCsumErrors"], before["Udp6InCsumErrors"]);

    // 3. FastTCPFlows' segments to closed ports: each answered with a
    // reset, which Linux sends only for a segment whose checksum is right.
    let dump = tmp.path().join("tcp.pcap");
    run(
        &format!(
            "FastTCPFlows(0, 50, 60, {}, 10.9.0.1, {}, 10.9.0.2, 8, 4) -> ToDump({});",
            fmt_mac(a_mac),
            fmt_mac(b_mac),
            dump.display()
        ),
        &[],
    );
    let segments = read_pcap(&dump);
    let before = counters(&net, "snmp");
    send_all(&segments);
    let n = segments.len() as u64;
    let after = settle(&net, "snmp", |c| {
        c["TcpOutRsts"] >= before["TcpOutRsts"] + n
    });
    assert_eq!(after["TcpInCsumErrors"], before["TcpInCsumErrors"]);
    assert_eq!(after["TcpInSegs"] - before["TcpInSegs"], n);
    assert_eq!(after["TcpOutRsts"] - before["TcpOutRsts"], n);
    drop(net);
    assert!(!bricks_netns::list_namespaces()
        .unwrap()
        .iter()
        .any(|n| n.starts_with(&prefix)));
}
