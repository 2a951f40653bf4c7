//! The Internet checksum against a plain RFC 1071 loop, and the RFC 1624
//! incremental updates against recomputation, on arbitrary data: the fast
//! summation must agree at every length and alignment, and patching a
//! checksum for a changed field must give what summing again gives.
#![no_main]

use bricks_wire::checksum;
use bricks_wire::ipv4::Ipv4Packet;
use bricks_wire::IpProtocol;
use libfuzzer_sys::fuzz_target;
use std::net::{Ipv4Addr, Ipv6Addr};

/// RFC 1071 section 4.1, one 16-bit word at a time.
fn reference(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        sum += u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 9 {
        return;
    }
    let (control, data) = input.split_at(9);
    let index = usize::from(u16::from_be_bytes([control[0], control[1]]));
    let new_word = u16::from_be_bytes([control[2], control[3]]);
    let new_value = u32::from_be_bytes([control[4], control[5], control[6], control[7]]);
    let skew = usize::from(control[8] & 7).min(data.len());

    // Any start alignment, any length.
    let data = &data[skew..];
    assert_eq!(checksum::data(data), reference(data));

    // The pseudo-headers are the sums of their RFC layouts.
    if data.len() >= 32 {
        let src = Ipv4Addr::new(data[0], data[1], data[2], data[3]);
        let dst = Ipv4Addr::new(data[4], data[5], data[6], data[7]);
        let mut pseudo = [0u8; 12];
        pseudo[..8].copy_from_slice(&data[..8]);
        pseudo[9] = data[8];
        pseudo[10..12].copy_from_slice(&new_word.to_be_bytes());
        assert_eq!(
            checksum::pseudo_header_v4(src, dst, IpProtocol(data[8]), new_word),
            reference(&pseudo)
        );
        let src6 = Ipv6Addr::from(<[u8; 16]>::try_from(&data[..16]).unwrap());
        let dst6 = Ipv6Addr::from(<[u8; 16]>::try_from(&data[16..32]).unwrap());
        let mut pseudo6 = [0u8; 40];
        pseudo6[..32].copy_from_slice(&data[..32]);
        pseudo6[32..36].copy_from_slice(&new_value.to_be_bytes());
        pseudo6[39] = control[8];
        assert_eq!(
            checksum::pseudo_header_v6(src6, dst6, IpProtocol(control[8]), new_value),
            reference(&pseudo6)
        );
    }

    let mut data = data.to_vec();
    if data.len() % 2 == 1 {
        data.push(0);
    }
    if data.len() < 4 {
        return;
    }
    let nonzero_after = |d: &[u8]| d.iter().any(|&b| b != 0);

    // One 16-bit word changes.
    let at = (index % (data.len() / 2)) * 2;
    let old_checksum = !checksum::data(&data);
    let old_word = u16::from_be_bytes([data[at], data[at + 1]]);
    data[at..at + 2].copy_from_slice(&new_word.to_be_bytes());
    let updated = checksum::update(old_checksum, old_word, new_word);
    let recomputed = !checksum::data(&data);
    if nonzero_after(&data) {
        assert_eq!(updated, recomputed);
    } else {
        // All-zero data: +0 and -0 are the same checksum.
        assert!(updated == 0 || updated == 0xffff);
    }

    // One 32-bit field changes (an address, a sequence number).
    let at = (index % (data.len() / 2 - 1)) * 2;
    let old_checksum = recomputed;
    let old_value = u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]);
    data[at..at + 4].copy_from_slice(&new_value.to_be_bytes());
    let updated = checksum::update32(old_checksum, old_value, new_value);
    if nonzero_after(&data) {
        assert_eq!(updated, !checksum::data(&data));
    }

    // The TTL rewrite a router does on every forwarded packet.
    if data.len() >= 20 {
        let mut header = data[..20].to_vec();
        header[0] = 0x45;
        let mut ip = Ipv4Packet::new_unchecked(&mut header[..]);
        ip.fill_checksum();
        ip.set_hop_limit_update_checksum(control[2]);
        assert!(ip.verify_checksum());
        let incremental = ip.checksum();
        ip.fill_checksum();
        assert_eq!(incremental, ip.checksum());
    }
});
