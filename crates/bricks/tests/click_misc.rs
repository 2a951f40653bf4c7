//! Click's smaller element classes (ForceIP, ForceUDP, ForceTCP,
//! ForceICMP, CheckPattern, SendPattern, ComparePackets, Null2-Null8,
//! NullTask, HandlerTask, Error, SimpleIdle, ARPFaker, EtherPauseSource,
//! IPNameInfo, IPFieldInfo, IncrementSeqNo, StoreUDPTimeSeqRecord,
//! EtherCount, PushAnno, ReadAnno, Reframe, UpstreamNotifier,
//! QuickNoteQueue, FromHandler) in whole configurations run by the
//! `bricks` binary. What they put on the wire is read back by tcpdump or
//! tshark where installed, and by an independent checksum routine here;
//! ARPFaker's reply is sent to a Linux host in a network namespace, whose
//! neighbour table must take it; Reframe reads a stream cut by Linux's
//! TCP.

mod bounded;
#[allow(dead_code)] // the helpers this test does not use
mod common;

use bricks_io::pcap::{PcapReader, Record};
use bricks_netns::{skip_unless_root, Network};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Runs `config` (with `extra` options) to its end and checks it
/// succeeded; returns stdout and stderr.
fn run(config: &str, extra: &[&str]) -> (String, String) {
    let o = bounded::run(config, extra);
    let out = bounded::text(&o.stdout);
    let err = bounded::text(&o.stderr);
    assert!(o.status.success(), "{config}\n{err}");
    (out, err)
}

/// The frames of a capture with their timestamps (ns).
fn frames(path: &Path) -> Vec<(u64, Vec<u8>)> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut r = PcapReader::new(f).unwrap();
    let mut v = Vec::new();
    while let Some(rec) = r.next_record().unwrap() {
        if let Record::Packet(p) = rec {
            v.push((p.anno().timestamp.0, p.data().to_vec()));
        }
    }
    v
}

/// `tool ARGS` if the tool is installed: its stdout, else `None` (and a
/// note that the check is skipped).
fn tool(name: &str, args: &[&str]) -> Option<String> {
    match Command::new(name).args(args).output() {
        Ok(o) => {
            assert!(
                o.status.success(),
                "{name} {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            Some(String::from_utf8_lossy(&o.stdout).into_owned())
        }
        Err(_) => {
            eprintln!("SKIP {name} check: {name} is not installed");
            None
        }
    }
}

/// The RFC 1071 sum of `bytes`, folded, not complemented.
fn sum(bytes: &[u8]) -> u16 {
    let mut s = 0u32;
    for w in bytes.chunks(2) {
        s += u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Whether the IPv4 packet `ip`'s header checksum and, for UDP, TCP and
/// ICMP, the checksum over its payload are right (the Force elements make
/// the latter right even in a fragment, taking the payload as the
/// transport segment).
fn checksums_ok(ip: &[u8]) -> bool {
    let hl = usize::from(ip[0] & 0x0f) * 4;
    let len = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if sum(&ip[..hl]) != 0xffff {
        return false;
    }
    let seg = &ip[hl..len];
    match ip[9] {
        1 => sum(seg) == 0xffff,
        6 | 17 => {
            let mut pseudo = ip[12..20].to_vec();
            pseudo.extend_from_slice(&[0, ip[9]]);
            pseudo.extend_from_slice(&(seg.len() as u16).to_be_bytes());
            pseudo.extend_from_slice(seg);
            sum(&pseudo) == 0xffff
        }
        _ => true,
    }
}

/// A UDP datagram in IPv4, its checksums right.
fn udp_ip(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = 28 + payload.len();
    let mut p = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, 17, 0, 0];
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    let h = !sum(&p[..20]);
    p[10..12].copy_from_slice(&h.to_be_bytes());
    let mut pseudo = p[12..20].to_vec();
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    pseudo.extend_from_slice(&p[20..]);
    let u = match !sum(&pseudo) {
        0 => 0xffff,
        s => s,
    };
    p[26..28].copy_from_slice(&u.to_be_bytes());
    assert!(checksums_ok(&p));
    p
}

#[test]
fn force_elements_make_packets_tcpdump_accepts() {
    let tmp = tempfile::tempdir().unwrap();
    let path = |n: &str| tmp.path().join(n).display().to_string();
    let (udp, tcp, icmp) = (path("udp.pcap"), path("tcp.pcap"), path("icmp.pcap"));
    // Random bytes, the protocol byte set, made IP, then made transport.
    run(
        &format!(
            "RandomSeed(7);
             RandomSource(60, LIMIT 40) -> StoreData(9, \\<11>) -> ForceIP -> MarkIPHeader
               -> u :: ForceUDP(discard) -> ToDump({udp}, ENCAP IP);
             RandomSource(80, LIMIT 40) -> StoreData(9, \\<06>) -> ForceIP -> MarkIPHeader
               -> t :: ForceTCP(80, FLAGS 0x18) -> ToDump({tcp}, ENCAP IP);
             RandomSource(50, LIMIT 40) -> StoreData(9, \\<01>) -> ForceIP -> MarkIPHeader
               -> i :: ForceICMP(echo, 0) -> ToDump({icmp}, ENCAP IP);"
        ),
        &[],
    );
    for (file, proto, port) in [
        (&udp, 17, Some(9u16)),
        (&tcp, 6, Some(80)),
        (&icmp, 1, None),
    ] {
        let got = frames(Path::new(file));
        assert!(got.len() >= 10, "{file}: only {} packets", got.len());
        let mut whole = 0;
        for (_, ip) in &got {
            assert_eq!(ip[0] >> 4, 4, "{file}");
            assert_eq!(usize::from(u16::from_be_bytes([ip[2], ip[3]])), ip.len());
            assert_eq!(ip[9], proto);
            assert!(checksums_ok(ip), "{file}: {ip:02x?}");
            let hl = usize::from(ip[0] & 0x0f) * 4;
            match port {
                Some(p) => assert_eq!(u16::from_be_bytes([ip[hl + 2], ip[hl + 3]]), p),
                None => assert_eq!(ip[hl..hl + 2], [8, 0]),
            }
            if ip[6] & 0x3f == 0 && ip[7] == 0 {
                whole += 1;
            }
        }
        assert!(whole > 0, "{file}: every packet a fragment");
        // tcpdump checks the IP header checksum, and the transport one of
        // whole packets it can decode.
        let Some(text) = tool("tcpdump", &["-r", file, "-n", "-vv"]) else {
            continue;
        };
        for bad in [
            "bad cksum",
            "bad udp cksum",
            "incorrect",
            "wrong icmp cksum",
        ] {
            assert!(!text.contains(bad), "{file}: tcpdump says {bad}:\n{text}");
        }
        let good = match proto {
            17 => "[udp sum ok]",
            6 => "(correct)",
            _ => "ICMP echo request",
        };
        assert!(text.contains(good), "{file}: no `{good}` in\n{text}");
    }
}

#[test]
fn send_pattern_and_check_pattern_find_the_bit_error() {
    let (out, err) = run(
        "SendPattern(64) -> StoreData(10, \\<ff>) -> a :: CheckPattern(64)
           -> b :: CheckPattern(65) -> Unqueue(LIMIT 3) -> Discard;",
        &["-h", "a.bad_data", "-h", "b.bad_length"],
    );
    assert_eq!(out, "a.bad_data:\n3\n\nb.bad_length:\n3\n\n");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines
            .iter()
            .filter(|l| **l == "CheckPattern: i=10 pkt ff wanted 0a")
            .count(),
        6
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| **l == "CheckPattern: p->length() 64 _len 65")
            .count(),
        3
    );
}

#[test]
fn compare_packets_reports_differences() {
    let cfg = |b: &str| {
        format!(
            "a :: InfiniteSource(DATA \\<01 02 03>, LIMIT 3) -> qa :: Queue;
             b :: InfiniteSource({b}) -> qb :: Queue;
             qa -> [0] c :: ComparePackets(TIMESTAMP false) [0] -> Discard;
             qb -> [1] c [1] -> Discard;"
        )
    };
    let (out, _) = run(
        &cfg("DATA \\<01 02 03>, LIMIT 3"),
        &["-h", "c.all_same", "-h", "c.diffs"],
    );
    assert_eq!(out, "c.all_same:\ntrue\n\nc.diffs:\n0\n\n");
    let (out, _) = run(
        &cfg("DATA \\<01 02 04>, LIMIT 2"),
        &["-h", "c.diff_details"],
    );
    // Two pairs differ in data; the third packet of input 0 has no
    // partner.
    assert_eq!(
        out,
        "0\tdifferent length\n2\tdifferent data\n0\tdifferent timestamp\n\
         0\tdifferent network header offset\n0\tdifferent network header length\n\
         0\tdifferent network header presence\n1\tmore packets in [0]\n\
         0\tmore packets in [1]\n"
    );
}

#[test]
fn tasks_nulls_and_error() {
    let (out, _) = run("n :: NullTask(LIMIT 1000, STOP true);", &["-h", "n.count"]);
    assert_eq!(out, "1000\n");
    // HandlerTask turns the source on once; the packets cross every NullN.
    let (out, _) = run(
        "i :: InfiniteSource(ACTIVE false, LIMIT 5) -> c :: Counter -> Null2 -> Null3
           -> Null4 -> Null5 -> Null6 -> Null7 -> Null8 -> d :: Discard;
         h :: HandlerTask(i.active true);",
        &["-h", "d.count", "-h", "h.count"],
    );
    assert_eq!(out, "d.count:\n5\n\nh.count:\n1\n\n");
    // Error keeps the router from starting, whatever its arguments and
    // ports.
    let o = bounded::run(
        "InfiniteSource -> e :: Error(a, B c, \\<00>) -> Discard; Idle -> [1] e [1] -> Discard;",
        &[],
    );
    assert!(!o.status.success());
    let err = bounded::text(&o.stderr);
    assert_eq!(
        err.matches("always fails to initialize").count(),
        1,
        "{err}"
    );
    assert!(err.contains("configuration was not run"), "{err}");
    // SimpleIdle gives no empty notification: a task pulling from it
    // reads as scheduled, one pulling from Idle does not.
    let (out, _) = run(
        "SimpleIdle -> u :: Unqueue -> Discard; Idle -> v :: Unqueue -> Discard;",
        &["-q", "-h", "u.scheduled", "-h", "v.scheduled"],
    );
    assert_eq!(out, "u.scheduled:\ntrue\n\nv.scheduled:\nfalse\n\n");
    // The name databases check and change nothing.
    let (out, _) = run(
        "IPNameInfo; IPFieldInfo; InfiniteSource(LIMIT 1) -> c :: Counter -> Discard;",
        &["-h", "c.count"],
    );
    assert_eq!(out, "1\n");
}

#[test]
fn ether_pause_source_makes_annex_31b_frames() {
    let tmp = tempfile::tempdir().unwrap();
    let pushed = tmp.path().join("pushed.pcap");
    let pulled = tmp.path().join("pulled.pcap");
    run(
        &format!(
            "EtherPauseSource(00:1e:13:22:48:91, 390, LIMIT 3, INTERVAL 0.01)
               -> ToDump({});
             p :: EtherPauseSource(00:1e:13:22:48:91, 65535, DST 02:00:00:00:00:07, LIMIT 2)
               -> Unqueue -> ToDump({});",
            pushed.display(),
            pulled.display()
        ),
        &[],
    );
    // IEEE 802.3 Annex 31B: DA 01-80-C2-00-00-01, SA, Length/Type 88-08,
    // opcode 00-01 (PAUSE), pause_time (390 = 01-86), 42 reserved octets
    // of zero; 60 octets before the FCS.
    let mut want = vec![
        0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, 0x00, 0x1e, 0x13, 0x22, 0x48, 0x91, 0x88, 0x08, 0x00,
        0x01, 0x01, 0x86,
    ];
    want.resize(60, 0);
    let got = frames(&pushed);
    assert_eq!(got.len(), 3);
    for (_, f) in &got {
        assert_eq!(*f, want);
    }
    // About INTERVAL apart.
    let gap = got[1].0 - got[0].0;
    assert!((9_000_000..200_000_000).contains(&gap), "{gap} ns");
    let got = frames(&pulled);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].1[..6], [2, 0, 0, 0, 0, 7]);
    assert_eq!(got[0].1[16..18], [0xff, 0xff]);
    // tshark decodes the MAC Control PAUSE and its quanta.
    let file = pushed.display().to_string();
    if let Some(t) = tool(
        "tshark",
        &[
            "-r",
            &file,
            "-T",
            "fields",
            "-e",
            "macc.opcode",
            "-e",
            "macc.pause_time",
        ],
    ) {
        assert_eq!(t, "0x0001\t390\n".repeat(3));
    }
    if let Some(t) = tool("tcpdump", &["-r", &file, "-e", "-n"]) {
        assert_eq!(t.matches("ethertype MPCP (0x8808)").count(), 3, "{t}");
        assert_eq!(t.matches("Opcode Pause").count(), 3, "{t}");
    }
}

#[test]
fn arp_faker_in_simulated_time() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("arp.pcap");
    run(
        &format!(
            "ARPFaker(18.26.4.1, 0:e0:2b:b:1a:0, 18.26.4.99, 00:a0:c9:9c:fd:9c)
               -> ToDump({});
             DriverManager(wait 25s, stop);",
            dump.display()
        ),
        &["--simtime"],
    );
    let got = frames(&dump);
    // One second after the start (Click's simulated clock starts at
    // 1000000000), then every 10 seconds.
    let times: Vec<u64> = got.iter().map(|(t, _)| t / 1_000_000_000).collect();
    assert_eq!(times, [1_000_000_001, 1_000_000_011, 1_000_000_021]);
    let file = dump.display().to_string();
    if let Some(t) = tool("tcpdump", &["-r", &file, "-n", "-e"]) {
        assert_eq!(
            t.matches("00:a0:c9:9c:fd:9c > 00:e0:2b:0b:1a:00, ethertype ARP (0x0806), length 42: Reply 18.26.4.99 is-at 00:a0:c9:9c:fd:9c, length 28")
                .count(),
            3,
            "{t}"
        );
    }
}

/// ARPFaker's reply, sent on a veth, makes a Linux host point its
/// neighbour entry for the claimed address at the claimed Ethernet
/// address.
#[test]
fn arp_faker_convinces_linux() {
    if skip_unless_root("arp_faker_convinces_linux").is_some() {
        return;
    }
    let mut net = Network::new(&Network::unique_prefix("misc")).unwrap();
    net.add_namespace("r").unwrap();
    net.add_namespace("h").unwrap();
    net.add_link("r", "r0", "h", "h0", 1).unwrap();
    net.add_addr("h", "h0", "18.26.4.1/24").unwrap();
    let h = net.ns_name("h");
    // Linux takes an unsolicited reply only for an address it has an
    // entry for.
    bricks_netns::ip(&[
        "-n",
        &h,
        "neigh",
        "add",
        "18.26.4.99",
        "lladdr",
        "02:00:00:00:00:01",
        "dev",
        "h0",
        "nud",
        "stale",
    ])
    .unwrap();
    let mac = net.mac("h", "h0").unwrap();
    let config = format!(
        "ARPFaker(18.26.4.1, {mac}, 18.26.4.99, 00:a0:c9:9c:fd:9c) -> ToDevice(r0);
         DriverManager(wait 1.3s, stop);"
    );
    let out = bricks_netns::output_timeout(
        net.exec(
            "r",
            &[
                env!("CARGO_BIN_EXE_bricks"),
                "run",
                "--quiet",
                "-e",
                &config,
            ],
        )
        .stdin(std::process::Stdio::null()),
        Duration::from_secs(20),
    )
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let neigh = bricks_netns::ip(&["-n", &h, "neigh", "show", "18.26.4.99"]).unwrap();
    let neigh = String::from_utf8_lossy(&neigh.stdout);
    assert!(neigh.contains("lladdr 00:a0:c9:9c:fd:9c"), "{neigh}");
}

#[test]
fn sequence_numbers_and_time_records() {
    let tmp = tempfile::tempdir().unwrap();
    let seq = tmp.path().join("seq.pcap");
    let (out, _) = run(
        &format!(
            "InfiniteSource(LIMIT 3, LENGTH 8)
               -> x :: IncrementSeqNo(OFFSET 4, FIRST 7, NET_BYTE_ORDER true)
               -> ToDump({});",
            seq.display()
        ),
        &["-h", "x.seq"],
    );
    assert_eq!(out, "10\n");
    let got: Vec<Vec<u8>> = frames(&seq).into_iter().map(|(_, f)| f).collect();
    let numbers: Vec<&[u8]> = got.iter().map(|f| &f[4..8]).collect();
    assert_eq!(numbers, [[0, 0, 0, 7], [0, 0, 0, 8], [0, 0, 0, 9]]);

    // A record stamped before a 100 ms delay and measured after it, in
    // simulated time, so the delay is exact.
    let ts = tmp.path().join("ts.pcap");
    let (out, _) = run(
        &format!(
            "TimedSource(0.1, \\<00000000 00000000 00000000 00000000 00000000 0000>, LIMIT 3)
               -> UDPIPEncap(10.0.1.1, 6667, 20.0.0.2, 6667)
               -> EtherEncap(0x0800, 00:04:23:D0:93:63, 00:17:cb:0d:f8:db)
               -> a :: StoreUDPTimeSeqRecord(OFFSET 14) -> Queue -> DelayUnqueue(100msec)
               -> b :: StoreUDPTimeSeqRecord(OFFSET 14, DELTA true) -> ToDump({});",
            ts.display()
        ),
        &["--simtime", "-h", "a.count"],
    );
    assert_eq!(out, "3\n");
    let got = frames(&ts);
    assert_eq!(got.len(), 3);
    for (i, (_, f)) in got.iter().enumerate() {
        let w = |at: usize| u32::from_be_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]]);
        assert_eq!(w(42), i as u32 + 1, "sequence number");
        // Stamped 0.1 s apart from the simulated start.
        let stamped = u64::from(w(46)) * 1_000_000_000 + u64::from(w(50));
        assert_eq!(
            stamped,
            1_000_000_000_000_000_000 + (i as u64 + 1) * 100_000_000
        );
        assert_eq!((w(54), w(58)), (0, 100_000_000), "the delay");
        assert!(checksums_ok(&f[14..]));
    }
    let file = ts.display().to_string();
    if let Some(t) = tool("tcpdump", &["-r", &file, "-n", "-vv"]) {
        assert_eq!(t.matches("[udp sum ok]").count(), 3, "{t}");
    }
}

#[test]
fn ether_count_and_annotations_through_a_capture() {
    let (out, _) = run(
        "InfiniteSource(DATA \\<ffffffffffff 020000000001 0800>, LIMIT 3) -> e :: EtherCount
           -> Discard;
         InfiniteSource(DATA \\<ffffffffffff 020000000002 0800>, LIMIT 1) -> e;",
        &["-h", "e.stats"],
    );
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(lines, ["02-00-00-00-00-01 3", "02-00-00-00-00-02 1"]);

    // PushAnno writes the annotations into the packet, a capture keeps
    // them, ReadAnno restores them.
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("anno.pcap");
    run(
        &format!(
            "InfiniteSource(DATA \\<00112233>, LIMIT 2) -> SetIPAddress(10.0.0.9) -> Paint(7)
               -> PushAnno -> ToDump({});",
            dump.display()
        ),
        &[],
    );
    for (_, f) in frames(&dump) {
        assert_eq!(f.len(), 52);
        assert_eq!(f[..4], [10, 0, 0, 9]);
        assert_eq!(f[16], 7);
        assert_eq!(f[48..], [0x00, 0x11, 0x22, 0x33]);
    }
    let (out, err) = run(
        &format!(
            "FromDump({}) -> ReadAnno -> Strip(48) -> CheckPaint(7)
               -> Print(PRINTANNO true) -> c :: Counter -> Discard;",
            dump.display()
        ),
        &["-h", "c.count"],
    );
    assert_eq!(out, "2\n");
    // The destination address (bytes 0-3) and the paint (byte 16) are
    // back in the annotations.
    let line = format!(
        "   4 | 0a000009{}07{} | 00112233",
        "00".repeat(12),
        "00".repeat(31)
    );
    assert_eq!(err.lines().filter(|l| *l == line).count(), 2, "{err}");
}

/// Reframe rebuilds IP packets from a TCP stream: the test writes three
/// datagrams as one stream in 13-byte writes, Linux's TCP and a 7-byte
/// SNAPLEN cut it anywhere, and the packets come out whole.
#[test]
fn reframe_rebuilds_packets_from_a_tcp_stream() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("reframed.pcap");
    let config = format!(
        "Socket(TCP, 127.0.0.1, {port}, SNAPLEN 7) -> r :: Reframe
           -> Counter(COUNT_CALL 3 stop) -> ToDump({}, ENCAP IP);",
        dump.display()
    );
    let child = bounded::bricks(&["run", "--quiet", "-e", &config, "-h", "r.errors"])
        .spawn()
        .unwrap();
    let datagrams = [
        udp_ip([10, 0, 0, 1], [10, 0, 0, 2], 1234, 9, b"first"),
        udp_ip([10, 0, 0, 1], [10, 0, 0, 2], 1234, 9, &[0x5a; 300]),
        udp_ip([10, 0, 0, 3], [10, 0, 0, 2], 99, 9, b""),
    ];
    let stream = datagrams.concat();
    let start = Instant::now();
    let mut s = loop {
        match std::net::TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(e) => {
                assert!(start.elapsed() < Duration::from_secs(10), "connect: {e}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    s.set_nodelay(true).unwrap();
    for piece in stream.chunks(13) {
        s.write_all(piece).unwrap();
    }
    let o: Output = bounded::wait_bounded(child, &config);
    drop(s);
    assert!(o.status.success(), "{}", bounded::text(&o.stderr));
    assert_eq!(bounded::text(&o.stdout), "0\n");
    let got: Vec<Vec<u8>> = frames(&dump).into_iter().map(|(_, f)| f).collect();
    assert_eq!(got, datagrams);
    let file = dump.display().to_string();
    if let Some(t) = tool("tcpdump", &["-r", &file, "-n", "-vv"]) {
        assert_eq!(t.matches("[udp sum ok]").count(), 3, "{t}");
    }
}

#[test]
fn upstream_notifier_and_quick_note_queue_hold_sources_back() {
    let (out, _) = run(
        "InfiniteSource(LIMIT 10) -> u :: UpstreamNotifier(false) -> c :: Counter -> Discard;
         DriverManager(wait 0.05s, print c.count, write u.signal true, wait 0.05s,
                       print c.count, print u.signal, stop);",
        &[],
    );
    assert_eq!(out, "0\n10\ntrue\n");
    // A full QuickNoteQueue holds its source back: nothing is dropped.
    let (out, _) = run(
        "InfiniteSource(LIMIT 100, BURST 10) -> q :: QuickNoteQueue(3) -> Unqueue
           -> c :: Counter -> Discard;",
        &["-h", "c.count", "-h", "q.drops"],
    );
    assert_eq!(out, "c.count:\n100\n\nq.drops:\n0\n\n");
}

#[test]
fn from_handler_makes_packets_of_a_scripts_values() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = tmp.path().join("fh.pcap");
    // The script returns three packets' worth, then nothing.
    let (out, _) = run(
        &format!(
            "s :: Script(TYPE PASSIVE, init n 0, set n $(add $n 1), goto done $(gt $n 3),
                         returnq \"1000.5 | 0a0b0c0d0$n\", label done, return);
             fh :: FromHandler(s.run) -> c :: Counter -> ToDump({});
             Script(write fh.active true);",
            dump.display()
        ),
        &["-h", "c.count", "-h", "fh.active"],
    );
    assert_eq!(out, "c.count:\n3\n\nfh.active:\nfalse\n\n");
    let got = frames(&dump);
    assert_eq!(got.len(), 3);
    for (i, (t, f)) in got.iter().enumerate() {
        assert_eq!(*t, 1_000_500_000_000);
        assert_eq!(*f, [0x0a, 0x0b, 0x0c, 0x0d, i as u8 + 1]);
    }
}
