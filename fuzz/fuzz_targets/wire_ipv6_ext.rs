//! The IPv6 extension-header walk and the options walk on arbitrary bytes:
//! never a panic, the walk stays within the packet and within
//! MAX_HEADERS, and every option it yields lies inside its header.
#![no_main]

use bricks_wire::ipv6ext::{options, walk, MAX_HEADERS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = walk(data) {
        assert!(c.upper_offset <= data.len());
        assert!(c.upper_pointer < c.upper_offset.max(7));
        assert!(usize::from(c.headers) <= MAX_HEADERS);
        if let Some((at, len)) = c.hop_by_hop {
            assert_eq!(at, 40);
            let hdr = &data[at..at + len];
            let mut n = 0;
            for o in options(hdr) {
                n += 1;
                assert!(n <= hdr.len());
                match o {
                    Ok(o) => assert!(o.offset + 2 + o.len <= hdr.len() || o.len == 0),
                    Err(at) => assert!(at < hdr.len()),
                }
            }
        }
    }
    // Options of any bytes, as a header.
    let mut n = 0;
    for o in options(data) {
        n += 1;
        assert!(n <= data.len());
        if let Ok(o) = o {
            assert!(o.offset < data.len());
        }
    }
});
