//! ESP decapsulation on hostile input. The first byte picks a mode:
//! - raw: the rest is an outer IPv4 packet, given to `decapsulate` as is;
//! - round trip: the rest is an inner packet; whatever `encapsulate`
//!   accepts, `decapsulate` must give back byte for byte;
//! - tamper: as round trip, then one byte of the ESP packet (chosen by the
//!   input) is flipped: decapsulation must fail unless the byte is one ESP
//!   does not protect (the outer header's TOS, ID, flags, TTL, checksum
//!   and source address: SAs are found by destination and SPI, as in
//!   Linux).
//!
//! Never a panic, for any algorithm, with and without ESN.
#![no_main]

use bricks_ipsec::{decapsulate, encapsulate, Database};
use bricks_packet::Packet;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

const SAS: &str = "\
state add src 10.0.0.1 dst 10.0.0.2 proto esp spi 0x1001 reqid 1 mode tunnel \
  aead 'rfc4106(gcm(aes))' 0x000102030405060708090a0b0c0d0e0f10111213 128
state add src 10.0.0.1 dst 10.0.0.3 proto esp spi 0x1002 reqid 2 mode tunnel flag esn \
  replay-window 128 aead 'rfc4106(gcm(aes))' \
  0x000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f10111213 128
state add src 10.0.0.1 dst 10.0.0.4 proto esp spi 0x1003 reqid 3 mode tunnel \
  enc 'cbc(aes)' 0x000102030405060708090a0b0c0d0e0f \
  auth-trunc 'hmac(sha1)' 0x0102030405060708090a0b0c0d0e0f1011121314 96
";

fn db() -> &'static Database {
    static DB: OnceLock<Database> = OnceLock::new();
    DB.get_or_init(|| Database::from_text(SAS, 0).unwrap())
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let snap = db().load();
    match mode % 3 {
        0 => {
            let Ok(mut p) = Packet::from_slice(rest) else {
                return;
            };
            let _ = decapsulate(&mut p, |spi, dst| snap.find(spi, dst));
        }
        m => {
            let Some((&pick, inner)) = rest.split_first() else {
                return;
            };
            let sa = &snap.sas()[usize::from(pick) % 3];
            let Ok(mut p) = Packet::from_slice(inner) else {
                return;
            };
            let Some(seq) = sa.next_seq() else { return };
            if encapsulate(sa, seq, &mut p).is_err() {
                return;
            }
            let total = usize::from(u16::from_be_bytes([inner[2], inner[3]]));
            if m == 2 {
                let at = usize::from(pick) * 7 % p.len();
                p.data_mut()[at] ^= 1 << (pick % 8);
                let r = decapsulate(&mut p, |spi, dst| snap.find(spi, dst));
                let unprotected = matches!(at, 1 | 4..=6 | 8 | 10..=15);
                assert!(r.is_err() || unprotected, "flipped byte {at} accepted");
            } else {
                let r = decapsulate(&mut p, |spi, dst| snap.find(spi, dst));
                assert!(r.is_ok(), "{:?}", r.err().map(|e| e.0));
                assert_eq!(p.data(), &inner[..total]);
            }
        }
    }
});
