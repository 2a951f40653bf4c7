//! ESP in tunnel mode on a packet buffer, in place (RFC 4303 sections 3.3
//! and 3.4; RFC 4106 for AES-GCM, RFC 3602 and 2404 for AES-CBC with
//! HMAC-SHA1-96).
//!
//! Encapsulation turns an IPv4 packet into
//!
//! ```text
//! outer IPv4 (20) | SPI (4) | seq (4) | IV (8 or 16) | inner packet | padding | pad len | next header 4 | ICV (16 or 12)
//!                   '---------------- authenticated -----------------------------------------------'
//!                                              '---------------- encrypted -------------------------'
//! ```
//!
//! using the packet's headroom and tailroom: nothing is copied, the inner
//! packet is encrypted where it lies. Decapsulation checks, decrypts and
//! strips in place in the same way.
//!
//! IVs: for GCM the 8-byte explicit IV is the 64-bit sequence number, which
//! is never reused within an SA (RFC 4106 section 3.1 asks only for
//! uniqueness; [`Sa::next_seq`] guarantees it across workers); for CBC it is
//! the sequence number encrypted with the SA's key (unpredictable, as RFC
//! 3602 section 2.3 requires).

use crate::sa::{HmacSha1, Sa, Transform};
use bricks_packet::Packet;
use bricks_wire::checksum;
use cbc::cipher::{block_padding::NoPadding, BlockDecryptMut, BlockEncryptMut, InnerIvInit};
use hmac::Mac;
use ring::aead::{Aad, Nonce};

/// IP protocol number of ESP.
pub const PROTO_ESP: u8 = 50;
/// Next header value of an IPv4 inner packet.
pub const NEXT_IPV4: u8 = 4;
/// Next header of a dummy packet (RFC 4303 section 2.6).
pub const NEXT_NONE: u8 = 59;
/// Outer TTL.
pub const OUTER_TTL: u8 = 64;

/// Why a packet could not be encapsulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncapError {
    /// Not a whole IPv4 packet.
    NotIpv4,
    /// The buffer has no room for the headers or the trailer.
    NoRoom,
}

/// Why an ESP packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecapError {
    /// Shorter than its headers say, or than ESP's minimum.
    Truncated,
    /// Not IPv4 carrying ESP.
    NotEsp,
    /// A fragment: the outer packet must be reassembled first.
    Fragment,
    /// No SA has this SPI and destination.
    UnknownSpi,
    /// The sequence number was seen already.
    Replayed,
    /// The sequence number is left of the window.
    TooOld,
    /// The ICV did not verify.
    AuthFailed,
    /// Ciphertext not a multiple of the cipher's block.
    BadLength,
    /// Padding longer than the payload, or not 1, 2, 3, ...
    BadPadding,
    /// Next header neither IPv4 nor "no next header".
    NextHeader,
    /// A dummy packet (next header 59), dropped as RFC 4303 says.
    Dummy,
    /// The SA's hard lifetime has passed.
    Expired,
    /// The inner packet is not a whole IPv4 packet.
    BadInner,
}

/// The bytes ESP adds to an inner packet of `len` bytes with `sa`.
pub fn overhead(sa: &Sa, len: usize) -> usize {
    let t = &sa.transform;
    let padded = round_up(len + 2, t.align());
    20 + 8 + t.iv_len() + padded - len + t.icv_len()
}

/// `n` rounded up to a multiple of `align`, a power of two (a mask, not
/// the division `next_multiple_of` compiles to when `align` is not known).
#[inline]
fn round_up(n: usize, align: usize) -> usize {
    debug_assert!(align.is_power_of_two());
    (n + align - 1) & !(align - 1)
}

/// The part of the frame from the network header on, with anything in
/// front (an Ethernet header) dropped.
#[inline]
fn to_network_header(p: &mut Packet) {
    if let Some(off) = p.network_header_offset() {
        p.pull_front(off);
    }
}

/// Total length of the IPv4 packet at the start of `p`, after trimming
/// link-layer padding; `None` if it is not a whole IPv4 packet.
#[inline]
fn ipv4_len(p: &mut Packet) -> Option<(usize, usize)> {
    let d = p.data();
    let h = d.first_chunk::<20>()?;
    let ihl = usize::from(h[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if h[0] >> 4 != 4 || ihl < 20 || total < ihl || total > d.len() {
        return None;
    }
    let extra = d.len() - total;
    p.take_back(extra);
    Some((ihl, total))
}

/// Encapsulates the IPv4 packet `p` (from its network header) with `sa`
/// and sequence number `seq` (from [`Sa::next_seq`]). On success `p` starts
/// with the outer IPv4 header, which is also its network header.
pub fn encapsulate(sa: &Sa, seq: u64, p: &mut Packet) -> Result<(), EncapError> {
    encapsulate_with(sa, seq, None, p)
}

/// [`encapsulate`] with a given IV instead of the one derived from the
/// sequence number: for known-answer tests whose vectors chose their own
/// IVs. Never use it to send: an IV repeated under one key breaks GCM.
#[doc(hidden)]
pub fn encapsulate_with_iv(sa: &Sa, seq: u64, iv: &[u8], p: &mut Packet) -> Result<(), EncapError> {
    assert_eq!(
        iv.len(),
        sa.transform.iv_len(),
        "IV length of the SA's algorithm"
    );
    encapsulate_with(sa, seq, Some(iv), p)
}

fn encapsulate_with(
    sa: &Sa,
    seq: u64,
    fixed_iv: Option<&[u8]>,
    p: &mut Packet,
) -> Result<(), EncapError> {
    to_network_header(p);
    let (_, len) = ipv4_len(p).ok_or(EncapError::NotIpv4)?;
    let (tos, df) = {
        let d = p.data();
        (d[1], d[6] & 0x40)
    };
    let t = &sa.transform;
    let (iv_len, icv_len) = (t.iv_len(), t.icv_len());
    let padded = round_up(len + 2, t.align());
    let pad = padded - len - 2;
    let head = 20 + 8 + iv_len;
    if p.tailroom() < padded - len + icv_len || p.headroom() < head {
        return Err(EncapError::NoRoom);
    }
    p.put_back(padded - len + icv_len)
        .map_err(|_| EncapError::NoRoom)?;
    p.push_front(head).map_err(|_| EncapError::NoRoom)?;
    let d = p.data_mut();
    let total = d.len();

    // Trailer: padding 1, 2, 3, ... (RFC 4303 section 2.4), its length,
    // next header.
    let trailer = &mut d[head + len..head + padded];
    for (i, b) in trailer[..pad].iter_mut().enumerate() {
        *b = i as u8 + 1;
    }
    trailer[pad] = pad as u8;
    trailer[pad + 1] = NEXT_IPV4;

    // ESP header.
    d[20..24].copy_from_slice(&sa.spi().to_be_bytes());
    d[24..28].copy_from_slice(&(seq as u32).to_be_bytes());
    let seq_hi = (seq >> 32) as u32;

    match t {
        Transform::Gcm { key, salt } => {
            match fixed_iv {
                Some(iv) => d[28..36].copy_from_slice(iv),
                None => d[28..36].copy_from_slice(&seq.to_be_bytes()),
            }
            let nonce = gcm_nonce(salt, &d[28..36]);
            let aad = gcm_aad(&d[20..28], sa.esn().then_some(seq_hi));
            let (body, icv) = d[head..].split_at_mut(padded);
            let tag = key
                .seal_in_place_separate_tag(nonce, Aad::from(aad.as_slice()), body)
                .expect("ESP packets are far below GCM's length limit");
            icv[..16].copy_from_slice(tag.as_ref());
        }
        Transform::CbcSha1 { aes, mac } => {
            let iv: [u8; 16] = match fixed_iv {
                Some(iv) => iv.try_into().expect("checked length"),
                None => aes.iv(seq),
            };
            d[28..44].copy_from_slice(&iv);
            let body = &mut d[head..head + padded];
            // Cannot fail: `padded` is a multiple of the block size.
            match aes {
                crate::sa::CbcKey::Aes128(c) => {
                    cbc::Encryptor::<aes::Aes128>::inner_iv_init(c.clone(), &iv.into())
                        .encrypt_padded_mut::<NoPadding>(body, padded)
                        .map(|_| ())
                }
                crate::sa::CbcKey::Aes256(c) => {
                    cbc::Encryptor::<aes::Aes256>::inner_iv_init(c.clone(), &iv.into())
                        .encrypt_padded_mut::<NoPadding>(body, padded)
                        .map(|_| ())
                }
            }
            .expect("padded to the block size");
            let tag = sha1_mac(mac, &d[20..head + padded], sa.esn().then_some(seq_hi))
                .finalize()
                .into_bytes();
            d[head + padded..head + padded + 12].copy_from_slice(&tag[..12]);
        }
    }

    // Outer header (RFC 4301 section 5.1.2.1): DSCP copied, ECN copied
    // except CE, which becomes ECT(0) as Linux does (RFC 6040 compatibility
    // mode); DF copied; a fresh TTL.
    let ecn = tos & 3;
    let outer_tos = if ecn == 3 { (tos & !3) | 2 } else { tos };
    let h: &mut [u8; 20] = (&mut d[..20]).try_into().expect("20 bytes");
    *h = [0; 20];
    h[0] = 0x45;
    h[1] = outer_tos;
    h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    h[4..6].copy_from_slice(&(seq as u16).to_be_bytes());
    h[6] = df;
    h[8] = OUTER_TTL;
    h[9] = PROTO_ESP;
    h[12..16].copy_from_slice(&sa.src().octets());
    h[16..20].copy_from_slice(&sa.dst().octets());
    let sum = !checksum::header20(h);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    p.set_network_header(0);
    Ok(())
}

#[inline]
fn gcm_nonce(salt: &[u8; 4], iv: &[u8]) -> Nonce {
    let mut n = [0u8; 12];
    n[..4].copy_from_slice(salt);
    n[4..].copy_from_slice(iv);
    Nonce::assume_unique_for_key(n)
}

/// GCM's additional data (RFC 4106 section 5): SPI and sequence number,
/// with the high half in between when ESN is on.
#[inline]
fn gcm_aad(spi_seq: &[u8], seq_hi: Option<u32>) -> arrayvec_aad::Aad12 {
    let mut a = arrayvec_aad::Aad12::default();
    a.extend(&spi_seq[..4]);
    if let Some(hi) = seq_hi {
        a.extend(&hi.to_be_bytes());
    }
    a.extend(&spi_seq[4..8]);
    a
}

/// A 12-byte AAD buffer without allocating.
mod arrayvec_aad {
    #[derive(Default)]
    pub struct Aad12 {
        buf: [u8; 12],
        len: usize,
    }

    impl Aad12 {
        pub fn extend(&mut self, b: &[u8]) {
            self.buf[self.len..self.len + b.len()].copy_from_slice(b);
            self.len += b.len();
        }

        pub fn as_slice(&self) -> &[u8] {
            &self.buf[..self.len]
        }
    }
}

/// HMAC-SHA1 over the authenticated part, with the high half of an ESN
/// appended (RFC 4303 section 2.2.1: it is authenticated but not sent).
#[inline]
fn sha1_mac(mac: &HmacSha1, data: &[u8], seq_hi: Option<u32>) -> HmacSha1 {
    let mut ctx = mac.clone();
    ctx.update(data);
    if let Some(hi) = seq_hi {
        ctx.update(&hi.to_be_bytes());
    }
    ctx
}

/// Decapsulates the ESP packet `p` (an outer IPv4 packet, from its network
/// header). `find(spi, dst)` looks the SA up. On success `p` is the inner
/// IPv4 packet, also its network header, and the SA and full sequence
/// number are returned; on failure the SA is returned when one was found,
/// so that its counters can tell.
pub fn decapsulate<'a>(
    p: &mut Packet,
    find: impl FnOnce(u32, u32) -> Option<&'a Sa>,
) -> Result<(&'a Sa, u64), (DecapError, Option<&'a Sa>)> {
    to_network_header(p);
    if p.data().first().is_some_and(|b| b >> 4 != 4) {
        return Err((DecapError::NotEsp, None));
    }
    let Some((ihl, total)) = ipv4_len(p) else {
        return Err((DecapError::Truncated, None));
    };
    let d = p.data();
    if d[9] != PROTO_ESP {
        return Err((DecapError::NotEsp, None));
    }
    if u16::from_be_bytes([d[6], d[7]]) & 0x3fff != 0 {
        return Err((DecapError::Fragment, None));
    }
    let Some(esp) = d.get(ihl..total).filter(|e| e.len() >= 8) else {
        return Err((DecapError::Truncated, None));
    };
    let spi = u32::from_be_bytes([esp[0], esp[1], esp[2], esp[3]]);
    let seq_lo = u32::from_be_bytes([esp[4], esp[5], esp[6], esp[7]]);
    let dst = u32::from_be_bytes([d[16], d[17], d[18], d[19]]);
    let sa = find(spi, dst).ok_or((DecapError::UnknownSpi, None))?;
    let fail = |e| Err((e, Some(sa)));
    if sa.is_dead() {
        return fail(DecapError::Expired);
    }
    let t = &sa.transform;
    let (iv_len, icv_len) = (t.iv_len(), t.icv_len());
    let Some(ct_len) = esp
        .len()
        .checked_sub(8 + iv_len + icv_len)
        .filter(|&n| n >= 2)
    else {
        return fail(DecapError::Truncated);
    };
    if ct_len & (t.align() - 1) != 0 {
        return fail(DecapError::BadLength);
    }
    let window = sa.replay();
    let seq = window.infer(seq_lo);
    if let Err(r) = window.check(seq) {
        return fail(replay_error(r));
    }
    let seq_hi = sa.esn().then_some((seq >> 32) as u32);
    let start = ihl + 8 + iv_len;
    let d = p.data_mut();
    match t {
        Transform::Gcm { key, salt } => {
            let nonce = gcm_nonce(salt, &d[ihl + 8..start]);
            let aad = gcm_aad(&d[ihl..ihl + 8], seq_hi);
            if key
                .open_in_place(nonce, Aad::from(aad.as_slice()), &mut d[start..total])
                .is_err()
            {
                return fail(DecapError::AuthFailed);
            }
        }
        Transform::CbcSha1 { aes, mac } => {
            // In constant time: timing must not tell how much of a forged
            // ICV was right.
            let ctx = sha1_mac(mac, &d[ihl..start + ct_len], seq_hi);
            if ctx
                .verify_truncated_left(&d[start + ct_len..total])
                .is_err()
            {
                return fail(DecapError::AuthFailed);
            }
            let iv: [u8; 16] = d[ihl + 8..start].try_into().expect("16 bytes");
            let body = &mut d[start..start + ct_len];
            let ok = match aes {
                crate::sa::CbcKey::Aes128(c) => {
                    cbc::Decryptor::<aes::Aes128>::inner_iv_init(c.clone(), &iv.into())
                        .decrypt_padded_mut::<NoPadding>(body)
                        .is_ok()
                }
                crate::sa::CbcKey::Aes256(c) => {
                    cbc::Decryptor::<aes::Aes256>::inner_iv_init(c.clone(), &iv.into())
                        .decrypt_padded_mut::<NoPadding>(body)
                        .is_ok()
                }
            };
            if !ok {
                return fail(DecapError::BadLength);
            }
        }
    }
    // Authentic: only now may the window move (RFC 4303 section 3.4.3).
    if let Err(r) = window.commit(seq) {
        return fail(replay_error(r));
    }
    let pt = &d[start..start + ct_len];
    let pad = usize::from(pt[ct_len - 2]);
    let next = pt[ct_len - 1];
    if pad + 2 > ct_len
        || pt[ct_len - 2 - pad..ct_len - 2]
            .iter()
            .enumerate()
            .any(|(i, &b)| usize::from(b) != i + 1)
    {
        return fail(DecapError::BadPadding);
    }
    match next {
        NEXT_IPV4 => {}
        NEXT_NONE => return fail(DecapError::Dummy),
        _ => return fail(DecapError::NextHeader),
    }
    // The inner packet must be a whole IPv4 packet; TFC padding after it
    // (RFC 4303 section 2.7) is cut off with the trailer.
    let inner = &pt[..ct_len - 2 - pad];
    let Some(h) = inner.first_chunk::<20>() else {
        return fail(DecapError::BadInner);
    };
    let inner_ihl = usize::from(h[0] & 0x0f) * 4;
    let inner_total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if h[0] >> 4 != 4 || inner_ihl < 20 || inner_total < inner_ihl || inner_total > inner.len() {
        return fail(DecapError::BadInner);
    }
    let end = p.len() - (start + inner_total);
    p.pull_front(start);
    p.take_back(end);
    p.set_network_header(0);
    Ok((sa, seq))
}

fn replay_error(r: crate::replay::Refused) -> DecapError {
    match r {
        crate::replay::Refused::Replayed => DecapError::Replayed,
        crate::replay::Refused::TooOld => DecapError::TooOld,
    }
}
