//! `FixIPSrc`: gives an ICMP error the address of the interface it leaves
//! by (RFC 1812 section 4.3.2.4), where ICMPError asked for it.

use super::header::{be16, be32};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};
use bricks_wire::checksum;
use std::net::Ipv4Addr;

/// The `FixIPSrc` class.
pub static CLASS: ElementClass = ElementClass {
    name: "FixIPSrc",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets the IP source address of packets marked for it",
    synopsis: "FixIPSrc(IPADDR)",
    description: "For each packet whose fix_ip_src annotation is set, clears the \
        annotation, sets the IP source address to IPADDR and updates the header \
        checksum (RFC 1624). Other packets pass untouched. ICMPError sets the \
        annotation on the errors it generates, so that an error leaves with the \
        address of the interface it is sent on as its source (RFC 1812 section \
        4.3.2.4). The IP header is found through the network header annotation.",
    ports: "one input, one output; agnostic",
    keywords: &[],
    counters: &[("fixed", "packets whose source address was set")],
    example: "InfiniteSource(LIMIT 1, LENGTH 20) -> FixIPSrc(18.26.4.24) -> Discard;",
    see_also: &["ICMPError"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    let addr: Ipv4Addr = args.read_mp("IPADDR")?;
    Ok(Box::new(FixIPSrc {
        addr: u32::from(addr),
        fixed: 0,
    }))
}

/// Rewrites the source address of marked packets.
#[derive(Debug)]
pub struct FixIPSrc {
    addr: u32,
    fixed: u64,
}

impl FixIPSrc {
    /// A FixIPSrc for `addr` (IPOutputCombo's).
    pub(crate) fn new(addr: Ipv4Addr) -> FixIPSrc {
        FixIPSrc {
            addr: u32::from(addr),
            fixed: 0,
        }
    }

    #[inline]
    pub(crate) fn fix(&mut self, p: &mut Packet) {
        if !p.anno().fix_ip_src {
            return;
        }
        p.anno_mut().fix_ip_src = false;
        let h = p.l3_bytes_mut();
        if h.len() < 20 {
            return;
        }
        let old = be32(h, 12);
        let sum = checksum::update32(be16(h, 10), old, self.addr);
        h[12..16].copy_from_slice(&self.addr.to_be_bytes());
        h[10..12].copy_from_slice(&sum.to_be_bytes());
        self.fixed += 1;
    }
}

impl Element for FixIPSrc {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        for p in batch.iter_mut() {
            self.fix(p);
        }
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| {
            for p in b.iter_mut() {
                self.fix(p);
            }
        });
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("fixed", self.fixed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::{echo_request, ip_checksum_ok};
    use bricks_runtime::testing::Harness;

    #[test]
    fn rewrites_marked_packets_only() {
        let frame = echo_request();
        let mut marked = Packet::from_slice(&frame).unwrap();
        marked.anno_mut().fix_ip_src = true;
        marked.set_network_header(0);
        let unmarked = Packet::from_slice(&frame).unwrap();
        let mut h = Harness::push(&CLASS, "18.26.4.24", 1, 1);
        h.push_packets(0, [marked, unmarked]);
        let out = h.take(0);
        assert_eq!(&out[0].data()[12..16], &[18, 26, 4, 24]);
        assert!(ip_checksum_ok(out[0].data()));
        assert!(!out[0].anno().fix_ip_src);
        assert_eq!(&out[0].data()[16..], &frame[16..]);
        assert_eq!(out[1].data(), &frame[..]);
        assert_eq!(h.stats().get("fixed"), Some(1));
    }

    #[test]
    fn short_packet_passes_untouched() {
        let mut p = Packet::from_slice(&[0x45; 10]).unwrap();
        p.anno_mut().fix_ip_src = true;
        let mut h = Harness::push(&CLASS, "1.2.3.4", 1, 1);
        h.push_packets(0, [p]);
        assert_eq!(h.take(0)[0].data(), &[0x45; 10]);
        assert_eq!(h.stats().get("fixed"), Some(0));
    }
}
