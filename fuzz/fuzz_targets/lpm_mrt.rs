//! MRT TABLE_DUMP_V2 from arbitrary bytes: no panic, errors located at a
//! byte offset inside the input, record offsets never going backwards, at
//! most one route per record, a framing error only as the last event, and
//! the two error policies agreeing (both refuse a framing error or a file
//! without RIB records; otherwise Refuse succeeds exactly when Skip met no
//! malformed record, with the same table). Seeded with
//! `fuzz/seeds/lpm/small.mrt`.
#![no_main]

use bricks_lpm::source::mrt::{MrtEvent, MrtReader, HEADER_LEN};
use bricks_lpm::source::{read_mrt, Location, MrtOptions, OnError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut reader = MrtReader::new(data, "fuzz");
    let mut last = 0u64;
    let (mut routes, mut malformed, mut framing) = (0usize, 0usize, false);
    while let Some(event) = reader.next() {
        assert!(!framing, "an event after a framing error");
        let e = match event {
            MrtEvent::Route { .. } => {
                routes += 1;
                None
            }
            MrtEvent::Skipped(e) => Some(e),
            MrtEvent::Malformed(e) => {
                malformed += 1;
                Some(e)
            }
            MrtEvent::Framing(e) => {
                framing = true;
                Some(e)
            }
        };
        if let Some(e) = e {
            match e.location {
                Location::Offset { offset, .. } => assert!(offset <= data.len() as u64),
                l => panic!("MRT error located at {l:?}"),
            }
        }
        let now = reader.offset();
        assert!(now <= data.len() as u64);
        assert!(now >= last);
        last = now;
    }
    assert!(routes <= data.len() / HEADER_LEN);

    let options = MrtOptions::default();
    let skip = read_mrt(data, "fuzz", OnError::Skip, &options);
    let refuse = read_mrt(data, "fuzz", OnError::Refuse, &options);
    let refused_whole = framing || reader.rib_records() == 0;
    assert_eq!(skip.is_err(), refused_whole);
    if let Ok((skipped, warnings)) = &skip {
        assert!(skipped.len() <= routes);
        assert!(warnings.len() >= malformed.min(bricks_lpm::source::MAX_WARNINGS));
    }
    match refuse {
        Ok(refused) => {
            assert_eq!(malformed, 0);
            assert_eq!(skip, Ok(refused));
        }
        Err(_) => assert!(malformed > 0 || refused_whole),
    }
});
