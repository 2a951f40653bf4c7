//! The state every route-lookup element shares across workers: the
//! longest-prefix-match table, the next-hop groups its entries point to,
//! and the parsing of Click's route syntax and of route files.
//!
//! One `RouteTable` is made per configured element (through
//! `Args::shared`) and read by every worker without a lock: the LPM
//! structures are updated in place with atomic stores (see
//! `bricks_lpm::table`), and the hop groups are a list published by
//! pointer swap, so a lookup never sees a half-made group.
//!
//! A group no prefix uses any more is freed: its index waits
//! [`GROUP_GRACE`] before a new group takes it, so that a packet looked up
//! just before the change (the index read from the LPM structure, the
//! groups read after) never finds another route's hops there. A route
//! source that keeps changing next hops (a flapping BGP feed) thus holds
//! as many groups as its routes use, not every group it ever named.

use arc_swap::ArcSwap;
use bricks_element::{ArgError, Packet};
use bricks_lpm::source::{self, Hop, OnError, Route, RoutePrefix};
use bricks_lpm::{Lpm4Update, Lpm6Update, NextHop, Prefix4, Prefix6};
/// The table's maps: std's, with a faster hash seeded per process (a
/// route source may be hostile, so not a fixed one). SipHash was a tenth
/// of a live source's cost per route.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
use std::net::IpAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Default bound on a table's lookup memory.
pub const DEFAULT_MEMORY: usize = 1 << 30;

/// Routes of one element: the LPM table and its hop groups.
pub struct RouteTable<T: ?Sized> {
    /// The lookup structure.
    pub lpm: Box<T>,
    /// Hop groups by next-hop index; replaced whole when a group is added.
    groups: ArcSwap<Groups>,
    /// Writer side: group -> index, with each index's users.
    writer: Mutex<Interner>,
    /// Writer side: each IPv4 prefix's next hop, so that `add` refuses an
    /// existing prefix before the lookup structure sees anything (the
    /// structures have no exact-match read). Its lock also orders writers.
    routes4: Mutex<Routes<Prefix4>>,
    /// Writer side: each IPv6 prefix's next hop (for listings).
    routes6: Mutex<Routes<Prefix6>>,
    /// The routes of the configuration, kept once a live source feeds the
    /// table: a withdrawn learnt route gives way to the configured one
    /// for its prefix.
    configured: std::sync::OnceLock<HashMap<RoutePrefix, NextHop>>,
    noutputs: usize,
    /// Told of every IPv4 route change, under the writers' lock (the XDP
    /// fast path's copy of the table).
    observer: RouteObserverSlot,
}

/// A change to one IPv4 route, as a copy of the table outside the
/// element (the XDP fast path's) follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteChange {
    /// The prefix (address, length) now leaves by these hops: output and
    /// IPv4 gateway (none for a directly attached destination). More than
    /// one hop is an equal-cost group.
    Set(
        std::net::Ipv4Addr,
        u8,
        Vec<(u32, Option<std::net::Ipv4Addr>)>,
    ),
    /// The prefix has no route any more.
    Remove(std::net::Ipv4Addr, u8),
}

/// What follows a table's changes.
pub type RouteObserver = Arc<dyn Fn(&RouteChange) + Send + Sync>;

/// Where a table keeps its observers (one per fast path that follows
/// it): read on every route change, never per packet, so a mutex.
#[derive(Default)]
pub struct RouteObserverSlot(Mutex<Vec<RouteObserver>>);

impl core::fmt::Debug for RouteObserverSlot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let n = self.0.lock().map(|o| o.len()).unwrap_or(0);
        f.debug_struct("RouteObserverSlot")
            .field("observers", &n)
            .finish()
    }
}

impl RouteObserverSlot {
    /// Tells every observer, if there is one. Under the slot's lock, so
    /// that observers see the changes in the order they were told.
    pub fn tell(&self, change: impl FnOnce() -> RouteChange) {
        let observers = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if observers.is_empty() {
            return;
        }
        let c = change();
        for o in observers.iter() {
            o(&c);
        }
    }

    /// Adds an observer (each FASTPATH interface following the table has
    /// one).
    pub fn add(&self, o: RouteObserver) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(o);
    }
}

/// The hop groups as published: each group's hops, and beside them a
/// word per group that answers an IPv4 lookup of a one-hop group (the
/// usual route) with no match on the hop's gateway. Built together, so
/// one load of the published groups sees both agree.
pub struct Groups {
    hops: Vec<Arc<[Hop]>>,
    v4: Vec<u64>,
    v6: Vec<V6Word>,
}

/// What an IPv6 lookup needs of a group, in one place: see
/// [`Groups::v6_words`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V6Word {
    /// The hop's IPv6 gateway, its sixteen bytes in memory order (as
    /// `u128::from_ne_bytes`), so that it is stored into the annotation
    /// with no byte swap; 0 when it has none (the destination is then
    /// the next hop).
    pub gateway: u128,
    /// The hop's output, or [`V6_MANY`].
    pub output: u32,
}

/// The output of a [`V6Word`] of a group with more than one hop.
pub const V6_MANY: u32 = u32::MAX;

/// The word of a group with more than one hop: the flow hash picks.
pub const V4_MANY: u64 = u64::MAX;

impl Groups {
    fn new(hops: Vec<Arc<[Hop]>>) -> Groups {
        let v4 = hops.iter().map(|g| v4_word(g)).collect();
        let v6 = hops.iter().map(|g| v6_word(g)).collect();
        Groups { hops, v4, v6 }
    }

    /// Per group: `output << 32 | gateway` for a one-hop group, or
    /// [`V4_MANY`]. The gateway is its four bytes in memory order (as
    /// `u32::from_ne_bytes`), so that it is stored into the annotation
    /// with no byte swap; 0 when there is no IPv4 gateway, as
    /// [`gateway_v4`] says.
    #[inline]
    pub fn v4_words(&self) -> &[u64] {
        &self.v4
    }

    /// Per group: a one-hop group's output and IPv6 gateway (0 when
    /// there is none, as [`gateway_v6`] says), or output [`V6_MANY`]:
    /// an IPv6 lookup's answer with one load, not the group's list.
    #[inline]
    pub fn v6_words(&self) -> &[V6Word] {
        &self.v6
    }
}

impl std::ops::Deref for Groups {
    type Target = Vec<Arc<[Hop]>>;
    #[inline]
    fn deref(&self) -> &Vec<Arc<[Hop]>> {
        &self.hops
    }
}

/// Routes `p` by the raw answer `nh` of an IPv4 lookup (a group's index,
/// or [`NO_ROUTE`](bricks_lpm::NO_ROUTE)) in a table whose hop groups
/// are `groups`: a gateway replaces the destination annotation, an
/// equal-cost group picks its hop by the flow hash, and the result is the
/// hop's output; `None` when there is no route (no answer, or an index
/// the groups do not have: one bounds check tells both).
///
/// `words` is `groups.v4_words()`, which a batch loop keeps at hand: read
/// through `groups`, it is loaded again for every packet, as the
/// annotations written in between might have changed it.
#[inline(always)]
pub fn route_v4(groups: &Groups, words: &[u64], nh: u32, p: &mut Packet) -> Option<usize> {
    let word = *words.get(nh as usize)?;
    if word != V4_MANY {
        // A one-hop group: its output and gateway in one word.
        let gw = word as u32;
        if gw != 0 {
            p.anno_mut().dst_ip = gw.to_ne_bytes().into();
        }
        return Some((word >> 32) as usize);
    }
    let hop = pick(&groups.hops[nh as usize], flow_hash(p));
    if let Some(gw) = gateway_v4(hop) {
        p.anno_mut().dst_ip = gw;
    }
    Some(hop.output as usize)
}

/// The word of the one-hop group that every answer of `found` (a batch's
/// raw lookup answers) names, if they all name the same one: such a batch
/// goes on whole by the word's output. One pass with no branch a packet,
/// so that it compiles to vector compares.
#[inline(always)]
pub fn one_hop_v4(found: &[u32], words: &[u64]) -> Option<u64> {
    let word = *words.get(uniform(found)? as usize)?;
    (word != V4_MANY).then_some(word)
}

/// [`one_hop_v4`] for the IPv6 words.
#[inline(always)]
pub fn one_hop_v6(found: &[u32], words: &[V6Word]) -> Option<V6Word> {
    let word = *words.get(uniform(found)? as usize)?;
    (word.output != V6_MANY).then_some(word)
}

/// The key every packet of `batch` has, if the batch is not empty and
/// they all have the same one: a batch of one destination (one flow's
/// burst) that a lookup element routes with one lookup. The keys are
/// compared four packets to a branch, as words (the annotation's bytes,
/// in any order), and the loop stops at the first group of four that
/// differs.
#[inline(always)]
pub fn one_key<K>(batch: &bricks_element::Batch, key: impl Fn(&Packet) -> K) -> Option<K>
where
    K: Copy + Default + PartialEq + std::ops::BitXor<Output = K> + std::ops::BitOr<Output = K>,
{
    let (first, rest) = batch.as_slice().split_first()?;
    let a = key(first);
    let d = |p: &Packet| key(p) ^ a;
    let mut fours = rest.chunks_exact(4);
    let one = fours
        .by_ref()
        .all(|c| d(&c[0]) | d(&c[1]) | d(&c[2]) | d(&c[3]) == K::default())
        && fours.remainder().iter().all(|p| key(p) == a);
    one.then_some(a)
}

/// The answer every one of `found` is, if they are all the same.
#[inline(always)]
fn uniform(found: &[u32]) -> Option<u32> {
    let &first = found.first()?;
    let differ = found.iter().fold(0, |d, &nh| d | (nh ^ first));
    (differ == 0).then_some(first)
}

/// The [`Groups::v4_words`] word of `group`. Outputs are checked below
/// the element's output count, far below `u32::MAX`, so no one-hop
/// word equals [`V4_MANY`].
fn v4_word(group: &[Hop]) -> u64 {
    match group {
        [h] => {
            let gw = gateway_v4(h).map_or(0, |g| u32::from_ne_bytes(g.octets()));
            u64::from(h.output) << 32 | u64::from(gw)
        }
        _ => V4_MANY,
    }
}

/// The [`Groups::v6_words`] word of `group`. Outputs are checked below
/// the element's output count, so no one-hop word's is [`V6_MANY`].
fn v6_word(group: &[Hop]) -> V6Word {
    match group {
        [h] => V6Word {
            gateway: gateway_v6(h).map_or(0, |g| u128::from_ne_bytes(g.octets())),
            output: h.output,
        },
        _ => V6Word {
            gateway: 0,
            output: V6_MANY,
        },
    }
}

/// How long a freed group's index waits before a new group takes it: far
/// longer than a worker holds a looked-up index before reading its group
/// (one batch, microseconds).
pub const GROUP_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// The writer side of the hop groups: each group's index, how many
/// prefixes (and configured routes kept aside) use each index, and the
/// freed indexes waiting out [`GROUP_GRACE`].
#[derive(Default)]
struct Interner {
    ids: HashMap<Vec<Hop>, NextHop>,
    users: Vec<u32>,
    freed: std::collections::VecDeque<(NextHop, std::time::Instant)>,
    grace: std::time::Duration,
}

/// A route-table change that was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteError(pub String);

impl core::fmt::Display for RouteError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A route argument whose destination is a bare address (`10.0.0.1 2`, or
/// an AddressInfo name read as one) rewritten as the host route Click
/// reads it as (`10.0.0.1/32 2`); `None` for anything else. Route files
/// still need a prefix length.
fn host_route(text: &str) -> Option<String> {
    let t = text.trim_start();
    let end = t.find(|c: char| c.is_ascii_whitespace()).unwrap_or(t.len());
    let (dst, rest) = t.split_at(end);
    if dst.contains('/') {
        // A prefix, as almost every route is: no address has a `/`.
        return None;
    }
    let len = match dst.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(_) => 32,
        std::net::IpAddr::V6(_) => 128,
    };
    Some(format!("{dst}/{len}{rest}"))
}

/// A route argument whose IPv4 destination has host bits set
/// (`18.26.0/12 4.0.0.4 0`) rewritten with them cleared
/// (`18.16.0.0/12 4.0.0.4 0`), as Click's `cp_ip_route` does
/// (`r.addr &= r.mask`); `None` when nothing changes or the destination is
/// no IPv4 prefix (the parser then says what is wrong). Route files keep
/// refusing such prefixes.
fn click_masked(text: &str) -> Option<String> {
    let t = text.trim_start();
    let end = t.find(|c: char| c.is_ascii_whitespace()).unwrap_or(t.len());
    let (dst, rest) = t.split_at(end);
    let (addr, mask) = dst.split_once('/')?;
    let a = match addr.parse::<std::net::Ipv4Addr>() {
        Ok(a) => a,
        Err(_) => bricks_wire::ipv4::parse_abbreviated(addr)?.0,
    };
    let m: u32 = match mask.parse::<u8>() {
        Ok(len) if len <= 32 => u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0),
        Ok(_) => return None,
        Err(_) => u32::from(mask.parse::<std::net::Ipv4Addr>().ok()?),
    };
    let net = u32::from(a) & m;
    (net != u32::from(a)).then(|| format!("{}/{mask}{rest}", std::net::Ipv4Addr::from(net)))
}

/// Click's reading of one route argument: a bare address is a host route,
/// host bits of the destination are cleared.
fn click_route_text(text: &str) -> std::borrow::Cow<'_, str> {
    let host = host_route(text);
    let t: &str = host.as_deref().unwrap_or(text);
    match click_masked(t) {
        Some(m) => m.into(),
        None => match host {
            Some(h) => h.into(),
            None => text.into(),
        },
    }
}

/// A dotted-quad IPv4 address at the start of `b` (four decimal octets of
/// at most 255, no leading zeros, as `Ipv4Addr`'s parser takes them) and
/// the rest; `None` for anything else.
#[inline]
fn dotted_quad(b: &[u8]) -> Option<(u32, &[u8])> {
    let mut addr = 0u32;
    let mut i = 0;
    for part in 0..4 {
        if part > 0 {
            if b.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
        let start = i;
        let mut v = 0u32;
        while let Some(&c) = b.get(i) {
            if !c.is_ascii_digit() || i - start == 3 {
                break;
            }
            v = v * 10 + u32::from(c - b'0');
            i += 1;
        }
        let digits = i - start;
        if digits == 0 || v > 255 || (digits > 1 && b[start] == b'0') {
            return None;
        }
        addr = addr << 8 | v;
    }
    Some((addr, &b[i..]))
}

/// Skips ASCII spaces and tabs; `None` when there are none.
#[inline]
fn blanks(b: &[u8]) -> Option<&[u8]> {
    let n = b.iter().take_while(|&&c| c == b' ' || c == b'\t').count();
    (n > 0).then(|| &b[n..])
}

/// The route argument almost every large table is written in,
/// `A.B.C.D/LEN [A.B.C.D] OUTPUT`, read in one pass, with Click's
/// clearing of host bits; `None` for any other form (abbreviated
/// addresses, netmasks, IPv6, names, `-`, errors), which the general
/// reader then takes and, if it is wrong, says why. Parsing a million
/// inline routes is most of loading such a configuration, and the general
/// reader's copies and generic address parsers cost several times this.
fn fast_v4_route(text: &str) -> Option<(Prefix4, Hop)> {
    let b = text.trim_matches(|c| c == ' ' || c == '\t').as_bytes();
    let (addr, b) = dotted_quad(b)?;
    let b = b.strip_prefix(b"/")?;
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 || digits > 2 || (digits == 2 && b[0] == b'0') {
        return None;
    }
    let len = b[..digits].iter().fold(0u8, |v, &c| v * 10 + (c - b'0'));
    if len > 32 {
        return None;
    }
    let b = blanks(&b[digits..])?;
    // The gateway, when the next field is an address.
    let (gateway, b) = match dotted_quad(b) {
        Some((gw, rest)) => {
            let rest = blanks(rest)?;
            let gw = std::net::Ipv4Addr::from(gw);
            ((!gw.is_unspecified()).then_some(IpAddr::V4(gw)), rest)
        }
        None => (None, b),
    };
    if b.is_empty() || b.len() > 10 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let output = u32::try_from(b.iter().fold(0u64, |v, &c| v * 10 + u64::from(c - b'0'))).ok()?;
    Some((Prefix4::new(addr, len), Hop { gateway, output }))
}

/// Routes as a lookup element reads them: IPv4 routes of one hop each
/// (almost every route given inline) as a prefix and the index of its hop
/// among the distinct hops read so far, with no hop list to allocate, and
/// every other route whole.
#[derive(Debug, Clone, Default)]
pub struct ParsedRoutes {
    /// IPv4 routes of one hop, in the order given: the prefix and its
    /// hop's index in `hops`.
    single4: Vec<(Prefix4, u32)>,
    /// The distinct hops of `single4`, in order of first use.
    hops: Vec<Hop>,
    /// The index of each hop in `hops` past the first [`SCANNED`], which
    /// are found by a scan (faster than hashing for the handful of next
    /// hops most tables have).
    ids: std::collections::HashMap<Hop, u32, foldhash::fast::RandomState>,
    /// The others, in the order given.
    pub routes: Vec<Route>,
}

/// How many of the first distinct hops are found by a scan.
const SCANNED: usize = 16;

impl ParsedRoutes {
    /// Adds an IPv4 route of one hop. After another kind of route it is
    /// kept whole too, so that [`ParsedRoutes::into_routes`] gives every
    /// route in the order given.
    pub fn push_single4(&mut self, prefix: Prefix4, hop: Hop) {
        if !self.routes.is_empty() {
            self.routes.push(Route {
                prefix: RoutePrefix::V4(prefix),
                hops: vec![hop],
            });
            return;
        }
        let scanned = &self.hops[..self.hops.len().min(SCANNED)];
        let id = match scanned.iter().position(|&h| h == hop) {
            Some(i) => i as u32,
            None if self.hops.len() < SCANNED => {
                self.hops.push(hop);
                self.hops.len() as u32 - 1
            }
            None => *self.ids.entry(hop).or_insert_with(|| {
                self.hops.push(hop);
                self.hops.len() as u32 - 1
            }),
        };
        self.single4.push((prefix, id));
    }

    /// Reads one route written in Click's syntax (`span` locates it for
    /// an error).
    pub fn push_text(&mut self, text: &str, span: bricks_config::Span) -> Result<(), ArgError> {
        if let Some((p, h)) = fast_v4_route(text) {
            self.push_single4(p, h);
            return Ok(());
        }
        let text = click_route_text(text);
        let text: &str = &text;
        match source::text::parse_line(text) {
            Ok(Some(r)) => self.routes.push(r),
            Ok(None) => {}
            Err(e) => return Err(ArgError::at(span, format!("bad route `{text}`: {e}"))),
        }
        Ok(())
    }

    /// How many IPv4 routes of one hop there are.
    pub fn single4_len(&self) -> usize {
        self.single4.len()
    }

    /// Every route as a [`Route`], in the order given.
    pub fn into_routes(self) -> Vec<Route> {
        let hops = self.hops;
        let mut all: Vec<Route> = self
            .single4
            .into_iter()
            .map(|(p, h)| Route {
                prefix: RoutePrefix::V4(p),
                hops: vec![hops[h as usize]],
            })
            .collect();
        all.extend(self.routes);
        all
    }
}

impl From<Vec<Route>> for ParsedRoutes {
    fn from(routes: Vec<Route>) -> ParsedRoutes {
        ParsedRoutes {
            routes,
            ..ParsedRoutes::default()
        }
    }
}

/// Parses routes written in Click's syntax, one per argument.
pub fn parse_routes(texts: &[(&str, bricks_config::Span)]) -> Result<Vec<Route>, ArgError> {
    let mut out = ParsedRoutes::default();
    for &(text, span) in texts {
        out.push_text(text, span)?;
    }
    Ok(out.into_routes())
}

/// Reads a route file (text or MRT, detected by content), MRT routes from
/// `peer` only when given.
pub fn load_file(
    path: &Path,
    skip_errors: bool,
    peer: Option<source::PeerSelect>,
) -> Result<Vec<Route>, ArgError> {
    let on_error = if skip_errors {
        OnError::Skip
    } else {
        OnError::Refuse
    };
    let mrt = source::MrtOptions {
        peer,
        ..source::MrtOptions::default()
    };
    let (table, warnings) =
        source::load_with(path, on_error, &mrt).map_err(|e| ArgError::new(e.to_string()))?;
    for w in warnings.iter().take(20) {
        eprintln!("warning: {w}");
    }
    // Moved, not copied: a full table's hop lists are a million
    // allocations.
    let source::RouteTable { v4, v6 } = table;
    let mut routes = Vec::with_capacity(v4.len() + v6.len());
    routes.extend(v4.into_iter().map(|(p, hops)| Route {
        prefix: RoutePrefix::V4(p),
        hops,
    }));
    routes.extend(v6.into_iter().map(|(p, hops)| Route {
        prefix: RoutePrefix::V6(p),
        hops,
    }));
    Ok(routes)
}

impl<T: ?Sized> RouteTable<T> {
    fn check_outputs(&self, hops: &[Hop]) -> Result<(), RouteError> {
        for h in hops {
            if h.output as usize >= self.noutputs {
                return Err(RouteError(format!(
                    "output {} out of range: the element has {} output{}",
                    h.output,
                    self.noutputs,
                    if self.noutputs == 1 { "" } else { "s" }
                )));
            }
        }
        Ok(())
    }

    /// The next-hop index of `hops` with one more user, adding the group
    /// if it is new (in a freed index past its grace, else at the end).
    /// Every `acquire` is matched by a [`RouteTable::release`].
    fn acquire(&self, hops: &[Hop]) -> Result<NextHop, RouteError> {
        self.check_outputs(hops)?;
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&nh) = w.ids.get(hops) {
            w.users[nh.0 as usize] += 1;
            return Ok(nh);
        }
        let current = self.groups.load();
        let grace = w.grace;
        let reuse = match w.freed.front() {
            Some((_, at)) if at.elapsed() >= grace => w.freed.pop_front().map(|(nh, _)| nh),
            _ => None,
        };
        let mut next: Vec<Arc<[Hop]>> = Vec::with_capacity(current.len() + 1);
        next.extend(current.iter().cloned());
        let nh = match reuse {
            Some(nh) => {
                next[nh.0 as usize] = hops.into();
                nh
            }
            None if current.len() as u32 > NextHop::MAX => {
                return Err(RouteError("too many distinct next-hop groups".into()));
            }
            None => {
                next.push(hops.into());
                w.users.push(0);
                NextHop(current.len() as u32)
            }
        };
        // Published before any LPM entry can name it.
        self.groups.store(Arc::new(Groups::new(next)));
        w.ids.insert(hops.to_vec(), nh);
        w.users[nh.0 as usize] = 1;
        Ok(nh)
    }

    /// A user for each index of `nhs` (the routes a table is built with).
    fn count_users(&self, nhs: impl Iterator<Item = NextHop>) {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        for nh in nhs {
            if let Some(u) = w.users.get_mut(nh.0 as usize) {
                *u += 1;
            }
        }
    }

    /// One more user of the group at `nh` (a configured route set again).
    fn acquire_index(&self, nh: NextHop) {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(u) = w.users.get_mut(nh.0 as usize) {
            *u += 1;
        }
    }

    /// One user fewer of the group at `nh`; the last frees it.
    fn release(&self, nh: NextHop) {
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let Some(u) = w.users.get_mut(nh.0 as usize) else {
            return;
        };
        *u = u.saturating_sub(1);
        if *u == 0 {
            if let Some(g) = self.groups.load().get(nh.0 as usize) {
                w.ids.remove(&g[..]);
            }
            w.freed.push_back((nh, std::time::Instant::now()));
        }
    }

    /// Sets how long a freed index waits (tests: none).
    #[cfg(test)]
    fn set_grace(&self, grace: std::time::Duration) {
        self.writer.lock().unwrap().grace = grace;
    }

    /// Groups in use: distinct hop lists the table's routes name.
    pub fn groups_in_use(&self) -> usize {
        self.writer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .ids
            .len()
    }

    /// Points `p` at `nh` in `routes` and, through `insert`, in the lookup
    /// structure; the group it pointed to loses a user. `nh` was acquired
    /// for it: released again if the structure refuses.
    fn bind<P: std::hash::Hash + Eq + Copy>(
        &self,
        routes: &mut HashMap<P, NextHop>,
        p: P,
        nh: NextHop,
        insert: impl FnOnce(P, NextHop) -> Result<(), String>,
    ) -> Result<(), String> {
        if let Err(e) = insert(p, nh) {
            self.release(nh);
            return Err(e);
        }
        if let Some(old) = routes.insert(p, nh) {
            self.release(old);
        }
        Ok(())
    }

    /// Forgets `p` in `routes`; its group loses a user.
    fn unbind<P: std::hash::Hash + Eq>(&self, routes: &mut HashMap<P, NextHop>, p: &P) {
        if let Some(old) = routes.remove(p) {
            self.release(old);
        }
    }

    /// The current hop groups (one atomic load; hold it for a batch).
    #[inline]
    pub fn groups(&self) -> arc_swap::Guard<Arc<Groups>> {
        self.groups.load()
    }

    /// Where the hop groups are published, for a reader that keeps its
    /// own [`arc_swap::Cache`] of them (one load and a compare a packet,
    /// where [`RouteTable::groups`] takes a guard).
    #[inline]
    pub fn groups_swap(&self) -> &ArcSwap<Groups> {
        &self.groups
    }

    fn with_groups(
        lpm: Box<T>,
        groups: Vec<Vec<Hop>>,
        noutputs: usize,
    ) -> Result<Self, RouteError> {
        let t = RouteTable {
            lpm,
            groups: ArcSwap::from_pointee(Groups::new(
                groups.iter().map(|g| g.as_slice().into()).collect(),
            )),
            writer: Mutex::new(Interner {
                users: vec![0; groups.len()],
                ids: groups
                    .into_iter()
                    .enumerate()
                    .map(|(i, g)| (g, NextHop(i as u32)))
                    .collect(),
                freed: Default::default(),
                grace: GROUP_GRACE,
            }),
            routes4: Mutex::new(Routes::Built(Vec::new())),
            routes6: Mutex::new(Routes::Built(Vec::new())),
            configured: std::sync::OnceLock::new(),
            noutputs,
            observer: RouteObserverSlot::default(),
        };
        for g in t.groups.load().iter() {
            t.check_outputs(g)?;
        }
        Ok(t)
    }
}

/// A table's routes by prefix, for its writers and listings: the sorted
/// list it was built from until the first change or listing makes it a
/// map. A million configured routes are thus not hashed while the
/// configuration loads, when nothing asks for them.
enum Routes<P> {
    Built(Vec<(P, NextHop)>),
    Map(HashMap<P, NextHop>),
}

impl<P: std::hash::Hash + Eq + Copy> Routes<P> {
    fn map(&mut self) -> &mut HashMap<P, NextHop> {
        if let Routes::Built(list) = self {
            let mut map = HashMap::with_capacity_and_hasher(list.len(), Default::default());
            map.extend(list.drain(..));
            *self = Routes::Map(map);
        }
        match self {
            Routes::Map(map) => map,
            Routes::Built(_) => unreachable!("made a map above"),
        }
    }
}

/// Builds an IPv4 table from routes with the constructor `build` (one of
/// the `bricks_lpm` algorithms).
pub fn build_v4<T: Lpm4Update + ?Sized>(
    routes: impl Into<ParsedRoutes>,
    noutputs: usize,
    build: impl FnOnce(&[(Prefix4, NextHop)]) -> Result<Box<T>, bricks_lpm::LpmError>,
) -> Result<RouteTable<T>, ArgError> {
    let routes = routes.into();
    if let Some(r) = routes
        .routes
        .iter()
        .find(|r| matches!(r.prefix, RoutePrefix::V6(_)))
    {
        return Err(ArgError::new(format!(
            "IPv6 route {} in an IPv4 table (use LookupIP6Route)",
            r.prefix
        )));
    }
    let interned = match intern_single4(routes) {
        Ok(interned) => interned,
        Err(routes) => {
            let mut table = source::RouteTable::new();
            for r in routes.into_routes() {
                table.push(r);
            }
            table.canonicalize(source::Duplicates::Merge);
            table.intern()
        }
    };
    let lpm = build(&interned.v4).map_err(|e| ArgError::new(e.to_string()))?;
    let t =
        RouteTable::with_groups(lpm, interned.groups, noutputs).map_err(|e| ArgError::new(e.0))?;
    t.count_users(interned.v4.iter().map(|&(_, nh)| nh));
    *t.routes4.lock().unwrap_or_else(|e| e.into_inner()) = Routes::Built(interned.v4);
    Ok(t)
}

/// What [`source::RouteTable::canonicalize`] and `intern` make of routes
/// that are all single-hop IPv4 with no prefix given twice, made without a
/// hop list per route: the routes sorted by prefix, hop groups numbered in
/// order of first use. The routes back when they are not all such (a
/// prefix given twice is an ECMP group, merged by the general path).
fn intern_single4(mut routes: ParsedRoutes) -> Result<source::InternedRoutes, ParsedRoutes> {
    if !routes.routes.is_empty() {
        return Err(routes);
    }
    // Stable, as the general path's sort.
    routes.single4.sort_by_key(|(p, _)| *p);
    if routes.single4.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(routes);
    }
    // Hops were numbered as read; groups are numbered by first use in
    // prefix order, as the general path numbers them.
    let mut group_of = vec![u32::MAX; routes.hops.len()];
    let mut groups: Vec<Vec<Hop>> = Vec::new();
    let hops = &routes.hops;
    let v4 = routes
        .single4
        .into_iter()
        .map(|(p, h)| {
            let g = &mut group_of[h as usize];
            if *g == u32::MAX {
                *g = groups.len() as u32;
                groups.push(vec![hops[h as usize]]);
            }
            (p, NextHop(*g))
        })
        .collect();
    Ok(source::InternedRoutes {
        groups,
        v4,
        v6: Vec::new(),
    })
}

/// Builds an IPv6 table; see [`build_v4`].
pub fn build_v6<T: Lpm6Update + ?Sized>(
    routes: impl Into<ParsedRoutes>,
    noutputs: usize,
    build: impl FnOnce(&[(Prefix6, NextHop)]) -> Result<Box<T>, bricks_lpm::LpmError>,
) -> Result<RouteTable<T>, ArgError> {
    let mut table = source::RouteTable::new();
    for r in routes.into().into_routes() {
        if let RoutePrefix::V4(p) = r.prefix {
            return Err(ArgError::new(format!(
                "IPv4 route {}/{} in an IPv6 table (use DirectIPLookup)",
                std::net::Ipv4Addr::from(p.addr),
                p.len
            )));
        }
        table.push(r);
    }
    table.canonicalize(source::Duplicates::Merge);
    let interned = table.intern();
    let lpm = build(&interned.v6).map_err(|e| ArgError::new(e.to_string()))?;
    let t =
        RouteTable::with_groups(lpm, interned.groups, noutputs).map_err(|e| ArgError::new(e.0))?;
    t.count_users(interned.v6.iter().map(|&(_, nh)| nh));
    *t.routes6.lock().unwrap_or_else(|e| e.into_inner()) = Routes::Built(interned.v6);
    Ok(t)
}

impl<T: ?Sized> RouteTable<T> {
    /// Keeps the configured routes aside, so that a live source's
    /// withdrawal gives the prefix back its configured route.
    pub fn keep_configured(&self) {
        let mut all: HashMap<RoutePrefix, NextHop> = HashMap::default();
        for (p, nh) in self
            .routes4
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map()
            .iter()
        {
            all.insert(RoutePrefix::V4(*p), *nh);
        }
        for (p, nh) in self
            .routes6
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map()
            .iter()
        {
            all.insert(RoutePrefix::V6(*p), *nh);
        }
        // Configured routes kept aside use their groups for good.
        self.count_users(all.values().copied());
        let _ = self.configured.set(all);
    }

    fn configured(&self, p: RoutePrefix) -> Option<NextHop> {
        self.configured.get().and_then(|c| c.get(&p).copied())
    }

    /// Click's `table` handler: every route, one `PREFIX<TAB>GATEWAY<TAB>OUT`
    /// line per hop (`-` for no gateway), sorted by prefix.
    pub fn table_text(&self) -> String {
        let groups = self.groups();
        let mut routes: Vec<(RoutePrefix, NextHop)> = self
            .routes4
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map()
            .iter()
            .map(|(p, nh)| (RoutePrefix::V4(*p), *nh))
            .collect();
        routes.extend(
            self.routes6
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .map()
                .iter()
                .map(|(p, nh)| (RoutePrefix::V6(*p), *nh)),
        );
        routes.sort();
        let mut out = String::with_capacity(routes.len() * 32);
        for (p, nh) in routes {
            for h in groups.get(nh.0 as usize).map(|g| &g[..]).unwrap_or(&[]) {
                let gw = match h.gateway {
                    Some(g) if !g.is_unspecified() => g.to_string(),
                    _ => "-".into(),
                };
                out.push_str(&format!("{p}\t{gw}\t{}\n", h.output));
            }
        }
        out
    }
}

impl<T: Lpm4Update + ?Sized> RouteTable<T> {
    /// Sets a whole route (a live source's): adds it or replaces the one
    /// for its prefix.
    pub fn set_route(&self, prefix: RoutePrefix, hops: &[Hop]) -> Result<(), String> {
        let RoutePrefix::V4(p) = prefix else {
            return Err("IPv6 route in an IPv4 table".into());
        };
        let mut guard = self.routes4.lock().unwrap_or_else(|e| e.into_inner());
        let routes = guard.map();
        let nh = self.acquire(hops).map_err(|e| e.0)?;
        self.bind(routes, p, nh, |p, nh| self.insert4(p, nh))?;
        self.tell4(p, Some(nh));
        Ok(())
    }

    /// Withdraws a live source's route; the configured route for the
    /// prefix, if any, takes its place.
    pub fn remove_route(&self, prefix: RoutePrefix) -> Result<(), String> {
        let RoutePrefix::V4(p) = prefix else {
            return Err("IPv6 prefix in an IPv4 table".into());
        };
        let mut guard = self.routes4.lock().unwrap_or_else(|e| e.into_inner());
        let routes = guard.map();
        if let Some(nh) = self.configured(prefix) {
            self.acquire_index(nh);
            self.bind(routes, p, nh, |p, nh| self.insert4(p, nh))?;
            self.tell4(p, Some(nh));
        } else {
            self.lpm.remove(p).map_err(|e| e.to_string())?;
            self.unbind(routes, &p);
            self.tell4(p, None);
        }
        Ok(())
    }

    /// Tells the observer that `p` now leaves by group `nh` (or has no
    /// route). The caller holds the writers' lock, so the observer sees
    /// the changes in the order the table made them.
    fn tell4(&self, p: Prefix4, nh: Option<NextHop>) {
        self.observer.tell(|| {
            let addr = std::net::Ipv4Addr::from(p.addr);
            match nh {
                None => RouteChange::Remove(addr, p.len),
                Some(nh) => RouteChange::Set(
                    addr,
                    p.len,
                    self.groups()
                        .get(nh.0 as usize)
                        .map(|g| g.iter().map(|h| (h.output, gateway_v4(h))).collect())
                        .unwrap_or_default(),
                ),
            }
        });
    }

    /// Follows the IPv4 routes: `o` is told of every change from now on
    /// (besides the observers already there),
    /// and the routes of now are returned (as `Set` changes), both under
    /// the writers' lock so that no change falls between them.
    pub fn observe_v4(&self, o: RouteObserver) -> Vec<RouteChange> {
        let mut guard = self.routes4.lock().unwrap_or_else(|e| e.into_inner());
        let routes = guard.map();
        self.observer.add(o);
        let groups = self.groups();
        routes
            .iter()
            .map(|(p, nh)| {
                RouteChange::Set(
                    std::net::Ipv4Addr::from(p.addr),
                    p.len,
                    groups
                        .get(nh.0 as usize)
                        .map(|g| g.iter().map(|h| (h.output, gateway_v4(h))).collect())
                        .unwrap_or_default(),
                )
            })
            .collect()
    }

    fn insert4(&self, p: Prefix4, nh: NextHop) -> Result<(), String> {
        self.lpm
            .insert(p, nh)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

impl<T: Lpm6Update + ?Sized> RouteTable<T> {
    /// Sets a whole IPv6 route; see the IPv4 `set_route`.
    pub fn set_route6(&self, prefix: RoutePrefix, hops: &[Hop]) -> Result<(), String> {
        let RoutePrefix::V6(p) = prefix else {
            return Err("IPv4 route in an IPv6 table".into());
        };
        let mut guard = self.routes6.lock().unwrap_or_else(|e| e.into_inner());
        let routes = guard.map();
        let nh = self.acquire(hops).map_err(|e| e.0)?;
        self.bind(routes, p, nh, |p, nh| self.insert6(p, nh))
    }

    /// Withdraws a live source's IPv6 route; see the IPv4 `remove_route`.
    pub fn remove_route6(&self, prefix: RoutePrefix) -> Result<(), String> {
        let RoutePrefix::V6(p) = prefix else {
            return Err("IPv4 prefix in an IPv6 table".into());
        };
        let mut guard = self.routes6.lock().unwrap_or_else(|e| e.into_inner());
        let routes = guard.map();
        if let Some(nh) = self.configured(prefix) {
            self.acquire_index(nh);
            self.bind(routes, p, nh, |p, nh| self.insert6(p, nh))
        } else {
            self.lpm.remove(p).map_err(|e| e.to_string())?;
            self.unbind(routes, &p);
            Ok(())
        }
    }

    fn insert6(&self, p: Prefix6, nh: NextHop) -> Result<(), String> {
        self.lpm
            .insert(p, nh)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

impl<T: Lpm4Update + ?Sized> RouteTable<T> {
    /// Handles `add` and `set` (both add a route or replace the one for the
    /// same prefix) and `remove` (Click's route table handlers).
    pub fn handle(&self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "add" | "set" => {
                let route = parse_one(value)?;
                let RoutePrefix::V4(p) = route.prefix else {
                    return Err("IPv6 route in an IPv4 table".into());
                };
                let mut guard = self.routes4.lock().unwrap_or_else(|e| e.into_inner());
                let routes = guard.map();
                // Click's `add` refuses a prefix that has a route (`set`
                // replaces it); the lookup structure is left untouched.
                if let (Some(&old), "add") = (routes.get(&p), handler) {
                    let groups = self.groups();
                    let p = RoutePrefix::V4(p);
                    let shown = match groups.get(old.0 as usize).and_then(|g| g.first()) {
                        Some(h) => match gateway_v4(h) {
                            Some(gw) => format!("{p} {gw} {}", h.output),
                            None => format!("{p} {}", h.output),
                        },
                        None => p.to_string(),
                    };
                    return Err(format!("conflict with existing route '{shown}'"));
                }
                let nh = self.acquire(&route.hops).map_err(|e| e.0)?;
                self.bind(routes, p, nh, |p, nh| self.insert4(p, nh))?;
                self.tell4(p, Some(nh));
                Ok(())
            }
            "remove" => {
                let p = parse_prefix(value)?;
                let RoutePrefix::V4(p) = p else {
                    return Err("IPv6 prefix in an IPv4 table".into());
                };
                let mut guard = self.routes4.lock().unwrap_or_else(|e| e.into_inner());
                let routes = guard.map();
                match self.lpm.remove(p).map_err(|e| e.to_string())? {
                    Some(_) => {
                        self.unbind(routes, &p);
                        self.tell4(p, None);
                        Ok(())
                    }
                    None => Err(format!("{value}: no such route")),
                }
            }
            // Click's `ctrl`: one `add`, `set` or `remove` command a line.
            // Every line is checked before any is applied, so a mistake
            // changes nothing.
            "ctrl" => {
                let mut cmds = Vec::new();
                for (n, line) in value.lines().enumerate() {
                    let line = line.trim();
                    if line.is_empty() || line.starts_with('#') {
                        continue;
                    }
                    let (cmd, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
                    let rest = rest.trim();
                    let ok = match cmd {
                        "add" | "set" => host_route(rest)
                            .as_deref()
                            .map_or_else(|| parse_one(rest), parse_one)
                            .map(|_| ()),
                        "remove" => parse_prefix(rest).map(|_| ()),
                        _ => Err(format!("unknown command `{cmd}` (add, set, remove)")),
                    };
                    ok.map_err(|e| format!("line {}: {e}", n + 1))?;
                    cmds.push((cmd, rest));
                }
                for (cmd, rest) in cmds {
                    self.handle(cmd, rest)?;
                }
                Ok(())
            }
            _ => Err(format!(
                "no write handler `{handler}` (add, set, remove, ctrl)"
            )),
        }
    }

    /// Click's `lookup` read handler: the output for `addr`, followed by
    /// the gateway if the route has one; -1 when no route matches.
    pub fn lookup_text(&self, addr: &str) -> Result<String, String> {
        let a: std::net::Ipv4Addr = addr
            .trim()
            .parse()
            .map_err(|_| format!("`{}` is not an IPv4 address", addr.trim()))?;
        let groups = self.groups();
        let Some(group) = self
            .lpm
            .lookup(u32::from(a))
            .and_then(|nh| groups.get(nh.0 as usize))
        else {
            return Ok("-1".into());
        };
        let hop = &group[0];
        Ok(match gateway_v4(hop) {
            Some(gw) => format!("{} {gw}", hop.output),
            None => hop.output.to_string(),
        })
    }
}

impl<T: Lpm6Update + ?Sized> RouteTable<T> {
    /// Handles `add`, `set` and `remove` for IPv6 routes.
    pub fn handle6(&self, handler: &str, value: &str) -> Result<(), String> {
        match handler {
            "add" | "set" => {
                let r = parse_one(value)?;
                self.set_route6(r.prefix, &r.hops)
            }
            "remove" => {
                let RoutePrefix::V6(p) = parse_prefix(value)? else {
                    return Err("IPv4 prefix in an IPv6 table".into());
                };
                let mut guard = self.routes6.lock().unwrap_or_else(|e| e.into_inner());
                let routes = guard.map();
                match self.lpm.remove(p).map_err(|e| e.to_string())? {
                    Some(_) => {
                        self.unbind(routes, &p);
                        Ok(())
                    }
                    None => Err(format!("{value}: no such route")),
                }
            }
            _ => Err(format!("no write handler `{handler}` (add, set, remove)")),
        }
    }
}

fn parse_one(text: &str) -> Result<Route, String> {
    source::text::parse_line(&click_route_text(text))?.ok_or_else(|| "no route given".to_string())
}

fn parse_prefix(text: &str) -> Result<RoutePrefix, String> {
    // A prefix alone is a route line without its output: reuse the parser.
    let first = text.split_whitespace().next().unwrap_or("");
    Ok(parse_one(&format!("{first} 0"))?.prefix)
}

/// Mixes words into a nonzero 32-bit hash.
#[inline]
fn mix(words: &[u32]) -> u32 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for &w in words {
        h = (h ^ u64::from(w)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 32;
    }
    (h as u32) | 1
}

/// A flow hash of an IPv4 packet (addresses, protocol, and ports of first
/// fragments) or an IPv6 packet (addresses and flow label, RFC 6438; with
/// a zero label, next header and the ports of a TCP, UDP or SCTP header
/// right after the IPv6 header), for choosing among equal-cost paths when
/// the device gave none. Kept in the packet's annotation so later choices
/// agree.
#[inline]
pub fn flow_hash(p: &mut Packet) -> u32 {
    if p.anno().flow_hash != 0 {
        return p.anno().flow_hash;
    }
    let ip = p.l3_bytes();
    let h = match ip.first().map(|b| b >> 4) {
        Some(6) if ip.len() >= 40 => {
            let mut words = [0u32; 10];
            for (w, c) in words.iter_mut().zip(ip[8..40].chunks_exact(4)) {
                *w = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
            }
            let label = u32::from_be_bytes([0, ip[1] & 0x0f, ip[2], ip[3]]);
            if label != 0 {
                words[8] = label;
            } else {
                words[8] = u32::from(ip[6]) << 24;
                if matches!(ip[6], 6 | 17 | 132) && ip.len() >= 44 {
                    words[9] = u32::from_be_bytes([ip[40], ip[41], ip[42], ip[43]]);
                }
            }
            mix(&words)
        }
        _ => flow_hash4(p),
    };
    p.anno_mut().flow_hash = h;
    h
}

#[inline]
fn flow_hash4(p: &Packet) -> u32 {
    match p.network_header() {
        Some(ip) if ip.len() >= 20 && ip[0] >> 4 == 4 => {
            let hl = usize::from(ip[0] & 0x0f) * 4;
            let mut words = [0u32; 4];
            words[0] = u32::from_be_bytes([ip[12], ip[13], ip[14], ip[15]]);
            words[1] = u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]);
            words[2] = u32::from(ip[9]);
            let first = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff == 0;
            if first && matches!(ip[9], 6 | 17 | 132) && ip.len() >= hl + 4 {
                words[3] = u32::from_be_bytes([ip[hl], ip[hl + 1], ip[hl + 2], ip[hl + 3]]);
            }
            mix(&words)
        }
        _ => 1,
    }
}

/// The hop of `group` a packet with flow hash `h` takes.
#[inline(always)]
pub fn pick(group: &[Hop], h: u32) -> &Hop {
    &group[((u64::from(h) * group.len() as u64) >> 32) as usize]
}

/// A gateway as an IPv4 address, if it is one.
#[inline(always)]
pub fn gateway_v4(h: &Hop) -> Option<std::net::Ipv4Addr> {
    match h.gateway {
        Some(IpAddr::V4(a)) if !a.is_unspecified() => Some(a),
        _ => None,
    }
}

/// The IPv6 gateway of a hop, `None` for a direct route (no gateway, a
/// gateway of `::`, or an IPv4 one): IPv6 lookups then leave the packet's
/// destination as its next hop.
#[inline]
pub fn gateway_v6(h: &Hop) -> Option<std::net::Ipv6Addr> {
    match h.gateway {
        Some(IpAddr::V6(a)) if !a.is_unspecified() => Some(a),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The general reader's route for one argument, as the one pass
    /// gives it when it has one hop.
    fn general(text: &str) -> Option<(Prefix4, Hop)> {
        match source::text::parse_line(&click_route_text(text))
            .ok()
            .flatten()?
        {
            Route {
                prefix: RoutePrefix::V4(p),
                hops,
            } if hops.len() == 1 => Some((p, hops[0])),
            r => panic!("{text}: read as {r:?}, not one IPv4 hop"),
        }
    }

    /// What the general path (a hop list per route, canonicalized, then
    /// interned) makes of `routes`.
    fn interned_generally(routes: &ParsedRoutes) -> source::InternedRoutes {
        let mut table = source::RouteTable::new();
        for r in routes.clone().into_routes() {
            table.push(r);
        }
        table.canonicalize(source::Duplicates::Merge);
        table.intern()
    }

    #[test]
    fn the_one_pass_reader_reads_what_the_general_one_reads() {
        for text in [
            "1.0.0.0/16 10.0.1.1 1",
            "18.26.4.9/16 4.0.0.4 0",
            "0.0.0.0/0 7",
            "255.255.255.255/32 0.0.0.0 4294967295",
            "  10.1.2.3/8\t\t3  ",
            "1.2.3.4/24 007",
        ] {
            let fast = fast_v4_route(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(Some(fast), general(text), "{text}");
        }
        // Everything else is left to the general reader.
        for text in [
            "18.26/16 4.0.0.4 0",
            "10.0.0.0/255.0.0.0 1",
            "10.0.0.1 2",
            "10.0.0.0/8 - 1",
            "10.0.0.0/08 1",
            "10.0.0.0/33 1",
            "010.0.0.0/8 1",
            "256.0.0.0/8 1",
            "1.2.3.4/24 10.0.0.1",
            "1.2.3.4/24 10.0.0.1 1 2",
            "1.2.3.4/24 4294967296",
            "1.2.3.4/24 1x",
            "1.2.3.4/24",
            "2001:db8::/32 1",
            "1.2.3.4/24 1 # note",
            "1.2.3.4567/8 1",
        ] {
            assert_eq!(fast_v4_route(text), None, "{text}");
        }
    }

    proptest! {
        /// Any argument of digits, dots, slashes and blanks: when the one
        /// pass reads it, the general reader reads the same route.
        #[test]
        fn the_one_pass_reader_agrees_on_any_text(text in "[0-9./ \t-]{0,40}") {
            if let Some(fast) = fast_v4_route(&text) {
                prop_assert_eq!(Some(fast), general(&text));
            }
        }

        /// Well-formed routes are all read in one pass, as the general
        /// reader reads them.
        #[test]
        fn well_formed_routes_take_the_one_pass(
            a in any::<u32>(),
            len in 0u8..=32,
            gw in proptest::option::of(any::<u32>()),
            out in any::<u32>(),
        ) {
            let gw = gw.map(|g| format!("{} ", std::net::Ipv4Addr::from(g))).unwrap_or_default();
            let text = format!("{}/{len} {gw}{out}", std::net::Ipv4Addr::from(a));
            let fast = fast_v4_route(&text);
            prop_assert!(fast.is_some(), "{}", text);
            prop_assert_eq!(fast, general(&text));
        }

        /// Single-hop IPv4 routes with no prefix twice are interned
        /// without hop lists exactly as the general path interns them
        /// (same order, same group numbers; up to 32 hops, past the 16
        /// found by a scan); with a prefix twice they are
        /// left to it.
        #[test]
        fn single_hop_routes_intern_as_the_general_path_does(
            routes in proptest::collection::vec(
                (0u32..64, 20u8..=24, proptest::option::of(0u32..3), 0u32..8),
                0..200,
            ),
        ) {
            let mut parsed = ParsedRoutes::default();
            for &(a, len, gw, output) in &routes {
                parsed.push_single4(
                    Prefix4::new(0x0a00_0000 | a << 8, len),
                    Hop {
                        gateway: gw.map(|g| IpAddr::from([10, 9, 9, g as u8])),
                        output,
                    },
                );
            }
            let general = interned_generally(&parsed);
            let mut prefixes: Vec<Prefix4> = parsed.single4.iter().map(|r| r.0).collect();
            prefixes.sort();
            let twice = prefixes.windows(2).any(|w| w[0] == w[1]);
            match intern_single4(parsed.clone()) {
                Ok(fast) => {
                    prop_assert!(!twice);
                    prop_assert_eq!(fast, general);
                }
                Err(back) => {
                    prop_assert!(twice);
                    prop_assert_eq!(back.single4_len(), parsed.single4_len());
                }
            }
        }
    }

    fn table(routes: &str) -> RouteTable<bricks_lpm::Dir24_8> {
        let routes: Vec<Route> = routes.lines().map(|l| parse_one(l).unwrap()).collect();
        build_v4(routes, 2, |r| {
            bricks_lpm::Dir24_8::build(r, DEFAULT_MEMORY).map(Box::new)
        })
        .unwrap()
    }

    #[test]
    fn an_observer_gets_the_routes_then_every_change_in_order() {
        use std::net::Ipv4Addr;
        let t = table("10.0.0.0/8 0\n0.0.0.0/0 10.0.0.1 1");
        let seen: Arc<Mutex<Vec<RouteChange>>> = Arc::default();
        let s = seen.clone();
        let mut now = t.observe_v4(Arc::new(move |c| s.lock().unwrap().push(c.clone())));
        // A second follower (a second FASTPATH interface) is told too.
        let second: Arc<Mutex<usize>> = Arc::default();
        let n = second.clone();
        assert_eq!(
            t.observe_v4(Arc::new(move |_| *n.lock().unwrap() += 1))
                .len(),
            2
        );
        now.sort_by_key(|c| format!("{c:?}"));
        let ten = Ipv4Addr::new(10, 0, 0, 0);
        let gw = Ipv4Addr::new(10, 0, 0, 1);
        assert_eq!(
            now,
            vec![
                RouteChange::Set(Ipv4Addr::UNSPECIFIED, 0, vec![(1, Some(gw))]),
                RouteChange::Set(ten, 8, vec![(0, None)]),
            ]
        );
        t.handle("add", "192.168.0.0/16 1").unwrap();
        assert!(t.handle("add", "10.0.0.0/8 1").is_err(), "add refuses");
        t.handle("set", "10.0.0.0/8 10.0.0.1 1").unwrap();
        t.handle("remove", "192.168.0.0/16").unwrap();
        let p = RoutePrefix::V4(Prefix4 {
            addr: 0x0b00_0000,
            len: 8,
        });
        t.set_route(
            p,
            &[
                Hop {
                    gateway: Some(IpAddr::V4(gw)),
                    output: 0,
                },
                Hop {
                    gateway: Some(IpAddr::V4(gw)),
                    output: 1,
                },
            ],
        )
        .unwrap();
        t.remove_route(p).unwrap();
        let eleven = Ipv4Addr::new(11, 0, 0, 0);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                RouteChange::Set(Ipv4Addr::new(192, 168, 0, 0), 16, vec![(1, None)]),
                RouteChange::Set(ten, 8, vec![(1, Some(gw))]),
                RouteChange::Remove(Ipv4Addr::new(192, 168, 0, 0), 16),
                RouteChange::Set(eleven, 8, vec![(0, Some(gw)), (1, Some(gw))]),
                RouteChange::Remove(eleven, 8),
            ],
            "the refused add told nothing"
        );
        assert_eq!(*second.lock().unwrap(), 5);
    }

    fn via(gw: u32, output: u32) -> Vec<Hop> {
        vec![Hop {
            gateway: Some(IpAddr::V4(gw.into())),
            output,
        }]
    }

    fn p4(s: &str) -> RoutePrefix {
        parse_prefix(s).unwrap()
    }

    /// A one-hop group's word says what `gateway_v4` and the hop's
    /// output say; a group of several hops has none.
    #[test]
    fn v4_words_agree_with_the_hops() {
        let t = table("");
        let v6 = vec![Hop {
            gateway: Some(IpAddr::V6("fe80::1".parse().unwrap())),
            output: 1,
        }];
        let direct = vec![Hop {
            gateway: None,
            output: 1,
        }];
        let unspecified = via(0, 0);
        let ecmp = [via(0x0a00_0001, 0), via(0x0a00_0002, 1)].concat();
        let top = via(u32::MAX, 1);
        for (i, hops) in [&v6, &direct, &unspecified, &ecmp, &top]
            .into_iter()
            .enumerate()
        {
            t.set_route(p4(&format!("10.{i}.0.0/16")), hops).unwrap();
        }
        let groups = t.groups();
        assert_eq!(groups.len(), groups.v4_words().len());
        for (g, &w) in groups.iter().zip(groups.v4_words()) {
            if g.len() == 1 {
                assert_ne!(w, V4_MANY, "{g:?}");
                assert_eq!((w >> 32) as u32, g[0].output, "{g:?}");
                assert_eq!(
                    (w as u32).to_ne_bytes(),
                    gateway_v4(&g[0]).map_or([0; 4], |g| g.octets()),
                    "{g:?}"
                );
            } else {
                assert_eq!(w, V4_MANY, "{g:?}");
            }
        }
    }

    #[test]
    fn v6_words_agree_with_the_hops() {
        let hop = |gateway: Option<IpAddr>, output| Hop { gateway, output };
        let v6 = |s: &str| Some(IpAddr::V6(s.parse().unwrap()));
        let cases: Vec<Arc<[Hop]>> = vec![
            vec![hop(v6("fe80::1"), 1)].into(),
            vec![hop(v6("::"), 2)].into(),
            vec![hop(None, 0)].into(),
            vec![hop(Some(IpAddr::V4("10.0.0.1".parse().unwrap())), 1)].into(),
            vec![hop(v6("2001:db8::1"), 0), hop(v6("2001:db8::2"), 1)].into(),
        ];
        let groups = Groups::new(cases);
        let fe80 = u128::from_ne_bytes("fe80::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
        let want = [
            V6Word {
                gateway: fe80,
                output: 1,
            },
            V6Word {
                gateway: 0,
                output: 2,
            },
            V6Word {
                gateway: 0,
                output: 0,
            },
            V6Word {
                gateway: 0,
                output: 1,
            },
            V6Word {
                gateway: 0,
                output: V6_MANY,
            },
        ];
        assert_eq!(groups.v6_words(), &want);
        for (g, w) in groups.iter().zip(groups.v6_words()) {
            if let [h] = &g[..] {
                assert_eq!(
                    w.gateway.to_ne_bytes(),
                    gateway_v6(h).map_or([0; 16], |g| g.octets()),
                    "{g:?}"
                );
            }
        }
    }

    #[test]
    fn groups_no_route_uses_are_freed_and_taken_again() {
        let t = table("");
        t.set_grace(std::time::Duration::ZERO);
        let flapping = p4("10.0.0.0/8");
        let steady = p4("192.0.2.0/24");
        t.set_route(steady, &via(0x0a63_0001, 1)).unwrap();
        for i in 0..10_000u32 {
            t.set_route(flapping, &via(0x0b00_0000 + i, i % 2)).unwrap();
            assert_eq!(t.groups_in_use(), 2);
        }
        // The steady route's group, the flapping one's current group and
        // the one it left last.
        assert!(t.groups().len() <= 3, "{} groups", t.groups().len());
        assert_eq!(t.lookup_text("10.1.2.3").unwrap(), "1 11.0.39.15");
        assert_eq!(t.lookup_text("192.0.2.1").unwrap(), "1 10.99.0.1");
        t.remove_route(flapping).unwrap();
        assert_eq!(t.groups_in_use(), 1);
        // A handler's route and a removal count the same.
        t.handle("add", "10.0.0.0/8 10.7.7.7 0").unwrap();
        t.handle("set", "10.0.0.0/8 10.7.7.8 0").unwrap();
        assert_eq!(t.groups_in_use(), 2);
        t.handle("remove", "10.0.0.0/8").unwrap();
        assert_eq!(t.groups_in_use(), 1);
        assert_eq!(t.groups().len(), 3);
    }

    #[test]
    fn a_freed_index_waits_out_its_grace() {
        let t = table("");
        let p = p4("10.0.0.0/8");
        for i in 0..100u32 {
            t.set_route(p, &via(0x0b00_0000 + i, 0)).unwrap();
        }
        assert_eq!(t.groups_in_use(), 1);
        // Within the grace every new group took a new index.
        assert_eq!(t.groups().len(), 100);
    }

    #[test]
    fn configured_routes_keep_their_groups() {
        let t = table("10.0.0.0/8 10.9.9.9 1");
        t.keep_configured();
        t.set_grace(std::time::Duration::ZERO);
        let p = p4("10.0.0.0/8");
        t.set_route(p, &via(0x0b00_0001, 0)).unwrap();
        t.remove_route(p).unwrap();
        assert_eq!(t.lookup_text("10.1.1.1").unwrap(), "1 10.9.9.9");
        // The learnt route's group is free; a new one takes its index and
        // the configured route's group stays.
        t.set_route(p4("172.16.0.0/12"), &via(0x0b00_0002, 0))
            .unwrap();
        assert_eq!(t.groups().len(), 2);
        assert_eq!(t.lookup_text("10.1.1.1").unwrap(), "1 10.9.9.9");
        assert_eq!(t.lookup_text("172.16.0.1").unwrap(), "0 11.0.0.2");
    }

    #[test]
    fn host_bits_are_cleared_as_click_does() {
        assert_eq!(
            click_masked("18.26.0/12 4.0.0.4 0").as_deref(),
            Some("18.16.0.0/12 4.0.0.4 0")
        );
        assert_eq!(
            click_masked("10.1.2.3/255.255.0.0 1").as_deref(),
            Some("10.1.0.0/255.255.0.0 1")
        );
        assert_eq!(click_masked("10.0.0.0/8 1"), None);
        assert_eq!(click_masked("10.0.0.1/33 1"), None);
        assert_eq!(click_masked("2001:db8::1/32 1"), None);
        assert_eq!(click_route_text("10.0.0.1 2"), "10.0.0.1/32 2");
        let r = parse_one("18.26.0/12 4.0.0.4 0").unwrap();
        assert_eq!(r.prefix.to_string(), "18.16.0.0/12");
    }

    #[test]
    fn a_bare_destination_is_a_host_route() {
        assert_eq!(
            host_route("192.168.2.2 8").as_deref(),
            Some("192.168.2.2/32 8")
        );
        assert_eq!(
            host_route("  10.0.0.1 10.0.0.254 1").as_deref(),
            Some("10.0.0.1/32 10.0.0.254 1")
        );
        assert_eq!(
            host_route("2001:db8::1 3").as_deref(),
            Some("2001:db8::1/128 3")
        );
        assert_eq!(host_route("10.0.0.0/8 1"), None);
        assert_eq!(host_route("18.26/16 1"), None);
        assert_eq!(host_route(""), None);
        let span = bricks_config::Span::default();
        let r = parse_routes(&[("192.168.2.2 8", span)]).unwrap();
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn routes_of_both_readers_keep_the_order_given() {
        let span = bricks_config::Span::default();
        let texts = [
            "10.0.0.0/8 1",
            "11.0.0.0/8 2",
            "10.0.0.0/8 - 3",
            "10.0.0.0/8 4",
            "12.0.0.0/8 5",
        ];
        let with_spans: Vec<(&str, bricks_config::Span)> =
            texts.iter().map(|&t| (t, span)).collect();
        let outputs: Vec<u32> = parse_routes(&with_spans)
            .unwrap()
            .iter()
            .map(|r| r.hops[0].output)
            .collect();
        assert_eq!(outputs, [1, 2, 3, 4, 5]);
        // The ECMP group of 10/8 keeps its hops in that order too.
        let t = build_v4(parse_routes(&with_spans).unwrap(), 6, |r| {
            Ok(Box::new(bricks_lpm::Dir24_8::build(r, DEFAULT_MEMORY)?))
        })
        .unwrap();
        assert!(
            t.table_text()
                .starts_with("10.0.0.0/8\t-\t1\n10.0.0.0/8\t-\t3\n10.0.0.0/8\t-\t4\n"),
            "{}",
            t.table_text()
        );
    }
}
