//! AF_XDP over veth pairs between network namespaces. Each test builds its
//! own namespaces (unique prefix), keeps all traffic inside them, and gives
//! up after five seconds of waiting for frames.

use super::*;
use crate::queue::{RxQueue, TxQueue};
use bricks_netns::{skip_unless_root, Network};
use bricks_packet::{Batch, Packet};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(5);
/// Marks the frames a test sent (other traffic is ignored).
const MAGIC: &[u8; 8] = b"bricksXD";

use bricks_netns::in_namespace as in_ns;

/// A network with namespaces `names`, IPv6 off so that no router
/// solicitation or MLD report joins the test's frames.
fn network(tag: &str, names: &[&str]) -> Network {
    let mut net = Network::new(&Network::unique_prefix(tag)).unwrap();
    for n in names {
        net.add_namespace(n).unwrap();
        for key in [
            "net.ipv6.conf.all.disable_ipv6",
            "net.ipv6.conf.default.disable_ipv6",
        ] {
            net.sysctl(n, key, "1").unwrap();
        }
    }
    net
}

/// `ip -d link show IF` in namespace `ns`.
fn link_show(net: &Network, ns: &str, ifname: &str) -> String {
    let out = net
        .exec(ns, &["ip", "-d", "link", "show", "dev", ifname])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

use bricks_netns::RawSocket as RawSock;

/// An Ethernet/IPv4/UDP frame of `len` bytes (at least 60) from UDP port
/// `port`, carrying `tag` and `seq` after [`MAGIC`].
fn frame(len: usize, port: u16, tag: u32, seq: u32) -> Vec<u8> {
    let len = len.max(60);
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&[0xff; 6]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip_len = (len - 14) as u16;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, 2]);
    let sum = !bricks_wire_sum(&f[14..34]);
    f[24..26].copy_from_slice(&sum.to_be_bytes());
    f[34..36].copy_from_slice(&port.to_be_bytes());
    f[36..38].copy_from_slice(&9u16.to_be_bytes());
    f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
    f[42..50].copy_from_slice(MAGIC);
    f[50..54].copy_from_slice(&tag.to_be_bytes());
    f[54..58].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in f[58..].iter_mut().enumerate() {
        *b = (i as u32 ^ seq) as u8;
    }
    f
}

/// RFC 1071 sum (folded, not complemented).
fn bricks_wire_sum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// `(tag, seq)` of a frame a test sent.
fn ours(f: &[u8]) -> Option<(u32, u32)> {
    if f.get(42..50)? != MAGIC {
        return None;
    }
    let tag = u32::from_be_bytes(f.get(50..54)?.try_into().ok()?);
    let seq = u32::from_be_bytes(f.get(54..58)?.try_into().ok()?);
    Some((tag, seq))
}

/// Sizes from the minimum to a full 1500-byte MTU frame.
fn size(seq: u32) -> usize {
    [60, 64, 128, 511, 1024, 1514][seq as usize % 6]
}

/// Receives from `rx` until `n` of the test's frames arrived or patience
/// runs out; returns them by `(tag, seq)`.
fn collect(rx: &mut XdpRx, n: usize) -> BTreeMap<(u32, u32), Vec<u8>> {
    let mut got = BTreeMap::new();
    let mut batch = Batch::new();
    let start = Instant::now();
    while got.len() < n && start.elapsed() < PATIENCE {
        if rx.recv(&mut batch, 64).unwrap() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        for p in batch.drain() {
            if let Some(k) = ours(p.data()) {
                assert!(
                    got.insert(k, p.data().to_vec()).is_none(),
                    "frame {k:?} twice"
                );
            }
        }
    }
    got
}

/// Sends `frames` through `tx`, flushing after every batch of 32, until all
/// are out of the ring.
fn send_all(tx: &mut XdpTx, frames: &[Vec<u8>]) {
    for chunk in frames.chunks(32) {
        let mut batch = Batch::new();
        for f in chunk {
            batch.push(Packet::from_slice(f).unwrap()).unwrap();
        }
        let start = Instant::now();
        // The ring is large enough; wait for frames to come back if not.
        while tx.free_frames() < chunk.len() && start.elapsed() < PATIENCE {
            tx.flush().unwrap();
        }
        assert_eq!(tx.enqueue(&mut batch).unwrap(), chunk.len());
        tx.flush().unwrap();
    }
    let start = Instant::now();
    while tx.pending() > 0 && start.elapsed() < PATIENCE {
        tx.flush().unwrap();
    }
    assert_eq!(tx.pending(), 0, "the kernel did not take every frame");
}

/// Sends `n` frames from UDP port `port` through a raw socket on `va` in
/// namespace `a`, and checks that `rx` receives each once, byte for byte;
/// returns them.
fn raw_frames_arrive(a: &str, rx: &mut XdpRx, n: u32, port: u16) -> Vec<Vec<u8>> {
    let sent: Vec<Vec<u8>> = (0..n).map(|s| frame(size(s), port, 0, s)).collect();
    let to_send = sent.clone();
    in_ns(a, move || {
        let sock = RawSock::open("va");
        for f in &to_send {
            sock.send(f);
        }
    });
    let got = collect(rx, n as usize);
    assert_eq!(got.len(), n as usize, "frames lost");
    for (s, f) in sent.iter().enumerate() {
        assert_eq!(&got[&(0, s as u32)], f, "frame {s} changed");
    }
    sent
}

#[test]
fn frames_sent_from_a_arrive_at_an_xdp_rx_in_b_byte_identical() {
    if skip_unless_root("frames_sent_from_a_arrive_at_an_xdp_rx_in_b_byte_identical").is_some() {
        return;
    }
    let mut net = network("xd1", &["a", "b"]);
    net.add_link("a", "va", "b", "vb", 1).unwrap();
    let (a, b) = (net.ns_name("a"), net.ns_name("b"));
    let (mut rx, tx) = in_ns(&b, || open_queue("vb", 0, &XdpConfig::default())).unwrap();
    eprintln!(
        "AF_XDP on veth: {} ({})",
        rx.mode(),
        rx.fallback_reason().unwrap_or("no fallback")
    );
    assert_eq!(rx.mode(), tx.mode());
    assert!(rx.mode().ends_with("copy"), "{}", rx.mode());
    assert_eq!((rx.backend(), rx.ifname(), rx.queue()), ("af_xdp", "vb", 0));

    const N: u32 = 600;
    let sent = raw_frames_arrive(&a, &mut rx, N, 1000);
    let st = rx.stats();
    assert_eq!(st.packets, u64::from(N));
    assert_eq!(st.bytes, sent.iter().map(|f| f.len() as u64).sum::<u64>());
    assert_eq!((st.ring_drops, st.oversized), (0, 0));
}

#[test]
fn an_xdp_tx_in_b_sends_frames_that_a_receives_byte_identical() {
    if skip_unless_root("an_xdp_tx_in_b_sends_frames_that_a_receives_byte_identical").is_some() {
        return;
    }
    let mut net = network("xd2", &["a", "b"]);
    net.add_link("a", "va", "b", "vb", 1).unwrap();
    let (a, b) = (net.ns_name("a"), net.ns_name("b"));
    let sock = in_ns(&a, || RawSock::open("va"));
    let (_rx, mut tx) = in_ns(&b, || open_queue("vb", 0, &XdpConfig::default())).unwrap();
    assert_eq!((tx.backend(), tx.ifname(), tx.queue()), ("af_xdp", "vb", 0));

    const N: u32 = 500;
    let sent: Vec<Vec<u8>> = (0..N).map(|s| frame(size(s), 2000, 0, s)).collect();
    send_all(&mut tx, &sent);
    let mut got = BTreeMap::new();
    let start = Instant::now();
    while got.len() < N as usize && start.elapsed() < PATIENCE {
        match sock.recv() {
            Some(f) => {
                if let Some(k) = ours(&f) {
                    assert!(got.insert(k, f).is_none(), "frame {k:?} twice");
                }
            }
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    assert_eq!(got.len(), N as usize, "frames lost");
    for (s, f) in sent.iter().enumerate() {
        assert_eq!(&got[&(0, s as u32)], f, "frame {s} changed");
    }
    let st = tx.stats();
    assert_eq!(st.packets, u64::from(N));
    assert_eq!(st.bytes, sent.iter().map(|f| f.len() as u64).sum::<u64>());
    assert_eq!((st.ring_full, st.errors), (0, 0));
    assert!(st.kicks >= u64::from(N) / 32, "{st:?}");
    assert_eq!(tx.free_frames(), 2048, "every frame comes back");
}

#[test]
fn with_two_queues_each_socket_sees_only_its_queue() {
    if skip_unless_root("with_two_queues_each_socket_sees_only_its_queue").is_some() {
        return;
    }
    let mut net = network("xd3", &["a", "b"]);
    net.add_link("a", "va", "b", "vb", 2).unwrap();
    let (a, b) = (net.ns_name("a"), net.ns_name("b"));
    let cfg = XdpConfig::default();
    let (mut rx0, _tx0, mut rx1, _tx1) = in_ns(&b, move || {
        let (rx0, tx0) = open_queue("vb", 0, &cfg).unwrap();
        let (rx1, tx1) = open_queue("vb", 1, &cfg).unwrap();
        (rx0, tx0, rx1, tx1)
    });

    // Sent through TX queue q of va, a frame arrives on RX queue q of vb
    // (veth keeps the queue number): each socket must see only its own.
    const PER_QUEUE: u32 = 200;
    let (_arx0, mut atx0, _arx1, mut atx1) = in_ns(&a, || {
        let cfg = XdpConfig::default();
        let (r0, t0) = open_queue("va", 0, &cfg).unwrap();
        let (r1, t1) = open_queue("va", 1, &cfg).unwrap();
        (r0, t0, r1, t1)
    });
    let by_queue =
        |q: u32| -> Vec<Vec<u8>> { (0..PER_QUEUE).map(|s| frame(size(s), 3000, q, s)).collect() };
    send_all(&mut atx0, &by_queue(0));
    send_all(&mut atx1, &by_queue(1));
    for (q, rx) in [(0u32, &mut rx0), (1, &mut rx1)] {
        let got = collect(rx, PER_QUEUE as usize);
        assert_eq!(got.len(), PER_QUEUE as usize, "queue {q} lost frames");
        assert!(
            got.keys().all(|&(tag, _)| tag == q),
            "queue {q} got another queue's frames"
        );
        for (s, f) in by_queue(q).iter().enumerate() {
            assert_eq!(&got[&(q, s as u32)], f);
        }
    }

    // Many flows from a raw socket: the flow hash spreads them over both
    // queues, and every frame arrives exactly once.
    const N: u32 = 1000;
    in_ns(&a, || {
        let sock = RawSock::open("va");
        for s in 0..N {
            sock.send(&frame(size(s), 10_000 + s as u16, 9, s));
        }
    });
    let mut seen = BTreeMap::new();
    let mut per_queue = [0usize; 2];
    let start = Instant::now();
    let mut batch = Batch::new();
    while seen.len() < N as usize && start.elapsed() < PATIENCE {
        let mut moved = 0;
        for (q, rx) in [(0usize, &mut rx0), (1, &mut rx1)] {
            moved += rx.recv(&mut batch, 64).unwrap();
            for p in batch.drain() {
                if let Some((9, s)) = ours(p.data()) {
                    assert!(seen.insert(s, q).is_none(), "frame {s} twice");
                    per_queue[q] += 1;
                }
            }
        }
        if moved == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    assert_eq!(seen.len(), N as usize, "frames lost: {per_queue:?}");
    assert!(
        per_queue[0] > 0 && per_queue[1] > 0,
        "one queue idle: {per_queue:?}"
    );
    assert_eq!(
        rx0.stats().packets + rx1.stats().packets,
        u64::from(N + 2 * PER_QUEUE)
    );
}

#[test]
fn a_full_tx_ring_drops_and_counts_without_blocking() {
    if skip_unless_root("a_full_tx_ring_drops_and_counts_without_blocking").is_some() {
        return;
    }
    let mut net = network("xd4", &["a", "b"]);
    net.add_link("a", "va", "b", "vb", 1).unwrap();
    let b = net.ns_name("b");
    // 64 TX ring entries, 128 TX frames.
    let cfg = XdpConfig {
        frames: 256,
        ring: 64,
        ..XdpConfig::default()
    };
    let (_rx, mut tx) = in_ns(&b, move || open_queue("vb", 0, &cfg)).unwrap();
    let mut batch = Batch::new();
    let f = frame(60, 4000, 0, 0);
    Packet::alloc_batch(&mut batch, 256, |p| p.set_frame(&f).unwrap());
    let start = Instant::now();
    // Copy mode consumes the ring only when kicked: nothing leaves it.
    assert_eq!(tx.enqueue(&mut batch).unwrap(), 64);
    assert!(batch.is_empty(), "enqueue takes every packet");
    Packet::alloc_batch(&mut batch, 10, |p| p.set_frame(&f).unwrap());
    assert_eq!(tx.enqueue(&mut batch).unwrap(), 0);
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "enqueue blocked"
    );
    let st = tx.stats();
    assert_eq!((st.packets, st.ring_full, st.kicks), (64, 192 + 10, 0));
    assert_eq!(tx.pending(), 64);

    let start = Instant::now();
    while tx.pending() > 0 && start.elapsed() < PATIENCE {
        tx.flush().unwrap();
    }
    assert_eq!(tx.pending(), 0);
    assert!(tx.stats().kicks >= 2, "64 frames take two kicks of 32");
    // The frames come back: the ring takes a full ring again.
    let start = Instant::now();
    while tx.free_frames() < 128 && start.elapsed() < PATIENCE {
        tx.flush().unwrap();
    }
    Packet::alloc_batch(&mut batch, 64, |p| p.set_frame(&f).unwrap());
    assert_eq!(tx.enqueue(&mut batch).unwrap(), 64);
    // 32 TX frames under a 64-entry ring: a frame shortage drops and counts too.
    let cfg = XdpConfig {
        frames: 64,
        ring: 64,
        ..XdpConfig::default()
    };
    let (_rx, mut small) = in_ns(&net.ns_name("a"), move || open_queue("va", 0, &cfg)).unwrap();
    Packet::alloc_batch(&mut batch, 40, |p| p.set_frame(&f).unwrap());
    assert_eq!(small.enqueue(&mut batch).unwrap(), 32);
    assert_eq!(small.stats().ring_full, 8);
}

#[test]
fn redirect_forwards_every_frame_from_one_veth_to_another() {
    if skip_unless_root("redirect_forwards_every_frame_from_one_veth_to_another").is_some() {
        return;
    }
    // a:va -- r:x   r:y -- b:vb; r redirects x -> y.
    let mut net = network("xd5", &["a", "r", "b"]);
    net.add_link("a", "va", "r", "x", 1).unwrap();
    net.add_link("r", "y", "b", "vb", 1).unwrap();
    let (a, r, b) = (net.ns_name("a"), net.ns_name("r"), net.ns_name("b"));
    let fwd = in_ns(&r, || redirect("x", "y")).unwrap();
    eprintln!("XDP_REDIRECT on veth: {}", fwd.mode());
    // vb accepts frames redirected into y only with a program of its own.
    let pass = in_ns(&b, || attach_pass("vb", XdpMode::Auto)).unwrap();
    assert_eq!(pass.mode(), "native");
    assert!(link_show(&net, "r", "x").contains("prog/xdp"));
    let sock = in_ns(&b, || RawSock::open("vb"));

    const N: u32 = 300;
    let sent: Vec<Vec<u8>> = (0..N).map(|s| frame(size(s), 5000, 0, s)).collect();
    let to_send = sent.clone();
    in_ns(&a, move || {
        let out = RawSock::open("va");
        for f in &to_send {
            out.send(f);
        }
    });
    let mut got = BTreeMap::new();
    let start = Instant::now();
    while got.len() < N as usize && start.elapsed() < PATIENCE {
        match sock.recv() {
            Some(f) => {
                if let Some(k) = ours(&f) {
                    got.insert(k, f);
                }
            }
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    assert_eq!(got.len(), N as usize, "frames lost");
    for (s, f) in sent.iter().enumerate() {
        assert_eq!(&got[&(0, s as u32)], f);
    }
    drop(fwd);
    assert!(!link_show(&net, "r", "x").contains("xdp"), "not detached");
    assert!(!link_show(&net, "r", "y").contains("xdp"), "not detached");
}

#[test]
fn an_interface_with_another_xdp_program_is_refused() {
    if skip_unless_root("an_interface_with_another_xdp_program_is_refused").is_some() {
        return;
    }
    let mut net = network("xd6", &["a", "b"]);
    net.add_link("a", "va", "b", "vb", 1).unwrap();
    let b = net.ns_name("b");
    for mode in [XdpMode::Generic, XdpMode::Native] {
        let (other, err) = in_ns(&b, move || {
            let other = attach_pass("vb", mode).unwrap();
            let err = match open_queue("vb", 0, &XdpConfig::default()) {
                Ok(_) => panic!("opened an interface carrying another program"),
                Err(e) => e.to_string(),
            };
            (other, err)
        });
        assert!(err.contains("vb already carries an XDP program"), "{err}");
        assert!(err.contains("will not replace it"), "{err}");
        assert!(err.contains("AF_PACKET"), "{err}");
        let shown = link_show(&net, "b", "vb");
        let id = shown
            .split("prog/xdp id ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .unwrap_or_else(|| panic!("the other program is gone: {shown}"));
        assert!(err.contains(&format!("id {id}")), "{err} / {shown}");
        drop(other);
    }
    assert!(!link_show(&net, "b", "vb").contains("xdp"));
}

#[test]
fn the_program_is_detached_when_the_last_queue_closes() {
    if skip_unless_root("the_program_is_detached_when_the_last_queue_closes").is_some() {
        return;
    }
    let mut net = network("xd7", &["a", "b"]);
    net.add_link("a", "va", "b", "vb", 2).unwrap();
    let b = net.ns_name("b");
    let attached = |net: &Network| link_show(net, "b", "vb").contains("xdp");
    let (rx0, tx0, rx1, tx1, again) = in_ns(&b, || {
        let cfg = XdpConfig::default();
        let (rx0, tx0) = open_queue("vb", 0, &cfg).unwrap();
        let (rx1, tx1) = open_queue("vb", 1, &cfg).unwrap();
        let again = open_queue("vb", 1, &cfg).err().map(|e| e.to_string());
        (rx0, tx0, rx1, tx1, again)
    });
    let again = again.expect("a queue opened twice");
    assert!(again.contains("already has an AF_XDP socket"), "{again}");
    assert!(attached(&net));
    drop((rx0, tx0));
    assert!(attached(&net), "detached while queue 1 is open");
    drop(rx1);
    assert!(attached(&net), "detached while queue 1's TX half is open");
    drop(tx1);
    let shown = link_show(&net, "b", "vb");
    assert!(!shown.contains("xdp"), "still attached: {shown}");
    // And attached again by the next queue.
    let (rx, tx) = in_ns(&b, || open_queue("vb", 0, &XdpConfig::default())).unwrap();
    assert!(attached(&net));
    drop(rx);
    // Bad sizes and names are refused before anything is attached.
    let errs = in_ns(&b, || {
        let bad_ring = XdpConfig {
            ring: 1000,
            ..XdpConfig::default()
        };
        [
            open_queue("vb", 0, &bad_ring).err().map(|e| e.to_string()),
            open_queue("nope0", 0, &XdpConfig::default())
                .err()
                .map(|e| e.to_string()),
            open_queue("vb", 7, &XdpConfig::default())
                .err()
                .map(|e| e.to_string()),
        ]
    });
    assert!(errs[0].as_deref().unwrap().contains("power of two"));
    assert!(errs[1].as_deref().unwrap().contains("no interface `nope0`"));
    assert!(
        errs[2].as_deref().unwrap().contains("queue 7"),
        "{:?}",
        errs[2]
    );
    drop(tx);
    assert!(!attached(&net));
}

#[test]
fn generic_mode_and_explicit_copy_mode_work_and_zero_copy_is_refused_on_veth() {
    if skip_unless_root("generic_mode_and_explicit_copy_mode_work_and_zero_copy_is_refused_on_veth")
        .is_some()
    {
        return;
    }
    let mut net = network("xd8", &["a", "b"]);
    net.add_link("a", "va", "b", "vb", 1).unwrap();
    let (a, b) = (net.ns_name("a"), net.ns_name("b"));
    let generic = XdpConfig {
        mode: XdpMode::Generic,
        ..XdpConfig::default()
    };
    let (mut rx, mut tx) = in_ns(&b, move || open_queue("vb", 0, &generic)).unwrap();
    assert_eq!((rx.mode(), rx.fallback_reason()), ("generic copy", None));
    assert!(link_show(&net, "b", "vb").contains("xdpgeneric"));
    let sock = in_ns(&a, || RawSock::open("va"));
    const N: u32 = 100;
    for s in 0..N {
        sock.send(&frame(size(s), 6000, 0, s));
    }
    assert_eq!(collect(&mut rx, N as usize).len(), N as usize);
    send_all(&mut tx, &[frame(100, 6001, 1, 0)]);
    let start = Instant::now();
    let mut back = None;
    while back.is_none() && start.elapsed() < PATIENCE {
        back = sock.recv().filter(|f| ours(f) == Some((1, 0)));
    }
    assert_eq!(back, Some(frame(100, 6001, 1, 0)));
    // A second queue cannot ask for native while the program runs generic.
    let err = in_ns(&b, || {
        let native = XdpConfig {
            mode: XdpMode::Native,
            ..XdpConfig::default()
        };
        open_queue("vb", 0, &native).err().unwrap().to_string()
    });
    assert!(err.contains("generic mode"), "{err}");
    drop((rx, tx));

    let errs = in_ns(&b, || {
        let zc = |mode, zero_copy| XdpConfig {
            mode,
            zero_copy,
            ..XdpConfig::default()
        };
        let native_copy = open_queue("vb", 0, &zc(XdpMode::Native, ZeroCopy::Off))
            .map(|(rx, _)| (rx.mode(), rx.fallback_reason().map(str::to_string)));
        (
            native_copy,
            open_queue("vb", 0, &zc(XdpMode::Native, ZeroCopy::On))
                .err()
                .map(|e| e.to_string()),
            open_queue("vb", 0, &zc(XdpMode::Generic, ZeroCopy::On))
                .err()
                .map(|e| e.to_string()),
        )
    });
    assert_eq!(errs.0.unwrap(), ("native copy", None));
    assert!(errs.1.unwrap().contains("no AF_XDP zero-copy"));
    assert!(errs.2.unwrap().contains("zero-copy needs native XDP"));
    assert!(!link_show(&net, "b", "vb").contains("xdp"));
}

#[test]
fn frames_longer_than_a_packet_buffer_are_counted_not_delivered() {
    if skip_unless_root("frames_longer_than_a_packet_buffer_are_counted_not_delivered").is_some() {
        return;
    }
    let mut net = network("xd9", &["a", "b"]);
    net.add_link("a", "va", "b", "vb", 1).unwrap();
    for (ns, ifname) in [("a", "va"), ("b", "vb")] {
        bricks_netns::ip(&["-n", &net.ns_name(ns), "link", "set", ifname, "mtu", "3000"]).unwrap();
    }
    let (a, b) = (net.ns_name("a"), net.ns_name("b"));
    let (mut rx, _tx) = in_ns(&b, || open_queue("vb", 0, &XdpConfig::default())).unwrap();
    let sent = [
        frame(100, 7000, 0, 0),
        frame(2500, 7000, 0, 1),
        frame(200, 7000, 0, 2),
        frame(2049, 7000, 0, 3),
        frame(2048, 7000, 0, 4),
    ];
    let to_send = sent.clone();
    in_ns(&a, move || {
        let sock = RawSock::open("va");
        for f in &to_send {
            sock.send(f);
        }
    });
    let got = collect(&mut rx, 3);
    let seqs: Vec<u32> = got.keys().map(|k| k.1).collect();
    assert_eq!(seqs, vec![0, 2, 4]);
    assert_eq!(got[&(0, 4)], sent[4]);
    let start = Instant::now();
    while rx.stats().oversized < 2 && start.elapsed() < PATIENCE {
        rx.recv(&mut Batch::new(), 64).unwrap();
    }
    let st = rx.stats();
    assert_eq!((st.packets, st.oversized), (3, 2));
}

#[test]
fn a_deleted_interface_is_reported_gone_by_both_halves() {
    if skip_unless_root("a_deleted_interface_is_reported_gone_by_both_halves").is_some() {
        return;
    }
    let mut net = network("xda", &["a", "b"]);
    net.add_link("a", "va", "b", "vb", 1).unwrap();
    let b = net.ns_name("b");
    let (mut rx, mut tx) = in_ns(&b, || open_queue("vb", 0, &XdpConfig::default())).unwrap();
    bricks_netns::ip(&["-n", &b, "link", "del", "vb"]).unwrap();
    let start = Instant::now();
    let mut rx_err = None;
    while rx_err.is_none() && start.elapsed() < PATIENCE {
        rx_err = rx.recv(&mut Batch::new(), 32).err();
    }
    assert!(matches!(rx_err, Some(DeviceError::Gone(_))), "{rx_err:?}");
    let mut batch = Batch::new();
    batch
        .push(Packet::from_slice(&frame(60, 1, 0, 0)).unwrap())
        .unwrap();
    tx.enqueue(&mut batch).unwrap();
    let tx_err = tx.flush().err();
    assert!(matches!(tx_err, Some(DeviceError::Gone(_))), "{tx_err:?}");
    drop((rx, tx));
}

#[test]
fn frames_that_find_the_fill_ring_empty_are_counted_once_each() {
    if skip_unless_root("frames_that_find_the_fill_ring_empty_are_counted_once_each").is_some() {
        return;
    }
    let mut net = network("xdb", &["a", "b"]);
    net.add_link("a", "va", "b", "vb", 1).unwrap();
    let (a, b) = (net.ns_name("a"), net.ns_name("b"));
    // 32 receive frames; the frames are sent before the RX half reads, so
    // all but 32 find the fill ring empty. 200 stay below veth's own
    // 256-frame ring, where a drop would not reach the socket's counters.
    let cfg = XdpConfig {
        frames: 64,
        ..XdpConfig::default()
    };
    let (mut rx, _tx) = in_ns(&b, move || open_queue("vb", 0, &cfg)).unwrap();
    const N: u32 = 200;
    in_ns(&a, move || {
        let sock = RawSock::open("va");
        for s in 0..N {
            sock.send(&frame(100, 7100, 0, s));
        }
    });
    let start = Instant::now();
    let mut got = 0u64;
    while got + rx.stats().ring_drops < u64::from(N) && start.elapsed() < PATIENCE {
        let mut batch = Batch::new();
        rx.recv(&mut batch, 64).unwrap();
        got += batch.iter().filter(|p| ours(p.data()).is_some()).count() as u64;
        std::thread::sleep(Duration::from_millis(1));
    }
    // Frames still on their way when the count was reached would be seen
    // as an excess below.
    std::thread::sleep(Duration::from_millis(100));
    let mut batch = Batch::new();
    rx.recv(&mut batch, 64).unwrap();
    got += batch.iter().filter(|p| ours(p.data()).is_some()).count() as u64;
    let st = rx.stats();
    assert!(st.ring_drops > 0, "nothing overflowed: {st:?}");
    assert_eq!(got + st.ring_drops, u64::from(N), "{st:?}");
}

#[test]
fn a_busy_polling_queue_receives_every_frame_through_its_own_polls() {
    if skip_unless_root("a_busy_polling_queue_receives_every_frame_through_its_own_polls").is_some()
    {
        return;
    }
    let mut net = network("xd9", &["a", "b"]);
    net.add_link("a", "va", "b", "vb", 1).unwrap();
    let (a, b) = (net.ns_name("a"), net.ns_name("b"));
    // vb defers its NAPI processing after each busy poll, as a router
    // that busy-polls is set up: frames then arrive through recv's polls.
    for (knob, value) in [
        ("napi_defer_hard_irqs", "2"),
        ("gro_flush_timeout", "200000"),
    ] {
        let set = format!("echo {value} > /sys/class/net/vb/{knob}");
        let out = net.exec("b", &["sh", "-c", &set]).output().unwrap();
        assert!(out.status.success(), "{knob}: {out:?}");
    }
    let cfg = XdpConfig {
        busy_poll_us: 50,
        ..XdpConfig::default()
    };
    let (mut rx, _tx) = in_ns(&b, move || open_queue("vb", 0, &cfg)).unwrap();
    assert_eq!(rx.busy_poll_us(), 50, "the kernel holds the poll time");
    let (plain, _t) = in_ns(&a, || open_queue("va", 0, &XdpConfig::default())).unwrap();
    assert_eq!(plain.busy_poll_us(), 0);

    raw_frames_arrive(&a, &mut rx, 600, 1200);
    assert_eq!(rx.stats().ring_drops, 0);

    // A poll longer than the bound is refused before any socket is made.
    let long = XdpConfig {
        busy_poll_us: crate::xdp::MAX_BUSY_POLL_US + 1,
        ..XdpConfig::default()
    };
    let err = in_ns(&b, move || open_queue("vb", 0, &long).err()).unwrap();
    assert!(err.to_string().contains("at most"), "{err}");
}
