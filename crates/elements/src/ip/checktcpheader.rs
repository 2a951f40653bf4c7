//! `CheckTCPHeader`: checks the TCP header of TCP/IP packets (RFC 9293
//! section 3.1): its data offset against the segment and its checksum, as
//! Click's `elements/tcpudp/checktcpheader.cc` does.

use super::header::be16;
use super::transport::{
    header_len, make_check, segment_checksum_ok, HeaderCheck, BAD_CHECKSUM, BAD_LENGTH,
    CHECK_KEYWORDS, NOT_PROTOCOL,
};
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};

/// The `CheckTCPHeader` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CheckTCPHeader",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "checks TCP headers of TCP/IP packets",
    synopsis: "CheckTCPHeader([KEYWORDS VERBOSE, DETAILS])",
    description: "Expects TCP/IP packets, the IP header where the network header annotation \
        says (CheckIPHeader and MarkIPHeader set it) or at the start of the data. Checks \
        that the protocol is TCP, that the segment (the IP total length less the IP header) \
        is in the packet and holds the TCP header its data offset announces (at least 20 \
        bytes), and that the checksum is right. Valid packets leave on output 0; invalid \
        ones on output 1 if it is connected, and are dropped otherwise; either way they are \
        counted by reason. The first invalid packet is reported on standard error, as in \
        Click (every one with VERBOSE). Click's `drop_details` handler is the per-reason \
        counters `not_tcp`, `bad_length` and `bad_checksum`, kept whatever DETAILS says.",
    ports: "one input; output 0 valid packets (agnostic); optional output 1 invalid \
        packets (push)",
    keywords: CHECK_KEYWORDS,
    counters: &[
        ("drops", "invalid packets, whatever the reason"),
        ("not_tcp", "no IPv4 header, or a protocol other than TCP"),
        (
            "bad_length",
            "segment beyond the packet, or shorter than its TCP header",
        ),
        ("bad_checksum", "TCP checksum wrong"),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 28 12 34 40 00 40 06 14 9a 0a 00 00 01 \
        0a 00 00 02 9c 40 00 50 00 00 00 01 00 00 00 00 50 02 72 10 8d 3e 00 00>, LIMIT 1) \
        -> c :: CheckTCPHeader -> Discard; c[1] -> Discard;",
    see_also: &[
        "CheckIPHeader",
        "CheckUDPHeader",
        "CheckICMPHeader",
        "SetTCPChecksum",
    ],
};

/// TCP's check.
pub struct Tcp;

impl HeaderCheck for Tcp {
    const PROTOCOL: &'static str = "TCP";
    const COUNTERS: [&'static str; 3] = ["not_tcp", "bad_length", "bad_checksum"];
    const TEXTS: [&'static str; 3] = ["not TCP", "bad packet length", "bad TCP checksum"];

    #[inline(always)]
    fn check(ip: &[u8]) -> Result<(), usize> {
        if ip.len() < 20 || ip[9] != 6 {
            return Err(NOT_PROTOCOL);
        }
        let hlen = header_len(ip).ok_or(BAD_LENGTH)?;
        let ip_len = usize::from(be16(ip, 2));
        if ip_len > ip.len() || ip_len < hlen + 20 {
            return Err(BAD_LENGTH);
        }
        let tcp = &ip[hlen..ip_len];
        let off = usize::from(tcp[12] >> 4) * 4;
        if off < 20 || off > tcp.len() {
            return Err(BAD_LENGTH);
        }
        if !segment_checksum_ok(ip, hlen, tcp) {
            return Err(BAD_CHECKSUM);
        }
        Ok(())
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_check::<Tcp>(args, ports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::fix_ip_checksum;
    use bricks_element::Packet;
    use bricks_runtime::testing::Harness;

    /// A SYN 10.0.0.1:40000 -> 10.0.0.2:80, window 29200, checksum 0x8d3e.
    const SYN: [u8; 40] = [
        0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x9a, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
        0x00, 0x00, 0x50, 0x02, 0x72, 0x10, 0x8d, 0x3e, 0x00, 0x00,
    ];
    /// PSH+ACK 10.0.0.1:1234 -> 10.0.0.2:22 behind a Router Alert option.
    const WITH_OPTIONS: [u8; 44] = [
        0x46, 0x00, 0x00, 0x2c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x7f, 0x91, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x94, 0x04, 0x00, 0x00, 0x04, 0xd2, 0x00, 0x16, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x50, 0x18, 0x72, 0x10, 0x24, 0xd1, 0x00, 0x00,
    ];

    fn expect(frame: &[u8], reason: Option<&str>) {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_bytes(0, frame);
        let (ok, bad) = (h.take(0).len(), h.take(1).len());
        let s = h.stats();
        match reason {
            None => assert_eq!((ok, bad, s.get("drops")), (1, 0, Some(0))),
            Some(r) => {
                assert_eq!((ok, bad, s.get("drops")), (0, 1, Some(1)), "{r}");
                assert_eq!(s.get(r), Some(1), "{r}");
            }
        }
    }

    #[test]
    fn real_segments_pass() {
        expect(&SYN, None);
        expect(&WITH_OPTIONS, None);
        // Link padding behind the datagram is not part of the segment.
        let mut padded = SYN.to_vec();
        padded.extend([0; 6]);
        expect(&padded, None);
    }

    #[test]
    fn every_reason() {
        let mut bad_sum = SYN;
        bad_sum[37] ^= 1;
        expect(&bad_sum, Some("bad_checksum"));
        let mut udp = SYN;
        udp[9] = 17;
        fix_ip_checksum(&mut udp);
        expect(&udp, Some("not_tcp"));
        expect(&SYN[..8], Some("not_tcp"));
        expect(&SYN[..39], Some("bad_length"));
        let mut off = SYN;
        off[32] = 0x40;
        expect(&off, Some("bad_length"));
        let mut off = SYN;
        off[32] = 0x60;
        expect(&off, Some("bad_length"));
        let mut short = SYN;
        short[2..4].copy_from_slice(&36u16.to_be_bytes());
        expect(&short, Some("bad_length"));
        let mut below = SYN;
        below[2..4].copy_from_slice(&4u16.to_be_bytes());
        expect(&below, Some("bad_length"));
    }

    #[test]
    fn pull_and_unconnected_reject() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let mut bad = SYN;
        bad[36] ^= 1;
        h.push_packets(
            0,
            [
                Packet::from_slice(&bad).unwrap(),
                Packet::from_slice(&SYN).unwrap(),
            ],
        );
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("drops"), Some(1));
    }
}
