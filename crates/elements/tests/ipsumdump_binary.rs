//! Binary IP summary dumps end to end: a text dump read, written in
//! binary, read back and written as text again gives the same lines; a
//! binary dump with hostile records is read as far as it can be, its bad
//! records counted.

use bricks_runtime::{Plan, WorkerOptions, Workers};
use std::path::Path;
use std::sync::Arc;

fn plan(text: &str) -> Result<Arc<Plan>, String> {
    bricks_runtime::testing::plan(text, &bricks_elements::registry()).map(Arc::new)
}

/// Runs `config` on one worker; the `count` and `bad_lines` counters of
/// element `reader`.
fn run(config: &str, reader: &str) -> (u64, u64) {
    let opts = WorkerOptions {
        threads: 1,
        pin: false,
        ..Default::default()
    };
    let s = Workers::start(plan(config).unwrap(), &opts).unwrap().join();
    let st = s.total.stats(reader).unwrap();
    (
        st.get("count").unwrap_or(0),
        st.get("bad_lines").unwrap_or(0),
    )
}

const FIELDS: &str = "timestamp ip_src sport ip_dst dport ip_proto ip_len ip_opt tcp_flags \
    tcp_opt tcp_seq ip_ttl icmp_type payload_len";

const TEXT: &str = "!IPSummaryDump 1.3
!data timestamp ip_src sport ip_dst dport ip_proto ip_len ip_opt tcp_flags tcp_opt tcp_seq ip_ttl icmp_type payload_len
10.000001 18.26.4.44 30 10.0.0.4 40 T 60 rr{1.2.3.4}+1 S mss1460;sackok 77 64 - 0
11.500000 18.26.4.44 20 10.0.0.8 80 T 92 . PA ts5:6 78 63 - 40
12.000002 1.0.0.1 - 1.0.0.2 - I 28 . - - - 255 8 0
";

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

#[test]
fn text_to_binary_to_text_gives_the_same_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.ipsum"), TEXT).unwrap();
    let (inp, bin, out) = (
        p(dir.path(), "in.ipsum"),
        p(dir.path(), "out.bin"),
        p(dir.path(), "out.ipsum"),
    );
    let (n, bad) = run(
        &format!(
            "r :: FromIPSummaryDump({inp}, STOP true) \
             -> ToIPSummaryDump({bin}, BINARY true, FIELDS {FIELDS});"
        ),
        "r",
    );
    assert_eq!((n, bad), (3, 0));
    let b = std::fs::read(&bin).unwrap();
    let head = format!("!IPSummaryDump 1.3\n!data {FIELDS}\n!binary\n");
    assert!(b.starts_with(head.as_bytes()));
    // Each record's length word counts itself; they tile the rest.
    let mut at = head.len();
    let mut records = 0;
    while at < b.len() {
        let len = u32::from_be_bytes(b[at..at + 4].try_into().unwrap()) as usize;
        assert!(len >= 4 && at + len <= b.len(), "record at {at}: {len}");
        at += len;
        records += 1;
    }
    assert_eq!((at, records), (b.len(), 3));

    let (n, bad) = run(
        &format!(
            "r :: FromIPSummaryDump({bin}, STOP true) \
             -> ToIPSummaryDump({out}, FIELDS {FIELDS});"
        ),
        "r",
    );
    assert_eq!((n, bad), (3, 0));
    let got = std::fs::read_to_string(&out).unwrap();
    let got: Vec<&str> = got.lines().filter(|l| !l.starts_with('!')).collect();
    // The TCP lines come back as they were written.
    let want: Vec<&str> = TEXT.lines().skip(2).collect();
    assert_eq!(got[..2], want[..2]);
    // And every line as a text round trip gives it (the binary record's
    // zero ports and TCP fields do not apply to ICMP).
    let again = p(dir.path(), "again.ipsum");
    run(
        &format!(
            "r :: FromIPSummaryDump({inp}, STOP true) \
             -> ToIPSummaryDump({again}, FIELDS {FIELDS});"
        ),
        "r",
    );
    let again = std::fs::read_to_string(&again).unwrap();
    let again: Vec<&str> = again.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(got, again);
}

#[test]
fn hostile_records_are_counted_and_the_dump_ends_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = b"!IPSummaryDump 1.3\n!data ip_src ip_ttl\n!binary\n".to_vec();
    let good = |ttl: u8| {
        let mut r = 9u32.to_be_bytes().to_vec();
        r.extend_from_slice(&[10, 0, 0, 1, ttl]);
        r
    };
    b.extend(good(1));
    // An empty record: skipped, not counted.
    b.extend(4u32.to_be_bytes());
    // Shorter than its fields: ip_src only.
    b.extend(6u32.to_be_bytes());
    b.extend([10, 0]);
    // A `!bad` text record, NUL padded.
    b.extend((0x8000_0000u32 | 12).to_be_bytes());
    b.extend(b"!bad x\n\0\0\0\0\0");
    // Over the limit but whole: skipped and counted.
    let big = 70_000u32;
    b.extend(big.to_be_bytes());
    b.extend(std::iter::repeat_n(0xab, big as usize - 4));
    b.extend(good(2));
    // Longer than the rest of the file: counted, and the end.
    b.extend(0x7fff_ffffu32.to_be_bytes());
    b.extend([1, 2, 3]);
    let f = p(dir.path(), "hostile.bin");
    std::fs::write(&f, &b).unwrap();
    let out = p(dir.path(), "out.ipsum");
    let (n, bad) = run(
        &format!(
            "r :: FromIPSummaryDump({f}, STOP true) \
             -> ToIPSummaryDump({out}, FIELDS ip_src ip_ttl);"
        ),
        "r",
    );
    // Packets: good(1), the 2-byte record (its ip_src cut: no field, a
    // parse error), good(2).
    let text = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(lines, ["10.0.0.1 1", "10.0.0.1 2"]);
    assert_eq!(n, 2);
    assert_eq!(bad, 3, "cut record, too long, cut by the end");

    // A length word under 4 ends the dump.
    let mut b = b"!data ip_ttl\n!binary\n".to_vec();
    b.extend([0, 0, 0, 5, 9, 0, 0, 0, 2, 0, 0, 0, 5, 7]);
    std::fs::write(&f, &b).unwrap();
    let (n, bad) = run(
        &format!("r :: FromIPSummaryDump({f}, STOP true) -> Discard;"),
        "r",
    );
    assert_eq!((n, bad), (1, 1));
}

#[test]
fn payload_cannot_be_written_in_binary() {
    let e = plan("InfiniteSource(LIMIT 1) -> ToIPSummaryDump(/dev/null, BINARY true, FIELDS ip_src payload);")
        .unwrap_err();
    assert!(e.contains("payload"), "{e}");
    assert!(plan(
        "InfiniteSource(LIMIT 1) -> ToIPSummaryDump(/dev/null, BINARY true, FIELDS ip_src payload_md5);"
    )
    .is_ok());
}
