//! Bad input through `decapsulate`: every tampered, malformed, truncated,
//! replayed or misdirected packet must be refused with the right
//! `DecapError`, never panic, and never move the replay window unless the
//! packet is authentic; the anti-replay window through the packet path
//! (RFC 4303 section 3.4.3), with extended sequence numbers across 2^32
//! (appendix A).
//!
//! Packets the tests build by hand (a bad trailer under a valid ICV) are
//! sealed with RustCrypto (`aes-gcm`; `cbc` + `aes` with `hmac` + `sha1`),
//! so that only the check under test can catch them.

use aes_gcm::aead::{AeadInPlace, KeyInit};
use bricks_ipsec::esp::{decapsulate, encapsulate, DecapError};
use bricks_ipsec::{Database, Sa};
use bricks_packet::Packet;
use cbc::cipher::block_padding::NoPadding;
use cbc::cipher::{BlockEncryptMut, KeyIvInit};
use hmac::Mac;
use proptest::prelude::*;
use std::sync::Arc;

type HmacSha1 = hmac::Hmac<sha1::Sha1>;

const SPI: u32 = 0x1001;
/// AES-128 key || salt.
const GCM_KEY: [u8; 20] = [
    0x4c, 0x80, 0xcd, 0xef, 0xbb, 0x5d, 0x10, 0xda, 0x90, 0x6a, 0xc7, 0x3c, 0x36, 0x13, 0xa6, 0x34,
    0xca, 0xfe, 0xba, 0xbe,
];
const CBC_KEY: [u8; 16] = [
    0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10,
];
const AUTH_KEY: [u8; 20] = [
    0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,
    0xb0, 0xb1, 0xb2, 0xb3,
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Alg {
    Gcm,
    Cbc,
}

impl Alg {
    fn iv_len(self) -> usize {
        match self {
            Alg::Gcm => 8,
            Alg::Cbc => 16,
        }
    }

    fn icv_len(self) -> usize {
        match self {
            Alg::Gcm => 16,
            Alg::Cbc => 12,
        }
    }

    fn align(self) -> usize {
        match self {
            Alg::Gcm => 4,
            Alg::Cbc => 16,
        }
    }
}

fn hexs(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn line(alg: Alg, spi: u32, extra: &str) -> String {
    let algo = match alg {
        Alg::Gcm => format!("aead 'rfc4106(gcm(aes))' 0x{} 128", hexs(&GCM_KEY)),
        Alg::Cbc => format!(
            "enc 'cbc(aes)' 0x{} auth-trunc 'hmac(sha1)' 0x{} 96",
            hexs(&CBC_KEY),
            hexs(&AUTH_KEY)
        ),
    };
    format!(
        "ip xfrm state add src 10.0.0.1 dst 10.0.0.2 proto esp spi {spi:#x} mode tunnel {algo} {extra}\n"
    )
}

/// A database with the SAs of `text`, and its first SA.
fn db(text: &str) -> (Database, Arc<Sa>) {
    let db = Database::from_text(text, 0).unwrap_or_else(|e| panic!("{e}: {text}"));
    let sa = db.snapshot().sas()[0].clone();
    (db, sa)
}

fn ip_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Rewrites the outer header's total length and checksum.
fn fix_outer(f: &mut [u8]) {
    let ihl = usize::from(f[0] & 15) * 4;
    let len = f.len() as u16;
    f[2..4].copy_from_slice(&len.to_be_bytes());
    f[10..12].fill(0);
    let sum = ip_checksum(&f[..ihl]);
    f[10..12].copy_from_slice(&sum.to_be_bytes());
}

/// An inner IPv4/UDP packet of `len` bytes whose payload is marked `tag`.
fn inner(len: usize, tag: u64) -> Vec<u8> {
    assert!(len >= 36);
    let mut p = vec![0u8; len];
    p[..20].copy_from_slice(&[
        0x45, 0, 0, 0, 0, 0, 0x40, 0, 63, 17, 0, 0, 192, 168, 1, 10, 192, 168, 2, 20,
    ]);
    p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    let sum = ip_checksum(&p[..20]);
    p[10..12].copy_from_slice(&sum.to_be_bytes());
    p[20..28].copy_from_slice(&[0x30, 0x39, 0x00, 0x35, 0, 0, 0, 0]);
    p[24..26].copy_from_slice(&((len - 20) as u16).to_be_bytes());
    p[28..36].copy_from_slice(&tag.to_be_bytes());
    for (i, b) in p[36..].iter_mut().enumerate() {
        *b = i as u8;
    }
    p
}

/// bricks' ESP packet for `inner` with `seq`.
fn seal(sa: &Sa, seq: u64, inner: &[u8]) -> Vec<u8> {
    let mut p = Packet::from_slice(inner).unwrap();
    p.set_network_header(0);
    encapsulate(sa, seq, &mut p).unwrap();
    p.data().to_vec()
}

/// Decapsulates a frame: the inner packet and the full sequence number.
fn open(db: &Database, frame: &[u8]) -> Result<(Vec<u8>, u64), DecapError> {
    let snap = db.snapshot();
    let mut p = Packet::from_slice(frame).unwrap();
    p.set_network_header(0);
    let r = decapsulate(&mut p, |spi, dst| snap.find(spi, dst))
        .map(|(_, seq)| seq)
        .map_err(|(e, _)| e);
    r.map(|seq| (p.data().to_vec(), seq))
}

fn err(db: &Database, frame: &[u8]) -> DecapError {
    open(db, frame).expect_err("refused")
}

/// An ESP packet (outer header 10.0.0.1 -> 10.0.0.2 included) carrying
/// `plaintext` (trailer included, so it can be wrong) under a valid ICV
/// computed with RustCrypto and the SA's keys. `esn` adds the high half of
/// `seq` to what is authenticated.
fn forge(alg: Alg, spi: u32, seq: u64, esn: bool, plaintext: &[u8]) -> Vec<u8> {
    let mut esp = spi.to_be_bytes().to_vec();
    esp.extend_from_slice(&(seq as u32).to_be_bytes());
    let hi = esn.then_some((seq >> 32) as u32);
    match alg {
        Alg::Gcm => {
            let iv = (seq ^ 0x5a5a).to_be_bytes();
            let mut nonce = GCM_KEY[16..].to_vec();
            nonce.extend_from_slice(&iv);
            let mut aad = spi.to_be_bytes().to_vec();
            if let Some(hi) = hi {
                aad.extend_from_slice(&hi.to_be_bytes());
            }
            aad.extend_from_slice(&(seq as u32).to_be_bytes());
            let mut body = plaintext.to_vec();
            let tag = aes_gcm::Aes128Gcm::new_from_slice(&GCM_KEY[..16])
                .unwrap()
                .encrypt_in_place_detached(aes_gcm::Nonce::from_slice(&nonce), &aad, &mut body)
                .unwrap();
            esp.extend_from_slice(&iv);
            esp.extend_from_slice(&body);
            esp.extend_from_slice(&tag);
        }
        Alg::Cbc => {
            let iv = [0x3c; 16];
            let mut body = plaintext.to_vec();
            let n = body.len();
            cbc::Encryptor::<aes::Aes128>::new_from_slices(&CBC_KEY, &iv)
                .unwrap()
                .encrypt_padded_mut::<NoPadding>(&mut body, n)
                .unwrap();
            esp.extend_from_slice(&iv);
            esp.extend_from_slice(&body);
            let mut m = <HmacSha1 as Mac>::new_from_slice(&AUTH_KEY).unwrap();
            m.update(&esp);
            if let Some(hi) = hi {
                m.update(&hi.to_be_bytes());
            }
            let icv = m.finalize().into_bytes();
            esp.extend_from_slice(&icv[..12]);
        }
    }
    let mut f = vec![
        0x45, 0, 0, 0, 0, 0, 0, 0, 64, 50, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    f.extend_from_slice(&esp);
    fix_outer(&mut f);
    f
}

/// `data || padding || pad length || next header`, with the padding bricks
/// (and RFC 4303) expects.
fn payload(alg: Alg, data: &[u8], next: u8) -> Vec<u8> {
    let padded = (data.len() + 2).next_multiple_of(alg.align());
    let pad = padded - data.len() - 2;
    let mut p = data.to_vec();
    p.extend((1..=pad).map(|i| i as u8));
    p.push(pad as u8);
    p.push(next);
    p
}

// ---------------------------------------------------------------------------

/// Every single-bit flip from the ESP header to the end of the ICV: the
/// ones in the SPI find no SA, the ones in the sequence number that land
/// on a number already seen are replays, every other one fails the ICV;
/// none moves the window, and the genuine packet is still accepted after.
#[test]
fn every_bit_flip_is_refused() {
    for (alg, extra) in [(Alg::Gcm, ""), (Alg::Cbc, ""), (Alg::Gcm, "flag esn")] {
        let (db, sa) = db(&line(alg, SPI, extra));
        for s in 1..=3 {
            open(&db, &seal(&sa, s, &inner(61, s))).unwrap();
        }
        let good = seal(&sa, 5, &inner(61, 5));
        for byte in 20..good.len() {
            for bit in 0..8 {
                let mut f = good.clone();
                f[byte] ^= 1 << bit;
                let want = match byte {
                    20..=23 => DecapError::UnknownSpi,
                    24..=27 => match u32::from_be_bytes(f[24..28].try_into().unwrap()) {
                        0 => DecapError::TooOld,
                        1..=3 => DecapError::Replayed,
                        _ => DecapError::AuthFailed,
                    },
                    _ => DecapError::AuthFailed,
                };
                assert_eq!(err(&db, &f), want, "{alg:?} {extra} byte {byte} bit {bit}");
                assert_eq!(sa.replay().top(), 3, "{alg:?} byte {byte} bit {bit}");
            }
        }
        // Nothing was recorded: 4 (a flip of 5) and 5 are still fresh.
        assert_eq!(open(&db, &good).unwrap().1, 5);
        assert_eq!(open(&db, &seal(&sa, 4, &inner(61, 4))).unwrap().1, 4);
    }
}

/// Bits of the outer header are not authenticated in tunnel mode; the ones
/// bricks reads decide (destination, protocol, lengths, fragment fields).
#[test]
fn outer_header_fields() {
    let (db, sa) = db(&line(Alg::Gcm, SPI, ""));
    let good = seal(&sa, 1, &inner(80, 1));
    let with = |edit: &dyn Fn(&mut Vec<u8>)| {
        let mut f = good.clone();
        edit(&mut f);
        f
    };
    // Another destination: no such SA.
    let f = with(&|f| {
        f[19] ^= 1;
        fix_outer(f)
    });
    assert_eq!(err(&db, &f), DecapError::UnknownSpi);
    // Not ESP.
    for proto in [17, 51, 4, 0] {
        let f = with(&|f| {
            f[9] = proto;
            fix_outer(f)
        });
        assert_eq!(err(&db, &f), DecapError::NotEsp, "proto {proto}");
    }
    // Fragments: more fragments, or an offset, or both.
    for frag in [0x2000u16, 0x0001, 0x00b9, 0x3fff, 0x6000] {
        let f = with(&|f| {
            f[6..8].copy_from_slice(&frag.to_be_bytes());
            fix_outer(f)
        });
        assert_eq!(err(&db, &f), DecapError::Fragment, "{frag:#06x}");
    }
    // An IHL the header cannot have; another IP version is not ESP over
    // IPv4 at all.
    for b0 in [0x44, 0x40] {
        let f = with(&|f| f[0] = b0);
        assert_eq!(err(&db, &f), DecapError::Truncated, "{b0:#04x}");
    }
    for b0 in [0x35, 0x65] {
        let f = with(&|f| f[0] = b0);
        assert_eq!(err(&db, &f), DecapError::NotEsp, "{b0:#04x}");
    }
    // Total length beyond the frame, or below the header.
    for total in [good.len() as u16 + 1, 19, 0] {
        let f = with(&|f| f[2..4].copy_from_slice(&total.to_be_bytes()));
        assert_eq!(err(&db, &f), DecapError::Truncated, "total {total}");
    }
    assert_eq!(sa.replay().top(), 0);
    // TTL, ID, TOS, checksum and source are not bricks' business here.
    let f = with(&|f| {
        f[1] = 0xb8;
        f[4] ^= 0xff;
        f[8] = 1;
        f[10] ^= 0xff;
        f[12] = 203;
    });
    assert_eq!(open(&db, &f).unwrap().1, 1);
    // DF alone is no fragment.
    let good = seal(&sa, 2, &inner(80, 2));
    let mut f = good.clone();
    f[6] = 0x40;
    fix_outer(&mut f);
    assert_eq!(open(&db, &f).unwrap().1, 2);
    // Outer options (IHL 6) are skipped; link-layer padding is trimmed.
    let good = seal(&sa, 3, &inner(80, 3));
    let mut f = good[..20].to_vec();
    f[0] = 0x46;
    f.extend_from_slice(&[1, 1, 1, 0]);
    f.extend_from_slice(&good[20..]);
    fix_outer(&mut f);
    assert_eq!(open(&db, &f).unwrap(), (inner(80, 3), 3));
    let mut f = seal(&sa, 4, &inner(80, 4));
    f.extend_from_slice(&[0; 9]);
    assert_eq!(open(&db, &f).unwrap(), (inner(80, 4), 4));
}

/// bricks' `DecapError::NotEsp` is documented as "Not IPv4 carrying ESP";
/// an IPv6 packet (or any version but 4) is reported as `Truncated`
/// instead, because `ipv4_len` (src/esp.rs) returns `None` for both.
#[test]
fn ipv6_outer_packet_is_not_esp() {
    let (db, _) = db(&line(Alg::Gcm, SPI, ""));
    // An IPv6 header (next header 50) and 40 bytes of payload.
    let mut f = vec![0x60, 0, 0, 0, 0, 40, 50, 64];
    f.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8].repeat(8));
    f.extend_from_slice(&[0; 40]);
    assert_eq!(err(&db, &f), DecapError::NotEsp);
}

/// A flipped SPI that names another SA (same destination, even the same
/// key) fails that SA's ICV, which covers the SPI; neither window moves.
#[test]
fn flipped_spi_of_another_sa_fails_authentication() {
    for alg in [Alg::Gcm, Alg::Cbc] {
        let text = line(alg, SPI, "") + &line(alg, SPI ^ 2, "");
        let (db, sa) = db(&text);
        let other = db.snapshot().sas()[1].clone();
        assert_eq!(other.spi(), SPI ^ 2);
        let good = seal(&sa, 7, &inner(50, 7));
        let mut f = good.clone();
        f[23] ^= 2;
        assert_eq!(err(&db, &f), DecapError::AuthFailed, "{alg:?}");
        assert_eq!((sa.replay().top(), other.replay().top()), (0, 0));
        assert_eq!(open(&db, &good).unwrap().1, 7);
        assert_eq!(other.replay().top(), 0);
        f[23] ^= 4;
        assert_eq!(err(&db, &f), DecapError::UnknownSpi);
    }
}

/// A trailer that is wrong under a valid ICV is caught by the padding
/// check, whatever the cipher.
///
/// Such a packet is authentic (only a holder of the key can make it), and
/// bricks commits its number before parsing the trailer ("Authentic: only
/// now may the window move", src/esp.rs; RFC 4303 section 3.4.3 updates the
/// window once the ICV verified): the number is then seen, and a copy is a
/// replay. The same holds for the next header and inner packet checks
/// below. Forged packets (above) never move the window.
#[test]
fn bad_padding_under_a_valid_icv() {
    for alg in [Alg::Gcm, Alg::Cbc] {
        let (db, sa) = db(&line(alg, SPI, ""));
        let data = inner(40, 0);
        let a = alg.align();
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        // Padding 1, 3 instead of 1, 2 (GCM: 40 + 4 = 44; CBC: pad 6).
        let mut p = payload(alg, &data, 4);
        let pad = usize::from(p[p.len() - 2]);
        assert!(pad >= 2);
        p[40 + 1] = 3;
        cases.push(("1, 3, ...", p));
        // Zeros as padding.
        let mut p = payload(alg, &data, 4);
        p[40..40 + pad].fill(0);
        cases.push(("zeros", p));
        // Pad length longer than the payload.
        let mut p = vec![0u8; a];
        p[a - 2] = 200;
        p[a - 1] = 4;
        cases.push(("pad length 200", p));
        // Pad length one longer than the padding really is.
        let mut p = payload(alg, &data, 4);
        let n = p.len();
        p[n - 2] += 1;
        cases.push(("pad length + 1", p));
        for (i, (what, p)) in cases.into_iter().enumerate() {
            let seq = 10 + i as u64;
            let f = forge(alg, SPI, seq, false, &p);
            assert_eq!(err(&db, &f), DecapError::BadPadding, "{alg:?} {what}");
            assert_eq!(sa.replay().top(), seq, "{alg:?} {what}");
            assert_eq!(err(&db, &f), DecapError::Replayed, "{alg:?} {what}");
        }
        // The forging itself is right: the same with a good trailer passes.
        let f = forge(alg, SPI, 50, false, &payload(alg, &data, 4));
        assert_eq!(open(&db, &f).unwrap(), (data, 50), "{alg:?}");
    }
}

/// Next headers other than 4: 59 is a dummy packet (RFC 4303 section 2.6),
/// anything else is refused; an inner packet that is not whole IPv4 is
/// refused too.
#[test]
fn next_header_and_inner_packet() {
    for (alg, extra) in [(Alg::Gcm, ""), (Alg::Cbc, ""), (Alg::Cbc, "flag esn")] {
        let esn = !extra.is_empty();
        let (db, sa) = db(&line(alg, SPI, extra));
        let data = inner(57, 0);
        let cases = [
            (17, data.clone(), DecapError::NextHeader),
            (41, data.clone(), DecapError::NextHeader),
            (6, data.clone(), DecapError::NextHeader),
            (0, data.clone(), DecapError::NextHeader),
            (255, data.clone(), DecapError::NextHeader),
            (59, data.clone(), DecapError::Dummy),
            (59, Vec::new(), DecapError::Dummy),
            // Not IPv4.
            (
                4,
                [&[0x60u8][..], &data[1..]].concat(),
                DecapError::BadInner,
            ),
            // Shorter than an IPv4 header.
            (4, data[..19].to_vec(), DecapError::BadInner),
            (4, Vec::new(), DecapError::BadInner),
            // Total length beyond what was carried.
            (4, data[..50].to_vec(), DecapError::BadInner),
            // Total length shorter than a header, header length below 20.
            (4, with(&data, 2, &[0, 19]), DecapError::BadInner),
            (4, with(&data, 0, &[0x44]), DecapError::BadInner),
        ];
        for (i, (next, d, want)) in cases.into_iter().enumerate() {
            let seq = 100 + i as u64;
            let f = forge(alg, SPI, seq, esn, &payload(alg, &d, next));
            assert_eq!(err(&db, &f), want, "{alg:?} {extra} case {i}");
            // Authentic, see `bad_padding_under_a_valid_icv`.
            assert_eq!(sa.replay().top(), seq);
        }
        // A dummy packet's number is used like any other (a copy is a replay).
        let f = forge(alg, SPI, 200, esn, &payload(alg, &[], 59));
        assert_eq!(err(&db, &f), DecapError::Dummy);
        assert_eq!(err(&db, &f), DecapError::Replayed);
    }
}

/// `data` with `bytes` written at `at`.
fn with(data: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    d[at..at + bytes.len()].copy_from_slice(bytes);
    d
}

/// Traffic-flow-confidentiality padding after the inner packet (RFC 4303
/// section 2.7) is cut off: what comes out is the inner packet alone.
#[test]
fn tfc_padding_is_removed() {
    for alg in [Alg::Gcm, Alg::Cbc] {
        let (db, _) = db(&line(alg, SPI, ""));
        let data = inner(40, 3);
        let padded = [&data[..], &[0xee; 23][..]].concat();
        let f = forge(alg, SPI, 5, false, &payload(alg, &padded, 4));
        assert_eq!(open(&db, &f).unwrap(), (data, 5), "{alg:?}");
    }
}

/// Every truncation of a genuine packet, with the outer total length left
/// as it was (the frame is shorter than its header says) and rewritten to
/// match: never a panic, always the documented error, window untouched;
/// then the whole packet is accepted.
#[test]
fn truncation_at_every_length() {
    for alg in [Alg::Gcm, Alg::Cbc] {
        let (db, sa) = db(&line(alg, SPI, ""));
        let good = seal(&sa, 9, &inner(61, 9));
        let l = good.len();
        for n in 0..l {
            assert_eq!(
                err(&db, &good[..n]),
                DecapError::Truncated,
                "{alg:?} {n} of {l}"
            );
            if n < 20 {
                continue;
            }
            let mut f = good[..n].to_vec();
            fix_outer(&mut f);
            let esp = n - 20;
            let want = match esp.checked_sub(8 + alg.iv_len() + alg.icv_len()) {
                None | Some(0..=1) => DecapError::Truncated,
                Some(ct) if ct % alg.align() != 0 => DecapError::BadLength,
                Some(_) => DecapError::AuthFailed,
            };
            assert_eq!(err(&db, &f), want, "{alg:?} {n} of {l}, length fixed");
        }
        assert_eq!(sa.replay().top(), 0);
        assert_eq!(open(&db, &good).unwrap(), (inner(61, 9), 9));
    }
}

#[test]
fn unknown_spi_and_expired_sa() {
    let (db, sa) = db(&line(Alg::Gcm, SPI, ""));
    let (_, other) = self::db(&line(Alg::Gcm, 0x2002, ""));
    assert_eq!(
        err(&db, &seal(&other, 1, &inner(40, 1))),
        DecapError::UnknownSpi
    );
    let good = seal(&sa, 1, &inner(40, 1));
    sa.expire("test");
    assert_eq!(err(&db, &good), DecapError::Expired);
    assert_eq!(sa.replay().top(), 0);
}

// ---------------------------------------------------------------------------
// Anti-replay through the packet path.
// ---------------------------------------------------------------------------

#[test]
fn replay_window_64() {
    for alg in [Alg::Gcm, Alg::Cbc] {
        let (db, sa) = db(&line(alg, SPI, "replay-window 64"));
        let frames: Vec<Vec<u8>> = (0..=200).map(|s| seal(&sa, s, &inner(40, s))).collect();
        for s in (1..=100).filter(|s| ![70, 90, 95].contains(s)) {
            assert_eq!(open(&db, &frames[s]).unwrap().1, s as u64);
        }
        let e = |s: usize| err(&db, &frames[s]);
        assert_eq!(e(100), DecapError::Replayed);
        assert_eq!(e(50), DecapError::Replayed);
        assert_eq!(e(37), DecapError::Replayed, "last number in the window");
        assert_eq!(e(36), DecapError::TooOld, "first number left of it");
        assert_eq!(e(1), DecapError::TooOld);
        assert_eq!(e(0), DecapError::TooOld, "0 is never sent");
        // In the window and unseen: accepted once.
        assert_eq!(open(&db, &frames[90]).unwrap().1, 90);
        assert_eq!(e(90), DecapError::Replayed);
        assert_eq!(open(&db, &frames[70]).unwrap().1, 70);

        // A forged packet far ahead (bad ICV) moves nothing.
        let mut forged = seal(&sa, 1_000_000, &inner(40, 0));
        *forged.last_mut().unwrap() ^= 0x10;
        assert_eq!(err(&db, &forged), DecapError::AuthFailed);
        assert_eq!(sa.replay().top(), 100);
        assert_eq!(open(&db, &frames[101]).unwrap().1, 101);
        assert_eq!(open(&db, &frames[95]).unwrap().1, 95, "old window intact");
        // The genuine far packet is accepted, and the window follows it.
        let far = seal(&sa, 1_000_000, &inner(40, 0));
        assert_eq!(open(&db, &far).unwrap().1, 1_000_000);
        assert_eq!(e(200), DecapError::TooOld);
        let late = seal(&sa, 1_000_000 - 63, &inner(40, 0));
        assert_eq!(open(&db, &late).unwrap().1, 1_000_000 - 63);
        let too_late = seal(&sa, 1_000_000 - 64, &inner(40, 0));
        assert_eq!(err(&db, &too_late), DecapError::TooOld);
        assert_eq!(err(&db, &far), DecapError::Replayed);
    }
}

/// Two workers' packets interleaved 2,000 numbers apart: a window of 4096
/// takes them all; one of 64 drops the late half.
#[test]
fn reordering_by_2000() {
    let (_, tx) = db(&line(Alg::Gcm, SPI, ""));
    let frames: Vec<Vec<u8>> = (0..=4000).map(|s| seal(&tx, s, &inner(36, s))).collect();
    let order = (1..=2000usize).flat_map(|i| [2000 + i, i]);
    let (big, sa) = db(&line(Alg::Gcm, SPI, "replay-window 4096"));
    let (small, _) = db(&line(Alg::Gcm, SPI, "replay-window 64"));
    let mut small_ok = 0;
    for s in order {
        let (got, seq) = open(&big, &frames[s]).unwrap();
        assert_eq!((got, seq), (inner(36, s as u64), s as u64));
        small_ok += usize::from(open(&small, &frames[s]).is_ok());
    }
    assert_eq!(sa.replay().top(), 4000);
    assert_eq!(small_ok, 2000);
    for s in [1, 2000, 2001, 4000] {
        assert_eq!(err(&big, &frames[s]), DecapError::Replayed, "{s}");
    }
}

/// With ESN the sender crosses 2^32 (by `Sa::set_next_seq`) and the
/// receiver follows through decapsulation alone, in order and reordered
/// across the boundary; a packet whose inferred high half is wrong fails
/// its ICV and moves nothing.
#[test]
fn esn_across_2_to_the_32() {
    let e32 = 1u64 << 32;
    for alg in [Alg::Gcm, Alg::Cbc] {
        let text = line(alg, SPI, "flag esn replay-window 64");
        let (_, tx) = db(&text);
        let (rx_db, rx) = db(&text);
        let send = || {
            let s = tx.next_seq().unwrap();
            (s, seal(&tx, s, &inner(44, s)))
        };
        // The receiver only ever moves less than 2^31 at a time.
        let (s, f) = send();
        assert_eq!(open(&rx_db, &f).unwrap().1, s);
        tx.set_next_seq(1 << 31);
        let (s, f) = send();
        assert_eq!(open(&rx_db, &f).unwrap().1, s);
        tx.set_next_seq(e32 - 3);
        let pkts: Vec<(u64, Vec<u8>)> = (0..7).map(|_| send()).collect();
        assert_eq!(pkts[3].0, e32);
        assert_eq!(pkts[3].1[24..28], [0, 0, 0, 0], "low half on the wire");
        for i in [0, 1, 3, 2, 5, 4, 6] {
            let (s, f) = &pkts[i];
            let (got, seq) = open(&rx_db, f).unwrap_or_else(|e| panic!("{alg:?} {s:#x}: {e:?}"));
            assert_eq!((seq, got), (*s, inner(44, *s)), "{alg:?}");
        }
        assert_eq!(rx.replay().top(), e32 + 3);
        assert_eq!(err(&rx_db, &pkts[2].1), DecapError::Replayed);
        assert_eq!(err(&rx_db, &pkts[3].1), DecapError::Replayed);

        // Low half 10 is taken as 2^32 + 10; sent as 2^33 + 10, it fails.
        tx.set_next_seq(2 * e32 + 10);
        let (_, wrong) = send();
        assert_eq!(err(&rx_db, &wrong), DecapError::AuthFailed, "{alg:?}");
        assert_eq!(rx.replay().top(), e32 + 3);
        tx.set_next_seq(e32 + 10);
        let (s, f) = send();
        assert_eq!(open(&rx_db, &f).unwrap().1, s);
    }
    // Without ESN the sender stops at 2^32 - 1, which is still received.
    let text = line(Alg::Gcm, SPI, "");
    let (rx_db, tx) = db(&text);
    tx.set_next_seq(e32 - 1);
    let s = tx.next_seq().unwrap();
    assert_eq!(tx.next_seq(), None);
    assert_eq!(open(&rx_db, &seal(&tx, s, &inner(40, s))).unwrap().1, s);
}

// ---------------------------------------------------------------------------
// Fuzz.
// ---------------------------------------------------------------------------

proptest! {
    /// Random bytes after a valid outer header and an ESP header with a
    /// known SPI: refused, never a panic, the window untouched.
    #[test]
    fn random_esp_body_never_panics(
        gcm in any::<bool>(),
        seq in any::<u32>(),
        body in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let text = line(Alg::Gcm, SPI, "") + &line(Alg::Cbc, SPI + 1, "");
        let (db, _) = db(&text);
        let spi = if gcm { SPI } else { SPI + 1 };
        let mut f = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 50, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        f.extend_from_slice(&spi.to_be_bytes());
        f.extend_from_slice(&seq.to_be_bytes());
        f.extend_from_slice(&body);
        fix_outer(&mut f);
        let r = open(&db, &f);
        prop_assert!(
            matches!(
                r,
                Err(DecapError::Truncated | DecapError::BadLength | DecapError::AuthFailed | DecapError::TooOld)
            ),
            "{:?}",
            r
        );
        // Number 0 is refused before the ICV is even looked at.
        if seq == 0 {
            prop_assert_ne!(r, Err(DecapError::AuthFailed));
        } else {
            prop_assert_ne!(r, Err(DecapError::TooOld));
        }
        for sa in db.snapshot().sas() {
            prop_assert_eq!(sa.replay().top(), 0);
        }
    }

    /// Any frame at all, and any frame that starts like an IPv4/ESP packet
    /// to a known SA: refused, never a panic.
    #[test]
    fn random_frames_never_panic(
        mut frame in proptest::collection::vec(any::<u8>(), 0..200),
        shape in any::<bool>(),
    ) {
        let (db, sa) = db(&line(Alg::Gcm, SPI, ""));
        if shape && frame.len() >= 20 {
            frame[0] = 0x40 | (frame[0] & 0x0f).max(5);
            frame[6] &= 0x40;
            frame[7] = 0;
            frame[9] = 50;
            frame[16..20].copy_from_slice(&[10, 0, 0, 2]);
            let ihl = usize::from(frame[0] & 0x0f) * 4;
            if frame.len() >= ihl + 4 {
                frame[ihl..ihl + 4].copy_from_slice(&SPI.to_be_bytes());
            }
        }
        prop_assert!(open(&db, &frame).is_err());
        prop_assert_eq!(sa.replay().top(), 0);
    }
}
