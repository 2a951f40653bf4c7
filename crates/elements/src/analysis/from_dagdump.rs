//! `FromDAGDump`: reads packets from ERF files, the Extensible Record
//! Format of Endace DAG cards (Click's `elements/analysis/fromdagdump.cc`).
//!
//! An ERF record (Endace's "ERF Types Reference Guide") starts with a
//! 16-byte header: a 64-bit little-endian fixed-point timestamp (seconds
//! in the high 32 bits, a binary fraction of a second in the low 32), the
//! type (bit 7: extension headers follow), flags, the record length
//! `rlen` (header included), a loss counter or color, and the wire length
//! `wlen`, all big-endian. Then 8-byte extension headers while bit 7 of
//! the previous one's first byte is set, then the record's data: for
//! Ethernet types 2 bytes of offset and padding and the frame (`wlen`
//! counts its 4-byte FCS), for PoS types the HDLC header and the packet,
//! for ATM and AAL5 a 4-byte ATM header and the payload, for IPv4 and
//! IPv6 types the packet. Legacy files (type 0, or every record when
//! ENCAP is given) are 64-byte cells with no type, as Click reads them.

use super::trace_file::{
    annotate, compressed_warning, set_ip_header, Complaints, Encap, Keywords, Record, RecordFormat,
    TraceInput, TraceSource,
};
use bricks_element::{
    ArgError, Args, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_packet::{Timestamp, MAX_FRAME};
use std::path::PathBuf;

/// The `FromDAGDump` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FromDAGDump",
    ports: "0/1-2",
    processing: "/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "reads packets from a DAG/ERF file",
    synopsis: "FromDAGDump(FILENAME [, KEYWORDS])",
    description: "Reads packets from a file in ERF format, written by Endace DAG cards and \
        tools (and by libtrace, Wireshark), and emits them with their timestamps (ERF's \
        binary fractions rounded to nanoseconds as Click rounds them). Record types read: \
        Ethernet (2, and its color variants 11, 16, 20: the frame without the 2 bytes of \
        padding), PoS HDLC (1, 10, 15, 19: encapsulation HDLC), ATM cells and AAL5 frames \
        (3, 4: the 4-byte ATM header first, encapsulation SUNATM) and raw IPv4 and IPv6 \
        (22, 23); extension headers are skipped; legacy 64-byte cells (type 0, or every \
        record when ENCAP is given) are read as Click reads them. A packet holds the bytes \
        captured up to its wire length (for Ethernet less the 4-byte FCS ERF counts); the \
        rest of the wire length is its extra length annotation. Records of other types \
        (padding, metadata) are skipped, counted in `other_types` (padding is not \
        counted). Raw IP packets get their network header annotation and Ethernet frames \
        their packet type, as FromDump gives them. With FORCE_IP, only packets with an IP \
        header behind their link header (Click's rules: Ethernet with at most one VLAN \
        tag, RFC 1483 LLC/SNAP and bridged Ethernet, HDLC, PPP) leave on output 0, with \
        the network header and destination address annotations set; the others leave on \
        output 1, or are dropped and counted in `not_ip`. Records larger than a packet \
        buffer (2048 bytes) are cut there and counted in `oversized` (the rest is extra \
        length); a record cut short by the end of the file is counted in `truncated`; a \
        record length shorter than its header ends the file with an error. END, STOP, \
        END_CALL, SAMPLE and TIMING work as in FromNLANRDump. Differences from Click: a \
        record of an unknown type is skipped (Click reads the rest of the file as legacy \
        ATM cells); records skipped for START or SAMPLE are skipped whole (Click reads \
        their data as the next record); the color, IPv4 and IPv6 types are read (Click \
        takes them for legacy cells); a packet ends at its wire length (Click keeps ERF's \
        padding and the FCS, and its extra length can wrap); FORCE_IP works with TIMING \
        (Click refuses the pair); compressed files are not uncompressed (a warning says \
        so); MMAP is accepted and has no effect.",
    ports: "no inputs; output 0 push or pull; optional output 1 (push) for FORCE_IP's non-IP \
        packets",
    keywords: &[
        Keyword {
            name: "FILENAME",
            ty: "file name",
            default: None,
            doc: "the ERF file to read; `-` is standard input",
        },
        Keyword {
            name: "ENCAP",
            ty: "IP, ETHER, ATM, SUNATM, HDLC, PPP or PPP_HDLC",
            default: None,
            doc: "the file is legacy 64-byte cells of this encapsulation",
        },
        Keyword {
            name: "STOP",
            ty: "boolean",
            default: Some("false"),
            doc: "stop the router when the file is done or END is reached",
        },
        Keyword {
            name: "ACTIVE",
            ty: "boolean",
            default: Some("true"),
            doc: "read at all (false: wait for `active` to be written)",
        },
        Keyword {
            name: "FORCE_IP",
            ty: "boolean",
            default: Some("false"),
            doc: "emit only packets with an IP header on output 0",
        },
        Keyword {
            name: "START",
            ty: "timestamp",
            default: None,
            doc: "skip records before this time (seconds since the epoch)",
        },
        Keyword {
            name: "START_AFTER",
            ty: "duration",
            default: None,
            doc: "skip records less than this after the first record",
        },
        Keyword {
            name: "END",
            ty: "timestamp",
            default: None,
            doc: "end at the first record at or after this time",
        },
        Keyword {
            name: "END_AFTER",
            ty: "duration",
            default: None,
            doc: "end this long after the first record's time",
        },
        Keyword {
            name: "INTERVAL",
            ty: "duration",
            default: None,
            doc: "end this long after the start (START, or the first record)",
        },
        Keyword {
            name: "END_CALL",
            ty: "handler call",
            default: Some("ELEMENT.active false"),
            doc: "the write handler called at END or at the end of the file; exclusive with STOP",
        },
        Keyword {
            name: "SAMPLE",
            ty: "probability",
            default: Some("1"),
            doc: "emit each packet with this probability (a fraction of 2^28)",
        },
        Keyword {
            name: "TIMING",
            ty: "boolean",
            default: Some("false"),
            doc: "emit packets at the pace of their timestamps",
        },
        Keyword {
            name: "MMAP",
            ty: "boolean",
            default: Some("false"),
            doc: "accepted, no effect",
        },
        Keyword {
            name: "BURST",
            ty: "unsigned (bricks only)",
            default: Some("1"),
            doc: "packets per batch (up to 256)",
        },
    ],
    counters: &[
        ("count", "packets emitted on output 0"),
        ("skipped", "records skipped for START or SAMPLE"),
        ("not_ip", "FORCE_IP packets without an IP header (output 1)"),
        ("truncated", "records cut short by the end of the file"),
        ("oversized", "records cut to a packet buffer"),
        (
            "other_types",
            "records of types bricks does not read, skipped",
        ),
        (
            "bad_records",
            "records whose length is shorter than their header (ends the file)",
        ),
    ],
    example: "FromDAGDump(crates/elements/src/analysis/sample.erf, STOP true, FORCE_IP true)\n\
              -> ToIPSummaryDump(-, CONTENTS timestamp ip_src ip_dst ip_len);",
    see_also: &["FromDump", "FromNLANRDump", "ToDump"],
};

/// The ERF header's length.
pub const HEADER: usize = 16;
/// A legacy cell's length.
pub const LEGACY_CELL: usize = 64;

/// ERF's timestamp: seconds and a 32-bit binary fraction, rounded to the
/// nanosecond as Click rounds it (`FromDAGDump::stamp_to_time`).
pub fn erf_time(stamp: u64) -> Timestamp {
    let sec = stamp >> 32;
    let f = (stamp & 0xffff_ffff) * 1_000_000_000;
    let f = f + ((f & 0x8000_0000) << 1);
    let ns = f >> 32;
    Timestamp(sec * 1_000_000_000 + ns)
}

/// What an ERF type is to bricks: its encapsulation, the padding before
/// the data, and the FCS bytes `wlen` counts.
fn erf_type(t: u8) -> Option<(Encap, usize, u32)> {
    Some(match t {
        1 | 10 | 15 | 19 => (Encap::Hdlc, 0, 0),
        2 | 11 | 16 | 20 => (Encap::Ether, 2, 4),
        3 | 4 => (Encap::SunAtm, 0, 0),
        22 | 23 => (Encap::Ip, 0, 0),
        _ => return None,
    })
}

/// ERF's padding record type.
const TYPE_PAD: u8 = 48;

/// Reads ERF records.
pub struct ErfReader {
    /// ENCAP: every record is a legacy cell of this encapsulation.
    legacy: Option<Encap>,
    force_ip: bool,
    last: Option<Encap>,
    complaints: Complaints,
    /// Records cut short by the end of the file.
    pub truncated: u64,
    /// Records cut to a packet buffer.
    pub oversized: u64,
    /// Records of types not read.
    pub other_types: u64,
    /// Records shorter than their header.
    pub bad_records: u64,
}

impl ErfReader {
    /// A reader; `legacy` is ENCAP.
    pub fn new(legacy: Option<Encap>, force_ip: bool) -> ErfReader {
        ErfReader {
            legacy,
            force_ip,
            last: None,
            complaints: Complaints::default(),
            truncated: 0,
            oversized: 0,
            other_types: 0,
            bad_records: 0,
        }
    }

    fn cut_short(&mut self, input: &TraceInput, at: u64, got: usize, want: usize) {
        self.truncated += 1;
        self.complaints.note(|| {
            format!(
                "{}: record at byte {at} cut short ({got} of {want} bytes)",
                input.path.display()
            )
        });
    }

    /// A legacy cell whose header `h` is read: Click's offsets per
    /// encapsulation.
    fn legacy_cell(&mut self, input: &mut TraceInput, h: &[u8; HEADER], at: u64) -> Option<Record> {
        let mut cell = [0u8; LEGACY_CELL];
        cell[..HEADER].copy_from_slice(h);
        let got = input.read_full(&mut cell[HEADER..]);
        if got < LEGACY_CELL - HEADER {
            self.cut_short(input, at, HEADER + got, LEGACY_CELL);
            return None;
        }
        let encap = self.legacy.unwrap_or(Encap::Atm);
        let (from, wire) = match encap {
            Encap::Atm | Encap::Ppp | Encap::PppHdlc => (16, 0),
            Encap::Hdlc => (16, u16::from_be_bytes([cell[10], cell[11]])),
            Encap::SunAtm => (12, 0),
            Encap::Ether => (10, u16::from_be_bytes([cell[8], cell[9]])),
            Encap::Ip => (8, 0),
        };
        let data = &cell[from..];
        let mut p = Packet::from_slice(data).unwrap_or_default();
        p.anno_mut().extra_length = u32::from(wire).saturating_sub(data.len() as u32);
        Some(self.finish(p, encap, h, at))
    }

    /// Timestamps, annotates and routes a packet.
    fn finish(&mut self, mut p: Packet, encap: Encap, h: &[u8; HEADER], at: u64) -> Record {
        let stamp = u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
        p.anno_mut().timestamp = erf_time(stamp);
        self.last = Some(encap);
        let ip = if self.force_ip {
            match encap.ip_offset(p.data()) {
                Some(off) => {
                    set_ip_header(&mut p, off);
                    true
                }
                None => false,
            }
        } else {
            annotate(&mut p, encap);
            true
        };
        Record {
            packet: p,
            ip,
            filepos: at,
        }
    }
}

impl RecordFormat for ErfReader {
    fn next(&mut self, input: &mut TraceInput) -> Option<Record> {
        // Bounded: each pass consumes a record or ends the file.
        loop {
            let at = input.pos;
            let mut h = [0u8; HEADER];
            let got = input.read_full(&mut h);
            if got < HEADER {
                if got > 0 {
                    self.cut_short(input, at, got, HEADER);
                }
                return None;
            }
            if self.legacy.is_some() || h[8] == 0 {
                return self.legacy_cell(input, &h, at);
            }
            let rlen = usize::from(u16::from_be_bytes([h[10], h[11]]));
            let wlen = u32::from(u16::from_be_bytes([h[14], h[15]]));
            let Some(mut body) = rlen.checked_sub(HEADER) else {
                self.bad_records += 1;
                input.error = Some(format!(
                    "{}: record at byte {at}: length {rlen} is shorter than the ERF header",
                    input.path.display()
                ));
                input.close();
                return None;
            };
            // Extension headers: 8 bytes each, while bit 7 says another
            // follows; bounded by the record's length.
            let mut more = h[8] & 0x80 != 0;
            while more {
                let mut ext = [0u8; 8];
                if body < 8 {
                    break;
                }
                let got = input.read_full(&mut ext);
                if got < 8 {
                    self.cut_short(input, at, rlen - body + got, rlen);
                    return None;
                }
                body -= 8;
                more = ext[0] & 0x80 != 0;
            }
            let ty = h[8] & 0x7f;
            let Some((encap, pad, fcs)) = erf_type(ty) else {
                if ty != TYPE_PAD {
                    self.other_types += 1;
                    self.complaints.note(|| {
                        format!(
                            "{}: record at byte {at}: ERF type {ty} skipped",
                            input.path.display()
                        )
                    });
                }
                if (input.skip(body as u64) as usize) < body {
                    self.cut_short(input, at, rlen, rlen);
                    return None;
                }
                continue;
            };
            let skip_pad = pad.min(body);
            if (input.skip(skip_pad as u64) as usize) < skip_pad {
                self.cut_short(input, at, rlen - body, rlen);
                return None;
            }
            let captured = body - skip_pad;
            // The frame on the wire, less the FCS ERF counts; a zero wire
            // length says nothing.
            let wire = if wlen == 0 {
                captured as u32
            } else {
                wlen.saturating_sub(fcs)
            };
            let mut held = captured.min(wire as usize);
            if held > MAX_FRAME {
                held = MAX_FRAME;
                self.oversized += 1;
            }
            let mut buf = [0u8; MAX_FRAME];
            let got = input.read_full(&mut buf[..held]);
            let rest = (captured - held) as u64;
            if got < held || input.skip(rest) < rest {
                self.cut_short(input, at, rlen, rlen);
                return None;
            }
            let mut p = Packet::from_slice(&buf[..held]).unwrap_or_default();
            p.anno_mut().extra_length = wire.saturating_sub(held as u32);
            return Some(self.finish(p, encap, &h, at));
        }
    }

    fn encap(&self) -> String {
        self.last.map_or("<none>", Encap::name).into()
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("truncated", self.truncated);
        s.counter("oversized", self.oversized);
        s.counter("other_types", self.other_types);
        s.counter("bad_records", self.bad_records);
    }

    fn take_message(&mut self) -> Option<String> {
        self.complaints.take()
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let path: PathBuf = args.read_mp("FILENAME")?;
    let encap: Option<String> = args.read("ENCAP")?;
    let force_ip: bool = args.read("FORCE_IP")?.unwrap_or(false);
    let _mmap: bool = args.read("MMAP")?.unwrap_or(false);
    let legacy = match encap {
        None => None,
        Some(e) => Some(Encap::parse(&e).ok_or_else(|| {
            ArgError::new(format!("bad encapsulation type `{e}`"))
                .with_help("IP, ETHER, ATM, SUNATM, HDLC, PPP or PPP_HDLC")
        })?),
    };
    let mut input = TraceInput::open(Some(path), None)?;
    let warnings = compressed_warning(&mut input).into_iter().collect();
    let kw = Keywords {
        times: true,
        sample: true,
        packet_filepos: false,
    };
    Ok(Box::new(TraceSource::make(
        "FromDAGDump",
        kw,
        args,
        ports,
        input,
        Box::new(ErfReader::new(legacy, force_ip)),
        warnings,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ERF record of type `ty` with data `data` (after the header and
    /// extension headers `ext`), wire length `wlen`, at `sec` seconds and
    /// a fraction `frac` of 2^32.
    pub(crate) fn erf(
        sec: u32,
        frac: u32,
        ty: u8,
        wlen: u16,
        ext: &[[u8; 8]],
        data: &[u8],
    ) -> Vec<u8> {
        let rlen = (HEADER + 8 * ext.len() + data.len()) as u16;
        let mut r = ((u64::from(sec) << 32) | u64::from(frac))
            .to_le_bytes()
            .to_vec();
        r.push(ty | if ext.is_empty() { 0 } else { 0x80 });
        r.push(0);
        r.extend_from_slice(&rlen.to_be_bytes());
        r.extend_from_slice(&[0, 0]);
        r.extend_from_slice(&wlen.to_be_bytes());
        for e in ext {
            r.extend_from_slice(e);
        }
        r.extend_from_slice(data);
        r
    }

    fn read_all(bytes: Vec<u8>, legacy: Option<Encap>, force_ip: bool) -> (Vec<Record>, ErfReader) {
        let mut input = TraceInput::from_reader(Box::new(std::io::Cursor::new(bytes)), "t");
        let mut r = ErfReader::new(legacy, force_ip);
        let mut out = Vec::new();
        while let Some(rec) = r.next(&mut input) {
            out.push(rec);
        }
        (out, r)
    }

    const IP: [u8; 20] = [
        0x45, 0, 0, 20, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];

    fn frame() -> Vec<u8> {
        let mut f = vec![
            0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 8, 0,
        ];
        f.extend_from_slice(&IP);
        f
    }

    #[test]
    fn timestamps_round_as_clicks() {
        assert_eq!(erf_time(1000 << 32 | 0x4000_0000).0, 1_000_250_000_000);
        // 0xffffef39 / 2^32 s = 0.999999 s to the nanosecond.
        assert_eq!(erf_time(1001 << 32 | 0xffff_ef39).0, 1_001_999_999_000);
        // One unit: 0.23 ns rounds to 0.
        assert_eq!(erf_time(1).0, 0);
        assert_eq!(erf_time(3).0, 1);
    }

    #[test]
    fn ethernet_records_lose_padding_and_fcs() {
        let f = frame();
        // Two bytes of padding, the frame, its FCS, and ERF's padding to 8.
        let data = [&[0u8, 0][..], &f, &[0xde, 0xad, 0xbe, 0xef], &[0; 6]].concat();
        let wlen = (f.len() + 4) as u16;
        let bytes = erf(1000, 0x4000_0000, 2, wlen, &[], &data);
        let (recs, r) = read_all(bytes.clone(), None, false);
        assert_eq!(recs.len(), 1);
        let p = &recs[0].packet;
        assert_eq!(p.data(), &f[..]);
        assert_eq!(p.anno().extra_length, 0);
        assert_eq!(p.anno().timestamp.0, 1_000_250_000_000);
        assert!(recs[0].ip);
        assert_eq!(r.encap(), "ETHER");
        // A snapped record: the wire length past the capture is extra.
        let data = [&[0u8, 0][..], &f[..20]].concat();
        let (recs, _) = read_all(erf(1, 0, 2, 1518, &[], &data), None, false);
        assert_eq!(recs[0].packet.len(), 20);
        assert_eq!(recs[0].packet.anno().extra_length, 1494);
        // FORCE_IP finds the IP header behind it.
        let (recs, _) = read_all(bytes, None, true);
        assert_eq!(recs[0].packet.network_header_offset(), Some(14));
        assert_eq!(
            recs[0].packet.anno().dst_ip,
            std::net::Ipv4Addr::new(10, 0, 0, 2)
        );
    }

    #[test]
    fn other_types_extensions_and_bad_records() {
        let f = frame();
        let eth = [&[0u8, 0][..], &f].concat();
        let mut bytes = erf(1, 0, 27, 0, &[], &[1, 2, 3, 4, 5, 6, 7, 8]);
        bytes.extend(erf(2, 0, TYPE_PAD, 0, &[], &[0; 8]));
        bytes.extend(erf(
            3,
            0,
            2,
            0,
            &[[0x80, 0, 0, 0, 0, 0, 0, 0], [1; 8]],
            &eth,
        ));
        bytes.extend(erf(4, 0, 22, 20, &[], &IP));
        bytes.extend(erf(5, 0, 1, 24, &[], &[&[0x0f, 0, 8, 0][..], &IP].concat()));
        bytes.extend(erf(
            6,
            0,
            4,
            0,
            &[],
            &[&[0, 0, 0, 0, 0xaa, 0xaa, 3, 0, 0, 0, 8, 0][..], &IP].concat(),
        ));
        let (recs, r) = read_all(bytes.clone(), None, true);
        let secs: Vec<u64> = recs
            .iter()
            .map(|r| r.packet.anno().timestamp.secs())
            .collect();
        assert_eq!(secs, vec![3, 4, 5, 6]);
        assert_eq!(recs[0].packet.data(), &f[..]);
        assert_eq!(recs[1].packet.network_header_offset(), Some(0));
        assert_eq!(recs[2].packet.network_header_offset(), Some(4));
        assert_eq!(recs[3].packet.network_header_offset(), Some(12));
        assert!(recs.iter().all(|r| r.ip));
        assert_eq!(r.other_types, 1);
        assert_eq!(r.encap(), "SUNATM");
        // Cut anywhere: no panic, every whole record before the cut read.
        for n in 0..bytes.len() {
            let (recs, r) = read_all(bytes[..n].to_vec(), None, true);
            assert!(recs.len() <= 4);
            assert!(r.truncated <= 1);
        }
        // A length shorter than the header ends the file.
        let mut bad = erf(1, 0, 2, 0, &[], &[]);
        bad[10..12].copy_from_slice(&[0, 8]);
        bad.extend(erf(2, 0, 22, 20, &[], &IP));
        let mut input = TraceInput::from_reader(Box::new(std::io::Cursor::new(bad)), "t");
        let mut r = ErfReader::new(None, false);
        assert!(r.next(&mut input).is_none());
        assert_eq!(r.bad_records, 1);
        assert!(input.error.is_some());
    }

    #[test]
    fn legacy_cells_read_as_clicks() {
        // A legacy Ethernet cell: timestamp, wire length, 54 frame bytes.
        let mut cell = (7u64 << 32).to_le_bytes().to_vec();
        cell.extend_from_slice(&100u16.to_be_bytes());
        let mut f = frame();
        f.resize(54, 0);
        cell.extend_from_slice(&f);
        assert_eq!(cell.len(), 64);
        let (recs, r) = read_all(
            [cell.clone(), cell.clone()].concat(),
            Some(Encap::Ether),
            true,
        );
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].packet.data(), &f[..]);
        assert_eq!(recs[0].packet.anno().extra_length, 46);
        assert_eq!(recs[0].packet.anno().timestamp.secs(), 7);
        assert_eq!(recs[0].packet.network_header_offset(), Some(14));
        assert_eq!(r.encap(), "ETHER");
        // Type 0 without ENCAP: an ATM cell, 48 bytes from byte 16.
        let mut atm = (9u64 << 32).to_le_bytes().to_vec();
        atm.extend_from_slice(&[0; 8]);
        atm.extend_from_slice(&[0xaa, 0xaa, 3, 0, 0, 0, 8, 0]);
        atm.extend_from_slice(&IP);
        atm.resize(64, 0);
        let (recs, r) = read_all(atm, None, true);
        assert_eq!(recs[0].packet.len(), 48);
        assert_eq!(recs[0].packet.network_header_offset(), Some(8));
        assert_eq!(r.encap(), "ATM");
    }

    #[test]
    fn oversized_records_are_cut_to_a_buffer() {
        let mut f = frame();
        f.resize(3000, 0x5a);
        let data = [&[0u8, 0][..], &f].concat();
        let mut bytes = erf(1, 0, 2, 3004, &[], &data);
        bytes.extend(erf(2, 0, 22, 20, &[], &IP));
        let (recs, r) = read_all(bytes, None, false);
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].packet.len(), MAX_FRAME);
        assert_eq!(recs[0].packet.anno().extra_length, 3000 - MAX_FRAME as u32);
        assert_eq!(r.oversized, 1);
        assert_eq!(recs[1].packet.data(), &IP);
    }
}
