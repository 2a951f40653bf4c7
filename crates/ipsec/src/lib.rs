//! IPsec ESP in tunnel mode (RFC 4301, RFC 4303) for bricks' gateways:
//! security associations and policies read from `ip xfrm` notation
//! ([`file`]), the databases every worker reads without locks ([`db`]),
//! the anti-replay window ([`replay`]), and encapsulation and
//! decapsulation in place ([`esp`]) with AES-GCM (RFC 4106) and AES-CBC
//! with HMAC-SHA1-96 (RFC 3602, RFC 2404).
//!
//! No cryptographic primitive is written here: AES-GCM comes
//! from `ring`; AES-CBC and HMAC-SHA1 from RustCrypto (`aes`, `cbc`, `hmac`,
//! `sha1`), each chosen by benchmark (BENCHMARKS.md).

pub mod db;
pub mod esp;
pub mod file;
pub mod replay;
pub mod sa;
pub mod spd;

pub use db::{Database, Side, Snapshot, Verdict};
pub use esp::{decapsulate, encapsulate, DecapError, EncapError};
pub use file::{parse, FileError, SaFile};
pub use sa::Sa;
