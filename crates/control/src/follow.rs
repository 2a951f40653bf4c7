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

use crate::netlink::{self, Message, NexthopMsg, NlHop, RouteMsg, NLM_F_REPLACE};
use crate::stats::{Kind, SourceStats};
use bricks_lpm::source::{Hop, Route, RoutePrefix};
use std::sync::Arc;

/// The follower's maps: std's, with a faster seeded hash.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// Where a source's routes go: a route table that takes whole routes and
/// withdrawals. Called from the source's own thread.
pub trait RouteSink: Send + 'static {
    /// Adds the route, or replaces the one for its prefix.
    fn set(&self, route: &Route) -> Result<(), String>;
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
    hops: Vec<NlHop>,
    nh_id: Option<u32>,
    /// A route that discards: `blackhole`, `unreachable` or `prohibit`
    /// (its hops are empty).
    reject: Option<&'static str>,
    /// The snapshot it was last seen in.
    generation: u64,
}

/// A source's state; see the module documentation.
pub struct Follower<S: RouteSink> {
    filter: Filter,
    limits: Limits,
    sink: S,
    stats: Arc<SourceStats>,
    links: HashMap<u32, String>,
    nexthops: HashMap<u32, NexthopMsg>,
    candidates: HashMap<RoutePrefix, Vec<Candidate>>,
    /// What the sink holds now for each prefix this source set.
    installed: HashMap<RoutePrefix, Vec<Hop>>,
    generation: u64,
    /// Called for every change made (for `bricks routes watch`).
    observer: Option<Observer>,
    /// Reads the interfaces again (rtnetlink messages) when a route names
    /// an unknown one, at most once a second.
    refresh: Option<(LinkReader, Option<std::time::Instant>)>,
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
            candidates: HashMap::default(),
            installed: HashMap::default(),
            generation: 0,
            observer: None,
            refresh: None,
        }
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
        self.installed.len()
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
                        self.links.insert(index, name.to_string());
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
        let stale: Vec<RoutePrefix> = self
            .candidates
            .iter()
            .filter(|(_, cs)| cs.iter().any(|c| c.generation < g))
            .map(|(p, _)| *p)
            .collect();
        for p in stale {
            if let Some(cs) = self.candidates.get_mut(&p) {
                cs.retain(|c| c.generation >= g);
                if cs.is_empty() {
                    self.candidates.remove(&p);
                }
            }
            self.update(p);
        }
    }

    fn wanted(&self, r: &RouteMsg) -> bool {
        let family = match r.prefix {
            RoutePrefix::V4(_) => self.filter.v4,
            RoutePrefix::V6(_) => self.filter.v6,
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
        if r.delete {
            let v6 = matches!(p, RoutePrefix::V6(_));
            if let Some(cs) = self.candidates.get_mut(&p) {
                match cs.iter().position(|c| c.metric == r.metric) {
                    // An IPv6 ECMP route loses one path at a time.
                    Some(i) if v6 && !r.hops.is_empty() && cs[i].hops.len() > 1 => {
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
                if cs.is_empty() {
                    self.candidates.remove(&p);
                }
            }
            self.update(p);
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
        if self.candidates.len() >= self.limits.routes && !self.candidates.contains_key(&p) {
            self.stats.skip(Kind::Bound, "route limit reached");
            return;
        }
        let g = self.generation;
        let cs = self.candidates.entry(p).or_default();
        let v6 = matches!(p, RoutePrefix::V6(_));
        match cs.iter().position(|c| c.metric == r.metric) {
            // An IPv6 route added beside one of the same metric is another
            // path of it (the kernel's ECMP siblings, `ip -6 route append`
            // or a second `add`); `replace` starts over.
            Some(i)
                if v6
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
                    hops: if reject.is_some() { Vec::new() } else { r.hops },
                    nh_id: r.nh_id.filter(|_| reject.is_none()),
                    reject,
                    generation: g,
                }
            }
            None if cs.len() >= self.limits.candidates => {
                self.stats
                    .skip(Kind::Bound, "too many routes for one prefix");
                return;
            }
            None => cs.push(Candidate {
                metric: r.metric,
                hops: if reject.is_some() { Vec::new() } else { r.hops },
                nh_id: r.nh_id.filter(|_| reject.is_none()),
                reject,
                generation: g,
            }),
        }
        self.update(p);
    }

    /// A deleted link takes its IPv4 routes with it: the kernel flushes
    /// them without a notification for each (IPv6 sends one per route).
    /// Off the fast path: links go away rarely, and the walk is bounded
    /// by the route limit.
    fn link_gone(&mut self, index: u32) {
        let mut touched = Vec::new();
        for (p, cs) in self.candidates.iter_mut() {
            if !matches!(p, RoutePrefix::V4(_)) {
                continue;
            }
            let before = cs.len();
            cs.retain(|c| !c.hops.iter().any(|h| h.ifindex == index));
            if cs.len() != before {
                touched.push(*p);
            }
        }
        for p in touched {
            if self.candidates.get(&p).is_some_and(Vec::is_empty) {
                self.candidates.remove(&p);
            }
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
            .candidates
            .iter()
            .filter(|(_, cs)| cs.iter().any(|c| c.nh_id == Some(id)))
            .map(|(p, _)| *p)
            .collect();
        for p in users {
            self.update(p);
        }
    }

    /// Where a candidate goes: its own hops, its nexthop object's, or a
    /// discard (a reject route, or a blackhole nexthop object).
    fn resolve(&self, c: &Candidate) -> Result<Resolved, &'static str> {
        if let Some(kind) = c.reject {
            return Ok(Resolved::Reject(kind));
        }
        let Some(id) = c.nh_id else {
            return Ok(Resolved::Hops(c.hops.clone()));
        };
        let nh = self.nexthops.get(&id).ok_or("an unknown nexthop object")?;
        if nh.blackhole {
            return Ok(Resolved::Reject("blackhole"));
        }
        if let Some(h) = nh.hop {
            return Ok(Resolved::Hops(vec![h]));
        }
        let mut hops = Vec::new();
        for m in &nh.group {
            match self.nexthops.get(m).and_then(|n| n.hop) {
                Some(h) => hops.push(h),
                None => return Err("a nexthop group with an unknown member"),
            }
        }
        Ok(Resolved::Hops(hops))
    }

    /// The output for reject routes of `kind`: the DEVICES entry naming it
    /// (`blackhole`, `unreachable`, `prohibit`), or output 0 without
    /// DEVICES.
    fn map_reject(&self, kind: &'static str) -> Result<(Vec<Hop>, Vec<String>), String> {
        let output = match &self.filter.devices {
            None => 0,
            Some(devs) => devs
                .iter()
                .position(|d| d.split('|').any(|alt| alt == kind))
                .ok_or_else(|| format!("a {kind} route, and no output for `{kind}` in DEVICES"))?,
        };
        let names = if self.observer.is_some() {
            vec![kind.to_string()]
        } else {
            Vec::new()
        };
        Ok((
            vec![Hop {
                gateway: None,
                output: output as u32,
            }],
            names,
        ))
    }

    /// Maps netlink hops to outputs by interface name (the names too when
    /// someone observes the changes).
    fn map(&self, hops: &[NlHop]) -> Result<(Vec<Hop>, Vec<String>), String> {
        let mut out = Vec::with_capacity(hops.len());
        let mut names = Vec::new();
        for h in hops {
            let name = self
                .links
                .get(&h.ifindex)
                .ok_or_else(|| format!("interface index {} unknown", h.ifindex))?;
            let output = match &self.filter.devices {
                None => 0,
                Some(devs) => devs
                    .iter()
                    .position(|d| d.split('|').any(|alt| alt == name))
                    .ok_or_else(|| format!("interface {name} is none of DEVICES"))?,
            };
            out.push(Hop {
                gateway: h.gateway,
                output: output as u32,
            });
            if self.observer.is_some() {
                names.push(name.clone());
            }
        }
        if out.is_empty() {
            return Err("no outgoing interface".into());
        }
        Ok((out, names))
    }

    /// Brings the sink's route for `p` in line with the candidates.
    fn update(&mut self, p: RoutePrefix) {
        let best = self
            .candidates
            .get(&p)
            .and_then(|cs| cs.iter().min_by_key(|c| c.metric));
        let mut resolved = best.map(|c| self.resolve(c));
        if let Some(Ok(Resolved::Hops(hops))) = &resolved {
            let unknown = hops.iter().any(|h| !self.links.contains_key(&h.ifindex));
            let due = self
                .refresh
                .as_ref()
                .is_some_and(|(_, last)| last.is_none_or(|t| t.elapsed().as_secs() >= 1));
            if unknown && due {
                if let Some((f, last)) = &mut self.refresh {
                    let bytes = f();
                    *last = Some(std::time::Instant::now());
                    self.feed(&bytes);
                }
                let best = self
                    .candidates
                    .get(&p)
                    .and_then(|cs| cs.iter().min_by_key(|c| c.metric));
                resolved = best.map(|c| self.resolve(c));
            }
        }
        let wanted = match resolved {
            None => None,
            Some(r) => match r {
                Ok(Resolved::Hops(hops)) => match self.map(&hops) {
                    Ok(m) => Some(m),
                    Err(why) => {
                        self.stats
                            .skip(Kind::UnknownInterface, &format!("{p}: {why}"));
                        None
                    }
                },
                Ok(Resolved::Reject(kind)) => match self.map_reject(kind) {
                    Ok(m) => Some(m),
                    Err(why) => {
                        self.stats.skip(Kind::Unsupported, &format!("{p}: {why}"));
                        None
                    }
                },
                Err(why) => {
                    self.stats.skip(Kind::Unsupported, &format!("{p}: {why}"));
                    None
                }
            },
        };
        match wanted {
            Some((mut hops, names)) => {
                hops.sort();
                hops.dedup();
                // One lookup of the installed route, kept for the write.
                let slot = self.installed.entry(p);
                if let std::collections::hash_map::Entry::Occupied(o) = &slot {
                    if *o.get() == hops {
                        return;
                    }
                }
                let route = Route { prefix: p, hops };
                match self.sink.set(&route) {
                    Ok(()) => {
                        self.stats.count(Kind::Added);
                        if let Some(f) = &mut self.observer {
                            f(&Change::Set(route.clone(), names));
                        }
                        match slot {
                            std::collections::hash_map::Entry::Occupied(mut o) => {
                                o.insert(route.hops);
                            }
                            std::collections::hash_map::Entry::Vacant(v) => {
                                v.insert(route.hops);
                            }
                        }
                    }
                    Err(e) => self.stats.skip(Kind::Refused, &format!("{p}: {e}")),
                }
            }
            None => {
                if self.installed.remove(&p).is_some() {
                    match self.sink.remove(p) {
                        Ok(()) => {
                            self.stats.count(Kind::Removed);
                            if let Some(f) = &mut self.observer {
                                f(&Change::Removed(p));
                            }
                        }
                        Err(e) => self.stats.skip(Kind::Refused, &format!("{p}: {e}")),
                    }
                }
            }
        }
    }
}

/// Where the best candidate of a prefix sends its packets.
enum Resolved {
    /// By these hops.
    Hops(Vec<NlHop>),
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
    use crate::netlink::tests::{msg, route4};
    use crate::netlink::{RTM_DELROUTE, RTM_NEWLINK, RTM_NEWROUTE};
    use std::sync::Mutex;

    /// A sink that records into a map (the other modules' tests use it too).
    #[derive(Clone, Default)]
    pub(crate) struct MapSink(pub Arc<Mutex<HashMap<RoutePrefix, Vec<Hop>>>>);

    impl RouteSink for MapSink {
        fn set(&self, r: &Route) -> Result<(), String> {
            self.0.lock().unwrap().insert(r.prefix, r.hops.clone());
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
