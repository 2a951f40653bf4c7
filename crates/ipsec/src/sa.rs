//! A security association: keys ready for use, the outbound sequence
//! counter, the inbound replay window, counters and lifetimes.
//!
//! One `Sa` is shared by every worker. What they write is atomic: the
//! sequence counter (one `fetch_add` per packet, so no number and no IV is
//! ever used twice, whichever worker sends), the replay window (see
//! [`crate::replay`]) and the counters, which workers add to once per batch
//! rather than once per packet. The counter and the window sit on cache
//! lines of their own so that senders and receivers do not slow each other.

use crate::db::Side;
use crate::file::{Algorithm, Lifetime, StateSpec};
use crate::replay::ReplayWindow;
use aes::cipher::{BlockEncrypt, KeyInit};
use core::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use hmac::{Hmac, Mac};
use ring::aead;

/// HMAC-SHA1, keyed once; each packet works on a copy.
pub(crate) type HmacSha1 = Hmac<sha1::Sha1>;
use std::net::Ipv4Addr;

/// Keeps a value on a cache line of its own.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct Line<T>(pub T);

/// The keyed transform.
// Each lives inside an `Arc<Sa>`: boxing the big variant would only add a
// pointer chase per packet.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Transform {
    Gcm {
        key: aead::LessSafeKey,
        salt: [u8; 4],
    },
    CbcSha1 {
        aes: CbcKey,
        mac: HmacSha1,
    },
}

/// An expanded AES key for CBC (both directions) and IV generation.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum CbcKey {
    Aes128(aes::Aes128),
    Aes256(aes::Aes256),
}

impl CbcKey {
    /// The CBC IV for sequence number `seq`: the SA's block cipher applied
    /// to the number (NIST SP 800-38A appendix C, the first method): unique
    /// because the number is, and unpredictable without the key.
    pub(crate) fn iv(&self, seq: u64) -> [u8; 16] {
        let mut block = aes::Block::default();
        block[..8].copy_from_slice(&seq.to_be_bytes());
        match self {
            CbcKey::Aes128(c) => c.encrypt_block(&mut block),
            CbcKey::Aes256(c) => c.encrypt_block(&mut block),
        }
        block.into()
    }
}

impl Transform {
    fn new(a: &Algorithm) -> Transform {
        match a {
            Algorithm::AesGcm { key, salt } => {
                let alg = if key.len() == 32 {
                    &aead::AES_256_GCM
                } else {
                    &aead::AES_128_GCM
                };
                let key =
                    aead::UnboundKey::new(alg, key).expect("key length checked by the parser");
                Transform::Gcm {
                    key: aead::LessSafeKey::new(key),
                    salt: *salt,
                }
            }
            Algorithm::AesCbcHmacSha1 { key, auth_key } => Transform::CbcSha1 {
                aes: if key.len() == 32 {
                    CbcKey::Aes256(aes::Aes256::new_from_slice(key).expect("checked length"))
                } else {
                    CbcKey::Aes128(aes::Aes128::new_from_slice(key).expect("checked length"))
                },
                mac: <HmacSha1 as Mac>::new_from_slice(auth_key)
                    .expect("HMAC takes any key length"),
            },
        }
    }

    /// Bytes of IV after the ESP header.
    #[inline]
    pub(crate) fn iv_len(&self) -> usize {
        match self {
            Transform::Gcm { .. } => 8,
            Transform::CbcSha1 { .. } => 16,
        }
    }

    /// What the payload and trailer are padded to a multiple of.
    #[inline]
    pub(crate) fn align(&self) -> usize {
        match self {
            Transform::Gcm { .. } => 4,
            Transform::CbcSha1 { .. } => 16,
        }
    }

    /// Bytes of ICV at the end.
    #[inline]
    pub(crate) fn icv_len(&self) -> usize {
        match self {
            Transform::Gcm { .. } => 16,
            Transform::CbcSha1 { .. } => 12,
        }
    }
}

/// Per-SA counters, added to by every worker.
#[derive(Debug, Default)]
pub struct SaCounters {
    /// Packets protected (outbound) or accepted (inbound).
    pub packets: AtomicU64,
    /// Their inner bytes.
    pub bytes: AtomicU64,
    /// Replayed or too old (inbound).
    pub replay: AtomicU64,
    /// ICV did not verify (inbound).
    pub auth_failed: AtomicU64,
    /// Dropped because the SA expired or its sequence numbers ran out.
    pub expired: AtomicU64,
}

/// A snapshot of [`SaCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SaCount {
    /// See [`SaCounters::packets`].
    pub packets: u64,
    /// See [`SaCounters::bytes`].
    pub bytes: u64,
    /// See [`SaCounters::replay`].
    pub replay: u64,
    /// See [`SaCounters::auth_failed`].
    pub auth_failed: u64,
    /// See [`SaCounters::expired`].
    pub expired: u64,
}

const SOFT: u8 = 1;
const HARD: u8 = 2;

/// A lifetime event: the first time an SA passes a limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expiry {
    /// Hard (the SA is no longer used) or soft (time to rekey).
    pub hard: bool,
    /// Which limit, in words.
    pub reason: String,
}

/// One security association.
pub struct Sa {
    spec: StateSpec,
    pub(crate) transform: Transform,
    /// Next outbound sequence number, from 1.
    next_seq: Line<AtomicU64>,
    /// The inbound window.
    pub(crate) replay: Line<ReplayWindow>,
    counters: Line<SaCounters>,
    /// When the SA was installed, ns since the epoch.
    installed_ns: u64,
    /// SOFT and HARD bits once reached.
    expired: AtomicU8,
}

impl core::fmt::Debug for Sa {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "SA spi {:#x} {} -> {} {:?}",
            self.spec.spi, self.spec.src, self.spec.dst, self.spec.algorithm
        )
    }
}

impl Sa {
    /// Keys the SA, with the receive window its line asks for;
    /// `installed_ns` starts its time limits.
    pub fn new(spec: StateSpec, installed_ns: u64) -> Sa {
        Sa::for_side(spec, installed_ns, Side::Decap)
    }

    /// Keys the SA for one side: only decapsulation gets a receive window
    /// (an encapsulating SA's is off and takes one word).
    pub fn for_side(spec: StateSpec, installed_ns: u64, side: Side) -> Sa {
        let window = if side.checks_replay() {
            spec.replay_window
        } else {
            0
        };
        Sa {
            transform: Transform::new(&spec.algorithm),
            next_seq: Line(AtomicU64::new(1)),
            replay: Line(ReplayWindow::new(window, spec.esn)),
            counters: Line(SaCounters::default()),
            installed_ns,
            expired: AtomicU8::new(0),
            spec,
        }
    }

    /// The state line it was made from.
    pub fn spec(&self) -> &StateSpec {
        &self.spec
    }

    /// Security Parameters Index.
    #[inline]
    pub fn spi(&self) -> u32 {
        self.spec.spi
    }

    /// Tunnel source.
    #[inline]
    pub fn src(&self) -> Ipv4Addr {
        self.spec.src
    }

    /// Tunnel destination.
    #[inline]
    pub fn dst(&self) -> Ipv4Addr {
        self.spec.dst
    }

    /// Extended sequence numbers.
    #[inline]
    pub fn esn(&self) -> bool {
        self.spec.esn
    }

    /// The receive window.
    pub fn replay(&self) -> &ReplayWindow {
        &self.replay.0
    }

    /// Takes the next outbound sequence number; `None` once they have run
    /// out (2^32 - 1 without ESN, RFC 4303 section 3.3.3: the counter
    /// never wraps; the SA must be replaced), which also expires the SA.
    #[inline]
    pub fn next_seq(&self) -> Option<u64> {
        let seq = self.next_seq.0.fetch_add(1, Ordering::Relaxed);
        let last = if self.spec.esn {
            u64::MAX - 1
        } else {
            u64::from(u32::MAX)
        };
        (seq <= last).then_some(seq)
    }

    /// Sequence numbers handed out so far.
    pub fn sent(&self) -> u64 {
        self.next_seq.0.load(Ordering::Relaxed) - 1
    }

    /// Makes the next outbound number `seq` (tests start near 2^32).
    pub fn set_next_seq(&self, seq: u64) {
        self.next_seq.0.store(seq, Ordering::Relaxed);
    }

    /// The counters.
    pub fn counters(&self) -> &SaCounters {
        &self.counters.0
    }

    /// A snapshot of the counters.
    pub fn count(&self) -> SaCount {
        let c = &self.counters.0;
        SaCount {
            packets: c.packets.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
            replay: c.replay.load(Ordering::Relaxed),
            auth_failed: c.auth_failed.load(Ordering::Relaxed),
            expired: c.expired.load(Ordering::Relaxed),
        }
    }

    /// Whether the hard limit has been reached: the SA is not used.
    #[inline]
    pub fn is_dead(&self) -> bool {
        self.expired.load(Ordering::Relaxed) & HARD != 0
    }

    /// Adds a batch's worth of traffic and checks the limits at time
    /// `now_ns`. Returns the event the first time a soft or a hard limit is
    /// passed (each reported once, by whichever worker gets there).
    pub fn account(&self, packets: u64, bytes: u64, now_ns: u64) -> Option<Expiry> {
        let c = &self.counters.0;
        let p = c.packets.fetch_add(packets, Ordering::Relaxed) + packets;
        let b = c.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.check_limits(p, b, now_ns)
    }

    /// Checks the limits without adding traffic (time limits pass while
    /// an SA is idle).
    pub fn check_time(&self, now_ns: u64) -> Option<Expiry> {
        let c = &self.counters.0;
        self.check_limits(
            c.packets.load(Ordering::Relaxed),
            c.bytes.load(Ordering::Relaxed),
            now_ns,
        )
    }

    /// Marks the SA hard-expired for `reason` (sequence numbers ran out).
    pub fn expire(&self, reason: &str) -> Option<Expiry> {
        self.raise(HARD, reason.to_string())
    }

    fn check_limits(&self, packets: u64, bytes: u64, now_ns: u64) -> Option<Expiry> {
        let l: &Lifetime = &self.spec.lifetime;
        let age = now_ns.saturating_sub(self.installed_ns) / 1_000_000_000;
        let over = |limit: u64, v: u64| limit != 0 && v >= limit;
        let done = self.expired.load(Ordering::Relaxed);
        if done & HARD == 0 {
            let why = if over(l.hard_bytes, bytes) {
                Some(format!("{bytes} bytes (byte-hard {})", l.hard_bytes))
            } else if over(l.hard_packets, packets) {
                Some(format!(
                    "{packets} packets (packet-hard {})",
                    l.hard_packets
                ))
            } else if over(l.hard_seconds, age) {
                Some(format!("{age} s (time-hard {})", l.hard_seconds))
            } else {
                None
            };
            if let Some(why) = why {
                return self.raise(HARD | SOFT, why);
            }
        }
        if done & SOFT == 0 {
            let why = if over(l.soft_bytes, bytes) {
                Some(format!("{bytes} bytes (byte-soft {})", l.soft_bytes))
            } else if over(l.soft_packets, packets) {
                Some(format!(
                    "{packets} packets (packet-soft {})",
                    l.soft_packets
                ))
            } else if over(l.soft_seconds, age) {
                Some(format!("{age} s (time-soft {})", l.soft_seconds))
            } else {
                None
            };
            if let Some(why) = why {
                return self.raise(SOFT, why);
            }
        }
        None
    }

    fn raise(&self, bits: u8, reason: String) -> Option<Expiry> {
        let before = self.expired.fetch_or(bits, Ordering::Relaxed);
        let new = bits & !before;
        (new != 0).then_some(Expiry {
            hard: new & HARD != 0,
            reason,
        })
    }

    /// Whether the SA's own selector (`sel`) takes `flow`.
    #[inline]
    pub fn selector_takes(&self, flow: &crate::spd::Flow) -> bool {
        self.spec.selector.as_ref().is_none_or(|s| s.matches(flow))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::parse;

    fn sa(extra: &str) -> Sa {
        let f = parse(&format!(
            "state add src 10.0.0.1 dst 10.0.0.2 proto esp spi 0x1001 mode tunnel aead \
             'rfc4106(gcm(aes))' 0x000102030405060708090a0b0c0d0e0fcafebabe 128 {extra}"
        ))
        .unwrap();
        Sa::new(f.states[0].clone(), 0)
    }

    #[test]
    fn sequence_numbers_never_wrap_without_esn() {
        let s = sa("");
        assert_eq!(s.next_seq(), Some(1));
        s.set_next_seq(u64::from(u32::MAX));
        assert_eq!(s.next_seq(), Some(u64::from(u32::MAX)));
        assert_eq!(s.next_seq(), None);
        assert_eq!(s.next_seq(), None);
        let s = sa("flag esn");
        s.set_next_seq(u64::from(u32::MAX));
        assert_eq!(s.next_seq(), Some(u64::from(u32::MAX)));
        assert_eq!(s.next_seq(), Some(1 << 32));
    }

    #[test]
    fn lifetimes_raise_each_event_once() {
        let s = sa("limit byte-soft 1000 byte-hard 2000 time-soft 10");
        assert_eq!(s.account(5, 900, 0), None);
        let e = s.account(1, 200, 0).unwrap();
        assert!(!e.hard && e.reason.contains("byte-soft"), "{e:?}");
        assert_eq!(s.account(1, 100, 0), None);
        assert!(!s.is_dead());
        let e = s.account(1, 1000, 0).unwrap();
        assert!(e.hard, "{e:?}");
        assert!(s.is_dead());
        assert_eq!(s.account(1, 1000, 0), None);
        let s = sa("limit time-soft 10 time-hard 20");
        assert_eq!(s.check_time(9_000_000_000), None);
        assert!(!s.check_time(10_000_000_000).unwrap().hard);
        assert!(s.check_time(25_000_000_000).unwrap().hard);
    }

    #[test]
    fn cbc_ivs_differ_per_sequence_number() {
        let k = CbcKey::Aes128(aes::Aes128::new_from_slice(&[7; 16]).unwrap());
        assert_ne!(k.iv(1), k.iv(2));
        assert_eq!(k.iv(1), k.iv(1));
    }
}
