//! Golden test of the IPv6 half of conf/dual-stack-router.click: frames
//! built here byte by byte (Neighbor Discovery, echo, forwarded UDP, and
//! every error case) go in on captures, run on the capture clock, and the
//! captures that come out must equal the checked-in ones in
//! tests/golden/dual-stack/ byte for byte. `BRICKS_BLESS=1` rewrites them
//! after a deliberate change. Besides the byte comparison, the test
//! asserts what each output frame means, so that a wrong capture cannot be
//! blessed unnoticed.

#[allow(dead_code)] // the helpers this test does not use
mod common;

use bricks_wire::icmpv6::Icmpv6Packet;
use bricks_wire::udp::UdpPacket;
use common::{read_pcap, root, write_pcap};
use std::net::Ipv6Addr;
use std::process::Command;

const ROUTER0: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x01];
const ROUTER1: [u8; 6] = [0x02, 0, 0, 0, 0x02, 0x01];
const H1_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x02];
const H2_MAC: [u8; 6] = [0x02, 0, 0, 0, 0x02, 0x02];
/// The far link's MTU, given to the router as MTU1.
const MTU1: usize = 1400;

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

fn gw0() -> Ipv6Addr {
    a("2001:db8:1::1")
}
fn gw1() -> Ipv6Addr {
    a("2001:db8:2::1")
}
fn h1() -> Ipv6Addr {
    a("2001:db8:1::2")
}
fn h2() -> Ipv6Addr {
    a("2001:db8:2::2")
}

/// An Ethernet frame holding an IPv6 packet.
fn frame(dst: [u8; 6], src: [u8; 6], ip: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + ip.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(ip);
    f
}

/// An IPv6 packet: header, then `payload` (extension headers included).
fn ip6(src: Ipv6Addr, dst: Ipv6Addr, next: u8, hlim: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    p.extend_from_slice(&[next, hlim]);
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    p.extend_from_slice(payload);
    p
}

/// A UDP datagram from port 40000 to port `port` with `len` bytes of
/// payload, its checksum filled in for `src` and `dst`.
fn udp(src: Ipv6Addr, dst: Ipv6Addr, port: u16, len: usize) -> Vec<u8> {
    let mut u = vec![0x9c, 0x40];
    u.extend_from_slice(&port.to_be_bytes());
    u.extend_from_slice(&((8 + len) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend((0..len).map(|i| i as u8));
    UdpPacket::new_unchecked(&mut u[..]).fill_checksum_v6(src, dst);
    u
}

/// An ICMPv6 message of `kind` and `code` with `body` after the first
/// four bytes, its checksum filled in.
fn icmp6(src: Ipv6Addr, dst: Ipv6Addr, kind: u8, code: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![kind, code, 0, 0];
    m.extend_from_slice(body);
    Icmpv6Packet::new_unchecked(&mut m[..]).fill_checksum(src, dst);
    m
}

/// A Neighbor Solicitation from `src` (link-layer address `mac`) for
/// `target`, sent to the target's solicited-node group.
fn solicitation(src: Ipv6Addr, mac: [u8; 6], target: Ipv6Addr, hlim: u8) -> Vec<u8> {
    let t = target.octets();
    let group = Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(t[13]),
        u16::from_be_bytes([t[14], t[15]]),
    );
    let mut body = vec![0; 4];
    body.extend_from_slice(&t);
    body.extend_from_slice(&[1, 1]);
    body.extend_from_slice(&mac);
    let m = icmp6(src, group, 135, 0, &body);
    frame(
        [0x33, 0x33, 0xff, t[13], t[14], t[15]],
        mac,
        &ip6(src, group, 58, hlim, &m),
    )
}

/// `count` UDP packets from h1 to `dst` with hop limit `hlim`.
fn from_h1(dst: Ipv6Addr, hlim: u8, port: u16, len: usize) -> Vec<u8> {
    frame(
        ROUTER0,
        H1_MAC,
        &ip6(h1(), dst, 17, hlim, &udp(h1(), dst, port, len)),
    )
}

/// What came out, as (ICMPv6 type, code, the four bytes after the
/// checksum, IPv6 source, IPv6 payload length) per ICMPv6 frame to h1.
fn icmp_to_h1(frames: &[Vec<u8>]) -> Vec<(u8, u8, u32, Ipv6Addr, usize)> {
    frames
        .iter()
        .filter(|f| f.len() >= 62 && f[12..14] == [0x86, 0xdd] && f[20] == 58)
        .filter(|f| f[38..54] == h1().octets())
        .map(|f| {
            assert_eq!(&f[0..6], &H1_MAC, "to h1's MAC");
            assert_eq!(&f[6..12], &ROUTER0, "from the router's eth0 MAC");
            let src = Ipv6Addr::from(<[u8; 16]>::try_from(&f[22..38]).unwrap());
            let dst = h1();
            let m = Icmpv6Packet::new_unchecked(&f[54..]);
            assert!(m.verify_checksum(src, dst), "checksum of {f:02x?}");
            let rest = u32::from_be_bytes([f[58], f[59], f[60], f[61]]);
            let plen = usize::from(u16::from_be_bytes([f[18], f[19]]));
            assert_eq!(plen, f.len() - 54, "payload length");
            (f[54], f[55], rest, src, plen)
        })
        .collect()
}

#[test]
fn dual_stack_router_ipv6_on_captures() {
    let tmp = tempfile::tempdir().unwrap();
    let mut eth0 = Vec::new();
    let mut eth1 = Vec::new();
    // 1: h1 asks for the router (and so teaches it h1's MAC).
    eth0.push((1000, solicitation(h1(), H1_MAC, gw0(), 255)));
    // 2: a ping to the router.
    let echo = icmp6(
        h1(),
        gw0(),
        128,
        0,
        &[0x12, 0x34, 0, 1, b'b', b'r', b'i', b'x'],
    );
    eth0.push((
        2000,
        frame(ROUTER0, H1_MAC, &ip6(h1(), gw0(), 58, 64, &echo)),
    ));
    // 3: h1 -> h2: the router solicits h2, h2 answers, the packet leaves.
    eth0.push((3000, from_h1(h2(), 64, 3, 16)));
    let mut na = vec![0x60, 0, 0, 0];
    na.extend_from_slice(&h2().octets());
    na.extend_from_slice(&[2, 1]);
    na.extend_from_slice(&H2_MAC);
    let na = icmp6(h2(), gw1(), 136, 0, &na);
    eth1.push((
        3500,
        frame(ROUTER1, H2_MAC, &ip6(h2(), gw1(), 58, 255, &na)),
    ));
    // h1 answers the router's probes of its address (RFC 4861 section
    // 7.3.3: the entry learnt from h1's solicitation goes STALE, DELAY,
    // then PROBE as packets use it), as a Linux host would.
    let mut na1 = vec![0x60, 0, 0, 0];
    na1.extend_from_slice(&h1().octets());
    na1.extend_from_slice(&[2, 1]);
    na1.extend_from_slice(&H1_MAC);
    let na1 = icmp6(h1(), gw0(), 136, 0, &na1);
    for t in [7100, 8100, 9100, 12100] {
        eth0.push((t, frame(ROUTER0, H1_MAC, &ip6(h1(), gw0(), 58, 255, &na1))));
    }
    // 4: hop limit 1: time exceeded.
    eth0.push((5000, from_h1(h2(), 1, 4, 16)));
    // 5: no route: destination unreachable, no route.
    eth0.push((6000, from_h1(a("2001:db8:99::1"), 64, 5, 16)));
    // 6: larger than the far link's MTU: packet too big, MTU 1400.
    eth0.push((7000, from_h1(h2(), 64, 6, 1452)));
    // 7: a Hop-by-Hop option the router does not know, type 0x80 (discard
    // and report): parameter problem code 2 pointing at it (byte 42).
    let mut hbh = vec![17, 0, 0x80, 4, 0, 0, 0, 0];
    hbh.extend_from_slice(&udp(h1(), h2(), 7, 16));
    eth0.push((8000, frame(ROUTER0, H1_MAC, &ip6(h1(), h2(), 0, 64, &hbh))));
    // 8: a Type 0 Routing header with a segment left, to the router:
    // refused (RFC 5095), a parameter problem code 0 pointing at the
    // routing type (byte 42).
    let mut rh0 = vec![17, 2, 0, 1, 0, 0, 0, 0];
    rh0.extend_from_slice(&h2().octets());
    rh0.extend_from_slice(&udp(h1(), gw0(), 8, 16));
    eth0.push((
        9000,
        frame(ROUTER0, H1_MAC, &ip6(h1(), gw0(), 43, 64, &rh0)),
    ));
    // 9: a solicitation that crossed a router (hop limit 64): ignored.
    eth0.push((10000, solicitation(h1(), H1_MAC, gw0(), 64)));
    // 10: a large packet with hop limit 1: the error quotes it up to
    // 1280 bytes in all.
    eth0.push((11000, from_h1(h2(), 1, 10, 1300)));
    // 12: h1 asks for routers from its link-local address: a Router
    // Advertisement to all nodes within half a second.
    let ll1 = a("fe80::2");
    let mut rs = vec![0; 4];
    rs.extend_from_slice(&[1, 1]);
    rs.extend_from_slice(&H1_MAC);
    let rs = icmp6(ll1, a("ff02::2"), 133, 0, &rs);
    eth0.push((
        13000,
        frame(
            [0x33, 0x33, 0, 0, 0, 2],
            H1_MAC,
            &ip6(ll1, a("ff02::2"), 58, 255, &rs),
        ),
    ));
    // 11: a flood of 100 packets with hop limit 1 in one millisecond:
    // the errors are rate limited, to h1 by its own bucket (DEST_BURST 6,
    // then one a second) before the element's (BURST 50, then 1,000 a
    // second).
    for _ in 0..100 {
        eth0.push((20000, from_h1(h2(), 1, 11, 16)));
    }
    let (in0, in1) = (
        tmp.path().join("eth0-in.pcap"),
        tmp.path().join("eth1-in.pcap"),
    );
    eth0.sort_by_key(|f| f.0);
    write_pcap(&in0, &eth0, 1_700_000_000);
    write_pcap(&in1, &eth1, 1_700_000_000);
    let (out0, out1) = (
        tmp.path().join("eth0-out.pcap"),
        tmp.path().join("eth1-out.pcap"),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .current_dir(root())
        .args([
            "run",
            "conf/dual-stack-router.click",
            "--clock",
            "trace",
            "--quiet",
            "-D",
            &format!("MTU1={MTU1}"),
            "-d",
            &format!("eth0=pcap:{},{}", in0.display(), out0.display()),
            "-d",
            &format!("eth1=pcap:{},{}", in1.display(), out1.display()),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let gdir = root().join("tests/golden/dual-stack");
    let bless = std::env::var_os("BRICKS_BLESS").is_some();
    for (got, name) in [(&out0, "eth0-out.pcap"), (&out1, "eth1-out.pcap")] {
        let want = gdir.join(name);
        if bless {
            std::fs::create_dir_all(&gdir).unwrap();
            std::fs::copy(got, &want).unwrap();
        }
    }
    let e0 = read_pcap(&out0);
    let e1 = read_pcap(&out1);

    // 1: the advertisement, solicited, router, override, with the
    // router's MAC; and none for the hop-limit-64 solicitation (9).
    let all_nas: Vec<&Vec<u8>> = e0
        .iter()
        .filter(|f| f.len() >= 78 && f[12..14] == [0x86, 0xdd] && f[54] == 136)
        .collect();
    let (nas, unsolicited): (Vec<&Vec<u8>>, Vec<&Vec<u8>>) =
        all_nas.into_iter().partition(|f| f[58] & 0x40 != 0);
    assert_eq!(nas.len(), 1, "advertisements on eth0");
    let na = nas[0];
    assert_eq!(&na[0..6], &H1_MAC);
    assert_eq!(na[21], 255, "hop limit 255");
    assert_eq!(na[58] & 0xe0, 0xe0, "R, S and O set");
    assert_eq!(&na[62..78], &gw0().octets(), "target");

    // At start, three unsolicited advertisements of each of the router's
    // addresses on eth0 (its global and link-local ones), to all nodes,
    // R and O set (RFC 4861 section 7.2.6).
    assert_eq!(unsolicited.len(), 6, "unsolicited advertisements on eth0");
    for f in &unsolicited {
        assert_eq!(&f[0..6], &[0x33, 0x33, 0, 0, 0, 1]);
        assert_eq!(f[21], 255);
        assert_eq!(f[58] & 0xe0, 0xa0, "R and O, not S");
        assert_eq!(&f[22..38], &f[62..78], "from the target address");
    }

    // Router Advertisements on eth0: one at start, one in answer to h1's
    // solicitation (12), and a final one when the run ends, with the
    // router's MAC, the MTU and the prefix 2001:db8:1::/64, from fe80::1.
    // The final one has router lifetime 0 (RFC 4861 section 6.2.5), so
    // that hosts drop the router as default at once; it is the last
    // frame the router sent on each link.
    let is_ra =
        |f: &&Vec<u8>| f.len() >= 70 && f[12..14] == [0x86, 0xdd] && f[20] == 58 && f[54] == 134;
    let ras: Vec<&Vec<u8>> = e0.iter().filter(is_ra).collect();
    assert_eq!(ras.len(), 3, "router advertisements on eth0");
    let lifetimes: Vec<u16> = ras
        .iter()
        .map(|f| u16::from_be_bytes([f[60], f[61]]))
        .collect();
    assert_eq!(lifetimes, [1800, 1800, 0]);
    assert!(
        is_ra(&e0.last().unwrap()),
        "the final advertisement is last"
    );
    let last1 = e1.last().unwrap();
    assert!(is_ra(&last1) && last1[60..62] == [0, 0], "eth1's final one");
    for f in &ras {
        let src = Ipv6Addr::from(<[u8; 16]>::try_from(&f[22..38]).unwrap());
        assert_eq!(src, a("fe80::1"));
        assert_eq!(f[21], 255);
        assert!(Icmpv6Packet::new_unchecked(&f[54..]).verify_checksum(src, a("ff02::1")));
        // Source link-layer, MTU, then the prefix option.
        assert_eq!(&f[70..78], &[1, 1, 2, 0, 0, 0, 1, 1]);
        assert_eq!(&f[78..86], &[5, 1, 0, 0, 0, 0, 0x05, 0xdc]);
        assert_eq!(&f[86..90], &[3, 4, 64, 0xc0]);
        assert_eq!(
            &f[102..118],
            &gw0().octets()[..8]
                .iter()
                .chain(&[0u8; 8])
                .copied()
                .collect::<Vec<u8>>()[..]
        );
    }

    // 2: the echo reply.
    let icmp = icmp_to_h1(&e0);
    assert!(icmp.contains(&(129, 0, 0x1234_0001, gw0(), 12)), "{icmp:?}");

    // 3: the solicitation for h2 on eth1 (after the start-up
    // advertisements), then the packet, hop limit 63, to h2's MAC.
    let first = e1
        .iter()
        .position(|f| f.len() > 62 && (f[54] == 135 || f[20] == 17))
        .unwrap();
    let ns = &e1[first];
    assert!(ns.len() >= 86 && ns[54] == 135 && ns[62..78] == h2().octets());
    assert_eq!(&ns[0..6], &[0x33, 0x33, 0xff, 0, 0, 2]);
    // Before it only what the router sends at start: three unsolicited
    // advertisements of each of its eth1 addresses and one Router
    // Advertisement.
    let start: Vec<u8> = e1[..first].iter().map(|f| f[54]).collect();
    assert_eq!(start.iter().filter(|&&t| t == 136).count(), 6, "{start:?}");
    assert_eq!(start.iter().filter(|&&t| t == 134).count(), 1, "{start:?}");
    let fwd: Vec<&Vec<u8>> = e1.iter().filter(|f| f.len() > 62 && f[20] == 17).collect();
    assert_eq!(fwd.len(), 1, "only the first packet reaches h2");
    assert_eq!(&fwd[0][0..6], &H2_MAC);
    assert_eq!(&fwd[0][6..12], &ROUTER1);
    assert_eq!(fwd[0][21], 63);
    assert_eq!(u16::from_be_bytes([fwd[0][56], fwd[0][57]]), 3);

    // 4, 5, 6, 7: time exceeded, no route, packet too big (from the far
    // interface, where the MTU is), parameter problem at byte 42.
    assert!(
        icmp.contains(&(3, 0, 0, gw0(), 8 + 40 + 8 + 16)),
        "{icmp:?}"
    );
    assert!(
        icmp.contains(&(1, 0, 0, gw0(), 8 + 40 + 8 + 16)),
        "{icmp:?}"
    );
    assert!(
        icmp.iter()
            .any(|&(t, c, mtu, src, _)| (t, c, mtu, src) == (2, 0, MTU1 as u32, gw1())),
        "{icmp:?}"
    );
    assert!(
        icmp.iter()
            .any(|&(t, c, ptr, src, _)| (t, c, ptr, src) == (4, 2, 42, gw0())),
        "{icmp:?}"
    );
    // 8: parameter problem, erroneous header field, at the routing type.
    assert!(
        icmp.iter()
            .any(|&(t, c, ptr, src, _)| (t, c, ptr, src) == (4, 0, 42, gw0())),
        "{icmp:?}"
    );

    // 10: the quote of the large packet stops at 1280 bytes in all.
    assert!(
        icmp.iter()
            .any(|&(t, _, _, _, plen)| t == 3 && 40 + plen == 1280),
        "{icmp:?}"
    );

    // 11: the flood's errors are limited. Before it, two time exceeded
    // errors (4, 10) went to h1 from the same element; h1's bucket holds
    // 6 and refills one a second, so it is full again at 17 s, and the
    // flood gets 6 errors: one host cannot take the element's whole
    // budget of 50 (RFC 4443 section 2.4 (f), per destination as Linux).
    let exceeded = icmp.iter().filter(|e| e.0 == 3).count();
    assert_eq!(exceeded, 2 + 6, "{icmp:?}");

    // Byte for byte against the checked-in captures.
    for (got, name) in [(&out0, "eth0-out.pcap"), (&out1, "eth1-out.pcap")] {
        let want = gdir.join(name);
        let w = std::fs::read(&want)
            .unwrap_or_else(|e| panic!("{}: {e} (run with BRICKS_BLESS=1 once)", want.display()));
        assert!(
            std::fs::read(got).unwrap() == w,
            "{name} differs from {}",
            want.display()
        );
    }
}
