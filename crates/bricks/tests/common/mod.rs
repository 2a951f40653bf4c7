//! What several namespace tests share: frames built with bricks' own wire
//! views (`bricks_wire`'s `Repr`s), so that the tests send what the router
//! itself would parse and emit.

use bricks_wire::{
    EtherType, EthernetAddress, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Addr, Ipv4Packet,
    Ipv4Repr, UdpPacket, UdpRepr,
};

/// `aa:bb:cc:dd:ee:ff` as bytes.
pub fn mac_bytes(text: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (b, part) in m.iter_mut().zip(text.split(':')) {
        *b = u8::from_str_radix(part, 16).unwrap();
    }
    m
}

/// An Ethernet frame holding a UDP datagram from port 12345 to port 9 with
/// `payload`, its IPv4 and UDP checksums filled in.
pub fn udp_frame(
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    ttl: u8,
    payload: &[u8],
) -> Vec<u8> {
    let (src, dst) = (Ipv4Addr::from(src), Ipv4Addr::from(dst));
    let udp = UdpRepr {
        src_port: 12345,
        dst_port: 9,
        payload_len: payload.len(),
    };
    let ip = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::UDP,
        payload_len: udp.buffer_len() + payload.len(),
        hop_limit: ttl,
        dscp_ecn: 0,
        ident: 0x1234,
        dont_frag: false,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(src_mac),
        dst_addr: EthernetAddress(dst_mac),
        ethertype: EtherType::IPV4,
    };
    let mut f = vec![0u8; eth.buffer_len() + ip.buffer_len() + ip.payload_len];
    let mut frame = EthernetFrame::new_unchecked(&mut f[..]);
    eth.emit(&mut frame);
    let mut packet = Ipv4Packet::new_unchecked(frame.payload_mut());
    ip.emit(&mut packet);
    let mut datagram = UdpPacket::new_unchecked(packet.payload_mut());
    udp.emit(&mut datagram);
    datagram.payload_mut().copy_from_slice(payload);
    datagram.fill_checksum_v4(src, dst);
    f
}
