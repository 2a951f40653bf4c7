//! Where route tables come from: text files ([`text`]), MRT RIB dumps as
//! RouteViews and RIPE RIS publish them ([`mrt`], RFC 6396 §4.3), and the
//! generator of realistic tables in [`crate::gen`].
//!
//! Every source produces a [`RouteTable`]: IPv4 and IPv6 routes, each a
//! prefix and one or more [`Hop`]s (several hops are an ECMP group). A
//! malformed line or record becomes a [`SourceError`] naming the file and
//! the line or byte offset; [`OnError`] says whether it is skipped (and
//! returned as a warning) or refuses the whole input. No input panics: the
//! parsers are fuzzed (`fuzz/fuzz_targets/lpm_text.rs`, `lpm_mrt.rs`).
//!
//! [`load`] opens a file and tells the format by its content, not its name:
//! gzip (`1f 8b`) and bzip2 (`BZh`) are decompressed first, then an MRT
//! header has a zero byte at offset 4 (the high byte of the MRT type),
//! which no text route file has.

pub mod mrt;
pub mod text;

use crate::prefix::{NextHop, Prefix4, Prefix6};
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

pub use mrt::{read_mrt, MrtOptions, PeerSelect};
pub use text::{parse_line, read_text, write_text};

/// A prefix of either family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RoutePrefix {
    /// An IPv4 prefix.
    V4(Prefix4),
    /// An IPv6 prefix.
    V6(Prefix6),
}

impl fmt::Display for RoutePrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RoutePrefix::V4(p) => write!(f, "{}/{}", Ipv4Addr::from(p.addr), p.len),
            RoutePrefix::V6(p) => write!(f, "{}/{}", Ipv6Addr::from(p.addr), p.len),
        }
    }
}

/// One way out: an output port and, when the destination is not on the
/// attached link, the gateway to send to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Hop {
    /// The next router, or `None` for a directly attached destination.
    pub gateway: Option<IpAddr>,
    /// The output port (Click's StaticIPLookup output number).
    pub output: u32,
}

/// A prefix and where it goes. More than one hop is an ECMP group: traffic
/// to the prefix is spread over all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The destination prefix.
    pub prefix: RoutePrefix,
    /// The hops, at least one; several form an ECMP group.
    pub hops: Vec<Hop>,
}

/// Routes of both families, as read from a source.
///
/// Every source returns it canonical: each list sorted by prefix (address,
/// then length, so a prefix comes before its more-specifics), each prefix
/// once, each hop list non-empty with no hop twice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteTable {
    /// IPv4 routes.
    pub v4: Vec<(Prefix4, Vec<Hop>)>,
    /// IPv6 routes.
    pub v6: Vec<(Prefix6, Vec<Hop>)>,
}

/// What to do when two entries name the same prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Duplicates {
    /// Join their hops into one ECMP group, in input order (text files).
    Merge,
    /// Keep the first entry's hops (MRT: a prefix is one record; a second
    /// one is a damaged or add-path dump).
    KeepFirst,
}

impl RouteTable {
    /// An empty table.
    pub fn new() -> RouteTable {
        RouteTable::default()
    }

    /// Routes of both families.
    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    /// Whether there is no route.
    pub fn is_empty(&self) -> bool {
        self.v4.is_empty() && self.v6.is_empty()
    }

    /// Appends a route; call [`RouteTable::canonicalize`] when done.
    pub fn push(&mut self, route: Route) {
        match route.prefix {
            RoutePrefix::V4(p) => self.v4.push((p, route.hops)),
            RoutePrefix::V6(p) => self.v6.push((p, route.hops)),
        }
    }

    /// Every route, IPv4 first.
    pub fn routes(&self) -> impl Iterator<Item = (RoutePrefix, &[Hop])> + '_ {
        let v4 = self.v4.iter().map(|(p, h)| (RoutePrefix::V4(*p), &h[..]));
        let v6 = self.v6.iter().map(|(p, h)| (RoutePrefix::V6(*p), &h[..]));
        v4.chain(v6)
    }

    /// Sorts by prefix, joins or drops duplicate prefixes as `dup` says,
    /// and removes repeated hops within a group (first occurrence kept).
    pub fn canonicalize(&mut self, dup: Duplicates) {
        canonicalize_family(&mut self.v4, dup);
        canonicalize_family(&mut self.v6, dup);
    }

    /// Gives each distinct hop group an index, so the table can be loaded
    /// into an LPM structure that stores [`NextHop`]s. Groups are numbered
    /// in order of first use, IPv4 routes first.
    pub fn intern(&self) -> InternedRoutes {
        fn id<'a>(
            ids: &mut HashMap<&'a [Hop], u32, foldhash::fast::RandomState>,
            groups: &mut Vec<Vec<Hop>>,
            hops: &'a [Hop],
        ) -> NextHop {
            let n = groups.len() as u32;
            NextHop(*ids.entry(hops).or_insert_with(|| {
                groups.push(hops.to_vec());
                n
            }))
        }
        let mut ids = HashMap::with_hasher(foldhash::fast::RandomState::default());
        let mut groups = Vec::new();
        let v4 = self
            .v4
            .iter()
            .map(|(p, h)| (*p, id(&mut ids, &mut groups, h)))
            .collect();
        let v6 = self
            .v6
            .iter()
            .map(|(p, h)| (*p, id(&mut ids, &mut groups, h)))
            .collect();
        InternedRoutes { groups, v4, v6 }
    }
}

fn canonicalize_family<P: Ord + Copy>(routes: &mut Vec<(P, Vec<Hop>)>, dup: Duplicates) {
    // Stable, so merged groups keep input order.
    routes.sort_by_key(|(p, _)| *p);
    let mut out: Vec<(P, Vec<Hop>)> = Vec::with_capacity(routes.len());
    for (p, hops) in routes.drain(..) {
        match out.last_mut() {
            Some((q, group)) if *q == p => {
                if dup == Duplicates::Merge {
                    group.extend(hops);
                }
            }
            _ => out.push((p, hops)),
        }
    }
    for (_, hops) in out.iter_mut() {
        dedup_hops(hops);
    }
    out.retain(|(_, hops)| !hops.is_empty());
    *routes = out;
}

/// Groups up to this size are deduplicated by comparing each hop with the
/// ones kept so far: for the two to eight hops of a usual ECMP group that
/// is faster than hashing.
const SMALL_GROUP: usize = 16;

/// Removes repeated hops from a group, keeping each one's first
/// occurrence: linear in the group's size, so a group of hundreds of
/// thousands of hops loads as fast as that many routes.
fn dedup_hops(hops: &mut Vec<Hop>) {
    if hops.len() <= SMALL_GROUP {
        let mut kept = 0;
        for i in 0..hops.len() {
            if !hops[..kept].contains(&hops[i]) {
                hops[kept] = hops[i];
                kept += 1;
            }
        }
        hops.truncate(kept);
    } else {
        let mut seen = std::collections::HashSet::with_capacity(hops.len());
        hops.retain(|h| seen.insert(*h));
    }
}

/// A [`RouteTable`] with hop groups replaced by indices into `groups`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InternedRoutes {
    /// Distinct hop groups; a [`NextHop`] is an index here.
    pub groups: Vec<Vec<Hop>>,
    /// IPv4 routes.
    pub v4: Vec<(Prefix4, NextHop)>,
    /// IPv6 routes.
    pub v6: Vec<(Prefix6, NextHop)>,
}

/// Where in an input an error is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A line of a text file, counted from 1.
    Line {
        /// The file name as given (or `-` for standard input).
        file: String,
        /// Line number, from 1.
        line: usize,
    },
    /// A byte offset in a binary file; in a compressed file, the offset in
    /// the decompressed stream.
    Offset {
        /// The file name as given.
        file: String,
        /// Byte offset from the start, from 0.
        offset: u64,
    },
    /// The file as a whole (it cannot be opened, or its format is not
    /// known).
    File {
        /// The file name as given.
        file: String,
    },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line { file, line } => write!(f, "{file}:{line}"),
            Location::Offset { file, offset } => write!(f, "{file}: byte {offset}"),
            Location::File { file } => write!(f, "{file}"),
        }
    }
}

/// A malformed line or record, or an input that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    /// Where.
    pub location: Location,
    /// What is wrong, for a person.
    pub message: String,
}

impl SourceError {
    /// An error on a line of a text file.
    pub fn line(file: &str, line: usize, message: impl Into<String>) -> SourceError {
        SourceError {
            location: Location::Line {
                file: file.to_string(),
                line,
            },
            message: message.into(),
        }
    }

    /// An error at a byte offset of a binary file.
    pub fn offset(file: &str, offset: u64, message: impl Into<String>) -> SourceError {
        SourceError {
            location: Location::Offset {
                file: file.to_string(),
                offset,
            },
            message: message.into(),
        }
    }

    /// An error about a whole file.
    pub fn file(file: &str, message: impl Into<String>) -> SourceError {
        SourceError {
            location: Location::File {
                file: file.to_string(),
            },
            message: message.into(),
        }
    }
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl std::error::Error for SourceError {}

/// What a reader does with a malformed line or record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Skip it, return it among the warnings, and go on (the default: one
    /// bad line in a million-route table should not stop a router).
    #[default]
    Skip,
    /// Stop at the first one and return it as the error.
    Refuse,
}

/// Warnings kept in full; past this many only a count is kept, so a binary
/// file read as text cannot fill memory with a million messages.
pub const MAX_WARNINGS: usize = 1000;

/// What a reader returns: the routes, and the lines or records it skipped
/// (or noted) on the way.
pub type Loaded = (RouteTable, Vec<SourceError>);

/// Collects warnings under the [`OnError`] policy.
pub(crate) struct Warnings {
    on_error: OnError,
    list: Vec<SourceError>,
    dropped: usize,
}

impl Warnings {
    pub(crate) fn new(on_error: OnError) -> Warnings {
        Warnings {
            on_error,
            list: Vec::new(),
            dropped: 0,
        }
    }

    /// A malformed line or record: kept as a warning under
    /// [`OnError::Skip`], returned as the error under [`OnError::Refuse`].
    pub(crate) fn error(&mut self, e: SourceError) -> Result<(), SourceError> {
        match self.on_error {
            OnError::Refuse => Err(e),
            OnError::Skip => {
                self.note(e);
                Ok(())
            }
        }
    }

    /// Something well-formed that is not loaded (an MRT record type bricks
    /// does not read): a warning under either policy.
    pub(crate) fn note(&mut self, e: SourceError) {
        if self.list.len() < MAX_WARNINGS {
            self.list.push(e);
        } else {
            self.dropped += 1;
        }
    }

    pub(crate) fn finish(mut self) -> Vec<SourceError> {
        if self.dropped > 0 {
            if let Some(last) = self.list.last() {
                let location = last.location.clone();
                let message = format!("{} more warnings not shown", self.dropped);
                self.list.push(SourceError { location, message });
            }
        }
        self.list
    }
}

/// The formats [`read`] tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Text route lines ([`text`]).
    Text,
    /// MRT ([`mrt`]).
    Mrt,
    /// gzip-compressed; decompressed, then told again.
    Gzip,
    /// bzip2-compressed; decompressed, then told again.
    Bzip2,
}

/// Tells the format from the first bytes of an input (at least 6 are
/// needed to see MRT; fewer are text).
pub fn detect(head: &[u8]) -> Format {
    match head {
        [0x1f, 0x8b, ..] => Format::Gzip,
        [b'B', b'Z', b'h', ..] => Format::Bzip2,
        // The MRT type is a big-endian u16 at offset 4 and every defined
        // type is below 256; text route files have no NUL bytes.
        [_, _, _, _, 0, _, ..] => Format::Mrt,
        _ => Format::Text,
    }
}

/// Reads the route file at `path` in whichever format it is, with MRT next
/// hops all on output 0. See [`load_with`].
pub fn load(path: impl AsRef<Path>, on_error: OnError) -> Result<Loaded, SourceError> {
    load_with(path, on_error, &MrtOptions::default())
}

/// Reads the route file at `path` in whichever format it is (text or MRT,
/// optionally gzip or bzip2 compressed), with `mrt` giving MRT next hops
/// their outputs. Errors are located with the path as given.
pub fn load_with(
    path: impl AsRef<Path>,
    on_error: OnError,
    mrt: &MrtOptions,
) -> Result<Loaded, SourceError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let file =
        File::open(path).map_err(|e| SourceError::file(&name, format!("cannot open: {e}")))?;
    read(file, &name, on_error, mrt)
}

/// Reads routes from any reader in whichever format it is; `name` is used
/// in error locations.
pub fn read(
    reader: impl Read,
    name: &str,
    on_error: OnError,
    mrt: &MrtOptions,
) -> Result<Loaded, SourceError> {
    read_depth(Box::new(reader), name, on_error, mrt, 0)
}

// Boxed: a generic reader would make the decompressing recursion
// instantiate ever deeper types.
fn read_depth(
    mut reader: Box<dyn Read + '_>,
    name: &str,
    on_error: OnError,
    mrt: &MrtOptions,
    depth: u32,
) -> Result<Loaded, SourceError> {
    let head = read_head(&mut reader, 6).map_err(|e| SourceError::file(name, format!("{e}")))?;
    let format = detect(&head);
    let reader = BufReader::with_capacity(1 << 16, io::Cursor::new(head).chain(reader));
    match format {
        // One level of compression: a gzip inside a gzip is not a route
        // file, and recursing on it would let a small input nest deeply.
        Format::Gzip | Format::Bzip2 if depth > 0 => Err(SourceError::file(
            name,
            "compressed data inside compressed data",
        )),
        Format::Gzip => read_depth(
            Box::new(flate2::bufread::MultiGzDecoder::new(reader)),
            name,
            on_error,
            mrt,
            depth + 1,
        ),
        Format::Bzip2 => read_depth(
            Box::new(bzip2::bufread::MultiBzDecoder::new(reader)),
            name,
            on_error,
            mrt,
            depth + 1,
        ),
        Format::Mrt => read_mrt(reader, name, on_error, mrt),
        // Text routes have no peers: loading the whole file would not be
        // what was asked for.
        Format::Text => match mrt.peer {
            Some(peer) => Err(SourceError::file(
                name,
                format!("{peer} was asked for, but this is a text route file: only MRT dumps have peers"),
            )),
            None => read_text(reader, name, on_error),
        },
    }
}

/// Reads up to `n` bytes, fewer only at the end of the input.
fn read_head(reader: &mut impl Read, n: usize) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(n);
    reader.take(n as u64).read_to_end(&mut head)?;
    Ok(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(i: u32) -> Hop {
        Hop {
            gateway: Some(IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + i))),
            output: i % 4,
        }
    }

    #[test]
    fn small_groups_lose_repeats_and_keep_order() {
        let mut t = RouteTable::new();
        let p = RoutePrefix::V4(Prefix4::new(0x0a00_0000, 8));
        for i in [3, 1, 3, 2, 1] {
            t.push(Route {
                prefix: p,
                hops: vec![hop(i)],
            });
        }
        t.canonicalize(Duplicates::Merge);
        assert_eq!(
            t.v4,
            vec![(Prefix4::new(0x0a00_0000, 8), vec![hop(3), hop(1), hop(2)])]
        );
    }

    /// An ECMP group of 300,000 routes, every hop given twice: comparing
    /// each hop with those kept was 4.5 * 10^10 steps; it must be linear.
    #[test]
    fn a_huge_ecmp_group_is_merged_in_linear_time() {
        const N: u32 = 300_000;
        let mut t = RouteTable::new();
        let p = RoutePrefix::V4(Prefix4::new(0, 0));
        for round in 0..2 {
            for i in 0..N {
                // The second round repeats the first in another order.
                let i = if round == 0 { i } else { N - 1 - i };
                t.push(Route {
                    prefix: p,
                    hops: vec![hop(i)],
                });
            }
        }
        t.canonicalize(Duplicates::Merge);
        assert_eq!(t.v4.len(), 1);
        let group = &t.v4[0].1;
        assert_eq!(group.len(), N as usize);
        assert!(group.iter().enumerate().all(|(i, h)| *h == hop(i as u32)));
    }
}
