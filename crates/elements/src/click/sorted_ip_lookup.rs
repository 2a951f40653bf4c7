//! `SortedIPLookup`: Click's deprecated LinearIPLookup that keeps its
//! routes sorted, most specific first, so that the first match is the
//! longest (`elements/ip/sortediplookup.cc`). Its lookups give the same
//! routes as LinearIPLookup's, so in bricks it is the same table, bricks'
//! StaticIPLookup.

use crate::ip::staticiplookup;
use bricks_element::{ArgError, Args, Element, ElementClass, Manual, PortInfo};

/// The `SortedIPLookup` class: bricks' StaticIPLookup.
pub static CLASS: ElementClass = ElementClass {
    name: "SortedIPLookup",
    ports: "1/-",
    processing: "h/h",
    manual: &MANUAL,
    make,
};

static MANUAL: Manual = Manual {
    summary: "simple IP routing table (deprecated for LinearIPLookup)",
    synopsis: "SortedIPLookup(ADDR/MASK [GW] OUT, ...)",
    description: "Click's LinearIPLookup with its routes sorted so that a more specific \
        route comes before every route that contains it, the first match being the \
        longest; Click deprecates it because it is slower. Lookups give the same result: \
        longest-prefix match of the destination address annotation, the gateway (if any) \
        replacing the annotation, the packet leaving on the route's output, one without a \
        route dropped and counted as `no_route`. bricks' StaticIPLookup under Click's name, \
        as LinearIPLookup is; the `table` handler lists the routes in the order given (Click \
        lists them sorted), and `add`, `set` and `remove` are as in Click. Click's \
        deprecation warning is not printed. `bricks elements StaticIPLookup` describes it.",
    ports: "one push input; push outputs",
    keywords: &[],
    counters: &[],
    example: "InfiniteSource(LENGTH 20, LIMIT 1) -> GetIPAddress(16) \
        -> rt :: SortedIPLookup(0/0 10.0.0.1 1, 10.0.0.0/8 0); rt[0] -> Discard; \
        rt[1] -> Discard;",
    see_also: &["LinearIPLookup", "StaticIPLookup", "RadixIPLookup"],
};

fn make(args: &mut Args<'_>, ports: &PortInfo) -> Result<Box<dyn Element>, ArgError> {
    (staticiplookup::CLASS.make)(args, ports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::header::testing::udp;
    use bricks_element::{Packet, Processing};
    use bricks_runtime::testing::{make_element, Harness};
    use std::net::Ipv4Addr;

    fn to(dst: Ipv4Addr) -> Packet {
        let mut b = udp(4);
        b[16..20].copy_from_slice(&dst.octets());
        let mut p = Packet::from_slice(&b).unwrap();
        p.anno_mut().dst_ip = dst;
        p
    }

    #[test]
    fn the_longest_match_wins_whatever_the_order() {
        let routes = "0/0 10.0.0.1 1, 10.0.0.0/8 0, 10.1.0.0/16 10.1.0.254 2";
        let mut h = Harness::push(&CLASS, routes, 1, 3);
        h.push_packets(
            0,
            [
                to(Ipv4Addr::new(10, 1, 2, 3)),
                to(Ipv4Addr::new(10, 9, 9, 9)),
                to(Ipv4Addr::new(192, 0, 2, 1)),
            ],
        );
        let o2 = h.take(2);
        assert_eq!(o2.len(), 1);
        assert_eq!(o2[0].anno().dst_ip, Ipv4Addr::new(10, 1, 0, 254));
        let o0 = h.take(0);
        assert_eq!(o0[0].anno().dst_ip, Ipv4Addr::new(10, 9, 9, 9));
        let o1 = h.take(1);
        assert_eq!(o1[0].anno().dst_ip, Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(
            h.read_handler("table").unwrap(),
            "0.0.0.0/0\t10.0.0.1\t1\n10.0.0.0/8\t-\t0\n10.1.0.0/16\t10.1.0.254\t2\n"
        );
        h.write_handler("remove", "10.1.0.0/16").unwrap();
        h.push_packets(0, [to(Ipv4Addr::new(10, 1, 2, 3))]);
        assert_eq!(h.take(0).len(), 1);
    }

    #[test]
    fn bad_routes_are_refused() {
        let ports = PortInfo {
            inputs: vec![Processing::Push],
            outputs: vec![Processing::Push; 2],
        };
        assert!(make_element(&CLASS, "10.0.0.0/8", &ports).is_err());
        assert!(make_element(&CLASS, "10.0.0.0/8 5", &ports).is_err());
        assert!(make_element(&CLASS, "bogus 0", &ports).is_err());
    }
}
