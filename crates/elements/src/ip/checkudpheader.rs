//! `CheckUDPHeader`: checks the UDP header of UDP/IP packets (RFC 768):
//! its length field against the packet and its checksum, as Click's
//! `elements/tcpudp/checkudpheader.cc` does.

use super::header::be16;
use super::transport::{
    header_len, make_check, segment_checksum_ok, HeaderCheck, BAD_CHECKSUM, BAD_LENGTH,
    CHECK_KEYWORDS, NOT_PROTOCOL,
};
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};

/// The `CheckUDPHeader` class.
pub static CLASS: ElementClass = ElementClass {
    name: "CheckUDPHeader",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "checks UDP headers of UDP/IP packets",
    synopsis: "CheckUDPHeader([KEYWORDS VERBOSE, DETAILS])",
    description: "Expects UDP/IP packets, the IP header where the network header annotation \
        says (CheckIPHeader and MarkIPHeader set it) or at the start of the data. Checks \
        that the protocol is UDP, that the UDP length is at least 8 and fits in the packet, \
        and that the checksum is right unless it is zero (no checksum, RFC 768). Valid \
        packets leave on output 0; invalid ones on output 1 if it is connected, and are \
        dropped otherwise; either way they are counted by reason. The first invalid packet \
        is reported on standard error, as in Click (every one with VERBOSE).\n\n\
        bricks is stricter than Click in one respect: the UDP length must also fit in the \
        IP datagram (the IP total length less the header), not only in the packet's bytes, \
        so Ethernet padding behind a short datagram cannot pass for UDP payload. Click's \
        `drop_details` handler is the per-reason counters `not_udp`, `bad_length` and \
        `bad_checksum`, kept whatever DETAILS says.",
    ports: "one input; output 0 valid packets (agnostic); optional output 1 invalid \
        packets (push)",
    keywords: CHECK_KEYWORDS,
    counters: &[
        ("drops", "invalid packets, whatever the reason"),
        ("not_udp", "no IPv4 header, or a protocol other than UDP"),
        (
            "bad_length",
            "UDP length below 8 or beyond the packet or the IP datagram",
        ),
        ("bad_checksum", "UDP checksum wrong"),
    ],
    example: "InfiniteSource(DATA \\<45 00 00 1e 00 00 00 00 40 11 66 cd 0a 00 00 01 \
        0a 00 00 02 04 d2 00 35 00 0a 7e 67 68 69>, LIMIT 1) \
        -> c :: CheckUDPHeader -> Discard; c[1] -> Discard;",
    see_also: &[
        "CheckIPHeader",
        "CheckTCPHeader",
        "CheckICMPHeader",
        "SetUDPChecksum",
    ],
};

/// UDP's check.
pub struct Udp;

impl HeaderCheck for Udp {
    const PROTOCOL: &'static str = "UDP";
    const COUNTERS: [&'static str; 3] = ["not_udp", "bad_length", "bad_checksum"];
    const TEXTS: [&'static str; 3] = ["not UDP", "bad packet length", "bad UDP checksum"];

    #[inline(always)]
    fn check(ip: &[u8]) -> Result<(), usize> {
        if ip.len() < 20 || ip[9] != 17 {
            return Err(NOT_PROTOCOL);
        }
        let hlen = header_len(ip).ok_or(BAD_LENGTH)?;
        let ip_len = usize::from(be16(ip, 2)).min(ip.len());
        let udp = &ip[hlen..];
        if udp.len() < 8 {
            return Err(BAD_LENGTH);
        }
        let len = usize::from(be16(udp, 4));
        if len < 8 || hlen + len > ip_len {
            return Err(BAD_LENGTH);
        }
        if be16(udp, 6) != 0 && !segment_checksum_ok(ip, hlen, &udp[..len]) {
            return Err(BAD_CHECKSUM);
        }
        Ok(())
    }
}

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    make_check::<Udp>(args, ports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{fix_ip_checksum, udp};
    use crate::ip::transport::segment_checksum;
    use bricks_element::Packet;
    use bricks_runtime::testing::{make_element, Harness};

    /// A DNS query 192.168.1.10:53000 -> 8.8.8.8:53 with its real UDP
    /// checksum 0xe368.
    const DNS: [u8; 57] = [
        0x45, 0x00, 0x00, 0x39, 0x12, 0x34, 0x00, 0x00, 0x40, 0x11, 0x96, 0xbe, 0xc0, 0xa8, 0x01,
        0x0a, 0x08, 0x08, 0x08, 0x08, 0xcf, 0x08, 0x00, 0x35, 0x00, 0x25, 0xe3, 0x68, 0xab, 0xcd,
        0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x65, 0x78, 0x61, 0x6d,
        0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d, 0x00, 0x00, 0x01, 0x00, 0x01,
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
    fn real_datagrams_pass() {
        expect(&DNS, None);
        // A zero checksum means none.
        expect(&udp(20), None);
        let mut framed = vec![0xee; 14];
        framed.extend(DNS);
        let mut p = Packet::from_slice(&framed).unwrap();
        p.set_network_header(14);
        let mut h = Harness::push(&CLASS, "", 1, 2);
        h.push_packets(0, [p]);
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn every_reason() {
        let mut bad_sum = DNS;
        bad_sum[40] ^= 0x20;
        expect(&bad_sum, Some("bad_checksum"));
        let mut tcp = DNS;
        tcp[9] = 6;
        fix_ip_checksum(&mut tcp);
        expect(&tcp, Some("not_udp"));
        expect(&DNS[..12], Some("not_udp"));
        expect(&[], Some("not_udp"));
        expect(&DNS[..25], Some("bad_length"));
        let mut long = DNS;
        long[25] += 1;
        expect(&long, Some("bad_length"));
        let mut short = DNS;
        short[24..26].copy_from_slice(&7u16.to_be_bytes());
        expect(&short, Some("bad_length"));
        let mut bad_hl = DNS;
        bad_hl[0] = 0x4f;
        expect(&bad_hl, Some("bad_length"));
        // Padding behind the datagram is not UDP payload (Click would
        // pass this when the IP total length is not trimmed first).
        let mut lying = DNS.to_vec();
        lying[25] += 4;
        lying.extend([0; 4]);
        let sum = segment_checksum(&lying, 20, &{
            let mut u = lying[20..].to_vec();
            u[6] = 0;
            u[7] = 0;
            u
        });
        lying[26..28].copy_from_slice(&sum.to_be_bytes());
        expect(&lying, Some("bad_length"));
    }

    #[test]
    fn unconnected_output_drops_and_counts() {
        let mut h = Harness::push(&CLASS, "VERBOSE true, DETAILS true", 1, 1);
        let mut bad = DNS;
        bad[27] ^= 1;
        h.push_bytes(0, &bad);
        h.push_bytes(0, &DNS);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("bad_checksum"), Some(1));
        assert!(make_element(&CLASS, "VERBOSE maybe", &PortInfo::default()).is_err());
        assert!(make_element(&CLASS, "1", &PortInfo::default()).is_err());
    }
}
