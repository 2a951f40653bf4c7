//! Every `Repr` emits bytes that parse back to itself, for any field
//! values; incremental checksum updates agree with recomputation.

use bricks_wire::*;
use proptest::prelude::*;

fn ethernet_address() -> impl Strategy<Value = EthernetAddress> {
    any::<[u8; 6]>().prop_map(EthernetAddress)
}

fn ipv4_addr() -> impl Strategy<Value = Ipv4Addr> {
    any::<u32>().prop_map(Ipv4Addr::from)
}

fn ipv6_addr() -> impl Strategy<Value = Ipv6Addr> {
    any::<u128>().prop_map(Ipv6Addr::from)
}

proptest! {
    #[test]
    fn ethernet(src in ethernet_address(), dst in ethernet_address(), ethertype in any::<u16>()) {
        let repr = EthernetRepr { src_addr: src, dst_addr: dst, ethertype: EtherType(ethertype) };
        let mut buf = [0u8; 14];
        repr.emit(&mut EthernetFrame::new_unchecked(&mut buf[..]));
        prop_assert_eq!(EthernetRepr::parse(&EthernetFrame::new_unchecked(&buf[..])), Ok(repr));
    }

    #[test]
    fn vlan(pcp in 0u8..8, dei in any::<bool>(), vid in 0u16..4096, ethertype in any::<u16>()) {
        let repr = VlanRepr { pcp, dei, vid, ethertype: EtherType(ethertype) };
        let mut buf = [0u8; 4];
        repr.emit(&mut VlanPacket::new_unchecked(&mut buf[..]));
        prop_assert_eq!(VlanRepr::parse(&VlanPacket::new_unchecked(&buf[..])), Ok(repr));
    }

    #[test]
    fn mpls(label in 0u32..=mpls::LABEL_MAX, tc in 0u8..8, bos in any::<bool>(), ttl in any::<u8>()) {
        let repr = MplsRepr { label, tc, bottom_of_stack: bos, ttl };
        let mut buf = [0u8; 4];
        repr.emit(&mut MplsPacket::new_unchecked(&mut buf[..]));
        prop_assert_eq!(MplsRepr::parse(&MplsPacket::new_unchecked(&buf[..])), Ok(repr));
    }

    #[test]
    fn arp(
        op in any::<u16>(),
        sha in ethernet_address(),
        spa in ipv4_addr(),
        tha in ethernet_address(),
        tpa in ipv4_addr(),
    ) {
        let repr = ArpRepr::EthernetIpv4 {
            operation: ArpOperation::from(op),
            source_hardware_addr: sha,
            source_protocol_addr: spa,
            target_hardware_addr: tha,
            target_protocol_addr: tpa,
        };
        let mut buf = [0u8; 28];
        repr.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
        prop_assert_eq!(ArpRepr::parse(&ArpPacket::new_unchecked(&buf[..])), Ok(repr));
    }

    #[test]
    fn ipv4(
        src in ipv4_addr(),
        dst in ipv4_addr(),
        protocol in any::<u8>(),
        payload_len in 0usize..2000,
        hop_limit in any::<u8>(),
        dscp_ecn in any::<u8>(),
        ident in any::<u16>(),
        dont_frag in any::<bool>(),
    ) {
        let repr = Ipv4Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol(protocol),
            payload_len,
            hop_limit,
            dscp_ecn,
            ident,
            dont_frag,
        };
        let mut buf = vec![0u8; repr.buffer_len() + payload_len];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
        let packet = Ipv4Packet::new_checked(&buf[..]).unwrap();
        prop_assert!(packet.verify_checksum());
        prop_assert_eq!(Ipv4Repr::parse(&packet), Ok(repr));
    }

    #[test]
    fn ipv6(
        src in ipv6_addr(),
        dst in ipv6_addr(),
        next_header in any::<u8>(),
        payload_len in 0usize..2000,
        hop_limit in any::<u8>(),
        traffic_class in any::<u8>(),
        flow_label in 0u32..(1 << 20),
    ) {
        let repr = Ipv6Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: IpProtocol(next_header),
            payload_len,
            hop_limit,
            traffic_class,
            flow_label,
        };
        let mut buf = vec![0u8; repr.buffer_len() + payload_len];
        repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]));
        prop_assert_eq!(Ipv6Repr::parse(&Ipv6Packet::new_unchecked(&buf[..])), Ok(repr));
    }

    #[test]
    fn udp(
        src_port in any::<u16>(),
        dst_port in any::<u16>(),
        payload in proptest::collection::vec(any::<u8>(), 0..300),
        src in ipv4_addr(),
        dst in ipv4_addr(),
        src6 in ipv6_addr(),
        dst6 in ipv6_addr(),
    ) {
        let repr = UdpRepr { src_port, dst_port, payload_len: payload.len() };
        let mut buf = vec![0u8; repr.buffer_len() + payload.len()];
        let mut view = UdpPacket::new_unchecked(&mut buf[..]);
        repr.emit(&mut view);
        view.payload_mut().copy_from_slice(&payload);
        view.fill_checksum_v4(src, dst);
        prop_assert!(view.checksum() != 0);
        prop_assert!(view.verify_checksum_v4(src, dst));
        view.fill_checksum_v6(src6, dst6);
        prop_assert!(view.verify_checksum_v6(src6, dst6));
        prop_assert_eq!(UdpRepr::parse(&UdpPacket::new_unchecked(&buf[..])), Ok(repr));
    }

    #[test]
    fn tcp(
        src_port in any::<u16>(),
        dst_port in any::<u16>(),
        seq_number in any::<u32>(),
        ack_number in any::<u32>(),
        flags in any::<u8>(),
        window_len in any::<u16>(),
        urgent_at in any::<u16>(),
        payload in proptest::collection::vec(any::<u8>(), 0..300),
        src in ipv4_addr(),
        dst in ipv4_addr(),
    ) {
        let repr = TcpRepr {
            src_port, dst_port, seq_number, ack_number,
            flags: TcpFlags(flags), window_len, urgent_at,
        };
        let mut buf = vec![0u8; repr.buffer_len() + payload.len()];
        let mut view = TcpPacket::new_unchecked(&mut buf[..]);
        repr.emit(&mut view);
        view.payload_mut().copy_from_slice(&payload);
        view.fill_checksum_v4(src, dst);
        prop_assert!(view.verify_checksum_v4(src, dst));
        let packet = TcpPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(packet.payload(), &payload[..]);
        prop_assert_eq!(TcpRepr::parse(&packet), Ok(repr));
    }

    #[test]
    fn icmpv4(
        kind in 0u8..6,
        a in any::<u16>(),
        b in any::<u16>(),
        code in any::<u8>(),
        gateway in ipv4_addr(),
        data in proptest::collection::vec(any::<u8>(), 0..100),
    ) {
        let repr = match kind {
            0 => Icmpv4Repr::EchoRequest { ident: a, seq_no: b, data: &data },
            1 => Icmpv4Repr::EchoReply { ident: a, seq_no: b, data: &data },
            2 => Icmpv4Repr::DstUnreachable { reason: code.into(), next_hop_mtu: a, data: &data },
            3 => Icmpv4Repr::TimeExceeded { reason: code.into(), data: &data },
            4 => Icmpv4Repr::ParamProblem { reason: code.into(), pointer: a as u8, data: &data },
            _ => Icmpv4Repr::Redirect { reason: code.into(), gateway, data: &data },
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]));
        prop_assert_eq!(Icmpv4Repr::parse(&Icmpv4Packet::new_unchecked(&buf[..])), Ok(repr));
    }

    #[test]
    fn icmpv6(
        kind in 0u8..6,
        a in any::<u16>(),
        b in any::<u16>(),
        word in any::<u32>(),
        code in any::<u8>(),
        src in ipv6_addr(),
        dst in ipv6_addr(),
        data in proptest::collection::vec(any::<u8>(), 0..100),
    ) {
        let repr = match kind {
            0 => Icmpv6Repr::EchoRequest { ident: a, seq_no: b, data: &data },
            1 => Icmpv6Repr::EchoReply { ident: a, seq_no: b, data: &data },
            2 => Icmpv6Repr::DstUnreachable { reason: code.into(), data: &data },
            3 => Icmpv6Repr::PktTooBig { mtu: word, data: &data },
            4 => Icmpv6Repr::TimeExceeded { reason: code.into(), data: &data },
            _ => Icmpv6Repr::ParamProblem { reason: code.into(), pointer: word, data: &data },
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(src, dst, &mut Icmpv6Packet::new_unchecked(&mut buf[..]));
        prop_assert_eq!(Icmpv6Repr::parse(src, dst, &Icmpv6Packet::new_unchecked(&buf[..])), Ok(repr));
    }

    #[test]
    fn esp(spi in 1u32.., sequence_number in any::<u32>()) {
        let repr = EspRepr { spi, sequence_number };
        let mut buf = [0u8; 8];
        repr.emit(&mut EspPacket::new_unchecked(&mut buf[..]));
        prop_assert_eq!(EspRepr::parse(&EspPacket::new_unchecked(&buf[..])), Ok(repr));
    }

    #[test]
    fn cidr_text(addr in ipv4_addr(), len in 0u8..=32, addr6 in ipv6_addr(), len6 in 0u8..=128) {
        let cidr = Ipv4Cidr::new(addr, len);
        prop_assert_eq!(cidr.to_string().parse::<Ipv4Cidr>(), Ok(cidr));
        prop_assert_eq!(
            format!("{}/{}", addr, cidr.netmask()).parse::<Ipv4Cidr>(),
            Ok(cidr)
        );
        prop_assert!(cidr.contains_addr(&addr));
        prop_assert!(cidr.network().contains_subnet(&cidr));
        let cidr6 = Ipv6Cidr::new(addr6, len6);
        prop_assert_eq!(cidr6.to_string().parse::<Ipv6Cidr>(), Ok(cidr6));
        prop_assert!(cidr6.contains_addr(&addr6));
    }

    #[test]
    fn ethernet_address_text(addr in ethernet_address(), dash in any::<bool>()) {
        let text = addr.to_string();
        let text = if dash { text.replace(':', "-") } else { text };
        prop_assert_eq!(text.parse::<EthernetAddress>(), Ok(addr));
    }

    /// RFC 1624: patching the checksum for one changed 16-bit word gives
    /// what summing the changed data gives, including around 0x0000/0xffff.
    #[test]
    fn incremental_update_matches_recompute(
        mut data in proptest::collection::vec(any::<u8>(), 2..128),
        word_index in any::<usize>(),
        new_word in any::<u16>(),
    ) {
        if data.len() % 2 == 1 {
            data.push(0);
        }
        let at = (word_index % (data.len() / 2)) * 2;
        let old_checksum = !checksum::data(&data);
        let old_word = u16::from_be_bytes([data[at], data[at + 1]]);
        data[at..at + 2].copy_from_slice(&new_word.to_be_bytes());
        let updated = checksum::update(old_checksum, old_word, new_word);
        let recomputed = !checksum::data(&data);
        // Both encodings of zero are equal in ones' complement; eqn. 3 must
        // produce the same encoding as recomputation unless the data is all
        // zero words (where recomputation alone yields 0xffff).
        if data.iter().any(|&b| b != 0) {
            prop_assert_eq!(updated, recomputed);
        } else {
            prop_assert!(updated == 0xffff || updated == 0x0000);
        }
    }

    #[test]
    fn incremental_update32_matches_recompute(
        mut data in proptest::collection::vec(any::<u8>(), 4..128),
        word_index in any::<usize>(),
        new_value in any::<u32>(),
    ) {
        while data.len() % 2 == 1 {
            data.push(0);
        }
        let at = (word_index % (data.len() / 2 - 1)) * 2;
        let old_checksum = !checksum::data(&data);
        let old_value = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
        data[at..at + 4].copy_from_slice(&new_value.to_be_bytes());
        let updated = checksum::update32(old_checksum, old_value, new_value);
        if data.iter().any(|&b| b != 0) {
            prop_assert_eq!(updated, !checksum::data(&data));
        }
    }
}
