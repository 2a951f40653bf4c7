//! `ICMP6PingResponder`: answers ICMPv6 echo requests addressed to the
//! router with echo replies (RFC 4443 section 4; RFC 4294/8504: every
//! IPv6 node answers them).
//!
//! The reply is the request turned around in place: addresses swapped,
//! type 128 becomes 129, a fresh hop limit, extension headers dropped, and
//! the checksum recomputed over the pseudo-header, so identifier, sequence
//! number and data come back untouched as section 4.2 requires.

use super::header6::{addr_at, is_multicast, is_unspecified};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::icmpv6::Icmpv6Packet;
use bricks_wire::ipv6ext;
use std::net::Ipv6Addr;

/// The `ICMP6PingResponder` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ICMP6PingResponder",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "answers ICMPv6 echo requests with echo replies",
    synopsis: "ICMP6PingResponder([MULTICAST_SRC ADDR])",
    description: "Click has no such element; this one is ICMPPingResponder for IPv6, \
        under the name Click would give it. Expects IPv6 packets, with the network \
        header annotation set or the header at the start of the data, usually those a \
        route lookup delivered locally. An ICMPv6 echo request (type 128, code 0) with \
        a correct checksum leaves on output 0 turned into its echo reply (RFC 4443 \
        section 4.2): source and destination swapped, type 129, hop limit 255, \
        identifier, sequence number and data unchanged, checksum recomputed. \
        Extension headers of the request are not returned (a Routing header is never \
        reversed, RFC 8200 section 4.4): the reply carries the ICMPv6 message right \
        after its IPv6 header. The reply's IPv6 destination annotation is set to its \
        new destination, so it can go back into LookupIP6Route.\n\n\
        Other packets go to output 1, or are dropped and counted if it is \
        unconnected: anything but a whole, checksummed echo request, fragments \
        (bricks does not reassemble here), requests to a multicast group unless \
        MULTICAST_SRC is given, and requests from the unspecified or a multicast \
        address, which cannot be answered.\n\n\
        An echo request to a multicast group SHOULD be answered, from a unicast \
        address of the interface it came in by (RFC 4443 sections 4.2 and 2.2): \
        give that address as MULTICAST_SRC, in an element that sees only that \
        interface's packets, and requests to the groups every router is in, \
        all-nodes (ff02::1) and all-routers (ff02::2, ff05::2), are answered from \
        it. Requests to other groups still leave on output 1.",
    ports: "one input; output 0 echo replies; optional output 1 other packets (push)",
    keywords: &[Keyword {
        name: "MULTICAST_SRC",
        ty: "IPv6 address",
        default: None,
        doc: "a unicast address of the interface: requests to all-nodes and all-routers \
              are answered from it (bricks)",
    }],
    counters: &[
        ("replies", "echo requests answered"),
        (
            "other",
            "packets that were not echo requests this element can answer",
        ),
    ],
    example: "InfiniteSource(DATA \\<60 00 00 00 00 10 3a 40 20 01 0d b8 00 00 00 00 \
        00 00 00 00 00 00 00 01 20 01 0d b8 00 01 00 00 00 00 00 00 00 00 00 02 \
        80 00 f9 fe 1a 2b 00 01 01 02 03 04 05 06 07 08>, LIMIT 1) \
        -> ping :: ICMP6PingResponder -> Discard; ping[1] -> Discard;",
    see_also: &["ICMPPingResponder", "ICMP6Error", "LookupIP6Route"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let multicast_src: Option<Ipv6Addr> = args.read("MULTICAST_SRC")?;
    if multicast_src.is_some_and(|a| a.is_multicast() || a.is_unspecified()) {
        return Err(ArgError::new(
            "MULTICAST_SRC must be a unicast IPv6 address",
        ));
    }
    Ok(Box::new(ICMP6PingResponder {
        multicast_src: multicast_src.map(|a| a.octets()),
        has_other: ports.noutputs() > 1,
        replies: 0,
        other: 0,
    }))
}

/// Answers IPv6 pings.
#[derive(Debug)]
pub struct ICMP6PingResponder {
    /// MULTICAST_SRC.
    multicast_src: Option<[u8; 16]>,
    has_other: bool,
    replies: u64,
    other: u64,
}

/// Hop limit of a reply, as ICMPPingResponder's TTL.
const REPLY_HLIM: u8 = 255;

/// The groups every router is in: all-nodes (link scope) and all-routers
/// (link and site scope), RFC 4291 section 2.7.1.
const ROUTER_GROUPS: [[u8; 16]; 3] = [
    [0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    [0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
    [0xff, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
];

/// Where the echo request's ICMPv6 message is in `ip` and how long it is,
/// if `ip` holds one this element can answer; requests to a group only
/// when `to_groups` (MULTICAST_SRC is set).
fn echo_request(ip: &[u8], to_groups: bool) -> Option<(usize, usize)> {
    if ip.len() < 40 || ip[0] >> 4 != 6 {
        return None;
    }
    let len = 40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]));
    let ip = ip.get(..len)?;
    let (src, dst) = (addr_at(ip, 8), addr_at(ip, 24));
    if is_multicast(&src) || is_unspecified(&src) {
        return None;
    }
    if is_multicast(&dst) && !(to_groups && ROUTER_GROUPS.contains(&dst)) {
        return None;
    }
    let chain = ipv6ext::walk(ip).ok()?;
    if chain.upper != 58 || chain.fragment.is_some() {
        return None;
    }
    let icmp = Icmpv6Packet::new_checked(&ip[chain.upper_offset..]).ok()?;
    let ok = icmp.msg_type() == bricks_wire::icmpv6::Icmpv6Message::EchoRequest
        && icmp.msg_code() == 0
        && icmp.verify_checksum(Ipv6Addr::from(src), Ipv6Addr::from(dst));
    ok.then_some((chain.upper_offset, len - chain.upper_offset))
}

impl ICMP6PingResponder {
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        let Some((at, icmp_len)) = echo_request(p.l3_bytes(), self.multicast_src.is_some()) else {
            self.other += 1;
            return self.has_other.then_some(1);
        };
        let ip = p.l3_bytes_mut();
        let excess = ip.len() - at - icmp_len;
        // Drop the extension headers: the message moves up behind the
        // fixed header, and the packet loses what it no longer holds.
        ip.copy_within(at..at + icmp_len, 40);
        ip[4..6].copy_from_slice(&(icmp_len as u16).to_be_bytes());
        ip[6] = 58;
        ip[7] = REPLY_HLIM;
        let (head, tail) = ip.split_at_mut(24);
        head[8..24].swap_with_slice(&mut tail[..16]);
        if let (true, Some(me)) = (is_multicast(&addr_at(ip, 8)), self.multicast_src) {
            ip[8..24].copy_from_slice(&me);
        }
        let (src, dst) = (addr_at(ip, 8), addr_at(ip, 24));
        let mut icmp = Icmpv6Packet::new_unchecked(&mut ip[40..40 + icmp_len]);
        icmp.set_msg_type(bricks_wire::icmpv6::Icmpv6Message::EchoReply);
        icmp.fill_checksum(Ipv6Addr::from(src), Ipv6Addr::from(dst));
        p.take_back(excess + (at - 40));
        p.anno_mut().dst_ip6 = Ipv6Addr::from(dst);
        self.replies += 1;
        Some(0)
    }
}

impl Element for ICMP6PingResponder {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("replies", self.replies);
        s.counter("other", self.other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::{icmp6_ok, udp, udp_with, ECHO_REQUEST, HOST_A, HOST_B};
    use bricks_runtime::testing::Harness;
    use bricks_wire::ipv6ext::{DEST_OPTS, FRAGMENT};

    fn answer(frame: &[u8]) -> Result<Packet, Vec<u8>> {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, frame);
        let mut out = h.take(0);
        match out.pop() {
            Some(p) => Ok(p),
            None => Err(h.take_bytes(1).pop().expect("to output 1")),
        }
    }

    #[test]
    fn a_request_becomes_its_reply() {
        assert!(icmp6_ok(&ECHO_REQUEST, 40), "the vector is a valid request");
        let p = answer(&ECHO_REQUEST).unwrap();
        let r = p.data();
        assert_eq!(r.len(), ECHO_REQUEST.len());
        assert_eq!(&r[..7], &ECHO_REQUEST[..7]);
        assert_eq!(r[7], 255);
        assert_eq!(&r[8..24], &HOST_B, "source is the router");
        assert_eq!(&r[24..40], &HOST_A);
        assert_eq!(r[40], 129);
        assert_eq!(&r[41..42], &[0]);
        assert_eq!(&r[44..], &ECHO_REQUEST[44..], "id, seq and data unchanged");
        assert!(icmp6_ok(r, 40));
        // Only the type changed in what the checksum covers: 0xf9fe - 0x0100.
        assert_eq!(&r[42..44], &[0xf8, 0xfe]);
        assert_eq!(p.anno().dst_ip6, Ipv6Addr::from(HOST_A));
    }

    #[test]
    fn extension_headers_are_dropped_from_the_reply() {
        // The same request behind a Destination Options header (PadN).
        let mut req = ECHO_REQUEST[..40].to_vec();
        req[4..6].copy_from_slice(&24u16.to_be_bytes());
        req[6] = DEST_OPTS;
        req.extend([58, 0, 1, 4, 0, 0, 0, 0]);
        req.extend(&ECHO_REQUEST[40..]);
        req.extend([0; 6]); // link padding
        let ext = answer(&req).unwrap();
        let plain = answer(&ECHO_REQUEST).unwrap();
        assert_eq!(ext.data(), plain.data());
    }

    #[test]
    fn requests_to_router_groups_are_answered_from_multicast_src() {
        let group = |g: &str| {
            let mut r = ECHO_REQUEST;
            let g: Ipv6Addr = g.parse().unwrap();
            r[24..40].copy_from_slice(&g.octets());
            // The checksum covers the destination: fix it for the group.
            let (src, dst) = (Ipv6Addr::from(addr_at(&r, 8)), g);
            Icmpv6Packet::new_unchecked(&mut r[40..]).fill_checksum(src, dst);
            r
        };
        let me: Ipv6Addr = "fe80::1".parse().unwrap();
        for g in ["ff02::1", "ff02::2", "ff05::2"] {
            let mut h = Harness::push(&CLASS, "MULTICAST_SRC fe80::1", 1, 2);
            h.push_bytes(0, &group(g));
            let out = h.take_bytes(0);
            assert_eq!(out.len(), 1, "{g}");
            let r = &out[0];
            assert_eq!(&r[8..24], &me.octets(), "from MULTICAST_SRC");
            assert_eq!(&r[24..40], &HOST_A);
            assert_eq!(r[40], 129);
            assert!(icmp6_ok(r, 40));
            assert_eq!(&r[44..], &ECHO_REQUEST[44..]);
        }
        // Other groups, and any group without MULTICAST_SRC: output 1.
        for (args, g) in [
            ("MULTICAST_SRC fe80::1", "ff02::16"),
            ("MULTICAST_SRC fe80::1", "ff0e::1"),
            ("", "ff02::1"),
        ] {
            let mut h = Harness::push(&CLASS, args, 1, 2);
            h.push_bytes(0, &group(g));
            assert!(h.take(0).is_empty(), "{args} {g}");
            assert_eq!(h.take(1).len(), 1);
        }
        // Unicast requests are still answered from their destination.
        let mut h = Harness::push(&CLASS, "MULTICAST_SRC fe80::1", 1, 2);
        h.push_bytes(0, &ECHO_REQUEST);
        assert_eq!(&h.take_bytes(0)[0][8..24], &HOST_B);
        for bad in ["MULTICAST_SRC ff02::1", "MULTICAST_SRC ::", "fe80::1"] {
            assert!(
                bricks_runtime::testing::make_element(&CLASS, bad, &PortInfo::default()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn other_packets_go_to_output_1() {
        let mut bad_sum = ECHO_REQUEST;
        bad_sum[43] ^= 1;
        let mut reply = ECHO_REQUEST;
        reply[40] = 129;
        let mut code = ECHO_REQUEST;
        code[41] = 1;
        let mut to_group = ECHO_REQUEST;
        to_group[24..40].copy_from_slice(&"ff02::1".parse::<Ipv6Addr>().unwrap().octets());
        let mut from_nobody = ECHO_REQUEST;
        from_nobody[8..24].fill(0);
        let mut frag = ECHO_REQUEST[..40].to_vec();
        frag[4..6].copy_from_slice(&24u16.to_be_bytes());
        frag[6] = FRAGMENT;
        frag.extend([58, 0, 0, 0, 0, 0, 0, 1]);
        frag.extend(&ECHO_REQUEST[40..]);
        for p in [
            &bad_sum[..],
            &reply[..],
            &code[..],
            &to_group[..],
            &from_nobody[..],
            &frag[..],
            &ECHO_REQUEST[..47],
            &ECHO_REQUEST[..20],
            &udp(8)[..],
            &udp_with(DEST_OPTS, &[58, 9, 0, 0, 0, 0, 0, 0], 0)[..],
        ] {
            assert_eq!(answer(p).unwrap_err(), p.to_vec());
        }
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &reply);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("other"), Some(1));
    }
}
