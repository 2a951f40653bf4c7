//! ICMP for IPv4 (RFC 792): echo, and the error messages a router sends
//! (RFC 1812 section 4.3): Destination Unreachable (with the next-hop MTU
//! of RFC 1191 for "fragmentation needed"), Time Exceeded, Parameter
//! Problem, Redirect.
//!
//! ICMP has no length field: the message is the IP payload, and the
//! checksum covers the whole buffer given to the view.

use crate::checksum;
use crate::network_endian::{read_u16, read_u32, write_u16, write_u32};
use crate::{Error, Result};
use core::fmt;
use core::net::Ipv4Addr;

/// Length of the header: type, code, checksum and the 4-byte rest of
/// header.
pub const HEADER_LEN: usize = 8;

/// The largest IP datagram carrying an ICMP error: the error quotes as much
/// of the offending datagram as fits in 576 bytes (RFC 1812 section
/// 4.3.2.3).
pub const MAX_ERROR_DATAGRAM_LEN: usize = 576;

enum_with_unknown! {
    /// ICMP message type (RFC 792; IANA "ICMP Type Numbers").
    pub enum Icmpv4Message(u8) {
        /// Echo Reply.
        EchoReply = 0,
        /// Destination Unreachable.
        DstUnreachable = 3,
        /// Redirect.
        Redirect = 5,
        /// Echo Request.
        EchoRequest = 8,
        /// Router Advertisement (RFC 1256).
        RouterAdvert = 9,
        /// Router Solicitation (RFC 1256).
        RouterSolicit = 10,
        /// Time Exceeded.
        TimeExceeded = 11,
        /// Parameter Problem.
        ParamProblem = 12,
        /// Timestamp.
        Timestamp = 13,
        /// Timestamp Reply.
        TimestampReply = 14,
    }
}

impl Icmpv4Message {
    /// True for error messages (types 3, 4, 5, 11, 12), about which no
    /// ICMP error may be sent (RFC 1812 section 4.3.2.7).
    #[inline]
    pub fn is_error(self) -> bool {
        matches!(u8::from(self), 3 | 4 | 5 | 11 | 12)
    }
}

impl fmt::Display for Icmpv4Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Icmpv4Message::EchoReply => f.write_str("echo reply"),
            Icmpv4Message::DstUnreachable => f.write_str("destination unreachable"),
            Icmpv4Message::Redirect => f.write_str("redirect"),
            Icmpv4Message::EchoRequest => f.write_str("echo request"),
            Icmpv4Message::RouterAdvert => f.write_str("router advertisement"),
            Icmpv4Message::RouterSolicit => f.write_str("router solicitation"),
            Icmpv4Message::TimeExceeded => f.write_str("time exceeded"),
            Icmpv4Message::ParamProblem => f.write_str("parameter problem"),
            Icmpv4Message::Timestamp => f.write_str("timestamp"),
            Icmpv4Message::TimestampReply => f.write_str("timestamp reply"),
            Icmpv4Message::Unknown(t) => write!(f, "type {t}"),
        }
    }
}

enum_with_unknown! {
    /// Codes of Destination Unreachable (RFC 792, RFC 1122, RFC 1812
    /// section 5.2.7.1).
    pub enum Icmpv4DstUnreachable(u8) {
        /// Destination network unreachable.
        NetUnreachable = 0,
        /// Destination host unreachable.
        HostUnreachable = 1,
        /// Destination protocol unreachable.
        ProtoUnreachable = 2,
        /// Destination port unreachable.
        PortUnreachable = 3,
        /// Fragmentation needed and DF set; carries the next-hop MTU
        /// (RFC 1191).
        FragRequired = 4,
        /// Source route failed.
        SrcRouteFailed = 5,
        /// Destination network unknown.
        DstNetUnknown = 6,
        /// Destination host unknown.
        DstHostUnknown = 7,
        /// Source host isolated.
        SrcHostIsolated = 8,
        /// Network administratively prohibited.
        NetProhibited = 9,
        /// Host administratively prohibited.
        HostProhibited = 10,
        /// Network unreachable for ToS.
        NetUnreachToS = 11,
        /// Host unreachable for ToS.
        HostUnreachToS = 12,
        /// Communication administratively prohibited (RFC 1812).
        CommProhibited = 13,
        /// Host precedence violation (RFC 1812).
        HostPrecedViol = 14,
        /// Precedence cutoff in effect (RFC 1812).
        PrecedCutoff = 15,
    }
}

enum_with_unknown! {
    /// Codes of Time Exceeded (RFC 792).
    pub enum Icmpv4TimeExceeded(u8) {
        /// TTL expired in transit.
        TtlExpired = 0,
        /// Fragment reassembly time exceeded.
        FragReassembly = 1,
    }
}

enum_with_unknown! {
    /// Codes of Redirect (RFC 792).
    pub enum Icmpv4Redirect(u8) {
        /// Redirect for the network.
        Net = 0,
        /// Redirect for the host.
        Host = 1,
        /// Redirect for the ToS and network.
        TosNet = 2,
        /// Redirect for the ToS and host.
        TosHost = 3,
    }
}

enum_with_unknown! {
    /// Codes of Parameter Problem (RFC 792, RFC 1108, RFC 1812).
    pub enum Icmpv4ParamProblem(u8) {
        /// The pointer indicates the error.
        AtPointer = 0,
        /// A required option is missing.
        MissingOption = 1,
        /// Bad length.
        BadLength = 2,
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
    pub const POINTER: usize = 4;
    pub const GATEWAY: Field = 4..8;
    pub const NEXT_HOP_MTU: Field = 6..8;
    pub const PAYLOAD: Rest = 8..;
}

/// A view of an ICMP message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icmpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
    /// Length of the header.
    pub const HEADER_LEN: usize = HEADER_LEN;

    /// Wraps a buffer without checking it; see [`check_len`](Self::check_len).
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Icmpv4Packet<T> {
        Icmpv4Packet { buffer }
    }

    /// Wraps a buffer after [`check_len`](Self::check_len).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Icmpv4Packet<T>> {
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
    pub fn msg_type(&self) -> Icmpv4Message {
        Icmpv4Message::from(self.buffer.as_ref()[field::TYPE])
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

    /// Pointer of a Parameter Problem: offset of the bad octet in the quoted
    /// IP header.
    #[inline]
    pub fn param_problem_pointer(&self) -> u8 {
        self.buffer.as_ref()[field::POINTER]
    }

    /// Gateway address of a Redirect.
    #[inline]
    pub fn gateway(&self) -> Ipv4Addr {
        Ipv4Addr::from(read_u32(&self.buffer.as_ref()[field::GATEWAY]))
    }

    /// Next-hop MTU of a Destination Unreachable, "fragmentation needed"
    /// (RFC 1191 section 4); zero from routers that predate it.
    #[inline]
    pub fn next_hop_mtu(&self) -> u16 {
        read_u16(&self.buffer.as_ref()[field::NEXT_HOP_MTU])
    }

    /// True if the whole message sums to the checksum field.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::data(self.buffer.as_ref()) == !0
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Icmpv4Packet<&'a T> {
    /// Everything after the header: echo data, or the quoted datagram of an
    /// error.
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    /// Sets the message type.
    #[inline]
    pub fn set_msg_type(&mut self, value: Icmpv4Message) {
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

    /// Sets the Parameter Problem pointer.
    #[inline]
    pub fn set_param_problem_pointer(&mut self, value: u8) {
        self.buffer.as_mut()[field::POINTER] = value;
    }

    /// Sets the Redirect gateway.
    #[inline]
    pub fn set_gateway(&mut self, value: Ipv4Addr) {
        self.buffer.as_mut()[field::GATEWAY].copy_from_slice(&value.octets());
    }

    /// Sets the next-hop MTU.
    #[inline]
    pub fn set_next_hop_mtu(&mut self, value: u16) {
        write_u16(&mut self.buffer.as_mut()[field::NEXT_HOP_MTU], value);
    }

    /// Computes the checksum over the whole buffer and writes it.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = !checksum::data(self.buffer.as_ref());
        self.set_checksum(sum);
    }

    /// Everything after the header, mutably.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]>> AsRef<[u8]> for Icmpv4Packet<T> {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

/// An ICMP message of a kind a router answers or sends.
///
/// The `data` of an error is the quoted part of the offending datagram, as
/// raw bytes: its IP header, options included, and as much after it as the
/// sender chose (at least 8 bytes, RFC 792; up to 576 bytes in all, RFC
/// 1812 section 4.3.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv4Repr<'a> {
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
        reason: Icmpv4DstUnreachable,
        /// Next-hop MTU for `FragRequired`; zero otherwise.
        next_hop_mtu: u16,
        /// The quoted datagram.
        data: &'a [u8],
    },
    /// Time Exceeded.
    TimeExceeded {
        /// The code.
        reason: Icmpv4TimeExceeded,
        /// The quoted datagram.
        data: &'a [u8],
    },
    /// Parameter Problem.
    ParamProblem {
        /// The code.
        reason: Icmpv4ParamProblem,
        /// Offset of the bad octet in the quoted header.
        pointer: u8,
        /// The quoted datagram.
        data: &'a [u8],
    },
    /// Redirect.
    Redirect {
        /// The code.
        reason: Icmpv4Redirect,
        /// The better first hop.
        gateway: Ipv4Addr,
        /// The quoted datagram.
        data: &'a [u8],
    },
}

impl<'a> Icmpv4Repr<'a> {
    /// Reads a message. A bad checksum is `Malformed`; a type without a
    /// variant here is `Unsupported`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv4Packet<&'a T>) -> Result<Icmpv4Repr<'a>> {
        packet.check_len()?;
        if !packet.verify_checksum() {
            return Err(Error::Malformed);
        }
        let data = packet.payload();
        let code = packet.msg_code();
        Ok(match packet.msg_type() {
            Icmpv4Message::EchoRequest if code == 0 => Icmpv4Repr::EchoRequest {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            },
            Icmpv4Message::EchoReply if code == 0 => Icmpv4Repr::EchoReply {
                ident: packet.echo_ident(),
                seq_no: packet.echo_seq_no(),
                data,
            },
            Icmpv4Message::DstUnreachable => Icmpv4Repr::DstUnreachable {
                reason: code.into(),
                next_hop_mtu: packet.next_hop_mtu(),
                data,
            },
            Icmpv4Message::TimeExceeded => Icmpv4Repr::TimeExceeded {
                reason: code.into(),
                data,
            },
            Icmpv4Message::ParamProblem => Icmpv4Repr::ParamProblem {
                reason: code.into(),
                pointer: packet.param_problem_pointer(),
                data,
            },
            Icmpv4Message::Redirect => Icmpv4Repr::Redirect {
                reason: code.into(),
                gateway: packet.gateway(),
                data,
            },
            _ => return Err(Error::Unsupported),
        })
    }

    /// The data after the header.
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        match *self {
            Icmpv4Repr::EchoRequest { data, .. }
            | Icmpv4Repr::EchoReply { data, .. }
            | Icmpv4Repr::DstUnreachable { data, .. }
            | Icmpv4Repr::TimeExceeded { data, .. }
            | Icmpv4Repr::ParamProblem { data, .. }
            | Icmpv4Repr::Redirect { data, .. } => data,
        }
    }

    /// The number of bytes [`emit`](Self::emit) writes: header and data.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data().len()
    }

    /// Writes the message and its checksum. Give it a buffer of exactly
    /// [`buffer_len`](Self::buffer_len) bytes: the checksum covers the whole
    /// buffer.
    ///
    /// # Panics
    /// If the buffer is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Icmpv4Packet<T>) {
        let (msg_type, code, rest) = match *self {
            Icmpv4Repr::EchoRequest { ident, seq_no, .. } => (
                Icmpv4Message::EchoRequest,
                0,
                (u32::from(ident) << 16) | u32::from(seq_no),
            ),
            Icmpv4Repr::EchoReply { ident, seq_no, .. } => (
                Icmpv4Message::EchoReply,
                0,
                (u32::from(ident) << 16) | u32::from(seq_no),
            ),
            Icmpv4Repr::DstUnreachable {
                reason,
                next_hop_mtu,
                ..
            } => (
                Icmpv4Message::DstUnreachable,
                reason.into(),
                u32::from(next_hop_mtu),
            ),
            Icmpv4Repr::TimeExceeded { reason, .. } => {
                (Icmpv4Message::TimeExceeded, reason.into(), 0)
            }
            Icmpv4Repr::ParamProblem {
                reason, pointer, ..
            } => (
                Icmpv4Message::ParamProblem,
                reason.into(),
                u32::from(pointer) << 24,
            ),
            Icmpv4Repr::Redirect {
                reason, gateway, ..
            } => (Icmpv4Message::Redirect, reason.into(), u32::from(gateway)),
        };
        packet.set_msg_type(msg_type);
        packet.set_msg_code(code);
        packet.set_rest_of_header(rest);
        let data = self.data();
        packet.payload_mut()[..data.len()].copy_from_slice(data);
        packet.fill_checksum();
    }
}

impl fmt::Display for Icmpv4Repr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Icmpv4Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => {
                write!(
                    f,
                    "ICMP echo request, id {ident}, seq {seq_no}, length {}",
                    data.len()
                )
            }
            Icmpv4Repr::EchoReply {
                ident,
                seq_no,
                data,
            } => {
                write!(
                    f,
                    "ICMP echo reply, id {ident}, seq {seq_no}, length {}",
                    data.len()
                )
            }
            Icmpv4Repr::DstUnreachable {
                reason,
                next_hop_mtu,
                ..
            } => {
                write!(f, "ICMP unreachable, {reason:?}")?;
                if reason == Icmpv4DstUnreachable::FragRequired {
                    write!(f, ", mtu {next_hop_mtu}")?;
                }
                Ok(())
            }
            Icmpv4Repr::TimeExceeded { reason, .. } => write!(f, "ICMP time exceeded, {reason:?}"),
            Icmpv4Repr::ParamProblem {
                reason, pointer, ..
            } => {
                write!(f, "ICMP parameter problem, {reason:?}, pointer {pointer}")
            }
            Icmpv4Repr::Redirect {
                reason, gateway, ..
            } => {
                write!(f, "ICMP redirect, {reason:?}, to {gateway}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipv4::tests::ECHO_REQUEST as IP_ECHO_REQUEST;
    use crate::ipv4::Ipv4Packet;

    /// The ICMP part of `ping -s 24 -p 0a0b0c0d`: id 0x1107, seq 1, a
    /// 16-byte timestamp and the pattern.
    fn echo_request() -> &'static [u8] {
        &IP_ECHO_REQUEST[20..]
    }

    /// Linux's port unreachable for a DNS query to a closed port: ToS 0xc0,
    /// quoting the whole 57-byte query (captured with tcpdump).
    static PORT_UNREACHABLE: [u8; 85] = [
        0x45, 0xc0, 0x00, 0x55, 0x1f, 0xea, 0x00, 0x00, 0x40, 0x01, 0xd5, 0xfa, 0xc0, 0x00, 0x02,
        0x02, 0xc0, 0x00, 0x02, 0x01, 0x03, 0x03, 0x81, 0x37, 0x00, 0x00, 0x00, 0x00, 0x45, 0x00,
        0x00, 0x39, 0x16, 0xcf, 0x40, 0x00, 0x40, 0x11, 0x9f, 0xe1, 0xc0, 0x00, 0x02, 0x01, 0xc0,
        0x00, 0x02, 0x02, 0xcf, 0x08, 0x00, 0x35, 0x00, 0x25, 0xc2, 0xc9, 0x1a, 0x2b, 0x01, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c,
        0x65, 0x03, 0x63, 0x6f, 0x6d, 0x00, 0x00, 0x01, 0x00, 0x01,
    ];

    #[test]
    fn deconstruct_echo() {
        let packet = Icmpv4Packet::new_checked(echo_request()).unwrap();
        assert_eq!(packet.msg_type(), Icmpv4Message::EchoRequest);
        assert_eq!(packet.msg_code(), 0);
        assert_eq!(packet.checksum(), 0xda83);
        assert_eq!(packet.echo_ident(), 0x1107);
        assert_eq!(packet.echo_seq_no(), 1);
        assert_eq!(packet.rest_of_header(), 0x1107_0001);
        assert!(packet.verify_checksum());
        assert_eq!(packet.payload().len(), 24);
        assert_eq!(
            &packet.payload()[16..],
            &[0x0a, 0x0b, 0x0c, 0x0d, 0x0a, 0x0b, 0x0c, 0x0d]
        );
        let repr = Icmpv4Repr::parse(&packet).unwrap();
        assert_eq!(
            repr,
            Icmpv4Repr::EchoRequest {
                ident: 0x1107,
                seq_no: 1,
                data: &echo_request()[8..]
            }
        );
        assert_eq!(
            repr.to_string(),
            "ICMP echo request, id 4359, seq 1, length 24"
        );
    }

    #[test]
    fn construct_echo() {
        let repr = Icmpv4Repr::EchoRequest {
            ident: 0x1107,
            seq_no: 1,
            data: &echo_request()[8..],
        };
        assert_eq!(repr.buffer_len(), 32);
        let mut bytes = [0xa5u8; 32];
        repr.emit(&mut Icmpv4Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..], echo_request());

        // The reply a router would send: same data, type 0.
        let reply = Icmpv4Repr::EchoReply {
            ident: 0x1107,
            seq_no: 1,
            data: &echo_request()[8..],
        };
        reply.emit(&mut Icmpv4Packet::new_unchecked(&mut bytes[..]));
        let packet = Icmpv4Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(packet.msg_type(), Icmpv4Message::EchoReply);
        assert!(packet.verify_checksum());
        assert_eq!(Icmpv4Repr::parse(&packet), Ok(reply));
    }

    #[test]
    fn port_unreachable() {
        let ip = Ipv4Packet::new_checked(&PORT_UNREACHABLE[..]).unwrap();
        assert!(ip.verify_checksum());
        let packet = Icmpv4Packet::new_checked(ip.payload()).unwrap();
        assert_eq!(packet.msg_type(), Icmpv4Message::DstUnreachable);
        assert!(packet.msg_type().is_error());
        assert_eq!(
            Icmpv4DstUnreachable::from(packet.msg_code()),
            Icmpv4DstUnreachable::PortUnreachable
        );
        assert_eq!(packet.checksum(), 0x8137);
        assert_eq!(packet.next_hop_mtu(), 0);
        assert!(packet.verify_checksum());
        let quoted = Ipv4Packet::new_checked(packet.payload()).unwrap();
        assert_eq!(quoted.dst_addr(), Ipv4Addr::new(192, 0, 2, 2));
        assert_eq!(quoted.next_header(), crate::IpProtocol::UDP);

        let repr = Icmpv4Repr::parse(&packet).unwrap();
        assert_eq!(
            repr,
            Icmpv4Repr::DstUnreachable {
                reason: Icmpv4DstUnreachable::PortUnreachable,
                next_hop_mtu: 0,
                data: packet.payload(),
            }
        );
        let mut bytes = [0u8; 65];
        repr.emit(&mut Icmpv4Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(&bytes[..], ip.payload());
        assert_eq!(repr.to_string(), "ICMP unreachable, PortUnreachable");
    }

    #[test]
    fn errors_round_trip() {
        let quoted = &PORT_UNREACHABLE[28..56];
        let reprs = [
            Icmpv4Repr::DstUnreachable {
                reason: Icmpv4DstUnreachable::FragRequired,
                next_hop_mtu: 1400,
                data: quoted,
            },
            Icmpv4Repr::TimeExceeded {
                reason: Icmpv4TimeExceeded::TtlExpired,
                data: quoted,
            },
            Icmpv4Repr::ParamProblem {
                reason: Icmpv4ParamProblem::AtPointer,
                pointer: 22,
                data: quoted,
            },
            Icmpv4Repr::Redirect {
                reason: Icmpv4Redirect::Host,
                gateway: Ipv4Addr::new(192, 0, 2, 254),
                data: quoted,
            },
        ];
        for repr in reprs {
            let mut bytes = [0u8; 36];
            repr.emit(&mut Icmpv4Packet::new_unchecked(&mut bytes[..]));
            let packet = Icmpv4Packet::new_checked(&bytes[..]).unwrap();
            assert!(packet.verify_checksum());
            assert!(packet.msg_type().is_error());
            assert_eq!(Icmpv4Repr::parse(&packet), Ok(repr));
        }
        let mut bytes = [0u8; 36];
        reprs[0].emit(&mut Icmpv4Packet::new_unchecked(&mut bytes[..]));
        assert_eq!((bytes[0], bytes[1]), (3, 4));
        assert_eq!(bytes[4..8], [0, 0, 0x05, 0x78]);
        assert_eq!(
            reprs[0].to_string(),
            "ICMP unreachable, FragRequired, mtu 1400"
        );
        reprs[2].emit(&mut Icmpv4Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes[4..8], [22, 0, 0, 0]);
        reprs[3].emit(&mut Icmpv4Packet::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes[4..8], [192, 0, 2, 254]);
    }

    #[test]
    fn setters() {
        let mut bytes = [0u8; 8];
        let mut packet = Icmpv4Packet::new_unchecked(&mut bytes[..]);
        packet.set_msg_type(Icmpv4Message::ParamProblem);
        packet.set_msg_code(Icmpv4ParamProblem::BadLength.into());
        packet.set_param_problem_pointer(9);
        assert_eq!(packet.param_problem_pointer(), 9);
        packet.set_gateway(Ipv4Addr::new(10, 1, 2, 3));
        assert_eq!(packet.gateway(), Ipv4Addr::new(10, 1, 2, 3));
        packet.set_next_hop_mtu(576);
        assert_eq!(packet.next_hop_mtu(), 576);
        packet.set_echo_ident(1);
        packet.set_echo_seq_no(2);
        assert_eq!(packet.rest_of_header(), 0x0001_0002);
        packet.set_rest_of_header(0);
        packet.fill_checksum();
        assert!(packet.verify_checksum());
        assert!(packet.payload_mut().is_empty());
        assert_eq!(bytes, [12, 2, 0xf3, 0xfd, 0, 0, 0, 0]);
    }

    #[test]
    fn truncated_and_unsupported() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                Icmpv4Packet::new_checked(&echo_request()[..len]),
                Err(Error::Truncated)
            );
            assert_eq!(
                Icmpv4Repr::parse(&Icmpv4Packet::new_unchecked(&echo_request()[..len])),
                Err(Error::Truncated)
            );
        }
        // A prefix is still a valid view, but its checksum no longer holds.
        let packet = Icmpv4Packet::new_checked(&echo_request()[..12]).unwrap();
        assert!(!packet.verify_checksum());
        assert_eq!(Icmpv4Repr::parse(&packet), Err(Error::Malformed));

        let mut bytes = [0u8; 20];
        let mut packet = Icmpv4Packet::new_unchecked(&mut bytes[..]);
        packet.set_msg_type(Icmpv4Message::Timestamp);
        packet.fill_checksum();
        assert_eq!(
            Icmpv4Repr::parse(&Icmpv4Packet::new_unchecked(&bytes[..])),
            Err(Error::Unsupported)
        );
        assert!(!Icmpv4Message::Timestamp.is_error());
        assert!(Icmpv4Message::Unknown(4).is_error());
        assert_eq!(Icmpv4Message::from(4), Icmpv4Message::Unknown(4));
        assert_eq!(Icmpv4Message::from(11), Icmpv4Message::TimeExceeded);
        assert_eq!(u8::from(Icmpv4Message::TimestampReply), 14);
        assert_eq!(Icmpv4Message::Unknown(42).to_string(), "type 42");
        assert_eq!(
            Icmpv4TimeExceeded::from(1),
            Icmpv4TimeExceeded::FragReassembly
        );
        assert_eq!(u8::from(Icmpv4DstUnreachable::CommProhibited), 13);
        assert_eq!(u8::from(Icmpv4DstUnreachable::SrcRouteFailed), 5);
        assert_eq!(u8::from(Icmpv4Redirect::TosHost), 3);
    }
}
