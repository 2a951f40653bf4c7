//! `MLDReporter`: the listener side of Multicast Listener Discovery for
//! the groups a router's interface must receive (RFC 3810; RFC 2710 for
//! version 1 queriers). A node joins the solicited-node group of each of
//! its addresses (RFC 4861 section 7.2.1) and a router the all-routers
//! group (RFC 4291 section 2.8), and says so with MLD: a switch that
//! snoops MLD forwards a group's frames only to the ports that reported
//! it, so a router that never reports stops hearing the Neighbor
//! Solicitations for its own addresses as soon as another host on the
//! link listens to the same solicited-node group.
//!
//! Click has no such element: its IPv6 routers run behind hubs or
//! switches that flood.

use super::emit;
use super::header6::addr_at;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_packet::Timestamp;
use bricks_wire::checksum;
use bricks_wire::ethernet::{EtherType, EthernetAddress, HEADER_LEN};
use bricks_wire::ip::IpProtocol;
use std::net::Ipv6Addr;

/// The `MLDReporter` class.
pub static CLASS: ElementClass = ElementClass {
    name: "MLDReporter",
    ports: "1/1-2",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

const SEC: u64 = 1_000_000_000;
/// RFC 3810 section 9.1 and 9.11: reports sent unsolicited, this far
/// apart.
const ROBUSTNESS: u32 = 2;
const UNSOLICITED_REPORT_INTERVAL: u64 = SEC;
/// Older Version Querier Present Timeout (RFC 3810 sections 8.2.1 and
/// 9.12): the Robustness Variable (2) times the Query Interval (125 s)
/// plus the Query Response Interval (10 s).
const OLDER_VERSION_QUERIER_PRESENT: u64 = (2 * 125 + 10) * SEC;
/// All MLDv2-capable routers (RFC 3810 section 5.2.14).
const ALL_MLDV2_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x16);
/// All routers on the link (RFC 4291 section 2.7.1).
const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
/// At most this many groups: a version 2 report of them stays inside
/// the minimum MTU (8 + 20 a record, behind 48 bytes of headers).
pub const MAX_GROUPS: usize = 32;

const QUERY: u8 = 130;
const REPORT_V1: u8 = 131;
const REPORT_V2: u8 = 143;
/// Record types (RFC 3810 section 5.2.12).
const MODE_IS_EXCLUDE: u8 = 2;
const CHANGE_TO_EXCLUDE: u8 = 4;
/// The Hop-by-Hop header every MLD message carries: ICMPv6 next, a
/// Router Alert option for MLD (RFC 2711, value 0) and two bytes of
/// padding.
const HOP_BY_HOP: [u8; 8] = [58, 0, 5, 2, 0, 0, 1, 0];

static MANUAL: Manual = Manual {
    summary: "reports the multicast groups of a router's interface with MLD (RFC 3810)",
    synopsis: "MLDReporter(ETH, SRC [, KEYWORDS ADDRESS, GROUP, ROUTER])",
    description: "Makes an interface's multicast listening known on its link, so that \
        switches that snoop MLD (RFC 4541) forward it the Neighbor Solicitations for its \
        addresses (not a Click class). The groups are the solicited-node group \
        ff02::1:ffXX:XXXX of each ADDRESS (RFC 4861 section 7.2.1), the all-routers \
        group ff02::2 unless ROUTER is false (RFC 4291 section 2.8), and each GROUP; \
        all-nodes, ff02::1, is never reported (RFC 3810 section 6). At most 32.\n\n\
        Reports leave from SRC, a link-local address (RFC 3810 section 5: `::` only \
        while the interface has none), from ETH, with hop limit 1 and a Hop-by-Hop \
        header holding a Router Alert option. When the router starts, the first worker \
        sends a version 2 report (to ff02::16) of every group, as changes to exclude \
        mode, and again a second later (the robustness variable 2 and the unsolicited \
        report interval 1 s of section 9).\n\n\
        Input frames should be MLD Queries, Ethernet header included. A valid one \
        (hop limit 1, a link-local source, a right checksum, the Hop-by-Hop header \
        optional) for all groups or for one of ours is answered after a random delay \
        of at most its maximum response delay, in its version: a version 2 report of \
        every group (records of exclude mode), or, to a version 1 query (RFC 2710), one \
        version 1 report a group, sent to the group. After a version 1 query every \
        report is a version 1 one for 260 s, the Older Version Querier Present \
        Timeout, version 2 queries too (RFC 3810 section 8.2.1). Queries that arrive before the \
        answer is due are answered by it. Queries for other groups are counted \
        (`other_group`) and not answered; frames that are not queries (`not_query`), \
        with another hop limit (`bad_hop_limit`), a source that is not link-local \
        (`bad_source`) or a wrong checksum (`bad_checksum`) are not used. Everything \
        not answered leaves on output 1 if it is connected and is dropped otherwise.\n\n\
        The `groups` handler lists the groups reported, one a line.",
    ports: "one input, push; output 0: MLD reports, push; optional output 1: frames not \
        answered, push",
    keywords: &[
        Keyword {
            name: "ADDRESS",
            ty: "IPv6 address, repeatable",
            default: None,
            doc: "an address of the interface: its solicited-node group is reported",
        },
        Keyword {
            name: "GROUP",
            ty: "IPv6 multicast address, repeatable",
            default: None,
            doc: "another group to report",
        },
        Keyword {
            name: "ROUTER",
            ty: "boolean",
            default: Some("true"),
            doc: "report the all-routers group ff02::2",
        },
    ],
    counters: &[
        ("reports", "reports sent (version 1 reports one a group)"),
        (
            "queries",
            "queries answered, or folded into an answer already due",
        ),
        ("other_group", "queries for a group not reported"),
        ("not_query", "frames that are not MLD queries"),
        ("bad_hop_limit", "queries with a hop limit other than 1"),
        ("bad_source", "queries from a source that is not link-local"),
        ("bad_checksum", "queries with a wrong ICMPv6 checksum"),
    ],
    example: "Idle -> MLDReporter(52:54:00:aa:00:01, fe80::1, ADDRESS 2001:db8::1, \
        ADDRESS fe80::1) -> Discard;",
    see_also: &["IP6NDAdvertiser", "IP6NDSolicitor", "IP6RouterAdvertiser"],
};

/// The solicited-node group of `a` (RFC 4291 section 2.7.1).
fn solicited_node(a: Ipv6Addr) -> Ipv6Addr {
    let o = a.octets();
    Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(o[13]),
        u16::from_be_bytes([o[14], o[15]]),
    )
}

/// The Ethernet address of group `g` (RFC 2464 section 7).
fn group_ethernet(g: Ipv6Addr) -> EthernetAddress {
    let o = g.octets();
    EthernetAddress([0x33, 0x33, o[12], o[13], o[14], o[15]])
}

fn is_link_local(a: Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let eth: EthernetAddress = args.read_mp("ETH")?;
    let src: Ipv6Addr = args.read_mp("SRC")?;
    let addresses: Vec<Ipv6Addr> = args.read_all("ADDRESS")?;
    let extra: Vec<Ipv6Addr> = args.read_all("GROUP")?;
    let router: bool = args.read("ROUTER")?.unwrap_or(true);
    if !src.is_unspecified() && !is_link_local(src) {
        return Err(ArgError::new(format!(
            "SRC {src} is not a link-local address: MLD messages come from one (RFC 3810 \
             section 5)"
        )));
    }
    let mut groups: Vec<Ipv6Addr> = addresses.iter().map(|&a| solicited_node(a)).collect();
    if router {
        groups.push(ALL_ROUTERS);
    }
    for g in extra {
        if !g.is_multicast() {
            return Err(ArgError::new(format!(
                "GROUP {g} is not a multicast address"
            )));
        }
        if g == Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1) {
            return Err(ArgError::new(
                "GROUP ff02::1 (all nodes) is never reported (RFC 3810 section 6)",
            ));
        }
        groups.push(g);
    }
    groups.sort();
    groups.dedup();
    if groups.is_empty() {
        return Err(ArgError::new("no group to report")
            .with_help("give the interface's addresses: `ADDRESS 2001:db8::1`"));
    }
    if groups.len() > MAX_GROUPS {
        return Err(ArgError::new(format!(
            "{} groups: at most {MAX_GROUPS} fit one report",
            groups.len()
        )));
    }
    let seed = u64::from_be_bytes([
        0, 0, eth.0[0], eth.0[1], eth.0[2], eth.0[3], eth.0[4], eth.0[5],
    ]);
    Ok(Box::new(MldReporter {
        eth,
        src,
        groups,
        reject_port: (ports.noutputs() > 1).then_some(1),
        unsolicited_left: ROBUSTNESS,
        unsolicited_at: None,
        due: None,
        v1_until: None,
        timer_at: None,
        rng: seed ^ 0x9e37_79b9_7f4a_7c15,
        c: Counters::default(),
    }))
}

#[derive(Default)]
struct Counters {
    reports: u64,
    queries: u64,
    other_group: u64,
    not_query: u64,
    bad_hop_limit: u64,
    bad_source: u64,
    bad_checksum: u64,
}

/// The element.
pub struct MldReporter {
    eth: EthernetAddress,
    src: Ipv6Addr,
    /// Sorted, at most [`MAX_GROUPS`].
    groups: Vec<Ipv6Addr>,
    reject_port: Option<usize>,
    /// Unsolicited reports still to send, and when the next is due.
    unsolicited_left: u32,
    unsolicited_at: Option<u64>,
    /// When the answer to queries is due.
    due: Option<u64>,
    /// Version 1 compatibility mode (RFC 3810 section 8.2.1): until when
    /// a version 1 querier was last heard of.
    v1_until: Option<u64>,
    timer_at: Option<u64>,
    /// xorshift64* state.
    rng: u64,
    c: Counters,
}

/// Why a frame is not answered.
enum Unused {
    NotQuery,
    BadHopLimit,
    BadSource,
    BadChecksum,
    OtherGroup,
}

/// A query: its version and maximum response delay (ns).
struct Query {
    v1: bool,
    delay: u64,
}

/// The maximum response delay of a version 2 query's Maximum Response
/// Code, in milliseconds (RFC 3810 section 5.1.3).
fn max_response_ms(code: u16) -> u64 {
    if code < 0x8000 {
        u64::from(code)
    } else {
        let mant = u64::from(code & 0x0fff);
        let exp = u32::from((code >> 12) & 0x7);
        (mant | 0x1000) << (exp + 3)
    }
}

impl MldReporter {
    /// Reads the query in frame `d`.
    fn query(&self, d: &[u8]) -> Result<Query, Unused> {
        let ip = d.get(HEADER_LEN..).ok_or(Unused::NotQuery)?;
        if u16::from_be_bytes([d[12], d[13]]) != EtherType::IPV6.0 || ip.len() < 40 {
            return Err(Unused::NotQuery);
        }
        let plen = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
        let ip = ip.get(..40 + plen).ok_or(Unused::NotQuery)?;
        let at = match ip[6] {
            58 => 40,
            // A Hop-by-Hop header (the Router Alert every MLD message
            // carries), then ICMPv6.
            0 if ip.get(40) == Some(&58) => 40 + (usize::from(*ip.get(41).unwrap_or(&0)) + 1) * 8,
            _ => return Err(Unused::NotQuery),
        };
        let icmp = ip.get(at..).ok_or(Unused::NotQuery)?;
        if icmp.len() < 24 || icmp[0] != QUERY {
            return Err(Unused::NotQuery);
        }
        if ip[7] != 1 {
            return Err(Unused::BadHopLimit);
        }
        let src = Ipv6Addr::from(addr_at(ip, 8));
        if !is_link_local(src) {
            return Err(Unused::BadSource);
        }
        let dst = Ipv6Addr::from(addr_at(ip, 24));
        let pseudo = checksum::pseudo_header_v6(src, dst, IpProtocol::ICMPV6, icmp.len() as u32);
        if checksum::combine(&[pseudo, checksum::data(icmp)]) != 0xffff {
            return Err(Unused::BadChecksum);
        }
        let group = Ipv6Addr::from(addr_at(icmp, 8));
        if !group.is_unspecified() && self.groups.binary_search(&group).is_err() {
            return Err(Unused::OtherGroup);
        }
        let code = u16::from_be_bytes([icmp[4], icmp[5]]);
        // Version 1 queries are 24 bytes, version 2 at least 28 (RFC
        // 3810 section 8.1).
        let v1 = icmp.len() < 28;
        let ms = if v1 {
            u64::from(code)
        } else {
            max_response_ms(code)
        };
        Ok(Query {
            v1,
            delay: ms * 1_000_000,
        })
    }

    /// The reports of every group: one version 2 report with records of
    /// `record` type, or version 1 reports, one a group.
    fn reports(&self, v1: bool, record: u8, now: Timestamp) -> Vec<Packet> {
        if v1 {
            return self
                .groups
                .iter()
                .map(|&g| {
                    let mut icmp = [0u8; 24];
                    icmp[0] = REPORT_V1;
                    icmp[8..24].copy_from_slice(&g.octets());
                    self.message(g, &icmp, now)
                })
                .collect();
        }
        let mut icmp = vec![REPORT_V2, 0, 0, 0, 0, 0];
        icmp.extend((self.groups.len() as u16).to_be_bytes());
        for g in &self.groups {
            icmp.extend([record, 0, 0, 0]);
            icmp.extend(g.octets());
        }
        vec![self.message(ALL_MLDV2_ROUTERS, &icmp, now)]
    }

    /// An MLD message `icmp` (checksum left 0) to `dst`, in its IPv6
    /// header, Hop-by-Hop header and Ethernet header.
    fn message(&self, dst: Ipv6Addr, icmp: &[u8], now: Timestamp) -> Packet {
        let mut q = Packet::new();
        let len = HEADER_LEN + 40 + HOP_BY_HOP.len() + icmp.len();
        // A fresh buffer holds far more than the largest report (704 bytes).
        let _ = q.put_back(len);
        let o = q.data_mut();
        o[..6].copy_from_slice(&group_ethernet(dst).0);
        o[6..12].copy_from_slice(&self.eth.0);
        o[12..14].copy_from_slice(&EtherType::IPV6.0.to_be_bytes());
        let ip = &mut o[HEADER_LEN..];
        ip[..4].copy_from_slice(&[0x60, 0, 0, 0]);
        let plen = (HOP_BY_HOP.len() + icmp.len()) as u16;
        ip[4..6].copy_from_slice(&plen.to_be_bytes());
        ip[6] = 0;
        ip[7] = 1;
        ip[8..24].copy_from_slice(&self.src.octets());
        ip[24..40].copy_from_slice(&dst.octets());
        ip[40..48].copy_from_slice(&HOP_BY_HOP);
        let m = &mut ip[48..48 + icmp.len()];
        m.copy_from_slice(icmp);
        let pseudo =
            checksum::pseudo_header_v6(self.src, dst, IpProtocol::ICMPV6, icmp.len() as u32);
        let sum = !checksum::combine(&[pseudo, checksum::data(m)]);
        m[2..4].copy_from_slice(&sum.to_be_bytes());
        q.anno_mut().timestamp = now;
        q
    }

    /// Whether a version 1 querier was heard within the Older Version
    /// Querier Present Timeout: then every report is a version 1 one,
    /// also in answer to version 2 queries (RFC 3810 section 8.2.1).
    fn v1_mode(&self, now: u64) -> bool {
        self.v1_until.is_some_and(|t| now < t)
    }

    fn arm(&mut self, cx: &mut Context<'_>, at: u64) {
        if self.timer_at.is_none_or(|t| at < t) {
            cx.schedule_at(Timestamp(at));
            self.timer_at = Some(at);
        }
    }

    fn next_random(&mut self) -> u64 {
        crate::rng::xorshift64star(&mut self.rng)
    }

    /// Groups, one a line.
    pub fn groups_text(&self) -> String {
        self.groups.iter().map(|g| format!("{g}\n")).collect()
    }
}

impl Element for MldReporter {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        let mut rejected = Batch::new();
        let now = cx.now().0;
        for p in batch.drain() {
            match self.query(p.data()) {
                Ok(q) => {
                    self.c.queries += 1;
                    // Answered at a random time within the delay the
                    // querier allows, unless an answer is due sooner
                    // (RFC 3810 section 6.2).
                    let at = now + self.next_random() % q.delay.max(1);
                    if q.v1 {
                        // Changing mode cancels what was pending
                        // (section 8.2.1).
                        if !self.v1_mode(now) {
                            self.due = None;
                        }
                        self.v1_until = Some(now + OLDER_VERSION_QUERIER_PRESENT);
                    }
                    if self.due.is_none_or(|d| at < d) {
                        self.due = Some(at);
                        self.arm(cx, at);
                    }
                    continue;
                }
                Err(why) => {
                    let c = match why {
                        Unused::NotQuery => &mut self.c.not_query,
                        Unused::BadHopLimit => &mut self.c.bad_hop_limit,
                        Unused::BadSource => &mut self.c.bad_source,
                        Unused::BadChecksum => &mut self.c.bad_checksum,
                        Unused::OtherGroup => &mut self.c.other_group,
                    };
                    *c += 1;
                }
            }
            if let Some(port) = self.reject_port {
                emit(&mut rejected, p, port, cx);
            }
        }
        if let Some(port) = self.reject_port {
            cx.push(port, &mut rejected);
        }
    }

    fn start(&mut self, cx: &mut Context<'_>) {
        // The graph runs once per worker: one of them reports.
        if cx.worker() == 0 && self.unsolicited_left > 0 {
            let now = cx.now().0;
            self.unsolicited_at = Some(now);
            self.arm(cx, now);
        }
    }

    fn run_timer(&mut self, cx: &mut Context<'_>) {
        let now = cx.now();
        if self.timer_at.is_none_or(|t| t > now.0) {
            return;
        }
        self.timer_at = None;
        let mut out = Batch::new();
        if let Some(at) = self.unsolicited_at {
            if at <= now.0 {
                self.unsolicited_at = None;
                self.unsolicited_left = self.unsolicited_left.saturating_sub(1);
                let v1 = self.v1_mode(now.0);
                for p in self.reports(v1, CHANGE_TO_EXCLUDE, now) {
                    self.c.reports += 1;
                    emit(&mut out, p, 0, cx);
                }
                if self.unsolicited_left > 0 {
                    let next = now.0 + UNSOLICITED_REPORT_INTERVAL;
                    self.unsolicited_at = Some(next);
                    self.arm(cx, next);
                }
            } else {
                self.arm(cx, at);
            }
        }
        if let Some(due) = self.due {
            if due <= now.0 {
                self.due = None;
                let v1 = self.v1_mode(now.0);
                for p in self.reports(v1, MODE_IS_EXCLUDE, now) {
                    self.c.reports += 1;
                    emit(&mut out, p, 0, cx);
                }
            } else {
                self.arm(cx, due);
            }
        }
        cx.push(0, &mut out);
    }

    /// A new configuration does not report again what the old one did;
    /// the counters carry over.
    fn take_state(&mut self, old: &mut dyn Element, _cx: &mut Context<'_>) {
        if let Some(old) = bricks_element::taken_from::<MldReporter>(old) {
            if old.groups == self.groups && old.src == self.src && old.eth == self.eth {
                self.unsolicited_left = old.unsolicited_left;
            }
            let c = &old.c;
            self.c.reports += c.reports;
            self.c.queries += c.queries;
            self.c.other_group += c.other_group;
            self.c.not_query += c.not_query;
            self.c.bad_hop_limit += c.bad_hop_limit;
            self.c.bad_source += c.bad_source;
            self.c.bad_checksum += c.bad_checksum;
        }
    }

    fn stats(&self, s: &mut Stats) {
        let c = &self.c;
        s.counter("reports", c.reports);
        s.counter("queries", c.queries);
        s.counter("other_group", c.other_group);
        s.counter("not_query", c.not_query);
        s.counter("bad_hop_limit", c.bad_hop_limit);
        s.counter("bad_source", c.bad_source);
        s.counter("bad_checksum", c.bad_checksum);
    }

    fn read_handler(&self, handler: &str) -> Option<String> {
        (handler == "groups").then(|| self.groups_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::icmp6_ok;
    use bricks_runtime::testing::Harness;

    const ETH: &str = "52:54:00:aa:00:01";
    const ARGS: &str = "52:54:00:aa:00:01, fe80::1, ADDRESS 2001:db8:1::1, ADDRESS fe80::1, \
                        ADDRESS 2001:db8:2::1:2";

    fn reporter(args: &str) -> Harness {
        Harness::push(&CLASS, args, 1, 2)
    }

    /// An MLD query frame: version 1 (24 bytes) or 2 (28), from `src`
    /// with hop limit `hlim`, for `group` (:: for all), a maximum response
    /// delay of `ms`.
    fn query(v1: bool, hlim: u8, src: &str, group: &str, ms: u16) -> Vec<u8> {
        let src: Ipv6Addr = src.parse().unwrap();
        let dst: Ipv6Addr = "ff02::1".parse().unwrap();
        let mut icmp = vec![QUERY, 0, 0, 0];
        icmp.extend(ms.to_be_bytes());
        icmp.extend([0, 0]);
        icmp.extend(group.parse::<Ipv6Addr>().unwrap().octets());
        if !v1 {
            icmp.extend([2, 125, 0, 0]);
        }
        let pseudo = checksum::pseudo_header_v6(src, dst, IpProtocol::ICMPV6, icmp.len() as u32);
        let sum = !checksum::combine(&[pseudo, checksum::data(&icmp)]);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        let mut f = vec![0x33, 0x33, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x86, 0xdd];
        f.extend([0x60, 0, 0, 0]);
        f.extend(((8 + icmp.len()) as u16).to_be_bytes());
        f.extend([0, hlim]);
        f.extend(src.octets());
        f.extend(dst.octets());
        f.extend(HOP_BY_HOP);
        f.extend(icmp);
        f
    }

    /// Checks the headers every MLD message of ours has; returns its
    /// ICMPv6 message.
    fn message(f: &[u8], dst: &str) -> Vec<u8> {
        let dst: Ipv6Addr = dst.parse().unwrap();
        assert_eq!(f[..6], group_ethernet(dst).0);
        assert_eq!(f[6..12], ETH.parse::<EthernetAddress>().unwrap().0);
        let ip = &f[14..];
        assert_eq!(
            (ip[0], ip[6], ip[7]),
            (0x60, 0, 1),
            "IPv6, Hop-by-Hop next, hop limit 1"
        );
        assert_eq!(
            Ipv6Addr::from(addr_at(ip, 8)),
            "fe80::1".parse::<Ipv6Addr>().unwrap()
        );
        assert_eq!(Ipv6Addr::from(addr_at(ip, 24)), dst);
        assert_eq!(ip[40..48], [58, 0, 5, 2, 0, 0, 1, 0], "Router Alert (MLD)");
        assert_eq!(
            usize::from(u16::from_be_bytes([ip[4], ip[5]])),
            ip.len() - 40
        );
        assert!(icmp6_ok(ip, 48), "checksum");
        ip[48..].to_vec()
    }

    /// The (record type, group) pairs of a version 2 report.
    fn records(icmp: &[u8]) -> Vec<(u8, Ipv6Addr)> {
        assert_eq!(icmp[0], REPORT_V2);
        let n = usize::from(u16::from_be_bytes([icmp[6], icmp[7]]));
        assert_eq!(icmp.len(), 8 + 20 * n);
        (0..n)
            .map(|i| {
                let r = &icmp[8 + 20 * i..];
                assert_eq!(r[1..4], [0, 0, 0], "no aux data, no sources");
                (r[0], Ipv6Addr::from(addr_at(r, 4)))
            })
            .collect()
    }

    fn ours() -> Vec<Ipv6Addr> {
        ["ff02::2", "ff02::1:ff00:1", "ff02::1:ff01:2"]
            .map(|g| g.parse().unwrap())
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    #[test]
    fn the_groups_are_reported_twice_at_start() {
        let mut h = reporter(ARGS);
        let t0 = h.now();
        h.start();
        h.advance_to(t0);
        let first = h.take_bytes(0);
        assert_eq!(first.len(), 1);
        let r = records(&message(&first[0], "ff02::16"));
        // fe80::1 and 2001:db8:1::1 share ff02::1:ff00:1: reported once.
        let groups: Vec<Ipv6Addr> = r.iter().map(|&(_, g)| g).collect();
        assert_eq!(groups, ours());
        assert!(r.iter().all(|&(t, _)| t == CHANGE_TO_EXCLUDE));
        h.advance_to(Timestamp(t0.0 + UNSOLICITED_REPORT_INTERVAL - 1));
        assert!(h.take(0).is_empty());
        h.advance_to(Timestamp(t0.0 + UNSOLICITED_REPORT_INTERVAL));
        assert_eq!(h.take_bytes(0), first);
        h.advance_to(Timestamp(t0.0 + 60 * SEC));
        assert!(h.take(0).is_empty(), "no more unsolicited reports");
        assert_eq!(h.stats().get("reports"), Some(2));
        assert_eq!(h.read_handler("groups").unwrap().lines().count(), 3);
    }

    #[test]
    fn a_general_query_is_answered_within_its_delay() {
        let mut h = reporter(ARGS);
        let t0 = h.now();
        h.push_bytes(0, &query(false, 1, "fe80::99", "::", 1000));
        assert!(h.take(0).is_empty(), "not at once");
        // A second query before the answer is due: one answer.
        h.push_bytes(0, &query(false, 1, "fe80::99", "::", 1000));
        h.advance_to(Timestamp(t0.0 + SEC));
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 1);
        let r = records(&message(&out[0], "ff02::16"));
        assert_eq!(r.iter().map(|&(_, g)| g).collect::<Vec<_>>(), ours());
        assert!(r.iter().all(|&(t, _)| t == MODE_IS_EXCLUDE));
        assert_eq!(h.stats().get("queries"), Some(2));
        // A query for one of our groups is answered too; one for another
        // group is not.
        h.push_bytes(0, &query(false, 1, "fe80::99", "ff02::1:ff01:2", 100));
        h.push_bytes(0, &query(false, 1, "fe80::99", "ff02::1:ff99:9", 100));
        h.advance_to(Timestamp(t0.0 + 2 * SEC));
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.take(1).len(), 1);
        assert_eq!(h.stats().get("other_group"), Some(1));
    }

    #[test]
    fn a_version_1_query_gets_version_1_reports() {
        let mut h = reporter(ARGS);
        let t0 = h.now();
        h.push_bytes(0, &query(true, 1, "fe80::99", "::", 500));
        h.advance_to(Timestamp(t0.0 + SEC / 2));
        let out = h.take_bytes(0);
        let groups: Vec<Ipv6Addr> = out
            .iter()
            .map(|f| {
                let g: Ipv6Addr = Ipv6Addr::from(addr_at(&f[14..], 24));
                let icmp = message(f, &g.to_string());
                assert_eq!(icmp.len(), 24);
                assert_eq!((icmp[0], Ipv6Addr::from(addr_at(&icmp, 8))), (REPORT_V1, g));
                g
            })
            .collect();
        assert_eq!(groups, ours());
        // Version 1 compatibility mode (RFC 3810 section 8.2.1): a version
        // 2 query within 260 s of it still gets version 1 reports ...
        h.push_bytes(0, &query(false, 1, "fe80::99", "::", 500));
        h.advance_to(Timestamp(t0.0 + 259 * SEC));
        let out = h.take_bytes(0);
        assert_eq!(out.len(), ours().len());
        assert!(out.iter().all(
            |f| message(f, &Ipv6Addr::from(addr_at(&f[14..], 24)).to_string())[0] == REPORT_V1
        ));
        // ... and one after it a version 2 report again.
        h.advance_to(Timestamp(t0.0 + 261 * SEC));
        h.push_bytes(0, &query(false, 1, "fe80::99", "::", 500));
        h.advance_to(Timestamp(t0.0 + 262 * SEC));
        let out = h.take_bytes(0);
        assert_eq!(out.len(), 1);
        assert_eq!(message(&out[0], "ff02::16")[0], REPORT_V2);
    }

    #[test]
    fn bad_queries_are_not_answered() {
        let mut h = reporter(ARGS);
        let t0 = h.now();
        let mut bad_sum = query(false, 1, "fe80::99", "::", 100);
        let last = bad_sum.len() - 1;
        bad_sum[last] ^= 1;
        let mut not_query = query(false, 1, "fe80::99", "::", 100);
        not_query[14 + 48] = REPORT_V2;
        for f in [
            query(false, 2, "fe80::99", "::", 100),
            query(false, 1, "2001:db8:1::99", "::", 100),
            bad_sum,
            not_query,
            query(false, 1, "fe80::99", "::", 100)[..70].to_vec(),
        ] {
            h.push_bytes(0, &f);
        }
        h.advance_to(Timestamp(t0.0 + SEC));
        assert!(h.take(0).is_empty());
        assert_eq!(h.take(1).len(), 5);
        let s = h.stats();
        for (c, n) in [
            ("bad_hop_limit", 1),
            ("bad_source", 1),
            ("bad_checksum", 1),
            ("not_query", 2),
            ("queries", 0),
        ] {
            assert_eq!(s.get(c), Some(n), "{c}");
        }
    }

    #[test]
    fn arguments() {
        for (args, why) in [
            (
                "52:54:00:aa:00:01, 2001:db8::1, ADDRESS 2001:db8::1",
                "link-local",
            ),
            (
                "52:54:00:aa:00:01, fe80::1, GROUP ff02::1",
                "never reported",
            ),
            (
                "52:54:00:aa:00:01, fe80::1, GROUP 2001:db8::1",
                "not a multicast",
            ),
            ("52:54:00:aa:00:01, fe80::1, ROUTER false", "no group"),
        ] {
            let e = bricks_runtime::testing::make_element(&CLASS, args, &PortInfo::default())
                .err()
                .unwrap_or_else(|| panic!("{args}: accepted"));
            assert!(e.contains(why), "{args}: {e}");
        }
        // ROUTER false leaves out ff02::2; :: as a source is allowed.
        let h = reporter("52:54:00:aa:00:01, ::, ADDRESS 2001:db8::1, ROUTER false");
        assert_eq!(h.read_handler("groups").unwrap(), "ff02::1:ff00:1\n");
    }
}
