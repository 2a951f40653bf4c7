//! FromTcpdump's line parser on arbitrary text: tcpdump 3 lines (Click's
//! format), tcpdump 4 lines and `-v` IP header lines. Every line is
//! skipped, waits for its second line, is a packet or an error, never a
//! panic; a packet is an IPv4 header and at most a TCP header with 40
//! bytes of options (20 to 80 bytes), its network header annotated, and
//! ToIPSummaryDump describes it without a panic. A table of 4
//! flows is enough to exercise forgetting them.
#![no_main]

use bricks_elements::analysis::from_tcpdump::{Parser, MAX_LINE};
use bricks_elements::analysis::info::{line, parse_fields};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let fields = parse_fields(
        "timestamp ip_src sport ip_dst dport ip_proto ip_len ip_tos ip_ttl ip_id ip_fragoff \
         tcp_flags tcp_seq tcp_ack tcp_window tcp_urp tcp_opt tcp_sack udp_len payload_len",
    )
    .expect("fields");
    for checksum in [false, true] {
        let mut p = Parser::new(4, checksum);
        for l in data.split(|&c| c == b'\n').take(256) {
            if l.len() > MAX_LINE {
                // The element skips such lines before the parser sees them.
                continue;
            }
            let r = p.line(l);
            let Some(pk) = r.packet else { continue };
            assert!(r.error.is_none());
            assert!((20..=80).contains(&pk.len()), "{}", pk.len());
            assert_eq!(pk.data()[0], 0x45);
            assert_eq!(pk.network_header_offset(), Some(0));
            assert!(pk.anno().extra_length <= i32::MAX as u32);
            let _ = line(&fields, &pk);
            assert!(p.tcp_flows() <= 4);
        }
        let _ = p.finish();
    }
});
