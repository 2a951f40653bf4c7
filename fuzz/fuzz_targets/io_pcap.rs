//! The pcap reader on arbitrary bytes: it must return packets or an error
//! with an offset, never panic, and never read past what it was given.
#![no_main]

use bricks_io::pcap::{PcapReader, Record};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = PcapReader::new(data) else {
        return;
    };
    let _ = (r.linktype(), r.is_nanos(), r.snaplen());
    let mut total = 24u64;
    loop {
        match r.next_record() {
            Ok(Some(Record::Packet(p))) => {
                total += 16 + p.len() as u64;
                assert_eq!(r.offset(), total);
            }
            Ok(Some(Record::Oversized { len, .. })) => total += 16 + len as u64,
            Ok(None) | Err(_) => break,
        }
        assert!(r.offset() <= data.len() as u64 + 16 + 262_144);
    }
});
