//! The rtnetlink messages a route source reads: routes, links and nexthop
//! objects (`<linux/rtnetlink.h>`, `<linux/nexthop.h>`), from the kernel
//! or inside FPM frames.
//!
//! Written here rather than through `netlink-packet-route`'s typed
//! messages: a full table is a million `RTM_NEWROUTE`s, and that crate
//! builds a vector of owned attributes per message, where this decoder
//! reads the few attributes a forwarding table needs straight from the
//! buffer without allocating for a single-path route. The tests check it
//! against `netlink-packet-route`'s encoder.
//!
//! Nothing here trusts a length: every header and attribute is checked
//! against what is left of the buffer, and a message that does not fit is
//! a [`DecodeError`], never a panic.

use bricks_lpm::source::RoutePrefix;
use bricks_lpm::{Prefix4, Prefix6};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `struct nlmsghdr` is 16 bytes.
pub const NLMSG_HDRLEN: usize = 16;
/// Message types (`<linux/netlink.h>`, `<linux/rtnetlink.h>`).
pub const NLMSG_NOOP: u16 = 1;
/// An error or acknowledgement.
pub const NLMSG_ERROR: u16 = 2;
/// The end of a multi-part dump.
pub const NLMSG_DONE: u16 = 3;
/// Data lost.
pub const NLMSG_OVERRUN: u16 = 4;
/// A link appeared or changed.
pub const RTM_NEWLINK: u16 = 16;
/// A link went away.
pub const RTM_DELLINK: u16 = 17;
/// Ask for links.
pub const RTM_GETLINK: u16 = 18;
/// A route appeared or changed.
pub const RTM_NEWROUTE: u16 = 24;
/// A route went away.
pub const RTM_DELROUTE: u16 = 25;
/// Ask for routes.
pub const RTM_GETROUTE: u16 = 26;
/// A nexthop object appeared or changed.
pub const RTM_NEWNEXTHOP: u16 = 104;
/// A nexthop object went away.
pub const RTM_DELNEXTHOP: u16 = 105;
/// Ask for nexthop objects.
pub const RTM_GETNEXTHOP: u16 = 106;

/// Flags (`<linux/netlink.h>`).
pub const NLM_F_REQUEST: u16 = 0x1;
/// One part of a dump.
pub const NLM_F_MULTI: u16 = 0x2;
/// The dump changed while it was being taken: take it again.
pub const NLM_F_DUMP_INTR: u16 = 0x10;
/// `NLM_F_ROOT | NLM_F_MATCH`.
pub const NLM_F_DUMP: u16 = 0x300;
/// A new route replaces the one it matches.
pub const NLM_F_REPLACE: u16 = 0x100;
/// A new route is added beside the ones it matches (an IPv6 ECMP sibling).
pub const NLM_F_APPEND: u16 = 0x800;

/// Route types (`rtm_type`).
pub const RTN_UNICAST: u8 = 1;
/// `rtm_flags`: a cloned (cache) entry, not a route.
const RTM_F_CLONED: u32 = 0x200;

/// Address families.
pub const AF_INET: u8 = 2;
/// IPv6.
pub const AF_INET6: u8 = 10;

// Route attributes.
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PRIORITY: u16 = 6;
const RTA_MULTIPATH: u16 = 9;
const RTA_TABLE: u16 = 15;
const RTA_VIA: u16 = 18;
const RTA_ENCAP: u16 = 22;
const RTA_NH_ID: u16 = 30;
// Link attributes.
const IFLA_IFNAME: u16 = 3;
// Nexthop attributes.
const NHA_ID: u16 = 1;
const NHA_GROUP: u16 = 2;
const NHA_BLACKHOLE: u16 = 4;
const NHA_OIF: u16 = 5;
const NHA_GATEWAY: u16 = 6;
/// The type bits of `nla_type` (the top two are the nested and byte-order
/// flags).
const NLA_TYPE_MASK: u16 = 0x3fff;

/// Most hops a route or nexthop group may have; more is refused as
/// unsupported (the kernel's own ECMP limit is far lower in practice).
pub const MAX_HOPS: usize = 256;

/// One way out as netlink gives it: the interface index and, for a route
/// via a router, the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NlHop {
    /// The outgoing interface's index in the router's namespace.
    pub ifindex: u32,
    /// The next router; `None` for a directly attached network.
    pub gateway: Option<IpAddr>,
}

/// A route's hops, inline for one (nearly every route has one).
pub type NlHops = smallvec::SmallVec<[NlHop; 1]>;

/// An `RTM_NEWROUTE` or `RTM_DELROUTE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteMsg {
    /// `RTM_DELROUTE`.
    pub delete: bool,
    /// The message's flags (`NLM_F_REPLACE`, `NLM_F_APPEND`).
    pub flags: u16,
    /// The destination.
    pub prefix: RoutePrefix,
    /// The routing table (`RTA_TABLE`, else `rtm_table`).
    pub table: u32,
    /// Who installed it (`rtm_protocol`: 2 kernel, 3 boot, 4 static,
    /// 12 bird, 186 bgp, 188 ospf, ...).
    pub protocol: u8,
    /// `rtm_type` (1 unicast, 6 blackhole, 7 unreachable, ...).
    pub kind: u8,
    /// The route's metric (`RTA_PRIORITY`): of several routes for one
    /// prefix the kernel uses the lowest.
    pub metric: u32,
    /// Its hops (several for ECMP), empty when it names a nexthop object
    /// or has none.
    pub hops: NlHops,
    /// The nexthop object it uses (`RTA_NH_ID`).
    pub nh_id: Option<u32>,
    /// Why bricks cannot forward by this route, if it cannot: a source
    /// prefix, a TOS, a cache entry, an encapsulation, an IPv6 gateway for
    /// an IPv4 route.
    pub unsupported: Option<&'static str>,
}

/// An `RTM_NEWNEXTHOP` or `RTM_DELNEXTHOP` (nexthop objects, Linux 5.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NexthopMsg {
    /// `RTM_DELNEXTHOP`.
    pub delete: bool,
    /// Its id.
    pub id: u32,
    /// A single nexthop's hop.
    pub hop: Option<NlHop>,
    /// A group's member ids.
    pub group: Vec<u32>,
    /// A blackhole nexthop.
    pub blackhole: bool,
}

/// One decoded message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message<'a> {
    /// A route.
    Route(RouteMsg),
    /// A link appeared, changed or (with `deleted`) went away.
    Link {
        /// Its index.
        index: u32,
        /// Its name, when the message carries it.
        name: Option<&'a str>,
        /// `RTM_DELLINK`.
        deleted: bool,
    },
    /// A nexthop object.
    Nexthop(NexthopMsg),
    /// The end of a dump.
    Done,
    /// An error or acknowledgement (0) for a request.
    Error(i32),
    /// A message of a type a route source does not read.
    Other(u16),
}

/// Why a message could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The buffer ends inside a message or its header.
    Truncated,
    /// A header or attribute length is impossible.
    Malformed(&'static str),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Truncated => f.write_str("truncated message"),
            DecodeError::Malformed(why) => write!(f, "malformed message: {why}"),
        }
    }
}

/// One netlink message in a buffer: its header fields and payload.
#[derive(Debug, Clone, Copy)]
pub struct Raw<'a> {
    /// `nlmsg_type`.
    pub ty: u16,
    /// `nlmsg_flags`.
    pub flags: u16,
    /// `nlmsg_seq`.
    pub seq: u32,
    /// Everything after the 16-byte header.
    pub payload: &'a [u8],
}

#[inline]
fn align4(n: usize) -> usize {
    (n + 3) & !3
}

#[inline]
fn u16_ne(b: &[u8]) -> u16 {
    u16::from_ne_bytes([b[0], b[1]])
}

#[inline]
fn u32_ne(b: &[u8]) -> u32 {
    u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
}

/// The messages of a buffer, in order. A message that does not fit ends
/// the iteration with an error (what follows it cannot be found).
pub fn messages(buf: &[u8]) -> Messages<'_> {
    Messages { buf, done: false }
}

/// Iterator returned by [`messages`].
pub struct Messages<'a> {
    buf: &'a [u8],
    done: bool,
}

impl<'a> Iterator for Messages<'a> {
    type Item = Result<Raw<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.buf.is_empty() {
            return None;
        }
        if self.buf.len() < NLMSG_HDRLEN {
            self.done = true;
            return Some(Err(DecodeError::Truncated));
        }
        let len = u32_ne(&self.buf[0..4]) as usize;
        if len < NLMSG_HDRLEN {
            self.done = true;
            return Some(Err(DecodeError::Malformed(
                "nlmsg_len below the header's size",
            )));
        }
        if len > self.buf.len() {
            self.done = true;
            return Some(Err(DecodeError::Truncated));
        }
        let raw = Raw {
            ty: u16_ne(&self.buf[4..6]),
            flags: u16_ne(&self.buf[6..8]),
            seq: u32_ne(&self.buf[8..12]),
            payload: &self.buf[NLMSG_HDRLEN..len],
        };
        self.buf = &self.buf[align4(len).min(self.buf.len())..];
        Some(Ok(raw))
    }
}

/// The attributes of a payload after its fixed header, as (type, value).
fn attrs(mut b: &[u8]) -> impl Iterator<Item = Result<(u16, &[u8]), DecodeError>> {
    std::iter::from_fn(move || {
        if b.len() < 4 {
            // Trailing bytes shorter than an attribute header are padding.
            return None;
        }
        let len = u16_ne(&b[0..2]) as usize;
        let ty = u16_ne(&b[2..4]) & NLA_TYPE_MASK;
        if len < 4 {
            b = &[];
            return Some(Err(DecodeError::Malformed("attribute length below 4")));
        }
        if len > b.len() {
            b = &[];
            return Some(Err(DecodeError::Truncated));
        }
        let value = &b[4..len];
        b = &b[align4(len).min(b.len())..];
        Some(Ok((ty, value)))
    })
}

fn addr(family: u8, v: &[u8]) -> Result<IpAddr, DecodeError> {
    match (family, v.len()) {
        (AF_INET, 4) => Ok(IpAddr::V4(Ipv4Addr::new(v[0], v[1], v[2], v[3]))),
        (AF_INET6, 16) => {
            let mut a = [0u8; 16];
            a.copy_from_slice(v);
            Ok(IpAddr::V6(Ipv6Addr::from(a)))
        }
        _ => Err(DecodeError::Malformed("address of the wrong length")),
    }
}

/// Decodes one message's payload by its type.
pub fn decode(raw: Raw<'_>) -> Result<Message<'_>, DecodeError> {
    match raw.ty {
        RTM_NEWROUTE | RTM_DELROUTE => route(raw).map(Message::Route),
        RTM_NEWLINK | RTM_DELLINK => link(raw),
        RTM_NEWNEXTHOP | RTM_DELNEXTHOP => nexthop(raw).map(Message::Nexthop),
        NLMSG_DONE => Ok(Message::Done),
        NLMSG_ERROR => {
            let p = raw.payload;
            if p.len() < 4 {
                return Err(DecodeError::Truncated);
            }
            Ok(Message::Error(u32_ne(&p[0..4]) as i32))
        }
        ty => Ok(Message::Other(ty)),
    }
}

fn route(raw: Raw<'_>) -> Result<RouteMsg, DecodeError> {
    // struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope,
    // type (one byte each), flags (u32).
    let p = raw.payload;
    if p.len() < 12 {
        return Err(DecodeError::Truncated);
    }
    let (family, dst_len, src_len, tos) = (p[0], p[1], p[2], p[3]);
    let (mut table, protocol, kind) = (u32::from(p[4]), p[5], p[7]);
    let rtm_flags = u32_ne(&p[8..12]);
    let max_len = match family {
        AF_INET => 32,
        AF_INET6 => 128,
        _ => return Err(DecodeError::Malformed("route of an unknown address family")),
    };
    if dst_len > max_len {
        return Err(DecodeError::Malformed("prefix length beyond the address"));
    }
    let mut dst: Option<IpAddr> = None;
    let mut oif = None;
    let mut gateway = None;
    let mut metric = 0;
    let mut hops = NlHops::new();
    let mut nh_id = None;
    let mut unsupported = None;
    if src_len != 0 {
        unsupported = Some("a source-specific route");
    } else if tos != 0 {
        unsupported = Some("a route for one TOS");
    } else if rtm_flags & RTM_F_CLONED != 0 {
        unsupported = Some("a cache entry");
    }
    for a in attrs(&p[12..]) {
        let (ty, v) = a?;
        match ty {
            RTA_DST => dst = Some(addr(family, v)?),
            RTA_OIF if v.len() == 4 => oif = Some(u32_ne(v)),
            RTA_GATEWAY => gateway = Some(addr(family, v)?),
            RTA_PRIORITY if v.len() == 4 => metric = u32_ne(v),
            RTA_TABLE if v.len() == 4 => table = u32_ne(v),
            RTA_NH_ID if v.len() == 4 => nh_id = Some(u32_ne(v)),
            RTA_VIA => unsupported = Some("a gateway of the other address family (RTA_VIA)"),
            RTA_ENCAP => unsupported = Some("an encapsulating route"),
            RTA_MULTIPATH => multipath(family, v, &mut hops, &mut unsupported)?,
            RTA_OIF | RTA_PRIORITY | RTA_TABLE | RTA_NH_ID => {
                return Err(DecodeError::Malformed("u32 attribute of the wrong length"))
            }
            _ => {}
        }
    }
    if hops.is_empty() {
        if let Some(ifindex) = oif {
            hops.push(NlHop { ifindex, gateway });
        }
    }
    let prefix = match (family, dst) {
        (AF_INET, None) => RoutePrefix::V4(Prefix4::new(0, 0)),
        (_, None) => RoutePrefix::V6(Prefix6::new(0, 0)),
        (_, Some(IpAddr::V4(a))) => {
            let p = Prefix4::new(u32::from(a), dst_len);
            if p.addr != u32::from(a) {
                return Err(DecodeError::Malformed("destination with host bits set"));
            }
            RoutePrefix::V4(p)
        }
        (_, Some(IpAddr::V6(a))) => {
            let p = Prefix6::new(u128::from(a), dst_len);
            if p.addr != u128::from(a) {
                return Err(DecodeError::Malformed("destination with host bits set"));
            }
            RoutePrefix::V6(p)
        }
    };
    Ok(RouteMsg {
        delete: raw.ty == RTM_DELROUTE,
        flags: raw.flags,
        prefix,
        table,
        protocol,
        kind,
        metric,
        hops,
        nh_id,
        unsupported,
    })
}

/// `RTA_MULTIPATH`: a list of `struct rtnexthop` (len u16, flags u8,
/// hops u8, ifindex i32), each followed by its own attributes.
fn multipath(
    family: u8,
    mut v: &[u8],
    hops: &mut NlHops,
    unsupported: &mut Option<&'static str>,
) -> Result<(), DecodeError> {
    while v.len() >= 8 {
        let len = u16_ne(&v[0..2]) as usize;
        if len < 8 {
            return Err(DecodeError::Malformed("rtnexthop length below 8"));
        }
        if len > v.len() {
            return Err(DecodeError::Truncated);
        }
        let ifindex = u32_ne(&v[4..8]);
        let mut gateway = None;
        for a in attrs(&v[8..len]) {
            let (ty, value) = a?;
            match ty {
                RTA_GATEWAY => gateway = Some(addr(family, value)?),
                RTA_VIA => *unsupported = Some("a gateway of the other address family (RTA_VIA)"),
                RTA_ENCAP => *unsupported = Some("an encapsulating route"),
                _ => {}
            }
        }
        if hops.len() == MAX_HOPS {
            *unsupported = Some("more than 256 paths");
        } else {
            hops.push(NlHop { ifindex, gateway });
        }
        v = &v[align4(len).min(v.len())..];
    }
    Ok(())
}

fn link(raw: Raw<'_>) -> Result<Message<'_>, DecodeError> {
    // struct ifinfomsg: family u8, pad u8, type u16, index i32, flags u32,
    // change u32.
    let p = raw.payload;
    if p.len() < 16 {
        return Err(DecodeError::Truncated);
    }
    let index = u32_ne(&p[4..8]);
    let mut name = None;
    for a in attrs(&p[16..]) {
        let (ty, v) = a?;
        if ty == IFLA_IFNAME {
            let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
            name = Some(
                std::str::from_utf8(&v[..end])
                    .map_err(|_| DecodeError::Malformed("interface name not UTF-8"))?,
            );
        }
    }
    Ok(Message::Link {
        index,
        name,
        deleted: raw.ty == RTM_DELLINK,
    })
}

fn nexthop(raw: Raw<'_>) -> Result<NexthopMsg, DecodeError> {
    // struct nhmsg: family, scope, protocol, resvd (u8 each), flags u32.
    let p = raw.payload;
    if p.len() < 8 {
        return Err(DecodeError::Truncated);
    }
    let family = p[0];
    let mut id = None;
    let mut oif = None;
    let mut gateway = None;
    let mut group = Vec::new();
    let mut blackhole = false;
    for a in attrs(&p[8..]) {
        let (ty, v) = a?;
        match ty {
            NHA_ID if v.len() == 4 => id = Some(u32_ne(v)),
            NHA_OIF if v.len() == 4 => oif = Some(u32_ne(v)),
            NHA_GATEWAY => gateway = Some(addr(family, v)?),
            NHA_BLACKHOLE => blackhole = true,
            NHA_GROUP => {
                // struct nexthop_grp: id u32, weight u8, resvd1 u8,
                // resvd2 u16.
                for m in v.chunks_exact(8).take(MAX_HOPS) {
                    group.push(u32_ne(&m[0..4]));
                }
            }
            _ => {}
        }
    }
    let id = id.ok_or(DecodeError::Malformed("nexthop without NHA_ID"))?;
    Ok(NexthopMsg {
        delete: raw.ty == RTM_DELNEXTHOP,
        id,
        hop: oif.map(|ifindex| NlHop { ifindex, gateway }),
        group,
        blackhole,
    })
}

/// A dump request: `RTM_GETLINK`, `RTM_GETROUTE` or `RTM_GETNEXTHOP` for
/// `family`, with sequence number `seq`.
pub fn dump_request(ty: u16, family: u8, seq: u32) -> Vec<u8> {
    // The request's fixed header: ifinfomsg (16 bytes) for links, rtmsg
    // (12) for routes, nhmsg (8) for nexthops; only the family is set.
    let body = match ty {
        RTM_GETLINK => 16,
        RTM_GETNEXTHOP => 8,
        _ => 12,
    };
    let len = NLMSG_HDRLEN + body;
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&ty.to_ne_bytes());
    m.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.push(family);
    m.resize(len, 0);
    m
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a netlink message by hand: header, fixed part, attributes.
    pub(crate) fn msg(ty: u16, flags: u16, fixed: &[u8], attrs: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut body = fixed.to_vec();
        for (t, v) in attrs {
            body.extend_from_slice(&((4 + v.len()) as u16).to_ne_bytes());
            body.extend_from_slice(&t.to_ne_bytes());
            body.extend_from_slice(v);
            body.resize(align4(body.len()), 0);
        }
        let mut m = Vec::new();
        m.extend_from_slice(&((NLMSG_HDRLEN + body.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&ty.to_ne_bytes());
        m.extend_from_slice(&flags.to_ne_bytes());
        m.extend_from_slice(&7u32.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&body);
        m
    }

    /// An IPv4 route message: `dst/len via gw dev oif table t proto p`.
    pub(crate) fn route4(
        ty: u16,
        dst: [u8; 4],
        len: u8,
        gw: Option<[u8; 4]>,
        oif: u32,
        table: u32,
        metric: u32,
    ) -> Vec<u8> {
        let fixed = [AF_INET, len, 0, 0, 254, 12, 0, RTN_UNICAST, 0, 0, 0, 0];
        let mut a = vec![
            (RTA_TABLE, table.to_ne_bytes().to_vec()),
            (RTA_DST, dst.to_vec()),
            (RTA_OIF, oif.to_ne_bytes().to_vec()),
            (RTA_PRIORITY, metric.to_ne_bytes().to_vec()),
        ];
        if let Some(g) = gw {
            a.push((RTA_GATEWAY, g.to_vec()));
        }
        msg(ty, 0, &fixed, &a)
    }

    fn one(buf: &[u8]) -> Message<'_> {
        let mut it = messages(buf);
        let m = decode(it.next().unwrap().unwrap()).unwrap();
        assert!(it.next().is_none());
        m
    }

    #[test]
    fn an_ipv4_route_with_a_gateway() {
        let b = route4(
            RTM_NEWROUTE,
            [10, 1, 0, 0],
            16,
            Some([10, 0, 0, 2]),
            3,
            100,
            20,
        );
        let Message::Route(r) = one(&b) else {
            panic!("not a route")
        };
        assert_eq!(r.prefix.to_string(), "10.1.0.0/16");
        assert_eq!(r.table, 100);
        assert_eq!(r.protocol, 12);
        assert_eq!(r.metric, 20);
        assert!(!r.delete);
        assert_eq!(
            r.hops.as_slice(),
            [NlHop {
                ifindex: 3,
                gateway: Some("10.0.0.2".parse().unwrap())
            }]
        );
        assert_eq!(r.unsupported, None);
    }

    #[test]
    fn a_default_route_has_no_destination_attribute() {
        let fixed = [AF_INET6, 0, 0, 0, 254, 186, 0, RTN_UNICAST, 0, 0, 0, 0];
        let gw: Ipv6Addr = "fe80::1".parse().unwrap();
        let b = msg(
            RTM_DELROUTE,
            0,
            &fixed,
            &[
                (RTA_OIF, 2u32.to_ne_bytes().to_vec()),
                (RTA_GATEWAY, gw.octets().to_vec()),
            ],
        );
        let Message::Route(r) = one(&b) else {
            panic!("not a route")
        };
        assert!(r.delete);
        assert_eq!(r.prefix.to_string(), "::/0");
        assert_eq!(r.table, 254);
        assert_eq!(r.hops[0].gateway, Some(IpAddr::V6(gw)));
    }

    /// An IPv4 ECMP route: `dst/len table t nexthop via gw dev oif ...`,
    /// `replace`.
    pub(crate) fn multipath4(
        dst: [u8; 4],
        len: u8,
        table: u32,
        hops: &[(u32, [u8; 4])],
    ) -> Vec<u8> {
        let fixed = [AF_INET, len, 0, 0, 254, 4, 0, RTN_UNICAST, 0, 0, 0, 0];
        let mut mp = Vec::new();
        for (ifindex, gw) in hops {
            mp.extend_from_slice(&16u16.to_ne_bytes());
            mp.extend_from_slice(&[0, 0]);
            mp.extend_from_slice(&ifindex.to_ne_bytes());
            mp.extend_from_slice(&8u16.to_ne_bytes());
            mp.extend_from_slice(&RTA_GATEWAY.to_ne_bytes());
            mp.extend_from_slice(gw);
        }
        msg(
            RTM_NEWROUTE,
            NLM_F_REPLACE,
            &fixed,
            &[
                (RTA_TABLE, table.to_ne_bytes().to_vec()),
                (RTA_DST, dst.to_vec()),
                (RTA_MULTIPATH, mp),
            ],
        )
    }

    #[test]
    fn multipath_routes_give_every_hop() {
        let b = multipath4(
            [192, 0, 2, 0],
            24,
            254,
            &[(2, [10, 0, 0, 2]), (3, [10, 0, 1, 2])],
        );
        let Message::Route(r) = one(&b) else {
            panic!("not a route")
        };
        assert_eq!(r.flags, NLM_F_REPLACE);
        assert_eq!(r.hops.len(), 2);
        assert_eq!(r.hops[1].ifindex, 3);
        assert_eq!(r.hops[1].gateway, Some("10.0.1.2".parse().unwrap()));
    }

    #[test]
    fn what_cannot_be_forwarded_is_said() {
        let fixed = [AF_INET, 24, 8, 0, 254, 4, 0, RTN_UNICAST, 0, 0, 0, 0];
        let b = msg(RTM_NEWROUTE, 0, &fixed, &[(RTA_DST, vec![192, 0, 2, 0])]);
        let Message::Route(r) = one(&b) else {
            panic!("not a route")
        };
        assert_eq!(r.unsupported, Some("a source-specific route"));
        let fixed = [AF_INET, 24, 0, 0, 254, 4, 0, RTN_UNICAST, 0, 0, 0, 0];
        let b = msg(
            RTM_NEWROUTE,
            0,
            &fixed,
            &[(RTA_DST, vec![192, 0, 2, 0]), (RTA_VIA, vec![10, 0, 0, 0])],
        );
        let Message::Route(r) = one(&b) else {
            panic!("not a route")
        };
        assert!(r.unsupported.unwrap().contains("RTA_VIA"));
    }

    #[test]
    fn links_and_nexthops() {
        let mut fixed = [0u8; 16];
        fixed[4..8].copy_from_slice(&7u32.to_ne_bytes());
        let b = msg(
            RTM_NEWLINK,
            0,
            &fixed,
            &[(IFLA_IFNAME, b"r-eth1\0".to_vec())],
        );
        assert_eq!(
            one(&b),
            Message::Link {
                index: 7,
                name: Some("r-eth1"),
                deleted: false
            }
        );
        let nh = [AF_INET, 0, 11, 0, 0, 0, 0, 0];
        let b = msg(
            RTM_NEWNEXTHOP,
            0,
            &nh,
            &[
                (NHA_ID, 12u32.to_ne_bytes().to_vec()),
                (NHA_OIF, 7u32.to_ne_bytes().to_vec()),
                (NHA_GATEWAY, vec![10, 0, 0, 9]),
            ],
        );
        let Message::Nexthop(n) = one(&b) else {
            panic!("not a nexthop")
        };
        assert_eq!(n.id, 12);
        assert_eq!(n.hop.unwrap().ifindex, 7);
        let mut grp = Vec::new();
        for id in [12u32, 13] {
            grp.extend_from_slice(&id.to_ne_bytes());
            grp.extend_from_slice(&[1, 0, 0, 0]);
        }
        let b = msg(
            RTM_NEWNEXTHOP,
            0,
            &[0u8; 8],
            &[(NHA_ID, 20u32.to_ne_bytes().to_vec()), (NHA_GROUP, grp)],
        );
        let Message::Nexthop(n) = one(&b) else {
            panic!("not a nexthop")
        };
        assert_eq!(n.group, vec![12, 13]);
    }

    #[test]
    fn hostile_bytes_are_errors_not_panics() {
        let good = route4(
            RTM_NEWROUTE,
            [10, 1, 0, 0],
            16,
            Some([10, 0, 0, 2]),
            3,
            100,
            0,
        );
        // Every truncation of a good message.
        for n in 0..good.len() {
            let mut b = good[..n].to_vec();
            if n >= 4 {
                // Keep the header's length consistent with what is left, so
                // the attributes themselves are cut.
                b[0..4].copy_from_slice(&(n as u32).to_ne_bytes());
            }
            for raw in messages(&b).flatten() {
                let _ = decode(raw);
            }
        }
        // Every single-byte corruption.
        for i in 0..good.len() {
            for v in [0u8, 1, 3, 0x7f, 0xff] {
                let mut b = good.clone();
                b[i] = v;
                for raw in messages(&b).flatten() {
                    let _ = decode(raw);
                }
            }
        }
        // A prefix length beyond the address.
        let mut b = good.clone();
        b[NLMSG_HDRLEN + 1] = 33;
        assert!(decode(messages(&b).next().unwrap().unwrap()).is_err());
        // Host bits.
        let b = route4(RTM_NEWROUTE, [10, 1, 0, 1], 16, None, 3, 100, 0);
        assert_eq!(
            decode(messages(&b).next().unwrap().unwrap()),
            Err(DecodeError::Malformed("destination with host bits set"))
        );
        // A header that claims more than the buffer holds.
        let mut b = good.clone();
        b[0..4].copy_from_slice(&1000u32.to_ne_bytes());
        assert_eq!(
            messages(&b).next().unwrap().unwrap_err(),
            DecodeError::Truncated
        );
    }

    /// Real bytes: the IPv6 messages zebra (FRR 8.4) sent over FPM (see
    /// `fpm::tests::FRR_IPV6_MULTIPATH`), past their 4-byte FPM headers.
    #[test]
    fn zebras_ipv6_routes_decode() {
        let stream = include_bytes!("testdata/frr-8.4-ipv6-multipath.fpm");
        let mut routes = Vec::new();
        let mut at = 0;
        while at < stream.len() {
            let len = usize::from(u16::from_be_bytes([stream[at + 2], stream[at + 3]]));
            for raw in messages(&stream[at + 4..at + len]) {
                match decode(raw.unwrap()).unwrap() {
                    Message::Route(r) => routes.push(r),
                    m => panic!("not a route: {m:?}"),
                }
            }
            at += len;
        }
        let gw = |s: &str| Some(IpAddr::V6(s.parse().unwrap()));
        // 2001:db8:97::/48 over two paths: RTA_MULTIPATH (nested flag set).
        let r = routes
            .iter()
            .find(|r| r.prefix.to_string() == "2001:db8:97::/48" && r.hops.len() == 2)
            .unwrap();
        assert!(!r.delete);
        assert_eq!(
            (r.table, r.protocol, r.metric, r.kind),
            (254, 196, 20, RTN_UNICAST)
        );
        assert_eq!(r.flags & NLM_F_REPLACE, 0);
        assert_eq!(
            r.hops.as_slice(),
            [
                NlHop {
                    ifindex: 3,
                    gateway: gw("2001:db8:2::2")
                },
                NlHop {
                    ifindex: 5,
                    gateway: gw("2001:db8:3::2")
                },
            ]
        );
        assert_eq!(r.unsupported, None);
        // One path: RTA_GATEWAY and RTA_OIF.
        let r = routes
            .iter()
            .find(|r| r.prefix.to_string() == "2001:db8:99::/48" && !r.delete)
            .unwrap();
        assert_eq!(
            r.hops.as_slice(),
            [NlHop {
                ifindex: 3,
                gateway: gw("2001:db8:2::2")
            }]
        );
        // A blackhole has no hops; a connected network no gateway.
        let r = routes
            .iter()
            .find(|r| r.prefix.to_string() == "2001:db8:96::/48")
            .unwrap();
        assert_eq!((r.kind, r.hops.len()), (6, 0));
        let r = routes
            .iter()
            .find(|r| r.prefix.to_string() == "2001:db8:3::/64")
            .unwrap();
        assert_eq!(
            (r.protocol, r.hops[0].ifindex, r.hops[0].gateway),
            (2, 5, None)
        );
        // Zebra's deletions name the prefix only.
        let dels: Vec<String> = routes
            .iter()
            .filter(|r| r.delete)
            .map(|r| {
                assert!(r.hops.is_empty());
                r.prefix.to_string()
            })
            .collect();
        assert_eq!(
            dels,
            ["2001:db8:97::/48", "2001:db8:99::/48", "2001:db8:96::/48"]
        );
    }

    #[test]
    fn a_dump_request_is_well_formed() {
        let r = dump_request(RTM_GETROUTE, AF_INET6, 9);
        assert_eq!(r.len(), 28);
        let raw = messages(&r).next().unwrap().unwrap();
        assert_eq!(raw.ty, RTM_GETROUTE);
        assert_eq!(raw.flags, NLM_F_REQUEST | NLM_F_DUMP);
        assert_eq!(raw.seq, 9);
        assert_eq!(raw.payload[0], AF_INET6);
    }
}
