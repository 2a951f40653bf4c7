//! Click's trace tools in whole configurations run by the `bricks` binary:
//! a raw-IP capture read with FromDump, its addresses anonymized
//! (AnonymizeIPAddr), its payloads erased and cut (EraseIPPayload,
//! TruncateIPPayload), its timestamps measured (TimeRange,
//! TimestampAccum), and the results read back from the dumps written and
//! the handlers read at exit.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "bricks-analysis-more-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `config` to its end with extra arguments; returns stdout.
fn run(config: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", "--quiet", "-e", config];
    args.extend_from_slice(extra);
    let o = Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(&args)
        .output()
        .expect("bricks runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{config}:\n{err}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The value of handler `name` in the `-h` report on stdout.
fn handler<'a>(out: &'a str, name: &str) -> &'a str {
    let head = format!("{name}:\n");
    let at = out
        .find(&head)
        .unwrap_or_else(|| panic!("no {name} in {out}"));
    out[at + head.len()..].lines().next().unwrap_or("")
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

/// An IPv4 packet `src` -> `dst` of protocol `proto` around `l4`, with
/// its header checksum.
fn ipv4(id: u16, proto: u8, src: [u8; 4], dst: [u8; 4], l4: &[u8]) -> Vec<u8> {
    let len = (20 + l4.len()) as u16;
    let mut p = vec![0x45, 0];
    p.extend_from_slice(&len.to_be_bytes());
    p.extend_from_slice(&id.to_be_bytes());
    p.extend_from_slice(&[0, 0, 64, proto, 0, 0]);
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    let s = checksum(&[&p]);
    p[10..12].copy_from_slice(&s.to_be_bytes());
    p.extend_from_slice(l4);
    p
}

/// Fills in the TCP (`proto` 6) or UDP (17) checksum of an IPv4 packet
/// without options.
fn fix_transport(p: &mut [u8]) {
    let at = if p[9] == 6 { 36 } else { 26 };
    p[at..at + 2].fill(0);
    let mut pseudo = p[12..20].to_vec();
    pseudo.extend_from_slice(&[0, p[9]]);
    pseudo.extend_from_slice(&((p.len() - 20) as u16).to_be_bytes());
    let s = checksum(&[&pseudo, &p[20..]]);
    p[at..at + 2].copy_from_slice(&s.to_be_bytes());
}

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];
const C: [u8; 4] = [192, 168, 1, 1];

/// TCP A:1234 -> B:80, PSH|ACK, 4 bytes of payload.
fn tcp() -> Vec<u8> {
    let mut l4 = vec![
        0x04, 0xd2, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 2, 0x50, 0x18, 0x20, 0, 0, 0, 0, 0,
    ];
    l4.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    let mut p = ipv4(1, 6, A, B, &l4);
    fix_transport(&mut p);
    p
}

/// UDP C:53 -> A:3333 with 6 bytes of payload.
fn udp() -> Vec<u8> {
    let l4 = [0x00, 0x35, 0x0d, 0x05, 0x00, 0x0e, 0, 0, 1, 2, 3, 4, 5, 6];
    let mut p = ipv4(2, 17, C, A, &l4);
    fix_transport(&mut p);
    p
}

/// ICMP port unreachable B -> A quoting a datagram A:1234 -> C:53.
fn icmp_unreachable() -> Vec<u8> {
    let mut quoted = ipv4(9, 17, A, C, &[0x04, 0xd2, 0x00, 0x35, 0x00, 0x08, 0, 0]);
    fix_transport(&mut quoted);
    let mut l4 = vec![3, 3, 0, 0, 0, 0, 0, 0];
    l4.extend_from_slice(&quoted);
    let s = checksum(&[&l4]);
    l4[2..4].copy_from_slice(&s.to_be_bytes());
    ipv4(3, 1, B, A, &l4)
}

/// An IPv6 packet (no next header), which AnonymizeIPAddr passes to
/// output 1.
fn ipv6() -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0, 0, 0, 59, 64];
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    p
}

/// The capture's records: (seconds, microseconds, packet).
fn records() -> Vec<(u32, u32, Vec<u8>)> {
    vec![
        (1, 0, tcp()),
        (1, 500_000, udp()),
        (2, 250_001, icmp_unreachable()),
        (3, 0, ipv6()),
    ]
}

/// Writes a microsecond libpcap file of link type raw IP (101), by hand.
fn write_raw_ip_pcap(path: &Path, records: &[(u32, u32, Vec<u8>)]) {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    f.extend_from_slice(&0i32.to_le_bytes());
    f.extend_from_slice(&0u32.to_le_bytes());
    f.extend_from_slice(&65535u32.to_le_bytes());
    f.extend_from_slice(&101u32.to_le_bytes());
    for (s, us, p) in records {
        f.extend_from_slice(&s.to_le_bytes());
        f.extend_from_slice(&us.to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(&(p.len() as u32).to_le_bytes());
        f.extend_from_slice(p);
    }
    std::fs::write(path, f).unwrap();
}

/// The packets of a libpcap file (either microsecond byte order).
fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap();
    let le = b[..4] == [0xd4, 0xc3, 0xb2, 0xa1] || b[..4] == [0x4d, 0x3c, 0xb2, 0xa1];
    let u32_at = |at: usize| {
        let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if le {
            u32::from_le_bytes(w)
        } else {
            u32::from_be_bytes(w)
        }
    };
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= b.len() {
        let caplen = u32_at(at + 8) as usize;
        out.push(b[at + 16..at + 16 + caplen].to_vec());
        at += 16 + caplen;
    }
    out
}

/// Replaces the addresses at `at` and `at + 4` by `src` and `dst`.
fn set_addrs(p: &mut [u8], at: usize, src: [u8; 4], dst: [u8; 4]) {
    p[at..at + 4].copy_from_slice(&src);
    p[at + 4..at + 8].copy_from_slice(&dst);
}

/// Recomputes the IP header checksum of `p`, from scratch.
fn fix_ip(p: &mut [u8]) {
    p[10..12].fill(0);
    let s = checksum(&[&p[..20]]);
    p[10..12].copy_from_slice(&s.to_be_bytes());
}

#[test]
fn anonymized_capture_is_clicks_and_time_range_reads_it() {
    let dir = scratch("anon");
    let input = dir.join("in.pcap");
    write_raw_ip_pcap(&input, &records());
    let dump = dir.join("out.ipsum");
    let pcap = dir.join("out.pcap");
    let config = format!(
        "RandomSeed(42);\n\
         FromDump({}, STOP true) -> tr :: TimeRange -> a :: AnonymizeIPAddr(PRESERVE_8 10)\n\
         -> ToIPSummaryDump({}, CONTENTS timestamp ip_src ip_dst ip_proto)\n\
         -> ToDump({}, ENCAP IP);\n\
         a[1] -> n :: Counter -> Discard;",
        input.display(),
        dump.display(),
        pcap.display()
    );
    let out = run(
        &config,
        &[
            "-h",
            "tr.first",
            "-h",
            "tr.last",
            "-h",
            "tr.range",
            "-h",
            "tr.interval",
            "-h",
            "n.count",
            "-h",
            "a.anonymized",
            "-h",
            "a.addresses",
        ],
    );
    // Click's mapping with RandomSeed(42) and PRESERVE_8 10, computed by
    // Click's anonipaddr.cc code run against glibc's random() (see the
    // unit tests of anonymize_ip_addr.rs): 10.0.0.1 is one bit from the
    // root 10.0.0.0 and takes its output with the last bit flipped.
    const A2: [u8; 4] = [10, 140, 168, 240];
    const B2: [u8; 4] = [10, 140, 168, 242];
    const C2: [u8; 4] = [165, 100, 64, 8];
    let text = std::fs::read_to_string(&dump).unwrap();
    assert_eq!(
        text,
        "!IPSummaryDump 1.3\n!data timestamp ip_src ip_dst ip_proto\n\
         1.000000 10.140.168.240 10.140.168.242 T\n\
         1.500000 165.100.64.8 10.140.168.240 U\n\
         2.250001 10.140.168.242 10.140.168.240 I\n"
    );
    // The bytes: addresses replaced, IP checksums right; the TCP and UDP
    // checksums left as they were (Click does not update them); in the
    // ICMP error the quoted addresses replaced and the ICMP checksum right.
    let got = read_pcap(&pcap);
    let mut want_tcp = tcp();
    set_addrs(&mut want_tcp, 12, A2, B2);
    fix_ip(&mut want_tcp);
    let mut want_udp = udp();
    set_addrs(&mut want_udp, 12, C2, A2);
    fix_ip(&mut want_udp);
    let mut want_icmp = icmp_unreachable();
    set_addrs(&mut want_icmp, 12, B2, A2);
    fix_ip(&mut want_icmp);
    set_addrs(&mut want_icmp, 28 + 12, A2, C2);
    want_icmp[22..24].fill(0);
    let s = checksum(&[&want_icmp[20..]]);
    want_icmp[22..24].copy_from_slice(&s.to_be_bytes());
    assert_eq!(got, vec![want_tcp, want_udp, want_icmp]);
    assert_eq!(got[0][36..38], tcp()[36..38]);

    assert_eq!(handler(&out, "tr.first"), "1.000000");
    assert_eq!(handler(&out, "tr.last"), "3.000000");
    assert_eq!(handler(&out, "tr.range"), "1.000000 3.000000");
    assert_eq!(handler(&out, "tr.interval"), "2.000000");
    assert_eq!(handler(&out, "n.count"), "1");
    assert_eq!(handler(&out, "a.anonymized"), "3");
    // The root and the three addresses seen.
    assert_eq!(handler(&out, "a.addresses"), "4");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn erased_and_truncated_payloads() {
    let dir = scratch("erase");
    let input = dir.join("in.pcap");
    write_raw_ip_pcap(&input, &records());
    let pcap = dir.join("out.pcap");
    let config = format!(
        "FromDump({}, STOP true) -> v4 :: Classifier(0/40%f0, -)\n\
         -> e :: EraseIPPayload -> TruncateIPPayload(2) -> ToDump({}, ENCAP IP);\n\
         v4[1] -> Discard;",
        input.display(),
        pcap.display()
    );
    let out = run(&config, &["-h", "e.erased", "-h", "e.dropped"]);
    let got = read_pcap(&pcap);
    // TCP: payload zeroed, checksum 0, cut to 2 payload bytes; the IP
    // header (length 44, checksum) kept as it was.
    let mut want_tcp = tcp();
    want_tcp[36..38].fill(0);
    want_tcp[40..].fill(0);
    want_tcp.truncate(42);
    let mut want_udp = udp();
    want_udp[26..28].fill(0);
    want_udp[28..].fill(0);
    want_udp.truncate(30);
    // ICMP: not erased; cut 2 bytes after its 8-byte header.
    let want_icmp = icmp_unreachable()[..30].to_vec();
    assert_eq!(got, vec![want_tcp, want_udp, want_icmp]);
    assert_eq!(handler(&out, "e.erased"), "2");
    assert_eq!(handler(&out, "e.dropped"), "0");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn timestamp_accum_adds_the_time_since_each_stamp() {
    let dir = scratch("accum");
    let input = dir.join("in.pcap");
    write_raw_ip_pcap(&input, &records());
    let out = run(
        &format!(
            "FromDump({}, STOP true) -> ta :: TimestampAccum -> Discard;",
            input.display()
        ),
        &["-h", "ta.count", "-h", "ta.time", "-h", "ta.average_time"],
    );
    assert_eq!(handler(&out, "ta.count"), "4");
    // The capture's times are in 1970: each packet is decades old now.
    let time: f64 = handler(&out, "ta.time").parse().unwrap();
    let average: f64 = handler(&out, "ta.average_time").parse().unwrap();
    assert!(time > 4.0 * 1.0e9, "{out}");
    assert!((average * 4.0 - time).abs() < 1e-3 * time, "{out}");
    // Under the trace clock the time now is the packets' own: the total
    // is what lies between each packet and the round that handles it,
    // never negative.
    let out = run(
        &format!(
            "FromDump({}, STOP true, TIMING true) -> ta :: TimestampAccum -> Discard;",
            input.display()
        ),
        &["--clock", "trace", "-h", "ta.count", "-h", "ta.time"],
    );
    assert_eq!(handler(&out, "ta.count"), "4");
    let time: f64 = handler(&out, "ta.time").parse().unwrap();
    assert!((0.0..10.0).contains(&time), "{out}");
    // Before any packet, Click's 0/0.
    let out = run(
        "Idle -> ta :: TimestampAccum -> Discard; Script(stop);",
        &["-h", "ta.average_time", "-h", "ta.time"],
    );
    assert_eq!(handler(&out, "ta.average_time"), "-nan");
    assert_eq!(handler(&out, "ta.time"), "0");
    let _ = std::fs::remove_dir_all(&dir);
}
