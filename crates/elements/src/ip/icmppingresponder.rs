//! `ICMPPingResponder`: answers ICMP echo requests addressed to the router
//! (RFC 792; RFC 1812 section 4.3.3.6 says a router must answer them).
//!
//! The reply is the request turned around in place: addresses swapped, type
//! 8 becomes 0, a fresh TTL, and both checksums patched incrementally
//! (RFC 1624), so identifier, sequence number and data come back untouched
//! as RFC 792 requires.

use super::header::{be16, PROTO_ICMP};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::checksum;

/// The `ICMPPingResponder` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ICMPPingResponder",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "answers ICMP echo requests with echo replies",
    synopsis: "ICMPPingResponder",
    description: "Expects IP packets with the network header annotation set, usually \
        those a route lookup delivered locally. An ICMP echo request leaves on output 0 \
        turned into its echo reply: source and destination swapped, type 0, TTL 255, \
        identifier, sequence number and data unchanged, IP and ICMP checksums updated. \
        The reply's destination annotation is set to its new destination, so it can \
        go back into the route lookup like any other packet. Other packets go to \
        output 1, or are dropped and counted if it is unconnected.",
    ports: "one input; output 0 echo replies; optional output 1 other packets (push)",
    keywords: &[],
    counters: &[
        ("replies", "echo requests answered"),
        ("other", "packets that were not echo requests"),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 1c 00 01 00 00 40 01 66 d5 0a 00 00 02 \
        0a 00 00 01 08 00 f7 fe 00 01 00 00>, LIMIT 1) -> MarkIPHeader \
        -> ping :: ICMPPingResponder -> Discard; ping[1] -> Discard;",
    see_also: &["ICMPError", "StaticIPLookup"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _ = args;
    Ok(Box::new(ICMPPingResponder {
        has_other: ports.noutputs() > 1,
        replies: 0,
        other: 0,
    }))
}

/// Answers pings.
#[derive(Debug)]
pub struct ICMPPingResponder {
    has_other: bool,
    replies: u64,
    other: u64,
}

/// TTL of a reply: the sender's distance does not matter to us.
const REPLY_TTL: u8 = 255;

impl ICMPPingResponder {
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        let ip = p.l3_bytes_mut();
        let ok = ip.len() >= 20 && ip[0] >> 4 == 4 && ip[9] == PROTO_ICMP && {
            let hl = usize::from(ip[0] & 0x0f) * 4;
            // A fragment is not a whole request; only the first has the
            // ICMP header and the data may be cut.
            let frag = be16(ip, 6) & 0x3fff != 0;
            !frag && hl >= 20 && ip.len() >= hl + 8 && ip[hl] == 8 && ip[hl + 1] == 0
        };
        if !ok {
            self.other += 1;
            return self.has_other.then_some(1);
        }
        let hl = usize::from(ip[0] & 0x0f) * 4;
        // Swapping the addresses leaves the header sum unchanged; the TTL
        // word changes (RFC 1624 eqn. 3).
        let (src, dst) = ip.split_at_mut(16);
        src[12..16].swap_with_slice(&mut dst[..4]);
        let old = be16(ip, 8);
        ip[8] = REPLY_TTL;
        let sum = checksum::update(be16(ip, 10), old, be16(ip, 8));
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let icmp = &mut ip[hl..];
        icmp[0] = 0;
        let sum = checksum::update(be16(icmp, 2), 0x0800, 0x0000);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        let sum = checksum::fix_zero(sum, icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        let dst = [ip[16], ip[17], ip[18], ip[19]];
        p.anno_mut().dst_ip = dst.into();
        self.replies += 1;
        Some(0)
    }
}

impl Element for ICMPPingResponder {
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
    use bricks_runtime::testing::Harness;

    /// `ping -c 1 -s 8 -p 0102030405060708 10.1.0.1` from 10.1.0.2, as
    /// Linux sent it (captured: IP header and ICMP echo request, id
    /// 0x7648, seq 1, 8 bytes of data).
    const REQUEST: [u8; 36] = [
        0x45, 0x00, 0x00, 0x24, 0xba, 0x3f, 0x40, 0x00, 0x40, 0x01, 0x6c, 0x95, 0x0a, 0x01, 0x00,
        0x02, 0x0a, 0x01, 0x00, 0x01, 0x08, 0x00, 0x71, 0xa2, 0x76, 0x48, 0x00, 0x01, 0x01, 0x02,
        0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    ];

    fn ip_ok(h: &[u8]) -> bool {
        checksum::data(&h[..20]) == 0xffff || checksum::data(&h[..20]) == 0
    }

    #[test]
    fn a_request_becomes_its_reply() {
        assert!(ip_ok(&REQUEST));
        assert_eq!(
            !checksum::data(&REQUEST[20..]),
            0,
            "the vector is a valid request"
        );
        let mut h = Harness::push(&CLASS, "", 1, 2);
        let mut p = Packet::from_slice(&REQUEST).unwrap();
        p.set_network_header(0);
        h.push_packets(0, [p]);
        let out = h.take(0);
        assert_eq!(out.len(), 1);
        let r = out[0].data();
        assert_eq!(&r[12..16], &REQUEST[16..20], "source is the router");
        assert_eq!(&r[16..20], &REQUEST[12..16], "destination is the pinger");
        assert_eq!(r[8], 255);
        assert!(ip_ok(r), "IP checksum");
        assert_eq!(r[20], 0, "echo reply");
        assert_eq!(!checksum::data(&r[20..]), 0, "ICMP checksum");
        assert_eq!(&r[24..], &REQUEST[24..], "id, sequence and data unchanged");
        assert_eq!(out[0].anno().dst_ip, std::net::Ipv4Addr::new(10, 1, 0, 2));
        assert_eq!(h.stats().get("replies"), Some(1));
    }

    #[test]
    fn other_packets_go_to_output_1_or_are_dropped() {
        let mut reply = REQUEST;
        reply[20] = 0;
        let mut udp = REQUEST;
        udp[9] = 17;
        let mut frag = REQUEST;
        frag[6] = 0x20;
        let mut h = Harness::push(&CLASS, "", 1, 2);
        for bytes in [reply, udp, frag] {
            let mut p = Packet::from_slice(&bytes).unwrap();
            p.set_network_header(0);
            h.push_packets(0, [p]);
        }
        assert_eq!(h.take(0).len(), 0);
        assert_eq!(h.take(1).len(), 3);
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let mut p = Packet::from_slice(&udp).unwrap();
        p.set_network_header(0);
        h.push_packets(0, [p]);
        assert_eq!(h.stats().get("other"), Some(1));
    }
}
