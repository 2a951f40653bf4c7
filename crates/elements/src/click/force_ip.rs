//! `ForceIP`: makes whatever arrives look like an IPv4 header (Click's
//! `elements/local/forceip.cc`), a fuzzing aid: random bytes from
//! `RandomSource` become packets that pass `CheckIPHeader` (RFC 791
//! section 3.1 fields, RFC 1071 header checksum) and so reach the code
//! behind it.

use super::{SimpleAction, SimpleElement};
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, Packet, PortInfo};
use bricks_wire::checksum;

/// The `ForceIP` class.
pub static CLASS: ElementClass = ElementClass {
    name: "ForceIP",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "fixes fields to make packets into legal IP packets",
    synopsis: "ForceIP()",
    description: "Rewrites the start of each packet into an IPv4 header, as Click's \
        ForceIP does for fuzzing: the version becomes 4 and the total length the \
        packet's length; the fragment field is cleared except on every eighth packet (the \
        2nd, 10th, 18th...), so that some fragments get through; a header length below \
        20 bytes or past the packet's end becomes the packet's length divided by four, \
        kept to the field's four bits (as Click's bit field keeps it); the header \
        checksum is recomputed over the header length the packet now says. The network \
        header annotation is set to the packet's start.\n\n\
        Unlike Click, which writes past the end of a packet shorter than an IP header, \
        bricks drops and counts packets shorter than 20 bytes.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[("drops", "packets shorter than 20 bytes")],
    example: "RandomSource(40, LIMIT 8) -> ForceIP -> CheckIPHeader -> Discard;",
    see_also: &[
        "ForceUDP",
        "ForceTCP",
        "ForceICMP",
        "RandomSource",
        "CheckIPHeader",
    ],
};

fn make(_args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(SimpleElement::new(ForceIP { count: 0 })))
}

/// Forces IPv4 headers.
#[derive(Debug)]
pub struct ForceIP {
    /// Packets forced so far (Click's `_count`): every eighth keeps its
    /// fragment field.
    count: u64,
}

/// Forces one packet's header; false for a packet too short for one.
/// `keep_fragment` leaves the fragment field as it is.
fn force(p: &mut Packet, keep_fragment: bool) -> bool {
    let plen = p.len();
    let ip = p.data_mut();
    if plen < 20 {
        return false;
    }
    ip[0] = 0x40 | (ip[0] & 0x0f);
    // A frame is at most MAX_FRAME (2,048) bytes, so the length fits.
    ip[2..4].copy_from_slice(&(plen as u16).to_be_bytes());
    if !keep_fragment {
        ip[6] = 0;
        ip[7] = 0;
    }
    let hlen = usize::from(ip[0] & 0x0f) * 4;
    if hlen < 20 || hlen > plen {
        ip[0] = 0x40 | ((plen >> 2) & 0x0f) as u8;
    }
    // The header length the packet now says, never past its end: either
    // the old one, checked above, or at most plen / 4 words.
    let covered = usize::from(ip[0] & 0x0f) * 4;
    ip[10] = 0;
    ip[11] = 0;
    let sum = !checksum::data(&ip[..covered]);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    p.set_network_header(0);
    true
}

impl SimpleAction for ForceIP {
    /// Forces one packet; false for one shorter than an IP header, which
    /// does not count as forced.
    fn simple_action(&mut self, p: &mut Packet) -> bool {
        if p.len() < 20 {
            return false;
        }
        let keep = self.count & 7 == 1;
        self.count += 1;
        force(p, keep)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    /// RFC 1071 from scratch: bytes with a checksum field in them (an IP
    /// header, an ICMP message, a pseudo-header and segment) sum to
    /// 0xffff when the checksum is right.
    pub(crate) fn sums_right(h: &[u8]) -> bool {
        let mut sum = 0u32;
        for w in h.chunks(2) {
            sum += u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum == 0xffff
    }

    #[test]
    fn random_bytes_become_a_valid_header() {
        // Bytes with version 9, header length 3 words, a fragment offset.
        let mut frame = [0xa5u8; 40];
        frame[0] = 0x93;
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &frame);
        let out = h.take(0);
        let o = out[0].data();
        // Version 4; 40 / 4 = 10 words.
        assert_eq!(o[0], 0x4a);
        assert_eq!(u16::from_be_bytes([o[2], o[3]]), 40);
        assert_eq!(o[6..8], [0, 0]);
        assert!(sums_right(&o[..40]));
        // Bytes outside the fixed fields are left alone.
        assert_eq!(o[1], 0xa5);
        assert_eq!(o[4..6], [0xa5, 0xa5]);
        assert_eq!(o[12..], frame[12..]);
        assert_eq!(out[0].network_header_offset(), Some(0));
    }

    #[test]
    fn a_valid_header_length_is_kept() {
        let mut frame = [0u8; 60];
        frame[0] = 0x46; // 24 bytes: fits.
                         // Option bytes the checksum must cover.
        frame[20..24].copy_from_slice(&[1, 2, 3, 4]);
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &frame);
        let o = &h.take_bytes(0)[0];
        assert_eq!(o[0], 0x46);
        assert!(sums_right(&o[..24]));
    }

    #[test]
    fn every_eighth_packet_keeps_its_fragment_field() {
        let mut frame = [0u8; 20];
        frame[0] = 0x45;
        frame[6] = 0x20; // MF
        frame[7] = 0x10;
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for _ in 0..17 {
            h.push_bytes(0, &frame);
        }
        let kept: Vec<usize> = h
            .take_bytes(0)
            .iter()
            .enumerate()
            .filter(|(_, o)| o[6..8] == [0x20, 0x10])
            .map(|(i, _)| i)
            .collect();
        assert_eq!(kept, [1, 9]);
    }

    #[test]
    fn a_long_packet_gets_the_four_bit_truncation() {
        // Header length 0; 100 bytes / 4 = 25 = 0b1_1001: the field keeps
        // 9 (36 bytes).
        let mut frame = [0xffu8; 100];
        frame[0] = 0xf0;
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &frame);
        let o = &h.take_bytes(0)[0];
        assert_eq!(o[0], 0x49);
        assert!(sums_right(&o[..36]));
    }

    #[test]
    fn short_packets_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        for n in 0..20 {
            h.push_bytes(0, &vec![0x45; n]);
        }
        h.push_bytes(0, &[0x45; 20]);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("drops"), Some(20));
    }
}
