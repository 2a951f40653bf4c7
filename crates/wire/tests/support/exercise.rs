// Walks a frame through every view of bricks-wire, calling every getter,
// every options iterator and every `Repr::parse`, and checks that what a
// `Repr` parses it also emits back identically.
//
// Shared, through `include!`, by the proptest in tests/no_panic.rs and the
// cargo-fuzz target fuzz/fuzz_targets/wire_ethernet_ipv4.rs, so that CI
// runs the same walk the fuzzer does. It must never panic on any input:
// a panic is a broken "no accessor panics after check_len" promise.

#[allow(unused_imports)]
use bricks_wire::{
    arp::ArpPacket, esp::EspPacket, ethernet::EthernetFrame, icmpv4::Icmpv4Packet,
    icmpv6::Icmpv6Packet, ipv4::Ipv4Packet, ipv6::Ipv6Packet, mpls::MplsPacket, tcp::TcpPacket,
    udp::UdpPacket, vlan::VlanPacket, ArpRepr, EspRepr, EtherType, EthernetRepr, Icmpv4Repr,
    Icmpv6Repr, IpProtocol, Ipv4Repr, Ipv6Repr, MplsRepr, TcpRepr, UdpRepr, VlanRepr,
};
use std::hint::black_box;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Walks an Ethernet frame and everything inside it.
pub fn exercise_frame(data: &[u8]) {
    let Ok(frame) = EthernetFrame::new_checked(data) else {
        return;
    };
    black_box((frame.dst_addr(), frame.src_addr(), frame.ethertype()));
    if let Ok(repr) = EthernetRepr::parse(&frame) {
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
        assert_eq!(
            EthernetRepr::parse(&EthernetFrame::new_unchecked(&buf[..])),
            Ok(repr)
        );
        black_box(repr.to_string());
    }
    exercise_ethertype(frame.ethertype(), frame.payload(), 0);
}

fn exercise_ethertype(ethertype: EtherType, payload: &[u8], depth: usize) {
    // Real stacks are shallow; the bound keeps a frame of nested tags from
    // recursing without end.
    if depth > 16 {
        return;
    }
    match ethertype {
        EtherType::VLAN | EtherType::QINQ => {
            let Ok(tag) = VlanPacket::new_checked(payload) else {
                return;
            };
            black_box((tag.tci(), tag.pcp(), tag.dei(), tag.vid(), tag.ethertype()));
            let repr = VlanRepr::parse(&tag).unwrap();
            let mut buf = [0u8; 4];
            repr.emit(&mut VlanPacket::new_unchecked(&mut buf[..]));
            assert_eq!(
                VlanRepr::parse(&VlanPacket::new_unchecked(&buf[..])),
                Ok(repr)
            );
            black_box(repr.to_string());
            exercise_ethertype(tag.ethertype(), tag.payload(), depth + 1);
        }
        EtherType::MPLS_UNICAST | EtherType::MPLS_MULTICAST => exercise_mpls(payload, depth),
        EtherType::ARP => exercise_arp(payload),
        EtherType::IPV4 => exercise_ipv4(payload, depth),
        EtherType::IPV6 => exercise_ipv6(payload, depth),
        _ => {}
    }
}

/// Walks an MPLS label stack, then the packet under it (guessed from its
/// version nibble, as routers do for the explicit-null labels).
pub fn exercise_mpls(mut data: &[u8], depth: usize) {
    for _ in 0..16 {
        let Ok(entry) = MplsPacket::new_checked(data) else {
            return;
        };
        black_box((entry.entry(), entry.label(), entry.tc(), entry.ttl()));
        let repr = MplsRepr::parse(&entry).unwrap();
        let mut buf = [0u8; 4];
        repr.emit(&mut MplsPacket::new_unchecked(&mut buf[..]));
        assert_eq!(
            MplsRepr::parse(&MplsPacket::new_unchecked(&buf[..])),
            Ok(repr)
        );
        black_box(repr.to_string());
        data = entry.payload();
        if entry.bottom_of_stack() {
            match data.first().map(|b| b >> 4) {
                Some(4) => exercise_ipv4(data, depth + 1),
                Some(6) => exercise_ipv6(data, depth + 1),
                _ => {}
            }
            return;
        }
    }
}

/// Walks an ARP packet.
pub fn exercise_arp(data: &[u8]) {
    let Ok(arp) = ArpPacket::new_checked(data) else {
        return;
    };
    black_box((
        arp.hardware_type(),
        arp.protocol_type(),
        arp.hardware_len(),
        arp.protocol_len(),
    ));
    black_box((arp.operation(), arp.is_ethernet_ipv4()));
    black_box((arp.source_hardware_addr(), arp.source_protocol_addr()));
    black_box((arp.target_hardware_addr(), arp.target_protocol_addr()));
    if let Ok(repr) = ArpRepr::parse(&arp) {
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&buf[..])),
            Ok(repr)
        );
        black_box(repr.to_string());
    }
}

/// Walks an IPv4 packet, its options and its payload.
pub fn exercise_ipv4(data: &[u8], depth: usize) {
    let Ok(ip) = Ipv4Packet::new_checked(data) else {
        return;
    };
    black_box((
        ip.version(),
        ip.header_len(),
        ip.dscp(),
        ip.ecn(),
        ip.dscp_ecn(),
    ));
    black_box((ip.total_len(), ip.ident(), ip.dont_frag(), ip.more_frags()));
    black_box((ip.frag_offset(), ip.is_fragment(), ip.hop_limit(), ip.ttl()));
    black_box((
        ip.next_header(),
        ip.checksum(),
        ip.src_addr(),
        ip.dst_addr(),
    ));
    let verified = ip.verify_checksum();
    black_box(ip.options());
    for option in ip.options_iter() {
        match option {
            Ok(option) => {
                black_box((option.kind, option.data, option.len(), option.pointer()));
                black_box((
                    option.kind.copied(),
                    option.kind.class(),
                    option.kind.number(),
                ));
                black_box(option.timestamp_overflow_flag());
                for addr in option.route_addresses() {
                    black_box(addr);
                }
            }
            Err(e) => {
                // The pointer lands inside the options area.
                assert!(usize::from(e.pointer) >= 20 && usize::from(e.pointer) < ip.header_len());
                black_box(e.to_string());
            }
        }
    }

    if let Ok(repr) = Ipv4Repr::parse(&ip) {
        assert!(verified);
        let mut buf = vec![0u8; repr.buffer_len() + repr.payload_len];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(
            Ipv4Repr::parse(&Ipv4Packet::new_unchecked(&buf[..])),
            Ok(repr)
        );
        black_box(repr.to_string());
    }

    // What a router does to every packet it forwards: the incremental
    // update must agree with a full recomputation.
    if verified {
        let mut copy = data[..ip.header_len()].to_vec();
        let mut view = Ipv4Packet::new_unchecked(&mut copy[..]);
        view.set_hop_limit_update_checksum(ip.hop_limit().wrapping_sub(1));
        assert!(view.verify_checksum());
    }

    if ip.is_fragment() && ip.frag_offset() != 0 {
        return;
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    exercise_l4_v4(ip.next_header(), ip.payload(), src, dst, depth);
}

fn exercise_l4_v4(
    protocol: IpProtocol,
    payload: &[u8],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    depth: usize,
) {
    match protocol {
        IpProtocol::ICMP => exercise_icmpv4(payload, depth),
        IpProtocol::UDP => {
            if let Ok(udp) = UdpPacket::new_checked(payload) {
                exercise_udp(&udp);
                black_box(udp.verify_checksum_v4(src, dst));
                let mut copy = payload[..usize::from(udp.len())].to_vec();
                let mut view = UdpPacket::new_unchecked(&mut copy[..]);
                view.fill_checksum_v4(src, dst);
                assert!(view.verify_checksum_v4(src, dst));
            }
        }
        IpProtocol::TCP => {
            if let Ok(tcp) = TcpPacket::new_checked(payload) {
                exercise_tcp(&tcp);
                black_box(tcp.verify_checksum_v4(src, dst));
                let mut copy = payload.to_vec();
                let mut view = TcpPacket::new_unchecked(&mut copy[..]);
                view.fill_checksum_v4(src, dst);
                assert!(view.verify_checksum_v4(src, dst));
            }
        }
        IpProtocol::ESP => exercise_esp(payload),
        IpProtocol::IPV4 => exercise_ipv4(payload, depth + 1),
        IpProtocol::IPV6 => exercise_ipv6(payload, depth + 1),
        _ => {}
    }
}

/// Walks an ICMP message, and the IPv4 header an error quotes.
pub fn exercise_icmpv4(data: &[u8], depth: usize) {
    let Ok(icmp) = Icmpv4Packet::new_checked(data) else {
        return;
    };
    black_box((
        icmp.msg_type(),
        icmp.msg_code(),
        icmp.checksum(),
        icmp.rest_of_header(),
    ));
    black_box((
        icmp.echo_ident(),
        icmp.echo_seq_no(),
        icmp.param_problem_pointer(),
    ));
    black_box((icmp.gateway(), icmp.next_hop_mtu(), icmp.verify_checksum()));
    black_box((icmp.msg_type().is_error(), icmp.msg_type().to_string()));
    if let Ok(repr) = Icmpv4Repr::parse(&icmp) {
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(
            Icmpv4Repr::parse(&Icmpv4Packet::new_unchecked(&buf[..])),
            Ok(repr)
        );
        black_box(repr.to_string());
    }
    if icmp.msg_type().is_error() && depth < 16 {
        exercise_ipv4(icmp.payload(), depth + 1);
    }
}

/// Walks an IPv6 packet and its payload.
pub fn exercise_ipv6(data: &[u8], depth: usize) {
    let Ok(ip) = Ipv6Packet::new_checked(data) else {
        return;
    };
    black_box((
        ip.version(),
        ip.traffic_class(),
        ip.dscp(),
        ip.ecn(),
        ip.flow_label(),
    ));
    black_box((
        ip.payload_len(),
        ip.next_header(),
        ip.hop_limit(),
        ip.src_addr(),
        ip.dst_addr(),
    ));
    if let Ok(repr) = Ipv6Repr::parse(&ip) {
        let mut buf = vec![0u8; repr.buffer_len() + repr.payload_len];
        repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]));
        assert_eq!(
            Ipv6Repr::parse(&Ipv6Packet::new_unchecked(&buf[..])),
            Ok(repr)
        );
        black_box(repr.to_string());
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let payload = ip.payload();
    match ip.next_header() {
        IpProtocol::ICMPV6 => exercise_icmpv6(payload, src, dst, depth),
        IpProtocol::UDP => {
            if let Ok(udp) = UdpPacket::new_checked(payload) {
                exercise_udp(&udp);
                black_box(udp.verify_checksum_v6(src, dst));
                let mut copy = payload[..usize::from(udp.len())].to_vec();
                let mut view = UdpPacket::new_unchecked(&mut copy[..]);
                view.fill_checksum_v6(src, dst);
                assert!(view.verify_checksum_v6(src, dst));
            }
        }
        IpProtocol::TCP => {
            if let Ok(tcp) = TcpPacket::new_checked(payload) {
                exercise_tcp(&tcp);
                black_box(tcp.verify_checksum_v6(src, dst));
                let mut copy = payload.to_vec();
                let mut view = TcpPacket::new_unchecked(&mut copy[..]);
                view.fill_checksum_v6(src, dst);
                assert!(view.verify_checksum_v6(src, dst));
            }
        }
        IpProtocol::ESP => exercise_esp(payload),
        IpProtocol::IPV4 if depth < 16 => exercise_ipv4(payload, depth + 1),
        IpProtocol::IPV6 if depth < 16 => exercise_ipv6(payload, depth + 1),
        _ => {}
    }
}

/// Walks an ICMPv6 message, and the IPv6 header an error quotes.
pub fn exercise_icmpv6(data: &[u8], src: Ipv6Addr, dst: Ipv6Addr, depth: usize) {
    let Ok(icmp) = Icmpv6Packet::new_checked(data) else {
        return;
    };
    black_box((
        icmp.msg_type(),
        icmp.msg_code(),
        icmp.checksum(),
        icmp.rest_of_header(),
    ));
    black_box((
        icmp.echo_ident(),
        icmp.echo_seq_no(),
        icmp.pkt_too_big_mtu(),
    ));
    black_box((icmp.param_problem_ptr(), icmp.verify_checksum(src, dst)));
    black_box((
        icmp.msg_type().is_error(),
        icmp.msg_type().is_ndp(),
        icmp.msg_type().to_string(),
    ));
    if let Ok(repr) = Icmpv6Repr::parse(src, dst, &icmp) {
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(src, dst, &mut Icmpv6Packet::new_unchecked(&mut buf[..]));
        assert_eq!(
            Icmpv6Repr::parse(src, dst, &Icmpv6Packet::new_unchecked(&buf[..])),
            Ok(repr)
        );
        black_box(repr.to_string());
    }
    if icmp.msg_type().is_error() && depth < 16 {
        exercise_ipv6(icmp.payload(), depth + 1);
    }
}

fn exercise_udp(udp: &UdpPacket<&[u8]>) {
    black_box((
        udp.src_port(),
        udp.dst_port(),
        udp.len(),
        udp.checksum(),
        udp.payload(),
    ));
    let repr = UdpRepr::parse(udp).unwrap();
    let mut buf = vec![0u8; repr.buffer_len() + repr.payload_len];
    repr.emit(&mut UdpPacket::new_unchecked(&mut buf[..]));
    assert_eq!(
        UdpRepr::parse(&UdpPacket::new_unchecked(&buf[..])),
        Ok(repr)
    );
    black_box(repr.to_string());
}

fn exercise_tcp(tcp: &TcpPacket<&[u8]>) {
    black_box((
        tcp.src_port(),
        tcp.dst_port(),
        tcp.seq_number(),
        tcp.ack_number(),
    ));
    black_box((tcp.header_len(), tcp.flags(), tcp.flags().to_string()));
    black_box((
        tcp.fin(),
        tcp.syn(),
        tcp.rst(),
        tcp.psh(),
        tcp.ack(),
        tcp.urg(),
        tcp.ece(),
        tcp.cwr(),
    ));
    black_box((
        tcp.window_len(),
        tcp.checksum(),
        tcp.urgent_at(),
        tcp.options(),
        tcp.payload(),
    ));
    for option in tcp.options_iter().flatten() {
        black_box((
            option.kind,
            option.data,
            option.mss(),
            option.window_scale(),
            option.timestamp(),
        ));
    }
    let repr = TcpRepr::parse(tcp).unwrap();
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut TcpPacket::new_unchecked(&mut buf[..]));
    assert_eq!(
        TcpRepr::parse(&TcpPacket::new_unchecked(&buf[..])),
        Ok(repr)
    );
    black_box(repr.to_string());
}

/// Walks an ESP packet.
pub fn exercise_esp(data: &[u8]) {
    let Ok(esp) = EspPacket::new_checked(data) else {
        return;
    };
    black_box((esp.spi(), esp.sequence_number(), esp.payload()));
    if let Ok(repr) = EspRepr::parse(&esp) {
        let mut buf = [0u8; 8];
        repr.emit(&mut EspPacket::new_unchecked(&mut buf[..]));
        assert_eq!(
            EspRepr::parse(&EspPacket::new_unchecked(&buf[..])),
            Ok(repr)
        );
        black_box(repr.to_string());
    }
}
