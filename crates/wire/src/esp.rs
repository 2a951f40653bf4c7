//! IPsec Encapsulating Security Payload headers (RFC 4303 section 2).
//!
//! The view reads what is sent in the clear: the Security Parameters Index,
//! which selects the security association, and the sequence number, which
//! anti-replay checks. Everything after them (IV, ciphertext, padding, pad
//! length, next header, ICV) is opaque until the SA decrypts it, and is the
//! view's payload as raw bytes.

use crate::network_endian::{read_u32, write_u32};
use crate::{Error, Result};
use core::fmt;

/// Length of the clear header: SPI and sequence number.
pub const HEADER_LEN: usize = 8;

mod field {
    use crate::{Field, Rest};
    pub const SPI: Field = 0..4;
    pub const SEQUENCE_NUMBER: Field = 4..8;
    pub const PAYLOAD: Rest = 8..;
}

/// A view of an ESP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EspPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EspPacket<T> {
    /// Length of the clear header.
    pub const HEADER_LEN: usize = HEADER_LEN;

    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> EspPacket<T> {
        EspPacket { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<EspPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the 8-byte clear header. Afterwards no
    /// accessor panics.
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

    /// The Security Parameters Index.
    #[inline]
    pub fn spi(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::SPI])
    }

    /// The sequence number (the low 32 bits, with extended sequence numbers).
    #[inline]
    pub fn sequence_number(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::SEQUENCE_NUMBER])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> EspPacket<&'a T> {
    /// IV, ciphertext, trailer and ICV, as raw bytes.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EspPacket<T> {
    /// Sets the Security Parameters Index.
    #[inline]
    pub fn set_spi(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::SPI], value);
    }

    /// Sets the sequence number.
    #[inline]
    pub fn set_sequence_number(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::SEQUENCE_NUMBER], value);
    }

    /// Everything after the clear header, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for EspPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// The clear fields of an ESP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EspRepr {
    /// Security Parameters Index.
    pub spi: u32,
    /// Sequence number.
    pub sequence_number: u32,
}

impl EspRepr {
    /// Reads the clear header. SPI 0 is reserved and never sent (RFC 4303
    /// section 2.1): `Malformed`.
    pub fn parse<T: AsRef<[u8]>>(packet: &EspPacket<T>) -> Result<EspRepr> {
        packet.check_len()?;
        if packet.spi() == 0 {
            return Err(Error::Malformed);
        }
        Ok(EspRepr {
            spi: packet.spi(),
            sequence_number: packet.sequence_number(),
        })
    }

    /// The number of bytes [`emit`](Self::emit) writes: the clear header.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the clear header; the encrypted part is the SA's to write.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut EspPacket<T>) {
        packet.set_spi(self.spi);
        packet.set_sequence_number(self.sequence_number);
    }
}

impl fmt::Display for EspRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ESP(spi={:#010x},seq={:#x})",
            self.spi, self.sequence_number
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ethernet::{EtherType, EthernetFrame};
    use crate::ipv4::Ipv4Packet;
    use crate::IpProtocol;

    /// A real capture: ESP from 190.0.0.1 to 190.0.0.2, SPI 0x6e, sequence
    /// number 0x13, 116 bytes of ESP.
    static ESP_FRAME: [u8; 150] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x00, 0x11, 0x43, 0x4a, 0xd7, 0x0a, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x88, 0x00, 0x00, 0x40, 0x00, 0x40, 0x32, 0xbe, 0x40, 0xbe, 0x00, 0x00, 0x01,
        0xbe, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x6e, 0x00, 0x00, 0x00, 0x13, 0x82, 0xf4, 0x10,
        0x77, 0x04, 0x18, 0xe8, 0xce, 0xdc, 0x45, 0x1b, 0xac, 0x22, 0xbb, 0xda, 0xaf, 0x2a, 0xd2,
        0xc2, 0xe8, 0x31, 0x5b, 0xce, 0x9a, 0x39, 0xda, 0x2a, 0xae, 0xcf, 0x43, 0x37, 0x16, 0x70,
        0xab, 0x7e, 0x7c, 0x46, 0x76, 0xc3, 0xfc, 0xd1, 0x09, 0xc9, 0x90, 0x27, 0x4d, 0xf8, 0x1c,
        0x65, 0x34, 0x9a, 0x40, 0xa0, 0xef, 0x46, 0xb1, 0x7d, 0xa5, 0x05, 0xaf, 0xdd, 0xa8, 0xd0,
        0xba, 0x6e, 0x23, 0xd1, 0xee, 0x1f, 0x10, 0x73, 0x0c, 0x73, 0x71, 0x03, 0xb1, 0x44, 0x5c,
        0x2f, 0x70, 0x85, 0x2f, 0x84, 0x75, 0x12, 0xfb, 0xb0, 0x57, 0xa1, 0x9b, 0xa6, 0x17, 0xba,
        0xe7, 0x09, 0xca, 0x88, 0x36, 0x94, 0x2f, 0x33, 0x34, 0x31, 0x2b, 0x96, 0xd2, 0xa4, 0xe3,
    ];

    fn esp_bytes() -> &'static [u8] {
        let frame = EthernetFrame::new_checked(&ESP_FRAME[..]).unwrap();
        assert_eq!(frame.ethertype(), EtherType::IPV4);
        let ip = Ipv4Packet::new_checked(frame.payload()).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.next_header(), IpProtocol::ESP);
        ip.payload()
    }

    #[test]
    fn deconstruct() {
        let packet = EspPacket::new_checked(esp_bytes()).unwrap();
        assert_eq!(packet.spi(), 0x6e);
        assert_eq!(packet.sequence_number(), 0x13);
        assert_eq!(packet.payload().len(), 108);
        assert_eq!(&packet.payload()[..4], &[0x82, 0xf4, 0x10, 0x77]);
        let repr = EspRepr::parse(&packet).unwrap();
        assert_eq!(
            repr,
            EspRepr {
                spi: 0x6e,
                sequence_number: 0x13
            }
        );
        assert_eq!(repr.to_string(), "ESP(spi=0x0000006e,seq=0x13)");
    }

    #[test]
    fn construct() {
        let repr = EspRepr {
            spi: 0x6e,
            sequence_number: 0x13,
        };
        assert_eq!(repr.buffer_len(), 8);
        let mut bytes = [0u8; 116];
        let mut packet = EspPacket::new_unchecked(&mut bytes[..]);
        repr.emit(&mut packet);
        packet.payload_mut().copy_from_slice(&esp_bytes()[8..]);
        assert_eq!(&bytes[..], esp_bytes());
    }

    #[test]
    fn truncated_and_reserved_spi() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                EspPacket::new_checked(&esp_bytes()[..len]),
                Err(Error::Truncated)
            );
        }
        assert!(EspPacket::new_checked(&esp_bytes()[..8])
            .unwrap()
            .payload()
            .is_empty());
        let zero = [0u8; 8];
        assert_eq!(
            EspRepr::parse(&EspPacket::new_unchecked(&zero[..])),
            Err(Error::Malformed)
        );
    }
}
