//! Click's traffic sources and sinks, Counter and Print, in whole
//! configurations run by the `bricks` binary with `--clock trace`, so that
//! times, rates and output are the same on every run.

use std::process::{Command, Output};

fn bricks(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bricks"))
        .args(args)
        .output()
        .expect("bricks runs")
}

/// Runs `config` on the trace clock with `-h` reads; returns (stdout,
/// stderr).
fn run(config: &str, reads: &[&str]) -> (String, String) {
    let mut args = vec!["run", "--clock", "trace", "-e", config];
    for r in reads {
        args.push("-h");
        args.push(r);
    }
    let o = bricks(&args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{config}:\n{err}");
    (out, err)
}

/// The records of a classic little-endian pcap file: (seconds,
/// microseconds, frame).
fn pcap_records(bytes: &[u8]) -> Vec<(u32, u32, Vec<u8>)> {
    assert_eq!(&bytes[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
    let le = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= bytes.len() {
        let (s, us, caplen) = (le(&bytes[at..]), le(&bytes[at + 4..]), le(&bytes[at + 8..]));
        let start = at + 16;
        let end = start + caplen as usize;
        out.push((s, us, bytes[start..end].to_vec()));
        at = end;
    }
    out
}

/// RFC 1071 sum, folded.
fn sum(words: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in words.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bricks-sources-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn fast_udp_source_writes_clicks_frames() {
    let f = temp("fast.pcap");
    run(
        &format!(
            "FastUDPSource(1000, 3, 60, 00:11:22:33:44:55, 10.0.0.1, 1234, \
             66:77:88:99:aa:bb, 10.0.0.2, 5678, STOP true) -> ToDump({})",
            f.display()
        ),
        &[],
    );
    let recs = pcap_records(&std::fs::read(&f).unwrap());
    let frame: Vec<u8> = [
        &[
            0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x00,
        ][..],
        &[
            0x45, 0x00, 0x00, 0x2e, 0x00, 0x00, 0x00, 0x00, 0xfa, 0x11, 0xac, 0xbc,
        ],
        &[10, 0, 0, 1, 10, 0, 0, 2],
        &[0x04, 0xd2, 0x16, 0x2e, 0x00, 0x1a, 0xd0, 0xb7],
        &[0; 18],
    ]
    .concat();
    // One packet a millisecond, from the start of the trace clock.
    assert_eq!(
        recs,
        vec![
            (0, 0, frame.clone()),
            (0, 1000, frame.clone()),
            (0, 2000, frame.clone())
        ]
    );
    // The checksums the frame carries are right.
    assert_eq!(sum(&frame[14..34]), 0xffff);
    let mut pseudo = frame[26..34].to_vec();
    pseudo.extend_from_slice(&[0, 17, 0, 26]);
    pseudo.extend_from_slice(&frame[34..]);
    assert_eq!(sum(&pseudo), 0xffff);
}

#[test]
fn fast_udp_flows_vary_ports_with_valid_checksums() {
    let f = temp("flows.pcap");
    run(
        &format!(
            "FastUDPFlows(0, 40, 64, 0:0:0:0:0:1, 10.0.0.1, 0:0:0:0:0:2, 10.0.0.2, 3, 4, \
             STOP true) -> ToDump({})",
            f.display()
        ),
        &[],
    );
    let recs = pcap_records(&std::fs::read(&f).unwrap());
    assert_eq!(recs.len(), 40);
    let mut ports = std::collections::HashSet::new();
    for (_, _, fr) in &recs {
        assert_eq!(fr.len(), 64);
        assert_eq!(sum(&fr[14..34]), 0xffff);
        let mut pseudo = fr[26..34].to_vec();
        pseudo.extend_from_slice(&[0, 17, 0, 30]);
        pseudo.extend_from_slice(&fr[34..]);
        assert_eq!(sum(&pseudo), 0xffff);
        ports.insert(fr[34..38].to_vec());
    }
    assert!(ports.len() > 3, "{}", ports.len());
}

#[test]
fn timed_source_prints_one_packet_per_interval() {
    let (_, err) = run(
        "TimedSource(INTERVAL 0.1, DATA \\<11 22 33 44 55>, LIMIT 3, STOP true) \
         -> Print(t, TIMESTAMP true) -> Discard",
        &[],
    );
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("t: ")).collect();
    assert_eq!(
        lines,
        [
            "t: 0.100000:    5 | 11223344 55",
            "t: 0.200000:    5 | 11223344 55",
            "t: 0.300000:    5 | 11223344 55",
        ]
    );
}

#[test]
fn timed_sink_pulls_until_the_queue_is_dry() {
    let (out, err) = run(
        "InfiniteSource(\\<01>, LIMIT 3) -> Queue -> Print(p, TIMESTAMP true) -> t :: TimedSink(0.25)",
        &["t.interval"],
    );
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("p: ")).collect();
    // The packets were made at time 0 and pulled at 0.25 s intervals.
    assert_eq!(
        lines,
        [
            "p: 0.000000:    1 | 01",
            "p: 0.000000:    1 | 01",
            "p: 0.000000:    1 | 01",
        ]
    );
    assert!(err.contains("t (TimedSink): count=3"), "{err}");
    assert_eq!(out.trim(), "250ms");
}

#[test]
fn print_contents_as_click_prints_them() {
    let data: String = (0u8..32).map(|b| format!("{b:02x}")).collect();
    let (_, err) = run(
        &format!(
            "InfiniteSource(\\<{data}>, LIMIT 1, STOP true) -> Print(x, MAXLENGTH 30, CONTENTS hex) \
             -> Print(MAXLENGTH -1, CONTENTS NONE) -> Discard;
             InfiniteSource(\"Hello, world!\", LIMIT 1) -> Print(a, CONTENTS ascii) -> Discard"
        ),
        &[],
    );
    let mut lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("x:") || l.starts_with("a:") || l.starts_with("  "))
        .collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "  32",
            "a:   13 |  Hello, w orld!",
            "x:   32 | 00010203 04050607 08090a0b 0c0d0e0f 10111213 14151617 18191a1b 1c1d",
        ]
    );
}

#[test]
fn counter_count_call_before_the_packet() {
    // Click's test/handlers/handlercall-01: the call is made before the
    // 5th packet, so 4 go on through Switch output 0.
    let (out, _) = run(
        "InfiniteSource(LIMIT 100, STOP true) -> Counter(COUNT_CALL 5 s.switch 1) \
         -> s :: Switch -> c :: Counter -> d :: Discard; s[1] -> d",
        &["c.count"],
    );
    assert_eq!(out.trim(), "4");
}

#[test]
fn counter_count_call_stops_an_upstream_source() {
    // The source is busy pushing when the call is made: it is made as
    // soon as the push is over, so exactly 5 packets (BURST 1) leave.
    let (out, _) = run(
        "s :: InfiniteSource(LIMIT 1000, BURST 1) -> Counter(COUNT_CALL 5 s.active false) \
         -> c :: Counter -> Discard; TimedSource(INTERVAL 1, LIMIT 1, STOP true) -> Discard",
        &["c.count", "s.active", "s.count"],
    );
    assert_eq!(out, "c.count:\n5\n\ns.active:\nfalse\n\ns.count:\n5\n\n");
}

#[test]
fn counter_rates_are_clicks_ewma() {
    // 1000 packets/s of 69 bytes for half a second. The values are what
    // Click's RateEWMA arithmetic gives (stability 4, 1 ms epochs) after
    // 499 closed epochs of one packet each, checked by hand.
    let (out, _) = run(
        "r :: RatedSource(RATE 1000, LIMIT 500, STOP true) -> c :: Counter -> Discard",
        &[
            "c.rate",
            "c.byte_rate",
            "c.bit_rate",
            "r.rate",
            "c.count_call",
        ],
    );
    assert_eq!(
        out,
        "c.rate:\n993.164\n\nc.byte_rate:\n68562.5\n\nc.bit_rate:\n548500\n\nr.rate:\n1000\n\n\
         c.count_call:\n\n"
    );
}

#[test]
fn end_call_writes_a_handler_at_the_limit() {
    let (out, _) = run(
        "InfiniteSource(LIMIT 3, END_CALL c.reset) -> c :: Counter -> Discard",
        &["c.count"],
    );
    assert_eq!(out.trim(), "0");
    let (out, _) = run(
        "InfiniteSource(LIMIT 3, END_CALL stop) -> c :: Counter -> Discard; \
         Idle -> Discard",
        &["c.count"],
    );
    assert_eq!(out.trim(), "3");
    // A call to the source itself: it starts another LIMIT packets, as
    // Click's reset does, until the Counter stops the router.
    let (out, _) = run(
        "i :: InfiniteSource(LIMIT 2, END_CALL i.reset) -> c :: Counter(COUNT_CALL 6 stop) \
         -> Discard",
        &["c.count", "i.count"],
    );
    assert_eq!(out, "c.count:\n6\n\ni.count:\n2\n\n");
}

#[test]
fn random_source_makes_packets_of_its_length() {
    let f = temp("random.pcap");
    let (out, _) = run(
        &format!(
            "r :: RandomSource(100, LIMIT 4, STOP true) -> ToDump({})",
            f.display()
        ),
        &["r.length", "r.count"],
    );
    assert_eq!(out, "r.length:\n100\n\nr.count:\n4\n\n");
    let recs = pcap_records(&std::fs::read(&f).unwrap());
    assert_eq!(recs.len(), 4);
    assert!(recs.iter().all(|(_, _, fr)| fr.len() == 100));
    assert_ne!(recs[0].2, recs[1].2);
}

#[test]
fn source_handlers_read_clicks_values() {
    let (out, _) = run(
        "i :: InfiniteSource(\\<6869>, 2, 1, LENGTH 5, STOP true) -> Discard",
        &[
            "i.data", "i.limit", "i.burst", "i.length", "i.active", "i.count",
        ],
    );
    assert_eq!(
        out,
        "i.data:\nhi\n\ni.limit:\n2\n\ni.burst:\n1\n\ni.length:\n5\n\ni.active:\ntrue\n\n\
         i.count:\n2\n\n"
    );
}
