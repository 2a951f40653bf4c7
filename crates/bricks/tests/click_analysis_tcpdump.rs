//! FromTcpdump against the real tcpdump, in whole configurations run by
//! the `bricks` binary: a capture made here is printed by `tcpdump -r`
//! (plain, `-v`, and with other timestamp forms), FromTcpdump reads the
//! text back, and the packets' IP summary dumps (ToIPSummaryDump) are
//! compared with the capture's own. Then StoreTimestamp,
//! AggregateIPAddrPair and AggregatePaint run on the packets read back.
//!
//! The tests that need tcpdump say so and pass when it is missing
//! (`scripts/setup` installs it).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "bricks-analysis-tcpdump-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `config` to its end with extra arguments; returns stdout and
/// stderr.
fn run(config: &str, extra: &[&str]) -> (String, String) {
    let mut args = vec!["run", "-e", config];
    args.extend_from_slice(extra);
    let o = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(&args)
        .output()
        .expect("bricks runs");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{config}:\n{err}");
    (String::from_utf8_lossy(&o.stdout).into_owned(), err)
}

/// Counter `name` of element `elem` in the final report (0 if absent).
fn counter(report: &str, elem: &str, name: &str) -> u64 {
    let Some(line) = report.lines().find(|l| l.starts_with(&format!("{elem} ("))) else {
        return 0;
    };
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .map_or(0, |v| v.parse().unwrap())
}

/// tcpdump's output for `pcap` with `args` (and `TZ=UTC`), or `None`
/// with the reason printed when tcpdump cannot be run.
fn tcpdump(pcap: &Path, args: &[&str]) -> Option<String> {
    let o = match Command::new("tcpdump")
        .args(args)
        .arg("-r")
        .arg(pcap)
        .env("TZ", "UTC")
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("skipped: tcpdump cannot be run ({e}); scripts/setup installs it");
            return None;
        }
    };
    assert!(
        o.status.success(),
        "tcpdump {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// RFC 1071 ones' complement sum of `b`, not complemented.
fn sum(b: &[u8]) -> u32 {
    b.chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum()
}

/// The checksum over `parts`: the complement of their folded sum.
fn checksum(parts: &[&[u8]]) -> u16 {
    let mut s: u32 = parts.iter().map(|p| sum(p)).sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// The IP header fields a record sets.
#[derive(Clone, Copy)]
struct Ip {
    tos: u8,
    id: u16,
    /// Flags and fragment offset (in 8-byte units).
    off: u16,
    ttl: u8,
    src: [u8; 4],
    dst: [u8; 4],
}

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [192, 168, 1, 2];
const C: [u8; 4] = [10, 0, 0, 3];
const D: [u8; 4] = [172, 16, 0, 9];

fn ip(src: [u8; 4], dst: [u8; 4]) -> Ip {
    Ip {
        tos: 0,
        id: 1,
        off: 0,
        ttl: 64,
        src,
        dst,
    }
}

/// An IPv4 packet of protocol `proto` around `l4`, with its checksum.
fn ipv4(h: Ip, proto: u8, l4: &[u8]) -> Vec<u8> {
    let len = (20 + l4.len()) as u16;
    let mut p = vec![0x45, h.tos];
    p.extend_from_slice(&len.to_be_bytes());
    p.extend_from_slice(&h.id.to_be_bytes());
    p.extend_from_slice(&h.off.to_be_bytes());
    p.extend_from_slice(&[h.ttl, proto, 0, 0]);
    p.extend_from_slice(&h.src);
    p.extend_from_slice(&h.dst);
    let s = checksum(&[&p]);
    p[10..12].copy_from_slice(&s.to_be_bytes());
    p.extend_from_slice(l4);
    p
}

/// The transport checksum of `l4` (TCP or UDP) between `h`'s addresses.
fn l4_sum(h: Ip, proto: u8, l4: &[u8]) -> u16 {
    let mut pseudo = h.src.to_vec();
    pseudo.extend_from_slice(&h.dst);
    pseudo.extend_from_slice(&[0, proto]);
    pseudo.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    checksum(&[&pseudo, l4])
}

/// A TCP segment in IPv4.
#[allow(clippy::too_many_arguments)]
fn tcp(
    h: Ip,
    ports: (u16, u16),
    seq: u32,
    ack: u32,
    flags: u8,
    win: u16,
    urp: u16,
    opts: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    let off = ((20 + opts.len()) / 4) as u8;
    let mut t = Vec::new();
    t.extend_from_slice(&ports.0.to_be_bytes());
    t.extend_from_slice(&ports.1.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.extend_from_slice(&[off << 4, flags]);
    t.extend_from_slice(&win.to_be_bytes());
    t.extend_from_slice(&[0, 0]);
    t.extend_from_slice(&urp.to_be_bytes());
    t.extend_from_slice(opts);
    t.extend_from_slice(payload);
    let s = l4_sum(h, 6, &t);
    t[16..18].copy_from_slice(&s.to_be_bytes());
    ipv4(h, 6, &t)
}

/// A UDP datagram in IPv4.
fn udp(h: Ip, ports: (u16, u16), payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&ports.0.to_be_bytes());
    u.extend_from_slice(&ports.1.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    let s = l4_sum(h, 17, &u);
    u[6..8].copy_from_slice(&s.to_be_bytes());
    ipv4(h, 17, &u)
}

const SYN: u8 = 0x02;
const FIN: u8 = 0x01;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const URG: u8 = 0x20;
const ECE: u8 = 0x40;
const CWR: u8 = 0x80;

/// The capture: a TCP connection from its handshake (options, data,
/// SACK, FIN, RST), a TCP flow seen from its middle (tcpdump prints its
/// first packet's numbers whole), urgent data and ECN flags, UDP, ICMP,
/// and a UDP datagram in two fragments. Returns (packet, is a fragment).
fn packets() -> Vec<(Vec<u8>, bool)> {
    let ab = (40000, 80);
    let ba = (80, 40000);
    let syn_opts = [
        2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
    ];
    let synack_opts = [2, 4, 5, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7];
    let ts = [1, 1, 8, 10, 0, 0, 0, 2, 0, 0, 0, 3];
    let sack = [1, 1, 5, 10, 0, 0, 0x13, 0x89, 0, 0, 0x14, 0x89];
    let df = |mut h: Ip, id: u16| {
        h.off = 0x4000;
        h.id = id;
        h
    };
    let mut tos = ip(A, B);
    tos.tos = 0x10;
    let mut ttl1 = ip(A, B);
    ttl1.ttl = 1;
    ttl1.id = 8;
    let mut ect = ip(C, D);
    ect.tos = 0x02;
    let mut frag1 = ip(A, B);
    frag1.id = 9;
    frag1.off = 0x2000;
    let mut frag2 = frag1;
    frag2.off = 2;
    let whole = udp(frag1, (1234, 5678), &[b'a'; 40]);
    let first = {
        let mut p = whole[..36].to_vec();
        p[2..4].copy_from_slice(&36u16.to_be_bytes());
        p[10..12].fill(0);
        let s = checksum(&[&p[..20]]);
        p[10..12].copy_from_slice(&s.to_be_bytes());
        p
    };
    let second = ipv4(frag2, 17, &whole[36..]);
    vec![
        (
            tcp(df(ip(A, B), 11), ab, 1000, 0, SYN, 64240, 0, &syn_opts, b""),
            false,
        ),
        (
            tcp(
                df(ip(B, A), 0),
                ba,
                5000,
                1001,
                SYN | ACK,
                65160,
                0,
                &synack_opts,
                b"",
            ),
            false,
        ),
        (tcp(ip(A, B), ab, 1001, 5001, ACK, 502, 0, &ts, b""), false),
        (
            tcp(
                tos,
                ab,
                1001,
                5001,
                PSH | ACK,
                502,
                0,
                b"",
                b"GET / HTTP/1.0\r\n\r\n",
            ),
            false,
        ),
        (
            tcp(ip(B, A), ba, 5001, 1019, ACK, 500, 0, &sack, b""),
            false,
        ),
        (
            tcp(
                ip(B, A),
                ba,
                5001,
                1019,
                FIN | PSH | ACK,
                500,
                0,
                b"",
                &[b'x'; 100],
            ),
            false,
        ),
        (tcp(ip(A, B), ab, 1019, 0, RST, 0, 0, b"", b""), false),
        (
            tcp(
                ip(C, D),
                (2222, 3333),
                7000,
                9000,
                PSH | ACK,
                100,
                0,
                b"",
                &[1; 10],
            ),
            false,
        ),
        (
            tcp(ip(D, C), (3333, 2222), 9000, 7010, ACK, 200, 0, b"", b""),
            false,
        ),
        (
            tcp(
                ip(C, D),
                (2222, 3333),
                7010,
                9000,
                URG | PSH | ACK,
                100,
                3,
                b"",
                &[2; 5],
            ),
            false,
        ),
        (
            tcp(ect, (2223, 3334), 1, 0, SYN | ECE | CWR, 100, 0, b"", b""),
            false,
        ),
        (udp(ttl1, (40001, 40002), b"hello world"), false),
        (ipv4(ip(A, B), 1, &[8, 0, 0xf7, 0xff, 0, 0, 0, 0]), false),
        (first, true),
        (second, true),
    ]
}

/// Writes a microsecond libpcap file of link type raw IP (101), packet
/// `i` at 1000000000 + i seconds and 123456 + i microseconds.
fn write_pcap(path: &Path, packets: &[(Vec<u8>, bool)]) {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&0i32.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&101u32.to_le_bytes());
    for (i, (p, _)) in packets.iter().enumerate() {
        f.extend_from_slice(&(1_000_000_000 + i as u32).to_le_bytes());
        f.extend_from_slice(&(123_456 + i as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(p);
    }
    std::fs::write(path, f).unwrap();
}

/// The packets of a libpcap file.
fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap();
    let u32_at = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= b.len() {
        let caplen = u32_at(at + 8) as usize;
        out.push(b[at + 16..at + 16 + caplen].to_vec());
        at += 16 + caplen;
    }
    out
}

/// The summary records (lines after the header) `source` gives, as
/// ToIPSummaryDump writes them with `fields`.
fn summary(source: &str, fields: &str) -> Vec<String> {
    let (out, err) = run(
        &format!("{source} -> ToIPSummaryDump(-, CONTENTS {fields});"),
        &[],
    );
    assert_eq!(counter(&err, "f", "bad_lines"), 0, "{err}");
    out.lines()
        .filter(|l| !l.starts_with('!'))
        .map(str::to_string)
        .collect()
}

/// The capture's own summary with `fields`.
fn original(pcap: &Path, fields: &str) -> Vec<String> {
    summary(
        &format!("f :: FromDump({}, STOP true)", pcap.display()),
        fields,
    )
}

/// FromTcpdump's summary of `text` (written to `dir`) with `fields`.
fn read_back(dir: &Path, name: &str, text: &str, fields: &str) -> Vec<String> {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    summary(
        &format!("f :: FromTcpdump({}, STOP true)", file.display()),
        fields,
    )
}

/// What tcpdump shows of every packet (not the IP header's TOS, TTL, ID
/// and fragment fields without -v).
const SHOWN: &str = "timestamp ip_src sport ip_dst dport ip_proto tcp_flags tcp_seq \
    tcp_ack tcp_window tcp_urp tcp_opt";

/// What tcpdump -v shows as well.
const SHOWN_V: &str = "ip_len ip_tos ip_ttl ip_id ip_fragoff udp_len payload_len";

#[test]
fn tcpdump_text_reads_back_to_the_capture() {
    let dir = scratch("plain");
    let pcap = dir.join("in.pcap");
    let pk = packets();
    write_pcap(&pcap, &pk);
    let Some(text) = tcpdump(&pcap, &["-n", "-tt"]) else {
        return;
    };
    assert!(text.contains("Flags [S.]"), "{text}");
    let mut want = original(&pcap, SHOWN);
    // A RST without ACK: tcpdump does not print its acknowledgment
    // number, which the packet had as 0.
    assert!(want[6].contains(" R 1019 0 "), "{}", want[6]);
    let got = read_back(&dir, "plain.txt", &text, SHOWN);
    assert_eq!(got.len(), pk.len());
    // The lengths too, but of the fragments (tcpdump without -v prints
    // the first one's UDP length and nothing of the second's).
    let lens = "ip_len payload_len";
    let want_len = original(&pcap, lens);
    let got_len = read_back(&dir, "plain.txt", &text, lens);
    for (i, (_, frag)) in pk.iter().enumerate() {
        if !frag {
            assert_eq!(
                got_len[i],
                want_len[i],
                "packet {i}: {}",
                text.lines().nth(i).unwrap()
            );
        }
    }
    want.truncate(got.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "packet {i}: {}", text.lines().nth(i).unwrap());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tcpdump_v_text_reads_back_with_the_ip_headers() {
    let dir = scratch("verbose");
    let pcap = dir.join("in.pcap");
    write_pcap(&pcap, &packets());
    let Some(text) = tcpdump(&pcap, &["-n", "-tt", "-v"]) else {
        return;
    };
    let fields = format!("{SHOWN} {SHOWN_V}");
    let want = original(&pcap, &fields);
    let got = read_back(&dir, "v.txt", &text, &fields);
    assert_eq!(got, want, "{text}");
    // -vv and -x add lines of details and hex under each packet, which
    // are skipped.
    if let Some(text) = tcpdump(&pcap, &["-n", "-tt", "-vv", "-x"]) {
        assert_eq!(read_back(&dir, "vvx.txt", &text, &fields), want, "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tcpdumps_other_timestamps() {
    let dir = scratch("times");
    let pcap = dir.join("in.pcap");
    write_pcap(&pcap, &packets());
    // -tttt: date and time (UTC here): the same timestamps.
    let Some(text) = tcpdump(&pcap, &["-n", "-tttt"]) else {
        return;
    };
    assert!(text.starts_with("2001-09-09 01:46:40.123456 IP "), "{text}");
    assert_eq!(
        read_back(&dir, "tttt.txt", &text, SHOWN),
        read_back(
            &dir,
            "tt.txt",
            &tcpdump(&pcap, &["-n", "-tt"]).unwrap(),
            SHOWN
        )
    );
    // tcpdump's default: the time of day, on 1970-01-01.
    let text = tcpdump(&pcap, &["-n"]).unwrap();
    let got = read_back(&dir, "tod.txt", &text, "timestamp ip_src");
    assert_eq!(got[0], "6400.123456 10.0.0.1");
    assert_eq!(got[14], "6414.123470 10.0.0.1");
    // -t: none.
    let text = tcpdump(&pcap, &["-n", "-t"]).unwrap();
    let got = read_back(&dir, "t.txt", &text, "timestamp ip_src tcp_seq");
    assert_eq!(got[0], "0.000000 10.0.0.1 1000");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn clicks_format_bad_lines_and_handlers() {
    let dir = scratch("click");
    let file = dir.join("in.txt");
    // Click's format (tcpdump 3 -tt, from Click's FromTcpdump-02 test),
    // lines of other protocols, a garbage line and an unfinished -v
    // header.
    std::fs::write(
        &file,
        "1073554818.366478 169.232.91.4.771 > 224.0.0.2.1985:  udp 20 [tos 0xc0]  [ttl 1] (id 37528, len 48)\n\
         1073554823.351129 192.168.1.100.32822 > 130.74.110.2.80: SWE [tcp sum ok] 161246674:161246674(0) win 5840 <mss 1460,sackOK,timestamp 1301834 0,nop,wscale 0> (DF) (ttl 64, id 45208, len 60)\n\
         1073554823.427822 130.74.110.2.80 > 192.168.1.100.32822: S [tcp sum ok] 808009904:808009904(0) ack 161246675 win 49152 <mss 1452,nop,wscale 0,nop,nop,timestamp 3423766 1301834,nop,nop,sackOK> (DF) (ttl 45, id 38050, len 64)\n\
         1073554823.428260 192.168.1.100.32822 > 130.74.110.2.80: P 1:592(591) ack 1 win 5840 <nop,nop,timestamp 1301842 3423766> (DF) (ttl 64, id 45210, len 643)\n\
         1073554824.5 IP6 fe80::1 > ff02::2: ICMP6, router solicitation, length 16\n\
         this is not tcpdump\n\
         1073554825.0 IP (tos 0x0, ttl 64, id 1, offset 0, flags [DF], proto TCP (6), length 40)\n",
    )
    .unwrap();
    let fields = "timestamp ip_src sport ip_dst dport ip_proto ip_len ip_ttl ip_id tcp_flags \
        tcp_seq tcp_ack tcp_opt payload_len";
    let (out, err) = run(
        &format!(
            "f :: FromTcpdump({}, STOP true, CHECKSUM true) \
             -> ToIPSummaryDump(-, CONTENTS {fields});",
            file.display()
        ),
        &["-h", "f.encap", "-h", "f.filesize", "-h", "f.filepos"],
    );
    let records: Vec<&str> = out.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(
        records[..4],
        [
            "1073554818.366478 169.232.91.4 771 224.0.0.2 1985 U 48 1 37528 - - - - 20",
            "1073554823.351129 192.168.1.100 32822 130.74.110.2 80 T 60 64 45208 SEC 161246674 0 \
             mss1460;sackok;ts1301834:0;wscale0 0",
            "1073554823.427822 130.74.110.2 80 192.168.1.100 32822 T 64 45 38050 SA 808009904 \
             161246675 mss1452;wscale0;ts3423766:1301834;sackok 0",
            "1073554823.428260 192.168.1.100 32822 130.74.110.2 80 T 643 64 45210 PA 161246675 \
             808009905 ts1301842:3423766 591",
        ]
    );
    assert_eq!(counter(&err, "f", "count"), 4, "{err}");
    assert_eq!(counter(&err, "f", "bad_lines"), 3, "{err}");
    // Click reports the first bad line only.
    assert!(
        err.contains("in.txt:5: packet parse error: not an IPv4 packet"),
        "{err}"
    );
    assert!(!err.contains("in.txt:6:"), "{err}");
    let size = std::fs::metadata(&file).unwrap().len().to_string();
    assert!(out.contains("f.encap:\nIP\n"), "{out}");
    assert!(out.contains(&format!("f.filesize:\n{size}\n")), "{out}");
    assert!(out.contains(&format!("f.filepos:\n{size}\n")), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pairs_paints_and_stored_timestamps_on_packets_read_back() {
    let dir = scratch("aggregates");
    let pcap = dir.join("in.pcap");
    write_pcap(&pcap, &packets());
    let Some(text) = tcpdump(&pcap, &["-n", "-tt", "-v"]) else {
        return;
    };
    let file = dir.join("v.txt");
    std::fs::write(&file, text).unwrap();
    let out_pcap = dir.join("out.pcap");
    let (out, err) = run(
        &format!(
            "f :: FromTcpdump({}, STOP true) -> ap :: AggregateIPAddrPair(TIMEOUT 4) \
             -> AggregatePaint(1, INCREMENTAL true) -> StoreTimestamp(TAIL true) \
             -> ToIPSummaryDump(-, CONTENTS ip_src ip_dst aggregate paint) \
             -> ToDump({}, ENCAP IP);\nap[1] -> Discard;",
            file.display(),
            out_pcap.display()
        ),
        &[],
    );
    let records: Vec<&str> = out.lines().filter(|l| !l.starts_with('!')).collect();
    // Pair A-B is 1, C-D is 2; AggregatePaint makes 2 * 1 + paint and
    // 2 * 2 + paint. A-B's first packet went from A (the lower address);
    // C-D's from C. The A-B pair idles from 1000000006 to 1000000011
    // (longer than TIMEOUT 4): it becomes pair 3.
    let want: Vec<String> = [
        (A, B, 2, 0),
        (B, A, 3, 1),
        (A, B, 2, 0),
        (A, B, 2, 0),
        (B, A, 3, 1),
        (B, A, 3, 1),
        (A, B, 2, 0),
        (C, D, 4, 0),
        (D, C, 5, 1),
        (C, D, 4, 0),
        (C, D, 4, 0),
        (A, B, 6, 0),
        (A, B, 6, 0),
        (A, B, 6, 0),
        (A, B, 6, 0),
    ]
    .iter()
    .map(|(s, d, agg, paint)| {
        let a = |x: &[u8; 4]| format!("{}.{}.{}.{}", x[0], x[1], x[2], x[3]);
        format!("{} {} {agg} {paint}", a(s), a(d))
    })
    .collect();
    assert_eq!(records, want, "{err}");
    assert_eq!(counter(&err, "ap", "flows"), 2, "{err}");
    // Each packet ends with its timestamp in microseconds, little-endian.
    let got = read_pcap(&out_pcap);
    assert_eq!(got.len(), 15);
    for (i, p) in got.iter().enumerate() {
        let us = (1_000_000_000 + i as i64) * 1_000_000 + 123_456 + i as i64;
        assert_eq!(p[p.len() - 8..], us.to_le_bytes(), "packet {i}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
