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
//! # The route of a prefix
//!
//! Each RIB_IPV4_UNICAST, RIB_IPV6_UNICAST and ADDPATH variant record gives
//! one route: the prefix, with the next hop of the entry BGP's decision
//! process would choose (RFC 4271 §9.1.2.2, with LOCAL_PREF's degree of
//! preference from §9.1.1 first). Entries are eliminated in this order,
//! until one is left:
//!
//! 1. highest LOCAL_PREF (attribute 5; absent counts as 100);
//! 2. shortest AS_PATH (attribute 2): an AS_SEQUENCE counts its ASes, an
//!    AS_SET counts 1, AS_CONFED_SEQUENCE and AS_CONFED_SET count 0;
//! 3. lowest ORIGIN (attribute 1): IGP, then EGP, then INCOMPLETE (or
//!    absent);
//! 4. lowest MULTI_EXIT_DISC (attribute 4; absent counts as 0), compared
//!    only between entries from the same neighbouring AS: the first AS of
//!    the path's first segment after any confederation segments, when that
//!    segment is an AS_SEQUENCE. Entries without one (an empty path, or
//!    one that starts with an AS_SET) are one more group;
//! 5. lowest BGP identifier of the peer, then lowest peer address (IPv4
//!    before IPv6), both from the PEER_INDEX_TABLE;
//! 6. the first in the record (several add-path entries of one peer).
//!
//! A dump records neither whether a peer is internal nor the IGP cost to
//! its next hop, so §9.1.2.2 d and e are left out.
//!
//! [`MrtOptions::peer`] keeps only the entries of one peer, chosen by
//! address or by AS ([`PeerSelect`]): prefixes it did not announce are not
//! loaded, and the steps above choose among its entries when it has
//! several (add-path, or several peers of one AS). A peer that is in no
//! PEER_INDEX_TABLE is an error.
//!
//! The gateway is NEXT_HOP (attribute 3) for IPv4, or MP_REACH_NLRI
//! (attribute 14) when there is none (an IPv6 next hop, RFC 8950); for IPv6
//! it is MP_REACH_NLRI's, the global address when a link-local one
//! follows. MP_REACH_NLRI is read in both the abbreviated form of RFC 6396
//! §4.3.4 (next-hop length and address only) and the full RFC 4760 form
//! some writers use. `0.0.0.0` and `::` are no gateway. The output is
//! [`MrtOptions::outputs`]`[gateway]`, else [`MrtOptions::default_output`]
//! (0). A prefix in two records keeps the first record's route.
//!
//! # What is not read
//!
//! Multicast RIBs are skipped silently; other TABLE_DUMP_V2 subtypes
//! (RIB_GENERIC, GEO_PEER_TABLE, unknown) and other MRT types are skipped
//! with a warning under either [`OnError`] policy: they are valid MRT, just
//! not a RIB bricks reads. A file with no TABLE_DUMP_V2 RIB record at all,
//! such as a BGP4MP update stream (`updates.*`) or a dump in the old
//! TABLE_DUMP format (type 12, RFC 6396 §4.2), is refused with the record
//! types it holds.
//!
//! # Damage
//!
//! Every length is checked against the bytes that hold it. A malformed
//! record is a [`SourceError`] at the byte offset of the bad field; under
//! [`OnError::Skip`] the reader goes on at the next record (the MRT header
//! length is the only framing, so a record is skipped whole). A framing
//! error, where the file ends inside a header or a record, a header claims
//! more than [`MAX_RECORD`] bytes or reading fails, leaves no way to find
//! the next record: under either policy the file is refused there, the
//! error naming the byte offset and the routes read before it.
//!
//! Written here rather than taken from `bgpkit-parser`: that crate decodes
//! every attribute of every entry into owned structures (AS paths,
//! communities) where choosing a route needs five numbers and a next hop,
//! its default features pull an HTTP client and TLS, and its errors do not
//! carry the byte offset a user needs to find damage in a 100 MB dump.
//! TABLE_DUMP_V2 down to the decision process is a few hundred lines,
//! streamed one record at a time.

use super::{
    Duplicates, Hop, Loaded, OnError, Route, RoutePrefix, RouteTable, SourceError, Warnings,
};
use crate::prefix::{Prefix4, Prefix6};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::{self, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// MRT type of the old TABLE_DUMP (RFC 6396 §4.2), not read.
pub const TABLE_DUMP: u16 = 12;
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

    /// Whether a subtype is a RIB record, read or not.
    pub fn is_rib(sub: u16) -> bool {
        matches!(sub, RIB_IPV4_UNICAST..=RIB_GENERIC | RIB_IPV4_UNICAST_ADDPATH..=RIB_GENERIC_ADDPATH)
    }
}

/// BGP path attribute type codes read here (RFC 4271 §5.1, RFC 4760 §3).
const ATTR_ORIGIN: u8 = 1;
const ATTR_AS_PATH: u8 = 2;
const ATTR_NEXT_HOP: u8 = 3;
const ATTR_MULTI_EXIT_DISC: u8 = 4;
const ATTR_LOCAL_PREF: u8 = 5;
const ATTR_MP_REACH_NLRI: u8 = 14;
/// Attribute flag: the length is two bytes (RFC 4271 §4.3).
const ATTR_EXTENDED_LENGTH: u8 = 0x10;

/// ORIGIN values (RFC 4271 §5.1.1), in order of preference.
const ORIGIN_INCOMPLETE: u8 = 2;

/// AS_PATH segment types (RFC 4271 §4.3, RFC 5065 §3).
const AS_SET: u8 = 1;
const AS_SEQUENCE: u8 = 2;
const AS_CONFED_SEQUENCE: u8 = 3;
const AS_CONFED_SET: u8 = 4;

/// LOCAL_PREF of an entry without one.
const DEFAULT_LOCAL_PREF: u32 = 100;

/// Bytes of an MRT common header (RFC 6396 §2).
pub const HEADER_LEN: usize = 12;
/// Longest record body accepted. The largest real RIB records (a prefix
/// seen by every RIS peer, with long community lists) are tens of
/// kilobytes.
pub const MAX_RECORD: u32 = 16 << 20;

/// The peer whose routes are loaded, when not the best of all peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeerSelect {
    /// The peer with this address in the PEER_INDEX_TABLE.
    Address(IpAddr),
    /// The peers of this AS (usually one).
    As(u32),
}

impl PeerSelect {
    fn matches(&self, peer: &Peer) -> bool {
        match *self {
            PeerSelect::Address(a) => peer.addr == a,
            PeerSelect::As(n) => peer.asn == n,
        }
    }
}

impl fmt::Display for PeerSelect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeerSelect::Address(a) => write!(f, "peer {a}"),
            PeerSelect::As(n) => write!(f, "peer AS {n}"),
        }
    }
}

/// Which MRT routes are loaded and how next hops become [`Hop`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MrtOptions {
    /// The output port for each gateway; gateways not listed go to
    /// `default_output`.
    pub outputs: HashMap<IpAddr, u32>,
    /// The output of routes whose gateway is not in `outputs` (default 0).
    pub default_output: u32,
    /// Only this peer's routes; `None` (the default) takes, for each
    /// prefix, the best of every peer's.
    pub peer: Option<PeerSelect>,
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
    let mut mrt = MrtReader::new(reader, file).with_peer(options.peer);
    let mut routes = 0u64;
    for event in mrt.by_ref() {
        match event {
            MrtEvent::Route {
                prefix, gateway, ..
            } => {
                let output = gateway
                    .and_then(|g| options.outputs.get(&g).copied())
                    .unwrap_or(options.default_output);
                table.push(Route {
                    prefix,
                    hops: vec![Hop { gateway, output }],
                });
                routes += 1;
            }
            MrtEvent::Skipped(w) => warnings.note(w),
            MrtEvent::Malformed(e) => warnings.error(e)?,
            MrtEvent::Framing(mut e) => {
                let s = if routes == 1 { "" } else { "s" };
                e.message = format!(
                    "{}; reading stopped there, after {routes} route{s}: no record can be found \
                     past a broken one",
                    e.message
                );
                return Err(e);
            }
        }
    }
    if let Some(e) = mrt.not_a_rib_dump().or_else(|| mrt.peer_not_found()) {
        return Err(e);
    }
    table.canonicalize(Duplicates::KeepFirst);
    Ok((table, warnings.finish()))
}

/// What one step of an [`MrtReader`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MrtEvent {
    /// A RIB record: its prefix and the next hop of the entry the decision
    /// process chose (`None` when it has none, or it is `0.0.0.0` / `::`).
    Route {
        /// The prefix.
        prefix: RoutePrefix,
        /// The chosen entry's next hop.
        gateway: Option<IpAddr>,
        /// The chosen entry's peer, its index in the PEER_INDEX_TABLE.
        peer: u16,
    },
    /// A well-formed record that is not loaded (a type or subtype bricks
    /// does not read, a prefix with no entries).
    Skipped(SourceError),
    /// A malformed record, skipped whole; the next record is read.
    Malformed(SourceError),
    /// No record can be found past this point: the input ends inside a
    /// header or a body, a header claims more than [`MAX_RECORD`] bytes, or
    /// reading failed. Always the last event.
    Framing(SourceError),
}

/// A peer of the PEER_INDEX_TABLE (RFC 6396 §4.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Peer {
    bgp_id: u32,
    addr: IpAddr,
    asn: u32,
}

/// What the decision process and the FIB need of one RIB entry's path
/// attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Path {
    local_pref: u32,
    as_path_len: u32,
    origin: u8,
    med: u32,
    /// First AS of the path, for comparing MULTI_EXIT_DISCs.
    neighbor_as: Option<u32>,
    gateway: Option<IpAddr>,
}

/// A RIB entry still in the running.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    path: Path,
    /// Index in the PEER_INDEX_TABLE.
    peer: u16,
    /// Position in the record.
    entry: u16,
}

/// Streams the routes of a TABLE_DUMP_V2 dump, one record in memory at a
/// time. An iterator of [`MrtEvent`]s; it ends at the end of the input or
/// at a [`MrtEvent::Framing`] error.
pub struct MrtReader<R> {
    reader: R,
    file: String,
    /// Offset of the next record header.
    offset: u64,
    /// Peers in the last PEER_INDEX_TABLE, `None` before one is seen.
    peers: Option<Vec<Peer>>,
    /// Per peer of `peers`: whether its entries are candidates.
    chosen: Vec<bool>,
    select: Option<PeerSelect>,
    /// Whether a PEER_INDEX_TABLE had a peer `select` matches.
    select_found: bool,
    body: Vec<u8>,
    /// The entries of the current RIB record, reused from record to record.
    candidates: Vec<Candidate>,
    /// Whole records read, by MRT type.
    types: BTreeMap<u16, u64>,
    /// Whole TABLE_DUMP_V2 RIB records read, of any subtype.
    ribs: u64,
    done: bool,
}

impl<R: Read> MrtReader<R> {
    /// A reader of `reader`, naming it `file` in errors, choosing among
    /// every peer's entries.
    pub fn new(reader: R, file: &str) -> MrtReader<R> {
        MrtReader {
            reader,
            file: file.to_string(),
            offset: 0,
            peers: None,
            chosen: Vec::new(),
            select: None,
            select_found: false,
            body: Vec::new(),
            candidates: Vec::new(),
            types: BTreeMap::new(),
            ribs: 0,
            done: false,
        }
    }

    /// Takes only the entries of `peer` (all when `None`).
    pub fn with_peer(mut self, peer: Option<PeerSelect>) -> MrtReader<R> {
        self.select = peer;
        self
    }

    /// Offset of the next record, i.e. the bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Whole TABLE_DUMP_V2 RIB records read so far, of any subtype, well
    /// formed or not.
    pub fn rib_records(&self) -> u64 {
        self.ribs
    }

    fn err(&self, offset: u64, message: impl Into<String>) -> SourceError {
        SourceError::offset(&self.file, offset, message)
    }

    /// The refusal of an input read to its end without a RIB record, naming
    /// the record types it holds.
    fn not_a_rib_dump(&self) -> Option<SourceError> {
        if self.ribs > 0 {
            return None;
        }
        const SHOWN: usize = 4;
        let mut held: Vec<String> = self
            .types
            .iter()
            .take(SHOWN)
            .map(|(&typ, &n)| {
                let s = if n == 1 { "" } else { "s" };
                match type_name(typ) {
                    Some(name) => format!("{n} {name} record{s} (type {typ})"),
                    None => format!("{n} record{s} of type {typ}"),
                }
            })
            .collect();
        if self.types.len() > SHOWN {
            held.push(format!(
                "records of {} more types",
                self.types.len() - SHOWN
            ));
        }
        let held = match held.len() {
            0 => "no MRT record".to_string(),
            _ => held.join(", "),
        };
        Some(SourceError::file(
            &self.file,
            format!(
                "no TABLE_DUMP_V2 RIB record: the file holds {held}; routes are read from a \
                 TABLE_DUMP_V2 RIB dump (RFC 6396 §4.3), such as RouteViews rib.* and RIPE RIS \
                 bview.* files, not from BGP4MP update streams or old TABLE_DUMP files"
            ),
        ))
    }

    /// The refusal of a selected peer that no PEER_INDEX_TABLE holds.
    fn peer_not_found(&self) -> Option<SourceError> {
        let select = self.select?;
        if self.select_found {
            return None;
        }
        const SHOWN: usize = 8;
        let message = match &self.peers {
            None => format!("no {select}: the file has no PEER_INDEX_TABLE"),
            Some(peers) => {
                let mut list: Vec<String> = peers
                    .iter()
                    .take(SHOWN)
                    .map(|p| format!("{} (AS {})", p.addr, p.asn))
                    .collect();
                if peers.len() > SHOWN {
                    list.push(format!("{} more", peers.len() - SHOWN));
                }
                format!(
                    "no {select} in the PEER_INDEX_TABLE, whose {} peers are {}",
                    peers.len(),
                    list.join(", ")
                )
            }
        };
        Some(SourceError::file(&self.file, message))
    }

    /// Reads the next record; `None` at a clean end of input.
    fn next_event(&mut self) -> Option<MrtEvent> {
        while !self.done {
            let start = self.offset;
            let mut header = [0u8; HEADER_LEN];
            let got = match read_full(&mut self.reader, &mut header) {
                Ok(n) => n,
                Err(e) => return Some(self.framing(start, format!("read error: {e}"))),
            };
            if got == 0 {
                self.done = true;
                return None;
            }
            if got < HEADER_LEN {
                let msg = format!("file ends inside an MRT header ({got} of {HEADER_LEN} bytes)");
                return Some(self.framing(start, msg));
            }
            let typ = u16::from_be_bytes([header[4], header[5]]);
            let sub = u16::from_be_bytes([header[6], header[7]]);
            let len = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
            let body_at = start + HEADER_LEN as u64;
            if len > MAX_RECORD {
                let msg = format!(
                    "record at byte {start}: length {len} is over the {MAX_RECORD} bytes accepted"
                );
                return Some(self.framing(start + 8, msg));
            }
            let got = match self.read_body(len as usize) {
                Ok(n) => n,
                Err(e) => return Some(self.framing(body_at, format!("read error: {e}"))),
            };
            if got < len as usize {
                let msg = format!(
                    "file ends inside the record at byte {start} ({got} of {len} body bytes)"
                );
                return Some(self.framing(body_at + got as u64, msg));
            }
            self.offset = body_at + u64::from(len);
            *self.types.entry(typ).or_insert(0) += 1;
            if typ == TABLE_DUMP_V2 && subtype::is_rib(sub) {
                self.ribs += 1;
            }
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

    fn framing(&mut self, offset: u64, message: String) -> MrtEvent {
        self.done = true;
        MrtEvent::Framing(self.err(offset, message))
    }

    /// Decodes the record in `self.body`; `None` when it yields nothing
    /// (a peer table, a multicast RIB, a prefix the selected peer did not
    /// announce).
    fn record(&mut self, start: u64, typ: u16, sub: u16) -> Option<MrtEvent> {
        use subtype::*;
        if typ != TABLE_DUMP_V2 {
            let what = match typ {
                11 => "an OSPFv2 record",
                TABLE_DUMP => "an old TABLE_DUMP record (TABLE_DUMP_V2 is read)",
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
                    Ok(peers) => {
                        let select = self.select;
                        self.chosen.clear();
                        self.chosen
                            .extend(peers.iter().map(|p| select.is_none_or(|s| s.matches(p))));
                        self.select_found |= self.chosen.contains(&true);
                        self.peers = Some(peers);
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
        let Some(peers) = &self.peers else {
            let msg = format!("{name} record at byte {start} before any PEER_INDEX_TABLE");
            return Some(MrtEvent::Malformed(self.err(start, msg)));
        };
        let entries = Entries {
            peers,
            chosen: &self.chosen,
        };
        match rib(&mut body, v6, addpath, entries, &mut self.candidates) {
            Ok((_, 0)) => {
                let msg = format!("{name} record at byte {start} has no entries; skipped");
                Some(MrtEvent::Skipped(self.err(start, msg)))
            }
            Ok((prefix, _)) => decide(&mut self.candidates, peers).map(|c| MrtEvent::Route {
                prefix,
                gateway: c.path.gateway,
                peer: c.peer,
            }),
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

/// Names of the MRT types of RFC 6396 §4, and of the deprecated BGP ones
/// of its Appendix B.
fn type_name(typ: u16) -> Option<&'static str> {
    Some(match typ {
        5 => "BGP",
        9 => "BGP4PLUS",
        11 => "OSPFv2",
        TABLE_DUMP => "TABLE_DUMP",
        TABLE_DUMP_V2 => "TABLE_DUMP_V2",
        16 => "BGP4MP",
        17 => "BGP4MP_ET",
        32 => "ISIS",
        33 => "ISIS_ET",
        48 => "OSPFv3",
        49 => "OSPFv3_ET",
        _ => return None,
    })
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

/// RFC 6396 §4.3.1: the peers, in index order.
fn peer_index_table(b: &mut Bytes) -> Result<Vec<Peer>, Malformed> {
    b.u32("collector BGP ID")?;
    let name_len = b.u16("view name length")?;
    b.take(name_len.into(), "view name")?;
    let count = b.u16("peer count")?;
    // At most 65535 peers of at least 11 bytes each, all checked present.
    let mut peers = Vec::with_capacity(usize::from(count).min(b.left() / 11));
    for i in 0..count {
        let within = |e: Malformed| e.within(format_args!("peer {i}"));
        let peer_type = b.u8("peer type")?;
        let bgp_id = b.u32("peer BGP ID").map_err(within)?;
        let addr = if peer_type & 1 != 0 {
            let a = b.take(16, "address").map_err(within)?;
            let mut o = [0u8; 16];
            o.copy_from_slice(a);
            IpAddr::V6(Ipv6Addr::from(o))
        } else {
            let a = b.take(4, "address").map_err(within)?;
            IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3]))
        };
        let asn = if peer_type & 2 != 0 {
            b.u32("AS").map_err(within)?
        } else {
            b.u16("AS").map_err(within)?.into()
        };
        peers.push(Peer { bgp_id, addr, asn });
    }
    b.end()?;
    Ok(peers)
}

/// The peers a RIB record's entries refer to, and which of them are
/// candidates.
#[derive(Clone, Copy)]
struct Entries<'a> {
    peers: &'a [Peer],
    chosen: &'a [bool],
}

/// RFC 6396 §4.3.2 (and RFC 8050 §4.1 with `addpath`): the prefix and
/// the number of entries; the entries of chosen peers are left in
/// `candidates`.
fn rib(
    b: &mut Bytes,
    v6: bool,
    addpath: bool,
    entries: Entries,
    candidates: &mut Vec<Candidate>,
) -> Result<(RoutePrefix, u16), Malformed> {
    candidates.clear();
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
    for i in 0..count {
        let at = b.at();
        let peer = b.u16("peer index")?;
        if usize::from(peer) >= entries.peers.len() {
            return Err(Malformed {
                offset: at,
                message: format!(
                    "entry {i}: peer index {peer}, but the peer table has {}",
                    entries.peers.len()
                ),
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
        // Entries of other peers are not decoded: damage there does not
        // cost the selected peer its route.
        if entries.chosen.get(usize::from(peer)) == Some(&true) {
            let mut a = Bytes {
                data: attrs,
                pos: 0,
                base,
            };
            let path =
                path_attributes(&mut a, v6).map_err(|e| e.within(format_args!("entry {i}:")))?;
            candidates.push(Candidate {
                path,
                peer,
                entry: i,
            });
        }
    }
    b.end()?;
    Ok((prefix, count))
}

/// BGP's decision process (RFC 4271 §9.1.2.2) over `candidates`, in the
/// order of the module doc; they are reordered and thinned on the way.
/// `None` when there are none.
fn decide(candidates: &mut Vec<Candidate>, peers: &[Peer]) -> Option<Candidate> {
    let c = candidates;
    let local_pref = c.iter().map(|x| x.path.local_pref).max()?;
    c.retain(|x| x.path.local_pref == local_pref);
    let as_path_len = c.iter().map(|x| x.path.as_path_len).min()?;
    c.retain(|x| x.path.as_path_len == as_path_len);
    let origin = c.iter().map(|x| x.path.origin).min()?;
    c.retain(|x| x.path.origin == origin);
    // MEDs compare within a neighbouring AS only (§9.1.2.2 c): sorted by
    // AS then MED, each group keeps the entries with its first MED.
    // Elimination within groups does not depend on the order the entries
    // came in, which pairwise comparison would.
    c.sort_by_key(|x| (x.path.neighbor_as, x.path.med));
    let mut group: Option<(Option<u32>, u32)> = None;
    c.retain(|x| match group {
        Some((asn, med)) if asn == x.path.neighbor_as => x.path.med == med,
        _ => {
            group = Some((x.path.neighbor_as, x.path.med));
            true
        }
    });
    c.iter().copied().min_by_key(|x| {
        // Indices were checked against the table when the entry was read.
        let p = peers.get(usize::from(x.peer));
        (p.map(|p| p.bgp_id), p.map(|p| p.addr), x.entry)
    })
}

/// The attributes of a RIB entry that choose among entries and give the
/// next hop (RFC 4271 §4.3): for IPv4, NEXT_HOP (else MP_REACH_NLRI, RFC
/// 8950); for IPv6, MP_REACH_NLRI. Unspecified addresses are no gateway.
fn path_attributes(a: &mut Bytes, v6: bool) -> Result<Path, Malformed> {
    let mut path = Path {
        local_pref: DEFAULT_LOCAL_PREF,
        as_path_len: 0,
        origin: ORIGIN_INCOMPLETE,
        med: 0,
        neighbor_as: None,
        gateway: None,
    };
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
            ATTR_ORIGIN => {
                let [origin] = fixed(value, at, "ORIGIN")?;
                if origin > ORIGIN_INCOMPLETE {
                    return Err(Malformed {
                        offset: at,
                        message: format!("ORIGIN {origin} (0, 1 or 2 expected)"),
                    });
                }
                path.origin = origin;
            }
            ATTR_AS_PATH => {
                let mut v = Bytes {
                    data: value,
                    pos: 0,
                    base: at,
                };
                (path.as_path_len, path.neighbor_as) = as_path(&mut v)?;
            }
            ATTR_NEXT_HOP => nh = Some(IpAddr::V4(fixed(value, at, "NEXT_HOP")?.into())),
            ATTR_MULTI_EXIT_DISC => {
                path.med = u32::from_be_bytes(fixed(value, at, "MULTI_EXIT_DISC")?);
            }
            ATTR_LOCAL_PREF => {
                path.local_pref = u32::from_be_bytes(fixed(value, at, "LOCAL_PREF")?);
            }
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
    path.gateway = gw.filter(|g| !g.is_unspecified());
    Ok(path)
}

/// An attribute value of exactly `N` bytes; `at` is its offset.
fn fixed<const N: usize>(value: &[u8], at: u64, name: &str) -> Result<[u8; N], Malformed> {
    <[u8; N]>::try_from(value).map_err(|_| Malformed {
        offset: at,
        message: format!("{name} of {} bytes ({N} expected)", value.len()),
    })
}

/// AS_PATH (RFC 4271 §4.3; always 4-byte ASes in TABLE_DUMP_V2, RFC 6396
/// §4.3.4): its length as §9.1.2.2 a counts it, and the neighbouring AS
/// (the module doc says which).
fn as_path(v: &mut Bytes) -> Result<(u32, Option<u32>), Malformed> {
    let mut len = 0u32;
    let mut neighbor = None;
    let mut first = true;
    while v.left() > 0 {
        let at = v.at();
        let typ = v.u8("AS_PATH segment type")?;
        let n = v.u8("AS_PATH segment length")?;
        let ases = v.take(4 * usize::from(n), "AS_PATH segment")?;
        match typ {
            AS_SET => len += 1,
            AS_SEQUENCE => {
                len += u32::from(n);
                if first {
                    neighbor = ases.first_chunk::<4>().map(|a| u32::from_be_bytes(*a));
                }
            }
            AS_CONFED_SEQUENCE | AS_CONFED_SET => continue,
            _ => {
                return Err(Malformed {
                    offset: at,
                    message: format!("AS_PATH segment type {typ} (1 to 4 expected)"),
                })
            }
        }
        first = false;
    }
    Ok((len, neighbor))
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

        /// A PEER_INDEX_TABLE of (address, AS) peers, with 4-byte ASes;
        /// peer `i` has BGP identifier 10.0.0.`i`.
        pub fn peers(&mut self, peers: &[(IpAddr, u32)]) -> &mut Self {
            let ids: Vec<(u32, IpAddr, u32)> = (0u32..)
                .zip(peers)
                .map(|(i, &(ip, asn))| (0x0a00_0000 | (i & 0xff), ip, asn))
                .collect();
            self.peers_with_ids(&ids)
        }

        /// A PEER_INDEX_TABLE of (BGP identifier, address, AS) peers.
        pub fn peers_with_ids(&mut self, peers: &[(u32, IpAddr, u32)]) -> &mut Self {
            let mut b = Vec::new();
            b.extend_from_slice(&[192, 0, 2, 255]);
            let view = b"bricks";
            b.extend_from_slice(&(view.len() as u16).to_be_bytes());
            b.extend_from_slice(view);
            b.extend_from_slice(&(peers.len() as u16).to_be_bytes());
            for (id, ip, asn) in peers {
                let v6 = ip.is_ipv6();
                b.push(2 | u8::from(v6));
                b.extend_from_slice(&id.to_be_bytes());
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

    /// Path attributes of one entry, field by field, for the tests of the
    /// decision process. The route is IPv4 when `next_hop` is.
    #[derive(Debug, Clone)]
    pub struct PathAttrs {
        /// ORIGIN, if present.
        pub origin: Option<u8>,
        /// AS_PATH segments: (type, 4-byte ASes).
        pub segments: Vec<(u8, Vec<u32>)>,
        pub next_hop: IpAddr,
        /// MULTI_EXIT_DISC, if present.
        pub med: Option<u32>,
        /// LOCAL_PREF, if present.
        pub local_pref: Option<u32>,
    }

    impl PathAttrs {
        /// ORIGIN IGP, one AS_SEQUENCE, no MED or LOCAL_PREF.
        pub fn new(next_hop: &str, path: &[u32]) -> PathAttrs {
            PathAttrs {
                origin: Some(0),
                segments: vec![(AS_SEQUENCE, path.to_vec())],
                next_hop: next_hop.parse().unwrap(),
                med: None,
                local_pref: None,
            }
        }

        pub fn bytes(&self) -> Vec<u8> {
            let mut out = Vec::new();
            if let Some(o) = self.origin {
                attr(&mut out, 0x40, ATTR_ORIGIN, &[o]);
            }
            let mut path = Vec::new();
            for (typ, ases) in &self.segments {
                path.extend_from_slice(&[*typ, ases.len() as u8]);
                for a in ases {
                    path.extend_from_slice(&a.to_be_bytes());
                }
            }
            attr(&mut out, 0x40, ATTR_AS_PATH, &path);
            match self.next_hop {
                IpAddr::V4(a) => attr(&mut out, 0x40, ATTR_NEXT_HOP, &a.octets()),
                IpAddr::V6(a) => {
                    let mut mp = vec![16];
                    mp.extend_from_slice(&a.octets());
                    attr(&mut out, 0x80, ATTR_MP_REACH_NLRI, &mp);
                }
            }
            if let Some(m) = self.med {
                attr(&mut out, 0x80, ATTR_MULTI_EXIT_DISC, &m.to_be_bytes());
            }
            if let Some(l) = self.local_pref {
                attr(&mut out, 0x40, ATTR_LOCAL_PREF, &l.to_be_bytes());
            }
            out
        }
    }

    /// A dump of `table` as seen from two peers: the first peer's route,
    /// the one chosen (its AS_PATH is shorter), has the first hop's gateway
    /// as next hop (or a per-family default when it has none), the second
    /// peer's another address.
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
                    attrs: attrs(&[64501, 174, 6939, 3356, 15169], other, v6, true, 2),
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
                // Equal paths: the lower BGP identifier, peer 0's, wins.
                (p6("2001:db8:1::/48"), Some(ip("2001:db8::3")), 0),
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

    /// Every cut of a valid file: no panic; a cut inside a record is a
    /// framing error under both policies, at or before the cut and
    /// counting the routes before it; a cut at a record boundary loads the
    /// records before it, or is refused when there is no RIB record yet.
    #[test]
    fn source_mrt_truncated_at_every_offset() {
        let (data, starts) = sample();
        let ends: Vec<usize> = starts[1..].iter().copied().chain([data.len()]).collect();
        for cut in 0..=data.len() {
            let skip = load(&data[..cut], OnError::Skip);
            let refuse = load(&data[..cut], OnError::Refuse);
            let whole_ribs = ends.iter().skip(1).filter(|&&e| e <= cut).count();
            let at_boundary = cut == 0 || ends.contains(&cut);
            if at_boundary && whole_ribs > 0 {
                let (table, warnings) = skip.unwrap();
                assert_eq!(table.len(), whole_ribs, "cut {cut}");
                assert!(warnings.is_empty(), "cut {cut}: {warnings:?}");
                assert_eq!(refuse.unwrap().0, table);
                continue;
            }
            let e = skip.unwrap_err();
            assert_eq!(refuse.unwrap_err(), e, "cut {cut}");
            if at_boundary {
                assert!(e.message.starts_with("no TABLE_DUMP_V2 RIB record"), "{e}");
                continue;
            }
            assert!(
                matches!(e.location, Location::Offset { offset, .. } if offset as usize <= cut),
                "{e}"
            );
            assert!(e.message.contains("file ends inside"), "{e}");
            let s = if whole_ribs == 1 { "" } else { "s" };
            let after = format!("reading stopped there, after {whole_ribs} route{s}:");
            assert!(e.message.contains(&after), "cut {cut}: {e}");
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

        // A record longer than any real one: no next record to go on at.
        let mut huge = data.clone();
        huge[rib + 8] = 0x7f;
        for on_error in [OnError::Skip, OnError::Refuse] {
            let e = load(&huge, on_error).unwrap_err();
            assert!(e.message.contains("over the"), "{e}");
            assert!(e.message.contains("after 0 routes"), "{e}");
            assert_eq!(offset(&e), rib + 8);
        }
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
        // A damaged gzip stream ends the records where it breaks: refused
        // under either policy.
        let cut = &gz[..gz.len() / 2];
        for on_error in [OnError::Skip, OnError::Refuse] {
            let e = read(cut, "rib.gz", on_error, &MrtOptions::default()).unwrap_err();
            assert!(e.message.contains("reading stopped there"), "{e}");
        }
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

    /// A dump of one RIB record for 10.0.0.0/8 with `entries` (peer index,
    /// attributes) and `peers` (BGP identifier, address, AS).
    fn one_prefix(peers: &[(u32, &str, u32)], entries: &[(u16, &PathAttrs)]) -> Vec<u8> {
        let mut w = MrtWriter::default();
        let peers: Vec<(u32, IpAddr, u32)> =
            peers.iter().map(|&(id, a, asn)| (id, ip(a), asn)).collect();
        w.peers_with_ids(&peers);
        let entries: Vec<Entry> = entries
            .iter()
            .map(|(peer, a)| Entry {
                peer: *peer,
                path_id: None,
                attrs: a.bytes(),
            })
            .collect();
        w.rib(p4("10.0.0.0/8"), &entries);
        w.out
    }

    /// The entry chosen among `entries`, as (next hop, peer index); the
    /// same whatever order the entries come in.
    fn chosen(peers: &[(u32, &str, u32)], entries: &[(u16, &PathAttrs)]) -> (IpAddr, u16) {
        let mut order: Vec<usize> = (0..entries.len()).collect();
        let mut answer = None;
        // Every rotation of both directions: each entry comes first and
        // last at least once.
        for rev in [false, true] {
            for _ in 0..entries.len() {
                order.rotate_left(1);
                let mut o = order.clone();
                if rev {
                    o.reverse();
                }
                let e: Vec<(u16, &PathAttrs)> = o.iter().map(|&i| entries[i]).collect();
                let events: Vec<MrtEvent> =
                    MrtReader::new(&one_prefix(peers, &e)[..], "x").collect();
                let got = match &events[..] {
                    [MrtEvent::Route { gateway, peer, .. }] => (gateway.unwrap(), *peer),
                    other => panic!("{other:?}"),
                };
                assert!(answer.is_none_or(|a| a == got), "order {o:?}: {got:?}");
                answer = Some(got);
            }
        }
        answer.unwrap()
    }

    /// Three peers with BGP identifiers in address order.
    const THREE: &[(u32, &str, u32)] = &[
        (1, "192.0.2.1", 64501),
        (2, "192.0.2.2", 64502),
        (3, "192.0.2.3", 64503),
    ];

    #[test]
    fn source_mrt_best_path_local_pref() {
        // Higher LOCAL_PREF beats a shorter path and a lower identifier.
        let a = PathAttrs::new("198.51.100.1", &[64501, 1, 2, 3]);
        let b = PathAttrs {
            local_pref: Some(200),
            ..PathAttrs::new("198.51.100.2", &[64502, 1, 2, 3, 4, 5])
        };
        assert_eq!(chosen(THREE, &[(0, &a), (1, &b)]), (ip("198.51.100.2"), 1));
        // Absent counts as 100: above 99, below 101.
        let c = PathAttrs {
            local_pref: Some(99),
            ..PathAttrs::new("198.51.100.3", &[64503])
        };
        assert_eq!(chosen(THREE, &[(0, &a), (2, &c)]), (ip("198.51.100.1"), 0));
        let d = PathAttrs {
            local_pref: Some(101),
            ..c.clone()
        };
        assert_eq!(chosen(THREE, &[(0, &a), (2, &d)]), (ip("198.51.100.3"), 2));
    }

    #[test]
    fn source_mrt_best_path_as_path_length() {
        let three = PathAttrs::new("198.51.100.1", &[64501, 1, 2]);
        let two = PathAttrs::new("198.51.100.3", &[64503, 1]);
        assert_eq!(
            chosen(THREE, &[(0, &three), (2, &two)]),
            (ip("198.51.100.3"), 2)
        );
        // An AS_SET counts 1 however many ASes it holds: 1 + 1 < 3.
        let set = PathAttrs {
            segments: vec![(AS_SEQUENCE, vec![64503]), (AS_SET, vec![1, 2, 3, 4, 5])],
            ..PathAttrs::new("198.51.100.3", &[])
        };
        assert_eq!(
            chosen(THREE, &[(0, &three), (2, &set)]),
            (ip("198.51.100.3"), 2)
        );
        // Confederation segments count 0: 0 + 0 + 2 < 3.
        let confed = PathAttrs {
            segments: vec![
                (AS_CONFED_SEQUENCE, vec![65001, 65002, 65003]),
                (AS_CONFED_SET, vec![65004, 65005]),
                (AS_SEQUENCE, vec![64503, 1]),
            ],
            ..PathAttrs::new("198.51.100.3", &[])
        };
        assert_eq!(
            chosen(THREE, &[(0, &three), (2, &confed)]),
            (ip("198.51.100.3"), 2)
        );
        // Equal lengths go on to the BGP identifier.
        let three_too = PathAttrs::new("198.51.100.3", &[64503, 7, 8]);
        assert_eq!(
            chosen(THREE, &[(0, &three), (2, &three_too)]),
            (ip("198.51.100.1"), 0)
        );
    }

    #[test]
    fn source_mrt_best_path_origin() {
        let with = |origin, nh| PathAttrs {
            origin,
            ..PathAttrs::new(nh, &[64500, 1])
        };
        let (igp, egp, incomplete, absent) = (
            with(Some(0), "198.51.100.3"),
            with(Some(1), "198.51.100.2"),
            with(Some(2), "198.51.100.1"),
            with(None, "198.51.100.1"),
        );
        assert_eq!(
            chosen(THREE, &[(0, &incomplete), (1, &egp), (2, &igp)]),
            (ip("198.51.100.3"), 2)
        );
        assert_eq!(
            chosen(THREE, &[(0, &incomplete), (1, &egp)]),
            (ip("198.51.100.2"), 1)
        );
        assert_eq!(
            chosen(THREE, &[(0, &absent), (1, &egp)]),
            (ip("198.51.100.2"), 1)
        );
        // An undefined ORIGIN is damage (RFC 4271 §6.3).
        let bad = with(Some(3), "198.51.100.1");
        let e = load(&one_prefix(THREE, &[(0, &bad)]), OnError::Refuse).unwrap_err();
        assert!(
            e.message.contains("entry 0: ORIGIN 3 (0, 1 or 2 expected)"),
            "{e}"
        );
    }

    #[test]
    fn source_mrt_best_path_med() {
        let with = |path: &[u32], med, nh| PathAttrs {
            med,
            ..PathAttrs::new(nh, path)
        };
        // Same neighbouring AS 701: the lower MED wins over the lower
        // identifier.
        let a = with(&[701, 1], Some(50), "198.51.100.1");
        let b = with(&[701, 2], Some(10), "198.51.100.2");
        assert_eq!(chosen(THREE, &[(0, &a), (1, &b)]), (ip("198.51.100.2"), 1));
        // Absent counts as 0.
        let none = with(&[701, 3], None, "198.51.100.3");
        assert_eq!(
            chosen(THREE, &[(1, &b), (2, &none)]),
            (ip("198.51.100.3"), 2)
        );
        // Different neighbouring ASes: MEDs are not compared.
        let c = with(&[3356, 1], Some(0), "198.51.100.2");
        assert_eq!(chosen(THREE, &[(0, &a), (1, &c)]), (ip("198.51.100.1"), 0));
        // Per AS, not pairwise: 701's MED 100 route falls to its MED 50
        // one, which then loses to 3356's on the identifier. Compared one
        // pair at a time the answer would depend on the order.
        let high = with(&[701, 1], Some(100), "198.51.100.1");
        let low = with(&[701, 1], Some(50), "198.51.100.3");
        let other = with(&[3356, 1], Some(200), "198.51.100.2");
        assert_eq!(
            chosen(THREE, &[(0, &high), (1, &other), (2, &low)]),
            (ip("198.51.100.2"), 1)
        );
        // The neighbour is the first AS after confederation segments.
        let confed = PathAttrs {
            segments: vec![
                (AS_CONFED_SEQUENCE, vec![65001]),
                (AS_SEQUENCE, vec![701, 2]),
            ],
            med: Some(10),
            ..PathAttrs::new("198.51.100.2", &[])
        };
        assert_eq!(
            chosen(THREE, &[(0, &a), (1, &confed)]),
            (ip("198.51.100.2"), 1)
        );
    }

    #[test]
    fn source_mrt_best_path_identifier_then_address() {
        let a = PathAttrs::new("198.51.100.1", &[64500, 1]);
        let b = PathAttrs::new("198.51.100.2", &[64500, 2]);
        // The lower identifier wins, though its address is higher.
        let peers = [(9, "192.0.2.1", 1), (5, "192.0.2.2", 2)];
        assert_eq!(chosen(&peers, &[(0, &a), (1, &b)]), (ip("198.51.100.2"), 1));
        // One identifier (one router, two sessions): the lower address,
        // IPv4 before IPv6.
        let peers = [(5, "192.0.2.9", 1), (5, "192.0.2.2", 1), (5, "::1", 1)];
        let c = PathAttrs::new("198.51.100.3", &[64500, 3]);
        assert_eq!(
            chosen(&peers, &[(0, &a), (1, &b), (2, &c)]),
            (ip("198.51.100.2"), 1)
        );
        assert_eq!(chosen(&peers, &[(0, &a), (2, &c)]), (ip("198.51.100.1"), 0));
    }

    #[test]
    fn source_mrt_best_path_add_path_keeps_the_first_of_a_peer() {
        let mut w = MrtWriter::default();
        peers(&mut w);
        let path = |id, nh| Entry {
            peer: 1,
            path_id: Some(id),
            attrs: PathAttrs::new(nh, &[64500, 1]).bytes(),
        };
        w.rib(
            p4("10.0.0.0/8"),
            &[path(9, "198.51.100.9"), path(1, "198.51.100.1")],
        );
        let (t, _) = load(&w.out, OnError::Refuse).unwrap();
        assert_eq!(
            routes(&t),
            vec![(p4("10.0.0.0/8"), Some(ip("198.51.100.9")), 0)]
        );
    }

    /// Three peers, two of AS 701; 10.0.0.0/8 from all three (peer 0's path
    /// shortest, then peer 2's), 20.0.0.0/8 from peer 0 only.
    fn three_peer_dump() -> Vec<u8> {
        let mut w = MrtWriter::default();
        w.peers(&[
            (ip("192.0.2.1"), 64500),
            (ip("192.0.2.2"), 701),
            (ip("2001:db8::3"), 701),
        ]);
        let e = |peer, nh, path: &[u32]| Entry {
            peer,
            path_id: None,
            attrs: PathAttrs::new(nh, path).bytes(),
        };
        w.rib(
            p4("10.0.0.0/8"),
            &[
                e(1, "198.51.100.2", &[701, 2, 3, 4]),
                e(0, "198.51.100.1", &[64500, 2]),
                e(2, "198.51.100.3", &[701, 2, 3]),
            ],
        );
        w.rib(p4("20.0.0.0/8"), &[e(0, "198.51.100.1", &[64500])]);
        w.out
    }

    fn load_peer(data: &[u8], peer: PeerSelect) -> Result<Loaded, SourceError> {
        let options = MrtOptions {
            peer: Some(peer),
            ..MrtOptions::default()
        };
        read_mrt(data, "rib.mrt", OnError::Refuse, &options)
    }

    #[test]
    fn source_mrt_peer_selection() {
        let data = three_peer_dump();
        let (t, _) = load(&data, OnError::Refuse).unwrap();
        assert_eq!(
            routes(&t),
            vec![
                (p4("10.0.0.0/8"), Some(ip("198.51.100.1")), 0),
                (p4("20.0.0.0/8"), Some(ip("198.51.100.1")), 0),
            ]
        );
        // By address: that peer's route, and nothing it did not announce.
        let (t, w) = load_peer(&data, PeerSelect::Address(ip("192.0.2.2"))).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(
            routes(&t),
            vec![(p4("10.0.0.0/8"), Some(ip("198.51.100.2")), 0)]
        );
        let (t, _) = load_peer(&data, PeerSelect::Address(ip("2001:db8::3"))).unwrap();
        assert_eq!(
            routes(&t),
            vec![(p4("10.0.0.0/8"), Some(ip("198.51.100.3")), 0)]
        );
        // By AS: the best of that AS's peers.
        let (t, _) = load_peer(&data, PeerSelect::As(701)).unwrap();
        assert_eq!(
            routes(&t),
            vec![(p4("10.0.0.0/8"), Some(ip("198.51.100.3")), 0)]
        );
        let (t, _) = load_peer(&data, PeerSelect::As(64500)).unwrap();
        assert_eq!(t.len(), 2);
        // A peer the dump does not have.
        let e = load_peer(&data, PeerSelect::Address(ip("192.0.2.9"))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "rib.mrt: no peer 192.0.2.9 in the PEER_INDEX_TABLE, whose 3 peers are \
             192.0.2.1 (AS 64500), 192.0.2.2 (AS 701), 2001:db8::3 (AS 701)"
        );
        let e = load_peer(&data, PeerSelect::As(3356)).unwrap_err();
        assert!(
            e.message
                .starts_with("no peer AS 3356 in the PEER_INDEX_TABLE"),
            "{e}"
        );
        // Text files have no peers.
        let options = MrtOptions {
            peer: Some(PeerSelect::As(701)),
            ..MrtOptions::default()
        };
        let e = read(&b"10.0.0.0/8 1\n"[..], "r.txt", OnError::Skip, &options).unwrap_err();
        assert_eq!(
            e.to_string(),
            "r.txt: peer AS 701 was asked for, but this is a text route file: only MRT dumps \
             have peers"
        );
    }

    #[test]
    fn source_mrt_peer_selection_ignores_other_peers_damage() {
        let mut w = MrtWriter::default();
        peers(&mut w);
        let bad = Entry {
            peer: 1,
            path_id: None,
            attrs: vec![0x40, ATTR_NEXT_HOP, 3, 1, 2, 3],
        };
        w.rib(p4("10.0.0.0/8"), &[entry(0, "192.0.2.7", false), bad]);
        assert!(load(&w.out, OnError::Refuse).is_err());
        let (t, _) = load_peer(&w.out, PeerSelect::Address(ip("192.0.2.1"))).unwrap();
        assert_eq!(
            routes(&t),
            vec![(p4("10.0.0.0/8"), Some(ip("192.0.2.7")), 0)]
        );
    }

    #[test]
    fn source_mrt_files_without_rib_records_are_refused() {
        // A BGP4MP update stream: state changes and messages.
        let mut w = MrtWriter::default();
        w.record(16, 0, &[0; 20]); // BGP4MP_STATE_CHANGE
        w.record(16, 4, &[0; 40]); // BGP4MP_MESSAGE_AS4
        w.record(16, 4, &[0; 40]);
        w.record(17, 4, &[0; 44]); // BGP4MP_ET
        for on_error in [OnError::Skip, OnError::Refuse] {
            let e = read(&w.out[..], "updates.mrt", on_error, &MrtOptions::default()).unwrap_err();
            assert_eq!(
                e.to_string(),
                "updates.mrt: no TABLE_DUMP_V2 RIB record: the file holds 3 BGP4MP records \
                 (type 16), 1 BGP4MP_ET record (type 17); routes are read from a TABLE_DUMP_V2 \
                 RIB dump (RFC 6396 §4.3), such as RouteViews rib.* and RIPE RIS bview.* files, \
                 not from BGP4MP update streams or old TABLE_DUMP files"
            );
        }
        // The old TABLE_DUMP (RFC 6396 §4.2): view, sequence, prefix, ...
        let mut w = MrtWriter::default();
        let mut v1 = vec![0, 0, 0, 1, 10, 0, 0, 0, 8, 1];
        v1.extend_from_slice(&[0; 12]);
        w.record(TABLE_DUMP, 1, &v1); // AFI_IPv4
        w.record(TABLE_DUMP, 1, &v1);
        let e = load(&w.out, OnError::Skip).unwrap_err();
        assert!(
            e.message.starts_with(
                "no TABLE_DUMP_V2 RIB record: the file holds 2 TABLE_DUMP records (type 12); \
                 routes are read from a TABLE_DUMP_V2 RIB dump"
            ),
            "{e}"
        );
        // A peer table and nothing else.
        let mut w = MrtWriter::default();
        peers(&mut w);
        let e = load(&w.out, OnError::Skip).unwrap_err();
        assert!(
            e.message
                .contains("holds 1 TABLE_DUMP_V2 record (type 13);"),
            "{e}"
        );
        // Many kinds of record: the first few are named.
        let mut w = MrtWriter::default();
        for typ in [16, 12, 11, 33, 200, 48] {
            w.record(typ, 0, &[]);
        }
        let e = load(&w.out, OnError::Skip).unwrap_err();
        assert!(
            e.message.contains(
                "holds 1 OSPFv2 record (type 11), 1 TABLE_DUMP record (type 12), 1 BGP4MP \
                 record (type 16), 1 ISIS_ET record (type 33), records of 2 more types;"
            ),
            "{e}"
        );
        // Nothing at all.
        let e = load(&[], OnError::Skip).unwrap_err();
        assert!(e.message.contains("holds no MRT record;"), "{e}");
    }

    #[test]
    fn source_mrt_framing_errors_stop_reading() {
        let (data, starts) = sample();
        let last = *starts.last().unwrap();
        // The last record's length runs one byte past the end of the file.
        let mut long = data.clone();
        long[last + 11] += 1;
        // A header cut short after the whole file.
        let mut header = data.clone();
        header.extend_from_slice(&[0, 0, 0, 0, 0, 13, 0]);
        // A length that runs far past the file, in the middle of it.
        let mut middle = data.clone();
        middle[starts[3] + 10] = 0x10;
        let middle_len = u32::from_be_bytes(middle[starts[3] + 8..][..4].try_into().unwrap());
        let body = data.len() - last - 12;
        for (input, want) in [
            (
                long,
                format!(
                    "rib.mrt: byte {}: file ends inside the record at byte {last} ({body} of \
                     {} body bytes); reading stopped there, after 5 routes: no record can be \
                     found past a broken one",
                    data.len(),
                    body + 1
                ),
            ),
            (
                header,
                format!(
                    "rib.mrt: byte {}: file ends inside an MRT header (7 of 12 bytes); reading \
                     stopped there, after 6 routes: no record can be found past a broken one",
                    data.len()
                ),
            ),
            (
                middle,
                format!(
                    "rib.mrt: byte {}: file ends inside the record at byte {} ({} of {} body \
                     bytes); reading stopped there, after 2 routes: no record can be found \
                     past a broken one",
                    data.len(),
                    starts[3],
                    data.len() - starts[3] - 12,
                    middle_len
                ),
            ),
        ] {
            for on_error in [OnError::Skip, OnError::Refuse] {
                assert_eq!(load(&input, on_error).unwrap_err().to_string(), want);
            }
        }
        // A malformed record before the break is a warning under Skip, the
        // error under Refuse.
        let mut both = patch(&data, starts[1], |b| b[4] = 33);
        both.truncate(both.len() - 1);
        let e = load(&both, OnError::Skip).unwrap_err();
        assert!(e.message.contains("after 4 routes"), "{e}");
        let e = load(&both, OnError::Refuse).unwrap_err();
        assert!(e.message.contains("prefix length 33"), "{e}");
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
            let skip = load(&data, OnError::Skip);
            if let Ok((t, _)) = &skip {
                proptest::prop_assert!(t.len() <= starts.len());
            }
            if let Ok((t, w)) = load(&data, OnError::Refuse) {
                proptest::prop_assert_eq!(skip, Ok((t, w)));
            }
        }
    }
}
