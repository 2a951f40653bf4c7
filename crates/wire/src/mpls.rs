//! MPLS label stack entries (RFC 3032 section 2.1).
//!
//! A frame with EtherType [`EtherType::MPLS_UNICAST`](crate::EtherType) or
//! `MPLS_MULTICAST` carries a stack of 4-byte entries; the entry with the
//! bottom-of-stack bit set is followed by the labelled packet, whose type
//! the label implies (RFC 3032 section 2.2). One view covers one entry: its
//! payload is the rest of the stack or the labelled packet.

use crate::network_endian::{read_u32, write_u32};
use crate::{Error, Result};
use core::fmt;

/// Length of one label stack entry.
pub const HEADER_LEN: usize = 4;

/// Reserved label: IPv4 Explicit NULL (RFC 3032 section 2.1).
pub const LABEL_IPV4_EXPLICIT_NULL: u32 = 0;
/// Reserved label: Router Alert (RFC 3032 section 2.1).
pub const LABEL_ROUTER_ALERT: u32 = 1;
/// Reserved label: IPv6 Explicit NULL (RFC 3032 section 2.1).
pub const LABEL_IPV6_EXPLICIT_NULL: u32 = 2;
/// Reserved label: Implicit NULL, advertised but never on the wire.
pub const LABEL_IMPLICIT_NULL: u32 = 3;
/// The largest label value (20 bits).
pub const LABEL_MAX: u32 = 0xf_ffff;

mod field {
    use crate::{Field, Rest};
    pub const ENTRY: Field = 0..4;
    pub const PAYLOAD: Rest = 4..;
}

const LABEL_SHIFT: u32 = 12;
const TC_SHIFT: u32 = 9;
const TC_MASK: u32 = 0x7 << TC_SHIFT;
const BOS_MASK: u32 = 1 << 8;
const TTL_MASK: u32 = 0xff;

/// A view of one MPLS label stack entry and what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MplsPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> MplsPacket<T> {
    /// Length of one label stack entry.
    pub const HEADER_LEN: usize = HEADER_LEN;

    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> MplsPacket<T> {
        MplsPacket { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<MplsPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds a 4-byte entry. Afterwards no accessor
    /// panics.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The whole 32-bit entry.
    #[inline]
    pub fn entry(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::ENTRY])
    }

    /// The 20-bit label.
    #[inline]
    pub fn label(&self) -> u32 {
        self.entry() >> LABEL_SHIFT
    }

    /// The traffic class (formerly EXP, RFC 5462), 0..=7.
    #[inline]
    pub fn tc(&self) -> u8 {
        ((self.entry() & TC_MASK) >> TC_SHIFT) as u8
    }

    /// True if this is the last entry of the stack.
    #[inline]
    pub fn bottom_of_stack(&self) -> bool {
        self.entry() & BOS_MASK != 0
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        (self.entry() & TTL_MASK) as u8
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> MplsPacket<&'a T> {
    /// Everything after this entry: the next entry, or the labelled packet
    /// if this one is the bottom of the stack.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> MplsPacket<T> {
    /// Sets the whole 32-bit entry.
    #[inline]
    pub fn set_entry(&mut self, entry: u32) {
        write_u32(&mut self.buffer.as_mut()[field::ENTRY], entry);
    }

    /// Sets the label; bits above the low twenty are ignored.
    #[inline]
    pub fn set_label(&mut self, label: u32) {
        let entry =
            (self.entry() & !(LABEL_MAX << LABEL_SHIFT)) | ((label & LABEL_MAX) << LABEL_SHIFT);
        self.set_entry(entry);
    }

    /// Sets the traffic class; bits above the low three are ignored.
    #[inline]
    pub fn set_tc(&mut self, tc: u8) {
        let entry = (self.entry() & !TC_MASK) | ((u32::from(tc) << TC_SHIFT) & TC_MASK);
        self.set_entry(entry);
    }

    /// Sets the bottom-of-stack bit.
    #[inline]
    pub fn set_bottom_of_stack(&mut self, bottom: bool) {
        let entry = if bottom {
            self.entry() | BOS_MASK
        } else {
            self.entry() & !BOS_MASK
        };
        self.set_entry(entry);
    }

    /// Sets the time to live.
    #[inline]
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::ENTRY.end - 1] = ttl;
    }

    /// Everything after this entry, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for MplsPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The fields of one label stack entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MplsRepr {
    /// The label, 0..=[`LABEL_MAX`].
    pub label: u32,
    /// Traffic class, 0..=7.
    pub tc: u8,
    /// True for the last entry of the stack.
    pub bottom_of_stack: bool,
    /// Time to live.
    pub ttl: u8,
}

impl MplsRepr {
    /// Reads one entry.
    pub fn parse<T: AsRef<[u8]>>(packet: &MplsPacket<T>) -> Result<MplsRepr> {
        packet.check_len()?;
        Ok(MplsRepr {
            label: packet.label(),
            tc: packet.tc(),
            bottom_of_stack: packet.bottom_of_stack(),
            ttl: packet.ttl(),
        })
    }

    /// The number of bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the entry. Out-of-range `label` and `tc` are truncated to their
    /// field widths.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut MplsPacket<T>) {
        let entry = ((self.label & LABEL_MAX) << LABEL_SHIFT)
            | ((u32::from(self.tc) << TC_SHIFT) & TC_MASK)
            | if self.bottom_of_stack { BOS_MASK } else { 0 }
            | u32::from(self.ttl);
        packet.set_entry(entry);
    }
}

impl fmt::Display for MplsRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MPLS (label {}, tc {}", self.label, self.tc)?;
        if self.bottom_of_stack {
            f.write_str(", [S]")?;
        }
        write!(f, ", ttl {})", self.ttl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ethernet::{EtherType, EthernetFrame};

    /// A real capture (Wireshark's MPLS sample): a TCP ACK from 10.1.2.1
    /// to 10.34.0.1 under label 29, padded to 60 bytes.
    static MPLS_FRAME: [u8; 60] = [
        0x00, 0x30, 0x96, 0xe6, 0xfc, 0x39, 0x00, 0x30, 0x96, 0x05, 0x28, 0x38, 0x88, 0x47, 0x00,
        0x01, 0xdd, 0xff, 0x45, 0xc0, 0x00, 0x28, 0x00, 0x03, 0x00, 0x00, 0xff, 0x06, 0xa4, 0xe8,
        0x0a, 0x01, 0x02, 0x01, 0x0a, 0x22, 0x00, 0x01, 0x2a, 0xf9, 0x00, 0x17, 0x98, 0x32, 0x10,
        0x05, 0x8d, 0xd5, 0x8e, 0xa5, 0x50, 0x10, 0x10, 0x20, 0x99, 0xcd, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn deconstruct() {
        let frame = EthernetFrame::new_checked(&MPLS_FRAME[..]).unwrap();
        assert_eq!(frame.ethertype(), EtherType::MPLS_UNICAST);
        let entry = MplsPacket::new_checked(frame.payload()).unwrap();
        assert_eq!(entry.entry(), 0x0001_ddff);
        assert_eq!(entry.label(), 29);
        assert_eq!(entry.tc(), 6);
        assert!(entry.bottom_of_stack());
        assert_eq!(entry.ttl(), 255);
        assert_eq!(entry.payload(), &MPLS_FRAME[18..]);
        assert_eq!(entry.payload()[0] >> 4, 4);
    }

    #[test]
    fn construct() {
        let repr = MplsRepr {
            label: 29,
            tc: 6,
            bottom_of_stack: true,
            ttl: 255,
        };
        let mut bytes = [0u8; 4];
        repr.emit(&mut MplsPacket::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, MPLS_FRAME[14..18]);
        assert_eq!(
            MplsRepr::parse(&MplsPacket::new_unchecked(&MPLS_FRAME[14..])),
            Ok(repr)
        );
        assert_eq!(repr.to_string(), "MPLS (label 29, tc 6, [S], ttl 255)");
    }

    #[test]
    fn setters_touch_only_their_bits() {
        let mut bytes = [0u8; 8];
        let mut entry = MplsPacket::new_unchecked(&mut bytes[..]);
        entry.set_label(LABEL_MAX);
        entry.set_tc(0xff);
        entry.set_bottom_of_stack(true);
        entry.set_ttl(64);
        assert_eq!(entry.entry(), 0xffff_ff40);
        entry.set_label(LABEL_IPV6_EXPLICIT_NULL);
        assert_eq!(
            (
                entry.label(),
                entry.tc(),
                entry.bottom_of_stack(),
                entry.ttl()
            ),
            (2, 7, true, 64)
        );
        entry.set_bottom_of_stack(false);
        entry.set_tc(1);
        assert_eq!(entry.entry(), 0x0000_2240);
        assert_eq!(entry.payload_mut().len(), 4);
    }

    #[test]
    fn truncated() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                MplsPacket::new_checked(&MPLS_FRAME[14..14 + len]),
                Err(Error::Truncated)
            );
        }
    }
}
