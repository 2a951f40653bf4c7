//! The XDP fast path between real Linux hosts:
//!
//! ```text
//! h1 e0 10.9.1.2/24 -- ra  r  rb -- e0 10.9.2.2/24 h2
//! ```
//!
//! `r` has no addresses and never forwards in its stack: its interfaces
//! run AF_XDP queues whose XDP program is a fast path, `ra`'s forwarding
//! to `rb` and `rb`'s to `ra`. The hosts reach each other through static
//! neighbour entries for their gateways (the router answers no ARP).
//! Frames the fast path must not forward are built by hand, sent from
//! `h1`, and must reach the AF_XDP socket of `ra` byte for byte; frames it
//! forwards must reach `h2` with the TTL decremented, the checksum still
//! right and the new Ethernet addresses.
//!
//! The outputs are veths: a frame redirected into one reaches its peer
//! only while the peer has NAPI on, so the hosts' ends get GRO on.

use bricks_io::live::{self, Backend, DeviceSpec, Spread};
use bricks_io::steer::Steering;
use bricks_io::xdp::{self, FastPath, FastPathPort, FastPathSpec, XdpConfig, XdpRx, XdpTx};
use bricks_io::RxQueue;
use bricks_netns::{in_namespace, output_timeout, skip_unless_root, Network, RawSocket};
use bricks_packet::Batch;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a test waits for frames that should come.
const PATIENCE: Duration = Duration::from_secs(3);
/// How long it listens for frames that should not come.
const QUIET: Duration = Duration::from_millis(300);
/// Marks the frames a test built (other traffic is ignored).
const MAGIC: &[u8; 8] = b"bricksFP";

const H1: Ipv4Addr = Ipv4Addr::new(10, 9, 1, 2);
const H2: Ipv4Addr = Ipv4Addr::new(10, 9, 2, 2);

fn parse_mac(s: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (b, p) in m.iter_mut().zip(s.split(':')) {
        *b = u8::from_str_radix(p, 16).unwrap();
    }
    m
}

/// The three namespaces, the links, the hosts' addresses and routes.
struct Net {
    net: Network,
    h1_mac: [u8; 6],
    h2_mac: [u8; 6],
    a_mac: [u8; 6],
    b_mac: [u8; 6],
}

impl Net {
    fn new(tag: &str) -> Net {
        let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
        for n in ["h1", "r", "h2"] {
            net.add_namespace(n).unwrap();
            // No router solicitation or MLD report among the test frames.
            for key in [
                "net.ipv6.conf.all.disable_ipv6",
                "net.ipv6.conf.default.disable_ipv6",
            ] {
                net.sysctl(n, key, "1").unwrap();
            }
        }
        net.add_link("h1", "e0", "r", "ra", 1).unwrap();
        net.add_link("r", "rb", "h2", "e0", 1).unwrap();
        net.add_addr("h1", "e0", "10.9.1.2/24").unwrap();
        net.add_addr("h2", "e0", "10.9.2.2/24").unwrap();
        net.add_route("h1", &["10.9.0.0/16", "via", "10.9.1.1"])
            .unwrap();
        net.add_route("h2", &["10.9.0.0/16", "via", "10.9.2.1"])
            .unwrap();
        let mac = |ns, ifname| parse_mac(&net.mac(ns, ifname).unwrap());
        let (h1_mac, h2_mac, a_mac, b_mac) = (
            mac("h1", "e0"),
            mac("h2", "e0"),
            mac("r", "ra"),
            mac("r", "rb"),
        );
        for (ns, gw, ifname) in [("h1", "10.9.1.1", "ra"), ("h2", "10.9.2.1", "rb")] {
            let lladdr = net.mac("r", ifname).unwrap();
            let full = net.ns_name(ns);
            bricks_netns::ip(&[
                "-n",
                &full,
                "neigh",
                "add",
                gw,
                "lladdr",
                &lladdr,
                "dev",
                "e0",
                "nud",
                "permanent",
            ])
            .unwrap();
        }
        // NAPI on the peers, so that they take frames redirected to them.
        for ns in ["h1", "h2"] {
            let out = net.exec(ns, &["ethtool", "-K", "e0", "gro", "on"]).output();
            match out {
                Ok(o) if o.status.success() => {}
                other => panic!("ethtool -K e0 gro on in {ns}: {other:?}"),
            }
        }
        Net {
            net,
            h1_mac,
            h2_mac,
            a_mac,
            b_mac,
        }
    }

    fn ns(&self, name: &str) -> String {
        self.net.ns_name(name)
    }
}

/// An Ethernet/IPv4/UDP frame from h1 to `dst` with `ttl` and IP
/// `options` (a multiple of 4 bytes), carrying [`MAGIC`] and `seq`.
fn frame(n: &Net, dst: Ipv4Addr, ttl: u8, options: &[u8], seq: u32) -> Vec<u8> {
    let ihl = 20 + options.len();
    let payload: Vec<u8> = MAGIC.iter().copied().chain(seq.to_be_bytes()).collect();
    let udp_len = 8 + payload.len();
    let mut f = Vec::new();
    f.extend_from_slice(&n.a_mac);
    f.extend_from_slice(&n.h1_mac);
    f.extend_from_slice(&[0x08, 0x00]);
    let mut ip = vec![0u8; ihl];
    ip[0] = 0x40 | (ihl / 4) as u8;
    ip[2..4].copy_from_slice(&((ihl + udp_len) as u16).to_be_bytes());
    ip[8] = ttl;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&H1.octets());
    ip[16..20].copy_from_slice(&dst.octets());
    ip[20..].copy_from_slice(options);
    let sum = checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&40000u16.to_be_bytes());
    f.extend_from_slice(&9u16.to_be_bytes());
    f.extend_from_slice(&(udp_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]); // no UDP checksum
    f.extend_from_slice(&payload);
    f
}

/// The Internet checksum of `b` (RFC 1071), as stored in a header.
fn checksum(b: &[u8]) -> u16 {
    !bricks_wire::checksum::data(b)
}

/// The sequence number of a frame a test built, if it is one.
fn seq_of(f: &[u8]) -> Option<u32> {
    let at = f.windows(MAGIC.len()).position(|w| w == MAGIC)?;
    let s = f.get(at + 8..at + 12)?;
    Some(u32::from_be_bytes(s.try_into().ok()?))
}

/// What `frame` becomes after one hop through the fast path to `dst_mac`
/// from `src_mac`.
fn forwarded(f: &[u8], src_mac: [u8; 6], dst_mac: [u8; 6]) -> Vec<u8> {
    let mut g = f.to_vec();
    g[0..6].copy_from_slice(&dst_mac);
    g[6..12].copy_from_slice(&src_mac);
    let ihl = usize::from(g[14] & 0xf) * 4;
    g[14 + 8] -= 1;
    g[24..26].copy_from_slice(&[0, 0]);
    let sum = checksum(&g[14..14 + ihl]);
    g[24..26].copy_from_slice(&sum.to_be_bytes());
    g
}

/// A raw socket on `ifname` in namespace `ns`.
fn raw_socket(ns: &str, ifname: &'static str) -> RawSocket {
    in_namespace(ns, move || RawSocket::open(ifname))
}

/// Frames a test built that arrive at `sock` within `wait` (stops early
/// once `want` arrived).
fn host_frames(sock: &RawSocket, want: usize, wait: Duration) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    let t = Instant::now();
    while got.len() < want && t.elapsed() < wait {
        match sock.recv() {
            Some(f) if seq_of(&f).is_some() => got.push(f),
            Some(_) => {}
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    got
}

/// Every frame the AF_XDP socket `rx` receives within `wait` (stops
/// early once `want` frames a test built arrived).
fn xsk_frames(rx: &mut XdpRx, want: usize, wait: Duration) -> Vec<Vec<u8>> {
    let mut got: Vec<Vec<u8>> = Vec::new();
    let t = Instant::now();
    while got.iter().filter(|f| seq_of(f).is_some()).count() < want && t.elapsed() < wait {
        let mut b = Batch::new();
        if rx.recv(&mut b, 32).unwrap() == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
        got.extend(b.iter().map(|p| p.data().to_vec()));
    }
    got
}

/// An ICMP echo request or reply between the hosts.
fn is_ping(f: &[u8]) -> bool {
    f.len() >= 34 && f[12..14] == [0x08, 0x00] && f[23] == 1
}

/// The fast paths of `a` (to `b`) and `b` (to `a`), made in `r`, with
/// their AF_XDP queues open.
struct Router {
    fa: FastPath,
    fb: FastPath,
    a: (XdpRx, XdpTx),
    b: (XdpRx, XdpTx),
}

/// Output numbers of `a`'s fast path.
const TO_H2: u32 = 1;
/// The same port with no static destination: neighbour entries.
const TO_H2_BY_ARP: u32 = 2;
/// The same port with an MTU of 32 bytes.
const TO_H2_SMALL: u32 = 3;

fn router(n: &Net) -> Router {
    let (a_mac, b_mac, h1_mac, h2_mac) = (n.a_mac, n.b_mac, n.h1_mac, n.h2_mac);
    in_namespace(&n.ns("r"), move || {
        let port = |ifname: &str, src_mac, dst_mac| {
            Some(FastPathPort {
                ifname: ifname.into(),
                src_mac,
                dst_mac,
                mtu: 1500,
            })
        };
        let fa = FastPath::new(
            "ra",
            FastPathSpec {
                ports: vec![
                    None,
                    port("rb", b_mac, Some(h2_mac)),
                    port("rb", b_mac, None),
                    Some(FastPathPort {
                        mtu: 32,
                        ..port("rb", b_mac, Some(h2_mac)).unwrap()
                    }),
                ],
                bad_src: vec![Ipv4Addr::new(10, 9, 1, 99)],
                accept_dst: Some(a_mac),
                max_routes: 16,
                max_neighbours: 16,
            },
        )
        .unwrap();
        let fb = FastPath::new(
            "rb",
            FastPathSpec {
                ports: vec![port("ra", a_mac, Some(h1_mac))],
                bad_src: Vec::new(),
                accept_dst: None,
                max_routes: 16,
                max_neighbours: 16,
            },
        )
        .unwrap();
        assert_eq!(fa.mode(), None, "attached before any queue opened");
        fa.set_route(Ipv4Addr::new(10, 9, 2, 0), 24, TO_H2, None)
            .unwrap();
        fa.set_route(Ipv4Addr::new(10, 9, 4, 0), 24, TO_H2_BY_ARP, Some(H2))
            .unwrap();
        fa.set_route(Ipv4Addr::new(10, 9, 5, 0), 24, FastPath::SLOW, None)
            .unwrap();
        fa.set_route(Ipv4Addr::new(10, 9, 7, 0), 24, TO_H2_SMALL, None)
            .unwrap();
        fb.set_route(Ipv4Addr::new(10, 9, 1, 0), 24, 0, None)
            .unwrap();
        let cfg = |fp: &FastPath| XdpConfig {
            fast_path: Some(fp.clone()),
            ..XdpConfig::default()
        };
        let a = xdp::open_queue("ra", 0, &cfg(&fa)).unwrap();
        let b = xdp::open_queue("rb", 0, &cfg(&fb)).unwrap();
        Router { fa, fb, a, b }
    })
}

#[test]
fn ping_crosses_the_router_in_the_kernel_and_not_through_the_socket() {
    if skip_unless_root("ping_crosses_the_router_in_the_kernel_and_not_through_the_socket")
        .is_some()
    {
        return;
    }
    let n = Net::new("fp1");
    let mut r = router(&n);
    assert_eq!(r.fa.mode(), Some("native"));
    assert_eq!(r.fb.mode(), Some("native"));
    eprintln!("fast path on veth: {}", r.a.0.mode());
    let out = output_timeout(
        &mut n.net.exec(
            "h1",
            &["ping", "-c", "3", "-i", "0.2", "-W", "2", "10.9.2.2"],
        ),
        Duration::from_secs(10),
    )
    .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ping failed: {printed}");
    let (sa, sb) = (r.fa.stats(), r.fb.stats());
    eprintln!("a: {sa:?}\nb: {sb:?}");
    assert!(sa.forwarded >= 3, "requests not forwarded: {sa:?}");
    assert!(sb.forwarded >= 3, "replies not forwarded: {sb:?}");
    // 98-byte echo frames (56 bytes of data).
    assert!(sa.forwarded_bytes >= 3 * 98, "{sa:?}");
    for (name, rx) in [("a", &mut r.a.0), ("b", &mut r.b.0)] {
        let pings: Vec<_> = xsk_frames(rx, 1, QUIET)
            .into_iter()
            .filter(|f| is_ping(f))
            .collect();
        assert!(pings.is_empty(), "{name}'s socket got pings: {pings:?}");
    }
    // The last queue closing detaches the program; the maps stay.
    drop(r.a);
    assert_eq!(r.fa.mode(), None);
    assert!(r.fa.stats().forwarded >= 3);
    r.fa.set_route(Ipv4Addr::new(10, 9, 6, 0), 24, TO_H2, None)
        .unwrap();
    let shown = n
        .net
        .exec("r", &["ip", "link", "show", "dev", "ra"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&shown.stdout).contains("xdp"));
}

#[test]
fn what_the_fast_path_must_not_forward_reaches_the_socket_unchanged() {
    if skip_unless_root("what_the_fast_path_must_not_forward_reaches_the_socket_unchanged")
        .is_some()
    {
        return;
    }
    let n = Net::new("fp2");
    let mut r = router(&n);
    let h1 = raw_socket(&n.ns("h1"), "e0");
    let h2 = raw_socket(&n.ns("h2"), "e0");
    let nop4 = [1u8, 1, 1, 0]; // three NOPs and an end of options
                               // (frame, the reason counted)
    let cases = [
        (frame(&n, H2, 1, &[], 1), "ttl"),
        (frame(&n, H2, 64, &nop4, 2), "ip_options"),
        (
            frame(&n, Ipv4Addr::new(10, 9, 3, 2), 64, &[], 3),
            "no_route",
        ),
        (
            frame(&n, Ipv4Addr::new(10, 9, 4, 7), 64, &[], 4),
            "no_neighbour",
        ),
        (
            frame(&n, Ipv4Addr::new(10, 9, 5, 7), 64, &[], 5),
            "slow_output",
        ),
        (
            frame(&n, Ipv4Addr::new(127, 0, 0, 1), 64, &[], 6),
            "bad_address",
        ),
        (
            {
                let mut f = frame(&n, H2, 64, &[], 7);
                f[24] ^= 0xff; // a wrong header checksum
                f
            },
            "bad_header",
        ),
        (
            {
                let mut f = frame(&n, H2, 64, &[], 8);
                f[0] |= 1; // an Ethernet multicast destination
                f
            },
            "l2_multicast",
        ),
        (
            {
                let mut f = frame(&n, H2, 64, &[], 13);
                f[5] ^= 0x55; // unicast to another host's MAC
                f
            },
            "other_host",
        ),
        (
            {
                let mut f = frame(&n, H2, 64, &[], 9);
                f.extend_from_slice(&[0; 4]); // Ethernet padding
                f
            },
            "bad_header",
        ),
        // 40 bytes of IPv4 for an MTU of 32.
        (
            frame(&n, Ipv4Addr::new(10, 9, 7, 7), 64, &[], 10),
            "too_big",
        ),
        (
            {
                let mut f = frame(&n, H2, 64, &[], 11);
                f[12..14].copy_from_slice(&[0x08, 0x06]); // not IPv4
                f
            },
            "not_ipv4",
        ),
        (
            {
                // A VLAN tag before an IPv4 header.
                let f = frame(&n, H2, 64, &[], 12);
                [&f[..12], &[0x81, 0x00, 0x00, 0x07], &f[12..]].concat()
            },
            "not_ipv4",
        ),
    ];
    let before = r.fa.stats();
    for (f, _) in &cases {
        h1.send(f);
    }
    let got: Vec<Vec<u8>> = xsk_frames(&mut r.a.0, cases.len(), PATIENCE)
        .into_iter()
        .filter(|f| seq_of(f).is_some())
        .collect();
    for (f, why) in &cases {
        let seq = seq_of(f).unwrap();
        let at_socket: Vec<_> = got.iter().filter(|g| seq_of(g) == Some(seq)).collect();
        assert_eq!(at_socket, vec![f], "frame {seq} ({why}) at the socket");
    }
    let after = r.fa.stats();
    eprintln!("{after:?}");
    assert_eq!(after.forwarded, before.forwarded, "{after:?}");
    let mut expected = std::collections::BTreeMap::new();
    for (_, why) in &cases {
        *expected.entry(*why).or_insert(0u64) += 1;
    }
    for (why, k) in expected {
        assert_eq!(
            after.reason(why) - before.reason(why),
            k,
            "{why}: {after:?}"
        );
    }
    assert!(host_frames(&h2, 1, QUIET).is_empty(), "h2 got a frame");

    // With the neighbour known, the same frame is forwarded to it.
    r.fa.set_neighbour(TO_H2_BY_ARP, H2, n.h2_mac).unwrap();
    assert!(r.fa.set_neighbour(9, H2, n.h2_mac).is_err(), "no output 9");
    let (f4, _) = &cases[3];
    h1.send(f4);
    let at_h2 = host_frames(&h2, 1, PATIENCE);
    assert_eq!(at_h2, vec![forwarded(f4, n.b_mac, n.h2_mac)]);
    let after_arp = r.fa.stats();
    assert_eq!(after_arp.forwarded, after.forwarded + 1);
    assert_eq!(
        after_arp.forwarded_bytes,
        after.forwarded_bytes + f4.len() as u64
    );
    // Forgotten again, it goes to user space again.
    r.fa.remove_neighbour(TO_H2_BY_ARP, H2);
    h1.send(f4);
    let got = xsk_frames(&mut r.a.0, 1, PATIENCE);
    assert!(got.contains(f4), "not at the socket after remove_neighbour");
    assert_eq!(
        r.fa.stats().reason("no_neighbour"),
        after.reason("no_neighbour") + 1
    );
}

#[test]
fn a_removed_route_sends_its_traffic_to_user_space_again() {
    if skip_unless_root("a_removed_route_sends_its_traffic_to_user_space_again").is_some() {
        return;
    }
    let n = Net::new("fp3");
    let mut r = router(&n);
    let h1 = raw_socket(&n.ns("h1"), "e0");
    let h2 = raw_socket(&n.ns("h2"), "e0");
    // Forwarded, byte for byte as one hop changes it.
    let f = frame(&n, H2, 64, &[], 1);
    h1.send(&f);
    assert_eq!(
        host_frames(&h2, 1, PATIENCE),
        vec![forwarded(&f, n.b_mac, n.h2_mac)]
    );
    // A source on the bad list goes to user space.
    let mut bad = frame(&n, H2, 64, &[], 2);
    bad[26..30].copy_from_slice(&[10, 9, 1, 99]);
    bad[24..26].copy_from_slice(&[0, 0]);
    let sum = checksum(&bad[14..34]);
    bad[24..26].copy_from_slice(&sum.to_be_bytes());
    h1.send(&bad);
    assert!(xsk_frames(&mut r.a.0, 1, PATIENCE).contains(&bad));
    assert_eq!(r.fa.stats().reason("bad_address"), 1);

    r.fa.remove_route(Ipv4Addr::new(10, 9, 2, 0), 24).unwrap();
    // Missing is no error; neither is a prefix with host bits.
    r.fa.remove_route(Ipv4Addr::new(10, 9, 2, 0), 24).unwrap();
    assert!(r.fa.remove_route(Ipv4Addr::new(10, 9, 2, 0), 33).is_err());
    let g = frame(&n, H2, 64, &[], 3);
    h1.send(&g);
    let got: Vec<_> = xsk_frames(&mut r.a.0, 1, PATIENCE)
        .into_iter()
        .filter(|f| seq_of(f).is_some())
        .collect();
    assert_eq!(got, vec![g.clone()]);
    assert_eq!(r.fa.stats().reason("no_route"), 1);
    assert!(host_frames(&h2, 1, QUIET).is_empty());
    // And set again (host bits ignored), forwarded again.
    r.fa.set_route(Ipv4Addr::new(10, 9, 2, 77), 24, TO_H2, None)
        .unwrap();
    h1.send(&g);
    assert_eq!(
        host_frames(&h2, 1, PATIENCE),
        vec![forwarded(&g, n.b_mac, n.h2_mac)]
    );
    assert_eq!(r.fa.stats().forwarded, 2);
    drop(r.fb);
}

#[test]
fn queues_and_backends_that_disagree_with_the_fast_path_are_refused() {
    if skip_unless_root("queues_and_backends_that_disagree_with_the_fast_path_are_refused")
        .is_some()
    {
        return;
    }
    let mut net = Network::new(&Network::unique_prefix("fp4")).unwrap();
    net.add_namespace("a").unwrap();
    net.add_namespace("b").unwrap();
    net.add_link("a", "va", "b", "vb", 2).unwrap();
    net.add_link("a", "wa", "b", "wb", 1).unwrap();
    let errs = in_namespace(&net.ns_name("b"), || {
        let spec = || FastPathSpec {
            max_routes: 4,
            max_neighbours: 4,
            ..FastPathSpec::default()
        };
        let mut errs = Vec::new();
        let e = |r: Result<_, bricks_io::DeviceError>| r.err().map(|e| e.to_string());
        errs.push(e(FastPath::new("nope0", spec()).map(drop)));
        errs.push(e(FastPath::new(
            "vb",
            FastPathSpec {
                ports: vec![Some(FastPathPort {
                    ifname: "nope1".into(),
                    src_mac: [2, 0, 0, 0, 0, 1],
                    dst_mac: None,
                    mtu: 0,
                })],
                ..spec()
            },
        )
        .map(drop)));
        let fp = FastPath::new("vb", spec()).unwrap();
        let other = FastPath::new("vb", spec()).unwrap();
        let with = |fp: &FastPath| XdpConfig {
            fast_path: Some(fp.clone()),
            ..XdpConfig::default()
        };
        // Made for vb, not for wb.
        errs.push(e(xdp::open_queue("wb", 0, &with(&fp)).map(drop)));
        let q0 = xdp::open_queue("vb", 0, &with(&fp)).unwrap();
        errs.push(e(xdp::open_queue("vb", 1, &XdpConfig::default()).map(drop)));
        errs.push(e(xdp::open_queue("vb", 1, &with(&other)).map(drop)));
        // The same one is fine, and equal to its clone only.
        let q1 = xdp::open_queue("vb", 1, &with(&fp.clone())).unwrap();
        assert_eq!(fp, fp.clone());
        assert_ne!(fp, other);
        assert!(format!("{fp:?}").contains("vb"));
        drop((q0, q1));
        assert_eq!(fp.mode(), None);

        // BACKEND packet cannot run it; auto does not fall back.
        let declare_and_open = |backend: Backend| {
            live::reset();
            let mut spec = DeviceSpec::new("vb");
            spec.backend = backend;
            spec.fast_path = Some(fp.clone());
            live::declare(spec).unwrap();
            let r = live::open_declared(1, Spread::PerCore, Arc::new(Steering::new(1)));
            live::reset();
            r.err().map(|e| e.to_string())
        };
        errs.push(declare_and_open(Backend::Packet));
        let foreign = xdp::attach_pass("vb", xdp::XdpMode::Auto).unwrap();
        errs.push(declare_and_open(Backend::Auto));
        drop(foreign);
        // Two fast paths for one interface are refused at declaration.
        live::reset();
        let mut s1 = DeviceSpec::new("vb");
        s1.fast_path = Some(fp.clone());
        let mut s2 = DeviceSpec::new("vb");
        s2.fast_path = Some(other.clone());
        live::declare(s1).unwrap();
        errs.push(live::declare(s2).err());
        live::reset();
        errs
    });
    let expect = [
        "no interface `nope0`",
        "output 0: no interface `nope1`",
        "made for vb",
        "with a fast path, and this one asks for none",
        "with a different fast path",
        "fast path needs AF_XDP",
        "already carries an XDP program",
        "two different fast paths",
    ];
    for (e, want) in errs.iter().zip(expect) {
        let e = e.as_deref().unwrap_or("(no error)");
        eprintln!("{e}");
        assert!(e.contains(want), "expected `{want}`: {e}");
    }
    assert_eq!(errs.len(), expect.len());
}

#[test]
fn the_fast_path_forwards_in_generic_mode_too() {
    if skip_unless_root("the_fast_path_forwards_in_generic_mode_too").is_some() {
        return;
    }
    let n = Net::new("fp5");
    let (b_mac, h2_mac) = (n.b_mac, n.h2_mac);
    let (fa, mut q) = in_namespace(&n.ns("r"), move || {
        let fa = FastPath::new(
            "ra",
            FastPathSpec {
                ports: vec![Some(FastPathPort {
                    ifname: "rb".into(),
                    src_mac: b_mac,
                    dst_mac: Some(h2_mac),
                    mtu: 0,
                })],
                bad_src: Vec::new(),
                accept_dst: None,
                max_routes: 1,
                max_neighbours: 0,
            },
        )
        .unwrap();
        fa.set_route(Ipv4Addr::new(10, 9, 2, 0), 24, 0, None)
            .unwrap();
        let cfg = XdpConfig {
            mode: xdp::XdpMode::Generic,
            fast_path: Some(fa.clone()),
            ..XdpConfig::default()
        };
        let q = xdp::open_queue("ra", 0, &cfg).unwrap();
        (fa, q)
    });
    assert_eq!(fa.mode(), Some("generic"));
    assert_eq!(q.0.mode(), "generic copy");
    let h1 = raw_socket(&n.ns("h1"), "e0");
    let h2 = raw_socket(&n.ns("h2"), "e0");
    let f = frame(&n, H2, 64, &[], 1);
    h1.send(&f);
    assert_eq!(
        host_frames(&h2, 1, PATIENCE),
        vec![forwarded(&f, n.b_mac, n.h2_mac)]
    );
    // One route fills the trie of one.
    let full = fa.set_route(Ipv4Addr::new(10, 9, 3, 0), 24, 0, None);
    assert!(full.is_err(), "a second route in a trie of one");
    let g = frame(&n, H2, 1, &[], 2);
    h1.send(&g);
    assert!(xsk_frames(&mut q.0, 1, PATIENCE).contains(&g));
    let s = fa.stats();
    assert_eq!((s.forwarded, s.reason("ttl")), (1, 1), "{s:?}");
    drop(q);
    assert_eq!(fa.mode(), None);
}

#[test]
fn frames_for_an_output_that_went_away_reach_the_socket() {
    if skip_unless_root("frames_for_an_output_that_went_away_reach_the_socket").is_some() {
        return;
    }
    let n = Net::new("fp6");
    let r = n.ns("r");
    for args in [
        &["link", "add", "rc", "type", "veth", "peer", "name", "rd"][..],
        &["link", "set", "rc", "up"][..],
        &["link", "set", "rd", "up"][..],
    ] {
        let mut full = vec!["-n", r.as_str()];
        full.extend_from_slice(args);
        bricks_netns::ip(&full).unwrap();
    }
    let (fa, mut q) = in_namespace(&r, || {
        let fa = FastPath::new(
            "ra",
            FastPathSpec {
                ports: vec![Some(FastPathPort {
                    ifname: "rc".into(),
                    src_mac: [2, 0, 0, 0, 0, 1],
                    dst_mac: Some([2, 0, 0, 0, 0, 2]),
                    mtu: 1500,
                })],
                bad_src: Vec::new(),
                accept_dst: None,
                max_routes: 4,
                max_neighbours: 4,
            },
        )
        .unwrap();
        fa.set_route(Ipv4Addr::new(10, 9, 2, 0), 24, 0, None)
            .unwrap();
        let cfg = XdpConfig {
            fast_path: Some(fa.clone()),
            ..XdpConfig::default()
        };
        let q = xdp::open_queue("ra", 0, &cfg).unwrap();
        (fa, q)
    });
    let h1 = raw_socket(&n.ns("h1"), "e0");
    let f = frame(&n, H2, 64, &[], 1);
    h1.send(&f);
    let t = Instant::now();
    while fa.stats().forwarded == 0 && t.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(fa.stats().forwarded, 1);
    // The kernel empties the DEVMAP slot of an interface that goes away.
    bricks_netns::ip(&["-n", &r, "link", "del", "rc"]).unwrap();
    let g = frame(&n, H2, 64, &[], 2);
    h1.send(&g);
    assert!(xsk_frames(&mut q.0, 1, PATIENCE).contains(&g));
    let s = fa.stats();
    assert_eq!((s.forwarded, s.reason("slow_output")), (1, 1), "{s:?}");
}
