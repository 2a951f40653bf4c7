//! libpcap capture files: the classic format (not pcapng), both byte
//! orders, microsecond and nanosecond timestamps.
//!
//! Written here rather than taken from a crate because the reader fills
//! packet buffers directly (no intermediate allocation per record) and
//! reports every malformation with the byte offset where it starts, which
//! is what a user needs to find the damage in a large file. The format:
//! a 24-byte file header (magic, version 2.4, zone, sigfigs, snaplen,
//! link type), then records of a 16-byte header (seconds, sub-seconds,
//! captured length, original length) followed by the captured bytes.

use bricks_packet::{Packet, Timestamp, MAX_FRAME};
use std::io::{self, Read, Write};

const MAGIC_US: u32 = 0xa1b2_c3d4;
const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// Largest record libpcap itself accepts.
pub const MAX_RECORD: u32 = 262_144;

/// Link types bricks reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    /// Ethernet II frames (DLT_EN10MB, 1).
    Ethernet,
    /// Raw IPv4 or IPv6 packets, no link header (LINKTYPE_RAW 101, and the
    /// DLT_RAW values 12 and 14 some systems write).
    RawIp,
    /// Raw IPv4 (228).
    Ipv4,
    /// Raw IPv6 (229).
    Ipv6,
}

impl LinkType {
    fn from_u32(v: u32) -> Option<LinkType> {
        match v {
            1 => Some(LinkType::Ethernet),
            12 | 14 | 101 => Some(LinkType::RawIp),
            228 => Some(LinkType::Ipv4),
            229 => Some(LinkType::Ipv6),
            _ => None,
        }
    }

    /// The value written in file headers.
    pub fn to_u32(self) -> u32 {
        match self {
            LinkType::Ethernet => 1,
            LinkType::RawIp => 101,
            LinkType::Ipv4 => 228,
            LinkType::Ipv6 => 229,
        }
    }

    /// Whether packets start with an IP header.
    pub fn is_ip(self) -> bool {
        self != LinkType::Ethernet
    }
}

/// What is wrong with a capture file.
#[derive(Debug)]
pub enum PcapError {
    /// Reading or writing failed.
    Io(io::Error),
    /// The file does not start with a pcap magic number.
    BadMagic { found: u32 },
    /// The file ends inside a header or record.
    Truncated { offset: u64, what: &'static str },
    /// A record claims more bytes than any capture can hold.
    BadLength { offset: u64, len: u32 },
    /// The link type is not one bricks handles.
    UnsupportedLinkType { linktype: u32 },
    /// A pcapng file (bricks reads classic pcap).
    Pcapng,
}

impl core::fmt::Display for PcapError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PcapError::Io(e) => write!(f, "{e}"),
            PcapError::BadMagic { found } => {
                write!(f, "not a pcap file (magic {found:#010x} at byte 0)")
            }
            PcapError::Truncated { offset, what } => {
                write!(f, "file ends inside {what} starting at byte {offset}")
            }
            PcapError::BadLength { offset, len } => write!(
                f,
                "record at byte {offset} claims {len} captured bytes (at most {MAX_RECORD})"
            ),
            PcapError::UnsupportedLinkType { linktype } => write!(
                f,
                "link type {linktype} not supported (Ethernet 1, raw IP 101/12/14, IPv4 228, IPv6 229)"
            ),
            PcapError::Pcapng => write!(
                f,
                "pcapng file: convert it with `editcap -F pcap IN OUT` (bricks reads classic pcap)"
            ),
        }
    }
}

impl std::error::Error for PcapError {}

impl From<io::Error> for PcapError {
    fn from(e: io::Error) -> Self {
        PcapError::Io(e)
    }
}

/// One record read from a file.
#[derive(Debug)]
pub enum Record {
    /// A packet, with its timestamp in the annotations.
    Packet(Packet),
    /// A record larger than a packet buffer, skipped (the caller counts
    /// it); `len` is its captured length.
    Oversized { offset: u64, len: u32 },
}

/// Reads a capture file record by record.
pub struct PcapReader<R> {
    r: R,
    swapped: bool,
    nanos: bool,
    linktype: LinkType,
    snaplen: u32,
    offset: u64,
    scratch: Vec<u8>,
}

/// Reads exactly `buf.len()` bytes; `Ok(false)` at a clean end of file
/// (nothing read), an error when the end comes part way.
fn read_full<R: Read>(
    r: &mut R,
    buf: &mut [u8],
    offset: u64,
    what: &'static str,
) -> Result<bool, PcapError> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(PcapError::Truncated { offset, what }),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

impl<R: Read> PcapReader<R> {
    /// Reads the file header.
    pub fn new(mut r: R) -> Result<PcapReader<R>, PcapError> {
        let mut h = [0u8; 24];
        if !read_full(&mut r, &mut h, 0, "the file header")? {
            return Err(PcapError::Truncated {
                offset: 0,
                what: "the file header",
            });
        }
        let magic_le = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let (swapped, nanos) = match magic_le {
            MAGIC_US => (false, false),
            MAGIC_NS => (false, true),
            m if m.swap_bytes() == MAGIC_US => (true, false),
            m if m.swap_bytes() == MAGIC_NS => (true, true),
            0x0a0d_0d0a => return Err(PcapError::Pcapng),
            found => return Err(PcapError::BadMagic { found }),
        };
        let word = |i: usize| {
            let v = u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
            if swapped {
                v.swap_bytes()
            } else {
                v
            }
        };
        let snaplen = word(16);
        let lt = word(20) & 0x0fff_ffff; // the top bits carry FCS information
        let linktype =
            LinkType::from_u32(lt).ok_or(PcapError::UnsupportedLinkType { linktype: lt })?;
        Ok(PcapReader {
            r,
            swapped,
            nanos,
            linktype,
            snaplen,
            offset: 24,
            scratch: Vec::new(),
        })
    }

    /// The file's link type.
    pub fn linktype(&self) -> LinkType {
        self.linktype
    }

    /// Whether timestamps have nanosecond resolution.
    pub fn is_nanos(&self) -> bool {
        self.nanos
    }

    /// The snapshot length the file declares.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// Byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn u32_at(&self, b: &[u8], i: usize) -> u32 {
        let v = u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if self.swapped {
            v.swap_bytes()
        } else {
            v
        }
    }

    /// The next record, or `None` at the end of the file.
    pub fn next_record(&mut self) -> Result<Option<Record>, PcapError> {
        let start = self.offset;
        let mut h = [0u8; 16];
        if !read_full(&mut self.r, &mut h, start, "a record header")? {
            return Ok(None);
        }
        let secs = self.u32_at(&h, 0);
        let frac = self.u32_at(&h, 4);
        let caplen = self.u32_at(&h, 8);
        let wire_len = self.u32_at(&h, 12);
        if caplen > MAX_RECORD {
            return Err(PcapError::BadLength {
                offset: start,
                len: caplen,
            });
        }
        let nanos = if self.nanos {
            frac.min(999_999_999)
        } else {
            frac.min(999_999).saturating_mul(1000)
        };
        self.offset += 16 + caplen as u64;
        if caplen as usize > MAX_FRAME {
            self.scratch.resize(caplen as usize, 0);
            if !read_full(&mut self.r, &mut self.scratch, start, "a record")? {
                return Err(PcapError::Truncated {
                    offset: start,
                    what: "a record",
                });
            }
            return Ok(Some(Record::Oversized {
                offset: start,
                len: caplen,
            }));
        }
        let mut p = Packet::new();
        // Cannot fail: caplen <= MAX_FRAME, the buffer's capacity after the
        // headroom.
        let _ = p.set_len(caplen as usize);
        if caplen > 0 && !read_full(&mut self.r, p.data_mut(), start, "a record")? {
            return Err(PcapError::Truncated {
                offset: start,
                what: "a record",
            });
        }
        let a = p.anno_mut();
        a.timestamp = Timestamp::from_parts(secs as u64, nanos);
        // What the capture cut off, as Click's FromDump: the extra length
        // annotation, which ToDump adds back to the record's length.
        a.extra_length = wire_len.saturating_sub(caplen);
        Ok(Some(Record::Packet(p)))
    }
}

/// Writes a capture file.
pub struct PcapWriter<W: Write> {
    w: W,
    nanos: bool,
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header (native little-endian byte order).
    /// `snaplen` 0 means no limit.
    pub fn new(
        mut w: W,
        linktype: LinkType,
        nanos: bool,
        snaplen: u32,
    ) -> Result<PcapWriter<W>, PcapError> {
        let snaplen = if snaplen == 0 { 65535 } else { snaplen };
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&(if nanos { MAGIC_NS } else { MAGIC_US }).to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&linktype.to_u32().to_le_bytes());
        w.write_all(&h)?;
        Ok(PcapWriter { w, nanos, snaplen })
    }

    /// Appends one record; data beyond the snapshot length is cut.
    pub fn write(&mut self, ts: Timestamp, data: &[u8]) -> Result<(), PcapError> {
        self.write_extra(ts, data, 0)
    }

    /// Appends one record of a packet that was `extra` bytes longer on the
    /// wire than `data` (its extra length annotation): the record's length
    /// says so, as Click's ToDump writes it.
    pub fn write_extra(&mut self, ts: Timestamp, data: &[u8], extra: u32) -> Result<(), PcapError> {
        let cap = data.len().min(self.snaplen as usize);
        let wire_len = (data.len() as u32).saturating_add(extra);
        let frac = if self.nanos {
            ts.subsec_nanos()
        } else {
            ts.subsec_nanos() / 1000
        };
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&(ts.secs() as u32).to_le_bytes());
        h[4..8].copy_from_slice(&frac.to_le_bytes());
        h[8..12].copy_from_slice(&(cap as u32).to_le_bytes());
        h[12..16].copy_from_slice(&wire_len.to_le_bytes());
        self.w.write_all(&h)?;
        self.w.write_all(&data[..cap])?;
        Ok(())
    }

    /// Flushes buffered records.
    pub fn flush(&mut self) -> Result<(), PcapError> {
        self.w.flush()?;
        Ok(())
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real capture: tcpdump's little-endian microsecond header and one
    /// 42-byte ARP request.
    const ARP_PCAP: &[u8] = &[
        0xd4, 0xc3, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0,
        0x01, 0, 0, 0, // header
        0x10, 0x27, 0, 0, 0x40, 0xe2, 0x01, 0x00, 42, 0, 0, 0, 42, 0, 0, 0, // record header
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x08, 0x06, 0x00,
        0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x0a, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x02,
    ];

    fn read_all(bytes: &[u8]) -> Result<Vec<Record>, PcapError> {
        let mut r = PcapReader::new(bytes)?;
        let mut v = Vec::new();
        while let Some(rec) = r.next_record()? {
            v.push(rec);
        }
        Ok(v)
    }

    #[test]
    fn reads_a_real_capture() {
        let recs = read_all(ARP_PCAP).unwrap();
        assert_eq!(recs.len(), 1);
        let Record::Packet(p) = &recs[0] else {
            panic!()
        };
        assert_eq!(p.len(), 42);
        assert_eq!(&p.data()[12..14], &[0x08, 0x06]);
        assert_eq!(
            p.anno().timestamp,
            Timestamp::from_parts(10000, 123_456_000)
        );
    }

    /// A record cut by the snapshot length (captured 3 of 60 bytes) reads
    /// with an extra length of 57, which writing it back restores.
    #[test]
    fn the_cut_off_length_survives_a_round_trip() {
        let mut file = ARP_PCAP[..24].to_vec();
        file.extend_from_slice(&[0x10, 0x27, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 60, 0, 0, 0]);
        file.extend_from_slice(&[0xff, 0xff, 0xff]);
        let recs = read_all(&file).unwrap();
        let Record::Packet(p) = &recs[0] else {
            panic!()
        };
        assert_eq!((p.len(), p.anno().extra_length), (3, 57));
        let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, false, 0).unwrap();
        w.write_extra(p.anno().timestamp, p.data(), p.anno().extra_length)
            .unwrap();
        assert_eq!(w.into_inner(), file);
        // A record longer than the writer's snapshot length keeps its length.
        let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, false, 2).unwrap();
        w.write_extra(Timestamp::from_parts(1, 0), &[1, 2, 3], 5)
            .unwrap();
        let bytes = w.into_inner();
        assert_eq!(&bytes[32..40], &[2, 0, 0, 0, 8, 0, 0, 0]);
        assert_eq!(&bytes[40..], &[1, 2]);
    }

    #[test]
    fn round_trip_both_resolutions() {
        for nanos in [false, true] {
            let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, nanos, 0).unwrap();
            w.write(Timestamp::from_parts(5, 123_456_789), &[1, 2, 3])
                .unwrap();
            let bytes = w.into_inner();
            let mut r = PcapReader::new(&bytes[..]).unwrap();
            assert_eq!(r.is_nanos(), nanos);
            let Some(Record::Packet(p)) = r.next_record().unwrap() else {
                panic!()
            };
            assert_eq!(p.data(), &[1, 2, 3]);
            let want = if nanos { 123_456_789 } else { 123_456_000 };
            assert_eq!(p.anno().timestamp, Timestamp::from_parts(5, want));
            assert!(r.next_record().unwrap().is_none());
        }
    }

    #[test]
    fn big_endian_file() {
        let mut be = ARP_PCAP.to_vec();
        for range in [
            0..4,
            8..12,
            12..16,
            16..20,
            20..24,
            24..28,
            28..32,
            32..36,
            36..40,
        ] {
            be[range].reverse();
        }
        be[4..6].reverse();
        be[6..8].reverse();
        let recs = read_all(&be).unwrap();
        let Record::Packet(p) = &recs[0] else {
            panic!()
        };
        assert_eq!(p.len(), 42);
        assert_eq!(p.anno().timestamp.secs(), 10000);
    }

    #[test]
    fn truncation_reports_offset() {
        let e = read_all(&ARP_PCAP[..ARP_PCAP.len() - 1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "file ends inside a record starting at byte 24"
        );
        let e = read_all(&ARP_PCAP[..30]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "file ends inside a record header starting at byte 24"
        );
        let e = read_all(&ARP_PCAP[..10]).unwrap_err();
        assert!(e.to_string().contains("file header"));
    }

    #[test]
    fn bad_magic_and_length() {
        let mut bad = ARP_PCAP.to_vec();
        bad[0] = 0;
        assert!(matches!(read_all(&bad), Err(PcapError::BadMagic { .. })));
        let mut bad = ARP_PCAP.to_vec();
        bad[32..36].copy_from_slice(&0x0100_0000u32.to_le_bytes());
        let e = read_all(&bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            "record at byte 24 claims 16777216 captured bytes (at most 262144)"
        );
        let mut ng = ARP_PCAP.to_vec();
        ng[0..4].copy_from_slice(&[0x0a, 0x0d, 0x0d, 0x0a]);
        assert!(matches!(read_all(&ng), Err(PcapError::Pcapng)));
    }

    #[test]
    fn oversized_record_is_skipped_not_fatal() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::Ethernet, false, 0).unwrap();
        w.write(Timestamp(0), &vec![0u8; 9000]).unwrap();
        w.write(Timestamp(0), &[7; 60]).unwrap();
        let recs = read_all(&w.into_inner()).unwrap();
        assert!(matches!(
            recs[0],
            Record::Oversized {
                offset: 24,
                len: 9000
            }
        ));
        assert!(matches!(&recs[1], Record::Packet(p) if p.len() == 60));
    }

    #[test]
    fn snaplen_cuts_records() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::RawIp, false, 4).unwrap();
        w.write(Timestamp(0), &[1, 2, 3, 4, 5, 6]).unwrap();
        let bytes = w.into_inner();
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!(r.linktype(), LinkType::RawIp);
        let Some(Record::Packet(p)) = r.next_record().unwrap() else {
            panic!()
        };
        assert_eq!(p.data(), &[1, 2, 3, 4]);
    }
}
