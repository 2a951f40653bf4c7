//! Click's trace files end to end through the `bricks` binary:
//! FromNLANRDump (TSH) and FromDAGDump (ERF) against libtrace's
//! `traceconvert` (Debian's libtrace-tools) reading the same TSH file and
//! writing ERF from a pcap, FromDAGDump against tshark (Debian's tshark)
//! reading hand-written ERF records, FromNetFlowSummaryDump's packets,
//! and ToIPFlowDumps' files read back by FromIPSummaryDump.
//!
//! A peer that is not installed is skipped with a message, except under
//! CI (CI=true), where its absence fails the test.

use std::path::Path;
use std::process::Command;

mod bounded;
use bounded::run_reading as run;

/// Whether `tool` runs; when not, says why the test is skipped (and
/// fails under CI, where scripts/setup installs it from `package`).
fn have(tool: &str, package: &str) -> bool {
    let ok = Command::new(tool)
        .arg("-h")
        .output()
        .is_ok_and(|o| o.status.code().is_some());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{tool} is missing under CI (Debian package {package})"
        );
        eprintln!("skipped: {tool} is not installed (Debian package {package})");
    }
    ok
}

/// A pcap record: timestamp (ns), captured bytes, wire length.
type Rec = (u64, Vec<u8>, u32);

/// The records of pcap `bytes` (either byte order, µs or ns).
fn pcap_records(b: &[u8]) -> Vec<Rec> {
    let magic = u32::from_le_bytes(b[..4].try_into().unwrap());
    let (le, nano) = match magic {
        0xa1b2_c3d4 => (true, false),
        0xa1b2_3c4d => (true, true),
        0xd4c3_b2a1 => (false, false),
        0x4d3c_b2a1 => (false, true),
        m => panic!("not a pcap: {m:#x}"),
    };
    let u32at = |at: usize| {
        let a: [u8; 4] = b[at..at + 4].try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= b.len() {
        let (s, f, cap, len) = (u32at(at), u32at(at + 4), u32at(at + 8), u32at(at + 12));
        let ns = u64::from(s) * 1_000_000_000 + u64::from(f) * if nano { 1 } else { 1000 };
        let cap = cap as usize;
        out.push((ns, b[at + 16..at + 16 + cap].to_vec(), len));
        at += 16 + cap;
    }
    out
}

/// A libpcap file of Ethernet `frames` (seconds, microseconds, bytes).
fn write_pcap(path: &Path, frames: &[(u32, u32, Vec<u8>)]) {
    let mut b = Vec::new();
    for v in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for (s, us, f) in frames {
        for v in [*s, *us, f.len() as u32, f.len() as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(f);
    }
    std::fs::write(path, b).unwrap();
}

/// The bytes of `path`, uncompressed by libtrace's `wandiocat` (libtrace
/// writes gzip by default).
fn wandiocat(path: &Path) -> Vec<u8> {
    let o = Command::new("wandiocat")
        .arg(path)
        .output()
        .expect("wandiocat runs");
    assert!(o.status.success());
    o.stdout
}

fn traceconvert(from: &str, to: &str) {
    let o = Command::new("traceconvert")
        .args([from, to])
        .output()
        .expect("traceconvert runs");
    assert!(
        o.status.success(),
        "traceconvert {from} {to}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn checksum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An IPv4 header with a good checksum.
fn ip(src: [u8; 4], dst: [u8; 4], proto: u8, len: u16, id: u16, ihl: u8) -> Vec<u8> {
    let mut h = vec![0u8; usize::from(ihl) * 4];
    h[0] = 0x40 | ihl;
    h[2..4].copy_from_slice(&len.to_be_bytes());
    h[4..6].copy_from_slice(&id.to_be_bytes());
    h[8] = 64;
    h[9] = proto;
    h[12..16].copy_from_slice(&src);
    h[16..20].copy_from_slice(&dst);
    let c = checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

/// The first 16 bytes of a TCP header.
fn tcp16(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8) -> Vec<u8> {
    let mut t = sport.to_be_bytes().to_vec();
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    t.extend_from_slice(&[0x50, flags, 0x16, 0xd0]);
    t
}

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [192, 168, 7, 9];

/// A TSH record.
fn tsh(sec: u32, iface: u8, usec: u32, ip36: &[u8]) -> Vec<u8> {
    assert_eq!(ip36.len(), 36);
    let mut r = sec.to_be_bytes().to_vec();
    r.extend_from_slice(&((u32::from(iface) << 24) | usec).to_be_bytes());
    r.extend_from_slice(ip36);
    r
}

#[test]
fn tsh_packets_match_libtraces() {
    if !have("traceconvert", "libtrace-tools") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.tsh");
    let mut recs = Vec::new();
    let mut want_ip = Vec::new();
    for i in 0..6u32 {
        // TCP of 40 to 1500 bytes (36 held), UDP of 28 (28 held).
        let body = if i % 3 == 2 {
            let mut b = ip(B, A, 17, 28, i as u16, 5);
            b.extend_from_slice(&[0, 53, 4, 0, 0, 8, 0, 0]);
            b.extend_from_slice(&[0; 8]);
            b
        } else {
            let len = [40u16, 1500, 0, 552, 60][i as usize % 5];
            let mut b = ip(A, B, 6, len.max(40), i as u16, 5);
            b.extend(tcp16(1040, 80, 1000 + i, 7, 0x10));
            b
        };
        recs.extend(tsh(1_073_554_823 + i, (i % 4) as u8, 1000 * i + 7, &body));
        want_ip.push(true);
    }
    // IP options: output 1 here, a packet for libtrace.
    let mut opt = ip(A, B, 6, 44, 99, 6);
    opt.extend_from_slice(&[1; 12]);
    recs.extend(tsh(1_073_554_830, 0, 5, &opt));
    want_ip.push(false);
    std::fs::write(&file, &recs).unwrap();

    let lt = dir.path().join("lt.pcap");
    traceconvert(
        &format!("tsh:{}", file.display()),
        &format!("pcapfile:{}", lt.display()),
    );
    let theirs = pcap_records(&wandiocat(&lt));
    assert_eq!(theirs.len(), 7);

    let ours = dir.path().join("ours.pcap");
    let (out, _) = run(
        &format!(
            "f :: FromNLANRDump({}, STOP true); f -> ToDump({}, ENCAP IP, NANO true); \
             f[1] -> c :: Counter -> Discard;",
            file.display(),
            ours.display()
        ),
        &["f.count", "c.count", "f.encap", "f.filepos"],
    );
    assert!(out.contains("f.count:\n6"), "{out}");
    assert!(out.contains("c.count:\n1"), "{out}");
    assert!(
        out.contains(&format!("f.filepos:\n{}", recs.len())),
        "{out}"
    );
    let ours = pcap_records(&std::fs::read(&ours).unwrap());
    let kept: Vec<&Rec> = theirs
        .iter()
        .zip(&want_ip)
        .filter(|(_, ip)| **ip)
        .map(|(r, _)| r)
        .collect();
    assert_eq!(ours.len(), kept.len());
    for (o, t) in ours.iter().zip(kept) {
        assert_eq!(o.0, t.0, "timestamps");
        // libtrace holds min(36, IP length) bytes, as bricks does.
        assert_eq!(o.1, t.1, "bytes");
    }
}

#[test]
fn erf_written_by_libtrace_reads_back_as_the_pcap() {
    if !have("traceconvert", "libtrace-tools") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut frames = Vec::new();
    for (i, len) in [60usize, 64, 590, 1514, 61].into_iter().enumerate() {
        let mut f = vec![
            0, 0x11, 0x22, 0x33, 0x44, 0x55, 2, 0, 0, 0, 0, i as u8, 8, 0,
        ];
        f.extend(ip(A, B, 17, (len - 14) as u16, i as u16, 5));
        f.resize(len, 0x5a);
        frames.push((
            1_073_554_823 + i as u32,
            [0, 1, 250_000, 999_999, 123_457][i],
            f,
        ));
    }
    let pcap = dir.path().join("in.pcap");
    write_pcap(&pcap, &frames);
    let gz = dir.path().join("lt.erf.gz");
    traceconvert(
        &format!("pcapfile:{}", pcap.display()),
        &format!("erf:{}", gz.display()),
    );
    let erf = dir.path().join("lt.erf");
    std::fs::write(&erf, wandiocat(&gz)).unwrap();
    let ours = dir.path().join("ours.pcap");
    let (out, _) = run(
        &format!(
            "f :: FromDAGDump({}, STOP true) -> ToDump({}, NANO true);",
            erf.display(),
            ours.display()
        ),
        &["f.count", "f.encap", "f.truncated"],
    );
    assert!(out.contains("f.count:\n5"), "{out}");
    assert!(out.contains("f.encap:\nETHER"), "{out}");
    let ours = pcap_records(&std::fs::read(&ours).unwrap());
    assert_eq!(ours.len(), frames.len());
    for (o, (s, us, f)) in ours.iter().zip(&frames) {
        assert_eq!(&o.1, f);
        // ERF's binary fractions of a second come back within a
        // nanosecond of the microseconds written.
        let want = u64::from(*s) * 1_000_000_000 + u64::from(*us) * 1000;
        assert!(o.0.abs_diff(want) <= 1, "{} vs {want}", o.0);
    }
}

#[test]
fn erf_records_read_as_tshark_reads_them() {
    if !have("tshark", "tshark") {
        return;
    }
    // PoS, raw IPv4, Ethernet with an extension header, and an unknown
    // type between them.
    fn erf(sec: u32, frac: u32, ty: u8, wlen: u16, data: &[u8]) -> Vec<u8> {
        let mut r = ((u64::from(sec) << 32) | u64::from(frac))
            .to_le_bytes()
            .to_vec();
        r.extend_from_slice(&[ty, 0]);
        r.extend_from_slice(&((16 + data.len()) as u16).to_be_bytes());
        r.extend_from_slice(&[0, 0]);
        r.extend_from_slice(&wlen.to_be_bytes());
        r.extend_from_slice(data);
        r
    }
    let mut f = Vec::new();
    let mut pos = vec![0x0f, 0, 8, 0];
    pos.extend(ip(A, B, 6, 40, 1, 5));
    pos.extend(tcp16(1, 2, 3, 4, 0x02));
    pos.extend_from_slice(&[0; 4]);
    f.extend(erf(1_100_000_000, 0x4000_0000, 1, 48, &pos));
    f.extend(erf(1_100_000_001, 0, 60, 0, &[0; 8]));
    let mut raw = ip(B, A, 17, 28, 2, 5);
    raw.extend_from_slice(&[0, 7, 0, 9, 0, 8, 0, 0]);
    f.extend(erf(1_100_000_002, 0x8000_0000, 22, 28, &raw));
    let mut eth = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 8, 0];
    eth.extend(ip(A, B, 17, 28, 3, 5));
    eth.extend_from_slice(&[0, 7, 0, 9, 0, 8, 0, 0]);
    eth.resize(60, 0);
    // One extension header (bit 7 of its first byte clear: the last).
    let mut d = vec![0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    d.extend_from_slice(&eth);
    let mut r = erf(1_100_000_003, 0, 2 | 0x80, 64, &d);
    r[8] = 2 | 0x80;
    f.extend(r);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("h.erf");
    std::fs::write(&file, &f).unwrap();
    let o = Command::new("tshark")
        .args(["-r"])
        .arg(&file)
        .args([
            "-T",
            "fields",
            "-e",
            "frame.time_epoch",
            "-e",
            "ip.src",
            "-e",
            "ip.dst",
            "-e",
            "ip.len",
        ])
        .output()
        .expect("tshark runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.split('\t').nth(1).is_some_and(|s| !s.is_empty()))
        .map(|l| {
            let w: Vec<&str> = l.split('\t').collect();
            let (s, frac) = w[0].split_once('.').unwrap();
            format!("{s}.{} {} {} {}", &frac[..6], w[1], w[2], w[3])
        })
        .collect();
    let (out, _) = run(
        &format!(
            "f :: FromDAGDump({}, STOP true, FORCE_IP true) \
             -> ToIPSummaryDump(-, CONTENTS timestamp ip_src ip_dst ip_len);",
            file.display()
        ),
        &["f.other_types", "f.count"],
    );
    let ours: Vec<String> = out
        .lines()
        .filter(|l| !l.starts_with('!') && l.contains('.') && l.contains(' '))
        .map(String::from)
        .collect();
    assert_eq!(ours, theirs, "{out}");
    assert_eq!(ours.len(), 3);
    assert!(out.contains("f.other_types:\n1"), "{out}");
}

#[test]
fn netflow_summaries_make_their_packets() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nf.txt");
    std::fs::write(
        &file,
        "# a NetFlow summary\n\
         192.4.1.32|18.26.4.44|0|14|16|5|10932|998006995|998006999|3917|80|0|18|6|0\n\
         a bad line\n\
         10.0.0.1|10.0.0.2|0|3|4|2|100|998007000|0|53|53|0|0|17|16\n",
    )
    .unwrap();
    let (out, _) = run(
        &format!(
            "f :: FromNetFlowSummaryDump({}, STOP true, MULTIPACKET true, LINK both) \
             -> ToIPSummaryDump(-, CONTENTS timestamp ip_src sport ip_dst dport ip_proto ip_len \
             ip_tos tcp_flags paint);",
            file.display()
        ),
        &["f.bad_lines", "f.count", "f.encap"],
    );
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("99800")).collect();
    assert_eq!(
        lines,
        vec![
            "998006995.000000 192.4.1.32 3917 18.26.4.44 80 T 2186 0 SA 239",
            "998006996.000000 192.4.1.32 3917 18.26.4.44 80 T 2186 0 SA 239",
            "998006997.000000 192.4.1.32 3917 18.26.4.44 80 T 2186 0 SA 239",
            "998006998.000000 192.4.1.32 3917 18.26.4.44 80 T 2186 0 SA 239",
            "998006999.000000 192.4.1.32 3917 18.26.4.44 80 T 2188 0 SA 239",
            "998007000.000000 10.0.0.1 53 10.0.0.2 53 U 50 16 - 52",
            "998007000.000000 10.0.0.1 53 10.0.0.2 53 U 50 16 - 52",
        ],
        "{out}"
    );
    assert!(out.contains("f.bad_lines:\n1"), "{out}");
    assert!(out.contains("f.count:\n7"), "{out}");
}

#[test]
fn flow_dumps_read_back_as_summary_dumps() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ipsum");
    std::fs::write(
        &input,
        "!data timestamp ip_src sport ip_dst dport ip_proto tcp_flags tcp_seq tcp_ack ip_len\n\
         100.000001 10.0.0.1 1040 10.0.0.2 80 T S 1000 0 40\n\
         100.000100 10.0.0.2 80 10.0.0.1 1040 T SA 5000 1001 40\n\
         100.000200 10.0.0.1 1040 10.0.0.2 80 T A 1001 5001 40\n\
         100.000300 10.0.0.1 5353 10.0.0.3 53 U - - - 60\n\
         100.000400 10.0.0.1 1040 10.0.0.2 80 T PA 1001 5001 140\n",
    )
    .unwrap();
    let pattern = dir.path().join("flows/%p%03n");
    let (_, err) = run(
        &format!(
            "FromIPSummaryDump({}, STOP true, CHECKSUM true) -> AggregateIPFlows \
             -> t :: ToIPFlowDumps({}, IP_ID true) -> Discard;",
            input.display(),
            pattern.display()
        ),
        &["t.flows", "t.no_flow"],
    );
    let tcp = std::fs::read_to_string(dir.path().join("flows/T001")).unwrap();
    let udp = std::fs::read_to_string(dir.path().join("flows/U002")).unwrap();
    assert!(
        tcp.starts_with(
            "!IPSummaryDump 1.3\n!flowid 10.0.0.1 1040 10.0.0.2 80 T\n!aggregate 1\n\
             !data timestamp direction ip_id tcp_flags tcp_seq payload_len tcp_ack tcp_ntopt\n\
             !firstseq > 1000\n!firstseq < 5000\n!firsttime 100.000000\n"
        ),
        "{tcp}\n{err}"
    );
    let body: Vec<&str> = tcp.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(
        body,
        vec![
            "0.000001 > 0 S 0 0 0",
            "0.000100 < 0 SA 0 0 1",
            "0.000200 > 0 A 1 0 1",
            "0.000400 > 0 PA 1 100 1",
        ]
    );
    assert!(
        udp.contains("!flowid 10.0.0.1 5353 10.0.0.3 53 U\n"),
        "{udp}"
    );
    assert!(udp.ends_with("0.000001 > 0 32\n"), "{udp}");
    // FromIPSummaryDump reads the files back: one packet a line, no bad
    // lines.
    let (out, _) = run(
        &format!(
            "f :: FromIPSummaryDump({}, STOP true) -> ToIPSummaryDump(-, CONTENTS ip_src sport \
             ip_dst dport tcp_flags payload_len);",
            dir.path().join("flows/T001").display()
        ),
        &["f.bad_lines", "f.count"],
    );
    assert!(out.contains("f.bad_lines:\n0"), "{out}");
    assert!(out.contains("f.count:\n4"), "{out}");
    assert!(out.contains("10.0.0.1 1040 10.0.0.2 80 PA 100"), "{out}");
}
