//! `GetIP6Address`: copies an IPv6 address from the packet into the IPv6
//! destination annotation, where LookupIP6Route and the Neighbor Discovery
//! elements read the next hop (Click's `DST_IP6_ANNO`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, Packet, PortInfo, Stats,
};
use std::net::Ipv6Addr;

/// The `GetIP6Address` class.
pub static CLASS: ElementClass = ElementClass {
    name: "GetIP6Address",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets the IPv6 destination annotation from packet data",
    synopsis: "GetIP6Address(OFFSET)",
    description: "Copies the 16 bytes at OFFSET in the packet data into the IPv6 \
        destination annotation. OFFSET is usually 24, the destination address of an \
        IPv6 header at the start of the data (38 behind an Ethernet header). As in \
        Click the offset counts from the start of the data, not from the network \
        header. A packet too short to hold the 16 bytes is dropped and counted (Click \
        reads past its end).",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "OFFSET",
        ty: "unsigned integer",
        default: None,
        doc: "where the address starts in the packet data",
    }],
    counters: &[(
        "truncated",
        "packets too short to hold the address, dropped",
    )],
    example: "InfiniteSource(DATA \\<60 00 00 00 00 00 3b 40 20 01 0d b8 00 00 00 00 \
        00 00 00 00 00 00 00 01 20 01 0d b8 00 01 00 00 00 00 00 00 00 00 00 02>, \
        LIMIT 1) -> GetIP6Address(24) -> Discard;",
    see_also: &["LookupIP6Route", "CheckIP6Header", "GetIPAddress"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(GetIP6Address {
        offset: args.read_mp("OFFSET")?,
        truncated: 0,
    }))
}

/// Copies an address into the IPv6 destination annotation.
#[derive(Debug)]
pub struct GetIP6Address {
    offset: usize,
    truncated: u64,
}

impl GetIP6Address {
    #[inline(always)]
    fn verdict(&mut self, p: &mut Packet) -> Option<usize> {
        let a = p
            .data()
            .get(self.offset..)
            .and_then(|d| d.first_chunk::<16>())
            .copied();
        match a {
            Some(a) => {
                p.anno_mut().dst_ip6 = Ipv6Addr::from(a);
                Some(0)
            }
            None => {
                self.truncated += 1;
                None
            }
        }
    }
}

impl Element for GetIP6Address {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        cx.push_classified(batch, |p| self.verdict(p));
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_classified(out, max, |p| self.verdict(p));
    }

    fn stats(&self, s: &mut Stats) {
        s.counter("truncated", self.truncated);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::{ECHO_REQUEST, HOST_A, HOST_B};
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn copies_the_destination_and_the_source() {
        let mut h = Harness::push(&CLASS, "24", 1, 1);
        h.push_bytes(0, &ECHO_REQUEST);
        let out = h.take(0);
        assert_eq!(out[0].anno().dst_ip6, Ipv6Addr::from(HOST_B));
        assert_eq!(out[0].data(), &ECHO_REQUEST[..]);
        let mut h = Harness::push(&CLASS, "OFFSET 8", 1, 1);
        h.push_bytes(0, &ECHO_REQUEST);
        assert_eq!(h.take(0)[0].anno().dst_ip6, Ipv6Addr::from(HOST_A));
    }

    #[test]
    fn short_packets_are_dropped() {
        let mut h = Harness::push(&CLASS, "24", 1, 1);
        h.push_bytes(0, &ECHO_REQUEST[..39]);
        h.push_bytes(0, &ECHO_REQUEST[..40]);
        assert_eq!(h.take(0).len(), 1);
        assert_eq!(h.stats().get("truncated"), Some(1));
        let mut h = Harness::push(&CLASS, &usize::MAX.to_string(), 1, 1);
        h.push_bytes(0, &ECHO_REQUEST);
        assert!(h.take(0).is_empty());
    }

    #[test]
    fn offset_is_required() {
        assert!(make_element(&CLASS, "", &PortInfo::default()).is_err());
        assert!(make_element(&CLASS, "x", &PortInfo::default()).is_err());
    }
}
