//! MRT TABLE_DUMP_V2 from arbitrary bytes: no panic, errors located at a
//! byte offset inside the input, record offsets strictly increasing, at
//! most one route per record, and the two error policies agreeing (Refuse
//! succeeds exactly when Skip met no malformed record, with the same
//! table). Seeded with `fuzz/seeds/lpm/small.mrt`.
#![no_main]

use bricks_lpm::source::mrt::{MrtEvent, MrtReader, HEADER_LEN};
use bricks_lpm::source::{read_mrt, Location, MrtOptions, OnError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut reader = MrtReader::new(data, "fuzz");
    let mut last = 0u64;
    let (mut routes, mut malformed) = (0usize, 0usize);
    while let Some(event) = reader.next() {
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
    let (skipped, warnings) =
        read_mrt(data, "fuzz", OnError::Skip, &options).expect("Skip never fails");
    assert!(skipped.len() <= routes);
    assert!(warnings.len() >= malformed.min(bricks_lpm::source::MAX_WARNINGS));
    match read_mrt(data, "fuzz", OnError::Refuse, &options) {
        Ok((refused, w)) => {
            assert_eq!(malformed, 0);
            assert_eq!(refused, skipped);
            assert_eq!(w, warnings);
        }
        Err(_) => assert!(malformed > 0),
    }
});
