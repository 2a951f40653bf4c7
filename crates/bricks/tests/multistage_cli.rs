//! `bricks multistage` as a user meets it without root: validating
//! multistage files (`check`: a description, or the line, the reason and
//! exit status 2), each box's configuration (`config`), which `bricks
//! check` accepts, and conf/multistage/2x2.toml's balancer lb1 and router
//! r1 run with plain `bricks run` on captures built from real frames: the
//! balancer answers ARP for G_k with F_k and spreads IPv4 frames over both
//! routers' MACs, switches what comes back to the host's port; the router
//! forwards a balanced frame to an external next hop from F_k once it has
//! resolved it, answers pings and sends time exceeded from G_k, and
//! answers probes.

use bricks_wire::{
    EtherType, EthernetAddress, Icmpv4Packet, Icmpv4Repr, IpProtocol, Ipv4Addr, Ipv4Packet,
    UdpPacket, UdpRepr,
};
use std::path::{Path, PathBuf};

#[allow(dead_code)] // shared with the other tests
mod common;

use common::{bricks, ether, ipv4, read_pcap, root, stderr, stdout, write_pcap};

/// The examples and every box of each.
const EXAMPLES: [(&str, &[&str]); 2] = [
    ("conf/multistage/2x2.toml", &["lb1", "lb2", "r1", "r2"]),
    ("conf/multistage/dtx3.toml", &["lb1", "r1", "r2", "r3"]),
];

#[test]
fn multistage_help_has_examples() {
    let o = bricks(&["multistage", "--help"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(t.contains("check") && t.contains("config"), "{t}");
    assert!(
        t.contains("Examples:") && t.contains("bricks multistage check conf/multistage/2x2.toml"),
        "{t}"
    );
    for sub in ["check", "config"] {
        let o = bricks(&["multistage", sub, "--help"]);
        assert!(o.status.success());
        let t = stdout(&o);
        assert!(
            t.contains("Examples:") && t.contains(&format!("bricks multistage {sub} conf/")),
            "{t}"
        );
    }
    let t = stdout(&bricks(&["--help"]));
    assert!(t.contains("multistage"), "{t}");
}

#[test]
fn the_examples_check_and_every_box_configuration_checks() {
    for (f, nodes) in EXAMPLES {
        let o = bricks(&["multistage", "check", f]);
        assert!(o.status.success(), "{f}: {}", stderr(&o));
        let t = stdout(&o);
        assert!(t.contains(&format!("ok: {f}")), "{t}");
        assert!(t.contains("02:4d:53:00:00:00 (front port 0)"), "{t}");
        assert!(t.contains("back port 0: back0 02:4d:42:00:00:00"), "{t}");
        for node in nodes.iter().copied() {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join(format!("{node}.click"));
            let o = bricks(&[
                "multistage",
                "config",
                f,
                node,
                "-o",
                out.to_str().unwrap(),
                "--backend",
                "packet",
            ]);
            assert!(o.status.success(), "{f} {node}: {}", stderr(&o));
            let text = std::fs::read_to_string(&out).unwrap();
            assert!(
                text.contains(&format!("//   bricks run {} --control ", out.display())),
                "{text}"
            );
            assert!(text.contains("$BACKEND packet,"), "{text}");
            let o = bricks(&["check", out.to_str().unwrap()]);
            assert!(o.status.success(), "{f} {node}:\n{}", stderr(&o));
            let described = stdout(&o);
            let class = if node.starts_with("lb") {
                "L2Balancer"
            } else {
                "ProbeResponder"
            };
            assert!(described.contains(class), "{described}");
        }
    }
}

#[test]
fn config_prints_the_run_command_with_the_macs_it_needs() {
    let o = bricks(&["multistage", "config", "conf/multistage/2x2.toml", "lb2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let t = stdout(&o);
    assert!(
        t.contains(
            "//   bricks run lb2.click --control /run/bricks-multistage/2x2/lb2.sock \\\n\
             //       -D MAC2=<lb2 ext0's MAC> \\\n//       -D MAC3=<lb2 ext1's MAC>\n"
        ),
        "{t}"
    );
    assert!(
        t.contains("lb :: L2Balancer(FRONT 2 3, ROUTERS 2, BALANCER 1,"),
        "{t}"
    );
    let o = bricks(&[
        "multistage",
        "config",
        "conf/multistage/2x2.toml",
        "r2",
        "--control",
        "/tmp/r2.sock",
    ]);
    let t = stdout(&o);
    assert!(
        t.contains("//   bricks run r2.click --control /tmp/r2.sock \\\n"),
        "{t}"
    );
    assert!(t.contains("ProbeResponder(ROUTER 1, FRONTS 4)"), "{t}");
    // Errors: a box the file does not have, a file that is not there
    // (exit 2); a backend bricks does not have (exit 1).
    let o = bricks(&["multistage", "config", "conf/multistage/2x2.toml", "r9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no box `r9` (balancers and routers: lb1, lb2, r1, r2)"),
        "{}",
        stderr(&o)
    );
    let o = bricks(&["multistage", "config", "conf/multistage/none.toml", "r1"]);
    assert_eq!(o.status.code(), Some(2));
    let o = bricks(&[
        "multistage",
        "config",
        "conf/multistage/2x2.toml",
        "r1",
        "--backend",
        "dpdk",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("expected auto, xdp or packet"));
}

/// Checks the file `text`; returns (exit status, stdout, stderr without
/// the file's path).
fn check_text(text: &str) -> (Option<i32>, String, String) {
    common::check_text("multistage", "ms.toml", text)
}

#[test]
fn check_refuses_what_cannot_work_with_the_line() {
    let good = std::fs::read_to_string(root().join("conf/multistage/2x2.toml")).unwrap();
    let line_of = |needle: &str| good.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let (code, out, e) = check_text(&good);
    assert_eq!(code, Some(0), "{e}");
    assert!(out.contains("multistage router 2x2:"), "{out}");

    let (code, _, e) = check_text(&good.replace("name = \"r2\"", "name = \"r1\""));
    assert_eq!(code, Some(2));
    assert_eq!(
        e.trim_end(),
        format!(
            "error: line {}: name `r1` is used twice (first at line {})",
            line_of("name = \"r2\""),
            line_of("name = \"r1\"")
        )
    );
    let (code, _, e) = check_text(&good.replace("10.3.0.1/24", "10.2.0.9/16"));
    assert_eq!(code, Some(2));
    assert!(e.contains("have overlapping subnets"), "{e}");
    let (code, _, e) = check_text(&good.replace("port = \"lb1:ext1\"", "port = \"lb1:ext7\""));
    assert_eq!(code, Some(2));
    assert!(
        e.starts_with(&format!(
            "error: line {}: route 192.168.0.0/16: no front port `lb1:ext7`",
            line_of("prefix = \"192.168.0.0/16\"")
        )),
        "{e}"
    );
    let (code, _, e) = check_text(&good.replace("10.3.0.254", "172.16.0.1"));
    assert_eq!(code, Some(2));
    assert!(
        e.contains("gateway 172.16.0.1 is off every front subnet"),
        "{e}"
    );
    let (code, _, e) =
        check_text(&good.replace("probe_interval = \"50ms\"", "probe_interval = \"0s\""));
    assert_eq!(code, Some(2));
    assert_eq!(
        e.trim_end(),
        format!(
            "error: line {}: probe_interval is 0",
            line_of("probe_interval")
        )
    );
    let (code, _, e) =
        check_text(&good.replace("iface = \"eth0\"", "iface = \"eth0\"\nspeed = 10"));
    assert_eq!(code, Some(2));
    assert!(e.contains("unknown field `speed`"), "{e}");
    let (code, _, e) = check_text("name = \"x\"\n[[balancer]]\nname = \"b\"\n");
    assert_eq!(code, Some(2));
    assert!(
        e.contains("line 3: balancer b has no [[balancer.front]] port"),
        "{e}"
    );
    let (code, _, e) = check_text("not toml [");
    assert_eq!(code, Some(2));
    assert!(e.starts_with("error: line 1"), "{e}");
    let o = bricks(&["multistage", "check", "conf/multistage/none.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read conf/multistage/none.toml"));
}

// ---------------------------------------------------------------------
// The 2x2 example's balancer lb1 and router r1, run on captures.

/// F_0 and F_1, lb1's front MACs, given with -D as on real machines.
const F0: [u8; 6] = [0x02, 0, 0, 0, 0x0f, 0x00];
const F1: [u8; 6] = [0x02, 0, 0, 0, 0x0f, 0x01];
const F2: [u8; 6] = [0x02, 0, 0, 0, 0x0f, 0x02];
const F3: [u8; 6] = [0x02, 0, 0, 0, 0x0f, 0x03];
/// Hosts: H0 behind front port 0 (10.0.0.2), H1 behind front port 1
/// (10.1.0.2).
const H0: [u8; 6] = [0x02, 0, 0, 0, 0xa0, 0x02];
const H1: [u8; 6] = [0x02, 0, 0, 0, 0xa1, 0x02];
const H0_IP: [u8; 4] = [10, 0, 0, 2];
const H1_IP: [u8; 4] = [10, 1, 0, 2];
const G0: [u8; 4] = [10, 0, 0, 1];
const G1: [u8; 4] = [10, 1, 0, 1];
/// lb1's back port and the routers' MACs for front ports 0 and 1.
const LB1_BACK: [u8; 6] = [0x02, 0x4d, 0x42, 0, 0, 0];
const R1_F0: [u8; 6] = [0x02, 0x4d, 0x53, 0, 0, 0];
const R1_F1: [u8; 6] = [0x02, 0x4d, 0x53, 0, 1, 0];
const R2_F0: [u8; 6] = [0x02, 0x4d, 0x53, 1, 0, 0];
const R2_F1: [u8; 6] = [0x02, 0x4d, 0x53, 1, 1, 0];
const BROADCAST: [u8; 6] = [0xff; 6];

fn macs() -> Vec<String> {
    [F0, F1, F2, F3]
        .iter()
        .enumerate()
        .map(|(k, m)| format!("MAC{k}={}", EthernetAddress(*m)))
        .collect()
}

fn udp(src: [u8; 4], dst: [u8; 4], ident: u16, ttl: u8) -> Vec<u8> {
    let payload = b"multistage data";
    let udp = UdpRepr {
        src_port: 40000 + ident,
        dst_port: 9,
        payload_len: payload.len(),
    };
    let mut b = vec![0u8; udp.buffer_len() + payload.len()];
    let mut d = UdpPacket::new_unchecked(&mut b[..]);
    udp.emit(&mut d);
    d.payload_mut().copy_from_slice(payload);
    d.fill_checksum_v4(Ipv4Addr::from(src), Ipv4Addr::from(dst));
    ipv4(src, dst, IpProtocol::UDP, ident, ttl, &b)
}

fn echo_request(src: [u8; 4], dst: [u8; 4], ident: u16) -> Vec<u8> {
    let data = b"multistage ping";
    let icmp = Icmpv4Repr::EchoRequest {
        ident,
        seq_no: 1,
        data,
    };
    let mut b = vec![0u8; icmp.buffer_len()];
    icmp.emit(&mut Icmpv4Packet::new_unchecked(&mut b[..]));
    ipv4(src, dst, IpProtocol::ICMP, ident, 64, &b)
}

/// An ARP packet (`op` 1 request, 2 reply) from (`mac`, `ip`) about
/// (`to_mac`, `to_ip`), in a frame to `dst`.
fn arp(
    op: u8,
    dst: [u8; 6],
    mac: [u8; 6],
    ip: [u8; 4],
    to_mac: [u8; 6],
    to_ip: [u8; 4],
) -> Vec<u8> {
    let mut a = vec![0, 1, 8, 0, 6, 4, 0, op];
    a.extend_from_slice(&mac);
    a.extend_from_slice(&ip);
    a.extend_from_slice(&to_mac);
    a.extend_from_slice(&to_ip);
    ether(dst, mac, EtherType::ARP, &a)
}

/// A liveness probe reply (0x88B7) from `router`'s MAC for `front` to
/// lb1's back port: magic "BKMS", kind 2, balancer, router, front port,
/// sequence number, padded to 60 bytes.
fn probe_reply(router: u8, front: u8, seq: u32) -> Vec<u8> {
    let mut p = b"BKMS".to_vec();
    p.extend_from_slice(&[2, 0, router, front]);
    p.extend_from_slice(&seq.to_be_bytes());
    p.resize(46, 0);
    ether(
        LB1_BACK,
        [0x02, 0x4d, 0x53, router, front, 0],
        EtherType::from(0x88b7),
        &p,
    )
}

/// A probe from lb1's back port to `router`.
fn probe(router: u8, seq: u32) -> Vec<u8> {
    let mut p = b"BKMS".to_vec();
    p.extend_from_slice(&[1, 0, router, 0]);
    p.extend_from_slice(&seq.to_be_bytes());
    p.resize(46, 0);
    ether(
        [0x02, 0x4d, 0x53, router, 0, 0],
        LB1_BACK,
        EtherType::from(0x88b7),
        &p,
    )
}

fn ethertype(f: &[u8]) -> u16 {
    u16::from_be_bytes([f[12], f[13]])
}

/// The IPv4 packet of a frame.
fn ip_of(f: &[u8]) -> Option<Ipv4Packet<&[u8]>> {
    if f.len() < 34 || ethertype(f) != 0x0800 {
        return None;
    }
    Ipv4Packet::new_checked(&f[14..]).ok()
}

/// An ARP frame's operation, sender MAC, sender IP and target IP.
type ArpFields = (u8, [u8; 6], [u8; 4], [u8; 4]);

/// Frames with the time (ms) they arrive at.
type Capture = Vec<(u64, Vec<u8>)>;

/// The ARP operation, sender (MAC, IP) and target IP of an ARP frame.
fn arp_of(f: &[u8]) -> Option<ArpFields> {
    if f.len() < 42 || ethertype(f) != 0x0806 {
        return None;
    }
    Some((
        f[21],
        f[22..28].try_into().unwrap(),
        f[28..32].try_into().unwrap(),
        f[38..42].try_into().unwrap(),
    ))
}

/// The configuration of `node` of the 2x2 example, in `dir`.
fn config(dir: &Path, node: &str) -> PathBuf {
    let conf = dir.join(format!("{node}.click"));
    let o = bricks(&[
        "multistage",
        "config",
        "conf/multistage/2x2.toml",
        node,
        "-o",
        conf.to_str().unwrap(),
        "--backend",
        "packet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    conf
}

/// Runs `conf` with each (interface, input frames) backed by captures;
/// returns each interface's output frames and the counters printed.
fn run(dir: &Path, conf: &Path, ifaces: &[(&str, Capture)]) -> (Vec<Vec<Vec<u8>>>, String) {
    let mut args: Vec<String> = vec![
        "run".into(),
        conf.display().to_string(),
        "--clock".into(),
        "trace".into(),
    ];
    for m in macs() {
        args.push("-D".into());
        args.push(m);
    }
    let mut outs = Vec::new();
    for (name, frames) in ifaces {
        let input = dir.join(format!("{name}-in.pcap"));
        let output = dir.join(format!("{name}-out.pcap"));
        write_pcap(&input, frames, 0);
        args.push("-d".into());
        args.push(format!(
            "{name}=pcap:{},{}",
            input.display(),
            output.display()
        ));
        outs.push(output);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = bricks(&args);
    let counters = format!("{}{}", stdout(&o), stderr(&o));
    assert!(o.status.success(), "{counters}");
    (outs.iter().map(|p| read_pcap(p)).collect(), counters)
}

/// The counters line of element `name`.
fn counters_of<'a>(counters: &'a str, name: &str) -> &'a str {
    counters
        .lines()
        .find(|l| l.starts_with(&format!("{name} (")))
        .unwrap_or_else(|| panic!("no counters for {name}:\n{counters}"))
}

#[test]
fn the_balancer_answers_arp_spreads_over_both_routers_and_switches_back() {
    let dir = tempfile::tempdir().unwrap();
    let conf = config(dir.path(), "lb1");
    // Both routers answer a probe first (they are used only once heard).
    let mut back0: Capture = Vec::new();
    for r in 0..2u8 {
        for k in 0..4u8 {
            back0.push((1, probe_reply(r, k, 0)));
        }
    }
    // H0 asks for its gateway G_0, then sends six UDP frames to F_0 for
    // a far destination; one frame for another MAC and one carrying a
    // router's MAC as its destination are refused.
    let mut ext0: Capture = vec![(10, arp(1, BROADCAST, H0, H0_IP, [0; 6], G0))];
    let mut sent = Vec::new();
    for i in 0..6u16 {
        let f = ether(
            F0,
            H0,
            EtherType::IPV4,
            &udp(H0_IP, [192, 168, 1, 1], 0x100 + i, 64),
        );
        sent.push(f.clone());
        ext0.push((20 + u64::from(i), f));
    }
    ext0.push((
        30,
        ether(H1, H0, EtherType::IPV4, &udp(H0_IP, H1_IP, 0x200, 64)),
    ));
    ext0.push((
        31,
        ether(R1_F0, H0, EtherType::IPV4, &udp(H0_IP, H1_IP, 0x201, 64)),
    ));
    // H1 answers a router's query (which came out of ext1) with an ARP
    // reply to F_1: every router gets a copy.
    let ext1: Capture = vec![(50, arp(2, F1, H1, H1_IP, F1, G1))];
    // From the back: a router's ARP request for H1 (from F_1), a frame
    // for H0 (learnt on ext0), one for a MAC nobody has seen.
    back0.push((40, arp(1, BROADCAST, F1, G1, [0; 6], H1_IP)));
    let to_h0 = ether(
        H0,
        F0,
        EtherType::IPV4,
        &udp([192, 168, 1, 1], H0_IP, 0x300, 63),
    );
    back0.push((60, to_h0.clone()));
    back0.push((
        61,
        ether(
            [2, 0, 0, 0, 0xee, 0xee],
            F0,
            EtherType::IPV4,
            &udp([192, 168, 1, 1], H0_IP, 0x301, 63),
        ),
    ));

    let (outs, counters) = run(
        dir.path(),
        &conf,
        &[("ext0", ext0), ("ext1", ext1), ("back0", back0)],
    );
    let (ext0_out, ext1_out, back0_out) = (&outs[0], &outs[1], &outs[2]);

    // ARP for G_0 is answered with F_0, to H0.
    let replies: Vec<&Vec<u8>> = ext0_out
        .iter()
        .filter(|f| {
            arp_of(f)
                .is_some_and(|(op, mac, ip, to)| op == 2 && mac == F0 && ip == G0 && to == H0_IP)
        })
        .collect();
    assert_eq!(replies.len(), 1, "{ext0_out:?}");
    assert_eq!(replies[0][0..6], H0);
    assert_eq!(replies[0][6..12], F0);

    // The six UDP frames leave by the back port, alternately to r1's and
    // r2's MAC for front port 0, otherwise unchanged (source H0).
    let balanced: Vec<&Vec<u8>> = back0_out
        .iter()
        .filter(|f| ethertype(f) == 0x0800)
        .collect();
    assert_eq!(balanced.len(), 6, "{back0_out:?}");
    let mut to = [0usize; 2];
    for (b, s) in balanced.iter().zip(&sent) {
        let dst: [u8; 6] = b[0..6].try_into().unwrap();
        match dst {
            R1_F0 => to[0] += 1,
            R2_F0 => to[1] += 1,
            other => panic!("balanced to {other:02x?}"),
        }
        assert_eq!(b[6..], s[6..], "only the destination MAC changes");
    }
    assert_eq!(to, [3, 3], "round robin over both routers");
    for w in balanced.windows(2) {
        assert_ne!(w[0][0..6], w[1][0..6], "per-packet round robin alternates");
    }

    // H1's ARP reply reaches both routers, each at its MAC for front
    // port 1.
    let copies: Vec<[u8; 6]> = back0_out
        .iter()
        .filter(|f| arp_of(f).is_some_and(|(op, mac, _, _)| op == 2 && mac == H1))
        .map(|f| f[0..6].try_into().unwrap())
        .collect();
    assert_eq!(copies.len(), 2, "{back0_out:?}");
    assert!(
        copies.contains(&R1_F1) && copies.contains(&R2_F1),
        "{copies:02x?}"
    );

    // The router's ARP request leaves by ext1 (its source is F_1) and
    // not by ext0; the frame for H0 leaves by ext0, unmodified.
    assert!(
        ext1_out
            .iter()
            .any(|f| arp_of(f) == Some((1, F1, G1, H1_IP))),
        "{ext1_out:?}"
    );
    assert!(!ext0_out
        .iter()
        .any(|f| ethertype(f) == 0x0806 && f[0..6] == BROADCAST));
    assert_eq!(
        ext0_out.iter().filter(|f| **f == to_h0).count(),
        1,
        "{ext0_out:?}"
    );
    assert_eq!(ext0_out.len(), 2, "{ext0_out:?}");
    assert_eq!(ext1_out.len(), 1, "{ext1_out:?}");

    // Probes went to both routers from the back MAC.
    assert!(back0_out
        .iter()
        .any(|f| ethertype(f) == 0x88b7 && f[0..6] == R1_F0 && f[6..12] == LB1_BACK));
    assert!(back0_out
        .iter()
        .any(|f| ethertype(f) == 0x88b7 && f[0..6] == R2_F0 && f[6..12] == LB1_BACK));

    let lb = counters_of(&counters, "lb");
    for c in [
        "balanced=6",
        "to_router0=3",
        "to_router1=3",
        "returned=1",
        "unknown_return=1",
        "arp_to_routers=1",
        "spoofed=1",
        "other_host=1",
        "router_up=2",
        "live=2",
    ] {
        assert!(lb.split_whitespace().any(|w| w == c), "{c} missing: {lb}");
    }
}

#[test]
fn the_router_forwards_from_f_k_after_resolving_and_answers_from_g_k() {
    let dir = tempfile::tempdir().unwrap();
    let conf = config(dir.path(), "r1");
    // Frames as lb1 hands them to r1: for r1's MAC for the front port
    // they came in by, source unchanged.
    let eth0: Capture = vec![
        // A probe from lb1.
        (1, probe(0, 7)),
        // From H0 (front port 0) to H1 (front port 1's subnet).
        (
            10,
            ether(R1_F0, H0, EtherType::IPV4, &udp(H0_IP, H1_IP, 0x400, 64)),
        ),
        // H1's reply to the router's query, copied by the balancer.
        (20, arp(2, R1_F1, H1, H1_IP, F1, G1)),
        // A ping of G_0 and a packet whose TTL runs out, from H0.
        (
            30,
            ether(R1_F0, H0, EtherType::IPV4, &echo_request(H0_IP, G0, 0x77)),
        ),
        (
            31,
            ether(R1_F0, H0, EtherType::IPV4, &udp(H0_IP, H1_IP, 0x401, 1)),
        ),
        // H0 answers the router's query on front port 0.
        (40, arp(2, R1_F0, H0, H0_IP, F0, G0)),
        // A frame for r2 (the switch floods what it has not learnt).
        (
            50,
            ether(R2_F0, H0, EtherType::IPV4, &udp(H0_IP, H1_IP, 0x402, 64)),
        ),
    ];
    let (outs, counters) = run(dir.path(), &conf, &[("eth0", eth0)]);
    let out = &outs[0];

    // Probe: one reply per front port, from each of r1's MACs to lb1.
    let replies: Vec<&Vec<u8>> = out.iter().filter(|f| ethertype(f) == 0x88b7).collect();
    assert_eq!(replies.len(), 4, "{out:?}");
    for (k, r) in replies.iter().enumerate() {
        assert_eq!(r[0..6], LB1_BACK);
        assert_eq!(r[6..12], [0x02, 0x4d, 0x53, 0, k as u8, 0]);
        assert_eq!(r[14..18], *b"BKMS");
    }

    // The router asks for H1 as front port 1 (from F_1, G_1), broadcast.
    let asks: Vec<&Vec<u8>> = out
        .iter()
        .filter(|f| arp_of(f) == Some((1, F1, G1, H1_IP)))
        .collect();
    assert_eq!(asks.len(), 1, "{out:?}");
    assert_eq!(asks[0][0..6], BROADCAST);
    assert_eq!(asks[0][6..12], F1);

    // Once resolved, the UDP frame leaves to H1 from F_1, TTL 63.
    let forwarded: Vec<&Vec<u8>> = out
        .iter()
        .filter(|f| ip_of(f).is_some_and(|ip| ip.next_header() == IpProtocol::UDP))
        .collect();
    assert_eq!(forwarded.len(), 1, "{out:?}");
    let f = forwarded[0];
    assert_eq!(f[0..6], H1, "to the next hop's MAC");
    assert_eq!(f[6..12], F1, "from front port 1's MAC");
    let ip = ip_of(f).unwrap();
    assert_eq!(ip.ident(), 0x400);
    assert_eq!(ip.hop_limit(), 63);
    assert_eq!(ip.src_addr(), Ipv4Addr::from(H0_IP));

    // The echo reply and the time exceeded go back to H0 from G_0 and
    // F_0, after the router resolved H0 as front port 0.
    assert!(
        out.iter().any(|f| arp_of(f) == Some((1, F0, G0, H0_IP))),
        "{out:?}"
    );
    let icmp: Vec<(u8, [u8; 6], [u8; 6], Ipv4Addr)> = out
        .iter()
        .filter_map(|f| {
            let ip = ip_of(f)?;
            (ip.next_header() == IpProtocol::ICMP).then(|| {
                (
                    ip.payload()[0],
                    f[0..6].try_into().unwrap(),
                    f[6..12].try_into().unwrap(),
                    ip.src_addr(),
                )
            })
        })
        .collect();
    assert!(
        icmp.contains(&(0, H0, F0, Ipv4Addr::from(G0))),
        "echo reply: {icmp:?}"
    );
    assert!(
        icmp.contains(&(11, H0, F0, Ipv4Addr::from(G0))),
        "time exceeded: {icmp:?}"
    );
    assert_eq!(icmp.len(), 2, "{icmp:?}");

    // Nothing else left; the frame for r2 was counted and dropped.
    assert_eq!(out.len(), 4 + 2 + 1 + 2, "{out:?}");
    let demux = counters_of(&counters, "demux");
    assert!(demux.contains("unknown_tag=1"), "{demux}");
    let probe = counters_of(&counters, "probe");
    assert!(
        probe.contains("probes=1") && probe.contains("replies=4"),
        "{probe}"
    );
}
