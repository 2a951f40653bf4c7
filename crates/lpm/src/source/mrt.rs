//! MRT routing table dumps, TABLE_DUMP_V2 (RFC 6396 §4.3, add-path
//! subtypes from RFC 8050 §4.1), as RouteViews (`rib.*.bz2`) and RIPE RIS
//! (`bview.*.gz`) publish them.
//!
//! A dump is a sequence of records, each a 12-byte header (timestamp, type,
//! subtype, length) and a body. TABLE_DUMP_V2 opens with a
//! PEER_INDEX_TABLE (§4.3.1), then one RIB record per prefix (§4.3.2): a
//! sequence number, the prefix, and one entry per peer that announced it,
//! each entry carrying that peer's BGP path attributes (RFC 4271 §4.3).
//!
//! What is loaded, per RIB_IPV4_UNICAST, RIB_IPV6_UNICAST and their ADDPATH
//! variants:
//! - the prefix, with **the first entry's next hop** as the gateway: the
//!   entries are the views of different peers, the first is as good as
//!   any, and a router's table has one best path (use a text file for
//!   ECMP). For IPv4 the next hop is NEXT_HOP (type 3), or MP_REACH_NLRI
//!   (type 14) when there is none (an IPv6 next hop, RFC 8950); for IPv6 it
//!   is MP_REACH_NLRI's, the global address when a link-local one follows.
//!   MP_REACH_NLRI is read in both the abbreviated form of RFC 6396 §4.3.4
//!   (next-hop length and address only) and the full RFC 4760 form some
//!   writers use. No other attribute is decoded.
//! - the output is [`MrtOptions::outputs`]`[gateway]`, else
//!   [`MrtOptions::default_output`] (0).
//! - a prefix seen twice keeps the first record (add-path dumps have one
//!   record per path).
//!
//! Multicast RIBs are skipped silently; other TABLE_DUMP_V2 subtypes
//! (RIB_GENERIC, GEO_PEER_TABLE, unknown) and other MRT types (BGP4MP
//! update streams, the old TABLE_DUMP) are skipped with a warning under
//! either [`OnError`] policy: they are valid MRT, just not a RIB bricks
//! reads.
//!
//! Every length is checked against the bytes that hold it. A malformed
//! record is a [`SourceError`] at the byte offset of the bad field; under
//! [`OnError::Skip`] the reader goes on at the next record (the MRT header
//! length is the only framing, so a record is skipped whole), and stops
//! with a warning where the file ends inside a record.
//!
//! Written here rather than taken from `bgpkit-parser`: that crate decodes
//! every attribute of every entry into owned structures (AS paths,
//! communities) where a FIB needs one next hop, its default features pull
//! an HTTP client and TLS, and its errors do not carry the byte offset a
//! user needs to find damage in a 100 MB dump. TABLE_DUMP_V2 down to the
//! next hop is a few hundred lines, streamed one record at a time.

use super::{
    Duplicates, Hop, Loaded, OnError, Route, RoutePrefix, RouteTable, SourceError, Warnings,
};
use crate::prefix::{Prefix4, Prefix6};
use std::collections::HashMap;
use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// MRT type of TABLE_DUMP_V2 (RFC 6396 §4.3).
pub const TABLE_DUMP_V2: u16 = 13;

/// TABLE_DUMP_V2 subtypes (RFC 6396 §4.3, RFC 6397, RFC 8050 §4.1).
pub mod subtype {
    /// The peers that RIB entries refer to by index.
    pub const PEER_INDEX_TABLE: u16 = 1;
    /// IPv4 unicast prefix and its entries.
    pub const RIB_IPV4_UNICAST: u16 = 2;
    /// IPv4 multicast (skipped).
    pub const RIB_IPV4_MULTICAST: u16 = 3;
    /// IPv6 unicast prefix and its entries.
    pub const RIB_IPV6_UNICAST: u16 = 4;
    /// IPv6 multicast (skipped).
    pub const RIB_IPV6_MULTICAST: u16 = 5;
    /// Any AFI/SAFI (not read).
    pub const RIB_GENERIC: u16 = 6;
    /// RFC 6397 peer locations (not read).
    pub const GEO_PEER_TABLE: u16 = 7;
    /// IPv4 unicast, entries with a path identifier.
    pub const RIB_IPV4_UNICAST_ADDPATH: u16 = 8;
    /// IPv4 multicast with path identifiers (skipped).
    pub const RIB_IPV4_MULTICAST_ADDPATH: u16 = 9;
    /// IPv6 unicast, entries with a path identifier.
    pub const RIB_IPV6_UNICAST_ADDPATH: u16 = 10;
    /// IPv6 multicast with path identifiers (skipped).
    pub const RIB_IPV6_MULTICAST_ADDPATH: u16 = 11;
    /// Any AFI/SAFI with path identifiers (not read).
    pub const RIB_GENERIC_ADDPATH: u16 = 12;
}

/// BGP path attribute type codes read here (RFC 4271 §5.1.3, RFC 4760 §3).
const ATTR_NEXT_HOP: u8 = 3;
const ATTR_MP_REACH_NLRI: u8 = 14;
/// Attribute flag: the length is two bytes (RFC 4271 §4.3).
const ATTR_EXTENDED_LENGTH: u8 = 0x10;

/// Bytes of an MRT common header (RFC 6396 §2).
pub const HEADER_LEN: usize = 12;
/// Longest record body accepted. The largest real RIB records (a prefix
/// seen by every RIS peer, with long community lists) are tens of
/// kilobytes.
pub const MAX_RECORD: u32 = 16 << 20;

/// How MRT next hops become [`Hop`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MrtOptions {
    /// The output port for each gateway; gateways not listed go to
    /// `default_output`.
    pub outputs: HashMap<IpAddr, u32>,
    /// The output of routes whose gateway is not in `outputs` (default 0).
    pub default_output: u32,
}

/// Reads a TABLE_DUMP_V2 dump (uncompressed; [`super::read`] decompresses)
/// into a table; `file` names it in error locations.
pub fn read_mrt(
    reader: impl Read,
    file: &str,
    on_error: OnError,
    options: &MrtOptions,
) -> Result<Loaded, SourceError> {
    let mut table = RouteTable::new();
    let mut warnings = Warnings::new(on_error);
    for event in MrtReader::new(reader, file) {
        match event {
            MrtEvent::Route { prefix, gateway } => {
                let output = gateway
                    .and_then(|g| options.outputs.get(&g).copied())
                    .unwrap_or(options.default_output);
                table.push(Route {
                    prefix,
                    hops: vec![Hop { gateway, output }],
                });
            }
            MrtEvent::Skipped(w) => warnings.note(w),
            MrtEvent::Malformed(e) => warnings.error(e)?,
        }
    }
    table.canonicalize(Duplicates::KeepFirst);
    Ok((table, warnings.finish()))
}

/// What one step of an [`MrtReader`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MrtEvent {
    /// A RIB record: its prefix and its first entry's next hop (`None`
    /// when it has none, or it is `0.0.0.0` / `::`).
    Route {
        /// The prefix.
        prefix: RoutePrefix,
        /// The first entry's next hop.
        gateway: Option<IpAddr>,
    },
    /// A well-formed record that is not loaded (a type or subtype bricks
    /// does not read, a prefix with no entries).
    Skipped(SourceError),
    /// A malformed record, skipped; if the file ends inside it, it is the
    /// last event.
    Malformed(SourceError),
}

/// Streams the routes of a TABLE_DUMP_V2 dump, one record in memory at a
/// time. An iterator of [`MrtEvent`]s; it ends at the end of the input or
/// after a record it cannot get past (truncation, a read error).
pub struct MrtReader<R> {
    reader: R,
    file: String,
    /// Offset of the next record header.
    offset: u64,
    /// Peers in the last PEER_INDEX_TABLE, `None` before one is seen.
    peers: Option<u16>,
    body: Vec<u8>,
    done: bool,
}

impl<R: Read> MrtReader<R> {
    /// A reader of `reader`, naming it `file` in errors.
    pub fn new(reader: R, file: &str) -> MrtReader<R> {
        MrtReader {
            reader,
            file: file.to_string(),
            offset: 0,
            peers: None,
            body: Vec::new(),
            done: false,
        }
    }

    /// Offset of the next record, i.e. the bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn err(&self, offset: u64, message: impl Into<String>) -> SourceError {
        SourceError::offset(&self.file, offset, message)
    }

    /// Reads the next record; `None` at a clean end of input.
    fn next_event(&mut self) -> Option<MrtEvent> {
        while !self.done {
            let start = self.offset;
            let mut header = [0u8; HEADER_LEN];
            let got = match read_full(&mut self.reader, &mut header) {
                Ok(n) => n,
                Err(e) => return Some(self.fatal(start, format!("read error: {e}"))),
            };
            if got == 0 {
                self.done = true;
                return None;
            }
            if got < HEADER_LEN {
                let msg = format!("file ends inside an MRT header ({got} of {HEADER_LEN} bytes)");
                return Some(self.fatal(start, msg));
            }
            let typ = u16::from_be_bytes([header[4], header[5]]);
            let sub = u16::from_be_bytes([header[6], header[7]]);
            let len = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
            let body_at = start + HEADER_LEN as u64;
            if len > MAX_RECORD {
                let msg = format!("record length {len} is over the {MAX_RECORD} bytes accepted");
                return Some(self.fatal(start + 8, msg));
            }
            let got = match self.read_body(len as usize) {
                Ok(n) => n,
                Err(e) => return Some(self.fatal(body_at, format!("read error: {e}"))),
            };
            if got < len as usize {
                let msg = format!(
                    "file ends inside the record at byte {start} ({got} of {len} body bytes)"
                );
                return Some(self.fatal(body_at + got as u64, msg));
            }
            self.offset = body_at + u64::from(len);
            if let Some(event) = self.record(start, typ, sub) {
                return Some(event);
            }
        }
        None
    }

    /// Reads a body of `len` bytes into `self.body`; returns how many
    /// there were (fewer at the end of the input).
    fn read_body(&mut self, len: usize) -> io::Result<usize> {
        // Memory grows with the bytes actually read, not with what a
        // damaged length claims.
        const CHUNK: usize = 1 << 16;
        self.body.clear();
        while self.body.len() < len {
            let have = self.body.len();
            let want = (len - have).min(CHUNK);
            self.body.resize(have + want, 0);
            let n = read_full(&mut self.reader, &mut self.body[have..])?;
            self.body.truncate(have + n);
            if n < want {
                break;
            }
        }
        Ok(self.body.len())
    }

    fn fatal(&mut self, offset: u64, message: String) -> MrtEvent {
        self.done = true;
        MrtEvent::Malformed(self.err(offset, message))
    }

    /// Decodes the record in `self.body`; `None` when it yields nothing
    /// (a peer table, a multicast RIB).
    fn record(&mut self, start: u64, typ: u16, sub: u16) -> Option<MrtEvent> {
        use subtype::*;
        if typ != TABLE_DUMP_V2 {
            let what = match typ {
                11 | 12 => "an old TABLE_DUMP/OSPFv2 record",
                16 | 17 => "a BGP4MP record (an update stream, not a RIB dump)",
                _ => "not TABLE_DUMP_V2",
            };
            let msg = format!("MRT type {typ} subtype {sub} skipped: {what}");
            return Some(MrtEvent::Skipped(self.err(start + 4, msg)));
        }
        let mut body = Bytes {
            data: &self.body,
            pos: 0,
            base: start + HEADER_LEN as u64,
        };
        let (v6, addpath) = match sub {
            PEER_INDEX_TABLE => {
                return match peer_index_table(&mut body) {
                    Ok(n) => {
                        self.peers = Some(n);
                        None
                    }
                    Err(e) => Some(self.malformed(e, "PEER_INDEX_TABLE", start)),
                };
            }
            RIB_IPV4_UNICAST => (false, false),
            RIB_IPV6_UNICAST => (true, false),
            RIB_IPV4_UNICAST_ADDPATH => (false, true),
            RIB_IPV6_UNICAST_ADDPATH => (true, true),
            RIB_IPV4_MULTICAST
            | RIB_IPV6_MULTICAST
            | RIB_IPV4_MULTICAST_ADDPATH
            | RIB_IPV6_MULTICAST_ADDPATH => return None,
            _ => {
                let name = match sub {
                    RIB_GENERIC | RIB_GENERIC_ADDPATH => "RIB_GENERIC",
                    GEO_PEER_TABLE => "GEO_PEER_TABLE",
                    _ => "unknown",
                };
                let msg = format!("TABLE_DUMP_V2 subtype {sub} ({name}) skipped");
                return Some(MrtEvent::Skipped(self.err(start + 6, msg)));
            }
        };
        let name = rib_name(v6, addpath);
        let Some(peers) = self.peers else {
            let msg = format!("{name} record at byte {start} before any PEER_INDEX_TABLE");
            return Some(MrtEvent::Malformed(self.err(start, msg)));
        };
        match rib(&mut body, v6, addpath, peers) {
            Ok(Some((prefix, gateway))) => Some(MrtEvent::Route { prefix, gateway }),
            Ok(None) => {
                let msg = format!("{name} record at byte {start} has no entries; skipped");
                Some(MrtEvent::Skipped(self.err(start, msg)))
            }
            Err(e) => Some(self.malformed(e, name, start)),
        }
    }

    fn malformed(&self, e: Malformed, name: &str, start: u64) -> MrtEvent {
        let msg = format!("{name} record at byte {start}: {}", e.message);
        MrtEvent::Malformed(self.err(e.offset, msg))
    }
}

impl<R: Read> Iterator for MrtReader<R> {
    type Item = MrtEvent;

    fn next(&mut self) -> Option<MrtEvent> {
        self.next_event()
    }
}

fn rib_name(v6: bool, addpath: bool) -> &'static str {
    match (v6, addpath) {
        (false, false) => "RIB_IPV4_UNICAST",
        (true, false) => "RIB_IPV6_UNICAST",
        (false, true) => "RIB_IPV4_UNICAST_ADDPATH",
        (true, true) => "RIB_IPV6_UNICAST_ADDPATH",
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A field that does not fit, or holds a value the RFC does not allow.
#[derive(Debug)]
struct Malformed {
    /// File offset of the field.
    offset: u64,
    message: String,
}

impl Malformed {
    /// Names what the field belongs to; built only on error, so the
    /// per-entry path allocates nothing.
    fn within(mut self, what: std::fmt::Arguments) -> Malformed {
        self.message = format!("{what} {}", self.message);
        self
    }
}

/// A bounds-checked cursor over a record body that knows its file offset.
/// Every getter checks the length first, so no input can make it panic.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
    /// File offset of `data[0]`.
    base: u64,
}

impl<'a> Bytes<'a> {
    fn at(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn left(&self) -> usize {
        self.data.len() - self.pos
    }

    fn bad(&self, message: String) -> Malformed {
        Malformed {
            offset: self.at(),
            message,
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Malformed> {
        if n > self.left() {
            let left = self.left();
            return Err(self.bad(format!("{what} needs {n} bytes, {left} left in the record")));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self, what: &str) -> Result<u8, Malformed> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16, Malformed> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32, Malformed> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The remaining bytes must be none.
    fn end(&self) -> Result<(), Malformed> {
        match self.left() {
            0 => Ok(()),
            n => Err(self.bad(format!("{n} bytes after the last field"))),
        }
    }
}

/// RFC 6396 §4.3.1; returns the peer count. The peers themselves are only
/// walked for their lengths: a FIB does not need them.
fn peer_index_table(b: &mut Bytes) -> Result<u16, Malformed> {
    b.u32("collector BGP ID")?;
    let name_len = b.u16("view name length")?;
    b.take(name_len.into(), "view name")?;
    let count = b.u16("peer count")?;
    for i in 0..count {
        let peer_type = b.u8("peer type")?;
        b.u32("peer BGP ID")?;
        let ip_len = if peer_type & 1 != 0 { 16 } else { 4 };
        b.take(ip_len, "address")
            .map_err(|e| e.within(format_args!("peer {i}")))?;
        let as_len = if peer_type & 2 != 0 { 4 } else { 2 };
        b.take(as_len, "AS")
            .map_err(|e| e.within(format_args!("peer {i}")))?;
    }
    b.end()?;
    Ok(count)
}

/// RFC 6396 §4.3.2 (and RFC 8050 §4.1 with `addpath`): the prefix and the
/// first entry's next hop; `None` when there are no entries.
#[allow(clippy::type_complexity)]
fn rib(
    b: &mut Bytes,
    v6: bool,
    addpath: bool,
    peers: u16,
) -> Result<Option<(RoutePrefix, Option<IpAddr>)>, Malformed> {
    b.u32("sequence number")?;
    let max = if v6 { 128 } else { 32 };
    let at = b.at();
    let len = b.u8("prefix length")?;
    if len > max {
        return Err(Malformed {
            offset: at,
            message: format!("prefix length {len} is over {max}"),
        });
    }
    let bytes = b.take(usize::from(len).div_ceil(8), "prefix")?;
    let mut addr = [0u8; 16];
    addr[..bytes.len()].copy_from_slice(bytes);
    // Bits past the length are ignored, as BGP does (RFC 4271 §4.3).
    let prefix = if v6 {
        RoutePrefix::V6(Prefix6::new(u128::from_be_bytes(addr), len))
    } else {
        RoutePrefix::V4(Prefix4::new(
            u32::from_be_bytes([addr[0], addr[1], addr[2], addr[3]]),
            len,
        ))
    };
    let count = b.u16("entry count")?;
    let mut gateway = None;
    for i in 0..count {
        let at = b.at();
        let peer = b.u16("peer index")?;
        if peer >= peers {
            return Err(Malformed {
                offset: at,
                message: format!("entry {i}: peer index {peer}, but the peer table has {peers}"),
            });
        }
        b.u32("originated time")?;
        if addpath {
            b.u32("path identifier")?;
        }
        let attr_len = b.u16("attribute length")?;
        let base = b.at();
        let attrs = b
            .take(attr_len.into(), "attributes")
            .map_err(|e| e.within(format_args!("entry {i}")))?;
        if i == 0 {
            let mut a = Bytes {
                data: attrs,
                pos: 0,
                base,
            };
            gateway = next_hop(&mut a, v6)?;
        }
    }
    b.end()?;
    Ok((count > 0).then_some((prefix, gateway)))
}

/// The next hop in a path attribute block (RFC 4271 §4.3): NEXT_HOP for
/// IPv4 (else MP_REACH_NLRI, RFC 8950), MP_REACH_NLRI for IPv6.
/// Unspecified addresses are no gateway.
fn next_hop(a: &mut Bytes, v6: bool) -> Result<Option<IpAddr>, Malformed> {
    let mut nh: Option<IpAddr> = None;
    let mut mp: Option<IpAddr> = None;
    while a.left() > 0 {
        let flags = a.u8("attribute flags")?;
        let typ = a.u8("attribute type")?;
        let len = if flags & ATTR_EXTENDED_LENGTH != 0 {
            a.u16("attribute length")?
        } else {
            a.u8("attribute length")?.into()
        };
        let at = a.at();
        let value = a
            .take(len.into(), "value")
            .map_err(|e| e.within(format_args!("attribute {typ}")))?;
        match typ {
            ATTR_NEXT_HOP => match <[u8; 4]>::try_from(value) {
                Ok(v) => nh = Some(IpAddr::V4(Ipv4Addr::from(v))),
                Err(_) => {
                    return Err(Malformed {
                        offset: at,
                        message: format!("NEXT_HOP of {len} bytes (4 expected)"),
                    })
                }
            },
            ATTR_MP_REACH_NLRI => {
                let mut v = Bytes {
                    data: value,
                    pos: 0,
                    base: at,
                };
                mp = Some(mp_reach_next_hop(&mut v, v6)?);
            }
            _ => {}
        }
    }
    let gw = if v6 { mp } else { nh.or(mp) };
    Ok(gw.filter(|g| !g.is_unspecified()))
}

/// The next hop of MP_REACH_NLRI, abbreviated (RFC 6396 §4.3.4: length,
/// address) or in full (RFC 4760 §3: AFI, SAFI, length, address, ...).
fn mp_reach_next_hop(v: &mut Bytes, v6: bool) -> Result<IpAddr, Malformed> {
    let first = v.data.first().copied().unwrap_or(0);
    // The full form starts with the AFI's high byte, 0, so its first byte
    // plus one equals the attribute length only for an empty next hop.
    if usize::from(first) + 1 != v.data.len() {
        v.u16("MP_REACH_NLRI AFI")?;
        v.u8("MP_REACH_NLRI SAFI")?;
    }
    let at = v.at();
    let len = v.u8("MP_REACH_NLRI next hop length")?;
    let addr = v.take(len.into(), "MP_REACH_NLRI next hop")?;
    let bad = |what: &str| Malformed {
        offset: at,
        message: format!("MP_REACH_NLRI next hop of {len} bytes {what}"),
    };
    match (len, v6) {
        (4, false) => Ok(IpAddr::V4(Ipv4Addr::new(
            addr[0], addr[1], addr[2], addr[3],
        ))),
        (4, true) => Err(bad("for an IPv6 prefix")),
        // 32: a global address, then a link-local one (RFC 2545 §3).
        (16 | 32, _) => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&addr[..16]);
            Ok(IpAddr::V6(Ipv6Addr::from(a)))
        }
        _ => Err(bad("(4, 16 or 32 expected)")),
    }
}

/// Builds real-format MRT files for the tests and the fuzz seed.
#[cfg(test)]
pub(crate) mod write {
    use super::subtype::*;
    use super::*;

    /// One RIB entry.
    pub struct Entry {
        pub peer: u16,
        pub path_id: Option<u32>,
        pub attrs: Vec<u8>,
    }

    /// An MRT file under construction.
    #[derive(Default)]
    pub struct MrtWriter {
        pub out: Vec<u8>,
        pub seq: u32,
    }

    impl MrtWriter {
        pub fn record(&mut self, typ: u16, sub: u16, body: &[u8]) -> &mut Self {
            self.out.extend_from_slice(&1_700_000_000u32.to_be_bytes());
            self.out.extend_from_slice(&typ.to_be_bytes());
            self.out.extend_from_slice(&sub.to_be_bytes());
            self.out
                .extend_from_slice(&(body.len() as u32).to_be_bytes());
            self.out.extend_from_slice(body);
            self
        }

        /// A PEER_INDEX_TABLE of (address, AS) peers, with 4-byte ASes.
        pub fn peers(&mut self, peers: &[(IpAddr, u32)]) -> &mut Self {
            let mut b = Vec::new();
            b.extend_from_slice(&[192, 0, 2, 255]);
            let view = b"bricks";
            b.extend_from_slice(&(view.len() as u16).to_be_bytes());
            b.extend_from_slice(view);
            b.extend_from_slice(&(peers.len() as u16).to_be_bytes());
            for (i, (ip, asn)) in peers.iter().enumerate() {
                let v6 = ip.is_ipv6();
                b.push(2 | u8::from(v6));
                b.extend_from_slice(&[10, 0, 0, i as u8]);
                match ip {
                    IpAddr::V4(a) => b.extend_from_slice(&a.octets()),
                    IpAddr::V6(a) => b.extend_from_slice(&a.octets()),
                }
                b.extend_from_slice(&asn.to_be_bytes());
            }
            self.record(TABLE_DUMP_V2, PEER_INDEX_TABLE, &b)
        }

        /// A RIB record of the subtype matching the prefix family and
        /// whether entries carry path identifiers.
        pub fn rib(&mut self, prefix: RoutePrefix, entries: &[Entry]) -> &mut Self {
            let addpath = entries.first().is_some_and(|e| e.path_id.is_some());
            let mut b = Vec::new();
            b.extend_from_slice(&self.seq.to_be_bytes());
            self.seq += 1;
            let sub = match prefix {
                RoutePrefix::V4(p) => {
                    b.push(p.len);
                    b.extend_from_slice(&p.addr.to_be_bytes()[..usize::from(p.len).div_ceil(8)]);
                    if addpath {
                        RIB_IPV4_UNICAST_ADDPATH
                    } else {
                        RIB_IPV4_UNICAST
                    }
                }
                RoutePrefix::V6(p) => {
                    b.push(p.len);
                    b.extend_from_slice(&p.addr.to_be_bytes()[..usize::from(p.len).div_ceil(8)]);
                    if addpath {
                        RIB_IPV6_UNICAST_ADDPATH
                    } else {
                        RIB_IPV6_UNICAST
                    }
                }
            };
            b.extend_from_slice(&(entries.len() as u16).to_be_bytes());
            for e in entries {
                b.extend_from_slice(&e.peer.to_be_bytes());
                b.extend_from_slice(&1_690_000_000u32.to_be_bytes());
                if let Some(id) = e.path_id {
                    b.extend_from_slice(&id.to_be_bytes());
                }
                b.extend_from_slice(&(e.attrs.len() as u16).to_be_bytes());
                b.extend_from_slice(&e.attrs);
            }
            self.record(TABLE_DUMP_V2, sub, &b)
        }
    }

    fn attr(out: &mut Vec<u8>, flags: u8, typ: u8, value: &[u8]) {
        if value.len() > 255 {
            out.extend_from_slice(&[flags | ATTR_EXTENDED_LENGTH, typ]);
            out.extend_from_slice(&(value.len() as u16).to_be_bytes());
        } else {
            out.extend_from_slice(&[flags, typ, value.len() as u8]);
        }
        out.extend_from_slice(value);
    }

    /// A path attribute block as a route collector stores it: ORIGIN,
    /// AS_PATH (4-byte ASes), NEXT_HOP (an IPv4 next hop of an IPv4
    /// route) or MP_REACH_NLRI (any other; abbreviated unless `full_mp`),
    /// and `communities` COMMUNITIES values (many make it extended-length).
    pub fn attrs(
        as_path: &[u32],
        next_hop: IpAddr,
        v6_route: bool,
        full_mp: bool,
        communities: usize,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        attr(&mut out, 0x40, 1, &[0]); // ORIGIN IGP
        let mut path = vec![2, as_path.len() as u8]; // AS_SEQUENCE
        for asn in as_path {
            path.extend_from_slice(&asn.to_be_bytes());
        }
        attr(&mut out, 0x40, 2, &path);
        let nh = match next_hop {
            IpAddr::V4(a) => a.octets().to_vec(),
            IpAddr::V6(a) => a.octets().to_vec(),
        };
        if !v6_route && next_hop.is_ipv4() {
            attr(&mut out, 0x40, ATTR_NEXT_HOP, &nh);
        } else {
            let mut mp = Vec::new();
            if full_mp {
                let afi: u16 = if v6_route { 2 } else { 1 };
                mp.extend_from_slice(&afi.to_be_bytes());
                mp.push(1);
            }
            mp.push(nh.len() as u8);
            mp.extend_from_slice(&nh);
            if full_mp {
                mp.push(0); // reserved; the NLRI follows, empty in a RIB dump
            }
            attr(&mut out, 0x80, ATTR_MP_REACH_NLRI, &mp);
        }
        attr(&mut out, 0x40, 5, &100u32.to_be_bytes()); // LOCAL_PREF
        if communities > 0 {
            let c: Vec<u8> = (0..communities as u32)
                .flat_map(|i| (0xfde8_0000 | i).to_be_bytes())
                .collect();
            attr(&mut out, 0xc0, 8, &c);
        }
        out
    }

    /// A dump of `table` as seen from two peers: the first entry's next
    /// hop is the first hop's gateway (or a per-family default when it has
    /// none), the second peer's is another address.
    pub fn dump(table: &RouteTable) -> Vec<u8> {
        let mut w = MrtWriter::default();
        let p4: IpAddr = "192.0.2.1".parse().unwrap();
        let p6: IpAddr = "2001:db8::1".parse().unwrap();
        w.peers(&[(p4, 64500), (p6, 64501)]);
        for (prefix, hops) in table.routes() {
            let v6 = matches!(prefix, RoutePrefix::V6(_));
            let other = if v6 { p6 } else { p4 };
            let first = hops[0].gateway.unwrap_or(other);
            let entries = [
                Entry {
                    peer: 0,
                    path_id: None,
                    attrs: attrs(&[64500, 3356, 15169], first, v6, false, 0),
                },
                Entry {
                    peer: 1,
                    path_id: None,
                    attrs: attrs(&[64501, 174], other, v6, true, 2),
                },
            ];
            w.rib(prefix, &entries);
        }
        w.out
    }
}

#[cfg(test)]
mod tests {
    use super::write::*;
    use super::*;
    use crate::source::{detect, read, Format, Location};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn p4(s: &str) -> RoutePrefix {
        let (a, l) = s.split_once('/').unwrap();
        RoutePrefix::V4(Prefix4::new(
            u32::from(a.parse::<Ipv4Addr>().unwrap()),
            l.parse().unwrap(),
        ))
    }

    fn p6(s: &str) -> RoutePrefix {
        let (a, l) = s.split_once('/').unwrap();
        RoutePrefix::V6(Prefix6::new(
            u128::from(a.parse::<Ipv6Addr>().unwrap()),
            l.parse().unwrap(),
        ))
    }

    fn entry(peer: u16, nh: &str, v6: bool) -> Entry {
        Entry {
            peer,
            path_id: None,
            attrs: attrs(&[64500, 3356], ip(nh), v6, false, 0),
        }
    }

    fn peers(w: &mut MrtWriter) -> &mut MrtWriter {
        w.peers(&[(ip("192.0.2.1"), 64500), (ip("2001:db8::1"), 4_200_000_000)])
    }

    /// A small dump with one record of each kind read: returns the bytes
    /// and the record start offsets.
    fn sample() -> (Vec<u8>, Vec<usize>) {
        let mut w = MrtWriter::default();
        let mut starts = vec![0];
        peers(&mut w);
        let mut mark = |w: &mut MrtWriter| starts.push(w.out.len());
        mark(&mut w);
        w.rib(
            p4("10.0.0.0/8"),
            &[entry(0, "192.0.2.1", false), entry(1, "192.0.2.99", false)],
        );
        mark(&mut w);
        w.rib(p4("198.51.100.0/24"), &[entry(1, "2001:db8::7", false)]);
        mark(&mut w);
        w.rib(
            p6("2001:db8:1::/48"),
            &[entry(1, "2001:db8::2", true), entry(0, "2001:db8::3", true)],
        );
        mark(&mut w);
        let full = Entry {
            peer: 0,
            path_id: None,
            attrs: attrs(&[1], ip("2001:db8::4"), true, true, 100),
        };
        w.rib(p6("2001:db8:2::/47"), &[full]);
        mark(&mut w);
        let ap = Entry {
            peer: 0,
            path_id: Some(7),
            attrs: attrs(&[1], ip("192.0.2.5"), false, false, 0),
        };
        w.rib(p4("203.0.113.128/25"), &[ap]);
        mark(&mut w);
        let ap6 = Entry {
            peer: 1,
            path_id: Some(1),
            attrs: attrs(&[1], ip("::"), true, false, 0),
        };
        w.rib(p6("::/0"), &[ap6]);
        (w.out, starts)
    }

    fn load(data: &[u8], on_error: OnError) -> Result<Loaded, SourceError> {
        read_mrt(data, "rib.mrt", on_error, &MrtOptions::default())
    }

    fn routes(t: &RouteTable) -> Vec<(RoutePrefix, Option<IpAddr>, u32)> {
        t.routes()
            .map(|(p, h)| (p, h[0].gateway, h[0].output))
            .collect()
    }

    #[test]
    fn source_mrt_parse() {
        let (data, _) = sample();
        assert_eq!(detect(&data), Format::Mrt);
        let (table, warnings) = load(&data, OnError::Refuse).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(
            routes(&table),
            vec![
                (p4("10.0.0.0/8"), Some(ip("192.0.2.1")), 0),
                (p4("198.51.100.0/24"), Some(ip("2001:db8::7")), 0),
                (p4("203.0.113.128/25"), Some(ip("192.0.2.5")), 0),
                (p6("::/0"), None, 0),
                (p6("2001:db8:1::/48"), Some(ip("2001:db8::2")), 0),
                (p6("2001:db8:2::/47"), Some(ip("2001:db8::4")), 0),
            ]
        );
        let mut options = MrtOptions {
            default_output: 9,
            ..MrtOptions::default()
        };
        options.outputs.insert(ip("192.0.2.1"), 3);
        let (table, _) = read_mrt(&data[..], "x", OnError::Refuse, &options).unwrap();
        let outs: Vec<u32> = routes(&table).iter().map(|r| r.2).collect();
        assert_eq!(outs, [3, 9, 9, 9, 9, 9]);
    }

    #[test]
    fn source_mrt_link_local_next_hop_and_duplicates() {
        let mut w = MrtWriter::default();
        peers(&mut w);
        // 32-byte next hop: global then link-local (RFC 2545 §3).
        let mut mp = vec![0x80, ATTR_MP_REACH_NLRI, 33, 32];
        mp.extend_from_slice(&ip6("2001:db8::9"));
        mp.extend_from_slice(&ip6("fe80::9"));
        w.rib(
            p6("2001:db8::/32"),
            &[Entry {
                peer: 0,
                path_id: None,
                attrs: mp,
            }],
        );
        w.rib(p6("2001:db8::/32"), &[entry(0, "2001:db8::1", true)]);
        let (table, _) = load(&w.out, OnError::Refuse).unwrap();
        assert_eq!(
            routes(&table),
            vec![(p6("2001:db8::/32"), Some(ip("2001:db8::9")), 0)]
        );
    }

    fn ip6(s: &str) -> [u8; 16] {
        s.parse::<Ipv6Addr>().unwrap().octets()
    }

    /// Every cut of a valid file: no panic; Skip returns exactly the
    /// records wholly before the cut and one warning unless the cut is at
    /// a record boundary; Refuse fails exactly when Skip warns.
    #[test]
    fn source_mrt_truncated_at_every_offset() {
        let (data, starts) = sample();
        let ends: Vec<usize> = starts[1..].iter().copied().chain([data.len()]).collect();
        for cut in 0..=data.len() {
            let (table, warnings) = load(&data[..cut], OnError::Skip).unwrap();
            let whole_ribs = ends.iter().skip(1).filter(|&&e| e <= cut).count();
            assert_eq!(table.len(), whole_ribs, "cut {cut}");
            let at_boundary = cut == 0 || ends.contains(&cut);
            assert_eq!(
                warnings.len(),
                usize::from(!at_boundary),
                "cut {cut}: {warnings:?}"
            );
            if let Some(w) = warnings.first() {
                assert!(
                    matches!(w.location, Location::Offset { offset, .. } if offset as usize <= cut)
                );
                assert!(w.message.contains("file ends inside"), "{w}");
            }
            assert_eq!(
                load(&data[..cut], OnError::Refuse).is_err(),
                !at_boundary,
                "cut {cut}"
            );
        }
    }

    /// Rewrites the record at `start` through `f` (body only), fixing the
    /// header length.
    fn patch(data: &[u8], start: usize, f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let len = u32::from_be_bytes(data[start + 8..start + 12].try_into().unwrap()) as usize;
        let mut body = data[start + 12..start + 12 + len].to_vec();
        f(&mut body);
        let mut out = data[..start + 8].to_vec();
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(&data[start + 12 + len..]);
        out
    }

    fn only_error(data: &[u8]) -> SourceError {
        let (table, warnings) = load(data, OnError::Skip).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        // The damaged record is skipped, the rest loaded.
        assert_eq!(table.len(), 5, "{warnings:?}");
        let refused = load(data, OnError::Refuse).unwrap_err();
        assert_eq!(refused, warnings[0]);
        refused
    }

    #[test]
    fn source_mrt_bad_lengths() {
        let (data, starts) = sample();
        let rib = starts[1]; // 10.0.0.0/8, two entries
        let body = rib + 12;
        let offset = |e: &SourceError| match e.location {
            Location::Offset { offset, .. } => offset as usize,
            _ => panic!("{e}"),
        };

        // Prefix length 33.
        let e = only_error(&patch(&data, rib, |b| b[4] = 33));
        assert_eq!(offset(&e), body + 4);
        assert!(e.message.contains("prefix length 33 is over 32"), "{e}");
        assert!(e.to_string().starts_with(&format!(
            "rib.mrt: byte {}: RIB_IPV4_UNICAST record at byte {rib}: ",
            body + 4
        )));

        // Entry count one more than there are entries.
        let e = only_error(&patch(&data, rib, |b| b[7] += 1));
        assert!(
            e.message.contains("peer index needs 2 bytes, 0 left"),
            "{e}"
        );
        assert_eq!(offset(&e), starts[2]);

        // Entry count one less: bytes left over.
        let e = only_error(&patch(&data, rib, |b| b[7] -= 1));
        assert!(e.message.contains("bytes after the last field"), "{e}");

        // Peer index past the peer table.
        let e = only_error(&patch(&data, rib, |b| b[9] = 2));
        assert!(
            e.message
                .contains("entry 0: peer index 2, but the peer table has 2"),
            "{e}"
        );
        assert_eq!(offset(&e), body + 8);

        // First entry's attribute length past the record.
        let e = only_error(&patch(&data, rib, |b| b[14] = 0xff));
        assert!(e.message.contains("entry 0 attributes needs"), "{e}");
        assert_eq!(offset(&e), body + 16);

        // An attribute inside the block claims more than the block.
        let e = only_error(&patch(&data, rib, |b| b[18] = 0x7f)); // ORIGIN length
        assert!(
            e.message.contains("attribute 1 value needs 127 bytes"),
            "{e}"
        );
        assert_eq!(offset(&e), body + 19);

        // Record length past the end of the file: the last record is cut.
        let last = *starts.last().unwrap();
        let mut cut = data.clone();
        cut[last + 11] += 1;
        let (t, w) = load(&cut, OnError::Skip).unwrap();
        assert_eq!((t.len(), w.len()), (5, 1));
        assert_eq!(offset(&w[0]), data.len());

        // A record longer than any real one.
        let mut huge = data.clone();
        huge[rib + 8] = 0x7f;
        let e = load(&huge, OnError::Refuse).unwrap_err();
        assert!(e.message.contains("over the"), "{e}");
        assert_eq!(offset(&e), rib + 8);
    }

    #[test]
    fn source_mrt_bad_next_hops() {
        for (mp, want) in [
            (
                vec![0x80, ATTR_MP_REACH_NLRI, 6, 5, 1, 2, 3, 4, 5],
                "next hop of 5 bytes",
            ),
            (
                vec![0x80, ATTR_MP_REACH_NLRI, 5, 4, 1, 2, 3, 4],
                "for an IPv6 prefix",
            ),
            (
                vec![0x80, ATTR_MP_REACH_NLRI, 2, 0, 2],
                "SAFI needs 1 bytes",
            ),
            (
                vec![0x80, ATTR_MP_REACH_NLRI, 4, 0, 2, 1, 16],
                "next hop needs 16 bytes",
            ),
            (
                vec![0x90, ATTR_MP_REACH_NLRI, 0],
                "attribute length needs 2 bytes",
            ),
            (
                vec![0x40, ATTR_NEXT_HOP, 3, 1, 2, 3],
                "NEXT_HOP of 3 bytes (4 expected)",
            ),
        ] {
            let mut w = MrtWriter::default();
            peers(&mut w);
            let prefix = if mp[1] == ATTR_NEXT_HOP {
                p4("10.0.0.0/8")
            } else {
                p6("2001:db8::/32")
            };
            w.rib(
                prefix,
                &[Entry {
                    peer: 0,
                    path_id: None,
                    attrs: mp,
                }],
            );
            let e = load(&w.out, OnError::Refuse).unwrap_err();
            assert!(e.message.contains(want), "{e} (wanted {want})");
        }
    }

    #[test]
    fn source_mrt_unknown_records_are_skipped_with_a_warning() {
        let (data, starts) = sample();
        let mut w = MrtWriter {
            out: data[..starts[1]].to_vec(),
            ..MrtWriter::default()
        };
        w.record(TABLE_DUMP_V2, 99, &[1, 2, 3]);
        w.record(TABLE_DUMP_V2, subtype::RIB_GENERIC, &[]);
        w.record(16, 4, &[0; 20]); // BGP4MP_MESSAGE_AS4
        w.record(TABLE_DUMP_V2, subtype::RIB_IPV4_MULTICAST, &[0xff]); // silently
        w.rib(p4("10.0.0.0/8"), &[]); // no entries
        w.out.extend_from_slice(&data[starts[1]..]);
        for on_error in [OnError::Skip, OnError::Refuse] {
            let (table, warnings) = load(&w.out, on_error).unwrap();
            assert_eq!(table.len(), 6);
            let msgs: Vec<String> = warnings.iter().map(|w| w.to_string()).collect();
            let at = starts[1];
            assert_eq!(
                msgs,
                [
                    format!("rib.mrt: byte {}: TABLE_DUMP_V2 subtype 99 (unknown) skipped", at + 6),
                    format!("rib.mrt: byte {}: TABLE_DUMP_V2 subtype 6 (RIB_GENERIC) skipped", at + 15 + 6),
                    format!(
                        "rib.mrt: byte {}: MRT type 16 subtype 4 skipped: a BGP4MP record (an update stream, not a RIB dump)",
                        at + 27 + 4
                    ),
                    format!("rib.mrt: byte {}: RIB_IPV4_UNICAST record at byte {} has no entries; skipped", at + 72, at + 72),
                ]
            );
        }
    }

    #[test]
    fn source_mrt_rib_before_peer_table() {
        let (data, starts) = sample();
        let e = load(&data[starts[1]..], OnError::Refuse).unwrap_err();
        assert_eq!(
            e.to_string(),
            "rib.mrt: byte 0: RIB_IPV4_UNICAST record at byte 0 before any PEER_INDEX_TABLE"
        );
        let (t, w) = load(&data[starts[1]..], OnError::Skip).unwrap();
        assert_eq!((t.len(), w.len()), (0, 6));
        // A damaged peer table.
        let bad = patch(&data, 0, |b| b[13] = 9); // 9 peers, 2 present
        let e = load(&bad, OnError::Refuse).unwrap_err();
        assert!(
            e.message
                .starts_with("PEER_INDEX_TABLE record at byte 0: peer type needs 1 bytes"),
            "{e}"
        );
    }

    #[test]
    fn source_mrt_compressed_through_read() {
        use std::io::Write;
        let (data, _) = sample();
        let (want, _) = load(&data, OnError::Refuse).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        let gz = gz.finish().unwrap();
        let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        bz.write_all(&data).unwrap();
        let bz = bz.finish().unwrap();
        for input in [&data, &gz, &bz] {
            let (t, w) = read(&input[..], "rib", OnError::Refuse, &MrtOptions::default()).unwrap();
            assert!(w.is_empty());
            assert_eq!(t, want);
        }
        // A damaged gzip stream: what was decoded is kept, the rest is a
        // warning (Skip) or the error (Refuse).
        let cut = &gz[..gz.len() / 2];
        let (t, w) = read(cut, "rib.gz", OnError::Skip, &MrtOptions::default()).unwrap();
        assert!(t.len() < want.len() && w.len() == 1, "{w:?}");
        assert!(read(cut, "rib.gz", OnError::Refuse, &MrtOptions::default()).is_err());
        // Compression inside compression is refused, not unwrapped forever.
        let mut gz2 = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz2.write_all(&gz).unwrap();
        let e = read(
            &gz2.finish().unwrap()[..],
            "x",
            OnError::Skip,
            &MrtOptions::default(),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "x: compressed data inside compressed data");
    }

    #[test]
    fn source_mrt_generated_table_round_trip() {
        let table = crate::gen::generate(3000, 600, 7);
        let data = dump(&table);
        let (back, w) = load(&data, OnError::Refuse).unwrap();
        assert!(w.is_empty());
        let prefixes = |t: &RouteTable| t.routes().map(|r| r.0).collect::<Vec<_>>();
        assert_eq!(prefixes(&back), prefixes(&table));
        for ((p, hops), (q, got)) in table.routes().zip(back.routes()) {
            assert_eq!(p, q);
            if hops[0].gateway.is_some() {
                assert_eq!(got[0].gateway, hops[0].gateway);
            }
        }
    }

    /// The fuzz seed `fuzz/seeds/lpm/small.mrt` is this writer's output;
    /// `BRICKS_BLESS=1 cargo test -p bricks-lpm source_mrt_fuzz_seed`
    /// rewrites it.
    #[test]
    fn source_mrt_fuzz_seed() {
        let (mut data, _) = sample();
        let table = crate::gen::generate(40, 10, 1);
        let more = dump(&table);
        data.extend_from_slice(&more);
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fuzz/seeds/lpm/small.mrt"
        );
        if std::env::var_os("BRICKS_BLESS").is_some() {
            std::fs::create_dir_all(std::path::Path::new(path).parent().unwrap()).unwrap();
            std::fs::write(path, &data).unwrap();
        }
        let (t, w) = load(&data, OnError::Refuse).unwrap();
        assert!(w.is_empty() && t.len() == 56, "{} {w:?}", t.len());
        match std::fs::read(path) {
            Ok(seed) => assert_eq!(
                seed, data,
                "fuzz seed out of date: rerun with BRICKS_BLESS=1"
            ),
            Err(e) => panic!("{path}: {e} (create it with BRICKS_BLESS=1)"),
        }
    }

    proptest::proptest! {
        /// Damaged dumps: any byte changed, anywhere, any number of times,
        /// never panics and never loads more routes than there are records.
        #[test]
        fn source_mrt_mutations_never_panic(edits in proptest::collection::vec((0usize..400, 0u8..=255), 1..8)) {
            let (mut data, starts) = sample();
            for (at, v) in edits {
                let at = at % data.len();
                data[at] = v;
            }
            let (t, _) = load(&data, OnError::Skip).unwrap();
            proptest::prop_assert!(t.len() <= starts.len());
            let _ = load(&data, OnError::Refuse);
        }
    }
}
