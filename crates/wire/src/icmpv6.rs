//! ICMP for IPv6 (RFC 4443): echo, the error messages a router sends, and
//! the type numbers of Neighbor Discovery (RFC 4861) and MLD (RFC 2710,
//! RFC 3810) so that they can be told apart and passed on.
//!
//! Unlike ICMPv4, the checksum covers the IPv6 pseudo-header (RFC 4443
//! section 2.3), so verifying and filling it takes the addresses. The
//! message is the IPv6 payload: the checksum covers the whole buffer.

use crate::checksum;
use crate::ip::IpProtocol;
use crate::network_endian::{read_u16, read_u32, write_u16, write_u32};
use crate::{Error, Result};
use core::fmt;
use core::net::Ipv6Addr;

/// Length of the header: type, code, checksum and the 4-byte rest of
/// header.
pub const HEADER_LEN: usize = 8;

enum_with_unknown! {
    /// ICMPv6 message type (IANA "ICMPv6 Type Numbers").
    pub enum Icmpv6Message(u8) {
        /// Destination Unreachable (RFC 4443 section 3.1).
        DstUnreachable = 1,
        /// Packet Too Big (RFC 4443 section 3.2).
        PktTooBig = 2,
        /// Time Exceeded (RFC 4443 section 3.3).
        TimeExceeded = 3,
        /// Parameter Problem (RFC 4443 section 3.4).
        ParamProblem = 4,
        /// Echo Request (RFC 4443 section 4.1).
        EchoRequest = 128,
        /// Echo Reply (RFC 4443 section 4.2).
        EchoReply = 129,
        /// Multicast Listener Query (RFC 2710).
        MldQuery = 130,
        /// Multicast Listener Report (RFC 2710).
        MldReport = 131,
        /// Multicast Listener Done (RFC 2710).
        MldDone = 132,
        /// Router Solicitation (RFC 4861).
        RouterSolicit = 133,
        /// Router Advertisement (RFC 4861).
        RouterAdvert = 134,
        /// Neighbor Solicitation (RFC 4861).
        NeighborSolicit = 135,
        /// Neighbor Advertisement (RFC 4861).
        NeighborAdvert = 136,
        /// Redirect (RFC 4861).
        Redirect = 137,
        /// Version 2 Multicast Listener Report (RFC 3810).
        MldReportV2 = 143,
    }
}

impl Icmpv6Message {
    /// True for error messages (types below 128, RFC 4443 section 2.1),
    /// about which no ICMPv6 error may be sent (section 2.4 (e)).
    #[inline]
    pub fn is_error(self) -> bool {
        u8::from(self) < 128
    }

    /// True for the five Neighbor Discovery messages (RFC 4861).
    #[inline]
    pub fn is_ndp(self) -> bool {
        matches!(u8::from(self), 133..=137)
    }
}

impl fmt::Display for Icmpv6Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Icmpv6Message::DstUnreachable => f.write_str("destination unreachable"),
            Icmpv6Message::PktTooBig => f.write_str("packet too big"),
            Icmpv6Message::TimeExceeded => f.write_str("time exceeded"),
            Icmpv6Message::ParamProblem => f.write_str("parameter problem"),
            Icmpv6Message::EchoRequest => f.write_str("echo request"),
            Icmpv6Message::EchoReply => f.write_str("echo reply"),
            Icmpv6Message::MldQuery => f.write_str("multicast listener query"),
            Icmpv6Message::MldReport => f.write_str("multicast listener report"),
            Icmpv6Message::MldDone => f.write_str("multicast listener done"),
            Icmpv6Message::RouterSolicit => f.write_str("router solicitation"),
            Icmpv6Message::RouterAdvert => f.write_str("router advertisement"),
            Icmpv6Message::NeighborSolicit => f.write_str("neighbor solicitation"),
            Icmpv6Message::NeighborAdvert => f.write_str("neighbor advertisement"),
            Icmpv6Message::Redirect => f.write_str("redirect"),
            Icmpv6Message::MldReportV2 => f.write_str("multicast listener report v2"),
            Icmpv6Message::Unknown(t) => write!(f, "type {t}"),
        }
    }
}

enum_with_unknown! {
    /// Codes of Destination Unreachable (RFC 4443 section 3.1).
    pub enum Icmpv6DstUnreachable(u8) {
        /// No route to destination.
        NoRoute = 0,
        /// Communication administratively prohibited.
        AdminProhibit = 1,
        /// Beyond scope of source address.
        BeyondScope = 2,
        /// Address unreachable.
        AddrUnreachable = 3,
        /// Port unreachable.
        PortUnreachable = 4,
        /// Source address failed ingress/egress policy.
        FailedPolicy = 5,
        /// Reject route to destination.
        RejectRoute = 6,
    }
}

enum_with_unknown! {
    /// Codes of Time Exceeded (RFC 4443 section 3.3).
    pub enum Icmpv6TimeExceeded(u8) {
        /// Hop limit exceeded in transit.
        HopLimitExceeded = 0,
        /// Fragment reassembly time exceeded.
        FragReassemExceeded = 1,
    }
}

enum_with_unknown! {
    /// Codes of Parameter Problem (RFC 4443 section 3.4).
    pub enum Icmpv6ParamProblem(u8) {
        /// Erroneous header field encountered.
        ErroneousHdrField = 0,
        /// Unrecognized Next Header type encountered.
        UnrecognizedNxtHdr = 1,
        /// Unrecognized IPv6 option encountered.
        UnrecognizedOption = 2,
    }
}

mod field {
    use crate::{Field, Rest};
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    pub const REST_OF_HEADER: Field = 4..8;
    pub const ECHO_IDENT: Field = 4..6;
    pub const ECHO_SEQNO: Field = 6..8;
    pub const MTU: Field = 4..8;
    pub const POINTER: Field = 4..8;
    pub const PAYLOAD: Rest = 8..;
}

/// A view of an ICMPv6 message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// Length of the header.
    pub const HEADER_LEN: usize = HEADER_LEN;

    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Icmpv6Packet<T> {
        Icmpv6Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Icmpv6Packet<T>> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the 8-byte header. Afterwards no
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

    /// The message type.
    #[inline]
    pub fn msg_type(&self) -> Icmpv6Message {
        Icmpv6Message::from(self.buffer.as_ref()[field::TYPE])
    }

    /// The message code, whose meaning depends on the type.
    #[inline]
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// The checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// The 4 bytes after the checksum, whose meaning depends on the type.
    #[inline]
    pub fn rest_of_header(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::REST_OF_HEADER])
    }

    /// Identifier of an echo request or reply.
    #[inline]
    pub fn echo_ident(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::ECHO_IDENT])
    }

    /// Sequence number of an echo request or reply.
    #[inline]
    pub fn echo_seq_no(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::ECHO_SEQNO])
    }

    /// MTU of a Packet Too Big.
    #[inline]
    pub fn pkt_too_big_mtu(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::MTU])
    }

    /// Pointer of a Parameter Problem: offset of the bad octet in the quoted
    /// packet.
    #[inline]
    pub fn param_problem_ptr(&self) -> u32 {
        read_u32(&self.buffer.as_ref()[field::POINTER])
    }

    #[inline]
    fn sum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> Option<u16> {
        let data = self.buffer.as_ref();
        let len = u32::try_from(data.len()).ok()?;
        let pseudo = checksum::pseudo_header_v6(src, dst, IpProtocol::ICMPV6, len);
        Some(checksum::combine(&[pseudo, checksum::data(data)]))
    }

    /// True if the checksum is right for this message, the whole buffer,
    /// sent from `src` to `dst`.
    #[inline]
    pub fn verify_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        self.sum(src, dst) == Some(!0)
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Icmpv6Packet<&'a T> {
    /// Everything after the header: echo data, the quoted packet of an
    /// error, or the body of an NDP message.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    /// Sets the message type.
    #[inline]
    pub fn set_msg_type(&mut self, value: Icmpv6Message) {
        self.buffer.as_mut()[field::TYPE] = value.into();
    }

    /// Sets the message code.
    #[inline]
    pub fn set_msg_code(&mut self, value: u8) {
        self.buffer.as_mut()[field::CODE] = value;
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::CHECKSUM], value);
    }

    /// Sets the 4 bytes after the checksum.
    #[inline]
    pub fn set_rest_of_header(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::REST_OF_HEADER], value);
    }

    /// Sets the echo identifier.
    #[inline]
    pub fn set_echo_ident(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::ECHO_IDENT], value);
    }

    /// Sets the echo sequence number.
    #[inline]
    pub fn set_echo_seq_no(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::ECHO_SEQNO], value);
    }

    /// Sets the Packet Too Big MTU.
    #[inline]
    pub fn set_pkt_too_big_mtu(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::MTU], value);
    }

    /// Sets the Parameter Problem pointer.
    #[inline]
    pub fn set_param_problem_ptr(&mut self, value: u32) {
        write_u32(&mut self.buffer.as_mut()[field::POINTER], value);
    }

    /// Computes the checksum over the pseudo-header and the whole buffer,
    /// and writes it.
    ///
    /// # Panics
    /// If the buffer is longer than 4 GiB.
    #[inline]
    pub fn fill_checksum(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        self.set_checksum(0);
        let sum = self
            .sum(src, dst)
            .expect("ICMPv6 message longer than 4 GiB");
        self.set_checksum(!sum);
    }

    /// Everything after the header, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Icmpv6Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An ICMPv6 message of a kind a router answers or sends.
///
/// The `data` of an error is the quoted part of the offending packet, as
/// raw bytes: as much as fits without the error exceeding the minimum IPv6
/// MTU (RFC 4443 section 2.4 (c)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv6Repr<'a> {
    /// Echo Request.
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Echo data.
        data: &'a [u8],
    },
    /// Echo Reply.
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Echo data.
        data: &'a [u8],
    },
    /// Destination Unreachable.
    DstUnreachable {
        /// The code.
        reason: Icmpv6DstUnreachable,
        /// The quoted packet.
        data: &'a [u8],
    },
    /// Packet Too Big.
    PktTooBig {
        /// MTU of the next-hop link.
        mtu: u32,
        /// The quoted packet.
        data: &'a [u8],
    },
    /// Time Exceeded.
    TimeExceeded {
        /// The code.
        reason: Icmpv6TimeExceeded,
        /// The quoted packet.
        data: &'a [u8],
    },
    /// Parameter Problem.
    ParamProblem {
        /// The code.
        reason: Icmpv6ParamProblem,
        /// Offset of the bad octet in the quoted packet.
        pointer: u32,
        /// The quoted packet.
        data: &'a [u8],
    },
}

impl<'a> Icmpv6Repr<'a> {
    /// Reads a message sent from `src` to `dst`. A bad checksum is
    /// `Malformed`; a type without a variant here (NDP, MLD) is
    /// `Unsupported`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        src: Ipv6Addr,
        dst: Ipv6Addr,
        packet: &Icmpv6Packet<&'a T>,
    ) -> Result<Icmpv6Repr<'a>> {
        packet.check_len()?;
        if !packet.verify_checksum(src, dst) {
            return Err(Error::Malformed);
        }
        let data = packet.payload();
        let code = packet.msg_code();
        Ok(match packet.msg_type() {
            Icmpv6Message::EchoRequest if code == 0 => Icmpv6Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            },
            Icmpv6Message::EchoReply if code == 0 => Icmpv6Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            },
            Icmpv6Message::DstUnreachable => Icmpv6Repr::DstUnreachable {
                reason: code.into(),
                data,
            },
            Icmpv6Message::PktTooBig if code == 0 => Icmpv6Repr::PktTooBig {
                mtu: packet.pkt_too_big_mtu(),
                data,
            },
            Icmpv6Message::TimeExceeded => Icmpv6Repr::TimeExceeded {
                reason: code.into(),
                data,
            },
            Icmpv6Message::ParamProblem => Icmpv6Repr::ParamProblem {
                reason: code.into(),
                pointer: packet.param_problem_ptr(),
                data,
            },
            _ => return Err(Error::Unsupported),
        })
    }

    /// The data after the header.
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        match *self {
            Icmpv6Repr::EchoRequest { data, .. }
            | Icmpv6Repr::EchoReply { data, .. }
            | Icmpv6Repr::DstUnreachable { data, .. }
            | Icmpv6Repr::PktTooBig { data, .. }
            | Icmpv6Repr::TimeExceeded { data, .. }
            | Icmpv6Repr::ParamProblem { data, .. } => data,
        }
    }

    /// The number of bytes [`emit`](Self::emit) writes: header and data.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data().len()
    }

    /// Writes the message and its checksum for a packet from `src` to
    /// `dst`. Give it a buffer of exactly [`buffer_len`](Self::buffer_len)
    /// bytes: the checksum covers the whole buffer.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        src: Ipv6Addr,
        dst: Ipv6Addr,
        packet: &mut Icmpv6Packet<T>,
    ) {
        let (msg_type, code, rest) = match *self {
            Icmpv6Repr::EchoRequest { ident, seq_no, .. } => (
                Icmpv6Message::EchoRequest,
                0,
                (u32::from(ident) << 16) | u32::from(seq_no),
            ),
            Icmpv6Repr::EchoReply { ident, seq_no, .. } => (
                Icmpv6Message::EchoReply,
                0,
                (u32::from(ident) << 16) | u32::from(seq_no),
            ),
            Icmpv6Repr::DstUnreachable { reason, .. } => {
                (Icmpv6Message::DstUnreachable, reason.into(), 0)
            }
            Icmpv6Repr::PktTooBig { mtu, .. } => (Icmpv6Message::PktTooBig, 0, mtu),
            Icmpv6Repr::TimeExceeded { reason, .. } => {
                (Icmpv6Message::TimeExceeded, reason.into(), 0)
            }
            Icmpv6Repr::ParamProblem {
                reason, pointer, ..
            } => (Icmpv6Message::ParamProblem, reason.into(), pointer),
        };
        packet.set_msg_type(msg_type);
        packet.set_msg_code(code);
        packet.set_rest_of_header(rest);
        let data = self.data();
        packet.payload_mut()[..data.len()].copy_from_slice(data);
        packet.fill_checksum(src, dst);
    }
}

impl fmt::Display for Icmpv6Repr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Icmpv6Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => {
                write!(
                    f,
                    "ICMP6 echo request, id {ident}, seq {seq_no}, length {}",
                    data.len()
                )
            }
            Icmpv6Repr::EchoReply {
                ident,
                seq_no,
                data,
            } => {
                write!(
                    f,
                    "ICMP6 echo reply, id {ident}, seq {seq_no}, length {}",
                    data.len()
                )
            }
            Icmpv6Repr::DstUnreachable { reason, .. } => write!(f, "ICMP6 unreachable, {reason:?}"),
            Icmpv6Repr::PktTooBig { mtu, .. } => write!(f, "ICMP6 packet too big, mtu {mtu}"),
            Icmpv6Repr::TimeExceeded { reason, .. } => write!(f, "ICMP6 time exceeded, {reason:?}"),
            Icmpv6Repr::ParamProblem {
                reason, pointer, ..
            } => {
                write!(f, "ICMP6 parameter problem, {reason:?}, pointer {pointer}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv6::tests::{DST, ECHO_REQUEST as IP_ECHO_REQUEST, SRC};
    use crate::ipv6::Ipv6Packet;

    fn echo_request() -> &'static [u8] {
        &IP_ECHO_REQUEST[40..]
    }

    /// An echo request from `ping6 ::1` on macOS, IPv6 header included
    /// (captured with tcpdump on lo0).
    static LOOPBACK_ECHO: [u8; 56] = [
        0x60, 0x00, 0xa1, 0x82, 0x00, 0x10, 0x3a, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x80, 0x00, 0x99, 0xb9, 0x4d,
        0x46, 0x00, 0x00, 0x53, 0xdf, 0x7d, 0x05, 0x00, 0x01, 0xc7, 0xcd,
    ];

    /// Linux's port unreachable for a DNS query over IPv6, quoting it whole.
    static PORT_UNREACHABLE: [u8; 125] = [
        0x60, 0x09, 0xdd, 0x01, 0x00, 0x55, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x04, 0x41, 0xa5, 0x00,
        0x00, 0x00, 0x00, 0x60, 0x08, 0xf0, 0x1a, 0x00, 0x25, 0x11, 0x40, 0x20, 0x01, 0x0d, 0xb8,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d,
        0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xcf, 0x08,
        0x00, 0x35, 0x00, 0x25, 0xeb, 0x58, 0x1a, 0x2b, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x07, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x03, 0x63, 0x6f, 0x6d,
        0x00, 0x00, 0x01, 0x00, 0x01,
    ];

    /// A Neighbor Solicitation for 2001:db8::2, to its solicited-node
    /// multicast address, with a source link-layer address option.
    static NEIGHBOR_SOLICIT: [u8; 72] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x00, 0x00, 0x02, 0x87, 0x00, 0xbe, 0x16, 0x00,
        0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x02, 0x01, 0x01, 0x02, 0x00, 0x5e, 0x10, 0x00, 0x01,
    ];

    #[test]
    fn deconstruct_echo() {
        let packet = Icmpv6Packet::new_checked(echo_request()).unwrap();
        assert_eq!(packet.msg_type(), Icmpv6Message::EchoRequest);
        assert_eq!(packet.msg_code(), 0);
        assert_eq!(packet.checksum(), 0xd0a6);
        assert_eq!(packet.echo_ident(), 0x110b);
        assert_eq!(packet.echo_seq_no(), 1);
        assert_eq!(packet.rest_of_header(), 0x110b_0001);
        assert!(packet.verify_checksum(SRC, DST));
        // The sum is symmetric in the addresses; another address breaks it.
        assert!(!packet.verify_checksum(SRC, Ipv6Addr::LOCALHOST));
        assert_eq!(packet.payload().len(), 16);
        let repr = Icmpv6Repr::parse(SRC, DST, &packet).unwrap();
        assert_eq!(
            repr,
            Icmpv6Repr::EchoRequest {
                ident: 0x110b,
                seq_no: 1,
                data: &echo_request()[8..]
            }
        );
        assert_eq!(
            repr.to_string(),
            "ICMP6 echo request, id 4363, seq 1, length 16"
        );
        assert_eq!(
            Icmpv6Repr::parse(SRC, Ipv6Addr::LOCALHOST, &packet),
            Err(Error::Malformed)
        );

        let ip = Ipv6Packet::new_checked(&LOOPBACK_ECHO[..]).unwrap();
        let packet = Icmpv6Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(packet.echo_ident(), 0x4d46);
        assert_eq!(packet.echo_seq_no(), 0);
        assert!(packet.verify_checksum(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST));
    }

    #[test]
    fn construct_echo() {
        let repr = Icmpv6Repr::EchoRequest {
            ident: 0x110b,
            seq_no: 1,
            data: &echo_request()[8..],
        };
        assert_eq!(repr.buffer_len(), 24);
        let mut bytes = [0xa5u8; 24];
        repr.emit(SRC, DST, &mut Icmpv6Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..], echo_request());

        let reply = Icmpv6Repr::EchoReply {
            ident: 0x110b,
            seq_no: 1,
            data: &echo_request()[8..],
        };
        reply.emit(DST, SRC, &mut Icmpv6Packet::new_unchecked(&mut bytes[..]));
        let packet = Icmpv6Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.msg_type(), Icmpv6Message::EchoReply);
        assert_eq!(Icmpv6Repr::parse(DST, SRC, &packet), Ok(reply));
    }

    #[test]
    fn port_unreachable() {
        let ip = Ipv6Packet::new_checked(&PORT_UNREACHABLE[..]).unwrap();
        let packet = Icmpv6Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(packet.msg_type(), Icmpv6Message::DstUnreachable);
        assert!(packet.msg_type().is_error());
        assert_eq!(
            Icmpv6DstUnreachable::from(packet.msg_code()),
            Icmpv6DstUnreachable::PortUnreachable
        );
        assert_eq!(packet.checksum(), 0x41a5);
        assert!(packet.verify_checksum(ip.src_addr(), ip.dst_addr()));
        let quoted = Ipv6Packet::new_checked(packet.payload()).unwrap();
        assert_eq!(quoted.next_header(), IpProtocol::UDP);
        assert_eq!(quoted.src_addr(), SRC);

        let repr = Icmpv6Repr::parse(ip.src_addr(), ip.dst_addr(), &packet).unwrap();
        assert_eq!(
            repr,
            Icmpv6Repr::DstUnreachable {
                reason: Icmpv6DstUnreachable::PortUnreachable,
                data: packet.payload()
            }
        );
        let mut bytes = [0u8; 85];
        repr.emit(
            ip.src_addr(),
            ip.dst_addr(),
            &mut Icmpv6Packet::new_unchecked(&mut bytes[..]),
        );
        assert_eq!(&bytes[..], ip.payload());
    }

    #[test]
    fn neighbor_solicitation_is_ndp() {
        let ip = Ipv6Packet::new_checked(&NEIGHBOR_SOLICIT[..]).unwrap();
        assert_eq!(ip.hop_limit(), 255);
        let packet = Icmpv6Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(packet.msg_type(), Icmpv6Message::NeighborSolicit);
        assert!(packet.msg_type().is_ndp() && !packet.msg_type().is_error());
        assert!(packet.verify_checksum(ip.src_addr(), ip.dst_addr()));
        assert_eq!(&packet.payload()[..16], &DST.octets());
        assert_eq!(
            Icmpv6Repr::parse(ip.src_addr(), ip.dst_addr(), &packet),
            Err(Error::Unsupported)
        );
    }

    #[test]
    fn errors_round_trip() {
        let quoted = &PORT_UNREACHABLE[48..96];
        let reprs = [
            Icmpv6Repr::PktTooBig {
                mtu: 1280,
                data: quoted,
            },
            Icmpv6Repr::TimeExceeded {
                reason: Icmpv6TimeExceeded::HopLimitExceeded,
                data: quoted,
            },
            Icmpv6Repr::ParamProblem {
                reason: Icmpv6ParamProblem::UnrecognizedNxtHdr,
                pointer: 6,
                data: quoted,
            },
            Icmpv6Repr::DstUnreachable {
                reason: Icmpv6DstUnreachable::NoRoute,
                data: quoted,
            },
        ];
        for repr in reprs {
            let mut bytes = [0u8; 56];
            repr.emit(DST, SRC, &mut Icmpv6Packet::new_unchecked(&mut bytes[..]));
            let packet = Icmpv6Packet::new_checked(&bytes[..]).unwrap();
            assert!(packet.msg_type().is_error());
            assert_eq!(Icmpv6Repr::parse(DST, SRC, &packet), Ok(repr));
        }
        let mut bytes = [0u8; 56];
        reprs[0].emit(DST, SRC, &mut Icmpv6Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(
            Icmpv6Packet::new_unchecked(&bytes[..]).pkt_too_big_mtu(),
            1280
        );
        assert_eq!(reprs[0].to_string(), "ICMP6 packet too big, mtu 1280");
        reprs[2].emit(DST, SRC, &mut Icmpv6Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(
            Icmpv6Packet::new_unchecked(&bytes[..]).param_problem_ptr(),
            6
        );
    }

    #[test]
    fn setters_and_truncated() {
        let mut bytes = [0u8; 8];
        let mut packet = Icmpv6Packet::new_unchecked(&mut bytes[..]);
        packet.set_msg_type(Icmpv6Message::PktTooBig);
        packet.set_msg_code(0);
        packet.set_pkt_too_big_mtu(1500);
        assert_eq!(packet.pkt_too_big_mtu(), 1500);
        packet.set_param_problem_ptr(40);
        assert_eq!(packet.param_problem_ptr(), 40);
        packet.set_echo_ident(7);
        packet.set_echo_seq_no(9);
        assert_eq!(packet.rest_of_header(), 0x0007_0009);
        packet.set_rest_of_header(1280);
        packet.set_checksum(1);
        assert_eq!(packet.checksum(), 1);
        packet.fill_checksum(SRC, DST);
        assert!(packet.verify_checksum(SRC, DST));
        assert!(packet.payload_mut().is_empty());

        for len in 0..HEADER_LEN {
            assert_eq!(
                Icmpv6Packet::new_checked(&echo_request()[..len]),
                Err(Error::Truncated)
            );
        }
        assert_eq!(Icmpv6Message::from(200), Icmpv6Message::Unknown(200));
        assert!(!Icmpv6Message::Unknown(200).is_error());
        assert!(Icmpv6Message::Unknown(100).is_error());
        assert_eq!(u8::from(Icmpv6Message::Redirect), 137);
        assert_eq!(
            Icmpv6Message::NeighborAdvert.to_string(),
            "neighbor advertisement"
        );
    }
}
