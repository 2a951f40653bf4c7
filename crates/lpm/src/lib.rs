//! Longest-prefix match for IPv4 and IPv6 route tables at Internet scale
//! (a million IPv4 and 200K IPv6 prefixes), with lookups that never lock
//! and updates that never stop them.
//!
//! Shared vocabulary: a route maps a prefix to a [`NextHop`], an index into
//! a next-hop table kept by the caller (gateway, output port, ECMP group).

pub mod bench;
pub mod dir24_8;
pub mod gen;
pub mod ipv6;
pub mod linear4;
mod mem;
pub mod naive;
pub mod prefix;
pub mod source;
pub mod table;
pub mod trie4;

pub use dir24_8::Dir24_8;
pub use ipv6::Poptrie6;
pub use linear4::Linear4;
pub use naive::{Naive4, Naive6};
pub use prefix::{Answer, NextHop, Prefix4, Prefix6, NO_ROUTE};
pub use table::{Lpm4, Lpm4Update, Lpm6, Lpm6Update, LpmError};
pub use trie4::Trie4;
