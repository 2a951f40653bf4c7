//! Longest-prefix match for IPv4 and IPv6 route tables at Internet scale
//! (a million IPv4 and 200K IPv6 prefixes), with lookups that never lock
//! and updates that never stop them.
//!
//! Shared vocabulary: a route maps a prefix to a [`NextHop`], an index into
//! a next-hop table kept by the caller (gateway, output port, ECMP group).

pub mod prefix;

pub use prefix::{NextHop, Prefix4, Prefix6};
