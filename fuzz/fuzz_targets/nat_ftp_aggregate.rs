//! Arbitrary bytes as an FTP control payload, as a TCP segment whose
//! sequence numbers a rewriter shifts, and as packets through
//! AggregateIPFlows and AggregateCounter. Nothing may panic; a PORT command
//! that parses must print back to the same numbers; a shifted segment
//! keeps its length.
#![no_main]

use bricks_element::{Packet, PortInfo, Processing};
use bricks_elements::analysis::{aggregate_counter, aggregate_ipflows};
use bricks_elements::nat::{ftpportmapper, seq::SeqDeltas};
use bricks_runtime::testing::Harness;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;

fn harness(class: &bricks_element::ElementClass, args: &str, noutputs: usize) -> Harness {
    Harness::new(
        class,
        args,
        PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; noutputs],
        },
    )
}

thread_local! {
    static FLOWS: RefCell<Harness> = RefCell::new(harness(
        &aggregate_ipflows::CLASS,
        "ICMP true, FRAGMENTS true, CAPACITY 64",
        2,
    ));
    static COUNTER: RefCell<Harness> =
        RefCell::new(harness(&aggregate_counter::CLASS, "BYTES true, CAPACITY 64", 1));
}

fuzz_target!(|data: &[u8]| {
    // The PORT parser, on the bytes as they are and behind "PORT ".
    let mut cmd = b"PORT ".to_vec();
    cmd.extend_from_slice(data);
    for payload in [data, &cmd[..]] {
        if let Ok(p) = ftpportmapper::parse_port(payload) {
            assert!(p.start <= p.end && p.end <= payload.len());
            let text = ftpportmapper::unparse_port(p.addr, p.port);
            let again = format!("PORT {text}\r\n");
            let q = ftpportmapper::parse_port(again.as_bytes()).unwrap();
            assert_eq!((q.addr, q.port), (p.addr, p.port));
        }
    }

    // Sequence shifts: deltas from the first bytes, then the segment.
    if data.len() >= 6 {
        let mut d = SeqDeltas::default();
        let trigger = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
        let _ = d.update(data[4] & 1 == 1, trigger, i32::from(data[5] as i8));
        let mut tcp = data[6..].to_vec();
        let len = tcp.len();
        d.apply(data[4] & 2 == 2, &mut tcp);
        assert_eq!(tcp.len(), len);
    }

    // The aggregate elements, on the bytes as an IPv4 packet.
    for (h, outputs) in [(&FLOWS, 2), (&COUNTER, 1)] {
        h.with(|h| {
            let mut h = h.borrow_mut();
            if let Ok(p) = Packet::from_slice(data) {
                let mut p = p;
                p.set_network_header(0);
                h.push_packets(0, [p]);
                // AggregateIPFlows holds fragments until their flow is
                // known: what leaves may be from an earlier input. Every
                // packet must still read whole.
                for o in 0..outputs {
                    for p in h.take(o) {
                        std::hint::black_box(p.data().iter().fold(0u8, |a, b| a ^ b));
                    }
                }
            }
        });
    }
});
