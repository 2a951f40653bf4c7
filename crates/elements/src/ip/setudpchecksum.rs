//! `SetUDPChecksum`: computes the UDP checksum over the pseudo-header,
//! the UDP header and the data (RFC 768), as Click's
//! `elements/tcpudp/setudpchecksum.cc` does.

use super::header::be16;
use super::transport::{header_len, is_fragment, segment_checksum};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};

/// The `SetUDPChecksum` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetUDPChecksum",
    ports: "1/1-2",
    processing: "a/ah",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets UDP packets' checksums",
    synopsis: "SetUDPChecksum()",
    description: "Expects UDP/IP packets (the protocol field is not checked, as in Click), \
        the IP header where the network header annotation says or at the start of the data. \
        Computes the UDP checksum over the pseudo-header (source, destination, which is the \
        last hop of a source route option when there is one, protocol and UDP length), the \
        UDP header and the UDP length's worth of data, and writes it into the header. IP \
        fragments, and packets too short for the UDP header or the UDP length, leave on \
        output 1 if it is connected and are dropped otherwise; either way they are \
        counted.\n\n\
        A checksum that computes to zero is written as 0xffff, as RFC 768 requires (zero \
        means \"no checksum\"); Click writes zero.",
    ports: "one input; output 0 (agnostic); optional output 1 fragments and short packets \
        (push)",
    keywords: &[],
    counters: &[(
        "drops",
        "fragments and packets too short for their UDP length",
    )],
    example: "InfiniteSource(DATA \\<45 00 00 1e 00 00 00 00 40 11 66 cd 0a 00 00 01 \
        0a 00 00 02 04 d2 00 35 00 0a 00 00 68 69>, LIMIT 1) -> SetUDPChecksum \
        -> CheckUDPHeader -> Discard;",
    see_also: &[
        "CheckUDPHeader",
        "SetIPChecksum",
        "SetTCPChecksum",
        "UDPIPEncap",
    ],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _ = args;
    Ok(Box::new(SetUDPChecksum {
        has_reject: ports.noutputs() > 1,
        drops: 0,
    }))
}

/// Sets UDP checksums.
#[derive(Debug)]
pub struct SetUDPChecksum {
    has_reject: bool,
    drops: u64,
}

/// Writes the UDP checksum of the datagram whose IPv4 header starts `ip`;
/// false for a fragment or a packet shorter than the UDP length.
#[inline(always)]
pub(crate) fn set_udp_checksum(ip: &mut [u8]) -> bool {
    let Some(hlen) = header_len(ip) else {
        return false;
    };
    if is_fragment(ip) || ip.len() < hlen + 8 {
        return false;
    }
    let len = usize::from(be16(ip, hlen + 4));
    if len < 8 || ip.len() < hlen + len {
        return false;
    }
    ip[hlen + 6] = 0;
    ip[hlen + 7] = 0;
    let (header, rest) = ip.split_at_mut(hlen);
    let sum = match segment_checksum(header, hlen, &rest[..len]) {
        0 => 0xffff,
        s => s,
    };
    rest[6..8].copy_from_slice(&sum.to_be_bytes());
    true
}

impl SetUDPChecksum {
    #[inline(always)]
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        if set_udp_checksum(p.l3_bytes_mut()) {
            return Some(0);
        }
        self.drops += 1;
        self.has_reject.then_some(1)
    }
}

impl Element for SetUDPChecksum {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{fix_ip_checksum, udp};
    use bricks_runtime::testing::Harness;

    /// A DNS query 192.168.1.10:53000 -> 8.8.8.8:53; its UDP checksum is
    /// 0xe368.
    const DNS: [u8; 57] = [
        0x45, 0x00, 0x00, 0x39, 0x12, 0x34, 0x00, 0x00, 0x40, 0x11, 0x96, 0xbe, 0xc0, 0xa8, 0x01,
        0x0a, 0x08, 0x08, 0x08, 0x08, 0xcf, 0x08, 0x00, 0x35, 0x00, 0x25, 0xe3, 0x68, 0xab, 0xcd,
        0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x65, 0x78, 0x61, 0x6d,
        0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d, 0x00, 0x00, 0x01, 0x00, 0x01,
    ];

    #[test]
    fn computes_the_real_checksum() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        let mut p = DNS;
        p[26] = 0;
        p[27] = 0;
        h.push_bytes(0, &p);
        assert_eq!(h.take_bytes(0), vec![DNS.to_vec()]);
    }

    #[test]
    fn zero_is_sent_as_all_ones() {
        // Find a payload whose checksum computes to zero: the sum of the
        // rest is then 0xffff, which two payload bytes can make.
        let mut p = udp(2);
        p[28] = 0;
        p[29] = 0;
        let s = segment_checksum(&p[..20], 20, &p[20..]);
        // Adding `s` to the sum turns the complement to zero.
        p[28..30].copy_from_slice(&s.to_be_bytes());
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &p);
        let out = h.take_bytes(0);
        assert_eq!(&out[0][26..28], &[0xff, 0xff]);
    }

    #[test]
    fn source_route_final_destination() {
        // A loose source route whose last hop is 8.8.8.8: the checksum is
        // the one for that destination, not for the next hop 9.9.9.9.
        let mut p = DNS[..20].to_vec();
        p[0] = 0x47;
        p[16..20].copy_from_slice(&[9, 9, 9, 9]);
        p.extend([131, 7, 4, 8, 8, 8, 8, 0]);
        p.extend(&DNS[20..]);
        let total = p.len() as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        fix_ip_checksum(&mut p);
        p[34] = 0;
        p[35] = 0;
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &p);
        assert_eq!(&h.take_bytes(0)[0][34..36], &[0xe3, 0x68]);
    }

    #[test]
    fn fragments_and_short_packets_go_to_output_1() {
        let mut h = Harness::push(&CLASS, "", 1, 2);
        let mut frag = DNS;
        frag[6] = 0x20;
        h.push_bytes(0, &frag);
        h.push_bytes(0, &DNS[..50]);
        h.push_bytes(0, &DNS[..24]);
        let mut zero_len = DNS;
        zero_len[24..26].copy_from_slice(&[0, 0]);
        h.push_bytes(0, &zero_len);
        assert!(h.take(0).is_empty());
        assert_eq!(h.take(1).len(), 4);
        assert_eq!(h.stats().get("drops"), Some(4));
    }
}
