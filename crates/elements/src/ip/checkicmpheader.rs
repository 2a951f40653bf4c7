//! `CheckICMPHeader`: checks the ICMP header of ICMP/IP packets (RFC 792):
//! the length each message type needs and the checksum, as Click's
//! `elements/icmp/checkicmpheader.cc` does.

use super::header::be16;
use super::transport::{
    header_len, make_check, HeaderCheck, BAD_CHECKSUM, BAD_LENGTH, CHECK_KEYWORDS, NOT_PROTOCOL,
};
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};
use bricks_wire::checksum;

/// The `CheckICMPHeader` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CheckICMPHeader",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "checks ICMP headers of ICMP/IP packets",
    synopsis: "CheckICMPHeader([KEYWORDS VERBOSE, DETAILS])",
    description: "Expects ICMP/IP packets, the IP header where the network header annotation \
        says (CheckIPHeader and MarkIPHeader set it) or at the start of the data. Checks \
        that the protocol is ICMP, that the message holds at least the 8-byte ICMP header, \
        that errors (destination unreachable, source quench, redirect, time exceeded, \
        parameter problem) quote at least an IP header and 8 bytes (28 bytes), that \
        timestamp messages are exactly 20 bytes and information messages exactly 8, and \
        that the checksum is right. Valid packets leave on output 0; invalid ones on \
        output 1 if it is connected, and are dropped otherwise; either way they are \
        counted by reason. The first invalid packet is reported on standard error, as in \
        Click (every one with VERBOSE).\n\n\
        The message is the IP datagram less its header, as the IP total length says; \
        Click takes every byte of the packet behind the IP header instead, so link padding \
        the IP length excludes spoils its checksum there and not here. Click's \
        `drop_details` handler is the per-reason counters `not_icmp`, `bad_length` and \
        `bad_checksum`, kept whatever DETAILS says.",
    ports: "one input; output 0 valid packets (agnostic); optional output 1 invalid \
        packets (push)",
    keywords: CHECK_KEYWORDS,
    counters: &[
        ("drops", "invalid packets, whatever the reason"),
        ("not_icmp", "no IPv4 header, or a protocol other than ICMP"),
        (
            "bad_length",
            "message beyond the packet, or of the wrong length for its type",
        ),
        ("bad_checksum", "ICMP checksum wrong"),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 24 12 34 40 00 40 01 14 a3 0a 00 00 01 \
        0a 00 00 02 08 00 66 68 00 01 00 01 61 62 63 64 65 66 67 68>, LIMIT 1) \
        -> c :: CheckICMPHeader -> Discard; c[1] -> Discard;",
    see_also: &[
        "CheckIPHeader",
        "CheckUDPHeader",
        "CheckTCPHeader",
        "ICMPPingResponder",
    ],
};

/// ICMP's check.
pub struct Icmp;

impl HeaderCheck for Icmp {
    const PROTOCOL: &'static str = "ICMP";
    const COUNTERS: [&'static str; 3] = ["not_icmp", "bad_length", "bad_checksum"];
    const TEXTS: [&'static str; 3] = ["not ICMP", "bad packet length", "bad ICMP checksum"];

    #[inline(always)]
    fn check(ip: &[u8]) -> Result<(), usize> {
        if ip.len() < 20 || ip[9] != 1 {
            return Err(NOT_PROTOCOL);
        }
        let hlen = header_len(ip).ok_or(BAD_LENGTH)?;
        let ip_len = usize::from(be16(ip, 2));
        if ip_len > ip.len() || ip_len < hlen + 8 {
            return Err(BAD_LENGTH);
        }
        let icmp = &ip[hlen..ip_len];
        let ok = match icmp[0] {
            // Errors quote the IP header and 64 bits of the datagram.
            3 | 4 | 5 | 11 | 12 => icmp.len() >= 8 + 28,
            // Timestamp and its reply: three timestamps.
            13 | 14 => icmp.len() == 20,
            // Information request and reply: the header alone.
            15 | 16 => icmp.len() == 8,
            _ => true,
        };
        if !ok {
            return Err(BAD_LENGTH);
        }
        if checksum::data(icmp) != 0xffff {
            return Err(BAD_CHECKSUM);
        }
        Ok(())
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_check::<Icmp>(args, ports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{echo_request, fix_ip_checksum};
    use bricks_runtime::testing::Harness;

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

    /// An ICMP message of `icmp` behind an IPv4 header, checksums filled in.
    fn message(mut icmp: Vec<u8>) -> Vec<u8> {
        icmp[2] = 0;
        icmp[3] = 0;
        let sum = !checksum::data(&icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        let total = (20 + icmp.len()) as u16;
        let mut p = vec![
            0x45, 0, 0, 0, 0, 1, 0, 0, 64, 1, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p.extend(icmp);
        fix_ip_checksum(&mut p);
        p
    }

    #[test]
    fn real_messages_pass() {
        expect(&echo_request(), None);
        let mut padded = echo_request();
        padded.extend([0; 6]);
        expect(&padded, None);
        // A time exceeded quoting a UDP header; a timestamp request.
        let mut te = vec![11, 0, 0, 0, 0, 0, 0, 0];
        te.extend(crate::ip::header::testing::udp(0));
        expect(&message(te), None);
        expect(
            &message(vec![
                13, 0, 0, 0, 0, 7, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0,
            ]),
            None,
        );
        expect(&message(vec![15, 0, 0, 0, 0, 7, 0, 1]), None);
    }

    #[test]
    fn every_reason() {
        let mut bad_sum = echo_request();
        bad_sum[30] ^= 1;
        expect(&bad_sum, Some("bad_checksum"));
        let mut udp = echo_request();
        udp[9] = 17;
        fix_ip_checksum(&mut udp);
        expect(&udp, Some("not_icmp"));
        expect(&[0x45], Some("not_icmp"));
        expect(&echo_request()[..83], Some("bad_length"));
        expect(
            &message(vec![3, 1, 0, 0, 0, 0, 0, 0, 0x45, 0, 0, 20]),
            Some("bad_length"),
        );
        expect(
            &message(vec![14, 0, 0, 0, 0, 7, 0, 1, 0, 0, 0, 1]),
            Some("bad_length"),
        );
        expect(
            &message(vec![16, 0, 0, 0, 0, 7, 0, 1, 0, 0, 0, 0]),
            Some("bad_length"),
        );
        let mut tiny = echo_request()[..24].to_vec();
        tiny[2..4].copy_from_slice(&24u16.to_be_bytes());
        fix_ip_checksum(&mut tiny);
        expect(&tiny, Some("bad_length"));
    }
}
