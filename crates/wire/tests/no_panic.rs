//! No accessor panics once `check_len` passed, whatever the bytes: the
//! fuzz target's walk, run by `cargo test` on frames built with the `Repr`s
//! and then corrupted, truncated and extended at random.

#[path = "support/exercise.rs"]
mod exercise;

use bricks_wire::*;
use proptest::prelude::*;

const MAC_A: EthernetAddress = EthernetAddress([0x02, 0x00, 0x5e, 0x10, 0x00, 0x01]);
const MAC_B: EthernetAddress = EthernetAddress([0x02, 0x00, 0x5e, 0x10, 0x00, 0x02]);
const V4_A: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const V4_B: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
const V6_A: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
const V6_B: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);

fn ethernet(ethertype: EtherType, payload: &[u8]) -> Vec<u8> {
    let repr = EthernetRepr {
        src_addr: MAC_A,
        dst_addr: MAC_B,
        ethertype,
    };
    let mut frame = vec![0u8; repr.buffer_len() + payload.len()];
    let mut view = EthernetFrame::new_unchecked(&mut frame[..]);
    repr.emit(&mut view);
    view.payload_mut().copy_from_slice(payload);
    frame
}

fn ipv4(next_header: IpProtocol, options: &[u8], payload: &[u8]) -> Vec<u8> {
    let header_len = 20 + options.len();
    let repr = Ipv4Repr {
        src_addr: V4_A,
        dst_addr: V4_B,
        next_header,
        payload_len: payload.len(),
        hop_limit: 64,
        dscp_ecn: 0,
        ident: 0x1234,
        dont_frag: true,
    };
    let mut bytes = vec![0u8; header_len + payload.len()];
    let mut view = Ipv4Packet::new_unchecked(&mut bytes[..]);
    repr.emit(&mut view);
    view.set_header_len(header_len);
    view.set_total_len((header_len + payload.len()) as u16);
    view.options_mut().copy_from_slice(options);
    view.payload_mut().copy_from_slice(payload);
    view.fill_checksum();
    bytes
}

fn ipv6(next_header: IpProtocol, payload: &[u8]) -> Vec<u8> {
    let repr = Ipv6Repr {
        src_addr: V6_A,
        dst_addr: V6_B,
        next_header,
        payload_len: payload.len(),
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0x563b1,
    };
    let mut bytes = vec![0u8; repr.buffer_len() + payload.len()];
    let mut view = Ipv6Packet::new_unchecked(&mut bytes[..]);
    repr.emit(&mut view);
    view.payload_mut().copy_from_slice(payload);
    bytes
}

fn udp_v4(payload: &[u8]) -> Vec<u8> {
    let repr = UdpRepr {
        src_port: 53000,
        dst_port: 53,
        payload_len: payload.len(),
    };
    let mut bytes = vec![0u8; repr.buffer_len() + payload.len()];
    let mut view = UdpPacket::new_unchecked(&mut bytes[..]);
    repr.emit(&mut view);
    view.payload_mut().copy_from_slice(payload);
    view.fill_checksum_v4(V4_A, V4_B);
    bytes
}

fn tcp_v4(options: &[u8]) -> Vec<u8> {
    let repr = TcpRepr {
        src_port: 52060,
        dst_port: 80,
        seq_number: 4_247_721_721,
        ack_number: 0,
        flags: TcpFlags::SYN,
        window_len: 64240,
        urgent_at: 0,
    };
    let mut bytes = vec![0u8; 20 + options.len()];
    let mut view = TcpPacket::new_unchecked(&mut bytes[..]);
    repr.emit(&mut view);
    view.set_header_len(20 + options.len());
    view.options_mut().copy_from_slice(options);
    view.fill_checksum_v4(V4_A, V4_B);
    bytes
}

fn icmpv4(repr: Icmpv4Repr) -> Vec<u8> {
    let mut bytes = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Icmpv4Packet::new_unchecked(&mut bytes[..]));
    bytes
}

fn icmpv6(repr: Icmpv6Repr) -> Vec<u8> {
    let mut bytes = vec![0u8; repr.buffer_len()];
    repr.emit(V6_A, V6_B, &mut Icmpv6Packet::new_unchecked(&mut bytes[..]));
    bytes
}

/// A frame of every kind the walk knows, each valid.
fn templates() -> Vec<Vec<u8>> {
    const SYN_OPTIONS: [u8; 20] = [
        0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0xcf, 0x18, 0xa5, 0x96, 0x00, 0x00, 0x00,
        0x00, 0x01, 0x03, 0x03, 0x0a,
    ];
    let mut rr_options = [0u8; 40];
    rr_options[..8].copy_from_slice(&[0x01, 0x07, 0x27, 0x08, 192, 0, 2, 1]);
    let mut ts_options = [0u8; 40];
    ts_options[..8].copy_from_slice(&[0x44, 0x28, 0x09, 0x00, 0x00, 0x97, 0x4a, 0x4e]);
    let dns =
        b"\x1a\x2b\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01";

    let arp = ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Request,
        source_hardware_addr: MAC_A,
        source_protocol_addr: V4_A,
        target_hardware_addr: EthernetAddress::UNSPECIFIED,
        target_protocol_addr: V4_B,
    };
    let mut arp_bytes = vec![0u8; arp.buffer_len()];
    arp.emit(&mut ArpPacket::new_unchecked(&mut arp_bytes[..]));

    let udp_packet = ipv4(IpProtocol::UDP, &[], &udp_v4(dns));
    let echo = icmpv4(Icmpv4Repr::EchoRequest {
        ident: 0x1107,
        seq_no: 1,
        data: b"0123456789abcdef",
    });
    let unreachable = icmpv4(Icmpv4Repr::DstUnreachable {
        reason: Icmpv4DstUnreachable::PortUnreachable,
        next_hop_mtu: 0,
        data: &udp_packet,
    });
    let tcp_packet = ipv4(IpProtocol::TCP, &[], &tcp_v4(&SYN_OPTIONS));

    let mut vlan = [0u8; 8];
    VlanRepr {
        pcp: 3,
        dei: false,
        vid: 100,
        ethertype: EtherType::VLAN,
    }
    .emit(&mut VlanPacket::new_unchecked(&mut vlan[..4]));
    VlanRepr {
        pcp: 0,
        dei: true,
        vid: 4094,
        ethertype: EtherType::IPV4,
    }
    .emit(&mut VlanPacket::new_unchecked(&mut vlan[4..]));
    let mut mpls = [0u8; 8];
    MplsRepr {
        label: 1000,
        tc: 0,
        bottom_of_stack: false,
        ttl: 64,
    }
    .emit(&mut MplsPacket::new_unchecked(&mut mpls[..4]));
    MplsRepr {
        label: 29,
        tc: 6,
        bottom_of_stack: true,
        ttl: 255,
    }
    .emit(&mut MplsPacket::new_unchecked(&mut mpls[4..]));
    let mut esp = vec![0u8; 40];
    EspRepr {
        spi: 0x6e,
        sequence_number: 0x13,
    }
    .emit(&mut EspPacket::new_unchecked(&mut esp[..]));

    let udp6 = {
        let mut bytes = udp_v4(dns);
        UdpPacket::new_unchecked(&mut bytes[..]).fill_checksum_v6(V6_A, V6_B);
        ipv6(IpProtocol::UDP, &bytes)
    };

    vec![
        ethernet(EtherType::ARP, &arp_bytes),
        ethernet(EtherType::IPV4, &udp_packet),
        ethernet(EtherType::IPV4, &ipv4(IpProtocol::ICMP, &rr_options, &echo)),
        ethernet(EtherType::IPV4, &ipv4(IpProtocol::ICMP, &ts_options, &echo)),
        ethernet(EtherType::IPV4, &tcp_packet),
        ethernet(
            EtherType::QINQ,
            &[&vlan[..], &ipv4(IpProtocol::ICMP, &[], &unreachable)].concat(),
        ),
        ethernet(EtherType::MPLS_UNICAST, &[&mpls[..], &tcp_packet].concat()),
        ethernet(EtherType::IPV4, &ipv4(IpProtocol::ESP, &[], &esp)),
        ethernet(
            EtherType::IPV6,
            &ipv6(
                IpProtocol::ICMPV6,
                &icmpv6(Icmpv6Repr::EchoRequest {
                    ident: 0x110b,
                    seq_no: 1,
                    data: b"ping",
                }),
            ),
        ),
        ethernet(
            EtherType::IPV6,
            &ipv6(
                IpProtocol::ICMPV6,
                &icmpv6(Icmpv6Repr::PktTooBig {
                    mtu: 1280,
                    data: &udp6,
                }),
            ),
        ),
        ethernet(EtherType::IPV6, &udp6),
        ethernet(EtherType::IPV6, &ipv6(IpProtocol::IPV4, &tcp_packet)),
    ]
}

#[test]
fn templates_are_valid_and_walk_cleanly() {
    for frame in templates() {
        let eth = EthernetFrame::new_checked(&frame[..]).unwrap();
        match eth.ethertype() {
            EtherType::IPV4 => {
                let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
                assert!(ip.verify_checksum());
                assert!(ip.options_iter().all(|o| o.is_ok()));
                Ipv4Repr::parse(&ip).unwrap();
            }
            EtherType::IPV6 => {
                Ipv6Repr::parse(&Ipv6Packet::new_checked(eth.payload()).unwrap()).unwrap();
            }
            _ => {}
        }
        exercise::exercise_frame(&frame);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn corrupted_frames_never_panic(
        template in 0usize..12,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        truncate_to in any::<usize>(),
        tail in proptest::collection::vec(any::<u8>(), 0..24),
    ) {
        let mut frame = templates().swap_remove(template);
        for (at, byte) in flips {
            let len = frame.len();
            frame[at % len] = byte;
        }
        frame.truncate(truncate_to % (frame.len() + 1));
        exercise::exercise_frame(&frame);
        frame.extend_from_slice(&tail);
        exercise::exercise_frame(&frame);
    }

    #[test]
    fn random_bytes_never_panic(
        ethertype in prop_oneof![
            Just(EtherType::IPV4), Just(EtherType::IPV6), Just(EtherType::ARP),
            Just(EtherType::VLAN), Just(EtherType::MPLS_UNICAST), any::<u16>().prop_map(EtherType),
        ],
        payload in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        exercise::exercise_frame(&ethernet(ethertype, &payload));
        // Give the IP headers a plausible start so the walk gets deeper.
        let mut payload = payload;
        if payload.len() >= 4 {
            payload[0] = 0x45;
            payload[2] = 0;
            payload[3] = payload.len().min(255) as u8;
        }
        exercise::exercise_frame(&ethernet(EtherType::IPV4, &payload));
        exercise::exercise_ipv4(&payload, 0);
        exercise::exercise_ipv6(&payload, 0);
        exercise::exercise_arp(&payload);
        exercise::exercise_mpls(&payload, 0);
        exercise::exercise_esp(&payload);
        exercise::exercise_icmpv4(&payload, 0);
        exercise::exercise_icmpv6(&payload, Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST, 0);
    }
}
