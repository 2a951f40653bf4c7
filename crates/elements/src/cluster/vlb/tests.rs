use super::*;
use bricks_element::Processing;
use bricks_runtime::testing::Harness;

/// A 4-node full mesh (like conf/cluster/rb4.toml) with R = 8 Mbps, so
/// that R/N is 2 Mbps: 2,500 bytes per 10 ms window.
const RB4: &str = r#"
name = "t4"
rate = "8Mbps"
flowlet_delta = "100ms"
hello_interval = "50ms"
hello_misses = 3
[[node]]
name = "n1"
[[node.port]]
iface = "ext0"
address = "10.1.0.1/24"
[[node]]
name = "n2"
[[node.port]]
iface = "ext0"
address = "10.2.0.1/24"
[[node]]
name = "n3"
[[node.port]]
iface = "ext0"
address = "10.3.0.1/24"
[[node]]
name = "n4"
[[node.port]]
iface = "ext0"
address = "10.4.0.1/24"
[[route]]
prefix = "10.1.0.0/24"
node = "n1"
port = "ext0"
[[route]]
prefix = "10.2.0.0/24"
node = "n2"
port = "ext0"
gateway = "10.2.0.254"
[[route]]
prefix = "10.3.0.0/24"
node = "n3"
port = "ext0"
[[route]]
prefix = "10.4.0.0/24"
node = "n4"
port = "ext0"
"#;

const MS: u64 = 1_000_000;
/// Start of the tests' clock (the harness starts at 0, "never").
const T0: u64 = 1_000_000_000;

struct Node {
    h: Harness,
    /// Deleted with the node, also when a test fails.
    _dir: tempfile::TempDir,
}

/// `text` as `cluster.toml` in a directory of its own, which is deleted
/// when the returned guard is dropped.
fn file(text: &str, tag: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(&format!("bricks-vlb-{tag}-"))
        .tempdir()
        .unwrap();
    let path = dir.path().join("cluster.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// Node `name` of RB4 (3 links, 1 port: 4 inputs, 5 outputs).
fn node(name: &str, tag: &str) -> Node {
    let (dir, path) = file(RB4, tag);
    let ports = PortInfo {
        inputs: vec![Processing::Push; 4],
        outputs: vec![Processing::Push; 5],
    };
    let mut h = Harness::new(
        &CLASS,
        &format!("FILE {}, NODE {name}", path.display()),
        ports,
    );
    h.advance_to(Timestamp(T0));
    Node { h, _dir: dir }
}

/// A hello from `sender` hearing `hears`.
fn hello(sender: u8, hears: &[u8]) -> Vec<u8> {
    let mut h = Hello {
        cluster: 1,
        sender,
        seq: 0,
        alive: [0; 32],
    };
    for &n in hears {
        h.set(n);
    }
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 1, sender, 0xfe, 0, 2]);
    f.extend_from_slice(&ETHERTYPE_HELLO.to_be_bytes());
    f.extend_from_slice(&h.bytes());
    f
}

impl Node {
    /// Hellos on every link of n1 (peers n2, n3, n4 = nodes 1, 2, 3),
    /// each peer hearing everyone.
    fn all_up(&mut self) {
        for (l, peer) in [(1, 1u8), (2, 2), (3, 3)] {
            let others: Vec<u8> = (0..4).filter(|&n| n != peer).collect();
            self.h.push_bytes(l, &hello(peer, &others));
        }
        self.tick(2 * MS);
    }

    fn tick(&mut self, ns: u64) {
        let t = self.h.now().0 + ns;
        self.h.advance_to(Timestamp(t));
    }

    fn count(&self, name: &str) -> u64 {
        self.h.stats().get(name).unwrap_or(0)
    }
}

/// A UDP packet from 10.1.0.2:sport to `dst`, `len` bytes of IP, as the
/// input path hands it over (network header and destination annotation
/// set).
fn udp(dst: [u8; 4], sport: u16, len: usize) -> Packet {
    let mut b = vec![0u8; len];
    b[0] = 0x45;
    b[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    b[8] = 63;
    b[9] = 17;
    b[12..16].copy_from_slice(&[10, 1, 0, 2]);
    b[16..20].copy_from_slice(&dst);
    b[20..22].copy_from_slice(&sport.to_be_bytes());
    b[22..24].copy_from_slice(&53u16.to_be_bytes());
    let mut p = Packet::from_slice(&b).unwrap();
    p.set_network_header(0);
    p.anno_mut().dst_ip = Ipv4Addr::from(dst);
    p
}

/// The label of a frame: (destination fields, shim).
fn label(frame: &[u8]) -> (Dst, Shim) {
    assert_eq!(&frame[12..14], &ETHERTYPE_DATA.to_be_bytes());
    (
        Dst::parse(frame[0..6].try_into().unwrap()).expect("a label MAC"),
        Shim::parse(frame[14..26].try_into().unwrap()).expect("a shim"),
    )
}

#[test]
fn before_any_hello_every_output_is_dead() {
    let mut n = node("n1", "dead");
    n.h.push_packets(0, [udp([10, 2, 0, 9], 1000, 100)]);
    assert_eq!(n.count("dead_output"), 1);
    for port in 0..3 {
        assert!(n.h.take(port).is_empty());
    }
}

#[test]
fn the_input_node_labels_and_sends_directly_within_its_share() {
    let mut n = node("n1", "direct");
    n.all_up();
    n.h.push_packets(0, [udp([10, 2, 0, 9], 1000, 100)]);
    let out = n.h.take_bytes(0);
    assert_eq!(out.len(), 1, "to n2 on link 0 (vn2)");
    let f = &out[0];
    assert_eq!(f.len(), 100 + HEADER_LEN);
    // 02:cluster 1:output n2 (1):port 0:no intermediate:00
    assert_eq!(&f[0..6], &[0x02, 1, 1, 0, NONE, 0]);
    let (_, shim) = label(f);
    assert_eq!(shim.input, 0);
    assert_eq!(shim.hops, MAX_HOPS);
    assert_eq!(shim.flags, 0);
    assert_eq!(shim.next_hop, [10, 2, 0, 254], "the route's gateway");
    assert_eq!(shim.seq, 1);
    assert_eq!(
        &f[HEADER_LEN..HEADER_LEN + 20],
        &udp([10, 2, 0, 9], 1000, 100).data()[..20]
    );
    assert_eq!(n.count("direct"), 1);
    assert_eq!(n.count("to n2 direct"), 1);
    assert_eq!(n.count("link vn2 packets"), 1);
    assert_eq!(n.count("link vn2 bytes"), 126);
}

#[test]
fn packets_for_this_node_leave_by_its_port_and_others_have_no_route() {
    let mut n = node("n1", "local");
    n.all_up();
    n.h.push_packets(0, [udp([10, 1, 0, 7], 1, 64), udp([192, 0, 2, 1], 1, 64)]);
    let local = n.h.take(3);
    assert_eq!(local.len(), 1);
    assert_eq!(local[0].anno().dst_ip, Ipv4Addr::new(10, 1, 0, 7));
    assert_eq!(local[0].len(), 64, "no label");
    assert_eq!(n.h.take(4).len(), 1, "output L+P: no route");
    assert_eq!(n.count("local"), 1);
    assert_eq!(n.count("no_route"), 1);
}

#[test]
fn ipv6_packets_are_refused_at_the_input_node() {
    let mut n = node("n1", "ipv6");
    n.all_up();
    // An IPv6 packet whose source address bytes 8-11 read, as IPv4's
    // destination, 10.2.0.9: it must not be routed by them.
    let mut b = vec![0u8; 64];
    b[0] = 0x60;
    b[5] = 24;
    b[6] = 17;
    b[7] = 64;
    b[16..20].copy_from_slice(&[10, 2, 0, 9]);
    let mut p = Packet::from_slice(&b).unwrap();
    p.set_network_header(0);
    n.h.push_packets(0, [p]);
    for port in 0..5 {
        assert!(n.h.take(port).is_empty(), "output {port}");
    }
    assert_eq!(n.count("not_ipv4"), 1);
    assert_eq!(n.count("direct") + n.count("no_route"), 0);
}

/// Sends `count` packets of `flows` flows (one window) to n3 and returns
/// how many went via each link.
fn spread(n: &mut Node, flows: u16, count: usize) -> [usize; 3] {
    let batch: Vec<Packet> = (0..count)
        .map(|i| udp([10, 3, 0, 9], 2000 + (i as u16 % flows), 500))
        .collect();
    n.h.push_packets(0, batch);
    [n.h.take(0).len(), n.h.take(1).len(), n.h.take(2).len()]
}

#[test]
fn direct_vlb_sends_r_over_n_directly_and_balances_the_rest() {
    let mut n = node("n1", "share");
    n.h.write_handler("flowlets", "false").unwrap();
    n.all_up();
    // 40 packets of 500 bytes in one window: the direct share is 2,500
    // bytes, so 5 go to n3 directly and 35 through n2 and n4, evenly.
    let [via_n2, direct, via_n4] = spread(&mut n, 40, 40);
    assert_eq!(direct, 5);
    assert_eq!(via_n2 + via_n4, 35);
    assert!(via_n2.abs_diff(via_n4) <= 1, "{via_n2} vs {via_n4}");
    assert_eq!(n.count("balanced"), 35);
    assert_eq!(n.count("to n3 balanced"), 35);
    // A balanced frame names n2 or n4 as intermediate, n3 as output.
    n.h.push_packets(0, [udp([10, 3, 0, 9], 7, 500)]);
    let (mut f, link) = (n.h.take_bytes(0), 0);
    let (f, link) = if f.is_empty() {
        (n.h.take_bytes(2), 2)
    } else {
        (f.split_off(0), link)
    };
    let (dst, shim) = label(&f[0]);
    let via = if link == 0 { 1 } else { 3 };
    assert_eq!((dst.output, dst.intermediate), (2, via));
    assert_eq!(shim.flags, FLAG_BALANCED);
    // The next window starts with a fresh share.
    n.tick(WINDOW_NS);
    assert_eq!(spread(&mut n, 40, 5)[1], 5);
}

/// Like [`spread`], one packet at a time, `gap_ns` apart.
fn paced(n: &mut Node, flows: u16, count: usize, gap_ns: u64) -> [usize; 3] {
    let mut out = [0; 3];
    for i in 0..count {
        n.h.push_packets(0, [udp([10, 3, 0, 9], 2000 + (i as u16 % flows), 500)]);
        n.tick(gap_ns);
        for (link, o) in out.iter_mut().enumerate() {
            *o += n.h.take(link).len();
        }
    }
    out
}

#[test]
fn flowlets_keep_a_flow_on_one_path_until_it_pauses_for_delta() {
    let mut n = node("n1", "flowlet");
    n.all_up();
    // One flow far over the share, 300 us between packets: it started
    // within the share, so it stays direct (a flowlet never changes path
    // while it lasts: its earlier packets could still be on the way).
    assert_eq!(paced(&mut n, 1, 20, 300_000), [0, 20, 0]);
    // Another flow, started while the share is used up, is balanced and
    // stays on its intermediate, in this window and the next.
    let batch: Vec<Packet> = (0..10).map(|_| udp([10, 3, 0, 9], 999, 500)).collect();
    n.h.push_packets(0, batch);
    let first = [n.h.take(0).len(), n.h.take(1).len(), n.h.take(2).len()];
    assert!(first == [10, 0, 0] || first == [0, 0, 10], "{first:?}");
    n.tick(WINDOW_NS);
    let batch: Vec<Packet> = (0..10).map(|_| udp([10, 3, 0, 9], 999, 500)).collect();
    n.h.push_packets(0, batch);
    let again = [n.h.take(0).len(), n.h.take(1).len(), n.h.take(2).len()];
    assert_eq!(again, first);
    // After a pause longer than delta the flow starts a new flowlet: a
    // fresh window's share sends it directly again.
    n.tick(150 * MS);
    n.all_up();
    let batch: Vec<Packet> = (0..3).map(|_| udp([10, 3, 0, 9], 999, 500)).collect();
    n.h.push_packets(0, batch);
    assert_eq!(
        [n.h.take(0).len(), n.h.take(1).len(), n.h.take(2).len()],
        [0, 3, 0]
    );
}

#[test]
fn a_dead_intermediate_is_avoided_and_a_dead_output_dropped() {
    let mut n = node("n1", "failure");
    n.h.write_handler("flowlets", "false").unwrap();
    n.h.start();
    n.all_up();
    // n4 (link 2) goes silent; n2 and n3 keep saying hello, and stop
    // hearing n4.
    for _ in 0..4 {
        n.tick(50 * MS);
        n.h.push_bytes(1, &hello(1, &[0, 2]));
        n.h.push_bytes(2, &hello(2, &[0, 1]));
    }
    n.tick(2 * MS);
    assert_eq!(n.count("link vn4 up"), 0);
    assert_eq!(n.count("link vn2 up"), 1);
    n.h.take(0);
    n.h.take(1);
    n.h.take(2);
    // Traffic for n3 is balanced through n2 only.
    let [via_n2, direct, via_n4] = spread(&mut n, 40, 40);
    assert_eq!((via_n2, direct, via_n4), (35, 5, 0));
    // Traffic for n4 is dropped and counted.
    n.h.push_packets(0, [udp([10, 4, 0, 9], 1, 100)]);
    assert_eq!(n.count("dead_output"), 1);
    // n4 comes back: used again.
    n.h.push_bytes(3, &hello(3, &[0, 1, 2]));
    n.h.push_bytes(1, &hello(1, &[0, 2, 3]));
    n.h.push_bytes(2, &hello(2, &[0, 1, 3]));
    n.tick(2 * MS);
    n.tick(WINDOW_NS);
    let [a, d, b] = spread(&mut n, 40, 40);
    assert_eq!(d, 5);
    assert!(a > 0 && b > 0, "{a} {b}");
}

#[test]
fn hellos_go_out_on_every_link_and_list_the_peers_heard() {
    let mut n = node("n1", "hello");
    n.h.start();
    n.tick(0);
    for l in 0..3 {
        let f = n.h.take_bytes(l);
        assert_eq!(f.len(), 1);
        assert_eq!(&f[0][12..14], &ETHERTYPE_HELLO.to_be_bytes());
        let h = Hello::parse(&f[0][14..]).unwrap();
        assert_eq!((h.cluster, h.sender), (1, 0));
        assert!((0..4).all(|x| !h.hears(x)), "nothing heard yet");
    }
    n.h.push_bytes(2, &hello(2, &[0]));
    n.tick(50 * MS);
    let f = n.h.take_bytes(0);
    let h = Hello::parse(&f[0][14..]).unwrap();
    assert!(h.hears(2) && !h.hears(1) && !h.hears(3));
    assert_eq!(n.count("hellos_in"), 1);
    assert_eq!(n.count("hellos_out"), 6);
    // A hello from the wrong node (miscabled) is no sign of life.
    n.h.push_bytes(1, &hello(3, &[0]));
    assert_eq!(n.count("foreign"), 1);
}

/// A labelled frame as node `input` would send it.
fn labelled(output: u8, via: u8, input: u8, flow: u16, seq: u16, hops: u8) -> Vec<u8> {
    let mut f = Dst {
        cluster: 1,
        output,
        port: 0,
        intermediate: via,
    }
    .mac()
    .to_vec();
    f.extend_from_slice(&[0x02, 1, input, 0xfe, 0, 2]);
    f.extend_from_slice(&ETHERTYPE_DATA.to_be_bytes());
    f.extend_from_slice(
        &Shim {
            input,
            hops,
            flags: 0,
            next_hop: [10, 2, 0, 254],
            flow,
            seq,
        }
        .bytes(),
    );
    f.extend_from_slice(udp([10, 2, 0, 9], 1, 40).data());
    f
}

#[test]
fn the_output_node_takes_the_label_off_and_counts_reordering() {
    // n2's links: vn1 (input 1), vn3 (2), vn4 (3).
    let mut n = node("n2", "output");
    for seq in [1, 2, 4, 3, 5] {
        n.h.push_bytes(1, &labelled(1, NONE, 0, 77, seq, MAX_HOPS));
    }
    let out = n.h.take(3);
    assert_eq!(out.len(), 5);
    assert_eq!(out[0].data(), udp([10, 2, 0, 9], 1, 40).data());
    assert_eq!(out[0].anno().dst_ip, Ipv4Addr::new(10, 2, 0, 254));
    assert_eq!(out[0].network_header_offset(), Some(0));
    assert_eq!(n.count("delivered"), 5);
    assert_eq!(n.count("reordered"), 1, "3 after 4");
    // Another flow, and the same tag from another input, are separate.
    n.h.push_bytes(2, &labelled(1, NONE, 2, 77, 1, MAX_HOPS));
    n.h.push_bytes(1, &labelled(1, NONE, 0, 78, 1, MAX_HOPS));
    assert_eq!(n.count("reordered"), 1);
}

#[test]
fn an_intermediate_forwards_by_the_label_alone() {
    let mut n = node("n2", "transit");
    // n2's peers: n1 (node 0, link 0), n3 (2, link 1), n4 (3, link 2).
    for (l, peer) in [(1, 0u8), (2, 2), (3, 3)] {
        let others: Vec<u8> = (0..4).filter(|&x| x != peer).collect();
        n.h.push_bytes(l, &hello(peer, &others));
    }
    n.tick(2 * MS);
    // From n1 through n2 (us) to n3: out on link 1 (vn3), intermediate
    // cleared, one hop less, the rest untouched.
    let frame = labelled(2, 1, 0, 5, 1, MAX_HOPS);
    n.h.push_bytes(1, &frame);
    let out = n.h.take_bytes(1);
    assert_eq!(out.len(), 1);
    assert_eq!(&out[0][0..6], &[0x02, 1, 2, 0, NONE, 0]);
    assert_eq!(out[0][16], MAX_HOPS - 1);
    assert_eq!(&out[0][17..], &frame[17..]);
    assert_eq!(n.count("forwarded"), 1);
    assert_eq!(n.count("link vn3 packets"), 1);
    // Out of hops, unknown output node or port, not ours: dropped, counted.
    n.h.push_bytes(1, &labelled(2, 1, 0, 5, 2, 0));
    n.h.push_bytes(1, &labelled(9, NONE, 0, 5, 2, 3));
    let mut bad_port = labelled(2, NONE, 0, 5, 2, 3);
    bad_port[3] = 1;
    n.h.push_bytes(1, &bad_port);
    n.h.push_bytes(1, &labelled(2, 200, 0, 5, 2, 3));
    let mut other_cluster = labelled(2, NONE, 0, 5, 2, 3);
    other_cluster[1] = 7;
    n.h.push_bytes(1, &other_cluster);
    n.h.push_bytes(1, &[0u8; 60]);
    assert_eq!(n.count("hop_limit"), 1);
    assert_eq!(n.count("unknown_output"), 3);
    assert_eq!(n.count("foreign"), 2);
    // The output's link dies (silent for four intervals while the others'
    // hellos keep the node running): frames for it are dropped, not sent
    // round.
    for _ in 0..4 {
        n.tick(50 * MS);
        n.h.push_bytes(1, &hello(0, &[1, 2, 3]));
        n.h.push_bytes(3, &hello(3, &[0, 1, 2]));
    }
    n.tick(2 * MS);
    n.h.push_bytes(1, &labelled(2, 1, 0, 5, 3, MAX_HOPS));
    assert_eq!(n.count("dead_output"), 1);
    assert!(n.h.take(0).is_empty() && n.h.take(1).is_empty() && n.h.take(2).is_empty());
}

#[test]
fn handlers_and_port_counts_are_checked() {
    let mut n = node("n1", "handlers");
    assert!(n.h.write_handler("flowlets", "maybe").is_err());
    n.h.write_handler("flowlet_delta", "20ms").unwrap();
    assert!(n.h.write_handler("flowlet_delta", "0ms").is_err());
    assert!(n.h.write_handler("nope", "1").is_err());
    n.tick(0);
    let (_dir, path) = file(RB4, "ports");
    let bad = Harness::try_new(
        &CLASS,
        &format!("FILE {}, NODE n1", path.display()),
        PortInfo {
            inputs: vec![Processing::Push; 2],
            outputs: vec![Processing::Push; 5],
        },
    )
    .err()
    .expect("refused");
    assert!(bad.contains("needs 4 inputs"), "{bad}");
    let bad = Harness::try_new(
        &CLASS,
        &format!("FILE {}, NODE n9", path.display()),
        PortInfo {
            inputs: vec![Processing::Push; 4],
            outputs: vec![Processing::Push; 5],
        },
    )
    .err()
    .expect("refused");
    assert!(bad.contains("no node `n9`"), "{bad}");
}

#[test]
fn flowlets_started_within_the_share_go_direct_the_rest_are_balanced_and_all_stay() {
    let mut n = node("n1", "starts");
    n.all_up();
    // Eight flows to n3 start at once (500-byte packets, a share of 2,500
    // bytes): the first five fit, the other three are balanced. Then
    // every flow keeps its path, window after window.
    let sport = |f: &Vec<u8>| u16::from_be_bytes([f[HEADER_LEN + 20], f[HEADER_LEN + 21]]);
    let mut path: [Option<usize>; 8] = [None; 8];
    for w in 0..6 {
        let batch: Vec<Packet> = (0..16)
            .map(|i| udp([10, 3, 0, 9], 3000 + (i % 8) as u16, 500))
            .collect();
        n.h.push_packets(0, batch);
        for link in 0..3 {
            for f in n.h.take_bytes(link) {
                let flow = usize::from(sport(&f) - 3000);
                let was = path[flow].get_or_insert(link);
                assert_eq!(*was, link, "window {w}: flow {flow} changed path");
            }
        }
        n.tick(WINDOW_NS);
        if w % 4 == 3 {
            n.all_up();
        }
    }
    let direct = path.iter().filter(|p| **p == Some(1)).count();
    assert_eq!(direct, 5, "{path:?}");
    assert_eq!(n.count("balanced"), 3 * 2 * 6);
}

/// Node n2 running with every peer saying hello each interval for 200 ms;
/// its hello timer runs too.
fn intermediate_running(tag: &str) -> Node {
    let mut n = node("n2", tag);
    n.h.start();
    n.tick(0);
    for _ in 0..4 {
        for (l, peer) in [(1, 0u8), (2, 2), (3, 3)] {
            let others: Vec<u8> = (0..4).filter(|&x| x != peer).collect();
            n.h.push_bytes(l, &hello(peer, &others));
        }
        n.tick(50 * MS);
    }
    for l in 0..3 {
        n.h.take(l);
    }
    n
}

#[test]
fn a_node_that_stalls_keeps_its_links_and_forwards_what_waited() {
    let mut n = intermediate_running("stall");
    for link in ["vn1", "vn3", "vn4"] {
        assert_eq!(n.count(&format!("link {link} up")), 1, "{link}");
    }
    // The node stops for 250 ms (five intervals): when it resumes, its
    // timer is due and the peers' hellos wait in its queues, with transit
    // frames from n1 to n3 behind n1's.
    n.tick(250 * MS);
    for l in 0..3 {
        let f = n.h.take_bytes(l);
        let h = Hello::parse(&f[0][14..]).unwrap();
        assert!(
            h.hears(0) && h.hears(2) && h.hears(3),
            "link {l}: a stall is no silence"
        );
    }
    let mut waiting = vec![Packet::from_slice(&hello(0, &[1, 2, 3])).unwrap()];
    for seq in 0..20 {
        waiting.push(Packet::from_slice(&labelled(2, 1, 0, 5, seq, MAX_HOPS)).unwrap());
    }
    n.h.push_packets(1, waiting);
    n.h.push_bytes(2, &hello(2, &[0, 1, 3]));
    n.h.push_bytes(3, &hello(3, &[0, 1, 2]));
    assert_eq!(n.count("dead_output"), 0);
    assert_eq!(n.count("forwarded"), 20);
    assert_eq!(n.h.take(1).len(), 20, "out on vn3");
    n.tick(2 * MS);
    for link in ["vn1", "vn3", "vn4"] {
        assert_eq!(n.count(&format!("link {link} up")), 1, "{link}");
    }
}

#[test]
fn a_peer_silent_for_three_intervals_while_the_node_runs_is_down() {
    let mut n = intermediate_running("silent");
    // n3 (link 2, vn3) falls silent; n1 and n4 go on, and stop hearing it.
    for _ in 0..4 {
        n.h.push_bytes(1, &hello(0, &[1, 3]));
        n.h.push_bytes(3, &hello(3, &[0, 1]));
        n.tick(50 * MS);
    }
    assert_eq!(n.count("link vn3 up"), 0);
    assert_eq!(n.count("link vn1 up"), 1);
    n.h.push_bytes(1, &labelled(2, 1, 0, 5, 1, MAX_HOPS));
    assert_eq!(n.count("dead_output"), 1);
    assert!(n
        .h
        .take(1)
        .iter()
        .all(|p| p.data()[12..14] == ETHERTYPE_HELLO.to_be_bytes()));

    // Every peer silent, nothing but the node's own timer running: down
    // after hello_misses intervals all the same.
    let mut n = intermediate_running("all-silent");
    for _ in 0..4 {
        n.tick(50 * MS);
    }
    for link in ["vn1", "vn3", "vn4"] {
        assert_eq!(n.count(&format!("link {link} up")), 0, "{link}");
    }
}
