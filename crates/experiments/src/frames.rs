//! The frames experiments send: Ethernet/IPv4/UDP built with
//! `bricks_wire`'s `Repr`s (so checksums are the wire views' own), 802.1Q
//! tags, and Click data literals to put them in a configuration.

use bricks_wire::{
    EtherType, EthernetAddress, EthernetFrame, EthernetRepr, IpProtocol, Ipv4Addr, Ipv4Packet,
    Ipv4Repr, UdpPacket, UdpRepr,
};

/// Ethernet + IPv4 + UDP headers.
const HEADERS: usize = 14 + 20 + 8;

/// An Ethernet/IPv4/UDP frame of `size` bytes (without the FCS, as the
/// router handles it; at least 42) from `src` to `dst`, TTL 64, with valid
/// IPv4 and UDP checksums and a zero payload.
pub fn udp_frame(
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    src: Ipv4Addr,
    dst: Ipv4Addr,
    size: usize,
) -> Vec<u8> {
    let payload = size.max(HEADERS) - HEADERS;
    let udp = UdpRepr {
        src_port: 1234,
        dst_port: 5678,
        payload_len: payload,
    };
    let ip = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::UDP,
        payload_len: udp.buffer_len() + payload,
        hop_limit: 64,
        dscp_ecn: 0,
        ident: 0,
        dont_frag: true,
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
    datagram.fill_checksum_v4(src, dst);
    f
}

/// `frame` with an 802.1Q tag of VLAN `vid` (priority 0) after its MAC
/// addresses.
pub fn vlan_tagged(frame: &[u8], vid: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(frame.len() + 4);
    f.extend_from_slice(&frame[..12]);
    f.extend_from_slice(&EtherType::VLAN.0.to_be_bytes());
    f.extend_from_slice(&(vid & 0xfff).to_be_bytes());
    f.extend_from_slice(&frame[12..]);
    f
}

/// `bytes` as a Click data literal, `\<0a 1b ...>`.
pub fn click_data(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 3 + 3);
    s.push_str("\\<");
    for (i, b) in bytes.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s.push('>');
    s
}

/// `m` as `aa:bb:cc:dd:ee:ff`.
pub fn mac_text(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_frame_has_its_size_and_valid_checksums() {
        for size in [64, 1024] {
            let f = udp_frame(
                [2, 0, 0, 0, 0, 2],
                [2, 0, 0, 0, 0, 1],
                Ipv4Addr::new(10, 0, 0, 1),
                Ipv4Addr::new(1, 0, 0, 2),
                size,
            );
            assert_eq!(f.len(), size);
            let eth = EthernetFrame::new_checked(&f[..]).unwrap();
            assert_eq!(eth.ethertype(), EtherType::IPV4);
            let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
            assert!(ip.verify_checksum());
            assert_eq!(usize::from(ip.total_len()), size - 14);
            assert_eq!(ip.dst_addr(), Ipv4Addr::new(1, 0, 0, 2));
        }
    }

    #[test]
    fn vlan_tag_goes_after_the_addresses() {
        let f = udp_frame(
            [2; 6],
            [4; 6],
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(1, 0, 0, 2),
            64,
        );
        let t = vlan_tagged(&f, 0x123);
        assert_eq!(t.len(), 68);
        assert_eq!(&t[..12], &f[..12]);
        assert_eq!(&t[12..16], &[0x81, 0x00, 0x01, 0x23]);
        assert_eq!(&t[16..], &f[12..]);
    }

    #[test]
    fn click_data_is_hex() {
        assert_eq!(click_data(&[0, 0xab, 7]), "\\<00 ab 07>");
        assert_eq!(mac_text([2, 0, 0, 0, 1, 0xff]), "02:00:00:00:01:ff");
    }
}
