//! `SetIPChecksum`: computes the IPv4 header checksum (RFC 791 section
//! 3.1, RFC 1071) from scratch, as Click's `elements/ip/setipchecksum.cc`
//! does, for headers built or edited by something that did not update it.

use super::transport::header_len;
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::checksum;

/// The `SetIPChecksum` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetIPChecksum",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets IP packets' header checksums",
    synopsis: "SetIPChecksum()",
    description: "Expects IPv4 packets, the header where the network header annotation says \
        (CheckIPHeader and MarkIPHeader set it) or at the start of the data. Computes the \
        header checksum over the header length the header announces and writes it into the \
        checksum field. A packet shorter than 20 bytes, or than its header length, or whose \
        header length is below 20 bytes, is dropped and counted (Click prints `bad \
        lengths`). Rarely needed: elements that change a header (DecIPTTL, FixIPSrc, \
        IPGWOptions) update the checksum themselves.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[("drops", "packets too short for their IP header")],
    example: "InfiniteSource(DATA \\<45 00 00 14 00 00 00 00 40 11 00 00 0a 00 00 01 \
        0a 00 00 02>, LIMIT 1) -> SetIPChecksum -> CheckIPHeader -> Discard;",
    see_also: &[
        "CheckIPHeader",
        "DecIPTTL",
        "SetUDPChecksum",
        "SetTCPChecksum",
    ],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let _ = args;
    Ok(Box::new(SetIPChecksum { drops: 0 }))
}

/// Sets the IPv4 header checksum.
#[derive(Debug)]
pub struct SetIPChecksum {
    drops: u64,
}

/// Writes the checksum of the IPv4 header at the start of `ip`; false when
/// the bytes do not hold the header its length field announces.
#[inline(always)]
pub(crate) fn set_ip_checksum(ip: &mut [u8]) -> bool {
    let Some(hlen) = header_len(ip) else {
        return false;
    };
    let h = &mut ip[..hlen];
    h[10] = 0;
    h[11] = 0;
    let sum = !checksum::data(h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    true
}

impl SetIPChecksum {
    #[inline]
    fn fix(&mut self, batch: &mut Batch) {
        let mut drops = 0u64;
        batch.retain(|p: &mut Packet| {
            let ok = set_ip_checksum(p.l3_bytes_mut());
            drops += u64::from(!ok);
            ok
        });
        self.drops += drops;
    }
}

impl Element for SetIPChecksum {
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
    use crate::ip::header::testing::{ip_checksum_ok, udp_with_options};
    use bricks_runtime::testing::Harness;

    #[test]
    fn sets_the_checksum_of_a_real_header() {
        // 192.168.0.1 > 192.168.0.199 UDP, whose checksum is b861.
        let mut h = Harness::push(&CLASS, "", 1, 1);
        h.push_bytes(
            0,
            &[
                0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
                0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
            ],
        );
        let out = h.take_bytes(0);
        assert_eq!(&out[0][10..12], &[0xb8, 0x61]);
        // Options are covered; what follows the header is not touched.
        let mut p = udp_with_options(&[1, 1, 1, 0]);
        p[10] ^= 0x55;
        let tail = p[24..].to_vec();
        h.push_bytes(0, &p);
        let out = h.take_bytes(0);
        assert!(ip_checksum_ok(&out[0]));
        assert_eq!(&out[0][24..], &tail[..]);
    }

    #[test]
    fn bad_lengths_are_dropped_and_counted() {
        let mut h = Harness::push(&CLASS, "", 1, 1);
        let mut opts = udp_with_options(&[1, 1, 1, 0]);
        h.push_bytes(0, &opts[..22]);
        opts[0] = 0x44;
        h.push_bytes(0, &opts);
        h.push_bytes(0, &[0x45; 19]);
        h.push_bytes(0, &[]);
        assert!(h.take(0).is_empty());
        assert_eq!(h.stats().get("drops"), Some(4));
    }
}
