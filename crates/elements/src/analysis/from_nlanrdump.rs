//! `FromNLANRDump`: reads packets from NLANR traces in the TSH, FR+ and FR
//! formats (Click's `elements/analysis/fromnlanrdump.cc`).
//!
//! A TSH or FR+ record is 44 bytes: the seconds (32 bits, big-endian),
//! then a word holding the interface number (TSH, top 8 bits) and the
//! microseconds (TSH: low 24 bits; FR+: all 32), then the IP header
//! without options (20 bytes) and the first 16 bytes of the transport
//! header. An FR record is 24 bytes: seconds, microseconds, source and
//! destination addresses, IP length (16 bits), protocol, TCP flags, ports
//! (the layout of Click's `FRCell`). libtrace (`tsh:`, `fr+:`) reads the
//! first two the same way.

use super::trace_file::{
    compressed_warning, flow_headers, usec_time, Complaints, Keywords, Record, RecordFormat,
    TraceInput, TraceSource,
};
use bricks_element::{
    ArgError, Args, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use std::path::PathBuf;

/// The `FromNLANRDump` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FromNLANRDump",
    ports: "0/1-2",
    processing: "/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "reads packets from an NLANR file",
    synopsis: "FromNLANRDump(FILENAME [, KEYWORDS])",
    description: "Reads IP packets from a file in a format NLANR traces use: TSH or FR+ \
        (44-byte records: a timestamp, the IP header without options and the first 16 bytes \
        of the transport header) or FR (24-byte flow-like records: addresses, IP length, \
        protocol, TCP flags, ports), and emits them with their timestamps. A packet holds \
        the bytes the record has, at most its IP length; the rest of its IP length is the \
        extra length annotation. Records whose IP header is not IPv4 with 20 bytes (IP \
        options: the record holds no transport header then) leave on output 1, or are \
        dropped and counted in `not_ip`. In TSH files the paint annotation is the record's \
        interface number. A record cut short by the end of the file is counted in \
        `truncated`. Under TIMING packets leave at the pace of their timestamps; STOP stops \
        the router at the end of the file or at END; without STOP or END_CALL, reaching END \
        sets `active` false (the packet at END stays until reading goes on). Differences \
        from Click: FR records are read as Click's FRCell describes them (Click ends at the \
        first FR record), making an IP header and a TCP (20 bytes) or UDP (8 bytes) header; \
        a packet holds at most its IP length (Click always holds 36 bytes) and the rest is \
        its extra length (Click sets none); `.fr+` file names are guessed as FR+ (Click \
        compares the wrong number of characters and guesses TSH); compressed files are not \
        uncompressed (a warning says so); MMAP is accepted and has no effect.",
    ports: "no inputs; output 0 push or pull; optional output 1 (push) for non-IPv4 records",
    keywords: &[
        Keyword {
            name: "FILENAME",
            ty: "file name",
            default: None,
            doc: "the trace to read; `-` is standard input",
        },
        Keyword {
            name: "FORMAT",
            ty: "fr, fr+, tsh or guess",
            default: Some("guess"),
            doc: "the record format; `guess` goes by the file name's ending (.fr, .fr+, .tsh, \
                  after .gz, .z or .bz2), else TSH",
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
            default: Some("true"),
            doc: "ignored, as in Click: the packets are always IP",
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
            doc: "the write handler called at END or at the end of the file (`ELEMENT.HANDLER \
                  [VALUE]`, or `stop`); exclusive with STOP",
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
            name: "FILEPOS",
            ty: "unsigned",
            default: Some("0"),
            doc: "start reading at this byte of the file",
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
        (
            "not_ip",
            "records for output 1: not IPv4, or with IP options",
        ),
        ("truncated", "records cut short by the end of the file"),
    ],
    example: "FromNLANRDump(crates/elements/src/analysis/sample.tsh, STOP true)\n\
              -> ToIPSummaryDump(-, CONTENTS timestamp ip_src sport ip_dst dport ip_len paint);",
    see_also: &["FromDump", "FromDAGDump", "ToIPSummaryDump"],
};

/// An NLANR record format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NlanrFormat {
    /// 24-byte flow-like records.
    Fr,
    /// 44-byte records, 32-bit microseconds.
    FrPlus,
    /// 44-byte records, an 8-bit interface and 24-bit microseconds.
    Tsh,
}

impl NlanrFormat {
    /// Bytes per record.
    pub fn record_size(self) -> usize {
        match self {
            NlanrFormat::Fr => 24,
            NlanrFormat::FrPlus | NlanrFormat::Tsh => 44,
        }
    }

    /// Click's FORMAT values, `guess` going by `file`'s name.
    pub fn parse(format: &str, file: &str) -> Option<(NlanrFormat, bool)> {
        Some(match format.to_ascii_lowercase().as_str() {
            "fr" => (NlanrFormat::Fr, false),
            "fr+" => (NlanrFormat::FrPlus, false),
            "tsh" => (NlanrFormat::Tsh, false),
            "guess" => {
                let f = file.to_ascii_lowercase();
                let f = [".gz", ".z", ".bz2"]
                    .iter()
                    .find_map(|s| f.strip_suffix(s))
                    .unwrap_or(&f);
                if f.ends_with(".fr") {
                    (NlanrFormat::Fr, false)
                } else if f.ends_with(".fr+") {
                    (NlanrFormat::FrPlus, false)
                } else if f.ends_with(".tsh") {
                    (NlanrFormat::Tsh, false)
                } else {
                    (NlanrFormat::Tsh, true)
                }
            }
            _ => return None,
        })
    }
}

/// Reads NLANR records.
pub struct NlanrReader {
    format: NlanrFormat,
    /// Records cut short by the end of the file.
    pub truncated: u64,
    complaints: Complaints,
}

impl NlanrReader {
    /// A reader of `format` records.
    pub fn new(format: NlanrFormat) -> NlanrReader {
        NlanrReader {
            format,
            truncated: 0,
            complaints: Complaints::default(),
        }
    }
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The packet of one record (`cell` is exactly a record long) and whether
/// it goes to output 0: an IPv4 header of 20 bytes.
pub fn decode(format: NlanrFormat, cell: &[u8]) -> (Packet, bool) {
    let word = be32(cell, 4);
    let (usec, iface) = match format {
        NlanrFormat::Tsh => (word & 0x00ff_ffff, Some((word >> 24) as u8)),
        _ => (word, None),
    };
    let ts = usec_time(be32(cell, 0), usec);
    let (mut p, ip) = match format {
        NlanrFormat::Fr => (fr_packet(cell), true),
        _ => {
            let h = &cell[8..44];
            let ip = h[0] == 0x45;
            let ip_len = u16::from_be_bytes([h[2], h[3]]);
            // At most the IP length, at least the IP header.
            let held = if ip {
                usize::from(ip_len).clamp(20, h.len())
            } else {
                h.len()
            };
            let mut p = Packet::from_slice(&h[..held]).unwrap_or_default();
            if ip {
                p.anno_mut().extra_length = u32::from(ip_len).saturating_sub(held as u32);
                super::trace_file::set_ip_header(&mut p, 0);
            }
            (p, ip)
        }
    };
    p.anno_mut().timestamp = ts;
    if let Some(i) = iface {
        p.anno_mut().paint = i;
    }
    (p, ip)
}

/// The packet an FR record describes: an IP header, and a TCP or UDP
/// header with the ports (and TCP flags) the record gives.
fn fr_packet(c: &[u8]) -> Packet {
    let ip_len = u16::from_be_bytes([c[16], c[17]]);
    let proto = c[18];
    let mut b = [0u8; 40];
    b[0] = 0x45;
    b[2..4].copy_from_slice(&ip_len.to_be_bytes());
    b[9] = proto;
    b[12..20].copy_from_slice(&c[8..16]);
    b[20..24].copy_from_slice(&c[20..24]);
    if proto == 6 {
        b[33] = c[19];
    }
    let n = flow_headers(&mut b, ip_len);
    let mut p = Packet::from_slice(&b[..n]).unwrap_or_default();
    p.anno_mut().extra_length = u32::from(ip_len).saturating_sub(n as u32);
    super::trace_file::set_ip_header(&mut p, 0);
    p
}

impl RecordFormat for NlanrReader {
    fn next(&mut self, input: &mut TraceInput) -> Option<Record> {
        let mut cell = [0u8; 44];
        let size = self.format.record_size();
        let filepos = input.pos;
        let got = input.read_full(&mut cell[..size]);
        if got < size {
            if got > 0 {
                self.truncated += 1;
                self.complaints.note(|| {
                    format!(
                        "{}: record at byte {filepos} cut short ({got} of {size} bytes)",
                        input.path.display()
                    )
                });
            }
            return None;
        }
        let (packet, ip) = decode(self.format, &cell[..size]);
        Some(Record {
            packet,
            ip,
            filepos,
        })
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("truncated", self.truncated);
    }

    fn take_message(&mut self) -> Option<String> {
        self.complaints.take()
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let path: PathBuf = args.read_mp("FILENAME")?;
    let format: String = args.read("FORMAT")?.unwrap_or_else(|| "guess".into());
    let _force_ip: bool = args.read("FORCE_IP")?.unwrap_or(true);
    let _mmap: bool = args.read("MMAP")?.unwrap_or(false);
    let filepos: u64 = args.read("FILEPOS")?.unwrap_or(0);
    let (format, guessed) = NlanrFormat::parse(&format, &path.to_string_lossy())
        .ok_or_else(|| ArgError::new("bad FORMAT").with_help("fr, fr+, tsh or guess"))?;
    let mut warnings = Vec::new();
    if guessed {
        warnings.push("cannot guess file format from filename, assuming 'tsh'".to_string());
    }
    let mut input = TraceInput::open(Some(path), None)?;
    warnings.extend(compressed_warning(&mut input));
    if filepos > 0 {
        input.skip(filepos);
    }
    let kw = Keywords {
        times: true,
        sample: true,
        packet_filepos: true,
    };
    let reader = Box::new(NlanrReader::new(format));
    Ok(Box::new(TraceSource::make(
        "FromNLANRDump",
        kw,
        args,
        ports,
        input,
        reader,
        warnings,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_element::TaskResult;
    use bricks_runtime::testing::Harness;

    fn out1() -> PortInfo {
        PortInfo {
            inputs: vec![],
            outputs: vec![bricks_element::Processing::Push],
        }
    }

    /// A TSH record: interface `iface`, the IP header `ip` (20 bytes) and
    /// 16 transport bytes.
    fn tsh(sec: u32, iface: u8, usec: u32, ip: &[u8; 20], tp: &[u8; 16]) -> Vec<u8> {
        let mut r = sec.to_be_bytes().to_vec();
        r.extend_from_slice(&((u32::from(iface) << 24) | usec).to_be_bytes());
        r.extend_from_slice(ip);
        r.extend_from_slice(tp);
        r
    }

    /// An IPv4 header of `len` bytes of IP length, protocol `proto`.
    fn ip(len: u16, proto: u8) -> [u8; 20] {
        let mut h = [
            0x45, 0, 0, 0, 0x1c, 0x46, 0x40, 0, 64, proto, 0, 0, 172, 16, 10, 99, 172, 16, 10, 12,
        ];
        h[2..4].copy_from_slice(&len.to_be_bytes());
        h
    }

    const TCP: [u8; 16] = [
        0xe0, 0x7d, 0, 80, 0xa2, 0xb3, 0xc4, 0xd5, 0, 0, 0, 0, 0xa0, 0x02, 0x72, 0x10,
    ];

    #[test]
    fn tsh_records_make_their_packets() {
        let r = tsh(1_018_330_170, 3, 887_165, &ip(60, 6), &TCP);
        assert_eq!(r.len(), 44);
        let (p, ok) = decode(NlanrFormat::Tsh, &r);
        assert!(ok);
        assert_eq!(p.data(), &r[8..44]);
        assert_eq!(p.anno().timestamp.secs(), 1_018_330_170);
        assert_eq!(p.anno().timestamp.subsec_nanos(), 887_165_000);
        assert_eq!(p.anno().paint, 3);
        assert_eq!(p.anno().extra_length, 24);
        assert_eq!(p.network_header_offset(), Some(0));
        assert_eq!(p.anno().dst_ip, std::net::Ipv4Addr::new(172, 16, 10, 12));
        // A short UDP packet: the record's bytes past its IP length are
        // not the packet's.
        let mut udp = [0u8; 16];
        udp[..8].copy_from_slice(&[0, 53, 0, 53, 0, 8, 0, 0]);
        let (p, ok) = decode(NlanrFormat::Tsh, &tsh(5, 1, 5, &ip(28, 17), &udp));
        assert!(ok);
        assert_eq!(p.len(), 28);
        assert_eq!(p.anno().extra_length, 0);
        // An IP length below the header's: the header is kept.
        let (p, _) = decode(NlanrFormat::Tsh, &tsh(5, 1, 5, &ip(3, 17), &udp));
        assert_eq!(p.len(), 20);
        // FR+: all 32 bits are microseconds, no interface.
        let r = tsh(7, 0, 1_500_000, &ip(40, 6), &TCP);
        let (p, _) = decode(NlanrFormat::FrPlus, &r);
        assert_eq!(p.anno().timestamp.0, 8_500_000_000);
        assert_eq!(p.anno().paint, 0);
    }

    #[test]
    fn options_and_other_versions_go_to_output_1() {
        let mut h = ip(60, 6);
        h[0] = 0x46;
        let (p, ok) = decode(NlanrFormat::Tsh, &tsh(1, 0, 0, &h, &TCP));
        assert!(!ok);
        assert_eq!(p.len(), 36);
        h[0] = 0x60;
        assert!(!decode(NlanrFormat::Tsh, &tsh(1, 0, 0, &h, &TCP)).1);
    }

    #[test]
    fn fr_records_make_ip_and_transport_headers() {
        let mut c = Vec::new();
        c.extend_from_slice(&100u32.to_be_bytes());
        c.extend_from_slice(&250u32.to_be_bytes());
        c.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        c.extend_from_slice(&1500u16.to_be_bytes());
        c.extend_from_slice(&[6, 0x12]);
        c.extend_from_slice(&[0x04, 0x00, 0x00, 0x50]);
        let (p, ok) = decode(NlanrFormat::Fr, &c);
        assert!(ok);
        let d = p.data();
        assert_eq!(d.len(), 40);
        assert_eq!(&d[..4], &[0x45, 0, 0x05, 0xdc]);
        assert_eq!(d[9], 6);
        assert_eq!(&d[12..20], &[10, 0, 0, 1, 10, 0, 0, 2]);
        assert_eq!(&d[20..24], &[0x04, 0, 0, 0x50]);
        assert_eq!((d[32], d[33]), (0x50, 0x12));
        assert_eq!(p.anno().extra_length, 1460);
        assert_eq!(p.anno().timestamp.0, 100_000_250_000);
        c[18] = 17;
        let (p, _) = decode(NlanrFormat::Fr, &c);
        assert_eq!(p.len(), 28);
        assert_eq!(&p.data()[24..26], &1480u16.to_be_bytes());
        c[18] = 1;
        c[16..18].copy_from_slice(&[0, 4]);
        let (p, _) = decode(NlanrFormat::Fr, &c);
        assert_eq!((p.len(), p.anno().extra_length), (20, 0));
    }

    #[test]
    fn formats_are_guessed_from_names() {
        let g = |f: &str| NlanrFormat::parse("guess", f).unwrap();
        assert_eq!(g("a.tsh"), (NlanrFormat::Tsh, false));
        assert_eq!(g("a.FR.gz"), (NlanrFormat::Fr, false));
        assert_eq!(g("a.fr+.bz2"), (NlanrFormat::FrPlus, false));
        assert_eq!(g("a.pcap"), (NlanrFormat::Tsh, true));
        assert_eq!(
            NlanrFormat::parse("FR+", "x").unwrap(),
            (NlanrFormat::FrPlus, false)
        );
        assert!(NlanrFormat::parse("erf", "x").is_none());
    }

    #[test]
    fn the_element_reads_windows_samples_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tsh");
        let mut f = Vec::new();
        for i in 0..10u32 {
            f.extend(tsh(1000 + i, 0, 0, &ip(40, 6), &TCP));
        }
        let mut opt = ip(40, 6);
        opt[0] = 0x46;
        f.extend(tsh(1010, 0, 0, &opt, &TCP));
        f.extend(&tsh(1011, 0, 0, &ip(40, 6), &TCP)[..30]);
        std::fs::write(&path, &f).unwrap();
        let mut h = Harness::push(&CLASS, &format!("{}, BURST 64", path.display()), 0, 2);
        while h.run_task() != TaskResult::Done {}
        assert_eq!(h.take(0).len(), 10);
        assert_eq!(h.take(1).len(), 1);
        let s = h.stats();
        assert_eq!(s.get("truncated"), Some(1));
        assert_eq!(s.get("not_ip"), Some(1));
        assert_eq!(h.read_handler("filepos").unwrap(), f.len().to_string());
        assert_eq!(h.read_handler("filesize").unwrap(), f.len().to_string());
        assert_eq!(h.read_handler("encap").unwrap(), "IP");
        // START_AFTER and END_AFTER: records 2 to 4; END leaves the source
        // inactive with the record at END kept.
        let mut h = Harness::push(
            &CLASS,
            &format!("{}, START_AFTER 2, END_AFTER 5, BURST 64", path.display()),
            0,
            1,
        );
        for _ in 0..4 {
            h.run_task();
        }
        let got: Vec<u64> = h
            .take(0)
            .iter()
            .map(|p| p.anno().timestamp.secs())
            .collect();
        assert_eq!(got, vec![1002, 1003, 1004]);
        assert_eq!(h.read_handler("active").unwrap(), "false");
        assert_eq!(h.stats().get("skipped"), Some(2));
        // extend_interval: two more seconds, and the kept record leaves.
        h.write_handler("extend_interval", "2").unwrap();
        for _ in 0..4 {
            h.run_task();
        }
        let got: Vec<u64> = h
            .take(0)
            .iter()
            .map(|p| p.anno().timestamp.secs())
            .collect();
        assert_eq!(got, vec![1005, 1006]);
        // FILEPOS skips records; SAMPLE 0 emits none.
        let mut h = Harness::push(&CLASS, &format!("{}, FILEPOS 352", path.display()), 0, 1);
        while h.run_task() != TaskResult::Done {}
        assert_eq!(h.take(0).len(), 2);
        let mut h = Harness::push(&CLASS, &format!("{}, SAMPLE 0", path.display()), 0, 1);
        while h.run_task() != TaskResult::Done {}
        assert!(h.take(0).is_empty());
        assert_eq!(h.read_handler("sampling_prob").unwrap(), "0");
        // STOP stops at the end.
        let mut h = Harness::push(&CLASS, &format!("{}, STOP true", path.display()), 0, 1);
        while h.run_task() != TaskResult::Done {}
        assert!(h.stop_requested());
        assert!(
            Harness::try_new(&CLASS, &format!("{}, FORMAT xyz", path.display()), out1()).is_err()
        );
        assert!(Harness::try_new(
            &CLASS,
            &format!("{}, STOP true, END_CALL stop", path.display()),
            out1()
        )
        .is_err());
    }
}
