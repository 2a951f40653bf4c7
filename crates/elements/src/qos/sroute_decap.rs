//! `SourceRouteDecap`: removes the source-route shim
//! ([`bricks_qos::sroute`]) and gives the frame back its payload's
//! EtherType. bricks' own element.

use super::sroute_encap::{read_ethertype, shim_of, ETHERTYPE_KEYWORD, ETHER_LEN};
use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Manual, Packet, PortInfo, Stats,
};
use bricks_qos::sroute::SourceRoute;

/// The `SourceRouteDecap` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SourceRouteDecap",
    ports: "1/1-2",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "removes the source route from Ethernet frames",
    synopsis: "SourceRouteDecap([ETHERTYPE t])",
    description: "Removes the source-route shim that SourceRouteEncap wrote, consumed or \
        not: the Ethernet addresses move forward over it and the frame's type becomes the \
        payload's again, so the payload is never copied. Frames without the shim, or whose \
        shim is truncated, of another version or malformed, go to output 1, or are dropped \
        and counted when it is not connected.",
    ports:
        "one input; output 0 frames without their route, output 1 (optional) the others; agnostic",
    keywords: &[ETHERTYPE_KEYWORD],
    counters: &[
        ("decapsulated", "frames whose shim was removed"),
        ("no_route", "frames without the shim"),
        (
            "malformed",
            "shims truncated, of another version or malformed",
        ),
    ],
    example: "InfiniteSource(DATA \\<00 00 c0 3b 71 ef 00 20 6a 12 34 56 08 00 45 00 00 14 00 00 \
        40 00 40 11 23 3d 12 1a 04 63 01 00 00 02>, LIMIT 2) \
        -> SourceRouteEncap(10.0.1.1:1) -> SourceRouteDecap -> Discard;",
    see_also: &["SourceRouteEncap", "SourceRouteLookup"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(SourceRouteDecap {
        ethertype: read_ethertype(args)?,
        decapsulated: 0,
        no_route: 0,
        malformed: 0,
    }))
}

/// Removes the shim.
pub struct SourceRouteDecap {
    ethertype: u16,
    decapsulated: u64,
    no_route: u64,
    malformed: u64,
}

impl SourceRouteDecap {
    #[inline(always)]
    fn decap(&mut self, p: &mut Packet) -> usize {
        let Some(shim) = shim_of(p.data(), self.ethertype) else {
            self.no_route += 1;
            return 1;
        };
        let (n, payload) = match SourceRoute::new_checked(shim) {
            Ok(s) => (s.header_len(), s.ethertype()),
            Err(_) => {
                self.malformed += 1;
                return 1;
            }
        };
        let d = p.data_mut();
        d.copy_within(0..12, n);
        d[n + 12..n + ETHER_LEN].copy_from_slice(&payload.to_be_bytes());
        p.pull_front(n);
        self.decapsulated += 1;
        0
    }
}

impl Element for SourceRouteDecap {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| Some(self.decap(p)));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("decapsulated", self.decapsulated);
        s.counter("no_route", self.no_route);
        s.counter("malformed", self.malformed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vrouter::testdata::{IPV4_UDP, VLAN_TCP};
    use bricks_runtime::testing::Harness;

    #[test]
    fn encap_then_decap_gives_the_frame_back() {
        let mut e = Harness::push(
            &super::super::sroute_encap::CLASS,
            "10.0.1.1:1 10.0.2.1:2 10.0.3.1:3",
            1,
            1,
        );
        let mut d = Harness::push(&CLASS, "", 1, 2);
        for f in [&IPV4_UDP[..], &VLAN_TCP[..], &IPV4_UDP[..14]] {
            e.push_bytes(0, f);
            let p = e.take(0);
            d.push_packets(0, p);
            assert_eq!(d.take_bytes(0), vec![f.to_vec()]);
        }
        assert_eq!(d.stats().get("decapsulated"), Some(3));
    }

    #[test]
    fn frames_without_a_good_shim() {
        let mut d = Harness::push(&CLASS, "", 1, 2);
        d.push_bytes(0, &IPV4_UDP);
        let mut f = IPV4_UDP[..12].to_vec();
        f.extend([
            0x88, 0xb5, 0x02, 0x03, 0x00, 0x00, 0x08, 0x00, 1, 2, 3, 4, 0, 1,
        ]);
        d.push_bytes(0, &f); // three hops announced, one present
        assert!(d.take(0).is_empty());
        assert_eq!(d.take(1).len(), 2);
        assert_eq!(d.stats().get("no_route"), Some(1));
        assert_eq!(d.stats().get("malformed"), Some(1));
    }
}
