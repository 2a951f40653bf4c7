//! `SetIP6Address`: sets the IPv6 destination annotation, where
//! LookupIP6Route and IP6NDSolicitor read the next hop, to a fixed address
//! (Click's `elements/ip6/setip6address.cc`, `SET_DST_IP6_ANNO`).

use bricks_element::{
    ArgError, Args, Batch, Context, Element, ElementClass, Keyword, Manual, PortInfo,
};
use std::net::Ipv6Addr;

/// The `SetIP6Address` class.
pub static CLASS: ElementClass = ElementClass {
    name: "SetIP6Address",
    ports: "1/1",
    processing: "a/a",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "sets the IPv6 destination annotation to a fixed address",
    synopsis: "SetIP6Address(IPADDR)",
    description: "Sets the IPv6 destination annotation of every packet to IPADDR. \
        LookupIP6Route routes by that annotation (the header's destination is used only \
        when it is unset, `::`), and IP6NDSolicitor resolves it to a link-layer address, \
        so this element sends packets towards a fixed next hop. The packet data is not \
        read or changed.",
    ports: "one input, one output; agnostic",
    keywords: &[Keyword {
        name: "IPADDR",
        ty: "IPv6 address",
        default: None,
        doc: "the address; positional",
    }],
    counters: &[],
    example: "InfiniteSource(LIMIT 1) -> SetIP6Address(2001:db8::1) \
        -> rt :: LookupIP6Route(2001:db8::/64 0, ::/0 1); rt[0] -> Discard; rt[1] -> Discard;",
    see_also: &["GetIP6Address", "LookupIP6Route", "SetIPAddress"],
};

fn make(args: &mut Args<'_>, _ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    Ok(Box::new(SetIP6Address {
        addr: args.read_mp("IPADDR")?,
    }))
}

/// Sets the IPv6 destination annotation.
#[derive(Debug)]
pub struct SetIP6Address {
    addr: Ipv6Addr,
}

impl SetIP6Address {
    #[inline]
    fn set(&self, b: &mut Batch) {
        for p in b.iter_mut() {
            p.anno_mut().dst_ip6 = self.addr;
        }
    }
}

impl Element for SetIP6Address {
    fn push(&mut self, _port: usize, batch: &mut Batch, cx: &mut Context<'_>) {
        self.set(batch);
        cx.push(0, batch);
    }

    fn pull(&mut self, _port: usize, out: &mut Batch, max: usize, cx: &mut Context<'_>) {
        cx.pull_with(out, max, |b, _| self.set(b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::header6::testing::{ECHO_REQUEST, HOST_A};
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};

    #[test]
    fn sets_the_annotation_only() {
        let mut h = Harness::push(&CLASS, "2001:db8::1", 1, 1);
        let mut p = Packet::from_slice(&ECHO_REQUEST).unwrap();
        p.anno_mut().dst_ip6 = Ipv6Addr::LOCALHOST;
        h.push_packets(0, [p, Packet::from_slice(&[]).unwrap()]);
        let out = h.take(0);
        assert_eq!(out.len(), 2);
        assert!(out
            .iter()
            .all(|p| p.anno().dst_ip6 == Ipv6Addr::from(HOST_A)));
        assert_eq!(out[0].data(), &ECHO_REQUEST[..]);
        assert!(out[1].is_empty());
        let ports = PortInfo {
            inputs: vec![Processing::Pull],
            outputs: vec![Processing::Pull],
        };
        let mut h = Harness::new(&CLASS, "IPADDR ::ffff:10.0.0.1", ports);
        h.feed(0, [Packet::from_slice(&[1]).unwrap()]);
        let out = h.pull(0, 4);
        assert_eq!(
            out[0].anno().dst_ip6,
            "::ffff:10.0.0.1".parse::<Ipv6Addr>().unwrap()
        );
    }

    #[test]
    fn address_is_required() {
        let make = |a: &str| make_element(&CLASS, a, &PortInfo::default()).map(|_| ());
        assert!(make("").unwrap_err().contains("IPADDR"));
        assert!(make("10.0.0.1").unwrap_err().contains("IPADDR"));
        assert!(make("2001:db8::g").unwrap_err().contains("IPADDR"));
        assert!(make("::1, ::2").is_err());
    }
}
