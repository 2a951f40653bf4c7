//! IPv6 forwarding elements, with Click's names and arguments where Click
//! has them (`elements/ip6/`): the steps a forwarded IPv6 packet takes
//! (RFC 8200), the ICMPv6 messages a router sends (RFC 4443) and Neighbor
//! Discovery (RFC 4861).

pub mod checkip6header;
pub mod decip6hlim;
pub mod getip6address;
pub(crate) mod header6;
pub mod icmp6error;
pub mod icmp6pingresponder;
pub mod ip6mirror;

use bricks_element::ElementClass;

/// Every class of this group.
pub static CLASSES: &[&ElementClass] = &[
    &checkip6header::CLASS,
    &decip6hlim::CLASS,
    &getip6address::CLASS,
    &icmp6error::CLASS,
    &icmp6pingresponder::CLASS,
    &ip6mirror::CLASS,
];
