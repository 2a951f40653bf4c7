//! Neighbor Discovery views, the option walk and `NdiscRepr` on arbitrary
//! bytes, read as an Ethernet frame carrying IPv6 and as a bare ND
//! message: never a panic, the option walk stays within the message and
//! ends at its first error, and every parsed `NdiscRepr` emits a message
//! that parses back to it.
#![no_main]

use bricks_wire::ethernet::{EtherType, EthernetFrame};
use bricks_wire::ipv6::Ipv6Packet;
use bricks_wire::ndisc::{options, NdiscPacket, NdiscRepr};
use bricks_wire::{IpProtocol, Ipv6Addr};
use libfuzzer_sys::fuzz_target;

fn message(src: Ipv6Addr, dst: Ipv6Addr, msg: &[u8]) {
    let mut n = 0;
    let mut failed = false;
    for o in options(msg) {
        assert!(!failed, "the walk goes on after an error");
        n += 1;
        assert!(n <= msg.len() / 8 + 1);
        failed = o.is_err();
    }
    let Ok(p) = NdiscPacket::new_checked(msg) else {
        return;
    };
    let _ = (p.msg_code(), p.neighbor_flags(), p.target_addr());
    let _ = (p.cur_hop_limit(), p.router_flags(), p.router_lifetime());
    let _ = (p.reachable_time(), p.retrans_time());
    assert!(p.options().len() <= msg.len());
    for _ in options(p.options()) {}
    if let Ok(repr) = NdiscRepr::parse(src, dst, &p) {
        let mut out = vec![0u8; repr.buffer_len()];
        repr.emit(src, dst, &mut NdiscPacket::new_unchecked(&mut out[..]));
        let back = NdiscPacket::new_checked(&out[..]).unwrap();
        assert_eq!(NdiscRepr::parse(src, dst, &back), Ok(repr));
        let _ = repr.to_string();
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = EthernetFrame::new_checked(data) {
        if f.ethertype() == EtherType::IPV6 {
            if let Ok(ip) = Ipv6Packet::new_checked(f.payload()) {
                if ip.next_header() == IpProtocol::ICMPV6 {
                    message(ip.src_addr(), ip.dst_addr(), ip.payload());
                }
            }
        }
    }
    let link_local = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    message(link_local, Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1), data);
    message(
        Ipv6Addr::UNSPECIFIED,
        Ipv6Addr::new(0xff02, 0, 0, 0, 0, 1, 0xff00, 1),
        data,
    );
});
