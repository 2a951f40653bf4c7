//! Click's TCP elements (`elements/tcpudp`: TCPFragmenter,
//! StatelessTCPResponder, TCPIPSend, DynamicUDPIPEncap; `elements/local`:
//! the TCP stack of `conf/test-tcp.click`, ToyTCP, TCPReflector, WebGen)
//! in whole configurations run by the `bricks` binary.
//!
//! Offline, the packets they write to captures are checked here and by
//! tcpdump, which verifies every checksum. As root, each runs against the
//! Linux stack of a network namespace the test makes, reached through a
//! KernelTun device: segments TCPFragmenter cuts are reassembled by a real
//! receiver byte for byte, a Linux client reads StatelessTCPResponder's
//! data and its own bytes back from TCPReflector, ToyTCP connects to a
//! Linux listener, Linux answers TCPIPSend's SYNs and takes
//! DynamicUDPIPEncap's datagrams on the ports they name, WebGen's
//! connections fetch pages from a Linux server, and Click's own test-tcp
//! stack exchanges a line with a Linux server. Namespaces are named
//! `b<pid>tc<x>-h`, hold nothing but loopback and the router's TUN device,
//! and are deleted when their test ends, failed or not; every run is
//! bounded in time and every source in packets. Without root these are
//! skipped with the reason printed (a failure under CI=true).

#[allow(dead_code)] // the helpers this test does not use
mod common;

use bricks_netns::{output_timeout, skip_unless_root, ChildGuard, Network};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BRICKS: &str = env!("CARGO_BIN_EXE_bricks");

/// Click's `conf/test-tcp.click`, as Click ships it.
const TEST_TCP: &str = r#"
FromDevice(eth0) 
  -> is_ip :: Classifier(12/0800, -);
is_ip [1] -> Discard;

is_ip [0] 
  -> Strip(14)
  -> CheckIPHeader 
  -> is_tcp :: IPClassifier(tcp 18.26.4.10, -);
is_tcp [1] -> Discard;

//
// below is the tcp stack
//

ack :: TCPAck;
con :: TCPConn;
dmx :: TCPDemux;
rob :: TCPBuffer(false);
b2p :: BufferConverter(1400);
fid :: CopyFlowID;
seq :: CopyTCPSeq;
out :: SetTCPChecksum
  -> SetIPChecksum
  -> IPPrint(o)
  -> EtherEncap(0x0800, 00:E0:98:09:AB:AF, 00:E0:52:EA:E2:02)
  -> ToDevice(eth0);

is_tcp [0] 
  -> IPPrint(p)
  -> CheckTCPHeader
  -> dmx
  -> [0] ack [0]     // figures out what ack number to use; schedule ACKs
  -> [0] con [0]     // process connection setup/termination packets
  -> IPPrint(i)
  -> rob             // reorder buffer
  -> IPPrint(b)
  -> [0] b2p;        // to application

b2p                  // from application
  -> Queue
  -> [1] con [1]     // sets sa, sp, da, dp, and seq number
  -> Unqueue         // XXX need retransmit thing
  -> [1] ack [1]     // tags on ack number
  -> [0] fid [0]     // remembers flowid
  -> [0] seq [0]     // remembers highest sequence number
  -> out;

con [2]              // send out SYN and SYN ACK packets
  -> [0] fid;

ack [2]              // send explicit ACKs
  -> [1] fid [1]     // set flowid
  -> [1] seq [1]     // set sequence number
  -> out;

Idle -> [1] b2p;     // for path mtu discovery

ControlSocket("TCP", 12345);
"#;

/// Click's `conf/test-toytcp.click`, as Click ships it.
const TEST_TOYTCP: &str = r#"
FromDevice(eth0, 0)
  -> cl :: Classifier(12/0800 23/06, 12/0806 20/0001)
  -> Strip(34)
  -> ToyTCP(5432)
//  -> IPEncap(6, 10.2.2.2, 10.0.0.1)
  -> IPEncap(6, 18.26.4.106, 18.26.4.123)
  -> SetTCPChecksum
//  -> EtherEncap(0x0800, 00:02:2d:00:42:96, 0:e0:98:1:f2:5c)
  -> EtherEncap(0x0800, 0:e0:29:5:e5:6f, 00:90:27:e0:23:1f)
  -> td :: ToDevice(eth0);

cl[1]
//  -> ARPResponder(10.2.2.2 00:02:2d:00:42:96)
  -> ARPResponder(18.26.4.106 0:e0:29:5:e5:6f)
  -> td;
"#;

/// Click's `conf/webgen.click`, as Click ships it.
const WEBGEN: &str = r#"fd :: FromDevice(00:00:5A:98:F9:28);
td :: ToDevice(00:00:5A:98:F9:28);
out :: Queue(1024) -> td;

fd -> cl :: Classifier(12/0800, 12/0806);

cl[0]
   -> Strip(14)
   -> WebGen(7.1.0.0/16, 1.0.0.1, 500)
   -> EtherEncap(0x0800, 00:00:5A:98:F9:28, 00:03:47:0D:39:57)
   -> out;

cl[1]
   -> ARPResponder(1.0.0.2 00:00:5A:98:F9:28)
   -> out;
"#;

fn bricks(args: &[&str]) -> std::process::Output {
    let mut c = Command::new(BRICKS);
    c.args(args).stdin(Stdio::null());
    output_timeout(&mut c, Duration::from_secs(20)).expect("bricks runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// RFC 1071 the slow way, apart from bricks' code.
fn sum(bytes: &[u8]) -> u32 {
    let mut s: u32 = 0;
    for c in bytes.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Whether the IPv4 datagram `ip` (a 20-byte header) and its TCP or UDP
/// segment sum right.
fn sums_ok(ip: &[u8]) -> bool {
    let len = usize::from(be16(ip, 2));
    let mut ph = ip[12..20].to_vec();
    ph.extend([0, ip[9]]);
    ph.extend(((len - 20) as u16).to_be_bytes());
    ph.extend(&ip[20..len]);
    sum(&ip[..20]) == 0xffff && sum(&ph) == 0xffff
}

/// A TCP/IP datagram from 10.0.0.1:40000 to 10.0.0.2:5001, sums made here.
fn tcp_datagram(seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let len = 40 + payload.len();
    let mut d = vec![
        0x45,
        0,
        (len >> 8) as u8,
        len as u8,
        0,
        7,
        0x40,
        0,
        64,
        6,
        0,
        0,
    ];
    d.extend([10, 0, 0, 1, 10, 0, 0, 2]);
    let c = !(sum(&d) as u16);
    d[10..12].copy_from_slice(&c.to_be_bytes());
    d.extend(40000u16.to_be_bytes());
    d.extend(5001u16.to_be_bytes());
    d.extend(seq.to_be_bytes());
    d.extend(9u32.to_be_bytes());
    d.extend([0x50, flags, 0x10, 0, 0, 0, 0, 0]);
    d.extend(payload);
    let mut ph = d[12..20].to_vec();
    ph.extend([0, 6]);
    ph.extend(((len - 20) as u16).to_be_bytes());
    ph.extend(&d[20..]);
    let c = !(sum(&ph) as u16);
    d[36..38].copy_from_slice(&c.to_be_bytes());
    d
}

/// Writes raw-IP records into a capture file.
fn write_raw_pcap(path: &Path, packets: &[Vec<u8>]) {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&101u32.to_le_bytes());
    for (i, p) in packets.iter().enumerate() {
        b.extend_from_slice(&(1_000_000 + i as u32).to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(p.len() as u32).to_le_bytes());
        b.extend_from_slice(&(p.len() as u32).to_le_bytes());
        b.extend_from_slice(p);
    }
    std::fs::write(path, b).unwrap();
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
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = text(&o.stdout).replace("\n    ", " ");
    Some(t.lines().map(str::to_string).collect())
}

#[test]
fn clicks_tcp_configurations_check() {
    let dir = tempfile::tempdir().unwrap();
    for (name, conf) in [
        ("test-tcp.click", TEST_TCP),
        ("test-toytcp.click", TEST_TOYTCP),
        ("webgen.click", WEBGEN),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, conf).unwrap();
        let o = bricks(&["check", path.to_str().unwrap()]);
        assert!(o.status.success(), "{name}:\n{}", text(&o.stderr));
    }
    // Without the TCPDemux upstream, TCPConn says what it needs, as Click.
    let o = bricks(&[
        "check",
        "-e",
        "Idle -> con :: TCPConn -> Discard; Idle -> Queue -> [1] con [1] -> Discard; \
         con[2] -> Discard;",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("need at least 1 upstream TCPDemux"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn tcp_fragmenter_output_is_what_tcpdump_and_a_receiver_read() {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("in.pcap"), dir.path().join("out.pcap"));
    let payload: Vec<u8> = (0..1900u32).map(|i| (i * 31 + 7) as u8).collect();
    // PSH|ACK|FIN, then a small packet that passes unchanged.
    let big = tcp_datagram(5000, 0x19, &payload);
    let small = tcp_datagram(6901, 0x10, b"tail");
    write_raw_pcap(&input, &[big, small.clone()]);
    let o = bricks(&[
        "run",
        "--quiet",
        "-e",
        &format!(
            "FromDump({}) -> MarkIPHeader -> f :: TCPFragmenter(MTU 600) -> ToDump({}, ENCAP IP);",
            input.display(),
            output.display()
        ),
        "-h",
        "f.fragments",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "4\n");
    let segs = common::read_pcap(&output);
    assert_eq!(segs.len(), 5);
    let mut data = Vec::new();
    for (k, s) in segs[..4].iter().enumerate() {
        assert!(s.len() <= 600);
        assert!(sums_ok(s), "segment {k}");
        assert_eq!(be32(s, 24), 5000 + data.len() as u32);
        assert_eq!(be16(s, 4), 7 + k as u16, "IP identification");
        assert_eq!(s[33], if k == 3 { 0x19 } else { 0x10 }, "flags of {k}");
        data.extend_from_slice(&s[40..]);
    }
    assert_eq!(data, payload);
    assert_eq!(segs[4], small);
    if let Some(lines) = tcpdump(&output) {
        assert_eq!(lines.len(), 5, "{lines:?}");
        for l in &lines {
            assert!(!l.contains("incorrect") && !l.contains("bad"), "{l}");
            assert!(l.contains("cksum"), "{l}");
        }
        assert!(lines[0].contains("seq 5000:5560"), "{}", lines[0]);
        assert!(lines[3].contains("Flags [FP.]"), "{}", lines[3]);
    }
}

#[test]
fn tcpipsend_and_dynamic_udpipencap_write_what_they_are_told() {
    let dir = tempfile::tempdir().unwrap();
    let (tcp, udp) = (dir.path().join("tcp.pcap"), dir.path().join("udp.pcap"));
    let o = bricks(&[
        "run",
        "--quiet",
        "-e",
        &format!(
            "t :: TCPIPSend -> ToDump({}, ENCAP IP);\n\
             Script(write t.send 10.0.0.1 1234 10.0.0.2 www 7 9 0x12 2, \
                    write t.send 10.0.0.1 1 10.0.0.2 2 3 4 4, stop);\n\
             InfiniteSource(DATA \"dyn\", LIMIT 5) \
             -> DynamicUDPIPEncap(10.0.0.1, 1000, 10.0.0.2, 2000, true, 2) \
             -> ToDump({}, ENCAP IP);",
            tcp.display(),
            udp.display()
        ),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t = common::read_pcap(&tcp);
    assert_eq!(t.len(), 3);
    for p in &t {
        assert_eq!(p.len(), 40);
        assert!(sums_ok(p));
        assert_eq!(p[12..20], [10, 0, 0, 1, 10, 0, 0, 2]);
        assert_eq!((p[6], p[8]), (0x40, 255));
    }
    assert_eq!((be16(&t[0], 20), be16(&t[0], 22)), (1234, 80));
    assert_eq!((be32(&t[0], 24), be32(&t[0], 28), t[0][33]), (7, 9, 0x12));
    assert_eq!(t[0], t[1]);
    assert_eq!(t[2][33], 0x04);
    let u = common::read_pcap(&udp);
    let ports: Vec<(u16, u16)> = u.iter().map(|p| (be16(p, 20), be16(p, 22))).collect();
    assert_eq!(
        ports,
        [
            (1000, 2000),
            (1000, 2000),
            (1001, 2001),
            (1001, 2001),
            (1002, 2002)
        ]
    );
    for p in &u {
        assert!(sums_ok(p));
        assert_eq!(&p[28..], b"dyn");
    }
    if let Some(lines) = tcpdump(&tcp) {
        assert!(
            lines[0].contains("10.0.0.1.1234 > 10.0.0.2.80: Flags [S.]"),
            "{}",
            lines[0]
        );
        assert!(lines
            .iter()
            .all(|l| l.contains("cksum") && !l.contains("incorrect")));
    }
    if let Some(lines) = tcpdump(&udp) {
        assert!(
            lines[4].contains("10.0.0.1.1002 > 10.0.0.2.2002"),
            "{}",
            lines[4]
        );
        assert!(
            lines.iter().all(|l| !l.contains("bad udp cksum")),
            "{lines:?}"
        );
    }
}

// ---------------------------------------------------------------------
// Against Linux, through a TUN device in a namespace (root only).

/// A namespace of its own for one test, or `None` (the reason printed)
/// without root.
fn namespace(test: &str, tag: &str) -> Option<Network> {
    if skip_unless_root(test).is_some() {
        return None;
    }
    let mut net = Network::new(&Network::unique_prefix(&format!("tc{tag}"))).unwrap();
    net.add_namespace("h").unwrap();
    Some(net)
}

/// bricks running a configuration in the namespace, its standard output
/// and error in files.
struct Router {
    child: ChildGuard,
    stdout: std::path::PathBuf,
    stderr: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Router {
    /// Starts `config` in namespace `h` and waits (at most 5 s) for the
    /// TUN device `btcp0` to be up.
    fn start(net: &Network, config: &str, extra: &[&str]) -> Router {
        let dir = tempfile::tempdir().unwrap();
        let (stdout, stderr) = (dir.path().join("stdout"), dir.path().join("stderr"));
        let mut argv = vec![BRICKS, "run", "-e", config, "--duration", "12"];
        argv.extend_from_slice(extra);
        let mut cmd = net.exec("h", &argv);
        cmd.stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap());
        let mut child = ChildGuard::spawn(&mut cmd).unwrap();
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            let o = output_timeout(
                &mut net.exec("h", &["ip", "-o", "link", "show", "btcp0"]),
                Duration::from_secs(5),
            )
            .unwrap();
            if o.status.success() && text(&o.stdout).contains(",UP") {
                break;
            }
            if child.try_wait().is_some() || Instant::now() >= end {
                child.kill();
                panic!(
                    "btcp0 never came up; bricks said:\n{}",
                    std::fs::read_to_string(&stderr).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Router {
            child,
            stdout,
            stderr,
            _dir: dir,
        }
    }

    /// Stops the router (SIGTERM) and returns what it printed on standard
    /// error, its final counters included.
    fn finish(self) -> String {
        self.finish_both().1
    }

    /// Stops the router and returns its standard output and error.
    fn finish_both(mut self) -> (String, String) {
        let status = self.child.stop(Duration::from_secs(5));
        let out = std::fs::read_to_string(&self.stdout).unwrap_or_default();
        let err = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        assert!(
            status.is_some_and(|s| s.success()),
            "bricks failed ({status:?}):\n{err}"
        );
        (out, err)
    }
}

/// The value of `counter` of element `name` in a run's final summary (0
/// when the summary leaves it out, as it does zeros).
fn counter(stderr: &str, name: &str, counter: &str) -> u64 {
    stderr
        .lines()
        .find(|l| l.starts_with(&format!("{name} (")))
        .and_then(|l| {
            l.split_whitespace()
                .find_map(|kv| kv.strip_prefix(&format!("{counter}=")))
        })
        .map_or(0, |v| v.parse().unwrap())
}

/// Namespace `h`'s TCP counters: `/proc/net/snmp`'s `Tcp` and
/// `/proc/net/netstat`'s `TcpExt`, each a line of names then one of
/// values.
fn tcp_counters(net: &Network) -> std::collections::HashMap<String, u64> {
    let mut m = std::collections::HashMap::new();
    for file in ["/proc/net/snmp", "/proc/net/netstat"] {
        let o = output_timeout(&mut net.exec("h", &["cat", file]), Duration::from_secs(5)).unwrap();
        let t = text(&o.stdout);
        let lines: Vec<&str> = t.lines().collect();
        for pair in lines.chunks(2) {
            let [names, values] = pair else { continue };
            let mut n = names.split_whitespace();
            let proto = n.next().unwrap_or("").trim_end_matches(':');
            for (name, v) in n.zip(values.split_whitespace().skip(1)) {
                if let Ok(v) = v.parse() {
                    m.insert(format!("{proto}{name}"), v);
                }
            }
        }
    }
    m
}

/// Runs `f` on a thread in namespace `h`.
fn in_ns<T: Send + 'static>(
    net: &Network,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let ns = net.ns_name("h");
    std::thread::spawn(move || bricks_netns::in_namespace(&ns, f))
}

const TIMEOUT: Option<Duration> = Some(Duration::from_secs(5));

#[test]
fn tcp_fragmenter_segments_reassemble_in_a_linux_receiver() {
    let Some(net) = namespace(
        "tcp_fragmenter_segments_reassemble_in_a_linux_receiver",
        "f",
    ) else {
        return;
    };
    // The host's client connects to 10.9.1.2 through the TUN device; the
    // rewriter turns its segments into segments from 10.9.1.1 to the host's
    // own server (and the answers back), cutting the client's 2000-byte
    // datagrams into 1000-byte ones on the way.
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("segments.pcap");
    let router = Router::start(
        &net,
        &format!(
            "tun :: KernelTun(10.9.0.1/16, MTU 2000, DEVNAME btcp0);\n\
             tun -> CheckIPHeader -> c :: IPClassifier(tcp, -);\n\
             c[1] -> Discard;\n\
             c[0] -> rw :: IPRewriter(pattern 10.9.1.1 - 10.9.0.1 - 0 1);\n\
             rw[0] -> frag :: TCPFragmenter(1000) -> t :: Tee -> tun;\n\
             t[1] -> ToDump({}, ENCAP IP);\n\
             rw[1] -> tun;",
            dump.display()
        ),
        &[],
    );
    let before = tcp_counters(&net);
    let data: Vec<u8> = (0..300_000u32)
        .map(|i| (i % 251) as u8 ^ (i >> 8) as u8)
        .collect();
    let server = in_ns(&net, || {
        let l = TcpListener::bind("10.9.0.1:5001").unwrap();
        let (mut s, peer) = l.accept().unwrap();
        s.set_read_timeout(TIMEOUT).unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        (peer, got)
    });
    std::thread::sleep(Duration::from_millis(100));
    let sent = data.clone();
    let client = in_ns(&net, move || {
        let addr: SocketAddr = "10.9.1.2:5001".parse().unwrap();
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
        s.set_write_timeout(TIMEOUT).unwrap();
        s.write_all(&sent).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        s.set_read_timeout(TIMEOUT).unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        rest.len()
    });
    let (peer, got) = server.join().expect("the server got the stream");
    assert_eq!(client.join().expect("the client sent it all"), 0);
    assert_eq!(peer.ip().to_string(), "10.9.1.1");
    assert_eq!(got.len(), data.len());
    assert!(got == data, "the stream arrived changed");
    let after = tcp_counters(&net);
    assert_eq!(after["TcpInCsumErrors"], before["TcpInCsumErrors"]);
    let err = router.finish();
    let (cut, made) = (
        counter(&err, "frag", "fragmented_count"),
        counter(&err, "frag", "fragments"),
    );
    assert!(cut > 100 && made >= 2 * cut, "{err}");
    // What went to the receiver: nothing over 1000 bytes, every sum right,
    // and the client's large segments did come through cut.
    let segs = common::read_pcap(&dump);
    assert!(segs.iter().all(|s| s.len() <= 1000 && sums_ok(s)));
    assert!(segs.iter().filter(|s| s.len() == 1000).count() as u64 >= cut);
}

#[test]
fn tcp_reflector_echoes_to_a_linux_client() {
    let Some(net) = namespace("tcp_reflector_echoes_to_a_linux_client", "r") else {
        return;
    };
    let router = Router::start(
        &net,
        "tun :: KernelTun(10.9.0.1/24, DEVNAME btcp0);\n\
         tun -> CheckIPHeader \
         -> IPFilter(allow tcp && dst host 10.9.0.77 && dst port 99, deny all) \
         -> r :: TCPReflector -> tun;",
        &[],
    );
    let client = in_ns(&net, || {
        let addr: SocketAddr = "10.9.0.77:99".parse().unwrap();
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
        s.set_read_timeout(TIMEOUT).unwrap();
        let mut echoed = Vec::new();
        for line in ["hello, bricks\n", "a second line\n", "and the last one\n"] {
            s.write_all(line.as_bytes()).unwrap();
            let mut buf = vec![0u8; line.len()];
            s.read_exact(&mut buf).unwrap();
            echoed.push(String::from_utf8(buf).unwrap());
        }
        // Our FIN is answered with one: the read sees the end.
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
        (echoed, rest)
    });
    let (echoed, rest) = client.join().expect("the client ran");
    assert_eq!(
        echoed,
        ["hello, bricks\n", "a second line\n", "and the last one\n"]
    );
    assert!(rest.is_empty());
    let err = router.finish();
    // The SYN, three lines, the FIN.
    assert_eq!(counter(&err, "r", "replies"), 5, "{err}");
}

#[test]
fn stateless_tcp_responder_serves_a_linux_client() {
    let Some(net) = namespace("stateless_tcp_responder_serves_a_linux_client", "s") else {
        return;
    };
    let body: String = (0..600).map(|i| format!("line {i:04}|")).collect();
    let router = Router::start(
        &net,
        &format!(
            "tun :: KernelTun(10.9.0.1/24, DEVNAME btcp0);\n\
             tun -> CheckIPHeader -> c :: IPClassifier(tcp dst port 80, -);\n\
             c[1] -> Discard;\n\
             c[0] -> s :: StatelessTCPResponder(\"{body}\") -> tun;"
        ),
        &[],
    );
    let client = in_ns(&net, || {
        let mut got = Vec::new();
        for _ in 0..2 {
            let addr: SocketAddr = "10.9.0.80:80".parse().unwrap();
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
            s.set_read_timeout(TIMEOUT).unwrap();
            s.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
            let mut all = Vec::new();
            s.read_to_end(&mut all).unwrap();
            got.push(all);
        }
        got
    });
    let got = client.join().expect("the client ran");
    for g in &got {
        assert_eq!(String::from_utf8_lossy(g), body);
    }
    let err = router.finish();
    assert!(
        counter(&err, "s", "replies") >= 2 * (6000 / 1460 + 2),
        "{err}"
    );
    assert_eq!(counter(&err, "s", "evil"), 0, "{err}");
}

#[test]
fn toytcp_connects_to_a_linux_listener() {
    let Some(net) = namespace("toytcp_connects_to_a_linux_listener", "t") else {
        return;
    };
    let listener = in_ns(&net, || {
        let l = TcpListener::bind("0.0.0.0:5432").unwrap();
        l.set_nonblocking(true).unwrap();
        l
    })
    .join()
    .unwrap();
    let before = tcp_counters(&net);
    let router = Router::start(
        &net,
        "tun :: KernelTun(10.9.0.1/24, DEVNAME btcp0);\n\
         tun -> CheckIPHeader -> c :: IPClassifier(tcp src port 5432, -);\n\
         c[1] -> Discard;\n\
         c[0] -> Strip(20) -> toy :: ToyTCP(5432, LIMIT 300) \
         -> IPEncap(6, 10.9.0.2, 10.9.0.1) -> SetTCPChecksum -> tun;",
        &[],
    );
    // ToyTCP's first SYN leaves a second after the start.
    let end = Instant::now() + Duration::from_secs(5);
    let (_conn, peer) = loop {
        match listener.accept() {
            Ok(c) => break c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < end => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("no connection from ToyTCP: {e}"),
        }
    };
    assert_eq!(peer.ip(), Ipv4Addr::new(10, 9, 0, 2));
    // Its one-byte segments ahead of the stream wait in Linux's
    // out-of-order queue; let the exchange run to LIMIT.
    let end = Instant::now() + Duration::from_secs(3);
    let after = loop {
        let c = tcp_counters(&net);
        if c["TcpExtTCPOFOQueue"] >= before["TcpExtTCPOFOQueue"] + 100 || Instant::now() > end {
            break c;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(after["TcpExtTCPOFOQueue"] > before["TcpExtTCPOFOQueue"]);
    assert_eq!(after["TcpInCsumErrors"], before["TcpInCsumErrors"]);
    let err = router.finish();
    assert_eq!(counter(&err, "toy", "connections"), 1, "{err}");
    assert_eq!(counter(&err, "toy", "sent"), 300, "{err}");
    assert!(counter(&err, "toy", "good") > 100, "{err}");
}

#[test]
fn linux_answers_tcpipsend_and_takes_dynamic_udp() {
    let Some(net) = namespace("linux_answers_tcpipsend_and_takes_dynamic_udp", "u") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let answers = dir.path().join("answers.pcap");
    // A listener on 7777, nothing on 7778; UDP sockets on 7000 to 7002.
    let (listener, sockets) = in_ns(&net, || {
        let l = TcpListener::bind("0.0.0.0:7777").unwrap();
        let socks: Vec<UdpSocket> = (7000..7003)
            .map(|p| {
                let s = UdpSocket::bind(("0.0.0.0", p)).unwrap();
                s.set_read_timeout(TIMEOUT).unwrap();
                s
            })
            .collect();
        (l, socks)
    })
    .join()
    .unwrap();
    let router = Router::start(
        &net,
        &format!(
            "tun :: KernelTun(10.9.0.1/24, DEVNAME btcp0);\n\
             t :: TCPIPSend -> tun;\n\
             InfiniteSource(DATA \"dyn\", LIMIT 6) \
             -> DynamicUDPIPEncap(10.9.0.2, 1000, 10.9.0.1, 7000, true, 2) -> tun;\n\
             tun -> CheckIPHeader -> c :: IPClassifier(tcp, -) -> ToDump({}, ENCAP IP);\n\
             c[1] -> Discard;\n\
             Script(wait 0.3s, \
                    write t.send 10.9.0.2 4321 10.9.0.1 7777 1000 0 2, \
                    write t.send 10.9.0.2 4322 10.9.0.1 7778 2000 0 2);",
            answers.display()
        ),
        &[],
    );
    let mut got = Vec::new();
    for (k, s) in sockets.iter().enumerate() {
        for _ in 0..2 {
            let mut buf = [0u8; 16];
            let (n, from) = s
                .recv_from(&mut buf)
                .unwrap_or_else(|e| panic!("port {}: {e}", 7000 + k));
            got.push((7000 + k, from.port(), buf[..n].to_vec()));
        }
    }
    assert_eq!(
        got.iter().map(|g| (g.0, g.1)).collect::<Vec<_>>(),
        [
            (7000, 1000),
            (7000, 1000),
            (7001, 1001),
            (7001, 1001),
            (7002, 1002),
            (7002, 1002)
        ]
    );
    assert!(got.iter().all(|g| g.2 == b"dyn"));
    // The SYNs leave 0.3 s after the start, and Linux answers at once.
    std::thread::sleep(Duration::from_millis(500));
    drop(listener);
    router.finish();
    let a = common::read_pcap(&answers);
    let synack = a
        .iter()
        .find(|p| be16(p, 22) == 4321)
        .expect("a SYN-ACK to 4321");
    assert_eq!((synack[33], be32(synack, 28)), (0x12, 1001));
    let rst = a
        .iter()
        .find(|p| be16(p, 22) == 4322)
        .expect("a RST to 4322");
    assert_eq!((rst[33], be32(rst, 28)), (0x14, 2001));
}

#[test]
fn clicks_tcp_stack_exchanges_lines_with_a_linux_server() {
    let Some(net) = namespace("clicks_tcp_stack_exchanges_lines_with_a_linux_server", "k") else {
        return;
    };
    let listener = in_ns(&net, || TcpListener::bind("0.0.0.0:5000").unwrap())
        .join()
        .unwrap();
    // test-tcp.click's stack on a TUN device instead of eth0; a Script is
    // the application: it connects, writes a line and reads the answer.
    let router = Router::start(
        &net,
        "tun :: KernelTun(10.9.0.1/24, DEVNAME btcp0);\n\
         tun -> CheckIPHeader -> is_tcp :: IPClassifier(tcp src host 10.9.0.1, -);\n\
         is_tcp[1] -> Discard;\n\
         ack :: TCPAck; con :: TCPConn; dmx :: TCPDemux; rob :: TCPBuffer(false);\n\
         b2p :: BufferConverter(1400); fid :: CopyFlowID; seq :: CopyTCPSeq;\n\
         out :: SetTCPChecksum -> SetIPChecksum -> tun;\n\
         is_tcp[0] -> CheckTCPHeader -> dmx -> [0] ack [0] -> [0] con [0] -> rob -> [0] b2p;\n\
         b2p -> Queue -> [1] con [1] -> Unqueue -> [1] ack [1] -> [0] fid [0] -> [0] seq [0] \
         -> out;\n\
         con [2] -> [0] fid;\n\
         ack [2] -> [1] fid [1] -> [1] seq [1] -> out;\n\
         Idle -> [1] b2p;\n\
         Script(wait 0.2s, write con.ctrl connect 10.9.0.2 4000 10.9.0.1 5000, wait 0.3s, \
                write b2p.data hello from click, wait 0.5s, print $(b2p.data));",
        &[],
    );
    let server = in_ns(&net, move || {
        listener.set_nonblocking(false).unwrap();
        let (mut s, peer) = listener.accept().unwrap();
        s.set_read_timeout(TIMEOUT).unwrap();
        let mut line = [0u8; 16];
        s.read_exact(&mut line).unwrap();
        s.write_all(b"reply from linux").unwrap();
        // Until the router goes, or a reset.
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        (peer, line)
    });
    std::thread::sleep(Duration::from_millis(1500));
    let (out, err) = router.finish_both();
    let (peer, line) = server.join().expect("the server ran");
    assert_eq!(peer.to_string(), "10.9.0.2:4000");
    assert_eq!(&line, b"hello from click");
    assert_eq!(out.trim_end(), "reply from linux", "{err}");
    assert_eq!(counter(&err, "con", "syns"), 1, "{err}");
    assert!(counter(&err, "ack", "acks") >= 1, "{err}");
    assert_eq!(counter(&err, "rob", "drops"), 0, "{err}");
}

#[test]
fn webgen_fetches_pages_from_a_linux_server() {
    let Some(net) = namespace("webgen_fetches_pages_from_a_linux_server", "w") else {
        return;
    };
    let listener = in_ns(&net, || {
        let l = TcpListener::bind("0.0.0.0:80").unwrap();
        l.set_nonblocking(true).unwrap();
        l
    })
    .join()
    .unwrap();
    // Clients from 10.9.1.0/24, which the host routes through the device.
    let router = Router::start(
        &net,
        "tun :: KernelTun(10.9.0.1/16, DEVNAME btcp0);\n\
         tun -> CheckIPHeader -> c :: IPClassifier(tcp src port 80, -);\n\
         c[1] -> Discard;\n\
         c[0] -> w :: WebGen(10.9.1.0/24, 10.9.0.1, 40) -> tun;",
        &[],
    );
    // The server: each request answered and closed, for a second.
    let mut requests = Vec::new();
    let end = Instant::now() + Duration::from_millis(1200);
    while Instant::now() < end {
        match listener.accept() {
            Ok((mut s, peer)) => {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(TIMEOUT).unwrap();
                // The request comes with its FIN: read to the end.
                let mut req = Vec::new();
                s.read_to_end(&mut req).unwrap();
                s.write_all(b"HTTP/1.0 200 OK\r\n\r\nok\n").unwrap();
                requests.push((peer, String::from_utf8(req).unwrap()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
    // Let the last answers be acknowledged.
    std::thread::sleep(Duration::from_millis(300));
    let err = router.finish();
    assert!(requests.len() >= 30, "{} requests\n{err}", requests.len());
    for (peer, req) in &requests {
        let std::net::IpAddr::V4(a) = peer.ip() else {
            panic!("{peer}")
        };
        assert_eq!(a.octets()[..3], [10, 9, 1], "{peer}");
        assert!(
            req.starts_with("GET /spec/") && req.ends_with(" HTTP/1.0\r\n\r\n"),
            "{req:?}"
        );
    }
    let (initiated, completed) = (
        counter(&err, "w", "initiated"),
        counter(&err, "w", "completed"),
    );
    assert!(completed as usize + 2 >= requests.len(), "{err}");
    assert!(initiated >= completed, "{err}");
    assert_eq!(counter(&err, "w", "resets"), 0, "{err}");
}
