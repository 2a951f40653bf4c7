//! IEEE 802.1Q VLAN tags (and 802.1ad S-tags, which have the same layout).
//!
//! An Ethernet frame whose EtherType is [`EtherType::VLAN`] or
//! [`EtherType::QINQ`] carries, as its payload, the 4 bytes viewed here: the
//! Tag Control Information (priority code point, drop eligible indicator,
//! VLAN identifier; 802.1Q-2018 section 9.6) and the EtherType of what
//! follows, which may be another tag.

use crate::ethernet::EtherType;
use crate::network_endian::{read_u16, write_u16};
use crate::{Error, Result};
use core::fmt;

/// Length of a tag: TCI and the inner EtherType.
pub const HEADER_LEN: usize = 4;

mod field {
    use crate::{Field, Rest};
    pub const TCI: Field = 0..2;
    pub const ETHERTYPE: Field = 2..4;
    pub const PAYLOAD: Rest = 4..;
}

const PCP_SHIFT: u16 = 13;
const DEI_MASK: u16 = 0x1000;
const VID_MASK: u16 = 0x0fff;

/// A view of an 802.1Q tag, from the TCI to the end of the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VlanPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanPacket<T> {
    /// Length of a tag.
    pub const HEADER_LEN: usize = HEADER_LEN;

    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> VlanPacket<T> {
        VlanPacket { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<VlanPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the 4-byte tag. Afterwards no accessor
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

    /// The whole Tag Control Information field.
    #[inline]
    pub fn tci(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::TCI])
    }

    /// Priority code point (0..=7), the 802.1p class of service.
    #[inline]
    pub fn pcp(&self) -> u8 {
        (self.tci() >> PCP_SHIFT) as u8
    }

    /// Drop eligible indicator.
    #[inline]
    pub fn dei(&self) -> bool {
        self.tci() & DEI_MASK != 0
    }

    /// VLAN identifier (0..=4095; 0 means priority-tagged only, 4095 is
    /// reserved).
    #[inline]
    pub fn vid(&self) -> u16 {
        self.tci() & VID_MASK
    }

    /// The EtherType of what follows the tag.
    #[inline]
    pub fn ethertype(&self) -> EtherType {
        EtherType(read_u16(&self.buffer.as_ref()[field::ETHERTYPE]))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> VlanPacket<&'a T> {
    /// Everything after the tag.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanPacket<T> {
    /// Sets the whole TCI field.
    #[inline]
    pub fn set_tci(&mut self, tci: u16) {
        write_u16(&mut self.buffer.as_mut()[field::TCI], tci);
    }

    /// Sets the priority code point; bits above the low three are ignored.
    #[inline]
    pub fn set_pcp(&mut self, pcp: u8) {
        let tci = (self.tci() & !(0x7 << PCP_SHIFT)) | ((u16::from(pcp) & 0x7) << PCP_SHIFT);
        self.set_tci(tci);
    }

    /// Sets the drop eligible indicator.
    #[inline]
    pub fn set_dei(&mut self, dei: bool) {
        let tci = if dei {
            self.tci() | DEI_MASK
        } else {
            self.tci() & !DEI_MASK
        };
        self.set_tci(tci);
    }

    /// Sets the VLAN identifier; bits above the low twelve are ignored.
    #[inline]
    pub fn set_vid(&mut self, vid: u16) {
        let tci = (self.tci() & !VID_MASK) | (vid & VID_MASK);
        self.set_tci(tci);
    }

    /// Sets the inner EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        write_u16(&mut self.buffer.as_mut()[field::ETHERTYPE], ethertype.0);
    }

    /// Everything after the tag, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for VlanPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The fields of an 802.1Q tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlanRepr {
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier, 0..=4095.
    pub vid: u16,
    /// EtherType of what follows the tag.
    pub ethertype: EtherType,
}

impl VlanRepr {
    /// Reads a tag.
    pub fn parse<T: AsRef<[u8]>>(packet: &VlanPacket<T>) -> Result<VlanRepr> {
        packet.check_len()?;
        Ok(VlanRepr {
            pcp: packet.pcp(),
            dei: packet.dei(),
            vid: packet.vid(),
            ethertype: packet.ethertype(),
        })
    }

    /// The number of bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the tag. Out-of-range `pcp` and `vid` are truncated to their
    /// field widths.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut VlanPacket<T>) {
        let tci = ((u16::from(self.pcp) & 0x7) << PCP_SHIFT)
            | if self.dei { DEI_MASK } else { 0 }
            | (self.vid & VID_MASK);
        packet.set_tci(tci);
        packet.set_ethertype(self.ethertype);
    }
}

impl fmt::Display for VlanRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "vlan {}, p {}", self.vid, self.pcp)?;
        if self.dei {
            f.write_str(", DEI")?;
        }
        write!(f, ", ethertype {}", self.ethertype)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ethernet::EthernetFrame;

    /// A real capture: a TCP ACK on VLAN 503, padded to 64 bytes.
    static VLAN_FRAME: [u8; 64] = [
        0x00, 0x10, 0xdb, 0xff, 0x10, 0x00, 0x00, 0x15, 0x2c, 0x9d, 0xcc, 0x00, 0x81, 0x00, 0x01,
        0xf7, 0x08, 0x00, 0x45, 0x00, 0x00, 0x28, 0x29, 0x8d, 0x40, 0x00, 0x7d, 0x06, 0x83, 0xa0,
        0xac, 0x1b, 0xca, 0x8e, 0x45, 0x16, 0x94, 0xe2, 0xd4, 0x0a, 0x00, 0x50, 0xdf, 0xab, 0x9c,
        0xc6, 0xcd, 0x1e, 0xe5, 0xd1, 0x50, 0x10, 0x01, 0x00, 0x5a, 0x74, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn deconstruct() {
        let frame = EthernetFrame::new_checked(&VLAN_FRAME[..]).unwrap();
        assert_eq!(frame.ethertype(), EtherType::VLAN);
        let tag = VlanPacket::new_checked(frame.payload()).unwrap();
        assert_eq!(tag.tci(), 0x01f7);
        assert_eq!(tag.pcp(), 0);
        assert!(!tag.dei());
        assert_eq!(tag.vid(), 503);
        assert_eq!(tag.ethertype(), EtherType::IPV4);
        assert_eq!(tag.payload(), &VLAN_FRAME[18..]);
        assert_eq!(tag.payload()[0], 0x45);
    }

    #[test]
    fn construct() {
        let repr = VlanRepr {
            pcp: 0,
            dei: false,
            vid: 503,
            ethertype: EtherType::IPV4,
        };
        let mut bytes = [0xa5u8; 4];
        repr.emit(&mut VlanPacket::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, VLAN_FRAME[14..18]);
        assert_eq!(
            VlanRepr::parse(&VlanPacket::new_unchecked(&VLAN_FRAME[14..])),
            Ok(repr)
        );
        assert_eq!(repr.to_string(), "vlan 503, p 0, ethertype IPv4");
    }

    #[test]
    fn every_field() {
        let repr = VlanRepr {
            pcp: 5,
            dei: true,
            vid: 4094,
            ethertype: EtherType::QINQ,
        };
        let mut bytes = [0u8; 4];
        let mut tag = VlanPacket::new_unchecked(&mut bytes[..]);
        repr.emit(&mut tag);
        assert_eq!(bytes, [0xbf, 0xfe, 0x88, 0xa8]);
        let mut tag = VlanPacket::new_unchecked(&mut bytes[..]);
        tag.set_pcp(7);
        tag.set_dei(false);
        tag.set_vid(0xf001);
        assert_eq!((tag.pcp(), tag.dei(), tag.vid()), (7, false, 1));
        assert_eq!(VlanRepr::parse(&tag).unwrap().pcp, 7);
    }

    #[test]
    fn truncated() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                VlanPacket::new_checked(&VLAN_FRAME[14..14 + len]),
                Err(Error::Truncated)
            );
        }
        assert!(VlanPacket::new_checked(&VLAN_FRAME[14..18])
            .unwrap()
            .payload()
            .is_empty());
    }
}
