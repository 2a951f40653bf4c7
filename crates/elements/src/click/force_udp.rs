//! `ForceUDP`: makes IP packets' payloads look like UDP (Click's
//! `elements/local/forceudp.cc`), a fuzzing aid: the UDP length and the
//! checksum over the RFC 768 pseudo-header are made right, the
//! destination port is set or drawn at random.

use super::{SimpleAction, SimpleElement};
use crate::standard::port_info;
use bricks_element::{
    click_random, ArgError, Args, Element, ElementClass, Keyword, Manual, Packet, PortInfo,
};
use bricks_wire::checksum;
use bricks_wire::IpProtocol;
use std::net::Ipv4Addr;

/// The `ForceUDP` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ForceUDP",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets UDP packet fields",
    synopsis: "ForceUDP([DPORT])",
    description: "Makes the payload of each IP packet look like UDP, as Click's ForceUDP \
        does for fuzzing: the UDP length becomes the IP total length less the IP header, \
        the destination port becomes DPORT (when it is given and not -1) or a random port \
        from 0 to 1023 (drawn from Click's random stream, which RandomSeed seeds), and the \
        checksum is computed over the pseudo-header (RFC 768) with the protocol the IP \
        header names, and the UDP header and data. The IP header is found at the network \
        header annotation.\n\n\
        Packets without a network header annotation, with an IP header length below 20 or \
        past the packet, or whose total length leaves no room for a UDP header are dropped \
        and counted (Click prints `ForceUDP: bad lengths` for each). Unlike Click, bricks \
        also drops a packet whose total length runs past its end (Click checksums bytes \
        past the packet then), computes the pseudo-header without the IP options (Click \
        sums them in), and writes a computed checksum of 0 as 0xffff (RFC 768: 0 means no \
        checksum).",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "DPORT",
        ty: "UDP port (number or name), or -1",
        default: Some("-1 (random from 0 to 1023)"),
        doc: "destination port; positional",
    }],
    counters: &[("drops", "packets with bad lengths")],
    example: "RandomSource(40, LIMIT 8) -> ForceIP -> ForceUDP(53) -> Discard;",
    see_also: &["ForceIP", "ForceTCP", "ForceICMP", "RandomSeed"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let text: Option<String> = args.read_p("DPORT")?;
    let dport = match text.as_deref().map(str::trim) {
        None | Some("-1") => None,
        Some(t) => Some(
            port_info::lookup(args, t, IpProtocol::UDP.0)
                .map_err(|e| ArgError::new(format!("DPORT: {e}")))?,
        ),
    };
    Ok(Box::new(SimpleElement::new(ForceUDP { dport, count: 0 })))
}

/// Sets UDP fields.
#[derive(Debug)]
pub struct ForceUDP {
    dport: Option<u16>,
    /// Packets made UDP (Click's `_count`).
    count: u64,
}

/// The IP header length and total length of the IPv4 header at the start
/// of `ip` (a packet's network header onwards), when the header fits in
/// `ip`, the total length is at most `ip`'s length and leaves at least
/// `transport` bytes after the header.
pub(crate) fn lengths(ip: &[u8], transport: usize) -> Option<(usize, usize)> {
    if ip.len() < 20 {
        return None;
    }
    let hlen = usize::from(ip[0] & 0x0f) * 4;
    if hlen < 20 || hlen > ip.len() {
        return None;
    }
    let ilen = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if ilen > ip.len() || ilen < hlen + transport {
        return None;
    }
    Some((hlen, ilen))
}

/// The checksum of the transport segment `ip[hlen..ilen]` with the IPv4
/// pseudo-header of `ip` (RFC 768, RFC 9293 section 3.1), the checksum
/// field at `sum_at` (relative to the segment) taken as zero.
pub(crate) fn transport_checksum(ip: &mut [u8], hlen: usize, ilen: usize, sum_at: usize) -> u16 {
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let seg = &mut ip[hlen..ilen];
    seg[sum_at] = 0;
    seg[sum_at + 1] = 0;
    // A segment is at most MAX_FRAME bytes, so its length fits.
    let pseudo = checksum::pseudo_header_v4(src, dst, IpProtocol(ip[9]), (ilen - hlen) as u16);
    !checksum::combine(&[pseudo, checksum::data(&ip[hlen..ilen])])
}

impl SimpleAction for ForceUDP {
    /// Forces one packet; false for one with bad lengths.
    fn simple_action(&mut self, p: &mut Packet) -> bool {
        let Some(ip) = p.network_header_mut() else {
            return false;
        };
        let Some((hlen, ilen)) = lengths(ip, 8) else {
            return false;
        };
        let udp = &mut ip[hlen..ilen];
        udp[4..6].copy_from_slice(&((ilen - hlen) as u16).to_be_bytes());
        let dport = self
            .dport
            .unwrap_or_else(|| click_random::random_between(0, 1023) as u16);
        udp[2..4].copy_from_slice(&dport.to_be_bytes());
        self.count += 1;
        let sum = match transport_checksum(ip, hlen, ilen, 6) {
            0 => 0xffff,
            s => s,
        };
        ip[hlen + 6..hlen + 8].copy_from_slice(&sum.to_be_bytes());
        true
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::force_ip::tests::sums_right;
    use super::*;
    use bricks_runtime::testing::{make_element, Harness};

    /// RFC 1071 over the pseudo-header and segment, from scratch: a
    /// segment with a right checksum sums to 0xffff.
    pub(crate) fn transport_sums_right(ip: &[u8]) -> bool {
        let hlen = usize::from(ip[0] & 0x0f) * 4;
        let ilen = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let seg = &ip[hlen..ilen];
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&ip[12..20]);
        bytes.extend_from_slice(&[0, ip[9]]);
        bytes.extend_from_slice(&((ilen - hlen) as u16).to_be_bytes());
        bytes.extend_from_slice(seg);
        sums_right(&bytes)
    }

    /// A real UDP datagram, 10.0.0.1:1234 to 10.0.0.2:53, 4 data bytes
    /// (`hi!\n`), its checksum and UDP length wrong, behind 14 bytes of
    /// Ethernet header.
    fn frame() -> Packet {
        let mut f = vec![0u8; 14];
        f.extend_from_slice(&[
            0x45, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0x66, 0xca, 10, 0, 0, 1,
            10, 0, 0, 2, 0x04, 0xd2, 0x00, 0x35, 0x00, 0x63, 0xbe, 0xef, b'h', b'i', b'!', b'\n',
        ]);
        let mut p = Packet::from_slice(&f).unwrap();
        p.set_network_header(14);
        p
    }

    #[test]
    fn sets_length_port_and_checksum() {
        let mut h = Harness::push(&CLASS, "domain", 1, 1);
        h.push_packets(0, [frame()]);
        let out = h.take_bytes(0);
        let ip = &out[0][14..];
        assert_eq!(ip[20..24], [0x04, 0xd2, 0x00, 0x35]);
        assert_eq!(ip[24..26], [0x00, 0x0c]);
        assert!(transport_sums_right(ip));
        assert_eq!(ip[28..], *b"hi!\n");
    }

    #[test]
    fn random_ports_are_below_1024() {
        let mut h = Harness::push(&CLASS, "-1", 1, 1);
        for _ in 0..50 {
            h.push_packets(0, [frame()]);
        }
        for o in h.take_bytes(0) {
            let ip = &o[14..];
            assert!(u16::from_be_bytes([ip[22], ip[23]]) < 1024);
            assert!(transport_sums_right(ip));
        }
    }

    #[test]
    fn bad_lengths_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "53", 1, 1);
        // No network header annotation.
        h.push_bytes(0, &frame().data()[14..]);
        // Total length past the end.
        let mut p = frame();
        p.data_mut()[14 + 3] = 0x40;
        h.push_packets(0, [p]);
        // No room for a UDP header.
        let mut p = frame();
        p.data_mut()[14 + 3] = 27;
        h.push_packets(0, [p]);
        // Header length too small.
        let mut p = frame();
        p.data_mut()[14] = 0x44;
        h.push_packets(0, [p]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(4));
    }

    #[test]
    fn a_zero_checksum_is_sent_as_ffff() {
        // Find a payload word that makes the computed checksum 0.
        let mut p = frame();
        p.data_mut()[14 + 28..14 + 30].copy_from_slice(&[0, 0]);
        let mut h = Harness::push(&CLASS, "53", 1, 1);
        h.push_packets(0, [p]);
        let ip = h.take_bytes(0)[0][14..].to_vec();
        let sum = u16::from_be_bytes([ip[26], ip[27]]);
        // Adding the checksum to the data word makes the sum 0xffff + sum:
        // set the data word to `sum` and zero should result (as -0).
        let mut p = frame();
        let d = &mut p.data_mut()[14..];
        d[28..30].copy_from_slice(&sum.to_be_bytes());
        h.push_packets(0, [p]);
        let ip = h.take_bytes(0)[0][14..].to_vec();
        assert_eq!(ip[26..28], [0xff, 0xff]);
        assert!(transport_sums_right(&ip));
    }

    #[test]
    fn bad_arguments_are_refused() {
        let m = |a: &str| make_element(&CLASS, a, &PortInfo::default());
        assert!(m("").is_ok());
        assert!(m("-1").is_ok());
        assert!(m("70000").is_err());
        assert!(m("nosuchport").is_err());
        assert!(m("1, 2").is_err());
    }
}
