//! Typed, bounds-checked views of packet headers, and checksums.
//!
//! This is the bottom layer of bricks: it turns bytes into typed headers and
//! back, and knows nothing about buffers, batches or elements. Each header
//! has two halves, in the style of smoltcp's `wire` module:
//!
//! - a *packet view* `XxxPacket<T: AsRef<[u8]>>` wrapping a buffer, with a
//!   getter for every field, a setter when `T: AsMut<[u8]>`, and `payload()`.
//!   Constructing one with `new_unchecked` costs nothing; `check_len` (or
//!   `new_checked`) verifies once that the buffer is long enough for the
//!   fixed header and for every length field the header carries. **Once
//!   `check_len` has returned `Ok`, no getter, no fixed-field setter and no
//!   `payload()` panics**: that is the contract the hot path relies on to
//!   read fields without further checks. Setters that change a length field
//!   (`set_header_len`, `set_total_len`, `set_len`, ...) can break it; call
//!   `check_len` again after using them.
//! - a *representation* `XxxRepr`, a plain struct holding the fields a
//!   program cares about, with `parse(&packet)`, `buffer_len()` and
//!   `emit(&mut packet)`. It is what tests, ICMP error generation and
//!   traffic generators use to build packets.
//!
//! Getters are `#[inline]` and read straight from the buffer: a router
//! reads one or two fields of a header per packet, so decoding a whole
//! header up front would be waste.
//!
//! Addresses are `core::net::{Ipv4Addr, Ipv6Addr}`; the crate is `no_std`
//! and allocation-free.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use core::fmt;

#[macro_use]
mod macros;
mod network_endian;

pub mod arp;
pub mod checksum;
pub mod esp;
pub mod ethernet;
pub mod icmpv4;
pub mod icmpv6;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod ipv6ext;
pub mod mpls;
pub mod ndisc;
pub mod tcp;
pub mod udp;
pub mod vlan;

pub use arp::{ArpHardware, ArpOperation, ArpPacket, ArpRepr};
pub use esp::{EspPacket, EspRepr};
pub use ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr};
pub use icmpv4::{
    Icmpv4DstUnreachable, Icmpv4Message, Icmpv4Packet, Icmpv4ParamProblem, Icmpv4Redirect,
    Icmpv4Repr, Icmpv4TimeExceeded,
};
pub use icmpv6::{
    Icmpv6DstUnreachable, Icmpv6Message, Icmpv6Packet, Icmpv6ParamProblem, Icmpv6Repr,
    Icmpv6TimeExceeded,
};
pub use ip::IpProtocol;
pub use ipv4::{
    Ipv4Cidr, Ipv4Option, Ipv4OptionError, Ipv4OptionKind, Ipv4OptionsIter, Ipv4Packet, Ipv4Repr,
};
pub use ipv6::{Ipv6Cidr, Ipv6Packet, Ipv6Repr};
pub use mpls::{MplsPacket, MplsRepr};
pub use ndisc::{NdiscOption, NdiscPacket, NdiscRepr, NeighborFlags};
pub use tcp::{TcpFlags, TcpOption, TcpOptionsIter, TcpPacket, TcpRepr};
pub use udp::{UdpPacket, UdpRepr};
pub use vlan::{VlanPacket, VlanRepr};

pub use core::net::{Ipv4Addr, Ipv6Addr};

/// Why a buffer could not be read as a header, or a header as a `Repr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Error {
    /// The buffer ends before the header does, or before the packet that a
    /// length field in the header announces: a runt frame or a capture
    /// snapped too short.
    Truncated,
    /// A field holds a value the protocol forbids: a wrong version, a
    /// length field smaller than the fixed header, a bad checksum, an option
    /// whose length runs past the options area.
    Malformed,
    /// The packet is well formed but uses something this crate does not
    /// represent, such as ARP for a hardware type other than Ethernet or an
    /// ICMP message type with no `Repr` variant.
    Unsupported,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => {
                "truncated packet: the buffer is shorter than the header or its length fields say"
            }
            Error::Malformed => {
                "malformed packet: a header field holds a value the protocol forbids"
            }
            Error::Unsupported => {
                "unsupported packet: well formed, but of a kind this parser does not represent"
            }
        })
    }
}

impl core::error::Error for Error {}

/// The result of reading a header.
pub type Result<T> = core::result::Result<T, Error>;

/// Why text could not be read as an address or prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressParseError {
    /// Not six hexadecimal octets separated by `:` or `-`.
    EthernetAddress,
    /// Not a dotted-quad IPv4 address.
    Ipv4Address,
    /// Not an IPv6 address in RFC 4291 text form.
    Ipv6Address,
    /// The prefix has no `/`, or its length is not a number in range
    /// (0..=32 for IPv4, 0..=128 for IPv6).
    PrefixLen,
    /// The part after `/` is an address but not a contiguous netmask.
    Netmask,
}

impl fmt::Display for AddressParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressParseError::EthernetAddress => {
                "invalid Ethernet address: expected six hex octets such as 00:11:22:33:44:55"
            }
            AddressParseError::Ipv4Address => {
                "invalid IPv4 address: expected a dotted quad such as 192.0.2.1"
            }
            AddressParseError::Ipv6Address => {
                "invalid IPv6 address: expected a form such as 2001:db8::1"
            }
            AddressParseError::PrefixLen => {
                "invalid prefix: expected ADDRESS/LENGTH with LENGTH at most 32 (IPv4) or 128 (IPv6)"
            }
            AddressParseError::Netmask => {
                "invalid netmask: its one bits must be contiguous, as in 255.255.255.0"
            }
        })
    }
}

impl core::error::Error for AddressParseError {}

/// A field of a header: the byte range it occupies.
pub(crate) type Field = core::ops::Range<usize>;
/// Everything from an offset to the end of the buffer.
pub(crate) type Rest = core::ops::RangeFrom<usize>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_display_is_actionable() {
        for e in [Error::Truncated, Error::Malformed, Error::Unsupported] {
            let text = format!("{e}");
            assert!(text.contains("packet"), "{text}");
        }
        let text = format!("{}", AddressParseError::EthernetAddress);
        assert!(text.contains("00:11:22:33:44:55"));
    }
}
