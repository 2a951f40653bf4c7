//! The hand-written decoder against an independent encoder: route
//! messages built and serialized by `netlink-packet-route` decode to the
//! same prefix, table, protocol, metric and hops.

use bricks_control::netlink::{self, Message, NlHop, NLM_F_REPLACE};
use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteNextHop, RouteProtocol,
    RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::net::IpAddr;

fn encode(msg: RouteMessage, delete: bool, flags: u16) -> Vec<u8> {
    let payload = if delete {
        RouteNetlinkMessage::DelRoute(msg)
    } else {
        RouteNetlinkMessage::NewRoute(msg)
    };
    let mut header = NetlinkHeader::default();
    header.flags = flags;
    let mut m = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(payload));
    m.finalize();
    let mut buf = vec![0u8; m.buffer_len()];
    m.serialize(&mut buf);
    buf
}

fn header(family: AddressFamily, len: u8, protocol: RouteProtocol) -> RouteHeader {
    RouteHeader {
        address_family: family,
        destination_prefix_length: len,
        table: RouteHeader::RT_TABLE_MAIN,
        protocol,
        scope: RouteScope::Universe,
        kind: RouteType::Unicast,
        ..Default::default()
    }
}

fn decode(buf: &[u8]) -> netlink::RouteMsg {
    let mut it = netlink::messages(buf);
    let raw = it.next().unwrap().unwrap();
    assert!(it.next().is_none());
    match netlink::decode(raw).unwrap() {
        Message::Route(r) => r,
        other => panic!("not a route: {other:?}"),
    }
}

#[test]
fn ipv4_route_with_table_and_metric() {
    let mut m = RouteMessage::default();
    m.header = header(AddressFamily::Inet, 24, RouteProtocol::Bgp);
    m.attributes = vec![
        RouteAttribute::Table(1000),
        RouteAttribute::Destination(RouteAddress::Inet("198.51.100.0".parse().unwrap())),
        RouteAttribute::Gateway(RouteAddress::Inet("10.0.0.2".parse().unwrap())),
        RouteAttribute::Oif(5),
        RouteAttribute::Priority(20),
        RouteAttribute::PrefSource(RouteAddress::Inet("10.0.0.1".parse().unwrap())),
    ];
    let r = decode(&encode(m, false, NLM_F_REPLACE));
    assert_eq!(r.prefix.to_string(), "198.51.100.0/24");
    assert_eq!(r.table, 1000);
    assert_eq!(r.protocol, 186);
    assert_eq!(r.metric, 20);
    assert_eq!(r.flags & NLM_F_REPLACE, NLM_F_REPLACE);
    assert_eq!(
        r.hops.as_slice(),
        [NlHop {
            ifindex: 5,
            gateway: Some("10.0.0.2".parse().unwrap())
        }]
    );
    assert_eq!(r.unsupported, None);
}

#[test]
fn ipv6_multipath_route() {
    let mut m = RouteMessage::default();
    m.header = header(AddressFamily::Inet6, 48, RouteProtocol::Ospf);
    let hop = |oif: u32, gw: &str| {
        let mut h = RouteNextHop::default();
        h.interface_index = oif;
        h.attributes = vec![RouteAttribute::Gateway(RouteAddress::Inet6(
            gw.parse().unwrap(),
        ))];
        h
    };
    m.attributes = vec![
        RouteAttribute::Destination(RouteAddress::Inet6("2001:db8:5::".parse().unwrap())),
        RouteAttribute::MultiPath(vec![
            hop(2, "fe80::1"),
            hop(3, "fe80::2"),
            hop(4, "fe80::3"),
        ]),
    ];
    let r = decode(&encode(m, true, 0));
    assert!(r.delete);
    assert_eq!(r.prefix.to_string(), "2001:db8:5::/48");
    assert_eq!(r.protocol, 188);
    let gws: Vec<Option<IpAddr>> = r.hops.iter().map(|h| h.gateway).collect();
    assert_eq!(
        gws,
        ["fe80::1", "fe80::2", "fe80::3"]
            .iter()
            .map(|g| Some(g.parse().unwrap()))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        r.hops.iter().map(|h| h.ifindex).collect::<Vec<_>>(),
        [2, 3, 4]
    );
}

#[test]
fn blackhole_and_default_routes() {
    let mut m = RouteMessage::default();
    m.header = header(AddressFamily::Inet, 0, RouteProtocol::Static);
    m.header.kind = RouteType::BlackHole;
    let r = decode(&encode(m, false, 0));
    assert_eq!(r.prefix.to_string(), "0.0.0.0/0");
    assert_eq!(r.kind, 6);
    assert!(r.hops.is_empty());
}
