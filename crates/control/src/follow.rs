//! From decoded messages to route-table changes: the state a route source
//! keeps between messages.
//!
//! A [`Follower`] reads the messages of one source (a kernel table, an FPM
//! stream) and keeps what the source has said: every candidate route per
//! prefix (the kernel may hold several for one prefix with different
//! metrics and forwards by the lowest), interface names by index, nexthop
//! objects by id. After each message it works out the route the prefix
//! should have in bricks (the lowest metric's, its interfaces mapped to
//! the outputs named in [`Filter::devices`]) and hands the change, if any,
//! to its [`RouteSink`].
//!
//! Every table here is bounded ([`Limits`]); a message past a bound is
//! skipped and counted, never grows memory without end.

use crate::netlink::{self, Message, NexthopMsg, NlHops, RouteMsg, NLM_F_REPLACE};
use crate::stats::{Kind, SourceStats};
use bricks_lpm::source::{Hop, Route, RoutePrefix};
use smallvec::SmallVec;
use std::collections::hash_map::Entry;
use std::sync::Arc;

/// The follower's maps: std's, with a faster seeded hash.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// Hops as the sink takes them, inline for one.
type Hops = SmallVec<[Hop; 1]>;

/// Where a source's routes go: a route table that takes whole routes and
/// withdrawals. Called from the source's own thread.
pub trait RouteSink: Send + 'static {
    /// Sets the route for `prefix` to `hops` (sorted, no duplicates),
    /// adding it or replacing the one there.
    fn set(&self, prefix: RoutePrefix, hops: &[Hop]) -> Result<(), String>;
    /// Withdraws the route for `prefix`.
    fn remove(&self, prefix: RoutePrefix) -> Result<(), String>;
}

/// Which routes of a source are taken, and where they go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// The routing table (`None`: every table).
    pub table: Option<u32>,
    /// Only routes installed by this protocol (`rtm_protocol`).
    pub protocol: Option<u8>,
    /// IPv4 routes.
    pub v4: bool,
    /// IPv6 routes.
    pub v6: bool,
    /// The interface name of each output, by output number: a route out of
    /// `devices[i]` leaves by output `i`. `None` maps every interface to
    /// output 0 (for inspection only: `bricks routes watch`).
    pub devices: Option<Vec<String>>,
}

impl Filter {
    /// The output for `name` (an interface, or a reject route's kind):
    /// the DEVICES entry naming it, or 0 without DEVICES.
    fn output(&self, name: &str) -> Option<u32> {
        match &self.devices {
            None => Some(0),
            Some(devs) => devs
                .iter()
                .position(|d| d.split('|').any(|alt| alt == name))
                .map(|i| i as u32),
        }
    }
}

/// Bounds on what a source may make the follower hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Prefixes.
    pub routes: usize,
    /// Candidate routes for one prefix (different metrics).
    pub candidates: usize,
    /// Interfaces known by index.
    pub links: usize,
    /// Nexthop objects.
    pub nexthops: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            routes: 4_000_000,
            candidates: 16,
            links: 65_536,
            nexthops: 1_000_000,
        }
    }
}

/// Called with every change a follower makes.
type Observer = Box<dyn FnMut(&Change) + Send>;

/// Reads the interfaces again (rtnetlink link messages).
type LinkReader = Box<dyn FnMut() -> Vec<u8> + Send>;

/// One route the source holds for a prefix.
#[derive(Debug, Clone)]
struct Candidate {
    metric: u32,
    hops: NlHops,
    nh_id: Option<u32>,
    /// A route that discards: `blackhole`, `unreachable` or `prohibit`
    /// (its hops are empty).
    reject: Option<&'static str>,
    /// The snapshot it was last seen in.
    generation: u64,
}

/// What a follower knows of one prefix: one map entry, so that a change
/// costs one lookup in a table of a million prefixes.
#[derive(Debug, Default)]
struct PrefixState {
    /// Every route the source holds for the prefix (one per metric).
    candidates: SmallVec<[Candidate; 1]>,
    /// What the sink holds for the prefix from this source.
    installed: Option<Hops>,
}

/// An interface the source named.
#[derive(Debug)]
struct Link {
    name: String,
    /// Its output, worked out once when the interface is learnt (`None`:
    /// none of DEVICES).
    output: Option<u32>,
}

/// A source's state; see the module documentation.
pub struct Follower<S: RouteSink> {
    filter: Filter,
    limits: Limits,
    sink: S,
    stats: Arc<SourceStats>,
    links: HashMap<u32, Link>,
    nexthops: HashMap<u32, NexthopMsg>,
    prefixes: HashMap<RoutePrefix, Box<PrefixState>>,
    /// Prefixes with a route in the sink from this source.
    installed: usize,
    generation: u64,
    /// Called for every change made (for `bricks routes watch`).
    observer: Option<Observer>,
    /// Reads the interfaces again (rtnetlink messages) when a route names
    /// an unknown one, at most once a second.
    refresh: Option<(LinkReader, Option<std::time::Instant>)>,
    /// IPv6 routes come as the kernel notifies them: a route added beside
    /// one of the same metric without `NLM_F_REPLACE` is another path of
    /// it, and a deletion naming paths takes only those. `false` when
    /// every message states a prefix's whole route (FPM).
    ipv6_siblings: bool,
}

/// A change a follower made to its sink.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The prefix now goes by these hops (interface names beside them).
    Set(Route, Vec<String>),
    /// The prefix has no route from this source any more.
    Removed(RoutePrefix),
}

impl<S: RouteSink> Follower<S> {
    /// A follower that sends changes to `sink` and counts in `stats`.
    pub fn new(filter: Filter, sink: S, stats: Arc<SourceStats>) -> Follower<S> {
        Follower {
            filter,
            limits: Limits::default(),
            sink,
            stats,
            links: HashMap::default(),
            nexthops: HashMap::default(),
            prefixes: HashMap::default(),
            installed: 0,
            generation: 0,
            observer: None,
            refresh: None,
            ipv6_siblings: true,
        }
    }

    /// Takes every `RTM_NEWROUTE` as the prefix's whole route and every
    /// `RTM_DELROUTE` as its withdrawal, IPv6 as IPv4: zebra's FPM stream
    /// sends a route whole (all its paths in `RTA_MULTIPATH` or one
    /// nexthop group) and an update as a delete of the prefix and an add
    /// in one frame, but sets `NLM_F_REPLACE` on IPv6 adds only when its
    /// kernel wants it. Read with the kernel's rules, an IPv6 route whose
    /// paths changed while zebra was away would keep the old paths beside
    /// the new ones after the replay.
    pub fn whole_routes(mut self) -> Self {
        self.ipv6_siblings = false;
        self
    }

    /// Sets the bounds.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Calls `f` with every change made.
    pub fn observe(&mut self, f: impl FnMut(&Change) + Send + 'static) {
        self.observer = Some(Box::new(f));
    }

    /// Reads interface names with `f` (rtnetlink link messages) when a
    /// route names an interface index not seen yet.
    pub fn refresh_links_with(&mut self, f: impl FnMut() -> Vec<u8> + Send + 'static) {
        self.refresh = Some((Box::new(f), None));
    }

    /// The counters.
    pub fn stats(&self) -> &Arc<SourceStats> {
        &self.stats
    }

    /// Routes this source has in the sink now.
    pub fn installed(&self) -> usize {
        self.installed
    }

    /// Reads every message of a buffer (a netlink datagram or an FPM
    /// frame's payload). A message that cannot be read is counted and
    /// skipped; one whose length is broken ends the buffer.
    pub fn feed(&mut self, buf: &[u8]) -> FeedResult {
        let mut result = FeedResult::default();
        for m in netlink::messages(buf) {
            let raw = match m {
                Ok(raw) => raw,
                Err(e) => {
                    self.stats.skip(Kind::Malformed, &e.to_string());
                    break;
                }
            };
            if raw.flags & netlink::NLM_F_DUMP_INTR != 0 {
                result.interrupted = true;
            }
            match netlink::decode(raw) {
                Ok(Message::Done) => result.done = true,
                Ok(Message::Error(e)) => {
                    if e != 0 {
                        result.error = Some(e);
                    }
                }
                Ok(msg) => self.message(msg),
                Err(e) => self.stats.skip(Kind::Malformed, &e.to_string()),
            }
        }
        result
    }

    /// Acts on one decoded message.
    pub fn message(&mut self, msg: Message<'_>) {
        self.stats.count(Kind::Messages);
        match msg {
            Message::Route(r) => self.route(r),
            Message::Link {
                index,
                name,
                deleted,
            } => {
                if deleted {
                    self.links.remove(&index);
                    self.link_gone(index);
                } else if let Some(name) = name {
                    if self.links.len() < self.limits.links || self.links.contains_key(&index) {
                        let link = Link {
                            output: self.filter.output(name),
                            name: name.to_string(),
                        };
                        self.links.insert(index, link);
                    } else {
                        self.stats.skip(Kind::Bound, "too many interfaces");
                    }
                }
            }
            Message::Nexthop(n) => self.nexthop(n),
            Message::Other(ty) => self
                .stats
                .skip(Kind::UnknownType, &format!("message type {ty} ignored")),
            Message::Done | Message::Error(_) => {}
        }
    }

    /// Starts a snapshot (a dump, an FPM peer's replay): routes not seen
    /// again before [`Follower::end_snapshot`] are withdrawn then.
    pub fn begin_snapshot(&mut self) {
        self.generation += 1;
    }

    /// Ends a snapshot: withdraws every candidate it did not repeat.
    pub fn end_snapshot(&mut self) {
        let g = self.generation;
        let mut stale = Vec::new();
        for (p, st) in self.prefixes.iter_mut() {
            let before = st.candidates.len();
            st.candidates.retain(|c| c.generation >= g);
            if st.candidates.len() != before {
                stale.push(*p);
            }
        }
        for p in stale {
            self.update(p);
        }
    }

    fn wanted(&self, r: &RouteMsg) -> bool {
        let family = match r.prefix {
            RoutePrefix::V4(_) => self.filter.v4,
            // Link-local and multicast destinations are never forwarded
            // (RFC 4291 section 2.5.6, RFC 4007 section 5): the routes
            // every interface has for fe80::/64 (main table, FPM) and the
            // multicast ones stay the host's.
            RoutePrefix::V6(p) => self.filter.v6 && !link_scoped(p),
        };
        family
            && self.filter.table.is_none_or(|t| t == r.table)
            && self.filter.protocol.is_none_or(|p| p == r.protocol)
    }

    fn route(&mut self, r: RouteMsg) {
        if !self.wanted(&r) {
            self.stats.count(Kind::Filtered);
            return;
        }
        let p = r.prefix;
        let siblings = self.ipv6_siblings && matches!(p, RoutePrefix::V6(_));
        if r.delete {
            let (prefixes, mut cx) = self.parts();
            let Some(st) = prefixes.get_mut(&p) else {
                return;
            };
            let cs = &mut st.candidates;
            match cs.iter().position(|c| c.metric == r.metric) {
                // An IPv6 ECMP route loses one path at a time.
                Some(i) if siblings && !r.hops.is_empty() && cs[i].hops.len() > 1 => {
                    cs[i].hops.retain(|h| !r.hops.contains(h));
                    if cs[i].hops.is_empty() {
                        cs.remove(i);
                    }
                }
                Some(i) => {
                    cs.remove(i);
                }
                None => {}
            }
            let settled = settle(p, st, &mut cx);
            self.finish(p, settled);
            return;
        }
        if let Some(why) = r.unsupported {
            self.stats.skip(Kind::Unsupported, &format!("{p}: {why}"));
            return;
        }
        let reject = match r.kind {
            netlink::RTN_UNICAST => None,
            6 => Some("blackhole"),
            7 => Some("unreachable"),
            8 => Some("prohibit"),
            kind => {
                let what = match kind {
                    2 => "a local route",
                    3 => "a broadcast route",
                    5 => "a multicast route",
                    _ => "a route of another type",
                };
                self.stats.skip(Kind::Unsupported, &format!("{p}: {what}"));
                return;
            }
        };
        let full = self.prefixes.len() >= self.limits.routes;
        let (limits, g) = (self.limits, self.generation);
        let (prefixes, mut cx) = self.parts();
        // One lookup of the prefix for the whole change: in a table of a
        // million prefixes each lookup is a cache miss.
        let st = match prefixes.entry(p) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(_) if full => {
                cx.stats.skip(Kind::Bound, "route limit reached");
                return;
            }
            Entry::Vacant(v) => v.insert(Box::default()),
        };
        let cs = &mut st.candidates;
        match cs.iter().position(|c| c.metric == r.metric) {
            // An IPv6 route added beside one of the same metric is another
            // path of it (the kernel's ECMP siblings, `ip -6 route append`
            // or a second `add`); `replace` starts over.
            Some(i)
                if siblings
                    && reject.is_none()
                    && cs[i].reject.is_none()
                    && r.flags & NLM_F_REPLACE == 0
                    && cs[i].nh_id.is_none()
                    && r.nh_id.is_none() =>
            {
                for h in r.hops {
                    if !cs[i].hops.contains(&h) && cs[i].hops.len() < netlink::MAX_HOPS {
                        cs[i].hops.push(h);
                    }
                }
                cs[i].generation = g;
            }
            Some(i) => {
                cs[i] = Candidate {
                    metric: r.metric,
                    hops: if reject.is_some() {
                        NlHops::new()
                    } else {
                        r.hops
                    },
                    nh_id: r.nh_id.filter(|_| reject.is_none()),
                    reject,
                    generation: g,
                }
            }
            None if cs.len() >= limits.candidates => {
                cx.stats.skip(Kind::Bound, "too many routes for one prefix");
            }
            None => cs.push(Candidate {
                metric: r.metric,
                hops: if reject.is_some() {
                    NlHops::new()
                } else {
                    r.hops
                },
                nh_id: r.nh_id.filter(|_| reject.is_none()),
                reject,
                generation: g,
            }),
        }
        let settled = settle(p, st, &mut cx);
        self.finish(p, settled);
    }

    /// A deleted link takes its IPv4 routes with it: the kernel flushes
    /// them without a notification for each (IPv6 sends one per route).
    /// Off the fast path: links go away rarely, and the walk is bounded
    /// by the route limit.
    fn link_gone(&mut self, index: u32) {
        let mut touched = Vec::new();
        for (p, st) in self.prefixes.iter_mut() {
            if !matches!(p, RoutePrefix::V4(_)) {
                continue;
            }
            let before = st.candidates.len();
            st.candidates
                .retain(|c| !c.hops.iter().any(|h| h.ifindex == index));
            if st.candidates.len() != before {
                touched.push(*p);
            }
        }
        for p in touched {
            self.update(p);
        }
    }

    fn nexthop(&mut self, n: NexthopMsg) {
        let id = n.id;
        if n.delete {
            self.nexthops.remove(&id);
        } else if self.nexthops.len() < self.limits.nexthops || self.nexthops.contains_key(&id) {
            self.nexthops.insert(id, n);
        } else {
            self.stats.skip(Kind::Bound, "too many nexthop objects");
            return;
        }
        // Routes that use it change with it. Off the fast path: nexthop
        // changes are rare and a route names its object directly.
        let users: Vec<RoutePrefix> = self
            .prefixes
            .iter()
            .filter(|(_, st)| st.candidates.iter().any(|c| c.nh_id == Some(id)))
            .map(|(p, _)| *p)
            .collect();
        for p in users {
            self.update(p);
        }
    }

    /// The prefixes, and the rest of the follower borrowed apart from
    /// them for [`settle`].
    fn parts(&mut self) -> (&mut HashMap<RoutePrefix, Box<PrefixState>>, Ctx<'_, S>) {
        (
            &mut self.prefixes,
            Ctx {
                view: View {
                    filter: &self.filter,
                    links: &self.links,
                    nexthops: &self.nexthops,
                    names: self.observer.is_some(),
                },
                sink: &self.sink,
                stats: &self.stats,
                observer: &mut self.observer,
                installed: &mut self.installed,
                last_refresh: self.refresh.as_ref().map(|(_, last)| *last),
            },
        )
    }

    /// Reads the interfaces again (a route came before its interface's
    /// message); at most once a second, see `Ctx::refresh_due`.
    fn refresh_links(&mut self) {
        if let Some((f, last)) = &mut self.refresh {
            let bytes = f();
            *last = Some(std::time::Instant::now());
            self.feed(&bytes);
        }
    }

    /// Brings the sink's route for `p` in line with its candidates.
    fn update(&mut self, p: RoutePrefix) {
        let (prefixes, mut cx) = self.parts();
        if let Some(st) = prefixes.get_mut(&p) {
            let settled = settle(p, st, &mut cx);
            self.finish(p, settled);
        }
    }

    /// Does what [`settle`] left to do for `p`.
    fn finish(&mut self, p: RoutePrefix, settled: Settled) {
        match settled {
            Settled::Kept => {}
            Settled::Empty => {
                self.prefixes.remove(&p);
            }
            Settled::UnknownLink => {
                self.refresh_links();
                self.update(p);
            }
        }
    }
}

/// Whether an IPv6 prefix lies inside fe80::/10 (link-local unicast) or
/// ff00::/8 (multicast): destinations no router forwards by a route.
fn link_scoped(p: bricks_lpm::Prefix6) -> bool {
    let top = (p.addr >> 112) as u16;
    (p.len >= 10 && top & 0xffc0 == 0xfe80) || (p.len >= 8 && top & 0xff00 == 0xff00)
}

/// A follower's fields but its prefixes, borrowed while one prefix's
/// entry is.
struct Ctx<'a, S> {
    view: View<'a>,
    sink: &'a S,
    stats: &'a SourceStats,
    observer: &'a mut Option<Observer>,
    installed: &'a mut usize,
    /// When the interfaces were last read again, if a reader is set.
    last_refresh: Option<Option<std::time::Instant>>,
}

impl<S> Ctx<'_, S> {
    /// The interfaces may be read again: a reader is set and the last
    /// reading is a second old.
    fn refresh_due(&self) -> bool {
        self.last_refresh
            .is_some_and(|last| last.is_none_or(|t| t.elapsed().as_secs() >= 1))
    }
}

/// What [`settle`] left to its caller.
enum Settled {
    /// The entry stays.
    Kept,
    /// The prefix has no candidates and nothing in the sink: drop the entry.
    Empty,
    /// The best route names an interface not known yet, and the
    /// interfaces may be read again: read them, then settle again.
    UnknownLink,
}

/// Brings the sink's route for `p` in line with its candidates `st`.
fn settle<S: RouteSink>(p: RoutePrefix, st: &mut PrefixState, cx: &mut Ctx<'_, S>) -> Settled {
    let view = &cx.view;
    let wanted = match st.candidates.iter().min_by_key(|c| c.metric) {
        None => None,
        Some(best) => match view.resolve(best).and_then(|r| view.map(r)) {
            Ok(w) => Some(w),
            Err((Kind::UnknownInterface, _)) if cx.refresh_due() && view.unknown_link(best) => {
                return Settled::UnknownLink;
            }
            Err((kind, why)) => {
                cx.stats.skip(kind, &format!("{p}: {why}"));
                None
            }
        },
    };
    match wanted {
        Some((mut hops, mut names)) => {
            sort_hops(&mut hops, &mut names);
            if st.installed.as_deref() == Some(&hops[..]) {
                return Settled::Kept;
            }
            match cx.sink.set(p, &hops) {
                Ok(()) => {
                    cx.stats.count(Kind::Added);
                    if let Some(f) = cx.observer {
                        let route = Route {
                            prefix: p,
                            hops: hops.to_vec(),
                        };
                        f(&Change::Set(route, names));
                    }
                    if st.installed.replace(hops).is_none() {
                        *cx.installed += 1;
                    }
                }
                Err(e) => cx.stats.skip(Kind::Refused, &format!("{p}: {e}")),
            }
            Settled::Kept
        }
        None => {
            if st.installed.take().is_some() {
                *cx.installed -= 1;
                match cx.sink.remove(p) {
                    Ok(()) => {
                        cx.stats.count(Kind::Removed);
                        if let Some(f) = cx.observer {
                            f(&Change::Removed(p));
                        }
                    }
                    Err(e) => cx.stats.skip(Kind::Refused, &format!("{p}: {e}")),
                }
            }
            if st.candidates.is_empty() {
                Settled::Empty
            } else {
                Settled::Kept
            }
        }
    }
}

/// What working out a route reads: the filter, interfaces, nexthop
/// objects, and whether names are wanted (someone observes).
struct View<'a> {
    filter: &'a Filter,
    links: &'a HashMap<u32, Link>,
    nexthops: &'a HashMap<u32, NexthopMsg>,
    names: bool,
}

/// Why a prefix's best route cannot be set: the counter and the reason.
type Refusal = (Kind, String);

impl View<'_> {
    /// Whether `c`'s hops name an interface index not known.
    fn unknown_link(&self, c: &Candidate) -> bool {
        match self.resolve(c) {
            Ok(Resolved::Hops(hops)) => hops.iter().any(|h| !self.links.contains_key(&h.ifindex)),
            _ => false,
        }
    }

    /// Where a candidate goes: its own hops, its nexthop object's, or a
    /// discard (a reject route, or a blackhole nexthop object).
    fn resolve(&self, c: &Candidate) -> Result<Resolved, Refusal> {
        let unsupported = |why: &str| (Kind::Unsupported, why.to_string());
        if let Some(kind) = c.reject {
            return Ok(Resolved::Reject(kind));
        }
        let Some(id) = c.nh_id else {
            return Ok(Resolved::Hops(c.hops.clone()));
        };
        let nh = self
            .nexthops
            .get(&id)
            .ok_or_else(|| unsupported("an unknown nexthop object"))?;
        if nh.blackhole {
            return Ok(Resolved::Reject("blackhole"));
        }
        if let Some(h) = nh.hop {
            return Ok(Resolved::Hops(NlHops::from_elem(h, 1)));
        }
        let mut hops = NlHops::new();
        for m in &nh.group {
            match self.nexthops.get(m).and_then(|n| n.hop) {
                Some(h) => hops.push(h),
                None => return Err(unsupported("a nexthop group with an unknown member")),
            }
        }
        Ok(Resolved::Hops(hops))
    }

    /// Maps a resolved route to outputs: interfaces by their name in
    /// DEVICES, a reject route to the DEVICES entry naming its kind
    /// (`blackhole`, `unreachable`, `prohibit`). The names come too when
    /// someone observes the changes.
    fn map(&self, r: Resolved) -> Result<(Hops, Vec<String>), Refusal> {
        let mut names = Vec::new();
        let hops = match r {
            Resolved::Reject(kind) => {
                let output = self.filter.output(kind).ok_or_else(|| {
                    (
                        Kind::Unsupported,
                        format!("a {kind} route, and no output for `{kind}` in DEVICES"),
                    )
                })?;
                if self.names {
                    names.push(kind.to_string());
                }
                Hops::from_elem(
                    Hop {
                        gateway: None,
                        output,
                    },
                    1,
                )
            }
            Resolved::Hops(nl) => {
                let mut out = Hops::with_capacity(nl.len());
                for h in &nl {
                    let link = self.links.get(&h.ifindex).ok_or_else(|| {
                        (
                            Kind::UnknownInterface,
                            format!("interface index {} unknown", h.ifindex),
                        )
                    })?;
                    let output = link.output.ok_or_else(|| {
                        (
                            Kind::UnknownInterface,
                            format!("interface {} is none of DEVICES", link.name),
                        )
                    })?;
                    out.push(Hop {
                        gateway: h.gateway,
                        output,
                    });
                    if self.names {
                        names.push(link.name.clone());
                    }
                }
                if out.is_empty() {
                    return Err((Kind::UnknownInterface, "no outgoing interface".into()));
                }
                out
            }
        };
        Ok((hops, names))
    }
}

/// Sorts hops into the sink's order and drops repeats, each name kept
/// beside its hop.
fn sort_hops(hops: &mut Hops, names: &mut Vec<String>) {
    if names.is_empty() {
        hops.sort_unstable();
        hops.dedup();
        return;
    }
    let mut pairs: Vec<(Hop, String)> = hops.drain(..).zip(names.drain(..)).collect();
    pairs.sort_by_key(|p| p.0);
    pairs.dedup_by_key(|p| p.0);
    for (h, n) in pairs {
        hops.push(h);
        names.push(n);
    }
}

/// Where the best candidate of a prefix sends its packets.
enum Resolved {
    /// By these hops.
    Hops(NlHops),
    /// Nowhere: a `blackhole`, `unreachable` or `prohibit` route.
    Reject(&'static str),
}

/// What a buffer held besides routes.
#[derive(Debug, Default, Clone, Copy)]
pub struct FeedResult {
    /// `NLMSG_DONE`: a dump ended.
    pub done: bool,
    /// The kernel said a dump was interrupted by changes.
    pub interrupted: bool,
    /// An error answer to a request.
    pub error: Option<i32>,
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::netlink::tests::{msg, multipath4, route4};
    use crate::netlink::{RTM_DELROUTE, RTM_NEWLINK, RTM_NEWROUTE};
    use std::sync::Mutex;

    /// A sink that records into a map (the other modules' tests use it too).
    #[derive(Clone, Default)]
    pub(crate) struct MapSink(pub Arc<Mutex<HashMap<RoutePrefix, Vec<Hop>>>>);

    impl RouteSink for MapSink {
        fn set(&self, prefix: RoutePrefix, hops: &[Hop]) -> Result<(), String> {
            self.0.lock().unwrap().insert(prefix, hops.to_vec());
            Ok(())
        }
        fn remove(&self, p: RoutePrefix) -> Result<(), String> {
            self.0.lock().unwrap().remove(&p);
            Ok(())
        }
    }

    fn link(index: u32, name: &str) -> Vec<u8> {
        let mut fixed = [0u8; 16];
        fixed[4..8].copy_from_slice(&index.to_ne_bytes());
        let mut n = name.as_bytes().to_vec();
        n.push(0);
        msg(RTM_NEWLINK, 0, &fixed, &[(3, n)])
    }

    fn follower(devices: &[&str]) -> (Follower<MapSink>, MapSink) {
        let sink = MapSink::default();
        let mut f = Follower::new(
            Filter {
                table: Some(100),
                protocol: None,
                v4: true,
                v6: true,
                devices: Some(devices.iter().map(|s| s.to_string()).collect()),
            },
            sink.clone(),
            Arc::new(SourceStats::default()),
        );
        f.feed(&link(2, "r-eth0"));
        f.feed(&link(3, "r-eth1"));
        f.feed(&link(4, "lo"));
        (f, sink)
    }

    fn p(s: &str) -> RoutePrefix {
        bricks_lpm::source::parse_line(&format!("{s} 0"))
            .unwrap()
            .unwrap()
            .prefix
    }

    #[test]
    fn an_observer_sees_each_hop_beside_its_interface() {
        let (mut f, _) = follower(&["r-eth0", "r-eth1"]);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        f.observe(move |c| s.lock().unwrap().push(c.clone()));
        // In the sink's order (by gateway) r-eth0's hop comes first.
        f.feed(&multipath4(
            [192, 0, 2, 0],
            24,
            100,
            &[(3, [10, 0, 9, 2]), (2, [10, 0, 0, 2])],
        ));
        let seen = seen.lock().unwrap();
        let [Change::Set(r, names)] = seen.as_slice() else {
            panic!("{seen:?}")
        };
        let gw = |s: &str| Some(s.parse().unwrap());
        assert_eq!(
            r.hops,
            [
                Hop {
                    gateway: gw("10.0.0.2"),
                    output: 0
                },
                Hop {
                    gateway: gw("10.0.9.2"),
                    output: 1
                }
            ]
        );
        assert_eq!(names, &["r-eth0", "r-eth1"]);
    }

    #[test]
    fn routes_follow_adds_changes_and_deletes() {
        let (mut f, sink) = follower(&["r-eth0", "r-eth1"]);
        f.feed(&route4(
            RTM_NEWROUTE,
            [10, 9, 0, 0],
            16,
            Some([10, 0, 1, 2]),
            3,
            100,
            0,
        ));
        let got = sink
            .0
            .lock()
            .unwrap()
            .get(&p("10.9.0.0/16"))
            .cloned()
            .unwrap();
        assert_eq!(
            got,
            vec![Hop {
                gateway: Some("10.0.1.2".parse().unwrap()),
                output: 1
            }]
        );
        // Other tables are not followed.
        f.feed(&route4(RTM_NEWROUTE, [10, 8, 0, 0], 16, None, 3, 254, 0));
        assert!(!sink.0.lock().unwrap().contains_key(&p("10.8.0.0/16")));
        assert_eq!(f.stats().get(Kind::Filtered), 1);
        // A lower metric wins; its withdrawal brings the other back.
        f.feed(&route4(RTM_NEWROUTE, [10, 9, 0, 0], 16, None, 2, 100, 0));
        f.feed(&route4(
            RTM_NEWROUTE,
            [10, 9, 0, 0],
            16,
            Some([10, 0, 1, 3]),
            3,
            100,
            50,
        ));
        assert_eq!(sink.0.lock().unwrap()[&p("10.9.0.0/16")][0].output, 0);
        f.feed(&route4(RTM_DELROUTE, [10, 9, 0, 0], 16, None, 2, 100, 0));
        assert_eq!(
            sink.0.lock().unwrap()[&p("10.9.0.0/16")][0].gateway,
            Some("10.0.1.3".parse().unwrap())
        );
        f.feed(&route4(RTM_DELROUTE, [10, 9, 0, 0], 16, None, 3, 100, 50));
        assert!(sink.0.lock().unwrap().is_empty());
        assert_eq!(f.installed(), 0);
    }

    /// `ip route add blackhole|unreachable|prohibit PREFIX table 100`: no
    /// interface, only the type (byte 7 of the rtmsg).
    fn reject4(ty: u16, dst: [u8; 4], len: u8, kind: u8, metric: u32) -> Vec<u8> {
        let mut b = route4(ty, dst, len, None, 0, 100, metric);
        b[16 + 7] = kind;
        // Drop the RTA_OIF the builder wrote (8 bytes, the third
        // attribute after RTA_TABLE and RTA_DST), as the kernel sends none.
        let at = 16 + 12 + 8 + 8;
        b.drain(at..at + 8);
        let n = b.len() as u32;
        b[..4].copy_from_slice(&n.to_ne_bytes());
        b
    }

    #[test]
    fn reject_routes_go_to_their_named_output() {
        let (mut f, sink) = follower(&["r-eth0", "r-eth1", "blackhole|unreachable", "prohibit"]);
        f.feed(&route4(
            RTM_NEWROUTE,
            [10, 0, 0, 0],
            8,
            Some([10, 0, 1, 2]),
            3,
            100,
            0,
        ));
        f.feed(&reject4(RTM_NEWROUTE, [10, 66, 0, 0], 16, 6, 0));
        f.feed(&reject4(RTM_NEWROUTE, [10, 67, 0, 0], 16, 7, 0));
        f.feed(&reject4(RTM_NEWROUTE, [10, 68, 0, 0], 16, 8, 0));
        let at = |s: &str| sink.0.lock().unwrap().get(&p(s)).cloned();
        let discard = |output| {
            Some(vec![Hop {
                gateway: None,
                output,
            }])
        };
        assert_eq!(at("10.66.0.0/16"), discard(2));
        assert_eq!(at("10.67.0.0/16"), discard(2));
        assert_eq!(at("10.68.0.0/16"), discard(3));
        assert_eq!(at("10.0.0.0/8").unwrap()[0].output, 1);
        // A unicast route of a lower metric for the same prefix wins; its
        // withdrawal brings the blackhole back; the blackhole's own
        // withdrawal leaves the covering route.
        f.feed(&route4(
            RTM_NEWROUTE,
            [10, 66, 0, 0],
            16,
            Some([10, 0, 1, 9]),
            3,
            100,
            0,
        ));
        f.feed(&reject4(RTM_NEWROUTE, [10, 66, 0, 0], 16, 6, 10));
        assert_eq!(at("10.66.0.0/16").unwrap()[0].output, 1);
        f.feed(&route4(
            RTM_DELROUTE,
            [10, 66, 0, 0],
            16,
            Some([10, 0, 1, 9]),
            3,
            100,
            0,
        ));
        assert_eq!(at("10.66.0.0/16"), discard(2));
        f.feed(&reject4(RTM_DELROUTE, [10, 66, 0, 0], 16, 6, 10));
        assert_eq!(at("10.66.0.0/16"), None);
        // Without an output named for it, a reject route is skipped and
        // counted, never sent to an interface.
        let (mut g, sink) = follower(&["r-eth0", "r-eth1"]);
        g.feed(&reject4(RTM_NEWROUTE, [10, 66, 0, 0], 16, 6, 0));
        assert!(sink.0.lock().unwrap().is_empty());
        assert_eq!(g.stats().get(Kind::Unsupported), 1);
    }

    #[test]
    fn unknown_interfaces_are_skipped_and_counted() {
        let (mut f, sink) = follower(&["r-eth0"]);
        f.feed(&route4(RTM_NEWROUTE, [10, 9, 0, 0], 16, None, 3, 100, 0));
        f.feed(&route4(RTM_NEWROUTE, [10, 7, 0, 0], 16, None, 99, 100, 0));
        assert!(sink.0.lock().unwrap().is_empty());
        assert_eq!(f.stats().get(Kind::UnknownInterface), 2);
    }

    #[test]
    fn a_snapshot_withdraws_what_it_does_not_repeat() {
        let (mut f, sink) = follower(&["r-eth0", "r-eth1"]);
        f.feed(&route4(RTM_NEWROUTE, [10, 1, 0, 0], 16, None, 2, 100, 0));
        f.feed(&route4(RTM_NEWROUTE, [10, 2, 0, 0], 16, None, 2, 100, 0));
        f.begin_snapshot();
        f.feed(&route4(RTM_NEWROUTE, [10, 2, 0, 0], 16, None, 3, 100, 0));
        f.end_snapshot();
        let s = sink.0.lock().unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[&p("10.2.0.0/16")][0].output, 1);
    }

    #[test]
    fn routes_through_nexthop_objects() {
        let (mut f, sink) = follower(&["r-eth0", "r-eth1"]);
        for (id, oif, gw) in [(1u32, 2u32, [10, 0, 0, 2]), (2, 3, [10, 0, 1, 2])] {
            f.feed(&msg(
                netlink::RTM_NEWNEXTHOP,
                0,
                &[netlink::AF_INET, 0, 0, 0, 0, 0, 0, 0],
                &[
                    (1, id.to_ne_bytes().to_vec()),
                    (5, oif.to_ne_bytes().to_vec()),
                    (6, gw.to_vec()),
                ],
            ));
        }
        let mut grp = Vec::new();
        for id in [1u32, 2] {
            grp.extend_from_slice(&id.to_ne_bytes());
            grp.extend_from_slice(&[0; 4]);
        }
        f.feed(&msg(
            netlink::RTM_NEWNEXTHOP,
            0,
            &[0; 8],
            &[(1, 10u32.to_ne_bytes().to_vec()), (2, grp)],
        ));
        let fixed = [netlink::AF_INET, 8, 0, 0, 100, 186, 0, 1, 0, 0, 0, 0];
        f.feed(&msg(
            RTM_NEWROUTE,
            0,
            &fixed,
            &[(1, vec![20, 0, 0, 0]), (30, 10u32.to_ne_bytes().to_vec())],
        ));
        assert_eq!(sink.0.lock().unwrap()[&p("20.0.0.0/8")].len(), 2);
        // The group loses a member: the route follows.
        let mut grp = Vec::new();
        grp.extend_from_slice(&2u32.to_ne_bytes());
        grp.extend_from_slice(&[0; 4]);
        f.feed(&msg(
            netlink::RTM_NEWNEXTHOP,
            0,
            &[0; 8],
            &[(1, 10u32.to_ne_bytes().to_vec()), (2, grp)],
        ));
        assert_eq!(sink.0.lock().unwrap()[&p("20.0.0.0/8")][0].output, 1);
    }

    #[test]
    fn a_deleted_link_takes_its_ipv4_routes() {
        let (mut f, sink) = follower(&["r-eth0", "r-eth1"]);
        f.feed(&route4(RTM_NEWROUTE, [10, 1, 0, 0], 16, None, 2, 100, 0));
        f.feed(&route4(RTM_NEWROUTE, [10, 2, 0, 0], 16, None, 3, 100, 0));
        let mut fixed = [0u8; 16];
        fixed[4..8].copy_from_slice(&3u32.to_ne_bytes());
        f.feed(&msg(netlink::RTM_DELLINK, 0, &fixed, &[]));
        let s = sink.0.lock().unwrap();
        assert_eq!(s.len(), 1);
        assert!(s.contains_key(&p("10.1.0.0/16")));
    }

    #[test]
    fn bounds_hold_against_a_flood() {
        let (f, sink) = follower(&["r-eth0"]);
        let mut f = f.with_limits(Limits {
            routes: 10,
            ..Limits::default()
        });
        for i in 0..100u8 {
            f.feed(&route4(RTM_NEWROUTE, [10, i, 0, 0], 16, None, 2, 100, 0));
        }
        assert_eq!(sink.0.lock().unwrap().len(), 10);
        assert_eq!(f.stats().get(Kind::Bound), 90);
    }
}
