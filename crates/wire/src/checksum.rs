//! The Internet checksum: RFC 1071 computation, RFC 1624 incremental update.
//!
//! The checksum of IPv4, ICMP, UDP and TCP is the ones' complement of the
//! ones' complement sum of the data taken as 16-bit big-endian words, an
//! odd final byte padded with zero (RFC 1071 section 1). [`data`] returns the
//! sum *before* the final complement, so that sums of several pieces (a
//! pseudo-header and a segment) can be [`combine`]d; a header whose checksum
//! field is filled in correctly sums to `0xffff`.
//!
//! A router that rewrites one field (TTL, an address) should not re-sum the
//! header: [`update`] and [`update32`] apply RFC 1624 eqn. 3,
//! `HC' = ~(~HC + ~m + m')`, which, unlike RFC 1141's eqn. 2, never yields
//! `0xffff` (-0) where a recomputation would give `0x0000`.

use crate::ip::IpProtocol;
use core::net::{Ipv4Addr, Ipv6Addr};

/// Folds a wide ones' complement sum to 16 bits (end-around carry).
#[inline(always)]
const fn fold(mut sum: u64) -> u16 {
    sum = (sum & 0xffff_ffff) + (sum >> 32);
    sum = (sum & 0xffff_ffff) + (sum >> 32);
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    sum as u16
}

/// The ones' complement sum of `data` as 16-bit big-endian words, not
/// complemented (RFC 1071).
///
/// Sums 32-bit words in native byte order into a 64-bit accumulator and
/// swaps once at the end: the sum is byte-order independent (RFC 1071
/// section 2(B)), and a packet would need 2^32 words to overflow the
/// accumulator.
#[inline]
pub fn data(data: &[u8]) -> u16 {
    // An IPv4 header without options is by far the most common input:
    // five words, unrolled, no loop and no tail.
    if let Ok(h) = <&[u8; 20]>::try_from(data) {
        return header20(h);
    }
    let mut words = data.chunks_exact(4);
    let mut sum: u64 = 0;
    for word in &mut words {
        sum += u64::from(u32::from_ne_bytes([word[0], word[1], word[2], word[3]]));
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        // Zero padding on the right keeps every byte at its 16-bit position.
        let mut last = [0u8; 4];
        last[..tail.len()].copy_from_slice(tail);
        sum += u64::from(u32::from_ne_bytes(last));
    }
    // The folded sum holds memory-order words; reading it big-endian turns
    // it into the value of the big-endian sum.
    u16::from_be(fold(sum))
}

/// [`data`] for exactly 20 bytes (an IPv4 header without options).
#[inline(always)]
pub fn header20(h: &[u8; 20]) -> u16 {
    let w = |i: usize| u64::from(u32::from_ne_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
    u16::from_be(fold(w(0) + w(4) + w(8) + w(12) + w(16)))
}

/// Whether the 20-byte header `h` sums to `0xffff`, that is whether its
/// checksum is right: `header20(h) == 0xffff` without the fold.
///
/// The end-around carry keeps a sum's value modulo `0xffff` (`2^16` and
/// `2^32` are 1 modulo `0xffff`), and the folded sum of a nonzero `s` is
/// never 0, so the folded sum is `0xffff` exactly when `s` is a nonzero
/// multiple of `0xffff`. The byte order does not matter: swapping the
/// bytes of a 16-bit word multiplies it by 256 modulo `0xffff`, which is
/// invertible.
///
/// Divisibility by the odd `0xffff` is tested with a multiply and a
/// compare (Granlund and Montgomery, "Division by invariant integers using
/// multiplication", 1994, section 9): `s` is a multiple exactly when `s`
/// times the inverse of `0xffff` modulo `2^64` is at most
/// `(2^64 - 1) / 0xffff`, where the fold takes a dozen instructions.
#[inline(always)]
pub fn header20_ok(h: &[u8; 20]) -> bool {
    /// The inverse of `0xffff` modulo `2^64`.
    const INVERSE: u64 = 0xfffe_fffe_fffe_ffff;
    const _: () = assert!(INVERSE.wrapping_mul(0xffff) == 1);
    let w = |i: usize| u64::from(u32::from_ne_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]));
    let s = w(0) + w(4) + w(8) + w(12) + w(16);
    (s.wrapping_mul(INVERSE) <= u64::MAX / 0xffff) & (s != 0)
}

/// The ones' complement sum of several partial sums.
#[inline]
pub fn combine(sums: &[u16]) -> u16 {
    let mut sum: u64 = 0;
    for &s in sums {
        sum += u64::from(s);
    }
    fold(sum)
}

/// The ones' complement sum of the IPv4 pseudo-header that UDP (RFC 768)
/// and TCP (RFC 9293 section 3.1) add to their checksum: source, destination,
/// zero, protocol, and the upper-layer length.
#[inline]
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: IpProtocol, length: u16) -> u16 {
    let src = u32::from(src);
    let dst = u32::from(dst);
    let sum = u64::from(src >> 16)
        + u64::from(src & 0xffff)
        + u64::from(dst >> 16)
        + u64::from(dst & 0xffff)
        + u64::from(protocol.0)
        + u64::from(length);
    fold(sum)
}

/// The ones' complement sum of the IPv6 pseudo-header (RFC 8200 section
/// 8.1): source, destination, 32-bit upper-layer length, next header.
#[inline]
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, next_header: IpProtocol, length: u32) -> u16 {
    let mut sum: u64 = 0;
    for word in src.segments().iter().chain(dst.segments().iter()) {
        sum += u64::from(*word);
    }
    sum += u64::from(length >> 16) + u64::from(length & 0xffff) + u64::from(next_header.0);
    fold(sum)
}

/// The new checksum after one 16-bit word covered by `old_checksum` changes
/// from `old_word` to `new_word` (RFC 1624 eqn. 3).
///
/// For UDP, where a zero checksum means "none", the caller must keep a zero
/// checksum zero and turn a computed `0x0000` into `0xffff`.
///
/// The words may be taken in either byte order, as long as all three are
/// and the result is written back in the same one (`from_ne_bytes` and
/// `to_ne_bytes` save two swaps): the ones' complement sum commutes with
/// swapping the bytes of every word (RFC 1071 section 2(B)).
#[inline]
pub fn update(old_checksum: u16, old_word: u16, new_word: u16) -> u16 {
    let sum = u64::from(!old_checksum) + u64::from(!old_word) + u64::from(new_word);
    !fold(sum)
}

/// Fixes a checksum that [`update`] left as `0x0000`: eqn. 3 gives that
/// (one's complement -0) when every covered byte is zero, where the
/// checksum must be `0xffff` (+0, RFC 1624 section 3). `data` is what the
/// checksum covers, its checksum field included; it is read only when the
/// checksum is zero (Click's `click_update_zero_in_cksum`).
#[inline]
pub fn fix_zero(checksum: u16, data: &[u8]) -> u16 {
    if checksum == 0 && data.iter().all(|&b| b == 0) {
        0xffff
    } else {
        checksum
    }
}

/// [`update`] for a 32-bit field, such as an IPv4 address or a TCP sequence
/// number, aligned on a 16-bit boundary of the checksummed data.
#[inline]
pub fn update32(old_checksum: u16, old_value: u32, new_value: u32) -> u16 {
    let sum = u64::from(!old_checksum)
        + u64::from(!(old_value >> 16) & 0xffff)
        + u64::from(!old_value & 0xffff)
        + u64::from(new_value >> 16)
        + u64::from(new_value & 0xffff);
    !fold(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// `update` on byte-swapped words gives the byte-swapped result,
        /// which is what lets a caller skip the swaps.
        #[test]
        fn update_commutes_with_swapping_bytes(hc in 0u16.., old in 0u16.., new in 0u16..) {
            proptest::prop_assert_eq!(
                update(hc.swap_bytes(), old.swap_bytes(), new.swap_bytes()).swap_bytes(),
                update(hc, old, new)
            );
        }
    }

    #[test]
    fn header20_ok_is_header20_summing_to_ffff() {
        // A real header (UDP from 10.0.0.1 to 10.0.0.2, CheckIPHeader's
        // manual example), its checksum broken, all zeros, all ones.
        let good: [u8; 20] = [
            0x45, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0x66, 0xd7, 0x0a, 0x00,
            0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
        ];
        assert_eq!(header20(&good), 0xffff);
        assert!(header20_ok(&good));
        let mut bad = good;
        bad[11] ^= 1;
        assert!(!header20_ok(&bad));
        assert!(!header20_ok(&[0; 20]));
        assert!(header20_ok(&[0xff; 20]));
        // Every word `0xffff` but one `0x0000`: ones' complement +0 and -0.
        let mut z = [0xff; 20];
        z[10] = 0;
        z[11] = 0;
        assert_eq!(header20_ok(&z), header20(&z) == 0xffff);
    }

    proptest::proptest! {
        #[test]
        fn header20_ok_agrees_with_header20(mut h in proptest::array::uniform20(proptest::prelude::any::<u8>()), fix in proptest::prelude::any::<bool>()) {
            if fix {
                // Half the headers made right, so both answers are tried.
                h[10] = 0;
                h[11] = 0;
                let sum = !header20(&h);
                h[10..12].copy_from_slice(&sum.to_be_bytes());
            }
            proptest::prop_assert_eq!(header20_ok(&h), header20(&h) == 0xffff);
        }
    }

    #[test]
    fn fix_zero_turns_minus_zero_into_plus_zero_only_for_zero_data() {
        // An echo request with nothing but its type: 0x0800, sum 0xf7ff.
        // Made a reply (type 0), eqn. 3 gives 0x0000.
        let sum = update(0xf7ff, 0x0800, 0x0000);
        assert_eq!(sum, 0x0000);
        assert_eq!(fix_zero(sum, &[0; 8]), 0xffff);
        assert_eq!(fix_zero(0, &[0, 0, 0, 0, 0, 1]), 0);
        assert_eq!(fix_zero(0x1234, &[0; 8]), 0x1234);
    }

    /// The obvious RFC 1071 loop, as a reference for the fast one.
    fn reference(bytes: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for pair in bytes.chunks(2) {
            let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
            sum += u32::from(word);
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum as u16
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: the bytes 00 01 f2 03 f4 f5 f6 f7 sum to ddf2.
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(data(&bytes), 0xddf2);
        assert_eq!(reference(&bytes), 0xddf2);
    }

    #[test]
    fn real_ipv4_header() {
        // 192.168.0.1 > 192.168.0.199 UDP, checksum b861.
        let mut header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(data(&header), 0xffff);
        header[10] = 0;
        header[11] = 0;
        assert_eq!(!data(&header), 0xb861);
    }

    #[test]
    fn odd_lengths_and_all_alignments_match_reference() {
        let bytes: Vec<u8> = (0..300u32).map(|i| (i * 151 + 7) as u8).collect();
        for start in 0..8 {
            for end in start..bytes.len() {
                assert_eq!(data(&bytes[start..end]), reference(&bytes[start..end]));
            }
        }
        assert_eq!(data(&[]), 0);
        assert_eq!(data(&[0xab]), 0xab00);
        assert_eq!(data(&[0xff; 64]), 0xffff);
    }

    #[test]
    fn combine_and_pseudo_headers() {
        assert_eq!(combine(&[0xffff, 0x0001]), 0x0001);
        assert_eq!(combine(&[0x8000, 0x8000]), 0x0001);
        assert_eq!(combine(&[]), 0);

        let src = Ipv4Addr::new(192, 0, 2, 1);
        let dst = Ipv4Addr::new(192, 0, 2, 2);
        let mut pseudo = [0u8; 12];
        pseudo[0..4].copy_from_slice(&src.octets());
        pseudo[4..8].copy_from_slice(&dst.octets());
        pseudo[9] = 17;
        pseudo[10..12].copy_from_slice(&37u16.to_be_bytes());
        assert_eq!(
            pseudo_header_v4(src, dst, IpProtocol::UDP, 37),
            data(&pseudo)
        );

        let src6: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let dst6: Ipv6Addr = "fe80::21f:caff:feb3:7640".parse().unwrap();
        let mut pseudo6 = [0u8; 40];
        pseudo6[0..16].copy_from_slice(&src6.octets());
        pseudo6[16..32].copy_from_slice(&dst6.octets());
        pseudo6[32..36].copy_from_slice(&0x0001_2345u32.to_be_bytes());
        pseudo6[39] = 58;
        assert_eq!(
            pseudo_header_v6(src6, dst6, IpProtocol::ICMPV6, 0x0001_2345),
            data(&pseudo6)
        );
    }

    #[test]
    fn rfc1624_example() {
        // RFC 1624 section 3: m = 0x5555 becomes m' = 0x3285 in a header
        // whose other words sum to 0xcd7a. Recomputing gives 0x0000; eqn. 2
        // would give 0xffff; eqn. 3 must agree with recomputation.
        let hc = !combine(&[0xcd7a, 0x5555]);
        assert_eq!(hc, 0xdd2f);
        assert_eq!(update(hc, 0x5555, 0x3285), 0x0000);
        assert_eq!(update(hc, 0x5555, 0x3285), !combine(&[0xcd7a, 0x3285]));
    }

    #[test]
    fn update_matches_recompute_on_real_header() {
        let mut header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        // Decrement the TTL, the high byte of word 4.
        let old_word = u16::from_be_bytes([header[8], header[9]]);
        header[8] -= 1;
        let new_word = u16::from_be_bytes([header[8], header[9]]);
        let updated = update(0xb861, old_word, new_word);
        header[10..12].copy_from_slice(&updated.to_be_bytes());
        assert_eq!(data(&header), 0xffff);

        // Rewrite the destination address (NAT).
        let old_dst = u32::from_be_bytes([header[16], header[17], header[18], header[19]]);
        let new_dst = u32::from(Ipv4Addr::new(203, 0, 113, 9));
        header[16..20].copy_from_slice(&new_dst.to_be_bytes());
        let updated = update32(updated, old_dst, new_dst);
        header[10..12].copy_from_slice(&updated.to_be_bytes());
        assert_eq!(data(&header), 0xffff);
    }

    #[test]
    fn update_exhaustive_on_one_word() {
        // Every change of one word of a small header agrees with
        // recomputation, including the sums that land on 0x0000/0xffff.
        let rest: u16 = 0x1234;
        for old in (0..=0xffffu32).step_by(97) {
            for new in (0..=0xffffu32).step_by(89) {
                let hc = !combine(&[rest, old as u16]);
                let expected = !combine(&[rest, new as u16]);
                let got = update(hc, old as u16, new as u16);
                // Both 0x0000 and 0xffff are valid encodings of zero only if
                // recomputation would also produce them; eqn. 3 matches it.
                assert_eq!(got, expected, "old {old:#x} new {new:#x}");
            }
        }
    }
}
