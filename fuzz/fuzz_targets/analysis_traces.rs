//! Click's binary and text trace readers on arbitrary file contents:
//! FromNLANRDump's TSH, FR+ and FR records, FromDAGDump's ERF records
//! (modern, legacy cells by ENCAP, with and without FORCE_IP) and
//! FromNetFlowSummaryDump's lines (one packet per flow, and MULTIPACKET).
//! Every record is a packet, skipped and counted, or the end of the file,
//! never a panic: a packet fits a buffer, FORCE_IP's network header lies
//! inside the packet, a binary reader emits at most one packet per record
//! it could have read, and the text reader at most MAX_COUNT per line.
#![no_main]

use bricks_elements::analysis::from_dagdump::ErfReader;
use bricks_elements::analysis::from_netflowsumdump::{Link, NetflowReader};
use bricks_elements::analysis::from_nlanrdump::{NlanrFormat, NlanrReader};
use bricks_elements::analysis::trace_file::{Encap, RecordFormat, TraceInput};
use bricks_packet::MAX_FRAME;
use libfuzzer_sys::fuzz_target;

/// Reads every record of `data` with `format`; returns how many.
fn drain(format: &mut dyn RecordFormat, data: &[u8], limit: usize) -> usize {
    let mut input = TraceInput::from_reader(Box::new(std::io::Cursor::new(data.to_vec())), "fuzz");
    let mut n = 0;
    while let Some(r) = format.next(&mut input) {
        let p = &r.packet;
        assert!(p.len() <= MAX_FRAME);
        assert!(r.filepos <= data.len() as u64);
        if let Some(off) = p.network_header_offset() {
            assert!(off <= p.len());
        }
        n += 1;
        assert!(n <= limit, "{n} records from {} bytes", data.len());
        while format.take_message().is_some() {}
    }
    assert!(input.pos <= data.len() as u64);
    n
}

fuzz_target!(|data: &[u8]| {
    for f in [NlanrFormat::Tsh, NlanrFormat::FrPlus, NlanrFormat::Fr] {
        let n = drain(&mut NlanrReader::new(f), data, data.len() / f.record_size());
        assert_eq!(n, data.len() / f.record_size());
    }
    // The smallest ERF record is its 16-byte header.
    for (legacy, force_ip) in [
        (None, false),
        (None, true),
        (Some(Encap::Ether), true),
        (Some(Encap::Atm), true),
        (Some(Encap::Hdlc), false),
    ] {
        drain(&mut ErfReader::new(legacy, force_ip), data, data.len() / 16);
    }
    let lines = data.split(|&c| c == b'\n').count();
    for link in [Link::Input, Link::Output, Link::Both] {
        drain(&mut NetflowReader::new(link, false), data, lines);
    }
    // MULTIPACKET: up to 65536 packets a line; short inputs keep a run
    // quick.
    if data.len() <= 256 {
        drain(
            &mut NetflowReader::new(Link::Input, true),
            data,
            lines * (1 << 16),
        );
    }
});
