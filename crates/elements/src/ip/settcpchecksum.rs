//! `SetTCPChecksum`: computes the TCP checksum over the pseudo-header and
//! the segment (RFC 9293 section 3.1), as Click's
//! `elements/tcpudp/settcpchecksum.cc` does.

use super::header::be16;
use super::transport::{header_len, is_fragment, segment_checksum};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};

/// The `SetTCPChecksum` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetTCPChecksum",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets TCP packets' checksums",
    synopsis: "SetTCPChecksum([FIXOFF])",
    description: "Expects TCP/IP packets, the IP header where the network header annotation \
        says or at the start of the data. Computes the TCP checksum over the pseudo-header \
        (source, destination, which is the last hop of a source route option when there is \
        one, protocol and segment length) and the segment, the IP total length less the IP \
        header, and writes it into the TCP header. A packet whose segment is shorter than \
        20 bytes or longer than the packet is dropped and counted (Click prints `bad \
        lengths`). With FIXOFF, a data offset below 5 words is set to 5, and one beyond the \
        segment (of an unfragmented datagram) to the segment's length in words, before the \
        sum.",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "FIXOFF",
        ty: "boolean",
        default: Some("false"),
        doc: "repair an impossible TCP data offset",
    }],
    counters: &[(
        "drops",
        "packets whose TCP segment is shorter than 20 bytes or beyond the packet",
    )],
    example: "InfiniteSource(DATA \\<45 00 00 28 12 34 40 00 40 06 14 9a 0a 00 00 01 \
        0a 00 00 02 9c 40 00 50 00 00 00 01 00 00 00 00 50 02 72 10 00 00 00 00>, LIMIT 1) \
        -> SetTCPChecksum -> CheckTCPHeader -> Discard;",
    see_also: &["CheckTCPHeader", "SetIPChecksum", "SetUDPChecksum"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let fixoff = args.read_p("FIXOFF")?.unwrap_or(false);
    Ok(Box::new(SetTCPChecksum { fixoff, drops: 0 }))
}

/// Sets TCP checksums.
#[derive(Debug)]
pub struct SetTCPChecksum {
    fixoff: bool,
    drops: u64,
}

/// Writes the TCP checksum of the segment whose IPv4 header starts `ip`
/// (repairing the data offset first with `fixoff`); false when the segment
/// is shorter than a TCP header or longer than the packet.
#[inline(always)]
pub(crate) fn set_tcp_checksum(ip: &mut [u8], fixoff: bool) -> bool {
    let Some(hlen) = header_len(ip) else {
        return false;
    };
    let ip_len = usize::from(be16(ip, 2));
    if ip_len < hlen + 20 || ip_len > ip.len() {
        return false;
    }
    let plen = ip_len - hlen;
    let frag = is_fragment(ip);
    let (header, rest) = ip.split_at_mut(hlen);
    let tcp = &mut rest[..plen];
    if fixoff {
        let off = usize::from(tcp[12] >> 4) * 4;
        if off < 20 {
            tcp[12] = (tcp[12] & 0x0f) | 0x50;
        } else if off > plen && !frag {
            // plen is below 60 here, so the word count fits the nibble.
            tcp[12] = (tcp[12] & 0x0f) | (((plen >> 2) as u8) << 4);
        }
    }
    tcp[16] = 0;
    tcp[17] = 0;
    let sum = segment_checksum(header, hlen, tcp);
    tcp[16..18].copy_from_slice(&sum.to_be_bytes());
    true
}

impl SetTCPChecksum {
    #[inline]
    fn fix(&mut self, batch: &mut Batch) {
        let mut drops = 0u64;
        let fixoff = self.fixoff;
        batch.retain(|p: &mut Packet| {
            let ok = set_tcp_checksum(p.l3_bytes_mut(), fixoff);
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl Element for SetTCPChecksum {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.fix(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.fix(b));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("drops", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bricks_runtime::testing::Harness;

    /// A SYN 10.0.0.1:40000 -> 10.0.0.2:80 whose checksum is 0x8d3e.
    const SYN: [u8; 40] = [
        0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x9a, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
        0x00, 0x00, 0x50, 0x02, 0x72, 0x10, 0x8d, 0x3e, 0x00, 0x00,
    ];

    #[test]
    fn computes_the_real_checksum() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let mut p = SYN.to_vec();
        p[36] = 0x12;
        p[37] = 0x34;
        // Link padding is not summed.
        p.extend([0xaa; 6]);
        h.push_bytes(0, &p);
        let out = h.take_bytes(0);
        assert_eq!(&out[0][..40], &SYN[..]);
    }

    #[test]
    fn fixoff_repairs_the_data_offset() {
        let mut h = Harness::push(&CLASS, "FIXOFF true", 1, 1);
        let mut p = SYN;
        p[32] = 0x20;
        h.push_bytes(0, &p);
        p[32] = 0xf0;
        h.push_bytes(0, &p);
        let out = h.take_bytes(0);
        assert_eq!(out[0], SYN.to_vec());
        assert_eq!(out[1], SYN.to_vec());
        // Without FIXOFF the offset stays.
        let mut h = Harness::push(&CLASS, "false", 1, 1);
        h.push_bytes(0, &p);
        assert_eq!(h.take_bytes(0)[0][32], 0xf0);
    }

    #[test]
    fn bad_lengths_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(0, &SYN[..39]);
        let mut short = SYN;
        short[2..4].copy_from_slice(&39u16.to_be_bytes());
        h.push_bytes(0, &short);
        short[2..4].copy_from_slice(&3u16.to_be_bytes());
        h.push_bytes(0, &short);
        h.push_bytes(0, &SYN[..10]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(4));
    }
}
