//! Crypto crate candidates for the IPsec ESP data path.
//!
//! bricks needs AES-GCM (RFC 4106), AES-CBC (RFC 3602) and HMAC-SHA1-96
//! (RFC 2404), each with hardware acceleration (AES-NI, PCLMULQDQ, VAES,
//! SHA-NI where the CPU has them) and from audited crates. This benchmark
//! measures the candidates on ESP-sized payloads (64, 576 and 1400 bytes),
//! each operation in place on a packet-like buffer, and its result decides
//! which crate the data path uses:
//!
//! * AES-128-GCM and AES-256-GCM seal (encrypt + tag, 8-byte AAD = SPI ||
//!   sequence number, 12-byte nonce = salt || IV) and open (decrypt +
//!   verify): ring's `LessSafeKey` against RustCrypto's `aes-gcm`;
//! * AES-128-CBC encrypt and decrypt: RustCrypto's `cbc` over `aes` (ring has
//!   no CBC), including the per-packet construction of the mode object from a
//!   pre-expanded key and the packet's IV, as the data path does it; CBC
//!   works on whole blocks, so the 1400-byte case encrypts 1408 bytes;
//! * HMAC-SHA1 over the ESP header (8 bytes) and the payload: ring's
//!   `hmac::Key` against RustCrypto's `Hmac<Sha1>`, cloned pre-keyed per
//!   packet.
//!
//! Before measuring, `sanity_check` cross-checks the candidates against each
//! other (and CBC against a NIST test vector), so a broken call cannot win.
//!
//! Run with `cargo bench -p bricks-ipsec --bench candidates`.

use std::hint::black_box;
use std::time::Duration;

use aes::cipher::block_padding::NoPadding;
use aes::cipher::{BlockDecryptMut, BlockEncryptMut, KeyInit};
use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use cbc::cipher::InnerIvInit;
use criterion::{BenchmarkId, Criterion, Throughput};
use hmac::Mac;
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};

/// ESP payload lengths measured: a small packet, the IPv4 minimum MTU and a
/// full-size tunnelled packet.
const SIZES: [usize; 3] = [64, 576, 1400];

/// The CBC input for an ESP payload of `len` bytes: CBC needs whole 16-byte
/// blocks, so 1400 becomes 1408 (what ESP's padding makes of it).
const fn cbc_len(len: usize) -> usize {
    len.next_multiple_of(16)
}

/// The ESP header (SPI || sequence number), GCM's AAD and the start of the
/// HMAC input.
const ESP_HEADER: [u8; 8] = [0x00, 0x00, 0x10, 0x01, 0x00, 0x00, 0x00, 0x2a];

/// Salt (from the key material) || per-packet IV.
const NONCE: [u8; 12] = [
    0xca, 0xfe, 0xba, 0xbe, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
];

const KEY128: [u8; 16] = [
    0xfe, 0xff, 0xe9, 0x92, 0x86, 0x65, 0x73, 0x1c, 0x6d, 0x6a, 0x8f, 0x94, 0x67, 0x30, 0x83, 0x08,
];

const KEY256: [u8; 32] = [
    0xfe, 0xff, 0xe9, 0x92, 0x86, 0x65, 0x73, 0x1c, 0x6d, 0x6a, 0x8f, 0x94, 0x67, 0x30, 0x83, 0x08,
    0xfe, 0xff, 0xe9, 0x92, 0x86, 0x65, 0x73, 0x1c, 0x6d, 0x6a, 0x8f, 0x94, 0x67, 0x30, 0x83, 0x08,
];

const CBC_IV: [u8; 16] = [
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
];

const HMAC_KEY: [u8; 20] = [
    0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b,
    0x0b, 0x0b, 0x0b, 0x0b,
];

const TAG_LEN: usize = 16;

type HmacSha1 = hmac::Hmac<sha1::Sha1>;
type Aes128CbcEnc = cbc::Encryptor<aes::Aes128>;
type Aes128CbcDec = cbc::Decryptor<aes::Aes128>;

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 3) as u8).collect()
}

fn ring_key(alg: &'static aead::Algorithm, key: &[u8]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(alg, key).expect("key length"))
}

fn ring_seal(key: &LessSafeKey, buf: &mut [u8]) -> [u8; TAG_LEN] {
    let tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(NONCE),
            Aad::from(ESP_HEADER),
            buf,
        )
        .expect("ring seal");
    tag.as_ref().try_into().expect("tag length")
}

/// Opens `ct_and_tag` (ciphertext || ICV, as in an ESP packet) in place and
/// returns the plaintext length.
fn ring_open(key: &LessSafeKey, ct_and_tag: &mut [u8]) -> usize {
    key.open_in_place(
        Nonce::assume_unique_for_key(NONCE),
        Aad::from(ESP_HEADER),
        ct_and_tag,
    )
    .expect("ring open")
    .len()
}

fn rc_seal<C: AeadInPlace>(cipher: &C, buf: &mut [u8]) -> [u8; TAG_LEN] {
    let tag = cipher
        .encrypt_in_place_detached(NONCE.as_slice().into(), &ESP_HEADER, buf)
        .expect("aes-gcm seal");
    tag.as_slice().try_into().expect("tag length")
}

fn rc_open<C: AeadInPlace>(cipher: &C, ct_and_tag: &mut [u8]) -> usize {
    let (ct, tag) = ct_and_tag.split_at_mut(ct_and_tag.len() - TAG_LEN);
    cipher
        .decrypt_in_place_detached(NONCE.as_slice().into(), &ESP_HEADER, ct, (&*tag).into())
        .expect("aes-gcm open");
    ct.len()
}

fn cbc_encrypt(cipher: &aes::Aes128, iv: &[u8; 16], buf: &mut [u8]) {
    let len = buf.len();
    Aes128CbcEnc::inner_iv_init(cipher.clone(), iv.into())
        .encrypt_padded_mut::<NoPadding>(buf, len)
        .expect("block multiple");
}

fn cbc_decrypt(cipher: &aes::Aes128, iv: &[u8; 16], buf: &mut [u8]) {
    Aes128CbcDec::inner_iv_init(cipher.clone(), iv.into())
        .decrypt_padded_mut::<NoPadding>(buf)
        .expect("block multiple");
}

fn ring_hmac(key: &ring::hmac::Key, data: &[u8]) -> [u8; 20] {
    ring::hmac::sign(key, data)
        .as_ref()
        .try_into()
        .expect("SHA-1 length")
}

fn rc_hmac(keyed: &HmacSha1, data: &[u8]) -> [u8; 20] {
    let mut mac = keyed.clone();
    mac.update(data);
    mac.finalize().into_bytes().into()
}

/// Cross-checks the candidates so that the benchmark cannot compare broken
/// calls: seal with one GCM implementation and open with the other (both
/// ways, both key sizes, all sizes), CBC against NIST SP 800-38A F.2.1 and a
/// round trip, and ring's HMAC-SHA1 against RustCrypto's and RFC 2202.
fn sanity_check() {
    check_gcm(
        &ring_key(&aead::AES_128_GCM, &KEY128),
        &Aes128Gcm::new(&KEY128.into()),
    );
    check_gcm(
        &ring_key(&aead::AES_256_GCM, &KEY256),
        &Aes256Gcm::new(&KEY256.into()),
    );

    // NIST SP 800-38A, F.2.1 CBC-AES128.Encrypt, first block.
    let nist_key: [u8; 16] = [
        0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf, 0x4f,
        0x3c,
    ];
    let mut block: [u8; 16] = [
        0x6b, 0xc1, 0xbe, 0xe2, 0x2e, 0x40, 0x9f, 0x96, 0xe9, 0x3d, 0x7e, 0x11, 0x73, 0x93, 0x17,
        0x2a,
    ];
    let expected: [u8; 16] = [
        0x76, 0x49, 0xab, 0xac, 0x81, 0x19, 0xb2, 0x46, 0xce, 0xe9, 0x8e, 0x9b, 0x12, 0xe9, 0x19,
        0x7d,
    ];
    let nist = aes::Aes128::new(&nist_key.into());
    cbc_encrypt(&nist, &CBC_IV, &mut block);
    assert_eq!(block, expected, "CBC-AES128 NIST vector");
    let aes = aes::Aes128::new(&KEY128.into());
    for len in SIZES.map(cbc_len) {
        let plain = payload(len);
        let mut buf = plain.clone();
        cbc_encrypt(&aes, &CBC_IV, &mut buf);
        assert_ne!(buf, plain);
        cbc_decrypt(&aes, &CBC_IV, &mut buf);
        assert_eq!(buf, plain, "CBC round trip at {len} bytes");
    }

    // RFC 2202, test case 1.
    let rfc_ring = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &HMAC_KEY);
    let rfc_expected: [u8; 20] = [
        0xb6, 0x17, 0x31, 0x86, 0x55, 0x05, 0x72, 0x64, 0xe2, 0x8b, 0xc0, 0xb6, 0xfb, 0x37, 0x8c,
        0x8e, 0xf1, 0x46, 0xbe, 0x00,
    ];
    assert_eq!(ring_hmac(&rfc_ring, b"Hi There"), rfc_expected);
    let rc_keyed = <HmacSha1 as Mac>::new_from_slice(&HMAC_KEY).expect("any key length");
    for len in SIZES {
        let data = hmac_input(len);
        assert_eq!(
            ring_hmac(&rfc_ring, &data),
            rc_hmac(&rc_keyed, &data),
            "HMAC-SHA1 differs at {len} bytes"
        );
    }
}

/// Seals with ring and with aes-gcm, compares, and opens each one's packet
/// with the other.
fn check_gcm<C: AeadInPlace>(ring: &LessSafeKey, rc: &C) {
    for len in SIZES {
        let plain = payload(len);

        let mut a = plain.clone();
        let tag_ring = ring_seal(ring, &mut a);
        let mut b = plain.clone();
        let tag_rc = rc_seal(rc, &mut b);
        assert_eq!(a, b, "GCM ciphertexts differ at {len} bytes");
        assert_eq!(tag_ring, tag_rc, "GCM tags differ at {len} bytes");
        assert_ne!(a, plain);

        // ring seals, aes-gcm opens.
        let mut packet = a.clone();
        packet.extend_from_slice(&tag_ring);
        let n = rc_open(rc, &mut packet);
        assert_eq!(&packet[..n], plain.as_slice());

        // aes-gcm seals, ring opens.
        let mut packet = b.clone();
        packet.extend_from_slice(&tag_rc);
        let n = ring_open(ring, &mut packet);
        assert_eq!(&packet[..n], plain.as_slice());
    }
}

/// ESP header || payload, the HMAC input for a payload of `len` bytes.
fn hmac_input(len: usize) -> Vec<u8> {
    let mut data = ESP_HEADER.to_vec();
    data.extend_from_slice(&payload(len));
    data
}

fn bench_gcm<C: AeadInPlace>(
    c: &mut Criterion,
    name: &str,
    ring_alg: &'static aead::Algorithm,
    key: &[u8],
    rc: &C,
) {
    let ring = ring_key(ring_alg, key);

    let mut group = c.benchmark_group(format!("{name}_seal"));
    for len in SIZES {
        group.throughput(Throughput::Bytes(len as u64));
        let mut buf = payload(len);
        group.bench_function(BenchmarkId::new("ring", len), |b| {
            b.iter(|| black_box(ring_seal(&ring, black_box(&mut buf))))
        });
        group.bench_function(BenchmarkId::new("rustcrypto", len), |b| {
            b.iter(|| black_box(rc_seal(rc, black_box(&mut buf))))
        });
    }
    group.finish();

    // Open needs a valid packet every time: the pristine ciphertext || tag is
    // copied into the buffer before each open (a memcpy of at most 1416
    // bytes, the same for both candidates).
    let mut group = c.benchmark_group(format!("{name}_open"));
    for len in SIZES {
        group.throughput(Throughput::Bytes(len as u64));
        let mut packet = payload(len);
        let tag = ring_seal(&ring, &mut packet);
        packet.extend_from_slice(&tag);
        let mut buf = packet.clone();
        group.bench_function(BenchmarkId::new("ring", len), |b| {
            b.iter(|| {
                buf.copy_from_slice(&packet);
                black_box(ring_open(&ring, black_box(&mut buf)))
            })
        });
        group.bench_function(BenchmarkId::new("rustcrypto", len), |b| {
            b.iter(|| {
                buf.copy_from_slice(&packet);
                black_box(rc_open(rc, black_box(&mut buf)))
            })
        });
    }
    group.finish();
}

fn bench_cbc(c: &mut Criterion) {
    let aes = aes::Aes128::new(&KEY128.into());

    let mut group = c.benchmark_group("cbc128_encrypt");
    for len in SIZES.map(cbc_len) {
        group.throughput(Throughput::Bytes(len as u64));
        let mut buf = payload(len);
        group.bench_function(BenchmarkId::new("rustcrypto", len), |b| {
            b.iter(|| cbc_encrypt(black_box(&aes), black_box(&CBC_IV), black_box(&mut buf)))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("cbc128_decrypt");
    for len in SIZES.map(cbc_len) {
        group.throughput(Throughput::Bytes(len as u64));
        let mut buf = payload(len);
        group.bench_function(BenchmarkId::new("rustcrypto", len), |b| {
            b.iter(|| cbc_decrypt(black_box(&aes), black_box(&CBC_IV), black_box(&mut buf)))
        });
    }
    group.finish();
}

fn bench_hmac(c: &mut Criterion) {
    let ring = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &HMAC_KEY);
    let rc = <HmacSha1 as Mac>::new_from_slice(&HMAC_KEY).expect("any key length");

    let mut group = c.benchmark_group("hmac_sha1");
    for len in SIZES {
        // Throughput counts the payload, as for the ciphers; the MAC also
        // covers the 8-byte ESP header.
        group.throughput(Throughput::Bytes(len as u64));
        let data = hmac_input(len);
        group.bench_function(BenchmarkId::new("ring", len), |b| {
            b.iter(|| black_box(ring_hmac(&ring, black_box(&data))))
        });
        group.bench_function(BenchmarkId::new("rustcrypto", len), |b| {
            b.iter(|| black_box(rc_hmac(&rc, black_box(&data))))
        });
    }
    group.finish();
}

fn main() {
    sanity_check();

    let mut c = Criterion::default()
        .configure_from_args()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));

    bench_gcm(
        &mut c,
        "gcm128",
        &aead::AES_128_GCM,
        &KEY128,
        &Aes128Gcm::new(&KEY128.into()),
    );
    bench_gcm(
        &mut c,
        "gcm256",
        &aead::AES_256_GCM,
        &KEY256,
        &Aes256Gcm::new(&KEY256.into()),
    );
    bench_cbc(&mut c);
    bench_hmac(&mut c);

    c.final_summary();
}
