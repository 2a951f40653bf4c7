//! The flow file parser (`bricks_qos::file`) on arbitrary text: a list of
//! flows or an error naming a line inside the text, never a panic. Every
//! flow it accepts has a rate between 1 bit/s and 1 Tbit/s, is written
//! back by `format_flow` as a line that reads back to the same flow, and
//! goes into a tag or match table (or is refused with a reason) without a
//! panic; a removal takes out exactly what was added.
#![no_main]

use bricks_qos::file::{format_flow, parse_flow, parse_flows};
use bricks_qos::flow::{FlowKey, FlowTable, MAX_RATE_BPS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let flows = match parse_flows(text) {
        Ok(f) => f,
        Err(e) => {
            assert!(e.line >= 1 && e.line <= text.lines().count().max(1), "{e}");
            return;
        }
    };
    let tags = FlowTable::tag(64);
    let tuples = FlowTable::matching(16, 2, 4, 7);
    let mut added = Vec::new();
    for f in &flows {
        assert!(f.rate >= 1 && f.rate <= MAX_RATE_BPS);
        assert_eq!(parse_flow(&format_flow(f)).as_ref(), Ok(f));
        let table = match f.key {
            FlowKey::Tag(_) => &tags,
            FlowKey::Tuple(_) => &tuples,
        };
        if let Ok(i) = table.add(f) {
            assert_eq!(table.find(&f.key), Some(i));
            assert_eq!(table.rate(i), f.rate);
            added.push(f.key);
        }
    }
    for k in &added {
        let table = match k {
            FlowKey::Tag(_) => &tags,
            FlowKey::Tuple(_) => &tuples,
        };
        table.remove(k).expect("an added flow can be removed");
        assert_eq!(table.find(k), None);
    }
    assert_eq!(tags.counters().flows + tuples.counters().flows, 0);
});
