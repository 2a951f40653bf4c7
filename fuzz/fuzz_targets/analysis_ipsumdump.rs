//! The IP summary dump line parser (`FromIPSummaryDump`) on arbitrary text:
//! every line is skipped, sets the fields, or is a record or an error, never
//! a panic. Every record builds a packet no larger than a buffer, whose
//! summary line (`ToIPSummaryDump`) reads back to a packet with the same
//! summary line.
#![no_main]

use bricks_elements::analysis::from_ipsumdump::{parse, Line};
use bricks_elements::analysis::info::{build, line, parse_line, MAX_BUILT};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut fields = Vec::new();
    for (i, l) in text.lines().enumerate().take(256) {
        let record = match parse(&fields, l) {
            Ok(Line::Skip) | Err(_) => continue,
            Ok(Line::Data(f)) => {
                fields = f;
                continue;
            }
            Ok(Line::Record(r)) => r,
        };
        let checksum = i % 2 == 0;
        let p = build(&record, 6, checksum);
        assert!(p.len() <= MAX_BUILT);
        let once = line(&fields, &p);
        let again = parse_line(&fields, &once).expect("a written line reads back");
        assert_eq!(line(&fields, &build(&again, 6, checksum)), once);
    }
});
