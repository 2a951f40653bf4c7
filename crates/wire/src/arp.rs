//! ARP, the Address Resolution Protocol (RFC 826), as bricks answers it for
//! its interfaces and uses it to find next hops.
//!
//! The view reads any hardware and protocol address lengths; the `Repr`
//! covers only Ethernet hardware addresses with IPv4 protocol addresses,
//! which is all that exists on the links bricks forwards between.

use crate::ethernet::{EtherType, EthernetAddress};
use crate::network_endian::{read_u16, write_u16};
use crate::{Error, Result};
use core::fmt;
use core::net::Ipv4Addr;

enum_with_unknown! {
    /// ARP hardware type (IANA "Hardware Types").
    pub enum ArpHardware(u16) {
        /// Ethernet (10Mb), the only type on Ethernet links.
        Ethernet = 1,
    }
}

enum_with_unknown! {
    /// ARP opcode (RFC 826; RFC 5494 for the registry).
    pub enum ArpOperation(u16) {
        /// "Who has this protocol address?"
        Request = 1,
        /// "This protocol address is at this hardware address."
        Reply = 2,
    }
}

mod field {
    use crate::Field;
    pub const HTYPE: Field = 0..2;
    pub const PTYPE: Field = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Field = 6..8;

    #[inline(always)]
    pub const fn sha(hlen: u8, _plen: u8) -> Field {
        OPER.end..OPER.end + hlen as usize
    }
    #[inline(always)]
    pub const fn spa(hlen: u8, plen: u8) -> Field {
        let start = sha(hlen, plen).end;
        start..start + plen as usize
    }
    #[inline(always)]
    pub const fn tha(hlen: u8, plen: u8) -> Field {
        let start = spa(hlen, plen).end;
        start..start + hlen as usize
    }
    #[inline(always)]
    pub const fn tpa(hlen: u8, plen: u8) -> Field {
        let start = tha(hlen, plen).end;
        start..start + plen as usize
    }
}

/// Length of the fixed part, before the addresses.
pub const FIXED_LEN: usize = field::OPER.end;
/// Length of an Ethernet/IPv4 ARP packet.
pub const ETHERNET_IPV4_LEN: usize = FIXED_LEN + 2 * (6 + 4);

/// A view of an ARP packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> ArpPacket<T> {
        ArpPacket { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<ArpPacket<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the fixed part and the four addresses
    /// its length fields announce. Afterwards no accessor panics.
    #[inline]
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < FIXED_LEN {
            return Err(Error::Truncated);
        }
        if len < field::tpa(self.hardware_len(), self.protocol_len()).end {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Gives the buffer back.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Hardware type.
    #[inline]
    pub fn hardware_type(&self) -> ArpHardware {
        ArpHardware::from(read_u16(&self.buffer.as_ref()[field::HTYPE]))
    }

    /// Protocol type, an EtherType.
    #[inline]
    pub fn protocol_type(&self) -> EtherType {
        EtherType(read_u16(&self.buffer.as_ref()[field::PTYPE]))
    }

    /// Length of a hardware address, in bytes.
    #[inline]
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Length of a protocol address, in bytes.
    #[inline]
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// Opcode.
    #[inline]
    pub fn operation(&self) -> ArpOperation {
        ArpOperation::from(read_u16(&self.buffer.as_ref()[field::OPER]))
    }

    /// Sender hardware address.
    #[inline]
    pub fn source_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::sha(self.hardware_len(), self.protocol_len())]
    }

    /// Sender protocol address.
    #[inline]
    pub fn source_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::spa(self.hardware_len(), self.protocol_len())]
    }

    /// Target hardware address.
    #[inline]
    pub fn target_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::tha(self.hardware_len(), self.protocol_len())]
    }

    /// Target protocol address.
    #[inline]
    pub fn target_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[field::tpa(self.hardware_len(), self.protocol_len())]
    }

    /// True if the packet carries Ethernet hardware addresses and IPv4
    /// protocol addresses, the only kind [`ArpRepr`] represents.
    #[inline]
    pub fn is_ethernet_ipv4(&self) -> bool {
        self.hardware_type() == ArpHardware::Ethernet
            && self.protocol_type() == EtherType::IPV4
            && self.hardware_len() == 6
            && self.protocol_len() == 4
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Sets the hardware type.
    #[inline]
    pub fn set_hardware_type(&mut self, value: ArpHardware) {
        write_u16(&mut self.buffer.as_mut()[field::HTYPE], value.into());
    }

    /// Sets the protocol type.
    #[inline]
    pub fn set_protocol_type(&mut self, value: EtherType) {
        write_u16(&mut self.buffer.as_mut()[field::PTYPE], value.0);
    }

    /// Sets the hardware address length; call `check_len` again afterwards.
    #[inline]
    pub fn set_hardware_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::HLEN] = value;
    }

    /// Sets the protocol address length; call `check_len` again afterwards.
    #[inline]
    pub fn set_protocol_len(&mut self, value: u8) {
        self.buffer.as_mut()[field::PLEN] = value;
    }

    /// Sets the opcode.
    #[inline]
    pub fn set_operation(&mut self, value: ArpOperation) {
        write_u16(&mut self.buffer.as_mut()[field::OPER], value.into());
    }

    /// Sets the sender hardware address.
    ///
    /// # Panics
    /// If `value` is not `hardware_len()` bytes long.
    #[inline]
    pub fn set_source_hardware_addr(&mut self, value: &[u8]) {
        let range = field::sha(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[range].copy_from_slice(value);
    }

    /// Sets the sender protocol address.
    ///
    /// # Panics
    /// If `value` is not `protocol_len()` bytes long.
    #[inline]
    pub fn set_source_protocol_addr(&mut self, value: &[u8]) {
        let range = field::spa(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[range].copy_from_slice(value);
    }

    /// Sets the target hardware address.
    ///
    /// # Panics
    /// If `value` is not `hardware_len()` bytes long.
    #[inline]
    pub fn set_target_hardware_addr(&mut self, value: &[u8]) {
        let range = field::tha(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[range].copy_from_slice(value);
    }

    /// Sets the target protocol address.
    ///
    /// # Panics
    /// If `value` is not `protocol_len()` bytes long.
    #[inline]
    pub fn set_target_protocol_addr(&mut self, value: &[u8]) {
        let range = field::tpa(self.hardware_len(), self.protocol_len());
        self.buffer.as_mut()[range].copy_from_slice(value);
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for ArpPacket<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An ARP packet of a kind bricks speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArpRepr {
    /// Ethernet hardware addresses, IPv4 protocol addresses.
    EthernetIpv4 {
        /// Request, reply, or another opcode.
        operation: ArpOperation,
        /// Sender hardware address.
        source_hardware_addr: EthernetAddress,
        /// Sender protocol address.
        source_protocol_addr: Ipv4Addr,
        /// Target hardware address (all zeros in a request).
        target_hardware_addr: EthernetAddress,
        /// Target protocol address.
        target_protocol_addr: Ipv4Addr,
    },
}

impl ArpRepr {
    /// Reads an Ethernet/IPv4 ARP packet; any other kind is
    /// [`Error::Unsupported`].
    pub fn parse<T: AsRef<[u8]>>(packet: &ArpPacket<T>) -> Result<ArpRepr> {
        packet.check_len()?;
        if !packet.is_ethernet_ipv4() {
            return Err(Error::Unsupported);
        }
        let data = packet.buffer.as_ref();
        let mac = |range: crate::Field| {
            let b = &data[range];
            EthernetAddress([b[0], b[1], b[2], b[3], b[4], b[5]])
        };
        let ip = |range: crate::Field| {
            let b = &data[range];
            Ipv4Addr::new(b[0], b[1], b[2], b[3])
        };
        Ok(ArpRepr::EthernetIpv4 {
            operation: packet.operation(),
            source_hardware_addr: mac(field::sha(6, 4)),
            source_protocol_addr: ip(field::spa(6, 4)),
            target_hardware_addr: mac(field::tha(6, 4)),
            target_protocol_addr: ip(field::tpa(6, 4)),
        })
    }

    /// The number of bytes [`emit`](Self::emit) writes.
    pub const fn buffer_len(&self) -> usize {
        match self {
            ArpRepr::EthernetIpv4 { .. } => ETHERNET_IPV4_LEN,
        }
    }

    /// Writes the packet.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ArpPacket<T>) {
        match *self {
            ArpRepr::EthernetIpv4 {
                operation,
                source_hardware_addr,
                source_protocol_addr,
                target_hardware_addr,
                target_protocol_addr,
            } => {
                packet.set_hardware_type(ArpHardware::Ethernet);
                packet.set_protocol_type(EtherType::IPV4);
                packet.set_hardware_len(6);
                packet.set_protocol_len(4);
                packet.set_operation(operation);
                packet.set_source_hardware_addr(&source_hardware_addr.0);
                packet.set_source_protocol_addr(&source_protocol_addr.octets());
                packet.set_target_hardware_addr(&target_hardware_addr.0);
                packet.set_target_protocol_addr(&target_protocol_addr.octets());
            }
        }
    }
}

impl fmt::Display for ArpRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ArpRepr::EthernetIpv4 {
                operation,
                source_hardware_addr,
                source_protocol_addr,
                target_hardware_addr,
                target_protocol_addr,
            } => match operation {
                ArpOperation::Request => {
                    write!(
                        f,
                        "ARP who-has {target_protocol_addr} tell {source_protocol_addr}"
                    )
                }
                ArpOperation::Reply => {
                    write!(f, "ARP {source_protocol_addr} is-at {source_hardware_addr}")
                }
                ArpOperation::Unknown(op) => write!(
                    f,
                    "ARP op {op} {source_hardware_addr}/{source_protocol_addr} -> \
                     {target_hardware_addr}/{target_protocol_addr}"
                ),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ethernet::tests::ARP_REQUEST_FRAME;

    /// The reply to `ARP_REQUEST_FRAME`, as Linux sent it.
    static ARP_REPLY: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, 0x02, 0x00, 0x5e, 0x10, 0x00, 0x02, 0xc0,
        0x00, 0x02, 0x02, 0x02, 0x00, 0x5e, 0x10, 0x00, 0x01, 0xc0, 0x00, 0x02, 0x01,
    ];

    const A_MAC: EthernetAddress = EthernetAddress([0x02, 0x00, 0x5e, 0x10, 0x00, 0x01]);
    const B_MAC: EthernetAddress = EthernetAddress([0x02, 0x00, 0x5e, 0x10, 0x00, 0x02]);
    const A_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
    const B_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

    fn request_repr() -> ArpRepr {
        ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr: A_MAC,
            source_protocol_addr: A_IP,
            target_hardware_addr: EthernetAddress::UNSPECIFIED,
            target_protocol_addr: B_IP,
        }
    }

    #[test]
    fn deconstruct() {
        let packet = ArpPacket::new_checked(&ARP_REQUEST_FRAME[14..]).unwrap();
        assert_eq!(packet.hardware_type(), ArpHardware::Ethernet);
        assert_eq!(packet.protocol_type(), EtherType::IPV4);
        assert_eq!(packet.hardware_len(), 6);
        assert_eq!(packet.protocol_len(), 4);
        assert_eq!(packet.operation(), ArpOperation::Request);
        assert_eq!(packet.source_hardware_addr(), &A_MAC.0);
        assert_eq!(packet.source_protocol_addr(), &[192, 0, 2, 1]);
        assert_eq!(packet.target_hardware_addr(), &[0; 6]);
        assert_eq!(packet.target_protocol_addr(), &[192, 0, 2, 2]);
        assert!(packet.is_ethernet_ipv4());
        assert_eq!(ArpRepr::parse(&packet), Ok(request_repr()));

        let reply = ArpRepr::parse(&ArpPacket::new_checked(&ARP_REPLY[..]).unwrap()).unwrap();
        assert_eq!(
            reply,
            ArpRepr::EthernetIpv4 {
                operation: ArpOperation::Reply,
                source_hardware_addr: B_MAC,
                source_protocol_addr: B_IP,
                target_hardware_addr: A_MAC,
                target_protocol_addr: A_IP,
            }
        );
        assert_eq!(reply.to_string(), "ARP 192.0.2.2 is-at 02:00:5e:10:00:02");
        assert_eq!(
            request_repr().to_string(),
            "ARP who-has 192.0.2.2 tell 192.0.2.1"
        );
    }

    #[test]
    fn construct() {
        let repr = request_repr();
        assert_eq!(repr.buffer_len(), 28);
        let mut bytes = [0xffu8; 28];
        repr.emit(&mut ArpPacket::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, ARP_REQUEST_FRAME[14..]);
    }

    #[test]
    fn truncated_and_overlong() {
        for len in 0..28 {
            assert_eq!(
                ArpPacket::new_checked(&ARP_REPLY[..len]),
                Err(Error::Truncated)
            );
        }
        // Ethernet padding after the packet is ignored.
        let mut padded = [0u8; 46];
        padded[..28].copy_from_slice(&ARP_REPLY);
        let packet = ArpPacket::new_checked(&padded[..]).unwrap();
        assert_eq!(packet.target_protocol_addr(), &[192, 0, 2, 1]);
        assert!(ArpRepr::parse(&packet).is_ok());
    }

    #[test]
    fn other_address_kinds() {
        // Lengths are taken from the packet: hlen 8, plen 16 needs 56 bytes.
        let mut bytes = [0u8; 56];
        bytes[..8].copy_from_slice(&[0x00, 0x06, 0x86, 0xdd, 8, 16, 0x00, 0x03]);
        let packet = ArpPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.hardware_type(), ArpHardware::Unknown(6));
        assert_eq!(packet.operation(), ArpOperation::Unknown(3));
        assert_eq!(packet.target_protocol_addr().len(), 16);
        assert_eq!(ArpRepr::parse(&packet), Err(Error::Unsupported));
        assert_eq!(ArpPacket::new_checked(&bytes[..55]), Err(Error::Truncated));
        // The largest lengths cannot overflow the offset arithmetic.
        let huge = [0x00, 0x01, 0x08, 0x00, 0xff, 0xff, 0x00, 0x01];
        assert_eq!(ArpPacket::new_checked(&huge[..]), Err(Error::Truncated));
    }
}
